/* Helpers shared by the trace extraction suites. */
#ifndef XR_TESTS_EXTRACT_EXTRACT_UTIL_H
#define XR_TESTS_EXTRACT_EXTRACT_UTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "formats/trace_extract.h"

#define TRACES "tests/data/fixtures/traces"
#define PAIRS "tests/data/fixtures/tracelens_ir/event_to_ir_pairs.json"

/* Extracts a trace held in a string; returns the status (bundle NULL on failure). */
static inline xr_status_t extract_string(const char *text, const xr_extract_options_t *o,
                                         xr_bundle_t **out, xr_extract_summary_t *s) {
  return xr_trace_extract_memory(text, strlen(text), "t.json", o, out, s);
}

/* A path in the test's scratch directory. */
static inline const char *tmp_path(const char *name) {
  static char buf[4096];
  const char *dir = getenv("TEST_TMPDIR");
  snprintf(buf, sizeof buf, "%s/%s", dir ? dir : "/tmp", name);
  return buf;
}

static inline bool summary_has_warning(const xr_extract_summary_t *s, const char *needle) {
  for (size_t i = 0; i < s->warning_count; i++)
    if (strstr(s->warnings[i], needle)) return true;
  return false;
}

static inline void round_trip_both_codecs(const xr_bundle_t *b) {
  uint8_t *bytes;
  size_t size;
  char where[256] = "";
  cr_assert_eq(xr_bundle_encode_msgpack(b, &bytes, &size), XR_OK, "%s", xr_last_error());
  xr_bundle_t *m;
  cr_assert_eq(xr_bundle_decode(bytes, size, "t.msgpack", ".", NULL, &m), XR_OK, "%s",
               xr_last_error());
  free(bytes);
  cr_assert(xr_bundle_equal(b, m, where, sizeof where), "msgpack round trip differs at %s", where);
  xr_bundle_destroy(m);
  for (int pretty = 0; pretty < 2; pretty++) {
    char *text;
    xr_json_options_t o = {.pretty = pretty};
    cr_assert_eq(xr_bundle_encode_json(b, &o, &text, &size), XR_OK, "%s", xr_last_error());
    xr_bundle_t *j;
    cr_assert_eq(xr_bundle_decode((uint8_t *)text, size, "t.json", ".", NULL, &j), XR_OK, "%s",
                 xr_last_error());
    free(text);
    cr_assert(xr_bundle_equal(b, j, where, sizeof where), "JSON round trip differs at %s", where);
    xr_bundle_destroy(j);
  }
}

#endif
