/* MoE test cases, run on every driver (MOE_MATRIX at the end, the moe_matrix_<driver>
 * targets; tests/kernels/moe_test.c runs the cpu's other paths): one-op TraceLens IR bundles
 * built in C, replayed through the engine with --check against the reference, and the case sweeps written once and run per device: E = 1, 4, 8, 64,
 * top-k 1, 2, 4, M = 1, 3, 17, 129, block sizes 4/16/64, experts left without tokens (balanced
 * routing with E > M*topk, Zipf routing), fp32/fp16/bf16, int32/int64 ids, offset and
 * transposed views; moe_forward's layers (mxfp4 or plain weights, biases, silu or swigluoai);
 * the hand-worked sorting examples; the unsupported variants. */
#ifndef XR_TESTS_KERNELS_MOE_CASES_H
#define XR_TESTS_KERNELS_MOE_CASES_H

#include <stdarg.h>
#include <stdlib.h>

#include "formats/bundle.h"
#include "tests/kernels/check.h"

/* ------------------------------------------------------------------------------------------ */
/* one-op TraceLens IR bundles                                                                 */

typedef struct json {
  char text[16384];
  size_t len;
  int args;
} json_t;

static inline void put(json_t *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  j->len += (size_t)vsnprintf(j->text + j->len, sizeof j->text - j->len, fmt, ap);
  va_end(ap);
  cr_assert_lt(j->len, sizeof j->text, "test JSON too long");
}

static inline void begin(json_t *j, const char *op) {
  j->len = 0;
  j->args = 0;
  put(j, "[{\"op_name\": \"%s\", \"replay_ir\": {\"list_pos_args\": [", op);
}

static inline void sep(json_t *j) { put(j, j->args++ ? ", " : ""); }

/* A tensor argument; strides NULL = contiguous. */
static inline void tensor(json_t *j, const char *name, const char *type, const char *dtype, int rank,
                   const int64_t *shape, const int64_t *strides, int64_t offset) {
  sep(j);
  put(j, "{\"arg_name\": \"%s\", \"arg_type\": \"%s\", \"value\": {\"dtype\": \"%s\", \"shape\": [",
      name, type, dtype);
  for (int d = 0; d < rank; d++) put(j, "%s%lld", d ? ", " : "", (long long)shape[d]);
  put(j, "], \"strides\": [");
  int64_t s = 1, st[4];
  for (int d = rank - 1; d >= 0; d--) st[d] = s, s *= shape[d];
  for (int d = 0; d < rank; d++) put(j, "%s%lld", d ? ", " : "", (long long)(strides ? strides[d] : st[d]));
  put(j, "], \"storage_offset\": %lld}}", (long long)offset);
}

static inline void t1(json_t *j, const char *name, const char *type, const char *dtype, int64_t n) {
  tensor(j, name, type, dtype, 1, (int64_t[]){n}, NULL, 0);
}
static inline void t2(json_t *j, const char *name, const char *type, const char *dtype, int64_t a, int64_t b) {
  tensor(j, name, type, dtype, 2, (int64_t[]){a, b}, NULL, 0);
}
static inline void t3(json_t *j, const char *name, const char *type, const char *dtype, int64_t a,
               int64_t b, int64_t c) {
  tensor(j, name, type, dtype, 3, (int64_t[]){a, b, c}, NULL, 0);
}
static inline void iarg(json_t *j, const char *name, long long v) {
  sep(j);
  put(j, "{\"arg_name\": \"%s\", \"arg_type\": \"int\", \"value\": %lld}", name, v);
}
static inline void barg(json_t *j, const char *name, bool v) {
  sep(j);
  put(j, "{\"arg_name\": \"%s\", \"arg_type\": \"bool\", \"value\": %s}", name, v ? "true" : "false");
}
static inline void end(json_t *j) { put(j, "], \"list_kwargs\": []}}]"); }

static const char *const float_names[] = {"float", "c10::Half", "c10::BFloat16"};

/* ------------------------------------------------------------------------------------------ */
/* running                                                                                     */

/* Replays with --check and the given MoE routing policy (--init); skips when the device is
 * absent. */
