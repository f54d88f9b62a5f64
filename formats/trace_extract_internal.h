/* Trace extraction's records, its context and the entry points of its stages. Not part of the
 * public API.
 *
 * xr_trace_extract (trace_extract.c) runs the stages in order over one context, ctx_t:
 *   read     trace_read.c    the trace, then each capture trace, into compact records
 *   captures trace_graph.c   the stream captures in the capture traces
 *   link     trace_link.c    GPU events to their launches, launches to the ops enclosing them
 *   graphs   trace_graph.c   graph launches' kernels to the captured ops that launched them
 *   group    trace_link.c    ops by name, argument text and iteration hints, with their GPU time
 *   build    trace_build.c   one bundle op per group, heaviest first, with its count, timing and
 *                            hints, then busy time and metadata; the op's name and arguments from
 *   args     trace_args.c    its recorded arguments, named and typed by a schema, or from
 *   comms    trace_comms.c   a collective's fields (and a c10d op's group size)
 * trace_strtab.c holds what they all use: the string table, growable arrays, warnings. */
#ifndef XR_FORMATS_TRACE_EXTRACT_INTERNAL_H
#define XR_FORMATS_TRACE_EXTRACT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/trace_extract.h"
#include "formats/trace_json.h"
#include "formats/trace_schema.h"

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
  bool has_node;  /* args."graph node id" recorded and not 0 */
  uint32_t node;  /* that id's ordinal, its low 32 bits (the graph id is above them) */
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
  bool has_node; /* as gpu_event_t: args."graph node id", where the capture trace records it */
  uint32_t node;
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

/* One extraction's state, handed from stage to stage in the order above. Each stage writes the
 * fields under its name and reads those of the stages before it; a field tagged with stages is
 * used by those alone. What one stage alone needs stays in it (build_t, the group index). */
typedef struct ctx {
  const char *name; /* the file being read: the trace, or a capture trace while it is read */
  const xr_extract_options_t *opt;
  strtab_t strs;
  xr_extract_summary_t sum;
  strtab_t warn; /* distinct warnings */
  /* read */
  int32_t source;         /* [read] of the file being read */
  VEC(cpu_op_t) ops;      /* [read, link] */
  VEC(launch_t) launches; /* [read, link] */
  VEC(launch_t) flows;    /* [read, link] */
  VEC(gpu_event_t) gpu;
  VEC(annotation_t) anns; /* sorted by start from link on */
  VEC(graph_launch_t) graphs;
  VEC(capture_launch_t) claunches;
  VEC(capture_mark_t) marks; /* [read, captures] */
  capture_t *captures;       /* captures[s - 1] is source s */
  size_t capture_count;
  char *device_name;        /* [read, build] */
  char *runtime_version;    /* [read, build] */
  char *capture_date;       /* [read, build] */
  int vendor_hint;          /* [read, build] 1 AMD, 2 NVIDIA */
  int64_t world_size;       /* [read, comms, build] distributedInfo.world_size; 0 when not given */
  int64_t trace_rank;       /* [read, build] distributedInfo.rank, valid with has_trace_rank */
  bool has_trace_rank;      /* [read, build] */
  size_t bad_node_ids;      /* [read] events of the file being read whose "graph node id" is bad */
  char bad_node_first[160]; /* [read] the first of them */
  /* captures and graphs */
  VEC(segment_t) segments;
  uint32_t *graph_order; /* GPU events under matched graph launches, launch by launch */
  size_t graph_order_count;
  /* group */
  VEC(group_t) groups;
} ctx_t;

