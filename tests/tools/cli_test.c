/* The `replay` command line over formats/: exit codes, messages on stderr, files written.
 * Runs the real binary (a data dependency) the way a user would. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "formats/bundle.h"
#include "tests/tools/cli_util.h"

#define EXAMPLE "examples/llm_small.msgpack"

Test(cli, inspect_prints_the_op_table) {
  cr_assert_eq(replay("inspect " EXAMPLE), 0, "%s", err_text);
  cr_assert(strstr(out_text, "11 ops"), "%s", out_text);
  cr_assert(strstr(out_text, "aten::mm"), "%s", out_text);
  cr_assert(strstr(out_text, "mat2=bf16[2048,2048]{1,2048}"), "%s", out_text);
  cr_assert(strstr(out_text, "_C::paged_attention_v1"), "%s", out_text);
  cr_assert(strstr(out_text, "shapes only"), "%s", out_text);
}

Test(cli, inspect_json_is_machine_readable) {
  cr_assert_eq(replay("inspect --json " EXAMPLE), 0, "%s", err_text);
  cr_assert(strstr(out_text, "\"format\":\t\"msgpack\""), "%s", out_text);
  cr_assert(strstr(out_text, "\"name\":\t\"vllm::outplace_fused_experts\""), "%s", out_text);
}

Test(cli, replays_the_example_on_the_cpu) {
  cr_assert_eq(replay("--hal=cpu --iters=2 --warmup=0 --op-limit=1 " EXAMPLE), 0, "%s", err_text);
  cr_assert(strstr(out_text, "== cpu: "), "%s", out_text);
  cr_assert(strstr(out_text, "aten::mm"), "%s", out_text);
  cr_assert(strstr(out_text, "1 of 11 ops attempted: 1 succeeded, 0 failed, 0 unsupported"), "%s",
            out_text);
}

Test(cli, relative_paths_follow_build_working_directory) {
  char args[1024];
  char *cwd = realpath("examples", NULL);
  snprintf(args, sizeof args, "inspect llm_small.msgpack");
  setenv("BUILD_WORKING_DIRECTORY", cwd, 1);
  int rc = replay(args);
  unsetenv("BUILD_WORKING_DIRECTORY");
  free(cwd);
  cr_assert_eq(rc, 0, "%s", err_text);
}

Test(cli, convert_round_trip_and_tracelens) {
  char args[4096], json[1024], mp[1024], tl[1024];
  snprintf(json, sizeof json, "%s/a.json", tmpdir());
  snprintf(mp, sizeof mp, "%s/a.msgpack", tmpdir());
  snprintf(tl, sizeof tl, "%s/a.tracelens.json", tmpdir());
  snprintf(args, sizeof args, "convert %s %s", EXAMPLE, json);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(args, sizeof args, "convert %s %s", json, mp);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(args, sizeof args, "convert %s %s --to=tracelens", mp, tl);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  xr_bundle_t *a, *b, *c;
  cr_assert_eq(xr_bundle_load(EXAMPLE, &a), XR_OK);
  cr_assert_eq(xr_bundle_load(mp, &b), XR_OK);
  cr_assert_eq(xr_bundle_load(tl, &c), XR_OK, "%s", xr_last_error());
  char where[256];
  cr_assert(xr_bundle_equal(a, b, where, sizeof where), "differs at %s", where);
  cr_assert_eq(c->source_format, XR_FORMAT_TRACELENS);
  cr_assert_eq(c->op_count, a->op_count);
  xr_bundle_destroy(a);
  xr_bundle_destroy(b);
  xr_bundle_destroy(c);
}

Test(cli, embed_and_strip_data) {
  /* One golden case, pointing at its .npy files by absolute path. */
  char *golden = realpath("tests/data/golden", NULL);
  char bundle[1024], text[2048], args[4096], embedded[1024], stripped[1024];
  snprintf(bundle, sizeof bundle, "%s/case.json", tmpdir());
  snprintf(text, sizeof text,
           "[{\"op_name\": \"aten::mm\", \"replay_ir\": {\"list_pos_args\": ["
           "{\"arg_name\": \"self\", \"arg_type\": \"Tensor\", \"value\": {\"shape\": [64, 96], "
           "\"dtype\": \"float\", \"strides\": [96, 1], \"data\": \"%s/mm_f32_64x96x80__self.npy\"}},"
           "{\"arg_name\": \"mat2\", \"arg_type\": \"Tensor\", \"value\": {\"shape\": [96, 80], "
           "\"dtype\": \"float\", \"strides\": [80, 1], \"data\": \"%s/mm_f32_64x96x80__mat2.npy\"}}],"
           " \"list_kwargs\": []}}]",
           golden, golden);
  free(golden);
  write_text(bundle, text);
  snprintf(embedded, sizeof embedded, "%s/embedded.msgpack", tmpdir());
  snprintf(stripped, sizeof stripped, "%s/stripped.msgpack", tmpdir());
  snprintf(args, sizeof args, "convert %s %s --embed-data", bundle, embedded);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(err_text, "contents of 2 tensors embedded"), "%s", err_text);
  snprintf(args, sizeof args, "inspect %s", embedded);
  cr_assert_eq(replay(args), 0);
  cr_assert(strstr(out_text, "tensor contents embedded in the file"), "%s", out_text);
  snprintf(args, sizeof args, "convert %s %s --strip-data", embedded, stripped);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(args, sizeof args, "inspect %s", stripped);
  cr_assert_eq(replay(args), 0);
  cr_assert(strstr(out_text, "shapes only"), "%s", out_text);
  snprintf(args, sizeof args, "validate %s", embedded);
  cr_assert_eq(replay(args), 0, "%s", err_text);
}

