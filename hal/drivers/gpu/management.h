/* The vendors' management libraries, read for xr_hal_device_clocks: NVML for cuda (nvml.c),
 * AMD SMI for hip (amd_smi.c). Each is loaded with dlopen on first use, once per process, and
 * stays loaded; a device is found by its PCI bus id ("0000:65:00.0", as cuDeviceGetPCIBusId and
 * hipDeviceGetPCIBusId write it). Our own declarations of the vendors' entry points, so no
 * vendor header is needed to build (tests/gpu:management_test checks them against the
 * headers where those are installed). Internal to hal/; public in hal/BUILD for tests/gpu. */
#ifndef XR_HAL_DRIVERS_GPU_MANAGEMENT_H
#define XR_HAL_DRIVERS_GPU_MANAGEMENT_H

#include "hal/hal.h"

typedef struct xr_gpu_management {
  const char *label; /* "NVML", "AMD SMI" */
  /* Loads the library (first call only) and finds the device with `pci_bus_id`; *out_handle is
   * what read and close take. UNAVAILABLE with a sentence that starts with `spec` and names every
   * library path tried, or the vendor call that failed and its error. Thread-safe. */
  xr_status_t (*open)(const char *spec, const char *pci_bus_id, void **out_handle);
  /* Fills *out (zeroed by the caller) from the vendor's current readings. Thread-safe. */
  xr_status_t (*read)(const char *spec, void *handle, xr_hal_clocks_t *out);
  void (*close)(void *handle); /* accepts NULL */
} xr_gpu_management_t;

extern const xr_gpu_management_t xr_gpu_nvml;
extern const xr_gpu_management_t xr_gpu_amd_smi;

/* NVML's names for the return codes our sentences name, X(code, name). */
#define XR_NVML_ERRORS(X)                   \
  X(0, NVML_SUCCESS)                        \
  X(1, NVML_ERROR_UNINITIALIZED)            \
  X(2, NVML_ERROR_INVALID_ARGUMENT)         \
  X(3, NVML_ERROR_NOT_SUPPORTED)            \
  X(4, NVML_ERROR_NO_PERMISSION)            \
  X(6, NVML_ERROR_NOT_FOUND)                \
  X(9, NVML_ERROR_DRIVER_NOT_LOADED)        \
  X(12, NVML_ERROR_LIBRARY_NOT_FOUND)       \
  X(13, NVML_ERROR_FUNCTION_NOT_FOUND)      \
  X(15, NVML_ERROR_GPU_IS_LOST)             \
  X(18, NVML_ERROR_LIB_RM_VERSION_MISMATCH) \
  X(999, NVML_ERROR_UNKNOWN)

/* NVML's throttle (since R535: "clocks event") reason bits, in the words our sentences use,
 * X(bit, nvml.h name, words). */
#define XR_NVML_THROTTLE_REASONS(X)                                                          \
  X(0x1ull, nvmlClocksThrottleReasonGpuIdle, "idle")                                         \
  X(0x2ull, nvmlClocksThrottleReasonApplicationsClocksSetting, "application clocks setting") \
  X(0x4ull, nvmlClocksThrottleReasonSwPowerCap, "power cap")                                 \
  X(0x8ull, nvmlClocksThrottleReasonHwSlowdown, "hardware slowdown")                         \
  X(0x10ull, nvmlClocksThrottleReasonSyncBoost, "sync boost")                                \
  X(0x20ull, nvmlClocksThrottleReasonSwThermalSlowdown, "software thermal slowdown")         \
  X(0x40ull, nvmlClocksThrottleReasonHwThermalSlowdown, "hardware thermal slowdown")         \
  X(0x80ull, nvmlClocksThrottleReasonHwPowerBrakeSlowdown, "power brake")                    \
  X(0x100ull, nvmlClocksThrottleReasonDisplayClockSetting, "display clock setting")

/* nvmlClockType_t's NVML_CLOCK_SM; the NVML entry points we load, in the list style of
 * base/dynload.h (nvmlReturn_t is an int enum, nvmlDevice_t a pointer). */
