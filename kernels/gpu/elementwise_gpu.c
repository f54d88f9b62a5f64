/* The elementwise family and aten::argmax on cuda and hip devices: kernels/gpu/elementwise.cu,
 * compiled once per device (NVRTC / hiprtc, cached on disk), launched through the HAL. The
 * twins of kernels/opencl/elementwise_opencl.c and elementwise_argmax.c, covering the same
 * problems: each elementwise step is coalesced (xr_ew_coalesce) and launched as a grid-stride
 * loop; float results (f32, f16, bf16, fp8) are computed in float from inputs of any dtype,
 * integer results from integer operands in 64-bit integers (wrapping); copies and gathers of one
 * dtype and fills move raw elements of any dtype; f64 arithmetic is left to the CPU. Two impls per family share the code and differ in .driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/argmax.h"
#include "kernels/dtype.h"
#include "kernels/elementwise.h"
#include "kernels/family.h"
#include "kernels/gpu/elementwise_params.h"
#include "kernels/gpu/sources.h"

_Static_assert(XR_EW_GPU_ADD == XR_EW_ADD && XR_EW_GPU_SUB == XR_EW_SUB &&
                   XR_EW_GPU_MUL == XR_EW_MUL && XR_EW_GPU_DIV == XR_EW_DIV &&
                   XR_EW_GPU_DIV_TRUNC == XR_EW_DIV_TRUNC &&
                   XR_EW_GPU_DIV_FLOOR == XR_EW_DIV_FLOOR && XR_EW_GPU_COPY == XR_EW_COPY &&
                   XR_EW_GPU_FILL_OP == XR_EW_FILL && XR_EW_GPU_GELU == XR_EW_GELU &&
                   XR_EW_GPU_GELU_TANH == XR_EW_GELU_TANH && XR_EW_GPU_SILU == XR_EW_SILU &&
                   XR_EW_GPU_SILU_AND_MUL == XR_EW_SILU_AND_MUL &&
                   XR_EW_GPU_GELU_AND_MUL == XR_EW_GELU_AND_MUL &&
                   XR_EW_GPU_GELU_TANH_AND_MUL == XR_EW_GELU_TANH_AND_MUL &&
                   XR_EW_GPU_GATHER == XR_EW_GATHER && XR_EW_GPU_ARANGE == XR_EW_ARANGE &&
                   XR_EW_GPU_LINSPACE == XR_EW_LINSPACE && XR_EW_GPU_TRIL == XR_EW_TRIL &&
                   XR_EW_GPU_TRIU == XR_EW_TRIU &&
                   XR_EW_GPU_TABLE_FIRST == XR_EW_PW_FIRST,
               "elementwise_params.h mirrors xr_ew_op_t");

/* Blocks of one launch; the grid-stride loops cover any element count. */
#define MAX_BLOCKS (1u << 20)

static uint32_t blocks_for(int64_t items, uint32_t per_block) {
  int64_t blocks = (items + per_block - 1) / per_block;
  return blocks < 1 ? 1 : blocks > MAX_BLOCKS ? MAX_BLOCKS : (uint32_t)blocks;
}

/* ------------------------------------------------------------------------------------------ */
/* elementwise                                                                                 */

static int step_path(const xr_ew_step_t *s) {
  if (s->op == XR_EW_FILL) return XR_EW_GPU_FILL;
  if ((s->op == XR_EW_COPY || s->op == XR_EW_GATHER) && s->a.dtype == s->out.dtype)
    return XR_EW_GPU_RAW;
  if (s->op == XR_EW_TRIL || s->op == XR_EW_TRIU) return XR_EW_GPU_RAW; /* moves and zeros */
  return xr_ew_int_pipeline(s) ? XR_EW_GPU_INT : XR_EW_GPU_FLOAT;
}

static xr_status_t ew_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_ew_problem_t *p = plan->problem;
  for (size_t i = 0; i < p->step_count; i++) {
    const xr_ew_step_t *s = &p->steps[i];
    if (step_path(s) == XR_EW_GPU_FLOAT && !xr_ew_float_pipeline(s))
      return xr_error(XR_UNIMPLEMENTED, "%s: %s results are not implemented when computed in %s "
                      "from these operands (the GPU kernels compute in float, or in integers from "
                      "integer operands)", plan->op->name,
                      xr_dtype_name(s->out.dtype),
                      xr_dtype_name(xr_ew_is_table_op(s->op) ? s->compute : s->out.dtype));
    xr_ew_step_t flat;
    xr_ew_coalesce(s, &flat);
    if (flat.rank > XR_EW_GPU_MAX_DIMS)
      return xr_error(XR_UNIMPLEMENTED, "%s: %d dimensions after merging (the GPU kernel takes "
                      "at most %d)", plan->op->name, flat.rank, XR_EW_GPU_MAX_DIMS);
  }
  return XR_OK;
}