Test(cli, validate_reports_every_problem_with_exit_2) {
  char bad[1024], args[2048];
  snprintf(bad, sizeof bad, "%s/bad.json", tmpdir());
  write_text(bad,
             "[{\"op_name\": \"aten::mm\", \"replay_ir\": {\"list_pos_args\": ["
             "{\"arg_name\": \"self\", \"arg_type\": \"Tensor\", \"value\": {\"shape\": [3, -4], "
             "\"dtype\": \"float\"}},"
             "{\"arg_name\": \"mat2\", \"arg_type\": \"Tensor\", \"value\": {\"shape\": [4, 2], "
             "\"dtype\": \"float\", \"data\": \"missing.npy\"}}], \"list_kwargs\": []}}]");
  snprintf(args, sizeof args, "validate %s", bad);
  cr_assert_eq(replay(args), 2);
  cr_assert(strstr(err_text, "ops[0].replay_ir.list_pos_args[0].value.shape[1]: negative dimension -4"),
            "%s", err_text);
  cr_assert(strstr(err_text, "list_pos_args[1].value.data: ") && strstr(err_text, "missing.npy"),
            "%s", err_text);
  cr_assert(strstr(err_text, "invalid: 2 problems"), "%s", err_text);
  /* Loading for replay stops at the first problem, also with exit 2. */
  snprintf(args, sizeof args, "inspect %s", bad);
  cr_assert_eq(replay(args), 2);
  cr_assert(strstr(err_text, "negative dimension -4"), "%s", err_text);
}

Test(cli, usage_errors_exit_2) {
  cr_assert_eq(replay(""), 2);
  cr_assert(strstr(err_text, "usage: replay"), "%s", err_text);
  cr_assert_eq(replay("inspect"), 2);
  cr_assert(strstr(err_text, "BUNDLE is required"), "%s", err_text);
  cr_assert_eq(replay("inspect --frobnicate " EXAMPLE), 2);
  cr_assert_eq(replay("convert " EXAMPLE), 2);
  cr_assert_eq(replay("convert " EXAMPLE " out.txt"), 2);
  cr_assert(strstr(err_text, "cannot tell the output format"), "%s", err_text);
  cr_assert_eq(replay("convert " EXAMPLE " out.json --to=yaml"), 2);
  cr_assert_eq(replay("convert " EXAMPLE " o.msgpack --embed-data --strip-data"), 2);
  cr_assert_eq(replay("no/such/file.msgpack"), 2);
  cr_assert(strstr(err_text, "no/such/file.msgpack: cannot open"), "%s", err_text);
  cr_assert_eq(replay("--help"), 0);
  cr_assert_eq(replay("--version"), 0);
  cr_assert(strstr(out_text, "bundle format 1"), "%s", out_text);
  /* The commit stamped at build time (tools/workspace_status.sh): 12 hex digits, "-dirty"
   * after them for a modified tree, or "unknown" outside a git checkout. */
  const char *commit = strstr(out_text, ", commit ");
  cr_assert(commit, "%s", out_text);
  commit += strlen(", commit ");
  size_t hex = strspn(commit, "0123456789abcdef");
  cr_assert(hex == 12 || strncmp(commit, "unknown,", 8) == 0, "%s", out_text);
}

/* A bundle of small GEMMs, written into the test's scratch directory. */
static const char *tiny_bundle(void) {
  static char path[1024];
  snprintf(path, sizeof path, "%s/tiny.%d.json", tmpdir(), (int)getpid());
  write_text(path,
             "{\"format\": \"xreplay-bundle\", \"ops\": ["
             "{\"name\": \"aten::mm\", \"args\": [{\"name\": \"self\", \"type\": \"Tensor\", "
             "\"value\": {\"shape\": [8, 16], \"dtype\": \"float\"}}, {\"name\": \"mat2\", "
             "\"type\": \"Tensor\", \"value\": {\"shape\": [16, 4], \"dtype\": \"float\"}}], "
             "\"count\": 3, \"timing\": {\"gpu_time_us\": 30.0, \"kernels\": []}},"
             "{\"name\": \"x::unknown_op\", \"timing\": {\"gpu_time_us\": 10.0, \"kernels\": []}}]}");
  return path;
}

Test(cli, replay_lines_summary_and_trace_coverage) {
  char args[4096], report[1024], html[1024];
  snprintf(report, sizeof report, "%s/r.%d.csv", tmpdir(), (int)getpid());
  snprintf(html, sizeof html, "%s/r.%d.html", tmpdir(), (int)getpid());
  snprintf(args, sizeof args,
           "--hal=cpu --iters=3 --warmup=1 --check -v --report=%s --html=%s %s", report, html,
           tiny_bundle());
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "check ok"), "%s", out_text);
  cr_assert(strstr(out_text, "trace 10.00 us"), "per-call trace time (30 us / 3): %s", out_text);
  cr_assert(strstr(out_text, "unsupported: no kernel for op 'x::unknown_op'"), "%s", out_text);
  cr_assert(strstr(out_text, "2 of 2 ops attempted: 1 succeeded, 0 failed, 1 unsupported"), "%s",
            out_text);
  cr_assert(strstr(out_text, "cover 75.0% of the source trace's GPU time"), "%s", out_text);
  cr_assert(strstr(out_text, "3 iterations (iterations, held launch, 1 input copies"),
            "verbose: the stop rule's reason, the launch and the rotation: %s", out_text);
  cr_assert(strstr(out_text, "p25 ") && strstr(out_text, "IQR "), "verbose percentiles: %s",
            out_text);
  slurp(report, out_text, sizeof out_text);
  cr_assert(strstr(out_text, "index,name,outcome,kernel"), "%s", out_text);
  cr_assert(strstr(out_text, "\"x::unknown_op\",\"unsupported\""), "%s", out_text);
  /* --html: the page of the run (tests/tools/report_test.c renders such pages in a browser). */
  slurp(html, out_text, sizeof out_text);
  cr_assert(strstr(out_text, "<!DOCTYPE html>") && strstr(out_text, "</html>"), "%s", out_text);
  cr_assert(strstr(out_text, "<td class=\"name\">x::unknown_op</td>"), "%s", out_text);
  cr_assert(strstr(out_text, "pass (nmse "), "the check's result: %s", out_text);
}

