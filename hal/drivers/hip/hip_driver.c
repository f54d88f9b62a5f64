/* hip driver: the HIP runtime (libamdhip64.so.6, .so.5) opened with dlopen through the symbol
 * table in hip_symbols.h; the mirror image of the cuda driver. The HIP runtime keeps a current
 * device per thread, so every entry selects the device first (hipSetDevice, a thread-local
 * store). Streams are non-blocking HIP streams, events HIP events with timing, buffers
 * hipMalloc allocations addressed as base + offset. Device code comes as a code object
 * (hipModuleLoadData) or as CUDA C++ compiled at run time by hiprtc for the device's own
 * gcnArchName (hal/core/gpu_compiler.h; kernels/gpu/hip_compat.h maps the CUDA spellings).
 *
 * ROCm 5 and 6 differ in hipDeviceProp_t's layout and in hipDeviceAttribute_t's AMD-specific
 * values, so scalar properties come from hipDeviceGetAttribute with CUDA-compatible attribute
 * numbers (kept stable since ROCm 5.0: retired ones became "Unused" placeholders), and only
 * gcnArchName is read from a struct: the frozen ROCm 5 layout (hipDeviceProp_tR0000), which
 * ROCm 6 and later still export as hipGetDevicePropertiesR0000 and hipGetDeviceProperties. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/core/datasheet.h"
#include "hal/core/driver.h"
#include "base/dynload.h"
#include "hal/drivers/hip/hip_symbols.h"
#include "hal/core/gpu_compiler.h"

/* From hip_runtime_api.h (values fixed by the ABI). */
enum {
  HIP_SUCCESS = 0,
  HIP_ERROR_INVALID_VALUE = 1,
  HIP_ERROR_OUT_OF_MEMORY = 2,
  HIP_ERROR_NO_DEVICE = 100,
  HIP_ERROR_INVALID_IMAGE = 200,
  HIP_ERROR_NO_BINARY_FOR_GPU = 209,
  HIP_ERROR_INVALID_KERNEL_FILE = 218,
  HIP_ERROR_NOT_FOUND = 500,
  HIP_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  HIP_STREAM_NON_BLOCKING = 1,
  HIP_EVENT_DEFAULT = 0,
  HIP_MEMCPY_HOST_TO_DEVICE = 1,
  HIP_MEMCPY_DEVICE_TO_HOST = 2,
  HIP_MEMCPY_DEVICE_TO_DEVICE = 3,
  /* hipDeviceAttribute_t, CUDA-compatible block (same numbers in ROCm 5.0 to 7.x). */
  HIP_ATTR_CLOCK_RATE = 5,
  HIP_ATTR_L2_CACHE_SIZE = 19,
  HIP_ATTR_MAX_THREADS_PER_BLOCK = 56,
  HIP_ATTR_MEMORY_BUS_WIDTH = 59,
  HIP_ATTR_MEMORY_CLOCK_RATE = 60,
  HIP_ATTR_MULTIPROCESSOR_COUNT = 63,
  HIP_ATTR_WARP_SIZE = 87,
};

/* The leading fields of hipDeviceProp_tR0000 (ROCm 5's hipDeviceProp_t) up to gcnArchName. */
typedef struct hip_properties_r0000 {
  char name[256];
  size_t total_global_memory, shared_memory_per_block;
  int registers_per_block, warp_size, max_threads_per_block, max_threads_dim[3], max_grid[3];
  int clock_rate, memory_clock_rate, memory_bus_width;
  size_t total_constant_memory;
  int major, minor, multiprocessor_count, l2_cache_size, max_threads_per_multiprocessor;
  int compute_mode, clock_instruction_rate;
  unsigned int arch_flags; /* hipDeviceArch_t: 17 one-bit fields */
  int concurrent_kernels, pci_domain, pci_bus, pci_device;
  size_t max_shared_memory_per_multiprocessor;
  int is_multi_gpu_board, can_map_host_memory, gcn_arch;
  char gcn_arch_name[256];
} hip_properties_r0000_t;
_Static_assert(offsetof(hip_properties_r0000_t, gcn_arch_name) == 396,
               "hipDeviceProp_tR0000 puts gcnArchName at byte 396");
