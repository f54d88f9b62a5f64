/* The reduce family (reductions, scans, sorts) beyond its case matrix (reduce_cases.h, run on
 * every driver by the reduce_matrix_* targets): values no random
 * input produces (ties, NaN, infinities, signed zeros, empty reductions) on the reference and
 * every fast kernel against hand-computed results; the golden reduction cases on every backend;
 * result dtypes and shapes, costs, and the plan errors and declined forms that name their
 * reason. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>

#include "formats/bundle.h"
#include "formats/trace_extract.h"
#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "tests/kernels/reduce_cases.h"

/* Long rows: the cpu sorts any; opencl takes topk of rows over 2048 elements for k <= 16. */
Test(reduce, long_rows) {
  rc_json_t j;
  rc_expect(rc_topk(&j, "c10::BFloat16", RC_VIEW(2, 50000), 40, -1, true), "cpu", "cpu.reduce", 2900);
  rc_expect(rc_sort(&j, "float", RC_VIEW(3, 70001), -1, true), "cpu", "cpu.reduce", 2901);
  xr_op_result_t r = check_op(rc_topk(&j, "float", RC_VIEW(2, 50000), 40, -1, true), "opencl");
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "k <= 16"), "%s", r.message);
}

/* On cpu, integer, bool and f64 inputs run on the reference (the fast kernels say so), but for
 * all / any of bool tensors, whose truth values the fast kernels read exactly. */
Test(reduce, other_dtypes_run_on_the_reference) {
  rc_json_t j;
  static const char *const dtypes[] = {"double", "int", "long int", "bool", "signed char",
                                       "unsigned char", "short int"};
  uint64_t seed = 3000;
  for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++) {
    rc_view_t v = RC_VIEW(4, 17);
    rc_expect(rc_sum(&j, "aten::sum", dtypes[d], v, "[1]", false, NULL), "cpu", "ref.reduce", seed++);
    rc_expect(rc_dim_op(&j, "aten::amax", dtypes[d], v, "int[1]", "[0]", "true"), "cpu", "ref.reduce", seed++);
    rc_expect(rc_dim_op(&j, "aten::min", dtypes[d], v, "int", "1", "false"), "cpu", "ref.reduce", seed++);
    rc_expect(rc_scan(&j, "aten::cumsum", dtypes[d], v, 1, NULL), "cpu", "ref.reduce", seed++);
    bool truth = !strcmp(dtypes[d], "bool"), floating = !strcmp(dtypes[d], "double");
    /* integer sorts run on cpu.reduce's integer keys */
    rc_expect(rc_sort(&j, dtypes[d], v, -1, true), "cpu", floating ? "ref.reduce" : "cpu.reduce",
              seed++);
    rc_expect(rc_dim_op(&j, "aten::any", dtypes[d], v, "int", "1", "false"), "cpu",
              truth ? "cpu.reduce" : "ref.reduce", seed++);
  }
  rc_expect(rc_var(&j, "aten::var", "double", RC_VIEW(4, 17), "[1]", "1", false), "cpu", "ref.reduce", seed++);
}

/* ------------------------------------------------------------------------------------------ */
/* exact values                                                                                */

typedef struct run_result {
  bool skipped;
  double values[64];
  int64_t indices[64];
  int64_t count;
} run_result_t;

/* Plans `json`, fills self's storage with in[] (converted to its dtype) and runs the reference
 * (device "ref") or the best kernel of `device`; returns output 0 as doubles and, when the op
 * has two outputs (or its only output is int64), the int64 one. */
static run_result_t run_values(const char *json, const char *device, const double *in, int64_t n) {
  static run_result_t r;
  memset(&r, 0, sizeof r);
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK,
               "%s", xr_last_error());
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_OK, "%s: %s", json, xr_last_error());
  bool reference = !strcmp(device, "ref");
  xr_hal_device_t *dev;
  if (xr_hal_device_create(reference ? "cpu" : device, &dev) != XR_OK) {
    cr_log_info("%s: %s absent (%s): its exact-value run is skipped", b->ops[0].name, device,
                xr_last_error());
    xr_kernel_plan_free(&plan);
    xr_bundle_destroy(b);
    r.skipped = true;
    return r;
  }
  const xr_kernel_impl_t *impl;
  cr_assert_eq(xr_kernel_select(&plan, dev, reference ? XR_KERNEL_REFERENCE : XR_KERNEL_BEST, &impl),
               XR_OK, "%s on %s: %s", b->ops[0].name, device, xr_last_error());
  size_t count = plan.input_count + plan.return_count;
  xr_tensor_t t[8];
  cr_assert_leq(count, 8);
  for (size_t i = 0; i < count; i++) {
    memset(&t[i], 0, sizeof t[i]);
    size_t bytes;
    if (i < plan.input_count) {
      const xr_tensor_spec_t *s = plan.inputs[i];
      t[i].dtype = s->dtype, t[i].rank = s->rank, t[i].offset = s->storage_offset;
      for (int d = 0; d < s->rank; d++) t[i].shape[d] = s->shape[d], t[i].strides[d] = s->strides[d];
      cr_assert_eq(xr_tensor_storage_bytes(s, &bytes), XR_OK);
    } else {
      const xr_tensor_desc_t *d = &plan.returns[i - plan.input_count];
      t[i].dtype = d->dtype, t[i].rank = d->rank;
      int64_t st = 1;
      for (int k = d->rank - 1; k >= 0; k--) t[i].shape[k] = d->shape[k], t[i].strides[k] = st, st *= d->shape[k];
      bytes = (size_t)st * xr_dtype_size(d->dtype);
    }
    uint8_t *host = calloc(1, bytes + 8);
    if (i == 0)
      for (int64_t e = 0; e < n; e++) xr_store_element(host, t[0].dtype, e, in[e]);
    else memset(host, 0xff, bytes); /* poisoned */
    cr_assert_eq(xr_hal_buffer_alloc(dev, bytes + 8, &t[i].buffer), XR_OK);
    cr_assert_eq(xr_hal_buffer_write(t[i].buffer, 0, host, bytes + 8), XR_OK);
    free(host);
  }
  xr_kernel_instance_t *inst;
  xr_hal_stream_t *stream;
  cr_assert_eq(xr_kernel_prepare(&plan, impl, dev, t, &inst), XR_OK, "%s", xr_last_error());
  cr_assert_eq(xr_hal_stream_create(dev, &stream), XR_OK);
  cr_assert_eq(xr_kernel_enqueue(inst, stream), XR_OK, "%s", xr_last_error());
  cr_assert_eq(xr_hal_stream_synchronize(stream), XR_OK);
  /* Outputs: the returns, or (out= / in-place forms) the written inputs. */
  size_t outs[2], nout = 0;
  for (size_t i = plan.input_count; i < count && nout < 2; i++) outs[nout++] = i;
  for (size_t i = 0; i < plan.input_count && nout < 2; i++)
    if (plan.input_written[i]) outs[nout++] = i;
  for (size_t k = 0; k < nout; k++) {
    const xr_tensor_t *o = &t[outs[k]];
    int64_t numel = 1;
    for (int d = 0; d < o->rank; d++) numel *= o->shape[d];
    cr_assert_leq(numel, 64);
    int64_t extent = o->offset + 1;
    for (int d = 0; d < o->rank; d++) extent += (o->shape[d] - 1) * o->strides[d];
    size_t bytes = (size_t)extent * xr_dtype_size(o->dtype) + 8;
    uint8_t *host = malloc(bytes);
    cr_assert_eq(xr_hal_buffer_read(host, o->buffer, 0, bytes), XR_OK);
    bool index = o->dtype == XR_DTYPE_I64 && (nout == 2 ? k == 1 : true);
    for (int64_t e = 0; e < numel; e++) {
      int64_t at = o->offset, rest = e;
      for (int d = o->rank - 1; d >= 0; d--) at += (rest % o->shape[d]) * o->strides[d], rest /= o->shape[d];
      if (index) r.indices[e] = ((const int64_t *)host)[at];
      else r.values[e] = xr_load_element(host, o->dtype, at);
    }
    r.count = numel;
    free(host);
  }
  xr_hal_stream_destroy(stream);
  xr_kernel_instance_destroy(inst);
  for (size_t i = 0; i < count; i++) xr_hal_buffer_free(t[i].buffer);
  xr_hal_device_destroy(dev);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  return r;
}

