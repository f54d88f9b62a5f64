/* The pool and channel_norm families on devices: one host for OpenCL (opencl.pool,
 * opencl.channel_norm: kernels/opencl/pool.cl, channel_norm.cl) and CUDA/HIP (gpu.pool,
 * gpu.channel_norm: kernels/gpu/pool.cu, channel_norm.cu, compiled by NVRTC / hiprtc). The two
 * sources define the same kernels with the same arguments: the argument block by value
 * (pool_args.h, channel_norm_args.h), then the tensors' whole storage buffers. Pooling runs one
 * work-item per element written; batch and group norm one work-group per statistic. fp32, fp16
 * and bf16 (f64 stays on the CPU). */
#include <stdint.h>
#include <stdlib.h>

#include "kernels/channel_norm.h"
#include "kernels/channel_norm_args.h"
#include "kernels/gpu/sources.h"
#include "kernels/opencl/sources.h"
#include "kernels/pool.h"
#include "kernels/pool_args.h"

_Static_assert(sizeof(long) == 8, "the device argument blocks need a 64-bit long");
_Static_assert(XR_POOL_ARGS_MAX == XR_POOL_MAX &&
                   XR_POOL_ARGS_AVG_BACKWARD == XR_POOL_AVG_BACKWARD &&
                   XR_POOL_ARGS_ADAPTIVE_AVG_BACKWARD == XR_POOL_ADAPTIVE_AVG_BACKWARD &&
                   XR_POOL_ARGS_BILINEAR == XR_POOL_BILINEAR,
               "pool_args.h mirrors xr_pool_kind_t");
_Static_assert(XR_CN_ARGS_SLOTS == XR_CN_SLOTS &&
                   XR_CN_ARGS_BATCH_BACKWARD == XR_CN_BATCH_BACKWARD &&
                   XR_CN_ARGS_GROUP_BACKWARD == XR_CN_GROUP_BACKWARD,
               "channel_norm_args.h mirrors kernels/channel_norm.h");

/* Where the kernels come from: OpenCL C or CUDA C++, and the builder of that language. */
typedef struct backend {
  const char *pool_source, *channel_norm_source;
  xr_status_t (*build)(xr_hal_device_t *device, const char *file, const char *options,
                       xr_hal_executable_t **out_executable);
} backend_t;

static const backend_t opencl = {"pool.cl", "channel_norm.cl", xr_opencl_build};
static const backend_t gpu = {"pool.cu", "channel_norm.cu", xr_gpu_build};

/* The dispatches an op makes: a kernel, its work-groups, the arguments (the block, buffers). */
enum { MAX_LAUNCHES = 2, MAX_ARGS = 1 + XR_CN_SLOTS };

typedef struct launch {
  xr_hal_kernel_t *kernel;
  uint32_t groups;
} launch_t;

typedef struct device_op {
  xr_hal_executable_t *exe;
  int count;
  launch_t launch[MAX_LAUNCHES];
  uint32_t threads;
  size_t arg_count;
  xr_hal_kernel_arg_t args[MAX_ARGS];
  union {
    xr_pool_args_t pool;
    xr_cn_args_t cn;
  } block;
} device_op_t;

static xr_status_t unsupported_dtype(const xr_op_plan_t *plan, const char *impl, xr_dtype_t d) {
  return xr_error(XR_UNIMPLEMENTED, "%s: %s: %s tensors (fp32, fp16, bf16 only)", impl,
                  plan->op->name, xr_dtype_name(d));
}

/* v's argument (absent: dtype -1) and its buffer (absent: tensor `fallback`'s, never read). */
static xr_hal_buffer_t *view_args(xr_view5_args_t *out, const xr_view5_t *v,
                                  const xr_tensor_t *tensors, int fallback) {
  *out = (xr_view5_args_t){.dtype = -1};
  if (v->index < 0) return tensors[fallback].buffer;
  out->offset = tensors[v->index].offset;
  out->dtype = v->dtype;
  for (int d = 0; d < 5; d++) out->strides[d] = v->strides[d];
  return tensors[v->index].buffer;
}

