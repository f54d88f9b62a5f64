/* Ceilings that hold: which figure an op's percentage is of, its bound, a rate above its
 * ceiling, and the peaks file that pins the figures (replay/ceilings.c, replay/peaks.c). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/bundle.h"
#include "hal/hal.h"
#include "replay/replay.h"

static xr_hal_figure_t fig(double value, xr_hal_figure_source_t source) {
  return (xr_hal_figure_t){value, source};
}

/* A device with 32 MiB of cache, a datasheet DRAM bandwidth of 100 GB/s and an estimated fp32
 * peak of 1 TFLOP/s: the ridge point is at 10 FLOP/byte. */
static xr_hal_device_properties_t device(void) {
  xr_hal_device_properties_t p = {0};
  p.cache_total_bytes = p.last_level_cache_bytes = 32u << 20;
  p.memory_bandwidth = fig(100e9, XR_HAL_FIGURE_DATASHEET);
  p.peak_flops[XR_HAL_PEAK_FP32] = fig(1e12, XR_HAL_FIGURE_ESTIMATED);
  return p;
}

static xr_op_result_t timed(double median_us, xr_hal_peak_dtype_t dtype) {
  xr_op_result_t r = {.median_us = median_us, .peak_percent = -1, .peak_dtype = dtype};
  return r;
}

/* aten::gather reading 16 rows of 64 floats from a 1.2 GB `self`: its bytes are the rows it
 * moves (and the indices), so it runs from cache; judged on the size of its tensors it was held
 * against DRAM, and came out above it. */
Test(ceilings, an_op_that_touches_little_of_a_large_tensor_is_judged_by_the_bytes_it_touches) {
  xr_hal_device_properties_t p = device();
  p.measured.cache_bandwidth = fig(400e9, XR_HAL_FIGURE_CALIBRATED);
  double bytes = 16 * 8 + 2.0 * 16 * 64 * 4; /* int64 indices, rows read and written */
  xr_op_result_t r = timed(0.1, XR_HAL_PEAK_FP32);
  xr_derive_rates(&p, 0, bytes, bytes, false, &r);
  cr_assert_str_eq(r.peak_basis, "last-level cache bandwidth (calibrated)");
  cr_assert_str_eq(r.bound, "memory");
  cr_assert_float_eq(r.gbps, bytes / 0.1e-6 / 1e9, 1e-9);
  cr_assert_float_eq(r.peak_percent, 100.0 * r.gbps / 400.0, 1e-9);
  cr_assert_eq(r.above_ceiling[0], '\0', "%s", r.above_ceiling);
  /* Without a measured cache bandwidth: no percentage, and why. */
  p.measured.cache_bandwidth = fig(0, XR_HAL_FIGURE_UNKNOWN);
  r = timed(0.1, XR_HAL_PEAK_FP32);
  xr_derive_rates(&p, 0, bytes, bytes, false, &r);
  cr_assert_lt(r.peak_percent, 0);
  cr_assert(strstr(r.peak_basis, "stay in the 32 MiB of cache"), "%s", r.peak_basis);
}

Test(ceilings, a_rate_above_its_ceiling_names_it_and_the_likely_reason) {
  xr_hal_device_properties_t p = device();
  /* 64 MiB through DRAM in 0.5 ms: 268 GB/s, above the datasheet's 100. */
  double bytes = 64.0 * 1048576;
  xr_op_result_t r = timed(500, XR_HAL_PEAK_FP32);
  xr_derive_rates(&p, 0, bytes, bytes, false, &r);
  cr_assert_str_eq(r.peak_basis, "DRAM bandwidth (datasheet)");
  cr_assert_gt(r.peak_percent, 100);
  cr_assert(strstr(r.above_ceiling, "above the datasheet figure"), "%s", r.above_ceiling);
  /* The same op flushed before each execution: no cache to blame. */
  r = timed(500, XR_HAL_PEAK_FP32);
  xr_derive_rates(&p, 0, bytes, bytes, true, &r);
  cr_assert(strstr(r.above_ceiling, "still cached"), "%s", r.above_ceiling);
  /* Compute above an estimated peak: 2 TFLOP/s against 1. */
  r = timed(1000, XR_HAL_PEAK_FP32);
  xr_derive_rates(&p, 2e9, 1e6, 1e6, true, &r);
  cr_assert_str_eq(r.bound, "compute");
  cr_assert_str_eq(r.peak_basis, "fp32 peak (estimated)");
  cr_assert_float_eq(r.peak_percent, 200, 1e-9);
  cr_assert(strstr(r.above_ceiling, "an estimated ceiling") && strstr(r.above_ceiling, "clock"),
            "%s", r.above_ceiling);
  /* From the cache, faster than the last level's measured bandwidth: a nearer cache. */
  p.measured.cache_bandwidth = fig(400e9, XR_HAL_FIGURE_CALIBRATED);
  r = timed(0.01, XR_HAL_PEAK_FP32); /* 8 KiB in 10 ns */
  xr_derive_rates(&p, 0, 8192, 8192, false, &r);
  cr_assert_str_eq(r.peak_basis, "last-level cache bandwidth (calibrated)");
  cr_assert(strstr(r.above_ceiling, "above the measured ceiling: its 0.01 MiB fit in a cache "
                                    "nearer than the last-level"),
            "%s", r.above_ceiling);
  p.measured.cache_bandwidth = fig(0, XR_HAL_FIGURE_UNKNOWN);
  /* Within the ceiling: nothing to explain. */
  r = timed(4000, XR_HAL_PEAK_FP32);
  xr_derive_rates(&p, 2e9, 1e6, 1e6, true, &r);
  cr_assert_float_eq(r.peak_percent, 50, 1e-9);
  cr_assert_eq(r.above_ceiling[0], '\0');
}

