/* Replay reports read back: the .json reports of runs made elsewhere, for `replay compare`. Only
 * cJSON and base: reading another lab's report needs no engine. */
#ifndef XR_REPLAY_REPORT_READ_H
#define XR_REPLAY_REPORT_READ_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

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
#endif /* XR_REPLAY_REPORT_READ_H */
