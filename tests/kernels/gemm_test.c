/* The GEMM family (aten::mm, addmm, bmm, baddbmm, matmul, linear, aiter::gemm_a16w16,
 * vllm::rocm_unquantized_gemm, aten::_scaled_mm) on the implementations the family matrix
 * (gemm_matrix_<driver>: every case on each driver's default or own kernels) does not steer to,
 * each compared with the CPU reference on the same seeded inputs through the real engine
 * (tests/kernels/check.h):
 *   cpu:    cpu.gemm_blocked for fp32 and bf16 too when oneDNN is switched off
 *           (XR_ONEDNN_LIBRARY=off), across several blocks; float64 on the reference;
 *   opencl: which of opencl.clblast_gemm (fp32/fp16 layouts CLBlast takes) and
 *           opencl.gemm_tiled takes a problem while CLBlast is there;
 * and the planner's errors for _scaled_mm. */
#include "tests/kernels/gemm_cases.h"

/* ------------------------------------------------------------------------------------------ */
/* cpu                                                                                        */

static const target_t cpu_own = {"cpu", "cpu.gemm_blocked", "cpu.gemm_blocked", "cpu.gemm_blocked",
                                 "cpu.gemm_blocked", NULL};

Test(gemm_cpu, blocked_f32_bf16_without_onednn) {
  setenv("XR_ONEDNN_LIBRARY", "off", 1);
  products(&cpu_own, "float");
  products(&cpu_own, "c10::BFloat16");
}

/* Larger than one block in every dimension, so packing edges and K slices are exercised. */
Test(gemm_cpu, blocked_multi_block) {
  setenv("XR_ONEDNN_LIBRARY", "off", 1);
  tensor_t a = mat("float", 200, 300), b = mat_t("float", 300, 270), c = vec("float", 270);
  arg_t args[] = {{"self", "Tensor", &c, NULL}, {"mat1", "Tensor", &a, NULL},
                  {"mat2", "Tensor", &b, NULL}, {"beta", "Scalar", NULL, "1"},
                  {"alpha", "Scalar", NULL, "1"}};
  run_case(&cpu_own, "float", "aten::addmm", args, 5);
  tensor_t h = mat("c10::Half", 20, 600), w = mat("c10::Half", 130, 600);
  arg_t lin[] = {{"input", "Tensor", &h, NULL}, {"weight", "Tensor", &w, NULL}};
  run_case(&cpu_own, "c10::Half", "aten::linear", lin, 2);
}

Test(gemm_cpu, reports_why_an_impl_declines) {
  /* float64 is beyond both fast CPU implementations; the reference takes it. */
  tensor_t a = mat("double", 3, 5), b = mat("double", 5, 2);
  arg_t args[] = {{"self", "Tensor", &a, NULL}, {"mat2", "Tensor", &b, NULL}};
  json_t j;
  xr_op_result_t r = check_op(op_json(&j, "aten::mm", args, 2), "cpu");
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s", r.message);
  cr_assert_str_eq(r.kernel, "ref.gemm");
}

Test(gemm_plan, scaled_mm_errors_name_the_argument) {
  tensor_t a = mat("float", 3, 5), b = mat("c10::Float8_e4m3fn", 5, 2);
  tensor_t s = {.dtype = "float", .rank = 0};
  arg_t args[] = {{"self", "Tensor", &a, NULL}, {"mat2", "Tensor", &b, NULL},
                  {"scale_a", "Tensor", &s, NULL}, {"scale_b", "Tensor", &s, NULL}};
  json_t j;
  op_json(&j, "aten::_scaled_mm", args, 4);
  xr_bundle_t *bundle;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)j.text, strlen(j.text), "case", ".", NULL, &bundle),
               XR_OK);
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&bundle->ops[0], &plan), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "aten::_scaled_mm") && strstr(xr_last_error(), "fp8"), "%s",
            xr_last_error());
  tensor_t a8 = mat("c10::Float8_e4m3fn", 3, 5), sa = {.dtype = "float", .rank = 1, .shape = {2}};
  arg_t bad_scale[] = {{"self", "Tensor", &a8, NULL}, {"mat2", "Tensor", &b, NULL},
                       {"scale_a", "Tensor", &sa, NULL}, {"scale_b", "Tensor", &s, NULL}};
  xr_bundle_destroy(bundle);
  op_json(&j, "aten::_scaled_mm", bad_scale, 4);
  cr_assert_eq(xr_bundle_decode((const uint8_t *)j.text, strlen(j.text), "case", ".", NULL, &bundle),
               XR_OK);
  cr_assert_eq(xr_kernel_plan(&bundle->ops[0], &plan), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "scale_a"), "%s", xr_last_error());
  xr_bundle_destroy(bundle);
}

