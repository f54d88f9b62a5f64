/* The channel_norm family (kernels/channel_norm.c): the problem its analysis produces, shared by
 * the CPU reference and the device kernels (kernels/vision_device.c: OpenCL, CUDA and HIP).
 *
 * Operands are xr_view5_t slots (index -1: absent). Activations (x, grad, out) are n, c, d, h,
 * w; per-channel vectors (weight, bias, running and saved statistics, grad_weight, grad_bias)
 * are [C] on dim 1 (shape[1] = C, strides[1] their stride); group norm's statistics (mean,
 * rstd) are [N, groups] on dims 0 and 1. */
#ifndef XR_KERNELS_CHANNEL_NORM_H
#define XR_KERNELS_CHANNEL_NORM_H

#include "kernels/family.h"

typedef enum xr_cn_kind {
  XR_CN_BATCH = 0, /* statistics per channel over n and the spatial dims */
  XR_CN_BATCH_BACKWARD,
  XR_CN_GROUP, /* statistics per sample and group of channels */
  XR_CN_GROUP_BACKWARD,
} xr_cn_kind_t;

enum {
  XR_CN_X,    /* input */
  XR_CN_GRAD, /* backward: grad_output */
  XR_CN_WEIGHT,
  XR_CN_BIAS,
  XR_CN_RMEAN, /* batch norm's running statistics (written in training) */
  XR_CN_RVAR,
  XR_CN_SMEAN,    /* backward: the saved mean (group norm: mean [N, groups]) */
  XR_CN_SINV,     /* backward: the saved invstd (group norm: rstd) */
  XR_CN_OUT,      /* forward: the result; backward: grad_input */
  XR_CN_OUT_MEAN, /* forward: saved mean (group norm: [N, groups]) */
  XR_CN_OUT_INV,  /* forward: saved invstd / rstd */
  XR_CN_GRAD_W,
  XR_CN_GRAD_B,
  XR_CN_SLOTS
};

typedef struct xr_cn_problem {
  xr_cn_kind_t kind;
  bool training; /* batch norm: batch statistics (else the running ones) */
  double momentum, eps;
  int64_t n, c, spatial, groups;
  xr_view5_t v[XR_CN_SLOTS];
} xr_cn_problem_t;

extern const xr_kernel_impl_t xr_cpu_onednn_batch_norm_impl, xr_cpu_channel_norm_impl,
    xr_opencl_channel_norm_impl, xr_gpu_channel_norm_impl;

#endif
