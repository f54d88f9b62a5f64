/* The scatter family (kernels/scatter.c) beyond its case matrix (scatter_cases.h, run on every
 * driver by the scatter_matrix_* targets): the reference, the
 * cpu and the opencl kernels on small embedded inputs against values worked out by hand (torch's
 * semantics: wrap and clamp, duplicates, include_self, integer means, NaN in amax/amin, masks);
 * what planning says about shapes, costs and what it cannot replay. */
#include "formats/bundle.h"
#include "formats/trace_extract.h"
#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "tests/kernels/exact.h"
#include "tests/kernels/scatter_cases.h"

/* ------------------------------------------------------------------------------------------ */
/* exact values on embedded inputs                                                             */

/* (not through EXACT_DATA: a SHAPE() argument would expand to braces, whose commas split it) */
#define DATA(c, dtype, ctype, rank, shape, ...)                                \
  exact_tensor(sc_text(c), dtype, rank, shape, (const ctype[]){__VA_ARGS__}, \
               sizeof((const ctype[]){__VA_ARGS__}))

/* Runs the case on the reference, cpu.scatter and opencl.scatter; `target`'s values must be
 * `want` exactly (NaN matching NaN). */
static void expect_values(sc_case_t *c, const char *op, const char *target, const double *want,
                          int64_t n) {
  static const exact_run_t runs[] = {{"cpu", XR_KERNEL_REFERENCE, "ref.scatter"},
                                     {"cpu", XR_KERNEL_BEST, "cpu.scatter"},
                                     {"opencl", XR_KERNEL_BEST, "opencl.scatter"}};
  exact_expect(bundle(op, c->args.s, c->kwargs.s), op, target, want, n, runs,
               sizeof runs / sizeof *runs);
}

Test(scatter_exact, gather_wraps_negative_indices_and_clamps_the_rest) {
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor", DATA(c, "float", float, 2, SHAPE(2, 3), 1, 2, 3, 4, 5, 6));
  sc_arg(&c->args, "dim", "int", "1");
  sc_arg(&c->args, "index", "Tensor", DATA(c, "long int", int64_t, 2, SHAPE(2, 2), -1, 0, 5, -4));
  expect_values(c, "aten::gather", "return0", (const double[]){3, 1, 6, 4}, 4);
}

Test(scatter_exact, take_reads_the_flattened_tensor) {
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor", DATA(c, "float", float, 2, SHAPE(2, 3), 1, 2, 3, 4, 5, 6));
  sc_arg(&c->args, "index", "Tensor", DATA(c, "int", int32_t, 1, SHAPE(4), 5, -1, 0, 7));
  expect_values(c, "aten::take", "return0", (const double[]){6, 6, 1, 6}, 4);
}

Test(scatter_exact, scatter_value_last_duplicate_wins) {
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", DATA(c, "float", float, 1, SHAPE(3), 0, 0, 0));
  sc_arg(&c->args, "dim", "int", "0");
  sc_arg(&c->args, "index", "Tensor", DATA(c, "long int", int64_t, 1, SHAPE(3), 1, 1, 0));
  sc_arg(&c->args, "value", "Scalar", "4");
  expect_values(c, "aten::scatter_", "self", (const double[]){4, 4, 0}, 3);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", DATA(c, "float", float, 1, SHAPE(3), 1, 2, 3));
  sc_arg(&c->args, "dim", "int", "0");
  sc_arg(&c->args, "index", "Tensor", DATA(c, "long int", int64_t, 1, SHAPE(2), 2, 2));
  sc_arg(&c->args, "source", "Tensor", DATA(c, "float", float, 1, SHAPE(2), 8, 9));
  expect_values(c, "aten::index_copy", "return0", (const double[]){1, 2, 9}, 3);
}

