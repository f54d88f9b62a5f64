// The reduce family (kernels/reduce.h: geometry and semantics) on OpenCL devices, f32, f16 and
// bf16 inputs computed in float, every output rounded once; the twin of kernels/gpu/reduce.cu,
// with the same kernels and arguments (kernels/reduce_args.h), launched by
// kernels/reduce_device.c.
//  - xr_reduce_groups: one work-group per output (reduced extents of XR_REDUCE_DEV_GROUP_MIN and
//    more): each work-item folds a strided share of the elements into a state, the states merge
//    through a tree in local memory; var/std and logsumexp take a second pass with the first
//    one's mean or maximum. Extremes carry their position and merge by (value, position), NaN
//    first, so the first extreme wins whatever the tree's order.
//  - xr_reduce_items: one work-item per output (short extents), both passes in order.
//  - xr_reduce_scan: one work-group per row, in chunks of the work-group's width: a local
//    Hillis-Steele scan plus the carry of the chunks before; xr_reduce_scan_int the same in
//    64-bit integers for integer and bool inputs.
//  - xr_reduce_int: integer and bool reductions in 64-bit integers, a work-group per output.
//  - xr_reduce_sort: one work-group per row; (ordered float bits << 32 | position) keys
//    bitonic-sorted in local memory, which is a stable sort (NaN last, -0 equal to 0, descending
//    inverts the bits only). Rows longer than XR_SORT_MAX take topk's path when
//    k <= XR_REDUCE_DEV_TOPK_MAX: each work-item keeps its k best keys, and the work-group's
//    candidates are sorted together. xr_reduce_sort_int: the same for integer and bool inputs,
//    with (ordered 64-bit value, position) pairs in two local arrays.
// Integer and bool inputs with a float dtype= (sum, mean, logsumexp, scans ...) are loaded as
// floats and take the float kernels.
// Barriers stay in code every work-item of the group reaches (loops with uniform trip counts).
#include "dtype_codes.h"
#include "float_formats_cl.h"
#include "reduce_args.h"

#define XR_WG XR_REDUCE_OPENCL_THREADS
#define XR_SORT_MAX XR_REDUCE_OPENCL_SORT_MAX

// ---- elements ---------------------------------------------------------------------------------

// Element i of an integer or bool array as a long, and the low bytes of v stored
// in an integer dtype (or v != 0 as a bool).
long ld_long(__global const uchar *b, long dt, long i) {
  if (dt == XR_I64 || dt == XR_U64) return ((__global const long *)b)[i];
  if (dt == XR_I32) return ((__global const int *)b)[i];
  if (dt == XR_U32) return ((__global const uint *)b)[i];
  if (dt == XR_I16) return ((__global const short *)b)[i];
  if (dt == XR_U16) return ((__global const ushort *)b)[i];
  if (dt == XR_I8) return ((__global const char *)b)[i];
  if (dt == XR_BOOL) return b[i] != 0;
  return b[i];
}

void st_long(__global uchar *b, long dt, long i, long v) {
  if (dt == XR_I64 || dt == XR_U64) ((__global long *)b)[i] = v;
  else if (dt == XR_I32 || dt == XR_U32) ((__global uint *)b)[i] = (uint)v;
  else if (dt == XR_I16 || dt == XR_U16) ((__global ushort *)b)[i] = (ushort)v;
  else if (dt == XR_BOOL) b[i] = v != 0;
  else b[i] = (uchar)v;
}

// An integer converted to integer dtype dt before a sum (wrapping, as torch's cast); 0: none.
long wrap_to(long dt, long v) {
  if (dt == XR_I8) return (long)(char)v;
  if (dt == XR_I16) return (long)(short)v;
  if (dt == XR_I32) return (long)(int)v;
  if (dt == XR_U8) return (long)(uchar)v;
  if (dt == XR_BOOL) return v != 0;
  return v;
}

