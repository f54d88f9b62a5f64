/* cuda driver: probe only in this version. It loads the CUDA driver API (libcuda.so.1) the way
 * the full driver will and reports what it finds; with a GPU present it still reports
 * UNIMPLEMENTED, so `replay devices` says honestly whether a GPU is there and that xreplay
 * cannot use it yet. The full driver adds symbols to cuda_symbols.h and a device vtable here. */
#include <stdio.h>

#include "hal/core/driver.h"
#include "hal/core/dynload.h"

/* Said with every UNAVAILABLE reason, so nobody installs a runtime expecting it to work. */
#define PROBE_ONLY_NOTE "the cuda driver itself is not yet implemented in this version of xreplay"

typedef struct cuda_symbols {
#define XR_CUDA_REQUIRED(ret, name, params) ret(*name) params;
#define XR_CUDA_OPTIONAL(ret, name, params) ret(*name) params;
#include "hal/drivers/cuda/cuda_symbols.h"
#undef XR_CUDA_REQUIRED
#undef XR_CUDA_OPTIONAL
} cuda_symbols_t;

static const xr_dynload_symbol_t cuda_symbol_list[] = {
#define XR_CUDA_REQUIRED(ret, name, params) {#name, offsetof(cuda_symbols_t, name), true},
#define XR_CUDA_OPTIONAL(ret, name, params) {#name, offsetof(cuda_symbols_t, name), false},
#include "hal/drivers/cuda/cuda_symbols.h"
#undef XR_CUDA_REQUIRED
#undef XR_CUDA_OPTIONAL
};

static xr_status_t cuda_probe(char *reason, size_t capacity, int *out_device_count) {
  static const char *const candidates[] = {"libcuda.so.1", "libcuda.so"};
  cuda_symbols_t cuda;
  xr_dynload_library_t library;
  *out_device_count = 0;
  xr_status_t status = xr_dynload_open_and_resolve(
      "XR_CUDA_LIBRARY", candidates, sizeof candidates / sizeof candidates[0], cuda_symbol_list,
      sizeof cuda_symbol_list / sizeof cuda_symbol_list[0], &cuda, &library, reason, capacity);
  if (status != XR_OK) {
    xr_dynload_report_append(reason, capacity, "%s", PROBE_ONLY_NOTE);
    return XR_UNAVAILABLE;
  }

  const char *call = "cuInit";
  int result = cuda.cuInit(0);
  int count = 0;
  if (result == 0) {
    call = "cuDeviceGetCount";
    result = cuda.cuDeviceGetCount(&count);
  }
  if (result == 0 && count == 0) result = 100; /* CUDA_ERROR_NO_DEVICE */
  if (result != 0) {
    const char *name = NULL;
    if (!cuda.cuGetErrorName || cuda.cuGetErrorName(result, &name) != 0) name = NULL;
    xr_dynload_report_append(reason, capacity, "%s: %s (%d)", call, name ? name : "CUDA error",
                             result);
    xr_dynload_report_append(reason, capacity, "%s", PROBE_ONLY_NOTE);
    xr_dynload_close(&library);
    return XR_UNAVAILABLE;
  }
  xr_dynload_report_append(reason, capacity,
                           "%d device%s found, but the cuda driver is not yet implemented in "
                           "this version of xreplay",
                           count, count == 1 ? "" : "s");
  xr_dynload_close(&library);
  return XR_UNIMPLEMENTED;
}

const xr_hal_driver_t xr_hal_cuda_driver = {
    .name = "cuda",
    .probe = cuda_probe,
};
