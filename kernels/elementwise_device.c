/* opencl.elementwise, opencl.argmax and their gpu twins: the elementwise family and aten::argmax
 * on the kernels that kernels/opencl/elementwise.cl and kernels/gpu/elementwise.cu (NVRTC /
 * hiprtc) define alike, with the blocks of kernels/elementwise_args.h.
 *
 * Each elementwise step is coalesced (xr_ew_coalesce). Float results (f32, f16, bf16, fp8, and
 * the table's bools) are computed in float from inputs of any dtype; integer results from
 * integer operands in 64-bit integers (wrapping); copies, gathers and fills move raw elements of
 * any dtype. f64 arithmetic and integers computed from floats are left to the CPU. argmax takes
 * f32, f16, bf16 and fp8 inputs, at most XR_ARGMAX_DEV_DIMS kept and reduced dims.
 *
 * The backends differ in how they build and launch: OpenCL builds a program per op and dtypes
 * (build options; the pointwise table's rows share one) and launches a 3-D range, a work-item
 * per element; CUDA/HIP build one program for every step and launch grid-stride loops. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/argmax.h"
#include "kernels/dtype.h"
#include "kernels/elementwise.h"
#include "kernels/elementwise_args.h"
#include "kernels/family.h"
#include "kernels/gpu/sources.h"
#include "kernels/opencl/sources.h"

_Static_assert(sizeof(long) == 8, "the device argument blocks need a 64-bit long");
_Static_assert(XR_EW_DEV_ADD == XR_EW_ADD && XR_EW_DEV_SUB == XR_EW_SUB &&
                   XR_EW_DEV_MUL == XR_EW_MUL && XR_EW_DEV_DIV == XR_EW_DIV &&
                   XR_EW_DEV_DIV_TRUNC == XR_EW_DIV_TRUNC &&
                   XR_EW_DEV_DIV_FLOOR == XR_EW_DIV_FLOOR && XR_EW_DEV_COPY == XR_EW_COPY &&
                   XR_EW_DEV_FILL == XR_EW_FILL && XR_EW_DEV_GELU == XR_EW_GELU &&
                   XR_EW_DEV_GELU_TANH == XR_EW_GELU_TANH && XR_EW_DEV_SILU == XR_EW_SILU &&
                   XR_EW_DEV_SILU_AND_MUL == XR_EW_SILU_AND_MUL &&
                   XR_EW_DEV_GELU_AND_MUL == XR_EW_GELU_AND_MUL &&
                   XR_EW_DEV_GELU_TANH_AND_MUL == XR_EW_GELU_TANH_AND_MUL &&
                   XR_EW_DEV_GATHER == XR_EW_GATHER && XR_EW_DEV_ARANGE == XR_EW_ARANGE &&
                   XR_EW_DEV_LINSPACE == XR_EW_LINSPACE && XR_EW_DEV_TRIL == XR_EW_TRIL &&
                   XR_EW_DEV_TRIU == XR_EW_TRIU && XR_EW_DEV_TABLE_FIRST == XR_EW_PW_FIRST,
               "elementwise_args.h's op codes are xr_ew_op_t's");
_Static_assert(XR_EW_MAX_PARAMS == 3, "elementwise_args.h holds three Scalar arguments");

typedef struct backend {
  const char *label; /* "opencl", "GPU": as messages name the kernels */
  const char *elementwise, *argmax; /* the impls' names */
  const char *source;
  xr_status_t (*build)(xr_hal_device_t *device, const char *file, const char *options,
                       xr_hal_executable_t **out_executable);
  bool program_per_step; /* OpenCL: built per op and dtypes, launched as a 3-D range */
} backend_t;

static const backend_t opencl = {"opencl", "opencl.elementwise", "opencl.argmax",
                                 "elementwise.cl", xr_opencl_build, true};
static const backend_t gpu = {"GPU", "gpu.elementwise", "gpu.argmax", "elementwise.cu",
                              xr_gpu_build, false};

/* Blocks of one CUDA/HIP launch; the grid-stride loops cover any element count. */
#define GPU_MAX_BLOCKS (1u << 20)

