/* JSON, MessagePack and TraceLens IR codecs: lossless round trips on real fixtures and on the
 * edges of every value kind. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/formats/test_util.h"
#include "tests/support/golden.h"

static xr_bundle_t *load(const char *path) {
  xr_bundle_t *b = NULL;
  cr_assert_eq(xr_bundle_load(path, &b), XR_OK, "%s", xr_last_error());
  return b;
}

Test(codec, tracelens_fixture_loads_every_entry) {
  xr_bundle_t *b = load(TRACELENS_IR);
  cr_assert_eq(b->source_format, XR_FORMAT_TRACELENS);
  cr_assert_eq(b->op_count, 22);
  const xr_op_t *mm = &b->ops[0];
  cr_assert_str_eq(mm->name, "aten::mm");
  const xr_arg_t *mat2 = xr_op_find_arg(mm, "mat2");
  cr_assert_not_null(mat2);
  cr_assert_eq(mat2->value.kind, XR_VALUE_TENSOR);
  const xr_tensor_spec_t *t = mat2->value.as.tensor;
  cr_assert_eq(t->dtype, XR_DTYPE_BF16);
  cr_assert_eq(t->shape[1], 25136);
  cr_assert_eq(t->strides[0], 1);
  cr_assert_eq(t->strides[1], 2880);
  cr_assert_eq(t->init, XR_INIT_NORMAL);
  cr_assert_not(xr_tensor_is_contiguous(t));
  /* Scalars written as 1.0 stay floats; a null init is an output, not "unset". */
  const xr_arg_t *beta = xr_op_find_arg(&b->ops[1], "beta");
  cr_assert_eq(beta->value.kind, XR_VALUE_FLOAT);
  cr_assert_float_eq(beta->value.as.f, 1.0, 0);
  const xr_arg_t *copy_self = xr_op_find_arg(&b->ops[2], "self");
  cr_assert_str_eq(copy_self->type, "Tensor(a!)");
  cr_assert_eq(copy_self->value.as.tensor->init, XR_INIT_NONE);
  xr_bundle_destroy(b);
}

Test(codec, tracelens_fixture_round_trips_through_both_codecs) {
  xr_bundle_t *b = load(TRACELENS_IR);
  xr_bundle_t *m = msgpack_round_trip(b);
  xr_bundle_t *j = json_round_trip(m, true);
  xr_bundle_t *c = json_round_trip(j, false);
  xr_bundle_destroy(c);
  xr_bundle_destroy(j);
  xr_bundle_destroy(m);
  xr_bundle_destroy(b);
}

Test(codec, tracelens_written_back_is_the_same_json) {
  uint8_t *original;
  size_t size;
  cr_assert_eq(xr_read_file(TRACELENS_IR, &original, &size), XR_OK);
  xr_bundle_t *b = load(TRACELENS_IR);
  char *text;
  size_t n;
  xr_json_options_t o = {.pretty = true, .tracelens = true};
  cr_assert_eq(xr_bundle_encode_json(b, &o, &text, &n), XR_OK, "%s", xr_last_error());
  cJSON *x = cJSON_Parse((const char *)original), *y = cJSON_Parse(text);
  cr_assert(cJSON_Compare(x, y, 1), "TraceLens IR written back differs from the fixture");
  cJSON_Delete(x);
  cJSON_Delete(y);
  free(text);
  free(original);
  xr_bundle_destroy(b);
}

Test(codec, golden_ir_entries_round_trip) {
  cJSON *manifest, *c;
  xr_bundle_t *b = golden_bundle(NULL, &manifest);
  size_t cases = 0;
  cJSON_ArrayForEach(c, manifest) cases += cJSON_GetObjectItem(c, "ir") != NULL;
  cJSON_Delete(manifest);
  cr_assert_eq(b->op_count, cases, "%zu ops from %zu IR entries", b->op_count, cases);
  cr_assert_geq(b->op_count, 76);
  cr_assert_eq(xr_bundle_data_form(b), XR_DATA_FILES);
  xr_bundle_destroy(msgpack_round_trip(b));
  xr_bundle_destroy(json_round_trip(b, true));
  xr_bundle_destroy(b);
}

