/* The norm family: layer norm (aten::native_layer_norm, aten::layer_norm) and RMS norm as vLLM
 * (_C::rms_norm, _C::fused_add_rms_norm), sgl-kernel (sgl_kernel::rmsnorm,
 * sgl_kernel::fused_add_rmsnorm) and aiter (aiter::rmsnorm, aiter::add_rmsnorm,
 * aiter::rmsnorm2d_fwd_with_add_ck, aiter::rms_norm, which returns its result) name it, plus the row-problem helpers softmax shares.
 *
 * Semantics, per row of n elements (the normalised dims):
 *   layer norm:  mean = sum(x)/n, var = sum((x-mean)^2)/n (biased), rstd = 1/sqrt(var+eps),
 *                out = (x-mean)*rstd*weight + bias (weight, bias optional). native_layer_norm
 *                also returns mean and rstd, shaped input.shape[:axis] + [1]*len(normalized_shape),
 *                in fp32 for fp16/bf16/fp32 inputs (what the CUDA kernel writes), fp64 for fp64.
 *   rms norm:    out = x / sqrt(sum(x^2)/n + eps) * weight.
 *   fused add:   residual = x + residual, rounded to the tensor dtype; x = rms_norm(residual)
 *                computed from that rounded residual (in place on both).
 *   aiter's out-of-place add (add_rmsnorm(out, input, residual_in, residual_out, weight,
 *                epsilon[, gemma_norm]), rmsnorm2d_fwd_with_add_ck(..., epsilon[,
 *                use_model_sensitive_rmsnorm])): residual_out = input + residual_in rounded to
 *                the tensor dtype, out = rms_norm of the unrounded fp32 sum (what aiter's HIP
 *                kernel and CK's rmsnorm2d pipeline keep in registers). aiter::rmsnorm(out,
 *                input, weight, epsilon[, gemma_norm]) is rms norm. gemma_norm (weight + 1) and
 *                use_model_sensitive_rmsnorm != 0 (T5-style rounding) are not implemented: such
 *                ops are unsupported with that reason.
 * The reference widens to double and rounds once per output element. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/norm.h"

static const char *const norm_ops[] = {
    "aten::native_layer_norm", "aten::layer_norm",  "_C::rms_norm", "_C::fused_add_rms_norm",
    "sgl_kernel::rmsnorm",     "sgl_kernel::fused_add_rmsnorm", "aiter::rmsnorm",
    "aiter::add_rmsnorm",      "aiter::rmsnorm2d_fwd_with_add_ck", "aiter::rms_norm", NULL,
};

/* ------------------------------------------------------------------------------------------ */
/* row problems                                                                               */

void xr_rows_set_operand(xr_rows_problem_t *p, int k, int index, xr_dtype_t dtype,
                         const int64_t *outer_strides, const int64_t *inner_strides) {
  xr_rows_operand_t *o = &p->operand[k];
  o->index = index;
  o->dtype = dtype;
  for (int d = 0; d < p->outer_rank; d++) o->outer_strides[d] = outer_strides ? outer_strides[d] : 0;
  for (int d = 0; d < p->inner_rank; d++) o->inner_strides[d] = inner_strides ? inner_strides[d] : 0;
}

/* Simplifies one dim list (outer or inner) in place. `which` selects the operands' strides. */
static int simplify_dims(xr_rows_problem_t *p, int rank, int64_t *shape, bool inner) {
  int out = 0;
  for (int d = 0; d < rank; d++) {
    if (shape[d] == 1) continue; /* a size-1 dim never moves the offset */
    bool merge = out > 0;
    for (int k = 0; k < XR_ROWS_OPERANDS && merge; k++) {
      const xr_rows_operand_t *o = &p->operand[k];
      if (o->index < 0) continue;
      const int64_t *st = inner ? o->inner_strides : o->outer_strides;
      merge = st[out - 1] == st[d] * shape[d];
    }
    for (int k = 0; k < XR_ROWS_OPERANDS; k++) {
      int64_t *st = inner ? p->operand[k].inner_strides : p->operand[k].outer_strides;
      if (merge) st[out - 1] = st[d];
      else st[out] = st[d];
    }
    if (merge) {
      shape[out - 1] *= shape[d];
    } else {
      shape[out++] = shape[d];
    }
  }
  return out;
}