static uint32_t blocks_for(int64_t items, uint32_t per_block) {
  int64_t blocks = (items + per_block - 1) / per_block;
  return blocks < 1 ? 1 : blocks > GPU_MAX_BLOCKS ? GPU_MAX_BLOCKS : (uint32_t)blocks;
}

/* ------------------------------------------------------------------------------------------ */
/* elementwise                                                                                 */

static int step_path(const xr_ew_step_t *s) {
  if (s->op == XR_EW_FILL) return XR_EW_PATH_FILL;
  if ((s->op == XR_EW_COPY || s->op == XR_EW_GATHER) && s->a.dtype == s->out.dtype)
    return XR_EW_PATH_RAW;
  if (s->op == XR_EW_TRIL || s->op == XR_EW_TRIU) return XR_EW_PATH_RAW; /* moves and zeros */
  return xr_ew_int_pipeline(s) ? XR_EW_PATH_INT : XR_EW_PATH_FLOAT;
}

static int operand_kind(const xr_ew_operand_t *o, bool scalar) {
  return scalar ? XR_EW_KIND_SCALAR : o->index >= 0 ? XR_EW_KIND_TENSOR : XR_EW_KIND_NONE;
}

static xr_status_t ew_supports(const backend_t *b, const xr_op_plan_t *plan,
                               xr_hal_device_t *device) {
  (void)device;
  const xr_ew_problem_t *p = plan->problem;
  for (size_t i = 0; i < p->step_count; i++) {
    const xr_ew_step_t *s = &p->steps[i];
    if (step_path(s) == XR_EW_PATH_FLOAT && !xr_ew_float_pipeline(s))
      return xr_error(XR_UNIMPLEMENTED, "%s: %s results are not implemented when computed in %s "
                      "from these operands (the %s kernels compute in float, or in integers from "
                      "integer operands)", plan->op->name, xr_dtype_name(s->out.dtype),
                      xr_dtype_name(xr_ew_is_table_op(s->op) ? s->compute : s->out.dtype),
                      b->label);
    xr_ew_step_t flat;
    xr_ew_coalesce(s, &flat);
    if (flat.rank > XR_EW_DEV_DIMS)
      return xr_error(XR_UNIMPLEMENTED, "%s: %d dimensions after merging (the %s kernel takes "
                      "at most %d)", plan->op->name, flat.rank, b->label, XR_EW_DEV_DIMS);
  }
  return XR_OK;
}

typedef struct ew_step {
  xr_hal_executable_t *exe; /* OpenCL: this step's program, owned unless `shared` */
  bool shared;
  xr_hal_kernel_t *kernel;
  xr_ew_args_t block;
  xr_hal_kernel_arg_t args[5];
  xr_hal_dispatch_t dispatch;
  char options[200];
} ew_step_t;

typedef struct ew_state {
  xr_hal_executable_t *exe; /* CUDA/HIP: the one program of every step */
  size_t count;
  ew_step_t steps[];
} ew_state_t;

static void ew_release(void *state) {
  ew_state_t *s = state;
  if (!s) return;
  for (size_t i = 0; i < s->count; i++)
    if (!s->steps[i].shared) xr_hal_executable_destroy(s->steps[i].exe);
  xr_hal_executable_destroy(s->exe);
  free(s);
}

/* The fill value's bits in the output dtype. */
static long fill_pattern(const xr_ew_step_t *s) {
  uint8_t bytes[8] = {0};
  if (xr_dtype_is_floating(s->out.dtype) || s->out.dtype == XR_DTYPE_BOOL) {
    xr_store_element(bytes, s->out.dtype, 0, s->scalar);
  } else {
    double v = s->scalar;
    int64_t i64 = isnan(v) ? 0 : v >= 0x1p63 ? INT64_MAX : v <= -0x1p63 ? INT64_MIN : (int64_t)v;
    memcpy(bytes, &i64, sizeof i64);
  }
  long pattern;
  memcpy(&pattern, bytes, sizeof pattern);
  return pattern;
}

