/* The convolution family (kernels/conv.c) beyond its case matrix (conv_cases.h, run on every
 * driver by the conv_matrix_* targets): the cases again on our own cpu kernel with oneDNN off,
 * the shapes oneDNN and CLBlast must take, plans and argument errors that name the argument. */
#include <dlfcn.h>

#include "formats/bundle.h"
#include "kernels/kernels.h"
#include "tests/kernels/conv_cases.h"

/* Every timed test here has the same .timeout: Criterion 2.4.1's BoxFort loses a pending
 * timeout request when a test with an earlier deadline is queued in front of it, and
 * LeakSanitizer reports the lost request at exit. */

/* CLBlast's convgemm runs the forward fp32 NCHW cases where it loads; grouped ones, the
 * transposed and backward ones run on our kernels. */
Test(conv, opencl_clblast_runs_plain_forward_cases, .timeout = 300) {
  void *clblast = dlopen("libclblast.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!clblast) cr_skip_test("CLBlast is not installed: %s", dlerror());
  dlclose(clblast);
  expect_match(conv_json(&conv_forward_cases[0]), "opencl", "opencl.conv_clblast");
  expect_match(conv_json(&conv_forward_cases[8]), "opencl", "opencl.conv_clblast");
  expect_match(conv_json(&conv_forward_cases[5]), "opencl", "opencl.conv_clblast"); /* 1-D */
  expect_match(conv_json(&conv_forward_cases[4]), "opencl", "opencl.conv");         /* grouped */
  expect_match(conv_json(&conv_backward_cases[0]), "opencl", "opencl.conv");
}

/* The cases again with oneDNN off: our own kernel runs every one. */
Test(conv, cpu_own_kernel_matches_reference, .timeout = 300) {
  setenv("XR_ONEDNN_LIBRARY", "off", 1);
  conv_cases("cpu", "cpu.conv");
}

/* oneDNN runs the common shapes (NCHW and channels-last, fp16, bf16, backward, transposed) wherever
 * it loads: a regression that quietly sends them to cpu.conv fails here. */
Test(conv, onednn_runs_the_common_cases, .timeout = 300) {
  void *dnnl = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!dnnl) cr_skip_test("oneDNN is not installed: %s", dlerror());
  dlclose(dnnl);
  const conv_case_t *cases[] = {&conv_forward_cases[0],  &conv_forward_cases[3],
                                &conv_forward_cases[9],  &conv_forward_cases[18],
                                &conv_backward_cases[0], &conv_backward_cases[6]};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    expect_match(conv_json(cases[i]), "cpu", "cpu.onednn_conv");
}

static xr_status_t plan_of(const char *json, xr_bundle_t **b, xr_op_plan_t *plan) {
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, b), XR_OK,
               "%s", xr_last_error());
  return xr_kernel_plan(&(*b)->ops[0], plan);
}

Test(conv, plans_return_shapes_and_flops) {
  xr_bundle_t *b;
  xr_op_plan_t plan;
  /* convT2d: (7-1)*2 - 2 + 2 + 1 + 1 = 14 rows, (9-1)*2 - 2 + 2 + 1 + 1 = 18 columns */
  cr_assert_eq(plan_of(conv_json(&conv_forward_cases[18]), &b, &plan), XR_OK, "%s",
               xr_last_error());
  cr_assert_eq(plan.return_count, 1);
  cr_assert(plan.returns[0].rank == 4 && plan.returns[0].shape[1] == 4 &&
            plan.returns[0].shape[2] == 14 && plan.returns[0].shape[3] == 18);
  /* 2 * n * c_in(8) * (c_out/groups = 2) * in positions (7*9) * kernel (9) */
  cr_assert_float_eq(plan.flops, 2.0 * 8 * 2 * 63 * 9, 1e-9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  /* convolution_backward without grad_input: three returns, the first empty */
  cr_assert_eq(plan_of(conv_json(&conv_backward_cases[2]), &b, &plan), XR_OK, "%s",
               xr_last_error());
  cr_assert_eq(plan.return_count, 3);
  cr_assert(plan.returns[0].rank == 1 && plan.returns[0].shape[0] == 0);
  cr_assert(plan.returns[1].rank == 4 && plan.returns[1].shape[0] == 9 &&
            plan.returns[1].shape[1] == 2);
  cr_assert(plan.returns[2].rank == 1 && plan.returns[2].shape[0] == 9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  /* a channels-last input gives a channels-last result, as PyTorch's convolutions do */
  cr_assert_eq(plan_of(conv_json(&conv_forward_cases[3]), &b, &plan), XR_OK, "%s", xr_last_error());
  cr_assert(plan.returns[0].dense_strides, "a channels-last input returns a channels-last result");
  const int64_t *rs = plan.returns[0].strides; /* [2, 16, 12, 12] */
  cr_assert(rs[0] == 16 * 144 && rs[1] == 1 && rs[2] == 12 * 16 && rs[3] == 16,
            "%lld %lld %lld %lld", (long long)rs[0], (long long)rs[1], (long long)rs[2],
            (long long)rs[3]);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  cr_assert_eq(plan_of(conv_json(&conv_forward_cases[0]), &b, &plan), XR_OK, "%s", xr_last_error());
  cr_assert(!plan.returns[0].dense_strides, "an NCHW input returns a contiguous result");
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  /* unbatched: [c, h, w] in, [c_out, h, w] out */
  cr_assert_eq(plan_of(conv_json(&conv_forward_cases[7]), &b, &plan), XR_OK, "%s", xr_last_error());
  cr_assert(plan.returns[0].rank == 3 && plan.returns[0].shape[0] == 8 &&
            plan.returns[0].shape[1] == 9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
}

/* Malformed arguments are INVALID_ARGUMENT naming the argument. */
static void expect_error(const conv_case_t *c, const char *field) {
  xr_bundle_t *b;
  xr_op_plan_t plan;
  xr_status_t st = plan_of(conv_json(c), &b, &plan);
  cr_assert_eq(st, XR_INVALID_ARGUMENT, "expected an error naming %s", field);
  cr_assert(strstr(xr_last_error(), field), "'%s' does not name %s", xr_last_error(), field);
  xr_bundle_destroy(b);
}

Test(conv, malformed_arguments_name_the_argument) {
  conv_case_t c = conv_forward_cases[0];
  c.groups = 3; /* 8 input channels */
  expect_error(&c, "weight");
  c = conv_forward_cases[0];
  c.k[0] = 20; /* larger than the padded input */
  expect_error(&c, "output size");
  c = conv_forward_cases[0];
  c.stride = 0;
  expect_error(&c, "stride");
  c = conv_forward_cases[0];
  c.dilation = 0;
  expect_error(&c, "dilation");
  c = conv_forward_cases[0];
  c.pad = -1;
  expect_error(&c, "padding");
  c = conv_forward_cases[18];
  c.output_padding = 2; /* stride 2 */
  expect_error(&c, "output_padding");
  c = conv_forward_cases[12];
  c.padding = "full";
  expect_error(&c, "padding");
  c = conv_forward_cases[13];
  c.padding = "same"; /* with stride 2 */
  expect_error(&c, "padding");
}
