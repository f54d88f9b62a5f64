/* Graph-mode traces: the kernels of each CUDA/HIP graph launch, credited to the ops that
 * launched them while the graph was captured.
 *
 * A capture trace holds stream captures: the runtime calls between a cudaStreamBeginCapture and
 * its cudaStreamEndCapture (hip* alike) on one thread. Each launch, memcpy or memset issued in
 * there became one node of the graph, and each ran inside an op whose recorded arguments are
 * the op's shapes. A graph launch in the trace replays one of those captures: its kernels, in
 * start order, are the capture's launches in issue order.
 *
 * Matching, per graph launch: pick the capture trace (the one captured for the smallest batch at
 * least the launch's iteration batch, when both are known; else each in turn), then the stream
 * capture (the one after the previous match first, then the others). Two rules pair the kernels:
 *
 * 1. Graph node ids. Where the launch's kernels and a stream capture's launches all carry
 *    args."graph node id" ((graph id << 32) | ordinal), each kernel joins the launch of its
 *    ordinal, whatever stream it ran on. The join is declined (counted, the reason warned, and
 *    rule 2 used) on kernels or launches without an id, duplicate ordinals, another count,
 *    ordinals that differ, or a pair whose kind, grid and block, or names (where both sides
 *    record one) disagree: the names are checkpoints.
 * 2. Alignment of the two sequences in start and issue order: kernels match launches by
 *    normalized name (no return type, template arguments or parameter list), memcpy with memcpy,
 *    memset with memset, and grid and block when both record them; a launch that records no
 *    name pairs by position. A missing or extra kernel is skipped by looking ahead a few places.
 *    A launch is taken when at least 90% of its kernels and of the capture's launches pair up.
 *
 * Unpaired kernels are counted and named, and a launch no capture fits is left out and named,
 * never guessed. */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/file.h"
#include "formats/trace_extract_internal.h"

/* Places looked ahead for the next pair when a kernel and a launch do not match. */
#define LOOKAHEAD 16

/* ------------------------------------------------------------------------------------------ */
/* stream captures                                                                             */

static int cmp_thread_ts(int64_t s1, int64_t p1, int64_t t1, int64_t ts1, int64_t s2, int64_t p2,
                         int64_t t2, int64_t ts2) {
  int t = xr_extract_cmp_thread(s1, p1, t1, s2, p2, t2);
  return t ? t : ts1 < ts2 ? -1 : ts1 > ts2;
}

static int cmp_mark(const void *a, const void *b) {
  const capture_mark_t *x = a, *y = b;
  int t = cmp_thread_ts(x->source, x->pid, x->tid, x->ts, y->source, y->pid, y->tid, y->ts);
  return t ? t : (int)x->begin - (int)y->begin; /* at one instant, an end closes first */
}

static int cmp_capture_launch(const void *a, const void *b) {
  const capture_launch_t *x = a, *y = b;
  return cmp_thread_ts(x->source, x->pid, x->tid, x->ts, y->source, y->pid, y->tid, y->ts);
}

