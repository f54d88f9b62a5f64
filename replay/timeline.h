/* --timeline: the run's own events as Chrome trace-event JSON (what Perfetto and
 * chrome://tracing open), written by the engine as the run goes (docs/replay.md, "Timeline").
 * One process per device, one thread per stream; per op and device an "op" event spanning its
 * work, "warmup" events for its untimed first call and warm-up, and a "timed" event per sample.
 * Like a JSON report, the file is a complete document after every op, so an interrupted or
 * killed run leaves everything it finished readable. Internal to the engine: options.timeline
 * is the interface. Every function accepts a NULL timeline and does nothing. */
#ifndef XR_REPLAY_TIMELINE_H
#define XR_REPLAY_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>

#include "replay/replay.h"

typedef struct xr_timeline xr_timeline_t;

/* Creates `path` (a valid, empty trace at once) and starts its clock: ts 0 is this call.
 * INVALID_ARGUMENT naming the file when it cannot be created. At most `events_per_op` timed
 * events are kept per op and device; the op's event counts the rest. */
xr_status_t xr_timeline_open(const char *path, int events_per_op, xr_timeline_t **out);

/* Once the devices are open: the file's head (otherData: the clocks, the cap, each device) and
 * a process per device with its stream's thread. */
xr_status_t xr_timeline_start(xr_timeline_t *t, const xr_replay_summary_t *run,
                              const xr_bundle_metadata_t *source);

/* Microseconds of CLOCK_MONOTONIC since xr_timeline_open: every event's ts. */
double xr_timeline_now_us(const xr_timeline_t *t);

/* Op work on device `device_index` starts now; what follows until xr_timeline_op_end is its. */
void xr_timeline_op_begin(xr_timeline_t *t, size_t device_index);

/* An untimed part, timed by the host: "first call" (the execution that is checked) or
 * "warm-up" (`executions` of them); `cold` in a --cache=cold pass. */
void xr_timeline_warmup(xr_timeline_t *t, const char *what, double ts_us, double end_us,
                        int executions, bool cold);

/* One timed sample as the device timed it: `executions` back to back (1 eager; a graph
 * launch's N), sample number `sample` of its pass, in batch `batch` (the samples queued behind
 * one host wait); `crowded` when the host was crowded while that batch ran. */
typedef struct xr_timeline_sample {
  double ts_us, dur_us;
  int sample, batch, executions;
  bool crowded, cold;
} xr_timeline_sample_t;

/* Whether another sample would be kept (under the cap): the engine reads no extra device
 * events for one that would not. Counts it as left out when not. */
bool xr_timeline_wants_sample(xr_timeline_t *t);
void xr_timeline_sample(xr_timeline_t *t, const xr_timeline_sample_t *sample);

/* A timing pass ended: its crowded samples were set aside by the statistics unless the pass
 * was `contended` (then all of them count, as in xr_op_result_t). */
void xr_timeline_pass_end(xr_timeline_t *t, bool contended);

/* The op ended with `result`: its events (named after the op, with its index, argument
 * summary and implementation) are written and the document completed again, in one write.
 * DATA_LOSS, naming the file, when that fails: the file is cut back to the document before it
 * and the timeline writes nothing more. */
xr_status_t xr_timeline_op_end(xr_timeline_t *t, const xr_op_result_t *result);

/* Closes the file (complete after the last op already); the status of the last write. */
xr_status_t xr_timeline_close(xr_timeline_t *t);

#endif
