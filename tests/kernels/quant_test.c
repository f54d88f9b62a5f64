/* vLLM's fp8 quantization ops (kernels/quant.h) on cpu (cpu.quant) and opencl (opencl.quant)
 * beyond their case matrix (quant_cases.h against the reference through the engine, --check:
 * the result and the scales the dynamic ops write; the quant_matrix_* targets): the same cases
 * bit for bit against the reference's dumps; the
 * edge cases (saturation, ties, zeros, NaN and infinite inputs, scale_ub, both e4m3 formats) on
 * embedded data against values this file computes from vLLM's formulas with its own fp8 decoder;
 * bad input that names the argument; and an op extracted from a profiler trace that replays. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "formats/trace_extract.h"
#include "kernels/quant.h"
#include "tests/kernels/quant_cases.h"

/* ------------------------------------------------------------------------------------------ */
/* replays with dumps                                                                          */

/* Replays `json` once on `device` (`choice`), dumping its outputs under a directory named by
 * `tag`; skips when the device is absent. */
static xr_op_result_t replay_dump(const char *json, const char *device, xr_kernel_choice_t choice, const char *tag,
                                  char *dir, size_t dir_size) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK, "%s",
               xr_last_error());
  /* Criterion runs tests in parallel processes: the pid keeps their dumps apart. */
  snprintf(dir, dir_size, "%s/quant_%s_%s_%d_%d", getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", tag, device,
           (int)choice, (int)getpid());
  once_t how = {.device = device, .choice = choice, .seed = 7, .dump_dir = dir};
  xr_op_result_t r;
  xr_status_t st = replay_once(b, &how, &r);
  xr_bundle_destroy(b);
  if (st != XR_OK) cr_skip_test("%s unavailable: %s", device, xr_last_error());
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s on %s: %s", tag, device, r.message);
  return r;
}

static xr_npy_t load_dump(const char *dir, const char *target) {
  char path[4300];
  snprintf(path, sizeof path, "%s/op0_%s.npy", dir, target);
  xr_npy_t n;
  cr_assert_eq(xr_npy_load(path, &n), XR_OK, "%s", xr_last_error());
  return n;
}

/* The fast paths compute what the reference computes, to the bit: every case's result bytes
 * and scales. */
static void bit_exact(const char *device) {
  for (size_t i = 0; i < sizeof quant_cases / sizeof *quant_cases; i++) {
    const quant_case_t *c = &quant_cases[i];
    jbuf_t b;
    const char *json = quant_json(&b, c);
    char tag[32], ref_dir[4096], dev_dir[4096];
    snprintf(tag, sizeof tag, "exact%zu", i);
    xr_op_result_t r = replay_dump(json, "cpu", XR_KERNEL_REFERENCE, tag, ref_dir, sizeof ref_dir);
    cr_assert_str_eq(r.kernel, "ref.quant");
    r = replay_dump(json, device, XR_KERNEL_BEST, tag, dev_dir, sizeof dev_dir);
    cr_assert(strstr(r.kernel, ".quant") && strcmp(r.kernel, "ref.quant"), "%s ran %s", c->what, r.kernel);
    const char *targets[2] = {"result", "scale"};
    for (int t = 0; t < (strcmp(c->op, Q_STATIC) ? 2 : 1); t++) {
      xr_npy_t e = load_dump(ref_dir, targets[t]), a = load_dump(dev_dir, targets[t]);
      cr_assert_eq(a.numel, e.numel);
      size_t bytes = (size_t)e.numel * e.item_size, diff = 0, first = 0;
      for (size_t k = 0; k < bytes; k++)
        if (a.data[k] != e.data[k] && !diff++) first = k;
      cr_assert_eq(diff, 0, "%s on %s: %s differs from the reference in %zu bytes, first at %zu (%02x vs %02x)",
                   c->what, device, targets[t], diff, first, a.data[first], e.data[first]);
      xr_npy_free(&a);
      xr_npy_free(&e);
    }
  }
}

Test(quant_cpu, bit_exact_with_the_reference) { bit_exact("cpu"); }
Test(quant_opencl, bit_exact_with_the_reference) { bit_exact("opencl"); }

