// vLLM's fp8 quantization ops (kernels/quant.h; host side: kernels/quant_device.c), bit-exact with
// ref.quant. One work-group of WG work-items per item: a (row, segment of SEGMENT columns) of the
// static and dynamic ops, a whole row of the per-token op (its scale needs the row's max|x|).
//   xr_quant_absmax  dynamic, pass 1: each item's max|x| into partial[item]
//   xr_quant_reduce  dynamic, pass 2: one work-group: scale[0] = max(partial) / M
//   xr_quant_rows       static, dynamic: x * (1 / scale), clamped to +-M, to e4m3
//   xr_quant_per_token  per token: each row's own reduction, which writes scale[t], then
//                       x / s_t, clamped and rounded the same way
// Input dtypes are run-time values (uniform across a launch); the build option
// -cl-fp32-correctly-rounded-divide-sqrt makes the divisions IEEE's, as CUDA's are. Arguments:
// the block of kernels/quant_args.h.

#include "dtype_codes.h"
#include "float_formats_cl.h"
#include "quant_args.h"

#define WG XR_QUANT_OPENCL_THREADS
#define SEGMENT XR_QUANT_OPENCL_SEGMENT

inline float load_in(const __global uchar *in, long dtype, long i) {
  if (dtype == XR_F32) return ((const __global float *)in)[i];
  if (dtype == XR_F16) return vload_half(i, (const __global half *)in);
  return xr_bf16_to_f32(((const __global ushort *)in)[i]);
}

// fp8(clamp(x, -M, M)) in e4m3fn or e4m3fnuz (base/float_formats.h), nearest even; a NaN is +M.
inline uchar encode(float x, float m, const xr_fp8_format_t *f) {
  x = isnan(x) ? m : x;
  x = x > m ? m : x;
  x = x < -m ? -m : x;
  return xr_fp8_encode(x, f);
}

// The work-group's max of v (>= 0, no NaN), returned to every work-item.
inline float group_max(float v, __local float *red) {
  const int lid = get_local_id(0);
  red[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s /= 2) {
    if (lid < s) red[lid] = fmax(red[lid], red[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  float m = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);  // red is reused by the caller's next reduction
  return m;
}

// max|x| over columns [c0, c1) of row r, this work-item's share (NaN ignored: fmax's rule).
inline float share_absmax(const __global uchar *in, const xr_quant_args_t g, long r, long c0, long c1) {
  float m = 0.0f;
  for (long c = c0 + get_local_id(0); c < c1; c += WG) m = fmax(m, fabs(load_in(in, g.in_dtype, g.in_off + r * g.in_rs + c)));
  return m;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void xr_quant_absmax(
    __global float *partial, __global const uchar *in, const xr_quant_args_t g) {
  __local float red[WG];
  for (long item = get_group_id(0); item < g.items; item += get_num_groups(0)) {
    const long r = item / g.segments, c0 = (item % g.segments) * SEGMENT;
    const float m = group_max(share_absmax(in, g, r, c0, min(c0 + SEGMENT, g.hidden)), red);
    if (get_local_id(0) == 0) partial[item] = m;
  }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void xr_quant_reduce(
    __global float *scale, __global const float *partial, const xr_quant_args_t g) {
  __local float red[WG];
  float m = 0.0f;
  for (long i = get_local_id(0); i < g.items; i += WG) m = fmax(m, partial[i]);
  m = group_max(m, red);
  if (get_local_id(0) == 0) scale[g.scale_off] = m / g.fp8_max;
}

// The static and dynamic ops: segment `item` of a row, scaled by the row's (or group's) scale.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void xr_quant_rows(
    __global uchar *out, __global const uchar *in, __global float *scale, __global const float *ub,
    const xr_quant_args_t g) {
  const float m = g.fp8_max;
  const xr_fp8_format_t f = xr_fp8_format_of(3, g.out_dtype == XR_F8E4M3FNUZ);
  const long lid = get_local_id(0);
  for (long item = get_group_id(0); item < g.items; item += get_num_groups(0)) {
    const long r = item / g.segments, c0 = (item % g.segments) * SEGMENT;
    const long c1 = min(c0 + SEGMENT, g.hidden);
    __global uchar *dst = out + g.out_off + r * g.out_rs;
    const long base = g.in_off + r * g.in_rs;
    const __global float *row_scale = scale + g.scale_off + (r / g.group_m) * g.scale_si;
    const float inv = 1.0f / row_scale[0];
    for (long c = c0 + lid; c < c1; c += WG) {
      const float k = g.grouped ? 1.0f / row_scale[(c / g.group_n) * g.scale_sj] : inv;
      dst[c] = encode(load_in(in, g.in_dtype, base + c) * k, m, &f);
    }
  }
}

// The per-token op: row `item`'s max|x| (bounded by scale_ub), its scale, then the row. A kernel
// of its own, so that its barriers are in no branch (PoCL gave a row another row's scale about
// once in 30 runs when they were).
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void xr_quant_per_token(
    __global uchar *out, __global const uchar *in, __global float *scale, __global const float *ub,
    const xr_quant_args_t g) {
  __local float red[WG];
  const float m = g.fp8_max;
  const xr_fp8_format_t f = xr_fp8_format_of(3, g.out_dtype == XR_F8E4M3FNUZ);
  const long lid = get_local_id(0);
  for (long r = get_group_id(0); r < g.items; r += get_num_groups(0)) {
    __global uchar *dst = out + g.out_off + r * g.out_rs;
    const long base = g.in_off + r * g.in_rs;
    float amax = group_max(share_absmax(in, g, r, 0, g.hidden), red);
    if (g.has_ub) amax = fmin(amax, ub[g.ub_off]);
    const float ts = fmax(amax / m, g.min_scale);
    if (lid == 0) scale[g.scale_off + r * g.scale_si] = ts;
    for (long c = lid; c < g.hidden; c += WG) dst[c] = encode(load_in(in, g.in_dtype, base + c) / ts, m, &f);
  }
}
