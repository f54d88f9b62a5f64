// The reduce family (kernels/reduce.h: geometry and semantics) on CUDA and HIP
// (kernels/reduce_device.c launches these), the twin of kernels/opencl/reduce.cl: f32, f16 and
// bf16 inputs computed in float, every output rounded once; dtypes and ops are run-time values,
// so one compile serves every problem. Trees go through shared memory, never warp shuffles, so
// nothing depends on the warp width (32 lanes on NVIDIA, 64 on AMD Instinct).
//  - xr_reduce_groups: one block per output (reduced extents of XR_REDUCE_DEV_GROUP_MIN and
//    more, a grid-stride loop over outputs): each thread folds a strided share into a state,
//    the block merges the states; var/std and logsumexp take a second pass with the first one's
//    mean or maximum. Extremes merge by (value, position), NaN first: the first extreme wins.
//  - xr_reduce_items: one thread per output, both passes in order.
//  - xr_reduce_scan: one block per row in chunks of the block's width (a shared-memory
//    Hillis-Steele scan plus the carry of the chunks before).
//  - xr_reduce_int, xr_reduce_scan_int: integer and bool reductions (a block per output) and
//    scans in 64-bit integers, wrapping as the reference.
//  - xr_reduce_sort: one block per row, (ordered float bits << 32 | position) keys bitonic-sorted
//    in shared memory: a stable sort, NaN last, -0 equal to 0. Longer rows take topk's path when
//    k <= XR_REDUCE_DEV_TOPK_MAX: each thread keeps its k best keys, the candidates are sorted.
//    xr_reduce_sort_int: the same for integer and bool rows, (ordered 64-bit value, position)
//    pairs in two shared arrays.
// Integer and bool inputs with a float dtype= are loaded as floats by the float kernels.
#include "hip_compat.h"
#include "dtype_io.h"
#include "dtype_codes.h"
#include "dtype_dispatch.h"
#include "reduce_args.h"

#define XR_RED_THREADS XR_REDUCE_GPU_THREADS
#define XR_RED_INF __int_as_float(0x7f800000)
#define XR_RED_NAN __int_as_float(0x7fc00000)
#define XR_RED_KEY_PAD 0xffffffffffffffffull

typedef xr_reduce_dev_args_t xr_rp;

static __device__ __forceinline__ bool xr_red_isnan(float v) { return v != v; }

// Element i as the op sees it: widened, then rounded to dtype='s type when narrower.
static __device__ __forceinline__ float xr_red_load(const xr_rp &p, const unsigned char *in,
                                                    long long i) {
  float v = xr_load_as_float(in, p.in_dtype, i);
  if (p.round_dtype == XR_GPU_F16) v = xr_half_to_float(xr_float_to_half(v));
  else if (p.round_dtype == XR_GPU_BF16) v = xr_bf16_to_f32(xr_f32_to_bf16(v));
  return v;
}

// Output slot s's element i: float dtypes rounded once, bool, int64.
static __device__ __forceinline__ void xr_red_store(const xr_rp &p, int s, unsigned char *out,
                                                    long long i, float v) {
  if (p.out_dtype[s] == XR_GPU_BOOL) out[i] = v != 0.0f;
  else if (p.out_dtype[s] == XR_GPU_I64) ((long long *)out)[i] = (long long)v;
  else xr_store_float(out, p.out_dtype[s], i, v);
}

static __device__ __forceinline__ long long xr_red_outer(const xr_rp &p, const long *strides,
                                                         long long o) {
  long long off = 0;
  for (int d = (int)p.outer_rank - 1; d >= 0; d--) {
    off += (o % p.outer_shape[d]) * strides[d];
    o /= p.outer_shape[d];
  }
  return off;
}

static __device__ __forceinline__ long long xr_red_inner(const xr_rp &p, long long k) {
  long long off = 0;
  for (int d = (int)p.red_rank - 1; d >= 0; d--) {
    off += (k % p.red_shape[d]) * p.in_red[d];
    k /= p.red_shape[d];
  }
  return off;
}

// ---- states -----------------------------------------------------------------------------------