static const char *const backends[] = {"ref", "cpu", "opencl"};

static bool same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

static void expect_values(const char *what, const char *device, const run_result_t *r,
                          const double *values, const int64_t *indices, int64_t n) {
  cr_assert_eq(r->count, n, "%s on %s: %lld outputs", what, device, (long long)r->count);
  for (int64_t i = 0; i < n; i++) {
    if (values)
      cr_assert(same(r->values[i], values[i]) && signbit(r->values[i]) == signbit(values[i]),
                "%s on %s: value %lld is %g, expected %g", what, device, (long long)i,
                r->values[i], values[i]);
    if (indices)
      cr_assert_eq(r->indices[i], indices[i], "%s on %s: index %lld is %lld, expected %lld", what,
                   device, (long long)i, (long long)r->indices[i], (long long)indices[i]);
  }
}

Test(reduce, max_min_first_occurrence_and_nan) {
  rc_json_t j;
  /* rows: a tie at the maximum; NaNs after a larger number; all -inf; +inf last */
  const double in[] = {1, 3, 3, 2, 1, NAN, 5, NAN, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                       0, -1, -1, INFINITY};
  for (size_t b = 0; b < sizeof backends / sizeof *backends; b++) {
    for (size_t d = 0; d < 3; d++) {
      run_result_t r = run_values(rc_dim_op(&j, "aten::max", rc_dtypes[d], RC_VIEW(4, 4), "int", "1", "false"),
                                  backends[b], in, 16);
      if (r.skipped) continue;
      expect_values("max.dim", backends[b], &r, (double[]){3, NAN, -INFINITY, INFINITY},
                    (int64_t[]){1, 1, 0, 3}, 4);
      r = run_values(rc_dim_op(&j, "aten::min", rc_dtypes[d], RC_VIEW(4, 4), "int", "1", "false"),
                     backends[b], in, 16);
      expect_values("min.dim", backends[b], &r, (double[]){1, NAN, -INFINITY, -1},
                    (int64_t[]){0, 1, 0, 1}, 4);
      r = run_values(rc_dim_op(&j, "aten::argmin", rc_dtypes[d], RC_VIEW(4, 4), "int?", "null", "false"),
                     backends[b], in, 16);
      expect_values("argmin", backends[b], &r, NULL, (int64_t[]){5}, 1);
      r = run_values(rc_dim_op(&j, "aten::amax", rc_dtypes[d], RC_VIEW(4, 4), "int[1]", "[0]", "false"),
                     backends[b], in, 16);
      expect_values("amax", backends[b], &r, (double[]){1, NAN, 5, NAN}, NULL, 4);
    }
  }
}

Test(reduce, sort_is_stable_with_nan_last_and_signed_zeros_equal) {
  rc_json_t j;
  const double in[] = {2, NAN, 1, 2, -0.0, 0.0, -INFINITY};
  for (size_t b = 0; b < sizeof backends / sizeof *backends; b++)
    for (size_t d = 0; d < 3; d++) {
      run_result_t r = run_values(rc_sort(&j, rc_dtypes[d], RC_VIEW(7), 0, false), backends[b], in, 7);
      if (r.skipped) continue;
      expect_values("sort", backends[b], &r, (double[]){-INFINITY, -0.0, 0.0, 1, 2, 2, NAN},
                    (int64_t[]){6, 4, 5, 2, 0, 3, 1}, 7);
      r = run_values(rc_sort(&j, rc_dtypes[d], RC_VIEW(7), 0, true), backends[b], in, 7);
      expect_values("sort descending", backends[b], &r, (double[]){NAN, 2, 2, 1, -0.0, 0.0, -INFINITY},
                    (int64_t[]){1, 0, 3, 2, 4, 5, 6}, 7);
      r = run_values(rc_topk(&j, rc_dtypes[d], RC_VIEW(7), 3, 0, true), backends[b], in, 7);
      expect_values("topk", backends[b], &r, (double[]){NAN, 2, 2}, (int64_t[]){1, 0, 3}, 3);
      r = run_values(rc_topk(&j, rc_dtypes[d], RC_VIEW(7), 4, 0, false), backends[b], in, 7);
      expect_values("topk smallest", backends[b], &r, (double[]){-INFINITY, -0.0, 0.0, 1},
                    (int64_t[]){6, 4, 5, 2}, 4);
    }
}

