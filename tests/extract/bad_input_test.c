/* Bad input: a clear error naming the file and the problem, or a counted skip; never a crash. */
#include <zlib.h>

#include "tests/extract/extract_util.h"

#define assert_extract_error(text, needle)                                                    \
  do {                                                                                        \
    xr_bundle_t *b_ = (xr_bundle_t *)1;                                                       \
    xr_status_t st_ = extract_string((text), NULL, &b_, NULL);                                \
    cr_assert_neq(st_, XR_OK, "extraction should fail: %s", (text));                          \
    cr_assert_null(b_);                                                                       \
    cr_assert(strstr(xr_last_error(), "t.json") != NULL, "error names no file: %s",           \
              xr_last_error());                                                               \
    cr_assert(strstr(xr_last_error(), (needle)) != NULL, "error \"%s\" should contain \"%s\"", \
              xr_last_error(), (needle));                                                     \
  } while (0)

Test(bad_input, missing_file_is_not_found) {
  xr_bundle_t *b;
  cr_assert_eq(xr_trace_extract("no/such/trace.json.gz", NULL, &b, NULL), XR_NOT_FOUND);
  cr_assert(strstr(xr_last_error(), "no/such/trace.json.gz"));
  cr_assert_null(b);
}

Test(bad_input, truncated_gzip_is_data_loss) {
  uint8_t *bytes;
  size_t size;
  cr_assert_eq(xr_read_file(TRACES "/mi300_torch_compile_sdpa.json.gz", &bytes, &size), XR_OK);
  const size_t cuts[] = {size / 2, size - 9, 20};
  for (size_t i = 0; i < 3; i++) {
    const char *path = tmp_path("cut.json.gz");
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fwrite(bytes, 1, cuts[i], f);
    fclose(f);
    xr_bundle_t *b;
    xr_status_t st = xr_trace_extract(path, NULL, &b, NULL);
    cr_assert_eq(st, XR_DATA_LOSS, "cut at %zu: %s", cuts[i], xr_last_error());
    cr_assert(strstr(xr_last_error(), "cut.json.gz"), "%s", xr_last_error());
    cr_assert_null(b);
  }
  free(bytes);
}

Test(bad_input, json_that_is_not_a_trace) {
  assert_extract_error("{\"foo\": 1}", "no traceEvents");
  assert_extract_error("{\"traceEvents\": 3}", "traceEvents is not an array");
  assert_extract_error("{\"traceEvents\": [1, 2]}", "is not an object");
  assert_extract_error("42", "not a JSON object");
  assert_extract_error("\"a string\"", "not a JSON object");
  assert_extract_error("", "empty");
  assert_extract_error("{\"traceEvents\": [{\"ph\": }]}", "unexpected character");
  assert_extract_error("{\"traceEvents\": [{\"ph\" \"X\"}]}", "expected ':'");
  assert_extract_error("{\"traceEvents\": [] garbage", "expected ','");
  assert_extract_error("{\"traceEvents\": []} {}", "after the end");
  assert_extract_error("{\"traceEvents\": [{\"name\": \"unterminated}]}", "end of input");
  assert_extract_error("{\"traceEvents\": [{\"name\": \"bad \\q escape\"}]}", "bad escape");
  assert_extract_error("{\"traceEvents\": [{\"ts\": 1.2.3}]}", "malformed number");
  assert_extract_error("{\"traceEvents\": [}", "unexpected character");
  assert_extract_error("{\"traceEvents\": [{}}", "unbalanced '}'");
  char deep[400];
  strcpy(deep, "{\"traceEvents\": [{\"args\": ");
  for (int i = 0; i < 100; i++) strcat(deep, "[");
  assert_extract_error(deep, "nesting deeper");
}

/* A one-op trace where the op's args object is `args` and the kernel's correlation `corr`. */
static char *trace_with(const char *args, int corr) {
  const char *fmt =
      "{\"traceEvents\": ["
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1,"
      " \"ts\": 0, \"dur\": 10%s%s},"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1,"
      " \"tid\": 1, \"ts\": 5, \"dur\": 1, \"args\": {\"correlation\": 1}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7, \"ts\": 20,"
      " \"dur\": 4, \"args\": {\"correlation\": %d}}]}";
  size_t n = strlen(fmt) + strlen(args) + 64;
  char *s = malloc(n);
  snprintf(s, n, fmt, *args ? ", \"args\": " : "", args, corr);
  return s;
}

static void extract_ok(const char *text, xr_bundle_t **b, xr_extract_summary_t *s) {
  cr_assert_eq(extract_string(text, NULL, b, s), XR_OK, "%s", xr_last_error());
}

