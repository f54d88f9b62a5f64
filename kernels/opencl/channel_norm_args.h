/* channel_norm.cl's by-value argument block, shared by host C (channel_norm_opencl.c) and
 * OpenCL C: the channel_norm problem of kernels/channel_norm.h, one view per operand slot in
 * its order (dtype -1: absent). */
#ifndef XR_KERNELS_OPENCL_CHANNEL_NORM_ARGS_H
#define XR_KERNELS_OPENCL_CHANNEL_NORM_ARGS_H

#include "view5_args.h"

#define XR_CN_CL_WG 256   /* work-items per work-group: one group per statistic */
#define XR_CN_CL_SLOTS 13 /* XR_CN_SLOTS (the host asserts it) */

typedef struct xr_cn_cl_args {
  long kind; /* xr_cn_kind_t */
  long training;
  long n, c, groups;
  long size[3]; /* d, h, w of the activations */
  float eps, momentum;
  xr_cl_view5_t v[XR_CN_CL_SLOTS];
} xr_cn_cl_args_t;

#endif
