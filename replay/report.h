/* Replay reports (.json or .csv), written as the run goes: each finished op is appended and
 * flushed, and a JSON report is a complete document after every op, so a run that is killed
 * keeps everything it measured. */
#ifndef XR_REPLAY_REPORT_H
#define XR_REPLAY_REPORT_H

#include <cjson/cJSON.h>

#include "replay/replay.h"

typedef struct xr_report xr_report_t;

/* Opens `path` (format from the extension: .json or .csv) and writes the header. */
xr_status_t xr_report_open(const char *path, const char *bundle_path, const char *device_spec,
                           const char *device_name, const xr_replay_options_t *options,
                           xr_report_t **out_report);
xr_status_t xr_report_add(xr_report_t *report, const xr_op_result_t *result);
/* Writes the summary and closes; safe with NULL. */
xr_status_t xr_report_close(xr_report_t *report, const xr_replay_summary_t *summary);

/* The JSON object describing one result (also used for --json output). Caller deletes. */
cJSON *xr_result_to_json(const xr_op_result_t *result);

#endif
