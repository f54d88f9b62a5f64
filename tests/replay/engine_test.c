/* The replay engine's behaviour, independent of any one kernel: selection of ops, outcomes and
 * their counts, seeded reproducibility, timing modes, custom initializers, dumps and reports.
 * Uses small GEMMs (always available through the CPU reference) as the workload. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "formats/bundle.h"
#include "replay/replay.h"
#include "replay/report.h"
#include "replay/trace_ratio.h"

#define MM(m, k, n)                                                                          \
  "{\"name\": \"aten::mm\", \"args\": [{\"name\": \"self\", \"type\": \"Tensor\", \"value\": " \
  "{\"shape\": [" #m ", " #k "], \"dtype\": \"float\"}}, {\"name\": \"mat2\", \"type\": "     \
  "\"Tensor\", \"value\": {\"shape\": [" #k ", " #n "], \"dtype\": \"float\"}}]}"

static xr_bundle_t *bundle(const char *ops) {
  char text[8192];
  snprintf(text, sizeof text, "{\"format\": \"xreplay-bundle\", \"ops\": [%s]}", ops);
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((uint8_t *)text, strlen(text), "t.json", ".", NULL, &b), XR_OK,
               "%s", xr_last_error());
  return b;
}

typedef struct seen {
  size_t count;
  xr_op_result_t r[16];
  xr_report_t *report;
  const char *report_path;              /* opened when the run starts */
  const xr_replay_options_t *options;
  size_t ops_in_report_after_first; /* parsed from the file while the run goes on */
} seen_t;

static bool started(void *ctx, const xr_replay_summary_t *run) {
  seen_t *s = ctx;
  cr_assert_eq(run->device_count, 1);
  cr_assert_str_eq(run->devices[0].spec, "cpu");
  cr_assert_str_eq(run->devices[0].properties.driver, "cpu");
  if (s->report_path)
    cr_assert_eq(xr_report_open(s->report_path, "t.json", NULL, run, 0, s->options, &s->report), XR_OK,
                 "%s", xr_last_error());
  return true;
}

static void observe(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  (void)count;
  seen_t *s = ctx;
  cr_assert_eq(position, s->count, "results arrive in order");
  if (s->count < 16) s->r[s->count] = *r;
  s->count++;
  if (s->report) {
    cr_assert_eq(xr_report_add(s->report, r), XR_OK);
    if (position == 0) {
      /* The report on disk is already a complete JSON document holding this op. */
      uint8_t *bytes;
      size_t size;
      cr_assert_eq(xr_read_file(s->report_path, &bytes, &size), XR_OK);
      cJSON *j = cJSON_Parse((char *)bytes);
      cr_assert_not_null(j, "report is not valid JSON mid-run:\n%s", bytes);
      s->ops_in_report_after_first = (size_t)cJSON_GetArraySize(cJSON_GetObjectItem(j, "ops"));
      cJSON_Delete(j);
      free(bytes);
    }
  }
}

static xr_replay_options_t quick(void) {
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = "cpu";
  o.warmup = 0;
  o.iters = 2;
  return o;
}

static char *tmp_path(const char *name) {
  static char paths[8][1024];
  static int next;
  char *p = paths[next++ % 8];
  snprintf(p, 1024, "%s/%s", getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", name);
  return p;
}

Test(engine, outcomes_are_counted_once_and_the_run_goes_on) {
  xr_bundle_t *b = bundle(MM(4, 8, 3) ", {\"name\": \"x::no_such_op\"}, " MM(2, 5, 7)
                          ", {\"name\": \"aten::mm\", \"args\": [{\"name\": \"self\", \"type\": "
                          "\"Tensor\", \"value\": {\"shape\": [2, 3], \"dtype\": \"float\"}}, "
                          "{\"name\": \"mat2\", \"type\": \"Tensor\", \"value\": {\"shape\": [4, "
                          "2], \"dtype\": \"float\"}}]}");
  xr_replay_options_t o = quick();
  seen_t s = {0};
  xr_replay_summary_t sum;
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  cr_assert_eq(xr_replay_run(b, &o, &observer, &sum), XR_OK, "%s", xr_last_error());
  cr_assert_eq(sum.total, 4);
  cr_assert_eq(sum.attempted, 4);
  cr_assert_eq(sum.succeeded, 2);
  cr_assert_eq(sum.unsupported, 1);
  cr_assert_eq(sum.failed, 1);
  cr_assert_eq(s.r[1].outcome, XR_OP_UNSUPPORTED);
  cr_assert(strstr(s.r[1].message, "no kernel for op 'x::no_such_op'"), "%s", s.r[1].message);
  cr_assert_eq(s.r[3].outcome, XR_OP_FAILED);
  cr_assert(strstr(s.r[3].message, "inner dimensions differ"), "%s", s.r[3].message);
  cr_assert_eq(s.r[0].iterations, 2);
  cr_assert_gt(s.r[0].median_us, 0);
  cr_assert_leq(s.r[0].min_us, s.r[0].median_us);
  cr_assert_leq(s.r[0].median_us, s.r[0].p90_us + 1e-9);
  cr_assert_eq(s.r[0].flops, 2.0 * 4 * 8 * 3);
  cr_assert(!strncmp(s.r[0].kernel, "cpu.", 4), "the fastest cpu kernel, not %s", s.r[0].kernel);

  /* --stop-on-error stops at the failed op; --op-filter and --op-limit select. */
  memset(&s, 0, sizeof s);
  o.stop_on_error = true;
  xr_bundle_t *c = bundle(MM(2, 3, 2) ", {\"name\": \"aten::mm\", \"args\": []}, " MM(2, 3, 2));
  cr_assert_eq(xr_replay_run(c, &o, &observer, &sum), XR_OK);
  cr_assert_eq(sum.attempted, 2);
  cr_assert_eq(sum.failed, 1);
  cr_assert(strstr(s.r[1].message, "argument 'self' (position 0) is missing"), "%s", s.r[1].message);
  o.stop_on_error = false;
  o.op_filter = "no_such";
  cr_assert_eq(xr_replay_run(b, &o, NULL, &sum), XR_OK);
  cr_assert_eq(sum.attempted, 1);
  o.op_filter = "aten::";
  o.op_limit = 2;
  cr_assert_eq(xr_replay_run(b, &o, NULL, &sum), XR_OK);
  cr_assert_eq(sum.attempted, 2);
  xr_bundle_destroy(c);
  xr_bundle_destroy(b);
}

static uint8_t *read_all(const char *path, size_t *n) {
  uint8_t *bytes;
  cr_assert_eq(xr_read_file(path, &bytes, n), XR_OK, "%s", xr_last_error());
  return bytes;
}

Test(engine, seeded_runs_reproduce_and_dumps_are_named_like_golden_targets) {
  xr_bundle_t *b = bundle(MM(5, 7, 3) ", {\"name\": \"aten::mm\", \"args\": [{\"name\": \"self\", "
                          "\"type\": \"Tensor\", \"value\": {\"shape\": [2, 3], \"dtype\": "
                          "\"c10::BFloat16\"}}, {\"name\": \"mat2\", \"type\": \"Tensor\", "
                          "\"value\": {\"shape\": [3, 2], \"dtype\": \"c10::BFloat16\"}}], "
                          "\"kwargs\": [{\"name\": \"out\", \"type\": \"Tensor(a!)\", \"value\": "
                          "{\"shape\": [2, 2], \"dtype\": \"c10::BFloat16\", \"init\": null}}]}");
  xr_replay_options_t o = quick();
  const char *dirs[3] = {tmp_path("dump_a"), tmp_path("dump_b"), tmp_path("dump_c")};
  uint64_t seeds[3] = {7, 7, 8};
  for (int i = 0; i < 3; i++) {
    o.dump_dir = dirs[i];
    o.seed = seeds[i];
    cr_assert_eq(xr_replay_run(b, &o, NULL, NULL), XR_OK, "%s", xr_last_error());
  }
  char p[3][1200];
  size_t n[3];
  uint8_t *d[3];
  for (int i = 0; i < 3; i++) {
    snprintf(p[i], sizeof p[i], "%s/op0_return0.npy", dirs[i]);
    d[i] = read_all(p[i], &n[i]);
  }
  cr_assert(n[0] == n[1] && !memcmp(d[0], d[1], n[0]), "same seed, same outputs");
  cr_assert(n[0] == n[2] && memcmp(d[0], d[2], n[0]) != 0, "another seed, other outputs");
  /* An out= argument is dumped under its name, in its own dtype (bf16 as <u2). */
  char out_path[1200];
  snprintf(out_path, sizeof out_path, "%s/op1_out.npy", dirs[0]);
  xr_npy_t npy;
  cr_assert_eq(xr_npy_load(out_path, &npy), XR_OK, "%s", xr_last_error());
  cr_assert_str_eq(npy.descr, "<u2");
  cr_assert_eq(npy.numel, 4);
  xr_npy_free(&npy);
  for (int i = 0; i < 3; i++) free(d[i]);
  xr_bundle_destroy(b);
}

Test(engine, timing_modes) {
  xr_bundle_t *b = bundle(MM(8, 8, 8));
  xr_replay_options_t o = quick();
  seen_t s = {0};
  o.cache = XR_CACHE_COLD;
  o.rotate = 3;
  o.iters = 5;
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_OK, "%s", xr_last_error());
  cr_assert_eq(s.r[0].outcome, XR_OP_SUCCEEDED, "%s", s.r[0].message);
  cr_assert_eq(s.r[0].iterations, 5);
  /* --min-time keeps iterating past --iters. */
  memset(&s, 0, sizeof s);
  o = quick();
  o.iters = 1;
  o.min_time_ms = 2;
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_OK);
  cr_assert_gt(s.r[0].iterations, 1);
  cr_assert_geq(s.r[0].timed_wall_ms, 2.0 * 0.99);
  cr_assert_str_eq(s.r[0].stop_reason, "iterations");
  xr_bundle_destroy(b);
}