Test(scatter_exact, integer_means_floor_divide) {
  for (int self = 0; self < 2; self++) {
    sc_case_t *c = sc_new();
    sc_arg(&c->args, "self", "Tensor", DATA(c, "long int", int64_t, 1, SHAPE(4), 10, 10, 10, 10));
    sc_arg(&c->args, "dim", "int", "0");
    sc_arg(&c->args, "index", "Tensor",
           DATA(c, "long int", int64_t, 1, SHAPE(6), 0, 0, 1, 3, 3, 1));
    sc_arg(&c->args, "src", "Tensor",
           DATA(c, "long int", int64_t, 1, SHAPE(6), 1, 2, -3, 4, 5, -4));
    sc_arg(&c->args, "reduce", "str", "\"mean\"");
    sc_arg(&c->kwargs, "include_self", "bool", self ? "true" : "false");
    /* include_self: (10+1+2)/3, (10-3-4)/3, 10, (10+4+5)/3; without: 3/2, -7/2, 10, 9/2 */
    expect_values(c, "aten::scatter_reduce", "return0",
                  self ? (const double[]){4, 1, 10, 6} : (const double[]){1, -4, 10, 4}, 4);
  }
}

Test(scatter_exact, amin_propagates_nan_and_leaves_untouched_elements) {
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor", DATA(c, "float", float, 1, SHAPE(3), 5, 5, 5));
  sc_arg(&c->args, "dim", "int", "0");
  sc_arg(&c->args, "index", "Tensor", DATA(c, "long int", int64_t, 1, SHAPE(4), 0, 0, 1, 1));
  sc_arg(&c->args, "src", "Tensor", DATA(c, "float", float, 1, SHAPE(4), 2, NAN, 3, 1));
  sc_arg(&c->args, "reduce", "str", "\"amin\"");
  sc_arg(&c->kwargs, "include_self", "bool", "false");
  expect_values(c, "aten::scatter_reduce", "return0", (const double[]){NAN, 1, 5}, 3);
}

Test(scatter_exact, index_add_scales_by_alpha_and_index_fill_wraps) {
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", DATA(c, "float", float, 2, SHAPE(3, 2), 1, 1, 1, 1, 1, 1));
  sc_arg(&c->args, "dim", "int", "0");
  sc_arg(&c->args, "index", "Tensor", DATA(c, "long int", int64_t, 1, SHAPE(3), 2, 0, 2));
  sc_arg(&c->args, "source", "Tensor", DATA(c, "float", float, 2, SHAPE(3, 2), 1, 1, 2, 2, 3, 3));
  sc_arg(&c->kwargs, "alpha", "Scalar", "2");
  expect_values(c, "aten::index_add_", "self", (const double[]){5, 5, 1, 1, 9, 9}, 6);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)",
         DATA(c, "long int", int64_t, 2, SHAPE(2, 3), 1, 2, 3, 4, 5, 6));
  sc_arg(&c->args, "dim", "int", "1");
  sc_arg(&c->args, "index", "Tensor", DATA(c, "long int", int64_t, 1, SHAPE(1), -1));
  sc_arg(&c->args, "value", "Scalar", "7");
  expect_values(c, "aten::index_fill_", "self", (const double[]){1, 2, 7, 4, 5, 7}, 6);
}

