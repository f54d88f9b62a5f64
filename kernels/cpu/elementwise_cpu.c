/* cpu.elementwise: the elementwise family on the host thread pool.
 *
 * Each step is coalesced (dims merged where every operand allows), then split into work items
 * of one block of one innermost row. Arithmetic runs as a pipeline over blocks of BLOCK
 * elements: load each operand into a float buffer (converting its dtype), apply the op, convert
 * and store. Every stage is a loop over a compile-time block size with restrict pointers and no
 * calls, so the compiler vectorises it at -O2 (exp, tanh and erf are branch-free polynomial
 * approximations for that reason; accurate to a few float ulps). Same-dtype copies and gathers
 * move raw elements (memcpy for contiguous rows), transposed copies tile by tile; fills store a
 * precomputed bit pattern. Outputs of XR_CPU_STREAM_MIN_BYTES and more are written with
 * streaming stores.
 *
 * Where the CPU has AVX-512 BF16, rows with contiguous f32 / bf16 operands go to
 * kernels/cpu/elementwise_avx512.c instead (one pass per 16 or 32 elements, no block buffers).
 *
 * Supported: float results (f32, f16, bf16, fp8), and the pointwise table's bool results, from
 * inputs of any dtype where float computes them exactly (xr_ew_float_pipeline); copies, gathers
 * and fills of any dtype. f64 and integer arithmetic, and sequences, run on ref.elementwise. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/avx512.h"
#include "kernels/cpu/elementwise_avx512.h"
#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/dtype.h"
#include "kernels/elementwise.h"
#include "kernels/family.h"

enum { BLOCK = XR_EW_CPU_BLOCK, RAW_BLOCK = 16384, MIN_ELEMENTS_PER_CHUNK = 32768 };

/* -std=c11 turns off the contraction of a * b + c into one fused multiply-add; the polynomials
 * here are written for it (a third faster, and at least as accurate). The conversions stay
 * bit-exact: their products are exact scalings by powers of two. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#endif

/* Runs `body` (using i) for i in [0, n), with a constant trip count for full blocks so that the
 * compiler's cheap vectoriser takes the loop. */
#define FOR_N(n, ...)                                          \
  do {                                                         \
    if ((n) == BLOCK) {                                        \
      for (int64_t i = 0; i < BLOCK; i++) { __VA_ARGS__; }     \
    } else {                                                   \
      for (int64_t i = 0; i < (n); i++) { __VA_ARGS__; }       \
    }                                                          \
  } while (0)

/* ------------------------------------------------------------------------------------------ */
/* conversions (base/float_formats.h's, bit-exact and branch-free)                             */

/* Decoding tables for the four fp8 dtypes, built once. */
static float fp8_tables[4][256];
static pthread_once_t fp8_once = PTHREAD_ONCE_INIT;

static void build_fp8_tables(void) {
  static const xr_dtype_t kinds[4] = {XR_DTYPE_F8E4M3FN, XR_DTYPE_F8E5M2, XR_DTYPE_F8E4M3FNUZ,
                                      XR_DTYPE_F8E5M2FNUZ};
  for (int k = 0; k < 4; k++)
    for (int v = 0; v < 256; v++) fp8_tables[k][v] = xr_fp8_to_f32((uint8_t)v, kinds[k]);
}

static const float *fp8_table(xr_dtype_t d) {
  pthread_once(&fp8_once, build_fp8_tables);
  switch (d) {
    case XR_DTYPE_F8E4M3FN: return fp8_tables[0];
    case XR_DTYPE_F8E5M2: return fp8_tables[1];
    case XR_DTYPE_F8E4M3FNUZ: return fp8_tables[2];
    default: return fp8_tables[3];
  }
}

XR_CPU_CLONES void xr_ew_cpu_load(float *restrict dst, const char *src, xr_dtype_t dt, int64_t stride,
                    int64_t n) {
  switch (dt) {
    case XR_DTYPE_F32: {
      const float *restrict s = (const float *)src;
      if (stride == 1) FOR_N(n, dst[i] = s[i]);
      else FOR_N(n, dst[i] = s[i * stride]);
      return;
    }
    case XR_DTYPE_BF16: {
      const uint16_t *restrict s = (const uint16_t *)src;
      if (stride == 1) FOR_N(n, dst[i] = xr_bits_to_f32((uint32_t)s[i] << 16));
      else FOR_N(n, dst[i] = xr_bits_to_f32((uint32_t)s[i * stride] << 16));
      return;
    }
    case XR_DTYPE_F16: {
      const uint16_t *restrict s = (const uint16_t *)src;
      if (stride == 1) FOR_N(n, dst[i] = xr_f16_to_f32(s[i]));
      else FOR_N(n, dst[i] = xr_f16_to_f32(s[i * stride]));
      return;
    }
    case XR_DTYPE_F64: {
      const double *restrict s = (const double *)src;
      FOR_N(n, dst[i] = (float)s[i * stride]);
      return;
    }
    case XR_DTYPE_BOOL: { /* masks */
      const uint8_t *restrict s = (const uint8_t *)src;
      if (stride == 1) FOR_N(n, dst[i] = s[i] != 0);
      else FOR_N(n, dst[i] = s[i * stride] != 0);
      return;
    }
    case XR_DTYPE_U8: {
      const uint8_t *restrict s = (const uint8_t *)src;
      if (stride == 1) FOR_N(n, dst[i] = s[i]);
      else FOR_N(n, dst[i] = s[i * stride]);
      return;
    }
    case XR_DTYPE_I32: {
      const int32_t *restrict s = (const int32_t *)src;
      if (stride == 1) FOR_N(n, dst[i] = (float)s[i]);
      else FOR_N(n, dst[i] = (float)s[i * stride]);
      return;
    }
    case XR_DTYPE_I64: {
      const int64_t *restrict s = (const int64_t *)src;
      if (stride == 1) FOR_N(n, dst[i] = (float)s[i]);
      else FOR_N(n, dst[i] = (float)s[i * stride]);
      return;
    }
    default:
      if (xr_dtype_is_fp8(dt)) {
        const float *table = fp8_table(dt);
        const uint8_t *restrict s = (const uint8_t *)src;
        for (int64_t i = 0; i < n; i++) dst[i] = table[s[i * stride]];
      } else {
        for (int64_t i = 0; i < n; i++) dst[i] = (float)xr_load_element(src, dt, i * stride);
      }
      return;
  }
}

