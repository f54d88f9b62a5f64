/* The routing family's device argument block (kernels/routing.h's problem), by value to
 * kernels/opencl/routing.cl and kernels/gpu/routing.cu, filled by kernels/routing_device.c.
 * Shared by host C, OpenCL C and CUDA/HIP C++: `long` fields (view5_args.h). Offsets and strides
 * count elements; dtypes are xr_dtype_t codes. Results are contiguous, at offset 0. */
#ifndef XR_KERNELS_ROUTING_ARGS_H
#define XR_KERNELS_ROUTING_ARGS_H

/* SortTokens' block sizes: block_m = 16 << b for b < XR_ROUTING_BLOCK_SIZES (triton_kernels'
 * ExptData.block_ms on HIP: 16 ... 256), the rows of token_offs_pad and block_pid_map. */
#define XR_ROUTING_BLOCK_SIZES 5
#define XR_ROUTING_BLOCK_M_MIN 16

/* Work-items per group. */
#define XR_ROUTING_THREADS 64

typedef struct xr_routing_args {
  long rows, cols, k, words, tiles;
  long x_off, x_rs, x_cs, x_dtype, softmax;
  long scal_off, scal_rs, scal_cs, scal_esize, ids_off, ids_rs, ids_cs, ids_dtype;
} xr_routing_args_t;

#endif
