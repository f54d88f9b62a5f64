// Softmax, layer norm, RMS norm and fused add + RMS norm: one work-group per row, each
// work-item striding over the row, partial results combined in local memory. Arithmetic in
// fp32; fp16 through vload_half/vstore_half_rte, bf16 as ushort bits (round to nearest even,
// base/float_formats.h). Semantics: kernels/norm.h (xr_rows_problem_t); arguments: the block of
// kernels/norm_args.h, filled by kernels/norm_device.c.

#include "float_formats_cl.h"
#include "norm_args.h"

#define WG XR_ROWS_OPENCL_THREADS

// norm_args.h's operand slots, by short names.
enum {
  V_X = XR_ROWS_ARG_X,
  V_OUT = XR_ROWS_ARG_OUT,
  V_RESIDUAL_IN = XR_ROWS_ARG_RESIDUAL_IN,
  V_RESIDUAL_OUT = XR_ROWS_ARG_RESIDUAL_OUT,
  V_WEIGHT = XR_ROWS_ARG_WEIGHT,
  V_BIAS = XR_ROWS_ARG_BIAS,
  V_MEAN = XR_ROWS_ARG_MEAN,
  V_RSTD = XR_ROWS_ARG_RSTD,
};

float ld(__global const uchar *base, long dt, long i) {
  if (dt == XR_F32) return ((__global const float *)base)[i];
  if (dt == XR_F16) return vload_half(i, (__global const half *)base);
  return xr_bf16_to_f32(((__global const ushort *)base)[i]);
}

void st(__global uchar *base, long dt, long i, float v) {
  if (dt == XR_F32) ((__global float *)base)[i] = v;
  else if (dt == XR_F16) vstore_half_rte(v, i, (__global half *)base);
  else ((__global ushort *)base)[i] = xr_f32_to_bf16(v);
}

// v rounded to dt and widened back.
float round_to(long dt, float v) {
  if (dt == XR_BF16) return xr_bf16_to_f32(xr_f32_to_bf16(v));
  if (dt == XR_F16) {
    ushort h;
    vstore_half_rte(v, 0, (__private half *)&h);
    return vload_half(0, (__private const half *)&h);
  }
  return v;
}

long row_offset(const xr_rows_args_t *a, int k, long r) {
  long off = a->v[k].offset;
  for (int d = (int)a->outer_rank - 1; d >= 0; d--) {
    off += (r % a->shape[d]) * a->v[k].outer[d];
    r /= a->shape[d];
  }
  return off;
}