XR_CPU_CLONES static void store_block(char *dst, xr_dtype_t dt, int64_t stride, const float *restrict v,
                        int64_t n) {
  switch (dt) {
    case XR_DTYPE_F32: {
      float *restrict d = (float *)dst;
      if (stride == 1) FOR_N(n, d[i] = v[i]);
      else FOR_N(n, d[i * stride] = v[i]);
      return;
    }
    case XR_DTYPE_BOOL: { /* the table's truth values */
      uint8_t *restrict d = (uint8_t *)dst;
      if (stride == 1) FOR_N(n, d[i] = v[i] != 0.0f);
      else FOR_N(n, d[i * stride] = v[i] != 0.0f);
      return;
    }
    case XR_DTYPE_BF16: {
      uint16_t *restrict d = (uint16_t *)dst;
      if (stride == 1) FOR_N(n, d[i] = xr_f32_to_bf16(v[i]));
      else FOR_N(n, d[i * stride] = xr_f32_to_bf16(v[i]));
      return;
    }
    case XR_DTYPE_F16: {
      uint16_t *restrict d = (uint16_t *)dst;
      if (stride == 1) FOR_N(n, d[i] = xr_f32_to_f16(v[i]));
      else FOR_N(n, d[i * stride] = xr_f32_to_f16(v[i]));
      return;
    }
    default: { /* fp8: supports() admits no other float-pipeline output */
      const xr_fp8_format_t F = xr_fp8_format(dt);
      uint8_t *restrict d = (uint8_t *)dst;
      if (stride == 1) FOR_N(n, d[i] = xr_fp8_encode(v[i], &F));
      else FOR_N(n, d[i * stride] = xr_fp8_encode(v[i], &F));
      return;
    }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* math: branch-free float approximations                                                      */

/* Forced inline: a call left in a block loop (GCC's inliner gives up on the larger activations)
 * keeps the loop from vectorising. */
#define MATH static inline __attribute__((always_inline))

MATH float exp_approx(float x) {
  x = xr_select_f(xr_mask_if(x < -87.0f), -87.0f, x); /* NaN stays NaN */
  x = xr_select_f(xr_mask_if(x > 88.0f), 88.0f, x);
  /* x = n ln2 + r, |r| <= ln2/2, e^r by XR_EXP_MINIMAX; n read back from the float's low bits (no
   * float->int cast, which would be undefined for NaN). */
  float t = x * 1.44269504088896341f + 12582912.0f;
  float n = t - 12582912.0f;
  float r = x - n * 0.693145751953125f - n * 1.42860682030941723e-6f;
  float p = XR_EXP_MINIMAX_0 + r * (XR_EXP_MINIMAX_1 + r * (XR_EXP_MINIMAX_2 + r * (XR_EXP_MINIMAX_3 +
                      r * (XR_EXP_MINIMAX_4 + r * XR_EXP_MINIMAX_5))));
  uint32_t scale = (xr_f32_to_bits(t) - 0x4b400000u + 127u) << 23;
  return p * xr_bits_to_f32(scale);
}

/* Divisions stay: the divider runs beside the FMA ports, which these loops keep busy (a
 * Newton-Raphson reciprocal measured slower). */
MATH float silu_approx(float x) { return x / (1.0f + exp_approx(-x)); }

/* 0.5 x (1 + tanh u) = x / (1 + e^-2u), u = sqrt(2/pi) (x + 0.044715 x^3) */
MATH float gelu_tanh_approx(float x) {
  float two_u = x * (1.5957691216057308f + 0.0713548162726f * x * x);
  return x / (1.0f + exp_approx(-two_u));
}

/* 1 + erf(x / sqrt 2) through erfc's rational approximation (Abramowitz & Stegun 7.1.26,
 * |error| <= 1.5e-7), which keeps the relative accuracy of the negative tail. */
MATH float gelu_approx(float x) {
  float z = fabsf(x) * 0.7071067811865476f;
  float t = 1.0f / (1.0f + 0.3275911f * z);
  float y = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f +
                t * (-1.453152027f + t * 1.061405429f)))) * exp_approx(-z * z);
  return 0.5f * x * xr_select_f(xr_mask_if(x >= 0), 2.0f - y, y);
}

