// Element loads and stores for the GPU kernels, shared by every kernels/gpu/*.cu (include it
// after hip_compat.h, whose conversions it uses; kernels/embed_sources.sh inlines them).
// Storage types: float, unsigned short for f16/bf16 bits, unsigned char for fp8 bits (and for
// the e2m1 pairs and e8m0 scales of MX blocks, which are only decoded). Values travel as float;
// a store rounds once, to nearest even, exactly as kernels/dtype.c does on the host, so GPU and
// CPU results can be compared bit for bit where the arithmetic allows.
#ifndef XR_KERNELS_GPU_DTYPE_IO_H
#define XR_KERNELS_GPU_DTYPE_IO_H

struct xr_io_f32 {
  typedef float storage;
  static __device__ __forceinline__ float load(const float *p, long long i) { return p[i]; }
  static __device__ __forceinline__ void store(float *p, long long i, float v) { p[i] = v; }
};

struct xr_io_f16 {
  typedef unsigned short storage;
  static __device__ __forceinline__ float load(const unsigned short *p, long long i) {
    return xr_half_to_float(p[i]);
  }
  static __device__ __forceinline__ void store(unsigned short *p, long long i, float v) {
    p[i] = xr_float_to_half(v);
  }
};

struct xr_io_bf16 {
  typedef unsigned short storage;
  static __device__ __forceinline__ float load(const unsigned short *p, long long i) {
    return xr_bf16_to_float(p[i]);
  }
  static __device__ __forceinline__ void store(unsigned short *p, long long i, float v) {
    p[i] = xr_float_to_bf16(v);
  }
};

// ---- 8-bit floats: OCP e4m3fn / e5m2 and AMD's fnuz variants (kernels/dtype.h) -------------
// MBITS mantissa bits, exponent BIAS; FNUZ: 0x80 is the only NaN and there is no -0; HAS_INF:
// e5m2's all-ones exponent is inf/NaN; otherwise (e4m3fn) only S.1111.111 is NaN. MAX is the
// largest finite value, to which stores saturate (as torch's saturating conversion does).

template <int MBITS, int BIAS, bool FNUZ, bool HAS_INF>
static __device__ __forceinline__ float xr_fp8_decode(unsigned char v) {
  const int ebits = 7 - MBITS;
  const unsigned int exp_all = (1u << ebits) - 1, man_all = (1u << MBITS) - 1;
  const unsigned int sign = v >> 7, exp = (v >> MBITS) & exp_all, man = v & man_all;
  if (FNUZ && v == 0x80) return __int_as_float(0x7fc00000);
  if (!FNUZ && HAS_INF && exp == exp_all)
    return man ? __int_as_float(0x7fc00000) : __int_as_float(sign ? 0xff800000 : 0x7f800000);
  if (!FNUZ && !HAS_INF && exp == exp_all && man == man_all) return __int_as_float(0x7fc00000);
  const float f = exp ? ldexpf(1.0f + (float)man / (float)(1u << MBITS), (int)exp - BIAS)
                      : ldexpf((float)man / (float)(1u << MBITS), 1 - BIAS);
  return sign ? -f : f;
}

template <int MBITS, int BIAS, bool FNUZ, bool HAS_INF>
static __device__ __forceinline__ unsigned char xr_fp8_encode(float f, float max) {
  if (f != f) return FNUZ ? 0x80 : 0x7f;
  unsigned char sign = (__float_as_uint(f) >> 31) ? 0x80 : 0;
  float a = fminf(fabsf(f), max);
  // Round to the quantum of a's binade (the subnormal one below the smallest normal), nearest
  // even: rintf's ties-to-even is the even encoding because the code's last bit is the
  // mantissa's. Rounding up may carry into the next binade, which the re-encoding handles.
  int e = (int)((__float_as_uint(a) >> 23) & 0xff) - 127;
  if (e < 1 - BIAS) e = 1 - BIAS;
  float r = rintf(ldexpf(a, MBITS - e));  // a / quantum
  unsigned int code;
  if (r == 0.0f) {
    code = 0;
  } else if (r >= (float)(2u << MBITS)) {  // carried into the next binade
    code = ((unsigned int)(e + 1 + BIAS) << MBITS);
  } else if (r < (float)(1u << MBITS)) {  // subnormal
    code = (unsigned int)r;
  } else {
    code = ((unsigned int)(e + BIAS) << MBITS) | ((unsigned int)r - (1u << MBITS));
  }
  if (code == 0 && FNUZ) sign = 0;  // fnuz has no negative zero
  return (unsigned char)(sign | code);
}

#define XR_FP8_IO(name, mbits, bias, fnuz, has_inf, max)                                       \
  struct xr_io_##name {                                                                       \
    typedef unsigned char storage;                                                            \
    static __device__ __forceinline__ float load(const unsigned char *p, long long i) {       \
      return xr_fp8_decode<mbits, bias, fnuz, has_inf>(p[i]);                                 \
    }                                                                                         \
    static __device__ __forceinline__ void store(unsigned char *p, long long i, float v) {    \
      p[i] = xr_fp8_encode<mbits, bias, fnuz, has_inf>(v, max);                               \
    }                                                                                         \
  };
XR_FP8_IO(f8e4m3fn, 3, 7, false, false, 448.0f)
XR_FP8_IO(f8e5m2, 2, 15, false, true, 57344.0f)
XR_FP8_IO(f8e4m3fnuz, 3, 8, true, false, 240.0f)
XR_FP8_IO(f8e5m2fnuz, 2, 16, true, false, 57344.0f)
#undef XR_FP8_IO

// ---- MX blocks: e2m1 codes and e8m0 scales (kernels/dtype.h) -------------------------------
// e2m1 code c (its low 4 bits): sign bit 3, magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 (exponent
// bits 2..1 biased by 1, mantissa bit 0; exponent 0 holds 0 and 0.5). A byte of f4e2m1x2 holds
// the lower index in its low nibble.
static __device__ __forceinline__ float xr_e2m1_decode(unsigned int c) {
  const unsigned int e = (c >> 1) & 3u, m = c & 1u;
  const unsigned int bits = e ? (e + 126u) << 23 | m << 22 : (m ? 0x3f000000u : 0u);
  return __uint_as_float(bits | (c & 8u) << 28);
}

// e8m0 byte b: 2^(b - 127) (b = 0: the subnormal 2^-127); 0xff is NaN.
static __device__ __forceinline__ float xr_e8m0_decode(unsigned int b) {
  return b == 255u ? __uint_as_float(0x7fc00000u) : __uint_as_float(b ? b << 23 : 0x00400000u);
}

#endif  // XR_KERNELS_GPU_DTYPE_IO_H
