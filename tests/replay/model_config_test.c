/* Layer state from a model's config.json (formats/model_config.h): the config's fields and their
 * errors, the kwargs it writes into vllm::moe_forward, and the real GPT-OSS op of the vLLM graph
 * fixture replayed with gpt-oss-20b.json's layer, --check against the reference. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "formats/bundle.h"
#include "formats/model_config.h"
#include "formats/trace_extract.h"
#include "replay/replay.h"

#define CONFIGS "tests/data/fixtures/model_configs"
#define VLLM "tests/data/fixtures/graph_traces/vllm_prefilldecode_piecewise"

static xr_model_config_t parse(const char *text) {
  xr_model_config_t c;
  cr_assert_eq(xr_model_config_parse(text, strlen(text), "cfg.json", &c), XR_OK, "%s", xr_last_error());
  return c;
}

static void expect_parse_error(const char *text, const char *needle) {
  xr_model_config_t c;
  cr_assert_eq(xr_model_config_parse(text, strlen(text), "cfg.json", &c), XR_INVALID_ARGUMENT, "%s", text);
  cr_assert(strstr(xr_last_error(), "cfg.json") && strstr(xr_last_error(), needle), "%s: %s", text,
            xr_last_error());
}

Test(model_config, reads_the_published_gpt_oss_configs) {
  xr_model_config_t c;
  cr_assert_eq(xr_model_config_load(CONFIGS "/gpt-oss-20b.json", &c), XR_OK, "%s", xr_last_error());
  cr_assert_str_eq(c.name, "gpt-oss-20b.json");
  cr_assert_str_eq(c.model_type, "gpt_oss");
  cr_assert_eq(c.hidden_size, 2880);
  cr_assert_eq(c.intermediate_size, 2880);
  cr_assert_eq(c.experts, 32);
  cr_assert_eq(c.top_k, 4);
  cr_assert_eq(c.heads, 64);
  cr_assert_eq(c.kv_heads, 8);
  cr_assert_eq(c.head_dim, 64);
  cr_assert_eq(c.norm_topk_prob, -1);
  cr_assert_eq(c.quant, XR_MODEL_QUANT_MXFP4);
  cr_assert_float_eq(c.swiglu_limit, 7.0, 1e-12);
  cr_assert_str_eq(c.hidden_act, "silu");
  cr_assert_eq(xr_model_config_load(CONFIGS "/gpt-oss-120b.json", &c), XR_OK, "%s", xr_last_error());
  cr_assert_eq(c.experts, 128);
}

Test(model_config, aliases_and_text_config_nesting) {
  xr_model_config_t c = parse("{\"model_type\": \"qwen2_moe\", \"text_config\": {\"d_model\": 2048, "
                              "\"moe_intermediate_size\": 1408, \"num_experts\": 60}, \"intermediate_size\": 5632, "
                              "\"n_routed_experts\": 7, \"moe_topk\": 4, \"norm_topk_prob\": false, "
                              "\"quantization_config\": {\"quant_method\": \"fp8\", \"weight_block_size\": [128, 64]},"
                              " \"some_new_field\": [1, {\"x\": 2}]}");
  cr_assert_eq(c.hidden_size, 2048);
  cr_assert_eq(c.intermediate_size, 1408, "moe_intermediate_size wins over intermediate_size");
  cr_assert_eq(c.experts, 60, "text_config is read before the top level");
  cr_assert_eq(c.top_k, 4);
  cr_assert_eq(c.norm_topk_prob, 0);
  cr_assert_eq(c.quant, XR_MODEL_QUANT_FP8);
  cr_assert_eq(c.weight_block[0], 128);
  cr_assert_eq(c.weight_block[1], 64);
  cr_assert_eq(c.swiglu_limit, -1);
}

Test(model_config, bad_configs_name_the_field) {
  expect_parse_error("{\"hidden_size\": \"2880\"}", "hidden_size");
  expect_parse_error("{\"num_local_experts\": 2.5}", "num_local_experts");
  expect_parse_error("{\"num_experts_per_tok\": -1}", "num_experts_per_tok");
  expect_parse_error("{\"norm_topk_prob\": 1}", "norm_topk_prob");
  expect_parse_error("{\"swiglu_limit\": 0}", "swiglu_limit");
  expect_parse_error("{\"quantization_config\": {\"bits\": 4}}", "quant_method");
  expect_parse_error("{\"quantization_config\": {\"quant_method\": \"fp8\", \"weight_block_size\": [128]}}",
                     "weight_block_size");
  expect_parse_error("{\"text_config\": 3}", "text_config");
  expect_parse_error("[1, 2]", "object");
  expect_parse_error("{\"hidden_size\": 2880,", "not valid JSON");
  xr_model_config_t c;
  cr_assert_eq(xr_model_config_load(CONFIGS "/absent.json", &c), XR_NOT_FOUND);
  cr_assert(strstr(xr_last_error(), "absent.json"), "%s", xr_last_error());
}

/* ------------------------------------------------------------------------------------------ */
/* applying to ops                                                                             */

