/* pool.cl's by-value argument block, shared by host C (pool_opencl.c) and OpenCL C: the pool
 * problem of kernels/pool.h with the source-index scales of upsampling precomputed in float,
 * as PyTorch computes them. `in`, `out` and `kernel` are reserved words in OpenCL C, hence
 * in_size, out_size and window. */
#ifndef XR_KERNELS_OPENCL_POOL_ARGS_H
#define XR_KERNELS_OPENCL_POOL_ARGS_H

#include "view5_args.h"

#define XR_POOL_CL_WG 64 /* work-items per work-group */

typedef struct xr_pool_cl_args {
  long kind;     /* xr_pool_kind_t */
  long total;    /* elements written: y's (forward) or x's (backward) */
  long planes_c; /* channels: a plane is (n, c) */
  long in_size[3], out_size[3], window[3], stride[3], pad[3], dilation[3];
  long count_include_pad, align_corners, divisor;
  float src_scale[4]; /* d, h, w: upsampling's destination-to-source scale; [3] unused */
  xr_cl_view5_t x, y, indices;
} xr_pool_cl_args_t;

#endif
