/* Replay reports: the writer and the reader of the same format (replay/report.h). */
#include "replay/report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "replay/internal.h"
#include "replay/shard.h"
#include "replay/timing.h"

struct xr_report {
  FILE *f;   /* NULL for a report kept in memory */
  cJSON *doc; /* the memory report's document */
  bool json;
  size_t ops;
  size_t device_index; /* whose summary closes the report */
  char *trace_device;  /* the trace ran on, for the summary (NULL when the bundle does not say) */
  xr_category_total_t categories[XR_CATEGORY_COUNT]; /* over the ops added */
};

/* The tail that keeps the JSON document complete between ops; rewritten after each op. */
static const char json_tail[] = "\n], \"summary\": null}\n";

static void add_number(cJSON *o, const char *key, double v) {
  if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
  else cJSON_AddNullToObject(o, key);
}

/* One output's comparison: {"target", "nmse", "threshold" (when there is one), "nonfinite"}. */
static void add_output(cJSON *outs, const char *target, double nmse, double threshold,
                       bool nonfinite) {
  cJSON *c = cJSON_CreateObject();
  cJSON_AddStringToObject(c, "target", target);
  add_number(c, "nmse", nmse);
  if (!isnan(threshold)) add_number(c, "threshold", threshold);
  cJSON_AddBoolToObject(c, "nonfinite", nonfinite);
  cJSON_AddItemToArray(outs, c);
}

