/* Loads CLBlast with dlopen through the symbol table in clblast.h. */
#include "kernels/opencl/clblast.h"

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

static void note(const char *what, const char *detail) {
  size_t used = strlen(clblast_reason);
  snprintf(clblast_reason + used, sizeof clblast_reason - used, "%s%s: %s", used ? "; " : "", what,
           detail);
}

static void clblast_load(void) {
  const char *override = getenv("XR_CLBLAST_LIBRARY");
  if (override && !strcmp(override, "off")) {
    clblast_status = XR_UNAVAILABLE;
    note("XR_CLBLAST_LIBRARY=off", "CLBlast disabled");
    return;
  }
  const char *candidates[] = {override && override[0] ? override : NULL, "libclblast.so.1",
                              "libclblast.so"};
  void *handle = NULL;
  for (size_t i = 0; !handle && i < sizeof candidates / sizeof candidates[0]; i++) {
    if (!candidates[i]) continue;
    handle = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
    if (!handle) note(candidates[i], dlerror());
  }
  if (!handle) {
    clblast_status = XR_UNAVAILABLE;
    return;
  }
  bool missing = false;
  /* dlsym on the handle also searches CLBlast's own dependencies (the OpenCL loader). */
#define XR_CLBLAST_REQ(ret, name, params)          \
  *(void **)&clblast.name = dlsym(handle, #name);  \
  if (!clblast.name) {                             \
    note("missing required symbol", #name);        \
    missing = true;                                \
  }
#define XR_CLBLAST_OPT(ret, name, params) *(void **)&clblast.name = dlsym(handle, #name);
  XR_CLBLAST_SYMBOLS(XR_CLBLAST_REQ, XR_CLBLAST_OPT)
#undef XR_CLBLAST_REQ
#undef XR_CLBLAST_OPT
  if (missing) {
    dlclose(handle);
    clblast_status = XR_UNAVAILABLE;
  }
  /* Otherwise the library stays loaded for the process: its program cache lives in it. */
}

xr_status_t xr_clblast_get(const xr_clblast_t **out_clblast) {
  pthread_once(&clblast_once, clblast_load);
  if (clblast_status != XR_OK) return xr_error(clblast_status, "CLBlast unavailable: %s", clblast_reason);
  *out_clblast = &clblast;
  return XR_OK;
}
#endif
