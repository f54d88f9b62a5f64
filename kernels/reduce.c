/* The reduce family (kernels/reduce.h has the geometry and the semantics): planning every
 * overload of its ops as traces record them, the plain-C reference, and the initializer that
 * keeps sort and topk inputs free of ties.
 *
 * Overloads are told apart by the arguments present (a bundle names its ops without the
 * overload): "dim" present or not (sum, sum.dim_IntList; max, max.dim), "other" (max.other, the
 * elementwise maximum: no reduction, handed to aten::maximum by complete() below), "unbiased" /
 * "correction" (var, var.dim, var.correction), "stable" (sort.stable). out= variants write the
 * tensors named out, out0/out1 (var_mean), values/indices (sort, topk), max/max_values and
 * min/min_indices (max.dim_max, min.dim_min); their dtype is then the result dtype, as torch
 * takes it. Arguments are read by schema name, else by position for traces without a schema.
 *
 * The reference widens every element to double (int64 for integer results, exactly) and rounds
 * once into the output. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/initializer.h"
#include "kernels/reduce.h"

static const char *const reduce_ops[] = {
    "aten::sum",       "aten::nansum",        "aten::mean",
    "aten::prod",      "aten::amax",          "aten::amin",
    "aten::max",       "aten::min",           "aten::argmin",
    "aten::all",       "aten::any",           "aten::count_nonzero",
    "aten::logsumexp", "aten::var",           "aten::std",
    "aten::var_mean",  "aten::std_mean",      "aten::norm",
    "aten::linalg_vector_norm", "aten::cumsum", "aten::cumsum_",
    "aten::cumprod",   "aten::cumprod_",      "aten::sort",
    "aten::argsort",   "aten::topk",          NULL,
};

/* ------------------------------------------------------------------------------------------ */
/* argument helpers                                                                            */

static bool is_float(xr_dtype_t d) { return xr_dtype_is_floating(d); }

/* The dtypes the reference runs: the four float types, signed integers, uint8 and bool. */
static bool known_dtype(xr_dtype_t d) {
  switch (d) {
    case XR_DTYPE_F32: case XR_DTYPE_F64: case XR_DTYPE_F16: case XR_DTYPE_BF16:
    case XR_DTYPE_I8: case XR_DTYPE_I16: case XR_DTYPE_I32: case XR_DTYPE_I64:
    case XR_DTYPE_U8: case XR_DTYPE_BOOL: return true;
    default: return false;
  }
}

/* The value at schema `name`, else at unnamed position `position`; NULL when absent or None. */
static const xr_value_t *arg(const xr_op_t *op, int position, const char *name) {
  const xr_value_t *v = xr_op_arg(op, position, name);
  return v && v->kind != XR_VALUE_NULL ? v : NULL;
}

/* True when the op's arguments carry no schema names (a trace without a known schema), so
 * overloads must be told apart by the number of arguments. */
static bool positional(const xr_op_t *op) {
  return op->arg_count > 1 && !op->args[1].name && op->kwarg_count == 0;
}

/* A ScalarType argument: a torch code or a dtype name; *given false when absent or None. */
static xr_status_t read_dtype(const xr_op_plan_t *plan, int position, xr_dtype_t *out,
                              bool *given) {
  const xr_value_t *v = arg(plan->op, position, "dtype");
  *given = false;
  if (!v) return XR_OK;
  if (v->kind == XR_VALUE_INT) *out = xr_dtype_from_torch_code(v->as.i);
  else if (v->kind == XR_VALUE_STRING) *out = xr_dtype_parse(v->as.s);
  else return xr_plan_error(plan, "dtype: expected a ScalarType code or a dtype name");
  if (*out == XR_DTYPE_INVALID) return xr_plan_error(plan, "dtype: unknown ScalarType");
  *given = true;
  return XR_OK;
}

/* The dims of `v` (an int, a list of ints, or NULL / an empty list: every dim) as a mask over a
 * rank-`rank` tensor; negative dims count from the end; a rank-0 tensor takes 0 and -1. */
static xr_status_t read_dims(const xr_op_plan_t *plan, const xr_value_t *v, int rank,
                             bool *reduced) {
  for (int d = 0; d < XR_MAX_RANK; d++) reduced[d] = false;
  size_t count = 0;
  const xr_value_t *items = v;
  if (v && v->kind == XR_VALUE_LIST) count = v->as.list.count, items = v->as.list.items;
  else if (v && (v->kind == XR_VALUE_INT || v->kind == XR_VALUE_BOOL)) count = 1;
  else if (v) return xr_plan_error(plan, "dim: expected an int or a list of ints");
  if (count == 0) {
    for (int d = 0; d < rank; d++) reduced[d] = true;
    return XR_OK;
  }
  int r = rank > 0 ? rank : 1;
  for (size_t i = 0; i < count; i++) {
    if (items[i].kind != XR_VALUE_INT)
      return xr_plan_error(plan, "dim: expected an int or a list of ints");
    int64_t dim = items[i].as.i;
    if (dim < -r || dim >= r)
      return xr_plan_error(plan, "dim: %lld is out of range for a %d-D tensor", (long long)dim,
                           rank);
    if (dim < 0) dim += r;
    if (rank == 0) continue;
    if (reduced[dim])
      return xr_plan_error(plan, "dim: dim %lld appears more than once", (long long)dim);
    reduced[dim] = true;
  }
  return XR_OK;
}

/* One dim (scans, sorts): -1 is the last; a rank-0 tensor takes 0 and -1. */
static xr_status_t read_one_dim(const xr_op_plan_t *plan, const xr_value_t *v, int64_t fallback,
                                int rank, int *out_dim) {
  int64_t dim = fallback;
  if (v && v->kind == XR_VALUE_INT) dim = v->as.i;
  else if (v) return xr_plan_error(plan, "dim: expected an int");
  int r = rank > 0 ? rank : 1;
  if (dim < -r || dim >= r)
    return xr_plan_error(plan, "dim: %lld is out of range for a %d-D tensor", (long long)dim, rank);
  *out_dim = (int)(dim < 0 ? dim + r : dim);
  return XR_OK;
}

static xr_status_t read_bool(const xr_op_plan_t *plan, const xr_value_t *v, const char *name,
                             bool *out) {
  if (!v) return XR_OK;
  if (v->kind == XR_VALUE_BOOL) *out = v->as.b;
  else if (v->kind == XR_VALUE_INT) *out = v->as.i != 0;
  else return xr_plan_error(plan, "%s: expected a bool", name);
  return XR_OK;
}

static xr_status_t read_number(const xr_op_plan_t *plan, const xr_value_t *v, const char *name,
                               double *out) {
  if (!v) return XR_OK;
  if (v->kind == XR_VALUE_FLOAT) *out = v->as.f;
  else if (v->kind == XR_VALUE_INT) *out = (double)v->as.i;
  else if (v->kind == XR_VALUE_BOOL) *out = v->as.b;
  else if (v->kind == XR_VALUE_STRING)
    return xr_error(XR_INVALID_ARGUMENT, "%s: argument '%s': '%s' is not a number (torch.norm's "
                    "string orders are other ops)", plan->op->name, name, v->as.s);
  else return xr_plan_error(plan, "%s: expected a number", name);
  return XR_OK;
}