cJSON *xr_result_to_json(const xr_op_result_t *r) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "index", (double)r->index);
  cJSON_AddStringToObject(o, "name", r->op->name);
  char args[4096];
  xr_op_describe_args(r->op, false, args, sizeof args);
  cJSON_AddStringToObject(o, "args", args);
  cJSON_AddNumberToObject(o, "count", (double)(r->op->count ? r->op->count : 1));
  cJSON_AddStringToObject(o, "outcome", xr_op_outcome_name(r->outcome));
  if (r->message[0]) cJSON_AddStringToObject(o, "message", r->message);
  if (r->kernel[0]) cJSON_AddStringToObject(o, "kernel", r->kernel);
  if (r->algorithm[0]) cJSON_AddStringToObject(o, "algorithm", r->algorithm);
  /* The kernels the trace recorded for the op, beside the one that ran here. */
  const xr_op_timing_t *timing = r->op->timing;
  if (timing && timing->kernel_count) {
    cJSON *list = cJSON_AddArrayToObject(o, "trace_kernels");
    for (size_t k = 0; k < timing->kernel_count; k++) {
      cJSON *kernel = cJSON_CreateObject();
      cJSON_AddStringToObject(kernel, "name", timing->kernels[k].name ? timing->kernels[k].name : "");
      cJSON_AddNumberToObject(kernel, "count", (double)timing->kernels[k].count);
      add_number(kernel, "duration_us", timing->kernels[k].duration_us);
      cJSON_AddItemToArray(list, kernel);
    }
  }
  if (r->family && r->family[0]) {
    cJSON_AddStringToObject(o, "family", r->family);
    cJSON_AddStringToObject(o, "peak_dtype", xr_hal_peak_dtype_name(r->peak_dtype));
  }
  if (r->init_policy[0]) cJSON_AddStringToObject(o, "init_policy", r->init_policy);
  if (r->iterations) {
    cJSON_AddNumberToObject(o, "iterations", r->iterations);
    add_number(o, "min_us", r->min_us);
    add_number(o, "median_us", r->median_us);
    add_number(o, "mean_us", r->mean_us);
    add_number(o, "p10_us", r->p10_us);
    add_number(o, "p25_us", r->p25_us);
    add_number(o, "p75_us", r->p75_us);
    add_number(o, "p90_us", r->p90_us);
    add_number(o, "iqr_us", r->iqr_us);
    cJSON *samples = cJSON_AddArrayToObject(o, "samples_us");
    for (int k = 0; k < r->sample_count; k++)
      cJSON_AddItemToArray(samples, cJSON_CreateNumber(r->samples_us[k]));
    if (r->noise_percent >= 0) {
      add_number(o, "noise_percent", r->noise_percent);
      cJSON_AddNumberToObject(o, "noise_batch", r->batch_size);
      cJSON_AddNumberToObject(o, "outliers", r->outliers);
    }
    cJSON_AddBoolToObject(o, "noise_met", r->noise_met);
    if (r->stop_reason) cJSON_AddStringToObject(o, "stop_reason", r->stop_reason);
    if (r->launch) cJSON_AddStringToObject(o, "launch", r->launch);
    if (r->graph_executions) cJSON_AddNumberToObject(o, "graph_executions", r->graph_executions);
    if (r->launch_note[0]) cJSON_AddStringToObject(o, "launch_note", r->launch_note);
    cJSON_AddNumberToObject(o, "rotate", r->rotate);
    add_number(o, "timed_wall_ms", r->timed_wall_ms);
    add_number(o, "host_us_per_iteration", r->host_us_per_iteration);
    cJSON *host = cJSON_AddObjectToObject(o, "contention");
    add_number(host, "runnable_mean", r->runnable_mean);
    cJSON_AddNumberToObject(host, "batches", r->batches);
    cJSON_AddNumberToObject(host, "crowded_batches", r->crowded_batches);
    cJSON_AddBoolToObject(host, "contended", r->contended);
    cJSON_AddBoolToObject(o, "unstable", r->unstable);
    if (r->clock_samples) {
      cJSON *clock = cJSON_AddObjectToObject(o, "clock_mhz");
      cJSON_AddNumberToObject(clock, "min", r->clock_min_mhz);
      cJSON_AddNumberToObject(clock, "median", r->clock_median_mhz);
      if (r->clock_default_mhz) cJSON_AddNumberToObject(clock, "default", r->clock_default_mhz);
      cJSON_AddNumberToObject(clock, "samples", r->clock_samples);
      cJSON_AddNumberToObject(clock, "slow_samples", r->slow_clock_samples);
    }
    if (r->flush_bytes) cJSON_AddNumberToObject(o, "flush_bytes", (double)r->flush_bytes);
    if (r->cold_iterations) {
      cJSON *cold = cJSON_AddObjectToObject(o, "cold");
      cJSON_AddNumberToObject(cold, "iterations", r->cold_iterations);
      add_number(cold, "median_us", r->cold_median_us);
      add_number(cold, "iqr_us", r->cold_iqr_us);
      if (r->cold_noise_percent >= 0) add_number(cold, "noise_percent", r->cold_noise_percent);
    }
    add_number(o, "tflops", r->tflops);
    add_number(o, "gbps", r->gbps);
    if (r->peak_percent >= 0) add_number(o, "peak_percent", r->peak_percent);
    if (r->peak_basis[0]) cJSON_AddStringToObject(o, "peak_basis", r->peak_basis);
    if (r->above_ceiling[0]) cJSON_AddStringToObject(o, "above_ceiling", r->above_ceiling);
    if (r->bound) cJSON_AddStringToObject(o, "bound", r->bound);
    if (r->ranks > 0) {
      cJSON *across = cJSON_AddObjectToObject(o, "collective");
      cJSON_AddNumberToObject(across, "ranks", r->ranks);
      cJSON_AddNumberToObject(across, "group_ranks", r->group_ranks);
      cJSON *medians = cJSON_AddArrayToObject(across, "rank_median_us");
      for (int k = 0; k < r->ranks && k < XR_REPLAY_MAX_RANK_MEDIANS; k++)
        cJSON_AddItemToArray(medians, cJSON_CreateNumber(r->rank_median_us[k]));
      add_number(across, "algbw_gbps", r->algbw_gbps);
      add_number(across, "busbw_gbps", r->busbw_gbps);
    }
  }
  add_number(o, "flops", r->flops);
  add_number(o, "bytes", r->bytes);
  if (r->trace_us >= 0) {
    add_number(o, "trace_us", r->trace_us);
    if (r->median_us > 0) add_number(o, "replay_over_trace", r->median_us / r->trace_us);
  }
  if (r->compared) {
    cJSON *outs = cJSON_AddArrayToObject(o, "vs_first_device");
    for (size_t k = 0; k < r->output_count; k++)
      add_output(outs, r->outputs[k].target, r->outputs[k].nmse_vs_first, NAN,
                 r->outputs[k].nonfinite_vs_first);
  }
  if (r->checked) {
    cJSON_AddBoolToObject(o, "check_passed", r->check_passed);
    cJSON *outs = cJSON_AddArrayToObject(o, "check");
    for (size_t k = 0; k < r->output_count; k++)
      add_output(outs, r->outputs[k].target, r->outputs[k].nmse, r->outputs[k].threshold,
                 r->outputs[k].nonfinite);
    cJSON *ref = cJSON_AddObjectToObject(o, "reference");
    add_number(ref, "ms", r->reference_ms);
    if (r->reference_peak_bytes >= 0) add_number(ref, "peak_bytes", r->reference_peak_bytes);
    if (r->check_rows > 0) {
      add_number(ref, "rows", (double)r->check_rows);
      add_number(ref, "result_rows", (double)r->result_rows);
    }
  }
  if (r->check_note[0]) cJSON_AddStringToObject(o, "check_note", r->check_note);
  if (r->cache_note[0]) cJSON_AddStringToObject(o, "cache_note", r->cache_note);
  return o;
}

