/* Bad input: each case gets a clear error naming the file and the field, and nothing crashes
 * (this suite also runs under AddressSanitizer and UBSan). */
#include <stdio.h>
#include <stdlib.h>

#include "tests/formats/test_util.h"

/* One TraceLens entry whose first argument's value is VALUE. */
#define ONE_ARG(value)                                                                    \
  "[{\"op_name\": \"aten::mm\", \"replay_ir\": {\"list_pos_args\": [{\"arg_name\": "     \
  "\"self\", \"arg_type\": \"Tensor\", \"value\": " value "}], \"list_kwargs\": []}}]"

#define ARG0 "ops[0].replay_ir.list_pos_args[0].value"

Test(bad_input, negative_dimension_names_the_path) {
  assert_decode_error(ONE_ARG("{\"shape\": [3, -4], \"dtype\": \"float\"}"),
                      "t.json: " ARG0 ".shape[1]: negative dimension -4");
}

Test(bad_input, element_count_overflow) {
  assert_decode_error(ONE_ARG("{\"shape\": [1099511627776, 1099511627776], \"dtype\": \"float\"}"),
                      ARG0 ".shape[1]: element count overflows 64 bits");
}

Test(bad_input, byte_size_overflow) {
  /* 2^61 elements fit in int64 but their bytes do not. */
  assert_decode_error(ONE_ARG("{\"shape\": [2305843009213693952], \"dtype\": \"double\"}"),
                      "overflows");
}

Test(bad_input, strides_outside_the_storage) {
  assert_decode_error(
      ONE_ARG("{\"shape\": [4, 4], \"strides\": [8, 1], \"storage_size\": 16, \"dtype\": \"float\"}"),
      ARG0 ".strides: strides reach outside the storage: the view needs 28 elements, "
           "storage_size is 16");
}

Test(bad_input, embedded_data_too_short_for_the_strides) {
  assert_decode_error(
      ONE_ARG("{\"shape\": [2, 2], \"strides\": [4, 1], \"dtype\": \"float\", "
              "\"data_base64\": \"AAAAAAAAAAAAAAAAAAAAAA==\"}"),
      ARG0 ".data: embedded contents hold 16 bytes, the view needs 24");
}

Test(bad_input, negative_stride_and_offset) {
  assert_decode_error(ONE_ARG("{\"shape\": [4], \"strides\": [-1], \"dtype\": \"float\"}"),
                      ARG0 ".strides[0]: negative stride -1");
  assert_decode_error(ONE_ARG("{\"shape\": [4], \"storage_offset\": -2, \"dtype\": \"float\"}"),
                      ARG0 ".storage_offset: negative offset -2");
}

Test(bad_input, strides_of_the_wrong_length) {
  assert_decode_error(ONE_ARG("{\"shape\": [4, 2], \"strides\": [1], \"dtype\": \"float\"}"),
                      ARG0 ".strides: 1 strides for 2 dimensions");
}

Test(bad_input, unknown_dtype_names_op_and_argument) {
  assert_decode_error(ONE_ARG("{\"shape\": [4], \"dtype\": \"c10::Float4_e2m1\"}"),
                      ARG0 ".dtype: unknown dtype \"c10::Float4_e2m1\" (op aten::mm, argument self)");
}

Test(bad_input, wrong_json_types) {
  assert_decode_error(ONE_ARG("{\"shape\": \"4x4\", \"dtype\": \"float\"}"),
                      ARG0 ".shape: expected an array of integers, got a string");
  assert_decode_error(ONE_ARG("{\"shape\": [4, 2.5], \"dtype\": \"float\"}"),
                      ARG0 ".shape[1]: expected an integer, got 2.5");
  assert_decode_error(ONE_ARG("{\"shape\": [4], \"dtype\": 7}"),
                      ARG0 ".dtype: expected a dtype string, got a number");
  assert_decode_error(ONE_ARG("{\"shape\": [4], \"dtype\": \"float\", \"init\": \"gaussian\"}"),
                      ARG0 ".init: expected normal, uniform, zeros, ones or null, got \"gaussian\"");
  assert_decode_error("[{\"op_name\": 3, \"replay_ir\": {}}]",
                      "ops[0].op_name: expected the op name as a string, got a number");
  assert_decode_error("[{\"op_name\": \"a\", \"replay_ir\": {\"list_pos_args\": {}}}]",
                      "ops[0].replay_ir.list_pos_args: expected an array, got an object");
  assert_decode_error("{\"format\": \"xreplay-bundle\", \"ops\": {}}",
                      "\"ops\" is an object, expected an array");
  assert_decode_error("{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": \"a\", \"args\": "
                      "[{\"name\": \"x\"}]}]}",
                      "ops[0].args[0].value: expected a value (use null for None), got nothing");
  assert_decode_error("{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": \"a\", \"count\": "
                      "\"many\"}]}",
                      "ops[0].count: expected an integer, got a string");
  assert_decode_error("{\"format\": \"other\", \"ops\": []}", "\"format\" is not \"xreplay-bundle\"");
  assert_decode_error("{\"format\": \"xreplay-bundle\", \"format_version\": 99, \"ops\": []}",
                      "format_version 99");
  assert_decode_error("7", "not a bundle");
}