/* The pointwise table (kernels/pointwise_ops.h) in float: exp through exp_approx (it
 * vectorises; every row built on it follows), the rest through libm, which GCC inlines where the
 * CPU has an instruction (sqrt, floor, rint, fabs ...: the library builds with -fno-math-errno). */
#define K(x) ((float)(x))
#define B(c) ((c) ? 1.0f : 0.0f)
#define XR_PW_INF __builtin_inff()
#define expf exp_approx
#define XR_PW_MATH1(fn) MATH float pw_##fn(float x) { return fn##f(x); }
#define XR_PW_MATH2(fn) MATH float pw_##fn(float x, float y) { return fn##f(x, y); }
#define XR_PW_HELPER MATH
#define XR_PW_T float
#include "kernels/pointwise_ops.h"
#undef XR_PW_MATH1
#undef XR_PW_MATH2
#undef XR_PW_HELPER
#undef XR_PW_T
#undef expf
#define pw_erfinv pw_erfinv_approx

XR_CPU_CLONES static void table_block(const xr_ew_step_t *s, float *restrict r,
                                      const float *restrict A, const float *restrict B_,
                                      const float *restrict C, int64_t n) {
  const float p0 = (float)s->param[0], p1 = (float)s->param[1], p2 = (float)s->param[2];
  (void)p0, (void)p1, (void)p2;
  switch (s->op) {
#define XR_PW(ID, NAME, KIND, OPERANDS, PARAMS, FLOPS, FLOAT_EXPR, INT_EXPR)   \
  case XR_EW_##ID:                                                             \
    FOR_N(n, {                                                                 \
      __attribute__((unused)) const float a = A[i], b = B_[i], c = C[i];       \
      r[i] = (FLOAT_EXPR);                                                     \
    });                                                                        \
    return;
#include "kernels/pointwise_ops.h"
#undef XR_PW
    default: return;
  }
}
#undef K
#undef B
#undef XR_PW_INF
#undef pw_erfinv

XR_CPU_CLONES static void compute_block(const xr_ew_step_t *s, float *restrict r, const float *restrict a,
                          const float *restrict b, int64_t n) {
  float alpha = (float)s->alpha;
  switch (s->op) {
    case XR_EW_ADD: FOR_N(n, r[i] = a[i] + alpha * b[i]); return;
    case XR_EW_SUB: FOR_N(n, r[i] = a[i] - alpha * b[i]); return;
    case XR_EW_MUL: FOR_N(n, r[i] = a[i] * b[i]); return;
    case XR_EW_DIV: FOR_N(n, r[i] = a[i] / b[i]); return;
    case XR_EW_DIV_TRUNC: for (int64_t i = 0; i < n; i++) r[i] = truncf(a[i] / b[i]); return;
    case XR_EW_DIV_FLOOR: for (int64_t i = 0; i < n; i++) r[i] = floorf(a[i] / b[i]); return;
    case XR_EW_GELU: FOR_N(n, r[i] = gelu_approx(a[i])); return;
    case XR_EW_GELU_TANH: FOR_N(n, r[i] = gelu_tanh_approx(a[i])); return;
    case XR_EW_SILU: FOR_N(n, r[i] = silu_approx(a[i])); return;
    case XR_EW_SILU_AND_MUL: FOR_N(n, r[i] = silu_approx(a[i]) * b[i]); return;
    case XR_EW_GELU_AND_MUL: FOR_N(n, r[i] = gelu_approx(a[i]) * b[i]); return;
    case XR_EW_GELU_TANH_AND_MUL: FOR_N(n, r[i] = gelu_tanh_approx(a[i]) * b[i]); return;
    default: return; /* COPY stores its loaded block directly */
  }
}

/* ------------------------------------------------------------------------------------------ */
/* raw moves: same-dtype copies and gathers, fills                                             */

static void raw_copy(char *dst, int64_t ds, const char *src, int64_t ss, size_t esize, int64_t n) {
  if (ds == 1 && ss == 1) {
    memcpy(dst, src, (size_t)n * esize);
    return;
  }
  switch (esize) {
    case 1: for (int64_t i = 0; i < n; i++) dst[i * ds] = src[i * ss]; return;
    case 2: {
      uint16_t *d = (uint16_t *)dst;
      const uint16_t *s = (const uint16_t *)src;
      for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];
      return;
    }
    case 4: {
      uint32_t *d = (uint32_t *)dst;
      const uint32_t *s = (const uint32_t *)src;
      for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];
      return;
    }
    default: {
      uint64_t *d = (uint64_t *)dst;
      const uint64_t *s = (const uint64_t *)src;
      for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];
      return;
    }
  }
}

static void raw_fill(char *dst, int64_t ds, const uint8_t *pattern, size_t esize, int64_t n) {
  switch (esize) {
    case 1:
      if (ds == 1) memset(dst, pattern[0], (size_t)n);
      else for (int64_t i = 0; i < n; i++) dst[i * ds] = (char)pattern[0];
      return;
    case 2: {
      uint16_t v, *d = (uint16_t *)dst;
      memcpy(&v, pattern, 2);
      if (ds == 1) for (int64_t i = 0; i < n; i++) d[i] = v;
      else for (int64_t i = 0; i < n; i++) d[i * ds] = v;
      return;
    }
    case 4: {
      uint32_t v, *d = (uint32_t *)dst;
      memcpy(&v, pattern, 4);
      if (ds == 1) for (int64_t i = 0; i < n; i++) d[i] = v;
      else for (int64_t i = 0; i < n; i++) d[i * ds] = v;
      return;
    }
    default: {
      uint64_t v, *d = (uint64_t *)dst;
      memcpy(&v, pattern, 8);
      if (ds == 1) for (int64_t i = 0; i < n; i++) d[i] = v;
      else for (int64_t i = 0; i < n; i++) d[i * ds] = v;
      return;
    }
  }
}

