/* Creation and data-movement ops of the elementwise family, each reduced to fill, copy or
 * sequence steps over strided views:
 *   arange, linspace                        a sequence step (start + i * step) into a new tensor
 *   full, zeros, ones, new_full/zeros/ones, full_like, zeros_like, ones_like
 *                                           a fill of a new tensor
 *   clone, contiguous                       a copy into a new contiguous tensor
 *   flip(self, dims)                        a copy reading self through negated strides
 *   roll(self, shifts, dims)                two copies per rolled dimension; without dims,
 *                                           a copy per box of the flattened tensor's two
 *                                           rolled ranges
 *   repeat(self, repeats)                   one copy reading self with zero strides over the
 *                                           repeat dimensions
 *   constant_pad_nd(self, pad, value)       a fill of the padded tensor, then a copy of self
 *                                           into it (negative pads crop)
 *   stack(tensors, dim)                     a copy per tensor into its slice
 *   narrow_copy(self, dim, start, length)   a copy of the slice
 *   repeat_interleave(self, repeats: int, dim)
 *                                           one copy reading self with a zero stride over a new
 *                                           repeat dim after dim; a Tensor of repeats (the
 *                                           layout depends on its values) when the bundle embeds
 *                                           them: a copy per run of equal repeats
 *   repeat_interleave(repeats: Tensor)      the indices each repeated: a fill per index, the
 *                                           repeats embedded
 *   tril, triu(self, diagonal=0)            a copy that writes 0 outside the kept triangle of
 *                                           each matrix (the last two dims); `_` in place
 *   split_copy(self, split_size, dim), split_with_sizes_copy(self, split_sizes, dim),
 *   unbind_copy(self, dim)                  a copy per piece, into out= (a list) or returned
 *                                           (at most XR_MAX_RETURNS pieces)
 * An `out=` tensor whose size differs from the result is resized by torch; here the result
 * then goes to a new tensor of the right size (the recorded out storage is not written). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/elementwise.h"
#include "kernels/family.h"

static const char *const movement_ops[] = {XR_EW_MOVEMENT_OPS, NULL};

bool xr_ew_is_movement_op(const char *name) {
  for (size_t i = 0; movement_ops[i]; i++)
    if (!strcmp(name, movement_ops[i])) return true;
  return false;
}

/* A problem of `n` steps owned by the plan. */
static xr_status_t new_problem(xr_op_plan_t *plan, size_t n, xr_ew_problem_t **out) {
  xr_ew_problem_t *p = xr_ew_problem_alloc(n ? n : 1);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", plan->op->name);
  plan->problem = p;
  p->step_count = n;
  *out = p;
  return XR_OK;
}

/* The result: the first return, contiguous. */
static void set_result(xr_op_plan_t *plan, xr_dtype_t dtype, int rank, const int64_t *shape) {
  plan->return_count = 1;
  xr_desc_set(&plan->returns[0], dtype, rank, shape);
}

/* A step writing the result's region at element `offset` with `shape` and the result's strides. */
static void result_region(const xr_op_plan_t *plan, xr_ew_step_t *s, int rank, const int64_t *shape,
                          const int64_t *out_strides, int64_t offset) {
  s->rank = rank;
  memcpy(s->shape, shape, sizeof(int64_t) * (size_t)rank);
  s->out = (xr_ew_operand_t){
      .index = (int)plan->input_count, .dtype = plan->returns[0].dtype, .offset = offset};
  memcpy(s->out.strides, out_strides, sizeof(int64_t) * (size_t)rank);
  s->a.index = s->b.index = -1;
}

/* The `out=` tensor when its shape is the result's; -1 when absent or resized. */
static int written_out(const xr_op_plan_t *plan, int rank, const int64_t *shape) {
  int out = -1;
  for (size_t k = 0; k < plan->op->arg_count + plan->op->kwarg_count; k++) {
    const xr_arg_t *a =
        k < plan->op->arg_count ? &plan->op->args[k] : &plan->op->kwargs[k - plan->op->arg_count];
    if (a->value.kind == XR_VALUE_TENSOR && (!a->name || !strcmp(a->name, "out")))
      out = xr_plan_input_index(plan, a->value.as.tensor);
  }
  if (out < 0) return -1;
  const xr_tensor_spec_t *t = plan->inputs[out];
  bool same = t->rank == rank;
  for (int d = 0; same && d < rank; d++) same = t->shape[d] == shape[d];
  return same ? out : -1;
}

/* ------------------------------------------------------------------------------------------ */
/* creation                                                                                    */

/* arange(end) / arange(start, end, step=1), numbers named or positional; out= may follow. */
static xr_status_t analyze_arange(xr_op_plan_t *plan, xr_ew_problem_t **out_problem) {
  const xr_op_t *op = plan->op;
  double v[3] = {0, 0, 1};
  int count = 0;
  bool any_float = false;
  const char *names[3] = {"start", "end", "step"};
  const xr_value_t *named[3];
  for (int k = 0; k < 3; k++)
    named[k] = xr_op_find_arg(op, names[k]) ? xr_op_arg(op, -1, names[k]) : NULL;
  if (named[1]) {
    for (int k = 0; k < 3; k++)
      if (xr_ew_is_number(named[k])) {
        v[k] = xr_ew_number(named[k]);
        any_float |= named[k]->kind == XR_VALUE_FLOAT;
      }
    count = 3;
  } else {
    double got[3];
    for (size_t k = 0; k < op->arg_count && count < 3; k++)
      if (xr_ew_is_number(&op->args[k].value)) {
        got[count++] = xr_ew_number(&op->args[k].value);
        any_float |= op->args[k].value.kind == XR_VALUE_FLOAT;
      }
    if (count == 0) return xr_plan_error(plan, "end: expected a number");
    if (count == 1)
      v[1] = got[0];
    else
      memcpy(v, got, sizeof(double) * (size_t)count);
  }
  if (v[2] == 0 || !isfinite(v[0]) || !isfinite(v[1]) || !isfinite(v[2]))
    return xr_plan_error(plan, "step: must be nonzero and the bounds finite");
  double n = ceil((v[1] - v[0]) / v[2]);
  if (n < 0)
    return xr_plan_error(plan, "end: the range from %g by %g never reaches %g", v[0], v[2], v[1]);
  if (n >= 0x1p62) return xr_plan_error(plan, "the range has too many elements");
  int64_t shape[1] = {(int64_t)n};
  xr_dtype_t dtype;
  xr_status_t st = xr_ew_read_dtype(plan, xr_op_arg(op, -1, "dtype"),
                                    any_float ? XR_DTYPE_F32 : XR_DTYPE_I64, &dtype);
  if (st != XR_OK) return st;
  xr_ew_problem_t *p = NULL;
  if ((st = new_problem(plan, 1, &p))) return st;
  *out_problem = p;
  xr_ew_step_t *s = &p->steps[0];
  int out = written_out(plan, 1, shape);
  if (out >= 0) dtype = plan->inputs[out]->dtype;
  set_result(plan, dtype, 1, shape);
  int64_t one = 1;
  result_region(plan, s, 1, shape, &one, 0);
  if (out >= 0) { /* into the given tensor */
    plan->return_count = 0;
    xr_ew_set_operand(plan, out, 1, shape, &s->out);
  }
  s->op = XR_EW_ARANGE;
  s->a_scalar = true;
  s->a_value = v[0];
  s->alpha = v[2];
  return XR_OK;
}

