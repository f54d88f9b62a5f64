/* Replay reports: written as the run goes (.json or .csv) and read back (.json) to compare runs
 * made on different machines. Each finished op is appended and flushed, and a JSON report is a
 * complete document after every op, so a run that is killed keeps everything it measured.
 * docs/replay.md describes the fields. Reading them back: replay/report_read.h (included). */
#ifndef XR_REPLAY_REPORT_H
#define XR_REPLAY_REPORT_H

#include <cjson/cJSON.h>

#include "replay/replay.h"
#include "replay/report_read.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* writing                                                                                     */

typedef struct xr_report xr_report_t;

/* Opens `path` (format from the extension: .json or .csv) for device `device_index` of `run`
 * (what xr_replay_observer_t.started received) and writes the header: the bundle and, when
 * `source` (may be NULL) names them, its source trace and that trace's device; the date; the
 * device, its driver and runtime versions and its peak figures with their source; the options.
 * `path` NULL keeps the JSON document in memory instead, for xr_report_close_contents. */
xr_status_t xr_report_open(const char *path, const char *bundle_path,
                           const xr_bundle_metadata_t *source, const xr_replay_summary_t *run,
                           size_t device_index, const xr_replay_options_t *options,
                           xr_report_t **out_report);
xr_status_t xr_report_add(xr_report_t *report, const xr_op_result_t *result);
/* Writes the summary of the report's device (NULL: the run did not finish) and closes; safe
 * with NULL. */
xr_status_t xr_report_close(xr_report_t *report, const xr_replay_summary_t *summary);
/* Closes a report opened with `path` NULL the same way, handing over what xr_report_read would
 * read from its file (`name` stands for the file in messages). */
xr_status_t xr_report_close_contents(xr_report_t *report, const xr_replay_summary_t *summary,
                                     const char *name, xr_report_contents_t **out_contents);

/* ------------------------------------------------------------------------------------------ */
/* merging the reports of a sharded run (replay --shard, `replay merge`)                       */

/* The JSON reports of the shards of one run (replay/shard.h), read back, as one report: the
 * header of shard 0's with "merged" (the partition, and each shard's file, HAL, device, driver,
 * date and op count) in place of "shard", every op once in bundle order with its "shard", and a
 * summary over all of them (counts from the ops' outcomes, replayed vs recorded recomputed).
 * INVALID_ARGUMENT naming the file and the field when they are not the whole of one run: a
 * report that is not a shard's (no "shard" or "bundle_hash"), shards of different bundles
 * (bundle_hash, bundle_ops), partitions (shard.count, .selected, .weights, .total) or options,
 * a shard given twice or missing, an op of a shard's missing from its report (a run that did
 * not finish) or there twice or not its own, shards that overlap, and, unless
 * `allow_mixed_devices`, shards run on different devices (device, driver). The caller deletes
 * the document. */
xr_status_t xr_report_merge(const xr_report_contents_t *const *reports, size_t count,
                            bool allow_mixed_devices, cJSON **out_report);
/* Writes a report document to `path` as a run writes one: one op a line. */
xr_status_t xr_report_write(const char *path, const cJSON *report);

/* The JSON object describing one result (also used for --json output). Caller deletes. */
cJSON *xr_result_to_json(const xr_op_result_t *result);

#ifdef __cplusplus
}
#endif
#endif
