// Batch norm and group norm (kernels/channel_norm.h) on CUDA and HIP, the twin of
// kernels/opencl/channel_norm.cl (one host, kernels/vision_device.c, launches both):
// one block per statistic (a channel for batch norm, a sample's group of channels for group
// norm) in a grid-stride loop, its threads striding over the statistic's elements in fp32 and
// combining partial sums with xr_block_sum; mean first, then the variance around it, then the
// normalised elements. Semantics as kernels/channel_norm.c's reference.
// Each header uses the ones before it.
// clang-format off
#include "hip_compat.h"
#include "dtype_io.h"
#include "dtype_codes.h"
#include "dtype_dispatch.h"
#include "channel_norm_args.h"
// clang-format on

typedef long long i64;

// The operand slots of kernels/channel_norm.h, in its order (the host asserts the count).
enum { X, GRAD, WEIGHT, BIAS, RMEAN, RVAR, SMEAN, SINV, OUT, OUT_MEAN, OUT_INV, GRAD_W, GRAD_B };

#define XR_CN_BUFFERS                                                                            \
  unsigned char *b0, unsigned char *b1, unsigned char *b2, unsigned char *b3, unsigned char *b4, \
      unsigned char *b5, unsigned char *b6, unsigned char *b7, unsigned char *b8,                \
      unsigned char *b9, unsigned char *b10, unsigned char *b11, unsigned char *b12
#define XR_CN_BUFFER_ARRAY \
  { b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12 }

// Element i of activation slot k's (n, c) plane.
static __device__ __forceinline__ i64 xr_cn_at(const xr_cn_args_t &a, int k, i64 n, i64 c, i64 i) {
  const xr_view5_args_t &v = a.v[k];
  const i64 w = i % a.size[2], t = i / a.size[2];
  const i64 h = t % a.size[1], d = t / a.size[1];
  return v.offset + n * v.strides[0] + c * v.strides[1] + d * v.strides[2] + h * v.strides[3] +
         w * v.strides[4];
}

static __device__ __forceinline__ float xr_cn_act(const xr_cn_args_t &a, unsigned char *const *buf,
                                                  int k, i64 n, i64 c, i64 i) {
  return xr_load_as_float(buf[k], (int)a.v[k].dtype, xr_cn_at(a, k, n, c, i));
}

// Per-channel vector k at c (group statistics: [N, groups] at n, c = g); `fallback` if absent.
static __device__ __forceinline__ float xr_cn_vec(const xr_cn_args_t &a, unsigned char *const *buf,
                                                  int k, i64 n, i64 c, float fallback) {
  const xr_view5_args_t &v = a.v[k];
  if (v.dtype < 0) return fallback;
  return xr_load_as_float(buf[k], (int)v.dtype, v.offset + n * v.strides[0] + c * v.strides[1]);
}

static __device__ __forceinline__ void xr_cn_set(const xr_cn_args_t &a, unsigned char *const *buf,
                                                 int k, i64 n, i64 c, float value) {
  const xr_view5_args_t &v = a.v[k];
  if (v.dtype >= 0)
    xr_store_float(buf[k], (int)v.dtype, v.offset + n * v.strides[0] + c * v.strides[1], value);
}

static __device__ __forceinline__ void xr_cn_out(const xr_cn_args_t &a, unsigned char *const *buf,
                                                 i64 n, i64 c, i64 i, float value) {
  xr_store_float(buf[OUT], (int)a.v[OUT].dtype, xr_cn_at(a, OUT, n, c, i), value);
}

static __device__ __forceinline__ i64 xr_cn_spatial(const xr_cn_args_t &a) {
  return a.size[0] * a.size[1] * a.size[2];
}

