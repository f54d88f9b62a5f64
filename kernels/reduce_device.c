/* opencl.reduce and gpu.reduce: the reduce family on the kernels that kernels/opencl/reduce.cl
 * and kernels/gpu/reduce.cu (NVRTC / hiprtc) define alike, one program for every problem (ops
 * and dtypes are arguments, kernels/reduce_args.h). f32, f16 and bf16 inputs, and the integer
 * problems of xr_reduce_int_pipeline in 64-bit integers; also integer elements converted to a
 * float cast (xr_reduce_int_to_float, the float kernels loading integers) and
 * integer sorts (xr_reduce_sort_int, 64-bit keys); at most XR_REDUCE_DEV_DIMS kept and
 * reduced dims after merging; sorts of rows up to the backend's sort_max elements, and topk of
 * longer rows with k <= XR_REDUCE_DEV_TOPK_MAX. Float reductions of XR_REDUCE_DEV_GROUP_MIN
 * elements and more take a work-group / block each, shorter ones a work-item / thread each;
 * integer ones always a group. Launches cover at most MAX_GROUPS groups: the kernels loop over
 * the rest. */
#include <stdlib.h>

#include "kernels/family.h"
#include "kernels/gpu/sources.h"
#include "kernels/opencl/sources.h"
#include "kernels/reduce.h"
#include "kernels/reduce_args.h"

_Static_assert(sizeof(long) == 8, "the device argument block needs a 64-bit long");
_Static_assert(XR_REDUCE_DEV_SUM == XR_REDUCE_SUM && XR_REDUCE_DEV_NANSUM == XR_REDUCE_NANSUM &&
                   XR_REDUCE_DEV_MEAN == XR_REDUCE_MEAN && XR_REDUCE_DEV_PROD == XR_REDUCE_PROD &&
                   XR_REDUCE_DEV_MAX == XR_REDUCE_MAX && XR_REDUCE_DEV_MIN == XR_REDUCE_MIN &&
                   XR_REDUCE_DEV_ALL == XR_REDUCE_ALL && XR_REDUCE_DEV_ANY == XR_REDUCE_ANY &&
                   XR_REDUCE_DEV_COUNT == XR_REDUCE_COUNT_NONZERO &&
                   XR_REDUCE_DEV_LSE == XR_REDUCE_LOGSUMEXP && XR_REDUCE_DEV_VAR == XR_REDUCE_VAR &&
                   XR_REDUCE_DEV_STD == XR_REDUCE_STD && XR_REDUCE_DEV_NORM == XR_REDUCE_NORM &&
                   XR_REDUCE_DEV_CUMSUM == XR_REDUCE_CUMSUM &&
                   XR_REDUCE_DEV_CUMPROD == XR_REDUCE_CUMPROD &&
                   XR_REDUCE_DEV_SORT == XR_REDUCE_SORT,
               "reduce_args.h's op codes are xr_reduce_op_t's");
_Static_assert(XR_REDUCE_DEV_NORM_P == XR_NORM_P && XR_REDUCE_DEV_NORM_1 == XR_NORM_1 &&
                   XR_REDUCE_DEV_NORM_2 == XR_NORM_2 && XR_REDUCE_DEV_NORM_INF == XR_NORM_INF &&
                   XR_REDUCE_DEV_NORM_NEG_INF == XR_NORM_NEG_INF &&
                   XR_REDUCE_DEV_NORM_0 == XR_NORM_0,
               "reduce_args.h's norm codes are xr_reduce_norm_kind_t's");
_Static_assert(XR_REDUCE_DEV_DIMS <= XR_MAX_RANK, "merged dims fit the problem's");

#define MAX_GROUPS (1u << 20)

