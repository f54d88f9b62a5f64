/* Real profiler traces, end to end: extract each fixture trace into a bundle and replay it on
 * the cpu driver. Every op must either run or be reported unsupported with a reason; none may
 * fail, and nothing may crash. `replay plan` (xr_replay_plan) must have said beforehand exactly
 * what the run then did. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "formats/trace_extract.h"
#include "replay/replay.h"

#define TRACES "tests/data/fixtures/traces/"
#define GRAPHS "tests/data/fixtures/graph_traces/"

typedef struct tally {
  size_t ran, unsupported;
  const xr_replay_plan_t *plan; /* made before the run, with the same options */
} tally_t;

static void report_failure(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  (void)count;
  tally_t *t = ctx;
  /* `replay plan` said so before anything ran: the same outcome and kernel, and the same
   * sentence (but for the memory available at the time, which moves). */
  const xr_plan_entry_t *e = &t->plan->entries[position];
  cr_expect_eq(e->index, r->index);
  cr_expect_eq(e->outcome, r->outcome, "op %zu %s: planned %s (%s), ran %s (%s)", r->index,
               r->op->name, xr_op_outcome_name(e->outcome), e->message,
               xr_op_outcome_name(r->outcome), r->message);
  cr_expect_str_eq(e->kernel, r->kernel, "op %zu %s", r->index, r->op->name);
  /* A compacted op's note is the plan's message and the result's cache_note. */
  const char *said = r->outcome == XR_OP_SUCCEEDED && r->cache_note[0] ? r->cache_note : r->message;
  if (!strstr(r->message, "does not fit"))
    cr_expect_str_eq(e->message, said, "op %zu %s: planned \"%s\", ran \"%s\"", r->index,
                     r->op->name, e->message, said);
  cr_expect_neq(r->outcome, XR_OP_FAILED, "op %zu %s failed: %s", r->index, r->op->name, r->message);
  if (r->outcome == XR_OP_SUCCEEDED) t->ran++;
  else if (r->outcome == XR_OP_UNSUPPORTED) {
    t->unsupported++;
    cr_expect_neq(r->message[0], '\0', "op %zu %s: unsupported without a reason", r->index,
                  r->op->name);
  }
}

/* `trace` extracted into a bundle, with the capture traces listed in `capture_dir` (or NULL). */
static xr_bundle_t *extract_with_captures(const char *trace, const char *capture_dir) {
  xr_bundle_t *b;
  xr_extract_options_t eo = {0};
  xr_extract_capture_t *caps = NULL;
  size_t ncaps = 0;
  if (capture_dir)
    cr_assert_eq(xr_extract_read_capture_dir(capture_dir, &caps, &ncaps), XR_OK, "%s",
                 xr_last_error());
  eo.captures = caps;
  eo.capture_count = ncaps;
  cr_assert_eq(xr_trace_extract(trace, &eo, &b, NULL), XR_OK, "%s", xr_last_error());
  xr_extract_captures_free(caps, ncaps);
  return b;
}

/* Extracts `trace` (with the capture traces listed in `capture_dir`, or NULL) and replays the
 * ops whose names contain `filter` (NULL: all) once each, the paged caches as `cache_blocks`
 * says (--cache-blocks). */
static tally_t replay_trace_with(const char *trace, const char *capture_dir, const char *filter,
                                 xr_cache_blocks_t cache_blocks) {
  xr_bundle_t *b = extract_with_captures(trace, capture_dir);
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = "cpu";
  o.warmup = 0;
  o.iters = 1;
  o.op_filter = filter;
  o.cache_blocks = cache_blocks;
  xr_replay_plan_t *plan;
  cr_assert_eq(xr_replay_plan(b, &o, &plan), XR_OK, "%s", xr_last_error());
  tally_t t = {.plan = plan};
  xr_replay_summary_t s;
  xr_replay_observer_t observer = {.result = report_failure, .context = &t};
  cr_assert_eq(xr_replay_run(b, &o, &observer, &s), XR_OK, "%s", xr_last_error());
  cr_assert_eq(s.failed, 0, "%s: %zu ops failed", trace, s.failed);
  /* No op failed at run time, so the plan's share of the trace is the run's, to the bit. */
  cr_assert_eq(plan->attempted, s.attempted);
  cr_assert_eq(plan->devices[0].runnable, s.succeeded);
  cr_assert_eq(plan->trace_total_us, s.trace_total_us);
  cr_assert_eq(plan->devices[0].trace_covered_us, s.trace_covered_us,
               "%s: plan %.1f us, run %.1f us", trace, plan->devices[0].trace_covered_us,
               s.trace_covered_us);
  xr_replay_plan_free(plan);
  xr_bundle_destroy(b);
  return t;
}

typedef struct checked {
  size_t ran; /* succeeded and matched the reference */
  char kernels[512];
  char policy[1024]; /* the last op's initializer policy */
} checked_t;

