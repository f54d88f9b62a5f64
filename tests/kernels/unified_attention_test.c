/* vLLM's unified attention (vllm::unified_attention_with_output, vllm::unified_attention): the
 * cases of unified_attention_cases.h (pure decode, pure prefill and mixed batches from trace
 * hints, from query_lens/context_lens kwargs and from the default; GQA and MQA; block sizes 16
 * and 32; f32, f16, bf16 and an fp8 cache; flattened [tokens, heads * head_size] views;
 * explicit kv_cache / block_table tensors in either cache layout; the output and the written KV
 * cache both compared) run on every driver by the unified_attention_matrix_* targets against
 * the CPU reference through the replay engine. Here: the replay's cache is NaN wherever no
 * cached token lives; the reference agrees with a dense attention computed here on embedded
 * data; bad inputs are errors that name the argument; extraction gives the op its iteration
 * hints and the extracted op replays. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "formats/trace_extract.h"
#include "kernels/unified_attention.h"
#include "tests/kernels/unified_attention_cases.h"

/* Batches of 8 sequences or more: the cpu kernel walks the keys of a decode sequence once for
 * several kv heads of the token-major cache (odd head size, partial key tiles, speculative
 * steps of 3 queries, an fp8 cache). */
Test(unified_attention_cpu, decode_heads_together) {
  static const ua_case_t cases[] = {
      {"12 decode + prompt of 20, gqa2 d40 f16", WITH_OUTPUT, F16, 32, 8, 4, 40, 0,
       HINTS(1, 20, 12, 12) ", \"prefill_context_tokens\": 53, \"decode_context_tokens\": 1800", NULL},
      {"9 speculative steps of 3, gqa4 bf16", WITH_OUTPUT, BF16, 27, 8, 2, 64, 0,
       HINTS(0, 0, 9, 27) ", \"prefill_context_tokens\": 0, \"decode_context_tokens\": 700", NULL},
      {"8 decode, fp8 e5m2 cache", WITH_OUTPUT, F16, 8, 4, 2, 64, 0,
       HINTS(0, 0, 8, 8) ", \"prefill_context_tokens\": 0, \"decode_context_tokens\": 520",
       KW_STR("kv_cache_dtype", "fp8_e5m2")},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    jbuf_t b;
    expect_match(cases[i].what, ua_json(&b, &cases[i]), "cpu", "cpu.unified_attention", 350 + i, NULL);
  }
}

/* Both outputs are compared: the attention output and the written cache. */
Test(unified_attention_cpu, check_covers_output_and_cache) {
  jbuf_t b;
  xr_op_result_t r = run_case(ua_json(&b, &ua_cases[3]), "cpu", 7, NULL);
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s", r.message);
  cr_assert_eq(r.output_count, 2);
  cr_assert_str_eq(r.outputs[0].target, "output");
  cr_assert_str_eq(r.outputs[1].target, "kv_cache");
  cr_assert(strstr(r.init_policy, "layout from the trace's hints: 3 decode (3 tokens, keys from the hints) + 2 "
                                  "prefill (20 tokens, keys from the hints)"), "%s", r.init_policy);
}

/* ------------------------------------------------------------------------------------------ */
/* the layout and the completed op                                                             */

static xr_bundle_t *plan_json(const char *json, xr_op_plan_t *plan, xr_status_t *out_st) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK, "%s",
               xr_last_error());
  *out_st = xr_kernel_plan(&b->ops[0], plan);
  return b;
}

static const xr_tensor_spec_t *kwarg_tensor(const xr_op_t *op, const char *name) {
  const xr_arg_t *a = xr_op_find_arg(op, name);
  cr_assert(a && a->value.kind == XR_VALUE_TENSOR, "%s is not a tensor kwarg", name);
  return a->value.as.tensor;
}

Test(unified_attention_layout, from_hints) {
  jbuf_t b;
  xr_op_plan_t plan;
  xr_status_t st;
  xr_bundle_t *bundle = plan_json(ua_json(&b, &ua_cases[3]), &plan, &st);
  cr_assert_eq(st, XR_OK, "%s", xr_last_error());
  const xr_ua_problem_t *u = plan.problem;
  const xr_ua_layout_t *l = &u->layout;
  /* decode first: 3 x 1 query over 100 keys, then 2 prefills of 10 queries over 35 keys */
  cr_assert_eq(l->seqs, 5);
  cr_assert_eq(l->source, XR_UA_FROM_HINTS);
  const int64_t q[5] = {1, 1, 1, 10, 10}, k[5] = {100, 100, 100, 35, 35};
  for (int i = 0; i < 5; i++) {
    cr_assert_eq(l->q_len[i], q[i], "q_len[%d]", i);
    cr_assert_eq(l->k_len[i], k[i], "k_len[%d]", i);
  }
  cr_assert_eq(l->tokens, 23);
  /* keys seen: 3 x 100 + 2 x (10 x 25 + 55); 2 x heads x keys x 2 x head_size */
  double keys = 300 + 2 * (250 + 55);
  cr_assert_float_eq(plan.flops, 2.0 * 4 * keys * 128, 1e-6);
  /* the completed op: the five tensors added, cache sized to the blocks needed plus a spare */
  const xr_tensor_spec_t *kv = kwarg_tensor(plan.op, "kv_cache");
  cr_assert_eq(kv->rank, 5);
  const int64_t kvs[5] = {2, 3 * 7 + 2 * 3 + 1, 16, 2, 64};
  for (int d = 0; d < 5; d++) cr_assert_eq(kv->shape[d], kvs[d], "kv_cache dim %d", d);
  cr_assert_eq(kwarg_tensor(plan.op, "block_table")->shape[1], 7);
  cr_assert_eq(kwarg_tensor(plan.op, "query_start_loc")->shape[0], 6);
  cr_assert_eq(kwarg_tensor(plan.op, "slot_mapping")->shape[0], 26);
  cr_assert_eq(kwarg_tensor(plan.op, "slot_mapping")->dtype, XR_DTYPE_I64);
  cr_assert_eq(bundle->ops[0].kwarg_count, 0, "the bundle's own op is left alone");
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(bundle);
}

