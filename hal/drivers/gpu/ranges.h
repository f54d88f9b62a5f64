/* Profiler ranges for xr_hal_device_range_push / _pop: NVTX for cuda (libnvToolsExt.so.1, which
 * Nsight Systems reads), roctx for hip (libroctx64.so.4, which rocprof reads). Each is loaded
 * with dlopen on first use, once per process, and stays loaded; it is optional: without it a
 * device pushes no ranges and says why. Internal to hal/; public in hal/BUILD for tests/gpu,
 * which checks the loading without a GPU. */
#ifndef XR_HAL_DRIVERS_GPU_RANGES_H
#define XR_HAL_DRIVERS_GPU_RANGES_H

#include <stddef.h>

#include "base/status.h"

/* The two entry points, in the two-vendor list style of base/dynload.h. Both return the
 * range's nesting level, or a negative value when no tool is attached: not an error. */
#define XR_GPU_RANGE_SYMBOLS(X)                                                    \
  X(REQUIRED, int, push, (const char *message), nvtxRangePushA, roctxRangePushA) \
  X(REQUIRED, int, pop, (void), nvtxRangePop, roctxRangePop)

typedef struct xr_gpu_ranges {
  const char *label; /* "NVTX", "roctx" */
  /* Loads the library (first call only). OK with "NVTX: <the file that loaded>" in `source`;
   * UNAVAILABLE with "<spec>: ranges: NVTX unavailable: <every path tried>" as the sentence and
   * in `source` (may be NULL). Thread-safe. */
  xr_status_t (*open)(const char *spec, char *source, size_t capacity);
  /* Only after open said OK. Thread-safe; ranges belong to the calling thread. */
  void (*push)(const char *name);
  void (*pop)(void);
} xr_gpu_ranges_t;

extern const xr_gpu_ranges_t xr_gpu_nvtx;
extern const xr_gpu_ranges_t xr_gpu_roctx;

#endif /* XR_HAL_DRIVERS_GPU_RANGES_H */