/* A moe_forward op as traces record it: hidden_states, router_logits, layer name. */
static xr_bundle_t *forward_bundle(int64_t tokens, int64_t hidden, int64_t experts) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_create(&b), XR_OK);
  xr_op_t *op = xr_bundle_add_op(b, "vllm::moe_forward");
  cr_assert_not_null(xr_op_add_tensor(b->arena, op, "hidden_states", XR_DTYPE_BF16, 2, (int64_t[]){tokens, hidden}, NULL));
  cr_assert_not_null(xr_op_add_tensor(b->arena, op, "router_logits", XR_DTYPE_BF16, 2, (int64_t[]){tokens, experts}, NULL));
  cr_assert_eq(xr_op_add_string(b->arena, op, "layer_name", "model.layers.0.mlp.experts"), XR_OK);
  return b;
}

static const xr_tensor_spec_t *kwarg_tensor(const xr_op_t *op, const char *name) {
  const xr_arg_t *a = xr_op_find_arg(op, name);
  cr_assert(a && a->value.kind == XR_VALUE_TENSOR, "%s: no tensor %s", op->name, name);
  return a->value.as.tensor;
}

static void expect_shape(const xr_tensor_spec_t *t, xr_dtype_t dtype, int rank, const int64_t *shape, const char *what) {
  cr_assert_eq(t->dtype, dtype, "%s: %s", what, xr_dtype_name(t->dtype));
  cr_assert_eq(t->rank, rank, "%s", what);
  for (int d = 0; d < rank; d++) cr_assert_eq(t->shape[d], shape[d], "%s dim %d: %lld", what, d, (long long)t->shape[d]);
}

typedef struct notes {
  int count;
  char last[1024];
} notes_t;

static void keep_note(void *ctx, size_t op, const char *sentence) {
  notes_t *n = ctx;
  (void)op;
  n->count++;
  snprintf(n->last, sizeof n->last, "%s", sentence);
}

/* gpt-oss-20b on a trace padded to 3072 as vLLM pads it on ROCm: every tensor of the layer. */
static void expect_gpt_oss_20b_layer(const xr_op_t *op) {
  expect_shape(kwarg_tensor(op, "w1"), XR_DTYPE_F4E2M1X2, 3, (int64_t[]){32, 6144, 1536}, "w1");
  expect_shape(kwarg_tensor(op, "w1_scale"), XR_DTYPE_F8E8M0, 3, (int64_t[]){32, 6144, 96}, "w1_scale");
  expect_shape(kwarg_tensor(op, "w1_bias"), XR_DTYPE_BF16, 2, (int64_t[]){32, 6144}, "w1_bias");
  expect_shape(kwarg_tensor(op, "w2"), XR_DTYPE_F4E2M1X2, 3, (int64_t[]){32, 3072, 1536}, "w2");
  expect_shape(kwarg_tensor(op, "w2_scale"), XR_DTYPE_F8E8M0, 3, (int64_t[]){32, 3072, 96}, "w2_scale");
  expect_shape(kwarg_tensor(op, "w2_bias"), XR_DTYPE_BF16, 2, (int64_t[]){32, 3072}, "w2_bias");
  const xr_arg_t *topk = xr_op_find_arg(op, "top_k"), *act = xr_op_find_arg(op, "activation");
  const xr_arg_t *limit = xr_op_find_arg(op, "swiglu_limit"), *source = xr_op_find_arg(op, "layer_source");
  cr_assert(topk && topk->value.kind == XR_VALUE_INT && topk->value.as.i == 4);
  cr_assert(act && act->value.kind == XR_VALUE_STRING && !strcmp(act->value.as.s, "swigluoai"));
  cr_assert(limit && limit->value.kind == XR_VALUE_FLOAT && limit->value.as.f == 7.0);
  cr_assert(source && source->value.kind == XR_VALUE_STRING && strstr(source->value.as.s, "gpt-oss-20b.json") &&
            strstr(source->value.as.s, "2880 -> 3072"), "%s", source ? source->value.as.s : "no layer_source");
}