Test(unified_attention_layout, default_and_kwargs) {
  jbuf_t b;
  xr_op_plan_t plan;
  xr_status_t st;
  xr_bundle_t *bundle = plan_json(ua_json(&b, &ua_cases[5]), &plan, &st);
  cr_assert_eq(st, XR_OK, "%s", xr_last_error());
  const xr_ua_problem_t *u = plan.problem;
  cr_assert_eq(u->layout.source, XR_UA_FROM_DEFAULT);
  cr_assert_eq(u->layout.seqs, 1);
  cr_assert_eq(u->layout.q_len[0], 17);
  cr_assert_eq(u->layout.k_len[0], 17);
  cr_assert_eq(plan.return_count, 1);
  cr_assert_eq(plan.returns[0].rank, 2);
  cr_assert_eq(plan.returns[0].shape[1], 4 * 64);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(bundle);
  bundle = plan_json(ua_json(&b, &ua_cases[7]), &plan, &st);
  cr_assert_eq(st, XR_OK, "%s", xr_last_error());
  u = plan.problem;
  cr_assert_eq(u->layout.source, XR_UA_FROM_KWARGS);
  const int64_t k[4] = {41, 1, 33, 130};
  for (int i = 0; i < 4; i++) cr_assert_eq(u->layout.k_len[i], k[i]);
  cr_assert_eq(u->block_size, 32);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(bundle);
}

/* ------------------------------------------------------------------------------------------ */
/* dead cache slots                                                                            */

/* After one reference run the dumped cache holds values exactly in the sequences' key slots
 * (cached context and the new tokens the op wrote) and NaN in every other slot. */
Test(unified_attention_cpu, dead_cache_slots_are_nan) {
  jbuf_t b;
  const ua_case_t c = {"mixed f32", WITH_OUTPUT, "float", 9, 4, 2, 64, 0,
                       HINTS(1, 5, 4, 4) ", \"prefill_context_tokens\": 21, \"decode_context_tokens\": 70", NULL};
  const char *json = ua_json(&b, &c);
  xr_bundle_t *bundle;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &bundle), XR_OK);
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = "cpu";
  o.choice = XR_KERNEL_REFERENCE;
  o.warmup = 0;
  o.iters = 1;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/ua_dump", getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp");
  o.dump_dir = dir;
  static check_result_t r;
  xr_replay_observer_t observer = {.result = check_collect, .context = &r};
  cr_assert_eq(xr_replay_run(bundle, &o, &observer, NULL), XR_OK, "%s", xr_last_error());
  cr_assert_eq(r.r.outcome, XR_OP_SUCCEEDED, "%s", r.r.message);
  char path[4200];
  snprintf(path, sizeof path, "%s/op0_kv_cache.npy", dir);
  xr_npy_t kv;
  cr_assert_eq(xr_npy_load(path, &kv), XR_OK, "%s", xr_last_error());
  cr_assert_eq(kv.rank, 5);
  int64_t nb = kv.shape[1], bs = kv.shape[2], cell = kv.shape[3] * kv.shape[4], live = 0;
  const float *f = (const float *)kv.data;
  for (int64_t half = 0; half < 2; half++)
    for (int64_t s = 0; s < nb * bs; s++) {
      int64_t nan = 0;
      for (int64_t e = 0; e < cell; e++) nan += isnan(f[(half * nb * bs + s) * cell + e]);
      cr_assert(nan == 0 || nan == cell, "slot %lld partly NaN", (long long)s);
      live += nan == 0;
    }
  /* keys: 4 decode x ceil(70 / 4) + 21 prefill; each slot counted for K and V */
  cr_assert_eq(live, 2 * (70 + 21), "live slots %lld", (long long)live);
  cr_assert_eq(nb, 4 * 2 + 2 + 1);
  xr_npy_free(&kv);
  snprintf(path, sizeof path, "%s/op0_output.npy", dir);
  xr_npy_t out;
  cr_assert_eq(xr_npy_load(path, &out), XR_OK, "%s", xr_last_error());
  for (int64_t i = 0; i < out.numel; i++) cr_assert(isfinite(((const float *)out.data)[i]), "output %lld", (long long)i);
  xr_npy_free(&out);
  xr_bundle_destroy(bundle);
}

