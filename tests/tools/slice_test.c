/* `replay slice`: a bundle of some ops of another. Each sliced op must be the source's op as our
 * JSON writes it (arguments, count, recorded timing and kernels), the metadata the source's, and
 * the command the slice prints must replay it; tensor contents go unless --keep-data, which
 * embeds them; --op-filter takes the ops a replay's --op-filter takes; every mistake is one line
 * with exit 2 and no file. The HTML page's per-op command is run as a reader would paste it.
 * Expected values come from the source converted whole (`replay convert`), not from the model. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/tools/cli_util.h"

#define GZ_TRACE "tests/data/fixtures/traces/mi300_bert_small.json.gz"
#define WITH_DATA "tests/data/bundles/with_data.json"
#define QUICK "--hal=cpu --iters=1 --warmup=0"

/* A 16-op bundle extracted from a real trace (an MI300X's, with recorded times and kernels) at
 * `bundle`, and the same converted whole to our JSON at `full`. */
static void bert(const char **bundle, const char **full) {
  *bundle = scratch("bert.msgpack");
  *full = scratch("bert.full.json");
  char args[4096];
  snprintf(args, sizeof args, "extract " GZ_TRACE " -q -o %s", *bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(args, sizeof args, "convert %s %s", *bundle, *full);
  cr_assert_eq(replay(args), 0, "%s", err_text);
}

/* `out`'s ops are exactly ops `indices` of `full`, in that order, field for field, and its
 * metadata is full's; the ops carry the timing the test relies on being compared. */
static void assert_slice_of(const char *out, const char *full, const int *indices, size_t n) {
  cJSON *s = read_json(out), *f = read_json(full);
  const cJSON *ops = cJSON_GetObjectItem(s, "ops"), *all = cJSON_GetObjectItem(f, "ops");
  cr_assert_eq(cJSON_GetArraySize(ops), (int)n, "%s holds %d ops, not %zu", out,
               cJSON_GetArraySize(ops), n);
  for (size_t k = 0; k < n; k++) {
    const cJSON *got = cJSON_GetArrayItem(ops, (int)k), *want = cJSON_GetArrayItem(all, indices[k]);
    cr_assert_not_null(want, "%s has no op %d", full, indices[k]);
    char *a = cJSON_PrintUnformatted(got), *b = cJSON_PrintUnformatted(want);
    cr_assert(cJSON_Compare(got, want, true), "op %zu of the slice is not op %d:\n%s\n%s", k,
              indices[k], a, b);
    free(a);
    free(b);
  }
  const cJSON *meta = cJSON_GetObjectItem(s, "metadata");
  cr_assert(cJSON_IsObject(meta) && cJSON_Compare(meta, cJSON_GetObjectItem(f, "metadata"), true),
            "%s: the metadata is not the source's", out);
  cJSON_Delete(s);
  cJSON_Delete(f);
}

/* The command the slice printed ("replay it: replay ..."), run; returns its exit code. */
static int run_printed_command(void) {
  const char *at = strstr(out_text, "replay it: replay ");
  cr_assert_not_null(at, "no command printed: %s", out_text);
  at += strlen("replay it: replay ");
  char args[4096];
  snprintf(args, sizeof args, "%.*s", (int)strcspn(at, "\n"), at);
  cr_assert(strstr(args, "--hal=cpu "), "%s", args);
  return replay(args);
}

/* ------------------------------------------------------------------------------------------ */
/* what a slice holds                                                                          */

Test(slice, one_op_with_its_timing_and_metadata_replays) {
  const char *bundle, *full, *out = scratch("op5.json");
  bert(&bundle, &full);
  char args[4096], want[4096];
  snprintf(args, sizeof args, "slice %s --op=5 -o %s", bundle, out);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(want, sizeof want,
           "wrote %s (json): 1 of the 16 ops of %s, now numbered from 0: #5 aten::addmm\n"
           "tensor contents: 0 stripped (shapes, strides and dtypes kept; --keep-data keeps them)\n"
           "replay it: replay --hal=cpu %s\n",
           out, bundle, out);
  cr_assert_str_eq(out_text, want);
  assert_slice_of(out, full, (int[]){5}, 1);
  /* The device it was captured on, and the kernels the trace recorded, are there to compare. */
  cJSON *s = read_json(out);
  cr_assert_str_eq(json_str(cJSON_GetObjectItem(s, "metadata"), "device_name"),
                   "AMD Instinct MI300X VF");
  const cJSON *timing = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(s, "ops"), 0),
                                            "timing");
  cr_assert_gt(cJSON_GetArraySize(cJSON_GetObjectItem(timing, "kernels")), 0);
  cr_assert_gt(json_number(timing, "gpu_time_us"), 0);
  cJSON_Delete(s);
  cr_assert_eq(run_printed_command(), 0, "%s", err_text);
  cr_assert(strstr(out_text, "summary [cpu]: 1 of 1 ops attempted: 1 succeeded"), "%s", out_text);
}

