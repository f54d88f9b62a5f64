/* Replay reports read back: see report_read.h. */
#include "replay/report_read.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"

/* The first field of the wrong type, named with its path ("ops[3].median_us"). */
typedef struct reader {
  const char *name;
  char where[64]; /* "" for the header, "ops[3]." for an op */
  xr_status_t st;
} reader_t;

static void bad(reader_t *r, const char *key, const char *what) {
  if (r->st == XR_OK)
    r->st = xr_error(XR_INVALID_ARGUMENT, "%s: %s%s: not %s", r->name, r->where, key, what);
}

/* Absent or null: "" (older reports lack fields); anything else but a string is an error. */
static const char *text_of(reader_t *r, const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsString(v)) return v->valuestring;
  if (v && !cJSON_IsNull(v)) bad(r, key, "a string");
  return "";
}

/* Absent or null (a non-finite figure): `fallback`; anything else but a finite number (1e999
 * overflows to infinity) is an error. */
static double number_of(reader_t *r, const cJSON *o, const char *key, double fallback) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsNumber(v) && isfinite(v->valuedouble)) return v->valuedouble;
  if (cJSON_IsNumber(v)) bad(r, key, "a finite number");
  else if (v && !cJSON_IsNull(v)) bad(r, key, "a number");
  return fallback;
}

static const cJSON *object_of(reader_t *r, const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsObject(v)) return v;
  if (v && !cJSON_IsNull(v)) bad(r, key, "an object");
  return NULL;
}

static xr_report_figure_t figure_of(reader_t *r, const cJSON *o, const char *key) {
  xr_report_figure_t f = {.dtype = key, .value = NAN, .source = ""};
  const cJSON *v = object_of(r, o, key);
  if (!v) return f;
  size_t len = strlen(r->where);
  snprintf(r->where + len, sizeof r->where - len, "%s.", key);
  f.value = number_of(r, v, "value", NAN);
  f.source = text_of(r, v, "source");
  r->where[len] = '\0';
  return f;
}

/* The worst NMSE of a list of output comparisons ("check", "vs_first_device"). */
static double worst_nmse(reader_t *r, const cJSON *o, const char *key, bool *out_nonfinite) {
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!list || cJSON_IsNull(list)) return NAN;
  if (!cJSON_IsArray(list)) {
    bad(r, key, "an array");
    return NAN;
  }
  double worst = NAN;
  const cJSON *c;
  cJSON_ArrayForEach(c, list) {
    if (!cJSON_IsObject(c)) {
      bad(r, key, "an array of objects");
      return NAN;
    }
    double nmse = number_of(r, c, "nmse", NAN);
    if (!isnan(nmse) && !(worst >= nmse)) worst = nmse;
    const cJSON *nf = cJSON_GetObjectItemCaseSensitive(c, "nonfinite");
    if (out_nonfinite && cJSON_IsTrue(nf)) *out_nonfinite = true;
  }
  return worst;
}

/* The fields read the same way, string or number, by their place in the struct. */
typedef struct field {
  const char *key;
  size_t offset;
  double fallback; /* numbers: when absent or null */
} field_t;

