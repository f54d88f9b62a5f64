/* Loads cuBLASLt / hipBLASLt with dlopen through the table in blaslt.h, once per process, and
 * keeps one library handle per device (created on first use, kept for the process: handles are
 * light, and destroying one synchronises the device). */
#include "kernels/gpu/blaslt.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/vendor_libraries.h"

static const xr_blaslt_constants_t cublaslt_constants = {
    .op_n = XR_CUBLAS_OP_N,
    .op_t = XR_CUBLAS_OP_T,
    .compute_32f = XR_CUBLAS_COMPUTE_32F,
    .r_32f = XR_CUDA_R_32F,
    .r_16f = XR_CUDA_R_16F,
    .r_16bf = XR_CUDA_R_16BF,
    .desc_transa = XR_CUBLASLT_MATMUL_DESC_TRANSA,
    .desc_transb = XR_CUBLASLT_MATMUL_DESC_TRANSB,
    .desc_epilogue = XR_CUBLASLT_MATMUL_DESC_EPILOGUE,
    .desc_bias_pointer = XR_CUBLASLT_MATMUL_DESC_BIAS_POINTER,
    .epilogue_bias = XR_CUBLASLT_EPILOGUE_BIAS,
    .desc_bias_data_type = -1,
    .layout_batch_count = XR_CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
    .layout_strided_batch_offset = XR_CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
    .pref_max_workspace_bytes = XR_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
    .pref_min_alignment = {XR_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                           XR_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                           XR_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                           XR_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES},
    .heuristic_size = sizeof(xr_cublaslt_heuristic_t),
    .heuristic_workspace_offset = offsetof(xr_cublaslt_heuristic_t, workspace_size),
    .heuristic_state_offset = offsetof(xr_cublaslt_heuristic_t, state),
};

static const xr_blaslt_constants_t hipblaslt_constants = {
    .op_n = XR_HIPBLAS_OP_N,
    .op_t = XR_HIPBLAS_OP_T,
    .compute_32f = XR_HIPBLAS_COMPUTE_32F,
    .r_32f = XR_HIP_R_32F,
    .r_16f = XR_HIP_R_16F,
    .r_16bf = XR_HIP_R_16BF,
    .desc_transa = XR_HIPBLASLT_MATMUL_DESC_TRANSA,
    .desc_transb = XR_HIPBLASLT_MATMUL_DESC_TRANSB,
    .desc_epilogue = XR_HIPBLASLT_MATMUL_DESC_EPILOGUE,
    .desc_bias_pointer = XR_HIPBLASLT_MATMUL_DESC_BIAS_POINTER,
    .epilogue_bias = XR_HIPBLASLT_EPILOGUE_BIAS,
    /* hipBLASLt's default bias type depends on its version's kernel tables: say D's. */
    .desc_bias_data_type = XR_HIPBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
    .layout_batch_count = XR_HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
    .layout_strided_batch_offset = XR_HIPBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
    .pref_max_workspace_bytes = XR_HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
    .pref_min_alignment = {-1, -1, -1, -1},
    .heuristic_size = sizeof(xr_hipblaslt_heuristic_t),
    .heuristic_workspace_offset = offsetof(xr_hipblaslt_heuristic_t, workspace_size),
    .heuristic_state_offset = offsetof(xr_hipblaslt_heuristic_t, state),
};

#define CUBLASLT_SYMBOL(need, ret, field, params, cuda, hip) \
  XR_DYNLOAD_SYMBOL(xr_blaslt_functions_t, need, field, cuda)
#define HIPBLASLT_SYMBOL(need, ret, field, params, cuda, hip) \
  XR_DYNLOAD_SYMBOL(xr_blaslt_functions_t, need, field, hip)
static const xr_dynload_symbol_t cublaslt_symbols[] = {XR_BLASLT_SYMBOLS(CUBLASLT_SYMBOL)};
static const xr_dynload_symbol_t hipblaslt_symbols[] = {XR_BLASLT_SYMBOLS(HIPBLASLT_SYMBOL)};
#undef CUBLASLT_SYMBOL
#undef HIPBLASLT_SYMBOL
enum { SYMBOL_COUNT = sizeof cublaslt_symbols / sizeof cublaslt_symbols[0] };

typedef struct vendor {
  const xr_dynload_spec_t *spec;
  const xr_dynload_symbol_t *symbols;
  const char *version_symbol; /* the one function each vendor spells its own way */
  const xr_blaslt_constants_t *constants;
} vendor_t;

static const vendor_t vendors[] = {
    [XR_BLASLT_CUBLASLT] = {&xr_vendor_libraries[XR_VENDOR_LIBRARY_CUBLASLT], cublaslt_symbols,
                            "cublasLtGetVersion", &cublaslt_constants},
    [XR_BLASLT_HIPBLASLT] = {&xr_vendor_libraries[XR_VENDOR_LIBRARY_HIPBLASLT],
                             hipblaslt_symbols, "hipblasLtGetVersion", &hipblaslt_constants},
};