/* raw_fill of a contiguous run with streaming stores: plain stores up to a 16-byte boundary,
 * then 16 bytes of the repeated pattern at a time (the boundary falls on an element, so the
 * vector's phase is that of the pattern). */
static void stream_fill(char *dst, const uint8_t *pattern, size_t esize, int64_t n) {
  size_t head = (size_t)(-(uintptr_t)dst & 15u) / esize;
  if ((uintptr_t)dst % esize || head >= (size_t)n) {
    raw_fill(dst, 1, pattern, esize, n);
    return;
  }
  raw_fill(dst, 1, pattern, esize, (int64_t)head);
  uint8_t line[16];
  for (size_t i = 0; i < sizeof line; i += esize) memcpy(line + i, pattern, esize);
  size_t bytes = ((size_t)n - head) * esize;
  char *d = dst + head * esize;
  size_t body = bytes & ~(size_t)15;
  for (size_t i = 0; i < body; i += sizeof line) xr_cpu_stream_copy(d + i, line, sizeof line);
  raw_fill(d + body, 1, pattern, esize, (int64_t)((bytes - body) / esize));
}

/* Transposed copies (the output contiguous along the last dim, the source along the one
 * before) go tile by tile: a TILE x TILE tile is read along the source's contiguous dim into a
 * local buffer, then written out row by row, so that both sides walk whole cache lines. */
enum { TILE = 64 };

#define TRANSPOSE_TILE(type)                                                        \
  do {                                                                              \
    type *restrict t = (type *)tile;                                                \
    const type *s = (const type *)src;                                              \
    for (int64_t j = 0; j < nc; j++)                                                \
      for (int64_t i = 0; i < nr; i++) t[i * TILE + j] = s[i + j * src_col_stride]; \
  } while (0)

static void transpose_tile(char *dst, int64_t dst_row_stride, const char *src,
                           int64_t src_col_stride, size_t esize, int64_t nr, int64_t nc,
                           bool stream, bool avx512) {
  if (avx512 && xr_ew_avx512_transpose_tile(dst, dst_row_stride, src, src_col_stride, esize, nr,
                                            nc, stream))
    return;
  uint64_t tile[TILE * TILE];
  /* The next tile's source runs: 64 short runs far apart are more than the hardware
   * prefetcher follows. (Prefetches never fault, past the tensor's end included.) */
  for (int64_t j = 0; j < nc; j++)
    for (int64_t b = 0; b < TILE * (int64_t)esize; b += 64)
      __builtin_prefetch(src + (j * src_col_stride + TILE) * (int64_t)esize + b);
  switch (esize) {
    case 1: TRANSPOSE_TILE(uint8_t); break;
    case 2: TRANSPOSE_TILE(uint16_t); break;
    case 4: TRANSPOSE_TILE(uint32_t); break;
    default: TRANSPOSE_TILE(uint64_t); break;
  }
  for (int64_t i = 0; i < nr; i++) {
    char *row = dst + i * dst_row_stride * (int64_t)esize;
    const char *from = (const char *)tile + i * TILE * (int64_t)esize;
    if (stream) xr_cpu_stream_copy(row, from, (size_t)nc * esize);
    else memcpy(row, from, (size_t)nc * esize);
  }
}

/* An index kept inside [0, size). */
static inline int64_t clamp_index(int64_t v, int64_t size) {
  return v < 0 ? 0 : v >= size ? size - 1 : v;
}

static int64_t load_index(const char *base, xr_dtype_t dt, int64_t i, int64_t size) {
  return clamp_index(dt == XR_DTYPE_I32 ? ((const int32_t *)base)[i] : ((const int64_t *)base)[i],
                     size);
}

/* A gather's run of n elements: out[i * so] = a[i * sa + index[i * sb] * gather_stride], the
 * element size and the index dtype fixed outside the loop (one call per element ran an
 * index_select of 888 ints at 2.7 ns an element). */
#define GATHER_LOOP(etype, itype)                                     \
  do {                                                                \
    etype *o = (etype *)out;                                          \
    const etype *a = (const etype *)pa;                               \
    const itype *ix = (const itype *)pb;                              \
    for (int64_t i = 0; i < n; i++)                                   \
      o[i * so] = a[i * sa + clamp_index(ix[i * sb], size) * stride]; \
  } while (0)

#define GATHER_BY_INDEX(etype)      \
  do {                              \
    if (s->b.dtype == XR_DTYPE_I32) \
      GATHER_LOOP(etype, int32_t);  \
    else                            \
      GATHER_LOOP(etype, int64_t);  \
  } while (0)