/* The bound uses the ceilings the percentage and the roofline use, and is "unknown" when one is
 * missing rather than "memory". */
/* A cpu's levels (two cores: L1d 48 KiB and L2 1 MiB each, one 32 MiB L3): an op is held against
 * the innermost level that holds what it touches and was measured; the L1d, too small to measure
 * with a copy, hands its ops to the L2. */
Test(ceilings, each_cache_level_holds_the_ops_that_fit_in_it) {
  xr_hal_device_properties_t p = device();
  const xr_hal_cache_level_t levels[] = {
      {"L1d", 48u << 10, 96u << 10}, {"L2", 1u << 20, 2u << 20}, {"L3", 32u << 20, 32u << 20}};
  memcpy(p.cache_levels, levels, sizeof levels);
  p.cache_level_count = 3;
  p.cache_total_bytes = (96u << 10) + (2u << 20) + (32u << 20);
  p.measured.cache_bandwidth = p.measured.cache_level_bandwidth[2] =
      fig(200e9, XR_HAL_FIGURE_CALIBRATED);
  p.measured.cache_level_bandwidth[1] = fig(400e9, XR_HAL_FIGURE_CALIBRATED);
  struct {
    double touched;
    const char *basis;
    double gbps_ceiling;
  } cases[] = {{64 << 10, "L2 cache bandwidth (calibrated)", 400},
               {(2u << 20) - 4096, "L2 cache bandwidth (calibrated)", 400},
               {(2u << 20) + 4096, "L3 cache bandwidth (calibrated)", 200},
               {30u << 20, "L3 cache bandwidth (calibrated)", 200}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    xr_op_result_t r = timed(100, XR_HAL_PEAK_FP32);
    xr_derive_rates(&p, 0, cases[i].touched, cases[i].touched, false, &r);
    cr_assert_str_eq(r.peak_basis, cases[i].basis, "%g bytes", cases[i].touched);
    cr_assert_float_eq(r.peak_percent, 100.0 * r.gbps / cases[i].gbps_ceiling, 1e-9);
  }
  /* Above the L2's figure: the reason names the level and the copy's cores. */
  xr_op_result_t r = timed(0.001, XR_HAL_PEAK_FP32);
  xr_derive_rates(&p, 0, 65536, 65536, false, &r);
  cr_assert(strstr(r.above_ceiling, "nearer than the L2, or its kernel used more cores"), "%s",
            r.above_ceiling);
  /* Beyond every cache: DRAM. */
  r = timed(100, XR_HAL_PEAK_FP32);
  xr_derive_rates(&p, 0, 64u << 20, 64u << 20, false, &r);
  cr_assert_str_eq(r.peak_basis, "DRAM bandwidth (datasheet)");
}

