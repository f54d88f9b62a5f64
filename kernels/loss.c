/* The loss family (kernels/loss.h has the geometry and the semantics): planning
 * aten::mse_loss(self, target, reduction=1, *, out) and
 * aten::mse_loss_backward(grad_output, self, target, reduction, *, grad_input) by schema name or
 * position, and the plain-C reference, which computes every element in double and, reduced,
 * sums them in double in row-major order before rounding once. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/loss.h"

static const char *const loss_ops[] = {"aten::mse_loss", "aten::mse_loss_backward", NULL};

static bool loss_dtype(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F64 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16;
}

/* torch.promote_types over the floating dtypes: f64 over f32 over f16 and bf16; f16 with bf16
 * gives f32. */
static xr_dtype_t promote(xr_dtype_t a, xr_dtype_t b) {
  if (a == b) return a;
  if (a == XR_DTYPE_F64 || b == XR_DTYPE_F64) return XR_DTYPE_F64;
  return XR_DTYPE_F32;
}

static void shape_text(char *buf, size_t size, int rank, const int64_t *shape) {
  size_t n = (size_t)snprintf(buf, size, "[");
  for (int d = 0; d < rank && n < size; d++)
    n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? ", " : "", (long long)shape[d]);
  if (n < size) snprintf(buf + n, size - n, "]");
}

/* The `reduction` argument: an int (torch's codes) or, from hand-written bundles, "none",
 * "mean" or "sum". */
static xr_status_t read_reduction(const xr_op_plan_t *plan, int position, bool required,
                                  xr_loss_reduction_t *out) {
  const xr_value_t *v = xr_op_arg(plan->op, position, "reduction");
  if (!v || v->kind == XR_VALUE_NULL) {
    if (required)
      return xr_error(XR_INVALID_ARGUMENT, "%s: argument 'reduction' (position %d) is missing",
                      plan->op->name, position);
    *out = XR_LOSS_MEAN;
    return XR_OK;
  }
  int64_t code = -1;
  if (v->kind == XR_VALUE_INT) code = v->as.i;
  else if (v->kind == XR_VALUE_STRING)
    code = !strcmp(v->as.s, "none") ? 0 : !strcmp(v->as.s, "mean") ? 1 : !strcmp(v->as.s, "sum") ? 2 : -2;
  else return xr_plan_error(plan, "reduction: expected an int (0 none, 1 mean, 2 sum)");
  if (code == -2)
    return xr_plan_error(plan, "reduction: '%s' is not one of 'none', 'mean', 'sum'", v->as.s);
  if (code < 0 || code > 2)
    return xr_plan_error(plan, "reduction: %lld is not one of 0 (none), 1 (mean), 2 (sum)",
                         (long long)code);
  *out = (xr_loss_reduction_t)code;
  return XR_OK;
}

/* Operand `slot` (input `index`, called `name`) read over the problem's iteration shape: its
 * dims right-aligned, each equal to the shape's or 1 (broadcast, stride 0). */
static xr_status_t set_operand(xr_op_plan_t *plan, xr_loss_problem_t *p, int slot, int index,
                               const char *name) {
  const xr_tensor_spec_t *t = plan->inputs[index];
  xr_loss_operand_t *o = &p->in[slot];
  o->index = index;
  o->dtype = t->dtype;
  if (!loss_dtype(t->dtype))
    return xr_plan_error(plan, "%s: %s tensors are not supported (torch's %s takes floating "
                         "dtypes: float32, float64, float16, bfloat16)", name,
                         xr_dtype_name(t->dtype), plan->op->name + 6);
  bool fits = t->rank <= p->rank;
  for (int d = 0; fits && d < t->rank; d++) {
    int at = p->rank - t->rank + d;
    fits = t->shape[d] == p->shape[at] || t->shape[d] == 1;
  }
  if (!fits) {
    char want[160], got[160];
    shape_text(want, sizeof want, p->rank, p->shape);
    shape_text(got, sizeof got, t->rank, t->shape);
    return xr_plan_error(plan, "%s: shape %s does not broadcast to %s", name, got, want);
  }
  for (int d = 0; d < p->rank; d++) o->strides[d] = 0;
  for (int d = 0; d < t->rank; d++) {
    int at = p->rank - t->rank + d;
    o->strides[at] = t->shape[d] == p->shape[at] && p->shape[at] != 1 ? t->strides[d] : 0;
  }
  return XR_OK;
}

