/* A history of runs (`replay --db=FILE`, `replay history`, `replay regress`): each run's report
 * recorded in a local SQLite database, one row per run and device and one per op result, read
 * back as history lines or as a report for report_compare.h. Only report_read.h and SQLite: the
 * history needs no engine.
 *
 * Several processes may record into one file at once (the tasks of a Slurm job array on one
 * machine): the database is in WAL mode, a writer waits up to XR_HISTORY_BUSY_MS for another,
 * and each call of xr_history_record is one transaction (BEGIN IMMEDIATE ... COMMIT), so that a
 * process killed while it writes leaves the runs recorded before it whole and none of its own.
 * WAL needs the writers to share one machine's memory: not a network filesystem's file written
 * from several machines. */
#ifndef XR_REPLAY_HISTORY_H
#define XR_REPLAY_HISTORY_H

#include <stdbool.h>
#include <stdint.h>

#include "replay/report_read.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The schema's version (PRAGMA user_version); a file of a later one is refused, not guessed. */
#define XR_HISTORY_SCHEMA 1
/* How long a writer waits for another before giving up: a run's rows take milliseconds, so
 * this only runs out when hundreds of tasks finish at once. */
#define XR_HISTORY_BUSY_MS 60000

typedef struct xr_history xr_history_t;

/* Opens the history at `path`. With `write`, creates the file and its tables when absent (an
 * empty file is taken as a new database); without, it must exist. INVALID_ARGUMENT naming the
 * file when it is not a SQLite database, is another program's, or is of a later schema;
 * NOT_FOUND when it does not exist and `write` is false; UNAVAILABLE when it cannot be opened. */
xr_status_t xr_history_open(const char *path, bool write, xr_history_t **out_history);
void xr_history_close(xr_history_t *history); /* accepts NULL */
const char *xr_history_path(const xr_history_t *history);

/* Records the reports of one command, one per device (xr_report_close_contents), as `count`
 * runs in one transaction, with `host` (the machine's name). out_run_ids[k]: the id of report
 * k's run. The runs share an invocation, the id of the first. */
xr_status_t xr_history_record(xr_history_t *history, const xr_report_contents_t *const *reports,
                              size_t count, const char *host, int64_t *out_run_ids);

/* A run as the runs table holds it. Strings "" when the report lacked them. */
typedef struct xr_history_run {
  int64_t id;
  int64_t invocation;  /* the first run of the command that recorded it */
  const char *date;    /* when the run started, UTC: 2026-12-01T21:23:25Z */
  const char *bundle, *bundle_hash;
  const char *hal, *device, *driver, *driver_version, *runtime_version;
  const char *options; /* the report's options, as JSON */
  const char *host;
  bool finished, cancelled; /* the report's summary was written; SIGINT or SIGTERM stopped it */
  int64_t ops, succeeded;   /* results recorded; those with outcome ok */
} xr_history_run_t;

/* Which runs and ops a listing takes; NULL members take all. */
typedef struct xr_history_filter {
  const char *op_filter;   /* ops whose name contains it (as replay's --op-filter) */
  const char *device;      /* runs whose device name or HAL contains it */
  const char *bundle_hash; /* runs of the bundles whose hash starts with it */
} xr_history_filter_t;

/* Calls `fn` for each run that `filter` takes (its op_filter aside), oldest first (by date,
 * then id); stops early when `fn` returns false. The run's strings live for the call. */
xr_status_t xr_history_runs(xr_history_t *history, const xr_history_filter_t *filter,
                            bool (*fn)(void *context, const xr_history_run_t *run),
                            void *context);

/* One op's result in one run. Ops are identified as report_compare.h pairs them: by position
 * within one bundle, by signature (name and args, the k-th of a signature with the k-th) across
 * bundles; `op` numbers them in the order of their first position. */
typedef struct xr_history_result {
  size_t op;
  const xr_history_run_t *run;
  const xr_report_entry_t *entry; /* as a report read back gives it (no check fields) */
} xr_history_result_t;

/* Calls `fn` for each result of the runs and ops `filter` takes, op by op, and within an op run
 * by run, oldest first; stops early when `fn` returns false. */
xr_status_t xr_history_results(xr_history_t *history, const xr_history_filter_t *filter,
                               bool (*fn)(void *context, const xr_history_result_t *result),
                               void *context);

/* The id of the last run recorded; NOT_FOUND when the history holds none. */
xr_status_t xr_history_latest(xr_history_t *history, int64_t *out_run);

/* Run `run` as a report read back (for xr_report_compare), named "FILE: run N" in messages;
 * NOT_FOUND naming the run when there is none. */
xr_status_t xr_history_report(xr_history_t *history, int64_t run,
                              xr_report_contents_t **out_contents);

#ifdef __cplusplus
}
#endif
#endif /* XR_REPLAY_HISTORY_H */
