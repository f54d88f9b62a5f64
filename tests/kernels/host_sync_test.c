/* aten::_local_scalar_dense replays as the device-to-host read of its one element, on every
 * device: ref.read_scalar on cpu, opencl.read_scalar on opencl (skips without a device). A
 * tensor of more than one element is an error naming the argument. */
#include "tests/kernels/bundle_text.h"

static const char *item_of(text_t *t, const char *dtype, int rank, const int64_t *shape,
                           int64_t offset) {
  char args[512];
  format(args, sizeof args, "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}",
         tensor(t, dtype, rank, shape, NULL, offset));
  return bundle("aten::_local_scalar_dense", args, NULL);
}

static void expect_read(const char *device, const char *kernel) {
  const char *dtypes[] = {"bool", "float", "c10::BFloat16", "long int"};
  for (size_t d = 0; d < 4; d++) {
    text_t t = {0};
    xr_op_result_t r =
        check_op(item_of(&t, dtypes[d], d % 2 ? 2 : 0, SHAPE(1, 1), (int64_t)d), device);
    cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s on %s: %s", dtypes[d], device, r.message);
    cr_assert_str_eq(r.kernel, kernel);
    cr_assert_eq(r.output_count, 0, "a Python number, no tensor output");
  }
}

Test(host_sync, cpu_reads_one_element) {
  expect_read("cpu", "ref.read_scalar");
}
Test(host_sync, opencl_reads_one_element) {
  expect_read("opencl", "opencl.read_scalar");
}

Test(host_sync, more_than_one_element_is_an_error) {
  text_t t = {0};
  xr_op_result_t r = check_op(item_of(&t, "float", 1, SHAPE(2), 0), "cpu");
  cr_assert_eq(r.outcome, XR_OP_FAILED);
  cr_assert(strstr(r.message, "self: a tensor of one element"), "%s", r.message);
}
