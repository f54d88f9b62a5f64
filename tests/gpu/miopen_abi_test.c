/* Our declarations of MIOpen (kernels/gpu/miopen_abi.h and the table of kernels/gpu/miopen.h)
 * against miopen/miopen.h, and the library loaded through our table, without a GPU:
 *  - where the header is installed (XR_MIOPEN_INCLUDE, /opt/rocm/include or /usr/include), a C++
 *    file including both is compiled with the system compiler: every value and the perf
 *    struct's layout are static-asserted equal, and every function of our table is assigned to
 *    a pointer of the parameter types we call it with (MIOpen's own handle and descriptor
 *    types). Debian 12 packages no MIOpen, so this skips on our CI;
 *  - where libMIOpen loads, every function resolves;
 *  - a disabled or absent library is UNAVAILABLE with every path tried. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/gpu/miopen.h"
#include "tests/gpu/abi_compile.h"

static const char *miopen_include(void) {
  static char found[512];
  const char *env = getenv("XR_MIOPEN_INCLUDE");
  const char *const candidates[] = {env && env[0] ? env : NULL, "/opt/rocm/include",
                                    "/usr/include"};
  for (size_t i = 0; i < 3; i++) {
    if (!candidates[i]) continue;
    char header[600];
    snprintf(header, sizeof header, "%s/miopen/miopen.h", candidates[i]);
    if (access(header, R_OK) == 0) return snprintf(found, sizeof found, "%s", candidates[i]), found;
  }
  return NULL;
}

/* C++: the header's newer parts (miopenTensorArgument_t) compile only as C++. */
#define SAME(ours, theirs) "static_assert((" #ours ") == (" #theirs "), \"" #ours "\");\n"
// clang-format off
#define H "miopenHandle_t"
#define T "miopenTensorDescriptor_t"
#define C "miopenConvolutionDescriptor_t"
#define FIND(direction, a)                                                                    \
  "static miopenStatus_t (*find_" direction ")(" H ", const " T ", const void *, const " T    \
  ", const void *, const " C ", const " T ", void *, const int, int *, miopenConvAlgoPerf_t *, " \
  "void *, size_t, bool) = miopenFind" a "Algorithm;\n"
#define RUN(direction, name, algo)                                                           \
  "static miopenStatus_t (*run_" direction ")(" H ", const void *, const " T ", const void *, " \
  "const " T ", const void *, const " C ", " algo ", const void *, const " T                  \
  ", void *, void *, size_t) = " name ";\n"
#define WS(direction, name)                                                                   \
  "static miopenStatus_t (*ws_" direction ")(" H ", const " T ", const " T ", const " C       \
  ", const " T ", size_t *) = " name ";\n"

static const char miopen_check[] =
    "#include <cstddef>\n"
    "#include <miopen/miopen.h>\n"
    "#include \"kernels/gpu/miopen_abi.h\"\n"
    SAME(XR_MIOPEN_STATUS_SUCCESS, miopenStatusSuccess)
    SAME(XR_MIOPEN_HALF, miopenHalf)
    SAME(XR_MIOPEN_FLOAT, miopenFloat)
    SAME(XR_MIOPEN_BFLOAT16, miopenBFloat16)
    SAME(XR_MIOPEN_CONVOLUTION, miopenConvolution)
    SAME(sizeof(miopenStatus_t), sizeof(int))
    SAME(sizeof(miopenDataType_t), sizeof(int))
    SAME(sizeof(miopenConvFwdAlgorithm_t), sizeof(int))
    SAME(sizeof(xr_miopen_algo_perf_t), sizeof(miopenConvAlgoPerf_t))
    SAME(offsetof(xr_miopen_algo_perf_t, time), offsetof(miopenConvAlgoPerf_t, time))
    SAME(offsetof(xr_miopen_algo_perf_t, memory), offsetof(miopenConvAlgoPerf_t, memory))
    FIND("fwd", "ConvolutionForward")
    FIND("bwd_data", "ConvolutionBackwardData")
    FIND("bwd_weights", "ConvolutionBackwardWeights")
    RUN("fwd", "miopenConvolutionForward", "miopenConvFwdAlgorithm_t")
    RUN("bwd_data", "miopenConvolutionBackwardData", "miopenConvBwdDataAlgorithm_t")
    RUN("bwd_weights", "miopenConvolutionBackwardWeights", "miopenConvBwdWeightsAlgorithm_t")
    WS("fwd", "miopenConvolutionForwardGetWorkSpaceSize")
    WS("bwd_data", "miopenConvolutionBackwardDataGetWorkSpaceSize")
    WS("bwd_weights", "miopenConvolutionBackwardWeightsGetWorkSpaceSize")
    "static miopenStatus_t (*set_tensor)(" T ", miopenDataType_t, int, const int *, const int *) = "
    "miopenSetTensorDescriptor;\n"
    "static miopenStatus_t (*init_conv)(" C ", int, const int *, const int *, const int *, "
    "miopenConvolutionMode_t) = miopenInitConvolutionNdDescriptor;\n"
    "static miopenStatus_t (*out_dim)(" C ", const " T ", const " T ", int *, int *) = "
    "miopenGetConvolutionNdForwardOutputDim;\n"
    "static miopenStatus_t (*bias)(" H ", const void *, const " T ", const void *, const void *, "
    "const " T ", void *) = miopenConvolutionForwardBias;\n"
    "static miopenStatus_t (*bias_grad)(" H ", const void *, const " T ", const void *, "
    "const void *, const " T ", void *) = miopenConvolutionBackwardBias;\n"
    "static miopenStatus_t (*stream)(" H ", miopenAcceleratorQueue_t) = miopenSetStream;\n"
    "static miopenStatus_t (*groups)(" C ", int) = miopenSetConvolutionGroupCount;\n"
    "static miopenStatus_t (*version)(size_t *, size_t *, size_t *) = miopenGetVersion;\n"
    "static const char *(*error)(miopenStatus_t) = miopenGetErrorString;\n"
    "void use();\n"
    "void use() { (void)find_fwd; (void)find_bwd_data; (void)find_bwd_weights; (void)run_fwd;\n"
    "  (void)run_bwd_data; (void)run_bwd_weights; (void)ws_fwd; (void)ws_bwd_data;\n"
    "  (void)ws_bwd_weights; (void)set_tensor; (void)init_conv; (void)out_dim; (void)bias;\n"
    "  (void)bias_grad; (void)stream; (void)groups; (void)version; (void)error; }\n";
