/* The mixture-of-experts family's parsed problem, shared by its implementations (ref, cpu,
 * opencl, gpu).
 *
 * Ops and the layouts they take:
 *   _moe_C::moe_align_block_size  topk_ids [M, topk] -> sorted_token_ids (flattened ids
 *       token*topk+slot grouped by expert, each expert padded to a multiple of block_size with
 *       the sentinel numel; experts with no tokens get no block), experts_ids per block,
 *       num_tokens_post_pad.
 *   _moe_C::topk_softmax          gating_output [M, E] -> softmax in fp32, the top-k experts
 *       (ties: the lower index), their probabilities (renormalised when asked) and
 *       token_expert_indices[m, j] = j*M + m.
 *   vllm::outplace_fused_experts / inplace_fused_experts
 *       out[m] = sum_j w[m,j] * w2[e] @ (silu(g) * u), [g; u] = w1[e] @ x[m], e = topk_ids[m,j];
 *       w1 [E, 2N, K] (gate rows first), w2 [E, K, N]. The routing weight multiplies the GEMM-2
 *       output (or x when apply_router_weight_on_input).
 *   vllm::moe_forward             router (softmax top-k of router_logits, renormalised unless
 *       renormalize=False) plus the fused experts; the layer's weights are not arguments of the
 *       op, so it runs only when the bundle adds w1, w2 and top_k (replay --model-config or
 *       extract --model-config write them from a model's config.json). Its layer may also have:
 *       - mxfp4 weights: w1 f4e2m1x2 [E, 2N, K/2] with w1_scale f8e8m0 [E, 2N, K/32], w2
 *         f4e2m1x2 [E, K, N/2] with w2_scale [E, K, N/32] (vLLM's Mxfp4MoEMethod layout);
 *       - fp8 weights (e4m3fn, e4m3fnuz): w1 [E, 2N, K], w2 [E, K, N] with float32 scales that
 *         multiply them, per expert (w1_scale [E]) or per block of weight_block_size = [bn, bk]
 *         (w1_scale [E, ceil(2N / bn), ceil(K / bk)], vLLM's Fp8MoEMethod block layout);
 *       - w1_bias [E, 2N] added to GEMM-1's output, w2_bias [E, K] to GEMM-2's (before the
 *         routing weight);
 *       - activation "swigluoai" (GPT-OSS): gate and up interleaved in w1's rows (gate n = row
 *         2n, up n = row 2n + 1), g = min(g, limit), u = clamp(u, -limit, limit),
 *         act = g * sigmoid(alpha * g) * (u + 1); swiglu_limit (7.0) and swiglu_alpha (1.702)
 *         kwargs. "silu" (default): gate rows [0, N), up rows [N, 2N), act = silu(g) * u.
 *   aiter::moe_sorting_fwd        CK sorting: sorted ids packed as token | slot << 24, every
 *       expert at least one block of unit_size, padding token | topk << 24 with weight 0,
 *       sorted_weights, sorted_expert_ids, num_valid_ids = {padded total, M}, moe_buf zeroed.
 *   aiter::ck_moe_stage1          out[token, slot] = silu(g) * u (times the sorted weight when
 *       given) for every sorted id of the first num_valid_ids[0] / block_m blocks.
 *   aiter::ck_moe_stage2          out[token] += w2[e] @ inter_states[token, slot] (times the
 *       sorted weight when given): accumulated, as the kernel's atomics do onto the moe_buf the
 *       sorting zeroed.
 *   The aiter weights are read in the plain (unshuffled) layout [E, rows, cols] whatever
 *   is_shuffled says: a replay has no pre-shuffled copies, and the FLOPs are the same.
 *
 * Rounding: the references accumulate in double and round once. The fast paths accumulate in
 * fp32 and round where vLLM's kernels store fp16/bf16: the GEMM-1 output, the silu_and_mul
 * output and the weighted GEMM-2 output, then sum over top-k in fp32 and round once.
 *
 * Sorted outputs are deterministic on every backend: within an expert's segment ids are in
 * ascending flattened order (token*topk + slot), so --check compares them elementwise. */
#ifndef XR_KERNELS_MOE_H
#define XR_KERNELS_MOE_H

#include <math.h>

#include "kernels/kernels.h"

typedef enum xr_moe_kind {
  XR_MOE_ALIGN = 0,
  XR_MOE_TOPK_SOFTMAX,
  XR_MOE_FUSED,
  XR_MOE_FORWARD,
  XR_MOE_SORTING,
  XR_MOE_STAGE1,
  XR_MOE_STAGE2,
} xr_moe_kind_t;

