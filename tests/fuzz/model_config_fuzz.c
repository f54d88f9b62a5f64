/* A model's config.json, as --model-config reads it, applied to a moe_forward op: a config that
 * loads and applies must leave a bundle that validates, whose expert weights match the op's
 * experts and hidden size. (The MoE family's planning is checked by tests/replay's
 * model_config_test; kernels/ does not build with clang.) */
#include <string.h>

#include "formats/bundle.h"
#include "formats/model_config.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  xr_model_config_t c;
  if (xr_model_config_parse((const char *)data, size, "fuzz.json", &c) != XR_OK) return 0;
  xr_bundle_t *b;
  if (xr_bundle_create(&b) != XR_OK) abort();
  xr_op_t *op = xr_bundle_add_op(b, "vllm::moe_forward");
  if (!op || !xr_op_add_tensor(b->arena, op, "hidden_states", XR_DTYPE_BF16, 2, (int64_t[]){3, 256}, NULL) ||
      !xr_op_add_tensor(b->arena, op, "router_logits", XR_DTYPE_BF16, 2, (int64_t[]){3, 8}, NULL))
    abort();
  if (xr_model_config_apply(b, &c, NULL, NULL, NULL) == XR_OK) {
    xr_diagnostics_t d;
    fuzz_require(xr_bundle_validate(b, false, &d) == XR_OK, "%s", xr_last_error());
    xr_diagnostics_free(&d);
    const xr_arg_t *w1 = xr_op_find_arg(&b->ops[0], "w1"), *w2 = xr_op_find_arg(&b->ops[0], "w2");
    fuzz_require(w1 && w2 && w1->value.kind == XR_VALUE_TENSOR && w2->value.kind == XR_VALUE_TENSOR, "no weights");
    fuzz_require(w1->value.as.tensor->shape[0] == 8 && w2->value.as.tensor->shape[1] == 256, "shapes");
  }
  xr_bundle_destroy(b);
  return 0;
}