/* linspace(start, end, steps) */
static xr_status_t analyze_linspace(xr_op_plan_t *plan, xr_ew_problem_t **out_problem) {
  const xr_op_t *op = plan->op;
  double start = 0, end = 0;
  int64_t steps = 0;
  xr_status_t st;
  if ((st = xr_arg_double(op, 0, "start", true, &start)) ||
      (st = xr_arg_double(op, 1, "end", true, &end)) ||
      (st = xr_arg_int(op, 2, "steps", true, &steps)))
    return st;
  if (steps < 0)
    return xr_plan_error(plan, "steps: must be non-negative, got %lld", (long long)steps);
  xr_dtype_t dtype;
  if ((st = xr_ew_read_dtype(plan, xr_op_arg(op, -1, "dtype"), XR_DTYPE_F32, &dtype))) return st;
  xr_ew_problem_t *p = NULL;
  if ((st = new_problem(plan, 1, &p))) return st;
  *out_problem = p;
  int64_t shape[1] = {steps}, one = 1;
  set_result(plan, dtype, 1, shape);
  xr_ew_step_t *s = &p->steps[0];
  result_region(plan, s, 1, shape, &one, 0);
  s->op = XR_EW_LINSPACE;
  s->a_scalar = s->c_scalar = true;
  s->a_value = start;
  /* torch's one step is [start]; the sequence's second half counts back from c_value, which
   * for one element would give end */
  s->c_value = steps == 1 ? start : end;
  return XR_OK;
}

