/* Trace extraction, stage 5: the bundle. One op a group, heaviest first (its arguments built by
 * trace_args.c, a collective's by trace_comms.c; here its count, timing and iteration hints),
 * then the GPU busy and covered time and the metadata. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/trace_extract_internal.h"
#include "formats/trace_schema.h"

/* ------------------------------------------------------------------------------------------ */
/* ops                                                                                         */

static int cmp_group_ptr(const void *a, const void *b) {
  const group_t *x = *(group_t *const *)a, *y = *(group_t *const *)b;
  if (x->gpu_ns != y->gpu_ns) return x->gpu_ns > y->gpu_ns ? -1 : 1;
  return x->first < y->first ? -1 : x->first > y->first;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
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
    if (!(kr->name = xr_arena_strdup(b->arena, c->strs.strs[g->k[k].name])))
      return XR_RESOURCE_EXHAUSTED;
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
  build_t B = {.c = c, .b = b, .schemas = schemas, .schema_count = nschemas};
  for (size_t gi = 0; st == XR_OK && gi < c->groups.n; gi++) {
    group_t *g = sorted[gi];
    if (kept >= limit) {
      c->sum.ops_filtered++;
      continue;
    }
    jnode_t root;
    if ((st = xr_extract_args_parse(c, g, &root)) != XR_OK) break;
    /* A collective's fields, else the recorded arguments; then what every op has. */
    const jnode_t *comms = xr_extract_dom_get(&root, "m");
    xr_op_t *op = NULL;
    if (comms)
      st = xr_extract_comms_op(&B, g, comms, &op);
    else if ((st = xr_extract_args_op(&B, g, &root, &op)) == XR_OK && op &&
             xr_schema_is_collective(op->name))
      st = xr_extract_comms_group_size(&B, op);
    if (st == XR_OK && op) st = finish_op(&B, g, op);
    xr_extract_dom_free(&root);
    if (st == XR_RESOURCE_EXHAUSTED) st = xr_extract_oom(c);
    if (st != XR_OK) break;
    if (!op) continue; /* bad arguments: skipped, counted and said so */
    g->kept = true;
    kept++;
    c->sum.op_instances += (size_t)g->count;
    c->sum.ops_gpu_time_us += (double)g->gpu_ns / 1000.0;
  }
  c->sum.unique_ops = kept;
  if (c->sum.ops_unnamed)
    xr_extract_warn(c, "%zu cpu_op events have no name: not ops, skipped", c->sum.ops_unnamed);
  if (B.any_concrete_missing)
    xr_extract_warn(c, "the trace has no \"Concrete Inputs\" (older PyTorch): scalar arguments "
                       "set from schema defaults or None");
  free(schemas);
  free(sorted);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* busy time and metadata                                                                      */

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
  /* the node id join's counts, only where graph node ids were on both sides */
  bool nodes = graphs && (c->sum.graph_launches_node_joined || c->sum.graph_launches_node_declined);
  size_t base = nodes ? 12 : graphs ? 9 : 4, world = base; /* world_size, trace_rank follow */
  m->extra_count = base + (c->world_size > 0) + c->has_trace_rank;
  m->extra = xr_arena_alloc(b->arena, m->extra_count * sizeof *m->extra);
  if (!m->extra) return XR_RESOURCE_EXHAUSTED;
  static const char *const names[12] = {
      "gpu_busy_us",    "extracted_gpu_share",    "attribution",
      "gpu_events",     "graph_launches",         "graph_launches_matched",
      "graph_kernels",  "graph_kernels_matched",  "graph_gpu_share",
      "graph_launches_node_joined", "graph_kernels_node_joined", "graph_launches_node_declined"};
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
  if (nodes) {
    const size_t counts[3] = {c->sum.graph_launches_node_joined, c->sum.graph_kernels_node_joined,
                              c->sum.graph_launches_node_declined};
    for (size_t i = 0; i < 3; i++)
      m->extra[9 + i].value = (xr_value_t){.kind = XR_VALUE_INT, .as.i = (int64_t)counts[i]};
  }
  return XR_OK;
}

xr_status_t xr_extract_build(ctx_t *c, xr_bundle_t *b) {
  xr_status_t st = build_bundle(c, b);
  if (st == XR_OK) st = compute_busy(c);
  if (st == XR_OK) st = fill_metadata(c, b);
  return st;
}
