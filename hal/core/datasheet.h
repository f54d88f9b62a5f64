/* Published peak figures for parts we know, looked up by device name. Peaks are dense (no
 * sparsity), matrix units for fp16/bf16/fp8 and vector units for fp32/fp64: the fastest path
 * the replayed operators can use for each type. */
#ifndef XR_HAL_CORE_DATASHEET_H
#define XR_HAL_CORE_DATASHEET_H

#include "hal/hal.h"

/* Fills the figures of the first table entry whose pattern occurs in `device_name`; returns
 * false (and leaves *out untouched) when the part is not in the table. */
bool xr_datasheet_lookup(const char *device_name, xr_hal_device_properties_t *out);

/* For devices that report one cache (a GPU's L2, OpenCL's global memory cache): it, named
 * `name`, and the memory-side cache the datasheet gives, as cache_levels and cache_total_bytes. */
void xr_datasheet_cache_levels(xr_hal_device_properties_t *p, const char *name);

#endif
