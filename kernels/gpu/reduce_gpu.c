/* gpu.reduce: the reduce family on cuda and hip devices through kernels/gpu/reduce.cu, compiled
 * once per device (NVRTC / hiprtc, cached on disk) and launched through the HAL; the twin of
 * kernels/opencl/reduce_opencl.c covering the same problems: f32, f16 and bf16 inputs (and the
 * integer problems of xr_reduce_int_pipeline in 64-bit integers), at most
 * 6 kept and 6 reduced dims after merging, sorts of rows up to 4096 elements and topk of longer
 * rows with k <= 16. */
#include <stdlib.h>
#include <string.h>

#include "kernels/gpu/reduce_params.h"
#include "kernels/gpu/sources.h"
#include "kernels/reduce.h"

_Static_assert(XR_REDUCE_GPU_SUM == XR_REDUCE_SUM && XR_REDUCE_GPU_NANSUM == XR_REDUCE_NANSUM &&
                   XR_REDUCE_GPU_MEAN == XR_REDUCE_MEAN && XR_REDUCE_GPU_PROD == XR_REDUCE_PROD &&
                   XR_REDUCE_GPU_MAX == XR_REDUCE_MAX && XR_REDUCE_GPU_MIN == XR_REDUCE_MIN &&
                   XR_REDUCE_GPU_ALL == XR_REDUCE_ALL && XR_REDUCE_GPU_ANY == XR_REDUCE_ANY &&
                   XR_REDUCE_GPU_COUNT == XR_REDUCE_COUNT_NONZERO &&
                   XR_REDUCE_GPU_LSE == XR_REDUCE_LOGSUMEXP && XR_REDUCE_GPU_VAR == XR_REDUCE_VAR &&
                   XR_REDUCE_GPU_STD == XR_REDUCE_STD && XR_REDUCE_GPU_NORM == XR_REDUCE_NORM &&
                   XR_REDUCE_GPU_CUMSUM == XR_REDUCE_CUMSUM &&
                   XR_REDUCE_GPU_CUMPROD == XR_REDUCE_CUMPROD && XR_REDUCE_GPU_SORT == XR_REDUCE_SORT,
               "reduce_params.h mirrors xr_reduce_op_t");
_Static_assert(XR_REDUCE_GPU_NORM_P == XR_NORM_P && XR_REDUCE_GPU_NORM_1 == XR_NORM_1 &&
                   XR_REDUCE_GPU_NORM_2 == XR_NORM_2 && XR_REDUCE_GPU_NORM_INF == XR_NORM_INF &&
                   XR_REDUCE_GPU_NORM_NEG_INF == XR_NORM_NEG_INF && XR_REDUCE_GPU_NORM_0 == XR_NORM_0,
               "reduce_params.h mirrors xr_reduce_norm_kind_t");

#define MAX_BLOCKS (1u << 20) /* per launch; the kernels loop over the rest */

static uint32_t blocks_for(int64_t items) {
  return items < 1 ? 1 : items > MAX_BLOCKS ? MAX_BLOCKS : (uint32_t)items;
}

static xr_status_t gpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  xr_status_t st =
      xr_reduce_int_pipeline(plan->problem) ? XR_OK : xr_reduce_check_fast(plan, "GPU");
  if (st != XR_OK) return st;
  const xr_reduce_problem_t *p = plan->problem;
  if (p->outer_rank > XR_REDUCE_GPU_MAX_DIMS || p->red_rank > XR_REDUCE_GPU_MAX_DIMS)
    return xr_error(XR_UNIMPLEMENTED, "GPU kernels: %s: more than %d kept or reduced dims after "
                    "merging", plan->op->name, XR_REDUCE_GPU_MAX_DIMS);
  if (p->op == XR_REDUCE_SORT && p->red_shape[0] > XR_REDUCE_GPU_SORT_MAX &&
      p->k > XR_REDUCE_GPU_TOPK_MAX)
    return xr_error(XR_UNIMPLEMENTED, "GPU kernels: %s: rows of %lld elements (sorts take at most "
                    "%d, topk of longer rows k <= %d)", plan->op->name,
                    (long long)p->red_shape[0], XR_REDUCE_GPU_SORT_MAX, XR_REDUCE_GPU_TOPK_MAX);
  if (p->op == XR_REDUCE_SORT && p->red_shape[0] > (int64_t)UINT32_MAX)
    return xr_error(XR_UNIMPLEMENTED, "GPU kernels: %s: rows of 2^32 elements or more",
                    plan->op->name);
  return XR_OK;
}

