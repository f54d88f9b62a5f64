/* Replayed vs recorded: see trace_ratio.h. */
#include "replay/trace_ratio.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xr_trace_ratios_init(xr_trace_ratios_t *ratios) {
  memset(ratios, 0, sizeof *ratios);
}

xr_status_t xr_trace_ratios_add(xr_trace_ratios_t *ratios, const xr_op_result_t *r) {
  if (r->outcome != XR_OP_SUCCEEDED || !(r->median_us > 0) || !(r->trace_us > 0) ||
      !isfinite(r->median_us) || !isfinite(r->trace_us))
    return XR_OK;
  if (ratios->count == ratios->capacity) {
    size_t capacity = ratios->capacity ? 2 * ratios->capacity : 64;
    xr_trace_ratio_op_t *grown = realloc(ratios->ops, capacity * sizeof *grown);
    if (!grown) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory keeping replay/trace ratios");
    ratios->ops = grown;
    ratios->capacity = capacity;
  }
  xr_trace_ratio_op_t *o = &ratios->ops[ratios->count++];
  o->index = r->index;
  snprintf(o->name, sizeof o->name, "%s", r->op && r->op->name ? r->op->name : "");
  o->ratio = r->median_us / r->trace_us;
  return XR_OK;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Furthest from 1 first; equally far in bundle order, so the list does not depend on the
 * order results came in. */
static int by_distance(const void *a, const void *b) {
  const xr_trace_ratio_op_t *x = a, *y = b;
  double dx = fabs(log(x->ratio)), dy = fabs(log(y->ratio));
  if (dx != dy) return dx < dy ? 1 : -1;
  return (x->index > y->index) - (x->index < y->index);
}

xr_status_t xr_trace_ratios_compute(const xr_trace_ratios_t *ratios, xr_trace_ratio_stats_t *out) {
  memset(out, 0, sizeof *out);
  out->median = out->geomean = out->within_10_percent = NAN;
  size_t n = ratios->count;
  if (n == 0) return XR_OK;
  double *values = malloc(n * sizeof *values);
  xr_trace_ratio_op_t *ordered = malloc(n * sizeof *ordered);
  if (!values || !ordered) {
    free(values);
    free(ordered);
    return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory sorting %zu replay/trace ratios", n);
  }
  double log_sum = 0;
  size_t within = 0;
  for (size_t i = 0; i < n; i++) {
    double ratio = ratios->ops[i].ratio;
    values[i] = ratio;
    log_sum += log(ratio);
    if (ratio >= 0.9 && ratio <= 1.1) within++;
  }
  qsort(values, n, sizeof *values, by_value);
  out->count = n;
  out->median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  out->geomean = exp(log_sum / (double)n);
  out->within_10_percent = 100.0 * (double)within / (double)n;
  memcpy(ordered, ratios->ops, n * sizeof *ordered);
  qsort(ordered, n, sizeof *ordered, by_distance);
  out->worst_count = n < XR_TRACE_RATIO_WORST ? n : XR_TRACE_RATIO_WORST;
  memcpy(out->worst, ordered, out->worst_count * sizeof *ordered);
  free(values);
  free(ordered);
  return XR_OK;
}

void xr_trace_ratios_free(xr_trace_ratios_t *ratios) {
  if (!ratios) return;
  free(ratios->ops);
  xr_trace_ratios_init(ratios);
}

xr_status_t xr_trace_ratio_stats(const xr_op_result_t *results, size_t count,
                                 xr_trace_ratio_stats_t *out_stats) {
  xr_trace_ratios_t ratios;
  xr_trace_ratios_init(&ratios);
  xr_status_t st = XR_OK;
  for (size_t i = 0; i < count && st == XR_OK; i++) st = xr_trace_ratios_add(&ratios, &results[i]);
  if (st == XR_OK) st = xr_trace_ratios_compute(&ratios, out_stats);
  xr_trace_ratios_free(&ratios);
  return st;
}

/* The name's words, lower case, separated by one space, without a leading vendor word or a
 * trailing "vf"; cut at `size`. */
static void model_words(const char *name, char *out, size_t size) {
  size_t n = 0;
  for (const char *p = name; *p && n + 1 < size;) {
    while (isspace((unsigned char)*p)) p++;
    if (!*p) break;
    if (n) out[n++] = ' ';
    while (*p && !isspace((unsigned char)*p) && n + 1 < size)
      out[n++] = (char)tolower((unsigned char)*p++);
  }
  out[n] = '\0';
  static const char *const vendors[] = {"nvidia ", "amd "};
  for (size_t k = 0; k < sizeof vendors / sizeof vendors[0]; k++) {
    size_t len = strlen(vendors[k]);
    if (!strncmp(out, vendors[k], len)) {
      memmove(out, out + len, n - len + 1);
      n -= len;
      break;
    }
  }
  if (n > 3 && !strcmp(out + n - 3, " vf")) out[n - 3] = '\0';
}

bool xr_trace_device_same_model(const char *device, const char *trace_device) {
  if (!device || !trace_device) return false;
  char a[256], b[256];
  model_words(device, a, sizeof a);
  model_words(trace_device, b, sizeof b);
  return a[0] && !strcmp(a, b);
}
