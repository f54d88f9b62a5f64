/* The work each family's planner counts for one execution, plan.flops and plan.bytes, on one
 * hand-worked op per family (docs/replay.md "What FLOPs and bytes count"). The replay divides
 * them by the median time for TFLOP/s and GB/s, calls an op compute- or memory-bound from their
 * ratio and judges whether it runs from cache by its bytes, so they are the work the op must do:
 * each input read once and each output written once; gathers, scatters and index ops the rows
 * indexed, paged caches the part the block tables reference, a broadcast operand its own size.
 * Every expected number is written out as arithmetic from the op's shapes. Nothing runs. */
#include <criterion/criterion.h>
#include <string.h>

#include "formats/bundle.h"
#include "kernels/kernels.h"

/* One-op bundles in our JSON schema, assembled at compile time. */
#define T(dtype, shape) "{\"dtype\": \"" dtype "\", \"shape\": " shape "}"
#define TS(dtype, shape, strides) "{\"dtype\": \"" dtype "\", \"shape\": " shape ", \"strides\": " strides "}"
#define A(name, type, value) "{\"name\": \"" name "\", \"type\": \"" type "\", \"value\": " value "}"
#define OP(name, args, kwargs)                                                                       \
  "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": \"" name "\", \"args\": [" \
  args "], \"kwargs\": [" kwargs "]}]}"

#define F32 "float"
#define F16 "c10::Half"
#define BF16 "c10::BFloat16"
#define I32 "int"
#define I64 "long int"

/* Plans `json` and asserts its counts, exactly: every term is an integer well below 2^53. */
static void expect_counts(const char *json, double flops, double bytes) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK, "%s",
               xr_last_error());
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_OK, "%s: %s", b->ops[0].name, xr_last_error());
  cr_assert_eq(plan.flops, flops, "%s: %.17g flops, expected %.17g", b->ops[0].name, plan.flops, flops);
  cr_assert_eq(plan.bytes, bytes, "%s: %.17g bytes, expected %.17g", b->ops[0].name, plan.bytes, bytes);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
}

/* gemm: C[16, 2048] = A[16, 2048] B[2048, 2048] in bf16. A multiply and an add per (m, n, k);
 * A and B read once, C written once, 2 bytes an element. */
Test(work_counts, gemm) {
  expect_counts(OP("aten::mm", A("self", "Tensor", T(BF16, "[16, 2048]")) ", "
                                   A("mat2", "Tensor", T(BF16, "[2048, 2048]")), ""),
                2.0 * 16 * 2048 * 2048 /* 2MNK */,
                2.0 * (16 * 2048 + 2048 * 2048 + 16 * 2048) /* A + B read, C written */);
}

/* gemm with views: bmm of a [4, 32, 64] bf16 batch that expands one matrix (stride 0 over the
 * batch) by a [4, 64, 16] batch, and addmm with beta = 0. The expanded matrix is one matrix of
 * memory, read once; with beta = 0 torch does not read C at all. */
Test(work_counts, gemm_expanded_operand_and_unread_addend) {
  expect_counts(OP("aten::bmm", A("self", "Tensor", TS(BF16, "[4, 32, 64]", "[0, 64, 1]")) ", "
                                    A("mat2", "Tensor", T(BF16, "[4, 64, 16]")), ""),
                2.0 * 4 * 32 * 16 * 64 /* 2 x batch x MNK */,
                2.0 * (32 * 64 /* one matrix of A */ + 4 * 64 * 16 /* B */ + 4 * 32 * 16 /* C */));
  expect_counts(OP("aten::addmm", A("self", "Tensor", T(F32, "[16, 32]")) ", "
                                      A("mat1", "Tensor", T(F32, "[16, 8]")) ", "
                                      A("mat2", "Tensor", T(F32, "[8, 32]")) ", "
                                      A("beta", "Scalar", "0") ", " A("alpha", "Scalar", "1"), ""),
                2.0 * 16 * 32 * 8, 4.0 * (16 * 8 + 8 * 32 + 16 * 32) /* A, B, result; no C */);
}

/* _scaled_mm with row-wise fp32 scales: fp8 e4m3 A [16, 64] and B [64, 32] (column-major),
 * scale_a [16, 1], scale_b [1, 32], a bf16 result. The scales are read as the operands are. */
