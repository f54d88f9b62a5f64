/* Replay reports: written as the run goes (.json or .csv) and read back (.json) to compare runs
 * made on different machines. Each finished op is appended and flushed, and a JSON report is a
 * complete document after every op, so a run that is killed keeps everything it measured.
 * docs/replay.md describes the fields. */
#ifndef XR_REPLAY_REPORT_H
#define XR_REPLAY_REPORT_H

#include <cjson/cJSON.h>

#include "replay/replay.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* writing                                                                                     */

typedef struct xr_report xr_report_t;

/* Opens `path` (format from the extension: .json or .csv) for device `device_index` of `run`
 * (what xr_replay_observer_t.started received) and writes the header: the bundle, the device,
 * its driver and runtime versions, the options. */
xr_status_t xr_report_open(const char *path, const char *bundle_path,
                           const xr_replay_summary_t *run, size_t device_index,
                           const xr_replay_options_t *options, xr_report_t **out_report);
xr_status_t xr_report_add(xr_report_t *report, const xr_op_result_t *result);
/* Writes the summary of the report's device (NULL: the run did not finish) and closes; safe
 * with NULL. */
xr_status_t xr_report_close(xr_report_t *report, const xr_replay_summary_t *summary);

/* The JSON object describing one result (also used for --json output). Caller deletes. */
cJSON *xr_result_to_json(const xr_op_result_t *result);

/* ------------------------------------------------------------------------------------------ */
/* reading                                                                                     */

/* One op of a report read back. Strings are owned by the report. */
typedef struct xr_report_entry {
  int64_t index;             /* position in the bundle */
  const char *name;
  const char *outcome;       /* "ok", "failed", "unsupported" */
  const char *kernel;        /* "" when none ran */
  double median_us;          /* < 0 unless the op succeeded with a timing */
  double tflops, gbps, peak_percent;
  double trace_us;           /* < 0 when the bundle recorded none */
} xr_report_entry_t;

typedef struct xr_report_contents {
  const char *bundle, *hal, *device; /* "" when the header lacks them */
  size_t op_count;
  xr_report_entry_t *ops;
  bool finished;             /* the run wrote its summary */
  cJSON *json;               /* the parsed document, which owns the strings */
} xr_report_contents_t;

/* Reads a JSON report. INVALID_ARGUMENT naming the file and the field when it is not one
 * ("r.json: not a replay report: \"ops\" is not an array"), NOT_FOUND when it cannot be read. */
xr_status_t xr_report_read(const char *path, xr_report_contents_t **out_contents);
void xr_report_contents_free(xr_report_contents_t *contents); /* accepts NULL */

/* The entry for op `index` named `name`, or NULL. */
const xr_report_entry_t *xr_report_find(const xr_report_contents_t *contents, int64_t index,
                                        const char *name);

#ifdef __cplusplus
}
#endif
#endif
