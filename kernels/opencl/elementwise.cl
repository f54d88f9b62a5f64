// The elementwise family on OpenCL, the twin of kernels/gpu/elementwise.cu with the same kernels
// and arguments (kernels/elementwise_args.h; host side: kernels/elementwise_device.c). One
// program per step shape of work, specialised at build time:
//   -DOP=<xr_ew_op_t> -DDT_OUT=<xr_dtype_t> -DDT_A=.. -DDT_B=.. -DDT_C=.. -DA_KIND=<XR_EW_KIND_*>
//   -DB_KIND=.. -DC_KIND=.. -DPATH=<XR_EW_PATH_*> -DRAW_T=<uchar..ulong>
//   -DDT_COMPUTE=<the table's compute dtype>
// The pointwise table's ops (kernels/pointwise_ops.h) take the float pipeline, or the integer
// one (64-bit, wrapping) where they compute in an integer dtype. They share one program per
// dtype combination (-DOP=XR_EW_DEV_TABLE_FIRST): the row is the block's `op`, a run-time
// switch uniform across the launch, so that a replay builds few programs.
// One work-item per output element over a 3-D range: x walks the innermost dimension, y the
// next one, z every outer dimension (decomposed with the shape). Offsets and strides are in
// elements of each operand's own dtype. bf16 travels as ushort bits, f16 through vload_half /
// vstore_half_rte, bf16 and fp8 through base/float_formats.h (saturating, ties to even).
#include "dtype_codes.h"
#include "elementwise_args.h"
#include "float_formats_cl.h"

// The pointwise table's rows, numbered as xr_ew_op_t numbers them (the host asserts it).
enum {
  EW_TABLE_BEFORE = XR_EW_DEV_TABLE_FIRST - 1,
#define XR_PW(ID, ...) EW_##ID,
#include "pointwise_ops.h"
#undef XR_PW
};

// f64 read as its bits (no cl_khr_fp64 needed); the mantissa is truncated to float's.
float f64_bits_to_float(ulong u) {
  uint sign = (uint)(u >> 63), e = (uint)(u >> 52) & 0x7ff;
  ulong m = u & 0xfffffffffffffUL;
  float f;
  if (e == 0x7ff) f = m ? NAN : INFINITY;
  else if (e == 0) f = 0.0f;
  else f = ldexp(1.0f + (float)(uint)(m >> 29) * 0x1p-23f, (int)e - 1023);
  return sign ? -f : f;
}

#define LOAD_AS_FLOAT(dt, p, i)                                                        \
  ((dt) == XR_F32 ? ((__global const float *)(p))[i]                                  \
   : (dt) == XR_F16 ? vload_half((i), (__global const half *)(p))                     \
   : (dt) == XR_BF16 ? xr_bf16_to_f32(((__global const ushort *)(p))[i])        \
   : (dt) == XR_F64 ? f64_bits_to_float(((__global const ulong *)(p))[i])             \
   : (dt) >= XR_F8E4M3FN && (dt) <= XR_F8E5M2FNUZ                                     \
       ? xr_fp8_decode_code(((__global const uchar *)(p))[i], (dt))                   \
   : (dt) == XR_I8 ? (float)((__global const char *)(p))[i]                           \
   : (dt) == XR_I16 ? (float)((__global const short *)(p))[i]                         \
   : (dt) == XR_I32 ? (float)((__global const int *)(p))[i]                           \
   : (dt) == XR_I64 ? (float)((__global const long *)(p))[i]                          \
   : (dt) == XR_U16 ? (float)((__global const ushort *)(p))[i]                        \
   : (dt) == XR_U32 ? (float)((__global const uint *)(p))[i]                          \
   : (dt) == XR_U64 ? (float)((__global const ulong *)(p))[i]                         \
   : (dt) == XR_BOOL ? (float)(((__global const uchar *)(p))[i] != 0)                 \
                     : (float)((__global const uchar *)(p))[i])

