/* Shared dlopen helper for vendor runtimes (opencl now, cuda and hip later).
 *
 * Each vendor lists its symbols once in an X-macro table (see
 * hal/drivers/opencl/opencl_symbols.h); the driver expands the table into a struct of function
 * pointers plus an array of xr_dynload_symbol_t, and xr_dynload_open_and_resolve() fills the
 * struct. Every outcome is described in a report string ("libOpenCL.so.1: loaded" or
 * "libX.so.2: not found; libX.so: not found") that the driver puts in its UNAVAILABLE reason. */
#ifndef XR_HAL_CORE_DYNLOAD_H
#define XR_HAL_CORE_DYNLOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "hal/core/status.h"

typedef struct xr_dynload_symbol {
  const char *name;
  size_t offset;   /* of the function pointer inside the caller's table struct */
  bool required;
} xr_dynload_symbol_t;

typedef struct xr_dynload_library {
  void *handle;        /* from dlopen; NULL when nothing loaded */
  char path[512];      /* the path or soname that loaded */
} xr_dynload_library_t;

/* Tries the path in environment variable `env_override` (when set and non-empty), then each of
 * `candidates` in order, and keeps the first that loads. Then resolves `symbols` into `table`
 * (missing OPTIONAL symbols stay NULL). Appends what happened to `report` ("; "-separated).
 * UNAVAILABLE when no candidate loads or a REQUIRED symbol is missing (the library is closed
 * again in that case). Thread-safe (dlopen is). */
xr_status_t xr_dynload_open_and_resolve(const char *env_override,
                                        const char *const *candidates, size_t candidate_count,
                                        const xr_dynload_symbol_t *symbols, size_t symbol_count,
                                        void *table, xr_dynload_library_t *out_library,
                                        char *report, size_t report_capacity);

/* Whether an optional library (a vendor BLAS) can be loaded: tries `env_override`, then
 * `candidates`, closes it again, and appends "<label>: <path>" or "<label>: absent (<every
 * attempt>)" to `report`. Returns whether one loaded. Thread-safe. */
bool xr_dynload_probe_optional(const char *label, const char *env_override,
                               const char *const *candidates, size_t candidate_count,
                               char *report, size_t report_capacity);

/* Closes a library opened above (no-op when nothing was loaded). */
void xr_dynload_close(xr_dynload_library_t *library);

/* Appends a formatted piece to a "; "-separated report, truncating safely. */
void xr_dynload_report_append(char *report, size_t capacity, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* XR_HAL_CORE_DYNLOAD_H */