Test(scatter_exact, masks_select_and_scatter_in_row_major_order) {
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor", DATA(c, "float", float, 2, SHAPE(3, 2), 1, 2, 3, 4, 5, 6));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_v(c, "[%s]", DATA(c, "bool", uint8_t, 1, SHAPE(3), 1, 0, 1)));
  sc_arg(&c->kwargs, "out", "Tensor(a!)", sc_t(c, "float", 2, SHAPE(2, 2), NULL, 0));
  expect_values(c, "aten::index", "out", (const double[]){1, 2, 5, 6}, 4);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor",
         DATA(c, "long int", int64_t, 2, SHAPE(2, 3), 1, 2, 3, 4, 5, 6));
  sc_arg(&c->args, "mask", "Tensor", DATA(c, "bool", uint8_t, 1, SHAPE(3), 0, 1, 1));
  sc_arg(&c->kwargs, "out", "Tensor(a!)", sc_t(c, "long int", 1, SHAPE(4), NULL, 0));
  expect_values(c, "aten::masked_select", "out", (const double[]){2, 3, 5, 6}, 4);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", DATA(c, "float", float, 2, SHAPE(2, 3), 1, 2, 3, 4, 5, 6));
  sc_arg(&c->args, "mask", "Tensor", DATA(c, "bool", uint8_t, 2, SHAPE(2, 1), 1, 0));
  sc_arg(&c->args, "source", "Tensor", DATA(c, "float", float, 1, SHAPE(4), 10, 20, 30, 40));
  expect_values(c, "aten::masked_scatter_", "self", (const double[]){10, 20, 30, 4, 5, 6}, 6);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", DATA(c, "float", float, 1, SHAPE(4), 0, 0, 0, 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_v(c, "[%s]", DATA(c, "bool", uint8_t, 1, SHAPE(4), 1, 0, 1, 1)));
  sc_arg(&c->args, "values", "Tensor", DATA(c, "float", float, 1, SHAPE(3), 1, 2, 3));
  sc_arg(&c->args, "accumulate", "bool", "true");
  expect_values(c, "aten::index_put_", "self", (const double[]){1, 0, 2, 3}, 4);
}

Test(scatter_exact, nonzero_counts_nan_but_not_negative_zero) {
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor",
         DATA(c, "float", float, 2, SHAPE(2, 3), 0, 1, 0, -0.0f, NAN, 2));
  sc_arg(&c->kwargs, "out", "Tensor(a!)", sc_t(c, "long int", 2, SHAPE(3, 2), NULL, 0));
  expect_values(c, "aten::nonzero", "out", (const double[]){0, 1, 1, 1, 1, 2}, 6);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", DATA(c, "bool", uint8_t, 1, SHAPE(4), 0, 1, 1, 0));
  sc_arg(&c->kwargs, "size", "int", "3");
  expect_values(c, "aten::nonzero_static", "return0", (const double[]){1, 2, -1}, 3);
}

/* ------------------------------------------------------------------------------------------ */
/* planning                                                                                    */

static xr_status_t plan_of(const char *json, xr_bundle_t **out_bundle, xr_op_plan_t *plan) {
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, out_bundle),
               XR_OK, "%s", xr_last_error());
  return xr_kernel_plan(&(*out_bundle)->ops[0], plan);
}

Test(scatter_plan, result_shapes_follow_torch) {
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 4, SHAPE(5, 4, 6, 3), NULL, 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, "null", sc_t(c, "long int", 2, SHAPE(2, 1), NULL, 0),
                 sc_t(c, "long int", 1, SHAPE(7), NULL, 0)));
  xr_bundle_t *b;
  xr_op_plan_t p;
  /* adjacent: in place of dims 1 and 2 */
  cr_assert_eq(plan_of(bundle("aten::index", c->args.s, NULL), &b, &p), XR_OK, "%s",
               xr_last_error());
  cr_assert_eq(p.returns[0].rank, 4);
  const int64_t adjacent[] = {5, 2, 7, 3};
  for (int d = 0; d < 4; d++) cr_assert_eq(p.returns[0].shape[d], adjacent[d]);
  cr_assert_eq(p.bytes, (2.0 * 5 * 2 * 7 * 3) * 4 + (2 + 7) * 8);
  xr_kernel_plan_free(&p);
  xr_bundle_destroy(b);
  /* separated: the broadcast dims first */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 4, SHAPE(5, 4, 6, 3), NULL, 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, sc_t(c, "long int", 2, SHAPE(2, 1), NULL, 0), "null",
                 sc_t(c, "long int", 1, SHAPE(7), NULL, 0)));
  cr_assert_eq(plan_of(bundle("aten::index", c->args.s, NULL), &b, &p), XR_OK, "%s",
               xr_last_error());
  const int64_t separated[] = {2, 7, 4, 3};
  for (int d = 0; d < 4; d++) cr_assert_eq(p.returns[0].shape[d], separated[d]);
  xr_kernel_plan_free(&p);
  xr_bundle_destroy(b);
}