void store_float(__global uchar *p, long i, float v) {
  /* DT_OUT is a build-time constant: the compiler keeps one branch. */
  if (DT_OUT == XR_F32) ((__global float *)p)[i] = v;
  else if (DT_OUT == XR_BOOL) p[i] = v != 0.0f;
  else if (DT_OUT == XR_F16) vstore_half_rte(v, i, (__global half *)p);
  else if (DT_OUT == XR_BF16) ((__global ushort *)p)[i] = xr_f32_to_bf16(v);
  else p[i] = xr_fp8_encode_code(v, DT_OUT);
}

float gelu(float x) { return 0.5f * x * (1.0f + erf(x * 0.7071067811865476f)); }
float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanh(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}
float silu(float x) { return x / (1.0f + exp(-x)); }

// The table in float, through the built-in math functions.
#define K(x) ((float)(x))
#define B(c) ((c) ? 1.0f : 0.0f)
#define XR_PW_MATH1(f) float pw_##f(float x) { return f(x); }
#define XR_PW_MATH2(f) float pw_##f(float x, float y) { return f(x, y); }
#define XR_PW_HELPER
#define XR_PW_T float
#include "pointwise_ops.h"
#undef XR_PW_MATH1
#undef XR_PW_MATH2
#undef XR_PW_HELPER
#undef XR_PW_T
#define pw_erfinv pw_erfinv_approx

float apply_table(int op, float a, float b, float c, float p0, float p1, float p2) {
  switch (op) {
#define XR_PW(ID, NAME, KIND, OPERANDS, PARAMS, FLOPS, FLOAT_EXPR, INT_EXPR) \
  case EW_##ID: return (FLOAT_EXPR);
#include "pointwise_ops.h"
#undef XR_PW
    default: return a;
  }
}

// The integer pipeline: operands loaded as long, the table's INT_EXPR or the arithmetic
// ops wrapping in two's complement, stored in the output dtype's width.
#define XR_PW_INT_HELPER
#define XR_PW_I long
#define XR_PW_U ulong
#include "pointwise_ops.h"
#undef XR_PW_INT_HELPER
#undef XR_PW_I
#undef XR_PW_U

#define LOAD_AS_LONG(dt, p, i)                                              \
  ((dt) == XR_I64 ? ((__global const long *)(p))[i]                        \
   : (dt) == XR_I32 ? (long)((__global const int *)(p))[i]                 \
   : (dt) == XR_I16 ? (long)((__global const short *)(p))[i]               \
   : (dt) == XR_I8 ? (long)((__global const char *)(p))[i]                 \
   : (dt) == XR_U64 ? (long)((__global const ulong *)(p))[i]               \
   : (dt) == XR_U32 ? (long)((__global const uint *)(p))[i]                \
   : (dt) == XR_U16 ? (long)((__global const ushort *)(p))[i]              \
   : (dt) == XR_BOOL ? (long)(((__global const uchar *)(p))[i] != 0)       \
                     : (long)((__global const uchar *)(p))[i])

// The low bytes of v in the output's width (RAW_T), or a bool.
void store_long(__global uchar *p, long i, long v) {
  if (DT_OUT == XR_BOOL) p[i] = v != 0;
  else ((__global RAW_T *)p)[i] = (RAW_T)v;
}

long apply_int(int op, long a, long b, long c, long ip0, long ip1, long alpha) {
#if OP >= XR_EW_DEV_TABLE_FIRST
  const bool boolean = DT_COMPUTE == XR_BOOL;
  switch (op) {
#define XR_PW(ID, NAME, KIND, OPERANDS, PARAMS, FLOPS, FLOAT_EXPR, INT_EXPR) \
  case EW_##ID: return (long)(INT_EXPR);
#include "pointwise_ops.h"
#undef XR_PW
    default: return a;
  }
#elif OP == XR_EW_DEV_ADD
  return (long)((ulong)a + (ulong)alpha * (ulong)b);
#elif OP == XR_EW_DEV_SUB
  return (long)((ulong)a - (ulong)alpha * (ulong)b);
#elif OP == XR_EW_DEV_MUL
  return pw_imul(a, b);
#elif OP == XR_EW_DEV_DIV_TRUNC
  return pw_idiv(a, b, 0);
#elif OP == XR_EW_DEV_DIV_FLOOR
  return pw_idiv(a, b, 1);
#else
  return a;  // COPY between integer dtypes
#endif
}

