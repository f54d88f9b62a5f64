/* opencl.norm, opencl.softmax, opencl.rotary and their gpu twins: the row families (softmax;
 * layer norm, RMS norm, fused add + RMS norm) and rotary embedding on the kernels that
 * kernels/opencl/norm.cl, rotary.cl and kernels/gpu/norm.cu (NVRTC / hiprtc) define alike: f32,
 * f16 and bf16 tensors (f32 statistics), the normalised dims one strided run in every tensor,
 * rows over up to XR_ROWS_MAX_OUTER merged dims. Tensors are bound as whole storage buffers;
 * geometry, offsets, strides and dtypes go in the by-value blocks of kernels/norm_args.h. */
#include <stdint.h>
#include <stdlib.h>

#include "kernels/gpu/sources.h"
#include "kernels/norm.h"
#include "kernels/norm_args.h"
#include "kernels/opencl/sources.h"

_Static_assert(sizeof(long) == 8, "the device argument blocks need a 64-bit long");
_Static_assert(XR_ROWS_ARG_X == XR_ROWS_X && XR_ROWS_ARG_OUT == XR_ROWS_OUT &&
                   XR_ROWS_ARG_RESIDUAL_IN == XR_ROWS_RESIDUAL_IN &&
                   XR_ROWS_ARG_RESIDUAL_OUT == XR_ROWS_RESIDUAL_OUT &&
                   XR_ROWS_ARG_WEIGHT == XR_ROWS_WEIGHT && XR_ROWS_ARG_BIAS == XR_ROWS_BIAS &&
                   XR_ROWS_ARG_MEAN == XR_ROWS_MEAN && XR_ROWS_ARG_RSTD == XR_ROWS_RSTD &&
                   XR_ROWS_ARG_OPERANDS == XR_ROWS_OPERANDS,
               "norm_args.h's operand slots are kernels/norm.h's");
/* OpenCL guarantees a kernel 1024 bytes of arguments (CL_DEVICE_MAX_PARAMETER_SIZE). */
_Static_assert(sizeof(xr_rows_args_t) + XR_ROWS_ARG_OPERANDS * 8 <= 1024,
               "the rows kernels' arguments exceed what every OpenCL device takes");

/* Where the kernels come from, and how a launch covers the rows or tokens: on cuda and hip a
 * grid-stride loop over at most GPU_MAX_BLOCKS blocks; OpenCL's kernels take one work-group
 * each (their barriers stay out of loops, see norm.cl). */
typedef struct backend {
  const char *name, *label; /* "opencl", and as xr_rows_check_fast names it */
  const char *rows_source, *rotary_source;
  xr_status_t (*build)(xr_hal_device_t *device, const char *file, const char *options,
                       xr_hal_executable_t **out_executable);
  uint32_t rows_threads, rotary_threads;
  bool grid_stride;
} backend_t;

static const backend_t opencl = {"opencl", "opencl", "norm.cl", "rotary.cl", xr_opencl_build,
                                 XR_ROWS_OPENCL_THREADS, XR_ROTARY_OPENCL_THREADS, false};
static const backend_t gpu = {"gpu", "GPU", "norm.cu", "norm.cu", xr_gpu_build,
                              XR_ROWS_GPU_THREADS, XR_ROTARY_GPU_THREADS, true};

#define GPU_MAX_BLOCKS (1u << 20)

static xr_status_t dispatch_limit(const backend_t *b, const xr_op_plan_t *plan, int64_t items,
                                  const char *what) {
  if (!b->grid_stride && items > (int64_t)UINT32_MAX)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: %lld %s exceed one dispatch", b->name,
                    plan->op->name, (long long)items, what);
  return XR_OK;
}

static uint32_t groups_for(const backend_t *b, int64_t items) {
  if (items < 1) return 1;
  if (b->grid_stride && items > GPU_MAX_BLOCKS) return GPU_MAX_BLOCKS;
  return (uint32_t)items;
}

