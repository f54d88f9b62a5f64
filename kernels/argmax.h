/* aten::argmax's parsed problem, shared by its implementations (ref, cpu, opencl). */
#ifndef XR_KERNELS_ARGMAX_H
#define XR_KERNELS_ARGMAX_H

#include "kernels/kernels.h"

typedef struct xr_argmax_problem {
  int self, out;                      /* binding indices */
  xr_dtype_t dtype;
  int out_rank;                       /* the kept dims, iterated per output element */
  int64_t out_shape[XR_MAX_RANK], in_strides[XR_MAX_RANK];
  int red_rank;                       /* the reduced dims, walked row-major */
  int64_t red_shape[XR_MAX_RANK], red_strides[XR_MAX_RANK];
  int64_t out_numel, red_numel;
} xr_argmax_problem_t;

/* Offset (elements) of output element `out_index`'s first input, and of reduced position k. */
int64_t xr_argmax_input_offset(const xr_argmax_problem_t *p, int64_t out_index);
int64_t xr_argmax_reduced_offset(const xr_argmax_problem_t *p, int64_t k);

extern const xr_kernel_impl_t xr_cpu_argmax;    /* kernels/cpu/elementwise_argmax.c */
extern const xr_kernel_impl_t xr_opencl_argmax; /* kernels/elementwise_device.c */
extern const xr_kernel_impl_t xr_gpu_argmax;    /* kernels/elementwise_device.c */

#endif