/* The specials again, in rows of 40: two 16-lane vectors and a tail, where the fast kernels'
 * vector loops (not their scalar tails) meet them. */
Test(reduce, specials_inside_vector_blocks) {
  rc_json_t j;
  enum { W = 40 };
  double in[4 * W];
  for (int i = 0; i < 4 * W; i++) in[i] = (double)(i % 7) - 3; /* -3 .. 3, exact in bf16 */
  /* max.dim: a tie at the maximum (33 first), NaNs at 21 and 30, all -inf, +inf at 39 */
  double mx[4 * W];
  memcpy(mx, in, sizeof mx);
  mx[33] = mx[35] = 9;
  mx[W + 21] = mx[W + 30] = NAN;
  for (int i = 0; i < W; i++) mx[2 * W + i] = -INFINITY;
  mx[3 * W + 39] = INFINITY;
  /* logsumexp: +inf at 20, NaN at 17, -infs among finite values, all -inf */
  double lse[4 * W], expected_row2 = 0;
  memcpy(lse, in, sizeof lse);
  lse[20] = INFINITY;
  lse[W + 17] = NAN;
  for (int i = 0; i < W; i += 3) lse[2 * W + i] = -INFINITY;
  for (int i = 0; i < W; i++) expected_row2 += isinf(lse[2 * W + i]) ? 0 : exp(lse[2 * W + i]);
  for (int i = 0; i < W; i++) lse[3 * W + i] = -INFINITY;
  for (size_t b = 0; b < sizeof backends / sizeof *backends; b++)
    for (size_t d = 0; d < 3; d++) {
      run_result_t r = run_values(rc_dim_op(&j, "aten::max", rc_dtypes[d], RC_VIEW(4, W), "int", "1", "false"),
                                  backends[b], mx, 4 * W);
      if (r.skipped) continue;
      expect_values("max.dim", backends[b], &r, (double[]){9, NAN, -INFINITY, INFINITY},
                    (int64_t[]){33, 21, 0, 39}, 4);
      r = run_values(rc_dim_op(&j, "aten::logsumexp", rc_dtypes[d], RC_VIEW(4, W), "int[1]", "[1]", "false"),
                     backends[b], lse, 4 * W);
      cr_assert(r.values[0] == INFINITY && isnan(r.values[1]) && r.values[3] == -INFINITY,
                "logsumexp on %s (%s): %g %g %g", backends[b], rc_dtypes[d], r.values[0],
                r.values[1], r.values[3]);
      cr_assert(fabs(r.values[2] - log(expected_row2)) < 2e-2, "logsumexp on %s (%s): %g, expected %g",
                backends[b], rc_dtypes[d], r.values[2], log(expected_row2));
    }
}

Test(reduce, logsumexp_var_and_logical_special_values) {
  rc_json_t j;
  const double lse_in[] = {INFINITY, 1, -INFINITY, -INFINITY, NAN, 1, 1, 2};
  const double var_in[] = {4, 0, 0, 0};
  const double logic_in[] = {NAN, 1, 0, -0.0};
  for (size_t b = 0; b < sizeof backends / sizeof *backends; b++)
    for (size_t d = 0; d < 3; d++) {
      run_result_t r = run_values(rc_dim_op(&j, "aten::logsumexp", rc_dtypes[d], RC_VIEW(4, 2), "int[1]", "[1]", "false"),
                                  backends[b], lse_in, 8);
      if (r.skipped) continue;
      cr_assert(r.values[0] == INFINITY && r.values[1] == -INFINITY && isnan(r.values[2]),
                "logsumexp on %s: %g %g %g", backends[b], r.values[0], r.values[1], r.values[2]);
      cr_assert(fabs(r.values[3] - log(exp(1) + exp(2))) < 2e-2, "logsumexp on %s: %g", backends[b],
                r.values[3]);
      /* n = 1 with correction 1: 0/0; n = 3: (0 + ...) */
      r = run_values(rc_var(&j, "aten::var", rc_dtypes[d], RC_VIEW(4, 1), "[1]", "1", false), backends[b], var_in, 4);
      for (int i = 0; i < 4; i++) cr_assert(isnan(r.values[i]), "var of one element on %s", backends[b]);
      r = run_values(rc_var(&j, "aten::var", rc_dtypes[d], RC_VIEW(1, 4), "[1]", "5", false), backends[b], var_in, 4);
      cr_assert(r.values[0] == INFINITY, "var with correction > n on %s: %g", backends[b], r.values[0]);
      r = run_values(rc_dim_op(&j, "aten::all", rc_dtypes[d], RC_VIEW(2, 2), "int", "1", "false"), backends[b], logic_in, 4);
      expect_values("all", backends[b], &r, (double[]){1, 0}, NULL, 2);
      r = run_values(rc_dim_op(&j, "aten::any", rc_dtypes[d], RC_VIEW(2, 2), "int", "1", "false"), backends[b], logic_in, 4);
      expect_values("any", backends[b], &r, (double[]){1, 0}, NULL, 2);
      r = run_values(rc_norm(&j, true, rc_dtypes[d], RC_VIEW(4), "0", "null", false, NULL), backends[b], logic_in, 4);
      expect_values("0-norm", backends[b], &r, (double[]){2}, NULL, 1);
      r = run_values(rc_norm(&j, true, rc_dtypes[d], RC_VIEW(2, 2), "-Infinity", "[1]", false, NULL), backends[b], var_in, 4);
      expect_values("-inf-norm", backends[b], &r, (double[]){0, 0}, NULL, 2);
      /* empty reductions: sum 0, prod 1, mean NaN, max refused at planning */
      r = run_values(rc_sum(&j, "aten::sum", rc_dtypes[d], RC_VIEW(2, 0), "[1]", false, NULL), backends[b], NULL, 0);
      expect_values("empty sum", backends[b], &r, (double[]){0, 0}, NULL, 2);
      r = run_values(rc_sum(&j, "aten::mean", rc_dtypes[d], RC_VIEW(2, 0), "[1]", false, NULL), backends[b], NULL, 0);
      cr_assert(isnan(r.values[0]) && isnan(r.values[1]), "empty mean on %s", backends[b]);
      r = run_values(rc_dim_op(&j, "aten::prod", rc_dtypes[d], RC_VIEW(2, 0), "int", "1", "false"), backends[b], NULL, 0);
      expect_values("empty prod", backends[b], &r, (double[]){1, 1}, NULL, 2);
    }
}

