/* Buffers: allocation limits, views, host pointers, properties. */
#include "tests/cts/cts.h"

TestSuite(buffer, .init = cts_setup, .fini = cts_teardown);

Test(buffer, properties_are_sane) {
  cr_assert_str_eq(cts_properties.driver, XR_CTS_DRIVER_NAME);
  cr_assert(strncmp(cts_properties.spec, XR_CTS_DRIVER_NAME, strlen(XR_CTS_DRIVER_NAME)) == 0,
            "spec %s", cts_properties.spec);
  cr_assert_neq(cts_properties.name[0], '\0', "device has no name");
  cr_assert_gt(cts_properties.memory_bytes, 0);
  cr_assert_gt(cts_properties.max_allocation_bytes, 0);
  cr_assert_leq(cts_properties.max_allocation_bytes, cts_properties.memory_bytes);
  cr_assert_gt(cts_properties.compute_units, 0);
  cr_assert_gt(cts_properties.max_work_group_size, 0);
  cr_assert_gt(cts_properties.simd_width, 0);
  for (int d = 0; d < XR_HAL_PEAK_DTYPE_COUNT; d++) {
    xr_hal_figure_t figure = cts_properties.peak_flops[d];
    cr_assert(figure.source == XR_HAL_FIGURE_UNKNOWN ? figure.value == 0 : figure.value > 0,
              "%s peak %g labelled %s", xr_hal_peak_dtype_name(d), figure.value,
              xr_hal_figure_source_name(figure.source));
  }
}

/* DRAM's bandwidth is measured over at least 4x every cache the device reports (2 GiB when it
 * reports none), where the device's memory allows; a 64 MiB copy sat in a 480 MiB L3. */
Test(buffer, calibration_measures_dram_beyond_the_caches_and_is_memoised) {
  CTS_OK(xr_hal_device_calibrate(cts_device));
  xr_hal_device_properties_t properties;
  CTS_OK(xr_hal_device_properties(cts_device, &properties));
  const xr_hal_measured_t *m = &properties.measured;
  cr_assert_eq(m->memory_bandwidth.source, XR_HAL_FIGURE_CALIBRATED);
  /* Between 100 MB/s and 100 TB/s: anything outside is a timing bug, not a machine. */
  cr_assert(m->memory_bandwidth.value > 1e8 && m->memory_bandwidth.value < 1e14,
            "bandwidth %g B/s", m->memory_bandwidth.value);
  uint64_t caches = properties.cache_total_bytes, set = m->memory_working_set_bytes;
  uint64_t room = properties.memory_bytes / 4;
  if (properties.max_allocation_bytes && 2 * properties.max_allocation_bytes < room)
    room = 2 * properties.max_allocation_bytes;
  uint64_t want = caches ? 4 * caches : 2ull << 30;
  cr_assert_geq(set + 4096, want < room ? want : room,
                "a %llu-byte working set for %llu bytes of cache",
                (unsigned long long)set, (unsigned long long)caches);
  /* The stated figure is left as it was: the measurement sits beside it. */
  if (properties.memory_bandwidth.source != XR_HAL_FIGURE_UNKNOWN)
    cr_assert_neq(properties.memory_bandwidth.source, XR_HAL_FIGURE_CALIBRATED);
  if (properties.last_level_cache_bytes >= (64u << 10)) {
    cr_assert_eq(m->cache_bandwidth.source, XR_HAL_FIGURE_CALIBRATED);
    cr_assert_leq(m->cache_working_set_bytes, properties.last_level_cache_bytes / 2);
  }
  /* Each level of 2 MiB or more in all, within half of it; the levels add up to the total. */
  uint64_t levels = 0;
  for (uint32_t i = 0; i < properties.cache_level_count; i++) {
    const xr_hal_cache_level_t *c = &properties.cache_levels[i];
    levels += c->total_bytes;
    cr_assert(c->name[0] && c->bytes > 0 && c->total_bytes >= c->bytes, "level %u", i);
    if (c->total_bytes < (2u << 20)) continue;
    cr_assert_eq(m->cache_level_bandwidth[i].source, XR_HAL_FIGURE_CALIBRATED, "%s", c->name);
    cr_assert_leq(m->cache_level_working_set_bytes[i], c->total_bytes / 2, "%s", c->name);
    cr_assert(m->cache_level_bandwidth[i].value > 1e8 && m->cache_level_bandwidth[i].value < 1e15,
              "%s: %g B/s", c->name, m->cache_level_bandwidth[i].value);
  }
  if (properties.cache_level_count) cr_assert_eq(levels, properties.cache_total_bytes);
  double first = m->memory_bandwidth.value;
  /* Memoised: a second measurement would not reproduce the figure to the last bit. */
  CTS_OK(xr_hal_device_calibrate(cts_device));
  CTS_OK(xr_hal_device_properties(cts_device, &properties));
  cr_assert_eq(properties.measured.memory_bandwidth.value, first, "calibration ran twice");
}

