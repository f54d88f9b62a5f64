/* The softmax family: aten::_softmax(self, dim, half_to_float) and aten::softmax(self, dim,
 * dtype=None). out = exp(x - max) / sum(exp(x - max)) along `dim`, every other dim indexing a
 * row. half_to_float turns an fp16/bf16 input into an fp32 output; softmax's dtype casts the
 * input to that dtype first and returns it. The reference works in double and rounds once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/norm.h"

static const char *const softmax_ops[] = {"aten::_softmax", "aten::softmax", NULL};

static bool is_float(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16 || d == XR_DTYPE_F64;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  const xr_op_t *op = plan->op;
  xr_rows_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", op->name);
  plan->problem = p;
  for (int k = 0; k < XR_ROWS_OPERANDS; k++) p->operand[k].index = -1;
  int x = -1;
  int64_t dim = 0;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &x)) || (st = xr_arg_int(op, 1, "dim", true, &dim)))
    return st;
  if (x < 0) return xr_plan_error(plan, "self: tensor argument is not bound");
  const xr_tensor_spec_t *in = plan->inputs[x];
  if (!is_float(in->dtype))
    return xr_plan_error(plan, "self: expected a float tensor, got %s", xr_dtype_name(in->dtype));
  xr_dtype_t out_dtype = in->dtype;
  if (!strcmp(op->name, "aten::_softmax")) {
    bool half_to_float = false;
    if ((st = xr_arg_bool(op, 2, "half_to_float", false, &half_to_float))) return st;
    if (half_to_float) {
      if (in->dtype != XR_DTYPE_F16 && in->dtype != XR_DTYPE_BF16)
        return xr_plan_error(plan, "half_to_float: expected a Half or BFloat16 input, got %s",
                             xr_dtype_name(in->dtype));
      out_dtype = XR_DTYPE_F32;
    }
  } else {
    const xr_value_t *v = xr_op_arg(op, 2, "dtype");
    if (v && v->kind == XR_VALUE_INT) out_dtype = xr_dtype_from_torch_code(v->as.i);
    else if (v && v->kind == XR_VALUE_STRING) out_dtype = xr_dtype_parse(v->as.s);
    else if (v && v->kind != XR_VALUE_NULL)
      return xr_plan_error(plan, "dtype: expected a ScalarType code or a dtype name");
    if (!is_float(out_dtype)) return xr_plan_error(plan, "dtype: expected a float dtype");
  }
  int rank = in->rank;
  int64_t r = rank > 0 ? rank : 1; /* a 0-d tensor takes dim 0 or -1 */
  if (dim < -r || dim >= r)
    return xr_plan_error(plan, "dim: %lld is out of range for a %d-D tensor", (long long)dim, rank);
  int axis = (int)(dim < 0 ? dim + r : dim);

  p->op = XR_ROWS_SOFTMAX;
  p->inner_rank = 1;
  p->inner_shape[0] = rank > 0 ? in->shape[axis] : 1;
  int64_t out_strides[XR_MAX_RANK], x_outer[XR_MAX_RANK], out_outer[XR_MAX_RANK];
  xr_contiguous_strides(rank, in->shape, out_strides);
  p->outer_rank = 0;
  for (int d = 0; d < rank; d++) {
    if (d == axis) continue;
    x_outer[p->outer_rank] = in->strides[d];
    out_outer[p->outer_rank] = out_strides[d];
    p->outer_shape[p->outer_rank++] = in->shape[d];
  }
  int64_t x_inner = rank > 0 ? in->strides[axis] : 1, out_inner = rank > 0 ? out_strides[axis] : 1;
  xr_rows_set_operand(p, XR_ROWS_X, x, in->dtype, x_outer, &x_inner);
  xr_rows_set_operand(p, XR_ROWS_OUT, (int)plan->input_count, out_dtype, out_outer, &out_inner);
  xr_desc_set(&plan->returns[0], out_dtype, rank, in->shape);
  plan->return_count = 1;
  xr_rows_simplify(p);
  xr_rows_costs(p, &plan->flops, &plan->bytes);
  return XR_OK;
}

/* The input as softmax sees it: cast to the output dtype first (aten::softmax's dtype). A cast
 * to a wider dtype is exact; to a narrower one it rounds. */
static double cast_to(xr_dtype_t dtype, double v) {
  double slot = 0;
  xr_store_element(&slot, dtype, 0, v);
  return xr_load_element(&slot, dtype, 0);
}

static void ref_rows(void *ctx, size_t begin, size_t end) {
  const xr_rows_ref_t *s = ctx;
  const xr_rows_problem_t *p = s->p;
  xr_dtype_t out = p->operand[XR_ROWS_OUT].dtype;
  for (int64_t r = (int64_t)begin; r < (int64_t)end; r++) {
    double max = -INFINITY, sum = 0;
    for (int64_t i = 0; i < p->n; i++) max = fmax(max, cast_to(out, xr_rows_ref_load(s, XR_ROWS_X, r, i)));
    for (int64_t i = 0; i < p->n; i++) sum += exp(cast_to(out, xr_rows_ref_load(s, XR_ROWS_X, r, i)) - max);
    for (int64_t i = 0; i < p->n; i++)
      xr_rows_ref_store(s, XR_ROWS_OUT, r, i,
                        exp(cast_to(out, xr_rows_ref_load(s, XR_ROWS_X, r, i)) - max) / sum);
  }
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  xr_rows_ref_t *s = state;
  if (s->p->rows == 0 || s->p->n == 0) return XR_OK;
  return xr_hal_stream_enqueue_parallel(stream, (size_t)s->p->rows, 1, ref_rows, s);
}

static const xr_kernel_impl_t ref_softmax = {
    .name = "ref.softmax",
    .driver = "cpu",
    .reference = true,
    .prepare = xr_rows_ref_prepare,
    .enqueue = ref_enqueue,
    .release = free,
};

static const xr_kernel_impl_t *const softmax_impls[] = {
    &xr_cpu_softmax_impl,
    &xr_opencl_softmax_impl,
    &xr_gpu_softmax_impl,
    &ref_softmax,
    NULL,
};

const xr_op_family_t xr_family_softmax = {
    .name = "softmax",
    .op_names = softmax_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = softmax_impls,
};

