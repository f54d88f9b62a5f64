// Element loads and stores for the GPU kernels, shared by every kernels/gpu/*.cu (include it
// after hip_compat.h, whose conversions it uses; kernels/embed_sources.sh inlines them).
// Storage types: float, unsigned short for f16/bf16 bits, unsigned char for fp8 bits (and for
// the e2m1 pairs and e8m0 scales of MX blocks, which are only decoded). Values travel as float;
// a store rounds once, to nearest even, with base/float_formats.h's conversions (the host's own),
// so GPU and CPU results can be compared bit for bit where the arithmetic allows.
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
    return xr_bf16_to_f32(p[i]);
  }
  static __device__ __forceinline__ void store(unsigned short *p, long long i, float v) {
    p[i] = xr_f32_to_bf16(v);
  }
};

// ---- 8-bit floats: OCP e4m3fn / e5m2 and AMD's fnuz variants --------------------------------
// base/float_formats.h's decoder and saturating encoder, the format folded to constants.
#define XR_FP8_IO(name, mbits, fnuz)                                                           \
  struct xr_io_##name {                                                                       \
    typedef unsigned char storage;                                                            \
    static __device__ __forceinline__ float load(const unsigned char *p, long long i) {       \
      const xr_fp8_format_t f = xr_fp8_format_of(mbits, fnuz);                                \
      return xr_fp8_decode(p[i], &f);                                                         \
    }                                                                                         \
    static __device__ __forceinline__ void store(unsigned char *p, long long i, float v) {    \
      const xr_fp8_format_t f = xr_fp8_format_of(mbits, fnuz);                                \
      p[i] = xr_fp8_encode(v, &f);                                                            \
    }                                                                                         \
  };
XR_FP8_IO(f8e4m3fn, 3, 0)
XR_FP8_IO(f8e5m2, 2, 0)
XR_FP8_IO(f8e4m3fnuz, 3, 1)
XR_FP8_IO(f8e5m2fnuz, 2, 1)
#undef XR_FP8_IO

// MX blocks: e2m1 codes (a byte of f4e2m1x2 holds the lower index in its low nibble) and e8m0
// scales decode through base/float_formats.h's xr_e2m1_to_f32 and xr_e8m0_to_f32.

#endif  // XR_KERNELS_GPU_DTYPE_IO_H
