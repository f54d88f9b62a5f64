/* Extraction from the real traces in tests/data/fixtures/traces and from small synthetic ones.
 *
 * Expected figures were computed once, independently of this code, with a short Python script
 * (json + gzip) that follows each kernel / gpu_memcpy / gpu_memset event to its runtime event
 * by args.correlation (ac2g flow start as fallback), takes the innermost enclosing cpu_op on
 * the same pid/tid (ts <= launch <= ts + dur; --outermost: the outermost one whose name holds
 * "::"), groups by (name, Input Dims, Input type, Input Strides, Concrete Inputs), and sums
 * kernel durations; busy time is the union of all GPU event intervals. Kernels under a graph
 * launch (544 in the SGLang trace) have no op without the capture trace (tests/extract/
 * graph_test.c gives it). */
#include <cjson/cJSON.h>
#include <math.h>

#include "tests/extract/extract_util.h"

typedef struct expect {
  const char *file;
  bool outermost;
  size_t gpu_events, without_op, graph_kernels, unique_ops, instances;
  double ops_us, busy_us;
  const char *device, *vendor, *top_name;
  double top_us;
} expect_t;

static const expect_t fixtures[] = {
    {"h100_bert_small.json.gz", false, 61, 0, 0, 16, 61, 309.437, 309.438, "NVIDIA H100 80GB HBM3",
     "NVIDIA", "aten::addmm", 98.718},
    {"h100_bert_small.json.gz", true, 61, 0, 0, 16, 61, 309.437, 309.438, "NVIDIA H100 80GB HBM3",
     "NVIDIA", "aten::linear", 98.718},
    {"mi300_bert_small.json.gz", false, 61, 0, 0, 16, 61, 390.748, 390.749, "AMD Instinct MI300X VF",
     "AMD", "aten::_flash_attention_forward", 113.656},
    {"mi300_bert_small.json.gz", true, 61, 0, 0, 16, 61, 390.748, 390.749, "AMD Instinct MI300X VF",
     "AMD", "aten::scaled_dot_product_attention", 113.656},
    {"mi300_sglang_qwen3_8b_decode.json.gz", false, 558, 3, 544, 10, 11, 104.627, 9772.929,
     "AMD Instinct MI300X", "AMD", "aten::argmax", 53.840},
    {"mi300_sglang_qwen3_8b_decode.json.gz", true, 558, 3, 544, 9, 10, 104.627, 9772.929,
     "AMD Instinct MI300X", "AMD", "aten::argmax", 53.840},
    {"mi300_torch_compile_sdpa.json.gz", false, 12, 0, 0, 8, 12, 12549.021, 12549.021,
     "AMD Instinct MI300X", "AMD", "aten::mm", 3749.165},
    {"mi300_torch_compile_sdpa.json.gz", true, 12, 0, 0, 8, 12, 12549.021, 12549.021,
     "AMD Instinct MI300X", "AMD", "aten::mm", 3749.165},
};

static xr_bundle_t *extract_fixture(const char *file, const xr_extract_options_t *o,
                                    xr_extract_summary_t *s) {
  char path[512];
  snprintf(path, sizeof path, TRACES "/%s", file);
  xr_bundle_t *b = NULL;
  cr_assert_eq(xr_trace_extract(path, o, &b, s), XR_OK, "%s", xr_last_error());
  return b;
}

