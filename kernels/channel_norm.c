/* The channel_norm family: batch norm and group norm, statistics over channels and spatial
 * positions, as PyTorch's CUDA kernels compute them, with a plain-C reference.
 *   native_batch_norm / _native_batch_norm_legit / cudnn_batch_norm / miopen_batch_norm(input,
 *       weight?, bias?, running_mean?, running_var?, training, momentum, eps):
 *       training: mean and biased variance per channel over N and the spatial dims; out =
 *       (x - mean) * invstd * weight + bias; save_mean = mean, save_invstd = 1/sqrt(var + eps)
 *       (cudnn's and miopen's "save_var" hold the same); running_mean and running_var, when
 *       given, move by momentum towards mean and the unbiased variance (in place). Eval: the
 *       running statistics normalise, and the saved ones are returned empty, as on CUDA.
 *       cudnn_batch_norm also returns an empty uint8 reserve.
 *   _native_batch_norm_legit_no_training(input, weight?, bias?, running_mean, running_var,
 *       momentum, eps): eval. _native_batch_norm_legit.no_stats(input, weight?, bias?,
 *       training, momentum, eps): no running statistics.
 *   native_batch_norm_backward(grad_out, input, weight?, running_mean?, running_var?,
 *       save_mean?, save_invstd?, train, eps, output_mask) and cudnn_/miopen_batch_norm_backward
 *       (input, grad_output, weight, running_mean?, running_var?, save_mean, save_var, epsilon[,
 *       reserveSpace]), training form: grad_input = weight * invstd * (g - mean(g) - xhat *
 *       mean(g * xhat)), grad_weight = sum(g * xhat), grad_bias = sum(g), xhat = (x - mean) *
 *       invstd; eval form (train false): grad_input = g * weight * invstd of the running var.
 *   native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) -> (out, mean, rstd): per
 *       sample and group of C / group channels; mean and rstd [N, group] in the input's dtype.
 *       aiter::_groupnorm_run(input, num_groups, weight, bias, eps) -> out, and its newer form
 *       (y, workspace, input, num_groups, weight, bias, eps) writing y, compute the same.
 *   native_group_norm_backward(grad_out, input, mean, rstd, weight?, N, C, HxW, group,
 *       output_mask): grad_input = rstd * (w * g - mean(w * g) - xhat * mean(w * g * xhat))
 *       over the group, grad_weight = sum(g * xhat), grad_bias = sum(g) over n and spatial.
 * Saved statistics are fp32 for fp16, bf16 and fp32 inputs (fp64 for fp64). Inputs are [N, C,
 * ...] of rank 2 to 5, any strides; results take the input's memory format. The reference sums
 * in double; cpu.channel_norm (kernels/cpu/channel_norm_cpu.c, fp32) runs every op on the cpu,
 * opencl.channel_norm and gpu.channel_norm (kernels/vision_device.c) on OpenCL, CUDA and HIP
 * devices. */
#include "kernels/channel_norm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/initializer.h"

static const char *const cn_ops[] = {
    "aten::native_batch_norm",
    "aten::_native_batch_norm_legit",
    "aten::_native_batch_norm_legit_no_training",
    "aten::cudnn_batch_norm",
    "aten::miopen_batch_norm",
    "aten::native_batch_norm_backward",
    "aten::cudnn_batch_norm_backward",
    "aten::miopen_batch_norm_backward",
    "aten::native_group_norm",
    "aten::native_group_norm_backward",
    "aiter::_groupnorm_run",
    NULL,
};

static bool is_float(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16 || d == XR_DTYPE_F64;
}

static void absent(xr_view5_t *v) {
  memset(v, 0, sizeof *v), v->index = -1;
}

/* [N, C, spatial...] (rank 2..5) as n, c, d, h, w. */
static void activation(xr_view5_t *v, int index, xr_dtype_t dtype, int rank, const int64_t *shape,
                       const int64_t *strides) {
  v->index = index;
  v->dtype = dtype;
  for (int d = 0; d < 5; d++) v->shape[d] = 1, v->strides[d] = 0;
  v->shape[0] = shape[0], v->strides[0] = strides[0];
  v->shape[1] = shape[1], v->strides[1] = strides[1];
  for (int d = 2; d < rank; d++)
    v->shape[5 - rank + d] = shape[d], v->strides[5 - rank + d] = strides[d];
}

static void vector_view(xr_view5_t *v, int index, xr_dtype_t dtype, int64_t n, int64_t stride) {
  absent(v);
  v->index = index;
  v->dtype = dtype;
  for (int d = 0; d < 5; d++) v->shape[d] = 1;
  v->shape[1] = n;
  v->strides[1] = stride;
}

