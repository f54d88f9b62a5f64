/* opencl.quant and gpu.quant: vLLM's fp8 quantization ops on the kernels that
 * kernels/opencl/quant.cl and kernels/gpu/quant.cu define alike, bit-exact with ref.quant. The
 * dynamic op runs three launches (each item's max|x| into a scratch buffer allocated at
 * prepare(), their maximum into scale[0], the quantization), the others one. Tensors are bound
 * as whole storage buffers; geometry, offsets, strides and dtypes go in the by-value block of
 * kernels/quant_args.h. */
#include <stdlib.h>

#include "kernels/family.h"
#include "kernels/gpu/sources.h"
#include "kernels/opencl/sources.h"
#include "kernels/quant.h"
#include "kernels/quant_args.h"

_Static_assert(sizeof(long) == 8, "the device argument block needs a 64-bit long");
_Static_assert(XR_QUANT_ARG_STATIC == XR_QUANT_STATIC && XR_QUANT_ARG_DYNAMIC == XR_QUANT_DYNAMIC &&
                   XR_QUANT_ARG_PER_TOKEN == XR_QUANT_PER_TOKEN,
               "quant_args.h's ops are xr_quant_op_t");

/* Where the kernels come from and how a launch covers the items (grid-stride loops over at most
 * max_groups groups). OpenCL's per-token op has a kernel of its own: PoCL mis-ran its reduction
 * inside a branch of xr_quant_rows. */
typedef struct backend {
  const char *name, *source, *options, *per_token_kernel;
  xr_status_t (*build)(xr_hal_device_t *device, const char *file, const char *options,
                       xr_hal_executable_t **out_executable);
  uint32_t threads, max_groups;
  int64_t segment;
} backend_t;

static const backend_t opencl = {"opencl.quant", "quant.cl",
                                 "-cl-fp32-correctly-rounded-divide-sqrt", "xr_quant_per_token",
                                 xr_opencl_build, XR_QUANT_OPENCL_THREADS, 1u << 16,
                                 XR_QUANT_OPENCL_SEGMENT};
static const backend_t gpu = {"gpu.quant", "quant.cu", NULL, "xr_quant_rows", xr_gpu_build,
                              XR_QUANT_GPU_THREADS, 1u << 20, XR_QUANT_GPU_SEGMENT};

typedef struct device_quant {
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *absmax, *reduce, *rows;
  xr_hal_buffer_t *partial;
  xr_quant_args_t args;
  xr_hal_kernel_arg_t absmax_args[3], reduce_args[3], rows_args[5];
  xr_hal_dispatch_t absmax_d, reduce_d, rows_d;
} device_quant_t;

static void quant_release(void *state) {
  device_quant_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  xr_hal_buffer_free(s->partial);
  free(s);
}

static void quant_args(const backend_t *b, const xr_quant_problem_t *p, xr_quant_args_t *a) {
  a->rows = p->rows, a->hidden = p->hidden;
  a->segments = (p->hidden + b->segment - 1) / b->segment;
  a->items = p->op == XR_QUANT_PER_TOKEN ? p->rows : p->rows * a->segments;
  a->in_off = p->in_off, a->in_rs = p->in_rs, a->out_off = p->out_off, a->out_rs = p->out_rs;
  a->scale_off = p->scale_off, a->scale_si = p->scale_si, a->scale_sj = p->scale_sj;
  a->group_m = p->group_m, a->group_n = p->group_n, a->ub_off = p->ub_off;
  a->op = p->op, a->in_dtype = p->in_dtype, a->out_dtype = p->out_dtype;
  a->grouped = p->grouped, a->has_ub = p->scale_ub >= 0;
  a->fp8_max = p->fp8_max, a->min_scale = p->min_scale;
}

