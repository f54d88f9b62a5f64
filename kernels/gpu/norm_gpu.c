/* The row families (softmax; layer norm, RMS norm, fused add + RMS norm) and rotary embedding
 * on cuda and hip devices: kernels/gpu/norm.cu, compiled once per device (NVRTC / hiprtc,
 * cached on disk), launched through the HAL. The twins of kernels/opencl/norm_opencl.c,
 * covering the same problems: f32, f16 and bf16 tensors (f32 statistics), the normalised dims
 * one strided run in every tensor, rows over up to 8 merged dims. Two impls per family share
 * the code and differ in .driver. */
#include <stdlib.h>
#include <string.h>

#include "kernels/gpu/norm_params.h"
#include "kernels/gpu/sources.h"
#include "kernels/norm.h"

_Static_assert(XR_ROWS_GPU_X == XR_ROWS_X && XR_ROWS_GPU_OUT == XR_ROWS_OUT &&
                   XR_ROWS_GPU_RESIDUAL_IN == XR_ROWS_RESIDUAL_IN &&
                   XR_ROWS_GPU_RESIDUAL_OUT == XR_ROWS_RESIDUAL_OUT &&
                   XR_ROWS_GPU_WEIGHT == XR_ROWS_WEIGHT && XR_ROWS_GPU_BIAS == XR_ROWS_BIAS &&
                   XR_ROWS_GPU_MEAN == XR_ROWS_MEAN && XR_ROWS_GPU_RSTD == XR_ROWS_RSTD &&
                   XR_ROWS_GPU_OPERANDS == XR_ROWS_OPERANDS,
               "norm_params.h mirrors the XR_ROWS_* operand slots");

/* Blocks of one launch; the kernels loop over the rest. */
#define MAX_BLOCKS (1u << 20)

static uint32_t blocks_for(int64_t items) {
  return items < 1 ? 1 : items > MAX_BLOCKS ? MAX_BLOCKS : (uint32_t)items;
}

/* ------------------------------------------------------------------------------------------ */
/* rows                                                                                       */

static xr_status_t rows_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_rows_problem_t *p = plan->problem;
  xr_status_t st = xr_rows_check_fast(plan, "GPU");
  if (st != XR_OK) return st;
  if (p->outer_rank > XR_ROWS_GPU_MAX_OUTER)
    return xr_error(XR_UNIMPLEMENTED, "%s: rows span %d non-mergeable dims (the GPU kernels "
                    "take at most %d)", plan->op->name, p->outer_rank, XR_ROWS_GPU_MAX_OUTER);
  return XR_OK;
}

typedef struct rows_gpu_state {
  xr_hal_executable_t *executable;
  xr_hal_kernel_t *kernel;
  xr_rows_gpu_params_t params;
  xr_hal_kernel_arg_t args[XR_ROWS_OPERANDS + 1];
  xr_hal_dispatch_t dispatch;
} rows_gpu_state_t;

static void rows_release(void *state) {
  rows_gpu_state_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->executable);
  free(s);
}

static xr_status_t rows_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                const xr_tensor_t *tensors, void **out_state) {
  const xr_rows_problem_t *p = plan->problem;
  rows_gpu_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  static const char *const kernels[] = {"xr_softmax", "xr_layer_norm", "xr_rms_norm",
                                        "xr_add_rms_norm"}; /* by xr_rows_op_t */
  xr_status_t status = xr_gpu_build(device, "norm.cu", NULL, &s->executable);
  if (status == XR_OK) status = xr_hal_kernel_lookup(s->executable, kernels[p->op], &s->kernel);
  if (status != XR_OK) {
    rows_release(s);
    return xr_error_prefix(status, "%s: ", plan->op->name);
  }
  xr_rows_gpu_params_t *q = &s->params;
  q->rows = p->rows;
  q->n = p->n;
  q->outer_rank = p->outer_rank;
  for (int d = 0; d < p->outer_rank; d++) q->shape[d] = p->outer_shape[d];
  xr_dtype_t out = p->operand[XR_ROWS_OUT].dtype;
  bool cast = p->op == XR_ROWS_SOFTMAX && out != XR_DTYPE_F32 && out != p->operand[XR_ROWS_X].dtype;
  q->cast_dtype = cast ? (int)out : 0;
  q->eps = (float)p->eps;
  q->fp32_sum = p->fp32_sum;
  for (int k = 0; k < XR_ROWS_OPERANDS; k++) {
    const xr_rows_operand_t *o = &p->operand[k];
    /* An absent tensor is never read; any buffer of the device will do. */
    int index = o->index >= 0 ? o->index : p->operand[XR_ROWS_X].index;
    s->args[k] = xr_hal_arg_buffer(tensors[index].buffer);
    if (o->index < 0) continue;
    xr_rows_gpu_view_t *v = &q->v[k];
    v->present = 1;
    v->offset = tensors[index].offset;
    v->stride = p->inner_rank == 1 ? o->inner_strides[0] : 1;
    v->dtype = (int)o->dtype;
    for (int d = 0; d < p->outer_rank; d++) v->outer[d] = o->outer_strides[d];
  }
  s->args[XR_ROWS_OPERANDS] = xr_hal_arg_bytes(q, sizeof *q);
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {blocks_for(p->rows), 1, 1},
      .block = {XR_ROWS_GPU_THREADS, 1, 1},
      .args = s->args,
      .arg_count = XR_ROWS_OPERANDS + 1,
  };
  *out_state = s;
  return XR_OK;
}