Test(buffer, zero_bytes_is_a_valid_buffer) {
  xr_hal_buffer_t *buffer = NULL, *view = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, 0, &buffer));
  cr_assert_not_null(buffer);
  cr_assert_eq(xr_hal_buffer_size(buffer), 0);
  cr_assert_eq(xr_hal_buffer_device(buffer), cts_device);
  uint8_t byte = 0x5a;
  CTS_OK(xr_hal_buffer_write(buffer, 0, &byte, 0));
  CTS_OK(xr_hal_buffer_read(&byte, buffer, 0, 0));
  CTS_OK(xr_hal_buffer_fill(buffer, 0, 0, &byte, 1));
  CTS_OK(xr_hal_buffer_view(buffer, 0, 0, &view));
  cr_assert_eq(xr_hal_buffer_size(view), 0);
  CTS_FAILS_WITH(XR_OUT_OF_RANGE, xr_hal_buffer_write(buffer, 0, &byte, 1));
  CTS_FAILS_WITH(XR_OUT_OF_RANGE, xr_hal_buffer_view(buffer, 0, 1, &view));
  xr_hal_buffer_free(view);
  xr_hal_buffer_free(buffer);
}

Test(buffer, more_than_the_device_has_is_resource_exhausted) {
  xr_hal_buffer_t *buffer = NULL;
  CTS_FAILS_WITH(XR_RESOURCE_EXHAUSTED,
                 xr_hal_buffer_alloc(cts_device, (size_t)cts_properties.memory_bytes + 1, &buffer));
  cr_assert_null(buffer);
  cr_assert(strstr(xr_last_error(), cts_properties.spec), "sentence names the device: %s",
            xr_last_error());
  CTS_FAILS_WITH(XR_RESOURCE_EXHAUSTED, xr_hal_buffer_alloc(cts_device, SIZE_MAX, &buffer));
  cr_assert_null(buffer);
  if (cts_properties.max_allocation_bytes < cts_properties.memory_bytes) {
    CTS_FAILS_WITH(XR_RESOURCE_EXHAUSTED,
                   xr_hal_buffer_alloc(cts_device,
                                       (size_t)cts_properties.max_allocation_bytes + 1, &buffer));
  }
  /* The device still works afterwards. */
  CTS_OK(xr_hal_buffer_alloc(cts_device, 4096, &buffer));
  xr_hal_buffer_free(buffer);
}

