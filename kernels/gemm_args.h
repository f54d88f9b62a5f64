/* The GEMM family's device argument block (kernels/gemm.h's problem), by value to
 * kernels/opencl/gemm.cl and kernels/gpu/gemm.cu after their buffers, filled by
 * kernels/gemm_device.c. Shared by host C, OpenCL C and CUDA/HIP C++: `long` and `float` fields
 * only. Offsets and strides count elements; dtypes are xr_dtype_t codes. */
#ifndef XR_KERNELS_GEMM_ARGS_H
#define XR_KERNELS_GEMM_ARGS_H

#define XR_GEMM_MAX_BATCH_RANK 16

typedef struct xr_gemm_operand_args {
  long offset; /* the view's first element */
  long row_stride, col_stride;
  long batch_strides[XR_GEMM_MAX_BATCH_RANK]; /* CUDA's: OpenCL reads a per-batch offset table */
} xr_gemm_operand_args_t;

/* out[b][m][n] = alpha * sum_k a[b][m][k] * b[b][k][n] + beta * c[b][m][n] (c when has_c);
 * _scaled_mm multiplies the product by scale_a[m] * scale_b[n] and the sum by scale_result. */
typedef struct xr_gemm_args {
  long M, N, K;
  long batch; /* product of batch_shape */
  long batch_rank;
  long batch_shape[XR_GEMM_MAX_BATCH_RANK];
  xr_gemm_operand_args_t a, b, c, out;
  /* aten::_scaled_mm: float32 scales per row of A and per column of B (stride 0: one value)
   * and the result scale. */
  long scale_a_offset, scale_a_stride, scale_b_offset, scale_b_stride;
  long scale_result_offset;
  long a_dtype, b_dtype, c_dtype, out_dtype;
  long has_c, has_scale_a, has_scale_b, has_scale_result;
  /* Block-scaled _scaled_mm (block > 0): K elements per scale (32, or 16 for nvfp4), the
   * scales' dtype (f8e8m0 or f8e4m3fn); scale_*_stride is then the scales' row pitch, and
   * a_dtype / b_dtype may be f4e2m1x2 (two e2m1 codes per byte along K). */
  long block, scale_dtype;
  float alpha, beta;
} xr_gemm_args_t;

/* CUDA's tiled kernel: TILE_M x TILE_N outputs per block of 16 x 16 threads (4 x 4 per
 * thread), stepping TILE_K along K. OpenCL's: 64 x 64 per 16 x 16 work-group, K by 16. */
#define XR_GEMM_TILE_M 64
#define XR_GEMM_TILE_N 64
#define XR_GEMM_TILE_K 16
#define XR_GEMM_THREADS_X 16
#define XR_GEMM_THREADS_Y 16
/* Threads per block of CUDA's M == 1 kernel: blockDim.x / warpSize outputs per block. */
#define XR_GEMV_THREADS 256

#endif
