/* The pointwise table's cases (pointwise_cases.h) on opencl: opencl.elementwise against the
 * reference on fresh seeded inputs. Its own target: PoCL compiles each distinct program on
 * first use, which takes minutes on a cold cache. Skips without an OpenCL device. */
#include "tests/kernels/pointwise_cases.h"

Test(pointwise_opencl, every_row_f32) {
  pw_every_row_cases("opencl", "float");
}
Test(pointwise_opencl, sizes_and_views) {
  pw_size_and_view_cases("opencl");
}
Test(pointwise_opencl, scalars_and_arguments) {
  pw_scalar_cases("opencl");
}
Test(pointwise_opencl, in_place_out_fp8_and_lists) {
  pw_form_cases("opencl");
}
Test(pointwise_opencl, integers_in_64_bits) {
  pw_integer_cases("opencl");
}
Test(pointwise_opencl, creation_and_movement) {
  pw_movement_cases("opencl");
}