Test(codec, msgpack_is_at_most_40_percent_of_pretty_json) {
  uint8_t *json;
  size_t json_size;
  cr_assert_eq(xr_read_file(TRACELENS_IR, &json, &json_size), XR_OK);
  free(json);
  xr_bundle_t *b = load(TRACELENS_IR);
  uint8_t *mp;
  size_t mp_size;
  cr_assert_eq(xr_bundle_encode_msgpack(b, &mp, &mp_size), XR_OK);
  double ratio = (double)mp_size / (double)json_size;
  cr_log_info("msgpack %zu bytes / pretty JSON %zu bytes = %.1f%%", mp_size, json_size, 100 * ratio);
  cr_assert_leq(ratio, 0.40, "msgpack is %.1f%% of the JSON", 100 * ratio);
  free(mp);
  xr_bundle_destroy(b);
}

/* Every kind of value, at its edges, survives both codecs bit for bit. */
static const char edge_bundle[] =
    "{\"format\": \"xreplay-bundle\", \"format_version\": 1,"
    " \"metadata\": {\"tool_version\": \"t\", \"device_name\": \"AMD Instinct MI300X\","
    "   \"vendor\": \"AMD\", \"capture_date\": \"2026-11-29\", \"gpu_busy_us\": 12.5},"
    " \"ops\": [{\"name\": \"x::edges\", \"alias\": \"x::old_name\", \"count\": 7,"
    "  \"args\": ["
    "   {\"name\": \"max\", \"type\": \"int\", \"value\": 9223372036854775807},"
    "   {\"name\": \"min\", \"type\": \"int\", \"value\": -9223372036854775808},"
    "   {\"name\": \"big\", \"type\": \"int\", \"value\": 9007199254740993},"
    "   {\"name\": \"one_f\", \"type\": \"float\", \"value\": 1.0},"
    "   {\"name\": \"one_i\", \"type\": \"Scalar\", \"value\": 1},"
    "   {\"name\": \"nan\", \"type\": \"float\", \"value\": NaN},"
    "   {\"name\": \"inf\", \"type\": \"float\", \"value\": Infinity},"
    "   {\"name\": \"ninf\", \"type\": \"float\", \"value\": -Infinity},"
    "   {\"name\": \"negzero\", \"type\": \"float\", \"value\": -0.0},"
    "   {\"name\": \"tenth\", \"type\": \"float\", \"value\": 0.1},"
    "   {\"name\": \"tiny\", \"type\": \"float\", \"value\": 4.9406564584124654e-324},"
    "   {\"name\": \"huge\", \"type\": \"float\", \"value\": -3.3895313892515355e+38},"
    "   {\"name\": \"s\", \"type\": \"str\", \"value\": \"auto \\\"q\\\" \\\\ \\n\\u0001 \\u00e9\"},"
    "   {\"name\": \"flags\", \"type\": \"bool[3]\", \"value\": [true, false, true]},"
    "   {\"name\": \"none\", \"type\": \"Tensor?\", \"value\": null},"
    "   {\"name\": \"nested\", \"type\": \"int[][]\", \"value\": [[1, 2], [], [[3]]]},"
    "   {\"name\": \"tensors\", \"type\": \"Tensor[]\", \"value\": ["
    "      {\"shape\": [2, 3], \"dtype\": \"half\"},"
    "      {\"shape\": [], \"dtype\": \"c10::Float8_e4m3fnuz\", \"init\": \"ones\"},"
    "      {\"shape\": [4, 0, 2], \"dtype\": \"long\", \"init\": \"zeros\"}]},"
    "   {\"name\": \"view\", \"type\": \"Tensor\", \"value\": {\"shape\": [3, 2],"
    "      \"strides\": [1, 4], \"storage_offset\": 5, \"storage_size\": 16, \"dtype\": \"bool\","
    "      \"init\": \"uniform\", \"data_base64\": \"AAEAAQABAAEAAQABAAEAAQ==\"}}"
    "  ],"
    "  \"kwargs\": [{\"name\": \"kv_cache_dtype\", \"type\": \"str\", \"value\": \"auto\","
    "               \"defaulted\": true}],"
    "  \"timing\": {\"gpu_time_us\": 123.25, \"device\": \"MI300X\","
    "             \"kernels\": [{\"name\": \"Cijk_Alik\", \"duration_us\": 100.5, \"count\": 3}]},"
    "  \"hints\": {\"prefill_tokens\": 128, \"decode_seqs\": [1, 2]}}]}";