Test(work_counts, scaled_mm_counts_its_float_scales) {
  expect_counts(OP("aten::_scaled_mm",
                   A("self", "Tensor", T("c10::Float8_e4m3fn", "[16, 64]")) ", "
                   A("mat2", "Tensor", TS("c10::Float8_e4m3fn", "[64, 32]", "[1, 64]")) ", "
                   A("scale_a", "Tensor", T(F32, "[16, 1]")) ", " A("scale_b", "Tensor", T(F32, "[1, 32]")) ", "
                   A("bias", "Tensor?", "null") ", " A("scale_result", "Tensor?", "null") ", "
                   A("out_dtype", "ScalarType?", "15"), ""),
                2.0 * 16 * 32 * 64,
                1.0 * (16 * 64 + 64 * 32) /* fp8 operands */ + 4.0 * (16 + 32) /* scales */ +
                    2.0 * 16 * 32 /* bf16 result */);
}

/* elementwise: x[64, 1024] + bias[1024] in fp32. One add per output element; the broadcast bias
 * is read once (its own 1024 elements), not once per row. */
Test(work_counts, elementwise_broadcast_operand_counts_once) {
  expect_counts(OP("aten::add", A("self", "Tensor", T(F32, "[64, 1024]")) ", "
                                    A("other", "Tensor", T(F32, "[1024]")), ""),
                64.0 * 1024 /* one add per output element */,
                4.0 * 64 * 1024 /* self */ + 4.0 * 1024 /* bias, once */ + 4.0 * 64 * 1024 /* out */);
}

/* elementwise's index_select: 8 rows of a [50000, 256] bf16 table. The rows moved and the
 * indices, not the 25 MB table. */
Test(work_counts, elementwise_index_select_counts_the_rows_selected) {
  expect_counts(OP("aten::index_select", A("self", "Tensor", T(BF16, "[50000, 256]")) ", "
                                             A("dim", "int", "0") ", " A("index", "Tensor", T(I64, "[8]")),
                   ""),
                0 /* a copy */,
                2.0 * 8 * 256 /* rows read */ + 8.0 * 8 /* int64 indices */ + 2.0 * 8 * 256 /* rows written */);
}

/* argmax over dim 1 of a [32, 1000] fp32 view that expands one row (stride 0 over dim 0): one
 * compare per element examined; the row in memory is read once, an int64 index written per row. */
Test(work_counts, argmax) {
  expect_counts(OP("aten::argmax", A("self", "Tensor", TS(F32, "[32, 1000]", "[0, 1]")) ", "
                                       A("dim", "int?", "1") ", " A("keepdim", "bool", "false"), ""),
                32.0 * 1000 /* a compare per element */,
                4.0 * 1000 /* the one row of memory */ + 8.0 * 32 /* int64 results */);
}

/* reduce: sum over dim 1 of [128, 4096] fp32. One add per input element; the input read once,
 * one fp32 sum written per row. */
Test(work_counts, reduce) {
  expect_counts(OP("aten::sum", A("self", "Tensor", T(F32, "[128, 4096]")) ", " A("dim", "int[1]?", "[1]") ", "
                                    A("keepdim", "bool", "false"),
                   A("dtype", "ScalarType?", "null")),
                128.0 * 4096 /* one add per input element */, 4.0 * 128 * 4096 + 4.0 * 128 /* in, sums */);
}

/* loss: mse_loss (mean) of a [128, 4096] bf16 input against a [4096] target broadcast over the
 * rows: subtract, square and add per element, one divide; the target read once (its own 4096
 * elements), one bf16 result. mse_loss_backward (none) of [64, 256] fp32: subtract and two
 * multiplies per element; grad_output, self and target read, grad_input written. */
