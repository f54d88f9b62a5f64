/* The pool family's device argument block (kernels/pool.h's problem), by value to
 * kernels/opencl/pool.cl and kernels/gpu/pool.cu, filled by kernels/vision_device.c: the
 * upsampling scales precomputed in float, as PyTorch computes them. `in`, `out` and `kernel` are
 * reserved words in OpenCL C, hence in_size, out_size and window. */
#ifndef XR_KERNELS_POOL_ARGS_H
#define XR_KERNELS_POOL_ARGS_H

#include "view5_args.h"

#define XR_POOL_THREADS 128 /* per work-group / block */

/* xr_pool_kind_t (the host asserts they agree) */
#define XR_POOL_ARGS_MAX 0
#define XR_POOL_ARGS_MAX_BACKWARD 1
#define XR_POOL_ARGS_AVG 2
#define XR_POOL_ARGS_AVG_BACKWARD 3
#define XR_POOL_ARGS_ADAPTIVE_AVG 4
#define XR_POOL_ARGS_ADAPTIVE_AVG_BACKWARD 5
#define XR_POOL_ARGS_NEAREST 6
#define XR_POOL_ARGS_BILINEAR 7

typedef struct xr_pool_args {
  long kind;
  long total;    /* elements written: y's (forward) or x's (backward) */
  long planes_c; /* channels: a plane is (n, c) */
  long in_size[3], out_size[3], window[3], stride[3], pad[3], dilation[3]; /* d, h, w */
  long count_include_pad, align_corners, divisor;
  float src_scale[4]; /* d, h, w: upsampling's destination-to-source scale; [3] unused */
  xr_view5_args_t x, y, indices;
} xr_pool_args_t;

#endif
