/* Scalar conversions between float and the narrow formats bundles hold, the one definition every
 * layer uses: bf16 and f16; the 8-bit floats (OCP e4m3fn and e5m2; AMD's fnuz e4m3 and e5m2:
 * no negative zero, a single NaN at 0x80, exponent bias one larger); e8m0 scales (2^(b - 127),
 * 0xFF NaN) and e2m1 codes (sign bit 3; magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6).
 *
 * Encoders round to nearest even, keep NaN a quiet NaN where the format has one and saturate
 * the 8-bit floats at their largest finite value (torch's saturating conversion). They are
 * written without branches, the float adder doing the rounding (the technique of Dukhan's FP16
 * library), so that loops over them vectorise.
 *
 * The first part compiles as C, OpenCL C and CUDA C++ (NVRTC, hiprtc): device sources include
 * this file (kernels/embed_sources.sh inlines it) after defining XR_FLOAT_FN, the qualifiers of
 * a function, and XR_AS_FLOAT / XR_AS_UINT, bit casts between float and a 32-bit unsigned int;
 * kernels/opencl/float_io.h and kernels/gpu/dtype_io.h do. The second part, for the host only,
 * takes xr_dtype_t. */
#ifndef XR_BASE_FLOAT_FORMATS_H
#define XR_BASE_FLOAT_FORMATS_H

#ifndef XR_FLOAT_FN /* the host */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/dtype.h"

/* Always inlined, so that the vectorised loops of the host kernels take them (as they would a
 * macro) whatever the inliner's budget. */
#define XR_FLOAT_FN static inline __attribute__((always_inline))
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
#define XR_AS_FLOAT(u) xr_bits_to_f32(u)
#define XR_AS_UINT(f) xr_f32_to_bits(f)
#define XR_FLOAT_HOST 1
#endif

/* All ones when `condition` holds, else 0; and the select of the bits it masks. */
XR_FLOAT_FN unsigned int xr_mask_if(int condition) { return 0u - (unsigned int)(condition != 0); }
XR_FLOAT_FN unsigned int xr_select_u(unsigned int mask, unsigned int if_set,
                                     unsigned int if_clear) {
  return (if_set & mask) | (if_clear & ~mask);
}
XR_FLOAT_FN float xr_select_f(unsigned int mask, float if_set, float if_clear) {
  return XR_AS_FLOAT(xr_select_u(mask, XR_AS_UINT(if_set), XR_AS_UINT(if_clear)));
}

XR_FLOAT_FN float xr_bf16_to_f32(unsigned short h) { return XR_AS_FLOAT((unsigned int)h << 16); }

XR_FLOAT_FN unsigned short xr_f32_to_bf16(float f) {
  unsigned int u = XR_AS_UINT(f);
  unsigned int rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return (unsigned short)xr_select_u(xr_mask_if((u & 0x7fffffffu) > 0x7f800000u),
                                     (u >> 16) | 0x40u, rounded);
}

XR_FLOAT_FN float xr_f16_to_f32(unsigned short h) {
  unsigned int sign = (unsigned int)(h & 0x8000u) << 16, em = h & 0x7fffu;
  /* Normal and subnormal halves alike: place the bits in a float and rescale by 2^112. */
  unsigned int bits = XR_AS_UINT(XR_AS_FLOAT(em << 13) * 0x1p112f);
  bits |= xr_mask_if(em >= 0x7c00u) & 0x7f800000u; /* inf and NaN */
  return XR_AS_FLOAT(bits | sign);
}

