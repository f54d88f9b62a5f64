/* Loads MIOpen with dlopen through the symbol table in miopen.h. */
#include "kernels/gpu/miopen.h"

#include "base/vendor_libraries.h"

#include <pthread.h>
#include <stdio.h>

static xr_miopen_t miopen;
static xr_status_t miopen_status = XR_OK;
static char miopen_reason[1024];
static pthread_once_t miopen_once = PTHREAD_ONCE_INIT;

static const xr_dynload_symbol_t miopen_symbols[] = {
#define MIOPEN_SYMBOL(need, ret, name, params) XR_DYNLOAD_SYMBOL(xr_miopen_t, need, name, name)
    XR_MIOPEN_SYMBOLS(MIOPEN_SYMBOL)
#undef MIOPEN_SYMBOL
};

static void miopen_load(void) {
  const xr_dynload_spec_t *spec = &xr_vendor_libraries[XR_VENDOR_LIBRARY_MIOPEN];
  xr_dynload_library_t library;
  miopen_status =
      xr_dynload_open(spec, miopen_symbols, sizeof miopen_symbols / sizeof *miopen_symbols,
                      &miopen, &library, miopen_reason, sizeof miopen_reason);
  if (miopen_status != XR_OK) return;
  snprintf(miopen.path, sizeof miopen.path, "%s", library.path);
  size_t major = 0, minor = 0, patch = 0;
  miopen.miopenGetVersion(&major, &minor, &patch);
  snprintf(miopen.version, sizeof miopen.version, "MIOpen %zu.%zu.%zu", major, minor, patch);
  /* Loaded for the life of the process: handles and descriptors live in it. */
}

xr_status_t xr_miopen_get(const xr_miopen_t **out_miopen) {
  pthread_once(&miopen_once, miopen_load);
  if (miopen_status != XR_OK)
    return xr_error(miopen_status, "MIOpen unavailable: %s", miopen_reason);
  *out_miopen = &miopen;
  return XR_OK;
}
