/* Replay reports read back: see report_read.h. */
#include "replay/report_read.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"

static const char *text_of(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static double number_of(const cJSON *o, const char *key, double fallback) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : fallback;
}

xr_status_t xr_report_read(const char *path, xr_report_contents_t **out_contents) {
  uint8_t *text = NULL;
  size_t size = 0;
  xr_status_t st = xr_read_file(path, &text, &size);
  if (st != XR_OK) return st;
  cJSON *j = cJSON_ParseWithLength((const char *)text, size);
  free(text);
  if (!j) return xr_error(XR_INVALID_ARGUMENT, "%s: not a replay report: not JSON", path);
  const cJSON *ops = cJSON_GetObjectItemCaseSensitive(j, "ops");
  if (!cJSON_IsObject(j) || !cJSON_IsArray(ops)) {
    cJSON_Delete(j);
    return xr_error(XR_INVALID_ARGUMENT, "%s: not a replay report: \"ops\" is not an array", path);
  }
  size_t n = (size_t)cJSON_GetArraySize(ops);
  xr_report_contents_t *c = calloc(1, sizeof *c);
  xr_report_entry_t *entries = calloc(n ? n : 1, sizeof *entries);
  if (!c || !entries) {
    free(c);
    free(entries);
    cJSON_Delete(j);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory", path);
  }
  c->json = j;
  c->ops = entries;
  c->bundle = text_of(j, "bundle");
  c->hal = text_of(j, "hal");
  c->device = text_of(j, "device");
  c->finished = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "summary"));
  size_t i = 0;
  const cJSON *o;
  cJSON_ArrayForEach(o, ops) {
    if (!cJSON_IsObject(o) || !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "index")) ||
        !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "name"))) {
      xr_report_contents_free(c);
      return xr_error(XR_INVALID_ARGUMENT, "%s: ops[%zu]: not a replay result (no index or name)",
                      path, i);
    }
    double index = number_of(o, "index", -1);
    if (!(index >= 0 && index < 9007199254740992.0) || index != floor(index)) {
      xr_report_contents_free(c);
      return xr_error(XR_INVALID_ARGUMENT, "%s: ops[%zu].index: not an op position (%g)", path,
                      i, index);
    }
    xr_report_entry_t *e = &entries[i++];
    e->index = (int64_t)index;
    e->name = text_of(o, "name");
    e->outcome = text_of(o, "outcome");
    e->kernel = text_of(o, "kernel");
    double median = number_of(o, "median_us", -1);
    e->median_us = !strcmp(e->outcome, "ok") && median > 0 ? median : -1;
    e->tflops = number_of(o, "tflops", 0);
    e->gbps = number_of(o, "gbps", 0);
    e->peak_percent = number_of(o, "peak_percent", 0);
    e->trace_us = number_of(o, "trace_us", -1);
  }
  c->op_count = i;
  *out_contents = c;
  return XR_OK;
}

void xr_report_contents_free(xr_report_contents_t *c) {
  if (!c) return;
  cJSON_Delete(c->json);
  free(c->ops);
  free(c);
}

const xr_report_entry_t *xr_report_find(const xr_report_contents_t *c, int64_t index,
                                        const char *name) {
  for (size_t i = 0; i < c->op_count; i++)
    if (c->ops[i].index == index && !strcmp(c->ops[i].name, name)) return &c->ops[i];
  return NULL;
}
