/* Trace extraction: see trace_extract.h for what it does.
 *
 * Phases: (1) stream the trace once, keeping compact records and interning repeated strings
 * (op names, kernel names, argument texts); (2) link GPU events to launches by correlation id
 * (ac2g flow starts as fallback); (3) attribute launches to enclosing cpu_ops with one sweep per
 * thread over ops sorted by start; (4) group by (name, argument text, iteration hints); (5) build
 * bundle ops, parsing each unique argument text once. */
#include "formats/trace_extract.h"
#include "formats/trace_extract_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/trace_json.h"
#include "formats/trace_schema.h"

/* ------------------------------------------------------------------------------------------ */
/* string interning                                                                            */

static uint64_t hash_bytes(const char *s, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}
#define HASH_SEED 1469598103934665603ull

static void strtab_free(strtab_t *t) {
  char *c = t->chunk;
  while (c) {
    char *next;
    memcpy(&next, c, sizeof next);
    free(c);
    c = next;
  }
  free(t->strs);
  free(t->lens);
  free(t->slots);
  memset(t, 0, sizeof *t);
}

static char *strtab_store(strtab_t *t, const char *s, size_t n) {
  size_t need = n + 1;
  if (!t->chunk || t->chunk_used + need > t->chunk_cap) {
    size_t cap = sizeof(char *) + (need > (1u << 20) ? need : (1u << 20));
    char *c = malloc(cap);
    if (!c) return NULL;
    memcpy(c, &t->chunk, sizeof(char *));
    t->chunk = c;
    t->chunk_used = sizeof(char *);
    t->chunk_cap = cap;
  }
  char *d = t->chunk + t->chunk_used;
  memcpy(d, s, n);
  d[n] = '\0';
  t->chunk_used += need;
  return d;
}

static bool strtab_grow(strtab_t *t) {
  size_t cap = t->slot_cap ? t->slot_cap * 2 : 1024;
  uint32_t *slots = calloc(cap, sizeof *slots);
  if (!slots) return false;
  for (size_t i = 0; i < t->count; i++) {
    size_t j = hash_bytes(t->strs[i], t->lens[i], HASH_SEED) & (cap - 1);
    while (slots[j]) j = (j + 1) & (cap - 1);
    slots[j] = (uint32_t)i + 1;
  }
  free(t->slots);
  t->slots = slots;
  t->slot_cap = cap;
  return true;
}

int64_t xr_extract_intern(strtab_t *t, const char *s, size_t n) {
  if ((t->count + 1) * 2 > t->slot_cap && !strtab_grow(t)) return -1;
  size_t j = hash_bytes(s, n, HASH_SEED) & (t->slot_cap - 1);
  while (t->slots[j]) {
    uint32_t id = t->slots[j] - 1;
    if (t->lens[id] == n && memcmp(t->strs[id], s, n) == 0) return id;
    j = (j + 1) & (t->slot_cap - 1);
  }
  if (t->count == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    char **strs = realloc(t->strs, cap * sizeof *strs);
    if (!strs) return -1;
    t->strs = strs;
    size_t *lens = realloc(t->lens, cap * sizeof *lens);
    if (!lens) return -1;
    t->lens = lens;
    t->cap = cap;
  }
  char *d = strtab_store(t, s, n);
  if (!d) return -1;
  t->strs[t->count] = d;
  t->lens[t->count] = n;
  t->slots[j] = (uint32_t)t->count + 1;
  return (int64_t)t->count++;
}

bool xr_extract_reserve(void **v, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return true;
  size_t c = *cap ? *cap * 2 : 256;
  void *p = realloc(*v, c * elem);
  if (!p) return false;
  *v = p;
  *cap = c;
  return true;
}

xr_status_t xr_extract_oom(const ctx_t *c) {
  return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory while extracting", c->name);
}

void xr_extract_warn(ctx_t *c, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  xr_extract_intern(&c->warn, msg, strlen(msg)); /* a lost warning is no reason to fail */
}

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

/* The fields of a collective that Kineto writes into a record_param_comms event's args (see
 * docs/extract.md "Collectives"), kept as recorded and re-read when the op is built. */
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
static const char *const comms_keys[CM_COUNT] = {
    "Collective name", "dtype",          "In msg nelems",
    "Out msg nelems",  "Group size",     "Rank",
    "In split size",   "Out split size", "Global rank stride",
};
static const char comms_op_name[] = "record_param_comms";

typedef struct event {
  xr_jbuf_t name, d, t, s, c, kernel, tmp;
  xr_jbuf_t cm[CM_COUNT];
  bool has_cm[CM_COUNT];
  int cat;
  char ph;
  int64_t pid, tid, id, corr;
  int64_t dims[6]; /* grid, block */
  double ts, dur;
  bool has_pid, has_tid, has_ts, has_dur, has_id, has_corr;
  bool has_d, has_t, has_s, has_c, has_kernel, has_grid, has_block;
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

/* A number or a numeric string; strings that are no number hash to a negative id (pids such as
 * "Spans" never hold cpu ops, so collisions do not matter). */
static xr_status_t read_int_like(xr_jreader_t *r, int64_t *out, bool *has) {
  xr_jtok_t t;
  xr_status_t st = xr_jreader_next(r, &t);
  if (st != XR_OK) return st;
  if (t == XR_JTOK_OBJECT_BEGIN || t == XR_JTOK_ARRAY_BEGIN) return xr_jreader_skip_rest(r);
  if (t != XR_JTOK_NUMBER && t != XR_JTOK_STRING) return XR_OK;
  size_t n;
  const char *s = xr_jreader_text(r, &n);
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
    *out = -(int64_t)(hash_bytes(s, n, HASH_SEED) >> 2) - 1;
  }
  *has = true;
  return XR_OK;
}