// Element i as a float: integer and bool elements (all / any's truth values, sums with a
// float dtype=) converted, rounding to nearest as the reference's cast does.
float ld(__global const uchar *b, long dt, long i) {
  if (dt == XR_F32) return ((__global const float *)b)[i];
  if (dt == XR_F16) return vload_half(i, (__global const half *)b);
  if (dt == XR_BF16) return xr_bf16_to_f32(((__global const ushort *)b)[i]);
  return (float)ld_long(b, dt, i);
}

float round_to(long dt, float v) {
  if (dt == XR_BF16) return xr_bf16_to_f32(xr_f32_to_bf16(v));
  if (dt == XR_F16) {
    ushort h;
    vstore_half_rte(v, 0, (__private half *)&h);
    return vload_half(0, (__private const half *)&h);
  }
  return v;
}

// Element i as the op sees it: widened, then rounded to dtype='s type when narrower.
float ld_cast(const xr_reduce_dev_args_t *a, __global const uchar *b, long i) {
  float v = ld(b, a->in_dtype, i);
  return a->round_dtype ? round_to(a->round_dtype, v) : v;
}

void st_float(__global uchar *b, long dt, long i, float v) {
  if (dt == XR_F32) ((__global float *)b)[i] = v;
  else if (dt == XR_F16) vstore_half_rte(v, i, (__global half *)b);
  else if (dt == XR_BF16) ((__global ushort *)b)[i] = xr_f32_to_bf16(v);
  else if (dt == XR_BOOL) b[i] = v != 0.0f;
  else if (dt == XR_I64) ((__global long *)b)[i] = (long)v;
}

long outer_off(const xr_reduce_dev_args_t *a, const long *strides, long o) {
  long off = 0;
  for (int d = (int)a->outer_rank - 1; d >= 0; d--) {
    off += (o % a->outer_shape[d]) * strides[d];
    o /= a->outer_shape[d];
  }
  return off;
}

long red_off(const xr_reduce_dev_args_t *a, long k) {
  long off = 0;
  for (int d = (int)a->red_rank - 1; d >= 0; d--) {
    off += (k % a->red_shape[d]) * a->in_red[d];
    k /= a->red_shape[d];
  }
  return off;
}

// ---- states -----------------------------------------------------------------------------------

#define F_NAN 1
#define F_POSINF 2
#define F_SEEN 4

typedef struct {
  float a;   // sum, product, squared deviations, exp-sum, norm's sum
  float m;   // extreme; logsumexp: the finite maximum
  long n;    // nonzeros
  long at;   // the extreme's position
  int flags;
} state;

bool is_extreme(const xr_reduce_dev_args_t *a) {
  return a->op == XR_REDUCE_DEV_MAX || a->op == XR_REDUCE_DEV_MIN ||
         (a->op == XR_REDUCE_DEV_NORM &&
          (a->norm == XR_REDUCE_DEV_NORM_INF || a->norm == XR_REDUCE_DEV_NORM_NEG_INF));
}

bool wants_max(const xr_reduce_dev_args_t *a) {
  return a->op == XR_REDUCE_DEV_MAX ||
         (a->op == XR_REDUCE_DEV_NORM && a->norm == XR_REDUCE_DEV_NORM_INF);
}

state init_state(const xr_reduce_dev_args_t *a, int pass) {
  state s;
  s.a = a->op == XR_REDUCE_DEV_PROD && pass == 0 ? 1.0f : 0.0f;
  s.m = wants_max(a) || a->op == XR_REDUCE_DEV_LSE ? -INFINITY : INFINITY;
  s.n = 0;
  s.at = 0;
  s.flags = 0;
  return s;
}