/* ------------------------------------------------------------------------------------------ */
/* edge cases on embedded data                                                                 */

static char *b64(const void *data, size_t n) {
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const uint8_t *p = data;
  char *s = malloc(4 * ((n + 2) / 3) + 1), *o = s;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    *o++ = abc[v >> 18 & 63], *o++ = abc[v >> 12 & 63];
    *o++ = i + 1 < n ? abc[v >> 6 & 63] : '=', *o++ = i + 2 < n ? abc[v & 63] : '=';
  }
  *o = 0;
  return s;
}

/* This file's own e4m3 decoder (fn: bias 7, S.1111.111 NaN; fnuz: bias 8, 0x80 the NaN). */
static double fp8_value(uint8_t v, bool fnuz) {
  int bias = fnuz ? 8 : 7, e = (v >> 3) & 15, m = v & 7;
  if (fnuz ? v == 0x80 : (v & 0x7f) == 0x7f) return NAN;
  double mag = e ? ldexp(1.0 + m / 8.0, e - bias) : ldexp(m / 8.0, 1 - bias);
  return v & 0x80 ? -mag : mag;
}

/* The e4m3 value nearest x (|x| <= the format's largest), ties to the even code. */
static double nearest_fp8(double x, bool fnuz) {
  double best = NAN, err = INFINITY;
  int code = -1;
  for (int c = 0; c < 256; c++) {
    double v = fp8_value((uint8_t)c, fnuz);
    if (isnan(v)) continue;
    double e = fabs(v - x);
    if (e < err || (e == err && (c & 1) == 0 && (code & 1))) best = v, err = e, code = c;
  }
  return best;
}

/* vLLM's scaled_fp8_conversion: fmaxf(-M, fminf(x, M)) (a NaN x gives +M), then fp8. */
static double vllm_convert(float x, float m, bool fnuz) { return nearest_fp8(fmaxf(-m, fminf(x, m)), fnuz); }

typedef struct edge {
  const char *what, *op;
  bool fnuz;
  int rows, hidden;
  const float *x;
  float scale;  /* static */
  bool has_ub;
  float ub;
} edge_t;

static const char *edge_json(const edge_t *e) {
  static char json[16384];
  size_t n = (size_t)e->rows * (size_t)e->hidden;
  char *x = b64(e->x, n * sizeof(float)), *sc = b64(&e->scale, sizeof(float)), *ub = b64(&e->ub, sizeof(float));
  const char *fp8 = e->fnuz ? FNUZ : FN;
  bool written = strcmp(e->op, Q_STATIC) != 0;
  int len = snprintf(
      json, sizeof json,
      "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": \"%s\", \"args\": ["
      "{\"name\": \"result\", \"type\": \"Tensor!\", \"value\": {\"shape\": [%d, %d], \"dtype\": \"%s\", \"init\": null}}, "
      "{\"name\": \"input\", \"type\": \"Tensor\", \"value\": {\"shape\": [%d, %d], \"dtype\": \"float\", "
      "\"data_base64\": \"%s\"}}, ",
      e->op, e->rows, e->hidden, fp8, e->rows, e->hidden, x);
  if (written)
    len += snprintf(json + len, sizeof json - (size_t)len,
                    "{\"name\": \"scale\", \"type\": \"Tensor!\", \"value\": {\"shape\": [%d, 1], \"dtype\": \"float\", "
                    "\"init\": null}}", strcmp(e->op, Q_TOKEN) ? 1 : e->rows);
  else
    len += snprintf(json + len, sizeof json - (size_t)len,
                    "{\"name\": \"scale\", \"type\": \"Tensor\", \"value\": {\"shape\": [1], \"dtype\": \"float\", "
                    "\"data_base64\": \"%s\"}}", sc);
  if (!strcmp(e->op, Q_TOKEN)) {
    if (e->has_ub)
      len += snprintf(json + len, sizeof json - (size_t)len,
                      ", {\"name\": \"scale_ub\", \"type\": \"Tensor?\", \"value\": {\"shape\": [1], \"dtype\": "
                      "\"float\", \"data_base64\": \"%s\"}}", ub);
    else
      len += snprintf(json + len, sizeof json - (size_t)len, ", {\"name\": \"scale_ub\", \"type\": \"Tensor?\", \"value\": null}");
  }
  snprintf(json + len, sizeof json - (size_t)len, "]}]}");
  free(x);
  free(sc);
  free(ub);
  return json;
}

