/* The reports of a sharded run put back together (replay/report.h, `replay merge`). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/internal.h"
#include "replay/report.h"
#include "replay/trace_ratio.h"

/* One op of one shard's report: its entry, its JSON object, and whose it is. */
typedef struct merged_op {
  int64_t index;
  const xr_report_entry_t *entry;
  const cJSON *json;
  const xr_report_contents_t *report;
} merged_op_t;

static int by_index(const void *a, const void *b) {
  const merged_op_t *x = a, *y = b;
  return (x->index > y->index) - (x->index < y->index);
}

static int by_shard(const void *a, const void *b) {
  const xr_report_contents_t *x = *(const xr_report_contents_t *const *)a;
  const xr_report_contents_t *y = *(const xr_report_contents_t *const *)b;
  return (x->shard.index > y->shard.index) - (x->shard.index < y->shard.index);
}

/* "FILE: FIELD is A, but REF has B: WHY". */
static xr_status_t differs(const xr_report_contents_t *c, const xr_report_contents_t *ref,
                           const char *field, const char *value, const char *ref_value,
                           const char *why) {
  return xr_error(XR_INVALID_ARGUMENT, "%s: %s is %s, but %s has %s: %s", c->path, field, value,
                  ref->path, ref_value, why);
}

static xr_status_t differs_number(const xr_report_contents_t *c, const xr_report_contents_t *ref,
                                  const char *field, double value, double ref_value,
                                  const char *why) {
  char a[32], b[32];
  snprintf(a, sizeof a, "%.17g", value);
  snprintf(b, sizeof b, "%.17g", ref_value);
  return differs(c, ref, field, a, b, why);
}

/* Options that say where a shard wrote something of its own, not what it measured: each
 * shard's may differ. */
static bool shard_own(const char *option) {
  return option && (!strcmp(option, "timeline") || !strcmp(option, "timeline_events"));
}

/* The first option the two objects do not agree on, and what each says ("absent" when one
 * lacks it); false when they agree. */
static bool option_difference(const cJSON *a, const cJSON *b, char *key, size_t key_size,
                              char **out_a, char **out_b) {
  const cJSON *x;
  for (int pass = 0; pass < 2; pass++) {
    const cJSON *from = pass ? b : a;
    cJSON_ArrayForEach(x, from) {
      if (shard_own(x->string)) continue;
      const cJSON *y = cJSON_GetObjectItemCaseSensitive(pass ? a : b, x->string);
      if (y && cJSON_Compare(x, y, true)) continue;
      snprintf(key, key_size, "options.%s", x->string ? x->string : "?");
      char *mine = cJSON_PrintUnformatted(x), *theirs = y ? cJSON_PrintUnformatted(y) : NULL;
      *out_a = pass ? theirs : mine;
      *out_b = pass ? mine : theirs;
      return true;
    }
  }
  return false;
}

/* A report that is a shard's, agreeing with `ref` (the first one given) on the bundle, the
 * partition, the options and, unless allowed otherwise, the device. */
