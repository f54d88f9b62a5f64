/* gpu.quant: vLLM's fp8 quantization ops on cuda and hip devices (kernels/gpu/quant.cu, built
 * once per device, launched through the HAL), the twin of kernels/opencl/quant_opencl.c: the
 * dynamic op runs three launches (each item's max|x| into a scratch buffer allocated at
 * prepare(), their maximum into scale[0], the quantization), the others one. */
#include <stdlib.h>
#include <string.h>

#include "kernels/family.h"
#include "kernels/gpu/quant_params.h"
#include "kernels/gpu/sources.h"
#include "kernels/quant.h"

_Static_assert(XR_QUANT_GPU_STATIC == XR_QUANT_STATIC && XR_QUANT_GPU_DYNAMIC == XR_QUANT_DYNAMIC &&
                   XR_QUANT_GPU_PER_TOKEN == XR_QUANT_PER_TOKEN,
               "quant_params.h mirrors xr_quant_op_t");

#define MAX_BLOCKS (1u << 20)

typedef struct gpu_quant {
  xr_hal_executable_t *executable;
  xr_hal_kernel_t *absmax, *reduce, *rows;
  xr_hal_buffer_t *partial;
  xr_quant_gpu_params_t params;
  xr_hal_kernel_arg_t absmax_args[3], reduce_args[3], rows_args[5];
  xr_hal_dispatch_t absmax_d, reduce_d, rows_d;
} gpu_quant_t;

static void gpu_release(void *state) {
  gpu_quant_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->executable);
  xr_hal_buffer_free(s->partial);
  free(s);
}

static uint32_t blocks(long long items) {
  return items < 1 ? 1 : items > MAX_BLOCKS ? MAX_BLOCKS : (uint32_t)items;
}

static xr_status_t gpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                               void **out_state) {
  const xr_quant_problem_t *p = plan->problem;
  gpu_quant_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  xr_quant_gpu_params_t *q = &s->params;
  q->rows = p->rows, q->hidden = p->hidden;
  q->segments = (p->hidden + XR_QUANT_GPU_SEGMENT - 1) / XR_QUANT_GPU_SEGMENT;
  q->items = p->op == XR_QUANT_PER_TOKEN ? p->rows : p->rows * q->segments;
  q->in_off = p->in_off, q->in_rs = p->in_rs, q->out_off = p->out_off, q->out_rs = p->out_rs;
  q->scale_off = p->scale_off, q->scale_si = p->scale_si, q->scale_sj = p->scale_sj;
  q->group_m = p->group_m, q->group_n = p->group_n, q->ub_off = p->ub_off;
  q->fp8_max = p->fp8_max, q->min_scale = p->min_scale;
  q->op = (int)p->op, q->in_dtype = (int)p->in_dtype, q->out_dtype = (int)p->out_dtype;
  q->grouped = p->grouped, q->has_ub = p->scale_ub >= 0;
  xr_status_t st = xr_gpu_build(device, "quant.cu", NULL, &s->executable);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->executable, "xr_quant_rows", &s->rows);
  if (st == XR_OK && p->op == XR_QUANT_DYNAMIC) {
    if (st == XR_OK) st = xr_hal_kernel_lookup(s->executable, "xr_quant_absmax", &s->absmax);
    if (st == XR_OK) st = xr_hal_kernel_lookup(s->executable, "xr_quant_reduce", &s->reduce);
    if (st == XR_OK)
      st = xr_hal_buffer_alloc(device, sizeof(float) * (size_t)(q->items > 0 ? q->items : 1), &s->partial);
  }
  if (st != XR_OK) {
    gpu_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  xr_hal_buffer_t *in = tensors[p->input].buffer, *scale = tensors[p->scale].buffer;
  s->rows_args[0] = xr_hal_arg_buffer(tensors[p->result].buffer);
  s->rows_args[1] = xr_hal_arg_buffer(in);
  s->rows_args[2] = xr_hal_arg_buffer(scale);
  s->rows_args[3] = xr_hal_arg_buffer(p->scale_ub >= 0 ? tensors[p->scale_ub].buffer : scale); /* unread */
  s->rows_args[4] = xr_hal_arg_bytes(q, sizeof *q);
  s->rows_d = (xr_hal_dispatch_t){.grid = {blocks(q->items), 1, 1},
                                  .block = {XR_QUANT_GPU_THREADS, 1, 1},
                                  .args = s->rows_args,
                                  .arg_count = 5};
  if (p->op == XR_QUANT_DYNAMIC) {
    s->absmax_args[0] = xr_hal_arg_buffer(s->partial);
    s->absmax_args[1] = xr_hal_arg_buffer(in);
    s->absmax_args[2] = xr_hal_arg_bytes(q, sizeof *q);
    s->absmax_d = (xr_hal_dispatch_t){.grid = {blocks(q->items), 1, 1},
                                      .block = {XR_QUANT_GPU_THREADS, 1, 1},
                                      .args = s->absmax_args,
                                      .arg_count = 3};
    s->reduce_args[0] = xr_hal_arg_buffer(scale);
    s->reduce_args[1] = xr_hal_arg_buffer(s->partial);
    s->reduce_args[2] = xr_hal_arg_bytes(q, sizeof *q);
    s->reduce_d = (xr_hal_dispatch_t){
        .grid = {1, 1, 1}, .block = {XR_QUANT_GPU_THREADS, 1, 1}, .args = s->reduce_args, .arg_count = 3};
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t gpu_enqueue(void *state, xr_hal_stream_t *stream) {
  gpu_quant_t *s = state;
  xr_status_t st = XR_OK;
  if (s->absmax && s->params.items > 0) st = xr_hal_stream_dispatch(stream, s->absmax, &s->absmax_d);
  if (st == XR_OK && s->reduce) st = xr_hal_stream_dispatch(stream, s->reduce, &s->reduce_d);
  if (st == XR_OK && s->params.items > 0 && s->params.hidden > 0)
    st = xr_hal_stream_dispatch(stream, s->rows, &s->rows_d);
  return st;
}

const xr_kernel_impl_t xr_quant_gpu_impl = {
    .name = "gpu.quant",
    .driver = "gpu",
    .prepare = gpu_prepare,
    .enqueue = gpu_enqueue,
    .release = gpu_release,
};