typedef struct ew_gpu_step {
  xr_ew_gpu_params_t params;
  xr_hal_kernel_arg_t args[5];
  xr_hal_dispatch_t dispatch;
} ew_gpu_step_t;

typedef struct ew_gpu_state {
  xr_hal_executable_t *executable;
  xr_hal_kernel_t *kernel;
  size_t count;
  ew_gpu_step_t steps[];
} ew_gpu_state_t;

static void ew_release(void *state) {
  ew_gpu_state_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->executable);
  free(s);
}

/* The fill value's bits in the output dtype, as the OpenCL twin computes them. */
static long long fill_pattern(const xr_ew_step_t *s) {
  uint8_t bytes[8] = {0};
  if (xr_dtype_is_floating(s->out.dtype) || s->out.dtype == XR_DTYPE_BOOL) {
    xr_store_element(bytes, s->out.dtype, 0, s->scalar);
  } else {
    double v = s->scalar;
    int64_t i64 = isnan(v) ? 0 : v >= 0x1p63 ? INT64_MAX : v <= -0x1p63 ? INT64_MIN : (int64_t)v;
    memcpy(bytes, &i64, sizeof i64);
  }
  long long pattern;
  memcpy(&pattern, bytes, sizeof pattern);
  return pattern;
}

static void fill_params(const xr_ew_step_t *step, const xr_tensor_t *tensors,
                        xr_ew_gpu_params_t *q) {
  xr_ew_step_t f;
  xr_ew_coalesce(step, &f);
  memset(q, 0, sizeof *q);
  q->rank = f.rank;
  q->numel = step->numel;
  const xr_ew_operand_t *ops[4] = {&f.out, &f.a, &f.b, &f.c};
  for (int d = 0; d < f.rank; d++) q->shape[d] = f.shape[d];
  for (int k = 0; k < 4; k++) {
    for (int d = 0; d < f.rank; d++) q->strides[k][d] = ops[k]->strides[d];
    if (ops[k]->index >= 0) q->offset[k] = tensors[ops[k]->index].offset + ops[k]->offset;
  }
  q->gather_stride = f.gather_stride;
  q->gather_size = f.gather_size;
  q->tri[0] = f.tri_rows;
  q->tri[1] = f.tri_cols;
  q->tri[2] = f.diagonal;
  q->alpha = (float)f.alpha;
  q->scalar = (float)f.scalar;
  q->op = (int)f.op;
  q->out_dtype = (int)f.out.dtype;
  q->a_dtype = f.a.index >= 0 ? (int)f.a.dtype : 0;
  q->b_dtype = f.b.index >= 0 ? (int)f.b.dtype : 0;
  q->c_dtype = f.c.index >= 0 ? (int)f.c.dtype : 0;
  q->a_kind = f.a_scalar ? 2 : f.a.index >= 0 ? 1 : 0;
  q->b_kind = f.b_scalar ? 2 : f.b.index >= 0 ? 1 : 0;
  q->c_kind = f.c_scalar ? 2 : f.c.index >= 0 ? 1 : 0;
  q->a_value = (float)f.a_value;
  q->c_value = (float)f.c_value;
  for (int k = 0; k < 3; k++) q->param[k] = (float)f.param[k];
  for (int k = 0; k < 3; k++) q->iparam[k] = f.iparam[k];
  q->ivalue[0] = xr_ew_int_value(f.a_value);
  q->ivalue[1] = xr_ew_int_value(f.scalar);
  q->ivalue[2] = xr_ew_int_value(f.c_value);
  q->ialpha = xr_ew_int_value(f.alpha);
  q->compute_dtype = (int)f.compute;
  q->path = step_path(step);
  q->elem_size = (int)xr_dtype_size(f.out.dtype);
  if (f.op == XR_EW_FILL) q->pattern = fill_pattern(&f);
}