/* Return k like input x (shape and memory format). */
static void like_input(xr_op_plan_t *plan, int k, const xr_tensor_spec_t *x, xr_view5_t *v) {
  int64_t strides[XR_MAX_RANK];
  xr_desc_set_format(&plan->returns[k], x->dtype, x->rank, x->shape, xr_spec_channels_last(x),
                     strides);
  activation(v, (int)plan->input_count + k, x->dtype, x->rank, x->shape, strides);
}

/* Return k a vector of n elements (0: empty, and no view). */
static void vector_return(xr_op_plan_t *plan, int k, xr_dtype_t dtype, int64_t n, xr_view5_t *v) {
  xr_desc_set(&plan->returns[k], dtype, 1, &n);
  if (n)
    vector_view(v, (int)plan->input_count + k, dtype, n, 1);
  else
    absent(v);
}

static xr_dtype_t stats_dtype(xr_dtype_t x) {
  return x == XR_DTYPE_F64 ? XR_DTYPE_F64 : XR_DTYPE_F32;
}

/* A per-channel tensor argument: absent, or [C] of a float dtype. */
static xr_status_t channel_arg(xr_op_plan_t *plan, int position, const char *name, int64_t c,
                               int slot) {
  xr_cn_problem_t *p = plan->problem;
  int index = -1;
  xr_status_t st = xr_arg_tensor(plan, position, name, false, &index);
  if (st != XR_OK) return st;
  if (index < 0) return absent(&p->v[slot]), XR_OK;
  const xr_tensor_spec_t *t = plan->inputs[index];
  if (t->rank != 1 || (t->shape[0] != c && t->shape[0] != 0) || !is_float(t->dtype))
    return xr_plan_error(plan, "%s: expected a float [%lld], got %d-D %s", name, (long long)c,
                         t->rank, xr_dtype_name(t->dtype));
  if (t->shape[0] == 0) return absent(&p->v[slot]), XR_OK; /* an empty saved statistic */
  vector_view(&p->v[slot], index, t->dtype, c, t->strides[0]);
  return XR_OK;
}

static xr_status_t analyze_batch(xr_op_plan_t *plan, xr_cn_problem_t *p) {
  const xr_op_t *op = plan->op;
  bool cudnn = strstr(op->name, "cudnn_") || strstr(op->name, "miopen_");
  bool no_training = !strcmp(op->name, "aten::_native_batch_norm_legit_no_training");
  /* _native_batch_norm_legit.no_stats(input, weight?, bias?, training, momentum, eps): no
   * running statistics, the rest of the arguments two places earlier */
  bool no_stats = !strcmp(op->name, "aten::_native_batch_norm_legit") && op->arg_count == 6;
  int shift = no_training ? -1 : no_stats ? -2 : 0;
  int x_index;
  xr_status_t st = xr_arg_tensor(plan, 0, "input", true, &x_index);
  if (st != XR_OK) return st;
  const xr_tensor_spec_t *x = plan->inputs[x_index];
  if (x->rank < 2 || x->rank > 5 || !is_float(x->dtype))
    return xr_plan_error(plan, "input: expected a float tensor of rank 2 to 5, got %d-D %s",
                         x->rank, xr_dtype_name(x->dtype));
  p->c = x->shape[1];
  activation(&p->v[XR_CN_X], x_index, x->dtype, x->rank, x->shape, x->strides);
  if ((st = channel_arg(plan, 1, "weight", p->c, XR_CN_WEIGHT)) ||
      (st = channel_arg(plan, 2, "bias", p->c, XR_CN_BIAS)))
    return st;
  absent(&p->v[XR_CN_RMEAN]), absent(&p->v[XR_CN_RVAR]);
  if (!no_stats && ((st = channel_arg(plan, 3, "running_mean", p->c, XR_CN_RMEAN)) ||
                    (st = channel_arg(plan, 4, "running_var", p->c, XR_CN_RVAR))))
    return st;
  p->training = !no_training;
  if (!no_training && (st = xr_arg_bool(op, 5 + shift, "training", true, &p->training))) return st;
  if ((st = xr_arg_double(op, 6 + shift, cudnn ? "exponential_average_factor" : "momentum", true,
                          &p->momentum)) ||
      (st = xr_arg_double(op, 7 + shift, cudnn ? "epsilon" : "eps", true, &p->eps)))
    return st;
  if (!p->training && (p->v[XR_CN_RMEAN].index < 0 || p->v[XR_CN_RVAR].index < 0))
    return xr_plan_error(plan, "running_mean: evaluation needs the running statistics");
  xr_plan_mark_written(plan, p->v[XR_CN_RMEAN].index);
  xr_plan_mark_written(plan, p->v[XR_CN_RVAR].index);
  bool reserve = !strcmp(op->name, "aten::cudnn_batch_norm");
  plan->return_count = reserve ? 4 : 3;
  like_input(plan, 0, x, &p->v[XR_CN_OUT]);
  int64_t saved = p->training ? p->c : 0;
  vector_return(plan, 1, stats_dtype(x->dtype), saved, &p->v[XR_CN_OUT_MEAN]);
  vector_return(plan, 2, stats_dtype(x->dtype), saved, &p->v[XR_CN_OUT_INV]);
  if (reserve) {
    int64_t zero = 0;
    xr_desc_set(&plan->returns[3], XR_DTYPE_U8, 1, &zero);
  }
  return XR_OK;
}