Test(work_counts, loss) {
  expect_counts(OP("aten::mse_loss", A("self", "Tensor", T(BF16, "[128, 4096]")) ", "
                                         A("target", "Tensor", T(BF16, "[4096]")) ", "
                                         A("reduction", "int", "1"), ""),
                3.0 * 128 * 4096 + 1 /* (x - t)^2 summed, one divide */,
                2.0 * 128 * 4096 + 2.0 * 4096 /* self, target once */ + 2.0 /* the mean */);
  expect_counts(OP("aten::mse_loss_backward", A("grad_output", "Tensor", T(F32, "[64, 256]")) ", "
                                                  A("self", "Tensor", T(F32, "[64, 256]")) ", "
                                                  A("target", "Tensor", T(F32, "[64, 256]")) ", "
                                                  A("reduction", "int", "0"), ""),
                3.0 * 64 * 256 /* norm * (x - t) * grad */,
                4.0 * 3 * 64 * 256 /* three inputs */ + 4.0 * 64 * 256 /* grad_input */);
}

/* softmax over the last dim of [16, 1024] fp16: five operations an element (max, subtract, exp,
 * sum, scale); the input read once and the output written once. */
Test(work_counts, softmax) {
  expect_counts(OP("aten::_softmax", A("self", "Tensor", T(F16, "[16, 1024]")) ", " A("dim", "int", "-1") ", "
                                         A("half_to_float", "bool", "false"), ""),
                5.0 * 16 * 1024, 2.0 * 16 * 1024 + 2.0 * 16 * 1024 /* in, out */);
}

/* norm: vLLM's RMS norm of [32, 4096] bf16 rows: four operations an element (square-and-add,
 * then two multiplies); input read, result written, the weight row read once. */
Test(work_counts, norm) {
  expect_counts(OP("_C::rms_norm", A("result", "Tensor(a!)", T(BF16, "[32, 4096]")) ", "
                                       A("input", "Tensor", T(BF16, "[32, 4096]")) ", "
                                       A("weight", "Tensor", T(BF16, "[4096]")) ", " A("epsilon", "float", "1e-06"),
                   ""),
                4.0 * 32 * 4096, 2.0 * 32 * 4096 * 2 /* input, result */ + 2.0 * 4096 /* weight */);
}

/* conv: a 3x3, pad 1 convolution of [8, 64, 56, 56] fp16 to 128 channels with bias. A multiply
 * and an add per MAC (n x c_out x c_in x out pixels x kernel taps; the bias add is not counted);
 * input, weight, bias read once, output written once. */
Test(work_counts, conv) {
  expect_counts(OP("aten::convolution",
                   A("input", "Tensor", T(F16, "[8, 64, 56, 56]")) ", " A("weight", "Tensor", T(F16, "[128, 64, 3, 3]")) ", "
                   A("bias", "Tensor?", T(F16, "[128]")) ", " A("stride", "SymInt[]", "[1, 1]") ", "
                   A("padding", "SymInt[]", "[1, 1]") ", " A("dilation", "SymInt[]", "[1, 1]") ", "
                   A("transposed", "bool", "false") ", " A("output_padding", "SymInt[]", "[0, 0]") ", "
                   A("groups", "SymInt", "1"), ""),
                2.0 * 8 * 128 * 64 * 56 * 56 * 9 /* 2 x MACs */,
                2.0 * (8 * 64 * 56 * 56 + 128 * 64 * 9 + 128 + 8 * 128 * 56 * 56) /* in, w, bias, out */);
}

/* pool: 2x2 stride-2 max pooling of [4, 16, 32, 32] fp32. One compare per window element per
 * output; the input read once, each pooled value (fp32) and its int64 index written once. */
Test(work_counts, pool) {
  expect_counts(OP("aten::max_pool2d_with_indices",
                   A("self", "Tensor", T(F32, "[4, 16, 32, 32]")) ", " A("kernel_size", "int[2]", "[2, 2]") ", "
                   A("stride", "int[2]", "[2, 2]") ", " A("padding", "int[2]", "[0, 0]") ", "
                   A("dilation", "int[2]", "[1, 1]") ", " A("ceil_mode", "bool", "false"), ""),
                4.0 * 16 * 16 * 16 * 4 /* outputs x window */,
                4.0 * 4 * 16 * 32 * 32 /* input */ + 4.0 * 16 * 16 * 16 * (4 + 8) /* values + int64 indices */);
}

/* channel_norm: training batch norm of [8, 32, 16, 16] fp32 with affine weights and running
 * statistics. Six operations an element (two sums, a squared deviation, subtract, multiply,
 * multiply-add); x read and the result written once, weight and bias read, the running mean and
 * variance read and written back, save_mean and save_invstd written. */
