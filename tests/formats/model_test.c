/* The op model on its own (//formats:model, no codec linked): ops built in C, their
 * descriptions, and tensor contents read through the bundle's reader. */
#include "formats/model.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

Test(model, builders_make_the_op_a_trace_would_record) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_create(&b), XR_OK);
  xr_op_t *op = xr_bundle_add_op(b, "aten::addmm");
  cr_assert_not_null(op);
  xr_tensor_spec_t *bias = xr_op_add_tensor(b->arena, op, "self", XR_DTYPE_BF16, 1,
                                            (int64_t[]){256}, NULL);
  cr_assert_not_null(bias);
  xr_tensor_spec_t *x = xr_op_add_tensor(b->arena, op, "mat1", XR_DTYPE_BF16, 2,
                                         (int64_t[]){16, 512}, NULL);
  /* A transposed weight: the view of a [256, 512] row-major storage. */
  xr_tensor_spec_t *w = xr_op_add_tensor(b->arena, op, "mat2", XR_DTYPE_BF16, 2,
                                         (int64_t[]){512, 256}, (int64_t[]){1, 512});
  cr_assert(x && w);
  cr_assert_eq(xr_op_add_float(b->arena, op, "beta", 1.0), XR_OK);
  cr_assert_eq(xr_op_add_int(b->arena, op, "alpha", 2), XR_OK);
  cr_assert_eq(xr_op_add_bool(b->arena, op, "flag", true), XR_OK);
  cr_assert_eq(xr_op_add_string(b->arena, op, "mode", "auto"), XR_OK);
  cr_assert_eq(xr_op_add_int_list(b->arena, op, "dims", (int64_t[]){1, -1}, 2), XR_OK);
  cr_assert_eq(op->arg_count, 8);
  /* Specs returned earlier stay valid after the argument array grew. */
  cr_assert_eq(op->args[0].value.as.tensor, bias);
  cr_assert_eq(x->strides[0], 512);
  char text[256];
  xr_op_describe_args(op, false, text, sizeof text);
  cr_assert_str_eq(text, "self=bf16[256] mat1=bf16[16,512] mat2=bf16[512,256]{1,512} beta=1.0 "
                         "alpha=2 flag=True mode='auto' dims=[1, -1]");
  xr_op_describe_args(op, true, text, 20);
  cr_assert_str_eq(text, "bf16[256] bf16[1...");
  cr_assert_eq(xr_op_find_arg(op, "mat2")->value.as.tensor, w);
  xr_bundle_destroy(b);
}

Test(model, a_rank_past_the_limit_is_refused_with_a_sentence) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_create(&b), XR_OK);
  xr_op_t *op = xr_bundle_add_op(b, "aten::mm");
  int64_t shape[XR_MAX_RANK + 1] = {0};
  cr_assert_null(xr_op_add_tensor(b->arena, op, "self", XR_DTYPE_F32, XR_MAX_RANK + 1, shape,
                                  NULL));
  cr_assert_str_eq(xr_last_error(), "rank 17 outside [0, 16]");
  cr_assert_eq(op->arg_count, 0);
  xr_bundle_destroy(b);
}

static int reads;
static xr_status_t read_fives(const xr_bundle_t *bundle, const xr_tensor_spec_t *t,
                              uint8_t **out_bytes, size_t *out_size) {
  (void)bundle;
  reads++;
  size_t n;
  xr_tensor_storage_bytes(t, &n);
  *out_bytes = malloc(n);
  memset(*out_bytes, 5, n);
  *out_size = n;
  return XR_OK;
}

