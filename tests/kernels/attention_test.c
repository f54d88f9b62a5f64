/* Dense and variable-length attention: the cases of attention_cases.h (SDPA's three ops, the
 * flash forward dense and packed with cum_seq_q/k and seqused_k, AITER's varlen and
 * batch-prefill forwards; causal and not, Sq != Sk, GQA and MQA, odd sizes 1, 3, 17, 129,
 * strided and offset views, masks, windows, softcap, ALiBi; unused packed key rows NaN, so a
 * kernel reading past a sequence fails) run on every driver by the attention_matrix_* targets,
 * each against the CPU reference through the replay engine. Here: the cpu kernel's tile edges
 * and planning errors. */
#include <criterion/criterion.h>

#include "formats/bundle.h"
#include "kernels/kernels.h"
#include "tests/kernels/attention_cases.h"

/* The cpu kernel transposes key rows 16 dims at a time: head dims off that width, keys past a
 * 64-key tile. */
Test(attention_cpu, head_dims_off_the_vector_width) {
  static const sdpa_case_t cases[] = {
      {"bf16 causal bshd gqa d40", FLASH, "c10::BFloat16", 1, 4, 2, 70, 70, 40, 40, true, 0, true, 0, 0},
      {"f32 d8 sq3 sk129", FLASH, "float", 2, 2, 2, 3, 129, 8, 8, false, 0, false, 0, 0},
      {"f16 d24 dv40 bool mask bshd", SDPA, "c10::Half", 1, 3, 3, 17, 81, 24, 40, false, 0, true, 3, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    jbuf_t b;
    expect_match(cases[i].what, sdpa_json(&b, &cases[i]), "cpu", "cpu.flash_attention", 41 + i, NULL);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* planning                                                                                    */

static xr_status_t plan_json(const char *json, xr_op_plan_t *plan, xr_bundle_t **out) {
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, out), XR_OK, "%s",
               xr_last_error());
  return xr_kernel_plan(&(*out)->ops[0], plan);
}

Test(attention_plan, returns_and_costs) {
  jbuf_t b;
  sdpa_case_t c = {"", EFFICIENT, "c10::Half", 2, 4, 2, 17, 40, 64, 32, true, 0, false, 0, 0};
  xr_op_plan_t plan;
  xr_bundle_t *bundle;
  cr_assert_eq(plan_json(sdpa_json(&b, &c), &plan, &bundle), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan.return_count, 4); /* output, log_sumexp, philox seed and offset */
  cr_assert_eq(plan.returns[0].shape[3], 32);
  cr_assert_eq(plan.returns[1].dtype, XR_DTYPE_F32);
  cr_assert_eq(plan.returns[1].shape[2], 32, "logsumexp rows padded to a multiple of 32");
  cr_assert_eq(plan.returns[2].rank, 0);
  /* causal top-left 17 x 40: sum over i of (i + 1) keys, per batch and head */
  cr_assert_float_eq(plan.flops, 2.0 * (17 * 18 / 2) * 2 * 4 * (64 + 32), 1e-6);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(bundle);
}

Test(attention_plan, errors_name_the_argument) {
  jbuf_t b;
  xr_op_plan_t plan;
  xr_bundle_t *bundle;
  sdpa_case_t gqa = {"", FLASH, "float", 1, 6, 4, 3, 3, 64, 64, false, 0, false, 0, 0};
  cr_assert_eq(plan_json(sdpa_json(&b, &gqa), &plan, &bundle), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "heads"), "%s", xr_last_error());
  xr_bundle_destroy(bundle);
  sdpa_case_t mask = {"", SDPA, "float", 1, 2, 2, 3, 5, 64, 64, false, 0, false, 0, 1};
  sdpa_json(&b, &mask);
  char *m = strstr(b.s, "\"shape\": [3, 5]");
  cr_assert_not_null(m);
  memcpy(m, "\"shape\": [4, 5]", 15); /* a mask that does not broadcast */
  cr_assert_eq(plan_json(b.s, &plan, &bundle), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "attn_mask"), "%s", xr_last_error());
  xr_bundle_destroy(bundle);
}

Test(attention_plan, dropout_is_unsupported_not_wrong) {
  jbuf_t b;
  sdpa_case_t c = {"", FLASH, "float", 1, 2, 2, 3, 3, 64, 64, false, 0, false, 0, 0};
  sdpa_json(&b, &c);
  char *d = strstr(b.s, "\"dropout_p\", \"type\": \"float\", \"value\": 0");
  cr_assert_not_null(d);
  d[strlen("\"dropout_p\", \"type\": \"float\", \"value\": ")] = '1'; /* dropout_p = 1 */
  xr_op_result_t r = run_case(b.s, "cpu", 0, NULL);
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "dropout"), "%s", r.message);
}
