/* The paged-attention cases (vLLM _C::paged_attention_v1/v2, _rocm_C::paged_attention) and the
 * cache writers' (reshape_and_cache, reshape_and_cache_flash, sglang::store_cache), written
 * once and run on every driver (PAGED_ATTENTION_MATRIX at the end, the
 * paged_attention_matrix_<driver> targets) against the CPU reference through the replay
 * engine. Block sizes 8/16/32, head sizes 64/128/256, GQA/MQA, ALiBi, fp8 caches (e4m3,
 * e5m2) with a k_scale of 0.5, v2 partitions, multi-token queries (query_start_loc), strided
 * queries, random sequence lengths. The engine's initializer makes every cache slot no sequence
 * uses NaN, so reading past seq_lens fails the check. */
#ifndef XR_TESTS_KERNELS_PAGED_ATTENTION_CASES_H
#define XR_TESTS_KERNELS_PAGED_ATTENTION_CASES_H

#include <math.h>

#include "tests/kernels/attention_case.h"

typedef struct paged_case {
  const char *what, *op, *dtype, *cache_tensor, *kv_cache_dtype;
  int64_t seqs, H, Hk, D, bs, max_len;
  bool alibi, strided_q;
  const char *policy; /* seq_lens policy, NULL: max */
  int64_t qtokens;    /* _rocm_C: packed query tokens (query_start_loc); 0: one per sequence */
  int64_t blocks;     /* cache blocks; 0: each sequence's and 3 more */
} paged_case_t;

static inline int64_t elem_size(const char *dtype) {
  return !strcmp(dtype, "float") ? 4 : !strcmp(dtype, "unsigned char") ? 1 : 2;
}

static inline const char *paged_json(jbuf_t *b, const paged_case_t *c) {
  bool v2 = !strcmp(c->op, "_C::paged_attention_v2"), rocm = !strcmp(c->op, "_rocm_C::paged_attention");
  int64_t x = 16 / elem_size(c->cache_tensor), per_seq = (c->max_len + c->bs - 1) / c->bs;
  int64_t blocks = c->blocks ? c->blocks : c->seqs * per_seq + 3, rows = c->qtokens ? c->qtokens : c->seqs;
  int64_t parts = (c->max_len + 511) / 512;
  op_begin(b, c->op);
  int64_t qs[3] = {rows, c->H, c->D}, qst[3] = {3 * c->H * c->D, c->D, 1};
  arg_tensor(b, "out", "Tensor(a!)", 3, qs, NULL, c->dtype, "\"init\": null");
  if (v2 || rocm) {
    int64_t es[3] = {c->seqs, c->H, parts}, ts[4] = {c->seqs, c->H, parts, c->D};
    const char *t = v2 ? "Tensor(b!)" : "Tensor";
    arg_tensor(b, "exp_sums", t, 3, es, NULL, "float", "\"init\": null");
    arg_tensor(b, "max_logits", t, 3, es, NULL, "float", "\"init\": null");
    arg_tensor(b, "tmp_out", t, 4, ts, NULL, c->dtype, "\"init\": null");
  }
  arg_tensor(b, "query", "Tensor", 3, qs, c->strided_q ? qst : NULL, c->dtype, NULL);
  int64_t ks[5] = {blocks, c->Hk, c->D / x, c->bs, x}, vs[4] = {blocks, c->Hk, c->D, c->bs};
  arg_tensor(b, "key_cache", "Tensor", 5, ks, NULL, c->cache_tensor, NULL);
  arg_tensor(b, "value_cache", "Tensor", 4, vs, NULL, c->cache_tensor, NULL);
  arg_int(b, "num_kv_heads", c->Hk);
  arg_float(b, "scale", 1.0 / sqrt((double)c->D));
  int64_t bt[2] = {c->seqs, per_seq + 1}, sl[1] = {c->seqs}, qsl[1] = {c->seqs + 1};
  arg_tensor(b, "block_tables", "Tensor", 2, bt, NULL, "int", NULL);
  arg_tensor(b, "seq_lens", "Tensor", 1, sl, NULL, "int", NULL);
  if (rocm) {
    if (c->qtokens) arg_tensor(b, "query_start_loc", "Tensor?", 1, qsl, NULL, "int", NULL);
    else arg_raw(b, "query_start_loc", "Tensor?", "null");
  }
  arg_int(b, "block_size", c->bs);
  arg_int(b, "max_seq_len", c->max_len);
  if (c->alibi) {
    int64_t as[1] = {c->H};
    arg_tensor(b, "alibi_slopes", "Tensor?", 1, as, NULL, "float", "\"init\": \"uniform\"");
  } else {
    arg_raw(b, "alibi_slopes", "Tensor?", "null");
  }
  arg_raw(b, "kv_cache_dtype", "str", strcmp(c->kv_cache_dtype, "auto") ? (!strcmp(c->kv_cache_dtype, "fp8") ? "\"fp8\"" : "\"fp8_e5m2\"") : "\"auto\"");
  int64_t one[1] = {1};
  /* 0.5 as float32 bytes, base64: the fp8 dequantisation scale */
  const char *scale = strcmp(c->kv_cache_dtype, "auto") ? "\"data_base64\": \"AAAAPw==\"" : "\"init\": \"ones\"";
  arg_tensor(b, "k_scale", "Tensor", 1, one, NULL, "float", scale);
  arg_tensor(b, "v_scale", "Tensor", 1, one, NULL, "float", scale);
  if (rocm) {
    arg_raw(b, "fp8_out_scale", "Tensor?", "null");
  } else {
    arg_int(b, "tp_rank", 0);
    arg_int(b, "blocksparse_local_blocks", 0);
    arg_int(b, "blocksparse_vert_stride", 0);
    arg_int(b, "blocksparse_block_size", 64);
    arg_int(b, "blocksparse_head_sliding_step", 0);
  }
  op_kwargs(b);
  return op_end(b);
}

