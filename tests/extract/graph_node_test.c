/* Graph-mode extraction's first rule: graph kernels joined to captured launches by the ordinal of
 * args."graph node id" ((graph id << 32) | ordinal), and the declines that hand a launch back to
 * the name and position rules.
 *
 * Every trace is written here, in the profiler's JSON form: a capture trace in which op
 * test::op<i> (input f32[8, i + 1]) launches kernel "void k<i><float>(float*)" (or issues a
 * cudaMemcpyAsync), and a graph trace whose launches replay those nodes on two streams, kernel
 * i lasting i + 1 us. An op's credited time therefore says which kernel it was joined to. */
#include <math.h>

#include "tests/extract/extract_util.h"

#define REPLAY_GRAPH 7ull  /* graph ids, the high 32 bits: they differ between the two sides */
#define CAPTURE_GRAPH 3ull /* and only the ordinal joins */
#define NO_ID (-1)

typedef struct cap_launch {
  int op;
  long long ordinal; /* NO_ID: no "graph node id" */
  bool unnamed;      /* no args.kernel, as CUPTI capture traces may write */
  bool memcpy;
} cap_launch_t;

typedef struct rep_kernel {
  int op;     /* the kernel k<op>, lasting op + 1 us */
  int stream; /* the tid it ran on */
  int start;  /* us after the graph launch */
  long long ordinal;
  bool memcpy;
  const char *node_text; /* a raw "graph node id" value, overriding ordinal */
} rep_kernel_t;

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s", path);
  cr_assert_eq(fputs(text, f) >= 0, true);
  fclose(f);
}

static const char *capture_trace(const char *file, const cap_launch_t *l, size_t n) {
  static char text[1 << 16];
  size_t at = (size_t)snprintf(
      text, sizeof text,
      "{\"traceEvents\": [\n"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamBeginCapture\", "
      "\"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 1, \"args\": {\"correlation\": 1}}");
  for (size_t i = 0; i < n; i++) {
    int op = l[i].op, ts = 10 + 10 * (int)i;
    char node[64] = "", kernel[96] = "";
    if (l[i].ordinal != NO_ID)
      snprintf(node, sizeof node, ", \"graph node id\": %llu",
               (CAPTURE_GRAPH << 32) | (unsigned long long)l[i].ordinal);
    if (!l[i].unnamed && !l[i].memcpy)
      snprintf(kernel, sizeof kernel, "\"kernel\": \"void k%d<float>(float*)\", ", op);
    at += (size_t)snprintf(
        text + at, sizeof text - at,
        ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"test::op%d\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": %d, \"dur\": 8, \"args\": {\"Input Dims\": [[8, %d]], \"Input type\": "
        "[\"float\"], \"Input Strides\": [[%d, 1]], \"Concrete Inputs\": [\"\"]}},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"%s\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": %d, \"dur\": 1, \"args\": {%s\"correlation\": %d%s}}",
        op, ts, op + 1, op + 1, l[i].memcpy ? "cudaMemcpyAsync" : "cudaLaunchKernel", ts + 1,
        kernel, 100 + (int)i, node);
    cr_assert_lt(at, sizeof text);
  }
  snprintf(text + at, sizeof text - at,
           ",\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamEndCapture\", "
           "\"pid\": 1, \"tid\": 1, \"ts\": %d, \"dur\": 1, \"args\": {\"correlation\": 2}}\n]}\n",
           20 + 10 * (int)n);
  static char paths[2][4096];
  static int next;
  char *p = paths[next++ % 2];
  snprintf(p, sizeof paths[0], "%s", tmp_path(file));
  write_file(p, text);
  return p;
}

