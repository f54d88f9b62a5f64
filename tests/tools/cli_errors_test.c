/* The command line given something wrong, and the figures it writes that must not mislead:
 * each case one a user met, run on the real binary the way a user runs it. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/csv.h"
#include "tests/tools/cli_util.h"

#define EXAMPLE "examples/llm_small.msgpack"
#define INVALID "tests/data/bundles/invalid_ops.json"
#define UNNAMED "tests/data/bundles/unnamed_device.json"
#define PLAIN_TRACE "tests/data/traces/h100_vision_train_step.json"
#define GZ_TRACE "tests/data/fixtures/traces/mi300_bert_small.json.gz"

/* `replay ARGS` exits 2 with exactly `line` (and its newline) on stderr, nothing on stdout. */
static void refused_with(const char *args, const char *line) {
  cr_assert_eq(replay(args), 2, "replay %s: %s", args, out_text);
  char want[2048];
  snprintf(want, sizeof want, "%s\n", line);
  cr_assert_str_eq(err_text, want, "replay %s", args);
  cr_assert_str_eq(out_text, "", "replay %s", args);
}

/* ------------------------------------------------------------------------------------------ */
/* options                                                                                     */

Test(cli_errors, an_unknown_option_is_one_line_with_the_closest_valid_one) {
  refused_with("--iter=1 B", "replay: unknown option --iter=1 (did you mean --iters?)");
  refused_with("--hal=cpu --stop-on-eror " EXAMPLE,
               "replay: unknown option --stop-on-eror (did you mean --stop-on-error?)");
  refused_with("--op-f=mm " EXAMPLE,
               "replay: unknown option --op-f=mm (did you mean --op-filter?)");
  refused_with("extract --topp 3", "replay extract: unknown option --topp (did you mean --top?)");
  refused_with("plan --jsno " EXAMPLE, "replay plan: unknown option --jsno (did you mean --json?)");
  refused_with("inspect --josn " EXAMPLE,
               "replay inspect: unknown option --josn (did you mean --json?)");
  refused_with("convert a.json b.json --strip-dat",
               "replay convert: unknown option --strip-dat (did you mean --strip-data?)");
  refused_with("devices --calibrat",
               "replay devices: unknown option --calibrat (did you mean --calibrate?)");
  refused_with("compare a.json b.json --svgg=x.svg",
               "replay compare: unknown option --svgg=x.svg (did you mean --svg?)");
  refused_with("report a.json --ouput p.html",
               "replay report: unknown option --ouput (did you mean --output?)");
  refused_with("merge a.json -o m.json --allow-mixed-device",
               "replay merge: unknown option --allow-mixed-device (did you mean "
               "--allow-mixed-devices?)");
  refused_with("validate --strict " INVALID,
               "replay validate: unknown option --strict (`replay validate --help` lists the "
               "options)");
  /* Nothing close: where the options are listed instead. */
  refused_with("--frobnicate " EXAMPLE,
               "replay: unknown option --frobnicate (`replay --help-run` lists the options)");
  refused_with("plan --frobnicate " EXAMPLE,
               "replay plan: unknown option --frobnicate (`replay plan --help` lists the options)");
  /* A subcommand mistyped is not taken for a bundle. */
  refused_with("valdiate " INVALID,
               "replay: valdiate: no such subcommand or file (did you mean `replay validate`?)");
}

Test(cli_errors, a_bad_value_says_why) {
  refused_with("--iters=0 " EXAMPLE, "replay: --iters=0: must be at least 1");
  refused_with("--iters 0 " EXAMPLE, "replay: --iters=0: must be at least 1");
  refused_with("--iters=x " EXAMPLE, "replay: --iters=x: not a whole number");
  refused_with("--warmup=-1 " EXAMPLE, "replay: --warmup=-1: must be at least 0");
  refused_with("--cache=lukewarm " EXAMPLE, "replay: --cache=lukewarm: takes warm, cold or both");
  refused_with("--max-memory=lots " EXAMPLE,
               "replay: --max-memory=lots: not a positive byte count (1048576, 64K, 512M, 24G)");
  refused_with("--check=yes " EXAMPLE, "replay: --check=yes: takes no value");
  refused_with("--cache-blocks=half " EXAMPLE,
               "replay: --cache-blocks=half: takes auto, full or compact");
  refused_with("plan --cache-blocks half " EXAMPLE,
               "replay plan: --cache-blocks=half: takes auto, full or compact");
  refused_with(EXAMPLE " --hal", "replay: --hal: needs a value");
  refused_with("plan --op-limit=-1 " EXAMPLE, "replay plan: --op-limit=-1: must be at least 0");
  refused_with("extract " GZ_TRACE " -o x.msgpack --top=0",
               "replay extract: --top=0: must be at least 1");
  refused_with("convert " EXAMPLE " out.json --to=yaml",
               "replay convert: --to=yaml: takes json, msgpack or tracelens");
  /* Operands: one line too. */
  refused_with("--hal=cpu", "replay: BUNDLE is required (`replay --help-run` lists the options)");
  refused_with("inspect " EXAMPLE " " EXAMPLE,
               "replay inspect: one bundle at a time (" EXAMPLE ", then " EXAMPLE ")");
}

