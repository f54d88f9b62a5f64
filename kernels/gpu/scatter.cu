// The scatter family on CUDA and HIP (host side: kernels/scatter_device.c), the twin of
// kernels/opencl/scatter.cl: the same kernels, names and parameter block (scatter_args.h, by
// value here), one compiled source for every op and dtype.
//  - xr_sc_gather: one thread per result element (also the out-of-place copy of self).
//  - xr_sc_scatter: one thread per (free position, chunk of the destination's indexed range),
//    walking the serial dims in row-major order and applying the updates that land in its
//    chunk: each destination element has one owner and sees its updates in order (no atomics,
//    deterministic, the last duplicate wins). Narrow-float sums and products, means and
//    include_self=False accumulate in a float (integers: 64-bit) per element with a count; a
//    second walk rounds them once and clears the counts.
//  - xr_sc_nonzero: one thread per result row.
//  - xr_sc_mask_count / _scan / _write: the positions of a mask's set elements, row-major.
// Offsets and strides count elements of each operand's own dtype.
// Each header uses the ones before it.
// clang-format off
#include "hip_compat.h"
#include "dtype_io.h"
#include "dtype_codes.h"
#include "dtype_dispatch.h"
#include "scatter_args.h"
// clang-format on

typedef long long xr_ll;
typedef const unsigned char *xr_in;

static __device__ __forceinline__ void xr_scd_move(unsigned char *d, xr_ll di, xr_in s, xr_ll si,
                                                   int es) {
  switch (es) {
    case 1: d[di] = s[si]; break;
    case 2: ((unsigned short *)d)[di] = ((const unsigned short *)s)[si]; break;
    case 4: ((unsigned int *)d)[di] = ((const unsigned int *)s)[si]; break;
    default: ((unsigned long long *)d)[di] = ((const unsigned long long *)s)[si]; break;
  }
}

static __device__ __forceinline__ void xr_scd_bits(unsigned char *d, xr_ll di,
                                                   unsigned long long bits, int es) {
  switch (es) {
    case 1: d[di] = (unsigned char)bits; break;
    case 2: ((unsigned short *)d)[di] = (unsigned short)bits; break;
    case 4: ((unsigned int *)d)[di] = (unsigned int)bits; break;
    default: ((unsigned long long *)d)[di] = bits; break;
  }
}

static __device__ __forceinline__ xr_ll xr_scd_wrap(xr_ll v, int dt) {
  switch (dt) {
    case XR_GPU_I8: return (signed char)v;
    case XR_GPU_I16: return (short)v;
    case XR_GPU_I32: return (int)v;
    case XR_GPU_U8: return (unsigned char)v;
    case XR_GPU_U16: return (unsigned short)v;
    case XR_GPU_U32: return (unsigned int)v;
    default: return v;
  }
}

// Non-zero: NaN is, -0.0 is not (floats compare their bits without the sign).
static __device__ __forceinline__ bool xr_scd_is_set(xr_in p, int dt, xr_ll i) {
  switch (dt) {
    case XR_GPU_F32: return (((const unsigned int *)p)[i] & 0x7fffffffu) != 0;
    case XR_GPU_F64: return (((const unsigned long long *)p)[i] & 0x7fffffffffffffffull) != 0;
    case XR_GPU_F16:
    case XR_GPU_BF16: return (((const unsigned short *)p)[i] & 0x7fff) != 0;
    case XR_GPU_F8E4M3FN:
    case XR_GPU_F8E5M2: return (p[i] & 0x7f) != 0;
    case XR_GPU_I16:
    case XR_GPU_U16: return ((const unsigned short *)p)[i] != 0;
    case XR_GPU_I32:
    case XR_GPU_U32: return ((const unsigned int *)p)[i] != 0;
    case XR_GPU_I64:
    case XR_GPU_U64: return ((const unsigned long long *)p)[i] != 0;
    default: return p[i] != 0;  // bytes, bool, the fnuz fp8s (0x80 is their NaN)
  }
}

static __device__ __forceinline__ float xr_scd_combine_f(int r, float a, float c) {
  if (r == XR_SC_DEV_MUL) return a * c;
  if (r == XR_SC_DEV_MAX) return a != a || c != c ? __int_as_float(0x7fc00000) : (a > c ? a : c);
  if (r == XR_SC_DEV_MIN) return a != a || c != c ? __int_as_float(0x7fc00000) : (a < c ? a : c);
  return a + c;
}