xr_status_t xr_rows_check_fast(const xr_op_plan_t *plan, const char *backend) {
  const xr_rows_problem_t *p = plan->problem;
  if (p->unsupported)
    return xr_error(XR_UNIMPLEMENTED, "%s kernels: %s: %s", backend, plan->op->name,
                    p->unsupported);
  for (int k = 0; k < XR_ROWS_OPERANDS; k++) {
    if (p->operand[k].index < 0) continue;
    xr_dtype_t d = p->operand[k].dtype;
    bool stat = k == XR_ROWS_MEAN || k == XR_ROWS_RSTD;
    if (stat ? d != XR_DTYPE_F32 : !xr_norm_fast_dtype(d))
      return xr_error(XR_UNIMPLEMENTED, "%s kernels: %s: %s tensors are not supported (f32, f16 "
                      "and bf16 are)", backend, plan->op->name, xr_dtype_name(d));
  }
  if (p->inner_rank > 1)
    return xr_error(XR_UNIMPLEMENTED, "%s kernels: %s: the normalised dims do not form one "
                    "strided run in every tensor", backend, plan->op->name);
  return XR_OK;
}

xr_status_t xr_rotary_check_fast(const xr_op_plan_t *plan, const char *backend) {
  const xr_rotary_problem_t *p = plan->problem;
  if (!xr_norm_fast_dtype(p->q_dtype) || !xr_norm_fast_dtype(p->cache_dtype))
    return xr_error(XR_UNIMPLEMENTED, "%s kernels: %s: %s query or cache is not supported (f32, "
                    "f16 and bf16 are)", backend, plan->op->name,
                    xr_dtype_name(xr_norm_fast_dtype(p->q_dtype) ? p->cache_dtype : p->q_dtype));
  return XR_OK;
}

void xr_rows_simplify(xr_rows_problem_t *p) {
  p->rows = 1;
  for (int d = 0; d < p->outer_rank; d++) p->rows *= p->outer_shape[d];
  p->n = 1;
  for (int d = 0; d < p->inner_rank; d++) p->n *= p->inner_shape[d];
  if (p->rows == 0 || p->n == 0) return; /* nothing to walk */
  p->outer_rank = simplify_dims(p, p->outer_rank, p->outer_shape, false);
  p->inner_rank = simplify_dims(p, p->inner_rank, p->inner_shape, true);
}

void xr_rows_costs(const xr_rows_problem_t *p, double *out_flops, double *out_bytes) {
  double elems = (double)p->rows * (double)p->n, bytes = 0;
  const xr_rows_operand_t *o = p->operand;
  bytes += elems * (double)xr_dtype_size(o[XR_ROWS_X].dtype);
  bytes += elems * (double)xr_dtype_size(o[XR_ROWS_OUT].dtype);
  if (o[XR_ROWS_RESIDUAL_IN].index >= 0) /* read, and the sum written (in place or not) */
    bytes += elems * (double)(xr_dtype_size(o[XR_ROWS_RESIDUAL_IN].dtype) +
                              xr_dtype_size(o[XR_ROWS_RESIDUAL_OUT].dtype));
  for (int k = XR_ROWS_WEIGHT; k <= XR_ROWS_BIAS; k++)
    if (o[k].index >= 0) bytes += (double)p->n * (double)xr_dtype_size(o[k].dtype);
  for (int k = XR_ROWS_MEAN; k <= XR_ROWS_RSTD; k++)
    if (o[k].index >= 0) bytes += (double)p->rows * (double)xr_dtype_size(o[k].dtype);
  /* Per element: softmax max, subtract, exp, sum, scale; layer norm two sums, a squared
   * deviation, then subtract, two multiplies and an add; RMS a square-and-add and two
   * multiplies (plus the residual add). */
  static const double per_element[] = {5, 8, 4, 5};
  *out_flops = per_element[p->op] * elems;
  *out_bytes = bytes;
}

