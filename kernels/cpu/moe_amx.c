/* AMX kernels of the fused-experts path; see moe_amx.h. Both run gemm_blocks: blocks of 32 rows
 * (16 at the end of an expert) by a pair of weight tile columns, in the four accumulator tiles
 * tmm0-3 (A tiles in tmm4-5, weight tiles in tmm6-7), each finished block handed to the
 * kernel's epilogue. */
#include "kernels/cpu/moe_amx.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/avx512.h"
#include "kernels/dtype.h"

#if defined(XR_HAVE_AVX512_PATHS) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#define XR_AMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,fma")))
/* Inlined into each kernel, the epilogue with it: no call per block. */
#define XR_AMX_INLINE static inline XR_AMX __attribute__((always_inline))

enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18, TILE = 512 /* elements */ };

static bool amx_usable;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

static void probe_amx(void) {
  const char *setting = getenv("XR_CPU_AMX");
  unsigned a, b, c, d;
  if ((setting && !strcmp(setting, "off")) || !xr_cpu_avx512() || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
    return;
  bool tile = d & (1u << 24), bf16 = d & (1u << 22);
  /* Linux hands out the 8 KB tile state only to processes that ask (since 5.16). */
  amx_usable = tile && bf16 && syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

bool xr_amx_usable(void) {
  pthread_once(&amx_once, probe_amx);
  return amx_usable;
}

void xr_amx_pack(const uint16_t *w, int64_t col_stride, int64_t k_stride, int64_t cols, int64_t depth,
                 uint16_t *out) {
  for (int64_t c0 = 0; c0 < cols; c0 += 16)
    for (int64_t k0 = 0; k0 < depth; k0 += 32, out += TILE)
      for (int64_t p = 0; p < 16; p++)
        for (int64_t c = 0; c < 16; c++) {
          const uint16_t *from = w + (c0 + c) * col_stride + (k0 + 2 * p) * k_stride;
          if (k_stride == 1) { /* the pair at once */
            memcpy(out + p * 32 + c * 2, from, 2 * sizeof(uint16_t));
          } else {
            out[p * 32 + c * 2] = from[0];
            out[p * 32 + c * 2 + 1] = from[k_stride];
          }
        }
}

/* bf16 bits of the e2m1 magnitudes' codes 0..15 (the sign in bit 3) */
static const uint32_t e2m1_bf16[16] = {0x0000, 0x3f00, 0x3f80, 0x3fc0, 0x4000, 0x4040, 0x4080, 0x40c0,
                                       0x8000, 0xbf00, 0xbf80, 0xbfc0, 0xc000, 0xc040, 0xc080, 0xc0c0};

/* A tile column's 16 code pairs and their scale byte, as 16 bf16 pairs (low half: even k). The
 * scale is a power of two, added to the exponent of every non-zero value: exact while the
 * results stay normal (scales 2^-125 to 2^125; the caller decodes others one by one). */
XR_AVX512_INLINE __m512i decode_pairs(const uint8_t *pairs, uint8_t scale) {
  const __m512i lut = _mm512_loadu_si512(e2m1_bf16), seven = _mm512_set1_epi32(7), low = _mm512_set1_epi32(15);
  __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)pairs));
  __m512i lo = _mm512_and_si512(b, low), hi = _mm512_srli_epi32(b, 4);
  __m512i delta = _mm512_set1_epi32(((int)scale - 127) * 128);
  __m512i vlo = _mm512_permutexvar_epi32(lo, lut), vhi = _mm512_permutexvar_epi32(hi, lut);
  vlo = _mm512_mask_add_epi32(vlo, _mm512_test_epi32_mask(lo, seven), vlo, delta);
  vhi = _mm512_mask_add_epi32(vhi, _mm512_test_epi32_mask(hi, seven), vhi, delta);
  return _mm512_or_si512(vlo, _mm512_slli_epi32(vhi, 16));
}

/* A 16 x 16 matrix of 32-bit elements transposed in registers: row k of the result holds lane
 * k of every input row, in row order. */
XR_AVX512_INLINE void transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 16; i += 8)
    for (int j = 0; j < 4; j++) {
      t[i + j] = _mm512_shuffle_i32x4(r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_i32x4(r[i + j], r[i + j + 4], 0xdd);
    }
  for (int j = 0; j < 8; j++) {
    r[j] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0xdd);
  }
}