/* The whole R0000 struct is 792 bytes; the runtime writes all of it. */
#define HIP_PROPERTIES_R0000_BYTES 792

#define MAX_KERNEL_ARGS 64

/* ------------------------------------------------------------------------------------------ */
/* Runtime loading                                                                            */

typedef struct hip_symbols {
  XR_HIP_SYMBOLS(XR_DYNLOAD_FIELD)
} hip_symbols_t;

static const xr_dynload_symbol_t hip_symbol_list[] = {
#define HIP_SYMBOL(need, ret, name, params) XR_DYNLOAD_SYMBOL(hip_symbols_t, need, name, name)
    XR_HIP_SYMBOLS(HIP_SYMBOL)
#undef HIP_SYMBOL
};

/* Written once by the probe (under the registry's lock), read-only afterwards; the library
 * stays loaded for the life of the process once a device was found. */
static hip_symbols_t hip;
static xr_dynload_library_t hip_library;
static int hip_runtime_version; /* 60241234-style: major * 10000000 + minor * 100000 + patch */

static const char *hip_error_name(int code) {
  const char *name = hip.hipGetErrorName ? hip.hipGetErrorName(code) : NULL;
  return name ? name : "HIP error";
}

/* "hip:0: hipMalloc: hipErrorOutOfMemory (2)" as the sentence of `status`. */
static xr_status_t hip_fail(xr_status_t status, const char *spec, const char *call, int code) {
  return xr_error(status, "%s: %s: %s (%d)", spec, call, hip_error_name(code), code);
}

static xr_status_t hip_status_for(int code) {
  return code == HIP_ERROR_OUT_OF_MEMORY ? XR_RESOURCE_EXHAUSTED : XR_DEVICE_ERROR;
}

/* Appends what serves kernels besides the runtime: the run-time compiler and vendor BLAS. */
static void describe_libraries(char *reason, size_t capacity) {
  char compiler[512];
  xr_gpu_compiler_describe(XR_GPU_COMPILER_HIPRTC, compiler, sizeof compiler);
  xr_dynload_report_append(reason, capacity, "kernels: %s", compiler);
  static const char *const hipblaslt[] = {"libhipblaslt.so.1", "libhipblaslt.so.0"};
  static const char *const rocblas[] = {"librocblas.so.5", "librocblas.so.4", "librocblas.so.3"};
  {
    const xr_dynload_spec_t spec = {"hipBLASLt", "XR_HIPBLASLT_LIBRARY", hipblaslt, sizeof hipblaslt / sizeof hipblaslt[0]};
    xr_dynload_probe(&spec, reason, capacity);
  }
  {
    const xr_dynload_spec_t spec = {"rocBLAS", "XR_ROCBLAS_LIBRARY", rocblas, sizeof rocblas / sizeof rocblas[0]};
    xr_dynload_probe(&spec, reason, capacity);
  }
}