Test(model_config, writes_the_layer_into_moe_forward) {
  xr_model_config_t c;
  cr_assert_eq(xr_model_config_load(CONFIGS "/gpt-oss-20b.json", &c), XR_OK, "%s", xr_last_error());
  xr_bundle_t *b = forward_bundle(16, 3072, 32);
  notes_t notes = {0};
  size_t ops;
  cr_assert_eq(xr_model_config_apply(b, &c, keep_note, &notes, &ops), XR_OK, "%s", xr_last_error());
  cr_assert_eq(ops, 1);
  cr_assert_eq(notes.count, 1);
  cr_assert(strstr(notes.last, "gpt-oss-20b.json") && strstr(notes.last, "mxfp4"), "%s", notes.last);
  expect_gpt_oss_20b_layer(&b->ops[0]);
  xr_bundle_destroy(b);
}

Test(model_config, the_ops_own_arguments_win) {
  xr_model_config_t c = parse("{\"hidden_size\": 64, \"intermediate_size\": 32, \"num_local_experts\": 4, "
                              "\"num_experts_per_tok\": 2, \"hidden_act\": \"silu\"}");
  xr_bundle_t *b = forward_bundle(8, 64, 4);
  cr_assert_eq(xr_op_add_int(b->arena, &b->ops[0], "top_k", 1), XR_OK);
  notes_t notes = {0};
  cr_assert_eq(xr_model_config_apply(b, &c, keep_note, &notes, NULL), XR_OK, "%s", xr_last_error());
  const xr_op_t *op = &b->ops[0];
  cr_assert_eq(xr_op_find_arg(op, "top_k")->value.as.i, 1, "the bundle's top_k is kept");
  expect_shape(kwarg_tensor(op, "w1"), XR_DTYPE_BF16, 3, (int64_t[]){4, 64, 64}, "w1");
  expect_shape(kwarg_tensor(op, "w2"), XR_DTYPE_BF16, 3, (int64_t[]){4, 64, 32}, "w2");
  cr_assert_null(xr_op_find_arg(op, "w1_bias"), "no biases outside gpt-oss");
  cr_assert_str_eq(xr_op_find_arg(op, "activation")->value.as.s, "silu");
  cr_assert(strstr(notes.last, "the bundle's own top_k kept"), "%s", notes.last);
  /* applying again adds nothing and keeps the history */
  cr_assert_eq(xr_model_config_apply(b, &c, keep_note, &notes, NULL), XR_OK);
  const char *source = xr_op_find_arg(&b->ops[0], "layer_source")->value.as.s;
  cr_assert(strstr(source, "w1, w2") && strstr(source, "; nothing from cfg.json"), "%s", source);
  xr_bundle_destroy(b);
}

static xr_op_result_t run(xr_bundle_t *b, const char *device);