/* ------------------------------------------------------------------------------------------ */
/* CSV: one row per op, made of the object xr_result_to_json gives the JSON report, so that both
 * carry the same fields with the same values. A column is named by its field's path in that
 * object ("contention.contended"), except max_nmse, the largest of check[].nmse; the columns of
 * the first CSV reports come first. A field no column names (one added to the JSON and not here)
 * still reaches the CSV, in the last column, "more", as a JSON object;
 * tests/replay/report_csv_test.c keeps that column empty. */
static const char *const csv_columns[] = {
    "index", "name", "outcome", "kernel", "iterations", "min_us", "median_us", "mean_us", "p10_us",
    "p90_us", "tflops", "gbps", "peak_percent", "trace_us", "check_passed", "max_nmse",
    "init_policy", "message", "iqr_us", "noise_percent", "stop_reason", "contention.contended",
    /* every other field, in the JSON object's order */
    "args", "count", "algorithm", "trace_kernels", "family", "peak_dtype", "p25_us", "p75_us",
    "samples_us", "noise_batch", "outliers",
    "noise_met", "launch", "graph_executions", "launch_note", "rotate", "timed_wall_ms",
    "host_us_per_iteration", "contention.runnable_mean", "contention.batches",
    "contention.crowded_batches", "unstable", "clock_mhz.min", "clock_mhz.median",
    "clock_mhz.default", "clock_mhz.samples", "clock_mhz.slow_samples", "flush_bytes",
    "cold.iterations",
    "cold.median_us", "cold.iqr_us", "cold.noise_percent", "peak_basis", "above_ceiling", "bound",
    "collective.ranks", "collective.group_ranks", "collective.rank_median_us",
    "collective.algbw_gbps", "collective.busbw_gbps", "flops", "bytes", "replay_over_trace",
    "vs_first_device", "check", "reference.ms", "reference.peak_bytes", "reference.rows",
    "reference.result_rows", "check_note", "cache_note",
};

#define CSV_COLUMNS (sizeof csv_columns / sizeof csv_columns[0])

/* Text, quoted (RFC 4180: a quote is doubled), so that commas, quotes and line breaks in it
 * stay in the field. */
static void csv_text(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* A JSON value as a CSV field: nothing for null or absent, numbers and booleans as the JSON
 * report writes them, text quoted, arrays and objects as their compact JSON, quoted. */
static void csv_value(FILE *f, const cJSON *v) {
  if (!v || cJSON_IsNull(v)) return;
  if (cJSON_IsString(v)) {
    csv_text(f, v->valuestring);
    return;
  }
  char *text = cJSON_PrintUnformatted(v);
  if (!text) return;
  if (cJSON_IsArray(v) || cJSON_IsObject(v)) csv_text(f, text);
  else fputs(text, f);
  cJSON_free(text);
}

/* The member at "a" or "a.b" of `o`. */
static const cJSON *csv_lookup(const cJSON *o, const char *path) {
  const char *dot = strchr(path, '.');
  if (!dot) return cJSON_GetObjectItemCaseSensitive(o, path);
  char head[64];
  snprintf(head, sizeof head, "%.*s", (int)(dot - path), path);
  return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, head), dot + 1);
}

static bool csv_named(const char *path) {
  for (size_t c = 0; c < CSV_COLUMNS; c++)
    if (!strcmp(csv_columns[c], path)) return true;
  return false;
}