static void device_release(void *state) {
  device_op_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  free(s);
}

static xr_status_t add_launch(device_op_t *s, const char *kernel, int64_t groups) {
  launch_t *l = &s->launch[s->count++];
  l->groups = (uint32_t)groups;
  return xr_hal_kernel_lookup(s->exe, kernel, &l->kernel);
}

static xr_status_t device_enqueue(void *state, xr_hal_stream_t *stream) {
  device_op_t *s = state;
  for (int i = 0; i < s->count; i++) {
    if (s->launch[i].groups == 0) continue;
    xr_hal_dispatch_t d = {
        .grid = {s->launch[i].groups, 1, 1},
        .block = {s->threads, 1, 1},
        .args = s->args,
        .arg_count = s->arg_count,
    };
    xr_status_t st = xr_hal_stream_dispatch(stream, s->launch[i].kernel, &d);
    if (st != XR_OK) return st;
  }
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* pool                                                                                       */

/* Elements each launch writes: y's (forward) or x's (the backward ops' grad_input). */
static int64_t pool_written(const xr_pool_problem_t *p) {
  const xr_view5_t *v = xr_pool_is_backward(p->kind) ? &p->x : &p->y;
  int64_t n = 1;
  for (int d = 0; d < 5; d++) n *= v->shape[d];
  return n;
}

/* Work-groups cover every element once; the kernels' grid-stride loops allow fewer. */
#define POOL_MAX_GROUPS (1 << 20)

static xr_status_t pool_supports(const xr_op_plan_t *plan, const char *impl) {
  const xr_pool_problem_t *p = plan->problem;
  if (!xr_fast_float_dtype(p->x.dtype)) return unsupported_dtype(plan, impl, p->x.dtype);
  if (!xr_fast_float_dtype(p->y.dtype)) return unsupported_dtype(plan, impl, p->y.dtype);
  return XR_OK;
}

static xr_status_t pool_prepare(const backend_t *b, const xr_op_plan_t *plan,
                                xr_hal_device_t *device, const xr_tensor_t *tensors,
                                void **out_state) {
  const xr_pool_problem_t *p = plan->problem;
  device_op_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  xr_pool_args_t *a = &s->block.pool;
  a->kind = p->kind;
  a->total = pool_written(p);
  a->planes_c = p->x.shape[1];
  for (int d = 0; d < 3; d++) {
    a->in_size[d] = p->in[d], a->out_size[d] = p->out[d], a->window[d] = p->kernel[d];
    a->stride[d] = p->stride[d], a->pad[d] = p->pad[d], a->dilation[d] = p->dilation[d];
    a->src_scale[d] = xr_pool_source_scale(p, d, p->kind == XR_POOL_BILINEAR && p->align_corners);
  }
  a->count_include_pad = p->count_include_pad;
  a->align_corners = p->align_corners;
  a->divisor = p->divisor;
  s->args[0] = xr_hal_arg_bytes(a, sizeof *a);
  s->args[1] = xr_hal_arg_buffer(view_args(&a->x, &p->x, tensors, p->x.index));
  s->args[2] = xr_hal_arg_buffer(view_args(&a->y, &p->y, tensors, p->x.index));
  s->args[3] = xr_hal_arg_buffer(view_args(&a->indices, &p->indices, tensors, p->x.index));
  s->arg_count = 4;
  s->threads = XR_POOL_THREADS;
  int64_t groups = (a->total + XR_POOL_THREADS - 1) / XR_POOL_THREADS;
  xr_status_t st = b->build(device, b->pool_source, NULL, &s->exe);
  if (st == XR_OK)
    st = add_launch(s, xr_pool_is_backward(p->kind) ? "xr_pool_backward" : "xr_pool_forward",
                    groups < POOL_MAX_GROUPS ? groups : POOL_MAX_GROUPS);
  if (st != XR_OK) {
    device_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  *out_state = s;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* channel_norm                                                                               */

static xr_status_t cn_supports(const xr_op_plan_t *plan, const char *impl) {
  const xr_cn_problem_t *p = plan->problem;
  for (int k = 0; k < XR_CN_SLOTS; k++)
    if (p->v[k].index >= 0 && !xr_fast_float_dtype(p->v[k].dtype))
      return unsupported_dtype(plan, impl, p->v[k].dtype);
  /* one work-group per statistic, in one launch */
  if (p->n * p->groups >= INT32_MAX || p->c >= INT32_MAX)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: more statistics than one launch holds", impl,
                    plan->op->name);
  return XR_OK;
}

static xr_status_t cn_prepare(const backend_t *b, const xr_op_plan_t *plan, xr_hal_device_t *device,
                              const xr_tensor_t *tensors, void **out_state) {
  const xr_cn_problem_t *p = plan->problem;
  device_op_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  xr_cn_args_t *a = &s->block.cn;
  const xr_view5_t *x = &p->v[XR_CN_X];
  a->kind = p->kind;
  a->training = p->training;
  a->n = p->n, a->c = p->c, a->groups = p->groups;
  for (int d = 0; d < 3; d++) a->size[d] = x->shape[2 + d];
  a->eps = (float)p->eps, a->momentum = (float)p->momentum;
  s->args[0] = xr_hal_arg_bytes(a, sizeof *a);
  for (int k = 0; k < XR_CN_SLOTS; k++)
    s->args[1 + k] = xr_hal_arg_buffer(view_args(&a->v[k], &p->v[k], tensors, x->index));
  s->arg_count = 1 + XR_CN_SLOTS;
  s->threads = XR_CN_THREADS;
  int64_t statistics = p->n * p->groups;
  xr_status_t st = b->build(device, b->channel_norm_source, NULL, &s->exe);
  if (st == XR_OK) {
    switch (p->kind) {
      case XR_CN_BATCH: st = add_launch(s, "xr_cn_batch", p->c); break;
      case XR_CN_BATCH_BACKWARD: st = add_launch(s, "xr_cn_batch_backward", p->c); break;
      case XR_CN_GROUP: st = add_launch(s, "xr_cn_group", statistics); break;
      case XR_CN_GROUP_BACKWARD:
        if (p->v[XR_CN_OUT].index >= 0) st = add_launch(s, "xr_cn_group_backward", statistics);
        if (st == XR_OK && (p->v[XR_CN_GRAD_W].index >= 0 || p->v[XR_CN_GRAD_B].index >= 0))
          st = add_launch(s, "xr_cn_group_param_grads", p->c);
        break;
    }
  }
  if (st != XR_OK) {
    device_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  *out_state = s;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* the implementations                                                                        */

#define DEVICE_IMPL(symbol, impl_name, driver_name, family, backend_var)                    \
  static xr_status_t symbol##_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) { \
    (void)device;                                                                           \
    return family##_supports(plan, impl_name);                                              \
  }                                                                                         \
  static xr_status_t symbol##_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,    \
                                      const xr_tensor_t *tensors, void **out_state) {       \
    return family##_prepare(&backend_var, plan, device, tensors, out_state);                \
  }                                                                                         \
  const xr_kernel_impl_t symbol = {                                                         \
      .name = impl_name,                                                                    \
      .driver = driver_name,                                                                \
      .supports = symbol##_supports,                                                        \
      .prepare = symbol##_prepare,                                                          \
      .enqueue = device_enqueue,                                                            \
      .release = device_release,                                                            \
  };

DEVICE_IMPL(xr_opencl_pool_impl, "opencl.pool", "opencl", pool, opencl)
DEVICE_IMPL(xr_gpu_pool_impl, "gpu.pool", "gpu", pool, gpu)
DEVICE_IMPL(xr_opencl_channel_norm_impl, "opencl.channel_norm", "opencl", cn, opencl)
DEVICE_IMPL(xr_gpu_channel_norm_impl, "gpu.channel_norm", "gpu", cn, gpu)
