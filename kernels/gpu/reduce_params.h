/* The reduce family's problem (xr_reduce_problem_t of kernels/reduce.h) as the GPU kernels
 * (kernels/gpu/reduce.cu) receive it: one by-value block shared by host C
 * (kernels/gpu/reduce_gpu.c) and device C++, holding only long long, int and float. Offsets and
 * strides count elements; dtypes are XR_GPU_* codes (kernels/gpu/dtype_codes.h); op and norm are
 * xr_reduce_op_t and xr_reduce_norm_kind_t values (the host asserts the orders agree). */
#ifndef XR_KERNELS_GPU_REDUCE_PARAMS_H
#define XR_KERNELS_GPU_REDUCE_PARAMS_H

#define XR_REDUCE_GPU_THREADS 256   /* per block, a multiple of every warp width */
#define XR_REDUCE_GPU_MAX_DIMS 6    /* kept and reduced dims after merging */
#define XR_REDUCE_GPU_GROUP_MIN 128 /* reduced extents from which a block takes an output */
#define XR_REDUCE_GPU_SORT_MAX 4096 /* rows a block sorts in shared memory (32 KiB of keys) */
#define XR_REDUCE_GPU_TOPK_MAX 16   /* topk of longer rows: candidates per thread */

/* Op and norm codes, in the order of xr_reduce_op_t and xr_reduce_norm_kind_t. */
#define XR_REDUCE_GPU_SUM 0
#define XR_REDUCE_GPU_NANSUM 1
#define XR_REDUCE_GPU_MEAN 2
#define XR_REDUCE_GPU_PROD 3
#define XR_REDUCE_GPU_MAX 4
#define XR_REDUCE_GPU_MIN 5
#define XR_REDUCE_GPU_ALL 6
#define XR_REDUCE_GPU_ANY 7
#define XR_REDUCE_GPU_COUNT 8
#define XR_REDUCE_GPU_LSE 9
#define XR_REDUCE_GPU_VAR 10
#define XR_REDUCE_GPU_STD 11
#define XR_REDUCE_GPU_NORM 12
#define XR_REDUCE_GPU_CUMSUM 13
#define XR_REDUCE_GPU_CUMPROD 14
#define XR_REDUCE_GPU_SORT 15

#define XR_REDUCE_GPU_NORM_P 0
#define XR_REDUCE_GPU_NORM_1 1
#define XR_REDUCE_GPU_NORM_2 2
#define XR_REDUCE_GPU_NORM_INF 3
#define XR_REDUCE_GPU_NORM_NEG_INF 4
#define XR_REDUCE_GPU_NORM_0 5

typedef struct xr_reduce_gpu_params {
  long long outer_shape[XR_REDUCE_GPU_MAX_DIMS], in_outer[XR_REDUCE_GPU_MAX_DIMS];
  long long out_outer[2][XR_REDUCE_GPU_MAX_DIMS];
  long long red_shape[XR_REDUCE_GPU_MAX_DIMS], in_red[XR_REDUCE_GPU_MAX_DIMS];
  long long outer_rank, red_rank, outer_numel, red_numel;
  long long in_offset, out_offset[2], out_dim_stride[2];
  long long k;        /* sorts: positions written per row */
  int in_dtype;
  int round_dtype;    /* elements rounded to it first (dtype= narrower than the input); 0 none */
  int out_dtype[2];
  int has_out[2];
  int op, norm, descending, reserved;
  float p, correction;
} xr_reduce_gpu_params_t;

#endif
