/* cuda driver: the CUDA driver API (libcuda.so.1) opened with dlopen through the symbol table in
 * cuda_symbols.h. Each device uses its primary context (the one the CUDA runtime and PyTorch
 * share), made current on the calling thread at every entry, so any thread may call. Streams
 * are non-blocking CUDA streams, events CUDA events with timing, buffers cuMemAlloc
 * allocations addressed as base + offset (views need no driver object). Device code comes as
 * fatbin / cubin / PTX (cuModuleLoadData) or as CUDA C++ compiled at run time by NVRTC for the
 * device's own architecture (hal/core/gpu_compiler.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/core/datasheet.h"
#include "hal/core/driver.h"
#include "base/dynload.h"
#include "hal/drivers/cuda/cuda_symbols.h"
#include "hal/core/gpu_compiler.h"

/* From cuda.h (values fixed by the ABI). */
enum {
  CU_SUCCESS = 0,
  CU_ERROR_INVALID_VALUE = 1,
  CU_ERROR_OUT_OF_MEMORY = 2,
  CU_ERROR_NO_DEVICE = 100,
  CU_ERROR_INVALID_IMAGE = 200,
  CU_ERROR_NO_BINARY_FOR_GPU = 209,
  CU_ERROR_INVALID_PTX = 218,
  CU_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CU_ERROR_NOT_FOUND = 500,
  CU_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CU_STREAM_NON_BLOCKING = 1,
  CU_EVENT_DEFAULT = 0,
  CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
  CU_ATTR_WARP_SIZE = 10,
  CU_ATTR_CLOCK_RATE = 13,
  CU_ATTR_MULTIPROCESSOR_COUNT = 16,
  CU_ATTR_MEMORY_CLOCK_RATE = 36,
  CU_ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37,
  CU_ATTR_L2_CACHE_SIZE = 38,
  CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

/* Dynamic shared memory a kernel may use without opting in. */
#define DEFAULT_SHARED_MEMORY_LIMIT (48 * 1024)
#define MAX_KERNEL_ARGS 64

/* ------------------------------------------------------------------------------------------ */
/* Runtime loading                                                                            */

typedef struct cuda_symbols {
  XR_CUDA_SYMBOLS(XR_DYNLOAD_FIELD)
} cuda_symbols_t;

static const xr_dynload_symbol_t cuda_symbol_list[] = {
#define CUDA_SYMBOL(need, ret, name, params) XR_DYNLOAD_SYMBOL(cuda_symbols_t, need, name, name)
    XR_CUDA_SYMBOLS(CUDA_SYMBOL)
#undef CUDA_SYMBOL
};

/* Written once by the probe (under the registry's lock), read-only afterwards; the library
 * stays loaded for the life of the process once a device was found. */
static cuda_symbols_t cu;
static xr_dynload_library_t cu_library;
static int cu_driver_version; /* 13000 for CUDA 13.0 */

/* The vendor's name for a CUresult. cuGetErrorName fails in the toolkit's stub libcuda, so the
 * names a user is likely to meet are also known here. */
static const char *cu_error_name(int code) {
  const char *name = NULL;
  if (cu.cuGetErrorName && cu.cuGetErrorName(code, &name) == CU_SUCCESS && name) return name;
  switch (code) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return "CUDA_ERROR_DEINITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 200: return "CUDA_ERROR_INVALID_IMAGE";
    case 201: return "CUDA_ERROR_INVALID_CONTEXT";
    case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 218: return "CUDA_ERROR_INVALID_PTX";
    case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case 304: return "CUDA_ERROR_OPERATING_SYSTEM";
    case 400: return "CUDA_ERROR_INVALID_HANDLE";
    case 500: return "CUDA_ERROR_NOT_FOUND";
    case 600: return "CUDA_ERROR_NOT_READY";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    case 702: return "CUDA_ERROR_LAUNCH_TIMEOUT";
    case 719: return "CUDA_ERROR_LAUNCH_FAILED";
    case 801: return "CUDA_ERROR_NOT_SUPPORTED";
    case 803: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case 804: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return "CUDA error";
  }
}

/* "cuda:0: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2)" as the sentence of `status`. */
static xr_status_t cu_fail(xr_status_t status, const char *spec, const char *call, int code) {
  return xr_error(status, "%s: %s: %s (%d)", spec, call, cu_error_name(code), code);
}