Test(scatter_plan, accumulations_count_flops_and_mark_self_written) {
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "c10::BFloat16", 2, SHAPE(10, 8), NULL, 0));
  sc_arg(&c->args, "dim", "int", "0");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 1, SHAPE(6), NULL, 0));
  sc_arg(&c->args, "source", "Tensor", sc_t(c, "c10::BFloat16", 2, SHAPE(6, 8), NULL, 0));
  sc_arg(&c->kwargs, "alpha", "Scalar", "2");
  xr_bundle_t *b;
  xr_op_plan_t p;
  cr_assert_eq(plan_of(bundle("aten::index_add_", c->args.s, c->kwargs.s), &b, &p), XR_OK, "%s",
               xr_last_error());
  cr_assert_eq(p.return_count, 0);
  cr_assert(p.input_written[0], "self is written although its type lacks the '!'");
  cr_assert_eq(p.flops, 2.0 * 48);
  cr_assert_eq(p.bytes, 6 * 8 + 48 * 2 + 48 * 2 * 2);
  xr_kernel_plan_free(&p);
  xr_bundle_destroy(b);
}

/* What a trace cannot give: the size of a mask's selection. */
Test(scatter_plan, data_dependent_sizes_without_out_are_unsupported) {
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 2, SHAPE(4, 5), NULL, 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, sc_t(c, "bool", 1, SHAPE(4), NULL, 0), NULL, NULL));
  const char *json = bundle("aten::index", c->args.s, NULL);
  xr_op_result_t r = check_op(json, "cpu");
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "non-zero count"), "%s", r.message);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 2, SHAPE(4, 5), NULL, 0));
  r = check_op(bundle("aten::nonzero", c->args.s, NULL), "cpu");
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  sc_arg(&c->args, "mask", "Tensor", sc_t(c, "bool", 2, SHAPE(4, 5), NULL, 0));
  r = check_op(bundle("aten::masked_select", c->args.s, NULL), "cpu");
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
}

/* A bool-mask index without out= when the bundle embeds the mask: the result has the mask's
 * count of set elements in place of the masked dims. The wanted values were printed by
 * torch 1.13, x = torch.arange(1., 13).reshape(3, 4): x[[True, False, True]] is
 * [[1, 2, 3, 4], [9, 10, 11, 12]], x[m2] with m2 = [[1, 0, 0, 1], [0, 0, 0, 0], [0, 1, 1, 0]]
 * [1, 4, 10, 11], x[:, [False, True, True, False]] [[2, 3], [6, 7], [10, 11]], and an all-false
 * mask gives a [0, 4] result. */
