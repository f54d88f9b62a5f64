/* Microscaling element formats (base/float_formats.h): every e2m1 code and the midpoints between
 * codes, e8m0 scales, and the golden format vectors (tests/data/golden, cases "mx_*": quantize
 * vectors compared exactly, GEMMs with mx weights against the float64 expected output). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "kernels/dtype.h"

#define GOLDEN "tests/data/golden"

Test(mx, every_e2m1_code_round_trips) {
  for (uint8_t c = 0; c < 16; c++) {
    float v = xr_e2m1_to_f32(c);
    cr_assert_eq(xr_f32_to_e2m1(v), c, "code 0x%x (%g)", c, v);
  }
  cr_assert_eq(xr_e2m1_to_f32(0x7), 6.0f);
  cr_assert_eq(xr_e2m1_to_f32(0xf), -6.0f);
  cr_assert(signbit(xr_e2m1_to_f32(0x8)) && xr_e2m1_to_f32(0x8) == 0.0f);
}

Test(mx, e2m1_midpoints_round_to_the_even_code) {
  /* between codes c and c+1 the tie goes to whichever of them is even */
  for (uint8_t c = 0; c < 7; c++) {
    float lo = xr_e2m1_to_f32(c), hi = xr_e2m1_to_f32((uint8_t)(c + 1)), mid = (lo + hi) / 2;
    uint8_t even = c % 2 ? (uint8_t)(c + 1) : c;
    cr_assert_eq(xr_f32_to_e2m1(mid), even, "midpoint %g of %g and %g", mid, lo, hi);
    cr_assert_eq(xr_f32_to_e2m1(-mid), even | 8, "midpoint %g", -mid);
    cr_assert_eq(xr_f32_to_e2m1(nextafterf(mid, 0)), c, "just below %g", mid);
    cr_assert_eq(xr_f32_to_e2m1(nextafterf(mid, 10)), c + 1, "just above %g", mid);
  }
}

Test(mx, e2m1_saturates_and_keeps_the_sign_of_zero) {
  cr_assert_eq(xr_f32_to_e2m1(7.0f), 0x7);
  cr_assert_eq(xr_f32_to_e2m1(1e30f), 0x7);
  cr_assert_eq(xr_f32_to_e2m1(-INFINITY), 0xf);
  cr_assert_eq(xr_f32_to_e2m1(-0.1f), 0x8);
  cr_assert_eq(xr_f32_to_e2m1(0.0f), 0x0);
}

Test(mx, e8m0_scales_are_powers_of_two) {
  cr_assert_eq(xr_e8m0_to_f32(127), 1.0f);
  cr_assert_eq(xr_e8m0_to_f32(0), ldexpf(1.0f, -127));
  cr_assert_eq(xr_e8m0_to_f32(254), ldexpf(1.0f, 127));
  cr_assert(isnan(xr_e8m0_to_f32(0xff)));
  for (int b = 0; b < 255; b++) cr_assert_eq(xr_f32_to_e8m0(xr_e8m0_to_f32((uint8_t)b)), b);
  cr_assert_eq(xr_f32_to_e8m0(-4.0f), 129); /* a scale has no sign */
  cr_assert_eq(xr_f32_to_e8m0(0.0f), 0);
  cr_assert_eq(xr_f32_to_e8m0(NAN), 0xff);
}

