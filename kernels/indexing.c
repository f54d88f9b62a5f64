/* Analysis of the indexing ops of the elementwise family:
 *   aten::cat(Tensor[] tensors, int dim=0)       one copy step per input into its slice,
 *                                                 converting to the promoted dtype
 *   aten::index_select(self, dim, index)          a gather along dim with a 1-D (or 0-d) index
 *   aten::embedding(weight, indices, ...)         a gather of rows: weight[indices] (padding_idx,
 *                                                 scale_grad_by_freq and sparse only matter for
 *                                                 the backward pass)
 * Indices outside [0, size) make torch raise; here they are clamped into range so that a replay
 * with arbitrary index contents reads valid memory (every implementation clamps alike). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/elementwise.h"
#include "kernels/family.h"
#include "kernels/initializer.h"

bool xr_ew_is_indexing_op(const char *name) {
  return !strcmp(name, "aten::cat") || !strcmp(name, "aten::index_select") ||
         !strcmp(name, "aten::embedding");
}

static bool integer_index(xr_dtype_t d) { return d == XR_DTYPE_I32 || d == XR_DTYPE_I64; }

/* out = self.shape[:dim] + index_shape + self.shape[dim+1:]; element (p, q, s) reads
 * self[p, index[q], s]. */
static xr_status_t build_gather(xr_op_plan_t *plan, int self, int dim, int index, int q_rank,
                                const int64_t *q_shape, const int64_t *q_strides,
                                xr_ew_step_t *s) {
  const xr_tensor_spec_t *ts = plan->inputs[self];
  int rank = ts->rank - 1 + q_rank;
  if (rank > XR_MAX_RANK) return xr_plan_error(plan, "the result would have %d dimensions", rank);
  s->op = XR_EW_GATHER;
  s->rank = rank;
  s->a = (xr_ew_operand_t){.index = self, .dtype = ts->dtype};
  s->b = (xr_ew_operand_t){.index = index, .dtype = plan->inputs[index]->dtype};
  int r = 0;
  for (int d = 0; d < ts->rank; d++) {
    if (d == dim) {
      for (int q = 0; q < q_rank; q++, r++) {
        s->shape[r] = q_shape[q];
        s->b.strides[r] = q_strides[q];
      }
      continue;
    }
    s->shape[r] = ts->shape[d];
    s->a.strides[r++] = ts->strides[d];
  }
  s->gather_stride = ts->strides[dim];
  s->gather_size = ts->shape[dim];
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= s->shape[d];
  if (n > 0 && s->gather_size == 0)
    return xr_plan_error(plan, "cannot select from an empty dimension %d", dim);
  s->out = (xr_ew_operand_t){.index = (int)plan->input_count, .dtype = ts->dtype};
  xr_contiguous_strides(rank, s->shape, s->out.strides);
  plan->return_count = 1;
  xr_desc_set(&plan->returns[0], ts->dtype, rank, s->shape);
  return XR_OK;
}

static xr_status_t analyze_select(xr_op_plan_t *plan, xr_ew_step_t *s) {
  const xr_op_t *op = plan->op;
  bool embedding = !strcmp(op->name, "aten::embedding");
  int self = -1, index = -1, dim = 0;
  int64_t dim_arg = 0;
  xr_status_t st;
  const char *self_name = embedding ? "weight" : "self", *index_name = embedding ? "indices" : "index";
  if ((st = xr_arg_tensor(plan, 0, self_name, true, &self)) ||
      (st = xr_arg_tensor(plan, embedding ? 1 : 2, index_name, true, &index)) ||
      (!embedding && (st = xr_arg_int(op, 1, "dim", true, &dim_arg))))
    return st;
  const xr_tensor_spec_t *ts = plan->inputs[self], *ti = plan->inputs[index];
  if (!integer_index(ti->dtype))
    return xr_plan_error(plan, "%s: expected int32 or int64 indices, got %s", index_name,
                         xr_dtype_name(ti->dtype));
  if (embedding) {
    if (ts->rank != 2) return xr_plan_error(plan, "weight: expected a 2-D tensor, got %d-D", ts->rank);
    return build_gather(plan, self, 0, index, ti->rank, ti->shape, ti->strides, s);
  }
  if (ti->rank > 1) return xr_plan_error(plan, "index: expected a 1-D tensor, got %d-D", ti->rank);
  if ((st = xr_plan_wrap_dim(plan, dim_arg, ts->rank, &dim))) return st;
  if (ts->rank == 0) return xr_plan_error(plan, "self: index_select on a 0-d tensor");
  int64_t q_shape = ti->rank ? ti->shape[0] : 1, q_stride = ti->rank ? ti->strides[0] : 0;
  return build_gather(plan, self, dim, index, 1, &q_shape, &q_stride, s);
}

