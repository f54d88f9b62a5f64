// Pooling and upsampling (kernels/pool.h), the twin of kernels/gpu/pool.cu (one host,
// kernels/vision_device.c, launches both): one work-item per element written in a grid-stride
// loop, summing in fp32. Forward ops gather their window of the input; the backward ops gather,
// for each input cell, the grad_output cells whose windows hold it (no atomics, so the result
// is deterministic). Semantics as kernels/pool.c's reference.

#pragma OPENCL FP_CONTRACT OFF // the source indices of upsampling round as the host's do

#include "float_io.h"
#include "pool_args.h"

long at(const xr_view5_args_t *v, long n, long c, long d, long h, long w) {
  return v->offset + n * v->strides[0] + c * v->strides[1] + d * v->strides[2] +
         h * v->strides[3] + w * v->strides[4];
}

long ld_index(__global const uchar *base, long dt, long i) {
  return dt == XR_I64 ? ((__global const long *)base)[i] : ((__global const int *)base)[i];
}

long adaptive_start(long i, long in, long out) { return i * in / out; }
long adaptive_end(long i, long in, long out) { return ((i + 1) * in + out - 1) / out; }

// The input cells [win[0], win[1]) x [win[2], win[3]) averaged into output cell (oh, ow), and
// the divisor (pool.c's avg_window).
float avg_window(const xr_pool_args_t *a, long oh, long ow, long *win) {
  if (a->kind == XR_POOL_ARGS_ADAPTIVE_AVG || a->kind == XR_POOL_ARGS_ADAPTIVE_AVG_BACKWARD) {
    win[0] = adaptive_start(oh, a->in_size[1], a->out_size[1]);
    win[1] = adaptive_end(oh, a->in_size[1], a->out_size[1]);
    win[2] = adaptive_start(ow, a->in_size[2], a->out_size[2]);
    win[3] = adaptive_end(ow, a->in_size[2], a->out_size[2]);
    return (float)((win[1] - win[0]) * (win[3] - win[2]));
  }
  long h0 = oh * a->stride[1] - a->pad[1], w0 = ow * a->stride[2] - a->pad[2];
  long h1 = min(h0 + a->window[1], a->in_size[1] + a->pad[1]);
  long w1 = min(w0 + a->window[2], a->in_size[2] + a->pad[2]);
  long padded = (h1 - h0) * (w1 - w0);
  win[0] = max(h0, 0L), win[1] = min(h1, a->in_size[1]);
  win[2] = max(w0, 0L), win[3] = min(w1, a->in_size[2]);
  long divisor = a->divisor             ? a->divisor
                 : a->count_include_pad ? padded
                                        : (win[1] - win[0]) * (win[3] - win[2]);
  return (float)divisor;
}

long nearest_source(const xr_pool_args_t *a, int d, long i) {
  long src = (long)floor((float)i * a->src_scale[d]);
  return min(src, a->in_size[d] - 1);
}

__kernel void xr_pool_forward(const xr_pool_args_t a, __global const uchar *x,
                              __global uchar *y, __global uchar *indices) {
  for (long e = get_global_id(0); e < a.total; e += get_global_size(0)) {
  long ow = e % a.out_size[2], t = e / a.out_size[2];
  long oh = t % a.out_size[1];
  t /= a.out_size[1];
  long od = t % a.out_size[0];
  t /= a.out_size[0];
  long c = t % a.planes_c, n = t / a.planes_c;
  float v = 0.0f;
  if (a.kind == XR_POOL_ARGS_MAX) {
    long best = -1;
    v = -INFINITY;
    for (long kh = 0; kh < a.window[1]; kh++) {
      long ih = oh * a.stride[1] - a.pad[1] + kh * a.dilation[1];
      if (ih < 0 || ih >= a.in_size[1]) continue;
      for (long kw = 0; kw < a.window[2]; kw++) {
        long iw = ow * a.stride[2] - a.pad[2] + kw * a.dilation[2];
        if (iw < 0 || iw >= a.in_size[2]) continue;
        float e = xr_ld(x, a.x.dtype, at(&a.x, n, c, 0, ih, iw));
        if (best < 0 || e > v || (isnan(e) && !isnan(v))) v = e, best = ih * a.in_size[2] + iw;
      }
    }
    ((__global long *)indices)[at(&a.indices, n, c, 0, oh, ow)] = best;
  } else if (a.kind == XR_POOL_ARGS_AVG || a.kind == XR_POOL_ARGS_ADAPTIVE_AVG) {
    long win[4];
    float divisor = avg_window(&a, oh, ow, win);
    for (long ih = win[0]; ih < win[1]; ih++)
      for (long iw = win[2]; iw < win[3]; iw++) v += xr_ld(x, a.x.dtype, at(&a.x, n, c, 0, ih, iw));
    v /= divisor;
  } else if (a.kind == XR_POOL_ARGS_NEAREST) {
    v = xr_ld(x, a.x.dtype,
              at(&a.x, n, c, nearest_source(&a, 0, od), nearest_source(&a, 1, oh),
                 nearest_source(&a, 2, ow)));
  } else { // bilinear
    long src[2][2];
    float lambda[2];
    const long o[2] = {oh, ow};
    for (int k = 0; k < 2; k++) {
      int d = 1 + k;
      float scale = a.src_scale[d];
      float f = a.align_corners ? (float)o[k] * scale : ((float)o[k] + 0.5f) * scale - 0.5f;
      f = max(f, 0.0f);
      long i0 = min((long)f, a.in_size[d] - 1);
      src[k][0] = i0;
      src[k][1] = i0 + 1 < a.in_size[d] ? i0 + 1 : i0;
      lambda[k] = f - (float)i0;
    }
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++)
        v += (i ? lambda[0] : 1 - lambda[0]) * (j ? lambda[1] : 1 - lambda[1]) *
             xr_ld(x, a.x.dtype, at(&a.x, n, c, 0, src[0][i], src[1][j]));
  }
  xr_st(y, a.y.dtype, at(&a.y, n, c, od, oh, ow), v);
  }
}

