/* opencl.routing and gpu.routing: TopK and SortTokens (kernels/routing.h) on the kernels that
 * kernels/opencl/routing.cl and kernels/gpu/routing.cu define alike. TopK is one launch, a
 * work-item per row; SortTokens two, a work-item per expert then one per block size (and one
 * for the totals), in stream order. Tensors are bound as whole storage buffers; geometry,
 * offsets, strides and dtypes go in the by-value block of kernels/routing_args.h. The kernels
 * favour plainness over speed: routing tensors are small (tokens x experts). */
#include <stdlib.h>

#include "kernels/family.h"
#include "kernels/gpu/sources.h"
#include "kernels/opencl/sources.h"
#include "kernels/routing.h"
#include "kernels/routing_args.h"

_Static_assert(sizeof(long) == 8, "the device argument block needs a 64-bit long");

typedef struct backend {
  const char *name, *source;
  xr_status_t (*build)(xr_hal_device_t *device, const char *file, const char *options,
                       xr_hal_executable_t **out_executable);
} backend_t;

static const backend_t opencl = {"opencl.routing", "routing.cl", xr_opencl_build};
static const backend_t gpu = {"gpu.routing", "routing.cu", xr_gpu_build};

typedef struct device_routing {
  const xr_routing_problem_t *p;
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *first, *second; /* TopK: first only */
  xr_routing_args_t args;
  xr_hal_kernel_arg_t first_args[8], second_args[9];
  xr_hal_dispatch_t first_d, second_d;
} device_routing_t;

static void routing_release(void *state) {
  device_routing_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  free(s);
}

/* A launch of `count` buffer arguments then the block, covering `items` work-items. */
static xr_hal_dispatch_t launch(device_routing_t *s, xr_hal_kernel_arg_t *args, int count,
                                int64_t items) {
  args[count] = xr_hal_arg_bytes(&s->args, sizeof s->args);
  int64_t groups = (items + XR_ROUTING_THREADS - 1) / XR_ROUTING_THREADS;
  if (groups < 1) groups = 1;
  if (groups > 65536) groups = 65536;
  return (xr_hal_dispatch_t){.grid = {(uint32_t)groups, 1, 1},
                             .block = {XR_ROUTING_THREADS, 1, 1},
                             .args = args,
                             .arg_count = (uint32_t)count + 1};
}

static xr_status_t routing_prepare(const backend_t *b, const xr_op_plan_t *plan,
                                   xr_hal_device_t *device, const xr_tensor_t *t,
                                   void **out_state) {
  const xr_routing_problem_t *p = plan->problem;
  device_routing_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: %s: out of host memory", b->name,
                          plan->op->name);
  s->p = p;
  xr_routing_args_t *a = &s->args;
  a->rows = p->rows, a->cols = p->cols, a->k = p->k, a->words = p->words, a->tiles = p->tiles;
  bool topk = p->op == XR_ROUTING_TOPK;
  xr_status_t st = b->build(device, b->source, NULL, &s->exe);
  if (st == XR_OK)
    st = xr_hal_kernel_lookup(s->exe, topk ? "xr_routing_topk" : "xr_routing_sort_experts",
                              &s->first);
  if (st == XR_OK && !topk) st = xr_hal_kernel_lookup(s->exe, "xr_routing_sort_tail", &s->second);
  if (st != XR_OK) {
    routing_release(s);
    return xr_error_prefix(st, "%s: %s: ", b->name, plan->op->name);
  }
  xr_hal_kernel_arg_t *f = s->first_args, *g = s->second_args;
  if (topk) {
    a->x_off = t[p->x].offset, a->x_rs = p->x_rs, a->x_cs = p->x_cs, a->x_dtype = p->dtype;
    a->softmax = p->softmax;
    f[0] = xr_hal_arg_buffer(t[p->vals].buffer);
    f[1] = xr_hal_arg_buffer(t[p->indx].buffer);
    f[2] = xr_hal_arg_buffer(t[p->bits].buffer);
    f[3] = xr_hal_arg_buffer(t[p->x].buffer);
    s->first_d = launch(s, f, 4, p->rows);
  } else {
    a->scal_off = t[p->scal].offset, a->scal_rs = p->scal_rs, a->scal_cs = p->scal_cs;
    a->scal_esize = (long)xr_dtype_size(p->scal_dtype);
    a->ids_off = t[p->ids].offset, a->ids_rs = p->ids_rs, a->ids_cs = p->ids_cs;
    a->ids_dtype = p->ids_dtype;
    f[0] = xr_hal_arg_buffer(t[p->hist].buffer);
    f[1] = xr_hal_arg_buffer(t[p->combine].buffer);
    f[2] = xr_hal_arg_buffer(t[p->dispatch].buffer);
    f[3] = xr_hal_arg_buffer(t[p->gate].buffer);
    f[4] = xr_hal_arg_buffer(t[p->offs_raw].buffer);
    f[5] = xr_hal_arg_buffer(t[p->scal].buffer);
    f[6] = xr_hal_arg_buffer(t[p->ids].buffer);
    s->first_d = launch(s, f, 7, p->cols);
    g[0] = xr_hal_arg_buffer(t[p->combine].buffer);
    g[1] = xr_hal_arg_buffer(t[p->dispatch].buffer);
    g[2] = xr_hal_arg_buffer(t[p->gate].buffer);
    g[3] = xr_hal_arg_buffer(t[p->offs_raw].buffer);
    g[4] = xr_hal_arg_buffer(t[p->offs_pad].buffer);
    g[5] = xr_hal_arg_buffer(t[p->pid_map].buffer);
    g[6] = xr_hal_arg_buffer(t[p->hist].buffer);
    g[7] = xr_hal_arg_buffer(t[p->ids].buffer);
    s->second_d = launch(s, g, 8, XR_ROUTING_BLOCK_SIZES + 1);
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t routing_enqueue(void *state, xr_hal_stream_t *stream) {
  device_routing_t *s = state;
  if (s->p->op == XR_ROUTING_TOPK && s->p->rows == 0) return XR_OK;
  xr_status_t st = xr_hal_stream_dispatch(stream, s->first, &s->first_d);
  if (st == XR_OK && s->second) st = xr_hal_stream_dispatch(stream, s->second, &s->second_d);
  return st;
}

#define DEVICE_IMPL(symbol, backend_var, driver_name)                                     \
  static xr_status_t symbol##_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, \
                                      const xr_tensor_t *tensors, void **out_state) {    \
    return routing_prepare(&backend_var, plan, device, tensors, out_state);              \
  }                                                                                      \
  const xr_kernel_impl_t symbol = {                                                      \
      .name = #backend_var ".routing",                                                   \
      .driver = driver_name,                                                             \
      .prepare = symbol##_prepare,                                                       \
      .enqueue = routing_enqueue,                                                        \
      .release = routing_release,                                                        \
  };

DEVICE_IMPL(xr_routing_opencl, opencl, "opencl")
DEVICE_IMPL(xr_routing_gpu, gpu, "gpu")
