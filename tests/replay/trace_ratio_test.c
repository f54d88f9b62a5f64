/* Replayed vs recorded (replay/trace_ratio.h): the ratio statistics on hand-made results whose
 * answers are worked out by hand below, the device-model matcher, and the report's summary
 * fields written and read back. */
#include "replay/trace_ratio.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay/report.h"

static xr_op_t ops[] = {{.name = "aten::mm"},  {.name = "aten::add"}, {.name = "aten::gelu"},
                        {.name = "aten::bmm"}, {.name = "aten::sum"}, {.name = "aten::cat"},
                        {.name = "aten::mul"}, {.name = "aten::div"}};
#define N_OPS (sizeof ops / sizeof ops[0])

/* Result slots: results[i] is op i, succeeded with `median_us` against `trace_us`. */
static xr_op_result_t results[16];

static xr_op_result_t *set(size_t slot, size_t index, double median_us, double trace_us) {
  xr_op_result_t *r = &results[slot];
  memset(r, 0, sizeof *r);
  r->index = index;
  r->op = &ops[index % N_OPS];
  r->outcome = XR_OP_SUCCEEDED;
  r->iterations = 1;
  r->median_us = median_us;
  r->trace_us = trace_us;
  return r;
}

static xr_trace_ratio_stats_t stats_of(size_t n) {
  xr_trace_ratio_stats_t s;
  cr_assert_eq(xr_trace_ratio_stats(results, n, &s), XR_OK, "%s", xr_last_error());
  return s;
}

Test(trace_ratio, odd_count_median_geomean_and_share) {
  set(0, 0, 20, 10);   /* 2 */
  set(1, 1, 10.5, 10); /* 1.05: within 10% */
  set(2, 2, 1, 4);     /* 0.25 */
  xr_trace_ratio_stats_t s = stats_of(3);
  cr_assert_eq(s.count, 3);
  cr_assert_float_eq(s.median, 1.05, 1e-12);                   /* 0.25 1.05 2 */
  cr_assert_float_eq(s.geomean, cbrt(2 * 1.05 * 0.25), 1e-12); /* cbrt(0.525) */
  cr_assert_float_eq(s.within_10_percent, 100.0 / 3, 1e-9);
}

Test(trace_ratio, even_count_median_is_the_mean_of_the_middle_two) {
  set(0, 0, 4, 1); /* 4 */
  set(1, 1, 1, 1); /* 1 */
  set(2, 2, 3, 1); /* 3 */
  set(3, 3, 2, 1); /* 2 */
  xr_trace_ratio_stats_t s = stats_of(4);
  cr_assert_eq(s.count, 4);
  cr_assert_float_eq(s.median, 2.5, 1e-12); /* (2 + 3) / 2 */
  cr_assert_float_eq(s.geomean, pow(24, 0.25), 1e-12);
  cr_assert_float_eq(s.within_10_percent, 25.0, 1e-12); /* only 1 */
}

/* 0.9 and 1.1 themselves are within; just past them is not. */
Test(trace_ratio, ten_percent_boundaries_are_inclusive) {
  set(0, 0, 9, 10);     /* 0.9 */
  set(1, 1, 11, 10);    /* 1.1 */
  set(2, 2, 8.99, 10);  /* 0.899 */
  set(3, 3, 11.01, 10); /* 1.101 */
  set(4, 4, 10, 10);    /* 1 */
  xr_trace_ratio_stats_t s = stats_of(5);
  cr_assert_eq(s.count, 5);
  cr_assert_float_eq(s.within_10_percent, 60.0, 1e-12, "%g", s.within_10_percent);
  cr_assert_float_eq(s.median, 1.0, 1e-12);
}

/* Only ops that succeeded, with a median and a recorded time above 0, count. */
Test(trace_ratio, failed_unsupported_and_untraced_ops_are_ignored) {
  set(0, 0, 30, 10);                             /* 3: kept */
  set(1, 1, 5, 10)->outcome = XR_OP_FAILED;      /* failed (its check, say) */
  set(2, 2, 0, 10)->outcome = XR_OP_UNSUPPORTED; /* never ran */
  set(3, 3, 7, -1);                              /* no recorded time */
  set(4, 4, 7, 0);                               /* a recorded 0: no ratio */
  set(5, 5, 0, 10);                              /* succeeded without a timing */
  set(6, 6, 10, 10);                             /* 1: kept */
  xr_trace_ratio_stats_t s = stats_of(7);
  cr_assert_eq(s.count, 2);
  cr_assert_float_eq(s.median, 2.0, 1e-12); /* (1 + 3) / 2 */
  cr_assert_float_eq(s.geomean, sqrt(3.0), 1e-12);
  cr_assert_float_eq(s.within_10_percent, 50.0, 1e-12);
  cr_assert_eq(s.worst_count, 2);
  cr_assert_eq(s.worst[0].index, 0);
  cr_assert_eq(s.worst[1].index, 6);
}

