/* The loss family: aten::mse_loss (reduction none, mean, sum) and aten::mse_loss_backward, as
 * torch computes them. The problem kernels/loss.c's planning produces, read by its plain-C
 * reference, the fast CPU kernel (kernels/cpu/loss_cpu.c), and the OpenCL and CUDA/HIP kernels
 * (kernels/loss_device.c, which fills kernels/loss_args.h's block).
 *
 * Geometry. One iteration shape (row-major, `rank` dims): mse_loss's is self and target
 * broadcast together, mse_loss_backward's is self's (grad_output and target broadcast to it,
 * as torch's TensorIterator does). Each operand is read through its own strides over that
 * shape (0 where it broadcasts); the result is written through out_strides (a new contiguous
 * tensor, or the out= / grad_input= tensor), or, reduced, is one 0-d element.
 *
 * Semantics (torch's, each result rounded once to the result dtype):
 *   - mse_loss: d = self - target; none: d^2 per element; sum: sum(d^2); mean: sum(d^2) / N,
 *     N the broadcast element count (an empty mean is NaN, an empty sum 0). The result dtype is
 *     self's and target's promoted together; floating dtypes only, as torch.
 *   - mse_loss_backward: grad_input = norm * (self - target) * grad_output with norm 2 / N for
 *     mean (N = self's element count) and 2 otherwise; grad_output is 0-d for mean and sum,
 *     self's shape for none (any shape broadcasting to self's is taken). All three tensors of
 *     one floating dtype, as torch requires.
 * Thread-safety: as every family (kernels/kernels.h). */
#ifndef XR_KERNELS_LOSS_H
#define XR_KERNELS_LOSS_H

#include "kernels/family.h"

/* torch's at::Reduction codes, which the `reduction` argument holds. */
typedef enum xr_loss_reduction {
  XR_LOSS_NONE = 0,
  XR_LOSS_MEAN = 1,
  XR_LOSS_SUM = 2,
} xr_loss_reduction_t;

/* Operand slots. */
enum { XR_LOSS_SELF = 0, XR_LOSS_TARGET = 1, XR_LOSS_GRAD = 2, XR_LOSS_OPERANDS = 3 };

typedef struct xr_loss_operand {
  int index;                    /* binding index; -1 when absent (grad_output of the forward) */
  xr_dtype_t dtype;
  int64_t strides[XR_MAX_RANK]; /* elements over the iteration shape; 0 where it broadcasts */
} xr_loss_operand_t;

typedef struct xr_loss_problem {
  bool backward;
  xr_loss_reduction_t reduction;
  int rank;
  int64_t shape[XR_MAX_RANK];
  int64_t numel;                /* of the iteration shape */
  xr_loss_operand_t in[XR_LOSS_OPERANDS];
  xr_loss_operand_t out;        /* strides unused when reduced (one element) */
  double norm;                  /* backward: 2 / N (mean) or 2 */
} xr_loss_problem_t;

/* Whether the result is one reduced element (mse_loss with mean or sum). */
static inline bool xr_loss_reduced(const xr_loss_problem_t *p) {
  return !p->backward && p->reduction != XR_LOSS_NONE;
}

/* The storage offset (elements, without the tensor's own offset) of iteration element `linear`
 * (row-major) through `strides`. */
static inline int64_t xr_loss_offset(const xr_loss_problem_t *p, const int64_t *strides,
                                     int64_t linear) {
  int64_t off = 0;
  for (int d = p->rank - 1; d >= 0; d--) {
    off += (linear % p->shape[d]) * strides[d];
    linear /= p->shape[d];
  }
  return off;
}

extern const xr_kernel_impl_t xr_cpu_loss;    /* kernels/cpu/loss_cpu.c */
extern const xr_kernel_impl_t xr_opencl_loss; /* kernels/loss_device.c */
extern const xr_kernel_impl_t xr_gpu_loss;    /* kernels/loss_device.c */

#endif