static xr_status_t hip_probe(char *reason, size_t capacity, int *out_device_count) {
  static const char *const candidates[] = {"libamdhip64.so.6", "libamdhip64.so.5",
                                            "libamdhip64.so"};
  static const xr_dynload_spec_t spec = {"HIP", "XR_HIP_LIBRARY", candidates,
                                         sizeof candidates / sizeof candidates[0]};
  *out_device_count = 0;
  xr_status_t status = xr_dynload_open(&spec, hip_symbol_list, sizeof hip_symbol_list / sizeof hip_symbol_list[0], &hip, &hip_library,
                                       reason, capacity);
  if (status != XR_OK) return XR_UNAVAILABLE;

  int count = 0;
  int result = hip.hipGetDeviceCount(&count);
  if (result == HIP_SUCCESS && count == 0) result = HIP_ERROR_NO_DEVICE;
  if (result != HIP_SUCCESS) {
    xr_dynload_report_append(reason, capacity, "hipGetDeviceCount: %s (%d)",
                             hip_error_name(result), result);
    xr_dynload_close(&hip_library);
    memset(&hip, 0, sizeof hip);
    return XR_UNAVAILABLE;
  }
  if (!hip.hipGetDevicePropertiesR0000 && !hip.hipGetDeviceProperties) {
    xr_dynload_report_append(reason, capacity,
                             "neither hipGetDevicePropertiesR0000 nor hipGetDeviceProperties is "
                             "exported: cannot read gcnArchName");
    xr_dynload_close(&hip_library);
    memset(&hip, 0, sizeof hip);
    return XR_UNAVAILABLE;
  }
  hip.hipRuntimeGetVersion(&hip_runtime_version);
  xr_dynload_report_append(reason, capacity, "HIP %d.%d runtime; %d device%s",
                           hip_runtime_version / 10000000, hip_runtime_version / 100000 % 100,
                           count, count == 1 ? "" : "s");
  describe_libraries(reason, capacity);
  *out_device_count = count;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Handles                                                                                    */

typedef struct hip_device {
  xr_hal_device_t base;
  int ordinal;
  char target[256];         /* gcnArchName, "gfx90a:sramecc+:xnack-": what hiprtc compiles for */
  xr_hal_device_properties_t properties; /* queried once at creation */
} hip_device_t;

typedef struct hip_buffer {
  xr_hal_buffer_t base;
  char *pointer;            /* NULL for an empty buffer */
} hip_buffer_t;

typedef struct hip_stream {
  xr_hal_stream_t base;
  void *stream;
} hip_stream_t;

typedef struct hip_event {
  xr_hal_event_t base;
  void *event;
} hip_event_t;

typedef struct hip_kernel {
  xr_hal_kernel_t base;
  void *function;
  struct hip_kernel *next;
  char name[];
} hip_kernel_t;

typedef struct hip_executable {
  xr_hal_executable_t base;
  void *module;
  pthread_mutex_t mutex;    /* guards kernels */
  hip_kernel_t *kernels;
} hip_executable_t;

static hip_device_t *hip_device(xr_hal_device_t *device) { return (hip_device_t *)device; }
static void *address_of(xr_hal_buffer_t *root, size_t offset) {
  return ((hip_buffer_t *)root)->pointer + offset;
}
static void *stream_of(xr_hal_stream_t *stream) { return ((hip_stream_t *)stream)->stream; }

/* Selects the device on this thread (a thread-local store in the runtime). */
static xr_status_t make_current(xr_hal_device_t *base) {
  int result = hip.hipSetDevice(hip_device(base)->ordinal);
  if (result != HIP_SUCCESS) return hip_fail(XR_DEVICE_ERROR, base->spec, "hipSetDevice", result);
  return XR_OK;
}

static xr_status_t submitted(xr_hal_stream_t *stream, const char *call, int result) {
  if (result == HIP_SUCCESS) return XR_OK;
  return hip_fail(hip_status_for(result), stream->device->spec, call, result);
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers                                                                                    */

static xr_status_t hip_buffer_alloc(xr_hal_device_t *base, size_t size, xr_hal_buffer_t **out) {
  const xr_hal_device_properties_t *properties = &hip_device(base)->properties;
  if (size > properties->memory_bytes) {
    return xr_error(XR_RESOURCE_EXHAUSTED,
                    "%s: cannot allocate %zu bytes: the device has %llu bytes of memory",
                    base->spec, size, (unsigned long long)properties->memory_bytes);
  }
  hip_buffer_t *buffer = calloc(1, sizeof *buffer);
  if (!buffer) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", base->spec);
  if (size > 0) {
    xr_status_t status = make_current(base);
    int result = status == XR_OK ? hip.hipMalloc((void **)&buffer->pointer, size) : HIP_SUCCESS;
    if (status == XR_OK && result != HIP_SUCCESS) {
      status = xr_error_prefix(hip_fail(hip_status_for(result), base->spec, "hipMalloc", result),
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

static void hip_buffer_destroy(xr_hal_buffer_t *root) {
  hip_buffer_t *buffer = (hip_buffer_t *)root;
  if (buffer->pointer && make_current(root->device) == XR_OK) {
    /* Work already queued may still use the memory (hal.h promises it stays valid). */
    hip.hipDeviceSynchronize();
    hip.hipFree(buffer->pointer);
  }
  free(buffer);
}

/* Native handles for vendor libraries (hipBLASLt, rocBLAS): the allocation's device pointer and
 * the hipStream_t. There is no device handle: the HIP runtime selects devices by ordinal. */
static void *hip_buffer_native(xr_hal_buffer_t *root) { return ((hip_buffer_t *)root)->pointer; }

/* ------------------------------------------------------------------------------------------ */
/* Streams and transfers                                                                      */

static xr_status_t hip_stream_create(xr_hal_device_t *device, xr_hal_stream_t **out) {
  xr_status_t status = make_current(device);
  if (status != XR_OK) return status;
  hip_stream_t *stream = calloc(1, sizeof *stream);
  if (!stream) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", device->spec);
  int result = hip.hipStreamCreateWithFlags(&stream->stream, HIP_STREAM_NON_BLOCKING);
  if (result != HIP_SUCCESS) {
    free(stream);
    return hip_fail(hip_status_for(result), device->spec, "hipStreamCreateWithFlags", result);
  }
  stream->base.device = device;
  *out = &stream->base;
  return XR_OK;
}

static void hip_stream_destroy(xr_hal_stream_t *base) {
  hip_stream_t *stream = (hip_stream_t *)base;
  if (make_current(base->device) == XR_OK) {
    hip.hipStreamSynchronize(stream->stream);
    hip.hipStreamDestroy(stream->stream);
  }
  free(stream);
}

/* The hipStream_t, with the device made current: hipBLASLt runs on the current device. */
static void *hip_stream_native(xr_hal_stream_t *stream) {
  return make_current(stream->device) == XR_OK ? stream_of(stream) : NULL;
}

static xr_status_t hip_stream_synchronize(xr_hal_stream_t *stream) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  int result = hip.hipStreamSynchronize(stream_of(stream));
  if (result != HIP_SUCCESS) {
    return hip_fail(XR_DEVICE_ERROR, stream->device->spec, "hipStreamSynchronize", result);
  }
  return XR_OK;
}

static xr_status_t hip_stream_write(xr_hal_stream_t *stream, xr_hal_buffer_t *dst,
                                    size_t dst_offset, const void *src, size_t size) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream, "hipMemcpyAsync(HostToDevice)",
                   hip.hipMemcpyAsync(address_of(dst, dst_offset), src, size,
                                      HIP_MEMCPY_HOST_TO_DEVICE, stream_of(stream)));
}

static xr_status_t hip_stream_read(xr_hal_stream_t *stream, void *dst, xr_hal_buffer_t *src,
                                   size_t src_offset, size_t size) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream, "hipMemcpyAsync(DeviceToHost)",
                   hip.hipMemcpyAsync(dst, address_of(src, src_offset), size,
                                      HIP_MEMCPY_DEVICE_TO_HOST, stream_of(stream)));
}

static xr_status_t hip_stream_copy(xr_hal_stream_t *stream, xr_hal_buffer_t *dst,
                                   size_t dst_offset, xr_hal_buffer_t *src, size_t src_offset,
                                   size_t size) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream, "hipMemcpyAsync(DeviceToDevice)",
                   hip.hipMemcpyAsync(address_of(dst, dst_offset), address_of(src, src_offset),
                                      size, HIP_MEMCPY_DEVICE_TO_DEVICE, stream_of(stream)));
}

