/* The dense and variable-length attention cases, written once and run on every driver
 * (ATTENTION_MATRIX at the end, the attention_matrix_<driver> targets) against the CPU
 * reference through the replay engine: SDPA's three ops, the flash forward
 * (dense and packed with cum_seq_q/k and seqused_k), AITER's varlen and batch-prefill forwards.
 * Causal and not, Sq != Sk, GQA and MQA, odd sizes (1, 3, 17, 129), strided and offset views,
 * masks, windows, softcap, ALiBi; unused packed key rows are NaN (the engine's initializer), so
 * a kernel reading past a sequence fails. */
#ifndef XR_TESTS_KERNELS_ATTENTION_CASES_H
#define XR_TESTS_KERNELS_ATTENTION_CASES_H

#include "tests/kernels/attention_case.h"

typedef struct sdpa_case {
  const char *what, *op, *dtype;
  int64_t B, H, Hk, Sq, Sk, D, Dv;
  bool causal;
  double scale;  /* <= 0: None */
  bool bshd;     /* [B, H, S, D] views of [B, S, H, D] buffers */
  int64_t offset;
  int mask;      /* 0 none, 1 bool [Sq, Sk], 2 float [B, 1, Sq, Sk] */
} sdpa_case_t;

static inline void qkv_view(jbuf_t *b, const char *name, const sdpa_case_t *c, int64_t heads, int64_t S, int64_t D) {
  int64_t shape[4] = {c->B, heads, S, D}, strides[4] = {S * heads * D, D, heads * D, 1};
  char extra[64] = "";
  if (c->offset) snprintf(extra, sizeof extra, "\"storage_offset\": %lld", (long long)c->offset);
  arg_tensor(b, name, "Tensor", 4, shape, c->bshd ? strides : NULL, c->dtype, c->offset ? extra : NULL);
}

static inline const char *sdpa_json(jbuf_t *b, const sdpa_case_t *c) {
  bool flash = !strcmp(c->op, "aten::_scaled_dot_product_flash_attention");
  bool efficient = !strcmp(c->op, "aten::_scaled_dot_product_efficient_attention");
  op_begin(b, c->op);
  qkv_view(b, "query", c, c->H, c->Sq, c->D);
  qkv_view(b, "key", c, c->Hk, c->Sk, c->D);
  qkv_view(b, "value", c, c->Hk, c->Sk, c->Dv);
  if (!flash) {
    const char *name = efficient ? "attn_bias" : "attn_mask";
    if (c->mask == 1) {
      int64_t shape[2] = {c->Sq, c->Sk};
      arg_tensor(b, name, "Tensor?", 2, shape, NULL, "bool", NULL);
    } else if (c->mask == 2) {
      int64_t shape[4] = {c->B, 1, c->Sq, c->Sk};
      arg_tensor(b, name, "Tensor?", 4, shape, NULL, c->dtype, NULL);
    } else {
      arg_raw(b, name, "Tensor?", "null");
    }
  }
  if (efficient) arg_bool(b, "compute_log_sumexp", true);
  arg_float(b, "dropout_p", 0.0);
  arg_bool(b, "is_causal", c->causal);
  if (flash) arg_bool(b, "return_debug_mask", false);
  op_kwargs(b);
  if (c->scale > 0) arg_float(b, "scale", c->scale);
  else arg_raw(b, "scale", "float?", "null");
  if (!flash && !efficient) arg_bool(b, "enable_gqa", c->Hk != c->H);
  return op_end(b);
}

#define FLASH "aten::_scaled_dot_product_flash_attention"
#define EFFICIENT "aten::_scaled_dot_product_efficient_attention"
#define SDPA "aten::scaled_dot_product_attention"

static const sdpa_case_t sdpa_cases[] = {
    {"f32 2x3x17x17 d64", FLASH, "float", 2, 3, 3, 17, 17, 64, 64, false, 0, false, 0, 0},
    {"bf16 causal bshd 1x4x129 d128", FLASH, "c10::BFloat16", 1, 4, 4, 129, 129, 128, 128, true, 0, true, 0, 0},
    {"f16 sq3 sk129 scale", FLASH, "c10::Half", 2, 2, 2, 3, 129, 64, 64, false, 0.3, false, 0, 0},
    {"f32 s1 causal", FLASH, "float", 3, 2, 2, 1, 1, 64, 64, true, 0, false, 0, 0},
    {"f16 gqa 8x2 causal offset view", FLASH, "c10::Half", 1, 8, 2, 33, 33, 64, 64, true, 0, true, 5, 0},
    {"bf16 mqa 4x1 d256", FLASH, "c10::BFloat16", 1, 4, 1, 17, 40, 256, 256, false, 0, false, 0, 0},
    {"efficient f16 causal float bias sq17 sk40", EFFICIENT, "c10::Half", 2, 2, 2, 17, 40, 64, 64, true, 0, false,
     0, 2},
    {"efficient f32 sq129 bshd", EFFICIENT, "float", 1, 2, 2, 129, 3, 128, 128, false, 0.1, true, 0, 0},
    {"sdpa f32 bool mask gqa dv32", SDPA, "float", 2, 4, 2, 17, 17, 64, 32, false, 0, false, 0, 1},
    {"sdpa bf16 causal sq17 sk5", SDPA, "c10::BFloat16", 1, 2, 2, 17, 5, 64, 64, true, 0, false, 0, 0},
};

