/* Two reports compared: pairing, bootstrap verdicts, the geometric mean and its interval
 * (replay/report_compare.h states the rules). */
#include "replay/report_compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *xr_verdict_name(xr_verdict_t verdict) {
  switch (verdict) {
    case XR_VERDICT_SAME: return "SAME";
    case XR_VERDICT_FASTER: return "FASTER";
    case XR_VERDICT_SLOWER: return "SLOWER";
    case XR_VERDICT_UNSURE: return "UNSURE";
  }
  return "UNSURE";
}

/* splitmix64: small, seedable, good enough to draw sample indices. */
static uint64_t next_random(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int compare_doubles(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* The median of `n` values drawn with replacement from `from` (scratch: n doubles). */
static double resampled_median(const double *from, int n, double *scratch, uint64_t *state) {
  for (int i = 0; i < n; i++) scratch[i] = from[next_random(state) % (uint64_t)n];
  qsort(scratch, (size_t)n, sizeof *scratch, compare_doubles);
  return n % 2 ? scratch[n / 2] : 0.5 * (scratch[n / 2 - 1] + scratch[n / 2]);
}

/* The q-quantile (0..1) of sorted values, interpolated. */
static double quantile(const double *sorted, int n, double q) {
  double at = q * (n - 1);
  int i = (int)at;
  return i + 1 < n ? sorted[i] + (at - i) * (sorted[i + 1] - sorted[i]) : sorted[n - 1];
}

static double larger(double x, double y) { return isnan(y) || x >= y ? x : y; }

void xr_compare_samples(const double *a_us, int a_n, double a_median, double a_noise_percent,
                        const double *b_us, int b_n, double b_median, double b_noise_percent,
                        bool contended, double threshold_percent, uint64_t seed,
                        xr_compare_pair_t *out, double *ratios) {
  out->timed = a_median > 0 && b_median > 0;
  out->speedup = out->timed ? a_median / b_median : NAN;
  out->lo = out->hi = NAN;
  out->threshold_percent = larger(larger(threshold_percent, a_noise_percent), b_noise_percent);
  out->verdict = XR_VERDICT_UNSURE;
  out->why = "";
  if (!out->timed) {
    out->why = "not timed on both";
    return;
  }
  if (a_n == 0 || b_n == 0) {
    out->why = "a report keeps no samples (written before reports kept them)";
    return;
  }
  if (a_n < XR_COMPARE_MIN_SAMPLES || b_n < XR_COMPARE_MIN_SAMPLES) {
    out->why = "too few samples in a report";
    return;
  }
  double *scratch = malloc(sizeof(double) * (size_t)(a_n > b_n ? a_n : b_n));
  double *own = ratios ? NULL : malloc(sizeof(double) * XR_COMPARE_RESAMPLES);
  double *r = ratios ? ratios : own;
  if (!scratch || !r) {
    free(scratch);
    free(own);
    out->why = "out of memory";
    return;
  }
  uint64_t state = seed;
  for (int k = 0; k < XR_COMPARE_RESAMPLES; k++) {
    double ma = resampled_median(a_us, a_n, scratch, &state);
    double mb = resampled_median(b_us, b_n, scratch, &state);
    r[k] = mb > 0 ? ma / mb : INFINITY;
  }
  double *sorted = own ? own : malloc(sizeof(double) * XR_COMPARE_RESAMPLES);
  if (sorted) {
    if (sorted != r) memcpy(sorted, r, sizeof(double) * XR_COMPARE_RESAMPLES);
    qsort(sorted, XR_COMPARE_RESAMPLES, sizeof *sorted, compare_doubles);
    out->lo = quantile(sorted, XR_COMPARE_RESAMPLES, 0.025);
    out->hi = quantile(sorted, XR_COMPARE_RESAMPLES, 0.975);
  }
  if (sorted != own) free(sorted);
  free(own);
  free(scratch);
  if (isnan(out->lo) || isnan(out->hi)) {
    out->why = "out of memory";
    return;
  }
  if (contended) {
    out->why = "contended: timed on a crowded host";
    return;
  }
  double up = 1 + out->threshold_percent / 100, down = 1 / up;
  if (out->lo > up)
    out->verdict = XR_VERDICT_FASTER;
  else if (out->hi < down)
    out->verdict = XR_VERDICT_SLOWER;
  else if (out->lo >= down && out->hi <= up)
    out->verdict = XR_VERDICT_SAME;
  else
    out->why = "the interval straddles the threshold";
}

/* ------------------------------------------------------------------------------------------ */
/* pairing                                                                                     */

typedef struct keyed {
  const xr_report_entry_t *e;
  size_t order; /* position in its report */
} keyed_t;

static int compare_signatures(const xr_report_entry_t *x, const xr_report_entry_t *y) {
  int c = strcmp(x->name, y->name);
  return c ? c : strcmp(x->args, y->args);
}

static int compare_keyed(const void *x, const void *y) {
  const keyed_t *a = x, *b = y;
  int c = compare_signatures(a->e, b->e);
  return c ? c : (a->order > b->order) - (a->order < b->order);
}

/* B's entry for each of A's (NULL where none): by position within one bundle, else the k-th of
 * a signature in A with the k-th in B. */
static xr_status_t pair_up(const xr_report_contents_t *a, const xr_report_contents_t *b,
                           bool by_position, const xr_report_entry_t **partner) {
  if (by_position) {
    for (size_t i = 0; i < a->op_count; i++)
      partner[i] = xr_report_find(b, a->ops[i].index, a->ops[i].name);
    return XR_OK;
  }
  keyed_t *sorted = malloc(sizeof *sorted * (b->op_count ? b->op_count : 1));
  size_t *next = calloc(b->op_count ? b->op_count : 1, sizeof *next);
  if (!sorted || !next) {
    free(sorted);
    free(next);
    return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory pairing the reports' ops");
  }
  for (size_t i = 0; i < b->op_count; i++) sorted[i] = (keyed_t){&b->ops[i], i};
  qsort(sorted, b->op_count, sizeof *sorted, compare_keyed);
  /* next[first of a run of one signature]: how many of the run are taken. */
  for (size_t i = 0; i < a->op_count; i++) {
    size_t lo = 0, hi = b->op_count;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (compare_signatures(sorted[mid].e, &a->ops[i]) < 0) lo = mid + 1;
      else hi = mid;
    }
    partner[i] = NULL;
    if (lo == b->op_count || compare_signatures(sorted[lo].e, &a->ops[i])) continue;
    size_t k = lo + next[lo];
    if (k < b->op_count && !compare_signatures(sorted[k].e, &a->ops[i])) {
      partner[i] = sorted[k].e;
      next[lo]++;
    }
  }
  free(sorted);
  free(next);
  return XR_OK;
}

static double weight_us(const xr_report_entry_t *e) {
  return e->median_us > 0 ? e->count * e->median_us : 0;
}

/* The side's timed total and its unmatched ops (`matched` flags, in report order). */
static xr_status_t side_of(const xr_report_contents_t *c, const bool *matched,
                          xr_compare_side_t *s) {
  s->unmatched = calloc(c->op_count ? c->op_count : 1, sizeof *s->unmatched);
  if (!s->unmatched) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < c->op_count; i++) {
    s->timed_us += weight_us(&c->ops[i]);
    if (matched[i]) continue;
    s->unmatched[s->unmatched_count++] = &c->ops[i];
    s->unmatched_us += weight_us(&c->ops[i]);
  }
  return XR_OK;
}