/* The first capture launch at or after (source, pid, tid, ts). */
static size_t lower_bound(const ctx_t *c, int32_t source, int64_t pid, int64_t tid, int64_t ts) {
  size_t lo = 0, hi = c->claunches.n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const capture_launch_t *l = &c->claunches.v[mid];
    if (cmp_thread_ts(l->source, l->pid, l->tid, l->ts, source, pid, tid, ts) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static double us(int64_t ns) {
  return (double)ns / 1000.0;
}

static xr_status_t add_segment(ctx_t *c, const capture_mark_t *begin, const capture_mark_t *end) {
  size_t lo = lower_bound(c, begin->source, begin->pid, begin->tid, begin->end);
  size_t hi = lower_bound(c, end->source, end->pid, end->tid, end->ts);
  if (hi < lo) hi = lo;
  for (size_t i = lo; i < hi; i++) c->claunches.v[i].in_segment = true;
  segment_t s = {.first = lo, .count = hi - lo};
  return VEC_PUSH(c->segments, s) ? XR_OK : xr_extract_oom(c);
}

xr_status_t xr_extract_find_captures(ctx_t *c) {
  if (!c->capture_count) return XR_OK;
  xr_extract_sort(c->marks.v, c->marks.n, sizeof *c->marks.v, cmp_mark);
  xr_extract_sort(c->claunches.v, c->claunches.n, sizeof *c->claunches.v, cmp_capture_launch);
  size_t mi = 0;
  for (size_t s = 1; s <= c->capture_count; s++) {
    capture_t *cap = &c->captures[s - 1];
    cap->first_segment = c->segments.n;
    const capture_mark_t *open = NULL;
    for (; mi < c->marks.n && c->marks.v[mi].source == (int32_t)s; mi++) {
      const capture_mark_t *m = &c->marks.v[mi];
      if (open && (open->pid != m->pid || open->tid != m->tid)) {
        xr_extract_warn(c, "%s: the stream capture begun at %.3f us never ends; left out",
                        cap->path, us(open->ts));
        open = NULL;
      }
      if (m->begin) {
        if (open)
          xr_extract_warn(c, "%s: the stream capture begun at %.3f us never ends; left out",
                          cap->path, us(open->ts));
        open = m;
      } else if (!open) {
        xr_extract_warn(c, "%s: a stream capture ends at %.3f us without a begin; ignored",
                        cap->path, us(m->ts));
      } else {
        xr_status_t st = add_segment(c, open, m);
        if (st != XR_OK) return st;
        open = NULL;
      }
    }
    if (open)
      xr_extract_warn(c, "%s: the stream capture begun at %.3f us never ends; left out", cap->path,
                      us(open->ts));
    cap->segment_count = c->segments.n - cap->first_segment;
    if (!cap->segment_count)
      return xr_error(XR_INVALID_ARGUMENT,
                      "%s: not a capture trace: no stream capture in it (a cudaStreamBeginCapture "
                      "or hipStreamBeginCapture followed by its EndCapture)",
                      cap->path);
    c->sum.capture_segments += cap->segment_count;
  }
  size_t unnamed = 0;
  for (size_t i = 0; i < c->claunches.n; i++) {
    const capture_launch_t *l = &c->claunches.v[i];
    unnamed +=
        l->in_segment && l->kind == GPU_KERNEL && c->strs.lens[l->kernel] == 0 && !l->has_node;
  }
  if (unnamed)
    xr_extract_warn(c,
                    "%zu captured kernel launches record no kernel name (args.kernel) and no "
                    "graph node id: they are paired with graph kernels by position alone",
                    unnamed);
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* kernel names                                                                                */

/* "void at::native::f<4, float>(int, float*)" -> "at::native::f": without return type,
 * template arguments, parameter list and spaces, so that spellings of one kernel compare equal.
 * Mangled names stay as they are. `out` holds strlen(name) + 1. */
static size_t normalize_kernel(const char *name, char *out) {
  size_t n = strlen(name);
  if (strncmp(name, "void ", 5) == 0) name += 5, n -= 5;
  if (n && name[n - 1] == ')') { /* the parameter list: back to its opening parenthesis */
    int depth = 0;
    for (size_t i = n; i > 0; i--) {
      if (name[i - 1] == ')')
        depth++;
      else if (name[i - 1] == '(' && --depth == 0) {
        n = i - 1;
        break;
      }
    }
  }
  size_t o = 0;
  int angle = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = name[i];
    if (ch == '<')
      angle++;
    else if (ch == '>' && angle > 0)
      angle--;
    else if (!angle && ch != ' ')
      out[o++] = ch;
  }
  out[o] = '\0';
  return o;
}

typedef struct names {
  uint32_t *norm; /* normalized id per string id below `count`, UINT32_MAX not yet */
  size_t count;
  char *buf;
  size_t buf_cap;
} names_t;

static int64_t normalized(ctx_t *c, names_t *nm, uint32_t id) {
  if (id >= nm->count) return id;
  if (nm->norm[id] != UINT32_MAX) return nm->norm[id];
  size_t need = c->strs.lens[id] + 1;
  if (need > nm->buf_cap) {
    char *b = realloc(nm->buf, need);
    if (!b) return -1;
    nm->buf = b;
    nm->buf_cap = need;
  }
  size_t n = normalize_kernel(c->strs.strs[id], nm->buf);
  int64_t out = xr_extract_intern(&c->strs, nm->buf, n);
  if (out >= 0) nm->norm[id] = (uint32_t)out;
  return out;
}

/* ------------------------------------------------------------------------------------------ */
/* alignment                                                                                   */

typedef struct aligner {
  ctx_t *c;
  names_t names;
  bool failed; /* out of memory */
} aligner_t;

static bool pairs_up(aligner_t *a, const gpu_event_t *g, const capture_launch_t *l) {
  if (g->kind != l->kind) return false;
  if (g->kind != GPU_KERNEL) return true;
  if (g->dims && l->dims && g->dims != l->dims) return false;
  if (a->c->strs.lens[l->kernel] == 0) return true; /* no name recorded: by position */
  int64_t x = normalized(a->c, &a->names, g->name), y = normalized(a->c, &a->names, l->kernel);
  if (x < 0 || y < 0) a->failed = true;
  return x == y;
}

/* Pairs kernels[0..n) with the segment's launches in order; pair[i] is the launch index or -1.
 * Returns the number of pairs; gives up (pairs left unset) once more than a tenth of the kernels
 * went unpaired, which good_enough would refuse: a wrong capture costs little to rule out. */
static size_t align(aligner_t *a, const uint32_t *kernels, size_t n, const segment_t *seg,
                    int64_t *pair) {
  const gpu_event_t *gpu = a->c->gpu.v;
  size_t m = seg->count, i = 0, j = 0, paired = 0;
  const capture_launch_t *cl = m ? a->c->claunches.v + seg->first : NULL; /* none: may be NULL */
  while (i < n && j < m) {
    if ((i - paired) * 10 > n) return paired;
    if (pairs_up(a, &gpu[kernels[i]], &cl[j])) {
      pair[i++] = (int64_t)(seg->first + j++);
      paired++;
      continue;
    }
    size_t d = 1;
    int skip = 0; /* 1: extra launches in the capture, 2: extra kernels in the replay */
    for (; d <= LOOKAHEAD && !skip; d++) {
      if (j + d < m && pairs_up(a, &gpu[kernels[i]], &cl[j + d]))
        skip = 1;
      else if (i + d < n && pairs_up(a, &gpu[kernels[i + d]], &cl[j]))
        skip = 2;
    }
    d--;
    if (skip == 1) {
      j += d;
    } else if (skip == 2) {
      for (size_t k = 0; k < d; k++) pair[i++] = -1;
    } else { /* neither resynchronises: one kernel and one launch differ */
      pair[i++] = -1;
      j++;
    }
  }
  while (i < n) pair[i++] = -1;
  return paired;
}

static bool good_enough(size_t paired, size_t kernels, size_t launches) {
  return paired * 10 >= kernels * 9 && paired * 10 >= launches * 9;
}

/* ------------------------------------------------------------------------------------------ */
/* matching graph launches                                                                     */

typedef struct unpaired {
  uint32_t name;
  int64_t count;
} unpaired_t;

/* Rule 1's state: each stream capture's launches by ordinal, and the declines by reason. */
enum { SEG_NO_IDS, SEG_IDS, SEG_PARTIAL, SEG_DUPLICATE };
enum {
  DECLINE_MISSING,
  DECLINE_DUPLICATE,
  DECLINE_COUNT,
  DECLINE_ORDINAL,
  DECLINE_CHECKPOINT,
  DECLINE_KINDS
}; /* from the least telling reason to the most */
static const char *const decline_what[DECLINE_KINDS] = {
    "kernels or captured launches without a graph node id", "duplicate ordinals", "counts differ",
    "ordinals differ", "a joined pair disagrees (kind, grid and block, or name)"};

typedef struct node_join {
  uint8_t *state; /* per segment, SEG_*; NULL when no captured launch carries an id */
  uint32_t *dup;  /* per segment: SEG_DUPLICATE its repeated ordinal, SEG_PARTIAL how many
                     launches lack an id */
  uint32_t
      *sorted; /* claunches.n: each SEG_IDS segment's launch indices by ordinal, in its range */
  uint32_t *rsorted; /* positions in a launch's kernels, by ordinal */
  char why[300];     /* the most telling reason found for the launch being joined */
  int why_rank;      /* its DECLINE_*, -1 none */
  size_t declined[DECLINE_KINDS], no_capture_ids;
  char first[DECLINE_KINDS][400];
} node_join_t;

typedef struct matcher {
  aligner_t a;
  node_join_t j;
  int64_t *pair;
  int32_t *candidates; /* capture_count entries */
  VEC(unpaired_t) unpaired;
  size_t skipped_launches, skipped_kernels, empty_launches;
  char first_skip[400];
} matcher_t;

static void note_skip(matcher_t *M, const graph_launch_t *gl, size_t kernels, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void note_skip(matcher_t *M, const graph_launch_t *gl, size_t kernels, const char *fmt,
                      ...) {
  M->skipped_launches++;
  M->skipped_kernels += kernels;
  if (M->first_skip[0]) return;
  int n = snprintf(M->first_skip, sizeof M->first_skip,
                   "the graph launch at %.3f us (%zu kernels): ", us(gl->ts), kernels);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof M->first_skip)
    vsnprintf(M->first_skip + n, sizeof M->first_skip - (size_t)n, fmt, ap);
  va_end(ap);
}

/* The capture traces to try for a launch of `batch` tokens (0 unknown), in order, into `out`
 * (capture_count entries); none, with the reason in `why`, when no capture can hold it. */
static size_t candidates(const ctx_t *c, int64_t batch, int32_t *out, char *why, size_t why_size) {
  if (c->capture_count == 1) {
    const capture_t *cap = &c->captures[0];
    if (batch > 0 && cap->batch_size > 0 && cap->batch_size < batch) {
      snprintf(why, why_size, "%s was captured for batch %lld, the launch ran %lld tokens",
               cap->path, (long long)cap->batch_size, (long long)batch);
      return 0;
    }
    out[0] = 1;
    return 1;
  }
  size_t n = 0;
  int64_t best = 0; /* the smallest batch size that holds the launch */
  for (size_t s = 1; batch > 0 && s <= c->capture_count; s++) {
    int64_t bs = c->captures[s - 1].batch_size;
    if (bs >= batch && (!best || bs < best)) best = bs;
  }
  if (best) { /* a FULL and a PIECEWISE capture of one size: alignment tells them apart */
    for (size_t s = 1; s <= c->capture_count; s++)
      if (c->captures[s - 1].batch_size == best) out[n++] = (int32_t)s;
  } else {
    for (size_t s = 1; s <= c->capture_count; s++) /* batch unknown, or sizes not recorded */
      if (batch <= 0 || c->captures[s - 1].batch_size == 0) out[n++] = (int32_t)s;
    if (!n)
      snprintf(why, why_size, "no capture trace was captured for a batch of %lld tokens or more",
               (long long)batch);
  }
  return n;
}

/* The iteration hints for the hinted ops a launch replays: its annotation's, with the requests
 * a FULL graph was padded by counted as decodes of one token. */
static xr_status_t replay_hints(ctx_t *c, graph_launch_t *gl, const annotation_t *ann,
                                const capture_t *cap) {
  if (!ann) return XR_OK;
  int64_t v[6];
  memcpy(v, ann->v, sizeof v);
  int64_t pad = cap->batch_size - (v[1] + v[3]);
  if (cap->batch_size > 0 && pad > 0) v[2] += pad, v[3] += pad;
  gl->hints = xr_extract_intern_hints(c, v);
  return gl->hints < 0 ? xr_extract_oom(c) : XR_OK;
}

/* Credits the paired kernels of one launch to the captured ops. */
static xr_status_t apply(matcher_t *M, const uint32_t *kernels, size_t n, const int64_t *pair) {
  ctx_t *c = M->a.c;
  for (size_t i = 0; i < n; i++) {
    gpu_event_t *g = &c->gpu.v[kernels[i]];
    if (pair[i] >= 0) {
      g->op = c->claunches.v[pair[i]].op;
      c->sum.graph_kernels_matched++;
      if (g->op < 0) c->sum.gpu_without_op++;
      continue;
    }
    size_t k = 0;
    while (k < M->unpaired.n && M->unpaired.v[k].name != g->name) k++;
    if (k == M->unpaired.n) {
      unpaired_t u = {.name = g->name};
      if (!VEC_PUSH(M->unpaired, u)) return xr_extract_oom(c);
    }
    M->unpaired.v[k].count++;
  }
  return XR_OK;
}

/* The launch replays stream capture k of capture trace `source`: credit its paired kernels. */
static xr_status_t take(matcher_t *M, graph_launch_t *gl, const annotation_t *ann, int32_t source,
                        size_t k, const uint32_t *kernels, size_t n) {
  ctx_t *c = M->a.c;
  capture_t *cap = &c->captures[source - 1];
  gl->capture = source;
  cap->cursor = k + 1;
  cap->replays++;
  c->sum.graph_launches_matched++;
  xr_status_t st = replay_hints(c, gl, ann, cap);
  return st == XR_OK ? apply(M, kernels, n, M->pair) : st;
}

/* ---- rule 1: graph node ids ---- */

static int cmp_launch_node(const void *a, const void *b, void *ctx) {
  const capture_launch_t *l = ctx;
  uint32_t x = l[*(const uint32_t *)a].node, y = l[*(const uint32_t *)b].node;
  if (x != y) return x < y ? -1 : 1;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

typedef struct kernel_nodes {
  const gpu_event_t *gpu;
  const uint32_t *kernels;
} kernel_nodes_t;

static int cmp_kernel_node(const void *a, const void *b, void *ctx) {
  const kernel_nodes_t *k = ctx;
  uint32_t x = k->gpu[k->kernels[*(const uint32_t *)a]].node;
  uint32_t y = k->gpu[k->kernels[*(const uint32_t *)b]].node;
  if (x != y) return x < y ? -1 : 1;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Sorts each stream capture's launches by ordinal and classifies it; leaves J->state NULL when
 * no captured launch carries a graph node id (older traces: rule 1 never applies). */
static xr_status_t node_prepare(ctx_t *c, node_join_t *J, size_t max_kernels) {
  bool any = false;
  for (size_t i = 0; i < c->claunches.n && !any; i++)
    any = c->claunches.v[i].in_segment && c->claunches.v[i].has_node;
  if (!any) return XR_OK;
  size_t ns = c->segments.n;
  J->state = calloc(ns, sizeof *J->state);
  J->dup = calloc(ns, sizeof *J->dup);
  J->sorted = malloc(c->claunches.n * sizeof *J->sorted);
  J->rsorted = malloc((max_kernels ? max_kernels : 1) * sizeof *J->rsorted);
  if (!J->state || !J->dup || !J->sorted || !J->rsorted) return xr_extract_oom(c);
  const capture_launch_t *cl = c->claunches.v;
  for (size_t s = 0; s < ns; s++) {
    const segment_t *seg = &c->segments.v[s];
    size_t ids = 0;
    for (size_t i = 0; i < seg->count; i++) ids += cl[seg->first + i].has_node;
    if (!ids) continue; /* SEG_NO_IDS */
    if (ids < seg->count) {
      J->state[s] = SEG_PARTIAL;
      J->dup[s] = (uint32_t)(seg->count - ids);
      continue;
    }
    uint32_t *v = J->sorted + seg->first;
    for (size_t i = 0; i < seg->count; i++) v[i] = (uint32_t)(seg->first + i);
    if (seg->count > 1) qsort_r(v, seg->count, sizeof *v, cmp_launch_node, (void *)cl);
    J->state[s] = SEG_IDS;
    for (size_t i = 1; i < seg->count; i++)
      if (cl[v[i]].node == cl[v[i - 1]].node) {
        J->state[s] = SEG_DUPLICATE;
        J->dup[s] = cl[v[i]].node;
        break;
      }
  }
  return XR_OK;
}

static void node_reason(node_join_t *J, int rank, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void node_reason(node_join_t *J, int rank, const char *fmt, ...) {
  if (rank <= J->why_rank) return; /* a reason as telling was found first */
  J->why_rank = rank;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(J->why, sizeof J->why, fmt, ap);
  va_end(ap);
}

static const char *kind_word(uint8_t kind) {
  return kind == GPU_MEMCPY ? "a memcpy" : kind == GPU_MEMSET ? "a memset" : "a kernel";
}

/* Joins kernels[0..n) (positions sorted by ordinal in J->rsorted) with the stream capture's
 * launches ordinal by ordinal into M->pair; false, with the reason noted, when they disagree. */
static bool node_pairs(matcher_t *M, const uint32_t *kernels, size_t n, const segment_t *seg,
                       const char *where) {
  node_join_t *J = &M->j;
  ctx_t *c = M->a.c;
  const gpu_event_t *gpu = c->gpu.v;
  const capture_launch_t *cl = c->claunches.v;
  const uint32_t *ls = J->sorted + seg->first;
  if (seg->count != n) {
    node_reason(J, DECLINE_COUNT, "%zu kernels with graph node ids, %zu launches in %s", n,
                seg->count, where);
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    const gpu_event_t *g = &gpu[kernels[J->rsorted[i]]];
    const capture_launch_t *l = &cl[ls[i]];
    if (g->node != l->node) {
      if (g->node < l->node) /* the smaller ordinal is the one the other side lacks */
        node_reason(J, DECLINE_ORDINAL, "ordinal %u of kernel '%s' has no launch in %s", g->node,
                    c->strs.strs[g->name], where);
      else
        node_reason(J, DECLINE_ORDINAL, "ordinal %u of a launch in %s has no kernel", l->node,
                    where);
      return false;
    }
    if (g->kind != l->kind) {
      node_reason(J, DECLINE_CHECKPOINT, "ordinal %u is %s ('%s'), %s in %s", g->node,
                  kind_word(g->kind), c->strs.strs[g->name], kind_word(l->kind), where);
      return false;
    }
    if (g->kind != GPU_KERNEL) continue;
    if (g->dims && l->dims && g->dims != l->dims) {
      node_reason(J, DECLINE_CHECKPOINT,
                  "ordinal %u: kernel '%s' ran another grid or block than %s launched", g->node,
                  c->strs.strs[g->name], where);
      return false;
    }
    if (c->strs.lens[l->kernel] == 0) continue; /* no name: the ordinal alone */
    int64_t x = normalized(c, &M->a.names, g->name), y = normalized(c, &M->a.names, l->kernel);
    if (x < 0 || y < 0) {
      M->a.failed = true;
      return false;
    }
    if (x != y) {
      node_reason(J, DECLINE_CHECKPOINT, "ordinal %u: kernel '%s', but %s launched '%s'", g->node,
                  c->strs.strs[g->name], where, c->strs.strs[l->kernel]);
      return false;
    }
  }
  for (size_t i = 0; i < n; i++) M->pair[J->rsorted[i]] = (int64_t)ls[i];
  return true;
}

/* Rule 1 for one launch over its candidate captures: *joined when a stream capture's launches
 * join its kernels by graph node id (the launch is then taken); otherwise a launch whose kernels
 * and some candidate stream capture carry ids is declined, counted with its most telling
 * reason, and left to rule 2. */
static xr_status_t node_join(matcher_t *M, graph_launch_t *gl, const annotation_t *ann,
                             const uint32_t *kernels, size_t n, const int32_t *cand, size_t nc,
                             bool *joined) {
  *joined = false;
  ctx_t *c = M->a.c;
  node_join_t *J = &M->j;
  const gpu_event_t *gpu = c->gpu.v;
  size_t with = 0;
  for (size_t i = 0; i < n; i++) with += gpu[kernels[i]].has_node;
  if (!with || !nc) return XR_OK;
  bool any = false; /* a candidate stream capture with graph node ids */
  for (size_t ci = 0; J->state && ci < nc && !any; ci++) {
    const capture_t *cap = &c->captures[cand[ci] - 1];
    for (size_t t = 0; t < cap->segment_count && !any; t++)
      any = J->state[cap->first_segment + t] != SEG_NO_IDS;
  }
  if (!any) {
    J->no_capture_ids++;
    return XR_OK;
  }
  J->why_rank = -1;
  J->why[0] = '\0';
  if (with < n) {
    node_reason(J, DECLINE_MISSING, "%zu of its %zu kernels carry no graph node id", n - with, n);
  } else {
    for (size_t i = 0; i < n; i++) J->rsorted[i] = (uint32_t)i;
    kernel_nodes_t kn = {.gpu = gpu, .kernels = kernels};
    if (n > 1) qsort_r(J->rsorted, n, sizeof *J->rsorted, cmp_kernel_node, &kn);
    for (size_t i = 1; i < n; i++) {
      const gpu_event_t *a = &gpu[kernels[J->rsorted[i - 1]]], *b = &gpu[kernels[J->rsorted[i]]];
      if (a->node == b->node) {
        node_reason(J, DECLINE_DUPLICATE, "ordinal %u is on two of its kernels ('%s' and '%s')",
                    a->node, c->strs.strs[a->name], c->strs.strs[b->name]);
        break;
      }
    }
  }
  bool kernels_ok = J->why_rank < 0; /* else no stream capture can join them */
  for (size_t ci = 0; kernels_ok && ci < nc; ci++) {
    capture_t *cap = &c->captures[cand[ci] - 1];
    for (size_t t = 0; t < cap->segment_count; t++) {
      size_t k = (cap->cursor + t) % cap->segment_count, s = cap->first_segment + k;
      const segment_t *seg = &c->segments.v[s];
      if (J->state[s] == SEG_NO_IDS) continue;
      char where[200];
      snprintf(where, sizeof where, "stream capture %zu of %s", k + 1, cap->path);
      if (J->state[s] == SEG_PARTIAL) {
        node_reason(J, DECLINE_MISSING, "%u of the %zu launches in %s carry no graph node id",
                    J->dup[s], seg->count, where);
        continue;
      }
      if (J->state[s] == SEG_DUPLICATE) {
        node_reason(J, DECLINE_DUPLICATE, "ordinal %u is on two launches in %s", J->dup[s], where);
        continue;
      }
      bool ok = node_pairs(M, kernels, n, seg, where);
      if (M->a.failed) return xr_extract_oom(c);
      if (ok) {
        *joined = true;
        c->sum.graph_launches_node_joined++;
        c->sum.graph_kernels_node_joined += n;
        return take(M, gl, ann, cand[ci], k, kernels, n);
      }
    }
  }
  c->sum.graph_launches_node_declined++;
  int r = J->why_rank < 0 ? DECLINE_MISSING : J->why_rank;
  if (J->declined[r]++ == 0)
    snprintf(J->first[r], sizeof J->first[r], "the graph launch at %.3f us (%zu kernels): %s",
             us(gl->ts), n, J->why);
  return XR_OK;
}

/* ---- rule 2: alignment, and the launch as a whole ---- */

static xr_status_t match_launch(matcher_t *M, graph_launch_t *gl, const uint32_t *kernels,
                                size_t n) {
  ctx_t *c = M->a.c;
  const annotation_t *ann = xr_extract_iteration_at(c, gl->pid, gl->ts, gl->end);
  int64_t batch = ann ? ann->v[1] + ann->v[3] : 0;
  int32_t *cand = M->candidates;
  char why[300] = "";
  size_t nc = candidates(c, batch, cand, why, sizeof why);
  bool joined;
  xr_status_t st = node_join(M, gl, ann, kernels, n, cand, nc, &joined);
  if (st != XR_OK || joined) return st;
  size_t best = 0, best_launches = 0;
  const char *best_path = NULL;
  for (size_t ci = 0; ci < nc; ci++) {
    capture_t *cap = &c->captures[cand[ci] - 1];
    for (size_t t = 0; t < cap->segment_count; t++) {
      size_t k = (cap->cursor + t) % cap->segment_count;
      const segment_t *seg = &c->segments.v[cap->first_segment + k];
      size_t paired = align(&M->a, kernels, n, seg, M->pair);
      if (M->a.failed) return xr_extract_oom(c);
      if (good_enough(paired, n, seg->count)) return take(M, gl, ann, cand[ci], k, kernels, n);
      if (paired > best || !best_path)
        best = paired, best_launches = seg->count, best_path = cap->path;
    }
  }
  if (!nc)
    note_skip(M, gl, n, "%s", why);
  else
    note_skip(M, gl, n,
              "no stream capture fits (best: %zu of its kernels pair with %zu launches "
              "of %s)",
              best, best_launches, best_path);
  return XR_OK;
}

typedef struct kernel_order {
  const gpu_event_t *gpu;
  const uint32_t *rank; /* of each graph launch, by start */
} kernel_order_t;

static int cmp_graph_kernel(const void *a, const void *b, void *ctx) {
  const kernel_order_t *o = ctx;
  const gpu_event_t *x = &o->gpu[*(const uint32_t *)a], *y = &o->gpu[*(const uint32_t *)b];
  uint32_t rx = o->rank[x->replay], ry = o->rank[y->replay];
  if (rx != ry) return rx < ry ? -1 : 1;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int cmp_graph_start(const void *a, const void *b, void *ctx) {
  const graph_launch_t *g = ctx;
  const graph_launch_t *x = &g[*(const uint32_t *)a], *y = &g[*(const uint32_t *)b];
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void report(ctx_t *c, matcher_t *M) {
  const node_join_t *J = &M->j;
  for (int r = 0; r < DECLINE_KINDS; r++)
    if (J->declined[r])
      xr_extract_warn(c,
                      "%zu graph launches decline the graph node id join (%s); first, %s; "
                      "they are matched by kernel names and position instead",
                      J->declined[r], decline_what[r], J->first[r]);
  if (J->no_capture_ids)
    xr_extract_warn(c,
                    "%zu graph launches have kernels with graph node ids, but no launch in "
                    "their capture traces carries one (Kineto writes them on GPU activities, "
                    "not on a capture's runtime launches): matched by kernel names and "
                    "position",
                    J->no_capture_ids);
  for (size_t k = 0; k < M->unpaired.n; k++)
    xr_extract_warn(c,
                    "%lld kernels '%s' under matched graph launches pair with no captured "
                    "launch: left out",
                    (long long)M->unpaired.v[k].count, c->strs.strs[M->unpaired.v[k].name]);
  if (M->skipped_launches)
    xr_extract_warn(c,
                    "%zu graph launches (%zu kernels) match no capture and are left out; "
                    "first, %s",
                    M->skipped_launches, M->skipped_kernels, M->first_skip);
  if (M->empty_launches)
    xr_extract_warn(c, "%zu graph launches have no GPU events in the trace", M->empty_launches);
}

xr_status_t xr_extract_match_graphs(ctx_t *c) {
  if (!c->graphs.n) {
    if (c->capture_count)
      xr_extract_warn(c, "%s has no graph launches: the capture traces are not used", c->name);
    return XR_OK;
  }
  if (!c->capture_count) {
    if (c->sum.graph_kernels)
      xr_extract_warn(c,
                      "%zu GPU events under %zu graph launches carry no op: give the capture "
                      "traces (--capture, --capture-dir) to attribute them",
                      c->sum.graph_kernels, c->sum.graph_launches);
    return XR_OK;
  }
  size_t ng = c->graphs.n, nk = c->sum.graph_kernels;
  uint32_t *by_start = malloc(ng * sizeof *by_start), *rank = malloc(ng * sizeof *rank);
  uint32_t *kernels = malloc((nk ? nk : 1) * sizeof *kernels);
  matcher_t M = {.a = {.c = c}};
  M.pair = malloc((nk ? nk : 1) * sizeof *M.pair);
  M.candidates = malloc(c->capture_count * sizeof *M.candidates);
  M.a.names.count = c->strs.count;
  M.a.names.norm = malloc((c->strs.count ? c->strs.count : 1) * sizeof *M.a.names.norm);
  xr_status_t st = XR_OK;
  if (!by_start || !rank || !kernels || !M.pair || !M.candidates || !M.a.names.norm) {
    st = xr_extract_oom(c);
    goto done;
  }
  memset(M.a.names.norm, 0xff, c->strs.count * sizeof *M.a.names.norm);
  if ((st = node_prepare(c, &M.j, nk)) != XR_OK) goto done;
  for (size_t i = 0; i < ng; i++) by_start[i] = (uint32_t)i;
  qsort_r(by_start, ng, sizeof *by_start, cmp_graph_start, c->graphs.v);
  for (size_t i = 0; i < ng; i++) rank[by_start[i]] = (uint32_t)i;
  size_t n = 0;
  for (size_t i = 0; i < c->gpu.n; i++)
    if (c->gpu.v[i].replay >= 0) kernels[n++] = (uint32_t)i;
  kernel_order_t order = {.gpu = c->gpu.v, .rank = rank};
  if (n > 1) qsort_r(kernels, n, sizeof *kernels, cmp_graph_kernel, &order);

  /* Launch by launch, in start order; the kept launches' kernels stay in `kernels`, compacted. */
  size_t kept = 0, k = 0;
  for (size_t r = 0; st == XR_OK && r < ng; r++) {
    graph_launch_t *gl = &c->graphs.v[by_start[r]];
    size_t first = k;
    while (k < n && c->gpu.v[kernels[k]].replay == (int32_t)by_start[r]) k++;
    if (k == first) {
      M.empty_launches++;
      continue;
    }
    st = match_launch(&M, gl, kernels + first, k - first);
    if (st == XR_OK && gl->capture) {
      memmove(kernels + kept, kernels + first, (k - first) * sizeof *kernels);
      kept += k - first;
    }
  }
  if (st != XR_OK) goto done;
  if (M.empty_launches == ng) {
    st = xr_error(XR_INVALID_ARGUMENT,
                  "%s: its %zu graph launches have no GPU events (kernels) "
                  "in the trace: was GPU activity profiled?",
                  c->name, ng);
    goto done;
  }
  report(c, &M);
  if (!c->sum.graph_launches_matched && M.skipped_launches) {
    st = xr_error(XR_INVALID_ARGUMENT,
                  "%s: none of its %zu graph launches matches the capture "
                  "traces; first, %s",
                  c->name, c->sum.graph_launches, M.first_skip);
    goto done;
  }
  c->graph_order = kernels;
  c->graph_order_count = kept;
  kernels = NULL;
done:
  free(by_start);
  free(rank);
  free(kernels);
  free(M.pair);
  free(M.candidates);
  free(M.unpaired.v);
  free(M.a.names.norm);
  free(M.a.names.buf);
  free(M.j.state);
  free(M.j.dup);
  free(M.j.sorted);
  free(M.j.rsorted);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* execution_details.json                                                                      */

void xr_extract_captures_free(xr_extract_capture_t *captures, size_t count) {
  for (size_t i = 0; captures && i < count; i++) {
    free((char *)captures[i].path);
    free((char *)captures[i].mode);
  }
  free(captures);
}

static xr_status_t entry_error(const char *file, size_t i, const char *what) {
  return xr_error(XR_INVALID_ARGUMENT, "%s: [%zu]%s", file, i, what);
}

xr_status_t xr_extract_read_capture_dir(const char *dir, xr_extract_capture_t **out_captures,
                                        size_t *out_count) {
  if (!dir || !out_captures || !out_count)
    return xr_error(XR_INVALID_ARGUMENT, "xr_extract_read_capture_dir: arguments are required");
  *out_captures = NULL;
  *out_count = 0;
  char file[4096];
  if ((size_t)snprintf(file, sizeof file, "%s/execution_details.json", dir) >= sizeof file)
    return xr_error(XR_INVALID_ARGUMENT, "%s: path too long", dir);
  uint8_t *text;
  size_t size;
  xr_status_t st = xr_read_file(file, &text, &size);
  if (st != XR_OK) return st;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts((const char *)text, size, &end, 0);
  if (!root) {
    size_t at = end ? (size_t)(end - (const char *)text) : 0;
    free(text);
    return xr_error(XR_INVALID_ARGUMENT, "%s: not valid JSON (byte %zu)", file, at);
  }
  free(text);
  size_t n = cJSON_IsArray(root) ? (size_t)cJSON_GetArraySize(root) : 0;
  if (!cJSON_IsArray(root) || n == 0) {
    cJSON_Delete(root);
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: expected a non-empty list of {\"file\", \"batch_size\", \"mode\"}", file);
  }
  xr_extract_capture_t *caps = calloc(n, sizeof *caps);
  if (!caps) {
    cJSON_Delete(root);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory", file);
  }
  size_t i = 0;
  for (const cJSON *e = root->child; e && st == XR_OK; e = e->next, i++) {
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "file");
    const cJSON *bs = cJSON_GetObjectItemCaseSensitive(e, "batch_size");
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(e, "mode");
    if (!cJSON_IsObject(e))
      st = entry_error(file, i, ": not an object");
    else if (!cJSON_IsString(f) || !*f->valuestring)
      st = entry_error(file, i, ".file: missing or not a file name");
    else if (!cJSON_IsNumber(bs) || bs->valuedouble < 1 || bs->valuedouble > 1e9 ||
             bs->valuedouble != (double)(int64_t)bs->valuedouble)
      st = entry_error(file, i, ".batch_size: missing or not a positive integer");
    else if (mode && !cJSON_IsNull(mode) &&
             (!cJSON_IsString(mode) || (strcmp(mode->valuestring, "FULL") != 0 &&
                                        strcmp(mode->valuestring, "PIECEWISE") != 0)))
      st = entry_error(file, i, ".mode: not \"FULL\" or \"PIECEWISE\"");
    if (st != XR_OK) break;
    size_t len = strlen(dir) + strlen(f->valuestring) + 2;
    char *path = malloc(len);
    char *m = cJSON_IsString(mode) ? strdup(mode->valuestring) : NULL;
    if (!path || (cJSON_IsString(mode) && !m)) {
      free(path), free(m);
      st = xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory", file);
      break;
    }
    snprintf(path, len, "%s/%s", dir, f->valuestring);
    caps[i] =
        (xr_extract_capture_t){.path = path, .batch_size = (int64_t)bs->valuedouble, .mode = m};
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
      st = xr_error(XR_NOT_FOUND, "%s: [%zu].file: %s does not exist", file, i, path);
  }
  cJSON_Delete(root);
  if (st != XR_OK) {
    xr_extract_captures_free(caps, n);
    return st;
  }
  *out_captures = caps;
  *out_count = n;
  return XR_OK;
}
