/* MIOpen (libMIOpen.so.1) opened at run time with dlopen: no ROCm header is needed to build.
 * Every function kernels/gpu/miopen_conv.c calls is listed once below, in the list style of
 * base/dynload.h, every one REQUIRED: handles and descriptors are pointers, enums int, the
 * values in kernels/gpu/miopen_abi.h. tests/gpu:miopen_abi_test checks the list against
 * miopen/miopen.h where ROCm is installed.
 *
 * Environment: XR_MIOPEN_LIBRARY is tried before the soname; "off" disables MIOpen (our own
 * kernel, gpu.conv, then runs every convolution on hip). */
#ifndef XR_KERNELS_GPU_MIOPEN_H
#define XR_KERNELS_GPU_MIOPEN_H

#include <stdbool.h>
#include <stddef.h>

#include "base/dynload.h"
#include "base/status.h"
#include "kernels/gpu/miopen_abi.h"

#define XR_MIOPEN_SYMBOLS(X)                                                                      \
  X(REQUIRED, int, miopenGetVersion, (size_t * major, size_t * minor, size_t * patch))            \
  X(REQUIRED, const char *, miopenGetErrorString, (int status))                                   \
  X(REQUIRED, int, miopenCreate, (void **handle))                                                 \
  X(REQUIRED, int, miopenSetStream, (void *handle, void *stream))                                 \
  X(REQUIRED, int, miopenCreateTensorDescriptor, (void **desc))                                   \
  X(REQUIRED, int, miopenDestroyTensorDescriptor, (void *desc))                                   \
  X(REQUIRED, int, miopenSetTensorDescriptor,                                                     \
    (void *desc, int dtype, int dims, const int *shape, const int *strides))                      \
  X(REQUIRED, int, miopenCreateConvolutionDescriptor, (void **desc))                              \
  X(REQUIRED, int, miopenDestroyConvolutionDescriptor, (void *desc))                              \
  X(REQUIRED, int, miopenInitConvolutionNdDescriptor,                                             \
    (void *desc, int spatial, const int *pad, const int *stride, const int *dilation, int mode))  \
  X(REQUIRED, int, miopenSetConvolutionGroupCount, (void *desc, int groups))                      \
  X(REQUIRED, int, miopenGetConvolutionNdForwardOutputDim,                                        \
    (void *conv, const void *x, const void *w, int *dims, int *shape))                            \
  X(REQUIRED, int, miopenConvolutionForwardGetWorkSpaceSize,                                      \
    (void *handle, const void *w, const void *x, const void *conv, const void *y, size_t *bytes)) \
  X(REQUIRED, int, miopenFindConvolutionForwardAlgorithm,                                         \
    (void *handle, const void *x_desc, const void *x, const void *w_desc, const void *w,          \
     const void *conv, const void *y_desc, void *y, int requested, int *returned,                 \
     xr_miopen_algo_perf_t *results, void *workspace, size_t workspace_bytes, bool exhaustive))   \
  X(REQUIRED, int, miopenConvolutionForward,                                                      \
    (void *handle, const void *alpha, const void *x_desc, const void *x, const void *w_desc,      \
     const void *w, const void *conv, int algo, const void *beta, const void *y_desc, void *y,    \
     void *workspace, size_t workspace_bytes))                                                    \
  X(REQUIRED, int, miopenConvolutionForwardBias,                                                  \
    (void *handle, const void *alpha, const void *b_desc, const void *b, const void *beta,        \
     const void *y_desc, void *y))                                                                \
  X(REQUIRED, int, miopenConvolutionBackwardDataGetWorkSpaceSize,                                 \
    (void *handle, const void *dy, const void *w, const void *conv, const void *dx,               \
     size_t *bytes))                                                                              \
  X(REQUIRED, int, miopenFindConvolutionBackwardDataAlgorithm,                                    \
    (void *handle, const void *dy_desc, const void *dy, const void *w_desc, const void *w,        \
     const void *conv, const void *dx_desc, void *dx, int requested, int *returned,               \
     xr_miopen_algo_perf_t *results, void *workspace, size_t workspace_bytes, bool exhaustive))   \
  X(REQUIRED, int, miopenConvolutionBackwardData,                                                 \
    (void *handle, const void *alpha, const void *dy_desc, const void *dy, const void *w_desc,    \
     const void *w, const void *conv, int algo, const void *beta, const void *dx_desc, void *dx,  \
     void *workspace, size_t workspace_bytes))                                                    \
  X(REQUIRED, int, miopenConvolutionBackwardWeightsGetWorkSpaceSize,                              \
    (void *handle, const void *dy, const void *x, const void *conv, const void *dw,               \
     size_t *bytes))                                                                              \
  X(REQUIRED, int, miopenFindConvolutionBackwardWeightsAlgorithm,                                 \
    (void *handle, const void *dy_desc, const void *dy, const void *x_desc, const void *x,        \
     const void *conv, const void *dw_desc, void *dw, int requested, int *returned,               \
     xr_miopen_algo_perf_t *results, void *workspace, size_t workspace_bytes, bool exhaustive))   \
  X(REQUIRED, int, miopenConvolutionBackwardWeights,                                              \
    (void *handle, const void *alpha, const void *dy_desc, const void *dy, const void *x_desc,    \
     const void *x, const void *conv, int algo, const void *beta, const void *dw_desc, void *dw,  \
     void *workspace, size_t workspace_bytes))                                                    \
  X(REQUIRED, int, miopenConvolutionBackwardBias,                                                 \
    (void *handle, const void *alpha, const void *dy_desc, const void *dy, const void *beta,      \
     const void *db_desc, void *db))

typedef struct xr_miopen {
  XR_MIOPEN_SYMBOLS(XR_DYNLOAD_FIELD)
  char path[512];   /* what loaded */
  char version[32]; /* "MIOpen 3.1.0" */
} xr_miopen_t;

/* Loads MIOpen once per process and resolves every function of the table. UNAVAILABLE with
 * every path tried or the missing symbol. Needs no GPU. Thread-safe. */
xr_status_t xr_miopen_get(const xr_miopen_t **out_miopen);

#endif
