/* Run-time compilation of CUDA C++ for the cuda and hip drivers: NVRTC (libnvrtc) for NVIDIA
 * targets ("sm_90"), hiprtc (libhiprtc, or libamdhip64 on ROCm 5, which carries it) for AMD
 * targets ("gfx90a", "gfx942:sramecc+:xnack-"). Both compilers are opened with dlopen through
 * the symbol table in gpu_compiler_symbols.h, once per process. Results go through the on-disk
 * cache (hal/core/cache.h), keyed by source, options, target and compiler version, so a
 * kernel compiles once per machine. Thread-safe. */
#ifndef XR_HAL_CORE_GPU_COMPILER_H
#define XR_HAL_CORE_GPU_COMPILER_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

typedef enum xr_gpu_compiler_kind {
  XR_GPU_COMPILER_NVRTC = 0,
  XR_GPU_COMPILER_HIPRTC,
} xr_gpu_compiler_kind_t;

/* The compiler for a target name: "sm_*" -> NVRTC, "gfx*" -> hiprtc. False for anything else. */
bool xr_gpu_compiler_for_target(const char *target, xr_gpu_compiler_kind_t *out_kind);

/* Loads the compiler (first call only) and writes what was tried and loaded, e.g.
 * "NVRTC 13.0 (libnvrtc.so.13)" or "libnvrtc.so.13: not found; ...". UNAVAILABLE when it
 * cannot be loaded. */
xr_status_t xr_gpu_compiler_describe(xr_gpu_compiler_kind_t kind, char *out, size_t capacity);

/* Compiles `source` (size bytes, not necessarily NUL-terminated) for `target` with extra
 * whitespace-separated `options` (NULL: none) into a binary the vendor's module loader takes
 * (NVRTC: cubin; hiprtc: code object). *out_binary is malloc'd. Errors:
 *   UNAVAILABLE       the compiler cannot be loaded (every path tried), or it does not know
 *                     the target (no usable code for this architecture);
 *   INVALID_ARGUMENT  a compile error; the sentence carries the compiler's log.
 * `label` names the source in messages ("gemm.cu"). */
xr_status_t xr_gpu_compile(const char *target, const char *label, const char *source, size_t size,
                           const char *options, void **out_binary, size_t *out_size);

#endif
