/* The mixture-of-experts family (semantics and layouts in kernels/moe.h): argument analysis and
 * the plain-C references. The references walk tokens (or sorted positions) one at a time,
 * accumulate in double and round once. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/family.h"
#include "kernels/initializer.h"
#include "kernels/moe.h"

static const char *const moe_ops[] = {
    "_moe_C::moe_align_block_size", "_moe_C::topk_softmax", "vllm::outplace_fused_experts",
    "vllm::inplace_fused_experts",  "vllm::moe_forward",    "aiter::moe_sorting_fwd",
    "aiter::ck_moe_stage1",         "aiter::ck_moe_stage2", NULL,
};

/* ------------------------------------------------------------------------------------------ */
/* analysis                                                                                    */

static bool is_float(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16;
}
static bool is_index(xr_dtype_t d) { return d == XR_DTYPE_I32 || d == XR_DTYPE_I64; }

static const xr_tensor_spec_t *spec(const xr_op_plan_t *plan, int index) {
  return plan->inputs[index];
}

/* Checks rank and (where `want` >= 0) each dimension; names the argument. */
static xr_status_t need_shape(const xr_op_plan_t *plan, int index, const char *name, int rank,
                              int64_t d0, int64_t d1, int64_t d2) {
  const xr_tensor_spec_t *t = spec(plan, index);
  if (t->rank != rank)
    return xr_plan_error(plan, "%s: expected a %d-D tensor, got %d-D", name, rank, t->rank);
  const int64_t want[3] = {d0, d1, d2};
  for (int d = 0; d < rank && d < 3; d++)
    if (want[d] >= 0 && t->shape[d] != want[d])
      return xr_plan_error(plan, "%s: dimension %d is %lld, expected %lld", name, d,
                           (long long)t->shape[d], (long long)want[d]);
  return XR_OK;
}

static xr_status_t need_dtype(const xr_op_plan_t *plan, int index, const char *name,
                              bool (*ok)(xr_dtype_t), const char *what) {
  xr_dtype_t d = spec(plan, index)->dtype;
  if (!ok(d)) return xr_plan_error(plan, "%s: expected %s, got %s", name, what, xr_dtype_name(d));
  return XR_OK;
}

static bool is_i32(xr_dtype_t d) { return d == XR_DTYPE_I32; }
static bool is_f32(xr_dtype_t d) { return d == XR_DTYPE_F32; }

static void unsupported(xr_moe_problem_t *p, const char *fmt, const char *what) {
  if (!p->unsupported[0]) snprintf(p->unsupported, sizeof p->unsupported, fmt, what);
}

/* Optional arguments that select a variant we do not run: present tensors, true flags, or
 * non-zero ints make the problem unsupported (with the argument's name). */
static void reject_tensors(const xr_op_plan_t *plan, xr_moe_problem_t *p, const char *const *names) {
  for (; *names; names++) {
    const xr_value_t *v = xr_op_arg(plan->op, -1, *names);
    if (v && v->kind != XR_VALUE_NULL) unsupported(p, "%s is not supported", *names);
  }
}
static void reject_true(const xr_op_plan_t *plan, xr_moe_problem_t *p, const char *const *names) {
  for (; *names; names++) {
    const xr_value_t *v = xr_op_arg(plan->op, -1, *names);
    if (v && ((v->kind == XR_VALUE_BOOL && v->as.b) || (v->kind == XR_VALUE_INT && v->as.i)))
      unsupported(p, "%s is not supported (unquantised weights only)", *names);
  }
}

/* The outputs an op writes even where a trace's schema type lacks the "!" (aiter's ops). */
static void mark_written(xr_op_plan_t *plan, int index) {
  if (index >= 0 && (size_t)index < plan->input_count) plan->input_written[index] = true;
}

/* Bytes of a bound tensor read or written whole (0 when absent). */
static double tensor_bytes(const xr_op_plan_t *plan, int index) {
  if (index < 0 || (size_t)index >= plan->input_count) return 0;
  return (double)xr_spec_numel(spec(plan, index)) * (double)xr_dtype_size(spec(plan, index)->dtype);
}

/* The experts a batch's routing reaches: at most every expert, at most one per routed row. */
static double routed_experts(const xr_moe_problem_t *p) {
  double rows = (double)p->M * (double)p->topk;
  return rows < (double)p->E ? rows : (double)p->E;
}

static xr_status_t analyze_align(xr_op_plan_t *plan, xr_moe_problem_t *p) {
  const xr_op_t *op = plan->op;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "topk_ids", true, &p->topk_ids)) ||
      (st = xr_arg_int(op, 1, "num_experts", true, &p->E)) ||
      (st = xr_arg_int(op, 2, "block_size", true, &p->block)) ||
      (st = xr_arg_tensor(plan, 3, "sorted_token_ids", true, &p->sorted_ids)) ||
      (st = xr_arg_tensor(plan, 4, "experts_ids", true, &p->expert_ids)) ||
      (st = xr_arg_tensor(plan, 5, "num_tokens_post_pad", true, &p->num_valid)) ||
      (st = need_dtype(plan, p->topk_ids, "topk_ids", is_index, "int32 or int64")) ||
      (st = need_dtype(plan, p->sorted_ids, "sorted_token_ids", is_i32, "int32")) ||
      (st = need_dtype(plan, p->expert_ids, "experts_ids", is_i32, "int32")) ||
      (st = need_dtype(plan, p->num_valid, "num_tokens_post_pad", is_i32, "int32")) ||
      (st = need_shape(plan, p->sorted_ids, "sorted_token_ids", 1, -1, -1, -1)) ||
      (st = need_shape(plan, p->expert_ids, "experts_ids", 1, -1, -1, -1)) ||
      (st = need_shape(plan, p->num_valid, "num_tokens_post_pad", 1, -1, -1, -1)))
    return st;
  const xr_tensor_spec_t *ids = spec(plan, p->topk_ids);
  if (ids->rank < 1 || ids->rank > 2)
    return xr_plan_error(plan, "topk_ids: expected a 1-D or 2-D tensor, got %d-D", ids->rank);
  if (p->E < 1 || p->block < 1)
    return xr_plan_error(plan, "num_experts (%lld) and block_size (%lld) must be positive",
                         (long long)p->E, (long long)p->block);
  if (spec(plan, p->num_valid)->shape[0] < 1)
    return xr_plan_error(plan, "num_tokens_post_pad: expected at least one element");
  p->M = ids->shape[0];
  p->topk = ids->rank == 2 ? ids->shape[1] : 1;
  p->sorted_len = spec(plan, p->sorted_ids)->shape[0];
  p->blocks_len = spec(plan, p->expert_ids)->shape[0];
  mark_written(plan, p->sorted_ids);
  mark_written(plan, p->expert_ids);
  mark_written(plan, p->num_valid);
  plan->bytes = (double)xr_spec_numel(ids) * (double)xr_dtype_size(ids->dtype) +
                4.0 * (double)(p->sorted_len + p->blocks_len + 1);
  return XR_OK;
}

static xr_status_t analyze_topk_softmax(xr_op_plan_t *plan, xr_moe_problem_t *p) {
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "topk_weights", true, &p->topk_weights)) ||
      (st = xr_arg_tensor(plan, 1, "topk_indices", true, &p->topk_ids)) ||
      (st = xr_arg_tensor(plan, 2, "token_expert_indices", true, &p->token_expert_indices)) ||
      (st = xr_arg_tensor(plan, 3, "gating_output", true, &p->logits)) ||
      (st = xr_arg_bool(plan->op, 4, "renormalize", false, &p->renormalize)) ||
      (st = need_shape(plan, p->logits, "gating_output", 2, -1, -1, -1)) ||
      (st = need_dtype(plan, p->logits, "gating_output", is_float, "fp32, fp16 or bf16")))
    return st;
  p->M = spec(plan, p->logits)->shape[0];
  p->E = spec(plan, p->logits)->shape[1];
  const xr_tensor_spec_t *w = spec(plan, p->topk_weights);
  p->topk = w->rank == 2 ? w->shape[1] : -1;
  if ((st = need_shape(plan, p->topk_weights, "topk_weights", 2, p->M, -1, -1)) ||
      (st = need_shape(plan, p->topk_ids, "topk_indices", 2, p->M, p->topk, -1)) ||
      (st = need_shape(plan, p->token_expert_indices, "token_expert_indices", 2, p->M, p->topk, -1)) ||
      (st = need_dtype(plan, p->topk_weights, "topk_weights", is_float, "a float dtype")) ||
      (st = need_dtype(plan, p->topk_ids, "topk_indices", is_index, "int32 or int64")) ||
      (st = need_dtype(plan, p->token_expert_indices, "token_expert_indices", is_index,
                       "int32 or int64")))
    return st;
  if (p->topk < 1 || p->topk > p->E)
    return xr_plan_error(plan, "top-%lld of %lld experts", (long long)p->topk, (long long)p->E);
  static const char *const variants[] = {"bias", NULL};
  reject_tensors(plan, p, variants);
  mark_written(plan, p->topk_weights);
  mark_written(plan, p->topk_ids);
  mark_written(plan, p->token_expert_indices);
  p->dtype = spec(plan, p->logits)->dtype;
  plan->flops = 4.0 * (double)(p->M * p->E);
  /* The logits read; per routed slot a weight, an expert id and a token-expert index written,
   * each in its own dtype (ids may be int32 or int64). */
  plan->bytes = (double)(p->M * p->E) * (double)xr_dtype_size(p->dtype) + tensor_bytes(plan, p->topk_weights) +
                tensor_bytes(plan, p->topk_ids) + tensor_bytes(plan, p->token_expert_indices);
  return XR_OK;
}

