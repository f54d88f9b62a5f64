/* The cases overloads_test.c cannot make from a schema alone, grouped by family: each entry the
 * whole "args" array of one built-in schema (formats/trace_schema.c), small shapes that agree
 * with each other, results "init": null. gaps[] lists the schemas that cannot run from what a
 * trace records, with (a part of) the reason they report; schemaless[] the claimed ops that have
 * no schema, and why they need none. */
#ifndef XR_TESTS_KERNELS_OVERLOAD_CASES_H
#define XR_TESTS_KERNELS_OVERLOAD_CASES_H

#include <stddef.h>

#define ARG(name, type, value)                                                                     \
  "{\"name\": \"" name "\", \"type\": \"" type "\", \"value\": " value "}"
/* A tensor value: T("float", "2, 4") */
#define T(dtype, shape) "{\"dtype\": \"" dtype "\", \"shape\": [" shape "]}"
#define OUT(dtype, shape) "{\"dtype\": \"" dtype "\", \"shape\": [" shape "], \"init\": null}"
#define ONES(dtype, shape) "{\"dtype\": \"" dtype "\", \"shape\": [" shape "], \"init\": \"ones\"}"
#define FP8 "c10::Float8_e4m3fn"

typedef struct overload_case {
  const char *schema; /* "op.overload", or "op.overload/arity" where overloads share a name */
  const char *args;   /* the "args" array's contents */
} overload_case_t;

