/* Graphs and clocks where the drivers have none or read the host: the cpu and opencl drivers
 * refuse stream capture as UNIMPLEMENTED with a sentence; opencl has no clocks; the cpu driver
 * reads cpufreq (this machine's, when it has one, else UNAVAILABLE naming the path), and the
 * cpufreq reading itself against a directory of files written here. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include <criterion/criterion.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hal/drivers/cpu/cpu_clocks.h"
#include "hal/hal.h"

#define OK(expr)                                                                       \
  do {                                                                                 \
    xr_status_t ok_status_ = (expr);                                                   \
    cr_assert_eq(ok_status_, XR_OK, "%s -> %s: %s", #expr, xr_status_name(ok_status_), \
                 xr_last_error());                                                     \
  } while (0)

/* Opens `spec`, skipping with the driver's reason when it cannot run here. */
static xr_hal_device_t *open_device(const char *driver) {
  xr_hal_driver_info_t info;
  OK(xr_hal_driver_info_by_name(driver, &info));
  if (info.status != XR_OK) cr_skip_test("%s unavailable: %s", driver, info.reason);
  xr_hal_device_t *device = NULL;
  OK(xr_hal_device_create(driver, &device));
  return device;
}

static void assert_no_graphs(const char *driver) {
  xr_hal_device_t *device = open_device(driver);
  xr_hal_stream_t *stream = NULL;
  OK(xr_hal_stream_create(device, &stream));
  xr_hal_device_properties_t properties;
  OK(xr_hal_device_properties(device, &properties));
  cr_assert_not(properties.graphs, "%s says it has graphs", driver);
  cr_assert_str_eq(properties.kernel_family, driver);
  char expected[128];
  snprintf(expected, sizeof expected, "%s:0: the driver has no graphs (cuda and hip do)", driver);
  cr_assert_eq(xr_hal_stream_begin_capture(stream), XR_UNIMPLEMENTED);
  cr_assert_str_eq(xr_last_error(), expected);
  xr_hal_graph_t *graph = NULL;
  cr_assert_eq(xr_hal_stream_end_capture(stream, &graph), XR_UNIMPLEMENTED);
  cr_assert_str_eq(xr_last_error(), expected);
  cr_assert_null(graph);
  /* The stream is untouched: work still runs and synchronises. */
  xr_hal_buffer_t *buffer = NULL;
  OK(xr_hal_buffer_alloc(device, 16, &buffer));
  uint32_t pattern = 0x5a5a5a5au, back[4] = {0};
  OK(xr_hal_stream_fill(stream, buffer, 0, 16, &pattern, 4));
  OK(xr_hal_stream_read(stream, back, buffer, 0, 16));
  OK(xr_hal_stream_synchronize(stream));
  cr_assert_eq(back[3], pattern);
  xr_hal_graph_destroy(NULL);
  xr_hal_buffer_free(buffer);
  xr_hal_stream_destroy(stream);
  xr_hal_device_destroy(device);
}

Test(graphs, cpu_has_none) {
  assert_no_graphs("cpu");
}
Test(graphs, opencl_has_none) {
  assert_no_graphs("opencl");
}

Test(graphs, null_arguments_are_invalid) {
  cr_assert_eq(xr_hal_stream_begin_capture(NULL), XR_INVALID_ARGUMENT);
  cr_assert_eq(xr_hal_stream_end_capture(NULL, NULL), XR_INVALID_ARGUMENT);
  cr_assert_eq(xr_hal_graph_launch(NULL, NULL), XR_INVALID_ARGUMENT);
  cr_assert_eq(xr_hal_device_clocks(NULL, NULL), XR_INVALID_ARGUMENT);
}

Test(clocks, opencl_has_none) {
  xr_hal_device_t *device = open_device("opencl");
  xr_hal_clocks_t clocks;
  cr_assert_eq(xr_hal_device_clocks(device, &clocks), XR_UNIMPLEMENTED);
  cr_assert_str_eq(xr_last_error(), "opencl:0: the driver has no clocks to read");
  xr_hal_device_destroy(device);
}

/* The cpufreq directory of the first CPU this process may run on, found here independently. */
static void first_cpu_dir(char *out, size_t capacity) {
  cpu_set_t allowed;
  int first = 0;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    while (first < CPU_SETSIZE && !CPU_ISSET(first, &allowed)) first++;
  }
  snprintf(out, capacity, "/sys/devices/system/cpu/cpu%d/cpufreq", first);
}

