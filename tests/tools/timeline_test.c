/* `replay --timeline=FILE`: the run's own events as Chrome trace-event JSON, read back with
 * cJSON and held against the report of the same run: a process per device named after it, a
 * thread per stream, per op an "op" event around its warmup and timed events, the timed events'
 * median equal to the report's, the per-op cap, two HALs as two processes, an unwritable path
 * refused before anything runs, and a complete document after an interrupted run. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/tools/cli_util.h"

#define BUNDLE "tests/data/bundles/timeline.json"

/* The "X" events of process `pid` in category `cat` (NULL: any) for op `index` (-1: any), in
 * file order, at most `capacity`; their count. */
static size_t events(const cJSON *trace, int pid, const char *cat, int index,
                     const cJSON **out, size_t capacity) {
  size_t n = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(trace, "traceEvents")) {
    if (strcmp(json_str(e, "ph"), "X") || json_number(e, "pid") != pid) continue;
    if (cat && strcmp(json_str(e, "cat"), cat)) continue;
    const cJSON *args = cJSON_GetObjectItem(e, "args");
    if (index >= 0 && json_number(args, "op") != index) continue;
    if (n < capacity) out[n] = e;
    n++;
  }
  return n;
}

/* The name metadata event `what` ("process_name", "thread_name") of pid and tid gives. */
static const char *metadata_name(const cJSON *trace, const char *what, int pid, int tid) {
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(trace, "traceEvents")) {
    if (!strcmp(json_str(e, "ph"), "M") && !strcmp(json_str(e, "name"), what) &&
        json_number(e, "pid") == pid && json_number(e, "tid") == tid)
      return json_str(cJSON_GetObjectItem(e, "args"), "name");
  }
  return "";
}

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double arg_number(const cJSON *event, const char *key) {
  return json_number(cJSON_GetObjectItem(event, "args"), key);
}

static const char *arg_str(const cJSON *event, const char *key) {
  return json_str(cJSON_GetObjectItem(event, "args"), key);
}

/* Every op of `report` (one device's) against the events of process `pid`: one op event with
 * its outcome; for one that ran, its first call and warm-up inside it, one timed event per
 * sample (up to `cap`) inside it, back to back without overlap, and the median of the samples
 * the statistics kept equal to the report's median. */
static void assert_ops_drawn(const cJSON *trace, const cJSON *report, int pid, int warmup,
                             int cap) {
  static const cJSON *timed[4096];
  const cJSON *op;
  size_t ops = 0;
  cJSON_ArrayForEach(op, cJSON_GetObjectItem(report, "ops")) {
    int index = (int)json_number(op, "index");
    const char *name = json_str(op, "name");
    const cJSON *span[2];
    cr_assert_eq(events(trace, pid, "op", index, span, 2), 1, "pid %d op %d: one op event", pid,
                 index);
    cr_assert_str_eq(json_str(span[0], "name"), name);
    cr_assert_str_eq(arg_str(span[0], "outcome"), json_str(op, "outcome"), "op %d", index);
    ops++;
    if (strcmp(json_str(op, "outcome"), "ok")) {
      cr_assert_eq(events(trace, pid, "timed", index, timed, 4096), 0, "op %d never ran", index);
      continue;
    }
    cr_assert_str_eq(arg_str(span[0], "kernel"), json_str(op, "kernel"));
    double begin = json_number(span[0], "ts"), end = begin + json_number(span[0], "dur");
    const cJSON *warm[4];
    cr_assert_eq(events(trace, pid, "warmup", index, warm, 4), 2, "op %d: first call, warm-up",
                 index);
    cr_assert_str_eq(arg_str(warm[0], "call"), "first call");
    cr_assert_str_eq(arg_str(warm[1], "call"), "warm-up");
    cr_assert_eq(arg_number(warm[1], "executions"), warmup);
    int iterations = (int)json_number(op, "iterations");
    size_t n = events(trace, pid, "timed", index, timed, 4096);
    cr_assert_eq(n, (size_t)(iterations < cap ? iterations : cap), "op %d: %zu timed events of %d",
                 index, n, iterations);
    cr_assert_eq(arg_number(span[0], "timed_events"), (double)n);
    double kept[4096], last_end = json_number(warm[1], "ts") + json_number(warm[1], "dur");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
      const cJSON *e = timed[i];
      double ts = json_number(e, "ts"), dur = json_number(e, "dur");
      cr_assert_str_eq(json_str(e, "name"), name);
      cr_assert_eq(arg_number(e, "sample"), (double)i, "op %d: samples in order", index);
      cr_assert_eq(arg_number(e, "executions"), 1);
      cr_assert_str_eq(arg_str(e, "kernel"), json_str(op, "kernel"));
      cr_assert_str_eq(arg_str(e, "clock"), "device");
      cr_assert(strlen(arg_str(e, "args")) > 0, "op %d: its argument summary", index);
      /* Placed after the warm-up, one after the other, inside the op (1 ns of rounding). */
      cr_assert(ts >= last_end - 0.002 && ts + dur <= end + 0.002,
                "op %d sample %zu at [%.3f, %.3f] after %.3f, op [%.3f, %.3f]", index, i, ts,
                ts + dur, last_end, begin, end);
      last_end = ts + dur;
      if (!cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "set_aside")))
        kept[k++] = dur;
    }
    if ((size_t)iterations > n) continue; /* capped: the median is of samples not drawn too */
    cr_assert_gt(k, 0);
    qsort(kept, k, sizeof *kept, compare_doubles);
    double median = k % 2 ? kept[k / 2] : 0.5 * (kept[k / 2 - 1] + kept[k / 2]);
    cr_assert(fabs(median - json_number(op, "median_us")) <= 0.002,
              "op %d: median of its timed events %.4f us, the report's %.4f us", index, median,
              json_number(op, "median_us"));
  }
  cr_assert_eq(ops, 4, "the bundle's four ops in the report");
}