Test(cli, timing_options) {
  char args[4096], report[1024];
  snprintf(report, sizeof report, "%s/t.%d.json", tmpdir(), (int)getpid());
  snprintf(args, sizeof args,
           "--hal=cpu --stop=noise:50 --min-samples=12 --max-time=300 --cache=both "
           "--flush-bytes=1M --rotate=auto --launch=graph -v --report=%s --op-limit=1 %s",
           report, tiny_bundle());
  cr_assert_eq(replay(args), 2, "graph launches and cold caches do not mix: %s", out_text);
  cr_assert(strstr(err_text, "--launch=eager"), "%s", err_text);
  snprintf(args, sizeof args,
           "--hal=cpu --stop=noise:50 --min-samples=12 --max-time=300 --cache=both "
           "--flush-bytes=1M --rotate=auto -v --report=%s --op-limit=1 %s",
           report, tiny_bundle());
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "  cold "), "the cold time next to the warm one: %s", out_text);
  cr_assert(strstr(out_text, "held launch"), "%s", out_text);
  cr_assert(strstr(out_text, "(noise,") || strstr(out_text, "(max-time,") ||
                strstr(out_text, "(max-iterations,"),
            "the noise rule's reasons to stop: %s", out_text);
  slurp(report, out_text, sizeof out_text);
  static const char *const fields[] = {"\"stop\":\"noise\"",  "\"noise_percent\":50",
                                       "\"min_samples\":12",  "\"max_time_ms\":300",
                                       "\"cache\":\"both\"",  "\"flush_bytes\":1048576",
                                       "\"rotate\":\"auto\"", "\"stop_reason\":",
                                       "\"noise_met\":",      "\"iqr_us\":",
                                       "\"launch\":\"held\"", "\"timed_wall_ms\":",
                                       "\"contention\":",     "\"cold\":",
                                       "\"peak_basis\":"};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
    cr_assert(strstr(out_text, fields[i]), "%s missing in %s", fields[i], out_text);
  static const char *const bad[] = {"--stop=noise:0",   "--stop=noise:x",     "--stop=often",
                                    "--max-time=-1",    "--min-samples=0",    "--launch=later",
                                    "--cache=lukewarm", "--rotate=sometimes", "--flush-bytes=0"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(args, sizeof args, "--hal=cpu %s %s", bad[i], tiny_bundle());
    cr_assert_eq(replay(args), 2, "%s", bad[i]);
    /* One line naming the option and its value, and why: no usage text. */
    char want[256];
    snprintf(want, sizeof want, "replay: %s: ", bad[i]);
    cr_assert(!strncmp(err_text, want, strlen(want)) && strchr(err_text, '\n') &&
                  !strchr(err_text, '\n')[1],
              "%s: %s", bad[i], err_text);
  }
}

Test(cli, unavailable_hal_exits_3_with_the_reason) {
  char args[4096];
  snprintf(args, sizeof args, "--hal=hip %s", tiny_bundle());
  cr_assert_eq(replay(args), 3, "%s", err_text);
  cr_assert(strstr(err_text, "libamdhip64"), "%s", err_text);
  snprintf(args, sizeof args, "--hal=cuda:0 %s", tiny_bundle());
  cr_assert_eq(replay(args), 3, "%s", err_text);
  cr_assert(strstr(err_text, "--hal=cuda:0: "), "%s", err_text);
}

Test(cli, failed_ops_exit_1_and_stop_on_error_stops) {
  char bad[1024], args[4096];
  snprintf(bad, sizeof bad, "%s/bad.%d.json", tmpdir(), (int)getpid());
  write_text(bad,
             "{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": \"aten::mm\", \"args\": []}, "
             "{\"name\": \"aten::mm\", \"args\": []}]}");
  snprintf(args, sizeof args, "--hal=cpu %s", bad);
  cr_assert_eq(replay(args), 1, "%s", out_text);
  cr_assert(strstr(out_text, "2 failed"), "%s", out_text);
  snprintf(args, sizeof args, "--hal=cpu --stop-on-error %s", bad);
  cr_assert_eq(replay(args), 1);
  cr_assert(strstr(out_text, "1 of 2 ops attempted: 0 succeeded, 1 failed"), "%s", out_text);
  cr_assert_eq(replay("--hal=cpu --iters=0 examples/llm_small.msgpack"), 2);
  cr_assert_eq(replay("--hal=cpu --cache=lukewarm examples/llm_small.msgpack"), 2);
}

Test(cli, two_hals_side_by_side_and_compare_reports) {
  char args[4096], r[1024], a[1100], b[1100], svg[1024];
  snprintf(r, sizeof r, "%s/side.%d.json", tmpdir(), (int)getpid());
  snprintf(args, sizeof args, "--hal=cpu,cpu --iters=2 --warmup=0 --report=%s %s", r, tiny_bundle());
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "== side by side"), "%s", out_text);
  /* The same device twice: the outputs agree exactly. */
  cr_assert(strstr(out_text, "aten::mm") && strstr(out_text, "    0\n"), "%s", out_text);
  snprintf(a, sizeof a, "%s/side.%d.cpu.json", tmpdir(), (int)getpid());
  snprintf(svg, sizeof svg, "%s/speedup.%d.svg", tmpdir(), (int)getpid());
  snprintf(args, sizeof args, "compare %s %s --svg %s", a, a, svg);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "one bundle (") && strstr(out_text, "): ops paired by position"),
            "%s", out_text);
  cr_assert(strstr(out_text, "geometric-mean speed-up of B over A over the 1 matched ops timed on "
                             "both: 1.000x"),
            "%s", out_text);
  /* Two samples a side: a speed-up, but no verdict to defend. */
  cr_assert(strstr(out_text, "UNSURE") && strstr(out_text, "(too few samples in a report)"), "%s",
            out_text);
  cr_assert(strstr(out_text, "A: ") && strstr(out_text, " (cpu \u00b7 "), "%s", out_text);
  slurp(svg, out_text, sizeof out_text);
  cr_assert(strstr(out_text, "<svg") && strstr(out_text, "1.00x"), "%s", out_text);
  /* Labelled with HAL and device, so that two HALs on one device differ. */
  cr_assert(strstr(out_text, "Speed-up of cpu \u00b7 ") && strstr(out_text, "over cpu \u00b7 "),
            "%s", out_text);
  /* An in-place op with two outputs (rotary: query and key) compares the same output of each
   * HAL, read as its own dtype (bf16, where the op's first input is int64 positions). */
  cr_assert_eq(replay("--hal=cpu,opencl --iters=2 --warmup=0 --op-filter=rotary "
                      "examples/llm_small.msgpack"), 0, "%s", err_text);
  const char *side = strstr(out_text, "== side by side");
  cr_assert_not_null(side, "%s", out_text);
  const char *row = strstr(side, "_C::rotary_embedding");
  cr_assert_not_null(row, "%s", out_text);
  const char *eol = strchr(row, '\n'), *last = eol;
  while (last > row && last[-1] != ' ') last--;
  double nmse = strtod(last, NULL);
  cr_assert(last < eol && nmse < 1e-4, "rotary nmse cpu vs opencl: %.*s", (int)(eol - row), row);
  snprintf(b, sizeof b, "%s/not-a-report.json", tmpdir());
  write_text(b, "{\"ops\": 3}");
  snprintf(args, sizeof args, "compare %s %s", a, b);
  cr_assert_eq(replay(args), 2);
  cr_assert(strstr(err_text, "not a replay report"), "%s", err_text);
}

