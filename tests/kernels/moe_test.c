/* The MoE family beyond its case matrix (moe_cases.h, run on every driver by the
 * moe_matrix_* targets): the cpu's fused path without oneDNN and without AMX, its weight slices
 * and AMX tiles, and the routing policies of moe_forward's router logits. */
#include "tests/kernels/moe_cases.h"

/* Without oneDNN the fused path falls back to its own micro-kernel for every dtype; that path
 * must match the reference too (oneDNN is loaded lazily, so the switch set here takes effect). */
Test(moe_fused, sweep_on_cpu_without_onednn) {
  setenv("XR_ONEDNN_LIBRARY", "off", 1);
  sweep_fused("cpu", "cpu.moe_fused");
}

/* The oneDNN path cuts its GEMMs into slices of about 256 KB of weights: at K = 1100, GEMM-1
 * takes four 64-column slices of gate and of up (the last of 8 columns) and GEMM-2 five of 256
 * (the last of 76), with about 65 rows per expert (several blocks of rows per slice). */
Test(moe_fused, weight_slices_on_cpu) {
  json_t j;
  for (int n = 0; n < 3; n++) {
    fused_case(&j, n, 129, 2, 4, n % 2 ? "float" : "c10::BFloat16", 1100, 200);
    expect_match(&j, "cpu", "cpu.moe_fused", (uint64_t)(40 + n), n == 2 ? NULL : "uniform");
  }
}

/* bf16 with K and N multiples of 32 takes the AMX path where the CPU has it (else oneDNN's):
 * GEMM-1 in slices of 64, 64 and 32 columns, GEMM-2 of 800 and 224, about 65 rows per expert
 * (two 32-row blocks and a 16-row one); every variant, the last with the routing weight applied
 * to the input (top-1). */
static void amx_cases(void) {
  json_t j;
  static const int64_t topk[4] = {2, 2, 2, 1};
  for (int n = 0; n < 4; n++) {
    fused_case(&j, n, 129, topk[n], 4, "c10::BFloat16", 1024, 160);
    expect_match(&j, "cpu", "cpu.moe_fused", (uint64_t)(50 + n), n == 2 ? NULL : policies[n % 3]);
  }
}

Test(moe_fused, amx_tiles_on_cpu) { amx_cases(); }

/* The same cases on oneDNN's path, which CPUs without AMX take. */
Test(moe_fused, amx_tiles_on_cpu_without_amx) {
  setenv("XR_CPU_AMX", "off", 1);
  amx_cases();
}

/* moe_forward with the layers --model-config writes (mxfp4 weights, GPT-OSS's biases and
 * swigluoai) and the other combinations of those, on the micro-kernel path, which CPUs without
 * AMX take for them (moe_cpu/forward_layers runs the fast path). */
Test(moe_forward, layers_on_cpu_without_amx) {
  setenv("XR_CPU_AMX", "off", 1);
  sweep_forward_layers("cpu", "cpu.moe_fused");
}

Test(moe_forward, fp8_weights_on_cpu_without_amx) {
  setenv("XR_CPU_AMX", "off", 1);
  sweep_forward_fp8("cpu", "cpu.moe_fused");
}

/* ------------------------------------------------------------------------------------------ */

/* moe_forward's router logits follow the MoE routing policies: the policy line says which, and
 * every policy replays against the reference; a zipf routing leaves some experts idle, which
 * the sums over routed experts must survive. */
Test(moe_forward, routing_policies_shape_the_router_logits) {
  static const char *const policies_given[] = {NULL, "uniform", "zipf:1.5"};
  static const char *const named[] = {"balanced", "uniform", "zipf:1.5"};
  json_t j;
  for (int i = 0; i < 3; i++) {
    forward_layer_case(&j, 40, 2, 8, 64, 64, i != 1, "c10::BFloat16", true, "c10::BFloat16");
    xr_op_result_t r = run(j.text, "cpu", (uint64_t)(90 + i), policies_given[i]);
    cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s", r.message);
    cr_assert(r.checked && r.check_passed, "%s", named[i]);
    char want[64];
    snprintf(want, sizeof want, "routing top-2 %s over 8 experts", named[i]);
    cr_assert(strstr(r.init_policy, want), "%s", r.init_policy);
  }
}