/* One column's pairs with an extreme scale, through float (flushing as bf16 does). */
static __m512i XR_AMX decode_pairs_slowly(const uint8_t *pairs, uint8_t scale) {
  uint32_t v[16];
  float f = ldexpf(1.0f, (int)scale - 127);
  for (int p = 0; p < 16; p++) {
    float a = xr_bits_to_f32(e2m1_bf16[pairs[p] & 15] << 16) * f, b = xr_bits_to_f32(e2m1_bf16[pairs[p] >> 4] << 16) * f;
    v[p] = (xr_f32_to_bits(a) >> 16) | (xr_f32_to_bits(b) >> 16 << 16);
  }
  return _mm512_loadu_si512(v);
}

XR_AMX void xr_amx_pack_mxfp4(const uint8_t *codes, int64_t col_stride, const uint8_t *scales, int64_t scale_stride,
                              int64_t cols, int64_t depth, uint16_t *out) {
  /* tile element (p, c) pair: the 32 bits at out + p * 32 + 2 c; a column decodes to its 16
   * pairs, so 16 columns make the tile transposed */
  __m512i r[16];
  for (int64_t c0 = 0; c0 < cols; c0 += 16)
    for (int64_t k0 = 0; k0 < depth; k0 += 32, out += TILE) {
      for (int64_t c = 0; c < 16; c++) {
        const uint8_t *pairs = codes + (c0 + c) * col_stride + k0 / 2;
        uint8_t scale = scales[(c0 + c) * scale_stride + k0 / 32];
        r[c] = scale >= 2 && scale <= 252 ? decode_pairs(pairs, scale) : decode_pairs_slowly(pairs, scale);
      }
      transpose16(r);
      for (int p = 0; p < 16; p++) _mm512_storeu_si512(out + p * 32, r[p]);
    }
}

/* Denormals flushed (MXCSR FTZ and DAZ) while a kernel runs, as TDPBF16PS always does: each
 * denormal result of an epilogue takes a microcode assist. Before avx512.h's exp returned exact
 * 0 for tiny results, silu of a large |g| went through e^-88, and the GEMM-1 epilogue took as long
 * as the GEMM (Qwen1.5-MoE prefill). */
enum { MXCSR_FTZ_DAZ = 0x8040 };

/* Every tile 16 rows of 64 bytes (palette 1). */
typedef struct __attribute__((aligned(64))) tile_config {
  uint8_t palette, start_row, reserved[14];
  uint16_t bytes_per_row[16];
  uint8_t rows[16];
} tile_config_t;

XR_AMX static void configure_tiles(void) {
  tile_config_t config;
  memset(&config, 0, sizeof config);
  config.palette = 1;
  for (int t = 0; t < 8; t++) config.bytes_per_row[t] = 64, config.rows[t] = 16;
  _tile_loadconfig(&config);
}

/* The next slice's weights, a few prefetches per step of the K loops, all of them by the last
 * step. With many rows the slice's compute hides the fetch, and every line is prefetched. With
 * fewer than SPARSE_BELOW rows fetching the weights takes longer than the compute, and one
 * prefetch per KB does better: it sets the L2's own prefetcher going on each stretch. Measured
 * (moe_bench, alternating frozen runs): OLMoE at 64 rows per expert 52-56 ms against 63-67,
 * Mixtral 1/4 at 64 rows 42 against 49, OLMoE at 16 rows 31-32 against 34; but Qwen at 273 rows
 * 213-222 against 200, OLMoE at 256 rows 146-160 against 138-149. */
enum { SPARSE_BELOW = 128, SPARSE_STRIDE = 1024 };

typedef struct ahead_cursor {
  const char *at, *end;
  size_t stride, per_step; /* bytes between prefetches, prefetches per step */
} ahead_cursor_t;

static ahead_cursor_t ahead_start(xr_amx_ahead_t ahead, int64_t rows, size_t steps) {
  size_t stride = rows < SPARSE_BELOW ? SPARSE_STRIDE : 64, count = (ahead.bytes + stride - 1) / stride;
  return (ahead_cursor_t){ahead.at, (const char *)ahead.at + ahead.bytes, stride,
                          (count + steps - 1) / (steps ? steps : 1)};
}

static inline __attribute__((always_inline)) void ahead_step(ahead_cursor_t *a) {
  for (size_t i = 0; i < a->per_step && a->at < a->end; i++, a->at += a->stride) _mm_prefetch(a->at, _MM_HINT_T1);
}

/* 16 floats rounded to bf16 and back, as a value stored in bf16 reads. */
XR_AVX512_INLINE __m512 bf16_rounded(__m512 v) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(xr_avx512_bf16_encode(v)), 16));
}

