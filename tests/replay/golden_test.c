/* The golden cases (tests/data/golden, expected outputs computed independently in float64) run
 * through the same path a user's replay takes: the cases' IR entries form one TraceLens bundle,
 * the engine replays it with the CPU reference kernels and --dump-outputs, and every dumped
 * output is compared with the expected file as the manifest says (allclose with the case's
 * NMSE/atol/rtol, or moe_align_segments). */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "kernels/dtype.h"
#include "replay/replay.h"
#include "tests/support/golden.h"

#define GOLDEN "tests/data/golden"

/* An op the kernel registry knows must pass every golden case of it. */
static bool implemented(const char *op) {
  static const char *names[4096];
  size_t n = xr_kernel_op_names(names, 4096);
  cr_assert_leq(n, 4096, "more op names than this test lists");
  for (size_t i = 0; i < n; i++)
    if (!strcmp(names[i], op)) return true;
  return false;
}

typedef struct results {
  size_t count;
  xr_op_result_t r[512];
} results_t;

static void collect(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  (void)position, (void)count;
  results_t *rs = ctx;
  if (rs->count < 512) rs->r[rs->count++] = *r;
}

/* An .npy file decoded to doubles; bf16 ('<u2' holding bf16 bits) when the IR dtype says so. */
static double *load_doubles(const char *path, const char *ir_dtype, int64_t *n) {
  xr_npy_t npy;
  cr_assert_eq(xr_npy_load(path, &npy), XR_OK, "%s", xr_last_error());
  double *out = malloc(sizeof(double) * (size_t)(npy.numel ? npy.numel : 1));
  const char *d = npy.descr + 1;
  for (int64_t i = 0; i < npy.numel; i++) {
    const uint8_t *p = npy.data + (size_t)i * npy.item_size;
    if (!strcmp(d, "f4")) out[i] = *(const float *)p;
    else if (!strcmp(d, "f8")) out[i] = *(const double *)p;
    else if (!strcmp(d, "f2")) out[i] = xr_f16_to_f32(*(const uint16_t *)p);
    else if (!strcmp(d, "u2") && !strcmp(ir_dtype, "c10::BFloat16")) out[i] = xr_bf16_to_f32(*(const uint16_t *)p);
    else if (!strcmp(d, "i4")) out[i] = *(const int32_t *)p;
    else if (!strcmp(d, "i8")) out[i] = (double)*(const int64_t *)p;
    else if (!strcmp(d, "b1") || !strcmp(d, "u1")) out[i] = *p;
    else if (!strcmp(d, "i1")) out[i] = *(const int8_t *)p;
    else if (!strcmp(d, "i2")) out[i] = *(const int16_t *)p;
    else cr_assert_fail("%s: unexpected descr %s", path, npy.descr);
  }
  *n = npy.numel;
  xr_npy_free(&npy);
  return out;
}

static void check_allclose(const char *name, const char *target, const double *a, const double *b,
                           int64_t n, const cJSON *tol) {
  double nmse_tol = cJSON_GetObjectItem(tol, "nmse")->valuedouble;
  double atol = cJSON_GetObjectItem(tol, "atol")->valuedouble;
  double rtol = cJSON_GetObjectItem(tol, "rtol")->valuedouble;
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; i++) {
    cr_assert(isfinite(a[i]), "%s %s[%lld] is %g", name, target, (long long)i, a[i]);
    cr_assert_leq(fabs(a[i] - b[i]), atol + rtol * fabs(b[i]), "%s %s[%lld]: %.9g vs expected %.9g",
                  name, target, (long long)i, a[i], b[i]);
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  double nmse = den > 0 ? num / den : num;
  cr_assert_leq(nmse, nmse_tol, "%s %s: nmse %.3g > %.3g", name, target, nmse, nmse_tol);
}

/* One target's dumped (actual) and expected values. */
typedef struct target_values {
  double *a, *x;
  int64_t n;
} target_values_t;

static target_values_t load_target(const char *name, const char *dump, size_t op, const cJSON *e) {
  const char *target = cJSON_GetObjectItem(e, "target")->valuestring;
  const char *dtype = cJSON_GetObjectItem(e, "dtype")->valuestring;
  char expected_path[1024], actual_path[1200];
  snprintf(expected_path, sizeof expected_path, GOLDEN "/%s", cJSON_GetObjectItem(e, "file")->valuestring);
  snprintf(actual_path, sizeof actual_path, "%s/op%zu_%s.npy", dump, op, target);
  target_values_t v;
  int64_t nb;
  v.a = load_doubles(actual_path, dtype, &v.n);
  v.x = load_doubles(expected_path, dtype, &nb);
  cr_assert_eq(v.n, nb, "%s %s: %lld elements, expected %lld", name, target, (long long)v.n,
               (long long)nb);
  return v;
}

static int compare_values(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int64_t ir_int_arg(const cJSON *c, const char *arg) {
  const cJSON *a;
  cJSON_ArrayForEach(a, cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "ir"), "replay_ir"), "list_pos_args")) {
    if (!strcmp(cJSON_GetObjectItem(a, "arg_name")->valuestring, arg))
      return (int64_t)cJSON_GetObjectItem(a, "value")->valuedouble;
  }
  cr_assert_fail("argument %s not in the case's IR", arg);
  return 0;
}