/* The op's fields no column names, as one object (NULL when every field has a column). */
static cJSON *csv_more(const cJSON *o) {
  cJSON *more = NULL;
  for (const cJSON *m = o->child; m; m = m->next) {
    if (csv_named(m->string)) continue;
    if (!cJSON_IsObject(m)) {
      if (!more) more = cJSON_CreateObject();
      cJSON_AddItemToObject(more, m->string, cJSON_Duplicate(m, true));
      continue;
    }
    for (const cJSON *k = m->child; k; k = k->next) {
      char path[256];
      snprintf(path, sizeof path, "%s.%s", m->string, k->string);
      if (csv_named(path)) continue;
      if (!more) more = cJSON_CreateObject();
      cJSON *group = cJSON_GetObjectItemCaseSensitive(more, m->string);
      if (!group) group = cJSON_AddObjectToObject(more, m->string);
      cJSON_AddItemToObject(group, k->string, cJSON_Duplicate(k, true));
    }
  }
  return more;
}

static void csv_header(FILE *f) {
  for (size_t c = 0; c < CSV_COLUMNS; c++) fprintf(f, "%s,", csv_columns[c]);
  fputs("more\n", f);
}

static xr_status_t csv_row(FILE *f, const xr_op_result_t *res) {
  cJSON *o = xr_result_to_json(res);
  if (!o) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory writing the report");
  for (size_t c = 0; c < CSV_COLUMNS; c++) {
    if (strcmp(csv_columns[c], "max_nmse")) {
      csv_value(f, csv_lookup(o, csv_columns[c]));
    } else {
      const cJSON *check = cJSON_GetObjectItemCaseSensitive(o, "check"), *out;
      double max_nmse = -1;
      cJSON_ArrayForEach(out, check) {
        const cJSON *nmse = cJSON_GetObjectItemCaseSensitive(out, "nmse");
        if (cJSON_IsNumber(nmse) && nmse->valuedouble > max_nmse) max_nmse = nmse->valuedouble;
      }
      if (max_nmse >= 0) {
        cJSON *v = cJSON_CreateNumber(max_nmse);
        csv_value(f, v);
        cJSON_Delete(v);
      }
    }
    fputc(',', f);
  }
  cJSON *more = csv_more(o);
  csv_value(f, more);
  fputc('\n', f);
  cJSON_Delete(more);
  cJSON_Delete(o);
  return XR_OK;
}

/* A figure the device reports, with where it comes from; nothing for an unknown one. */
static void add_figure(cJSON *o, const char *key, const xr_hal_figure_t *fig) {
  if (fig->source == XR_HAL_FIGURE_UNKNOWN || !(fig->value > 0)) return;
  cJSON *f = cJSON_AddObjectToObject(o, key);
  cJSON_AddNumberToObject(f, "value", fig->value);
  cJSON_AddStringToObject(f, "source", xr_hal_figure_source_name(fig->source));
}

void xr_add_measured(cJSON *to, const xr_hal_device_properties_t *p) {
  const xr_hal_measured_t *m = &p->measured;
  cJSON *measured = cJSON_AddObjectToObject(to, "measured");
  add_figure(measured, "memory_bandwidth", &m->memory_bandwidth);
  if (m->memory_bandwidth.value > 0)
    cJSON_AddNumberToObject(measured, "memory_working_set_bytes",
                            (double)m->memory_working_set_bytes);
  add_figure(measured, "cache_bandwidth", &m->cache_bandwidth);
  if (m->cache_bandwidth.value > 0)
    cJSON_AddNumberToObject(measured, "cache_working_set_bytes",
                            (double)m->cache_working_set_bytes);
  /* Each level by its name, with the device's size of it (one instance and every one). */
  cJSON *levels = NULL;
  for (uint32_t i = 0; i < p->cache_level_count && i < XR_HAL_MAX_CACHE_LEVELS; i++) {
    if (!(m->cache_level_bandwidth[i].value > 0)) continue;
    if (!levels) levels = cJSON_AddObjectToObject(measured, "cache_levels");
    add_figure(levels, p->cache_levels[i].name, &m->cache_level_bandwidth[i]);
    cJSON *level = cJSON_GetObjectItemCaseSensitive(levels, p->cache_levels[i].name);
    cJSON_AddNumberToObject(level, "working_set_bytes",
                            (double)m->cache_level_working_set_bytes[i]);
    cJSON_AddNumberToObject(level, "bytes", (double)p->cache_levels[i].bytes);
    cJSON_AddNumberToObject(level, "total_bytes", (double)p->cache_levels[i].total_bytes);
  }
  cJSON *flops = cJSON_AddObjectToObject(measured, "flops");
  for (int d = 0; d < XR_HAL_PEAK_DTYPE_COUNT; d++)
    add_figure(flops, xr_hal_peak_dtype_name((xr_hal_peak_dtype_t)d), &m->peak_flops[d]);
}

