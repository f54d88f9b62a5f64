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

/* A per-row (scale_a) or per-column (scale_b) float32 multiplier of _scaled_mm, or (block > 0)
 * the block scales of a block-scaled _scaled_mm: row r of A (column r of B) has its K elements'
 * scales at r * stride + k / block, one byte each (e8m0 or e4m3fn, see scale_dtype). */
typedef struct xr_gemm_scale {
  int index;                          /* binding index; -1 when absent (1.0) */
  int64_t stride;                     /* elements between consecutive rows / columns; 0: one value */
} xr_gemm_scale_t;

/* out[b][m][n] = result_scale * (alpha * scale_a[m] * scale_b[n] * sum_k a[b][m][k] * b[b][k][n]
 *                                + beta * c[b][m][n])
 * The scales are 1 except for aten::_scaled_mm, whose C is its bias. Block-scaled _scaled_mm
 * (block > 0: mxfp8, mxfp4, nvfp4) scales inside the sum instead:
 *   sum_k (a[m][k] * scale_a[m][k / block]) * (b[k][n] * scale_b[n][k / block]),
 * and its row/column scale factors are 1. f4e2m1x2 operands hold two e2m1 codes per byte along
 * K, the lower k in the low nibble: element (m, k) of A is nibble k % 2 of the byte at
 * m * row_stride + (k / 2) * col_stride, element (k, n) of B of the byte at
 * (k / 2) * row_stride + n * col_stride; K counts elements (twice the bytes). */
typedef struct xr_gemm_problem {
  int batch_rank;
  int64_t batch_shape[XR_MAX_RANK];
  int64_t batch;                      /* product of batch_shape */
  int64_t M, N, K;
  xr_gemm_operand_t a, b, c, out;     /* a: [M, K], b: [K, N], c and out: [M, N] */
  double alpha, beta;
  xr_dtype_t a_dtype, b_dtype, c_dtype, out_dtype;
  int out_rank;
  xr_gemm_scale_t scale_a, scale_b;
  int scale_result;                   /* binding index of a float32 scalar, or -1 */
  /* Block-scaled _scaled_mm: K elements per scale (32: mxfp8, mxfp4; 16: nvfp4), 0 otherwise;
   * the scales' dtype (XR_DTYPE_F8E8M0, or XR_DTYPE_F8E4M3FN for nvfp4). a_dtype and b_dtype
   * are both fp8 (mxfp8) or both XR_DTYPE_F4E2M1X2. */
  int block;
  xr_dtype_t scale_dtype;
} xr_gemm_problem_t;

/* The operands by role, for implementations that bind them. */
enum {
  XR_GEMM_A = 0,
  XR_GEMM_B,
  XR_GEMM_C,            /* absent when beta is 0: PyTorch then ignores C, NaNs included */
  XR_GEMM_OUT,
  XR_GEMM_SCALE_A,
  XR_GEMM_SCALE_B,
  XR_GEMM_SCALE_RESULT,
  XR_GEMM_OPERANDS
};

/* Binding index of every operand (-1 when absent). */
void xr_gemm_bindings(const xr_gemm_problem_t *p, int out_index[XR_GEMM_OPERANDS]);

/* Implementations, most preferred first (kernels/cpu/, kernels/opencl/). */
extern const xr_kernel_impl_t xr_gemm_onednn_impl;       /* cpu.onednn_matmul */
extern const xr_kernel_impl_t xr_gemm_cpu_blocked_impl;  /* cpu.gemm_blocked */
extern const xr_kernel_impl_t xr_gemm_clblast_impl;      /* opencl.clblast_gemm */
extern const xr_kernel_impl_t xr_gemm_opencl_tiled_impl; /* opencl.gemm_tiled */
extern const xr_kernel_impl_t xr_gemm_cublaslt_impl;     /* cuda.cublaslt_matmul (kernels/gpu/) */
extern const xr_kernel_impl_t xr_gemm_hipblaslt_impl;    /* hip.hipblaslt_matmul (kernels/gpu/) */
extern const xr_kernel_impl_t xr_gemm_gpu_impl;          /* gpu.gemm_tiled (kernels/gpu/) */

/* Whether the problem is a block-scaled _scaled_mm whose operands are f4e2m1x2 pairs. */
static inline bool xr_gemm_fp4(const xr_gemm_problem_t *p) {
  return p->block > 0 && p->a_dtype == XR_DTYPE_F4E2M1X2;
}

/* Offset (elements) of batch entry `batch` (row-major over batch_shape) in operand o. */
int64_t xr_gemm_offset(const xr_gemm_operand_t *o, const xr_gemm_problem_t *p, int64_t batch);

#endif