static xr_status_t ew_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                              const xr_tensor_t *tensors, void **out_state) {
  const xr_ew_problem_t *p = plan->problem;
  ew_gpu_state_t *s = calloc(1, sizeof *s + p->step_count * sizeof(ew_gpu_step_t));
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  s->count = p->step_count;
  xr_status_t status = xr_gpu_build(device, "elementwise.cu", NULL, &s->executable);
  if (status == XR_OK) status = xr_hal_kernel_lookup(s->executable, "xr_elementwise", &s->kernel);
  if (status != XR_OK) {
    ew_release(s);
    return xr_error_prefix(status, "%s: ", plan->op->name);
  }
  for (size_t i = 0; i < p->step_count; i++) {
    const xr_ew_step_t *step = &p->steps[i];
    ew_gpu_step_t *g = &s->steps[i];
    fill_params(step, tensors, &g->params);
    /* An absent operand is never read; any buffer of the device will do. */
    xr_hal_buffer_t *out = tensors[step->out.index].buffer;
    g->args[0] = xr_hal_arg_buffer(out);
    g->args[1] = xr_hal_arg_buffer(step->a.index >= 0 ? tensors[step->a.index].buffer : out);
    g->args[2] = xr_hal_arg_buffer(step->b.index >= 0 ? tensors[step->b.index].buffer : out);
    g->args[3] = xr_hal_arg_buffer(step->c.index >= 0 ? tensors[step->c.index].buffer : out);
    g->args[4] = xr_hal_arg_bytes(&g->params, sizeof g->params);
    g->dispatch = (xr_hal_dispatch_t){
        .grid = {blocks_for(step->numel, XR_EW_GPU_THREADS), 1, 1},
        .block = {XR_EW_GPU_THREADS, 1, 1},
        .args = g->args,
        .arg_count = 5,
    };
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t ew_enqueue(void *state, xr_hal_stream_t *stream) {
  ew_gpu_state_t *s = state;
  for (size_t i = 0; i < s->count; i++) {
    if (s->steps[i].params.numel == 0) continue;
    xr_status_t status = xr_hal_stream_dispatch(stream, s->kernel, &s->steps[i].dispatch);
    if (status != XR_OK) return status;
  }
  return XR_OK;
}

const xr_kernel_impl_t xr_gpu_elementwise = {
    .name = "gpu.elementwise",
    .driver = "gpu",
    .supports = ew_supports,
    .prepare = ew_prepare,
    .enqueue = ew_enqueue,
    .release = ew_release,
};

/* ------------------------------------------------------------------------------------------ */
/* argmax                                                                                      */

static xr_status_t argmax_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_argmax_problem_t *p = plan->problem;
  if (!xr_dtype_is_floating(p->dtype) || p->dtype == XR_DTYPE_F64)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s input: the GPU kernel compares in float, which is "
                    "exact only for narrower float dtypes", plan->op->name,
                    xr_dtype_name(p->dtype));
  if (p->out_rank > XR_ARGMAX_GPU_MAX_DIMS || p->red_rank > XR_ARGMAX_GPU_MAX_DIMS)
    return xr_error(XR_UNIMPLEMENTED, "%s: more than %d kept or reduced dimensions",
                    plan->op->name, XR_ARGMAX_GPU_MAX_DIMS);
  return XR_OK;
}

typedef struct argmax_gpu_state {
  xr_hal_executable_t *executable;
  xr_hal_kernel_t *kernel;
  xr_argmax_gpu_params_t params;
  xr_hal_kernel_arg_t args[3];
  xr_hal_dispatch_t dispatch;
} argmax_gpu_state_t;

static void argmax_release(void *state) {
  argmax_gpu_state_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->executable);
  free(s);
}

static xr_status_t argmax_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                  const xr_tensor_t *tensors, void **out_state) {
  const xr_argmax_problem_t *p = plan->problem;
  argmax_gpu_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  xr_status_t status = xr_gpu_build(device, "elementwise.cu", NULL, &s->executable);
  if (status == XR_OK) status = xr_hal_kernel_lookup(s->executable, "xr_argmax", &s->kernel);
  if (status != XR_OK) {
    argmax_release(s);
    return xr_error_prefix(status, "%s: ", plan->op->name);
  }
  xr_argmax_gpu_params_t *q = &s->params;
  for (int d = 0; d < p->out_rank; d++) {
    q->out_shape[d] = p->out_shape[d];
    q->in_strides[d] = p->in_strides[d];
  }
  for (int d = 0; d < p->red_rank; d++) {
    q->red_shape[d] = p->red_shape[d];
    q->red_strides[d] = p->red_strides[d];
  }
  q->offset = tensors[p->self].offset;
  q->out_numel = p->out_numel;
  q->red_numel = p->red_numel;
  q->out_rank = p->out_rank;
  q->red_rank = p->red_rank;
  q->dtype = (int)p->dtype;
  s->args[0] = xr_hal_arg_buffer(tensors[p->out].buffer);
  s->args[1] = xr_hal_arg_buffer(tensors[p->self].buffer);
  s->args[2] = xr_hal_arg_bytes(q, sizeof *q);
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {blocks_for(p->out_numel, 1), 1, 1},
      .block = {XR_ARGMAX_GPU_THREADS, 1, 1},
      .args = s->args,
      .arg_count = 3,
  };
  *out_state = s;
  return XR_OK;
}

static xr_status_t argmax_enqueue(void *state, xr_hal_stream_t *stream) {
  argmax_gpu_state_t *s = state;
  if (s->params.out_numel == 0) return XR_OK;
  return xr_hal_stream_dispatch(stream, s->kernel, &s->dispatch);
}

const xr_kernel_impl_t xr_gpu_argmax = {
    .name = "gpu.argmax",
    .driver = "gpu",
    .supports = argmax_supports,
    .prepare = argmax_prepare,
    .enqueue = argmax_enqueue,
    .release = argmax_release,
};