static void run_path(const char *name, char *out, size_t n) {
  snprintf(out, n, "%s", scratch(name));
  unlink(out);
}

Test(timeline, draws_every_op_with_the_reports_medians) {
  char trace_path[1024], report_path[1024], args[4096];
  run_path("timeline.json", trace_path, sizeof trace_path);
  run_path("report.json", report_path, sizeof report_path);
  snprintf(args, sizeof args,
           "--hal=cpu -v --iters=25 --warmup=2 --timeline=%s --report=%s " BUNDLE, trace_path,
           report_path);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  /* The cpu has no profiler ranges, and -v says so. */
  cr_assert(strstr(out_text, "profiler ranges around each op: none (cpu:0: the cpu driver has no "
                             "profiler ranges"),
            "%s", out_text);
  cJSON *trace = read_json(trace_path), *report = read_json(report_path);
  cr_assert_str_eq(json_str(trace, "displayTimeUnit"), "ns");
  const cJSON *other = cJSON_GetObjectItem(trace, "otherData");
  cr_assert(strstr(json_str(other, "ts_clock"), "CLOCK_MONOTONIC"), "which clock ts is");
  cr_assert(strstr(json_str(other, "timed_clock"), "device"), "which clock the samples are");
  cr_assert_eq(json_number(other, "timed_events_per_op"), 100);
  /* The device, named as the report names it, and its stream. */
  char process[512];
  snprintf(process, sizeof process, "cpu:0 (%s)", json_str(report, "device"));
  cr_assert_str_eq(metadata_name(trace, "process_name", 1, 0), process);
  cr_assert_str_eq(metadata_name(trace, "thread_name", 1, 1), "stream 0");
  cr_assert(strstr(json_str(other, "pid 1"), process), "%s", json_str(other, "pid 1"));
  assert_ops_drawn(trace, report, 1, 2, 100);
  /* The argument summary is the one the op's line prints. */
  const cJSON *mm[1];
  cr_assert_eq(events(trace, 1, "op", 0, mm, 1), 1);
  cr_assert_str_eq(arg_str(mm[0], "args"), "f32[64,64] f32[64,64]");
  cr_assert(strstr(out_text, arg_str(mm[0], "args")), "%s", out_text);
  /* The report says the run drew a timeline. */
  const cJSON *options = cJSON_GetObjectItem(report, "options");
  cr_assert_str_eq(json_str(options, "timeline"), trace_path);
  cr_assert_eq(json_number(options, "timeline_events"), 100);
  cJSON_Delete(trace);
  cJSON_Delete(report);
}

/* A run of many samples keeps the first N per op and counts the rest on the op's event. */
Test(timeline, keeps_at_most_the_cap_of_timed_events_per_op) {
  char trace_path[1024], report_path[1024], args[4096];
  run_path("capped.json", trace_path, sizeof trace_path);
  run_path("capped_report.json", report_path, sizeof report_path);
  snprintf(args, sizeof args,
           "--hal=cpu --iters=40 --warmup=1 --timeline-events=7 --timeline=%s --report=%s " BUNDLE,
           trace_path, report_path);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cJSON *trace = read_json(trace_path), *report = read_json(report_path);
  assert_ops_drawn(trace, report, 1, 1, 7);
  const cJSON *op;
  cJSON_ArrayForEach(op, cJSON_GetObjectItem(report, "ops")) {
    if (strcmp(json_str(op, "outcome"), "ok")) continue;
    const cJSON *span[1];
    events(trace, 1, "op", (int)json_number(op, "index"), span, 1);
    cr_assert_eq(arg_number(span[0], "timed_events_left_out"), json_number(op, "iterations") - 7);
  }
  cr_assert_eq(json_number(cJSON_GetObjectItem(report, "options"), "timeline_events"), 7);
  cJSON_Delete(trace);
  cJSON_Delete(report);
}

