/* Ceilings from the command line: `replay devices --calibrate -o` saves what it measured, a
 * replay with `--peaks` uses it, and the shipped example then prints no percentage above 100
 * that it does not explain. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/tools/cli_util.h"

#define EXAMPLE "examples/llm_small.msgpack"

static const cJSON *device_entry(const cJSON *peaks, const char *hal) {
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(peaks, "devices"))
    if (!strcmp(json_str(e, "hal"), hal)) return e;
  return NULL;
}

Test(ceilings_cli, calibrate_saves_peaks_that_a_replay_uses) {
  char peaks_path[512], report[512];
  snprintf(peaks_path, sizeof peaks_path, "%s/peaks.json", tmpdir());
  snprintf(report, sizeof report, "%s/example.json", tmpdir());
  char args[2048];
  snprintf(args, sizeof args, "devices --calibrate --json -o %s", peaks_path);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cJSON *peaks = read_json(peaks_path);
  const cJSON *cpu = device_entry(peaks, "cpu:0");
  cr_assert_not_null(cpu, "no cpu:0 in the peaks file");
  const cJSON *m = cJSON_GetObjectItem(cpu, "measured");
  /* The report's form: each figure {"value", "source"}. */
  const cJSON *saved_bw = cJSON_GetObjectItem(m, "memory_bandwidth");
  cr_assert_gt(json_number(saved_bw, "value"), 1e8);
  cr_assert_str_eq(json_str(saved_bw, "source"), "calibrated");
  /* DRAM's working set is beyond the caches the cpu reports. */
  cJSON *devices = cJSON_Parse(out_text);
  cr_assert_not_null(devices, "%s", out_text);
  const cJSON *driver, *dev, *cpu_props = NULL;
  cJSON_ArrayForEach(driver, cJSON_GetObjectItem(devices, "drivers"))
    cJSON_ArrayForEach(dev, cJSON_GetObjectItem(driver, "devices"))
      if (!strcmp(json_str(dev, "spec"), "cpu:0")) cpu_props = dev;
  cr_assert_not_null(cpu_props);
  double caches = json_number(cpu_props, "cache_total_bytes");
  double memory = json_number(cpu_props, "memory_bytes");
  double want = fmin(caches > 0 ? 4 * caches : 2.0 * (1u << 30), memory / 4);
  cr_assert_geq(json_number(m, "memory_working_set_bytes") + 4096, want,
                "a %g-byte working set for %g bytes of cache",
                json_number(m, "memory_working_set_bytes"), caches);
  /* The replay holds the example against these figures. */
  snprintf(args, sizeof args, "--hal=cpu --iters=3 --warmup=1 --peaks=%s --report=%s " EXAMPLE,
           peaks_path, report);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cJSON *r = read_json(report);
  const cJSON *measured = cJSON_GetObjectItem(r, "measured");
  cr_assert_eq(json_number(cJSON_GetObjectItem(measured, "memory_bandwidth"), "value"),
               json_number(saved_bw, "value"));
  cr_assert_not_null(cJSON_GetObjectItem(r, "ceilings"));
  const cJSON *op;
  int with_percent = 0;
  cJSON_ArrayForEach(op, cJSON_GetObjectItem(r, "ops")) {
    if (strcmp(json_str(op, "outcome"), "ok")) continue;
    const char *bound = json_str(op, "bound");
    cr_assert(!strcmp(bound, "compute") || !strcmp(bound, "memory") || !strcmp(bound, "unknown"),
              "%s: bound %s", json_str(op, "name"), bound);
    double pct = json_number(op, "peak_percent");
    if (isnan(pct)) continue;
    with_percent++;
    if (pct > 100)
      cr_assert(strstr(json_str(op, "above_ceiling"), "above "), "%s: %g%% of %s, unexplained",
                json_str(op, "name"), pct, json_str(op, "peak_basis"));
  }
  cr_assert_gt(with_percent, 0, "no op was held against a ceiling");
  cJSON_Delete(r);
  cJSON_Delete(devices);
  cJSON_Delete(peaks);
  /* Both ways of getting ceilings at once is a usage error, in one line. */
  snprintf(args, sizeof args, "--hal=cpu --calibrate --peaks=%s " EXAMPLE, peaks_path);
  cr_assert_eq(replay(args), 2);
  cr_assert(strstr(err_text, "--calibrate and --peaks"), "%s", err_text);
  /* -o without --calibrate would save nothing measured. */
  snprintf(args, sizeof args, "devices -o %s", peaks_path);
  cr_assert_eq(replay(args), 2);
  cr_assert(strstr(err_text, "add --calibrate"), "%s", err_text);
}

Test(ceilings_cli, a_peaks_file_for_another_device_stops_the_run_saying_so) {
  char peaks_path[512], args[1024];
  snprintf(peaks_path, sizeof peaks_path, "%s/other.json", tmpdir());
  write_text(peaks_path,
             "{\"devices\": [{\"hal\": \"cpu\", \"name\": \"Some Other CPU\", "
             "\"measured\": {\"memory_bandwidth\": 1e11}}]}");
  snprintf(args, sizeof args, "--hal=cpu --iters=1 --peaks=%s " EXAMPLE, peaks_path);
  cr_assert_eq(replay(args), 2, "%s", out_text);
  cr_assert(strstr(err_text, peaks_path) && strstr(err_text, "devices[0].name") &&
                strstr(err_text, "Some Other CPU"),
            "%s", err_text);
}