/* Integers exactly, int64 results, two's complement wrap-around (the reference only runs
 * them). */
Test(reduce, integer_results_are_exact) {
  rc_json_t j;
  const double big[] = {2147483647, 2147483647, 2147483647, -5};
  run_result_t r = run_values(rc_sum(&j, "aten::sum", "int", RC_VIEW(4), "null", false, NULL), "ref", big, 4);
  cr_assert_eq(r.indices[0], 3 * (int64_t)2147483647 - 5);
  r = run_values(rc_scan(&j, "aten::cumsum", "int", RC_VIEW(4), 0, NULL), "ref", big, 4);
  expect_values("cumsum int32", "ref", &r, NULL,
                (int64_t[]){2147483647, 2 * (int64_t)2147483647, 3 * (int64_t)2147483647,
                            3 * (int64_t)2147483647 - 5}, 4);
  const double bools[] = {1, 0, 1, 1};
  r = run_values(rc_scan(&j, "aten::cumsum", "bool", RC_VIEW(4), 0, NULL), "ref", bools, 4);
  expect_values("cumsum bool", "ref", &r, NULL, (int64_t[]){1, 1, 2, 3}, 4);
  const double ints[] = {3, -1, 3, 7, 3};
  r = run_values(rc_sort(&j, "int", RC_VIEW(5), 0, true), "ref", ints, 5);
  expect_values("sort int descending", "ref", &r, (double[]){7, 3, 3, 3, -1}, (int64_t[]){3, 0, 2, 4, 1}, 5);
  const double pows[] = {4294967296.0, 4294967296.0};
  r = run_values(rc_dim_op(&j, "aten::prod", "long int", RC_VIEW(2), "int", "0", "false"), "ref", pows, 2);
  cr_assert_eq(r.indices[0], 0, "2^64 wraps to 0 in int64");
  /* the same on opencl's 64-bit integer kernels, and the first of equal extremes */
  static const char *const integer_backends[] = {"ref", "opencl"};
  for (size_t k = 0; k < 2; k++) {
    const char *be = integer_backends[k];
    r = run_values(rc_sum(&j, "aten::sum", "int", RC_VIEW(4), "null", false, NULL), be, big, 4);
    if (r.skipped) continue;
    cr_assert_eq(r.indices[0], 3 * (int64_t)2147483647 - 5, "sum int32 on %s", be);
    /* dtype=int8 converts first: 127 + 127 + 127 - 5 wraps at each element's conversion only */
    const double bytes[] = {383, 127, 127, -5};
    r = run_values(rc_sum(&j, "aten::sum", "int", RC_VIEW(4), "null", false, "1"), be, bytes, 4);
    cr_assert_eq(r.values[0], (double)(int8_t)(127 + 127 + 127 - 5), "sum dtype=int8 on %s", be);
    r = run_values(rc_dim_op(&j, "aten::prod", "long int", RC_VIEW(2), "int", "0", "false"), be,
                   pows, 2);
    cr_assert_eq(r.indices[0], 0, "prod on %s: 2^64 wraps to 0 in int64", be);
    const double ties[] = {3, 7, -1, 7, -1};
    r = run_values(rc_dim_op(&j, "aten::max", "int", RC_VIEW(5), "int", "0", "false"), be, ties, 5);
    expect_values("max int first", be, &r, (double[]){7}, (int64_t[]){1}, 1);
    r = run_values(rc_dim_op(&j, "aten::min", "int", RC_VIEW(5), "int", "0", "false"), be, ties, 5);
    expect_values("min int first", be, &r, (double[]){-1}, (int64_t[]){2}, 1);
  }
}

/* Integer sorts on their integer values (cpu's 32-bit keys, int64's two passes, opencl's 64-bit
 * keys), stable, and integers averaged as floats: hand-worked values. */