#define XR_RED_NANF 1
#define XR_RED_POSINF 2
#define XR_RED_SEEN 4

struct xr_red_state {
  float a;      // sum, product, squared deviations, exp-sum, norm's sum
  float m;      // extreme; logsumexp: the finite maximum
  long long n;  // nonzeros
  long long at; // the extreme's position
  int flags;
};

static __device__ __forceinline__ bool xr_red_extreme(const xr_rp &p) {
  return p.op == XR_REDUCE_DEV_MAX || p.op == XR_REDUCE_DEV_MIN ||
         (p.op == XR_REDUCE_DEV_NORM &&
          (p.norm == XR_REDUCE_DEV_NORM_INF || p.norm == XR_REDUCE_DEV_NORM_NEG_INF));
}

static __device__ __forceinline__ bool xr_red_wants_max(const xr_rp &p) {
  return p.op == XR_REDUCE_DEV_MAX || (p.op == XR_REDUCE_DEV_NORM && p.norm == XR_REDUCE_DEV_NORM_INF);
}

static __device__ __forceinline__ bool xr_red_two_pass(const xr_rp &p) {
  return p.op == XR_REDUCE_DEV_VAR || p.op == XR_REDUCE_DEV_STD || p.op == XR_REDUCE_DEV_LSE;
}

static __device__ xr_red_state xr_red_init(const xr_rp &p, int pass) {
  xr_red_state s;
  s.a = p.op == XR_REDUCE_DEV_PROD && pass == 0 ? 1.0f : 0.0f;
  s.m = xr_red_wants_max(p) || p.op == XR_REDUCE_DEV_LSE ? -XR_RED_INF : XR_RED_INF;
  s.n = 0;
  s.at = 0;
  s.flags = 0;
  return s;
}

// Folds element v at position k in. Pass 1 of var/std sums deviations from `shift` (the mean),
// pass 1 of logsumexp sums exp(v - shift) over the finite v.
static __device__ void xr_red_add(const xr_rp &p, xr_red_state &s, float v, long long k, int pass,
                                  float shift) {
  if (pass == 1) {
    if (p.op == XR_REDUCE_DEV_LSE) {
      if (fabsf(v) < XR_RED_INF) s.a += expf(v - shift);
    } else {
      const float d = v - shift;
      s.a += d * d;
    }
    return;
  }
  if (xr_red_extreme(p)) {
    const float x = p.op == XR_REDUCE_DEV_NORM ? fabsf(v) : v;
    if (s.flags & XR_RED_NANF) return;
    const bool max = xr_red_wants_max(p);
    if (!(s.flags & XR_RED_SEEN) || xr_red_isnan(x) || (max ? x > s.m : x < s.m)) {
      s.m = x;
      s.at = k;
      s.flags = XR_RED_SEEN | (xr_red_isnan(x) ? XR_RED_NANF : 0);
    }
    return;
  }
  switch (p.op) {
    case XR_REDUCE_DEV_NANSUM: s.a += xr_red_isnan(v) ? 0.0f : v; break;
    case XR_REDUCE_DEV_PROD: s.a *= v; break;
    case XR_REDUCE_DEV_ALL:
    case XR_REDUCE_DEV_ANY:
    case XR_REDUCE_DEV_COUNT: s.n += v != 0.0f; break;
    case XR_REDUCE_DEV_LSE:
      if (xr_red_isnan(v)) s.flags |= XR_RED_NANF;
      else if (v == XR_RED_INF) s.flags |= XR_RED_POSINF;
      else if (v > -XR_RED_INF) {
        s.flags |= XR_RED_SEEN;
        s.m = fmaxf(s.m, v);
      }
      break;
    case XR_REDUCE_DEV_NORM:
      if (p.norm == XR_REDUCE_DEV_NORM_0) s.n += v != 0.0f;
      else if (p.norm == XR_REDUCE_DEV_NORM_1) s.a += fabsf(v);
      else if (p.norm == XR_REDUCE_DEV_NORM_2) s.a += v * v;
      else s.a += powf(fabsf(v), p.p);
      break;
    default: s.a += v; break;  // sum, mean, var/std's first pass
  }
}