Test(buffer, views_check_ranges_and_outlive_their_parent) {
  enum { SIZE = 8192 };
  uint8_t *data = cts_malloc(SIZE), *back = cts_malloc(SIZE);
  cts_pattern(data, SIZE, 1);
  xr_hal_buffer_t *buffer = NULL, *view = NULL, *nested = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, SIZE, &buffer));
  CTS_OK(xr_hal_buffer_write(buffer, 0, data, SIZE));
  CTS_FAILS_WITH(XR_OUT_OF_RANGE, xr_hal_buffer_view(buffer, SIZE - 10, 11, &view));
  CTS_FAILS_WITH(XR_OUT_OF_RANGE, xr_hal_buffer_view(buffer, SIZE + 1, 0, &view));
  CTS_FAILS_WITH(XR_OUT_OF_RANGE, xr_hal_buffer_view(buffer, 1, SIZE_MAX, &view));
  CTS_OK(xr_hal_buffer_view(buffer, 1000, 5000, &view));
  CTS_OK(xr_hal_buffer_view(view, 24, 100, &nested));
  cr_assert_eq(xr_hal_buffer_size(view), 5000);
  cr_assert_eq(xr_hal_buffer_size(nested), 100);
  xr_hal_buffer_free(buffer); /* the views keep the memory alive */
  CTS_OK(xr_hal_buffer_read(back, nested, 0, 100));
  cr_assert_eq(cts_first_difference(back, data + 1024, 100), SIZE_MAX);
  CTS_FAILS_WITH(XR_OUT_OF_RANGE, xr_hal_buffer_read(back, nested, 1, 100));
  xr_hal_buffer_free(view);
  CTS_OK(xr_hal_buffer_read(back, nested, 0, 100));
  cr_assert_eq(cts_first_difference(back, data + 1024, 100), SIZE_MAX);
  xr_hal_buffer_free(nested);
  free(data);
  free(back);
}

Test(buffer, host_pointer_only_on_host_devices) {
  xr_hal_buffer_t *buffer = NULL, *view = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, 256, &buffer));
  CTS_OK(xr_hal_buffer_view(buffer, 64, 64, &view));
  void *pointer = NULL, *view_pointer = NULL;
  xr_status_t status = xr_hal_buffer_host_pointer(buffer, &pointer);
  if (cts_properties.host_addressable) {
    cr_assert_eq(status, XR_OK, "%s", xr_last_error());
    cr_assert_eq((uintptr_t)pointer % 64, 0, "buffers are 64-byte aligned");
    CTS_OK(xr_hal_buffer_host_pointer(view, &view_pointer));
    cr_assert_eq((char *)view_pointer, (char *)pointer + 64);
    uint32_t value = 0xdeadbeef;
    CTS_OK(xr_hal_buffer_write(view, 4, &value, 4));
    cr_assert_eq(memcmp((char *)pointer + 68, &value, 4), 0);
  } else {
    cr_assert_eq(status, XR_UNIMPLEMENTED, "%s", xr_status_name(status));
  }
  xr_hal_buffer_free(view);
  xr_hal_buffer_free(buffer);
}

Test(buffer, invalid_arguments) {
  xr_hal_buffer_t *buffer = NULL;
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_buffer_alloc(NULL, 16, &buffer));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_buffer_alloc(cts_device, 16, NULL));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_buffer_view(NULL, 0, 0, &buffer));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_device_properties(cts_device, NULL));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_device_calibrate(NULL));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_buffer_host_pointer(NULL, NULL));
  CTS_OK(xr_hal_buffer_alloc(cts_device, 16, &buffer));
  uint8_t data[16] = {0};
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_buffer_write(buffer, 0, NULL, 16));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_buffer_read(NULL, buffer, 0, 16));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_buffer_write(NULL, 0, data, 16));
  CTS_FAILS_WITH(XR_OUT_OF_RANGE, xr_hal_buffer_write(buffer, 1, data, 16));
  CTS_FAILS_WITH(XR_OUT_OF_RANGE, xr_hal_buffer_read(data, buffer, SIZE_MAX, 2));
  xr_hal_buffer_free(buffer);
  xr_hal_buffer_free(NULL);
  xr_hal_stream_destroy(NULL);
  xr_hal_event_destroy(NULL);
  xr_hal_executable_destroy(NULL);
}

Test(buffer, objects_of_two_devices_do_not_mix) {
  xr_hal_device_t *other = NULL;
  CTS_OK(xr_hal_device_create(cts_properties.spec, &other));
  xr_hal_buffer_t *mine = NULL, *theirs = NULL;
  xr_hal_stream_t *stream = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, 64, &mine));
  CTS_OK(xr_hal_buffer_alloc(other, 64, &theirs));
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_buffer_copy(mine, 0, theirs, 0, 64));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_copy(stream, mine, 0, theirs, 0, 64));
  uint8_t byte = 1;
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_fill(stream, theirs, 0, 64, &byte, 1));
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(theirs);
  xr_hal_buffer_free(mine);
  xr_hal_device_destroy(other);
}
