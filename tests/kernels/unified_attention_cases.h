/* vLLM unified attention cases (vllm::unified_attention_with_output, vllm::unified_attention),
 * written once and run on every driver (UNIFIED_ATTENTION_MATRIX at the end, the
 * unified_attention_matrix_<driver> targets): pure decode, pure prefill and mixed batches
 * from trace hints, kwargs and the default; GQA and MQA; block sizes 16 and 32; f32, f16, bf16
 * and an fp8 cache; flattened views; explicit kv_cache / block_table tensors; fp8 queries and
 * fp8 outputs with their output_scale (e4m3fn and e4m3fnuz). */
#ifndef XR_TESTS_KERNELS_UNIFIED_ATTENTION_CASES_H
#define XR_TESTS_KERNELS_UNIFIED_ATTENTION_CASES_H

#include "tests/kernels/attention_case.h"

#define WITH_OUTPUT "vllm::unified_attention_with_output"
#define RETURNING "vllm::unified_attention"
#define F16 "c10::Half"
#define BF16 "c10::BFloat16"
#define FP8_FN "c10::Float8_e4m3fn"
#define FP8_FNUZ "c10::Float8_e4m3fnuz"

typedef struct ua_case {
  const char *what, *op, *dtype;
  int64_t T, H, Hk, D;
  int flat;            /* 1: query/output flattened; 2: key/value too (head_size kwarg) */
  const char *hints;   /* body of the "hints" object, or NULL */
  const char *kwargs;  /* extra kwargs, already JSON, or NULL */
} ua_case_t;

/* A case whose query or output differs from the other tensors' dtype: vLLM's fp8 attention. */
typedef struct ua_fp8_case {
  ua_case_t c;
  const char *q_dtype; /* the query's dtype (fp8: vLLM's quantized query), NULL: c.dtype */
  const char *o_dtype; /* the output's (fp8 comes with an output_scale), NULL: c.dtype */
} ua_fp8_case_t;

/* Appends a raw kwarg list entry. */
static inline void raw_kwargs(jbuf_t *b, const char *text) {
  if (text) jb(b, "%s%s", b->args++ ? ", " : "", text);
}

static inline const char *ua_json_typed(jbuf_t *b, const ua_case_t *c, const char *q_dtype, const char *o_dtype) {
  op_begin(b, c->op);
  int64_t q3[3] = {c->T, c->H, c->D}, q2[2] = {c->T, c->H * c->D};
  int64_t k3[3] = {c->T, c->Hk, c->D}, k2[2] = {c->T, c->Hk * c->D};
  /* query a strided view of a fused qkv projection, as models slice it */
  int64_t width = (c->H + 2 * c->Hk) * c->D, qs3[3] = {width, c->D, 1}, qs2[2] = {width, 1};
  bool fq = c->flat >= 1, fk = c->flat >= 2;
  const char *qt = q_dtype ? q_dtype : c->dtype, *ot = o_dtype ? o_dtype : c->dtype;
  arg_tensor(b, "query", "Tensor", fq ? 2 : 3, fq ? q2 : q3, fq ? qs2 : qs3, qt, NULL);
  arg_tensor(b, "key", "Tensor", fk ? 2 : 3, fk ? k2 : k3, NULL, c->dtype, "\"storage_offset\": 5");
  arg_tensor(b, "value", "Tensor", fk ? 2 : 3, fk ? k2 : k3, NULL, c->dtype, NULL);
  if (!strcmp(c->op, WITH_OUTPUT))
    arg_tensor(b, "output", "Tensor(a!)", fq ? 2 : 3, fq ? q2 : q3, NULL, ot, "\"init\": null");
  jb(b, "%s{\"name\": \"layer_name\", \"type\": \"str\", \"value\": \"model.layers.0.self_attn.attn\"}",
     b->args++ ? ", " : "");
  if (!strcmp(c->op, WITH_OUTPUT)) {
    int64_t one[1] = {1};
    if (o_dtype && strstr(o_dtype, "Float8")) arg_tensor(b, "output_scale", "Tensor?", 1, one, NULL, "float", NULL);
    else arg_raw(b, "output_scale", "Tensor?", "null");
    arg_raw(b, "output_block_scale", "Tensor?", "null");
  }
  op_kwargs(b);
  if (fk) arg_int(b, "head_size", c->D);
  raw_kwargs(b, c->kwargs);
  if (c->hints) jb(b, "], \"hints\": {%s}}]}", c->hints);
  else op_end(b);
  return b->s;
}

static inline const char *ua_json(jbuf_t *b, const ua_case_t *c) { return ua_json_typed(b, c, NULL, NULL); }

#define HINTS(p, pt, d, dt) "\"prefill_seqs\": " #p ", \"prefill_tokens\": " #pt ", \"decode_seqs\": " #d \
                            ", \"decode_tokens\": " #dt
#define KW_INT(name, v) "{\"name\": \"" name "\", \"type\": \"int\", \"value\": " #v "}"
#define KW_LIST(name, v) "{\"name\": \"" name "\", \"type\": \"int[]\", \"value\": " v "}"
#define KW_FLOAT(name, v) "{\"name\": \"" name "\", \"type\": \"float\", \"value\": " #v "}"
#define KW_STR(name, v) "{\"name\": \"" name "\", \"type\": \"str\", \"value\": \"" v "\"}"
#define KW_T(name, type, shape, dtype) \
  "{\"name\": \"" name "\", \"type\": \"" type "\", \"value\": {\"shape\": " shape ", \"dtype\": \"" dtype "\"}}"