enum { XR_NVML_CLOCK_SM = 1 };
#define XR_NVML_SYMBOLS(X)                                                                      \
  X(REQUIRED, int, nvmlInit_v2, (void))                                                         \
  X(REQUIRED, int, nvmlSystemGetDriverVersion, (char *version, unsigned int length))            \
  X(REQUIRED, int, nvmlDeviceGetHandleByPciBusId_v2, (const char *pci_bus_id, void **device))   \
  X(REQUIRED, int, nvmlDeviceGetClockInfo, (void *device, int type, unsigned int *mhz))         \
  X(REQUIRED, int, nvmlDeviceGetMaxClockInfo, (void *device, int type, unsigned int *mhz))      \
  X(OPTIONAL, int, nvmlDeviceGetDefaultApplicationsClock,                                       \
    (void *device, int type, unsigned int *mhz))                                                \
  X(OPTIONAL, int, nvmlDeviceGetApplicationsClock, (void *device, int type, unsigned int *mhz)) \
  X(OPTIONAL, int, nvmlDeviceGetCurrentClocksEventReasons,                                      \
    (void *device, unsigned long long *reasons))                                                \
  X(OPTIONAL, int, nvmlDeviceGetCurrentClocksThrottleReasons,                                   \
    (void *device, unsigned long long *reasons))                                                \
  X(OPTIONAL, const char *, nvmlErrorString, (int result))

/* AMD SMI: amdsmi_init's AMDSMI_INIT_AMD_GPUS, amdsmi_clk_type_t's AMDSMI_CLK_TYPE_GFX, and
 * amdsmi_dev_perf_level_t's values (AUTO follows the load; every other level pins the clocks
 * or holds them at a fixed point). */
enum {
  XR_AMDSMI_INIT_AMD_GPUS = 1 << 1,
  XR_AMDSMI_CLK_TYPE_GFX = 0,
};
#define XR_AMDSMI_PERF_LEVELS(X)                                 \
  X(0, AMDSMI_DEV_PERF_LEVEL_AUTO, "auto")                       \
  X(1, AMDSMI_DEV_PERF_LEVEL_LOW, "low")                         \
  X(2, AMDSMI_DEV_PERF_LEVEL_HIGH, "high")                       \
  X(3, AMDSMI_DEV_PERF_LEVEL_MANUAL, "manual")                   \
  X(4, AMDSMI_DEV_PERF_LEVEL_STABLE_STD, "stable_std")           \
  X(5, AMDSMI_DEV_PERF_LEVEL_STABLE_PEAK, "stable_peak")         \
  X(6, AMDSMI_DEV_PERF_LEVEL_STABLE_MIN_MCLK, "stable_min_mclk") \
  X(7, AMDSMI_DEV_PERF_LEVEL_STABLE_MIN_SCLK, "stable_min_sclk") \
  X(8, AMDSMI_DEV_PERF_LEVEL_DETERMINISM, "determinism")

/* The leading fields of amdsmi_clk_info_t, the same in every ROCm 6 and 7 release (later fields
 * were renamed and retyped: cur_clk became clk, sleep_clk clk_deep_sleep); the library writes
 * the whole struct, 32 bytes, so callers pass a larger buffer. */
typedef struct xr_amdsmi_clk_info {
  uint32_t clk, min_clk, max_clk; /* MHz */
  uint32_t rest[13];              /* room for the fields we do not read, and to spare */
} xr_amdsmi_clk_info_t;

/* amdsmi_bdf_t as the library's uint64_t: function in bits 0-2, device 3-7, bus 8-15, domain
 * 16-63. Handles are pointers, amdsmi_status_t an int enum. */
#define XR_AMDSMI_SYMBOLS(X)                                                                       \
  X(REQUIRED, int, amdsmi_init, (uint64_t flags))                                                  \
  X(REQUIRED, int, amdsmi_get_socket_handles, (uint32_t * count, void **sockets))                  \
  X(REQUIRED, int, amdsmi_get_processor_handles,                                                   \
    (void *socket, uint32_t *count, void **processors))                                            \
  X(REQUIRED, int, amdsmi_get_gpu_device_bdf, (void *processor, uint64_t *bdf))                    \
  X(REQUIRED, int, amdsmi_get_clock_info, (void *processor, int type, xr_amdsmi_clk_info_t *info)) \
  X(OPTIONAL, int, amdsmi_get_gpu_perf_level, (void *processor, int *level))                       \
  X(OPTIONAL, int, amdsmi_status_code_to_string, (int status, const char **text))

#endif /* XR_HAL_DRIVERS_GPU_MANAGEMENT_H */
