/* The pointwise table of the elementwise family (kernels/pointwise_ops.h): analysis of its ops
 * and their formulas in the CPU reference.
 *
 * A row names its operands; each is a tensor (broadcast against the others) or a Scalar. The
 * result dtype follows torch's result_type over dimensioned tensors, 0-d tensors and Scalars,
 * then the row's KIND; `aten::NAME_` writes the first operand and `out=` its tensor, in their
 * own dtypes. The reference computes float results in double and integer ones in int64 with
 * two's-complement wrap-around. Integer division by zero (remainder, fmod) gives 0 where torch
 * raises: seeded inputs hold zeros, and a replay must not stop on them. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/elementwise.h"
#include "kernels/family.h"

typedef enum { FLOAT, SAME, CMP, PRED, LOGIC, BITS, SELF } kind_t;

typedef struct row {
  const char *name;
  kind_t kind;
  const char *operands, *params;
  double flops;
} row_t;

static const row_t rows[] = {
#define XR_PW(ID, NAME, KIND, OPERANDS, PARAMS, FLOPS, ...) {NAME, KIND, OPERANDS, PARAMS, FLOPS},
#include "kernels/pointwise_ops.h"
#undef XR_PW
};

enum { ROW_COUNT = sizeof rows / sizeof rows[0] };
_Static_assert(XR_EW_PW_FIRST + ROW_COUNT == XR_EW_OP_COUNT, "one enum value per table row");

/* The row for `aten::NAME` or `aten::NAME_`; -1 if none. */
static int find_row(const char *name, bool *out_inplace) {
  if (strncmp(name, "aten::", 6)) return -1;
  const char *base = name + 6;
  size_t n = strlen(base);
  for (int r = 0; r < ROW_COUNT; r++) {
    size_t m = strlen(rows[r].name);
    if (strncmp(base, rows[r].name, m)) continue;
    if (n == m || (n == m + 1 && base[m] == '_')) {
      *out_inplace = n == m + 1;
      return r;
    }
  }
  return -1;
}

bool xr_ew_is_pointwise_op(const char *name) {
  bool inplace;
  return find_row(name, &inplace) >= 0;
}

double xr_ew_pointwise_flops(xr_ew_op_t op) {
  return xr_ew_is_table_op(op) ? rows[op - XR_EW_PW_FIRST].flops : 0;
}

/* The i-th comma-separated item of `list` into buf (without a trailing '~' or "=default", which
 * *out_default points at, up to the next comma); false past the end. */
static bool list_item(const char *list, int i, char *buf, size_t size, bool *out_excluded,
                      const char **out_default) {
  const char *p = list;
  for (int k = 0; k < i && p; k++) p = (p = strchr(p, ',')) ? p + 1 : NULL;
  if (!p || !*p) return false;
  size_t n = strcspn(p, ",");
  const char *eq = memchr(p, '=', n);
  size_t name_len = eq ? (size_t)(eq - p) : n;
  bool excluded = name_len > 0 && p[name_len - 1] == '~';
  if (excluded) name_len--;
  if (name_len >= size) name_len = size - 1;
  memcpy(buf, p, name_len);
  buf[name_len] = '\0';
  if (out_excluded) *out_excluded = excluded;
  if (out_default) *out_default = eq ? eq + 1 : NULL;
  return true;
}

/* The largest finite value of a float dtype (nan_to_num's default bounds). */
static double largest_finite(xr_dtype_t d) {
  switch (d) {
    case XR_DTYPE_F64: return DBL_MAX;
    case XR_DTYPE_F16: return 65504.0;
    case XR_DTYPE_BF16: return 0x1.fep127;
    case XR_DTYPE_F8E4M3FN: return 448.0;
    case XR_DTYPE_F8E4M3FNUZ: return 240.0;
    case XR_DTYPE_F8E5M2:
    case XR_DTYPE_F8E5M2FNUZ: return 57344.0;
    default: return FLT_MAX;
  }
}

static bool integral(xr_dtype_t d) {
  return !xr_dtype_is_floating(d);
} /* bool included */

