/* aten::argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor (int64).
 *
 * Each output element reduces a set of input elements (along `dim`, or the whole tensor when
 * dim is None) to the position of the first maximum, positions counted row-major over the
 * reduced dims. NaN counts as larger than every number (torch returns the first NaN). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/argmax.h"
#include "kernels/family.h"

static const char *const argmax_ops[] = {"aten::argmax", NULL};

static xr_status_t analyze(xr_op_plan_t *plan) {
  xr_argmax_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", plan->op->name);
  plan->problem = p;
  xr_status_t st;
  int self = -1;
  bool keepdim = false;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self)) ||
      (st = xr_arg_bool(plan->op, 2, "keepdim", false, &keepdim)))
    return st;
  const xr_tensor_spec_t *t = plan->inputs[self];
  p->self = self;
  p->dtype = t->dtype;
  const xr_value_t *dim_value = xr_op_arg(plan->op, 1, "dim");
  bool all = !dim_value || dim_value->kind == XR_VALUE_NULL;
  int64_t dim = 0;
  if (!all && (st = xr_arg_int(plan->op, 1, "dim", true, &dim))) return st;
  int r = t->rank > 0 ? t->rank : 1;
  if (!all && (dim < -r || dim >= r))
    return xr_plan_error(plan, "dim: %lld is out of range for a %d-D tensor", (long long)dim, t->rank);
  if (dim < 0) dim += r;
  int64_t out_shape[XR_MAX_RANK];
  int out_rank = 0;
  for (int d = 0; d < t->rank; d++) {
    bool reduced = all || d == dim;
    if (reduced) {
      p->red_shape[p->red_rank] = t->shape[d];
      p->red_strides[p->red_rank++] = t->strides[d];
      if (keepdim) out_shape[out_rank++] = 1;
    } else {
      p->out_shape[p->out_rank] = t->shape[d];
      p->in_strides[p->out_rank++] = t->strides[d];
      out_shape[out_rank++] = t->shape[d];
    }
  }
  p->red_numel = 1;
  for (int d = 0; d < p->red_rank; d++) p->red_numel *= p->red_shape[d];
  p->out_numel = 1;
  for (int d = 0; d < p->out_rank; d++) p->out_numel *= p->out_shape[d];
  if (p->red_numel == 0 && p->out_numel > 0)
    return xr_plan_error(plan, "self: argmax of an empty dimension is undefined");
  if (!xr_dtype_is_floating(t->dtype) && t->dtype != XR_DTYPE_BOOL &&
      xr_dtype_size(t->dtype) > 8)
    return xr_plan_error(plan, "self: unsupported dtype %s", xr_dtype_name(t->dtype));
  p->out = (int)plan->input_count;
  plan->return_count = 1;
  xr_desc_set(&plan->returns[0], XR_DTYPE_I64, out_rank, out_shape);
  plan->flops = (double)p->out_numel * (double)p->red_numel; /* one compare per element */
  /* The input's distinct elements read once (an expanded, stride-0 dim is one element of
   * memory), an int64 index written per result. */
  plan->bytes = xr_spec_distinct_numel(t) * (double)xr_dtype_size(t->dtype) +
                8.0 * (double)p->out_numel;
  return XR_OK;
}

int64_t xr_argmax_input_offset(const xr_argmax_problem_t *p, int64_t out_index) {
  int64_t off = 0;
  for (int d = p->out_rank - 1; d >= 0; d--) {
    off += (out_index % p->out_shape[d]) * p->in_strides[d];
    out_index /= p->out_shape[d];
  }
  return off;
}

int64_t xr_argmax_reduced_offset(const xr_argmax_problem_t *p, int64_t k) {
  int64_t off = 0;
  for (int d = p->red_rank - 1; d >= 0; d--) {
    off += (k % p->red_shape[d]) * p->red_strides[d];
    k /= p->red_shape[d];
  }
  return off;
}

/* ------------------------------------------------------------------------------------------ */
/* CPU reference                                                                               */

typedef struct ref_state {
  const xr_argmax_problem_t *p;
  const void *in;
  int64_t in_offset;
  int64_t *out;
} ref_state_t;

static void ref_rows(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_argmax_problem_t *p = s->p;
  for (size_t o = begin; o < end; o++) {
    int64_t base = s->in_offset + xr_argmax_input_offset(p, (int64_t)o), best_k = 0;
    double best = 0;
    for (int64_t k = 0; k < p->red_numel; k++) {
      double v = xr_load_element(s->in, p->dtype, base + xr_argmax_reduced_offset(p, k));
      if (k == 0 || (!isnan(best) && (isnan(v) || v > best))) best = v, best_k = k;
    }
    s->out[o] = best_k;
  }
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_argmax_problem_t *p = plan->problem;
  ref_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  void *in, *out;
  xr_status_t st;
  if ((st = xr_tensor_host(&tensors[p->self], &in)) || (st = xr_tensor_host(&tensors[p->out], &out))) {
    free(s);
    return st;
  }
  s->in = in;
  s->in_offset = tensors[p->self].offset;
  s->out = out;
  *out_state = s;
  return XR_OK;
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  ref_state_t *s = state;
  if (s->p->out_numel == 0) return XR_OK;
  return xr_hal_stream_enqueue_parallel(stream, (size_t)s->p->out_numel, 1, ref_rows, s);
}

static const xr_kernel_impl_t ref_argmax = {
    .name = "ref.argmax",
    .driver = "cpu",
    .reference = true,
    .prepare = ref_prepare,
    .enqueue = ref_enqueue,
    .release = free,
};

static const xr_kernel_impl_t *const argmax_impls[] = {
    &xr_cpu_argmax,
    &xr_opencl_argmax,
    &xr_gpu_argmax,
    &ref_argmax,
    NULL,
};

const xr_op_family_t xr_family_argmax = {
    .name = "argmax",
    .op_names = argmax_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = argmax_impls,
};

