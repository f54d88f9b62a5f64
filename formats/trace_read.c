/* Trace extraction, stage 1: reading. Streams the trace, then each capture trace, once, and keeps
 * compact records of the events that matter: cpu_ops with their interned argument text (a
 * collective's fields as recorded), GPU kernels, memcpys and memsets, runtime launches, ac2g
 * flow starts, vLLM / SGLang iteration annotations and, in a capture trace, the stream captures'
 * begin and end marks and the launches issued while capturing; also the trace's device, runtime,
 * capture date and distributedInfo. Counts what it read and skipped in the summary. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/trace_extract_internal.h"
#include "formats/trace_json.h"

/* Times beyond +-146 years saturate: a trace is data, and no conversion may overflow. Within
 * the limit, ts + dur (each at most the limit) is exact. */
#define NS_LIMIT 4.6e18

static int64_t to_ns(double us) {
  double ns = us * 1000.0;
  if (!(ns > -NS_LIMIT)) return -(int64_t)NS_LIMIT; /* also NaN */
  if (ns >= NS_LIMIT) return (int64_t)NS_LIMIT;
  return (int64_t)llround(ns);
}

static int64_t add_ns(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

/* ------------------------------------------------------------------------------------------ */
/* streaming: one event                                                                        */

enum { CAT_UNKNOWN, CAT_OTHER, CAT_CPU_OP, CAT_ANNOT, CAT_GPU, CAT_RUNTIME, CAT_FLOW };

typedef struct event {
  xr_jbuf_t name, d, t, s, c, kernel, tmp;
  xr_jbuf_t cm[CM_COUNT];
  bool has_cm[CM_COUNT];
  int cat;
  char ph;
  int64_t pid, tid, id, corr;
  int64_t dims[6]; /* grid, block */
  uint64_t node;   /* args."graph node id", valid with has_node */
  double ts, dur;
  bool has_pid, has_tid, has_ts, has_dur, has_id, has_corr;
  bool has_d, has_t, has_s, has_c, has_kernel, has_grid, has_block, has_node;
} event_t;

/* The event's end: ts + dur, saturating; a negative duration counts as none. */
static int64_t end_ns(int64_t ts, const event_t *e) {
  int64_t dur = e->has_dur ? to_ns(e->dur) : 0;
  return add_ns(ts, dur > 0 ? dur : 0);
}

static int classify_cat(const char *cat) {
  if (strcmp(cat, "cpu_op") == 0) return CAT_CPU_OP;
  if (strcmp(cat, "kernel") == 0 || strcmp(cat, "gpu_memcpy") == 0 ||
      strcmp(cat, "gpu_memset") == 0 || strcmp(cat, "Kernel") == 0 || strcmp(cat, "Memcpy") == 0 ||
      strcmp(cat, "Memset") == 0)
    return CAT_GPU;
  if (strcmp(cat, "cuda_runtime") == 0 || strcmp(cat, "cuda_driver") == 0 ||
      strcmp(cat, "Runtime") == 0)
    return CAT_RUNTIME;
  if (strcmp(cat, "ac2g") == 0) return CAT_FLOW;
  if (strcmp(cat, "user_annotation") == 0) return CAT_ANNOT;
  return CAT_OTHER;
}

/* The next value's text when it is a number or a string; *text NULL (and the value skipped)
 * otherwise. */
static xr_status_t next_scalar(xr_jreader_t *r, const char **text, size_t *n) {
  *text = NULL;
  xr_jtok_t t;
  xr_status_t st = xr_jreader_next(r, &t);
  if (st != XR_OK) return st;
  if (t == XR_JTOK_OBJECT_BEGIN || t == XR_JTOK_ARRAY_BEGIN) return xr_jreader_skip_rest(r);
  if (t == XR_JTOK_NUMBER || t == XR_JTOK_STRING) *text = xr_jreader_text(r, n);
  return XR_OK;
}

/* A number or a numeric string; strings that are no number hash to a negative id (pids such as
 * "Spans" never hold cpu ops, so collisions do not matter). */
static xr_status_t read_int_like(xr_jreader_t *r, int64_t *out, bool *has) {
  const char *s;
  size_t n;
  xr_status_t st = next_scalar(r, &s, &n);
  if (st != XR_OK || !s) return st;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (n && *end == '\0' && isfinite(v)) {
    *out = v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
    if (fabs(v) < 9e15) { /* exact for integers written as such */
      long long i = strtoll(s, &end, 10);
      if (*end == '\0') *out = i;
    }
  } else {
    *out = -(int64_t)(xr_extract_hash(s, n, XR_EXTRACT_HASH_SEED) >> 2) - 1;
  }
  *has = true;
  return XR_OK;
}

static xr_status_t read_double(xr_jreader_t *r, double *out, bool *has) {
  const char *s;
  xr_status_t st = next_scalar(r, &s, NULL);
  if (st != XR_OK || !s) return st;
  char *end;
  double v = strtod(s, &end);
  if (*end == '\0' && end != s && isfinite(v)) {
    *out = v;
    *has = true;
  }
  return XR_OK;
}

static xr_status_t read_string_into(xr_jreader_t *r, xr_jbuf_t *out, bool *ok) {
  xr_jtok_t t;
  xr_status_t st = xr_jreader_next(r, &t);
  if (st != XR_OK) return st;
  if (t == XR_JTOK_OBJECT_BEGIN || t == XR_JTOK_ARRAY_BEGIN) return xr_jreader_skip_rest(r);
  if (t != XR_JTOK_STRING) return XR_OK;
  size_t n;
  const char *s = xr_jreader_text(r, &n);
  xr_jbuf_clear(out);
  if (!xr_jbuf_append(out, s, n)) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  if (ok) *ok = true;
  return XR_OK;
}

/* "grid": [x, y, z] (or "block"): three non-negative integers, else not recorded. */
static xr_status_t read_dim3(xr_jreader_t *r, int64_t out[3], bool *has) {
  xr_jtok_t t;
  xr_status_t st = xr_jreader_next(r, &t);
  if (st != XR_OK) return st;
  if (t == XR_JTOK_OBJECT_BEGIN) return xr_jreader_skip_rest(r);
  if (t != XR_JTOK_ARRAY_BEGIN) return XR_OK;
  size_t n = 0;
  bool ok = true;
  for (;;) {
    if ((st = xr_jreader_next(r, &t)) != XR_OK) return st;
    if (t == XR_JTOK_ARRAY_END) break;
    if (t == XR_JTOK_OBJECT_BEGIN || t == XR_JTOK_ARRAY_BEGIN) {
      if ((st = xr_jreader_skip_rest(r)) != XR_OK) return st;
      ok = false;
      continue;
    }
    char *end;
    long long v = t == XR_JTOK_NUMBER ? strtoll(xr_jreader_text(r, NULL), &end, 10) : -1;
    if (t != XR_JTOK_NUMBER || *end != '\0' || v < 0 || n >= 3) ok = false;
    else out[n] = v;
    n++;
  }
  *has = ok && n == 3;
  return XR_OK;
}

/* args."graph node id": Kineto writes CUPTI's graphNodeId as an unsigned JSON number on kernel,
 * memcpy and memset activities (0 outside graph launches, read as none). A numeric string is
 * read too; anything else is counted, the first named in a warning once the file is read. */
static xr_status_t read_node_id(ctx_t *c, xr_jreader_t *r, event_t *e) {
  xr_jtok_t t;
  xr_status_t st = xr_jreader_next(r, &t);
  if (st != XR_OK) return st;
  const char *why = NULL, *s = "";
  size_t n = 0;
  const char *q = t == XR_JTOK_STRING ? "\"" : "";
  if (t == XR_JTOK_OBJECT_BEGIN || t == XR_JTOK_ARRAY_BEGIN) {
    if ((st = xr_jreader_skip_rest(r)) != XR_OK) return st;
    why = t == XR_JTOK_OBJECT_BEGIN ? "an object" : "a list";
  } else if (t != XR_JTOK_NUMBER && t != XR_JTOK_STRING) {
    why = "not a number";
  } else {
    s = xr_jreader_text(r, &n);
    bool digits = n > 0 && n <= 20;
    for (size_t i = 0; digits && i < n; i++) digits = s[i] >= '0' && s[i] <= '9';
    errno = 0;
    unsigned long long v = digits ? strtoull(s, NULL, 10) : 0;
    if (!digits || errno == ERANGE) {
      why = "not a non-negative integer below 2^64";
    } else {
      e->node = v;
      e->has_node = v != 0;
      return XR_OK;
    }
  }
  if (c->bad_node_ids++ == 0)
    snprintf(c->bad_node_first, sizeof c->bad_node_first, "traceEvents[%zu]: %s%.40s%s%s%s",
             c->sum.events - 1, q, s, q, n ? " is " : "", why);
  return XR_OK;
}

static xr_status_t read_args(ctx_t *c, xr_jreader_t *r, event_t *e) {
  xr_jtok_t t;
  xr_status_t st = xr_jreader_next(r, &t);
  if (st != XR_OK) return st;
  if (t == XR_JTOK_ARRAY_BEGIN) return xr_jreader_skip_rest(r);
  if (t != XR_JTOK_OBJECT_BEGIN) return XR_OK;
  for (;;) {
    if ((st = xr_jreader_next(r, &t)) != XR_OK) return st;
    if (t == XR_JTOK_OBJECT_END) return XR_OK;
    const char *k = xr_jreader_text(r, NULL);
    bool launch_info = e->cat == CAT_GPU || e->cat == CAT_RUNTIME || e->cat == CAT_UNKNOWN;
    if (strcmp(k, "correlation") == 0) {
      st = read_int_like(r, &e->corr, &e->has_corr);
    } else if (launch_info && strcmp(k, "grid") == 0) {
      st = read_dim3(r, e->dims, &e->has_grid);
    } else if (launch_info && strcmp(k, "block") == 0) {
      st = read_dim3(r, e->dims + 3, &e->has_block);
    } else if (launch_info && strcmp(k, "kernel") == 0) { /* the kernel a runtime call launched */
      st = read_string_into(r, &e->kernel, &e->has_kernel);
    } else if (launch_info && strcmp(k, "graph node id") == 0) {
      st = read_node_id(c, r, e);
    } else if (e->cat == CAT_CPU_OP || e->cat == CAT_UNKNOWN) {
      xr_jbuf_t *dst = NULL;
      bool *flag = NULL;
      if (strcmp(k, "Input Dims") == 0) dst = &e->d, flag = &e->has_d;
      else if (strcmp(k, "Input type") == 0) dst = &e->t, flag = &e->has_t;
      else if (strcmp(k, "Input Strides") == 0) dst = &e->s, flag = &e->has_s;
      else if (strcmp(k, "Concrete Inputs") == 0) dst = &e->c, flag = &e->has_c;
      for (int f = 0; !dst && f < CM_COUNT; f++)
        if (strcmp(k, xr_extract_comms_keys[f]) == 0) dst = &e->cm[f], flag = &e->has_cm[f];
      if (dst) {
        xr_jbuf_clear(dst);
        st = xr_jreader_capture(r, dst);
        *flag = true;
      } else {
        st = xr_jreader_skip(r);
      }
    } else {
      st = xr_jreader_skip(r);
    }
    if (st != XR_OK) return st;
  }
}

/* vLLM / SGLang iteration annotations:
 *   execute_context_N(T)_generation_M(U)
 *   execute_K_context_N(sqT sk.. ...)_generation_M(sqU skV ...)
 * Returns false when `name` is not one. */
static bool parse_iteration(const char *name, int64_t v[6]) {
  if (strncmp(name, "execute", 7) != 0) return false;
  const char *parts[2] = {strstr(name, "_context_"), strstr(name, "_generation_")};
  if (!parts[0] || !parts[1]) return false;
  const char *skip[2] = {"_context_", "_generation_"};
  for (int i = 0; i < 2; i++) {
    const char *p = parts[i] + strlen(skip[i]);
    char *end;
    long long seqs = strtoll(p, &end, 10);
    if (end == p || *end != '(') return false;
    p = end + 1;
    long long tokens = -1, kv = -1;
    if (*p == 's') { /* sqT skK sqsqX sqskY: sums of query and key lengths */
      if (strncmp(p, "sq", 2) != 0) return false;
      tokens = strtoll(p + 2, &end, 10);
      if (end == p + 2) return false;
      if (strncmp(end, "sk", 2) == 0) kv = strtoll(end + 2, &end, 10);
    } else {
      tokens = strtoll(p, &end, 10);
      if (end == p) return false;
    }
    /* Counts no server reaches (2^40) mean the name is not an iteration; below that, sums of
     * them cannot overflow. */
    const long long limit = 1ll << 40;
    if (seqs < 0 || seqs > limit || tokens < 0 || tokens > limit || kv < -1 || kv > limit)
      return false;
    v[i * 2] = seqs;
    v[i * 2 + 1] = tokens;
    v[4 + i] = kv;
  }
  return true;
}

/* The hint key of an iteration's values: "N,T,M,U,KN,KM". */
int32_t xr_extract_intern_hints(ctx_t *c, const int64_t v[6]) {
  char key[160];
  snprintf(key, sizeof key, "%lld,%lld,%lld,%lld,%lld,%lld", (long long)v[0], (long long)v[1],
           (long long)v[2], (long long)v[3], (long long)v[4], (long long)v[5]);
  return (int32_t)xr_extract_intern(&c->strs, key, strlen(key));
}

/* SGLang's profiler wraps ops as "sglang_profiler::<name>_<layer index>": one op per name, as
 * TraceLens reads them. */
static size_t op_name_length(const char *name, size_t n) {
  static const char prefix[] = "sglang_profiler::";
  if (n <= sizeof prefix || strncmp(name, prefix, sizeof prefix - 1) != 0) return n;
  size_t i = n;
  while (i > sizeof prefix - 1 && isdigit((unsigned char)name[i - 1])) i--;
  return i < n && name[i - 1] == '_' && i - 1 > sizeof prefix - 1 ? i - 1 : n;
}

/* Grid and block as one hash (never 0), or 0 when either was not recorded. */
static uint64_t dims_hash(const event_t *e) {
  if (!e->has_grid || !e->has_block) return 0;
  uint64_t h = XR_EXTRACT_HASH_SEED;
  for (int i = 0; i < 6; i++) h = (h ^ (uint64_t)e->dims[i]) * 1099511628211ull;
  return h | 1;
}

static gpu_kind_t launch_kind(const char *name) {
  if (strstr(name, "Memcpy")) return GPU_MEMCPY;
  if (strstr(name, "Memset")) return GPU_MEMSET;
  return GPU_KERNEL;
}

static gpu_kind_t gpu_event_kind(const char *name) {
  if (strncmp(name, "Memcpy", 6) == 0) return GPU_MEMCPY;
  if (strncmp(name, "Memset", 6) == 0 || strstr(name, "fillBuffer")) return GPU_MEMSET;
  return GPU_KERNEL;
}

/* A capture trace's runtime event: the stream capture's begin or end, or a launch, memcpy or
 * memset issued while capturing. */
static xr_status_t store_capture_runtime(ctx_t *c, const event_t *e) {
  const char *name = e->name.data ? e->name.data : "";
  if (!e->has_ts || !e->has_pid || !e->has_tid) return XR_OK;
  int64_t ts = to_ns(e->ts), end = end_ns(ts, e);
  bool begin = strstr(name, "BeginCapture") != NULL;
  if (begin || strstr(name, "EndCapture")) {
    capture_mark_t m = {.pid = e->pid, .tid = e->tid, .ts = ts, .end = end, .source = c->source,
                        .begin = begin};
    return VEC_PUSH(c->marks, m) ? XR_OK : xr_extract_oom(c);
  }
  bool launch = strstr(name, "Launch") && !strstr(name, "GraphLaunch") && !strstr(name, "HostFunc");
  if (!launch && !strstr(name, "Memcpy") && !strstr(name, "Memset")) return XR_OK;
  capture_launch_t l = {.pid = e->pid, .tid = e->tid, .ts = ts, .dims = dims_hash(e), .op = -1,
                        .source = c->source, .kind = (uint8_t)launch_kind(name),
                        .has_node = e->has_node, .node = e->has_node ? (uint32_t)e->node : 0};
  const char *kernel = e->has_kernel && e->kernel.data ? e->kernel.data : "";
  int64_t id = xr_extract_intern(&c->strs, kernel, strlen(kernel));
  if (id < 0) return xr_extract_oom(c);
  l.kernel = (uint32_t)id;
  return VEC_PUSH(c->claunches, l) ? XR_OK : xr_extract_oom(c);
}

/* "capture_<N>_<mode>", the annotation vLLM / SGLang profiling hooks put around a capture. */
static void note_capture_annotation(ctx_t *c, const char *name) {
  capture_t *cap = &c->captures[c->source - 1];
  if (cap->batch_size || strncmp(name, "capture_", 8) != 0) return;
  char *end;
  long long n = strtoll(name + 8, &end, 10);
  if (end != name + 8 && *end == '_' && n > 0 && n <= (1ll << 40)) cap->batch_size = n;
}

static xr_status_t store_event(ctx_t *c, event_t *e) {
  bool capture = c->source > 0;
  switch (e->cat) {
    case CAT_CPU_OP: {
      if (e->ph != 'X' || !e->has_ts || !e->has_pid || !e->has_tid) return XR_OK;
      /* The name ends at a NUL a \u0000 escape wrote: bundles hold names as C strings. */
      const char *n = e->name.data ? e->name.data : "";
      size_t length = strnlen(n, e->name.len);
      if (!length) { /* no name, no op: its launches belong to the op around it */
        c->sum.ops_unnamed++;
        return XR_OK;
      }
      cpu_op_t op = {.pid = e->pid, .tid = e->tid, .ts = to_ns(e->ts), .args = -1, .group = -1,
                     .source = c->source, .last_replay = -1};
      op.end = end_ns(op.ts, e);
      int64_t name = xr_extract_intern(&c->strs, n, op_name_length(n, length));
      if (name < 0) return xr_extract_oom(c);
      op.name = (uint32_t)name;
      if (e->has_cm[CM_COLLECTIVE] || strcmp(n, xr_extract_comms_op_name) == 0) {
        /* A collective: its fields as recorded, {"m":{"Collective name":..,"dtype":..,..}}
         * (the Input Dims of record_param_comms are the same tensors again). */
        xr_jbuf_t *b = &e->tmp;
        xr_jbuf_clear(b);
        bool ok = xr_jbuf_append(b, "{\"m\":{", 6);
        const char *sep = "\"";
        for (int f = 0; ok && f < CM_COUNT; f++) {
          if (!e->has_cm[f]) continue;
          ok = xr_jbuf_append(b, sep, strlen(sep)) &&
               xr_jbuf_append(b, xr_extract_comms_keys[f], strlen(xr_extract_comms_keys[f])) &&
               xr_jbuf_append(b, "\":", 2) && xr_jbuf_append(b, e->cm[f].data, e->cm[f].len);
          sep = ",\"";
        }
        ok = ok && xr_jbuf_append(b, "}}", 2);
        int64_t id = ok ? xr_extract_intern(&c->strs, b->data, b->len) : -1;
        if (id < 0) return xr_extract_oom(c);
        op.args = (int32_t)id;
      } else if (e->has_d && e->has_t) {
        /* One text per distinct argument list: {"d":..,"t":..,"s":..,"c":..}. */
        xr_jbuf_t *b = &e->tmp;
        xr_jbuf_clear(b);
        bool ok = xr_jbuf_append(b, "{\"d\":", 5) && xr_jbuf_append(b, e->d.data, e->d.len) &&
                  xr_jbuf_append(b, ",\"t\":", 5) && xr_jbuf_append(b, e->t.data, e->t.len);
        if (ok && e->has_s)
          ok = xr_jbuf_append(b, ",\"s\":", 5) && xr_jbuf_append(b, e->s.data, e->s.len);
        if (ok && e->has_c)
          ok = xr_jbuf_append(b, ",\"c\":", 5) && xr_jbuf_append(b, e->c.data, e->c.len);
        ok = ok && xr_jbuf_append(b, "}", 1);
        int64_t id = ok ? xr_extract_intern(&c->strs, b->data, b->len) : -1;
        if (id < 0) return xr_extract_oom(c);
        op.args = (int32_t)id;
      }
      if (!VEC_PUSH(c->ops, op)) return xr_extract_oom(c);
      c->sum.cpu_ops++;
      return XR_OK;
    }
    case CAT_GPU: {
      /* A capture trace's own GPU work ran eagerly around the capture: not the workload. */
      if (capture || e->ph != 'X' || !e->has_ts) return XR_OK;
      int64_t ts = to_ns(e->ts);
      gpu_event_t g = {.ts = ts, .dur = end_ns(ts, e) - ts,
                       .corr = e->has_corr ? e->corr : INT64_MIN, .dims = dims_hash(e), .op = -1,
                       .replay = -1, .group = -1};
      const char *n = e->name.data ? e->name.data : "";
      int64_t name = xr_extract_intern(&c->strs, n, e->name.len);
      if (name < 0) return xr_extract_oom(c);
      g.name = (uint32_t)name;
      g.kind = (uint8_t)gpu_event_kind(n);
      g.has_node = e->has_node;
      g.node = e->has_node ? (uint32_t)e->node : 0; /* the ordinal: the low 32 bits */
      if (!VEC_PUSH(c->gpu, g)) return xr_extract_oom(c);
      c->sum.gpu_events++;
      return XR_OK;
    }
    case CAT_RUNTIME: {
      if (capture) return store_capture_runtime(c, e);
      if (!e->has_corr || !e->has_ts || !e->has_pid || !e->has_tid) return XR_OK;
      if (e->name.data && strstr(e->name.data, "GraphLaunch")) {
        int64_t ts = to_ns(e->ts);
        graph_launch_t gl = {.corr = e->corr, .pid = e->pid, .tid = e->tid, .ts = ts,
                             .end = end_ns(ts, e), .hints = -1};
        if (!VEC_PUSH(c->graphs, gl)) return xr_extract_oom(c);
        c->sum.graph_launches++;
        return XR_OK;
      }
      launch_t l = {.corr = e->corr, .pid = e->pid, .tid = e->tid, .ts = to_ns(e->ts)};
      if (!VEC_PUSH(c->launches, l)) return xr_extract_oom(c);
      c->sum.launches++;
      return XR_OK;
    }
    case CAT_FLOW: {
      if (capture || e->ph != 's' || !e->has_id || !e->has_ts || !e->has_pid || !e->has_tid)
        return XR_OK;
      launch_t l = {.corr = e->id, .pid = e->pid, .tid = e->tid, .ts = to_ns(e->ts)};
      if (!VEC_PUSH(c->flows, l)) return xr_extract_oom(c);
      return XR_OK;
    }
    case CAT_ANNOT: {
      if (capture && e->name.data) note_capture_annotation(c, e->name.data);
      int64_t v[6];
      if (capture || !e->has_ts || !e->has_pid || !e->name.data ||
          !parse_iteration(e->name.data, v))
        return XR_OK;
      annotation_t a = {.pid = e->pid, .ts = to_ns(e->ts)};
      memcpy(a.v, v, sizeof a.v);
      if ((a.hints = xr_extract_intern_hints(c, v)) < 0) return xr_extract_oom(c);
      a.end = end_ns(a.ts, e);
      if (!VEC_PUSH(c->anns, a)) return xr_extract_oom(c);
      return XR_OK;
    }
    default:
      return XR_OK;
  }
}

/* `t` is the event's first token, already read. */
static xr_status_t read_event(ctx_t *c, xr_jreader_t *r, event_t *e, xr_jtok_t t) {
  xr_status_t st = XR_OK;
  c->sum.events++;
  if (t != XR_JTOK_OBJECT_BEGIN) {
    if (t == XR_JTOK_ARRAY_BEGIN) st = xr_jreader_skip_rest(r);
    if (st != XR_OK) return st;
    return xr_jreader_fail(r, XR_INVALID_ARGUMENT,
                           "not a trace: traceEvents[%zu] is not an object", c->sum.events - 1);
  }
  e->cat = CAT_UNKNOWN;
  e->ph = 0;
  e->has_pid = e->has_tid = e->has_ts = e->has_dur = e->has_id = e->has_corr = false;
  e->has_d = e->has_t = e->has_s = e->has_c = false;
  memset(e->has_cm, 0, sizeof e->has_cm);
  e->has_kernel = e->has_grid = e->has_block = e->has_node = false;
  xr_jbuf_clear(&e->name);
  for (;;) {
    if ((st = xr_jreader_next(r, &t)) != XR_OK) return st;
    if (t == XR_JTOK_OBJECT_END) break;
    const char *k = xr_jreader_text(r, NULL);
    switch (k[0]) {
      case 'p':
        if (strcmp(k, "ph") == 0) {
          bool ok = false;
          if ((st = read_string_into(r, &e->tmp, &ok)) == XR_OK && ok) e->ph = e->tmp.data[0];
        } else if (strcmp(k, "pid") == 0) {
          st = read_int_like(r, &e->pid, &e->has_pid);
        } else {
          st = xr_jreader_skip(r);
        }
        break;
      case 'c':
        if (strcmp(k, "cat") == 0) {
          bool ok = false;
          if ((st = read_string_into(r, &e->tmp, &ok)) == XR_OK)
            e->cat = ok ? classify_cat(e->tmp.data) : CAT_OTHER;
        } else {
          st = xr_jreader_skip(r);
        }
        break;
      case 'n':
        if (strcmp(k, "name") == 0 && e->cat != CAT_OTHER) st = read_string_into(r, &e->name, NULL);
        else st = xr_jreader_skip(r);
        break;
      case 't':
        if (strcmp(k, "tid") == 0) st = read_int_like(r, &e->tid, &e->has_tid);
        else if (strcmp(k, "ts") == 0) st = read_double(r, &e->ts, &e->has_ts);
        else st = xr_jreader_skip(r);
        break;
      case 'd':
        if (strcmp(k, "dur") == 0) st = read_double(r, &e->dur, &e->has_dur);
        else st = xr_jreader_skip(r);
        break;
      case 'i':
        if (strcmp(k, "id") == 0) st = read_int_like(r, &e->id, &e->has_id);
        else st = xr_jreader_skip(r);
        break;
      case 'a':
        /* Arguments of uninteresting categories are skipped unread when the category came
         * first, as Kineto writes it. */
        if (strcmp(k, "args") == 0 && e->cat != CAT_OTHER && e->cat != CAT_ANNOT &&
            e->cat != CAT_FLOW)
          st = read_args(c, r, e);
        else
          st = xr_jreader_skip(r);
        break;
      default:
        st = xr_jreader_skip(r);
    }
    if (st != XR_OK) return st;
  }
  if (e->cat == CAT_UNKNOWN) return XR_OK;
  return store_event(c, e);
}

static xr_status_t read_device_properties(ctx_t *c, xr_jreader_t *r) {
  xr_jtok_t t;
  xr_status_t st = xr_jreader_next(r, &t);
  if (st != XR_OK) return st;
  if (t == XR_JTOK_OBJECT_BEGIN) return xr_jreader_skip_rest(r);
  if (t != XR_JTOK_ARRAY_BEGIN) return XR_OK;
  for (;;) {
    if ((st = xr_jreader_next(r, &t)) != XR_OK) return st;
    if (t == XR_JTOK_ARRAY_END) return XR_OK;
    if (t == XR_JTOK_ARRAY_BEGIN) {
      if ((st = xr_jreader_skip_rest(r)) != XR_OK) return st;
      continue;
    }
    if (t != XR_JTOK_OBJECT_BEGIN) continue;
    for (;;) {
      if ((st = xr_jreader_next(r, &t)) != XR_OK) return st;
      if (t == XR_JTOK_OBJECT_END) break;
      if (strcmp(xr_jreader_text(r, NULL), "name") == 0 && !c->device_name) {
        xr_jbuf_t b = {0};
        bool ok = false;
        st = read_string_into(r, &b, &ok);
        /* An empty name records nothing: a later device's may. */
        if (ok && b.data && b.data[0]) c->device_name = b.data;
        else xr_jbuf_free(&b);
      } else {
        st = xr_jreader_skip(r);
      }
      if (st != XR_OK) return st;
    }
  }
}

/* An integer written as a JSON number or a numeric string. false (the value skipped) for
 * anything else: a fraction, an exponent, a word, an object. */
static xr_status_t read_exact_int(xr_jreader_t *r, int64_t *out, bool *ok, char *text,
                                  size_t text_size) {
  xr_jtok_t t;
  *ok = false;
  snprintf(text, text_size, "not a number");
  xr_status_t st = xr_jreader_next(r, &t);
  if (st != XR_OK) return st;
  if (t == XR_JTOK_OBJECT_BEGIN || t == XR_JTOK_ARRAY_BEGIN) return xr_jreader_skip_rest(r);
  if (t != XR_JTOK_NUMBER && t != XR_JTOK_STRING) return XR_OK;
  const char *s = xr_jreader_text(r, NULL);
  snprintf(text, text_size, "%s%.40s%s", t == XR_JTOK_STRING ? "\"" : "", s,
           t == XR_JTOK_STRING ? "\"" : "");
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*s && *end == '\0' && errno == 0) {
    *out = v;
    *ok = true;
  }
  return XR_OK;
}