xr_status_t xr_rows_ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  xr_rows_ref_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = plan->problem;
  for (int k = 0; k < XR_ROWS_OPERANDS; k++) {
    int index = s->p->operand[k].index;
    if (index < 0) continue;
    xr_status_t st = xr_tensor_host(&tensors[index], &s->base[k]);
    if (st != XR_OK) {
      free(s);
      return st;
    }
    s->offset[k] = tensors[index].offset;
  }
  *out_state = s;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* analysis                                                                                   */

static bool is_float(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16 || d == XR_DTYPE_F64;
}

static bool same_shape(const xr_tensor_spec_t *a, const xr_tensor_spec_t *b) {
  if (a->rank != b->rank) return false;
  for (int d = 0; d < a->rank; d++)
    if (a->shape[d] != b->shape[d]) return false;
  return true;
}

/* The first of `names` present (by name), else position `position` when unnamed. */
static xr_status_t tensor_named(const xr_op_plan_t *plan, int position, const char *const *names,
                                bool required, int *out_index, const char **out_name) {
  for (const char *const *n = names; *n; n++) {
    if (xr_op_find_arg(plan->op, *n)) {
      *out_name = *n;
      return xr_arg_tensor(plan, position, *n, required, out_index);
    }
  }
  *out_name = names[0];
  return xr_arg_tensor(plan, position, names[0], required, out_index);
}

static xr_status_t check_weight(const xr_op_plan_t *plan, int index, const char *name, int rank,
                                const int64_t *shape) {
  if (index < 0) return XR_OK;
  const xr_tensor_spec_t *w = plan->inputs[index];
  if (!is_float(w->dtype))
    return xr_plan_error(plan, "%s: expected a float tensor, got %s", name, xr_dtype_name(w->dtype));
  bool ok = w->rank == rank;
  for (int d = 0; ok && d < rank; d++) ok = w->shape[d] == shape[d];
  if (!ok) return xr_plan_error(plan, "%s: shape does not match the normalised shape", name);
  return XR_OK;
}