/* full/zeros/ones and their new_ and _like forms: a fill of a new tensor. */
static xr_status_t analyze_fill_new(xr_op_plan_t *plan, xr_ew_problem_t **out_problem) {
  const xr_op_t *op = plan->op;
  const char *base = strstr(op->name, "::") + 2;
  bool like = strstr(base, "_like") != NULL, from_self = like || !strncmp(base, "new_", 4);
  xr_status_t st;
  int64_t shape[XR_MAX_RANK];
  int rank = 0, self = -1;
  xr_dtype_t fallback = XR_DTYPE_F32;
  if (from_self) {
    if ((st = xr_arg_tensor(plan, 0, "self", true, &self))) return st;
    fallback = plan->inputs[self]->dtype;
  }
  if (like) {
    rank = plan->inputs[self]->rank;
    memcpy(shape, plan->inputs[self]->shape, sizeof(int64_t) * (size_t)rank);
  } else if ((st = xr_arg_int_list(op, from_self ? 1 : 0, "size", true, shape, XR_MAX_RANK,
                                   &rank))) {
    return st;
  }
  for (int d = 0; d < rank; d++)
    if (shape[d] < 0)
      return xr_plan_error(plan, "size[%d]: negative (%lld)", d, (long long)shape[d]);
  double value = strstr(base, "ones") ? 1 : 0;
  if (strstr(base, "full")) {
    const char *name = "fill_value";
    const xr_value_t *v = xr_op_arg(op, like ? 1 : from_self ? 2 : 1, name);
    if (!xr_ew_is_number(v)) return xr_plan_error(plan, "fill_value: expected a number");
    value = xr_ew_number(v);
    if (!from_self) fallback = xr_ew_number_dtype(v);
  }
  xr_dtype_t dtype;
  if ((st = xr_ew_read_dtype(plan, xr_op_arg(op, -1, "dtype"), fallback, &dtype))) return st;
  xr_ew_problem_t *p = NULL;
  if ((st = new_problem(plan, 1, &p))) return st;
  *out_problem = p;
  int out = written_out(plan, rank, shape);
  if (out >= 0 && out != self)
    dtype = plan->inputs[out]->dtype;
  else
    out = -1;
  set_result(plan, dtype, rank, shape);
  int64_t strides[XR_MAX_RANK];
  xr_contiguous_strides(rank, shape, strides);
  xr_ew_step_t *s = &p->steps[0];
  result_region(plan, s, rank, shape, strides, 0);
  if (out >= 0) {
    plan->return_count = 0;
    xr_ew_set_operand(plan, out, rank, shape, &s->out);
  }
  s->op = XR_EW_FILL;
  s->b_scalar = true;
  s->scalar = value;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* movement                                                                                    */

/* A copy of `self` viewed with (shape, strides, offset) into the result region. */
static void copy_step(const xr_op_plan_t *plan, xr_ew_step_t *s, int self, int rank,
                      const int64_t *shape, const int64_t *a_strides, int64_t a_offset,
                      const int64_t *out_strides, int64_t out_offset) {
  result_region(plan, s, rank, shape, out_strides, out_offset);
  s->op = XR_EW_COPY;
  s->a = (xr_ew_operand_t){.index = self, .dtype = plan->inputs[self]->dtype, .offset = a_offset};
  memcpy(s->a.strides, a_strides, sizeof(int64_t) * (size_t)rank);
}

/* The boxes a row-major flat range [lo, hi) of `shape` splits into: each fixes the dims before
 * some d, takes a run of d and every later dim whole, so its elements are consecutive in the
 * flat order; at most 2 * rank of them. Writes each box's first index and shape; returns the
 * count. */
static int flat_range_boxes(int rank, const int64_t *shape, int64_t lo, int64_t hi,
                            int64_t (*first)[XR_MAX_RANK], int64_t (*box)[XR_MAX_RANK]) {
  int64_t inner[XR_MAX_RANK];
  for (int d = rank - 1, n = 1; d >= 0; d--) inner[d] = n, n *= shape[d];
  int count = 0;
  while (lo < hi) {
    int d = 0; /* the outermost dim whose whole steps fit at lo */
    while (lo % inner[d] || lo + inner[d] > hi) d++;
    int64_t x = lo / inner[d] % shape[d], k = (hi - lo) / inner[d];
    if (k > shape[d] - x) k = shape[d] - x;
    for (int j = 0; j < rank; j++) {
      first[count][j] = j < d ? lo / inner[j] % shape[j] : j == d ? x : 0;
      box[count][j] = j < d ? 1 : j == d ? k : shape[j];
    }
    count++;
    lo += k * inner[d];
  }
  return count;
}

/* roll(self, shifts) without dims: self flattened (row-major), rolled by `shift`, its shape
 * restored, out_flat[(i + shift) mod n] = self_flat[i]. The two flat ranges ([0, n - r) to
 * [r, n), [n - r, n) to [0, r)) are copied box by box (flat_range_boxes), read through self's
 * own strides, so any view rolls. */
static xr_status_t analyze_roll_flat(xr_op_plan_t *plan, int self, int64_t shift,
                                     xr_ew_problem_t **out_problem) {
  const xr_tensor_spec_t *t = plan->inputs[self];
  int rank = t->rank;
  int64_t n = 1, out_strides[XR_MAX_RANK];
  for (int d = 0; d < rank; d++) n *= t->shape[d];
  xr_contiguous_strides(rank, t->shape, out_strides);
  int64_t r = n ? ((shift % n) + n) % n : 0;
  static _Thread_local int64_t first[4 * XR_MAX_RANK][XR_MAX_RANK], box[4 * XR_MAX_RANK][XR_MAX_RANK];
  int64_t to[4 * XR_MAX_RANK];
  int count = 0;
  if (n == 0 || rank == 0) { /* nothing moves: one copy of the whole */
    count = 1;
    for (int d = 0; d < rank; d++) first[0][d] = 0, box[0][d] = t->shape[d];
    to[0] = 0;
  } else {
    count = flat_range_boxes(rank, t->shape, 0, n - r, first, box);
    count += flat_range_boxes(rank, t->shape, n - r, n, first + count, box + count);
    for (int k = 0; k < count; k++) { /* destination: the box's flat start, shifted by r */
      int64_t start = 0;
      for (int d = 0; d < rank; d++) start += first[k][d] * out_strides[d];
      to[k] = (start + r) % n;
    }
  }
  xr_ew_problem_t *p = NULL;
  xr_status_t st;
  if ((st = new_problem(plan, (size_t)count, &p))) return st;
  *out_problem = p;
  set_result(plan, t->dtype, rank, t->shape);
  for (int k = 0; k < count; k++) {
    int64_t a_offset = 0;
    for (int d = 0; d < rank; d++) a_offset += first[k][d] * t->strides[d];
    copy_step(plan, &p->steps[k], self, rank, box[k], t->strides, a_offset, out_strides, to[k]);
  }
  return XR_OK;
}

static xr_status_t analyze_self_copy(xr_op_plan_t *plan, xr_ew_problem_t **out_problem) {
  const char *base = strstr(plan->op->name, "::") + 2;
  xr_status_t st;
  int self = -1;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self))) return st;
  const xr_tensor_spec_t *t = plan->inputs[self];
  int rank = t->rank;
  int64_t shape[XR_MAX_RANK], a_strides[XR_MAX_RANK], out_strides[XR_MAX_RANK];
  memcpy(shape, t->shape, sizeof(int64_t) * (size_t)rank);
  memcpy(a_strides, t->strides, sizeof(int64_t) * (size_t)rank);
  int64_t a_offset = 0;
  size_t steps = 1;
  int64_t dims[XR_MAX_RANK], shifts[XR_MAX_RANK];
  int ndims = 0, nshifts = 0;
  if (!strcmp(base, "flip") || !strcmp(base, "roll")) {
    bool roll = base[0] == 'r';
    if (roll && (st = xr_arg_int_list(plan->op, 1, "shifts", true, shifts, XR_MAX_RANK, &nshifts)))
      return st;
    if ((st = xr_arg_int_list(plan->op, roll ? 2 : 1, "dims", !roll, dims, XR_MAX_RANK, &ndims)))
      return st;
    if (roll && ndims == 0) {
      if (nshifts != 1)
        return xr_plan_error(plan, "shifts: %d items without dims (one rolls the flattened "
                             "tensor)", nshifts);
      return analyze_roll_flat(plan, self, shifts[0], out_problem);
    }
    if (roll && nshifts != ndims)
      return xr_plan_error(plan, "shifts and dims: %d and %d items", nshifts, ndims);
    for (int k = 0; k < ndims; k++) {
      int d = 0;
      if ((st = xr_plan_wrap_dim(plan, dims[k], rank, &d))) return st;
      dims[k] = d;
      if (!roll && shape[d] > 0) { /* read backwards */
        a_offset += (shape[d] - 1) * a_strides[d];
        a_strides[d] = -a_strides[d];
      }
    }
    if (roll) steps = (size_t)1 << ndims;
  } else if (!strcmp(base, "narrow_copy")) {
    int64_t dim = 0, start = 0, length = 0;
    int d = 0;
    if ((st = xr_arg_int(plan->op, 1, "dim", true, &dim)) ||
        (st = xr_arg_int(plan->op, 2, "start", true, &start)) ||
        (st = xr_arg_int(plan->op, 3, "length", true, &length)) ||
        (st = xr_plan_wrap_dim(plan, dim, rank, &d)))
      return st;
    if (start < 0) start += shape[d];
    if (start < 0 || length < 0 || start + length > shape[d])
      return xr_plan_error(plan, "start %lld and length %lld do not fit dimension %d (%lld)",
                           (long long)start, (long long)length, d, (long long)shape[d]);
    a_offset = start * a_strides[d];
    shape[d] = length;
  }
  xr_dtype_t dtype = t->dtype;
  xr_ew_problem_t *p = NULL;
  if ((st = new_problem(plan, steps, &p))) return st;
  *out_problem = p;
  set_result(plan, dtype, rank, shape);
  xr_contiguous_strides(rank, shape, out_strides);
  if (steps == 1) {
    copy_step(plan, &p->steps[0], self, rank, shape, a_strides, a_offset, out_strides, 0);
    return XR_OK;
  }
  /* roll: out[(i + shift) mod n] = self[i]; per rolled dim the source splits in two pieces,
   * [0, n - r) going to [r, n) and [n - r, n) to [0, r). */
  for (size_t k = 0; k < steps; k++) {
    int64_t sub[XR_MAX_RANK], src_off = 0, dst_off = 0;
    memcpy(sub, shape, sizeof(int64_t) * (size_t)rank);
    for (int j = 0; j < ndims; j++) {
      int d = (int)dims[j];
      int64_t n = shape[d], r = n ? ((shifts[j] % n) + n) % n : 0;
      bool second = (k >> j) & 1;
      int64_t len = second ? r : n - r, from = second ? n - r : 0, to = second ? 0 : r;
      sub[d] = len;
      src_off += from * a_strides[d];
      dst_off += to * out_strides[d];
    }
    copy_step(plan, &p->steps[k], self, rank, sub, a_strides, src_off, out_strides, dst_off);
  }
  return XR_OK;
}