Test(scatter_exact, embedded_mask_index_counts_its_set_elements) {
  const float x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  sc_case_t *c = sc_new();
  const char *self = exact_tensor(sc_text(c), "float", 2, SHAPE(3, 4), x, sizeof x);
  sc_arg(&c->args, "self", "Tensor", self);
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, DATA(c, "bool", uint8_t, 1, SHAPE(3), 1, 0, 1), NULL, NULL));
  expect_values(c, "aten::index", "return0", (const double[]){1, 2, 3, 4, 9, 10, 11, 12}, 8);
  xr_bundle_t *b;
  xr_op_plan_t p;
  cr_assert_eq(plan_of(bundle("aten::index", c->args.s, NULL), &b, &p), XR_OK, "%s",
               xr_last_error());
  cr_assert(p.returns[0].rank == 2 && p.returns[0].shape[0] == 2 && p.returns[0].shape[1] == 4);
  xr_kernel_plan_free(&p);
  xr_bundle_destroy(b);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", exact_tensor(sc_text(c), "float", 2, SHAPE(3, 4), x, sizeof x));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, DATA(c, "bool", uint8_t, 2, SHAPE(3, 4), 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0),
                 NULL, NULL));
  expect_values(c, "aten::index", "return0", (const double[]){1, 4, 10, 11}, 4);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", exact_tensor(sc_text(c), "float", 2, SHAPE(3, 4), x, sizeof x));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, "null", DATA(c, "bool", uint8_t, 1, SHAPE(4), 0, 1, 1, 0), NULL));
  expect_values(c, "aten::index", "return0", (const double[]){2, 3, 6, 7, 10, 11}, 6);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", exact_tensor(sc_text(c), "float", 2, SHAPE(3, 4), x, sizeof x));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, DATA(c, "bool", uint8_t, 1, SHAPE(3), 0, 0, 0), NULL, NULL));
  cr_assert_eq(plan_of(bundle("aten::index", c->args.s, NULL), &b, &p), XR_OK, "%s",
               xr_last_error());
  cr_assert(p.returns[0].rank == 2 && p.returns[0].shape[0] == 0 && p.returns[0].shape[1] == 4);
  xr_kernel_plan_free(&p);
  xr_bundle_destroy(b);
  xr_op_result_t r = check_op(bundle("aten::index", c->args.s, NULL), "cpu");
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s", r.message);
}

Test(scatter_plan, bad_arguments_name_themselves) {
  xr_bundle_t *b;
  xr_op_plan_t p;
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 2, SHAPE(4, 5), NULL, 0));
  sc_arg(&c->args, "dim", "int", "2");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 2, SHAPE(4, 5), NULL, 0));
  cr_assert_eq(plan_of(bundle("aten::gather", c->args.s, NULL), &b, &p), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "dim"), "%s", xr_last_error());
  xr_bundle_destroy(b);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 2, SHAPE(4, 5), NULL, 0));
  sc_arg(&c->args, "dim", "int", "0");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "float", 2, SHAPE(4, 5), NULL, 0));
  sc_arg(&c->args, "src", "Tensor", sc_t(c, "float", 2, SHAPE(4, 5), NULL, 0));
  cr_assert_eq(plan_of(bundle("aten::scatter_add", c->args.s, NULL), &b, &p), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "index"), "%s", xr_last_error());
  xr_bundle_destroy(b);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 2, SHAPE(4, 5), NULL, 0));
  sc_arg(&c->args, "dim", "int", "0");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 2, SHAPE(4, 5), NULL, 0));
  sc_arg(&c->args, "src", "Tensor", sc_t(c, "c10::Half", 2, SHAPE(4, 5), NULL, 0));
  sc_arg(&c->args, "reduce", "str", "\"sum\"");
  cr_assert_eq(plan_of(bundle("aten::scatter_reduce", c->args.s, NULL), &b, &p),
               XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "src"), "%s", xr_last_error());
  xr_bundle_destroy(b);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", sc_t(c, "float", 2, SHAPE(4, 5), SHAPE(0, 1), 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, sc_t(c, "long int", 1, SHAPE(3), NULL, 0), NULL, NULL));
  sc_arg(&c->args, "values", "Tensor", sc_t(c, "float", 0, NULL, NULL, 0));
  cr_assert_eq(plan_of(bundle("aten::index_put_", c->args.s, NULL), &b, &p), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "expanded"), "%s", xr_last_error());
  xr_bundle_destroy(b);
}

/* ------------------------------------------------------------------------------------------ */
/* repeated executions                                                                         */

/* Two executions of one prepared instance give the same result: state one run leaves behind
 * (accumulator counts, compaction buffers) is reset for the next. Inputs come from the
 * family's initializer over a seeded fill. */