/* ------------------------------------------------------------------------------------------ */
/* the reference against a dense attention on embedded data                                    */

enum { DT = 7, DH = 4, DHK = 2, DD = 16, DS = 3, DBS = 16, DNB = 6, DW = 2 };

static char *b64(const void *data, size_t n) {
  static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const uint8_t *p = data;
  char *s = malloc(4 * ((n + 2) / 3) + 1), *o = s;
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    *o++ = abc[v >> 18 & 63], *o++ = abc[v >> 12 & 63];
    *o++ = i + 1 < n ? abc[v >> 6 & 63] : '=', *o++ = i + 2 < n ? abc[v & 63] : '=';
  }
  *o = 0;
  return s;
}

typedef struct dbuf {
  char *s;
  size_t n, cap;
} dbuf_t;

static void dput(dbuf_t *b, const char *fmt, const char *a, const char *c, const char *d) {
  size_t need = strlen(fmt) + strlen(a) + strlen(c) + strlen(d) + 1;
  if (b->n + need > b->cap) b->s = realloc(b->s, b->cap = 2 * (b->n + need));
  b->n += (size_t)snprintf(b->s + b->n, b->cap - b->n, fmt, a, c, d);
}

static void dtensor(dbuf_t *b, const char *name, const char *type, const char *shape, const char *dtype,
                    const void *data, size_t bytes) {
  char head[256];
  snprintf(head, sizeof head, "%s{\"name\": \"%s\", \"type\": \"%s\", \"value\": {\"shape\": %s, \"dtype\": ",
           b->n && b->s[b->n - 1] != '[' ? ", " : "", name, type, shape);
  char *enc = b64(data, bytes);
  dput(b, "%s\"%s\", \"data_base64\": \"%s\"}}", head, dtype, enc);
  free(enc);
}

