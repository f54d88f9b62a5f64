// The elementwise family and aten::argmax on CUDA and HIP (kernels/elementwise_device.c
// launches these), the twins of kernels/opencl/elementwise.cl. One compiled source serves every
// op and dtype: the step's op, dtypes and path are run-time values of the parameter block
// (uniform across a launch), so a replay compiles this file once per device, not once per
// combination.
//  - xr_elementwise: a grid-stride loop over the step's elements; each decomposes its index
//    over the merged shape and reads up to three operands through their own strides (0 where
//    they broadcast); the pointwise table's formulas are one switch. Float results (f32, f16, bf16, fp8) are computed in float from inputs of
//    any dtype and rounded once; copies and gathers of one dtype move raw elements; fills store
//    the value's bits.
//  - xr_argmax: one block per output element; threads stride over the reduced positions, each
//    keeping its first maximum (NaN beats every number), then a tree in shared memory keeps the
//    best, earlier position on ties.
#include "hip_compat.h"
#include "dtype_io.h"
#include "dtype_codes.h"
#include "dtype_dispatch.h"
#include "elementwise_args.h"

static __device__ __forceinline__ float xr_gelu(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
}
static __device__ __forceinline__ float xr_gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
static __device__ __forceinline__ float xr_silu(float x) { return x / (1.0f + expf(-x)); }

// The pointwise table (kernels/pointwise_ops.h) in float, through the CUDA math library.
enum {
  XR_EW_GPU_TABLE_BEFORE = XR_EW_DEV_TABLE_FIRST - 1,
#define XR_PW(ID, ...) XR_EW_GPU_##ID,
#include "pointwise_ops.h"
#undef XR_PW
};
#define K(x) ((float)(x))
#define B(c) ((c) ? 1.0f : 0.0f)
#define XR_PW_MATH1(fn) \
  static __device__ __forceinline__ float pw_##fn(float x) { return fn##f(x); }
#define XR_PW_MATH2(fn) \
  static __device__ __forceinline__ float pw_##fn(float x, float y) { return fn##f(x, y); }
#define XR_PW_HELPER static __device__ __forceinline__
#define XR_PW_T float
#include "pointwise_ops.h"
#undef XR_PW_MATH1
#undef XR_PW_MATH2
#undef XR_PW_HELPER
#undef XR_PW_T
#define pw_erfinv erfinvf

static __device__ float xr_ew_table(int op, float a, float b, float c, const float *param) {
  const float p0 = param[0], p1 = param[1], p2 = param[2];
  switch (op) {
#define XR_PW(ID, NAME, KIND, OPERANDS, PARAMS, FLOPS, FLOAT_EXPR, INT_EXPR) \
  case XR_EW_GPU_##ID: return (FLOAT_EXPR);
#include "pointwise_ops.h"
#undef XR_PW
    default: return a;
  }
}

#define XR_PW_INT_HELPER static __device__ __forceinline__
#define XR_PW_I long long
#define XR_PW_U unsigned long long
#include "pointwise_ops.h"
#undef XR_PW_INT_HELPER
#undef XR_PW_I
#undef XR_PW_U

// The integer pipeline: the table's INT_EXPR, or the arithmetic ops, wrapping.
static __device__ long long xr_ew_int(const xr_ew_args_t &p, long long a, long long b,
                                      long long c) {
  const long long ip0 = p.iparam[0], ip1 = p.iparam[1];
  const bool boolean = p.compute_dtype == XR_GPU_BOOL;
  (void)ip0, (void)ip1, (void)boolean;
  switch (p.op) {
#define XR_PW(ID, NAME, KIND, OPERANDS, PARAMS, FLOPS, FLOAT_EXPR, INT_EXPR) \
  case XR_EW_GPU_##ID: return (long long)(INT_EXPR);
#include "pointwise_ops.h"
#undef XR_PW
    case XR_EW_DEV_ADD:
      return (long long)((unsigned long long)a + (unsigned long long)p.ialpha * (unsigned long long)b);
    case XR_EW_DEV_SUB:
      return (long long)((unsigned long long)a - (unsigned long long)p.ialpha * (unsigned long long)b);
    case XR_EW_DEV_MUL: return pw_imul(a, b);
    case XR_EW_DEV_DIV_TRUNC: return pw_idiv(a, b, 0);
    case XR_EW_DEV_DIV_FLOOR: return pw_idiv(a, b, 1);
    default: return a;  // COPY between integer dtypes; ARANGE's a is its value
  }
}