/* The scales vLLM's kernels compute (float arithmetic), one per row (one for all rows but the
 * per-token op's), and the expected decoded results. */
static void edge_expect(const edge_t *e, float *scales, double *expect) {
  const float m = e->fnuz ? 224.0f : 448.0f;
  float all = 0.0f;
  for (int i = 0; i < e->rows * e->hidden; i++) all = fmaxf(all, fabsf(e->x[i]));
  for (int r = 0; r < e->rows; r++) {
    float row = 0.0f;
    for (int c = 0; c < e->hidden; c++) row = fmaxf(row, fabsf(e->x[r * e->hidden + c]));
    float s = !strcmp(e->op, Q_STATIC)    ? e->scale
              : !strcmp(e->op, Q_DYNAMIC) ? all / m
                                          : fmaxf((e->has_ub ? fminf(row, e->ub) : row) / m, 1.0f / (m * 512.0f));
    scales[r] = s;
    for (int c = 0; c < e->hidden; c++) {
      float x = e->x[r * e->hidden + c];
      expect[r * e->hidden + c] = vllm_convert(!strcmp(e->op, Q_TOKEN) ? x / s : x * (1.0f / s), m, e->fnuz);
    }
  }
}

static bool device_present(const char *spec) {
  xr_hal_device_t *d = NULL;
  if (xr_hal_device_create(spec, &d) != XR_OK) return false;
  xr_hal_device_destroy(d);
  return true;
}

static bool same_value(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

/* The edge case on the reference, cpu.quant and opencl.quant; each must give the expected
 * values exactly. */
static void run_edge(const edge_t *e, double *got_out) {
  float scales[16];
  double expect[256];
  cr_assert_leq(e->rows * e->hidden, 256);
  edge_expect(e, scales, expect);
  const char *json = edge_json(e);
  static const struct {
    const char *device;
    xr_kernel_choice_t choice;
  } runs[] = {{"cpu", XR_KERNEL_REFERENCE}, {"cpu", XR_KERNEL_BEST}, {"opencl", XR_KERNEL_BEST}};
  for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
    char dir[4096];
    if (!device_present(runs[k].device)) {
      cr_log_info("%s: %s absent, not run there", e->what, runs[k].device);
      continue;
    }
    xr_op_result_t r = replay_dump(json, runs[k].device, runs[k].choice, "edge", dir, sizeof dir);
    xr_npy_t out = load_dump(dir, "result");
    cr_assert_eq(out.numel, e->rows * e->hidden);
    for (int i = 0; i < e->rows * e->hidden; i++) {
      double got = fp8_value(out.data[i], e->fnuz);
      cr_assert(same_value(got, expect[i]), "%s on %s: x[%d] = %g gives %g (%02x), expected %g", e->what, r.kernel, i,
                (double)e->x[i], got, out.data[i], expect[i]);
      if (got_out) got_out[i] = got;
    }
    xr_npy_free(&out);
    if (strcmp(e->op, Q_STATIC)) {
      xr_npy_t s = load_dump(dir, "scale");
      const float *f = (const float *)s.data;
      for (int i = 0; i < (strcmp(e->op, Q_TOKEN) ? 1 : e->rows); i++)
        cr_assert(f[i] == scales[i] || (isnan(f[i]) && isnan(scales[i])), "%s on %s: scale[%d] = %g, expected %g",
                  e->what, r.kernel, i, (double)f[i], (double)scales[i]);
      xr_npy_free(&s);
    }
  }
}

/* Saturation, ties, zeros of both signs, NaN and infinities, subnormals: scale 0.5. */
static const float specials[2][16] = {
    {1000.0f, -1000.0f, 224.0f, 224.1f, -300.0f, 0.0f, -0.0f, NAN, INFINITY, -INFINITY, 1e-9f, 0x1p-10f,
     1.0625f * 0.5f, 1.1875f * 0.5f, 3e-3f, 17.0f},
    {0.1f, -0.2f, 0.3f, 5.0f, -7.5f, 100.0f, 0.0078125f, 1e-4f, -1e-4f, 2.0f, 3.0f, 0.6f, -0.9f, 110.0f, 112.5f, -1.0f},
};

