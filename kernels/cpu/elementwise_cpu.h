/* Pieces of cpu.elementwise shared with the other host kernels of this area (cpu.argmax). */
#ifndef XR_KERNELS_CPU_ELEMENTWISE_CPU_H
#define XR_KERNELS_CPU_ELEMENTWISE_CPU_H

#include <stdint.h>

#include "formats/bundle.h"

#define XR_EW_CPU_BLOCK 512

/* n <= XR_EW_CPU_BLOCK elements of dtype `dt` at src (stride in elements) into dst as float;
 * vectorised for the contiguous f32, f16 and bf16 cases. */
void xr_ew_cpu_load(float *restrict dst, const char *src, xr_dtype_t dt, int64_t stride,
                    int64_t n);

#endif
