/* cpu.elementwise's AVX-512 path: the arithmetic, activations and conversions of rows whose
 * operands are contiguous (or a broadcast value), f32, bf16 or f16 in, those or fp8 out, in one
 * pass of 16 elements at a time: widen, compute, round and store without the block buffers of
 * the portable pipeline (kernels/cpu/elementwise_cpu.c), which takes everything else. Three
 * ops of the pointwise table come here too: threshold_backward and the one-sided clamps.
 *
 * Results agree with the portable path to a few float ulps (same polynomials; reciprocals by
 * vrcp14ps + Newton-Raphson instead of divisions, except for aten::div itself); conversions are
 * bit-exact with base/float_formats.h. */
#include <stdint.h>

#include "kernels/cpu/avx512.h"
#include "kernels/cpu/elementwise_avx512.h"
#include "kernels/dtype.h"

#ifdef XR_HAVE_AVX512_PATHS
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static bool avx512_usable;
static pthread_once_t avx512_once = PTHREAD_ONCE_INIT;

static void probe_avx512(void) {
  const char *setting = getenv("XR_CPU_AVX512");
  __builtin_cpu_init();
  avx512_usable = !(setting && !strcmp(setting, "off")) && __builtin_cpu_supports("avx512f") &&
                  __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bf16");
}

bool xr_cpu_avx512(void) {
  pthread_once(&avx512_once, probe_avx512);
  return avx512_usable;
}

bool xr_ew_avx512_takes(const xr_ew_step_t *s) {
  if (!xr_cpu_avx512()) return false;
  int in = s->rank - 1;
  bool wide_in = xr_avx512_dtype(s->a.dtype);
  /* a b broadcast along the row is one value per row (row() reads it with any dtype: a 0-d
   * double multiplier takes this path) */
  bool b_ok = s->b_scalar || s->b.index < 0 || s->b.strides[in] == 0 ||
              (xr_avx512_dtype(s->b.dtype) && s->b.strides[in] == 1);
  bool out_ok = xr_avx512_dtype(s->out.dtype) || (xr_dtype_is_fp8(s->out.dtype) && s->op == XR_EW_COPY);
  switch (s->op) {
    case XR_EW_ADD: case XR_EW_SUB: case XR_EW_MUL: case XR_EW_DIV: case XR_EW_COPY:
    case XR_EW_GELU: case XR_EW_GELU_TANH: case XR_EW_SILU: case XR_EW_SILU_AND_MUL:
    case XR_EW_GELU_AND_MUL: case XR_EW_GELU_TANH_AND_MUL: case XR_EW_THRESHOLD_BACKWARD:
    case XR_EW_CLAMP_MIN: case XR_EW_CLAMP_MAX: break;
    default: return false;
  }
  return wide_in && b_ok && out_ok && s->a.strides[in] == 1 && s->out.strides[in] == 1;
}

/* ------------------------------------------------------------------------------------------ */
/* activations (the formulas of elementwise_cpu.c)                                             */

/* 0.5 x (1 + tanh u) = x / (1 + e^-2u), u = sqrt(2/pi) (x + 0.044715 x^3) */
XR_AVX512_INLINE __m512 gelu_tanh(__m512 x) {
  __m512 two_u = _mm512_mul_ps(x, _mm512_fmadd_ps(_mm512_mul_ps(x, x), _mm512_set1_ps(0.0713548162726f),
                                                  _mm512_set1_ps(1.5957691216057308f)));
  __m512 e = xr_avx512_exp_signed(two_u, -1.0f);
  return _mm512_mul_ps(x, xr_avx512_recip(_mm512_add_ps(_mm512_set1_ps(1.0f), e)));
}

/* erfc through Abramowitz & Stegun 7.1.26; z is clamped at 10 (erfc already 0 in float there),
 * which keeps the reciprocal of 1 + 0.33 z finite for infinite x. */