/* SIGINT (Ctrl-C) and SIGTERM stop the run cleanly: the op being timed is reported as
 * interrupted with no time (never ok), the summary counts it apart and says the run was
 * interrupted, the report on disk is complete JSON, and replay exits with the shell's code for
 * the signal. */
static void interrupt_run(int sig, int code) {
  char report[1024], out[1100], bundle[1100];
  snprintf(report, sizeof report, "%s/interrupted.%d.%d.json", tmpdir(), sig, (int)getpid());
  snprintf(out, sizeof out, "%s/interrupted.%d.%d.out", tmpdir(), sig, (int)getpid());
  snprintf(bundle, sizeof bundle, "%s/slow.%d.%d.json", tmpdir(), sig, (int)getpid());
  write_text(bundle,
             "{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": \"aten::mm\", \"args\": ["
             "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": {\"shape\": [256, 256], "
             "\"dtype\": \"float\"}}, {\"name\": \"mat2\", \"type\": \"Tensor\", \"value\": "
             "{\"shape\": [256, 256], \"dtype\": \"float\"}}]}, {\"name\": \"x::next\"}]}");
  unlink(report);
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) {
    freopen(out, "w", stdout);
    freopen("/dev/null", "w", stderr);
    char report_arg[1100];
    snprintf(report_arg, sizeof report_arg, "--report=%s", report);
    /* The op would time for a minute; the signal comes a second into it. */
    execl("tools/replay", "replay", "--hal=cpu", "--warmup=0", "--iters=1", "--min-time=60000",
          report_arg, bundle, (char *)NULL);
    _exit(127);
  }
  /* The report opens once the device has, just before the op runs. */
  struct timespec tick = {0, 20 * 1000 * 1000}, second = {1, 0};
  int status;
  for (int i = 0; i < 3000; i++) {
    slurp(report, out_text, sizeof out_text);
    if (strstr(out_text, "\"ops\"")) break;
    cr_assert_eq(waitpid(child, &status, WNOHANG), 0, "replay ended before it was interrupted");
    nanosleep(&tick, NULL);
  }
  nanosleep(&second, NULL);
  kill(child, sig);
  cr_assert_eq(waitpid(child, &status, 0), child);
  cr_assert(WIFEXITED(status), "replay was killed by signal %d instead of stopping", sig);
  cr_assert_eq(WEXITSTATUS(status), code, "signal %d", sig);
  slurp(out, out_text, sizeof out_text);
  cr_assert(strstr(out_text, "interrupted: interrupted while timing"), "%s", out_text);
  cr_assert(strstr(out_text, "1 of 2 ops attempted: 0 succeeded, 0 failed, 0 unsupported, "
                             "1 interrupted (interrupted)"),
            "%s", out_text);
  slurp(report, out_text, sizeof out_text);
  cr_assert(strstr(out_text, "\"cancelled\":true"), "%s", out_text);
  cr_assert(strstr(out_text, "\"interrupted\":1"), "%s", out_text);
  cr_assert(strstr(out_text, "\"name\":\"aten::mm\"") &&
                strstr(out_text, "\"outcome\":\"interrupted\""),
            "%s", out_text);
  cr_assert_null(strstr(out_text, "\"median_us\""), "an interrupted op has a time: %s", out_text);
  /* Its page lists the op as interrupted, counted apart. */
  char page[1100], args[4096];
  static char html[1 << 22];
  snprintf(page, sizeof page, "%s/interrupted.%d.%d.html", tmpdir(), sig, (int)getpid());
  snprintf(args, sizeof args, "report %s -o %s", report, page);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  slurp(page, html, sizeof html);
  cr_assert(strstr(html, "0 unsupported, 1 interrupted"), "the page's summary line");
  cr_assert(strstr(html, "<td class=\"outcome\">interrupted: interrupted while timing"),
            "the op's outcome cell");
}

Test(cli, sigint_marks_the_op_in_progress_interrupted) { interrupt_run(SIGINT, 130); }

Test(cli, sigterm_marks_the_op_in_progress_interrupted) { interrupt_run(SIGTERM, 143); }

/* Graph-mode extraction from the command line: the capture directory, the summary line, and the
 * usage errors of the new flags. */
Test(cli, extract_with_a_capture_dir_credits_the_graph_kernels) {
  char cmd[2048];
  const char *dir = "tests/data/fixtures/graph_traces/sglang_decode";
  snprintf(cmd, sizeof cmd, "extract %s/graph_execution.json.gz --capture-dir %s -o %s/g.msgpack",
           dir, dir, tmpdir());
  cr_assert_eq(replay(cmd), 0, "%s", err_text);
  cr_assert(strstr(out_text, "graph launches: 1, 1 matched to the 1 stream captures; 544 of their "
                             "544 kernels credited to captured ops (98.8% of GPU busy time)"),
            "%s", out_text);
  cr_assert(strstr(out_text, "99.8% of GPU busy time"), "%s", out_text);
  snprintf(cmd, sizeof cmd, "extract %s/graph_execution.json.gz --capture-dir %s --capture x "
           "-o %s/g.msgpack", dir, dir, tmpdir());
  cr_assert_eq(replay(cmd), 2);
  cr_assert(strstr(err_text, "--capture and --capture-dir do not mix"), "%s", err_text);
  snprintf(cmd, sizeof cmd, "extract %s/graph_execution.json.gz --capture-dir %s/nowhere -o "
           "%s/g.msgpack", dir, tmpdir(), tmpdir());
  cr_assert_eq(replay(cmd), 2);
  cr_assert(strstr(err_text, "nowhere/execution_details.json"), "%s", err_text);
}

