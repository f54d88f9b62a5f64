/* tools/torch_baseline.py, the framework baseline: run with Debian's PyTorch (python3-torch, for
 * /usr/bin/python3, not whatever python3 is first on PATH) on the example bundle, its
 * MessagePack twin and the TraceLens IR fixture, its report checked against the bundle (every op,
 * in order, timed or unsupported with torch's reason) and read by `replay compare` and `replay
 * report` beside a `replay --hal=cpu` report of the same bundle. Bad input is exit 2 with a
 * message naming the file and the field (the replay's codecs read every bundle for the script),
 * and no Python traceback. tools/framework_bench.py, which runs both side by side, prints
 * ratios made of their reports. Cases that need torch skip, saying why, where /usr/bin/python3
 * cannot import it. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/tools/cli_util.h"

#define PYTHON "/usr/bin/python3"
#define SCRIPT "tools/torch_baseline.py"
#define LLM_SMALL "examples/llm_small.json"
#define IR "tests/data/fixtures/tracelens_ir/ir_from_real_traces.json"

/* Runs a shell command line, keeping stdout and stderr in out_text and err_text (as replay()
 * does); returns its exit code. */
static int sh(const char *command) {
  char cmd[8192], out[1024], err[1024];
  snprintf(out, sizeof out, "%s/sh_stdout.%d", tmpdir(), (int)getpid());
  snprintf(err, sizeof err, "%s/sh_stderr.%d", tmpdir(), (int)getpid());
  snprintf(cmd, sizeof cmd, "%s >%s 2>%s", command, out, err);
  int status = system(cmd);
  slurp(out, out_text, sizeof out_text);
  slurp(err, err_text, sizeof err_text);
  cr_assert(WIFEXITED(status), "%s did not exit normally", command);
  return WEXITSTATUS(status);
}

/* `PYTHON tools/torch_baseline.py ARGS`. */
static int baseline(const char *args) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, PYTHON " " SCRIPT " %s", args);
  return sh(cmd);
}

/* Skips the test unless /usr/bin/python3 imports `module`, with Python's own reason. */
static void require(const char *module, const char *package) {
  if (access(PYTHON, X_OK) != 0) cr_skip_test(PYTHON " is not installed");
  char cmd[256];
  snprintf(cmd, sizeof cmd, PYTHON " -c 'import %s'", module);
  if (sh(cmd) == 0) return;
  char *last = strrchr(err_text, '\n');
  while (last && last > err_text && last[1] == '\0') {
    *last = '\0';
    last = strrchr(err_text, '\n');
  }
  cr_skip_test(PYTHON " cannot import %s (Debian's %s; ./bazelw installs it): %s", module, package,
               last ? last + 1 : err_text);
}

/* The op names of a bundle: our JSON's ops[].name or TraceLens IR's [].op_name. */
static size_t bundle_op_names(const char *path, const char *names[], size_t max, cJSON **out_doc) {
  cJSON *doc = read_json(path);
  const cJSON *ops = cJSON_IsArray(doc) ? doc : cJSON_GetObjectItemCaseSensitive(doc, "ops"), *op;
  const char *key = cJSON_IsArray(doc) ? "op_name" : "name";
  size_t n = 0;
  cJSON_ArrayForEach(op, ops) {
    cr_assert_lt(n, max);
    names[n++] = json_str(op, key);
  }
  *out_doc = doc;
  return n;
}

/* The report is a replay report of the whole bundle: its header, every op in order with the
 * bundle's name, each timed (a positive median, the iterations asked for) or unsupported with
 * a reason, and a summary that counts them. Returns the report; `unsupported` lists the ops
 * expected unsupported (names, NULL-terminated), every other op must have run. */
