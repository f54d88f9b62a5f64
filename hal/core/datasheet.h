/* Published peak figures for parts we know, looked up by device name. Peaks are dense (no
 * sparsity), matrix units for fp16/bf16/fp8 and vector units for fp32/fp64: the fastest path
 * the replayed operators can use for each type. */
#ifndef XR_HAL_CORE_DATASHEET_H
#define XR_HAL_CORE_DATASHEET_H

#include "hal/hal.h"

/* Fills the figures of the first table entry whose pattern occurs in `device_name`; returns
 * false (and leaves *out untouched) when the part is not in the table. */
bool xr_datasheet_lookup(const char *device_name, xr_hal_device_properties_t *out);

#endif