/* What a kernel does with a finished block: rows m .. m + 15 (tiles 0 and 1 of acc) and, when
 * `two`, m + 16 .. m + 31 (tiles 2 and 3), times the pair j of weight tile columns. */
typedef void (*block_epilogue_fn)(const void *ctx, int64_t m, bool two, int64_t j, float acc[4][16][16]);

/* A (tiled rows x depth) times `pairs` pairs of packed weight tile columns (pair j's first column
 * at w + 2 j depth/32 tiles, its second right after), block by block: 32 rows (16 at the end)
 * by the pair, over the whole depth, in tmm0-3; each finished block goes to `epilogue`. */
XR_AMX_INLINE void gemm_blocks(const uint16_t *A, int64_t rows, int64_t depth, const uint16_t *w,
                               int64_t pairs, xr_amx_ahead_t ahead, block_epilogue_fn epilogue,
                               const void *ctx) {
  const int64_t KT = depth / 32;
  float acc[4][16][16] __attribute__((aligned(64)));
  ahead_cursor_t cursor = ahead_start(ahead, rows, (size_t)(((rows + 31) / 32) * pairs * KT));
  unsigned mxcsr = _mm_getcsr();
  _mm_setcsr(mxcsr | MXCSR_FTZ_DAZ);
  configure_tiles();
  for (int64_t m = 0; m < rows; m += 32) {
    bool two = rows - m >= 32;
    const uint16_t *a0 = A + (m / 16) * KT * TILE, *a1 = a0 + KT * TILE;
    for (int64_t j = 0; j < pairs; j++) {
      const uint16_t *b0 = w + 2 * j * KT * TILE, *b1 = b0 + KT * TILE;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      if (two) {
        for (int64_t t = 0; t < KT; t++) {
          _tile_loadd(4, a0 + t * TILE, 64);
          _tile_loadd(6, b0 + t * TILE, 64);
          _tile_loadd(7, b1 + t * TILE, 64);
          _tile_loadd(5, a1 + t * TILE, 64);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          _tile_dpbf16ps(2, 5, 6);
          _tile_dpbf16ps(3, 5, 7);
          ahead_step(&cursor);
        }
      } else {
        for (int64_t t = 0; t < KT; t++) {
          _tile_loadd(4, a0 + t * TILE, 64);
          _tile_loadd(6, b0 + t * TILE, 64);
          _tile_loadd(7, b1 + t * TILE, 64);
          _tile_dpbf16ps(0, 4, 6);
          _tile_dpbf16ps(1, 4, 7);
          ahead_step(&cursor);
        }
      }
      _tile_stored(0, acc[0], 64);
      _tile_stored(1, acc[1], 64);
      _tile_stored(2, acc[2], 64);
      _tile_stored(3, acc[3], 64);
      epilogue(ctx, m, two, j, acc);
    }
  }
  _tile_release();
  _mm_setcsr(mxcsr);
}

typedef struct gate_up_out {
  uint16_t *H;
  int64_t h_depth, h_col0;
  const xr_amx_act_t *act;
} gate_up_out_t;

/* 16 biases from `at`, or zeros. */
XR_AVX512_INLINE __m512 bias16(const float *bias, int64_t at) {
  return bias ? _mm512_loadu_ps(bias + at) : _mm512_setzero_ps();
}

/* Pair j is gate and up of the same 16 columns: H = bf16(act(bf16 g, bf16 u)). */
XR_AMX_INLINE void gate_up_epilogue(const void *ctx, int64_t m, bool two, int64_t j, float acc[4][16][16]) {
  const gate_up_out_t *o = ctx;
  const xr_amx_act_t *act = o->act;
  __m512 gb = bias16(act->gate_bias, 16 * j), ub = bias16(act->up_bias, 16 * j);
  __m512 limit = _mm512_set1_ps(act->limit), alpha = _mm512_set1_ps(act->alpha);
  __m512 inv_alpha = _mm512_set1_ps(1.0f / act->alpha), one = _mm512_set1_ps(1.0f);
  for (int64_t r = 0; r < (two ? 32 : 16); r++) {
    const float *g_row = acc[r < 16 ? 0 : 2][r & 15], *u_row = acc[r < 16 ? 1 : 3][r & 15];
    __m512 g = bf16_rounded(_mm512_add_ps(_mm512_load_ps(g_row), gb));
    __m512 u = bf16_rounded(_mm512_add_ps(_mm512_load_ps(u_row), ub)), h;
    if (act->swiglu) { /* g * sigmoid(alpha g) = silu(alpha g) / alpha */
      g = _mm512_min_ps(g, limit);
      u = _mm512_max_ps(_mm512_min_ps(u, limit), _mm512_sub_ps(_mm512_setzero_ps(), limit));
      h = _mm512_mul_ps(_mm512_mul_ps(xr_avx512_silu(_mm512_mul_ps(alpha, g)), inv_alpha), _mm512_add_ps(u, one));
    } else {
      h = _mm512_mul_ps(xr_avx512_silu(g), u);
    }
    _mm256_storeu_si256((__m256i *)(o->H + xr_amx_tiled_at(o->h_depth, m + r, o->h_col0 + 16 * j)),
                        xr_avx512_bf16_encode(h));
  }
}

