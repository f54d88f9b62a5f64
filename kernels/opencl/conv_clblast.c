/* opencl.conv_clblast: 1-D and 2-D forward convolutions on CLBlast's convgemm (cross-correlation
 * of an NCHW image with [K, C, R, S] kernels into an NCHW result, im2col fused into its GEMM),
 * straight on the HAL's OpenCL buffers and queue. convgemm has no bias, groups or asymmetric
 * padding: a bias is added after it by conv.cl's xr_conv_add_bias; anything else (groups,
 * strided or channels-last tensors, 3-D, bf16, fp16 without cl_khr_fp16, the transposed and
 * backward passes) is UNIMPLEMENTED here with the reason and runs on opencl.conv. */
#include <stdlib.h>
#include <string.h>

#include "kernels/conv_device.h"
#include "kernels/opencl/clblast.h"
#include "kernels/opencl/sources.h"

#ifdef XR_HAVE_CLBLAST_H

/* Contiguous in n, c, d, h, w order (size-1 dims aside). */
static bool is_packed(const xr_conv_operand_t *o) {
  int64_t expect = 1;
  for (int d = 4; d >= 0; d--) {
    if (o->shape[d] != 1 && o->strides[d] != expect) return false;
    expect *= o->shape[d];
  }
  return true;
}

static xr_status_t plan_call(const xr_op_plan_t *plan, const xr_clblast_t **out_lib) {
  const xr_conv_problem_t *p = plan->problem;
  const char *op = plan->op->name;
  const xr_clblast_t *lib;
  if (xr_clblast_get(&lib) != XR_OK)
    return xr_error_prefix(XR_UNIMPLEMENTED, "opencl.conv_clblast: ");
  if (!lib->CLBlastSconvgemm)
    return xr_error(XR_UNIMPLEMENTED, "opencl.conv_clblast: this CLBlast has no convgemm");
  const xr_conv_step_t *s = &p->steps[0];
  if (p->step_count != 1 || s->pass != XR_CONV_FORWARD)
    return xr_error(XR_UNIMPLEMENTED,
                    "opencl.conv_clblast: %s: CLBlast's convgemm runs forward "
                    "convolutions only",
                    op);
  if (p->groups != 1 || p->spatial > 2)
    return xr_error(XR_UNIMPLEMENTED, "opencl.conv_clblast: %s: %s (convgemm: 2-D, one group)", op,
                    p->groups != 1 ? "grouped" : "3-D");
  if (s->x.dtype != XR_DTYPE_F32 || s->w.dtype != XR_DTYPE_F32 ||
      (s->bias.index >= 0 && s->bias.dtype != XR_DTYPE_F32))
    return xr_error(XR_UNIMPLEMENTED, "opencl.conv_clblast: %s: %s (fp32 only here)", op,
                    xr_dtype_name(s->x.dtype));
  if (!is_packed(&s->x) || !is_packed(&s->w) || !is_packed(&s->y))
    return xr_error(XR_UNIMPLEMENTED,
                    "opencl.conv_clblast: %s: convgemm wants contiguous NCHW "
                    "tensors",
                    op);
  for (int d = 1; d < 3; d++) { /* h, w: convgemm pads both sides alike */
    int64_t span = p->dilation[d] * (p->kernel[d] - 1) + 1;
    if ((p->in[d] + 2 * p->pad[d] - span) / p->stride[d] + 1 != p->out[d])
      return xr_error(XR_UNIMPLEMENTED, "opencl.conv_clblast: %s: asymmetric padding", op);
  }
  *out_lib = lib;
  return XR_OK;
}

static xr_status_t clblast_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_clblast_t *lib;
  return plan_call(plan, &lib);
}

typedef struct conv_clblast {
  const xr_clblast_t *lib;
  const xr_conv_problem_t *p;
  cl_mem x, w, y;
  size_t x_off, w_off, y_off; /* elements */
  xr_hal_executable_t *exe;   /* the bias addition */
  xr_hal_kernel_t *add_bias;
  xr_conv_args_t args;
  xr_hal_buffer_t *buffers[4];
} conv_clblast_t;