Test(work_counts, channel_norm) {
  expect_counts(OP("aten::native_batch_norm",
                   A("input", "Tensor", T(F32, "[8, 32, 16, 16]")) ", " A("weight", "Tensor?", T(F32, "[32]")) ", "
                   A("bias", "Tensor?", T(F32, "[32]")) ", " A("running_mean", "Tensor(a!)?", T(F32, "[32]")) ", "
                   A("running_var", "Tensor(b!)?", T(F32, "[32]")) ", " A("training", "bool", "true") ", "
                   A("momentum", "float", "0.1") ", " A("eps", "float", "1e-05"), ""),
                6.0 * 8 * 32 * 256,
                4.0 * 8 * 32 * 256 * 2 /* x, out */ + 4.0 * 32 * 2 /* weight, bias */ +
                    4.0 * 32 * 2 * 2 /* running stats read and written */ + 4.0 * 32 * 2 /* saved stats */);
}

/* rotary: NeoX rotary embedding of 4 tokens, 8 query and 2 key heads of 64, fully rotated, fp16,
 * in place. Two multiplies and an add per rotated element; each rotated element read and
 * written, per token one 64-wide cos/sin row of the [4096, 64] cache (not the cache) and its
 * int64 position. */
Test(work_counts, rotary) {
  expect_counts(OP("_C::rotary_embedding",
                   A("positions", "Tensor", T(I64, "[4]")) ", " A("query", "Tensor(a!)", T(F16, "[4, 512]")) ", "
                   A("key", "Tensor(b!)?", T(F16, "[4, 128]")) ", " A("head_size", "int", "64") ", "
                   A("cos_sin_cache", "Tensor", T(F16, "[4096, 64]")) ", " A("is_neox", "bool", "true"), ""),
                3.0 * 4 * (8 + 2) * 64, 2.0 * 4 * (8 + 2) * 64 * 2 /* q, k read and written */ +
                                            4.0 * (64 * 2 + 8) /* cache rows, positions */);
}

/* attention: causal SDPA, [2, 8, 128, 64] bf16 q, k, v. Query i attends keys 0..i: 128 x 129 / 2
 * pairs per (batch, head), each a q.k dot product and a p.v accumulation of 64 (2 x 2 x 64
 * flops); q, k, v read and the output written once. */
Test(work_counts, attention) {
  expect_counts(OP("aten::scaled_dot_product_attention",
                   A("query", "Tensor", T(BF16, "[2, 8, 128, 64]")) ", " A("key", "Tensor", T(BF16, "[2, 8, 128, 64]")) ", "
                   A("value", "Tensor", T(BF16, "[2, 8, 128, 64]")) ", " A("attn_mask", "Tensor?", "null") ", "
                   A("dropout_p", "float", "0.0") ", " A("is_causal", "bool", "true"), ""),
                2.0 * 2 * (2 * 8 * (128 * 129 / 2)) * 64 /* 2 x 2 x pairs x head_dim */,
                2.0 * 4 * (2 * 8 * 128 * 64) /* q, k, v, out */);
}

/* attention over an expanded kv head: SDPA of [1, 8, 32, 64] fp16 queries over keys and values
 * that are one head expanded to 8 (stride 0 over heads, as `k.expand(1, 8, 32, 64)` gives).
 * Not causal: 32 x 32 pairs per head. K and V are one head of memory each. */
Test(work_counts, attention_reads_an_expanded_head_once) {
  expect_counts(OP("aten::scaled_dot_product_attention",
                   A("query", "Tensor", T(F16, "[1, 8, 32, 64]")) ", "
                   A("key", "Tensor", TS(F16, "[1, 8, 32, 64]", "[2048, 0, 64, 1]")) ", "
                   A("value", "Tensor", TS(F16, "[1, 8, 32, 64]", "[2048, 0, 64, 1]")) ", "
                   A("attn_mask", "Tensor?", "null") ", " A("dropout_p", "float", "0.0") ", "
                   A("is_causal", "bool", "false"), ""),
                2.0 * 2 * (8 * 32 * 32) * 64 /* 2 x 2 x pairs x head_dim */,
                2.0 * (8 * 32 * 64 /* q */ + 2 * 32 * 64 /* k, v: one head each */ +
                       8 * 32 * 64 /* out */));
}

