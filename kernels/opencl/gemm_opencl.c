/* opencl.gemm_tiled: the GEMM family on our own OpenCL kernel (gemm.cl), for every layout and
 * dtype the family has except float64, block-scaled _scaled_mm included; the fallback behind
 * CLBlast. */
#include <stdlib.h>
#include <string.h>

#include "kernels/family.h"
#include "kernels/opencl/gemm_opencl.h"
#include "kernels/opencl/sources.h"

int xr_gemm_cl_dtype(xr_dtype_t dtype) {
  switch (dtype) {
    case XR_DTYPE_F32:
    case XR_DTYPE_F16:
    case XR_DTYPE_BF16:
    case XR_DTYPE_F8E4M3FN:
    case XR_DTYPE_F8E5M2:
    case XR_DTYPE_F8E4M3FNUZ:
    case XR_DTYPE_F8E5M2FNUZ:
    case XR_DTYPE_F4E2M1X2:
    case XR_DTYPE_F8E8M0: return (int)dtype;
    default: return -1;
  }
}

void xr_gemm_cl_release(xr_gemm_cl_t *cl) {
  xr_hal_buffer_free(cl->batch_offsets);
  xr_hal_executable_destroy(cl->executable);
  free(cl->host_offsets);
  memset(cl, 0, sizeof *cl);
}

