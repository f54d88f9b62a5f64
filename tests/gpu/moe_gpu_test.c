/* The MoE family's GPU implementation (kernels/gpu/moe.cu via kernels/gpu/moe_gpu.c) on a cuda
 * or hip device (built once per driver, XR_GPU_DRIVER=cuda|hip): the cases of
 * //tests/kernels:moe_test (tests/kernels/moe_cases.h), moe_forward's mxfp4 and fp8 weights,
 * bias and swigluoai layers included, each replayed with --check against the CPU reference on
 * the same seeded inputs, plus the hand-worked sorting examples compared with their expected
 * values. Skips without such a device. */
#include "tests/kernels/moe_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)
#define KERNEL "gpu.moe"

/* Every Test is a process of its own: the compiled moe.cu comes from the disk cache after the
 * first. */
static void share_the_kernel_cache(void) {
  if (!getenv("XR_HAL_CACHE_DIR") && getenv("TEST_TMPDIR")) setenv("XR_HAL_CACHE_DIR", getenv("TEST_TMPDIR"), 1);
}

TestSuite(moe_gpu, .init = share_the_kernel_cache);

Test(moe_gpu, align_sweep) { sweep_sorting(DRIVER, KERNEL, false); }
Test(moe_gpu, sorting_sweep) { sweep_sorting(DRIVER, KERNEL, true); }
Test(moe_gpu, ck_documented_example) { ck_documented_example(DRIVER); }
Test(moe_gpu, vllm_worked_example) { vllm_worked_example(DRIVER); }
Test(moe_gpu, topk_softmax_sweep) { sweep_topk_softmax(DRIVER, KERNEL); }
Test(moe_gpu, fused_sweep) { sweep_fused(DRIVER, KERNEL); }
Test(moe_gpu, stages_sweep) { sweep_stages(DRIVER, KERNEL); }
Test(moe_gpu, wide_problems) { sweep_wide(DRIVER, KERNEL, KERNEL); }
/* moe_forward's mxfp4 / plain x silu / GPT-OSS (biases, swigluoai) layers */
Test(moe_gpu, forward_layers) { sweep_forward_layers(DRIVER, KERNEL); }
/* moe_forward's fp8 weights: per-expert scales, [128, 128] blocks (e4m3fnuz), [32, 64] blocks,
 * plain and GPT-OSS layers */
Test(moe_gpu, forward_fp8) { sweep_forward_fp8(DRIVER, KERNEL); }

Test(moe_gpu, moe_forward_without_weights_is_unsupported) {
  expect_forward_without_weights_unsupported(DRIVER);
}
Test(moe_gpu, quantised_variant_is_unsupported) { expect_quantised_variant_unsupported(DRIVER); }
Test(moe_gpu, mismatched_weights_name_the_argument) {
  expect_mismatched_weights_name_the_argument(DRIVER);
}