Test(bad_input, malformed_and_empty_json) {
  assert_decode_error("", "t.json: empty file");
  assert_decode_error("   ", "t.json: not a bundle");
  assert_decode_error("[{\"op_name\": \"a\",", "t.json: not valid JSON");
  assert_decode_error("{\"ops\": [1, 2,]}", "not valid JSON");
  /* NaN and Infinity are read as Python writes them, but glued to a number they are no JSON:
   * an error at their position, not a number. */
  assert_decode_error("{\"ops\": [{\"name\": \"a::b\", \"args\": [{\"value\": [1NaN]}]}]}",
                      "t.json: not valid JSON near line 1, column 48: a malformed number");
  assert_decode_error("{\"ops\": [{\"name\": \"a::b\", \"args\": [{\"value\": -NaN}]}]}",
                      "t.json: not valid JSON near line 1, column 47: a malformed number");
  assert_decode_error("[2Infinity]", "a malformed number");
}

Test(bad_input, json_nesting_bomb) {
  size_t depth = 200000;
  char *text = malloc(2 * depth + 1);
  memset(text, '[', depth);
  memset(text + depth, ']', depth);
  text[2 * depth] = '\0';
  assert_decode_error(text, "not valid JSON (or nested too deeply)");
  free(text);
}

Test(bad_input, deeply_nested_list_value) {
  char text[4096] = ONE_ARG("");
  /* Replace the empty value with 40 nested lists. */
  char value[128] = "";
  for (int i = 0; i < 40; i++) strcat(value, "[");
  for (int i = 0; i < 40; i++) strcat(value, "]");
  snprintf(text, sizeof text, ONE_ARG("%s"), value);
  assert_decode_error(text, "lists nested deeper than 16 levels");
}

/* ------------------------------------------------------------------------------------------ */
/* MessagePack                                                                                 */

static uint8_t *fixture_msgpack(size_t *size) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_load(TRACELENS_IR, &b), XR_OK);
  uint8_t *bytes;
  cr_assert_eq(xr_bundle_encode_msgpack(b, &bytes, size), XR_OK);
  xr_bundle_destroy(b);
  return bytes;
}

static xr_status_t decode_bytes(const uint8_t *p, size_t n) {
  xr_bundle_t *b = NULL;
  xr_status_t st = xr_bundle_decode(p, n, "t.msgpack", ".", NULL, &b);
  xr_bundle_destroy(b);
  return st;
}

Test(bad_input, every_truncation_of_a_msgpack_bundle_fails_cleanly) {
  size_t size;
  uint8_t *bytes = fixture_msgpack(&size);
  cr_assert_eq(decode_bytes(bytes, size), XR_OK);
  for (size_t n = 1; n < size; n++) {
    xr_status_t st = decode_bytes(bytes, n);
    cr_assert_neq(st, XR_OK, "a %zu-byte prefix of %zu decoded", n, size);
    cr_assert(strstr(xr_last_error(), "t.msgpack: ") == xr_last_error(), "%s", xr_last_error());
  }
  cr_assert(decode_bytes(bytes, size / 2) != XR_OK &&
            strstr(xr_last_error(), "MessagePack truncated"), "%s", xr_last_error());
  free(bytes);
}

Test(bad_input, corrupted_msgpack_never_crashes) {
  size_t size;
  uint8_t *bytes = fixture_msgpack(&size);
  uint8_t *copy = malloc(size);
  uint32_t seed = 12345;
  size_t failures = 0;
  for (int trial = 0; trial < 3000; trial++) {
    memcpy(copy, bytes, size);
    for (int k = 0; k < 1 + trial % 4; k++) {
      seed = seed * 1664525u + 1013904223u;
      size_t at = (seed >> 8) % size;
      seed = seed * 1664525u + 1013904223u;
      copy[at] = (uint8_t)(seed >> 24);
    }
    if (decode_bytes(copy, size) != XR_OK) {
      failures++;
      cr_assert_neq(xr_last_error()[0], '\0', "a failure must explain itself");
    }
  }
  /* Most corruptions are detected; the rest still decode to something valid. */
  cr_assert_gt(failures, 100);
  free(copy);
  free(bytes);
}