static inline xr_op_result_t run(const char *json, const char *device, uint64_t seed, const char *init) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK,
               "%s: %s", xr_last_error(), json);
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = device;
  o.check = true;
  o.warmup = 1; /* a second execution on the same buffers must give the same result */
  o.iters = 1;
  o.seed = seed;
  xr_init_override_t override = {b->ops[0].name, init};
  if (init) {
    o.init_overrides = &override;
    o.init_override_count = 1;
  }
  static check_result_t c;
  memset(&c, 0, sizeof c);
  xr_replay_observer_t observer = {.result = check_collect, .context = &c};
  xr_status_t st = xr_replay_run(b, &o, &observer, NULL);
  xr_bundle_destroy(b);
  if (st == XR_UNAVAILABLE || st == XR_NOT_FOUND) cr_skip_test("%s unavailable: %s", device, xr_last_error());
  cr_assert_eq(st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(c.count, 1);
  return c.r;
}

static inline void expect_match(const json_t *j, const char *device, const char *kernel, uint64_t seed,
                         const char *init) {
  xr_op_result_t r = run(j->text, device, seed, init);
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s on %s (%s): %s: %s", j->text, device,
               init ? init : "balanced", xr_op_outcome_name(r.outcome), r.message);
  cr_assert(r.checked && r.check_passed, "%s: check failed", j->text);
  cr_assert_str_eq(r.kernel, kernel, "%s ran %s", j->text, r.kernel);
}

static const int64_t experts_list[] = {1, 4, 8, 64};
static const int64_t topk_list[] = {1, 2, 4};
static const int64_t tokens_list[] = {1, 3, 17, 129};
static const int64_t block_list[] = {4, 16, 64};
static const char *const policies[] = {NULL, "uniform", "zipf:1.5"};
/* ------------------------------------------------------------------------------------------ */
/* _moe_C::moe_align_block_size and aiter::moe_sorting_fwd                                    */

static inline void align_case(json_t *j, int64_t M, int64_t topk, int64_t E, int64_t bs, bool wide) {
  int64_t numel = M * topk, len = numel + E * (bs - 1);
  begin(j, "_moe_C::moe_align_block_size");
  t2(j, "topk_ids", "Tensor", wide ? "long int" : "int", M, topk);
  iarg(j, "num_experts", E);
  iarg(j, "block_size", bs);
  t1(j, "sorted_token_ids", "Tensor(a!)", "int", len);
  t1(j, "experts_ids", "Tensor(b!)", "int", (len + bs - 1) / bs);
  t1(j, "num_tokens_post_pad", "Tensor(c!)", "int", 1);
  end(j);
}

static inline void sorting_case(json_t *j, int64_t M, int64_t topk, int64_t E, int64_t unit, bool wide,
                         const char *buf_dtype) {
  int64_t len = M * topk + E * unit - topk;
  begin(j, "aiter::moe_sorting_fwd");
  t2(j, "topk_ids", "Tensor", wide ? "long int" : "int", M, topk);
  t2(j, "topk_weights", "Tensor", "float", M, topk);
  t1(j, "sorted_token_ids", "Tensor", "int", len);
  t1(j, "sorted_weights", "Tensor", "float", len);
  t1(j, "sorted_expert_ids", "Tensor", "int", (len + unit - 1) / unit);
  t1(j, "num_valid_ids", "Tensor", "int", 2);
  t2(j, "moe_buf", "Tensor", buf_dtype, M, 32);
  iarg(j, "num_experts", E);
  iarg(j, "unit_size", unit);
  end(j);
}

static inline void sweep_sorting(const char *device, const char *kernel, bool ck) {
  json_t j;
  int n = 0;
  for (size_t e = 0; e < 4; e++)
    for (size_t k = 0; k < 3; k++)
      for (size_t m = 0; m < 4; m++)
        for (size_t b = 0; b < 3; b++) {
          int64_t E = experts_list[e], topk = topk_list[k];
          if (topk > E) continue;
          bool wide = n % 2;
          if (ck) sorting_case(&j, tokens_list[m], topk, E, block_list[b], wide, float_names[n % 3]);
          else align_case(&j, tokens_list[m], topk, E, block_list[b], wide);
          expect_match(&j, device, kernel, (uint64_t)n, policies[n % 3]);
          n++;
        }
  cr_assert_gt(n, 100);
}
/* ------------------------------------------------------------------------------------------ */
/* _moe_C::topk_softmax                                                                        */

