/* The elementwise family: binary arithmetic (aten::add/sub/mul/div and their in-place forms,
 * Tensor and Scalar overloads, alpha, rounding_mode, out=), activations (aten::gelu, silu), gated
 * activations (vLLM _C::, sgl_kernel:: and aiter:: silu_and_mul, gelu_and_mul,
 * gelu_tanh_and_mul), copies and conversions (aten::copy_, to, _to_copy; fp8 saturating), fills
 * (aten::fill_, zero_), their _foreach_ list forms, the pointwise table (kernels/pointwise.c),
 * creation and movement (kernels/movement.c), and through kernels/indexing.c aten::cat,
 * index_select and embedding.
 *
 * Broadcasting follows numpy/torch (dims aligned on the right; size 1 stretches). Result dtypes
 * follow torch's type promotion: dimensioned tensors outrank 0-d tensors, which outrank Scalars,
 * within the same category (bool < integer < float), so float[..] * double[] is float. Float
 * results are computed in float (f16, bf16, fp8, f32) or double (f64) and rounded once; integer
 * results in int64 with wrap-around. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/elementwise.h"
#include "kernels/family.h"

static const char *const ew_ops[] = {
    "aten::add",  "aten::add_", "aten::sub", "aten::sub_", "aten::mul", "aten::mul_",
    "aten::div",  "aten::div_", "aten::gelu", "aten::silu",
    "_C::silu_and_mul", "_C::gelu_and_mul", "_C::gelu_tanh_and_mul",
    "sgl_kernel::silu_and_mul", "sgl_kernel::gelu_and_mul", "sgl_kernel::gelu_tanh_and_mul",
    "aiter::silu_and_mul",
    "aten::copy_", "aten::to", "aten::_to_copy", "aten::fill_", "aten::zero_",
    "aten::cat", "aten::index_select", "aten::embedding",
    "aten::_foreach_add", "aten::_foreach_add_", "aten::_foreach_sub", "aten::_foreach_sub_",
    "aten::_foreach_mul", "aten::_foreach_mul_", "aten::_foreach_div", "aten::_foreach_div_",
    "aten::_foreach_copy_", "aten::_foreach_zero_",
    XR_EW_MOVEMENT_OPS,
#define XR_PW(ID, NAME, ...) \
    "aten::" NAME, "aten::" NAME "_", "aten::_foreach_" NAME, "aten::_foreach_" NAME "_",
#include "kernels/pointwise_ops.h"
#undef XR_PW
    NULL,
};

static int64_t shape_numel(int rank, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= shape[d];
  return n;
}

/* ------------------------------------------------------------------------------------------ */
/* analysis per op class                                                                       */

static bool name_is(const char *name, const char *suffix) {
  const char *p = strstr(name, "::");
  return p && !strcmp(p + 2, suffix);
}