XR_AVX512_INLINE __m512 gelu_erf(__m512 x) {
  __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.7071067811865476f));
  z = _mm512_min_ps(_mm512_set1_ps(10.0f), z);
  __m512 t = xr_avx512_recip(_mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), z, _mm512_set1_ps(1.0f)));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, t), xr_avx512_exp(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), z), z)));
  __mmask16 nonnegative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
  __m512 one_plus_erf = _mm512_mask_sub_ps(y, nonnegative, _mm512_set1_ps(2.0f), y);
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), one_plus_erf);
}

/* ------------------------------------------------------------------------------------------ */
/* fp8: the branch-free rounding of elementwise_cpu.c's fp8_encode, lane by lane              */

typedef struct fp8_lanes {
  __m512 max, min_normal, subnormal_scale;
  __m512i half_minus_one, rebias, nan_code;
  int shift;
  bool fnuz;
} fp8_lanes_t;

XR_AVX512 static fp8_lanes_t fp8_lanes(xr_dtype_t d) {
  bool e4m3 = d == XR_DTYPE_F8E4M3FN || d == XR_DTYPE_F8E4M3FNUZ;
  bool fnuz = d == XR_DTYPE_F8E4M3FNUZ || d == XR_DTYPE_F8E5M2FNUZ;
  int bias = d == XR_DTYPE_F8E4M3FN ? 7 : d == XR_DTYPE_F8E5M2 ? 15 : e4m3 ? 8 : 16;
  int mbits = e4m3 ? 3 : 2, shift = 23 - mbits;
  float max = d == XR_DTYPE_F8E4M3FN ? 448.0f : d == XR_DTYPE_F8E4M3FNUZ ? 240.0f : 57344.0f;
  return (fp8_lanes_t){
      .max = _mm512_set1_ps(max),
      .min_normal = _mm512_set1_ps(ldexpf(1.0f, 1 - bias)),
      .subnormal_scale = _mm512_set1_ps(ldexpf(1.0f, bias - 1 + mbits)),
      .half_minus_one = _mm512_set1_epi32((1 << (shift - 1)) - 1),
      .rebias = _mm512_set1_epi32((127 - bias) << mbits),
      .nan_code = _mm512_set1_epi32(fnuz ? 0x80 : 0x7f),
      .shift = shift,
      .fnuz = fnuz,
  };
}

XR_AVX512_INLINE __m128i fp8_encode(__m512 v, const fp8_lanes_t *F) {
  __m512i u = _mm512_castps_si512(v);
  __m512i mag_bits = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  __mmask16 nan = _mm512_cmpgt_epu32_mask(mag_bits, _mm512_set1_epi32(0x7f800000));
  __m512 a = _mm512_min_ps(_mm512_castsi512_ps(mag_bits), F->max); /* NaN lanes: see `nan` */
  __mmask16 small = _mm512_cmp_ps_mask(a, F->min_normal, _CMP_LT_OQ);
  __m512i sub = _mm512_sub_epi32(
      _mm512_castps_si512(_mm512_fmadd_ps(a, F->subnormal_scale, _mm512_set1_ps(12582912.0f))),
      _mm512_set1_epi32(0x4b400000));
  __m512i ua = _mm512_castps_si512(a);
  __m512i odd = _mm512_and_si512(_mm512_srli_epi32(ua, (unsigned)F->shift), _mm512_set1_epi32(1));
  __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(ua, F->half_minus_one), odd);
  __m512i normal = _mm512_sub_epi32(_mm512_srli_epi32(rounded, (unsigned)F->shift), F->rebias);
  __m512i magnitude = _mm512_mask_blend_epi32(small, normal, sub);
  __m512i sign = _mm512_and_si512(_mm512_srli_epi32(u, 24), _mm512_set1_epi32(0x80));
  if (F->fnuz) /* no negative zero */
    sign = _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(magnitude, magnitude), sign);
  __m512i code = _mm512_mask_blend_epi32(nan, _mm512_or_si512(sign, magnitude), F->nan_code);
  return _mm512_cvtepi32_epi8(code);
}

