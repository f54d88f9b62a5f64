/* The reduce family's device argument block (xr_reduce_problem_t of kernels/reduce.h), by value
 * to the kernels of kernels/opencl/reduce.cl and kernels/gpu/reduce.cu (same names, same
 * arguments: in, out0, out1, this block), filled by kernels/reduce_device.c. Shared by host C,
 * OpenCL C and CUDA/HIP C++: `long` fields first (view5_args.h), then ints, then the two floats.
 * Offsets and strides count elements; dtypes are xr_dtype_t codes; op and norm are
 * xr_reduce_op_t and xr_reduce_norm_kind_t values (reduce_device.c asserts the orders agree). */
#ifndef XR_KERNELS_REDUCE_ARGS_H
#define XR_KERNELS_REDUCE_ARGS_H

#define XR_REDUCE_DEV_DIMS 6       /* kept and reduced dims after merging */
#define XR_REDUCE_DEV_GROUP_MIN 128 /* reduced extents from which a group takes an output */
#define XR_REDUCE_DEV_TOPK_MAX 16  /* topk of rows too long to sort: candidates per thread */
/* Threads of a work-group / block (a multiple of every warp width), and the longest row one
 * sorts in local / shared memory (8-byte keys: 16 KiB on OpenCL, 32 KiB on CUDA/HIP). */
#define XR_REDUCE_OPENCL_THREADS 128
#define XR_REDUCE_OPENCL_SORT_MAX 2048
#define XR_REDUCE_GPU_THREADS 256
#define XR_REDUCE_GPU_SORT_MAX 4096

/* Op and norm codes, in the order of xr_reduce_op_t and xr_reduce_norm_kind_t. */
#define XR_REDUCE_DEV_SUM 0
#define XR_REDUCE_DEV_NANSUM 1
#define XR_REDUCE_DEV_MEAN 2
#define XR_REDUCE_DEV_PROD 3
#define XR_REDUCE_DEV_MAX 4
#define XR_REDUCE_DEV_MIN 5
#define XR_REDUCE_DEV_ALL 6
#define XR_REDUCE_DEV_ANY 7
#define XR_REDUCE_DEV_COUNT 8
#define XR_REDUCE_DEV_LSE 9
#define XR_REDUCE_DEV_VAR 10
#define XR_REDUCE_DEV_STD 11
#define XR_REDUCE_DEV_NORM 12
#define XR_REDUCE_DEV_CUMSUM 13
#define XR_REDUCE_DEV_CUMPROD 14
#define XR_REDUCE_DEV_SORT 15

#define XR_REDUCE_DEV_NORM_P 0
#define XR_REDUCE_DEV_NORM_1 1
#define XR_REDUCE_DEV_NORM_2 2
#define XR_REDUCE_DEV_NORM_INF 3
#define XR_REDUCE_DEV_NORM_NEG_INF 4
#define XR_REDUCE_DEV_NORM_0 5

typedef struct xr_reduce_dev_args {
  long outer_shape[XR_REDUCE_DEV_DIMS], in_outer[XR_REDUCE_DEV_DIMS];
  long out_outer[2][XR_REDUCE_DEV_DIMS];
  long red_shape[XR_REDUCE_DEV_DIMS], in_red[XR_REDUCE_DEV_DIMS];
  long outer_rank, red_rank, outer_numel, red_numel;
  long in_offset, out_offset[2], out_dim_stride[2];
  long k; /* sorts: positions written per row */
  int in_dtype;
  int round_dtype; /* elements rounded to it first (dtype= narrower than the input); 0 none */
  int out_dtype[2];
  int has_out[2];
  int op, norm, descending, reserved;
  float p, correction;
} xr_reduce_dev_args_t;

#endif
