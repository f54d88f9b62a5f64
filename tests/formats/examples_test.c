/* The shipped examples load, validate, and the .msgpack README runs is the .json it came from. */
#include "tests/formats/test_util.h"

Test(examples, msgpack_matches_its_json_source) {
  xr_bundle_t *json, *mp;
  cr_assert_eq(xr_bundle_load("examples/llm_small.json", &json), XR_OK, "%s", xr_last_error());
  cr_assert_eq(xr_bundle_load("examples/llm_small.msgpack", &mp), XR_OK, "%s", xr_last_error());
  char where[256] = "";
  cr_assert(xr_bundle_equal(json, mp, where, sizeof where),
            "examples/llm_small.msgpack is stale at %s: run replay convert llm_small.json "
            "llm_small.msgpack",
            where);
  cr_assert_eq(xr_bundle_hash(json), xr_bundle_hash(mp), "the same ops from either format");
  /* A GEMM, a dense attention, a paged attention and an MoE op, at least. */
  const char *needed[] = {"aten::mm", "aten::_scaled_dot_product_flash_attention",
                          "_C::paged_attention_v1", "vllm::outplace_fused_experts"};
  for (size_t n = 0; n < 4; n++) {
    bool found = false;
    for (size_t i = 0; i < mp->op_count; i++) found |= strcmp(mp->ops[i].name, needed[n]) == 0;
    cr_assert(found, "examples lack %s", needed[n]);
  }
  xr_bundle_destroy(json);
  xr_bundle_destroy(mp);
}