/* A sharded run's "shard": which of how many, of how many ops, and this shard's positions. */
static cJSON *shard_json(const xr_shard_t *s) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "index", s->index);
  cJSON_AddNumberToObject(o, "count", s->count);
  cJSON_AddNumberToObject(o, "selected", (double)s->selected);
  cJSON_AddStringToObject(o, "weights", s->by_time ? "trace_ns" : "ops");
  cJSON_AddNumberToObject(o, "load", (double)s->load);
  cJSON_AddNumberToObject(o, "total", (double)s->total);
  cJSON *ops = cJSON_AddArrayToObject(o, "ops");
  for (size_t k = 0; k < s->op_count; k++)
    cJSON_AddItemToArray(ops, cJSON_CreateNumber((double)s->ops[k]));
  return o;
}

/* Everything before "ops": the bundle and its source, the device, its peaks, the options. */
static cJSON *report_head(const char *bundle_path, const xr_bundle_metadata_t *source,
                          const xr_replay_summary_t *run, const xr_replay_device_t *device,
                          const xr_replay_options_t *o) {
  cJSON *head = cJSON_CreateObject();
  cJSON_AddNumberToObject(head, "xreplay_report", XR_REPORT_VERSION);
  cJSON_AddStringToObject(head, "bundle", bundle_path);
  cJSON_AddNumberToObject(head, "bundle_ops", (double)run->total);
  char hash[17];
  snprintf(hash, sizeof hash, "%016" PRIx64, o->shard ? o->shard->bundle_hash : run->bundle_hash);
  cJSON_AddStringToObject(head, "bundle_hash", hash);
  if (o->shard) cJSON_AddItemToObject(head, "shard", shard_json(o->shard));
  if (source && (source->source_trace || source->device_name)) {
    cJSON *src = cJSON_AddObjectToObject(head, "source");
    if (source->source_trace) cJSON_AddStringToObject(src, "trace", source->source_trace);
    if (source->device_name) cJSON_AddStringToObject(src, "device", source->device_name);
  }
  char date[32];
  time_t now = time(NULL);
  struct tm utc;
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &utc));
  cJSON_AddStringToObject(head, "date", date);
  const xr_hal_device_properties_t *p = &device->properties;
  cJSON_AddStringToObject(head, "hal", device->spec);
  cJSON_AddStringToObject(head, "device", p->name);
  cJSON_AddStringToObject(head, "driver", p->driver);
  cJSON_AddStringToObject(head, "driver_version", p->driver_version);
  cJSON_AddStringToObject(head, "runtime_version", p->runtime_version);
  /* What the device states, what it was measured to reach, and the ceilings the percentages
   * and bounds use (and the page's roofline draws): measured where measured, else stated. */
  cJSON *peaks = cJSON_AddObjectToObject(head, "peaks");
  add_figure(peaks, "memory_bandwidth", &p->memory_bandwidth);
  cJSON *flops = cJSON_AddObjectToObject(peaks, "flops");
  for (int d = 0; d < XR_HAL_PEAK_DTYPE_COUNT; d++)
    add_figure(flops, xr_hal_peak_dtype_name((xr_hal_peak_dtype_t)d), &p->peak_flops[d]);
  const xr_hal_measured_t *m = &p->measured;
  xr_add_measured(head, p);
  cJSON *ceilings = cJSON_AddObjectToObject(head, "ceilings");
  xr_hal_figure_t bw = xr_hal_bandwidth_ceiling(p);
  add_figure(ceilings, "memory_bandwidth", &bw);
  add_figure(ceilings, "cache_bandwidth", &m->cache_bandwidth);
  flops = cJSON_AddObjectToObject(ceilings, "flops");
  for (int d = 0; d < XR_HAL_PEAK_DTYPE_COUNT; d++) {
    /* A dtype whose ceiling is a wider dtype's figure has no line of its own. */
    xr_hal_peak_dtype_t from;
    xr_hal_figure_t peak = xr_hal_flops_ceiling(p, (xr_hal_peak_dtype_t)d, &from);
    if (from == (xr_hal_peak_dtype_t)d)
      add_figure(flops, xr_hal_peak_dtype_name((xr_hal_peak_dtype_t)d), &peak);
  }
  cJSON *opts = cJSON_AddObjectToObject(head, "options");
  cJSON_AddBoolToObject(opts, "calibrate", o->calibrate);
  if (o->peaks_file) cJSON_AddStringToObject(opts, "peaks_file", o->peaks_file);
  cJSON_AddNumberToObject(opts, "warmup", o->warmup);
  cJSON_AddStringToObject(opts, "stop", o->stop == XR_STOP_NOISE ? "noise" : "iterations");
  cJSON_AddNumberToObject(opts, "iters", o->iters);
  cJSON_AddNumberToObject(opts, "min_time_ms", o->min_time_ms);
  cJSON_AddNumberToObject(opts, "unstable_percent", o->unstable_percent);
  if (o->stop == XR_STOP_NOISE) {
    cJSON_AddNumberToObject(opts, "noise_percent", o->noise_percent);
    cJSON_AddNumberToObject(opts, "min_samples", o->min_samples);
  }
  if (xr_max_time_ms(o) > 0) cJSON_AddNumberToObject(opts, "max_time_ms", xr_max_time_ms(o));
  cJSON_AddStringToObject(opts, "launch", o->launch == XR_LAUNCH_GRAPH ? "graph" : "eager");
  cJSON_AddNumberToObject(opts, "seed", (double)o->seed);
  cJSON_AddStringToObject(opts, "cache",
                          o->cache == XR_CACHE_COLD   ? "cold"
                          : o->cache == XR_CACHE_BOTH ? "both"
                                                      : "warm");
  if (o->flush_bytes) cJSON_AddNumberToObject(opts, "flush_bytes", (double)o->flush_bytes);
  if (o->rotate == XR_ROTATE_AUTO)
    cJSON_AddStringToObject(opts, "rotate", "auto");
  else
    cJSON_AddNumberToObject(opts, "rotate", o->rotate);
  cJSON_AddBoolToObject(opts, "check", o->check);
  if (o->cache_blocks != XR_CACHE_BLOCKS_AUTO)
    cJSON_AddStringToObject(opts, "cache_blocks",
                            o->cache_blocks == XR_CACHE_BLOCKS_FULL ? "full" : "compact");
  cJSON_AddNumberToObject(opts, "ranks", o->comm ? xr_hal_comm_size(o->comm) : 1);
  if (o->scale_collectives) cJSON_AddBoolToObject(opts, "scale_collectives", true);
  if (o->choice == XR_KERNEL_REFERENCE) cJSON_AddBoolToObject(opts, "reference", true);
  if (o->op_filter) cJSON_AddStringToObject(opts, "op_filter", o->op_filter);
  if (o->op_limit >= 0) cJSON_AddNumberToObject(opts, "op_limit", (double)o->op_limit);
  if (o->timeline) {
    cJSON_AddStringToObject(opts, "timeline", o->timeline);
    cJSON_AddNumberToObject(opts, "timeline_events", o->timeline_events);
  }
  if (o->init_override_count) { /* "OP:POLICY;OP:POLICY", as --init gave them */
    size_t size = 1;
    for (size_t i = 0; i < o->init_override_count; i++)
      size += strlen(o->init_overrides[i].op) + strlen(o->init_overrides[i].policy) + 2;
    char *text = malloc(size);
    if (text) {
      size_t at = 0;
      for (size_t i = 0; i < o->init_override_count; i++)
        at += (size_t)snprintf(text + at, size - at, "%s%s:%s", i ? ";" : "",
                               o->init_overrides[i].op, o->init_overrides[i].policy);
      cJSON_AddStringToObject(opts, "init", text);
      free(text);
    }
  }
  return head;
}

