/* The row families (softmax, layer norm, RMS norm, fused add + RMS norm: xr_rows_problem_t of
 * kernels/norm.h) and rotary embedding (xr_rotary_problem_t) as the GPU kernels
 * (kernels/gpu/norm.cu) receive them: by-value blocks shared by host C
 * (kernels/gpu/norm_gpu.c) and device C++, holding only long long, float and int. Offsets and
 * strides count elements; dtypes are XR_GPU_* codes (kernels/gpu/dtype_codes.h). */
#ifndef XR_KERNELS_GPU_NORM_PARAMS_H
#define XR_KERNELS_GPU_NORM_PARAMS_H

#define XR_ROWS_GPU_MAX_OUTER 8 /* row dims after merging (xr_rows_simplify) */
#define XR_ROWS_GPU_THREADS 256 /* one block per row, a multiple of every warp width */
#define XR_ROTARY_GPU_THREADS 128

/* Operand slots, in the order of kernels/norm.h's XR_ROWS_* (the host asserts they agree). */
#define XR_ROWS_GPU_X 0
#define XR_ROWS_GPU_OUT 1
#define XR_ROWS_GPU_RESIDUAL_IN 2
#define XR_ROWS_GPU_RESIDUAL_OUT 3
#define XR_ROWS_GPU_WEIGHT 4
#define XR_ROWS_GPU_BIAS 5
#define XR_ROWS_GPU_MEAN 6
#define XR_ROWS_GPU_RSTD 7
#define XR_ROWS_GPU_OPERANDS 8

/* One tensor as rows: element i of row r at offset + outer(r) + i * stride, outer(r)
 * decomposing r over the problem's shape with these outer strides. */
typedef struct xr_rows_gpu_view {
  long long offset, stride;
  long long outer[XR_ROWS_GPU_MAX_OUTER];
  int dtype, present;
} xr_rows_gpu_view_t;

typedef struct xr_rows_gpu_params {
  long long rows, n;
  long long shape[XR_ROWS_GPU_MAX_OUTER];
  xr_rows_gpu_view_t v[XR_ROWS_GPU_OPERANDS];
  float eps;
  int outer_rank;
  int cast_dtype; /* softmax: its input is rounded to this dtype first; 0: not */
  int fp32_sum;   /* add + RMS norm: normalise the fp32 sum, not the stored residual */
} xr_rows_gpu_params_t;

/* Tokens as [B, S] (1-D positions are [1, T] with outer strides 0). */
typedef struct xr_rotary_gpu_params {
  long long token_shape[2], pos_stride[2], q_token_stride[2], k_token_stride[2];
  long long pos_offset, q_offset, k_offset, cache_offset;
  long long q_head_stride, q_elem_stride, k_head_stride, k_elem_stride;
  long long num_heads, num_kv_heads, rot_dim, rope_dim_offset;
  long long cache_pos_stride, cache_elem_stride, max_position, tokens;
  int pos_is_int64, q_dtype, cache_dtype, is_neox, inverse, reserved;
} xr_rotary_gpu_params_t;

#endif