/* ------------------------------------------------------------------------------------------ */
/* rows                                                                                        */

/* `alpha`: add's and sub's alpha, threshold_backward's threshold, the clamps' bound
 * (constant()). */
XR_AVX512_INLINE __m512 compute(xr_ew_op_t op, __m512 a, __m512 b, __m512 alpha) {
  switch (op) {
    case XR_EW_ADD: return _mm512_fmadd_ps(alpha, b, a);
    case XR_EW_SUB: return _mm512_fnmadd_ps(alpha, b, a);
    case XR_EW_MUL: return _mm512_mul_ps(a, b);
    case XR_EW_DIV: return _mm512_div_ps(a, b);
    case XR_EW_GELU: return gelu_erf(a);
    case XR_EW_GELU_TANH: return gelu_tanh(a);
    case XR_EW_SILU: return xr_avx512_silu(a);
    case XR_EW_SILU_AND_MUL: return _mm512_mul_ps(xr_avx512_silu(a), b);
    case XR_EW_GELU_AND_MUL: return _mm512_mul_ps(gelu_erf(a), b);
    case XR_EW_GELU_TANH_AND_MUL: return _mm512_mul_ps(gelu_tanh(a), b);
    /* grad where self > threshold, else 0 (a NaN self compares false, as the table's) */
    case XR_EW_THRESHOLD_BACKWARD: return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(b, alpha, _CMP_GT_OQ), a);
    /* the bound where self is beyond it (a NaN self or bound compares false: self stays) */
    case XR_EW_CLAMP_MIN: return _mm512_mask_mov_ps(a, _mm512_cmp_ps_mask(a, alpha, _CMP_LT_OQ), alpha);
    case XR_EW_CLAMP_MAX: return _mm512_mask_mov_ps(a, _mm512_cmp_ps_mask(a, alpha, _CMP_GT_OQ), alpha);
    default: return a; /* COPY */
  }
}

/* compute()'s constant operand for the step. */
static inline float constant(const xr_ew_step_t *s) {
  bool param = s->op == XR_EW_THRESHOLD_BACKWARD || s->op == XR_EW_CLAMP_MIN || s->op == XR_EW_CLAMP_MAX;
  return param ? (float)s->param[0] : (float)s->alpha;
}

enum { PREFETCH_AHEAD = 2048 }; /* elements */

/* A row's operands: element sizes in bytes are fixed here, outside the loops. */
typedef struct row_args {
  const xr_ew_step_t *s;
  const fp8_lanes_t *fp8; /* the output's fp8 format, NULL for f32 / bf16 */
  char *out;
  const char *a, *b;      /* b: NULL or a value broadcast along the row (then in bv) */
  int64_t eo, ea, eb;
} row_args_t;

/* Elements [i, i + 16) of a row, the lanes in m; `op` is a constant in each caller below, so
 * that the switch in compute() folds away. */
XR_AVX512_INLINE void vector_at(xr_ew_op_t op, const row_args_t *r, __m512 bv, int64_t i,
                                __mmask16 m, bool stream) {
  const xr_ew_step_t *s = r->s;
  /* Inputs come from far caches or memory: fetch ahead (prefetches never fault). */
  _mm_prefetch(r->a + (i + PREFETCH_AHEAD) * r->ea, _MM_HINT_T0);
  if (r->b) _mm_prefetch(r->b + (i + PREFETCH_AHEAD) * r->eb, _MM_HINT_T0);
  __m512 av = xr_avx512_load(r->a + i * r->ea, s->a.dtype, m);
  if (r->b) bv = xr_avx512_load(r->b + i * r->eb, s->b.dtype, m);
  __m512 v = compute(op, av, bv, _mm512_set1_ps(constant(s)));
  char *o = r->out + i * r->eo;
  if (!r->fp8) {
    xr_avx512_store(o, s->out.dtype, v, m, stream);
  } else if (stream) {
    _mm_stream_si128((__m128i *)(void *)o, fp8_encode(v, r->fp8));
  } else {
    _mm_mask_storeu_epi8(o, m, fp8_encode(v, r->fp8));
  }
}