/* w1 [E, 2N, K] and w2 [E, K, N] against hidden [M, K]; sets E, N, K, dtype. */
static xr_status_t analyze_weights(xr_op_plan_t *plan, xr_moe_problem_t *p) {
  xr_status_t st;
  if ((st = need_shape(plan, p->hidden, "hidden_states", 2, -1, -1, -1)) ||
      (st = need_shape(plan, p->w1, "w1", 3, -1, -1, -1)) ||
      (st = need_dtype(plan, p->hidden, "hidden_states", is_float, "fp32, fp16 or bf16")))
    return st;
  p->M = spec(plan, p->hidden)->shape[0];
  p->K = spec(plan, p->hidden)->shape[1];
  p->E = spec(plan, p->w1)->shape[0];
  p->N = spec(plan, p->w1)->shape[1] / 2;
  p->dtype = spec(plan, p->hidden)->dtype;
  if (spec(plan, p->w1)->shape[1] % 2)
    return xr_plan_error(plan, "w1: %lld rows, expected 2 x the intermediate size (gate, up)",
                         (long long)spec(plan, p->w1)->shape[1]);
  if ((st = need_shape(plan, p->w1, "w1", 3, p->E, 2 * p->N, p->K)) ||
      (st = need_shape(plan, p->w2, "w2", 3, p->E, p->K, p->N)))
    return st;
  if (spec(plan, p->w1)->dtype != p->dtype || spec(plan, p->w2)->dtype != p->dtype)
    return xr_plan_error(plan, "hidden_states, w1 and w2 must share a dtype (got %s, %s, %s)",
                         xr_dtype_name(p->dtype), xr_dtype_name(spec(plan, p->w1)->dtype),
                         xr_dtype_name(spec(plan, p->w2)->dtype));
  return XR_OK;
}

static double expert_flops(const xr_moe_problem_t *p) {
  return 6.0 * (double)p->M * (double)p->topk * (double)p->K * (double)p->N;
}

/* Each routed expert's weights once (at most every expert; all of them when the routing sends
 * M * topk rows over E experts and balanced routing leaves none out), in their storage (mxfp4:
 * half a byte per weight plus a scale byte per 32), plus the activations. */
static double expert_bytes(const xr_moe_problem_t *p) {
  double es = (double)xr_dtype_size(p->dtype), routed = routed_experts(p);
  double per_weight = p->weights == XR_MOE_W_MXFP4 ? 0.5 + 1.0 / 32 : p->weights == XR_MOE_W_FP8 ? 1.0 : es;
  double bias = (p->w1_bias >= 0 ? 2.0 * (double)p->N : 0) + (p->w2_bias >= 0 ? (double)p->K : 0);
  return routed * (3.0 * (double)p->N * (double)p->K * per_weight + bias * es) +
         es * 2.0 * (double)p->M * (double)p->K;
}

static xr_status_t analyze_fused(xr_op_plan_t *plan, xr_moe_problem_t *p, bool inplace) {
  const xr_op_t *op = plan->op;
  xr_status_t st;
  const char *activation = "silu";
  if ((st = xr_arg_tensor(plan, 0, "hidden_states", true, &p->hidden)) ||
      (st = xr_arg_tensor(plan, 1, "w1", true, &p->w1)) ||
      (st = xr_arg_tensor(plan, 2, "w2", true, &p->w2)) ||
      (st = xr_arg_tensor(plan, 3, "topk_weights", true, &p->topk_weights)) ||
      (st = xr_arg_tensor(plan, 4, "topk_ids", true, &p->topk_ids)) ||
      (st = xr_arg_string(op, -1, "activation", false, &activation)) ||
      (st = xr_arg_bool(op, -1, "apply_router_weight_on_input", false, &p->weight_on_input)) ||
      (st = analyze_weights(plan, p)))
    return st;
  const xr_tensor_spec_t *ids = spec(plan, p->topk_ids);
  p->topk = ids->rank == 2 ? ids->shape[1] : -1;
  if ((st = need_shape(plan, p->topk_ids, "topk_ids", 2, p->M, -1, -1)) ||
      (st = need_shape(plan, p->topk_weights, "topk_weights", 2, p->M, p->topk, -1)) ||
      (st = need_dtype(plan, p->topk_ids, "topk_ids", is_index, "int32 or int64")) ||
      (st = need_dtype(plan, p->topk_weights, "topk_weights", is_float, "a float dtype")))
    return st;
  if (strcmp(activation, "silu")) unsupported(p, "activation '%s' (only silu)", activation);
  static const char *const flags[] = {"use_fp8_w8a8", "use_int8_w8a8", "use_int8_w8a16",
                                      "use_int4_w4a16", "use_mxfp4_w4a4", "per_channel_quant", NULL};
  static const char *const tensors[] = {"expert_map", "w1_scale", "w2_scale", "w1_zp", "w2_zp",
                                        "a1_scale", "a2_scale", "block_shape", "w1_bias",
                                        "w2_bias", "ocp_mx_scheme", NULL};
  reject_true(plan, p, flags);
  reject_tensors(plan, p, tensors);
  if (inplace) {
    p->out = p->hidden;
    mark_written(plan, p->hidden);
  } else {
    p->out = (int)plan->input_count;
    plan->return_count = 1;
    xr_desc_set(&plan->returns[0], p->dtype, 2, spec(plan, p->hidden)->shape);
  }
  plan->flops = expert_flops(p);
  /* and the routing read: topk_weights and topk_ids */
  plan->bytes = expert_bytes(p) + tensor_bytes(plan, p->topk_weights) + tensor_bytes(plan, p->topk_ids);
  return XR_OK;
}

/* What the trace itself says about a moe_forward layer whose weights are missing, for the
 * unsupported sentence: the experts (router_logits), the hidden size (hidden_states) and the
 * weight format where a recorded kernel names it. */
static void describe_missing(const xr_op_plan_t *plan, xr_moe_problem_t *p, bool have_topk) {
  const xr_op_t *op = plan->op;
  const char *format = NULL;
  for (size_t i = 0; op->timing && i < op->timing->kernel_count && !format; i++) {
    const char *k = op->timing->kernels[i].name;
    if (!k) continue;
    if (strstr(k, "mxfp4") || strstr(k, "MxE2m1") || strstr(k, "mxf4")) format = "mxfp4";
    else if (strstr(k, "fp8") || strstr(k, "Fp8") || strstr(k, "E4m3")) format = "fp8";
  }
  char known[160];
  int n = snprintf(known, sizeof known, "%lld experts from router_logits, hidden size %lld from hidden_states",
                   (long long)spec(plan, p->logits)->shape[1], (long long)p->K);
  if (format && n > 0 && (size_t)n < sizeof known)
    snprintf(known + n, sizeof known - (size_t)n, ", %s weights from the recorded kernels", format);
  const char *missing = have_topk ? (format ? "the intermediate size is" : "the intermediate size and the weight format are")
                                   : (format ? "the intermediate size and top_k are"
                                             : "the intermediate size, top_k and the weight format are");
  snprintf(p->unsupported, sizeof p->unsupported,
           "the layer's weights are not in the trace: %s unknown (the trace gives %s); pass the "
           "model's config.json with --model-config FILE, or add w1, w2 and top_k to the op",
           missing, known);
}

