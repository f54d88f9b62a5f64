// The scatter family on OpenCL (host side: kernels/scatter_device.c), the twin of
// kernels/gpu/scatter.cu. One program for every op and dtype: the parameter block
// (kernels/scatter_args.h) says what to do, so a device builds it once.
//  - xr_sc_gather: one work-item per result element (also the out-of-place copy of self).
//  - xr_sc_scatter: one work-item per (free position, chunk of the destination's indexed range):
//    it walks the serial dims in row-major order and applies the updates that land in its
//    chunk, so each destination element has one owner and sees its updates in order; no
//    atomics, deterministic, the last duplicate wins. Narrow-float sums and products, means and
//    include_self=False accumulate in a float (integers: long) per element with a count, and a
//    second walk rounds them once and clears the counts.
//  - xr_sc_nonzero: one work-item per result row.
//  - xr_sc_mask_count / _scan / _write: the positions of a mask's set elements, row-major (a
//    count per chunk, one work-item's exclusive scan, the positions written per chunk).
// Offsets and strides count elements of each operand's own dtype.

#include "dtype_codes.h"
#include "float_formats_cl.h"
#include "scatter_args.h"

typedef __global const xr_sc_dev_params_t *P;
typedef __global const uchar *IN;

void move_elem(__global uchar *d, long di, IN s, long si, int es) {
  if (es == 1) d[di] = s[si];
  else if (es == 2) ((__global ushort *)d)[di] = ((__global const ushort *)s)[si];
  else if (es == 4) ((__global uint *)d)[di] = ((__global const uint *)s)[si];
  else ((__global ulong *)d)[di] = ((__global const ulong *)s)[si];
}

void store_bits(__global uchar *d, long di, ulong bits, int es) {
  if (es == 1) d[di] = (uchar)bits;
  else if (es == 2) ((__global ushort *)d)[di] = (ushort)bits;
  else if (es == 4) ((__global uint *)d)[di] = (uint)bits;
  else ((__global ulong *)d)[di] = bits;
}

float load_f(IN p, int dt, long i) {
  if (dt == XR_F32) return ((__global const float *)p)[i];
  if (dt == XR_F16) return vload_half(i, (__global const half *)p);
  if (dt == XR_BF16) return xr_bf16_to_f32(((__global const ushort *)p)[i]);
  return xr_fp8_decode_code(p[i], dt);
}

void store_f(__global uchar *p, int dt, long i, float v) {
  if (dt == XR_F32) ((__global float *)p)[i] = v;
  else if (dt == XR_F16) vstore_half_rte(v, i, (__global half *)p);
  else if (dt == XR_BF16) ((__global ushort *)p)[i] = xr_f32_to_bf16(v);
  else p[i] = xr_fp8_encode_code(v, dt);
}

long load_l(IN p, int dt, long i) {
  switch (dt) {
    case XR_I8: return ((__global const char *)p)[i];
    case XR_I16: return ((__global const short *)p)[i];
    case XR_I32: return ((__global const int *)p)[i];
    case XR_I64: return ((__global const long *)p)[i];
    case XR_U16: return ((__global const ushort *)p)[i];
    case XR_U32: return ((__global const uint *)p)[i];
    case XR_U64: return (long)((__global const ulong *)p)[i];
    case XR_BOOL: return p[i] != 0;
    default: return p[i];
  }
}

void store_l(__global uchar *p, int dt, int es, long i, long v) {
  if (dt == XR_BOOL) p[i] = v != 0;
  else store_bits(p, i, (ulong)v, es);
}

long wrap_l(long v, int dt) {
  switch (dt) {
    case XR_I8: return (char)v;
    case XR_I16: return (short)v;
    case XR_I32: return (int)v;
    case XR_U8: return (uchar)v;
    case XR_U16: return (ushort)v;
    case XR_U32: return (uint)v;
    default: return v;
  }
}

// Non-zero: NaN is, -0.0 is not (floats compare their bits without the sign).
bool nonzero_at(IN p, int dt, long i) {
  switch (dt) {
    case XR_F32: return (((__global const uint *)p)[i] & 0x7fffffffu) != 0;
    case XR_F64: return (((__global const ulong *)p)[i] & 0x7fffffffffffffffUL) != 0;
    case XR_F16:
    case XR_BF16: return (((__global const ushort *)p)[i] & 0x7fff) != 0;
    case XR_F8E4M3FN:
    case XR_F8E5M2: return (p[i] & 0x7f) != 0;
    case XR_I16:
    case XR_U16: return ((__global const ushort *)p)[i] != 0;
    case XR_I32:
    case XR_U32: return ((__global const uint *)p)[i] != 0;
    case XR_I64:
    case XR_U64: return ((__global const ulong *)p)[i] != 0;
    default: return p[i] != 0;  // bytes, bool, the fnuz fp8s (0x80 is their NaN)
  }
}

float combine_f(int r, float a, float c) {
  if (r == XR_SC_DEV_MUL) return a * c;
  if (r == XR_SC_DEV_MAX) return isnan(a) || isnan(c) ? NAN : (a > c ? a : c);
  if (r == XR_SC_DEV_MIN) return isnan(a) || isnan(c) ? NAN : (a < c ? a : c);
  return a + c;
}

