/* vLLM v1's attention wrapper (vllm::unified_attention_with_output, vllm::unified_attention):
 * the layer's whole forward — the new tokens' key/value written into the paged KV cache
 * (reshape_and_cache_flash at slot_mapping), then causal attention of each sequence's query
 * tokens over its whole context in the cache (bottom-right aligned), GQA, fp32 softmax.
 *
 * The trace records only query, key, value, output and the layer name; the KV cache and the
 * batch metadata live in the serving process. The family therefore completes the op before
 * analysis (xr_op_family_t.complete): every one of these kwargs the bundle lacks is added as a
 * tensor spec, so the engine allocates it like any input, the replay's initializer
 * (replay/init.c) fills it, and --check runs the reference on the very same contents:
 *   kv_cache         Tensor(a!) [2, num_blocks, block_size, num_kv_heads, head_size]
 *                    (FlashAttention's layout; a bundle may also give [num_blocks, 2, ...])
 *   block_table      int32 [num_seqs, max_blocks_per_seq]
 *   seq_lens         int32 [num_seqs]      key length of each sequence (context + new tokens)
 *   query_start_loc  int32 [num_seqs + 1]  each sequence's first query token
 *   slot_mapping     int64 [num_tokens]    cache slot of each new token; -1: padding
 * Which sequences there are (the layout) is decided at analysis from, in order: the int-list
 * kwargs query_lens / context_lens (tokens already cached), the trace's vLLM iteration hints (prefill_seqs,
 * prefill_tokens, decode_seqs, decode_tokens, prefill/decode_context_tokens), or the default:
 * one sequence whose queries are all the tokens (a fresh prompt). docs/replay.md has the rules.
 * fp8: the cache may hold fp8 (kv_cache_dtype, implied by a uint8 / fp8 kv_cache or an fp8
 * query); the query may be fp8 (dequantised by kwarg q_scale, default 1) with key, value and
 * output in the model's dtype; the output may be fp8 with output_scale (o / scale, clamped). */
#ifndef XR_KERNELS_UNIFIED_ATTENTION_H
#define XR_KERNELS_UNIFIED_ATTENTION_H

#include "kernels/attention.h"

/* Key length of a decode sequence when nothing says otherwise. */
#define XR_UA_DEFAULT_DECODE_KEYS 1024

typedef enum xr_ua_source {
  XR_UA_FROM_DEFAULT = 0, /* no hints, no kwargs */
  XR_UA_FROM_HINTS,       /* the trace's iteration hints */
  XR_UA_FROM_KWARGS,      /* query_lens / context_lens int lists in the bundle */
} xr_ua_source_t;

/* The batch one execution replays: sequence b has q_len[b] query tokens (consecutive, in order)
 * and k_len[b] keys, its queries being its last q_len[b] keys. */
typedef struct xr_ua_layout {
  int64_t seqs, tokens;     /* sequences; query tokens they hold (the rest are padding) */
  int64_t *q_len, *k_len;   /* seqs entries each */
  int64_t max_q, max_k, blocks_needed;
  xr_ua_source_t source;
  char text[256];           /* how it was decided, for the replay's policy line */
} xr_ua_layout_t;

/* The parsed op: the cache write and the attention, each in its family's own problem over the
 * same bindings, plus the layout and the binding indices the initializer fills. */
typedef struct xr_ua_problem {
  xr_cache_problem_t cache;
  xr_attn_problem_t attn;
  xr_ua_layout_t layout;
  int64_t num_tokens, heads, kv_heads, head_size, block_size, num_blocks, max_blocks;
  /* binding indices */
  int query, key, value, output, kv_cache, block_table, seq_lens, query_start_loc, slot_mapping;
  int output_scale; /* an fp8 output's scale, -1 when None */
  int64_t kv_block_dim;     /* 1 for [2, blocks, ...], 0 for [blocks, 2, ...] */
} xr_ua_problem_t;

/* Implementations compose the kv_cache family's scatter and an attention implementation over
 * the same bindings (kernels/unified_attention.c, kernels/cpu/, kernels/opencl/). */
xr_status_t xr_ua_supports(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_kernel_impl_t *cache,
                           const xr_kernel_impl_t *attn);
xr_status_t xr_ua_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                          const xr_kernel_impl_t *cache, const xr_kernel_impl_t *attn, void **out_state);
xr_status_t xr_ua_enqueue(void *state, xr_hal_stream_t *stream);
void xr_ua_release(void *state);

extern const xr_kernel_impl_t xr_ua_cpu_impl, xr_ua_opencl_impl, xr_ua_gpu_impl;

#endif