// Folds element v at position k in. Pass 1 of var/std sums deviations from `shift` (the mean),
// pass 1 of logsumexp sums exp(v - shift) over the finite v.
void add(const xr_reduce_dev_args_t *a, state *s, float v, long k, int pass, float shift) {
  const long op = a->op;
  if (pass == 1) {
    if (op == XR_REDUCE_DEV_LSE) {
      if (fabs(v) < INFINITY) s->a += exp(v - shift);
    } else {
      float d = v - shift;
      s->a += d * d;
    }
    return;
  }
  if (is_extreme(a)) {
    float x = op == XR_REDUCE_DEV_NORM ? fabs(v) : v;
    if (s->flags & F_NAN) return;
    bool max = wants_max(a);
    if (!(s->flags & F_SEEN) || isnan(x) || (max ? x > s->m : x < s->m)) {
      s->m = x, s->at = k;
      s->flags = F_SEEN | (isnan(x) ? F_NAN : 0);
    }
    return;
  }
  switch (op) {
    case XR_REDUCE_DEV_NANSUM: s->a += isnan(v) ? 0.0f : v; break;
    case XR_REDUCE_DEV_PROD: s->a *= v; break;
    case XR_REDUCE_DEV_ALL:
    case XR_REDUCE_DEV_ANY:
    case XR_REDUCE_DEV_COUNT: s->n += v != 0.0f; break;
    case XR_REDUCE_DEV_LSE:
      if (isnan(v)) s->flags |= F_NAN;
      else if (v == INFINITY) s->flags |= F_POSINF;
      else if (v > -INFINITY) {
        s->flags |= F_SEEN;
        s->m = fmax(s->m, v);
      }
      break;
    case XR_REDUCE_DEV_NORM:
      if (a->norm == XR_REDUCE_DEV_NORM_0) s->n += v != 0.0f;
      else if (a->norm == XR_REDUCE_DEV_NORM_1) s->a += fabs(v);
      else if (a->norm == XR_REDUCE_DEV_NORM_2) s->a += v * v;
      else s->a += pow(fabs(v), a->p);
      break;
    default: s->a += v; break; // sum, mean, var/std's first pass
  }
}

// b into s, in either order.
void merge(const xr_reduce_dev_args_t *a, state *s, const state *b, int pass) {
  if (pass == 0 && is_extreme(a)) {
    if (!(b->flags & F_SEEN)) return;
    bool take;
    if (!(s->flags & F_SEEN)) take = true;
    else if ((s->flags & F_NAN) || (b->flags & F_NAN))
      take = (b->flags & F_NAN) && (!(s->flags & F_NAN) || b->at < s->at);
    else if (b->m == s->m) take = b->at < s->at;
    else take = wants_max(a) ? b->m > s->m : b->m < s->m;
    if (take) *s = *b;
    return;
  }
  if (pass == 0 && a->op == XR_REDUCE_DEV_LSE) {
    s->flags |= b->flags;
    s->m = fmax(s->m, b->m);
    return;
  }
  if (pass == 0 && a->op == XR_REDUCE_DEV_PROD) s->a *= b->a;
  else s->a += b->a;
  s->n += b->n;
}

