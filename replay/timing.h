/* Timing decisions without a device (replay/timing.c): statistics over samples, the noise
 * stopping rule, flush sizes and input rotation. Internal to the engine; its own header so that
 * tests can drive the decisions with synthetic sample streams and cache tables. */
#ifndef XR_REPLAY_TIMING_H
#define XR_REPLAY_TIMING_H

#include "replay/replay.h"

/* Timing statistics over `n` samples (sorted in place): min, mean, median, p10/25/75/90, IQR. */
void xr_stats(double *samples_us, int n, xr_op_result_t *result);

/* The noise rule groups samples in batches of about XR_NOISE_BATCH_US of work (at most
 * XR_NOISE_MAX_BATCH samples) and needs XR_NOISE_MIN_BATCHES of them. */
#define XR_NOISE_BATCH_US 200.0
#define XR_NOISE_MAX_BATCH 32
#define XR_NOISE_MIN_BATCHES 5

/* The typical sample of a stream: the median of its first (up to) 64 samples; 0 for none. */
double xr_typical_sample(const double *samples_us, int n);

/* Samples per batch for samples of about `typical_us`. */
int xr_noise_batch_size(double typical_us);

/* Relative standard deviation, in percent, of the means of consecutive batches of `batch`
 * samples (a last, partial batch left out); -1 with fewer than XR_NOISE_MIN_BATCHES batches. */
double xr_batch_means_noise(const double *samples_us, int n, int batch);

/* Samples beyond Tukey's far fences, Q1 - 3 IQR and Q3 + 3 IQR, are outliers: a host
 * interruption inside one sample (a CPU run on a virtual machine has a few in a thousand), not
 * the kernel's variation. */
#define XR_NOISE_FENCE 3.0

/* The noise statistic of a sample stream, in order: xr_batch_means_noise over the samples inside
 * the far fences, with the batch size the stream's typical sample gives. *out_batch and
 * *out_outliers (the samples left out), when not NULL. */
double xr_stream_noise(const double *samples_us, int n, int *out_batch, int *out_outliers);

/* The options' --max-time: theirs, else XR_NOISE_DEFAULT_MAX_TIME_MS for the noise rule, else 0
 * (none). */
double xr_max_time_ms(const xr_replay_options_t *options);

/* What the stop rule sees of a timing loop so far. */
typedef struct xr_timing_progress {
  const double *samples_us; /* the samples it judges, in order */
  int n;
  double samples_ms; /* their sum, kept by the caller as they come */
  int taken;         /* every sample taken, set-aside ones included (--max-iters) */
  double wall_ms;    /* the timing loop's wall time */
  bool judge_noise;  /* compute the noise statistic now (it sorts the samples) */
} xr_timing_progress_t;

/* Whether timing stops, under the options' rule: the reason ("iterations", "noise", "max-time",
 * "max-iterations"), or NULL to go on. */
const char *xr_stop_reason(const xr_replay_options_t *options, const xr_timing_progress_t *p);

/* NCCL-tests' bus bandwidth over algorithm bandwidth for a collective on `ranks` ranks: what
 * makes the figures of different rank counts comparable with the links' speed. allreduce
 * 2(n-1)/n; allgather, reduce_scatter, alltoall (n-1)/n; broadcast 1; barrier 0. */
double xr_bus_factor(xr_hal_collective_kind_t kind, int ranks);

#endif