static xr_status_t cu_status_for(int code) {
  return code == CU_ERROR_OUT_OF_MEMORY ? XR_RESOURCE_EXHAUSTED : XR_DEVICE_ERROR;
}

/* Appends what serves kernels besides the driver: the run-time compiler and vendor BLAS. */
static void describe_libraries(char *reason, size_t capacity) {
  char compiler[512];
  xr_gpu_compiler_describe(XR_GPU_COMPILER_NVRTC, compiler, sizeof compiler);
  xr_dynload_report_append(reason, capacity, "kernels: %s", compiler);
  static const char *const cublaslt[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                                         "libcublasLt.so.11"};
  static const char *const cublas[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"};
  {
    const xr_dynload_spec_t spec = {"cuBLASLt", "XR_CUBLASLT_LIBRARY", cublaslt, sizeof cublaslt / sizeof cublaslt[0]};
    xr_dynload_probe(&spec, reason, capacity);
  }
  {
    const xr_dynload_spec_t spec = {"cuBLAS", "XR_CUBLAS_LIBRARY", cublas, sizeof cublas / sizeof cublas[0]};
    xr_dynload_probe(&spec, reason, capacity);
  }
}

static xr_status_t cuda_probe(char *reason, size_t capacity, int *out_device_count) {
  static const char *const candidates[] = {"libcuda.so.1", "libcuda.so"};
  static const xr_dynload_spec_t spec = {"CUDA", "XR_CUDA_LIBRARY", candidates,
                                         sizeof candidates / sizeof candidates[0]};
  *out_device_count = 0;
  xr_status_t status = xr_dynload_open(&spec, cuda_symbol_list, sizeof cuda_symbol_list / sizeof cuda_symbol_list[0], &cu, &cu_library,
                                       reason, capacity);
  if (status != XR_OK) return XR_UNAVAILABLE;

  const char *call = "cuInit";
  int result = cu.cuInit(0);
  int count = 0;
  if (result == CU_SUCCESS) {
    call = "cuDeviceGetCount";
    result = cu.cuDeviceGetCount(&count);
  }
  if (result == CU_SUCCESS && count == 0) result = CU_ERROR_NO_DEVICE;
  if (result != CU_SUCCESS) {
    xr_dynload_report_append(reason, capacity, "%s: %s (%d)", call, cu_error_name(result),
                             result);
    xr_dynload_close(&cu_library);
    memset(&cu, 0, sizeof cu);
    return XR_UNAVAILABLE;
  }
  cu.cuDriverGetVersion(&cu_driver_version);
  xr_dynload_report_append(reason, capacity, "CUDA %d.%d driver; %d device%s",
                           cu_driver_version / 1000, cu_driver_version % 1000 / 10, count,
                           count == 1 ? "" : "s");
  describe_libraries(reason, capacity);
  *out_device_count = count;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Handles                                                                                    */

typedef struct cuda_device {
  xr_hal_device_t base;
  int device;               /* CUdevice */
  void *context;            /* the primary context, retained */
  char target[16];          /* "sm_90": what NVRTC compiles for */
  xr_hal_device_properties_t properties; /* queried once at creation */
} cuda_device_t;

typedef struct cuda_buffer {
  xr_hal_buffer_t base;
  uint64_t pointer;         /* 0 for an empty buffer */
} cuda_buffer_t;

typedef struct cuda_stream {
  xr_hal_stream_t base;
  void *stream;
} cuda_stream_t;

typedef struct cuda_event {
  xr_hal_event_t base;
  void *event;
} cuda_event_t;

typedef struct cuda_kernel {
  xr_hal_kernel_t base;
  void *function;
  struct cuda_kernel *next;
  char name[];
} cuda_kernel_t;

typedef struct cuda_executable {
  xr_hal_executable_t base;
  void *module;
  pthread_mutex_t mutex;    /* guards kernels */
  cuda_kernel_t *kernels;
} cuda_executable_t;

static cuda_device_t *cuda_device(xr_hal_device_t *device) { return (cuda_device_t *)device; }
static uint64_t address_of(xr_hal_buffer_t *root, size_t offset) {
  return ((cuda_buffer_t *)root)->pointer + offset;
}
static void *stream_of(xr_hal_stream_t *stream) { return ((cuda_stream_t *)stream)->stream; }

/* Makes the device's primary context current on this thread (cheap: a thread-local store). */
static xr_status_t make_current(xr_hal_device_t *base) {
  int result = cu.cuCtxSetCurrent(cuda_device(base)->context);
  if (result != CU_SUCCESS) return cu_fail(XR_DEVICE_ERROR, base->spec, "cuCtxSetCurrent", result);
  return XR_OK;
}

/* The status of an enqueue call. */
static xr_status_t submitted(xr_hal_stream_t *stream, const char *call, int result) {
  if (result == CU_SUCCESS) return XR_OK;
  return cu_fail(cu_status_for(result), stream->device->spec, call, result);
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers                                                                                    */

static xr_status_t cuda_buffer_alloc(xr_hal_device_t *base, size_t size, xr_hal_buffer_t **out) {
  const xr_hal_device_properties_t *properties = &cuda_device(base)->properties;
  if (size > properties->memory_bytes) {
    return xr_error(XR_RESOURCE_EXHAUSTED,
                    "%s: cannot allocate %zu bytes: the device has %llu bytes of memory",
                    base->spec, size, (unsigned long long)properties->memory_bytes);
  }
  cuda_buffer_t *buffer = calloc(1, sizeof *buffer);
  if (!buffer) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", base->spec);
  if (size > 0) {
    xr_status_t status = make_current(base);
    int result = status == XR_OK ? cu.cuMemAlloc_v2(&buffer->pointer, size) : CU_SUCCESS;
    if (status == XR_OK && result != CU_SUCCESS) {
      status = xr_error_prefix(cu_fail(cu_status_for(result), base->spec, "cuMemAlloc_v2", result),
                               "allocating %zu bytes: ", size);
    }
    if (status != XR_OK) {
      free(buffer);
      return status;
    }
  }
  xr_hal_buffer_base_init(&buffer->base, base, NULL, 0, size);
  *out = &buffer->base;
  return XR_OK;
}

static void cuda_buffer_destroy(xr_hal_buffer_t *root) {
  cuda_buffer_t *buffer = (cuda_buffer_t *)root;
  if (buffer->pointer && make_current(root->device) == XR_OK) {
    /* Work already queued may still use the memory (hal.h promises it stays valid): wait for
     * the device first. Freeing is rare in replays (allocate once, run many times). */
    cu.cuCtxSynchronize();
    cu.cuMemFree_v2(buffer->pointer);
  }
  free(buffer);
}

/* Native handles for vendor libraries (cuBLASLt): the CUdeviceptr of the allocation, the
 * CUstream, the primary CUcontext. */
static void *cuda_buffer_native(xr_hal_buffer_t *root) {
  return (void *)(uintptr_t)((cuda_buffer_t *)root)->pointer;
}

/* ------------------------------------------------------------------------------------------ */
/* Streams and transfers                                                                      */

static xr_status_t cuda_stream_create(xr_hal_device_t *device, xr_hal_stream_t **out) {
  xr_status_t status = make_current(device);
  if (status != XR_OK) return status;
  cuda_stream_t *stream = calloc(1, sizeof *stream);
  if (!stream) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", device->spec);
  /* Non-blocking: no implicit ordering with the legacy default stream other code may use. */
  int result = cu.cuStreamCreate(&stream->stream, CU_STREAM_NON_BLOCKING);
  if (result != CU_SUCCESS) {
    free(stream);
    return cu_fail(cu_status_for(result), device->spec, "cuStreamCreate", result);
  }
  stream->base.device = device;
  *out = &stream->base;
  return XR_OK;
}

static void cuda_stream_destroy(xr_hal_stream_t *base) {
  cuda_stream_t *stream = (cuda_stream_t *)base;
  if (make_current(base->device) == XR_OK) {
    cu.cuStreamSynchronize(stream->stream);
    cu.cuStreamDestroy_v2(stream->stream);
  }
  free(stream);
}

/* The CUstream, with the device's context made current: cuBLASLt runs on the current one. */
static void *cuda_stream_native(xr_hal_stream_t *stream) {
  return make_current(stream->device) == XR_OK ? stream_of(stream) : NULL;
}

static xr_status_t cuda_stream_synchronize(xr_hal_stream_t *stream) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  int result = cu.cuStreamSynchronize(stream_of(stream));
  /* Errors of earlier asynchronous work (a faulting kernel) surface here. */
  if (result != CU_SUCCESS) {
    return cu_fail(XR_DEVICE_ERROR, stream->device->spec, "cuStreamSynchronize", result);
  }
  return XR_OK;
}

static xr_status_t cuda_stream_write(xr_hal_stream_t *stream, xr_hal_buffer_t *dst,
                                     size_t dst_offset, const void *src, size_t size) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream, "cuMemcpyHtoDAsync_v2",
                   cu.cuMemcpyHtoDAsync_v2(address_of(dst, dst_offset), src, size,
                                           stream_of(stream)));
}