static inline void sweep_topk_softmax(const char *device, const char *kernel) {
  json_t j;
  int n = 0;
  for (size_t e = 0; e < 4; e++)
    for (size_t k = 0; k < 3; k++)
      for (size_t m = 0; m < 4; m++) {
        int64_t E = experts_list[e], topk = topk_list[k], M = tokens_list[m];
        if (topk > E) continue;
        begin(&j, "_moe_C::topk_softmax");
        t2(&j, "topk_weights", "Tensor(a!)", "float", M, topk);
        t2(&j, "topk_indices", "Tensor(b!)", n % 2 ? "long int" : "int", M, topk);
        t2(&j, "token_expert_indices", "Tensor(c!)", "int", M, topk);
        /* every other case: a transposed view of an [E, M] buffer */
        if (n % 2) tensor(&j, "gating_output", "Tensor", float_names[n % 3], 2, (int64_t[]){M, E}, (int64_t[]){1, M}, 0);
        else t2(&j, "gating_output", "Tensor", float_names[n % 3], M, E);
        barg(&j, "renormalize", n % 3 == 1);
        end(&j);
        expect_match(&j, device, kernel, (uint64_t)n, NULL);
        n++;
      }
  cr_assert_gt(n, 30);
}

/* ------------------------------------------------------------------------------------------ */
/* vllm::outplace_fused_experts / inplace_fused_experts / moe_forward                          */

enum { K_DIM = 48, N_DIM = 40 }; /* not multiples of the tiles: edge panels everywhere */

static inline void fused_case(json_t *j, int variant, int64_t M, int64_t topk, int64_t E, const char *dt,
                              int64_t K, int64_t N) {
  bool inplace = variant == 1, forward = variant == 2, on_input = variant == 3 && topk == 1;
  begin(j, forward ? "vllm::moe_forward" : inplace ? "vllm::inplace_fused_experts"
                                                   : "vllm::outplace_fused_experts");
  /* hidden_states: an offset view with padded rows (row stride K + 8) */
  tensor(j, "hidden_states", inplace ? "Tensor(a!)" : "Tensor", dt, 2, (int64_t[]){M, K},
         (int64_t[]){K + 8, 1}, 5);
  if (forward) {
    t2(j, "router_logits", "Tensor", dt, M, E);
    put(j, ", {\"arg_name\": \"layer_name\", \"arg_type\": \"str\", \"value\": \"model.layers.0.mlp.experts\"}");
  }
  t3(j, "w1", "Tensor", dt, E, 2 * N, K);
  /* w2 [E, K, N] as a transposed view of [E, N, K] storage */
  tensor(j, "w2", "Tensor", dt, 3, (int64_t[]){E, K, N}, (int64_t[]){N * K, 1, K}, 0);
  if (forward) {
    iarg(j, "top_k", topk);
    barg(j, "renormalize", M % 2);
  } else {
    t2(j, "topk_weights", "Tensor", "float", M, topk);
    t2(j, "topk_ids", "Tensor", M % 2 ? "int" : "long int", M, topk);
    if (on_input) barg(j, "apply_router_weight_on_input", true);
  }
  end(j);
}

static inline void sweep_fused(const char *device, const char *kernel) {
  json_t j;
  int n = 0;
  for (size_t e = 0; e < 4; e++)
    for (size_t k = 0; k < 3; k++)
      for (size_t m = 0; m < 4; m++) {
        int64_t E = experts_list[e], topk = topk_list[k], M = tokens_list[m];
        if (topk > E) continue;
        fused_case(&j, n % 4, M, topk, E, float_names[n % 3], K_DIM, N_DIM);
        expect_match(&j, device, kernel, (uint64_t)n, n % 4 == 2 ? NULL : policies[n % 3]);
        n++;
      }
  cr_assert_gt(n, 30);
}

/* ------------------------------------------------------------------------------------------ */
/* vllm::moe_forward with its layer as --model-config writes it: mxfp4 or plain weights, biases,
 * GPT-OSS's swigluoai (gate and up interleaved, clamped)                                      */

static inline void sarg(json_t *j, const char *name, const char *v) {
  sep(j);
  put(j, "{\"arg_name\": \"%s\", \"arg_type\": \"str\", \"value\": \"%s\"}", name, v);
}
static inline void farg(json_t *j, const char *name, double v) {
  sep(j);
  put(j, "{\"arg_name\": \"%s\", \"arg_type\": \"float\", \"value\": %.17g}", name, v);
}