static xr_status_t analyze_layer_norm(xr_op_plan_t *plan, xr_rows_problem_t *p, bool native) {
  const xr_op_t *op = plan->op;
  int x = -1, w = -1, b = -1, count = 0;
  int64_t normalized[XR_MAX_RANK];
  p->eps = 1e-5;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "input", true, &x)) ||
      (st = xr_arg_int_list(op, 1, "normalized_shape", true, normalized, XR_MAX_RANK, &count)) ||
      (st = xr_arg_tensor(plan, 2, "weight", false, &w)) ||
      (st = xr_arg_tensor(plan, 3, "bias", false, &b)) ||
      (st = xr_arg_double(op, 4, "eps", native, &p->eps)))
    return st;
  if (x < 0) return xr_plan_error(plan, "input: tensor argument is not bound");
  const xr_tensor_spec_t *in = plan->inputs[x];
  if (!is_float(in->dtype))
    return xr_plan_error(plan, "input: expected a float tensor, got %s", xr_dtype_name(in->dtype));
  if (count < 1 || count > in->rank)
    return xr_plan_error(plan, "normalized_shape: %d dims for a %d-D input", count, in->rank);
  int axis = in->rank - count;
  for (int d = 0; d < count; d++)
    if (normalized[d] != in->shape[axis + d])
      return xr_plan_error(plan, "normalized_shape[%d] is %lld, input dimension %d is %lld", d,
                           (long long)normalized[d], axis + d, (long long)in->shape[axis + d]);
  if ((st = check_weight(plan, w, "weight", count, normalized)) ||
      (st = check_weight(plan, b, "bias", count, normalized)))
    return st;

  p->op = XR_ROWS_LAYER_NORM;
  p->outer_rank = axis;
  p->inner_rank = count;
  memcpy(p->outer_shape, in->shape, sizeof(int64_t) * (size_t)axis);
  memcpy(p->inner_shape, in->shape + axis, sizeof(int64_t) * (size_t)count);
  int64_t out_strides[XR_MAX_RANK], stat_strides[XR_MAX_RANK];
  xr_contiguous_strides(in->rank, in->shape, out_strides);
  xr_contiguous_strides(axis, in->shape, stat_strides);
  int out = (int)plan->input_count;
  xr_rows_set_operand(p, XR_ROWS_X, x, in->dtype, in->strides, in->strides + axis);
  xr_rows_set_operand(p, XR_ROWS_OUT, out, in->dtype, out_strides, out_strides + axis);
  if (w >= 0)
    xr_rows_set_operand(p, XR_ROWS_WEIGHT, w, plan->inputs[w]->dtype, NULL, plan->inputs[w]->strides);
  if (b >= 0)
    xr_rows_set_operand(p, XR_ROWS_BIAS, b, plan->inputs[b]->dtype, NULL, plan->inputs[b]->strides);
  xr_desc_set(&plan->returns[0], in->dtype, in->rank, in->shape);
  plan->return_count = 1;
  if (native) {
    xr_dtype_t stat = in->dtype == XR_DTYPE_F64 ? XR_DTYPE_F64 : XR_DTYPE_F32;
    int64_t stat_shape[XR_MAX_RANK];
    for (int d = 0; d < in->rank; d++) stat_shape[d] = d < axis ? in->shape[d] : 1;
    xr_desc_set(&plan->returns[1], stat, in->rank, stat_shape);
    xr_desc_set(&plan->returns[2], stat, in->rank, stat_shape);
    plan->return_count = 3;
    xr_rows_set_operand(p, XR_ROWS_MEAN, out + 1, stat, stat_strides, NULL);
    xr_rows_set_operand(p, XR_ROWS_RSTD, out + 2, stat, stat_strides, NULL);
  }
  return XR_OK;
}

/* A tensor `name` of the input's shape and dtype, set as operand `slot`. */
static xr_status_t like_input(xr_op_plan_t *plan, xr_rows_problem_t *p, int slot, int index,
                              const char *name, const char *x_name) {
  const xr_tensor_spec_t *in = plan->inputs[p->operand[XR_ROWS_X].index], *o = plan->inputs[index];
  if (!same_shape(o, in) || o->dtype != in->dtype)
    return xr_plan_error(plan, "%s: expected the shape and dtype of %s (%s)", name, x_name,
                         xr_dtype_name(in->dtype));
  int axis = in->rank - 1;
  xr_rows_set_operand(p, slot, index, o->dtype, o->strides, o->strides + axis);
  return XR_OK;
}

/* The input (x) and weight of an RMS norm over the last dim: sets the rows, X and WEIGHT. */
static xr_status_t rms_rows(xr_op_plan_t *plan, xr_rows_problem_t *p, int x, const char *x_name,
                            int w) {
  const xr_tensor_spec_t *in = plan->inputs[x];
  if (!is_float(in->dtype))
    return xr_plan_error(plan, "%s: expected a float tensor, got %s", x_name,
                         xr_dtype_name(in->dtype));
  if (in->rank < 1) return xr_plan_error(plan, "%s: expected at least 1 dimension", x_name);
  int axis = in->rank - 1;
  xr_status_t st = check_weight(plan, w, "weight", 1, &in->shape[axis]);
  if (st != XR_OK) return st;
  p->outer_rank = axis;
  p->inner_rank = 1;
  memcpy(p->outer_shape, in->shape, sizeof(int64_t) * (size_t)axis);
  p->inner_shape[0] = in->shape[axis];
  xr_rows_set_operand(p, XR_ROWS_X, x, in->dtype, in->strides, in->strides + axis);
  xr_rows_set_operand(p, XR_ROWS_WEIGHT, w, plan->inputs[w]->dtype, NULL, plan->inputs[w]->strides);
  return XR_OK;
}