Test(ceilings, the_bound_comes_from_the_same_ceilings_and_is_unknown_without_them) {
  xr_hal_device_properties_t p = device();
  xr_op_result_t r = timed(100, XR_HAL_PEAK_FP32);
  xr_derive_rates(&p, 9e6, 1e6, 1e6, true, &r); /* 9 FLOP/byte, under the ridge at 10 */
  cr_assert_str_eq(r.bound, "memory");
  cr_assert_str_eq(r.peak_basis, "DRAM bandwidth (datasheet)");
  r = timed(100, XR_HAL_PEAK_FP32);
  xr_derive_rates(&p, 11e6, 1e6, 1e6, true, &r);
  cr_assert_str_eq(r.bound, "compute");
  /* A measured bandwidth above the datasheet's moves the ridge: 200 GB/s puts it at 5. */
  p.measured.memory_bandwidth = fig(200e9, XR_HAL_FIGURE_CALIBRATED);
  r = timed(100, XR_HAL_PEAK_FP32);
  xr_derive_rates(&p, 9e6, 1e6, 1e6, true, &r);
  cr_assert_str_eq(r.bound, "compute");
  /* A bf16 GEMM on a device with no bf16 figure: the fp32 peak holds it (bf16 computed in fp32
   * is no slower), and the basis says whose figure it is. */
  r = timed(100, XR_HAL_PEAK_BF16);
  xr_derive_rates(&p, 11e6, 1e6, 1e6, true, &r);
  cr_assert_str_eq(r.bound, "compute");
  cr_assert_str_eq(r.peak_basis, "fp32 peak (estimated), above any bf16 figure");
  /* No bandwidth at all: the bound is unknown, not "memory". */
  p = device();
  p.memory_bandwidth = fig(0, XR_HAL_FIGURE_UNKNOWN);
  r = timed(100, XR_HAL_PEAK_FP32);
  xr_derive_rates(&p, 9e6, 1e6, 1e6, true, &r);
  cr_assert_str_eq(r.bound, "unknown");
  cr_assert(strstr(r.peak_basis, "peak"), "%s", r.peak_basis);
}

Test(ceilings, the_higher_of_the_stated_and_the_measured_figure_and_wider_dtypes_count) {
  xr_hal_device_properties_t p = device();
  p.measured.memory_bandwidth = fig(80e9, XR_HAL_FIGURE_CALIBRATED);
  xr_hal_figure_t bw = xr_hal_bandwidth_ceiling(&p);
  cr_assert_eq(bw.value, 100e9);
  cr_assert_eq(bw.source, XR_HAL_FIGURE_DATASHEET);
  p.measured.peak_flops[XR_HAL_PEAK_BF16] = fig(3e12, XR_HAL_FIGURE_CALIBRATED);
  p.measured.peak_flops[XR_HAL_PEAK_FP64] = fig(1.5e12, XR_HAL_FIGURE_CALIBRATED);
  xr_hal_peak_dtype_t from;
  xr_hal_figure_t f = xr_hal_flops_ceiling(&p, XR_HAL_PEAK_BF16, &from);
  cr_assert_eq(f.value, 3e12);
  cr_assert_eq(from, XR_HAL_PEAK_BF16);
  /* fp32's own estimate (1 T) is below what fp64 was measured at. */
  f = xr_hal_flops_ceiling(&p, XR_HAL_PEAK_FP32, &from);
  cr_assert_eq(f.value, 1.5e12);
  cr_assert_eq(from, XR_HAL_PEAK_FP64);
  /* A narrower dtype never lifts a wider one. */
  f = xr_hal_flops_ceiling(&p, XR_HAL_PEAK_FP64, &from);
  cr_assert_eq(f.value, 1.5e12);
  cr_assert_eq(from, XR_HAL_PEAK_FP64);
  p = device();
  f = xr_hal_flops_ceiling(&p, XR_HAL_PEAK_FP64, &from);
  cr_assert_eq(f.source, XR_HAL_FIGURE_UNKNOWN);
}

/* ------------------------------------------------------------------------------------------ */
/* the peaks file                                                                              */

static char *write_temp(const char *text) {
  char *path = strdup("/tmp/xr_peaks_XXXXXX");
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  FILE *f = fdopen(fd, "w");
  fputs(text, f);
  fclose(f);
  return path;
}

static xr_hal_device_t *cpu(void) {
  xr_hal_device_t *d = NULL;
  cr_assert_eq(xr_hal_device_create("cpu", &d), XR_OK, "%s", xr_last_error());
  return d;
}

