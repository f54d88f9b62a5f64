/* The GEMM family on the vendor's Lt library (cuda.cublaslt_matmul / hip.hipblaslt_matmul),
 * built once per driver (XR_GPU_DRIVER=cuda|hip): every case of tests/kernels/gemm_cases.h in
 * f32, bf16 and f16 replayed on the device and compared with the CPU reference through the
 * real engine. Each case must run on the kernel the mapping (kernels/gpu/blas_layout.h,
 * evaluated on the host here) predicts: the vendor library whenever it maps, our tiled kernel
 * otherwise. Skips without the device, or without the library (with every path tried). */
#include "tests/gpu/blas_case.h"
#include "tests/kernels/gemm_cases.h"

#include "kernels/gpu/blaslt.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

static bool is_cuda(void) { return !strcmp(DRIVER, "cuda"); }

static void run_on_device(const target_t *t, const char *json, const char *dtype, uint64_t seed) {
  (void)dtype;
  /* hipBLASLt gets biases over strided batches off (blaslt_gemm.c). */
  xr_blas_limits_t limits = {.batched_bias = is_cuda()};
  blas_case_t c;
  blas_case_open(json, &limits, &c);
  const char *kernel = c.mapped == XR_OK ? t->f32 : "gpu.gemm_tiled";
  blas_case_close(&c);
  expect(json, t->device, kernel, seed);
}

static void require_library(void) {
  const xr_blaslt_t *lib;
  if (xr_blaslt_get(is_cuda() ? XR_BLASLT_CUBLASLT : XR_BLASLT_HIPBLASLT, &lib) != XR_OK)
    cr_skip_test("%s", xr_last_error());
}

/* The vendor's kernel travels in .f32 (every dtype expects the same one). */
static target_t target(void) {
  return (target_t){.device = DRIVER,
                    .f32 = is_cuda() ? "cuda.cublaslt_matmul" : "hip.hipblaslt_matmul",
                    .run = run_on_device};
}

Test(gemm_blaslt, f32_cases_on_the_vendor_library) {
  require_library();
  target_t t = target();
  products(&t, "float");
}

Test(gemm_blaslt, bf16_cases_on_the_vendor_library) {
  require_library();
  target_t t = target();
  products(&t, "c10::BFloat16");
}

Test(gemm_blaslt, f16_cases_on_the_vendor_library) {
  require_library();
  target_t t = target();
  products(&t, "c10::Half");
}

/* Block-scaled _scaled_mm (mxfp8, mxfp4, nvfp4) is declined by the Lt path (blaslt_gemm.c):
 * with the library present, each case runs on our tiled kernel. */
Test(gemm_blaslt, block_scaled_cases_run_on_the_tiled_kernel) {
  require_library();
  target_t t = {.device = DRIVER, .fp8 = "gpu.gemm_tiled"};
  block_scaled_products(&t);
}

/* A bias the epilogue would read misaligned (a view one element into its storage): the Lt
 * path declines it in prepare, seeing the real pointer, and the tiled kernel runs the op; the
 * report says why. The bias of an aligned view stays on the library (the cases above). */
Test(gemm_blaslt, a_misaligned_bias_runs_on_the_tiled_kernel) {
  require_library();
  const char *dtypes[] = {"float", "c10::BFloat16", "c10::Half"};
  for (size_t d = 0; d < 3; d++) {
    tensor_t c = {.dtype = dtypes[d], .rank = 1, .shape = {64}, .offset = 1, .storage = 65};
    tensor_t a = mat(dtypes[d], 32, 128), b = mat_t(dtypes[d], 128, 64);
    arg_t args[] = {{"self", "Tensor", &c, NULL}, {"mat1", "Tensor", &a, NULL},
                    {"mat2", "Tensor", &b, NULL}};
    json_t j;
    op_json(&j, "aten::addmm", args, 3);
    xr_op_result_t r = check_op_seeded(j.text, DRIVER, seed_counter++);
    cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s: %s", j.text, r.message);
    cr_assert(r.checked && r.check_passed, "%s: nmse %g", j.text, r.outputs[0].nmse);
    cr_expect_str_eq(r.kernel, "gpu.gemm_tiled", "%s", j.text);
    cr_expect(strstr(r.message, "declined") && strstr(r.message, "16"), "%s", r.message);
  }
}
