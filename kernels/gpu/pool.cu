// Pooling and upsampling (kernels/pool.h) on CUDA and HIP, the twin of kernels/opencl/pool.cl
// (one host, kernels/vision_device.c, launches both): one thread per element written in a
// grid-stride loop, summing in fp32; the backward ops gather, for each input cell, the
// grad_output cells whose windows hold it (no atomics, so the result is deterministic).
// Semantics as kernels/pool.c's reference; dtypes are run-time values (f32, f16, bf16).
// Each header uses the ones before it.
// clang-format off
#include "hip_compat.h"
#include "dtype_io.h"
#include "dtype_codes.h"
#include "dtype_dispatch.h"
#include "pool_args.h"
// clang-format on

typedef long long i64;

static __device__ __forceinline__ i64 xr_pool_at(const xr_view5_args_t &v, i64 n, i64 c, i64 d,
                                                 i64 h, i64 w) {
  return v.offset + n * v.strides[0] + c * v.strides[1] + d * v.strides[2] + h * v.strides[3] +
         w * v.strides[4];
}

static __device__ __forceinline__ i64 xr_min64(i64 a, i64 b) {
  return a < b ? a : b;
}
static __device__ __forceinline__ i64 xr_max64(i64 a, i64 b) {
  return a > b ? a : b;
}

// The input cells [win[0], win[1]) x [win[2], win[3]) averaged into output cell (oh, ow), and
// the divisor (pool.c's avg_window).
static __device__ float xr_pool_avg_window(const xr_pool_args_t &a, i64 oh, i64 ow, i64 *win) {
  if (a.kind == XR_POOL_ARGS_ADAPTIVE_AVG || a.kind == XR_POOL_ARGS_ADAPTIVE_AVG_BACKWARD) {
    win[0] = oh * a.in_size[1] / a.out_size[1];
    win[1] = ((oh + 1) * a.in_size[1] + a.out_size[1] - 1) / a.out_size[1];
    win[2] = ow * a.in_size[2] / a.out_size[2];
    win[3] = ((ow + 1) * a.in_size[2] + a.out_size[2] - 1) / a.out_size[2];
    return (float)((win[1] - win[0]) * (win[3] - win[2]));
  }
  const i64 h0 = oh * a.stride[1] - a.pad[1], w0 = ow * a.stride[2] - a.pad[2];
  const i64 h1 = xr_min64(h0 + a.window[1], a.in_size[1] + a.pad[1]);
  const i64 w1 = xr_min64(w0 + a.window[2], a.in_size[2] + a.pad[2]);
  const i64 padded = (h1 - h0) * (w1 - w0);
  win[0] = xr_max64(h0, 0), win[1] = xr_min64(h1, a.in_size[1]);
  win[2] = xr_max64(w0, 0), win[3] = xr_min64(w1, a.in_size[2]);
  const i64 divisor = a.divisor             ? a.divisor
                      : a.count_include_pad ? padded
                                            : (win[1] - win[0]) * (win[3] - win[2]);
  return (float)divisor;
}

static __device__ __forceinline__ i64 xr_pool_nearest(const xr_pool_args_t &a, int d, i64 i) {
  return xr_min64((i64)floorf(__fmul_rn((float)i, a.src_scale[d])), a.in_size[d] - 1);
}

extern "C" __global__ void __launch_bounds__(XR_POOL_THREADS)
    xr_pool_forward(xr_pool_args_t a, const unsigned char *x, unsigned char *y,
                    unsigned char *indices) {
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < a.total;
       e += (i64)gridDim.x * blockDim.x) {
    const i64 ow = e % a.out_size[2];
    i64 t = e / a.out_size[2];
    const i64 oh = t % a.out_size[1];
    t /= a.out_size[1];
    const i64 od = t % a.out_size[0];
    t /= a.out_size[0];
    const i64 c = t % a.planes_c, n = t / a.planes_c;
    float v = 0.0f;
    if (a.kind == XR_POOL_ARGS_MAX) {
      i64 best = -1;
      v = __int_as_float(0xff800000);  // -inf
      for (i64 kh = 0; kh < a.window[1]; kh++) {
        const i64 ih = oh * a.stride[1] - a.pad[1] + kh * a.dilation[1];
        if (ih < 0 || ih >= a.in_size[1]) continue;
        for (i64 kw = 0; kw < a.window[2]; kw++) {
          const i64 iw = ow * a.stride[2] - a.pad[2] + kw * a.dilation[2];
          if (iw < 0 || iw >= a.in_size[2]) continue;
          const float f = xr_load_as_float(x, (int)a.x.dtype, xr_pool_at(a.x, n, c, 0, ih, iw));
          if (best < 0 || f > v || (f != f && v == v)) v = f, best = ih * a.in_size[2] + iw;
        }
      }
      ((long long *)indices)[xr_pool_at(a.indices, n, c, 0, oh, ow)] = best;
    } else if (a.kind == XR_POOL_ARGS_AVG || a.kind == XR_POOL_ARGS_ADAPTIVE_AVG) {
      i64 win[4];
      const float divisor = xr_pool_avg_window(a, oh, ow, win);
      for (i64 ih = win[0]; ih < win[1]; ih++)
        for (i64 iw = win[2]; iw < win[3]; iw++)
          v += xr_load_as_float(x, (int)a.x.dtype, xr_pool_at(a.x, n, c, 0, ih, iw));
      v /= divisor;
    } else if (a.kind == XR_POOL_ARGS_NEAREST) {
      v = xr_load_as_float(x, (int)a.x.dtype,
                           xr_pool_at(a.x, n, c, xr_pool_nearest(a, 0, od),
                                      xr_pool_nearest(a, 1, oh), xr_pool_nearest(a, 2, ow)));
    } else {  // bilinear; __fmul_rn / __fadd_rn: no contraction, the indices round as the host's
      i64 src[2][2];
      float lambda[2];
      const i64 o[2] = {oh, ow};
      for (int k = 0; k < 2; k++) {
        const int d = 1 + k;
        const float scale = a.src_scale[d];
        float f = a.align_corners ? __fmul_rn((float)o[k], scale)
                                  : __fadd_rn(__fmul_rn((float)o[k] + 0.5f, scale), -0.5f);
        f = fmaxf(f, 0.0f);
        const i64 i0 = xr_min64((i64)f, a.in_size[d] - 1);
        src[k][0] = i0;
        src[k][1] = i0 + 1 < a.in_size[d] ? i0 + 1 : i0;
        lambda[k] = f - (float)i0;
      }
      for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
          v += (i ? lambda[0] : 1 - lambda[0]) * (j ? lambda[1] : 1 - lambda[1]) *
               xr_load_as_float(x, (int)a.x.dtype, xr_pool_at(a.x, n, c, 0, src[0][i], src[1][j]));
    }
    xr_store_float(y, (int)a.y.dtype, xr_pool_at(a.y, n, c, od, oh, ow), v);
  }
}