static void runs_repeat(const char *device_name, sc_case_t *c, const char *op) {
  xr_hal_device_t *device;
  if (xr_hal_device_create(device_name, &device) != XR_OK) {
    cr_log_info("%s absent", device_name);
    return;
  }
  const char *json = bundle(op, c->args.s, c->kwargs.s);
  xr_bundle_t *b;
  xr_op_plan_t plan;
  cr_assert_eq(plan_of(json, &b, &plan), XR_OK, "%s", xr_last_error());
  const xr_kernel_impl_t *impl;
  cr_assert_eq(xr_kernel_select(&plan, device, XR_KERNEL_BEST, &impl), XR_OK, "%s",
               xr_last_error());
  size_t n = plan.input_count + plan.return_count;
  cr_assert_leq(n, 8);
  xr_tensor_t t[8];
  void *host[8];
  size_t sizes[8];
  bool has_data[8] = {false};
  for (size_t i = 0; i < n; i++) {
    memset(&t[i], 0, sizeof t[i]);
    if (i < plan.input_count) {
      const xr_tensor_spec_t *s = plan.inputs[i];
      cr_assert_eq(xr_tensor_storage_bytes(s, &sizes[i]), XR_OK);
      t[i].dtype = s->dtype;
      t[i].rank = s->rank;
      memcpy(t[i].shape, s->shape, sizeof(int64_t) * (size_t)s->rank);
      memcpy(t[i].strides, s->strides, sizeof(int64_t) * (size_t)s->rank);
      t[i].offset = s->storage_offset;
    } else {
      const xr_tensor_desc_t *d = &plan.returns[i - plan.input_count];
      int64_t e = 1;
      for (int k = d->rank - 1; k >= 0; k--) t[i].strides[k] = e, e *= d->shape[k];
      t[i].dtype = d->dtype;
      t[i].rank = d->rank;
      memcpy(t[i].shape, d->shape, sizeof(int64_t) * (size_t)d->rank);
      sizes[i] = (size_t)e * xr_dtype_size(d->dtype);
    }
    host[i] = calloc(sizes[i] + 8, 1);
    for (size_t e = 0; e < sizes[i] / xr_dtype_size(t[i].dtype); e++)
      xr_store_element(host[i], t[i].dtype, (int64_t)e, (double)((e * 7919) % 13) - 6.0);
  }
  char policy[256] = "";
  xr_init_context_t ctx = {.op = plan.op,
                           .plan = &plan,
                           .host = host,
                           .sizes = sizes,
                           .has_data = has_data,
                           .seed = 11,
                           .policy = policy,
                           .policy_size = sizeof policy};
  xr_initializer_fn fn = xr_kernel_initializer(&plan);
  cr_assert_not_null(fn);
  cr_assert_eq(fn(&ctx), XR_OK);
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(xr_hal_buffer_alloc(device, sizes[i] ? sizes[i] : 8, &t[i].buffer), XR_OK);
    if (sizes[i]) cr_assert_eq(xr_hal_buffer_write(t[i].buffer, 0, host[i], sizes[i]), XR_OK);
  }
  xr_kernel_instance_t *instance;
  xr_hal_stream_t *stream;
  cr_assert_eq(xr_kernel_prepare(&plan, impl, device, t, &instance), XR_OK, "%s", xr_last_error());
  cr_assert_eq(xr_hal_stream_create(device, &stream), XR_OK);
  size_t out = n - 1, bytes = sizes[out];
  uint8_t *first = malloc(bytes + 1), *second = malloc(bytes + 1);
  for (int run = 0; run < 2; run++) {
    cr_assert_eq(xr_kernel_enqueue(instance, stream), XR_OK, "%s", xr_last_error());
    cr_assert_eq(xr_hal_stream_synchronize(stream), XR_OK);
    cr_assert_eq(xr_hal_buffer_read(run ? second : first, t[out].buffer, 0, bytes), XR_OK);
  }
  cr_assert(!memcmp(first, second, bytes), "%s on %s: the second run differs from the first", op,
            xr_kernel_impl_name(impl));
  free(first);
  free(second);
  xr_hal_stream_destroy(stream);
  xr_kernel_instance_destroy(instance);
  for (size_t i = 0; i < n; i++) {
    xr_hal_buffer_free(t[i].buffer);
    free(host[i]);
  }
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  xr_hal_device_destroy(device);
}