static xr_status_t check_compatible(const xr_report_contents_t *c, const xr_report_contents_t *ref,
                                    bool allow_mixed_devices) {
  if (c->shard.count == 0)
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: shard: missing: not the report of a sharded run (replay --shard=K/N "
                    "--report=FILE.json writes one)",
                    c->path);
  if (!c->bundle_hash[0])
    return xr_error(XR_INVALID_ARGUMENT, "%s: bundle_hash: missing (a sharded run writes it)",
                    c->path);
  if (isnan(c->bundle_ops))
    return xr_error(XR_INVALID_ARGUMENT, "%s: bundle_ops: missing (a sharded run writes it)",
                    c->path);
  if (c == ref) return XR_OK;
  const char *different_bundles = "shards of different bundles";
  if (strcmp(c->bundle_hash, ref->bundle_hash))
    return differs(c, ref, "bundle_hash", c->bundle_hash, ref->bundle_hash, different_bundles);
  if (!(c->bundle_ops == ref->bundle_ops))
    return differs_number(c, ref, "bundle_ops", c->bundle_ops, ref->bundle_ops, different_bundles);
  const char *different_runs =
      "shards of different partitions (another --shard count, "
      "--op-filter or --op-limit)";
  if (c->shard.count != ref->shard.count)
    return differs_number(c, ref, "shard.count", (double)c->shard.count, (double)ref->shard.count,
                          different_runs);
  if (c->shard.selected != ref->shard.selected)
    return differs_number(c, ref, "shard.selected", (double)c->shard.selected,
                          (double)ref->shard.selected, different_runs);
  if (strcmp(c->shard.weights, ref->shard.weights))
    return differs(c, ref, "shard.weights", c->shard.weights, ref->shard.weights, different_runs);
  if (!(c->shard.total == ref->shard.total) && !(isnan(c->shard.total) && isnan(ref->shard.total)))
    return differs_number(c, ref, "shard.total", c->shard.total, ref->shard.total, different_runs);
  char key[256], *mine = NULL, *theirs = NULL;
  if (!c->options != !ref->options)
    return differs(c, ref, "options", c->options ? "present" : "absent",
                   ref->options ? "present" : "absent", "shards run with different options");
  if (c->options && option_difference(c->options, ref->options, key, sizeof key, &mine, &theirs)) {
    xr_status_t st = differs(c, ref, key, mine ? mine : "absent", theirs ? theirs : "absent",
                             "shards run with different options");
    free(mine);
    free(theirs);
    return st;
  }
  if (!allow_mixed_devices && (strcmp(c->device, ref->device) || strcmp(c->driver, ref->driver)))
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: device is \"%s\" (driver %s), but %s has \"%s\" (driver %s): the shards "
                    "ran on different devices, so their times do not add up to one machine's; "
                    "--allow-mixed-devices merges them anyway",
                    c->path, c->device, c->driver, ref->path, ref->device, ref->driver);
  return XR_OK;
}

static bool in_shard(const xr_report_contents_t *c, int64_t index) {
  size_t lo = 0, hi = c->shard.op_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c->shard.ops[mid] == index) return true;
    if (c->shard.ops[mid] < index)
      lo = mid + 1;
    else
      hi = mid;
  }
  return false;
}

/* The report's ops are exactly its shard's, each once; gathered into `out` (sorted). */
static xr_status_t check_ops(const xr_report_contents_t *c, merged_op_t *out) {
  const cJSON *json = cJSON_GetObjectItemCaseSensitive(c->json, "ops")->child;
  for (size_t i = 0; i < c->op_count; i++, json = json ? json->next : NULL) {
    const xr_report_entry_t *e = &c->ops[i];
    if (!in_shard(c, e->index))
      return xr_error(XR_INVALID_ARGUMENT,
                      "%s: ops[%zu]: op %lld (%s) is not one of shard %lld's ops (shard.ops)",
                      c->path, i, (long long)e->index, e->name, (long long)c->shard.index);
    out[i] = (merged_op_t){e->index, e, json, c};
  }
  qsort(out, c->op_count, sizeof *out, by_index);
  for (size_t i = 1; i < c->op_count; i++)
    if (out[i].index == out[i - 1].index)
      return xr_error(XR_INVALID_ARGUMENT, "%s: ops: op %lld (%s) is there twice", c->path,
                      (long long)out[i].index, out[i].entry->name);
  if (c->op_count == c->shard.op_count) return XR_OK;
  /* Fewer: name the first one missing. */
  size_t k = 0;
  while (k < c->op_count && out[k].index == c->shard.ops[k]) k++;
  size_t more = c->shard.op_count - c->op_count - 1;
  char others[64] = "";
  if (more) snprintf(others, sizeof others, ", and %zu more", more);
  return xr_error(XR_INVALID_ARGUMENT,
                  "%s: ops: op %lld, one of shard %lld's (shard.ops), is missing%s: the report "
                  "holds %zu of the shard's %zu ops%s",
                  c->path, (long long)c->shard.ops[k], (long long)c->shard.index, others,
                  c->op_count, c->shard.op_count,
                  c->finished ? "" : " (the run did not finish: its summary is null)");
}

