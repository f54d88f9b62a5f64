#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity; Bazel's toolchain may already define it */
#endif
#include "hal/drivers/cpu/cpu_clocks.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "hal/core/driver.h"

void xr_cpu_clocks_locate(char *out_dir, size_t capacity) {
  int first = 0;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    while (first < CPU_SETSIZE && !CPU_ISSET(first, &allowed)) first++;
    if (first == CPU_SETSIZE) first = 0;
  }
  snprintf(out_dir, capacity, "/sys/devices/system/cpu/cpu%d/cpufreq", first);
}

/* The first line of dir/name, trailing newline removed; errno's value on failure (0: OK). */
static int read_line(const char *dir, const char *name, char *out, size_t capacity) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *file = fopen(path, "r");
  if (!file) return errno ? errno : ENOENT;
  bool got = fgets(out, (int)capacity, file) != NULL;
  fclose(file);
  if (!got) return EIO;
  out[strcspn(out, "\n")] = '\0';
  return 0;
}

/* A kHz file as MHz; 0 when absent or not a number. */
static uint32_t read_mhz(const char *dir, const char *name) {
  char line[64];
  unsigned long long khz = 0;
  if (read_line(dir, name, line, sizeof line) != 0 || sscanf(line, "%llu", &khz) != 1) return 0;
  return (uint32_t)((khz + 500) / 1000);
}

xr_status_t xr_cpu_clocks_read(const char *spec, const char *cpufreq_dir, xr_hal_clocks_t *out) {
  char line[64];
  unsigned long long current_khz = 0;
  int error = read_line(cpufreq_dir, "scaling_cur_freq", line, sizeof line);
  if (error == 0 && sscanf(line, "%llu", &current_khz) != 1) error = EINVAL;
  if (error != 0) {
    return xr_error(XR_UNAVAILABLE,
                    "%s: clocks: %s/scaling_cur_freq: %s (no cpufreq driver here; virtual machines "
                    "usually have none, and /proc/cpuinfo's \"cpu MHz\" is not used: there it is "
                    "the nominal clock, not the current one)",
                    spec, cpufreq_dir, strerror(error));
  }
  out->current_mhz = (uint32_t)((current_khz + 500) / 1000);
  out->max_mhz = read_mhz(cpufreq_dir, "cpuinfo_max_freq");
  out->default_mhz = read_mhz(cpufreq_dir, "base_frequency");
  uint32_t min_mhz = read_mhz(cpufreq_dir, "scaling_min_freq");
  uint32_t max_allowed_mhz = read_mhz(cpufreq_dir, "scaling_max_freq");
  char governor[64] = "", driver[64] = "";
  if (read_line(cpufreq_dir, "scaling_governor", governor, sizeof governor) != 0) {
    xr_hal_copy_string(governor, sizeof governor, "unknown");
  }
  if (read_line(cpufreq_dir, "scaling_driver", driver, sizeof driver) != 0) driver[0] = '\0';
  out->locked = (min_mhz && min_mhz == max_allowed_mhz) || strcmp(governor, "userspace") == 0;
  snprintf(out->source, sizeof out->source, "cpufreq%s%.20s, governor %.20s", driver[0] ? " " : "",
           driver, governor);
  return XR_OK;
}