static xr_status_t analyze_binary(xr_op_plan_t *plan, xr_ew_step_t *s) {
  const xr_op_t *op = plan->op;
  const char *base = strstr(op->name, "::") + 2;
  bool inplace = base[3] == '_';
  xr_status_t st;
  int self = -1, out = -1;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self)) ||
      (st = xr_arg_tensor(plan, -1, "out", false, &out)))
    return st;
  const xr_value_t *other = xr_op_arg(op, 1, "other");
  if (!other || other->kind == XR_VALUE_NULL)
    return xr_error(XR_INVALID_ARGUMENT, "%s: argument 'other' (position 1) is missing", op->name);
  bool add = !strncmp(base, "add", 3), sub = !strncmp(base, "sub", 3);
  bool mul = !strncmp(base, "mul", 3);
  s->op = add ? XR_EW_ADD : sub ? XR_EW_SUB : mul ? XR_EW_MUL : XR_EW_DIV;
  s->alpha = 1.0;
  if ((add || sub) && (st = xr_arg_double(op, 2, "alpha", false, &s->alpha))) return st;
  if (s->op == XR_EW_DIV) {
    const char *mode = NULL;
    if ((st = xr_arg_string(op, 2, "rounding_mode", false, &mode))) return st;
    if (mode && !strcmp(mode, "trunc")) s->op = XR_EW_DIV_TRUNC;
    else if (mode && !strcmp(mode, "floor")) s->op = XR_EW_DIV_FLOOR;
    else if (mode)
      return xr_plan_error(plan, "rounding_mode: expected None, 'trunc' or 'floor', got '%s'", mode);
  }

  const xr_tensor_spec_t *ts = plan->inputs[self];
  s->rank = 0;
  if ((st = xr_ew_broadcast_shape(plan, "self", ts, &s->rank, s->shape))) return st;
  xr_dtype_t dim_type = XR_DTYPE_INVALID, zero_type = XR_DTYPE_INVALID, scalar_type = XR_DTYPE_INVALID;
  *(ts->rank ? &dim_type : &zero_type) = ts->dtype;
  int other_index = -1;
  if (other->kind == XR_VALUE_TENSOR) {
    if ((st = xr_arg_tensor(plan, 1, "other", true, &other_index))) return st;
    const xr_tensor_spec_t *to = plan->inputs[other_index];
    if ((st = xr_ew_broadcast_shape(plan, "other", to, &s->rank, s->shape))) return st;
    xr_dtype_t *slot = to->rank ? &dim_type : &zero_type;
    *slot = *slot == XR_DTYPE_INVALID ? to->dtype : xr_ew_promote(*slot, to->dtype);
  } else if (xr_ew_is_number(other)) {
    s->b_scalar = true;
    s->scalar = xr_ew_number(other);
    scalar_type = xr_ew_number_dtype(other);
  } else {
    return xr_error(XR_INVALID_ARGUMENT, "%s: argument 'other': expected a tensor or a number",
                    op->name);
  }
  xr_dtype_t result = xr_ew_combine(dim_type, xr_ew_combine(zero_type, scalar_type));
  if (result == XR_DTYPE_INVALID)
    return xr_plan_error(plan, "self (%s) and other do not promote to a common dtype "
                               "(torch refuses to mix fp8 with other float types)",
                         xr_dtype_name(ts->dtype));
  if (s->op == XR_EW_DIV && !xr_dtype_is_floating(result)) result = XR_DTYPE_F32;
  int written = inplace ? self : out;
  if (written >= 0) {
    if ((st = xr_ew_check_written(plan, inplace ? "self" : "out", written, s))) return st;
    result = plan->inputs[written]->dtype;
  }
  xr_ew_set_operand(plan, self, s->rank, s->shape, &s->a);
  if (other_index >= 0) xr_ew_set_operand(plan, other_index, s->rank, s->shape, &s->b);
  else s->b.index = -1;
  xr_ew_set_output(plan, written, result, s);
  return XR_OK;
}

static xr_status_t analyze_activation(xr_op_plan_t *plan, xr_ew_step_t *s) {
  xr_status_t st;
  int self = -1;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self))) return st;
  const xr_tensor_spec_t *t = plan->inputs[self];
  if (!xr_dtype_is_floating(t->dtype))
    return xr_plan_error(plan, "self: expected a float tensor, got %s", xr_dtype_name(t->dtype));
  if (name_is(plan->op->name, "gelu")) {
    const char *approximate = "none";
    if ((st = xr_arg_string(plan->op, 1, "approximate", false, &approximate))) return st;
    if (!strcmp(approximate, "none")) s->op = XR_EW_GELU;
    else if (!strcmp(approximate, "tanh")) s->op = XR_EW_GELU_TANH;
    else return xr_plan_error(plan, "approximate: expected 'none' or 'tanh', got '%s'", approximate);
  } else {
    s->op = XR_EW_SILU;
  }
  s->rank = t->rank;
  memcpy(s->shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
  xr_ew_set_operand(plan, self, s->rank, s->shape, &s->a);
  s->b.index = -1;
  xr_ew_set_output(plan, -1, t->dtype, s);
  return XR_OK;
}

