/* What norm_bench and reduce_bench share: the device's own device-to-device copy bandwidth, and
 * one op replayed through the engine printed next to it. Not part of the library. */
#ifndef XR_TOOLS_COPY_RATIO_BENCH_H
#define XR_TOOLS_COPY_RATIO_BENCH_H

#include <stddef.h>

/* The best of 7 timed copies of `bytes` (after a warm-up) on `device_spec`, as read + write
 * traffic in GB/s (2 x bytes / time); 0 when the device or a step is unavailable. */
double xr_bench_copy_traffic_gbps(const char *device_spec, size_t bytes);

/* Replays the one-op TraceLens IR `ir` on `device` (2 warm-ups, 15 timed iterations) just after
 * a copy of `copy_bytes`, and prints a row: label (in `width` columns), kernel, best and median
 * us, GB/s of the op's bytes at its best time, the copy's GB/s and the ratio. An op that does
 * not run prints its reason instead. Returns 1 when `ir` does not decode (`tool` names the
 * benchmark in that message), 0 otherwise. */
int xr_bench_copy_ratio_row(const char *tool, const char *device, const char *label, int width,
                            const char *ir, size_t copy_bytes);

#endif