static xr_status_t cuda_stream_read(xr_hal_stream_t *stream, void *dst, xr_hal_buffer_t *src,
                                    size_t src_offset, size_t size) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream, "cuMemcpyDtoHAsync_v2",
                   cu.cuMemcpyDtoHAsync_v2(dst, address_of(src, src_offset), size,
                                           stream_of(stream)));
}

static xr_status_t cuda_stream_copy(xr_hal_stream_t *stream, xr_hal_buffer_t *dst,
                                    size_t dst_offset, xr_hal_buffer_t *src, size_t src_offset,
                                    size_t size) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream, "cuMemcpyDtoDAsync_v2",
                   cu.cuMemcpyDtoDAsync_v2(address_of(dst, dst_offset),
                                           address_of(src, src_offset), size, stream_of(stream)));
}

static xr_status_t cuda_stream_fill(xr_hal_stream_t *stream, xr_hal_buffer_t *buffer,
                                    size_t offset, size_t size, uint32_t pattern,
                                    size_t pattern_size) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  /* The core checked that offset and size are multiples of the pattern, so the address is
   * aligned for the 16- and 32-bit forms (allocations start 256-byte aligned). */
  uint64_t address = address_of(buffer, offset);
  void *queue = stream_of(stream);
  if (pattern_size == 1) {
    return submitted(stream, "cuMemsetD8Async",
                     cu.cuMemsetD8Async(address, (unsigned char)pattern, size, queue));
  }
  if (pattern_size == 2) {
    return submitted(stream, "cuMemsetD16Async",
                     cu.cuMemsetD16Async(address, (unsigned short)pattern, size / 2, queue));
  }
  return submitted(stream, "cuMemsetD32Async",
                   cu.cuMemsetD32Async(address, pattern, size / 4, queue));
}