float apply(float a, float b, float alpha) {
#if OP == XR_EW_DEV_ADD
  return a + alpha * b;
#elif OP == XR_EW_DEV_SUB
  return a - alpha * b;
#elif OP == XR_EW_DEV_MUL
  return a * b;
#elif OP == XR_EW_DEV_DIV
  return a / b;
#elif OP == XR_EW_DEV_DIV_TRUNC
  return trunc(a / b);
#elif OP == XR_EW_DEV_DIV_FLOOR
  return floor(a / b);
#elif OP == XR_EW_DEV_GELU
  return gelu(a);
#elif OP == XR_EW_DEV_GELU_TANH
  return gelu_tanh(a);
#elif OP == XR_EW_DEV_SILU
  return silu(a);
#elif OP == XR_EW_DEV_SILU_AND_MUL
  return silu(a) * b;
#elif OP == XR_EW_DEV_GELU_AND_MUL
  return gelu(a) * b;
#elif OP == XR_EW_DEV_GELU_TANH_AND_MUL
  return gelu_tanh(a) * b;
#else
  return a;  // COPY with conversion
#endif
}

__kernel void xr_elementwise(__global uchar *out, __global const uchar *a, __global const uchar *b,
                             __global const uchar *c, const xr_ew_args_t g) {
  int r = g.rank;
  long i0 = get_global_id(0);
  if (i0 >= g.shape[r - 1]) return;
  long i1 = get_global_id(1), z = get_global_id(2);
#if OP == XR_EW_DEV_TRIL || OP == XR_EW_DEV_TRIU
  // the element's row-major index, its column and row in its matrix
  long e = (z * g.shape[r - 2] + i1) * g.shape[r - 1] + i0;
  long col_minus_row = e % g.tri[1] - e / g.tri[1] % g.tri[0];
  bool keep = OP == XR_EW_DEV_TRIL ? col_minus_row <= g.tri[2] : col_minus_row >= g.tri[2];
#endif
  long o = g.offset[0] + i0 * g.strides[0][r - 1] + i1 * g.strides[0][r - 2];
  long ia = g.offset[1] + i0 * g.strides[1][r - 1] + i1 * g.strides[1][r - 2];
  long ib = g.offset[2] + i0 * g.strides[2][r - 1] + i1 * g.strides[2][r - 2];
  long ic = g.offset[3] + i0 * g.strides[3][r - 1] + i1 * g.strides[3][r - 2];
  for (int d = r - 3; d >= 0; d--) {
    long x = z % g.shape[d];
    z /= g.shape[d];
    o += x * g.strides[0][d];
    ia += x * g.strides[1][d];
    ib += x * g.strides[2][d];
    ic += x * g.strides[3][d];
  }
#if PATH == XR_EW_PATH_FILL
  ((__global RAW_T *)out)[o] = (RAW_T)g.pattern;
#elif PATH == XR_EW_PATH_RAW
#if OP == XR_EW_DEV_GATHER
  long idx = DT_B == XR_I32 ? (long)((__global const int *)b)[ib] : ((__global const long *)b)[ib];
  idx = clamp(idx, 0L, g.gather_size - 1);
  ia += idx * g.gather_stride;
#endif
#if OP == XR_EW_DEV_TRIL || OP == XR_EW_DEV_TRIU
  ((__global RAW_T *)out)[o] = keep ? ((__global const RAW_T *)a)[ia] : (RAW_T)0;
#else
  ((__global RAW_T *)out)[o] = ((__global const RAW_T *)a)[ia];
#endif
#elif PATH == XR_EW_PATH_INT && OP == XR_EW_DEV_ARANGE
  // the result is contiguous: its row-major index is its distance from the first element
  store_long(out, o, (long)((ulong)g.ivalue[0] + (ulong)(o - g.offset[0]) * (ulong)g.ialpha));
#elif PATH == XR_EW_PATH_INT
#if A_KIND == XR_EW_KIND_SCALAR
  long la = g.ivalue[0];
#else
  long la = LOAD_AS_LONG(DT_A, a, ia);
#endif
#if B_KIND == XR_EW_KIND_TENSOR
  long lb = LOAD_AS_LONG(DT_B, b, ib);
#elif B_KIND == XR_EW_KIND_SCALAR
  long lb = g.ivalue[1];
#else
  long lb = 0;
#endif
#if C_KIND == XR_EW_KIND_TENSOR
  long lc = LOAD_AS_LONG(DT_C, c, ic);
#elif C_KIND == XR_EW_KIND_SCALAR
  long lc = g.ivalue[2];
#else
  long lc = 0;
#endif
  store_long(out, o, apply_int(g.op, la, lb, lc, g.iparam[0], g.iparam[1], g.ialpha));
#elif OP == XR_EW_DEV_ARANGE || OP == XR_EW_DEV_LINSPACE
  float i = (float)(o - g.offset[0]);  // contiguous result: the row-major index
#if OP == XR_EW_DEV_ARANGE
  store_float(out, o, g.a_value + i * g.alpha);
#else
  float n = (float)g.numel, step = n > 1.0f ? (g.c_value - g.a_value) / (n - 1.0f) : 0.0f;
  store_float(out, o, i < (float)(g.numel / 2) ? g.a_value + step * i : g.c_value - step * (n - 1.0f - i));
#endif
#else
#if A_KIND == XR_EW_KIND_SCALAR
  float va = g.a_value;
#else
  float va = LOAD_AS_FLOAT(DT_A, a, ia);
#endif
#if B_KIND == XR_EW_KIND_TENSOR
  float vb = LOAD_AS_FLOAT(DT_B, b, ib);
#elif B_KIND == XR_EW_KIND_SCALAR
  float vb = g.scalar;
#else
  float vb = 0.0f;
#endif
#if C_KIND == XR_EW_KIND_TENSOR
  float vc = LOAD_AS_FLOAT(DT_C, c, ic);
#elif C_KIND == XR_EW_KIND_SCALAR
  float vc = g.c_value;
#else
  float vc = 0.0f;
#endif
#if OP >= XR_EW_DEV_TABLE_FIRST
  store_float(out, o, apply_table(g.op, va, vb, vc, g.param[0], g.param[1], g.param[2]));
#else
  store_float(out, o, apply(va, vb, g.alpha));
#endif
#endif
}

// aten::argmax: one work-item per output element scans its reduced positions (row-major over
// the reduced dims) for the first maximum; NaN beats every number. Built with -DDT_A for the
// input dtype.

__kernel void xr_argmax(__global long *out, __global const uchar *in, const xr_argmax_args_t g) {
  long o = get_global_id(0);
  if (o >= g.out_numel) return;
  long base = g.offset, rest = o;
  for (int d = g.out_rank - 1; d >= 0; d--) {
    base += (rest % g.out_shape[d]) * g.in_strides[d];
    rest /= g.out_shape[d];
  }
  float best = 0.0f;
  long best_k = 0;
  for (long k = 0; k < g.red_numel; k++) {
    long at = base;
    if (g.red_rank == 1) {
      at += k * g.red_strides[0];
    } else {
      long r = k;
      for (int d = g.red_rank - 1; d >= 0; d--) {
        at += (r % g.red_shape[d]) * g.red_strides[d];
        r /= g.red_shape[d];
      }
    }
    float v = LOAD_AS_FLOAT(DT_A, in, at);
    if (k == 0 || (!isnan(best) && (isnan(v) || v > best))) {
      best = v;
      best_k = k;
    }
  }
  out[o] = best_k;
}