/* aiter's gemma_norm (bool) or use_model_sensitive_rmsnorm (int) at `position`: set, the op is
 * unsupported. */
static xr_status_t aiter_flag(xr_op_plan_t *plan, xr_rows_problem_t *p, int position,
                              const char *name) {
  bool set = false;
  xr_status_t st = xr_arg_bool(plan->op, position, name, false, &set);
  if (st == XR_OK && set && !strcmp(name, "gemma_norm"))
    p->unsupported = "gemma_norm=True (weight + 1) is not implemented";
  else if (st == XR_OK && set)
    p->unsupported = "use_model_sensitive_rmsnorm != 0 (T5-style rounding) is not implemented";
  return st;
}

/* _C::rms_norm(result, input, weight, epsilon), sgl_kernel::rmsnorm(output, input, weight, eps,
 * ...), aiter::rmsnorm(out, input, weight, epsilon[, gemma_norm]) and the in-place
 * _C::fused_add_rms_norm(input, residual, weight, epsilon) / sgl_kernel::fused_add_rmsnorm. */
static xr_status_t analyze_rms_norm(xr_op_plan_t *plan, xr_rows_problem_t *p, bool fused,
                                    bool sgl, bool aiter) {
  const xr_op_t *op = plan->op;
  int x = -1, out = -1, res = -1, w = -1;
  const char *x_name = "input", *out_name = NULL, *eps_name = sgl ? "eps" : "epsilon";
  static const char *const out_names[] = {"result", "out", "output", NULL};
  static const char *const in_names[] = {"input", NULL};
  xr_status_t st;
  int pos = 0;
  if (!fused) {
    if ((st = tensor_named(plan, pos++, out_names, true, &out, &out_name))) return st;
  }
  if ((st = tensor_named(plan, pos++, in_names, true, &x, &x_name))) return st;
  if (fused && (st = xr_arg_tensor(plan, pos++, "residual", true, &res))) return st;
  if ((st = xr_arg_tensor(plan, pos++, "weight", true, &w)) ||
      (st = xr_arg_double(op, pos++, eps_name, true, &p->eps)) ||
      (aiter && (st = aiter_flag(plan, p, pos, "gemma_norm"))))
    return st;
  if (x < 0 || w < 0 || (fused ? res < 0 : out < 0))
    return xr_plan_error(plan, "tensor arguments are not bound");
  if ((st = rms_rows(plan, p, x, x_name, w))) return st;
  p->op = fused ? XR_ROWS_ADD_RMS_NORM : XR_ROWS_RMS_NORM;
  if (fused) { /* in place: out is x, the sum goes back into residual */
    if ((st = like_input(plan, p, XR_ROWS_RESIDUAL_IN, res, "residual", x_name))) return st;
    p->operand[XR_ROWS_OUT] = p->operand[XR_ROWS_X];
    p->operand[XR_ROWS_RESIDUAL_OUT] = p->operand[XR_ROWS_RESIDUAL_IN];
    xr_plan_mark_written(plan, x);
    xr_plan_mark_written(plan, res);
  } else {
    if ((st = like_input(plan, p, XR_ROWS_OUT, out, out_name, x_name))) return st;
    xr_plan_mark_written(plan, out);
  }
  plan->return_count = 0;
  return XR_OK;
}

/* aiter::rms_norm(input, weight, epsilon[, use_model_sensitive_rmsnorm]) -> out: the result is
 * a new contiguous tensor. */
static xr_status_t analyze_rms_norm_returned(xr_op_plan_t *plan, xr_rows_problem_t *p) {
  int x = -1, w = -1;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "input", true, &x)) ||
      (st = xr_arg_tensor(plan, 1, "weight", true, &w)) ||
      (st = xr_arg_double(plan->op, 2, "epsilon", true, &p->eps)) ||
      (st = aiter_flag(plan, p, 3, "use_model_sensitive_rmsnorm")) ||
      (st = rms_rows(plan, p, x, "input", w)))
    return st;
  p->op = XR_ROWS_RMS_NORM;
  const xr_tensor_spec_t *in = plan->inputs[x];
  int64_t strides[XR_MAX_RANK];
  xr_contiguous_strides(in->rank, in->shape, strides);
  xr_rows_set_operand(p, XR_ROWS_OUT, (int)plan->input_count, in->dtype, strides,
                      strides + in->rank - 1);
  xr_desc_set(&plan->returns[0], in->dtype, in->rank, in->shape);
  plan->return_count = 1;
  return XR_OK;
}