Test(cli_errors, help_only_when_asked) {
  static const char *const helps[] = {"--help-run", "plan --help",    "inspect --help",
                                      "validate -h", "convert --help", "devices --help",
                                      "compare --help", "report --help", "merge --help",
                                      "extract --help", "slice --help"};
  for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++) {
    cr_assert_eq(replay(helps[i]), 0, "replay %s: %s", helps[i], err_text);
    cr_assert(strstr(out_text, "usage: replay"), "replay %s: %s", helps[i], out_text);
    cr_assert_str_eq(err_text, "", "replay %s", helps[i]);
  }
  static const char *const mistakes[] = {"--iters=0 " EXAMPLE, "plan --x " EXAMPLE,
                                         "convert " EXAMPLE, "extract -o x.json", "merge",
                                         "report a.json", "compare a.json",
                                         "slice " EXAMPLE " --op=99 -o x.json"};
  for (size_t i = 0; i < sizeof mistakes / sizeof mistakes[0]; i++) {
    cr_assert_eq(replay(mistakes[i]), 2, "replay %s", mistakes[i]);
    cr_assert_null(strstr(err_text, "usage"), "replay %s: %s", mistakes[i], err_text);
    cr_assert(strchr(err_text, '\n') && !strchr(err_text, '\n')[1], "one line: replay %s: %s",
              mistakes[i], err_text);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* validate                                                                                    */

/* The planner's checks: shapes that disagree, dtypes, an argument of the wrong kind, each named
 * by op index, op and argument; an op no kernel knows is not one of them. */
Test(cli_errors, validate_refuses_what_the_planner_refuses) {
  cr_assert_eq(replay("validate " INVALID), 2, "%s", out_text);
  cr_assert_str_eq(err_text,
                   INVALID ": ops[0] aten::mm: self is [.., 16] but mat2 has 32 rows: inner "
                   "dimensions differ\n" INVALID
                   ": ops[1] aten::mm: self and mat2 must share a float dtype (got float and "
                   "c10::BFloat16)\n" INVALID
                   ": ops[2] aten::add: argument 'other': expected a tensor or a number\n" INVALID
                   ": invalid: 3 problems\n");
  /* The run agrees: the same three fail, the unknown op is unsupported. */
  cr_assert_eq(replay("--hal=cpu --iters=1 --warmup=0 " INVALID), 1, "%s", err_text);
  cr_assert(strstr(out_text, "5 of 5 ops attempted: 1 succeeded, 3 failed, 1 unsupported"), "%s",
            out_text);
  /* A bundle whose only trouble is an op no kernel knows is valid, saying so. */
  const char *unknown = scratch("unknown.json");
  write_text(unknown, "{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": \"x::unknown_op\"}]}");
  char args[1024], want[2048];
  snprintf(args, sizeof args, "validate %s", unknown);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(want, sizeof want,
           "%s: 1 op unsupported, not a problem (`replay plan` says why): x::unknown_op\n",
           unknown);
  cr_assert(strstr(out_text, want), "%s", out_text);
  cr_assert_eq(replay("validate " EXAMPLE), 0, "%s", err_text);
}

/* ------------------------------------------------------------------------------------------ */
/* inputs that are not what they seem                                                          */

Test(cli_errors, profiler_traces_plain_or_gzipped_get_the_extract_hint) {
  refused_with("--hal=cpu " PLAIN_TRACE,
               "replay: " PLAIN_TRACE ": a profiler trace (JSON with \"traceEvents\"), not a "
               "bundle: make a bundle of it with `replay extract " PLAIN_TRACE
               " -o BUNDLE.msgpack`");
  refused_with("plan " PLAIN_TRACE,
               "replay plan: " PLAIN_TRACE ": a profiler trace (JSON with \"traceEvents\"), not "
               "a bundle: make a bundle of it with `replay extract " PLAIN_TRACE
               " -o BUNDLE.msgpack`");
  refused_with("--hal=cpu " GZ_TRACE,
               "replay: " GZ_TRACE ": a gzip file, not a bundle: if it is a profiler trace, make "
               "a bundle of it with `replay extract " GZ_TRACE " -o BUNDLE.msgpack`");
  /* traceEvents after other keys: told once parsed. */
  const char *late = scratch("late_trace.json");
  write_text(late, "{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": []}");
  char args[1024], want[2048];
  snprintf(args, sizeof args, "inspect %s", late);
  snprintf(want, sizeof want,
           "replay: %s: a profiler trace (JSON with \"traceEvents\"), not a bundle: make a bundle "
           "of it with `replay extract %s -o BUNDLE.msgpack`",
           late, late);
  refused_with(args, want);
}

/* A trace whose device name was recorded as "": not recorded, and no replay is cross-device. */
Test(cli_errors, an_empty_device_name_is_not_recorded) {
  cr_assert_eq(replay("inspect " UNNAMED), 0, "%s", err_text);
  cr_assert(strstr(out_text, "\ncaptured on: not recorded\n"), "%s", out_text);
  const char *report = scratch("unnamed.report.json");
  char args[1024];
  snprintf(args, sizeof args, "--hal=cpu --iters=2 --warmup=0 --report=%s " UNNAMED, report);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "summary [cpu]: replay vs trace (the trace's device is not recorded; "
                             "replayed on "),
            "%s", out_text);
  cr_assert(strstr(out_text, "summary [cpu]: worst ratios (replay / trace): #0 aten::mm "), "%s",
            out_text);
  cr_assert_null(strstr(out_text, "cross-device"), "%s", out_text);
  cJSON *r = read_json(report);
  const cJSON *source = cJSON_GetObjectItem(r, "source");
  cr_assert_str_eq(json_str(source, "trace"), "trace.json.gz");
  cr_assert_null(cJSON_GetObjectItem(source, "device"), "no device in the report's source");
  const cJSON *t = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "summary"), "replay_vs_trace");
  cr_assert_not_null(t);
  cr_assert_null(cJSON_GetObjectItem(t, "trace_device"));
  cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(t, "same_device")));
  cJSON_Delete(r);
  /* `replay compare` of that report says so too. */
  snprintf(args, sizeof args, "compare %s %s", report, report);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "A: replay vs trace (the trace's device is not recorded; "), "%s",
            out_text);
  cr_assert_null(strstr(out_text, "cross-device"), "%s", out_text);
}