Test(trace_ratio, nothing_to_compare) {
  set(0, 0, 7, -1);
  xr_trace_ratio_stats_t s = stats_of(1);
  cr_assert_eq(s.count, 0);
  cr_assert_eq(s.worst_count, 0);
  cr_assert(isnan(s.median) && isnan(s.geomean) && isnan(s.within_10_percent));
  s = stats_of(0);
  cr_assert_eq(s.count, 0);
}

/* Furthest from 1 in either direction first (a replay 10x faster than the trace is as far off
 * as one 10x slower), equal distances in bundle order whatever order the results came in; five
 * kept. */
Test(trace_ratio, worst_ops_are_the_furthest_from_one) {
  set(0, 6, 8, 10);  /* 0.8:  |log| 0.22 */
  set(1, 5, 12, 10); /* 1.2:  0.18 */
  set(2, 4, 1, 10);  /* 0.1:  2.30, the furthest */
  set(3, 3, 30, 10); /* 3:    1.10, tied with op 1 */
  set(4, 2, 40, 10); /* 4:    1.39 */
  set(5, 1, 30, 10); /* 3:    1.10, before op 3 */
  set(6, 0, 10, 10); /* 1:    0 */
  xr_trace_ratio_stats_t s = stats_of(7);
  cr_assert_eq(s.worst_count, XR_TRACE_RATIO_WORST);
  const size_t want[] = {4, 2, 1, 3, 6};
  const double ratio[] = {0.1, 4, 3, 3, 0.8};
  for (size_t k = 0; k < XR_TRACE_RATIO_WORST; k++) {
    cr_assert_eq(s.worst[k].index, want[k], "worst[%zu] is op %zu, not %zu", k, s.worst[k].index,
                 want[k]);
    cr_assert_float_eq(s.worst[k].ratio, ratio[k], 1e-12);
    cr_assert_str_eq(s.worst[k].name, ops[want[k]].name);
  }
}

/* The accumulator sees results one at a time, as the replay command and the reports do. */
Test(trace_ratio, the_accumulator_gives_what_the_array_gives) {
  xr_trace_ratios_t acc;
  xr_trace_ratios_init(&acc);
  for (size_t i = 0; i < 100; i++) {
    set(0, i, (double)(i + 1), 8); /* ratios 1/8 .. 100/8 */
    cr_assert_eq(xr_trace_ratios_add(&acc, &results[0]), XR_OK);
  }
  xr_trace_ratio_stats_t s;
  cr_assert_eq(xr_trace_ratios_compute(&acc, &s), XR_OK);
  cr_assert_eq(s.count, 100);
  cr_assert_float_eq(s.median, (50.0 / 8 + 51.0 / 8) / 2, 1e-12);
  cr_assert_float_eq(s.within_10_percent, 1.0, 1e-12); /* 8/8 only: 7/8 and 9/8 are out */
  /* 12.5 (|log| 2.53) and 12.375 are further from 1 than 1/8 (2.08) */
  cr_assert_eq(s.worst[0].index, 99);
  cr_assert_eq(s.worst[1].index, 98);
  xr_trace_ratios_free(&acc);
  cr_assert_eq(acc.count, 0);
  xr_trace_ratios_free(NULL);
}

