/* opencl.reduce: the reduce family through kernels/opencl/reduce.cl (one build serves every
 * problem: ops and dtypes are arguments). f32, f16 and bf16 inputs, and the integer problems of
 * xr_reduce_int_pipeline in 64-bit integers; at most 6 kept and 6 reduced dims after merging;
 * sorts of rows up to 2048 elements, and topk of longer rows with k <= 16. Float reductions of
 * 128 elements and more take a work-group each, shorter ones a work-item each; integer ones
 * always a work-group. */
#include <stdlib.h>
#include <string.h>

#include "kernels/opencl/sources.h"
#include "kernels/reduce.h"

enum {
  WG = 128,           /* XR_WG in reduce.cl */
  MAX_DIMS = 6,       /* XR_MAX_DIMS */
  SORT_MAX = 2048,    /* XR_SORT_MAX */
  TOPK_MAX = 16,      /* XR_TOPK_MAX */
  GROUP_MIN = 128,    /* reduced extents from which a work-group takes an output */
  MAX_GROUPS = 1 << 20,
};

/* Mirrors xr_reduce_args in reduce.cl. */
typedef struct cl_reduce_args {
  int64_t outer_shape[MAX_DIMS], in_outer[MAX_DIMS];
  int64_t out0_outer[MAX_DIMS], out1_outer[MAX_DIMS];
  int64_t red_shape[MAX_DIMS], in_red[MAX_DIMS];
  int64_t outer_rank, red_rank, outer_numel, red_numel;
  int64_t in_offset, in_dtype, round_dtype;
  int64_t out0_offset, out0_dtype, out0_dim_stride, has_out0;
  int64_t out1_offset, out1_dtype, out1_dim_stride, has_out1;
  int64_t op, norm, k, descending;
  float p, correction;
} cl_reduce_args_t;

typedef struct cl_reduce {
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *kernel;
  cl_reduce_args_t a;
  xr_hal_kernel_arg_t args[4];
  xr_hal_dispatch_t dispatch;
  bool empty; /* nothing to write */
} cl_reduce_t;

static xr_status_t cl_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_reduce_problem_t *p = plan->problem;
  xr_status_t st = xr_reduce_int_pipeline(p) ? XR_OK : xr_reduce_check_fast(plan, "opencl");
  if (st != XR_OK) return st;
  if (p->outer_rank > MAX_DIMS || p->red_rank > MAX_DIMS)
    return xr_error(XR_UNIMPLEMENTED, "opencl kernels: %s: more than %d kept or reduced dims "
                    "after merging", plan->op->name, MAX_DIMS);
  if (p->op == XR_REDUCE_SORT && p->red_shape[0] > SORT_MAX && p->k > TOPK_MAX)
    return xr_error(XR_UNIMPLEMENTED, "opencl kernels: %s: rows of %lld elements (sorts take at "
                    "most %d, topk of longer rows k <= %d)", plan->op->name,
                    (long long)p->red_shape[0], SORT_MAX, TOPK_MAX);
  if (p->op == XR_REDUCE_SORT && p->red_shape[0] > (int64_t)UINT32_MAX)
    return xr_error(XR_UNIMPLEMENTED, "opencl kernels: %s: rows of 2^32 elements or more",
                    plan->op->name);
  return XR_OK;
}

static void cl_release(void *state) {
  cl_reduce_t *s = state;
  if (s) xr_hal_executable_destroy(s->exe);
  free(s);
}

static uint32_t capped(int64_t n) { return n < 1 ? 1 : n > MAX_GROUPS ? MAX_GROUPS : (uint32_t)n; }

