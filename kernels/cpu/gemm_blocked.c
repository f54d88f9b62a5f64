/* cpu.gemm_blocked: our own CPU GEMM for what oneDNN does not run (fp16 on oneDNN 2.6, fp8
 * _scaled_mm and its block-scaled mxfp8 / mxfp4 / nvfp4 forms, layouts it rejects).
 * GotoBLAS-style: each work item owns one MC x NC output tile; per KC slice it packs A and B
 * (any dtype, any strides) into fp32 panels, so one fp32 micro-kernel serves every dtype; the
 * epilogue applies alpha, the scales and beta * C and rounds once to the output dtype, written
 * through the output's strides. The micro-kernel, the packing and the dot products are
 * compiled for AVX-512 and for AVX2 + FMA, and chosen at run time (kernels/cpu/fma_micro.h).
 * Block-scaled operands are dequantized while they are packed (code times its block's scale, exact
 * in fp32 unless it overflows: scales near 2^127), so the same micro-kernel runs them. Small-M
 * products with K contiguous in both operands (decode: x @ W^T) skip packing and run as blocked dot
 * products instead (not block-scaled ones). */
#include <immintrin.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/fma_micro.h"
#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/gemm.h"

#define MR 8
#define NR 32
#define MC 192
#define NC 256
#define KC 256
#define SCRATCH_FLOATS ((size_t)MC * KC + (size_t)KC * NC + (size_t)MC * NC)
/* Decode-shaped products (at most this many rows) take the dot-product path. */
#define DOT_MAX_M 16
#define DOT_N_BLOCK 64

typedef struct blocked_state {
  const xr_gemm_problem_t *p;
  uint8_t *base[XR_GEMM_OPERANDS]; /* storage start of each operand; NULL when absent */
  int64_t offset[XR_GEMM_OPERANDS];
  float lut_a[256], lut_b[256];    /* fp8 decode tables (fp4: indexed by the e2m1 nibble) */
  float lut_scale[256];            /* block-scaled: the scale byte's value */
  int64_t m_blocks, n_blocks, mc;
  bool dot;                        /* the dot-product path */
  size_t slot_count;
  atomic_int *slot_busy;
  float **slots;                   /* per concurrent work item: packing + accumulator space */
  float *dot_a;                    /* dot path: A converted to fp32 once per execution */
  /* alpha = 1, no scales, no C, output rows contiguous (mm, linear): the epilogue converts whole
   * rows (element by element it took about a third of fp16 512^3's time). */
  bool plain_epilogue;
  xr_fma_isa_t isa; /* the micro-kernel, packing and row stores to run */
} blocked_state_t;

/* dst[i * dst_stride] = src[(start + i * stride)] as fp32, for i < n. Always inlined, so that
 * in the AVX-512 and AVX2 packing functions below the conversions use F16C / vector
 * instructions. */
static inline __attribute__((always_inline)) void load_f32(const uint8_t *base, xr_dtype_t dtype, const float *lut, int64_t start,
                     int64_t stride, int64_t n, float *dst, int64_t dst_stride) {
  switch (dtype) {
    case XR_DTYPE_F32: {
      const float *s = (const float *)base + start;
      for (int64_t i = 0; i < n; i++) dst[i * dst_stride] = s[i * stride];
      break;
    }
    case XR_DTYPE_BF16: {
      const uint16_t *s = (const uint16_t *)base + start;
      for (int64_t i = 0; i < n; i++) dst[i * dst_stride] = xr_bf16_to_f32(s[i * stride]);
      break;
    }
    case XR_DTYPE_F16: {
      const _Float16 *s = (const _Float16 *)base + start;
      for (int64_t i = 0; i < n; i++) dst[i * dst_stride] = (float)s[i * stride];
      break;
    }
    default: { /* fp8 */
      const uint8_t *s = base + start;
      for (int64_t i = 0; i < n; i++) dst[i * dst_stride] = lut[s[i * stride]];
      break;
    }
  }
}

