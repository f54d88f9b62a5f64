#include "hal/core/datasheet.h"

#include <stdio.h>
#include <string.h>

typedef struct datasheet_entry {
  const char *pattern;                        /* substring of the reported device name */
  double tflops[XR_HAL_PEAK_DTYPE_COUNT];     /* fp64, fp32, fp16, bf16, fp8; 0 = none */
  double memory_tb_per_s;
  double memory_side_cache_mb; /* AMD Infinity Cache; 0 = none */
} datasheet_entry_t;

/* Vendor datasheets: NVIDIA B200 (HGX, 1000 W), H100/H200 SXM and A100 SXM4, AMD Instinct
 * MI325X, MI300X (both with 256 MB of Infinity Cache) and MI250X (none). */
static const datasheet_entry_t entries[] = {
    {"B200", {40.0, 80.0, 2250.0, 2250.0, 4500.0}, 8.0, 0},
    {"H200", {34.0, 67.0, 989.4, 989.4, 1978.9}, 4.8, 0},
    {"H100 80GB HBM3", {34.0, 67.0, 989.4, 989.4, 1978.9}, 3.35, 0},
    {"A100-SXM4-80GB", {9.7, 19.5, 312.0, 312.0, 0}, 2.039, 0},
    {"MI325X", {81.7, 163.4, 1307.4, 1307.4, 2614.9}, 6.0, 256},
    {"MI300X", {81.7, 163.4, 1307.4, 1307.4, 2614.9}, 5.3, 256},
    {"MI250X", {47.9, 47.9, 383.0, 383.0, 0}, 3.2768, 0},
};

bool xr_datasheet_lookup(const char *device_name, xr_hal_device_properties_t *out) {
  if (!device_name) return false;
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
    if (!strstr(device_name, entries[i].pattern)) continue;
    for (int d = 0; d < XR_HAL_PEAK_DTYPE_COUNT; d++) {
      if (entries[i].tflops[d] > 0) {
        out->peak_flops[d] = (xr_hal_figure_t){.value = entries[i].tflops[d] * 1e12,
                                               .source = XR_HAL_FIGURE_DATASHEET};
      }
    }
    out->memory_bandwidth = (xr_hal_figure_t){.value = entries[i].memory_tb_per_s * 1e12,
                                              .source = XR_HAL_FIGURE_DATASHEET};
    out->memory_side_cache_bytes = (uint64_t)(entries[i].memory_side_cache_mb * (1 << 20));
    return true;
  }
  return false;
}

static void add_level(xr_hal_device_properties_t *p, const char *name, uint64_t bytes) {
  if (!bytes || p->cache_level_count == XR_HAL_MAX_CACHE_LEVELS) return;
  xr_hal_cache_level_t *c = &p->cache_levels[p->cache_level_count++];
  snprintf(c->name, sizeof c->name, "%s", name);
  c->bytes = c->total_bytes = bytes;
  p->cache_total_bytes += bytes;
}

void xr_datasheet_cache_levels(xr_hal_device_properties_t *p, const char *name) {
  p->cache_level_count = 0;
  p->cache_total_bytes = 0;
  add_level(p, name, p->last_level_cache_bytes);
  add_level(p, "MALL", p->memory_side_cache_bytes);
}