// grad_input[n, c, ih, iw] (x) from grad_output (y).
extern "C" __global__ void __launch_bounds__(XR_POOL_THREADS)
    xr_pool_backward(xr_pool_args_t a, unsigned char *x, const unsigned char *y,
                     const unsigned char *indices) {
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < a.total;
       e += (i64)gridDim.x * blockDim.x) {
    const i64 iw = e % a.in_size[2];
    i64 t = e / a.in_size[2];
    const i64 ih = t % a.in_size[1];
    t /= a.in_size[1];
    const i64 c = t % a.planes_c, n = t / a.planes_c;
    float acc = 0.0f;
    if (a.kind == XR_POOL_ARGS_MAX_BACKWARD) {
      const i64 self = ih * a.in_size[2] + iw;
      for (i64 kh = 0; kh < a.window[1]; kh++) {
        const i64 th = ih + a.pad[1] - kh * a.dilation[1];
        if (th < 0 || th % a.stride[1] || th / a.stride[1] >= a.out_size[1]) continue;
        for (i64 kw = 0; kw < a.window[2]; kw++) {
          const i64 tw = iw + a.pad[2] - kw * a.dilation[2];
          if (tw < 0 || tw % a.stride[2] || tw / a.stride[2] >= a.out_size[2]) continue;
          const i64 oh = th / a.stride[1], ow = tw / a.stride[2];
          if (xr_load_as_long(indices, (int)a.indices.dtype,
                              xr_pool_at(a.indices, n, c, 0, oh, ow)) == self)
            acc += xr_load_as_float(y, (int)a.y.dtype, xr_pool_at(a.y, n, c, 0, oh, ow));
        }
      }
    } else {
      i64 oh0, oh1, ow0, ow1;  // candidate output cells [oh0, oh1) x [ow0, ow1)
      if (a.kind == XR_POOL_ARGS_ADAPTIVE_AVG_BACKWARD) {
        oh0 = ih * a.out_size[1] / a.in_size[1], ow0 = iw * a.out_size[2] / a.in_size[2];
        oh1 = xr_min64(((ih + 1) * a.out_size[1] + a.in_size[1] - 1) / a.in_size[1] + 1,
                       a.out_size[1]);
        ow1 = xr_min64(((iw + 1) * a.out_size[2] + a.in_size[2] - 1) / a.in_size[2] + 1,
                       a.out_size[2]);
      } else {
        const i64 th = ih + a.pad[1] - a.window[1] + 1, tw = iw + a.pad[2] - a.window[2] + 1;
        oh0 = th <= 0 ? 0 : (th + a.stride[1] - 1) / a.stride[1];
        ow0 = tw <= 0 ? 0 : (tw + a.stride[2] - 1) / a.stride[2];
        oh1 = xr_min64((ih + a.pad[1]) / a.stride[1] + 1, a.out_size[1]);
        ow1 = xr_min64((iw + a.pad[2]) / a.stride[2] + 1, a.out_size[2]);
      }
      for (i64 oh = oh0; oh < oh1; oh++)
        for (i64 ow = ow0; ow < ow1; ow++) {
          i64 win[4];
          const float divisor = xr_pool_avg_window(a, oh, ow, win);
          if (ih >= win[0] && ih < win[1] && iw >= win[2] && iw < win[3])
            acc += xr_load_as_float(y, (int)a.y.dtype, xr_pool_at(a.y, n, c, 0, oh, ow)) / divisor;
        }
    }
    xr_store_float(x, (int)a.x.dtype, xr_pool_at(a.x, n, c, 0, ih, iw), acc);
  }
}
