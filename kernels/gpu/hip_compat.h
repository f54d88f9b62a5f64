// One CUDA source for both vendors: kernels/gpu/*.cu are written in CUDA C++ and this header
// maps the CUDA spellings they use onto HIP when the compiler is hipcc or hiprtc (the way
// ggml's src/ggml-cuda/vendors/hip.h does). It needs no other header under NVRTC and hiprtc,
// so the embedded sources compile at run time without an include path.
//
// Warp width: 32 lanes on NVIDIA, 64 on AMD Instinct (CDNA), 32 on RDNA. Kernels never assume
// either: they read `warpSize` in device code and get the width from
// xr_hal_device_properties().simd_width on the host.
#ifndef XR_KERNELS_GPU_HIP_COMPAT_H
#define XR_KERNELS_GPU_HIP_COMPAT_H

#if defined(__HIPCC__) || defined(__HIPCC_RTC__) || defined(__HIP__)
#define XR_GPU_HIP 1
#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif
// CUDA's *_sync shuffles take a lane mask; HIP's take none (every lane of the wavefront).
#define __shfl_xor_sync(mask, value, lane_mask) __shfl_xor((value), (lane_mask))
#define __shfl_down_sync(mask, value, delta) __shfl_down((value), (delta))
#define __shfl_sync(mask, value, lane) __shfl((value), (lane))
#else
#define XR_GPU_CUDA 1
#endif

#define XR_FULL_MASK 0xffffffffu

// ---- 16-bit float storage, converted through float (round to nearest even) -----------------
// Raw bits instead of __half / __nv_bfloat16, whose headers differ between vendors and
// versions (ROCm 5 has no hip_bf16.h) and need an include path under NVRTC.

static __device__ __forceinline__ float xr_half_to_float(unsigned short bits) {
#if XR_GPU_HIP
  _Float16 value;
  __builtin_memcpy(&value, &bits, sizeof value);
  return (float)value;
#else
  float value;
  asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(bits));
  return value;
#endif
}

static __device__ __forceinline__ unsigned short xr_float_to_half(float value) {
  unsigned short bits;
#if XR_GPU_HIP
  _Float16 half = (_Float16)value;
  __builtin_memcpy(&bits, &half, sizeof bits);
#else
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(value));
#endif
  return bits;
}

// ---- bf16, the 8-bit floats, e2m1 and e8m0: base/float_formats.h, the host's own -----------
// (f16 above takes the device's conversion instructions, which round the same way.)
#define XR_FLOAT_FN static __device__ __forceinline__
#define XR_AS_FLOAT(u) __uint_as_float((unsigned int)(u))
#define XR_AS_UINT(f) __float_as_uint((float)(f))
#include "base/float_formats.h"

// ---- warp-level reduction over warpSize lanes (32 or 64) ------------------------------------

static __device__ __forceinline__ float xr_warp_sum(float value) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2) {
    value += __shfl_xor_sync(XR_FULL_MASK, value, offset);
  }
  return value;
}

#endif  // XR_KERNELS_GPU_HIP_COMPAT_H
