/* MoE family: every op replayed through the engine with --check on "cpu" (the fast fused path
 * against the reference) and "opencl" (every op against the reference, moe_forward's mxfp4
 * and fp8 weights, bias and swigluoai layers included); the cases, shared with
 * tests/gpu/moe_gpu_test.c, are in tests/kernels/moe_cases.h. The OpenCL sweeps share one Test
 * (one process), so PoCL compiles moe.cl once. */
#include "tests/kernels/moe_cases.h"

Test(moe_align, sweep_on_cpu) { sweep_sorting("cpu", "ref.moe", false); }
Test(moe_sorting, sweep_on_cpu) { sweep_sorting("cpu", "ref.moe", true); }

/* The hand-worked sorting examples check the reference itself. */
Test(moe_sorting, ck_documented_example) { ck_documented_example("cpu"); }
Test(moe_align, vllm_worked_example) { vllm_worked_example("cpu"); }

Test(moe_topk_softmax, sweep_on_cpu) { sweep_topk_softmax("cpu", "ref.moe"); }

Test(moe_fused, sweep_on_cpu) { sweep_fused("cpu", "cpu.moe_fused"); }

/* Without oneDNN the fused path falls back to its own micro-kernel for every dtype; that path
 * must match the reference too (oneDNN is loaded lazily, so the switch set here takes effect). */
Test(moe_fused, sweep_on_cpu_without_onednn) {
  setenv("XR_ONEDNN_LIBRARY", "off", 1);
  sweep_fused("cpu", "cpu.moe_fused");
}

Test(moe_fused, wide_on_cpu) { sweep_wide("cpu", "cpu.moe_fused", "ref.moe"); }

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
 * swigluoai) and the other combinations of those, on the fast path. */
Test(moe_forward, layers_on_cpu) { sweep_forward_layers("cpu", "cpu.moe_fused"); }

/* The same on the micro-kernel path, which CPUs without AMX take for them. */
Test(moe_forward, layers_on_cpu_without_amx) {
  setenv("XR_CPU_AMX", "off", 1);
  sweep_forward_layers("cpu", "cpu.moe_fused");
}

Test(moe_forward, fp8_weights_on_cpu) { sweep_forward_fp8("cpu", "cpu.moe_fused"); }
Test(moe_forward, fp8_weights_on_cpu_without_amx) {
  setenv("XR_CPU_AMX", "off", 1);
  sweep_forward_fp8("cpu", "cpu.moe_fused");
}

Test(moe_fused, moe_forward_without_weights_is_unsupported) {
  expect_forward_without_weights_unsupported("cpu");
}
Test(moe_fused, quantised_variant_is_unsupported) { expect_quantised_variant_unsupported("cpu"); }
Test(moe_fused, mismatched_weights_name_the_argument) {
  expect_mismatched_weights_name_the_argument("cpu");
}

Test(moe_stages, sweep_on_cpu) { sweep_stages("cpu", "ref.moe"); }

/* ------------------------------------------------------------------------------------------ */

Test(moe_opencl, every_op_against_the_reference) {
  /* Each case prepares afresh: the HAL's program cache turns the rebuilds into cache reads. */
  if (!getenv("XR_HAL_CACHE_DIR") && getenv("TEST_TMPDIR")) setenv("XR_HAL_CACHE_DIR", getenv("TEST_TMPDIR"), 1);
  sweep_sorting("opencl", "opencl.moe", false);
  sweep_sorting("opencl", "opencl.moe", true);
  sweep_topk_softmax("opencl", "opencl.moe");
  sweep_fused("opencl", "opencl.moe");
  sweep_stages("opencl", "opencl.moe");
  sweep_wide("opencl", "opencl.moe", "opencl.moe");
  sweep_forward_layers("opencl", "opencl.moe");
  sweep_forward_fp8("opencl", "opencl.moe");
  ck_documented_example("opencl");
  vllm_worked_example("opencl");
}

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