/* dst[i * dst_stride] = element (r, k0 + i) of a block-scaled operand dequantized, i < n: its
 * code (fp8: the byte at at + r * r_stride + k * k_stride; fp4: nibble k % 2 of the byte at
 * at + r * r_stride + (k / 2) * k_stride) times the scale of block k / block of row r. A: r = m;
 * B: r = n, with its strides swapped. */
static inline __attribute__((always_inline)) void load_block(const blocked_state_t *s, int which,
                                                             int scale, const float *lut,
                                                             int64_t at, int64_t r_stride,
                                                             int64_t k_stride, int64_t r,
                                                             int64_t k0, int64_t n, float *dst,
                                                             int64_t dst_stride) {
  const xr_gemm_problem_t *p = s->p;
  const uint8_t *codes = s->base[which] + at + r * r_stride;
  int64_t pitch = scale == XR_GEMM_SCALE_A ? p->scale_a.stride : p->scale_b.stride;
  const uint8_t *scales = s->base[scale] + s->offset[scale] + r * pitch;
  bool fp4 = p->a_dtype == XR_DTYPE_F4E2M1X2;
  int64_t bs = p->block;
  for (int64_t i = 0; i < n;) {
    int64_t k = k0 + i, end = i + (bs - k % bs);
    if (end > n) end = n;
    float sc = s->lut_scale[scales[k / bs]];
    if (fp4) {
      for (; i < end; i++) {
        int64_t kk = k0 + i;
        uint8_t byte = codes[(kk >> 1) * k_stride];
        dst[i * dst_stride] = lut[kk & 1 ? byte >> 4 : byte & 0x0f] * sc;
      }
    } else {
      for (; i < end; i++) dst[i * dst_stride] = lut[codes[(k0 + i) * k_stride]] * sc;
    }
  }
}

/* The packing functions, compiled three times: for AVX-512 CPUs, for AVX2 + F16C ones (where
 * fp16/bf16 conversions are vector instructions) and for any x86-64. */
#define PACK_ATTR __attribute__((target("avx512f,avx512bw,avx512vl,f16c,fma")))
#define PACK_NAME(name) name##_avx512
#include "kernels/cpu/gemm_blocked_pack.h"
#undef PACK_ATTR
#undef PACK_NAME
#define PACK_ATTR XR_AVX2_FMA
#define PACK_NAME(name) name##_avx2
#include "kernels/cpu/gemm_blocked_pack.h"
#undef PACK_ATTR
#undef PACK_NAME
#define PACK_ATTR
#define PACK_NAME(name) name##_generic
#include "kernels/cpu/gemm_blocked_pack.h"
#undef PACK_ATTR
#undef PACK_NAME

/* c[MR][ldc] (+)= ap[kc][MR] * bp[kc][NR] */
__attribute__((target("avx512f"))) static void micro_avx512(int64_t kc, const float *ap,
                                                            const float *bp, float *c,
                                                            int64_t ldc, bool accumulate) {
  /* Fully unrolled (GCC keeps arrays indexed by loop counters in memory otherwise): 16
   * accumulators in registers. */
  __m512 acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; k++) {
    __m512 b0 = _mm512_load_ps(bp + k * NR), b1 = _mm512_load_ps(bp + k * NR + 16);
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
      __m512 a = _mm512_set1_ps(ap[k * MR + r]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; r++) {
    float *row = c + r * ldc;
    if (accumulate) {
      acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_loadu_ps(row));
      acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_loadu_ps(row + 16));
    }
    _mm512_storeu_ps(row, acc[r][0]);
    _mm512_storeu_ps(row + 16, acc[r][1]);
  }
}

/* ap's panel holds element (r, k) at ap[k * MR + r]. */
XR_AVX2_FMA static void micro_avx2(int64_t kc, const float *ap, const float *bp, float *c,
                                   int64_t ldc, bool accumulate) {
  xr_fma_8x32_avx2(kc, ap, 1, MR, bp, c, ldc, accumulate);
}

