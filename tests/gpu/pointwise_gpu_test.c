/* The pointwise table's GPU path (kernels/gpu/elementwise.cu's table switch and integer
 * pipeline) on a cuda or hip device (built once per driver, XR_GPU_DRIVER=cuda|hip): the cases of
 * tests/kernels/pointwise_cases.h, the same the cpu and opencl suites run, each compared with the
 * CPU reference on the same seeded inputs through the real engine. Skips without such a device. */
#include "tests/kernels/pointwise_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

Test(pointwise_gpu, every_row_f32) {
  pw_every_row_cases(DRIVER, "float");
}
Test(pointwise_gpu, every_row_bf16) {
  pw_every_row_cases(DRIVER, "c10::BFloat16");
}
Test(pointwise_gpu, sizes_and_views) {
  pw_size_and_view_cases(DRIVER);
}
Test(pointwise_gpu, scalars_and_arguments) {
  pw_scalar_cases(DRIVER);
}
Test(pointwise_gpu, in_place_out_fp8_and_lists) {
  pw_form_cases(DRIVER);
}
Test(pointwise_gpu, integers_in_64_bits) {
  pw_integer_cases(DRIVER);
}
Test(pointwise_gpu, creation_and_movement) {
  pw_movement_cases(DRIVER);
}