/* What TraceLens IR cannot hold is named, field by field, before it is dropped. */
Test(cli_errors, convert_to_tracelens_lists_what_it_drops) {
  const char *bundle = scratch("bert.msgpack"), *ir = scratch("bert.tracelens.json");
  char args[2048];
  snprintf(args, sizeof args, "extract " GZ_TRACE " -q -o %s", bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(args, sizeof args, "convert %s %s --to=tracelens", bundle, ir);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  char heading[1200];
  snprintf(heading, sizeof heading,
           "replay convert: TraceLens IR cannot carry these; %s leaves them out:\n", ir);
  cr_assert(!strncmp(err_text, heading, strlen(heading)), "%s", err_text);
  static const char *const lines[] = {
      "\n  metadata.device_name: AMD Instinct MI300X VF\n",
      "\n  metadata.source_trace: mi300_bert_small.json.gz\n",
      "\n  timing.gpu_time_us of 16 ops: the GPU time the trace recorded (a replay's trace_us and "
      "its replay / trace ratios)\n",
      "\n  timing.kernels of 16 ops: "};
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
    cr_assert(strstr(err_text, lines[i]), "%s missing in\n%s", lines[i], err_text);
  cr_assert(strstr(err_text, "wrote "), "%s", err_text);
  /* To our formats nothing is lost, and nothing is said. */
  snprintf(args, sizeof args, "convert %s %s.json", bundle, bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert_null(strstr(err_text, "cannot carry"), "%s", err_text);
}

Test(cli_errors, a_filter_that_selects_no_op_is_a_usage_error) {
#define NONE_OF                                                                   \
  ": --op-filter=zzz: no op of " EXAMPLE " has a name containing \"zzz\" (11 ops: " \
  "aten::mm, aten::linear, aten::addmm, aten::_scaled_dot_product_flash_attention, ...)"
  refused_with("--hal=cpu --op-filter=zzz " EXAMPLE, "replay" NONE_OF);
  refused_with("plan --hal=cpu --op-filter=zzz " EXAMPLE, "replay plan" NONE_OF);
#undef NONE_OF
  char args[1024], want[2048];
  snprintf(args, sizeof args, "extract " GZ_TRACE " --op-filter zzz -o %s", scratch("none.json"));
  snprintf(want, sizeof want,
           "replay extract: --op-filter=zzz: no op of " GZ_TRACE
           " with GPU work has a name containing \"zzz\"");
  refused_with(args, want);
  cr_assert_neq(access(scratch("none.json"), F_OK), 0, "no bundle written");
}

/* ------------------------------------------------------------------------------------------ */
/* the CSV report                                                                              */

/* A JSON value as the CSV writes it: text as is, numbers and the rest as compact JSON. */
static void as_text(const cJSON *v, char *out, size_t size) {
  if (!v || cJSON_IsNull(v)) {
    snprintf(out, size, "%s", "");
  } else if (cJSON_IsString(v)) {
    snprintf(out, size, "%s", v->valuestring);
  } else {
    char *text = cJSON_PrintUnformatted(v);
    snprintf(out, size, "%s", text);
    cJSON_free(text);
  }
}

/* Four aten::addmm of one trace, told apart by their arguments, counts and figures, all of
 * which the CSV holds as the JSON report does: every field of every op (nested ones as
 * "contention.batches"), and no field left over in "more". */
Test(cli_errors, the_csv_carries_every_per_op_field_of_the_json_report) {
  const char *bundle = scratch("addmm.msgpack"), *csv = scratch("addmm.csv"),
             *json = scratch("addmm.json");
  char args[2048];
  snprintf(args, sizeof args, "extract " GZ_TRACE " -q --op-filter aten::addmm -o %s", bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(args, sizeof args, "--hal=cpu --iters=2 --warmup=0 --check --report=%s %s", csv, bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(args, sizeof args, "--hal=cpu --iters=2 --warmup=0 --check --report=%s %s", json,
           bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);

  static char text[1 << 18];
  slurp(csv, text, sizeof text);
  char *lines[16];
  size_t nlines = 0;
  for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    cr_assert_lt(nlines, 16);
    lines[nlines++] = l;
  }
  cr_assert_eq(nlines, 5, "a header and four rows: %zu lines", nlines);
  char *header[128];
  size_t columns = csv_split(lines[0], header, 128);
  /* The columns of the first CSV reports first, in their order. */
  static const char *const first[] = {"index", "name", "outcome", "kernel", "iterations",
                                      "min_us", "median_us"};
  for (size_t k = 0; k < sizeof first / sizeof first[0]; k++)
    cr_assert_str_eq(header[k], first[k]);
  cr_assert_str_eq(header[columns - 1], "more");

  cJSON *report = read_json(json);
  const cJSON *ops = cJSON_GetObjectItem(report, "ops");
  cr_assert_eq(cJSON_GetArraySize(ops), 4);
  char seen_args[4][512];
  for (size_t row = 0; row < 4; row++) {
    char *fields[128];
    cr_assert_eq(csv_split(lines[row + 1], fields, 128), columns, "row %zu", row);
    const cJSON *op = cJSON_GetArrayItem(ops, (int)row);
    cr_assert_str_eq(fields[columns - 1], "", "row %zu: fields without a column: %s", row,
                     fields[columns - 1]);
    /* Every field of the JSON op has its column; those the two runs share hold the same. */
    const cJSON *m;
    cJSON_ArrayForEach(m, op) {
      const cJSON *leaves = cJSON_IsObject(m) ? m->child : m;
      for (const cJSON *leaf = leaves; leaf; leaf = cJSON_IsObject(m) ? leaf->next : NULL) {
        char name[128];
        if (cJSON_IsObject(m)) snprintf(name, sizeof name, "%s.%s", m->string, leaf->string);
        else snprintf(name, sizeof name, "%s", m->string);
        size_t c = 0;
        while (c < columns && strcmp(header[c], name)) c++;
        cr_assert_lt(c, columns, "no column for %s", name);
        static const char *const fixed[] = {"index", "name", "args", "count", "outcome",
                                            "kernel", "family", "peak_dtype", "flops",
                                            "bytes", "bound", "peak_basis", "trace_us",
                                            "iterations", "check_passed"};
        for (size_t f = 0; f < sizeof fixed / sizeof fixed[0]; f++) {
          if (strcmp(name, fixed[f])) continue;
          char want[1024];
          as_text(leaf, want, sizeof want);
          cr_assert_str_eq(fields[c], want, "row %zu, %s", row, name);
        }
      }
    }
    cr_assert_str_eq(fields[1], "aten::addmm");
    size_t args_column = 0;
    while (strcmp(header[args_column], "args")) args_column++;
    snprintf(seen_args[row], sizeof seen_args[row], "%s", fields[args_column]);
    cr_assert(strstr(seen_args[row], "mat1=bf16["), "%s", seen_args[row]);
    for (size_t other = 0; other < row; other++)
      cr_assert_str_neq(seen_args[row], seen_args[other], "rows %zu and %zu", other, row);
  }
  cJSON_Delete(report);
}