static xr_status_t read_double(xr_jreader_t *r, double *out, bool *has) {
  xr_jtok_t t;
  xr_status_t st = xr_jreader_next(r, &t);
  if (st != XR_OK) return st;
  if (t == XR_JTOK_OBJECT_BEGIN || t == XR_JTOK_ARRAY_BEGIN) return xr_jreader_skip_rest(r);
  if (t != XR_JTOK_NUMBER && t != XR_JTOK_STRING) return XR_OK;
  char *end;
  const char *s = xr_jreader_text(r, NULL);
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

static xr_status_t read_args(xr_jreader_t *r, event_t *e) {
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
    } else if (e->cat == CAT_CPU_OP || e->cat == CAT_UNKNOWN) {
      xr_jbuf_t *dst = NULL;
      bool *flag = NULL;
      if (strcmp(k, "Input Dims") == 0) dst = &e->d, flag = &e->has_d;
      else if (strcmp(k, "Input type") == 0) dst = &e->t, flag = &e->has_t;
      else if (strcmp(k, "Input Strides") == 0) dst = &e->s, flag = &e->has_s;
      else if (strcmp(k, "Concrete Inputs") == 0) dst = &e->c, flag = &e->has_c;
      for (int f = 0; !dst && f < CM_COUNT; f++)
        if (strcmp(k, comms_keys[f]) == 0) dst = &e->cm[f], flag = &e->has_cm[f];
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

static bool is_hinted_op(const char *name) {
  return strstr(name, "paged_attention") || strstr(name, "unified_attention") ||
         strstr(name, "attention_with_output");
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
  uint64_t h = HASH_SEED;
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
                        .source = c->source, .kind = (uint8_t)launch_kind(name)};
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
      if (e->has_cm[CM_COLLECTIVE] || strcmp(n, comms_op_name) == 0) {
        /* A collective: its fields as recorded, {"m":{"Collective name":..,"dtype":..,..}}
         * (the Input Dims of record_param_comms are the same tensors again). */
        xr_jbuf_t *b = &e->tmp;
        xr_jbuf_clear(b);
        bool ok = xr_jbuf_append(b, "{\"m\":{", 6);
        const char *sep = "\"";
        for (int f = 0; ok && f < CM_COUNT; f++) {
          if (!e->has_cm[f]) continue;
          ok = xr_jbuf_append(b, sep, strlen(sep)) &&
               xr_jbuf_append(b, comms_keys[f], strlen(comms_keys[f])) &&
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
  e->has_kernel = e->has_grid = e->has_block = false;
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
          st = read_args(r, e);
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
        if (ok) c->device_name = b.data;
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
  xr_jtok_t t;
  xr_status_t st = xr_jreader_next(r, &t);
  if (st != XR_OK) goto done;
  if (t == XR_JTOK_ARRAY_BEGIN) { /* the bare array form of the Chrome trace format */
    c->saw_trace_events = true;
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
        c->saw_trace_events = true;
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
  if (!c->saw_trace_events)
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
/* linking and attribution                                                                     */

void xr_extract_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  if (n > 1) qsort(base, n, size, cmp);
}

static int cmp_launch(const void *a, const void *b) {
  const launch_t *x = a, *y = b;
  return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static const launch_t *find_launch(const launch_t *v, size_t n, int64_t corr) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].corr < corr) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && v[lo].corr == corr ? &v[lo] : NULL;
}

static int cmp_graph_corr(const void *a, const void *b) {
  const graph_launch_t *x = a, *y = b;
  return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static int32_t find_graph(const ctx_t *c, int64_t corr) {
  size_t lo = 0, hi = c->graphs.n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c->graphs.v[mid].corr < corr) lo = mid + 1;
    else hi = mid;
  }
  return lo < c->graphs.n && c->graphs.v[lo].corr == corr ? (int32_t)lo : -1;
}

/* A launch point to attribute: an eager GPU event's launch, or a launch inside a stream
 * capture. */
typedef struct query {
  int64_t source, pid, tid, ts;
  int32_t *slot; /* receives the op index */
  bool gpu;      /* counts in gpu_without_op when no op encloses it */
} query_t;

static int cmp_query(const void *a, const void *b) {
  const query_t *x = a, *y = b;
  int t = xr_extract_cmp_thread(x->source, x->pid, x->tid, y->source, y->pid, y->tid);
  if (t) return t;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Parents before children: by thread, start, then longer first (qsort_r: no global state). */
static int cmp_op_index(const void *a, const void *b, void *base) {
  const cpu_op_t *ops = base;
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  const cpu_op_t *x = &ops[i], *y = &ops[j];
  int t = xr_extract_cmp_thread(x->source, x->pid, x->tid, y->source, y->pid, y->tid);
  if (t) return t;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  if (x->end != y->end) return x->end > y->end ? -1 : 1;
  return i < j ? -1 : i > j;
}

static int op_vs_query(const cpu_op_t *o, const query_t *q) {
  return xr_extract_cmp_thread(o->source, o->pid, o->tid, q->source, q->pid, q->tid);
}

/* Links each GPU event to its launch: a graph launch (replay set, matched later) or an eager
 * launch, which becomes a query. */
static size_t link_gpu_events(ctx_t *c, query_t *qs) {
  size_t nq = 0;
  for (size_t i = 0; i < c->gpu.n; i++) {
    gpu_event_t *g = &c->gpu.v[i];
    if (g->corr == INT64_MIN) {
      c->sum.gpu_unlinked++;
      continue;
    }
    int32_t graph = find_graph(c, g->corr);
    if (graph >= 0) {
      g->replay = graph;
      c->sum.graph_kernels++;
      continue;
    }
    const launch_t *l = find_launch(c->launches.v, c->launches.n, g->corr);
    if (!l) l = find_launch(c->flows.v, c->flows.n, g->corr);
    if (!l) {
      c->sum.gpu_unlinked++;
      continue;
    }
    qs[nq++] = (query_t){.pid = l->pid, .tid = l->tid, .ts = l->ts, .slot = &g->op, .gpu = true};
  }
  return nq;
}

static xr_status_t attribute(ctx_t *c) {
  xr_extract_sort(c->launches.v, c->launches.n, sizeof *c->launches.v, cmp_launch);
  xr_extract_sort(c->flows.v, c->flows.n, sizeof *c->flows.v, cmp_launch);
  xr_extract_sort(c->graphs.v, c->graphs.n, sizeof *c->graphs.v, cmp_graph_corr);
  size_t max_queries = c->gpu.n + c->claunches.n;
  query_t *qs = malloc((max_queries ? max_queries : 1) * sizeof *qs);
  uint32_t *order = malloc((c->ops.n ? c->ops.n : 1) * sizeof *order);
  uint32_t *stack = malloc((c->ops.n ? c->ops.n : 1) * sizeof *stack);
  if (!qs || !order || !stack) {
    free(qs), free(order), free(stack);
    return xr_extract_oom(c);
  }
  size_t nq = link_gpu_events(c, qs);
  for (size_t i = 0; i < c->claunches.n; i++) {
    capture_launch_t *l = &c->claunches.v[i];
    if (l->in_segment)
      qs[nq++] = (query_t){.source = l->source, .pid = l->pid, .tid = l->tid, .ts = l->ts,
                           .slot = &l->op};
  }
  xr_extract_sort(qs, nq, sizeof *qs, cmp_query);
  for (size_t i = 0; i < c->ops.n; i++) order[i] = (uint32_t)i;
  if (c->ops.n > 1) qsort_r(order, c->ops.n, sizeof *order, cmp_op_index, c->ops.v);

  /* One sweep: ops enter the stack in start order; an op leaves once a later op or query starts
   * after its end. The stack then holds exactly the ops enclosing the query, outermost first. */
  size_t oi = 0, depth = 0;
  for (size_t qi = 0; qi < nq; qi++) {
    const query_t *q = &qs[qi];
    const query_t *p = qi > 0 ? &qs[qi - 1] : NULL;
    if (p && xr_extract_cmp_thread(p->source, p->pid, p->tid, q->source, q->pid, q->tid) != 0)
      depth = 0;
    while (oi < c->ops.n) {
      const cpu_op_t *o = &c->ops.v[order[oi]];
      int rel = op_vs_query(o, q);
      if (rel < 0) {
        oi++;
        continue;
      }
      if (rel > 0 || o->ts > q->ts) break;
      while (depth > 0 && (op_vs_query(&c->ops.v[stack[depth - 1]], q) != 0 ||
                           c->ops.v[stack[depth - 1]].end < o->ts))
        depth--;
      stack[depth++] = order[oi++];
    }
    while (depth > 0 && (op_vs_query(&c->ops.v[stack[depth - 1]], q) != 0 ||
                         c->ops.v[stack[depth - 1]].end < q->ts))
      depth--;
    /* Entries below the top may have ended while a sibling was pushed over them; skip those. */
    int64_t pick = -1;
    if (c->opt->outermost) {
      for (size_t d = 0; d < depth; d++) {
        const cpu_op_t *o = &c->ops.v[stack[d]];
        if (o->end >= q->ts && strstr(c->strs.strs[o->name], "::")) {
          pick = stack[d];
          break;
        }
      }
    }
    for (size_t d = depth; pick < 0 && d > 0; d--) {
      const cpu_op_t *o = &c->ops.v[stack[d - 1]];
      if (o->ts <= q->ts && o->end >= q->ts) pick = stack[d - 1];
    }
    if (pick >= 0) *q->slot = (int32_t)pick;
    else if (q->gpu) c->sum.gpu_without_op++;
  }
  free(qs);
  free(order);
  free(stack);
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* grouping                                                                                    */

const annotation_t *xr_extract_iteration_at(const ctx_t *c, int64_t pid, int64_t ts, int64_t end) {
  /* Annotations are few and sorted by start; the last one starting before `ts` that also ends
   * after `end` is the iteration. */
  size_t lo = 0, hi = c->anns.n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c->anns.v[mid].ts <= ts) lo = mid + 1;
    else hi = mid;
  }
  for (size_t i = lo; i > 0; i--) {
    const annotation_t *a = &c->anns.v[i - 1];
    if (a->pid == pid && a->end >= end) return a;
    if (lo - i > 64) break;
  }
  return NULL;
}

static int32_t find_hints(const ctx_t *c, const cpu_op_t *o) {
  const annotation_t *a = xr_extract_iteration_at(c, o->pid, o->ts, o->end);
  return a ? a->hints : -1;
}

static int cmp_ann(const void *a, const void *b) {
  const annotation_t *x = a, *y = b;
  return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static bool name_passes(const ctx_t *c, const char *name) {
  const char *f = c->opt->op_filter;
  if (!f || !*f) return true;
  if (strstr(name, f)) return true;
  const char *target = xr_schema_alias_target(name);
  return target && strstr(target, f);
}

static size_t group_slot(const group_t *g, size_t cap) {
  uint64_t h = ((uint64_t)g->name * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)(uint32_t)g->args << 20) ^
               (uint64_t)(uint32_t)g->hints * 0xC2B2AE3D27D4EB4Full ^
               (uint64_t)(uint32_t)g->source << 44;
  return (h ^ (h >> 29)) & (cap - 1);
}

/* The group of ops with this name, argument text, iteration hints and source (eager, or the
 * capture trace that recorded them); a new one when there is none. */
static int64_t group_lookup(ctx_t *c, uint32_t name, int32_t args, int32_t hints, int32_t source) {
  if ((c->groups.n + 1) * 2 > c->gslot_cap) {
    size_t cap = c->gslot_cap ? c->gslot_cap * 2 : 256;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < c->groups.n; i++) {
      size_t j = group_slot(&c->groups.v[i], cap);
      while (slots[j]) j = (j + 1) & (cap - 1);
      slots[j] = (uint32_t)i + 1;
    }
    free(c->gslots);
    c->gslots = slots;
    c->gslot_cap = cap;
  }
  group_t key = {.name = name, .args = args, .hints = hints, .source = source,
                 .first = c->groups.n};
  size_t j = group_slot(&key, c->gslot_cap);
  while (c->gslots[j]) {
    const group_t *g = &c->groups.v[c->gslots[j] - 1];
    if (g->name == name && g->args == args && g->hints == hints && g->source == source)
      return c->gslots[j] - 1;
    j = (j + 1) & (c->gslot_cap - 1);
  }
  if (!VEC_PUSH(c->groups, key)) return -1;
  c->gslots[j] = (uint32_t)c->groups.n;
  return (int64_t)c->groups.n - 1;
}

/* Credits one GPU event to its op's group. An eager op is one occurrence of one group. A
 * captured op occurs once per graph launch that replays it, and takes its iteration hints from
 * that launch: its group is looked up per event (graph events come launch by launch). */