XR_FLOAT_FN unsigned short xr_f32_to_f16(float f) {
  unsigned int w = XR_AS_UINT(f), shl1 = w + w, sign = w & 0x80000000u;
  float base = (XR_AS_FLOAT(w & 0x7fffffffu) * 0x1p112f) * 0x1p-110f;
  unsigned int bias = shl1 & 0xff000000u;
  bias = xr_select_u(xr_mask_if(bias < 0x71000000u), 0x71000000u, bias);
  base = XR_AS_FLOAT((bias >> 1) + 0x07800000u) + base;
  unsigned int bits = XR_AS_UINT(base);
  unsigned int nonsign = ((bits >> 13) & 0x7c00u) + (bits & 0x0fffu);
  return (unsigned short)((sign >> 16) |
                          xr_select_u(xr_mask_if(shl1 > 0xff000000u), 0x7e00u, nonsign));
}

/* An 8-bit float format: e4m3 (mbits 3) or e5m2 (mbits 2), the exponent bias, and fnuz. */
typedef struct xr_fp8_format {
  int mbits, bias;
  float max;                /* the largest finite value */
  float min_normal;         /* 2^(1 - bias) */
  float subnormal_scale;    /* 1 / the subnormal quantum: 2^(bias - 1 + mbits) */
  unsigned int fnuz_mask;   /* all ones for the fnuz formats */
  unsigned int nan_code;    /* 0x80 fnuz, 0x7f OCP */
  int has_inf;              /* e5m2 (OCP) only */
} xr_fp8_format_t;

XR_FLOAT_FN xr_fp8_format_t xr_fp8_format_of(int mbits, int fnuz) {
  xr_fp8_format_t F;
  F.mbits = mbits;
  F.bias = (mbits == 3 ? 7 : 15) + (fnuz ? 1 : 0);
  F.max = mbits == 2 ? 57344.0f : fnuz ? 240.0f : 448.0f;
  F.min_normal = XR_AS_FLOAT((unsigned int)(128 - F.bias) << 23);
  F.subnormal_scale = XR_AS_FLOAT((unsigned int)(126 + F.bias + mbits) << 23);
  F.fnuz_mask = fnuz ? 0xffffffffu : 0u;
  F.nan_code = fnuz ? 0x80u : 0x7fu;
  F.has_inf = !fnuz && mbits == 2;
  return F;
}

/* Nearest value, ties to even, saturating; NaN to the format's NaN. Normal results round the
 * float's mantissa to mbits bits in the integer domain; results below the smallest normal are
 * counted in subnormal quanta by the float adder (2^23 + 2^22 makes it round to an integer). */
XR_FLOAT_FN unsigned char xr_fp8_encode(float f, const xr_fp8_format_t *F) {
  unsigned int u = XR_AS_UINT(f), shift = 23u - (unsigned int)F->mbits;
  unsigned int nan = xr_mask_if((u & 0x7fffffffu) > 0x7f800000u);
  float a = XR_AS_FLOAT(u & 0x7fffffffu);
  a = xr_select_f(xr_mask_if(a > F->max), F->max, a);
  unsigned int small = xr_mask_if(a < F->min_normal);
  unsigned int sub = XR_AS_UINT(a * F->subnormal_scale + 12582912.0f) - 0x4b400000u;
  unsigned int ua = XR_AS_UINT(a);
  unsigned int rounded = ua + ((1u << (shift - 1)) - 1u) + ((ua >> shift) & 1u);
  unsigned int normal = (rounded >> shift) - ((127u - (unsigned int)F->bias) << F->mbits);
  unsigned int magnitude = xr_select_u(small, sub, normal);
  unsigned int sign = (u >> 24) & 0x80u;
  sign &= ~(xr_mask_if(magnitude == 0) & F->fnuz_mask); /* fnuz has no negative zero */
  return (unsigned char)xr_select_u(nan, F->nan_code, sign | magnitude);
}