/* Plans `op` with `args` and expects INVALID_ARGUMENT naming every one of `words`. */
static void expect_plan_error(const arg_t *args, int count, const char *const *words) {
  json_t j;
  op_json(&j, "aten::_scaled_mm", args, count);
  xr_bundle_t *bundle;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)j.text, strlen(j.text), "case", ".", NULL, &bundle),
               XR_OK, "%s", xr_last_error());
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&bundle->ops[0], &plan), XR_INVALID_ARGUMENT, "%s: planned", j.text);
  for (const char *const *w = words; *w; w++)
    cr_assert(strstr(xr_last_error(), *w), "%s: \"%s\" lacks \"%s\"", j.text, xr_last_error(), *w);
  xr_bundle_destroy(bundle);
}

#define PLAN_ERROR(a, b, sa, sb, ...)                                                          \
  do {                                                                                         \
    arg_t args_[] = {{"self", "Tensor", &(a), NULL}, {"mat2", "Tensor", &(b), NULL},            \
                     {"scale_a", "Tensor", &(sa), NULL}, {"scale_b", "Tensor", &(sb), NULL}};   \
    const char *const words_[] = {__VA_ARGS__, NULL};                                          \
    expect_plan_error(args_, 4, words_);                                                       \
  } while (0)

Test(gemm_plan, block_scaled_mm_errors_name_the_argument) {
  tensor_t a8 = mat(BS_F8, 17, 96), b8 = mat_t(BS_F8, 96, 33);
  tensor_t a4 = mat(BS_F4, 17, 48), b4 = mat_t(BS_F4, 48, 33);
  tensor_t sa = mat(BS_E8M0, 17, 3), sb = mat(BS_E8M0, 33, 3);
  tensor_t sa4 = mat(BS_E8M0, 17, 3), sb4 = mat(BS_E8M0, 33, 3);
  tensor_t f32 = {.dtype = "float", .rank = 0};
  /* operands of two kinds */
  PLAN_ERROR(a4, b8, sa, sb, "self and mat2", "Float4_e2m1fn_x2");
  /* fp4 operands with float32 scales; fp8 operands with e4m3fn scales */
  PLAN_ERROR(a4, b4, f32, f32, "scale_a", "Float8_e8m0fnu (mxfp4) or c10::Float8_e4m3fn (nvfp4)");
  tensor_t e4 = mat(BS_F8, 17, 3);
  PLAN_ERROR(a8, b8, e4, sb, "scale_a", "Float8_e8m0fnu (mxfp8)");
  /* scale_b of another dtype than scale_a's */
  tensor_t sb_e4 = mat(BS_F8, 33, 3);
  PLAN_ERROR(a8, b8, sa, sb_e4, "scale_b", "mxfp8", "Float8_e8m0fnu");
  PLAN_ERROR(a8, b8, sa, f32, "scale_b", "Float8_e8m0fnu");
  /* wrong scale counts: 17 x 2 instead of 17 x 3 (or 128 x 4); 33 x 4 for scale_b */
  tensor_t sa_short = mat(BS_E8M0, 17, 2), sb_long = mat(BS_E8M0, 33, 4);
  PLAN_ERROR(a8, b8, sa_short, sb, "scale_a", "17 x 3 = 51", "512", "got 34");
  PLAN_ERROR(a8, b8, sa, sb_long, "scale_b", "33 x 3 = 99", "got 132");
  /* nvfp4 scales per 16: 17 x 6 */
  tensor_t nv_a = mat(BS_F8, 17, 3), nv_b = mat(BS_F8, 33, 6);
  PLAN_ERROR(a4, b4, nv_a, nv_b, "scale_a", "nvfp4", "17 x 6 = 102");
  /* fp4 K (2 x bytes) not a multiple of 32 */
  tensor_t a4k = mat(BS_F4, 17, 24), b4k = mat_t(BS_F4, 24, 33);
  tensor_t sak = mat(BS_E8M0, 17, 2), sbk = mat(BS_E8M0, 33, 2);
  PLAN_ERROR(a4k, b4k, sak, sbk, "self", "K = 48", "multiple of 32");
  /* transposed (non-contiguous) block scales */
  tensor_t sa_t = mat_t(BS_E8M0, 17, 3);
  PLAN_ERROR(a8, b8, sa_t, sb, "scale_a", "contiguous");
  /* an fp4 output */
  {
    arg_t args[] = {{"self", "Tensor", &a4, NULL}, {"mat2", "Tensor", &b4, NULL},
                    {"scale_a", "Tensor", &sa4, NULL}, {"scale_b", "Tensor", &sb4, NULL},
                    {"out_dtype", "ScalarType?", NULL, "45"}};
    const char *const words[] = {"out_dtype", "45", NULL};
    expect_plan_error(args, 5, words);
  }
}

/* The block-scaled forms plan with torch's FLOPs and their bytes as stored (fp4: half a byte
 * per element; one byte per scale), whichever scale layout the bundle holds. */