Test(engine, the_noise_rule_stops_on_its_target_or_at_max_time) {
  xr_bundle_t *b = bundle(MM(64, 64, 64));
  xr_replay_options_t o = quick();
  seen_t s = {0};
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  o.stop = XR_STOP_NOISE;
  o.noise_percent = 1e-9; /* never met: timing ends at --max-time */
  o.max_time_ms = 50;
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_OK, "%s", xr_last_error());
  const xr_op_result_t *r = &s.r[0];
  cr_assert_eq(r->outcome, XR_OP_SUCCEEDED, "%s", r->message);
  cr_assert_str_eq(r->stop_reason, "max-time");
  cr_assert_not(r->noise_met);
  /* It stops at the first batch boundary past the limit; a batch is about 10 ms of work. */
  cr_assert(r->timed_wall_ms >= 50 && r->timed_wall_ms < 1000, "%g ms", r->timed_wall_ms);
  cr_assert_geq(r->batches, 1, "--max-time wins over --min-samples, as nvbench's timeout");
  /* A loose target: met, unless the machine was crowded throughout (then the rule, which
   * judges uncrowded batches only, keeps going to --max-time and says so). */
  memset(&s, 0, sizeof s);
  o.noise_percent = 1000;
  o.min_samples = 40;
  o.max_time_ms = 2000;
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_OK);
  r = &s.r[0];
  if (!strcmp(r->stop_reason, "noise")) {
    /* Met on the uncrowded batches; a result timed mostly crowded is not counted as met. */
    cr_assert(r->contended || (r->noise_met && r->noise_percent >= 0 && r->noise_percent <= 1000),
              "noise %g%%", r->noise_percent);
    cr_assert_geq(r->iterations, 40);
  } else {
    /* Crowded batches are set aside, so a short op can reach the iteration cap first. */
    cr_assert(!strcmp(r->stop_reason, "max-time") || !strcmp(r->stop_reason, "max-iterations"),
              "stopped by %s", r->stop_reason);
    cr_assert(r->contended || r->crowded_batches > 0, "only a crowded machine stops it");
  }
  cr_assert(r->runnable_mean >= 0);
  cr_assert(r->p25_us <= r->median_us && r->median_us <= r->p75_us);
  cr_assert_float_eq(r->iqr_us, r->p75_us - r->p25_us, 1e-9);
  xr_bundle_destroy(b);
}

Test(engine, the_timed_loop_leaves_the_warm_up_out) {
  xr_bundle_t *b = bundle(MM(96, 96, 96));
  xr_replay_options_t o = quick();
  seen_t s = {0};
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  o.warmup = 4000;
  o.iters = 40;
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_OK);
  const xr_op_result_t *r = &s.r[0];
  /* Counting the warm-up would make this 100x the mean; what is left is the host's own
   * overhead, which a loaded 2-core machine has seen reach 10x (hence the wide margin). */
  cr_assert_lt(r->host_us_per_iteration, 30 * r->mean_us, "host %g us, mean %g us",
               r->host_us_per_iteration, r->mean_us);
  cr_assert_float_eq(r->host_us_per_iteration, r->timed_wall_ms * 1000 / r->iterations, 1e-6);
  xr_bundle_destroy(b);
}

Test(engine, cold_and_warm_in_one_run_graphs_rotation_and_the_peak_basis) {
  xr_bundle_t *b = bundle(MM(8, 8, 8));
  xr_replay_options_t o = quick();
  seen_t s = {0};
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  o.cache = XR_CACHE_BOTH;
  o.flush_bytes = 8u << 20;
  o.calibrate = true;
  o.rotate = XR_ROTATE_AUTO;
  o.iters = 3;
  xr_replay_summary_t run;
  cr_assert_eq(xr_replay_run(b, &o, &observer, &run), XR_OK, "%s", xr_last_error());
  const xr_op_result_t *r = &s.r[0];
  cr_assert_eq(r->outcome, XR_OP_SUCCEEDED, "%s", r->message);
  cr_assert_eq(r->iterations, 3);
  cr_assert_eq(r->cold_iterations, 3);
  cr_assert_gt(r->cold_median_us, 0);
  cr_assert_eq(r->flush_bytes, 8u << 20);
  cr_assert_str_eq(r->launch, "held", "the cpu driver's held stream");
  const xr_hal_device_properties_t *p = &run.devices[0].properties;
  cr_assert_eq(r->rotate, xr_rotate_copies(XR_ROTATE_AUTO, p, 3 * 8 * 8 * sizeof(float)));
  cr_assert_gt(r->rotate, 1, "a 768-byte op rotates among many copies");
  /* The warm figures of a memory-bound op whose data stays in cache: held against the cache's
   * measured bandwidth, not DRAM's (or, where the cache was not measured, no percentage). */
  if (!strcmp(r->bound, "memory")) {
    if (p->measured.cache_bandwidth.value > 0) {
      cr_assert(strstr(r->peak_basis, " cache bandwidth (calibrated)"), "%s", r->peak_basis);
      cr_assert_geq(r->peak_percent, 0, "%s", r->peak_basis);
    } else {
      cr_assert(strstr(r->peak_basis, "cache"), "%s", r->peak_basis);
      cr_assert_lt(r->peak_percent, 0, "%g%% of %s", r->peak_percent, r->peak_basis);
    }
  }
  /* Graph launches time back-to-back executions, so they cannot time cold caches. */
  o = quick();
  o.launch = XR_LAUNCH_GRAPH;
  o.cache = XR_CACHE_COLD;
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "--launch=eager"), "%s", xr_last_error());
  /* On cpu a graph launch is the held stream it always uses. */
  memset(&s, 0, sizeof s);
  o.cache = XR_CACHE_WARM;
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_OK);
  cr_assert_str_eq(s.r[0].launch, "held");
  cr_assert_eq(s.r[0].graph_executions, 0);
  xr_bundle_destroy(b);
}