static cJSON *check_report(const char *report, const char *bundle, int iters,
                           const char *const *unsupported) {
  const char *names[64];
  cJSON *doc;
  size_t n = bundle_op_names(bundle, names, 64, &doc);
  cJSON *r = read_json(report);
  cr_expect_eq(json_number(r, "xreplay_report"), 2);
  cr_expect_str_eq(json_str(r, "hal"), "torch-cpu");
  cr_expect_str_eq(json_str(r, "driver"), "torch");
  cr_expect_neq(json_str(r, "device")[0], '\0', "no device");
  cr_expect_eq(json_number(r, "bundle_ops"), (double)n);
  const cJSON *ops = cJSON_GetObjectItemCaseSensitive(r, "ops"), *op;
  cr_assert_eq((size_t)cJSON_GetArraySize(ops), n, "%s: %d ops, the bundle has %zu", report,
               cJSON_GetArraySize(ops), n);
  char kernel[64];
  snprintf(kernel, sizeof kernel, "torch %s", json_str(r, "driver_version"));
  size_t i = 0, ok = 0, refused = 0;
  cJSON_ArrayForEach(op, ops) {
    cr_expect_eq(json_number(op, "index"), (double)i, "ops[%zu].index", i);
    cr_expect_str_eq(json_str(op, "name"), names[i], "ops[%zu].name", i);
    cr_expect_str_eq(json_str(op, "kernel"), kernel, "ops[%zu].kernel", i);
    cr_expect_neq(json_str(op, "args")[0], '\0', "ops[%zu] (%s): no args line", i, names[i]);
    bool expect_refused = false;
    for (const char *const *u = unsupported; *u; u++) expect_refused |= !strcmp(*u, names[i]);
    if (expect_refused) {
      refused++;
      cr_expect_str_eq(json_str(op, "outcome"), "unsupported", "ops[%zu] (%s)", i, names[i]);
      cr_expect_neq(json_str(op, "message")[0], '\0', "ops[%zu] (%s): no reason", i, names[i]);
      cr_expect(isnan(json_number(op, "median_us")), "ops[%zu] (%s) has a median", i, names[i]);
    } else {
      ok++;
      cr_expect_str_eq(json_str(op, "outcome"), "ok", "ops[%zu] (%s): %s", i, names[i],
                       json_str(op, "message"));
      cr_expect_gt(json_number(op, "median_us"), 0, "ops[%zu] (%s): median_us", i, names[i]);
      cr_expect_eq(json_number(op, "iterations"), iters, "ops[%zu] (%s)", i, names[i]);
      cr_expect_leq(json_number(op, "min_us"), json_number(op, "median_us"));
      cr_expect_leq(json_number(op, "median_us"), json_number(op, "p90_us") + 1e-9);
    }
    i++;
  }
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(r, "summary");
  cr_assert(cJSON_IsObject(s), "%s: no summary", report);
  cr_expect_eq(json_number(s, "total"), (double)n);
  cr_expect_eq(json_number(s, "attempted"), (double)n);
  cr_expect_eq(json_number(s, "succeeded"), (double)ok);
  cr_expect_eq(json_number(s, "unsupported"), (double)refused);
  cr_expect_eq(json_number(s, "failed"), 0);
  cJSON_Delete(doc);
  return r;
}

/* An unsupported op's reason contains `text` (torch's own exception names the op). */
static void expect_reason(const cJSON *report, const char *name, const char *text) {
  const cJSON *op;
  bool seen = false;
  cJSON_ArrayForEach(op, cJSON_GetObjectItemCaseSensitive(report, "ops")) {
    if (strcmp(json_str(op, "name"), name)) continue;
    seen = true;
    cr_expect(strstr(json_str(op, "message"), text), "%s's reason \"%s\" does not say \"%s\"", name,
              json_str(op, "message"), text);
  }
  cr_expect(seen, "no op %s in the report", name);
}

/* `replay --hal=cpu` of the same bundle; `replay compare` and `replay report` read both reports,
 * and compare sets each op timed by both side by side, the args lines being the replay's. */