extern "C" __global__ void __launch_bounds__(XR_CN_THREADS)
    xr_cn_batch(xr_cn_args_t a, XR_CN_BUFFERS) {
  unsigned char *const buf[XR_CN_ARGS_SLOTS] = XR_CN_BUFFER_ARRAY;
  const i64 spatial = xr_cn_spatial(a), count = a.n * spatial;
  for (i64 c = blockIdx.x; c < a.c; c += gridDim.x) {
    float mean, invstd;
    if (a.training) {  // uniform over the block: every thread takes the branch's barriers
      float sum = 0.0f, sq = 0.0f;
      for (i64 j = threadIdx.x; j < count; j += blockDim.x)
        sum += xr_cn_act(a, buf, X, j / spatial, c, j % spatial);
      mean = xr_block_sum(sum) / (float)count;
      for (i64 j = threadIdx.x; j < count; j += blockDim.x) {
        const float d = xr_cn_act(a, buf, X, j / spatial, c, j % spatial) - mean;
        sq += d * d;
      }
      sq = xr_block_sum(sq);
      const float var = sq / (float)count;
      invstd = 1.0f / sqrtf(var + a.eps);
      if (threadIdx.x == 0) {
        xr_cn_set(a, buf, OUT_MEAN, 0, c, mean);
        xr_cn_set(a, buf, OUT_INV, 0, c, invstd);
        const float unbiased = count > 1 ? sq / (float)(count - 1) : var;
        xr_cn_set(a, buf, RMEAN, 0, c,
                  (1 - a.momentum) * xr_cn_vec(a, buf, RMEAN, 0, c, 0) + a.momentum * mean);
        xr_cn_set(a, buf, RVAR, 0, c,
                  (1 - a.momentum) * xr_cn_vec(a, buf, RVAR, 0, c, 0) + a.momentum * unbiased);
      }
    } else {
      mean = xr_cn_vec(a, buf, RMEAN, 0, c, 0);
      invstd = 1.0f / sqrtf(xr_cn_vec(a, buf, RVAR, 0, c, 1) + a.eps);
    }
    const float w = xr_cn_vec(a, buf, WEIGHT, 0, c, 1), b = xr_cn_vec(a, buf, BIAS, 0, c, 0);
    for (i64 j = threadIdx.x; j < count; j += blockDim.x) {
      const i64 n = j / spatial, i = j % spatial;
      xr_cn_out(a, buf, n, c, i, (xr_cn_act(a, buf, X, n, c, i) - mean) * invstd * w + b);
    }
  }
}

extern "C" __global__ void __launch_bounds__(XR_CN_THREADS)
    xr_cn_batch_backward(xr_cn_args_t a, XR_CN_BUFFERS) {
  unsigned char *const buf[XR_CN_ARGS_SLOTS] = XR_CN_BUFFER_ARRAY;
  const i64 spatial = xr_cn_spatial(a), count = a.n * spatial;
  for (i64 c = blockIdx.x; c < a.c; c += gridDim.x) {
    const float mean = xr_cn_vec(a, buf, a.training ? SMEAN : RMEAN, 0, c, 0);
    const float invstd = a.training ? xr_cn_vec(a, buf, SINV, 0, c, 1)
                                    : 1.0f / sqrtf(xr_cn_vec(a, buf, RVAR, 0, c, 1) + a.eps);
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (i64 j = threadIdx.x; j < count; j += blockDim.x) {
      const i64 n = j / spatial, i = j % spatial;
      const float g = xr_cn_act(a, buf, GRAD, n, c, i);
      sum_g += g;
      sum_gx += g * (xr_cn_act(a, buf, X, n, c, i) - mean) * invstd;
    }
    sum_g = xr_block_sum(sum_g);
    sum_gx = xr_block_sum(sum_gx);
    if (threadIdx.x == 0) {
      xr_cn_set(a, buf, GRAD_W, 0, c, sum_gx);
      xr_cn_set(a, buf, GRAD_B, 0, c, sum_g);
    }
    if (a.v[OUT].dtype < 0) continue;
    const float w = xr_cn_vec(a, buf, WEIGHT, 0, c, 1);
    for (i64 j = threadIdx.x; j < count; j += blockDim.x) {
      const i64 n = j / spatial, i = j % spatial;
      const float g = xr_cn_act(a, buf, GRAD, n, c, i);
      const float xhat = (xr_cn_act(a, buf, X, n, c, i) - mean) * invstd;
      xr_cn_out(a, buf, n, c, i,
                a.training ? w * invstd * (g - sum_g / (float)count - xhat * sum_gx / (float)count)
                           : g * w * invstd);
    }
  }
}