Test(extract, fixtures_give_the_independently_computed_figures) {
  for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
    const expect_t *e = &fixtures[i];
    xr_extract_options_t o = {.outermost = e->outermost};
    xr_extract_summary_t s;
    xr_bundle_t *b = extract_fixture(e->file, &o, &s);
    const char *f = e->file;
    cr_assert_eq(s.gpu_events, e->gpu_events, "%s", f);
    cr_assert_eq(s.gpu_unlinked, 0, "%s", f);
    cr_assert_eq(s.gpu_without_op, e->without_op, "%s", f);
    cr_assert_eq(s.graph_kernels, e->graph_kernels, "%s", f);
    cr_assert_eq(s.graph_kernels_matched, 0, "%s", f);
    cr_assert_eq(b->op_count, e->unique_ops, "%s outermost=%d: %zu ops", f, e->outermost,
                 b->op_count);
    cr_assert_eq(s.unique_ops, e->unique_ops);
    cr_assert_eq(s.op_instances, e->instances, "%s", f);
    cr_assert_float_eq(s.ops_gpu_time_us, e->ops_us, 0.01, "%s: %f", f, s.ops_gpu_time_us);
    cr_assert_float_eq(s.gpu_busy_us, e->busy_us, 0.01, "%s: %f", f, s.gpu_busy_us);
    cr_assert_float_eq(s.gpu_covered_us, e->ops_us, 0.01, "%s: %f", f, s.gpu_covered_us);
    /* Heaviest first, counts and timing add up. */
    cr_assert_str_eq(b->ops[0].name, e->top_name, "%s: %s", f, b->ops[0].name);
    cr_assert_float_eq(b->ops[0].timing->gpu_time_us, e->top_us, 0.01);
    double sum = 0;
    int64_t count = 0;
    for (size_t k = 0; k < b->op_count; k++) {
      const xr_op_t *op = &b->ops[k];
      if (k) cr_assert_geq(b->ops[k - 1].timing->gpu_time_us, op->timing->gpu_time_us);
      double ksum = 0;
      for (size_t j = 0; j < op->timing->kernel_count; j++)
        ksum += op->timing->kernels[j].duration_us;
      cr_assert_float_eq(ksum, op->timing->gpu_time_us, 1e-6);
      sum += op->timing->gpu_time_us;
      count += op->count;
    }
    cr_assert_float_eq(sum, e->ops_us, 0.01);
    cr_assert_eq((size_t)count, e->instances);
    cr_assert_str_eq(b->meta.device_name, e->device);
    cr_assert_str_eq(b->meta.vendor, e->vendor);
    cr_assert_str_eq(b->meta.source_trace, e->file);
    cr_assert_not_null(b->meta.runtime_version);
    cr_assert_not_null(b->meta.capture_date);
    cr_assert_eq(xr_bundle_validate(b, false, NULL), XR_OK, "%s: %s", f, xr_last_error());
    round_trip_both_codecs(b);
    xr_bundle_destroy(b);
    xr_extract_summary_free(&s);
  }
}