static void micro_generic(int64_t kc, const float *ap, const float *bp, float *c, int64_t ldc,
                          bool accumulate) {
  float acc[MR][NR] = {{0}};
  for (int64_t k = 0; k < kc; k++)
    for (int r = 0; r < MR; r++)
      for (int j = 0; j < NR; j++) acc[r][j] += ap[k * MR + r] * bp[k * NR + j];
  for (int r = 0; r < MR; r++)
    for (int j = 0; j < NR; j++) c[r * ldc + j] = (accumulate ? c[r * ldc + j] : 0) + acc[r][j];
}

/* A row / column scale factor or the result scale; block scales are applied while packing. */
static float scale_at(const blocked_state_t *s, int which, int64_t stride, int64_t i) {
  if (!s->base[which] || (s->p->block && which != XR_GEMM_SCALE_RESULT)) return 1.0f;
  return ((const float *)s->base[which])[s->offset[which] + i * stride];
}

static void store_out(uint8_t *base, xr_dtype_t dtype, int64_t index, float v) {
  switch (dtype) {
    case XR_DTYPE_F32: ((float *)base)[index] = v; break;
    case XR_DTYPE_BF16: ((uint16_t *)base)[index] = xr_f32_to_bf16(v); break;
    case XR_DTYPE_F16: ((_Float16 *)base)[index] = (_Float16)v; break;
    default: xr_store_element(base, dtype, index, v); break;
  }
}

