/* OpenCL implementations of the row families (softmax, norms: norm.cl) and of rotary embedding
 * (rotary.cl). Tensors are bound as whole storage buffers; offsets, strides and dtype codes go
 * in one by-value argument struct whose layout (all 64-bit fields) the .cl files mirror. */
#include <stdlib.h>
#include <string.h>

#include "kernels/norm.h"
#include "kernels/opencl/sources.h"

enum { ROWS_WG = 128, ROTARY_WG = 64, MAX_OUTER = 4 }; /* as XR_WG / XR_ROTARY_WG in the .cl */

static int64_t dtype_code(xr_dtype_t d) { return d == XR_DTYPE_F32 ? 0 : d == XR_DTYPE_F16 ? 1 : 2; }

/* ------------------------------------------------------------------------------------------ */
/* rows                                                                                       */

typedef struct cl_view {
  int64_t offset, stride, dtype, present;
  int64_t outer[MAX_OUTER];
} cl_view_t;

typedef struct cl_norm_args {
  int64_t rows, n, cast_dtype, fp32_sum;
  int64_t shape[MAX_OUTER];
  cl_view_t v[XR_ROWS_OPERANDS];
} cl_norm_args_t;

typedef struct cl_rows {
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *kernel;
  cl_norm_args_t args;
  float eps;
  xr_hal_buffer_t *buffers[XR_ROWS_OPERANDS];
  uint32_t rows;
} cl_rows_t;

static xr_status_t rows_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_rows_problem_t *p = plan->problem;
  xr_status_t st = xr_rows_check_fast(plan, "opencl");
  if (st != XR_OK) return st;
  if (p->outer_rank > MAX_OUTER)
    return xr_error(XR_UNIMPLEMENTED, "rows span %d non-mergeable dims (at most %d)",
                    p->outer_rank, MAX_OUTER);
  if (p->rows > (int64_t)UINT32_MAX)
    return xr_error(XR_UNIMPLEMENTED, "%lld rows exceed one dispatch", (long long)p->rows);
  return XR_OK;
}

static void rows_release(void *state) {
  cl_rows_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  free(s);
}

static xr_status_t rows_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                const xr_tensor_t *tensors, void **out_state) {
  const xr_rows_problem_t *p = plan->problem;
  cl_rows_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  static const char *const kernels[] = {"xr_softmax", "xr_layer_norm", "xr_rms_norm",
                                        "xr_add_rms_norm"}; /* by xr_rows_op_t */
  xr_status_t st = xr_opencl_build(device, "norm.cl", NULL, &s->exe);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, kernels[p->op], &s->kernel);
  if (st != XR_OK) {
    rows_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  cl_norm_args_t *a = &s->args;
  a->rows = p->rows;
  a->n = p->n;
  xr_dtype_t out = p->operand[XR_ROWS_OUT].dtype;
  bool cast = p->op == XR_ROWS_SOFTMAX && out != XR_DTYPE_F32 && out != p->operand[XR_ROWS_X].dtype;
  a->cast_dtype = cast ? dtype_code(out) : -1;
  a->fp32_sum = p->fp32_sum;
  /* Outer dims right-aligned; the unused leading ones have shape 1 and stride 0. */
  int pad = MAX_OUTER - p->outer_rank;
  for (int d = 0; d < MAX_OUTER; d++) a->shape[d] = d < pad ? 1 : p->outer_shape[d - pad];
  for (int k = 0; k < XR_ROWS_OPERANDS; k++) {
    const xr_rows_operand_t *o = &p->operand[k];
    int index = o->index >= 0 ? o->index : p->operand[XR_ROWS_X].index; /* any valid buffer */
    s->buffers[k] = tensors[index].buffer;
    if (o->index < 0) continue;
    cl_view_t *v = &a->v[k];
    v->present = 1;
    v->offset = tensors[index].offset;
    v->stride = p->inner_rank == 1 ? o->inner_strides[0] : 1;
    v->dtype = dtype_code(o->dtype);
    for (int d = pad; d < MAX_OUTER; d++) v->outer[d] = o->outer_strides[d - pad];
  }
  s->eps = (float)p->eps;
  s->rows = (uint32_t)p->rows;
  *out_state = s;
  return XR_OK;
}

static xr_status_t rows_enqueue(void *state, xr_hal_stream_t *stream) {
  cl_rows_t *s = state;
  if (s->rows == 0 || s->args.n == 0) return XR_OK;
  xr_hal_kernel_arg_t args[2 + XR_ROWS_OPERANDS] = {
      xr_hal_arg_bytes(&s->args, sizeof s->args),
      xr_hal_arg_bytes(&s->eps, sizeof s->eps),
  };
  for (int k = 0; k < XR_ROWS_OPERANDS; k++) args[2 + k] = xr_hal_arg_buffer(s->buffers[k]);
  xr_hal_dispatch_t d = {
      .grid = {s->rows, 1, 1},
      .block = {ROWS_WG, 1, 1},
      .args = args,
      .arg_count = 2 + XR_ROWS_OPERANDS,
  };
  return xr_hal_stream_dispatch(stream, s->kernel, &d);
}

const xr_kernel_impl_t xr_opencl_norm_impl = {
    .name = "opencl.norm",
    .driver = "opencl",
    .supports = rows_supports,
    .prepare = rows_prepare,
    .enqueue = rows_enqueue,
    .release = rows_release,
};

