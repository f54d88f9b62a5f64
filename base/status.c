#include "base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Long enough for a library search list plus a vendor error; longer sentences are cut. */
#define XR_ERROR_CAPACITY 4096

static _Thread_local char last_error[XR_ERROR_CAPACITY];

const char *xr_status_name(xr_status_t status) {
  switch (status) {
    case XR_OK: return "OK";
    case XR_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case XR_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case XR_NOT_FOUND: return "NOT_FOUND";
    case XR_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case XR_UNAVAILABLE: return "UNAVAILABLE";
    case XR_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case XR_DEVICE_ERROR: return "DEVICE_ERROR";
    case XR_DATA_LOSS: return "DATA_LOSS";
    case XR_INTERNAL: return "INTERNAL";
  }
  return "UNKNOWN_STATUS";
}

const char *xr_last_error(void) { return last_error; }

void xr_error_clear(void) { last_error[0] = '\0'; }

xr_status_t xr_error(xr_status_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return status;
}

xr_status_t xr_error_prefix(xr_status_t status, const char *fmt, ...) {
  char prefix[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  if (n < 0) return status;
  size_t plen = strlen(prefix);
  size_t old = strlen(last_error);
  if (plen + old >= sizeof last_error) old = sizeof last_error - 1 - plen;
  memmove(last_error + plen, last_error, old);
  memcpy(last_error, prefix, plen);
  last_error[plen + old] = '\0';
  return status;
}