xr_status_t xr_ew_analyze_pointwise(xr_op_plan_t *plan, xr_ew_step_t *s) {
  const xr_op_t *op = plan->op;
  bool inplace = false;
  int r = find_row(op->name, &inplace);
  if (r < 0) return xr_plan_error(plan, "not a pointwise op");
  const row_t *row = &rows[r];
  s->op = (xr_ew_op_t)(XR_EW_PW_FIRST + r);
  xr_status_t st;

  /* operands */
  xr_ew_operand_t *operand[3] = {&s->a, &s->b, &s->c};
  bool *is_scalar[3] = {&s->a_scalar, &s->b_scalar, &s->c_scalar};
  double *value[3] = {&s->a_value, &s->scalar, &s->c_value};
  int index[3] = {-1, -1, -1}, count = 0;
  xr_dtype_t dim_type = XR_DTYPE_INVALID, zero_type = XR_DTYPE_INVALID,
             scalar_type = XR_DTYPE_INVALID;
  s->rank = 0;
  char name[32];
  bool excluded;
  for (int k = 0; list_item(row->operands, k, name, sizeof name, &excluded, NULL); k++, count++) {
    const xr_value_t *v = xr_op_arg(op, k, name);
    if (!v || v->kind == XR_VALUE_NULL)
      return xr_error(XR_INVALID_ARGUMENT, "%s: argument '%s' (position %d) is missing", op->name,
                      name, k);
    xr_dtype_t d;
    if (v->kind == XR_VALUE_TENSOR) {
      if ((st = xr_arg_tensor(plan, k, name, true, &index[k]))) return st;
      const xr_tensor_spec_t *t = plan->inputs[index[k]];
      if ((st = xr_ew_broadcast_shape(plan, name, t, &s->rank, s->shape))) return st;
      d = t->dtype;
      if (!excluded) {
        xr_dtype_t *slot = t->rank ? &dim_type : &zero_type;
        *slot = *slot == XR_DTYPE_INVALID ? d : xr_ew_promote(*slot, d);
        if (*slot == XR_DTYPE_INVALID)
          return xr_plan_error(plan,
                               "%s (%s) does not promote with the other operands (torch "
                               "refuses to mix fp8 with other float types)",
                               name, xr_dtype_name(d));
      }
    } else if (xr_ew_is_number(v)) {
      if (k == 0 && inplace)
        return xr_plan_error(plan, "%s: an in-place op needs a tensor to write", name);
      *is_scalar[k] = true;
      *value[k] = xr_ew_number(v);
      d = xr_ew_number_dtype(v);
      if (!excluded)
        scalar_type = scalar_type == XR_DTYPE_INVALID ? d : xr_ew_promote(scalar_type, d);
    } else {
      return xr_error(XR_INVALID_ARGUMENT, "%s: argument '%s': expected a tensor or a number",
                      op->name, name);
    }
    operand[k]->dtype = d;
  }
  if (index[0] < 0 && index[1] < 0 && index[2] < 0)
    return xr_plan_error(plan, "expected at least one tensor operand");

  /* result and compute dtypes */
  xr_dtype_t promoted = xr_ew_combine(dim_type, xr_ew_combine(zero_type, scalar_type));
  xr_dtype_t compute = promoted, result = promoted;
  switch (row->kind) {
    case FLOAT:
      if (integral(promoted)) compute = result = XR_DTYPE_F32;
      break;
    case SAME: break;
    case CMP:
    case LOGIC: result = XR_DTYPE_BOOL; break;
    case PRED:
      result = XR_DTYPE_BOOL;
      compute = s->a.dtype;
      break;
    case BITS:
      if (!integral(promoted))
        return xr_plan_error(plan, "expected integer or bool operands, got %s",
                             xr_dtype_name(promoted));
      break;
    case SELF:
      if (index[0] < 0) return xr_plan_error(plan, "self: expected a tensor");
      compute = result = plan->inputs[index[0]]->dtype;
      break;
  }
  int out = -1;
  if ((st = xr_arg_tensor(plan, -1, "out", false, &out))) return st;
  int written = inplace ? index[0] : out;
  if (written >= 0) {
    if ((st = xr_ew_check_written(plan, inplace ? "self" : "out", written, s))) return st;
    result = plan->inputs[written]->dtype;
    /* torch computes in the written dtype when it is the wider float (add_ of a bf16 self
     * by a float32 tensor still computes in float32, then rounds once). */
    if (row->kind != CMP && row->kind != PRED && row->kind != LOGIC && row->kind != BITS &&
        integral(compute) && !integral(result))
      compute = result;
  }
  s->compute = compute;

  /* Scalar arguments */
  const char *dflt;
  for (int j = 0; list_item(row->params, j, name, sizeof name, NULL, &dflt); j++) {
    if (j >= XR_EW_MAX_PARAMS) return xr_plan_error(plan, "too many parameters in its table row");
    const xr_value_t *v = xr_op_arg(op, count + j, name);
    double p = NAN;
    if (v && v->kind == XR_VALUE_TENSOR)
      return xr_error(XR_UNIMPLEMENTED, "%s: %s: a Tensor %s is not implemented (only a Scalar)",
                      op->name, name, name);
    if (v && v->kind != XR_VALUE_NULL) {
      if (!xr_ew_is_number(v))
        return xr_error(XR_INVALID_ARGUMENT, "%s: argument '%s': expected a number", op->name,
                        name);
      p = xr_ew_number(v);
    } else if (!v && strncmp(dflt, "None", 4)) {
      p = strtod(dflt, NULL); /* stops at the next item's comma */
    }
    s->param[j] = p;
  }
  /* Integer compute reads them as integers; None as no bound (the int64 limits). */
  for (int j = 0; j < XR_EW_MAX_PARAMS; j++)
    s->iparam[j] =
        isnan(s->param[j]) ? (j == 0 ? INT64_MIN : INT64_MAX) : xr_ew_int_value(s->param[j]);
  if (s->op == XR_EW_NAN_TO_NUM) {
    double big = largest_finite(result);
    if (isnan(s->param[1])) s->param[1] = big;
    if (isnan(s->param[2])) s->param[2] = -big;
  }
  if ((s->op == XR_EW_CLAMP) && isnan(s->param[0]) && isnan(s->param[1]))
    return xr_plan_error(plan, "at least one of 'min' and 'max' must not be None");

  for (int k = 0; k < 3; k++) {
    xr_dtype_t d = operand[k]->dtype;
    if (index[k] >= 0)
      xr_ew_set_operand(plan, index[k], s->rank, s->shape, operand[k]);
    else
      *operand[k] = (xr_ew_operand_t){.index = -1, .dtype = d};
  }
  xr_ew_set_output(plan, written, result, s);
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* the formulas in the reference                                                               */

#define K(x) ((double)(x))
#define B(c) ((c) ? 1.0 : 0.0)
#define XR_PW_MATH1(f)                    \
  static inline double pw_##f(double x) { \
    return f(x);                          \
  }
