/* Graph-mode extraction: kernels under CUDA/HIP graph launches credited to the ops of a capture
 * trace.
 *
 * The real pairs in tests/data/fixtures/graph_traces are checked against TraceLens' own analysis
 * of them (tracelens_ops_summary.csv, written by TraceLens, not by this project): per op name,
 * the summed direct kernel time and the count. Synthetic pairs written here check the matching
 * rule's edges: spellings, a missing and an extra kernel, captures chosen by batch size, and the
 * errors. */
#include <math.h>
#include <sys/stat.h>

#include "tests/extract/extract_util.h"

#define GRAPHS "tests/data/fixtures/graph_traces"

/* ------------------------------------------------------------------------------------------ */
/* the real pairs against TraceLens                                                            */

typedef struct tl_row {
  char name[256];
  double us;
  long long count;
} tl_row_t;

/* Splits one CSV line (quoted fields may hold commas) into at most `max` fields, in place. */
static size_t csv_fields(char *line, char **fields, size_t max) {
  size_t n = 0;
  char *p = line;
  while (n < max) {
    bool quoted = *p == '"';
    if (quoted) p++;
    fields[n++] = p;
    char *w = p;
    for (; *p; p++) {
      if (quoted && *p == '"' && p[1] == '"')
        *w++ = '"', p++;
      else if (quoted && *p == '"')
        quoted = false;
      else if (!quoted && (*p == ',' || *p == '\n' || *p == '\r'))
        break;
      else
        *w++ = *p;
    }
    char end = *p;
    *w = '\0';
    if (end != ',') break;
    p++;
  }
  return n;
}

/* TraceLens' rows summed per op name (a name has one row per parent module). */
static size_t read_tracelens(const char *path, tl_row_t *rows, size_t max, double *total) {
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  char line[16384];
  char *fields[16];
  cr_assert_not_null(fgets(line, sizeof line, f));
  size_t nf = csv_fields(line, fields, 16);
  int name = -1, us = -1, count = -1;
  for (size_t i = 0; i < nf; i++) {
    if (strcmp(fields[i], "name") == 0) name = (int)i;
    if (strcmp(fields[i], "total_direct_kernel_time_sum") == 0) us = (int)i;
    if (strcmp(fields[i], "Count") == 0) count = (int)i;
  }
  cr_assert(name >= 0 && us >= 0 && count >= 0, "%s: columns not found", path);
  size_t n = 0;
  *total = 0;
  while (fgets(line, sizeof line, f)) {
    nf = csv_fields(line, fields, 16);
    if (nf <= (size_t)count) continue;
    size_t k = 0;
    while (k < n && strcmp(rows[k].name, fields[name]) != 0) k++;
    if (k == n) {
      cr_assert_lt(n, max);
      snprintf(rows[n].name, sizeof rows[n].name, "%s", fields[name]);
      rows[n].us = 0, rows[n].count = 0;
      n++;
    }
    rows[k].us += atof(fields[us]);
    rows[k].count += atoll(fields[count]);
    *total += atof(fields[us]);
  }
  fclose(f);
  return n;
}

static double meta_number(const xr_bundle_t *b, const char *name) {
  for (size_t i = 0; i < b->meta.extra_count; i++)
    if (strcmp(b->meta.extra[i].name, name) == 0)
      return b->meta.extra[i].value.kind == XR_VALUE_INT ? (double)b->meta.extra[i].value.as.i
                                                         : b->meta.extra[i].value.as.f;
  cr_assert_fail("metadata %s missing", name);
  return 0;
}

static xr_bundle_t *extract_pair(const char *dir, xr_extract_summary_t *s) {
  xr_extract_capture_t *caps;
  size_t n;
  char path[512];
  cr_assert_eq(xr_extract_read_capture_dir(dir, &caps, &n), XR_OK, "%s", xr_last_error());
  xr_extract_options_t o = {.captures = caps, .capture_count = n};
  snprintf(path, sizeof path, "%s/graph_execution.json.gz", dir);
  xr_bundle_t *b = NULL;
  cr_assert_eq(xr_trace_extract(path, &o, &b, s), XR_OK, "%s", xr_last_error());
  xr_extract_captures_free(caps, n);
  return b;
}

