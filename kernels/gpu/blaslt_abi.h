/* Our own declarations of the cuBLASLt and hipBLASLt enums and structs kernels/gpu/blaslt.c
 * uses, so that no CUDA or ROCm header is needed to build. Self-contained (standard headers
 * only): tests/gpu:blaslt_abi_test compiles it next to the real cublasLt.h (where the CUDA
 * toolkit is installed) and static-asserts every value and struct layout equal. The hipBLASLt
 * values come from hipblaslt.h, hipblas-common.h and hip/library_types.h of ROCm 6 and 7
 * (hipDataType and hipblasComputeType_t; ROCm 5's hipBLASLt 0.x used other enums and is not
 * supported); Debian ships no hipBLASLt header to check them against. */
#ifndef XR_KERNELS_GPU_BLASLT_ABI_H
#define XR_KERNELS_GPU_BLASLT_ABI_H

#include <stddef.h>
#include <stdint.h>

/* cublas_api.h, library_types.h, cublasLt.h (CUDA 11.0 to 13.x). */
#define XR_CUBLAS_STATUS_SUCCESS 0
#define XR_CUBLAS_OP_N 0
#define XR_CUBLAS_OP_T 1
#define XR_CUBLAS_COMPUTE_32F 68
#define XR_CUDA_R_32F 0
#define XR_CUDA_R_16F 2
#define XR_CUDA_R_16BF 14
#define XR_CUBLASLT_MATMUL_DESC_TRANSA 3
#define XR_CUBLASLT_MATMUL_DESC_TRANSB 4
#define XR_CUBLASLT_MATMUL_DESC_EPILOGUE 7
#define XR_CUBLASLT_MATMUL_DESC_BIAS_POINTER 8
#define XR_CUBLASLT_EPILOGUE_BIAS 4
#define XR_CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT 5
#define XR_CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET 6
#define XR_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES 1
#define XR_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES 5
#define XR_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES 6
#define XR_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES 7
#define XR_CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES 8

/* cublasLtMatmulAlgoConfigGetAttribute's attributes: what the report says the algorithm is. */
#define XR_CUBLASLT_ALGO_CONFIG_ID 0
#define XR_CUBLASLT_ALGO_CONFIG_TILE_ID 1
#define XR_CUBLASLT_ALGO_CONFIG_SPLITK_NUM 2
#define XR_CUBLASLT_ALGO_CONFIG_STAGES_ID 6

typedef struct xr_cublaslt_algo {
  uint64_t data[8];
} xr_cublaslt_algo_t;

typedef struct xr_cublaslt_heuristic {
  xr_cublaslt_algo_t algo;
  size_t workspace_size;
  int state;
  float waves_count;
  int reserved[4];
} xr_cublaslt_heuristic_t;

/* hipblas-common.h, hip/library_types.h, hipblaslt.h (ROCm 6.0 to 7.x). */
#define XR_HIPBLAS_STATUS_SUCCESS 0
#define XR_HIPBLAS_OP_N 111
#define XR_HIPBLAS_OP_T 112
#define XR_HIPBLAS_COMPUTE_32F 2
#define XR_HIP_R_32F 0
#define XR_HIP_R_16F 2
#define XR_HIP_R_16BF 14
#define XR_HIPBLASLT_MATMUL_DESC_TRANSA 0
#define XR_HIPBLASLT_MATMUL_DESC_TRANSB 1
#define XR_HIPBLASLT_MATMUL_DESC_EPILOGUE 2
#define XR_HIPBLASLT_MATMUL_DESC_BIAS_POINTER 3
#define XR_HIPBLASLT_MATMUL_DESC_BIAS_DATA_TYPE 4
#define XR_HIPBLASLT_EPILOGUE_BIAS 4
#define XR_HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT 0
#define XR_HIPBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET 1
#define XR_HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES 1

typedef struct xr_hipblaslt_algo {
  uint8_t data[16];
  size_t max_workspace_bytes;
} xr_hipblaslt_algo_t;

typedef struct xr_hipblaslt_heuristic {
  xr_hipblaslt_algo_t algo;
  size_t workspace_size;
  int state;
  float waves_count;
  int reserved[4];
} xr_hipblaslt_heuristic_t;

#endif