/* The block of one step, coalesced and padded with leading unit dims to at least `min_rank`
 * (OpenCL's range reads dims r-1 and r-2 from x and y). */
static void fill_block(const xr_ew_step_t *step, const xr_tensor_t *tensors, int min_rank,
                       xr_ew_args_t *q) {
  xr_ew_step_t f;
  xr_ew_coalesce(step, &f);
  memset(q, 0, sizeof *q);
  int pad = f.rank < min_rank ? min_rank - f.rank : 0;
  q->rank = f.rank + pad;
  q->numel = f.numel;
  const xr_ew_operand_t *ops[4] = {&f.out, &f.a, &f.b, &f.c};
  for (int d = 0; d < q->rank; d++) q->shape[d] = d < pad ? 1 : f.shape[d - pad];
  for (int k = 0; k < 4; k++) {
    for (int d = pad; d < q->rank; d++) q->strides[k][d] = ops[k]->strides[d - pad];
    if (ops[k]->index >= 0) q->offset[k] = tensors[ops[k]->index].offset + ops[k]->offset;
  }
  q->gather_stride = f.gather_stride;
  q->gather_size = f.gather_size;
  q->tri[0] = f.tri_rows;
  q->tri[1] = f.tri_cols;
  q->tri[2] = f.diagonal;
  q->alpha = (float)f.alpha;
  q->scalar = (float)f.scalar;
  q->a_value = (float)f.a_value;
  q->c_value = (float)f.c_value;
  for (int k = 0; k < XR_EW_MAX_PARAMS; k++) q->param[k] = (float)f.param[k];
  for (int k = 0; k < XR_EW_MAX_PARAMS; k++) q->iparam[k] = f.iparam[k];
  q->ivalue[0] = xr_ew_int_value(f.a_value);
  q->ivalue[1] = xr_ew_int_value(f.scalar);
  q->ivalue[2] = xr_ew_int_value(f.c_value);
  q->ialpha = xr_ew_int_value(f.alpha);
  q->op = (int)f.op;
  q->compute_dtype = (int)f.compute;
  q->out_dtype = (int)f.out.dtype;
  q->a_dtype = f.a.index >= 0 ? (int)f.a.dtype : 0;
  q->b_dtype = f.b.index >= 0 ? (int)f.b.dtype : 0;
  q->c_dtype = f.c.index >= 0 ? (int)f.c.dtype : 0;
  q->a_kind = operand_kind(&f.a, f.a_scalar);
  q->b_kind = operand_kind(&f.b, f.b_scalar);
  q->c_kind = operand_kind(&f.c, f.c_scalar);
  q->path = step_path(step);
  q->elem_size = (int)xr_dtype_size(f.out.dtype);
  if (f.op == XR_EW_FILL) q->pattern = fill_pattern(&f);
}

/* The unsigned OpenCL type of an element of `size` bytes. */
static const char *raw_type(int size) {
  return size == 1 ? "uchar" : size == 2 ? "ushort" : size == 4 ? "uint" : "ulong";
}

/* OpenCL: the step's program, specialised by build options; steps with the same options (the
 * parts of a cat) share one. */
static xr_status_t opencl_program(const backend_t *b, xr_hal_device_t *device, ew_state_t *st,
                                  size_t i) {
  ew_step_t *c = &st->steps[i];
  const xr_ew_args_t *q = &c->block;
  snprintf(c->options, sizeof c->options,
           "-DOP=%d -DDT_OUT=%d -DDT_A=%d -DDT_B=%d -DDT_C=%d -DA_KIND=%d -DB_KIND=%d "
           "-DC_KIND=%d -DPATH=%d -DRAW_T=%s -DDT_COMPUTE=%d",
           /* the table's rows share a program: the row is the block's `op` */
           q->op >= XR_EW_DEV_TABLE_FIRST ? XR_EW_DEV_TABLE_FIRST : q->op, q->out_dtype,
           q->a_dtype, q->b_dtype, q->c_dtype, q->a_kind, q->b_kind, q->c_kind, q->path,
           raw_type(q->elem_size), q->compute_dtype);
  for (size_t k = 0; k < i; k++)
    if (!strcmp(st->steps[k].options, c->options)) {
      c->exe = st->steps[k].exe, c->shared = true;
      return XR_OK;
    }
  return b->build(device, b->source, c->options, &c->exe);
}

