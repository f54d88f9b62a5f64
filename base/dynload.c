#include "base/dynload.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xr_dynload_report_append(char *report, size_t capacity, const char *fmt, ...) {
  if (!report || capacity == 0) return;
  size_t used = strnlen(report, capacity - 1);
  if (used > 0 && used + 2 < capacity) {
    memcpy(report + used, "; ", 3);
    used += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(report + used, capacity - used, fmt, ap);
  va_end(ap);
}

/* dlerror() repeats the path at the front ("libX.so: cannot open shared object file: ...");
 * keep only the part after it so the report stays readable. */
static const char *dlerror_reason(const char *path) {
  const char *message = dlerror();
  if (!message) return "unknown dlopen error";
  size_t path_length = strlen(path);
  if (strncmp(message, path, path_length) == 0 && message[path_length] == ':') {
    message += path_length + 1;
    while (*message == ' ') message++;
  }
  if (strstr(message, "No such file or directory")) return "not found";
  return message;
}

static bool try_open(const char *path, const char *label, xr_dynload_library_t *library,
                     char *report, size_t capacity) {
  /* RTLD_LOCAL keeps vendor symbols out of the global namespace (two runtimes may clash). */
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    xr_dynload_report_append(report, capacity, "%s%s: %s", label, path, dlerror_reason(path));
    return false;
  }
  library->handle = handle;
  snprintf(library->path, sizeof library->path, "%s", path);
  xr_dynload_report_append(report, capacity, "%s%s: loaded", label, path);
  return true;
}

xr_status_t xr_dynload_open(const xr_dynload_spec_t *spec, const xr_dynload_symbol_t *symbols,
                            size_t symbol_count, void *table, xr_dynload_library_t *out_library,
                            char *report, size_t report_capacity) {
  char local_report[1024] = "";
  if (!report || report_capacity == 0) {
    report = local_report;
    report_capacity = sizeof local_report;
  }
  xr_dynload_library_t library = {0};
  const char *env = spec->env_override;
  const char *override = env ? getenv(env) : NULL;
  if (override && strcmp(override, "off") == 0) {
    xr_dynload_report_append(report, report_capacity, "%s=off: %s disabled", env, spec->label);
    return xr_error(XR_UNAVAILABLE, "%s", report);
  }
  bool loaded = false;
  if (override && override[0]) {
    char label[96];
    snprintf(label, sizeof label, "%s=", env);
    loaded = try_open(override, label, &library, report, report_capacity);
  }
  for (size_t i = 0; !loaded && i < spec->candidate_count; i++) {
    loaded = try_open(spec->candidates[i], "", &library, report, report_capacity);
  }
  if (!loaded) return xr_error(XR_UNAVAILABLE, "%s", report);

  for (size_t i = 0; i < symbol_count; i++) {
    void *address = xr_dynload_find(&library, symbols[i].name);
    if (!address && symbols[i].required) {
      xr_dynload_report_append(report, report_capacity, "missing required symbol %s",
                               symbols[i].name);
      dlclose(library.handle);
      return xr_error(XR_UNAVAILABLE, "%s", report);
    }
    /* memcpy: ISO C has no object-to-function pointer conversion; POSIX guarantees the
     * representation is the same. */
    memcpy((char *)table + symbols[i].offset, &address, sizeof address);
  }
  *out_library = library;
  return XR_OK;
}

void *xr_dynload_find(const xr_dynload_library_t *library, const char *name) {
  if (!library->handle) return NULL;
  dlerror();
  return dlsym(library->handle, name);
}

bool xr_dynload_probe(const xr_dynload_spec_t *spec, char *report, size_t report_capacity) {
  char attempts[1024] = "";
  xr_dynload_library_t library = {0};
  char saved_error[1024];
  snprintf(saved_error, sizeof saved_error, "%s", xr_last_error());
  xr_status_t status = xr_dynload_open(spec, NULL, 0, NULL, &library, attempts, sizeof attempts);
  xr_error(XR_OK, "%s", saved_error);
  if (status != XR_OK) {
    xr_dynload_report_append(report, report_capacity, "%s: absent (%s)", spec->label, attempts);
    return false;
  }
  xr_dynload_report_append(report, report_capacity, "%s: %s", spec->label, library.path);
  xr_dynload_close(&library);
  return true;
}

void xr_dynload_close(xr_dynload_library_t *library) {
  if (library && library->handle) {
    dlclose(library->handle);
    library->handle = NULL;
  }
}