/* ------------------------------------------------------------------------------------------ */
/* Events                                                                                     */

static xr_status_t cuda_event_create(xr_hal_device_t *device, xr_hal_event_t **out) {
  xr_status_t status = make_current(device);
  if (status != XR_OK) return status;
  cuda_event_t *event = calloc(1, sizeof *event);
  if (!event) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", device->spec);
  int result = cu.cuEventCreate(&event->event, CU_EVENT_DEFAULT);
  if (result != CU_SUCCESS) {
    free(event);
    return cu_fail(cu_status_for(result), device->spec, "cuEventCreate", result);
  }
  event->base.device = device;
  *out = &event->base;
  return XR_OK;
}

static void cuda_event_destroy(xr_hal_event_t *base) {
  cuda_event_t *event = (cuda_event_t *)base;
  /* Destroying an event whose record is pending is allowed: CUDA releases it on completion. */
  if (make_current(base->device) == XR_OK) cu.cuEventDestroy_v2(event->event);
  free(event);
}

static xr_status_t cuda_event_record(xr_hal_event_t *base, xr_hal_stream_t *stream) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream, "cuEventRecord",
                   cu.cuEventRecord(((cuda_event_t *)base)->event, stream_of(stream)));
}

static xr_status_t cuda_event_synchronize(xr_hal_event_t *base) {
  xr_status_t status = make_current(base->device);
  if (status != XR_OK) return status;
  int result = cu.cuEventSynchronize(((cuda_event_t *)base)->event);
  if (result != CU_SUCCESS) {
    return cu_fail(XR_DEVICE_ERROR, base->device->spec, "cuEventSynchronize", result);
  }
  return XR_OK;
}