/* --model-config on both commands: extraction writes the layer and says where it came from; a
 * replay given a contradicting config stops before running anything; one given the right
 * config runs the op and names the layer's source in its init line. */
Test(cli, model_config_supplies_moe_forward_layers) {
  char cmd[4096], bundle[1024];
  const char *dir = "tests/data/fixtures/graph_traces/vllm_prefilldecode_piecewise";
  const char *configs = "tests/data/fixtures/model_configs";
  snprintf(bundle, sizeof bundle, "%s/oss.json", tmpdir());
  snprintf(cmd, sizeof cmd, "extract %s/graph_execution.json.gz --capture-dir %s --op-filter vllm::moe_forward "
           "--model-config %s/gpt-oss-20b.json -o %s", dir, dir, configs, bundle);
  cr_assert_eq(replay(cmd), 0, "%s", err_text);
  cr_assert(strstr(err_text, "replay extract: ops[0] vllm::moe_forward: w1, w1_scale, w1_bias, w2, w2_scale, "
                             "w2_bias, top_k, renormalize, activation, swiglu_limit from gpt-oss-20b.json"),
            "%s", err_text);
  static char text[1 << 16];
  slurp(bundle, text, sizeof text);
  cr_assert(strstr(text, "\"c10::Float4_e2m1fn_x2\"") && strstr(text, "\"layer_source\""), "%s", text);

  snprintf(cmd, sizeof cmd, "--hal=cpu --model-config %s/gpt-oss-120b.json %s", configs, bundle);
  cr_assert_eq(replay(cmd), 2, "%s", out_text);
  cr_assert(strstr(err_text, "router_logits has 32 experts (its last dim), gpt-oss-120b.json says 128"), "%s",
            err_text);

  /* a small layer with no weights in the bundle: --model-config supplies them */
  snprintf(bundle, sizeof bundle, "%s/small_moe.json", tmpdir());
  write_text(bundle, "[{\"op_name\": \"vllm::moe_forward\", \"replay_ir\": {\"list_pos_args\": ["
             "{\"arg_name\": \"hidden_states\", \"arg_type\": \"Tensor\", \"value\": {\"dtype\": \"c10::BFloat16\", "
             "\"shape\": [8, 128], \"strides\": [128, 1]}}, {\"arg_name\": \"router_logits\", \"arg_type\": "
             "\"Tensor\", \"value\": {\"dtype\": \"c10::BFloat16\", \"shape\": [8, 4], \"strides\": [4, 1]}}], "
             "\"list_kwargs\": []}}]");
  char config[1024];
  snprintf(config, sizeof config, "%s/small_config.json", tmpdir());
  write_text(config, "{\"model_type\": \"gpt_oss\", \"hidden_size\": 128, \"intermediate_size\": 64, "
             "\"num_local_experts\": 4, \"num_experts_per_tok\": 2, \"swiglu_limit\": 7.0, "
             "\"quantization_config\": {\"quant_method\": \"mxfp4\"}}");
  snprintf(cmd, sizeof cmd, "--hal=cpu --check --iters=1 --warmup=0 %s", bundle);
  cr_assert_eq(replay(cmd), 0, "%s", err_text);
  cr_assert(strstr(out_text, "unsupported") && strstr(out_text, "--model-config FILE"), "%s", out_text);
  snprintf(cmd, sizeof cmd, "--hal=cpu --check --iters=1 --warmup=0 --model-config %s %s", config, bundle);
  cr_assert_eq(replay(cmd), 0, "%s", err_text);
  cr_assert(strstr(out_text, "cpu.moe_fused") && strstr(out_text, "; mxfp4 scales near") &&
                strstr(out_text, "layer: w1, w1_scale, w1_bias, w2, w2_scale, w2_bias, top_k, renormalize, "
                                 "activation, swiglu_limit from small_config.json"),
            "%s", out_text);
  cr_assert(strstr(out_text, "1 succeeded, 0 failed"), "%s", out_text);
}

/* The shipped GPT-OSS example: unsupported without its config, replayed with it. */
Test(cli, gpt_oss_example_runs_with_its_config) {
  cr_assert_eq(replay("--hal=cpu --iters=1 --warmup=0 examples/gpt_oss_moe.json"), 0, "%s", err_text);
  cr_assert(strstr(out_text, "cpu.moe_fused, ref.moe: the layer's weights are not in the trace"), "%s", out_text);
  cr_assert_eq(replay("--hal=cpu --iters=1 --warmup=0 --model-config examples/gpt-oss-20b.json "
                      "examples/gpt_oss_moe.json"), 0, "%s", err_text);
  cr_assert(strstr(out_text, "f4e2m1x2[32,5760,1440]") && strstr(out_text, "1 succeeded, 0 failed"), "%s", out_text);
}

/* ------------------------------------------------------------------------------------------ */
/* replay plan                                                                                 */

/* The text: one line per op with each HAL's kernel or reason, the coverage line, and the ops that
 * would not run by name and share. The tiny bundle's mm holds 30 of its 40 recorded us. */