static void compare_with_replay(const char *torch_report, const cJSON *t, const char *bundle,
                                const char *cpu_report) {
  char args[4096];
  snprintf(args, sizeof args, "--hal=cpu --warmup=0 --iters=1 --report=%s %s", cpu_report, bundle);
  cr_assert_eq(replay(args), 0, "replay %s: %s", args, err_text);
  cJSON *c = read_json(cpu_report);
  const cJSON *ops_c = cJSON_GetObjectItemCaseSensitive(c, "ops");
  size_t both = 0, i = 0;
  const cJSON *op;
  cJSON_ArrayForEach(op, cJSON_GetObjectItemCaseSensitive(t, "ops")) {
    const cJSON *other = cJSON_GetArrayItem(ops_c, (int)i++);
    cr_assert_not_null(other, "the cpu report lacks op %zu", i - 1);
    cr_expect_str_eq(json_str(op, "args"), json_str(other, "args"), "op %zu's args line", i - 1);
    both += json_number(op, "median_us") > 0 && json_number(other, "median_us") > 0;
  }
  cr_assert_gt(both, 0, "no op timed by both torch and the replay");

  snprintf(args, sizeof args, "compare %s %s", torch_report, cpu_report);
  cr_assert_eq(replay(args), 0, "replay %s: %s", args, err_text);
  char want[256];
  snprintf(want, sizeof want, "A: %s (torch-cpu \u00b7 %s)", torch_report, json_str(t, "device"));
  cr_expect(strstr(out_text, want), "expected \"%s\" in\n%s", want, out_text);
  snprintf(want, sizeof want, "%zu matched ops timed on both", both);
  cr_expect(strstr(out_text, want), "expected \"%s\" in\n%s", want, out_text);
  snprintf(want, sizeof want, "torch %s | cpu.", json_str(t, "driver_version"));
  cr_expect(strstr(out_text, want), "expected \"%s\" in\n%s", want, out_text);

  const char *page = scratch("page.html");
  snprintf(args, sizeof args, "report %s %s -o %s", torch_report, cpu_report, page);
  cr_assert_eq(replay(args), 0, "replay %s: %s", args, err_text);
  static char html[1 << 21];
  slurp(page, html, sizeof html);
  cr_expect(strstr(html, "torch-cpu"), "the page does not name the torch run");
  cJSON_Delete(c);
}

/* llm_small.json: the GEMMs run; flash attention (not in torch 1.13) and vLLM's custom ops (in
 * no torch) are unsupported with torch's own reason. */
Test(torch_baseline, example_bundle_beside_the_replay, .timeout = 240) {
  require("torch", "python3-torch");
  const char *report = scratch("torch.json");
  char args[2048];
  snprintf(args, sizeof args, LLM_SMALL " --warmup 1 --iters 3 -o %s", report);
  cr_assert_eq(baseline(args), 0, "%s\n%s", out_text, err_text);
  cr_expect(strstr(out_text, "summary [torch-cpu]: 11 of 11 ops attempted"), "%s", out_text);
  static const char *const refused[] = {"aten::_scaled_dot_product_flash_attention",
                                        "_C::paged_attention_v1",
                                        "_moe_C::topk_softmax",
                                        "_moe_C::moe_align_block_size",
                                        "vllm::outplace_fused_experts",
                                        "_C::rms_norm",
                                        "_C::silu_and_mul",
                                        "_C::rotary_embedding",
                                        NULL};
  cJSON *t = check_report(report, LLM_SMALL, 3, refused);
  expect_reason(t, "_C::paged_attention_v1", "paged_attention_v1");
  expect_reason(t, "vllm::outplace_fused_experts", "outplace_fused_experts");
  const cJSON *options = cJSON_GetObjectItemCaseSensitive(t, "options");
  cr_expect_eq(json_number(options, "warmup"), 1);
  cr_expect_eq(json_number(options, "iters"), 3);
  compare_with_replay(report, t, LLM_SMALL, scratch("cpu.json"));
  cJSON_Delete(t);
}

