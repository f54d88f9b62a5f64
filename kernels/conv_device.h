/* What the convolution family's device implementations share (kernels/conv_device.c:
 * opencl.conv and gpu.conv; kernels/opencl/conv_clblast.c adds the bias after CLBlast): the
 * argument block of one step and its dispatch, one work-item per element the step writes. */
#ifndef XR_KERNELS_CONV_DEVICE_H
#define XR_KERNELS_CONV_DEVICE_H

#include "kernels/conv.h"
#include "kernels/conv_args.h"

/* The arguments of `step` and its buffers (x, w, y, bias; an absent one: any bound buffer). */
void xr_conv_device_args(const xr_conv_problem_t *p, const xr_conv_step_t *step,
                         const xr_tensor_t *tensors, xr_conv_args_t *a, xr_hal_buffer_t **buffers);

/* Dispatches one of conv.cl's / conv.cu's kernels over a->total elements. */
xr_status_t xr_conv_device_dispatch(xr_hal_stream_t *stream, xr_hal_kernel_t *kernel,
                                    const xr_conv_args_t *a, xr_hal_buffer_t *const *buffers);

#endif