Test(cli, plan_says_what_would_run_and_what_is_missing) {
  char args[4096];
  snprintf(args, sizeof args, "plan --hal=cpu %s", tiny_bundle());
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "2 ops, 2 planned; the source trace records 40.0 us of GPU time"),
            "%s", out_text);
  cr_assert(strstr(out_text, "  [cpu] cpu:0: "), "%s", out_text);
  const char *mm = strstr(out_text, "\n    0  aten::mm ");
  cr_assert_not_null(mm, "%s", out_text);
  /* count 3, 30 us in all, 10 per call, 2*8*16*4 FLOPs */
  cr_assert(strstr(mm, "3       30.00      10.00   1.02K") && strstr(mm, "[cpu] cpu."), "%s",
            out_text);
  cr_assert(strstr(out_text, "[cpu] unsupported: no kernel for op 'x::unknown_op'"), "%s",
            out_text);
  cr_assert(strstr(out_text, "plan [cpu]: 1 of 2 ops would run, covering 75.0% of the source "
                             "trace's GPU time (30.0 of 40.0 us)\n"),
            "%s", out_text);
  cr_assert(strstr(out_text, "unsupported [cpu], by share of the source trace's GPU time:\n"
                             "   25.0%       10.0 us    1 op   x::unknown_op  unsupported: "
                             "no kernel for op 'x::unknown_op'\n"),
            "%s", out_text);
  /* --op-filter and --max-memory change the plan as they would the run. */
  snprintf(args, sizeof args, "plan --hal=cpu --op-filter=unknown %s", tiny_bundle());
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "plan [cpu]: 0 of 1 ops would run, covering 0.0%"), "%s", out_text);
  snprintf(args, sizeof args, "plan --hal=cpu --max-memory=1K %s", tiny_bundle());
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "[cpu] unsupported: does not fit: its tensors need "), "%s", out_text);
  cr_assert(strstr(out_text, "0 of 2 ops would run"), "%s", out_text);
}

Test(cli, plan_json_has_every_op_and_hal) {
  char args[4096];
  snprintf(args, sizeof args, "plan --json --hal=cpu,hip %s", tiny_bundle());
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cJSON *root = cJSON_Parse(out_text);
  cr_assert_not_null(root, "%s", out_text);
  cr_assert_eq(cJSON_GetObjectItem(root, "total")->valuedouble, 2);
  cr_assert_eq(cJSON_GetObjectItem(root, "attempted")->valuedouble, 2);
  cr_assert_float_eq(cJSON_GetObjectItem(root, "trace_total_us")->valuedouble, 40.0, 1e-9);
  cJSON *hals = cJSON_GetObjectItem(root, "hals");
  cr_assert_eq(cJSON_GetArraySize(hals), 2);
  cJSON *cpu = cJSON_GetArrayItem(hals, 0), *hip = cJSON_GetArrayItem(hals, 1);
  cr_assert_str_eq(cJSON_GetObjectItem(cpu, "hal")->valuestring, "cpu");
  cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(cpu, "available")));
  cr_assert_str_eq(cJSON_GetObjectItem(cpu, "driver")->valuestring, "cpu");
  cr_assert_eq(cJSON_GetObjectItem(cpu, "would_run")->valuedouble, 1);
  cr_assert_eq(cJSON_GetObjectItem(cpu, "unsupported")->valuedouble, 1);
  cr_assert_eq(cJSON_GetObjectItem(cpu, "failed")->valuedouble, 0);
  cr_assert_float_eq(cJSON_GetObjectItem(cpu, "trace_covered_us")->valuedouble, 30.0, 1e-9);
  cr_assert_float_eq(cJSON_GetObjectItem(cpu, "covered_percent")->valuedouble, 75.0, 1e-9);
  cJSON *missing = cJSON_GetArrayItem(cJSON_GetObjectItem(cpu, "not_run"), 0);
  cr_assert_str_eq(cJSON_GetObjectItem(missing, "name")->valuestring, "x::unknown_op");
  cr_assert_float_eq(cJSON_GetObjectItem(missing, "percent")->valuedouble, 25.0, 1e-9);
  cr_assert_str_eq(cJSON_GetObjectItem(missing, "outcome")->valuestring, "unsupported");
  /* hip is absent here: reported, not an error, since cpu plans */
  cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(hip, "available")));
  cr_assert_str_eq(cJSON_GetObjectItem(hip, "status")->valuestring, "UNAVAILABLE");
  cr_assert(strstr(cJSON_GetObjectItem(hip, "reason")->valuestring, "libamdhip64"));
  cJSON *ops = cJSON_GetObjectItem(root, "ops");
  cr_assert_eq(cJSON_GetArraySize(ops), 2);
  cJSON *mm = cJSON_GetArrayItem(ops, 0), *unknown = cJSON_GetArrayItem(ops, 1);
  cr_assert_str_eq(cJSON_GetObjectItem(mm, "name")->valuestring, "aten::mm");
  cr_assert_eq(cJSON_GetObjectItem(mm, "index")->valuedouble, 0);
  cr_assert_eq(cJSON_GetObjectItem(mm, "count")->valuedouble, 3);
  cr_assert_float_eq(cJSON_GetObjectItem(mm, "trace_us")->valuedouble, 30.0, 1e-9);
  cr_assert_float_eq(cJSON_GetObjectItem(mm, "per_call_us")->valuedouble, 10.0, 1e-9);
  cr_assert_float_eq(cJSON_GetObjectItem(mm, "flops")->valuedouble, 2.0 * 8 * 16 * 4, 1e-9);
  cr_assert_gt(cJSON_GetObjectItem(mm, "bytes")->valuedouble, 0);
  cJSON *mm_cpu = cJSON_GetArrayItem(cJSON_GetObjectItem(mm, "hals"), 0);
  cr_assert_str_eq(cJSON_GetObjectItem(mm_cpu, "outcome")->valuestring, "ok");
  cr_assert(!strncmp(cJSON_GetObjectItem(mm_cpu, "kernel")->valuestring, "cpu.", 4));
  cJSON *mm_hip = cJSON_GetArrayItem(cJSON_GetObjectItem(mm, "hals"), 1);
  cr_assert_str_eq(cJSON_GetObjectItem(mm_hip, "outcome")->valuestring, "unavailable");
  cJSON *unknown_cpu = cJSON_GetArrayItem(cJSON_GetObjectItem(unknown, "hals"), 0);
  cr_assert_str_eq(cJSON_GetObjectItem(unknown_cpu, "outcome")->valuestring, "unsupported");
  cr_assert(strstr(cJSON_GetObjectItem(unknown_cpu, "reason")->valuestring, "no kernel for op"));
  cr_assert_float_eq(cJSON_GetObjectItem(unknown, "trace_us")->valuedouble, 10.0, 1e-9);
  cJSON_Delete(root);
}