/* The merged summary: counts from the ops' outcomes, replayed vs recorded over all of them. */
static xr_status_t merged_summary(const xr_report_contents_t *const *shards, size_t n,
                                  const merged_op_t *ops, size_t op_count, cJSON **out) {
  size_t succeeded = 0, failed = 0, unsupported = 0, interrupted = 0, contended = 0,
         unstable = 0;
  bool cancelled = false, same_device = true;
  double trace_total = NAN, covered = 0;
  xr_category_total_t categories[XR_CATEGORY_COUNT] = {{0}};
  for (size_t s = 0; s < n; s++) {
    const xr_report_contents_t *c = shards[s];
    cancelled |= c->cancelled;
    same_device &= xr_trace_device_same_model(c->device, c->source_device);
    if (isnan(trace_total) && isfinite(c->trace_total_us)) trace_total = c->trace_total_us;
    if (c->finished && isfinite(c->trace_covered_us)) covered += c->trace_covered_us;
  }
  xr_trace_ratios_t ratios;
  xr_trace_ratios_init(&ratios);
  xr_op_result_t *r = calloc(1, sizeof *r); /* only what the ratios read */
  xr_op_t op = {0};
  xr_status_t st = r ? XR_OK : xr_error(XR_RESOURCE_EXHAUSTED, "merge: out of memory");
  for (size_t i = 0; i < op_count && st == XR_OK; i++) {
    const xr_report_entry_t *e = ops[i].entry;
    bool ok = !strcmp(e->outcome, "ok");
    succeeded += ok;
    failed += !strcmp(e->outcome, "failed");
    unsupported += !strcmp(e->outcome, "unsupported");
    interrupted += !strcmp(e->outcome, "interrupted");
    contended += ok && e->contended == 1;
    unstable += ok && e->unstable == 1;
    /* An unfinished shard's covered time: per-call time by the op's count. */
    if (ok && !ops[i].report->finished && e->trace_us > 0) covered += e->trace_us * e->count;
    xr_category_add(categories, e->family, e->name, e->count, ok ? e->median_us : -1,
                    e->trace_us);
    op.name = (char *)e->name;
    r->index = (size_t)e->index;
    r->op = &op;
    r->outcome = ok ? XR_OP_SUCCEEDED : XR_OP_FAILED;
    r->median_us = e->median_us;
    r->trace_us = e->trace_us;
    st = xr_trace_ratios_add(&ratios, r);
  }
  free(r);
  xr_trace_ratio_stats_t stats;
  if (st == XR_OK) st = xr_trace_ratios_compute(&ratios, &stats);
  xr_trace_ratios_free(&ratios);
  if (st != XR_OK) return st;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "total", shards[0]->bundle_ops);
  cJSON_AddNumberToObject(o, "attempted", (double)op_count);
  cJSON_AddNumberToObject(o, "succeeded", (double)succeeded);
  cJSON_AddNumberToObject(o, "failed", (double)failed);
  cJSON_AddNumberToObject(o, "unsupported", (double)unsupported);
  cJSON_AddNumberToObject(o, "interrupted", (double)interrupted);
  cJSON_AddNumberToObject(o, "contended", (double)contended);
  cJSON_AddNumberToObject(o, "unstable", (double)unstable);
  cJSON_AddBoolToObject(o, "cancelled", cancelled);
  if (isfinite(trace_total))
    cJSON_AddNumberToObject(o, "trace_total_us", trace_total);
  else
    cJSON_AddNullToObject(o, "trace_total_us");
  cJSON_AddNumberToObject(o, "trace_covered_us", covered);
  const char *trace_device = shards[0]->source_device;
  cJSON *ratio = xr_trace_ratio_json(trace_device[0] ? trace_device : NULL, &stats, same_device);
  if (ratio) cJSON_AddItemToObject(o, "replay_vs_trace", ratio);
  xr_add_categories(o, categories);
  *out = o;
  return XR_OK;
}