static const overload_case_t special[] = {
    /* ---- gemm: batched operands of agreeing sizes; fp8 operands with float scales ---- */
    {"aten::bmm",
     ARG("self", "Tensor", T("float", "2, 4, 3")) ", "
     ARG("mat2", "Tensor", T("float", "2, 3, 5"))},
    {"aten::bmm.out",
     ARG("self", "Tensor", T("float", "2, 4, 3")) ", "
     ARG("mat2", "Tensor", T("float", "2, 3, 5")) ", "
     ARG("out", "Tensor(a!)", T("float", "2, 4, 5"))},
    {"aten::baddbmm",
     ARG("self", "Tensor", T("float", "2, 4, 5")) ", "
     ARG("batch1", "Tensor", T("float", "2, 4, 3")) ", "
     ARG("batch2", "Tensor", T("float", "2, 3, 5"))},
    {"aten::_scaled_mm",
     ARG("self", "Tensor", T(FP8, "4, 32")) ", " ARG("mat2", "Tensor", T(FP8, "32, 4")) ", "
     ARG("scale_a", "Tensor", T("float", "")) ", " ARG("scale_b", "Tensor", T("float", ""))},

    /* ---- indexing: out= records the result's size, the mask's count of set elements ---- */
    {"aten::masked_select.out",
     ARG("self", "Tensor", T("float", "4, 4")) ", " ARG("mask", "Tensor", T("bool", "4, 4")) ", "
     ARG("out", "Tensor(a!)", OUT("float", "5"))},
    {"aten::nonzero.out",
     ARG("self", "Tensor", T("bool", "4, 4")) ", "
     ARG("out", "Tensor(a!)", OUT("long int", "5, 2"))},

    /* ---- pool: [N, C, H, W] planes; backward grads of the pooled size ---- */
    {"aten::max_pool2d_with_indices",
     ARG("self", "Tensor", T("float", "1, 2, 4, 4")) ", " ARG("kernel_size", "int[2]", "[2, 2]")},
    {"aten::max_pool2d_with_indices_backward",
     ARG("grad_output", "Tensor", T("float", "1, 2, 2, 2")) ", "
     ARG("self", "Tensor", T("float", "1, 2, 4, 4")) ", "
     ARG("kernel_size", "int[2]", "[2, 2]") ", " ARG("stride", "int[2]", "[2, 2]") ", "
     ARG("padding", "int[2]", "[0, 0]") ", " ARG("dilation", "int[2]", "[1, 1]") ", "
     ARG("ceil_mode", "bool", "false") ", " ARG("indices", "Tensor", T("long int", "1, 2, 2, 2"))},
    {"aten::avg_pool2d",
     ARG("self", "Tensor", T("float", "1, 2, 4, 4")) ", " ARG("kernel_size", "int[2]", "[2, 2]")},
    {"aten::avg_pool2d_backward",
     ARG("grad_output", "Tensor", T("float", "1, 2, 2, 2")) ", "
     ARG("self", "Tensor", T("float", "1, 2, 4, 4")) ", "
     ARG("kernel_size", "int[2]", "[2, 2]") ", " ARG("stride", "int[2]", "[2, 2]") ", "
     ARG("padding", "int[2]", "[0, 0]") ", " ARG("ceil_mode", "bool", "false") ", "
     ARG("count_include_pad", "bool", "true") ", " ARG("divisor_override", "int?", "null")},
    {"aten::adaptive_avg_pool2d",
     ARG("self", "Tensor", T("float", "1, 2, 5, 5")) ", "
     ARG("output_size", "SymInt[2]", "[2, 3]")},
    {"aten::_adaptive_avg_pool2d",
     ARG("self", "Tensor", T("float", "1, 2, 5, 5")) ", "
     ARG("output_size", "SymInt[2]", "[2, 3]")},
    {"aten::_adaptive_avg_pool2d_backward",
     ARG("grad_output", "Tensor", T("float", "1, 2, 2, 3")) ", "
     ARG("self", "Tensor", T("float", "1, 2, 5, 5"))},
    {"aten::upsample_nearest1d",
     ARG("self", "Tensor", T("float", "1, 2, 4")) ", " ARG("output_size", "SymInt[1]", "[8]")},
    {"aten::upsample_nearest1d.vec",
     ARG("input", "Tensor", T("float", "1, 2, 4")) ", " ARG("output_size", "SymInt[]?", "[8]") ", "
     ARG("scale_factors", "float[]?", "null")},
    {"aten::upsample_nearest2d",
     ARG("self", "Tensor", T("float", "1, 2, 4, 4")) ", "
     ARG("output_size", "SymInt[2]", "[8, 6]")},
    {"aten::upsample_nearest2d.vec",
     ARG("input", "Tensor", T("float", "1, 2, 4, 4")) ", "
     ARG("output_size", "SymInt[]?", "null") ", "
     ARG("scale_factors", "float[]?", "[2.0, 1.5]")},
    {"aten::upsample_nearest3d",
     ARG("self", "Tensor", T("float", "1, 2, 2, 4, 4")) ", "
     ARG("output_size", "SymInt[3]", "[4, 8, 8]")},
    {"aten::upsample_nearest3d.vec",
     ARG("input", "Tensor", T("float", "1, 2, 2, 4, 4")) ", "
     ARG("output_size", "SymInt[]?", "[4, 8, 8]") ", "
     ARG("scale_factors", "float[]?", "null")},
    {"aten::upsample_bilinear2d",
     ARG("self", "Tensor", T("float", "1, 2, 4, 4")) ", "
     ARG("output_size", "SymInt[2]", "[8, 6]") ", "
     ARG("align_corners", "bool", "false")},
    {"aten::upsample_bilinear2d.vec",
     ARG("input", "Tensor", T("float", "1, 2, 4, 4")) ", "
     ARG("output_size", "SymInt[]?", "[8, 6]") ", "
     ARG("align_corners", "bool", "true") ", " ARG("scale_factors", "float[]?", "null")},

    /* ---- channel_norm: batch norm over C = 4 (training: the batch's own statistics; the
     * evaluation forms normalise by the running ones), group norm of 2 groups ---- */
    {"aten::_native_batch_norm_legit",
     ARG("input", "Tensor", T("float", "2, 4, 3")) ", "
     ARG("weight", "Tensor?", T("float", "4")) ", "
     ARG("bias", "Tensor?", "null") ", " ARG("running_mean", "Tensor(a!)", T("float", "4")) ", "
     ARG("running_var", "Tensor(b!)", ONES("float", "4")) ", " ARG("training", "bool", "true") ", "
     ARG("momentum", "float", "0.1") ", " ARG("eps", "float", "1e-05")},
    {"aten::_native_batch_norm_legit.no_stats",
     ARG("input", "Tensor", T("float", "2, 4, 3")) ", " ARG("weight", "Tensor?", "null") ", "
     ARG("bias", "Tensor?", T("float", "4")) ", " ARG("training", "bool", "true") ", "
     ARG("momentum", "float", "0.1") ", " ARG("eps", "float", "1e-05")},
    {"aten::native_group_norm",
     ARG("input", "Tensor", T("float", "2, 4, 3, 3")) ", "
     ARG("weight", "Tensor?", T("float", "4")) ", "
     ARG("bias", "Tensor?", T("float", "4")) ", "
     ARG("N", "SymInt", "2") ", " ARG("C", "SymInt", "4") ", " ARG("HxW", "SymInt", "9") ", "
     ARG("group", "int", "2") ", " ARG("eps", "float", "1e-05")},
    {"aten::native_group_norm_backward",
     ARG("grad_out", "Tensor", T("float", "2, 4, 3, 3")) ", "
     ARG("input", "Tensor", T("float", "2, 4, 3, 3")) ", "
     ARG("mean", "Tensor", T("float", "2, 2")) ", " ARG("rstd", "Tensor", T("float", "2, 2")) ", "
     ARG("weight", "Tensor?", T("float", "4")) ", "
     ARG("N", "SymInt", "2") ", " ARG("C", "SymInt", "4") ", " ARG("HxW", "SymInt", "9") ", "
     ARG("group", "int", "2") ", " ARG("output_mask", "bool[3]", "[true, true, true]")},
    {"aiter::_groupnorm_run",
     ARG("input", "Tensor", T("float", "2, 4, 3, 3")) ", " ARG("num_groups", "int", "2") ", "
     ARG("weight", "Tensor", T("float", "4")) ", " ARG("bias", "Tensor", T("float", "4")) ", "
     ARG("eps", "float", "1e-05")},
    {"aiter::_groupnorm_run.out",
     ARG("y", "Tensor!", OUT("float", "2, 4, 3, 3")) ", "
     ARG("workspace", "Tensor", T("float", "64")) ", "
     ARG("input", "Tensor", T("float", "2, 4, 3, 3")) ", " ARG("num_groups", "int", "2") ", "
     ARG("weight", "Tensor", T("float", "4")) ", " ARG("bias", "Tensor", T("float", "4")) ", "
     ARG("eps", "float", "1e-05")},

    /* ---- rotary: 4 tokens of 2 query heads and 1 key head of 8; a cache of 16 positions ---- */
    {"_C::rotary_embedding",
     ARG("positions", "Tensor", T("long int", "4")) ", "
     ARG("query", "Tensor!", T("float", "4, 16")) ", "
     ARG("key", "Tensor!?", T("float", "4, 8")) ", " ARG("head_size", "int", "8") ", "
     ARG("cos_sin_cache", "Tensor", T("float", "16, 8")) ", " ARG("is_neox", "bool", "true")},

    /* ---- quant: fp8 results; static per-tensor scale, dynamic ones written ---- */
    {"_C::static_scaled_fp8_quant",
     ARG("result", "Tensor!", OUT(FP8, "4, 16")) ", "
     ARG("input", "Tensor", T("float", "4, 16")) ", "
     ARG("scale", "Tensor", T("float", "1"))},
    {"_C::dynamic_scaled_fp8_quant",
     ARG("result", "Tensor!", OUT(FP8, "4, 16")) ", "
     ARG("input", "Tensor", T("float", "4, 16")) ", "
     ARG("scale", "Tensor!", OUT("float", "1"))},
    {"_C::dynamic_per_token_scaled_fp8_quant",
     ARG("result", "Tensor!", OUT(FP8, "4, 16")) ", "
     ARG("input", "Tensor", T("float", "4, 16")) ", "
     ARG("scale", "Tensor!", OUT("float", "4, 1")) ", " ARG("scale_ub", "Tensor?", "null")},

    /* ---- paged attention: 2 sequences of 4 heads (2 kv heads) of 64 over blocks of 16 floats
     * (x = 4), one partition; the cache writers: 4 tokens into 3 blocks of an fp8 cache (the cpu's
     * own kernel; it leaves other caches to the reference) ---- */
#define PAGED_CACHES                                                                               \
  ARG("key_cache", "Tensor", T("float", "6, 2, 16, 16, 4")) ", "                                   \
  ARG("value_cache", "Tensor", T("float", "6, 2, 64, 16")) ", "                                    \
  ARG("num_kv_heads", "int", "2") ", " ARG("scale", "float", "0.125") ", "                         \
  ARG("block_tables", "Tensor", T("int", "2, 2")) ", " ARG("seq_lens", "Tensor", T("int", "2"))
#define PAGED_TAIL                                                                                 \
  ARG("block_size", "int", "16") ", " ARG("max_seq_len", "int", "32") ", "                         \
  ARG("alibi_slopes", "Tensor?", "null") ", " ARG("kv_cache_dtype", "str", "\"auto\"") ", "        \
  ARG("k_scale", "Tensor", ONES("float", "1")) ", " ARG("v_scale", "Tensor", ONES("float", "1"))
#define PAGED_PARTITIONS(type)                                                                     \
  ARG("exp_sums", type, OUT("float", "2, 4, 1")) ", "                                              \
  ARG("max_logits", type, OUT("float", "2, 4, 1")) ", "                                            \
  ARG("tmp_out", type, OUT("float", "2, 4, 1, 64"))
#define BLOCKSPARSE                                                                                \
  ARG("tp_rank", "int", "0") ", " ARG("blocksparse_local_blocks", "int", "0") ", "                 \
  ARG("blocksparse_vert_stride", "int", "0") ", "                                                  \
  ARG("blocksparse_block_size", "int", "64") ", "                                                  \
  ARG("blocksparse_head_sliding_step", "int", "0")
#define ROCM_PAGED                                                                                 \
  ARG("out", "Tensor!", OUT("float", "2, 4, 64")) ", " PAGED_PARTITIONS("Tensor") ", "             \
  ARG("query", "Tensor", T("float", "2, 4, 64")) ", " PAGED_CACHES ", "                            \
  ARG("query_start_loc", "Tensor?", "null") ", " PAGED_TAIL ", "                                   \
  ARG("fp8_out_scale", "Tensor?", "null")
    {"_C::paged_attention_v1",
     ARG("out", "Tensor!", OUT("float", "2, 4, 64")) ", "
     ARG("query", "Tensor", T("float", "2, 4, 64")) ", "
     PAGED_CACHES ", " PAGED_TAIL ", " BLOCKSPARSE},
    {"_C::paged_attention_v2",
     ARG("out", "Tensor!", OUT("float", "2, 4, 64")) ", " PAGED_PARTITIONS("Tensor!") ", "
     ARG("query", "Tensor", T("float", "2, 4, 64")) ", " PAGED_CACHES ", " PAGED_TAIL ", "
     BLOCKSPARSE},
    {"_rocm_C::paged_attention/19", ROCM_PAGED},
    {"_rocm_C::paged_attention/20", ROCM_PAGED ", " ARG("mfma_type", "str", "\"fp8\"")},
#define CACHE_KV                                                                                   \
  ARG("key", "Tensor", T("float", "4, 2, 16")) ", " ARG("value", "Tensor", T("float", "4, 2, 16"))
#define CACHE_TAIL                                                                                 \
  ARG("slot_mapping", "Tensor", T("long int", "4")) ", "                                           \
  ARG("kv_cache_dtype", "str", "\"fp8\"") ", "                                                     \
  ARG("k_scale", "Tensor", ONES("float", "1")) ", " ARG("v_scale", "Tensor", ONES("float", "1"))
    {"_C_cache_ops::reshape_and_cache",
     CACHE_KV ", " ARG("key_cache", "Tensor!", T("unsigned char", "3, 2, 1, 16, 16")) ", "
     ARG("value_cache", "Tensor!", T("unsigned char", "3, 2, 16, 16")) ", " CACHE_TAIL},
    {"_C_cache_ops::reshape_and_cache_flash",
     CACHE_KV ", " ARG("key_cache", "Tensor!", T("unsigned char", "3, 16, 2, 16")) ", "
     ARG("value_cache", "Tensor!", T("unsigned char", "3, 16, 2, 16")) ", " CACHE_TAIL},

    /* ---- unified attention: 4 tokens of 2 heads of 8 (the engine builds the cache) ---- */
#define UA_QKV                                                                                     \
  ARG("query", "Tensor", T("float", "4, 2, 8")) ", "                                               \
  ARG("key", "Tensor", T("float", "4, 2, 8")) ", " ARG("value", "Tensor", T("float", "4, 2, 8"))
#define LAYER(name) ARG("layer_name", "str", "\"model.layers.0." name "\"")
    {"vllm::unified_attention_with_output",
     UA_QKV ", " ARG("output", "Tensor(a!)", OUT("float", "4, 2, 8")) ", " LAYER("self_attn.attn")},
    {"vllm::unified_attention", UA_QKV ", " LAYER("self_attn.attn")},

    /* ---- moe: 4 tokens of 8 routed to 2 of 4 experts of intermediate size 4 (w1 [E, 2N, K],
     * w2 [E, K, N]); 16 routed ids of 4 experts in blocks of 2 sort into at most
     * 16 + 4 x (2 - 1) slots ---- */
#define EXPERT_WEIGHTS                                                                             \
  ARG("w1", "Tensor", T("float", "4, 8, 8")) ", " ARG("w2", "Tensor", T("float", "4, 8, 4"))
#define ROUTED                                                                                     \
  EXPERT_WEIGHTS ", " ARG("topk_weights", "Tensor", T("float", "4, 2")) ", "                       \
  ARG("topk_ids", "Tensor", T("int", "4, 2"))
    {"vllm::outplace_fused_experts",
     ARG("hidden_states", "Tensor", T("float", "4, 8")) ", " ROUTED},
    {"vllm::inplace_fused_experts",
     ARG("hidden_states", "Tensor(a!)", T("float", "4, 8")) ", " ROUTED},
    /* the trace holds no weights: the case gives them, with top_k, as --model-config adds them */
    {"vllm::moe_forward",
     ARG("hidden_states", "Tensor", T("float", "4, 8")) ", "
     ARG("router_logits", "Tensor", T("float", "4, 4")) ", "
     LAYER("mlp.experts") ", " EXPERT_WEIGHTS ", " ARG("top_k", "int", "2")},
#define ALIGN                                                                                      \
  ARG("topk_ids", "Tensor", T("int", "4, 4")) ", " ARG("num_experts", "int", "4") ", "             \
  ARG("block_size", "int", "2") ", " ARG("sorted_token_ids", "Tensor!", OUT("int", "20")) ", "     \
  ARG("experts_ids", "Tensor!", OUT("int", "10")) ", "                                             \
  ARG("num_tokens_post_pad", "Tensor!", OUT("int", "1"))
    {"_moe_C::moe_align_block_size/6", ALIGN},
    {"_moe_C::moe_align_block_size/7", ALIGN ", " ARG("maybe_expert_map", "Tensor?", "null")},
    {NULL, NULL},
};

