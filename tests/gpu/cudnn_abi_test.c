/* Our declarations of cuDNN (kernels/gpu/cudnn_abi.h and the table of kernels/gpu/cudnn.h)
 * against the vendor's own header, and the library loaded through our table, without a GPU:
 *  - where cudnn.h is installed ($CUDA_HOME or /usr/local/cuda), a C file including both is
 *    compiled with the system compiler: every value and the perf struct's layout are
 *    static-asserted equal, and every function of our table is assigned to a pointer of the
 *    parameter types we call it with, the handles and descriptors as cuDNN's own types;
 *  - where libcudnn loads, every function resolves, and the host-only calls (descriptors, the
 *    forward output size) accept our values and agree with the geometry our planner computes;
 *  - a disabled or absent library is UNAVAILABLE with every path tried.
 * Each Criterion test runs in its own process, so each loads the library afresh. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/gpu/cudnn.h"
#include "tests/gpu/abi_compile.h"

static const char *cuda_include(void) {
  static char path[512];
  const char *home = getenv("CUDA_HOME");
  snprintf(path, sizeof path, "%s/include", home && home[0] ? home : "/usr/local/cuda");
  char header[600];
  snprintf(header, sizeof header, "%s/cudnn.h", path);
  return access(header, R_OK) == 0 ? path : NULL;
}

#define SAME(ours, theirs) "_Static_assert((" #ours ") == (" #theirs "), \"" #ours "\");\n"
#define H "cudnnHandle_t"
#define T "cudnnTensorDescriptor_t"
#define F "cudnnFilterDescriptor_t"
#define C "cudnnConvolutionDescriptor_t"

static const char cudnn_check[] =
    "#include <stddef.h>\n"
    "#include <cudnn.h>\n"
    "#include \"kernels/gpu/cudnn_abi.h\"\n" SAME(XR_CUDNN_STATUS_SUCCESS, CUDNN_STATUS_SUCCESS)
        SAME(XR_CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT) SAME(XR_CUDNN_DATA_HALF, CUDNN_DATA_HALF)
            SAME(XR_CUDNN_DATA_BFLOAT16, CUDNN_DATA_BFLOAT16)
                SAME(XR_CUDNN_TENSOR_NCHW, CUDNN_TENSOR_NCHW)
                    SAME(XR_CUDNN_TENSOR_NHWC, CUDNN_TENSOR_NHWC)
                        SAME(XR_CUDNN_CROSS_CORRELATION, CUDNN_CROSS_CORRELATION)
                            SAME(XR_CUDNN_DEFAULT_MATH, CUDNN_DEFAULT_MATH)
                                SAME(XR_CUDNN_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH)
                                    SAME(XR_CUDNN_DIM_MAX, CUDNN_DIM_MAX)
    /* Enums travel as int through our function pointers. */
    SAME(sizeof(cudnnStatus_t), sizeof(int)) SAME(sizeof(cudnnDataType_t), sizeof(int)) SAME(
        sizeof(cudnnTensorFormat_t), sizeof(int)) SAME(sizeof(cudnnConvolutionMode_t), sizeof(int))
        SAME(sizeof(cudnnMathType_t), sizeof(int))
            SAME(sizeof(cudnnConvolutionFwdAlgo_t), sizeof(int)) SAME(
                sizeof(xr_cudnn_algo_perf_t), sizeof(cudnnConvolutionFwdAlgoPerf_t))
                SAME(sizeof(xr_cudnn_algo_perf_t), sizeof(cudnnConvolutionBwdDataAlgoPerf_t)) SAME(
                    sizeof(xr_cudnn_algo_perf_t), sizeof(cudnnConvolutionBwdFilterAlgoPerf_t))
                    SAME(offsetof(xr_cudnn_algo_perf_t, status),
                         offsetof(cudnnConvolutionFwdAlgoPerf_t, status))
                        SAME(offsetof(xr_cudnn_algo_perf_t, memory),
                             offsetof(cudnnConvolutionFwdAlgoPerf_t, memory))
                            SAME(offsetof(xr_cudnn_algo_perf_t, math_type),
                                 offsetof(cudnnConvolutionFwdAlgoPerf_t, mathType))
                                SAME(offsetof(xr_cudnn_algo_perf_t, memory),
                                     offsetof(cudnnConvolutionBwdDataAlgoPerf_t, memory))
                                    SAME(offsetof(xr_cudnn_algo_perf_t, math_type),
                                         offsetof(cudnnConvolutionBwdFilterAlgoPerf_t, mathType))
    /* Our table's functions, parameter for parameter. */
    "static cudnnStatus_t (*set_tensor)(" T
    ", cudnnDataType_t, int, const int *, const int *) = "
    "cudnnSetTensorNdDescriptor;\n"
    "static cudnnStatus_t (*set_filter)(" F
    ", cudnnDataType_t, cudnnTensorFormat_t, int, "
    "const int *) = cudnnSetFilterNdDescriptor;\n"
    "static cudnnStatus_t (*set_conv)(" C
    ", int, const int *, const int *, const int *, "
    "cudnnConvolutionMode_t, cudnnDataType_t) = cudnnSetConvolutionNdDescriptor;\n"
    "static cudnnStatus_t (*out_dim)(const " C ", const " T ", const " F
    ", int, int *) = "
    "cudnnGetConvolutionNdForwardOutputDim;\n"
    "static cudnnStatus_t (*fwd_algo)(" H ", const " T ", const " F ", const " C ", const " T
    ", const int, int *, cudnnConvolutionFwdAlgoPerf_t *) = "
    "cudnnGetConvolutionForwardAlgorithm_v7;\n"
    "static cudnnStatus_t (*fwd_ws)(" H ", const " T ", const " F ", const " C ", const " T
    ", cudnnConvolutionFwdAlgo_t, size_t *) = cudnnGetConvolutionForwardWorkspaceSize;\n"
    "static cudnnStatus_t (*fwd)(" H ", const void *, const " T ", const void *, const " F
    ", const void *, const " C ", cudnnConvolutionFwdAlgo_t, void *, size_t, const void *, const " T
    ", void *) = cudnnConvolutionForward;\n"
    "static cudnnStatus_t (*bwd_data_algo)(" H ", const " F ", const " T ", const " C ", const " T
    ", const int, int *, cudnnConvolutionBwdDataAlgoPerf_t *) = "
    "cudnnGetConvolutionBackwardDataAlgorithm_v7;\n"
    "static cudnnStatus_t (*bwd_data_ws)(" H ", const " F ", const " T ", const " C ", const " T
    ", cudnnConvolutionBwdDataAlgo_t, size_t *) = cudnnGetConvolutionBackwardDataWorkspaceSize;\n"
    "static cudnnStatus_t (*bwd_data)(" H ", const void *, const " F ", const void *, const " T
    ", const void *, const " C
    ", cudnnConvolutionBwdDataAlgo_t, void *, size_t, const void *, "
    "const " T
    ", void *) = cudnnConvolutionBackwardData;\n"
    "static cudnnStatus_t (*bwd_filter_algo)(" H ", const " T ", const " T ", const " C ", const " F
    ", const int, int *, cudnnConvolutionBwdFilterAlgoPerf_t *) = "
    "cudnnGetConvolutionBackwardFilterAlgorithm_v7;\n"
    "static cudnnStatus_t (*bwd_filter_ws)(" H ", const " T ", const " T ", const " C ", const " F
    ", cudnnConvolutionBwdFilterAlgo_t, size_t *) = "
    "cudnnGetConvolutionBackwardFilterWorkspaceSize;\n"
    "static cudnnStatus_t (*bwd_filter)(" H ", const void *, const " T ", const void *, const " T
    ", const void *, const " C
    ", cudnnConvolutionBwdFilterAlgo_t, void *, size_t, const void *, "
    "const " F
    ", void *) = cudnnConvolutionBackwardFilter;\n"
    "static cudnnStatus_t (*bwd_bias)(" H ", const void *, const " T
    ", const void *, const void *, "
    "const " T
    ", void *) = cudnnConvolutionBackwardBias;\n"
    "static cudnnStatus_t (*add)(" H ", const void *, const " T
    ", const void *, const void *, "
    "const " T
    ", void *) = cudnnAddTensor;\n"
    "static cudnnStatus_t (*set_stream)(" H
    ", cudaStream_t) = cudnnSetStream;\n"
    "static cudnnStatus_t (*groups)(" C
    ", int) = cudnnSetConvolutionGroupCount;\n"
    "static cudnnStatus_t (*math)(" C
    ", cudnnMathType_t) = cudnnSetConvolutionMathType;\n"
    "static size_t (*version)(void) = cudnnGetVersion;\n"
    "static const char *(*error)(cudnnStatus_t) = cudnnGetErrorString;\n"
    "void use(void);\n"
    "void use(void) { (void)set_tensor; (void)set_filter; (void)set_conv; (void)out_dim;\n"
    "  (void)fwd_algo; (void)fwd_ws; (void)fwd; (void)bwd_data_algo; (void)bwd_data_ws;\n"
    "  (void)bwd_data; (void)bwd_filter_algo; (void)bwd_filter_ws; (void)bwd_filter;\n"
    "  (void)bwd_bias; (void)add; (void)set_stream; (void)groups; (void)math; (void)version;\n"
    "  (void)error; }\n";

