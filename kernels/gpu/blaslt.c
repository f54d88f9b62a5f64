/* Loads cuBLASLt / hipBLASLt with dlopen through the table in blaslt.h, once per process, and
 * keeps one library handle per device (created on first use, kept for the process: handles are
 * light, and destroying one synchronises the device). */
#include "kernels/gpu/blaslt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

typedef struct vendor {
  const char *label, *prefix, *env;
  const char *candidates[4];
  const char *version_symbol;
  const xr_blaslt_constants_t *constants;
} vendor_t;

static const vendor_t vendors[] = {
    [XR_BLASLT_CUBLASLT] = {"cuBLASLt", "cublasLt", "XR_CUBLASLT_LIBRARY",
                            {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", NULL},
                            "cublasLtGetVersion", &cublaslt_constants},
    [XR_BLASLT_HIPBLASLT] = {"hipBLASLt", "hipblasLt", "XR_HIPBLASLT_LIBRARY",
                             {"libhipblaslt.so.1", "libhipblaslt.so.0", NULL, NULL},
                             "hipblasLtGetVersion", &hipblaslt_constants},
};

#define VENDOR_COUNT (sizeof vendors / sizeof vendors[0])

typedef struct loaded {
  pthread_once_t once;
  xr_status_t status;
  char reason[1536];
  xr_blaslt_t library;
} loaded_t;

static loaded_t loaded[VENDOR_COUNT] = {{.once = PTHREAD_ONCE_INIT}, {.once = PTHREAD_ONCE_INIT}};

__attribute__((format(printf, 2, 3))) static void note(loaded_t *l, const char *fmt, ...) {
  size_t used = strlen(l->reason);
  if (used) used += (size_t)snprintf(l->reason + used, sizeof l->reason - used, "; ");
  if (used >= sizeof l->reason) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(l->reason + used, sizeof l->reason - used, fmt, ap);
  va_end(ap);
}

/* dlerror() starts with the path; "not found" reads better for the common case. */
static const char *open_error(void) {
  const char *message = dlerror();
  if (!message) return "unknown dlopen error";
  return strstr(message, "No such file or directory") ? "not found" : message;
}

static void *resolve(loaded_t *l, void *handle, const char *prefix, const char *suffix,
                     bool *missing) {
  char name[96];
  snprintf(name, sizeof name, "%s%s", prefix, suffix);
  void *symbol = dlsym(handle, name);
  if (!symbol) {
    note(l, "%s: missing required symbol %s", l->library.path, name);
    *missing = true;
  }
  return symbol;
}

static void load(xr_blaslt_vendor_t which) {
  const vendor_t *v = &vendors[which];
  loaded_t *l = &loaded[which];
  l->library.label = v->label;
  l->library.k = v->constants;
  const char *override = getenv(v->env);
  if (override && !strcmp(override, "off")) {
    l->status = XR_UNAVAILABLE;
    note(l, "%s=off disables it", v->env);
    return;
  }
  void *handle = NULL;
  if (override && override[0]) {
    handle = dlopen(override, RTLD_NOW | RTLD_LOCAL);
    if (handle) snprintf(l->library.path, sizeof l->library.path, "%s", override);
    else note(l, "%s=%s: %s", v->env, override, open_error());
  }
  for (size_t i = 0; !handle && v->candidates[i]; i++) {
    handle = dlopen(v->candidates[i], RTLD_NOW | RTLD_LOCAL);
    if (handle) snprintf(l->library.path, sizeof l->library.path, "%s", v->candidates[i]);
    else note(l, "%s: %s", v->candidates[i], open_error());
  }
  if (!handle) {
    l->status = XR_UNAVAILABLE;
    return;
  }
  bool missing = false;
#define XR_BLASLT_RESOLVE(field, suffix, ret, params) \
  *(void **)&l->library.fn.field = resolve(l, handle, v->prefix, #suffix, &missing);
  XR_BLASLT_FUNCTIONS(XR_BLASLT_RESOLVE)
#undef XR_BLASLT_RESOLVE
  void *version = resolve(l, handle, v->version_symbol, "", &missing);
  if (which == XR_BLASLT_CUBLASLT) *(void **)&l->library.cublaslt_get_version = version;
  else *(void **)&l->library.hipblaslt_get_version = version;
  if (missing) {
    dlclose(handle);
    l->status = XR_UNAVAILABLE;
    return;
  }
  /* Loaded for the life of the process: handles and cached heuristics live in it. */
  l->status = XR_OK;
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
    return xr_error(l->status, "%s unavailable: %s", vendors[vendor].label, l->reason);
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