Test(quant_edges, static_saturates_rounds_to_even_and_maps_nan_to_max) {
  double got[32];
  for (int fnuz = 0; fnuz < 2; fnuz++) {
    edge_t e = {"static specials", Q_STATIC, fnuz, 2, 16, &specials[0][0], 0.5f, false, 0};
    run_edge(&e, got);
    const double m = fnuz ? 224 : 448;
    cr_assert_eq(got[0], m, "1000 / 0.5 saturates to +M");
    cr_assert_eq(got[1], -m);
    cr_assert_eq(got[2], fnuz ? 224 : 448, "224 / 0.5 = 448: the fn maximum; fnuz saturates at 224");
    cr_assert_eq(got[7], m, "NaN becomes +M (fminf(NaN, M) is M)");
    cr_assert_eq(got[8], m);
    cr_assert_eq(got[9], -m);
    cr_assert_eq(got[5], 0);
    cr_assert_eq(got[12], 1.0, "1.0625 is a tie between 1 and 1.125: the even code");
    cr_assert_eq(got[13], 1.25, "1.1875: between 1.125 and 1.25, the even one");
    cr_assert_eq(got[11], fnuz ? 0x1p-9 : 0x1p-9, "2^-10 / 0.5: a subnormal, exact in both");
  }
}

Test(quant_edges, dynamic_zeros_nan_and_infinity) {
  static const float zeros[2][8] = {{0}};
  double got[16];
  edge_t e = {"dynamic all zeros", Q_DYNAMIC, false, 2, 8, &zeros[0][0], 0, false, 0};
  run_edge(&e, got);
  /* vLLM: scale 0, then 0 * (1 / 0) is NaN, which fminf turns into +M */
  for (int i = 0; i < 16; i++) cr_assert_eq(got[i], 448, "element %d", i);
  static const float nan_row[2][8] = {{1.0f, NAN, -2.0f, 0.5f, 3.0f, -4.0f, 0.25f, 8.0f}, {0.1f, -16.0f, 2, 3, 4, 5, 6, 7}};
  edge_t n = {"dynamic with a NaN", Q_DYNAMIC, true, 2, 8, &nan_row[0][0], 0, false, 0};
  run_edge(&n, got); /* the scale ignores the NaN: 16 / 224 */
  cr_assert_eq(got[1], 224, "the NaN element becomes +M");
  cr_assert_eq(got[9], -224, "the largest magnitude maps to -M");
  static const float inf_row[1][4] = {{1.0f, INFINITY, -2.0f, 0.0f}};
  edge_t i = {"dynamic with an infinity", Q_DYNAMIC, false, 1, 4, &inf_row[0][0], 0, false, 0};
  run_edge(&i, got); /* scale inf, 1 / scale 0: finite elements 0, inf * 0 NaN -> +M */
  cr_assert_eq(got[0], 0);
  cr_assert_eq(got[1], 448);
}

Test(quant_edges, per_token_zeros_nan_and_scale_ub) {
  static const float x[4][8] = {
      {0},                                                 /* scale floor 1 / (M * 512), zeros */
      {1.0f, NAN, -0.5f, 0.25f, 0.125f, 0.0f, -1.0f, 0.5f}, /* NaN ignored by the max, then +M */
      {10.0f, -10.0f, 1.0f, 2.0f, -3.0f, 0.5f, 1.5f, 1.9f}, /* clamped by scale_ub = 2 */
      {0.5f, -1.5f, 1.0f, 0.25f, 0.75f, -0.125f, 1.25f, 0.0f}, /* below scale_ub */
  };
  double got[32];
  for (int fnuz = 0; fnuz < 2; fnuz++) {
    const double m = fnuz ? 224 : 448;
    edge_t e = {"per token with scale_ub", Q_TOKEN, fnuz, 4, 8, &x[0][0], 0, true, 2.0f};
    run_edge(&e, got);
    for (int c = 0; c < 8; c++) cr_assert_eq(got[c], 0, "a zero row stays zero");
    cr_assert_eq(got[9], m, "NaN becomes +M");
    cr_assert_eq(got[8], m, "the row's max maps to M");
    cr_assert_eq(got[16], m, "10 against the bound 2 saturates");
    cr_assert_eq(got[17], -m);
    cr_assert_eq(got[25], -m, "row 3's max, below the bound, maps to -M");
    edge_t u = {"per token without scale_ub", Q_TOKEN, fnuz, 4, 8, &x[0][0], 0, false, 0};
    run_edge(&u, got);
    cr_assert_eq(got[16], m);
    cr_assert_eq(got[19], nearest_fp8(2.0f / (10.0f / (float)m), fnuz), "2 against the row's own max 10");
  }
}