/* Every op holding 1% or more of TraceLens' time is in the bundle with its time within 5% and
 * its count; the bundle attributes 95% of GPU busy time or more. */
static void agrees_with_tracelens(const char *pair, int64_t batch_size, size_t heavy_ops) {
  char dir[256], csv[300];
  snprintf(dir, sizeof dir, GRAPHS "/%s", pair);
  snprintf(csv, sizeof csv, "%s/tracelens_ops_summary.csv", dir);
  xr_extract_summary_t s;
  xr_bundle_t *b = extract_pair(dir, &s);
  cr_assert_geq(s.gpu_covered_us / s.gpu_busy_us, 0.95, "%s: %.1f%% attributed", pair,
                100 * s.gpu_covered_us / s.gpu_busy_us);
  cr_assert_float_eq(meta_number(b, "extracted_gpu_share"), s.gpu_covered_us / s.gpu_busy_us, 1e-9);
  cr_assert_eq(s.graph_launches_matched, s.graph_launches, "%s", pair);
  cr_assert_eq(s.graph_kernels_matched, s.graph_kernels, "%s", pair);
  cr_assert_eq((size_t)meta_number(b, "graph_kernels_matched"), s.graph_kernels);
  cr_assert_gt(meta_number(b, "graph_gpu_share"), 0.5);

  tl_row_t rows[64];
  double total;
  size_t n = read_tracelens(csv, rows, 64, &total);
  size_t checked = 0;
  for (size_t k = 0; k < n; k++) {
    if (rows[k].us < 0.01 * total) continue;
    double us = 0;
    long long count = 0;
    for (size_t i = 0; i < b->op_count; i++) {
      const xr_op_t *op = &b->ops[i];
      if (strcmp(op->alias ? op->alias : op->name, rows[k].name) != 0) continue;
      us += op->timing->gpu_time_us;
      count += op->count;
    }
    cr_expect(fabs(us - rows[k].us) <= 0.05 * rows[k].us, "%s: %s: %.1f us, TraceLens %.1f us",
              pair, rows[k].name, us, rows[k].us);
    cr_expect_eq(count, rows[k].count, "%s: %s: count %lld, TraceLens %lld", pair, rows[k].name,
                 count, rows[k].count);
    checked++;
  }
  cr_assert_eq(checked, heavy_ops, "%s: %zu ops of 1%% or more in the CSV", pair, checked);
  /* Graph-replayed ops say so, with the capture and its batch size. */
  size_t graph_ops = 0;
  for (size_t i = 0; i < b->op_count; i++) {
    const xr_op_timing_t *t = b->ops[i].timing;
    if (!t->graph_capture) continue;
    graph_ops++;
    cr_assert(strncmp(t->graph_capture, "capture_trace", 13) == 0, "%s", t->graph_capture);
    cr_assert_eq(t->graph_batch_size, batch_size);
  }
  cr_assert_gt(graph_ops, 5);
  cr_assert_lt(graph_ops, b->op_count, "%s: eager ops are in the bundle too", pair);
  cr_assert_eq(xr_bundle_validate(b, false, NULL), XR_OK, "%s", xr_last_error());
  round_trip_both_codecs(b);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

Test(graph, sglang_full_graph_decode_agrees_with_tracelens) {
  agrees_with_tracelens("sglang_decode", 32, 8);
}

Test(graph, vllm_piecewise_prefill_decode_agrees_with_tracelens) {
  agrees_with_tracelens("vllm_prefilldecode_piecewise", 8192, 6);
}

/* The decode iteration's paged attention, replayed in the graph, keeps its iteration hints. */
Test(graph, graph_replayed_attention_gets_the_iteration_hints) {
  xr_extract_summary_t s;
  xr_bundle_t *b = extract_pair(GRAPHS "/sglang_decode", &s);
  const xr_op_t *attn = NULL;
  for (size_t i = 0; i < b->op_count; i++)
    if (strstr(b->ops[i].name, "attention_paged_attention_ragged")) attn = &b->ops[i];
  cr_assert_not_null(attn);
  cr_assert_str_eq(attn->name, "sglang_profiler::attention_paged_attention_ragged",
                   "the per-layer suffix is dropped");
  cr_assert_eq(attn->count, 36);
  int64_t decode = -1, context = -1;
  for (size_t h = 0; h < attn->hint_count; h++) {
    if (strcmp(attn->hints[h].name, "decode_seqs") == 0) decode = attn->hints[h].value.as.i;
    if (strcmp(attn->hints[h].name, "decode_context_tokens") == 0)
      context = attn->hints[h].value.as.i;
  }
  cr_assert_eq(decode, 32);
  cr_assert_eq(context, 32785);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

/* One --capture file: its batch size comes from its capture_32_DECODE annotation. */
Test(graph, a_single_capture_file_needs_no_execution_details) {
  xr_extract_capture_t cap = {.path = GRAPHS "/sglang_decode/capture_trace_bs_32.json.gz"};
  xr_extract_options_t o = {.captures = &cap, .capture_count = 1};
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(xr_trace_extract(GRAPHS "/sglang_decode/graph_execution.json.gz", &o, &b, &s), XR_OK,
               "%s", xr_last_error());
  cr_assert_eq(s.graph_kernels_matched, 544);
  cr_assert_eq(b->ops[0].timing->graph_batch_size, 32);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

Test(graph, without_a_capture_graph_kernels_are_counted_and_the_option_named) {
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(xr_trace_extract(GRAPHS "/sglang_decode/graph_execution.json.gz", NULL, &b, &s),
               XR_OK);
  cr_assert_eq(s.graph_launches, 1);
  cr_assert_eq(s.graph_kernels, 544);
  cr_assert_eq(s.graph_kernels_matched, 0);
  cr_assert(summary_has_warning(&s, "--capture"));
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

/* ------------------------------------------------------------------------------------------ */
/* synthetic pairs                                                                             */

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s", path);
  fputs(text, f);
  fclose(f);
}

/* A capture trace: one stream capture in which op test::op<i> (input f32[batch, i + 1])
 * launches kernel "void <prefix><i><float>(float*)", for i in [0, ops). */
static const char *capture_trace(const char *name, const char *prefix, int ops, int batch) {
  static char text[1 << 16];
  int n =
      snprintf(text, sizeof text,
               "{\"traceEvents\": [\n"
               "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"capture_%d_DECODE\", "
               "\"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 100000},\n"
               "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamBeginCapture\", "
               "\"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1, \"args\": {\"correlation\": 1}}",
               batch);
  for (int i = 0; i < ops; i++)
    n += snprintf(text + n, sizeof text - (size_t)n,
                  ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"test::op%d\", \"pid\": 1, "
                  "\"tid\": 1, \"ts\": %d, \"dur\": 8, \"args\": {\"Input Dims\": [[%d, %d]], "
                  "\"Input type\": [\"float\"], \"Input Strides\": [[%d, 1]], \"Concrete Inputs\": "
                  "[\"\"]}},\n"
                  "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
                  "\"pid\": 1, \"tid\": 1, \"ts\": %d, \"dur\": 1, \"args\": {\"kernel\": \"void "
                  "%s%d<float>(float*)\", \"correlation\": %d}}",
                  i, 10 + 10 * i, batch, i + 1, i + 1, 11 + 10 * i, prefix, i, 100 + i);
  snprintf(text + n, sizeof text - (size_t)n,
           ",\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamEndCapture\", "
           "\"pid\": 1, \"tid\": 1, \"ts\": %d, \"dur\": 1, \"args\": {\"correlation\": 2}}\n]}\n",
           20 + 10 * ops);
  const char *path = tmp_path(name);
  static char paths[4][4096];
  static int next;
  char *p = paths[next++ % 4];
  snprintf(p, sizeof paths[0], "%s", path);
  write_file(p, text);
  return p;
}

/* A graph trace: iterations of `batch` decode tokens, each one graph launch whose kernels are
 * "<prefix><i><float>(float*)" (another spelling than the capture's) lasting i + 1 us, for the
 * i listed in `kernels` (-1 ends; -2 is a kernel the capture never launched). */
typedef struct launch_spec {
  int batch;
  const char *prefix;
  int kernels[64];
} launch_spec_t;

static char *graph_trace(const launch_spec_t *launches, size_t count) {
  static char text[1 << 17];
  int n = snprintf(text, sizeof text, "{\"traceEvents\": [\n");
  for (size_t l = 0; l < count; l++) {
    int t0 = 10000 * (int)l, corr = 1000 + (int)l;
    n +=
        snprintf(text + n, sizeof text - (size_t)n,
                 "%s{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
                 "\"execute_context_0(0)_generation_%d(%d)\", \"pid\": 1, \"tid\": 1, \"ts\": %d, "
                 "\"dur\": 9000},\n"
                 "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaGraphLaunch\", "
                 "\"pid\": 1, \"tid\": 1, \"ts\": %d, \"dur\": 5, \"args\": {\"correlation\": %d}}",
                 l ? ",\n" : "", launches[l].batch, launches[l].batch, t0, t0 + 10, corr);
    for (int k = 0; launches[l].kernels[k] != -1; k++) {
      int i = launches[l].kernels[k];
      char name[64];
      if (i == -2)
        snprintf(name, sizeof name, "stray_kernel");
      else
        snprintf(name, sizeof name, "%s%d<float>(float*)", launches[l].prefix, i);
      n +=
          snprintf(text + n, sizeof text - (size_t)n,
                   ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": "
                   "7, \"ts\": %d, \"dur\": %d, \"args\": {\"correlation\": %d}}",
                   name, t0 + 100 + 10 * k, i >= 0 ? i + 1 : 50, corr);
    }
  }
  snprintf(text + n, sizeof text - (size_t)n, "\n]}\n");
  return text;
}

static void fill_range(int *k, int n) {
  for (int i = 0; i < n; i++) k[i] = i;
  k[n] = -1;
}

static const xr_op_t *find_op(const xr_bundle_t *b, const char *name, int64_t batch) {
  for (size_t i = 0; i < b->op_count; i++)
    if (strcmp(b->ops[i].name, name) == 0 && b->ops[i].timing->graph_batch_size == batch)
      return &b->ops[i];
  return NULL;
}

Test(graph, replays_of_one_capture_count_each_occurrence) {
  const char *cap = capture_trace("cap_a.json", "ka_", 20, 8);
  launch_spec_t l[3] = {{8, "ka_", {-1}}, {8, "ka_", {-1}}, {8, "ka_", {-1}}};
  for (int i = 0; i < 3; i++) fill_range(l[i].kernels, 20);
  xr_extract_capture_t c = {.path = cap};
  xr_extract_options_t o = {.captures = &c, .capture_count = 1};
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(extract_string(graph_trace(l, 3), &o, &b, &s), XR_OK, "%s", xr_last_error());
  cr_assert_eq(s.graph_launches_matched, 3);
  cr_assert_eq(s.graph_kernels_matched, 60);
  cr_assert_eq(b->op_count, 20);
  for (int i = 0; i < 20; i++) {
    char name[32];
    snprintf(name, sizeof name, "test::op%d", i);
    const xr_op_t *op = find_op(b, name, 8);
    cr_assert_not_null(op, "%s", name);
    cr_assert_eq(op->count, 3, "%s", name);
    cr_assert_float_eq(op->timing->gpu_time_us, 3.0 * (i + 1), 1e-9, "%s", name);
    cr_assert_str_eq(op->timing->graph_capture, "cap_a.json");
    cr_assert_eq(op->args[0].value.as.tensor->shape[1], i + 1);
  }
  round_trip_both_codecs(b);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

Test(graph, a_missing_and_an_extra_kernel_keep_the_rest_aligned) {
  const char *cap = capture_trace("cap_b.json", "ka_", 20, 8);
  launch_spec_t l = {8, "ka_", {-1}};
  int k = 0;
  for (int i = 0; i < 20; i++) {
    if (i == 5) continue;             /* the replay lacks kernel 5 */
    if (i == 12) l.kernels[k++] = -2; /* and has one the capture never launched */
    l.kernels[k++] = i;
  }
  l.kernels[k] = -1;
  xr_extract_capture_t c = {.path = cap};
  xr_extract_options_t o = {.captures = &c, .capture_count = 1};
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(extract_string(graph_trace(&l, 1), &o, &b, &s), XR_OK, "%s", xr_last_error());
  cr_assert_eq(s.graph_launches_matched, 1);
  cr_assert_eq(s.graph_kernels, 20);
  cr_assert_eq(s.graph_kernels_matched, 19);
  cr_assert(summary_has_warning(&s, "'stray_kernel'"), "the unpaired kernel is named");
  cr_assert_null(find_op(b, "test::op5", 8));
  for (int i = 0; i < 20; i++) {
    if (i == 5) continue;
    char name[32];
    snprintf(name, sizeof name, "test::op%d", i);
    const xr_op_t *op = find_op(b, name, 8);
    cr_assert_not_null(op, "%s", name);
    cr_assert_float_eq(op->timing->gpu_time_us, i + 1.0, 1e-9, "%s keeps its own kernel", name);
  }
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

/* Each launch takes the capture of the smallest batch that holds it. */
Test(graph, captures_are_chosen_by_batch_size) {
  xr_extract_capture_t c[2] = {{.path = capture_trace("cap_8.json", "ka_", 10, 8)},
                               {.path = capture_trace("cap_16.json", "kb_", 10, 16)}};
  launch_spec_t l[3] = {{8, "ka_", {-1}}, {16, "kb_", {-1}}, {12, "kb_", {-1}}};
  for (int i = 0; i < 3; i++) fill_range(l[i].kernels, 10);
  xr_extract_options_t o = {.captures = c, .capture_count = 2};
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(extract_string(graph_trace(l, 3), &o, &b, &s), XR_OK, "%s", xr_last_error());
  cr_assert_eq(s.graph_launches_matched, 3);
  const xr_op_t *small = find_op(b, "test::op3", 8), *big = find_op(b, "test::op3", 16);
  cr_assert(small && big);
  cr_assert_eq(small->count, 1);
  cr_assert_eq(big->count, 2, "batch 12 replays the graph captured for 16");
  cr_assert_str_eq(big->timing->graph_capture, "cap_16.json");
  cr_assert_eq(big->args[0].value.as.tensor->shape[0], 16);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

/* A FULL and a PIECEWISE capture of one batch size: the kernels decide. */
Test(graph, captures_of_one_batch_size_are_told_apart_by_their_kernels) {
  xr_extract_capture_t c[2] = {
      {.path = capture_trace("full_8.json", "kf_", 10, 8), .mode = "FULL"},
      {.path = capture_trace("piece_8.json", "kp_", 10, 8), .mode = "PIECEWISE"}};
  launch_spec_t l[2] = {{8, "kp_", {-1}}, {8, "kf_", {-1}}};
  for (int i = 0; i < 2; i++) fill_range(l[i].kernels, 10);
  xr_extract_options_t o = {.captures = c, .capture_count = 2};
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(extract_string(graph_trace(l, 2), &o, &b, &s), XR_OK, "%s", xr_last_error());
  cr_assert_eq(s.graph_launches_matched, 2);
  size_t full = 0, piece = 0;
  for (size_t i = 0; i < b->op_count; i++) {
    full += strcmp(b->ops[i].timing->graph_capture, "full_8.json") == 0;
    piece += strcmp(b->ops[i].timing->graph_capture, "piece_8.json") == 0;
  }
  cr_assert_eq(full, 10);
  cr_assert_eq(piece, 10);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

/* ------------------------------------------------------------------------------------------ */
/* bad input                                                                                   */

static void expect_error(const char *trace, const xr_extract_capture_t *c, size_t n,
                         const char *needle) {
  xr_extract_options_t o = {.captures = c, .capture_count = n};
  xr_bundle_t *b = (xr_bundle_t *)1;
  xr_status_t st = strncmp(trace, "tests/", 6) == 0 ? xr_trace_extract(trace, &o, &b, NULL)
                                                    : extract_string(trace, &o, &b, NULL);
  cr_assert_neq(st, XR_OK, "expected an error about %s", needle);
  cr_assert_null(b);
  cr_assert(strstr(xr_last_error(), needle), "error \"%s\" lacks \"%s\"", xr_last_error(), needle);
}

Test(graph_bad_input, a_capture_of_another_model_is_an_error_naming_the_launch) {
  xr_extract_capture_t c = {.path = GRAPHS "/vllm_prefilldecode_piecewise/capture_trace.json.gz"};
  expect_error(GRAPHS "/sglang_decode/graph_execution.json.gz", &c, 1,
               "none of its 1 graph launches matches the capture traces; first, the graph launch "
               "at ");
}

Test(graph_bad_input, a_capture_for_a_smaller_batch_is_not_used) {
  const char *cap = capture_trace("cap_small.json", "ka_", 10, 4);
  launch_spec_t l = {8, "ka_", {-1}};
  fill_range(l.kernels, 10);
  xr_extract_capture_t c = {.path = cap};
  expect_error(graph_trace(&l, 1), &c, 1, "was captured for batch 4, the launch ran 8 tokens");
}

Test(graph_bad_input, a_trace_that_is_no_capture_is_an_error) {
  xr_extract_capture_t c = {.path = TRACES "/h100_bert_small.json.gz"};
  expect_error(GRAPHS "/sglang_decode/graph_execution.json.gz", &c, 1,
               "h100_bert_small.json.gz: not a capture trace");
}

Test(graph_bad_input, graph_launches_without_kernels_are_an_error) {
  const char *cap = capture_trace("cap_c.json", "ka_", 4, 8);
  launch_spec_t l = {8, "ka_", {-1}};
  xr_extract_capture_t c = {.path = cap};
  expect_error(graph_trace(&l, 1), &c, 1, "its 1 graph launches have no GPU events");
}

Test(graph_bad_input, a_missing_capture_file_is_named) {
  xr_extract_capture_t c = {.path = "/nonexistent/capture.json.gz"};
  expect_error(GRAPHS "/sglang_decode/graph_execution.json.gz", &c, 1,
               "/nonexistent/capture.json.gz");
}

Test(graph_bad_input, a_malformed_capture_trace_names_the_file_and_byte) {
  const char *path = tmp_path("broken_capture.json");
  write_file(path, "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\",, }]}");
  xr_extract_capture_t c = {.path = path};
  expect_error(GRAPHS "/sglang_decode/graph_execution.json.gz", &c, 1, "broken_capture.json: byte");
}

static void expect_dir_error(const char *details, const char *needle) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", tmp_path("capdir"));
  mkdir(dir, 0755);
  char file[4200];
  snprintf(file, sizeof file, "%s/execution_details.json", dir);
  if (details)
    write_file(file, details);
  else
    remove(file);
  xr_extract_capture_t *caps = (xr_extract_capture_t *)1;
  size_t n = 7;
  cr_assert_neq(xr_extract_read_capture_dir(dir, &caps, &n), XR_OK, "expected: %s", needle);
  cr_assert_null(caps);
  cr_assert_eq(n, 0);
  cr_assert(strstr(xr_last_error(), needle), "error \"%s\" lacks \"%s\"", xr_last_error(), needle);
  cr_assert(strstr(xr_last_error(), "execution_details.json"), "%s", xr_last_error());
}

Test(graph_bad_input, execution_details_problems_name_the_entry_and_field) {
  expect_dir_error(NULL, "execution_details.json");
  expect_dir_error("[{\"file\": \"a.json\", ", "not valid JSON");
  expect_dir_error("{}", "expected a non-empty list");
  expect_dir_error("[]", "expected a non-empty list");
  expect_dir_error("[7]", "[0]: not an object");
  expect_dir_error("[{\"batch_size\": 8}]", "[0].file: missing");
  expect_dir_error("[{\"file\": \"a.json\", \"batch_size\": 0}]", "[0].batch_size");
  expect_dir_error("[{\"file\": \"a.json\", \"batch_size\": 2.5}]", "[0].batch_size");
  expect_dir_error("[{\"file\": \"a.json\", \"batch_size\": 8, \"mode\": \"HALF\"}]", "[0].mode");
  expect_dir_error(
      "[{\"file\": \"missing_capture.json.gz\", \"batch_size\": 8, \"mode\": \"FULL\"}]",
      "[0].file: ");
}

Test(graph_bad_input, execution_details_read_as_listed) {
  xr_extract_capture_t *caps;
  size_t n;
  cr_assert_eq(xr_extract_read_capture_dir(GRAPHS "/vllm_prefilldecode_piecewise", &caps, &n),
               XR_OK, "%s", xr_last_error());
  cr_assert_eq(n, 1);
  cr_assert_str_eq(caps[0].path, GRAPHS "/vllm_prefilldecode_piecewise/capture_trace.json.gz");
  cr_assert_eq(caps[0].batch_size, 8192);
  cr_assert_str_eq(caps[0].mode, "PIECEWISE");
  xr_extract_captures_free(caps, n);
}
