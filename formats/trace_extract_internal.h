/* Trace extraction's records and state, shared by trace_extract.c (reading, attribution to ops,
 * grouping, bundle building) and trace_graph.c (graph replays matched to capture traces).
 * Not part of the public API. */
#ifndef XR_FORMATS_TRACE_EXTRACT_INTERNAL_H
#define XR_FORMATS_TRACE_EXTRACT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/trace_extract.h"

/* Interned strings: op names, kernel names, argument texts, hint keys. */
typedef struct strtab {
  char **strs;
  size_t *lens;
  size_t count, cap;
  uint32_t *slots; /* id + 1; 0 empty */
  size_t slot_cap;
  char *chunk; /* strings live in 1 MiB chunks chained through their first pointer */
  size_t chunk_used, chunk_cap;
} strtab_t;

/* Times are in ns. `source` is 0 for the trace being extracted, s >= 1 for capture trace s. */

typedef struct cpu_op {
  int64_t pid, tid, ts, end;
  uint32_t name;
  int32_t args;  /* interned argument text, -1 when the event recorded none */
  int32_t group; /* -1 not yet seen; -2 no arguments; -3 filtered out; else: eager ops
                    their group, captured ops GROUP_PER_REPLAY */
  int32_t source;
  int32_t last_replay; /* captured ops: the last graph launch that counted an occurrence */
} cpu_op_t;
#define GROUP_PER_REPLAY (-4)

typedef struct launch {
  int64_t corr, pid, tid, ts;
} launch_t;

typedef enum gpu_kind { GPU_KERNEL, GPU_MEMCPY, GPU_MEMSET } gpu_kind_t;

typedef struct gpu_event {
  int64_t ts, dur, corr;
  uint64_t dims; /* hash of grid and block, 0 when not recorded */
  uint32_t name;
  int32_t op;     /* the op credited, -1 none */
  int32_t replay; /* the graph launch it ran under, -1 eager */
  int32_t group;  /* the bundle op it counts in, -1 none */
  uint8_t kind;   /* gpu_kind_t */
} gpu_event_t;

typedef struct graph_launch {
  int64_t corr, pid, tid, ts, end;
  int32_t hints;   /* interned hint key for the hinted ops it replays, -1 none */
  int32_t capture; /* the capture source it was matched to, 0 none */
} graph_launch_t;

/* A kernel launch, memcpy or memset issued while a stream was being captured. */
typedef struct capture_launch {
  int64_t pid, tid, ts;
  uint64_t dims;   /* as gpu_event_t */
  uint32_t kernel; /* interned kernel name (args.kernel), or the empty string when not recorded */
  int32_t op;      /* the innermost op enclosing it, -1 none */
  int32_t source;
  uint8_t kind; /* gpu_kind_t */
  bool in_segment;
} capture_launch_t;

/* cudaStreamBeginCapture (begin) or cudaStreamEndCapture, and the hip spellings. */
typedef struct capture_mark {
  int64_t pid, tid, ts, end;
  int32_t source;
  bool begin;
} capture_mark_t;

/* One stream capture: launches [first, first + count) of the sorted capture launches. */
typedef struct segment {
  size_t first, count;
} segment_t;

typedef struct capture {
  const char *path;
  int64_t batch_size; /* 0 unknown */
  const char *mode;
  size_t first_segment, segment_count;
  size_t cursor;  /* the segment the next graph launch is expected to replay */
  size_t replays; /* graph launches matched to it */
} capture_t;

/* A vLLM / SGLang iteration: prefill seqs and tokens, decode seqs and tokens, their key tokens
 * (-1 when not given). */
typedef struct annotation {
  int64_t pid, ts, end;
  int64_t v[6];
  int32_t hints; /* interned "N,T,M,U,KN,KM" */
} annotation_t;

typedef struct kern {
  uint32_t name;
  int64_t dur, count;
} kern_t;

