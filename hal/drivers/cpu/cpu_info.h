/* What the cpu driver knows about the host: from /proc/cpuinfo, /sys and sysconf. */
#ifndef XR_HAL_DRIVERS_CPU_CPU_INFO_H
#define XR_HAL_DRIVERS_CPU_CPU_INFO_H

#include "hal/hal.h"

typedef struct xr_cpu_info {
  char model_name[256];
  char vendor[128];
  char kernel_release[128];
  char libc_version[64];
  unsigned cores;               /* CPUs this process may run on */
  unsigned clock_mhz;           /* max frequency from cpufreq, else /proc/cpuinfo "cpu MHz" */
  unsigned fp32_lanes;          /* widest fp32 SIMD: 16 (AVX-512), 8 (AVX), 4 (SSE) */
  bool has_fma, has_avx512f, has_avx512_bf16, has_avx512_fp16, has_amx_bf16, has_amx_fp16;
  uint64_t physical_memory_bytes;
  uint64_t last_level_cache_bytes;
  uint64_t cache_total_bytes; /* every data cache of the machine together */
  xr_hal_cache_level_t cache_levels[XR_HAL_MAX_CACHE_LEVELS]; /* innermost first */
  uint32_t cache_level_count;
} xr_cpu_info_t;

/* Reads everything once; missing files leave fields at 0 / "". Never fails. */
void xr_cpu_info_read(xr_cpu_info_t *out);

/* Peak FLOP/s per dtype estimated from the ISA flags: cores x clock x flops/cycle, assuming two
 * FMA pipes per core as on server parts. UNKNOWN where the ISA has no native support. */
void xr_cpu_info_peak_flops(const xr_cpu_info_t *info,
                            xr_hal_figure_t out_peak[XR_HAL_PEAK_DTYPE_COUNT]);

#endif