/* K and N multiples of 32 (mxfp4 blocks). The layer: mxfp4 or plain weights, biases of dtype
 * bias_dt (NULL: none), silu or swigluoai (GPT-OSS's layer has both biases and swigluoai). */
static inline void forward_layer_case(json_t *j, int64_t M, int64_t topk, int64_t E, int64_t K, int64_t N,
                                      bool mxfp4, const char *bias_dt, bool swiglu, const char *dt) {
  begin(j, "vllm::moe_forward");
  t2(j, "hidden_states", "Tensor", dt, M, K);
  t2(j, "router_logits", "Tensor", dt, M, E);
  const char *wd = mxfp4 ? "c10::Float4_e2m1fn_x2" : dt;
  int64_t div = mxfp4 ? 2 : 1;
  t3(j, "w1", "Tensor", wd, E, 2 * N, K / div);
  if (mxfp4) t3(j, "w1_scale", "Tensor", "c10::Float8_e8m0fnu", E, 2 * N, K / 32);
  if (bias_dt) t2(j, "w1_bias", "Tensor", bias_dt, E, 2 * N);
  t3(j, "w2", "Tensor", wd, E, K, N / div);
  if (mxfp4) t3(j, "w2_scale", "Tensor", "c10::Float8_e8m0fnu", E, K, N / 32);
  if (bias_dt) t2(j, "w2_bias", "Tensor", bias_dt, E, K);
  iarg(j, "top_k", topk);
  if (swiglu) {
    sarg(j, "activation", "swigluoai");
    farg(j, "swiglu_limit", 7.0);
  }
  end(j);
}

/* Every combination of mxfp4/plain weights and silu/GPT-OSS layers, over token counts that
 * leave experts empty and ones that do not; then, mxfp4 and plain, biases with silu (fp32
 * biases on bf16 activations: silu's up bias sits N rows on, not one) and swigluoai without
 * biases. */
static inline void sweep_forward_layers(const char *device, const char *kernel) {
  static const int64_t tokens[] = {1, 5, 33};
  json_t j;
  int n = 0;
  for (int layer = 0; layer < 4; layer++)
    for (size_t m = 0; m < 3; m++) {
      bool mxfp4 = layer & 1, gpt_oss = layer & 2;
      int64_t E = m == 2 ? 8 : 4, topk = m == 0 ? 1 : 2;
      const char *dt = n % 3 == 2 ? "float" : "c10::BFloat16";
      forward_layer_case(&j, tokens[m], topk, E, 64 + 32 * (int64_t)m, 96 - 32 * (int64_t)(m % 2), mxfp4,
                         gpt_oss ? dt : NULL, gpt_oss, dt);
      expect_match(&j, device, kernel, (uint64_t)n, NULL);
      n++;
    }
  for (int layer = 0; layer < 4; layer++) {
    bool mxfp4 = layer & 1, biases = !(layer & 2);
    size_t m = 1 + (size_t)layer % 2;
    const char *dt = layer == 3 ? "float" : "c10::BFloat16";
    forward_layer_case(&j, tokens[m], 2, m == 2 ? 8 : 4, 64 + 32 * (int64_t)m, 96 - 32 * (int64_t)(m % 2),
                       mxfp4, biases ? "float" : NULL, !biases, dt);
    expect_match(&j, device, kernel, (uint64_t)n, NULL);
    n++;
  }
  cr_assert_eq(n, 16);
}

/* ------------------------------------------------------------------------------------------ */
/* aiter::ck_moe_stage1 / ck_moe_stage2 on sorted ids the initializer derives from its routing */

static inline void stage_case(json_t *j, int stage, int64_t M, int64_t topk, int64_t E, int64_t block,
                              const char *dt, bool weighted, int64_t K, int64_t N) {
  int64_t len = M * topk + E * block - topk;
  begin(j, stage == 1 ? "aiter::ck_moe_stage1" : "aiter::ck_moe_stage2");
  if (stage == 1) t2(j, "hidden_states", "Tensor", dt, M, K);
  else t3(j, "inter_states", "Tensor", dt, M, topk, N);
  t3(j, "w1", "Tensor", dt, E, 2 * N, K);
  t3(j, "w2", "Tensor", dt, E, K, N);
  t1(j, "sorted_token_ids", "Tensor", "int", len);
  t1(j, "sorted_expert_ids", "Tensor", "int", (len + block - 1) / block);
  t1(j, "num_valid_ids", "Tensor", "int", 2);
  if (stage == 1) t3(j, "out", "Tensor", dt, M, topk, N);
  else t2(j, "out", "Tensor", dt, M, K);
  iarg(j, "topk", topk);
  iarg(j, "block_m", block);
  if (weighted) t1(j, "sorted_weights", "Tensor", "float", len);
  end(j);
}