#define VENDOR_COUNT (sizeof vendors / sizeof vendors[0])

typedef struct loaded {
  pthread_once_t once;
  xr_status_t status;
  char reason[1536];
  xr_blaslt_t library;
} loaded_t;

static loaded_t loaded[VENDOR_COUNT] = {{.once = PTHREAD_ONCE_INIT}, {.once = PTHREAD_ONCE_INIT}};

static void load(xr_blaslt_vendor_t which) {
  const vendor_t *v = &vendors[which];
  loaded_t *l = &loaded[which];
  l->library.label = v->spec->label;
  l->library.k = v->constants;
  xr_dynload_library_t library;
  l->status = xr_dynload_open(v->spec, v->symbols, SYMBOL_COUNT, &l->library.fn, &library,
                              l->reason, sizeof l->reason);
  if (l->status != XR_OK) return;
  snprintf(l->library.path, sizeof l->library.path, "%s", library.path);
  void *version = xr_dynload_find(&library, v->version_symbol);
  if (!version) {
    xr_dynload_report_append(l->reason, sizeof l->reason, "missing required symbol %s",
                             v->version_symbol);
    xr_dynload_close(&library);
    l->status = XR_UNAVAILABLE;
    return;
  }
  if (which == XR_BLASLT_CUBLASLT) memcpy(&l->library.cublaslt_get_version, &version, sizeof version);
  else memcpy(&l->library.hipblaslt_get_version, &version, sizeof version);
  /* Loaded for the life of the process: handles and cached heuristics live in it. */
}

static void load_cublaslt(void) { load(XR_BLASLT_CUBLASLT); }
static void load_hipblaslt(void) { load(XR_BLASLT_HIPBLASLT); }

xr_status_t xr_blaslt_get(xr_blaslt_vendor_t vendor, const xr_blaslt_t **out_library) {
  if ((size_t)vendor >= VENDOR_COUNT || !out_library) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_blaslt_get: bad argument");
  }
  loaded_t *l = &loaded[vendor];
  pthread_once(&l->once, vendor == XR_BLASLT_CUBLASLT ? load_cublaslt : load_hipblaslt);
  if (l->status != XR_OK) {
    return xr_error(l->status, "%s unavailable: %s", vendors[vendor].spec->label, l->reason);
  }
  *out_library = &l->library;
  return XR_OK;
}

const char *xr_blaslt_status_name(const xr_blaslt_t *library, int status) {
  /* cublasStatus_t and hipblasStatus_t share no numbering past 0 and 1. */
  static const char *const cublas[] = {
      [0] = "CUBLAS_STATUS_SUCCESS",         [1] = "CUBLAS_STATUS_NOT_INITIALIZED",
      [3] = "CUBLAS_STATUS_ALLOC_FAILED",    [7] = "CUBLAS_STATUS_INVALID_VALUE",
      [8] = "CUBLAS_STATUS_ARCH_MISMATCH",   [11] = "CUBLAS_STATUS_MAPPING_ERROR",
      [13] = "CUBLAS_STATUS_EXECUTION_FAILED", [14] = "CUBLAS_STATUS_INTERNAL_ERROR",
      [15] = "CUBLAS_STATUS_NOT_SUPPORTED",  [16] = "CUBLAS_STATUS_LICENSE_ERROR"};
  static const char *const hipblas[] = {
      "HIPBLAS_STATUS_SUCCESS",          "HIPBLAS_STATUS_NOT_INITIALIZED",
      "HIPBLAS_STATUS_ALLOC_FAILED",     "HIPBLAS_STATUS_INVALID_VALUE",
      "HIPBLAS_STATUS_MAPPING_ERROR",    "HIPBLAS_STATUS_EXECUTION_FAILED",
      "HIPBLAS_STATUS_INTERNAL_ERROR",   "HIPBLAS_STATUS_NOT_SUPPORTED",
      "HIPBLAS_STATUS_ARCH_MISMATCH",    "HIPBLAS_STATUS_HANDLE_IS_NULLPTR",
      "HIPBLAS_STATUS_INVALID_ENUM",     "HIPBLAS_STATUS_UNKNOWN"};
  bool cuda = library && library->k == &cublaslt_constants;
  const char *const *names = cuda ? cublas : hipblas;
  size_t count = cuda ? sizeof cublas / sizeof cublas[0] : sizeof hipblas / sizeof hipblas[0];
  if (status >= 0 && (size_t)status < count && names[status]) return names[status];
  return cuda ? "cuBLAS status" : "hipBLAS status";
}
