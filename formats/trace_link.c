/* Trace extraction, stage 2: linking, attribution and grouping. Links each GPU event to its
 * launch (the runtime event with its correlation id, else the ac2g flow start), attributes each
 * launch to the cpu_op enclosing it (one sweep per thread over ops sorted by start), then credits
 * GPU time to groups of ops with the same name, argument text and iteration hints. */
#include <stdlib.h>
#include <string.h>

#include "formats/trace_extract_internal.h"
#include "formats/trace_schema.h"

/* ------------------------------------------------------------------------------------------ */
/* linking and attribution                                                                     */

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

static int cmp_ann(const void *a, const void *b) {
  const annotation_t *x = a, *y = b;
  return x->ts < y->ts ? -1 : x->ts > y->ts;
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

xr_status_t xr_extract_link(ctx_t *c) {
  /* Annotations by start, for xr_extract_iteration_at (graphs and group). */
  xr_extract_sort(c->anns.v, c->anns.n, sizeof *c->anns.v, cmp_ann);
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

static bool name_passes(const ctx_t *c, const char *name) {
  const char *f = c->opt->op_filter;
  if (!f || !*f) return true;
  if (strstr(name, f)) return true;
  const char *target = xr_schema_alias_target(name);
  return target && strstr(target, f);
}

/* The ops whose groups split by iteration (paged and unified attention). */
static bool is_hinted_op(const char *name) {
  return strstr(name, "paged_attention") || strstr(name, "unified_attention") ||
         strstr(name, "attention_with_output");
}

static size_t group_slot(const group_t *g, size_t cap) {
  uint64_t h = ((uint64_t)g->name * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)(uint32_t)g->args << 20) ^
               (uint64_t)(uint32_t)g->hints * 0xC2B2AE3D27D4EB4Full ^
               (uint64_t)(uint32_t)g->source << 44;
  return (h ^ (h >> 29)) & (cap - 1);
}

/* The groups' hash index: group index + 1, 0 empty. The group stage's own. */
typedef struct group_index {
  uint32_t *slots;
  size_t cap;
} group_index_t;

/* The group of ops with this name, argument text, iteration hints and source (eager, or the
 * capture trace that recorded them); a new one when there is none. */
static int64_t group_lookup(ctx_t *c, group_index_t *ix, uint32_t name, int32_t args, int32_t hints,
                            int32_t source) {
  if ((c->groups.n + 1) * 2 > ix->cap) {
    size_t cap = ix->cap ? ix->cap * 2 : 256;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < c->groups.n; i++) {
      size_t j = group_slot(&c->groups.v[i], cap);
      while (slots[j]) j = (j + 1) & (cap - 1);
      slots[j] = (uint32_t)i + 1;
    }
    free(ix->slots);
    ix->slots = slots;
    ix->cap = cap;
  }
  group_t key = {.name = name, .args = args, .hints = hints, .source = source,
                 .first = c->groups.n};
  size_t j = group_slot(&key, ix->cap);
  while (ix->slots[j]) {
    const group_t *g = &c->groups.v[ix->slots[j] - 1];
    if (g->name == name && g->args == args && g->hints == hints && g->source == source)
      return ix->slots[j] - 1;
    j = (j + 1) & (ix->cap - 1);
  }
  if (!VEC_PUSH(c->groups, key)) return -1;
  ix->slots[j] = (uint32_t)c->groups.n;
  return (int64_t)c->groups.n - 1;
}

/* Credits one GPU event to its op's group. An eager op is one occurrence of one group. A
 * captured op occurs once per graph launch that replays it, and takes its iteration hints from
 * that launch: its group is looked up per event (graph events come launch by launch). */
static xr_status_t credit(ctx_t *c, group_index_t *ix, gpu_event_t *g, size_t *filtered_ops) {
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
      int64_t gi = group_lookup(c, ix, o->name, o->args, hints, 0);
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
    if ((gi = group_lookup(c, ix, o->name, o->args, hints, o->source)) < 0)
      return xr_extract_oom(c);
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

xr_status_t xr_extract_group(ctx_t *c) {
  group_index_t ix = {0};
  size_t filtered_ops = 0;
  xr_status_t st = XR_OK;
  for (size_t i = 0; st == XR_OK && i < c->gpu.n; i++) {
    gpu_event_t *g = &c->gpu.v[i];
    if (g->op >= 0 && g->replay < 0) st = credit(c, &ix, g, &filtered_ops);
  }
  for (size_t i = 0; st == XR_OK && i < c->graph_order_count; i++) {
    gpu_event_t *g = &c->gpu.v[c->graph_order[i]];
    if (g->op >= 0) st = credit(c, &ix, g, &filtered_ops);
  }
  c->sum.ops_filtered += filtered_ops; /* op occurrences dropped by op_filter */
  free(ix.slots);
  return st;
}
