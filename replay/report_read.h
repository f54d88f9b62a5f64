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

/* The version of the JSON report written now ("xreplay_report"). Version 1 reports (and those
 * without the field) lack the date, the source trace, the device's peaks and each op's family. */
#define XR_REPORT_VERSION 2

#define XR_REPORT_MAX_SAMPLES 128

/* One op of a report read back. Strings are owned by the report; "" when the report lacks them,
 * numbers NAN (the four that say otherwise aside). */
typedef struct xr_report_entry {
  int64_t index;             /* position in the bundle */
  const char *name;
  const char *outcome;       /* "ok", "failed", "unsupported" */
  const char *message;       /* why it failed or is unsupported */
  const char *kernel;        /* "" when none ran */
  const char *algorithm;     /* what a vendor library chose; "" for our own kernels */
  const cJSON *trace_kernels; /* the trace's kernels: [{"name", "count", "duration_us"}]; NULL */
  const char *args;          /* "self=bf16[16,2048] mat2=..." */
  const char *family;        /* the op family ("gemm") */
  const char *peak_dtype;    /* whose compute peak bounds it ("bf16") */
  const char *bound;         /* "compute", "memory" or "unknown" */
  int iterations;            /* 0 when not timed */
  double median_us;          /* < 0 unless the op succeeded with a timing */
  double min_us, p10_us, p90_us;
  double tflops, gbps, peak_percent;
  double flops, bytes;       /* of one execution */
  double trace_us;           /* < 0 when the bundle recorded none */
  double replay_over_trace;
  const char *stop_reason;      /* why timing stopped ("iterations", "noise", "max-time", ...) */
  const char *launch;           /* "eager", "graph", "held" */
  const char *peak_basis;       /* what peak_percent is of, or why there is none */
  const char *above_ceiling;    /* why peak_percent is above 100; "" when it is not */
  double iqr_us, noise_percent; /* noise: relative stdev of batch means, NAN when unknown */
  int noise_met;                /* 1 met the noise target, 0 not, -1 not recorded */
  int contended;                /* 1 timed mostly on a crowded host, 0 not, -1 not recorded */
  int unstable;              /* 1 noise above the run's unstable_percent, 0 not, -1 not recorded */
  int check_passed;          /* 1 passed, 0 failed, -1 not checked */
  double check_nmse;         /* the worst output's NMSE against the reference */
  double nmse_vs_first;      /* the worst output's NMSE against the run's first HAL */
  bool nonfinite_vs_first;
  double count;              /* calls the trace recorded (1 when the report lacks it) */
  /* The timed samples the report kept (samples_us; every k-th where it holds more than fit),
   * in the order taken; 0 in reports that predate them. */
  int sample_count;
  double samples_us[XR_REPORT_MAX_SAMPLES];
} xr_report_entry_t;

/* A device figure from the report's header: `value` NAN and `source` "" when absent. */
typedef struct xr_report_figure {
  const char *dtype; /* for peak FLOP/s: "fp32", "bf16", ... */
  double value;      /* FLOP/s, or bytes/s for the bandwidth */
  const char *source; /* "datasheet", "estimated", "calibrated" */
} xr_report_figure_t;

#define XR_REPORT_MAX_PEAKS 8

/* The summary's replay_vs_trace: how the run's medians compare with the times the source trace
 * recorded (replay/trace_ratio.h computed them). Strings owned by the report. */
typedef struct xr_report_ratio_op {
  int64_t index; /* position in the bundle */
  const char *name;
  double ratio; /* median / recorded per-call time */
} xr_report_ratio_op_t;

#define XR_REPORT_MAX_WORST 8

typedef struct xr_report_trace_ratio {
  size_t count;             /* ops with a ratio; 0 when the report holds none (figures NAN) */
  bool same_device;         /* the run's device is the model the trace ran on */
  const char *trace_device; /* that model, "" when the bundle did not say */
  double median, geomean;
  double within_10_percent; /* percent of the ops with 0.9 <= ratio <= 1.1 */
  size_t worst_count;       /* furthest from 1 first */
  xr_report_ratio_op_t worst[XR_REPORT_MAX_WORST];
} xr_report_trace_ratio_t;

typedef struct xr_report_contents {
  const char *path;          /* the file read (or the name given to xr_report_from_json) */
  int version;               /* "xreplay_report"; 0 when absent */
  /* The header, "" when absent. */
  const char *bundle, *hal, *device, *driver, *driver_version, *runtime_version, *date;
  const char *source_trace, *source_device; /* where the bundle came from */
  /* The ceilings the report's percentages and bounds use ("ceilings"; older reports: "peaks"),
   * and, when they differ, the figures the device states ("peaks"). */
  xr_report_figure_t bandwidth, cache_bandwidth;
  size_t peak_count;
  xr_report_figure_t peaks[XR_REPORT_MAX_PEAKS];
  xr_report_figure_t stated_bandwidth;
  size_t stated_peak_count;
  xr_report_figure_t stated_peaks[XR_REPORT_MAX_PEAKS];
  const cJSON *options;      /* the run's options object, NULL when absent */
  double bundle_ops;         /* ops in the bundle; NAN when absent (older reports) */
  const char *bundle_hash;   /* xr_bundle_hash of its ops, 16 hex digits; "" when absent */
  /* A sharded run's (replay --shard): shard `index` of `count` (count 0: not sharded) of the
   * `selected` ops its partition was made of, weighed by `weights` ("trace_ns" or "ops"; `load`
   * of `total`), and this shard's ops (positions in the bundle, ascending). */
  struct {
    int64_t index, count, selected;
    const char *weights;
    double load, total;
    size_t op_count;
    int64_t *ops;
  } shard;
  size_t op_count;
  xr_report_entry_t *ops;
  bool finished;             /* the run wrote its summary */
  bool cancelled;            /* ... and was interrupted */
  double total, attempted, succeeded, failed, unsupported; /* the summary's counts, or NAN */
  double trace_total_us, trace_covered_us;
  /* Absent (count 0) in older reports, unfinished runs and runs of bundles without times. */
  xr_report_trace_ratio_t replay_vs_trace;
  cJSON *json;               /* the parsed document, which owns the strings */
} xr_report_contents_t;

/* Reads a JSON report. INVALID_ARGUMENT naming the file and the field when it is not one
 * ("r.json: not a replay report: \"ops\" is not an array", "r.json: ops[3].median_us: not a
 * number"), NOT_FOUND when it cannot be read. Fields a report lacks are left empty: older
 * versions of the tool wrote fewer, and a killed run's report has no summary. */
xr_status_t xr_report_read(const char *path, xr_report_contents_t **out_contents);
/* The same from a parsed document, which it takes over (freed on error too); `name` stands for
 * the file in messages and in contents->path (copied). */
xr_status_t xr_report_from_json(cJSON *json, const char *name, xr_report_contents_t **out_contents);
void xr_report_contents_free(xr_report_contents_t *contents); /* accepts NULL */

/* The entry for op `index` named `name`, or NULL. */
const xr_report_entry_t *xr_report_find(const xr_report_contents_t *contents, int64_t index,
                                        const char *name);

#ifdef __cplusplus
}
#endif
#endif /* XR_REPLAY_REPORT_READ_H */
