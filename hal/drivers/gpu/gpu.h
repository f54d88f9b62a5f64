/* The cuda and hip drivers: one implementation (gpu_driver.c) over the entry points of
 * gpu_symbols.h, plus one small file per vendor (cuda.c, hip.c) for what really differs: library
 * names, error names, context handling, properties and image formats, described by an
 * xr_gpu_vendor_t. Both vendors may be loaded in one process (a machine can have both
 * runtimes): each has its own symbol table, and every device points at its vendor. Internal to
 * hal/drivers/gpu/. */
#ifndef XR_HAL_DRIVERS_GPU_GPU_H
#define XR_HAL_DRIVERS_GPU_GPU_H

#include <stdint.h>

#include "base/dynload.h"
#include "base/vendor_libraries.h"
#include "hal/core/driver.h"
#include "hal/core/gpu_compiler.h"
#include "hal/drivers/gpu/gpu_symbols.h"
#include "hal/drivers/gpu/management.h"
#include "hal/drivers/gpu/ranges.h"

typedef struct xr_gpu_symbols {
  XR_GPU_SYMBOLS(XR_DYNLOAD_FIELD)
} xr_gpu_symbols_t;

/* What the probe loaded for one vendor: written once under the registry's lock, read-only
 * afterwards; the library stays loaded for the life of the process once a device was found.
 * It is the first member of the vendor's own state, whose vendor-only symbols follow it, so
 * one symbol list loads both (the common entries' offsets are those in xr_gpu_symbols_t). */
typedef struct xr_gpu_runtime {
  xr_gpu_symbols_t api; /* first */
  xr_dynload_library_t library;
  int driver_version;   /* cuDriverGetVersion (13000 for CUDA 13.0) / hipDriverGetVersion */
} xr_gpu_runtime_t;

/* A vendor file keeps its loaded state in a `vendor_state_t`: the xr_gpu_runtime_t first, then
 * its own symbols (XR_DYNLOAD_FIELD of a one-vendor list). XR_GPU_OWN_SYMBOL lists one of those
 * for the loader; XR_GPU_CUDA_SYMBOL and XR_GPU_HIP_SYMBOL a common one under the vendor's name. */
#define XR_GPU_OWN_SYMBOL(need, ret, field, params) \
  XR_DYNLOAD_SYMBOL(vendor_state_t, need, field, field)
#define XR_GPU_CUDA_SYMBOL(need, ret, field, params, cuda, hip) \
  XR_DYNLOAD_SYMBOL(xr_gpu_symbols_t, need, field, cuda)
#define XR_GPU_HIP_SYMBOL(need, ret, field, params, cuda, hip) \
  XR_DYNLOAD_SYMBOL(xr_gpu_symbols_t, need, field, hip)

#define XR_GPU_COUNT(array) (sizeof(array) / sizeof((array)[0]))


/* Result codes the common code tells apart: CUDA and HIP give them the same numbers. */
enum {
  XR_GPU_SUCCESS = 0,
  XR_GPU_ERROR_INVALID_VALUE = 1,
  XR_GPU_ERROR_OUT_OF_MEMORY = 2,
  XR_GPU_ERROR_NO_DEVICE = 100,
  XR_GPU_ERROR_INVALID_IMAGE = 200,
  XR_GPU_ERROR_NO_BINARY_FOR_GPU = 209,
  XR_GPU_ERROR_INVALID_PTX = 218, /* hipErrorInvalidKernelFile */
  XR_GPU_ERROR_NOT_FOUND = 500,
  XR_GPU_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
};

typedef struct xr_gpu_vendor xr_gpu_vendor_t;

typedef struct xr_gpu_device {
  xr_hal_device_t base;
  const xr_gpu_vendor_t *vendor;
  int ordinal;
  int device;         /* CUdevice / hipDevice_t of the ordinal */
  /* What xr_hal_device_native returns: cuda's retained primary CUcontext; hip, which has no
   * device object, points it at `ordinal`. */
  void *native;
  char target[256];   /* what the run-time compiler builds for: "sm_90", "gfx90a:sramecc+:xnack-" */
  xr_hal_device_properties_t properties; /* queried once at creation */
  /* Clocks: the management library's handle of this device, found on the first
   * xr_hal_device_clocks; a failure is kept with its sentence and repeated, not retried. */
  pthread_mutex_t clocks_mutex; /* guards the three fields below */
  bool clocks_opened;
  xr_status_t clocks_status;
  void *clocks_handle;
  char clocks_reason[XR_HAL_REASON_CAPACITY];
} xr_gpu_device_t;

/* The device attributes the common code reads; CUdevice_attribute and hipDeviceAttribute_t
 * number them differently. */
typedef struct xr_gpu_attributes {
  int compute_units, clock_khz, memory_clock_khz, memory_bus_bits;
  int warp_size, max_threads_per_block, l2_cache_bytes;
} xr_gpu_attributes_t;

