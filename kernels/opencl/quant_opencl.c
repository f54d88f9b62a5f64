/* opencl.quant: vLLM's fp8 quantization ops through kernels/opencl/quant.cl, bit-exact with
 * ref.quant. The dynamic op runs three dispatches (each item's max|x| into a scratch buffer
 * allocated at prepare(), their maximum into scale[0], the quantization); the others one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/opencl/sources.h"
#include "kernels/quant.h"

enum { WG = 64, SEGMENT = 4096, MAX_GROUPS = 1 << 16 };

/* Mirrors xr_quant_geometry in quant.cl. */
typedef struct cl_quant_geometry {
  int64_t rows, hidden, segments, items;
  int64_t in_off, in_rs, out_off, out_rs, scale_off, scale_si, scale_sj, group_m, group_n, ub_off;
  int64_t op, in_dtype, grouped, has_ub, fnuz;
  int64_t max_bits, min_scale_bits;
} cl_quant_geometry_t;

typedef struct cl_quant {
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *absmax, *reduce, *rows;
  xr_hal_buffer_t *partial;
  cl_quant_geometry_t g;
  xr_hal_kernel_arg_t absmax_args[3], reduce_args[3], rows_args[5];
  xr_hal_dispatch_t absmax_d, reduce_d, rows_d;
} cl_quant_t;

static void cl_release(void *state) {
  cl_quant_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  xr_hal_buffer_free(s->partial);
  free(s);
}

static uint32_t groups(int64_t items) { return items < 1 ? 1 : items > MAX_GROUPS ? MAX_GROUPS : (uint32_t)items; }

static xr_status_t cl_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                              void **out_state) {
  const xr_quant_problem_t *p = plan->problem;
  cl_quant_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  cl_quant_geometry_t *g = &s->g;
  g->rows = p->rows, g->hidden = p->hidden;
  g->segments = (p->hidden + SEGMENT - 1) / SEGMENT;
  g->items = p->op == XR_QUANT_PER_TOKEN ? p->rows : p->rows * g->segments;
  g->in_off = p->in_off, g->in_rs = p->in_rs, g->out_off = p->out_off, g->out_rs = p->out_rs;
  g->scale_off = p->scale_off, g->scale_si = p->scale_si, g->scale_sj = p->scale_sj;
  g->group_m = p->group_m, g->group_n = p->group_n, g->ub_off = p->ub_off;
  g->op = p->op, g->in_dtype = p->in_dtype, g->grouped = p->grouped, g->has_ub = p->scale_ub >= 0;
  g->fnuz = p->out_dtype == XR_DTYPE_F8E4M3FNUZ;
  g->max_bits = xr_f32_to_bits(p->fp8_max), g->min_scale_bits = xr_f32_to_bits(p->min_scale);
  char options[160];
  snprintf(options, sizeof options, "-cl-fp32-correctly-rounded-divide-sqrt -DWG=%d -DSEGMENT=%d", WG, SEGMENT);
  xr_status_t st = xr_opencl_build(device, "quant.cl", options, &s->exe);
  const char *rows = p->op == XR_QUANT_PER_TOKEN ? "xr_quant_per_token" : "xr_quant_rows";
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, rows, &s->rows);
  if (st == XR_OK && p->op == XR_QUANT_DYNAMIC) {
    if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, "xr_quant_absmax", &s->absmax);
    if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, "xr_quant_reduce", &s->reduce);
    if (st == XR_OK) st = xr_hal_buffer_alloc(device, sizeof(float) * (size_t)(g->items > 0 ? g->items : 1), &s->partial);
  }
  if (st != XR_OK) {
    cl_release(s);
    return xr_error_prefix(st, "opencl.quant: ");
  }
  xr_hal_buffer_t *in = tensors[p->input].buffer, *scale = tensors[p->scale].buffer;
  s->rows_args[0] = xr_hal_arg_buffer(tensors[p->result].buffer);
  s->rows_args[1] = xr_hal_arg_buffer(in);
  s->rows_args[2] = xr_hal_arg_buffer(scale);
  s->rows_args[3] = xr_hal_arg_buffer(p->scale_ub >= 0 ? tensors[p->scale_ub].buffer : scale); /* unread */
  s->rows_args[4] = xr_hal_arg_bytes(g, sizeof *g);
  s->rows_d = (xr_hal_dispatch_t){.grid = {groups(g->items), 1, 1}, .block = {WG, 1, 1}, .args = s->rows_args, .arg_count = 5};
  if (p->op == XR_QUANT_DYNAMIC) {
    s->absmax_args[0] = xr_hal_arg_buffer(s->partial);
    s->absmax_args[1] = xr_hal_arg_buffer(in);
    s->absmax_args[2] = xr_hal_arg_bytes(g, sizeof *g);
    s->absmax_d = (xr_hal_dispatch_t){
        .grid = {groups(g->items), 1, 1}, .block = {WG, 1, 1}, .args = s->absmax_args, .arg_count = 3};
    s->reduce_args[0] = xr_hal_arg_buffer(scale);
    s->reduce_args[1] = xr_hal_arg_buffer(s->partial);
    s->reduce_args[2] = xr_hal_arg_bytes(g, sizeof *g);
    s->reduce_d = (xr_hal_dispatch_t){.grid = {1, 1, 1}, .block = {WG, 1, 1}, .args = s->reduce_args, .arg_count = 3};
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t cl_enqueue(void *state, xr_hal_stream_t *stream) {
  cl_quant_t *s = state;
  xr_status_t st = XR_OK;
  if (s->absmax && s->g.items > 0) st = xr_hal_stream_dispatch(stream, s->absmax, &s->absmax_d);
  if (st == XR_OK && s->reduce) st = xr_hal_stream_dispatch(stream, s->reduce, &s->reduce_d);
  if (st == XR_OK && s->g.items > 0 && s->g.hidden > 0) st = xr_hal_stream_dispatch(stream, s->rows, &s->rows_d);
  return st;
}

const xr_kernel_impl_t xr_quant_opencl_impl = {
    .name = "opencl.quant",
    .driver = "opencl",
    .prepare = cl_prepare,
    .enqueue = cl_enqueue,
    .release = cl_release,
};
