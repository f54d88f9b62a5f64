/* Timing decisions without a device: statistics over samples, the stopping rule, how much to
 * flush and how many input copies to rotate among. The timing loop itself is in engine.c. */
#include "replay/timing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples. */
static double percentile(const double *sorted, int n, double p) {
  int k = (int)(p / 100.0 * (n - 1) + 0.5);
  return sorted[k < 0 ? 0 : k >= n ? n - 1 : k];
}

void xr_stats(double *s, int n, xr_op_result_t *r) {
  qsort(s, (size_t)n, sizeof *s, compare_doubles);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += s[i];
  r->min_us = s[0];
  r->mean_us = sum / n;
  r->median_us = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  r->p10_us = percentile(s, n, 10);
  r->p25_us = percentile(s, n, 25);
  r->p75_us = percentile(s, n, 75);
  r->p90_us = percentile(s, n, 90);
  r->iqr_us = r->p75_us - r->p25_us;
}

int xr_noise_batch_size(double typical_us) {
  if (!(typical_us > 0)) return XR_NOISE_MAX_BATCH;
  double k = ceil(XR_NOISE_BATCH_US / typical_us);
  return k < 1 ? 1 : k > XR_NOISE_MAX_BATCH ? XR_NOISE_MAX_BATCH : (int)k;
}

double xr_batch_means_noise(const double *samples, int n, int batch) {
  if (batch < 1) batch = 1;
  int batches = n / batch;
  if (batches < XR_NOISE_MIN_BATCHES) return -1;
  double sum = 0, sum_sq = 0;
  for (int b = 0; b < batches; b++) {
    double mean = 0;
    for (int i = 0; i < batch; i++) mean += samples[b * batch + i];
    mean /= batch;
    sum += mean;
    sum_sq += mean * mean;
  }
  double mean = sum / batches;
  double variance = (sum_sq - sum * mean) / (batches - 1); /* sample variance of the means */
  if (!(mean > 0)) return -1;
  return 100.0 * sqrt(variance > 0 ? variance : 0) / mean;
}

double xr_typical_sample(const double *samples, int n) {
  double head[64];
  int m = n < 64 ? n : 64;
  memcpy(head, samples, sizeof(double) * (size_t)m);
  qsort(head, (size_t)m, sizeof *head, compare_doubles);
  return m ? head[m / 2] : 0;
}

double xr_stream_noise(const double *samples, int n, int *out_batch, int *out_outliers) {
  int batch = xr_noise_batch_size(xr_typical_sample(samples, n));
  if (out_batch) *out_batch = batch;
  if (out_outliers) *out_outliers = 0;
  if (n < 4) return xr_batch_means_noise(samples, n, batch);
  /* Tukey's far fences from the quartiles; the samples inside them, in order. */
  double *sorted = malloc(sizeof(double) * (size_t)n * 2);
  if (!sorted) return -1;
  double *inside = sorted + n;
  memcpy(sorted, samples, sizeof(double) * (size_t)n);
  qsort(sorted, (size_t)n, sizeof *sorted, compare_doubles);
  double q1 = percentile(sorted, n, 25), q3 = percentile(sorted, n, 75);
  double low = q1 - XR_NOISE_FENCE * (q3 - q1), high = q3 + XR_NOISE_FENCE * (q3 - q1);
  int kept = 0;
  for (int i = 0; i < n; i++)
    if (samples[i] >= low && samples[i] <= high) inside[kept++] = samples[i];
  if (out_outliers) *out_outliers = n - kept;
  double noise = xr_batch_means_noise(inside, kept, batch);
  free(sorted);
  return noise;
}

double xr_max_time_ms(const xr_replay_options_t *o) {
  if (o->max_time_ms > 0) return o->max_time_ms;
  return o->stop == XR_STOP_NOISE ? XR_NOISE_DEFAULT_MAX_TIME_MS : 0;
}

const char *xr_stop_reason(const xr_replay_options_t *o, const xr_timing_progress_t *p) {
  if (p->taken >= o->max_iters) return "max-iterations";
  bool enough = p->samples_ms >= o->min_time_ms;
  if (o->stop == XR_STOP_NOISE) {
    if (p->judge_noise && enough && p->n >= o->min_samples) {
      double noise = xr_stream_noise(p->samples_us, p->n, NULL, NULL);
      if (noise >= 0 && noise <= o->noise_percent) return "noise";
    }
  } else if (enough && p->n >= o->iters) {
    return "iterations";
  }
  double max_time = xr_max_time_ms(o);
  return max_time > 0 && p->wall_ms >= max_time ? "max-time" : NULL;
}

uint64_t xr_flush_bytes(const xr_hal_device_properties_t *p, uint64_t override) {
  if (override) return override;
  uint64_t caches = p->last_level_cache_bytes + p->memory_side_cache_bytes;
  if (p->cache_total_bytes > caches) caches = p->cache_total_bytes;
  return caches ? 2 * caches : (uint64_t)128 << 20;
}

int xr_rotate_copies(int rotate, const xr_hal_device_properties_t *p, uint64_t op_bytes) {
  if (rotate != XR_ROTATE_AUTO) return rotate > 0 ? rotate : 1;
  uint64_t largest = p->last_level_cache_bytes > p->memory_side_cache_bytes
                         ? p->last_level_cache_bytes
                         : p->memory_side_cache_bytes;
  if (!largest || !op_bytes) return 1;
  uint64_t copies = (5 * largest) / op_bytes + 1; /* together more than 5x the cache */
  if (copies > 64) copies = 64;
  uint64_t quarter = p->memory_bytes / 4;
  if (quarter && copies * op_bytes > quarter) copies = quarter / op_bytes;
  return copies < 1 ? 1 : (int)copies;
}

double xr_bus_factor(xr_hal_collective_kind_t kind, int ranks) {
  double n = ranks > 0 ? ranks : 1;
  switch (kind) {
    case XR_HAL_ALLREDUCE: return 2 * (n - 1) / n;
    case XR_HAL_ALLGATHER:
    case XR_HAL_REDUCE_SCATTER:
    case XR_HAL_ALLTOALL: return (n - 1) / n;
    case XR_HAL_BROADCAST: return 1;
    default: return 0;
  }
}
