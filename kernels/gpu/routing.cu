// triton_kernels' MoE routing ops (kernels/routing.h) on CUDA and HIP (kernels/routing_device.c
// launches these), the twins of kernels/opencl/routing.cl and of ref.routing step for step:
//   xr_routing_topk          one thread per row: k passes find the k-th selection (value keys,
//                            the smaller column on ties), then the row in column order: max,
//                            fp32 softmax sum, values, ids, bitmatrix words
//   xr_routing_sort_experts  one thread per expert: its count, its first sorted place (the
//                            routed selections of smaller experts), its selections in order
//   xr_routing_sort_tail     thread b < B: token_offs_pad[b], block_pid_map[b]; thread B:
//                            token_offs_raw[E] and what is routed nowhere
// Threads stride over their items, so any grid covers them. Arguments: kernels/routing_args.h.
#include "hip_compat.h"
#include "dtype_codes.h"
#include "routing_args.h"

static __device__ __forceinline__ unsigned xr_rt_key(const unsigned char *x, long dtype, long i) {
  if (dtype == XR_GPU_F32) {
    unsigned b = ((const unsigned *)x)[i];
    return b ^ ((b & 0x80000000u) ? 0xffffffffu : 0x80000000u);
  }
  unsigned b = ((const unsigned short *)x)[i];
  return b ^ ((b & 0x8000u) ? 0xffffu : 0x8000u);
}

static __device__ __forceinline__ float xr_rt_load(const unsigned char *x, long dtype, long i) {
  if (dtype == XR_GPU_F32) return ((const float *)x)[i];
  if (dtype == XR_GPU_F16) return xr_half_to_float(((const unsigned short *)x)[i]);
  return xr_bf16_to_f32(((const unsigned short *)x)[i]);
}

static __device__ __forceinline__ void xr_rt_store(unsigned char *y, long dtype, long i, float v) {
  if (dtype == XR_GPU_F32)
    ((float *)y)[i] = v;
  else if (dtype == XR_GPU_F16)
    ((unsigned short *)y)[i] = xr_float_to_half(v);
  else
    ((unsigned short *)y)[i] = xr_f32_to_bf16(v);
}

static __device__ __forceinline__ bool xr_rt_before(unsigned a, long ia, unsigned b, long ib) {
  return a > b || (a == b && ia < ib);
}

static __device__ __forceinline__ long xr_rt_first() {
  return (long)blockIdx.x * blockDim.x + threadIdx.x;
}

static __device__ __forceinline__ long xr_rt_stride() { return (long)gridDim.x * blockDim.x; }

extern "C" __global__ void xr_routing_topk(unsigned char *vals, short *indx, unsigned *bits,
                                           const unsigned char *x, xr_routing_args_t g) {
  for (long r = xr_rt_first(); r < g.rows; r += xr_rt_stride()) {
    const long base = g.x_off + r * g.x_rs;
    unsigned tkey = 0;
    long tcol = -1;
    for (long j = 0; j < g.k; j++) {
      unsigned bkey = 0;
      long bcol = -1;
      for (long c = 0; c < g.cols; c++) {
        const unsigned key = xr_rt_key(x, g.x_dtype, base + c * g.x_cs);
        if (tcol >= 0 && !xr_rt_before(tkey, tcol, key, c)) continue;
        if (bcol < 0 || xr_rt_before(key, c, bkey, bcol)) bkey = key, bcol = c;
      }
      tkey = bkey, tcol = bcol;
    }
    float m = 0.0f, sum = 0.0f;
    long j = 0;
    for (long c = 0; c < g.cols; c++) {
      if (xr_rt_before(tkey, tcol, xr_rt_key(x, g.x_dtype, base + c * g.x_cs), c)) continue;
      const float v = xr_rt_load(x, g.x_dtype, base + c * g.x_cs);
      if (j++ == 0 || v > m) m = v;
    }
    if (g.softmax)
      for (long c = 0; c < g.cols; c++)
        if (!xr_rt_before(tkey, tcol, xr_rt_key(x, g.x_dtype, base + c * g.x_cs), c))
          sum += expf(xr_rt_load(x, g.x_dtype, base + c * g.x_cs) - m);
    j = 0;
    for (long w = 0; w < g.words; w++) {
      unsigned word = 0;
      for (long c = w * 32; c < g.cols && c < w * 32 + 32; c++) {
        if (xr_rt_before(tkey, tcol, xr_rt_key(x, g.x_dtype, base + c * g.x_cs), c)) continue;
        const float v = xr_rt_load(x, g.x_dtype, base + c * g.x_cs);
        xr_rt_store(vals, g.x_dtype, r * g.k + j, g.softmax ? expf(v - m) / sum : v);
        indx[r * g.k + j++] = (short)c;
        word |= 1u << (c % 32);
      }
      bits[r * g.words + w] = word;
    }
  }
}

