// Softmax, layer norm, RMS norm, fused add + RMS norm and rotary embedding on CUDA and HIP
// (kernels/norm_device.c launches these), the twins of kernels/opencl/norm.cl and rotary.cl.
// Arithmetic in fp32, each output rounded once; dtypes are run-time values (f32, f16, bf16),
// so one compile serves every problem. Semantics: kernels/norm.h.
//  - Row ops: one block per row (a grid-stride loop over rows), threads striding over the
//    row, block-wide sums and maxima through xr_block_sum / xr_block_max (warp shuffles over
//    warpSize lanes, then the per-warp partials).
//  - Rotary: one block per token, threads over (head, pair) for the query heads, then the key
//    heads; each pair is read and written by one thread.
#include "hip_compat.h"
#include "dtype_io.h"
#include "dtype_codes.h"
#include "dtype_dispatch.h"
#include "norm_args.h"

static __device__ __forceinline__ long long xr_row_offset(const xr_rows_args_t &p, int k,
                                                          long long r) {
  long long offset = p.v[k].offset;
  for (int d = p.outer_rank - 1; d >= 0; d--) {
    offset += (r % p.shape[d]) * p.v[k].outer[d];
    r /= p.shape[d];
  }
  return offset;
}

// v rounded to a 16-bit dtype and widened back (f32: unchanged).
static __device__ __forceinline__ float xr_round_to(int dtype, float v) {
  if (dtype == XR_GPU_F16) return xr_half_to_float(xr_float_to_half(v));
  if (dtype == XR_GPU_BF16) return xr_bf16_to_f32(xr_f32_to_bf16(v));
  return v;
}

static __device__ __forceinline__ float xr_row_load(const xr_rows_args_t &p, int k,
                                                    const unsigned char *base, long long row,
                                                    long long i) {
  return xr_load_as_float(base, p.v[k].dtype, row + i * p.v[k].stride);
}

// Every row kernel takes the same arguments (the host picks one by op); absent tensors are
// bound to some valid buffer and flagged not present.
#define XR_ROWS_ARGS                                                                           \
  unsigned char *x, unsigned char *out, unsigned char *residual, unsigned char *residual_out,   \
      const unsigned char *weight, const unsigned char *bias, float *mean_out, float *rstd_out, \
      xr_rows_args_t p

extern "C" __global__ void __launch_bounds__(XR_ROWS_GPU_THREADS) xr_softmax(XR_ROWS_ARGS) {
  for (long long r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const long long xo = xr_row_offset(p, XR_ROWS_ARG_X, r);
    const long long oo = xr_row_offset(p, XR_ROWS_ARG_OUT, r);
    float m = __int_as_float(0xff800000);  // -inf
    for (long long i = threadIdx.x; i < p.n; i += blockDim.x) {
      float v = xr_row_load(p, XR_ROWS_ARG_X, x, xo, i);
      if (p.cast_dtype) v = xr_round_to(p.cast_dtype, v);
      m = fmaxf(m, v);
    }
    m = xr_block_max(m);
    float s = 0.0f;
    for (long long i = threadIdx.x; i < p.n; i += blockDim.x) {
      float v = xr_row_load(p, XR_ROWS_ARG_X, x, xo, i);
      if (p.cast_dtype) v = xr_round_to(p.cast_dtype, v);
      s += expf(v - m);
    }
    const float inv = 1.0f / xr_block_sum(s);
    for (long long i = threadIdx.x; i < p.n; i += blockDim.x) {
      float v = xr_row_load(p, XR_ROWS_ARG_X, x, xo, i);
      if (p.cast_dtype) v = xr_round_to(p.cast_dtype, v);
      xr_store_float(out, p.v[XR_ROWS_ARG_OUT].dtype, oo + i * p.v[XR_ROWS_ARG_OUT].stride,
                     expf(v - m) * inv);
    }
  }
}