static uint64_t rng = 12345;
static float frand(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* 3 sequences of 1, 4 and 2 queries over 9, 4 and 20 keys, in a cache of 6 blocks whose block
 * table is scrambled; every value given. The cache after the op is the old one with the new
 * tokens at their slots; the output is softmax(q k^T / 4) v over each row's causal keys. */
static void dense_case(const char *device, xr_kernel_choice_t choice) {
  static float q[DT][DH][DD], k[DT][DHK][DD], v[DT][DHK][DD], kv[2][DNB][DBS][DHK][DD];
  const int32_t qsl[DS + 1] = {0, 1, 5, 7}, lens[DS] = {9, 4, 20}, table[DS][DW] = {{4, 0}, {1, 0}, {5, 2}};
  int64_t slots[DT];
  rng = 12345;
  for (size_t i = 0; i < sizeof q / sizeof(float); i++) ((float *)q)[i] = frand();
  for (size_t i = 0; i < sizeof k / sizeof(float); i++) ((float *)k)[i] = frand(), ((float *)v)[i] = frand();
  for (size_t i = 0; i < sizeof kv / sizeof(float); i++) ((float *)kv)[i] = frand();
  for (int s = 0; s < DS; s++)
    for (int t = qsl[s]; t < qsl[s + 1]; t++) {
      int pos = lens[s] - (qsl[s + 1] - qsl[s]) + (t - qsl[s]);
      slots[t] = table[s][pos / DBS] * DBS + pos % DBS;
    }
  dbuf_t b = {0};
  dput(&b, "%s%s%s", "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": \"",
       WITH_OUTPUT, "\", \"args\": [");
  float out0[DT][DH][DD] = {{{0}}};
  dtensor(&b, "query", "Tensor", "[7, 4, 16]", "float", q, sizeof q);
  dtensor(&b, "key", "Tensor", "[7, 2, 16]", "float", k, sizeof k);
  dtensor(&b, "value", "Tensor", "[7, 2, 16]", "float", v, sizeof v);
  dtensor(&b, "output", "Tensor(a!)", "[7, 4, 16]", "float", out0, sizeof out0);
  dput(&b, "%s%s%s", ", {\"name\": \"layer_name\", \"type\": \"str\", \"value\": \"l0\"}], \"kwargs\": [", "", "");
  dtensor(&b, "kv_cache", "Tensor(a!)", "[2, 6, 16, 2, 16]", "float", kv, sizeof kv);
  dtensor(&b, "block_table", "Tensor", "[3, 2]", "int", table, sizeof table);
  dtensor(&b, "seq_lens", "Tensor", "[3]", "int", lens, sizeof lens);
  dtensor(&b, "query_start_loc", "Tensor", "[4]", "int", qsl, sizeof qsl);
  dtensor(&b, "slot_mapping", "Tensor", "[7]", "long int", slots, sizeof slots);
  dput(&b, "%s%s%s", ", " KW_LIST("query_lens", "[1, 4, 2]") "]}]}", "", "");
  xr_bundle_t *bundle;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)b.s, b.n, "dense", ".", NULL, &bundle), XR_OK, "%s",
               xr_last_error());
  free(b.s);
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = device;
  o.choice = choice;
  o.warmup = 0;
  o.iters = 1;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/ua_dense_%s_%d", getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", device,
           (int)choice);
  o.dump_dir = dir;
  static check_result_t r;
  memset(&r, 0, sizeof r);
  xr_replay_observer_t observer = {.result = check_collect, .context = &r};
  xr_status_t st = xr_replay_run(bundle, &o, &observer, NULL);
  if (st == XR_UNAVAILABLE) cr_skip_test("%s unavailable", device);
  cr_assert_eq(st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(r.r.outcome, XR_OP_SUCCEEDED, "%s", r.r.message);
  /* the expected cache */
  for (int t = 0; t < DT; t++)
    for (int h = 0; h < DHK; h++)
      for (int d = 0; d < DD; d++) {
        kv[0][slots[t] / DBS][slots[t] % DBS][h][d] = k[t][h][d];
        kv[1][slots[t] / DBS][slots[t] % DBS][h][d] = v[t][h][d];
      }
  char path[4200];
  snprintf(path, sizeof path, "%s/op0_kv_cache.npy", dir);
  xr_npy_t got;
  cr_assert_eq(xr_npy_load(path, &got), XR_OK, "%s", xr_last_error());
  cr_assert_eq(got.numel, (int64_t)(sizeof kv / sizeof(float)));
  cr_assert(!memcmp(got.data, kv, sizeof kv), "the cache after the op differs");
  xr_npy_free(&got);
  snprintf(path, sizeof path, "%s/op0_output.npy", dir);
  cr_assert_eq(xr_npy_load(path, &got), XR_OK, "%s", xr_last_error());
  const float *out = (const float *)got.data;
  double num = 0, den = 0;
  for (int s = 0; s < DS; s++) {
    int ql = qsl[s + 1] - qsl[s];
    for (int i = 0; i < ql; i++)
      for (int h = 0; h < DH; h++) {
        int hk = h / (DH / DHK), last = lens[s] - ql + i; /* sees keys 0..last */
        double logit[32], m = -INFINITY, sum = 0, o[DD] = {0};
        for (int j = 0; j <= last; j++) {
          int blk = table[s][j / DBS], slot = j % DBS;
          double dot = 0;
          for (int d = 0; d < DD; d++) dot += (double)q[qsl[s] + i][h][d] * kv[0][blk][slot][hk][d];
          logit[j] = dot / 4.0;
          if (logit[j] > m) m = logit[j];
        }
        for (int j = 0; j <= last; j++) {
          double w = exp(logit[j] - m);
          sum += w;
          for (int d = 0; d < DD; d++) o[d] += w * kv[1][table[s][j / DBS]][j % DBS][hk][d];
        }
        for (int d = 0; d < DD; d++) {
          double e = o[d] / sum, a = out[((qsl[s] + i) * DH + h) * DD + d];
          num += (a - e) * (a - e), den += e * e;
          cr_assert_float_eq(a, e, 2e-5, "seq %d row %d head %d dim %d: %g vs %g", s, i, h, d, a, e);
        }
      }
  }
  cr_log_info("dense check on %s: nmse %.3g", device, num / den);
  xr_npy_free(&got);
  xr_bundle_destroy(bundle);
}

Test(unified_attention_dense, reference) { dense_case("cpu", XR_KERNEL_REFERENCE); }
Test(unified_attention_dense, cpu) { dense_case("cpu", XR_KERNEL_BEST); }
Test(unified_attention_dense, opencl) { dense_case("opencl", XR_KERNEL_BEST); }

/* The same batch in vLLM's fp8 attention: an e4m3fn query (q_scale 0.5) over a uint8 cache of
 * e4m3fn bytes (no kv_cache_dtype: the fp8 query and the uint8 cache imply it), an e4m3fn output
 * with output_scale 0.004. Expected, computed here with this file's own e4m3fn model: the cache
 * with the new tokens' fp8(key), fp8(value) at their slots; the output fp8(clamp(o / 0.004, 448))
 * of o = softmax(0.5 q . k / 4) v over the decoded cache, within one fp8 step. */
static double e4m3_value(uint8_t v) {
  int e = (v >> 3) & 15, m = v & 7;
  if ((v & 0x7f) == 0x7f) return NAN;
  double mag = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
  return v & 0x80 ? -mag : mag;
}

static uint8_t e4m3_code(double x) { /* nearest, ties to even, saturating at 448 */
  if (x > 448) x = 448;
  if (x < -448) x = -448;
  int best = 0;
  double err = INFINITY;
  for (int c = 0; c < 256; c++) {
    double v = e4m3_value((uint8_t)c), e = fabs(v - x);
    if (isnan(v)) continue;
    if (e < err || (e == err && (c & 1) == 0)) best = c, err = e;
  }
  return (uint8_t)best;
}