static inline void sweep_stages(const char *device, const char *kernel) {
  json_t j;
  int n = 0;
  for (int stage = 1; stage <= 2; stage++)
    for (size_t e = 0; e < 4; e++)
      for (size_t k = 0; k < 3; k++)
        for (size_t m = 0; m < 4; m += 1 + (e > 1)) {
          int64_t E = experts_list[e], topk = topk_list[k], M = tokens_list[m];
          if (topk > E) continue;
          stage_case(&j, stage, M, topk, E, n % 2 ? 16 : 32, float_names[n % 3], n % 3 != 0, K_DIM,
                     N_DIM);
          expect_match(&j, device, kernel, (uint64_t)n, policies[n % 3]);
          n++;
        }
  cr_assert_gt(n, 30);
}

/* ------------------------------------------------------------------------------------------ */
/* wider problems: several column tiles per GEMM and many reduction steps                      */

/* Fused experts (every variant) and both stages with K = 136, N = 200: the GPU's 64-column and
 * OpenCL's 16-column tiles each take several column blocks, the reductions several 16-wide
 * steps with a partial last one; block_m 64 gives the GPU its 64-row tiles. */
static inline void sweep_wide(const char *device, const char *fused_kernel, const char *stage_kernel) {
  enum { K_WIDE = 136, N_WIDE = 200 };
  static const int64_t shapes[4][3] = {{129, 2, 4}, {129, 2, 8}, {17, 4, 8}, {129, 1, 4}}; /* M, topk, E */
  json_t j;
  for (int n = 0; n < 4; n++) {
    fused_case(&j, n, shapes[n][0], shapes[n][1], shapes[n][2], float_names[n % 3], K_WIDE, N_WIDE);
    expect_match(&j, device, fused_kernel, (uint64_t)n, n == 2 ? NULL : policies[n % 3]);
  }
  for (int n = 0; n < 4; n++) {
    stage_case(&j, 1 + n % 2, 129, 2, 4, n < 2 ? 64 : 32, float_names[n % 3], n != 1, K_WIDE, N_WIDE);
    expect_match(&j, device, stage_kernel, (uint64_t)n, policies[n % 3]);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* hand-worked sorting semantics                                                               */

static inline void write_npy_i32(const char *path, const int32_t *v, int rows, int cols) {
  char dict[128];
  int len = snprintf(dict, sizeof dict, "{'descr': '<i4', 'fortran_order': False, 'shape': (%d, %d), }",
                     rows, cols);
  int header = len + 1;
  while ((10 + header) % 64) header++;
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "%s", path);
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  fputc(header & 0xff, f), fputc(header >> 8, f);
  fwrite(dict, 1, (size_t)len, f);
  for (int i = len; i < header - 1; i++) fputc(' ', f);
  fputc('\n', f);
  fwrite(v, sizeof *v, (size_t)(rows * cols), f);
  fclose(f);
}

static inline int32_t *read_npy_i32(const char *path, int64_t *n) {
  xr_npy_t npy;
  cr_assert_eq(xr_npy_load(path, &npy), XR_OK, "%s", xr_last_error());
  int32_t *v = malloc(sizeof(int32_t) * (size_t)npy.numel);
  memcpy(v, npy.data, sizeof(int32_t) * (size_t)npy.numel);
  *n = npy.numel;
  xr_npy_free(&npy);
  return v;
}

/* Replays `json` (topk_ids from ids.npy in `dir`) on `device` and dumps its outputs to
 * dir/dump: on cpu the reference itself, elsewhere the device's implementation, also checked
 * against the reference. Skips when the device is absent. */
static inline void run_dump(const char *json, const char *dir, const char *device) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", dir, NULL, &b), XR_OK,
               "%s", xr_last_error());
  bool cpu = !strcmp(device, "cpu");
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = device;
  if (cpu) o.choice = XR_KERNEL_REFERENCE;
  o.check = !cpu;
  o.warmup = 0;
  o.iters = 1;
  char dump[1024];
  snprintf(dump, sizeof dump, "%s/dump", dir);
  o.dump_dir = dump;
  static check_result_t c;
  memset(&c, 0, sizeof c);
  xr_replay_observer_t observer = {.result = check_collect, .context = &c};
  xr_status_t st = xr_replay_run(b, &o, &observer, NULL);
  xr_bundle_destroy(b);
  if (st == XR_UNAVAILABLE || st == XR_NOT_FOUND) cr_skip_test("%s unavailable: %s", device, xr_last_error());
  cr_assert_eq(st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(c.r.outcome, XR_OP_SUCCEEDED, "%s", c.r.message);
  if (!cpu) {
    cr_assert(c.r.checked && c.r.check_passed, "%s: check failed", json);
    cr_assert(!strncmp(c.r.kernel, device, strlen(device)), "ran %s on %s", c.r.kernel, device);
  }
}

