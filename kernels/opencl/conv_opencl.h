/* What opencl.conv (conv_opencl.c) and opencl.conv_clblast (conv_clblast.c) share: conv.cl's
 * by-value argument struct (all 64-bit fields, in conv.cl's order) and its dispatch. */
#ifndef XR_KERNELS_OPENCL_CONV_OPENCL_H
#define XR_KERNELS_OPENCL_CONV_OPENCL_H

#include "kernels/conv.h"

enum { XR_CONV_CL_WG = 64 }; /* XR_CONV_WG in conv.cl */

typedef struct cl_operand {
  int64_t offset, dtype;
  int64_t shape[5], strides[5];
} cl_operand_t;

typedef struct xr_conv_cl_args {
  int64_t n, groups, c_in, c_out;
  int64_t in_size[3], out_size[3], window[3], stride[3], pad[3], dilation[3];
  int64_t total, has_bias; /* elements the step writes */
  cl_operand_t x, w, y, bias;
} xr_conv_cl_args_t;

/* The operand step `s` writes (one work-item per element) and its element count. */
const xr_conv_operand_t *xr_conv_cl_written(const xr_conv_step_t *s);
int64_t xr_conv_cl_elements(const xr_conv_operand_t *o);

/* The arguments of `step` and its buffers (x, w, y, bias; an absent one: any bound buffer). */
void xr_conv_cl_args(const xr_conv_problem_t *p, const xr_conv_step_t *step,
                     const xr_tensor_t *tensors, xr_conv_cl_args_t *a, xr_hal_buffer_t **buffers);

/* Dispatches one of conv.cl's kernels over a->total elements. */
xr_status_t xr_conv_cl_dispatch(xr_hal_stream_t *stream, xr_hal_kernel_t *kernel,
                                const xr_conv_cl_args_t *a, xr_hal_buffer_t *const *buffers);

#endif