/* An out= tensor by name (the first of `names` present), or -1. */
static xr_status_t out_tensor(const xr_op_plan_t *plan, const char *const *names, int *out_index,
                              const char **out_name) {
  *out_index = -1;
  for (const char *const *n = names; *n; n++) {
    const xr_value_t *v = xr_op_arg(plan->op, -1, *n);
    if (!v || v->kind == XR_VALUE_NULL) continue;
    *out_name = *n;
    return xr_arg_tensor(plan, -1, *n, true, out_index);
  }
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* geometry and outputs                                                                        */

/* The result's dims: for each input dim its position in the result (-1: dropped), the input
 * dims kept (the outer dims, in order) and the dim a scan or sort runs along (-1: none). */
typedef struct result {
  int rank;
  int64_t shape[XR_MAX_RANK];
  int pos[XR_MAX_RANK];
  int kept[XR_MAX_RANK], kept_count;
  int along;
} result_t;

/* A reduction over reduced[] of t (keepdim: reduced dims stay, with size 1). */
static void set_reduction(xr_reduce_problem_t *p, const xr_tensor_spec_t *t, const bool *reduced,
                          bool keepdim, result_t *r) {
  memset(r, 0, sizeof *r);
  r->along = -1;
  for (int d = 0; d < t->rank; d++) {
    if (reduced[d]) {
      p->red_shape[p->red_rank] = t->shape[d];
      p->in_red[p->red_rank++] = t->strides[d];
      r->pos[d] = keepdim ? r->rank : -1;
      if (keepdim) r->shape[r->rank++] = 1;
    } else {
      p->outer_shape[p->outer_rank] = t->shape[d];
      p->in_outer[p->outer_rank++] = t->strides[d];
      r->kept[r->kept_count++] = d;
      r->pos[d] = r->rank;
      r->shape[r->rank++] = t->shape[d];
    }
  }
}

/* A scan or sort along `dim`, writing `len` positions per row (n, or topk's k). */
static void set_along(xr_reduce_problem_t *p, const xr_tensor_spec_t *t, int dim, int64_t len,
                      result_t *r) {
  memset(r, 0, sizeof *r);
  r->rank = t->rank;
  r->along = t->rank ? dim : -1;
  p->red_rank = 1;
  p->red_shape[0] = t->rank ? t->shape[dim] : 1;
  p->in_red[0] = t->rank ? t->strides[dim] : 0;
  for (int d = 0; d < t->rank; d++) {
    r->pos[d] = d;
    r->shape[d] = d == dim ? len : t->shape[d];
    if (d == dim) continue;
    r->kept[r->kept_count++] = d;
    p->outer_shape[p->outer_rank] = t->shape[d];
    p->in_outer[p->outer_rank++] = t->strides[d];
  }
}

static bool overlaps(const xr_tensor_spec_t *t) {
  for (int d = 0; d < t->rank; d++)
    if (t->shape[d] > 1 && t->strides[d] == 0) return true;
  return false;
}

static void shape_text(char *buf, size_t size, int rank, const int64_t *shape) {
  size_t n = (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < rank && n < size; d++)
    n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? ", " : "", (long long)shape[d]);
  if (n < size) snprintf(buf + n, size - n, "]");
}

/* Output slot s of dtype `dtype`: the out= tensor `given` (called `name`; its dtype must be
 * `dtype` unless dtype_free, when it is the result dtype) or a new return tensor. */