/* aiter::add_rmsnorm(out, input, residual_in, residual_out, weight, epsilon[, gemma_norm]) and
 * aiter::rmsnorm2d_fwd_with_add_ck(out, input, residual_in, residual_out, weight, epsilon[,
 * use_model_sensitive_rmsnorm]): out of place, normalising the fp32 sum. */
static xr_status_t analyze_add_rms_norm(xr_op_plan_t *plan, xr_rows_problem_t *p,
                                        const char *flag) {
  int out = -1, x = -1, rin = -1, rout = -1, w = -1;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "out", true, &out)) ||
      (st = xr_arg_tensor(plan, 1, "input", true, &x)) ||
      (st = xr_arg_tensor(plan, 2, "residual_in", true, &rin)) ||
      (st = xr_arg_tensor(plan, 3, "residual_out", true, &rout)) ||
      (st = xr_arg_tensor(plan, 4, "weight", true, &w)) ||
      (st = xr_arg_double(plan->op, 5, "epsilon", true, &p->eps)) ||
      (st = aiter_flag(plan, p, 6, flag)))
    return st;
  if (out < 0 || x < 0 || rin < 0 || rout < 0 || w < 0)
    return xr_plan_error(plan, "tensor arguments are not bound");
  if ((st = rms_rows(plan, p, x, "input", w)) ||
      (st = like_input(plan, p, XR_ROWS_OUT, out, "out", "input")) ||
      (st = like_input(plan, p, XR_ROWS_RESIDUAL_IN, rin, "residual_in", "input")) ||
      (st = like_input(plan, p, XR_ROWS_RESIDUAL_OUT, rout, "residual_out", "input")))
    return st;
  p->op = XR_ROWS_ADD_RMS_NORM;
  p->fp32_sum = true;
  xr_plan_mark_written(plan, out);
  xr_plan_mark_written(plan, rout);
  plan->return_count = 0;
  return XR_OK;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  const char *name = plan->op->name;
  xr_rows_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", name);
  plan->problem = p;
  for (int k = 0; k < XR_ROWS_OPERANDS; k++) p->operand[k].index = -1;
  xr_status_t st;
  if (!strcmp(name, "aten::native_layer_norm")) st = analyze_layer_norm(plan, p, true);
  else if (!strcmp(name, "aten::layer_norm")) st = analyze_layer_norm(plan, p, false);
  else if (!strcmp(name, "_C::rms_norm")) st = analyze_rms_norm(plan, p, false, false, false);
  else if (!strcmp(name, "_C::fused_add_rms_norm"))
    st = analyze_rms_norm(plan, p, true, false, false);
  else if (!strcmp(name, "sgl_kernel::rmsnorm")) st = analyze_rms_norm(plan, p, false, true, false);
  else if (!strcmp(name, "sgl_kernel::fused_add_rmsnorm"))
    st = analyze_rms_norm(plan, p, true, true, false);
  else if (!strcmp(name, "aiter::rmsnorm")) st = analyze_rms_norm(plan, p, false, false, true);
  else if (!strcmp(name, "aiter::rms_norm")) st = analyze_rms_norm_returned(plan, p);
  else if (!strcmp(name, "aiter::add_rmsnorm")) st = analyze_add_rms_norm(plan, p, "gemma_norm");
  else st = analyze_add_rms_norm(plan, p, "use_model_sensitive_rmsnorm");
  if (st != XR_OK) return st;
  if (!(p->eps >= 0)) return xr_plan_error(plan, "eps: expected a non-negative number, got %g", p->eps);
  xr_rows_simplify(p);
  xr_rows_costs(p, &plan->flops, &plan->bytes);
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* CPU reference                                                                              */

