/* Replayed vs recorded on the command line: what `replay` prints at the end about the ratios of
 * its medians to the times the source trace recorded (cross-device on this machine, the same
 * device when the bundle says the trace ran on this CPU), and the ratio columns and lines of
 * `replay compare`. Expected figures are recomputed here from the per-op fields of the reports,
 * or written into hand-made reports. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tools/cli_util.h"

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* What the summary should say, from the report's ops: the ops that succeeded with a recorded
 * time, their median ratio, and the one furthest from its recorded time. */
typedef struct expected {
  size_t count;
  double median;
  int furthest_index;
  const char *furthest_name;
} expected_t;

static expected_t expected_of(const cJSON *report) {
  expected_t e = {0, NAN, -1, ""};
  double ratios[256], furthest = -1;
  const cJSON *op;
  cJSON_ArrayForEach(op, cJSON_GetObjectItem(report, "ops")) {
    double median = json_number(op, "median_us"), trace = json_number(op, "trace_us");
    if (strcmp(json_str(op, "outcome"), "ok") || !(median > 0) || !(trace > 0)) continue;
    cr_assert_lt(e.count, 256);
    double ratio = median / trace;
    ratios[e.count++] = ratio;
    if (fabs(log(ratio)) > furthest) {
      furthest = fabs(log(ratio));
      e.furthest_index = (int)json_number(op, "index");
      e.furthest_name = json_str(op, "name");
    }
  }
  if (!e.count) return e;
  qsort(ratios, e.count, sizeof ratios[0], by_value);
  size_t n = e.count;
  e.median = n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
  return e;
}

/* A bundle extracted from a real MI300X trace, replayed on this machine's CPU: the summary says
 * the ratios are cross-device and gives the statistics of the report's own per-op figures; the
 * report's summary stores them; `compare` shows each op's ratio. */
Test(trace_ratio_cli, a_trace_from_another_device_is_cross_device) {
  const char *bundle = scratch("mi300.msgpack"), *report = scratch("mi300.json");
  char args[4096];
  snprintf(args, sizeof args, "extract tests/data/fixtures/traces/mi300_bert_small.json.gz -o %s",
           bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(args, sizeof args, "--hal=cpu --iters=1 --warmup=0 --report=%s %s", report, bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cJSON *r = read_json(report);
  expected_t e = expected_of(r);
  cr_assert_gt(e.count, 0, "no op of the BERT trace ran with a recorded time");
  char want[2048];
  snprintf(want, sizeof want,
           "summary [cpu]: trace recorded on AMD Instinct MI300X VF, replayed on %s: cross-device "
           "replay vs trace: %zu ops, median ratio %.3g, ",
           json_str(r, "device"), e.count, e.median);
  cr_assert(strstr(out_text, want), "expected \"%s\" in\n%s", want, out_text);
  cr_assert_null(strstr(out_text, "same device"), "%s", out_text);
  snprintf(want, sizeof want, "summary [cpu]: worst cross-device ratios (replay / trace): #%d %s ",
           e.furthest_index, e.furthest_name);
  cr_assert(strstr(out_text, want), "expected \"%s\" in\n%s", want, out_text);

  const cJSON *t = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "summary"), "replay_vs_trace");
  cr_assert_not_null(t, "the report's summary has no replay_vs_trace");
  cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(t, "same_device")));
  cr_assert_str_eq(json_str(t, "trace_device"), "AMD Instinct MI300X VF");
  cr_assert_eq(json_number(t, "count"), (double)e.count);
  cr_assert_float_eq(json_number(t, "median"), e.median, 1e-9 * e.median);
  const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(t, "worst"), 0);
  cr_assert_eq(json_number(first, "index"), e.furthest_index);

  /* compare: each op's ratio beside the medians, as the report holds it. */
  snprintf(args, sizeof args, "compare %s %s", report, report);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "A/trace   B/trace"), "%s", out_text);
  const cJSON *op;
  size_t rows = 0;
  cJSON_ArrayForEach(op, cJSON_GetObjectItem(r, "ops")) {
    char head[128], *line;
    snprintf(head, sizeof head, " %d %s ", (int)json_number(op, "index"), json_str(op, "name"));
    cr_assert_not_null(line = strstr(out_text, head), "no row %s in\n%s", head + 1, out_text);
    /* # op A B A/B interval verdict A/trace B/trace: the two after the verdict */
    char cells[9][128], *a = cells[7], *b = cells[8];
    cr_assert_eq(sscanf(line + 1, "%127s %127s %127s %127s %127s %127s %127s %127s %127s",
                        cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6],
                        cells[7], cells[8]),
                 9, "%.200s", line + 1);
    int index = (int)json_number(op, "index");
    char ratio[32] = "-";
    if (isfinite(json_number(op, "replay_over_trace")))
      snprintf(ratio, sizeof ratio, "%.3g", json_number(op, "replay_over_trace"));
    cr_assert_str_eq(a, ratio, "op %d: A/trace %s, the report's ratio %s", index, a, ratio);
    cr_assert_str_eq(b, ratio, "op %d: B/trace %s, the report's ratio %s", index, b, ratio);
    rows++;
  }
  cr_assert_eq(rows, (size_t)cJSON_GetArraySize(cJSON_GetObjectItem(r, "ops")));
  snprintf(want, sizeof want,
           "A: trace recorded on AMD Instinct MI300X VF, replayed on %s: cross-device replay vs "
           "trace: %zu ops, median ratio %.3g",
           json_str(r, "device"), e.count, e.median);
  cr_assert(strstr(out_text, want), "expected \"%s\" in\n%s", want, out_text);
  cr_assert(strstr(out_text, "\nB: trace recorded on AMD Instinct MI300X VF"), "%s", out_text);
  cJSON_Delete(r);
}