Test(engine, a_cold_memory_bound_op_is_held_against_dram) {
  xr_bundle_t *b = bundle(MM(8, 8, 8));
  xr_replay_options_t o = quick();
  seen_t s = {0};
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  o.cache = XR_CACHE_COLD; /* the default flush: twice every cache */
  o.iters = 2;
  o.calibrate = true;
  xr_replay_summary_t run;
  cr_assert_eq(xr_replay_run(b, &o, &observer, &run), XR_OK);
  const xr_op_result_t *r = &s.r[0];
  if (run.devices[0].properties.measured.memory_bandwidth.value <= 0)
    cr_skip_test("the cpu's memory bandwidth could not be calibrated: %s", r->peak_basis);
  if (!strcmp(r->bound, "compute")) {
    cr_assert(strstr(r->peak_basis, "peak"), "%s", r->peak_basis);
  } else {
    cr_assert_geq(r->peak_percent, 0);
    cr_assert_str_eq(r->peak_basis, "DRAM bandwidth (calibrated)");
  }
  xr_bundle_destroy(b);
}

static int ones_calls;

/* Makes both GEMM inputs all ones: each output element is then K. */
static xr_status_t all_ones(xr_init_context_t *c) {
  for (size_t i = 0; i < c->plan->input_count; i++)
    for (size_t k = 0; k < c->sizes[i] / sizeof(float); k++) ((float *)c->host[i])[k] = 1.0f;
  snprintf(c->policy, c->policy_size, "all ones (%s)", c->params ? c->params : "no params");
  ones_calls++;
  return XR_OK;
}

static xr_status_t all_twos(xr_init_context_t *c) {
  for (size_t i = 0; i < c->plan->input_count; i++)
    for (size_t k = 0; k < c->sizes[i] / sizeof(float); k++) ((float *)c->host[i])[k] = 2.0f;
  snprintf(c->policy, c->policy_size, "all twos");
  return XR_OK;
}

Test(engine, custom_initializers_registered_later_override) {
  xr_bundle_t *b = bundle(MM(3, 6, 2));
  xr_replay_options_t o = quick();
  o.dump_dir = tmp_path("dump_init");
  const xr_init_override_t overrides[] = {
      {"aten::addmm", "ignored"}, {"aten::mm", "first"}, {"aten::mm", "my-params"}};
  o.init_overrides = overrides;
  o.init_override_count = 3; /* the last for aten::mm wins */
  seen_t s = {0};
  cr_assert_eq(xr_replay_register_initializer("aten::mm", all_twos), XR_OK);
  cr_assert_eq(xr_replay_register_initializer("aten::mm", all_ones), XR_OK);
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_OK, "%s", xr_last_error());
  cr_assert_eq(ones_calls, 1);
  cr_assert_str_eq(s.r[0].init_policy, "all ones (my-params)");
  char path[1200];
  snprintf(path, sizeof path, "%s/op0_return0.npy", o.dump_dir);
  xr_npy_t npy;
  cr_assert_eq(xr_npy_load(path, &npy), XR_OK);
  for (int i = 0; i < 6; i++) cr_assert_float_eq(((float *)npy.data)[i], 6.0f, 0, "element %d", i);
  xr_npy_free(&npy);
  xr_bundle_destroy(b);
}

Test(engine, report_is_complete_json_after_every_op) {
  xr_bundle_t *b = bundle(MM(2, 2, 2) ", " MM(3, 3, 3) ", {\"name\": \"x::nope\"}");
  xr_replay_options_t o = quick();
  seen_t s = {0};
  s.report_path = tmp_path("report.json");
  s.options = &o;
  xr_replay_summary_t sum;
  xr_replay_observer_t observer = {.started = started, .result = observe, .context = &s};
  cr_assert_eq(xr_replay_run(b, &o, &observer, &sum), XR_OK);
  cr_assert_eq(s.ops_in_report_after_first, 1);
  cr_assert_eq(xr_report_close(s.report, &sum), XR_OK);
  size_t n;
  uint8_t *bytes = read_all(s.report_path, &n);
  cJSON *j = cJSON_Parse((char *)bytes);
  cr_assert_not_null(j);
  cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "ops")), 3);
  cJSON *summary = cJSON_GetObjectItem(j, "summary");
  cr_assert_eq(cJSON_GetObjectItem(summary, "unsupported")->valueint, 1);
  cJSON *op0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "ops"), 0);
  cr_assert(!strncmp(cJSON_GetObjectItem(op0, "kernel")->valuestring, "cpu.", 4));
  cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(op0, "median_us")));
  cr_assert_str_eq(cJSON_GetObjectItem(j, "driver")->valuestring, "cpu");
  cJSON_Delete(j);
  free(bytes);
  /* Read back as the comparison of reports does. */
  xr_report_contents_t *c;
  cr_assert_eq(xr_report_read(s.report_path, &c), XR_OK, "%s", xr_last_error());
  cr_assert(c->finished && c->op_count == 3 && !strcmp(c->hal, "cpu"));
  cr_assert_gt(c->ops[0].median_us, 0);
  cr_assert_lt(c->ops[2].median_us, 0, "an unsupported op has no time");
  cr_assert_str_eq(c->ops[2].outcome, "unsupported");
  cr_assert_eq(xr_report_find(c, 1, "aten::mm"), &c->ops[1]);
  cr_assert_null(xr_report_find(c, 1, "aten::bmm"));
  /* The timing's account of itself, as the HTML page and compare read it. */
  const xr_report_entry_t *e = &c->ops[0];
  cr_assert_str_eq(e->stop_reason, "iterations");
  cr_assert_str_eq(e->launch, "held");
  cr_assert(e->noise_met == 0 || e->noise_met == 1);
  cr_assert(e->contended == 0 || e->contended == 1);
  cr_assert(isfinite(e->iqr_us) && e->iqr_us >= 0);
  cr_assert_eq(c->ops[2].contended, -1, "an op never timed has no contention");
  xr_report_contents_free(c);
  xr_bundle_destroy(b);
}

Test(engine, check_compares_with_the_reference) {
  xr_bundle_t *b = bundle(MM(9, 17, 5));
  xr_replay_options_t o = quick();
  o.check = true;
  seen_t s = {0};
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_OK);
  cr_assert(s.r[0].checked && s.r[0].check_passed);
  cr_assert_eq(s.r[0].output_count, 1);
  cr_assert_str_eq(s.r[0].outputs[0].target, "return0");
  cr_assert_leq(s.r[0].outputs[0].nmse, 1e-10, "fp32 GEMM against the double reference: %g",
                s.r[0].outputs[0].nmse);
  xr_bundle_destroy(b);
}

