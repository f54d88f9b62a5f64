/* A tensor as five dims (n, c, d, h, w: kernels/family.h's xr_view5_t) inside the by-value
 * argument blocks of the vision families' device kernels (pool_args.h, channel_norm_args.h).
 * These headers are shared by host C, OpenCL C (kernels/opencl/ *.cl) and CUDA/HIP C++
 * (kernels/gpu/ *.cu): every integer field is a `long`, 64-bit in OpenCL C and, on the LP64
 * hosts we build for, in C and CUDA C++ (kernels/vision_device.c asserts it), so all three lay
 * the blocks out alike. Offsets and strides count elements; dtypes are xr_dtype_t codes. */
#ifndef XR_KERNELS_VIEW5_ARGS_H
#define XR_KERNELS_VIEW5_ARGS_H

typedef struct xr_view5_args {
  long offset; /* elements from the buffer's start */
  long dtype;  /* -1: absent */
  long strides[5];
} xr_view5_args_t;

#endif
