/* The AMX kernels of the fused experts (kernels/cpu/moe_amx.h) against double precision: the
 * tiled layouts, a 16-row block after the 32-row ones, columns written at an offset and nothing
 * else, rows of large |g| whose silu passes through denormals, the routing factor per row
 * (0 for padding), and the caller's MXCSR left as it was. Skipped where the CPU has no AMX-BF16;
 * the fused-experts cases of moe_matrix_cpu run through whichever path the CPU takes. mxfp4 weights:
 * their decoding into tiles, and the golden mxfp4 GEMM through it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xmmintrin.h>

#include "formats/bundle.h"
#include "kernels/cpu/moe_amx.h"
#include "kernels/dtype.h"

enum { ROWS = 48, DEPTH = 96, COLS = 32, H_DEPTH = 64, H_COL0 = 32 };

static void require_amx(void) {
  if (!xr_amx_usable()) cr_skip_test("this CPU has no AMX-BF16 (or XR_CPU_AMX=off, or Linux refused the tile state)");
}

static uint64_t state = 0x9e3779b97f4a7c15u;

/* Uniform in [-1, 1), stored as bf16. */
static uint16_t random_bf16(float scale) {
  state = state * 6364136223846793005u + 1442695040888963407u;
  return xr_f32_to_bf16(scale * ((float)(state >> 40) / (float)(1u << 23) - 1.0f));
}

static float bf16(uint16_t v) { return xr_bf16_to_f32(v); }
static float round_bf16(double v) { return bf16(xr_f32_to_bf16((float)v)); }

/* A [ROWS][depth] as plain rows and tiled; row 5 scaled so that its dot products reach |g| ~ 100s. */
static void make_rows(int64_t depth, uint16_t *plain, uint16_t *tiled) {
  for (int64_t r = 0; r < ROWS; r++)
    for (int64_t k = 0; k < depth; k++) {
      uint16_t v = random_bf16(r == 5 ? 64.0f : 1.0f);
      plain[r * depth + k] = v;
      tiled[xr_amx_tiled_at(depth, r, k)] = v;
    }
}

static double dot(const uint16_t *a, const uint16_t *w, int64_t w_stride, int64_t depth) {
  double sum = 0;
  for (int64_t k = 0; k < depth; k++) sum += (double)bf16(a[k]) * bf16(w[k * w_stride]);
  return sum;
}

/* bf16 results against double: a few bf16 ulps of the result or of the terms' scale (the
 * kernel sums in fp32, in tile order). */
static void expect_close(float got, double want, double scale, const char *what, int64_t r, int64_t c) {
  double tolerance = 1.6e-2 * fabs(want) + 1e-3 * scale;
  cr_assert(fabs(got - want) <= tolerance, "%s (%lld, %lld): %g, want %g", what, (long long)r,
            (long long)c, got, want);
}

