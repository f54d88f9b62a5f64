/* Our declarations of the CUDA driver API (hal/drivers/gpu/gpu_symbols.h) against the vendor,
 * without a GPU:
 *  - every entry's prototype, written once below with abstract type names, is checked twice
 *    with the system compiler: with CUDA's types against cuda.h's declaration of the symbol we
 *    load (where cuda.h is installed: $CUDA_HOME or /usr/local/cuda), and with our plain types
 *    against gpu_symbols.h's field (always); a row missing for an entry fails the second;
 *  - the constants gpu_symbols.h fixes (capture mode, capture error range) equal cuda.h's;
 *  - every CUDA symbol name of the list is exported by the toolkit's stub libcuda, where
 *    installed (a misspelt name would leave an OPTIONAL entry silently NULL).
 * Skips say which header, compiler or library is absent. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hal/drivers/gpu/gpu_symbols.h"
#include "tests/gpu/abi_compile.h"

#define CUDA_STUB "/usr/local/cuda/lib64/stubs/libcuda.so"

static const char *cuda_include(void) {
  static char path[512];
  const char *home = getenv("CUDA_HOME");
  snprintf(path, sizeof path, "%s/include", home && home[0] ? home : "/usr/local/cuda");
  char header[600];
  snprintf(header, sizeof header, "%s/cuda.h", path);
  return access(header, R_OK) == 0 ? path : NULL;
}

/* Compiles `source` as C11 with -Werror and `flags`: the compiler's exit status. */
static int compile(const char *source, const char *flags) {
  char all[1024];
  snprintf(all, sizeof all, "-std=c11 -Wall -Werror %s", flags);
  return xr_test_compile(source, "c", "cc", all);
}

/* One row per gpu_symbols.h entry: field, the CUDA symbol we load, the parameters in abstract
 * types (RESULT is every entry's return type). */
#define ABSTRACT_TABLE                                                                          \
  "#define ABI_ROWS(X) \\\n"                                                                    \
  "  X(device_count, cuDeviceGetCount, (int *)) \\\n"                                           \
  "  X(driver_version, cuDriverGetVersion, (int *)) \\\n"                                       \
  "  X(device_get, cuDeviceGet, (DEVICE *, int)) \\\n"                                          \
  "  X(device_name, cuDeviceGetName, (char *, int, DEVICE)) \\\n"                               \
  "  X(device_attribute, cuDeviceGetAttribute, (int *, ATTRIBUTE, DEVICE)) \\\n"                \
  "  X(device_memory, cuDeviceTotalMem_v2, (size_t *, DEVICE)) \\\n"                            \
  "  X(synchronize, cuCtxSynchronize, (void)) \\\n"                                             \
  "  X(mem_alloc, cuMemAlloc_v2, (DEVPTR *, size_t)) \\\n"                                      \
  "  X(mem_free, cuMemFree_v2, (DEVPTR)) \\\n"                                                  \
  "  X(copy_to_device, cuMemcpyHtoDAsync_v2, (DEVPTR, const void *, size_t, STREAM)) \\\n"      \
  "  X(copy_to_host, cuMemcpyDtoHAsync_v2, (void *, DEVPTR, size_t, STREAM)) \\\n"              \
  "  X(copy_on_device, cuMemcpyDtoDAsync_v2, (DEVPTR, DEVPTR, size_t, STREAM)) \\\n"            \
  "  X(fill_8, cuMemsetD8Async, (DEVPTR, unsigned char, size_t, STREAM)) \\\n"                  \
  "  X(fill_16, cuMemsetD16Async, (DEVPTR, unsigned short, size_t, STREAM)) \\\n"               \
  "  X(fill_32, cuMemsetD32Async, (DEVPTR, unsigned int, size_t, STREAM)) \\\n"                 \
  "  X(stream_create, cuStreamCreate, (STREAM *, unsigned int)) \\\n"                           \
  "  X(stream_destroy, cuStreamDestroy_v2, (STREAM)) \\\n"                                      \
  "  X(stream_synchronize, cuStreamSynchronize, (STREAM)) \\\n"                                 \
  "  X(stream_wait_event, cuStreamWaitEvent, (STREAM, EVENT, unsigned int)) \\\n"               \
  "  X(event_create, cuEventCreate, (EVENT *, unsigned int)) \\\n"                              \
  "  X(event_destroy, cuEventDestroy_v2, (EVENT)) \\\n"                                         \
  "  X(event_record, cuEventRecord, (EVENT, STREAM)) \\\n"                                      \
  "  X(event_synchronize, cuEventSynchronize, (EVENT)) \\\n"                                    \
  "  X(event_elapsed, cuEventElapsedTime, (float *, EVENT, EVENT)) \\\n"                        \
  "  X(event_elapsed_v2, ELAPSED_V2, (float *, EVENT, EVENT)) \\\n"                             \
  "  X(module_load, cuModuleLoadData, (MODULE *, const void *)) \\\n"                           \
  "  X(module_unload, cuModuleUnload, (MODULE)) \\\n"                                           \
  "  X(module_function, cuModuleGetFunction, (FUNCTION *, MODULE, const char *)) \\\n"          \
  "  X(launch, cuLaunchKernel, (FUNCTION, unsigned int, unsigned int, unsigned int, \\\n"       \
  "    unsigned int, unsigned int, unsigned int, unsigned int, STREAM, void **, void **)) \\\n" \
  "  X(device_pci_bus_id, cuDeviceGetPCIBusId, (char *, int, DEVICE)) \\\n"                     \
  "  X(stream_begin_capture, cuStreamBeginCapture_v2, (STREAM, CAPTURE_MODE)) \\\n"             \
  "  X(stream_end_capture, cuStreamEndCapture, (STREAM, GRAPH *)) \\\n"                         \
  "  X(graph_instantiate, cuGraphInstantiateWithFlags, \\\n"                                    \
  "    (GRAPH_EXEC *, GRAPH, unsigned long long)) \\\n"                                         \
  "  X(graph_launch, cuGraphLaunch, (GRAPH_EXEC, STREAM)) \\\n"                                 \
  "  X(graph_exec_destroy, cuGraphExecDestroy, (GRAPH_EXEC)) \\\n"                              \
  "  X(graph_destroy, cuGraphDestroy, (GRAPH))\n"