Test(mx, shared_exponent_follows_the_block_maximum) {
  /* a block whose maximum is exactly a power of two 2^p gets the scale 2^(p - 2) (e2m1's emax
   * is 2), so the maximum becomes the code for 4 */
  float x[32] = {0};
  for (int p = -20; p <= 20; p++) {
    x[5] = ldexpf(1.0f, p);
    uint8_t codes[16], scale;
    xr_mx_quantize(XR_MX_FP4, x, 1, 32, codes, &scale, NULL);
    cr_assert_eq(scale, 127 + p - 2, "2^%d", p);
    cr_assert_eq(codes[2] >> 4, 0x6, "2^%d", p);
    cr_assert_eq(xr_mx_dequant(XR_MX_FP4, codes, &scale, 5, 1.0f), x[5]);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* golden format vectors                                                                       */

static cJSON *manifest(void) {
  uint8_t *bytes;
  size_t size;
  cr_assert_eq(xr_read_file(GOLDEN "/manifest.json", &bytes, &size), XR_OK, "%s", xr_last_error());
  cJSON *m = cJSON_ParseWithLength((const char *)bytes, size);
  free(bytes);
  cr_assert_not_null(m);
  return m;
}

static xr_npy_t load(const cJSON *entry) {
  char path[512];
  snprintf(path, sizeof path, GOLDEN "/%s", cJSON_GetObjectItem(entry, "file")->valuestring);
  xr_npy_t npy;
  cr_assert_eq(xr_npy_load(path, &npy), XR_OK, "%s", xr_last_error());
  return npy;
}

static const cJSON *named(const cJSON *list, const char *key, const char *name) {
  const cJSON *e;
  cJSON_ArrayForEach(e, list) {
    if (!strcmp(cJSON_GetObjectItem(e, key)->valuestring, name)) return e;
  }
  cr_assert_fail("no entry %s", name);
  return NULL;
}

static xr_mx_format_t format_of(const char *name) {
  if (!strcmp(name, "mxfp4")) return XR_MX_FP4;
  if (!strcmp(name, "mxfp8_e4m3")) return XR_MX_FP8_E4M3;
  if (!strcmp(name, "mxfp8_e5m2")) return XR_MX_FP8_E5M2;
  cr_assert_str_eq(name, "nvfp4");
  return XR_MX_NVFP4;
}

/* allclose as the golden README defines it, on float32 values */
static void check_close(const char *what, const float *a, const float *b, int64_t n, const cJSON *tol) {
  double nmse_tol = cJSON_GetObjectItem(tol, "nmse")->valuedouble;
  double atol = cJSON_GetObjectItem(tol, "atol")->valuedouble;
  double rtol = cJSON_GetObjectItem(tol, "rtol")->valuedouble;
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    cr_assert(isfinite(a[i]), "%s[%lld] = %g", what, (long long)i, a[i]);
    cr_assert_leq(fabs((double)a[i] - b[i]), atol + rtol * fabs(b[i]), "%s[%lld]: %.9g vs %.9g", what,
                  (long long)i, a[i], b[i]);
    num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    den += (double)b[i] * b[i];
  }
  cr_assert_leq(den > 0 ? num / den : num, nmse_tol, "%s: nmse", what);
}

static void quantize_case(const cJSON *c) {
  const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
  const cJSON *v = cJSON_GetObjectItem(c, "vectors"), *expected = cJSON_GetObjectItem(c, "expected");
  xr_mx_format_t f = format_of(cJSON_GetObjectItem(v, "format")->valuestring);
  cr_assert_eq(cJSON_GetObjectItem(v, "block_size")->valueint, xr_mx_block_size(f), "%s", name);
  xr_npy_t x = load(named(cJSON_GetObjectItem(v, "inputs"), "name", "x"));
  cr_assert_eq(x.rank, 2);
  int64_t rows = x.shape[0], k = x.shape[1], bs = xr_mx_block_size(f);
  uint8_t *codes = malloc((size_t)(rows * xr_mx_code_bytes(f, k))), *scales = malloc((size_t)(rows * k / bs));
  float global = 1.0f, *dq = malloc(sizeof(float) * (size_t)(rows * k));
  xr_mx_quantize(f, (const float *)x.data, rows, k, codes, scales, &global);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t i = 0; i < k; i++)
      dq[r * k + i] = xr_mx_dequant(f, codes + r * xr_mx_code_bytes(f, k), scales + r * (k / bs), i, global);

  xr_npy_t packed = load(named(expected, "target", "packed")), sc = load(named(expected, "target", "scales"));
  xr_npy_t deq = load(named(expected, "target", "dequant"));
  cr_assert_eq(packed.numel, rows * xr_mx_code_bytes(f, k), "%s", name);
  cr_assert_eq(sc.numel, rows * k / bs, "%s", name);
  for (int64_t i = 0; i < packed.numel; i++)
    cr_assert_eq(codes[i], packed.data[i], "%s packed[%lld]: 0x%02x, expected 0x%02x", name, (long long)i,
                 codes[i], packed.data[i]);
  for (int64_t i = 0; i < sc.numel; i++)
    cr_assert_eq(scales[i], sc.data[i], "%s scales[%lld]: %u, expected %u", name, (long long)i, scales[i], sc.data[i]);
  if (f == XR_MX_NVFP4) {
    xr_npy_t g = load(named(expected, "target", "global_scale"));
    check_close(name, &global, (const float *)g.data, 1, cJSON_GetObjectItem(c, "tolerance"));
    check_close(name, dq, (const float *)deq.data, rows * k, cJSON_GetObjectItem(c, "tolerance"));
    xr_npy_free(&g);
  } else {
    for (int64_t i = 0; i < rows * k; i++)
      cr_assert_eq(dq[i], ((const float *)deq.data)[i], "%s dequant[%lld]: %g, expected %g", name,
                   (long long)i, dq[i], ((const float *)deq.data)[i]);
  }
  xr_npy_free(&x), xr_npy_free(&packed), xr_npy_free(&sc), xr_npy_free(&deq);
  free(codes), free(scales), free(dq);
}