/* Two HALs, two processes, each op drawn on both against its own device's report. */
Test(timeline, two_hals_are_two_processes) {
  char trace_path[1024], report_path[1024], args[4096];
  run_path("two.json", trace_path, sizeof trace_path);
  run_path("two_report.json", report_path, sizeof report_path);
  snprintf(args, sizeof args,
           "--hal=cpu,opencl --iters=20 --warmup=1 --timeline=%s --report=%s " BUNDLE,
           trace_path, report_path);
  int rc = replay(args);
  if (rc == 3) cr_skip_test("opencl is unavailable: %s", err_text);
  cr_assert_eq(rc, 0, "%s", err_text);
  cJSON *trace = read_json(trace_path);
  cr_assert(!strncmp(metadata_name(trace, "process_name", 1, 0), "cpu:0 (", 7));
  cr_assert(!strncmp(metadata_name(trace, "process_name", 2, 0), "opencl:0 (", 10));
  cr_assert_str_eq(metadata_name(trace, "thread_name", 2, 1), "stream 0");
  const cJSON *none[1];
  cr_assert_eq(events(trace, 3, NULL, -1, none, 1), 0, "no third process");
  static const char *const hals[] = {"cpu", "opencl"};
  for (int d = 0; d < 2; d++) {
    char path[1100];
    char *dot = strrchr(report_path, '.');
    snprintf(path, sizeof path, "%.*s.%s.json", (int)(dot - report_path), report_path, hals[d]);
    cJSON *report = read_json(path);
    assert_ops_drawn(trace, report, d + 1, 1, 100);
    cJSON_Delete(report);
  }
  cJSON_Delete(trace);
}

/* A file that cannot be created: one line naming it, exit 2, and no op runs. */
Test(timeline, an_unwritable_path_stops_the_run_before_any_op) {
  cr_assert_eq(replay("--hal=cpu --iters=1 --timeline=/nonexistent/dir/t.json " BUNDLE), 2);
  cr_assert_str_eq(err_text, "replay: /nonexistent/dir/t.json: cannot create the timeline: No "
                             "such file or directory\n");
  cr_assert_null(strstr(out_text, "aten::mm"), "an op ran: %s", out_text);
  cr_assert_eq(replay("--hal=cpu --timeline-events=-1 --timeline=t.json " BUNDLE), 2);
  cr_assert_str_eq(err_text, "replay: --timeline-events=-1: must be at least 0\n");
}

/* A write that fails (a full disk; here a file-size limit) stops the run with one line naming
 * the file, exit 2, and the file cut back to its last complete document. */
Test(timeline, a_failed_write_stops_the_run_and_leaves_json) {
  cr_assert_eq(replay("--hal=cpu --iters=1 --timeline=/dev/full " BUNDLE), 2);
  cr_assert_str_eq(err_text, "replay: /dev/full: writing the timeline failed: No space left on "
                             "device\n");
  char trace_path[1024], err_path[1100];
  run_path("limited.json", trace_path, sizeof trace_path);
  snprintf(err_path, sizeof err_path, "%s", scratch("limited.err"));
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) {
    freopen("/dev/null", "w", stdout);
    freopen(err_path, "w", stderr);
    /* Room for the head and the devices, not for the first op's 200 samples. */
    struct rlimit limit = {4096, 4096};
    setrlimit(RLIMIT_FSIZE, &limit);
    signal(SIGXFSZ, SIG_IGN); /* a write past it fails with EFBIG instead */
    char arg[1100];
    snprintf(arg, sizeof arg, "--timeline=%s", trace_path);
    execl("tools/replay", "replay", "--hal=cpu", "--warmup=0", "--iters=200", arg, BUNDLE,
          (char *)NULL);
    _exit(127);
  }
  int status;
  cr_assert_eq(waitpid(child, &status, 0), child);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 2, "status %d", status);
  char expected[1200];
  snprintf(expected, sizeof expected, "replay: %s: writing the timeline failed: File too large\n",
           trace_path);
  slurp(err_path, err_text, sizeof err_text);
  cr_assert_str_eq(err_text, expected);
  cJSON *trace = read_json(trace_path);
  cr_assert(!strncmp(metadata_name(trace, "process_name", 1, 0), "cpu:0 (", 7));
  const cJSON *none[1];
  cr_assert_eq(events(trace, 1, NULL, -1, none, 1), 0, "the op that did not fit is not there");
  cJSON_Delete(trace);
}