Test(bad_input, events_missing_their_args_are_counted) {
  char *text = trace_with("", 1);
  xr_bundle_t *b;
  xr_extract_summary_t s;
  extract_ok(text, &b, &s);
  cr_assert_eq(b->op_count, 0);
  cr_assert_eq(s.gpu_op_no_args, 1);
  cr_assert_float_eq(s.gpu_busy_us, 4.0, 1e-9);
  cr_assert_float_eq(s.gpu_covered_us, 0.0, 1e-9);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
  free(text);
}

Test(bad_input, unequal_argument_arrays_are_skipped_and_reported) {
  char *text = trace_with(
      "{\"Input Dims\": [[2, 3], [3, 4]], \"Input type\": [\"float\"],"
      " \"Concrete Inputs\": [\"\", \"\"]}", 1);
  xr_bundle_t *b;
  xr_extract_summary_t s;
  extract_ok(text, &b, &s);
  cr_assert_eq(b->op_count, 0);
  cr_assert_eq(s.ops_bad_args, 1);
  cr_assert(summary_has_warning(&s, "unequal length"));
  cr_assert(summary_has_warning(&s, "aten::mm"));
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
  free(text);
  const char *bad[] = {
      "{\"Input Dims\": [[2, 3], [3, 4]], \"Input type\": [\"float\", \"float\"],"
      " \"Input Strides\": [[3, 1]]}",
      "{\"Input Dims\": [[2, -3], [3, 4]], \"Input type\": [\"float\", \"float\"]}",
      "{\"Input Dims\": [[2, 3], [3, 4]], \"Input type\": [\"float\", \"quaternion\"]}",
      "{\"Input Dims\": 5, \"Input type\": [\"float\", \"float\"]}",
      "{\"Input Dims\": [[2, \"x\"], [3, 4]], \"Input type\": [\"float\", \"float\"]}",
      "{\"Input Dims\": [[2, 3], [3, 4]], \"Input type\": [\"float\", 7]}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    text = trace_with(bad[i], 1);
    extract_ok(text, &b, &s);
    cr_assert_eq(b->op_count, 0, "%s", bad[i]);
    cr_assert_eq(s.ops_bad_args, 1, "%s", bad[i]);
    xr_bundle_destroy(b);
    xr_extract_summary_free(&s);
    free(text);
  }
}

Test(bad_input, correlation_ids_that_lead_nowhere_are_counted) {
  char *text = trace_with(
      "{\"Input Dims\": [[2, 3], [3, 4]], \"Input type\": [\"float\", \"float\"]}", 999);
  xr_bundle_t *b;
  xr_extract_summary_t s;
  extract_ok(text, &b, &s);
  cr_assert_eq(b->op_count, 0);
  cr_assert_eq(s.gpu_unlinked, 1);
  cr_assert_eq(s.gpu_events, 1);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
  free(text);
}

Test(bad_input, every_truncation_of_a_small_trace_fails_cleanly) {
  char *text = trace_with(
      "{\"Input Dims\": [[2, 3], [3, 4]], \"Input type\": [\"float\", \"float\"],"
      " \"Concrete Inputs\": [\"\", \"\"], \"s\\u00e9\": \"\\ud83d\\ude00\"}", 1);
  size_t n = strlen(text);
  xr_bundle_t *b;
  extract_ok(text, &b, NULL);
  cr_assert_eq(b->op_count, 1);
  xr_bundle_destroy(b);
  for (size_t cut = 0; cut + 1 < n; cut++) {
    xr_status_t st = xr_trace_extract_memory(text, cut, "t.json", NULL, &b, NULL);
    cr_assert_neq(st, XR_OK, "cut at %zu of %zu succeeded", cut, n);
    cr_assert_null(b);
    cr_assert(strstr(xr_last_error(), "t.json"), "%s", xr_last_error());
  }
  free(text);
}

Test(bad_input, null_arguments_are_rejected) {
  xr_bundle_t *b;
  cr_assert_eq(xr_trace_extract(NULL, NULL, &b, NULL), XR_INVALID_ARGUMENT);
  cr_assert_eq(xr_trace_extract_memory(NULL, 0, "x", NULL, &b, NULL), XR_INVALID_ARGUMENT);
}

/* Numbers out of any integer's range (a ts of 1.7e22 us, a dur of 6e35, a correlation id of
 * 1e300) saturate instead of overflowing (the ASan/UBSan run fails on undefined behaviour); a
 * runtime version that is no version is not written. */