#define ENTRY(key, fallback) \
  { #key, offsetof(xr_report_entry_t, key), fallback }
static const field_t entry_texts[] = {
    ENTRY(name, 0),        ENTRY(outcome, 0), ENTRY(message, 0),    ENTRY(kernel, 0),
    ENTRY(algorithm, 0),
    ENTRY(args, 0),        ENTRY(family, 0),  ENTRY(peak_dtype, 0), ENTRY(bound, 0),
    ENTRY(stop_reason, 0), ENTRY(launch, 0),  ENTRY(peak_basis, 0), ENTRY(above_ceiling, 0),
};
static const field_t entry_numbers[] = {
    ENTRY(min_us, NAN),  ENTRY(p10_us, NAN),
    ENTRY(p90_us, NAN),  ENTRY(tflops, NAN),
    ENTRY(gbps, NAN),    ENTRY(flops, NAN),
    ENTRY(bytes, NAN),   ENTRY(peak_percent, NAN),
    ENTRY(trace_us, -1), ENTRY(replay_over_trace, NAN),
    ENTRY(iqr_us, NAN),  ENTRY(noise_percent, NAN),
};
#undef ENTRY
#define HEAD(key) \
  { #key, offsetof(xr_report_contents_t, key), 0 }
static const field_t head_texts[] = {
    HEAD(bundle),          HEAD(hal),  HEAD(device), HEAD(driver), HEAD(driver_version),
    HEAD(runtime_version), HEAD(date),
};
#undef HEAD

static void read_fields(reader_t *r, const cJSON *o, void *out, const field_t *texts,
                        size_t n_texts, const field_t *numbers, size_t n_numbers) {
  for (size_t k = 0; k < n_texts; k++)
    *(const char **)((char *)out + texts[k].offset) = text_of(r, o, texts[k].key);
  for (size_t k = 0; k < n_numbers; k++)
    *(double *)((char *)out + numbers[k].offset) =
        number_of(r, o, numbers[k].key, numbers[k].fallback);
}

/* A bool field: 1 or 0, -1 when absent or null; anything else is an error naming `path`. */
static int bool_of(reader_t *r, const cJSON *o, const char *key, const char *path) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (v && !cJSON_IsBool(v) && !cJSON_IsNull(v)) bad(r, path, "a bool");
  return cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
}

/* samples_us: an array of positive numbers. */
static void read_samples(reader_t *r, const cJSON *o, xr_report_entry_t *e) {
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "samples_us");
  if (!list || cJSON_IsNull(list)) return;
  if (!cJSON_IsArray(list)) {
    bad(r, "samples_us", "an array of numbers");
    return;
  }
  int n = cJSON_GetArraySize(list), every = (n + XR_REPORT_MAX_SAMPLES - 1) / XR_REPORT_MAX_SAMPLES;
  int i = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, list) {
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || !isfinite(v->valuedouble)) {
      bad(r, "samples_us", "an array of numbers");
      e->sample_count = 0;
      return;
    }
    if (i++ % every == 0 && e->sample_count < XR_REPORT_MAX_SAMPLES)
      e->samples_us[e->sample_count++] = v->valuedouble;
  }
}

static void read_entry(reader_t *r, const cJSON *o, xr_report_entry_t *e) {
  read_fields(r, o, e, entry_texts, sizeof entry_texts / sizeof entry_texts[0], entry_numbers,
              sizeof entry_numbers / sizeof entry_numbers[0]);
  double iterations = number_of(r, o, "iterations", 0);
  e->iterations = iterations >= 0 && iterations < 1e9 ? (int)iterations : 0;
  double median = number_of(r, o, "median_us", -1);
  e->median_us = !strcmp(e->outcome, "ok") && median > 0 ? median : -1;
  e->check_passed = bool_of(r, o, "check_passed", "check_passed");
  e->count = number_of(r, o, "count", 1);
  const cJSON *kernels = cJSON_GetObjectItemCaseSensitive(o, "trace_kernels");
  if (kernels && !cJSON_IsNull(kernels) && !cJSON_IsArray(kernels))
    bad(r, "trace_kernels", "an array");
  e->trace_kernels = cJSON_IsArray(kernels) ? kernels : NULL;
  if (!(e->count > 0)) e->count = 1;
  read_samples(r, o, e);
  e->noise_met = bool_of(r, o, "noise_met", "noise_met");
  const cJSON *contention = object_of(r, o, "contention");
  e->contended = contention ? bool_of(r, contention, "contended", "contention.contended") : -1;
  e->unstable = bool_of(r, o, "unstable", "unstable");
  e->check_nmse = worst_nmse(r, o, "check", NULL);
  e->nmse_vs_first = worst_nmse(r, o, "vs_first_device", &e->nonfinite_vs_first);
}

