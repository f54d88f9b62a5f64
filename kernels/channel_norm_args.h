/* The channel_norm family's device argument block (kernels/channel_norm.h's problem), by value
 * to kernels/opencl/channel_norm.cl and kernels/gpu/channel_norm.cu, filled by
 * kernels/vision_device.c: one view per operand slot, in kernels/channel_norm.h's order (dtype
 * -1: absent). */
#ifndef XR_KERNELS_CHANNEL_NORM_ARGS_H
#define XR_KERNELS_CHANNEL_NORM_ARGS_H

#include "view5_args.h"

#define XR_CN_THREADS 256   /* per work-group / block: one group per statistic */
#define XR_CN_ARGS_SLOTS 13 /* XR_CN_SLOTS */

/* xr_cn_kind_t (the host asserts they agree) */
#define XR_CN_ARGS_BATCH 0
#define XR_CN_ARGS_BATCH_BACKWARD 1
#define XR_CN_ARGS_GROUP 2
#define XR_CN_ARGS_GROUP_BACKWARD 3

typedef struct xr_cn_args {
  long kind;
  long training;
  long n, c, groups;
  long size[3]; /* d, h, w of the activations */
  float eps, momentum;
  xr_view5_args_t v[XR_CN_ARGS_SLOTS];
} xr_cn_args_t;

#endif
