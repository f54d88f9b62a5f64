/* CUDA C++ sources embedded in the library (kernels/gpu/ *.cu with their local headers inlined,
 * by kernels/embed_sources.sh at build time) and executables built from them on cuda and hip
 * devices: one source, compiled at run time by NVRTC or hiprtc for the device's own
 * architecture (see docs/gpu.md). */
#ifndef XR_KERNELS_GPU_SOURCES_H
#define XR_KERNELS_GPU_SOURCES_H

#include "hal/hal.h"

typedef struct xr_gpu_source {
  const char *name; /* "gemm.cu" */
  const char *text;
} xr_gpu_source_t;

extern const xr_gpu_source_t xr_gpu_sources[]; /* ends with {NULL, NULL} */

/* The text of an embedded source, or NULL. */
const char *xr_gpu_source_text(const char *name);

/* Builds `file` with NVRTC/hiprtc `options` (NULL: none) for a cuda or hip `device`; the
 * caller destroys the executable (in its release) and looks kernels up in it. Compiled code is
 * cached on disk, so a rebuild costs a file read and a module load. Errors carry the
 * compiler's log; UNAVAILABLE when the machine cannot compile for the device. Thread-safe. */
xr_status_t xr_gpu_build(xr_hal_device_t *device, const char *file, const char *options,
                         xr_hal_executable_t **out_executable);

#endif
