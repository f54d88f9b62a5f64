/* The embedded OpenCL sources reach the device: probe.cl is built from the library's copy and
 * its kernel writes what the host asked for. */
#include <criterion/criterion.h>

#include "kernels/opencl/sources.h"

Test(opencl_sources, embedded_probe_builds_and_runs) {
  cr_assert_not_null(xr_opencl_source_text("probe.cl"));
  cr_assert_null(xr_opencl_source_text("no-such.cl"));
  xr_hal_device_t *dev;
  if (xr_hal_device_create("opencl", &dev) != XR_OK) cr_skip_test("opencl unavailable: %s", xr_last_error());
  xr_hal_executable_t *exe;
  cr_assert_eq(xr_opencl_build(dev, "probe.cl", NULL, &exe), XR_OK, "%s", xr_last_error());
  xr_hal_kernel_t *k;
  cr_assert_eq(xr_hal_kernel_lookup(exe, "xr_probe_fill", &k), XR_OK, "%s", xr_last_error());
  xr_hal_buffer_t *buf;
  cr_assert_eq(xr_hal_buffer_alloc(dev, 64 * sizeof(float), &buf), XR_OK);
  xr_hal_stream_t *s;
  cr_assert_eq(xr_hal_stream_create(dev, &s), XR_OK);
  float value = 2.5f;
  xr_hal_kernel_arg_t args[] = {xr_hal_arg_buffer(buf), xr_hal_arg_bytes(&value, sizeof value)};
  xr_hal_dispatch_t d = {.grid = {4, 1, 1}, .block = {16, 1, 1}, .args = args, .arg_count = 2};
  cr_assert_eq(xr_hal_stream_dispatch(s, k, &d), XR_OK, "%s", xr_last_error());
  cr_assert_eq(xr_hal_stream_synchronize(s), XR_OK);
  float out[64];
  cr_assert_eq(xr_hal_buffer_read(out, buf, 0, sizeof out), XR_OK);
  for (int i = 0; i < 64; i++) cr_assert_eq(out[i], 2.5f);
  xr_hal_stream_destroy(s);
  xr_hal_buffer_free(buf);
  xr_hal_executable_destroy(exe);
  xr_hal_device_destroy(dev);
}