// grad_input[n, c, ih, iw] (x) from grad_output (y).
__kernel void xr_pool_backward(const xr_pool_args_t a, __global uchar *x,
                               __global const uchar *y, __global const uchar *indices) {
  for (long e = get_global_id(0); e < a.total; e += get_global_size(0)) {
  long iw = e % a.in_size[2], t = e / a.in_size[2];
  long ih = t % a.in_size[1];
  t /= a.in_size[1];
  long c = t % a.planes_c, n = t / a.planes_c;
  float acc = 0.0f;
  if (a.kind == XR_POOL_ARGS_MAX_BACKWARD) {
    long self = ih * a.in_size[2] + iw;
    for (long kh = 0; kh < a.window[1]; kh++) {
      long th = ih + a.pad[1] - kh * a.dilation[1];
      if (th < 0 || th % a.stride[1] || th / a.stride[1] >= a.out_size[1]) continue;
      for (long kw = 0; kw < a.window[2]; kw++) {
        long tw = iw + a.pad[2] - kw * a.dilation[2];
        if (tw < 0 || tw % a.stride[2] || tw / a.stride[2] >= a.out_size[2]) continue;
        long oh = th / a.stride[1], ow = tw / a.stride[2];
        if (ld_index(indices, a.indices.dtype, at(&a.indices, n, c, 0, oh, ow)) == self)
          acc += xr_ld(y, a.y.dtype, at(&a.y, n, c, 0, oh, ow));
      }
    }
  } else {
    long oh0, oh1, ow0, ow1; // candidate output cells [oh0, oh1) x [ow0, ow1)
    if (a.kind == XR_POOL_ARGS_ADAPTIVE_AVG_BACKWARD) {
      oh0 = ih * a.out_size[1] / a.in_size[1], ow0 = iw * a.out_size[2] / a.in_size[2];
      oh1 = min(((ih + 1) * a.out_size[1] + a.in_size[1] - 1) / a.in_size[1] + 1, a.out_size[1]);
      ow1 = min(((iw + 1) * a.out_size[2] + a.in_size[2] - 1) / a.in_size[2] + 1, a.out_size[2]);
    } else {
      long th = ih + a.pad[1] - a.window[1] + 1, tw = iw + a.pad[2] - a.window[2] + 1;
      oh0 = th <= 0 ? 0 : (th + a.stride[1] - 1) / a.stride[1];
      ow0 = tw <= 0 ? 0 : (tw + a.stride[2] - 1) / a.stride[2];
      oh1 = min((ih + a.pad[1]) / a.stride[1] + 1, a.out_size[1]);
      ow1 = min((iw + a.pad[2]) / a.stride[2] + 1, a.out_size[2]);
    }
    for (long oh = oh0; oh < oh1; oh++)
      for (long ow = ow0; ow < ow1; ow++) {
        long win[4];
        float divisor = avg_window(&a, oh, ow, win);
        if (ih >= win[0] && ih < win[1] && iw >= win[2] && iw < win[3])
          acc += xr_ld(y, a.y.dtype, at(&a.y, n, c, 0, oh, ow)) / divisor;
      }
  }
  xr_st(x, a.x.dtype, at(&a.x, n, c, 0, ih, iw), acc);
  }
}
