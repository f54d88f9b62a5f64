/* The GEMM family's problem as the GPU kernels (kernels/gpu/gemm.cu) receive it: one by-value
 * argument shared by the host (C, kernels/gpu/gemm_gpu.c) and the device (CUDA/HIP C++), so
 * only types with the same size and alignment on both sides appear here (long long, float,
 * int). Offsets and strides count elements. */
#ifndef XR_KERNELS_GPU_GEMM_PARAMS_H
#define XR_KERNELS_GPU_GEMM_PARAMS_H

#define XR_GEMM_GPU_MAX_BATCH_RANK 16

typedef struct xr_gemm_gpu_operand {
  long long offset;                                 /* the view's first element */
  long long row_stride, col_stride;
  long long batch_strides[XR_GEMM_GPU_MAX_BATCH_RANK];
} xr_gemm_gpu_operand_t;

/* out[b][m][n] = alpha * sum_k a[b][m][k] * b[b][k][n] + beta * c[b][m][n] (c when has_c);
 * _scaled_mm multiplies the product by scale_a[m] * scale_b[n] and the sum by scale_result. */
typedef struct xr_gemm_gpu_params {
  long long M, N, K;
  long long batch;                                  /* product of batch_shape */
  long long batch_rank;
  long long batch_shape[XR_GEMM_GPU_MAX_BATCH_RANK];
  xr_gemm_gpu_operand_t a, b, c, out;
  /* aten::_scaled_mm (the *_scaled kernels): float32 scales per row of A and per column of B
   * (stride 0: one value), the result scale, and every dtype as an XR_GPU_* code
   * (kernels/gpu/dtype_codes.h). */
  long long scale_a_offset, scale_a_stride, scale_b_offset, scale_b_stride;
  long long scale_result_offset;
  int a_dtype, b_dtype, c_dtype, out_dtype;
  int has_scale_result;
  float alpha, beta;
  int has_c;
  /* Block-scaled _scaled_mm (the *_block kernels): K elements per scale (32, or 16 for nvfp4),
   * the scales' dtype (XR_GPU_F8E8M0 or XR_GPU_F8E4M3FN); scale_*_stride is then the scales'
   * row pitch, and a_dtype / b_dtype may be XR_GPU_F4E2M1X2 (two e2m1 codes per byte along K). */
  int block, scale_dtype;
} xr_gemm_gpu_params_t;

/* Tile of the tiled kernel: TILE_M x TILE_N outputs per block of 16 x 16 threads (4 x 4 per
 * thread), stepping TILE_K along K. */
#define XR_GEMM_TILE_M 64
#define XR_GEMM_TILE_N 64
#define XR_GEMM_TILE_K 16
#define XR_GEMM_THREADS_X 16
#define XR_GEMM_THREADS_Y 16
/* Threads per block of the M == 1 kernel: blockDim.x / warpSize outputs per block. */
#define XR_GEMV_THREADS 256

#endif