/* repeat(self, repeats): the result [r0, .., rk * sk, ..] read as [r, s] pairs, self's strides on
 * the s dims and 0 on the r dims; leading repeats beyond self's rank are new dims. */
static xr_status_t analyze_repeat(xr_op_plan_t *plan, xr_ew_problem_t **out_problem) {
  xr_status_t st;
  int self = -1, nrep = 0;
  int64_t reps[XR_MAX_RANK];
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self)) ||
      (st = xr_arg_int_list(plan->op, 1, "repeats", true, reps, XR_MAX_RANK, &nrep)))
    return st;
  const xr_tensor_spec_t *t = plan->inputs[self];
  if (nrep < t->rank)
    return xr_plan_error(plan, "repeats: %d items for a %d-D tensor (at least as many needed)",
                         nrep, t->rank);
  if (2 * nrep > XR_MAX_RANK)
    return xr_error(XR_UNIMPLEMENTED, "%s: %d repeat dims need %d iteration dims (at most %d)",
                    plan->op->name, nrep, 2 * nrep, XR_MAX_RANK);
  int64_t shape[XR_MAX_RANK], pair_shape[XR_MAX_RANK],
      a_strides[XR_MAX_RANK] = {0}, out_strides[XR_MAX_RANK], pair_out[XR_MAX_RANK];
  int lead = nrep - t->rank;
  for (int d = 0; d < nrep; d++) {
    if (reps[d] < 0) return xr_plan_error(plan, "repeats[%d]: negative", d);
    int64_t size = d >= lead ? t->shape[d - lead] : 1;
    shape[d] = reps[d] * size;
    pair_shape[2 * d] = reps[d];
    pair_shape[2 * d + 1] = size;
    a_strides[2 * d + 1] = d >= lead ? t->strides[d - lead] : 0;
  }
  xr_contiguous_strides(nrep, shape, out_strides);
  for (int d = 0; d < nrep; d++) {
    pair_out[2 * d] = pair_shape[2 * d + 1] * out_strides[d];
    pair_out[2 * d + 1] = out_strides[d];
  }
  xr_ew_problem_t *p = NULL;
  if ((st = new_problem(plan, 1, &p))) return st;
  *out_problem = p;
  set_result(plan, t->dtype, nrep, shape);
  copy_step(plan, &p->steps[0], self, 2 * nrep, pair_shape, a_strides, 0, pair_out, 0);
  return XR_OK;
}

/* constant_pad_nd(self, pad, value=0): pad lists (before, after) pairs from the last dim. */
static xr_status_t analyze_pad(xr_op_plan_t *plan, xr_ew_problem_t **out_problem) {
  xr_status_t st;
  int self = -1, npad = 0;
  int64_t pad[2 * XR_MAX_RANK];
  double value = 0;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self)) ||
      (st = xr_arg_int_list(plan->op, 1, "pad", true, pad, 2 * XR_MAX_RANK, &npad)) ||
      (st = xr_arg_double(plan->op, 2, "value", false, &value)))
    return st;
  const xr_tensor_spec_t *t = plan->inputs[self];
  if (npad % 2 || npad / 2 > t->rank)
    return xr_plan_error(plan, "pad: %d items for a %d-D tensor (pairs, at most one per dim)", npad,
                         t->rank);
  int rank = t->rank;
  int64_t shape[XR_MAX_RANK], inner[XR_MAX_RANK], out_strides[XR_MAX_RANK];
  int64_t a_offset = 0, before[XR_MAX_RANK] = {0};
  for (int d = 0; d < rank; d++) {
    int k = rank - 1 - d; /* pair index of dim d */
    int64_t lo = k < npad / 2 ? pad[2 * k] : 0, hi = k < npad / 2 ? pad[2 * k + 1] : 0;
    shape[d] = t->shape[d] + lo + hi;
    if (shape[d] < 0) return xr_plan_error(plan, "pad: dimension %d would be negative", d);
    /* negative pads crop self */
    int64_t crop_lo = lo < 0 ? -lo : 0, crop_hi = hi < 0 ? -hi : 0;
    inner[d] = t->shape[d] - crop_lo - crop_hi;
    if (inner[d] < 0) inner[d] = 0;
    a_offset += crop_lo * t->strides[d];
    before[d] = lo > 0 ? lo : 0;
  }
  xr_contiguous_strides(rank, shape, out_strides);
  int64_t out_offset = 0;
  for (int d = 0; d < rank; d++) out_offset += before[d] * out_strides[d];
  xr_ew_problem_t *p = NULL;
  if ((st = new_problem(plan, 2, &p))) return st;
  *out_problem = p;
  set_result(plan, t->dtype, rank, shape);
  xr_ew_step_t *fill = &p->steps[0];
  result_region(plan, fill, rank, shape, out_strides, 0);
  fill->op = XR_EW_FILL;
  fill->b_scalar = true;
  fill->scalar = value;
  copy_step(plan, &p->steps[1], self, rank, inner, t->strides, a_offset, out_strides, out_offset);
  return XR_OK;
}