/* distributedInfo: {"backend": "nccl", "rank": 0, "world_size": 8, ...}. The trace's own; a
 * capture trace's is read but not used. A value that is no valid count is left out with a
 * warning. */
static xr_status_t read_distributed_info(ctx_t *c, xr_jreader_t *r) {
  xr_jtok_t t;
  xr_status_t st = xr_jreader_next(r, &t);
  if (st != XR_OK) return st;
  if (t == XR_JTOK_ARRAY_BEGIN) return xr_jreader_skip_rest(r);
  if (t != XR_JTOK_OBJECT_BEGIN) return XR_OK;
  int64_t world = 0, rank = 0;
  bool has_world = false, has_rank = false, ok;
  char text[64];
  for (;;) {
    if ((st = xr_jreader_next(r, &t)) != XR_OK) return st;
    if (t == XR_JTOK_OBJECT_END) break;
    const char *k = xr_jreader_text(r, NULL);
    bool is_world = strcmp(k, "world_size") == 0;
    if (is_world || strcmp(k, "rank") == 0) {
      if ((st = read_exact_int(r, is_world ? &world : &rank, &ok, text, sizeof text)) != XR_OK)
        return st;
      if (is_world && !(ok && world > 0))
        xr_extract_warn(c,
                        "%s: distributedInfo.world_size (%s) is not a positive integer: "
                        "ignored",
                        c->name, text);
      else if (!is_world && !(ok && rank >= 0))
        xr_extract_warn(c, "%s: distributedInfo.rank (%s) is not a non-negative integer: ignored",
                        c->name, text);
      if (is_world)
        has_world = ok && world > 0;
      else
        has_rank = ok && rank >= 0;
    } else if ((st = xr_jreader_skip(r)) != XR_OK) {
      return st;
    }
  }
  if (c->source > 0) return XR_OK;
  if (has_world) c->world_size = world;
  if (has_rank && has_world && rank >= world) {
    xr_extract_warn(c, "%s: distributedInfo.rank %lld is not below world_size %lld: ignored",
                    c->name, (long long)rank, (long long)world);
    has_rank = false;
  }
  c->trace_rank = rank;
  c->has_trace_rank = has_rank;
  return XR_OK;
}