/* CK's documented example: E = 6, topk = 3, unit 4, 5 tokens; expert 4 has no token and still
 * gets one block; ids are token | slot << 24, padding 5 | 3 << 24. */
static inline void ck_documented_example(const char *device) {
  const char *dir = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
  const int32_t ids[15] = {0, 3, 5, 2, 3, 5, 1, 3, 5, 1, 2, 3, 1, 3, 5};
  char path[1024];
  snprintf(path, sizeof path, "%s/ids.npy", dir);
  write_npy_i32(path, ids, 5, 3);
  json_t j;
  int64_t len = 15 + 6 * 4 - 3;
  begin(&j, "aiter::moe_sorting_fwd");
  sep(&j);
  put(&j, "{\"arg_name\": \"topk_ids\", \"arg_type\": \"Tensor\", \"value\": {\"dtype\": \"int\", "
          "\"shape\": [5, 3], \"strides\": [3, 1], \"data\": \"ids.npy\"}}");
  t2(&j, "topk_weights", "Tensor", "float", 5, 3);
  t1(&j, "sorted_token_ids", "Tensor", "int", len);
  t1(&j, "sorted_weights", "Tensor", "float", len);
  t1(&j, "sorted_expert_ids", "Tensor", "int", (len + 3) / 4);
  t1(&j, "num_valid_ids", "Tensor", "int", 2);
  iarg(&j, "num_experts", 6);
  iarg(&j, "unit_size", 4);
  end(&j);
  run_dump(j.text, dir, device);
  int64_t n;
  snprintf(path, sizeof path, "%s/dump/op0_num_valid_ids.npy", dir);
  int32_t *nv = read_npy_i32(path, &n);
  cr_assert_eq(nv[0], 28);
  cr_assert_eq(nv[1], 5);
  snprintf(path, sizeof path, "%s/dump/op0_sorted_expert_ids.npy", dir);
  int32_t *eids = read_npy_i32(path, &n);
  const int32_t want_e[7] = {0, 1, 2, 3, 3, 4, 5};
  for (int i = 0; i < 7; i++) cr_assert_eq(eids[i], want_e[i], "block %d", i);
  snprintf(path, sizeof path, "%s/dump/op0_sorted_token_ids.npy", dir);
  int32_t *sorted = read_npy_i32(path, &n);
  const int32_t P = 5 | 3 << 24;
  const int32_t want[28] = {0,       P,       P,       P,       2 | 0 << 24, 3 | 0 << 24, 4 | 0 << 24,
                            P,       1 | 0 << 24, 3 | 1 << 24, P, P, 0 | 1 << 24, 1 | 1 << 24,
                            2 | 1 << 24, 3 | 2 << 24, 4 | 1 << 24, P, P, P, P, P, P, P,
                            0 | 2 << 24, 1 | 2 << 24, 2 | 2 << 24, 4 | 2 << 24};
  for (int i = 0; i < 28; i++) cr_assert_eq(sorted[i], want[i], "position %d: %#x, expected %#x", i, sorted[i], want[i]);
  for (int64_t i = 28; i < n; i++) cr_assert_eq(sorted[i], P, "tail %lld", (long long)i);
  free(nv), free(eids), free(sorted);
}

/* vLLM's semantics on a small case: E = 4, block 4, ids [[1, 3], [1, 0], [3, 1]] (expert 2
 * empty): segments 0: {2}, 1: {0, 3, 5}, 3: {1, 4}, padded with numel = 6. */