static xr_status_t output_mask(const xr_op_plan_t *plan, int position, bool *mask) {
  const xr_value_t *v = xr_op_arg(plan->op, position, "output_mask");
  if (!v) return xr_plan_error(plan, "argument 'output_mask' (position %d) is missing", position);
  if (v->kind != XR_VALUE_LIST || v->as.list.count != 3)
    return xr_plan_error(plan, "output_mask: expected a list of three bools");
  for (int k = 0; k < 3; k++) {
    const xr_value_t *b = &v->as.list.items[k];
    mask[k] = b->kind == XR_VALUE_BOOL ? b->as.b : b->kind == XR_VALUE_INT && b->as.i != 0;
  }
  return XR_OK;
}

/* A backward's (grad_input, grad_weight, grad_bias), each empty where output_mask says so;
 * the parameter gradients take the weight's dtype. */
static xr_status_t backward_returns(xr_op_plan_t *plan, xr_cn_problem_t *p,
                                    const xr_tensor_spec_t *x, const bool *mask) {
  plan->return_count = 3;
  if (mask[0])
    like_input(plan, 0, x, &p->v[XR_CN_OUT]);
  else
    vector_return(plan, 0, x->dtype, 0, &p->v[XR_CN_OUT]);
  xr_dtype_t wd = p->v[XR_CN_WEIGHT].index >= 0 ? p->v[XR_CN_WEIGHT].dtype : x->dtype;
  vector_return(plan, 1, wd, mask[1] ? p->c : 0, &p->v[XR_CN_GRAD_W]);
  vector_return(plan, 2, wd, mask[2] ? p->c : 0, &p->v[XR_CN_GRAD_B]);
  return XR_OK;
}

static xr_status_t analyze_batch_backward(xr_op_plan_t *plan, xr_cn_problem_t *p) {
  const xr_op_t *op = plan->op;
  bool native = !strcmp(op->name, "aten::native_batch_norm_backward");
  int x_index, g_index;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, native ? 1 : 0, "input", true, &x_index)) ||
      (st = xr_arg_tensor(plan, native ? 0 : 1, native ? "grad_out" : "grad_output", true,
                          &g_index)))
    return st;
  const xr_tensor_spec_t *x = plan->inputs[x_index], *g = plan->inputs[g_index];
  if (x->rank < 2 || x->rank > 5 || !is_float(x->dtype))
    return xr_plan_error(plan, "input: expected a float tensor of rank 2 to 5, got %d-D %s",
                         x->rank, xr_dtype_name(x->dtype));
  if (g->rank != x->rank || memcmp(g->shape, x->shape, sizeof(int64_t) * (size_t)x->rank))
    return xr_plan_error(plan, "grad_output: expected the input's shape");
  p->c = x->shape[1];
  activation(&p->v[XR_CN_X], x_index, x->dtype, x->rank, x->shape, x->strides);
  activation(&p->v[XR_CN_GRAD], g_index, g->dtype, g->rank, g->shape, g->strides);
  absent(&p->v[XR_CN_BIAS]);
  if ((st = channel_arg(plan, 2, "weight", p->c, XR_CN_WEIGHT)) ||
      (st = channel_arg(plan, 3, "running_mean", p->c, XR_CN_RMEAN)) ||
      (st = channel_arg(plan, 4, "running_var", p->c, XR_CN_RVAR)) ||
      (st = channel_arg(plan, 5, "save_mean", p->c, XR_CN_SMEAN)) ||
      (st = channel_arg(plan, 6, native ? "save_invstd" : "save_var", p->c, XR_CN_SINV)))
    return st;
  bool mask[3] = {true, true, true};
  p->training = true;
  if (native &&
      ((st = xr_arg_bool(op, 7, "train", true, &p->training)) ||
       (st = xr_arg_double(op, 8, "eps", true, &p->eps)) || (st = output_mask(plan, 9, mask))))
    return st;
  if (!native && (st = xr_arg_double(op, 7, "epsilon", true, &p->eps))) return st;
  if (p->training && (p->v[XR_CN_SMEAN].index < 0 || p->v[XR_CN_SINV].index < 0))
    return xr_plan_error(plan, "save_mean: the training form needs the saved statistics");
  if (!p->training && (p->v[XR_CN_RMEAN].index < 0 || p->v[XR_CN_RVAR].index < 0))
    return xr_plan_error(plan, "running_mean: the eval form needs the running statistics");
  return backward_returns(plan, p, x, mask);
}

