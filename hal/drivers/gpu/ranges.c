/* NVTX and roctx ranges (ranges.h): one loader over both vendors' lists, each library loaded
 * once per process under its own pthread_once, read-only afterwards. */
#include "hal/drivers/gpu/ranges.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/dynload.h"
#include "base/vendor_libraries.h"
#include "hal/core/driver.h"

typedef struct range_api {
  XR_GPU_RANGE_SYMBOLS(XR_DYNLOAD_FIELD)
} range_api_t;

#define NVTX_SYMBOL(need, ret, field, params, cuda, hip) \
  XR_DYNLOAD_SYMBOL(range_api_t, need, field, cuda)
#define ROCTX_SYMBOL(need, ret, field, params, cuda, hip) \
  XR_DYNLOAD_SYMBOL(range_api_t, need, field, hip)
static const xr_dynload_symbol_t nvtx_symbols[] = {XR_GPU_RANGE_SYMBOLS(NVTX_SYMBOL)};
static const xr_dynload_symbol_t roctx_symbols[] = {XR_GPU_RANGE_SYMBOLS(ROCTX_SYMBOL)};

/* One vendor's library: written once under `once`, read-only afterwards. */
typedef struct range_library {
  pthread_once_t once;
  xr_vendor_library_id_t id;
  const xr_dynload_symbol_t *symbols;
  size_t symbol_count;
  xr_status_t status;
  char report[XR_HAL_REASON_CAPACITY]; /* the file that loaded, or every path tried */
  xr_dynload_library_t library;
  range_api_t api;
} range_library_t;

static range_library_t nvtx = {.once = PTHREAD_ONCE_INIT,
                               .id = XR_VENDOR_LIBRARY_NVTX,
                               .symbols = nvtx_symbols,
                               .symbol_count = sizeof nvtx_symbols / sizeof nvtx_symbols[0]};
static range_library_t roctx = {.once = PTHREAD_ONCE_INIT,
                                .id = XR_VENDOR_LIBRARY_ROCTX,
                                .symbols = roctx_symbols,
                                .symbol_count = sizeof roctx_symbols / sizeof roctx_symbols[0]};

static void load(range_library_t *r) {
  r->status = xr_dynload_open(&xr_vendor_libraries[r->id], r->symbols, r->symbol_count, &r->api,
                              &r->library, r->report, sizeof r->report);
  if (r->status == XR_OK) snprintf(r->report, sizeof r->report, "%s", r->library.path);
}

static void load_nvtx(void) { load(&nvtx); }
static void load_roctx(void) { load(&roctx); }

static xr_status_t opened(const range_library_t *r, const char *spec, char *source,
                          size_t capacity) {
  const char *label = xr_vendor_libraries[r->id].label;
  if (r->status == XR_OK) {
    if (source && capacity) snprintf(source, capacity, "%s: %s", label, r->report);
    return XR_OK;
  }
  xr_status_t st =
      xr_error(XR_UNAVAILABLE, "%s: ranges: %s unavailable: %s", spec, label, r->report);
  if (source && capacity) snprintf(source, capacity, "%s", xr_last_error());
  return st;
}

static xr_status_t nvtx_open(const char *spec, char *source, size_t capacity) {
  pthread_once(&nvtx.once, load_nvtx);
  return opened(&nvtx, spec, source, capacity);
}

static xr_status_t roctx_open(const char *spec, char *source, size_t capacity) {
  pthread_once(&roctx.once, load_roctx);
  return opened(&roctx, spec, source, capacity);
}

/* The level each returns is left alone: negative only says that no tool is listening. */
static void nvtx_push(const char *name) { (void)nvtx.api.push(name); }
static void nvtx_pop(void) { (void)nvtx.api.pop(); }
static void roctx_push(const char *name) { (void)roctx.api.push(name); }
static void roctx_pop(void) { (void)roctx.api.pop(); }

const xr_gpu_ranges_t xr_gpu_nvtx = {
    .label = "NVTX", .open = nvtx_open, .push = nvtx_push, .pop = nvtx_pop};
const xr_gpu_ranges_t xr_gpu_roctx = {
    .label = "roctx", .open = roctx_open, .push = roctx_push, .pop = roctx_pop};
