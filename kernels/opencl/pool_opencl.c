/* opencl.pool: every op of the pool family (kernels/pool.h) as one of pool.cl's kernels, one
 * work-item per element written. Tensors are bound as whole storage buffers; the geometry goes
 * in xr_pool_cl_args_t (pool_args.h, shared with pool.cl). */
#include <stdint.h>
#include <stdlib.h>

#include "kernels/opencl/pool_args.h"
#include "kernels/opencl/sources.h"
#include "kernels/pool.h"

typedef struct cl_pool {
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *kernel;
  xr_pool_cl_args_t args;
  xr_hal_buffer_t *buffers[3]; /* x, y, indices */
} cl_pool_t;

static bool fast_dtype(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16;
}

static int64_t written_elements(const xr_pool_problem_t *p) {
  const xr_view5_t *v = xr_pool_is_backward(p->kind) ? &p->x : &p->y;
  int64_t n = 1;
  for (int d = 0; d < 5; d++) n *= v->shape[d];
  return n;
}

static xr_status_t pool_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_pool_problem_t *p = plan->problem;
  if (!fast_dtype(p->x.dtype) || !fast_dtype(p->y.dtype))
    return xr_error(XR_UNIMPLEMENTED, "opencl.pool: %s: %s tensors (fp32, fp16, bf16 only)",
                    plan->op->name,
                    xr_dtype_name(fast_dtype(p->x.dtype) ? p->y.dtype : p->x.dtype));
  if (written_elements(p) / XR_POOL_CL_WG >= (int64_t)UINT32_MAX)
    return xr_error(XR_UNIMPLEMENTED, "opencl.pool: %s: %lld results exceed one dispatch",
                    plan->op->name, (long long)written_elements(p));
  return XR_OK;
}

static void pool_release(void *state) {
  cl_pool_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  free(s);
}

static xr_status_t pool_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                const xr_tensor_t *tensors, void **out_state) {
  const xr_pool_problem_t *p = plan->problem;
  cl_pool_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  xr_pool_cl_args_t *a = &s->args;
  a->kind = p->kind;
  a->total = written_elements(p);
  a->planes_c = p->x.shape[1];
  for (int d = 0; d < 3; d++) {
    a->in_size[d] = p->in[d], a->out_size[d] = p->out[d], a->window[d] = p->kernel[d];
    a->stride[d] = p->stride[d], a->pad[d] = p->pad[d], a->dilation[d] = p->dilation[d];
    a->src_scale[d] = xr_pool_source_scale(p, d, p->kind == XR_POOL_BILINEAR && p->align_corners);
  }
  a->count_include_pad = p->count_include_pad;
  a->align_corners = p->align_corners;
  a->divisor = p->divisor;
  s->buffers[0] = xr_cl_view5_set(&a->x, &p->x, tensors, p->x.index);
  s->buffers[1] = xr_cl_view5_set(&a->y, &p->y, tensors, p->x.index);
  s->buffers[2] = xr_cl_view5_set(&a->indices, &p->indices, tensors, p->x.index);
  xr_status_t st = xr_opencl_build(device, "pool.cl", NULL, &s->exe);
  if (st == XR_OK)
    st = xr_hal_kernel_lookup(
        s->exe, xr_pool_is_backward(p->kind) ? "xr_pool_backward" : "xr_pool_forward", &s->kernel);
  if (st != XR_OK) {
    pool_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t pool_enqueue(void *state, xr_hal_stream_t *stream) {
  cl_pool_t *s = state;
  if (s->args.total == 0) return XR_OK;
  xr_hal_kernel_arg_t args[4] = {xr_hal_arg_bytes(&s->args, sizeof s->args)};
  for (int k = 0; k < 3; k++) args[1 + k] = xr_hal_arg_buffer(s->buffers[k]);
  xr_hal_dispatch_t d = {
      .grid = {(uint32_t)((s->args.total + XR_POOL_CL_WG - 1) / XR_POOL_CL_WG), 1, 1},
      .block = {XR_POOL_CL_WG, 1, 1},
      .args = args,
      .arg_count = 4,
  };
  return xr_hal_stream_dispatch(stream, s->kernel, &d);
}

const xr_kernel_impl_t xr_opencl_pool_impl = {
    .name = "opencl.pool",
    .driver = "opencl",
    .supports = pool_supports,
    .prepare = pool_prepare,
    .enqueue = pool_enqueue,
    .release = pool_release,
};