typedef struct pairs {
  size_t count;
  xr_op_result_t r[8];
  size_t position[8];
} pairs_t;

static void keep(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  pairs_t *p = ctx;
  cr_assert_eq(count, 2);
  if (p->count < 8) p->r[p->count] = *r, p->position[p->count] = position;
  p->count++;
}

/* Several devices: each op runs on each in turn and its outputs are compared, in memory, with
 * the first device's by the function --check uses. */
Test(engine, several_devices_compare_each_op_with_the_first) {
  xr_bundle_t *b = bundle(MM(6, 5, 4) ", " MM(3, 9, 2));
  xr_replay_options_t o = quick();
  o.device = "cpu,cpu";
  o.check = true;
  o.dump_dir = tmp_path("dump_two");
  pairs_t p = {0};
  xr_replay_summary_t sum;
  xr_replay_observer_t observer = {.result = keep, .context = &p};
  cr_assert_eq(xr_replay_run(b, &o, &observer, &sum), XR_OK, "%s", xr_last_error());
  cr_assert_eq(p.count, 4);
  for (size_t i = 0; i < 4; i++) {
    cr_assert_eq(p.r[i].index, i / 2, "op by op");
    cr_assert_eq(p.position[i], i / 2);
    cr_assert_eq(p.r[i].device_index, i % 2, "each op on the devices in order");
    cr_assert(p.r[i].checked && p.r[i].check_passed);
    cr_assert_eq(p.r[i].compared, i % 2 == 1, "only the second device is compared");
  }
  /* The same device and inputs: identical outputs. */
  cr_assert_eq(p.r[1].outputs[0].nmse_vs_first, 0.0);
  cr_assert(!p.r[1].outputs[0].nonfinite_vs_first);
  cr_assert_eq(sum.device_count, 2);
  cr_assert_str_eq(sum.devices[1].spec, "cpu");
  cr_assert(sum.devices[0].succeeded == 2 && sum.devices[1].succeeded == 2);
  cr_assert_eq(sum.succeeded, 2, "the top-level counts are the first device's");
  /* One dump folder per device. */
  char path[1200];
  snprintf(path, sizeof path, "%s/cpu/op1_return0.npy", o.dump_dir);
  cr_assert_eq(access(path, R_OK), 0, "%s", path);
  xr_bundle_destroy(b);
}

Test(engine, the_nmse_of_two_storages_of_one_view) {
  xr_tensor_t view = {.dtype = XR_DTYPE_F32, .rank = 1, .shape = {3}, .strides = {2}, .offset = 1};
  float expected[7] = {99, 1, 99, 2, 99, 2, 99}, close[7] = {0, 1, 0, 2, 0, 3, 0};
  bool nonfinite = true;
  /* Only the view's elements count: (3 - 2)^2 / (1 + 4 + 4). */
  cr_assert_float_eq(xr_replay_nmse(&view, close, expected, &nonfinite), 1.0 / 9.0, 1e-12);
  cr_assert(!nonfinite);
  close[3] = NAN;
  xr_replay_nmse(&view, close, expected, &nonfinite);
  cr_assert(nonfinite, "a NaN where the expected value is finite");
}

Test(engine, unavailable_hal_is_reported_with_its_reason) {
  xr_bundle_t *b = bundle(MM(2, 2, 2));
  xr_replay_options_t o = quick();
  o.device = "hip";
  xr_status_t st = xr_replay_run(b, &o, NULL, NULL);
  cr_assert_eq(st, XR_UNAVAILABLE, "%s", xr_last_error());
  cr_assert(strstr(xr_last_error(), "libamdhip64"), "%s", xr_last_error());
  o.device = "bogus:1";
  cr_assert_neq(xr_replay_run(b, &o, NULL, NULL), XR_OK);
  o.device = "cpu,hip"; /* every device opens before the first op runs */
  cr_assert_eq(xr_replay_run(b, &o, NULL, NULL), XR_UNAVAILABLE);
  o.device = ",";
  cr_assert_eq(xr_replay_run(b, &o, NULL, NULL), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "no device in \",\""), "%s", xr_last_error());
  xr_bundle_destroy(b);
}

/* A ROCm paged-attention op extracted from a vLLM trace carries the iteration's prefill/decode
 * mix as hints; its initializer lays query_start_loc out from them (3 sequences: one prefill of
 * 5 tokens, two decodes), and the op still matches the reference. */
#define T(name, type, shape, extra)                                                           \
  "{\"name\": \"" name "\", \"type\": \"" type "\", \"value\": {\"shape\": " shape \
  ", \"dtype\": \"float\"" extra "}}"
#define I(name, v) "{\"name\": \"" name "\", \"type\": \"int\", \"value\": " #v "}"

Test(engine, paged_attention_query_layout_follows_trace_hints) {
  xr_bundle_t *b = bundle(
      "{\"name\": \"_rocm_C::paged_attention\", \"args\": ["
      T("out", "Tensor(a!)", "[7, 2, 64]", ", \"init\": null") ","
      T("exp_sums", "Tensor", "[3, 2, 1]", ", \"init\": null") ","
      T("max_logits", "Tensor", "[3, 2, 1]", ", \"init\": null") ","
      T("tmp_out", "Tensor", "[3, 2, 1, 64]", ", \"init\": null") ","
      T("query", "Tensor", "[7, 2, 64]", "") ","
      T("key_cache", "Tensor", "[15, 2, 16, 16, 4]", "") ","
      T("value_cache", "Tensor", "[15, 2, 64, 16]", "") ","
      I("num_kv_heads", 2) ", {\"name\": \"scale\", \"type\": \"float\", \"value\": 0.125},"
      "{\"name\": \"block_tables\", \"type\": \"Tensor\", \"value\": {\"shape\": [3, 5], \"dtype\": \"int\"}},"
      "{\"name\": \"seq_lens\", \"type\": \"Tensor\", \"value\": {\"shape\": [3], \"dtype\": \"int\"}},"
      "{\"name\": \"query_start_loc\", \"type\": \"Tensor?\", \"value\": {\"shape\": [4], \"dtype\": \"int\"}},"
      I("block_size", 16) "," I("max_seq_len", 64) ","
      "{\"name\": \"alibi_slopes\", \"type\": \"Tensor?\", \"value\": null},"
      "{\"name\": \"kv_cache_dtype\", \"type\": \"str\", \"value\": \"auto\"},"
      T("k_scale", "Tensor", "[1]", ", \"init\": \"ones\"") ","
      T("v_scale", "Tensor", "[1]", ", \"init\": \"ones\"") ","
      "{\"name\": \"fp8_out_scale\", \"type\": \"Tensor?\", \"value\": null}],"
      "\"hints\": {\"prefill_seqs\": 1, \"prefill_tokens\": 5, \"decode_seqs\": 2, \"decode_tokens\": 2}}");
  xr_replay_options_t o = quick();
  o.check = true;
  seen_t s = {0};
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_OK, "%s", xr_last_error());
  cr_assert_eq(s.r[0].outcome, XR_OP_SUCCEEDED, "%s", s.r[0].message);
  cr_assert(strstr(s.r[0].init_policy, "query_start_loc from the trace: 1 prefill (5 tokens) + 2 decode"),
            "%s", s.r[0].init_policy);
  xr_bundle_destroy(b);
}