/* Element i of row r of what the op normalises: x, or for the fused add the sum (as stored, or
 * exact). */
static double ref_source(const xr_rows_ref_t *s, int64_t r, int64_t i) {
  const xr_rows_problem_t *p = s->p;
  if (p->op != XR_ROWS_ADD_RMS_NORM) return xr_rows_ref_load(s, XR_ROWS_X, r, i);
  if (!p->fp32_sum) return xr_rows_ref_load(s, XR_ROWS_RESIDUAL_OUT, r, i);
  return xr_rows_ref_load(s, XR_ROWS_X, r, i) + xr_rows_ref_load(s, XR_ROWS_RESIDUAL_IN, r, i);
}

static void ref_rows(void *ctx, size_t begin, size_t end) {
  const xr_rows_ref_t *s = ctx;
  const xr_rows_problem_t *p = s->p;
  const int64_t n = p->n;
  for (int64_t r = (int64_t)begin; r < (int64_t)end; r++) {
    if (p->op == XR_ROWS_ADD_RMS_NORM) {
      /* The sum is stored first (rounded once to the residual's dtype); vLLM normalises it as
       * stored, aiter the exact sum. */
      for (int64_t i = 0; i < n; i++)
        xr_rows_ref_store(s, XR_ROWS_RESIDUAL_OUT, r, i,
                          xr_rows_ref_load(s, XR_ROWS_X, r, i) +
                              xr_rows_ref_load(s, XR_ROWS_RESIDUAL_IN, r, i));
    }
    double mean = 0, sum_sq = 0;
    if (p->op == XR_ROWS_LAYER_NORM) {
      for (int64_t i = 0; i < n; i++) mean += ref_source(s, r, i);
      mean /= (double)n;
    }
    for (int64_t i = 0; i < n; i++) {
      double d = ref_source(s, r, i) - mean;
      sum_sq += d * d;
    }
    double rstd = 1.0 / sqrt(sum_sq / (double)n + p->eps);
    for (int64_t i = 0; i < n; i++) {
      double v = (ref_source(s, r, i) - mean) * rstd;
      if (p->operand[XR_ROWS_WEIGHT].index >= 0) v *= xr_rows_ref_load(s, XR_ROWS_WEIGHT, r, i);
      if (p->operand[XR_ROWS_BIAS].index >= 0) v += xr_rows_ref_load(s, XR_ROWS_BIAS, r, i);
      xr_rows_ref_store(s, XR_ROWS_OUT, r, i, v);
    }
    if (p->operand[XR_ROWS_MEAN].index >= 0) xr_rows_ref_store(s, XR_ROWS_MEAN, r, 0, mean);
    if (p->operand[XR_ROWS_RSTD].index >= 0) xr_rows_ref_store(s, XR_ROWS_RSTD, r, 0, rstd);
  }
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  xr_rows_ref_t *s = state;
  if (s->p->rows == 0 || s->p->n == 0) return XR_OK;
  return xr_hal_stream_enqueue_parallel(stream, (size_t)s->p->rows, 1, ref_rows, s);
}

static xr_status_t ref_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_rows_problem_t *p = plan->problem;
  if (p->unsupported)
    return xr_error(XR_UNIMPLEMENTED, "ref.norm: %s: %s", plan->op->name, p->unsupported);
  return XR_OK;
}

static const xr_kernel_impl_t ref_norm = {
    .name = "ref.norm",
    .driver = "cpu",
    .reference = true,
    .supports = ref_supports,
    .prepare = xr_rows_ref_prepare,
    .enqueue = ref_enqueue,
    .release = free,
};

static const xr_kernel_impl_t *const norm_impls[] = {
    &xr_cpu_norm_impl,
    &xr_opencl_norm_impl,
    &xr_gpu_norm_impl,
    &ref_norm,
    NULL,
};

const xr_op_family_t xr_family_norm = {
    .name = "norm",
    .op_names = norm_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = norm_impls,
};