static void dense_fp8_case(const char *device, xr_kernel_choice_t choice) {
  static uint8_t q[DT][DH][DD], kv[2][DNB][DBS][DHK][DD];
  static float k[DT][DHK][DD], v[DT][DHK][DD];
  const int32_t qsl[DS + 1] = {0, 1, 5, 7}, lens[DS] = {9, 4, 20}, table[DS][DW] = {{4, 0}, {1, 0}, {5, 2}};
  const float out_scale = 0.004f;
  int64_t slots[DT];
  rng = 777;
  for (size_t i = 0; i < sizeof q; i++) ((uint8_t *)q)[i] = e4m3_code(2.0 * frand());
  for (size_t i = 0; i < sizeof k / sizeof(float); i++) ((float *)k)[i] = frand(), ((float *)v)[i] = frand();
  for (size_t i = 0; i < sizeof kv; i++) ((uint8_t *)kv)[i] = e4m3_code(frand());
  for (int s = 0; s < DS; s++)
    for (int t = qsl[s]; t < qsl[s + 1]; t++) {
      int pos = lens[s] - (qsl[s + 1] - qsl[s]) + (t - qsl[s]);
      slots[t] = table[s][pos / DBS] * DBS + pos % DBS;
    }
  dbuf_t b = {0};
  dput(&b, "%s%s%s", "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": \"",
       WITH_OUTPUT, "\", \"args\": [");
  static uint8_t out0[DT][DH][DD];
  dtensor(&b, "query", "Tensor", "[7, 4, 16]", FP8_FN, q, sizeof q);
  dtensor(&b, "key", "Tensor", "[7, 2, 16]", "float", k, sizeof k);
  dtensor(&b, "value", "Tensor", "[7, 2, 16]", "float", v, sizeof v);
  dtensor(&b, "output", "Tensor(a!)", "[7, 4, 16]", FP8_FN, out0, sizeof out0);
  dput(&b, "%s%s%s", ", {\"name\": \"layer_name\", \"type\": \"str\", \"value\": \"l0\"}", "", "");
  dtensor(&b, "output_scale", "Tensor?", "[1]", "float", &out_scale, sizeof out_scale);
  dput(&b, "%s%s%s", "], \"kwargs\": [", "", "");
  dtensor(&b, "kv_cache", "Tensor(a!)", "[2, 6, 16, 2, 16]", "unsigned char", kv, sizeof kv);
  dtensor(&b, "block_table", "Tensor", "[3, 2]", "int", table, sizeof table);
  dtensor(&b, "seq_lens", "Tensor", "[3]", "int", lens, sizeof lens);
  dtensor(&b, "query_start_loc", "Tensor", "[4]", "int", qsl, sizeof qsl);
  dtensor(&b, "slot_mapping", "Tensor", "[7]", "long int", slots, sizeof slots);
  dput(&b, "%s%s%s", ", " KW_LIST("query_lens", "[1, 4, 2]") ", " KW_FLOAT("q_scale", 0.5) "]}]}", "", "");
  xr_bundle_t *bundle;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)b.s, b.n, "dense", ".", NULL, &bundle), XR_OK, "%s",
               xr_last_error());
  free(b.s);
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = device;
  o.choice = choice;
  o.warmup = 0;
  o.iters = 1;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/ua_dense_fp8_%s_%d", getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", device,
           (int)choice);
  o.dump_dir = dir;
  static check_result_t r;
  memset(&r, 0, sizeof r);
  xr_replay_observer_t observer = {.result = check_collect, .context = &r};
  xr_status_t st = xr_replay_run(bundle, &o, &observer, NULL);
  if (st == XR_UNAVAILABLE) cr_skip_test("%s unavailable", device);
  cr_assert_eq(st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(r.r.outcome, XR_OP_SUCCEEDED, "%s", r.r.message);
  for (int t = 0; t < DT; t++)
    for (int h = 0; h < DHK; h++)
      for (int d = 0; d < DD; d++) {
        kv[0][slots[t] / DBS][slots[t] % DBS][h][d] = e4m3_code(k[t][h][d]);
        kv[1][slots[t] / DBS][slots[t] % DBS][h][d] = e4m3_code(v[t][h][d]);
      }
  char path[4200];
  snprintf(path, sizeof path, "%s/op0_kv_cache.npy", dir);
  xr_npy_t got;
  cr_assert_eq(xr_npy_load(path, &got), XR_OK, "%s", xr_last_error());
  cr_assert_eq(got.numel, (int64_t)sizeof kv);
  cr_assert(!memcmp(got.data, kv, sizeof kv), "the cache after the op differs");
  xr_npy_free(&got);
  snprintf(path, sizeof path, "%s/op0_output.npy", dir);
  cr_assert_eq(xr_npy_load(path, &got), XR_OK, "%s", xr_last_error());
  int saturated = 0, exact = 0;
  for (int s = 0; s < DS; s++) {
    int ql = qsl[s + 1] - qsl[s];
    for (int i = 0; i < ql; i++)
      for (int h = 0; h < DH; h++) {
        int hk = h / (DH / DHK), last = lens[s] - ql + i;
        double logit[32], m = -INFINITY, sum = 0, acc[DD] = {0};
        for (int j = 0; j <= last; j++) {
          int blk = table[s][j / DBS], slot = j % DBS;
          double dot = 0;
          for (int d = 0; d < DD; d++) dot += 0.5 * e4m3_value(q[qsl[s] + i][h][d]) * e4m3_value(kv[0][blk][slot][hk][d]);
          logit[j] = dot / 4.0;
          if (logit[j] > m) m = logit[j];
        }
        for (int j = 0; j <= last; j++) {
          double w = exp(logit[j] - m);
          sum += w;
          for (int d = 0; d < DD; d++) acc[d] += w * e4m3_value(kv[1][table[s][j / DBS]][j % DBS][hk][d]);
        }
        for (int d = 0; d < DD; d++) {
          double e = acc[d] / sum / (double)out_scale;
          e = e > 448 ? 448 : e < -448 ? -448 : e;
          double a = e4m3_value(got.data[((qsl[s] + i) * DH + h) * DD + d]);
          double step = fabs(e) >= 0x1p-6 ? ldexp(1.0, (int)floor(log2(fabs(e))) - 3) : 0x1p-9;
          cr_assert(fabs(a - e) <= step, "seq %d row %d head %d dim %d: %g vs %g", s, i, h, d, a, e);
          saturated += fabs(a) == 448, exact += a == e4m3_value(e4m3_code(e));
        }
      }
  }
  cr_log_info("dense fp8 on %s: %d of %d outputs the nearest fp8 value, %d saturated", device, exact, DT * DH * DD,
              saturated);
  cr_assert_gt(exact, DT * DH * DD * 9 / 10, "most outputs are the nearest fp8 value");
  cr_assert_lt(saturated, DT * DH * DD / 4, "the output scale keeps most outputs in range");
  xr_npy_free(&got);
  xr_bundle_destroy(bundle);
}