// out = (src - mean) * rstd * weight + bias for row r (src starting at so), and the
// statistics when they are returned.
static __device__ void xr_finish_row(const xr_rows_args_t &p, long long r,
                                     const unsigned char *src, int src_slot, long long so,
                                     float mean, float rstd, unsigned char *out,
                                     const unsigned char *weight, const unsigned char *bias,
                                     float *mean_out, float *rstd_out) {
  const long long oo = xr_row_offset(p, XR_ROWS_ARG_OUT, r);
  const xr_rows_view_args_t &w = p.v[XR_ROWS_ARG_WEIGHT], &b = p.v[XR_ROWS_ARG_BIAS];
  for (long long i = threadIdx.x; i < p.n; i += blockDim.x) {
    float v = (xr_row_load(p, src_slot, src, so, i) - mean) * rstd;
    if (w.present) v *= xr_load_as_float(weight, w.dtype, w.offset + i * w.stride);
    if (b.present) v += xr_load_as_float(bias, b.dtype, b.offset + i * b.stride);
    xr_store_float(out, p.v[XR_ROWS_ARG_OUT].dtype, oo + i * p.v[XR_ROWS_ARG_OUT].stride, v);
  }
  if (threadIdx.x == 0 && p.v[XR_ROWS_ARG_MEAN].present) {
    mean_out[xr_row_offset(p, XR_ROWS_ARG_MEAN, r)] = mean;
    rstd_out[xr_row_offset(p, XR_ROWS_ARG_RSTD, r)] = rstd;
  }
}

extern "C" __global__ void __launch_bounds__(XR_ROWS_GPU_THREADS) xr_layer_norm(XR_ROWS_ARGS) {
  for (long long r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const long long xo = xr_row_offset(p, XR_ROWS_ARG_X, r);
    float s = 0.0f;
    for (long long i = threadIdx.x; i < p.n; i += blockDim.x)
      s += xr_row_load(p, XR_ROWS_ARG_X, x, xo, i);
    const float mean = xr_block_sum(s) / (float)p.n;
    float sq = 0.0f;
    for (long long i = threadIdx.x; i < p.n; i += blockDim.x) {
      const float d = xr_row_load(p, XR_ROWS_ARG_X, x, xo, i) - mean;
      sq += d * d;
    }
    const float rstd = 1.0f / sqrtf(xr_block_sum(sq) / (float)p.n + p.eps);
    xr_finish_row(p, r, x, XR_ROWS_ARG_X, xo, mean, rstd, out, weight, bias, mean_out, rstd_out);
  }
}

extern "C" __global__ void __launch_bounds__(XR_ROWS_GPU_THREADS) xr_rms_norm(XR_ROWS_ARGS) {
  for (long long r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const long long xo = xr_row_offset(p, XR_ROWS_ARG_X, r);
    float sq = 0.0f;
    for (long long i = threadIdx.x; i < p.n; i += blockDim.x) {
      const float v = xr_row_load(p, XR_ROWS_ARG_X, x, xo, i);
      sq += v * v;
    }
    const float rstd = 1.0f / sqrtf(xr_block_sum(sq) / (float)p.n + p.eps);
    xr_finish_row(p, r, x, XR_ROWS_ARG_X, xo, 0.0f, rstd, out, weight, bias, mean_out,
                  rstd_out);
  }
}