/* Group norm's input (binding x_index) against the traced N, C, HxW (any < 0: not traced). */
static xr_status_t group_input(xr_op_plan_t *plan, xr_cn_problem_t *p, int x_index, int64_t n,
                               int64_t c, int64_t hxw) {
  const xr_tensor_spec_t *x = plan->inputs[x_index];
  if (x->rank < 2 || x->rank > 5 || !is_float(x->dtype))
    return xr_plan_error(plan, "input: expected a float tensor of rank 2 to 5, got %d-D %s",
                         x->rank, xr_dtype_name(x->dtype));
  int64_t spatial = 1;
  for (int d = 2; d < x->rank; d++) spatial *= x->shape[d];
  if ((n >= 0 && x->shape[0] != n) || (c >= 0 && x->shape[1] != c) || (hxw >= 0 && spatial != hxw))
    return xr_plan_error(plan, "N: N %lld, C %lld, HxW %lld do not describe the input",
                         (long long)n, (long long)c, (long long)hxw);
  p->c = x->shape[1];
  if (p->groups < 1 || p->c % p->groups != 0)
    return xr_plan_error(plan, "group: %lld does not divide the %lld channels",
                         (long long)p->groups, (long long)p->c);
  activation(&p->v[XR_CN_X], x_index, x->dtype, x->rank, x->shape, x->strides);
  return XR_OK;
}

/* A [N, groups] statistic: an input (k < 0: binding `index`) or return k. */
static void group_stat(xr_op_plan_t *plan, xr_cn_problem_t *p, int slot, int index, int k,
                       xr_dtype_t dtype) {
  int64_t shape[2] = {p->v[XR_CN_X].shape[0], p->groups}, strides[2] = {p->groups, 1};
  if (k >= 0) {
    xr_desc_set(&plan->returns[k], dtype, 2, shape);
    index = (int)plan->input_count + k;
  } else {
    memcpy(strides, plan->inputs[index]->strides, sizeof strides);
  }
  activation(&p->v[slot], index, dtype, 2, shape, strides);
}

/* native_group_norm(input, weight?, bias?, N, C, HxW, group, eps); aiter::_groupnorm_run(input,
 * num_groups, weight, bias, eps) -> out, or (y!, workspace, input, num_groups, weight, bias, eps)
 * writing y. */
static xr_status_t analyze_group(xr_op_plan_t *plan, xr_cn_problem_t *p) {
  const xr_op_t *op = plan->op;
  bool aiter = !strcmp(op->name, "aiter::_groupnorm_run");
  int in_place = aiter && op->arg_count + op->kwarg_count >= 7 ? 2 : 0; /* the y, workspace form */
  int x_index, y_index = -1;
  int64_t n = -1, c = -1, hxw = -1;
  xr_status_t st;
  if (aiter) {
    if ((in_place && (st = xr_arg_tensor(plan, 0, "y", true, &y_index))) ||
        (st = xr_arg_tensor(plan, in_place, "input", true, &x_index)) ||
        (st = xr_arg_int(op, in_place + 1, "num_groups", true, &p->groups)) ||
        (st = xr_arg_double(op, in_place + 4, "eps", true, &p->eps)) ||
        (st = group_input(plan, p, x_index, n, c, hxw)) ||
        (st = channel_arg(plan, in_place + 2, "weight", p->c, XR_CN_WEIGHT)) ||
        (st = channel_arg(plan, in_place + 3, "bias", p->c, XR_CN_BIAS)))
      return st;
  } else if ((st = xr_arg_tensor(plan, 0, "input", true, &x_index)) ||
             (st = xr_arg_int(op, 3, "N", true, &n)) || (st = xr_arg_int(op, 4, "C", true, &c)) ||
             (st = xr_arg_int(op, 5, "HxW", true, &hxw)) ||
             (st = xr_arg_int(op, 6, "group", true, &p->groups)) ||
             (st = xr_arg_double(op, 7, "eps", true, &p->eps)) ||
             (st = group_input(plan, p, x_index, n, c, hxw)) ||
             (st = channel_arg(plan, 1, "weight", p->c, XR_CN_WEIGHT)) ||
             (st = channel_arg(plan, 2, "bias", p->c, XR_CN_BIAS))) {
    return st;
  }
  const xr_tensor_spec_t *x = plan->inputs[x_index];
  if (y_index >= 0) {
    const xr_tensor_spec_t *y = plan->inputs[y_index];
    if (y->rank != x->rank || memcmp(y->shape, x->shape, sizeof(int64_t) * (size_t)x->rank) ||
        y->dtype != x->dtype)
      return xr_plan_error(plan, "y: expected the input's shape and dtype");
    xr_plan_mark_written(plan, y_index);
    activation(&p->v[XR_CN_OUT], y_index, y->dtype, y->rank, y->shape, y->strides);
    plan->return_count = 0;
    return XR_OK;
  }
  plan->return_count = aiter ? 1 : 3;
  like_input(plan, 0, x, &p->v[XR_CN_OUT]);
  if (!aiter) {
    group_stat(plan, p, XR_CN_OUT_MEAN, -1, 1, x->dtype);
    group_stat(plan, p, XR_CN_OUT_INV, -1, 2, x->dtype);
  }
  return XR_OK;
}

