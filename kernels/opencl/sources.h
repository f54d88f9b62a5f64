/* OpenCL C sources embedded in the library (kernels/opencl/ *.cl, turned into C strings by
 * kernels/embed_sources.sh at build time) and programs built from them. */
#ifndef XR_KERNELS_OPENCL_SOURCES_H
#define XR_KERNELS_OPENCL_SOURCES_H

#include "hal/hal.h"

typedef struct xr_opencl_source {
  const char *name; /* "gemm.cl" */
  const char *text;
} xr_opencl_source_t;

extern const xr_opencl_source_t xr_opencl_sources[]; /* ends with {NULL, NULL} */

/* The text of an embedded source, or NULL. */
const char *xr_opencl_source_text(const char *name);

/* Builds `file` with `options` (NULL: none) for `device`; the caller destroys the executable
 * (in its release) and looks kernels up in it. The HAL caches program binaries on disk, so a
 * rebuild of the same source costs a cache read, not a compile. Build errors carry the
 * compiler's log. Thread-safe. */
xr_status_t xr_opencl_build(xr_hal_device_t *device, const char *file, const char *options,
                            xr_hal_executable_t **out_executable);

#endif