/* With cuda.h: each row's prototype in CUDA's types is the declared symbol's (a mismatch is an
 * incompatible-pointer-types error), and the types our plain ones stand for have their sizes. */
static const char theirs_check[] =
    "#include <stddef.h>\n"
    "#include <stdint.h>\n"
    "#include <cuda.h>\n"
    "#include \"hal/drivers/gpu/gpu_symbols.h\"\n" ABSTRACT_TABLE
    "#define RESULT CUresult\n"
    "#define DEVICE CUdevice\n"
    "#define ATTRIBUTE CUdevice_attribute\n"
    "#define DEVPTR CUdeviceptr\n"
    "#define STREAM CUstream\n"
    "#define EVENT CUevent\n"
    "#define MODULE CUmodule\n"
    "#define FUNCTION CUfunction\n"
    "#define GRAPH CUgraph\n"
    "#define GRAPH_EXEC CUgraphExec\n"
    "#define CAPTURE_MODE CUstreamCaptureMode\n"
    "#if CUDA_VERSION >= 12080\n"
    "#define ELAPSED_V2 cuEventElapsedTime_v2\n"
    "#else /* older toolkits declare no _v2: the row checks the form it replaces */\n"
    "#define ELAPSED_V2 cuEventElapsedTime\n"
    "#endif\n"
    "#define THEIRS(field, symbol, params) RESULT (*theirs_##field) params = symbol;\n"
    "ABI_ROWS(THEIRS)\n"
    "_Static_assert(sizeof(CUresult) == sizeof(int), \"CUresult\");\n"
    "_Static_assert(sizeof(CUdevice) == sizeof(int), \"CUdevice\");\n"
    "_Static_assert(sizeof(CUdevice_attribute) == sizeof(int), \"CUdevice_attribute\");\n"
    "_Static_assert(sizeof(CUstreamCaptureMode) == sizeof(int), \"CUstreamCaptureMode\");\n"
    "_Static_assert(sizeof(CUdeviceptr) == sizeof(uint64_t), \"CUdeviceptr\");\n"
    "_Static_assert(sizeof(CUstream) == sizeof(void *), \"CUstream\");\n"
    "_Static_assert(sizeof(CUgraph) == sizeof(void *), \"CUgraph\");\n"
    "_Static_assert(sizeof(CUgraphExec) == sizeof(void *), \"CUgraphExec\");\n"
    "#define SAME(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #theirs);\n"
    "SAME(XR_GPU_CAPTURE_MODE_THREAD_LOCAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)\n"
    "SAME(XR_GPU_ERROR_STREAM_CAPTURE_FIRST, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)\n"
    "SAME(XR_GPU_ERROR_STREAM_CAPTURE_LAST, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)\n";

