/* 16-float vectors in GCC's vector extensions, for the host kernels whose inner loops are
 * compiled once per target_clones variant (cpu attention, the MoE passes): the types, f32 and bf16
 * loads and stores, and exp for the non-positive arguments softmax-like code needs. Everything here is
 * inlined into its caller, so no vector crosses a call boundary whose ABI the variants could
 * disagree on (hence -Wpsabi is silenced). */
#ifndef XR_KERNELS_CPU_VECTOR_EXT_H
#define XR_KERNELS_CPU_VECTOR_EXT_H

#include <stdint.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Wpsabi"

typedef float vf __attribute__((vector_size(64)));
typedef int32_t vi __attribute__((vector_size(64)));
typedef uint32_t vu __attribute__((vector_size(64)));
typedef uint16_t vh __attribute__((vector_size(32)));

enum { VW = 16 }; /* lanes */

#define XR_VHOT static inline __attribute__((always_inline))

XR_VHOT vf vload(const float *p) {
  vf v;
  memcpy(&v, p, sizeof v);
  return v;
}

XR_VHOT void vstore(float *p, vf v) { memcpy(p, &v, sizeof v); }

/* 16 bf16 values as floats. */
XR_VHOT vf vload_bf16(const uint16_t *p) {
  vh h;
  memcpy(&h, p, sizeof h);
  return (vf)(__builtin_convertvector(h, vu) << 16);
}

/* 16 floats as bf16, as xr_f32_to_bf16 rounds them: to nearest even, NaN kept quiet. */
XR_VHOT void vstore_bf16(uint16_t *p, vf x) {
  vu u = (vu)x;
  vu nan = (vu)((u & 0x7fffffffu) > 0x7f800000u);
  vu rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  vh h = __builtin_convertvector((rounded & ~nan) | (((u >> 16) | 0x40u) & nan), vh);
  memcpy(p, &h, sizeof h);
}

/* exp(x) for x <= 0: exact 0 below -87, relative error ~2e-7 elsewhere (Cephes' range reduction
 * and polynomial). */
XR_VHOT vf vexp_nonpositive(vf x) {
  vi keep = ~(x < -87.0f);
  vi n = __builtin_convertvector(x * 1.44269504088896341f - 0.5f, vi) & keep; /* round, t <= 0 */
  vf nf = __builtin_convertvector(n, vf);
  vf r = (vf)((vi)x & keep);
  r = r - nf * 0.693359375f + nf * 2.12194440e-4f;
  vf p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  vf y = (p * r * r + r + 1.0f) * (vf)((n + 127) << 23);
  return (vf)((vi)y & keep);
}

#endif