Test(unified_attention_dense, fp8_reference) { dense_fp8_case("cpu", XR_KERNEL_REFERENCE); }
Test(unified_attention_dense, fp8_cpu) { dense_fp8_case("cpu", XR_KERNEL_BEST); }
Test(unified_attention_dense, fp8_opencl) { dense_fp8_case("opencl", XR_KERNEL_BEST); }

/* ------------------------------------------------------------------------------------------ */
/* bad input                                                                                   */

static void expect_plan_error(const char *what, const ua_case_t *c, const char *needle) {
  jbuf_t b;
  xr_op_plan_t plan;
  xr_status_t st;
  xr_bundle_t *bundle = plan_json(ua_json(&b, c), &plan, &st);
  cr_assert_eq(st, XR_INVALID_ARGUMENT, "%s: planned", what);
  cr_assert(strstr(xr_last_error(), needle), "%s: \"%s\" does not name %s", what, xr_last_error(), needle);
  cr_assert(strstr(xr_last_error(), "vllm::unified_attention"), "%s: no op name in \"%s\"", what, xr_last_error());
  xr_bundle_destroy(bundle);
}

Test(unified_attention_errors, name_the_argument) {
  ua_case_t c = {"", WITH_OUTPUT, F16, 0, 8, 2, 64, 0, NULL, NULL};
  expect_plan_error("no tokens", &c, "query");
  c.T = 6, c.Hk = 3;
  expect_plan_error("kv heads not dividing", &c, "key");
  c.Hk = 2, c.flat = 2, c.kwargs = NULL;
  ua_case_t both_flat = c;
  jbuf_t b;
  /* both flattened without head_size: drop the head_size kwarg the builder adds */
  const char *json = ua_json(&b, &both_flat);
  char *edited = strdup(json), *hs = strstr(edited, "{\"name\": \"head_size\"");
  cr_assert_not_null(hs);
  memcpy(hs, "{\"name\": \"nothing__\"", strlen("{\"name\": \"head_size\""));
  xr_bundle_t *bundle;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)edited, strlen(edited), "case", ".", NULL, &bundle), XR_OK);
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&bundle->ops[0], &plan), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "head_size"), "%s", xr_last_error());
  xr_bundle_destroy(bundle);
  free(edited);
  c.flat = 0;
  const struct {
    const char *kwargs, *needle;
  } bad[] = {
      {KW_INT("block_size", 0), "block_size"},
      {KW_INT("num_blocks", 0), "num_blocks"},
      {KW_LIST("query_lens", "[4, 4]"), "query_lens"},
      {KW_LIST("query_lens", "[2, 0]"), "query_lens"},
      {KW_LIST("query_lens", "[2, 2]") ", " KW_LIST("context_lens", "[1, 2, 3]"), "context_lens"},
      {KW_STR("kv_cache_dtype", "int4"), "kv_cache_dtype"},
      {KW_T("kv_cache", "Tensor(a!)", "[2, 9, 16, 3, 64]", "c10::Half"), "kv_cache"},
      {KW_T("kv_cache", "Tensor(a!)", "[2, 9, 16, 2, 64]", "float"), "kv_cache"},
      {KW_T("block_table", "Tensor", "[0, 2]", "int"), "block_table"},
      {KW_T("seq_lens", "Tensor", "[1]", "float"), "seq_lens"},
      {KW_T("query_start_loc", "Tensor", "[5]", "int"), "query_start_loc"},
      {KW_T("slot_mapping", "Tensor", "[7]", "long int"), "slot_mapping"},
      {KW_INT("kv_cache", 3), "kv_cache"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    c.kwargs = bad[i].kwargs;
    expect_plan_error(bad[i].kwargs, &c, bad[i].needle);
  }
  c.kwargs = NULL;
  c.dtype = "float";
  /* output of another dtype */
  json = ua_json(&b, &c);
  edited = strdup(json);
  char *out = strstr(edited, "\"name\": \"output\"");
  char *dt = strstr(out, "\"float\"");
  memcpy(dt, "\"int\"  ", 7);
  cr_assert_eq(xr_bundle_decode((const uint8_t *)edited, strlen(edited), "case", ".", NULL, &bundle), XR_OK, "%s",
               xr_last_error());
  cr_assert_eq(xr_kernel_plan(&bundle->ops[0], &plan), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "output"), "%s", xr_last_error());
  xr_bundle_destroy(bundle);
  free(edited);
}