static inline void vllm_worked_example(const char *device) {
  const char *dir = getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp";
  const int32_t ids[6] = {1, 3, 1, 0, 3, 1};
  char path[1024];
  snprintf(path, sizeof path, "%s/ids.npy", dir);
  write_npy_i32(path, ids, 3, 2);
  json_t j;
  begin(&j, "_moe_C::moe_align_block_size");
  sep(&j);
  put(&j, "{\"arg_name\": \"topk_ids\", \"arg_type\": \"Tensor\", \"value\": {\"dtype\": \"int\", "
          "\"shape\": [3, 2], \"strides\": [2, 1], \"data\": \"ids.npy\"}}");
  iarg(&j, "num_experts", 4);
  iarg(&j, "block_size", 4);
  t1(&j, "sorted_token_ids", "Tensor(a!)", "int", 18);
  t1(&j, "experts_ids", "Tensor(b!)", "int", 5);
  t1(&j, "num_tokens_post_pad", "Tensor(c!)", "int", 1);
  end(&j);
  run_dump(j.text, dir, device);
  int64_t n;
  snprintf(path, sizeof path, "%s/dump/op0_num_tokens_post_pad.npy", dir);
  int32_t *post = read_npy_i32(path, &n);
  cr_assert_eq(post[0], 12);
  snprintf(path, sizeof path, "%s/dump/op0_experts_ids.npy", dir);
  int32_t *e = read_npy_i32(path, &n);
  cr_assert(e[0] == 0 && e[1] == 1 && e[2] == 3, "%d %d %d", e[0], e[1], e[2]);
  snprintf(path, sizeof path, "%s/dump/op0_sorted_token_ids.npy", dir);
  int32_t *s = read_npy_i32(path, &n);
  const int32_t want[12] = {3, 6, 6, 6, 0, 2, 5, 6, 1, 4, 6, 6};
  for (int i = 0; i < 12; i++) cr_assert_eq(s[i], want[i], "position %d", i);
  for (int64_t i = 12; i < n; i++) cr_assert_eq(s[i], 6);
  free(post), free(e), free(s);
}

/* ------------------------------------------------------------------------------------------ */
/* variants reported, never run wrongly                                                        */

/* A real trace's moe_forward carries only the layer name: unsupported with the reason. */
static inline void expect_forward_without_weights_unsupported(const char *device) {
  json_t j;
  begin(&j, "vllm::moe_forward");
  t2(&j, "hidden_states", "Tensor(a!)", "c10::BFloat16", 4, 64);
  t2(&j, "router_logits", "Tensor", "c10::BFloat16", 4, 8);
  put(&j, ", {\"arg_name\": \"layer_name\", \"arg_type\": \"str\", \"value\": \"l0\"}");
  end(&j);
  xr_op_result_t r = run(j.text, device, 0, NULL);
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "weights are not in the trace"), "%s", r.message);
}

/* Quantised variants are reported, never run wrongly. */
static inline void expect_quantised_variant_unsupported(const char *device) {
  json_t j;
  begin(&j, "vllm::outplace_fused_experts");
  t2(&j, "hidden_states", "Tensor", "c10::BFloat16", 4, 64);
  t3(&j, "w1", "Tensor", "c10::BFloat16", 4, 64, 64);
  t3(&j, "w2", "Tensor", "c10::BFloat16", 4, 64, 32);
  t2(&j, "topk_weights", "Tensor", "float", 4, 2);
  t2(&j, "topk_ids", "Tensor", "int", 4, 2);
  barg(&j, "use_fp8_w8a8", true);
  end(&j);
  xr_op_result_t r = run(j.text, device, 0, NULL);
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "use_fp8_w8a8"), "%s", r.message);
}

/* Shapes that do not agree are errors naming the argument. */
static inline void expect_mismatched_weights_name_the_argument(const char *device) {
  json_t j;
  begin(&j, "vllm::outplace_fused_experts");
  t2(&j, "hidden_states", "Tensor", "float", 4, 64);
  t3(&j, "w1", "Tensor", "float", 4, 64, 64);
  t3(&j, "w2", "Tensor", "float", 4, 48, 32);
  t2(&j, "topk_weights", "Tensor", "float", 4, 2);
  t2(&j, "topk_ids", "Tensor", "int", 4, 2);
  end(&j);
  xr_op_result_t r = run(j.text, device, 0, NULL);
  cr_assert_eq(r.outcome, XR_OP_FAILED);
  cr_assert(strstr(r.message, "w2"), "%s", r.message);
}