/* attention over a page list: SGLang's ragged decode of 2 sequences (4 heads, 2 kv heads of 64,
 * bf16) whose 100 context tokens (the hints) sit in a 1000-page cache through a page list
 * allocated for 5000. Each query attends its 50 keys; the 100 pages referenced are read, and
 * the 100 page-list entries they use, not the cache or the whole list. */
Test(work_counts, attention_page_list_counts_the_pages_referenced) {
  expect_counts("{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": "
                "\"sglang_profiler::attention_paged_attention_ragged\", \"args\": ["
                A("out", BF16, T(BF16, "[2, 4, 64]")) ", " A("workspace", "unsigned char", T("unsigned char", "[4096]")) ", "
                A("query", BF16, T(BF16, "[2, 4, 64]")) ", " A("key_cache", BF16, T(BF16, "[1000, 1, 2, 64]")) ", "
                A("value_cache", BF16, T(BF16, "[1000, 1, 2, 64]")) ", " A("kv_indptr", I32, T(I32, "[3]")) ", "
                A("kv_page_indices", I32, T(I32, "[5000]")) ", " A("kv_last_page_lens", I32, T(I32, "[64]"))
                "], \"hints\": {\"decode_seqs\": 2, \"decode_context_tokens\": 100}}]}",
                2.0 * (2 * 4 * 50) * (64 + 64) /* 2 x pairs x (D + Dv) */,
                2.0 * 100 * 2 * 64 * 2 /* K and V of the 100 pages */ + 2.0 * (2 * 4 * 64) * 2 /* q, out */ +
                    4.0 * 3 /* kv_indptr */ + 4.0 * 100 /* page-list entries used */);
}

/* paged_attention: vLLM's v1 decode of 2 sequences (8 query heads, 2 kv heads of 128, fp16) at
 * max_seq_len 64 over a cache of 64 blocks of 16 tokens. The block tables reference 2 x 4
 * blocks (128 tokens) of the 1024 the cache holds: those keys and values are read, not the
 * cache. Each query row attends 64 keys (2 x 2 x 128 flops a pair). */
Test(work_counts, paged_attention_counts_the_blocks_referenced) {
  expect_counts(OP("_C::paged_attention_v1",
                   A("out", "Tensor(a!)", T(F16, "[2, 8, 128]")) ", " A("query", "Tensor", T(F16, "[2, 8, 128]")) ", "
                   A("key_cache", "Tensor", T(F16, "[64, 2, 16, 16, 8]")) ", "
                   A("value_cache", "Tensor", T(F16, "[64, 2, 128, 16]")) ", " A("num_kv_heads", "int", "2") ", "
                   A("scale", "float", "0.088388") ", " A("block_tables", "Tensor", T(I32, "[2, 4]")) ", "
                   A("seq_lens", "Tensor", T(I32, "[2]")) ", " A("block_size", "int", "16") ", "
                   A("max_seq_len", "int", "64") ", " A("alibi_slopes", "Tensor?", "null") ", "
                   A("kv_cache_dtype", "str", "\"auto\"") ", " A("k_scale", "Tensor", T(F32, "[1]")) ", "
                   A("v_scale", "Tensor", T(F32, "[1]")) ", " A("tp_rank", "int", "0") ", "
                   A("blocksparse_local_blocks", "int", "0") ", " A("blocksparse_vert_stride", "int", "0") ", "
                   A("blocksparse_block_size", "int", "64") ", " A("blocksparse_head_sliding_step", "int", "0"),
                   ""),
                2.0 * 2 * (2 * 8 * 64) * 128 /* 2 x 2 x pairs x head_dim */,
                2.0 * (2 * 4 * 16) * 2 * 128 * 2 /* K and V of 8 blocks x 16 tokens x 2 kv heads */ +
                    4.0 * 2 * 4 /* those block-table entries */ + 4.0 * 2 /* seq_lens */ +
                    2.0 * (2 * 8 * 128) * 2 /* queries read, outputs written */);
}