static void format_runtime(ctx_t *c, const char *key, double v) {
  if (c->runtime_version || !(v > 0 && v < 1e12)) return; /* not a version number */
  char buf[64];
  long long x = (long long)v;
  if (strcmp(key, "hip_runtime_version") == 0) /* HIP_VERSION: major*1e7 + minor*1e5 + patch */
    snprintf(buf, sizeof buf, "HIP %lld.%lld.%lld", x / 10000000, (x / 100000) % 100, x % 100000);
  else /* CUDART_VERSION: major*1000 + minor*10 */
    snprintf(buf, sizeof buf, "CUDA %lld.%lld", x / 1000, (x % 1000) / 10);
  c->runtime_version = strdup(buf);
}

/* The elements of traceEvents, up to and including the closing bracket. */
static xr_status_t read_events(ctx_t *c, xr_jreader_t *r, event_t *e) {
  for (;;) {
    xr_jtok_t t;
    xr_status_t st = xr_jreader_next(r, &t);
    if (st != XR_OK) return st;
    if (t == XR_JTOK_ARRAY_END) return XR_OK;
    if ((st = read_event(c, r, e, t)) != XR_OK) return st;
  }
}

static xr_status_t read_trace(ctx_t *c, xr_jreader_t *r) {
  event_t e = {0};
  bool saw_events = false;
  xr_jtok_t t;
  xr_status_t st = xr_jreader_next(r, &t);
  if (st != XR_OK) goto done;
  if (t == XR_JTOK_ARRAY_BEGIN) { /* the bare array form of the Chrome trace format */
    saw_events = true;
    if ((st = read_events(c, r, &e)) != XR_OK) goto done;
  } else if (t != XR_JTOK_OBJECT_BEGIN) {
    st = xr_error(XR_INVALID_ARGUMENT, "%s: not a trace: the top level is not a JSON object",
                  c->name);
    goto done;
  } else {
    for (;;) {
      if ((st = xr_jreader_next(r, &t)) != XR_OK) goto done;
      if (t == XR_JTOK_OBJECT_END) break;
      const char *k = xr_jreader_text(r, NULL);
      if (strcmp(k, "traceEvents") == 0) {
        if ((st = xr_jreader_next(r, &t)) != XR_OK) goto done;
        if (t != XR_JTOK_ARRAY_BEGIN) {
          st = xr_jreader_fail(r, XR_INVALID_ARGUMENT, "not a trace: traceEvents is not an array");
          goto done;
        }
        saw_events = true;
        st = read_events(c, r, &e);
      } else if (strcmp(k, "deviceProperties") == 0) {
        st = read_device_properties(c, r);
      } else if (strcmp(k, "distributedInfo") == 0) {
        st = read_distributed_info(c, r);
      } else if (strcmp(k, "hip_runtime_version") == 0 ||
                 strcmp(k, "cuda_runtime_version") == 0) {
        bool hip = k[0] == 'h'; /* k dies with the next token */
        double v = 0;
        bool has = false;
        st = read_double(r, &v, &has);
        if (has) format_runtime(c, hip ? "hip_runtime_version" : "cuda", v);
        c->vendor_hint = hip ? 1 : 2;
      } else if (strcmp(k, "roctracer_version") == 0) {
        c->vendor_hint = 1;
        st = xr_jreader_skip(r);
      } else if (strcmp(k, "cupti_version") == 0) {
        c->vendor_hint = 2;
        st = xr_jreader_skip(r);
      } else if (strcmp(k, "baseTimeNanoseconds") == 0) {
        double v = 0;
        bool has = false;
        st = read_double(r, &v, &has);
        if (has && v > 0 && v < 1e19 && !c->capture_date) {
          time_t secs = (time_t)(v / 1e9);
          struct tm tm;
          char buf[32];
          if (gmtime_r(&secs, &tm) && strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm))
            c->capture_date = strdup(buf);
        }
      } else {
        st = xr_jreader_skip(r);
      }
      if (st != XR_OK) goto done;
    }
  }
  if ((st = xr_jreader_next(r, &t)) != XR_OK) goto done;
  if (c->bad_node_ids)
    xr_extract_warn(c,
                    "%s: %zu events' args.\"graph node id\" is not a graph node id (first, %s): "
                    "ignored, those events are joined by kernel names and position",
                    c->name, c->bad_node_ids, c->bad_node_first);
  c->bad_node_ids = 0;
  if (!saw_events)
    st = xr_error(XR_INVALID_ARGUMENT, "%s: not a trace: no traceEvents array", c->name);
