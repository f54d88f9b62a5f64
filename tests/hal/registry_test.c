/* Driver registry and device selection, through hal.h only. Criterion runs each case in its own
 * process, so each sees a fresh registry and its own environment. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "hal/hal.h"

static const char *driver_of(xr_hal_device_t *device) {
  static xr_hal_device_properties_t properties;
  cr_assert_eq(xr_hal_device_properties(device, &properties), XR_OK);
  return properties.driver;
}

Test(registry, lists_the_four_drivers_with_reasons) {
  static const char *const expected[] = {"cpu", "opencl", "cuda", "hip"};
  cr_assert_eq(xr_hal_driver_count(), 4);
  for (size_t i = 0; i < 4; i++) {
    xr_hal_driver_info_t info;
    cr_assert_eq(xr_hal_driver_info(i, &info), XR_OK);
    cr_assert_str_eq(info.name, expected[i]);
    cr_assert_not_null(info.reason);
    if (info.status == XR_OK) {
      cr_assert_gt(info.device_count, 0, "%s", info.name);
    } else {
      cr_assert(info.status == XR_UNAVAILABLE || info.status == XR_UNIMPLEMENTED, "%s: %s",
                info.name, xr_status_name(info.status));
      cr_assert_eq(info.device_count, 0);
      cr_assert_neq(info.reason[0], '\0', "%s is unavailable without a reason", info.name);
    }
  }
  xr_hal_driver_info_t info;
  cr_assert_eq(xr_hal_driver_info(0, &info), XR_OK);
  cr_assert_eq(info.status, XR_OK, "cpu is always available");
  cr_assert_eq(xr_hal_driver_info(4, &info), XR_OUT_OF_RANGE);
  cr_assert_eq(xr_hal_driver_info(0, NULL), XR_INVALID_ARGUMENT);
  cr_assert_eq(xr_hal_driver_info_by_name("metal", &info), XR_NOT_FOUND);
  cr_assert(strstr(xr_last_error(), "metal"), "%s", xr_last_error());
}

Test(registry, cuda_and_hip_reasons_name_the_libraries_tried) {
  xr_hal_driver_info_t cuda, hip;
  cr_assert_eq(xr_hal_driver_info_by_name("cuda", &cuda), XR_OK);
  cr_assert_eq(xr_hal_driver_info_by_name("hip", &hip), XR_OK);
  /* Available: the note names what loaded; unavailable: every path tried up to the one that
   * loaded (tests/gpu:driver_test checks each situation exactly). */
  cr_assert(strstr(cuda.reason, "libcuda.so.1"), "%s", cuda.reason);
  cr_assert(strstr(hip.reason, "libamdhip64.so"), "%s", hip.reason);
  if (hip.status != XR_OK) {
    cr_assert(strstr(hip.reason, "libamdhip64.so.6"), "%s", hip.reason);
  }
}

Test(registry, opencl_library_override_is_tried_first) {
  setenv("XR_OPENCL_LIBRARY", "/nonexistent/libOpenCL.so", 1);
  xr_hal_driver_info_t info;
  cr_assert_eq(xr_hal_driver_info_by_name("opencl", &info), XR_OK);
  cr_assert(strstr(info.reason, "XR_OPENCL_LIBRARY=/nonexistent/libOpenCL.so: not found"), "%s",
            info.reason);
  if (info.status == XR_OK) cr_assert(strstr(info.reason, "libOpenCL.so.1: loaded"), "%s", info.reason);
}

Test(registry, a_library_without_the_required_symbols_is_unavailable) {
  setenv("XR_OPENCL_LIBRARY", "libz.so.1", 1);
  xr_hal_driver_info_t info;
  cr_assert_eq(xr_hal_driver_info_by_name("opencl", &info), XR_OK);
  cr_assert_eq(info.status, XR_UNAVAILABLE);
  cr_assert(strstr(info.reason, "libz.so.1: loaded; missing required symbol clGetPlatformIDs"),
            "%s", info.reason);
  xr_hal_device_t *device = NULL;
  cr_assert_eq(xr_hal_device_create("opencl", &device), XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), "missing required symbol"), "%s", xr_last_error());
  cr_assert_null(device);
}

/* Every vendor library the HAL opens takes "off" in its override variable. */
Test(registry, off_disables_a_runtime_and_the_run_time_compilers) {
  setenv("XR_OPENCL_LIBRARY", "off", 1);
  setenv("XR_CUDA_LIBRARY", "off", 1);
  setenv("XR_HIP_LIBRARY", "off", 1);
  static const char *const expected[][2] = {{"opencl", "XR_OPENCL_LIBRARY=off: OpenCL disabled"},
                                            {"cuda", "XR_CUDA_LIBRARY=off: CUDA disabled"},
                                            {"hip", "XR_HIP_LIBRARY=off: HIP disabled"}};
  for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
    xr_hal_driver_info_t info;
    cr_assert_eq(xr_hal_driver_info_by_name(expected[i][0], &info), XR_OK);
    cr_assert_eq(info.status, XR_UNAVAILABLE, "%s", expected[i][0]);
    cr_assert_str_eq(info.reason, expected[i][1]);
  }
  setenv("XR_NVRTC_LIBRARY", "off", 1);
  const char source[] = "extern \"C\" __global__ void k() {}";
  xr_hal_executable_params_t params = {.format = XR_HAL_EXECUTABLE_CUDA_SOURCE,
                                       .data = source,
                                       .size = sizeof source - 1,
                                       .label = "k.cu"};
  void *binary = NULL;
  size_t size = 0;
  cr_assert_eq(xr_hal_compile("sm_90", &params, &binary, &size), XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), "XR_NVRTC_LIBRARY=off: NVRTC disabled"), "%s",
            xr_last_error());
  cr_assert_null(binary);
}