/* stack(tensors, dim): the result has a new dim of size len(tensors) at dim. */
static xr_status_t analyze_stack(xr_op_plan_t *plan, xr_ew_problem_t **out_problem) {
  const xr_op_t *op = plan->op;
  const xr_value_t *list = NULL;
  int64_t dim_arg = 0;
  xr_status_t st;
  if ((st = xr_arg_tensor_list(op, 0, "tensors", &list)) ||
      (st = xr_arg_int(op, 1, "dim", false, &dim_arg)))
    return st;
  if (list->as.list.count == 0)
    return xr_plan_error(plan, "tensors: expected a non-empty list of tensors");
  size_t n = list->as.list.count;
  const xr_tensor_spec_t *first = NULL;
  for (size_t i = 0; i < n; i++) {
    const xr_value_t *v = &list->as.list.items[i];
    if (v->kind != XR_VALUE_TENSOR)
      return xr_plan_error(plan, "tensors[%zu]: expected a tensor", i);
    const xr_tensor_spec_t *t = v->as.tensor;
    if (!first) first = t;
    bool same = t->rank == first->rank && t->dtype == first->dtype;
    for (int d = 0; same && d < t->rank; d++) same = t->shape[d] == first->shape[d];
    if (!same)
      return xr_plan_error(plan, "tensors[%zu]: shape or dtype differs from tensors[0]", i);
  }
  int rank = first->rank + 1, dim = 0;
  if (rank > XR_MAX_RANK) return xr_plan_error(plan, "the result would have %d dimensions", rank);
  if ((st = xr_plan_wrap_dim(plan, dim_arg, rank, &dim))) return st;
  int64_t shape[XR_MAX_RANK], out_strides[XR_MAX_RANK];
  for (int d = 0, k = 0; d < rank; d++) shape[d] = d == dim ? (int64_t)n : first->shape[k++];
  xr_contiguous_strides(rank, shape, out_strides);
  int64_t part_strides[XR_MAX_RANK];
  for (int d = 0, k = 0; d < rank; d++)
    if (d != dim) part_strides[k++] = out_strides[d];
  xr_ew_problem_t *p = NULL;
  if ((st = new_problem(plan, n, &p))) return st;
  *out_problem = p;
  set_result(plan, first->dtype, rank, shape);
  for (size_t i = 0; i < n; i++) {
    const xr_tensor_spec_t *t = list->as.list.items[i].as.tensor;
    copy_step(plan, &p->steps[i], xr_plan_input_index(plan, t), t->rank, t->shape, t->strides, 0,
              part_strides, (int64_t)i * out_strides[dim]);
  }
  return XR_OK;
}

/* The most steps a Tensor of repeats may plan into (one per run of equal repeats, per box of a
 * flattened run, or per repeated index). */
enum { MAX_REPEAT_STEPS = 1 << 16 };

/* The values of a Tensor of repeats (0-d or 1-D, int32 or int64) that the bundle embeds, into a
 * new array of *out_n entries. Without embedded contents the result's size is unknown:
 * UNIMPLEMENTED, naming what would make it replayable. */
static xr_status_t embedded_repeats(xr_op_plan_t *plan, const xr_tensor_spec_t *t, int64_t **out,
                                    int64_t *out_n) {
  *out = NULL;
  if (t->dtype != XR_DTYPE_I64 && t->dtype != XR_DTYPE_I32)
    return xr_plan_error(plan, "repeats: expected an int32 or int64 tensor, got %s",
                         xr_dtype_name(t->dtype));
  if (t->rank > 1)
    return xr_plan_error(plan, "repeats: expected a 0-d or 1-D tensor, got %d-D", t->rank);
  if (!t->data)
    return xr_error(XR_UNIMPLEMENTED,
                    "%s: repeats: a Tensor of repeats makes the result's size depend on its "
                    "values, and the bundle does not carry them (embed the repeats' contents)",
                    plan->op->name);
  int64_t n = t->rank ? t->shape[0] : 1;
  int64_t *v = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!v) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", plan->op->name);
  for (int64_t i = 0; i < n; i++) {
    xr_status_t st = XR_OK;
    if (!xr_spec_embedded_int(t, i, &v[i]))
      st = xr_plan_error(plan, "repeats: element %lld lies outside its embedded contents",
                         (long long)i);
    else if (v[i] < 0)
      st = xr_plan_error(plan, "repeats[%lld]: negative (%lld)", (long long)i, (long long)v[i]);
    if (st != XR_OK) {
      free(v);
      return st;
    }
  }
  *out = v;
  *out_n = n;
  return XR_OK;
}

/* output_size, when recorded, must be the repeats' sum. */
static xr_status_t check_output_size(xr_op_plan_t *plan, int64_t total) {
  const xr_value_t *v = xr_op_arg(plan->op, -1, "output_size");
  if (v && v->kind == XR_VALUE_INT && v->as.i != total)
    return xr_plan_error(plan, "output_size: %lld, the repeats add up to %lld",
                         (long long)v->as.i, (long long)total);
  return XR_OK;
}

/* repeat_interleave(Tensor repeats, *, output_size=None) (the .Tensor overload): the indices
 * 0, 1, .. each repeated repeats[i] times, in the repeats' dtype; a fill per repeated index. */