static xr_status_t hip_stream_fill(xr_hal_stream_t *stream, xr_hal_buffer_t *buffer,
                                   size_t offset, size_t size, uint32_t pattern,
                                   size_t pattern_size) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  void *address = address_of(buffer, offset);
  void *queue = stream_of(stream);
  if (pattern_size == 1) {
    return submitted(stream, "hipMemsetD8Async",
                     hip.hipMemsetD8Async(address, (unsigned char)pattern, size, queue));
  }
  if (pattern_size == 2) {
    return submitted(stream, "hipMemsetD16Async",
                     hip.hipMemsetD16Async(address, (unsigned short)pattern, size / 2, queue));
  }
  int value;
  memcpy(&value, &pattern, sizeof value);
  return submitted(stream, "hipMemsetD32Async",
                   hip.hipMemsetD32Async(address, value, size / 4, queue));
}

/* ------------------------------------------------------------------------------------------ */
/* Events                                                                                     */

static xr_status_t hip_event_create(xr_hal_device_t *device, xr_hal_event_t **out) {
  xr_status_t status = make_current(device);
  if (status != XR_OK) return status;
  hip_event_t *event = calloc(1, sizeof *event);
  if (!event) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", device->spec);
  int result = hip.hipEventCreateWithFlags(&event->event, HIP_EVENT_DEFAULT);
  if (result != HIP_SUCCESS) {
    free(event);
    return hip_fail(hip_status_for(result), device->spec, "hipEventCreateWithFlags", result);
  }
  event->base.device = device;
  *out = &event->base;
  return XR_OK;
}