static xr_status_t cl_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                              const xr_tensor_t *tensors, void **out_state) {
  const xr_reduce_problem_t *p = plan->problem;
  cl_reduce_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  bool integers = xr_reduce_int_pipeline(p), groups = integers || p->red_numel >= GROUP_MIN;
  const char *kernel = p->op == XR_REDUCE_SORT      ? "xr_sort"
                       : xr_reduce_is_scan(p->op) ? (integers ? "xr_scan_int" : "xr_scan")
                       : integers                 ? "xr_reduce_int"
                       : groups                   ? "xr_reduce_groups"
                                                  : "xr_reduce_items";
  xr_status_t st = xr_opencl_build(device, "reduce.cl", NULL, &s->exe);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, kernel, &s->kernel);
  if (st != XR_OK) {
    cl_release(s);
    return xr_error_prefix(st, "opencl.reduce: ");
  }
  cl_reduce_args_t *a = &s->a;
  a->outer_rank = p->outer_rank, a->red_rank = p->red_rank;
  a->outer_numel = p->outer_numel, a->red_numel = p->red_numel;
  for (int d = 0; d < p->outer_rank; d++) {
    a->outer_shape[d] = p->outer_shape[d], a->in_outer[d] = p->in_outer[d];
    a->out0_outer[d] = p->out[0].outer_strides[d], a->out1_outer[d] = p->out[1].outer_strides[d];
  }
  for (int d = 0; d < p->red_rank; d++) a->red_shape[d] = p->red_shape[d], a->in_red[d] = p->in_red[d];
  a->in_offset = tensors[p->self].offset;
  a->in_dtype = p->in_dtype;
  a->round_dtype = p->cast != p->in_dtype && p->cast != XR_DTYPE_F32 ? p->cast : 0;
  xr_hal_buffer_t *any = tensors[p->self].buffer;
  xr_hal_buffer_t *outs[XR_REDUCE_OUTPUTS] = {NULL, NULL};
  for (int k = 0; k < XR_REDUCE_OUTPUTS; k++) {
    const xr_reduce_output_t *o = &p->out[k];
    if (o->index < 0) continue;
    outs[k] = tensors[o->index].buffer;
    int64_t *fields[2][4] = {{&a->out0_offset, &a->out0_dtype, &a->out0_dim_stride, &a->has_out0},
                             {&a->out1_offset, &a->out1_dtype, &a->out1_dim_stride, &a->has_out1}};
    *fields[k][0] = tensors[o->index].offset;
    *fields[k][1] = o->dtype;
    *fields[k][2] = o->dim_stride;
    *fields[k][3] = 1;
  }
  a->op = p->op;
  a->norm = xr_reduce_norm_kind(p->p);
  a->k = p->k;
  a->descending = p->descending;
  a->p = (float)p->p;
  a->correction = (float)p->correction;
  /* An absent output is never written; any buffer of the device will do. */
  xr_hal_buffer_t *fallback = outs[0] ? outs[0] : outs[1];
  s->args[0] = xr_hal_arg_bytes(a, sizeof *a);
  s->args[1] = xr_hal_arg_buffer(any);
  s->args[2] = xr_hal_arg_buffer(outs[0] ? outs[0] : fallback);
  s->args[3] = xr_hal_arg_buffer(outs[1] ? outs[1] : fallback);
  bool per_group = p->op == XR_REDUCE_SORT || xr_reduce_is_scan(p->op) || groups;
  uint32_t block = per_group ? WG : 64;
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {per_group ? capped(p->outer_numel) : capped((p->outer_numel + 63) / 64), 1, 1},
      .block = {block, 1, 1},
      .args = s->args,
      .arg_count = 4,
  };
  s->empty = p->outer_numel == 0 ||
             (xr_reduce_along(p->op) && (p->red_shape[0] == 0 || (p->op == XR_REDUCE_SORT && p->k == 0)));
  *out_state = s;
  return XR_OK;
}

static xr_status_t cl_enqueue(void *state, xr_hal_stream_t *stream) {
  cl_reduce_t *s = state;
  if (s->empty) return XR_OK;
  return xr_hal_stream_dispatch(stream, s->kernel, &s->dispatch);
}

const xr_kernel_impl_t xr_opencl_reduce = {
    .name = "opencl.reduce",
    .driver = "opencl",
    .supports = cl_supports,
    .prepare = cl_prepare,
    .enqueue = cl_enqueue,
    .release = cl_release,
};