Test(reduce, integer_sorts_and_integer_means_are_exact) {
  rc_json_t j;
  /* 2^33 + 5, -2^33, 5, 2^33 + 1, 5, -1, 2^32 + 5: equal high halves, equal low halves */
  const double wide[] = {8589934597.0, -8589934592.0, 5, 8589934593.0, 5, -1, 4294967301.0};
  const double bytes[] = {-128, 127, 0, -1, 127};
  for (size_t b = 0; b < sizeof backends / sizeof *backends; b++) {
    const char *be = backends[b];
    run_result_t r = run_values(rc_sort(&j, "long int", RC_VIEW(7), 0, false), be, wide, 7);
    if (r.skipped) continue;
    expect_values("sort int64", be, &r,
                  (double[]){-8589934592.0, -1, 5, 5, 4294967301.0, 8589934593.0, 8589934597.0},
                  (int64_t[]){1, 5, 2, 4, 6, 3, 0}, 7);
    r = run_values(rc_sort(&j, "long int", RC_VIEW(7), 0, true), be, wide, 7);
    expect_values("sort int64 descending", be, &r,
                  (double[]){8589934597.0, 8589934593.0, 4294967301.0, 5, 5, -1, -8589934592.0},
                  (int64_t[]){0, 3, 6, 2, 4, 5, 1}, 7);
    r = run_values(rc_topk(&j, "long int", RC_VIEW(7), 3, 0, true), be, wide, 7);
    expect_values("topk int64", be, &r, (double[]){8589934597.0, 8589934593.0, 4294967301.0},
                  (int64_t[]){0, 3, 6}, 3);
    r = run_values(rc_topk(&j, "int", RC_VIEW(7), 3, 0, false), be, (double[]){3, -7, 0, -7, 9, 3, 1}, 7);
    expect_values("topk int32 smallest", be, &r, (double[]){-7, -7, 0}, (int64_t[]){1, 3, 2}, 3);
    r = run_values(rc_sort(&j, "signed char", RC_VIEW(5), 0, false), be, bytes, 5);
    expect_values("sort int8", be, &r, (double[]){-128, -1, 0, 127, 127}, (int64_t[]){0, 3, 2, 1, 4}, 5);
    r = run_values(rc_sort(&j, "bool", RC_VIEW(5), 0, true), be, (double[]){0, 1, 0, 1, 1}, 5);
    expect_values("sort bool descending", be, &r, (double[]){1, 1, 1, 0, 0},
                  (int64_t[]){1, 3, 4, 0, 2}, 5);
    /* torch.tensor([1, 2, 3, 4]).mean(dtype=torch.float32) = 2.5; int8 [-128, 127, 3, 2] with
     * dtype=bfloat16: 4 / 4 = 1 */
    r = run_values(rc_sum(&j, "aten::mean", "int", RC_VIEW(4), "null", false, "6"), be,
                   (double[]){1, 2, 3, 4}, 4);
    expect_values("mean int32 dtype=float32", be, &r, (double[]){2.5}, NULL, 1);
    r = run_values(rc_sum(&j, "aten::mean", "signed char", RC_VIEW(4), "[0]", false, "15"), be,
                   (double[]){-128, 127, 3, 2}, 4);
    expect_values("mean int8 dtype=bfloat16", be, &r, (double[]){1}, NULL, 1);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* golden cases                                                                                */

#define GOLDEN_DIR "tests/data/golden"

/* Element e of a golden .npy (logical order) as double. */
static double npy_value(const xr_npy_t *npy, const char *ir_dtype, int64_t e) {
  const uint8_t *p = npy->data + (size_t)e * npy->item_size;
  const char *d = npy->descr + 1;
  if (!strcmp(d, "f4")) return *(const float *)p;
  if (!strcmp(d, "f8")) return *(const double *)p;
  if (!strcmp(d, "f2")) return xr_f16_to_f32(*(const uint16_t *)p);
  if (!strcmp(d, "u2") && !strcmp(ir_dtype, "c10::BFloat16")) return xr_bf16_to_f32(*(const uint16_t *)p);
  if (!strcmp(d, "i4")) return *(const int32_t *)p;
  if (!strcmp(d, "i8")) return (double)*(const int64_t *)p;
  if (!strcmp(d, "b1") || !strcmp(d, "u1")) return *p;
  cr_assert_fail("unexpected descr %s", npy->descr);
  return 0;
}

/* Every golden case whose notes say "reduction", on `device` with its best kernel (or the
 * reference), through the engine with --dump-outputs, against the expected files as the
 * manifest's compare mode and tolerance say. */
static void golden_reductions(const char *device, xr_kernel_choice_t choice, const char *prefix) {
  uint8_t *bytes;
  size_t size;
  cr_assert_eq(xr_read_file(GOLDEN_DIR "/manifest.json", &bytes, &size), XR_OK, "%s", xr_last_error());
  cJSON *manifest = cJSON_Parse((const char *)bytes), *c;
  free(bytes);
  cr_assert_not_null(manifest);
  char dump[1024];
  snprintf(dump, sizeof dump, "%s/reduce-golden-%s-%d", getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp",
           device, (int)choice);
  int checked = 0;
  cJSON_ArrayForEach(c, manifest) {
    const cJSON *notes = cJSON_GetObjectItem(c, "notes"), *ir = cJSON_GetObjectItem(c, "ir");
    if (!ir || !cJSON_IsString(notes) || strncmp(notes->valuestring, "reduction:", 10)) continue;
    const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
    char *text = cJSON_PrintUnformatted(ir);
    size_t len = strlen(text);
    char *list = malloc(len + 3);
    snprintf(list, len + 3, "[%s]", text);
    free(text);
    xr_bundle_t *b;
    cr_assert_eq(xr_bundle_decode((const uint8_t *)list, strlen(list), name, GOLDEN_DIR, NULL, &b),
                 XR_OK, "%s: %s", name, xr_last_error());
    free(list);
    once_t how = {.device = device, .choice = choice, .dump_dir = dump};
    xr_op_result_t r;
    if (replay_once(b, &how, &r) != XR_OK) {
      xr_bundle_destroy(b);
      cJSON_Delete(manifest);
      cr_skip_test("%s unavailable: %s", device, xr_last_error());
    }
    if (r.outcome == XR_OP_UNSUPPORTED && strstr(r.message, "run on the reference") &&
        strcmp(device, "cpu")) { /* forms the fast kernels leave to the cpu reference */
      xr_bundle_destroy(b);
      continue;
    }
    cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s on %s: %s", name, device, r.message);
    cr_assert(!strncmp(r.kernel, prefix, strlen(prefix)), "%s: ran %s", name, r.kernel);
    const cJSON *tol = cJSON_GetObjectItem(c, "tolerance"), *e;
    double nmse_tol = cJSON_GetObjectItem(tol, "nmse")->valuedouble;
    double atol = cJSON_GetObjectItem(tol, "atol")->valuedouble;
    double rtol = cJSON_GetObjectItem(tol, "rtol")->valuedouble;
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(c, "expected")) {
      const char *target = cJSON_GetObjectItem(e, "target")->valuestring;
      const char *dtype = cJSON_GetObjectItem(e, "dtype")->valuestring;
      char want_path[1200], got_path[1200];
      snprintf(want_path, sizeof want_path, GOLDEN_DIR "/%s", cJSON_GetObjectItem(e, "file")->valuestring);
      snprintf(got_path, sizeof got_path, "%s/op0_%s.npy", dump, target);
      xr_npy_t want, got;
      cr_assert_eq(xr_npy_load(want_path, &want), XR_OK, "%s", xr_last_error());
      cr_assert_eq(xr_npy_load(got_path, &got), XR_OK, "%s", xr_last_error());
      cr_assert_eq(got.numel, want.numel, "%s %s: %lld elements", name, target, (long long)got.numel);
      double num = 0, den = 0;
      for (int64_t i = 0; i < want.numel; i++) {
        double a = npy_value(&got, dtype, i), x = npy_value(&want, dtype, i);
        cr_assert(isfinite(a), "%s %s[%lld] is %g on %s", name, target, (long long)i, a, device);
        cr_assert_leq(fabs(a - x), atol + rtol * fabs(x), "%s %s[%lld] on %s: %.9g, expected %.9g",
                      name, target, (long long)i, device, a, x);
        num += (a - x) * (a - x), den += x * x;
      }
      cr_assert_leq(den > 0 ? num / den : num, nmse_tol, "%s %s on %s: nmse", name, target, device);
      xr_npy_free(&want);
      xr_npy_free(&got);
    }
    xr_bundle_destroy(b);
    checked++;
  }
  cJSON_Delete(manifest);
  cr_assert_geq(checked, strcmp(device, "cpu") ? 25 : 26, "only %d golden reduction cases", checked);
}

Test(reduce_golden, reference) { golden_reductions("cpu", XR_KERNEL_REFERENCE, "ref.reduce"); }
/* The integer cases run on the reference there too. */
Test(reduce_golden, cpu) { golden_reductions("cpu", XR_KERNEL_BEST, ""); }
/* On opencl every case but one (an integer sort, left to the cpu reference) runs. */
Test(reduce_golden, opencl) { golden_reductions("opencl", XR_KERNEL_BEST, "opencl.reduce"); }

/* ------------------------------------------------------------------------------------------ */
/* plans                                                                                       */

static xr_status_t plan_of(const char *json, xr_bundle_t **out_bundle, xr_op_plan_t *plan) {
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, out_bundle),
               XR_OK, "%s", xr_last_error());
  return xr_kernel_plan(&(*out_bundle)->ops[0], plan);
}