float wg_sum(__local float *tmp, float v) {
  int lid = get_local_id(0);
  tmp[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) tmp[lid] += tmp[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float total = tmp[0];
  barrier(CLK_LOCAL_MEM_FENCE); // tmp is reused by the next reduction
  return total;
}

float wg_max(__local float *tmp, float v) {
  int lid = get_local_id(0);
  tmp[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {
    if (lid < s) tmp[lid] = fmax(tmp[lid], tmp[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float m = tmp[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return m;
}

// Every kernel takes the same arguments (the host picks one by op); absent tensors are bound to
// some valid buffer and flagged not present. Barriers stay in straight-line code: PoCL turns
// the regions between them into loops over the work-items.
#define XR_ROWS_ARGS                                                                          \
  __global uchar *x, __global uchar *out, __global uchar *res, __global uchar *res_out,       \
      __global const uchar *w, __global const uchar *b, __global uchar *mean_out,             \
      __global uchar *rstd_out, xr_rows_args_t a

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void xr_softmax(XR_ROWS_ARGS) {
  __local float tmp[WG];
  const long r = get_group_id(0), n = a.n;
  const int lid = get_local_id(0);
  const long xo = row_offset(&a, V_X, r), xs = a.v[V_X].stride, xdt = a.v[V_X].dtype;
  const long oo = row_offset(&a, V_OUT, r), os = a.v[V_OUT].stride, odt = a.v[V_OUT].dtype;
  float m = -INFINITY;
  for (long i = lid; i < n; i += WG) {
    float v = ld(x, xdt, xo + i * xs);
    if (a.cast_dtype) v = round_to(a.cast_dtype, v);
    m = fmax(m, v);
  }
  m = wg_max(tmp, m);
  float s = 0.0f;
  for (long i = lid; i < n; i += WG) {
    float v = ld(x, xdt, xo + i * xs);
    if (a.cast_dtype) v = round_to(a.cast_dtype, v);
    s += exp(v - m);
  }
  const float inv = 1.0f / wg_sum(tmp, s);
  for (long i = lid; i < n; i += WG) {
    float v = ld(x, xdt, xo + i * xs);
    if (a.cast_dtype) v = round_to(a.cast_dtype, v);
    st(out, odt, oo + i * os, exp(v - m) * inv);
  }
}

// out = (src - mean) * rstd * weight + bias for one row, and the statistics.
void finish_row(const xr_rows_args_t *a, long r, __global const uchar *src, long so, long ss,
                long sdt, float mean, float rstd, __global uchar *out, __global const uchar *w,
                __global const uchar *b, __global uchar *mean_out, __global uchar *rstd_out) {
  const int lid = get_local_id(0);
  const long oo = row_offset(a, V_OUT, r), os = a->v[V_OUT].stride, odt = a->v[V_OUT].dtype;
  const long wo = a->v[V_WEIGHT].offset, ws = a->v[V_WEIGHT].stride, wdt = a->v[V_WEIGHT].dtype;
  const long bo = a->v[V_BIAS].offset, bs = a->v[V_BIAS].stride, bdt = a->v[V_BIAS].dtype;
  for (long i = lid; i < a->n; i += WG) {
    float v = (ld(src, sdt, so + i * ss) - mean) * rstd;
    if (a->v[V_WEIGHT].present) v *= ld(w, wdt, wo + i * ws);
    if (a->v[V_BIAS].present) v += ld(b, bdt, bo + i * bs);
    st(out, odt, oo + i * os, v);
  }
  if (lid == 0 && a->v[V_MEAN].present) {
    ((__global float *)mean_out)[row_offset(a, V_MEAN, r)] = mean;
    ((__global float *)rstd_out)[row_offset(a, V_RSTD, r)] = rstd;
  }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void xr_layer_norm(XR_ROWS_ARGS) {
  __local float tmp[WG];
  const long r = get_group_id(0), n = a.n;
  const int lid = get_local_id(0);
  const long xo = row_offset(&a, V_X, r), xs = a.v[V_X].stride, xdt = a.v[V_X].dtype;
  float s = 0.0f;
  for (long i = lid; i < n; i += WG) s += ld(x, xdt, xo + i * xs);
  const float mean = wg_sum(tmp, s) / (float)n;
  float sq = 0.0f;
  for (long i = lid; i < n; i += WG) {
    float d = ld(x, xdt, xo + i * xs) - mean;
    sq += d * d;
  }
  const float rstd = 1.0f / sqrt(wg_sum(tmp, sq) / (float)n + a.eps);
  finish_row(&a, r, x, xo, xs, xdt, mean, rstd, out, w, b, mean_out, rstd_out);
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void xr_rms_norm(XR_ROWS_ARGS) {
  __local float tmp[WG];
  const long r = get_group_id(0), n = a.n;
  const int lid = get_local_id(0);
  const long xo = row_offset(&a, V_X, r), xs = a.v[V_X].stride, xdt = a.v[V_X].dtype;
  float sq = 0.0f;
  for (long i = lid; i < n; i += WG) {
    float v = ld(x, xdt, xo + i * xs);
    sq += v * v;
  }
  const float rstd = 1.0f / sqrt(wg_sum(tmp, sq) / (float)n + a.eps);
  finish_row(&a, r, x, xo, xs, xdt, 0.0f, rstd, out, w, b, mean_out, rstd_out);
}

// residual_out = round(x + residual_in), then out = rms_norm of the sum: as stored (in place:
// residual_out is residual_in and out is x; each work-item reads back only the elements it
// stored itself) or, with fp32_sum, the fp32 sum recomputed from x and residual_in (distinct
// tensors then).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void xr_add_rms_norm(XR_ROWS_ARGS) {
  __local float tmp[WG];
  const long r = get_group_id(0), n = a.n;
  const int lid = get_local_id(0);
  const long xo = row_offset(&a, V_X, r), xs = a.v[V_X].stride, xdt = a.v[V_X].dtype;
  const long ro = row_offset(&a, V_RESIDUAL_IN, r), rs = a.v[V_RESIDUAL_IN].stride;
  const long rdt = a.v[V_RESIDUAL_IN].dtype;
  const long so = row_offset(&a, V_RESIDUAL_OUT, r), ss = a.v[V_RESIDUAL_OUT].stride;
  const long sdt = a.v[V_RESIDUAL_OUT].dtype;
  float sq = 0.0f;
  for (long i = lid; i < n; i += WG) {
    float v = ld(x, xdt, xo + i * xs) + ld(res, rdt, ro + i * rs);
    float stored = round_to(sdt, v);
    st(res_out, sdt, so + i * ss, stored);
    if (!a.fp32_sum) v = stored;
    sq += v * v;
  }
  const float rstd = 1.0f / sqrt(wg_sum(tmp, sq) / (float)n + a.eps);
  const long oo = row_offset(&a, V_OUT, r), os = a.v[V_OUT].stride, odt = a.v[V_OUT].dtype;
  const long wo = a.v[V_WEIGHT].offset, ws = a.v[V_WEIGHT].stride, wdt = a.v[V_WEIGHT].dtype;
  for (long i = lid; i < n; i += WG) {
    float v = a.fp32_sum ? ld(x, xdt, xo + i * xs) + ld(res, rdt, ro + i * rs)
                         : ld(res_out, sdt, so + i * ss);
    st(out, odt, oo + i * os, v * rstd * ld(w, wdt, wo + i * ws));
  }
}