/* Orders threads (source, pid, tid): a capture trace's threads are its own. */
static inline int xr_extract_cmp_thread(int64_t s1, int64_t p1, int64_t t1, int64_t s2, int64_t p2,
                                        int64_t t2) {
  if (s1 != s2) return s1 < s2 ? -1 : 1;
  if (p1 != p2) return p1 < p2 ? -1 : 1;
  if (t1 != t2) return t1 < t2 ? -1 : 1;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* trace_strtab.c: every stage                                                                 */

/* FNV-1a, for the string table and the reader's hashed ids. */
#define XR_EXTRACT_HASH_SEED 1469598103934665603ull
static inline uint64_t xr_extract_hash(const char *s, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

bool xr_extract_reserve(void **v, size_t *cap, size_t n, size_t elem);
#define VEC_PUSH(vec, item)                                                    \
  (xr_extract_reserve((void **)&(vec).v, &(vec).cap, (vec).n, sizeof *(vec).v) \
       ? ((vec).v[(vec).n++] = (item), true)                                   \
       : false)

/* The id of `s`, added when new; -1 on exhaustion. */
int64_t xr_extract_intern(strtab_t *t, const char *s, size_t n);
void xr_extract_strtab_free(strtab_t *t);
xr_status_t xr_extract_oom(const ctx_t *c);
/* A distinct warning for the summary (a lost warning is no reason to fail). */
void xr_extract_warn(ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* qsort that accepts an empty (NULL) array, which C's qsort does not. */
void xr_extract_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* ------------------------------------------------------------------------------------------ */
/* trace_read.c                                                                                */

/* Read: the trace from `r` (named c->name), then each capture trace of c->opt as source 1, 2,
 * ...; writes the records, the trace's properties, c->captures and the summary's counts. */
xr_status_t xr_extract_read(ctx_t *c, xr_jreader_t *r);
/* The hint key of iteration values "N,T,M,U,KN,KM"; -1 on exhaustion. */
int32_t xr_extract_intern_hints(ctx_t *c, const int64_t v[6]);

/* ------------------------------------------------------------------------------------------ */
/* trace_graph.c                                                                               */

/* Captures, before link: pairs each capture trace's begin/end marks into stream captures
 * (c->segments) and flags the launches inside them (which link then attributes to their ops). */
xr_status_t xr_extract_find_captures(ctx_t *c);
/* Graphs, after link: joins each graph launch's kernels with a stream capture's launches (by
 * graph node id ordinal where both carry ids, else by alignment) and credits them to the
 * captured ops (gpu_event_t.op), filling c->graph_order. */
xr_status_t xr_extract_match_graphs(ctx_t *c);

/* ------------------------------------------------------------------------------------------ */
/* trace_link.c                                                                                */

/* Link: each GPU event to its launch and the op enclosing that (gpu_event_t.op) or to its graph
 * launch (gpu_event_t.replay), each launch inside a stream capture to its op
 * (capture_launch_t.op); sorts launches, flows and graph launches by correlation id and the
 * annotations by start. */
xr_status_t xr_extract_link(ctx_t *c);
/* Group: credits each GPU event that has an op (eager ones, then c->graph_order) to the op's
 * group, filling c->groups and gpu_event_t.group. */
xr_status_t xr_extract_group(ctx_t *c);
/* The iteration annotation enclosing [ts, end] on `pid` (annotations sorted by start), or NULL. */
const annotation_t *xr_extract_iteration_at(const ctx_t *c, int64_t pid, int64_t ts, int64_t end);

/* ------------------------------------------------------------------------------------------ */
/* the op builders: trace_args.c, trace_comms.c, called by trace_build.c                       */

/* A group's argument text, parsed. */
typedef struct jnode {
  xr_jtok_t kind; /* OBJECT_BEGIN / ARRAY_BEGIN for containers */
  char *text;
  char *key;
  size_t n;
  struct jnode *items;
} jnode_t;

/* The build stage's own state: the bundle being built, handed to the op builders. */
typedef struct build {
  ctx_t *c;
  xr_bundle_t *b;
  const xr_schema_t *schemas; /* the built-in schemas, parsed */
  size_t schema_count;
  const char *op_name;       /* the op being built, for warnings */
  bool any_concrete_missing; /* an op's event recorded no Concrete Inputs */
} build_t;

/* Reads group `g`'s argument text into `out_root` (freed again on failure). */
xr_status_t xr_extract_args_parse(ctx_t *c, const group_t *g, jnode_t *out_root);
const jnode_t *xr_extract_dom_get(const jnode_t *obj, const char *key);
void xr_extract_dom_free(jnode_t *n);
/* Drops the spaces around `s[0, n)`. */
void xr_extract_trim(const char **s, size_t *n);
/* Args: appends the op of group `g` from its recorded arguments `root` ({"d":..,"t":..,"s":..,
 * "c":..}), named and typed by the first schema in B that fits, arguments and values only. Bad
 * arguments: a warning, sum.ops_bad_args and no op (*out_op NULL). */
xr_status_t xr_extract_args_op(build_t *B, const group_t *g, const jnode_t *root, xr_op_t **out_op);

/* The fields of a collective that Kineto writes into a record_param_comms event's args (see
 * docs/extract.md "Collectives"), kept as recorded by read and re-read by comms. */
enum {
  CM_COLLECTIVE,
  CM_DTYPE,
  CM_IN_NELEMS,
  CM_OUT_NELEMS,
  CM_GROUP_SIZE,
  CM_RANK,
  CM_IN_SPLIT,
  CM_OUT_SPLIT,
  CM_STRIDE,
  CM_COUNT
};
extern const char *const xr_extract_comms_keys[CM_COUNT];
extern const char xr_extract_comms_op_name[]; /* "record_param_comms" */

/* Comms: appends the record_param_comms op of group `g` from its fields `m` (the "m" object of
 * its argument text), arguments only. Bad fields: a warning, sum.ops_bad_args and no op. */
xr_status_t xr_extract_comms_op(build_t *B, const group_t *g, const jnode_t *m, xr_op_t **out_op);
/* A collective that records no group size gets the trace's world size (c->world_size), marked
 * defaulted, or a warning when there is none. */
xr_status_t xr_extract_comms_group_size(build_t *B, xr_op_t *op);

/* ------------------------------------------------------------------------------------------ */
/* trace_build.c                                                                               */

/* Build: one op per group into `b`, heaviest first (c->opt->top of them when set; group_t.kept
 * marks them), with its count, timing and hints; then the summary's busy and covered time and
 * b's metadata. */
xr_status_t xr_extract_build(ctx_t *c, xr_bundle_t *b);

#endif /* XR_FORMATS_TRACE_EXTRACT_INTERNAL_H */
