/* opencl.loss and gpu.loss: the loss family on the kernels that kernels/opencl/loss.cl and
 * kernels/gpu/loss.cu (NVRTC / hiprtc) define alike, one program for every problem (dtypes and
 * strides are arguments, kernels/loss_args.h): f32, f16 and bf16 operands computed in float, up
 * to XR_LOSS_DEV_DIMS iteration dims. mse_loss with reduction none and mse_loss_backward take a
 * work-item / thread per element (grid-stride over at most MAX_GROUPS groups); mean and sum one
 * work-group / block, a tree over its shares. */
#include <stdlib.h>

#include "kernels/family.h"
#include "kernels/gpu/sources.h"
#include "kernels/loss.h"
#include "kernels/loss_args.h"
#include "kernels/opencl/sources.h"

_Static_assert(sizeof(long) == 8, "the device argument block needs a 64-bit long");
_Static_assert(XR_LOSS_DEV_DIMS <= XR_MAX_RANK, "the device dims fit the problem's");

#define MAX_GROUPS (1u << 16)

typedef struct backend {
  const char *name, *label; /* "opencl.loss", and as its declines name it */
  const char *source;
  xr_status_t (*build)(xr_hal_device_t *device, const char *file, const char *options,
                       xr_hal_executable_t **out_executable);
} backend_t;

static const backend_t opencl = {"opencl.loss", "opencl", "loss.cl", xr_opencl_build};
static const backend_t gpu = {"gpu.loss", "GPU", "loss.cu", xr_gpu_build};

static xr_status_t loss_supports(const backend_t *b, const xr_op_plan_t *plan,
                                 xr_hal_device_t *device) {
  (void)device;
  const xr_loss_problem_t *p = plan->problem;
  for (int k = 0; k < XR_LOSS_OPERANDS; k++)
    if (p->in[k].index >= 0 && !xr_fast_float_dtype(p->in[k].dtype))
      return xr_error(XR_UNIMPLEMENTED, "%s kernels: %s: %s tensors run on the reference (the %s "
                      "kernels compute f32, f16 and bf16 in float)", b->label, plan->op->name,
                      xr_dtype_name(p->in[k].dtype), b->label);
  if (p->rank > XR_LOSS_DEV_DIMS)
    return xr_error(XR_UNIMPLEMENTED, "%s kernels: %s: %d dims (the kernels walk at most %d)",
                    b->label, plan->op->name, p->rank, XR_LOSS_DEV_DIMS);
  return XR_OK;
}

typedef struct loss_launch {
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *kernel;
  xr_loss_dev_args_t block;
  xr_hal_kernel_arg_t args[5];
  xr_hal_dispatch_t dispatch;
  bool empty; /* nothing to write */
} loss_launch_t;

static void loss_release(void *state) {
  loss_launch_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  free(s);
}

static xr_status_t loss_prepare(const backend_t *b, const xr_op_plan_t *plan,
                                xr_hal_device_t *device, const xr_tensor_t *tensors,
                                void **out_state) {
  const xr_loss_problem_t *p = plan->problem;
  loss_launch_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  const bool reduced = xr_loss_reduced(p);
  xr_status_t st = b->build(device, b->source, NULL, &s->exe);
  if (st == XR_OK)
    st = xr_hal_kernel_lookup(s->exe, reduced ? "xr_loss_sum" : "xr_loss_elements", &s->kernel);
  if (st != XR_OK) {
    loss_release(s);
    return xr_error_prefix(st, "%s: %s: ", b->name, plan->op->name);
  }
  xr_loss_dev_args_t *a = &s->block;
  a->rank = p->rank;
  a->numel = p->numel;
  for (int d = 0; d < p->rank; d++) a->shape[d] = p->shape[d];
  const xr_loss_operand_t *ops[4] = {&p->in[XR_LOSS_SELF], &p->in[XR_LOSS_TARGET],
                                     &p->in[XR_LOSS_GRAD], &p->out};
  for (int k = 0; k < 4; k++) {
    if (ops[k]->index < 0) continue;
    a->offset[k] = tensors[ops[k]->index].offset;
    a->dtype[k] = (int)ops[k]->dtype;
    if (k < 3 || !reduced)
      for (int d = 0; d < p->rank; d++) a->strides[k][d] = ops[k]->strides[d];
  }
  a->backward = p->backward;
  a->reduction = (int)p->reduction;
  a->norm = (float)p->norm;
  xr_hal_buffer_t *self = tensors[p->in[XR_LOSS_SELF].index].buffer;
  s->args[0] = xr_hal_arg_buffer(self);
  s->args[1] = xr_hal_arg_buffer(tensors[p->in[XR_LOSS_TARGET].index].buffer);
  /* the forward reads no gradient: any buffer of the device will do */
  s->args[2] = xr_hal_arg_buffer(p->in[XR_LOSS_GRAD].index >= 0
                                     ? tensors[p->in[XR_LOSS_GRAD].index].buffer
                                     : self);
  s->args[3] = xr_hal_arg_buffer(tensors[p->out.index].buffer);
  s->args[4] = xr_hal_arg_bytes(&s->block, sizeof s->block);
  int64_t groups = reduced ? 1 : (p->numel + XR_LOSS_DEV_THREADS - 1) / XR_LOSS_DEV_THREADS;
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {groups < 1 ? 1 : groups > MAX_GROUPS ? MAX_GROUPS : (uint32_t)groups, 1, 1},
      .block = {XR_LOSS_DEV_THREADS, 1, 1},
      .args = s->args,
      .arg_count = 5,
  };
  s->empty = !reduced && p->numel == 0;
  *out_state = s;
  return XR_OK;
}

static xr_status_t loss_enqueue(void *state, xr_hal_stream_t *stream) {
  loss_launch_t *s = state;
  if (s->empty) return XR_OK;
  return xr_hal_stream_dispatch(stream, s->kernel, &s->dispatch);
}

XR_DEVICE_IMPL(xr_opencl_loss, "opencl.loss", "opencl", opencl, loss_supports, loss_prepare,
               loss_enqueue, loss_release)
XR_DEVICE_IMPL(xr_gpu_loss, "gpu.loss", "gpu", gpu, loss_supports, loss_prepare, loss_enqueue,
               loss_release)