Test(clocks, cpu_reads_this_machines_cpufreq_or_names_the_path) {
  xr_hal_device_t *device = open_device("cpu");
  char dir[128], current[192];
  first_cpu_dir(dir, sizeof dir);
  snprintf(current, sizeof current, "%s/scaling_cur_freq", dir);
  xr_hal_clocks_t clocks;
  memset(&clocks, 0xff, sizeof clocks); /* the call clears what it does not fill */
  xr_status_t status = xr_hal_device_clocks(device, &clocks);
  if (access(current, R_OK) == 0) {
    OK(status);
    cr_assert_gt(clocks.current_mhz, 0);
    cr_assert(strncmp(clocks.source, "cpufreq", 7) == 0, "%s", clocks.source);
    cr_assert(!clocks.throttle_known);
    cr_assert_eq(clocks.throttle_reasons, 0);
  } else {
    cr_assert_eq(status, XR_UNAVAILABLE, "%s", xr_last_error());
    cr_assert(strncmp(xr_last_error(), "cpu:0: clocks: ", 15) == 0, "%s", xr_last_error());
    cr_assert(strstr(xr_last_error(), current), "%s does not name %s", xr_last_error(), current);
    cr_assert(strstr(xr_last_error(), "cpu MHz"), "%s", xr_last_error());
    cr_log_info("%s", xr_last_error());
  }
  xr_hal_device_destroy(device);
}

/* ---- the cpufreq reading, over files written here ---- */

static char root[512];

static void make_root(void) {
  const char *tmp = getenv("TEST_TMPDIR");
  snprintf(root, sizeof root, "%s/cpufreq_%d", tmp ? tmp : "/tmp", (int)getpid());
  cr_assert_eq(mkdir(root, 0700), 0, "mkdir %s", root);
}

static void write_file(const char *name, const char *text) {
  char path[640];
  snprintf(path, sizeof path, "%s/%s", root, name);
  FILE *file = fopen(path, "w");
  cr_assert_not_null(file, "%s", path);
  fputs(text, file);
  fclose(file);
}

static void write_intel_pstate(const char *governor, const char *min_khz, const char *max_khz) {
  write_file("scaling_cur_freq", "2345678\n");
  write_file("cpuinfo_max_freq", "3800000\n");
  write_file("base_frequency", "2100000\n");
  write_file("scaling_min_freq", min_khz);
  write_file("scaling_max_freq", max_khz);
  write_file("scaling_governor", governor);
  write_file("scaling_driver", "intel_pstate\n");
}

Test(cpufreq, values_are_mhz_and_a_range_is_not_locked, .init = make_root) {
  write_intel_pstate("performance\n", "800000\n", "3800000\n");
  xr_hal_clocks_t clocks;
  memset(&clocks, 0, sizeof clocks);
  OK(xr_cpu_clocks_read("cpu:0", root, &clocks));
  cr_assert_eq(clocks.current_mhz, 2346);
  cr_assert_eq(clocks.max_mhz, 3800);
  cr_assert_eq(clocks.default_mhz, 2100);
  cr_assert(!clocks.locked, "performance over a range still follows load and temperature");
  cr_assert_str_eq(clocks.source, "cpufreq intel_pstate, governor performance");
  cr_assert(!clocks.throttle_known);
}

Test(cpufreq, one_allowed_frequency_is_locked, .init = make_root) {
  write_intel_pstate("powersave\n", "2000000\n", "2000000\n");
  xr_hal_clocks_t clocks;
  memset(&clocks, 0, sizeof clocks);
  OK(xr_cpu_clocks_read("cpu:0", root, &clocks));
  cr_assert(clocks.locked);
}

Test(cpufreq, the_userspace_governor_is_locked, .init = make_root) {
  write_intel_pstate("userspace\n", "800000\n", "3800000\n");
  xr_hal_clocks_t clocks;
  memset(&clocks, 0, sizeof clocks);
  OK(xr_cpu_clocks_read("cpu:0", root, &clocks));
  cr_assert(clocks.locked);
}

Test(cpufreq, only_the_current_frequency_is_required, .init = make_root) {
  write_file("scaling_cur_freq", "1000\n");
  xr_hal_clocks_t clocks;
  memset(&clocks, 0, sizeof clocks);
  OK(xr_cpu_clocks_read("cpu:0", root, &clocks));
  cr_assert_eq(clocks.current_mhz, 1);
  cr_assert_eq(clocks.max_mhz, 0);
  cr_assert_eq(clocks.default_mhz, 0);
  cr_assert(!clocks.locked);
  cr_assert_str_eq(clocks.source, "cpufreq, governor unknown");
}

Test(cpufreq, a_missing_or_garbled_current_frequency_is_unavailable, .init = make_root) {
  xr_hal_clocks_t clocks;
  memset(&clocks, 0, sizeof clocks);
  cr_assert_eq(xr_cpu_clocks_read("cpu:0", root, &clocks), XR_UNAVAILABLE);
  char expected[700];
  snprintf(expected, sizeof expected, "cpu:0: clocks: %s/scaling_cur_freq: No such file", root);
  cr_assert(strncmp(xr_last_error(), expected, strlen(expected)) == 0, "%s", xr_last_error());
  write_file("scaling_cur_freq", "fast\n");
  cr_assert_eq(xr_cpu_clocks_read("cpu:0", root, &clocks), XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), "Invalid argument"), "%s", xr_last_error());
}