xr_status_t xr_gemm_cl_init(const xr_op_plan_t *plan, xr_hal_device_t *device,
                            const xr_tensor_t *tensors, xr_gemm_cl_t *out) {
  const xr_gemm_problem_t *p = plan->problem;
  memset(out, 0, sizeof *out);
  out->p = p;
  int idx[XR_GEMM_OPERANDS];
  xr_gemm_bindings(p, idx);
  int64_t off[XR_GEMM_OPERANDS] = {0};
  for (int i = 0; i < XR_GEMM_OPERANDS; i++) {
    if (idx[i] < 0) continue;
    out->buffer[i] = tensors[idx[i]].buffer;
    off[i] = tensors[idx[i]].offset;
  }
  xr_gemm_cl_params_t *q = &out->params;
  *q = (xr_gemm_cl_params_t){
      .a_off = off[XR_GEMM_A], .a_rs = p->a.row_stride, .a_cs = p->a.col_stride,
      .b_off = off[XR_GEMM_B], .b_rs = p->b.row_stride, .b_cs = p->b.col_stride,
      .c_off = off[XR_GEMM_C], .c_rs = p->c.row_stride, .c_cs = p->c.col_stride,
      .o_off = off[XR_GEMM_OUT], .o_rs = p->out.row_stride, .o_cs = p->out.col_stride,
      .sa_off = off[XR_GEMM_SCALE_A], .sa_stride = p->scale_a.stride,
      .sb_off = off[XR_GEMM_SCALE_B], .sb_stride = p->scale_b.stride,
      .sr_off = off[XR_GEMM_SCALE_RESULT],
      .M = p->M, .N = p->N, .K = p->K,
      .a_dt = xr_gemm_cl_dtype(p->a_dtype), .b_dt = xr_gemm_cl_dtype(p->b_dtype),
      .c_dt = xr_gemm_cl_dtype(p->c_dtype), .o_dt = xr_gemm_cl_dtype(p->out_dtype),
      .has_c = out->buffer[XR_GEMM_C] != NULL,
      .has_sa = !p->block && out->buffer[XR_GEMM_SCALE_A] != NULL,
      .has_sb = !p->block && out->buffer[XR_GEMM_SCALE_B] != NULL,
      .has_sr = out->buffer[XR_GEMM_SCALE_RESULT] != NULL,
      .blk = p->block, .s_dt = p->block ? xr_gemm_cl_dtype(p->scale_dtype) : 0,
      .alpha = (float)p->alpha, .beta = (float)p->beta};
  size_t bytes = sizeof(int64_t) * 4 * (size_t)(p->batch ? p->batch : 1);
  out->host_offsets = calloc(1, bytes);
  if (!out->host_offsets) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory", plan->op->name);
  for (int64_t b = 0; b < p->batch; b++) {
    out->host_offsets[4 * b] = xr_gemm_offset(&p->a, p, b);
    out->host_offsets[4 * b + 1] = xr_gemm_offset(&p->b, p, b);
    out->host_offsets[4 * b + 2] = p->c.index >= 0 ? xr_gemm_offset(&p->c, p, b) : 0;
    out->host_offsets[4 * b + 3] = xr_gemm_offset(&p->out, p, b);
  }
  xr_status_t st = xr_hal_buffer_alloc(device, bytes, &out->batch_offsets);
  if (st == XR_OK) st = xr_hal_buffer_write(out->batch_offsets, 0, out->host_offsets, bytes);
  if (st == XR_OK) st = xr_opencl_build(device, "gemm.cl", NULL, &out->executable);
  if (st != XR_OK) {
    xr_gemm_cl_release(out);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */

#define TILE 64
#define LOCAL 16

typedef struct tiled_state {
  xr_gemm_cl_t cl;
  xr_hal_kernel_t *kernel;
} tiled_state_t;

static xr_status_t tiled_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_gemm_problem_t *p = plan->problem;
  xr_dtype_t dtypes[] = {p->a_dtype, p->b_dtype, p->c_dtype, p->out_dtype};
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (xr_gemm_cl_dtype(dtypes[i]) < 0)
      return xr_error(XR_UNIMPLEMENTED, "opencl.gemm_tiled: %s: %s operands are not supported",
                      plan->op->name, xr_dtype_name(dtypes[i]));
  if ((p->N + TILE - 1) / TILE > UINT32_MAX || (p->M + TILE - 1) / TILE > UINT32_MAX ||
      p->batch > UINT32_MAX)
    return xr_error(XR_UNIMPLEMENTED, "opencl.gemm_tiled: %s: grid too large", plan->op->name);
  return XR_OK;
}

static void tiled_release(void *state) {
  tiled_state_t *s = state;
  if (!s) return;
  xr_gemm_cl_release(&s->cl);
  free(s);
}

static xr_status_t tiled_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                 const xr_tensor_t *tensors, void **out_state) {
  tiled_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "opencl.gemm_tiled: out of memory");
  xr_status_t st = xr_gemm_cl_init(plan, device, tensors, &s->cl);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->cl.executable, "xr_gemm_tiled", &s->kernel);
  if (st != XR_OK) {
    tiled_release(s);
    return st;
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t tiled_enqueue(void *state, xr_hal_stream_t *stream) {
  tiled_state_t *s = state;
  const xr_gemm_problem_t *p = s->cl.p;
  if (p->M == 0 || p->N == 0 || p->batch == 0) return XR_OK;
  xr_hal_buffer_t **b = s->cl.buffer;
  xr_hal_buffer_t *any = b[XR_GEMM_A]; /* stands in for absent operands, never read */
  xr_hal_kernel_arg_t args[] = {
      xr_hal_arg_buffer(b[XR_GEMM_A]),
      xr_hal_arg_buffer(b[XR_GEMM_B]),
      xr_hal_arg_buffer(b[XR_GEMM_C] ? b[XR_GEMM_C] : any),
      xr_hal_arg_buffer(b[XR_GEMM_OUT]),
      xr_hal_arg_buffer(b[XR_GEMM_SCALE_A] ? b[XR_GEMM_SCALE_A] : any),
      xr_hal_arg_buffer(b[XR_GEMM_SCALE_B] ? b[XR_GEMM_SCALE_B] : any),
      xr_hal_arg_buffer(b[XR_GEMM_SCALE_RESULT] ? b[XR_GEMM_SCALE_RESULT] : any),
      xr_hal_arg_buffer(s->cl.batch_offsets),
      xr_hal_arg_bytes(&s->cl.params, sizeof s->cl.params),
  };
  xr_hal_dispatch_t d = {
      .grid = {(uint32_t)((p->N + TILE - 1) / TILE), (uint32_t)((p->M + TILE - 1) / TILE),
               (uint32_t)p->batch},
      .block = {LOCAL, LOCAL, 1},
      .args = args,
      .arg_count = sizeof args / sizeof args[0],
  };
  return xr_hal_stream_dispatch(stream, s->kernel, &d);
}

const xr_kernel_impl_t xr_gemm_opencl_tiled_impl = {
    .name = "opencl.gemm_tiled",
    .driver = "opencl",
    .supports = tiled_supports,
    .prepare = tiled_prepare,
    .enqueue = tiled_enqueue,
    .release = tiled_release,
};
