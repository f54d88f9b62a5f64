/* The building blocks every elementwise analysis uses (kernels/elementwise.c for the binary,
 * activation, copy and fill ops; pointwise.c, movement.c and indexing.c for theirs): Scalar
 * arguments, torch's type promotion, broadcast shapes and the operands of a step. Kept apart
 * from the family's dispatch so those files depend on this one and the family on them, never
 * both ways. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/elementwise.h"
#include "kernels/family.h"

bool xr_ew_op_binary(xr_ew_op_t op) {
  return op <= XR_EW_DIV_FLOOR || op == XR_EW_SILU_AND_MUL || op == XR_EW_GELU_AND_MUL ||
         op == XR_EW_GELU_TANH_AND_MUL || op == XR_EW_GATHER;
}

bool xr_ew_float_compute(xr_dtype_t d) { return xr_dtype_is_floating(d) && d != XR_DTYPE_F64; }

bool xr_ew_is_number(const xr_value_t *v) {
  return v && (v->kind == XR_VALUE_FLOAT || v->kind == XR_VALUE_INT || v->kind == XR_VALUE_BOOL);
}

double xr_ew_number(const xr_value_t *v) {
  return v->kind == XR_VALUE_FLOAT ? v->as.f : v->kind == XR_VALUE_INT ? (double)v->as.i
                                                                        : (double)v->as.b;
}

xr_dtype_t xr_ew_number_dtype(const xr_value_t *v) {
  return v->kind == XR_VALUE_FLOAT ? XR_DTYPE_F32
         : v->kind == XR_VALUE_INT ? XR_DTYPE_I64
                                   : XR_DTYPE_BOOL;
}

int64_t xr_ew_int_value(double v) {
  if (isnan(v)) return 0;
  if (v >= 0x1p63) return INT64_MAX;
  if (v <= -0x1p63) return INT64_MIN;
  return (int64_t)v;
}

bool xr_ew_int_pipeline(const xr_ew_step_t *s) {
  if (xr_dtype_is_floating(s->out.dtype)) return false;
  bool op_ok = xr_ew_is_table_op(s->op) ? !xr_dtype_is_floating(s->compute)
               : s->op == XR_EW_COPY || s->op == XR_EW_ADD || s->op == XR_EW_SUB ||
                     s->op == XR_EW_MUL || s->op == XR_EW_DIV_TRUNC || s->op == XR_EW_DIV_FLOOR ||
                     s->op == XR_EW_ARANGE;
  const xr_ew_operand_t *ops[3] = {&s->a, &s->b, &s->c};
  for (int k = 0; op_ok && k < 3; k++)
    op_ok = ops[k]->index < 0 || !xr_dtype_is_floating(ops[k]->dtype);
  return op_ok;
}

bool xr_ew_float_pipeline(const xr_ew_step_t *s) {
  bool out_ok = xr_ew_float_compute(s->out.dtype) || s->out.dtype == XR_DTYPE_BOOL;
  if (!xr_ew_is_table_op(s->op)) return xr_ew_float_compute(s->out.dtype);
  /* Truth values and NaN tests are exact in float whatever the operand dtype. */
  bool exact_any = s->op == XR_EW_ISNAN || s->op == XR_EW_ISINF || s->op == XR_EW_ISFINITE ||
                   s->op == XR_EW_LOGICAL_NOT || s->op == XR_EW_LOGICAL_AND ||
                   s->op == XR_EW_LOGICAL_OR || s->op == XR_EW_LOGICAL_XOR;
  return out_ok && (exact_any || xr_ew_float_compute(s->compute));
}

xr_ew_problem_t *xr_ew_problem_alloc(size_t steps) {
  xr_ew_problem_t *p = calloc(1, sizeof(xr_ew_problem_t) + steps * sizeof(xr_ew_step_t));
  for (size_t i = 0; p && i < steps; i++) p->steps[i].c.index = -1;
  return p;
}


/* ------------------------------------------------------------------------------------------ */
/* type promotion                                                                              */

typedef enum { CAT_BOOL = 0, CAT_INT, CAT_FLOAT } category_t;

static category_t category(xr_dtype_t d) {
  if (d == XR_DTYPE_BOOL) return CAT_BOOL;
  return xr_dtype_is_floating(d) ? CAT_FLOAT : CAT_INT;
}

static xr_dtype_t signed_of_size(size_t size) {
  return size <= 1 ? XR_DTYPE_I8 : size == 2 ? XR_DTYPE_I16 : size == 4 ? XR_DTYPE_I32 : XR_DTYPE_I64;
}

/* torch.promote_types for the dtypes we model; INVALID where torch refuses (fp8 mixed with
 * another float type). */