#define V1 "_C::paged_attention_v1"
#define V2 "_C::paged_attention_v2"
#define ROCM "_rocm_C::paged_attention"
#define F16 "c10::Half"
#define BF16 "c10::BFloat16"
#define U8 "unsigned char"

static const paged_case_t paged_cases[] = {
    {"v1 f16 gqa8x2 d128 bs16", V1, F16, F16, "auto", 4, 8, 2, 128, 16, 100, false, false, "uniform", 0, 0},
    {"v1 bf16 mha4 d64 bs8", V1, BF16, BF16, "auto", 3, 4, 4, 64, 8, 37, false, false, "1,37,16", 0, 0},
    {"v1 f32 mqa2x1 d256 bs32 strided q", V1, "float", "float", "auto", 3, 2, 1, 256, 32, 70, false, true, "uniform", 0, 0},
    {"v1 f16 alibi d64 bs16", V1, F16, F16, "auto", 3, 4, 4, 64, 16, 50, true, false, "33,1,50", 0, 0},
    {"v1 f16 fp8 e4m3 d128 bs16", V1, F16, U8, "fp8", 3, 8, 2, 128, 16, 90, false, false, "uniform", 0, 0},
    {"v1 bf16 fp8 e5m2 d64 bs32", V1, BF16, U8, "fp8_e5m2", 2, 4, 2, 64, 32, 45, false, false, "uniform", 0, 0},
    {"v2 f16 gqa d128 bs16 3 partitions", V2, F16, F16, "auto", 3, 8, 2, 128, 16, 1100, false, false, "uniform", 0, 0},
    {"v2 bf16 alibi d64 bs32", V2, BF16, BF16, "auto", 2, 4, 4, 64, 32, 700, true, false, "700,300", 0, 0},
    {"rocm f16 d128 bs16", ROCM, F16, F16, "auto", 3, 8, 1, 128, 16, 300, false, false, "uniform", 0, 0},
    {"rocm bf16 fp8 query_start_loc", ROCM, BF16, U8, "fp8", 3, 4, 2, 64, 16, 60, false, false, "uniform", 10, 0},
};