xr_status_t xr_report_compare(const xr_report_contents_t *a, const xr_report_contents_t *b,
                              double threshold_percent, xr_comparison_t **out) {
  *out = NULL;
  xr_comparison_t *c = calloc(1, sizeof *c);
  const xr_report_entry_t **partner = calloc(a->op_count ? a->op_count : 1, sizeof *partner);
  bool *a_matched = calloc(a->op_count ? a->op_count : 1, 1);
  bool *b_matched = calloc(b->op_count ? b->op_count : 1, 1);
  /* Each pair's resampled ratios, for the geometric mean's interval. */
  double *ratios = malloc(sizeof(double) * XR_COMPARE_RESAMPLES * (a->op_count ? a->op_count : 1));
  xr_status_t st = c && partner && a_matched && b_matched && ratios
                       ? XR_OK
                       : xr_error(XR_RESOURCE_EXHAUSTED, "out of memory comparing reports");
  if (st == XR_OK) {
    c->by_position = a->bundle_hash[0] && !strcmp(a->bundle_hash, b->bundle_hash);
    c->pairs = calloc(a->op_count ? a->op_count : 1, sizeof *c->pairs);
    if (!c->pairs) st = xr_error(XR_RESOURCE_EXHAUSTED, "out of memory comparing reports");
  }
  if (st == XR_OK) st = pair_up(a, b, c->by_position, partner);
  size_t resampled = 0;
  double log_sum = 0;
  for (size_t i = 0; st == XR_OK && i < a->op_count; i++) {
    if (!partner[i]) continue;
    const xr_report_entry_t *ea = &a->ops[i], *eb = partner[i];
    a_matched[i] = true;
    b_matched[eb - b->ops] = true;
    xr_compare_pair_t *p = &c->pairs[c->pair_count++];
    p->a = ea;
    p->b = eb;
    double *r = ratios + resampled * XR_COMPARE_RESAMPLES;
    xr_compare_samples(ea->samples_us, ea->sample_count, ea->median_us, ea->noise_percent,
                       eb->samples_us, eb->sample_count, eb->median_us, eb->noise_percent,
                       ea->contended == 1 || eb->contended == 1, threshold_percent,
                       0x5eed0000ull + (uint64_t)ea->index, p, r);
    if (!p->timed) continue;
    c->timed_pairs++;
    c->contended_pairs += ea->contended == 1 || eb->contended == 1;
    c->verdicts[p->verdict]++;
    log_sum += log(p->speedup);
    if (!isnan(p->lo)) resampled++;
  }
  if (st == XR_OK) st = side_of(a, a_matched, &c->a);
  if (st == XR_OK) st = side_of(b, b_matched, &c->b);
  if (st == XR_OK) {
    c->geomean = c->timed_pairs ? exp(log_sum / (double)c->timed_pairs) : NAN;
    c->geomean_lo = c->geomean_hi = NAN;
  }
  /* The geometric mean's interval: resample k takes every pair's k-th resampled ratio (pairs
   * without samples their point speed-up), so each op's own uncertainty carries through. */
  if (st == XR_OK && resampled) {
    double *g = malloc(sizeof(double) * XR_COMPARE_RESAMPLES);
    if (!g) st = xr_error(XR_RESOURCE_EXHAUSTED, "out of memory comparing reports");
    for (int k = 0; g && k < XR_COMPARE_RESAMPLES; k++) {
      double sum = 0;
      size_t used = 0;
      for (size_t i = 0; i < c->pair_count; i++) {
        const xr_compare_pair_t *p = &c->pairs[i];
        if (!p->timed) continue;
        sum += log(isnan(p->lo) ? p->speedup : ratios[used++ * XR_COMPARE_RESAMPLES + k]);
      }
      g[k] = exp(sum / (double)c->timed_pairs);
    }
    if (g) {
      qsort(g, XR_COMPARE_RESAMPLES, sizeof *g, compare_doubles);
      c->geomean_lo = quantile(g, XR_COMPARE_RESAMPLES, 0.025);
      c->geomean_hi = quantile(g, XR_COMPARE_RESAMPLES, 0.975);
    }
    free(g);
  }
  free(partner);
  free(a_matched);
  free(b_matched);
  free(ratios);
  if (st != XR_OK) {
    xr_comparison_free(c);
    return st;
  }
  *out = c;
  return XR_OK;
}

void xr_comparison_free(xr_comparison_t *c) {
  if (!c) return;
  free(c->pairs);
  free(c->a.unmatched);
  free(c->b.unmatched);
  free(c);
}