static void expect_checked(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  (void)position, (void)count;
  checked_t *c = ctx;
  cr_expect_eq(r->outcome, XR_OP_SUCCEEDED, "op %zu %s: %s: %s", r->index, r->op->name,
               xr_op_outcome_name(r->outcome), r->message);
  cr_expect(r->checked && r->check_passed, "op %zu %s: check failed", r->index, r->op->name);
  cr_expect_gt(r->output_count, 0, "op %zu %s: nothing checked", r->index, r->op->name);
  if (r->outcome == XR_OP_SUCCEEDED && r->checked && r->check_passed) c->ran++;
  snprintf(c->policy, sizeof c->policy, "%s", r->init_policy);
  size_t n = strlen(c->kernels);
  snprintf(c->kernels + n, sizeof c->kernels - n, "%s%s", n ? " " : "", r->kernel);
}

/* Replays the ops of `b` whose names contain `filter` on the cpu with --check, the paged caches
 * as `cache_blocks` says (--cache-blocks) within `max_memory` bytes (0: what is available). */
static checked_t replay_checked_with(const xr_bundle_t *b, const char *filter,
                                     xr_cache_blocks_t cache_blocks, uint64_t max_memory) {
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.cache_blocks = cache_blocks;
  o.max_memory_bytes = max_memory;
  o.device = "cpu";
  o.warmup = 0;
  o.iters = 1;
  o.check = true;
  o.op_filter = filter;
  checked_t c = {0};
  xr_replay_observer_t observer = {.result = expect_checked, .context = &c};
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_OK, "%s", xr_last_error());
  return c;
}

static checked_t replay_checked(const xr_bundle_t *b, const char *filter) {
  return replay_checked_with(b, filter, XR_CACHE_BLOCKS_AUTO, 0);
}

static tally_t replay_trace(const char *trace, const char *filter) {
  return replay_trace_with(trace, NULL, filter, XR_CACHE_BLOCKS_AUTO);
}

Test(traces, bert_on_h100_replays_on_the_cpu) {
  tally_t t = replay_trace(TRACES "h100_bert_small.json.gz", NULL);
  cr_assert_geq(t.ran, 4, "the four GEMMs at least (%zu ran, %zu unsupported)", t.ran, t.unsupported);
}

Test(traces, bert_on_mi300_replays_on_the_cpu) {
  tally_t t = replay_trace(TRACES "mi300_bert_small.json.gz", NULL);
  cr_assert_geq(t.ran, 4, "the four GEMMs at least (%zu ran, %zu unsupported)", t.ran, t.unsupported);
}

Test(traces, sglang_decode_replays_on_the_cpu) {
  replay_trace(TRACES "mi300_sglang_qwen3_8b_decode.json.gz", NULL);
}

/* Its GEMMs and attention are full-size prefill work (1.1 TFLOP for one mm) that a 2-core CI
 * machine cannot run in a test; the fused Triton ops are what is left to check: they have no
 * kernel and must be reported so. */
Test(traces, torch_compile_triton_ops_are_unsupported_with_a_reason) {
  tally_t t = replay_trace(TRACES "mi300_torch_compile_sdpa.json.gz", "triton_");
  cr_assert_eq(t.ran, 0);
  cr_assert_eq(t.unsupported, 4);
}

/* Graph-mode traces with their capture traces: the ops credited from the graph replays run or
 * are reported unsupported. The SGLang one on compact caches: its ragged attention reads a
 * 3.4 GB cache as recorded, minutes of cpu time spent touching pages the op never reads. */
Test(traces, sglang_graph_decode_with_its_capture_replays_on_the_cpu) {
  tally_t t = replay_trace_with(GRAPHS "sglang_decode/graph_execution.json.gz",
                                GRAPHS "sglang_decode", NULL, XR_CACHE_BLOCKS_COMPACT);
  cr_assert_geq(t.ran, 10, "the GEMMs and elementwise ops (%zu ran, %zu unsupported)", t.ran,
                t.unsupported);
}

Test(traces, vllm_piecewise_with_its_capture_replays_on_the_cpu) {
  tally_t t = replay_trace_with(GRAPHS "vllm_prefilldecode_piecewise/graph_execution.json.gz",
                                GRAPHS "vllm_prefilldecode_piecewise", NULL, XR_CACHE_BLOCKS_AUTO);
  cr_assert_geq(t.ran, 10, "GEMMs, attention, rotary, copies (%zu ran, %zu unsupported)", t.ran,
                t.unsupported);
}

/* The SGLang fixture's custom ops, extracted with their capture and replayed on the cpu with
 * --check: aiter's RMS norms (rmsnorm over [256, 128], [1024, 128] and [32, 4096]; the
 * out-of-place add_rmsnorm), sgl-kernel's rotary embedding and SGLang's KV-cache store. Traced
 * custom ops carry no argument names and no "!": the families find their tensors by position
 * and mark what they write. store_cache's two [835874, 1024] bf16 caches are cut to 4096 rows
 * (checking the full ones takes 17 GB and 90 s); its k, the {6144, 1} view of v, the indices and
 * the traced row_bytes stay as recorded. */