// b into s, in either order.
static __device__ void xr_red_merge(const xr_rp &p, xr_red_state &s, const xr_red_state &b,
                                    int pass) {
  if (pass == 0 && xr_red_extreme(p)) {
    if (!(b.flags & XR_RED_SEEN)) return;
    bool take;
    if (!(s.flags & XR_RED_SEEN)) take = true;
    else if ((s.flags & XR_RED_NANF) || (b.flags & XR_RED_NANF))
      take = (b.flags & XR_RED_NANF) && (!(s.flags & XR_RED_NANF) || b.at < s.at);
    else if (b.m == s.m) take = b.at < s.at;
    else take = xr_red_wants_max(p) ? b.m > s.m : b.m < s.m;
    if (take) s = b;
    return;
  }
  if (pass == 0 && p.op == XR_REDUCE_DEV_LSE) {
    s.flags |= b.flags;
    s.m = fmaxf(s.m, b.m);
    return;
  }
  if (pass == 0 && p.op == XR_REDUCE_DEV_PROD) s.a *= b.a;
  else s.a += b.a;
  s.n += b.n;
}

// The block's merged state, for every thread.
static __device__ xr_red_state xr_red_block_merge(const xr_rp &p, xr_red_state s, int pass) {
  __shared__ float sa[XR_RED_THREADS], sm[XR_RED_THREADS];
  __shared__ long long sn[XR_RED_THREADS], sat[XR_RED_THREADS];
  __shared__ int sf[XR_RED_THREADS];
  const int t = threadIdx.x;
  sa[t] = s.a, sm[t] = s.m, sn[t] = s.n, sat[t] = s.at, sf[t] = s.flags;
  __syncthreads();
  for (int w = XR_RED_THREADS / 2; w > 0; w >>= 1) {
    if (t < w) {
      xr_red_state x = {sa[t], sm[t], sn[t], sat[t], sf[t]};
      const xr_red_state y = {sa[t + w], sm[t + w], sn[t + w], sat[t + w], sf[t + w]};
      xr_red_merge(p, x, y, pass);
      sa[t] = x.a, sm[t] = x.m, sn[t] = x.n, sat[t] = x.at, sf[t] = x.flags;
    }
    __syncthreads();
  }
  const xr_red_state r = {sa[0], sm[0], sn[0], sat[0], sf[0]};
  __syncthreads();  // the arrays are reused
  return r;
}

// The second pass's shift: the mean (var/std) or the finite maximum (logsumexp).
static __device__ __forceinline__ float xr_red_shift(const xr_rp &p, const xr_red_state &s) {
  return p.op == XR_REDUCE_DEV_LSE ? s.m : s.a / (float)p.red_numel;
}

static __device__ void xr_red_finish(const xr_rp &p, const xr_red_state &s, const xr_red_state &s2,
                                     long long o, unsigned char *out0, unsigned char *out1) {
  const float n = (float)p.red_numel;
  float v = s.a;
  long long index = -1;
  switch (p.op) {
    case XR_REDUCE_DEV_MEAN: v = s.a / n; break;
    case XR_REDUCE_DEV_MAX:
    case XR_REDUCE_DEV_MIN:
      v = (s.flags & XR_RED_NANF) ? XR_RED_NAN : s.m;
      index = s.at;
      break;
    case XR_REDUCE_DEV_ALL: v = s.n == p.red_numel ? 1.0f : 0.0f; break;
    case XR_REDUCE_DEV_ANY: v = s.n > 0 ? 1.0f : 0.0f; break;
    case XR_REDUCE_DEV_LSE:
      v = (s.flags & XR_RED_NANF)     ? XR_RED_NAN
          : (s.flags & XR_RED_POSINF) ? XR_RED_INF
          : !(s.flags & XR_RED_SEEN)  ? -XR_RED_INF
                                      : logf(s2.a) + s.m;
      break;
    case XR_REDUCE_DEV_VAR:
    case XR_REDUCE_DEV_STD:
      v = s2.a / fmaxf(n - p.correction, 0.0f);
      if (p.op == XR_REDUCE_DEV_STD) v = sqrtf(v);
      if (p.has_out[1]) xr_red_store(p, 1, out1, p.out_offset[1] + xr_red_outer(p, p.out_outer[1], o), s.a / n);
      break;
    case XR_REDUCE_DEV_NORM:
      if (p.norm == XR_REDUCE_DEV_NORM_INF || p.norm == XR_REDUCE_DEV_NORM_NEG_INF)
        v = (s.flags & XR_RED_NANF) ? XR_RED_NAN : s.m;
      else if (p.norm == XR_REDUCE_DEV_NORM_0) v = (float)s.n;
      else if (p.norm == XR_REDUCE_DEV_NORM_2) v = sqrtf(s.a);
      else if (p.norm == XR_REDUCE_DEV_NORM_P) v = powf(s.a, 1.0f / p.p);
      break;
    default: break;
  }
  if (p.has_out[0]) {
    const long long at = p.out_offset[0] + xr_red_outer(p, p.out_outer[0], o);
    if (p.op == XR_REDUCE_DEV_COUNT) ((long long *)out0)[at] = s.n;
    else xr_red_store(p, 0, out0, at, v);
  }
  if (p.has_out[1] && index >= 0)
    ((long long *)out1)[p.out_offset[1] + xr_red_outer(p, p.out_outer[1], o)] = index;
}