/* moe_forward with fp8 expert weights and float32 scales, per expert or per [bn, bk] block
 * (vLLM's Fp8MoEMethod), with and without GPT-OSS's layer. */
static inline void forward_fp8_case(json_t *j, int64_t M, int64_t topk, int64_t E, int64_t K, int64_t N,
                                    const char *fp8, int64_t bn, int64_t bk, bool gpt_oss) {
  begin(j, "vllm::moe_forward");
  t2(j, "hidden_states", "Tensor", "c10::BFloat16", M, K);
  t2(j, "router_logits", "Tensor", "c10::BFloat16", M, E);
  t3(j, "w1", "Tensor", fp8, E, 2 * N, K);
  t3(j, "w2", "Tensor", fp8, E, K, N);
  if (bn) {
    t3(j, "w1_scale", "Tensor", "float", E, (2 * N + bn - 1) / bn, (K + bk - 1) / bk);
    t3(j, "w2_scale", "Tensor", "float", E, (K + bn - 1) / bn, (N + bk - 1) / bk);
    sep(j);
    put(j, "{\"arg_name\": \"weight_block_size\", \"arg_type\": \"int[]\", \"value\": [%lld, %lld]}",
        (long long)bn, (long long)bk);
  } else {
    t1(j, "w1_scale", "Tensor", "float", E);
    t1(j, "w2_scale", "Tensor", "float", E);
  }
  if (gpt_oss) {
    t2(j, "w1_bias", "Tensor", "c10::BFloat16", E, 2 * N);
    t2(j, "w2_bias", "Tensor", "c10::BFloat16", E, K);
    sarg(j, "activation", "swigluoai");
  }
  iarg(j, "top_k", topk);
  end(j);
}

static inline void sweep_forward_fp8(const char *device, const char *kernel) {
  static const int64_t blocks[][2] = {{0, 0}, {128, 128}, {32, 64}};
  json_t j;
  int n = 0;
  for (int b = 0; b < 3; b++)
    for (int m = 0; m < 2; m++) {
      forward_fp8_case(&j, m ? 33 : 3, 2, 4, 160, 96, b == 1 ? "c10::Float8_e4m3fnuz" : "c10::Float8_e4m3fn",
                       blocks[b][0], blocks[b][1], m == 1);
      expect_match(&j, device, kernel, (uint64_t)(70 + n), NULL);
      n++;
    }
}

/* The kernels each driver runs the MoE ops on: on the cpu the fused experts (fused_moe,
 * moe_forward) on cpu.moe_fused and routing and the stages on the reference; every op on
 * opencl.moe and gpu.moe. */
static inline const char *moe_fused_impl(const char *device) {
  return !strcmp(device, "cpu") ? "cpu.moe_fused" : kernel_impl(device, "moe");
}

static inline const char *moe_route_impl(const char *device) {
  return !strcmp(device, "cpu") ? "ref.moe" : kernel_impl(device, "moe");
}

/* The family's matrix (tests/kernels/matrix.c): every group on every driver. */
#define MOE_MATRIX(GROUP)                                                                      \
  GROUP(align_sweep, sweep_sorting(device, moe_route_impl(device), false))                     \
  GROUP(sorting_sweep, sweep_sorting(device, moe_route_impl(device), true))                    \
  GROUP(ck_documented_example, ck_documented_example(device))                                  \
  GROUP(vllm_worked_example, vllm_worked_example(device))                                      \
  GROUP(topk_softmax_sweep, sweep_topk_softmax(device, moe_route_impl(device)))                \
  GROUP(fused_sweep, sweep_fused(device, moe_fused_impl(device)))                              \
  GROUP(stages_sweep, sweep_stages(device, moe_route_impl(device)))                            \
  GROUP(wide_problems, sweep_wide(device, moe_fused_impl(device), moe_route_impl(device)))     \
  GROUP(forward_layers, sweep_forward_layers(device, moe_fused_impl(device)))                  \
  GROUP(forward_fp8, sweep_forward_fp8(device, moe_fused_impl(device)))                        \
  GROUP(forward_without_weights_is_unsupported, expect_forward_without_weights_unsupported(device)) \
  GROUP(quantised_variant_is_unsupported, expect_quantised_variant_unsupported(device))        \
  GROUP(mismatched_weights_name_the_argument, expect_mismatched_weights_name_the_argument(device))
#define MOE_MATRIX_GAPS(GAP)

#endif