/* ------------------------------------------------------------------------------------------ */
/* bad input                                                                                   */

static void expect_plan_error(const char *what, const quant_case_t *c, const char *edit_from, const char *edit_to,
                              const char *needle) {
  jbuf_t b;
  char *json = strdup(quant_json(&b, c));
  if (edit_from) {
    char *at = strstr(json, edit_from);
    cr_assert_not_null(at, "%s: no \"%s\" in %s", what, edit_from, json);
    size_t n = strlen(json) + strlen(edit_to) + 1;
    char *edited = malloc(n);
    snprintf(edited, n, "%.*s%s%s", (int)(at - json), json, edit_to, at + strlen(edit_from));
    free(json);
    json = edited;
  }
  xr_bundle_t *bundle;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &bundle), XR_OK, "%s: %s",
               what, xr_last_error());
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&bundle->ops[0], &plan), XR_INVALID_ARGUMENT, "%s: planned", what);
  cr_assert(strstr(xr_last_error(), needle), "%s: \"%s\" does not name %s", what, xr_last_error(), needle);
  cr_assert(strstr(xr_last_error(), c->op), "%s: \"%s\" does not name the op", what, xr_last_error());
  xr_bundle_destroy(bundle);
  free(json);
}

Test(quant_errors, name_the_argument) {
  quant_case_t s = {"", Q_STATIC, Q_BF16, FN, 2, {4, 64}, 0, 0, 1, {1}, NULL, false};
  quant_case_t d = s, t = s;
  d.op = Q_DYNAMIC;
  t.op = Q_TOKEN, t.scale_rank = 2, t.scale_shape[0] = 4, t.scale_shape[1] = 1;
  expect_plan_error("int input", &s, "\"dtype\": \"c10::BFloat16\"", "\"dtype\": \"int\"", "input");
  expect_plan_error("bf16 result", &s, "\"dtype\": \"" FN "\"", "\"dtype\": \"c10::BFloat16\"", "result");
  expect_plan_error("e5m2 result", &d, "\"dtype\": \"" FN "\"", "\"dtype\": \"c10::Float8_e5m2\"", "result");
  expect_plan_error("uint8 result", &t, "\"dtype\": \"" FN "\"", "\"dtype\": \"unsigned char\"", "result");
  expect_plan_error("f16 scale", &s, "\"dtype\": \"float\"", "\"dtype\": \"c10::Half\"", "scale");
  expect_plan_error("result of another shape", &s, "\"shape\": [4, 64]", "\"shape\": [4, 65]", "result");
  expect_plan_error("missing input", &s, "\"name\": \"input\"", "\"name\": \"inputx\"", "input");
  expect_plan_error("input with a strided last dimension", &s, "\"strides\": [64, 1], \"dtype\": \"c10::BFloat16\"",
                    "\"strides\": [128, 2], \"dtype\": \"c10::BFloat16\"", "input");
  quant_case_t bad = s;
  bad.scale_shape[0] = 3;
  expect_plan_error("static scale of 3 for hidden 64", &bad, NULL, NULL, "scale");
  bad.scale_rank = 2, bad.scale_shape[0] = 3, bad.scale_shape[1] = 64;
  expect_plan_error("2-D scale not dividing the rows", &bad, NULL, NULL, "scale");
  bad = s, bad.scale_shape[0] = 4, bad.group_shape = "[1, -1, 3]";
  expect_plan_error("group_shape of three", &bad, NULL, NULL, "group_shape");
  bad.group_shape = "[2, -1]";
  expect_plan_error("group_shape not matching the scale", &bad, NULL, NULL, "scale");
  bad = d, bad.scale_shape[0] = 2;
  expect_plan_error("dynamic scale of two", &bad, NULL, NULL, "scale");
  bad = t, bad.scale_shape[0] = 3;
  expect_plan_error("per-token scale for 3 of 4 rows", &bad, NULL, NULL, "scale");
  bad = t, bad.ub = true;
  expect_plan_error("scale_ub of two", &bad, "\"shape\": [1], \"strides\": [1], \"dtype\": \"float\"",
                    "\"shape\": [2], \"strides\": [1], \"dtype\": \"float\"", "scale_ub");
}