typedef struct gpu_reduce {
  xr_hal_executable_t *executable;
  xr_hal_kernel_t *kernel;
  xr_reduce_gpu_params_t params;
  xr_hal_kernel_arg_t args[4];
  xr_hal_dispatch_t dispatch;
  bool empty; /* nothing to write */
} gpu_reduce_t;

static void gpu_release(void *state) {
  gpu_reduce_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->executable);
  free(s);
}

static xr_status_t gpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  const xr_reduce_problem_t *p = plan->problem;
  gpu_reduce_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  bool integers = xr_reduce_int_pipeline(p);
  bool groups = integers || p->red_numel >= XR_REDUCE_GPU_GROUP_MIN;
  const char *kernel = p->op == XR_REDUCE_SORT ? "xr_reduce_sort"
                       : xr_reduce_is_scan(p->op)
                           ? (integers ? "xr_reduce_scan_int" : "xr_reduce_scan")
                       : integers ? "xr_reduce_int"
                       : groups   ? "xr_reduce_groups"
                                  : "xr_reduce_items";
  xr_status_t status = xr_gpu_build(device, "reduce.cu", NULL, &s->executable);
  if (status == XR_OK) status = xr_hal_kernel_lookup(s->executable, kernel, &s->kernel);
  if (status != XR_OK) {
    gpu_release(s);
    return xr_error_prefix(status, "%s: ", plan->op->name);
  }
  xr_reduce_gpu_params_t *q = &s->params;
  q->outer_rank = p->outer_rank, q->red_rank = p->red_rank;
  q->outer_numel = p->outer_numel, q->red_numel = p->red_numel;
  for (int d = 0; d < p->outer_rank; d++) {
    q->outer_shape[d] = p->outer_shape[d], q->in_outer[d] = p->in_outer[d];
    for (int k = 0; k < XR_REDUCE_OUTPUTS; k++) q->out_outer[k][d] = p->out[k].outer_strides[d];
  }
  for (int d = 0; d < p->red_rank; d++) q->red_shape[d] = p->red_shape[d], q->in_red[d] = p->in_red[d];
  q->in_offset = tensors[p->self].offset;
  q->in_dtype = (int)p->in_dtype;
  q->round_dtype = p->cast != p->in_dtype && p->cast != XR_DTYPE_F32 ? (int)p->cast : 0;
  xr_hal_buffer_t *outs[XR_REDUCE_OUTPUTS] = {NULL, NULL};
  for (int k = 0; k < XR_REDUCE_OUTPUTS; k++) {
    const xr_reduce_output_t *o = &p->out[k];
    if (o->index < 0) continue;
    outs[k] = tensors[o->index].buffer;
    q->out_offset[k] = tensors[o->index].offset;
    q->out_dim_stride[k] = o->dim_stride;
    q->out_dtype[k] = (int)o->dtype;
    q->has_out[k] = 1;
  }
  q->k = p->k;
  q->op = (int)p->op;
  q->norm = (int)xr_reduce_norm_kind(p->p);
  q->descending = p->descending;
  q->p = (float)p->p;
  q->correction = (float)p->correction;
  /* An absent output is never written; any buffer of the device will do. */
  xr_hal_buffer_t *fallback = outs[0] ? outs[0] : outs[1];
  s->args[0] = xr_hal_arg_buffer(tensors[p->self].buffer);
  s->args[1] = xr_hal_arg_buffer(outs[0] ? outs[0] : fallback);
  s->args[2] = xr_hal_arg_buffer(outs[1] ? outs[1] : fallback);
  s->args[3] = xr_hal_arg_bytes(q, sizeof *q);
  bool per_block = p->op == XR_REDUCE_SORT || xr_reduce_is_scan(p->op) || groups;
  int64_t threads = XR_REDUCE_GPU_THREADS;
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {per_block ? blocks_for(p->outer_numel) : blocks_for((p->outer_numel + threads - 1) / threads), 1, 1},
      .block = {XR_REDUCE_GPU_THREADS, 1, 1},
      .args = s->args,
      .arg_count = 4,
  };
  s->empty = p->outer_numel == 0 ||
             (xr_reduce_along(p->op) && (p->red_shape[0] == 0 || (p->op == XR_REDUCE_SORT && p->k == 0)));
  *out_state = s;
  return XR_OK;
}

static xr_status_t gpu_enqueue(void *state, xr_hal_stream_t *stream) {
  gpu_reduce_t *s = state;
  if (s->empty) return XR_OK;
  return xr_hal_stream_dispatch(stream, s->kernel, &s->dispatch);
}

const xr_kernel_impl_t xr_gpu_reduce = {
    .name = "gpu.reduce",
    .driver = "gpu",
    .supports = gpu_supports,
    .prepare = gpu_prepare,
    .enqueue = gpu_enqueue,
    .release = gpu_release,
};