static __device__ __forceinline__ xr_ll xr_scd_combine_l(int r, xr_ll a, xr_ll c) {
  if (r == XR_SC_DEV_MUL) return (xr_ll)((unsigned long long)a * (unsigned long long)c);
  if (r == XR_SC_DEV_MAX) return a > c ? a : c;
  if (r == XR_SC_DEV_MIN) return a < c ? a : c;
  return (xr_ll)((unsigned long long)a + (unsigned long long)c);
}

static __device__ __forceinline__ xr_ll xr_scd_floor_div(xr_ll a, xr_ll b) {
  xr_ll q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// Slot k's value read at `at`, wrapped once and clamped into [0, numel).
static __device__ __forceinline__ xr_ll xr_scd_slot(const xr_sc_dev_params_t &p, int k,
                                                    const xr_in *index, const xr_ll *pos,
                                                    xr_ll at) {
  xr_ll v;
  if (p.slot_source[k] == XR_SC_DEV_INDEX) {
    const xr_ll i = p.offset[2 + k] + at;
    v = p.slot_dtype[k] == XR_GPU_I64 ? ((const xr_ll *)index[k])[i]
                                      : (xr_ll)((const int *)index[k])[i];
  } else if (p.slot_source[k] == XR_SC_DEV_POSITIONS) {
    v = pos[at];
  } else {
    v = at;
  }
  const xr_ll n = p.slot_numel[k];
  if (v < 0) v += n;
  return v < 0 ? 0 : (v >= n ? n - 1 : v);
}

static __device__ __forceinline__ xr_ll xr_scd_unravel(const xr_sc_dev_params_t &p, int k,
                                                       xr_ll v) {
  xr_ll off = 0;
  for (int d = p.slot_group_rank[k] - 1; d >= 0; d--) {
    off += (v % p.group_shape[k][d]) * p.group_strides[k][d];
    v /= p.group_shape[k][d];
  }
  return off;
}

extern "C" __global__ void __launch_bounds__(XR_SC_DEV_THREADS)
    xr_sc_gather(xr_sc_dev_params_t p, unsigned char *dst, xr_in src, xr_in i0, xr_in i1, xr_in i2,
                 xr_in i3, const xr_ll *pos, const xr_ll *count) {
  const xr_ll x = (xr_ll)blockIdx.x * blockDim.x + threadIdx.x;
  if (x >= p.numel) return;
  const xr_in index[XR_SC_DEV_SLOTS] = {i0, i1, i2, i3};
  xr_ll off[XR_SC_DEV_OPS] = {0, 0, 0, 0, 0, 0}, rest = x, at_count = -1;
  const int nops = 2 + p.slot_count;
  for (int d = p.rank - 1; d >= 0; d--) {
    const xr_ll c = rest % p.shape[d];
    rest /= p.shape[d];
    if (d == p.count_dim) at_count = c;
    for (int k = 0; k < nops; k++) off[k] += c * p.strides[k][d];
  }
  const xr_ll di = p.offset[0] + off[0];
  if (p.count_dim >= 0 && at_count >= count[0]) {
    xr_scd_bits(dst, di, 0, p.elem_size);
    return;
  }
  xr_ll si = p.offset[1] + off[1];
  for (int k = 0; k < p.slot_count; k++)
    si += xr_scd_unravel(p, k, xr_scd_slot(p, k, index, pos, off[2 + k]));
  xr_scd_move(dst, di, src, si, p.elem_size);
}

// One update of dst element di in its own dtype.
static __device__ void xr_scd_update(const xr_sc_dev_params_t &p, unsigned char *dst, xr_ll di,
                                     xr_in src, xr_ll si) {
  const int dt = p.dtype, es = p.elem_size;
  if (p.reduce == XR_SC_DEV_ASSIGN) {
    if (p.src_scalar)
      xr_scd_bits(dst, di, (unsigned long long)p.pattern, es);
    else
      xr_scd_move(dst, di, src, si, es);
  } else if (p.floating) {
    float c = p.src_scalar ? p.value : xr_load_as_float(src, dt, si);
    if (p.reduce == XR_SC_DEV_ADD) c *= p.alpha;
    xr_store_float(dst, dt, di, xr_scd_combine_f(p.reduce, xr_load_as_float(dst, dt, di), c));
  } else {
    xr_ll c = p.src_scalar ? p.ivalue : xr_load_as_long(src, dt, si);
    if (p.reduce == XR_SC_DEV_ADD)
      c = (xr_ll)((unsigned long long)c * (unsigned long long)p.ialpha);
    xr_store_long(dst, dt, es, di, xr_scd_combine_l(p.reduce, xr_load_as_long(dst, dt, di), c));
  }
}

// One update into element `rel`'s accumulator (the first from dst's own value, or alone).
static __device__ void xr_scd_accumulate(const xr_sc_dev_params_t &p, xr_in dst, xr_ll di,
                                         xr_in src, xr_ll si, unsigned char *acc, int *cnt,
                                         xr_ll rel) {
  const int dt = p.dtype, n = cnt[rel]++;
  const bool with_self = n == 0 && p.include_self;
  if (p.floating) {
    float *a = (float *)acc;
    float c = p.src_scalar ? p.value : xr_load_as_float(src, dt, si);
    if (p.reduce == XR_SC_DEV_ADD) c *= p.alpha;
    a[rel] = with_self ? xr_scd_combine_f(p.reduce, xr_load_as_float(dst, dt, di), c)
                       : (n == 0 ? c : xr_scd_combine_f(p.reduce, a[rel], c));
  } else {
    xr_ll *a = (xr_ll *)acc;
    xr_ll c = p.src_scalar ? p.ivalue : xr_load_as_long(src, dt, si);
    if (p.reduce == XR_SC_DEV_ADD)
      c = (xr_ll)((unsigned long long)c * (unsigned long long)p.ialpha);
    a[rel] = with_self ? xr_scd_combine_l(p.reduce, xr_load_as_long(dst, dt, di), c)
                       : (n == 0 ? c : xr_scd_combine_l(p.reduce, a[rel], c));
  }
}

// Element `rel`'s result, once: rounded to dst's dtype, its count cleared for the next run.
static __device__ void xr_scd_finish(const xr_sc_dev_params_t &p, unsigned char *dst, xr_ll di,
                                     const unsigned char *acc, int *cnt, xr_ll rel) {
  const int n = cnt[rel];
  if (n == 0) return;
  cnt[rel] = 0;
  const int dt = p.dtype;
  const xr_ll count = n + (p.include_self ? 1 : 0);
  if (p.floating) {
    const float v = ((const float *)acc)[rel];
    xr_store_float(dst, dt, di, p.reduce == XR_SC_DEV_MEAN ? v / (float)count : v);
  } else {
    const xr_ll v = xr_scd_wrap(((const xr_ll *)acc)[rel], dt);
    xr_store_long(dst, dt, p.elem_size, di,
                  p.reduce == XR_SC_DEV_MEAN ? xr_scd_floor_div(v, count) : v);
  }
}

extern "C" __global__ void __launch_bounds__(XR_SC_DEV_THREADS)
    xr_sc_scatter(xr_sc_dev_params_t p, unsigned char *dst, xr_in src, xr_in i0, xr_in i1, xr_in i2,
                  xr_in i3, const xr_ll *pos, const xr_ll *count, unsigned char *acc, int *cnt) {
  const xr_ll item = (xr_ll)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.nf * p.chunks) return;
  const xr_in index[XR_SC_DEV_SLOTS] = {i0, i1, i2, i3};
  const xr_ll f = item % p.nf, chunk = item / p.nf;
  const xr_ll lo = chunk * p.range / p.chunks, hi = (chunk + 1) * p.range / p.chunks;
  const xr_ll active = p.count_dim >= 0 ? count[0] : 0x7fffffffffffffffll;
  const int nops = 2 + p.slot_count, fr = p.free_rank;
  xr_ll foff[XR_SC_DEV_OPS] = {0, 0, 0, 0, 0, 0}, rest = f;
  for (int d = fr - 1; d >= 0; d--) {
    const xr_ll c = rest % p.shape[d];
    rest /= p.shape[d];
    if (d == p.count_dim && c >= active) return;
    for (int k = 0; k < nops; k++) foff[k] += c * p.strides[k][d];
  }
  for (int pass = 0; pass < (p.scratch ? 2 : 1); pass++) {
    for (xr_ll sp = 0; sp < p.ns; sp++) {
      xr_ll off[XR_SC_DEV_OPS] = {0, 0, 0, 0, 0, 0};
      for (int k = 0; k < nops; k++) off[k] = foff[k];
      bool skip = false;
      rest = sp;
      for (int d = p.rank - 1; d >= fr; d--) {
        const xr_ll c = rest % p.shape[d];
        rest /= p.shape[d];
        if (d == p.count_dim && c >= active) skip = true;
        for (int k = 0; k < nops; k++) off[k] += c * p.strides[k][d];
      }
      if (skip) continue;
      xr_ll di = off[0], si = off[1], j = 0;
      for (int k = 0; k < p.slot_count; k++) {
        const xr_ll v = xr_scd_slot(p, k, index, pos, off[2 + k]);
        const xr_ll o = xr_scd_unravel(p, k, v);
        if (p.slot_on_src[k]) {
          si += o;
        } else {
          di += o;
          j = j * p.slot_numel[k] + v;
        }
      }
      if (p.chunks > 1 && (j < lo || j >= hi)) continue;
      const xr_ll rel = di;
      di += p.offset[0];
      si += p.offset[1];
      if (!p.scratch)
        xr_scd_update(p, dst, di, src, si);
      else if (pass == 0)
        xr_scd_accumulate(p, dst, di, src, si, acc, cnt, rel);
      else
        xr_scd_finish(p, dst, di, acc, cnt, rel);
    }
  }
}

