/* Host synchronisations: aten::_local_scalar_dense (what `.item()` and Python's bool() of a
 * tensor dispatch to) copies one element to the host and waits for it. It replays as that
 * device-to-host read, on the stream, so its time is the read's latency. It returns a Python
 * number, not a tensor: there is nothing to compare with --check. */
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/family.h"

static const char *const sync_ops[] = {"aten::_local_scalar_dense", NULL};

typedef struct sync_problem {
  size_t bytes; /* of the element */
} sync_problem_t;

static xr_status_t analyze(xr_op_plan_t *plan) {
  int self = -1;
  xr_status_t st = xr_arg_tensor(plan, 0, "self", true, &self);
  if (st != XR_OK) return st;
  const xr_tensor_spec_t *t = plan->inputs[self];
  if (xr_spec_numel(t) != 1)
    return xr_plan_error(plan, "self: a tensor of one element is read, this one has %lld",
                         (long long)xr_spec_numel(t));
  sync_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", plan->op->name);
  p->bytes = xr_dtype_size(t->dtype);
  plan->problem = p;
  plan->return_count = 0;
  plan->flops = 0;
  plan->bytes = (double)p->bytes;
  return XR_OK;
}

typedef struct sync_state {
  xr_hal_buffer_t *buffer;
  size_t offset, bytes;
  uint64_t host[2]; /* where the element lands (the largest dtype is 8 bytes) */
} sync_state_t;

static xr_status_t sync_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const sync_problem_t *p = plan->problem;
  sync_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  const xr_tensor_t *t = &tensors[0];
  s->buffer = t->buffer;
  s->offset = (size_t)t->offset * p->bytes;
  s->bytes = p->bytes;
  *out_state = s;
  return XR_OK;
}

static xr_status_t sync_enqueue(void *state, xr_hal_stream_t *stream) {
  sync_state_t *s = state;
  return xr_hal_stream_read(stream, s->host, s->buffer, s->offset, s->bytes);
}

/* One implementation through the HAL, listed once per driver it serves. */
#define READ_SCALAR(impl_name, driver_name, is_reference)                                         \
  {                                                                                               \
    .name = impl_name, .driver = driver_name, .reference = is_reference, .prepare = sync_prepare, \
    .enqueue = sync_enqueue, .release = free,                                                     \
  }

static const xr_kernel_impl_t opencl_read = READ_SCALAR("opencl.read_scalar", "opencl", false);
static const xr_kernel_impl_t gpu_read = READ_SCALAR("gpu.read_scalar", "gpu", false);
static const xr_kernel_impl_t ref_read = READ_SCALAR("ref.read_scalar", "cpu", true);

static const xr_kernel_impl_t *const sync_impls[] = {&opencl_read, &gpu_read, &ref_read, NULL};

const xr_op_family_t xr_family_sync = {
    .name = "sync",
    .op_names = sync_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = sync_impls,
};