/* native_group_norm_backward(grad_out, input, mean, rstd, weight?, N, C, HxW, group,
 * output_mask) -> (grad_input, grad_weight, grad_bias). */
static xr_status_t analyze_group_backward(xr_op_plan_t *plan, xr_cn_problem_t *p) {
  const xr_op_t *op = plan->op;
  int g_index, x_index, mean_index, rstd_index;
  int64_t n, c, hxw;
  bool mask[3];
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "grad_out", true, &g_index)) ||
      (st = xr_arg_tensor(plan, 1, "input", true, &x_index)) ||
      (st = xr_arg_tensor(plan, 2, "mean", true, &mean_index)) ||
      (st = xr_arg_tensor(plan, 3, "rstd", true, &rstd_index)) ||
      (st = xr_arg_int(op, 5, "N", true, &n)) || (st = xr_arg_int(op, 6, "C", true, &c)) ||
      (st = xr_arg_int(op, 7, "HxW", true, &hxw)) ||
      (st = xr_arg_int(op, 8, "group", true, &p->groups)) || (st = output_mask(plan, 9, mask)) ||
      (st = group_input(plan, p, x_index, n, c, hxw)) ||
      (st = channel_arg(plan, 4, "weight", p->c, XR_CN_WEIGHT)))
    return st;
  const xr_tensor_spec_t *x = plan->inputs[x_index], *g = plan->inputs[g_index];
  if (g->rank != x->rank || memcmp(g->shape, x->shape, sizeof(int64_t) * (size_t)x->rank))
    return xr_plan_error(plan, "grad_out: expected the input's shape");
  activation(&p->v[XR_CN_GRAD], g_index, g->dtype, g->rank, g->shape, g->strides);
  const int stats[2] = {mean_index, rstd_index};
  for (int k = 0; k < 2; k++) {
    const xr_tensor_spec_t *t = plan->inputs[stats[k]];
    if (t->rank != 2 || t->shape[0] != x->shape[0] || t->shape[1] != p->groups ||
        !is_float(t->dtype))
      return xr_plan_error(plan, "%s: expected a float [%lld, %lld]", k ? "rstd" : "mean",
                           (long long)x->shape[0], (long long)p->groups);
    group_stat(plan, p, k ? XR_CN_SINV : XR_CN_SMEAN, stats[k], -1, t->dtype);
  }
  return backward_returns(plan, p, x, mask);
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  const char *name = plan->op->name;
  xr_cn_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", name);
  plan->problem = p;
  for (int k = 0; k < XR_CN_SLOTS; k++) absent(&p->v[k]);
  bool group = strstr(name, "group_norm") || strstr(name, "groupnorm");
  bool backward = strstr(name, "_backward") != NULL;
  p->kind = group ? (backward ? XR_CN_GROUP_BACKWARD : XR_CN_GROUP)
                  : (backward ? XR_CN_BATCH_BACKWARD : XR_CN_BATCH);
  xr_status_t st = p->kind == XR_CN_GROUP            ? analyze_group(plan, p)
                   : p->kind == XR_CN_GROUP_BACKWARD ? analyze_group_backward(plan, p)
                   : p->kind == XR_CN_BATCH_BACKWARD ? analyze_batch_backward(plan, p)
                                                     : analyze_batch(plan, p);
  if (st != XR_OK) return st;
  const xr_view5_t *x = &p->v[XR_CN_X];
  p->n = x->shape[0];
  p->spatial = x->shape[2] * x->shape[3] * x->shape[4];
  double elements = (double)p->n * (double)p->c * (double)p->spatial;
  bool bwd = p->kind == XR_CN_BATCH_BACKWARD || p->kind == XR_CN_GROUP_BACKWARD;
  plan->flops = elements * (bwd ? 8 : 6);
  /* Bytes: every operand bound once, activations and per-channel (or per-group) vectors alike:
   * x (and grad_output) read, the result (grad_input) written, weight, bias and statistics read
   * or written; running statistics that training updates are read and written. */
  double bytes = 0;
  for (int k = 0; k < XR_CN_SLOTS; k++) {
    const xr_view5_t *v = &p->v[k];
    if (v->index < 0) continue;
    double n = (double)xr_dtype_size(v->dtype);
    for (int d = 0; d < 5; d++) n *= (double)v->shape[d];
    bool updated = (k == XR_CN_RMEAN || k == XR_CN_RVAR) && p->kind == XR_CN_BATCH && p->training;
    bytes += n * (updated ? 2 : 1);
  }
  plan->bytes = bytes;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* CPU reference                                                                              */