/* summary.replay_vs_trace, when the summary has it. */
static void read_trace_ratio(reader_t *r, const cJSON *summary, xr_report_trace_ratio_t *t) {
  *t = (xr_report_trace_ratio_t){
      .trace_device = "", .median = NAN, .geomean = NAN, .within_10_percent = NAN};
  snprintf(r->where, sizeof r->where, "summary.");
  const cJSON *o = object_of(r, summary, "replay_vs_trace");
  r->where[0] = '\0';
  if (!o) return;
  snprintf(r->where, sizeof r->where, "summary.replay_vs_trace.");
  double count = number_of(r, o, "count", 0);
  if (r->st == XR_OK && !(count >= 0 && count < 9007199254740992.0 && count == floor(count)))
    bad(r, "count", "a count of ops");
  t->count = r->st == XR_OK ? (size_t)count : 0;
  const cJSON *same = cJSON_GetObjectItemCaseSensitive(o, "same_device");
  if (same && !cJSON_IsBool(same) && !cJSON_IsNull(same)) bad(r, "same_device", "a bool");
  t->same_device = cJSON_IsTrue(same);
  t->trace_device = text_of(r, o, "trace_device");
  t->median = number_of(r, o, "median", NAN);
  t->geomean = number_of(r, o, "geomean", NAN);
  t->within_10_percent = number_of(r, o, "within_10_percent", NAN);
  const cJSON *worst = cJSON_GetObjectItemCaseSensitive(o, "worst"), *w;
  if (worst && !cJSON_IsArray(worst) && !cJSON_IsNull(worst)) bad(r, "worst", "an array");
  const cJSON *list = cJSON_IsArray(worst) ? worst : NULL;
  size_t k = 0;
  cJSON_ArrayForEach(w, list) {
    if (r->st != XR_OK || t->worst_count == XR_REPORT_MAX_WORST) break;
    snprintf(r->where, sizeof r->where, "summary.replay_vs_trace.worst[%zu].", k++);
    double index = number_of(r, w, "index", NAN);
    if (!cJSON_IsObject(w) || !(index >= 0 && index < 9007199254740992.0) ||
        index != floor(index)) {
      r->where[strlen(r->where) - 1] = '\0';
      bad(r, "", "an op: {\"index\", \"name\", \"ratio\"}");
      break;
    }
    xr_report_ratio_op_t *op = &t->worst[t->worst_count++];
    op->index = (int64_t)index;
    op->name = text_of(r, w, "name");
    op->ratio = number_of(r, w, "ratio", NAN);
  }
  r->where[0] = '\0';
  if (r->st != XR_OK) t->count = t->worst_count = 0;
}

/* A whole number of at least `lo` (below 2^53); an error naming `key` when absent or not one. */
static int64_t whole_of(reader_t *r, const cJSON *o, const char *key, double lo) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v) {
    if (r->st == XR_OK)
      r->st = xr_error(XR_INVALID_ARGUMENT, "%s: %s%s: missing", r->name, r->where, key);
    return -1;
  }
  double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
  if (!(x >= lo && x < 9007199254740992.0) || x != floor(x)) {
    char what[64];
    snprintf(what, sizeof what, "a whole number of at least %.0f", lo);
    bad(r, key, what);
    return -1;
  }
  return (int64_t)x;
}

