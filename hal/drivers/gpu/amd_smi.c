/* Clocks of AMD GPUs through AMD SMI (libamd_smi.so, ROCm 6+), for the hip driver
 * (management.h). Calls are serialised under one lock: the library's thread-safety is not
 * documented for every release.
 *
 * What the fields mean: current_mhz is the graphics clock now, max_mhz its top DPM level
 * (amdsmi_get_clock_info(AMDSMI_CLK_TYPE_GFX): clk, max_clk), default_mhz the same top level
 * (AMD has no separate default clock). locked is true for every performance level but "auto"
 * (manual, high, low, the stable_* profiling levels, determinism): each holds the clock at a
 * chosen point instead of following the load. AMD SMI's throttle status sits in a metrics
 * struct whose layout changes between releases, so throttling is not read (throttle_known
 * stays false). The source names the performance level ("AMD SMI, perf level stable_peak"). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynload.h"
#include "base/vendor_libraries.h"
#include "hal/core/driver.h"
#include "hal/drivers/gpu/management.h"

typedef struct amd_smi_api {
  XR_AMDSMI_SYMBOLS(XR_DYNLOAD_FIELD)
} amd_smi_api_t;

#define AMDSMI_SYMBOL(need, ret, field, params) XR_DYNLOAD_SYMBOL(amd_smi_api_t, need, field, field)
static const xr_dynload_symbol_t amd_smi_symbols[] = {XR_AMDSMI_SYMBOLS(AMDSMI_SYMBOL)};


static pthread_once_t loaded = PTHREAD_ONCE_INIT;
static pthread_mutex_t calls = PTHREAD_MUTEX_INITIALIZER;
static amd_smi_api_t smi;
static xr_dynload_library_t library;
static xr_status_t load_status;
static char load_report[XR_HAL_REASON_CAPACITY];

enum { AMDSMI_SUCCESS = 0 };

static const char *amd_smi_error_name(int code) {
  const char *text = NULL;
  if (smi.amdsmi_status_code_to_string && smi.amdsmi_status_code_to_string(code, &text) == 0 &&
      text) {
    return text;
  }
  switch (code) {
    case 1: return "AMDSMI_STATUS_INVAL";
    case 2: return "AMDSMI_STATUS_NOT_SUPPORTED";
    case 3: return "AMDSMI_STATUS_NOT_YET_IMPLEMENTED";
    default: return "AMD SMI error";
  }
}

static void load(void) {
  load_status = xr_dynload_open(&xr_vendor_libraries[XR_VENDOR_LIBRARY_AMD_SMI], amd_smi_symbols,
                                sizeof amd_smi_symbols / sizeof amd_smi_symbols[0], &smi, &library,
                                load_report, sizeof load_report);
  if (load_status != XR_OK) return;
  int result = smi.amdsmi_init(XR_AMDSMI_INIT_AMD_GPUS);
  if (result != AMDSMI_SUCCESS) {
    xr_dynload_report_append(load_report, sizeof load_report, "amdsmi_init: %s (%d)",
                             amd_smi_error_name(result), result);
    xr_dynload_close(&library);
    memset(&smi, 0, sizeof smi);
    load_status = XR_UNAVAILABLE;
  }
}

/* "0000:c1:00.0" as amdsmi_bdf_t's uint64_t; false when it does not parse. */
static bool parse_bdf(const char *text, uint64_t *out) {
  unsigned int domain = 0, bus = 0, device = 0, function = 0;
  if (sscanf(text, "%x:%x:%x.%x", &domain, &bus, &device, &function) != 4) return false;
  *out = (uint64_t)(function & 0x7) | (uint64_t)(device & 0x1f) << 3 | (uint64_t)(bus & 0xff) << 8 |
         (uint64_t)domain << 16;
  return true;
}

/* The processor whose BDF is `wanted` among every socket's; NULL with *out_result set when a
 * listing call fails. Under `calls`. */