xr_status_t xr_report_open(const char *path, const char *bundle_path,
                           const xr_bundle_metadata_t *source, const xr_replay_summary_t *run,
                           size_t device_index, const xr_replay_options_t *o,
                           xr_report_t **out_report) {
  const char *name = path ? path : "report";
  if (device_index >= run->device_count)
    return xr_error(XR_OUT_OF_RANGE, "%s: device %zu of a %zu-device run", name, device_index,
                    run->device_count);
  const xr_replay_device_t *device = &run->devices[device_index];
  size_t n = path ? strlen(path) : 0;
  bool json = !path || (n >= 5 && !strcmp(path + n - 5, ".json"));
  bool csv = n >= 4 && !strcmp(path + n - 4, ".csv");
  if (!json && !csv) return xr_error(XR_INVALID_ARGUMENT, "%s: a report is .json or .csv", path);
  xr_report_t *r = calloc(1, sizeof *r);
  if (!r) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  r->json = json;
  r->device_index = device_index;
  if (source && source->device_name && !(r->trace_device = strdup(source->device_name))) {
    free(r);
    return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  }
  if (!path) {
    r->doc = report_head(bundle_path, source, run, device, o);
    cJSON_AddArrayToObject(r->doc, "ops");
    cJSON_AddNullToObject(r->doc, "summary");
    *out_report = r;
    return XR_OK;
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    free(r->trace_device);
    free(r);
    return xr_error(XR_INVALID_ARGUMENT, "%s: cannot create: %s", path, strerror(errno));
  }
  r->f = f;
  if (json) {
    cJSON *head = report_head(bundle_path, source, run, device, o);
    char *text = cJSON_PrintUnformatted(head);
    cJSON_Delete(head);
    /* {<head fields>, "ops": [ */
    fprintf(f, "%.*s, \"ops\": [", (int)strlen(text) - 1, text);
    free(text);
    fputs(json_tail, f);
  } else {
    csv_header(f);
  }
  fflush(f);
  *out_report = r;
  return XR_OK;
}

