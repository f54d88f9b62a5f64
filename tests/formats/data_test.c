/* Real tensor contents: .npy files (golden conventions), embedding and stripping. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/formats/test_util.h"
#include "tests/support/golden.h"

/* The golden bundle, optionally checking every .npy file against its spec while loading. */
static xr_bundle_t *load_golden(bool check_files) {
  xr_load_options_t o = {.validate = true, .check_data_files = check_files};
  return golden_bundle(&o, NULL);
}

static const xr_tensor_spec_t *tensor_arg(const xr_bundle_t *b, const char *op, const char *arg) {
  for (size_t i = 0; i < b->op_count; i++) {
    if (strcmp(b->ops[i].name, op) != 0) continue;
    const xr_arg_t *a = xr_op_find_arg(&b->ops[i], arg);
    if (a && a->value.kind == XR_VALUE_TENSOR) return a->value.as.tensor;
  }
  cr_assert_fail("no tensor %s of %s", arg, op);
  return NULL;
}

Test(data, every_golden_npy_file_agrees_with_its_spec) {
  xr_bundle_t *b = load_golden(true);
  xr_diagnostics_t d;
  cr_assert_eq(xr_bundle_validate(b, true, &d), XR_OK, "%s", xr_last_error());
  xr_diagnostics_free(&d);
  xr_bundle_destroy(b);
}

Test(data, strided_tensor_reads_its_one_dimensional_storage) {
  xr_bundle_t *b = load_golden(false);
  /* addmm_f32_tB: mat2 [K, N] with strides [1, K], saved as the 1-D storage. */
  const xr_tensor_spec_t *mat2 = tensor_arg(b, "aten::addmm", "mat2");
  cr_assert_not(xr_tensor_is_contiguous(mat2));
  uint8_t *bytes;
  size_t n, expected;
  cr_assert_eq(xr_tensor_read_data(b, mat2, &bytes, &n), XR_OK, "%s", xr_last_error());
  cr_assert_eq(xr_tensor_storage_bytes(mat2, &expected), XR_OK);
  cr_assert_eq(n, expected);
  free(bytes);
  xr_bundle_destroy(b);
}

Test(data, embed_then_msgpack_keeps_every_byte) {
  xr_bundle_t *b = load_golden(false);
  const xr_tensor_spec_t *self = tensor_arg(b, "aten::mm", "self");
  uint8_t *before;
  size_t before_n;
  cr_assert_eq(xr_tensor_read_data(b, self, &before, &before_n), XR_OK);

  size_t embedded = 0;
  cr_assert_eq(xr_bundle_embed_data(b, &embedded), XR_OK, "%s", xr_last_error());
  cr_assert_gt(embedded, 100);
  cr_assert_eq(xr_bundle_data_form(b), XR_DATA_EMBEDDED);
  xr_bundle_t *back = msgpack_round_trip(b); /* asserts byte equality of every tensor */
  const xr_tensor_spec_t *t = tensor_arg(back, "aten::mm", "self");
  cr_assert_null(t->data_file);
  cr_assert_eq(t->data_size, before_n);
  cr_assert_arr_eq(t->data, before, before_n);
  xr_bundle_t *json = json_round_trip(back, false); /* base64 in our JSON */
  xr_bundle_destroy(json);

  size_t stripped = 0;
  xr_bundle_strip_data(back, &stripped);
  cr_assert_eq(stripped, embedded);
  cr_assert_eq(xr_bundle_data_form(back), XR_DATA_NONE);
  free(before);
  xr_bundle_destroy(back);
  xr_bundle_destroy(b);
}

Test(data, tracelens_output_refuses_embedded_contents) {
  xr_bundle_t *b = load_golden(false);
  cr_assert_eq(xr_bundle_embed_data(b, NULL), XR_OK);
  char *text;
  size_t n;
  xr_json_options_t o = {.tracelens = true};
  cr_assert_eq(xr_bundle_encode_json(b, &o, &text, &n), XR_UNIMPLEMENTED);
  cr_assert(strstr(xr_last_error(), "--strip-data"), "%s", xr_last_error());
  xr_bundle_destroy(b);
}

/* Writes an .npy file with the given header dict and `payload` bytes of zeros. */
static void write_npy(const char *path, const char *dict, size_t payload) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "%s", path);
  char header[128];
  int n = snprintf(header, sizeof header, "%s", dict);
  while ((10 + n + 1) % 64) header[n++] = ' ';
  header[n++] = '\n';
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  fputc(n & 0xff, f);
  fputc(n >> 8, f);
  fwrite(header, 1, (size_t)n, f);
  for (size_t i = 0; i < payload; i++) fputc(0, f);
  fclose(f);
}