/* Elements [i, i + 32) of a row whose operands are all bf16, as even and odd lanes. */
XR_AVX512_INLINE void pairs_at(xr_ew_op_t op, const row_args_t *r, __m512 bv, int64_t i,
                               bool stream) {
  __m512 a_even, a_odd, b_even = bv, b_odd = bv;
  _mm_prefetch(r->a + (i + PREFETCH_AHEAD) * 2, _MM_HINT_T0);
  xr_avx512_load_bf16_pairs(r->a + i * 2, &a_even, &a_odd);
  if (r->b) {
    _mm_prefetch(r->b + (i + PREFETCH_AHEAD) * 2, _MM_HINT_T0);
    xr_avx512_load_bf16_pairs(r->b + i * 2, &b_even, &b_odd);
  }
  const __m512 alpha = _mm512_set1_ps(constant(r->s));
  __m512i h = xr_avx512_bf16_encode_pairs(compute(op, a_even, b_even, alpha),
                                          compute(op, a_odd, b_odd, alpha));
  if (stream) _mm512_stream_si512((void *)(r->out + i * 2), h);
  else _mm512_storeu_si512(r->out + i * 2, h);
}

/* One row of n elements. b is NULL (unary op or scalar), a row (sb = 1) or one value (sb = 0). */
XR_AVX512_INLINE void row(xr_ew_op_t op, const xr_ew_step_t *s, char *out, const char *a,
                          const char *b, int64_t sb, float scalar, int64_t n, bool stream) {
  __m512 bv = _mm512_set1_ps(scalar);
  if (b && sb == 0) bv = _mm512_set1_ps((float)xr_load_element(b, s->b.dtype, 0));
  fp8_lanes_t lanes;
  row_args_t r = {.s = s, .out = out, .a = a, .b = b && sb == 1 ? b : NULL,
                  .eo = (int64_t)xr_dtype_size(s->out.dtype),
                  .ea = (int64_t)xr_dtype_size(s->a.dtype),
                  .eb = b ? (int64_t)xr_dtype_size(s->b.dtype) : 0};
  if (xr_dtype_is_fp8(s->out.dtype)) lanes = fp8_lanes(s->out.dtype), r.fp8 = &lanes;
  const bool pairs = s->out.dtype == XR_DTYPE_BF16 && s->a.dtype == XR_DTYPE_BF16 &&
                     (!r.b || s->b.dtype == XR_DTYPE_BF16);
  const int64_t step = pairs ? 32 : 16;
  int64_t i = 0;
  if (stream) { /* streaming stores take whole aligned vectors: plain ones up to the first */
    int64_t align = step * r.eo, head = (align - (int64_t)((uintptr_t)out % (uintptr_t)align)) % align;
    if (head % r.eo) {
      stream = false; /* elements off their natural alignment: no vector is ever aligned */
    } else {
      int64_t end = head / r.eo < n ? head / r.eo : n;
      for (; i < end; i += 16) vector_at(op, &r, bv, i, xr_avx512_lanes(end - i), false);
      i = end;
    }
  }
  if (pairs)
    for (; i + 32 <= n; i += 32) pairs_at(op, &r, bv, i, stream);
  for (; i + 16 <= n; i += 16) vector_at(op, &r, bv, i, 0xffff, stream);
  if (i < n) vector_at(op, &r, bv, i, xr_avx512_lanes(n - i), false);
}

#define ROW_CASE(op_) \
  case op_: row(op_, s, out, a, b, sb, scalar, n, stream); return;

