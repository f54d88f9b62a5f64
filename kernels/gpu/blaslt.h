/* cuBLASLt (cuda) and hipBLASLt (hip), opened at run time with dlopen: no CUDA or ROCm header
 * is needed to build. The two libraries export the same functions under two prefixes
 * ("cublasLt", "hipblasLt") with different enum values and result structs, so one table
 * (XR_BLASLT_SYMBOLS) lists each function once with both names, every one REQUIRED, and each
 * vendor brings its constants (xr_blaslt_constants_t) and heuristic-result layout.
 *
 * kernels/gpu/blaslt_abi.h holds our own declarations of the few enums and structs used.
 *
 * Environment: XR_CUBLASLT_LIBRARY / XR_HIPBLASLT_LIBRARY is tried before the sonames; "off"
 * disables the library (our tiled kernel then serves every GEMM). */
#ifndef XR_KERNELS_GPU_BLASLT_H
#define XR_KERNELS_GPU_BLASLT_H

#include <stddef.h>
#include <stdint.h>

#include "base/dynload.h"
#include "base/status.h"
#include "kernels/gpu/blaslt_abi.h"

/* X(need, return type, field, parameters, cuBLASLt name, hipBLASLt name): the two-vendor list
 * style of base/dynload.h. Handles and descriptors are pointers; enums are passed as int (their
 * C ABI). */
#define XR_BLASLT_SYMBOLS(X)                                                                  \
  X(REQUIRED, int, create, (void **handle), cublasLtCreate, hipblasLtCreate)                    \
  X(REQUIRED, int, matmul_desc_create, (void **desc, int compute_type, int scale_type),         \
    cublasLtMatmulDescCreate, hipblasLtMatmulDescCreate)                                        \
  X(REQUIRED, int, matmul_desc_destroy, (void *desc), cublasLtMatmulDescDestroy,                \
    hipblasLtMatmulDescDestroy)                                                                 \
  X(REQUIRED, int, matmul_desc_set_attribute,                                                   \
    (void *desc, int attribute, const void *value, size_t size), cublasLtMatmulDescSetAttribute, \
    hipblasLtMatmulDescSetAttribute)                                                            \
  X(REQUIRED, int, matrix_layout_create,                                                        \
    (void **layout, int type, uint64_t rows, uint64_t cols, int64_t ld),                        \
    cublasLtMatrixLayoutCreate, hipblasLtMatrixLayoutCreate)                                    \
  X(REQUIRED, int, matrix_layout_destroy, (void *layout), cublasLtMatrixLayoutDestroy,          \
    hipblasLtMatrixLayoutDestroy)                                                               \
  X(REQUIRED, int, matrix_layout_set_attribute,                                                 \
    (void *layout, int attribute, const void *value, size_t size),                              \
    cublasLtMatrixLayoutSetAttribute, hipblasLtMatrixLayoutSetAttribute)                        \
  X(REQUIRED, int, preference_create, (void **preference), cublasLtMatmulPreferenceCreate,      \
    hipblasLtMatmulPreferenceCreate)                                                            \
  X(REQUIRED, int, preference_destroy, (void *preference), cublasLtMatmulPreferenceDestroy,     \
    hipblasLtMatmulPreferenceDestroy)                                                           \
  X(REQUIRED, int, preference_set_attribute,                                                    \
    (void *preference, int attribute, const void *value, size_t size),                          \
    cublasLtMatmulPreferenceSetAttribute, hipblasLtMatmulPreferenceSetAttribute)                \
  X(REQUIRED, int, algo_get_heuristic,                                                          \
    (void *handle, void *desc, void *a_layout, void *b_layout, void *c_layout, void *d_layout,  \
     void *preference, int requested, void *results, int *returned),                            \
    cublasLtMatmulAlgoGetHeuristic, hipblasLtMatmulAlgoGetHeuristic)                            \
  X(REQUIRED, int, matmul,                                                                      \
    (void *handle, void *desc, const void *alpha, const void *a, void *a_layout, const void *b, \
     void *b_layout, const void *beta, const void *c, void *c_layout, void *d, void *d_layout,  \
     const void *algo, void *workspace, size_t workspace_size, void *stream),                   \
    cublasLtMatmul, hipblasLtMatmul)                                                          \
  X(OPTIONAL, int, algo_config_get_attribute,                                                   \
    (const void *algo, int attribute, void *value, size_t size, size_t *written),               \
    cublasLtMatmulAlgoConfigGetAttribute, hipblasLtMatmulAlgoConfigGetAttribute)

typedef struct xr_blaslt_functions {
  XR_BLASLT_SYMBOLS(XR_DYNLOAD_FIELD)
} xr_blaslt_functions_t;

/* The vendor's values for what the GEMM uses. */
typedef struct xr_blaslt_constants {
  int op_n, op_t, compute_32f, r_32f, r_16f, r_16bf;
  int desc_transa, desc_transb, desc_epilogue, desc_bias_pointer, epilogue_bias;
  int desc_bias_data_type;   /* -1: the library's default (D's type) is left alone */
  int layout_batch_count, layout_strided_batch_offset;
  int pref_max_workspace_bytes;
  int pref_min_alignment[4]; /* A, B, C, D; -1 where the library has no such preference */
  size_t heuristic_size;     /* sizeof its heuristic result; the algo is its first member */
  size_t heuristic_workspace_offset, heuristic_state_offset;
} xr_blaslt_constants_t;

typedef enum xr_blaslt_vendor { XR_BLASLT_CUBLASLT = 0, XR_BLASLT_HIPBLASLT } xr_blaslt_vendor_t;

typedef struct xr_blaslt {
  const char *label;            /* "cuBLASLt", "hipBLASLt" */
  char path[512];               /* what loaded */
  xr_blaslt_functions_t fn;
  const xr_blaslt_constants_t *k;
  /* The one vendor-specific function each: cublasLtGetVersion (13.1.0 is 130100) and
   * hipblasLtGetVersion (0.7.0 is 700, major * 100000 + minor * 100 + patch). */
  size_t (*cublaslt_get_version)(void);
  int (*hipblaslt_get_version)(void *handle, int *version);
} xr_blaslt_t;

/* Loads the vendor's library once per process and resolves every function of the table.
 * UNAVAILABLE with every path tried ("cuBLASLt unavailable: libcublasLt.so.13: not found; ...")
 * or the missing symbol. Thread-safe. */
xr_status_t xr_blaslt_get(xr_blaslt_vendor_t vendor, const xr_blaslt_t **out_library);

/* The vendor's name for a status code ("CUBLAS_STATUS_NOT_SUPPORTED"). Never NULL. */
const char *xr_blaslt_status_name(const xr_blaslt_t *library, int status);

#endif
