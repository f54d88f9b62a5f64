/* The golden mx GEMM vectors (tests/data/golden, cases mx_gemm_*) through aten::_scaled_mm.
 * Those cases multiply an unquantized bf16 `a` by dequant(b)^T, so they are no _scaled_mm
 * themselves (tests/kernels:mx_test checks them against the codecs). What _scaled_mm can take is
 * their independently quantized weight: self = b's codes [N, K] (f4e2m1x2 bytes or e4m3fn),
 * scale_a = b's block scales [N, K / block] exactly as stored, mat2 = the identity [K, K] in the
 * same format with unit scales, out_dtype float. The product is then dequant(b) itself, exactly
 * (one non-zero term per output), and a @ that product in float64 (times nvfp4's per-tensor
 * global scale, which aten::_scaled_mm does not take: torch's callers apply it to the result),
 * rounded once to bf16, must match the golden expected output within its tolerance. Run on cpu
 * (the reference and cpu.gemm_blocked) and opencl (opencl.gemm_tiled), each also checked against
 * the reference; a device that is absent skips. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "kernels/dtype.h"
#include "replay/replay.h"
#include "tests/kernels/check.h"

#define GOLDEN "tests/data/golden"

static cJSON *manifest(void) {
  uint8_t *bytes;
  size_t size;
  cr_assert_eq(xr_read_file(GOLDEN "/manifest.json", &bytes, &size), XR_OK, "%s", xr_last_error());
  cJSON *m = cJSON_ParseWithLength((const char *)bytes, size);
  free(bytes);
  cr_assert_not_null(m);
  return m;
}

static xr_npy_t load(const cJSON *list, const char *key, const char *name) {
  const cJSON *e;
  cJSON_ArrayForEach(e, list) {
    if (!strcmp(cJSON_GetObjectItem(e, key)->valuestring, name)) {
      char path[512];
      snprintf(path, sizeof path, GOLDEN "/%s", cJSON_GetObjectItem(e, "file")->valuestring);
      xr_npy_t npy;
      cr_assert_eq(xr_npy_load(path, &npy), XR_OK, "%s", xr_last_error());
      return npy;
    }
  }
  cr_assert_fail("no entry %s", name);
  return (xr_npy_t){0};
}

/* ------------------------------------------------------------------------------------------ */
/* the bundle                                                                                  */

typedef struct text {
  char *s;
  size_t used, cap;
} text_t;

static void put(text_t *t, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->s + t->used, t->cap - t->used, fmt, ap);
    va_end(ap);
    cr_assert(n >= 0);
    if ((size_t)n < t->cap - t->used) {
      t->used += (size_t)n;
      return;
    }
    t->cap = 2 * t->cap + (size_t)n;
    t->s = realloc(t->s, t->cap);
    cr_assert_not_null(t->s);
  }
}

static void put_base64(text_t *t, const uint8_t *data, size_t n) {
  static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)data[i] << 16;
    if (i + 1 < n) v |= (uint32_t)data[i + 1] << 8;
    if (i + 2 < n) v |= data[i + 2];
    put(t, "%c%c%c%c", digits[v >> 18], digits[(v >> 12) & 63],
        i + 1 < n ? digits[(v >> 6) & 63] : '=', i + 2 < n ? digits[v & 63] : '=');
  }
}

/* A contiguous tensor argument with embedded contents. */
static void put_tensor_arg(text_t *t, const char *name, const char *dtype, int64_t rows,
                           int64_t cols, const uint8_t *data, bool last) {
  put(t, "{\"name\": \"%s\", \"type\": \"Tensor\", \"value\": {\"dtype\": \"%s\", \"shape\": "
         "[%lld, %lld], \"data_base64\": \"", name, dtype, (long long)rows, (long long)cols);
  put_base64(t, data, (size_t)(rows * cols));
  put(t, "\"}}%s", last ? "" : ", ");
}

typedef struct mx_case {
  const char *name;
  xr_mx_format_t f;
  int64_t M, N, K, block;
  xr_npy_t a, codes, scales, want;
  float global;
  const cJSON *tolerance;
} mx_case_t;

static const char *element_dtype(xr_mx_format_t f) {
  return f == XR_MX_FP8_E4M3 ? "c10::Float8_e4m3fn"
         : f == XR_MX_FP8_E5M2 ? "c10::Float8_e5m2"
                               : "c10::Float4_e2m1fn_x2";
}