static xr_status_t load_with_npy(const char *dir, const char *dtype, const char *shape,
                                 const char *strides) {
  char text[1024], path[1024];
  snprintf(text, sizeof text,
           "[{\"op_name\": \"aten::silu\", \"replay_ir\": {\"list_pos_args\": [{\"arg_name\": "
           "\"self\", \"arg_type\": \"Tensor\", \"value\": {\"shape\": %s, \"strides\": %s, "
           "\"dtype\": \"%s\", \"data\": \"x.npy\"}}], \"list_kwargs\": []}}]",
           shape, strides, dtype);
  snprintf(path, sizeof path, "%s/b.json", dir);
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
  xr_load_options_t o = {.validate = true, .check_data_files = true};
  xr_bundle_t *b = NULL;
  xr_status_t st = xr_bundle_load_with(path, &o, &b);
  xr_bundle_destroy(b);
  return st;
}

Test(data, npy_files_that_disagree_with_the_spec) {
  const char *tmp = getenv("TEST_TMPDIR");
  char dir[512], npy[600];
  snprintf(dir, sizeof dir, "%s", tmp ? tmp : "/tmp");
  snprintf(npy, sizeof npy, "%s/x.npy", dir);

  write_npy(npy, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }", 128);
  cr_assert_eq(load_with_npy(dir, "float", "[4, 8]", "[8, 1]"), XR_OK, "%s", xr_last_error());
  cr_assert_eq(load_with_npy(dir, "float", "[8, 4]", "[4, 1]"), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(),
                   "ops[0].replay_ir.list_pos_args[0].value.data: ") &&
                strstr(xr_last_error(), "x.npy: shape (4, 8) does not match the tensor's shape [8, 4]"),
            "%s", xr_last_error());
  cr_assert_eq(load_with_npy(dir, "c10::Half", "[4, 8]", "[8, 1]"), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "dtype '<f4' does not match the tensor's c10::Half"), "%s",
            xr_last_error());

  /* A transposed view needs its 1-D storage: 32 elements, not a [8, 4] array. */
  write_npy(npy, "{'descr': '<u2', 'fortran_order': False, 'shape': (32,), }", 64);
  cr_assert_eq(load_with_npy(dir, "c10::BFloat16", "[4, 8]", "[1, 4]"), XR_OK, "%s",
               xr_last_error());

  write_npy(npy, "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }", 100);
  cr_assert_eq(load_with_npy(dir, "float", "[4, 8]", "[8, 1]"), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "truncated"), "%s", xr_last_error());

  write_npy(npy, "{'descr': '<f4', 'fortran_order': True, 'shape': (4, 8), }", 128);
  cr_assert_eq(load_with_npy(dir, "float", "[4, 8]", "[8, 1]"), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "Fortran-order"), "%s", xr_last_error());

  FILE *f = fopen(npy, "w");
  fputs("not numpy", f);
  fclose(f);
  cr_assert_eq(load_with_npy(dir, "float", "[4, 8]", "[8, 1]"), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "not an .npy file"), "%s", xr_last_error());

  remove(npy);
  cr_assert_eq(load_with_npy(dir, "float", "[4, 8]", "[8, 1]"), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "x.npy: cannot open: No such file"), "%s", xr_last_error());
}

/* Microscaling parts have no numpy dtype: their .npy files hold raw bytes (|u1), as the golden
 * mxfp4 weight does, and read as f4e2m1x2 / f8e8m0 tensors. */
Test(data, mx_parts_read_from_u1_npy_files) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_create(&b), XR_OK);
  b->base_dir = xr_arena_strdup(b->arena, GOLDEN_DIR);
  b->read_data_file = xr_npy_read_data_file;
  xr_op_t *op = xr_bundle_add_op(b, "vllm::moe_forward");
  xr_tensor_spec_t *w = xr_op_add_tensor(b->arena, op, "w1", XR_DTYPE_F4E2M1X2, 2, (int64_t[]){24, 64}, NULL);
  xr_tensor_spec_t *s = xr_op_add_tensor(b->arena, op, "w1_scale", XR_DTYPE_F8E8M0, 2, (int64_t[]){24, 4}, NULL);
  w->data_file = xr_arena_strdup(b->arena, "mx_gemm_mxfp4_M16_N24_K128__b_packed.npy");
  s->data_file = xr_arena_strdup(b->arena, "mx_gemm_mxfp4_M16_N24_K128__b_scales.npy");
  uint8_t *bytes;
  size_t n;
  cr_assert_eq(xr_tensor_read_data(b, w, &bytes, &n), XR_OK, "%s", xr_last_error());
  cr_assert_eq(n, 24 * 64);
  free(bytes);
  cr_assert_eq(xr_tensor_read_data(b, s, &bytes, &n), XR_OK, "%s", xr_last_error());
  cr_assert_eq(n, 24 * 4);
  free(bytes);
  s->shape[1] = 8; /* the wrong shape is still an error naming the file */
  cr_assert_neq(xr_tensor_read_data(b, s, &bytes, &n), XR_OK);
  cr_assert(strstr(xr_last_error(), "b_scales.npy"), "%s", xr_last_error());
  xr_bundle_destroy(b);
}
