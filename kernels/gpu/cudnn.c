/* Loads cuDNN with dlopen through the symbol table in cudnn.h. */
#include "kernels/gpu/cudnn.h"

#include "base/vendor_libraries.h"

#include <pthread.h>
#include <stdio.h>

static xr_cudnn_t cudnn;
static xr_status_t cudnn_status = XR_OK;
static char cudnn_reason[1024];
static pthread_once_t cudnn_once = PTHREAD_ONCE_INIT;

static const xr_dynload_symbol_t cudnn_symbols[] = {
#define CUDNN_SYMBOL(need, ret, name, params) XR_DYNLOAD_SYMBOL(xr_cudnn_t, need, name, name)
    XR_CUDNN_SYMBOLS(CUDNN_SYMBOL)
#undef CUDNN_SYMBOL
};

static void cudnn_load(void) {
  const xr_dynload_spec_t *spec = &xr_vendor_libraries[XR_VENDOR_LIBRARY_CUDNN];
  xr_dynload_library_t library;
  cudnn_status = xr_dynload_open(spec, cudnn_symbols, sizeof cudnn_symbols / sizeof *cudnn_symbols,
                                 &cudnn, &library, cudnn_reason, sizeof cudnn_reason);
  if (cudnn_status != XR_OK) return;
  snprintf(cudnn.path, sizeof cudnn.path, "%s", library.path);
  /* 9.19.0 is 91900 (8.9.7 was 8907: major * 1000 before 9). */
  size_t v = cudnn.cudnnGetVersion();
  if (v >= 90000)
    snprintf(cudnn.version, sizeof cudnn.version, "cuDNN %zu.%zu.%zu", v / 10000, v / 100 % 100,
             v % 100);
  else
    snprintf(cudnn.version, sizeof cudnn.version, "cuDNN %zu.%zu.%zu", v / 1000, v / 100 % 10,
             v % 100);
  /* Loaded for the life of the process: handles and descriptors live in it. */
}

xr_status_t xr_cudnn_get(const xr_cudnn_t **out_cudnn) {
  pthread_once(&cudnn_once, cudnn_load);
  if (cudnn_status != XR_OK) return xr_error(cudnn_status, "cuDNN unavailable: %s", cudnn_reason);
  *out_cudnn = &cudnn;
  return XR_OK;
}