Test(slice, several_ops_in_bundle_order_as_msgpack) {
  const char *bundle, *full, *out = scratch("three.msgpack"), *json = scratch("three.json");
  bert(&bundle, &full);
  char args[4096];
  /* Out of order, one twice, over two options: the bundle's order, each once. */
  snprintf(args, sizeof args, "slice %s --op=12,1 --op 7,12 -o %s", bundle, out);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "(msgpack): 3 of the 16 ops of "), "%s", out_text);
  cr_assert(strstr(out_text, ": #1 aten::addmm, #7 aten::gelu, #12 aten::gelu\n"), "%s",
            out_text);
  snprintf(args, sizeof args, "convert %s %s", out, json);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  assert_slice_of(json, full, (int[]){1, 7, 12}, 3);
  snprintf(args, sizeof args, "slice %s --op=12,1 --op 7,12 -o %s", bundle, out);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert_eq(run_printed_command(), 0, "%s", err_text);
  cr_assert(strstr(out_text, "summary [cpu]: 3 of 3 ops attempted: 3 succeeded"), "%s", out_text);
}

/* The ops a replay's --op-filter runs, no more and no fewer. */
Test(slice, op_filter_takes_what_the_replay_takes) {
  const char *bundle, *full, *out = scratch("index.json"), *report = scratch("filtered.json");
  bert(&bundle, &full);
  char args[4096];
  snprintf(args, sizeof args, QUICK " --op-filter=index_ --report=%s %s", report, bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cJSON *r = read_json(report);
  int indices[16];
  size_t n = 0;
  const cJSON *op;
  cJSON_ArrayForEach(op, cJSON_GetObjectItem(r, "ops")) {
    cr_assert_lt(n, 16);
    indices[n++] = (int)json_number(op, "index");
  }
  cJSON_Delete(r);
  cr_assert_eq(n, 3, "the filter's run took %zu ops", n);
  snprintf(args, sizeof args, "slice %s --op-filter=index_ -o %s", bundle, out);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  assert_slice_of(out, full, indices, n);
  cr_assert_eq(run_printed_command(), 0, "%s", err_text);
  cr_assert(strstr(out_text, "summary [cpu]: 3 of 3 ops attempted: 3 succeeded"), "%s", out_text);
}

/* ------------------------------------------------------------------------------------------ */
/* tensor contents                                                                             */

Test(slice, contents_are_stripped_by_default) {
  const char *out = scratch("stripped.json"), *full = scratch("stripped.full.json");
  char args[4096];
  snprintf(args, sizeof args, "convert " WITH_DATA " %s --strip-data", full);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(args, sizeof args, "slice " WITH_DATA " --op=0,2 -o %s", out);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "\ntensor contents: 3 stripped (shapes, strides and dtypes kept; "
                             "--keep-data keeps them)\n"),
            "%s", out_text);
  assert_slice_of(out, full, (int[]){0, 2}, 2);
  char text[1 << 16];
  slurp(out, text, sizeof text);
  cr_assert_null(strstr(text, "data_base64"), "%s", text);
  snprintf(args, sizeof args, "inspect %s", out);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "\ndata: shapes only"), "%s", out_text);
  cr_assert(strstr(out_text, "\ncaptured on: AMD Instinct MI300X\n"), "%s", out_text);
}

