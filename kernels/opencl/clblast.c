/* Loads CLBlast with dlopen through the symbol table in clblast.h. */
#include "kernels/opencl/clblast.h"

#include "base/vendor_libraries.h"

#ifdef XR_HAVE_CLBLAST_H
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static xr_clblast_t clblast;
static xr_status_t clblast_status = XR_OK;
static char clblast_reason[1024];
static pthread_once_t clblast_once = PTHREAD_ONCE_INIT;

/* dlsym on the library's handle also searches CLBlast's own dependencies (the OpenCL loader),
 * which is where clGetDeviceInfo comes from. */
static const xr_dynload_symbol_t clblast_symbols[] = {
#define CLBLAST_SYMBOL(need, ret, name, params) XR_DYNLOAD_SYMBOL(xr_clblast_t, need, name, name)
    XR_CLBLAST_SYMBOLS(CLBLAST_SYMBOL)
#undef CLBLAST_SYMBOL
};

static void clblast_load(void) {
  const xr_dynload_spec_t *spec = &xr_vendor_libraries[XR_VENDOR_LIBRARY_CLBLAST];
  /* On success the library stays loaded for the process: its program cache lives in it. */
  xr_dynload_library_t library;
  clblast_status = xr_dynload_open(spec, clblast_symbols,
                                   sizeof clblast_symbols / sizeof clblast_symbols[0], &clblast,
                                   &library, clblast_reason, sizeof clblast_reason);
}

xr_status_t xr_clblast_get(const xr_clblast_t **out_clblast) {
  pthread_once(&clblast_once, clblast_load);
  if (clblast_status != XR_OK) return xr_error(clblast_status, "CLBlast unavailable: %s", clblast_reason);
  *out_clblast = &clblast;
  return XR_OK;
}
#endif
