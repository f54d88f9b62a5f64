/* opencl.elementwise: the elementwise family through kernels/opencl/elementwise.cl.
 *
 * Each step is coalesced, padded to at least two dimensions, and dispatched as a 3-D range
 * (innermost dim, next dim, the rest) of one program built for its op and dtypes. Float results
 * (f32, f16, bf16, fp8, and the table's bools) are computed in float from inputs of any dtype;
 * integer results from integer operands in 64-bit integers (wrapping); copies, gathers and fills
 * move raw elements of any dtype. f64 arithmetic and integers from floats are left to the CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/elementwise.h"
#include "kernels/family.h"
#include "kernels/opencl/sources.h"

enum { MAX_DIMS = 8 };

_Static_assert(XR_EW_ARANGE == 15 && XR_EW_LINSPACE == 16 && XR_EW_TRIL == 17 &&
                   XR_EW_TRIU == 18 && XR_EW_PW_FIRST == 19,
               "elementwise.cl's EW_ARANGE, EW_LINSPACE, EW_TRIL, EW_TRIU and EW_TABLE_FIRST");

/* Mirrors xr_ew_geometry in elementwise.cl (same member order, natural alignment). */
typedef struct cl_geometry {
  int64_t shape[MAX_DIMS];
  int64_t strides[4][MAX_DIMS];
  int64_t offset[4];
  int64_t gather_stride, gather_size;
  uint64_t pattern;
  float alpha, scalar;
  float a_value, c_value;
  float param[XR_EW_MAX_PARAMS];
  int32_t rank;
  int64_t ivalue[3];
  int64_t iparam[XR_EW_MAX_PARAMS];
  int64_t ialpha;
  int64_t numel;
  int64_t tri[3];
  int32_t op;
} cl_geometry_t;

typedef enum { PATH_FLOAT = 0, PATH_RAW = 1, PATH_FILL = 2, PATH_INT = 3 } path_t;

typedef struct cl_step {
  xr_hal_executable_t *exe; /* owned unless `shared` */
  bool shared;
  xr_hal_kernel_t *kernel;
  xr_hal_buffer_t *buffers[4];
  cl_geometry_t g;
  xr_hal_dispatch_t dispatch;
  xr_hal_kernel_arg_t args[5];
  bool empty;
  char options[200];
} cl_step_t;

typedef struct cl_state {
  size_t count;
  cl_step_t steps[];
} cl_state_t;

static path_t step_path(const xr_ew_step_t *s) {
  if (s->op == XR_EW_FILL) return PATH_FILL;
  if ((s->op == XR_EW_COPY || s->op == XR_EW_GATHER) && s->a.dtype == s->out.dtype) return PATH_RAW;
  if (s->op == XR_EW_TRIL || s->op == XR_EW_TRIU) return PATH_RAW; /* raw moves and zeros */
  return xr_ew_int_pipeline(s) ? PATH_INT : PATH_FLOAT;
}

static const char *raw_type(size_t esize) {
  return esize == 1 ? "uchar" : esize == 2 ? "ushort" : esize == 4 ? "uint" : "ulong";
}

static xr_status_t cl_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_ew_problem_t *p = plan->problem;
  for (size_t i = 0; i < p->step_count; i++) {
    const xr_ew_step_t *s = &p->steps[i];
    if (step_path(s) == PATH_FLOAT && !xr_ew_float_pipeline(s))
      return xr_error(XR_UNIMPLEMENTED, "%s results are not implemented when computed in %s "
                                        "from these operands (the kernels compute in float, or "
                                        "in integers from integer operands)",
                      xr_dtype_name(s->out.dtype),
                      xr_dtype_name(xr_ew_is_table_op(s->op) ? s->compute : s->out.dtype));
    xr_ew_step_t flat;
    xr_ew_coalesce(s, &flat);
    if (flat.rank > MAX_DIMS)
      return xr_error(XR_UNIMPLEMENTED, "%d dimensions after merging (at most %d)", flat.rank,
                      MAX_DIMS);
  }
  return XR_OK;
}

static void cl_release(void *state) {
  cl_state_t *st = state;
  if (!st) return;
  for (size_t i = 0; i < st->count; i++)
    if (!st->steps[i].shared) xr_hal_executable_destroy(st->steps[i].exe);
  free(st);
}