/* Two mm ops with recorded times: 2 calls in 40 us (20 us each) and 1 in 1e6 us. */
static void write_bundle(const char *path, const char *trace_device) {
  cJSON *b = cJSON_CreateObject();
  cJSON_AddStringToObject(b, "format", "xreplay-bundle");
  if (trace_device)
    cJSON_AddStringToObject(cJSON_AddObjectToObject(b, "metadata"), "device_name", trace_device);
  cJSON *list = cJSON_AddArrayToObject(b, "ops");
  const double times[] = {40, 1e6}, counts[] = {2, 1};
  for (int k = 0; k < 2; k++) {
    cJSON *op = cJSON_CreateObject();
    cJSON_AddStringToObject(op, "name", "aten::mm");
    cJSON *args = cJSON_AddArrayToObject(op, "args");
    const char *names[] = {"self", "mat2"};
    for (int a = 0; a < 2; a++) {
      cJSON *arg = cJSON_CreateObject();
      cJSON_AddStringToObject(arg, "name", names[a]);
      cJSON_AddStringToObject(arg, "type", "Tensor");
      cJSON *v = cJSON_AddObjectToObject(arg, "value");
      cJSON_AddItemToObject(v, "shape", cJSON_CreateIntArray((const int[]){8, 8}, 2));
      cJSON_AddStringToObject(v, "dtype", "float");
      cJSON_AddItemToArray(args, arg);
    }
    cJSON_AddNumberToObject(op, "count", counts[k]);
    cJSON *timing = cJSON_AddObjectToObject(op, "timing");
    cJSON_AddNumberToObject(timing, "gpu_time_us", times[k]);
    cJSON_AddArrayToObject(timing, "kernels");
    cJSON_AddItemToArray(list, op);
  }
  char *text = cJSON_Print(b);
  write_text(path, text);
  free(text);
  cJSON_Delete(b);
}

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* A bundle that names no device says so; one recorded on this CPU's model (named in another
 * case and spacing) is the same device; with two HALs, a line for each. */