typedef struct backend {
  const char *name, *label; /* "opencl.reduce", and as xr_reduce_check_fast names it */
  const char *source;
  xr_status_t (*build)(xr_hal_device_t *device, const char *file, const char *options,
                       xr_hal_executable_t **out_executable);
  uint32_t group_threads; /* the kernels' fixed work-group / block width */
  uint32_t item_threads;  /* xr_reduce_items: outputs per work-group / block */
  int64_t sort_max;
} backend_t;

static const backend_t opencl = {"opencl.reduce", "opencl", "reduce.cl", xr_opencl_build,
                                 XR_REDUCE_OPENCL_THREADS, 64, XR_REDUCE_OPENCL_SORT_MAX};
static const backend_t gpu = {"gpu.reduce", "GPU", "reduce.cu", xr_gpu_build,
                              XR_REDUCE_GPU_THREADS, XR_REDUCE_GPU_THREADS, XR_REDUCE_GPU_SORT_MAX};

static xr_status_t reduce_supports(const backend_t *b, const xr_op_plan_t *plan,
                                   xr_hal_device_t *device) {
  (void)device;
  const xr_reduce_problem_t *p = plan->problem;
  bool int_sort = xr_reduce_int_sort(p);
  xr_status_t st = int_sort || xr_reduce_int_pipeline(p) ? XR_OK : xr_reduce_check_fast(plan, b->label);
  if (st != XR_OK) return st;
  if (p->outer_rank > XR_REDUCE_DEV_DIMS || p->red_rank > XR_REDUCE_DEV_DIMS)
    return xr_error(XR_UNIMPLEMENTED, "%s kernels: %s: more than %d kept or reduced dims after "
                    "merging", b->label, plan->op->name, XR_REDUCE_DEV_DIMS);
  if (p->op == XR_REDUCE_SORT && p->red_shape[0] > b->sort_max && p->k > XR_REDUCE_DEV_TOPK_MAX)
    return xr_error(XR_UNIMPLEMENTED, "%s kernels: %s: rows of %lld elements (sorts take at most "
                    "%lld, topk of longer rows k <= %d)", b->label, plan->op->name,
                    (long long)p->red_shape[0], (long long)b->sort_max, XR_REDUCE_DEV_TOPK_MAX);
  if (p->op == XR_REDUCE_SORT && p->red_shape[0] > (int64_t)UINT32_MAX)
    return xr_error(XR_UNIMPLEMENTED, "%s kernels: %s: rows of 2^32 elements or more", b->label,
                    plan->op->name);
  return XR_OK;
}

typedef struct reduce_launch {
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *kernel;
  xr_reduce_dev_args_t block;
  xr_hal_kernel_arg_t args[4];
  xr_hal_dispatch_t dispatch;
  bool empty; /* nothing to write */
} reduce_launch_t;

static void reduce_release(void *state) {
  reduce_launch_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  free(s);
}

static uint32_t groups_for(int64_t n) {
  return n < 1 ? 1 : n > MAX_GROUPS ? MAX_GROUPS : (uint32_t)n;
}

static void fill_block(const xr_reduce_problem_t *p, const xr_tensor_t *tensors,
                       xr_reduce_dev_args_t *a) {
  a->outer_rank = p->outer_rank, a->red_rank = p->red_rank;
  a->outer_numel = p->outer_numel, a->red_numel = p->red_numel;
  for (int d = 0; d < p->outer_rank; d++) {
    a->outer_shape[d] = p->outer_shape[d], a->in_outer[d] = p->in_outer[d];
    for (int k = 0; k < XR_REDUCE_OUTPUTS; k++) a->out_outer[k][d] = p->out[k].outer_strides[d];
  }
  for (int d = 0; d < p->red_rank; d++)
    a->red_shape[d] = p->red_shape[d], a->in_red[d] = p->in_red[d];
  a->in_offset = tensors[p->self].offset;
  a->in_dtype = (int)p->in_dtype;
  a->round_dtype = p->cast != p->in_dtype && p->cast != XR_DTYPE_F32 ? (int)p->cast : 0;
  for (int k = 0; k < XR_REDUCE_OUTPUTS; k++) {
    const xr_reduce_output_t *o = &p->out[k];
    if (o->index < 0) continue;
    a->out_offset[k] = tensors[o->index].offset;
    a->out_dim_stride[k] = o->dim_stride;
    a->out_dtype[k] = (int)o->dtype;
    a->has_out[k] = 1;
  }
  a->k = p->k;
  a->op = (int)p->op;
  a->norm = (int)xr_reduce_norm_kind(p->p);
  a->descending = p->descending;
  a->p = (float)p->p;
  a->correction = (float)p->correction;
}