XR_FLOAT_FN float xr_fp8_decode(unsigned char v, const xr_fp8_format_t *F) {
  unsigned int ebits = 7u - (unsigned int)F->mbits, emax = (1u << ebits) - 1u;
  unsigned int exp = (v >> F->mbits) & emax, man = v & ((1u << F->mbits) - 1u);
  float sign = v & 0x80u ? -1.0f : 1.0f;
  if (F->fnuz_mask && v == 0x80u) return XR_AS_FLOAT(0x7fc00000u);
  if (!F->fnuz_mask && exp == emax) {
    if (F->has_inf) return man ? XR_AS_FLOAT(0x7fc00000u) : sign * XR_AS_FLOAT(0x7f800000u);
    if (man == (1u << F->mbits) - 1u) return XR_AS_FLOAT(0x7fc00000u); /* e4m3fn's NaN */
  }
  /* The value's bits: a normal's exponent re-biased, a subnormal as man quanta. */
  float magnitude = exp ? XR_AS_FLOAT(((exp + 127u - (unsigned int)F->bias) << 23) |
                                      (man << (23u - (unsigned int)F->mbits)))
                        : (float)man / F->subnormal_scale;
  return sign * magnitude;
}

XR_FLOAT_FN float xr_e2m1_to_f32(unsigned char code) { /* the low 4 bits */
  unsigned int c = code & 7u;
  /* 0, 0.5, 1, 1.5 step by halves; 2, 3, 4, 6 are (2 + (c & 1)) * 2^((c >> 1) - 2) */
  float m = c < 4u ? 0.5f * (float)c : (float)(2u + (c & 1u)) * (float)(1u << ((c >> 1) - 2u));
  return code & 8u ? -m : m;
}

/* Nearest e2m1 code, ties to even, saturating at +-6; the sign of zero is kept; NaN gives +-6
 * (e2m1 has no NaN: callers that care check first). */
XR_FLOAT_FN unsigned char xr_f32_to_e2m1(float f) {
  unsigned int sign = (XR_AS_UINT(f) >> 28) & 8u;
  float a = XR_AS_FLOAT(XR_AS_UINT(f) & 0x7fffffffu);
  /* The midpoints between neighbours; a tie goes to the even code. */
  unsigned int c = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) +
                   (a >= 3.5f) + (a > 5.0f);
  c = xr_select_u(xr_mask_if(a != a), 7u, c);
  return (unsigned char)(sign | c);
}

XR_FLOAT_FN float xr_e8m0_to_f32(unsigned char b) {
  /* 2^(b - 127): b as a float's exponent; 0 is 2^-127, a subnormal. */
  return b == 0xffu ? XR_AS_FLOAT(0x7fc00000u)
                    : b ? XR_AS_FLOAT((unsigned int)b << 23) : XR_AS_FLOAT(0x00400000u);
}

#ifdef XR_FLOAT_HOST
/* The format of an 8-bit float dtype. */
static inline xr_fp8_format_t xr_fp8_format(xr_dtype_t dtype) {
  return xr_fp8_format_of(dtype == XR_DTYPE_F8E4M3FN || dtype == XR_DTYPE_F8E4M3FNUZ ? 3 : 2,
                          dtype == XR_DTYPE_F8E4M3FNUZ || dtype == XR_DTYPE_F8E5M2FNUZ);
}
static inline float xr_fp8_to_f32(uint8_t v, xr_dtype_t dtype) {
  xr_fp8_format_t F = xr_fp8_format(dtype);
  return xr_fp8_decode(v, &F);
}
static inline uint8_t xr_f32_to_fp8(float f, xr_dtype_t dtype) {
  xr_fp8_format_t F = xr_fp8_format(dtype);
  return xr_fp8_encode(f, &F);
}
/* The nearest power of two of |f| (in log2), clamped to [2^-127, 2^127]; NaN 0xFF, 0 to 0. */
static inline uint8_t xr_f32_to_e8m0(float f) {
  float a = fabsf(f);
  if (isnan(f)) return 0xff;
  if (!(a > 0)) return 0;
  double e = nearbyint(log2((double)a));
  return (uint8_t)(e < -127 ? 0 : e > 127 ? 254 : e + 127);
}
#endif

#endif /* XR_BASE_FLOAT_FORMATS_H */