/* Overloads that do not run, with (a part of) the reason they report. */
static const struct {
  const char *schema, *reason;
} gaps[] = {
    /* a mask's count of set elements sizes the result: without out= nothing records it */
    {"aten::masked_select", "only an out= argument records"},
    {"aten::nonzero", "only an out= argument records"},
    {NULL, NULL},
};

/* Claimed ops without a built-in schema, other than the pointwise table's rows and the in-place
 * (`NAME_`) and list (`_foreach_NAME`, `_foreach_NAME_`) forms of rows, of these and of ops with
 * a schema, which overloads_test.c derives. Extraction keeps such an op's arguments in the order
 * the trace records them, unnamed, and its family reads each by position. A schema would add
 * names, defaults and which tensors are pure outputs; formats/trace_schema.c holds only those it
 * cites a source for, so a name here is one to add there once a source is at hand. */
static const struct {
  const char *const names[24];
  const char *why;
} schemaless[] = {
    {{"aten::linspace", "aten::zeros", "aten::ones", "aten::new_full", "aten::new_zeros",
      "aten::new_ones", "aten::full_like", "aten::zeros_like", "aten::ones_like", "aten::clone",
      "aten::contiguous", "aten::flip", "aten::roll", "aten::repeat", "aten::constant_pad_nd",
      "aten::stack", "aten::narrow_copy", "aten::repeat_interleave", "aten::tril", "aten::triu",
      "aten::split_copy", "aten::split_with_sizes_copy", "aten::unbind_copy"},
     "creation and movement (kernels/movement.c), read by position"},
    {{"aiter::gemm_a16w16", "vllm::rocm_unquantized_gemm", "sgl_kernel::gelu_tanh_and_mul",
      "aiter::rmsnorm", "aiter::add_rmsnorm", "aiter::rmsnorm2d_fwd_with_add_ck",
      "sgl_kernel::rotary_embedding", "aiter::mha_varlen_fwd", "aiter::mha_batch_prefill",
      "sglang_profiler::attention_paged_attention_ragged", "sglang::store_cache",
      "aiter::moe_sorting_fwd", "aiter::ck_moe_stage1", "aiter::ck_moe_stage2"},
     "serving stacks' ops, read by position as their family's header comment lists them"},
    {{"TopK", "SortTokens"}, "triton_kernels' routing (kernels/routing.c): not a torch op"},
    {{"aten::_local_scalar_dense"}, "one tensor, read back to the host"},
    {{"record_param_comms"}, "Kineto's record around a collective; formats/trace_comms.c reads it"},
};

#endif