/* fp8 with block scales (DeepSeek-V3 / Qwen3-FP8 style), replayed with --check on cpu. */
Test(model_config, fp8_block_weights_replay) {
  xr_model_config_t c = parse("{\"hidden_size\": 256, \"moe_intermediate_size\": 96, \"n_routed_experts\": 8, "
                              "\"num_experts_per_tok\": 2, \"norm_topk_prob\": true, \"hidden_act\": \"silu\", "
                              "\"quantization_config\": {\"quant_method\": \"fp8\", \"weight_block_size\": [128, 128]}}");
  xr_bundle_t *b = forward_bundle(9, 256, 8);
  cr_assert_eq(xr_model_config_apply(b, &c, NULL, NULL, NULL), XR_OK, "%s", xr_last_error());
  const xr_op_t *op = &b->ops[0];
  expect_shape(kwarg_tensor(op, "w1"), XR_DTYPE_F8E4M3FN, 3, (int64_t[]){8, 192, 256}, "w1");
  expect_shape(kwarg_tensor(op, "w1_scale"), XR_DTYPE_F32, 3, (int64_t[]){8, 2, 2}, "w1_scale");
  expect_shape(kwarg_tensor(op, "w2"), XR_DTYPE_F8E4M3FN, 3, (int64_t[]){8, 256, 96}, "w2");
  expect_shape(kwarg_tensor(op, "w2_scale"), XR_DTYPE_F32, 3, (int64_t[]){8, 2, 1}, "w2_scale");
  const xr_arg_t *block = xr_op_find_arg(op, "weight_block_size");
  cr_assert(block && block->value.kind == XR_VALUE_LIST && block->value.as.list.count == 2 &&
            block->value.as.list.items[0].as.i == 128);
  xr_op_result_t r = run(b, "cpu");
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s", r.message);
  cr_assert(r.checked && r.check_passed, "nmse %g", r.outputs[0].nmse);
  xr_bundle_destroy(b);
  /* on an MI300 trace the weights are e4m3fnuz, as vLLM converts them there */
  b = forward_bundle(9, 256, 8);
  b->meta.device_name = xr_arena_strdup(b->arena, "AMD Instinct MI300X");
  cr_assert_eq(xr_model_config_apply(b, &c, NULL, NULL, NULL), XR_OK, "%s", xr_last_error());
  cr_assert_eq(kwarg_tensor(&b->ops[0], "w1")->dtype, XR_DTYPE_F8E4M3FNUZ);
  xr_bundle_destroy(b);
}

static void expect_apply_error(const char *config, int64_t hidden, int64_t experts, const char *n1, const char *n2) {
  xr_model_config_t c = parse(config);
  xr_bundle_t *b = forward_bundle(4, hidden, experts);
  cr_assert_neq(xr_model_config_apply(b, &c, NULL, NULL, NULL), XR_OK, "%s", config);
  cr_assert(strstr(xr_last_error(), "ops[0] vllm::moe_forward") && strstr(xr_last_error(), n1) &&
                strstr(xr_last_error(), n2),
            "%s", xr_last_error());
  xr_bundle_destroy(b);
}

Test(model_config, contradictions_name_both_values) {
  expect_apply_error("{\"hidden_size\": 64, \"intermediate_size\": 32, \"num_local_experts\": 128, "
                     "\"num_experts_per_tok\": 2}", 64, 32, "32 experts", "says 128");
  expect_apply_error("{\"hidden_size\": 128, \"intermediate_size\": 32, \"num_experts_per_tok\": 2}", 64, 4,
                     "64 columns", "hidden_size 128");
  expect_apply_error("{\"hidden_size\": 60, \"intermediate_size\": 32, \"num_experts_per_tok\": 2}", 67, 4,
                     "67 columns", "hidden_size 60");
  expect_apply_error("{\"hidden_size\": 64, \"intermediate_size\": 32}", 64, 4, "cfg.json", "num_experts_per_tok");
  expect_apply_error("{\"hidden_size\": 64, \"num_experts_per_tok\": 2}", 64, 4, "cfg.json", "intermediate_size");
  expect_apply_error("{\"hidden_size\": 64, \"intermediate_size\": 32, \"num_experts_per_tok\": 8}", 64, 4, "top-8",
                     "4 experts");
  expect_apply_error("{\"hidden_size\": 64, \"intermediate_size\": 32, \"num_experts_per_tok\": 2, "
                     "\"quantization_config\": {\"quant_method\": \"awq\"}}", 64, 4, "awq", "mxfp4");
}

/* ------------------------------------------------------------------------------------------ */
/* the real op                                                                                 */

/* The vLLM GPT-OSS fixture's moe_forward (8192 tokens, hidden padded to 3072), cut to `tokens`
 * rows so that the float64 reference finishes in seconds; the layer's weights keep their full
 * size. */