/* out[..., i] = act(input[..., i]) * input[..., d + i], d = input.shape[-1] / 2. */
static xr_status_t analyze_gated(xr_op_plan_t *plan, xr_ew_step_t *s) {
  const char *name = plan->op->name;
  s->op = name_is(name, "silu_and_mul") ? XR_EW_SILU_AND_MUL
          : name_is(name, "gelu_and_mul") ? XR_EW_GELU_AND_MUL
                                          : XR_EW_GELU_TANH_AND_MUL;
  xr_status_t st;
  int out = -1, in = -1;
  const char *out_name = xr_op_find_arg(plan->op, "result") ? "result" : "out";
  if ((st = xr_arg_tensor(plan, 0, out_name, true, &out)) ||
      (st = xr_arg_tensor(plan, 1, "input", true, &in)))
    return st;
  const xr_tensor_spec_t *to = plan->inputs[out], *ti = plan->inputs[in];
  if (ti->rank < 1 || ti->shape[ti->rank - 1] % 2)
    return xr_plan_error(plan, "input: the last dimension must be even (gate and up halves)");
  if (!xr_dtype_is_floating(ti->dtype) || !xr_dtype_is_floating(to->dtype))
    return xr_plan_error(plan, "%s and input must be float tensors", out_name);
  int64_t d = ti->shape[ti->rank - 1] / 2;
  bool ok = to->rank == ti->rank;
  for (int k = 0; ok && k < ti->rank; k++)
    ok = to->shape[k] == (k == ti->rank - 1 ? d : ti->shape[k]);
  if (!ok)
    return xr_plan_error(plan, "%s: expected input's shape with the last dimension halved (%lld)",
                         out_name, (long long)d);
  s->rank = to->rank;
  memcpy(s->shape, to->shape, sizeof(int64_t) * (size_t)to->rank);
  xr_ew_set_operand(plan, out, s->rank, s->shape, &s->out);
  s->a = (xr_ew_operand_t){.index = in, .dtype = ti->dtype};
  for (int k = 0; k < s->rank; k++) s->a.strides[k] = ti->strides[k];
  s->b = s->a;
  s->b.offset = d * ti->strides[ti->rank - 1];
  return XR_OK;
}

static xr_status_t analyze_copy(xr_op_plan_t *plan, xr_ew_step_t *s) {
  const xr_op_t *op = plan->op;
  xr_status_t st;
  int self = -1;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self))) return st;
  const xr_tensor_spec_t *ts = plan->inputs[self];
  s->op = XR_EW_COPY;
  s->b.index = -1;
  if (name_is(op->name, "copy_")) {
    int src = -1;
    if ((st = xr_arg_tensor(plan, 1, "src", true, &src))) return st;
    const xr_tensor_spec_t *tsrc = plan->inputs[src];
    s->rank = ts->rank;
    memcpy(s->shape, ts->shape, sizeof(int64_t) * (size_t)ts->rank);
    bool fits = tsrc->rank <= ts->rank;
    for (int d = 0; fits && d < tsrc->rank; d++) {
      int64_t want = ts->shape[ts->rank - tsrc->rank + d];
      fits = tsrc->shape[d] == want || tsrc->shape[d] == 1;
    }
    if (!fits) return xr_plan_error(plan, "src: does not broadcast to self's shape");
    xr_ew_set_operand(plan, src, s->rank, s->shape, &s->a);
    xr_ew_set_operand(plan, self, s->rank, s->shape, &s->out);
    return XR_OK;
  }
  /* aten::to / _to_copy: `dtype` by name; unnamed, the ScalarType follows self (to.dtype,
   * _to_copy) or a device (to.device); to.other passes a tensor whose dtype is the target. */
  const xr_value_t *v = xr_op_arg(op, -1, "dtype");
  if (!v) {
    v = xr_op_arg(op, 1, NULL);
    if (v && v->kind == XR_VALUE_STRING && xr_dtype_parse(v->as.s) == XR_DTYPE_INVALID)
      v = xr_op_arg(op, 2, NULL); /* to.device(self, device, dtype, ...) */
    if (v && v->kind != XR_VALUE_INT && v->kind != XR_VALUE_STRING && v->kind != XR_VALUE_TENSOR)
      v = NULL;
  }
  if (!v) v = xr_op_arg(op, 1, "other");
  xr_dtype_t dtype;
  if ((st = xr_ew_read_dtype(plan, v, ts->dtype, &dtype))) return st;
  s->rank = ts->rank;
  memcpy(s->shape, ts->shape, sizeof(int64_t) * (size_t)ts->rank);
  xr_ew_set_operand(plan, self, s->rank, s->shape, &s->a);
  xr_ew_set_output(plan, -1, dtype, s);
  return XR_OK;
}