static void gather_run(const xr_ew_step_t *s, char *out, int64_t so, const char *pa, int64_t sa,
                       const char *pb, int64_t sb, size_t esize, int64_t n) {
  const int64_t size = s->gather_size, stride = s->gather_stride;
  switch (esize) {
    case 1: GATHER_BY_INDEX(uint8_t); return;
    case 2: GATHER_BY_INDEX(uint16_t); return;
    case 4: GATHER_BY_INDEX(uint32_t); return;
    case 8: GATHER_BY_INDEX(uint64_t); return;
    default:
      for (int64_t i = 0; i < n; i++) {
        int64_t idx = load_index(pb, s->b.dtype, i * sb, size);
        raw_copy(out + i * so * (int64_t)esize, 1, pa + (i * sa + idx * stride) * (int64_t)esize, 1,
                 esize, 1);
      }
  }
}

/* ------------------------------------------------------------------------------------------ */
/* steps                                                                                       */

typedef enum { PATH_FLOAT, PATH_RAW, PATH_FILL, PATH_TRANSPOSE, PATH_TRI } path_t;

typedef struct cpu_step {
  xr_ew_step_t f;          /* coalesced, rank >= 1 */
  path_t path;
  bool stream;             /* large output, contiguous rows: streaming stores */
  bool avx512;             /* FLOAT rows, TRANSPOSE tiles: the AVX-512 path (elementwise_avx512.c) */
  uint8_t transposed;      /* FLOAT: bit k set when operand k (1 a, 2 b, 3 c) is transposed */
  char *base[4];           /* out, a, b, c: byte address of the first element */
  size_t esize[4];
  int64_t inner, block, blocks_per_row, items;
  int64_t tile_rows, tile_cols; /* TRANSPOSE: tiles along the two last dims */
  float scalar, a_value, c_value;
  uint8_t pattern[8];      /* FILL: the value in the output dtype */
} cpu_step_t;

typedef struct cpu_state {
  size_t count;
  cpu_step_t steps[];
} cpu_state_t;

/* Element offsets of out, a, b and c for index `outer` over the dims before `dims`. */
static void outer_offsets(const xr_ew_step_t *s, int dims, int64_t outer, int64_t *oo,
                          int64_t *oa, int64_t *ob, int64_t *oc) {
  for (int d = dims - 1; d >= 0; d--) {
    int64_t x = outer % s->shape[d];
    outer /= s->shape[d];
    *oo += x * s->out.strides[d];
    *oa += x * s->a.strides[d];
    *ob += x * s->b.strides[d];
    *oc += x * s->c.strides[d];
  }
}

/* Tile `item` of a step walked by TILE x TILE tiles over its two last dims: its first row and
 * column, its extent, and the index over the outer dims. Consecutive tiles are adjacent in a
 * transposed source (the tile row index runs fastest), so that its reads, one short run per
 * column, continue where the previous tile stopped. */
typedef struct tile {
  int64_t r0, c0, nr, nc, outer;
} tile_t;

static tile_t tile_of(const cpu_step_t *c, size_t item) {
  const xr_ew_step_t *s = &c->f;
  const int r = s->rank;
  int64_t rest = (int64_t)item / c->tile_rows;
  tile_t t = {.r0 = (int64_t)item % c->tile_rows * TILE, .c0 = rest % c->tile_cols * TILE,
              .outer = rest / c->tile_cols};
  t.nr = s->shape[r - 2] - t.r0 < TILE ? s->shape[r - 2] - t.r0 : TILE;
  t.nc = s->shape[r - 1] - t.c0 < TILE ? s->shape[r - 1] - t.c0 : TILE;
  return t;
}

static void run_tiles(const cpu_step_t *c, size_t begin, size_t end) {
  const xr_ew_step_t *s = &c->f;
  const int r = s->rank;
  for (size_t item = begin; item < end; item++) {
    tile_t t = tile_of(c, item);
    int64_t r0 = t.r0, c0 = t.c0, nr = t.nr, nc = t.nc, outer = t.outer;
    int64_t oo = r0 * s->out.strides[r - 2] + c0, oa = r0 + c0 * s->a.strides[r - 1], ob = 0, oc = 0;
    outer_offsets(s, r - 2, outer, &oo, &oa, &ob, &oc);
    transpose_tile(c->base[0] + oo * (int64_t)c->esize[0], s->out.strides[r - 2],
                   c->base[1] + oa * (int64_t)c->esize[1], s->a.strides[r - 1], c->esize[0], nr,
                   nc, c->stream, c->avx512);
  }
}

/* TRIL, TRIU: n elements from row-major index e, strides so and sa; each piece along one matrix
 * row is a copy of the kept columns and a zero fill of the others. */
static void run_tri(const cpu_step_t *c, char *out, int64_t so, const char *pa, int64_t sa,
                    int64_t e, int64_t n) {
  const xr_ew_step_t *s = &c->f;
  static const uint8_t zero[8];
  const int64_t es = (int64_t)c->esize[0];
  const bool lower = s->op == XR_EW_TRIL;
  for (int64_t i = 0; i < n;) {
    int64_t col = (e + i) % s->tri_cols, row = (e + i) / s->tri_cols % s->tri_rows;
    int64_t len = s->tri_cols - col < n - i ? s->tri_cols - col : n - i;
    /* columns before `edge` are kept by tril and zeroed by triu */
    int64_t edge = row + s->diagonal + (lower ? 1 : 0) - col;
    int64_t head = edge < 0 ? 0 : edge > len ? len : edge;
    char *dst = out + i * so * es;
    const char *src = pa + i * sa * es;
    if (lower) {
      if (dst != src) raw_copy(dst, so, src, sa, c->esize[0], head);
      raw_fill(dst + head * so * es, so, zero, c->esize[0], len - head);
    } else {
      raw_fill(dst, so, zero, c->esize[0], head);
      if (dst != src)
        raw_copy(dst + head * so * es, so, src + head * sa * es, sa, c->esize[0], len - head);
    }
    i += len;
  }
}

