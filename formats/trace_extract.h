/* Trace extraction: a bundle straight from a PyTorch profiler (Kineto / Chrome) trace.
 *
 * The trace (plain JSON or gzip) is read as a stream; only the events that matter are kept, in
 * compact records: cpu_op events (name, thread, interval, argument text), GPU kernel / memcpy /
 * memset events, runtime launch events, ac2g flow starts, vLLM iteration annotations and the
 * device properties. Each GPU event is followed to its launch through the correlation id (or
 * the ac2g flow with that id), the launch to the innermost cpu_op enclosing it on the same
 * thread (or, with `outermost`, the outermost op with a namespace, "aten::linear" rather than
 * "aten::addmm"). Ops with identical name and recorded arguments become one bundle op with a
 * count and the summed GPU time, heaviest first.
 *
 * Arguments come from "Input Dims", "Input type", "Input Strides" (contiguous when absent) and
 * "Concrete Inputs"; the schema table in trace_schema.c names and types them. String values,
 * which the profiler drops, get their schema default or a known fallback, marked `defaulted`,
 * with a warning in the summary.
 *
 * Collectives: a record_param_comms event's fields ("Collective name", "dtype", "In msg nelems",
 * "Out msg nelems", "Group size", "Rank", split sizes) become the kwargs input, output,
 * collective, group_size, rank (and in_split_sizes / out_split_sizes); c10d ops get group_size
 * from distributedInfo.world_size, which goes to the metadata with the rank. See docs/extract.md
 * "Collectives".
 *
 * Graph-mode traces: kernels replayed from a CUDA/HIP graph hang off one cudaGraphLaunch /
 * hipGraphLaunch and carry no op. Given the capture traces (profiles taken while the graphs were
 * captured, where each op ran once and launched the same kernels in the same order), each
 * graph launch is joined with one stream capture of the right capture trace: by the ordinals of
 * args."graph node id" where both sides record them, else aligned kernel by kernel, by name and
 * position. Each replayed kernel's time is credited to the captured op that launched it. See
 * docs/extract.md "Graph-mode traces".
 *
 * Memory: the records and the unique argument texts; a few tens of bytes per kept event. */
#ifndef XR_FORMATS_TRACE_EXTRACT_H
#define XR_FORMATS_TRACE_EXTRACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/bundle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A trace profiled while CUDA/HIP graphs were captured. */
typedef struct xr_extract_capture {
  const char *path;
  int64_t batch_size; /* the batch the graphs were captured for; 0: from the trace's
                         capture_<N>_<mode> annotation, else unknown */
  const char *mode;   /* "FULL" or "PIECEWISE" (execution_details.json), or NULL */
} xr_extract_capture_t;

typedef struct xr_extract_options {
  bool outermost;         /* attribute GPU work to the outermost namespaced op */
  size_t top;             /* keep the N heaviest ops by GPU time; 0 keeps all */
  const char *op_filter;  /* keep ops whose name (recorded or mapped) contains this; or NULL */
  const xr_extract_capture_t *captures; /* capture traces for the graph launches; or NULL */
  size_t capture_count;
} xr_extract_options_t;

typedef struct xr_extract_summary {
  uint64_t bytes;              /* uncompressed trace bytes parsed */
  size_t events;               /* entries of traceEvents */
  size_t cpu_ops;              /* cpu_op events kept */
  size_t gpu_events;           /* kernel + gpu_memcpy + gpu_memset events */
  size_t launches;             /* runtime events carrying a correlation id */
  size_t gpu_unlinked;         /* GPU events whose correlation id leads nowhere */
  size_t gpu_without_op;       /* linked to a launch outside any cpu_op (e.g. graph replays) */
  size_t gpu_op_no_args;       /* attributed to an op whose event has no recorded inputs */
  size_t ops_bad_args;         /* unique ops skipped: malformed argument arrays */
  size_t ops_unnamed;          /* cpu_op events without a name, skipped */
  size_t ops_filtered;         /* ops dropped: unique ops beyond top, op occurrences by op_filter */
  size_t op_instances;         /* op occurrences behind the bundle's ops */
  size_t unique_ops;           /* ops in the bundle */
  size_t defaulted_args;       /* string arguments filled from defaults */
  size_t graph_launches;       /* cudaGraphLaunch / hipGraphLaunch events */
  size_t graph_launches_matched; /* aligned with a stream capture of a capture trace */
  size_t graph_kernels;        /* GPU events under graph launches */
  size_t graph_kernels_matched; /* credited to a captured launch */
  size_t graph_launches_node_joined; /* matched by "graph node id" ordinals (the first rule) */
  size_t graph_kernels_node_joined;  /* their kernels, each joined to the launch of its ordinal */
  size_t graph_launches_node_declined; /* both sides carry node ids, but the join was declined
                                          (duplicates, counts, names: see the warnings) */
  size_t capture_segments;     /* stream captures found in the capture traces */
  double gpu_busy_us;          /* union of all GPU event intervals */
  double gpu_covered_us;       /* union of the intervals of the kept ops' GPU events */
  double ops_gpu_time_us;      /* sum of the kept ops' GPU time */
  double graph_covered_us;     /* the part of gpu_covered_us measured inside graph replays */
  size_t warning_count;        /* distinct warnings (each line ends without '\n') */
  char **warnings;
} xr_extract_summary_t;

void xr_extract_summary_free(xr_extract_summary_t *summary);

/* Extracts `path` into a new bundle. Errors name the file and the problem ("t.json.gz: byte
 * 1234: unexpected end of input ..."; "x.json: not a trace: no traceEvents array"). Malformed
 * events are skipped and counted in the summary (optional). */
xr_status_t xr_trace_extract(const char *path, const xr_extract_options_t *options,
                             xr_bundle_t **out_bundle, xr_extract_summary_t *out_summary);

/* The capture traces listed in DIR/execution_details.json, as TraceLens' inference tooling
 * writes it: [{"file": "capture_trace_bs_32.json.gz", "batch_size": 32, "mode": "FULL"}, ...].
 * Paths are DIR/file. Errors name the file, the entry and the field, and a listed file that does
 * not exist. Free with xr_extract_captures_free. */
xr_status_t xr_extract_read_capture_dir(const char *dir, xr_extract_capture_t **out_captures,
                                        size_t *out_count);
void xr_extract_captures_free(xr_extract_capture_t *captures, size_t count);

/* The same from a trace held in memory; `name` is used in messages and metadata. Capture traces
 * in `options` are read from their paths. */
xr_status_t xr_trace_extract_memory(const char *data, size_t size, const char *name,
                                    const xr_extract_options_t *options, xr_bundle_t **out_bundle,
                                    xr_extract_summary_t *out_summary);

#ifdef __cplusplus
}
#endif
#endif /* XR_FORMATS_TRACE_EXTRACT_H */