static void expect_result(const char *json, size_t count, xr_dtype_t d0, int rank0,
                          const int64_t *shape0, xr_dtype_t d1) {
  xr_bundle_t *b;
  xr_op_plan_t plan;
  cr_assert_eq(plan_of(json, &b, &plan), XR_OK, "%s: %s", json, xr_last_error());
  cr_assert_eq(plan.return_count, count, "%s: %zu returns", json, plan.return_count);
  cr_assert_eq(plan.returns[0].dtype, d0, "%s: %s", json, xr_dtype_name(plan.returns[0].dtype));
  cr_assert_eq(plan.returns[0].rank, rank0, "%s: rank %d", json, plan.returns[0].rank);
  for (int d = 0; d < rank0; d++) cr_assert_eq(plan.returns[0].shape[d], shape0[d], "%s: dim %d", json, d);
  if (count > 1) cr_assert_eq(plan.returns[1].dtype, d1, "%s", json);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
}

Test(reduce_plan, result_dtypes_and_shapes_follow_torch) {
  rc_json_t j;
  rc_view_t v = RC_VIEW(4, 5, 6);
  expect_result(rc_sum(&j, "aten::sum", "int", v, "[1]", false, NULL), 1, XR_DTYPE_I64, 2, RC_SHAPE(4, 6), 0);
  expect_result(rc_sum(&j, "aten::sum", "bool", v, "null", false, NULL), 1, XR_DTYPE_I64, 0, NULL, 0);
  expect_result(rc_sum(&j, "aten::sum", "c10::BFloat16", v, "[0, -1]", true, NULL), 1, XR_DTYPE_BF16, 3,
                RC_SHAPE(1, 5, 1), 0);
  expect_result(rc_sum(&j, "aten::sum", "c10::BFloat16", v, "[]", false, "6"), 1, XR_DTYPE_F32, 0, NULL, 0);
  expect_result(rc_sum(&j, "aten::mean", "int", v, "[1]", false, "7"), 1, XR_DTYPE_F64, 2, RC_SHAPE(4, 6), 0);
  expect_result(rc_dim_op(&j, "aten::prod", "c10::Half", v, "int", "2", "false"), 1, XR_DTYPE_F16, 2, RC_SHAPE(4, 5), 0);
  expect_result(rc_dim_op(&j, "aten::all", "float", v, "int", "0", "false"), 1, XR_DTYPE_BOOL, 2, RC_SHAPE(5, 6), 0);
  expect_result(rc_dim_op(&j, "aten::any", "unsigned char", v, "int", "0", "false"), 1, XR_DTYPE_U8, 2, RC_SHAPE(5, 6), 0);
  expect_result(rc_dim_op(&j, "aten::count_nonzero", "float", v, "int[]", "[0, 2]", NULL), 1, XR_DTYPE_I64, 1, RC_SHAPE(5), 0);
  expect_result(rc_dim_op(&j, "aten::logsumexp", "int", v, "int[1]", "[2]", "true"), 1, XR_DTYPE_F32, 3, RC_SHAPE(4, 5, 1), 0);
  expect_result(rc_var(&j, "aten::var", "c10::BFloat16", v, "[1]", "1", false), 1, XR_DTYPE_BF16, 2, RC_SHAPE(4, 6), 0);
  expect_result(rc_var(&j, "aten::std_mean", "float", v, "null", "0", false), 2, XR_DTYPE_F32, 0, NULL, XR_DTYPE_F32);
  expect_result(rc_dim_op(&j, "aten::max", "c10::BFloat16", v, "int", "-1", "true"), 2, XR_DTYPE_BF16, 3,
                RC_SHAPE(4, 5, 1), XR_DTYPE_I64);
  expect_result(rc_dim_op(&j, "aten::argmin", "float", v, "int?", "null", "true"), 1, XR_DTYPE_I64, 3, RC_SHAPE(1, 1, 1), 0);
  expect_result(rc_scan(&j, "aten::cumsum", "bool", v, 1, NULL), 1, XR_DTYPE_I64, 3, RC_SHAPE(4, 5, 6), 0);
  expect_result(rc_scan(&j, "aten::cumprod", "c10::BFloat16", v, 1, "6"), 1, XR_DTYPE_F32, 3, RC_SHAPE(4, 5, 6), 0);
  expect_result(rc_topk(&j, "float", v, 2, 1, true), 2, XR_DTYPE_F32, 3, RC_SHAPE(4, 2, 6), XR_DTYPE_I64);
  expect_result(rc_norm(&j, true, "c10::BFloat16", v, "2", "[1, 2]", false, "6"), 1, XR_DTYPE_F32, 1, RC_SHAPE(4), 0);
  /* max() without dim: every element, values only */
  rc_begin(&j, "aten::max");
  rc_tensor(&j, "self", "Tensor", "c10::Half", &v);
  expect_result(rc_end(&j), 1, XR_DTYPE_F16, 0, NULL, 0);
  /* var(self, unbiased) and var.dim(self, dim, unbiased, keepdim) */
  rc_begin(&j, "aten::var");
  rc_tensor(&j, "self", "Tensor", "float", &v);
  rc_value(&j, "unbiased", "bool", "false");
  expect_result(rc_end(&j), 1, XR_DTYPE_F32, 0, NULL, 0);
  rc_begin(&j, "aten::std");
  rc_tensor(&j, "self", "Tensor", "float", &v);
  rc_value(&j, "dim", "int[1]?", "[2]");
  rc_value(&j, "unbiased", "bool", "true");
  rc_value(&j, "keepdim", "bool", "true");
  expect_result(rc_end(&j), 1, XR_DTYPE_F32, 3, RC_SHAPE(4, 5, 1), 0);
}