// clang-format on

static void flags_for(char *flags, size_t size, const char *include) {
  snprintf(flags, size, "-std=c++17 -Wall -Werror -D__HIP_PLATFORM_AMD__ -I%s", include);
}

Test(miopen_abi, declarations_equal_miopen_h) {
  const char *include = miopen_include();
  if (!include)
    cr_skip_test(
        "no miopen/miopen.h in $XR_MIOPEN_INCLUDE, /opt/rocm/include or /usr/include "
        "(Debian 12 packages no MIOpen)");
  char flags[700];
  flags_for(flags, sizeof flags, include);
  cr_assert_eq(xr_test_compile(miopen_check, "cc", "c++", flags), 0,
               "our MIOpen declarations differ from %s/miopen/miopen.h (see the log)", include);
}

/* The check compiles: a wrong value must fail it. */
Test(miopen_abi, a_wrong_value_fails_the_check) {
  const char *include = miopen_include();
  if (!include) cr_skip_test("no miopen/miopen.h (Debian 12 packages no MIOpen)");
  char flags[700];
  flags_for(flags, sizeof flags, include);
  cr_assert_neq(
      xr_test_compile("#include <miopen/miopen.h>\n" SAME(2, miopenBFloat16), "cc", "c++", flags),
      0);
}

Test(miopen_load, resolves_every_symbol) {
  const xr_miopen_t *l;
  xr_status_t st = xr_miopen_get(&l);
  if (st == XR_UNAVAILABLE) cr_skip_test("%s", xr_last_error());
  cr_assert_eq(st, XR_OK, "%s", xr_last_error());
#define XR_NOT_NULL(need, ret, name, params) cr_assert(l->name != NULL, #name " unresolved");
  XR_MIOPEN_SYMBOLS(XR_NOT_NULL)
#undef XR_NOT_NULL
  cr_log_info("%s: %s", l->path, l->version);
}

Test(miopen_load, off_disables_the_library) {
  setenv("XR_MIOPEN_LIBRARY", "off", 1);
  const xr_miopen_t *l;
  cr_assert_eq(xr_miopen_get(&l), XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), "MIOpen unavailable: XR_MIOPEN_LIBRARY=off"), "%s",
            xr_last_error());
}

Test(miopen_load, an_absent_library_names_every_path_tried) {
  setenv("XR_MIOPEN_LIBRARY", "/nonexistent/libMIOpen.so", 1);
  const xr_miopen_t *l;
  xr_status_t st = xr_miopen_get(&l);
  if (st == XR_OK) cr_skip_test("MIOpen is installed here (%s)", l->path);
  cr_assert_eq(st, XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), "XR_MIOPEN_LIBRARY=/nonexistent/libMIOpen.so: not found") &&
                strstr(xr_last_error(), "libMIOpen.so.1: not found"),
            "%s", xr_last_error());
}

Test(miopen_load, a_library_that_is_not_miopen_is_refused) {
  setenv("XR_MIOPEN_LIBRARY", "libm.so.6", 1);
  const xr_miopen_t *l;
  cr_assert_eq(xr_miopen_get(&l), XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), "libm.so.6: loaded; missing required symbol miopenGetVersion"),
            "%s", xr_last_error());
}
