/* cpu.elementwise's AVX-512 path (kernels/cpu/elementwise_avx512.c). */
#ifndef XR_KERNELS_CPU_ELEMENTWISE_AVX512_H
#define XR_KERNELS_CPU_ELEMENTWISE_AVX512_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/elementwise.h"

/* Whether the AVX-512 path runs this (coalesced) step: the CPU has it, the op is arithmetic, an
 * activation or a conversion, a and out are contiguous along the last dim, b contiguous or
 * broadcast along it, inputs f32, bf16 or f16, the output one of those (or fp8 for conversions). */
bool xr_ew_avx512_takes(const xr_ew_step_t *s);

/* n elements of one row of step s: out, a and b point at the row's first elements (b NULL when
 * the op has no tensor b; `scalar` is then b's value). `stream`: write around the cache. */
void xr_ew_avx512_row(const xr_ew_step_t *s, char *out, const char *a, const char *b,
                      float scalar, int64_t n, bool stream);

/* A transposed-copy tile of cpu.elementwise (its transpose_tile()): 4-byte elements in 16 x 16
 * blocks transposed in registers. False, having done nothing, unless esize is 4 and nr and nc
 * are multiples of 16. Strides in elements. Only where xr_cpu_avx512(). */
bool xr_ew_avx512_transpose_tile(char *dst, int64_t dst_row_stride, const char *src,
                                 int64_t src_col_stride, size_t esize, int64_t nr, int64_t nc,
                                 bool stream);

#endif
