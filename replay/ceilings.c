/* An op's rates and where they stand: the ceiling that bounds it, the percentage of it, and
 * why a rate above its ceiling is (replay/internal.h, xr_derive_rates). */
#include <stdio.h>
#include <string.h>

#include "replay/internal.h"

/* Which ceiling a rate came out above, by its source, and the likely reason. */
static void above_ceiling(const xr_hal_figure_t *ceiling, const char *reason, xr_op_result_t *r) {
  const char *figure = ceiling->source == XR_HAL_FIGURE_CALIBRATED
                           ? "the measured ceiling"
                           : ceiling->source == XR_HAL_FIGURE_ESTIMATED ? "an estimated ceiling"
                                                                         : "the datasheet figure";
  snprintf(r->above_ceiling, sizeof r->above_ceiling, "above %s: %s", figure, reason);
}

/* Rates at the median time, the op's bound and the percentage of the ceiling that bounds it,
 * with the ceilings hal.h names (the higher of the stated and the measured figure), which the
 * page's roofline draws too: the compute peak of the op's dtype above the ridge point, else memory
 * bandwidth — DRAM's, unless the bytes the op touches (`touched`, every rotation copy) stay in
 * the caches between iterations (not `flushed`): then the innermost cache level's that holds them
 * and was measured (the last level's figure for bytes beyond every level measured), else none,
 * and peak_basis says why. A rate above its ceiling keeps its percentage
 * and above_ceiling names the ceiling and the likely reason. */
void xr_derive_rates(const xr_hal_device_properties_t *props, double flops, double bytes,
                     double touched, bool flushed, xr_op_result_t *r) {
  if (r->median_us <= 0) return;
  r->tflops = flops / (r->median_us * 1e-6) / 1e12;
  r->gbps = bytes / (r->median_us * 1e-6) / 1e9;
  xr_hal_peak_dtype_t from;
  xr_hal_figure_t peak = xr_hal_flops_ceiling(props, r->peak_dtype, &from);
  xr_hal_figure_t bw = xr_hal_bandwidth_ceiling(props);
  bool peak_known = peak.value > 0, bw_known = bw.value > 0;
  if (flops <= 0)
    r->bound = bytes > 0 ? "memory" : "unknown";
  else if (peak_known && bw_known && bytes > 0)
    r->bound = flops / bytes > peak.value / bw.value ? "compute" : "memory";
  else
    r->bound = "unknown";
  const char *dtype = xr_hal_peak_dtype_name(r->peak_dtype);
  if (flops > 0 && peak_known && strcmp(r->bound, "memory")) {
    r->peak_percent = 100.0 * r->tflops * 1e12 / peak.value;
    if (from == r->peak_dtype)
      snprintf(r->peak_basis, sizeof r->peak_basis, "%s peak (%s)", dtype,
               xr_hal_figure_source_name(peak.source));
    else /* a wider dtype's figure is higher than any of its own */
      snprintf(r->peak_basis, sizeof r->peak_basis, "%s peak (%s), above any %s figure",
               xr_hal_peak_dtype_name(from), xr_hal_figure_source_name(peak.source), dtype);
    if (r->peak_percent > 100)
      above_ceiling(&peak,
                    "a clock above the one the peak assumes, or a peak measured with a slower "
                    "kernel",
                    r);
    return;
  }
  uint64_t cache = props->cache_total_bytes
                       ? props->cache_total_bytes
                       : props->last_level_cache_bytes + props->memory_side_cache_bytes;
  /* The innermost measured level that holds what the op touches, else the last level's. */
  const xr_hal_figure_t *cache_bw = &props->measured.cache_bandwidth;
  const char *level = "last-level";
  for (uint32_t i = 0; i < props->cache_level_count && i < XR_HAL_MAX_CACHE_LEVELS; i++) {
    if (touched > props->cache_levels[i].total_bytes ||
        props->measured.cache_level_bandwidth[i].value <= 0)
      continue;
    cache_bw = &props->measured.cache_level_bandwidth[i];
    level = props->cache_levels[i].name;
    break;
  }
  if (!bw_known) {
    snprintf(r->peak_basis, sizeof r->peak_basis,
             "none: the device's memory bandwidth is unknown (measure it: --calibrate)");
  } else if (!flushed && touched <= cache && cache_bw->value > 0) {
    r->peak_percent = 100.0 * r->gbps * 1e9 / cache_bw->value;
    snprintf(r->peak_basis, sizeof r->peak_basis, "%s cache bandwidth (%s)", level,
             xr_hal_figure_source_name(cache_bw->source));
    if (r->peak_percent > 100) {
      char reason[128];
      snprintf(reason, sizeof reason,
               "its %.2f MiB fit in a cache nearer than the %s, or its kernel used more cores "
               "than the copy that measured it",
               touched / 1048576.0, level);
      above_ceiling(cache_bw, reason, r);
    }
  } else if (!flushed && touched <= cache) {
    snprintf(r->peak_basis, sizeof r->peak_basis,
             "none: its %.1f MiB stay in the %.0f MiB of cache, whose bandwidth is unknown "
             "(--calibrate)",
             touched / 1048576.0, cache / 1048576.0);
  } else {
    r->peak_percent = 100.0 * r->gbps * 1e9 / bw.value;
    snprintf(r->peak_basis, sizeof r->peak_basis, "DRAM bandwidth (%s)",
             xr_hal_figure_source_name(bw.source));
    if (r->peak_percent > 100)
      above_ceiling(&bw, "part of its data was likely still cached from the previous iteration",
                    r);
  }
}