Test(peaks, a_file_written_by_hand_sets_datasheet_and_measured_figures) {
  xr_hal_device_t *d = cpu();
  xr_hal_device_properties_t p;
  cr_assert_eq(xr_hal_device_properties(d, &p), XR_OK);
  char text[1024];
  snprintf(text, sizeof text,
           "{\"devices\": [{\"hal\": \"opencl:0\"}, {\"hal\": \"cpu:0\", \"name\": \"%s\", "
           "\"datasheet\": {\"memory_bandwidth\": 4.6e11, \"flops\": {\"bf16\": 2e12}}, "
           "\"measured\": {\"memory_bandwidth\": 3.9e11, \"memory_working_set_bytes\": 4e9, "
           "\"cache_bandwidth\": 1.5e12, \"flops\": {\"fp32\": 7e11}}}]}",
           p.name);
  char *path = write_temp(text);
  cr_assert_eq(xr_peaks_apply(path, d), XR_OK, "%s", xr_last_error());
  cr_assert_eq(xr_hal_device_properties(d, &p), XR_OK);
  cr_assert_eq(p.memory_bandwidth.value, 4.6e11);
  cr_assert_eq(p.memory_bandwidth.source, XR_HAL_FIGURE_DATASHEET);
  cr_assert_eq(p.peak_flops[XR_HAL_PEAK_BF16].value, 2e12);
  cr_assert_eq(p.measured.memory_bandwidth.value, 3.9e11);
  cr_assert_eq(p.measured.memory_working_set_bytes, 4000000000u);
  cr_assert_eq(p.measured.cache_bandwidth.value, 1.5e12);
  cr_assert_eq(p.measured.peak_flops[XR_HAL_PEAK_FP32].value, 7e11);
  /* Pinned: a calibration now measures nothing over them. */
  cr_assert_eq(xr_hal_device_calibrate(d), XR_OK);
  cr_assert_eq(xr_hal_device_properties(d, &p), XR_OK);
  cr_assert_eq(p.measured.memory_bandwidth.value, 3.9e11);
  xr_hal_device_destroy(d);
  unlink(path);
  free(path);
}

/* What devices --calibrate -o writes, read back by a later run: the same figures. */
Test(peaks, what_is_saved_is_what_is_read) {
  xr_hal_device_t *d = cpu();
  xr_hal_measured_t m = {.memory_bandwidth = fig(12.5e9, XR_HAL_FIGURE_CALIBRATED),
                         .memory_working_set_bytes = 1u << 30,
                         .cache_bandwidth = fig(40e9, XR_HAL_FIGURE_CALIBRATED),
                         .cache_working_set_bytes = 16u << 20};
  m.peak_flops[XR_HAL_PEAK_BF16] = fig(3.25e11, XR_HAL_FIGURE_CALIBRATED);
  /* The outermost level the machine reports (every machine here reports some), by its name. */
  xr_hal_device_properties_t p;
  cr_assert_eq(xr_hal_device_properties(d, &p), XR_OK);
  cr_assert_gt(p.cache_level_count, 0, "the cpu driver reports no cache levels");
  uint32_t level = p.cache_level_count - 1;
  m.cache_level_bandwidth[level] = fig(55e9, XR_HAL_FIGURE_CALIBRATED);
  m.cache_level_working_set_bytes[level] = 8u << 20;
  cr_assert_eq(xr_hal_device_set_measured(d, &m), XR_OK);
  cr_assert_eq(xr_hal_device_properties(d, &p), XR_OK);
  char path[] = "/tmp/xr_peaks_saved_XXXXXX";
  close(mkstemp(path));
  cr_assert_eq(xr_peaks_write(path, &p, 1), XR_OK, "%s", xr_last_error());
  xr_hal_device_destroy(d);
  d = cpu();
  cr_assert_eq(xr_peaks_apply(path, d), XR_OK, "%s", xr_last_error());
  xr_hal_device_properties_t q;
  cr_assert_eq(xr_hal_device_properties(d, &q), XR_OK);
  /* Field by field: the figures' padding is no part of them. */
  const xr_hal_measured_t *a = &q.measured, *e = &p.measured;
  cr_assert_eq(a->memory_bandwidth.value, e->memory_bandwidth.value);
  cr_assert_eq(a->memory_bandwidth.source, e->memory_bandwidth.source);
  cr_assert_eq(a->memory_working_set_bytes, e->memory_working_set_bytes);
  cr_assert_eq(a->cache_bandwidth.value, e->cache_bandwidth.value);
  cr_assert_eq(a->cache_working_set_bytes, e->cache_working_set_bytes);
  for (int k = 0; k < XR_HAL_MAX_CACHE_LEVELS; k++) {
    cr_assert_eq(a->cache_level_bandwidth[k].value, e->cache_level_bandwidth[k].value, "%d", k);
    cr_assert_eq(a->cache_level_bandwidth[k].source, e->cache_level_bandwidth[k].source, "%d", k);
    cr_assert_eq(a->cache_level_working_set_bytes[k], e->cache_level_working_set_bytes[k]);
  }
  cr_assert_eq(a->cache_level_bandwidth[level].value, 55e9);
  for (int k = 0; k < XR_HAL_PEAK_DTYPE_COUNT; k++) {
    cr_assert_eq(a->peak_flops[k].value, e->peak_flops[k].value, "dtype %d", k);
    cr_assert_eq(a->peak_flops[k].source, e->peak_flops[k].source, "dtype %d", k);
  }
  xr_hal_device_destroy(d);
  unlink(path);
}