/* A product whose reference does not fit whole is checked on the first rows of A that do. The
 * op needs 352 KiB of host memory (A [256, 64], B [64, 64] and the result, fp32, then the cpu
 * device's copy and the result read back), its whole reference 208 KiB more; 100,000 bytes
 * are left for it. Cut to R rows it needs B (16 KiB) and R rows of A and of the result (256
 * bytes a row each) with the result read back: 16384 + 768 R bytes, so R = 64 (128 would
 * need 114,688). */
Test(engine, a_reference_too_large_is_checked_on_the_rows_that_fit) {
  xr_bundle_t *b = bundle(MM(256, 64, 64));
  xr_replay_options_t o = quick();
  o.check = true;
  o.max_memory_bytes = 360448 + 100000;
  seen_t s = {0};
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  xr_replay_summary_t sum;
  cr_assert_eq(xr_replay_run(b, &o, &observer, &sum), XR_OK, "%s", xr_last_error());
  const xr_op_result_t *r = &s.r[0];
  cr_assert_eq(r->outcome, XR_OP_SUCCEEDED, "%s", r->message);
  cr_assert(r->checked && r->check_passed, "%s", r->check_note);
  cr_assert_eq(r->check_rows, 64);
  cr_assert_eq(r->result_rows, 256);
  cr_assert_eq(r->check_note[0], '\0');
  cr_assert_eq(sum.devices[0].unchecked, 0);
  xr_replay_plan_t *plan;
  cr_assert_eq(xr_replay_plan(b, &o, &plan), XR_OK, "%s", xr_last_error());
  cr_assert(strstr(plan->entries[0].message, "checked on its first 64 of 256 rows"), "%s",
            plan->entries[0].message);
  xr_replay_plan_free(plan);
  xr_bundle_destroy(b);
}

/* A plan counts paged attention's work with every sequence at max_seq_len; once the initializer
 * has settled the lengths (here the list policy: 10 and 40 tokens of at most 64), the op's
 * result counts the keys those sequences hold. Hand-worked for 2 heads of 64, fp32, 16-token
 * blocks: 10 + 40 (query, key) pairs per head, 2 x 2 x 64 flops each; keys and values of 50
 * tokens, 4 block-table entries (1 + 3 blocks), seq_lens, the queries and outputs. */
Test(engine, paged_attention_counts_the_lengths_the_initializer_settles) {
  xr_bundle_t *b = bundle(
      "{\"name\": \"_C::paged_attention_v1\", \"args\": ["
      T("out", "Tensor(a!)", "[2, 2, 64]", ", \"init\": null") ","
      T("query", "Tensor", "[2, 2, 64]", "") ","
      T("key_cache", "Tensor", "[16, 2, 16, 16, 4]", "") ","
      T("value_cache", "Tensor", "[16, 2, 64, 16]", "") ","
      I("num_kv_heads", 2) ", {\"name\": \"scale\", \"type\": \"float\", \"value\": 0.125},"
      "{\"name\": \"block_tables\", \"type\": \"Tensor\", \"value\": {\"shape\": [2, 4], \"dtype\": \"int\"}},"
      "{\"name\": \"seq_lens\", \"type\": \"Tensor\", \"value\": {\"shape\": [2], \"dtype\": \"int\"}},"
      I("block_size", 16) "," I("max_seq_len", 64) ","
      "{\"name\": \"alibi_slopes\", \"type\": \"Tensor?\", \"value\": null},"
      "{\"name\": \"kv_cache_dtype\", \"type\": \"str\", \"value\": \"auto\"},"
      T("k_scale", "Tensor", "[1]", ", \"init\": \"ones\"") ","
      T("v_scale", "Tensor", "[1]", ", \"init\": \"ones\"") "]}");
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_OK, "%s", xr_last_error());
  cr_assert_float_eq(plan.flops, 2.0 * 2 * (2 * 64) * 2 * 64, 1e-9, "the plan: both at 64");
  xr_kernel_plan_free(&plan);
  xr_replay_options_t o = quick();
  o.check = true;
  const xr_init_override_t lens[] = {{"_C::paged_attention_v1", "10,40"}};
  o.init_overrides = lens;
  o.init_override_count = 1;
  seen_t s = {0};
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_OK, "%s", xr_last_error());
  cr_assert_eq(s.r[0].outcome, XR_OP_SUCCEEDED, "%s", s.r[0].message);
  cr_assert(strstr(s.r[0].init_policy, "seq_lens 10,40"), "%s", s.r[0].init_policy);
  cr_assert_float_eq(s.r[0].flops, 2.0 * 2 * (10 + 40) * 2 * 64, 1e-9, "%g", s.r[0].flops);
  cr_assert_float_eq(s.r[0].bytes,
                     2.0 * 50 * 2 * 64 * 4 /* K, V */ + 4.0 * 4 /* table entries */ +
                         4.0 * 2 /* seq_lens */ + 2.0 * (2 * 2) * 64 * 4 /* queries, outputs */,
                     1e-9, "%g", s.r[0].bytes);
  xr_bundle_destroy(b);
}

/* The default normal inputs, recomputed here from their definition (docs/replay.md): splitmix64
 * seeded per (seed, op, tensor), one draw per element, its four 16-bit quarters summed as
 * uniforms, centred and scaled. Large tensors are filled in ranges on several threads; every
 * element must still come out of the one stream, and the values must have N(0, 1)'s first
 * moments. */
static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double normal_from(uint64_t *s) {
  uint64_t x = splitmix(s);
  double sum = 0;
  for (int q = 0; q < 4; q++) sum += ((double)(x >> 16 * q & 0xffff) + 0.5) / 65536.0;
  return (sum - 2.0) * sqrt(3.0);
}

Test(engine, default_inputs_follow_the_documented_stream) {
  xr_bundle_t *b = bundle(
      "{\"name\": \"aten::_to_copy\", \"args\": [{\"name\": \"self\", \"type\": \"Tensor\", "
      "\"value\": {\"shape\": [1100, 2001], \"dtype\": \"float\"}}]}, "
      "{\"name\": \"aten::_to_copy\", \"args\": [{\"name\": \"self\", \"type\": \"Tensor\", "
      "\"value\": {\"shape\": [3, 700001], \"dtype\": \"c10::BFloat16\"}}]}");
  xr_replay_options_t o = quick();
  o.dump_dir = tmp_path("dump_stream");
  o.seed = 1234;
  cr_assert_eq(xr_replay_run(b, &o, NULL, NULL), XR_OK, "%s", xr_last_error());
  for (int op = 0; op < 2; op++) {
    char path[1200];
    snprintf(path, sizeof path, "%s/op%d_return0.npy", o.dump_dir, op);
    xr_npy_t npy;
    cr_assert_eq(xr_npy_load(path, &npy), XR_OK, "%s", xr_last_error());
    uint64_t s = o.seed ^ (0x632be59bd9b4e019ull * (uint64_t)(op + 1)) ^ (0x8cb92ba72f3d8dd7ull * 1);
    splitmix(&s);
    double sum = 0, squares = 0, fourth = 0;
    for (size_t i = 0; i < (size_t)npy.numel; i++) {
      float want = (float)normal_from(&s);
      sum += want, squares += (double)want * want, fourth += (double)want * want * want * want;
      if (op == 0) {
        cr_assert_eq(((float *)npy.data)[i], want, "op 0, element %zu", i);
      } else {
        uint32_t u;
        memcpy(&u, &want, 4);
        uint16_t bf = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); /* no NaN here */
        cr_assert_eq(((uint16_t *)npy.data)[i], bf, "op 1, element %zu", i);
      }
    }
    /* Mean 0, variance 1; the fourth moment 2.7 (a normal's is 3, Irwin-Hall n = 4's 3 - 6/20). */
    double n = (double)npy.numel;
    cr_assert_lt(fabs(sum / n), 0.005, "mean %g", sum / n);
    cr_assert_lt(fabs(squares / n - 1), 0.005, "variance %g", squares / n);
    cr_assert_lt(fabs(fourth / n - 2.7), 0.03, "fourth moment %g", fourth / n);
    xr_npy_free(&npy);
  }
  xr_bundle_destroy(b);
}