typedef struct ref_state {
  const xr_cn_problem_t *p;
  void *base[XR_CN_SLOTS];
  int64_t off[XR_CN_SLOTS];
} ref_state_t;

static int64_t at(const ref_state_t *s, int k, int64_t n, int64_t c, int64_t i) {
  const xr_view5_t *v = &s->p->v[k];
  int64_t w = i % v->shape[4], t = i / v->shape[4];
  int64_t h = t % v->shape[3], d = t / v->shape[3];
  return s->off[k] + n * v->strides[0] + c * v->strides[1] + d * v->strides[2] + h * v->strides[3] +
         w * v->strides[4];
}

static double ld(const ref_state_t *s, int k, int64_t n, int64_t c, int64_t i) {
  return xr_load_element(s->base[k], s->p->v[k].dtype, at(s, k, n, c, i));
}

static void st(const ref_state_t *s, int k, int64_t n, int64_t c, int64_t i, double v) {
  if (s->base[k]) xr_store_element(s->base[k], s->p->v[k].dtype, at(s, k, n, c, i), v);
}

/* Per-channel vector k at c, or `fallback` when absent. */
static double vec(const ref_state_t *s, int k, int64_t c, double fallback) {
  return s->base[k] ? ld(s, k, 0, c, 0) : fallback;
}

static void ref_batch(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_cn_problem_t *p = s->p;
  double count = (double)p->n * (double)p->spatial;
  for (size_t cc = begin; cc < end; cc++) {
    int64_t c = (int64_t)cc;
    double mean, invstd;
    if (p->training) {
      double sum = 0, sq = 0;
      for (int64_t n = 0; n < p->n; n++)
        for (int64_t i = 0; i < p->spatial; i++) sum += ld(s, XR_CN_X, n, c, i);
      mean = sum / count;
      for (int64_t n = 0; n < p->n; n++)
        for (int64_t i = 0; i < p->spatial; i++) {
          double d = ld(s, XR_CN_X, n, c, i) - mean;
          sq += d * d;
        }
      double var = sq / count;
      invstd = 1 / sqrt(var + p->eps);
      st(s, XR_CN_OUT_MEAN, 0, c, 0, mean);
      st(s, XR_CN_OUT_INV, 0, c, 0, invstd);
      if (s->base[XR_CN_RMEAN])
        st(s, XR_CN_RMEAN, 0, c, 0,
           (1 - p->momentum) * vec(s, XR_CN_RMEAN, c, 0) + p->momentum * mean);
      if (s->base[XR_CN_RVAR])
        st(s, XR_CN_RVAR, 0, c, 0,
           (1 - p->momentum) * vec(s, XR_CN_RVAR, c, 0) +
               p->momentum * (count > 1 ? sq / (count - 1) : var));
    } else {
      mean = vec(s, XR_CN_RMEAN, c, 0);
      invstd = 1 / sqrt(vec(s, XR_CN_RVAR, c, 1) + p->eps);
    }
    double w = vec(s, XR_CN_WEIGHT, c, 1), b = vec(s, XR_CN_BIAS, c, 0);
    for (int64_t n = 0; n < p->n; n++)
      for (int64_t i = 0; i < p->spatial; i++)
        st(s, XR_CN_OUT, n, c, i, (ld(s, XR_CN_X, n, c, i) - mean) * invstd * w + b);
  }
}