/* A launch of `count` buffer arguments then the block, over `groups` groups. */
static xr_hal_dispatch_t launch(const backend_t *b, device_quant_t *s, xr_hal_kernel_arg_t *args,
                                int count, uint32_t groups) {
  args[count] = xr_hal_arg_bytes(&s->args, sizeof s->args);
  return (xr_hal_dispatch_t){.grid = {groups, 1, 1},
                             .block = {b->threads, 1, 1},
                             .args = args,
                             .arg_count = (uint32_t)count + 1};
}

static xr_status_t quant_prepare(const backend_t *b, const xr_op_plan_t *plan,
                                 xr_hal_device_t *device, const xr_tensor_t *tensors,
                                 void **out_state) {
  const xr_quant_problem_t *p = plan->problem;
  device_quant_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  quant_args(b, p, &s->args);
  int64_t items = s->args.items;
  xr_status_t st = b->build(device, b->source, b->options, &s->exe);
  const char *rows = p->op == XR_QUANT_PER_TOKEN ? b->per_token_kernel : "xr_quant_rows";
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, rows, &s->rows);
  if (st == XR_OK && p->op == XR_QUANT_DYNAMIC) {
    if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, "xr_quant_absmax", &s->absmax);
    if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, "xr_quant_reduce", &s->reduce);
    if (st == XR_OK)
      st = xr_hal_buffer_alloc(device, sizeof(float) * (size_t)(items > 0 ? items : 1),
                               &s->partial);
  }
  if (st != XR_OK) {
    quant_release(s);
    return xr_error_prefix(st, "%s: %s: ", b->name, plan->op->name);
  }
  uint32_t groups = items < 1 ? 1 : items > b->max_groups ? b->max_groups : (uint32_t)items;
  xr_hal_buffer_t *in = tensors[p->input].buffer, *scale = tensors[p->scale].buffer;
  s->rows_args[0] = xr_hal_arg_buffer(tensors[p->result].buffer);
  s->rows_args[1] = xr_hal_arg_buffer(in);
  s->rows_args[2] = xr_hal_arg_buffer(scale);
  s->rows_args[3] = /* unread without an upper bound */
      xr_hal_arg_buffer(p->scale_ub >= 0 ? tensors[p->scale_ub].buffer : scale);
  s->rows_d = launch(b, s, s->rows_args, 4, groups);
  if (p->op == XR_QUANT_DYNAMIC) {
    s->absmax_args[0] = xr_hal_arg_buffer(s->partial);
    s->absmax_args[1] = xr_hal_arg_buffer(in);
    s->absmax_d = launch(b, s, s->absmax_args, 2, groups);
    s->reduce_args[0] = xr_hal_arg_buffer(scale);
    s->reduce_args[1] = xr_hal_arg_buffer(s->partial);
    s->reduce_d = launch(b, s, s->reduce_args, 2, 1);
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t quant_enqueue(void *state, xr_hal_stream_t *stream) {
  device_quant_t *s = state;
  xr_status_t st = XR_OK;
  if (s->absmax && s->args.items > 0) st = xr_hal_stream_dispatch(stream, s->absmax, &s->absmax_d);
  if (st == XR_OK && s->reduce) st = xr_hal_stream_dispatch(stream, s->reduce, &s->reduce_d);
  if (st == XR_OK && s->args.items > 0 && s->args.hidden > 0)
    st = xr_hal_stream_dispatch(stream, s->rows, &s->rows_d);
  return st;
}

#define DEVICE_IMPL(symbol, backend_var, driver_name)                                     \
  static xr_status_t symbol##_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, \
                                      const xr_tensor_t *tensors, void **out_state) {    \
    return quant_prepare(&backend_var, plan, device, tensors, out_state);                \
  }                                                                                      \
  const xr_kernel_impl_t symbol = {                                                      \
      .name = #backend_var ".quant",                                                     \
      .driver = driver_name,                                                             \
      .prepare = symbol##_prepare,                                                       \
      .enqueue = quant_enqueue,                                                          \
      .release = quant_release,                                                          \
  };

DEVICE_IMPL(xr_quant_opencl_impl, opencl, "opencl")
DEVICE_IMPL(xr_quant_gpu_impl, gpu, "gpu")
