/* The elementwise family's GPU implementation (kernels/gpu/elementwise.cu via
 * kernels/gpu/elementwise_gpu.c) on a cuda or hip device (built once per driver,
 * XR_GPU_DRIVER=cuda|hip): the cases of tests/kernels/elementwise_cases.h, the same the cpu
 * suite runs, each compared with the CPU reference on the same seeded inputs through the real
 * engine. Skips without such a device. */
#include "tests/kernels/elementwise_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

Test(elementwise_gpu, add_sub_mul_div_sizes_and_dtypes) { ew_arithmetic_cases(DRIVER); }
Test(elementwise_gpu, broadcasting_views_scalars_and_edges) { ew_broadcasting_cases(DRIVER); }
Test(elementwise_gpu, in_place_and_out) { ew_in_place_and_out_cases(DRIVER); }
Test(elementwise_gpu, gelu_and_silu) { ew_activation_cases(DRIVER); }
Test(elementwise_gpu, gated_activations) { ew_gated_cases(DRIVER); }
Test(elementwise_gpu, copies_and_conversions) { ew_copy_cases(DRIVER); }
Test(elementwise_gpu, fills) { ew_fill_cases(DRIVER); }
Test(elementwise_gpu, every_op_class) { ew_op_class_cases(DRIVER); }

/* What the GPU kernels leave to the CPU says so instead of running wrongly. */
Test(elementwise_gpu, f64_arithmetic_is_unimplemented) {
  text_t a = {0}, b = {0};
  xr_op_result_t r = check_op(binary("aten::add", tensor(&a, "double", 1, SHAPE(100), NULL, 0),
                                     tensor(&b, "double", 1, SHAPE(100), NULL, 0), NULL),
                              DRIVER);
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "results are not implemented"), "%s", r.message);
}