/* "merged": the partition and each shard's report. */
static cJSON *merged_json(const xr_report_contents_t *const *shards, size_t n) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddNumberToObject(m, "count", (double)shards[0]->shard.count);
  cJSON_AddNumberToObject(m, "selected", (double)shards[0]->shard.selected);
  cJSON_AddStringToObject(m, "weights", shards[0]->shard.weights);
  if (isfinite(shards[0]->shard.total)) cJSON_AddNumberToObject(m, "total", shards[0]->shard.total);
  cJSON *list = cJSON_AddArrayToObject(m, "reports");
  for (size_t s = 0; s < n; s++) {
    const xr_report_contents_t *c = shards[s];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", c->path);
    cJSON_AddNumberToObject(o, "shard", (double)c->shard.index);
    cJSON_AddNumberToObject(o, "ops", (double)c->op_count);
    if (isfinite(c->shard.load)) cJSON_AddNumberToObject(o, "load", c->shard.load);
    cJSON_AddStringToObject(o, "hal", c->hal);
    cJSON_AddStringToObject(o, "device", c->device);
    cJSON_AddStringToObject(o, "driver", c->driver);
    cJSON_AddStringToObject(o, "date", c->date);
    cJSON_AddBoolToObject(o, "finished", c->finished);
    cJSON_AddItemToArray(list, o);
  }
  return m;
}

xr_status_t xr_report_merge(const xr_report_contents_t *const *reports, size_t n,
                            bool allow_mixed_devices, cJSON **out_report) {
  *out_report = NULL;
  if (n == 0) return xr_error(XR_INVALID_ARGUMENT, "merge: no report to merge");
  for (size_t s = 0; s < n; s++) {
    xr_status_t st = check_compatible(reports[s], reports[0], allow_mixed_devices);
    if (st != XR_OK) return st;
  }
  const xr_report_contents_t **shards = malloc(n * sizeof *shards);
  if (!shards) return xr_error(XR_RESOURCE_EXHAUSTED, "merge: out of memory");
  memcpy(shards, reports, n * sizeof *shards);
  qsort(shards, n, sizeof *shards, by_shard);
  xr_status_t st = XR_OK;
  int64_t count = shards[0]->shard.count;
  for (size_t s = 1; s < n && st == XR_OK; s++)
    if (shards[s]->shard.index == shards[s - 1]->shard.index)
      st = xr_error(XR_INVALID_ARGUMENT, "%s and %s: both are shard %lld of %lld (shard.index)",
                    shards[s - 1]->path, shards[s]->path, (long long)shards[s]->shard.index,
                    (long long)count);
  if (st == XR_OK && (int64_t)n < count) {
    int64_t missing = 0;
    while ((size_t)missing < n && shards[missing]->shard.index == missing) missing++;
    char held[512] = "";
    for (size_t s = 0; s < n; s++) {
      size_t len = strlen(held);
      if (len > sizeof held - 32) {
        snprintf(held + len, sizeof held - len, ", ...");
        break;
      }
      snprintf(held + len, sizeof held - len, "%s%lld", s ? ", " : "",
               (long long)shards[s]->shard.index);
    }
    char more[64] = "";
    if (count - (int64_t)n > 1)
      snprintf(more, sizeof more, " (and %lld more)", (long long)(count - (int64_t)n - 1));
    st = xr_error(XR_INVALID_ARGUMENT,
                  "shard %lld of %lld is missing%s: the reports given hold shards %s",
                  (long long)missing, (long long)count, more, held);
  }
  size_t total = 0;
  for (size_t s = 0; s < n; s++) total += shards[s]->shard.op_count;
  if (st == XR_OK && total != (size_t)shards[0]->shard.selected)
    st = xr_error(XR_INVALID_ARGUMENT,
                  "%s and the other shards: their shard.ops hold %zu ops together, but "
                  "shard.selected says the partition was of %lld",
                  shards[0]->path, total, (long long)shards[0]->shard.selected);
  merged_op_t *ops = st == XR_OK ? calloc(total + 1, sizeof *ops) : NULL;
  if (st == XR_OK && !ops) st = xr_error(XR_RESOURCE_EXHAUSTED, "merge: out of memory");
  size_t op_count = 0;
  for (size_t s = 0; s < n && st == XR_OK; s++) {
    st = check_ops(shards[s], ops + op_count);
    op_count += shards[s]->op_count;
  }
  if (st == XR_OK) {
    qsort(ops, op_count, sizeof *ops, by_index);
    for (size_t i = 1; i < op_count && st == XR_OK; i++)
      if (ops[i].index == ops[i - 1].index)
        st = xr_error(XR_INVALID_ARGUMENT,
                      "op %lld (%s) is in shard %lld (%s) and in shard %lld (%s): the shards "
                      "overlap (shard.ops)",
                      (long long)ops[i].index, ops[i].entry->name,
                      (long long)ops[i - 1].report->shard.index, ops[i - 1].report->path,
                      (long long)ops[i].report->shard.index, ops[i].report->path);
  }
  cJSON *summary = NULL;
  if (st == XR_OK) st = merged_summary(shards, n, ops, op_count, &summary);
  if (st != XR_OK) {
    free(ops);
    free(shards);
    return st;
  }
  cJSON *doc = cJSON_Duplicate(shards[0]->json, true);
  cJSON_DeleteItemFromObjectCaseSensitive(doc, "shard");
  cJSON_DeleteItemFromObjectCaseSensitive(doc, "ops");
  cJSON_DeleteItemFromObjectCaseSensitive(doc, "summary");
  cJSON_AddItemToObject(doc, "merged", merged_json(shards, n));
  cJSON *list = cJSON_AddArrayToObject(doc, "ops");
  for (size_t i = 0; i < op_count; i++) {
    cJSON *o = cJSON_Duplicate(ops[i].json, true);
    cJSON_DeleteItemFromObjectCaseSensitive(o, "shard");
    cJSON_AddNumberToObject(o, "shard", (double)ops[i].report->shard.index);
    cJSON_AddItemToArray(list, o);
  }
  cJSON_AddItemToObject(doc, "summary", summary);
  free(ops);
  free(shards);
  *out_report = doc;
  return XR_OK;
}