Test(bad_input, msgpack_container_announcing_billions_of_entries) {
  /* map{ "format": "xreplay-bundle", "ops": array32 with 0xffffffff entries } */
  uint8_t bomb[64];
  size_t n = 0;
  bomb[n++] = 0x82;
  bomb[n++] = 0xa6;
  memcpy(bomb + n, "format", 6), n += 6;
  bomb[n++] = 0xae;
  memcpy(bomb + n, "xreplay-bundle", 14), n += 14;
  bomb[n++] = 0xa3;
  memcpy(bomb + n, "ops", 3), n += 3;
  bomb[n++] = 0xdd;
  bomb[n++] = 0xff, bomb[n++] = 0xff, bomb[n++] = 0xff, bomb[n++] = 0xff;
  bomb[n++] = 0xc0;
  cr_assert_neq(decode_bytes(bomb, n), XR_OK);
  cr_assert(strstr(xr_last_error(), "announces 4294967295 entries"), "%s", xr_last_error());
}

Test(bad_input, msgpack_nesting_bomb) {
  /* {"x": [[[[...nil...]]]]}: a map, so it is recognised as MessagePack, then 4000 fixarrays. */
  uint8_t bomb[4096];
  memset(bomb, 0x91, sizeof bomb - 1);
  bomb[0] = 0x81, bomb[1] = 0xa1, bomb[2] = 'x';
  bomb[sizeof bomb - 1] = 0xc0;
  cr_assert_neq(decode_bytes(bomb, sizeof bomb), XR_OK);
  cr_assert(strstr(xr_last_error(), "nested deeper"), "%s", xr_last_error());
}

Test(bad_input, msgpack_with_wrong_types) {
  /* {"format": "xreplay-bundle", "ops": [{"n": 5}]} */
  static const uint8_t wrong[] = {0x82, 0xa6, 'f', 'o', 'r', 'm', 'a', 't', 0xae, 'x', 'r', 'e',
                                  'p', 'l', 'a', 'y', '-', 'b', 'u', 'n', 'd', 'l', 'e', 0xa3,
                                  'o', 'p', 's', 0x91, 0x81, 0xa1, 'n', 0x05};
  cr_assert_neq(decode_bytes(wrong, sizeof wrong), XR_OK);
  cr_assert(strstr(xr_last_error(), "t.msgpack: ops[0].name: expected the op name, got an integer"),
            "%s", xr_last_error());
  static const uint8_t trailing[] = {0x80, 0x00};
  cr_assert_neq(decode_bytes(trailing, sizeof trailing), XR_OK);
  cr_assert(strstr(xr_last_error(), "trailing data"), "%s", xr_last_error());
  static const uint8_t reserved[] = {0xc1};
  cr_assert_neq(decode_bytes(reserved, 1), XR_OK);
}

Test(bad_input, gzip_and_missing_files) {
  static const uint8_t gz[] = {0x1f, 0x8b, 0x08, 0x00};
  cr_assert_neq(decode_bytes(gz, sizeof gz), XR_OK);
  cr_assert(strstr(xr_last_error(), "replay extract"), "%s", xr_last_error());
  xr_bundle_t *b = NULL;
  cr_assert_eq(xr_bundle_load("tests/data/no/such/bundle.json", &b), XR_NOT_FOUND);
  cr_assert(strstr(xr_last_error(), "tests/data/no/such/bundle.json: cannot open"), "%s",
            xr_last_error());
  cr_assert_eq(xr_bundle_load("tests/data", &b), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "not a regular file"), "%s", xr_last_error());
}

Test(bad_input, validation_collects_every_problem) {
  xr_bundle_t *b;
  static const char text[] =
      "[{\"op_name\": \"a\", \"replay_ir\": {\"list_pos_args\": ["
      "{\"arg_name\": \"x\", \"arg_type\": \"Tensor\", \"value\": {\"shape\": [-1], \"dtype\": \"int\"}},"
      "{\"arg_name\": \"y\", \"arg_type\": \"Tensor[]\", \"value\": [{\"shape\": [2], \"strides\": [-3], "
      "\"dtype\": \"int\"}]}], \"list_kwargs\": []}}]";
  xr_load_options_t decode_only = {.validate = false};
  cr_assert_eq(xr_bundle_decode((const uint8_t *)text, sizeof text - 1, "t", ".", &decode_only, &b),
               XR_OK);
  xr_diagnostics_t d;
  cr_assert_eq(xr_bundle_validate(b, true, &d), XR_INVALID_ARGUMENT);
  cr_assert_eq(d.count, 2);
  cr_assert_str_eq(d.messages[0], "ops[0].replay_ir.list_pos_args[0].value.shape[0]: negative dimension -1");
  cr_assert_str_eq(d.messages[1], "ops[0].replay_ir.list_pos_args[1].value[0].strides[0]: negative stride -3");
  cr_assert(strstr(xr_last_error(), "(and 1 more problems)"));
  xr_diagnostics_free(&d);
  xr_bundle_destroy(b);
}