// The work-group's merged state, for every work-item.
state group_merge(const xr_reduce_dev_args_t *a, state s, int pass, __local float *la,
                  __local float *lm, __local long *ln, __local long *lat, __local int *lf) {
  const int lid = get_local_id(0);
  la[lid] = s.a, lm[lid] = s.m, ln[lid] = s.n, lat[lid] = s.at, lf[lid] = s.flags;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = XR_WG / 2; w > 0; w >>= 1) {
    if (lid < w) {
      state x = {la[lid], lm[lid], ln[lid], lat[lid], lf[lid]};
      state y = {la[lid + w], lm[lid + w], ln[lid + w], lat[lid + w], lf[lid + w]};
      merge(a, &x, &y, pass);
      la[lid] = x.a, lm[lid] = x.m, ln[lid] = x.n, lat[lid] = x.at, lf[lid] = x.flags;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  state r = {la[0], lm[0], ln[0], lat[0], lf[0]};
  barrier(CLK_LOCAL_MEM_FENCE); // the arrays are reused
  return r;
}

bool two_pass(const xr_reduce_dev_args_t *a) {
  return a->op == XR_REDUCE_DEV_VAR || a->op == XR_REDUCE_DEV_STD || a->op == XR_REDUCE_DEV_LSE;
}

// The second pass's shift: the mean (var/std) or the finite maximum (logsumexp).
float shift_of(const xr_reduce_dev_args_t *a, const state *s) {
  return a->op == XR_REDUCE_DEV_LSE ? s->m : s->a / (float)a->red_numel;
}

void finish(const xr_reduce_dev_args_t *a, const state *s, const state *s2, long o,
            __global uchar *out0, __global uchar *out1) {
  const float n = (float)a->red_numel;
  float v = s->a;
  long index = -1;
  switch (a->op) {
    case XR_REDUCE_DEV_MEAN: v = s->a / n; break;
    case XR_REDUCE_DEV_MAX:
    case XR_REDUCE_DEV_MIN: v = (s->flags & F_NAN) ? NAN : s->m, index = s->at; break;
    case XR_REDUCE_DEV_ALL: v = (float)(s->n == a->red_numel); break;
    case XR_REDUCE_DEV_ANY: v = (float)(s->n > 0); break;
    case XR_REDUCE_DEV_LSE:
      v = (s->flags & F_NAN) ? NAN : (s->flags & F_POSINF) ? INFINITY
          : !(s->flags & F_SEEN) ? -INFINITY : log(s2->a) + s->m;
      break;
    case XR_REDUCE_DEV_VAR:
    case XR_REDUCE_DEV_STD: {
      float divisor = fmax(n - a->correction, 0.0f);
      v = s2->a / divisor;
      if (a->op == XR_REDUCE_DEV_STD) v = sqrt(v);
      if (a->has_out[1])
        st_float(out1, a->out_dtype[1], a->out_offset[1] + outer_off(a, a->out_outer[1], o),
                 s->a / n);
      break;
    }
    case XR_REDUCE_DEV_NORM:
      if (a->norm == XR_REDUCE_DEV_NORM_INF || a->norm == XR_REDUCE_DEV_NORM_NEG_INF)
        v = (s->flags & F_NAN) ? NAN : s->m;
      else if (a->norm == XR_REDUCE_DEV_NORM_0) v = (float)s->n;
      else if (a->norm == XR_REDUCE_DEV_NORM_2) v = sqrt(s->a);
      else if (a->norm == XR_REDUCE_DEV_NORM_P) v = pow(s->a, 1.0f / a->p);
      break;
    default: break;
  }
  if (a->has_out[0]) {
    long at = a->out_offset[0] + outer_off(a, a->out_outer[0], o);
    if (a->op == XR_REDUCE_DEV_COUNT) ((__global long *)out0)[at] = s->n;
    else st_float(out0, a->out_dtype[0], at, v);
  }
  if (a->has_out[1] && index >= 0)
    ((__global long *)out1)[a->out_offset[1] + outer_off(a, a->out_outer[1], o)] = index;
}

#define XR_ARGS \
  __global const uchar *in, __global uchar *out0, __global uchar *out1, xr_reduce_dev_args_t a

__kernel __attribute__((reqd_work_group_size(XR_WG, 1, 1))) void xr_reduce_groups(XR_ARGS) {
  __local float la[XR_WG], lm[XR_WG];
  __local long ln[XR_WG], lat[XR_WG];
  __local int lf[XR_WG];
  const long lid = get_local_id(0);
  for (long o = get_group_id(0); o < a.outer_numel; o += get_num_groups(0)) {
    const long base = a.in_offset + outer_off(&a, a.in_outer, o);
    state s = init_state(&a, 0), s2 = init_state(&a, 1);
    for (long k = lid; k < a.red_numel; k += XR_WG)
      add(&a, &s, ld_cast(&a, in, base + red_off(&a, k)), k, 0, 0.0f);
    s = group_merge(&a, s, 0, la, lm, ln, lat, lf);
    if (two_pass(&a)) {
      const float shift = shift_of(&a, &s);
      for (long k = lid; k < a.red_numel; k += XR_WG)
        add(&a, &s2, ld_cast(&a, in, base + red_off(&a, k)), k, 1, shift);
      s2 = group_merge(&a, s2, 1, la, lm, ln, lat, lf);
    }
    if (lid == 0) finish(&a, &s, &s2, o, out0, out1);
  }
}

__kernel void xr_reduce_items(XR_ARGS) {
  for (long o = get_global_id(0); o < a.outer_numel; o += get_global_size(0)) {
    const long base = a.in_offset + outer_off(&a, a.in_outer, o);
    state s = init_state(&a, 0), s2 = init_state(&a, 1);
    for (long k = 0; k < a.red_numel; k++)
      add(&a, &s, ld_cast(&a, in, base + red_off(&a, k)), k, 0, 0.0f);
    if (two_pass(&a)) {
      const float shift = shift_of(&a, &s);
      for (long k = 0; k < a.red_numel; k++)
        add(&a, &s2, ld_cast(&a, in, base + red_off(&a, k)), k, 1, shift);
    }
    finish(&a, &s, &s2, o, out0, out1);
  }
}

// ---- scans ------------------------------------------------------------------------------------

__kernel __attribute__((reqd_work_group_size(XR_WG, 1, 1))) void xr_reduce_scan(XR_ARGS) {
  __local float tmp[XR_WG];
  const int lid = get_local_id(0);
  const bool prod = a.op == XR_REDUCE_DEV_CUMPROD;
  const float identity = prod ? 1.0f : 0.0f;
  const long n = a.red_shape[0], is = a.in_red[0], os = a.out_dim_stride[0];
  for (long o = get_group_id(0); o < a.outer_numel; o += get_num_groups(0)) {
    const long base = a.in_offset + outer_off(&a, a.in_outer, o);
    const long at = a.out_offset[0] + outer_off(&a, a.out_outer[0], o);
    float carry = identity;
    for (long j0 = 0; j0 < n; j0 += XR_WG) {
      const long j = j0 + lid;
      tmp[lid] = j < n ? ld_cast(&a, in, base + j * is) : identity;
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int w = 1; w < XR_WG; w <<= 1) {
        float t = lid >= w ? tmp[lid - w] : identity;
        barrier(CLK_LOCAL_MEM_FENCE);
        tmp[lid] = prod ? tmp[lid] * t : tmp[lid] + t;
        barrier(CLK_LOCAL_MEM_FENCE);
      }
      if (j < n)
        st_float(out0, a.out_dtype[0], at + j * os, prod ? carry * tmp[lid] : carry + tmp[lid]);
      carry = prod ? carry * tmp[XR_WG - 1] : carry + tmp[XR_WG - 1];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
}

// cumsum / cumprod of integer tensors: xr_reduce_scan in 64-bit integers, wrapping as the
// reference.
__kernel __attribute__((reqd_work_group_size(XR_WG, 1, 1))) void xr_reduce_scan_int(XR_ARGS) {
  __local long tmp[XR_WG];
  const int lid = get_local_id(0);
  const bool prod = a.op == XR_REDUCE_DEV_CUMPROD;
  const long identity = prod ? 1 : 0;
  const long n = a.red_shape[0], is = a.in_red[0], os = a.out_dim_stride[0];
  for (long o = get_group_id(0); o < a.outer_numel; o += get_num_groups(0)) {
    const long base = a.in_offset + outer_off(&a, a.in_outer, o);
    const long at = a.out_offset[0] + outer_off(&a, a.out_outer[0], o);
    long carry = identity;
    for (long j0 = 0; j0 < n; j0 += XR_WG) {
      const long j = j0 + lid;
      tmp[lid] = j < n ? wrap_to(a.round_dtype, ld_long(in, a.in_dtype, base + j * is)) : identity;
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int w = 1; w < XR_WG; w <<= 1) {
        long t = lid >= w ? tmp[lid - w] : identity;
        barrier(CLK_LOCAL_MEM_FENCE);
        tmp[lid] = prod ? (long)((ulong)tmp[lid] * (ulong)t) : (long)((ulong)tmp[lid] + (ulong)t);
        barrier(CLK_LOCAL_MEM_FENCE);
      }
      if (j < n)
        st_long(
            out0, a.out_dtype[0], at + j * os,
            prod ? (long)((ulong)carry * (ulong)tmp[lid]) : (long)((ulong)carry + (ulong)tmp[lid]));
      carry = prod ? (long)((ulong)carry * (ulong)tmp[XR_WG - 1])
                   : (long)((ulong)carry + (ulong)tmp[XR_WG - 1]);
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
}

// sum / nansum / prod, max / min (values, first positions), all / any / count_nonzero of integer
// and bool tensors in 64-bit integers: one work-group per output, a tree in local memory.
// Extremes merge by (value, position), so the first extreme wins.
__kernel __attribute__((reqd_work_group_size(XR_WG, 1, 1))) void xr_reduce_int(XR_ARGS) {
  __local long lv[XR_WG], lk[XR_WG];
  const long lid = get_local_id(0);
  const bool extreme = a.op == XR_REDUCE_DEV_MAX || a.op == XR_REDUCE_DEV_MIN,
             max = a.op == XR_REDUCE_DEV_MAX;
  const bool prod = a.op == XR_REDUCE_DEV_PROD, count = a.op == XR_REDUCE_DEV_ALL ||
                                                        a.op == XR_REDUCE_DEV_ANY ||
                                                        a.op == XR_REDUCE_DEV_COUNT;
  for (long o = get_group_id(0); o < a.outer_numel; o += get_num_groups(0)) {
    const long base = a.in_offset + outer_off(&a, a.in_outer, o);
    long acc = prod ? 1 : 0, at = -1; // at: the extreme's position, -1 before the first
    for (long k = lid; k < a.red_numel; k += XR_WG) {
      long v = ld_long(in, a.in_dtype, base + red_off(&a, k));
      if (extreme) {
        if (at < 0 || (max ? v > acc : v < acc)) acc = v, at = k;
      } else if (count) {
        acc += v != 0;
      } else {
        v = wrap_to(a.round_dtype, v);
        acc = prod ? (long)((ulong)acc * (ulong)v) : (long)((ulong)acc + (ulong)v);
      }
    }
    lv[lid] = acc, lk[lid] = at;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = XR_WG / 2; w > 0; w >>= 1) {
      if (lid < w) {
        const long v = lv[lid + w], k = lk[lid + w];
        if (!extreme)
          lv[lid] = prod ? (long)((ulong)lv[lid] * (ulong)v) : (long)((ulong)lv[lid] + (ulong)v);
        else if (k >= 0 && (lk[lid] < 0 || (max ? v > lv[lid] : v < lv[lid]) ||
                            (v == lv[lid] && k < lk[lid])))
          lv[lid] = v, lk[lid] = k;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
      long r = a.op == XR_REDUCE_DEV_ALL   ? lv[0] == a.red_numel
               : a.op == XR_REDUCE_DEV_ANY ? lv[0] > 0
                                           : lv[0];
      if (a.has_out[0])
        st_long(out0, a.out_dtype[0], a.out_offset[0] + outer_off(&a, a.out_outer[0], o), r);
      if (a.has_out[1])
        ((__global long *)out1)[a.out_offset[1] + outer_off(&a, a.out_outer[1], o)] = lk[0];
    }
    barrier(CLK_LOCAL_MEM_FENCE); // lv and lk are reused
  }
}

// ---- sorts ------------------------------------------------------------------------------------

// (ordered bits of v) << 32 | position: unsigned order is the stable sort's.
ulong sort_key(float v, long position, long descending) {
  uint u;
  if (isnan(v)) u = 0xffffffffu;
  else {
    u = v == 0.0f ? 0u : as_uint(v);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
  if (descending) u = ~u;
  return ((ulong)u << 32) | (ulong)position;
}

// Sorts keys[0, n2) ascending (n2 a power of two); every work-item of the group calls it.
void bitonic(__local ulong *keys, long n2) {
  const long lid = get_local_id(0);
  for (long size = 2; size <= n2; size <<= 1)
    for (long stride = size >> 1; stride > 0; stride >>= 1) {
      for (long j = lid; j < n2; j += XR_WG) {
        long partner = j ^ stride;
        if (partner > j) {
          bool up = (j & size) == 0;
          ulong x = keys[j], y = keys[partner];
          if ((x > y) == up) keys[j] = y, keys[partner] = x;
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
}

long pow2_at_least(long n) {
  long p = 1;
  while (p < n) p <<= 1;
  return p;
}

__kernel __attribute__((reqd_work_group_size(XR_WG, 1, 1))) void xr_reduce_sort(XR_ARGS) {
  __local ulong keys[XR_SORT_MAX];
  const long lid = get_local_id(0), n = a.red_shape[0], is = a.in_red[0];
  const long esize = a.in_dtype == XR_F32 ? 4 : 2;
  for (long o = get_group_id(0); o < a.outer_numel; o += get_num_groups(0)) {
    const long base = a.in_offset + outer_off(&a, a.in_outer, o);
    long n2;
    if (n <= XR_SORT_MAX) {
      n2 = pow2_at_least(n);
      for (long j = lid; j < n2; j += XR_WG)
        keys[j] = j < n ? sort_key(ld(in, a.in_dtype, base + j * is), j, a.descending)
                        : 0xfffffffffffffffful;
    } else {  // topk, k <= XR_REDUCE_DEV_TOPK_MAX: each work-item's k best, then all candidates
              // sorted
      ulong best[XR_REDUCE_DEV_TOPK_MAX];
      for (int i = 0; i < a.k; i++) best[i] = 0xfffffffffffffffful;
      for (long j = lid; j < n; j += XR_WG) {
        ulong key = sort_key(ld(in, a.in_dtype, base + j * is), j, a.descending);
        if (key >= best[a.k - 1]) continue;
        int i = (int)a.k - 1;
        for (; i > 0 && best[i - 1] > key; i--) best[i] = best[i - 1];
        best[i] = key;
      }
      for (int i = 0; i < a.k; i++) keys[lid * a.k + i] = best[i];
      n2 = pow2_at_least(XR_WG * a.k);
      for (long j = XR_WG * a.k + lid; j < n2; j += XR_WG) keys[j] = 0xfffffffffffffffful;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    bitonic(keys, n2);
    const long at0 = a.out_offset[0] + outer_off(&a, a.out_outer[0], o);
    const long at1 = a.out_offset[1] + outer_off(&a, a.out_outer[1], o);
    for (long j = lid; j < a.k; j += XR_WG) {
      const long position = (long)(keys[j] & 0xffffffffu);
      if (a.has_out[0]) {
        const long from = base + position * is, to = at0 + j * a.out_dim_stride[0];
        if (esize == 4) ((__global uint *)out0)[to] = ((__global const uint *)in)[from];
        else ((__global ushort *)out0)[to] = ((__global const ushort *)in)[from];
      }
      if (a.has_out[1]) ((__global long *)out1)[at1 + j * a.out_dim_stride[1]] = position;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

// ---- integer sorts ----------------------------------------------------------------------------

// An integer in unsigned order (descending: inverted); ties fall to the positions.
ulong int_key(long v, long descending) {
  ulong u = (ulong)v ^ 0x8000000000000000ul;
  return descending ? ~u : u;
}

// (k1, p1) before (k2, p2)?
bool pair_less(ulong k1, uint p1, ulong k2, uint p2) { return k1 < k2 || (k1 == k2 && p1 < p2); }

// Sorts the pairs [0, n2) ascending (n2 a power of two); every work-item of the group calls it.
void bitonic_pairs(__local ulong *keys, __local uint *pos, long n2) {
  const long lid = get_local_id(0);
  for (long size = 2; size <= n2; size <<= 1)
    for (long stride = size >> 1; stride > 0; stride >>= 1) {
      for (long j = lid; j < n2; j += XR_WG) {
        long partner = j ^ stride;
        if (partner > j) {
          bool up = (j & size) == 0;
          ulong x = keys[j], y = keys[partner];
          uint px = pos[j], py = pos[partner];
          if (pair_less(y, py, x, px) == up) {
            keys[j] = y, keys[partner] = x;
            pos[j] = py, pos[partner] = px;
          }
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
}

#define XR_PAD_KEY 0xfffffffffffffffful
#define XR_PAD_POS 0xffffffffu  // after every real pair: rows are shorter than 2^32

__kernel __attribute__((reqd_work_group_size(XR_WG, 1, 1))) void xr_reduce_sort_int(XR_ARGS) {
  __local ulong keys[XR_SORT_MAX];
  __local uint pos[XR_SORT_MAX];
  const long lid = get_local_id(0), n = a.red_shape[0], is = a.in_red[0];
  const long dt = a.in_dtype;
  for (long o = get_group_id(0); o < a.outer_numel; o += get_num_groups(0)) {
    const long base = a.in_offset + outer_off(&a, a.in_outer, o);
    long n2;
    if (n <= XR_SORT_MAX) {
      n2 = pow2_at_least(n);
      for (long j = lid; j < n2; j += XR_WG) {
        keys[j] = j < n ? int_key(ld_long(in, dt, base + j * is), a.descending) : XR_PAD_KEY;
        pos[j] = j < n ? (uint)j : XR_PAD_POS;
      }
    } else {  // topk, k <= XR_REDUCE_DEV_TOPK_MAX: each work-item's k best, then all candidates
              // sorted
      ulong best[XR_REDUCE_DEV_TOPK_MAX];
      uint best_pos[XR_REDUCE_DEV_TOPK_MAX];
      for (int i = 0; i < a.k; i++) best[i] = XR_PAD_KEY, best_pos[i] = XR_PAD_POS;
      for (long j = lid; j < n; j += XR_WG) {
        ulong key = int_key(ld_long(in, dt, base + j * is), a.descending);
        if (!pair_less(key, (uint)j, best[a.k - 1], best_pos[a.k - 1])) continue;
        int i = (int)a.k - 1;
        for (; i > 0 && pair_less(key, (uint)j, best[i - 1], best_pos[i - 1]); i--)
          best[i] = best[i - 1], best_pos[i] = best_pos[i - 1];
        best[i] = key, best_pos[i] = (uint)j;
      }
      for (int i = 0; i < a.k; i++) keys[lid * a.k + i] = best[i], pos[lid * a.k + i] = best_pos[i];
      n2 = pow2_at_least(XR_WG * a.k);
      for (long j = XR_WG * a.k + lid; j < n2; j += XR_WG) keys[j] = XR_PAD_KEY, pos[j] = XR_PAD_POS;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    bitonic_pairs(keys, pos, n2);
    const long at0 = a.out_offset[0] + outer_off(&a, a.out_outer[0], o);
    const long at1 = a.out_offset[1] + outer_off(&a, a.out_outer[1], o);
    for (long j = lid; j < a.k; j += XR_WG) {
      const long position = (long)pos[j];
      if (a.has_out[0])  // the values keep the input's dtype: stored back exactly
        st_long(out0, dt, at0 + j * a.out_dim_stride[0], ld_long(in, dt, base + position * is));
      if (a.has_out[1]) ((__global long *)out1)[at1 + j * a.out_dim_stride[1]] = position;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