__attribute__((target("avx512f,f16c"))) static void store_row_f16_avx512(_Float16 *dst,
                                                                           const float *src,
                                                                           int64_t n) {
  int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    _mm256_storeu_si256((__m256i *)(dst + j),
                        _mm512_cvtps_ph(_mm512_loadu_ps(src + j),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; j < n; j++) dst[j] = (_Float16)src[j];
}

XR_AVX2_FMA static void store_row_f16_avx2(_Float16 *dst, const float *src, int64_t n) {
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    _mm_storeu_si128(
        (__m128i *)(dst + j),
        _mm256_cvtps_ph(_mm256_loadu_ps(src + j), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; j < n; j++) dst[j] = (_Float16)src[j];
}

/* out[index .. index + n) = src rounded to the output dtype (plain epilogue). */
static void store_row(const blocked_state_t *s, int64_t index, const float *src, int64_t n) {
  uint8_t *base = s->base[XR_GEMM_OUT];
  switch (s->p->out_dtype) {
    case XR_DTYPE_F32: memcpy((float *)base + index, src, sizeof(float) * (size_t)n); break;
    case XR_DTYPE_BF16: {
      uint16_t *dst = (uint16_t *)base + index;
      for (int64_t j = 0; j < n; j++) dst[j] = xr_f32_to_bf16(src[j]);
      break;
    }
    default: { /* fp16 (plain_epilogue admits no other dtype) */
      _Float16 *dst = (_Float16 *)base + index;
      if (s->isa == XR_FMA_AVX512)
        store_row_f16_avx512(dst, src, n);
      else if (s->isa == XR_FMA_AVX2)
        store_row_f16_avx2(dst, src, n);
      else
        for (int64_t j = 0; j < n; j++) dst[j] = (_Float16)src[j];
      break;
    }
  }
}

/* out = result_scale * (alpha * sa[m] * sb[n] * acc + beta * C) for one tile; acc[r * ldc + j]. */
static void epilogue(const blocked_state_t *s, int64_t bi, int64_t m0, int64_t mc, int64_t n0,
                     int64_t nc, const float *acc, int64_t ldc) {
  const xr_gemm_problem_t *p = s->p;
  float result_scale = scale_at(s, XR_GEMM_SCALE_RESULT, 0, 0);
  int64_t oo = s->offset[XR_GEMM_OUT] + xr_gemm_offset(&p->out, p, bi);
  int64_t co = s->base[XR_GEMM_C] ? s->offset[XR_GEMM_C] + xr_gemm_offset(&p->c, p, bi) : 0;
  float beta = (float)p->beta;
  if (s->plain_epilogue) {
    for (int64_t r = 0; r < mc; r++)
      store_row(s, oo + (m0 + r) * p->out.row_stride + n0, acc + r * ldc, nc);
    return;
  }
  for (int64_t r = 0; r < mc; r++) {
    int64_t m = m0 + r;
    float row_scale = (float)p->alpha * scale_at(s, XR_GEMM_SCALE_A, p->scale_a.stride, m);
    for (int64_t j = 0; j < nc; j++) {
      int64_t n = n0 + j;
      float v = row_scale * scale_at(s, XR_GEMM_SCALE_B, p->scale_b.stride, n) * acc[r * ldc + j];
      if (s->base[XR_GEMM_C]) {
        float c;
        load_f32(s->base[XR_GEMM_C], p->c_dtype, NULL, co + m * p->c.row_stride + n * p->c.col_stride,
                 0, 1, &c, 0);
        v += beta * c;
      }
      store_out(s->base[XR_GEMM_OUT], p->out_dtype,
                oo + m * p->out.row_stride + n * p->out.col_stride, v * result_scale);
    }
  }
}

static float *slot_acquire(blocked_state_t *s, size_t *out_slot) {
  for (;;) {
    for (size_t i = 0; i < s->slot_count; i++) {
      if (!atomic_exchange(&s->slot_busy[i], 1)) {
        *out_slot = i;
        return s->slots[i];
      }
    }
  }
}

static void tiles_run(void *ctx, size_t begin, size_t end) {
  blocked_state_t *s = ctx;
  const xr_gemm_problem_t *p = s->p;
  size_t slot;
  float *scratch = slot_acquire(s, &slot);
  float *ap = scratch, *bp = ap + (size_t)MC * KC, *acc = bp + (size_t)KC * NC;
  void (*micro)(int64_t, const float *, const float *, float *, int64_t, bool) =
      s->isa == XR_FMA_AVX512 ? micro_avx512
      : s->isa == XR_FMA_AVX2 ? micro_avx2
                              : micro_generic;
  for (size_t t = begin; t < end; t++) {
    int64_t per_batch = s->m_blocks * s->n_blocks;
    int64_t bi = (int64_t)t / per_batch, rest = (int64_t)t % per_batch;
    int64_t m0 = (rest / s->n_blocks) * s->mc, n0 = (rest % s->n_blocks) * NC;
    int64_t mc = p->M - m0 < s->mc ? p->M - m0 : s->mc;
    int64_t nc = p->N - n0 < NC ? p->N - n0 : NC;
    int64_t a_off = s->offset[XR_GEMM_A] + xr_gemm_offset(&p->a, p, bi);
    int64_t b_off = s->offset[XR_GEMM_B] + xr_gemm_offset(&p->b, p, bi);
    int64_t mc_pad = (mc + MR - 1) / MR * MR, nc_pad = (nc + NR - 1) / NR * NR;
    if (p->K == 0) memset(acc, 0, sizeof(float) * (size_t)(mc_pad * NC));
    for (int64_t k0 = 0; k0 < p->K; k0 += KC) {
      int64_t kc = p->K - k0 < KC ? p->K - k0 : KC;
      if (s->isa == XR_FMA_AVX512) {
        pack_a_avx512(s, a_off, m0, mc, k0, kc, ap);
        pack_b_avx512(s, b_off, k0, kc, n0, nc, bp);
      } else if (s->isa == XR_FMA_AVX2) {
        pack_a_avx2(s, a_off, m0, mc, k0, kc, ap);
        pack_b_avx2(s, b_off, k0, kc, n0, nc, bp);
      } else {
        pack_a_generic(s, a_off, m0, mc, k0, kc, ap);
        pack_b_generic(s, b_off, k0, kc, n0, nc, bp);
      }
      for (int64_t i = 0; i < mc_pad; i += MR)
        for (int64_t j = 0; j < nc_pad; j += NR)
          micro(kc, ap + i * kc, bp + j * kc, acc + i * NC + j, NC, k0 > 0);
    }
    epilogue(s, bi, m0, mc, n0, nc, acc, NC);
  }
  atomic_store(&s->slot_busy[slot], 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Dot-product path: out[m][n] = a[m][:] . b[:][n] with K contiguous in both. A (at most
 * DOT_MAX_M rows) is converted to fp32 once by the first step; each work item then streams a
 * block of B's columns once, converting as it loads. */

static void dot_convert_a(void *ctx) {
  blocked_state_t *s = ctx;
  const xr_gemm_problem_t *p = s->p;
  int64_t m_pad = (p->M + 3) / 4 * 4; /* padding rows stay zero (calloc) */
  for (int64_t bi = 0; bi < p->batch; bi++)
    for (int64_t m = 0; m < p->M; m++)
      load_f32(s->base[XR_GEMM_A], p->a_dtype, s->lut_a,
               s->offset[XR_GEMM_A] + xr_gemm_offset(&p->a, p, bi) + m * p->a.row_stride, 1, p->K,
               s->dot_a + (bi * m_pad + m) * p->K, 1);
}

/* The vector paths' remainder: sum over k in [k0, K) of a_row[k] * col[k] (B's dtype). */
static float dot_tail(const uint8_t *col, xr_dtype_t dtype, const float *a_row, int64_t k0,
                      int64_t K) {
  float v = 0;
  for (int64_t k = k0; k < K; k++) {
    float bk;
    load_f32(col, dtype, NULL, k, 1, 1, &bk, 1);
    v += a_row[k] * bk;
  }
  return v;
}

/* One B column's 16 values at k as fp32. */
__attribute__((target("avx512f,avx512bw"))) static inline __m512 dot_load_b(const uint8_t *col,
                                                                           xr_dtype_t dtype,
                                                                           int64_t k) {
  if (dtype == XR_DTYPE_F32) return _mm512_loadu_ps((const float *)col + k);
  __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)col + k));
  if (dtype == XR_DTYPE_F16) return _mm512_cvtph_ps(h);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); /* bf16 */
}