/* kv_cache: reshape_and_cache of 8 tokens (2 kv heads of 64, fp16) into a 256-block cache. The
 * slots written, not the cache: each key and value element read and stored once, and the
 * int64 slot_mapping read. No arithmetic (the cache holds fp16, no fp8 scaling). */
Test(work_counts, kv_cache_counts_the_slots_written) {
  expect_counts(OP("_C_cache_ops::reshape_and_cache",
                   A("key", "Tensor", T(F16, "[8, 2, 64]")) ", " A("value", "Tensor", T(F16, "[8, 2, 64]")) ", "
                   A("key_cache", "Tensor(a!)", T(F16, "[256, 2, 8, 16, 8]")) ", "
                   A("value_cache", "Tensor(b!)", T(F16, "[256, 2, 64, 16]")) ", "
                   A("slot_mapping", "Tensor", T(I64, "[8]")) ", " A("kv_cache_dtype", "str", "\"auto\"") ", "
                   A("k_scale", "Tensor", T(F32, "[1]")) ", " A("v_scale", "Tensor", T(F32, "[1]")),
                   ""),
                0, 2.0 * (8 * 2 * 64) * (2 + 2) /* key and value read, stored */ + 8.0 * 8 /* slots */);
}

/* unified_attention: vLLM's layer over 4 query tokens (4 heads, 2 kv heads of 64, fp16) as two
 * sequences: one decode query over 20 cached keys (21 keys), one 3-token prompt (3 keys). The
 * replay adds the 16-token-block cache, block table, seq_lens, query_start_loc and slot_mapping.
 * Pairs: 21 for the decode row, 1 + 2 + 3 for the causal prompt. */
Test(work_counts, unified_attention) {
  expect_counts(OP("vllm::unified_attention_with_output",
                   A("query", "Tensor", T(F16, "[4, 4, 64]")) ", " A("key", "Tensor", T(F16, "[4, 2, 64]")) ", "
                   A("value", "Tensor", T(F16, "[4, 2, 64]")) ", " A("output", "Tensor(a!)", T(F16, "[4, 4, 64]")) ", "
                   A("layer_name", "str", "\"model.layers.0.self_attn.attn\"") ", "
                   A("output_scale", "Tensor?", "null") ", " A("output_block_scale", "Tensor?", "null"),
                   A("query_lens", "int[]", "[1, 3]") ", " A("context_lens", "int[]", "[20, 0]")),
                2.0 * 2 * 4 * (21 + 6) * 64 /* 2 x 2 x heads x pairs x head_dim */,
                2.0 * (21 + 3) * (2 * 64) * 2 /* K and V of the 24 keys the sequences hold */ +
                    2.0 * (4 * 4 * 64) * 2 /* queries read, outputs written */ +
                    2.0 * (4 * 2 * 64) * (2 + 2) /* new keys and values read and stored */ +
                    4.0 * (2 + 1) /* block-table entries: 2 blocks for 21 keys, 1 for 3 */ +
                    4.0 * 2 /* seq_lens */ + 4.0 * 3 /* query_start_loc */ + 8.0 * 4 /* slot_mapping */);
}

/* quant: dynamic per-tensor fp8 quantization of [16, 4096] bf16. An absolute-maximum compare and
 * a scaling per element; the input read once, one fp8 byte written per element, the fp32
 * scale written. */
Test(work_counts, quant) {
  expect_counts(OP("_C::dynamic_scaled_fp8_quant",
                   A("result", "Tensor!", T("c10::Float8_e4m3fn", "[16, 4096]")) ", "
                   A("input", "Tensor", T(BF16, "[16, 4096]")) ", " A("scale", "Tensor!", T(F32, "[1]")),
                   ""),
                2.0 * 16 * 4096, 2.0 * 16 * 4096 /* input */ + 1.0 * 16 * 4096 /* fp8 result */ + 4 /* scale */);
}

/* moe: vLLM's fused experts, 2 tokens routed top-4 over 64 experts (hidden 1024, intermediate
 * 512, bf16). Per routed row the gate/up product (2 x K x 2N) and the down product (2 x N x K);
 * the weights of the 2 x 4 = 8 experts the routing can reach (w1 2N x K and w2 K x N each), not
 * all 64; hidden read and the result written; topk_weights (fp32) and topk_ids (int32) read. */
