// triton_kernels' MoE routing ops (kernels/routing.h; host side: kernels/routing_device.c), the
// twins of kernels/gpu/routing.cu and of ref.routing step for step:
//   xr_routing_topk          one work-item per row: k passes over the row find the k-th
//                            selection (value keys, the smaller column on ties), then the row is
//                            scanned in column order: max, fp32 softmax sum, values, ids, bits
//   xr_routing_sort_experts  one work-item per expert e: its count, the routed selections of
//                            smaller experts (its first sorted place), then its selections in
//                            order into combine_indx, dispatch_indx and gate_scal
//   xr_routing_sort_tail     work-item b < B: token_offs_pad[b] and block_pid_map[b] from hist;
//                            work-item B: token_offs_raw[E], the places and ids routed nowhere
// Arguments: the block of kernels/routing_args.h; results contiguous at offset 0.

#include "dtype_codes.h"
#include "float_formats_cl.h"
#include "routing_args.h"

inline uint key_of(const __global uchar *x, long dtype, long i) {
  if (dtype == XR_F32) {
    uint b = ((const __global uint *)x)[i];
    return b ^ ((b & 0x80000000u) ? 0xffffffffu : 0x80000000u);
  }
  uint b = ((const __global ushort *)x)[i];
  return b ^ ((b & 0x8000u) ? 0xffffu : 0x8000u);
}

inline float load_x(const __global uchar *x, long dtype, long i) {
  if (dtype == XR_F32) return ((const __global float *)x)[i];
  if (dtype == XR_F16) return vload_half(i, (const __global half *)x);
  return xr_bf16_to_f32(((const __global ushort *)x)[i]);
}

inline void store_y(__global uchar *y, long dtype, long i, float v) {
  if (dtype == XR_F32)
    ((__global float *)y)[i] = v;
  else if (dtype == XR_F16)
    vstore_half_rte(v, i, (__global half *)y);
  else
    ((__global ushort *)y)[i] = xr_f32_to_bf16(v);
}

// (a, ia) is selected before (b, ib).
inline bool before(uint a, long ia, uint b, long ib) { return a > b || (a == b && ia < ib); }

__kernel void xr_routing_topk(__global uchar *vals, __global short *indx, __global uint *bits,
                              __global const uchar *x, const xr_routing_args_t g) {
  for (long r = get_global_id(0); r < g.rows; r += get_global_size(0)) {
    const long base = g.x_off + r * g.x_rs;
    uint tkey = 0;
    long tcol = -1;
    for (long j = 0; j < g.k; j++) {
      uint bkey = 0;
      long bcol = -1;
      for (long c = 0; c < g.cols; c++) {
        const uint key = key_of(x, g.x_dtype, base + c * g.x_cs);
        if (tcol >= 0 && !before(tkey, tcol, key, c)) continue;
        if (bcol < 0 || before(key, c, bkey, bcol)) bkey = key, bcol = c;
      }
      tkey = bkey, tcol = bcol;
    }
    float m = 0.0f, sum = 0.0f;
    long j = 0;
    for (long c = 0; c < g.cols; c++) {
      if (before(tkey, tcol, key_of(x, g.x_dtype, base + c * g.x_cs), c)) continue;
      const float v = load_x(x, g.x_dtype, base + c * g.x_cs);
      if (j++ == 0 || v > m) m = v;
    }
    if (g.softmax)
      for (long c = 0; c < g.cols; c++)
        if (!before(tkey, tcol, key_of(x, g.x_dtype, base + c * g.x_cs), c))
          sum += exp(load_x(x, g.x_dtype, base + c * g.x_cs) - m);
    j = 0;
    for (long w = 0; w < g.words; w++) {
      uint word = 0;
      for (long c = w * 32; c < g.cols && c < w * 32 + 32; c++) {
        if (before(tkey, tcol, key_of(x, g.x_dtype, base + c * g.x_cs), c)) continue;
        const float v = load_x(x, g.x_dtype, base + c * g.x_cs);
        store_y(vals, g.x_dtype, r * g.k + j, g.softmax ? exp(v - m) / sum : v);
        indx[r * g.k + j++] = (short)c;
        word |= 1u << (c % 32);
      }
      bits[r * g.words + w] = word;
    }
  }
}

