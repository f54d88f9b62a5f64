/* Our declarations of cuBLASLt / hipBLASLt (kernels/gpu/blaslt_abi.h) against the vendors'
 * own headers, and the libraries loaded through our symbol table, all without a GPU:
 *  - where cublasLt.h is installed ($CUDA_HOME or /usr/local/cuda), a C file including both
 *    is compiled with the system compiler and static-asserts every value and struct layout
 *    equal; the same for hipblaslt.h where ROCm is installed (Debian 12 packages neither
 *    hipBLASLt nor rocBLAS, so that case skips on our CI);
 *  - where libcublasLt loads, every function of the table resolves, and the host-only calls
 *    (descriptor, layout and preference creation) accept our enum values and attribute sizes;
 *  - a disabled, absent or wrong library is UNAVAILABLE with every path tried, never a crash.
 * Each Criterion test runs in its own process, so each loads the library afresh. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/gpu/blaslt.h"
#include "tests/gpu/abi_compile.h"

static const char *cuda_include(void) {
  static char path[512];
  const char *home = getenv("CUDA_HOME");
  snprintf(path, sizeof path, "%s/include", home && home[0] ? home : "/usr/local/cuda");
  char header[600];
  snprintf(header, sizeof header, "%s/cublasLt.h", path);
  return access(header, R_OK) == 0 ? path : NULL;
}

#define SAME(ours, theirs) "_Static_assert((" #ours ") == (" #theirs "), \"" #ours "\");\n"

static const char cublaslt_check[] =
    "#include <stddef.h>\n"
    "#include <cublasLt.h>\n"
    "#include \"kernels/gpu/blaslt_abi.h\"\n"
    SAME(XR_CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_SUCCESS)
    SAME(XR_CUBLAS_OP_N, CUBLAS_OP_N)
    SAME(XR_CUBLAS_OP_T, CUBLAS_OP_T)
    SAME(XR_CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F)
    SAME(XR_CUDA_R_32F, CUDA_R_32F)
    SAME(XR_CUDA_R_16F, CUDA_R_16F)
    SAME(XR_CUDA_R_16BF, CUDA_R_16BF)
    SAME(XR_CUBLASLT_MATMUL_DESC_TRANSA, CUBLASLT_MATMUL_DESC_TRANSA)
    SAME(XR_CUBLASLT_MATMUL_DESC_TRANSB, CUBLASLT_MATMUL_DESC_TRANSB)
    SAME(XR_CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_MATMUL_DESC_EPILOGUE)
    SAME(XR_CUBLASLT_MATMUL_DESC_BIAS_POINTER, CUBLASLT_MATMUL_DESC_BIAS_POINTER)
    SAME(XR_CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_BIAS)
    SAME(XR_CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT)
    SAME(XR_CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET)
    SAME(XR_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES)
    SAME(XR_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES)
    SAME(XR_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES)
    SAME(XR_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES)
    SAME(XR_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES)
    SAME(XR_CUBLASLT_ALGO_CONFIG_ID, CUBLASLT_ALGO_CONFIG_ID)
    SAME(XR_CUBLASLT_ALGO_CONFIG_TILE_ID, CUBLASLT_ALGO_CONFIG_TILE_ID)
    SAME(XR_CUBLASLT_ALGO_CONFIG_SPLITK_NUM, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)
    SAME(XR_CUBLASLT_ALGO_CONFIG_STAGES_ID, CUBLASLT_ALGO_CONFIG_STAGES_ID)
    /* Enums travel as int through our function pointers. */
    SAME(sizeof(cublasStatus_t), sizeof(int))
    SAME(sizeof(cublasOperation_t), sizeof(int))
    SAME(sizeof(cublasComputeType_t), sizeof(int))
    SAME(sizeof(cudaDataType), sizeof(int))
    SAME(sizeof(cublasLtMatmulDescAttributes_t), sizeof(int))
    SAME(sizeof(cublasLtMatrixLayoutAttribute_t), sizeof(int))
    SAME(sizeof(cublasLtMatmulPreferenceAttributes_t), sizeof(int))
    SAME(sizeof(xr_cublaslt_algo_t), sizeof(cublasLtMatmulAlgo_t))
    SAME(sizeof(xr_cublaslt_heuristic_t), sizeof(cublasLtMatmulHeuristicResult_t))
    SAME(offsetof(xr_cublaslt_heuristic_t, algo), offsetof(cublasLtMatmulHeuristicResult_t, algo))
    SAME(offsetof(xr_cublaslt_heuristic_t, workspace_size),
         offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize))
    SAME(offsetof(xr_cublaslt_heuristic_t, state), offsetof(cublasLtMatmulHeuristicResult_t, state))
    SAME(offsetof(xr_cublaslt_heuristic_t, waves_count),
         offsetof(cublasLtMatmulHeuristicResult_t, wavesCount))
    /* The function types, parameter for parameter, with the handles as their real types. */
    "static cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *,\n"
    "    const void *, cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t, const void *,\n"
    "    const void *, cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,\n"
    "    const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t) = cublasLtMatmul;\n"
    "static cublasStatus_t (*layout)(cublasLtMatrixLayout_t *, cudaDataType, uint64_t, uint64_t,\n"
    "    int64_t) = cublasLtMatrixLayoutCreate;\n"
    "static cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t,\n"
    "    cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,\n"
    "    cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,\n"
    "    cublasLtMatmulHeuristicResult_t *, int *) = cublasLtMatmulAlgoGetHeuristic;\n"
    "static cublasStatus_t (*algo_config)(const cublasLtMatmulAlgo_t *,\n"
    "    cublasLtMatmulAlgoConfigAttributes_t, void *, size_t, size_t *) =\n"
    "    cublasLtMatmulAlgoConfigGetAttribute;\n"
    "_Static_assert(sizeof(cublasLtMatmulAlgoConfigAttributes_t) == sizeof(int), \"enum\");\n"
    "static size_t (*version)(void) = cublasLtGetVersion;\n"
    "void use(void);\n"
    "void use(void) { (void)matmul; (void)layout; (void)heuristic; (void)version; }\n";