/* One prepared launch: a kernel of the family's program, its buffers and argument block. */
typedef struct launch {
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *kernel;
  int64_t items; /* rows or tokens with work; 0: nothing to run */
  union {
    xr_rows_args_t rows;
    xr_rotary_args_t rotary;
  } block;
  xr_hal_kernel_arg_t args[XR_ROWS_OPERANDS + 1];
  xr_hal_dispatch_t dispatch;
} launch_t;

static void launch_release(void *state) {
  launch_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  free(s);
}

static xr_status_t launch_enqueue(void *state, xr_hal_stream_t *stream) {
  launch_t *s = state;
  return s->items == 0 ? XR_OK : xr_hal_stream_dispatch(stream, s->kernel, &s->dispatch);
}

/* A launch of `kernel` from `source` over `items` groups of `threads`, the block bound last
 * after `buffer_count` buffers; the caller fills s->block and s->args[0..buffer_count). */
static xr_status_t launch_create(const backend_t *b, const xr_op_plan_t *plan,
                                 xr_hal_device_t *device, const char *source, const char *kernel,
                                 int64_t items, uint32_t threads, int buffer_count,
                                 size_t block_bytes, launch_t **out) {
  launch_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  xr_status_t st = b->build(device, source, NULL, &s->exe);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, kernel, &s->kernel);
  if (st != XR_OK) {
    launch_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  s->items = items;
  s->args[buffer_count] = xr_hal_arg_bytes(&s->block, block_bytes);
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {groups_for(b, items), 1, 1},
      .block = {threads, 1, 1},
      .args = s->args,
      .arg_count = (uint32_t)buffer_count + 1,
  };
  *out = s;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* rows                                                                                       */

static xr_status_t rows_supports(const backend_t *b, const xr_op_plan_t *plan,
                                 xr_hal_device_t *device) {
  (void)device;
  const xr_rows_problem_t *p = plan->problem;
  xr_status_t st = xr_rows_check_fast(plan, b->label);
  if (st != XR_OK) return st;
  if (p->outer_rank > XR_ROWS_MAX_OUTER)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: rows span %d non-mergeable dims (at most %d)",
                    b->name, plan->op->name, p->outer_rank, XR_ROWS_MAX_OUTER);
  return dispatch_limit(b, plan, p->rows, "rows");
}

static void rows_args(const xr_rows_problem_t *p, const xr_tensor_t *tensors,
                      xr_rows_args_t *a) {
  a->rows = p->rows;
  a->n = p->n;
  a->outer_rank = p->outer_rank;
  for (int d = 0; d < p->outer_rank; d++) a->shape[d] = p->outer_shape[d];
  xr_dtype_t out = p->operand[XR_ROWS_OUT].dtype;
  bool cast = p->op == XR_ROWS_SOFTMAX && out != XR_DTYPE_F32 && out != p->operand[XR_ROWS_X].dtype;
  a->cast_dtype = cast ? out : 0;
  a->fp32_sum = p->fp32_sum;
  a->eps = (float)p->eps;
  for (int k = 0; k < XR_ROWS_OPERANDS; k++) {
    const xr_rows_operand_t *o = &p->operand[k];
    if (o->index < 0) continue;
    xr_rows_view_args_t *v = &a->v[k];
    v->present = 1;
    v->offset = tensors[o->index].offset;
    v->stride = p->inner_rank == 1 ? o->inner_strides[0] : 1;
    v->dtype = o->dtype;
    for (int d = 0; d < p->outer_rank; d++) v->outer[d] = o->outer_strides[d];
  }
}

