/* opencl.channel_norm: batch norm and group norm (kernels/channel_norm.h) as channel_norm.cl's
 * kernels, one work-group per statistic. Tensors are bound as whole storage buffers, one per
 * operand slot (an absent one: the input's); xr_cn_cl_args_t (channel_norm_args.h, shared with
 * channel_norm.cl) carries the views. */
#include <stdint.h>
#include <stdlib.h>

#include "kernels/channel_norm.h"
#include "kernels/opencl/channel_norm_args.h"
#include "kernels/opencl/sources.h"

_Static_assert(XR_CN_SLOTS == XR_CN_CL_SLOTS,
               "channel_norm.cl's slots are kernels/channel_norm.h's");

typedef struct cl_dispatch {
  xr_hal_kernel_t *kernel;
  uint32_t groups; /* work-groups: one per statistic */
} cl_dispatch_t;

typedef struct cl_cn {
  xr_hal_executable_t *exe;
  xr_cn_cl_args_t args;
  xr_hal_buffer_t *buffers[XR_CN_SLOTS];
  int count;
  cl_dispatch_t dispatch[2];
} cl_cn_t;

static bool fast_dtype(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16;
}

static xr_status_t cn_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_cn_problem_t *p = plan->problem;
  for (int k = 0; k < XR_CN_SLOTS; k++)
    if (p->v[k].index >= 0 && !fast_dtype(p->v[k].dtype))
      return xr_error(XR_UNIMPLEMENTED,
                      "opencl.channel_norm: %s: %s tensors (fp32, fp16, bf16 only)", plan->op->name,
                      xr_dtype_name(p->v[k].dtype));
  if (p->n * p->groups >= (int64_t)UINT32_MAX || p->c >= (int64_t)UINT32_MAX)
    return xr_error(XR_UNIMPLEMENTED,
                    "opencl.channel_norm: %s: too many statistics for one dispatch",
                    plan->op->name);
  return XR_OK;
}

static void cn_release(void *state) {
  cl_cn_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  free(s);
}

static xr_status_t add_dispatch(cl_cn_t *s, const char *name, int64_t groups) {
  cl_dispatch_t *d = &s->dispatch[s->count++];
  d->groups = (uint32_t)groups;
  return xr_hal_kernel_lookup(s->exe, name, &d->kernel);
}

static xr_status_t cn_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                              const xr_tensor_t *tensors, void **out_state) {
  const xr_cn_problem_t *p = plan->problem;
  cl_cn_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  xr_cn_cl_args_t *a = &s->args;
  const xr_view5_t *x = &p->v[XR_CN_X];
  a->kind = p->kind;
  a->training = p->training;
  a->n = p->n, a->c = p->c, a->groups = p->groups;
  for (int d = 0; d < 3; d++) a->size[d] = x->shape[2 + d];
  a->eps = (float)p->eps, a->momentum = (float)p->momentum;
  for (int k = 0; k < XR_CN_SLOTS; k++)
    s->buffers[k] = xr_cl_view5_set(&a->v[k], &p->v[k], tensors, x->index);
  xr_status_t st = xr_opencl_build(device, "channel_norm.cl", NULL, &s->exe);
  int64_t statistics = p->n * p->groups;
  if (st == XR_OK) {
    switch (p->kind) {
      case XR_CN_BATCH: st = add_dispatch(s, "xr_cn_batch", p->c); break;
      case XR_CN_BATCH_BACKWARD: st = add_dispatch(s, "xr_cn_batch_backward", p->c); break;
      case XR_CN_GROUP: st = add_dispatch(s, "xr_cn_group", statistics); break;
      case XR_CN_GROUP_BACKWARD:
        if (p->v[XR_CN_OUT].index >= 0) st = add_dispatch(s, "xr_cn_group_backward", statistics);
        if (st == XR_OK && (p->v[XR_CN_GRAD_W].index >= 0 || p->v[XR_CN_GRAD_B].index >= 0))
          st = add_dispatch(s, "xr_cn_group_param_grads", p->c);
        break;
    }
  }
  if (st != XR_OK) {
    cn_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t cn_enqueue(void *state, xr_hal_stream_t *stream) {
  cl_cn_t *s = state;
  xr_hal_kernel_arg_t args[1 + XR_CN_SLOTS] = {xr_hal_arg_bytes(&s->args, sizeof s->args)};
  for (int k = 0; k < XR_CN_SLOTS; k++) args[1 + k] = xr_hal_arg_buffer(s->buffers[k]);
  for (int i = 0; i < s->count; i++) {
    if (s->dispatch[i].groups == 0) continue;
    xr_hal_dispatch_t d = {
        .grid = {s->dispatch[i].groups, 1, 1},
        .block = {XR_CN_CL_WG, 1, 1},
        .args = args,
        .arg_count = 1 + XR_CN_SLOTS,
    };
    xr_status_t st = xr_hal_stream_dispatch(stream, s->dispatch[i].kernel, &d);
    if (st != XR_OK) return st;
  }
  return XR_OK;
}

const xr_kernel_impl_t xr_opencl_channel_norm_impl = {
    .name = "opencl.channel_norm",
    .driver = "opencl",
    .supports = cn_supports,
    .prepare = cn_prepare,
    .enqueue = cn_enqueue,
    .release = cn_release,
};