/* Index contents from the bundle are checked before any kernel runs. */
Test(unified_attention_errors, bad_index_contents) {
  const struct {
    const char *kwargs, *needle;
  } bad[] = {
      /* block 9 of a 4-block cache */
      {KW_T("kv_cache", "Tensor(a!)", "[2, 4, 16, 2, 64]", "float") ", {\"name\": \"block_table\", \"type\": "
       "\"Tensor\", \"value\": {\"shape\": [1, 1], \"dtype\": \"int\", \"data_base64\": \"CQAAAA==\"}}",
       "block_table"},
      /* 99 keys in one 16-slot page */
      {"{\"name\": \"seq_lens\", \"type\": \"Tensor\", \"value\": {\"shape\": [1], \"dtype\": \"int\", "
       "\"data_base64\": \"YwAAAA==\"}}, " KW_T("block_table", "Tensor", "[1, 1]", "int"),
       "seq_lens"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ua_case_t c = {"", WITH_OUTPUT, "float", 6, 4, 2, 64, 0, NULL, bad[i].kwargs};
    jbuf_t b;
    xr_op_result_t r = run_case(ua_json(&b, &c), "cpu", 1, NULL);
    cr_assert_eq(r.outcome, XR_OP_FAILED, "%s", bad[i].kwargs);
    cr_assert(strstr(r.message, bad[i].needle), "\"%s\" does not name %s", r.message, bad[i].needle);
  }
}

/* fp8 outputs go with an output_scale (and only they do); a block-scaled output is unsupported;
 * the query is the model's float type or fp8, key and value a float type. */
Test(unified_attention_errors, quantized_inputs_and_outputs) {
  const struct {
    ua_fp8_case_t c;
    const char *from, *to, *needle;
    xr_op_outcome_t outcome;
  } bad[] = {
      {{{"", WITH_OUTPUT, "float", 2, 4, 2, 64, 0, NULL, NULL}, NULL, NULL}, "\"Tensor?\", \"value\": null",
       "\"Tensor?\", \"value\": {\"shape\": [1], \"dtype\": \"float\"}", "output_scale", XR_OP_FAILED},
      {{{"", WITH_OUTPUT, "float", 2, 4, 2, 64, 0, NULL, NULL}, NULL, FP8_FN}, "\"value\": {\"shape\": [1], \"strides\": [1], \"dtype\": \"float\"",
       "\"value\": {\"shape\": [1], \"strides\": [1], \"dtype\": \"c10::Half\"", "output_scale", XR_OP_FAILED},
      {{{"", WITH_OUTPUT, "float", 2, 4, 2, 64, 0, NULL, NULL}, NULL, FP8_FN}, "{\"name\": \"output_scale\", \"type\": \"Tensor?\", \"value\": {",
       "{\"name\": \"output_scalex\", \"type\": \"Tensor?\", \"value\": {", "output", XR_OP_FAILED},
      {{{"", WITH_OUTPUT, "float", 2, 4, 2, 64, 0, NULL, NULL}, NULL, NULL}, "{\"name\": \"output_block_scale\", \"type\": \"Tensor?\", \"value\": null",
       "{\"name\": \"output_block_scale\", \"type\": \"Tensor?\", \"value\": {\"shape\": [2, 16], \"dtype\": \"float\"}",
       "output_block_scale", XR_OP_UNSUPPORTED},
      {{{"", WITH_OUTPUT, BF16, 2, 4, 2, 64, 0, NULL, NULL}, "int", NULL}, NULL, NULL, "query", XR_OP_FAILED},
      {{{"", WITH_OUTPUT, BF16, 2, 4, 2, 64, 0, NULL, NULL}, FP8_FN, FP8_FN}, "\"name\": \"key\", \"type\": \"Tensor\", \"value\": {\"shape\": [2, 2, 64], \"strides\": [128, 64, 1], \"dtype\": \"c10::BFloat16\"",
       "\"name\": \"key\", \"type\": \"Tensor\", \"value\": {\"shape\": [2, 2, 64], \"strides\": [128, 64, 1], \"dtype\": \"" FP8_FN "\"", "key", XR_OP_FAILED},
      {{{"", WITH_OUTPUT, BF16, 2, 4, 2, 64, 0, NULL, NULL}, FP8_FN, "c10::Half"}, NULL, NULL, "output", XR_OP_FAILED},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    jbuf_t b;
    char *json = strdup(ua_json_typed(&b, &bad[i].c.c, bad[i].c.q_dtype, bad[i].c.o_dtype));
    if (bad[i].from) {
      char *at = strstr(json, bad[i].from);
      cr_assert_not_null(at, "case %zu: no %s in %s", i, bad[i].from, json);
      size_t n = strlen(json) + strlen(bad[i].to) + 1;
      char *edited = malloc(n);
      snprintf(edited, n, "%.*s%s%s", (int)(at - json), json, bad[i].to, at + strlen(bad[i].from));
      free(json);
      json = edited;
    }
    xr_op_result_t r = run_case(json, "cpu", 1, NULL);
    cr_assert_eq(r.outcome, bad[i].outcome, "case %zu: %s: %s", i, xr_op_outcome_name(r.outcome), r.message);
    cr_assert(strstr(r.message, bad[i].needle), "case %zu: \"%s\" does not name %s", i, r.message, bad[i].needle);
    free(json);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* extraction                                                                                  */

/* A vLLM trace's unified_attention_with_output inside the iteration annotation gets the
 * prefill/decode hints, and the extracted op replays with the layout they give. */
Test(unified_attention_extract, hints_reach_the_replay) {
  const char *trace =
      "{\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\"}], \"traceEvents\": ["
      " {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"execute_context_1(5)_generation_3(3)\","
      "  \"pid\": 1, \"tid\": 1, \"ts\": 50.0, \"dur\": 500.0, \"args\": {}},"
      " {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"vllm::unified_attention_with_output\", \"pid\": 1,"
      "  \"tid\": 1, \"ts\": 100.0, \"dur\": 50.0, \"args\": {"
      "  \"Input Dims\": [[8, 8, 64], [8, 2, 64], [8, 2, 64], [8, 8, 64], [], [], []],"
      "  \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\", \"\","
      "   \"\", \"\"],"
      "  \"Concrete Inputs\": [\"\", \"\", \"\", \"\", \"model.layers.0.self_attn.attn\", \"\", \"\"]}},"
      " {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1,"
      "  \"ts\": 120.0, \"dur\": 5.0, \"args\": {\"correlation\": 77}},"
      " {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"flash_fwd_splitkv_kernel\", \"pid\": 2, \"tid\": 0,"
      "  \"ts\": 200.0, \"dur\": 12.5, \"args\": {\"correlation\": 77}}]}";
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(xr_trace_extract_memory(trace, strlen(trace), "t.json", NULL, &b, &s), XR_OK, "%s", xr_last_error());
  cr_assert_eq(b->op_count, 1, "cpu ops %zu, bad args %zu, gpu %zu, without op %zu, %s", s.cpu_ops, s.ops_bad_args,
               s.gpu_events, s.gpu_without_op, s.warning_count ? s.warnings[0] : "");
  const xr_op_t *op = &b->ops[0];
  cr_assert_str_eq(op->name, WITH_OUTPUT);
  cr_assert_eq(op->hint_count, 4);
  const char *names[4] = {"prefill_seqs", "prefill_tokens", "decode_seqs", "decode_tokens"};
  const int64_t values[4] = {1, 5, 3, 3};
  for (int i = 0; i < 4; i++) {
    cr_assert_str_eq(op->hints[i].name, names[i]);
    cr_assert_eq(op->hints[i].value.as.i, values[i], "%s", names[i]);
  }
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = "cpu";
  o.check = true;
  o.warmup = 0;
  o.iters = 1;
  static check_result_t r;
  xr_replay_observer_t observer = {.result = check_collect, .context = &r};
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_OK, "%s", xr_last_error());
  cr_assert_eq(r.r.outcome, XR_OP_SUCCEEDED, "%s", r.r.message);
  cr_assert(r.r.check_passed);
  cr_assert(strstr(r.r.init_policy, "3 decode (3 tokens, 1024 keys each) + 1 prefill (5 tokens"), "%s",
            r.r.init_policy);
  /* 3 x 1024 + (5 x 6 / 2) keys seen, 8 heads, head size 64 */
  cr_assert_float_eq(r.r.flops, 2.0 * 8 * (3 * 1024 + 15) * 128, 1e-6);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}