enum { PREFETCH_BLOCKS = 2 };

/* Prefetches `bytes` from p (prefetches never fault, past the end of a tensor included). */
static inline void prefetch_run(const char *p, int64_t bytes) {
  for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(p + b);
}

/* FLOAT steps with a transposed operand (unit stride along the next-to-last dim, not along the
 * last, where the output runs along the last): walked by TILE x TILE tiles, each transposed
 * operand's tile first transposed into a local buffer, so that every cache line and page of it
 * is read once per tile instead of once per element. BLOCK / TILE tile rows go through the
 * block pipeline together: its full-block loops are the vectorised ones. */
_Static_assert(BLOCK % TILE == 0, "whole tile rows per block");
static void run_float_tiles(const cpu_step_t *c, size_t begin, size_t end) {
  const xr_ew_step_t *s = &c->f;
  const int r = s->rank;
  const xr_ew_operand_t *ops[4] = {&s->out, &s->a, &s->b, &s->c};
  const bool table = xr_ew_is_table_op(s->op);
  _Alignas(64) float A[BLOCK], B[BLOCK], C[BLOCK], R[BLOCK];
  _Alignas(64) uint64_t tiles[3][TILE * TILE]; /* a, b, c transposed, rows of TILE elements */
  for (int64_t i = 0; i < BLOCK; i++) {
    if (s->b_scalar) B[i] = c->scalar;
    if (s->a_scalar) A[i] = c->a_value;
    if (table && !c->base[3]) C[i] = c->c_value;
  }
  float *loaded[3] = {A, B, C};
  const float *result = s->op == XR_EW_COPY ? A : R;
  for (size_t item = begin; item < end; item++) {
    tile_t t = tile_of(c, item);
    int64_t r0 = t.r0, c0 = t.c0, nr = t.nr, nc = t.nc, outer = t.outer;
    int64_t off[4];
    for (int k = 0; k < 4; k++) off[k] = r0 * ops[k]->strides[r - 2] + c0 * ops[k]->strides[r - 1];
    outer_offsets(s, r - 2, outer, &off[0], &off[1], &off[2], &off[3]);
    for (int k = 1; k < 4; k++)
      if (c->base[k] && (c->transposed >> k & 1))
        transpose_tile((char *)tiles[k - 1], TILE, c->base[k] + off[k] * (int64_t)c->esize[k],
                       ops[k]->strides[r - 1], c->esize[k], nr, nc, false, c->avx512);
    for (int64_t g = 0; g < nr; g += BLOCK / TILE) {
      int64_t rows = nr - g < BLOCK / TILE ? nr - g : BLOCK / TILE;
      for (int64_t i = g; i < g + rows; i++)
        for (int k = 1; k < 4; k++) {
          if (!c->base[k]) continue;
          bool t = c->transposed >> k & 1;
          const char *p = t ? (const char *)tiles[k - 1] + i * TILE * (int64_t)c->esize[k]
                            : c->base[k] + (off[k] + i * ops[k]->strides[r - 2]) * (int64_t)c->esize[k];
          xr_ew_cpu_load(loaded[k - 1] + (i - g) * nc, p, ops[k]->dtype,
                         t ? 1 : ops[k]->strides[r - 1], nc);
        }
      if (table) table_block(s, R, A, B, C, rows * nc);
      else if (s->op != XR_EW_COPY) compute_block(s, R, A, B, rows * nc);
      for (int64_t i = g; i < g + rows; i++) {
        char *out = c->base[0] + (off[0] + i * s->out.strides[r - 2]) * (int64_t)c->esize[0];
        if (!c->stream) {
          store_block(out, s->out.dtype, 1, result + (i - g) * nc, nc);
          continue;
        }
        /* large outputs: streaming stores, which skip reading the lines they overwrite */
        _Alignas(64) uint64_t encoded[TILE];
        store_block((char *)encoded, s->out.dtype, 1, result + (i - g) * nc, nc);
        xr_cpu_stream_copy(out, encoded, (size_t)nc * c->esize[0]);
      }
    }
    /* the next tile's rows of the operands read in place (64 short runs far apart are more
     * than the hardware prefetcher follows) */
    for (int k = 1; k < 4 && r0 + TILE < s->shape[r - 2]; k++) {
      if (!c->base[k] || (c->transposed >> k & 1) || ops[k]->strides[r - 1] != 1) continue;
      for (int64_t i = TILE; i < 2 * TILE; i++)
        prefetch_run(c->base[k] + (off[k] + i * ops[k]->strides[r - 2]) * (int64_t)c->esize[k],
                     nc * (int64_t)c->esize[k]);
    }
  }
  if (c->stream) xr_cpu_stream_fence();
}


