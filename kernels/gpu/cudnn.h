/* cuDNN (libcudnn.so.9 / .8) opened at run time with dlopen: no cuDNN header is needed to
 * build. Every function kernels/gpu/cudnn_conv.c calls is listed once below, in the list style
 * of base/dynload.h, every one REQUIRED: handles and descriptors are pointers, enums int (their
 * C ABI), the values in kernels/gpu/cudnn_abi.h. tests/gpu:cudnn_abi_test checks the list
 * against cudnn.h.
 *
 * Environment: XR_CUDNN_LIBRARY is tried before the sonames; "off" disables cuDNN (our own
 * kernel, gpu.conv, then runs every convolution). */
#ifndef XR_KERNELS_GPU_CUDNN_H
#define XR_KERNELS_GPU_CUDNN_H

#include <stddef.h>

#include "base/dynload.h"
#include "base/status.h"
#include "kernels/gpu/cudnn_abi.h"

#define XR_CUDNN_SYMBOLS(X)                                                                        \
  X(REQUIRED, size_t, cudnnGetVersion, (void))                                                     \
  X(REQUIRED, const char *, cudnnGetErrorString, (int status))                                     \
  X(REQUIRED, int, cudnnCreate, (void **handle))                                                   \
  X(REQUIRED, int, cudnnSetStream, (void *handle, void *stream))                                   \
  X(REQUIRED, int, cudnnCreateTensorDescriptor, (void **desc))                                     \
  X(REQUIRED, int, cudnnDestroyTensorDescriptor, (void *desc))                                     \
  X(REQUIRED, int, cudnnSetTensorNdDescriptor,                                                     \
    (void *desc, int dtype, int dims, const int *shape, const int *strides))                       \
  X(REQUIRED, int, cudnnCreateFilterDescriptor, (void **desc))                                     \
  X(REQUIRED, int, cudnnDestroyFilterDescriptor, (void *desc))                                     \
  X(REQUIRED, int, cudnnSetFilterNdDescriptor,                                                     \
    (void *desc, int dtype, int format, int dims, const int *shape))                               \
  X(REQUIRED, int, cudnnCreateConvolutionDescriptor, (void **desc))                                \
  X(REQUIRED, int, cudnnDestroyConvolutionDescriptor, (void *desc))                                \
  X(REQUIRED, int, cudnnSetConvolutionNdDescriptor,                                                \
    (void *desc, int spatial, const int *pad, const int *stride, const int *dilation, int mode,    \
     int compute_type))                                                                            \
  X(REQUIRED, int, cudnnSetConvolutionGroupCount, (void *desc, int groups))                        \
  X(REQUIRED, int, cudnnSetConvolutionMathType, (void *desc, int math_type))                       \
  X(REQUIRED, int, cudnnGetConvolutionNdForwardOutputDim,                                          \
    (const void *conv, const void *x, const void *w, int dims, int *shape))                        \
  X(REQUIRED, int, cudnnGetConvolutionForwardAlgorithm_v7,                                         \
    (void *handle, const void *x, const void *w, const void *conv, const void *y, int requested,   \
     int *returned, xr_cudnn_algo_perf_t *results))                                                \
  X(REQUIRED, int, cudnnGetConvolutionForwardWorkspaceSize,                                        \
    (void *handle, const void *x, const void *w, const void *conv, const void *y, int algo,        \
     size_t *bytes))                                                                               \
  X(REQUIRED, int, cudnnConvolutionForward,                                                        \
    (void *handle, const void *alpha, const void *x_desc, const void *x, const void *w_desc,       \
     const void *w, const void *conv, int algo, void *workspace, size_t workspace_bytes,           \
     const void *beta, const void *y_desc, void *y))                                               \
  X(REQUIRED, int, cudnnGetConvolutionBackwardDataAlgorithm_v7,                                    \
    (void *handle, const void *w, const void *dy, const void *conv, const void *dx, int requested, \
     int *returned, xr_cudnn_algo_perf_t *results))                                                \
  X(REQUIRED, int, cudnnGetConvolutionBackwardDataWorkspaceSize,                                   \
    (void *handle, const void *w, const void *dy, const void *conv, const void *dx, int algo,      \
     size_t *bytes))                                                                               \
  X(REQUIRED, int, cudnnConvolutionBackwardData,                                                   \
    (void *handle, const void *alpha, const void *w_desc, const void *w, const void *dy_desc,      \
     const void *dy, const void *conv, int algo, void *workspace, size_t workspace_bytes,          \
     const void *beta, const void *dx_desc, void *dx))                                             \
  X(REQUIRED, int, cudnnGetConvolutionBackwardFilterAlgorithm_v7,                                  \
    (void *handle, const void *x, const void *dy, const void *conv, const void *dw, int requested, \
     int *returned, xr_cudnn_algo_perf_t *results))                                                \
  X(REQUIRED, int, cudnnGetConvolutionBackwardFilterWorkspaceSize,                                 \
    (void *handle, const void *x, const void *dy, const void *conv, const void *dw, int algo,      \
     size_t *bytes))                                                                               \
  X(REQUIRED, int, cudnnConvolutionBackwardFilter,                                                 \
    (void *handle, const void *alpha, const void *x_desc, const void *x, const void *dy_desc,      \
     const void *dy, const void *conv, int algo, void *workspace, size_t workspace_bytes,          \
     const void *beta, const void *dw_desc, void *dw))                                             \
  X(REQUIRED, int, cudnnConvolutionBackwardBias,                                                   \
    (void *handle, const void *alpha, const void *dy_desc, const void *dy, const void *beta,       \
     const void *db_desc, void *db))                                                               \
  X(REQUIRED, int, cudnnAddTensor,                                                                 \
    (void *handle, const void *alpha, const void *a_desc, const void *a, const void *beta,         \
     const void *c_desc, void *c))

typedef struct xr_cudnn {
  XR_CUDNN_SYMBOLS(XR_DYNLOAD_FIELD)
  char path[512];   /* what loaded */
  char version[32]; /* "cuDNN 9.19.0" */
} xr_cudnn_t;

/* Loads cuDNN once per process and resolves every function of the table. UNAVAILABLE with
 * every path tried ("cuDNN unavailable: libcudnn.so.9: not found; ...") or the missing symbol.
 * Needs no GPU. Thread-safe. */
xr_status_t xr_cudnn_get(const xr_cudnn_t **out_cudnn);

#endif