static bool is_e8m0(xr_dtype_t d) { return d == XR_DTYPE_F8E8M0; }

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* An expert weight w [E, rows, cols] (mxfp4: [E, rows, cols / 2] bytes with a scale
 * [E, rows, cols / 32]) and its optional bias [E, rows]. */
static xr_status_t check_expert_weight(const xr_op_plan_t *plan, const xr_moe_problem_t *p, int w, int scale,
                                       int bias, const char *name, int64_t rows, int64_t cols) {
  char what[32];
  xr_status_t st;
  if (p->weights == XR_MOE_W_MXFP4) {
    if (cols % 32)
      return xr_plan_error(plan, "%s: mxfp4 needs a multiple of 32 along K, got %lld", name, (long long)cols);
    snprintf(what, sizeof what, "%s_scale", name);
    if (scale < 0) return xr_plan_error(plan, "%s: mxfp4 weights need %s (e8m0, one per 32)", name, what);
    if ((st = need_shape(plan, w, name, 3, p->E, rows, cols / 2)) ||
        (st = need_shape(plan, scale, what, 3, p->E, rows, cols / 32)) ||
        (st = need_dtype(plan, scale, what, is_e8m0, xr_dtype_name(XR_DTYPE_F8E8M0))))
      return st;
  } else if (p->weights == XR_MOE_W_FP8) {
    snprintf(what, sizeof what, "%s_scale", name);
    if (scale < 0) return xr_plan_error(plan, "%s: fp8 weights need %s (float32)", name, what);
    if ((st = need_shape(plan, w, name, 3, p->E, rows, cols)) ||
        (st = need_dtype(plan, scale, what, is_f32, "float32")) ||
        (st = p->block_n ? need_shape(plan, scale, what, 3, p->E, ceil_div(rows, p->block_n), ceil_div(cols, p->block_k))
                         : need_shape(plan, scale, what, 1, p->E, -1, -1)))
      return st;
    if (spec(plan, w)->dtype != spec(plan, p->w1)->dtype)
      return xr_plan_error(plan, "%s: %s, but w1 is %s", name, xr_dtype_name(spec(plan, w)->dtype),
                           xr_dtype_name(spec(plan, p->w1)->dtype));
  } else {
    if ((st = need_shape(plan, w, name, 3, p->E, rows, cols))) return st;
    if (spec(plan, w)->dtype != p->dtype)
      return xr_plan_error(plan, "%s: %s, expected the hidden states' %s (or mxfp4, fp8)", name,
                           xr_dtype_name(spec(plan, w)->dtype), xr_dtype_name(p->dtype));
  }
  snprintf(what, sizeof what, "%s_bias", name);
  if (bias >= 0 && ((st = need_shape(plan, bias, what, 2, p->E, rows, -1)) ||
                    (st = need_dtype(plan, bias, what, is_float, "a float dtype"))))
    return st;
  return XR_OK;
}

static xr_status_t analyze_forward(xr_op_plan_t *plan, xr_moe_problem_t *p) {
  const xr_op_t *op = plan->op;
  xr_status_t st;
  const char *activation = "silu";
  p->renormalize = true;
  p->swiglu_alpha = 1.702, p->swiglu_limit = 7.0;
  if ((st = xr_arg_tensor(plan, 0, "hidden_states", true, &p->hidden)) ||
      (st = xr_arg_tensor(plan, 1, "router_logits", true, &p->logits)) ||
      (st = xr_arg_tensor(plan, -1, "w1", false, &p->w1)) ||
      (st = xr_arg_tensor(plan, -1, "w2", false, &p->w2)) ||
      (st = xr_arg_tensor(plan, -1, "w1_scale", false, &p->w1_scale)) ||
      (st = xr_arg_tensor(plan, -1, "w2_scale", false, &p->w2_scale)) ||
      (st = xr_arg_tensor(plan, -1, "w1_bias", false, &p->w1_bias)) ||
      (st = xr_arg_tensor(plan, -1, "w2_bias", false, &p->w2_bias)) ||
      (st = xr_arg_int(op, -1, "top_k", false, &p->topk)) ||
      (st = xr_arg_bool(op, -1, "renormalize", false, &p->renormalize)) ||
      (st = xr_arg_string(op, -1, "activation", false, &activation)) ||
      (st = xr_arg_double(op, -1, "swiglu_alpha", false, &p->swiglu_alpha)) ||
      (st = xr_arg_double(op, -1, "swiglu_limit", false, &p->swiglu_limit)) ||
      (st = need_shape(plan, p->hidden, "hidden_states", 2, -1, -1, -1)) ||
      (st = need_dtype(plan, p->hidden, "hidden_states", is_float, "fp32, fp16 or bf16")))
    return st;
  p->M = spec(plan, p->hidden)->shape[0];
  p->K = spec(plan, p->hidden)->shape[1];
  p->dtype = spec(plan, p->hidden)->dtype;
  p->out = (int)plan->input_count;
  plan->return_count = 1;
  xr_desc_set(&plan->returns[0], p->dtype, 2, spec(plan, p->hidden)->shape);
  if ((st = need_shape(plan, p->logits, "router_logits", 2, p->M, -1, -1)) ||
      (st = need_dtype(plan, p->logits, "router_logits", is_float, "a float dtype")))
    return st;
  if (p->w1 < 0 || p->w2 < 0 || p->topk < 1) {
    /* A trace holds only the layer's name: its weights live in the serving process. */
    describe_missing(plan, p, p->topk >= 1);
    return XR_OK;
  }
  if (!strcmp(activation, "swigluoai")) p->act = XR_MOE_ACT_SWIGLUOAI;
  else if (strcmp(activation, "silu"))
    unsupported(p, "activation '%s' (silu or swigluoai)", activation);
  if ((st = need_shape(plan, p->w1, "w1", 3, -1, -1, -1))) return st;
  const xr_tensor_spec_t *w1 = spec(plan, p->w1);
  p->weights = w1->dtype == XR_DTYPE_F4E2M1X2 ? XR_MOE_W_MXFP4
               : xr_dtype_is_fp8(w1->dtype)    ? XR_MOE_W_FP8
                                               : XR_MOE_W_PLAIN;
  int64_t block[2] = {0, 0};
  int blocks = 0;
  if ((st = xr_arg_int_list(op, -1, "weight_block_size", false, block, 2, &blocks))) return st;
  if (blocks && (blocks != 2 || block[0] < 1 || block[1] < 1))
    return xr_plan_error(plan, "weight_block_size: expected two positive ints [rows, cols]");
  p->block_n = block[0], p->block_k = block[1];
  p->E = w1->shape[0];
  if (w1->shape[1] % 2)
    return xr_plan_error(plan, "w1: %lld rows, expected 2 x the intermediate size (gate, up)",
                         (long long)w1->shape[1]);
  p->N = w1->shape[1] / 2;
  if (p->weights == XR_MOE_W_MXFP4 && spec(plan, p->w2)->dtype != XR_DTYPE_F4E2M1X2)
    return xr_plan_error(plan, "w1 is mxfp4 but w2 is %s", xr_dtype_name(spec(plan, p->w2)->dtype));
  if ((st = check_expert_weight(plan, p, p->w1, p->w1_scale, p->w1_bias, "w1", 2 * p->N, p->K)) ||
      (st = check_expert_weight(plan, p, p->w2, p->w2_scale, p->w2_bias, "w2", p->K, p->N)))
    return st;
  if (spec(plan, p->logits)->shape[1] != p->E)
    return xr_plan_error(plan, "router_logits: %lld experts, w1 has %lld",
                         (long long)spec(plan, p->logits)->shape[1], (long long)p->E);
  if (p->topk > p->E)
    return xr_plan_error(plan, "top_k %lld exceeds %lld experts", (long long)p->topk, (long long)p->E);
  if (!(p->swiglu_limit > 0)) return xr_plan_error(plan, "swiglu_limit %g: expected > 0", p->swiglu_limit);
  plan->flops = expert_flops(p);
  plan->bytes = expert_bytes(p) + tensor_bytes(plan, p->logits); /* and the router's logits read */
  return XR_OK;
}