static xr_status_t credit(ctx_t *c, gpu_event_t *g, size_t *filtered_ops) {
  cpu_op_t *o = &c->ops.v[g->op];
  const char *name = c->strs.strs[o->name];
  if (o->group == -1) {
    if (o->args < 0) {
      o->group = -2;
    } else if (!name_passes(c, name)) {
      o->group = -3;
      (*filtered_ops)++;
    } else if (o->source > 0) {
      o->group = GROUP_PER_REPLAY;
    } else {
      int32_t hints = is_hinted_op(name) ? find_hints(c, o) : -1;
      int64_t gi = group_lookup(c, o->name, o->args, hints, 0);
      if (gi < 0) return xr_extract_oom(c);
      o->group = (int32_t)gi;
      c->groups.v[gi].count++;
    }
  }
  if (o->group == -2) {
    c->sum.gpu_op_no_args++;
    return XR_OK;
  }
  if (o->group == -3) return XR_OK;
  int64_t gi = o->group;
  if (gi == GROUP_PER_REPLAY) {
    int32_t hints = is_hinted_op(name) ? c->graphs.v[g->replay].hints : -1;
    if ((gi = group_lookup(c, o->name, o->args, hints, o->source)) < 0) return xr_extract_oom(c);
    if (o->last_replay != g->replay) {
      o->last_replay = g->replay;
      c->groups.v[gi].count++;
    }
  }
  g->group = (int32_t)gi;
  group_t *gr = &c->groups.v[gi];
  gr->gpu_ns += g->dur;
  size_t k = 0;
  while (k < gr->nk && gr->k[k].name != g->name) k++;
  if (k == gr->nk) {
    if (!xr_extract_reserve((void **)&gr->k, &gr->capk, gr->nk, sizeof *gr->k))
      return xr_extract_oom(c);
    gr->k[gr->nk++] = (kern_t){.name = g->name};
  }
  gr->k[k].dur += g->dur;
  gr->k[k].count++;
  return XR_OK;
}

static xr_status_t group_ops(ctx_t *c) {
  size_t filtered_ops = 0;
  xr_status_t st = XR_OK;
  for (size_t i = 0; st == XR_OK && i < c->gpu.n; i++) {
    gpu_event_t *g = &c->gpu.v[i];
    if (g->op >= 0 && g->replay < 0) st = credit(c, g, &filtered_ops);
  }
  for (size_t i = 0; st == XR_OK && i < c->graph_order_count; i++) {
    gpu_event_t *g = &c->gpu.v[c->graph_order[i]];
    if (g->op >= 0) st = credit(c, g, &filtered_ops);
  }
  c->sum.ops_filtered += filtered_ops; /* op occurrences dropped by op_filter */
  return st;
}

static int cmp_group_ptr(const void *a, const void *b) {
  const group_t *x = *(group_t *const *)a, *y = *(group_t *const *)b;
  if (x->gpu_ns != y->gpu_ns) return x->gpu_ns > y->gpu_ns ? -1 : 1;
  return x->first < y->first ? -1 : x->first > y->first;
}

/* ------------------------------------------------------------------------------------------ */
/* argument texts                                                                              */

typedef struct jnode {
  xr_jtok_t kind; /* OBJECT_BEGIN / ARRAY_BEGIN for containers */
  char *text;
  char *key;
  size_t n;
  struct jnode *items;
} jnode_t;

static void dom_free(jnode_t *n) {
  for (size_t i = 0; i < n->n; i++) dom_free(&n->items[i]);
  free(n->items);
  free(n->text);
  free(n->key);
  memset(n, 0, sizeof *n);
}

static xr_status_t dom_parse(xr_jreader_t *r, xr_jtok_t t, jnode_t *out) {
  memset(out, 0, sizeof *out);
  out->kind = t;
  if (t == XR_JTOK_STRING || t == XR_JTOK_NUMBER) {
    out->text = strdup(xr_jreader_text(r, NULL));
    return out->text ? XR_OK : XR_RESOURCE_EXHAUSTED;
  }
  if (t != XR_JTOK_OBJECT_BEGIN && t != XR_JTOK_ARRAY_BEGIN) return XR_OK;
  size_t cap = 0;
  for (;;) {
    xr_jtok_t u;
    xr_status_t st = xr_jreader_next(r, &u);
    if (st != XR_OK) return st;
    if (u == XR_JTOK_OBJECT_END || u == XR_JTOK_ARRAY_END) return XR_OK;
    char *key = NULL;
    if (u == XR_JTOK_KEY) {
      key = strdup(xr_jreader_text(r, NULL));
      if (!key || (st = xr_jreader_next(r, &u)) != XR_OK) {
        free(key);
        return st != XR_OK ? st : XR_RESOURCE_EXHAUSTED;
      }
    }
    if (!xr_extract_reserve((void **)&out->items, &cap, out->n, sizeof *out->items)) {
      free(key);
      return XR_RESOURCE_EXHAUSTED;
    }
    jnode_t *item = &out->items[out->n++];
    st = dom_parse(r, u, item);
    item->key = key;
    if (st != XR_OK) return st;
  }
}

static const jnode_t *dom_get(const jnode_t *obj, const char *key) {
  for (size_t i = 0; i < obj->n; i++)
    if (obj->items[i].key && strcmp(obj->items[i].key, key) == 0) return &obj->items[i];
  return NULL;
}

static bool is_array(const jnode_t *n) { return n && n->kind == XR_JTOK_ARRAY_BEGIN; }

/* K_OBJECT: a script object (a c10d ProcessGroup, ReduceOp or Work), recorded without a value. */
typedef enum kind { K_NONE, K_SCALAR, K_SCALARLIST, K_TENSOR, K_TENSORLIST, K_OBJECT } kind_t;

static kind_t classify_type(const char *type) {
  if (!type || !*type) return K_NONE;
  if (strcmp(type, "Scalar") == 0) return K_SCALAR;
  if (strcmp(type, "ScriptObject") == 0 || strcmp(type, "Object") == 0 ||
      strncmp(type, "__torch__.", 10) == 0)
    return K_OBJECT;
  if (strcmp(type, "TensorList") == 0) return K_TENSORLIST;
  size_t n = strlen(type);
  if (n >= 4 && strcmp(type + n - 4, "List") == 0) return K_SCALARLIST;
  return K_TENSOR;
}

/* The recorded arguments, checked: equal-length arrays, integer dims, known dtypes. */
typedef struct recorded {
  size_t n;
  const jnode_t *d, *t, *s, *c;
} recorded_t;

static bool int_array(const jnode_t *a, bool allow_negative) {
  if (!is_array(a)) return false;
  for (size_t i = 0; i < a->n; i++) {
    if (a->items[i].kind != XR_JTOK_NUMBER) return false;
    char *end;
    long long v = strtoll(a->items[i].text, &end, 10);
    if (*end != '\0' || (!allow_negative && v < 0)) return false;
  }
  return true;
}

/* Whether the tensor a recorded shape and strides (contiguous when absent) describe has element
 * and byte counts that fit 64 bits, as the bundle's validator requires. */
static bool geometry_fits(const jnode_t *dims, const jnode_t *strides, xr_dtype_t dtype) {
  int64_t shape[XR_MAX_RANK], st[XR_MAX_RANK];
  xr_tensor_spec_t t = {.rank = (int32_t)dims->n, .shape = shape, .strides = st,
                        .storage_size = -1, .dtype = dtype};
  for (size_t i = 0; i < dims->n; i++) shape[i] = strtoll(dims->items[i].text, NULL, 10);
  if (int_array(strides, false) && strides->n == dims->n)
    for (size_t i = 0; i < dims->n; i++) st[i] = strtoll(strides->items[i].text, NULL, 10);
  else
    xr_tensor_set_contiguous(&t);
  size_t bytes;
  return xr_tensor_storage_bytes(&t, &bytes) == XR_OK;
}

static bool check_recorded(const jnode_t *root, recorded_t *rec, char *why, size_t why_size) {
  rec->d = dom_get(root, "d");
  rec->t = dom_get(root, "t");
  rec->s = dom_get(root, "s");
  rec->c = dom_get(root, "c");
  if (!is_array(rec->d) || !is_array(rec->t)) {
    snprintf(why, why_size, "\"Input Dims\" or \"Input type\" is not an array");
    return false;
  }
  rec->n = rec->t->n;
  if (rec->d->n != rec->n || (rec->s && (!is_array(rec->s) || rec->s->n != rec->n)) ||
      (rec->c && (!is_array(rec->c) || rec->c->n != rec->n))) {
    snprintf(why, why_size,
             "argument arrays of unequal length (Input Dims %zu, Input type %zu, Input Strides "
             "%zu, Concrete Inputs %zu)",
             rec->d->n, rec->n, rec->s && is_array(rec->s) ? rec->s->n : rec->n,
             rec->c && is_array(rec->c) ? rec->c->n : rec->n);
    return false;
  }
  for (size_t i = 0; i < rec->n; i++) {
    const jnode_t *ty = &rec->t->items[i];
    if (ty->kind != XR_JTOK_STRING) {
      snprintf(why, why_size, "Input type[%zu] is not a string", i);
      return false;
    }
    kind_t k = classify_type(ty->text);
    const jnode_t *dims = &rec->d->items[i];
    if (k == K_TENSOR) {
      if (xr_dtype_parse(ty->text) == XR_DTYPE_INVALID) {
        snprintf(why, why_size, "Input type[%zu]: unknown dtype \"%s\"", i, ty->text);
        return false;
      }
      if (!int_array(dims, false)) {
        snprintf(why, why_size, "Input Dims[%zu] is not a list of non-negative integers", i);
        return false;
      }
      if (dims->n > XR_MAX_RANK) {
        snprintf(why, why_size, "Input Dims[%zu]: rank %zu above %d", i, dims->n, XR_MAX_RANK);
        return false;
      }
      const jnode_t *strides = rec->s ? &rec->s->items[i] : NULL;
      if (!geometry_fits(dims, strides, xr_dtype_parse(ty->text))) {
        snprintf(why, why_size, "Input Dims[%zu]: the tensor's size overflows 64 bits", i);
        return false;
      }
    } else if (k == K_TENSORLIST) {
      if (!is_array(dims)) {
        snprintf(why, why_size, "Input Dims[%zu] is not a list of shapes", i);
        return false;
      }
      for (size_t j = 0; j < dims->n; j++) {
        if (!int_array(&dims->items[j], false) || dims->items[j].n > XR_MAX_RANK) {
          snprintf(why, why_size, "Input Dims[%zu][%zu] is not a shape", i, j);
          return false;
        }
        /* the element dtype is decided later: checked at the widest */
        const jnode_t *ls = rec->s ? &rec->s->items[i] : NULL;
        const jnode_t *sj = is_array(ls) && ls->n == dims->n ? &ls->items[j] : NULL;
        if (!geometry_fits(&dims->items[j], sj, XR_DTYPE_F64)) {
          snprintf(why, why_size, "Input Dims[%zu][%zu]: the tensor's size overflows 64 bits", i,
                   j);
          return false;
        }
      }
    }
  }
  return true;
}