/* CK's packed sorted id. */
#define XR_MOE_CK_ID(token, slot) ((int32_t)(((uint32_t)(token) & 0xffffffu) | ((uint32_t)(slot) << 24)))

/* How the experts' weights are stored. */
typedef enum xr_moe_weights {
  XR_MOE_W_PLAIN = 0, /* the activations' dtype */
  XR_MOE_W_MXFP4,     /* e2m1 pairs with an e8m0 scale per 32 along the reduction dim */
  XR_MOE_W_FP8,       /* fp8 with float32 scales per expert or per [bn, bk] block */
} xr_moe_weights_t;

typedef enum xr_moe_act {
  XR_MOE_ACT_SILU = 0, /* silu(g) * u, gate rows first */
  XR_MOE_ACT_SWIGLUOAI /* GPT-OSS's clamped swiglu, gate and up interleaved */
} xr_moe_act_t;

typedef struct xr_moe_problem {
  xr_moe_kind_t kind;
  /* Non-empty: a variant no implementation runs (quantised weights, expert maps, ...). */
  char unsupported[512];
  int64_t M;          /* tokens */
  int64_t K;          /* hidden size (model_dim) */
  int64_t N;          /* intermediate size: w1 has 2N rows */
  int64_t E;          /* experts */
  int64_t topk;
  int64_t block;      /* block_size / unit_size / block_m */
  int64_t sorted_len; /* elements of sorted_token_ids */
  int64_t blocks_len; /* elements of experts_ids / sorted_expert_ids */
  xr_dtype_t dtype;   /* hidden states, weights and the float output */
  bool weight_on_input;
  bool renormalize;
  /* Binding indices (inputs then returns); -1 when absent. `out` is the float result: return0,
   * hidden_states (in place) or the out argument (aiter stages). */
  int hidden, w1, w2, topk_weights, topk_ids, out, logits, token_expert_indices;
  int sorted_ids, sorted_weights, expert_ids, num_valid, moe_buf;
  /* moe_forward's layer (see above); indices -1 when absent */
  xr_moe_weights_t weights;
  xr_moe_act_t act;
  double swiglu_alpha, swiglu_limit;
  int w1_scale, w2_scale, w1_bias, w2_bias;
  int64_t block_n, block_k; /* fp8: the scales' block (rows, cols); 0 for one scale per expert */
} xr_moe_problem_t;

/* w1's rows holding gate and up column n. */
static inline int64_t xr_moe_gate_row(const xr_moe_problem_t *p, int64_t n) {
  return p->act == XR_MOE_ACT_SWIGLUOAI ? 2 * n : n;
}
static inline int64_t xr_moe_up_row(const xr_moe_problem_t *p, int64_t n) {
  return p->act == XR_MOE_ACT_SWIGLUOAI ? 2 * n + 1 : p->N + n;
}

/* Implementations defined in kernels/cpu, kernels/opencl and kernels/gpu, listed by
 * kernels/moe.c. */
extern const xr_kernel_impl_t xr_moe_cpu_fused;
extern const xr_kernel_impl_t xr_moe_opencl; /* opencl.moe (kernels/moe_device.c) */
extern const xr_kernel_impl_t xr_moe_gpu; /* gpu.moe (kernels/moe_device.c) */

/* OK when the problem is a variant someone implements; else UNIMPLEMENTED with the reason. */
xr_status_t xr_moe_check_supported(const xr_op_plan_t *plan, const char *impl);

/* Storage index of element (a, b, c) of a tensor of rank <= 3 (missing dims ignored). */
static inline int64_t xr_moe_at(const xr_tensor_t *t, int64_t a, int64_t b, int64_t c) {
  int64_t s[3] = {0, 0, 0};
  for (int32_t d = 0; d < t->rank && d < 3; d++) s[d] = t->strides[d];
  return t->offset + a * s[0] + b * s[1] + c * s[2];
}

/* silu(x) = x / (1 + e^-x) */
static inline double xr_moe_silu(double x) { return x / (1.0 + exp(-x)); }

/* The activation of GEMM-1's gate and up outputs (biases included). */
static inline double xr_moe_activate(const xr_moe_problem_t *p, double g, double u) {
  if (p->act == XR_MOE_ACT_SILU) return xr_moe_silu(g) * u;
  g = g < p->swiglu_limit ? g : p->swiglu_limit;
  u = u < -p->swiglu_limit ? -p->swiglu_limit : u > p->swiglu_limit ? p->swiglu_limit : u;
  return g / (1.0 + exp(-p->swiglu_alpha * g)) * (u + 1.0);
}

#endif