Test(model, contents_come_embedded_or_through_the_bundles_reader) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_create(&b), XR_OK);
  xr_op_t *op = xr_bundle_add_op(b, "aten::relu");
  xr_tensor_spec_t *t = xr_op_add_tensor(b->arena, op, "self", XR_DTYPE_U8, 1, (int64_t[]){3},
                                         NULL);
  uint8_t *bytes;
  size_t size;
  cr_assert_eq(xr_tensor_read_data(b, t, &bytes, &size), XR_NOT_FOUND);
  cr_assert_str_eq(xr_last_error(), "tensor has no real contents");
  t->data_file = xr_arena_strdup(b->arena, "x.npy");
  cr_assert_eq(xr_tensor_read_data(b, t, &bytes, &size), XR_NOT_FOUND);
  cr_assert(strstr(xr_last_error(), "x.npy: no reader for data files"), "%s", xr_last_error());
  cr_assert_eq(xr_bundle_data_form(b), XR_DATA_FILES);
  b->read_data_file = read_fives;
  cr_assert_eq(xr_tensor_read_data(b, t, &bytes, &size), XR_OK);
  cr_assert_eq(reads, 1);
  cr_assert(size == 3 && bytes[0] == 5 && bytes[2] == 5);
  free(bytes);
  static uint8_t embedded[3] = {7, 8, 9};
  t->data_file = NULL;
  t->data = embedded;
  t->data_size = 2; /* shorter than the view */
  cr_assert_eq(xr_tensor_read_data(b, t, &bytes, &size), XR_DATA_LOSS);
  t->data_size = 3;
  cr_assert_eq(xr_tensor_read_data(b, t, &bytes, &size), XR_OK);
  cr_assert(size == 3 && bytes[1] == 8 && bytes != embedded);
  free(bytes);
  size_t stripped = 0;
  xr_bundle_strip_data(b, &stripped);
  cr_assert(stripped == 1 && xr_bundle_data_form(b) == XR_DATA_NONE);
  xr_bundle_destroy(b);
}

Test(model, arena_strings_and_the_dtype_table) {
  xr_arena_t *a;
  cr_assert_eq(xr_arena_create(&a), XR_OK);
  cr_assert_null(xr_arena_strdup(a, NULL));
  cr_assert_str_eq(xr_arena_strndup(a, "c10::BFloat16", 5), "c10::");
  char *big = xr_arena_alloc(a, 1 << 20); /* larger than a chunk: a chunk of its own */
  cr_assert(big && big[0] == 0 && big[(1 << 20) - 1] == 0);
  xr_arena_destroy(a);
  cr_assert_eq(xr_dtype_parse("c10::BFloat16"), XR_DTYPE_BF16);
  cr_assert_eq(xr_dtype_parse("BFloat16"), XR_DTYPE_BF16);
  cr_assert_eq(xr_dtype_parse("torch.float16"), XR_DTYPE_F16);
  cr_assert_eq(xr_dtype_parse("u32"), XR_DTYPE_U32);
  cr_assert_eq(xr_dtype_parse("complex64"), XR_DTYPE_INVALID);
  cr_assert_eq(xr_dtype_from_torch_code(15), XR_DTYPE_BF16);
  cr_assert_eq(xr_dtype_from_torch_code(26), XR_DTYPE_F8E4M3FNUZ);
  cr_assert_eq(xr_dtype_from_torch_code(9), XR_DTYPE_INVALID); /* ComplexFloat */
  for (int d = 1; d < XR_DTYPE_COUNT; d++) {
    cr_assert_eq(xr_dtype_parse(xr_dtype_name((xr_dtype_t)d)), d, "%s", xr_dtype_name(d));
    cr_assert_eq(xr_dtype_parse(xr_dtype_short_name((xr_dtype_t)d)), d);
    cr_assert_eq(xr_dtype_from_torch_code(xr_dtype_torch_code((xr_dtype_t)d)), d);
    cr_assert_gt(xr_dtype_size((xr_dtype_t)d), 0);
  }
  cr_assert(xr_dtype_is_fp8(XR_DTYPE_F8E5M2) && !xr_dtype_is_fp8(XR_DTYPE_BF16));
  cr_assert(xr_dtype_is_floating(XR_DTYPE_F8E5M2) && !xr_dtype_is_floating(XR_DTYPE_I8));
}