#define XR_RED_ARGS \
  const unsigned char *in, unsigned char *out0, unsigned char *out1, xr_reduce_dev_args_t p

extern "C" __global__ void __launch_bounds__(XR_RED_THREADS) xr_reduce_groups(XR_RED_ARGS) {
  for (long long o = blockIdx.x; o < p.outer_numel; o += gridDim.x) {
    const long long base = p.in_offset + xr_red_outer(p, p.in_outer, o);
    xr_red_state s = xr_red_init(p, 0), s2 = xr_red_init(p, 1);
    for (long long k = threadIdx.x; k < p.red_numel; k += blockDim.x)
      xr_red_add(p, s, xr_red_load(p, in, base + xr_red_inner(p, k)), k, 0, 0.0f);
    s = xr_red_block_merge(p, s, 0);
    if (xr_red_two_pass(p)) {
      const float shift = xr_red_shift(p, s);
      for (long long k = threadIdx.x; k < p.red_numel; k += blockDim.x)
        xr_red_add(p, s2, xr_red_load(p, in, base + xr_red_inner(p, k)), k, 1, shift);
      s2 = xr_red_block_merge(p, s2, 1);
    }
    if (threadIdx.x == 0) xr_red_finish(p, s, s2, o, out0, out1);
  }
}

extern "C" __global__ void __launch_bounds__(XR_RED_THREADS) xr_reduce_items(XR_RED_ARGS) {
  for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < p.outer_numel;
       o += (long long)gridDim.x * blockDim.x) {
    const long long base = p.in_offset + xr_red_outer(p, p.in_outer, o);
    xr_red_state s = xr_red_init(p, 0), s2 = xr_red_init(p, 1);
    for (long long k = 0; k < p.red_numel; k++)
      xr_red_add(p, s, xr_red_load(p, in, base + xr_red_inner(p, k)), k, 0, 0.0f);
    if (xr_red_two_pass(p)) {
      const float shift = xr_red_shift(p, s);
      for (long long k = 0; k < p.red_numel; k++)
        xr_red_add(p, s2, xr_red_load(p, in, base + xr_red_inner(p, k)), k, 1, shift);
    }
    xr_red_finish(p, s, s2, o, out0, out1);
  }
}

// ---- scans ------------------------------------------------------------------------------------