// residual_out = round(x + residual_in), then out = rms_norm of the sum: as stored (in place:
// residual_out is residual_in and out is x; each thread reads back only the elements it stored
// itself, the same i stride in both loops) or, with fp32_sum, the fp32 sum recomputed from x and
// residual_in (distinct tensors then).
extern "C" __global__ void __launch_bounds__(XR_ROWS_GPU_THREADS)
    xr_add_rms_norm(XR_ROWS_ARGS) {
  const xr_rows_view_args_t &ro = p.v[XR_ROWS_ARG_RESIDUAL_OUT];
  const xr_rows_view_args_t &o = p.v[XR_ROWS_ARG_OUT], &w = p.v[XR_ROWS_ARG_WEIGHT];
  for (long long r = blockIdx.x; r < p.rows; r += gridDim.x) {
    const long long xo = xr_row_offset(p, XR_ROWS_ARG_X, r);
    const long long io = xr_row_offset(p, XR_ROWS_ARG_RESIDUAL_IN, r);
    const long long so = xr_row_offset(p, XR_ROWS_ARG_RESIDUAL_OUT, r);
    float sq = 0.0f;
    for (long long i = threadIdx.x; i < p.n; i += blockDim.x) {
      float v = xr_row_load(p, XR_ROWS_ARG_X, x, xo, i) +
                xr_row_load(p, XR_ROWS_ARG_RESIDUAL_IN, residual, io, i);
      const float stored = xr_round_to(ro.dtype, v);
      xr_store_float(residual_out, ro.dtype, so + i * ro.stride, stored);
      if (!p.fp32_sum) v = stored;
      sq += v * v;
    }
    const float rstd = 1.0f / sqrtf(xr_block_sum(sq) / (float)p.n + p.eps);
    const long long oo = xr_row_offset(p, XR_ROWS_ARG_OUT, r);
    for (long long i = threadIdx.x; i < p.n; i += blockDim.x) {
      const float v = p.fp32_sum ? xr_row_load(p, XR_ROWS_ARG_X, x, xo, i) +
                                       xr_row_load(p, XR_ROWS_ARG_RESIDUAL_IN, residual, io, i)
                                 : xr_row_load(p, XR_ROWS_ARG_RESIDUAL_OUT, residual_out, so, i);
      xr_store_float(out, o.dtype, oo + i * o.stride,
                     v * rstd * xr_load_as_float(weight, w.dtype, w.offset + i * w.stride));
    }
  }
}

// ---- rotary embedding ------------------------------------------------------------------------

static __device__ __forceinline__ long long xr_token_offset(const xr_rotary_args_t &p,
                                                            const long *strides,
                                                            long long t) {
  return (t / p.token_shape[1]) * strides[0] + (t % p.token_shape[1]) * strides[1];
}

// Rotates every (head, pair) of one token's heads starting at `base`.
static __device__ void xr_rotate(const xr_rotary_args_t &p, unsigned char *h,
                                 long long base, long long heads, long long head_stride,
                                 long long elem_stride, const unsigned char *cache,
                                 long long cache_row) {
  const long long embed = p.rot_dim / 2;
  for (long long j = threadIdx.x; j < heads * embed; j += blockDim.x) {
    const long long head = j / embed, i = j % embed;
    const float c = xr_load_as_float(cache, p.cache_dtype, cache_row + i * p.cache_elem_stride);
    float s = xr_load_as_float(cache, p.cache_dtype,
                               cache_row + (embed + i) * p.cache_elem_stride);
    if (p.inverse) s = -s;
    const long long at = base + head * head_stride + p.rope_dim_offset * elem_stride;
    const long long xi = at + (p.is_neox ? i : 2 * i) * elem_stride;
    const long long yi = at + (p.is_neox ? embed + i : 2 * i + 1) * elem_stride;
    const float x = xr_load_as_float(h, p.q_dtype, xi), y = xr_load_as_float(h, p.q_dtype, yi);
    xr_store_float(h, p.q_dtype, xi, x * c - y * s);
    xr_store_float(h, p.q_dtype, yi, y * c + x * s);
  }
}

extern "C" __global__ void __launch_bounds__(XR_ROTARY_GPU_THREADS)
    xr_rotary(const unsigned char *positions, unsigned char *query, unsigned char *key,
              const unsigned char *cache, xr_rotary_args_t p) {
  for (long long t = blockIdx.x; t < p.tokens; t += gridDim.x) {
    const long long pi = p.pos_offset + xr_token_offset(p, p.pos_stride, t);
    const long long position = p.pos_is_int64 ? ((const long long *)positions)[pi]
                                              : (long long)((const int *)positions)[pi];
    if (position < 0 || position >= p.max_position) continue;  // no cache row: unchanged
    const long long cache_row = p.cache_offset + position * p.cache_pos_stride;
    xr_rotate(p, query, p.q_offset + xr_token_offset(p, p.q_token_stride, t), p.num_heads,
              p.q_head_stride, p.q_elem_stride, cache, cache_row);
    if (p.num_kv_heads > 0)
      xr_rotate(p, key, p.k_offset + xr_token_offset(p, p.k_token_stride, t), p.num_kv_heads,
                p.k_head_stride, p.k_elem_stride, cache, cache_row);
  }
}