Test(blaslt_abi, cublaslt_declarations_equal_cublasLt_h) {
  const char *include = cuda_include();
  if (!include) cr_skip_test("no cublasLt.h in $CUDA_HOME/include or /usr/local/cuda/include");
  char flags[600];
  snprintf(flags, sizeof flags, "-std=c11 -Wall -Werror -I%s", include);
  cr_assert_eq(xr_test_compile(cublaslt_check, "c", "cc", flags), 0,
               "our cuBLASLt declarations differ from %s/cublasLt.h (see the log)", include);
}

/* The check compiles: a wrong value must fail it (the test can fail). */
Test(blaslt_abi, a_wrong_value_fails_the_check) {
  const char *include = cuda_include();
  if (!include) cr_skip_test("no cublasLt.h in $CUDA_HOME/include or /usr/local/cuda/include");
  char flags[600];
  snprintf(flags, sizeof flags, "-std=c11 -I%s", include);
  cr_assert_neq(xr_test_compile("#include <cublasLt.h>\n" SAME(1, CUBLAS_OP_N), "c", "cc", flags),
                0);
}

static const char *hipblaslt_header_dir(void) {
  static const char *const candidates[] = {"/opt/rocm/include", "/usr/include"};
  for (size_t i = 0; i < 2; i++) {
    char header[256];
    snprintf(header, sizeof header, "%s/hipblaslt/hipblaslt.h", candidates[i]);
    if (access(header, R_OK) == 0) return candidates[i];
  }
  return NULL;
}

#define SAME_CXX(ours, theirs) "static_assert((" #ours ") == (" #theirs "), \"" #ours "\");\n"