/* Fills the geometry and the launch shape of one step. */
static xr_status_t set_geometry(const xr_ew_step_t *step, const xr_tensor_t *tensors,
                                cl_step_t *c) {
  xr_ew_step_t f;
  xr_ew_coalesce(step, &f);
  c->empty = f.numel == 0;
  /* Pad to two dims: the kernel reads dims r-1 and r-2 from x and y. */
  int pad = f.rank < 2 ? 2 - f.rank : 0;
  cl_geometry_t *g = &c->g;
  memset(g, 0, sizeof *g);
  g->rank = f.rank + pad;
  const xr_ew_operand_t *ops[4] = {&f.out, &f.a, &f.b, &f.c};
  for (int d = 0; d < g->rank; d++) g->shape[d] = d < pad ? 1 : f.shape[d - pad];
  for (int k = 0; k < 4; k++) {
    for (int d = pad; d < g->rank; d++) g->strides[k][d] = ops[k]->strides[d - pad];
    if (ops[k]->index >= 0) g->offset[k] = tensors[ops[k]->index].offset + ops[k]->offset;
  }
  g->gather_stride = f.gather_stride;
  g->gather_size = f.gather_size;
  g->alpha = (float)f.alpha;
  g->scalar = (float)f.scalar;
  g->a_value = (float)f.a_value;
  g->c_value = (float)f.c_value;
  for (int k = 0; k < XR_EW_MAX_PARAMS; k++) g->param[k] = (float)f.param[k];
  for (int k = 0; k < XR_EW_MAX_PARAMS; k++) g->iparam[k] = f.iparam[k];
  g->ivalue[0] = xr_ew_int_value(f.a_value);
  g->ivalue[1] = xr_ew_int_value(f.scalar);
  g->ivalue[2] = xr_ew_int_value(f.c_value);
  g->ialpha = xr_ew_int_value(f.alpha);
  g->numel = f.numel;
  g->tri[0] = f.tri_rows;
  g->tri[1] = f.tri_cols;
  g->tri[2] = f.diagonal;
  g->op = (int32_t)f.op;
  if (f.op == XR_EW_FILL) {
    uint8_t bytes[8] = {0};
    if (xr_dtype_is_floating(f.out.dtype) || f.out.dtype == XR_DTYPE_BOOL) {
      xr_store_element(bytes, f.out.dtype, 0, f.scalar);
    } else {
      double v = f.scalar;
      int64_t i64 = isnan(v) ? 0 : v >= 0x1p63 ? INT64_MAX : v <= -0x1p63 ? INT64_MIN : (int64_t)v;
      memcpy(bytes, &i64, sizeof i64);
    }
    memcpy(&g->pattern, bytes, sizeof bytes);
  }
  int64_t inner = g->shape[g->rank - 1], mid = g->shape[g->rank - 2], outer = 1;
  for (int d = 0; d < g->rank - 2; d++) outer *= g->shape[d];
  /* Few work-group shapes keep PoCL's per-size compiles few. */
  uint32_t block = inner >= 64 ? 64 : inner >= 8 ? 8 : 1;
  int64_t groups = (inner + block - 1) / block;
  if (groups > UINT32_MAX || mid > UINT32_MAX || outer > UINT32_MAX)
    return xr_error(XR_UNIMPLEMENTED, "a launch dimension exceeds 2^32 work-groups");
  c->dispatch = (xr_hal_dispatch_t){
      .grid = {(uint32_t)(groups ? groups : 1), (uint32_t)(mid ? mid : 1),
               (uint32_t)(outer ? outer : 1)},
      .block = {block, 1, 1},
  };
  return XR_OK;
}

static xr_status_t cl_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                              const xr_tensor_t *tensors, void **out_state) {
  const xr_ew_problem_t *p = plan->problem;
  cl_state_t *st = calloc(1, sizeof *st + p->step_count * sizeof(cl_step_t));
  if (!st) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  st->count = p->step_count;
  xr_status_t status = XR_OK;
  for (size_t i = 0; i < p->step_count && status == XR_OK; i++) {
    const xr_ew_step_t *s = &p->steps[i];
    cl_step_t *c = &st->steps[i];
    if ((status = set_geometry(s, tensors, c)) != XR_OK) break;
    path_t path = step_path(s);
    snprintf(c->options, sizeof c->options,
             "-DOP=%d -DDT_OUT=%d -DDT_A=%d -DDT_B=%d -DDT_C=%d -DA_KIND=%d -DB_KIND=%d "
             "-DC_KIND=%d -DPATH=%d -DRAW_T=%s -DDT_COMPUTE=%d",
             /* the table's rows share a program: the row is a geometry field */
             xr_ew_is_table_op(s->op) ? (int)XR_EW_PW_FIRST : (int)s->op, (int)s->out.dtype,
             s->a.index >= 0 ? (int)s->a.dtype : 0, s->b.index >= 0 ? (int)s->b.dtype : 0,
             s->c.index >= 0 ? (int)s->c.dtype : 0, s->a_scalar ? 2 : s->a.index >= 0 ? 1 : 0,
             s->b_scalar ? 2 : s->b.index >= 0 ? 1 : 0, s->c_scalar ? 2 : s->c.index >= 0 ? 1 : 0,
             (int)path, raw_type(xr_dtype_size(s->out.dtype)), (int)s->compute);
    for (size_t k = 0; k < i && !c->exe; k++) /* cat: parts share one program */
      if (!strcmp(st->steps[k].options, c->options)) c->exe = st->steps[k].exe, c->shared = true;
    if (!c->exe && (status = xr_opencl_build(device, "elementwise.cl", c->options, &c->exe)) != XR_OK)
      break;
    if ((status = xr_hal_kernel_lookup(c->exe, "xr_elementwise", &c->kernel)) != XR_OK) break;
    const xr_ew_operand_t *ops[4] = {&s->out, &s->a, &s->b, &s->c};
    for (int k = 0; k < 4; k++)
      c->buffers[k] = ops[k]->index >= 0 ? tensors[ops[k]->index].buffer : tensors[s->out.index].buffer;
    for (int k = 0; k < 4; k++) c->args[k] = xr_hal_arg_buffer(c->buffers[k]);
    c->args[4] = xr_hal_arg_bytes(&c->g, sizeof c->g);
    c->dispatch.args = c->args;
    c->dispatch.arg_count = 5;
  }
  if (status != XR_OK) {
    cl_release(st);
    return xr_error_prefix(status, "opencl.elementwise (%s): ", plan->op->name);
  }
  *out_state = st;
  return XR_OK;
}

static xr_status_t cl_enqueue(void *state, xr_hal_stream_t *stream) {
  cl_state_t *st = state;
  for (size_t i = 0; i < st->count; i++) {
    if (st->steps[i].empty) continue;
    xr_status_t status = xr_hal_stream_dispatch(stream, st->steps[i].kernel, &st->steps[i].dispatch);
    if (status != XR_OK) return status;
  }
  return XR_OK;
}

const xr_kernel_impl_t xr_opencl_elementwise = {
    .name = "opencl.elementwise",
    .driver = "opencl",
    .supports = cl_supports,
    .prepare = cl_prepare,
    .enqueue = cl_enqueue,
    .release = cl_release,
};