static const xr_value_t *value_of(const xr_op_t *op, const char *name) {
  const xr_arg_t *a = xr_op_find_arg(op, name);
  cr_assert_not_null(a, "argument %s", name);
  return &a->value;
}

static void check_edges(const xr_bundle_t *b) {
  const xr_op_t *op = &b->ops[0];
  cr_assert_eq(value_of(op, "max")->as.i, INT64_MAX);
  cr_assert_eq(value_of(op, "min")->as.i, INT64_MIN);
  cr_assert_eq(value_of(op, "big")->as.i, 9007199254740993LL); /* 2^53 + 1: no double rounding */
  cr_assert_eq(value_of(op, "one_f")->kind, XR_VALUE_FLOAT);
  cr_assert_eq(value_of(op, "one_i")->kind, XR_VALUE_INT);
  cr_assert(isnan(value_of(op, "nan")->as.f));
  cr_assert(isinf(value_of(op, "inf")->as.f) && value_of(op, "inf")->as.f > 0);
  cr_assert(isinf(value_of(op, "ninf")->as.f) && value_of(op, "ninf")->as.f < 0);
  cr_assert(signbit(value_of(op, "negzero")->as.f));
  cr_assert_eq(value_of(op, "tenth")->as.f, 0.1);
  cr_assert_eq(value_of(op, "tiny")->as.f, 4.9406564584124654e-324);
  cr_assert_str_eq(value_of(op, "s")->as.s, "auto \"q\" \\ \n\x01 \xc3\xa9");
  cr_assert_eq(value_of(op, "nested")->as.list.items[2].as.list.items[0].as.list.items[0].as.i, 3);
  const xr_value_t *tl = value_of(op, "tensors");
  cr_assert_eq(tl->as.list.count, 3);
  cr_assert_eq(tl->as.list.items[0].as.tensor->strides[0], 3); /* contiguous when absent */
  cr_assert_eq(tl->as.list.items[1].as.tensor->rank, 0);
  const xr_tensor_spec_t *view = value_of(op, "view")->as.tensor;
  cr_assert_eq(view->storage_offset, 5);
  cr_assert_eq(view->data_size, 16);
  cr_assert_eq(view->data[1], 1);
  cr_assert(xr_op_find_arg(op, "kv_cache_dtype")->defaulted);
  cr_assert_str_eq(op->alias, "x::old_name");
  cr_assert_eq(op->timing->kernel_count, 1);
  cr_assert_eq(op->hint_count, 2);
  cr_assert_eq(b->meta.extra_count, 1);
}

Test(codec, every_value_kind_survives_both_codecs) {
  xr_bundle_t *b;
  cr_assert_eq(decode_string(edge_bundle, &b), XR_OK, "%s", xr_last_error());
  check_edges(b);
  xr_bundle_t *m = msgpack_round_trip(b);
  check_edges(m);
  xr_bundle_t *j = json_round_trip(m, true);
  check_edges(j);
  xr_bundle_destroy(j);
  xr_bundle_destroy(m);
  xr_bundle_destroy(b);
}

Test(codec, integers_outside_64_bits_are_refused) {
  assert_decode_error(
      "[{\"op_name\": \"a\", \"replay_ir\": {\"list_pos_args\": [{\"arg_name\": \"n\", "
      "\"arg_type\": \"int\", \"value\": 9223372036854775808}], \"list_kwargs\": []}}]",
      "ops[0].replay_ir.list_pos_args[0].value: integer 9223372036854775808 outside the 64-bit");
}

Test(codec, single_tracelens_entry_is_a_bundle) {
  xr_bundle_t *b;
  cr_assert_eq(decode_string("{\"op_name\": \"aten::silu\", \"replay_ir\": {\"list_pos_args\": "
                             "[{\"arg_name\": \"self\", \"arg_type\": \"Tensor\", \"value\": "
                             "{\"shape\": [4], \"dtype\": \"float\"}}], \"list_kwargs\": []}}",
                             &b),
               XR_OK, "%s", xr_last_error());
  cr_assert_eq(b->op_count, 1);
  cr_assert_str_eq(b->ops[0].name, "aten::silu");
  xr_bundle_destroy(b);
}