static xr_status_t analyze_repeat_indices(xr_op_plan_t *plan, int index,
                                          xr_ew_problem_t **out_problem) {
  const xr_tensor_spec_t *t = plan->inputs[index];
  if (t->rank != 1)
    return xr_plan_error(plan, "repeats: expected a 1-D tensor, got %d-D", t->rank);
  int64_t *reps = NULL, n = 0, total = 0, steps = 0;
  xr_status_t st = embedded_repeats(plan, t, &reps, &n);
  if (st != XR_OK) return st;
  for (int64_t i = 0; i < n; i++) total += reps[i], steps += reps[i] > 0;
  if ((st = check_output_size(plan, total)) == XR_OK && steps > MAX_REPEAT_STEPS)
    st = xr_error(XR_UNIMPLEMENTED, "%s: %lld repeated indices (at most %d)", plan->op->name,
                  (long long)steps, MAX_REPEAT_STEPS);
  xr_ew_problem_t *p = NULL;
  if (st == XR_OK) st = new_problem(plan, (size_t)(steps ? steps : 1), &p);
  if (st != XR_OK) {
    free(reps);
    return st;
  }
  *out_problem = p;
  set_result(plan, t->dtype, 1, &total);
  int64_t one = 1, at = 0, k = 0;
  for (int64_t i = 0; i < n; i++) {
    if (reps[i] == 0) continue;
    xr_ew_step_t *s = &p->steps[k++];
    result_region(plan, s, 1, &reps[i], &one, at);
    s->op = XR_EW_FILL;
    s->b_scalar = true;
    s->scalar = (double)i;
    at += reps[i];
  }
  if (k == 0) { /* nothing repeated: an empty result */
    int64_t zero = 0;
    result_region(plan, &p->steps[0], 1, &zero, &one, 0);
    p->steps[0].op = XR_EW_FILL;
    p->steps[0].b_scalar = true;
  }
  free(reps);
  return XR_OK;
}

/* repeat_interleave(self, Tensor repeats, dim=None) with the repeats embedded: runs of equal
 * repeats, each one copy reading self's run with a zero stride over a new [r] dim after dim;
 * flattened (dim None) a run of self's flat elements is copied box by box (flat_range_boxes). */
static xr_status_t analyze_repeat_tensor(xr_op_plan_t *plan, int self, int index, bool flat,
                                         int dim, xr_ew_problem_t **out_problem) {
  const xr_tensor_spec_t *t = plan->inputs[self];
  int64_t *reps = NULL, n = 0;
  xr_status_t st = embedded_repeats(plan, plan->inputs[index], &reps, &n);
  if (st != XR_OK) return st;
  int rank = t->rank;
  int64_t numel = 1, inner[XR_MAX_RANK];
  for (int d = rank - 1; d >= 0; d--) inner[d] = numel, numel *= t->shape[d];
  int64_t extent = flat ? numel : rank ? t->shape[dim] : 1;
  if (n != extent && n != 1) {
    free(reps);
    return xr_plan_error(plan, "repeats: %lld values for %s of %lld (one, or one each)",
                         (long long)n, flat ? "self's elements" : "dimension dim",
                         (long long)extent);
  }
  /* runs of equal repeats: [start, end) with r, r > 0 */
  int64_t total = 0, runs = 0, steps = 0;
  static _Thread_local int64_t first[2 * XR_MAX_RANK][XR_MAX_RANK], box[2 * XR_MAX_RANK][XR_MAX_RANK];
  for (int64_t i = 0; i < extent;) {
    int64_t r = reps[n == 1 ? 0 : i], e = i + 1;
    while (e < extent && reps[n == 1 ? 0 : e] == r) e++;
    total += r * (e - i);
    if (r > 0) {
      runs++;
      steps += flat && rank ? flat_range_boxes(rank, t->shape, i, e, first, box) : 1;
    }
    i = e;
  }
  if ((st = check_output_size(plan, total)) == XR_OK && steps > MAX_REPEAT_STEPS)
    st = xr_error(XR_UNIMPLEMENTED, "%s: the repeats make %lld copies (at most %d)",
                  plan->op->name, (long long)steps, MAX_REPEAT_STEPS);
  xr_ew_problem_t *p = NULL;
  if (st == XR_OK) st = new_problem(plan, (size_t)(steps ? steps : 1), &p);
  if (st != XR_OK) {
    free(reps);
    return st;
  }
  *out_problem = p;
  int64_t result[XR_MAX_RANK], out_strides[XR_MAX_RANK];
  int result_rank = flat ? 1 : rank;
  if (flat)
    result[0] = total;
  else
    for (int d = 0; d < rank; d++) result[d] = d == dim ? total : t->shape[d];
  set_result(plan, t->dtype, result_rank, result);
  xr_contiguous_strides(result_rank, result, out_strides);
  int64_t k = 0, at = 0; /* at: the run's first element (flat) or index along dim in the result */
  for (int64_t i = 0; i < extent;) {
    int64_t r = reps[n == 1 ? 0 : i], e = i + 1;
    while (e < extent && reps[n == 1 ? 0 : e] == r) e++;
    if (r == 0) {
      i = e;
      continue;
    }
    if (flat) {
      /* box: self's dims then [r]; out element (flat - i) * r + j after `at` */
      int boxes = rank ? flat_range_boxes(rank, t->shape, i, e, first, box) : 1;
      for (int b = 0; b < boxes; b++) {
        int64_t shape[XR_MAX_RANK], a_strides[XR_MAX_RANK] = {0}, o_strides[XR_MAX_RANK];
        int64_t a_offset = 0, start = 0;
        for (int d = 0; d < rank; d++) {
          shape[d] = box[b][d];
          a_strides[d] = t->strides[d];
          o_strides[d] = inner[d] * r;
          a_offset += first[b][d] * t->strides[d];
          start += first[b][d] * inner[d];
        }
        shape[rank] = r;
        a_strides[rank] = 0;
        o_strides[rank] = 1;
        copy_step(plan, &p->steps[k++], self, rank + 1, shape, a_strides, a_offset, o_strides,
                  at + (start - i) * r);
      }
    } else {
      int64_t shape[XR_MAX_RANK], a_strides[XR_MAX_RANK] = {0}, o_strides[XR_MAX_RANK];
      for (int d = 0, q = 0; d < rank; d++) {
        shape[q] = d == dim ? e - i : t->shape[d];
        a_strides[q] = t->strides[d];
        o_strides[q++] = d == dim ? r * out_strides[d] : out_strides[d];
        if (d == dim) shape[q] = r, a_strides[q] = 0, o_strides[q++] = out_strides[d];
      }
      copy_step(plan, &p->steps[k++], self, rank + 1, shape, a_strides,
                i * t->strides[dim], o_strides, at * out_strides[dim]);
    }
    at += (e - i) * r;
    i = e;
  }
  if (k == 0) { /* every repeat 0: an empty result */
    int64_t zero[XR_MAX_RANK] = {0}, strides[XR_MAX_RANK] = {0};
    copy_step(plan, &p->steps[0], self, 1, zero, strides, 0, strides, 0);
  }
  free(reps);
  return XR_OK;
}