/* An op whose tensors exceed the host's memory is reported before anything is allocated, and
 * the run goes on: overcommitted memory would otherwise end in the OOM killer. 2^40 floats are
 * 4 TiB, held twice on the cpu (initial contents and the device copy). */
Test(engine, ops_too_large_for_the_machine_are_unsupported_not_killed) {
  xr_bundle_t *b = bundle(MM(1048576, 1048576, 1) ", " MM(2, 3, 2));
  xr_replay_options_t o = quick();
  seen_t s = {0};
  xr_replay_summary_t sum;
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  cr_assert_eq(xr_replay_run(b, &o, &observer, &sum), XR_OK, "%s", xr_last_error());
  cr_assert_eq(s.r[0].outcome, XR_OP_UNSUPPORTED);
  cr_assert(strstr(s.r[0].message, "does not fit: its tensors need 8192.02 GiB of host memory, "),
            "%s", s.r[0].message);
  cr_assert_eq(s.r[1].outcome, XR_OP_SUCCEEDED);
  xr_bundle_destroy(b);
}

/* TraceLens IR as TraceLens writes it: "" for a string the profiler dropped runs with the op's
 * default (marked defaulted), and a Tensor[] it could not record (null) is unsupported with the
 * reason, not failed. */
Test(engine, tracelens_dropped_strings_default_and_unrecorded_lists_are_unsupported) {
  const char *ir =
      "[{\"op_name\": \"aten::gelu\", \"replay_ir\": {\"list_pos_args\": [{\"arg_name\": \"self\", "
      "\"arg_type\": \"Tensor\", \"value\": {\"shape\": [4, 8], \"dtype\": \"float\", "
      "\"strides\": [8, 1]}}], \"list_kwargs\": [{\"arg_name\": \"approximate\", \"arg_type\": "
      "\"str\", \"value\": \"\"}]}},"
      "{\"op_name\": \"aten::cat\", \"replay_ir\": {\"list_pos_args\": [{\"arg_name\": "
      "\"tensors\", \"arg_type\": \"Tensor[]\", \"value\": null}, {\"arg_name\": \"dim\", "
      "\"arg_type\": \"int\", \"value\": 1}], \"list_kwargs\": []}}]";
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)ir, strlen(ir), "tl.json", ".", NULL, &b), XR_OK,
               "%s", xr_last_error());
  cr_assert(b->ops[0].kwargs[0].defaulted);
  cr_assert_eq(b->ops[0].kwargs[0].value.kind, XR_VALUE_NULL);
  xr_replay_options_t o = quick();
  seen_t s = {0};
  xr_replay_summary_t sum;
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  cr_assert_eq(xr_replay_run(b, &o, &observer, &sum), XR_OK, "%s", xr_last_error());
  cr_assert_eq(s.r[0].outcome, XR_OP_SUCCEEDED, "%s", s.r[0].message);
  cr_assert_eq(s.r[1].outcome, XR_OP_UNSUPPORTED);
  cr_assert(strstr(s.r[1].message, "argument 'tensors' (Tensor[]) was not recorded (null)"), "%s",
            s.r[1].message);
  xr_bundle_destroy(b);
}

/* --max-memory: the same check against an explicit cap. */
Test(engine, max_memory_caps_what_an_op_may_take) {
  xr_bundle_t *b = bundle(MM(64, 64, 64) ", " MM(2, 3, 2));
  xr_replay_options_t o = quick();
  o.max_memory_bytes = 8192;
  seen_t s = {0};
  xr_replay_summary_t sum;
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  cr_assert_eq(xr_replay_run(b, &o, &observer, &sum), XR_OK, "%s", xr_last_error());
  cr_assert_eq(s.r[0].outcome, XR_OP_UNSUPPORTED);
  /* 3 x 16 KiB of initial contents, as much on the cpu device, and the 16 KiB output read back */
  cr_assert(strstr(s.r[0].message, "does not fit: its tensors need 114688 bytes of host memory, "
                                   "8192 bytes allowed by --max-memory"),
            "%s", s.r[0].message);
  cr_assert_eq(s.r[1].outcome, XR_OP_SUCCEEDED, "%s", s.r[1].message);
  xr_bundle_destroy(b);
}

