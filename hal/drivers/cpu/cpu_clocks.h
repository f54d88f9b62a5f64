/* Clocks of the host CPU from cpufreq (/sys/devices/system/cpu/cpuN/cpufreq), for
 * xr_hal_device_clocks on the cpu driver. Internal to hal/; public in hal/BUILD for tests/hal. */
#ifndef XR_HAL_DRIVERS_CPU_CPU_CLOCKS_H
#define XR_HAL_DRIVERS_CPU_CPU_CLOCKS_H

#include <stddef.h>

#include "hal/hal.h"

/* The cpufreq directory of the first CPU this process may run on ("cpu0" when the affinity
 * mask cannot be read). Reads no file. */
void xr_cpu_clocks_locate(char *out_dir, size_t capacity);

/* Reads the clocks from `cpufreq_dir` (all values there are kHz):
 *   current_mhz  scaling_cur_freq (required: without it UNAVAILABLE, naming the path)
 *   max_mhz      cpuinfo_max_freq (0 when absent)
 *   default_mhz  base_frequency, where the driver has one (intel_pstate), else 0
 *   locked       scaling_min_freq == scaling_max_freq (one frequency allowed), or the
 *                "userspace" governor (a frequency set by hand); "performance" alone is not
 *                locked: turbo still follows load and temperature
 *   source       "cpufreq <scaling_driver>, governor <scaling_governor>"
 * cpufreq reports no throttling (throttle_known stays false). /proc/cpuinfo's "cpu MHz" is not
 * a fallback: on virtual machines it is the nominal clock, not what the CPU runs at. `spec`
 * starts the error sentence. Thread-safe. */
xr_status_t xr_cpu_clocks_read(const char *spec, const char *cpufreq_dir, xr_hal_clocks_t *out);

#endif /* XR_HAL_DRIVERS_CPU_CPU_CLOCKS_H */