const xr_kernel_impl_t xr_opencl_softmax_impl = {
    .name = "opencl.softmax",
    .driver = "opencl",
    .supports = rows_supports,
    .prepare = rows_prepare,
    .enqueue = rows_enqueue,
    .release = rows_release,
};

/* ------------------------------------------------------------------------------------------ */
/* rotary embedding                                                                           */

typedef struct cl_rotary_args {
  int64_t token_shape[2], pos_stride[2], q_token_stride[2], k_token_stride[2];
  int64_t pos_offset, q_offset, k_offset, cache_offset;
  int64_t q_head_stride, q_elem_stride, k_head_stride, k_elem_stride;
  int64_t num_heads, num_kv_heads, rot_dim, rope_dim_offset;
  int64_t cache_pos_stride, cache_elem_stride, max_position;
  int64_t pos_is_int64, q_dtype, cache_dtype, is_neox, inverse;
} cl_rotary_args_t;

typedef struct cl_rotary {
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *kernel;
  cl_rotary_args_t args;
  xr_hal_buffer_t *pos, *q, *k, *cache;
  uint32_t tokens;
} cl_rotary_t;

static xr_status_t rotary_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_rotary_problem_t *p = plan->problem;
  xr_status_t st = xr_rotary_check_fast(plan, "opencl");
  if (st != XR_OK) return st;
  if (p->tokens > (int64_t)UINT32_MAX)
    return xr_error(XR_UNIMPLEMENTED, "%lld tokens exceed one dispatch", (long long)p->tokens);
  return XR_OK;
}

static void rotary_release(void *state) {
  cl_rotary_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  free(s);
}

static xr_status_t rotary_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                  const xr_tensor_t *tensors, void **out_state) {
  const xr_rotary_problem_t *p = plan->problem;
  cl_rotary_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  xr_status_t st = xr_opencl_build(device, "rotary.cl", NULL, &s->exe);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, "xr_rotary", &s->kernel);
  if (st != XR_OK) {
    rotary_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  cl_rotary_args_t *a = &s->args;
  /* Tokens as [B, S]; 1-D positions are [1, T] with a zero outer stride. */
  bool two = p->token_rank == 2;
  a->token_shape[0] = two ? p->token_shape[0] : 1;
  a->token_shape[1] = two ? p->token_shape[1] : p->token_shape[0];
  const int64_t *from[3] = {p->pos_strides, p->q_token_strides, p->k_token_strides};
  int64_t *to[3] = {a->pos_stride, a->q_token_stride, a->k_token_stride};
  for (int i = 0; i < 3; i++) {
    to[i][0] = two ? from[i][0] : 0;
    to[i][1] = two ? from[i][1] : from[i][0];
  }
  a->pos_offset = tensors[p->positions].offset;
  a->q_offset = tensors[p->query].offset;
  a->k_offset = p->key >= 0 ? tensors[p->key].offset : 0;
  a->cache_offset = tensors[p->cache].offset;
  a->q_head_stride = p->q_head_stride;
  a->q_elem_stride = p->q_elem_stride;
  a->k_head_stride = p->k_head_stride;
  a->k_elem_stride = p->k_elem_stride;
  a->num_heads = p->num_heads;
  a->num_kv_heads = p->key >= 0 ? p->num_kv_heads : 0;
  a->rot_dim = p->rot_dim;
  a->rope_dim_offset = p->rope_dim_offset;
  a->cache_pos_stride = p->cache_pos_stride;
  a->cache_elem_stride = p->cache_elem_stride;
  a->max_position = p->max_position;
  a->pos_is_int64 = p->pos_dtype == XR_DTYPE_I64;
  a->q_dtype = dtype_code(p->q_dtype);
  a->cache_dtype = dtype_code(p->cache_dtype);
  a->is_neox = p->is_neox;
  a->inverse = p->inverse;
  s->pos = tensors[p->positions].buffer;
  s->q = tensors[p->query].buffer;
  s->k = p->key >= 0 ? tensors[p->key].buffer : s->q; /* unread when there is no key */
  s->cache = tensors[p->cache].buffer;
  s->tokens = (uint32_t)p->tokens;
  *out_state = s;
  return XR_OK;
}

static xr_status_t rotary_enqueue(void *state, xr_hal_stream_t *stream) {
  cl_rotary_t *s = state;
  if (s->tokens == 0 || s->args.rot_dim == 0) return XR_OK;
  xr_hal_kernel_arg_t args[] = {
      xr_hal_arg_bytes(&s->args, sizeof s->args), xr_hal_arg_buffer(s->pos),
      xr_hal_arg_buffer(s->q), xr_hal_arg_buffer(s->k), xr_hal_arg_buffer(s->cache),
  };
  xr_hal_dispatch_t d = {
      .grid = {s->tokens, 1, 1},
      .block = {ROTARY_WG, 1, 1},
      .args = args,
      .arg_count = sizeof args / sizeof *args,
  };
  return xr_hal_stream_dispatch(stream, s->kernel, &d);
}

const xr_kernel_impl_t xr_opencl_rotary_impl = {
    .name = "opencl.rotary",
    .driver = "opencl",
    .supports = rotary_supports,
    .prepare = rotary_prepare,
    .enqueue = rotary_enqueue,
    .release = rotary_release,
};