static void repeat_cases(const char *device) {
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "c10::BFloat16", 2, SHAPE(6, 17), NULL, 0));
  sc_arg(&c->args, "dim", "int", "0");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 2, SHAPE(9, 17), NULL, 0));
  sc_arg(&c->args, "src", "Tensor", sc_t(c, "c10::BFloat16", 2, SHAPE(9, 17), NULL, 0));
  sc_arg(&c->args, "reduce", "str", "\"sum\"");
  sc_arg(&c->kwargs, "include_self", "bool", "false");
  runs_repeat(device, c, "aten::scatter_reduce");
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 2, SHAPE(30, 7), NULL, 0));
  sc_arg(&c->args, "mask", "Tensor", sc_t(c, "bool", 2, SHAPE(30, 7), NULL, 0));
  sc_arg(&c->kwargs, "out", "Tensor(a!)", sc_t(c, "float", 1, SHAPE(100), NULL, 0));
  runs_repeat(device, c, "aten::masked_select");
}

Test(scatter_cpu, repeated_runs_agree) {
  repeat_cases("cpu");
}
Test(scatter_opencl, repeated_runs_agree) {
  repeat_cases("opencl");
}

/* What the device kernels leave to the CPU says so. */
Test(scatter_opencl, f64_reductions_are_unsupported_with_the_reason) {
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "double", 2, SHAPE(6, 5), NULL, 0));
  sc_arg(&c->args, "dim", "int", "0");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 2, SHAPE(9, 5), NULL, 0));
  sc_arg(&c->args, "src", "Tensor", sc_t(c, "double", 2, SHAPE(9, 5), NULL, 0));
  xr_op_result_t r = check_op(bundle("aten::scatter_add", c->args.s, NULL), "opencl");
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "f64 reductions"), "%s", r.message);
}

/* ------------------------------------------------------------------------------------------ */
/* from a profiler trace                                                                       */

/* Extracts one recorded op (its args object) and replays it on the cpu with --check. */
static xr_op_result_t extracted(const char *name, const char *args, xr_bundle_t **out_bundle) {
  char trace[4096];
  format(trace, sizeof trace,
         "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 1, "
         "\"tid\": 1, \"ts\": 100.0, \"dur\": 50.0, \"args\": %s}, {\"ph\": \"X\", \"cat\": "
         "\"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 120.0, "
         "\"dur\": 5.0, \"args\": {\"correlation\": 7}}, {\"ph\": \"X\", \"cat\": \"kernel\", "
         "\"name\": \"k\", \"pid\": 2, \"tid\": 0, \"ts\": 200.0, \"dur\": 3.0, \"args\": "
         "{\"correlation\": 7}}]}",
         name, args);
  xr_bundle_t *b;
  cr_assert_eq(xr_trace_extract_memory(trace, strlen(trace), "t.json", NULL, &b, NULL), XR_OK, "%s",
               xr_last_error());
  cr_assert_eq(b->op_count, 1);
  cr_assert_str_eq(b->ops[0].name, name);
  xr_op_result_t r;
  cr_assert_eq(check_bundle(b, "cpu", 0, &r), XR_OK, "%s", xr_last_error());
  *out_bundle = b;
  return r;
}

