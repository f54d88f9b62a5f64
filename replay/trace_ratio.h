/* Replayed vs recorded: how the replay's per-op times compare with the per-call GPU times the
 * source trace recorded (xr_op_result_t.trace_us), summed up over a run, and whether the run's
 * device is the model the trace ran on (a ratio near 1 is then expected; across devices the
 * ratios say how the two devices differ, not how faithful the replay is).
 *
 * Pure: no I/O, no device. The engine gathers them per device into its summary
 * (xr_replay_device_t.replay_vs_trace, whose types replay.h declares); the replay command prints
 * them and the reports store them (docs/replay.md, "Replayed vs recorded").
 *
 * Thread-safety: none needed; an accumulator belongs to one caller. */
#ifndef XR_REPLAY_TRACE_RATIO_H
#define XR_REPLAY_TRACE_RATIO_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"
#include "replay/replay.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The ratios of a run (or of one device of it), gathered as its results come. Zero-initialise
 * (or xr_trace_ratios_init), add, compute, free. */
typedef struct xr_trace_ratios {
  size_t count, capacity;
  xr_trace_ratio_op_t *ops;
} xr_trace_ratios_t;

void xr_trace_ratios_init(xr_trace_ratios_t *ratios);
/* Keeps the result's ratio when it succeeded with a median time and has a recorded time (> 0);
 * ignores it otherwise. RESOURCE_EXHAUSTED when out of memory. */
xr_status_t xr_trace_ratios_add(xr_trace_ratios_t *ratios, const xr_op_result_t *result);
/* The statistics of what was added (count 0 when nothing was). RESOURCE_EXHAUSTED when out of
 * memory for sorting. */
xr_status_t xr_trace_ratios_compute(const xr_trace_ratios_t *ratios,
                                    xr_trace_ratio_stats_t *out_stats);
void xr_trace_ratios_free(xr_trace_ratios_t *ratios); /* accepts NULL; leaves it empty */

/* The same in one call, over an array of results (those of one device). */
xr_status_t xr_trace_ratio_stats(const xr_op_result_t *results, size_t count,
                                 xr_trace_ratio_stats_t *out_stats);

/* Whether a device named `device` (the HAL's name: cuDeviceGetName, hipDeviceGetName, the CPU's
 * model) is the same model as `trace_device` (the trace's deviceProperties name). Compared
 * without regard to case and runs of whitespace, ignoring a leading vendor word ("NVIDIA",
 * "AMD") and a trailing "VF" (an SR-IOV virtual function: the whole GPU, as cloud machines
 * expose it, so "AMD Instinct MI300X VF" is an "AMD Instinct MI300X"). Everything else must
 * match: "NVIDIA H100 80GB HBM3" and "NVIDIA H100 PCIe" are different models, as are a MIG
 * slice and its GPU. False when either is NULL or empty. */
bool xr_trace_device_same_model(const char *device, const char *trace_device);

#ifdef __cplusplus
}
#endif
#endif /* XR_REPLAY_TRACE_RATIO_H */