/* OpenCL: a 3-D range over the padded shape (x the innermost dim, y the next, z the rest). */
static xr_status_t opencl_range(const xr_ew_args_t *q, xr_hal_dispatch_t *d) {
  int64_t inner = q->shape[q->rank - 1], mid = q->shape[q->rank - 2], outer = 1;
  for (int k = 0; k < q->rank - 2; k++) outer *= q->shape[k];
  /* Few work-group shapes keep PoCL's per-size compiles few. */
  uint32_t block = inner >= 64 ? 64 : inner >= 8 ? 8 : 1;
  int64_t groups = (inner + block - 1) / block;
  if (groups > UINT32_MAX || mid > UINT32_MAX || outer > UINT32_MAX)
    return xr_error(XR_UNIMPLEMENTED, "a launch dimension exceeds 2^32 work-groups");
  *d = (xr_hal_dispatch_t){
      .grid = {(uint32_t)(groups ? groups : 1), (uint32_t)(mid ? mid : 1),
               (uint32_t)(outer ? outer : 1)},
      .block = {block, 1, 1},
  };
  return XR_OK;
}

static xr_status_t ew_prepare(const backend_t *b, const xr_op_plan_t *plan,
                              xr_hal_device_t *device, const xr_tensor_t *tensors,
                              void **out_state) {
  const xr_ew_problem_t *p = plan->problem;
  ew_state_t *st = calloc(1, sizeof *st + p->step_count * sizeof(ew_step_t));
  if (!st) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  st->count = p->step_count;
  xr_status_t status = b->program_per_step ? XR_OK : b->build(device, b->source, NULL, &st->exe);
  for (size_t i = 0; i < p->step_count && status == XR_OK; i++) {
    const xr_ew_step_t *step = &p->steps[i];
    ew_step_t *c = &st->steps[i];
    fill_block(step, tensors, b->program_per_step ? 2 : 1, &c->block);
    if (b->program_per_step) {
      status = opencl_program(b, device, st, i);
      if (status == XR_OK) status = opencl_range(&c->block, &c->dispatch);
    } else {
      c->exe = st->exe, c->shared = true;
      c->dispatch = (xr_hal_dispatch_t){
          .grid = {blocks_for(c->block.numel, XR_EW_GPU_THREADS), 1, 1},
          .block = {XR_EW_GPU_THREADS, 1, 1},
      };
    }
    if (status == XR_OK) status = xr_hal_kernel_lookup(c->exe, "xr_elementwise", &c->kernel);
    /* An absent operand is never read; any buffer of the device will do. */
    xr_hal_buffer_t *out = tensors[step->out.index].buffer;
    const xr_ew_operand_t *ops[3] = {&step->a, &step->b, &step->c};
    c->args[0] = xr_hal_arg_buffer(out);
    for (int k = 0; k < 3; k++)
      c->args[1 + k] = xr_hal_arg_buffer(ops[k]->index >= 0 ? tensors[ops[k]->index].buffer : out);
    c->args[4] = xr_hal_arg_bytes(&c->block, sizeof c->block);
    c->dispatch.args = c->args;
    c->dispatch.arg_count = 5;
  }
  if (status != XR_OK) {
    ew_release(st);
    return xr_error_prefix(status, "%s (%s): ", b->elementwise, plan->op->name);
  }
  *out_state = st;
  return XR_OK;
}

static xr_status_t ew_enqueue(void *state, xr_hal_stream_t *stream) {
  ew_state_t *st = state;
  for (size_t i = 0; i < st->count; i++) {
    if (st->steps[i].block.numel == 0) continue;
    xr_status_t status = xr_hal_stream_dispatch(stream, st->steps[i].kernel, &st->steps[i].dispatch);
    if (status != XR_OK) return status;
  }
  return XR_OK;
}