/* The bundle's identity and, for a sharded run, its shard. */
static void read_shard(reader_t *r, const cJSON *j, xr_report_contents_t *c) {
  c->bundle_ops = number_of(r, j, "bundle_ops", NAN);
  if (r->st == XR_OK && !isnan(c->bundle_ops) &&
      !(c->bundle_ops >= 0 && c->bundle_ops < 9007199254740992.0 &&
        c->bundle_ops == floor(c->bundle_ops)))
    bad(r, "bundle_ops", "a count of ops");
  c->bundle_hash = text_of(r, j, "bundle_hash");
  size_t hex = strspn(c->bundle_hash, "0123456789abcdef");
  if (c->bundle_hash[0] && (hex != 16 || c->bundle_hash[16]))
    bad(r, "bundle_hash", "16 hex digits");
  c->shard.weights = "";
  c->shard.load = c->shard.total = NAN;
  const cJSON *s = object_of(r, j, "shard");
  if (!s || r->st != XR_OK) return;
  snprintf(r->where, sizeof r->where, "shard.");
  int64_t count = whole_of(r, s, "count", 1), index = whole_of(r, s, "index", 0);
  int64_t selected = whole_of(r, s, "selected", 0);
  c->shard.weights = text_of(r, s, "weights");
  c->shard.load = number_of(r, s, "load", NAN);
  c->shard.total = number_of(r, s, "total", NAN);
  const cJSON *ops = cJSON_GetObjectItemCaseSensitive(s, "ops");
  if (r->st == XR_OK && index >= count)
    r->st = xr_error(XR_INVALID_ARGUMENT, "%s: shard.index: %lld is not under shard.count (%lld)",
                     r->name, (long long)index, (long long)count);
  if (r->st == XR_OK && !cJSON_IsArray(ops)) bad(r, "ops", "an array of op positions");
  size_t n = r->st == XR_OK ? (size_t)cJSON_GetArraySize(ops) : 0;
  if (r->st == XR_OK && n > (size_t)selected)
    r->st = xr_error(XR_INVALID_ARGUMENT, "%s: shard.ops: %zu ops, more than shard.selected (%lld)",
                     r->name, n, (long long)selected);
  if (r->st == XR_OK && !(c->shard.ops = malloc((n ? n : 1) * sizeof *c->shard.ops)))
    r->st = xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory", r->name);
  const cJSON *op, *list = r->st == XR_OK ? ops : NULL;
  size_t k = 0;
  cJSON_ArrayForEach(op, list) {
    double x = cJSON_IsNumber(op) ? op->valuedouble : NAN;
    bool position = x >= 0 && x < 9007199254740992.0 && x == floor(x) &&
                    (isnan(c->bundle_ops) || x < c->bundle_ops);
    if (!position || (k && (int64_t)x <= c->shard.ops[k - 1])) {
      r->st = xr_error(
          XR_INVALID_ARGUMENT, "%s: shard.ops[%zu]: not %s", r->name, k,
          !position ? "an op position in the bundle" : "after the one before (they ascend)");
      break;
    }
    c->shard.ops[k++] = (int64_t)x;
  }
  c->shard.op_count = k;
  r->where[0] = '\0';
  if (r->st != XR_OK) return;
  c->shard.index = index;
  c->shard.count = count;
  c->shard.selected = selected;
}

/* A block of device figures ("peaks", "ceilings"): memory (and cache) bandwidth, FLOP/s per
 * dtype. */
static void read_figures(reader_t *r, const cJSON *j, const char *key,
                         xr_report_figure_t *bandwidth, xr_report_figure_t *cache,
                         xr_report_figure_t *peaks, size_t *count) {
  const cJSON *block = object_of(r, j, key);
  snprintf(r->where, sizeof r->where, "%s.", key);
  *bandwidth = figure_of(r, block, "memory_bandwidth");
  if (cache) *cache = figure_of(r, block, "cache_bandwidth");
  const cJSON *flops = object_of(r, block, "flops"), *f;
  snprintf(r->where, sizeof r->where, "%s.flops.", key);
  *count = 0;
  cJSON_ArrayForEach(f, flops) {
    if (*count == XR_REPORT_MAX_PEAKS) break;
    xr_report_figure_t fig = figure_of(r, flops, f->string);
    if (isfinite(fig.value) && fig.value > 0) peaks[(*count)++] = fig;
  }
  r->where[0] = '\0';
}

static void read_head(reader_t *r, const cJSON *j, xr_report_contents_t *c) {
  double version = number_of(r, j, "xreplay_report", 0);
  c->version = version >= 0 && version < 1e6 ? (int)version : 0;
  read_fields(r, j, c, head_texts, sizeof head_texts / sizeof head_texts[0], NULL, 0);
  c->source_trace = c->source_device = "";
  const cJSON *source = object_of(r, j, "source");
  if (source) {
    snprintf(r->where, sizeof r->where, "source.");
    c->source_trace = text_of(r, source, "trace");
    c->source_device = text_of(r, source, "device");
  }
  read_figures(r, j, "peaks", &c->stated_bandwidth, NULL, c->stated_peaks, &c->stated_peak_count);
  if (cJSON_GetObjectItemCaseSensitive(j, "ceilings")) {
    read_figures(r, j, "ceilings", &c->bandwidth, &c->cache_bandwidth, c->peaks, &c->peak_count);
  } else { /* reports before the ceilings were written apart */
    c->bandwidth = c->stated_bandwidth;
    c->cache_bandwidth = (xr_report_figure_t){.value = NAN, .source = ""};
    c->peak_count = c->stated_peak_count;
    memcpy(c->peaks, c->stated_peaks, sizeof c->peaks);
  }
  c->options = object_of(r, j, "options");
  read_shard(r, j, c);
  const cJSON *s = object_of(r, j, "summary");
  c->finished = s != NULL;
  c->cancelled = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "cancelled"));
  snprintf(r->where, sizeof r->where, "summary.");
  c->total = number_of(r, s, "total", NAN);
  c->attempted = number_of(r, s, "attempted", NAN);
  c->succeeded = number_of(r, s, "succeeded", NAN);
  c->failed = number_of(r, s, "failed", NAN);
  c->unsupported = number_of(r, s, "unsupported", NAN);
  c->trace_total_us = number_of(r, s, "trace_total_us", NAN);
  c->trace_covered_us = number_of(r, s, "trace_covered_us", NAN);
  r->where[0] = '\0';
  read_trace_ratio(r, s, &c->replay_vs_trace);
}