/* cuDNN 9 marks the legacy convolution API deprecated; it is what we call. */
static void check_flags(char *flags, size_t size, const char *include, bool werror) {
  snprintf(flags, size, "-std=c11 -Wall %s -Wno-deprecated-declarations -I%s",
           werror ? "-Werror" : "", include);
}

Test(cudnn_abi, declarations_equal_cudnn_h) {
  const char *include = cuda_include();
  if (!include) cr_skip_test("no cudnn.h in $CUDA_HOME/include or /usr/local/cuda/include");
  char flags[700];
  check_flags(flags, sizeof flags, include, true);
  cr_assert_eq(xr_test_compile(cudnn_check, "c", "cc", flags), 0,
               "our cuDNN declarations differ from %s/cudnn.h (see the log)", include);
}

/* The check compiles: a wrong value or a wrong parameter type must fail it. */
Test(cudnn_abi, a_wrong_declaration_fails_the_check) {
  const char *include = cuda_include();
  if (!include) cr_skip_test("no cudnn.h in $CUDA_HOME/include or /usr/local/cuda/include");
  char flags[700];
  check_flags(flags, sizeof flags, include, true);
  cr_assert_neq(xr_test_compile("#include <cudnn.h>\n" SAME(3, CUDNN_DATA_HALF), "c", "cc", flags),
                0);
  cr_assert_neq(xr_test_compile("#include <cudnn.h>\n"
                                "static cudnnStatus_t (*f)(" T ", int) = cudnnAddTensor;\n"
                                "void use(void);\nvoid use(void) { (void)f; }\n",
                                "c", "cc", flags),
                0);
}