static void clblast_release(void *state) {
  conv_clblast_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  free(s);
}

/* The cl_mem of tensor `index` and the element offset of its first element. */
static xr_status_t native(const xr_tensor_t *tensors, int index, cl_mem *mem, size_t *offset) {
  void *m;
  size_t byte_offset;
  xr_status_t st = xr_hal_buffer_native(tensors[index].buffer, &m, &byte_offset);
  *mem = m;
  *offset = byte_offset / sizeof(float) + (size_t)tensors[index].offset;
  return st;
}

static xr_status_t clblast_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                   const xr_tensor_t *tensors, void **out_state) {
  const xr_conv_problem_t *p = plan->problem;
  const xr_conv_step_t *step = &p->steps[0];
  conv_clblast_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "opencl.conv_clblast: out of memory");
  s->p = p;
  xr_status_t st = plan_call(plan, &s->lib);
  if (st == XR_OK) st = native(tensors, step->x.index, &s->x, &s->x_off);
  if (st == XR_OK) st = native(tensors, step->w.index, &s->w, &s->w_off);
  if (st == XR_OK) st = native(tensors, step->y.index, &s->y, &s->y_off);
  if (st == XR_OK && step->bias.index >= 0) {
    st = xr_opencl_build(device, "conv.cl", NULL, &s->exe);
    if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, "xr_conv_add_bias", &s->add_bias);
    xr_conv_device_args(p, step, tensors, &s->args, s->buffers);
  }
  if (st != XR_OK) {
    clblast_release(s);
    return xr_error_prefix(st, "opencl.conv_clblast: ");
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t clblast_enqueue(void *state, xr_hal_stream_t *stream) {
  conv_clblast_t *s = state;
  const xr_conv_problem_t *p = s->p;
  void *queue_handle;
  xr_status_t st = xr_hal_stream_native(stream, &queue_handle);
  if (st != XR_OK) return st;
  cl_command_queue queue = queue_handle;
  CLBlastStatusCode code = s->lib->CLBlastSconvgemm(
      CLBlastKernelModeCrossCorrelation, (size_t)p->c_in, (size_t)p->in[1], (size_t)p->in[2],
      (size_t)p->kernel[1], (size_t)p->kernel[2], (size_t)p->pad[1], (size_t)p->pad[2],
      (size_t)p->stride[1], (size_t)p->stride[2], (size_t)p->dilation[1], (size_t)p->dilation[2],
      (size_t)p->c_out, (size_t)p->n, s->x, s->x_off, s->w, s->w_off, s->y, s->y_off, &queue, NULL);
  if (code != CLBlastSuccess)
    return xr_error(XR_DEVICE_ERROR, "opencl.conv_clblast: CLBlastSconvgemm: CLBlast status %d",
                    (int)code);
  /* xr_conv_device_args sized the dispatch by y, which a forward step writes */
  return s->add_bias ? xr_conv_device_dispatch(stream, s->add_bias, &s->args, s->buffers) : XR_OK;
}

const xr_kernel_impl_t xr_opencl_conv_clblast_impl = {
    .name = "opencl.conv_clblast",
    .driver = "opencl",
    .supports = clblast_supports,
    .prepare = clblast_prepare,
    .enqueue = clblast_enqueue,
    .release = clblast_release,
};

#else /* no clblast_c.h at build time */

static xr_status_t clblast_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)plan, (void)device;
  return xr_error(XR_UNIMPLEMENTED,
                  "opencl.conv_clblast: built without CLBlast's header (clblast_c.h)");
}

const xr_kernel_impl_t xr_opencl_conv_clblast_impl = {
    .name = "opencl.conv_clblast",
    .driver = "opencl",
    .supports = clblast_supports,
};
#endif
