/* Softmax, layer norm and RMS norm (the norm and softmax families) beyond their case matrix
 * (norm_cases.h, run on every driver by the norm_matrix_* targets): returns, costs, large
 * outputs, argument errors that name the argument and aiter flags that are unsupported with
 * the reason. */
#include "formats/bundle.h"
#include "kernels/kernels.h"
#include "tests/kernels/norm_cases.h"

Test(layer_norm, native_returns_output_mean_and_rstd) {
  op_json_t j;
  int64_t shape[3] = {4, 10, 64};
  xr_bundle_t *b;
  const char *json = layer_case(&j, true, "c10::BFloat16", 3, shape, 2, true, false, 0);
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK);
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan.return_count, 3);
  cr_assert_eq(plan.returns[0].dtype, XR_DTYPE_BF16);
  for (int k = 1; k < 3; k++) {
    cr_assert_eq(plan.returns[k].dtype, XR_DTYPE_F32, "mean/rstd are fp32 for bf16 input");
    cr_assert_eq(plan.returns[k].rank, 3);
    cr_assert(plan.returns[k].shape[0] == 4 && plan.returns[k].shape[1] == 1 &&
              plan.returns[k].shape[2] == 1);
  }
  /* bf16 in and out, 640 elements per row: 2 bytes each way per element plus weight, bias,
   * and 4 + 4 bytes of statistics per row. */
  cr_assert_float_eq(plan.bytes, 4.0 * 640 * 4 + 2.0 * 640 * 2 + 4 * 8.0, 1e-9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
}

Test(softmax, half_to_float_returns_float) {
  op_json_t j;
  int64_t shape[2] = {16, 64};
  xr_bundle_t *b;
  const char *json = softmax_case(&j, "aten::_softmax", "c10::Half", 2, shape, NULL, 0, -1, "true");
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK);
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan.return_count, 1);
  cr_assert_eq(plan.returns[0].dtype, XR_DTYPE_F32);
  cr_assert_float_eq(plan.bytes, 16.0 * 64 * (2 + 4), 1e-9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
}

/* ------------------------------------------------------------------------------------------ */
/* fp64 and bad arguments                                                                      */

/* Outputs of 8 MiB and more are written with streaming stores; odd row lengths put most rows
 * off a 16-byte boundary. */
Test(norm, cpu_large_outputs, .timeout = 120) {
  op_json_t j;
  uint64_t seed = 300;
  expect_match(rms_case(&j, false, false, "c10::BFloat16", 1030, 4099, 4099), "cpu", "cpu.", seed++);
  expect_match(rms_case(&j, false, false, "float", 520, 4100, 4100), "cpu", "cpu.", seed++);
  int64_t shape[2] = {1030, 4099};
  expect_match(layer_case(&j, true, "c10::Half", 2, shape, 1, true, false, 3), "cpu", "cpu.", seed++);
  expect_match(softmax_case(&j, "aten::_softmax", "c10::BFloat16", 2, shape, NULL, 0, -1, "false"),
               "cpu", "cpu.", seed++);
  expect_match(softmax_case(&j, "aten::_softmax", "float", 2, shape, NULL, 0, -1, "false"),
               "cpu", "cpu.", seed++);
}

Test(norm, fp64_runs_on_the_reference) {
  op_json_t j;
  expect_match(rms_case(&j, false, false, "double", 3, 17, 17), "cpu", "ref.norm", 7);
}

static void expect_plan_error(const char *json, const char *needle) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK,
               "%s", xr_last_error());
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_INVALID_ARGUMENT, "%s", json);
  cr_assert(strstr(xr_last_error(), needle), "error \"%s\" lacks \"%s\"", xr_last_error(), needle);
  xr_bundle_destroy(b);
}

