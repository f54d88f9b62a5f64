/* Our own declarations of the cuDNN enum values and the one struct kernels/gpu/cudnn_conv.c
 * uses, so that no cuDNN header is needed to build. Self-contained (standard headers only):
 * tests/gpu:cudnn_abi_test compiles it next to the real cudnn.h (where the CUDA toolkit ships
 * one) and static-asserts every value and the struct layout equal. cuDNN 8 and 9 share them
 * (the "legacy" convolution API, deprecated in 9 but exported by libcudnn.so.9). */
#ifndef XR_KERNELS_GPU_CUDNN_ABI_H
#define XR_KERNELS_GPU_CUDNN_ABI_H

#include <stddef.h>

#define XR_CUDNN_STATUS_SUCCESS 0
#define XR_CUDNN_DATA_FLOAT 0
#define XR_CUDNN_DATA_HALF 2
#define XR_CUDNN_DATA_BFLOAT16 9
#define XR_CUDNN_TENSOR_NCHW 0
#define XR_CUDNN_TENSOR_NHWC 1
#define XR_CUDNN_CROSS_CORRELATION 1
#define XR_CUDNN_DEFAULT_MATH 0
#define XR_CUDNN_TENSOR_OP_MATH 1
#define XR_CUDNN_DIM_MAX 8

/* cudnnConvolutionFwdAlgoPerf_t, and the BwdData / BwdFilter ones of the same layout. */
typedef struct xr_cudnn_algo_perf {
  int algo;
  int status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
} xr_cudnn_algo_perf_t;

#endif