void xr_add_categories(cJSON *summary, const xr_category_total_t totals[XR_CATEGORY_COUNT]) {
  cJSON *list = cJSON_AddArrayToObject(summary, "categories");
  xr_category_total_t sum = {0};
  for (int k = 0; k < XR_CATEGORY_COUNT; k++) {
    const xr_category_total_t *t = &totals[k];
    if (!t->ops) continue;
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "category", xr_category_name((xr_category_t)k));
    cJSON_AddNumberToObject(c, "ops", (double)t->ops);
    cJSON_AddNumberToObject(c, "timed", (double)t->timed);
    add_number(c, "replay_us", t->replay_us);
    add_number(c, "trace_us", t->trace_us);
    add_number(c, "trace_timed_us", t->trace_timed_us);
    cJSON_AddItemToArray(list, c);
    sum.ops += t->ops;
    sum.timed += t->timed;
    sum.replay_us += t->replay_us;
    sum.trace_us += t->trace_us;
    sum.trace_timed_us += t->trace_timed_us;
  }
  cJSON *p = cJSON_AddObjectToObject(summary, "projected");
  cJSON_AddNumberToObject(p, "ops", (double)sum.ops);
  cJSON_AddNumberToObject(p, "timed", (double)sum.timed);
  add_number(p, "replay_us", sum.replay_us);
  add_number(p, "trace_us", sum.trace_us);
  add_number(p, "trace_timed_us", sum.trace_timed_us);
}

xr_status_t xr_report_add(xr_report_t *r, const xr_op_result_t *res) {
  if (!r) return XR_OK;
  bool timed = res->outcome == XR_OP_SUCCEEDED && res->iterations > 0;
  xr_category_add(r->categories, res->family, res->op->name, (double)res->op->count,
                  timed ? res->median_us : -1, res->trace_us);
  if (r->doc) {
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(r->doc, "ops"), xr_result_to_json(res));
    r->ops++;
    return XR_OK;
  }
  if (r->json) {
    cJSON *o = xr_result_to_json(res);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory writing the report");
    fseek(r->f, -(long)(sizeof json_tail - 1), SEEK_END);
    fprintf(r->f, "%s\n%s", r->ops ? "," : "", text);
    fputs(json_tail, r->f);
    free(text);
  } else {
    xr_status_t st = csv_row(r->f, res);
    if (st != XR_OK) return st;
  }
  r->ops++;
  if (fflush(r->f) != 0 || ferror(r->f)) return xr_error(XR_DATA_LOSS, "writing the report failed");
  return XR_OK;
}