Test(trace_ratio_cli, the_same_device_and_an_unknown_one) {
  const char *bundle = scratch("mm.json"), *report = scratch("mm.report.json");
  char args[4096], want[2048];
  write_bundle(bundle, NULL);
  snprintf(args, sizeof args, "--hal=cpu --iters=2 --warmup=0 --report=%s %s", report, bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cJSON *r = read_json(report);
  char device[512];
  snprintf(device, sizeof device, "%s", json_str(r, "device"));
  cr_assert(device[0], "the report names no device");
  const cJSON *ops = cJSON_GetObjectItem(r, "ops");
  cr_assert_eq(json_number(cJSON_GetArrayItem(ops, 0), "trace_us"), 20, "40 us over 2 calls");
  expected_t e = expected_of(r);
  cr_assert_eq(e.count, 2);
  /* 8x8 products take far less than a second: the 1e6 us op is the furthest off. */
  cr_assert_eq(e.furthest_index, 1);
  snprintf(want, sizeof want,
           "summary [cpu]: replay vs trace (the trace's device is not recorded; replayed on %s): "
           "2 ops, median ratio %.3g, ",
           device, e.median);
  cr_assert(strstr(out_text, want), "expected \"%s\" in\n%s", want, out_text);
  cJSON_Delete(r);

  /* Recorded on this model, spelt differently. */
  char spelt[600];
  snprintf(spelt, sizeof spelt, "  %s ", device);
  for (char *c = spelt; *c; c++)
    if (*c >= 'A' && *c <= 'Z') *c = (char)(*c - 'A' + 'a');
  write_bundle(bundle, spelt);
  const char *html = scratch("mm.html");
  snprintf(args, sizeof args, "--hal=cpu --iters=2 --warmup=0 --report=%s --html=%s %s", report,
           html, bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(want, sizeof want, "summary [cpu]: replay vs trace (same device: %s): 2 ops, ", device);
  cr_assert(strstr(out_text, want), "expected \"%s\" in\n%s", want, out_text);
  cr_assert(
      strstr(out_text, "summary [cpu]: worst same-device ratios (replay / trace): #1 aten::mm "),
      "%s", out_text);
  cr_assert_null(strstr(out_text, "cross-device"), "%s", out_text);
  r = read_json(report);
  const cJSON *t = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "summary"), "replay_vs_trace");
  cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(t, "same_device")), "the report's summary");
  cr_assert_str_eq(json_str(t, "trace_device"), spelt);
  cJSON_Delete(r);
  /* The page of the run says it too (the device's name as HTML text: no markup in it here). */
  static char page[1 << 18];
  slurp(html, page, sizeof page);
  snprintf(want, sizeof want,
           "<p class=\"trace-ratio\">Replay vs trace (same device: %s): 2 ops, median ratio ",
           device);
  cr_assert(strchr(device, '<') || strchr(device, '&') || strstr(page, want),
            "expected \"%s\" in the page", want);
  cr_assert(strstr(page, "; furthest from the trace: #1 aten::mm "), "the page's worst ops");

  /* Several HALs: one line for each. */
  snprintf(args, sizeof args, "--hal=cpu,cpu --iters=1 --warmup=0 %s", bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert_eq(count(out_text, "summary [cpu]: replay vs trace (same device: "), 2, "%s", out_text);
  cr_assert_eq(count(out_text, "summary [cpu]: worst same-device ratios"), 2, "%s", out_text);
}

/* compare on hand-made reports: the ratio columns only where both runs recorded a time, and
 * each summary's statistics; reports of bundles without times keep the columns they had. */