xr_dtype_t xr_ew_promote(xr_dtype_t a, xr_dtype_t b) {
  if (a == XR_DTYPE_INVALID) return b;
  if (b == XR_DTYPE_INVALID || a == b) return a;
  category_t ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == CAT_FLOAT) {
    if (a == XR_DTYPE_F64 || b == XR_DTYPE_F64) return XR_DTYPE_F64;
    bool fp8 = xr_dtype_size(a) == 1 || xr_dtype_size(b) == 1;
    if (fp8) return XR_DTYPE_INVALID;
    if (a == XR_DTYPE_F32 || b == XR_DTYPE_F32) return XR_DTYPE_F32;
    return XR_DTYPE_F32; /* f16 with bf16 */
  }
  size_t sa = xr_dtype_size(a), sb = xr_dtype_size(b);
  if (xr_dtype_is_unsigned(a) == xr_dtype_is_unsigned(b)) return sa >= sb ? a : b;
  xr_dtype_t s = xr_dtype_is_unsigned(a) ? b : a, u = xr_dtype_is_unsigned(a) ? a : b;
  if (xr_dtype_size(s) > xr_dtype_size(u)) return s;
  return signed_of_size(xr_dtype_size(u) * 2);
}

/* torch's result_type over the three priority classes: dimensioned tensors, 0-d tensors,
 * Scalars (a Python float counts as the default dtype, float32). */
xr_dtype_t xr_ew_combine(xr_dtype_t higher, xr_dtype_t lower) {
  if (higher == XR_DTYPE_INVALID) return lower;
  if (lower == XR_DTYPE_INVALID) return higher;
  if (category(higher) >= category(lower)) return higher;
  return xr_ew_promote(higher, lower);
}

/* ------------------------------------------------------------------------------------------ */
/* shapes                                                                                      */

/* Grows (rank, shape) so that tensor t broadcasts onto it. */
xr_status_t xr_ew_broadcast_shape(const xr_op_plan_t *plan, const char *name,
                                   const xr_tensor_spec_t *t, int *rank, int64_t *shape) {
  int r = t->rank > *rank ? t->rank : *rank;
  int64_t out[XR_MAX_RANK];
  for (int d = 0; d < r; d++) {
    int dt = d - (r - t->rank), ds = d - (r - *rank);
    int64_t st = dt >= 0 ? t->shape[dt] : 1, ss = ds >= 0 ? shape[ds] : 1;
    if (st != ss && st != 1 && ss != 1)
      return xr_plan_error(plan, "%s: dimension %d (%lld) does not broadcast against %lld", name,
                           dt, (long long)st, (long long)ss);
    out[d] = st == 1 ? ss : st;
  }
  *rank = r;
  memcpy(shape, out, sizeof(int64_t) * (size_t)r);
  return XR_OK;
}

/* Operand strides of tensor t broadcast onto (rank, shape): 0 where it is stretched. */
void xr_ew_set_operand(const xr_op_plan_t *plan, int index, int rank, const int64_t *shape,
                        xr_ew_operand_t *o) {
  const xr_tensor_spec_t *t = plan->inputs[index];
  o->index = index;
  o->dtype = t->dtype;
  o->offset = 0;
  for (int d = 0; d < rank; d++) {
    int dt = d - (rank - t->rank);
    o->strides[d] = (dt >= 0 && t->shape[dt] == shape[d] && shape[d] != 1) ? t->strides[dt] : 0;
  }
}

/* The step's output: a return tensor (contiguous) or the written tensor `index`. */
void xr_ew_set_output(xr_op_plan_t *plan, int index, xr_dtype_t dtype, xr_ew_step_t *s) {
  if (index < 0) {
    s->out.index = (int)plan->input_count;
    s->out.dtype = dtype;
    xr_contiguous_strides(s->rank, s->shape, s->out.strides);
    plan->return_count = 1;
    xr_desc_set(&plan->returns[0], dtype, s->rank, s->shape);
  } else {
    xr_ew_set_operand(plan, index, s->rank, s->shape, &s->out);
  }
}

/* A written tensor must have the iteration's shape exactly (it cannot broadcast). */
xr_status_t xr_ew_check_written(const xr_op_plan_t *plan, const char *name, int index,
                                       const xr_ew_step_t *s) {
  const xr_tensor_spec_t *t = plan->inputs[index];
  bool same = t->rank == s->rank;
  for (int d = 0; same && d < s->rank; d++) same = t->shape[d] == s->shape[d];
  if (!same)
    return xr_plan_error(plan, "%s: a written tensor of rank %d cannot take the broadcast result "
                               "of rank %d (shapes differ)", name, t->rank, s->rank);
  return XR_OK;
}

/* The `dtype` argument: a torch.ScalarType code or a dtype name; NULL/absent keeps `fallback`. */
xr_status_t xr_ew_read_dtype(const xr_op_plan_t *plan, const xr_value_t *v, xr_dtype_t fallback,
                              xr_dtype_t *out) {
  *out = fallback;
  if (!v || v->kind == XR_VALUE_NULL) return XR_OK;
  if (v->kind == XR_VALUE_INT) *out = xr_dtype_from_torch_code(v->as.i);
  else if (v->kind == XR_VALUE_STRING) *out = xr_dtype_parse(v->as.s);
  else if (v->kind == XR_VALUE_TENSOR) *out = v->as.tensor->dtype;
  else return xr_plan_error(plan, "dtype: expected a ScalarType");
  if (*out == XR_DTYPE_INVALID) return xr_plan_error(plan, "dtype: unsupported ScalarType");
  return XR_OK;
}