Test(amx, gate_up_silu_into_tiled_columns) {
  require_amx();
  uint16_t *A = malloc(sizeof(uint16_t) * ROWS * DEPTH), *At = malloc(sizeof(uint16_t) * ROWS * DEPTH);
  uint16_t *W = malloc(sizeof(uint16_t) * 2 * COLS * DEPTH); /* gate rows, then up rows: [2 COLS][DEPTH] */
  uint16_t *packed = malloc(sizeof(uint16_t) * 2 * COLS * DEPTH), *H = malloc(sizeof(uint16_t) * ROWS * H_DEPTH);
  make_rows(DEPTH, A, At);
  for (int64_t i = 0; i < 2 * COLS * DEPTH; i++) W[i] = random_bf16(1.0f);
  for (int64_t c = 0; c < COLS; c += 16)
    for (int part = 0; part < 2; part++)
      xr_amx_pack(W + (part * COLS + c) * DEPTH, DEPTH, 1, 16, DEPTH, packed + (2 * (c / 16) + part) * 16 * DEPTH);
  for (int64_t i = 0; i < ROWS * H_DEPTH; i++) H[i] = 0x7fc1; /* a NaN that must survive outside the slice */
  unsigned before = _mm_getcsr();
  xr_amx_gate_up(At, ROWS, DEPTH, packed, COLS, H, H_DEPTH, H_COL0, &(xr_amx_act_t){false, 1.0f, 0.0f, NULL, NULL}, (xr_amx_ahead_t){W, sizeof(uint16_t) * 2 * COLS * DEPTH});
  cr_assert_eq(_mm_getcsr(), before, "MXCSR changed: %#x, was %#x", _mm_getcsr(), before);
  int large = 0;
  for (int64_t r = 0; r < ROWS; r++)
    for (int64_t c = 0; c < H_DEPTH; c++) {
      uint16_t got = H[xr_amx_tiled_at(H_DEPTH, r, c)];
      if (c < H_COL0) {
        cr_assert_eq(got, 0x7fc1, "H (%lld, %lld) outside the slice was written", (long long)r, (long long)c);
        continue;
      }
      int64_t j = c - H_COL0;
      float g = round_bf16(dot(A + r * DEPTH, W + j * DEPTH, 1, DEPTH));
      float u = round_bf16(dot(A + r * DEPTH, W + (COLS + j) * DEPTH, 1, DEPTH));
      large += fabsf(g) > 90.0f;
      double want = (double)g / (1.0 + exp(-(double)g)) * u;
      expect_close(bf16(got), want, r == 5 ? 64.0 * 64.0 : 8.0, "silu(g) * u", r, c);
    }
  cr_assert_gt(large, 0, "no row reached |g| > 90: the denormal range went untested");
  free(A), free(At), free(W), free(packed), free(H);
}

Test(amx, scaled_rows_into_row_major_columns) {
  require_amx();
  enum { D = 64, C = 64, LDY = 80 };
  uint16_t *A = malloc(sizeof(uint16_t) * ROWS * D), *At = malloc(sizeof(uint16_t) * ROWS * D);
  uint16_t *W = malloc(sizeof(uint16_t) * C * D), *packed = malloc(sizeof(uint16_t) * C * D);
  uint16_t *Y = malloc(sizeof(uint16_t) * ROWS * LDY);
  float scale[ROWS];
  make_rows(D, A, At);
  /* W stored transposed ([D][C], as a w2 view can be): column c's k-th weight at k * C + c */
  for (int64_t i = 0; i < C * D; i++) W[i] = random_bf16(1.0f);
  xr_amx_pack(W, 1, C, C, D, packed);
  for (int64_t r = 0; r < ROWS; r++) scale[r] = r % 7 == 3 ? 0.0f : 0.25f + 0.01f * (float)r;
  for (int64_t i = 0; i < ROWS * LDY; i++) Y[i] = 0x7fc1;
  unsigned before = _mm_getcsr();
  xr_amx_scaled(At, ROWS, D, packed, C, scale, NULL, Y, LDY, (xr_amx_ahead_t){NULL, 0});
  cr_assert_eq(_mm_getcsr(), before);
  for (int64_t r = 0; r < ROWS; r++)
    for (int64_t c = 0; c < LDY; c++) {
      float got = bf16(Y[r * LDY + c]);
      if (c >= C) {
        cr_assert_eq(Y[r * LDY + c], 0x7fc1, "Y (%lld, %lld) past the slice was written", (long long)r, (long long)c);
        continue;
      }
      double want = scale[r] * dot(A + r * D, W + c, C, D);
      expect_close(got, want, r == 5 ? 64.0 : 1.0, "scale * (A . w)", r, c);
    }
  free(A), free(At), free(W), free(packed), free(Y);
}

/* mxfp4 weights decode into the same tiles xr_amx_pack makes of their bf16 values: every code in
 * every position, scales across the range (the extremes go through the slow path, which must
 * flush as bf16 rounding does), a column stride wider than the row. */