xr_status_t xr_report_write(const char *path, const cJSON *report) {
  FILE *f = fopen(path, "w");
  if (!f) return xr_error(XR_INVALID_ARGUMENT, "%s: cannot create: %s", path, strerror(errno));
  bool lost = false;
  fputc('{', f);
  const cJSON *item;
  cJSON_ArrayForEach(item, report) {
    cJSON *name = cJSON_CreateString(item->string ? item->string : "");
    char *key = cJSON_PrintUnformatted(name);
    cJSON_Delete(name);
    fprintf(f, "%s%s:", item == report->child ? "" : ",", key ? key : "\"\"");
    free(key);
    if (cJSON_IsArray(item) && item->string && !strcmp(item->string, "ops")) {
      /* One op a line, as the run writes them. */
      const cJSON *op;
      fputc('[', f);
      cJSON_ArrayForEach(op, item) {
        char *text = cJSON_PrintUnformatted(op);
        lost |= !text;
        fprintf(f, "%s\n%s", op == item->child ? "" : ",", text ? text : "null");
        free(text);
      }
      fputs("\n]", f);
      continue;
    }
    char *text = cJSON_PrintUnformatted(item);
    lost |= !text;
    fputs(text ? text : "null", f);
    free(text);
  }
  fputs("}\n", f);
  bool bad = ferror(f) != 0;
  bad |= fclose(f) != 0;
  if (lost) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory writing the report", path);
  return bad ? xr_error(XR_DATA_LOSS, "%s: writing the report failed", path) : XR_OK;
}