/* Each problem names the file, the field and what is wrong. */
Test(peaks, a_bad_file_says_where_and_what) {
  xr_hal_device_t *d = cpu();
  static const struct {
    const char *text, *expect;
  } cases[] = {
      {"{\"devices\": [{\"hal\": \"cpu\", \"measured\": {\"memory_bandwidth\": -3}}]}",
       "devices[0].measured.memory_bandwidth: must be a positive number"},
      {"{\"devices\": [{\"hal\": \"cpu\", \"datasheet\": {\"flops\": {\"fp33\": 1e12}}}]}",
       "devices[0].datasheet.flops.fp33: unknown dtype"},
      {"{\"devices\": [{\"hal\": \"cpu\", \"name\": \"Some Other CPU\"}]}",
       "devices[0].name: the figures are for \"Some Other CPU\""},
      {"{\"devices\": [{\"hal\": \"cpu\", \"measured\": {\"cache_levels\": {\"L9\": 1e9}}}]}",
       "devices[0].measured.cache_levels.L9: the device has no such cache level"},
      {"{\"devices\": [{\"hal\": \"cpu\", \"measured\": {\"cache_levels\": 5}}]}",
       "devices[0].measured.cache_levels: must be an object"},
      {"{\"devices\": [{\"hal\": \"opencl:0\"}]}", "no entry for cpu"},
      {"{\"devices\": [{\"name\": \"x\"}]}", "devices[0].hal: missing"},
      {"{\"devices\": 3}", "devices: missing or not a list"},
      {"peaks", "not JSON"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *path = write_temp(cases[i].text);
    cr_assert_eq(xr_peaks_apply(path, d), XR_INVALID_ARGUMENT, "case %zu", i);
    cr_assert(strstr(xr_last_error(), path) && strstr(xr_last_error(), cases[i].expect),
              "case %zu: %s", i, xr_last_error());
    unlink(path);
    free(path);
  }
  xr_hal_device_destroy(d);
}

static void keep(void *c, const xr_op_result_t *r, size_t pos, size_t n) {
  (void)pos, (void)n;
  *(xr_op_result_t *)c = *r;
}

/* A replay with --peaks: the report's op says which figure its percentage is of. */
Test(peaks, a_run_takes_its_ceilings_from_the_file) {
  const char *json =
      "{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": \"aten::mm\", \"args\": ["
      "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": {\"shape\": [64, 64], \"dtype\": "
      "\"float\"}}, {\"name\": \"mat2\", \"type\": \"Tensor\", \"value\": {\"shape\": [64, 64], "
      "\"dtype\": \"float\"}}]}]}";
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "t.json", ".", NULL, &b),
               XR_OK, "%s", xr_last_error());
  /* 1 kFLOP/s and 1 kB/s: any rate is above them. */
  char *path = write_temp(
      "{\"devices\": [{\"hal\": \"cpu\", \"datasheet\": {\"memory_bandwidth\": 1e3, "
      "\"flops\": {\"fp64\": 1e3, \"fp32\": 1e3}}}]}");
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = "cpu";
  o.warmup = 0;
  o.iters = 2;
  o.peaks_file = path;
  xr_replay_summary_t run;
  struct {
    xr_op_result_t r;
  } seen = {0};
  xr_replay_observer_t observer = {.result = keep, .context = &seen};
  cr_assert_eq(xr_replay_run(b, &o, &observer, &run), XR_OK, "%s", xr_last_error());
  cr_assert_eq(run.devices[0].properties.memory_bandwidth.value, 1e3);
  cr_assert_eq(seen.r.outcome, XR_OP_SUCCEEDED, "%s", seen.r.message);
  cr_assert_gt(seen.r.peak_percent, 100);
  cr_assert(strstr(seen.r.peak_basis, "(datasheet)"), "%s", seen.r.peak_basis);
  cr_assert(strstr(seen.r.above_ceiling, "above the datasheet figure"), "%s",
            seen.r.above_ceiling);
  /* A file that does not fit the device stops the run before any op. */
  unlink(path);
  free(path);
  path = write_temp("{\"devices\": [{\"hal\": \"cpu\", \"name\": \"Some Other CPU\"}]}");
  o.peaks_file = path;
  cr_assert_eq(xr_replay_run(b, &o, &observer, NULL), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "Some Other CPU"), "%s", xr_last_error());
  unlink(path);
  free(path);
  xr_bundle_destroy(b);
}
