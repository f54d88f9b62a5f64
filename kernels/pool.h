/* The pool family (kernels/pool.c): the problem its analysis produces, shared by the CPU
 * reference and the device kernels (kernels/vision_device.c: OpenCL, CUDA and HIP).
 *
 * Every op reads or writes two activations over the same planes (n, c): the input side `x`
 * (in[] spatial sizes) and the output side `y` (out[] sizes), both xr_view5_t with d, h, w last
 * (a 2-D op has d = 1). Forward ops read x and write y (and max pooling its int64 `indices`,
 * positions h * W + w in the input plane); the backward ops read y (grad_output) and write x
 * (grad_input), each grad_output cell spread over the input cells of its window. */
#ifndef XR_KERNELS_POOL_H
#define XR_KERNELS_POOL_H

#include "kernels/family.h"

typedef enum xr_pool_kind {
  XR_POOL_MAX = 0,
  XR_POOL_MAX_BACKWARD,
  XR_POOL_AVG,
  XR_POOL_AVG_BACKWARD,
  XR_POOL_ADAPTIVE_AVG,
  XR_POOL_ADAPTIVE_AVG_BACKWARD,
  XR_POOL_NEAREST,
  XR_POOL_BILINEAR,
} xr_pool_kind_t;

typedef struct xr_pool_problem {
  xr_pool_kind_t kind;
  int spatial;           /* 1, 2 or 3 */
  int64_t in[3], out[3]; /* d, h, w */
  int64_t kernel[3], stride[3], pad[3], dilation[3];
  bool ceil_mode, count_include_pad, align_corners;
  int64_t divisor; /* avg pooling's divisor_override; 0: none */
  double scale[3]; /* upsampling: > 0, the given scale factor of the dim */
  xr_view5_t x, y, indices;
} xr_pool_problem_t;

static inline bool xr_pool_is_backward(xr_pool_kind_t k) {
  return k == XR_POOL_MAX_BACKWARD || k == XR_POOL_AVG_BACKWARD ||
         k == XR_POOL_ADAPTIVE_AVG_BACKWARD;
}

static inline bool xr_pool_is_adaptive(xr_pool_kind_t k) {
  return k == XR_POOL_ADAPTIVE_AVG || k == XR_POOL_ADAPTIVE_AVG_BACKWARD;
}

/* Adaptive average pooling's cell i of `out` over `in`: [floor(i * in / out),
 * ceil((i + 1) * in / out)). */
static inline int64_t xr_pool_adaptive_start(int64_t i, int64_t in, int64_t out) {
  return i * in / out;
}
static inline int64_t xr_pool_adaptive_end(int64_t i, int64_t in, int64_t out) {
  return ((i + 1) * in + out - 1) / out;
}

/* Upsampling's destination-to-source scale of dim d, in float as PyTorch computes it
 * (area_pixel_compute_scale): (in - 1) / (out - 1) when `align` (bilinear's align_corners),
 * else 1 / scale_factor when one was given, else in / out. */
float xr_pool_source_scale(const xr_pool_problem_t *p, int d, bool align);

/* Nearest upsampling's source index of destination index i in dim d: min(floor(i * scale),
 * in - 1). */
int64_t xr_pool_nearest_source(const xr_pool_problem_t *p, int d, int64_t i);

/* Bilinear upsampling's two source indices in dim d for destination index o (src[1] ==
 * src[0] at the last row), and the weight of src[1]: PyTorch's float arithmetic. */
float xr_pool_linear_source(const xr_pool_problem_t *p, int d, int64_t o, int64_t *src);

/* The input cells [win[0], win[1]) x [win[2], win[3]) that average pooling's output cell (oh,
 * ow) averages (plain or adaptive, the backward kinds alike), and its divisor. */
double xr_pool_avg_window(const xr_pool_problem_t *p, int64_t oh, int64_t ow, int64_t *win);

extern const xr_kernel_impl_t xr_cpu_onednn_pool_impl, xr_cpu_pool_impl, xr_opencl_pool_impl,
    xr_gpu_pool_impl;

#endif