/* The MessagePack twin gives the same ops, args lines and outcomes. */
Test(torch_baseline, messagepack_bundle, .timeout = 240) {
  require("torch", "python3-torch");
  const char *from_json = scratch("j.json"), *from_msgpack = scratch("m.json");
  char args[2048];
  snprintf(args, sizeof args, LLM_SMALL " --warmup 0 --iters 1 -o %s", from_json);
  cr_assert_eq(baseline(args), 0, "%s", err_text);
  snprintf(args, sizeof args, "examples/llm_small.msgpack --warmup 0 --iters 1 -o %s",
           from_msgpack);
  cr_assert_eq(baseline(args), 0, "%s", err_text);
  cJSON *j = read_json(from_json), *m = read_json(from_msgpack);
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "ops"),
              *b = cJSON_GetObjectItemCaseSensitive(m, "ops");
  cr_assert_eq(cJSON_GetArraySize(a), cJSON_GetArraySize(b));
  for (int i = 0; i < cJSON_GetArraySize(a); i++) {
    const cJSON *x = cJSON_GetArrayItem(a, i), *y = cJSON_GetArrayItem(b, i);
    cr_expect_str_eq(json_str(x, "name"), json_str(y, "name"), "ops[%d]", i);
    cr_expect_str_eq(json_str(x, "args"), json_str(y, "args"), "ops[%d]", i);
    cr_expect_str_eq(json_str(x, "outcome"), json_str(y, "outcome"), "ops[%d]", i);
  }
  cJSON_Delete(j);
  cJSON_Delete(m);
}

/* 22 IR entries from real traces: all but MIOpen's convolution run on the CPU (torch says it has
 * no CPU kernel for it); the replay's cpu report of the same IR sits beside it. */
Test(torch_baseline, tracelens_ir_beside_the_replay, .timeout = 280) {
  require("torch", "python3-torch");
  const char *report = scratch("ir.torch.json");
  char args[2048];
  snprintf(args, sizeof args, IR " --warmup 0 --iters 1 -o %s", report);
  cr_assert_eq(baseline(args), 0, "%s\n%s", out_text, err_text);
  static const char *const refused[] = {"aten::miopen_convolution", NULL};
  cJSON *t = check_report(report, IR, 1, refused);
  expect_reason(t, "aten::miopen_convolution", "aten::miopen_convolution");
  compare_with_replay(report, t, IR, scratch("ir.cpu.json"));
  cJSON_Delete(t);
}

/* A bad bundle is exit 2 with one line naming the file (and the field), never a traceback; it
 * is read before torch is imported, so these need no torch. */
static void expect_input_error(const char *path, const char *text) {
  char args[2048];
  snprintf(args, sizeof args, "%s -o %s", path, scratch("bad.json"));
  cr_expect_eq(baseline(args), 2, "%s: exit code; stderr: %s", path, err_text);
  cr_expect(strstr(err_text, path), "the error does not name %s: %s", path, err_text);
  cr_expect(strstr(err_text, text), "expected \"%s\" in: %s", text, err_text);
  cr_expect_null(strstr(err_text, "Traceback"), "%s", err_text);
}

Test(torch_baseline, bad_input_is_exit_2_naming_file_and_field) {
  if (access(PYTHON, X_OK) != 0) cr_skip_test(PYTHON " is not installed");
  static char text[1 << 16];
  slurp(LLM_SMALL, text, sizeof text);
  const char *truncated = scratch("truncated.json");
  text[700] = '\0';
  write_text(truncated, text);
  expect_input_error(truncated, "not valid JSON");

  const char *negative = scratch("negative.json");
  write_text(negative,
             "{\"ops\": [{\"name\": \"aten::mm\", \"args\": [{\"name\": \"self\", "
             "\"value\": {\"shape\": [2, -4], \"dtype\": \"float\"}}]}]}");
  expect_input_error(negative, "ops[0].args[0].value.shape[1]: negative dimension -4");

  const char *dtype = scratch("dtype.json");
  write_text(dtype,
             "[{\"op_name\": \"aten::mm\", \"replay_ir\": {\"list_pos_args\": [{\"arg_name\": "
             "\"self\", \"value\": {\"shape\": [2], \"dtype\": \"c10::Float4_e2m1\"}}]}}]");
  expect_input_error(dtype, "ops[0].replay_ir.list_pos_args[0].value.dtype: unknown dtype");

  const char *empty = scratch("empty.json");
  write_text(empty, "");
  expect_input_error(empty, "empty file");
  expect_input_error(scratch("missing.json"), "cannot open");
}

