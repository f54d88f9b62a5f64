// vLLM's fp8 quantization ops (kernels/quant.h) on CUDA and HIP (kernels/quant_device.c
// launches these), the twins of kernels/opencl/quant.cl and, step for step, of vLLM's
// csrc/quantization/w8a8/fp8/common.cu: one block per item, a (row, segment) of the static and
// dynamic ops or a whole row of the per-token op.
//  - xr_quant_absmax: dynamic, pass 1: each item's max|x| (fmaxf from 0, so NaN is ignored)
//  - xr_quant_reduce: dynamic, pass 2, one block: scale[0] = max / M
//  - xr_quant_rows:   fp8(fmaxf(-M, fminf(x * (1 / scale), M))) (static, dynamic) or, after the
//    row's own reduction that writes scale[t], of x / s_t (per token); the stores round to
//    nearest even (dtype_io.h). Input and result dtypes are run-time values.
#include "hip_compat.h"
#include "dtype_io.h"
#include "dtype_codes.h"
#include "dtype_dispatch.h"
#include "quant_args.h"

static __device__ __forceinline__ float xr_quant_share_absmax(const void *in, const xr_quant_args_t &p,
                                                              long long r, long long c0, long long c1) {
  float m = 0.0f;
  for (long long c = c0 + threadIdx.x; c < c1; c += blockDim.x)
    m = fmaxf(m, fabsf(xr_load_as_float(in, p.in_dtype, p.in_off + r * p.in_rs + c)));
  return m;
}

static __device__ __forceinline__ void xr_quant_store(unsigned char *out, const xr_quant_args_t &p,
                                                      long long i, float x) {
  xr_store_float(out, p.out_dtype, i, fmaxf(-p.fp8_max, fminf(x, p.fp8_max)));
}

extern "C" __global__ void __launch_bounds__(XR_QUANT_GPU_THREADS)
    xr_quant_absmax(float *partial, const unsigned char *in, xr_quant_args_t p) {
  for (long long item = blockIdx.x; item < p.items; item += gridDim.x) {
    const long long r = item / p.segments, c0 = (item % p.segments) * XR_QUANT_GPU_SEGMENT;
    const long long c1 = c0 + XR_QUANT_GPU_SEGMENT < p.hidden ? c0 + XR_QUANT_GPU_SEGMENT : p.hidden;
    const float m = xr_block_max(xr_quant_share_absmax(in, p, r, c0, c1));
    if (threadIdx.x == 0) partial[item] = m;
  }
}

extern "C" __global__ void __launch_bounds__(XR_QUANT_GPU_THREADS)
    xr_quant_reduce(float *scale, const float *partial, xr_quant_args_t p) {
  float m = 0.0f;
  for (long long i = threadIdx.x; i < p.items; i += blockDim.x) m = fmaxf(m, partial[i]);
  m = xr_block_max(m);
  if (threadIdx.x == 0) scale[p.scale_off] = m / p.fp8_max;
}

extern "C" __global__ void __launch_bounds__(XR_QUANT_GPU_THREADS)
    xr_quant_rows(unsigned char *out, const unsigned char *in, float *scale, const float *scale_ub,
                  xr_quant_args_t p) {
  for (long long item = blockIdx.x; item < p.items; item += gridDim.x) {
    const long long r = p.op == XR_QUANT_ARG_PER_TOKEN ? item : item / p.segments;
    const long long base = p.in_off + r * p.in_rs, dst = p.out_off + r * p.out_rs;
    if (p.op == XR_QUANT_ARG_PER_TOKEN) {
      float amax = xr_block_max(xr_quant_share_absmax(in, p, r, 0, p.hidden));
      if (p.has_ub) amax = fminf(amax, scale_ub[p.ub_off]);
      const float ts = fmaxf(amax / p.fp8_max, p.min_scale);
      if (threadIdx.x == 0) scale[p.scale_off + r * p.scale_si] = ts;
      for (long long c = threadIdx.x; c < p.hidden; c += blockDim.x)
        xr_quant_store(out, p, dst + c, xr_load_as_float(in, p.in_dtype, base + c) / ts);
      continue;
    }
    const long long c0 = (item % p.segments) * XR_QUANT_GPU_SEGMENT;
    const long long c1 = c0 + XR_QUANT_GPU_SEGMENT < p.hidden ? c0 + XR_QUANT_GPU_SEGMENT : p.hidden;
    const float *row_scale = scale + p.scale_off + (r / p.group_m) * p.scale_si;
    const float inv = 1.0f / row_scale[0];
    for (long long c = c0 + threadIdx.x; c < c1; c += blockDim.x) {
      const float k = p.grouped ? 1.0f / row_scale[(c / p.group_n) * p.scale_sj] : inv;
      xr_quant_store(out, p, dst + c, xr_load_as_float(in, p.in_dtype, base + c) * k);
    }
  }
}