/* _scaled_mm(self = b's codes, mat2 = identity, scale_a = b's scales, scale_b = ones) */
static char *scaled_mm_json(const mx_case_t *c) {
  bool fp4 = c->f == XR_MX_FP4 || c->f == XR_MX_NVFP4;
  int64_t K = c->K, kbytes = fp4 ? K / 2 : K, kb = K / c->block;
  const char *scale_dtype = c->f == XR_MX_NVFP4 ? "c10::Float8_e4m3fn" : "c10::Float8_e8m0fnu";
  uint8_t one = fp4 ? 0x2 : xr_f32_to_fp8(1.0f, c->f == XR_MX_FP8_E5M2 ? XR_DTYPE_F8E5M2 : XR_DTYPE_F8E4M3FN);
  uint8_t unit_scale = c->f == XR_MX_NVFP4 ? xr_f32_to_fp8(1.0f, XR_DTYPE_F8E4M3FN) : 127;
  /* mat2 [kbytes, K]: element (k, n) is 1 where k == n; fp4 bytes hold k = 2i (low nibble) and
   * k = 2i + 1 (high nibble) of column n */
  uint8_t *eye = calloc((size_t)(kbytes * K), 1), *ones = malloc((size_t)(K * kb));
  cr_assert(eye && ones);
  for (int64_t k = 0; k < K; k++) {
    if (fp4) eye[(k / 2) * K + k] |= (uint8_t)(k % 2 ? one << 4 : one);
    else eye[k * K + k] = one;
  }
  memset(ones, unit_scale, (size_t)(K * kb));
  text_t t = {.s = malloc(1024), .cap = 1024};
  put(&t, "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": "
          "\"aten::_scaled_mm\", \"args\": [");
  put_tensor_arg(&t, "self", element_dtype(c->f), c->N, kbytes, c->codes.data, false);
  put_tensor_arg(&t, "mat2", element_dtype(c->f), kbytes, K, eye, false);
  put_tensor_arg(&t, "scale_a", scale_dtype, c->N, kb, c->scales.data, false);
  put_tensor_arg(&t, "scale_b", scale_dtype, K, kb, ones, false);
  put(&t, "{\"name\": \"out_dtype\", \"type\": \"ScalarType?\", \"value\": 6}]}]}");
  free(eye);
  free(ones);
  return t.s;
}

/* Replays the case's _scaled_mm on `device` and returns its float32 [N, K] output (dumped);
 * NULL when the device is absent. */
static float *replay(const mx_case_t *c, const char *device, xr_kernel_choice_t choice,
                     const char **out_kernel) {
  char *json = scaled_mm_json(c);
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK,
               "%s: %s", c->name, xr_last_error());
  free(json);
  char dump[1024];
  snprintf(dump, sizeof dump, "%s/%s-%s-%d", getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp",
           c->name, device, (int)choice);
  once_t how = {
      .device = device, .choice = choice, .check = choice == XR_KERNEL_BEST, .dump_dir = dump};
  xr_op_result_t r;
  xr_status_t st = replay_once(b, &how, &r);
  xr_bundle_destroy(b);
  if (st != XR_OK) return NULL;
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s on %s: %s", c->name, device, r.message);
  cr_assert(!how.check || (r.checked && r.check_passed), "%s on %s: check failed", c->name, device);
  static char kernel[64];
  snprintf(kernel, sizeof kernel, "%s", r.kernel);
  *out_kernel = kernel;
  char path[1200];
  snprintf(path, sizeof path, "%s/op0_return0.npy", dump);
  xr_npy_t out;
  cr_assert_eq(xr_npy_load(path, &out), XR_OK, "%s", xr_last_error());
  cr_assert_eq(out.numel, c->N * c->K, "%s: %lld outputs", c->name, (long long)out.numel);
  float *values = malloc(sizeof(float) * (size_t)out.numel);
  memcpy(values, out.data, sizeof(float) * (size_t)out.numel);
  xr_npy_free(&out);
  return values;
}

