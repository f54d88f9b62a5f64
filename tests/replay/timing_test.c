/* The timing decisions on synthetic inputs whose answers are known: the noise statistic on sample
 * streams of known spread, the stopping rule's reasons, percentiles, flush sizes and input
 * rotation from cache tables of real parts. */
#include "replay/timing.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Samples of `mean` with a relative spread `spread` (a seeded normal, Box-Muller). */
static void normal_stream(double *out, int n, double mean, double spread, uint64_t seed) {
  for (int i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    double u1 = ((seed >> 11) + 1.0) / 9007199254740993.0;
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    double u2 = (seed >> 11) / 9007199254740992.0;
    out[i] = mean * (1.0 + spread * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
  }
}

Test(timing, batch_means_noise_by_hand) {
  /* Batches of 2: means 2, 4, 2, 4, 2, 4 -> mean 3, sample stdev sqrt(6/5). */
  double s[] = {1, 3, 4, 4, 2, 2, 3, 5, 2, 2, 4, 4, 100};
  double expected = 100.0 * sqrt(6.0 / 5.0) / 3.0;
  cr_assert_float_eq(xr_batch_means_noise(s, 13, 2), expected, 1e-9,
                     "the partial last batch is left out");
  cr_assert_eq(xr_batch_means_noise(s, 9, 2), -1, "four batches are too few");
  double flat[] = {5, 5, 5, 5, 5, 5};
  cr_assert_float_eq(xr_batch_means_noise(flat, 6, 1), 0, 1e-12);
}

Test(timing, batch_size_follows_the_sample_size) {
  cr_assert_eq(xr_noise_batch_size(1000), 1);
  cr_assert_eq(xr_noise_batch_size(200), 1);
  cr_assert_eq(xr_noise_batch_size(50), 4);
  cr_assert_eq(xr_noise_batch_size(0.5), XR_NOISE_MAX_BATCH);
  cr_assert_eq(xr_noise_batch_size(0), XR_NOISE_MAX_BATCH);
}

/* The batch means of k samples of spread s spread about s / sqrt(k). */
Test(timing, noise_of_streams_of_known_spread) {
  enum { N = 4096 };
  double *s = malloc(sizeof(double) * N);
  for (int k = 0; k < 3; k++) {
    double spread = (double[]){0.001, 0.01, 0.05}[k];
    /* Samples of 200 / 20.5 us: batches of 21, well clear of a rounding edge. */
    normal_stream(s, N, 200.0 / 20.5, spread, 42 + k);
    int batch;
    double noise = xr_stream_noise(s, N, &batch, NULL);
    cr_assert_eq(batch, 21);
    double expected = 100.0 * spread / sqrt(21.0);
    cr_assert(fabs(noise - expected) < 0.15 * expected, "spread %g: noise %g%%, expected %g%%",
              spread, noise, expected);
  }
  free(s);
}

/* A stable stream with a few host interruptions: the far fences leave them out of the noise. */
Test(timing, outliers_beyond_the_far_fences_are_left_out_of_the_noise) {
  enum { N = 3000 };
  double *s = malloc(sizeof(double) * N);
  normal_stream(s, N, 200.0 / 9.5, 0.02, 11);       /* 21 us, 2%: batches of 10 */
  for (int i = 137; i < N; i += 331) s[i] = 1000.0; /* nine 1 ms interruptions */
  int batch, outliers;
  double with = xr_batch_means_noise(s, N, 10);
  double noise = xr_stream_noise(s, N, &batch, &outliers);
  cr_assert_eq(batch, 10);
  cr_assert_eq(outliers, 9);
  double expected = 2.0 / sqrt(10.0);
  cr_assert(fabs(noise - expected) < 0.2 * expected, "noise %g%%, expected %g%%", noise, expected);
  cr_assert_gt(with, 20 * noise, "the interruptions alone dominate the raw statistic: %g%%", with);
  free(s);
}

/* The stop rule after the first `n` samples of `s` and `wall_ms` of timing loop, every sample
 * kept and the noise judged. */
static const char *stop(const xr_replay_options_t *o, const double *s, int n, double wall_ms) {
  xr_timing_progress_t p = {
      .samples_us = s, .n = n, .taken = n, .wall_ms = wall_ms, .judge_noise = true};
  for (int i = 0; i < n; i++) p.samples_ms += s[i] / 1000.0;
  return xr_stop_reason(o, &p);
}

static xr_replay_options_t noise_rule(double percent) {
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.stop = XR_STOP_NOISE;
  o.noise_percent = percent;
  return o;
}

Test(timing, the_noise_rule_stops_a_stable_stream_early_and_gives_up_on_a_noisy_one) {
  enum { N = 2000 };
  double *s = malloc(sizeof(double) * N);
  xr_replay_options_t o = noise_rule(0.5);
  /* 500 us samples (one per batch), 0.2% spread: the target holds once there are five batches
   * and the ten samples the rule asks for. */
  normal_stream(s, N, 500.0, 0.002, 7);
  cr_assert_null(stop(&o, s, 9, 5.0), "fewer than --min-samples");
  cr_assert_str_eq(stop(&o, s, 10, 5.0), "noise");
  o.min_time_ms = 100; /* 200 samples of 0.5 ms */
  cr_assert_null(stop(&o, s, 150, 80.0), "--min-time not yet reached");
  cr_assert_str_eq(stop(&o, s, 210, 110.0), "noise");
  /* 5% spread never gets under 0.5% in batches of one: timing ends at --max-time. */
  o = noise_rule(0.5);
  normal_stream(s, N, 500.0, 0.05, 8);
  cr_assert_null(stop(&o, s, N, 999.0));
  cr_assert_str_eq(stop(&o, s, N, 1000.0), "max-time", "the documented default");
  o.max_time_ms = 50;
  cr_assert_str_eq(stop(&o, s, 100, 50.0), "max-time");
  o.max_iters = 100;
  cr_assert_str_eq(stop(&o, s, 100, 10.0), "max-iterations");
  /* ... but a looser target holds. */
  o = noise_rule(10);
  cr_assert_str_eq(stop(&o, s, 10, 5.0), "noise");
  /* Between judgements only the limits apply; they count every sample taken. */
  xr_timing_progress_t between = {
      .samples_us = s, .n = 10, .samples_ms = 5, .taken = 10, .wall_ms = 5};
  cr_assert_null(xr_stop_reason(&o, &between));
  between.wall_ms = 1000;
  cr_assert_str_eq(xr_stop_reason(&o, &between), "max-time");
  between.wall_ms = 5;
  between.taken = o.max_iters;
  cr_assert_str_eq(xr_stop_reason(&o, &between), "max-iterations", "set-aside samples count");
  free(s);
}

Test(timing, the_iteration_rule_counts_and_keeps_to_min_time) {
  double s[40];
  for (int i = 0; i < 40; i++) s[i] = 100.0 * (1 + i % 7); /* noisy, which it ignores */
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  cr_assert_null(stop(&o, s, 19, 1.0));
  cr_assert_str_eq(stop(&o, s, 20, 1.0), "iterations");
  o.min_time_ms = 10; /* 20 samples hold 7.7 ms of work, 30 hold 11.5 ms */
  cr_assert_null(stop(&o, s, 20, 9.0));
  cr_assert_str_eq(stop(&o, s, 30, 13.0), "iterations");
  o.max_time_ms = 5;
  cr_assert_str_eq(stop(&o, s, 20, 6.0), "max-time");
  o.max_time_ms = 0;
  cr_assert_null(stop(&o, s, 20, 1e9), "no time limit by default");
}

Test(timing, percentiles_and_iqr) {
  double s[] = {9, 1, 8, 2, 7, 3, 6, 4, 5, 10, 11};
  xr_op_result_t r = {0};
  xr_stats(s, 11, &r);
  cr_assert_float_eq(r.median_us, 6, 1e-12);
  cr_assert_float_eq(r.p25_us, 4, 1e-12); /* nearest rank: index 0.25 * 10 + 0.5 -> 3 */
  cr_assert_float_eq(r.p75_us, 9, 1e-12); /* index 0.75 * 10 + 0.5 -> 8 */
  cr_assert_float_eq(r.iqr_us, 5, 1e-12);
  cr_assert_float_eq(r.mean_us, 6, 1e-12);
  cr_assert_float_eq(r.min_us, 1, 1e-12);
}

static xr_hal_device_properties_t part(uint64_t llc_mib, uint64_t side_mib, uint64_t total_mib,
                                       uint64_t memory_gib) {
  xr_hal_device_properties_t p;
  memset(&p, 0, sizeof p);
  p.last_level_cache_bytes = llc_mib << 20;
  p.memory_side_cache_bytes = side_mib << 20;
  p.cache_total_bytes = total_mib << 20;
  p.memory_bytes = memory_gib << 30;
  return p;
}

Test(timing, the_flush_covers_every_cache_level) {
  /* MI300X: 4 MiB of L2 per XCD as HIP reports it, 256 MiB of Infinity Cache. */
  xr_hal_device_properties_t mi300x = part(4, 256, 260, 192);
  cr_assert_eq(xr_flush_bytes(&mi300x, 0), (uint64_t)520 << 20);
  /* H100: 50 MiB of L2, no memory-side cache. */
  xr_hal_device_properties_t h100 = part(50, 0, 50, 80);
  cr_assert_eq(xr_flush_bytes(&h100, 0), (uint64_t)100 << 20);
  /* A 2-core host: 2 x (48 KiB + 2 MiB) private, 300 MiB shared (reported as 304 MiB total). */
  xr_hal_device_properties_t host = part(300, 0, 304, 24);
  cr_assert_eq(xr_flush_bytes(&host, 0), (uint64_t)608 << 20);
  /* A device that reports only its LLC, one that reports nothing, and the override. */
  xr_hal_device_properties_t llc_only = part(6, 0, 0, 16);
  cr_assert_eq(xr_flush_bytes(&llc_only, 0), (uint64_t)12 << 20);
  xr_hal_device_properties_t unknown = part(0, 0, 0, 16);
  cr_assert_eq(xr_flush_bytes(&unknown, 0), (uint64_t)128 << 20);
  cr_assert_eq(xr_flush_bytes(&mi300x, 12345), 12345);
}

Test(timing, auto_rotation_exceeds_five_times_the_largest_cache) {
  xr_hal_device_properties_t mi300x = part(4, 256, 260, 192);
  /* 100 MiB per copy: 5 x 256 MiB = 1280 MiB needs 13 copies (1300 MiB). */
  cr_assert_eq(xr_rotate_copies(XR_ROTATE_AUTO, &mi300x, (uint64_t)100 << 20), 13);
  xr_hal_device_properties_t h100 = part(50, 0, 50, 80);
  cr_assert_eq(xr_rotate_copies(XR_ROTATE_AUTO, &h100, (uint64_t)10 << 20), 26);
  cr_assert_eq(xr_rotate_copies(XR_ROTATE_AUTO, &h100, 4096), 64, "at most 64 copies");
  cr_assert_eq(xr_rotate_copies(XR_ROTATE_AUTO, &h100, (uint64_t)300 << 20), 1);
  /* A quarter of memory caps it: 2 GiB of 8 GiB holds 2 copies of 1 GiB. */
  xr_hal_device_properties_t small = part(1024, 0, 1024, 8);
  cr_assert_eq(xr_rotate_copies(XR_ROTATE_AUTO, &small, (uint64_t)1 << 30), 2);
  cr_assert_eq(xr_rotate_copies(3, &h100, 1), 3, "an explicit count is kept");
  cr_assert_eq(xr_rotate_copies(0, &h100, 1), 1);
}
