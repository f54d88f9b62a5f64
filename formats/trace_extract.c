/* Trace extraction: see trace_extract.h for what it does. Here: the public entry points and the
 * pipeline that runs the stages in order over one context; each stage has its own file
 * (trace_extract_internal.h lists them and their entry points). */
#include "formats/trace_extract.h"

#include <stdlib.h>
#include <string.h>

#include "formats/trace_extract_internal.h"
#include "formats/trace_json.h"

static void ctx_free(ctx_t *c) {
  xr_extract_strtab_free(&c->strs);
  xr_extract_strtab_free(&c->warn);
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

static xr_status_t run(ctx_t *c, xr_jreader_t *r, xr_bundle_t **out_bundle,
                       xr_extract_summary_t *out_summary) {
  xr_bundle_t *b = NULL;
  /* The stages, in order; trace_extract_internal.h says what each reads and writes. */
  xr_status_t st = xr_extract_read(c, r);
  if (st == XR_OK) st = xr_extract_find_captures(c);
  if (st == XR_OK) st = xr_extract_link(c);
  if (st == XR_OK) st = xr_extract_match_graphs(c);
  if (st == XR_OK) st = xr_extract_group(c);
  if (st == XR_OK) st = xr_bundle_create(&b);
  if (st == XR_OK) st = xr_extract_build(c, b);
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