/* ------------------------------------------------------------------------------------------ */
/* Loading                                                                                    */

Test(cudnn_load, resolves_every_symbol_and_computes_our_geometry) {
  const xr_cudnn_t *l;
  xr_status_t st = xr_cudnn_get(&l);
  if (st == XR_UNAVAILABLE) cr_skip_test("%s", xr_last_error());
  cr_assert_eq(st, XR_OK, "%s", xr_last_error());
#define XR_NOT_NULL(need, ret, name, params) cr_assert(l->name != NULL, #name " unresolved");
  XR_CUDNN_SYMBOLS(XR_NOT_NULL)
#undef XR_NOT_NULL
  cr_assert(l->cudnnGetVersion() >= 8000, "%zu", l->cudnnGetVersion());
  cr_log_info("%s: %s", l->path, l->version);

  /* Descriptors need no device. x [2, 8, 17, 15] channels-last, w [16, 4, 3, 3] packed NHWC,
   * 2 groups, pad 1, stride 2, dilation 2: PyTorch's output is (in + 2 - 4 - 1) / 2 + 1. */
  void *x, *w, *conv;
  const int x_dims[4] = {2, 8, 17, 15}, x_strides[4] = {8 * 17 * 15, 1, 15 * 8, 8};
  const int w_dims[4] = {16, 4, 3, 3}, pad[2] = {1, 1}, stride[2] = {2, 2}, dilation[2] = {2, 2};
  cr_assert_eq(l->cudnnCreateTensorDescriptor(&x), 0);
  cr_assert_eq(l->cudnnSetTensorNdDescriptor(x, XR_CUDNN_DATA_BFLOAT16, 4, x_dims, x_strides), 0);
  cr_assert_eq(l->cudnnCreateFilterDescriptor(&w), 0);
  cr_assert_eq(
      l->cudnnSetFilterNdDescriptor(w, XR_CUDNN_DATA_BFLOAT16, XR_CUDNN_TENSOR_NHWC, 4, w_dims), 0);
  cr_assert_eq(l->cudnnCreateConvolutionDescriptor(&conv), 0);
  cr_assert_eq(l->cudnnSetConvolutionNdDescriptor(conv, 2, pad, stride, dilation,
                                                  XR_CUDNN_CROSS_CORRELATION, XR_CUDNN_DATA_FLOAT),
               0);
  cr_assert_eq(l->cudnnSetConvolutionGroupCount(conv, 2), 0);
  cr_assert_eq(l->cudnnSetConvolutionMathType(conv, XR_CUDNN_TENSOR_OP_MATH), 0);
  int out[4];
  cr_assert_eq(l->cudnnGetConvolutionNdForwardOutputDim(conv, x, w, 4, out), 0);
  cr_assert(out[0] == 2 && out[1] == 16 && out[2] == (17 + 2 - 4 - 1) / 2 + 1 &&
                out[3] == (15 + 2 - 4 - 1) / 2 + 1,
            "cuDNN's output [%d, %d, %d, %d]", out[0], out[1], out[2], out[3]);
  /* A wrong value is refused, so the ones above are really checked. */
  cr_assert_neq(l->cudnnSetTensorNdDescriptor(x, 77, 4, x_dims, x_strides), 0);
  cr_assert_str_eq(l->cudnnGetErrorString(XR_CUDNN_STATUS_SUCCESS), "CUDNN_STATUS_SUCCESS");
  cr_assert_eq(l->cudnnDestroyConvolutionDescriptor(conv), 0);
  cr_assert_eq(l->cudnnDestroyFilterDescriptor(w), 0);
  cr_assert_eq(l->cudnnDestroyTensorDescriptor(x), 0);
}

Test(cudnn_load, off_disables_the_library) {
  setenv("XR_CUDNN_LIBRARY", "off", 1);
  const xr_cudnn_t *l;
  cr_assert_eq(xr_cudnn_get(&l), XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), "cuDNN unavailable: XR_CUDNN_LIBRARY=off"), "%s",
            xr_last_error());
}

Test(cudnn_load, a_library_that_is_not_cudnn_is_refused) {
  setenv("XR_CUDNN_LIBRARY", "libm.so.6", 1);
  const xr_cudnn_t *l;
  cr_assert_eq(xr_cudnn_get(&l), XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), "libm.so.6: loaded; missing required symbol cudnnGetVersion"),
            "%s", xr_last_error());
}