static xr_status_t analyze_sorting(xr_op_plan_t *plan, xr_moe_problem_t *p) {
  const xr_op_t *op = plan->op;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "topk_ids", true, &p->topk_ids)) ||
      (st = xr_arg_tensor(plan, 1, "topk_weights", true, &p->topk_weights)) ||
      (st = xr_arg_tensor(plan, 2, "sorted_token_ids", true, &p->sorted_ids)) ||
      (st = xr_arg_tensor(plan, 3, "sorted_weights", true, &p->sorted_weights)) ||
      (st = xr_arg_tensor(plan, 4, "sorted_expert_ids", true, &p->expert_ids)) ||
      (st = xr_arg_tensor(plan, 5, "num_valid_ids", true, &p->num_valid)) ||
      (st = xr_arg_tensor(plan, 6, "moe_buf", false, &p->moe_buf)) ||
      (st = xr_arg_int(op, 7, "num_experts", true, &p->E)) ||
      (st = xr_arg_int(op, 8, "unit_size", true, &p->block)) ||
      (st = need_shape(plan, p->topk_ids, "topk_ids", 2, -1, -1, -1)) ||
      (st = need_dtype(plan, p->topk_ids, "topk_ids", is_index, "int32 or int64")))
    return st;
  p->M = spec(plan, p->topk_ids)->shape[0];
  p->topk = spec(plan, p->topk_ids)->shape[1];
  if ((st = need_shape(plan, p->topk_weights, "topk_weights", 2, p->M, p->topk, -1)) ||
      (st = need_dtype(plan, p->topk_weights, "topk_weights", is_float, "a float dtype")) ||
      (st = need_shape(plan, p->sorted_ids, "sorted_token_ids", 1, -1, -1, -1)) ||
      (st = need_dtype(plan, p->sorted_ids, "sorted_token_ids", is_i32, "int32")) ||
      (st = need_shape(plan, p->sorted_weights, "sorted_weights", 1, -1, -1, -1)) ||
      (st = need_dtype(plan, p->sorted_weights, "sorted_weights", is_f32, "fp32")) ||
      (st = need_shape(plan, p->expert_ids, "sorted_expert_ids", 1, -1, -1, -1)) ||
      (st = need_dtype(plan, p->expert_ids, "sorted_expert_ids", is_i32, "int32")) ||
      (st = need_shape(plan, p->num_valid, "num_valid_ids", 1, -1, -1, -1)) ||
      (st = need_dtype(plan, p->num_valid, "num_valid_ids", is_i32, "int32")))
    return st;
  p->sorted_len = spec(plan, p->sorted_ids)->shape[0];
  p->blocks_len = spec(plan, p->expert_ids)->shape[0];
  if (spec(plan, p->sorted_weights)->shape[0] != p->sorted_len)
    return xr_plan_error(plan, "sorted_weights: %lld elements, sorted_token_ids %lld",
                         (long long)spec(plan, p->sorted_weights)->shape[0], (long long)p->sorted_len);
  if (p->E < 1 || p->block < 1)
    return xr_plan_error(plan, "num_experts (%lld) and unit_size (%lld) must be positive",
                         (long long)p->E, (long long)p->block);
  if (p->M >= (1 << 24) || p->topk > 255)
    return xr_plan_error(plan, "topk_ids [%lld, %lld]: packed ids hold 24-bit tokens, 8-bit slots",
                         (long long)p->M, (long long)p->topk);
  if (spec(plan, p->num_valid)->shape[0] < 1)
    return xr_plan_error(plan, "num_valid_ids: expected at least one element");
  if (p->moe_buf >= 0 && !is_float(spec(plan, p->moe_buf)->dtype))
    return xr_plan_error(plan, "moe_buf: expected a float dtype");
  static const char *const variants[] = {"local_expert_mask", "expert_mask", "num_local_tokens", NULL};
  reject_tensors(plan, p, variants);
  mark_written(plan, p->sorted_ids);
  mark_written(plan, p->sorted_weights);
  mark_written(plan, p->expert_ids);
  mark_written(plan, p->num_valid);
  mark_written(plan, p->moe_buf);
  /* topk_ids and topk_weights read; the sorted ids and weights, the expert per block and
   * num_valid_ids written, and moe_buf zeroed; each in its own dtype. */
  plan->bytes = tensor_bytes(plan, p->topk_ids) + tensor_bytes(plan, p->topk_weights) +
                tensor_bytes(plan, p->sorted_ids) + tensor_bytes(plan, p->sorted_weights) +
                tensor_bytes(plan, p->expert_ids) + tensor_bytes(plan, p->num_valid) +
                tensor_bytes(plan, p->moe_buf);
  return XR_OK;
}

/* ck_moe_stage1 / stage2: hidden_states (stage 2: inter_states [M, topk, N]), w1, w2, the
 * sorted ids, out, topk, then named options. */
static xr_status_t analyze_stage(xr_op_plan_t *plan, xr_moe_problem_t *p, int stage) {
  const xr_op_t *op = plan->op;
  xr_status_t st;
  int inter = -1;
  int64_t quant = 0, activation = 0;
  p->block = 32;
  if ((st = xr_arg_tensor(plan, 0, stage == 1 ? "hidden_states" : "inter_states", true, &inter)) ||
      (st = xr_arg_tensor(plan, 1, "w1", true, &p->w1)) ||
      (st = xr_arg_tensor(plan, 2, "w2", true, &p->w2)) ||
      (st = xr_arg_tensor(plan, 3, "sorted_token_ids", true, &p->sorted_ids)) ||
      (st = xr_arg_tensor(plan, 4, "sorted_expert_ids", true, &p->expert_ids)) ||
      (st = xr_arg_tensor(plan, 5, "num_valid_ids", true, &p->num_valid)) ||
      (st = xr_arg_tensor(plan, 6, "out", true, &p->out)) ||
      (st = xr_arg_int(op, 7, "topk", true, &p->topk)) ||
      (st = xr_arg_int(op, -1, "block_m", false, &p->block)) ||
      (st = xr_arg_tensor(plan, -1, "sorted_weights", false, &p->sorted_weights)) ||
      (st = xr_arg_int(op, -1, "quant_type", false, &quant)) ||
      (st = xr_arg_int(op, -1, "activation", false, &activation)) ||
      (st = need_shape(plan, p->w1, "w1", 3, -1, -1, -1)) ||
      (st = need_shape(plan, p->w2, "w2", 3, -1, -1, -1)) ||
      (st = need_dtype(plan, inter, stage == 1 ? "hidden_states" : "inter_states", is_float,
                       "fp32, fp16 or bf16")))
    return st;
  p->hidden = inter;
  p->E = spec(plan, p->w2)->shape[0];
  p->K = spec(plan, p->w2)->shape[1];
  p->N = spec(plan, p->w2)->shape[2];
  p->dtype = spec(plan, inter)->dtype;
  p->M = spec(plan, inter)->shape[0];
  if (p->topk < 1 || p->block < 1)
    return xr_plan_error(plan, "topk (%lld) and block_m (%lld) must be positive",
                         (long long)p->topk, (long long)p->block);
  if ((st = need_shape(plan, p->w1, "w1", 3, p->E, 2 * p->N, p->K)) ||
      (stage == 1 && (st = need_shape(plan, inter, "hidden_states", 2, -1, p->K, -1))) ||
      (stage == 2 && (st = need_shape(plan, inter, "inter_states", 3, -1, p->topk, p->N))) ||
      (stage == 1 && (st = need_shape(plan, p->out, "out", 3, p->M, p->topk, p->N))) ||
      (stage == 2 && (st = need_shape(plan, p->out, "out", 2, p->M, p->K, -1))) ||
      (st = need_shape(plan, p->sorted_ids, "sorted_token_ids", 1, -1, -1, -1)) ||
      (st = need_dtype(plan, p->sorted_ids, "sorted_token_ids", is_i32, "int32")) ||
      (st = need_shape(plan, p->expert_ids, "sorted_expert_ids", 1, -1, -1, -1)) ||
      (st = need_dtype(plan, p->expert_ids, "sorted_expert_ids", is_i32, "int32")) ||
      (st = need_shape(plan, p->num_valid, "num_valid_ids", 1, -1, -1, -1)) ||
      (st = need_dtype(plan, p->num_valid, "num_valid_ids", is_i32, "int32")))
    return st;
  p->sorted_len = spec(plan, p->sorted_ids)->shape[0];
  p->blocks_len = spec(plan, p->expert_ids)->shape[0];
  if (p->sorted_weights >= 0 &&
      ((st = need_shape(plan, p->sorted_weights, "sorted_weights", 1, p->sorted_len, -1, -1)) ||
       (st = need_dtype(plan, p->sorted_weights, "sorted_weights", is_f32, "fp32"))))
    return st;
  if (spec(plan, p->num_valid)->shape[0] < 1)
    return xr_plan_error(plan, "num_valid_ids: expected at least one element");
  const xr_tensor_spec_t *w = spec(plan, stage == 1 ? p->w1 : p->w2);
  if (w->dtype != p->dtype || spec(plan, p->out)->dtype != p->dtype)
    return xr_plan_error(plan, "activations, weights and out must share a dtype (unquantised)");
  if (quant != 0) unsupported(p, "quant_type %s is not supported (unquantised only)", "!= 0");
  if (stage == 1 && activation != 0)
    unsupported(p, "activation %s is not supported (silu = 0 only)", "!= 0");
  static const char *const scales1[] = {"w1_scale", "a1_scale", NULL};
  static const char *const scales2[] = {"w2_scale", "a2_scale", NULL};
  reject_tensors(plan, p, stage == 1 ? scales1 : scales2);
  mark_written(plan, p->out);
  double rows = (double)p->M * (double)p->topk, es = (double)xr_dtype_size(p->dtype);
  plan->flops = (stage == 1 ? 4.0 : 2.0) * rows * (double)p->K * (double)p->N;
  /* The routed experts' weights once (w1 [2N, K] each in stage 1, w2 [K, N] in stage 2), not
   * every expert's; stage 1 reads each token's hidden row once and writes M x topk rows of N,
   * stage 2 reads those and writes out [M, K] once; and the sorted ids, experts and weights. */
  double weights = (stage == 1 ? 2.0 : 1.0) * routed_experts(p) * (double)p->N * (double)p->K;
  double acts = stage == 1 ? (double)p->M * (double)p->K + rows * (double)p->N
                           : rows * (double)p->N + (double)p->M * (double)p->K;
  plan->bytes = es * (weights + acts) + tensor_bytes(plan, p->sorted_ids) + tensor_bytes(plan, p->expert_ids) +
                tensor_bytes(plan, p->sorted_weights) + tensor_bytes(plan, p->num_valid);
  return XR_OK;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  xr_moe_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", plan->op->name);
  plan->problem = p;
  p->hidden = p->w1 = p->w2 = p->topk_weights = p->topk_ids = p->out = p->logits = -1;
  p->token_expert_indices = p->sorted_ids = p->sorted_weights = p->expert_ids = -1;
  p->num_valid = p->moe_buf = -1;
  p->w1_scale = p->w2_scale = p->w1_bias = p->w2_bias = -1;
  const char *name = plan->op->name;
  if (!strcmp(name, "_moe_C::moe_align_block_size")) {
    p->kind = XR_MOE_ALIGN;
    return analyze_align(plan, p);
  }
  if (!strcmp(name, "_moe_C::topk_softmax")) {
    p->kind = XR_MOE_TOPK_SOFTMAX;
    return analyze_topk_softmax(plan, p);
  }
  if (!strcmp(name, "vllm::outplace_fused_experts") || !strcmp(name, "vllm::inplace_fused_experts")) {
    p->kind = XR_MOE_FUSED;
    return analyze_fused(plan, p, name[6] == 'i');
  }
  if (!strcmp(name, "vllm::moe_forward")) {
    p->kind = XR_MOE_FORWARD;
    return analyze_forward(plan, p);
  }
  if (!strcmp(name, "aiter::moe_sorting_fwd")) {
    p->kind = XR_MOE_SORTING;
    return analyze_sorting(plan, p);
  }
  p->kind = strstr(name, "stage1") ? XR_MOE_STAGE1 : XR_MOE_STAGE2;
  return analyze_stage(plan, p, p->kind == XR_MOE_STAGE1 ? 1 : 2);
}

