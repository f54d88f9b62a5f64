/* Clocks of NVIDIA GPUs through NVML (libnvidia-ml.so.1, installed with the driver), for the
 * cuda driver (management.h). NVML is thread-safe, so reads need no lock of ours.
 *
 * What the fields mean: current_mhz is the SM clock now (nvmlDeviceGetClockInfo), max_mhz the
 * SM clock's maximum (nvmlDeviceGetMaxClockInfo), default_mhz the default application clock
 * (nvmlDeviceGetDefaultApplicationsClock; 0 where the part has no application clocks). locked
 * is true when the application clock target differs from that default (nvidia-smi -ac).
 * NVML has no getter for locked GPU clocks (nvidia-smi -lgc), so those are not reported as
 * locked (the current clock staying at one value under load is the sign). Throttle reasons come
 * from nvmlDeviceGetCurrentClocksEventReasons (R535+), else
 * nvmlDeviceGetCurrentClocksThrottleReasons. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynload.h"
#include "base/vendor_libraries.h"
#include "hal/core/driver.h"
#include "hal/drivers/gpu/management.h"

typedef struct nvml_api {
  XR_NVML_SYMBOLS(XR_DYNLOAD_FIELD)
} nvml_api_t;

#define NVML_SYMBOL(need, ret, field, params) XR_DYNLOAD_SYMBOL(nvml_api_t, need, field, field)
static const xr_dynload_symbol_t nvml_symbols[] = {XR_NVML_SYMBOLS(NVML_SYMBOL)};


/* Written once under `loaded`, read-only afterwards. */
static pthread_once_t loaded = PTHREAD_ONCE_INIT;
static nvml_api_t nvml;
static xr_dynload_library_t library;
static xr_status_t load_status;
static char load_report[XR_HAL_REASON_CAPACITY];
static char source[64]; /* "NVML 550.54.15" */

static const char *nvml_error_name(int code) {
#define NVML_ERROR_CASE(value, name) \
  case value: return #name;
  switch (code) { XR_NVML_ERRORS(NVML_ERROR_CASE) }
#undef NVML_ERROR_CASE
  const char *text = nvml.nvmlErrorString ? nvml.nvmlErrorString(code) : NULL;
  return text ? text : "NVML error";
}

static void load(void) {
  load_status =
      xr_dynload_open(&xr_vendor_libraries[XR_VENDOR_LIBRARY_NVML], nvml_symbols, sizeof nvml_symbols / sizeof nvml_symbols[0],
                      &nvml, &library, load_report, sizeof load_report);
  if (load_status != XR_OK) return;
  int result = nvml.nvmlInit_v2();
  if (result != 0) {
    xr_dynload_report_append(load_report, sizeof load_report, "nvmlInit_v2: %s (%d)",
                             nvml_error_name(result), result);
    xr_dynload_close(&library);
    memset(&nvml, 0, sizeof nvml);
    load_status = XR_UNAVAILABLE;
    return;
  }
  char version[96] = "";
  if (nvml.nvmlSystemGetDriverVersion(version, sizeof version) != 0) version[0] = '\0';
  snprintf(source, sizeof source, "NVML %.50s", version[0] ? version : "(driver version unknown)");
}

typedef struct nvml_device {
  void *device;                      /* nvmlDevice_t */
  unsigned int default_mhz, max_mhz; /* fixed for the part: read once */
} nvml_device_t;

static xr_status_t nvml_open(const char *spec, const char *pci_bus_id, void **out_handle) {
  pthread_once(&loaded, load);
  if (load_status != XR_OK) {
    return xr_error(XR_UNAVAILABLE, "%s: clocks: NVML unavailable: %s", spec, load_report);
  }
  nvml_device_t *handle = calloc(1, sizeof *handle);
  if (!handle) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", spec);
  int result = nvml.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id, &handle->device);
  if (result != 0) {
    free(handle);
    return xr_error(XR_UNAVAILABLE, "%s: clocks: nvmlDeviceGetHandleByPciBusId_v2(\"%s\"): %s (%d)",
                    spec, pci_bus_id, nvml_error_name(result), result);
  }
  if (nvml.nvmlDeviceGetMaxClockInfo(handle->device, XR_NVML_CLOCK_SM, &handle->max_mhz) != 0) {
    handle->max_mhz = 0;
  }
  /* NOT_SUPPORTED on parts without application clocks: default stays unknown (0). */
  if (!nvml.nvmlDeviceGetDefaultApplicationsClock ||
      nvml.nvmlDeviceGetDefaultApplicationsClock(handle->device, XR_NVML_CLOCK_SM,
                                                 &handle->default_mhz) != 0) {
    handle->default_mhz = 0;
  }
  *out_handle = handle;
  return XR_OK;
}

/* "power cap, hardware thermal slowdown" from the reason bits; unnamed bits as hex. */
static void describe_reasons(unsigned long long reasons, char *out, size_t capacity) {
  out[0] = '\0';
  size_t length = 0;
#define NVML_REASON_WORDS(bit, name, words)                                                   \
  if ((reasons & (bit)) && length < capacity) {                                               \
    length +=                                                                                 \
        (size_t)snprintf(out + length, capacity - length, "%s%s", length ? ", " : "", words); \
    reasons &= ~(bit);                                                                        \
  }
  XR_NVML_THROTTLE_REASONS(NVML_REASON_WORDS)
#undef NVML_REASON_WORDS
  if (reasons && length < capacity) {
    snprintf(out + length, capacity - length, "%sother (0x%llx)", length ? ", " : "", reasons);
  }
}

static xr_status_t nvml_read(const char *spec, void *opaque, xr_hal_clocks_t *out) {
  const nvml_device_t *handle = opaque;
  unsigned int current = 0;
  int result = nvml.nvmlDeviceGetClockInfo(handle->device, XR_NVML_CLOCK_SM, &current);
  if (result != 0) {
    return xr_error(XR_DEVICE_ERROR, "%s: clocks: nvmlDeviceGetClockInfo(NVML_CLOCK_SM): %s (%d)",
                    spec, nvml_error_name(result), result);
  }
  out->current_mhz = current;
  out->default_mhz = handle->default_mhz;
  out->max_mhz = handle->max_mhz;
  unsigned int target = 0;
  out->locked =
      handle->default_mhz && nvml.nvmlDeviceGetApplicationsClock &&
      nvml.nvmlDeviceGetApplicationsClock(handle->device, XR_NVML_CLOCK_SM, &target) == 0 &&
      target != handle->default_mhz;
  int (*reasons_call)(void *, unsigned long long *) =
      nvml.nvmlDeviceGetCurrentClocksEventReasons ? nvml.nvmlDeviceGetCurrentClocksEventReasons
                                                  : nvml.nvmlDeviceGetCurrentClocksThrottleReasons;
  unsigned long long reasons = 0;
  if (reasons_call && reasons_call(handle->device, &reasons) == 0) {
    out->throttle_known = true;
    out->throttle_reasons = reasons;
    describe_reasons(reasons, out->throttle, sizeof out->throttle);
  }
  xr_hal_copy_string(out->source, sizeof out->source, source);
  return XR_OK;
}

static void nvml_close(void *handle) {
  free(handle);
}

const xr_gpu_management_t xr_gpu_nvml = {
    .label = "NVML", .open = nvml_open, .read = nvml_read, .close = nvml_close};
