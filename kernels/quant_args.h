/* The quant family's device argument block (kernels/quant.h's problem), by value to
 * kernels/opencl/quant.cl and kernels/gpu/quant.cu, filled by kernels/quant_device.c. Shared by
 * host C, OpenCL C and CUDA/HIP C++: `long` fields (view5_args.h), the two floats last. Offsets
 * and strides count elements; dtypes are xr_dtype_t codes. */
#ifndef XR_KERNELS_QUANT_ARGS_H
#define XR_KERNELS_QUANT_ARGS_H

/* Work-items per group (a multiple of every warp width) and columns per item of the static and
 * dynamic ops. */
#define XR_QUANT_OPENCL_THREADS 64
#define XR_QUANT_OPENCL_SEGMENT 4096
#define XR_QUANT_GPU_THREADS 256
#define XR_QUANT_GPU_SEGMENT 8192

/* The ops (xr_quant_op_t; quant_device.c asserts they agree). */
#define XR_QUANT_ARG_STATIC 0
#define XR_QUANT_ARG_DYNAMIC 1
#define XR_QUANT_ARG_PER_TOKEN 2

typedef struct xr_quant_args {
  long rows, hidden, segments, items;
  long in_off, in_rs, out_off, out_rs, scale_off, scale_si, scale_sj, group_m, group_n, ub_off;
  long op, in_dtype, out_dtype, grouped, has_ub;
  float fp8_max, min_scale;
} xr_quant_args_t;

#endif
