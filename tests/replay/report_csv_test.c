/* The CSV report against the JSON one: a result with every field the JSON report can write
 * (every optional part present) gives a CSV row whose columns name every one of those fields,
 * so that the last column, "more" (per-op fields no column names, replay/report.c), stays empty,
 * and whose values are the JSON report's. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay/replay.h"
#include "replay/report.h"
#include "tests/support/csv.h"

/* A result with every optional part of the JSON report present. */
static void full_result(const xr_op_t *op, xr_op_result_t *r) {
  memset(r, 0, sizeof *r);
  r->index = 3;
  r->op = op;
  r->outcome = XR_OP_SUCCEEDED;
  snprintf(r->message, sizeof r->message, "a note, with \"quotes\"");
  snprintf(r->kernel, sizeof r->kernel, "cpu.gemm");
  r->family = "gemm";
  snprintf(r->init_policy, sizeof r->init_policy, "uniform");
  r->iterations = 20;
  r->min_us = 1, r->median_us = 2, r->mean_us = 2.5, r->p10_us = 1.5, r->p25_us = 1.75;
  r->p75_us = 3, r->p90_us = 4, r->iqr_us = 1.25, r->noise_percent = 0.5;
  r->batch_size = 2, r->outliers = 1;
  r->stop_reason = "iterations";
  r->noise_met = true;
  r->launch = "graph";
  snprintf(r->launch_note, sizeof r->launch_note, "captured");
  r->graph_executions = 4;
  r->timed_wall_ms = 0.25, r->host_us_per_iteration = 12.5;
  r->runnable_mean = 1.5, r->batches = 10, r->crowded_batches = 1, r->contended = true;
  r->clock_samples = 5, r->slow_clock_samples = 1;
  r->clock_min_mhz = 1000, r->clock_median_mhz = 1500, r->clock_default_mhz = 1600;
  r->cold_iterations = 20, r->cold_median_us = 3, r->cold_iqr_us = 0.5, r->cold_noise_percent = 1;
  r->flush_bytes = 1 << 20;
  r->rotate = 2;
  r->flops = 1e6, r->bytes = 4096, r->tflops = 0.5, r->gbps = 2.048;
  r->peak_percent = 12.5;
  snprintf(r->peak_basis, sizeof r->peak_basis, "fp32 peak (datasheet)");
  snprintf(r->above_ceiling, sizeof r->above_ceiling, "above the datasheet figure: a clock");
  r->bound = "compute";
  r->ranks = 2, r->group_ranks = 2, r->rank_median_us[0] = 2, r->rank_median_us[1] = 1.5;
  r->algbw_gbps = 10, r->busbw_gbps = 20;
  r->trace_us = 4;
  r->checked = r->check_passed = r->compared = true;
  r->output_count = 1;
  snprintf(r->outputs[0].target, sizeof r->outputs[0].target, "return0");
  r->outputs[0].nmse = 1e-9, r->outputs[0].threshold = 1e-3, r->outputs[0].nmse_vs_first = 2e-9;
}

Test(report_csv, every_field_of_the_json_report_has_its_column) {
  xr_op_t op = {.name = "aten::mm", .count = 3};
  xr_op_result_t r;
  full_result(&op, &r);
  xr_replay_summary_t run;
  memset(&run, 0, sizeof run);
  run.total = run.attempted = 1;
  run.device_count = 1;
  snprintf(run.devices[0].spec, sizeof run.devices[0].spec, "cpu");
  xr_replay_options_t options;
  xr_replay_options_default(&options);
  char path[1024];
  snprintf(path, sizeof path, "%s/full.%d.csv",
           getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp", (int)getpid());
  xr_report_t *report;
  cr_assert_eq(xr_report_open(path, "b.json", NULL, &run, 0, &options, &report), XR_OK, "%s",
               xr_last_error());
  cr_assert_eq(xr_report_add(report, &r), XR_OK, "%s", xr_last_error());
  cr_assert_eq(xr_report_close(report, &run), XR_OK);

  static char text[1 << 16];
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f);
  text[fread(text, 1, sizeof text - 1, f)] = '\0';
  fclose(f);
  char *row = strchr(text, '\n');
  cr_assert_not_null(row);
  *row++ = '\0';
  char *header[128], *fields[128];
  size_t columns = csv_split(text, header, 128);
  cr_assert_eq(csv_split(row, fields, 128), columns, "%s", row);
  cr_assert_str_eq(header[columns - 1], "more");
  cr_assert_str_eq(fields[columns - 1], "", "fields the CSV has no column for: %s",
                   fields[columns - 1]);

  /* Every leaf of the JSON object, nested ones as "group.field", under its own header, with
   * the JSON report's value (text unquoted, the rest as compact JSON). */
  cJSON *o = xr_result_to_json(&r);
  size_t leaves = 0;
  for (const cJSON *m = o->child; m; m = m->next) {
    const cJSON *first = cJSON_IsObject(m) ? m->child : m;
    for (const cJSON *leaf = first; leaf; leaf = cJSON_IsObject(m) ? leaf->next : NULL) {
      char name[128], want[1024];
      if (cJSON_IsObject(m)) snprintf(name, sizeof name, "%s.%s", m->string, leaf->string);
      else snprintf(name, sizeof name, "%s", m->string);
      size_t c = 0;
      while (c < columns && strcmp(header[c], name)) c++;
      cr_assert_lt(c, columns, "no column for %s", name);
      if (cJSON_IsString(leaf)) {
        snprintf(want, sizeof want, "%s", leaf->valuestring);
      } else {
        char *json = cJSON_PrintUnformatted(leaf);
        snprintf(want, sizeof want, "%s", json);
        cJSON_free(json);
      }
      cr_assert_str_eq(fields[c], want, "%s", name);
      leaves++;
    }
  }
  cr_assert_gt(leaves, 50, "the full result fills the JSON object: %zu fields", leaves);
  cJSON_Delete(o);
  /* max_nmse: the largest of check[].nmse. */
  size_t c = 0;
  while (c < columns && strcmp(header[c], "max_nmse")) c++;
  cr_assert_lt(c, columns);
  cr_assert_float_eq(strtod(fields[c], NULL), 1e-9, 1e-21);
}