/* repeat_interleave with an int: the iteration is self's shape with a [repeats] dim inserted
 * after dim (after the last dim, flattened, for dim None), read with stride 0. A Tensor of
 * repeats: analyze_repeat_tensor; the repeats-only overload: analyze_repeat_indices. */
static xr_status_t analyze_repeat_interleave(xr_op_plan_t *plan, xr_ew_problem_t **out_problem) {
  const xr_op_t *op = plan->op;
  xr_status_t st;
  int self = -1;
  /* repeat_interleave.Tensor(Tensor repeats, *, output_size): no self; unnamed, the one
   * positional tensor, or two with an output_size of None (self_int's repeats cannot be) */
  const xr_arg_t *named = xr_op_find_arg(op, "repeats");
  bool repeats_only =
      !xr_op_find_arg(op, "self") &&
      (named ? op->arg_count && named == &op->args[0]
             : op->arg_count >= 1 && !op->args[0].name &&
                   (op->arg_count == 1 ||
                    (op->arg_count == 2 && op->args[1].value.kind == XR_VALUE_NULL)));
  if (repeats_only) {
    int index = -1;
    if ((st = xr_arg_tensor(plan, 0, "repeats", true, &index))) return st;
    return analyze_repeat_indices(plan, index, out_problem);
  }
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self))) return st;
  const xr_value_t *rv = xr_op_arg(op, 1, "repeats");
  const xr_tensor_spec_t *t = plan->inputs[self];
  const xr_value_t *dv = xr_op_arg(op, 2, "dim");
  bool flat = !dv || dv->kind == XR_VALUE_NULL || t->rank == 0;
  int dim = t->rank - 1;
  if (!flat &&
      (st = xr_plan_wrap_dim(plan, dv->kind == XR_VALUE_INT ? dv->as.i : 0, t->rank, &dim)))
    return st;
  if (t->rank + 1 > XR_MAX_RANK) return xr_plan_error(plan, "self has too many dimensions");
  if (rv && rv->kind == XR_VALUE_TENSOR) {
    int index = -1;
    if ((st = xr_arg_tensor(plan, 1, "repeats", true, &index))) return st;
    return analyze_repeat_tensor(plan, self, index, flat, dim, out_problem);
  }
  if (!rv || rv->kind != XR_VALUE_INT) return xr_plan_error(plan, "repeats: expected an int");
  int64_t repeats = rv->as.i;
  if (repeats < 0) return xr_plan_error(plan, "repeats: negative (%lld)", (long long)repeats);
  int rank = t->rank > 0 ? t->rank + 1 : 1;
  int64_t shape[XR_MAX_RANK], a_strides[XR_MAX_RANK] = {0}, out_strides[XR_MAX_RANK];
  for (int d = 0, k = 0; d < t->rank; d++) {
    shape[k] = t->shape[d];
    a_strides[k++] = t->strides[d];
    if (d == dim) shape[k] = repeats, a_strides[k++] = 0;
  }
  if (t->rank == 0) shape[0] = repeats;
  xr_contiguous_strides(rank, shape, out_strides);
  int64_t result[XR_MAX_RANK], n = 1;
  for (int d = 0; d < rank; d++) n *= shape[d];
  int result_rank = flat ? 1 : t->rank;
  if (flat)
    result[0] = n;
  else
    for (int d = 0; d < t->rank; d++) result[d] = t->shape[d] * (d == dim ? repeats : 1);
  xr_ew_problem_t *p = NULL;
  if ((st = new_problem(plan, 1, &p))) return st;
  *out_problem = p;
  set_result(plan, t->dtype, result_rank, result);
  copy_step(plan, &p->steps[0], self, rank, shape, a_strides, 0, out_strides, 0);
  return XR_OK;
}

/* tril/triu(self, diagonal=0), in place with a trailing `_`, or into out=. */
static xr_status_t analyze_tri(xr_op_plan_t *plan, xr_ew_problem_t **out_problem) {
  const char *base = strstr(plan->op->name, "::") + 2;
  xr_status_t st;
  int self = -1;
  int64_t diagonal = 0;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self)) ||
      (st = xr_arg_int(plan->op, 1, "diagonal", false, &diagonal)))
    return st;
  const xr_tensor_spec_t *t = plan->inputs[self];
  if (t->rank < 2)
    return xr_plan_error(plan, "self: expected at least 2 dimensions, got %d", t->rank);
  xr_ew_problem_t *p = NULL;
  if ((st = new_problem(plan, 1, &p))) return st;
  *out_problem = p;
  int out = base[4] == '_' ? self : written_out(plan, t->rank, t->shape);
  set_result(plan, t->dtype, t->rank, t->shape);
  int64_t strides[XR_MAX_RANK];
  xr_contiguous_strides(t->rank, t->shape, strides);
  xr_ew_step_t *s = &p->steps[0];
  copy_step(plan, s, self, t->rank, t->shape, t->strides, 0, strides, 0);
  if (out >= 0) {
    if (plan->inputs[out]->dtype != t->dtype)
      return xr_plan_error(plan, "out: dtype %s differs from self's %s",
                           xr_dtype_name(plan->inputs[out]->dtype), xr_dtype_name(t->dtype));
    plan->return_count = 0;
    xr_ew_set_operand(plan, out, t->rank, t->shape, &s->out);
  }
  s->op = base[3] == 'l' ? XR_EW_TRIL : XR_EW_TRIU;
  s->tri_rows = t->shape[t->rank - 2];
  s->tri_cols = t->shape[t->rank - 1];
  s->diagonal = diagonal;
  return XR_OK;
}

