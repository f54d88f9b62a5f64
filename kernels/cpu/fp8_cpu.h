/* A branch-free e4m3 encoder for the host kernels' loops (cpu.quant, the fp8 outputs of
 * cpu.flash_attention), bit-exact with kernels/dtype.c's xr_f32_to_fp8 for finite values within
 * the format's range (callers clamp and handle NaN first): the float adder rounds the mantissa
 * to nearest even. */
#ifndef XR_KERNELS_CPU_FP8_CPU_H
#define XR_KERNELS_CPU_FP8_CPU_H

#include <math.h>
#include <stdint.h>

#include "kernels/dtype.h"

/* The format: e4m3fn (bias 7) or e4m3fnuz (bias 8, no negative zero). */
typedef struct xr_cpu_e4m3 {
  uint32_t bias, fnuz_mask; /* fnuz_mask: all ones for e4m3fnuz */
  float sub_limit, sub_mul; /* the smallest normal value; 1 / the subnormal quantum */
} xr_cpu_e4m3_t;

static inline xr_cpu_e4m3_t xr_cpu_e4m3(xr_dtype_t dtype) {
  xr_cpu_e4m3_t f;
  f.bias = dtype == XR_DTYPE_F8E4M3FNUZ ? 8 : 7;
  f.fnuz_mask = dtype == XR_DTYPE_F8E4M3FNUZ ? 0xffffffffu : 0;
  f.sub_limit = ldexpf(1.0f, 1 - (int)f.bias);
  f.sub_mul = ldexpf(1.0f, (int)f.bias + 2);
  return f;
}

/* x finite, |x| at most the format's largest value. */
static inline uint8_t xr_cpu_e4m3_encode(const xr_cpu_e4m3_t *f, float x) {
  uint32_t u = xr_f32_to_bits(x), a = u & 0x7fffffffu, sign = (u >> 24) & 0x80u;
  /* Normal: round the float's mantissa to 3 bits (nearest even; a carry moves the exponent),
   * then re-bias the exponent: the code is the float's bits 20.. less (127 - bias) << 3. */
  uint32_t rounded = a + 0x7ffffu + ((a >> 20) & 1u);
  uint32_t normal = (rounded >> 20) - ((127u - f->bias) << 3);
  /* Subnormal: a / quantum rounded to an integer 0..8 (8 is the smallest normal's code) by
   * adding 2^23, whose ulp is 1. */
  float t = xr_bits_to_f32(a) * f->sub_mul + 0x1p23f;
  uint32_t sub = xr_f32_to_bits(t) - 0x4b000000u;
  uint32_t is_sub = -(uint32_t)(xr_bits_to_f32(a) < f->sub_limit);
  uint32_t code = (sub & is_sub) | (normal & ~is_sub);
  sign &= ~(f->fnuz_mask & -(uint32_t)(code == 0));
  return (uint8_t)(sign | code);
}

#endif
