/* The indexing ops (aten::cat, copies per input; index_select and embedding, gathers; argmax,
 * its own family) beyond their case matrix (indexing_cases.h, run on every driver by the
 * indexing_matrix_* targets): plan errors and what runs on the reference. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "formats/bundle.h"
#include "kernels/kernels.h"
#include "tests/kernels/exact.h"
#include "tests/kernels/indexing_cases.h"

/* Plans without running; returns the status (and the plan when OK, freed by the caller). */
static xr_status_t plan_of(const char *json, xr_bundle_t **out_bundle, xr_op_plan_t *plan) {
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, out_bundle),
               XR_OK, "%s", xr_last_error());
  return xr_kernel_plan(&(*out_bundle)->ops[0], plan);
}

Test(indexing, cat_errors) {
  text_t l = {0};
  tensor(&l, "float", 2, SHAPE(3, 4), NULL, 0);
  put(&l, ", ");
  tensor(&l, "float", 2, SHAPE(5, 4), NULL, 0);
  xr_bundle_t *b;
  xr_op_plan_t p;
  cr_assert_eq(plan_of(cat(l.s, 1), &b, &p), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "tensors[1]"), "%s", xr_last_error());
  xr_bundle_destroy(b);
  cr_assert_eq(plan_of(cat(l.s, 2), &b, &p), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "dim"), "%s", xr_last_error());
  xr_bundle_destroy(b);
  cr_assert_eq(plan_of(cat(l.s, 0), &b, &p), XR_OK, "%s", xr_last_error());
  cr_assert_eq(p.returns[0].shape[0], 8);
  cr_assert_eq(p.returns[0].shape[1], 4);
  xr_kernel_plan_free(&p);
  xr_bundle_destroy(b);
}

/* A Tensor[] that TraceLens IR recorded as null, under any spelling of its type (or none): the
 * shapes are unknown, so cat and stack are unsupported with that reason, not failed. */
Test(indexing, unrecorded_tensor_lists_are_unsupported) {
  const char *types[] = {"\"Tensor[]\"", "\"TensorList\"", "\"List[Tensor]\"", "null"};
  const char *ops[] = {"aten::cat", "aten::stack"};
  for (size_t o = 0; o < 2; o++)
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
      char ir[1024];
      format(ir, sizeof ir,
             "[{\"op_name\": \"%s\", \"replay_ir\": {\"list_pos_args\": [{\"arg_name\": "
             "\"tensors\", \"arg_type\": %s, \"value\": null}, {\"arg_name\": \"dim\", "
             "\"arg_type\": \"int\", \"value\": 1}], \"list_kwargs\": []}}]",
             ops[o], types[k]);
      xr_op_result_t r = check_op(ir, "cpu");
      cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s, type %s: %s: %s", ops[o], types[k],
                   xr_op_outcome_name(r.outcome), r.message);
      cr_assert(strstr(r.message, "argument 'tensors' (Tensor[]) was not recorded"), "%s",
                r.message);
    }
  /* a value that is neither a list nor null is bad input */
  xr_bundle_t *b;
  xr_op_plan_t p;
  cr_assert_eq(plan_of(bundle("aten::cat", "{\"name\": \"tensors\", \"type\": \"Tensor[]\", "
                                           "\"value\": 3}", NULL), &b, &p),
               XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "aten::cat: argument 'tensors' (position 0): expected a list "
                                    "of tensors, got an int"), "%s", xr_last_error());
  xr_bundle_destroy(b);
}

/* cat of mixed dtypes promotes as torch does, the legacy empty 1-D tensors included; the wanted
 * values and dtypes were printed by torch 1.13: cat([int32 [[1, 2], [3, 4]], float32
 * [[0.5], [-1.5]], bool [[True], [False]]], 1) is float32 [[1, 2, 0.5, 1], [3, 4, -1.5, 0]],
 * cat([int32 [7], int64 [-2], bool [True]]) int64 [7, -2, 1], cat([float64 empty(0), float32
 * [[1.5, 2]]]) float64 [[1.5, 2]]. */