static void run_items(void *ctx, size_t begin, size_t end) {
  const cpu_step_t *c = ctx;
  const xr_ew_step_t *s = &c->f;
  if (c->path == PATH_TRANSPOSE) {
    run_tiles(c, begin, end);
    if (c->stream) xr_cpu_stream_fence();
    return;
  }
  if (c->transposed) {
    run_float_tiles(c, begin, end);
    return;
  }
  int outer = s->rank - 1;
  const int64_t so = s->out.strides[outer], sa = s->a.strides[outer], sb = s->b.strides[outer];
  const int64_t sc = s->c.strides[outer];
  const bool table = xr_ew_is_table_op(s->op);
  /* Aligned to cache lines: a vector access that straddles two lines costs two. */
  _Alignas(64) float A[BLOCK], B[BLOCK], C[BLOCK], R[BLOCK];
  _Alignas(64) uint32_t encoded[BLOCK]; /* a streamed block in the output dtype */
  if (c->path == PATH_FLOAT && s->b_scalar) FOR_N(BLOCK, B[i] = c->scalar);
  if (c->path == PATH_FLOAT && s->a_scalar) FOR_N(BLOCK, A[i] = c->a_value);
  if (c->path == PATH_FLOAT && table && !c->base[3]) FOR_N(BLOCK, C[i] = c->c_value);
  for (size_t item = begin; item < end; item++) {
    int64_t row = (int64_t)item / c->blocks_per_row;
    int64_t j0 = ((int64_t)item % c->blocks_per_row) * c->block;
    int64_t n = c->inner - j0 < c->block ? c->inner - j0 : c->block;
    int64_t oo = j0 * so, oa = j0 * sa, ob = j0 * sb, oc = j0 * sc;
    outer_offsets(s, outer, row, &oo, &oa, &ob, &oc);
    char *out = c->base[0] + oo * (int64_t)c->esize[0];
    const char *pa = c->base[1] ? c->base[1] + oa * (int64_t)c->esize[1] : NULL;
    const char *pb = c->base[2] ? c->base[2] + ob * (int64_t)c->esize[2] : NULL;
    const char *pc = c->base[3] ? c->base[3] + oc * (int64_t)c->esize[3] : NULL;
    if (c->path == PATH_TRI) {
      run_tri(c, out, so, pa, sa, row * c->inner + j0, n);
    } else if (c->path == PATH_FILL) {
      if (c->stream) stream_fill(out, c->pattern, c->esize[0], n);
      else raw_fill(out, so, c->pattern, c->esize[0], n);
    } else if (c->path == PATH_RAW && (s->op == XR_EW_COPY || sb == 0)) {
      if (s->op != XR_EW_COPY) { /* gather: one index for the whole run */
        int64_t idx = load_index(pb, s->b.dtype, 0, s->gather_size);
        pa += idx * s->gather_stride * (int64_t)c->esize[1];
      }
      if (c->stream && sa == 1) xr_cpu_stream_copy(out, pa, (size_t)n * c->esize[0]);
      else raw_copy(out, so, pa, sa, c->esize[0], n);
    } else if (c->path == PATH_RAW) {
      gather_run(s, out, so, pa, sa, pb, sb, c->esize[0], n);
    } else if (c->avx512) {
      xr_ew_avx512_row(s, out, pa, pb, c->scalar, n, c->stream);
    } else {
      if (c->stream) { /* the block after next, while this one computes */
        if (pa) prefetch_run(pa + PREFETCH_BLOCKS * BLOCK * sa * (int64_t)c->esize[1], sa == 1 ? n * (int64_t)c->esize[1] : 0);
        if (pb) prefetch_run(pb + PREFETCH_BLOCKS * BLOCK * sb * (int64_t)c->esize[2], sb == 1 ? n * (int64_t)c->esize[2] : 0);
      }
      if (pa) xr_ew_cpu_load(A, pa, s->a.dtype, sa, n);
      if (pb) xr_ew_cpu_load(B, pb, s->b.dtype, sb, n);
      if (pc) xr_ew_cpu_load(C, pc, s->c.dtype, sc, n);
      if (table) table_block(s, R, A, B, C, n);
      else if (s->op != XR_EW_COPY) compute_block(s, R, A, B, n);
      const float *result = s->op == XR_EW_COPY ? A : R;
      if (c->stream) {
        store_block((char *)encoded, s->out.dtype, 1, result, n);
        xr_cpu_stream_copy(out, encoded, (size_t)n * c->esize[0]);
      } else {
        store_block(out, s->out.dtype, so, result, n);
      }
    }
  }
  if (c->stream) xr_cpu_stream_fence();
}

static path_t step_path(const xr_ew_step_t *s) {
  if (s->op == XR_EW_FILL) return PATH_FILL;
  if (s->op == XR_EW_TRIL || s->op == XR_EW_TRIU) return PATH_TRI;
  if ((s->op == XR_EW_COPY || s->op == XR_EW_GATHER) && s->a.dtype == s->out.dtype) {
    int r = s->rank;
    bool transposed = s->op == XR_EW_COPY && r >= 2 && s->out.strides[r - 1] == 1 &&
                      s->a.strides[r - 2] == 1 && s->a.strides[r - 1] != 0 &&
                      s->a.strides[r - 1] != 1 && s->out.strides[r - 2] != 0;
    return transposed ? PATH_TRANSPOSE : PATH_RAW;
  }
  return PATH_FLOAT;
}