static xr_status_t cuda_stream_wait_event(xr_hal_stream_t *stream, xr_hal_event_t *base) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream, "cuStreamWaitEvent",
                   cu.cuStreamWaitEvent(stream_of(stream), ((cuda_event_t *)base)->event, 0));
}

static xr_status_t cuda_event_elapsed_ms(xr_hal_event_t *start, xr_hal_event_t *end,
                                         double *out_ms) {
  xr_status_t status = cuda_event_synchronize(start);
  if (status == XR_OK) status = cuda_event_synchronize(end);
  if (status != XR_OK) return status;
  float ms = 0;
  const char *call = cu.cuEventElapsedTime_v2 ? "cuEventElapsedTime_v2" : "cuEventElapsedTime";
  int result = cu.cuEventElapsedTime_v2
                   ? cu.cuEventElapsedTime_v2(&ms, ((cuda_event_t *)start)->event,
                                              ((cuda_event_t *)end)->event)
                   : cu.cuEventElapsedTime(&ms, ((cuda_event_t *)start)->event,
                                           ((cuda_event_t *)end)->event);
  if (result != CU_SUCCESS) return cu_fail(XR_DEVICE_ERROR, start->device->spec, call, result);
  *out_ms = ms;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Executables, kernels, dispatch                                                             */

/* Loads an image (fatbin, cubin, or NUL-terminated PTX) into a module. */
static xr_status_t load_module(cuda_device_t *device, const char *label, const void *image,
                               void **out_module) {
  int result = cu.cuModuleLoadData(out_module, image);
  if (result == CU_SUCCESS) return XR_OK;
  const char *spec = device->base.spec;
  if (result == CU_ERROR_NO_BINARY_FOR_GPU || result == CU_ERROR_UNSUPPORTED_PTX_VERSION) {
    return xr_error(XR_UNAVAILABLE,
                    "%s: %s has no usable code for %s (%s): cuModuleLoadData: %s (%d)", spec,
                    label, device->target, device->properties.name, cu_error_name(result), result);
  }
  if (result == CU_ERROR_INVALID_IMAGE || result == CU_ERROR_INVALID_PTX ||
      result == CU_ERROR_INVALID_VALUE) {
    return xr_error(XR_INVALID_ARGUMENT, "%s: loading %s: cuModuleLoadData: %s (%d)", spec, label,
                    cu_error_name(result), result);
  }
  return xr_error_prefix(cu_fail(cu_status_for(result), spec, "cuModuleLoadData", result),
                         "loading %s: ", label);
}

/* ELF (cubin) and fatbin images carry their own size; anything else is taken as PTX text,
 * which cuModuleLoadData wants NUL-terminated. */
static bool is_binary_image(const void *data, size_t size) {
  static const unsigned char elf[4] = {0x7f, 'E', 'L', 'F'};
  static const unsigned char fatbin[4] = {0x50, 0xed, 0x55, 0xba}; /* 0xba55ed50 */
  return size >= 4 && (memcmp(data, elf, 4) == 0 || memcmp(data, fatbin, 4) == 0);
}

static xr_status_t cuda_executable_create(xr_hal_device_t *base,
                                          const xr_hal_executable_params_t *params,
                                          xr_hal_executable_t **out) {
  cuda_device_t *device = cuda_device(base);
  const char *label = params->label ? params->label : "program";
  if (params->format != XR_HAL_EXECUTABLE_CUDA_FATBIN &&
      params->format != XR_HAL_EXECUTABLE_CUDA_SOURCE) {
    return xr_error(XR_UNIMPLEMENTED,
                    "%s: %s: the cuda driver loads fatbin/cubin/PTX or compiles CUDA C++ source",
                    base->spec, label);
  }
  /* A private, NUL-terminated, malloc-aligned copy of the image. */
  void *image = NULL;
  size_t image_size = 0;
  xr_status_t status = XR_OK;
  if (params->format == XR_HAL_EXECUTABLE_CUDA_SOURCE) {
    status = xr_gpu_compile(device->target, label, params->data, params->size, params->options,
                            &image, &image_size);
    if (status != XR_OK) return xr_error_prefix(status, "%s: ", base->spec);
  } else {
    bool binary = is_binary_image(params->data, params->size);
    image = malloc(params->size + 1);
    if (!image) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", base->spec);
    memcpy(image, params->data, params->size);
    if (!binary) ((char *)image)[params->size] = '\0';
  }
  cuda_executable_t *executable = calloc(1, sizeof *executable);
  if (!executable) status = xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", base->spec);
  if (status == XR_OK) status = make_current(base);
  if (status == XR_OK) status = load_module(device, label, image, &executable->module);
  free(image);
  if (status != XR_OK) {
    free(executable);
    return status;
  }
  executable->base.device = base;
  pthread_mutex_init(&executable->mutex, NULL);
  *out = &executable->base;
  return XR_OK;
}

static void cuda_executable_destroy(xr_hal_executable_t *base) {
  cuda_executable_t *executable = (cuda_executable_t *)base;
  for (cuda_kernel_t *kernel = executable->kernels, *next; kernel; kernel = next) {
    next = kernel->next;
    free(kernel);
  }
  if (make_current(base->device) == XR_OK) {
    /* hal.h allows dispatches in flight; unloading waits for nothing, so wait here. */
    cu.cuCtxSynchronize();
    cu.cuModuleUnload(executable->module);
  }
  pthread_mutex_destroy(&executable->mutex);
  free(executable);
}

static xr_status_t cuda_kernel_lookup(xr_hal_executable_t *base, const char *name,
                                      xr_hal_kernel_t **out) {
  cuda_executable_t *executable = (cuda_executable_t *)base;
  const char *spec = base->device->spec;
  xr_status_t status = make_current(base->device);
  if (status != XR_OK) return status;
  pthread_mutex_lock(&executable->mutex);
  cuda_kernel_t *kernel = executable->kernels;
  while (kernel && strcmp(kernel->name, name) != 0) kernel = kernel->next;
  if (!kernel) {
    size_t length = strlen(name);
    kernel = calloc(1, sizeof *kernel + length + 1);
    int result = CU_SUCCESS;
    if (!kernel) {
      status = xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", spec);
    } else if ((result = cu.cuModuleGetFunction(&kernel->function, executable->module, name)) !=
               CU_SUCCESS) {
      status = result == CU_ERROR_NOT_FOUND
                   ? xr_error(XR_NOT_FOUND,
                              "%s: kernel \"%s\" not found (is it extern \"C\"?): "
                              "cuModuleGetFunction: %s (%d)",
                              spec, name, cu_error_name(result), result)
                   : cu_fail(cu_status_for(result), spec, "cuModuleGetFunction", result);
      free(kernel);
      kernel = NULL;
    } else {
      memcpy(kernel->name, name, length + 1);
      kernel->base.executable = base;
      kernel->next = executable->kernels;
      executable->kernels = kernel;
    }
  }
  pthread_mutex_unlock(&executable->mutex);
  if (status == XR_OK) *out = &kernel->base;
  return status;
}

static xr_status_t cuda_stream_dispatch(xr_hal_stream_t *stream, xr_hal_kernel_t *base,
                                        const xr_hal_dispatch_t *dispatch) {
  cuda_kernel_t *kernel = (cuda_kernel_t *)base;
  const char *spec = stream->device->spec;
  if (dispatch->arg_count > MAX_KERNEL_ARGS) {
    return xr_error(XR_INVALID_ARGUMENT, "%s: kernel %s: %zu arguments (at most %d)", spec,
                    kernel->name, dispatch->arg_count, MAX_KERNEL_ARGS);
  }
  /* cuLaunchKernel copies every argument at the call, so these may live on the stack. */
  uint64_t addresses[MAX_KERNEL_ARGS];
  void *values[MAX_KERNEL_ARGS];
  for (size_t i = 0; i < dispatch->arg_count; i++) {
    const xr_hal_kernel_arg_t *arg = &dispatch->args[i];
    if (arg->kind == XR_HAL_ARG_BUFFER) {
      addresses[i] = arg->buffer->size ? address_of(arg->buffer->root, arg->buffer->offset) : 0;
      values[i] = &addresses[i];
    } else if (arg->kind == XR_HAL_ARG_BYTES) {
      values[i] = (void *)arg->bytes;
    } else {
      return xr_error(XR_INVALID_ARGUMENT,
                      "%s: kernel %s args[%zu]: CUDA kernels take no local-memory arguments; "
                      "use the dispatch's shared_memory_bytes (extern __shared__)",
                      spec, kernel->name, i);
    }
  }
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  if (dispatch->shared_memory_bytes > DEFAULT_SHARED_MEMORY_LIMIT && cu.cuFuncSetAttribute) {
    /* Above 48 KiB a kernel must opt in to larger dynamic shared memory. */
    cu.cuFuncSetAttribute(kernel->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                          (int)dispatch->shared_memory_bytes);
  }
  int result = cu.cuLaunchKernel(kernel->function, dispatch->grid[0], dispatch->grid[1],
                                 dispatch->grid[2], dispatch->block[0], dispatch->block[1],
                                 dispatch->block[2], dispatch->shared_memory_bytes,
                                 stream_of(stream), values, NULL);
  if (result == CU_ERROR_INVALID_VALUE || result == CU_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: kernel %s: grid %ux%ux%u, block %ux%ux%u, %u bytes shared: "
                    "cuLaunchKernel: %s (%d)",
                    spec, kernel->name, dispatch->grid[0], dispatch->grid[1], dispatch->grid[2],
                    dispatch->block[0], dispatch->block[1], dispatch->block[2],
                    dispatch->shared_memory_bytes, cu_error_name(result), result);
  }
  return submitted(stream, "cuLaunchKernel", result);
}

