// 8-bit floats for OpenCL C (OCP e4m3fn / e5m2 and AMD's fnuz variants, kernels/dtype.h), by
// their xreplay dtype code (dtype_codes.h): decoded to float, and encoded saturating with ties
// to even, as kernels/dtype.c does on the host. kernels/embed_sources.sh inlines this header
// into the sources that include it (elementwise.cl, moe.cl).
#ifndef XR_KERNELS_OPENCL_FP8_H
#define XR_KERNELS_OPENCL_FP8_H

#include "dtype_codes.h"

// fp8 parameters: mantissa bits, exponent bias, largest finite value, fnuz.
#define FP8_PARAMS(dt, mb, bias, maxv, fnuz)                                     \
  int mb = (dt == XR_F8E4M3FN || dt == XR_F8E4M3FNUZ) ? 3 : 2;                   \
  int bias = dt == XR_F8E4M3FN ? 7 : dt == XR_F8E5M2 ? 15 : dt == XR_F8E4M3FNUZ ? 8 : 16; \
  float maxv = dt == XR_F8E4M3FN ? 448.0f : dt == XR_F8E4M3FNUZ ? 240.0f : 57344.0f; \
  int fnuz = dt == XR_F8E4M3FNUZ || dt == XR_F8E5M2FNUZ;

float fp8_decode(uchar v, int dt) {
  FP8_PARAMS(dt, mb, bias, maxv, fnuz)
  (void)maxv;
  int eb = 7 - mb;
  uint sign = v >> 7, e = (v >> mb) & ((1u << eb) - 1), m = v & ((1u << mb) - 1);
  if (fnuz && v == 0x80) return NAN;
  if (!fnuz && e == (1u << eb) - 1) {
    if (dt == XR_F8E5M2) return m ? NAN : (sign ? -INFINITY : INFINITY);
    if (m == (1u << mb) - 1) return NAN;  // e4m3fn: only S.1111.111 is NaN
  }
  float f = e ? ldexp(1.0f + (float)m / (float)(1 << mb), (int)e - bias)
              : ldexp((float)m / (float)(1 << mb), 1 - bias);
  return sign ? -f : f;
}

uchar fp8_encode(float f, int dt) {
  FP8_PARAMS(dt, mb, bias, maxv, fnuz)
  if (isnan(f)) return fnuz ? 0x80 : 0x7f;
  uint sign = signbit(f) ? 0x80 : 0;
  float a = fmin(fabs(f), maxv);
  int emin = 1 - bias, e = emin;
  if (a > 0.0f) {
    int fe;
    frexp(a, &fe);
    e = max(fe - 1, emin);
  }
  float r = rint(ldexp(a, mb - e));  // the significand in units of the quantum
  if (r >= (float)(2 << mb)) {
    r *= 0.5f;
    e++;
  }
  uint code = r < (float)(1 << mb) ? (uint)r : (((uint)(e - emin + 1)) << mb) | ((uint)r - (1u << mb));
  if (code == 0 && fnuz) sign = 0;
  return (uchar)(sign | code);
}

#endif
