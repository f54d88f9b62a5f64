/* The convolution family (kernels/conv.c): the problem its analysis produces, shared by the CPU
 * reference, oneDNN (kernels/cpu/conv_onednn.c), the OpenCL and the CUDA/HIP kernels.
 *
 * Every op becomes up to three steps over one forward geometry, the convolution
 *   y[n, co, o] = sum over ci in co's group, kk: x[n, ci, o*stride - pad + kk*dilation]
 *                                                * w[co, ci - group_start, kk]
 * with x [n, c_in, in...], w [c_out, c_in/groups, k...], y [n, c_out, out...]:
 *   FORWARD          y  = conv(x, w) (+ bias[co])
 *   BACKWARD_DATA    x  = conv^T(y, w) (+ bias[ci]): the gradient of FORWARD w.r.t. x, which is
 *                    also what a transposed convolution computes
 *   BACKWARD_WEIGHT  w  = sum over n, o of y[n, co, o] * x[n, ci, o*stride - pad + kk*dilation]
 *   BIAS_GRAD        bias[c] = sum over n and positions of the tensor in the step's `y` slot
 * A step names which tensor plays each part; the one it writes is overwritten (no accumulate).
 * aten::convolution writes FORWARD, or BACKWARD_DATA when transposed (its weight, [c_in,
 * c_out/groups, k...], is then exactly w above with the roles of x and y exchanged);
 * aten::convolution_backward writes grad_input, grad_weight and grad_bias with the pass their
 * mask asks for: BACKWARD_DATA, BACKWARD_WEIGHT, BIAS_GRAD for a plain convolution, FORWARD,
 * BACKWARD_WEIGHT (x and y exchanged), BIAS_GRAD for a transposed one.
 *
 * Shapes are canonical: three spatial dims (D, H, W), a 1-D or 2-D convolution's leading ones
 * of size 1 (stride 0 in every operand, kernel 1, stride 1, pad 0, dilation 1); an unbatched
 * input has n = 1. Operand strides are in elements, in the order n, c, d, h, w (weights: co,
 * ci, kd, kh, kw), and may be anything the bundle recorded (channels-last included). */
#ifndef XR_KERNELS_CONV_H
#define XR_KERNELS_CONV_H

#include "kernels/family.h"

typedef enum xr_conv_pass {
  XR_CONV_FORWARD = 0,
  XR_CONV_BACKWARD_DATA,
  XR_CONV_BACKWARD_WEIGHT,
  XR_CONV_BIAS_GRAD,
} xr_conv_pass_t;

/* n, c, d, h, w; weights: co, ci per group, kd, kh, kw; bias: c. */
typedef xr_view5_t xr_conv_operand_t;

typedef struct xr_conv_step {
  xr_conv_pass_t pass;
  /* The parts: for BIAS_GRAD, `y` is the summed tensor and `bias` the result. */
  xr_conv_operand_t x, w, y;
  xr_conv_operand_t
      bias; /* FORWARD: added to y's channels; BACKWARD_DATA: to x's; index -1: none */
} xr_conv_step_t;

typedef struct xr_conv_problem {
  int spatial; /* 1, 2 or 3 as traced */
  int64_t n, groups, c_in, c_out;
  int64_t in[3], out[3], kernel[3], stride[3], pad[3], dilation[3];
  int step_count;
  xr_conv_step_t steps[3];
} xr_conv_problem_t;

/* The storage offset (without the tensor's own offset) of element (i0..i4) of an operand. */
static inline int64_t xr_conv_offset(const xr_conv_operand_t *o, int64_t i0, int64_t i1, int64_t i2,
                                     int64_t i3, int64_t i4) {
  return i0 * o->strides[0] + i1 * o->strides[1] + i2 * o->strides[2] + i3 * o->strides[3] +
         i4 * o->strides[4];
}

/* The multiply-adds of one FORWARD, BACKWARD_DATA or BACKWARD_WEIGHT step (all three are the
 * same sum): n * c_out * out positions * (c_in / groups) * kernel positions. */
double xr_conv_macs(const xr_conv_problem_t *p);

/* Implementations other files provide, listed in the family's table. */
extern const xr_kernel_impl_t xr_cpu_conv_onednn_impl, xr_cpu_conv_impl,
    xr_opencl_conv_clblast_impl, xr_opencl_conv_impl, xr_cuda_cudnn_conv_impl,
    xr_hip_miopen_conv_impl, xr_gpu_conv_impl;

#endif