static xr_status_t analyze_fill(xr_op_plan_t *plan, xr_ew_step_t *s) {
  xr_status_t st;
  int self = -1;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self))) return st;
  const xr_tensor_spec_t *ts = plan->inputs[self];
  s->rank = ts->rank;
  memcpy(s->shape, ts->shape, sizeof(int64_t) * (size_t)ts->rank);
  xr_ew_set_operand(plan, self, s->rank, s->shape, &s->out);
  s->a.index = s->b.index = -1;
  s->op = XR_EW_FILL;
  s->b_scalar = true;
  if (name_is(plan->op->name, "zero_")) return XR_OK;
  const xr_value_t *v = xr_op_arg(plan->op, 1, "value");
  if (v && v->kind == XR_VALUE_TENSOR) { /* fill_.Tensor: a 0-d tensor broadcast */
    int value = -1;
    if ((st = xr_arg_tensor(plan, 1, "value", true, &value))) return st;
    if (plan->inputs[value]->rank != 0)
      return xr_plan_error(plan, "value: expected a 0-d tensor, got %d-D", plan->inputs[value]->rank);
    s->op = XR_EW_COPY;
    s->b_scalar = false;
    xr_ew_set_operand(plan, value, s->rank, s->shape, &s->a);
    return XR_OK;
  }
  return xr_arg_double(plan->op, 1, "value", true, &s->scalar);
}

double xr_ew_sequence_value(const xr_ew_step_t *s, int64_t i) {
  if (s->op == XR_EW_ARANGE) return s->a_value + (double)i * s->alpha;
  /* torch's linspace: from the start for the first half, from the end for the rest */
  int64_t n = s->numel;
  double step = n > 1 ? (s->c_value - s->a_value) / (double)(n - 1) : 0;
  return i < n / 2 ? s->a_value + step * (double)i : s->c_value - step * (double)(n - 1 - i);
}

void xr_ew_step_cost(const xr_ew_step_t *s, double *bytes, double *flops) {
  double n = (double)s->numel;
  double out_size = (double)xr_dtype_size(s->out.dtype);
  double b = n * out_size;
  const xr_ew_operand_t *ops[3] = {&s->a, &s->b, &s->c};
  bool gated = s->op >= XR_EW_SILU_AND_MUL && s->op <= XR_EW_GELU_TANH_AND_MUL;
  for (int k = 0; k < 3; k++) {
    const xr_ew_operand_t *o = ops[k];
    if (o->index < 0) continue;
    if (s->op == XR_EW_GATHER && k == 0) {
      b += n * (double)xr_dtype_size(o->dtype); /* each gathered element is read once */
    } else if (gated) {
      b += n * (double)xr_dtype_size(o->dtype); /* each half of the input once */
    } else {
      /* A broadcast operand is read once per distinct element. */
      double distinct = 1;
      for (int d = 0; d < s->rank; d++)
        if (o->strides[d] != 0) distinct *= (double)s->shape[d];
      b += distinct * (double)xr_dtype_size(o->dtype);
    }
  }
  static const double per_element[XR_EW_PW_FIRST] = {
      [XR_EW_ADD] = 1, [XR_EW_SUB] = 1, [XR_EW_MUL] = 1, [XR_EW_DIV] = 1,
      [XR_EW_DIV_TRUNC] = 2, [XR_EW_DIV_FLOOR] = 2,
      [XR_EW_GELU] = 5, [XR_EW_GELU_TANH] = 9, [XR_EW_SILU] = 4,
      [XR_EW_SILU_AND_MUL] = 5, [XR_EW_GELU_AND_MUL] = 6, [XR_EW_GELU_TANH_AND_MUL] = 10,
      [XR_EW_ARANGE] = 2, [XR_EW_LINSPACE] = 2,
  };
  double f = xr_ew_is_table_op(s->op) ? xr_ew_pointwise_flops(s->op) : per_element[s->op];
  if (xr_ew_is_table_op(s->op) && !xr_dtype_is_floating(s->compute)) f = 0;
  if ((s->op == XR_EW_ADD || s->op == XR_EW_SUB) && s->alpha != 1.0) f += 1;
  *bytes += b;
  *flops += f * n;
}

/* One step of every op but the indexing ones and the _foreach_ lists. */
static xr_status_t analyze_step(xr_op_plan_t *plan, xr_ew_step_t *s) {
  const char *name = plan->op->name;
  if (name_is(name, "add") || name_is(name, "add_") || name_is(name, "sub") ||
      name_is(name, "sub_") || name_is(name, "mul") || name_is(name, "mul_") ||
      name_is(name, "div") || name_is(name, "div_"))
    return analyze_binary(plan, s);
  if (name_is(name, "gelu") || name_is(name, "silu")) return analyze_activation(plan, s);
  if (strstr(name, "_and_mul")) return analyze_gated(plan, s);
  if (name_is(name, "fill_") || name_is(name, "zero_")) return analyze_fill(plan, s);
  if (xr_ew_is_pointwise_op(name)) return xr_ew_analyze_pointwise(plan, s);
  return analyze_copy(plan, s);
}