static xr_status_t cpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_ew_problem_t *p = plan->problem;
  for (size_t i = 0; i < p->step_count; i++) {
    const xr_ew_step_t *s = &p->steps[i];
    if (s->op == XR_EW_ARANGE || s->op == XR_EW_LINSPACE)
      return xr_error(XR_UNIMPLEMENTED, "sequences (arange, linspace) are the reference's on cpu");
    if (step_path(s) == PATH_FLOAT && !xr_ew_float_pipeline(s))
      return xr_error(XR_UNIMPLEMENTED, "%s results computed in %s are the reference's (the fast "
                                        "path computes in float)", xr_dtype_name(s->out.dtype),
                      xr_dtype_name(xr_ew_is_table_op(s->op) ? s->compute : s->out.dtype));
  }
  return XR_OK;
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_ew_problem_t *p = plan->problem;
  cpu_state_t *st = calloc(1, sizeof *st + p->step_count * sizeof(cpu_step_t));
  if (!st) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  st->count = p->step_count;
  for (size_t i = 0; i < p->step_count; i++) {
    cpu_step_t *c = &st->steps[i];
    xr_ew_coalesce(&p->steps[i], &c->f);
    xr_ew_step_t *f = &c->f;
    if (f->rank == 0) { /* one element */
      f->rank = 1;
      f->shape[0] = 1;
      f->out.strides[0] = f->a.strides[0] = f->b.strides[0] = f->c.strides[0] = 0;
    }
    c->path = step_path(f);
    c->avx512 = (c->path == PATH_FLOAT && xr_ew_avx512_takes(f)) ||
                (c->path == PATH_TRANSPOSE && xr_cpu_avx512());
    xr_ew_operand_t *ops[4] = {&f->out, &f->a, &f->b, &f->c};
    for (int k = 0; k < 4; k++) {
      if (ops[k]->index < 0) continue;
      const xr_tensor_t *t = &tensors[ops[k]->index];
      void *host;
      xr_status_t status = xr_tensor_host(t, &host);
      if (status != XR_OK) {
        free(st);
        return status;
      }
      c->esize[k] = xr_dtype_size(ops[k]->dtype);
      c->base[k] = (char *)host + (t->offset + ops[k]->offset) * (int64_t)c->esize[k];
    }
    c->scalar = (float)f->scalar;
    c->a_value = (float)f->a_value;
    c->c_value = (float)f->c_value;
    if (c->path == PATH_FILL) {
      if (xr_dtype_is_floating(f->out.dtype) || f->out.dtype == XR_DTYPE_BOOL) {
        xr_store_element(c->pattern, f->out.dtype, 0, f->scalar);
      } else { /* integers: truncated, then the low bytes (wrap-around), as the reference does */
        double v = f->scalar;
        int64_t i64 = isnan(v) ? 0 : v >= 0x1p63 ? INT64_MAX : v <= -0x1p63 ? INT64_MIN : (int64_t)v;
        memcpy(c->pattern, &i64, sizeof i64);
      }
    }
    c->stream = f->out.strides[f->rank - 1] == 1 &&
                f->numel * (int64_t)c->esize[0] >= XR_CPU_STREAM_MIN_BYTES;
    c->inner = f->shape[f->rank - 1];
    int r = f->rank;
    for (int k = 1; k < 4 && c->path == PATH_FLOAT && r >= 2 && f->out.strides[r - 1] == 1; k++)
      if (ops[k]->index >= 0 && ops[k]->strides[r - 2] == 1 && ops[k]->strides[r - 1] != 0 &&
          ops[k]->strides[r - 1] != 1)
        c->transposed |= (uint8_t)(1u << k);
    if (c->transposed) c->avx512 = xr_cpu_avx512(); /* for the tiles' transposes only */
    if (c->path == PATH_TRANSPOSE || c->transposed) {
      c->tile_rows = (f->shape[f->rank - 2] + TILE - 1) / TILE;
      c->tile_cols = (c->inner + TILE - 1) / TILE;
      c->items = f->numel > 0
                     ? f->numel / (f->shape[f->rank - 2] * c->inner) * c->tile_rows * c->tile_cols
                     : 0;
      continue;
    }
    c->block = c->path == PATH_FLOAT ? BLOCK : RAW_BLOCK;
    c->blocks_per_row = c->inner > 0 ? (c->inner + c->block - 1) / c->block : 1;
    c->items = f->numel > 0 ? (f->numel / c->inner) * c->blocks_per_row : 0;
  }
  *out_state = st;
  return XR_OK;
}

static xr_status_t cpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_state_t *st = state;
  for (size_t i = 0; i < st->count; i++) {
    const cpu_step_t *c = &st->steps[i];
    if (c->items == 0) continue;
    int64_t per_item = c->path == PATH_TRANSPOSE || c->transposed ? TILE * TILE
                       : c->inner < c->block      ? c->inner
                                                  : c->block;
    /* Tasks of at least MIN_ELEMENTS_PER_CHUNK elements, of equal size: 70 blocks at a minimum
     * of 64 are one task, not 64 and a lone 6 that cost a thread's wake-up for nothing. */
    size_t min_grain = (size_t)(MIN_ELEMENTS_PER_CHUNK / per_item), items = (size_t)c->items;
    size_t tasks = min_grain ? items / min_grain : items;
    if (tasks < 1) tasks = 1;
    size_t grain = (items + tasks - 1) / tasks;
    xr_status_t status = xr_hal_stream_enqueue_parallel(stream, items, grain, run_items, (void *)c);
    if (status != XR_OK) return status;
  }
  return XR_OK;
}

const xr_kernel_impl_t xr_cpu_elementwise = {
    .name = "cpu.elementwise",
    .driver = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .enqueue = cpu_enqueue,
    .release = free,
};