Test(traces, sglang_custom_ops_replay_and_match_the_reference) {
  xr_bundle_t *b = extract_with_captures(GRAPHS "sglang_decode/graph_execution.json.gz",
                                         GRAPHS "sglang_decode");
  checked_t norms = replay_checked(b, "aiter::");
  cr_assert_eq(norms.ran, 4, "3 rmsnorm + 1 add_rmsnorm ran and matched (%s)", norms.kernels);
  checked_t rope = replay_checked(b, "sgl_kernel::rotary_embedding");
  cr_assert_eq(rope.ran, 1, "rotary (%s)", rope.kernels);
  size_t cut = 0;
  for (size_t i = 0; i < b->op_count; i++) {
    if (strcmp(b->ops[i].name, "sglang::store_cache")) continue;
    for (int k = 2; k <= 3; k++) {
      xr_tensor_spec_t *cache = b->ops[i].args[k].value.as.tensor;
      cr_assert(b->ops[i].args[k].value.kind == XR_VALUE_TENSOR && cache->rank == 2 &&
                cache->shape[0] == 835874 && cache->shape[1] == 1024);
      cache->shape[0] = 4096;
      cache->storage_size = -1;
      cut++;
    }
  }
  cr_assert_eq(cut, 2, "one store_cache with two caches");
  checked_t store = replay_checked(b, "sglang::store_cache");
  cr_assert_eq(store.ran, 1, "store_cache (%s)", store.kernels);
  xr_bundle_destroy(b);
}

/* The SGLang fixture's ragged paged attention (21.8% of its GPU time): 32 decode sequences over
 * a page list, its 10.9 GB workspace and 835,874-page caches recorded. The hints' 32,785
 * context tokens give the lengths; the workspace, which no replay kernel uses, is not
 * allocated, and with --cache-blocks=compact the caches hold those pages only, so that it runs
 * in a test's memory, checked. */
Test(traces, sglang_ragged_paged_attention_replays_on_a_compact_cache) {
  xr_bundle_t *b = extract_with_captures(GRAPHS "sglang_decode/graph_execution.json.gz",
                                         GRAPHS "sglang_decode");
  checked_t c = replay_checked_with(b, "attention_paged_attention_ragged",
                                    XR_CACHE_BLOCKS_COMPACT, 0);
  cr_assert_eq(c.ran, 1, "ragged attention (%s)", c.kernels);
  cr_assert(strstr(c.policy, "cache: compact, 32786 of 835874 pages"), "%s", c.policy);
  xr_bundle_destroy(b);
}

/* The vLLM fixture's reshape_and_cache_flash writes 8192 tokens into caches of 13.85 GiB (41 GiB
 * of host memory with the initial contents and the copy read back): "does not fit" whole in 8 GiB (--max-memory here; the host's memory on a real run), so by default its
 * caches are cut to one block per token and one more, and it would run (the plan; running it
 * fills 0.5 GiB of cache, a minute on a CI machine; the cache-writer cases check compaction). */
Test(traces, vllm_cache_writer_too_large_for_the_host_plans_compacted) {
  xr_bundle_t *b = extract_with_captures(GRAPHS "vllm_prefilldecode_piecewise/graph_execution.json.gz",
                                         GRAPHS "vllm_prefilldecode_piecewise");
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = "cpu";
  o.op_filter = "reshape_and_cache_flash";
  o.max_memory_bytes = 8ull << 30;
  xr_replay_plan_t *plan;
  cr_assert_eq(xr_replay_plan(b, &o, &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan->attempted, 1);
  cr_assert_eq(plan->entries[0].outcome, XR_OP_SUCCEEDED, "%s", plan->entries[0].message);
  cr_assert(strstr(plan->entries[0].message, "cache: compact, its tensors 672.1 MiB (13.85 GiB as "
                                             "recorded)"),
            "%s", plan->entries[0].message);
  o.cache_blocks = XR_CACHE_BLOCKS_FULL;
  xr_replay_plan_free(plan);
  cr_assert_eq(xr_replay_plan(b, &o, &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan->entries[0].outcome, XR_OP_UNSUPPORTED);
  cr_assert(strstr(plan->entries[0].message, "does not fit"), "%s", plan->entries[0].message);
  xr_replay_plan_free(plan);
  xr_bundle_destroy(b);
}

/* The vLLM fixture's aiter::rmsnorm2d_fwd_with_add_ck (GPT-OSS-20B, 8192 tokens of 2880; one of
 * them over a {3072, 1} input view), replayed on the cpu with --check. */
Test(traces, vllm_aiter_add_rmsnorm_replays_and_matches_the_reference) {
  xr_bundle_t *b = extract_with_captures(GRAPHS "vllm_prefilldecode_piecewise/graph_execution.json.gz",
                                         GRAPHS "vllm_prefilldecode_piecewise");
  checked_t c = replay_checked(b, "aiter::rmsnorm2d_fwd_with_add_ck");
  cr_assert_eq(c.ran, 2, "both ran and matched (%s)", c.kernels);
  xr_bundle_destroy(b);
}