/* The broadcast shape of two specs into p->rank / p->shape, or an error naming `name_b`. */
static xr_status_t broadcast(xr_op_plan_t *plan, xr_loss_problem_t *p, const xr_tensor_spec_t *a,
                             const xr_tensor_spec_t *b, const char *name_b) {
  p->rank = a->rank > b->rank ? a->rank : b->rank;
  for (int d = 0; d < p->rank; d++) {
    int da = d - (p->rank - a->rank), db = d - (p->rank - b->rank);
    int64_t sa = da >= 0 ? a->shape[da] : 1, sb = db >= 0 ? b->shape[db] : 1;
    if (sa != sb && sa != 1 && sb != 1) {
      char sa_text[160], sb_text[160];
      shape_text(sa_text, sizeof sa_text, a->rank, a->shape);
      shape_text(sb_text, sizeof sb_text, b->rank, b->shape);
      return xr_plan_error(plan, "%s: shape %s does not broadcast with self's %s", name_b,
                           sb_text, sa_text);
    }
    p->shape[d] = sa == 1 ? sb : sa;
  }
  return XR_OK;
}

/* The result: the out= tensor `out` (called `name`; its shape and dtype must be the result's)
 * or a new return tensor, contiguous. */
static xr_status_t set_result(xr_op_plan_t *plan, xr_loss_problem_t *p, xr_dtype_t dtype, int out,
                              const char *name) {
  bool reduced = xr_loss_reduced(p);
  int rank = reduced ? 0 : p->rank;
  p->out.dtype = dtype;
  if (out >= 0) {
    const xr_tensor_spec_t *t = plan->inputs[out];
    bool same = t->rank == rank;
    for (int d = 0; same && d < rank; d++) same = t->shape[d] == p->shape[d];
    if (!same) {
      char want[160], got[160];
      shape_text(want, sizeof want, rank, p->shape);
      shape_text(got, sizeof got, t->rank, t->shape);
      return xr_plan_error(plan, "%s: expected the result's shape %s, got %s", name, want, got);
    }
    if (t->dtype != dtype)
      return xr_plan_error(plan, "%s: expected a %s tensor, got %s", name, xr_dtype_name(dtype),
                           xr_dtype_name(t->dtype));
    for (int d = 0; d < rank; d++)
      if (t->shape[d] > 1 && t->strides[d] == 0)
        return xr_plan_error(plan, "%s: an expanded (stride 0) tensor cannot be written", name);
    p->out.index = out;
    for (int d = 0; d < rank; d++) p->out.strides[d] = t->strides[d];
    xr_plan_mark_written(plan, out);
    return XR_OK;
  }
  p->out.index = (int)plan->input_count;
  plan->return_count = 1;
  xr_desc_set(&plan->returns[0], dtype, rank, p->shape);
  if (!reduced) xr_contiguous_strides(rank, p->shape, p->out.strides);
  return XR_OK;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  xr_loss_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", plan->op->name);
  plan->problem = p;
  for (int s = 0; s < XR_LOSS_OPERANDS; s++) p->in[s].index = -1;
  p->out.index = -1;
  p->backward = !strcmp(plan->op->name, "aten::mse_loss_backward");
  const int first = p->backward ? 1 : 0; /* self's position */
  int self = -1, target = -1, grad = -1, out = -1;
  const char *out_name = p->backward ? "grad_input" : "out";
  xr_status_t st;
  if ((p->backward && (st = xr_arg_tensor(plan, 0, "grad_output", true, &grad))) ||
      (st = xr_arg_tensor(plan, first, "self", true, &self)) ||
      (st = xr_arg_tensor(plan, first + 1, "target", true, &target)) ||
      (st = read_reduction(plan, first + 2, p->backward, &p->reduction)) ||
      (st = xr_arg_tensor(plan, -1, out_name, false, &out)))
    return st;
  const xr_tensor_spec_t *ts = plan->inputs[self], *tt = plan->inputs[target];
  xr_dtype_t dtype;
  if (p->backward) {
    /* grad_input has self's shape; the others broadcast to it */
    p->rank = ts->rank;
    for (int d = 0; d < ts->rank; d++) p->shape[d] = ts->shape[d];
    dtype = ts->dtype;
  } else {
    if ((st = broadcast(plan, p, ts, tt, "target"))) return st;
    dtype = promote(ts->dtype, tt->dtype);
  }
  if ((st = set_operand(plan, p, XR_LOSS_SELF, self, "self")) ||
      (st = set_operand(plan, p, XR_LOSS_TARGET, target, "target")) ||
      (p->backward && (st = set_operand(plan, p, XR_LOSS_GRAD, grad, "grad_output"))))
    return st;
  if (p->backward)
    for (int s = XR_LOSS_TARGET; s <= XR_LOSS_GRAD; s++)
      if (p->in[s].dtype != dtype)
        return xr_plan_error(plan, "%s: expected a %s tensor like self, got %s (torch requires "
                             "one dtype)", s == XR_LOSS_GRAD ? "grad_output" : "target",
                             xr_dtype_name(dtype), xr_dtype_name(p->in[s].dtype));
  p->numel = 1;
  for (int d = 0; d < p->rank; d++) p->numel *= p->shape[d];
  p->norm = p->backward && p->reduction == XR_LOSS_MEAN ? 2.0 / (double)p->numel : 2.0;
  if ((st = set_result(plan, p, dtype, out, out_name))) return st;
  /* FLOPs: subtract and square per element (none); + an add (sum, mean) and one divide (mean);
   * backward: subtract and two multiplies. Bytes: each operand's distinct elements, the
   * result's elements once. */
  double n = (double)p->numel;
  plan->flops = p->backward ? 3 * n : p->reduction == XR_LOSS_NONE ? 2 * n
                                    : p->reduction == XR_LOSS_SUM  ? 3 * n
                                                                   : 3 * n + 1;
  double bytes = 0;
  for (int s = 0; s < XR_LOSS_OPERANDS; s++)
    if (p->in[s].index >= 0)
      bytes += xr_spec_distinct_numel(plan->inputs[p->in[s].index]) *
               (double)xr_dtype_size(p->in[s].dtype);
  plan->bytes = bytes + (xr_loss_reduced(p) ? 1 : n) * (double)xr_dtype_size(dtype);
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* CPU reference                                                                               */

typedef struct ref_state {
  const xr_loss_problem_t *p;
  const void *in[XR_LOSS_OPERANDS];
  int64_t in_offset[XR_LOSS_OPERANDS];
  void *out;
  int64_t out_offset;
} ref_state_t;

/* Element `i` (row-major over the iteration shape) of operand `slot`, as double. */
static double ref_load(const ref_state_t *s, int slot, int64_t i) {
  const xr_loss_operand_t *o = &s->p->in[slot];
  return xr_load_element(s->in[slot], o->dtype, s->in_offset[slot] + xr_loss_offset(s->p, o->strides, i));
}

static void ref_elements(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_loss_problem_t *p = s->p;
  for (size_t e = begin; e < end; e++) {
    int64_t i = (int64_t)e;
    double d = ref_load(s, XR_LOSS_SELF, i) - ref_load(s, XR_LOSS_TARGET, i);
    double v = p->backward ? p->norm * d * ref_load(s, XR_LOSS_GRAD, i) : d * d;
    xr_store_element(s->out, p->out.dtype, s->out_offset + xr_loss_offset(p, p->out.strides, i), v);
  }
}

static void ref_reduce(void *ctx) {
  const ref_state_t *s = ctx;
  const xr_loss_problem_t *p = s->p;
  double sum = 0;
  for (int64_t i = 0; i < p->numel; i++) {
    double d = ref_load(s, XR_LOSS_SELF, i) - ref_load(s, XR_LOSS_TARGET, i);
    sum += d * d;
  }
  /* an empty mean is 0 / 0, NaN, as torch */
  xr_store_element(s->out, p->out.dtype, s->out_offset,
                   p->reduction == XR_LOSS_MEAN ? sum / (double)p->numel : sum);
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_loss_problem_t *p = plan->problem;
  ref_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  xr_status_t st = XR_OK;
  for (int k = 0; st == XR_OK && k < XR_LOSS_OPERANDS; k++) {
    if (p->in[k].index < 0) continue;
    void *base;
    st = xr_tensor_host(&tensors[p->in[k].index], &base);
    s->in[k] = base;
    s->in_offset[k] = tensors[p->in[k].index].offset;
  }
  if (st == XR_OK) st = xr_tensor_host(&tensors[p->out.index], &s->out);
  if (st != XR_OK) {
    free(s);
    return st;
  }
  s->out_offset = tensors[p->out.index].offset;
  *out_state = s;
  return XR_OK;
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  ref_state_t *s = state;
  if (xr_loss_reduced(s->p)) return xr_hal_stream_enqueue_host(stream, ref_reduce, s);
  if (s->p->numel == 0) return XR_OK;
  return xr_hal_stream_enqueue_parallel(stream, (size_t)s->p->numel, 4096, ref_elements, s);
}

static const xr_kernel_impl_t ref_loss = {
    .name = "ref.loss",
    .driver = "cpu",
    .reference = true,
    .prepare = ref_prepare,
    .enqueue = ref_enqueue,
    .release = free,
};

static const xr_kernel_impl_t *const loss_impls[] = {
    &xr_cpu_loss,
    &xr_opencl_loss,
    &xr_gpu_loss,
    &ref_loss,
    NULL,
};

const xr_op_family_t xr_family_loss = {
    .name = "loss",
    .op_names = loss_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = loss_impls,
};
