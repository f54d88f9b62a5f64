/* Row passes of cpu.norm / cpu.softmax on AVX-512 (kernels/cpu/norm_avx512.c): contiguous f32,
 * bf16 or f16 rows, each pass widening or rounding on the way instead of in passes of its own; and
 * cpu.rotary's rotation of one head.
 * Callable only where xr_cpu_avx512() (kernels/cpu/avx512.h) is true. */
#ifndef XR_KERNELS_CPU_NORM_AVX512_H
#define XR_KERNELS_CPU_NORM_AVX512_H

#include <stdbool.h>
#include <stdint.h>

#include "formats/model.h"

typedef struct xr_row_stats {
  float sum, sum_sq, max; /* over 16 lanes, combined at the end (as the portable sums are) */
} xr_row_stats_t;

/* n elements of dtype dt (f32, bf16 or f16) at src: their stats, and their float values into dst
 * unless dst is NULL. */
xr_row_stats_t xr_rows_avx512_widen(float *dst, const void *src, xr_dtype_t dt, int64_t n);

/* The fused add + RMS norm's first pass: residual_out = round(x + residual_in) in dt (f32, bf16
 * or f16; every row contiguous; residual_out may be residual_in), the sum into dst as floats
 * (`rounded`: as stored; else the fp32 sum); returns their sum of squares. */
float xr_rows_avx512_add_round(float *dst, void *residual_out, const void *residual_in,
                               const void *x, xr_dtype_t dt, int64_t n, bool rounded);

/* The sum of (x - shift)^2 (layer norm's second pass over the widened row). */
float xr_rows_avx512_sum_sq(const float *x, int64_t n, float shift);

/* y = e^(x - m) for x <= m, returning the sum of y. */
float xr_rows_avx512_exp_sum(float *y, const float *x, int64_t n, float m);

/* dst = ((x - shift) * scale [* w] [+ b]) in dt (f32, bf16 or f16); `stream`: write around the
 * cache (aligned whole vectors; plain stores up to the first). */
void xr_rows_avx512_affine_store(void *dst, xr_dtype_t dt, const float *x, int64_t n, float shift,
                                 float scale, const float *w, const float *b, bool stream);

/* Rotates one contiguous head in place (rotary embedding): pairs (x, y) become
 * (x c - y s, y c + x s), with c, s the position's embed cos and sin values. NeoX pairs element
 * i with embed + i (f32, bf16 or f16); GPT-J pairs neighbours (bf16 only, embed a multiple of 16). */
void xr_rotary_avx512_head(void *head, xr_dtype_t dt, const float *c, const float *sn,
                           int64_t embed, bool neox);

#endif
