#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tests/cts/cts.h"

xr_hal_device_t *cts_device;
xr_hal_device_properties_t cts_properties;

void cts_setup(void) {
  /* Binary-cache writes go to the test's private temporary directory. */
  const char *tmp = getenv("TEST_TMPDIR");
  if (tmp && !getenv("XR_HAL_CACHE_DIR")) {
    char path[4096];
    snprintf(path, sizeof path, "%s/xr-hal-cache", tmp);
    setenv("XR_HAL_CACHE_DIR", path, 1);
  }
  xr_hal_driver_info_t info;
  cr_assert_eq(xr_hal_driver_info_by_name(XR_CTS_DRIVER_NAME, &info), XR_OK, "%s",
               xr_last_error());
  if (info.status != XR_OK) {
    cr_skip_test("%s unavailable (%s): %s", XR_CTS_DRIVER_NAME, xr_status_name(info.status),
                 info.reason);
  }
  xr_status_t status = xr_hal_device_create(XR_CTS_DRIVER_NAME, &cts_device);
  cr_assert_eq(status, XR_OK, "xr_hal_device_create(%s): %s", XR_CTS_DRIVER_NAME,
               xr_last_error());
  cr_assert_eq(xr_hal_device_properties(cts_device, &cts_properties), XR_OK);
}

void cts_teardown(void) {
  xr_hal_device_destroy(cts_device);
  cts_device = NULL;
}

void cts_pattern(uint8_t *out, size_t size, uint32_t seed) {
  uint32_t state = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < size; i++) {
    state = state * 1664525u + 1013904223u;
    out[i] = (uint8_t)(state >> 24);
  }
}

size_t cts_first_difference(const void *a, const void *b, size_t size) {
  const uint8_t *x = a, *y = b;
  if (memcmp(x, y, size) == 0) return SIZE_MAX;
  for (size_t i = 0; i < size; i++) {
    if (x[i] != y[i]) return i;
  }
  return SIZE_MAX;
}

void *cts_malloc(size_t size) {
  void *memory = NULL;
  cr_assert_eq(posix_memalign(&memory, 4096, size ? size : 1), 0, "host allocation of %zu bytes",
               size);
  return memory;
}

double cts_now_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec * 1e3 + (double)now.tv_nsec * 1e-6;
}
