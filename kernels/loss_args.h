/* The loss family's device argument block (xr_loss_problem_t of kernels/loss.h), by value to
 * the kernels of kernels/opencl/loss.cl and kernels/gpu/loss.cu (same names, same arguments:
 * self, target, grad_output, out, this block), filled by kernels/loss_device.c. Shared by host
 * C, OpenCL C and CUDA/HIP C++: `long` fields first (view5_args.h), then ints, then floats.
 * Operand slots 0 self, 1 target, 2 grad_output (backward), 3 the result; offsets and strides
 * count elements (stride 0 where an operand broadcasts); dtypes are xr_dtype_t codes. */
#ifndef XR_KERNELS_LOSS_ARGS_H
#define XR_KERNELS_LOSS_ARGS_H

#define XR_LOSS_DEV_DIMS 8     /* iteration dims the kernels walk */
#define XR_LOSS_DEV_THREADS 256 /* work-group / block width of both kernels */

typedef struct xr_loss_dev_args {
  long shape[XR_LOSS_DEV_DIMS];
  long strides[4][XR_LOSS_DEV_DIMS];
  long offset[4];
  long rank, numel;
  int dtype[4];
  int backward, reduction; /* reduction: 0 none, 1 mean, 2 sum (xr_loss_reduction_t) */
  float norm, reserved;    /* backward: 2 / N (mean) or 2 */
} xr_loss_dev_args_t;

#endif