Test(indexing, cat_promotes_mixed_dtypes) {
  text_t t = {0}, args = {0};
  EXACT_DATA(&t, "int", int32_t, 2, SHAPE(2, 2), 1, 2, 3, 4);
  put(&t, ", ");
  EXACT_DATA(&t, "float", float, 2, SHAPE(2, 1), 0.5, -1.5);
  put(&t, ", ");
  EXACT_DATA(&t, "bool", uint8_t, 2, SHAPE(2, 1), 1, 0);
  const exact_run_t runs[] = {{"cpu", XR_KERNEL_REFERENCE, "ref.elementwise"},
                              {"cpu", XR_KERNEL_BEST, "cpu.elementwise"},
                              {"opencl", XR_KERNEL_BEST, "opencl.elementwise"}};
  exact_expect(cat(t.s, 1), "aten::cat", "return0",
               (const double[]){1, 2, 0.5, 1, 3, 4, -1.5, 0}, 8, runs, 3);
  t.n = args.n = 0;
  EXACT_DATA(&t, "int", int32_t, 1, SHAPE(1), 7);
  put(&t, ", ");
  EXACT_DATA(&t, "long int", int64_t, 1, SHAPE(1), -2);
  put(&t, ", ");
  EXACT_DATA(&t, "bool", uint8_t, 1, SHAPE(1), 1);
  const exact_run_t int_runs[] = {{"cpu", XR_KERNEL_REFERENCE, "ref.elementwise"},
                                  {"cpu", XR_KERNEL_BEST, "ref.elementwise"},
                                  {"opencl", XR_KERNEL_BEST, "opencl.elementwise"}};
  exact_expect(cat(t.s, 0), "aten::cat", "return0", (const double[]){7, -2, 1}, 3, int_runs, 3);
  t.n = 0;
  tensor(&t, "double", 1, SHAPE(0), NULL, 0);
  put(&t, ", ");
  EXACT_DATA(&t, "float", float, 2, SHAPE(1, 2), 1.5, 2);
  const exact_run_t f64_runs[] = {{"cpu", XR_KERNEL_REFERENCE, "ref.elementwise"},
                                  {"cpu", XR_KERNEL_BEST, "ref.elementwise"}};
  exact_expect(cat(t.s, 0), "aten::cat", "return0", (const double[]){1.5, 2}, 2, f64_runs, 2);
  /* fp8 does not mix with other floats (torch raises) */
  t.n = 0;
  tensor(&t, "c10::Float8_e4m3fn", 1, SHAPE(3), NULL, 0);
  put(&t, ", ");
  tensor(&t, "float", 1, SHAPE(3), NULL, 0);
  xr_bundle_t *b;
  xr_op_plan_t p;
  cr_assert_eq(plan_of(cat(t.s, 0), &b, &p), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "aten::cat: tensors[1] (float) does not promote"), "%s",
            xr_last_error());
  xr_bundle_destroy(b);
}

Test(indexing, gather_errors) {
  text_t a = {0}, b = {0};
  xr_bundle_t *bd;
  xr_op_plan_t p;
  cr_assert_eq(plan_of(index_select(tensor(&a, "float", 2, SHAPE(20, 4), NULL, 0), 0,
                                    tensor(&b, "float", 1, SHAPE(3), NULL, 0)), &bd, &p),
               XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "index"), "%s", xr_last_error());
  xr_bundle_destroy(bd);
  a.n = b.n = 0;
  cr_assert_eq(plan_of(embedding(tensor(&a, "float", 3, SHAPE(2, 20, 4), NULL, 0),
                                 tensor(&b, "long int", 1, SHAPE(3), NULL, 0)), &bd, &p),
               XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "weight"), "%s", xr_last_error());
  xr_bundle_destroy(bd);
  a.n = b.n = 0;
  cr_assert_eq(plan_of(embedding(tensor(&a, "float", 2, SHAPE(20, 4), NULL, 0),
                                 tensor(&b, "long int", 2, SHAPE(3, 5), NULL, 0)), &bd, &p), XR_OK);
  cr_assert_eq(p.returns[0].rank, 3);
  cr_assert_eq(p.returns[0].shape[2], 4);
  xr_kernel_plan_free(&p);
  xr_bundle_destroy(bd);
}

Test(indexing, argmax) {
  /* int64 input runs on the reference */
  text_t a = {0};
  expect_match(argmax(tensor(&a, "long int", 1, SHAPE(100), NULL, 0), "0", false), "cpu", "ref.argmax");
}
