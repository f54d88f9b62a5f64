/* Paged attention (vLLM _C::paged_attention_v1/v2, _rocm_C::paged_attention) and the cache
 * writers (reshape_and_cache, reshape_and_cache_flash, sglang::store_cache) beyond their case
 * matrix (paged_attention_cases.h, run on every driver by the paged_attention_matrix_*
 * targets): store_cache's plan and what it declines, and ops extracted from a trace without
 * kv_cache_dtype over uint8 caches, which replay as fp8. */
#include <criterion/criterion.h>

#include "formats/trace_extract.h"
#include "tests/kernels/paged_attention_cases.h"

/* store_cache's plan: what it moves (k and v read, two cache rows written per token, the
 * indices), k_cache and v_cache marked written though traced without the "!"; a strided indices
 * tensor is unsupported with the reason on every implementation; a row_bytes that does not
 * match the rows is an error naming it. */
Test(kv_cache_cpu, store_cache_plan_and_reasons) {
  jbuf_t j;
  store_case_t c = store_cases[0];
  const char *json = store_json(&j, &c);
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK, "%s",
               xr_last_error());
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_OK, "%s", xr_last_error());
  cr_assert(!plan.input_written[0] && !plan.input_written[1] && plan.input_written[2] && plan.input_written[3] &&
            !plan.input_written[4]);
  cr_assert_float_eq(plan.bytes, 2.0 * 32 * 1024 * (2 + 2) + 32 * 8, 1e-9);
  cr_assert_float_eq(plan.flops, 0, 1e-9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);

  char strided[16384];
  snprintf(strided, sizeof strided, "%s", json);
  char *at = strstr(strided, "\"shape\": [32], \"strides\": [1]");
  cr_assert(at);
  memcpy(strstr(at, "[1]"), "[2]", 3);
  xr_op_result_t r = run_case(strided, "cpu", 1, NULL);
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", xr_op_outcome_name(r.outcome));
  cr_assert(strstr(r.message, "strided indices") && strstr(r.message, "ref.reshape_and_cache"), "%s", r.message);

  c.trailing = SCALAR(1024) SCALAR(0);
  json = store_json(&j, &c);
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK);
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "row_bytes 1024"), "%s", xr_last_error());
  xr_bundle_destroy(b);
}

/* Ops extracted from a profiler trace that dropped the kv_cache_dtype string, over uint8 caches:
 * extraction takes "fp8" from the cache tensors' dtype, so the ops replay (and pass --check)
 * instead of failing on kv_cache_dtype 'auto' with a uint8 cache. */
static void extracted_fp8_caches_replay(const char *device) {
  static const struct {
    const char *name, *args, *kernel;
  } ops[] = {
      {"_C_cache_ops::reshape_and_cache_flash",
       "{\"Input Dims\": [[5, 2, 64], [5, 2, 64], [40, 16, 2, 64], [40, 16, 2, 64], [5], [], [], []],"
       " \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\", \"unsigned char\", \"unsigned char\","
       " \"long int\", \"\", \"float\", \"float\"],"
       " \"Concrete Inputs\": [\"\", \"\", \"\", \"\", \"\", \"\", \"\", \"\"]}",
       ".reshape_and_cache"},
      {"_C_cache_ops::reshape_and_cache",
       "{\"Input Dims\": [[5, 2, 64], [5, 2, 64], [40, 2, 4, 16, 16], [40, 2, 64, 16], [5], [], [], []],"
       " \"Input type\": [\"c10::Half\", \"c10::Half\", \"unsigned char\", \"unsigned char\","
       " \"long int\", \"\", \"float\", \"float\"],"
       " \"Concrete Inputs\": [\"\", \"\", \"\", \"\", \"\", \"\", \"\", \"\"]}",
       ".reshape_and_cache"},
      {"_C::paged_attention_v1",
       "{\"Input Dims\": [[3, 8, 64], [3, 8, 64], [40, 2, 4, 16, 16], [40, 2, 64, 16],"
       " [], [], [3, 4], [3], [], [], [], [], [], [], [], [], [], [], []],"
       " \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\", \"unsigned char\", \"unsigned char\","
       " \"Scalar\", \"Scalar\", \"int\", \"int\", \"Scalar\", \"Scalar\", \"\", \"\", \"float\", \"float\","
       " \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\"],"
       " \"Concrete Inputs\": [\"\", \"\", \"\", \"\", \"2\", \"0.125\", \"\", \"\", \"16\", \"60\", \"\", \"\","
       " \"\", \"\", \"0\", \"0\", \"0\", \"64\", \"0\"]}",
       ".flash_attention"},
  };
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    char trace[4096];
    snprintf(trace, sizeof trace,
             "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 1, \"tid\": 1,"
             " \"ts\": 100.0, \"dur\": 50.0, \"args\": %s},"
             " {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1,"
             " \"ts\": 120.0, \"dur\": 5.0, \"args\": {\"correlation\": 7}},"
             " {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 2, \"tid\": 0, \"ts\": 200.0,"
             " \"dur\": 3.0, \"args\": {\"correlation\": 7}}]}",
             ops[i].name, ops[i].args);
    xr_bundle_t *b;
    xr_extract_summary_t s;
    cr_assert_eq(xr_trace_extract_memory(trace, strlen(trace), "t.json", NULL, &b, &s), XR_OK, "%s",
                 xr_last_error());
    cr_assert_eq(b->op_count, 1, "%s", ops[i].name);
    const xr_arg_t *kv = xr_op_find_arg(&b->ops[0], "kv_cache_dtype");
    cr_assert(kv && kv->value.kind == XR_VALUE_STRING && !strcmp(kv->value.as.s, "fp8") && kv->defaulted,
              "%s: kv_cache_dtype", ops[i].name);
    xr_replay_options_t o;
    xr_replay_options_default(&o);
    o.device = device;
    o.check = true;
    o.warmup = 0;
    o.iters = 1;
    static check_result_t c;
    memset(&c, 0, sizeof c);
    xr_replay_observer_t observer = {.result = check_collect, .context = &c};
    xr_status_t st = xr_replay_run(b, &o, &observer, NULL);
    xr_bundle_destroy(b);
    xr_extract_summary_free(&s);
    if (st == XR_UNAVAILABLE) cr_skip_test("%s unavailable: %s", device, xr_last_error());
    cr_assert_eq(st, XR_OK, "%s", xr_last_error());
    cr_assert_eq(c.r.outcome, XR_OP_SUCCEEDED, "%s on %s: %s", ops[i].name, device, c.r.message);
    cr_assert(c.r.checked && c.r.check_passed, "%s on %s", ops[i].name, device);
    cr_assert(strstr(c.r.kernel, ops[i].kernel), "%s ran %s", ops[i].name, c.r.kernel);
  }
}

Test(kv_cache_cpu, extracted_fp8_caches_replay) { extracted_fp8_caches_replay("cpu"); }
Test(kv_cache_opencl, extracted_fp8_caches_replay) { extracted_fp8_caches_replay("opencl"); }