Test(registry, device_strings) {
  xr_hal_device_t *device = NULL;
  cr_assert_eq(xr_hal_device_create("cpu", &device), XR_OK, "%s", xr_last_error());
  cr_assert_str_eq(driver_of(device), "cpu");
  xr_hal_device_destroy(device);
  cr_assert_eq(xr_hal_device_create("cpu:0", &device), XR_OK, "%s", xr_last_error());
  xr_hal_device_destroy(device);
  device = NULL;
  cr_assert_eq(xr_hal_device_create("cpu:1", &device), XR_NOT_FOUND);
  xr_hal_driver_info_t opencl;
  xr_hal_driver_info_by_name("opencl", &opencl);
  cr_assert_eq(xr_hal_device_create("opencl:999", &device),
               opencl.status == XR_OK ? XR_NOT_FOUND : opencl.status, "%s", xr_last_error());
  cr_assert_eq(xr_hal_device_create("bogus", &device), XR_NOT_FOUND);
  cr_assert(strstr(xr_last_error(), "bogus"), "%s", xr_last_error());
  cr_assert_eq(xr_hal_device_create("cpu:", &device), XR_INVALID_ARGUMENT);
  cr_assert_eq(xr_hal_device_create("cpu:x", &device), XR_INVALID_ARGUMENT);
  cr_assert_eq(xr_hal_device_create("cpu:-1", &device), XR_INVALID_ARGUMENT);
  cr_assert_eq(xr_hal_device_create(":0", &device), XR_NOT_FOUND);
  cr_assert_eq(xr_hal_device_create("cpu", NULL), XR_INVALID_ARGUMENT);
  cr_assert_null(device);
  xr_hal_driver_info_t cuda;
  xr_hal_driver_info_by_name("cuda", &cuda);
  if (cuda.status != XR_OK) {
    cr_assert_eq(xr_hal_device_create("cuda:0", &device), cuda.status);
    cr_assert(strstr(xr_last_error(), cuda.reason), "%s", xr_last_error());
  }
}

Test(registry, auto_prefers_gpus_and_falls_back_to_cpu) {
  unsetenv("XR_HAL_DEVICE");
  xr_hal_device_t *device = NULL;
  cr_assert_eq(xr_hal_device_create("auto", &device), XR_OK, "%s", xr_last_error());
  xr_hal_device_properties_t properties;
  cr_assert_eq(xr_hal_device_properties(device, &properties), XR_OK);
  /* No GPU on a CI machine: auto is the cpu unless an OpenCL GPU exists. */
  if (!properties.is_gpu) cr_assert_str_eq(properties.driver, "cpu");
  xr_hal_device_destroy(device);
  cr_assert_eq(xr_hal_device_create(NULL, &device), XR_OK, "%s", xr_last_error());
  xr_hal_device_destroy(device);
}

Test(registry, environment_overrides_auto_but_not_explicit_strings) {
  setenv("XR_HAL_DEVICE", "cpu:7", 1);
  xr_hal_device_t *device = NULL;
  cr_assert_eq(xr_hal_device_create("auto", &device), XR_NOT_FOUND, "XR_HAL_DEVICE is honoured");
  cr_assert(strstr(xr_last_error(), "cpu:7"), "%s", xr_last_error());
  cr_assert_eq(xr_hal_device_create(NULL, &device), XR_NOT_FOUND);
  cr_assert_eq(xr_hal_device_create("cpu", &device), XR_OK, "explicit strings win");
  xr_hal_device_destroy(device);
  setenv("XR_HAL_DEVICE", "cpu", 1);
  cr_assert_eq(xr_hal_device_create(NULL, &device), XR_OK);
  cr_assert_str_eq(driver_of(device), "cpu");
  xr_hal_device_destroy(device);
  setenv("XR_HAL_DEVICE", "auto", 1);
  cr_assert_eq(xr_hal_device_create("auto", &device), XR_OK);
  xr_hal_device_destroy(device);
}

Test(registry, status_names_and_labels) {
  cr_assert_str_eq(xr_hal_peak_dtype_name(XR_HAL_PEAK_BF16), "bf16");
  cr_assert_str_eq(xr_hal_peak_dtype_name(XR_HAL_PEAK_FP8), "fp8");
  cr_assert_str_eq(xr_hal_figure_source_name(XR_HAL_FIGURE_CALIBRATED), "calibrated");
  cr_assert_str_eq(xr_hal_figure_source_name(XR_HAL_FIGURE_DATASHEET), "datasheet");
}