static void ref_batch_backward(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_cn_problem_t *p = s->p;
  double count = (double)p->n * (double)p->spatial;
  for (size_t cc = begin; cc < end; cc++) {
    int64_t c = (int64_t)cc;
    double mean = p->training ? vec(s, XR_CN_SMEAN, c, 0) : vec(s, XR_CN_RMEAN, c, 0);
    double invstd =
        p->training ? vec(s, XR_CN_SINV, c, 1) : 1 / sqrt(vec(s, XR_CN_RVAR, c, 1) + p->eps);
    double w = vec(s, XR_CN_WEIGHT, c, 1), sum_g = 0, sum_gx = 0;
    for (int64_t n = 0; n < p->n; n++)
      for (int64_t i = 0; i < p->spatial; i++) {
        double g = ld(s, XR_CN_GRAD, n, c, i);
        sum_g += g;
        sum_gx += g * (ld(s, XR_CN_X, n, c, i) - mean) * invstd;
      }
    st(s, XR_CN_GRAD_W, 0, c, 0, sum_gx);
    st(s, XR_CN_GRAD_B, 0, c, 0, sum_g);
    if (!s->base[XR_CN_OUT]) continue;
    for (int64_t n = 0; n < p->n; n++)
      for (int64_t i = 0; i < p->spatial; i++) {
        double g = ld(s, XR_CN_GRAD, n, c, i), v;
        if (p->training) {
          double xhat = (ld(s, XR_CN_X, n, c, i) - mean) * invstd;
          v = w * invstd * (g - sum_g / count - xhat * sum_gx / count);
        } else {
          v = g * w * invstd;
        }
        st(s, XR_CN_OUT, n, c, i, v);
      }
  }
}

/* item = n * groups + g */
static void ref_group(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_cn_problem_t *p = s->p;
  int64_t per = p->c / p->groups;
  double count = (double)per * (double)p->spatial;
  for (size_t item = begin; item < end; item++) {
    int64_t n = (int64_t)item / p->groups, g = (int64_t)item % p->groups;
    double sum = 0, sq = 0;
    for (int64_t c = g * per; c < (g + 1) * per; c++)
      for (int64_t i = 0; i < p->spatial; i++) sum += ld(s, XR_CN_X, n, c, i);
    double mean = sum / count;
    for (int64_t c = g * per; c < (g + 1) * per; c++)
      for (int64_t i = 0; i < p->spatial; i++) {
        double d = ld(s, XR_CN_X, n, c, i) - mean;
        sq += d * d;
      }
    double rstd = 1 / sqrt(sq / count + p->eps);
    /* mean and rstd are [N, groups]: n, c(= g) of a 2-D view */
    st(s, XR_CN_OUT_MEAN, n, g, 0, mean);
    st(s, XR_CN_OUT_INV, n, g, 0, rstd);
    for (int64_t c = g * per; c < (g + 1) * per; c++) {
      double w = vec(s, XR_CN_WEIGHT, c, 1), b = vec(s, XR_CN_BIAS, c, 0);
      for (int64_t i = 0; i < p->spatial; i++)
        st(s, XR_CN_OUT, n, c, i, (ld(s, XR_CN_X, n, c, i) - mean) * rstd * w + b);
    }
  }
}

/* grad_input of group norm, item = n * groups + g: rstd * (w * g - mean(w * g) - xhat *
 * mean(w * g * xhat)) over the group's elements. */
static void ref_group_backward(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_cn_problem_t *p = s->p;
  int64_t per = p->c / p->groups;
  double count = (double)per * (double)p->spatial;
  for (size_t item = begin; item < end; item++) {
    int64_t n = (int64_t)item / p->groups, g = (int64_t)item % p->groups;
    double mean = ld(s, XR_CN_SMEAN, n, g, 0), rstd = ld(s, XR_CN_SINV, n, g, 0), a = 0, b = 0;
    for (int64_t c = g * per; c < (g + 1) * per; c++) {
      double w = vec(s, XR_CN_WEIGHT, c, 1);
      for (int64_t i = 0; i < p->spatial; i++) {
        double wg = w * ld(s, XR_CN_GRAD, n, c, i);
        a += wg;
        b += wg * (ld(s, XR_CN_X, n, c, i) - mean) * rstd;
      }
    }
    for (int64_t c = g * per; c < (g + 1) * per; c++) {
      double w = vec(s, XR_CN_WEIGHT, c, 1);
      for (int64_t i = 0; i < p->spatial; i++) {
        double xhat = (ld(s, XR_CN_X, n, c, i) - mean) * rstd;
        st(s, XR_CN_OUT, n, c, i,
           rstd * (w * ld(s, XR_CN_GRAD, n, c, i) - a / count - xhat * b / count));
      }
    }
  }
}