static xr_bundle_t *fixture_moe_forward(int64_t tokens) {
  xr_extract_capture_t *caps;
  size_t n;
  cr_assert_eq(xr_extract_read_capture_dir(VLLM, &caps, &n), XR_OK, "%s", xr_last_error());
  xr_extract_options_t o = {.captures = caps, .capture_count = n, .op_filter = "vllm::moe_forward"};
  xr_bundle_t *b = NULL;
  cr_assert_eq(xr_trace_extract(VLLM "/graph_execution.json.gz", &o, &b, NULL), XR_OK, "%s", xr_last_error());
  xr_extract_captures_free(caps, n);
  cr_assert_eq(b->op_count, 1);
  xr_op_t *op = &b->ops[0];
  cr_assert_str_eq(op->name, "vllm::moe_forward");
  for (size_t i = 0; i < 2; i++) {
    xr_tensor_spec_t *t = op->args[i].value.as.tensor;
    cr_assert_eq(op->args[i].value.kind, XR_VALUE_TENSOR);
    cr_assert_eq(t->shape[0], 8192, "the fixture's batch");
    t->shape[0] = tokens;
  }
  cr_assert_eq(op->args[0].value.as.tensor->shape[1], 3072);
  return b;
}

static void collect(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  (void)position, (void)count;
  *(xr_op_result_t *)ctx = *r;
}

static xr_op_result_t run(xr_bundle_t *b, const char *device) {
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = device;
  o.check = true;
  o.warmup = 0;
  o.iters = 1;
  static xr_op_result_t r;
  memset(&r, 0, sizeof r);
  xr_replay_observer_t observer = {.result = collect, .context = &r};
  xr_status_t st = xr_replay_run(b, &o, &observer, NULL);
  if (st == XR_UNAVAILABLE || st == XR_NOT_FOUND) cr_skip_test("%s unavailable: %s", device, xr_last_error());
  cr_assert_eq(st, XR_OK, "%s", xr_last_error());
  return r;
}

Test(model_config, fixture_moe_forward_without_a_config_says_what_is_missing) {
  xr_bundle_t *b = fixture_moe_forward(4);
  xr_op_result_t r = run(b, "cpu");
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "--model-config FILE") && strstr(r.message, "32 experts from router_logits") &&
                strstr(r.message, "hidden size 3072") && strstr(r.message, "mxfp4 weights from the recorded kernels") &&
                strstr(r.message, "the intermediate size and top_k are unknown"),
            "%s", r.message);
  xr_bundle_destroy(b);
}

static void fixture_with_config_on(const char *device, const char *kernel) {
  xr_bundle_t *b = fixture_moe_forward(4);
  xr_model_config_t c;
  cr_assert_eq(xr_model_config_load(CONFIGS "/gpt-oss-20b.json", &c), XR_OK, "%s", xr_last_error());
  cr_assert_eq(xr_model_config_apply(b, &c, NULL, NULL, NULL), XR_OK, "%s", xr_last_error());
  expect_gpt_oss_20b_layer(&b->ops[0]);
  xr_op_result_t r = run(b, device);
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s", r.message);
  cr_assert_str_eq(r.kernel, kernel);
  cr_assert(r.checked && r.check_passed, "nmse %g (threshold %g)", r.outputs[0].nmse, r.outputs[0].threshold);
  cr_assert(strstr(r.init_policy, "layer: ") && strstr(r.init_policy, "gpt-oss-20b.json"), "init: [%s]", r.init_policy);
  /* routed work: 4 tokens x top-4 x (2 x 6144 x 3072 + 3072 x 3072) x 2 FLOPs */
  cr_assert_float_eq(r.flops, 4.0 * 4 * 3 * 3072.0 * 3072 * 2, 1.0);
  xr_bundle_destroy(b);
}

Test(model_config, fixture_moe_forward_with_gpt_oss_20b_on_cpu, .timeout = 600) {
  fixture_with_config_on("cpu", "cpu.moe_fused");
}

Test(model_config, fixture_moe_forward_with_gpt_oss_20b_on_opencl, .timeout = 600) {
  fixture_with_config_on("opencl", "opencl.moe");
}