static void *find_processor(uint64_t wanted, int *out_result, const char **out_call) {
  uint32_t socket_count = 0;
  *out_call = "amdsmi_get_socket_handles";
  if ((*out_result = smi.amdsmi_get_socket_handles(&socket_count, NULL)) != AMDSMI_SUCCESS) {
    return NULL;
  }
  void *sockets[64];
  if (socket_count > 64) socket_count = 64;
  if ((*out_result = smi.amdsmi_get_socket_handles(&socket_count, sockets)) != AMDSMI_SUCCESS) {
    return NULL;
  }
  *out_call = "amdsmi_get_processor_handles";
  for (uint32_t s = 0; s < socket_count; s++) {
    void *processors[64];
    uint32_t count = 64;
    if ((*out_result = smi.amdsmi_get_processor_handles(sockets[s], &count, processors)) !=
        AMDSMI_SUCCESS) {
      return NULL;
    }
    for (uint32_t p = 0; p < count && p < 64; p++) {
      uint64_t bdf = 0;
      if (smi.amdsmi_get_gpu_device_bdf(processors[p], &bdf) == AMDSMI_SUCCESS && bdf == wanted) {
        return processors[p];
      }
    }
  }
  *out_result = AMDSMI_SUCCESS;
  return NULL;
}

static xr_status_t amd_smi_open(const char *spec, const char *pci_bus_id, void **out_handle) {
  pthread_once(&loaded, load);
  if (load_status != XR_OK) {
    return xr_error(XR_UNAVAILABLE, "%s: clocks: AMD SMI unavailable: %s", spec, load_report);
  }
  uint64_t wanted = 0;
  if (!parse_bdf(pci_bus_id, &wanted)) {
    return xr_error(XR_UNAVAILABLE,
                    "%s: clocks: PCI bus id \"%s\" is not domain:bus:device.function", spec,
                    pci_bus_id);
  }
  int result = AMDSMI_SUCCESS;
  const char *call = "";
  pthread_mutex_lock(&calls);
  void *processor = find_processor(wanted, &result, &call);
  pthread_mutex_unlock(&calls);
  if (result != AMDSMI_SUCCESS) {
    return xr_error(XR_UNAVAILABLE, "%s: clocks: %s: %s (%d)", spec, call,
                    amd_smi_error_name(result), result);
  }
  if (!processor) {
    return xr_error(XR_UNAVAILABLE, "%s: clocks: AMD SMI lists no GPU at PCI bus id %s", spec,
                    pci_bus_id);
  }
  *out_handle = processor; /* owned by the library */
  return XR_OK;
}

static const char *perf_level_name(int level) {
#define PERF_LEVEL_CASE(value, name, words) \
  case value: return words;
  switch (level) { XR_AMDSMI_PERF_LEVELS(PERF_LEVEL_CASE) }
#undef PERF_LEVEL_CASE
  return NULL;
}

static xr_status_t amd_smi_read(const char *spec, void *processor, xr_hal_clocks_t *out) {
  xr_amdsmi_clk_info_t info;
  memset(&info, 0, sizeof info);
  int level = -1;
  pthread_mutex_lock(&calls);
  int result = smi.amdsmi_get_clock_info(processor, XR_AMDSMI_CLK_TYPE_GFX, &info);
  if (result == AMDSMI_SUCCESS && smi.amdsmi_get_gpu_perf_level &&
      smi.amdsmi_get_gpu_perf_level(processor, &level) != AMDSMI_SUCCESS) {
    level = -1;
  }
  pthread_mutex_unlock(&calls);
  if (result != AMDSMI_SUCCESS) {
    return xr_error(XR_DEVICE_ERROR,
                    "%s: clocks: amdsmi_get_clock_info(AMDSMI_CLK_TYPE_GFX): %s (%d)", spec,
                    amd_smi_error_name(result), result);
  }
  out->current_mhz = info.clk;
  out->max_mhz = info.max_clk;
  out->default_mhz = info.max_clk;
  const char *level_name = perf_level_name(level);
  out->locked = level_name && level != 0;
  snprintf(out->source, sizeof out->source, "AMD SMI, perf level %s",
           level_name ? level_name : "unknown");
  return XR_OK;
}

static void amd_smi_close(void *handle) {
  (void)handle;
}

const xr_gpu_management_t xr_gpu_amd_smi = {
    .label = "AMD SMI", .open = amd_smi_open, .read = amd_smi_read, .close = amd_smi_close};
