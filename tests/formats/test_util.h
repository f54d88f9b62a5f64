/* Helpers shared by the formats test suites. */
#ifndef XR_TESTS_FORMATS_TEST_UTIL_H
#define XR_TESTS_FORMATS_TEST_UTIL_H

#include <criterion/criterion.h>
#include <string.h>

#include "formats/bundle.h"

#define FIXTURES "tests/data/fixtures"
#define GOLDEN "tests/data/golden"
#define TRACELENS_IR FIXTURES "/tracelens_ir/ir_from_real_traces.json"

/* Decodes (and validates) a bundle held in a string; returns the status. */
static inline xr_status_t decode_string(const char *text, xr_bundle_t **out) {
  return xr_bundle_decode((const uint8_t *)text, strlen(text), "t.json", ".", NULL, out);
}

/* Asserts that decoding fails and that the error names `needle`. */
#define assert_decode_error(text, needle)                                                     \
  do {                                                                                        \
    xr_bundle_t *b_ = NULL;                                                                   \
    xr_status_t st_ = decode_string((text), &b_);                                             \
    cr_assert_neq(st_, XR_OK, "decoding should fail: %s", (text));                            \
    cr_assert_null(b_);                                                                       \
    cr_assert(strstr(xr_last_error(), (needle)) != NULL, "error \"%s\" should contain \"%s\"", \
              xr_last_error(), (needle));                                                     \
  } while (0)

/* Encodes to MessagePack, decodes again and asserts structural equality. */
static inline xr_bundle_t *msgpack_round_trip(const xr_bundle_t *b) {
  uint8_t *bytes;
  size_t size;
  cr_assert_eq(xr_bundle_encode_msgpack(b, &bytes, &size), XR_OK, "%s", xr_last_error());
  xr_bundle_t *back;
  cr_assert_eq(xr_bundle_decode(bytes, size, "t.msgpack", b->base_dir, NULL, &back), XR_OK, "%s",
               xr_last_error());
  free(bytes);
  char where[256] = "";
  cr_assert(xr_bundle_equal(b, back, where, sizeof where), "msgpack round trip differs at %s",
            where);
  return back;
}

static inline xr_bundle_t *json_round_trip(const xr_bundle_t *b, bool pretty) {
  char *text;
  size_t size;
  xr_json_options_t o = {.pretty = pretty};
  cr_assert_eq(xr_bundle_encode_json(b, &o, &text, &size), XR_OK, "%s", xr_last_error());
  xr_bundle_t *back;
  cr_assert_eq(xr_bundle_decode((uint8_t *)text, size, "t.json", b->base_dir, NULL, &back), XR_OK,
               "%s\n%s", xr_last_error(), text);
  free(text);
  char where[256] = "";
  cr_assert(xr_bundle_equal(b, back, where, sizeof where), "JSON round trip differs at %s", where);
  return back;
}

#endif
