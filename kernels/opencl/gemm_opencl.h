/* Shared by the GEMM family's OpenCL implementations (gemm_opencl.c: our tiled kernel;
 * gemm_clblast.c: CLBlast): the problem as gemm.cl's kernels take it. */
#ifndef XR_KERNELS_OPENCL_GEMM_OPENCL_H
#define XR_KERNELS_OPENCL_GEMM_OPENCL_H

#include "kernels/gemm.h"

/* gemm.cl's gemm_params, field for field (longs, then two floats: no padding anywhere). */
typedef struct xr_gemm_cl_params {
  int64_t a_off, a_rs, a_cs;
  int64_t b_off, b_rs, b_cs;
  int64_t c_off, c_rs, c_cs;
  int64_t o_off, o_rs, o_cs;
  int64_t sa_off, sa_stride, sb_off, sb_stride, sr_off;
  int64_t M, N, K;
  int64_t a_dt, b_dt, c_dt, o_dt;
  int64_t has_c, has_sa, has_sb, has_sr; /* has_sa / has_sb: row / column scale factors */
  int64_t blk, s_dt;                     /* block-scaled: K elements per scale, scales' dtype */
  float alpha, beta;
} xr_gemm_cl_params_t;

/* What both implementations bind: gemm.cl built for the device, the per-batch offsets on the
 * device, the kernel parameters and the operands' buffers. */
typedef struct xr_gemm_cl {
  const xr_gemm_problem_t *p;
  xr_hal_executable_t *executable;
  xr_hal_buffer_t *batch_offsets;          /* int64 [batch][4]: A, B, C, out */
  int64_t *host_offsets;                   /* the same on the host */
  xr_hal_buffer_t *buffer[XR_GEMM_OPERANDS]; /* NULL when absent */
  xr_gemm_cl_params_t params;
} xr_gemm_cl_t;

/* The dtype's code as gemm.cl receives it (xr_dtype_t's, kernels/opencl/dtype_codes.h), or -1
 * when gemm.cl cannot read it (f4e2m1x2 and f8e8m0 only as the operands and scales of
 * block-scaled products). */
int xr_gemm_cl_dtype(xr_dtype_t dtype);

xr_status_t xr_gemm_cl_init(const xr_op_plan_t *plan, xr_hal_device_t *device,
                            const xr_tensor_t *tensors, xr_gemm_cl_t *out);
void xr_gemm_cl_release(xr_gemm_cl_t *cl);

#endif