struct xr_gpu_vendor {
  /* Where the runtime is looked for; its label ("CUDA", "HIP") names the vendor in sentences. */
  const xr_dynload_spec_t *library; /* from base/vendor_libraries.h */
  /* The vendor's own symbols and the common ones, in the order that reports a library which
   * is not the runtime by the probe's first call; loaded into `runtime`. */
  const xr_dynload_symbol_t *symbols;
  size_t symbol_count;
  xr_gpu_runtime_t *runtime;
  xr_gpu_compiler_kind_t compiler;          /* named in the probe's report */
  const xr_vendor_library_id_t *libraries;  /* vendor libraries (BLAS, DNN) the probe reports */
  size_t library_count;
  xr_hal_executable_format_t binary_format; /* the prebuilt images it loads ... */
  const char *binary_formats;               /* ... as its refusal names them */
  xr_gpu_attributes_t attributes;
  /* Results only this vendor gives a meaning, 0 for none: another code for an image without
   * code for the device (cuda: CUDA_ERROR_UNSUPPORTED_PTX_VERSION), another for a kernel name
   * the module lacks (hip: hipErrorInvalidValue as well as hipErrorNotFound). */
  int no_code_result;
  int missing_kernel_result;

  /* The vendor's name for a result code ("CUDA_ERROR_OUT_OF_MEMORY"). */
  const char *(*error_name)(int code);
  /* Optional: the first call after loading (cuInit), named init_call in the reason. */
  int (*init)(void);
  const char *init_call;
  /* Once devices were counted: appends the runtime's version to the probe's reason, or the
   * reason why the runtime cannot serve and returns false. */
  bool (*describe_runtime)(char *reason, size_t capacity);
  /* Opens a device device_get found: its context or selection, `native`, `target`, and the
   * vendor and version strings of its properties. */
  xr_status_t (*open)(xr_gpu_device_t *device);
  void (*close)(xr_gpu_device_t *device); /* optional: undoes open */
  /* Makes the device current on the calling thread (a thread-local store in both runtimes);
   * returns the result of the vendor's call make_current_call. */
  int (*make_current)(const xr_gpu_device_t *device);
  const char *make_current_call;
  /* For a part the datasheet does not know: fp32 lanes per compute unit, fp64's share of the
   * fp32 rate (0: not estimated). */
  void (*estimate)(xr_gpu_device_t *device, int *out_fp32_lanes, double *out_fp64_rate);
  /* Optional: before each launch (cuda opts in to large dynamic shared memory). */
  void (*before_launch)(void *function, unsigned int shared_bytes);
  /* Where clocks are read (NVML, AMD SMI); NULL: the vendor has none. */
  const xr_gpu_management_t *management;
  /* What profiler ranges go through (NVTX, roctx); NULL: the vendor has none. */
  const xr_gpu_ranges_t *ranges;
  /* Whether the runtime frees an executable graph still running once it completes (CUDA
   * documents it); otherwise graph destroy drains the device first. */
  bool frees_graphs_in_flight;
};

/* The driver entry points over a vendor (XR_GPU_DRIVER below). */
xr_status_t xr_gpu_probe(const xr_gpu_vendor_t *vendor, char *reason, size_t capacity,
                         int *out_device_count);
xr_status_t xr_gpu_device_create(const xr_gpu_vendor_t *vendor, const xr_hal_driver_t *driver,
                                 int ordinal, xr_hal_device_t **out_device);

/* Defines `const xr_hal_driver_t xr_hal_<name>_driver`, the entry hal/drivers.bzl lists,
 * over `vendor`: a driver's entry points carry no context, so each vendor gets its own pair. */
#define XR_GPU_DRIVER(driver, vendor)                                                              \
  extern const xr_hal_driver_t xr_hal_##driver##_driver;                                           \
  static xr_status_t driver##_probe(char *reason, size_t capacity, int *out_device_count) {        \
    return xr_gpu_probe(&(vendor), reason, capacity, out_device_count);                            \
  }                                                                                                \
  static xr_status_t driver##_device_create(int ordinal, xr_hal_device_t **out_device) {           \
    return xr_gpu_device_create(&(vendor), &xr_hal_##driver##_driver, ordinal, out_device);        \
  }                                                                                                \
  const xr_hal_driver_t xr_hal_##driver##_driver = {                                               \
      .name = #driver,                                                                             \
      .probe = driver##_probe,                                                                     \
      .device_create = driver##_device_create,                                                     \
  }

/* "cuda:0: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)" as the sentence of `status`. */
xr_status_t xr_gpu_fail(xr_status_t status, const xr_gpu_device_t *device, const char *call,
                        int code);

/* Makes the device current on the calling thread (vendor->make_current with its sentence). */
xr_status_t xr_gpu_make_current(xr_gpu_device_t *device);

/* A device attribute by the vendor's number; 0 when the query fails. */
int xr_gpu_attribute(const xr_gpu_device_t *device, int attribute);

#endif /* XR_HAL_DRIVERS_GPU_GPU_H */