typedef struct group {
  uint32_t name;
  int32_t args, hints, source;
  int64_t count, gpu_ns;
  size_t first; /* order of appearance, for stable sorting */
  kern_t *k;
  size_t nk, capk;
  bool kept;
} group_t;

#define VEC(T)     \
  struct {         \
    T *v;          \
    size_t n, cap; \
  }

typedef struct ctx {
  const char *name; /* the file being read: the trace, or a capture trace while it is read */
  const char *trace_name;
  const xr_extract_options_t *opt;
  int32_t source; /* of the file being read */
  strtab_t strs;
  VEC(cpu_op_t) ops;
  VEC(launch_t) launches;
  VEC(launch_t) flows;
  VEC(gpu_event_t) gpu;
  VEC(annotation_t) anns;
  VEC(graph_launch_t) graphs;
  VEC(capture_launch_t) claunches;
  VEC(capture_mark_t) marks;
  VEC(segment_t) segments;
  capture_t *captures; /* captures[s - 1] is source s */
  size_t capture_count;
  uint32_t *graph_order; /* GPU events under matched graph launches, launch by launch */
  size_t graph_order_count;
  VEC(group_t) groups;
  uint32_t *gslots;
  size_t gslot_cap;
  char *device_name;
  char *runtime_version;
  char *capture_date;
  int vendor_hint; /* 1 AMD, 2 NVIDIA */
  int64_t world_size; /* distributedInfo.world_size of the trace; 0 when not given */
  int64_t trace_rank; /* distributedInfo.rank, valid with has_trace_rank */
  bool has_trace_rank;
  bool saw_trace_events;
  bool any_concrete_missing;
  xr_extract_summary_t sum;
  /* distinct warnings */
  strtab_t warn;
} ctx_t;

/* Orders threads (source, pid, tid): a capture trace's threads are its own. */
static inline int xr_extract_cmp_thread(int64_t s1, int64_t p1, int64_t t1, int64_t s2, int64_t p2,
                                        int64_t t2) {
  if (s1 != s2) return s1 < s2 ? -1 : 1;
  if (p1 != p2) return p1 < p2 ? -1 : 1;
  if (t1 != t2) return t1 < t2 ? -1 : 1;
  return 0;
}

bool xr_extract_reserve(void **v, size_t *cap, size_t n, size_t elem);
#define VEC_PUSH(vec, item)                                                    \
  (xr_extract_reserve((void **)&(vec).v, &(vec).cap, (vec).n, sizeof *(vec).v) \
       ? ((vec).v[(vec).n++] = (item), true)                                   \
       : false)

/* The id of `s`, added when new; -1 on exhaustion. */
int64_t xr_extract_intern(strtab_t *t, const char *s, size_t n);
xr_status_t xr_extract_oom(const ctx_t *c);
/* A distinct warning for the summary (a lost warning is no reason to fail). */
void xr_extract_warn(ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* qsort that accepts an empty (NULL) array, which C's qsort does not. */
void xr_extract_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
/* The iteration annotation enclosing [ts, end] on `pid` (annotations sorted by start), or NULL. */
const annotation_t *xr_extract_iteration_at(const ctx_t *c, int64_t pid, int64_t ts, int64_t end);
/* The hint key of iteration values "N,T,M,U,KN,KM"; -1 on exhaustion. */
int32_t xr_extract_intern_hints(ctx_t *c, const int64_t v[6]);

/* trace_graph.c. Before attribution: pairs each capture trace's begin/end marks into stream
 * captures and flags the launches inside them (which are then attributed to their ops). */
xr_status_t xr_extract_find_captures(ctx_t *c);
/* After attribution: aligns each graph launch's kernels with a stream capture and credits them
 * to the captured ops (gpu_event_t.op), filling c->graph_order. */
xr_status_t xr_extract_match_graphs(ctx_t *c);

#endif /* XR_FORMATS_TRACE_EXTRACT_INTERNAL_H */