static __device__ __forceinline__ float xr_ew_apply(int op, float a, float b, float alpha) {
  switch (op) {
    case XR_EW_DEV_ADD: return a + alpha * b;
    case XR_EW_DEV_SUB: return a - alpha * b;
    case XR_EW_DEV_MUL: return a * b;
    case XR_EW_DEV_DIV: return a / b;
    case XR_EW_DEV_DIV_TRUNC: return truncf(a / b);
    case XR_EW_DEV_DIV_FLOOR: return floorf(a / b);
    case XR_EW_DEV_GELU: return xr_gelu(a);
    case XR_EW_DEV_GELU_TANH: return xr_gelu_tanh(a);
    case XR_EW_DEV_SILU: return xr_silu(a);
    case XR_EW_DEV_SILU_AND_MUL: return xr_silu(a) * b;
    case XR_EW_DEV_GELU_AND_MUL: return xr_gelu(a) * b;
    case XR_EW_DEV_GELU_TANH_AND_MUL: return xr_gelu_tanh(a) * b;
    default: return a;  // COPY with a conversion
  }
}

// Moves one element of `size` bytes (1, 2, 4 or 8) from src[from] to dst[to].
static __device__ __forceinline__ void xr_move_raw(unsigned char *dst, long long to,
                                                   const unsigned char *src, long long from,
                                                   int size) {
  switch (size) {
    case 1: dst[to] = src[from]; break;
    case 2: ((unsigned short *)dst)[to] = ((const unsigned short *)src)[from]; break;
    case 4: ((unsigned int *)dst)[to] = ((const unsigned int *)src)[from]; break;
    default:
      ((unsigned long long *)dst)[to] = ((const unsigned long long *)src)[from];
      break;
  }
}

static __device__ __forceinline__ void xr_store_pattern(unsigned char *dst, long long to,
                                                        long long pattern, int size) {
  switch (size) {
    case 1: dst[to] = (unsigned char)pattern; break;
    case 2: ((unsigned short *)dst)[to] = (unsigned short)pattern; break;
    case 4: ((unsigned int *)dst)[to] = (unsigned int)pattern; break;
    default: ((unsigned long long *)dst)[to] = (unsigned long long)pattern; break;
  }
}