/* split_copy / split_with_sizes_copy / unbind_copy: one copy per piece along dim. */
static xr_status_t analyze_split(xr_op_plan_t *plan, xr_ew_problem_t **out_problem) {
  const xr_op_t *op = plan->op;
  const char *base = strstr(op->name, "::") + 2;
  xr_status_t st;
  int self = -1;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self))) return st;
  const xr_tensor_spec_t *t = plan->inputs[self];
  bool unbind = !strncmp(base, "unbind", 6), sizes = strstr(base, "with_sizes") != NULL;
  int64_t dim_arg = 0;
  if ((st = xr_arg_int(op, unbind ? 1 : 2, "dim", false, &dim_arg))) return st;
  int dim = 0;
  if (t->rank == 0) return xr_plan_error(plan, "self: expected at least 1 dimension");
  if ((st = xr_plan_wrap_dim(plan, dim_arg, t->rank, &dim))) return st;
  const int64_t extent = t->shape[dim];
  enum { MAX_PIECES = 1024 };
  static _Thread_local int64_t len[MAX_PIECES];
  int n = 0;
  if (unbind) {
    if (extent > MAX_PIECES) return xr_error(XR_UNIMPLEMENTED, "%s: more than %d pieces", op->name, MAX_PIECES);
    for (n = 0; n < extent; n++) len[n] = 1;
  } else if (sizes) {
    if ((st = xr_arg_int_list(op, 1, "split_sizes", true, len, MAX_PIECES, &n))) return st;
    int64_t sum = 0;
    for (int k = 0; k < n; k++) {
      if (len[k] < 0) return xr_plan_error(plan, "split_sizes[%d]: negative", k);
      sum += len[k];
    }
    if (sum != extent)
      return xr_plan_error(plan, "split_sizes: add up to %lld, dimension %d has %lld",
                           (long long)sum, dim, (long long)extent);
  } else {
    int64_t size = 0;
    if ((st = xr_arg_int(op, 1, "split_size", true, &size))) return st;
    if (size <= 0 && extent > 0) return xr_plan_error(plan, "split_size: must be positive");
    for (int64_t at = 0; at < extent || (n == 0 && extent == 0); at += size > 0 ? size : 1) {
      if (n == MAX_PIECES) return xr_error(XR_UNIMPLEMENTED, "%s: more than %d pieces", op->name, MAX_PIECES);
      len[n++] = extent - at < size ? extent - at : size;
    }
  }
  const xr_value_t *outs = xr_op_arg(op, -1, "out");
  bool listed = outs && outs->kind == XR_VALUE_LIST;
  if (listed && (int)outs->as.list.count != n)
    return xr_plan_error(plan, "out: %zu tensors for %d pieces", outs->as.list.count, n);
  if (!listed && n > XR_MAX_RETURNS)
    return xr_error(XR_UNIMPLEMENTED, "%s: %d pieces, and at most %d returned tensors (an out= "
                    "list takes any number)", op->name, n, XR_MAX_RETURNS);
  xr_ew_problem_t *p = NULL;
  if ((st = new_problem(plan, (size_t)n, &p))) return st;
  *out_problem = p;
  plan->return_count = listed ? 0 : (size_t)n;
  int64_t start = 0;
  for (int k = 0; k < n; k++) {
    int64_t shape[XR_MAX_RANK], strides[XR_MAX_RANK] = {0};
    int rank = t->rank;
    memcpy(shape, t->shape, sizeof(int64_t) * (size_t)rank);
    shape[dim] = len[k];
    int64_t a_offset = start * t->strides[dim];
    start += len[k];
    xr_ew_step_t *s = &p->steps[k];
    if (listed) {
      const xr_value_t *v = &outs->as.list.items[k];
      if (v->kind != XR_VALUE_TENSOR) return xr_plan_error(plan, "out[%d]: expected a tensor", k);
      int o = xr_plan_input_index(plan, v->as.tensor);
      const xr_tensor_spec_t *ot = plan->inputs[o];
      bool same = ot->dtype == t->dtype && ot->rank == (unbind ? rank - 1 : rank);
      for (int d = 0, e = 0; same && d < rank; d++) {
        if (unbind && d == dim) continue;
        same = ot->shape[e++] == shape[d];
      }
      if (!same) return xr_plan_error(plan, "out[%d]: shape or dtype differs from piece %d", k, k);
      copy_step(plan, s, self, rank, shape, t->strides, a_offset, strides, 0);
      /* the out tensor's strides, with a 0-stride dim where unbind dropped one */
      for (int d = 0, e = 0; d < rank; d++)
        s->out.strides[d] = unbind && d == dim ? 0 : ot->strides[e++];
      s->out.index = o;
      s->out.dtype = ot->dtype;
      continue;
    }
    int result_rank = unbind ? rank - 1 : rank;
    int64_t result_shape[XR_MAX_RANK];
    for (int d = 0, e = 0; d < rank; d++)
      if (!(unbind && d == dim)) result_shape[e++] = shape[d];
    xr_desc_set(&plan->returns[k], t->dtype, result_rank, result_shape);
    xr_contiguous_strides(rank, shape, strides);
    copy_step(plan, s, self, rank, shape, t->strides, a_offset, strides, 0);
    s->out.index = (int)plan->input_count + k;
  }
  return XR_OK;
}

xr_status_t xr_ew_analyze_movement(xr_op_plan_t *plan, xr_ew_problem_t **out_problem) {
  const char *base = strstr(plan->op->name, "::") + 2;
  if (!strcmp(base, "arange")) return analyze_arange(plan, out_problem);
  if (!strcmp(base, "linspace")) return analyze_linspace(plan, out_problem);
  if (strstr(base, "full") || strstr(base, "zeros") || strstr(base, "ones"))
    return analyze_fill_new(plan, out_problem);
  if (!strcmp(base, "repeat")) return analyze_repeat(plan, out_problem);
  if (!strcmp(base, "repeat_interleave")) return analyze_repeat_interleave(plan, out_problem);
  if (!strcmp(base, "constant_pad_nd")) return analyze_pad(plan, out_problem);
  if (!strcmp(base, "stack")) return analyze_stack(plan, out_problem);
  if (!strncmp(base, "tri", 3)) return analyze_tri(plan, out_problem);
  if (strstr(base, "split") || !strcmp(base, "unbind_copy")) return analyze_split(plan, out_problem);
  return analyze_self_copy(plan, out_problem); /* clone, contiguous, flip, roll, narrow_copy */
}
