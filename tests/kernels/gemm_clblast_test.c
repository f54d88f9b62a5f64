/* CLBlast on opencl against the CPU reference. Separate from gemm_test and manual: CLBlast
 * compiles its kernels in every fresh process, which takes minutes on PoCL (its kernel cache
 * makes later runs outside the sandbox take under a second):
 *   bazel test //tests/kernels:gemm_clblast_test */
#include "tests/kernels/gemm_cases.h"

static void opencl_setup(void) {
  const char *tmp = getenv("TEST_TMPDIR");
  if (tmp) setenv("XR_HAL_CACHE_DIR", tmp, 0);
}

static const target_t ocl_clblast = {"opencl", "opencl.clblast_gemm", "", "opencl.clblast_gemm", "", NULL};

/* CLBlast compiles its kernels per process (tens of seconds on PoCL): a few cases, one process.
 * Row-major with transposed weights, column-major output, batched with a bias row. */
Test(gemm_opencl, clblast_f32, .init = opencl_setup) {
  const char *dt = "float";
  {
    tensor_t x = mat(dt, 17, 129), w = mat(dt, 33, 129);
    arg_t args[] = {{"input", "Tensor", &x, NULL}, {"weight", "Tensor", &w, NULL}};
    run_case(&ocl_clblast, dt, "aten::linear", args, 2);
  }
  {
    tensor_t a = mat_view(dt, 3, 1000), b = mat_t(dt, 1000, 17);
    tensor_t out = {.dtype = dt, .rank = 2, .shape = {3, 17}, .strides = {1, 3}, .init = NULL};
    arg_t args[] = {{"self", "Tensor", &a, NULL}, {"mat2", "Tensor", &b, NULL},
                    {"out", "Tensor(a!)", &out, NULL}};
    run_case(&ocl_clblast, dt, "aten::mm", args, 3);
  }
  {
    tensor_t c = vec(dt, 65), a = {.dtype = dt, .rank = 3, .shape = {2, 17, 33}};
    tensor_t b = {.dtype = dt, .rank = 3, .shape = {2, 33, 65}};
    arg_t args[] = {{"self", "Tensor", &c, NULL}, {"batch1", "Tensor", &a, NULL},
                    {"batch2", "Tensor", &b, NULL}, {"beta", "Scalar", NULL, "0.5"},
                    {"alpha", "Scalar", NULL, "2"}};
    run_case(&ocl_clblast, dt, "aten::baddbmm", args, 5);
  }
}