/* `launches` graph launches, each replaying k[0..n). */
static const char *graph_trace(const rep_kernel_t *k, size_t n, int launches) {
  static char text[1 << 17];
  size_t at = (size_t)snprintf(text, sizeof text, "{\"traceEvents\": [");
  for (int g = 0; g < launches; g++) {
    int t0 = 10000 * g, corr = 1000 + g;
    at += (size_t)snprintf(
        text + at, sizeof text - at,
        "%s\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaGraphLaunch\", \"pid\": 1, "
        "\"tid\": 1, \"ts\": %d, \"dur\": 5, \"args\": {\"correlation\": %d}}",
        g ? "," : "", t0 + 10, corr);
    for (size_t i = 0; i < n; i++) {
      char node[96] = "";
      if (k[i].node_text)
        snprintf(node, sizeof node, ", \"graph node id\": %s", k[i].node_text);
      else if (k[i].ordinal != NO_ID)
        snprintf(node, sizeof node, ", \"graph node id\": %llu",
                 (REPLAY_GRAPH << 32) | (unsigned long long)k[i].ordinal);
      char name[64];
      if (k[i].memcpy)
        snprintf(name, sizeof name, "Memcpy DtoD (Device -> Device)");
      else
        snprintf(name, sizeof name, "k%d<float>(float*)", k[i].op);
      at += (size_t)snprintf(
          text + at, sizeof text - at,
          ",\n{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": 0, \"tid\": %d, "
          "\"ts\": %d, \"dur\": %d, \"args\": {\"correlation\": %d, \"stream\": %d%s}}",
          k[i].memcpy ? "gpu_memcpy" : "kernel", name, k[i].stream, t0 + 100 + k[i].start,
          k[i].op + 1, corr, k[i].stream, node);
      cr_assert_lt(at, sizeof text);
    }
  }
  snprintf(text + at, sizeof text - at, "\n]}\n");
  return text;
}

/* A two-stream graph of `n` nodes: node i is op i's kernel, on stream 7 for even i and 8 for odd
 * i. Captured in node order; in the replay stream 8 runs first, so start order is 1, 3, 5, ...,
 * 0, 2, 4, ... */
static void two_streams(cap_launch_t *cap, rep_kernel_t *rep, size_t n, bool ids, bool named) {
  for (size_t i = 0; i < n; i++) {
    int op = (int)i;
    cap[i] = (cap_launch_t){.op = op, .ordinal = ids ? op : NO_ID, .unnamed = !named};
    bool odd = i % 2;
    rep[i] = (rep_kernel_t){.op = op,
                            .stream = odd ? 8 : 7,
                            .start = odd ? 20 * (int)(i / 2) : 20 * (int)(n / 2 + i / 2),
                            .ordinal = ids ? op : NO_ID};
  }
}

/* One stream, replayed in capture order: rule 2 pairs these by name when rule 1 declines. */
static void one_stream(cap_launch_t *cap, rep_kernel_t *rep, size_t n) {
  for (size_t i = 0; i < n; i++) {
    cap[i] = (cap_launch_t){.op = (int)i, .ordinal = (long long)i};
    rep[i] =
        (rep_kernel_t){.op = (int)i, .stream = 7, .start = 20 * (int)i, .ordinal = (long long)i};
  }
}

typedef struct result {
  xr_status_t st;
  xr_bundle_t *b;
  xr_extract_summary_t s;
} result_t;

static result_t run(const char *cap_path, const char *trace) {
  xr_extract_capture_t c = {.path = cap_path};
  xr_extract_options_t o = {.captures = &c, .capture_count = 1};
  result_t r = {0};
  r.st = extract_string(trace, &o, &r.b, &r.s);
  return r;
}

static void done(result_t *r) {
  xr_bundle_destroy(r->b);
  xr_extract_summary_free(&r->s);
}

static const xr_op_t *find_op(const xr_bundle_t *b, int op) {
  char name[32];
  snprintf(name, sizeof name, "test::op%d", op);
  for (size_t i = 0; i < b->op_count; i++)
    if (strcmp(b->ops[i].name, name) == 0) return &b->ops[i];
  return NULL;
}

/* Op i was credited kernel joined[i] (its duration joined[i] + 1 us) in each of `launches`. */
static void expect_joined(const xr_bundle_t *b, const int *joined, size_t n, int launches) {
  for (size_t i = 0; i < n; i++) {
    const xr_op_t *op = find_op(b, (int)i);
    cr_assert_not_null(op, "test::op%zu", i);
    cr_assert_eq(op->count, launches, "test::op%zu", i);
    cr_assert_float_eq(op->timing->gpu_time_us, launches * (joined[i] + 1.0), 1e-9,
                       "test::op%zu: %.3f us, expected kernel k%d's", i, op->timing->gpu_time_us,
                       joined[i]);
    cr_assert_eq(op->args[0].value.as.tensor->shape[1], (int64_t)i + 1, "test::op%zu's shape", i);
  }
}

static void identity(int *joined, size_t n) {
  for (size_t i = 0; i < n; i++) joined[i] = (int)i;
}