/* ------------------------------------------------------------------------------------------ */
/* Device                                                                                     */

static void cuda_device_destroy(xr_hal_device_t *base) {
  cuda_device_t *device = cuda_device(base);
  cu.cuDevicePrimaryCtxRelease_v2(device->device);
  free(device);
}

static void *cuda_device_native(xr_hal_device_t *base) {
  return make_current(base) == XR_OK ? cuda_device(base)->context : NULL;
}

static void cuda_device_properties(xr_hal_device_t *base, xr_hal_device_properties_t *out) {
  *out = cuda_device(base)->properties;
}

static int attribute(int device, int which) {
  int value = 0;
  if (cu.cuDeviceGetAttribute(&value, which, device) != CU_SUCCESS) value = 0;
  return value;
}

/* FP32 lanes per SM by compute capability: 64 on Volta, Turing and A100, 128 since GA10x. */
static int fp32_lanes_per_sm(int major, int minor) {
  if (major >= 9 || (major == 8 && minor > 0)) return 128;
  return 64;
}

static void query_properties(cuda_device_t *device) {
  xr_hal_device_properties_t *p = &device->properties;
  int id = device->device;
  if (cu.cuDeviceGetName(p->name, (int)sizeof p->name - 1, id) != CU_SUCCESS) p->name[0] = '\0';
  xr_hal_copy_string(p->vendor, sizeof p->vendor, "NVIDIA");
  int major = attribute(id, CU_ATTR_COMPUTE_CAPABILITY_MAJOR);
  int minor = attribute(id, CU_ATTR_COMPUTE_CAPABILITY_MINOR);
  snprintf(device->target, sizeof device->target, "sm_%d%d", major, minor);
  snprintf(p->driver_version, sizeof p->driver_version, "CUDA %d.%d (%.100s)",
           cu_driver_version / 1000, cu_driver_version % 1000 / 10, cu_library.path);
  char compiler[256];
  xr_gpu_compiler_describe(XR_GPU_COMPILER_NVRTC, compiler, sizeof compiler);
  snprintf(p->runtime_version, sizeof p->runtime_version, "compute capability %d.%d (%s); %.80s",
           major, minor, device->target, compiler);
  size_t memory = 0;
  if (cu.cuDeviceTotalMem_v2(&memory, id) != CU_SUCCESS) memory = 0;
  int sms = attribute(id, CU_ATTR_MULTIPROCESSOR_COUNT);
  int clock_khz = attribute(id, CU_ATTR_CLOCK_RATE);
  int memory_clock_khz = attribute(id, CU_ATTR_MEMORY_CLOCK_RATE);
  int bus_bits = attribute(id, CU_ATTR_GLOBAL_MEMORY_BUS_WIDTH);
  p->is_gpu = true;
  p->host_addressable = false;
  p->memory_bytes = memory;
  p->max_allocation_bytes = memory;
  p->compute_units = (uint32_t)sms;
  p->clock_mhz = (uint32_t)(clock_khz / 1000);
  p->simd_width = (uint32_t)attribute(id, CU_ATTR_WARP_SIZE);
  p->max_work_group_size = (uint64_t)attribute(id, CU_ATTR_MAX_THREADS_PER_BLOCK);
  p->last_level_cache_bytes = (uint64_t)attribute(id, CU_ATTR_L2_CACHE_SIZE);
  if (xr_datasheet_lookup(p->name, p)) return;
  /* Unknown part: vector peaks from units x clock x lanes x 2 (FMA), bandwidth from the
   * memory clock and bus width (double data rate). Tensor-core peaks stay unknown. */
  double fp32 = (double)sms * clock_khz * 1e3 * fp32_lanes_per_sm(major, minor) * 2.0;
  if (fp32 > 0) {
    /* Data-centre parts (x.0 since Volta) run fp64 at half rate, others at 1/64. */
    double fp64 = minor == 0 && major >= 7 ? fp32 / 2 : fp32 / 64;
    p->peak_flops[XR_HAL_PEAK_FP32] = (xr_hal_figure_t){fp32, XR_HAL_FIGURE_ESTIMATED};
    p->peak_flops[XR_HAL_PEAK_FP64] = (xr_hal_figure_t){fp64, XR_HAL_FIGURE_ESTIMATED};
  }
  double bandwidth = 2.0 * memory_clock_khz * 1e3 * bus_bits / 8.0;
  if (bandwidth > 0) p->memory_bandwidth = (xr_hal_figure_t){bandwidth, XR_HAL_FIGURE_ESTIMATED};
}