xr_status_t xr_moe_check_supported(const xr_op_plan_t *plan, const char *impl) {
  const xr_moe_problem_t *p = plan->problem;
  if (p->unsupported[0]) return xr_error(XR_UNIMPLEMENTED, "%s: %s", impl, p->unsupported);
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* references                                                                                  */

typedef struct ref_state {
  const xr_moe_problem_t *p;
  xr_host_call_t *call;
  void *base[16]; /* storage of each binding */
} ref_state_t;

static const xr_tensor_t *T(const ref_state_t *s, int index) { return &s->call->tensors[index]; }

static double load(const ref_state_t *s, int index, int64_t a, int64_t b, int64_t c) {
  const xr_tensor_t *t = T(s, index);
  return xr_load_element(s->base[index], t->dtype, xr_moe_at(t, a, b, c));
}

static void store(const ref_state_t *s, int index, int64_t a, int64_t b, int64_t c, double v) {
  const xr_tensor_t *t = T(s, index);
  xr_store_element(s->base[index], t->dtype, xr_moe_at(t, a, b, c), v);
}

/* Flat element i of topk_ids (rank 1 or 2, any strides). */
static int64_t routed_expert(const ref_state_t *s, int64_t i) {
  const xr_tensor_t *t = T(s, s->p->topk_ids);
  return (int64_t)xr_load_element(s->base[s->p->topk_ids], t->dtype, xr_tensor_index(t, i));
}

/* vLLM's moe_align_block_size and CK's moe_sorting: one counting pass, then every expert's
 * ids in ascending flattened order. */
static void ref_sort(void *ctx) {
  const ref_state_t *s = ctx;
  const xr_moe_problem_t *p = s->p;
  bool ck = p->kind == XR_MOE_SORTING;
  int64_t numel = p->M * p->topk, E = p->E, bs = p->block;
  int64_t *count = calloc((size_t)E + 1, sizeof *count), *start = calloc((size_t)E + 1, sizeof *start);
  if (!count || !start) goto out; /* outputs keep their contents; the check reports it */
  for (int64_t i = 0; i < numel; i++) {
    int64_t e = routed_expert(s, i);
    if (e >= 0 && e < E) count[e]++;
  }
  for (int64_t e = 0; e < E; e++) {
    int64_t blocks = (count[e] + bs - 1) / bs;
    if (ck && blocks == 0) blocks = 1; /* CK gives every expert at least one block */
    start[e + 1] = start[e] + blocks * bs;
  }
  int64_t total = start[E];
  double pad = ck ? (double)XR_MOE_CK_ID(p->M, p->topk) : (double)numel;
  for (int64_t i = 0; i < p->sorted_len; i++) {
    store(s, p->sorted_ids, i, 0, 0, pad);
    if (ck) store(s, p->sorted_weights, i, 0, 0, 0.0);
  }
  for (int64_t b = 0; b < p->blocks_len; b++) store(s, p->expert_ids, b, 0, 0, 0.0);
  for (int64_t e = 0; e < E; e++)
    for (int64_t b = start[e] / bs; b < start[e + 1] / bs && b < p->blocks_len; b++)
      store(s, p->expert_ids, b, 0, 0, (double)e);
  int64_t *next = count; /* reuse: next free slot per expert */
  for (int64_t e = 0; e < E; e++) next[e] = start[e];
  for (int64_t i = 0; i < numel; i++) {
    int64_t e = routed_expert(s, i);
    if (e < 0 || e >= E) continue;
    int64_t pos = next[e]++;
    if (pos >= p->sorted_len) continue;
    int64_t token = i / p->topk, slot = i % p->topk;
    store(s, p->sorted_ids, pos, 0, 0, ck ? (double)XR_MOE_CK_ID(token, slot) : (double)i);
    if (ck) store(s, p->sorted_weights, pos, 0, 0, load(s, p->topk_weights, token, slot, 0));
  }
  store(s, p->num_valid, 0, 0, 0, (double)total);
  if (ck && T(s, p->num_valid)->shape[0] > 1) store(s, p->num_valid, 1, 0, 0, (double)p->M);
  if (ck && p->moe_buf >= 0) {
    const xr_tensor_t *t = T(s, p->moe_buf);
    int64_t n = 1;
    for (int32_t d = 0; d < t->rank; d++) n *= t->shape[d];
    for (int64_t i = 0; i < n; i++)
      xr_store_element(s->base[p->moe_buf], t->dtype, xr_tensor_index(t, i), 0.0);
  }
out:
  free(count);
  free(start);
}

/* Softmax of one token's logits in double and its top-k, picked by logit (the softmax is
 * monotonic; ties go to the lower expert). */
static void route_token(const ref_state_t *s, int64_t m, double *logit, int64_t *ids, double *w) {
  const xr_moe_problem_t *p = s->p;
  double mx = -INFINITY, sum = 0, picked = 0;
  for (int64_t e = 0; e < p->E; e++) {
    logit[e] = load(s, p->logits, m, e, 0);
    if (logit[e] > mx) mx = logit[e];
  }
  for (int64_t e = 0; e < p->E; e++) sum += exp(logit[e] - mx);
  for (int64_t j = 0; j < p->topk; j++) {
    int64_t best = -1;
    for (int64_t e = 0; e < p->E; e++) {
      bool taken = false;
      for (int64_t q = 0; q < j; q++) taken |= ids[q] == e;
      if (!taken && (best < 0 || logit[e] > logit[best])) best = e;
    }
    ids[j] = best;
    picked += w[j] = exp(logit[best] - mx) / sum;
  }
  if (p->renormalize)
    for (int64_t j = 0; j < p->topk; j++) w[j] /= picked;
}

static void ref_topk_softmax(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_moe_problem_t *p = s->p;
  double *prob = malloc(sizeof(double) * (size_t)(p->E + 2 * p->topk));
  int64_t *ids = malloc(sizeof(int64_t) * (size_t)p->topk);
  if (prob && ids) {
    for (size_t m = begin; m < end; m++) {
      double *w = prob + p->E;
      route_token(s, (int64_t)m, prob, ids, w);
      for (int64_t j = 0; j < p->topk; j++) {
        store(s, p->topk_weights, (int64_t)m, j, 0, w[j]);
        store(s, p->topk_ids, (int64_t)m, j, 0, (double)ids[j]);
        store(s, p->token_expert_indices, (int64_t)m, j, 0, (double)(j * p->M + (int64_t)m));
      }
    }
  }
  free(prob);
  free(ids);
}

/* Weight (e, r, c) of w1 (which 0) or w2 (1), decoded from its storage. */
static double expert_weight(const ref_state_t *s, int which, int64_t e, int64_t r, int64_t c) {
  const xr_moe_problem_t *p = s->p;
  int w = which ? p->w2 : p->w1;
  if (p->weights == XR_MOE_W_PLAIN) return load(s, w, e, r, c);
  if (p->weights == XR_MOE_W_FP8) {
    int sc = which ? p->w2_scale : p->w1_scale;
    double scale = p->block_n ? load(s, sc, e, r / p->block_n, c / p->block_k) : load(s, sc, e, 0, 0);
    return load(s, w, e, r, c) * scale;
  }
  uint8_t pair = (uint8_t)load(s, w, e, r, c / 2); /* f4e2m1x2 loads as its byte */
  return xr_e2m1_to_f32(c % 2 ? pair >> 4 : pair & 15) * load(s, which ? p->w2_scale : p->w1_scale, e, r, c / 32);
}

static double bias(const ref_state_t *s, int index, int64_t e, int64_t r) {
  return index >= 0 ? load(s, index, e, r, 0) : 0.0;
}

/* One expert's MLP on one row: y[K] = w2[e] @ act(g, u) + b2[e], [g; u] = w1[e] @ x + b1[e]. */
static void expert_mlp(const ref_state_t *s, int64_t e, const double *x, double *h, double *y) {
  const xr_moe_problem_t *p = s->p;
  for (int64_t n = 0; n < p->N; n++) {
    int64_t gr = xr_moe_gate_row(p, n), ur = xr_moe_up_row(p, n);
    double g = bias(s, p->w1_bias, e, gr), u = bias(s, p->w1_bias, e, ur);
    for (int64_t k = 0; k < p->K; k++) {
      g += expert_weight(s, 0, e, gr, k) * x[k];
      u += expert_weight(s, 0, e, ur, k) * x[k];
    }
    h[n] = xr_moe_activate(p, g, u);
  }
  for (int64_t k = 0; k < p->K; k++) {
    double acc = bias(s, p->w2_bias, e, k);
    for (int64_t n = 0; n < p->N; n++) acc += expert_weight(s, 1, e, k, n) * h[n];
    y[k] = acc;
  }
}

/* Fused experts and moe_forward, one token at a time (the token's input is read whole before
 * its output is written, so the in-place variant is safe). */
static void ref_experts(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_moe_problem_t *p = s->p;
  size_t K = (size_t)p->K;
  double *buf = malloc(sizeof(double) * (4 * K + (size_t)p->N + (size_t)p->E + 2 * (size_t)p->topk));
  int64_t *ids = malloc(sizeof(int64_t) * (size_t)p->topk);
  if (!buf || !ids) goto out;
  double *x = buf, *xw = x + K, *y = xw + K, *acc = y + K, *h = acc + K, *prob = h + p->N;
  double *w = prob + p->E;
  for (size_t mi = begin; mi < end; mi++) {
    int64_t m = (int64_t)mi;
    if (p->kind == XR_MOE_FORWARD) {
      route_token(s, m, prob, ids, w);
    } else {
      for (int64_t j = 0; j < p->topk; j++) {
        ids[j] = (int64_t)load(s, p->topk_ids, m, j, 0);
        w[j] = load(s, p->topk_weights, m, j, 0);
      }
    }
    for (int64_t k = 0; k < p->K; k++) x[k] = load(s, p->hidden, m, k, 0), acc[k] = 0;
    for (int64_t j = 0; j < p->topk; j++) {
      if (ids[j] < 0 || ids[j] >= p->E) continue; /* not routed to any expert here */
      for (int64_t k = 0; k < p->K; k++) xw[k] = p->weight_on_input ? x[k] * w[j] : x[k];
      expert_mlp(s, ids[j], xw, h, y);
      for (int64_t k = 0; k < p->K; k++) acc[k] += p->weight_on_input ? y[k] : y[k] * w[j];
    }
    for (int64_t k = 0; k < p->K; k++) store(s, p->out, m, k, 0, acc[k]);
  }
out:
  free(buf);
  free(ids);
}

/* CK stage 1 and 2 over the sorted ids: position i of the first num_valid_ids[0] / block_m
 * blocks carries token | slot << 24 of expert sorted_expert_ids[i / block_m]. */
static void ref_stages(void *ctx) {
  const ref_state_t *s = ctx;
  const xr_moe_problem_t *p = s->p;
  int64_t blocks = (int64_t)load(s, p->num_valid, 0, 0, 0) / p->block;
  if (blocks > p->blocks_len) blocks = p->blocks_len;
  int64_t rows = blocks * p->block < p->sorted_len ? blocks * p->block : p->sorted_len;
  size_t width = (size_t)(p->K > p->N ? p->K : p->N);
  double *x = malloc(sizeof(double) * width), *acc = NULL;
  if (p->kind == XR_MOE_STAGE2) acc = calloc((size_t)(p->M * p->K) + 1, sizeof *acc);
  if (!x || (p->kind == XR_MOE_STAGE2 && !acc)) goto out;
  for (int64_t i = 0; i < rows; i++) {
    uint32_t id = (uint32_t)(int32_t)load(s, p->sorted_ids, i, 0, 0);
    int64_t token = id & 0xffffffu, slot = id >> 24, e = (int64_t)load(s, p->expert_ids, i / p->block, 0, 0);
    if (token >= p->M || slot >= p->topk || e < 0 || e >= p->E) continue; /* padding */
    double weight = p->sorted_weights >= 0 ? load(s, p->sorted_weights, i, 0, 0) : 1.0;
    if (p->kind == XR_MOE_STAGE1) {
      for (int64_t k = 0; k < p->K; k++) x[k] = load(s, p->hidden, token, k, 0);
      for (int64_t n = 0; n < p->N; n++) {
        double g = 0, u = 0;
        for (int64_t k = 0; k < p->K; k++) {
          g += load(s, p->w1, e, n, k) * x[k];
          u += load(s, p->w1, e, p->N + n, k) * x[k];
        }
        store(s, p->out, token, slot, n, xr_moe_silu(g) * u * weight);
      }
    } else {
      for (int64_t n = 0; n < p->N; n++) x[n] = load(s, p->hidden, token, slot, n);
      for (int64_t k = 0; k < p->K; k++) {
        double y = 0;
        for (int64_t n = 0; n < p->N; n++) y += load(s, p->w2, e, k, n) * x[n];
        acc[token * p->K + k] += y * weight;
      }
    }
  }
  if (p->kind == XR_MOE_STAGE2) {
    for (int64_t m = 0; m < p->M; m++)
      for (int64_t k = 0; k < p->K; k++)
        store(s, p->out, m, k, 0, load(s, p->out, m, k, 0) + acc[m * p->K + k]);
  }
out:
  free(x);
  free(acc);
}

static xr_status_t ref_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  return xr_moe_check_supported(plan, "ref.moe");
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  size_t n = plan->input_count + plan->return_count;
  if (n > 16) return xr_error(XR_INVALID_ARGUMENT, "%s: %zu tensors, at most 16", plan->op->name, n);
  ref_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  s->p = plan->problem;
  xr_status_t st = xr_host_call_create(plan, tensors, &s->call);
  for (size_t i = 0; st == XR_OK && i < n; i++) st = xr_tensor_host(&tensors[i], &s->base[i]);
  if (st != XR_OK) {
    free(s->call);
    free(s);
    return st;
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  ref_state_t *s = state;
  switch (s->p->kind) {
    case XR_MOE_ALIGN:
    case XR_MOE_SORTING: return xr_hal_stream_enqueue_host(stream, ref_sort, s);
    case XR_MOE_TOPK_SOFTMAX:
      return xr_hal_stream_enqueue_parallel(stream, (size_t)s->p->M, 1, ref_topk_softmax, s);
    case XR_MOE_FUSED:
    case XR_MOE_FORWARD:
      return xr_hal_stream_enqueue_parallel(stream, (size_t)s->p->M, 1, ref_experts, s);
    case XR_MOE_STAGE1:
    case XR_MOE_STAGE2: return xr_hal_stream_enqueue_host(stream, ref_stages, s);
  }
  return xr_error(XR_INTERNAL, "ref.moe: unknown problem kind");
}

static void ref_release(void *state) {
  ref_state_t *s = state;
  if (!s) return;
  free(s->call);
  free(s);
}

static const xr_kernel_impl_t ref_moe = {
    .name = "ref.moe",
    .driver = "cpu",
    .reference = true,
    .supports = ref_supports,
    .prepare = ref_prepare,
    .enqueue = ref_enqueue,
    .release = ref_release,
};

/* ------------------------------------------------------------------------------------------ */
/* custom initializers                                                                         */

/* MoE routing policies: "balanced" round-robin (default), "uniform", or "zipf:S" expert ids,
 * distinct within a token; routing weights positive, summing to 1 per token. Draws
 * ids[m * topk + j] and weights[m * topk + j]. */
static xr_status_t draw_routing(xr_init_context_t *c, int64_t tokens, int64_t topk,
                                int64_t experts, int64_t *ids, double *weights, const char **out_mode) {
  const char *mode = c->params && c->params[0] ? c->params : "balanced";
  *out_mode = mode;
  double zipf_s = 0;
  if (!strncmp(mode, "zipf", 4)) zipf_s = mode[4] == ':' ? atof(mode + 5) : 1.0;
  else if (strcmp(mode, "balanced") && strcmp(mode, "uniform"))
    return xr_error(XR_INVALID_ARGUMENT,
                    "MoE routing policy \"%s\": expected balanced, uniform or zipf:S", mode);
  if (topk > experts)
    return xr_error(XR_INVALID_ARGUMENT, "top-%lld routing over %lld experts", (long long)topk,
                    (long long)experts);
  double *cdf = NULL;
  if (zipf_s > 0) {
    cdf = malloc(sizeof(double) * (size_t)experts);
    if (!cdf) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
    double sum = 0;
    for (int64_t e = 0; e < experts; e++) cdf[e] = (sum += 1.0 / pow((double)(e + 1), zipf_s));
    for (int64_t e = 0; e < experts; e++) cdf[e] /= sum;
  }
  uint64_t s = c->seed;
  for (int64_t m = 0; m < tokens; m++) {
    int64_t *chosen = ids + m * topk;
    for (int64_t j = 0; j < topk; j++) {
      int64_t e;
      for (;;) {
        if (cdf) {
          double u = xr_rng_uniform(&s);
          e = 0;
          while (e < experts - 1 && cdf[e] < u) e++;
        } else if (!strcmp(mode, "uniform")) {
          e = (int64_t)(xr_rng_next(&s) % (uint64_t)experts);
        } else {
          e = (m * topk + j) % experts; /* topk <= experts: never repeats within a token */
        }
        bool dup = false;
        for (int64_t k = 0; k < j; k++) dup |= chosen[k] == e;
        if (!dup) break;
      }
      chosen[j] = e;
    }
    double sum = 0;
    for (int64_t j = 0; j < topk; j++) sum += weights[m * topk + j] = 0.5 + xr_rng_uniform(&s);
    for (int64_t j = 0; j < topk; j++) weights[m * topk + j] /= sum;
  }
  free(cdf);
  return XR_OK;
}

/* aiter::ck_moe_stage1/2 take the sorting's outputs instead of topk_ids: sorted ids packed as
 * token | slot << 24, every expert at least one block of block_m, padding M | topk << 24 with
 * weight 0, ascending within an expert; num_valid_ids = {padded total, M}. */
static xr_status_t init_ck_sorted(xr_init_context_t *c) {
  int sid = xr_init_input(c, "sorted_token_ids"), eid = xr_init_input(c, "sorted_expert_ids");
  int nv = xr_init_input(c, "num_valid_ids"), sw = xr_init_input(c, "sorted_weights");
  int x = xr_init_input(c, "hidden_states"), w2 = xr_init_input(c, "w2"), out = xr_init_input(c, "out");
  if (x < 0) x = xr_init_input(c, "inter_states");
  if (sid < 0 || eid < 0 || nv < 0 || x < 0 || w2 < 0) return XR_OK;
  if (c->has_data[sid] || c->has_data[eid] || c->has_data[nv]) return XR_OK; /* real sorting */
  const xr_tensor_spec_t *st = c->plan->inputs[sid], *et = c->plan->inputs[eid];
  if (st->rank != 1 || et->rank != 1 || c->plan->inputs[w2]->rank != 3) return XR_OK;
  int64_t tokens = c->plan->inputs[x]->shape[0], topk = xr_init_int_arg(c, "topk", 1);
  int64_t experts = c->plan->inputs[w2]->shape[0], block = xr_init_int_arg(c, "block_m", 32);
  int64_t len = st->shape[0], blocks = et->shape[0];
  if (topk < 1 || block < 1 || experts < 1) return XR_OK;
  int64_t *ids = malloc(sizeof(int64_t) * (size_t)(tokens * topk + 1));
  double *weights = malloc(sizeof(double) * (size_t)(tokens * topk + 1));
  int64_t *start = calloc((size_t)experts + 1, sizeof *start);
  const char *mode;
  xr_status_t status = ids && weights && start ? XR_OK : xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  if (status == XR_OK) status = draw_routing(c, tokens, topk, experts, ids, weights, &mode);
  if (status == XR_OK) {
    for (int64_t i = 0; i < tokens * topk; i++) start[ids[i] + 1]++;
    for (int64_t e = 0; e < experts; e++) {
      int64_t n = (start[e + 1] + block - 1) / block;
      start[e + 1] = start[e] + (n ? n : 1) * block;
    }
    int64_t total = start[experts];
    double pad = (double)(int32_t)(((uint32_t)tokens & 0xffffffu) | ((uint32_t)topk << 24));
    for (int64_t i = 0; i < len; i++) {
      xr_init_store(c, sid, i, pad);
      if (sw >= 0 && !c->has_data[sw]) xr_init_store(c, sw, i, 0.0);
    }
    for (int64_t b = 0; b < blocks; b++) xr_init_store(c, eid, b, 0.0);
    for (int64_t e = 0; e < experts; e++)
      for (int64_t b = start[e] / block; b < start[e + 1] / block && b < blocks; b++)
        xr_init_store(c, eid, b, (double)e);
    for (int64_t i = 0; i < tokens * topk; i++) { /* ascending per expert: start[] advances */
      int64_t pos = start[ids[i]]++;
      if (pos >= len) continue;
      int64_t m = i / topk, j = i % topk;
      xr_init_store(c, sid, pos, (double)(int32_t)(((uint32_t)m & 0xffffffu) | ((uint32_t)j << 24)));
      if (sw >= 0 && !c->has_data[sw]) xr_init_store(c, sw, pos, weights[i]);
    }
    xr_init_store(c, nv, 0, (double)total);
    if (c->plan->inputs[nv]->shape[0] > 1) xr_init_store(c, nv, 1, (double)tokens);
    /* stage 2 accumulates into out, which the sorting zeroes (moe_buf) */
    if (out >= 0 && !c->has_data[out] && strstr(c->op->name, "stage2"))
      memset(c->host[out], 0, c->sizes[out]);
    char what[160];
    snprintf(what, sizeof what, "sorted ids (block_m %lld) from %s routing over %lld experts",
             (long long)block, mode, (long long)experts);
    xr_init_describe(c, what);
  }
  free(ids);
  free(weights);
  free(start);
  return status;
}

/* Expert ids for ops that take topk_ids (align, sorting, fused experts) and their routing
 * weights; pre-sorted inputs for the CK stages. */
static xr_status_t init_moe_routing(xr_init_context_t *c) {
  int ids = xr_init_input(c, "topk_ids");
  if (ids < 0) ids = xr_init_input(c, "topk_indices");
  if (ids < 0) return init_ck_sorted(c);
  if (c->has_data[ids]) return XR_OK;
  const xr_tensor_spec_t *t = c->plan->inputs[ids];
  if (t->rank != 2) return XR_OK;
  int64_t tokens = t->shape[0], topk = t->shape[1];
  int64_t experts = xr_init_int_arg(c, "num_experts", -1);
  int w1 = xr_init_input(c, "w1");
  if (experts < 0 && w1 >= 0) experts = c->plan->inputs[w1]->shape[0];
  if (experts < 1) return XR_OK;
  int64_t *drawn = malloc(sizeof(int64_t) * (size_t)(tokens * topk + 1));
  double *weights = malloc(sizeof(double) * (size_t)(tokens * topk + 1));
  const char *mode;
  xr_status_t status = drawn && weights ? XR_OK : xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  if (status == XR_OK) status = draw_routing(c, tokens, topk, experts, drawn, weights, &mode);
  if (status == XR_OK) {
    for (int64_t m = 0; m < tokens; m++)
      for (int64_t j = 0; j < topk; j++)
        xr_store_element(c->host[ids], t->dtype,
                         t->storage_offset + m * t->strides[0] + j * t->strides[1],
                         (double)drawn[m * topk + j]);
    int wt = xr_init_input(c, "topk_weights");
    if (wt >= 0 && !c->has_data[wt] && !c->plan->input_written[wt] && c->plan->inputs[wt]->rank == 2) {
      const xr_tensor_spec_t *w = c->plan->inputs[wt];
      for (int64_t m = 0; m < tokens && w->shape[0] == tokens && w->shape[1] == topk; m++)
        for (int64_t j = 0; j < topk; j++)
          xr_store_element(c->host[wt], w->dtype,
                           w->storage_offset + m * w->strides[0] + j * w->strides[1],
                           weights[m * topk + j]);
    }
    char what[128];
    snprintf(what, sizeof what, "topk_ids %s over %lld experts", mode, (long long)experts);
    xr_init_describe(c, what);
  }
  free(drawn);
  free(weights);
  return status;
}

/* moe_forward's initializer.
 * - Routing: router_logits made so that its softmax top-k is a routing the MoE policies draw
 *   (balanced by default, --init=vllm::moe_forward:uniform or zipf:S): the chosen experts' logits
 *   are log(weight), the others 30 lower (a probability under 1e-12), so the renormalised
 *   top-k weights are the drawn ones.
 * - Scales sized so that the GEMMs' outputs are of unit scale, so that GPT-OSS's clamp at 7 sees
 *   values on both sides of it: mxfp4's e8m0 near 1 / (2.9 sqrt(depth)) (2.9 is the RMS of
 *   random e2m1 codes), jittered by one power of two either way; fp8's float32 scales in
 *   [0.5, 1.5) / sqrt(depth).
 * - The layer's source named in the policy line. */
static void init_weight_scales(xr_init_context_t *c, const char *name, int64_t depth, uint64_t *rng) {
  int i = xr_init_input(c, name);
  if (i < 0 || c->has_data[i] || depth < 1) return;
  const xr_tensor_spec_t *t = c->plan->inputs[i];
  size_t n = c->sizes[i] / xr_dtype_size(t->dtype);
  if (t->dtype == XR_DTYPE_F8E8M0) {
    int base = 127 + (int)lround(log2(1.0 / (2.9 * sqrt((double)depth))));
    uint8_t *b = c->host[i];
    for (size_t k = 0; k < n; k++) b[k] = (uint8_t)(base - 1 + (int)(xr_rng_next(rng) % 3));
  } else if (t->dtype == XR_DTYPE_F32) {
    float *f = c->host[i];
    for (size_t k = 0; k < n; k++) f[k] = (float)((0.5 + xr_rng_uniform(rng)) / sqrt((double)depth));
  }
}

static xr_status_t init_forward_routing(xr_init_context_t *c) {
  int logits = -1;
  xr_arg_tensor(c->plan, 1, "router_logits", false, &logits);
  int64_t topk = xr_init_int_arg(c, "top_k", -1);
  if (logits < 0 || c->has_data[logits] || c->plan->inputs[logits]->rank != 2 || topk < 1) return XR_OK;
  const xr_tensor_spec_t *t = c->plan->inputs[logits];
  int64_t tokens = t->shape[0], experts = t->shape[1];
  if (topk > experts) return XR_OK; /* the plan reports it */
  int64_t *ids = malloc(sizeof(int64_t) * (size_t)(tokens * topk + 1));
  double *weights = malloc(sizeof(double) * (size_t)(tokens * topk + 1));
  const char *mode;
  xr_status_t st = ids && weights ? XR_OK : xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  if (st == XR_OK) st = draw_routing(c, tokens, topk, experts, ids, weights, &mode);
  for (int64_t m = 0; st == XR_OK && m < tokens; m++) {
    int64_t row = t->storage_offset + m * t->strides[0];
    for (int64_t e = 0; e < experts; e++) xr_store_element(c->host[logits], t->dtype, row + e * t->strides[1], -30.0);
    for (int64_t j = 0; j < topk; j++)
      xr_store_element(c->host[logits], t->dtype, row + ids[m * topk + j] * t->strides[1], log(weights[m * topk + j]));
  }
  if (st == XR_OK) {
    char what[128];
    snprintf(what, sizeof what, "router_logits routing top-%lld %s over %lld experts", (long long)topk, mode,
             (long long)experts);
    xr_init_describe(c, what);
  }
  free(ids);
  free(weights);
  return st;
}

static xr_status_t init_moe_forward(xr_init_context_t *c) {
  xr_status_t st = init_forward_routing(c);
  int w1 = xr_init_input(c, "w1"), hidden = -1;
  xr_arg_tensor(c->plan, 0, "hidden_states", false, &hidden); /* traces leave it unnamed */
  if (st != XR_OK || w1 < 0 || hidden < 0 || c->plan->inputs[w1]->rank != 3) return st;
  uint64_t rng = c->seed;
  int64_t K = c->plan->inputs[hidden]->shape[1], N = c->plan->inputs[w1]->shape[1] / 2;
  init_weight_scales(c, "w1_scale", K, &rng);
  init_weight_scales(c, "w2_scale", N, &rng);
  xr_dtype_t wd = c->plan->inputs[w1]->dtype;
  if (wd == XR_DTYPE_F4E2M1X2) xr_init_describe(c, "mxfp4 scales near 1/(2.9 sqrt(K)) (GEMM outputs of unit scale)");
  else if (xr_dtype_is_fp8(wd)) xr_init_describe(c, "fp8 scales in [0.5, 1.5)/sqrt(K) (GEMM outputs of unit scale)");
  const xr_value_t *source = xr_op_arg(c->op, -1, "layer_source");
  if (source && source->kind == XR_VALUE_STRING) {
    char what[1100];
    snprintf(what, sizeof what, "layer: %s", source->as.s);
    xr_init_describe(c, what);
  }
  return XR_OK;
}

static const struct xr_op_initializer moe_initializers[] = {
    {"vllm::moe_forward", init_moe_forward},
    {"_moe_C::moe_align_block_size", init_moe_routing},
    {"vllm::outplace_fused_experts", init_moe_routing},
    {"vllm::inplace_fused_experts", init_moe_routing},
    {"aiter::moe_sorting_fwd", init_moe_routing},
    {"aiter::ck_moe_stage1", init_moe_routing},
    {"aiter::ck_moe_stage2", init_moe_routing},
    {NULL, NULL},
};

static const xr_kernel_impl_t *const moe_impls[] = {
    &xr_moe_cpu_fused,
    &xr_moe_opencl,
    &xr_moe_gpu,
    &ref_moe,
    NULL,
};

const xr_op_family_t xr_family_moe = {
    .name = "moe",
    .op_names = moe_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = moe_impls,
    .initializers = moe_initializers,
};