/* Names the _foreach_ schemas give arguments that their per-item op names otherwise (add.Scalar's
 * `scalar` is add_'s `other`, clamp_min's `min`; ScalarList's `scalars` is addcmul's `value`;
 * lerp's `tensors1` and `weights` are `end` and `weight`): positional, they are read by
 * position instead. */
static bool foreach_own_name(const char *name) {
  static const char *const names[] = {"scalar", "scalars", "tensors1", "weights", NULL};
  for (size_t i = 0; name && names[i]; i++)
    if (!strcmp(name, names[i])) return true;
  return false;
}

/* aten::_foreach_NAME_(Tensor(a!)[] self, ...): one step per list item, each planned as
 * aten::NAME_ on the items at that position (a list of Scalars gives one each; a single Tensor
 * or Scalar is shared). The out-of-place forms return lists, which the op model cannot hold. */
static xr_status_t analyze_foreach(xr_op_plan_t *plan, xr_ew_problem_t **out_problem) {
  const xr_op_t *op = plan->op;
  const char *base = strstr(op->name, "_foreach_") + 9;
  size_t n = strlen(base);
  if (n == 0 || base[n - 1] != '_')
    return xr_error(XR_UNIMPLEMENTED, "%s: the out-of-place _foreach_ forms return a list of "
                    "tensors, which a replay cannot hold; only the in-place forms replay", op->name);
  const xr_value_t *self = NULL;
  xr_status_t list_st = xr_arg_tensor_list(op, 0, "self", &self);
  if (list_st != XR_OK) return list_st;
  size_t items = self->as.list.count;
  size_t arg_total = op->arg_count + op->kwarg_count;
  xr_ew_problem_t *p = xr_ew_problem_alloc(items ? items : 1);
  xr_arg_t *args = calloc(arg_total ? arg_total : 1, sizeof *args);
  if (!p || !args) {
    free(p), free(args);
    return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", op->name);
  }
  plan->problem = p; /* freed by the registry on error */
  *out_problem = p;
  p->step_count = items;
  char name[64];
  snprintf(name, sizeof name, "aten::%s", base);
  xr_op_t item_op = *op;
  item_op.name = name;
  item_op.args = args;
  item_op.kwargs = args + op->arg_count;
  xr_op_plan_t item_plan = *plan;
  item_plan.op = &item_op;
  xr_status_t st = XR_OK;
  for (size_t i = 0; i < items && st == XR_OK; i++) {
    for (size_t k = 0; k < arg_total; k++) {
      const xr_arg_t *a = k < op->arg_count ? &op->args[k] : &op->kwargs[k - op->arg_count];
      args[k] = *a;
      if (k > 0 && k < op->arg_count && foreach_own_name(a->name)) args[k].name = NULL;
      if (a->value.kind != XR_VALUE_LIST) continue;
      if (a->value.as.list.count != items) {
        st = xr_plan_error(plan, "%s: a list of %zu items, self has %zu",
                           a->name ? a->name : "argument", a->value.as.list.count, items);
        break;
      }
      args[k].value = a->value.as.list.items[i];
    }
    if (st == XR_OK) st = analyze_step(&item_plan, &p->steps[i]);
    if (st == XR_OK && p->steps[i].out.index >= (int)plan->input_count)
      st = xr_plan_error(plan, "item %zu: expected an in-place form", i);
    if (st != XR_OK && strncmp(xr_last_error(), op->name, strlen(op->name)))
      st = xr_error_prefix(st, "%s: self[%zu]: ", op->name, i);
  }
  free(args);
  return st;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  const char *name = plan->op->name;
  xr_ew_problem_t *p = NULL;
  xr_status_t st;
  if (xr_ew_is_indexing_op(name)) {
    if ((st = xr_ew_analyze_indexing(plan, &p)) != XR_OK) return st;
  } else if (xr_ew_is_movement_op(name)) {
    if ((st = xr_ew_analyze_movement(plan, &p)) != XR_OK) return st;
  } else if (strstr(name, "::_foreach_")) {
    if ((st = analyze_foreach(plan, &p)) != XR_OK) return st;
  } else {
    p = xr_ew_problem_alloc(1);
    if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", name);
    plan->problem = p; /* freed by the registry on error */
    p->step_count = 1;
    if ((st = analyze_step(plan, &p->steps[0])) != XR_OK) return st;
  }
  plan->flops = plan->bytes = 0;
  for (size_t i = 0; i < p->step_count; i++) {
    xr_ew_step_t *s = &p->steps[i];
    s->numel = shape_numel(s->rank, s->shape);
    xr_ew_step_cost(s, &plan->bytes, &plan->flops);
  }
  return XR_OK;
}