Test(codec, dtype_spellings) {
  static const struct {
    const char *s;
    xr_dtype_t d;
  } cases[] = {
      {"float", XR_DTYPE_F32},           {"double", XR_DTYPE_F64},
      {"c10::Half", XR_DTYPE_F16},       {"c10::BFloat16", XR_DTYPE_BF16},
      {"c10::Float8_e4m3fn", XR_DTYPE_F8E4M3FN}, {"c10::Float8_e5m2", XR_DTYPE_F8E5M2},
      {"c10::Float8_e4m3fnuz", XR_DTYPE_F8E4M3FNUZ}, {"c10::Float8_e5m2fnuz", XR_DTYPE_F8E5M2FNUZ},
      {"int", XR_DTYPE_I32},             {"long int", XR_DTYPE_I64},
      {"short int", XR_DTYPE_I16},       {"signed char", XR_DTYPE_I8},
      {"unsigned char", XR_DTYPE_U8},    {"unsigned int", XR_DTYPE_U32},
      {"bool", XR_DTYPE_BOOL},           {"long", XR_DTYPE_I64},
      {"half", XR_DTYPE_F16},            {"bfloat16", XR_DTYPE_BF16},
      {"torch.float16", XR_DTYPE_F16},   {"Half", XR_DTYPE_F16},
      {"float8_e4m3fn", XR_DTYPE_F8E4M3FN}, {"int64", XR_DTYPE_I64},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cr_assert_eq(xr_dtype_parse(cases[i].s), cases[i].d, "%s", cases[i].s);
    /* The written spelling reads back as the same dtype. */
    cr_assert_eq(xr_dtype_parse(xr_dtype_name(cases[i].d)), cases[i].d);
  }
  cr_assert_eq(xr_dtype_parse("c10::Float4"), XR_DTYPE_INVALID);
  cr_assert_eq(xr_dtype_parse(""), XR_DTYPE_INVALID);
  cr_assert_eq(xr_dtype_size(XR_DTYPE_BF16), 2);
  cr_assert_eq(xr_dtype_size(XR_DTYPE_F8E5M2FNUZ), 1);
}

Test(codec, format_detection) {
  cr_assert_eq(xr_bundle_detect_format((const uint8_t *)"  {\"ops\": []}", 13), XR_FORMAT_JSON);
  cr_assert_eq(xr_bundle_detect_format((const uint8_t *)"\n[]", 3), XR_FORMAT_TRACELENS);
  cr_assert_eq(xr_bundle_detect_format((const uint8_t *)"\x84", 1), XR_FORMAT_MSGPACK);
  cr_assert_eq(xr_bundle_detect_format((const uint8_t *)"\x1f\x8b", 2), XR_FORMAT_UNKNOWN);
  cr_assert_eq(xr_bundle_format_from_path("a/b.msgpack"), XR_FORMAT_MSGPACK);
  cr_assert_eq(xr_bundle_format_from_path("b.json"), XR_FORMAT_JSON);
  cr_assert_eq(xr_bundle_format_from_path("b.txt"), XR_FORMAT_UNKNOWN);
}

Test(codec, describe_values_for_tables) {
  xr_bundle_t *b = load(TRACELENS_IR);
  char text[128];
  xr_value_describe(&xr_op_find_arg(&b->ops[0], "mat2")->value, text, sizeof text);
  cr_assert_str_eq(text, "bf16[2880,25136]{1,2880}");
  xr_value_describe(&xr_op_find_arg(&b->ops[1], "beta")->value, text, sizeof text);
  cr_assert_str_eq(text, "1.0");
  xr_value_describe(&xr_op_find_arg(&b->ops[0], "mat2")->value, text, 8);
  cr_assert_str_eq(text, "bf16...");
  xr_op_describe_args(&b->ops[1], false, text, sizeof text);
  cr_assert_str_eq(text, "self=bf16[640] mat1=bf16[888,2880] mat2=bf16[2880,640]{1,2880} beta=1.0 "
                         "alpha=1.0");
  xr_op_describe_args(&b->ops[1], true, text, sizeof text);
  cr_assert_str_eq(text, "bf16[640] bf16[888,2880] bf16[2880,640]{1,2880}");
  xr_op_describe_args(&b->ops[1], true, text, 12);
  cr_assert_str_eq(text, "bf16[640...");
  xr_bundle_destroy(b);
}