XR_AVX512 void xr_ew_avx512_row(const xr_ew_step_t *s, char *out, const char *a, const char *b,
                                float scalar, int64_t n, bool stream) {
  int64_t sb = b ? s->b.strides[s->rank - 1] : 0;
  switch (s->op) {
    ROW_CASE(XR_EW_ADD)
    ROW_CASE(XR_EW_SUB)
    ROW_CASE(XR_EW_MUL)
    ROW_CASE(XR_EW_DIV)
    ROW_CASE(XR_EW_GELU)
    ROW_CASE(XR_EW_GELU_TANH)
    ROW_CASE(XR_EW_SILU)
    ROW_CASE(XR_EW_SILU_AND_MUL)
    ROW_CASE(XR_EW_GELU_AND_MUL)
    ROW_CASE(XR_EW_GELU_TANH_AND_MUL)
    ROW_CASE(XR_EW_THRESHOLD_BACKWARD)
    ROW_CASE(XR_EW_CLAMP_MIN)
    ROW_CASE(XR_EW_CLAMP_MAX)
    default: row(XR_EW_COPY, s, out, a, b, sb, scalar, n, stream); return;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* transposed copies                                                                          */

/* Transposes 16 rows of 16 floats in registers: four rounds of unpacks and lane shuffles. */
XR_AVX512_INLINE void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) /* r[i + c]: column c of rows i.. i + 3, in each 128-bit lane */
    for (int k = 0; k < 2; k++) {
      __m512d lo = _mm512_castps_pd(t[i + k]), hi = _mm512_castps_pd(t[i + k + 2]);
      r[i + 2 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(lo, hi));
      r[i + 2 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(lo, hi));
    }
  for (int i = 0; i < 16; i += 8)
    for (int k = 0; k < 4; k++) {
      t[i + k] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0x88);
      t[i + k + 4] = _mm512_shuffle_f32x4(r[i + k], r[i + k + 4], 0xdd);
    }
  for (int k = 0; k < 8; k++) {
    r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
    r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xdd);
  }
}

XR_AVX512 bool xr_ew_avx512_transpose_tile(char *dst, int64_t dst_row_stride, const char *src,
                                           int64_t src_col_stride, size_t esize, int64_t nr,
                                           int64_t nc, bool stream) {
  if (esize != 4 || nr % 16 || nc % 16) return false;
  const float *s = (const float *)src;
  float *d = (float *)dst;
  if (stream && (((uintptr_t)d % 64) || (dst_row_stride % 16))) stream = false;
  /* the next tile's source runs (it starts nr elements on in each column) */
  for (int64_t j = 0; j < nc; j++)
    for (int64_t b = 0; b < nr; b += 16) _mm_prefetch((const char *)(s + nr + b + j * src_col_stride), _MM_HINT_T0);
  for (int64_t c0 = 0; c0 < nc; c0 += 16)
    for (int64_t r0 = 0; r0 < nr; r0 += 16) {
      __m512 v[16];
      /* source column c0 + j holds output rows r0.. r0 + 15 contiguously */
      for (int j = 0; j < 16; j++) v[j] = _mm512_loadu_ps(s + r0 + (c0 + j) * src_col_stride);
      transpose16(v);
      for (int i = 0; i < 16; i++) {
        float *row = d + (r0 + i) * dst_row_stride + c0;
        if (stream) _mm512_stream_ps(row, v[i]);
        else _mm512_storeu_ps(row, v[i]);
      }
    }
  return true;
}

#else /* no AVX-512 paths in this build */

bool xr_cpu_avx512(void) { return false; }
bool xr_ew_avx512_takes(const xr_ew_step_t *s) { (void)s; return false; }
void xr_ew_avx512_row(const xr_ew_step_t *s, char *out, const char *a, const char *b,
                      float scalar, int64_t n, bool stream) {
  (void)s, (void)out, (void)a, (void)b, (void)scalar, (void)n, (void)stream;
}
bool xr_ew_avx512_transpose_tile(char *dst, int64_t dst_row_stride, const char *src,
                                 int64_t src_col_stride, size_t esize, int64_t nr, int64_t nc,
                                 bool stream) {
  (void)dst, (void)dst_row_stride, (void)src, (void)src_col_stride, (void)esize, (void)nr,
      (void)nc, (void)stream;
  return false;
}

#endif