// Expert id of flat selection i (token i / k, slot i % k).
static __device__ __forceinline__ long xr_rt_id(const unsigned char *ids, const xr_routing_args_t &g,
                                                long i) {
  const long at = g.ids_off + (i / g.k) * g.ids_rs + (i % g.k) * g.ids_cs;
  if (g.ids_dtype == XR_GPU_I16) return ((const short *)ids)[at];
  if (g.ids_dtype == XR_GPU_I32) return ((const int *)ids)[at];
  return ((const long long *)ids)[at];
}

static __device__ __forceinline__ void xr_rt_copy_scal(unsigned char *gate, long at,
                                                       const unsigned char *scal,
                                                       const xr_routing_args_t &g, long i) {
  const long from = g.scal_off + (i / g.k) * g.scal_rs + (i % g.k) * g.scal_cs;
  if (g.scal_esize == 2)
    ((unsigned short *)gate)[at] = ((const unsigned short *)scal)[from];
  else if (g.scal_esize == 4)
    ((unsigned *)gate)[at] = ((const unsigned *)scal)[from];
  else
    ((unsigned long long *)gate)[at] = ((const unsigned long long *)scal)[from];
}

extern "C" __global__ void xr_routing_sort_experts(int *hist, int *combine, int *dispatch,
                                                   unsigned char *gate, int *offs_raw,
                                                   const unsigned char *scal,
                                                   const unsigned char *ids, xr_routing_args_t g) {
  const long gates = g.rows * g.k;
  for (long e = xr_rt_first(); e < g.cols; e += xr_rt_stride()) {
    long count = 0, place = 0;
    for (long i = 0; i < gates; i++) {
      const long id = xr_rt_id(ids, g, i);
      if (id >= 0 && id < e) place++;
      count += id == e;
    }
    hist[e] = (int)count;
    offs_raw[e] = (int)place;
    for (long i = 0; i < gates; i++) {
      if (xr_rt_id(ids, g, i) != e) continue;
      combine[place] = (int)i;
      dispatch[i] = (int)place;
      xr_rt_copy_scal(gate, place, scal, g, i);
      place++;
    }
  }
}

extern "C" __global__ void xr_routing_sort_tail(int *combine, int *dispatch, unsigned char *gate,
                                                int *offs_raw, int *offs_pad, int *pid_map,
                                                const int *hist, const unsigned char *ids,
                                                xr_routing_args_t g) {
  const long gates = g.rows * g.k, E = g.cols;
  for (long b = xr_rt_first(); b <= XR_ROUTING_BLOCK_SIZES; b += xr_rt_stride()) {
    if (b < XR_ROUTING_BLOCK_SIZES) {
      const long bm = (long)XR_ROUTING_BLOCK_M_MIN << b;
      int *row = offs_pad + b * (E + 1), *tiles = pid_map + b * g.tiles;
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
        const long id = xr_rt_id(ids, g, i);
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