static xr_status_t reduce_prepare(const backend_t *b, const xr_op_plan_t *plan,
                                  xr_hal_device_t *device, const xr_tensor_t *tensors,
                                  void **out_state) {
  const xr_reduce_problem_t *p = plan->problem;
  reduce_launch_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  bool integers = xr_reduce_int_pipeline(p);
  bool groups = integers || p->red_numel >= XR_REDUCE_DEV_GROUP_MIN;
  const char *kernel = p->op == XR_REDUCE_SORT ? (xr_reduce_int_sort(p) ? "xr_reduce_sort_int"
                                                                        : "xr_reduce_sort")
                       : xr_reduce_is_scan(p->op)
                           ? (integers ? "xr_reduce_scan_int" : "xr_reduce_scan")
                       : integers ? "xr_reduce_int"
                       : groups   ? "xr_reduce_groups"
                                  : "xr_reduce_items";
  xr_status_t st = b->build(device, b->source, NULL, &s->exe);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, kernel, &s->kernel);
  if (st != XR_OK) {
    reduce_release(s);
    return xr_error_prefix(st, "%s: %s: ", b->name, plan->op->name);
  }
  fill_block(p, tensors, &s->block);
  xr_hal_buffer_t *outs[XR_REDUCE_OUTPUTS] = {NULL, NULL};
  for (int k = 0; k < XR_REDUCE_OUTPUTS; k++)
    if (p->out[k].index >= 0) outs[k] = tensors[p->out[k].index].buffer;
  /* An absent output is never written; any buffer of the device will do. */
  xr_hal_buffer_t *fallback = outs[0] ? outs[0] : outs[1];
  s->args[0] = xr_hal_arg_buffer(tensors[p->self].buffer);
  s->args[1] = xr_hal_arg_buffer(outs[0] ? outs[0] : fallback);
  s->args[2] = xr_hal_arg_buffer(outs[1] ? outs[1] : fallback);
  s->args[3] = xr_hal_arg_bytes(&s->block, sizeof s->block);
  bool per_group = p->op == XR_REDUCE_SORT || xr_reduce_is_scan(p->op) || groups;
  uint32_t threads = per_group ? b->group_threads : b->item_threads;
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {groups_for(per_group ? p->outer_numel : (p->outer_numel + threads - 1) / threads),
               1, 1},
      .block = {threads, 1, 1},
      .args = s->args,
      .arg_count = 4,
  };
  s->empty =
      p->outer_numel == 0 ||
      (xr_reduce_along(p->op) && (p->red_shape[0] == 0 || (p->op == XR_REDUCE_SORT && p->k == 0)));
  *out_state = s;
  return XR_OK;
}

static xr_status_t reduce_enqueue(void *state, xr_hal_stream_t *stream) {
  reduce_launch_t *s = state;
  if (s->empty) return XR_OK;
  return xr_hal_stream_dispatch(stream, s->kernel, &s->dispatch);
}

XR_DEVICE_IMPL(xr_opencl_reduce, "opencl.reduce", "opencl", opencl, reduce_supports,
               reduce_prepare, reduce_enqueue, reduce_release)
XR_DEVICE_IMPL(xr_gpu_reduce, "gpu.reduce", "gpu", gpu, reduce_supports, reduce_prepare,
               reduce_enqueue, reduce_release)