/* The summary's replay_vs_trace: the ratios' statistics and whether the device is the model the
 * trace ran on; NULL when no op has a ratio. */
cJSON *xr_trace_ratio_json(const char *trace_device, const xr_trace_ratio_stats_t *s,
                           bool same_device) {
  if (s->count == 0) return NULL;
  cJSON *o = cJSON_CreateObject();
  if (trace_device) cJSON_AddStringToObject(o, "trace_device", trace_device);
  cJSON_AddBoolToObject(o, "same_device", same_device);
  cJSON_AddNumberToObject(o, "count", (double)s->count);
  add_number(o, "median", s->median);
  add_number(o, "geomean", s->geomean);
  add_number(o, "within_10_percent", s->within_10_percent);
  cJSON *worst = cJSON_AddArrayToObject(o, "worst");
  for (size_t k = 0; k < s->worst_count; k++) {
    cJSON *w = cJSON_CreateObject();
    cJSON_AddNumberToObject(w, "index", (double)s->worst[k].index);
    cJSON_AddStringToObject(w, "name", s->worst[k].name);
    add_number(w, "ratio", s->worst[k].ratio);
    cJSON_AddItemToArray(worst, w);
  }
  return o;
}

static void report_free(xr_report_t *r) {
  free(r->trace_device);
  free(r);
}

/* The summary object of the report's device. */
static cJSON *report_summary(const xr_report_t *r, const xr_replay_summary_t *s) {
  const xr_replay_device_t *d = &s->devices[r->device_index];
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "total", (double)s->total);
  cJSON_AddNumberToObject(o, "attempted", (double)s->attempted);
  cJSON_AddNumberToObject(o, "succeeded", (double)d->succeeded);
  cJSON_AddNumberToObject(o, "failed", (double)d->failed);
  cJSON_AddNumberToObject(o, "unsupported", (double)d->unsupported);
  cJSON_AddNumberToObject(o, "interrupted", (double)d->interrupted);
  cJSON_AddNumberToObject(o, "contended", (double)d->contended);
  cJSON_AddNumberToObject(o, "unstable", (double)d->unstable);
  if (s->checked) {
    cJSON_AddNumberToObject(o, "unchecked", (double)d->unchecked);
    add_number(o, "reference_ms", d->reference_ms);
    add_number(o, "reference_peak_bytes", d->reference_peak_bytes);
  }
  cJSON_AddBoolToObject(o, "cancelled", s->cancelled);
  add_number(o, "trace_total_us", s->trace_total_us);
  add_number(o, "trace_covered_us", d->trace_covered_us);
  cJSON *ratios = xr_trace_ratio_json(r->trace_device, &d->replay_vs_trace, d->same_device);
  if (ratios) cJSON_AddItemToObject(o, "replay_vs_trace", ratios);
  xr_add_categories(o, r->categories);
  return o;
}

xr_status_t xr_report_close(xr_report_t *r, const xr_replay_summary_t *s) {
  if (!r) return XR_OK;
  if (r->doc) {
    cJSON_Delete(r->doc);
    report_free(r);
    return XR_OK;
  }
  if (r->json && s && r->device_index < s->device_count) {
    cJSON *o = report_summary(r, s);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    fseek(r->f, -(long)(sizeof json_tail - 1), SEEK_END);
    fprintf(r->f, "\n], \"summary\": %s}\n", text ? text : "null");
    free(text);
  }
  int bad = fclose(r->f) != 0;
  report_free(r);
  return bad ? xr_error(XR_DATA_LOSS, "closing the report failed") : XR_OK;
}

xr_status_t xr_report_close_contents(xr_report_t *r, const xr_replay_summary_t *s,
                                     const char *name, xr_report_contents_t **out_contents) {
  *out_contents = NULL;
  if (!r || !r->doc) {
    xr_report_close(r, s);
    return xr_error(XR_INVALID_ARGUMENT, "%s: not a report kept in memory", name);
  }
  cJSON *doc = r->doc;
  if (s && r->device_index < s->device_count)
    cJSON_ReplaceItemInObjectCaseSensitive(doc, "summary", report_summary(r, s));
  report_free(r);
  return xr_report_from_json(doc, name, out_contents);
}