Test(trace_ratio_cli, compare_shows_the_ratios_of_both_runs) {
  const char *a = scratch("a.json"), *b = scratch("b.json");
  write_text(a,
             "{\"xreplay_report\": 2, \"hal\": \"cuda\", \"device\": \"Dev A\", \"ops\": ["
             "{\"index\": 0, \"name\": \"aten::mm\", \"outcome\": \"ok\", \"median_us\": 20, "
             "\"trace_us\": 10, \"replay_over_trace\": 2},"
             "{\"index\": 1, \"name\": \"aten::add\", \"outcome\": \"ok\", \"median_us\": 3, "
             "\"trace_us\": 4, \"replay_over_trace\": 0.75},"
             "{\"index\": 2, \"name\": \"aten::gelu\", \"outcome\": \"ok\", \"median_us\": 5}],"
             "\"summary\": {\"total\": 3, \"replay_vs_trace\": {\"trace_device\": \"Dev T\", "
             "\"same_device\": false, \"count\": 2, \"median\": 1.375, \"geomean\": 1.2247, "
             "\"within_10_percent\": 0, \"worst\": [{\"index\": 0, \"name\": \"aten::mm\", "
             "\"ratio\": 2}, {\"index\": 1, \"name\": \"aten::add\", \"ratio\": 0.75}]}}}");
  write_text(b,
             "{\"xreplay_report\": 2, \"hal\": \"hip\", \"device\": \"Dev T\", \"ops\": ["
             "{\"index\": 0, \"name\": \"aten::mm\", \"outcome\": \"ok\", \"median_us\": 11, "
             "\"trace_us\": 10, \"replay_over_trace\": 1.1},"
             "{\"index\": 1, \"name\": \"aten::add\", \"outcome\": \"ok\", \"median_us\": 2},"
             "{\"index\": 2, \"name\": \"aten::gelu\", \"outcome\": \"failed\"}],"
             "\"summary\": {\"total\": 3, \"replay_vs_trace\": {\"trace_device\": \"Dev T\", "
             "\"same_device\": true, \"count\": 1, \"median\": 1.1, \"geomean\": 1.1, "
             "\"within_10_percent\": 100, \"worst\": [{\"index\": 0, \"name\": \"aten::mm\", "
             "\"ratio\": 1.1}]}}}");
  char args[4096];
  snprintf(args, sizeof args, "compare %s %s", a, b);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  static const struct {
    const char *row, *a_ratio, *b_ratio;
  } rows[] = {{" 0/0 aten::mm ", "2", "1.1"}, /* different bundles: paired by signature */
              {" 1/1 aten::add ", "-", "-"}, /* B recorded no time */
              {" 2/2 aten::gelu ", "-", "-"}};
  for (size_t k = 0; k < 3; k++) {
    const char *line = strstr(out_text, rows[k].row);
    cr_assert_not_null(line, "no row%s in\n%s", rows[k].row, out_text);
    /* # op A B A/B interval verdict A/trace B/trace: the two after the verdict */
    char cells[9][64];
    int n = sscanf(line + 1, "%63s %63s %63s %63s %63s %63s %63s %63s %63s", cells[0], cells[1],
                   cells[2], cells[3], cells[4], cells[5], cells[6], cells[7], cells[8]);
    cr_assert_eq(n, 9, "%.200s", line + 1);
    cr_assert_str_eq(cells[7], rows[k].a_ratio, "%.200s", line + 1);
    cr_assert_str_eq(cells[8], rows[k].b_ratio, "%.200s", line + 1);
  }
  cr_assert(strstr(out_text,
                   "A: trace recorded on Dev T, replayed on Dev A: cross-device replay vs "
                   "trace: 2 ops, median ratio 1.38, geometric mean 1.22, 0.0% within "
                   "\u00b110%; worst: #0 aten::mm 2, #1 aten::add 0.75\n"),
            "%s", out_text);
  cr_assert(strstr(out_text,
                   "B: replay vs trace (same device: Dev T): 1 ops, median ratio 1.1, "
                   "geometric mean 1.1, 100.0% within \u00b110%; worst: #0 aten::mm 1.1\n"),
            "%s", out_text);

  /* Without recorded times: no ratio columns, no ratio lines. */
  write_text(a,
             "{\"ops\": [{\"index\": 0, \"name\": \"aten::mm\", \"outcome\": \"ok\", "
             "\"median_us\": 20}]}");
  snprintf(args, sizeof args, "compare %s %s", a, a);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert_null(strstr(out_text, "trace"), "%s", out_text);
}