static const char hipblaslt_check[] =
    "#include <cstddef>\n"
    "#include <hipblaslt/hipblaslt.h>\n"
    "#include \"kernels/gpu/blaslt_abi.h\"\n"
    SAME_CXX(XR_HIPBLAS_STATUS_SUCCESS, HIPBLAS_STATUS_SUCCESS)
    SAME_CXX(XR_HIPBLAS_OP_N, HIPBLAS_OP_N)
    SAME_CXX(XR_HIPBLAS_OP_T, HIPBLAS_OP_T)
    SAME_CXX(XR_HIPBLAS_COMPUTE_32F, HIPBLAS_COMPUTE_32F)
    SAME_CXX(XR_HIP_R_32F, HIP_R_32F)
    SAME_CXX(XR_HIP_R_16F, HIP_R_16F)
    SAME_CXX(XR_HIP_R_16BF, HIP_R_16BF)
    SAME_CXX(XR_HIPBLASLT_MATMUL_DESC_TRANSA, HIPBLASLT_MATMUL_DESC_TRANSA)
    SAME_CXX(XR_HIPBLASLT_MATMUL_DESC_TRANSB, HIPBLASLT_MATMUL_DESC_TRANSB)
    SAME_CXX(XR_HIPBLASLT_MATMUL_DESC_EPILOGUE, HIPBLASLT_MATMUL_DESC_EPILOGUE)
    SAME_CXX(XR_HIPBLASLT_MATMUL_DESC_BIAS_POINTER, HIPBLASLT_MATMUL_DESC_BIAS_POINTER)
    SAME_CXX(XR_HIPBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, HIPBLASLT_MATMUL_DESC_BIAS_DATA_TYPE)
    SAME_CXX(XR_HIPBLASLT_EPILOGUE_BIAS, HIPBLASLT_EPILOGUE_BIAS)
    SAME_CXX(XR_HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT, HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT)
    SAME_CXX(XR_HIPBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
             HIPBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET)
    SAME_CXX(XR_HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES)
    SAME_CXX(sizeof(xr_hipblaslt_algo_t), sizeof(hipblasLtMatmulAlgo_t))
    SAME_CXX(sizeof(xr_hipblaslt_heuristic_t), sizeof(hipblasLtMatmulHeuristicResult_t))
    SAME_CXX(offsetof(xr_hipblaslt_heuristic_t, workspace_size),
             offsetof(hipblasLtMatmulHeuristicResult_t, workspaceSize))
    SAME_CXX(offsetof(xr_hipblaslt_heuristic_t, state),
             offsetof(hipblasLtMatmulHeuristicResult_t, state));

Test(blaslt_abi, hipblaslt_declarations_equal_hipblaslt_h) {
  const char *dir = hipblaslt_header_dir();
  if (!dir) {
    cr_skip_test("no hipblaslt/hipblaslt.h in /opt/rocm/include or /usr/include (Debian 12 "
                 "packages neither hipBLASLt nor rocBLAS); our values come from ROCm 6.1+ sources");
  }
  char flags[600];
  snprintf(flags, sizeof flags, "-std=c++17 -D__HIP_PLATFORM_AMD__ -I%s", dir);
  cr_assert_eq(xr_test_compile(hipblaslt_check, "cc", "c++", flags), 0,
               "our hipBLASLt declarations differ from %s/hipblaslt/hipblaslt.h", dir);
}

/* ------------------------------------------------------------------------------------------ */
/* Loading                                                                                    */