Test(norm, bad_arguments_name_the_argument) {
  op_json_t j;
  int64_t shape[2] = {4, 8}, bad[1] = {7};
  begin(&j, "_C::rms_norm");
  tensor(&j, "result", "Tensor(a!)", "float", 2, shape, NULL, 0);
  tensor(&j, "input", "Tensor", "float", 2, shape, NULL, 0);
  tensor(&j, "weight", "Tensor", "float", 1, bad, NULL, 0);
  scalar(&j, "epsilon", "float", "1e-06");
  expect_plan_error(end(&j), "weight");

  begin(&j, "_C::fused_add_rms_norm");
  tensor(&j, "input", "Tensor(a!)", "float", 2, shape, NULL, 0);
  tensor(&j, "residual", "Tensor(b!)", "c10::Half", 2, shape, NULL, 0);
  tensor(&j, "weight", "Tensor", "float", 1, shape + 1, NULL, 0);
  scalar(&j, "epsilon", "float", "1e-06");
  expect_plan_error(end(&j), "residual");

  begin(&j, "aten::native_layer_norm");
  tensor(&j, "input", "Tensor", "float", 2, shape, NULL, 0);
  scalar(&j, "normalized_shape", "SymInt[]", "[9]");
  scalar(&j, "weight", "Tensor?", "null");
  scalar(&j, "bias", "Tensor?", "null");
  scalar(&j, "eps", "float", "1e-05");
  expect_plan_error(end(&j), "normalized_shape");

  /* aiter::add_rmsnorm with a residual_out of another dtype */
  int64_t dense[2] = {8, 1}, one[1] = {1};
  j.len = 0, j.args = 0;
  put(&j, "{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": \"aiter::add_rmsnorm\", \"args\": [");
  traced_tensor(&j, "float", 2, shape, dense, 0);
  traced_tensor(&j, "float", 2, shape, dense, 0);
  traced_tensor(&j, "float", 2, shape, dense, 0);
  traced_tensor(&j, "c10::Half", 2, shape, dense, 0);
  traced_tensor(&j, "float", 1, shape + 1, one, 0);
  put(&j, ", {\"type\": \"Scalar\", \"value\": 1e-06}]}]}");
  expect_plan_error(j.text, "residual_out");

  expect_plan_error(softmax_case(&j, "aten::_softmax", "float", 2, shape, NULL, 0, 2, "false"), "dim");
  expect_plan_error(softmax_case(&j, "aten::_softmax", "float", 2, shape, NULL, 0, -1, "true"),
                    "half_to_float");
}

/* aiter's gemma_norm and use_model_sensitive_rmsnorm are not implemented: the ops are
 * unsupported with that reason on every implementation, the reference included. */
Test(norm, aiter_flags_are_unsupported_with_the_reason) {
  op_json_t j;
  static const struct {
    int kind;
    const char *flag, *needle;
  } cases[] = {
      {AITER_RMSNORM, "true", "gemma_norm"},
      {AITER_ADD_RMSNORM, "true", "gemma_norm"},
      {AITER_ADD_CK, "1", "use_model_sensitive_rmsnorm"},
      {AITER_RMS_NORM_RETURNED, "1", "use_model_sensitive_rmsnorm"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *json = aiter_case(&j, cases[i].kind, "c10::BFloat16", 4, 64, 64, cases[i].flag);
    xr_op_result_t r = check_op_seeded(json, "cpu", 1);
    cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s: %s", json, xr_op_outcome_name(r.outcome));
    cr_assert(strstr(r.message, cases[i].needle) && strstr(r.message, "ref.norm"),
              "%s: reason \"%s\"", json, r.message);
  }
}

/* What the plan counts: the add reads input and residual_in, writes residual_out and out, and
 * reads the weight once; 5 flops per element (add, square-add, two multiplies). The traced
 * types carry no "!", so the family marks out and residual_out written. */
Test(norm, aiter_add_rmsnorm_plan) {
  op_json_t j;
  xr_bundle_t *b;
  const char *json = aiter_case(&j, AITER_ADD_RMSNORM, "c10::BFloat16", 32, 4096, 4096, NULL);
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK,
               "%s", xr_last_error());
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan.return_count, 0);
  cr_assert(plan.input_written[0] && !plan.input_written[1] && !plan.input_written[2] &&
            plan.input_written[3] && !plan.input_written[4]);
  cr_assert_float_eq(plan.bytes, 4.0 * 32 * 4096 * 2 + 4096 * 2, 1e-9);
  cr_assert_float_eq(plan.flops, 5.0 * 32 * 4096, 1e-9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
}