XR_DEVICE_IMPL(xr_opencl_elementwise, "opencl.elementwise", "opencl", opencl, ew_supports,
               ew_prepare, ew_enqueue, ew_release)
XR_DEVICE_IMPL(xr_gpu_elementwise, "gpu.elementwise", "gpu", gpu, ew_supports, ew_prepare,
               ew_enqueue, ew_release)

/* ------------------------------------------------------------------------------------------ */
/* argmax                                                                                      */

static xr_status_t argmax_supports(const backend_t *b, const xr_op_plan_t *plan,
                                   xr_hal_device_t *device) {
  (void)device;
  const xr_argmax_problem_t *p = plan->problem;
  if (!xr_dtype_is_floating(p->dtype) || p->dtype == XR_DTYPE_F64)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s input: the %s kernel compares in float, which is "
                    "exact only for narrower float dtypes", plan->op->name,
                    xr_dtype_name(p->dtype), b->label);
  if (p->out_rank > XR_ARGMAX_DEV_DIMS || p->red_rank > XR_ARGMAX_DEV_DIMS)
    return xr_error(XR_UNIMPLEMENTED, "%s: more than %d kept or reduced dimensions",
                    plan->op->name, XR_ARGMAX_DEV_DIMS);
  if (b->program_per_step && p->out_numel > (int64_t)UINT32_MAX * 64)
    return xr_error(XR_UNIMPLEMENTED, "%s: too many outputs for one launch", plan->op->name);
  return XR_OK;
}

typedef struct argmax_launch {
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *kernel;
  xr_argmax_args_t block;
  xr_hal_kernel_arg_t args[3];
  xr_hal_dispatch_t dispatch;
} argmax_launch_t;

static void argmax_release(void *state) {
  argmax_launch_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  free(s);
}

static xr_status_t argmax_prepare(const backend_t *b, const xr_op_plan_t *plan,
                                  xr_hal_device_t *device, const xr_tensor_t *tensors,
                                  void **out_state) {
  const xr_argmax_problem_t *p = plan->problem;
  argmax_launch_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  /* OpenCL specialises the program by the input dtype; its other options are placeholders. */
  char options[128];
  snprintf(options, sizeof options,
           "-DOP=%d -DDT_OUT=%d -DDT_A=%d -DDT_B=0 -DB_KIND=%d -DPATH=%d -DRAW_T=uint",
           XR_EW_DEV_COPY, (int)XR_DTYPE_F32, (int)p->dtype, XR_EW_KIND_NONE, XR_EW_PATH_FLOAT);
  xr_status_t st = b->build(device, b->source, b->program_per_step ? options : NULL, &s->exe);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, "xr_argmax", &s->kernel);
  if (st != XR_OK) {
    argmax_release(s);
    return xr_error_prefix(st, "%s (%s): ", b->argmax, plan->op->name);
  }
  xr_argmax_args_t *q = &s->block;
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
  /* OpenCL: a work-item per output; CUDA/HIP: a block per output, grid-stride. */
  uint32_t block = b->program_per_step ? (p->out_numel >= 64 ? 64 : 1) : XR_ARGMAX_GPU_THREADS;
  uint32_t grid = b->program_per_step ? (uint32_t)((p->out_numel + block - 1) / block)
                                      : blocks_for(p->out_numel, 1);
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {grid ? grid : 1, 1, 1},
      .block = {block, 1, 1},
      .args = s->args,
      .arg_count = 3,
  };
  *out_state = s;
  return XR_OK;
}

static xr_status_t argmax_enqueue(void *state, xr_hal_stream_t *stream) {
  argmax_launch_t *s = state;
  if (s->block.out_numel == 0) return XR_OK;
  return xr_hal_stream_dispatch(stream, s->kernel, &s->dispatch);
}

XR_DEVICE_IMPL(xr_opencl_argmax, "opencl.argmax", "opencl", opencl, argmax_supports,
               argmax_prepare, argmax_enqueue, argmax_release)
XR_DEVICE_IMPL(xr_gpu_argmax, "gpu.argmax", "gpu", gpu, argmax_supports, argmax_prepare,
               argmax_enqueue, argmax_release)