Test(blaslt_load, cublaslt_resolves_every_symbol_and_takes_our_attributes) {
  const xr_blaslt_t *lib;
  xr_status_t status = xr_blaslt_get(XR_BLASLT_CUBLASLT, &lib);
  if (status == XR_UNAVAILABLE) cr_skip_test("%s", xr_last_error());
  cr_assert_eq(status, XR_OK, "%s", xr_last_error());
#define XR_NOT_NULL(need, ret, field, params, cuda, hip) \
  cr_assert(lib->fn.field != NULL, #cuda " unresolved");
  XR_BLASLT_SYMBOLS(XR_NOT_NULL)
#undef XR_NOT_NULL
  cr_assert(lib->cublaslt_get_version && lib->cublaslt_get_version() >= 110000,
            "cuBLASLt version %zu", lib->cublaslt_get_version ? lib->cublaslt_get_version() : 0);
  cr_log_info("%s: cuBLASLt %zu", lib->path, lib->cublaslt_get_version());

  /* Descriptors need no device: the library checks each attribute's id and size. */
  const xr_blaslt_constants_t *k = lib->k;
  void *desc = NULL, *layout = NULL, *preference = NULL;
  cr_assert_eq(lib->fn.matmul_desc_create(&desc, k->compute_32f, k->r_32f), 0);
  int32_t trans = k->op_t;
  uint32_t epilogue = (uint32_t)k->epilogue_bias;
  const void *bias = &trans;
  cr_assert_eq(lib->fn.matmul_desc_set_attribute(desc, k->desc_transa, &trans, sizeof trans), 0);
  cr_assert_eq(lib->fn.matmul_desc_set_attribute(desc, k->desc_transb, &trans, sizeof trans), 0);
  cr_assert_eq(lib->fn.matmul_desc_set_attribute(desc, k->desc_epilogue, &epilogue, sizeof epilogue), 0);
  cr_assert_eq(lib->fn.matmul_desc_set_attribute(desc, k->desc_bias_pointer, &bias, sizeof bias), 0);
  /* A wrong size is refused, so the sizes above are really checked. */
  int64_t wide = 0;
  cr_assert_neq(lib->fn.matmul_desc_set_attribute(desc, k->desc_transa, &wide, sizeof wide), 0);
  int types[] = {k->r_32f, k->r_16f, k->r_16bf};
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(lib->fn.matrix_layout_create(&layout, types[i], 17, 129, 33), 0);
    int32_t count = 3;
    int64_t stride = 17 * 129;
    cr_assert_eq(lib->fn.matrix_layout_set_attribute(layout, k->layout_batch_count, &count,
                                                     sizeof count), 0);
    cr_assert_eq(lib->fn.matrix_layout_set_attribute(layout, k->layout_strided_batch_offset,
                                                     &stride, sizeof stride), 0);
    cr_assert_eq(lib->fn.matrix_layout_destroy(layout), 0);
  }
  cr_assert_eq(lib->fn.preference_create(&preference), 0);
  uint64_t workspace = 32u << 20;
  cr_assert_eq(lib->fn.preference_set_attribute(preference, k->pref_max_workspace_bytes,
                                                &workspace, sizeof workspace), 0);
  for (int i = 0; i < 4; i++) {
    uint32_t alignment = 4;
    cr_assert_eq(lib->fn.preference_set_attribute(preference, k->pref_min_alignment[i],
                                                  &alignment, sizeof alignment), 0);
  }
  cr_assert_eq(lib->fn.preference_destroy(preference), 0);
  cr_assert_eq(lib->fn.matmul_desc_destroy(desc), 0);
}

Test(blaslt_load, off_disables_the_library) {
  setenv("XR_CUBLASLT_LIBRARY", "off", 1);
  const xr_blaslt_t *lib;
  cr_assert_eq(xr_blaslt_get(XR_BLASLT_CUBLASLT, &lib), XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), "cuBLASLt unavailable: XR_CUBLASLT_LIBRARY=off"), "%s",
            xr_last_error());
}

Test(blaslt_load, an_absent_library_names_every_path_tried) {
  setenv("XR_HIPBLASLT_LIBRARY", "/nonexistent/libhipblaslt.so", 1);
  const xr_blaslt_t *lib;
  xr_status_t status = xr_blaslt_get(XR_BLASLT_HIPBLASLT, &lib);
  if (status == XR_OK) cr_skip_test("hipBLASLt is installed here (%s)", lib->path);
  cr_assert_eq(status, XR_UNAVAILABLE);
  const char *e = xr_last_error();
  cr_assert(strstr(e, "hipBLASLt unavailable: XR_HIPBLASLT_LIBRARY=/nonexistent/libhipblaslt.so: "
                      "not found"), "%s", e);
  cr_assert(strstr(e, "libhipblaslt.so.1: not found") && strstr(e, "libhipblaslt.so.0: not found"),
            "%s", e);
}

Test(blaslt_load, a_library_that_is_not_the_blas_is_refused) {
  setenv("XR_CUBLASLT_LIBRARY", "libm.so.6", 1);
  const xr_blaslt_t *lib;
  cr_assert_eq(xr_blaslt_get(XR_BLASLT_CUBLASLT, &lib), XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), "libm.so.6: loaded; missing required symbol cublasLtCreate"), "%s",
            xr_last_error());
}
