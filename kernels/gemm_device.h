/* What the GEMM family's OpenCL implementations share (kernels/gemm_device.c: opencl.gemm_tiled;
 * kernels/opencl/gemm_clblast.c, which copies the addend with gemm.cl's xr_gemm_copy_addend
 * before CLBlast accumulates onto it): gemm.cl built for the device, the argument block and the
 * per-batch offset table gemm.cl's kernels read, and the operands' buffers. */
#ifndef XR_KERNELS_GEMM_DEVICE_H
#define XR_KERNELS_GEMM_DEVICE_H

#include "kernels/gemm.h"
#include "kernels/gemm_args.h"

typedef struct xr_gemm_cl {
  const xr_gemm_problem_t *p;
  xr_hal_executable_t *executable;
  xr_hal_buffer_t *batch_offsets;            /* int64 [batch][4]: A, B, C, out */
  int64_t *host_offsets;                     /* the same on the host */
  xr_hal_buffer_t *buffer[XR_GEMM_OPERANDS]; /* NULL when absent */
  xr_gemm_args_t args;
} xr_gemm_cl_t;

xr_status_t xr_gemm_cl_init(const xr_op_plan_t *plan, xr_hal_device_t *device,
                            const xr_tensor_t *tensors, xr_gemm_cl_t *out);
void xr_gemm_cl_release(xr_gemm_cl_t *cl);

#endif
