/* What the elementwise family's GPU implementation (kernels/gpu/elementwise.cu via
 * kernels/elementwise_device.c) leaves to the CPU, on a cuda or hip device (built once per
 * driver, XR_GPU_DRIVER=cuda|hip); the family's cases run on every driver as
 * tests/kernels:elementwise_matrix_<driver>. Skips without such a device. */
#include "tests/kernels/elementwise_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

/* What the GPU kernels leave to the CPU says so instead of running wrongly. */
Test(elementwise_gpu, f64_arithmetic_is_unimplemented) {
  text_t a = {0}, b = {0};
  xr_op_result_t r = check_op(binary("aten::add", tensor(&a, "double", 1, SHAPE(100), NULL, 0),
                                     tensor(&b, "double", 1, SHAPE(100), NULL, 0), NULL),
                              DRIVER);
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "results are not implemented"), "%s", r.message);
}