/* moe_align_segments (tests/data/golden/README.md): num_tokens_post_pad and the experts of the
 * used blocks exact; each expert's entries of sorted_token_ids equal as a multiset; the rest the
 * sentinel. */
static void check_moe_align(const char *name, const cJSON *c, const char *dump, size_t op) {
  target_values_t ids = {0}, experts = {0}, post = {0};
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "expected")) {
    const char *target = cJSON_GetObjectItem(e, "target")->valuestring;
    target_values_t v = load_target(name, dump, op, e);
    if (!strcmp(target, "sorted_token_ids")) ids = v;
    else if (!strcmp(target, "experts_ids")) experts = v;
    else post = v;
  }
  cr_assert(ids.a && experts.a && post.a, "%s: missing an expected target", name);
  int64_t bs = ir_int_arg(c, "block_size"), E = ir_int_arg(c, "num_experts");
  const cJSON *a = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "ir"), "replay_ir"), "list_pos_args");
  const cJSON *shape = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(a, 0), "value"), "shape");
  double sentinel = 1;
  const cJSON *d;
  cJSON_ArrayForEach(d, shape) sentinel *= d->valuedouble;
  cr_assert_eq(post.a[0], post.x[0], "%s: num_tokens_post_pad %g, expected %g", name, post.a[0], post.x[0]);
  int64_t ntpp = (int64_t)post.x[0], blocks = ntpp / bs;
  for (int64_t b = 0; b < blocks; b++)
    cr_assert_eq(experts.a[b], experts.x[b], "%s: experts_ids[%lld] %g, expected %g", name,
                 (long long)b, experts.a[b], experts.x[b]);
  double *got = malloc(sizeof(double) * (size_t)(ntpp + 1)), *want = malloc(sizeof(double) * (size_t)(ntpp + 1));
  for (int64_t x = 0; x < E; x++) {
    int64_t n = 0;
    for (int64_t b = 0; b < blocks; b++)
      if (experts.x[b] == (double)x)
        for (int64_t i = b * bs; i < (b + 1) * bs; i++) got[n] = ids.a[i], want[n++] = ids.x[i];
    qsort(got, (size_t)n, sizeof *got, compare_values);
    qsort(want, (size_t)n, sizeof *want, compare_values);
    for (int64_t i = 0; i < n; i++)
      cr_assert_eq(got[i], want[i], "%s: expert %lld's segment differs as a multiset (%g vs %g)",
                   name, (long long)x, got[i], want[i]);
  }
  for (int64_t i = ntpp; i < ids.n; i++)
    cr_assert_eq(ids.a[i], sentinel, "%s: sorted_token_ids[%lld] = %g, expected the sentinel %g",
                 name, (long long)i, ids.a[i], sentinel);
  free(got);
  free(want);
  target_values_t all[] = {ids, experts, post};
  for (int k = 0; k < 3; k++) free(all[k].a), free(all[k].x);
}

Test(golden, every_case_through_the_replay_engine) {
  cJSON *manifest, *c;
  xr_bundle_t *b = golden_bundle(NULL, &manifest);

  char dump[1024];
  snprintf(dump, sizeof dump, "%s/golden-dump", getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp");
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = "cpu";
  o.choice = XR_KERNEL_REFERENCE;
  o.warmup = 0;
  o.iters = 1;
  o.dump_dir = dump;
  static results_t rs;
  xr_replay_summary_t summary;
  xr_replay_observer_t observer = {.result = collect, .context = &rs};
  cr_assert_eq(xr_replay_run(b, &o, &observer, &summary), XR_OK, "%s", xr_last_error());
  cr_assert_eq(rs.count, b->op_count);

  size_t checked = 0, i = 0;
  cJSON_ArrayForEach(c, manifest) {
    const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
    const char *op = cJSON_GetObjectItem(c, "op_name")->valuestring;
    if (!cJSON_GetObjectItem(c, "ir")) continue; /* format vectors: tests/kernels:mx_test */
    const xr_op_result_t *r = &rs.r[i];
    if (!implemented(op)) {
      cr_log_info("%s: %s (%s)", name, xr_op_outcome_name(r->outcome), r->message);
      i++;
      continue;
    }
    cr_assert_eq(r->outcome, XR_OP_SUCCEEDED, "%s: %s", name, r->message);
    const char *compare = cJSON_GetObjectItem(c, "compare")->valuestring;
    if (!strcmp(compare, "moe_align_segments")) {
      check_moe_align(name, c, dump, i);
    } else {
      const cJSON *e;
      cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "expected")) {
        const char *target = cJSON_GetObjectItem(e, "target")->valuestring;
        target_values_t v = load_target(name, dump, i, e);
        check_allclose(name, target, v.a, v.x, v.n, cJSON_GetObjectItem(c, "tolerance"));
        free(v.a);
        free(v.x);
      }
    }
    checked++;
    i++;
  }
  cr_log_info("%zu golden cases checked", checked);
  cr_assert_geq(checked, 11, "the GEMM cases at least");
  cJSON_Delete(manifest);
  xr_bundle_destroy(b);
}