static const ua_case_t ua_cases[] = {
    {"pure decode gqa4 f16 bs16, keys from hints", WITH_OUTPUT, F16, 6, 8, 2, 64, 0,
     HINTS(0, 0, 6, 6) ", \"prefill_context_tokens\": 0, \"decode_context_tokens\": 433", NULL},
    {"pure decode bf16 mqa, default 1024 keys", WITH_OUTPUT, BF16, 3, 4, 1, 128, 0, HINTS(0, 0, 3, 3), NULL},
    {"pure prefill bf16 bs32 mha", WITH_OUTPUT, BF16, 37, 4, 4, 128, 0, HINTS(2, 37, 0, 0), KW_INT("block_size", 32)},
    {"mixed f32 gqa2 with padding tokens", WITH_OUTPUT, "float", 26, 4, 2, 64, 0,
     HINTS(2, 20, 3, 3) ", \"prefill_context_tokens\": 70, \"decode_context_tokens\": 300", NULL},
    {"mixed f16 flat query, spec-decode tokens", WITH_OUTPUT, F16, 17, 8, 2, 64, 1, HINTS(1, 9, 4, 8), NULL},
    {"no hints: one prompt, unified_attention returns, flat", RETURNING, F16, 17, 4, 1, 64, 2, NULL, NULL},
    {"single token, no hints", WITH_OUTPUT, "float", 1, 2, 1, 64, 0, NULL, NULL},
    {"query_lens/context_lens kwargs bf16 bs32", WITH_OUTPUT, BF16, 10, 8, 2, 64, 0, NULL,
     KW_LIST("query_lens", "[1, 1, 6, 1]") ", " KW_LIST("context_lens", "[40, 0, 27, 129]") ", "
     KW_INT("block_size", 32)},
    {"long prefill 129 tokens with 300 cached, gqa8", WITH_OUTPUT, BF16, 129, 8, 1, 64, 0, NULL,
     KW_LIST("context_lens", "[300]")},
    {"explicit kv_cache [blocks, 2, ...] and block_table, hints", WITH_OUTPUT, F16, 5, 4, 2, 64, 0,
     HINTS(1, 3, 2, 2) ", \"prefill_context_tokens\": 3, \"decode_context_tokens\": 40",
     KW_T("kv_cache", "Tensor(a!)", "[9, 2, 16, 2, 64]", "c10::Half") ", "
     KW_T("block_table", "Tensor", "[3, 70]", "long int") ", " KW_T("seq_lens", "Tensor", "[3]", "int")},
    {"fp8 e4m3 cache", WITH_OUTPUT, F16, 6, 4, 2, 64, 0, HINTS(1, 4, 2, 2), KW_STR("kv_cache_dtype", "fp8")},
};


/* vLLM's fp8 attention: quantized queries over an fp8 cache (implied), outputs in the model's
 * dtype or fp8 with their output_scale. */
static const ua_fp8_case_t ua_fp8_cases[] = {
    {{"fp8 query, implied fp8 cache, bf16 output", WITH_OUTPUT, BF16, 9, 8, 2, 64, 0,
     HINTS(1, 5, 4, 4) ", \"prefill_context_tokens\": 20, \"decode_context_tokens\": 90", NULL}, FP8_FN, NULL},
    {{"fp8 query and fp8 output, q_scale 0.5, flat query", WITH_OUTPUT, F16, 7, 4, 1, 64, 1, HINTS(1, 6, 1, 1),
     KW_FLOAT("q_scale", 0.5)}, FP8_FN, FP8_FN},
    {{"e4m3fnuz query and output (MI300), implied fnuz cache", WITH_OUTPUT, BF16, 6, 4, 2, 128, 0, HINTS(0, 0, 6, 6),
     NULL}, FP8_FNUZ, FP8_FNUZ},
    {{"bf16 query, fp8 output over an fp8 cache", WITH_OUTPUT, BF16, 8, 4, 2, 64, 0, HINTS(2, 8, 0, 0),
     KW_STR("kv_cache_dtype", "fp8")}, NULL, FP8_FN},
    {{"f16 query, fp8 output over an f16 cache", WITH_OUTPUT, F16, 5, 4, 4, 64, 0, NULL, NULL}, NULL, FP8_FN},
    {{"fp8 query over a given uint8 kv_cache, no kv_cache_dtype", WITH_OUTPUT, BF16, 5, 4, 2, 64, 0,
     HINTS(1, 3, 2, 2) ", \"prefill_context_tokens\": 3, \"decode_context_tokens\": 40",
     KW_T("kv_cache", "Tensor(a!)", "[2, 9, 16, 2, 64]", "unsigned char")}, FP8_FN, NULL},
    {{"fp8 query, unified_attention returns bf16", RETURNING, BF16, 6, 4, 2, 64, 0, NULL, NULL}, FP8_FN, NULL},
};

static inline void run_cases(const char *device, const char *prefix) {
  for (size_t i = 0; i < sizeof ua_cases / sizeof *ua_cases; i++) {
    jbuf_t b;
    expect_match(ua_cases[i].what, ua_json(&b, &ua_cases[i]), device, prefix, 300 + i, NULL);
  }
  for (size_t i = 0; i < sizeof ua_fp8_cases / sizeof *ua_fp8_cases; i++) {
    const ua_fp8_case_t *f = &ua_fp8_cases[i];
    jbuf_t b;
    expect_match(f->c.what, ua_json_typed(&b, &f->c, f->q_dtype, f->o_dtype), device, prefix, 400 + i, NULL);
  }
}

/* The family's matrix (tests/kernels/matrix.c): every group on every driver. */
#define UNIFIED_ATTENTION_MATRIX(GROUP) \
  GROUP(mixes, run_cases(device, kernel_impl(device, "unified_attention")))
#define UNIFIED_ATTENTION_MATRIX_GAPS(GAP)

#endif