/* Without any vendor header: each row's prototype in our plain types is the field's type in
 * gpu_symbols.h, and every field has a row (`theirs_<field>` must exist). */
static const char ours_check[] =
    "#include <stddef.h>\n"
    "#include <stdint.h>\n"
    "#include \"hal/drivers/gpu/gpu_symbols.h\"\n" ABSTRACT_TABLE
    "#define RESULT int\n"
    "#define DEVICE int\n"
    "#define ATTRIBUTE int\n"
    "#define DEVPTR uint64_t\n"
    "#define STREAM void *\n"
    "#define EVENT void *\n"
    "#define MODULE void *\n"
    "#define FUNCTION void *\n"
    "#define GRAPH void *\n"
    "#define GRAPH_EXEC void *\n"
    "#define CAPTURE_MODE int\n"
    "#define OURS(need, ret, field, params, cuda, hip) typedef ret (*ours_##field) params;\n"
    "XR_GPU_SYMBOLS(OURS)\n"
    "#define THEIRS(field, symbol, params) RESULT (*theirs_##field) params = (ours_##field)0;\n"
    "ABI_ROWS(THEIRS)\n"
    "#define COVERED(need, ret, field, params, cuda, hip) (void)theirs_##field;\n"
    "void covered(void);\n"
    "void covered(void) { XR_GPU_SYMBOLS(COVERED) }\n";

Test(gpu_symbols_abi, declarations_equal_cuda_h) {
  const char *include = cuda_include();
  if (!include) cr_skip_test("no cuda.h in $CUDA_HOME/include or /usr/local/cuda/include");
  char flags[600];
  snprintf(flags, sizeof flags, "-I%s", include);
  cr_assert_eq(compile(theirs_check, flags), 0,
               "our CUDA prototypes differ from %s/cuda.h (see the log)", include);
}

Test(gpu_symbols_abi, every_entry_has_a_checked_prototype) {
  cr_assert_eq(compile(ours_check, ""), 0,
               "gpu_symbols.h differs from the prototypes checked against cuda.h (see the log)");
}

/* The checks can fail: a wrong prototype against cuda.h, and a wrong one against ours. */
Test(gpu_symbols_abi, a_wrong_prototype_fails_either_check) {
  const char *include = cuda_include();
  if (include) {
    char flags[600];
    snprintf(flags, sizeof flags, "-I%s", include);
    cr_assert_neq(compile("#include <cuda.h>\n"
                          "CUresult (*wrong)(CUstream, int, int) = cuStreamBeginCapture_v2;\n",
                          flags),
                  0);
  }
  cr_assert_neq(compile("#include <stddef.h>\n#include <stdint.h>\n"
                        "#include \"hal/drivers/gpu/gpu_symbols.h\"\n"
                        "#define OURS(need, ret, field, params, cuda, hip) "
                        "typedef ret (*ours_##field) params;\n"
                        "XR_GPU_SYMBOLS(OURS)\n"
                        "int (*wrong)(void *, void *) = (ours_graph_instantiate)0;\n",
                        ""),
                0);
}

Test(gpu_symbols_abi, the_stub_libcuda_exports_every_name_we_load) {
  void *stub = dlopen(CUDA_STUB, RTLD_LAZY | RTLD_LOCAL);
  if (!stub) cr_skip_test("no CUDA toolkit stub at %s", CUDA_STUB);
  static const char *const names[] = {
#define CUDA_NAME(need, ret, field, params, cuda, hip) #cuda,
      XR_GPU_SYMBOLS(CUDA_NAME)
#undef CUDA_NAME
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    /* cuEventElapsedTime_v2 is CUDA 12.8+: a stub of an older toolkit may lack it. */
    if (strcmp(names[i], "cuEventElapsedTime_v2") == 0) continue;
    cr_expect_not_null(dlsym(stub, names[i]), "%s does not export %s", CUDA_STUB, names[i]);
  }
  dlclose(stub);
}
