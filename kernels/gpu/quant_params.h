/* The quant family's problem (kernels/quant.h) as the GPU kernels (kernels/gpu/quant.cu)
 * receive it: one by-value block shared by host C (kernels/gpu/quant_gpu.c) and device C++,
 * holding only long long, float and int. Offsets and strides count elements; dtypes are XR_GPU_*
 * codes (kernels/gpu/dtype_codes.h). */
#ifndef XR_KERNELS_GPU_QUANT_PARAMS_H
#define XR_KERNELS_GPU_QUANT_PARAMS_H

/* Threads per block (a multiple of every warp width) and columns per item of the static and
 * dynamic ops. */
#define XR_QUANT_GPU_THREADS 256
#define XR_QUANT_GPU_SEGMENT 8192

/* The ops (xr_quant_op_t). */
#define XR_QUANT_GPU_STATIC 0
#define XR_QUANT_GPU_DYNAMIC 1
#define XR_QUANT_GPU_PER_TOKEN 2

typedef struct xr_quant_gpu_params {
  long long rows, hidden, segments, items;
  long long in_off, in_rs, out_off, out_rs, scale_off, scale_si, scale_sj, group_m, group_n, ub_off;
  float fp8_max, min_scale;
  int op, in_dtype, out_dtype, grouped, has_ub;
  int reserved;
} xr_quant_gpu_params_t;

#endif