static xr_status_t analyze_cat(xr_op_plan_t *plan, xr_ew_problem_t **out_problem) {
  const xr_op_t *op = plan->op;
  const xr_value_t *list = NULL;
  int64_t dim_arg = 0;
  xr_status_t st;
  if ((st = xr_arg_tensor_list(op, 0, "tensors", &list)) ||
      (st = xr_arg_int(op, 1, "dim", false, &dim_arg)))
    return st;
  /* torch skips 1-D empty tensors (legacy); the rest must agree outside dim. The result's
   * dtype is torch's promotion over every tensor, the skipped ones included (cat of an int32
   * and a float16 is float16; each piece is converted as it is copied). */
  const xr_tensor_spec_t *first = NULL;
  size_t parts = 0;
  xr_dtype_t dtype = XR_DTYPE_INVALID;
  for (size_t i = 0; i < list->as.list.count; i++) {
    const xr_value_t *v = &list->as.list.items[i];
    if (v->kind != XR_VALUE_TENSOR)
      return xr_plan_error(plan, "tensors[%zu]: expected a tensor", i);
    const xr_tensor_spec_t *t = v->as.tensor;
    xr_dtype_t promoted = xr_ew_promote(dtype, t->dtype);
    if (promoted == XR_DTYPE_INVALID)
      return xr_plan_error(plan, "tensors[%zu] (%s) does not promote with the tensors before it "
                                 "(%s): torch refuses to mix fp8 with other float types",
                           i, xr_dtype_name(t->dtype), xr_dtype_name(dtype));
    dtype = promoted;
    if (t->rank == 1 && t->shape[0] == 0) continue;
    if (!first) first = t;
    parts++;
  }
  if (!first) return xr_plan_error(plan, "tensors: expected at least one non-empty tensor");
  int dim = 0;
  if ((st = xr_plan_wrap_dim(plan, dim_arg, first->rank, &dim))) return st;
  if (first->rank == 0) return xr_plan_error(plan, "tensors: zero-dimensional tensors cannot be "
                                                   "concatenated");
  int64_t shape[XR_MAX_RANK];
  memcpy(shape, first->shape, sizeof(int64_t) * (size_t)first->rank);
  shape[dim] = 0;
  for (size_t i = 0; i < list->as.list.count; i++) {
    const xr_tensor_spec_t *t = list->as.list.items[i].as.tensor;
    if (t->rank == 1 && t->shape[0] == 0) continue;
    if (t->rank != first->rank)
      return xr_plan_error(plan, "tensors[%zu] has %d dimensions, the first %d", i, t->rank,
                           first->rank);
    for (int d = 0; d < t->rank; d++)
      if (d != dim && t->shape[d] != first->shape[d])
        return xr_plan_error(plan, "tensors[%zu]: dimension %d is %lld, expected %lld", i, d,
                             (long long)t->shape[d], (long long)first->shape[d]);
    shape[dim] += t->shape[dim];
  }
  xr_ew_problem_t *p = xr_ew_problem_alloc(parts);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", op->name);
  plan->problem = p;
  *out_problem = p;
  p->step_count = parts;
  int rank = first->rank;
  int64_t out_strides[XR_MAX_RANK];
  xr_contiguous_strides(rank, shape, out_strides);
  plan->return_count = 1;
  xr_desc_set(&plan->returns[0], dtype, rank, shape);
  int64_t at = 0;
  size_t k = 0;
  for (size_t i = 0; i < list->as.list.count; i++) {
    const xr_tensor_spec_t *t = list->as.list.items[i].as.tensor;
    if (t->rank == 1 && t->shape[0] == 0) continue;
    xr_ew_step_t *s = &p->steps[k++];
    s->op = XR_EW_COPY;
    s->rank = rank;
    memcpy(s->shape, t->shape, sizeof(int64_t) * (size_t)rank);
    s->a = (xr_ew_operand_t){.index = xr_plan_input_index(plan, t), .dtype = t->dtype};
    memcpy(s->a.strides, t->strides, sizeof(int64_t) * (size_t)rank);
    s->out = (xr_ew_operand_t){.index = (int)plan->input_count, .dtype = dtype,
                               .offset = at * out_strides[dim]};
    memcpy(s->out.strides, out_strides, sizeof(int64_t) * (size_t)rank);
    s->b.index = -1;
    at += t->shape[dim];
  }
  return XR_OK;
}

xr_status_t xr_ew_analyze_indexing(xr_op_plan_t *plan, xr_ew_problem_t **out_problem) {
  if (!strcmp(plan->op->name, "aten::cat")) return analyze_cat(plan, out_problem);
  xr_ew_problem_t *p = xr_ew_problem_alloc(1);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", plan->op->name);
  plan->problem = p;
  p->step_count = 1;
  *out_problem = p;
  return analyze_select(plan, &p->steps[0]);
}

/* ------------------------------------------------------------------------------------------ */
/* custom initializers                                                                         */

/* Index tensors must address rows that exist. */
static xr_status_t init_embedding(xr_init_context_t *c) {
  int w = xr_init_input(c, "weight");
  if (w >= 0)
    xr_init_indices(c, xr_init_input(c, "indices"), c->plan->inputs[w]->shape[0], "indices");
  return XR_OK;
}

static xr_status_t init_index_select(xr_init_context_t *c) {
  int self = xr_init_input(c, "self");
  if (self < 0) return XR_OK;
  const xr_tensor_spec_t *t = c->plan->inputs[self];
  int64_t dim = xr_init_int_arg(c, "dim", 0);
  if (dim < 0) dim += t->rank;
  int64_t rows = t->rank == 0 ? 1 : (dim >= 0 && dim < t->rank ? t->shape[dim] : 0);
  xr_init_indices(c, xr_init_input(c, "index"), rows, "index");
  return XR_OK;
}

const struct xr_op_initializer xr_indexing_initializers[] = {
    {"aten::embedding", init_embedding},
    {"aten::index_select", init_index_select},
    {NULL, NULL},
};