xr_status_t xr_report_from_json(cJSON *j, const char *name, xr_report_contents_t **out_contents) {
  *out_contents = NULL;
  const cJSON *ops = cJSON_GetObjectItemCaseSensitive(j, "ops");
  if (!cJSON_IsObject(j) || !cJSON_IsArray(ops)) {
    cJSON_Delete(j);
    return xr_error(XR_INVALID_ARGUMENT, "%s: not a replay report: \"ops\" is not an array", name);
  }
  size_t n = (size_t)cJSON_GetArraySize(ops);
  xr_report_contents_t *c = calloc(1, sizeof *c);
  xr_report_entry_t *entries = calloc(n ? n : 1, sizeof *entries);
  char *path = strdup(name);
  if (!c || !entries || !path) {
    free(c);
    free(entries);
    free(path);
    cJSON_Delete(j);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory", name);
  }
  c->json = j;
  c->ops = entries;
  c->path = path;
  reader_t r = {.name = name, .st = XR_OK};
  read_head(&r, j, c);
  size_t i = 0;
  const cJSON *o;
  cJSON_ArrayForEach(o, ops) {
    if (r.st != XR_OK) break;
    if (!cJSON_IsObject(o) || !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "index")) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "name"))) {
      r.st = xr_error(XR_INVALID_ARGUMENT, "%s: ops[%zu]: not a replay result (no index or name)",
                      name, i);
      break;
    }
    double index = cJSON_GetObjectItemCaseSensitive(o, "index")->valuedouble;
    if (!(index >= 0 && index < 9007199254740992.0) || index != floor(index)) {
      r.st = xr_error(XR_INVALID_ARGUMENT, "%s: ops[%zu].index: not an op position (%g)", name, i,
                      index);
      break;
    }
    xr_report_entry_t *e = &entries[i];
    e->index = (int64_t)index;
    snprintf(r.where, sizeof r.where, "ops[%zu].", i);
    read_entry(&r, o, e);
    i++;
  }
  c->op_count = i;
  if (r.st != XR_OK) {
    xr_report_contents_free(c);
    return r.st;
  }
  *out_contents = c;
  return XR_OK;
}

xr_status_t xr_report_read(const char *path, xr_report_contents_t **out_contents) {
  *out_contents = NULL;
  uint8_t *text = NULL;
  size_t size = 0;
  xr_status_t st = xr_read_file(path, &text, &size);
  if (st != XR_OK) return st;
  cJSON *j = cJSON_ParseWithLength((const char *)text, size);
  free(text);
  if (!j) return xr_error(XR_INVALID_ARGUMENT, "%s: not a replay report: not JSON", path);
  return xr_report_from_json(j, path, out_contents);
}

void xr_report_contents_free(xr_report_contents_t *c) {
  if (!c) return;
  cJSON_Delete(c->json);
  free(c->ops);
  free(c->shard.ops);
  free((char *)c->path);
  free(c);
}

const xr_report_entry_t *xr_report_find(const xr_report_contents_t *c, int64_t index,
                                        const char *name) {
  for (size_t i = 0; i < c->op_count; i++)
    if (c->ops[i].index == index && !strcmp(c->ops[i].name, name)) return &c->ops[i];
  return NULL;
}
