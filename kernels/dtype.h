/* Element conversions for every bundle dtype, shared by the CPU kernels, the reference and the
 * replay engine's initialisers. Narrow formats convert through float with round-to-nearest-even;
 * fp8 follows the OCP (e4m3fn, e5m2) and AMD fnuz conventions (fnuz: no negative zero, a single
 * NaN at 0x80, exponent bias one larger). */
#ifndef XR_KERNELS_DTYPE_H
#define XR_KERNELS_DTYPE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "formats/model.h"

static inline float xr_bits_to_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint32_t xr_f32_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float xr_bf16_to_f32(uint16_t h) { return xr_bits_to_f32((uint32_t)h << 16); }

static inline uint16_t xr_f32_to_bf16(float f) {
  uint32_t u = xr_f32_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
  return (uint16_t)(u >> 16);
}

float xr_f16_to_f32(uint16_t h);
uint16_t xr_f32_to_f16(float f);
float xr_fp8_to_f32(uint8_t v, xr_dtype_t dtype);
uint8_t xr_f32_to_fp8(float f, xr_dtype_t dtype); /* saturates to the largest finite value */

/* Element `index` (in elements from base) as double; integers and bools exactly. */
double xr_load_element(const void *base, xr_dtype_t dtype, int64_t index);
/* Stores v converted to dtype (rounded; integers truncated toward zero; bool v != 0). */
void xr_store_element(void *base, xr_dtype_t dtype, int64_t index, double v);

#endif