/* 4 rows x 4 columns per step: 16 accumulators, 8 loads per 16 FMAs; a B column is read from
 * memory once and from L1 for the other row groups. */
__attribute__((target("avx512f,avx512bw"))) static void dot_columns_avx512(
    const blocked_state_t *s, int64_t bi, int64_t n0, int64_t n1, float *acc) {
  const xr_gemm_problem_t *p = s->p;
  int64_t K = p->K, K16 = K / 16 * 16, m_pad = (p->M + 3) / 4 * 4;
  const float *a = s->dot_a + bi * m_pad * K;
  int64_t b_off = s->offset[XR_GEMM_B] + xr_gemm_offset(&p->b, p, bi);
  size_t esize = xr_dtype_size(p->b_dtype);
  for (int64_t n = n0; n < n1; n += 4) {
    const uint8_t *col[4];
    for (int j = 0; j < 4; j++) {
      int64_t nj = n + j < n1 ? n + j : n1 - 1; /* past the end: recompute the last column */
      col[j] = s->base[XR_GEMM_B] + (size_t)(b_off + nj * p->b.col_stride) * esize;
    }
    for (int64_t m = 0; m < p->M; m += 4) {
      __m512 sum[4][4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) sum[i][j] = _mm512_setzero_ps();
      for (int64_t k = 0; k < K16; k += 16) {
        __m512 b[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) b[j] = dot_load_b(col[j], p->b_dtype, k);
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
          __m512 av = _mm512_loadu_ps(a + (m + i) * K + k);
#pragma GCC unroll 4
          for (int j = 0; j < 4; j++) sum[i][j] = _mm512_fmadd_ps(av, b[j], sum[i][j]);
        }
      }
      for (int i = 0; i < 4 && m + i < p->M; i++) {
        for (int j = 0; j < 4 && n + j < n1; j++) {
          acc[(m + i) * DOT_N_BLOCK + (n + j - n0)] =
              _mm512_reduce_add_ps(sum[i][j]) +
              dot_tail(col[j], p->b_dtype, a + (m + i) * K, K16, K);
        }
      }
    }
  }
}