/* A report from elsewhere whose op position is no position is rejected, naming the field. */
Test(engine, reports_with_impossible_positions_are_rejected) {
  const char *path = tmp_path("bad_report.json");
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("{\"ops\": [{\"index\": 1e300, \"name\": \"aten::mm\", \"outcome\": \"ok\"}]}", f);
  fclose(f);
  xr_report_contents_t *c = NULL;
  cr_assert_eq(xr_report_read(path, &c), XR_INVALID_ARGUMENT);
  cr_assert_null(c);
  cr_assert(strstr(xr_last_error(), "ops[0].index: not an op position"), "%s", xr_last_error());
  /* The timing fields: the wrong kind of value is an error that names it. */
  static const char *const bad[][2] = {
      {"\"contention\": 3", "ops[0].contention: not an object"},
      {"\"contention\": {\"contended\": \"yes\"}", "ops[0].contention.contended: not a bool"},
      {"\"noise_met\": 1", "ops[0].noise_met: not a bool"},
      {"\"noise_percent\": \"low\"", "ops[0].noise_percent: not a number"},
      /* the report fuzzer's finding: an infinite median drew an infinitely wide bar */
      {"\"median_us\": 7587.e4035", "ops[0].median_us: not a finite number"},
      {"\"stop_reason\": 7", "ops[0].stop_reason: not a string"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    f = fopen(path, "w");
    fprintf(f, "{\"ops\": [{\"index\": 0, \"name\": \"aten::mm\", \"outcome\": \"ok\", %s}]}",
            bad[i][0]);
    fclose(f);
    cr_assert_eq(xr_report_read(path, &c), XR_INVALID_ARGUMENT, "%s", bad[i][0]);
    cr_assert(strstr(xr_last_error(), bad[i][1]), "%s", xr_last_error());
  }
}

/* ------------------------------------------------------------------------------------------ */
/* xr_replay_plan: the run's decision, made without running                                    */

#define MM_TIMED(m, k, n, count, us)                                                          \
  "{\"name\": \"aten::mm\", \"args\": [{\"name\": \"self\", \"type\": \"Tensor\", \"value\": " \
  "{\"shape\": [" #m ", " #k "], \"dtype\": \"float\"}}, {\"name\": \"mat2\", \"type\": "     \
  "\"Tensor\", \"value\": {\"shape\": [" #k ", " #n "], \"dtype\": \"float\"}}], \"count\": " \
  #count ", \"timing\": {\"gpu_time_us\": " #us ", \"kernels\": []}}"

/* Every op's outcome, kernel and sentence in the plan are the run's, and so is the share of the
 * recorded GPU time: an unknown op, a malformed one, one over --max-memory, two that run. */
Test(engine, plan_decides_what_the_run_does) {
#define TIMING(us) "\"timing\": {\"gpu_time_us\": " #us ", \"kernels\": []}"
  xr_bundle_t *b = bundle(MM_TIMED(4, 8, 3, 3, 30.0) ", "
                          "{\"name\": \"x::no_such_op\", " TIMING(10.0) "}, "
                          "{\"name\": \"aten::mm\", \"args\": [], " TIMING(5.0) "}, "
                          MM_TIMED(64, 64, 64, 1, 40.0) ", " MM_TIMED(2, 3, 2, 2, 15.0));
#undef TIMING
  xr_replay_options_t o = quick();
  o.max_memory_bytes = 8192;
  xr_replay_plan_t *plan;
  cr_assert_eq(xr_replay_plan(b, &o, &plan), XR_OK, "%s", xr_last_error());
  seen_t s = {0};
  xr_replay_summary_t sum;
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  cr_assert_eq(xr_replay_run(b, &o, &observer, &sum), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan->total, 5);
  cr_assert_eq(plan->attempted, 5);
  cr_assert_eq(plan->device_count, 1);
  cr_assert_eq(plan->devices[0].status, XR_OK);
  cr_assert_str_eq(plan->devices[0].properties.driver, "cpu");
  for (size_t i = 0; i < 5; i++) {
    const xr_plan_entry_t *e = &plan->entries[i];
    cr_assert_eq(e->index, i);
    cr_assert_eq(e->outcome, s.r[i].outcome, "op %zu: %s / %s", i, e->message, s.r[i].message);
    cr_assert_str_eq(e->message, s.r[i].message);
    cr_assert_str_eq(e->kernel, s.r[i].kernel);
    cr_assert_float_eq(e->flops, s.r[i].flops, 1e-9);
    cr_assert_float_eq(e->trace_us, s.r[i].trace_us, 1e-9);
  }
  cr_assert_eq(plan->entries[0].outcome, XR_OP_SUCCEEDED);
  cr_assert_float_eq(plan->entries[0].trace_us, 10.0, 1e-9, "per call: 30 us over 3 calls");
  cr_assert_eq(plan->entries[1].outcome, XR_OP_UNSUPPORTED);
  cr_assert(strstr(plan->entries[1].message, "no kernel for op 'x::no_such_op'"), "%s",
            plan->entries[1].message);
  cr_assert_eq(plan->entries[2].outcome, XR_OP_FAILED);
  cr_assert(strstr(plan->entries[3].message, "allowed by --max-memory"), "%s",
            plan->entries[3].message);
  cr_assert_eq(plan->devices[0].runnable, sum.succeeded);
  cr_assert_eq(plan->devices[0].unsupported, sum.unsupported);
  cr_assert_eq(plan->devices[0].failed, sum.failed);
  cr_assert_float_eq(plan->trace_total_us, 100.0, 1e-9);
  cr_assert_float_eq(plan->trace_total_us, sum.trace_total_us, 1e-9);
  cr_assert_float_eq(plan->devices[0].trace_covered_us, 45.0, 1e-9);
  cr_assert_float_eq(plan->devices[0].trace_covered_us, sum.trace_covered_us, 1e-9);
  xr_replay_plan_free(plan);

  /* --op-filter and --op-limit select as in the run; the total stays the bundle's. */
  o.op_filter = "aten::";
  o.op_limit = 2;
  cr_assert_eq(xr_replay_plan(b, &o, &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan->attempted, 2);
  cr_assert_eq(plan->entries[1].index, 2);
  cr_assert_float_eq(plan->trace_total_us, 100.0, 1e-9);
  xr_replay_plan_free(plan);
  xr_bundle_destroy(b);
}

/* A HAL that cannot be opened is kept with its reason while another plans; alone, it is the
 * run's UNAVAILABLE; an unknown HAL is a bad argument, for the plan and the run alike. */
Test(engine, plan_keeps_an_unavailable_hal_with_its_reason) {
  xr_bundle_t *b = bundle(MM_TIMED(4, 8, 3, 1, 30.0));
  xr_replay_options_t o = quick();
  o.device = "cpu,hip";
  xr_replay_plan_t *plan;
  cr_assert_eq(xr_replay_plan(b, &o, &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan->device_count, 2);
  cr_assert_eq(plan->devices[0].runnable, 1);
  cr_assert_eq(plan->devices[1].status, XR_UNAVAILABLE);
  cr_assert(strstr(plan->devices[1].message, "libamdhip64"), "%s", plan->devices[1].message);
  cr_assert_eq(plan->devices[1].runnable + plan->devices[1].unsupported, 0, "counted nowhere");
  cr_assert_float_eq(plan->devices[1].trace_covered_us, 0, 1e-9);
  xr_replay_plan_free(plan);
  o.device = "hip";
  cr_assert_eq(xr_replay_plan(b, &o, &plan), XR_UNAVAILABLE);
  cr_assert_null(plan);
  cr_assert(strstr(xr_last_error(), "libamdhip64"), "%s", xr_last_error());
  o.device = "cpu,bogus:1";
  cr_assert_eq(xr_replay_plan(b, &o, &plan), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "unknown HAL \"bogus:1\""), "%s", xr_last_error());
  cr_assert_eq(xr_replay_run(b, &o, NULL, NULL), XR_INVALID_ARGUMENT);
  o.device = ",";
  cr_assert_eq(xr_replay_plan(b, &o, &plan), XR_INVALID_ARGUMENT);
  xr_bundle_destroy(b);
}

/* The summary's replayed vs recorded statistics are those of the results the run gave, and the
 * device counts as the trace's model only when the bundle names that model. */
Test(engine, the_summary_sets_each_device_against_the_recorded_times) {
  xr_hal_device_t *cpu;
  xr_hal_device_properties_t props;
  cr_assert_eq(xr_hal_device_create("cpu", &cpu), XR_OK);
  cr_assert_eq(xr_hal_device_properties(cpu, &props), XR_OK);
  xr_hal_device_destroy(cpu);
  const char *models[] = {"AMD Instinct MI300X", props.name};
  for (int same = 0; same < 2; same++) {
    char text[8192];
    snprintf(text, sizeof text,
             "{\"format\": \"xreplay-bundle\", \"metadata\": {\"device_name\": \"%s\"}, "
             "\"ops\": [%s, %s, %s]}",
             models[same], MM_TIMED(4, 8, 3, 3, 30.0), MM(8, 8, 8), MM_TIMED(16, 16, 16, 1, 2.0));
    xr_bundle_t *b;
    cr_assert_eq(xr_bundle_decode((uint8_t *)text, strlen(text), "t.json", ".", NULL, &b), XR_OK,
                 "%s", xr_last_error());
    xr_replay_options_t o = quick();
    seen_t s = {0};
    xr_replay_observer_t observer = {.result = observe, .context = &s};
    xr_replay_summary_t run;
    cr_assert_eq(xr_replay_run(b, &o, &observer, &run), XR_OK, "%s", xr_last_error());
    cr_assert_eq(s.count, 3);
    xr_trace_ratio_stats_t want;
    cr_assert_eq(xr_trace_ratio_stats(s.r, s.count, &want), XR_OK);
    const xr_trace_ratio_stats_t *got = &run.devices[0].replay_vs_trace;
    cr_assert_eq(got->count, 2, "the untimed op has no ratio");
    cr_assert_eq(got->count, want.count);
    cr_assert_float_eq(got->median, want.median, 1e-12);
    cr_assert_float_eq(got->median, (s.r[0].median_us / 10.0 + s.r[2].median_us / 2.0) / 2, 1e-9,
                       "per-call recorded times: 30 us over 3 calls, 2 us over 1");
    cr_assert_eq(got->worst_count, 2);
    cr_assert_eq(run.devices[0].same_device, (bool)same, "%s on %s", models[same], props.name);
    xr_bundle_destroy(b);
  }
}

static bool refuse_to_start(void *ctx, const xr_replay_summary_t *run) {
  (void)ctx;
  cr_assert_eq(run->attempted, 2, "the ops that would run");
  return false;
}

/* An observer that cannot keep what the run would measure stops it before the first op: the
 * run ends OK, cancelled, with nothing attempted and no result. */
Test(engine, an_observer_stops_the_run_before_the_first_op) {
  xr_bundle_t *b = bundle(MM(2, 2, 2) ", " MM(3, 3, 3));
  xr_replay_options_t o = quick();
  seen_t s = {0};
  xr_replay_summary_t sum;
  xr_replay_observer_t observer = {.started = refuse_to_start, .result = observe, .context = &s};
  cr_assert_eq(xr_replay_run(b, &o, &observer, &sum), XR_OK, "%s", xr_last_error());
  cr_assert(sum.cancelled);
  cr_assert_eq(sum.attempted, 0);
  cr_assert_eq(s.count, 0, "no op ran");
  xr_bundle_destroy(b);
}

/* ------------------------------------------------------------------------------------------ */
/* timing that flags itself                                                                    */

static atomic_int spinning;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* A contender that comes and goes: busy 2 ms, asleep 2 ms. A single reading of the runnable
 * threads misses it half the time; the time this process's threads wait for a CPU does not. */
static void *spin_on_and_off(void *unused) {
  (void)unused;
  while (atomic_load(&spinning)) {
    double until = now_ms() + 2;
    while (now_ms() < until) {
    }
    usleep(2000);
  }
  return NULL;
}

Test(engine, a_single_batch_on_a_crowded_host_is_contended) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int n = (int)(cpus > 0 ? 2 * cpus : 2);
  pthread_t threads[64];
  if (n > 64) n = 64;
  atomic_store(&spinning, 1);
  for (int i = 0; i < n; i++)
    cr_assert_eq(pthread_create(&threads[i], NULL, spin_on_and_off, NULL), 0);
  xr_bundle_t *b = bundle(MM(256, 256, 256));
  xr_replay_options_t o = quick();
  o.iters = 1; /* one batch of one execution */
  int contended = 0;
  for (int run = 0; run < 3; run++) {
    seen_t s = {0};
    xr_replay_observer_t observer = {.result = observe, .context = &s};
    xr_replay_summary_t sum;
    cr_assert_eq(xr_replay_run(b, &o, &observer, &sum), XR_OK, "%s", xr_last_error());
    cr_assert_eq(s.r[0].batches, 1);
    contended += s.r[0].contended;
    cr_assert_eq(sum.devices[0].contended, (size_t)s.r[0].contended, "the summary counts it");
  }
  atomic_store(&spinning, 0);
  for (int i = 0; i < n; i++) pthread_join(threads[i], NULL);
  cr_assert_eq(contended, 3,
               "%d of 3 single-batch runs beside %d contending threads were CONTENDED", contended,
               n);
  xr_bundle_destroy(b);
}

/* UNSTABLE: the noise statistic above --unstable's percentage, on a host that was not crowded;
 * counted in the summary. */
Test(engine, noise_above_the_unstable_threshold_is_unstable) {
  xr_bundle_t *b = bundle(MM(32, 32, 32));
  xr_replay_options_t o = quick();
  /* Enough samples for the noise statistic's five batches of about 200 us of work each, however
   * fast the product runs (sanitizers included). */
  o.iters = 2000;
  o.unstable_percent = 1e-9; /* any spread at all */
  seen_t s = {0};
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  xr_replay_summary_t sum;
  cr_assert_eq(xr_replay_run(b, &o, &observer, &sum), XR_OK, "%s", xr_last_error());
  const xr_op_result_t *r = &s.r[0];
  cr_assert_geq(r->noise_percent, 0, "2000 samples give a noise statistic");
  /* A crowded host is CONTENDED instead: one reason is enough. */
  cr_assert_eq(r->unstable, !r->contended && r->noise_percent > 1e-9);
  cr_assert_eq(sum.devices[0].unstable, (size_t)r->unstable);
  o.unstable_percent = 1e9;
  memset(&s, 0, sizeof s);
  cr_assert_eq(xr_replay_run(b, &o, &observer, &sum), XR_OK);
  cr_assert(!s.r[0].unstable);
  cr_assert_eq(sum.devices[0].unstable, 0);
  o.unstable_percent = 0;
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_INVALID_ARGUMENT);
  xr_bundle_destroy(b);
}