#define XR_PW_MATH2(f)                              \
  static inline double pw_##f(double x, double y) { \
    return f(x, y);                                 \
  }
#include "kernels/pointwise_ops.h"
#undef XR_PW_MATH1
#undef XR_PW_MATH2

#define XR_PW_HELPER static
#define XR_PW_T double
#include "kernels/pointwise_ops.h"
#undef XR_PW_HELPER
#undef XR_PW_T

/* Two Newton steps on erf take the approximation to double precision. */
static double pw_erfinv(double y) {
  double x = pw_erfinv_approx(y);
  if (!isfinite(x)) return x;
  for (int i = 0; i < 2; i++) x -= (erf(x) - y) / (M_2_SQRTPI * exp(-x * x));
  return x;
}

double xr_ew_pointwise_float(const xr_ew_step_t *s, double a, double b, double c) {
  const double p0 = s->param[0], p1 = s->param[1], p2 = s->param[2];
  (void)p0, (void)p1, (void)p2, (void)b, (void)c;
  switch (s->op) {
#define XR_PW(ID, NAME, KIND, OPERANDS, PARAMS, FLOPS, FLOAT_EXPR, INT_EXPR) \
  case XR_EW_##ID:                                                           \
    return FLOAT_EXPR;
#include "kernels/pointwise_ops.h"
#undef XR_PW
    default: return NAN;
  }
}

#define XR_PW_INT_HELPER static inline
#define XR_PW_I int64_t
#define XR_PW_U uint64_t
#include "kernels/pointwise_ops.h"
#undef XR_PW_INT_HELPER
#undef XR_PW_I
#undef XR_PW_U

int64_t xr_ew_pointwise_int(const xr_ew_step_t *s, int64_t a, int64_t b, int64_t c) {
  const int64_t ip0 = s->iparam[0], ip1 = s->iparam[1];
  const bool boolean = s->compute == XR_DTYPE_BOOL;
  (void)ip0, (void)ip1, (void)b, (void)c, (void)boolean;
  switch (s->op) {
#define XR_PW(ID, NAME, KIND, OPERANDS, PARAMS, FLOPS, FLOAT_EXPR, INT_EXPR) \
  case XR_EW_##ID:                                                           \
    return INT_EXPR;
#include "kernels/pointwise_ops.h"
#undef XR_PW
    default: return 0;
  }
}