static xr_status_t set_output(xr_op_plan_t *plan, xr_reduce_problem_t *p, int s, xr_dtype_t dtype,
                              int given, const char *name, bool dtype_free, const result_t *r) {
  xr_reduce_output_t *o = &p->out[s];
  int64_t strides[XR_MAX_RANK];
  if (given >= 0) {
    const xr_tensor_spec_t *t = plan->inputs[given];
    bool same = t->rank == r->rank;
    for (int d = 0; same && d < r->rank; d++) same = t->shape[d] == r->shape[d];
    if (!same) {
      char want[160], got[160];
      shape_text(want, sizeof want, r->rank, r->shape);
      shape_text(got, sizeof got, t->rank, t->shape);
      return xr_plan_error(plan, "%s: expected the result's shape %s, got %s", name, want, got);
    }
    if (!dtype_free && t->dtype != dtype)
      return xr_plan_error(plan, "%s: expected a %s tensor, got %s", name, xr_dtype_name(dtype),
                           xr_dtype_name(t->dtype));
    if (overlaps(t))
      return xr_plan_error(plan, "%s: an expanded (stride 0) tensor cannot be written", name);
    o->index = given;
    o->dtype = t->dtype;
    memcpy(strides, t->strides, sizeof(int64_t) * (size_t)t->rank);
  } else {
    size_t k = plan->return_count++;
    o->index = (int)(plan->input_count + k);
    o->dtype = dtype;
    xr_desc_set(&plan->returns[k], dtype, r->rank, r->shape);
    int64_t st = 1;
    for (int d = r->rank - 1; d >= 0; d--) strides[d] = st, st *= r->shape[d];
  }
  for (int j = 0; j < r->kept_count; j++) o->outer_strides[j] = strides[r->pos[r->kept[j]]];
  o->dim_stride = r->along >= 0 ? strides[r->pos[r->along]] : 0;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* analysis per op                                                                             */

typedef struct ctx {
  xr_op_plan_t *plan;
  xr_reduce_problem_t *p;
  const xr_op_t *op;
  const xr_tensor_spec_t *t; /* self */
  const char *base;          /* the op name after "aten::" */
} ctx_t;

static int64_t numel_of(const xr_tensor_spec_t *t) { return xr_spec_numel(t); }

static int64_t reduced_count(const xr_tensor_spec_t *t, const bool *reduced) {
  int64_t n = 1;
  for (int d = 0; d < t->rank; d++)
    if (reduced[d]) n *= t->shape[d];
  return n;
}

/* amax, amin, max, min and argmin have no identity: an empty reduction is an error in torch. */
static xr_status_t need_elements(const ctx_t *c, const bool *reduced) {
  if (reduced_count(c->t, reduced) > 0) return XR_OK;
  return xr_plan_error(c->plan, "self: %s over an empty dimension has no identity (torch raises)",
                       c->base);
}

/* sum, nansum, prod and mean: dtype=, int64 for integer inputs, out= of any dtype. */
static xr_status_t analyze_accumulate(ctx_t *c, xr_reduce_op_t op) {
  xr_op_plan_t *plan = c->plan;
  xr_reduce_problem_t *p = c->p;
  const xr_op_t *o = c->op;
  /* sum(self, *, dtype) as a trace without schema records it: two unnamed arguments. */
  bool full_form = positional(o) && o->arg_count <= 2;
  bool keepdim = false, given = false;
  xr_dtype_t dtype = XR_DTYPE_INVALID;
  int out = -1;
  const char *out_name = "out";
  static const char *const out_names[] = {"out", NULL};
  bool reduced[XR_MAX_RANK];
  xr_status_t st;
  if ((st = read_dims(plan, full_form ? NULL : arg(o, 1, "dim"), c->t->rank, reduced)) ||
      (!full_form && (st = read_bool(plan, arg(o, 2, "keepdim"), "keepdim", &keepdim))) ||
      (st = read_dtype(plan, full_form ? 1 : 3, &dtype, &given)) ||
      (st = out_tensor(plan, out_names, &out, &out_name)))
    return st;
  xr_dtype_t res = c->t->dtype;
  if (given) res = dtype;
  else if (out >= 0) res = plan->inputs[out]->dtype;
  else if (op != XR_REDUCE_MEAN && !is_float(res)) res = XR_DTYPE_I64;
  if (given && out >= 0 && plan->inputs[out]->dtype != dtype)
    return xr_plan_error(plan, "%s: expected a %s tensor (the dtype argument), got %s", out_name,
                         xr_dtype_name(dtype), xr_dtype_name(plan->inputs[out]->dtype));
  if (op == XR_REDUCE_MEAN && !is_float(res)) {
    if (given || out >= 0)
      return xr_plan_error(plan, "%s: mean needs a floating result dtype, got %s",
                           given ? "dtype" : out_name, xr_dtype_name(res));
    return xr_plan_error(plan, "self: mean of a %s tensor: torch cannot infer a floating result "
                         "dtype (pass dtype=)", xr_dtype_name(c->t->dtype));
  }
  result_t r;
  set_reduction(p, c->t, reduced, keepdim, &r);
  p->op = op;
  p->cast = res;
  return set_output(plan, p, XR_REDUCE_VALUES, res, out, out_name, true, &r);
}

/* amax, amin: dim (default [] = every dim), keepdim; the input's dtype. */
static xr_status_t analyze_amax(ctx_t *c, xr_reduce_op_t op) {
  xr_op_plan_t *plan = c->plan;
  bool keepdim = false, reduced[XR_MAX_RANK];
  int out = -1;
  const char *out_name = "out";
  static const char *const out_names[] = {"out", NULL};
  xr_status_t st;
  if ((st = read_dims(plan, arg(c->op, 1, "dim"), c->t->rank, reduced)) ||
      (st = read_bool(plan, arg(c->op, 2, "keepdim"), "keepdim", &keepdim)) ||
      (st = out_tensor(plan, out_names, &out, &out_name)) || (st = need_elements(c, reduced)))
    return st;
  result_t r;
  set_reduction(c->p, c->t, reduced, keepdim, &r);
  c->p->op = op;
  return set_output(plan, c->p, XR_REDUCE_VALUES, c->t->dtype, out, out_name, false, &r);
}

/* max, min: max() (every element, values) and max.dim (values and int64 indices, keepdim);
 * max.other is aten::maximum's by then (complete()). */
static xr_status_t analyze_max(ctx_t *c, xr_reduce_op_t op) {
  xr_op_plan_t *plan = c->plan;
  xr_reduce_problem_t *p = c->p;
  bool reduced[XR_MAX_RANK];
  result_t r;
  xr_status_t st;
  const xr_value_t *dimv = arg(c->op, 1, "dim");
  p->op = op;
  if (!dimv) { /* max(self): every element, values only */
    int out = -1;
    const char *out_name = "out";
    static const char *const out_names[] = {"out", NULL};
    if ((st = read_dims(plan, NULL, c->t->rank, reduced)) ||
        (st = out_tensor(plan, out_names, &out, &out_name)) || (st = need_elements(c, reduced)))
      return st;
    set_reduction(p, c->t, reduced, false, &r);
    return set_output(plan, p, XR_REDUCE_VALUES, c->t->dtype, out, out_name, false, &r);
  }
  int dim = 0, values = -1, indices = -1;
  bool keepdim = false;
  const char *values_name = "values", *indices_name = "indices";
  static const char *const max_values[] = {"max", "values", NULL};
  static const char *const max_indices[] = {"max_values", "indices", NULL};
  static const char *const min_values[] = {"min", "values", NULL};
  static const char *const min_indices[] = {"min_indices", "indices", NULL};
  bool is_max = op == XR_REDUCE_MAX;
  if ((st = read_one_dim(plan, dimv, 0, c->t->rank, &dim)) ||
      (st = read_bool(plan, arg(c->op, 2, "keepdim"), "keepdim", &keepdim)) ||
      (st = out_tensor(plan, is_max ? max_values : min_values, &values, &values_name)) ||
      (st = out_tensor(plan, is_max ? max_indices : min_indices, &indices, &indices_name)))
    return st;
  if ((values >= 0) != (indices >= 0))
    return xr_plan_error(plan, "%s: the out= form takes both the values and the indices tensor",
                         values >= 0 ? indices_name : values_name);
  for (int d = 0; d < XR_MAX_RANK; d++) reduced[d] = d == dim && d < c->t->rank;
  if ((st = need_elements(c, reduced))) return st;
  set_reduction(p, c->t, reduced, keepdim, &r);
  if ((st = set_output(plan, p, XR_REDUCE_VALUES, c->t->dtype, values, values_name, false, &r)))
    return st;
  return set_output(plan, p, XR_REDUCE_INDICES, XR_DTYPE_I64, indices, indices_name, false, &r);
}

/* argmin(self, dim=None, keepdim): int64 positions, as the argmax family does it. */
static xr_status_t analyze_argmin(ctx_t *c) {
  xr_op_plan_t *plan = c->plan;
  const xr_value_t *dimv = arg(c->op, 1, "dim");
  bool keepdim = false, reduced[XR_MAX_RANK];
  int dim = 0, out = -1;
  const char *out_name = "out";
  static const char *const out_names[] = {"out", NULL};
  xr_status_t st;
  if ((dimv && (st = read_one_dim(plan, dimv, 0, c->t->rank, &dim))) ||
      (st = read_bool(plan, arg(c->op, 2, "keepdim"), "keepdim", &keepdim)) ||
      (st = out_tensor(plan, out_names, &out, &out_name)))
    return st;
  for (int d = 0; d < XR_MAX_RANK; d++) reduced[d] = d < c->t->rank && (!dimv || d == dim);
  if (reduced_count(c->t, reduced) == 0)
    return xr_plan_error(plan, "self: argmin of an empty dimension is undefined");
  result_t r;
  set_reduction(c->p, c->t, reduced, keepdim, &r);
  c->p->op = XR_REDUCE_MIN;
  return set_output(plan, c->p, XR_REDUCE_INDICES, XR_DTYPE_I64, out, out_name, false, &r);
}

/* all, any (bool; uint8 for uint8 inputs, as torch), count_nonzero (int64, no keepdim). */
static xr_status_t analyze_logical(ctx_t *c, xr_reduce_op_t op) {
  xr_op_plan_t *plan = c->plan;
  bool keepdim = false, reduced[XR_MAX_RANK];
  int out = -1;
  const char *out_name = "out";
  static const char *const out_names[] = {"out", NULL};
  xr_status_t st;
  if ((st = read_dims(plan, arg(c->op, 1, "dim"), c->t->rank, reduced)) ||
      (op != XR_REDUCE_COUNT_NONZERO &&
       (st = read_bool(plan, arg(c->op, 2, "keepdim"), "keepdim", &keepdim))) ||
      (st = out_tensor(plan, out_names, &out, &out_name)))
    return st;
  xr_dtype_t res = op == XR_REDUCE_COUNT_NONZERO ? XR_DTYPE_I64
                   : c->t->dtype == XR_DTYPE_U8  ? XR_DTYPE_U8
                                                 : XR_DTYPE_BOOL;
  result_t r;
  set_reduction(c->p, c->t, reduced, keepdim, &r);
  c->p->op = op;
  return set_output(plan, c->p, XR_REDUCE_VALUES, res, out, out_name, false, &r);
}

/* logsumexp(self, dim, keepdim): integer inputs give float32, as torch. */
static xr_status_t analyze_logsumexp(ctx_t *c) {
  xr_op_plan_t *plan = c->plan;
  bool keepdim = false, reduced[XR_MAX_RANK];
  int out = -1;
  const char *out_name = "out";
  static const char *const out_names[] = {"out", NULL};
  xr_status_t st;
  if ((st = read_dims(plan, arg(c->op, 1, "dim"), c->t->rank, reduced)) ||
      (st = read_bool(plan, arg(c->op, 2, "keepdim"), "keepdim", &keepdim)) ||
      (st = out_tensor(plan, out_names, &out, &out_name)))
    return st;
  xr_dtype_t res = out >= 0 ? plan->inputs[out]->dtype : is_float(c->t->dtype) ? c->t->dtype : XR_DTYPE_F32;
  if (!is_float(res))
    return xr_plan_error(plan, "%s: expected a floating tensor, got %s", out_name, xr_dtype_name(res));
  result_t r;
  set_reduction(c->p, c->t, reduced, keepdim, &r);
  c->p->op = XR_REDUCE_LOGSUMEXP;
  c->p->cast = res;
  return set_output(plan, c->p, XR_REDUCE_VALUES, res, out, out_name, true, &r);
}

/* var, std, var_mean, std_mean in their three overloads: (self, unbiased), .dim (self, dim,
 * unbiased, keepdim) and .correction (self, dim, *, correction, keepdim). */
static xr_status_t analyze_var(ctx_t *c, xr_reduce_op_t op, bool with_mean) {
  xr_op_plan_t *plan = c->plan;
  const xr_op_t *o = c->op;
  const xr_value_t *dimv = arg(o, -1, "dim"), *unbiased = arg(o, -1, "unbiased");
  const xr_value_t *correction = arg(o, -1, "correction"), *keep = arg(o, -1, "keepdim");
  if (!xr_op_find_arg(o, "dim") && !xr_op_find_arg(o, "unbiased") &&
      !xr_op_find_arg(o, "correction") && !xr_op_find_arg(o, "keepdim")) {
    /* Unnamed: (self, bool) is var(self, unbiased); otherwise (self, dim, unbiased or
     * correction, keepdim). */
    const xr_value_t *a1 = arg(o, 1, NULL);
    if (a1 && a1->kind == XR_VALUE_BOOL) {
      unbiased = a1;
    } else {
      dimv = a1;
      const xr_value_t *a2 = arg(o, 2, NULL);
      if (a2 && a2->kind == XR_VALUE_BOOL) unbiased = a2;
      else correction = a2;
      keep = arg(o, 3, NULL);
    }
  }
  bool keepdim = false, unb = true, reduced[XR_MAX_RANK];
  double corr = 1;
  xr_status_t st;
  if ((st = read_dims(plan, dimv, c->t->rank, reduced)) ||
      (st = read_bool(plan, keep, "keepdim", &keepdim)) ||
      (st = read_bool(plan, unbiased, "unbiased", &unb)) ||
      (st = read_number(plan, correction, "correction", &corr)))
    return st;
  if (unbiased && correction)
    return xr_plan_error(plan, "correction: give unbiased or correction, not both");
  if (unbiased) corr = unb ? 1 : 0;
  if (!is_float(c->t->dtype))
    return xr_plan_error(plan, "self: %s of a %s tensor (torch takes floating tensors only)",
                         c->base, xr_dtype_name(c->t->dtype));
  int out0 = -1, out1 = -1;
  const char *name0 = "out", *name1 = "out1";
  static const char *const names_single[] = {"out", NULL};
  static const char *const names0[] = {"out0", NULL}, *const names1[] = {"out1", NULL};
  if ((st = out_tensor(plan, with_mean ? names0 : names_single, &out0, &name0)) ||
      (with_mean && (st = out_tensor(plan, names1, &out1, &name1))))
    return st;
  result_t r;
  set_reduction(c->p, c->t, reduced, keepdim, &r);
  c->p->op = op;
  c->p->correction = corr;
  if ((st = set_output(plan, c->p, XR_REDUCE_VALUES, c->t->dtype, out0, name0, false, &r)))
    return st;
  if (!with_mean) return XR_OK;
  return set_output(plan, c->p, XR_REDUCE_INDICES, c->t->dtype, out1, name1, false, &r);
}

/* aten::norm (p, dim, keepdim, dtype) and aten::linalg_vector_norm (ord, dim, keepdim, dtype). */
static xr_status_t analyze_norm(ctx_t *c, bool vector) {
  xr_op_plan_t *plan = c->plan;
  const xr_op_t *o = c->op;
  /* norm.ScalarOpt_dtype(self, p, *, dtype) as a trace without schema records it. */
  bool dtype_form = !vector && positional(o) && o->arg_count == 3;
  double pv = 2;
  bool keepdim = false, given = false, reduced[XR_MAX_RANK];
  xr_dtype_t dtype = XR_DTYPE_INVALID;
  int out = -1;
  const char *out_name = "out";
  static const char *const out_names[] = {"out", NULL};
  xr_status_t st;
  if ((st = read_number(plan, arg(o, 1, vector ? "ord" : "p"), vector ? "ord" : "p", &pv)) ||
      (st = read_dims(plan, dtype_form ? NULL : arg(o, 2, "dim"), c->t->rank, reduced)) ||
      (st = read_bool(plan, dtype_form ? NULL : arg(o, 3, "keepdim"), "keepdim", &keepdim)) ||
      (st = read_dtype(plan, dtype_form ? 2 : 4, &dtype, &given)) ||
      (st = out_tensor(plan, out_names, &out, &out_name)))
    return st;
  if (isnan(pv)) return xr_plan_error(plan, "%s: the order is NaN", vector ? "ord" : "p");
  if (!is_float(c->t->dtype))
    return xr_plan_error(plan, "self: the norm of a %s tensor (torch takes floating tensors "
                         "only)", xr_dtype_name(c->t->dtype));
  xr_dtype_t res = given ? dtype : out >= 0 ? plan->inputs[out]->dtype : c->t->dtype;
  if (!is_float(res))
    return xr_plan_error(plan, "%s: expected a floating dtype, got %s", given ? "dtype" : out_name,
                         xr_dtype_name(res));
  if (given && out >= 0 && plan->inputs[out]->dtype != dtype)
    return xr_plan_error(plan, "%s: expected a %s tensor (the dtype argument), got %s", out_name,
                         xr_dtype_name(dtype), xr_dtype_name(plan->inputs[out]->dtype));
  if (numel_of(c->t) == 0 && (pv < 0 || isinf(pv)))
    return xr_plan_error(plan, "self: the %g-norm of an empty tensor has no identity (torch "
                         "raises)", pv);
  result_t r;
  set_reduction(c->p, c->t, reduced, keepdim, &r);
  c->p->op = XR_REDUCE_NORM;
  c->p->p = pv;
  c->p->cast = res;
  return set_output(plan, c->p, XR_REDUCE_VALUES, res, out, out_name, true, &r);
}

/* cumsum, cumprod (dim, dtype=, out=) and the in-place cumsum_, cumprod_ (written into self). */
static xr_status_t analyze_scan(ctx_t *c, xr_reduce_op_t op, bool inplace) {
  xr_op_plan_t *plan = c->plan;
  const xr_value_t *dimv = arg(c->op, 1, "dim");
  if (!dimv) return xr_error(XR_INVALID_ARGUMENT, "%s: argument 'dim' (position 1) is missing",
                             plan->op->name);
  int dim = 0, out = -1;
  bool given = false;
  xr_dtype_t dtype = XR_DTYPE_INVALID;
  const char *out_name = "out";
  static const char *const out_names[] = {"out", NULL};
  xr_status_t st;
  if ((st = read_one_dim(plan, dimv, 0, c->t->rank, &dim)) ||
      (st = read_dtype(plan, 2, &dtype, &given)) || (st = out_tensor(plan, out_names, &out, &out_name)))
    return st;
  xr_dtype_t res = c->t->dtype;
  if (inplace) {
    if (given && dtype != res)
      return xr_plan_error(plan, "dtype: %s writes self (%s): a dtype argument must match it",
                           c->base, xr_dtype_name(res));
    out = c->p->self;
    out_name = "self";
  } else if (given) {
    res = dtype;
    if (out >= 0 && plan->inputs[out]->dtype != dtype)
      return xr_plan_error(plan, "%s: expected a %s tensor (the dtype argument), got %s", out_name,
                           xr_dtype_name(dtype), xr_dtype_name(plan->inputs[out]->dtype));
  } else if (out >= 0) {
    res = plan->inputs[out]->dtype;
  } else if (!is_float(res)) {
    res = XR_DTYPE_I64;
  }
  result_t r;
  set_along(c->p, c->t, dim, c->t->rank ? c->t->shape[dim] : 1, &r);
  c->p->op = op;
  c->p->cast = res;
  return set_output(plan, c->p, XR_REDUCE_VALUES, res, out, out_name, true, &r);
}

/* sort (dim, descending; sort.stable with stable=, dim= and descending= by name), argsort, and
 * topk (k, dim, largest, sorted). Always stable; sorted=False gets the sorted order, which is
 * one of the orders torch may return. */
static xr_status_t analyze_sort(ctx_t *c) {
  xr_op_plan_t *plan = c->plan;
  const xr_op_t *o = c->op;
  bool topk = !strcmp(c->base, "topk"), argsort = !strcmp(c->base, "argsort");
  const xr_value_t *dimv, *descv, *kv = NULL;
  if (topk) {
    kv = arg(o, 1, "k");
    dimv = arg(o, 2, "dim");
    descv = arg(o, 3, "largest");
  } else if (positional(o) && o->arg_count == 4) { /* sort.stable(self, stable, dim, descending) */
    dimv = arg(o, 2, NULL);
    descv = arg(o, 3, NULL);
  } else {
    dimv = arg(o, 1, "dim");
    descv = arg(o, 2, "descending");
  }
  int dim = 0;
  bool descending = topk;
  xr_status_t st;
  if ((st = read_one_dim(plan, dimv, -1, c->t->rank, &dim)) ||
      (st = read_bool(plan, descv, topk ? "largest" : "descending", &descending)))
    return st;
  int64_t n = c->t->rank ? c->t->shape[dim] : 1, k = n;
  if (topk) {
    if (!kv) return xr_error(XR_INVALID_ARGUMENT, "%s: argument 'k' (position 1) is missing",
                             plan->op->name);
    if (kv->kind != XR_VALUE_INT) return xr_plan_error(plan, "k: expected an int");
    k = kv->as.i;
    if (k < 0 || k > n)
      return xr_plan_error(plan, "k: %lld is out of range for a dimension of %lld", (long long)k,
                           (long long)n);
  }
  result_t r;
  set_along(c->p, c->t, dim, k, &r);
  c->p->op = XR_REDUCE_SORT;
  c->p->k = k;
  c->p->descending = descending;
  int values = -1, indices = -1;
  const char *values_name = "values", *indices_name = "indices";
  static const char *const values_names[] = {"values", NULL}, *const indices_names[] = {"indices", NULL};
  static const char *const out_names[] = {"out", NULL};
  if (argsort) {
    if ((st = out_tensor(plan, out_names, &indices, &indices_name))) return st;
    return set_output(plan, c->p, XR_REDUCE_INDICES, XR_DTYPE_I64, indices, indices_name, false, &r);
  }
  if ((st = out_tensor(plan, values_names, &values, &values_name)) ||
      (st = out_tensor(plan, indices_names, &indices, &indices_name)))
    return st;
  if ((values >= 0) != (indices >= 0))
    return xr_plan_error(plan, "%s: the out= form takes both the values and the indices tensor",
                         values >= 0 ? indices_name : values_name);
  if ((st = set_output(plan, c->p, XR_REDUCE_VALUES, c->t->dtype, values, values_name, false, &r)))
    return st;
  return set_output(plan, c->p, XR_REDUCE_INDICES, XR_DTYPE_I64, indices, indices_name, false, &r);
}

/* ------------------------------------------------------------------------------------------ */
/* simplification and costs                                                                    */

/* Merges outer dims contiguous in the input and every output, reduced dims contiguous in the
 * input (reductions only: scans and sorts keep their one dim), and drops size-1 dims. */
static void simplify(xr_reduce_problem_t *p) {
  if (p->outer_numel == 0 || p->red_numel == 0) return;
  int n = 0;
  for (int d = 0; d < p->outer_rank; d++) {
    int64_t size = p->outer_shape[d];
    if (size == 1) continue;
    bool merge = n > 0 && p->in_outer[n - 1] == p->in_outer[d] * size;
    for (int s = 0; merge && s < XR_REDUCE_OUTPUTS; s++)
      if (p->out[s].index >= 0)
        merge = p->out[s].outer_strides[n - 1] == p->out[s].outer_strides[d] * size;
    int at = merge ? n - 1 : n++;
    p->outer_shape[at] = merge ? p->outer_shape[at] * size : size;
    p->in_outer[at] = p->in_outer[d];
    for (int s = 0; s < XR_REDUCE_OUTPUTS; s++) p->out[s].outer_strides[at] = p->out[s].outer_strides[d];
  }
  p->outer_rank = n;
  if (xr_reduce_along(p->op)) return;
  n = 0;
  for (int d = 0; d < p->red_rank; d++) {
    int64_t size = p->red_shape[d];
    if (size == 1) continue;
    bool merge = n > 0 && p->in_red[n - 1] == p->in_red[d] * size;
    int at = merge ? n - 1 : n++;
    p->red_shape[at] = merge ? p->red_shape[at] * size : size;
    p->in_red[at] = p->in_red[d];
  }
  p->red_rank = n;
}

xr_reduce_norm_kind_t xr_reduce_norm_kind(double p) {
  if (p == INFINITY) return XR_NORM_INF;
  if (p == -INFINITY) return XR_NORM_NEG_INF;
  if (p == 0) return XR_NORM_0;
  if (p == 1) return XR_NORM_1;
  if (p == 2) return XR_NORM_2;
  return XR_NORM_P;
}

/* Bytes: the input's distinct elements (an expanded dim is read once) and every output
 * element; FLOPs per element as the comments say. */
static void costs(xr_op_plan_t *plan, const xr_reduce_problem_t *p) {
  const xr_tensor_spec_t *t = plan->inputs[p->self];
  double bytes = xr_spec_distinct_numel(t) * (double)xr_dtype_size(t->dtype);
  double rows = (double)p->outer_numel, n = (double)p->red_numel, elems = rows * n;
  double per_row = xr_reduce_along(p->op) ? (p->op == XR_REDUCE_SORT ? (double)p->k : n) : 1;
  for (int s = 0; s < XR_REDUCE_OUTPUTS; s++)
    if (p->out[s].index >= 0) bytes += rows * per_row * (double)xr_dtype_size(p->out[s].dtype);
  double flops;
  switch (p->op) {
    case XR_REDUCE_MEAN: flops = elems + rows; break;         /* adds, one divide */
    case XR_REDUCE_LOGSUMEXP: flops = 4 * elems + rows; break; /* max, subtract, exp, add; log */
    case XR_REDUCE_VAR:
    case XR_REDUCE_STD: flops = 4 * elems + 2 * rows; break;   /* add; subtract, multiply-add */
    case XR_REDUCE_NORM: {
      xr_reduce_norm_kind_t k = xr_reduce_norm_kind(p->p);     /* |x|^p (or x*x) and add */
      flops = (k == XR_NORM_0 ? 1 : k == XR_NORM_P ? 3 : 2) * elems + rows;
      break;
    }
    case XR_REDUCE_SORT: /* n log2 n comparisons per row */
      flops = n > 1 ? elems * ceil(log2(n)) : 0;
      break;
    default: flops = elems; /* one add, multiply or compare per element */
  }
  plan->flops = flops;
  plan->bytes = bytes;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  const xr_op_t *op = plan->op;
  xr_reduce_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", op->name);
  plan->problem = p;
  p->out[0].index = p->out[1].index = -1;
  int self = -1;
  xr_status_t st = xr_arg_tensor(plan, 0, "self", true, &self);
  if (st != XR_OK) return st;
  if (self < 0) return xr_plan_error(plan, "self: tensor argument is not bound");
  ctx_t c = {.plan = plan, .p = p, .op = op, .t = plan->inputs[self], .base = op->name + 6};
  p->self = self;
  p->in_dtype = p->cast = c.t->dtype;
  const char *b = c.base;
  if (!strcmp(b, "sum")) st = analyze_accumulate(&c, XR_REDUCE_SUM);
  else if (!strcmp(b, "nansum")) st = analyze_accumulate(&c, XR_REDUCE_NANSUM);
  else if (!strcmp(b, "mean")) st = analyze_accumulate(&c, XR_REDUCE_MEAN);
  else if (!strcmp(b, "prod")) st = analyze_accumulate(&c, XR_REDUCE_PROD);
  else if (!strcmp(b, "amax")) st = analyze_amax(&c, XR_REDUCE_MAX);
  else if (!strcmp(b, "amin")) st = analyze_amax(&c, XR_REDUCE_MIN);
  else if (!strcmp(b, "max")) st = analyze_max(&c, XR_REDUCE_MAX);
  else if (!strcmp(b, "min")) st = analyze_max(&c, XR_REDUCE_MIN);
  else if (!strcmp(b, "argmin")) st = analyze_argmin(&c);
  else if (!strcmp(b, "all")) st = analyze_logical(&c, XR_REDUCE_ALL);
  else if (!strcmp(b, "any")) st = analyze_logical(&c, XR_REDUCE_ANY);
  else if (!strcmp(b, "count_nonzero")) st = analyze_logical(&c, XR_REDUCE_COUNT_NONZERO);
  else if (!strcmp(b, "logsumexp")) st = analyze_logsumexp(&c);
  else if (!strcmp(b, "var")) st = analyze_var(&c, XR_REDUCE_VAR, false);
  else if (!strcmp(b, "std")) st = analyze_var(&c, XR_REDUCE_STD, false);
  else if (!strcmp(b, "var_mean")) st = analyze_var(&c, XR_REDUCE_VAR, true);
  else if (!strcmp(b, "std_mean")) st = analyze_var(&c, XR_REDUCE_STD, true);
  else if (!strcmp(b, "norm")) st = analyze_norm(&c, false);
  else if (!strcmp(b, "linalg_vector_norm")) st = analyze_norm(&c, true);
  else if (!strcmp(b, "cumsum")) st = analyze_scan(&c, XR_REDUCE_CUMSUM, false);
  else if (!strcmp(b, "cumsum_")) st = analyze_scan(&c, XR_REDUCE_CUMSUM, true);
  else if (!strcmp(b, "cumprod")) st = analyze_scan(&c, XR_REDUCE_CUMPROD, false);
  else if (!strcmp(b, "cumprod_")) st = analyze_scan(&c, XR_REDUCE_CUMPROD, true);
  else st = analyze_sort(&c);
  if (st != XR_OK) return st;
  p->outer_numel = 1;
  for (int d = 0; d < p->outer_rank; d++) p->outer_numel *= p->outer_shape[d];
  p->red_numel = 1;
  for (int d = 0; d < p->red_rank; d++) p->red_numel *= p->red_shape[d];
  if (!p->unsupported[0]) {
    xr_dtype_t bad = !known_dtype(p->in_dtype) ? p->in_dtype : !known_dtype(p->cast) ? p->cast
                                                                                      : XR_DTYPE_INVALID;
    for (int s = 0; s < XR_REDUCE_OUTPUTS && bad == XR_DTYPE_INVALID; s++)
      if (p->out[s].index >= 0 && !known_dtype(p->out[s].dtype)) bad = p->out[s].dtype;
    if (bad != XR_DTYPE_INVALID)
      snprintf(p->unsupported, sizeof p->unsupported, "%s: %s tensors are not implemented (f32, "
               "f64, f16, bf16, int8 to int64, uint8 and bool are)", op->name, xr_dtype_name(bad));
  }
  costs(plan, p);
  simplify(p);
  return XR_OK;
}

static bool exact_integral(xr_dtype_t d) {
  return d == XR_DTYPE_I8 || d == XR_DTYPE_U8 || d == XR_DTYPE_I16 || d == XR_DTYPE_I32 ||
         d == XR_DTYPE_I64 || d == XR_DTYPE_BOOL;
}

xr_status_t xr_reduce_check_fast(const xr_op_plan_t *plan, const char *backend) {
  const xr_reduce_problem_t *p = plan->problem;
  if (p->unsupported[0]) return xr_error(XR_UNIMPLEMENTED, "%s", p->unsupported);
  xr_dtype_t bad = XR_DTYPE_INVALID;
  /* all / any of bool tensors: truth values are exact in float */
  bool truth = (p->op == XR_REDUCE_ALL || p->op == XR_REDUCE_ANY) &&
               p->in_dtype == XR_DTYPE_BOOL && p->cast == p->in_dtype;
  if (truth || xr_reduce_int_to_float(p)) bad = XR_DTYPE_INVALID;
  else if (!xr_reduce_fast_dtype(p->in_dtype))  /* an integer cast to float64: name the cast */
    bad = exact_integral(p->in_dtype) && xr_dtype_is_floating(p->cast) ? p->cast : p->in_dtype;
  else if (!xr_reduce_fast_dtype(p->cast)) bad = p->cast;
  for (int s = 0; s < XR_REDUCE_OUTPUTS && bad == XR_DTYPE_INVALID; s++) {
    xr_dtype_t d = p->out[s].dtype;
    if (p->out[s].index >= 0 && !xr_reduce_fast_dtype(d) && d != XR_DTYPE_BOOL &&
        d != XR_DTYPE_I64)
      bad = d;
  }
  if (bad != XR_DTYPE_INVALID)
    return xr_error(XR_UNIMPLEMENTED, "%s kernels: %s: %s tensors run on the reference (the %s "
                    "kernels compute f32, f16 and bf16 in float)", backend, plan->op->name,
                    xr_dtype_name(bad), backend);
  return XR_OK;
}

bool xr_reduce_int_to_float(const xr_reduce_problem_t *p) {
  if (p->unsupported[0] || !exact_integral(p->in_dtype) || !xr_reduce_fast_dtype(p->cast))
    return false;
  switch (p->op) {
    case XR_REDUCE_SUM:
    case XR_REDUCE_NANSUM:
    case XR_REDUCE_MEAN:
    case XR_REDUCE_PROD:
    case XR_REDUCE_LOGSUMEXP:
    case XR_REDUCE_CUMSUM:
    case XR_REDUCE_CUMPROD: break;
    default: return false;
  }
  for (int s = 0; s < XR_REDUCE_OUTPUTS; s++)
    if (p->out[s].index >= 0 && !xr_reduce_fast_dtype(p->out[s].dtype)) return false;
  return true;
}

bool xr_reduce_int_sort(const xr_reduce_problem_t *p) {
  return !p->unsupported[0] && p->op == XR_REDUCE_SORT && exact_integral(p->in_dtype);
}

bool xr_reduce_int_pipeline(const xr_reduce_problem_t *p) {
  if (p->unsupported[0] || !exact_integral(p->in_dtype)) return false;
  switch (p->op) {
    case XR_REDUCE_SUM:
    case XR_REDUCE_NANSUM:
    case XR_REDUCE_PROD:
    case XR_REDUCE_CUMSUM:
    case XR_REDUCE_CUMPROD:
      if (!exact_integral(p->cast)) return false;
      break;
    case XR_REDUCE_MAX:
    case XR_REDUCE_MIN:
    case XR_REDUCE_ALL:
    case XR_REDUCE_ANY:
    case XR_REDUCE_COUNT_NONZERO: break;
    default: return false;
  }
  for (int s = 0; s < XR_REDUCE_OUTPUTS; s++)
    if (p->out[s].index >= 0 && xr_dtype_is_floating(p->out[s].dtype)) return false;
  return true;
}

/* ------------------------------------------------------------------------------------------ */
/* CPU reference                                                                               */

typedef struct ref_state {
  const xr_reduce_problem_t *p;
  const void *in;
  int64_t in_offset;
  void *out[XR_REDUCE_OUTPUTS];
  int64_t out_offset[XR_REDUCE_OUTPUTS];
} ref_state_t;

static bool integral(xr_dtype_t d) { return !xr_dtype_is_floating(d); }

/* Integer and bool elements exactly (floats through double, truncated). */
static int64_t load_int(const void *b, xr_dtype_t d, int64_t i) {
  switch (d) {
    case XR_DTYPE_I8: return ((const int8_t *)b)[i];
    case XR_DTYPE_I16: return ((const int16_t *)b)[i];
    case XR_DTYPE_I32: return ((const int32_t *)b)[i];
    case XR_DTYPE_I64: return ((const int64_t *)b)[i];
    case XR_DTYPE_U8: return ((const uint8_t *)b)[i];
    case XR_DTYPE_BOOL: return ((const uint8_t *)b)[i] != 0;
    default: {
      double v = xr_load_element(b, d, i);
      if (isnan(v) || v <= -0x1p63) return INT64_MIN; /* what x86's conversion gives */
      return v >= 0x1p63 ? INT64_MAX : (int64_t)v;
    }
  }
}

/* v into an integer or bool dtype (two's complement wrap-around, as torch's casts), or a float
 * one (rounded). */
static void store_int(void *b, xr_dtype_t d, int64_t i, int64_t v) {
  switch (d) {
    case XR_DTYPE_I8: ((int8_t *)b)[i] = (int8_t)(uint8_t)v; break;
    case XR_DTYPE_I16: ((int16_t *)b)[i] = (int16_t)(uint16_t)v; break;
    case XR_DTYPE_I32: ((int32_t *)b)[i] = (int32_t)(uint32_t)v; break;
    case XR_DTYPE_I64: ((int64_t *)b)[i] = v; break;
    case XR_DTYPE_U8: ((uint8_t *)b)[i] = (uint8_t)v; break;
    case XR_DTYPE_BOOL: ((uint8_t *)b)[i] = v != 0; break;
    default: xr_store_element(b, d, i, (double)v);
  }
}

/* An integer converted to integer dtype d (wrapping), as torch's cast before a sum does. */
static int64_t wrap_int(xr_dtype_t d, int64_t v) {
  switch (d) {
    case XR_DTYPE_I8: return (int8_t)(uint8_t)v;
    case XR_DTYPE_I16: return (int16_t)(uint16_t)v;
    case XR_DTYPE_I32: return (int32_t)(uint32_t)v;
    case XR_DTYPE_U8: return (uint8_t)v;
    case XR_DTYPE_BOOL: return v != 0;
    default: return v;
  }
}

/* v rounded to float dtype d and widened back. */
static double round_to(xr_dtype_t d, double v) {
  if (d == XR_DTYPE_F64 || integral(d)) return v;
  if (d == XR_DTYPE_F32) return (double)(float)v;
  uint8_t tmp[8];
  xr_store_element(tmp, d, 0, v);
  return xr_load_element(tmp, d, 0);
}

/* Element at storage index i, converted to the problem's cast dtype: as double, or (integer
 * casts) as int64. */
static double ld(const ref_state_t *s, int64_t i) {
  const xr_reduce_problem_t *p = s->p;
  double v = xr_load_element(s->in, p->in_dtype, i);
  return p->cast != p->in_dtype ? round_to(p->cast, v) : v;
}

static int64_t ldi(const ref_state_t *s, int64_t i) {
  return wrap_int(s->p->cast, load_int(s->in, s->p->in_dtype, i));
}

/* The better of (best, value): max or min, NaN above everything and kept once seen. */
static bool better(bool max, double best, double v) {
  if (isnan(best)) return false;
  return isnan(v) || (max ? v > best : v < best);
}

static void ref_reduce(const ref_state_t *s, int64_t o) {
  const xr_reduce_problem_t *p = s->p;
  const int64_t base = s->in_offset + xr_reduce_outer_offset(p, p->in_outer, o), n = p->red_numel;
  const xr_reduce_output_t *ov = &p->out[XR_REDUCE_VALUES], *oi = &p->out[XR_REDUCE_INDICES];
  const int64_t at0 = s->out_offset[0] + xr_reduce_outer_offset(p, ov->outer_strides, o);
  const int64_t at1 = s->out_offset[1] + xr_reduce_outer_offset(p, oi->outer_strides, o);
#define EACH(k, idx) for (int64_t k = 0, idx; k < n && ((idx = base + xr_reduce_red_offset(p, k)), 1); k++)
  switch (p->op) {
    case XR_REDUCE_SUM:
    case XR_REDUCE_NANSUM:
    case XR_REDUCE_PROD: {
      bool prod = p->op == XR_REDUCE_PROD;
      if (integral(p->cast)) {
        uint64_t acc = prod; /* wraps as int64 does in torch */
        EACH(k, i) acc = prod ? acc * (uint64_t)ldi(s, i) : acc + (uint64_t)ldi(s, i);
        store_int(s->out[0], ov->dtype, at0, (int64_t)acc);
      } else {
        double acc = prod;
        EACH(k, i) {
          double v = ld(s, i);
          if (p->op == XR_REDUCE_NANSUM && isnan(v)) continue;
          acc = prod ? acc * v : acc + v;
        }
        xr_store_element(s->out[0], ov->dtype, at0, acc);
      }
      break;
    }
    case XR_REDUCE_MEAN: {
      double acc = 0;
      EACH(k, i) acc += ld(s, i);
      xr_store_element(s->out[0], ov->dtype, at0, acc / (double)n); /* empty: 0/0, NaN */
      break;
    }
    case XR_REDUCE_MAX:
    case XR_REDUCE_MIN: {
      bool max = p->op == XR_REDUCE_MAX;
      int64_t best_k = 0;
      if (integral(p->in_dtype)) {
        int64_t best = 0;
        EACH(k, i) {
          int64_t v = load_int(s->in, p->in_dtype, i);
          if (k == 0 || (max ? v > best : v < best)) best = v, best_k = k;
        }
        if (ov->index >= 0) store_int(s->out[0], ov->dtype, at0, best);
      } else {
        double best = 0;
        EACH(k, i) {
          double v = xr_load_element(s->in, p->in_dtype, i);
          if (k == 0 || better(max, best, v)) best = v, best_k = k;
        }
        if (ov->index >= 0) xr_store_element(s->out[0], ov->dtype, at0, best);
      }
      if (oi->index >= 0) store_int(s->out[1], XR_DTYPE_I64, at1, best_k);
      break;
    }
    case XR_REDUCE_ALL:
    case XR_REDUCE_ANY:
    case XR_REDUCE_COUNT_NONZERO: {
      int64_t count = 0;
      EACH(k, i) count += integral(p->in_dtype) ? load_int(s->in, p->in_dtype, i) != 0
                                                : xr_load_element(s->in, p->in_dtype, i) != 0;
      int64_t r = p->op == XR_REDUCE_ALL ? count == n : p->op == XR_REDUCE_ANY ? count > 0 : count;
      store_int(s->out[0], ov->dtype, at0, r);
      break;
    }
    case XR_REDUCE_LOGSUMEXP: {
      double m = -INFINITY, sum = 0;
      EACH(k, i) {
        double v = ld(s, i);
        if (k == 0 || better(true, m, v)) m = v;
      }
      double shift = isinf(m) ? 0 : m; /* torch's masked_fill of infinite maxima */
      EACH(k, i) sum += exp(ld(s, i) - shift);
      xr_store_element(s->out[0], ov->dtype, at0, n ? log(sum) + shift : -INFINITY);
      break;
    }
    case XR_REDUCE_VAR:
    case XR_REDUCE_STD: {
      double sum = 0, m2 = 0;
      EACH(k, i) sum += ld(s, i);
      double mean = sum / (double)n;
      EACH(k, i) {
        double d = ld(s, i) - mean;
        m2 += d * d;
      }
      double divisor = (double)n - p->correction;
      double var = m2 / (divisor > 0 ? divisor : 0);
      xr_store_element(s->out[0], ov->dtype, at0, p->op == XR_REDUCE_STD ? sqrt(var) : var);
      if (oi->index >= 0) xr_store_element(s->out[1], oi->dtype, at1, mean);
      break;
    }
    case XR_REDUCE_NORM: {
      xr_reduce_norm_kind_t kind = xr_reduce_norm_kind(p->p);
      double acc = 0;
      EACH(k, i) {
        double a = fabs(ld(s, i));
        switch (kind) {
          case XR_NORM_INF:
          case XR_NORM_NEG_INF:
            if (k == 0 || better(kind == XR_NORM_INF, acc, a)) acc = a;
            break;
          case XR_NORM_0: acc += a != 0; break;
          case XR_NORM_1: acc += a; break;
          case XR_NORM_2: acc += a * a; break;
          case XR_NORM_P: acc += pow(a, p->p); break;
        }
      }
      if (kind == XR_NORM_2) acc = sqrt(acc);
      else if (kind == XR_NORM_P) acc = pow(acc, 1.0 / p->p);
      xr_store_element(s->out[0], ov->dtype, at0, acc);
      break;
    }
    default: break;
  }
#undef EACH
}

static void ref_scan(const ref_state_t *s, int64_t o) {
  const xr_reduce_problem_t *p = s->p;
  const xr_reduce_output_t *ov = &p->out[XR_REDUCE_VALUES];
  const int64_t base = s->in_offset + xr_reduce_outer_offset(p, p->in_outer, o);
  const int64_t at = s->out_offset[0] + xr_reduce_outer_offset(p, ov->outer_strides, o);
  const int64_t n = p->red_shape[0], is = p->in_red[0], os = ov->dim_stride;
  const bool prod = p->op == XR_REDUCE_CUMPROD;
  if (integral(p->cast)) {
    uint64_t acc = prod;
    for (int64_t j = 0; j < n; j++) {
      uint64_t v = (uint64_t)ldi(s, base + j * is);
      acc = prod ? acc * v : acc + v;
      store_int(s->out[0], ov->dtype, at + j * os, (int64_t)acc);
    }
  } else {
    double acc = prod;
    for (int64_t j = 0; j < n; j++) {
      double v = ld(s, base + j * is);
      acc = prod ? acc * v : acc + v;
      xr_store_element(s->out[0], ov->dtype, at + j * os, acc);
    }
  }
}

typedef struct sort_item {
  double f;
  int64_t i;
  int64_t pos;
} sort_item_t;

/* (value, position) order: NaN above every number and equal to itself; descending reverses
 * the values only, so ties keep their positions' order (a stable sort). */
static int sort_compare(const void *a, const void *b, void *context) {
  const sort_item_t *x = a, *y = b;
  const xr_reduce_problem_t *p = context;
  int c;
  if (integral(p->in_dtype)) {
    c = (x->i > y->i) - (x->i < y->i);
  } else {
    bool xn = isnan(x->f), yn = isnan(y->f);
    c = xn || yn ? (int)xn - (int)yn : (x->f > y->f) - (x->f < y->f);
  }
  if (p->descending) c = -c;
  return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

static void ref_sort_rows(const ref_state_t *s, int64_t begin, int64_t end) {
  const xr_reduce_problem_t *p = s->p;
  const int64_t n = p->red_shape[0], is = p->in_red[0];
  const xr_reduce_output_t *ov = &p->out[XR_REDUCE_VALUES], *oi = &p->out[XR_REDUCE_INDICES];
  sort_item_t *items = malloc(sizeof *items * (size_t)(n ? n : 1));
  if (!items) return; /* outputs stay poisoned; the check reports it */
  for (int64_t o = begin; o < end; o++) {
    const int64_t base = s->in_offset + xr_reduce_outer_offset(p, p->in_outer, o);
    for (int64_t j = 0; j < n; j++) {
      int64_t at = base + j * is;
      items[j].pos = j;
      if (integral(p->in_dtype)) items[j].i = load_int(s->in, p->in_dtype, at);
      else items[j].f = xr_load_element(s->in, p->in_dtype, at);
    }
    qsort_r(items, (size_t)n, sizeof *items, sort_compare, (void *)p);
    const int64_t a0 = s->out_offset[0] + xr_reduce_outer_offset(p, ov->outer_strides, o);
    const int64_t a1 = s->out_offset[1] + xr_reduce_outer_offset(p, oi->outer_strides, o);
    for (int64_t j = 0; j < p->k; j++) {
      if (ov->index >= 0) {
        if (integral(p->in_dtype)) store_int(s->out[0], ov->dtype, a0 + j * ov->dim_stride, items[j].i);
        else xr_store_element(s->out[0], ov->dtype, a0 + j * ov->dim_stride, items[j].f);
      }
      if (oi->index >= 0) store_int(s->out[1], XR_DTYPE_I64, a1 + j * oi->dim_stride, items[j].pos);
    }
  }
  free(items);
}

static void ref_rows(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  if (s->p->op == XR_REDUCE_SORT) {
    ref_sort_rows(s, (int64_t)begin, (int64_t)end);
    return;
  }
  for (size_t o = begin; o < end; o++) {
    if (xr_reduce_is_scan(s->p->op)) ref_scan(s, (int64_t)o);
    else ref_reduce(s, (int64_t)o);
  }
}

static xr_status_t ref_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_reduce_problem_t *p = plan->problem;
  if (p->unsupported[0]) return xr_error(XR_UNIMPLEMENTED, "%s", p->unsupported);
  return XR_OK;
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_reduce_problem_t *p = plan->problem;
  ref_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  void *in;
  xr_status_t st = xr_tensor_host(&tensors[p->self], &in);
  s->in = in;
  s->in_offset = tensors[p->self].offset;
  for (int k = 0; st == XR_OK && k < XR_REDUCE_OUTPUTS; k++) {
    if (p->out[k].index < 0) continue;
    st = xr_tensor_host(&tensors[p->out[k].index], &s->out[k]);
    s->out_offset[k] = tensors[p->out[k].index].offset;
  }
  if (st != XR_OK) {
    free(s);
    return st;
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  ref_state_t *s = state;
  if (s->p->outer_numel == 0) return XR_OK;
  return xr_hal_stream_enqueue_parallel(stream, (size_t)s->p->outer_numel, 1, ref_rows, s);
}

static const xr_kernel_impl_t ref_reduce_impl = {
    .name = "ref.reduce",
    .driver = "cpu",
    .reference = true,
    .supports = ref_supports,
    .prepare = ref_prepare,
    .enqueue = ref_enqueue,
    .release = free,
};

/* ------------------------------------------------------------------------------------------ */
/* initializer: sort and topk inputs without ties                                              */

/* Value j of a pool of distinct values of dtype d (pool size *out_size): floats sweep sign and
 * binade first, so that a window of consecutive j spans magnitudes 2^-8 .. 2^8 (f16: 2^-14 ..
 * 2^15) of both signs; no subnormals, which some GPUs flush. Integers count up from -size/2. */
static double pool_value(xr_dtype_t d, int64_t j, int64_t n, int64_t *out_size) {
  int64_t binades = 16, mantissas;
  double lowest = -8;
  switch (d) {
    case XR_DTYPE_BF16: mantissas = 128; break;
    case XR_DTYPE_F16: mantissas = 1024, binades = 30, lowest = -14; break;
    case XR_DTYPE_F32:
    case XR_DTYPE_F64: mantissas = 1 << 19; break;
    case XR_DTYPE_I8: *out_size = 256; return (double)(j - 128);
    case XR_DTYPE_U8: *out_size = 256; return (double)j;
    case XR_DTYPE_I16: *out_size = 65536; return (double)(j - 32768);
    default: *out_size = n; return (double)(j - n / 2);
  }
  *out_size = 2 * binades * mantissas;
  int64_t m = j >> 1;
  double v = ldexp(1.0 + (double)(m / binades) / (double)mantissas, (int)(lowest + (double)(m % binades)));
  return j & 1 ? -v : v;
}

static xr_status_t init_sort(xr_init_context_t *c) {
  const xr_reduce_problem_t *p = c->plan->problem;
  if (c->has_data[p->self] || p->in_dtype == XR_DTYPE_BOOL || p->unsupported[0]) return XR_OK;
  const int64_t n = p->red_shape[0];
  if (n < 2 || p->outer_numel == 0) return XR_OK;
  int64_t *perm = malloc(sizeof *perm * (size_t)n);
  if (!perm) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory initialising self", c->op->name);
  const int64_t offset = c->plan->inputs[p->self]->storage_offset;
  uint64_t seed = c->seed;
  int64_t pool = 0;
  pool_value(p->in_dtype, 0, n, &pool);
  for (int64_t o = 0; o < p->outer_numel; o++) {
    /* A window of the pool at a random start, in a random order along the dim. */
    int64_t start = (int64_t)(xr_rng_next(&seed) % (uint64_t)pool);
    xr_init_shuffle(perm, n, n, &seed);
    int64_t base = offset + xr_reduce_outer_offset(p, p->in_outer, o);
    for (int64_t j = 0; j < n; j++) {
      int64_t size;
      double v = pool_value(p->in_dtype, (start + perm[j]) % pool, n, &size);
      xr_store_element(c->host[p->self], p->in_dtype, base + j * p->in_red[0], v);
    }
  }
  free(perm);
  char text[128];
  if (n <= pool) snprintf(text, sizeof text, "self distinct along the sorted dim (no ties)");
  else snprintf(text, sizeof text, "self cycling through %lld distinct values along the sorted dim", (long long)pool);
  xr_init_describe(c, text);
  return XR_OK;
}

static const struct xr_op_initializer reduce_initializers[] = {
    {"aten::sort", init_sort},
    {"aten::argsort", init_sort},
    {"aten::topk", init_sort},
    {NULL, NULL},
};

static const xr_kernel_impl_t *const reduce_impls[] = {
    &xr_cpu_reduce,
    &xr_opencl_reduce,
    &xr_gpu_reduce,
    &ref_reduce_impl,
    NULL,
};

/* max.other and min.other are no reductions but torch.maximum and torch.minimum, under the
 * reduction's name: the op renamed, which the registry then plans in the pointwise family. */
static xr_status_t complete(const xr_op_t *op, xr_arena_t *scratch, xr_op_t **out_op) {
  bool max = !strcmp(op->name, "aten::max");
  const xr_value_t *other = arg(op, 1, "other");
  if ((!max && strcmp(op->name, "aten::min")) || !other || other->kind != XR_VALUE_TENSOR)
    return XR_OK;
  xr_op_t *elementwise = xr_arena_alloc(scratch, sizeof *elementwise);
  if (!elementwise) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  *elementwise = *op;
  elementwise->name = xr_arena_strdup(scratch, max ? "aten::maximum" : "aten::minimum");
  if (!elementwise->name) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  *out_op = elementwise;
  return XR_OK;
}

const xr_op_family_t xr_family_reduce = {
    .name = "reduce",
    .op_names = reduce_ops,
    .complete = complete,
    .analyze = analyze,
    .free_problem = free,
    .impls = reduce_impls,
    .initializers = reduce_initializers,
};