/* One B column's 8 values at k as fp32. */
XR_AVX2_FMA static inline __m256 dot_load_b_avx2(const uint8_t *col, xr_dtype_t dtype, int64_t k) {
  if (dtype == XR_DTYPE_F32) return _mm256_loadu_ps((const float *)col + k);
  __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)col + k));
  if (dtype == XR_DTYPE_F16) return _mm256_cvtph_ps(h);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); /* bf16 */
}

XR_AVX2_FMA static inline float hsum_avx2(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}

/* As dot_columns_avx512 with AVX2's 16 registers: 4 rows x 2 columns per step, 8 accumulators,
 * 6 loads per 8 FMAs. */
XR_AVX2_FMA static void dot_columns_avx2(const blocked_state_t *s, int64_t bi, int64_t n0,
                                         int64_t n1, float *acc) {
  const xr_gemm_problem_t *p = s->p;
  int64_t K = p->K, K8 = K / 8 * 8, m_pad = (p->M + 3) / 4 * 4;
  const float *a = s->dot_a + bi * m_pad * K;
  int64_t b_off = s->offset[XR_GEMM_B] + xr_gemm_offset(&p->b, p, bi);
  size_t esize = xr_dtype_size(p->b_dtype);
  for (int64_t n = n0; n < n1; n += 2) {
    int64_t n_last = n + 1 < n1 ? n + 1 : n; /* past the end: recompute the last column */
    const uint8_t *col0 = s->base[XR_GEMM_B] + (size_t)(b_off + n * p->b.col_stride) * esize;
    const uint8_t *col1 = s->base[XR_GEMM_B] + (size_t)(b_off + n_last * p->b.col_stride) * esize;
    for (int64_t m = 0; m < p->M; m += 4) {
      const float *a0 = a + m * K, *a1 = a0 + K, *a2 = a1 + K, *a3 = a2 + K;
      __m256 s00 = _mm256_setzero_ps(), s01 = s00, s10 = s00, s11 = s00;
      __m256 s20 = s00, s21 = s00, s30 = s00, s31 = s00;
      for (int64_t k = 0; k < K8; k += 8) {
        __m256 b0 = dot_load_b_avx2(col0, p->b_dtype, k), b1 = dot_load_b_avx2(col1, p->b_dtype, k);
        __m256 x = _mm256_loadu_ps(a0 + k);
        s00 = _mm256_fmadd_ps(x, b0, s00), s01 = _mm256_fmadd_ps(x, b1, s01);
        x = _mm256_loadu_ps(a1 + k);
        s10 = _mm256_fmadd_ps(x, b0, s10), s11 = _mm256_fmadd_ps(x, b1, s11);
        x = _mm256_loadu_ps(a2 + k);
        s20 = _mm256_fmadd_ps(x, b0, s20), s21 = _mm256_fmadd_ps(x, b1, s21);
        x = _mm256_loadu_ps(a3 + k);
        s30 = _mm256_fmadd_ps(x, b0, s30), s31 = _mm256_fmadd_ps(x, b1, s31);
      }
      __m256 sums[4][2] = {{s00, s01}, {s10, s11}, {s20, s21}, {s30, s31}};
      const uint8_t *cols[2] = {col0, col1};
      for (int i = 0; i < 4 && m + i < p->M; i++) {
        for (int j = 0; j < 2 && n + j < n1; j++) {
          acc[(m + i) * DOT_N_BLOCK + (n + j - n0)] =
              hsum_avx2(sums[i][j]) + dot_tail(cols[j], p->b_dtype, a + (m + i) * K, K8, K);
        }
      }
    }
  }
}