/* A truncated MessagePack bundle; and a replay binary that is not there (exit 2, named). */
Test(torch_baseline, messagepack_errors_and_no_replay) {
  if (access(PYTHON, X_OK) != 0) cr_skip_test(PYTHON " is not installed");
  static char bytes[1 << 16];
  FILE *f = fopen("examples/llm_small.msgpack", "rb");
  cr_assert_not_null(f);
  size_t n = fread(bytes, 1, sizeof bytes, f);
  fclose(f);
  cr_assert_gt(n, 300);
  const char *truncated = scratch("truncated.msgpack");
  f = fopen(truncated, "wb");
  cr_assert_not_null(f);
  fwrite(bytes, 1, 300, f);
  fclose(f);
  expect_input_error(truncated, "corrupt MessagePack");

  char args[2048];
  snprintf(args, sizeof args, LLM_SMALL " --replay /nonexistent/replay -o %s", scratch("x.json"));
  cr_expect_eq(baseline(args), 2, "%s", err_text);
  cr_expect(strstr(err_text, "cannot run /nonexistent/replay"), "%s", err_text);
  cr_expect_null(strstr(err_text, "Traceback"), "%s", err_text);
}

/* Without torch: exit 3, naming Debian's package, no traceback. */
Test(torch_baseline, without_torch_exit_3) {
  if (access(PYTHON, X_OK) != 0) cr_skip_test(PYTHON " is not installed");
  char args[2048];
  snprintf(args, sizeof args, PYTHON " -S " SCRIPT " " LLM_SMALL " -o %s", scratch("x.json"));
  cr_expect_eq(sh(args), 3, "%s", err_text);
  cr_expect(strstr(err_text, "cannot import torch"), "%s", err_text);
  cr_expect(strstr(err_text, "python3-torch"), "%s", err_text);
  cr_expect_null(strstr(err_text, "Traceback"), "%s", err_text);
}

/* tools/framework_bench.py: torch and the replay in alternating rounds over the IR's copy_, each
 * round's reports kept; the ratio it prints for the op is torch's median over the replay's, the
 * median of the rounds' ratios, with their range. */
Test(torch_baseline, framework_bench_sets_each_op_beside_torch, .timeout = 240) {
  require("torch", "python3-torch");
  char keep[1024], cmd[4096];
  snprintf(keep, sizeof keep, "%s/bench.%d", tmpdir(), (int)getpid());
  snprintf(cmd, sizeof cmd,
           PYTHON " tools/framework_bench.py " IR " --rounds 2 --warmup 0 --iters 3 "
           "--op-filter aten::copy_ --keep %s",
           keep);
  cr_assert_eq(sh(cmd), 0, "%s\n%s", out_text, err_text);
  double ratio[2];
  for (int r = 0; r < 2; r++) {
    char path[1200];
    snprintf(path, sizeof path, "%s/torch.%d.json", keep, r);
    cJSON *t = read_json(path);
    snprintf(path, sizeof path, "%s/replay.%d.json", keep, r);
    cJSON *x = read_json(path);
    const cJSON *top = cJSON_GetArrayItem(cJSON_GetObjectItem(t, "ops"), 0);
    const cJSON *xop = cJSON_GetArrayItem(cJSON_GetObjectItem(x, "ops"), 0);
    cr_assert_str_eq(json_str(top, "name"), "aten::copy_");
    cr_assert_str_eq(json_str(xop, "name"), "aten::copy_");
    ratio[r] = json_number(top, "median_us") / json_number(xop, "median_us");
    cJSON_Delete(t);
    cJSON_Delete(x);
  }
  char want[256];
  double lo = ratio[0] < ratio[1] ? ratio[0] : ratio[1], hi = ratio[0] + ratio[1] - lo;
  snprintf(want, sizeof want, "%.2fx [%.2fx–%.2fx]", (ratio[0] + ratio[1]) / 2, lo, hi);
  cr_assert(strstr(out_text, want), "expected %s in:\n%s", want, out_text);
  cr_assert(strstr(out_text, "1 ops ran on both sides over 2 rounds"), "%s", out_text);
  /* a usage mistake is exit 2 */
  cr_assert_eq(sh(PYTHON " tools/framework_bench.py " IR " --rounds 0"), 2, "%s", err_text);
}