extern "C" __global__ void __launch_bounds__(XR_RED_THREADS) xr_reduce_scan(XR_RED_ARGS) {
  __shared__ float tmp[XR_RED_THREADS];
  (void)out1;
  const int t = threadIdx.x;
  const bool prod = p.op == XR_REDUCE_DEV_CUMPROD;
  const float identity = prod ? 1.0f : 0.0f;
  const long long n = p.red_shape[0], is = p.in_red[0], os = p.out_dim_stride[0];
  for (long long o = blockIdx.x; o < p.outer_numel; o += gridDim.x) {
    const long long base = p.in_offset + xr_red_outer(p, p.in_outer, o);
    const long long at = p.out_offset[0] + xr_red_outer(p, p.out_outer[0], o);
    float carry = identity;
    for (long long j0 = 0; j0 < n; j0 += XR_RED_THREADS) {
      const long long j = j0 + t;
      tmp[t] = j < n ? xr_red_load(p, in, base + j * is) : identity;
      __syncthreads();
      for (int w = 1; w < XR_RED_THREADS; w <<= 1) {
        const float other = t >= w ? tmp[t - w] : identity;
        __syncthreads();
        tmp[t] = prod ? tmp[t] * other : tmp[t] + other;
        __syncthreads();
      }
      if (j < n) xr_red_store(p, 0, out0, at + j * os, prod ? carry * tmp[t] : carry + tmp[t]);
      carry = prod ? carry * tmp[XR_RED_THREADS - 1] : carry + tmp[XR_RED_THREADS - 1];
      __syncthreads();
    }
  }
}

// ---- integers ---------------------------------------------------------------------------------

// An integer converted to integer dtype dt before a sum (wrapping, as torch's cast); 0: none.
static __device__ __forceinline__ long long xr_red_wrap(int dt, long long v) {
  switch (dt) {
    case XR_GPU_I8: return (signed char)v;
    case XR_GPU_I16: return (short)v;
    case XR_GPU_I32: return (int)v;
    case XR_GPU_U8: return (unsigned char)v;
    case XR_GPU_BOOL: return v != 0;
    default: return v;
  }
}

static __device__ __forceinline__ int xr_red_int_size(int dt) {
  switch (dt) {
    case XR_GPU_I16: case XR_GPU_U16: return 2;
    case XR_GPU_I32: case XR_GPU_U32: return 4;
    case XR_GPU_I64: case XR_GPU_U64: return 8;
    default: return 1;
  }
}

static __device__ __forceinline__ long long xr_red_combine(bool prod, long long x, long long y) {
  return prod ? (long long)((unsigned long long)x * (unsigned long long)y)
              : (long long)((unsigned long long)x + (unsigned long long)y);
}

// Element i as an integer sum sees it: exact, then converted to the cast dtype.
static __device__ __forceinline__ long long xr_red_load_int(const xr_rp &p, const unsigned char *in,
                                                            long long i) {
  return xr_red_wrap(p.round_dtype, xr_load_as_long(in, p.in_dtype, i));
}

// sum / nansum / prod, max / min (values, first positions), all / any / count_nonzero of
// integer and bool tensors in 64-bit integers, wrapping: one block per output, a shared-memory
// tree; extremes merge by (value, position), so the first extreme wins.
extern "C" __global__ void __launch_bounds__(XR_RED_THREADS) xr_reduce_int(XR_RED_ARGS) {
  __shared__ long long sv[XR_RED_THREADS], sk[XR_RED_THREADS];
  const int t = threadIdx.x;
  const bool extreme = p.op == XR_REDUCE_DEV_MAX || p.op == XR_REDUCE_DEV_MIN;
  const bool max = p.op == XR_REDUCE_DEV_MAX, prod = p.op == XR_REDUCE_DEV_PROD;
  const bool count = p.op == XR_REDUCE_DEV_ALL || p.op == XR_REDUCE_DEV_ANY ||
                     p.op == XR_REDUCE_DEV_COUNT;
  for (long long o = blockIdx.x; o < p.outer_numel; o += gridDim.x) {
    const long long base = p.in_offset + xr_red_outer(p, p.in_outer, o);
    long long acc = prod ? 1 : 0, at = -1;  // at: the extreme's position, -1 before the first
    for (long long k = t; k < p.red_numel; k += XR_RED_THREADS) {
      const long long i = base + xr_red_inner(p, k);
      if (extreme) {
        const long long v = xr_load_as_long(in, p.in_dtype, i);
        if (at < 0 || (max ? v > acc : v < acc)) acc = v, at = k;
      } else if (count) {
        acc += xr_load_as_long(in, p.in_dtype, i) != 0;
      } else {
        acc = xr_red_combine(prod, acc, xr_red_load_int(p, in, i));
      }
    }
    sv[t] = acc, sk[t] = at;
    __syncthreads();
    for (int w = XR_RED_THREADS / 2; w > 0; w >>= 1) {
      if (t < w) {
        const long long v = sv[t + w], k = sk[t + w];
        if (!extreme) sv[t] = xr_red_combine(prod, sv[t], v);
        else if (k >= 0 &&
                 (sk[t] < 0 || (max ? v > sv[t] : v < sv[t]) || (v == sv[t] && k < sk[t])))
          sv[t] = v, sk[t] = k;
      }
      __syncthreads();
    }
    if (t == 0) {
      const long long r = p.op == XR_REDUCE_DEV_ALL ? sv[0] == p.red_numel
                          : p.op == XR_REDUCE_DEV_ANY ? sv[0] > 0
                                                      : sv[0];
      if (p.has_out[0])
        xr_store_long(out0, p.out_dtype[0], xr_red_int_size(p.out_dtype[0]),
                      p.out_offset[0] + xr_red_outer(p, p.out_outer[0], o), r);
      if (p.has_out[1])
        ((long long *)out1)[p.out_offset[1] + xr_red_outer(p, p.out_outer[1], o)] = sk[0];
    }
    __syncthreads();  // sv and sk are reused
  }
}