static void hip_event_destroy(xr_hal_event_t *base) {
  hip_event_t *event = (hip_event_t *)base;
  if (make_current(base->device) == XR_OK) hip.hipEventDestroy(event->event);
  free(event);
}

static xr_status_t hip_event_record(xr_hal_event_t *base, xr_hal_stream_t *stream) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream, "hipEventRecord",
                   hip.hipEventRecord(((hip_event_t *)base)->event, stream_of(stream)));
}

static xr_status_t hip_event_synchronize(xr_hal_event_t *base) {
  xr_status_t status = make_current(base->device);
  if (status != XR_OK) return status;
  int result = hip.hipEventSynchronize(((hip_event_t *)base)->event);
  if (result != HIP_SUCCESS) {
    return hip_fail(XR_DEVICE_ERROR, base->device->spec, "hipEventSynchronize", result);
  }
  return XR_OK;
}

static xr_status_t hip_stream_wait_event(xr_hal_stream_t *stream, xr_hal_event_t *base) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream, "hipStreamWaitEvent",
                   hip.hipStreamWaitEvent(stream_of(stream), ((hip_event_t *)base)->event, 0));
}

static xr_status_t hip_event_elapsed_ms(xr_hal_event_t *start, xr_hal_event_t *end,
                                        double *out_ms) {
  xr_status_t status = hip_event_synchronize(start);
  if (status == XR_OK) status = hip_event_synchronize(end);
  if (status != XR_OK) return status;
  float ms = 0;
  int result = hip.hipEventElapsedTime(&ms, ((hip_event_t *)start)->event,
                                       ((hip_event_t *)end)->event);
  if (result != HIP_SUCCESS) {
    return hip_fail(XR_DEVICE_ERROR, start->device->spec, "hipEventElapsedTime", result);
  }
  *out_ms = ms;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Executables, kernels, dispatch                                                             */

static xr_status_t load_module(hip_device_t *device, const char *label, const void *image,
                               void **out_module) {
  int result = hip.hipModuleLoadData(out_module, image);
  if (result == HIP_SUCCESS) return XR_OK;
  const char *spec = device->base.spec;
  if (result == HIP_ERROR_NO_BINARY_FOR_GPU) {
    return xr_error(XR_UNAVAILABLE,
                    "%s: %s has no usable code for %s (%s): hipModuleLoadData: %s (%d)", spec,
                    label, device->target, device->properties.name, hip_error_name(result),
                    result);
  }
  if (result == HIP_ERROR_INVALID_IMAGE || result == HIP_ERROR_INVALID_KERNEL_FILE ||
      result == HIP_ERROR_INVALID_VALUE) {
    return xr_error(XR_INVALID_ARGUMENT, "%s: loading %s: hipModuleLoadData: %s (%d)", spec,
                    label, hip_error_name(result), result);
  }
  return xr_error_prefix(hip_fail(hip_status_for(result), spec, "hipModuleLoadData", result),
                         "loading %s: ", label);
}

static xr_status_t hip_executable_create(xr_hal_device_t *base,
                                         const xr_hal_executable_params_t *params,
                                         xr_hal_executable_t **out) {
  hip_device_t *device = hip_device(base);
  const char *label = params->label ? params->label : "program";
  if (params->format != XR_HAL_EXECUTABLE_HIP_CODE_OBJECT &&
      params->format != XR_HAL_EXECUTABLE_CUDA_SOURCE) {
    return xr_error(XR_UNIMPLEMENTED,
                    "%s: %s: the hip driver loads code objects or compiles CUDA C++ source",
                    base->spec, label);
  }
  void *image = NULL;
  size_t image_size = 0;
  xr_status_t status = XR_OK;
  if (params->format == XR_HAL_EXECUTABLE_CUDA_SOURCE) {
    status = xr_gpu_compile(device->target, label, params->data, params->size, params->options,
                            &image, &image_size);
    if (status != XR_OK) return xr_error_prefix(status, "%s: ", base->spec);
  } else {
    /* A private, malloc-aligned copy of the code object. */
    image = malloc(params->size);
    if (!image) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", base->spec);
    memcpy(image, params->data, params->size);
  }
  hip_executable_t *executable = calloc(1, sizeof *executable);
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

static void hip_executable_destroy(xr_hal_executable_t *base) {
  hip_executable_t *executable = (hip_executable_t *)base;
  for (hip_kernel_t *kernel = executable->kernels, *next; kernel; kernel = next) {
    next = kernel->next;
    free(kernel);
  }
  if (make_current(base->device) == XR_OK) {
    /* hal.h allows dispatches in flight; unloading waits for nothing, so wait here. */
    hip.hipDeviceSynchronize();
    hip.hipModuleUnload(executable->module);
  }
  pthread_mutex_destroy(&executable->mutex);
  free(executable);
}

static xr_status_t hip_kernel_lookup(xr_hal_executable_t *base, const char *name,
                                     xr_hal_kernel_t **out) {
  hip_executable_t *executable = (hip_executable_t *)base;
  const char *spec = base->device->spec;
  xr_status_t status = make_current(base->device);
  if (status != XR_OK) return status;
  pthread_mutex_lock(&executable->mutex);
  hip_kernel_t *kernel = executable->kernels;
  while (kernel && strcmp(kernel->name, name) != 0) kernel = kernel->next;
  if (!kernel) {
    size_t length = strlen(name);
    kernel = calloc(1, sizeof *kernel + length + 1);
    int result = HIP_SUCCESS;
    if (!kernel) {
      status = xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", spec);
    } else if ((result = hip.hipModuleGetFunction(&kernel->function, executable->module, name)) !=
               HIP_SUCCESS) {
      status = result == HIP_ERROR_NOT_FOUND || result == HIP_ERROR_INVALID_VALUE
                   ? xr_error(XR_NOT_FOUND,
                              "%s: kernel \"%s\" not found (is it extern \"C\"?): "
                              "hipModuleGetFunction: %s (%d)",
                              spec, name, hip_error_name(result), result)
                   : hip_fail(hip_status_for(result), spec, "hipModuleGetFunction", result);
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

static xr_status_t hip_stream_dispatch(xr_hal_stream_t *stream, xr_hal_kernel_t *base,
                                       const xr_hal_dispatch_t *dispatch) {
  hip_kernel_t *kernel = (hip_kernel_t *)base;
  const char *spec = stream->device->spec;
  if (dispatch->arg_count > MAX_KERNEL_ARGS) {
    return xr_error(XR_INVALID_ARGUMENT, "%s: kernel %s: %zu arguments (at most %d)", spec,
                    kernel->name, dispatch->arg_count, MAX_KERNEL_ARGS);
  }
  /* hipModuleLaunchKernel copies every argument at the call. */
  void *addresses[MAX_KERNEL_ARGS];
  void *values[MAX_KERNEL_ARGS];
  for (size_t i = 0; i < dispatch->arg_count; i++) {
    const xr_hal_kernel_arg_t *arg = &dispatch->args[i];
    if (arg->kind == XR_HAL_ARG_BUFFER) {
      addresses[i] = arg->buffer->size ? address_of(arg->buffer->root, arg->buffer->offset) : NULL;
      values[i] = &addresses[i];
    } else if (arg->kind == XR_HAL_ARG_BYTES) {
      values[i] = (void *)arg->bytes;
    } else {
      return xr_error(XR_INVALID_ARGUMENT,
                      "%s: kernel %s args[%zu]: HIP kernels take no local-memory arguments; "
                      "use the dispatch's shared_memory_bytes (extern __shared__)",
                      spec, kernel->name, i);
    }
  }
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  int result = hip.hipModuleLaunchKernel(kernel->function, dispatch->grid[0], dispatch->grid[1],
                                         dispatch->grid[2], dispatch->block[0], dispatch->block[1],
                                         dispatch->block[2], dispatch->shared_memory_bytes,
                                         stream_of(stream), values, NULL);
  if (result == HIP_ERROR_INVALID_VALUE || result == HIP_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: kernel %s: grid %ux%ux%u, block %ux%ux%u, %u bytes shared: "
                    "hipModuleLaunchKernel: %s (%d)",
                    spec, kernel->name, dispatch->grid[0], dispatch->grid[1], dispatch->grid[2],
                    dispatch->block[0], dispatch->block[1], dispatch->block[2],
                    dispatch->shared_memory_bytes, hip_error_name(result), result);
  }
  return submitted(stream, "hipModuleLaunchKernel", result);
}

/* ------------------------------------------------------------------------------------------ */
/* Device                                                                                     */

static void hip_device_destroy(xr_hal_device_t *base) { free(hip_device(base)); }

/* HIP has no device object: the device ordinal (an int), with the device made current. */
static void *hip_device_native(xr_hal_device_t *base) {
  return make_current(base) == XR_OK ? &hip_device(base)->ordinal : NULL;
}

static void hip_device_properties(xr_hal_device_t *base, xr_hal_device_properties_t *out) {
  *out = hip_device(base)->properties;
}

static int attribute(int device, int which) {
  int value = 0;
  if (hip.hipDeviceGetAttribute(&value, which, device) != HIP_SUCCESS) value = 0;
  return value;
}

/* gcnArchName from the frozen ROCm 5 layout of hipDeviceProp_t. */
static xr_status_t read_arch_name(hip_device_t *device) {
  union {
    hip_properties_r0000_t fields;
    unsigned char bytes[HIP_PROPERTIES_R0000_BYTES + 256]; /* room to spare */
  } properties;
  memset(&properties, 0, sizeof properties);
  const char *call =
      hip.hipGetDevicePropertiesR0000 ? "hipGetDevicePropertiesR0000" : "hipGetDeviceProperties";
  int result = hip.hipGetDevicePropertiesR0000
                   ? hip.hipGetDevicePropertiesR0000(&properties, device->ordinal)
                   : hip.hipGetDeviceProperties(&properties, device->ordinal);
  if (result != HIP_SUCCESS) return hip_fail(XR_UNAVAILABLE, device->base.spec, call, result);
  properties.fields.gcn_arch_name[sizeof properties.fields.gcn_arch_name - 1] = '\0';
  if (strncmp(properties.fields.gcn_arch_name, "gfx", 3) != 0) {
    return xr_error(XR_UNAVAILABLE, "%s: %s returned no gcnArchName (\"%.32s\")",
                    device->base.spec, call, properties.fields.gcn_arch_name);
  }
  xr_hal_copy_string(device->target, sizeof device->target, properties.fields.gcn_arch_name);
  return XR_OK;
}

static void query_properties(hip_device_t *device) {
  xr_hal_device_properties_t *p = &device->properties;
  int id = device->ordinal;
  if (hip.hipDeviceGetName(p->name, (int)sizeof p->name - 1, id) != HIP_SUCCESS) p->name[0] = 0;
  xr_hal_copy_string(p->vendor, sizeof p->vendor, "AMD");
  int driver_version = 0;
  hip.hipDriverGetVersion(&driver_version);
  snprintf(p->driver_version, sizeof p->driver_version, "HIP driver %d (%.100s)", driver_version,
           hip_library.path);
  char compiler[256];
  xr_gpu_compiler_describe(XR_GPU_COMPILER_HIPRTC, compiler, sizeof compiler);
  snprintf(p->runtime_version, sizeof p->runtime_version, "HIP %d.%d; %.32s; %.60s",
           hip_runtime_version / 10000000, hip_runtime_version / 100000 % 100, device->target,
           compiler);
  size_t memory = 0;
  if (hip.hipDeviceTotalMem(&memory, id) != HIP_SUCCESS) memory = 0;
  int cus = attribute(id, HIP_ATTR_MULTIPROCESSOR_COUNT);
  int clock_khz = attribute(id, HIP_ATTR_CLOCK_RATE);
  int memory_clock_khz = attribute(id, HIP_ATTR_MEMORY_CLOCK_RATE);
  int bus_bits = attribute(id, HIP_ATTR_MEMORY_BUS_WIDTH);
  p->is_gpu = true;
  p->host_addressable = false;
  p->memory_bytes = memory;
  p->max_allocation_bytes = memory;
  p->compute_units = (uint32_t)cus;
  p->clock_mhz = (uint32_t)(clock_khz / 1000);
  p->simd_width = (uint32_t)attribute(id, HIP_ATTR_WARP_SIZE); /* 64 on Instinct, 32 on RDNA */
  p->max_work_group_size = (uint64_t)attribute(id, HIP_ATTR_MAX_THREADS_PER_BLOCK);
  p->last_level_cache_bytes = (uint64_t)attribute(id, HIP_ATTR_L2_CACHE_SIZE);
  if (xr_datasheet_lookup(p->name, p)) return;
  /* Unknown part: vector fp32 from CUs x clock x 64 lanes x 2 (FMA), without the packed-fp32
   * doubling CDNA2+ reaches only with paired operands; bandwidth from clock and bus width. */
  double fp32 = (double)cus * clock_khz * 1e3 * 64 * 2.0;
  if (fp32 > 0) p->peak_flops[XR_HAL_PEAK_FP32] = (xr_hal_figure_t){fp32, XR_HAL_FIGURE_ESTIMATED};
  double bandwidth = 2.0 * memory_clock_khz * 1e3 * bus_bits / 8.0;
  if (bandwidth > 0) p->memory_bandwidth = (xr_hal_figure_t){bandwidth, XR_HAL_FIGURE_ESTIMATED};
}

static const xr_hal_device_vtable_t hip_vtable = {
    .device_destroy = hip_device_destroy,
    .device_properties = hip_device_properties,
    .buffer_alloc = hip_buffer_alloc,
    .buffer_destroy = hip_buffer_destroy,
    .buffer_native = hip_buffer_native,
    .stream_native = hip_stream_native,
    .device_native = hip_device_native,
    .stream_create = hip_stream_create,
    .stream_destroy = hip_stream_destroy,
    .stream_synchronize = hip_stream_synchronize,
    .stream_write = hip_stream_write,
    .stream_read = hip_stream_read,
    .stream_copy = hip_stream_copy,
    .stream_fill = hip_stream_fill,
    .event_create = hip_event_create,
    .event_destroy = hip_event_destroy,
    .event_record = hip_event_record,
    .event_synchronize = hip_event_synchronize,
    .stream_wait_event = hip_stream_wait_event,
    .event_elapsed_ms = hip_event_elapsed_ms,
    .executable_create = hip_executable_create,
    .executable_destroy = hip_executable_destroy,
    .kernel_lookup = hip_kernel_lookup,
    .stream_dispatch = hip_stream_dispatch,
};

extern const xr_hal_driver_t xr_hal_hip_driver;

static xr_status_t hip_device_create(int ordinal, xr_hal_device_t **out) {
  hip_device_t *device = calloc(1, sizeof *device);
  if (!device) return xr_error(XR_RESOURCE_EXHAUSTED, "hip: out of host memory");
  xr_status_t status =
      xr_hal_device_base_init(&device->base, &hip_vtable, &xr_hal_hip_driver, ordinal);
  if (status != XR_OK) {
    free(device);
    return status;
  }
  device->ordinal = ordinal;
  status = make_current(&device->base);
  if (status == XR_OK) status = read_arch_name(device);
  if (status != XR_OK) {
    pthread_mutex_destroy(&device->base.mutex);
    free(device);
    return status;
  }
  query_properties(device);
  *out = &device->base;
  return XR_OK;
}

const xr_hal_driver_t xr_hal_hip_driver = {
    .name = "hip",
    .probe = hip_probe,
    .device_create = hip_device_create,
};