/* --check within bounds: an op whose reference would not fit beside it is timed unchecked,
 * saying what the reference needs; a checked op reports what its reference cost. */
Test(engine, a_reference_that_does_not_fit_leaves_the_op_timed_and_unchecked) {
  /* bmm: a batched product, which its family does not cut into rows. */
  xr_bundle_t *b = bundle(
      "{\"name\": \"aten::bmm\", \"args\": [{\"name\": \"self\", \"type\": \"Tensor\", "
      "\"value\": {\"shape\": [1, 64, 64], \"dtype\": \"float\"}}, {\"name\": \"mat2\", "
      "\"type\": \"Tensor\", \"value\": {\"shape\": [1, 64, 64], \"dtype\": \"float\"}}]}");
  xr_replay_options_t o = quick();
  o.check = true;
  /* The op needs 112 KiB of host memory (its contents and the cpu device's copy with the
   * output read back), its reference 64 KiB more. */
  o.max_memory_bytes = 150000;
  seen_t s = {0};
  xr_replay_observer_t observer = {.result = observe, .context = &s};
  xr_replay_summary_t sum;
  cr_assert_eq(xr_replay_run(b, &o, &observer, &sum), XR_OK, "%s", xr_last_error());
  const xr_op_result_t *r = &s.r[0];
  cr_assert_eq(r->outcome, XR_OP_SUCCEEDED, "%s", r->message);
  cr_assert(!r->checked);
  cr_assert(r->iterations > 0, "timed all the same");
  cr_assert(strstr(r->check_note, "not checked: the reference needs 65536 bytes"), "%s",
            r->check_note);
  cr_assert_eq(sum.devices[0].unchecked, 1);
  /* The plan says the same. */
  xr_replay_plan_t *plan;
  cr_assert_eq(xr_replay_plan(b, &o, &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan->entries[0].outcome, XR_OP_SUCCEEDED);
  cr_assert_str_eq(plan->entries[0].message, r->check_note);
  xr_replay_plan_free(plan);
  /* With room for it: checked, and its cost reported. */
  o.max_memory_bytes = 0;
  memset(&s, 0, sizeof s);
  cr_assert_eq(xr_replay_run(b, &o, &observer, &sum), XR_OK, "%s", xr_last_error());
  cr_assert(s.r[0].checked && s.r[0].check_passed);
  cr_assert_eq(s.r[0].check_note[0], '\0');
  cr_assert_gt(s.r[0].reference_ms, 0);
  cr_assert_eq(sum.devices[0].reference_ms, s.r[0].reference_ms);
  cr_assert_eq(sum.devices[0].unchecked, 0);
  xr_bundle_destroy(b);
}
