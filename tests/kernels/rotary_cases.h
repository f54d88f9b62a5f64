/* Rotary embedding (_C::rotary_embedding, sgl_kernel::rotary_embedding) cases, written once and
 * run on every driver (ROTARY_MATRIX at the end, the rotary_matrix_<driver> targets). NeoX
 * and GPT-J styles, full and partial rotary, num_kv_heads != num_heads,
 * query/key as [T, H*D] and [T, H, D], [B, S] positions, no key, strided views into a fused qkv
 * buffer, a cache of another dtype, positions past the cache, rope_dim_offset and inverse; fp32,
 * fp16 and bf16; 1, 3, 17, 129 and 1000 tokens; sgl-kernel's op as a trace records it (unnamed
 * arguments typed by dtype). The engine fills positions with small integers (0..15). */
#ifndef XR_TESTS_KERNELS_ROTARY_CASES_H
#define XR_TESTS_KERNELS_ROTARY_CASES_H

#include <stdarg.h>

#include "tests/kernels/check.h"

static const char *const dtypes[] = {"float", "c10::Half", "c10::BFloat16"};

typedef struct rope {
  const char *dtype, *cache_dtype;
  int64_t tokens, heads, kv_heads, head_size, rot_dim, max_position;
  bool neox, split_heads, no_key, batched, qkv_view;
  bool sgl; /* sgl_kernel::rotary_embedding in our schema, as traced: no names, dtypes as types */
  const char *extra; /* trailing args: ", {rope_dim_offset ...}" or "" */
} rope_t;

static inline void put(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
  va_end(ap);
  cr_assert(n >= 0 && *len + (size_t)n < cap, "op JSON too long");
  *len += (size_t)n;
}

/* query or key: [T, H*D] / [T, H, D] / [B, S, H*D]; a qkv view has rows of (H + 2 Hk) * D
 * elements and starts `offset` elements in. */
static inline void qk_value(char *buf, size_t cap, size_t *len, const rope_t *c, int64_t heads,
                     int64_t offset) {
  int64_t t = c->tokens, d = c->head_size, row = c->qkv_view ? (c->heads + 2 * c->kv_heads) * d : heads * d;
  if (c->batched)
    put(buf, cap, len, "{\"shape\": [2, %lld, %lld], \"strides\": [%lld, %lld, 1]", (long long)(t / 2),
        (long long)(heads * d), (long long)(t / 2 * row), (long long)row);
  else if (c->split_heads)
    put(buf, cap, len, "{\"shape\": [%lld, %lld, %lld], \"strides\": [%lld, %lld, 1]", (long long)t,
        (long long)heads, (long long)d, (long long)row, (long long)d);
  else
    put(buf, cap, len, "{\"shape\": [%lld, %lld], \"strides\": [%lld, 1]", (long long)t,
        (long long)(heads * d), (long long)row);
  if (offset) put(buf, cap, len, ", \"storage_offset\": %lld", (long long)offset);
  put(buf, cap, len, ", \"dtype\": \"%s\"}", c->dtype);
}

/* The head of argument `name`: TraceLens IR's named and typed entry, or (sgl) a traced one
 * whose type is the tensor's dtype (`dtype`; NULL: a "Scalar"). */
static inline void arg_head(char *buf, size_t cap, size_t *len, const rope_t *c, const char *name,
                            const char *type, const char *dtype) {
  const char *sep = strcmp(name, "positions") ? ", " : "";
  if (c->sgl)
    put(buf, cap, len, "%s{\"type\": \"%s\", \"value\": ", sep, dtype ? dtype : "Scalar");
  else
    put(buf, cap, len, "%s{\"arg_name\": \"%s\", \"arg_type\": \"%s\", \"value\": ", sep, name, type);
}

static inline const char *rope_json(const rope_t *c) {
  static char buf[8192];
  size_t len = 0, cap = sizeof buf;
  if (c->sgl)
    put(buf, cap, &len, "{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": "
        "\"sgl_kernel::rotary_embedding\", \"args\": [");
  else
    put(buf, cap, &len, "{\"op_name\": \"_C::rotary_embedding\", \"replay_ir\": {\"list_pos_args\": [");
  arg_head(buf, cap, &len, c, "positions", "Tensor", "long int");
  if (c->batched)
    put(buf, cap, &len, "{\"shape\": [2, %lld], \"dtype\": \"long int\"}}", (long long)(c->tokens / 2));
  else
    put(buf, cap, &len, "{\"shape\": [%lld], \"dtype\": \"long int\"}}", (long long)c->tokens);
  arg_head(buf, cap, &len, c, "query", "Tensor(a!)", c->dtype);
  qk_value(buf, cap, &len, c, c->heads, c->qkv_view ? 3 : 0);
  put(buf, cap, &len, "}");
  arg_head(buf, cap, &len, c, "key", "Tensor(b!)?", c->no_key ? NULL : c->dtype);
  if (c->no_key) put(buf, cap, &len, "null");
  else qk_value(buf, cap, &len, c, c->kv_heads, c->qkv_view ? c->heads * c->head_size : 0);
  put(buf, cap, &len, "}");
  arg_head(buf, cap, &len, c, "head_size", "int", NULL);
  put(buf, cap, &len, "%lld}", (long long)c->head_size);
  const char *cache_dtype = c->cache_dtype ? c->cache_dtype : c->dtype;
  arg_head(buf, cap, &len, c, "cos_sin_cache", "Tensor", cache_dtype);
  put(buf, cap, &len, "{\"shape\": [%lld, %lld], \"dtype\": \"%s\"}}", (long long)c->max_position,
      (long long)c->rot_dim, cache_dtype);
  arg_head(buf, cap, &len, c, "is_neox", "bool", NULL);
  put(buf, cap, &len, "%s}%s", c->neox ? "true" : "false", c->extra ? c->extra : "");
  put(buf, cap, &len, c->sgl ? "]}]}" : "], \"list_kwargs\": []}}");
  return buf;
}

