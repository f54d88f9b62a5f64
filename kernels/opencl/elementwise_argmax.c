/* opencl.argmax: aten::argmax through the xr_argmax kernel of elementwise.cl, one work-item
 * per output element. f32, f16, bf16 and fp8 inputs, at most 8 kept and 8 reduced dims. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/argmax.h"
#include "kernels/family.h"
#include "kernels/opencl/sources.h"

enum { MAX_DIMS = 8 };

/* Mirrors xr_argmax_geometry in elementwise.cl. */
typedef struct cl_argmax_geometry {
  int64_t out_shape[MAX_DIMS], in_strides[MAX_DIMS];
  int64_t red_shape[MAX_DIMS], red_strides[MAX_DIMS];
  int64_t offset, out_numel, red_numel;
  int32_t out_rank, red_rank;
} cl_argmax_geometry_t;

typedef struct cl_argmax {
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *kernel;
  cl_argmax_geometry_t g;
  xr_hal_kernel_arg_t args[3];
  xr_hal_dispatch_t dispatch;
} cl_argmax_t;

static xr_status_t cl_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_argmax_problem_t *p = plan->problem;
  if (!xr_dtype_is_floating(p->dtype) || p->dtype == XR_DTYPE_F64)
    return xr_error(XR_UNIMPLEMENTED, "%s input: compared in float only for narrower floats",
                    xr_dtype_name(p->dtype));
  if (p->out_rank > MAX_DIMS || p->red_rank > MAX_DIMS)
    return xr_error(XR_UNIMPLEMENTED, "more than %d kept or reduced dimensions", MAX_DIMS);
  if (p->out_numel > (int64_t)UINT32_MAX * 64)
    return xr_error(XR_UNIMPLEMENTED, "too many outputs for one launch");
  return XR_OK;
}

static void cl_release(void *state) {
  cl_argmax_t *s = state;
  if (s) xr_hal_executable_destroy(s->exe);
  free(s);
}

static xr_status_t cl_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                              const xr_tensor_t *tensors, void **out_state) {
  const xr_argmax_problem_t *p = plan->problem;
  cl_argmax_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  char options[128];
  snprintf(options, sizeof options,
           "-DOP=6 -DDT_OUT=1 -DDT_A=%d -DDT_B=0 -DB_KIND=0 -DPATH=0 -DRAW_T=uint", (int)p->dtype);
  xr_status_t st = xr_opencl_build(device, "elementwise.cl", options, &s->exe);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, "xr_argmax", &s->kernel);
  if (st != XR_OK) {
    cl_release(s);
    return xr_error_prefix(st, "opencl.argmax: ");
  }
  cl_argmax_geometry_t *g = &s->g;
  memcpy(g->out_shape, p->out_shape, sizeof(int64_t) * (size_t)p->out_rank);
  memcpy(g->in_strides, p->in_strides, sizeof(int64_t) * (size_t)p->out_rank);
  memcpy(g->red_shape, p->red_shape, sizeof(int64_t) * (size_t)p->red_rank);
  memcpy(g->red_strides, p->red_strides, sizeof(int64_t) * (size_t)p->red_rank);
  g->offset = tensors[p->self].offset;
  g->out_numel = p->out_numel;
  g->red_numel = p->red_numel;
  g->out_rank = p->out_rank;
  g->red_rank = p->red_rank;
  s->args[0] = xr_hal_arg_buffer(tensors[p->out].buffer);
  s->args[1] = xr_hal_arg_buffer(tensors[p->self].buffer);
  s->args[2] = xr_hal_arg_bytes(g, sizeof *g);
  uint32_t block = p->out_numel >= 64 ? 64 : 1;
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {(uint32_t)((p->out_numel + block - 1) / block), 1, 1},
      .block = {block, 1, 1},
      .args = s->args,
      .arg_count = 3,
  };
  *out_state = s;
  return XR_OK;
}

static xr_status_t cl_enqueue(void *state, xr_hal_stream_t *stream) {
  cl_argmax_t *s = state;
  if (s->g.out_numel == 0) return XR_OK;
  return xr_hal_stream_dispatch(stream, s->kernel, &s->dispatch);
}

const xr_kernel_impl_t xr_opencl_argmax = {
    .name = "opencl.argmax",
    .driver = "opencl",
    .supports = cl_supports,
    .prepare = cl_prepare,
    .enqueue = cl_enqueue,
    .release = cl_release,
};