/* a @ (global * d)^T in float64, rounded once to bf16, against the golden output (allclose). */
static void check_against_golden(const mx_case_t *c, const float *d, const char *kernel) {
  double nmse_tol = cJSON_GetObjectItem(c->tolerance, "nmse")->valuedouble;
  double atol = cJSON_GetObjectItem(c->tolerance, "atol")->valuedouble;
  double rtol = cJSON_GetObjectItem(c->tolerance, "rtol")->valuedouble;
  const uint16_t *a = (const uint16_t *)c->a.data;
  const float *want = (const float *)c->want.data;
  double num = 0, den = 0;
  for (int64_t m = 0; m < c->M; m++) {
    for (int64_t n = 0; n < c->N; n++) {
      double acc = 0;
      for (int64_t k = 0; k < c->K; k++)
        acc += (double)xr_bf16_to_f32(a[m * c->K + k]) * ((double)d[n * c->K + k] * c->global);
      double got = xr_bf16_to_f32(xr_f32_to_bf16((float)acc)), w = want[m * c->N + n];
      cr_assert(fabs(got - w) <= atol + rtol * fabs(w), "%s (%s): out[%lld][%lld] %.9g, golden %.9g",
                c->name, kernel, (long long)m, (long long)n, got, w);
      num += (got - w) * (got - w);
      den += w * w;
    }
  }
  cr_assert_leq(den > 0 ? num / den : num, nmse_tol, "%s (%s): nmse", c->name, kernel);
}

static xr_mx_format_t format_of(const char *name) {
  if (!strcmp(name, "mxfp4")) return XR_MX_FP4;
  if (!strcmp(name, "mxfp8_e4m3")) return XR_MX_FP8_E4M3;
  if (!strcmp(name, "mxfp8_e5m2")) return XR_MX_FP8_E5M2;
  cr_assert_str_eq(name, "nvfp4");
  return XR_MX_NVFP4;
}

static void run_cases(const char *device, xr_kernel_choice_t choice, const char *kernel_prefix) {
  cJSON *m = manifest(), *entry;
  int ran = 0;
  cJSON_ArrayForEach(entry, m) {
    const cJSON *v = cJSON_GetObjectItem(entry, "vectors");
    if (!v || strcmp(cJSON_GetObjectItem(v, "operation")->valuestring, "gemm")) continue;
    const cJSON *inputs = cJSON_GetObjectItem(v, "inputs");
    mx_case_t c = {.name = cJSON_GetObjectItem(entry, "name")->valuestring,
                   .f = format_of(cJSON_GetObjectItem(v, "format")->valuestring),
                   .M = cJSON_GetObjectItem(v, "M")->valueint,
                   .N = cJSON_GetObjectItem(v, "N")->valueint,
                   .K = cJSON_GetObjectItem(v, "K")->valueint,
                   .block = cJSON_GetObjectItem(v, "block_size")->valueint,
                   .global = 1.0f,
                   .tolerance = cJSON_GetObjectItem(entry, "tolerance")};
    c.a = load(inputs, "name", "a");
    c.codes = load(inputs, "name", "b_packed");
    c.scales = load(inputs, "name", "b_scales");
    c.want = load(cJSON_GetObjectItem(entry, "expected"), "target", "out");
    if (c.f == XR_MX_NVFP4) {
      xr_npy_t g = load(inputs, "name", "b_global_scale");
      c.global = *(const float *)g.data;
      xr_npy_free(&g);
    }
    cr_assert_eq(c.block, xr_mx_block_size(c.f), "%s", c.name);
    cr_assert_eq(c.codes.numel, c.N * xr_mx_code_bytes(c.f, c.K), "%s", c.name);
    cr_assert_eq(c.scales.numel, c.N * c.K / c.block, "%s", c.name);
    const char *kernel = NULL;
    float *d = replay(&c, device, choice, &kernel);
    if (!d) {
      xr_npy_free(&c.a), xr_npy_free(&c.codes), xr_npy_free(&c.scales), xr_npy_free(&c.want);
      cJSON_Delete(m);
      cr_skip_test("%s unavailable: %s", device, xr_last_error());
    }
    cr_assert(strncmp(kernel, kernel_prefix, strlen(kernel_prefix)) == 0, "%s: ran %s, expected %s",
              c.name, kernel, kernel_prefix);
    check_against_golden(&c, d, kernel);
    free(d);
    xr_npy_free(&c.a), xr_npy_free(&c.codes), xr_npy_free(&c.scales), xr_npy_free(&c.want);
    ran++;
  }
  cJSON_Delete(m);
  cr_assert_eq(ran, 3, "mx_gemm cases");
}

Test(gemm_mx_golden, reference) { run_cases("cpu", XR_KERNEL_REFERENCE, "ref.gemm"); }
Test(gemm_mx_golden, cpu_blocked) { run_cases("cpu", XR_KERNEL_BEST, "cpu.gemm_blocked"); }

Test(gemm_mx_golden, opencl_tiled) {
  const char *tmp = getenv("TEST_TMPDIR");
  if (tmp) setenv("XR_HAL_CACHE_DIR", tmp, 0);
  run_cases("opencl", XR_KERNEL_BEST, "opencl.gemm_tiled");
}