extern "C" __global__ void __launch_bounds__(XR_SC_DEV_THREADS)
    xr_sc_nonzero(xr_sc_dev_params_t p, xr_ll *dst, const xr_ll *pos, const xr_ll *count) {
  const xr_ll k = (xr_ll)blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= p.shape[0]) return;
  xr_ll rest = k < count[0] ? pos[k] : -1;
  for (xr_ll d = p.shape[1] - 1; d >= 0; d--) {
    xr_ll v = p.fill;
    if (rest >= 0) {
      v = rest % p.mask_shape[d];
      rest /= p.mask_shape[d];
    }
    dst[p.offset[0] + k * p.strides[0][0] + d * p.strides[0][1]] = v;
  }
}

static __device__ __forceinline__ xr_ll xr_scd_mask_at(const xr_sc_dev_params_t &p, xr_ll e) {
  xr_ll off = p.mask_offset;
  for (int d = p.mask_rank - 1; d >= 0; d--) {
    off += (e % p.mask_shape[d]) * p.mask_strides[d];
    e /= p.mask_shape[d];
  }
  return off;
}

extern "C" __global__ void __launch_bounds__(XR_SC_DEV_THREADS)
    xr_sc_mask_count(xr_sc_dev_params_t p, xr_in mask, xr_ll *chunk_base) {
  const xr_ll c = (xr_ll)blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= p.mask_chunks) return;
  const xr_ll e0 = c * p.mask_chunk;
  const xr_ll e1 = e0 + p.mask_chunk < p.mask_numel ? e0 + p.mask_chunk : p.mask_numel;
  xr_ll n = 0;
  for (xr_ll e = e0; e < e1; e++) n += xr_scd_is_set(mask, p.mask_dtype, xr_scd_mask_at(p, e));
  chunk_base[c] = n;
}

extern "C" __global__ void __launch_bounds__(XR_SC_DEV_THREADS)
    xr_sc_mask_scan(xr_sc_dev_params_t p, xr_ll *chunk_base, xr_ll *count) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  xr_ll total = 0;
  for (xr_ll c = 0; c < p.mask_chunks; c++) {
    const xr_ll n = chunk_base[c];
    chunk_base[c] = total;
    total += n;
  }
  count[0] = total;
}

extern "C" __global__ void __launch_bounds__(XR_SC_DEV_THREADS)
    xr_sc_mask_write(xr_sc_dev_params_t p, xr_in mask, const xr_ll *chunk_base, xr_ll *pos) {
  const xr_ll c = (xr_ll)blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= p.mask_chunks) return;
  const xr_ll e0 = c * p.mask_chunk;
  const xr_ll e1 = e0 + p.mask_chunk < p.mask_numel ? e0 + p.mask_chunk : p.mask_numel;
  xr_ll at = chunk_base[c];
  for (xr_ll e = e0; e < e1; e++)
    if (xr_scd_is_set(mask, p.mask_dtype, xr_scd_mask_at(p, e))) pos[at++] = e;
}