static inline void expect_match(const rope_t *c, const char *device, const char *prefix, uint64_t seed) {
  const char *json = rope_json(c);
  xr_op_result_t r = check_op_seeded(json, device, seed);
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s on %s: %s: %s", json, device,
               xr_op_outcome_name(r.outcome), r.message);
  cr_assert(r.checked && r.check_passed, "%s on %s: check failed", json, device);
  cr_assert(strncmp(r.kernel, prefix, strlen(prefix)) == 0, "%s: ran %s", json, r.kernel);
  cr_assert_eq(r.output_count, c->no_key ? 1u : 2u, "query and key are both checked");
  cr_assert(strstr(r.init_policy, "positions uniform"), "%s: positions not initialised (%s)", json,
            r.init_policy);
  for (size_t k = 0; k < r.output_count; k++)
    cr_assert(!r.outputs[k].nonfinite && r.outputs[k].nmse <= r.outputs[k].threshold,
              "%s: %s nmse %g", json, r.outputs[k].target, r.outputs[k].nmse);
}

static inline void rotary_cases(const char *device, const char *prefix) {
  uint64_t seed = 1;
  static const int64_t token_counts[] = {1, 3, 17, 129};
  for (int neox = 0; neox < 2; neox++)
    for (size_t d = 0; d < 3; d++)
      for (size_t t = 0; t < sizeof token_counts / sizeof *token_counts; t++) {
        rope_t c = {.dtype = dtypes[d], .tokens = token_counts[t], .heads = 4, .kv_heads = 2,
                    .head_size = 64, .rot_dim = t % 2 ? 32 : 64, .max_position = 32,
                    .neox = neox, .split_heads = t == 2};
        expect_match(&c, device, prefix, seed++);
      }
  rope_t many = {.dtype = "c10::BFloat16", .tokens = 1000, .heads = 8, .kv_heads = 1,
                 .head_size = 128, .rot_dim = 128, .max_position = 16, .neox = true};
  expect_match(&many, device, prefix, seed++);
  rope_t view = {.dtype = "c10::Half", .tokens = 9, .heads = 4, .kv_heads = 2, .head_size = 32,
                 .rot_dim = 16, .max_position = 16, .qkv_view = true};
  expect_match(&view, device, prefix, seed++);
  view.split_heads = true, view.neox = true, view.dtype = "float";
  expect_match(&view, device, prefix, seed++);
  rope_t batched = {.dtype = "float", .tokens = 10, .heads = 2, .kv_heads = 2, .head_size = 16,
                    .rot_dim = 16, .max_position = 16, .neox = true, .batched = true};
  expect_match(&batched, device, prefix, seed++);
  rope_t mixed = {.dtype = "c10::BFloat16", .cache_dtype = "float", .tokens = 17, .heads = 2,
                  .kv_heads = 1, .head_size = 64, .rot_dim = 64, .max_position = 16};
  expect_match(&mixed, device, prefix, seed++);
  rope_t no_key = {.dtype = "c10::Half", .tokens = 5, .heads = 3, .head_size = 16, .rot_dim = 8,
                   .max_position = 16, .neox = true, .no_key = true};
  expect_match(&no_key, device, prefix, seed++);
  /* Positions 8..15 have no cache row: those tokens stay as they were. */
  rope_t short_cache = {.dtype = "float", .tokens = 40, .heads = 2, .kv_heads = 2, .head_size = 16,
                        .rot_dim = 16, .max_position = 8, .neox = true};
  expect_match(&short_cache, device, prefix, seed++);
  rope_t offset = {.dtype = "c10::BFloat16", .tokens = 6, .heads = 2, .kv_heads = 1,
                   .head_size = 64, .rot_dim = 32, .max_position = 16,
                   .extra = ", {\"arg_name\": \"rope_dim_offset\", \"arg_type\": \"int\", \"value\": 16}"
                            ", {\"arg_name\": \"inverse\", \"arg_type\": \"bool\", \"value\": true}"};
  expect_match(&offset, device, prefix, seed++);
  /* sgl-kernel's op as the SGLang fixture records it (Qwen3-8B decode: 32 heads of 128, 8 kv
   * heads, NeoX), and GPT-J, partial rotary, no key and a qkv view of it. */
  rope_t sgl = {.dtype = "c10::BFloat16", .tokens = 32, .heads = 32, .kv_heads = 8,
                .head_size = 128, .rot_dim = 128, .max_position = 64, .neox = true, .sgl = true};
  expect_match(&sgl, device, prefix, seed++);
  rope_t sgl_gptj = {.dtype = "c10::Half", .tokens = 17, .heads = 4, .kv_heads = 2,
                     .head_size = 64, .rot_dim = 32, .max_position = 16, .qkv_view = true,
                     .sgl = true};
  expect_match(&sgl_gptj, device, prefix, seed++);
  rope_t sgl_no_key = {.dtype = "float", .tokens = 3, .heads = 2, .head_size = 16, .rot_dim = 16,
                       .max_position = 16, .neox = true, .no_key = true, .sgl = true};
  expect_match(&sgl_no_key, device, prefix, seed++);
}

/* The family's matrix (tests/kernels/matrix.c): every group on every driver. */
#define ROTARY_MATRIX(GROUP) \
  GROUP(neox_and_gptj, rotary_cases(device, kernel_impl(device, "rotary")))
#define ROTARY_MATRIX_GAPS(GAP)

#endif