inline long load_id(const __global uchar *ids, long dtype, long i) {
  if (dtype == XR_I16) return ((const __global short *)ids)[i];
  if (dtype == XR_I32) return ((const __global int *)ids)[i];
  return ((const __global long *)ids)[i];
}

// Expert id of flat selection i (token i / k, slot i % k).
inline long id_at(const __global uchar *ids, const xr_routing_args_t g, long i) {
  return load_id(ids, g.ids_dtype, g.ids_off + (i / g.k) * g.ids_rs + (i % g.k) * g.ids_cs);
}

inline void copy_scal(__global uchar *gate, long at, const __global uchar *scal,
                      const xr_routing_args_t g, long i) {
  const long from = g.scal_off + (i / g.k) * g.scal_rs + (i % g.k) * g.scal_cs;
  if (g.scal_esize == 2)
    ((__global ushort *)gate)[at] = ((const __global ushort *)scal)[from];
  else if (g.scal_esize == 4)
    ((__global uint *)gate)[at] = ((const __global uint *)scal)[from];
  else
    ((__global ulong *)gate)[at] = ((const __global ulong *)scal)[from];
}

__kernel void xr_routing_sort_experts(__global int *hist, __global int *combine,
                                      __global int *dispatch, __global uchar *gate,
                                      __global int *offs_raw, __global const uchar *scal,
                                      __global const uchar *ids, const xr_routing_args_t g) {
  const long gates = g.rows * g.k;
  for (long e = get_global_id(0); e < g.cols; e += get_global_size(0)) {
    long count = 0, place = 0;
    for (long i = 0; i < gates; i++) {
      const long id = id_at(ids, g, i);
      if (id >= 0 && id < e) place++;
      count += id == e;
    }
    hist[e] = (int)count;
    offs_raw[e] = (int)place;
    for (long i = 0; i < gates; i++) {
      if (id_at(ids, g, i) != e) continue;
      combine[place] = (int)i;
      dispatch[i] = (int)place;
      copy_scal(gate, place, scal, g, i);
      place++;
    }
  }
}

__kernel void xr_routing_sort_tail(__global int *combine, __global int *dispatch,
                                   __global uchar *gate, __global int *offs_raw,
                                   __global int *offs_pad, __global int *pid_map,
                                   __global const int *hist, __global const uchar *ids,
                                   const xr_routing_args_t g) {
  const long gates = g.rows * g.k, E = g.cols;
  for (long b = get_global_id(0); b <= XR_ROUTING_BLOCK_SIZES; b += get_global_size(0)) {
    if (b < XR_ROUTING_BLOCK_SIZES) {
      const long bm = (long)XR_ROUTING_BLOCK_M_MIN << b;
      __global int *row = offs_pad + b * (E + 1), *tiles = pid_map + b * g.tiles;
      for (long c = 0; c < g.tiles; c++) tiles[c] = -1;
      long at = 0;
      row[0] = 0;
      for (long e = 0; e < E; e++) {
        const long n = (hist[e] + bm - 1) / bm;
        for (long c = 0; c < n && at + c < g.tiles; c++) tiles[at + c] = (int)(e | c << 16);
        at += n;
        row[e + 1] = (int)at;
      }
    } else {
      long routed = 0;
      for (long i = 0; i < gates; i++) {
        const long id = id_at(ids, g, i);
        if (id >= 0 && id < E)
          routed++;
        else
          dispatch[i] = -1;
      }
      offs_raw[E] = (int)routed;
      for (long i = routed; i < gates; i++) {
        combine[i] = -1;
        for (long k = 0; k < g.scal_esize; k++) gate[i * g.scal_esize + k] = 0;
      }
    }
  }
}