Test(bad_input, numbers_out_of_range_saturate) {
  uint8_t *text;
  size_t size;
  cr_assert_eq(xr_read_file("tests/fuzz/corpus/trace/regress-huge-numbers.json", &text, &size),
               XR_OK, "%s", xr_last_error());
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(xr_trace_extract_memory((char *)text, size, "huge.json", NULL, &b, &s), XR_OK, "%s",
               xr_last_error());
  free(text);
  cr_assert_null(b->meta.runtime_version, "%s", b->meta.runtime_version);
  cr_assert_null(b->meta.capture_date);
  cr_assert_eq(s.gpu_events, 2);
  cr_assert_geq(s.gpu_busy_us, 0);
  cr_assert_eq(xr_bundle_validate(b, false, NULL), XR_OK, "%s", xr_last_error());
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

/* A cpu_op without a name is not an op: its kernels go to the op around it, and the bundle
 * validates (it used to hold an op with an empty name). */
/* The cpu_op events given (a thread of pid 1, tid 1, enclosing ts 2) and one kernel launched at
 * ts 2. */
static xr_status_t extract_one_kernel(const char *cpu_ops, xr_bundle_t **b,
                                      xr_extract_summary_t *s) {
  static char t[4096];
  snprintf(t, sizeof t,
           "{\"traceEvents\": [%s,"
           "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
           "\"pid\": 1, \"tid\": 1, \"ts\": 2, \"dur\": 1, \"args\": {\"correlation\": 3}},"
           "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
           "\"ts\": 4, \"dur\": 2, \"args\": {\"correlation\": 3}}]}",
           cpu_ops);
  return extract_string(t, NULL, b, s);
}

/* The bundle holds aten::relu alone, the other cpu_op counted as unnamed; frees both. */
static void expect_relu_and_one_unnamed(xr_bundle_t *b, xr_extract_summary_t *s) {
  cr_assert_eq(s->ops_unnamed, 1);
  cr_assert_eq(b->op_count, 1);
  cr_assert_str_eq(b->ops[0].name, "aten::relu");
  cr_assert(summary_has_warning(s, "1 cpu_op events have no name"));
  cr_assert_eq(xr_bundle_validate(b, false, NULL), XR_OK, "%s", xr_last_error());
  xr_bundle_destroy(b);
  xr_extract_summary_free(s);
}

Test(bad_input, unnamed_cpu_ops_are_skipped_and_counted) {
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(extract_one_kernel(
                   "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::relu\", \"pid\": 1, "
                   "\"tid\": 1, \"ts\": 0, \"dur\": 10, \"args\": {\"Input Dims\": [[4]], "
                   "\"Input type\": [\"float\"]}},"
                   "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"\", \"pid\": 1, \"tid\": 1, "
                   "\"ts\": 1, \"dur\": 5, \"args\": {\"Input Dims\": [[4]], \"Input type\": "
                   "[\"float\"]}}",
                   &b, &s),
               XR_OK, "%s", xr_last_error());
  expect_relu_and_one_unnamed(b, &s);
}

/* A name a \u0000 escape starts is empty as the C string a bundle holds: unnamed, as above
 * (the trace fuzzer found it making a bundle its own validator rejected). */
Test(bad_input, names_that_start_with_nul_are_unnamed) {
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(extract_one_kernel(
                   "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::relu\\u0000x\", "
                   "\"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 10, \"args\": {\"Input Dims\": "
                   "[[4]], \"Input type\": [\"float\"]}},"
                   "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"\\u0000aten::neg\", \"pid\": 1, "
                   "\"tid\": 1, \"ts\": 1, \"dur\": 5, \"args\": {\"Input Dims\": [[4]], "
                   "\"Input type\": [\"float\"]}}",
                   &b, &s),
               XR_OK, "%s", xr_last_error());
  expect_relu_and_one_unnamed(b, &s);
}

/* Dimensions each fine but whose product overflows: the op is skipped as malformed (it used to
 * make a bundle its own validator rejected). */
Test(bad_input, shapes_whose_size_overflows_are_skipped) {
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(extract_one_kernel(
                   "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::relu\", \"pid\": 1, "
                   "\"tid\": 1, \"ts\": 0, \"dur\": 10, \"args\": {\"Input Dims\": "
                   "[[4294967296, 4294967296]], \"Input type\": [\"float\"]}}",
                   &b, &s),
               XR_OK, "%s", xr_last_error());
  cr_assert_eq(b->op_count, 0);
  cr_assert_eq(s.ops_bad_args, 1);
  cr_assert(summary_has_warning(&s, "aten::relu: skipped: Input Dims[0]: the tensor's size "
                                    "overflows 64 bits"));
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}
