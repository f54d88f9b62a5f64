/* The convolution family's device argument block (one step of kernels/conv.h's problem), by
 * value to kernels/opencl/conv.cl and kernels/gpu/conv.cu, filled by kernels/conv_device.c.
 * Shared by host C, OpenCL C and CUDA/HIP C++ with `long` fields only (see view5_args.h).
 * `in`, `out` and `kernel` are reserved words in OpenCL C, hence in_size, out_size, window. */
#ifndef XR_KERNELS_CONV_ARGS_H
#define XR_KERNELS_CONV_ARGS_H

#define XR_CONV_THREADS 64 /* per work-group / block: one work-item per element written */
/* The implicit-GEMM kernels of kernels/gpu/conv.cu: a TILE x TILE tile of the GEMM per block,
 * 4 x 4 elements per thread. */
#define XR_CONV_TILE 64
#define XR_CONV_GEMM_THREADS 256

typedef struct xr_conv_operand_args {
  long offset, dtype; /* elements; xr_dtype_t code */
  long shape[5], strides[5];
} xr_conv_operand_args_t;

typedef struct xr_conv_args {
  long n, groups, c_in, c_out;
  long in_size[3], out_size[3], window[3], stride[3], pad[3], dilation[3]; /* d, h, w */
  long total; /* elements the step writes */
  long has_bias;
  xr_conv_operand_args_t x, w, y, bias;
} xr_conv_args_t;

#endif
