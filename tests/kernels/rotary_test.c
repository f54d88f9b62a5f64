/* Rotary embedding (_C::rotary_embedding, sgl_kernel::rotary_embedding): NeoX and GPT-J
 * styles, full and partial rotary, num_kv_heads != num_heads, query/key as [T, H*D] and
 * [T, H, D], [B, S] positions, no key, strided views into a fused qkv buffer, a cache of another
 * dtype, positions past the cache, rope_dim_offset and inverse, sgl-kernel's op as traced;
 * fp32, fp16 and bf16: the cases of rotary_cases.h, which the rotary_matrix_* targets run on
 * every driver (the engine fills positions with small integers, 0..15). Here: the plan's counts
 * and its errors. */
#include "formats/bundle.h"
#include "kernels/kernels.h"
#include "tests/kernels/rotary_cases.h"

static void expect_plan_error(const rope_t *c, const char *needle) {
  const char *json = rope_json(c);
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK,
               "%s", xr_last_error());
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_INVALID_ARGUMENT, "%s", json);
  cr_assert(strstr(xr_last_error(), needle), "error \"%s\" lacks \"%s\"", xr_last_error(), needle);
  xr_bundle_destroy(b);
}

Test(rotary, plan_counts_rotated_elements_and_rejects_bad_layouts) {
  rope_t c = {.dtype = "c10::BFloat16", .tokens = 9, .heads = 8, .kv_heads = 2, .head_size = 128,
              .rot_dim = 64, .max_position = 128, .neox = true};
  const char *json = rope_json(&c);
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK);
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan.return_count, 0, "in place: query and key are the outputs");
  cr_assert(plan.input_written[1] && plan.input_written[2]);
  /* 9 tokens x 10 heads x 64 rotated elements, read and written in bf16, plus per token one
   * 64-element bf16 cache row and an int64 position. */
  cr_assert_float_eq(plan.bytes, 2.0 * 9 * 10 * 64 * 2 + 9 * (64 * 2 + 8), 1e-9);
  cr_assert_float_eq(plan.flops, 3.0 * 9 * 10 * 64, 1e-9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);

  /* sgl-kernel's op as traced: argument types are dtypes, without the "!"; the family marks
   * query and key written all the same. */
  rope_t sgl = c;
  sgl.sgl = true;
  json = rope_json(&sgl);
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK,
               "%s", xr_last_error());
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_OK, "%s", xr_last_error());
  cr_assert(!plan.input_written[0] && plan.input_written[1] && plan.input_written[2] &&
            !plan.input_written[3]);
  cr_assert_float_eq(plan.bytes, 2.0 * 9 * 10 * 64 * 2 + 9 * (64 * 2 + 8), 1e-9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);

  rope_t bad_heads = c;
  bad_heads.kv_heads = 3;
  expect_plan_error(&bad_heads, "key");
  rope_t bad_rot = c;
  bad_rot.rot_dim = 130;
  expect_plan_error(&bad_rot, "cos_sin_cache");
}