static inline void run_paged(const char *device, const char *prefix) {
  for (size_t i = 0; i < sizeof paged_cases / sizeof *paged_cases; i++) {
    const paged_case_t *c = &paged_cases[i];
    jbuf_t b;
    expect_match(c->what, paged_json(&b, c), device, prefix, 100 + i, c->policy);
  }
  /* --cache-blocks=compact: 4 sequences of at most 100 tokens in blocks of 16 take 4 x 7 blocks
   * and one more of the 500; 3 of at most 1100 in blocks of 16 (v2), 3 x 69 and one more. */
  static const paged_case_t compact[] = {
      {"v1 f16 compact", V1, F16, F16, "auto", 4, 8, 2, 128, 16, 100, false, false, "uniform", 0, 500},
      {"v2 bf16 fp8 compact", V2, BF16, U8, "fp8", 3, 8, 2, 64, 16, 1100, false, false, NULL, 0, 900},
  };
  const char *expected[] = {"cache: compact, 29 of 500 blocks", "cache: compact, 208 of 900 blocks"};
  for (size_t i = 0; i < 2; i++) {
    jbuf_t b;
    const char *json = paged_json(&b, &compact[i]);
    xr_op_result_t r = run_case_with(json, device, 300 + i, compact[i].policy, XR_CACHE_BLOCKS_COMPACT);
    expect_checked(compact[i].what, &r, json, device, prefix);
    cr_assert(strstr(r.init_policy, expected[i]), "%s: %s", compact[i].what, r.init_policy);
    cr_assert(!strncmp(r.cache_note, "cache: compact, its tensors ", 28), "%s", r.cache_note);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* reshape_and_cache                                                                           */

static inline const char *cache_json(jbuf_t *b, bool flash, const char *dtype, const char *cache, const char *kv_dtype,
                              int64_t tokens, int64_t Hk, int64_t D, int64_t bs, int64_t blocks) {
  op_begin(b, flash ? "_C_cache_ops::reshape_and_cache_flash" : "_C_cache_ops::reshape_and_cache");
  int64_t ks[3] = {tokens, Hk, D}, kst[3] = {3 * Hk * D, D, 1}, x = 16 / elem_size(cache);
  arg_tensor(b, "key", "Tensor", 3, ks, kst, dtype, "\"storage_offset\": 3");
  arg_tensor(b, "value", "Tensor", 3, ks, NULL, dtype, NULL);
  if (flash) {
    int64_t cs[4] = {blocks, bs, Hk, D};
    arg_tensor(b, "key_cache", "Tensor(a!)", 4, cs, NULL, cache, NULL);
    arg_tensor(b, "value_cache", "Tensor(b!)", 4, cs, NULL, cache, NULL);
  } else {
    int64_t kc[5] = {blocks, Hk, D / x, bs, x}, vc[4] = {blocks, Hk, D, bs};
    arg_tensor(b, "key_cache", "Tensor(a!)", 5, kc, NULL, cache, NULL);
    arg_tensor(b, "value_cache", "Tensor(b!)", 4, vc, NULL, cache, NULL);
  }
  int64_t sm[1] = {tokens}, one[1] = {1};
  arg_tensor(b, "slot_mapping", "Tensor", 1, sm, NULL, "long int", NULL);
  arg_raw(b, "kv_cache_dtype", "str", kv_dtype);
  const char *scale = strcmp(kv_dtype, "\"auto\"") ? "\"data_base64\": \"AAAAPw==\"" : "\"init\": \"ones\"";
  arg_tensor(b, "k_scale", "Tensor", 1, one, NULL, "float", scale);
  arg_tensor(b, "v_scale", "Tensor", 1, one, NULL, "float", scale);
  op_kwargs(b);
  return op_end(b);
}

/* `prefix`: the kernel expected for every case; `fp8_prefix` (NULL: prefix) for the fp8 cache. */
static inline void run_cache_fp8(const char *device, const char *prefix, const char *fp8_prefix) {
  jbuf_t b;
  expect_match("reshape_and_cache f16", cache_json(&b, false, F16, F16, "\"auto\"", 37, 2, 128, 16, 8), device,
               prefix, 1, NULL);
  expect_match("reshape_and_cache bf16 -> fp8", cache_json(&b, false, BF16, U8, "\"fp8\"", 17, 2, 64, 16, 4),
               device, fp8_prefix ? fp8_prefix : prefix, 2, NULL);
  expect_match("reshape_and_cache_flash f32", cache_json(&b, true, "float", "float", "\"auto\"", 129, 1, 64, 32, 5),
               device, prefix, 3, NULL);
  expect_match("reshape_and_cache_flash f16 -> fp8", cache_json(&b, true, F16, U8, "\"fp8\"", 40, 4, 64, 16, 6),
               device, fp8_prefix ? fp8_prefix : prefix, 4, NULL);
  /* --cache-blocks=compact: 37 tokens into a 300-block cache take 38 blocks. */
  const char *json = cache_json(&b, false, F16, F16, "\"auto\"", 37, 2, 128, 16, 300);
  xr_op_result_t r = run_case_with(json, device, 5, NULL, XR_CACHE_BLOCKS_COMPACT);
  expect_checked("reshape_and_cache f16, compact", &r, json, device, prefix);
  cr_assert(strstr(r.init_policy, "cache: compact, 38 of 300 blocks"), "%s", r.init_policy);
  cr_assert(!strncmp(r.cache_note, "cache: compact, its tensors ", 28), "%s", r.cache_note);
}

/* ------------------------------------------------------------------------------------------ */
/* sglang::store_cache(k, v, k_cache, v_cache, indices, row_bytes, num_split[, size_limit])     */

typedef struct store_case {
  const char *what, *dtype, *index_dtype;
  int64_t B, D, slots;
  int64_t k_stride, k_off, v_stride, v_off, cache_stride; /* row strides; 0: dense */
  const char *trailing;                                   /* the ints after indices, as traced */
} store_case_t;

/* A tensor argument as a trace of a custom op records it: no name, the dtype as its type. */
static inline void traced_2d(jbuf_t *b, const char *dtype, int64_t rows, int64_t cols, int64_t stride,
                             int64_t offset) {
  jb(b, "%s{\"type\": \"%s\", \"value\": {\"shape\": [%lld, %lld], \"strides\": [%lld, 1], "
        "\"storage_offset\": %lld, \"dtype\": \"%s\"}}", b->args++ ? ", " : "", dtype, (long long)rows,
     (long long)cols, (long long)(stride ? stride : cols), (long long)offset, dtype);
}

static inline const char *store_json(jbuf_t *b, const store_case_t *c) {
  op_begin(b, "sglang::store_cache");
  traced_2d(b, c->dtype, c->B, c->D, c->k_stride, c->k_off);
  traced_2d(b, c->dtype, c->B, c->D, c->v_stride, c->v_off);
  traced_2d(b, c->dtype, c->slots, c->D, c->cache_stride, 0);
  traced_2d(b, c->dtype, c->slots, c->D, c->cache_stride, 0);
  jb(b, ", {\"type\": \"%s\", \"value\": {\"shape\": [%lld], \"strides\": [1], \"dtype\": \"%s\"}}",
     c->index_dtype, (long long)c->B, c->index_dtype);
  jb(b, "%s", c->trailing);
  return op_end(b);
}

#define SCALAR(v) ", {\"type\": \"Scalar\", \"value\": " #v "}"

/* The caches hold two to three times the rows written, so one row stored in the wrong slot
 * fails the check's NMSE. The first is the SGLang fixture's op (Qwen3-8B: 8 kv heads of 128,
 * v a view into the qkv projection) with fewer cache rows. */
static const store_case_t store_cases[] = {
    {"store_cache bf16 D1024 v a qkv view, as traced", BF16, "long int", 32, 1024, 80, 0, 0, 6144, 5120, 0,
     SCALAR(2048) SCALAR(0)},
    {"store_cache f16 D72 int32 indices below size_limit", F16, "int", 5, 72, 9, 0, 0, 0, 0, 0,
     SCALAR(0) SCALAR(0) SCALAR(6)},
    {"store_cache f32 D129 strided k, padded cache rows", "float", "long int", 17, 129, 40, 300, 7, 0, 0, 130,
     SCALAR(516) SCALAR(1)},
};

/* Each case against the reference, `prefix` the kernel expected; both caches checked, the
 * indices drawn distinct by the family's initializer. */
static inline void run_store_cache(const char *device, const char *prefix) {
  for (size_t i = 0; i < sizeof store_cases / sizeof *store_cases; i++) {
    jbuf_t b;
    const store_case_t *c = &store_cases[i];
    const char *json = store_json(&b, c);
    xr_op_result_t r = run_case(json, device, 200 + i, NULL);
    cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s on %s: %s: %s\n%s", c->what, device,
                 xr_op_outcome_name(r.outcome), r.message, json);
    cr_assert(r.checked && r.check_passed, "%s on %s: check failed", c->what, device);
    cr_assert(!strncmp(r.kernel, prefix, strlen(prefix)), "%s: ran %s, expected %s*", c->what, r.kernel, prefix);
    cr_assert_eq(r.output_count, 2u, "%s: k_cache and v_cache are checked", c->what);
    cr_assert(strstr(r.init_policy, "indices distinct random slots"), "%s: init %s", c->what, r.init_policy);
  }
  /* --cache-blocks=compact under a size_limit (6 of 9 rows): 5 rows written take 6 rows. */
  jbuf_t b;
  const char *json = store_json(&b, &store_cases[1]);
  xr_op_result_t r = run_case_with(json, device, 210, NULL, XR_CACHE_BLOCKS_COMPACT);
  expect_checked("store_cache f16, compact", &r, json, device, prefix);
  cr_assert(strstr(r.init_policy, "cache: compact, 6 of 9 rows"), "%s", r.init_policy);
  cr_assert(!strncmp(r.cache_note, "cache: compact, its tensors ", 28), "%s", r.cache_note);
}

/* The kernels each driver runs these ops on: paged attention on cpu's and opencl's
 * flash-attention kernels and on gpu.paged_attention; the cache writers on
 * <driver>.reshape_and_cache, except that the cpu's takes fp8 caches only and leaves the
 * others to the reference (a copy). */
static inline const char *pa_decode_impl(const char *device) {
  bool gpu = !strcmp(kernel_driver(device), "gpu");
  return kernel_impl(device, gpu ? "paged_attention" : "flash_attention");
}

static inline const char *pa_cache_impl(const char *device) {
  return !strcmp(device, "cpu") ? "ref.reshape_and_cache" : kernel_impl(device, "reshape_and_cache");
}

/* The family's matrix (tests/kernels/matrix.c): every group on every driver. */
#define PAGED_ATTENTION_MATRIX(GROUP)                                                      \
  GROUP(decode, run_paged(device, pa_decode_impl(device)))                                 \
  GROUP(reshape_and_cache, run_cache_fp8(device, pa_cache_impl(device),                    \
                                         kernel_impl(device, "reshape_and_cache")))        \
  GROUP(store_cache, run_store_cache(device, pa_cache_impl(device)))
#define PAGED_ATTENTION_MATRIX_GAPS(GAP)

#endif