long combine_l(int r, long a, long c) {
  if (r == XR_SC_DEV_MUL) return (long)((ulong)a * (ulong)c);
  if (r == XR_SC_DEV_MAX) return a > c ? a : c;
  if (r == XR_SC_DEV_MIN) return a < c ? a : c;
  return (long)((ulong)a + (ulong)c);
}

long floor_div(long a, long b) {
  long q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

IN slot_buffer(int k, IN i0, IN i1, IN i2, IN i3) {
  return k == 0 ? i0 : k == 1 ? i1 : k == 2 ? i2 : i3;
}

// Slot k's value read at `at`, wrapped once and clamped into [0, numel).
long slot_value(P p, int k, IN ib, __global const long *pos, long at) {
  long v;
  if (p->slot_source[k] == 0) {
    long i = p->offset[2 + k] + at;
    v = p->slot_dtype[k] == XR_I64 ? ((__global const long *)ib)[i]
                                   : (long)((__global const int *)ib)[i];
  } else if (p->slot_source[k] == 1) {
    v = pos[at];
  } else {
    v = at;
  }
  long n = p->slot_numel[k];
  if (v < 0) v += n;
  return v < 0 ? 0 : (v >= n ? n - 1 : v);
}

long unravel(P p, int k, long v) {
  long off = 0;
  for (int d = p->slot_group_rank[k] - 1; d >= 0; d--) {
    off += (v % p->group_shape[k][d]) * p->group_strides[k][d];
    v /= p->group_shape[k][d];
  }
  return off;
}

__kernel void xr_sc_gather(P p, __global uchar *dst, IN src, IN i0, IN i1, IN i2, IN i3,
                           __global const long *pos, __global const long *count) {
  long x = get_global_id(0);
  if (x >= p->numel) return;
  long off[XR_SC_DEV_OPS] = {0, 0, 0, 0, 0, 0}, rest = x, at_count = -1;
  int nops = 2 + p->slot_count;
  for (int d = p->rank - 1; d >= 0; d--) {
    long c = rest % p->shape[d];
    rest /= p->shape[d];
    if (d == p->count_dim) at_count = c;
    for (int k = 0; k < nops; k++) off[k] += c * p->strides[k][d];
  }
  int es = p->elem_size;
  long di = p->offset[0] + off[0];
  if (p->count_dim >= 0 && at_count >= count[0]) {
    store_bits(dst, di, 0, es);
    return;
  }
  long si = p->offset[1] + off[1];
  for (int k = 0; k < p->slot_count; k++)
    si += unravel(p, k, slot_value(p, k, slot_buffer(k, i0, i1, i2, i3), pos, off[2 + k]));
  move_elem(dst, di, src, si, es);
}

// One update of dst element di in its own dtype.
void update(P p, __global uchar *dst, long di, IN src, long si) {
  int dt = p->dtype, es = p->elem_size;
  if (p->reduce == 0) {
    if (p->src_scalar) store_bits(dst, di, (ulong)p->pattern, es);
    else move_elem(dst, di, src, si, es);
  } else if (p->floating) {
    float c = p->src_scalar ? p->value : load_f(src, dt, si);
    if (p->reduce == XR_SC_DEV_ADD) c *= p->alpha;
    store_f(dst, dt, di, combine_f(p->reduce, load_f(dst, dt, di), c));
  } else {
    long c = p->src_scalar ? p->ivalue : load_l(src, dt, si);
    if (p->reduce == XR_SC_DEV_ADD) c = (long)((ulong)c * (ulong)p->ialpha);
    store_l(dst, dt, es, di, combine_l(p->reduce, load_l(dst, dt, di), c));
  }
}

// One update into element `rel`'s accumulator (the first from dst's own value, or alone).
void accumulate(P p, IN dst, long di, IN src, long si, __global uchar *acc,
                __global int *cnt, long rel) {
  int dt = p->dtype, n = cnt[rel]++;
  bool with_self = n == 0 && p->include_self;
  if (p->floating) {
    __global float *a = (__global float *)acc;
    float c = p->src_scalar ? p->value : load_f(src, dt, si);
    if (p->reduce == XR_SC_DEV_ADD) c *= p->alpha;
    a[rel] = with_self ? combine_f(p->reduce, load_f(dst, dt, di), c)
                       : (n == 0 ? c : combine_f(p->reduce, a[rel], c));
  } else {
    __global long *a = (__global long *)acc;
    long c = p->src_scalar ? p->ivalue : load_l(src, dt, si);
    if (p->reduce == XR_SC_DEV_ADD) c = (long)((ulong)c * (ulong)p->ialpha);
    a[rel] = with_self ? combine_l(p->reduce, load_l(dst, dt, di), c)
                       : (n == 0 ? c : combine_l(p->reduce, a[rel], c));
  }
}

// Element `rel`'s result, once: rounded to dst's dtype, its count cleared for the next run.
void finish(P p, __global uchar *dst, long di, __global const uchar *acc, __global int *cnt,
            long rel) {
  int n = cnt[rel];
  if (n == 0) return;
  cnt[rel] = 0;
  int dt = p->dtype;
  long count = n + (p->include_self ? 1 : 0);
  if (p->floating) {
    float v = ((__global const float *)acc)[rel];
    store_f(dst, dt, di, p->reduce == XR_SC_DEV_MEAN ? v / (float)count : v);
  } else {
    long v = wrap_l(((__global const long *)acc)[rel], dt);
    store_l(dst, dt, p->elem_size, di, p->reduce == XR_SC_DEV_MEAN ? floor_div(v, count) : v);
  }
}

__kernel void xr_sc_scatter(P p, __global uchar *dst, IN src, IN i0, IN i1, IN i2, IN i3,
                            __global const long *pos, __global const long *count,
                            __global uchar *acc, __global int *cnt) {
  long item = get_global_id(0);
  if (item >= p->nf * p->chunks) return;
  long f = item % p->nf, chunk = item / p->nf;
  long lo = chunk * p->range / p->chunks, hi = (chunk + 1) * p->range / p->chunks;
  long active = p->count_dim >= 0 ? count[0] : LONG_MAX;
  int nops = 2 + p->slot_count, fr = p->free_rank;
  long foff[XR_SC_DEV_OPS] = {0, 0, 0, 0, 0, 0}, rest = f;
  for (int d = fr - 1; d >= 0; d--) {
    long c = rest % p->shape[d];
    rest /= p->shape[d];
    if (d == p->count_dim && c >= active) return;
    for (int k = 0; k < nops; k++) foff[k] += c * p->strides[k][d];
  }
  for (int pass = 0; pass < (p->scratch ? 2 : 1); pass++) {
    for (long sp = 0; sp < p->ns; sp++) {
      long off[XR_SC_DEV_OPS] = {0, 0, 0, 0, 0, 0};
      for (int k = 0; k < nops; k++) off[k] = foff[k];
      bool skip = false;
      rest = sp;
      for (int d = p->rank - 1; d >= fr; d--) {
        long c = rest % p->shape[d];
        rest /= p->shape[d];
        if (d == p->count_dim && c >= active) skip = true;
        for (int k = 0; k < nops; k++) off[k] += c * p->strides[k][d];
      }
      if (skip) continue;
      long di = off[0], si = off[1], j = 0;
      for (int k = 0; k < p->slot_count; k++) {
        long v = slot_value(p, k, slot_buffer(k, i0, i1, i2, i3), pos, off[2 + k]);
        long o = unravel(p, k, v);
        if (p->slot_on_src[k]) {
          si += o;
        } else {
          di += o;
          j = j * p->slot_numel[k] + v;
        }
      }
      if (p->chunks > 1 && (j < lo || j >= hi)) continue;
      long rel = di;
      di += p->offset[0];
      si += p->offset[1];
      if (!p->scratch) update(p, dst, di, src, si);
      else if (pass == 0) accumulate(p, dst, di, src, si, acc, cnt, rel);
      else finish(p, dst, di, acc, cnt, rel);
    }
  }
}

__kernel void xr_sc_nonzero(P p, __global long *dst, __global const long *pos,
                            __global const long *count) {
  long k = get_global_id(0);
  if (k >= p->shape[0]) return;
  long rest = k < count[0] ? pos[k] : -1;
  for (long d = p->shape[1] - 1; d >= 0; d--) {
    long v = p->fill;
    if (rest >= 0) {
      v = rest % p->mask_shape[d];
      rest /= p->mask_shape[d];
    }
    dst[p->offset[0] + k * p->strides[0][0] + d * p->strides[0][1]] = v;
  }
}

long mask_at(P p, long e) {
  long off = p->mask_offset;
  for (int d = p->mask_rank - 1; d >= 0; d--) {
    off += (e % p->mask_shape[d]) * p->mask_strides[d];
    e /= p->mask_shape[d];
  }
  return off;
}

__kernel void xr_sc_mask_count(P p, IN mask, __global long *chunk_base) {
  long c = get_global_id(0);
  if (c >= p->mask_chunks) return;
  long e0 = c * p->mask_chunk, e1 = min(e0 + p->mask_chunk, p->mask_numel), n = 0;
  for (long e = e0; e < e1; e++) n += nonzero_at(mask, p->mask_dtype, mask_at(p, e));
  chunk_base[c] = n;
}

__kernel void xr_sc_mask_scan(P p, __global long *chunk_base, __global long *count) {
  if (get_global_id(0) != 0) return;
  long total = 0;
  for (long c = 0; c < p->mask_chunks; c++) {
    long n = chunk_base[c];
    chunk_base[c] = total;
    total += n;
  }
  count[0] = total;
}

__kernel void xr_sc_mask_write(P p, IN mask, __global const long *chunk_base,
                               __global long *pos) {
  long c = get_global_id(0);
  if (c >= p->mask_chunks) return;
  long e0 = c * p->mask_chunk, e1 = min(e0 + p->mask_chunk, p->mask_numel), at = chunk_base[c];
  for (long e = e0; e < e1; e++)
    if (nonzero_at(mask, p->mask_dtype, mask_at(p, e))) pos[at++] = e;
}