static kind_t recorded_kind(const recorded_t *rec, size_t i) {
  return classify_type(rec->t->items[i].text);
}

static const char *concrete_text(const recorded_t *rec, size_t i) {
  if (!rec->c) return NULL;
  const jnode_t *n = &rec->c->items[i];
  if (n->kind == XR_JTOK_STRING || n->kind == XR_JTOK_NUMBER) return n->text;
  if (n->kind == XR_JTOK_TRUE) return "True";
  if (n->kind == XR_JTOK_FALSE) return "False";
  return "";
}

static bool compatible(const xr_schema_arg_t *a, kind_t k) {
  switch (k) {
    case K_TENSOR: return a->is_tensor;
    case K_TENSORLIST: return a->is_tensor_list;
    case K_SCALARLIST: return a->is_list && !a->is_tensor_list;
    case K_SCALAR: return !a->is_tensor && !a->is_tensor_list;
    case K_NONE: return !a->is_tensor || a->is_optional;
    case K_OBJECT: return !a->is_tensor && !a->is_tensor_list;
  }
  return false;
}

static const xr_schema_t *match_schema(const xr_schema_t *schemas, size_t count,
                                       const char *name, const recorded_t *rec) {
  for (size_t s = 0; s < count; s++) {
    const xr_schema_t *sc = &schemas[s];
    if (strcmp(sc->op, name) != 0 || rec->n > sc->arg_count) continue;
    bool ok = true;
    for (size_t i = 0; ok && i < sc->arg_count; i++) {
      if (i < rec->n) ok = compatible(&sc->args[i], recorded_kind(rec, i));
      else ok = sc->args[i].has_default; /* an older op version without trailing args */
    }
    if (ok) return sc;
  }
  return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* values                                                                                      */

static void trim(const char **s, size_t *n) {
  while (*n && isspace((unsigned char)**s)) (*s)++, (*n)--;
  while (*n && isspace((unsigned char)(*s)[*n - 1])) (*n)--;
}

/* The profiler's text forms: "1", "0.5", "0.", "True", "None", "[1, 2]", "'none'", "cuda:0". */
static xr_status_t parse_text_value(xr_bundle_t *b, xr_value_t *v, const char *s, size_t n,
                                    const xr_schema_arg_t *a, int depth) {
  trim(&s, &n);
  if (depth > 8) return xr_error(XR_INVALID_ARGUMENT, "list nested too deeply");
  if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
    size_t count = 0, start = 1;
    int nest = 0;
    const char *inner = s + 1;
    size_t inner_n = n - 2;
    trim(&inner, &inner_n);
    if (inner_n > 0) {
      count = 1;
      for (size_t i = 1; i + 1 < n; i++) {
        if (s[i] == '[') nest++;
        else if (s[i] == ']') nest--;
        else if (s[i] == ',' && nest == 0) count++;
      }
    }
    xr_status_t st = xr_value_make_list(b->arena, v, count);
    if (st != XR_OK) return st;
    size_t idx = 0;
    nest = 0;
    for (size_t i = 1; count && i < n; i++) {
      if (s[i] == '[') nest++;
      else if (s[i] == ']' && i + 1 < n) nest--;
      if ((s[i] == ',' && nest == 0) || i + 1 == n) {
        st = parse_text_value(b, &v->as.list.items[idx++], s + start, i - start, a, depth + 1);
        if (st != XR_OK) return st;
        start = i + 1;
      }
    }
    return XR_OK;
  }
  if (n >= 2 && (s[0] == '\'' || s[0] == '"') && s[n - 1] == s[0]) {
    char *str = xr_arena_strndup(b->arena, s + 1, n - 2);
    if (!str) return XR_RESOURCE_EXHAUSTED;
    v->kind = XR_VALUE_STRING;
    v->as.s = str;
    return XR_OK;
  }
  char buf[64];
  if (n < sizeof buf) {
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (strcmp(buf, "True") == 0 || strcmp(buf, "False") == 0) {
      v->kind = XR_VALUE_BOOL;
      v->as.b = buf[0] == 'T';
      return XR_OK;
    }
    if (strcmp(buf, "None") == 0) {
      v->kind = XR_VALUE_NULL;
      return XR_OK;
    }
    char *end;
    errno = 0;
    long long i = strtoll(buf, &end, 10);
    if (n && *end == '\0' && errno == 0) {
      if (a && a->is_float) {
        v->kind = XR_VALUE_FLOAT;
        v->as.f = (double)i;
      } else if (a && a->is_bool && (i == 0 || i == 1)) {
        v->kind = XR_VALUE_BOOL;
        v->as.b = i == 1;
      } else {
        v->kind = XR_VALUE_INT;
        v->as.i = i;
      }
      return XR_OK;
    }
    double d = strtod(buf, &end);
    if (n && *end == '\0') {
      if (a && a->is_int && d == floor(d) && fabs(d) < 9e18) {
        v->kind = XR_VALUE_INT;
        v->as.i = (int64_t)d;
      } else {
        v->kind = XR_VALUE_FLOAT;
        v->as.f = d;
      }
      return XR_OK;
    }
  }
  char *str = xr_arena_strndup(b->arena, s, n);
  if (!str) return XR_RESOURCE_EXHAUSTED;
  v->kind = XR_VALUE_STRING;
  v->as.s = str;
  return XR_OK;
}

static xr_status_t make_tensor(xr_bundle_t *b, xr_value_t *v, const jnode_t *dims,
                               const jnode_t *strides, xr_dtype_t dtype, xr_init_t init) {
  xr_status_t st = xr_value_make_tensor(b->arena, v, (int32_t)dims->n);
  if (st != XR_OK) return st;
  xr_tensor_spec_t *t = v->as.tensor;
  for (size_t i = 0; i < dims->n; i++) t->shape[i] = strtoll(dims->items[i].text, NULL, 10);
  t->dtype = dtype;
  t->init = init;
  if (int_array(strides, false) && strides->n == dims->n) {
    for (size_t i = 0; i < dims->n; i++) t->strides[i] = strtoll(strides->items[i].text, NULL, 10);
  } else {
    xr_tensor_set_contiguous(t);
  }
  return XR_OK;
}

typedef struct build {
  ctx_t *c;
  xr_bundle_t *b;
  const char *op_name;
} build_t;

/* The kv_cache_dtype an op's cache tensor implies, for traces whose profiler dropped the string:
 * vLLM keeps fp8 caches as uint8 (or, in newer versions, fp8) tensors, so such a key_cache,
 * value_cache or kv_cache means "fp8" (e4m3; "fp8_e5m2" for an e5m2 tensor). NULL when the op
 * has no recorded cache tensor or it holds another dtype (then the usual fallback applies).
 * *out_cache and *out_type name the tensor and its recorded type. */
static const char *kv_cache_dtype_of(const recorded_t *rec, const xr_schema_t *sc, const char **out_cache,
                                     const char **out_type) {
  static const char *const caches[] = {"key_cache", "value_cache", "kv_cache"};
  for (size_t j = 0; sc && j < rec->n && j < sc->arg_count; j++)
    for (size_t k = 0; k < sizeof caches / sizeof caches[0]; k++) {
      if (strcmp(sc->args[j].name, caches[k]) != 0 || recorded_kind(rec, j) != K_TENSOR) continue;
      xr_dtype_t d = xr_dtype_parse(rec->t->items[j].text);
      if (d != XR_DTYPE_U8 && !xr_dtype_is_fp8(d)) return NULL;
      *out_cache = caches[k], *out_type = rec->t->items[j].text;
      return d == XR_DTYPE_F8E5M2 || d == XR_DTYPE_F8E5M2FNUZ ? "fp8_e5m2" : "fp8";
    }
  return NULL;
}