/* The shipped examples: every op of llm_small plans on the cpu; the GPT-OSS layer plans only
 * with its config, as it replays. */
Test(cli, plan_of_the_examples) {
  cr_assert_eq(replay("plan --hal=cpu " EXAMPLE), 0, "%s", err_text);
  cr_assert(strstr(out_text, "11 ops, 11 planned; the bundle records no GPU time"), "%s", out_text);
  cr_assert(strstr(out_text, "plan [cpu]: 11 of 11 ops would run (the bundle records no GPU time)"),
            "%s", out_text);
  cr_assert(strstr(out_text, "_C::paged_attention_v1") && !strstr(out_text, "unsupported"), "%s",
            out_text);
  cr_assert_eq(replay("plan --hal=cpu examples/gpt_oss_moe.json"), 0, "%s", err_text);
  cr_assert(strstr(out_text, "plan [cpu]: 0 of 1 ops would run"), "%s", out_text);
  cr_assert(strstr(out_text, "cpu.moe_fused, ref.moe: the layer's weights are not in the trace"),
            "%s", out_text);
  cr_assert_eq(replay("plan --hal=cpu --model-config examples/gpt-oss-20b.json "
                      "examples/gpt_oss_moe.json"),
               0, "%s", err_text);
  cr_assert(strstr(out_text, "[cpu] cpu.moe_fused") && strstr(out_text, "1 of 1 ops would run"),
            "%s", out_text);
}

/* The share `replay plan` gives is the one `replay` reports once it has run the ops, on a
 * bundle extracted from a real trace. */
Test(cli, plan_coverage_is_what_the_replay_reports) {
  char cmd[2048], bundle[1024], planned[256], ran[256];
  snprintf(bundle, sizeof bundle, "%s/bert.%d.msgpack", tmpdir(), (int)getpid());
  snprintf(cmd, sizeof cmd, "extract tests/data/fixtures/traces/h100_bert_small.json.gz -o %s",
           bundle);
  cr_assert_eq(replay(cmd), 0, "%s", err_text);
  snprintf(cmd, sizeof cmd, "plan --hal=cpu %s", bundle);
  cr_assert_eq(replay(cmd), 0, "%s", err_text);
  const char *p = strstr(out_text, "plan [cpu]: ");
  cr_assert_not_null(p, "%s", out_text);
  cr_assert_eq(sscanf(p, "plan [cpu]: %*u of %*u ops would run, covering %255[^\n]", planned), 1,
               "%s", p);
  snprintf(cmd, sizeof cmd, "--hal=cpu --iters=1 --warmup=0 %s", bundle);
  cr_assert_eq(replay(cmd), 0, "%s", err_text);
  const char *r = strstr(out_text, "summary [cpu]: the ops that ran cover ");
  cr_assert_not_null(r, "%s", out_text);
  cr_assert_eq(sscanf(r, "summary [cpu]: the ops that ran cover %255[^\n]", ran), 1, "%s", r);
  cr_assert_str_eq(planned, ran);
  cr_assert(strstr(ran, "% of the source trace's GPU time ("), "%s", ran);
}

Test(cli, plan_bad_input_and_unavailable_hals) {
  char args[4096];
  snprintf(args, sizeof args, "plan --hal=cpu,warp9 %s", tiny_bundle());
  cr_assert_eq(replay(args), 2, "%s", out_text);
  cr_assert(strstr(err_text, "replay plan: --hal=cpu,warp9: unknown HAL \"warp9\""), "%s",
            err_text);
  cr_assert_eq(replay("plan --hal=cpu no/such/file.msgpack"), 2);
  cr_assert(strstr(err_text, "no/such/file.msgpack: cannot open"), "%s", err_text);
  char bad[1024];
  snprintf(bad, sizeof bad, "%s/plan_bad.%d.json", tmpdir(), (int)getpid());
  write_text(bad, "{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": \"aten::mm\", \"args\": "
                  "[{\"name\": \"self\", \"type\": \"Tensor\", \"value\": {\"shape\": [3, -4], "
                  "\"dtype\": \"float\"}}]}]}");
  snprintf(args, sizeof args, "plan --hal=cpu %s", bad);
  cr_assert_eq(replay(args), 2);
  cr_assert(strstr(err_text, "negative dimension -4") && strstr(err_text, "ops[0]"), "%s",
            err_text);
  cr_assert_eq(replay("plan"), 2);
  cr_assert(strstr(err_text, "BUNDLE is required"), "%s", err_text);
  cr_assert_eq(replay("plan --frobnicate " EXAMPLE), 2);
  cr_assert_eq(replay("plan --op-limit=-1 " EXAMPLE), 2);
  /* the only HAL asked for is unavailable: exit 3, as `replay --hal=hip` */
  snprintf(args, sizeof args, "plan --hal=hip %s", tiny_bundle());
  cr_assert_eq(replay(args), 3, "%s", out_text);
  cr_assert(strstr(err_text, "replay plan: --hal=hip: hip unavailable: ") &&
                strstr(err_text, "libamdhip64"),
            "%s", err_text);
  /* one of several: reported, the others planned */
  snprintf(args, sizeof args, "plan --hal=cpu,cuda:0 %s", tiny_bundle());
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "  [cuda:0] unavailable: "), "%s", out_text);
  cr_assert(strstr(out_text, "plan [cuda:0]: unavailable: "), "%s", out_text);
  cr_assert(strstr(out_text, "plan [cpu]: 1 of 2 ops would run"), "%s", out_text);
  cr_assert(!strstr(out_text, "[cpu,cuda:0]"), "an unavailable HAL shares no answer: %s", out_text);
  cr_assert_eq(replay("plan --help"), 0);
  cr_assert(strstr(out_text, "usage: replay plan BUNDLE"), "%s", out_text);
  cr_assert_eq(replay("--help"), 0);
  cr_assert(strstr(out_text, "replay plan BUNDLE"), "%s", out_text);
}