Test(scatter_extract, recorded_ops_are_named_and_replay) {
  xr_bundle_t *b;
  xr_op_result_t r = extracted(
      "aten::gather",
      "{\"Input Dims\": [[5, 7], [], [5, 3], []], \"Input type\": [\"float\", \"Scalar\", "
      "\"long int\", \"Scalar\"], \"Input Strides\": [[7, 1], [], [3, 1], []], \"Concrete "
      "Inputs\": [\"\", \"1\", \"\", \"False\"]}",
      &b);
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s", r.message);
  cr_assert(r.checked && r.check_passed);
  cr_assert_str_eq(r.kernel, "cpu.scatter");
  cr_assert_not_null(xr_op_find_arg(&b->ops[0], "sparse_grad"));
  cr_assert(strstr(r.init_policy, "shuffled cycle"), "%s", r.init_policy);
  xr_bundle_destroy(b);
  r = extracted("aten::scatter_add_",
                "{\"Input Dims\": [[5, 6], [], [8, 6], [8, 6]], \"Input type\": "
                "[\"c10::BFloat16\", \"Scalar\", \"long int\", \"c10::BFloat16\"], \"Input "
                "Strides\": [[6, 1], [], [6, 1], [6, 1]], \"Concrete Inputs\": [\"\", \"0\", "
                "\"\", \"\"]}",
                &b);
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s", r.message);
  cr_assert(r.checked && r.check_passed);
  cr_assert_str_eq(r.outputs[0].target, "self", "the in-place self is what is checked");
  xr_bundle_destroy(b);
}

/* A reduction the profiler dropped is extraction's fallback 'sum' (it warns); the dtype of a
 * Tensor?[] list's elements, which it never records, makes the op unsupported with the reason. */
Test(scatter_extract, unrecorded_strings_and_list_dtypes) {
  xr_bundle_t *b;
  xr_op_result_t r = extracted(
      "aten::scatter_reduce",
      "{\"Input Dims\": [[6, 5], [], [9, 5], [9, 5], [], []], \"Input type\": [\"float\", "
      "\"Scalar\", \"long int\", \"float\", \"\", \"Scalar\"], \"Input Strides\": [[5, 1], [], "
      "[5, 1], [5, 1], [], []], \"Concrete Inputs\": [\"\", \"0\", \"\", \"\", \"\", \"True\"]}",
      &b);
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s", r.message);
  cr_assert_str_eq(xr_op_find_arg(&b->ops[0], "reduce")->value.as.s, "sum");
  xr_bundle_destroy(b);
  r = extracted("aten::scatter",
                "{\"Input Dims\": [[6, 5], [], [9, 5], [9, 5], []], \"Input type\": [\"float\", "
                "\"Scalar\", \"long int\", \"float\", \"\"], \"Input Strides\": [[5, 1], [], [5, "
                "1], [5, 1], []], \"Concrete Inputs\": [\"\", \"0\", \"\", \"\", \"\"]}",
                &b);
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s", r.message);
  cr_assert(r.checked && r.check_passed);
  xr_bundle_destroy(b);
  r = extracted("aten::index_put_",
                "{\"Input Dims\": [[10, 8], [[4]], [4, 8], []], \"Input type\": [\"float\", "
                "\"TensorList\", \"float\", \"Scalar\"], \"Input Strides\": [[8, 1], [[1]], [8, "
                "1], []], \"Concrete Inputs\": [\"\", \"\", \"\", \"False\"]}",
                &b);
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "was not recorded"), "%s", r.message);
  xr_bundle_destroy(b);
}

/* A profiler records an index.Tensor's list of index tensors as None (the vLLM fixture's
 * aten::index): unsupported with the reason, not a failure. */
Test(scatter_plan, indices_the_trace_did_not_record) {
  text_t t = {0};
  char args[512];
  format(args, sizeof args,
         "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"indices\", \"type\": \"Tensor?[]\", \"value\": null}",
         tensor(&t, "c10::BFloat16", 2, SHAPE(64, 32), NULL, 0));
  xr_op_result_t r = check_op(bundle("aten::index", args, NULL), "cpu");
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "indices: the trace recorded none"), "%s", r.message);
}