Test(amx, mxfp4_packs_as_its_decoded_bf16) {
  require_amx();
  enum { C = 32, D = 128, STRIDE = D / 2 + 8 };
  static uint8_t codes[C * STRIDE], scales[C * (D / 32)];
  static uint16_t plain[C * D], want[C * D], got[C * D];
  static const uint8_t scale_values[] = {0, 1, 2, 90, 120, 127, 130, 200, 252, 253, 254};
  for (int c = 0; c < C; c++) {
    for (int i = 0; i < D / 2; i++) codes[c * STRIDE + i] = (uint8_t)(c * 37 + i * 11);
    for (int b = 0; b < D / 32; b++) scales[c * (D / 32) + b] = scale_values[(c + 3 * b) % 11];
    for (int k = 0; k < D; k++) {
      uint8_t pair = codes[c * STRIDE + k / 2];
      float v = xr_e2m1_to_f32(k % 2 ? pair >> 4 : pair & 15) * xr_e8m0_to_f32(scales[c * (D / 32) + k / 32]);
      plain[c * D + k] = (uint16_t)(xr_f32_to_bits(v) >> 16); /* exact or flushed like the kernel */
    }
  }
  xr_amx_pack(plain, D, 1, C, D, want);
  xr_amx_pack_mxfp4(codes, STRIDE, scales, D / 32, C, D, got);
  for (int i = 0; i < C * D; i++) cr_assert_eq(got[i], want[i], "element %d: 0x%04x, expected 0x%04x", i, got[i], want[i]);
}

/* The golden mxfp4 GEMM (tests/data/golden, mx_gemm_mxfp4_M16_N24_K128: a bf16 [16, 128] times
 * an mxfp4 [24, 128] weight, expected from float64) through what the fused experts run: the
 * weight decoded into tiles (padded to 32 columns with zero codes) and GEMM-2's kernel with unit
 * row factors, compared as the manifest says (nmse 1e-4, atol 0.639, rtol 0.02). */
static void *golden(const char *name, size_t bytes) {
  char path[256];
  snprintf(path, sizeof path, "tests/data/golden/mx_gemm_mxfp4_M16_N24_K128__%s.npy", name);
  xr_npy_t npy;
  cr_assert_eq(xr_npy_load(path, &npy), XR_OK, "%s", xr_last_error());
  cr_assert_eq((size_t)npy.numel * npy.item_size, bytes, "%s", path);
  return npy.data; /* the caller frees it */
}

Test(amx, golden_mxfp4_gemm) {
  require_amx();
  enum { M = 16, N = 24, K = 128, NP = 32 };
  uint16_t *a = golden("a", M * K * 2), At[M * K];
  uint8_t *b = golden("b_packed", N * K / 2), *bs = golden("b_scales", N * K / 32);
  float *want = golden("expected_out", M * N * 4), one[M];
  static uint8_t codes[NP * K / 2], scales[NP * K / 32];
  static uint16_t packed[NP * K], Y[M * NP];
  memcpy(codes, b, N * K / 2);
  memcpy(scales, bs, N * K / 32);
  for (int i = N * K / 32; i < NP * K / 32; i++) scales[i] = 127;
  for (int r = 0; r < M; r++)
    for (int k = 0; k < K; k++) At[xr_amx_tiled_at(K, r, k)] = a[r * K + k];
  for (int r = 0; r < M; r++) one[r] = 1.0f;
  xr_amx_pack_mxfp4(codes, K / 2, scales, K / 32, NP, K, packed);
  xr_amx_scaled(At, M, K, packed, NP, one, NULL, Y, NP, (xr_amx_ahead_t){NULL, 0});
  double num = 0, den = 0;
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      double got = bf16(Y[m * NP + n]), e = want[m * N + n];
      cr_assert_leq(fabs(got - e), 0.639 + 0.02 * fabs(e), "out[%d, %d]: %g, expected %g", m, n, got, e);
      num += (got - e) * (got - e), den += e * e;
    }
  cr_assert_leq(num / den, 1e-4);
  free(a), free(b), free(bs), free(want);
}
