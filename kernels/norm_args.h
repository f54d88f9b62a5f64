/* The row families' (softmax, layer norm, RMS norm, fused add + RMS norm: xr_rows_problem_t of
 * kernels/norm.h) and rotary embedding's (xr_rotary_problem_t) device argument blocks, by value
 * to kernels/opencl/norm.cl, rotary.cl and kernels/gpu/norm.cu, filled by kernels/norm_device.c.
 * Shared by host C, OpenCL C and CUDA/HIP C++: every integer field is a `long` (view5_args.h),
 * the one float comes last with its pair. Offsets and strides count elements; dtypes are
 * xr_dtype_t codes. */
#ifndef XR_KERNELS_NORM_ARGS_H
#define XR_KERNELS_NORM_ARGS_H

#define XR_ROWS_MAX_OUTER 8 /* row dims after merging (xr_rows_simplify) */
/* One work-group / block per row (a multiple of every warp width), one per token. */
#define XR_ROWS_OPENCL_THREADS 128
#define XR_ROWS_GPU_THREADS 256
#define XR_ROTARY_OPENCL_THREADS 64
#define XR_ROTARY_GPU_THREADS 128

/* Operand slots, in the order of kernels/norm.h's XR_ROWS_* (norm_device.c asserts they agree),
 * and of the kernels' buffer arguments. */
#define XR_ROWS_ARG_X 0
#define XR_ROWS_ARG_OUT 1
#define XR_ROWS_ARG_RESIDUAL_IN 2
#define XR_ROWS_ARG_RESIDUAL_OUT 3
#define XR_ROWS_ARG_WEIGHT 4
#define XR_ROWS_ARG_BIAS 5
#define XR_ROWS_ARG_MEAN 6
#define XR_ROWS_ARG_RSTD 7
#define XR_ROWS_ARG_OPERANDS 8

/* One tensor as rows: element i of row r at offset + outer(r) + i * stride, outer(r)
 * decomposing r over the problem's shape with these outer strides. */
typedef struct xr_rows_view_args {
  long offset, stride, dtype, present;
  long outer[XR_ROWS_MAX_OUTER];
} xr_rows_view_args_t;

typedef struct xr_rows_args {
  long rows, n, outer_rank;
  long cast_dtype; /* softmax: its input is rounded to this dtype first; 0: not */
  long fp32_sum;   /* add + RMS norm: normalise the fp32 sum, not the stored residual */
  long shape[XR_ROWS_MAX_OUTER];
  xr_rows_view_args_t v[XR_ROWS_ARG_OPERANDS];
  float eps, unused;
} xr_rows_args_t;

/* Tokens as [B, S] (1-D positions are [1, T] with outer strides 0). */
typedef struct xr_rotary_args {
  long token_shape[2], pos_stride[2], q_token_stride[2], k_token_stride[2];
  long pos_offset, q_offset, k_offset, cache_offset;
  long q_head_stride, q_elem_stride, k_head_stride, k_elem_stride;
  long num_heads, num_kv_heads, rot_dim, rope_dim_offset;
  long cache_pos_stride, cache_elem_stride, max_position, tokens;
  long pos_is_int64, q_dtype, cache_dtype, is_neox, inverse;
} xr_rotary_args_t;

#endif