static double meta_number(const xr_bundle_t *b, const char *name) {
  for (size_t i = 0; i < b->meta.extra_count; i++)
    if (strcmp(b->meta.extra[i].name, name) == 0)
      return b->meta.extra[i].value.kind == XR_VALUE_INT ? (double)b->meta.extra[i].value.as.i
                                                         : b->meta.extra[i].value.as.f;
  return NAN;
}

static bool has_meta(const xr_bundle_t *b, const char *name) {
  for (size_t i = 0; i < b->meta.extra_count; i++)
    if (strcmp(b->meta.extra[i].name, name) == 0) return true;
  return false;
}

/* ------------------------------------------------------------------------------------------ */
/* rule 1 joins                                                                                */

Test(graph_node, a_two_stream_graph_joins_by_ordinal_whatever_the_start_order) {
  enum { N = 8 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N];
  two_streams(cap, rep, N, true, true);
  result_t r = run(capture_trace("two_named.json", cap, N), graph_trace(rep, N, 2));
  cr_assert_eq(r.st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(r.s.graph_launches_node_joined, 2);
  cr_assert_eq(r.s.graph_kernels_node_joined, 2 * N);
  cr_assert_eq(r.s.graph_launches_node_declined, 0);
  cr_assert_eq(r.s.graph_kernels_matched, 2 * N);
  int joined[N];
  identity(joined, N);
  expect_joined(r.b, joined, N, 2);
  cr_assert_eq(meta_number(r.b, "graph_kernels_node_joined"), 2 * N);
  cr_assert_eq(meta_number(r.b, "graph_launches_node_declined"), 0);
  round_trip_both_codecs(r.b);
  done(&r);
}

Test(graph_node, a_capture_without_kernel_names_joins_by_ordinal) {
  enum { N = 8 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N];
  two_streams(cap, rep, N, true, false);
  result_t r = run(capture_trace("two_unnamed.json", cap, N), graph_trace(rep, N, 1));
  cr_assert_eq(r.st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(r.s.graph_kernels_node_joined, N);
  int joined[N];
  identity(joined, N);
  expect_joined(r.b, joined, N, 1);
  cr_assert(!summary_has_warning(&r.s, "by position alone"),
            "launches with ids are not paired by position");
  done(&r);
}

Test(graph_node, memcpy_nodes_join_with_the_captured_memcpy) {
  enum { N = 6 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N];
  two_streams(cap, rep, N, true, true);
  cap[3].memcpy = rep[3].memcpy = true;
  result_t r = run(capture_trace("memcpy.json", cap, N), graph_trace(rep, N, 1));
  cr_assert_eq(r.st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(r.s.graph_kernels_node_joined, N);
  int joined[N];
  identity(joined, N);
  expect_joined(r.b, joined, N, 1);
  done(&r);
}

/* The first capture trace's stream capture does not join (another count), the second's does. */
Test(graph_node, each_candidate_capture_is_tried) {
  enum { N = 8 };
  cap_launch_t small[N - 2], cap[N];
  rep_kernel_t rep[N];
  two_streams(cap, rep, N, true, false);
  for (int i = 0; i < N - 2; i++) small[i] = (cap_launch_t){.op = i, .ordinal = i};
  xr_extract_capture_t c[2] = {{.path = capture_trace("first.json", small, N - 2)},
                               {.path = capture_trace("second.json", cap, N)}};
  xr_extract_options_t o = {.captures = c, .capture_count = 2};
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(extract_string(graph_trace(rep, N, 1), &o, &b, &s), XR_OK, "%s", xr_last_error());
  cr_assert_eq(s.graph_kernels_node_joined, N);
  cr_assert_eq(s.graph_launches_node_declined, 0);
  int joined[N];
  identity(joined, N);
  expect_joined(b, joined, N, 1);
  for (size_t i = 0; i < b->op_count; i++)
    cr_assert_str_eq(b->ops[i].timing->graph_capture, "second.json");
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

/* ------------------------------------------------------------------------------------------ */
/* without ids: the older rules, unchanged                                                     */

Test(graph_node, without_ids_an_unnamed_capture_pairs_by_start_order) {
  enum { N = 8 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N];
  two_streams(cap, rep, N, false, false);
  result_t r = run(capture_trace("two_positional.json", cap, N), graph_trace(rep, N, 1));
  cr_assert_eq(r.st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(r.s.graph_launches_node_joined + r.s.graph_launches_node_declined, 0);
  cr_assert_eq(r.s.graph_kernels_matched, N);
  cr_assert(summary_has_warning(&r.s, "by position alone"));
  cr_assert(!has_meta(r.b, "graph_kernels_node_joined"), "no node counts without node ids");
  /* the limit rule 1 lifts: op i gets the i-th kernel to start, 1, 3, 5, 7, 0, 2, 4, 6 */
  int joined[N] = {1, 3, 5, 7, 0, 2, 4, 6};
  expect_joined(r.b, joined, N, 1);
  done(&r);
}

Test(graph_node, without_ids_a_reordered_named_graph_does_not_align) {
  enum { N = 8 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N];
  two_streams(cap, rep, N, false, true);
  result_t r = run(capture_trace("two_names_only.json", cap, N), graph_trace(rep, N, 1));
  cr_assert_neq(r.st, XR_OK, "half the kernels pair in start order: below 90%%");
  cr_assert(strstr(xr_last_error(), "no stream capture fits"), "%s", xr_last_error());
}

Test(graph_node, ids_in_the_replay_alone_leave_the_older_rules_with_a_note) {
  enum { N = 20 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N];
  one_stream(cap, rep, N);
  for (size_t i = 0; i < N; i++) cap[i].ordinal = NO_ID;
  result_t r = run(capture_trace("cap_no_ids.json", cap, N), graph_trace(rep, N, 1));
  cr_assert_eq(r.st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(r.s.graph_launches_node_joined + r.s.graph_launches_node_declined, 0);
  cr_assert_eq(r.s.graph_kernels_matched, N);
  cr_assert(summary_has_warning(&r.s, "no launch in their capture traces carries one"));
  done(&r);
}

/* ------------------------------------------------------------------------------------------ */
/* declines                                                                                    */

/* Rule 1 declined with `reason` (the warning's category and detail), rule 2 pairing all N. */
static void expect_declined(const char *cap_file, const cap_launch_t *cap, const rep_kernel_t *rep,
                            size_t n_rep, size_t n, const char *category, const char *detail) {
  result_t r = run(capture_trace(cap_file, cap, n), graph_trace(rep, n_rep, 1));
  cr_assert_eq(r.st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(r.s.graph_launches_node_joined, 0, "%s", category);
  cr_assert_eq(r.s.graph_kernels_node_joined, 0, "%s", category);
  cr_assert_eq(r.s.graph_launches_node_declined, 1, "%s", category);
  cr_assert_eq(meta_number(r.b, "graph_launches_node_declined"), 1);
  cr_assert_eq(r.s.graph_launches_matched, 1, "rule 2 takes the launch");
  char what[200];
  snprintf(what, sizeof what, "decline the graph node id join (%s)", category);
  cr_assert(summary_has_warning(&r.s, what), "no warning \"%s\"", what);
  bool found = summary_has_warning(&r.s, detail);
  for (size_t i = 0; !found && i < r.s.warning_count; i++)
    cr_log_error("warning: %s", r.s.warnings[i]);
  cr_assert(found, "no warning with \"%s\"", detail);
  int joined[64];
  identity(joined, n);
  expect_joined(r.b, joined, n, 1); /* by name */
  done(&r);
}

Test(graph_node, duplicate_ordinals_in_the_replay_decline) {
  enum { N = 20 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N];
  one_stream(cap, rep, N);
  rep[5].ordinal = 4;
  expect_declined("dup_replay.json", cap, rep, N, N, "duplicate ordinals",
                  "ordinal 4 is on two of its kernels ('k4<float>(float*)' and "
                  "'k5<float>(float*)')");
}

Test(graph_node, duplicate_ordinals_in_the_capture_decline) {
  enum { N = 20 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N];
  one_stream(cap, rep, N);
  cap[9].ordinal = 8;
  expect_declined("dup_capture.json", cap, rep, N, N, "duplicate ordinals",
                  "ordinal 8 is on two launches in stream capture 1 of");
}

Test(graph_node, a_count_mismatch_declines) {
  enum { N = 20 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N + 1];
  one_stream(cap, rep, N);
  rep[N] = (rep_kernel_t){.op = 30, .stream = 8, .start = 1000, .ordinal = N};
  expect_declined("count.json", cap, rep, N + 1, N, "counts differ",
                  "21 kernels with graph node ids, 20 launches in stream capture 1 of");
}

Test(graph_node, ordinals_that_differ_decline) {
  enum { N = 20 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N];
  one_stream(cap, rep, N);
  rep[N - 1].ordinal = 40;
  expect_declined("ordinals.json", cap, rep, N, N, "ordinals differ",
                  "ordinal 19 of a launch in stream capture 1 of");
}

Test(graph_node, names_that_disagree_with_the_ordinals_decline) {
  enum { N = 20 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N];
  one_stream(cap, rep, N);
  rep[3].ordinal = 4, rep[4].ordinal = 3; /* ids swapped: by ordinal, op3 would get k4 */
  expect_declined("names.json", cap, rep, N, N,
                  "a joined pair disagrees (kind, grid and block, or name)",
                  "ordinal 3: kernel 'k4<float>(float*)', but stream capture 1 of");
}

Test(graph_node, a_kernel_without_an_id_declines) {
  enum { N = 20 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N];
  one_stream(cap, rep, N);
  rep[7].ordinal = NO_ID;
  expect_declined("partial.json", cap, rep, N, N,
                  "kernels or captured launches without a graph node id",
                  "1 of its 20 kernels carry no graph node id");
}

Test(graph_node, a_captured_launch_without_an_id_declines) {
  enum { N = 20 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N];
  one_stream(cap, rep, N);
  cap[2].ordinal = NO_ID;
  expect_declined("partial_cap.json", cap, rep, N, N,
                  "kernels or captured launches without a graph node id",
                  "1 of the 20 launches in stream capture 1 of");
}

/* ------------------------------------------------------------------------------------------ */
/* bad values                                                                                  */

Test(graph_node, bad_node_ids_are_named_and_ignored) {
  static const char *const bad[] = {"\"abc\"", "-5", "1.5", "[1]", "18446744073709551616", "true"};
  for (size_t v = 0; v < sizeof bad / sizeof *bad; v++) {
    enum { N = 20 };
    cap_launch_t cap[N];
    rep_kernel_t rep[N];
    one_stream(cap, rep, N);
    for (size_t i = 0; i < N; i++) rep[i].ordinal = NO_ID;
    rep[2].node_text = bad[v];
    result_t r = run(capture_trace("bad_value.json", cap, N), graph_trace(rep, N, 1));
    cr_assert_eq(r.st, XR_OK, "%s: %s", bad[v], xr_last_error());
    cr_assert(summary_has_warning(&r.s,
                                  "t.json: 1 events' args.\"graph node id\" is not a graph "
                                  "node id (first, traceEvents["),
              "%s: no warning naming the file and field", bad[v]);
    cr_assert_eq(r.s.graph_launches_node_joined + r.s.graph_launches_node_declined, 0, "%s",
                 bad[v]);
    cr_assert_eq(r.s.graph_kernels_matched, N, "%s", bad[v]);
    done(&r);
  }
}

Test(graph_node, node_id_zero_is_no_graph_node) {
  enum { N = 20 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N];
  one_stream(cap, rep, N);
  for (size_t i = 0; i < N; i++) rep[i].node_text = "0";
  result_t r = run(capture_trace("zero.json", cap, N), graph_trace(rep, N, 1));
  cr_assert_eq(r.st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(r.s.graph_launches_node_joined + r.s.graph_launches_node_declined, 0);
  cr_assert(!summary_has_warning(&r.s, "graph node id\" is not"), "0 is a valid value");
  cr_assert_eq(r.s.graph_kernels_matched, N);
  done(&r);
}

Test(graph_node, a_numeric_string_id_is_read) {
  enum { N = 8 };
  cap_launch_t cap[N];
  rep_kernel_t rep[N];
  two_streams(cap, rep, N, true, false);
  char texts[N][32];
  for (size_t i = 0; i < N; i++) {
    snprintf(texts[i], sizeof texts[i], "\"%llu\"", (REPLAY_GRAPH << 32) | i);
    rep[i].node_text = texts[i];
  }
  result_t r = run(capture_trace("string_ids.json", cap, N), graph_trace(rep, N, 1));
  cr_assert_eq(r.st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(r.s.graph_kernels_node_joined, N);
  int joined[N];
  identity(joined, N);
  expect_joined(r.b, joined, N, 1);
  done(&r);
}