static int count_of(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* A run opens each device of --hal once: the engine and --check's reference share the cpu
 * device (XR_HAL_LOG=devices prints every open and close with the process id). */
Test(cli, each_device_is_opened_once) {
  setenv("XR_HAL_LOG", "devices", 1);
  int rc = replay("--hal=cpu,opencl --check --iters=1 --warmup=0 --op-filter=aten::mm "
                  "examples/llm_small.msgpack");
  unsetenv("XR_HAL_LOG");
  cr_assert_eq(rc, 0, "%s", err_text);
  cr_assert_eq(count_of(err_text, " opened cpu:0\n"), 1, "%s", err_text);
  cr_assert_eq(count_of(err_text, " opened opencl:0\n"), 1, "%s", err_text);
  cr_assert_eq(count_of(err_text, " opened "), 2, "%s", err_text);
  cr_assert_eq(count_of(err_text, " closed "), 2, "%s", err_text);
}

/* --init=OP:POLICY: the op name ends at the first single colon (names have "::", policies
 * colons of their own: the MoE routing's zipf:S reaches the initializer whole), every one given
 * is kept, and one without a policy is a usage error. */
/* A vLLM cache writer of 4 tokens into a 64-block cache, written into the test's scratch
 * directory: 5 blocks of it on a compact cache. */
static const char *cache_writer_bundle(void) {
  static char path[1024];
  snprintf(path, sizeof path, "%s/cache.%d.json", tmpdir(), (int)getpid());
  write_text(path,
             "{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": "
             "\"_C_cache_ops::reshape_and_cache_flash\", \"args\": ["
             "{\"name\": \"key\", \"type\": \"Tensor\", \"value\": {\"shape\": [4, 2, 8], "
             "\"dtype\": \"float\"}},"
             "{\"name\": \"value\", \"type\": \"Tensor\", \"value\": {\"shape\": [4, 2, 8], "
             "\"dtype\": \"float\"}},"
             "{\"name\": \"key_cache\", \"type\": \"Tensor(a!)\", \"value\": {\"shape\": "
             "[64, 16, 2, 8], \"dtype\": \"float\"}},"
             "{\"name\": \"value_cache\", \"type\": \"Tensor(b!)\", \"value\": {\"shape\": "
             "[64, 16, 2, 8], \"dtype\": \"float\"}},"
             "{\"name\": \"slot_mapping\", \"type\": \"Tensor\", \"value\": {\"shape\": [4], "
             "\"dtype\": \"long int\"}},"
             "{\"name\": \"kv_cache_dtype\", \"type\": \"str\", \"value\": \"auto\"},"
             "{\"name\": \"k_scale\", \"type\": \"Tensor\", \"value\": {\"shape\": [1], "
             "\"dtype\": \"float\", \"init\": \"ones\"}},"
             "{\"name\": \"v_scale\", \"type\": \"Tensor\", \"value\": {\"shape\": [1], "
             "\"dtype\": \"float\", \"init\": \"ones\"}}]}]}");
  return path;
}

/* --cache-blocks=compact: the op's line, the plan's and the report say so. The caches' 64 blocks
 * of 16 x 2 x 8 floats (65,536 bytes each) become 5 (5,120 bytes each); key and value (256 bytes
 * each), slot_mapping (32) and the scales (4 each) stay: 131,624 bytes in all, then 10,792. */
Test(cli, compact_caches_are_said_on_the_line_and_in_the_report) {
  char args[4096], report[1024];
  const char *note = "cache: compact, its tensors 10792 bytes (131624 bytes as recorded)";
  snprintf(report, sizeof report, "%s/compact.%d.json", tmpdir(), (int)getpid());
  snprintf(args, sizeof args, "--hal=cpu --iters=1 --warmup=0 --check --cache-blocks=compact "
           "--report=%s %s", report, cache_writer_bundle());
  cr_assert_eq(replay(args), 0, "%s%s", out_text, err_text);
  cr_assert(strstr(out_text, note) && strstr(out_text, "check ok"), "%s", out_text);
  cJSON *r = read_json(report);
  cr_assert_str_eq(json_str(cJSON_GetObjectItem(r, "options"), "cache_blocks"), "compact");
  const cJSON *op = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ops"), 0);
  cr_assert_str_eq(json_str(op, "cache_note"), note);
  cr_assert(strstr(json_str(op, "init_policy"), "cache: compact, 5 of 64 blocks"), "%s",
            json_str(op, "init_policy"));
  cJSON_Delete(r);
  snprintf(args, sizeof args, "plan --hal=cpu --cache-blocks=compact %s", cache_writer_bundle());
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, note), "%s", out_text);
  /* By default (auto) a cache that fits stays whole, and nothing is said. */
  snprintf(args, sizeof args, "plan --hal=cpu %s", cache_writer_bundle());
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert_null(strstr(out_text, "cache: compact"), "%s", out_text);
}

Test(cli, init_policies_split_at_the_first_single_colon) {
  char args[2048], report[1024];
  snprintf(report, sizeof report, "%s/init.report.json", tmpdir());
  snprintf(args, sizeof args,
           "--hal=cpu --iters=1 --warmup=0 --op-filter=vllm::outplace_fused_experts --report=%s "
           "--init=vllm::outplace_fused_experts:zipf:1.2 --init=_C::paged_attention_v1:1,2,3 "
           "examples/selftest.json",
           report);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cJSON *r = read_json(report);
  cr_assert_str_eq(json_str(cJSON_GetObjectItem(r, "options"), "init"),
                   "vllm::outplace_fused_experts:zipf:1.2;_C::paged_attention_v1:1,2,3");
  const cJSON *op;
  int ops = 0;
  cJSON_ArrayForEach(op, cJSON_GetObjectItem(r, "ops")) {
    cr_assert(strstr(json_str(op, "init_policy"), "topk_ids zipf:1.2 over "), "%s",
              json_str(op, "init_policy"));
    ops++;
  }
  cr_assert_gt(ops, 0);
  cJSON_Delete(r);
  cr_assert_eq(replay("--hal=cpu --init=aten::mm examples/llm_small.msgpack"), 2);
  cr_assert(strstr(err_text, "--init=aten::mm"), "%s", err_text);
}