XR_AMX void xr_amx_gate_up(const uint16_t *A, int64_t rows, int64_t depth, const uint16_t *gate_up,
                           int64_t cols, uint16_t *H, int64_t h_depth, int64_t h_col0, const xr_amx_act_t *act,
                           xr_amx_ahead_t ahead) {
  const gate_up_out_t out = {H, h_depth, h_col0, act};
  gemm_blocks(A, rows, depth, gate_up, cols / 16, ahead, gate_up_epilogue, &out);
}

typedef struct scaled_out {
  const float *scale, *bias;
  uint16_t *Y;
  int64_t ldy;
} scaled_out_t;

/* Pair j is columns 32 j .. 32 j + 31: Y = bf16(scale * (acc + bias)). */
XR_AMX_INLINE void scaled_epilogue(const void *ctx, int64_t m, bool two, int64_t j, float acc[4][16][16]) {
  const scaled_out_t *o = ctx;
  __m512 bl = bias16(o->bias, 32 * j), br = bias16(o->bias, 32 * j + 16);
  for (int64_t r = 0; r < (two ? 32 : 16); r++) {
    __m512 s = _mm512_set1_ps(o->scale[m + r]);
    const float *left = acc[r < 16 ? 0 : 2][r & 15], *right = acc[r < 16 ? 1 : 3][r & 15];
    __m512i y = _mm512_inserti64x4(
        _mm512_castsi256_si512(xr_avx512_bf16_encode(_mm512_mul_ps(_mm512_add_ps(_mm512_load_ps(left), bl), s))),
        xr_avx512_bf16_encode(_mm512_mul_ps(_mm512_add_ps(_mm512_load_ps(right), br), s)), 1);
    _mm512_storeu_si512(o->Y + (m + r) * o->ldy + 32 * j, y);
  }
}

XR_AMX void xr_amx_scaled(const uint16_t *A, int64_t rows, int64_t depth, const uint16_t *w, int64_t cols,
                          const float *scale, const float *bias, uint16_t *Y, int64_t ldy, xr_amx_ahead_t ahead) {
  const scaled_out_t out = {scale, bias, Y, ldy};
  gemm_blocks(A, rows, depth, w, cols / 32, ahead, scaled_epilogue, &out);
}

#else

bool xr_amx_usable(void) { return false; }

void xr_amx_pack(const uint16_t *w, int64_t col_stride, int64_t k_stride, int64_t cols, int64_t depth,
                 uint16_t *out) {
  (void)w, (void)col_stride, (void)k_stride, (void)cols, (void)depth, (void)out;
}

void xr_amx_pack_mxfp4(const uint8_t *codes, int64_t col_stride, const uint8_t *scales, int64_t scale_stride,
                       int64_t cols, int64_t depth, uint16_t *out) {
  (void)codes, (void)col_stride, (void)scales, (void)scale_stride, (void)cols, (void)depth, (void)out;
}

void xr_amx_gate_up(const uint16_t *A, int64_t rows, int64_t depth, const uint16_t *gate_up,
                    int64_t cols, uint16_t *H, int64_t h_depth, int64_t h_col0, const xr_amx_act_t *act,
                    xr_amx_ahead_t ahead) {
  (void)A, (void)rows, (void)depth, (void)gate_up, (void)cols, (void)H, (void)h_depth, (void)h_col0, (void)act,
      (void)ahead;
}

void xr_amx_scaled(const uint16_t *A, int64_t rows, int64_t depth, const uint16_t *w, int64_t cols,
                   const float *scale, const float *bias, uint16_t *Y, int64_t ldy, xr_amx_ahead_t ahead) {
  (void)A, (void)rows, (void)depth, (void)w, (void)cols, (void)scale, (void)bias, (void)Y, (void)ldy, (void)ahead;
}

#endif