extern "C" __global__ void __launch_bounds__(XR_EW_GPU_THREADS)
    xr_elementwise(unsigned char *out, const unsigned char *a, const unsigned char *b,
                   const unsigned char *c, xr_ew_args_t p) {
  const long long step = (long long)gridDim.x * blockDim.x;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < p.numel; e += step) {
    long long o = p.offset[0], ia = p.offset[1], ib = p.offset[2], ic = p.offset[3], rest = e;
    for (int d = p.rank - 1; d >= 0; d--) {
      const long long x = rest % p.shape[d];
      rest /= p.shape[d];
      o += x * p.strides[0][d];
      ia += x * p.strides[1][d];
      ib += x * p.strides[2][d];
      ic += x * p.strides[3][d];
    }
    if (p.path == XR_EW_PATH_FILL) {
      xr_store_pattern(out, o, p.pattern, p.elem_size);
    } else if (p.path == XR_EW_PATH_RAW) {
      if (p.op == XR_EW_DEV_GATHER) {  // indices are clamped into range, as every impl does
        long long index = p.b_dtype == XR_GPU_I32 ? (long long)((const int *)b)[ib]
                                                  : ((const long long *)b)[ib];
        index = index < 0 ? 0 : index >= p.gather_size ? p.gather_size - 1 : index;
        ia += index * p.gather_stride;
      }
      if (p.op == XR_EW_DEV_TRIL || p.op == XR_EW_DEV_TRIU) {  // e: row-major, as coalesced
        const long long col_minus_row = e % p.tri[1] - e / p.tri[1] % p.tri[0];
        if (p.op == XR_EW_DEV_TRIL ? col_minus_row > p.tri[2] : col_minus_row < p.tri[2]) {
          xr_store_pattern(out, o, 0, p.elem_size);
          continue;
        }
      }
      xr_move_raw(out, o, a, ia, p.elem_size);
    } else if (p.op == XR_EW_DEV_ARANGE || p.op == XR_EW_DEV_LINSPACE) {
      // e is the row-major index of the (contiguous) result
      if (p.path == XR_EW_PATH_INT) {
        xr_store_long(out, p.out_dtype, p.elem_size, o,
                      (long long)((unsigned long long)p.ivalue[0] +
                                  (unsigned long long)e * (unsigned long long)p.ialpha));
      } else if (p.op == XR_EW_DEV_ARANGE) {
        xr_store_float(out, p.out_dtype, o, p.a_value + (float)e * p.alpha);
      } else {
        const float n = (float)p.numel, i = (float)e;
        const float step = p.numel > 1 ? (p.c_value - p.a_value) / (n - 1.0f) : 0.0f;
        xr_store_float(out, p.out_dtype, o,
                       e < p.numel / 2 ? p.a_value + step * i : p.c_value - step * (n - 1.0f - i));
      }
    } else if (p.path == XR_EW_PATH_INT) {
      const long long la = p.a_kind == 2 ? p.ivalue[0] : xr_load_as_long(a, p.a_dtype, ia);
      const long long lb = p.b_kind == 1   ? xr_load_as_long(b, p.b_dtype, ib)
                           : p.b_kind == 2 ? p.ivalue[1]
                                           : 0;
      const long long lc = p.c_kind == 1   ? xr_load_as_long(c, p.c_dtype, ic)
                           : p.c_kind == 2 ? p.ivalue[2]
                                           : 0;
      xr_store_long(out, p.out_dtype, p.elem_size, o, xr_ew_int(p, la, lb, lc));
    } else {
      const float va = p.a_kind == 2 ? p.a_value : xr_load_as_float(a, p.a_dtype, ia);
      const float vb = p.b_kind == 1   ? xr_load_as_float(b, p.b_dtype, ib)
                       : p.b_kind == 2 ? p.scalar
                                       : 0.0f;
      if (p.op >= XR_EW_DEV_TABLE_FIRST) {
        const float vc = p.c_kind == 1   ? xr_load_as_float(c, p.c_dtype, ic)
                         : p.c_kind == 2 ? p.c_value
                                         : 0.0f;
        xr_store_float(out, p.out_dtype, o, xr_ew_table(p.op, va, vb, vc, p.param));
      } else {
        xr_store_float(out, p.out_dtype, o, xr_ew_apply(p.op, va, vb, p.alpha));
      }
    }
  }
}

// Whether value v at reduced position k beats the best so far (bv at bk): NaN first (the
// earlier NaN), then the larger value, then the earlier position.
static __device__ __forceinline__ bool xr_argmax_better(float v, long long k, float bv,
                                                        long long bk) {
  const bool v_nan = v != v, b_nan = bv != bv;
  if (v_nan || b_nan) return v_nan && (!b_nan || k < bk);
  return v > bv || (v == bv && k < bk);
}

extern "C" __global__ void __launch_bounds__(XR_ARGMAX_GPU_THREADS)
    xr_argmax(long long *out, const unsigned char *in, xr_argmax_args_t p) {
  __shared__ float best_value[XR_ARGMAX_GPU_THREADS];
  __shared__ long long best_index[XR_ARGMAX_GPU_THREADS];
  const int t = threadIdx.x;
  for (long long o = blockIdx.x; o < p.out_numel; o += gridDim.x) {
    long long base = p.offset, rest = o;
    for (int d = p.out_rank - 1; d >= 0; d--) {
      base += (rest % p.out_shape[d]) * p.in_strides[d];
      rest /= p.out_shape[d];
    }
    float best = 0.0f;
    long long best_k = -1;  // -1: this thread has seen no element
    for (long long k = t; k < p.red_numel; k += blockDim.x) {
      long long at = base, r = k;
      for (int d = p.red_rank - 1; d >= 0; d--) {
        at += (r % p.red_shape[d]) * p.red_strides[d];
        r /= p.red_shape[d];
      }
      const float v = xr_load_as_float(in, p.dtype, at);
      if (best_k < 0 || xr_argmax_better(v, k, best, best_k)) {
        best = v;
        best_k = k;
      }
    }
    best_value[t] = best;
    best_index[t] = best_k;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (t < s) {
        const long long k = best_index[t + s];
        if (k >= 0 && (best_index[t] < 0 ||
                       xr_argmax_better(best_value[t + s], k, best_value[t], best_index[t]))) {
          best_value[t] = best_value[t + s];
          best_index[t] = k;
        }
      }
      __syncthreads();
    }
    if (t == 0) out[o] = best_index[0];
    __syncthreads();  // the next output reuses the shared arrays
  }
}
