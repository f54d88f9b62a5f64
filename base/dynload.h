/* The one dlopen loader of xreplay: vendor runtimes (OpenCL, CUDA, HIP), run-time compilers
 * (NVRTC, hiprtc) and vendor libraries (cuBLASLt, hipBLASLt, CLBlast, oneDNN) are all opened
 * here, never linked, so one build runs on any machine.
 *
 * Symbol tables. Each library lists its symbols once, in a list macro whose entries read
 *   X(need, return type, field, (parameters))                 one vendor: the symbol is `field`
 *   X(need, return type, field, (parameters), cuda, hip)      two vendors, one name each
 * where need is REQUIRED or OPTIONAL. XR_DYNLOAD_FIELD expands an entry into a function-pointer
 * field of the caller's table struct; XR_DYNLOAD_SYMBOL into an xr_dynload_symbol_t naming one
 * vendor's symbol. A missing OPTIONAL symbol leaves its field NULL.
 *
 * Every outcome is described in a report ("libOpenCL.so.1: loaded", or "XR_CUDA_LIBRARY=/x.so:
 * not found; libcuda.so.1: not found; libcuda.so: not found") that the caller puts in its
 * UNAVAILABLE sentence. The environment override names a path tried first; "off" disables the
 * library. */
#ifndef XR_BASE_DYNLOAD_H
#define XR_BASE_DYNLOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

typedef struct xr_dynload_symbol {
  const char *name;
  size_t offset; /* of the function pointer inside the caller's table struct */
  bool required;
} xr_dynload_symbol_t;

#define XR_DYNLOAD_FIELD(need, ret, field, params, ...) ret(*field) params;
#define XR_DYNLOAD_SYMBOL(table_type, need, field, name) \
  {#name, offsetof(table_type, field), XR_DYNLOAD_##need},
#define XR_DYNLOAD_REQUIRED true
#define XR_DYNLOAD_OPTIONAL false

/* Places searched after the loader's own path (LD_LIBRARY_PATH, the RUNPATH, ld.so.cache), where
 * vendor stacks live on machines that do not register them with the loader:
 *   GPU_DRIVER  /usr/local/nvidia/lib64 and /usr/local/nvidia/lib (containers mount the driver
 *               there), /usr/lib/wsl/lib;
 *   CUDA        the toolkit: $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64, then
 *               /usr/local/cuda-<version>/lib64, newest first; then Python environments'
 *               site-packages/nvidia/<package>/lib (the pip `nvidia-*` wheels; CUDA 13's all
 *               live in nvidia/cu13/lib): the environment of every python3 on PATH,
 *               $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local, /usr/local/lib and /usr/lib's dist-packages;
 *   ROCM        $ROCM_PATH/lib, /opt/rocm/lib, then /opt/rocm-<version>/lib, newest first. */
enum {
  XR_DYNLOAD_IN_GPU_DRIVER = 1u << 0,
  XR_DYNLOAD_IN_CUDA = 1u << 1,
  XR_DYNLOAD_IN_ROCM = 1u << 2,
};

/* Where a library is looked for. */
typedef struct xr_dynload_spec {
  const char *label;             /* for reports: "OpenCL", "cuBLASLt" */
  const char *env_override;      /* "XR_OPENCL_LIBRARY": a path tried first, "off" disables */
  const char *const *candidates; /* sonames, most preferred first */
  size_t candidate_count;
  unsigned places;               /* XR_DYNLOAD_IN_* searched after the loader's path */
} xr_dynload_spec_t;

typedef struct xr_dynload_library {
  void *handle;   /* from dlopen; NULL when nothing loaded */
  char path[512]; /* the file that loaded (a soname resolved through the loader's path) */
} xr_dynload_library_t;

/* Opens the first candidate that loads: the override, then every soname through the loader's
 * path, then every soname in each of `places`' directories in order, and resolves `symbols` into
 * `table`; out_library->path is the file that loaded. Appends what happened to `report`
 * ("; "-separated), files of those names that the search would have reached later included
 * ("<path>: not taken, an earlier one loaded"). UNAVAILABLE, with the report as
 * the sentence, when the library is disabled, no candidate loads or a REQUIRED symbol is
 * missing (the library is closed again then). `symbols` may be empty (count 0). Thread-safe. */
xr_status_t xr_dynload_open(const xr_dynload_spec_t *spec, const xr_dynload_symbol_t *symbols,
                            size_t symbol_count, void *table, xr_dynload_library_t *out_library,
                            char *report, size_t report_capacity);

/* Looks up one more symbol in an open library (NULL when absent). */
void *xr_dynload_find(const xr_dynload_library_t *library, const char *name);

/* Whether an optional library can be loaded: opens and closes it again, and appends
 * "<label>: <path>" (followed by the files that failed to load or were not taken, in
 * parentheses) or "<label>: absent (<every attempt>)" to `report`. Leaves the caller's
 * xr_last_error() untouched. Thread-safe. */
bool xr_dynload_probe(const xr_dynload_spec_t *spec, char *report, size_t report_capacity);

/* Closes a library opened above (no-op when nothing was loaded). */
void xr_dynload_close(xr_dynload_library_t *library);

/* Appends a formatted piece to a "; "-separated report, truncating safely. */
void xr_dynload_report_append(char *report, size_t capacity, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* XR_BASE_DYNLOAD_H */