/* ------------------------------------------------------------------------------------------ */
/* from a profiler trace                                                                       */

Test(quant_extract, extracted_ops_replay) {
  static const struct {
    const char *name, *args;
  } ops[] = {
      {"_C::static_scaled_fp8_quant",
       "{\"Input Dims\": [[6, 256], [6, 256], []], \"Input type\": [\"c10::Float8_e4m3fn\", \"c10::BFloat16\","
       " \"float\"], \"Input Strides\": [[256, 1], [256, 1], []], \"Concrete Inputs\": [\"\", \"\", \"\"]}"},
      {"_C::dynamic_scaled_fp8_quant",
       "{\"Input Dims\": [[6, 256], [6, 256], [1]], \"Input type\": [\"c10::Float8_e4m3fnuz\", \"c10::BFloat16\","
       " \"float\"], \"Input Strides\": [[256, 1], [256, 1], [1]], \"Concrete Inputs\": [\"\", \"\", \"\"]}"},
      {"_C::dynamic_per_token_scaled_fp8_quant",
       "{\"Input Dims\": [[6, 256], [6, 256], [6, 1], []], \"Input type\": [\"c10::Float8_e4m3fn\", \"c10::Half\","
       " \"float\", \"\"], \"Input Strides\": [[256, 1], [256, 1], [1, 1], []], \"Concrete Inputs\": [\"\", \"\","
       " \"\", \"\"]}"},
  };
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    char trace[2048];
    snprintf(trace, sizeof trace,
             "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 1, \"tid\": 1,"
             " \"ts\": 100.0, \"dur\": 50.0, \"args\": %s},"
             " {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1,"
             " \"ts\": 120.0, \"dur\": 5.0, \"args\": {\"correlation\": 7}},"
             " {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 2, \"tid\": 0, \"ts\": 200.0,"
             " \"dur\": 3.0, \"args\": {\"correlation\": 7}}]}",
             ops[i].name, ops[i].args);
    xr_bundle_t *b;
    cr_assert_eq(xr_trace_extract_memory(trace, strlen(trace), "t.json", NULL, &b, NULL), XR_OK, "%s",
                 xr_last_error());
    cr_assert_eq(b->op_count, 1);
    const xr_op_t *op = &b->ops[0];
    cr_assert_str_eq(op->name, ops[i].name);
    cr_assert_eq(xr_op_find_arg(op, "result")->value.as.tensor->init, XR_INIT_NONE, "result is an output");
    if (i > 0)
      cr_assert_eq(xr_op_find_arg(op, "scale")->value.as.tensor->init, XR_INIT_NONE, "the written scale is an output");
    static check_result_t c;
    cr_assert_eq(check_bundle(b, "cpu", 0, &c.r), XR_OK, "%s", xr_last_error());
    cr_assert_eq(c.r.outcome, XR_OP_SUCCEEDED, "%s: %s", ops[i].name, c.r.message);
    cr_assert(c.r.checked && c.r.check_passed, "%s", ops[i].name);
    cr_assert_str_eq(c.r.kernel, "cpu.quant");
    if (i == 0) cr_assert(strstr(c.r.init_policy, "scale = max|input| / 448"), "%s", c.r.init_policy);
    xr_bundle_destroy(b);
  }
}