Test(extract, metadata_records_busy_time_and_share) {
  xr_extract_summary_t s;
  xr_bundle_t *b = extract_fixture("mi300_sglang_qwen3_8b_decode.json.gz", NULL, &s);
  cr_assert_str_eq(b->meta.runtime_version, "HIP 7.2.53211");
  cr_assert_str_eq(b->meta.capture_date, "2026-04-01T21:22:30Z");
  bool busy = false, share = false, world = false, rank = false;
  for (size_t i = 0; i < b->meta.extra_count; i++) {
    const xr_arg_t *x = &b->meta.extra[i];
    if (strcmp(x->name, "gpu_busy_us") == 0) {
      busy = true;
      cr_assert_float_eq(x->value.as.f, 9772.929, 0.01);
    } else if (strcmp(x->name, "extracted_gpu_share") == 0) {
      share = true;
      cr_assert_float_eq(x->value.as.f, 104.628 / 9772.929, 1e-4);
    } else if (strcmp(x->name, "world_size") == 0) { /* distributedInfo: one rank of one */
      world = true;
      cr_assert_eq(x->value.kind, XR_VALUE_INT);
      cr_assert_eq(x->value.as.i, 1);
    } else if (strcmp(x->name, "trace_rank") == 0) {
      rank = true;
      cr_assert_eq(x->value.as.i, 0);
    }
  }
  cr_assert(busy && share && world && rank);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
  b = extract_fixture("h100_bert_small.json.gz", NULL, &s);
  cr_assert_str_eq(b->meta.runtime_version, "CUDA 12.4");
  for (size_t i = 0; i < b->meta.extra_count; i++) /* no distributedInfo */
    cr_assert(strcmp(b->meta.extra[i].name, "world_size") != 0);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

Test(extract, arguments_are_named_from_schemas) {
  xr_extract_summary_t s;
  xr_bundle_t *b = extract_fixture("h100_bert_small.json.gz", NULL, &s);
  const xr_op_t *addmm = &b->ops[0];
  cr_assert_str_eq(addmm->name, "aten::addmm");
  cr_assert_eq(addmm->arg_count, 3);
  cr_assert_eq(addmm->kwarg_count, 2);
  cr_assert_eq(addmm->count, 17);
  const xr_arg_t *mat2 = xr_op_find_arg(addmm, "mat2");
  cr_assert_not_null(mat2);
  cr_assert_str_eq(mat2->type, "Tensor");
  const xr_tensor_spec_t *t = mat2->value.as.tensor;
  cr_assert_eq(t->dtype, XR_DTYPE_BF16);
  cr_assert_eq(t->rank, 2);
  cr_assert_eq(t->strides[0], 1); /* a transposed weight */
  cr_assert_eq(t->strides[1], 512);
  cr_assert_eq(t->init, XR_INIT_UNSET);
  const xr_arg_t *beta = xr_op_find_arg(addmm, "beta");
  cr_assert_eq(beta->value.kind, XR_VALUE_INT);
  cr_assert_eq(beta->value.as.i, 1);
  /* gelu's approximate is a string the profiler dropped. */
  bool found = false;
  for (size_t i = 0; i < b->op_count; i++) {
    if (strcmp(b->ops[i].name, "aten::gelu") != 0) continue;
    const xr_arg_t *a = xr_op_find_arg(&b->ops[i], "approximate");
    cr_assert_not_null(a);
    cr_assert_eq(a->value.kind, XR_VALUE_STRING);
    cr_assert_str_eq(a->value.as.s, "none");
    cr_assert(a->defaulted);
    cr_assert_str_eq(a->type, "str");
    found = true;
  }
  cr_assert(found);
  cr_assert(summary_has_warning(&s, "'approximate'"));
  cr_assert_geq(s.defaulted_args, 1);
  /* Layer norm: eps a float, normalized_shape an int list. */
  for (size_t i = 0; i < b->op_count; i++) {
    if (strcmp(b->ops[i].name, "aten::native_layer_norm") != 0) continue;
    const xr_arg_t *eps = xr_op_find_arg(&b->ops[i], "eps");
    cr_assert_eq(eps->value.kind, XR_VALUE_FLOAT);
    cr_assert_float_eq(eps->value.as.f, 1e-12, 1e-20);
    const xr_arg_t *ns = xr_op_find_arg(&b->ops[i], "normalized_shape");
    cr_assert_eq(ns->value.kind, XR_VALUE_LIST);
    cr_assert_eq(ns->value.as.list.count, 1);
    cr_assert_eq(ns->value.as.list.items[0].as.i, 512);
  }
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

Test(extract, top_and_op_filter) {
  xr_extract_options_t o = {.top = 3};
  xr_extract_summary_t s;
  xr_bundle_t *b = extract_fixture("h100_bert_small.json.gz", &o, &s);
  cr_assert_eq(b->op_count, 3);
  cr_assert_eq(s.ops_filtered, 13);
  cr_assert_float_eq(b->ops[0].timing->gpu_time_us, 98.718, 0.01);
  cr_assert_float_eq(b->ops[2].timing->gpu_time_us, 37.408, 0.01);
  cr_assert_float_eq(s.gpu_covered_us, 98.718 + 41.280 + 37.408, 0.01);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);

  o = (xr_extract_options_t){.op_filter = "addmm"};
  b = extract_fixture("h100_bert_small.json.gz", &o, &s);
  cr_assert_eq(b->op_count, 4);
  cr_assert_eq(s.op_instances, 26);
  cr_assert_eq(s.ops_filtered, 61 - 26); /* the other occurrences that launched GPU work */
  for (size_t i = 0; i < b->op_count; i++) cr_assert_str_eq(b->ops[i].name, "aten::addmm");
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

Test(extract, tensor_lists_get_a_stated_dtype) {
  xr_extract_summary_t s;
  xr_bundle_t *b = extract_fixture("mi300_sglang_qwen3_8b_decode.json.gz", NULL, &s);
  const xr_op_t *op = NULL;
  for (size_t i = 0; i < b->op_count; i++)
    if (strcmp(b->ops[i].name, "aten::_foreach_copy_") == 0) op = &b->ops[i];
  cr_assert_not_null(op);
  const xr_arg_t *self = xr_op_find_arg(op, "self");
  cr_assert_eq(self->value.kind, XR_VALUE_LIST);
  cr_assert_eq(self->value.as.list.count, 4);
  cr_assert_eq(self->value.as.list.items[0].as.tensor->shape[0], 32);
  cr_assert(self->defaulted);
  cr_assert(summary_has_warning(&s, "Tensor[]"));
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

/* A one-op trace: op event, its launch and its kernel, plus any extra events. */
static char *one_op_trace(const char *name, const char *args, const char *extra) {
  const char *fmt =
      "{\"deviceProperties\": [{\"id\": 0, \"name\": \"AMD Instinct MI300X\"}],"
      " \"traceEvents\": [%s"
      " {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 1, \"tid\": 1,"
      "  \"ts\": 100.0, \"dur\": 50.0, \"args\": %s},"
      " {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"hipLaunchKernel\", \"pid\": 1,"
      "  \"tid\": 1, \"ts\": 120.0, \"dur\": 5.0, \"args\": {\"correlation\": 77}},"
      " {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"the_kernel\", \"pid\": 2, \"tid\": 0,"
      "  \"ts\": 200.0, \"dur\": 12.5, \"args\": {\"correlation\": 77}}]}";
  size_t n = strlen(fmt) + strlen(name) + strlen(args) + strlen(extra) + 1;
  char *s = malloc(n);
  snprintf(s, n, fmt, extra, name, args);
  return s;
}

Test(extract, vllm_paged_attention_gets_iteration_hints_and_string_defaults) {
  const char *args =
      "{\"Input Dims\": [[3, 32, 128], [3, 32, 128], [100, 8, 16, 16, 8], [100, 8, 128, 16],"
      " [], [], [3, 4], [3], [], [], [], [], [], [], [], [], [], [], []],"
      " \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\", \"c10::BFloat16\","
      " \"c10::BFloat16\", \"Scalar\", \"Scalar\", \"int\", \"int\", \"Scalar\", \"Scalar\", \"\","
      " \"\", \"float\", \"float\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\"],"
      " \"Concrete Inputs\": [\"\", \"\", \"\", \"\", \"8\", \"0.088388347648318447\", \"\", \"\","
      " \"16\", \"60\", \"\", \"\", \"\", \"\", \"0\", \"0\", \"0\", \"64\", \"0\"]}";
  const char *ann =
      "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\":"
      " \"execute_context_1(17)_generation_3(3)\", \"pid\": 1, \"tid\": 1, \"ts\": 50.0,"
      " \"dur\": 500.0, \"args\": {}},";
  char *text = one_op_trace("_C::paged_attention_v1", args, ann);
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(extract_string(text, NULL, &b, &s), XR_OK, "%s", xr_last_error());
  cr_assert_eq(b->op_count, 1);
  const xr_op_t *op = &b->ops[0];
  cr_assert_str_eq(op->name, "_C::paged_attention_v1");
  cr_assert_eq(op->arg_count, 19);
  const xr_arg_t *out = xr_op_find_arg(op, "out");
  cr_assert_str_eq(out->type, "Tensor!");
  cr_assert_eq(out->value.as.tensor->init, XR_INIT_NONE);
  cr_assert_eq(xr_op_find_arg(op, "query")->value.as.tensor->init, XR_INIT_UNSET);
  const xr_arg_t *kv = xr_op_find_arg(op, "kv_cache_dtype");
  cr_assert_str_eq(kv->value.as.s, "auto");
  cr_assert(kv->defaulted);
  cr_assert(summary_has_warning(&s, "kv_cache_dtype"));
  cr_assert_eq(xr_op_find_arg(op, "alibi_slopes")->value.kind, XR_VALUE_NULL);
  const xr_arg_t *scale = xr_op_find_arg(op, "scale");
  cr_assert_eq(scale->value.kind, XR_VALUE_FLOAT);
  cr_assert_eq(xr_op_find_arg(op, "num_kv_heads")->value.as.i, 8);
  cr_assert_eq(op->hint_count, 4);
  const char *names[4] = {"prefill_seqs", "prefill_tokens", "decode_seqs", "decode_tokens"};
  const int64_t values[4] = {1, 17, 3, 3};
  for (int i = 0; i < 4; i++) {
    cr_assert_str_eq(op->hints[i].name, names[i]);
    cr_assert_eq(op->hints[i].value.as.i, values[i], "%s", names[i]);
  }
  cr_assert_float_eq(op->timing->gpu_time_us, 12.5, 1e-9);
  cr_assert_eq(op->count, 1);
  round_trip_both_codecs(b);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
  free(text);
}

/* reshape_and_cache_flash with the kv_cache_dtype string dropped: the cache tensors' dtype
 * decides it (uint8 or fp8: "fp8", e5m2: "fp8_e5m2", the model's dtype: the usual "auto"), with
 * the defaulted warning naming the choice and the tensor. */
static const xr_op_t *extract_cache_op(const char *name, const char *cache_type, xr_bundle_t **b,
                                       xr_extract_summary_t *s) {
  char args[1024];
  snprintf(args, sizeof args,
           "{\"Input Dims\": [[3, 8, 128], [3, 8, 128], [100, 16, 8, 128], [100, 16, 8, 128], [3],"
           " [], [], []],"
           " \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\", \"%s\", \"%s\", \"long int\","
           " \"\", \"float\", \"float\"],"
           " \"Concrete Inputs\": [\"\", \"\", \"\", \"\", \"\", \"\", \"\", \"\"]}",
           cache_type, cache_type);
  char *text = one_op_trace(name, args, "");
  cr_assert_eq(extract_string(text, NULL, b, s), XR_OK, "%s", xr_last_error());
  free(text);
  cr_assert_eq((*b)->op_count, 1);
  return &(*b)->ops[0];
}

Test(extract, kv_cache_dtype_follows_the_cache_tensor_when_not_recorded) {
  static const struct {
    const char *type, *expect, *warning;
  } cases[] = {
      {"unsigned char", "fp8", "using 'fp8' (key_cache is unsigned char)"},
      {"c10::Float8_e4m3fn", "fp8", "using 'fp8' (key_cache is c10::Float8_e4m3fn)"},
      {"c10::Float8_e5m2", "fp8_e5m2", "using 'fp8_e5m2' (key_cache is c10::Float8_e5m2)"},
      {"c10::BFloat16", "auto", "using 'auto'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    xr_bundle_t *b;
    xr_extract_summary_t s;
    const xr_op_t *op = extract_cache_op("_C_cache_ops::reshape_and_cache_flash", cases[i].type, &b, &s);
    const xr_arg_t *kv = xr_op_find_arg(op, "kv_cache_dtype");
    cr_assert_not_null(kv);
    cr_assert_eq(kv->value.kind, XR_VALUE_STRING);
    cr_assert_str_eq(kv->value.as.s, cases[i].expect, "%s cache", cases[i].type);
    cr_assert(kv->defaulted);
    cr_assert_geq(s.defaulted_args, 1);
    cr_assert(summary_has_warning(&s, cases[i].warning), "%s: no warning \"%s\"", cases[i].type,
              cases[i].warning);
    cr_assert(summary_has_warning(&s, "kv_cache_dtype"));
    round_trip_both_codecs(b);
    xr_bundle_destroy(b);
    xr_extract_summary_free(&s);
  }
}

/* A recorded kv_cache_dtype is kept whatever the cache holds. */
Test(extract, a_recorded_kv_cache_dtype_is_kept) {
  const char *args =
      "{\"Input Dims\": [[3, 8, 128], [3, 8, 128], [100, 16, 8, 128], [100, 16, 8, 128], [3], [], [],"
      " []],"
      " \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\", \"unsigned char\", \"unsigned char\","
      " \"long int\", \"\", \"float\", \"float\"],"
      " \"Concrete Inputs\": [\"\", \"\", \"\", \"\", \"\", \"fp8_e4m3\", \"\", \"\"]}";
  char *text = one_op_trace("_C_cache_ops::reshape_and_cache", args, "");
  xr_bundle_t *b;
  cr_assert_eq(extract_string(text, NULL, &b, NULL), XR_OK, "%s", xr_last_error());
  const xr_arg_t *kv = xr_op_find_arg(&b->ops[0], "kv_cache_dtype");
  cr_assert_str_eq(kv->value.as.s, "fp8_e4m3");
  cr_assert_not(kv->defaulted);
  xr_bundle_destroy(b);
  free(text);
}

Test(extract, aliases_map_to_registry_names) {
  const char *args =
      "{\"Input Dims\": [[64, 8], [], [], [600], [40], [1]],"
      " \"Input type\": [\"int\", \"Scalar\", \"Scalar\", \"int\", \"int\", \"int\"],"
      " \"Input Strides\": [[8, 1], [], [], [1], [1], [1]],"
      " \"Concrete Inputs\": [\"\", \"64\", \"16\", \"\", \"\", \"\"]}";
  char *text = one_op_trace("_C::moe_align_block_size", args, "");
  xr_bundle_t *b;
  cr_assert_eq(extract_string(text, NULL, &b, NULL), XR_OK, "%s", xr_last_error());
  cr_assert_str_eq(b->ops[0].name, "_moe_C::moe_align_block_size");
  cr_assert_str_eq(b->ops[0].alias, "_C::moe_align_block_size");
  cr_assert_eq(xr_op_find_arg(&b->ops[0], "num_experts")->value.as.i, 64);
  cr_assert_eq(xr_op_find_arg(&b->ops[0], "sorted_token_ids")->value.as.tensor->init,
               XR_INIT_NONE);
  round_trip_both_codecs(b);
  xr_bundle_destroy(b);
  free(text);
}

Test(extract, unknown_ops_stay_positional_and_strides_default_to_contiguous) {
  const char *args =
      "{\"Input Dims\": [[4, 6], [], []], \"Input type\": [\"float\", \"Scalar\", \"\"],"
      " \"Concrete Inputs\": [\"\", \"[1, 2]\", \"\"]}";
  char *text = one_op_trace("custom::thing", args, "");
  xr_bundle_t *b;
  cr_assert_eq(extract_string(text, NULL, &b, NULL), XR_OK, "%s", xr_last_error());
  const xr_op_t *op = &b->ops[0];
  cr_assert_str_eq(op->name, "custom::thing");
  cr_assert_null(op->alias);
  cr_assert_eq(op->arg_count, 3);
  cr_assert_null(op->args[0].name);
  cr_assert_str_eq(op->args[0].type, "float");
  cr_assert_eq(op->args[0].value.as.tensor->strides[0], 6);
  cr_assert_eq(op->args[0].value.as.tensor->strides[1], 1);
  cr_assert_str_eq(op->args[1].type, "Scalar");
  cr_assert_eq(op->args[1].value.kind, XR_VALUE_LIST);
  cr_assert_eq(op->args[1].value.as.list.items[1].as.i, 2);
  cr_assert_null(op->args[2].type);
  cr_assert_eq(op->args[2].value.kind, XR_VALUE_NULL);
  xr_bundle_destroy(b);
  free(text);
}

Test(extract, concrete_text_forms) {
  const char *args =
      "{\"Input Dims\": [[], [], [], [], [], []],"
      " \"Input type\": [\"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\", \"ScalarList\", \"Scalar\"],"
      " \"Concrete Inputs\": [\"1\", \"0.5\", \"True\", \"''\", \"[True, False]\", \"-inf\"]}";
  char *text = one_op_trace("custom::forms", args, "");
  xr_bundle_t *b;
  cr_assert_eq(extract_string(text, NULL, &b, NULL), XR_OK, "%s", xr_last_error());
  const xr_arg_t *a = b->ops[0].args;
  cr_assert_eq(a[0].value.kind, XR_VALUE_INT);
  cr_assert_eq(a[1].value.kind, XR_VALUE_FLOAT);
  cr_assert_float_eq(a[1].value.as.f, 0.5, 0);
  cr_assert_eq(a[2].value.kind, XR_VALUE_BOOL);
  cr_assert(a[2].value.as.b);
  cr_assert_eq(a[3].value.kind, XR_VALUE_STRING);
  cr_assert_str_eq(a[3].value.as.s, "");
  cr_assert_eq(a[4].value.as.list.count, 2);
  cr_assert_not(a[4].value.as.list.items[1].as.b);
  cr_assert(isinf(a[5].value.as.f) && a[5].value.as.f < 0);
  round_trip_both_codecs(b);
  xr_bundle_destroy(b);
  free(text);
}

Test(extract, flows_link_kernels_when_the_runtime_event_lacks_a_correlation) {
  const char *text =
      "[{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::zero_\", \"pid\": 5, \"tid\": 6,"
      "  \"ts\": 10, \"dur\": 10, \"args\": {\"Input Dims\": [[8]], \"Input type\": [\"float\"]}},"
      " {\"ph\": \"s\", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"id\": 9, \"pid\": 5, \"tid\": 6,"
      "  \"ts\": 15},"
      " {\"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset (Device)\", \"pid\": 0,"
      "  \"tid\": 7, \"ts\": 30, \"dur\": 2, \"args\": {\"correlation\": 9}}]";
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(extract_string(text, NULL, &b, &s), XR_OK, "%s", xr_last_error());
  cr_assert_eq(b->op_count, 1);
  cr_assert_str_eq(b->ops[0].name, "aten::zero_");
  cr_assert_eq(b->ops[0].args[0].value.as.tensor->init, XR_INIT_NONE);
  cr_assert_str_eq(b->ops[0].timing->kernels[0].name, "Memset (Device)");
  cr_assert_eq(s.gpu_unlinked, 0);
  /* No Concrete Inputs at all (older PyTorch): said once. */
  cr_assert(summary_has_warning(&s, "Concrete Inputs"));
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

Test(extract, plain_json_file_and_identical_ops_are_grouped) {
  const char *path = tmp_path("two.json");
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("{\"traceEvents\": [", f);
  for (int i = 0; i < 2; i++)
    fprintf(f,
            "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1,"
            " \"ts\": %d, \"dur\": 10, \"args\": {\"Input Dims\": [[2, 3], [3, 4]],"
            " \"Input type\": [\"float\", \"float\"], \"Input Strides\": [[3, 1], [4, 1]],"
            " \"Concrete Inputs\": [\"\", \"\"]}},"
            "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1,"
            " \"tid\": 1, \"ts\": %d, \"dur\": 1, \"args\": {\"correlation\": %d}},"
            "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7,"
            " \"ts\": %d, \"dur\": 3, \"args\": {\"correlation\": %d}}%s",
            i * 100, i * 100 + 5, i + 1, i * 100 + 50, i + 1, i ? "" : ",");
  fputs("]}", f);
  fclose(f);
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(xr_trace_extract(path, NULL, &b, &s), XR_OK, "%s", xr_last_error());
  cr_assert_eq(b->op_count, 1);
  cr_assert_eq(b->ops[0].count, 2);
  cr_assert_float_eq(b->ops[0].timing->gpu_time_us, 6.0, 1e-9);
  cr_assert_eq(b->ops[0].timing->kernels[0].count, 2);
  cr_assert_str_eq(b->meta.source_trace, "two.json");
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}