static xr_status_t rows_prepare(const backend_t *b, const xr_op_plan_t *plan,
                                xr_hal_device_t *device, const xr_tensor_t *tensors,
                                void **out_state) {
  const xr_rows_problem_t *p = plan->problem;
  static const char *const kernels[] = {"xr_softmax", "xr_layer_norm", "xr_rms_norm",
                                        "xr_add_rms_norm"}; /* by xr_rows_op_t */
  launch_t *s;
  xr_status_t st = launch_create(b, plan, device, b->rows_source, kernels[p->op],
                                 p->n == 0 ? 0 : p->rows, b->rows_threads, XR_ROWS_OPERANDS,
                                 sizeof s->block.rows, &s);
  if (st != XR_OK) return st;
  rows_args(p, tensors, &s->block.rows);
  for (int k = 0; k < XR_ROWS_OPERANDS; k++) {
    /* An absent tensor is never read; any buffer of the device will do. */
    int index = p->operand[k].index >= 0 ? p->operand[k].index : p->operand[XR_ROWS_X].index;
    s->args[k] = xr_hal_arg_buffer(tensors[index].buffer);
  }
  *out_state = s;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* rotary embedding                                                                           */

static xr_status_t rotary_supports(const backend_t *b, const xr_op_plan_t *plan,
                                   xr_hal_device_t *device) {
  (void)device;
  const xr_rotary_problem_t *p = plan->problem;
  xr_status_t st = xr_rotary_check_fast(plan, b->label);
  return st != XR_OK ? st : dispatch_limit(b, plan, p->tokens, "tokens");
}

static void rotary_args(const xr_rotary_problem_t *p, const xr_tensor_t *tensors,
                        xr_rotary_args_t *a) {
  /* Tokens as [B, S]; 1-D positions are [1, T] with a zero outer stride. */
  bool two = p->token_rank == 2;
  a->token_shape[0] = two ? p->token_shape[0] : 1;
  a->token_shape[1] = two ? p->token_shape[1] : p->token_shape[0];
  const int64_t *from[3] = {p->pos_strides, p->q_token_strides, p->k_token_strides};
  long *to[3] = {a->pos_stride, a->q_token_stride, a->k_token_stride};
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
  a->tokens = p->tokens;
  a->pos_is_int64 = p->pos_dtype == XR_DTYPE_I64;
  a->q_dtype = p->q_dtype;
  a->cache_dtype = p->cache_dtype;
  a->is_neox = p->is_neox;
  a->inverse = p->inverse;
}

static xr_status_t rotary_prepare(const backend_t *b, const xr_op_plan_t *plan,
                                  xr_hal_device_t *device, const xr_tensor_t *tensors,
                                  void **out_state) {
  const xr_rotary_problem_t *p = plan->problem;
  launch_t *s;
  xr_status_t st = launch_create(b, plan, device, b->rotary_source, "xr_rotary",
                                 p->rot_dim == 0 ? 0 : p->tokens, b->rotary_threads, 4,
                                 sizeof s->block.rotary, &s);
  if (st != XR_OK) return st;
  rotary_args(p, tensors, &s->block.rotary);
  xr_hal_buffer_t *query = tensors[p->query].buffer;
  s->args[0] = xr_hal_arg_buffer(tensors[p->positions].buffer);
  s->args[1] = xr_hal_arg_buffer(query);
  s->args[2] = xr_hal_arg_buffer(p->key >= 0 ? tensors[p->key].buffer : query); /* unread */
  s->args[3] = xr_hal_arg_buffer(tensors[p->cache].buffer);
  *out_state = s;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */

XR_DEVICE_IMPL(xr_opencl_norm_impl, "opencl.norm", "opencl", opencl, rows_supports,
               rows_prepare, launch_enqueue, launch_release)
XR_DEVICE_IMPL(xr_opencl_softmax_impl, "opencl.softmax", "opencl", opencl, rows_supports,
               rows_prepare, launch_enqueue, launch_release)
XR_DEVICE_IMPL(xr_opencl_rotary_impl, "opencl.rotary", "opencl", opencl, rotary_supports,
               rotary_prepare, launch_enqueue, launch_release)
XR_DEVICE_IMPL(xr_gpu_norm_impl, "gpu.norm", "gpu", gpu, rows_supports,
               rows_prepare, launch_enqueue, launch_release)
XR_DEVICE_IMPL(xr_gpu_softmax_impl, "gpu.softmax", "gpu", gpu, rows_supports,
               rows_prepare, launch_enqueue, launch_release)
XR_DEVICE_IMPL(xr_gpu_rotary_impl, "gpu.rotary", "gpu", gpu, rotary_supports,
               rotary_prepare, launch_enqueue, launch_release)