static inline void run_sdpa(const char *device, const char *prefix) {
  for (size_t i = 0; i < sizeof sdpa_cases / sizeof *sdpa_cases; i++) {
    jbuf_t b;
    expect_match(sdpa_cases[i].what, sdpa_json(&b, &sdpa_cases[i]), device, prefix, 11 + i, NULL);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* flash forward and AITER                                                                     */

/* aten::_flash_attention_forward, dense [B, S, H, D] or packed with cumulative starts. */
static inline const char *flash_forward_json(jbuf_t *b, const char *dtype, bool packed, int64_t B, int64_t H, int64_t Hk,
                                      int64_t Sq, int64_t Sk, int64_t D, bool causal, int64_t wl,
                                      const char *alibi, bool seqused) { /* alibi: the slopes' dtype, or NULL */
  op_begin(b, "aten::_flash_attention_forward");
  if (packed) {
    int64_t qs[3] = {Sq, H, D}, ks[3] = {Sk + 7, Hk, D}, cs[1] = {B + 1};
    arg_tensor(b, "query", "Tensor", 3, qs, NULL, dtype, NULL);
    arg_tensor(b, "key", "Tensor", 3, ks, NULL, dtype, NULL); /* 7 rows past max_k: NaN */
    arg_tensor(b, "value", "Tensor", 3, ks, NULL, dtype, NULL);
    arg_tensor(b, "cum_seq_q", "Tensor?", 1, cs, NULL, "int", NULL);
    arg_tensor(b, "cum_seq_k", "Tensor?", 1, cs, NULL, "int", NULL);
    arg_int(b, "max_q", (Sq + B - 1) / B);
    arg_int(b, "max_k", (Sk + B - 1) / B);
  } else {
    int64_t qs[4] = {B, Sq, H, D}, ks[4] = {B, Sk, Hk, D};
    arg_tensor(b, "query", "Tensor", 4, qs, NULL, dtype, NULL);
    arg_tensor(b, "key", "Tensor", 4, ks, NULL, dtype, NULL);
    arg_tensor(b, "value", "Tensor", 4, ks, NULL, dtype, NULL);
    arg_raw(b, "cum_seq_q", "Tensor?", "null");
    arg_raw(b, "cum_seq_k", "Tensor?", "null");
    arg_int(b, "max_q", Sq);
    arg_int(b, "max_k", Sk);
  }
  arg_float(b, "dropout_p", 0.0);
  arg_bool(b, "is_causal", causal);
  arg_bool(b, "return_debug_mask", false);
  op_kwargs(b);
  arg_raw(b, "scale", "float?", "null");
  if (wl >= 0) arg_int(b, "window_size_left", wl);
  if (seqused) {
    int64_t us[1] = {B};
    arg_tensor(b, "seqused_k", "Tensor?", 1, us, NULL, "int", NULL);
  }
  if (alibi) {
    int64_t as[1] = {H};
    arg_tensor(b, "alibi_slopes", "Tensor?", 1, as, NULL, alibi, "\"init\": \"uniform\"");
  }
  return op_end(b);
}

/* aiter::mha_varlen_fwd / mha_batch_prefill: packed q [total_q, H, D]. */
static inline const char *aiter_json(jbuf_t *b, bool prefill, const char *dtype, int64_t B, int64_t H, int64_t Hk,
                              int64_t total_q, int64_t total_k, int64_t D, bool causal, double softcap, int64_t wl,
                              int64_t wr, bool alibi) {
  op_begin(b, prefill ? "aiter::mha_batch_prefill" : "aiter::mha_varlen_fwd");
  int64_t qs[3] = {total_q, H, D}, ks[3] = {total_k, Hk, D}, cs[1] = {B + 1};
  arg_tensor(b, "q", "Tensor", 3, qs, NULL, dtype, NULL);
  arg_tensor(b, "k", "Tensor", 3, ks, NULL, dtype, NULL);
  arg_tensor(b, "v", "Tensor", 3, ks, NULL, dtype, NULL);
  arg_tensor(b, "cu_seqlens_q", "Tensor", 1, cs, NULL, "int", NULL);
  if (prefill) {
    int64_t ps[1] = {total_k - 3};
    arg_tensor(b, "kv_indptr", "Tensor", 1, cs, NULL, "int", NULL);
    arg_tensor(b, "kv_page_indices", "Tensor", 1, ps, NULL, "int", NULL);
  } else {
    arg_tensor(b, "cu_seqlens_k", "Tensor?", 1, cs, NULL, "int", NULL);
  }
  arg_int(b, "max_seqlen_q", (total_q + B - 1) / B);
  arg_int(b, "max_seqlen_k", (total_k - 5 + B - 1) / B); /* some key rows stay unused: NaN */
  if (!prefill) arg_int(b, "min_seqlen_q", 0);
  arg_float(b, "dropout_p", 0.0);
  arg_float(b, "softmax_scale", 0.11);
  arg_float(b, "logits_soft_cap", softcap);
  arg_bool(b, "zero_tensors", false);
  arg_bool(b, "is_causal", causal);
  arg_int(b, "window_size_left", wl);
  arg_int(b, "window_size_right", wr);
  arg_bool(b, "return_softmax_lse", true);
  arg_bool(b, "return_dropout_randval", false);
  arg_raw(b, "out", "Tensor?", "null");
  if (alibi) {
    int64_t as[1] = {H};
    arg_tensor(b, "alibi_slopes", "Tensor?", 1, as, NULL, "float", "\"init\": \"uniform\"");
  } else {
    arg_raw(b, "alibi_slopes", "Tensor?", "null");
  }
  op_kwargs(b);
  return op_end(b);
}

static inline void run_varlen(const char *device, const char *prefix) {
  jbuf_t b;
  expect_match("flash fwd bf16 causal window alibi bshd 17x40",
               flash_forward_json(&b, "c10::BFloat16", false, 2, 4, 2, 17, 40, 64, true, 8, "float", false), device,
               prefix, 3, NULL);
  expect_match("flash fwd f32 dense s1", flash_forward_json(&b, "float", false, 2, 2, 2, 1, 3, 128, false, -1, NULL, false),
               device, prefix, 4, NULL);
  expect_match("flash fwd f16 packed causal seqused_k",
               flash_forward_json(&b, "c10::Half", true, 3, 4, 1, 40, 61, 64, true, -1, NULL, true), device, prefix,
               5, NULL);
  expect_match("flash fwd f32 packed 129 tokens gqa",
               flash_forward_json(&b, "float", true, 2, 4, 2, 129, 129, 128, true, -1, NULL, false), device, prefix,
               6, NULL);
  expect_match("aiter varlen bf16 softcap window gqa",
               aiter_json(&b, false, "c10::BFloat16", 3, 8, 2, 51, 90, 128, true, 30.0, 16, 0, false), device, prefix,
               7, NULL);
  expect_match("aiter varlen f16 alibi non-causal",
               aiter_json(&b, false, "c10::Half", 2, 4, 4, 17, 17, 64, false, 0.0, -1, -1, true), device, prefix, 8,
               NULL);
  expect_match("aiter batch prefill f16 causal", aiter_json(&b, true, "c10::Half", 3, 4, 2, 30, 100, 64, true, 0.0, -1, -1, false),
               device, prefix, 9, NULL);
}

/* sglang_profiler::attention_paged_attention_ragged as SGLang's annotation records it: tensors
 * only (out, workspace, query [B, H, D], one-token-page caches [pages, 1, Hk, D], kv_indptr,
 * kv_page_indices, kv_last_page_lens, no alibi, k_scale, v_scale, no fp8_out_scale), and the
 * trace's hints (`hints`: the body of the object, or NULL). */
static inline const char *ragged_json(jbuf_t *b, const char *dtype, int64_t B, int64_t H, int64_t Hk,
                                      int64_t D, int64_t pages, int64_t entries, int64_t page_size,
                                      const char *hints) {
  op_begin(b, "sglang_profiler::attention_paged_attention_ragged");
  int64_t qs[3] = {B, H, D}, ws[1] = {100000}, cs[4] = {pages, page_size, Hk, D};
  int64_t ip[1] = {B + 1}, es[1] = {entries}, ls[1] = {64}, one[1] = {1};
  arg_tensor(b, "out", dtype, 3, qs, NULL, dtype, "\"init\": null");
  arg_tensor(b, "workspace", "unsigned char", 1, ws, NULL, "unsigned char", NULL);
  arg_tensor(b, "query", dtype, 3, qs, NULL, dtype, NULL);
  arg_tensor(b, "key_cache", dtype, 4, cs, NULL, dtype, NULL);
  arg_tensor(b, "value_cache", dtype, 4, cs, NULL, dtype, NULL);
  arg_tensor(b, "kv_indptr", "int", 1, ip, NULL, "int", NULL);
  arg_tensor(b, "kv_page_indices", "int", 1, es, NULL, "int", NULL);
  arg_tensor(b, "kv_last_page_lens", "int", 1, ls, NULL, "int", NULL);
  arg_raw(b, "alibi_slopes", "None", "null");
  arg_tensor(b, "k_scale", "float", 1, one, NULL, "float", "\"init\": \"ones\"");
  arg_tensor(b, "v_scale", "float", 1, one, NULL, "float", "\"init\": \"ones\"");
  arg_raw(b, "fp8_out_scale", "None", "null");
  if (hints) jb(b, "], \"hints\": {%s}}]}", hints);
  else op_end(b);
  return b->s;
}

/* The ragged decode: GQA over a page list. The hints' 70 context tokens split over the
 * sequences; with --cache-blocks=compact the 500-page cache holds their 70 pages and a poisoned
 * one (the policy says so), by default it stays whole (it fits). Without hints the 30 page-list
 * entries split over the sequences. */
static inline void run_ragged(const char *device, const char *prefix) {
  jbuf_t b;
  const char *hinted = ragged_json(&b, "c10::BFloat16", 3, 8, 2, 64, 500, 400, 1,
                                   "\"decode_seqs\": 3, \"decode_context_tokens\": 70");
  const char *what = "ragged bf16 gqa4, context from hints";
  xr_op_result_t r = run_case(hinted, device, 11, NULL);
  expect_checked(what, &r, hinted, device, prefix);
  cr_assert(strstr(r.init_policy, "kv_indptr even split of 70 context tokens (the trace's hints)") &&
                !strstr(r.init_policy, "compact"),
            "%s", r.init_policy);
  r = run_case_with(hinted, device, 11, NULL, XR_CACHE_BLOCKS_COMPACT);
  expect_checked(what, &r, hinted, device, prefix);
  cr_assert(strstr(r.init_policy, "cache: compact, 71 of 500 pages"), "%s", r.init_policy);
  const char *bare = ragged_json(&b, "float", 2, 4, 4, 32, 40, 30, 1, NULL);
  expect_match("ragged f32 mha, no hints", bare, device, prefix, 12, NULL);
  r = run_case(bare, device, 12, NULL);
  cr_assert(strstr(r.init_policy, "even split of 30 context tokens (no hints: the page list)") &&
                !strstr(r.init_policy, "compact"),
            "%s", r.init_policy);
  r = run_case(ragged_json(&b, "float", 2, 4, 4, 32, 40, 30, 16, NULL), device, 12, NULL);
  cr_assert_eq(r.outcome, XR_OP_FAILED, "%s", r.message);
  cr_assert(strstr(r.message, "pages of 16 tokens need kv_last_page_lens"), "%s", r.message);
}

/* float64 ALiBi slopes: the cpu computes them; the device kernels read f32, f16 and bf16 slopes,
 * and refuse these rather than misread them. */
static inline void run_double_alibi(const char *device) {
  const char *what = "flash fwd f32 float64 alibi";
  jbuf_t b;
  const char *json = flash_forward_json(&b, "float", false, 1, 2, 2, 5, 7, 32, false, -1, "double", false);
  if (!strcmp(device, "cpu")) {
    expect_match(what, json, device, "cpu.", 3, NULL);
    return;
  }
  xr_op_result_t r = run_case(json, device, 3, NULL);
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s on %s: %s (%s)", what, device, xr_op_outcome_name(r.outcome),
               r.message);
  cr_assert(strstr(r.message, "double ALiBi slopes") != NULL, "%s on %s: %s", what, device, r.message);
}

/* The family's matrix (tests/kernels/matrix.c): every group on every driver. */
#define ATTENTION_MATRIX(GROUP)                                         \
  GROUP(sdpa, run_sdpa(device, kernel_impl(device, "flash_attention"))) \
  GROUP(varlen, run_varlen(device, kernel_impl(device, "flash_attention")))      \
  GROUP(double_alibi, run_double_alibi(device))                               \
  GROUP(ragged, run_ragged(device, kernel_impl(device, "flash_attention")))
#define ATTENTION_MATRIX_GAPS(GAP)

#endif