void xr_ew_coalesce(const xr_ew_step_t *in, xr_ew_step_t *out) {
  *out = *in;
  const xr_ew_operand_t *src[4] = {&in->out, &in->a, &in->b, &in->c};
  xr_ew_operand_t *dst[4] = {&out->out, &out->a, &out->b, &out->c};
  int r = 0;
  for (int d = 0; d < in->rank; d++) {
    if (in->shape[d] == 1) continue;
    /* Merge dim d into the previous kept dim when, for every operand, stepping the previous
     * dim equals stepping d across its whole extent. */
    bool merge = r > 0;
    for (int k = 0; merge && k < 4; k++)
      merge = src[k]->strides[d] * in->shape[d] == dst[k]->strides[r - 1];
    if (merge) {
      out->shape[r - 1] *= in->shape[d];
      for (int k = 0; k < 4; k++) dst[k]->strides[r - 1] = src[k]->strides[d];
    } else {
      out->shape[r] = in->shape[d];
      for (int k = 0; k < 4; k++) dst[k]->strides[r] = src[k]->strides[d];
      r++;
    }
  }
  out->rank = r;
  if (in->numel == 0) { /* keep a zero extent visible */
    out->rank = 1;
    out->shape[0] = 0;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* CPU reference: one element at a time, in double (float results) or int64 (integers).        */

/* One step bound to storage: what the parallel workers read. */
typedef struct ref_step {
  const xr_ew_step_t *s;
  void *base[4];     /* out, a, b, c storage */
  int64_t first[4];  /* their first elements */
} ref_step_t;

typedef struct ref_state {
  size_t count;
  ref_step_t steps[];
} ref_state_t;

static double ref_gelu(double x) { return 0.5 * x * (1.0 + erf(x * M_SQRT1_2)); }
static double ref_gelu_tanh(double x) {
  return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
static double ref_silu(double x) { return x / (1.0 + exp(-x)); }

static double ref_float_op(const xr_ew_step_t *s, double a, double b) {
  switch (s->op) {
    case XR_EW_ADD: return a + s->alpha * b;
    case XR_EW_SUB: return a - s->alpha * b;
    case XR_EW_MUL: return a * b;
    case XR_EW_DIV: return a / b;
    case XR_EW_DIV_TRUNC: return trunc(a / b);
    case XR_EW_DIV_FLOOR: return floor(a / b);
    case XR_EW_COPY: return a;
    case XR_EW_FILL: return b;
    case XR_EW_GELU: return ref_gelu(a);
    case XR_EW_GELU_TANH: return ref_gelu_tanh(a);
    case XR_EW_SILU: return ref_silu(a);
    case XR_EW_SILU_AND_MUL: return ref_silu(a) * b;
    case XR_EW_GELU_AND_MUL: return ref_gelu(a) * b;
    case XR_EW_GELU_TANH_AND_MUL: return ref_gelu_tanh(a) * b;
    default: return NAN;
  }
}

/* Integers wrap around in two's complement, as torch's integer kernels do. */
static void store_int(void *base, xr_dtype_t dtype, int64_t i, int64_t v) {
  uint64_t u = (uint64_t)v;
  switch (dtype) {
    case XR_DTYPE_BOOL: ((uint8_t *)base)[i] = v != 0; break;
    case XR_DTYPE_I8:
    case XR_DTYPE_U8: ((uint8_t *)base)[i] = (uint8_t)u; break;
    case XR_DTYPE_I16:
    case XR_DTYPE_U16: ((uint16_t *)base)[i] = (uint16_t)u; break;
    case XR_DTYPE_I32:
    case XR_DTYPE_U32: ((uint32_t *)base)[i] = (uint32_t)u; break;
    default: ((uint64_t *)base)[i] = u; break;
  }
}

#define XR_PW_INT_HELPER static inline
#define XR_PW_I int64_t
#define XR_PW_U uint64_t
#include "kernels/pointwise_ops.h"
#undef XR_PW_INT_HELPER
#undef XR_PW_I
#undef XR_PW_U

static int64_t ref_int_op(const xr_ew_step_t *s, int64_t a, int64_t b) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b, alpha = (uint64_t)xr_ew_int_value(s->alpha);
  switch (s->op) {
    case XR_EW_ADD: return (int64_t)(ua + alpha * ub);
    case XR_EW_SUB: return (int64_t)(ua - alpha * ub);
    case XR_EW_MUL: return (int64_t)(ua * ub);
    case XR_EW_DIV_TRUNC: return pw_idiv(a, b, 0);
    case XR_EW_DIV_FLOOR: return pw_idiv(a, b, 1);
    case XR_EW_FILL: return b;
    default: return a; /* COPY */
  }
}

/* An operand's element as a double (a Scalar's value, 0 when absent). */
static double ref_load(const ref_step_t *rs, const xr_ew_operand_t *o, int k, bool scalar,
                       double value, int64_t at) {
  if (scalar) return value;
  return o->index >= 0 ? xr_load_element(rs->base[k], o->dtype, at) : 0;
}

/* The same as an int64, exact for 64-bit integers (xr_load_element goes through double). */
static int64_t ref_load_int(const ref_step_t *rs, const xr_ew_operand_t *o, int k, bool scalar,
                            double value, int64_t at) {
  if (scalar || o->index < 0) return xr_ew_int_value(scalar ? value : 0);
  const void *p = rs->base[k];
  switch (o->dtype) {
    case XR_DTYPE_I64: return ((const int64_t *)p)[at];
    case XR_DTYPE_U64: return (int64_t)((const uint64_t *)p)[at];
    case XR_DTYPE_I32: return ((const int32_t *)p)[at];
    case XR_DTYPE_U32: return ((const uint32_t *)p)[at];
    default: return xr_ew_int_value(xr_load_element(p, o->dtype, at));
  }
}

static void ref_table_element(const ref_step_t *rs, int64_t io, int64_t ia, int64_t ib,
                              int64_t ic) {
  const xr_ew_step_t *s = rs->s;
  if (xr_dtype_is_floating(s->compute)) {
    double a = ref_load(rs, &s->a, 1, s->a_scalar, s->a_value, ia);
    double b = ref_load(rs, &s->b, 2, s->b_scalar, s->scalar, ib);
    double c = ref_load(rs, &s->c, 3, s->c_scalar, s->c_value, ic);
    double v = xr_ew_pointwise_float(s, a, b, c);
    if (xr_dtype_is_floating(s->out.dtype) || s->out.dtype == XR_DTYPE_BOOL)
      xr_store_element(rs->base[0], s->out.dtype, io, v);
    else
      store_int(rs->base[0], s->out.dtype, io, xr_ew_int_value(v));
    return;
  }
  int64_t a = ref_load_int(rs, &s->a, 1, s->a_scalar, s->a_value, ia);
  int64_t b = ref_load_int(rs, &s->b, 2, s->b_scalar, s->scalar, ib);
  int64_t c = ref_load_int(rs, &s->c, 3, s->c_scalar, s->c_value, ic);
  int64_t v = xr_ew_pointwise_int(s, a, b, c);
  if (xr_dtype_is_floating(s->out.dtype)) xr_store_element(rs->base[0], s->out.dtype, io, (double)v);
  else store_int(rs->base[0], s->out.dtype, io, v);
}

static void ref_elements(void *ctx, size_t begin, size_t end) {
  const ref_step_t *rs = ctx;
  const xr_ew_step_t *s = rs->s;
  void *const *base = rs->base;
  bool float_out = xr_dtype_is_floating(s->out.dtype);
  size_t esize = xr_dtype_size(s->out.dtype);
  for (size_t e = begin; e < end; e++) {
    int64_t io = rs->first[0], ia = rs->first[1], ib = rs->first[2], ic = rs->first[3];
    int64_t rest = (int64_t)e;
    for (int d = s->rank - 1; d >= 0; d--) {
      int64_t x = rest % s->shape[d];
      rest /= s->shape[d];
      io += x * s->out.strides[d];
      ia += x * s->a.strides[d];
      ib += x * s->b.strides[d];
      ic += x * s->c.strides[d];
    }
    if (xr_ew_is_table_op(s->op)) {
      ref_table_element(rs, io, ia, ib, ic);
      continue;
    }
    if (s->op == XR_EW_ARANGE || s->op == XR_EW_LINSPACE) {
      if (float_out || s->op == XR_EW_LINSPACE || s->out.dtype == XR_DTYPE_BOOL)
        xr_store_element(base[0], s->out.dtype, io, xr_ew_sequence_value(s, (int64_t)e));
      else /* integer arange: exact in int64 */
        store_int(base[0], s->out.dtype, io,
                  (int64_t)((uint64_t)xr_ew_int_value(s->a_value) +
                            (uint64_t)e * (uint64_t)xr_ew_int_value(s->alpha)));
      continue;
    }
    if (s->op == XR_EW_GATHER) {
      int64_t idx = xr_ew_int_value(xr_load_element(base[2], s->b.dtype, ib));
      idx = idx < 0 ? 0 : idx >= s->gather_size ? s->gather_size - 1 : idx;
      ia += idx * s->gather_stride;
    }
    if (s->op == XR_EW_TRIL || s->op == XR_EW_TRIU) { /* same dtype; zero bits are 0 in each */
      char *dst = (char *)base[0] + io * (int64_t)esize;
      if (xr_ew_tri_keeps(s, (int64_t)e))
        memcpy(dst, (const char *)base[1] + ia * (int64_t)esize, esize);
      else
        memset(dst, 0, esize);
      continue;
    }
    if ((s->op == XR_EW_COPY || s->op == XR_EW_GATHER) && s->a.dtype == s->out.dtype) {
      memcpy((char *)base[0] + io * (int64_t)esize, (const char *)base[1] + ia * (int64_t)esize, esize);
      continue;
    }
    double a = s->a.index >= 0 ? xr_load_element(base[1], s->a.dtype, ia) : 0;
    double b = s->b_scalar ? s->scalar : s->b.index >= 0 ? xr_load_element(base[2], s->b.dtype, ib) : 0;
    bool bool_value = s->out.dtype == XR_DTYPE_BOOL && (s->op == XR_EW_COPY || s->op == XR_EW_FILL);
    if (float_out || bool_value) xr_store_element(base[0], s->out.dtype, io, ref_float_op(s, a, b));
    else if (s->op == XR_EW_COPY || s->op == XR_EW_FILL || s->op == XR_EW_ADD ||
             s->op == XR_EW_SUB || s->op == XR_EW_MUL || s->op == XR_EW_DIV_TRUNC ||
             s->op == XR_EW_DIV_FLOOR)
      store_int(base[0], s->out.dtype, io, ref_int_op(s, xr_ew_int_value(a), xr_ew_int_value(b)));
    else
      store_int(base[0], s->out.dtype, io, xr_ew_int_value(ref_float_op(s, a, b)));
  }
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_ew_problem_t *p = plan->problem;
  ref_state_t *s = calloc(1, sizeof *s + p->step_count * sizeof(ref_step_t));
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->count = p->step_count;
  for (size_t i = 0; i < p->step_count; i++) {
    ref_step_t *rs = &s->steps[i];
    rs->s = &p->steps[i];
    const xr_ew_operand_t *ops[4] = {&rs->s->out, &rs->s->a, &rs->s->b, &rs->s->c};
    for (int k = 0; k < 4; k++) {
      if (ops[k]->index < 0) continue;
      const xr_tensor_t *t = &tensors[ops[k]->index];
      xr_status_t st = xr_tensor_host(t, &rs->base[k]);
      if (st != XR_OK) {
        free(s);
        return st;
      }
      rs->first[k] = t->offset + ops[k]->offset;
    }
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  ref_state_t *s = state;
  for (size_t i = 0; i < s->count; i++) {
    if (s->steps[i].s->numel == 0) continue;
    xr_status_t st = xr_hal_stream_enqueue_parallel(stream, (size_t)s->steps[i].s->numel, 4096,
                                                    ref_elements, &s->steps[i]);
    if (st != XR_OK) return st;
  }
  return XR_OK;
}

static const xr_kernel_impl_t ref_elementwise = {
    .name = "ref.elementwise",
    .driver = "cpu",
    .reference = true,
    .prepare = ref_prepare,
    .enqueue = ref_enqueue,
    .release = free,
};

static const xr_kernel_impl_t *const ew_impls[] = {
    &xr_cpu_elementwise,
    &xr_opencl_elementwise,
    &xr_gpu_elementwise,
    &ref_elementwise,
    NULL,
};

const xr_op_family_t xr_family_elementwise = {
    .name = "elementwise",
    .op_names = ew_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = ew_impls,
    .initializers = xr_indexing_initializers,
};