static xr_status_t build_value(build_t *B, const recorded_t *rec, size_t i,
                               const xr_schema_t *sc, xr_arg_t *arg) {
  const xr_schema_arg_t *a = sc ? &sc->args[i] : NULL;
  xr_bundle_t *b = B->b;
  if (i >= rec->n) { /* trailing argument the recorded op version did not have */
    arg->defaulted = true;
    return parse_text_value(b, &arg->value, a->default_text, strlen(a->default_text), a, 0);
  }
  const char *type = rec->t->items[i].text;
  const jnode_t *dims = &rec->d->items[i];
  const jnode_t *strides = rec->s ? &rec->s->items[i] : NULL;
  kind_t k = classify_type(type);
  xr_init_t init = sc && xr_schema_arg_is_pure_output(sc, i) ? XR_INIT_NONE : XR_INIT_UNSET;
  if (k == K_TENSOR) return make_tensor(b, &arg->value, dims, strides, xr_dtype_parse(type), init);
  if (k == K_TENSORLIST) {
    /* The profiler records shapes but not the dtype of list elements: borrow the op's first
     * tensor dtype, else float, and say so. */
    xr_dtype_t dtype = XR_DTYPE_INVALID;
    for (size_t j = 0; j < rec->n && dtype == XR_DTYPE_INVALID; j++)
      if (recorded_kind(rec, j) == K_TENSOR) dtype = xr_dtype_parse(rec->t->items[j].text);
    if (dtype == XR_DTYPE_INVALID) dtype = XR_DTYPE_F32;
    xr_extract_warn(B->c,
                    "%s: dtype of Tensor[] elements not recorded by the profiler; assuming %s",
                    B->op_name, xr_dtype_name(dtype));
    arg->defaulted = true;
    xr_status_t st = xr_value_make_list(b->arena, &arg->value, dims->n);
    for (size_t j = 0; st == XR_OK && j < dims->n; j++) {
      const jnode_t *sj = is_array(strides) && strides->n == dims->n ? &strides->items[j] : NULL;
      st = make_tensor(b, &arg->value.as.list.items[j], &dims->items[j], sj, dtype, init);
    }
    return st;
  }
  if (k == K_OBJECT) return XR_OK; /* None: a process group or reduce op has no value to replay */
  const char *text = concrete_text(rec, i);
  if (text && *text) return parse_text_value(b, &arg->value, text, strlen(text), a, 0);
  /* Nothing recorded: None, a dropped string, or an old trace without Concrete Inputs. */
  if (a && a->is_string) {
    const char *fallback = NULL;
    char dflt[64];
    if (a->has_default && strcmp(a->default_text, "None") != 0) {
      size_t n = strlen(a->default_text);
      const char *d = a->default_text;
      if (n >= 2 && (d[0] == '\'' || d[0] == '"')) d++, n -= 2;
      snprintf(dflt, sizeof dflt, "%.*s", (int)n, d);
      fallback = dflt;
    } else {
      fallback = xr_schema_string_fallback(a->name);
    }
    const char *cache = NULL, *cache_type = NULL, *from_cache = NULL;
    if (strcmp(a->name, "kv_cache_dtype") == 0 &&
        (from_cache = kv_cache_dtype_of(rec, sc, &cache, &cache_type)) != NULL)
      fallback = from_cache;
    if (!fallback && a->is_optional) return XR_OK; /* None */
    if (!fallback) fallback = "";
    arg->defaulted = true;
    B->c->sum.defaulted_args++;
    if (from_cache)
      xr_extract_warn(B->c, "%s: string argument '%s' not recorded by the profiler; using '%s' (%s is %s)",
                      B->op_name, a->name, fallback, cache, cache_type);
    else
      xr_extract_warn(B->c, "%s: string argument '%s' not recorded by the profiler; using '%s'",
                      B->op_name, a->name, fallback);
    return xr_value_make_string(b->arena, &arg->value, fallback);
  }
  if (!rec->c && a && a->has_default) {
    arg->defaulted = true;
    return parse_text_value(b, &arg->value, a->default_text, strlen(a->default_text), a, 0);
  }
  return XR_OK; /* None */
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* ------------------------------------------------------------------------------------------ */
/* collectives: record_param_comms                                                             */

/* c10::ScalarType names, as c10::toString writes them into a collective's "dtype" field. Other
 * spellings ("bfloat16", "float", "c10::Half") are xr_dtype_parse's. */
static const struct {
  const char *name;
  xr_dtype_t dtype;
} scalar_type_names[] = {
    {"Byte", XR_DTYPE_U8},
    {"Char", XR_DTYPE_I8},
    {"Short", XR_DTYPE_I16},
    {"Int", XR_DTYPE_I32},
    {"Long", XR_DTYPE_I64},
    {"Half", XR_DTYPE_F16},
    {"Float", XR_DTYPE_F32},
    {"Double", XR_DTYPE_F64},
    {"Bool", XR_DTYPE_BOOL},
    {"BFloat16", XR_DTYPE_BF16},
    {"Float8_e5m2", XR_DTYPE_F8E5M2},
    {"Float8_e4m3fn", XR_DTYPE_F8E4M3FN},
    {"Float8_e5m2fnuz", XR_DTYPE_F8E5M2FNUZ},
    {"Float8_e4m3fnuz", XR_DTYPE_F8E4M3FNUZ},
    {"UInt16", XR_DTYPE_U16},
    {"UInt32", XR_DTYPE_U32},
    {"UInt64", XR_DTYPE_U64},
    {"Float8_e8m0fnu", XR_DTYPE_F8E8M0},
    {"Float4_e2m1fn_x2", XR_DTYPE_F4E2M1X2},
};

static xr_dtype_t comms_dtype(const char *s) {
  for (size_t i = 0; i < sizeof scalar_type_names / sizeof scalar_type_names[0]; i++)
    if (strcmp(s, scalar_type_names[i].name) == 0) return scalar_type_names[i].dtype;
  return xr_dtype_parse(s);
}

/* A collective's fields, checked. Pointers into the parsed argument text. */
typedef struct comms {
  const char *collective; /* NULL when not recorded as a string */
  xr_dtype_t dtype;
  int64_t v[CM_COUNT];     /* the integer fields: nelems, group size, rank, stride (1 if absent) */
  const jnode_t *split[2]; /* "In split size", "Out split size" */
  size_t split_n[2];       /* their entries; 0 when empty */
} comms_t;

/* `s[0, n)` (spaces around allowed) as a decimal integer. */
static bool parse_int(const char *s, size_t n, long long *out) {
  trim(&s, &n);
  char buf[32];
  if (!n || n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  char *end;
  errno = 0;
  *out = strtoll(buf, &end, 10);
  return *end == '\0' && errno == 0 && !isspace((unsigned char)buf[0]);
}

/* An integer field: a JSON number or a numeric string, at least `min`. */
static bool comms_int(const jnode_t *m, int f, int64_t min, int64_t *out, char *why, size_t size) {
  const jnode_t *n = dom_get(m, comms_keys[f]);
  long long v;
  if (!n) {
    snprintf(why, size, "\"%s\" is missing", comms_keys[f]);
    return false;
  }
  if (n->kind != XR_JTOK_NUMBER && n->kind != XR_JTOK_STRING) {
    snprintf(why, size, "\"%s\" is not a number", comms_keys[f]);
    return false;
  }
  if (!parse_int(n->text, strlen(n->text), &v)) {
    snprintf(why, size, "\"%s\" is not an integer (\"%.40s\")", comms_keys[f], n->text);
    return false;
  }
  if (v < min) {
    if (v < 0 && min >= 0)
      snprintf(why, size, "\"%s\" is negative (%lld)", comms_keys[f], v);
    else
      snprintf(why, size, "\"%s\" is %lld, below %lld", comms_keys[f], v, (long long)min);
    return false;
  }
  *out = v;
  return true;
}

/* A split size list: "[]" or "[4, 4, 8]" as Kineto writes it (a string), or a JSON array.
 * Counts the entries and, with `out`, stores them. A missing field is an empty list. */
static bool comms_split(const jnode_t *m, int f, int64_t *out, size_t *count, char *why,
                        size_t size) {
  const jnode_t *n = dom_get(m, comms_keys[f]);
  *count = 0;
  if (!n) return true;
  if (is_array(n)) {
    for (size_t i = 0; i < n->n; i++) {
      const jnode_t *x = &n->items[i];
      long long v;
      if ((x->kind != XR_JTOK_NUMBER && x->kind != XR_JTOK_STRING) ||
          !parse_int(x->text, strlen(x->text), &v) || v < 0) {
        snprintf(why, size, "\"%s\"[%zu] is not a non-negative integer", comms_keys[f], i);
        return false;
      }
      if (out) out[i] = v;
    }
    *count = n->n;
    return true;
  }
  const char *s = n->kind == XR_JTOK_STRING ? n->text : NULL;
  size_t len = s ? strlen(s) : 0;
  if (s) trim(&s, &len);
  if (!s || len < 2 || s[0] != '[' || s[len - 1] != ']') {
    snprintf(why, size, "\"%s\" is not a list (\"%.40s\")", comms_keys[f], s ? n->text : "");
    return false;
  }
  if (strstr(n->text, "...")) {
    snprintf(why, size,
             "\"%s\" was cut short by the profiler, which records 30 entries at most (\"%.40s\")",
             comms_keys[f], n->text);
    return false;
  }
  const char *p = s + 1, *stop = s + len - 1;
  size_t inner = (size_t)(stop - p);
  trim(&p, &inner);
  if (!inner) return true; /* "[]" */
  for (size_t i = 0;; i++) {
    const char *comma = memchr(p, ',', (size_t)(stop - p));
    const char *end = comma ? comma : stop;
    long long v;
    if (!parse_int(p, (size_t)(end - p), &v) || v < 0) {
      snprintf(why, size, "\"%s\" entry %zu is not a non-negative integer (\"%.40s\")",
               comms_keys[f], i, n->text);
      return false;
    }
    if (out) out[i] = v;
    *count = i + 1;
    if (!comma) return true;
    p = comma + 1;
  }
}

static bool check_comms(const jnode_t *m, comms_t *cm, char *why, size_t size) {
  memset(cm, 0, sizeof *cm);
  const jnode_t *n = dom_get(m, comms_keys[CM_COLLECTIVE]);
  if (n && n->kind == XR_JTOK_STRING && *n->text) cm->collective = n->text;
  if (!cm->collective) {
    snprintf(why, size, "\"%s\" is %s", comms_keys[CM_COLLECTIVE],
             !n                          ? "missing"
             : n->kind == XR_JTOK_STRING ? "empty"
                                         : "not a string");
    return false;
  }
  n = dom_get(m, comms_keys[CM_DTYPE]);
  if (!n || n->kind != XR_JTOK_STRING) {
    snprintf(why, size, "\"%s\" is %s", comms_keys[CM_DTYPE], !n ? "missing" : "not a string");
    return false;
  }
  if ((cm->dtype = comms_dtype(n->text)) == XR_DTYPE_INVALID) {
    snprintf(why, size, "\"%s\": unknown dtype \"%.40s\"", comms_keys[CM_DTYPE], n->text);
    return false;
  }
  if (!comms_int(m, CM_IN_NELEMS, 0, &cm->v[CM_IN_NELEMS], why, size) ||
      !comms_int(m, CM_OUT_NELEMS, 0, &cm->v[CM_OUT_NELEMS], why, size) ||
      !comms_int(m, CM_GROUP_SIZE, 1, &cm->v[CM_GROUP_SIZE], why, size) ||
      !comms_int(m, CM_RANK, 0, &cm->v[CM_RANK], why, size))
    return false;
  /* torch's: the ranks' distance in the world, -1 when not evenly spaced, 0 for one rank. */
  cm->v[CM_STRIDE] = 1;
  if (dom_get(m, comms_keys[CM_STRIDE]) &&
      !comms_int(m, CM_STRIDE, -1, &cm->v[CM_STRIDE], why, size))
    return false;
  if (cm->v[CM_RANK] >= cm->v[CM_GROUP_SIZE]) {
    snprintf(why, size, "\"%s\" %lld is not below \"%s\" %lld", comms_keys[CM_RANK],
             (long long)cm->v[CM_RANK], comms_keys[CM_GROUP_SIZE], (long long)cm->v[CM_GROUP_SIZE]);
    return false;
  }
  for (int i = 0; i < 2; i++) {
    int f = i ? CM_OUT_NELEMS : CM_IN_NELEMS;
    int64_t shape[1] = {cm->v[f]}, strides[1] = {1};
    xr_tensor_spec_t t = {
        .rank = 1, .shape = shape, .strides = strides, .storage_size = -1, .dtype = cm->dtype};
    size_t bytes;
    if (xr_tensor_storage_bytes(&t, &bytes) != XR_OK) {
      snprintf(why, size, "\"%s\": %lld elements of %s overflow 64-bit sizes", comms_keys[f],
               (long long)cm->v[f], xr_dtype_short_name(cm->dtype));
      return false;
    }
    f = i ? CM_OUT_SPLIT : CM_IN_SPLIT;
    if (!comms_split(m, f, NULL, &cm->split_n[i], why, size)) return false;
    cm->split[i] = dom_get(m, comms_keys[f]);
  }
  return true;
}

static xr_status_t name_arg(xr_arena_t *arena, xr_arg_t *a, const char *name, const char *type) {
  a->name = xr_arena_strdup(arena, name);
  a->type = xr_arena_strdup(arena, type);
  return a->name && a->type ? XR_OK : XR_RESOURCE_EXHAUSTED;
}

static xr_status_t finish_op(build_t *B, const group_t *g, xr_op_t *op);

/* record_param_comms: no positional arguments; kwargs input, output (contiguous, of the
 * recorded dtype, [In msg nelems] and [Out msg nelems]), collective, group_size, rank and, when
 * recorded non-empty, in_split_sizes and out_split_sizes; group_stride when a group of several
 * was recorded with ranks other than adjacent. */
static xr_status_t build_comms_op(build_t *B, const group_t *g, const jnode_t *m,
                                  const comms_t *cm) {
  ctx_t *c = B->c;
  xr_bundle_t *b = B->b;
  xr_arena_t *arena = b->arena;
  xr_op_t *op = xr_bundle_append_op(b);
  if (!op) return XR_RESOURCE_EXHAUSTED;
  const char *recorded = c->strs.strs[g->name];
  if (!(op->name = xr_arena_strdup(arena, comms_op_name))) return XR_RESOURCE_EXHAUSTED;
  if (strcmp(recorded, comms_op_name) != 0 && !(op->alias = xr_arena_strdup(arena, recorded)))
    return XR_RESOURCE_EXHAUSTED;
  B->op_name = op->name;
  bool strided = cm->v[CM_GROUP_SIZE] > 1 && cm->v[CM_STRIDE] != 1;
  size_t nkw = 5 + (cm->split_n[0] > 0) + (cm->split_n[1] > 0) + strided;
  xr_status_t st = xr_op_alloc_args(arena, op, 0, nkw);
  if (st != XR_OK) return st;
  xr_arg_t *kw = op->kwargs;
  for (int i = 0; i < 2; i++) {
    if ((st = name_arg(arena, &kw[i], i ? "output" : "input", "Tensor")) != XR_OK ||
        (st = xr_value_make_tensor(arena, &kw[i].value, 1)) != XR_OK)
      return st;
    xr_tensor_spec_t *t = kw[i].value.as.tensor;
    t->shape[0] = cm->v[i ? CM_OUT_NELEMS : CM_IN_NELEMS];
    t->dtype = cm->dtype;
    xr_tensor_set_contiguous(t);
  }
  if ((st = name_arg(arena, &kw[2], "collective", "str")) != XR_OK ||
      (st = xr_value_make_string(arena, &kw[2].value, cm->collective)) != XR_OK ||
      (st = name_arg(arena, &kw[3], "group_size", "int")) != XR_OK ||
      (st = name_arg(arena, &kw[4], "rank", "int")) != XR_OK)
    return st;
  kw[3].value = (xr_value_t){.kind = XR_VALUE_INT, .as.i = cm->v[CM_GROUP_SIZE]};
  kw[4].value = (xr_value_t){.kind = XR_VALUE_INT, .as.i = cm->v[CM_RANK]};
  size_t k = 5;
  for (int i = 0; i < 2; i++) {
    size_t n = cm->split_n[i], got;
    if (!n) continue;
    xr_arg_t *a = &kw[k++];
    if ((st = name_arg(arena, a, i ? "out_split_sizes" : "in_split_sizes", "int[]")) != XR_OK ||
        (st = xr_value_make_list(arena, &a->value, n)) != XR_OK)
      return st;
    int64_t *v = xr_arena_alloc(arena, n * sizeof *v);
    char why[8];
    if (!v) return XR_RESOURCE_EXHAUSTED;
    comms_split(m, i ? CM_OUT_SPLIT : CM_IN_SPLIT, v, &got, why, sizeof why); /* checked */
    for (size_t j = 0; j < n; j++)
      a->value.as.list.items[j] = (xr_value_t){.kind = XR_VALUE_INT, .as.i = v[j]};
  }
  if (strided) {
    if ((st = name_arg(arena, &kw[k], "group_stride", "int")) != XR_OK) return st;
    kw[k++].value = (xr_value_t){.kind = XR_VALUE_INT, .as.i = cm->v[CM_STRIDE]};
  }
  return finish_op(B, g, op);
}

/* The c10d ops and the other collectives record no group size: the trace's world size stands
 * in, marked defaulted. */
static xr_status_t add_group_size(build_t *B, xr_op_t *op) {
  ctx_t *c = B->c;
  if (xr_op_find_arg(op, "group_size")) return XR_OK;
  if (c->world_size <= 0) {
    xr_extract_warn(c,
                    "%s: group size not recorded by the profiler, and the trace gives no world "
                    "size (distributedInfo): no group_size",
                    op->name);
    return XR_OK;
  }
  xr_arg_t *a = xr_op_add_kwarg(B->b->arena, op, "group_size", "int");
  if (!a) return XR_RESOURCE_EXHAUSTED;
  a->value = (xr_value_t){.kind = XR_VALUE_INT, .as.i = c->world_size};
  a->defaulted = true;
  xr_extract_warn(c,
                  "%s: group size not recorded by the profiler; using the trace's world size "
                  "%lld (distributedInfo)",
                  op->name, (long long)c->world_size);
  return XR_OK;
}

static xr_status_t build_op(build_t *B, const group_t *g, const recorded_t *rec,
                            const xr_schema_t *sc, const char *alias) {
  ctx_t *c = B->c;
  xr_bundle_t *b = B->b;
  xr_op_t *op = xr_bundle_append_op(b);
  if (!op) return XR_RESOURCE_EXHAUSTED;
  const char *recorded = c->strs.strs[g->name];
  op->name = xr_arena_strdup(b->arena, sc ? sc->op : recorded);
  if (alias) op->alias = xr_arena_strdup(b->arena, alias);
  if (!op->name || (alias && !op->alias)) return XR_RESOURCE_EXHAUSTED;
  B->op_name = op->name;
  size_t total = sc ? sc->arg_count : rec->n, nkw = 0;
  for (size_t i = 0; sc && i < total; i++) nkw += sc->args[i].kwarg_only;
  xr_status_t st = xr_op_alloc_args(b->arena, op, total - nkw, nkw);
  if (st != XR_OK) return st;
  size_t pi = 0, ki = 0;
  for (size_t i = 0; i < total; i++) {
    bool kw = sc && sc->args[i].kwarg_only;
    xr_arg_t *arg = kw ? &op->kwargs[ki++] : &op->args[pi++];
    if (sc) {
      arg->name = xr_arena_strdup(b->arena, sc->args[i].name);
      arg->type = xr_arena_strdup(b->arena, sc->args[i].type);
      if (!arg->name || !arg->type) return XR_RESOURCE_EXHAUSTED;
    } else if (rec->t->items[i].text[0]) {
      if (!(arg->type = xr_arena_strdup(b->arena, rec->t->items[i].text))) return XR_RESOURCE_EXHAUSTED;
    }
    if ((st = build_value(B, rec, i, sc, arg)) != XR_OK) return st;
  }
  if (xr_schema_is_collective(op->name) && (st = add_group_size(B, op)) != XR_OK) return st;
  return finish_op(B, g, op);
}

/* The op's count, its timing in the trace and its iteration hints. */
static xr_status_t finish_op(build_t *B, const group_t *g, xr_op_t *op) {
  ctx_t *c = B->c;
  xr_bundle_t *b = B->b;
  op->count = g->count;
  op->timing = xr_arena_alloc(b->arena, sizeof *op->timing);
  if (!op->timing) return XR_RESOURCE_EXHAUSTED;
  op->timing->gpu_time_us = (double)g->gpu_ns / 1000.0;
  if (c->device_name && !(op->timing->device = xr_arena_strdup(b->arena, c->device_name)))
    return XR_RESOURCE_EXHAUSTED;
  if (g->source > 0) {
    const capture_t *cap = &c->captures[g->source - 1];
    if (!(op->timing->graph_capture = xr_arena_strdup(b->arena, base_name(cap->path))))
      return XR_RESOURCE_EXHAUSTED;
    op->timing->graph_batch_size = cap->batch_size;
  }
  op->timing->kernel_count = g->nk;
  op->timing->kernels = xr_arena_alloc(b->arena, (g->nk ? g->nk : 1) * sizeof *op->timing->kernels);
  if (!op->timing->kernels) return XR_RESOURCE_EXHAUSTED;
  for (size_t k = 0; k < g->nk; k++) {
    xr_kernel_record_t *kr = &op->timing->kernels[k];
    if (!(kr->name = xr_arena_strdup(b->arena, c->strs.strs[g->k[k].name]))) return XR_RESOURCE_EXHAUSTED;
    kr->duration_us = (double)g->k[k].dur / 1000.0;
    kr->count = g->k[k].count;
  }
  if (g->hints >= 0) {
    long long v[6] = {-1, -1, -1, -1, -1, -1};
    sscanf(c->strs.strs[g->hints], "%lld,%lld,%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2], &v[3],
           &v[4], &v[5]);
    static const char *const names[6] = {"prefill_seqs",         "prefill_tokens",
                                         "decode_seqs",          "decode_tokens",
                                         "prefill_context_tokens", "decode_context_tokens"};
    size_t n = v[4] >= 0 ? 6 : 4;
    op->hints = xr_arena_alloc(b->arena, n * sizeof *op->hints);
    if (!op->hints) return XR_RESOURCE_EXHAUSTED;
    op->hint_count = n;
    for (size_t i = 0; i < n; i++) {
      if (!(op->hints[i].name = xr_arena_strdup(b->arena, names[i]))) return XR_RESOURCE_EXHAUSTED;
      op->hints[i].value.kind = XR_VALUE_INT;
      op->hints[i].value.as.i = v[i];
    }
  }
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* the whole extraction                                                                        */

typedef struct interval {
  int64_t a, b;
} interval_t;

static int cmp_interval(const void *x, const void *y) {
  const interval_t *p = x, *q = y;
  return p->a < q->a ? -1 : p->a > q->a;
}

/* Length of the union of intervals (sorts `v`). */
static int64_t union_length(interval_t *v, size_t n) {
  xr_extract_sort(v, n, sizeof *v, cmp_interval);
  int64_t total = 0, cs = 0, ce = 0;
  bool open = false;
  for (size_t i = 0; i < n; i++) {
    if (!open || v[i].a > ce) {
      if (open) total += ce - cs;
      cs = v[i].a, ce = v[i].b, open = true;
    } else if (v[i].b > ce) {
      ce = v[i].b;
    }
  }
  if (open) total += ce - cs;
  return total;
}

static xr_status_t set_meta(xr_bundle_t *b, char **slot, const char *s) {
  if (!s) return XR_OK;
  *slot = xr_arena_strdup(b->arena, s);
  return *slot ? XR_OK : XR_RESOURCE_EXHAUSTED;
}

static xr_status_t fill_metadata(ctx_t *c, xr_bundle_t *b) {
  xr_bundle_metadata_t *m = &b->meta;
  const char *vendor = NULL;
  if (c->device_name && (strstr(c->device_name, "NVIDIA") || strstr(c->device_name, "Tesla") ||
                         strstr(c->device_name, "GeForce")))
    vendor = "NVIDIA";
  else if (c->device_name && (strstr(c->device_name, "AMD") || strstr(c->device_name, "Instinct") ||
                              strstr(c->device_name, "Radeon")))
    vendor = "AMD";
  else if (c->vendor_hint)
    vendor = c->vendor_hint == 1 ? "AMD" : "NVIDIA";
  xr_status_t st;
  if ((st = set_meta(b, &m->tool_version, "xreplay extract")) != XR_OK ||
      (st = set_meta(b, &m->source_trace, base_name(c->name))) != XR_OK ||
      (st = set_meta(b, &m->device_name, c->device_name)) != XR_OK ||
      (st = set_meta(b, &m->vendor, vendor)) != XR_OK ||
      (st = set_meta(b, &m->runtime_version, c->runtime_version)) != XR_OK ||
      (st = set_meta(b, &m->capture_date, c->capture_date)) != XR_OK)
    return st;
  bool graphs = c->sum.graph_launches || c->capture_count;
  size_t base = graphs ? 9 : 4, world = base; /* world_size and trace_rank follow */
  m->extra_count = base + (c->world_size > 0) + c->has_trace_rank;
  m->extra = xr_arena_alloc(b->arena, m->extra_count * sizeof *m->extra);
  if (!m->extra) return XR_RESOURCE_EXHAUSTED;
  static const char *const names[9] = {
      "gpu_busy_us",    "extracted_gpu_share",    "attribution",
      "gpu_events",     "graph_launches",         "graph_launches_matched",
      "graph_kernels",  "graph_kernels_matched",  "graph_gpu_share"};
  for (size_t i = 0; i < base; i++)
    if (!(m->extra[i].name = xr_arena_strdup(b->arena, names[i]))) return XR_RESOURCE_EXHAUSTED;
  if (c->world_size > 0) {
    if (!(m->extra[world].name = xr_arena_strdup(b->arena, "world_size")))
      return XR_RESOURCE_EXHAUSTED;
    m->extra[world++].value = (xr_value_t){.kind = XR_VALUE_INT, .as.i = c->world_size};
  }
  if (c->has_trace_rank) {
    if (!(m->extra[world].name = xr_arena_strdup(b->arena, "trace_rank")))
      return XR_RESOURCE_EXHAUSTED;
    m->extra[world].value = (xr_value_t){.kind = XR_VALUE_INT, .as.i = c->trace_rank};
  }
  double busy = c->sum.gpu_busy_us;
  m->extra[0].value = (xr_value_t){.kind = XR_VALUE_FLOAT, .as.f = busy};
  m->extra[1].value = (xr_value_t){.kind = XR_VALUE_FLOAT,
                                   .as.f = busy > 0 ? c->sum.gpu_covered_us / busy : 0};
  if ((st = xr_value_make_string(b->arena, &m->extra[2].value,
                                 c->opt->outermost ? "outermost" : "innermost")) != XR_OK)
    return st;
  m->extra[3].value = (xr_value_t){.kind = XR_VALUE_INT, .as.i = (int64_t)c->sum.gpu_events};
  if (graphs) {
    const size_t counts[4] = {c->sum.graph_launches, c->sum.graph_launches_matched,
                              c->sum.graph_kernels, c->sum.graph_kernels_matched};
    for (size_t i = 0; i < 4; i++)
      m->extra[4 + i].value = (xr_value_t){.kind = XR_VALUE_INT, .as.i = (int64_t)counts[i]};
    m->extra[8].value = (xr_value_t){.kind = XR_VALUE_FLOAT,
                                     .as.f = busy > 0 ? c->sum.graph_covered_us / busy : 0};
  }
  return XR_OK;
}

static xr_status_t build_bundle(ctx_t *c, xr_bundle_t *b) {
  size_t nschemas;
  const char *const *texts = xr_schema_builtin(&nschemas);
  xr_schema_t *schemas = malloc(nschemas * sizeof *schemas);
  group_t **sorted = malloc((c->groups.n ? c->groups.n : 1) * sizeof *sorted);
  if (!schemas || !sorted) {
    free(schemas), free(sorted);
    return xr_extract_oom(c);
  }
  xr_status_t st = XR_OK;
  for (size_t i = 0; st == XR_OK && i < nschemas; i++) st = xr_schema_parse(texts[i], &schemas[i]);
  for (size_t i = 0; i < c->groups.n; i++) sorted[i] = &c->groups.v[i];
  xr_extract_sort(sorted, c->groups.n, sizeof *sorted, cmp_group_ptr);
  size_t limit = c->opt->top ? c->opt->top : SIZE_MAX, kept = 0;
  build_t B = {.c = c, .b = b};
  for (size_t gi = 0; st == XR_OK && gi < c->groups.n; gi++) {
    group_t *g = sorted[gi];
    if (kept >= limit) {
      c->sum.ops_filtered++;
      continue;
    }
    const char *name = c->strs.strs[g->name];
    xr_jreader_t *r = NULL;
    jnode_t root = {0};
    xr_jtok_t t;
    st = xr_jreader_open_memory(c->strs.strs[g->args], c->strs.lens[g->args], c->name, &r);
    if (st == XR_OK && (st = xr_jreader_next(r, &t)) == XR_OK) st = dom_parse(r, t, &root);
    xr_jreader_close(r);
    if (st != XR_OK) {
      dom_free(&root);
      if (st == XR_RESOURCE_EXHAUSTED) break;
      st = xr_error(XR_INTERNAL, "%s: %s: re-reading argument text failed: %s", c->name, name,
                    xr_last_error());
      break;
    }
    recorded_t rec;
    comms_t cm;
    char why[256];
    const jnode_t *comms = dom_get(&root, "m");
    if (comms ? !check_comms(comms, &cm, why, sizeof why)
              : !check_recorded(&root, &rec, why, sizeof why)) {
      if (comms && cm.collective)
        xr_extract_warn(c, "%s (%s): skipped: %s", name, cm.collective, why);
      else
        xr_extract_warn(c, "%s: skipped: %s", name, why);
      c->sum.ops_bad_args++;
      dom_free(&root);
      continue;
    }
    if (comms) {
      st = build_comms_op(&B, g, comms, &cm);
    } else {
      const char *target = xr_schema_alias_target(name);
      const xr_schema_t *sc = target ? match_schema(schemas, nschemas, target, &rec) : NULL;
      const char *alias = sc ? name : NULL;
      if (!sc) sc = match_schema(schemas, nschemas, name, &rec);
      if (!rec.c) c->any_concrete_missing = true;
      st = build_op(&B, g, &rec, sc, alias);
    }
    dom_free(&root);
    if (st == XR_RESOURCE_EXHAUSTED) st = xr_extract_oom(c);
    if (st != XR_OK) break;
    g->kept = true;
    kept++;
    c->sum.op_instances += (size_t)g->count;
    c->sum.ops_gpu_time_us += (double)g->gpu_ns / 1000.0;
  }
  c->sum.unique_ops = kept;
  if (c->sum.ops_unnamed)
    xr_extract_warn(c, "%zu cpu_op events have no name: not ops, skipped", c->sum.ops_unnamed);
  if (c->any_concrete_missing)
    xr_extract_warn(c, "the trace has no \"Concrete Inputs\" (older PyTorch): scalar arguments "
                       "set from schema defaults or None");
  free(schemas);
  free(sorted);
  return st;
}

static xr_status_t compute_busy(ctx_t *c) {
  interval_t *iv = malloc((c->gpu.n ? c->gpu.n : 1) * sizeof *iv);
  if (!iv) return xr_extract_oom(c);
  size_t n = 0, m = 0;
  for (size_t i = 0; i < c->gpu.n; i++)
    iv[n++] = (interval_t){c->gpu.v[i].ts, c->gpu.v[i].ts + c->gpu.v[i].dur};
  c->sum.gpu_busy_us = (double)union_length(iv, n) / 1000.0;
  for (int graph = 0; graph < 2; graph++) { /* all kept GPU work, then that inside graphs */
    m = 0;
    for (size_t i = 0; i < c->gpu.n; i++) {
      const gpu_event_t *g = &c->gpu.v[i];
      if (g->group >= 0 && c->groups.v[g->group].kept && (!graph || g->replay >= 0))
        iv[m++] = (interval_t){g->ts, g->ts + g->dur};
    }
    double us = (double)union_length(iv, m) / 1000.0;
    if (graph) c->sum.graph_covered_us = us;
    else c->sum.gpu_covered_us = us;
  }
  free(iv);
  return XR_OK;
}

static void ctx_free(ctx_t *c) {
  strtab_free(&c->strs);
  strtab_free(&c->warn);
  free(c->ops.v);
  free(c->launches.v);
  free(c->flows.v);
  free(c->gpu.v);
  free(c->anns.v);
  free(c->graphs.v);
  free(c->claunches.v);
  free(c->marks.v);
  free(c->segments.v);
  free(c->captures);
  free(c->graph_order);
  for (size_t i = 0; i < c->groups.n; i++) free(c->groups.v[i].k);
  free(c->groups.v);
  free(c->gslots);
  free(c->device_name);
  free(c->runtime_version);
  free(c->capture_date);
}

void xr_extract_summary_free(xr_extract_summary_t *s) {
  if (!s) return;
  for (size_t i = 0; i < s->warning_count; i++) free(s->warnings[i]);
  free(s->warnings);
  s->warnings = NULL;
  s->warning_count = 0;
}

/* Each capture trace, read into the same records as source 1, 2, ... */
static xr_status_t read_captures(ctx_t *c) {
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
    c->saw_trace_events = false;
    st = read_trace(c, r);
    xr_jreader_close(r);
  }
  c->source = 0;
  c->name = c->trace_name;
  return st;
}

static xr_status_t run(ctx_t *c, xr_jreader_t *r, xr_bundle_t **out_bundle,
                       xr_extract_summary_t *out_summary) {
  xr_bundle_t *b = NULL;
  c->trace_name = c->name;
  xr_status_t st = read_trace(c, r);
  if (st == XR_OK) st = read_captures(c);
  if (st == XR_OK) {
    xr_extract_sort(c->anns.v, c->anns.n, sizeof *c->anns.v, cmp_ann);
    st = xr_extract_find_captures(c);
  }
  if (st == XR_OK) st = attribute(c);
  if (st == XR_OK) st = xr_extract_match_graphs(c);
  if (st == XR_OK) st = group_ops(c);
  if (st == XR_OK) st = xr_bundle_create(&b);
  if (st == XR_OK) st = build_bundle(c, b);
  if (st == XR_OK) st = compute_busy(c);
  if (st == XR_OK) st = fill_metadata(c, b);
  if (st == XR_RESOURCE_EXHAUSTED) st = xr_extract_oom(c);
  if (st == XR_OK && out_summary) {
    c->sum.warning_count = 0;
    c->sum.warnings = calloc(c->warn.count ? c->warn.count : 1, sizeof *c->sum.warnings);
    if (!c->sum.warnings) st = xr_extract_oom(c);
    for (size_t i = 0; st == XR_OK && i < c->warn.count; i++) {
      if (!(c->sum.warnings[i] = strdup(c->warn.strs[i]))) st = xr_extract_oom(c);
      else c->sum.warning_count++;
    }
    if (st == XR_OK) *out_summary = c->sum;
    else xr_extract_summary_free(&c->sum);
  }
  if (st != XR_OK) {
    xr_bundle_destroy(b);
    b = NULL;
  }
  *out_bundle = b;
  ctx_free(c);
  return st;
}

static const xr_extract_options_t default_options = {0};

xr_status_t xr_trace_extract(const char *path, const xr_extract_options_t *options,
                             xr_bundle_t **out_bundle, xr_extract_summary_t *out_summary) {
  if (!path || !out_bundle)
    return xr_error(XR_INVALID_ARGUMENT, "xr_trace_extract: path and out_bundle are required");
  *out_bundle = NULL;
  if (out_summary) memset(out_summary, 0, sizeof *out_summary);
  xr_jreader_t *r;
  xr_status_t st = xr_jreader_open_path(path, &r);
  if (st != XR_OK) return st;
  ctx_t c = {.name = path, .opt = options ? options : &default_options};
  st = run(&c, r, out_bundle, out_summary);
  xr_jreader_close(r);
  return st;
}

xr_status_t xr_trace_extract_memory(const char *data, size_t size, const char *name,
                                    const xr_extract_options_t *options, xr_bundle_t **out_bundle,
                                    xr_extract_summary_t *out_summary) {
  if (!data || !name || !out_bundle)
    return xr_error(XR_INVALID_ARGUMENT,
                    "xr_trace_extract_memory: data, name and out_bundle are required");
  *out_bundle = NULL;
  if (out_summary) memset(out_summary, 0, sizeof *out_summary);
  xr_jreader_t *r;
  xr_status_t st = xr_jreader_open_memory(data, size, name, &r);
  if (st != XR_OK) return st;
  ctx_t c = {.name = name, .opt = options ? options : &default_options};
  st = run(&c, r, out_bundle, out_summary);
  xr_jreader_close(r);
  return st;
}