static const xr_hal_device_vtable_t cuda_vtable = {
    .device_destroy = cuda_device_destroy,
    .device_properties = cuda_device_properties,
    .buffer_alloc = cuda_buffer_alloc,
    .buffer_destroy = cuda_buffer_destroy,
    .buffer_native = cuda_buffer_native,
    .stream_native = cuda_stream_native,
    .device_native = cuda_device_native,
    .stream_create = cuda_stream_create,
    .stream_destroy = cuda_stream_destroy,
    .stream_synchronize = cuda_stream_synchronize,
    .stream_write = cuda_stream_write,
    .stream_read = cuda_stream_read,
    .stream_copy = cuda_stream_copy,
    .stream_fill = cuda_stream_fill,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_synchronize = cuda_event_synchronize,
    .stream_wait_event = cuda_stream_wait_event,
    .event_elapsed_ms = cuda_event_elapsed_ms,
    .executable_create = cuda_executable_create,
    .executable_destroy = cuda_executable_destroy,
    .kernel_lookup = cuda_kernel_lookup,
    .stream_dispatch = cuda_stream_dispatch,
};

extern const xr_hal_driver_t xr_hal_cuda_driver;

static xr_status_t cuda_device_create(int ordinal, xr_hal_device_t **out) {
  cuda_device_t *device = calloc(1, sizeof *device);
  if (!device) return xr_error(XR_RESOURCE_EXHAUSTED, "cuda: out of host memory");
  xr_status_t status =
      xr_hal_device_base_init(&device->base, &cuda_vtable, &xr_hal_cuda_driver, ordinal);
  if (status != XR_OK) {
    free(device);
    return status;
  }
  const char *call = "cuDeviceGet";
  int result = cu.cuDeviceGet(&device->device, ordinal);
  if (result == CU_SUCCESS) {
    call = "cuDevicePrimaryCtxRetain";
    result = cu.cuDevicePrimaryCtxRetain(&device->context, device->device);
  }
  if (result != CU_SUCCESS) {
    status = cu_fail(result == CU_ERROR_OUT_OF_MEMORY ? XR_RESOURCE_EXHAUSTED : XR_UNAVAILABLE,
                     device->base.spec, call, result);
    pthread_mutex_destroy(&device->base.mutex);
    free(device);
    return status;
  }
  query_properties(device);
  *out = &device->base;
  return XR_OK;
}

const xr_hal_driver_t xr_hal_cuda_driver = {
    .name = "cuda",
    .probe = cuda_probe,
    .device_create = cuda_device_create,
};