Test(slice, contents_are_kept_with_keep_data) {
  const char *out = scratch("kept.json"), *full = scratch("kept.full.json");
  char args[4096];
  snprintf(args, sizeof args, "convert " WITH_DATA " %s", full);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(args, sizeof args, "slice " WITH_DATA " --op=0,2 --keep-data -o %s", out);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  char want[2048];
  snprintf(want, sizeof want, "\ntensor contents: 3 kept, embedded in %s\n", out);
  cr_assert(strstr(out_text, want), "%s", out_text);
  assert_slice_of(out, full, (int[]){0, 2}, 2);
  cr_assert_eq(run_printed_command(), 0, "%s", err_text);
}

/* Writes a float32 .npy of `n` values at `path`. */
static void write_npy(const char *path, const float *v, int n) {
  char header[128];
  int len = snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, "
                                            "'shape': (%d,), }", n);
  while ((10 + len + 1) % 64) header[len++] = ' ';
  header[len++] = '\n';
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "%s", path);
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  unsigned char hl[2] = {(unsigned char)(len & 0xff), (unsigned char)(len >> 8)};
  fwrite(hl, 1, 2, f);
  fwrite(header, 1, (size_t)len, f);
  fwrite(v, sizeof *v, (size_t)n, f);
  fclose(f);
}

/* Contents in a .npy file beside the source go into the slice: written elsewhere, it has no
 * file to name. */
Test(slice, contents_from_npy_files_are_embedded) {
  char dir[1024], name[64], text[2048], args[8192], out[1200];
  snprintf(dir, sizeof dir, "%s", scratch("elsewhere"));
  cr_assert_eq(mkdir(dir, 0700), 0, "%s", dir);
  snprintf(out, sizeof out, "%s/relu.msgpack", dir);
  snprintf(name, sizeof name, "%d.x.npy", (int)getpid());
  write_npy(scratch("x.npy"), (float[]){-1, 2, -3, 4, 0.5f, -0.5f}, 6);
  const char *bundle = scratch("npy.json"), *full = scratch("npy.full.json");
  snprintf(text, sizeof text,
           "{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": \"aten::neg\", \"args\": "
           "[{\"name\": \"self\", \"type\": \"Tensor\", \"value\": {\"shape\": [6], \"dtype\": "
           "\"float\"}}]}, {\"name\": \"aten::relu\", \"args\": [{\"name\": \"self\", "
           "\"type\": \"Tensor\", \"value\": {\"shape\": [6], \"dtype\": \"float\", \"data\": "
           "\"%s\"}}]}]}",
           name);
  write_text(bundle, text);
  snprintf(args, sizeof args, "convert %s %s --embed-data", bundle, full);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(args, sizeof args, "slice %s --op=1 --keep-data -o %s", bundle, out);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "\ntensor contents: 1 kept, embedded in "), "%s", out_text);
  snprintf(args, sizeof args, "inspect %s", out);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "\ndata: tensor contents embedded in the file\n"), "%s", out_text);
  const char *json = scratch("npy.slice.json");
  snprintf(args, sizeof args, "convert %s %s", out, json);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  assert_slice_of(json, full, (int[]){1}, 1);
  /* Without --keep-data the file is not named either. */
  snprintf(args, sizeof args, "slice %s --op=1 -o %s", bundle, json);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "\ntensor contents: 1 stripped "), "%s", out_text);
  slurp(json, text, sizeof text);
  cr_assert_null(strstr(text, ".npy"), "%s", text);
}

/* ------------------------------------------------------------------------------------------ */
/* mistakes                                                                                    */

/* `replay ARGS` exits 2 with exactly `line` on stderr, nothing on stdout, and writes no OUT. */
static void refused_with(const char *args, const char *line, const char *out) {
  cr_assert_eq(replay(args), 2, "replay %s: %s", args, out_text);
  char want[4096];
  snprintf(want, sizeof want, "%s\n", line);
  cr_assert_str_eq(err_text, want, "replay %s", args);
  cr_assert_str_eq(out_text, "", "replay %s", args);
  if (out) cr_assert_neq(access(out, F_OK), 0, "replay %s wrote %s", args, out);
}