Test(trace_ratio, device_models_match_by_name) {
  /* The same name, however spaced or cased. */
  cr_assert(xr_trace_device_same_model("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"));
  cr_assert(xr_trace_device_same_model(" nvidia  H100 80gb\tHBM3 ", "NVIDIA H100 80GB HBM3"));
  /* An SR-IOV virtual function is the GPU it exposes, either way round. */
  cr_assert(xr_trace_device_same_model("AMD Instinct MI300X", "AMD Instinct MI300X VF"));
  cr_assert(xr_trace_device_same_model("AMD Instinct MI300X VF", "AMD Instinct MI300X"));
  cr_assert(xr_trace_device_same_model("AMD Instinct MI300X vf", "AMD Instinct MI300X VF"));
  /* A leading vendor word may be missing. */
  cr_assert(xr_trace_device_same_model("H100 80GB HBM3", "NVIDIA H100 80GB HBM3"));
  cr_assert(xr_trace_device_same_model("Instinct MI300X", "AMD Instinct MI300X"));

  /* Different models: another form factor, memory, part, a MIG slice, a prefix. */
  cr_assert_not(xr_trace_device_same_model("NVIDIA H100 PCIe", "NVIDIA H100 80GB HBM3"));
  cr_assert_not(xr_trace_device_same_model("NVIDIA H100", "NVIDIA H100 80GB HBM3"));
  cr_assert_not(xr_trace_device_same_model("NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB"));
  cr_assert_not(xr_trace_device_same_model("AMD Instinct MI300A", "AMD Instinct MI300X"));
  cr_assert_not(xr_trace_device_same_model("AMD Instinct MI325X", "AMD Instinct MI300X VF"));
  cr_assert_not(
      xr_trace_device_same_model("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "NVIDIA H100 80GB HBM3"));
  cr_assert_not(xr_trace_device_same_model("AMD Instinct MI300XVF", "AMD Instinct MI300X"));
  cr_assert_not(xr_trace_device_same_model("Intel(R) Xeon(R) Processor", "AMD Instinct MI300X"));
  /* A vendor word alone, a "VF" alone or nothing is no model. */
  cr_assert_not(xr_trace_device_same_model("NVIDIA", "AMD"));
  cr_assert_not(xr_trace_device_same_model("", ""));
  cr_assert_not(xr_trace_device_same_model("  ", " "));
  cr_assert_not(xr_trace_device_same_model(NULL, "AMD Instinct MI300X"));
  cr_assert_not(xr_trace_device_same_model("AMD Instinct MI300X", NULL));
}

/* ------------------------------------------------------------------------------------------ */
/* the report's summary                                                                        */

/* A one-device run on `device_name`, its report written with the results of slots 0..n-1 and
 * read back, from memory (path NULL) or the file. */
static xr_report_contents_t *report_of(const char *path, const char *device_name,
                                       const char *trace_device, size_t n) {
  static xr_replay_summary_t run;
  memset(&run, 0, sizeof run);
  run.total = run.attempted = n;
  run.device_count = 1;
  snprintf(run.devices[0].spec, sizeof run.devices[0].spec, "cpu");
  snprintf(run.devices[0].properties.name, sizeof run.devices[0].properties.name, "%s",
           device_name);
  run.devices[0].succeeded = run.succeeded = n;
  /* What the engine's summary holds of the run: its statistics, and whether the device is the
   * trace's model (the engine's own test checks that it computes them). */
  cr_assert_eq(xr_trace_ratio_stats(results, n, &run.devices[0].replay_vs_trace), XR_OK);
  run.devices[0].same_device = xr_trace_device_same_model(device_name, trace_device);
  xr_bundle_metadata_t meta = {.source_trace = "trace.json.gz",
                               .device_name = (char *)trace_device};
  xr_replay_options_t options;
  xr_replay_options_default(&options);
  xr_report_t *report;
  cr_assert_eq(xr_report_open(path, "b.msgpack", &meta, &run, 0, &options, &report), XR_OK, "%s",
               xr_last_error());
  for (size_t i = 0; i < n; i++) cr_assert_eq(xr_report_add(report, &results[i]), XR_OK);
  xr_report_contents_t *c;
  if (path) {
    cr_assert_eq(xr_report_close(report, &run), XR_OK, "%s", xr_last_error());
    cr_assert_eq(xr_report_read(path, &c), XR_OK, "%s", xr_last_error());
  } else {
    cr_assert_eq(xr_report_close_contents(report, &run, "memory", &c), XR_OK, "%s",
                 xr_last_error());
  }
  return c;
}

Test(trace_ratio, the_report_summary_round_trips) {
  set(0, 0, 30, 10); /* 3 */
  set(1, 1, 5, 10);  /* 0.5 */
  set(2, 2, 10, 10); /* 1 */
  set(3, 3, 7, -1);  /* no recorded time */
  set(4, 4, 12, 10); /* 1.2 */
  char path[1024];
  snprintf(path, sizeof path, "%s/ratio.%d.json",
           getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", (int)getpid());
  for (int from_file = 0; from_file < 2; from_file++) {
    xr_report_contents_t *c =
        report_of(from_file ? path : NULL, "AMD Instinct MI300X", "AMD Instinct MI300X VF", 5);
    const xr_report_trace_ratio_t *t = &c->replay_vs_trace;
    cr_assert_eq(t->count, 4, "%s: %zu", c->path, t->count);
    cr_assert(t->same_device, "%s", c->path);
    cr_assert_str_eq(t->trace_device, "AMD Instinct MI300X VF");
    cr_assert_float_eq(t->median, 1.1, 1e-12); /* 0.5 1 1.2 3 */
    cr_assert_float_eq(t->geomean, pow(3 * 0.5 * 1 * 1.2, 0.25), 1e-12);
    cr_assert_float_eq(t->within_10_percent, 25.0, 1e-12);
    cr_assert_eq(t->worst_count, 4);
    const int64_t want[] = {0, 1, 4, 2}; /* |log|: 1.10, 0.69, 0.18, 0 */
    for (size_t k = 0; k < 4; k++) {
      cr_assert_eq(t->worst[k].index, want[k], "worst[%zu]", k);
      cr_assert_str_eq(t->worst[k].name, ops[want[k]].name);
    }
    cr_assert_float_eq(t->worst[0].ratio, 3.0, 1e-12);
    xr_report_contents_free(c);
  }
  /* Replayed elsewhere: the same figures, not the same device. */
  xr_report_contents_t *c = report_of(NULL, "Intel(R) Xeon(R) Processor", "AMD Instinct MI300X", 5);
  cr_assert_not(c->replay_vs_trace.same_device);
  cr_assert_eq(c->replay_vs_trace.count, 4);
  xr_report_contents_free(c);
  /* A bundle that names no device: not the same device, no trace device. */
  c = report_of(NULL, "AMD Instinct MI300X", NULL, 5);
  cr_assert_not(c->replay_vs_trace.same_device);
  cr_assert_str_eq(c->replay_vs_trace.trace_device, "");
  xr_report_contents_free(c);
  /* No op with a recorded time: no replay_vs_trace. */
  set(0, 0, 7, -1);
  c = report_of(path, "AMD Instinct MI300X", "AMD Instinct MI300X", 1);
  cr_assert_eq(c->replay_vs_trace.count, 0);
  cr_assert(isnan(c->replay_vs_trace.median));
  cJSON *summary = cJSON_GetObjectItem(c->json, "summary");
  cr_assert_not_null(summary);
  cr_assert_null(cJSON_GetObjectItem(summary, "replay_vs_trace"));
  xr_report_contents_free(c);
  remove(path);
}

static xr_status_t read_text(const char *text, xr_report_contents_t **out) {
  cJSON *j = cJSON_Parse(text);
  cr_assert_not_null(j, "%s", text);
  return xr_report_from_json(j, "r.json", out);
}

/* Reports without the field (older ones, unfinished runs) still read; malformed ones are errors
 * naming the field. */
Test(trace_ratio, older_and_malformed_summaries) {
  xr_report_contents_t *c;
  cr_assert_eq(read_text("{\"ops\": [], \"summary\": {\"total\": 1}}", &c), XR_OK);
  cr_assert_eq(c->replay_vs_trace.count, 0);
  cr_assert_str_eq(c->replay_vs_trace.trace_device, "");
  xr_report_contents_free(c);
  cr_assert_eq(read_text("{\"ops\": [], \"summary\": null}", &c), XR_OK);
  cr_assert_eq(c->replay_vs_trace.count, 0);
  xr_report_contents_free(c);

  static const struct {
    const char *summary, *error;
  } bad[] = {
      {"{\"replay_vs_trace\": 3}", "r.json: summary.replay_vs_trace: not an object"},
      {"{\"replay_vs_trace\": {\"count\": \"many\"}}",
       "r.json: summary.replay_vs_trace.count: not a number"},
      {"{\"replay_vs_trace\": {\"count\": -2}}",
       "r.json: summary.replay_vs_trace.count: not a count of ops"},
      {"{\"replay_vs_trace\": {\"count\": 1, \"same_device\": \"yes\"}}",
       "r.json: summary.replay_vs_trace.same_device: not a bool"},
      {"{\"replay_vs_trace\": {\"count\": 1, \"median\": \"1.0\"}}",
       "r.json: summary.replay_vs_trace.median: not a number"},
      {"{\"replay_vs_trace\": {\"count\": 1, \"worst\": {}}}",
       "r.json: summary.replay_vs_trace.worst: not an array"},
      {"{\"replay_vs_trace\": {\"count\": 1, \"worst\": [7]}}",
       "r.json: summary.replay_vs_trace.worst[0]: not an op"},
      {"{\"replay_vs_trace\": {\"count\": 2, \"worst\": [{\"index\": 1, \"name\": \"a\", "
       "\"ratio\": 2}, {\"index\": 2, \"name\": \"b\", \"ratio\": \"big\"}]}}",
       "r.json: summary.replay_vs_trace.worst[1].ratio: not a number"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    char text[1024];
    snprintf(text, sizeof text, "{\"ops\": [], \"summary\": %s}", bad[k].summary);
    c = NULL;
    cr_assert_eq(read_text(text, &c), XR_INVALID_ARGUMENT, "%s", text);
    cr_assert_null(c);
    cr_assert(strstr(xr_last_error(), bad[k].error), "expected \"%s\", got \"%s\"", bad[k].error,
              xr_last_error());
  }
}