static xr_status_t rows_enqueue(void *state, xr_hal_stream_t *stream) {
  rows_gpu_state_t *s = state;
  if (s->params.rows == 0 || s->params.n == 0) return XR_OK;
  return xr_hal_stream_dispatch(stream, s->kernel, &s->dispatch);
}

#define ROWS_IMPL(symbol, impl_name, driver_name) \
  const xr_kernel_impl_t symbol = {               \
      .name = impl_name,                          \
      .driver = driver_name,                      \
      .supports = rows_supports,                  \
      .prepare = rows_prepare,                    \
      .enqueue = rows_enqueue,                    \
      .release = rows_release,                    \
  };
ROWS_IMPL(xr_gpu_norm_impl, "gpu.norm", "gpu")
ROWS_IMPL(xr_gpu_softmax_impl, "gpu.softmax", "gpu")

/* ------------------------------------------------------------------------------------------ */
/* rotary embedding                                                                           */

static xr_status_t rotary_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  return xr_rotary_check_fast(plan, "GPU");
}

typedef struct rotary_gpu_state {
  xr_hal_executable_t *executable;
  xr_hal_kernel_t *kernel;
  xr_rotary_gpu_params_t params;
  xr_hal_kernel_arg_t args[5];
  xr_hal_dispatch_t dispatch;
} rotary_gpu_state_t;

static void rotary_release(void *state) {
  rotary_gpu_state_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->executable);
  free(s);
}

static xr_status_t rotary_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                  const xr_tensor_t *tensors, void **out_state) {
  const xr_rotary_problem_t *p = plan->problem;
  rotary_gpu_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  xr_status_t status = xr_gpu_build(device, "norm.cu", NULL, &s->executable);
  if (status == XR_OK) status = xr_hal_kernel_lookup(s->executable, "xr_rotary", &s->kernel);
  if (status != XR_OK) {
    rotary_release(s);
    return xr_error_prefix(status, "%s: ", plan->op->name);
  }
  xr_rotary_gpu_params_t *q = &s->params;
  /* Tokens as [B, S]; 1-D positions are [1, T] with a zero outer stride. */
  bool two = p->token_rank == 2;
  q->token_shape[0] = two ? p->token_shape[0] : 1;
  q->token_shape[1] = two ? p->token_shape[1] : p->token_shape[0];
  const int64_t *from[3] = {p->pos_strides, p->q_token_strides, p->k_token_strides};
  long long *to[3] = {q->pos_stride, q->q_token_stride, q->k_token_stride};
  for (int i = 0; i < 3; i++) {
    to[i][0] = two ? from[i][0] : 0;
    to[i][1] = two ? from[i][1] : from[i][0];
  }
  q->pos_offset = tensors[p->positions].offset;
  q->q_offset = tensors[p->query].offset;
  q->k_offset = p->key >= 0 ? tensors[p->key].offset : 0;
  q->cache_offset = tensors[p->cache].offset;
  q->q_head_stride = p->q_head_stride;
  q->q_elem_stride = p->q_elem_stride;
  q->k_head_stride = p->k_head_stride;
  q->k_elem_stride = p->k_elem_stride;
  q->num_heads = p->num_heads;
  q->num_kv_heads = p->key >= 0 ? p->num_kv_heads : 0;
  q->rot_dim = p->rot_dim;
  q->rope_dim_offset = p->rope_dim_offset;
  q->cache_pos_stride = p->cache_pos_stride;
  q->cache_elem_stride = p->cache_elem_stride;
  q->max_position = p->max_position;
  q->tokens = p->tokens;
  q->pos_is_int64 = p->pos_dtype == XR_DTYPE_I64;
  q->q_dtype = (int)p->q_dtype;
  q->cache_dtype = (int)p->cache_dtype;
  q->is_neox = p->is_neox;
  q->inverse = p->inverse;
  xr_hal_buffer_t *query = tensors[p->query].buffer;
  s->args[0] = xr_hal_arg_buffer(tensors[p->positions].buffer);
  s->args[1] = xr_hal_arg_buffer(query);
  s->args[2] = xr_hal_arg_buffer(p->key >= 0 ? tensors[p->key].buffer : query); /* unread */
  s->args[3] = xr_hal_arg_buffer(tensors[p->cache].buffer);
  s->args[4] = xr_hal_arg_bytes(q, sizeof *q);
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {blocks_for(p->tokens), 1, 1},
      .block = {XR_ROTARY_GPU_THREADS, 1, 1},
      .args = s->args,
      .arg_count = 5,
  };
  *out_state = s;
  return XR_OK;
}

static xr_status_t rotary_enqueue(void *state, xr_hal_stream_t *stream) {
  rotary_gpu_state_t *s = state;
  if (s->params.tokens == 0 || s->params.rot_dim == 0) return XR_OK;
  return xr_hal_stream_dispatch(stream, s->kernel, &s->dispatch);
}

const xr_kernel_impl_t xr_gpu_rotary_impl = {
    .name = "gpu.rotary",
    .driver = "gpu",
    .supports = rotary_supports,
    .prepare = rotary_prepare,
    .enqueue = rotary_enqueue,
    .release = rotary_release,
};