static void dot_columns_generic(const blocked_state_t *s, int64_t bi, int64_t n0, int64_t n1,
                                float *acc) {
  const xr_gemm_problem_t *p = s->p;
  const float *a = s->dot_a + bi * ((p->M + 3) / 4 * 4) * p->K;
  int64_t b_off = s->offset[XR_GEMM_B] + xr_gemm_offset(&p->b, p, bi);
  float col[KC];
  for (int64_t n = n0; n < n1; n++) {
    for (int64_t m = 0; m < p->M; m++) acc[m * DOT_N_BLOCK + (n - n0)] = 0;
    for (int64_t k0 = 0; k0 < p->K; k0 += KC) {
      int64_t kc = p->K - k0 < KC ? p->K - k0 : KC;
      load_f32(s->base[XR_GEMM_B], p->b_dtype, s->lut_b, b_off + n * p->b.col_stride + k0, 1, kc,
               col, 1);
      for (int64_t m = 0; m < p->M; m++) {
        float v = 0;
        for (int64_t k = 0; k < kc; k++) v += a[m * p->K + k0 + k] * col[k];
        acc[m * DOT_N_BLOCK + (n - n0)] += v;
      }
    }
  }
}

static void dot_run(void *ctx, size_t begin, size_t end) {
  blocked_state_t *s = ctx;
  const xr_gemm_problem_t *p = s->p;
  size_t slot;
  float *acc = slot_acquire(s, &slot);
  /* The vector paths load f32, bf16 and f16 columns. */
  xr_fma_isa_t isa = xr_dtype_is_fp8(p->b_dtype) ? XR_FMA_PLAIN_C : s->isa;
  for (size_t t = begin; t < end; t++) {
    int64_t bi = (int64_t)t / s->n_blocks, n0 = ((int64_t)t % s->n_blocks) * DOT_N_BLOCK;
    int64_t n1 = n0 + DOT_N_BLOCK < p->N ? n0 + DOT_N_BLOCK : p->N;
    if (isa == XR_FMA_AVX512)
      dot_columns_avx512(s, bi, n0, n1, acc);
    else if (isa == XR_FMA_AVX2)
      dot_columns_avx2(s, bi, n0, n1, acc);
    else dot_columns_generic(s, bi, n0, n1, acc);
    epilogue(s, bi, 0, p->M, n0, n1 - n0, acc, DOT_N_BLOCK);
  }
  atomic_store(&s->slot_busy[slot], 0);
}

/* ------------------------------------------------------------------------------------------ */

static xr_status_t blocked_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_gemm_problem_t *p = plan->problem;
  xr_dtype_t dtypes[] = {p->a_dtype, p->b_dtype, p->out_dtype, p->c_dtype};
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (dtypes[i] == XR_DTYPE_F64)
      return xr_error(XR_UNIMPLEMENTED,
                      "cpu.gemm_blocked: %s: float64 needs float64 accumulation; it accumulates in "
                      "float32", plan->op->name);
  return XR_OK;
}

static void blocked_release(void *state) {
  blocked_state_t *s = state;
  if (!s) return;
  for (size_t i = 0; s->slots && i < s->slot_count; i++) free(s->slots[i]);
  free(s->slots);
  free(s->slot_busy);
  free(s->dot_a);
  free(s);
}