Test(work_counts, moe) {
  expect_counts(OP("vllm::outplace_fused_experts",
                   A("hidden_states", "Tensor", T(BF16, "[2, 1024]")) ", " A("w1", "Tensor", T(BF16, "[64, 1024, 1024]")) ", "
                   A("w2", "Tensor", T(BF16, "[64, 1024, 512]")) ", " A("topk_weights", "Tensor", T(F32, "[2, 4]")) ", "
                   A("topk_ids", "Tensor", T(I32, "[2, 4]")), ""),
                (2.0 * 1024 * 2 * 512 + 2.0 * 512 * 1024) * (2 * 4) /* per routed row x rows */,
                2.0 * 8 * (2 * 512 * 1024 + 1024 * 512) /* 8 experts' w1 and w2 */ +
                    2.0 * 2 * 1024 * 2 /* hidden read, result written */ + 4.0 * 2 * 4 * 2 /* weights, ids */);
}

/* routing: triton_kernels' TopK of GPT-OSS's bf16 router logits [32 tokens, 32 experts], k 4,
 * with the softmax: a compare per logit, then per selected value a subtract, an exp, an add and a
 * divide. Logits read once; y_vals (bf16) and y_indx (int16) written, and one uint32 bitmatrix
 * word per token (32 experts). */
Test(work_counts, routing_topk) {
  expect_counts(OP("TopK", A("x", "Tensor", T(BF16, "[32, 32]")) ", " A("k", "int", "4") ", "
                   A("apply_softmax", "bool", "true") ", " A("dim", "int", "1"), ""),
                32.0 * 32 + 4.0 * 32 * 4,
                2.0 * 32 * 32 /* x */ + 32.0 * 4 * (2 + 2) /* y_vals, y_indx */ + 4.0 * 32 /* bits */);
}

/* routing: SortTokens of those 32 x 4 selections (bf16 weights, int16 ids) over 32 experts.
 * Integer work only. Inputs read once; results: hist (32), combine and dispatch (128 each,
 * int32), gate_scal (128 bf16), token_offs_raw (33) and token_offs_pad (5 block sizes x 33), and
 * block_pid_map (5 x max_n_tiles: 128 gates > 32 experts, so 31 + ceil(97 / 16) = 38 tiles). */
Test(work_counts, routing_sort_tokens) {
  expect_counts(OP("SortTokens", A("expt_scal", "Tensor", T(BF16, "[32, 4]")) ", "
                   A("expt_indx", "Tensor", T("short int", "[32, 4]")) ", " A("n_expts_tot", "int", "32"), ""),
                0,
                2.0 * 128 + 2.0 * 128 /* weights, ids */ + 4.0 * 32 + 4.0 * 128 * 2 + 2.0 * 128 +
                    4.0 * 33 * (1 + 5) + 4.0 * 5 * 38);
}

/* sync: .item() of a 0-d fp32 tensor: its one element read to the host. */
Test(work_counts, sync) {
  expect_counts(OP("aten::_local_scalar_dense", A("self", "Tensor", T(F32, "[]")), ""), 0, 4.0);
}

/* scatter: advanced indexing self[idx] of 16 rows from a [100000, 64] fp32 tensor. The rows
 * gathered (read and written) and the int64 indices, not the 25.6 MB tensor. */
Test(work_counts, scatter_index_counts_the_rows_indexed) {
  expect_counts(OP("aten::index", A("self", "Tensor", T(F32, "[100000, 64]")) ", "
                                      A("indices", "Tensor?[]", "[" T(I64, "[16]") "]"),
                   ""),
                0, 2.0 * 16 * 64 * 4 /* rows read and written */ + 16.0 * 8 /* indices */);
}

/* collective: an all-reduce of [4096, 1024] bf16. Its size in NCCL-tests' sense (what algorithm
 * bandwidth divides by): the message; the reduction's adds are not counted. */
Test(work_counts, collective) {
  expect_counts(OP("vllm::all_reduce", A("tensor", "Tensor", T(BF16, "[4096, 1024]")), ""), 0,
                2.0 * 4096 * 1024);
}