done:
  xr_jbuf_free(&e.name);
  xr_jbuf_free(&e.d);
  xr_jbuf_free(&e.t);
  xr_jbuf_free(&e.s);
  xr_jbuf_free(&e.c);
  xr_jbuf_free(&e.kernel);
  xr_jbuf_free(&e.tmp);
  for (int f = 0; f < CM_COUNT; f++) xr_jbuf_free(&e.cm[f]);
  c->sum.bytes += xr_jreader_offset(r);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* the trace, then its capture traces                                                          */

/* Each capture trace, read into the same records as source 1, 2, ...; c->name is `trace_name`
 * again once all are read. */
static xr_status_t read_captures(ctx_t *c, const char *trace_name) {
  size_t n = c->opt->capture_count;
  if (!n) return XR_OK;
  if (!c->opt->captures)
    return xr_error(XR_INVALID_ARGUMENT, "xr_trace_extract: capture_count %zu without captures", n);
  if (n > INT32_MAX) return xr_error(XR_INVALID_ARGUMENT, "xr_trace_extract: %zu captures", n);
  if (!(c->captures = calloc(n, sizeof *c->captures))) return xr_extract_oom(c);
  c->capture_count = n;
  xr_status_t st = XR_OK;
  for (size_t i = 0; st == XR_OK && i < n; i++) {
    const xr_extract_capture_t *in = &c->opt->captures[i];
    if (!in->path || !*in->path)
      return xr_error(XR_INVALID_ARGUMENT, "xr_trace_extract: capture %zu has no path", i);
    if (in->batch_size < 0 || in->batch_size > (1ll << 40))
      return xr_error(XR_INVALID_ARGUMENT, "%s: batch size %lld is out of range", in->path,
                      (long long)in->batch_size);
    c->captures[i] = (capture_t){.path = in->path, .batch_size = in->batch_size, .mode = in->mode};
    xr_jreader_t *r;
    if ((st = xr_jreader_open_path(in->path, &r)) != XR_OK) return st;
    c->source = (int32_t)(i + 1);
    c->name = in->path;
    st = read_trace(c, r);
    xr_jreader_close(r);
  }
  c->source = 0;
  c->name = trace_name;
  return st;
}

xr_status_t xr_extract_read(ctx_t *c, xr_jreader_t *r) {
  const char *trace_name = c->name;
  xr_status_t st = read_trace(c, r);
  if (st == XR_OK) st = read_captures(c, trace_name);
  return st;
}