static xr_status_t blocked_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                   const xr_tensor_t *tensors, void **out_state) {
  const xr_gemm_problem_t *p = plan->problem;
  blocked_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "cpu.gemm_blocked: out of memory");
  s->p = p;
  int idx[XR_GEMM_OPERANDS];
  xr_gemm_bindings(p, idx);
  for (int i = 0; i < XR_GEMM_OPERANDS; i++) {
    if (idx[i] < 0) continue;
    void *base;
    xr_status_t st = xr_tensor_host(&tensors[idx[i]], &base);
    if (st != XR_OK) {
      blocked_release(s);
      return st;
    }
    s->base[i] = base;
    s->offset[i] = tensors[idx[i]].offset;
  }
  for (int v = 0; v < 256; v++) {
    if (xr_dtype_is_fp8(p->a_dtype)) s->lut_a[v] = xr_fp8_to_f32((uint8_t)v, p->a_dtype);
    if (xr_dtype_is_fp8(p->b_dtype)) s->lut_b[v] = xr_fp8_to_f32((uint8_t)v, p->b_dtype);
    if (xr_gemm_fp4(p)) s->lut_a[v] = s->lut_b[v] = xr_e2m1_to_f32((uint8_t)(v & 0x0f));
    if (p->block && p->scale_dtype == XR_DTYPE_F8E8M0) s->lut_scale[v] = xr_e8m0_to_f32((uint8_t)v);
    else if (p->block) s->lut_scale[v] = xr_fp8_to_f32((uint8_t)v, p->scale_dtype);
  }
  s->isa = xr_fma_isa();
  s->plain_epilogue = p->alpha == 1 && !s->base[XR_GEMM_C] && !s->base[XR_GEMM_SCALE_A] &&
                      !s->base[XR_GEMM_SCALE_B] && !s->base[XR_GEMM_SCALE_RESULT] &&
                      p->out.col_stride == 1 &&
                      (p->out_dtype == XR_DTYPE_F32 || p->out_dtype == XR_DTYPE_BF16 ||
                       p->out_dtype == XR_DTYPE_F16);
  s->dot = !p->block && p->M <= DOT_MAX_M && p->K > 0 && p->a.col_stride == 1 &&
           p->b.row_stride == 1;
  s->mc = p->M < MC ? (p->M + MR - 1) / MR * MR : MC;
  if (s->mc == 0) s->mc = MR;
  s->m_blocks = (p->M + s->mc - 1) / s->mc;
  s->n_blocks = (p->N + (s->dot ? DOT_N_BLOCK : NC) - 1) / (s->dot ? DOT_N_BLOCK : NC);
  xr_hal_device_properties_t props;
  xr_status_t st = xr_hal_device_properties(device, &props);
  if (st != XR_OK) {
    blocked_release(s);
    return st;
  }
  /* One slot per pool thread plus one for the stream's own worker. */
  s->slot_count = (props.compute_units ? props.compute_units : 1) + 1;
  size_t slot_floats = s->dot ? (size_t)DOT_MAX_M * DOT_N_BLOCK : SCRATCH_FLOATS;
  s->slots = calloc(s->slot_count, sizeof *s->slots);
  s->slot_busy = calloc(s->slot_count, sizeof *s->slot_busy);
  bool ok = s->slots && s->slot_busy;
  for (size_t i = 0; ok && i < s->slot_count; i++)
    ok = (s->slots[i] = aligned_alloc(64, slot_floats * sizeof(float))) != NULL;
  if (ok && s->dot)
    ok = (s->dot_a = calloc((size_t)(p->batch * ((p->M + 3) / 4 * 4) * p->K), sizeof(float))) != NULL;
  if (!ok) {
    blocked_release(s);
    return xr_error(XR_RESOURCE_EXHAUSTED, "cpu.gemm_blocked: %s: out of memory for scratch",
                    plan->op->name);
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t blocked_enqueue(void *state, xr_hal_stream_t *stream) {
  blocked_state_t *s = state;
  const xr_gemm_problem_t *p = s->p;
  size_t tiles = (size_t)(p->batch * s->m_blocks * s->n_blocks);
  if (tiles == 0) return XR_OK;
  if (s->dot) {
    xr_status_t st = xr_hal_stream_enqueue_host(stream, dot_convert_a, s);
    if (st != XR_OK) return st;
    return xr_hal_stream_enqueue_parallel(stream, tiles, 1, dot_run, s);
  }
  return xr_hal_stream_enqueue_parallel(stream, tiles, 1, tiles_run, s);
}

const xr_kernel_impl_t xr_gemm_cpu_blocked_impl = {
    .name = "cpu.gemm_blocked",
    .driver = "cpu",
    .supports = blocked_supports,
    .prepare = blocked_prepare,
    .enqueue = blocked_enqueue,
    .release = blocked_release,
};