// cumsum / cumprod of integer and bool tensors: xr_reduce_scan in 64-bit integers.
extern "C" __global__ void __launch_bounds__(XR_RED_THREADS) xr_reduce_scan_int(XR_RED_ARGS) {
  __shared__ long long tmp[XR_RED_THREADS];
  (void)out1;
  const int t = threadIdx.x;
  const bool prod = p.op == XR_REDUCE_DEV_CUMPROD;
  const long long identity = prod ? 1 : 0;
  const long long n = p.red_shape[0], is = p.in_red[0], os = p.out_dim_stride[0];
  const int size = xr_red_int_size(p.out_dtype[0]);
  for (long long o = blockIdx.x; o < p.outer_numel; o += gridDim.x) {
    const long long base = p.in_offset + xr_red_outer(p, p.in_outer, o);
    const long long at = p.out_offset[0] + xr_red_outer(p, p.out_outer[0], o);
    long long carry = identity;
    for (long long j0 = 0; j0 < n; j0 += XR_RED_THREADS) {
      const long long j = j0 + t;
      tmp[t] = j < n ? xr_red_load_int(p, in, base + j * is) : identity;
      __syncthreads();
      for (int w = 1; w < XR_RED_THREADS; w <<= 1) {
        const long long other = t >= w ? tmp[t - w] : identity;
        __syncthreads();
        tmp[t] = xr_red_combine(prod, tmp[t], other);
        __syncthreads();
      }
      if (j < n)
        xr_store_long(out0, p.out_dtype[0], size, at + j * os, xr_red_combine(prod, carry, tmp[t]));
      carry = xr_red_combine(prod, carry, tmp[XR_RED_THREADS - 1]);
      __syncthreads();
    }
  }
}

// ---- sorts ------------------------------------------------------------------------------------