extern "C" __global__ void __launch_bounds__(XR_CN_THREADS)
    xr_cn_group(xr_cn_args_t a, XR_CN_BUFFERS) {
  unsigned char *const buf[XR_CN_ARGS_SLOTS] = XR_CN_BUFFER_ARRAY;
  const i64 spatial = xr_cn_spatial(a), per = a.c / a.groups, count = per * spatial;
  for (i64 item = blockIdx.x; item < a.n * a.groups; item += gridDim.x) {
    const i64 n = item / a.groups, g = item % a.groups, c0 = g * per;
    float sum = 0.0f, sq = 0.0f;
    for (i64 j = threadIdx.x; j < count; j += blockDim.x)
      sum += xr_cn_act(a, buf, X, n, c0 + j / spatial, j % spatial);
    const float mean = xr_block_sum(sum) / (float)count;
    for (i64 j = threadIdx.x; j < count; j += blockDim.x) {
      const float d = xr_cn_act(a, buf, X, n, c0 + j / spatial, j % spatial) - mean;
      sq += d * d;
    }
    const float rstd = 1.0f / sqrtf(xr_block_sum(sq) / (float)count + a.eps);
    if (threadIdx.x == 0) {
      xr_cn_set(a, buf, OUT_MEAN, n, g, mean);
      xr_cn_set(a, buf, OUT_INV, n, g, rstd);
    }
    for (i64 j = threadIdx.x; j < count; j += blockDim.x) {
      const i64 c = c0 + j / spatial, i = j % spatial;
      const float w = xr_cn_vec(a, buf, WEIGHT, 0, c, 1), b = xr_cn_vec(a, buf, BIAS, 0, c, 0);
      xr_cn_out(a, buf, n, c, i, (xr_cn_act(a, buf, X, n, c, i) - mean) * rstd * w + b);
    }
  }
}

extern "C" __global__ void __launch_bounds__(XR_CN_THREADS)
    xr_cn_group_backward(xr_cn_args_t a, XR_CN_BUFFERS) {
  unsigned char *const buf[XR_CN_ARGS_SLOTS] = XR_CN_BUFFER_ARRAY;
  const i64 spatial = xr_cn_spatial(a), per = a.c / a.groups, count = per * spatial;
  for (i64 item = blockIdx.x; item < a.n * a.groups; item += gridDim.x) {
    const i64 n = item / a.groups, g = item % a.groups, c0 = g * per;
    const float mean = xr_cn_vec(a, buf, SMEAN, n, g, 0), rstd = xr_cn_vec(a, buf, SINV, n, g, 1);
    float sum_wg = 0.0f, sum_wgx = 0.0f;
    for (i64 j = threadIdx.x; j < count; j += blockDim.x) {
      const i64 c = c0 + j / spatial, i = j % spatial;
      const float wg = xr_cn_vec(a, buf, WEIGHT, 0, c, 1) * xr_cn_act(a, buf, GRAD, n, c, i);
      sum_wg += wg;
      sum_wgx += wg * (xr_cn_act(a, buf, X, n, c, i) - mean) * rstd;
    }
    const float mean_wg = xr_block_sum(sum_wg) / (float)count;
    const float mean_wgx = xr_block_sum(sum_wgx) / (float)count;
    for (i64 j = threadIdx.x; j < count; j += blockDim.x) {
      const i64 c = c0 + j / spatial, i = j % spatial;
      const float xhat = (xr_cn_act(a, buf, X, n, c, i) - mean) * rstd;
      const float wg = xr_cn_vec(a, buf, WEIGHT, 0, c, 1) * xr_cn_act(a, buf, GRAD, n, c, i);
      xr_cn_out(a, buf, n, c, i, rstd * (wg - mean_wg - xhat * mean_wgx));
    }
  }
}

extern "C" __global__ void __launch_bounds__(XR_CN_THREADS)
    xr_cn_group_param_grads(xr_cn_args_t a, XR_CN_BUFFERS) {
  unsigned char *const buf[XR_CN_ARGS_SLOTS] = XR_CN_BUFFER_ARRAY;
  const i64 spatial = xr_cn_spatial(a), per = a.c / a.groups;
  for (i64 c = blockIdx.x; c < a.c; c += gridDim.x) {
    const i64 g = c / per;
    float sum_g = 0.0f, sum_gx = 0.0f;
    for (i64 j = threadIdx.x; j < a.n * spatial; j += blockDim.x) {
      const i64 n = j / spatial, i = j % spatial;
      const float dy = xr_cn_act(a, buf, GRAD, n, c, i);
      sum_g += dy;
      sum_gx += dy * (xr_cn_act(a, buf, X, n, c, i) - xr_cn_vec(a, buf, SMEAN, n, g, 0)) *
                xr_cn_vec(a, buf, SINV, n, g, 1);
    }
    sum_g = xr_block_sum(sum_g);
    sum_gx = xr_block_sum(sum_gx);
    if (threadIdx.x == 0) {
      xr_cn_set(a, buf, GRAD_W, 0, c, sum_gx);
      xr_cn_set(a, buf, GRAD_B, 0, c, sum_g);
    }
  }
}
