/* The GEMM family's parsed problem, shared by its implementations (ref, cpu, opencl, gpu). */
#ifndef XR_KERNELS_GEMM_H
#define XR_KERNELS_GEMM_H

#include "kernels/kernels.h"

/* One operand addressed as [batch...][row][col] through strides (elements; 0 = broadcast). */
typedef struct xr_gemm_operand {
  int index;                          /* binding index; -1 when absent (C) */
  int64_t batch_strides[XR_MAX_RANK];
  int64_t row_stride, col_stride;
} xr_gemm_operand_t;

/* out[b][m][n] = alpha * sum_k a[b][m][k] * b[b][k][n] + beta * c[b][m][n] */
typedef struct xr_gemm_problem {
  int batch_rank;
  int64_t batch_shape[XR_MAX_RANK];
  int64_t batch;                      /* product of batch_shape */
  int64_t M, N, K;
  xr_gemm_operand_t a, b, c, out;     /* a: [M, K], b: [K, N], c and out: [M, N] */
  double alpha, beta;
  xr_dtype_t a_dtype, b_dtype, out_dtype;
  int out_rank;
} xr_gemm_problem_t;

/* Offset (elements) of batch entry `batch` (row-major over batch_shape) in operand o. */
int64_t xr_gemm_offset(const xr_gemm_operand_t *o, const xr_gemm_problem_t *p, int64_t batch);

#endif