/* A small bundle of one GEMM, built the same way each time. */
static xr_bundle_t *one_mm(double beta, int64_t rows) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_create(&b), XR_OK);
  xr_op_t *op = xr_bundle_add_op(b, "aten::addmm");
  cr_assert_not_null(
      xr_op_add_tensor(b->arena, op, "mat1", XR_DTYPE_BF16, 2, (int64_t[]){rows, 64}, NULL));
  cr_assert_not_null(
      xr_op_add_tensor(b->arena, op, "mat2", XR_DTYPE_BF16, 2, (int64_t[]){64, 32}, NULL));
  cr_assert_eq(xr_op_add_float(b->arena, op, "beta", beta), XR_OK);
  return b;
}

Test(model, the_bundle_hash_is_fnv1a_over_the_ops) {
  /* No ops: FNV-1a 64 of the op count, 8 zero bytes, worked out here. */
  xr_bundle_t *empty;
  cr_assert_eq(xr_bundle_create(&empty), XR_OK);
  uint64_t h = 0xcbf29ce484222325ull;
  for (int i = 0; i < 8; i++) h = (h ^ 0) * 0x100000001b3ull;
  cr_assert_eq(xr_bundle_hash(empty), h, "%016llx, not %016llx",
               (unsigned long long)xr_bundle_hash(empty), (unsigned long long)h);
  xr_bundle_destroy(empty);

  xr_bundle_t *a = one_mm(1.0, 16), *same = one_mm(1.0, 16);
  uint64_t ha = xr_bundle_hash(a);
  cr_assert_eq(ha, xr_bundle_hash(same), "the same ops hash alike");
  cr_assert_eq(ha, xr_bundle_hash(a), "twice alike");
  /* Metadata is not part of it. */
  a->meta.source_trace = xr_arena_strdup(a->arena, "trace.json.gz");
  cr_assert_eq(xr_bundle_hash(a), ha);
  /* Everything of an op is. */
  xr_bundle_t *other_shape = one_mm(1.0, 17), *other_beta = one_mm(0.5, 16);
  cr_assert_neq(xr_bundle_hash(other_shape), ha);
  cr_assert_neq(xr_bundle_hash(other_beta), ha);
  same->ops[0].count = 3;
  cr_assert_neq(xr_bundle_hash(same), ha, "the count");
  same->ops[0].count = 0;
  cr_assert_eq(xr_bundle_hash(same), ha);
  same->ops[0].args[0].value.as.tensor->dtype = XR_DTYPE_F16;
  cr_assert_neq(xr_bundle_hash(same), ha, "the dtype");
  same->ops[0].args[0].value.as.tensor->dtype = XR_DTYPE_BF16;
  xr_op_timing_t timing = {.gpu_time_us = 12.5};
  same->ops[0].timing = &timing;
  uint64_t timed = xr_bundle_hash(same);
  cr_assert_neq(timed, ha, "the recorded time weighs the op when sharding");
  timing.gpu_time_us = 12.75;
  cr_assert_neq(xr_bundle_hash(same), timed);
  same->ops[0].timing = NULL;
  /* Every NaN alike; -0.0 is not 0.0 (as xr_bundle_equal tells them apart). */
  xr_bundle_t *nan1 = one_mm(NAN, 16), *nan2 = one_mm(-NAN, 16), *zero = one_mm(0.0, 16),
              *minus_zero = one_mm(-0.0, 16);
  cr_assert_eq(xr_bundle_hash(nan1), xr_bundle_hash(nan2));
  cr_assert_neq(xr_bundle_hash(zero), xr_bundle_hash(minus_zero));
  xr_bundle_t *list[] = {a, same, other_shape, other_beta, nan1, nan2, zero, minus_zero};
  for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) xr_bundle_destroy(list[i]);
}