/* A sum reads every element once and writes every output once; expanded dims are read once. */
Test(reduce_plan, bytes_and_flops) {
  rc_json_t j;
  xr_bundle_t *b;
  xr_op_plan_t plan;
  cr_assert_eq(plan_of(rc_sum(&j, "aten::sum", "c10::BFloat16", RC_VIEW(64, 1000), "[1]", false, NULL), &b, &plan), XR_OK);
  cr_assert_float_eq(plan.bytes, 64.0 * 1000 * 2 + 64 * 2, 1e-9);
  cr_assert_float_eq(plan.flops, 64.0 * 1000, 1e-9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  rc_view_t expanded = rc_strided(2, RC_SHAPE(512, 100), RC_SHAPE(0, 1), 0);
  cr_assert_eq(plan_of(rc_sum(&j, "aten::sum", "float", expanded, "[0]", false, NULL), &b, &plan), XR_OK);
  cr_assert_float_eq(plan.bytes, 100.0 * 4 + 100 * 4, 1e-9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  cr_assert_eq(plan_of(rc_topk(&j, "float", RC_VIEW(8, 1024), 16, -1, true), &b, &plan), XR_OK);
  cr_assert_float_eq(plan.bytes, 8.0 * 1024 * 4 + 8 * 16 * (4 + 8), 1e-9);
  cr_assert_float_eq(plan.flops, 8.0 * 1024 * 10, 1e-9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
}

static void expect_plan_error(const char *json, const char *needle) {
  xr_bundle_t *b;
  xr_op_plan_t plan;
  cr_assert_eq(plan_of(json, &b, &plan), XR_INVALID_ARGUMENT, "%s", json);
  cr_assert(strstr(xr_last_error(), needle), "error \"%s\" lacks \"%s\"", xr_last_error(), needle);
  xr_bundle_destroy(b);
}

Test(reduce_plan, bad_arguments_name_the_argument) {
  rc_json_t j;
  rc_view_t v = RC_VIEW(4, 5);
  expect_plan_error(rc_sum(&j, "aten::sum", "float", v, "[2]", false, NULL), "dim");
  expect_plan_error(rc_sum(&j, "aten::sum", "float", v, "[1, -1]", false, NULL), "more than once");
  expect_plan_error(rc_sum(&j, "aten::mean", "int", v, "[1]", false, NULL), "dtype");
  expect_plan_error(rc_dim_op(&j, "aten::amax", "float", RC_VIEW(0, 5), "int[1]", "[0]", "false"), "empty");
  expect_plan_error(rc_dim_op(&j, "aten::max", "float", RC_VIEW(4, 0), "int", "1", "false"), "empty");
  expect_plan_error(rc_dim_op(&j, "aten::argmin", "float", RC_VIEW(0), "int?", "null", "false"), "empty");
  expect_plan_error(rc_var(&j, "aten::var", "int", v, "[1]", "1", false), "floating");
  expect_plan_error(rc_norm(&j, true, "float", RC_VIEW(0, 3), "Infinity", "[1]", false, NULL), "empty");
  expect_plan_error(rc_norm(&j, false, "long int", v, "2", "[1]", false, NULL), "floating");
  expect_plan_error(rc_topk(&j, "float", v, 6, 1, true), "k");
  expect_plan_error(rc_scan(&j, "aten::cumsum", "float", v, 2, NULL), "dim");
  expect_plan_error(rc_scan(&j, "aten::cumsum_", "float", v, 1, "7"), "dtype");
  rc_begin(&j, "aten::sum");
  rc_tensor(&j, "self", "Tensor", "float", &v);
  rc_value(&j, "dim", "int[1]?", "[1]");
  rc_value(&j, "keepdim", "bool", "false");
  rc_kw(&j);
  rc_tensor(&j, "out", "Tensor(a!)", "float", &(rc_view_t){.rank = 1, .shape = {5}});
  expect_plan_error(rc_end(&j), "out");
}

/* Forms this family does not run are planned, and every implementation declines them with
 * the reason. */
Test(reduce_plan, unimplemented_forms_are_unsupported_with_the_reason) {
  rc_json_t j;
  rc_view_t v = RC_VIEW(4, 5);
  xr_op_result_t r = check_op(rc_sum(&j, "aten::sum", "c10::Float8_e4m3fn", v, "[1]", false, NULL), "cpu");
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "not implemented"), "%s", r.message);
  r = check_op(rc_sum(&j, "aten::sum", "unsigned int", v, "[1]", false, NULL), "cpu");
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
}

/* sort and topk inputs get distinct values along the sorted dim unless the bundle has data. */
Test(reduce_plan, sort_inputs_have_no_ties) {
  rc_json_t j;
  xr_bundle_t *b;
  xr_op_plan_t plan;
  cr_assert_eq(plan_of(rc_sort(&j, "c10::BFloat16", RC_VIEW(3, 2000), -1, false), &b, &plan), XR_OK);
  xr_initializer_fn init = xr_kernel_initializer(&plan);
  cr_assert_not_null(init);
  size_t bytes = 3 * 2000 * 2;
  uint16_t *host = calloc(1, bytes);
  void *hosts[1] = {host};
  size_t sizes[1] = {bytes};
  bool has_data[1] = {false};
  char policy[256] = "";
  xr_init_context_t c = {.op = &b->ops[0], .plan = &plan, .host = hosts, .sizes = sizes,
                         .has_data = has_data, .seed = 7, .policy = policy, .policy_size = sizeof policy};
  cr_assert_eq(init(&c), XR_OK);
  cr_assert(strstr(policy, "no ties"), "%s", policy);
  for (int r = 0; r < 3; r++)
    for (int a = 0; a < 2000; a++)
      for (int k = a + 1; k < 2000; k++)
        cr_assert_neq(host[r * 2000 + a], host[r * 2000 + k], "a tie in row %d", r);
  free(host);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
}

/* ------------------------------------------------------------------------------------------ */
/* profiler traces                                                                             */

/* One cpu_op event as PyTorch's profiler records it, with a kernel launched inside it. */
static void trace_event(char *buf, size_t size, size_t *len, int i, const char *name,
                        const char *types, const char *dims, const char *strides,
                        const char *concrete) {
  double ts = 1000.0 * (i + 1);
  *len += (size_t)snprintf(buf + *len, size - *len,
      "%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 1, \"tid\": 1, \"ts\": %.1f, "
      "\"dur\": 100, \"args\": {\"Input type\": %s, \"Input Dims\": %s, \"Input Strides\": %s, "
      "\"Concrete Inputs\": %s}},"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
      "\"tid\": 1, \"ts\": %.1f, \"dur\": 1, \"args\": {\"correlation\": %d}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%d\", \"pid\": 0, \"tid\": 7, \"ts\": %.1f, "
      "\"dur\": 2.5, \"args\": {\"correlation\": %d}}",
      i ? "," : "", name, ts, types, dims, strides, concrete, ts + 50, 100 + i, i, ts + 100, 100 + i);
}

typedef struct traced {
  size_t count;
  xr_op_result_t r[16];
} traced_t;

static void collect_traced(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  (void)position, (void)count;
  traced_t *t = ctx;
  if (t->count < 16) t->r[t->count++] = *r;
}

static const xr_op_t *op_named(const xr_bundle_t *b, const char *name, const char *arg) {
  for (size_t i = 0; i < b->op_count; i++)
    if (!strcmp(b->ops[i].name, name) && (!arg || xr_op_find_arg(&b->ops[i], arg))) return &b->ops[i];
  cr_assert_fail("no %s with argument %s extracted", name, arg ? arg : "-");
  return NULL;
}

/* Overloads told apart by what the profiler recorded; every one extracted runs (max.other as
 * the elementwise maximum, on the pointwise family's kernel). */
Test(reduce, traced_overloads_extract_and_run) {
  static char text[16384];
  size_t len = (size_t)snprintf(text, sizeof text, "{\"traceEvents\": [");
  int i = 0;
  trace_event(text, sizeof text, &len, i++, "aten::sum", "[\"c10::BFloat16\", \"ScalarList\", \"Scalar\", \"\"]",
              "[[4, 8], [], [], []]", "[[8, 1], [], [], []]", "[\"\", \"[1]\", \"False\", \"\"]");
  trace_event(text, sizeof text, &len, i++, "aten::sum", "[\"float\", \"\"]", "[[4, 8], []]",
              "[[8, 1], []]", "[\"\", \"\"]");
  trace_event(text, sizeof text, &len, i++, "aten::var", "[\"float\", \"ScalarList\", \"Scalar\", \"Scalar\"]",
              "[[4, 8], [], [], []]", "[[8, 1], [], [], []]", "[\"\", \"[1]\", \"1\", \"True\"]");
  trace_event(text, sizeof text, &len, i++, "aten::max", "[\"float\", \"Scalar\", \"Scalar\"]",
              "[[4, 8], [], []]", "[[8, 1], [], []]", "[\"\", \"1\", \"False\"]");
  trace_event(text, sizeof text, &len, i++, "aten::max", "[\"float\", \"float\"]", "[[4, 8], [4, 8]]",
              "[[8, 1], [8, 1]]", "[\"\", \"\"]");
  trace_event(text, sizeof text, &len, i++, "aten::topk", "[\"float\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\"]",
              "[[4, 8], [], [], [], []]", "[[8, 1], [], [], [], []]", "[\"\", \"3\", \"-1\", \"True\", \"True\"]");
  trace_event(text, sizeof text, &len, i++, "aten::norm", "[\"c10::BFloat16\", \"Scalar\", \"Scalar\"]",
              "[[4, 8], [], []]", "[[8, 1], [], []]", "[\"\", \"2\", \"6\"]");
  trace_event(text, sizeof text, &len, i++, "aten::cumsum_", "[\"float\", \"Scalar\", \"\"]",
              "[[4, 8], [], []]", "[[8, 1], [], []]", "[\"\", \"1\", \"\"]");
  trace_event(text, sizeof text, &len, i++, "aten::sort", "[\"float\", \"Scalar\", \"Scalar\", \"Scalar\"]",
              "[[4, 8], [], [], []]", "[[8, 1], [], [], []]", "[\"\", \"True\", \"-1\", \"False\"]");
  trace_event(text, sizeof text, &len, i++, "aten::all", "[\"bool\"]", "[[1, 141]]", "[[141, 1]]", "[\"\"]");
  snprintf(text + len, sizeof text - len, "]}");
  xr_bundle_t *b;
  cr_assert_eq(xr_trace_extract_memory(text, strlen(text), "t.json", NULL, &b, NULL), XR_OK, "%s",
               xr_last_error());
  cr_assert_not_null(xr_op_find_arg(op_named(b, "aten::sum", "dim"), "keepdim"));
  cr_assert_not_null(op_named(b, "aten::var", "correction"));
  cr_assert_not_null(op_named(b, "aten::max", "other"));
  cr_assert_not_null(op_named(b, "aten::max", "dim"));
  cr_assert_not_null(op_named(b, "aten::norm", "dtype"));
  cr_assert_not_null(op_named(b, "aten::sort", "stable"));
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = "cpu";
  o.check = true;
  o.warmup = 0;
  o.iters = 1;
  static traced_t seen;
  memset(&seen, 0, sizeof seen);
  xr_replay_observer_t observer = {.result = collect_traced, .context = &seen};
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_OK, "%s", xr_last_error());
  cr_assert_eq(seen.count, b->op_count);
  for (size_t k = 0; k < seen.count; k++) {
    const xr_op_result_t *r = &seen.r[k];
    const xr_op_t *op = &b->ops[r->index];
    cr_assert_eq(r->outcome, XR_OP_SUCCEEDED, "%s: %s", op->name, r->message);
    if (xr_op_find_arg(op, "other"))
      cr_assert(strstr(r->kernel, "pointwise") || strstr(r->kernel, "elementwise"), "%s",
                r->kernel);
    cr_assert(r->checked && r->check_passed, "%s: check failed", op->name);
  }
  xr_bundle_destroy(b);
}
