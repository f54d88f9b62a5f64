/* hip driver: probe only in this version. It loads the HIP runtime (libamdhip64.so.6, .so.5) the
 * way the full driver will and reports what it finds; with a GPU present it still reports
 * UNIMPLEMENTED, so `replay devices` says honestly whether a GPU is there and that xreplay
 * cannot use it yet. The full driver adds symbols to hip_symbols.h and a device vtable here. */
#include <stdio.h>

#include "hal/core/driver.h"
#include "hal/core/dynload.h"

/* Said with every UNAVAILABLE reason, so nobody installs a runtime expecting it to work. */
#define PROBE_ONLY_NOTE "the hip driver itself is not yet implemented in this version of xreplay"

typedef struct hip_symbols {
#define XR_HIP_REQUIRED(ret, name, params) ret(*name) params;
#define XR_HIP_OPTIONAL(ret, name, params) ret(*name) params;
#include "hal/drivers/hip/hip_symbols.h"
#undef XR_HIP_REQUIRED
#undef XR_HIP_OPTIONAL
} hip_symbols_t;

static const xr_dynload_symbol_t hip_symbol_list[] = {
#define XR_HIP_REQUIRED(ret, name, params) {#name, offsetof(hip_symbols_t, name), true},
#define XR_HIP_OPTIONAL(ret, name, params) {#name, offsetof(hip_symbols_t, name), false},
#include "hal/drivers/hip/hip_symbols.h"
#undef XR_HIP_REQUIRED
#undef XR_HIP_OPTIONAL
};

static xr_status_t hip_probe(char *reason, size_t capacity, int *out_device_count) {
  static const char *const candidates[] = {"libamdhip64.so.6", "libamdhip64.so.5",
                                            "libamdhip64.so"};
  hip_symbols_t hip;
  xr_dynload_library_t library;
  *out_device_count = 0;
  xr_status_t status = xr_dynload_open_and_resolve(
      "XR_HIP_LIBRARY", candidates, sizeof candidates / sizeof candidates[0], hip_symbol_list,
      sizeof hip_symbol_list / sizeof hip_symbol_list[0], &hip, &library, reason, capacity);
  if (status != XR_OK) {
    xr_dynload_report_append(reason, capacity, "%s", PROBE_ONLY_NOTE);
    return XR_UNAVAILABLE;
  }

  int count = 0;
  int result = hip.hipGetDeviceCount(&count);
  if (result == 0 && count == 0) result = 100; /* hipErrorNoDevice */
  if (result != 0) {
    const char *name = hip.hipGetErrorName ? hip.hipGetErrorName(result) : NULL;
    xr_dynload_report_append(reason, capacity, "hipGetDeviceCount: %s (%d)",
                             name ? name : "HIP error", result);
    xr_dynload_report_append(reason, capacity, "%s", PROBE_ONLY_NOTE);
    xr_dynload_close(&library);
    return XR_UNAVAILABLE;
  }
  xr_dynload_report_append(reason, capacity,
                           "%d device%s found, but the hip driver is not yet implemented in "
                           "this version of xreplay",
                           count, count == 1 ? "" : "s");
  xr_dynload_close(&library);
  return XR_UNIMPLEMENTED;
}

const xr_hal_driver_t xr_hal_hip_driver = {
    .name = "hip",
    .probe = hip_probe,
};