Test(gemm_plan, block_scaled_mm_flops_and_bytes) {
  const struct {
    tensor_t a, b, sa, sb;
    double bytes;
  } cases[] = {
      {mat(BS_F4, 17, 64), mat_t(BS_F4, 64, 33), mat(BS_E8M0, 17, 4), mat(BS_E8M0, 33, 4),
       17 * 64 + 64 * 33 + (17 + 33) * 4 + 17 * 33 * 2},
      {mat(BS_F4, 17, 64), mat_t(BS_F4, 64, 33), vec(BS_E8M0, 512), vec(BS_E8M0, 512),
       17 * 64 + 64 * 33 + (17 + 33) * 4 + 17 * 33 * 2},
      {mat(BS_F8, 17, 96), mat_t(BS_F8, 96, 33), mat(BS_E8M0, 17, 3), mat(BS_E8M0, 33, 3),
       17 * 96 + 96 * 33 + (17 + 33) * 3 + 17 * 33 * 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    arg_t args[] = {{"self", "Tensor", &cases[i].a, NULL}, {"mat2", "Tensor", &cases[i].b, NULL},
                    {"scale_a", "Tensor", &cases[i].sa, NULL}, {"scale_b", "Tensor", &cases[i].sb, NULL}};
    json_t j;
    op_json(&j, "aten::_scaled_mm", args, 4);
    xr_bundle_t *bundle;
    cr_assert_eq(xr_bundle_decode((const uint8_t *)j.text, strlen(j.text), "case", ".", NULL, &bundle),
                 XR_OK);
    xr_op_plan_t plan;
    cr_assert_eq(xr_kernel_plan(&bundle->ops[0], &plan), XR_OK, "%s", xr_last_error());
    double K = i < 2 ? 128 : 96;
    cr_assert_eq(plan.flops, 2.0 * 17 * 33 * K, "case %zu: %g flops", i, plan.flops);
    cr_assert_eq(plan.bytes, cases[i].bytes, "case %zu: %g bytes, expected %g", i, plan.bytes,
                 cases[i].bytes);
    cr_assert_eq(plan.returns[0].dtype, i < 2 ? XR_DTYPE_BF16 : XR_DTYPE_F8E4M3FN, "case %zu", i);
    xr_kernel_plan_free(&plan);
    xr_bundle_destroy(bundle);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* opencl                                                                                     */

/* Programs are cached on disk across this binary's test processes. */
static void opencl_setup(void) {
  const char *tmp = getenv("TEST_TMPDIR");
  if (tmp) setenv("XR_HAL_CACHE_DIR", tmp, 0);
}

static const target_t ocl = {"opencl", "opencl.", "opencl.gemm_tiled",
                             "opencl.", "opencl.gemm_tiled", NULL};

/* Block-scaled _scaled_mm goes to the tiled kernel whether CLBlast is there or not. */
Test(gemm_opencl, tiled_block_scaled_mm, .init = opencl_setup) { block_scaled_products(&ocl); }

/* Which OpenCL implementation takes which problem, without running CLBlast (whose kernels take
 * minutes to compile on PoCL in a fresh process; gemm_clblast_test runs them). */
static const char *selected(const char *json, const char *device) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK);
  xr_hal_device_t *dev;
  if (xr_hal_device_create(device, &dev) != XR_OK) {
    xr_bundle_destroy(b);
    cr_skip_test("%s unavailable: %s", device, xr_last_error());
  }
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_OK, "%s", xr_last_error());
  const xr_kernel_impl_t *impl;
  cr_assert_eq(xr_kernel_select(&plan, dev, XR_KERNEL_BEST, &impl), XR_OK, "%s", xr_last_error());
  const char *name = xr_kernel_impl_name(impl);
  xr_kernel_plan_free(&plan);
  xr_hal_device_destroy(dev);
  xr_bundle_destroy(b);
  return name;
}

Test(gemm_opencl, clblast_takes_unit_stride_fp32) {
  json_t j;
  tensor_t x = mat("float", 17, 129), w = mat("float", 33, 129), w_bad = {
      .dtype = "float", .rank = 2, .shape = {33, 129}, .strides = {2, 66}, .storage = 8600};
  arg_t lin[] = {{"input", "Tensor", &x, NULL}, {"weight", "Tensor", &w, NULL}};
  cr_assert_str_eq(selected(op_json(&j, "aten::linear", lin, 2), "opencl"), "opencl.clblast_gemm");
  arg_t strided[] = {{"input", "Tensor", &x, NULL}, {"weight", "Tensor", &w_bad, NULL}};
  cr_assert_str_eq(selected(op_json(&j, "aten::linear", strided, 2), "opencl"), "opencl.gemm_tiled");
  tensor_t xb = mat("c10::BFloat16", 17, 129), wb = mat("c10::BFloat16", 33, 129);
  arg_t bf[] = {{"input", "Tensor", &xb, NULL}, {"weight", "Tensor", &wb, NULL}};
  cr_assert_str_eq(selected(op_json(&j, "aten::linear", bf, 2), "opencl"), "opencl.gemm_tiled");
}

/* Everything else on opencl picks CLBlast or falls back to the tiled kernel, per case. */
Test(gemm_opencl, best_f16, .init = opencl_setup) { products(&ocl, "c10::Half"); }