Test(slice, each_mistake_is_one_line_and_exit_2) {
  const char *out = scratch("never.json");
  char args[4096], line[4096];
  static const struct {
    const char *args, *line;
  } cases[] = {
      {WITH_DATA " --op=1,3", "--op=1,3: no op 3 in " WITH_DATA ", which has 3 ops (0 to 2)"},
      {WITH_DATA " --op=0 --op=7", "--op=7: no op 7 in " WITH_DATA ", which has 3 ops (0 to 2)"},
      {WITH_DATA " --op=1,x",
       "--op=1,x: \"x\" is not an op index (whole numbers from 0, comma-separated)"},
      {WITH_DATA " --op=-1",
       "--op=-1: \"-1\" is not an op index (whole numbers from 0, comma-separated)"},
      {WITH_DATA " --op=",
       "--op=: \"\" is not an op index (whole numbers from 0, comma-separated)"},
      {WITH_DATA " --op-filter=zzz",
       "--op-filter=zzz: no op of " WITH_DATA " has a name containing \"zzz\" (3 ops: aten::mm, "
       "aten::relu, aten::add)"},
      {WITH_DATA, "--op=N or --op-filter=TEXT is required: which ops to keep"},
      {WITH_DATA " --op=0 --op-filter=mm", "--op and --op-filter exclude each other"},
      {"--op=0", "BUNDLE is required (`replay slice --help`)"},
      {WITH_DATA " " WITH_DATA " --op=0",
       "one bundle at a time (" WITH_DATA ", then " WITH_DATA ")"},
      {WITH_DATA " --ops=0", "unknown option --ops=0 (did you mean --op?)"},
      {WITH_DATA " --keep-dta --op=0", "unknown option --keep-dta (did you mean --keep-data?)"},
      {WITH_DATA " --keep-data=yes --op=0", "--keep-data=yes: takes no value"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(args, sizeof args, "slice %s -o %s", cases[i].args, out);
    snprintf(line, sizeof line, "replay slice: %s", cases[i].line);
    refused_with(args, line, out);
  }
  refused_with("slice " WITH_DATA " --op=0", "replay slice: -o OUT is required", NULL);
  snprintf(args, sizeof args, "slice " WITH_DATA " --op=0 -o %s.txt", out);
  snprintf(line, sizeof line,
           "replay slice: %s.txt: cannot tell the output format from its extension; use .json "
           "or .msgpack", out);
  refused_with(args, line, NULL);
}

/* A bad bundle is named: missing, not JSON, a profiler trace. */
Test(slice, a_bad_bundle_names_the_file) {
  const char *out = scratch("never.json"), *missing = scratch("missing.json");
  const char *broken = scratch("broken.json");
  write_text(broken, "{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": 3}]}");
  const char *const bundles[] = {missing, broken, GZ_TRACE};
  for (size_t i = 0; i < sizeof bundles / sizeof bundles[0]; i++) {
    char args[4096], prefix[2048];
    snprintf(args, sizeof args, "slice %s --op=0 -o %s", bundles[i], out);
    cr_assert_eq(replay(args), 2, "replay %s: %s", args, out_text);
    snprintf(prefix, sizeof prefix, "replay slice: %s: ", bundles[i]);
    cr_assert(!strncmp(err_text, prefix, strlen(prefix)), "replay %s: %s", args, err_text);
    cr_assert(strchr(err_text, '\n') && !strchr(err_text, '\n')[1], "one line: %s", err_text);
    cr_assert_str_eq(out_text, "");
    cr_assert_neq(access(out, F_OK), 0, "replay %s wrote %s", args, out);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* the HTML page's command                                                                     */

/* `text` with the page's &amp; &lt; &gt; &quot; &#39; turned back into characters. */
static void unescape(const char *text, char *out, size_t size) {
  static const char *const entities[][2] = {
      {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}};
  size_t k = 0;
  while (*text && k + 1 < size) {
    size_t e = 0;
    for (; e < 5 && strncmp(text, entities[e][0], strlen(entities[e][0])); e++) {}
    if (e < 5) {
      out[k++] = entities[e][1][0];
      text += strlen(entities[e][0]);
    } else {
      out[k++] = *text++;
    }
  }
  out[k] = '\0';
}

/* Every row of the page holds the command that slices its op out of the report's bundle (at a
 * path that needs quoting) and replays it; pasted into a shell, the command works. */
Test(slice, every_row_of_the_page_holds_the_command_that_reproduces_it) {
  char dir[1024], bundle[1200], args[8192];
  snprintf(dir, sizeof dir, "%s", scratch("a dir's"));
  cr_assert_eq(mkdir(dir, 0700), 0, "%s", dir);
  snprintf(bundle, sizeof bundle, "%s/data.json", dir);
  snprintf(args, sizeof args, "convert " WITH_DATA " \"%s\"", bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  const char *report = scratch("page.report.json"), *page = scratch("page.html");
  snprintf(args, sizeof args, QUICK " --report=%s \"%s\"", report, bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(args, sizeof args, "report %s -o %s", report, page);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  static char html[1 << 20];
  slurp(page, html, sizeof html);
  /* The path as one shell word: single-quoted, its quote as '\'' (HTML-escaped on the page). */
  char word[2048], want[4096];
  snprintf(word, sizeof word, "&#39;%.*s&#39;\\&#39;&#39;s/data.json&#39;",
           (int)(strlen(dir) - 2), dir);
  for (int i = 0; i < 3; i++) {
    snprintf(want, sizeof want,
             "<td class=\"reproduce\"><code>replay slice %s --op=%d -o op%d.json &amp;&amp; "
             "replay --hal=cpu op%d.json</code></td></tr>",
             word, i, i, i);
    cr_assert(strstr(html, want), "no command for op %d: %s", i, want);
  }
  /* Op 2's, pasted into a shell where `replay` is the tool. */
  char command[4096], cwd[1024], script[8192];
  snprintf(want, sizeof want, "<td class=\"reproduce\"><code>replay slice %s --op=2", word);
  const char *at = strstr(html, want) + strlen("<td class=\"reproduce\"><code>");
  snprintf(want, sizeof want, "%.*s", (int)(strstr(at, "</code>") - at), at);
  unescape(want, command, sizeof command);
  cr_assert_not_null(getcwd(cwd, sizeof cwd));
  const char *run_dir = scratch("paste");
  cr_assert_eq(mkdir(run_dir, 0700), 0, "%s", run_dir);
  snprintf(script, sizeof script, "cd '%s' && PATH='%s/tools':\"$PATH\" && { %s; } >%s 2>&1\n",
           run_dir, cwd, command, scratch("paste.out"));
  const char *sh = scratch("paste.sh");
  write_text(sh, script);
  snprintf(args, sizeof args, "sh %s", sh);
  int status = system(args);
  char output[1 << 14];
  slurp(scratch("paste.out"), output, sizeof output);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: %s", command, output);
  cr_assert(strstr(output, "summary [cpu]: 1 of 1 ops attempted: 1 succeeded"), "%s", output);
  snprintf(args, sizeof args, "inspect %s/op2.json", run_dir);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "\n    0  aten::add "), "%s", out_text);
  /* A report that does not name its bundle has no command to give. */
  cJSON *r = read_json(report);
  cJSON_DeleteItemFromObject(r, "bundle");
  char *text = cJSON_PrintUnformatted(r);
  write_text(report, text);
  free(text);
  cJSON_Delete(r);
  snprintf(args, sizeof args, "report %s -o %s", report, page);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  slurp(page, html, sizeof html);
  cr_assert_null(strstr(html, "reproduce\"><code>"), "a command without a bundle");
  cr_assert(strstr(html, "<td class=\"reproduce\">&#8212;</td></tr>"), "the dash");
}