// (ordered bits of v) << 32 | position: unsigned order is the stable sort's.
static __device__ __forceinline__ unsigned long long xr_red_key(float v, long long position,
                                                                int descending) {
  unsigned int u;
  if (xr_red_isnan(v)) {
    u = 0xffffffffu;
  } else {
    u = v == 0.0f ? 0u : __float_as_uint(v);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
  if (descending) u = ~u;
  return ((unsigned long long)u << 32) | (unsigned long long)position;
}

// Sorts keys[0, n2) ascending (n2 a power of two); every thread of the block calls it.
static __device__ void xr_red_bitonic(unsigned long long *keys, long long n2) {
  for (long long size = 2; size <= n2; size <<= 1)
    for (long long stride = size >> 1; stride > 0; stride >>= 1) {
      for (long long j = threadIdx.x; j < n2; j += XR_RED_THREADS) {
        const long long partner = j ^ stride;
        if (partner > j) {
          const bool up = (j & size) == 0;
          const unsigned long long x = keys[j], y = keys[partner];
          if ((x > y) == up) keys[j] = y, keys[partner] = x;
        }
      }
      __syncthreads();
    }
}

static __device__ __forceinline__ long long xr_red_pow2(long long n) {
  long long q = 1;
  while (q < n) q <<= 1;
  return q;
}

extern "C" __global__ void __launch_bounds__(XR_RED_THREADS) xr_reduce_sort(XR_RED_ARGS) {
  __shared__ unsigned long long keys[XR_REDUCE_GPU_SORT_MAX];
  const long long t = threadIdx.x, n = p.red_shape[0], is = p.in_red[0];
  const bool wide = p.in_dtype == XR_GPU_F32;
  for (long long o = blockIdx.x; o < p.outer_numel; o += gridDim.x) {
    const long long base = p.in_offset + xr_red_outer(p, p.in_outer, o);
    long long n2;
    if (n <= XR_REDUCE_GPU_SORT_MAX) {
      n2 = xr_red_pow2(n);
      for (long long j = t; j < n2; j += XR_RED_THREADS)
        keys[j] = j < n ? xr_red_key(xr_load_as_float(in, p.in_dtype, base + j * is), j, p.descending)
                        : XR_RED_KEY_PAD;
    } else {  // topk, k <= XR_REDUCE_DEV_TOPK_MAX: each thread's k best, then all candidates
      unsigned long long best[XR_REDUCE_DEV_TOPK_MAX];
      const int k = (int)p.k;
      for (int i = 0; i < k; i++) best[i] = XR_RED_KEY_PAD;
      for (long long j = t; j < n; j += XR_RED_THREADS) {
        const unsigned long long key =
            xr_red_key(xr_load_as_float(in, p.in_dtype, base + j * is), j, p.descending);
        if (key >= best[k - 1]) continue;
        int i = k - 1;
        for (; i > 0 && best[i - 1] > key; i--) best[i] = best[i - 1];
        best[i] = key;
      }
      for (int i = 0; i < k; i++) keys[t * k + i] = best[i];
      n2 = xr_red_pow2((long long)XR_RED_THREADS * k);
      for (long long j = (long long)XR_RED_THREADS * k + t; j < n2; j += XR_RED_THREADS) keys[j] = XR_RED_KEY_PAD;
    }
    __syncthreads();
    xr_red_bitonic(keys, n2);
    const long long at0 = p.out_offset[0] + xr_red_outer(p, p.out_outer[0], o);
    const long long at1 = p.out_offset[1] + xr_red_outer(p, p.out_outer[1], o);
    for (long long j = t; j < p.k; j += XR_RED_THREADS) {
      const long long position = (long long)(keys[j] & 0xffffffffull);
      if (p.has_out[0]) {
        const long long from = base + position * is, to = at0 + j * p.out_dim_stride[0];
        if (wide) ((unsigned int *)out0)[to] = ((const unsigned int *)in)[from];
        else ((unsigned short *)out0)[to] = ((const unsigned short *)in)[from];
      }
      if (p.has_out[1]) ((long long *)out1)[at1 + j * p.out_dim_stride[1]] = position;
    }
    __syncthreads();
  }
}

// ---- integer sorts ----------------------------------------------------------------------------

// An integer in unsigned order (descending: inverted); ties fall to the positions.
static __device__ __forceinline__ unsigned long long xr_red_int_key(long long v, int descending) {
  const unsigned long long u = (unsigned long long)v ^ 0x8000000000000000ull;
  return descending ? ~u : u;
}

// (k1, p1) before (k2, p2)?
static __device__ __forceinline__ bool xr_red_pair_less(unsigned long long k1, unsigned int p1,
                                                        unsigned long long k2, unsigned int p2) {
  return k1 < k2 || (k1 == k2 && p1 < p2);
}

// Sorts the pairs [0, n2) ascending (n2 a power of two); every thread of the block calls it.
static __device__ void xr_red_bitonic_pairs(unsigned long long *keys, unsigned int *pos,
                                            long long n2) {
  for (long long size = 2; size <= n2; size <<= 1)
    for (long long stride = size >> 1; stride > 0; stride >>= 1) {
      for (long long j = threadIdx.x; j < n2; j += XR_RED_THREADS) {
        const long long partner = j ^ stride;
        if (partner > j) {
          const bool up = (j & size) == 0;
          const unsigned long long x = keys[j], y = keys[partner];
          const unsigned int px = pos[j], py = pos[partner];
          if (xr_red_pair_less(y, py, x, px) == up) {
            keys[j] = y, keys[partner] = x;
            pos[j] = py, pos[partner] = px;
          }
        }
      }
      __syncthreads();
    }
}

#define XR_RED_POS_PAD 0xffffffffu  // after every real pair: rows are shorter than 2^32

// sort / argsort / topk of integer and bool rows: xr_reduce_sort with (ordered 64-bit value,
// position) pairs in two shared arrays (48 KiB), the values copied back exactly.
extern "C" __global__ void __launch_bounds__(XR_RED_THREADS) xr_reduce_sort_int(XR_RED_ARGS) {
  __shared__ unsigned long long keys[XR_REDUCE_GPU_SORT_MAX];
  __shared__ unsigned int pos[XR_REDUCE_GPU_SORT_MAX];
  const long long t = threadIdx.x, n = p.red_shape[0], is = p.in_red[0];
  const int dt = p.in_dtype;
  for (long long o = blockIdx.x; o < p.outer_numel; o += gridDim.x) {
    const long long base = p.in_offset + xr_red_outer(p, p.in_outer, o);
    long long n2;
    if (n <= XR_REDUCE_GPU_SORT_MAX) {
      n2 = xr_red_pow2(n);
      for (long long j = t; j < n2; j += XR_RED_THREADS) {
        keys[j] = j < n ? xr_red_int_key(xr_load_as_long(in, dt, base + j * is), p.descending)
                        : XR_RED_KEY_PAD;
        pos[j] = j < n ? (unsigned int)j : XR_RED_POS_PAD;
      }
    } else {  // topk, k <= XR_REDUCE_DEV_TOPK_MAX: each thread's k best, then all candidates
      unsigned long long best[XR_REDUCE_DEV_TOPK_MAX];
      unsigned int best_pos[XR_REDUCE_DEV_TOPK_MAX];
      const int k = (int)p.k;
      for (int i = 0; i < k; i++) best[i] = XR_RED_KEY_PAD, best_pos[i] = XR_RED_POS_PAD;
      for (long long j = t; j < n; j += XR_RED_THREADS) {
        const unsigned long long key = xr_red_int_key(xr_load_as_long(in, dt, base + j * is), p.descending);
        if (!xr_red_pair_less(key, (unsigned int)j, best[k - 1], best_pos[k - 1])) continue;
        int i = k - 1;
        for (; i > 0 && xr_red_pair_less(key, (unsigned int)j, best[i - 1], best_pos[i - 1]); i--)
          best[i] = best[i - 1], best_pos[i] = best_pos[i - 1];
        best[i] = key, best_pos[i] = (unsigned int)j;
      }
      for (int i = 0; i < k; i++) keys[t * k + i] = best[i], pos[t * k + i] = best_pos[i];
      n2 = xr_red_pow2((long long)XR_RED_THREADS * k);
      for (long long j = (long long)XR_RED_THREADS * k + t; j < n2; j += XR_RED_THREADS)
        keys[j] = XR_RED_KEY_PAD, pos[j] = XR_RED_POS_PAD;
    }
    __syncthreads();
    xr_red_bitonic_pairs(keys, pos, n2);
    const long long at0 = p.out_offset[0] + xr_red_outer(p, p.out_outer[0], o);
    const long long at1 = p.out_offset[1] + xr_red_outer(p, p.out_outer[1], o);
    for (long long j = t; j < p.k; j += XR_RED_THREADS) {
      const long long position = (long long)pos[j];
      if (p.has_out[0])  // the values keep the input's dtype: stored back exactly
        xr_store_long(out0, dt, xr_red_int_size(dt), at0 + j * p.out_dim_stride[0],
                      xr_load_as_long(in, dt, base + position * is));
      if (p.has_out[1]) ((long long *)out1)[at1 + j * p.out_dim_stride[1]] = position;
    }
    __syncthreads();
  }
}