/* SIGINT while an op is timed: the file is complete JSON with the op that ended before (one no
 * kernel knows, over at once) and the interrupted one, whose samples taken so far are drawn. */
Test(timeline, an_interrupted_run_leaves_a_complete_trace) {
  char trace_path[1024], bundle[1024];
  run_path("interrupted.json", trace_path, sizeof trace_path);
  snprintf(bundle, sizeof bundle, "%s", scratch("slow_bundle.json"));
  write_text(bundle,
             "{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": \"x::first\"}, "
             "{\"name\": \"aten::mm\", \"args\": ["
             "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": {\"shape\": [128, 128], "
             "\"dtype\": \"float\"}}, {\"name\": \"mat2\", \"type\": \"Tensor\", \"value\": "
             "{\"shape\": [128, 128], \"dtype\": \"float\"}}]}, {\"name\": \"x::next\"}]}");
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) {
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    char arg[1100];
    snprintf(arg, sizeof arg, "--timeline=%s", trace_path);
    /* The op would time for a minute; the signal comes a second into it. */
    execl("tools/replay", "replay", "--hal=cpu", "--warmup=0", "--iters=1", "--min-time=60000",
          arg, bundle, (char *)NULL);
    _exit(127);
  }
  /* The first op's events are on disk once it ended. */
  static char text[1 << 22];
  struct timespec tick = {0, 20 * 1000 * 1000}, second = {1, 0};
  int status;
  for (int i = 0; i < 3000; i++) {
    slurp(trace_path, text, sizeof text);
    if (strstr(text, "\"cat\":\"op\"")) break;
    cr_assert_eq(waitpid(child, &status, WNOHANG), 0, "replay ended before it was interrupted");
    nanosleep(&tick, NULL);
  }
  nanosleep(&second, NULL);
  kill(child, SIGINT);
  cr_assert_eq(waitpid(child, &status, 0), child);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d", status);
  cJSON *trace = read_json(trace_path);
  const cJSON *span[2];
  cr_assert_eq(events(trace, 1, "op", 0, span, 2), 1);
  cr_assert_str_eq(arg_str(span[0], "outcome"), "unsupported");
  cr_assert_eq(events(trace, 1, "op", 1, span, 2), 1, "the interrupted op is drawn");
  cr_assert_str_eq(arg_str(span[0], "outcome"), "interrupted");
  const cJSON *timed[1];
  cr_assert_gt(events(trace, 1, "timed", 1, timed, 1), 0, "its samples so far");
  cr_assert_eq(events(trace, 1, "op", 2, span, 2), 0, "the op after it never started");
  cJSON_Delete(trace);
}

/* --warmup=0 still leaves every input copy's first call out of the timing: a first call sets
 * things up (oneDNN's JIT, a plan, pages touched), and with --rotate=4 each copy has its own.
 * The timeline shows the four untimed first calls, all before the first timed sample. */
Test(timeline, every_copys_first_call_precedes_the_timing) {
  char trace_path[1024], report_path[1024], args[4096];
  run_path("first_calls.json", trace_path, sizeof trace_path);
  run_path("first_calls_report.json", report_path, sizeof report_path);
  snprintf(args, sizeof args,
           "--hal=cpu --iters=8 --warmup=0 --rotate=4 --timeline=%s --report=%s " BUNDLE,
           trace_path, report_path);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cJSON *trace = read_json(trace_path), *report = read_json(report_path);
  const cJSON *op;
  size_t checked = 0;
  cJSON_ArrayForEach(op, cJSON_GetObjectItem(report, "ops")) {
    if (strcmp(json_str(op, "outcome"), "ok")) continue;
    int index = (int)json_number(op, "index");
    cr_assert_eq(json_number(op, "rotate"), 4, "op %d", index);
    const cJSON *warm[8], *timed[64];
    size_t nw = events(trace, 1, "warmup", index, warm, 8);
    size_t nt = events(trace, 1, "timed", index, timed, 64);
    cr_assert_gt(nt, 0);
    double first_timed = json_number(timed[0], "ts"), untimed_calls = 0;
    for (size_t i = 0; i < nw; i++) {
      const char *call = arg_str(warm[i], "call");
      if (!strncmp(call, "first call", 10)) untimed_calls += arg_number(warm[i], "executions");
      cr_assert_leq(json_number(warm[i], "ts") + json_number(warm[i], "dur"),
                    first_timed + 0.002, "op %d: %s ends after the first timed sample", index,
                    call);
    }
    cr_assert_eq(untimed_calls, 4, "op %d: one untimed first call per input copy", index);
    checked++;
  }
  cr_assert_eq(checked, 3, "the bundle's three ops that run");
  cJSON_Delete(trace);
  cJSON_Delete(report);
}