/* out = a @ dequant(b)^T in double, rounded once to bf16 */
static void gemm_case(const cJSON *c) {
  const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
  const cJSON *v = cJSON_GetObjectItem(c, "vectors"), *inputs = cJSON_GetObjectItem(v, "inputs");
  xr_mx_format_t f = format_of(cJSON_GetObjectItem(v, "format")->valuestring);
  int64_t M = cJSON_GetObjectItem(v, "M")->valueint, N = cJSON_GetObjectItem(v, "N")->valueint;
  int64_t K = cJSON_GetObjectItem(v, "K")->valueint, bs = xr_mx_block_size(f);
  xr_npy_t a = load(named(inputs, "name", "a")), b = load(named(inputs, "name", "b_packed"));
  xr_npy_t s = load(named(inputs, "name", "b_scales"));
  xr_npy_t want = load(named(cJSON_GetObjectItem(c, "expected"), "target", "out"));
  float global = 1.0f;
  if (f == XR_MX_NVFP4) {
    xr_npy_t g = load(named(inputs, "name", "b_global_scale"));
    global = *(const float *)g.data;
    xr_npy_free(&g);
  }
  cr_assert_eq(a.numel, M * K);
  cr_assert_eq(b.numel, N * xr_mx_code_bytes(f, K));
  cr_assert_eq(s.numel, N * K / bs);
  float *out = malloc(sizeof(float) * (size_t)(M * N));
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      double acc = 0;
      for (int64_t k = 0; k < K; k++)
        acc += (double)xr_bf16_to_f32(((const uint16_t *)a.data)[m * K + k]) *
               xr_mx_dequant(f, b.data + n * xr_mx_code_bytes(f, K), s.data + n * (K / bs), k, global);
      out[m * N + n] = xr_bf16_to_f32(xr_f32_to_bf16((float)acc));
    }
  check_close(name, out, (const float *)want.data, M * N, cJSON_GetObjectItem(c, "tolerance"));
  xr_npy_free(&a), xr_npy_free(&b), xr_npy_free(&s), xr_npy_free(&want);
  free(out);
}

Test(mx, golden_format_vectors) {
  cJSON *m = manifest(), *c;
  int quantize = 0, gemm = 0;
  cJSON_ArrayForEach(c, m) {
    const cJSON *v = cJSON_GetObjectItem(c, "vectors");
    if (!v) continue;
    const char *op = cJSON_GetObjectItem(v, "operation")->valuestring;
    if (!strcmp(op, "quantize")) quantize_case(c), quantize++;
    else if (!strcmp(op, "gemm")) gemm_case(c), gemm++;
    else cr_assert_fail("unknown operation %s", op);
  }
  cJSON_Delete(m);
  cr_assert_eq(quantize, 4, "quantize cases");
  cr_assert_eq(gemm, 3, "gemm cases");
}