/* grad_weight = sum(g * xhat) and grad_bias = sum(g) of group norm, item = channel. */
static void ref_group_param_grads(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_cn_problem_t *p = s->p;
  int64_t per = p->c / p->groups;
  for (size_t cc = begin; cc < end; cc++) {
    int64_t c = (int64_t)cc, g = c / per;
    double sum_gx = 0, sum_g = 0;
    for (int64_t n = 0; n < p->n; n++) {
      double mean = ld(s, XR_CN_SMEAN, n, g, 0), rstd = ld(s, XR_CN_SINV, n, g, 0);
      for (int64_t i = 0; i < p->spatial; i++) {
        double dy = ld(s, XR_CN_GRAD, n, c, i);
        sum_g += dy;
        sum_gx += dy * (ld(s, XR_CN_X, n, c, i) - mean) * rstd;
      }
    }
    st(s, XR_CN_GRAD_W, 0, c, 0, sum_gx);
    st(s, XR_CN_GRAD_B, 0, c, 0, sum_g);
  }
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_cn_problem_t *p = plan->problem;
  ref_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  for (int k = 0; k < XR_CN_SLOTS; k++) {
    if (p->v[k].index < 0) continue;
    s->off[k] = tensors[p->v[k].index].offset;
    xr_status_t status = xr_tensor_host(&tensors[p->v[k].index], &s->base[k]);
    if (status != XR_OK) {
      free(s);
      return status;
    }
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  ref_state_t *s = state;
  const xr_cn_problem_t *p = s->p;
  size_t groups = (size_t)(p->n * p->groups), channels = (size_t)p->c;
  switch (p->kind) {
    case XR_CN_BATCH: return xr_hal_stream_enqueue_parallel(stream, channels, 1, ref_batch, s);
    case XR_CN_BATCH_BACKWARD:
      return xr_hal_stream_enqueue_parallel(stream, channels, 1, ref_batch_backward, s);
    case XR_CN_GROUP: return xr_hal_stream_enqueue_parallel(stream, groups, 1, ref_group, s);
    case XR_CN_GROUP_BACKWARD: {
      xr_status_t st = XR_OK;
      if (s->base[XR_CN_OUT])
        st = xr_hal_stream_enqueue_parallel(stream, groups, 1, ref_group_backward, s);
      if (st == XR_OK && (s->base[XR_CN_GRAD_W] || s->base[XR_CN_GRAD_B]))
        st = xr_hal_stream_enqueue_parallel(stream, channels, 1, ref_group_param_grads, s);
      return st;
    }
  }
  return XR_OK;
}

static const xr_kernel_impl_t ref_channel_norm = {
    .name = "ref.channel_norm",
    .driver = "cpu",
    .reference = true,
    .prepare = ref_prepare,
    .enqueue = ref_enqueue,
    .release = free,
};

/* ------------------------------------------------------------------------------------------ */
/* initializers                                                                               */

/* Variances and inverse standard deviations must be positive: running_var, and the saved
 * invstd / var / rstd of the backward ops, get values in [0.5, 1.5) where the bundle has no
 * data. */
static xr_status_t init_positive(xr_init_context_t *c) {
  const xr_cn_problem_t *p = c->plan->problem;
  const int slots[2] = {XR_CN_RVAR, XR_CN_SINV};
  uint64_t seed = c->seed;
  bool any = false;
  for (int k = 0; k < 2; k++) {
    const xr_view5_t *v = &p->v[slots[k]];
    if (v->index < 0 || c->has_data[v->index]) continue;
    const xr_tensor_spec_t *t = c->plan->inputs[v->index];
    for (int64_t n = 0; n < v->shape[0]; n++) /* group norm's rstd is [N, groups] */
      for (int64_t i = 0; i < v->shape[1]; i++)
        xr_store_element(c->host[v->index], t->dtype,
                         t->storage_offset + n * v->strides[0] + i * v->strides[1],
                         0.5 + xr_rng_uniform(&seed));
    any = true;
  }
  if (any) xr_init_describe(c, "running_var, save_invstd, rstd uniform in [0.5, 1.5)");
  return XR_OK;
}

static const struct xr_op_initializer cn_initializers[] = {
    {"aten::native_batch_norm", init_positive},
    {"aten::_native_batch_norm_legit", init_positive},
    {"aten::_native_batch_norm_legit_no_training", init_positive},
    {"aten::cudnn_batch_norm", init_positive},
    {"aten::miopen_batch_norm", init_positive},
    {"aten::native_batch_norm_backward", init_positive},
    {"aten::cudnn_batch_norm_backward", init_positive},
    {"aten::miopen_batch_norm_backward", init_positive},
    {"aten::native_group_norm_backward", init_positive},
    {NULL, NULL},
};

static const xr_kernel_impl_t *const cn_impls[] = {
    &xr_cpu_onednn_batch_norm_impl, /* cpu: batch norm */
    &xr_cpu_channel_norm_impl,      /* cpu */
    &xr_opencl_channel_norm_impl,   /* opencl */
    &xr_gpu_channel_norm_impl,      /* cuda, hip */
    &ref_channel_norm,
    NULL,
};

const xr_op_family_t xr_family_channel_norm = {
    .name = "channel_norm",
    .op_names = cn_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = cn_impls,
    .initializers = cn_initializers,
};
