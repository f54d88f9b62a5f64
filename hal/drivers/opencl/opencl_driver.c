/* opencl driver: the ICD loader (libOpenCL.so.1) is opened with dlopen through the symbol table
 * in opencl_symbols.h; every platform's devices form one flat list (opencl:N). Each stream is a
 * command queue with profiling enabled, events are markers, cross-stream waits are barriers
 * with a wait list, and programs built from source go through the on-disk binary cache. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/core/cache.h"
#include "hal/core/datasheet.h"
#include "hal/core/driver.h"
#include "base/dynload.h"
#include "base/vendor_libraries.h"
#include "hal/drivers/opencl/opencl_symbols.h"
#include "hal/drivers/opencl/opencl_errors.h"

/* Vendor extensions queried for the SIMD width (cl_nv_device_attribute_query,
 * cl_amd_device_attribute_query); defined here so the build needs no cl_ext.h. */
#define XR_CL_DEVICE_WARP_SIZE_NV 0x4003
#define XR_CL_DEVICE_WAVEFRONT_WIDTH_AMD 0x4043
/* From cl_khr_icd (cl_ext.h): the loader found no platform. */
#define XR_CL_PLATFORM_NOT_FOUND_KHR -1001

/* ------------------------------------------------------------------------------------------ */
/* Runtime loading and the flat device list                                                   */

typedef struct opencl_symbols {
  XR_OPENCL_SYMBOLS(XR_DYNLOAD_FIELD)
} opencl_symbols_t;

static const xr_dynload_symbol_t opencl_symbol_list[] = {
#define OPENCL_SYMBOL(need, ret, name, params) XR_DYNLOAD_SYMBOL(opencl_symbols_t, need, name, name)
    XR_OPENCL_SYMBOLS(OPENCL_SYMBOL)
#undef OPENCL_SYMBOL
};

typedef struct flat_device {
  cl_platform_id platform;
  cl_device_id device;
  bool is_gpu;
} flat_device_t;

/* Written once by the probe (under the registry's lock) and read-only afterwards; the library
 * stays loaded for the life of the process. */
static opencl_symbols_t cl;
static xr_dynload_library_t cl_library;
static flat_device_t *flat_devices;
static int flat_device_count;

/* "clEnqueueWriteBuffer: CL_OUT_OF_RESOURCES (-5)" as the sentence of `status`. */
static xr_status_t cl_fail(xr_status_t status, const char *spec, const char *call, cl_int code) {
  return xr_error(status, "%s: %s: %s (%d)", spec, call, xr_opencl_error_name(code), (int)code);
}

/* Allocation failures are RESOURCE_EXHAUSTED, everything else a DEVICE_ERROR. */
static xr_status_t cl_status_for(cl_int code) {
  switch (code) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_HOST_MEMORY:
    case CL_OUT_OF_RESOURCES:
      return XR_RESOURCE_EXHAUSTED;
    default:
      return XR_DEVICE_ERROR;
  }
}

static xr_status_t opencl_probe(char *reason, size_t capacity, int *out_device_count) {
  const xr_dynload_spec_t *spec = &xr_vendor_libraries[XR_VENDOR_LIBRARY_OPENCL];
  *out_device_count = 0;
  xr_status_t status =
      xr_dynload_open(spec, opencl_symbol_list,
                      sizeof opencl_symbol_list / sizeof opencl_symbol_list[0], &cl, &cl_library,
                      reason, capacity);
  if (status != XR_OK) return XR_UNAVAILABLE;

  cl_uint platform_count = 0;
  cl_int code = cl.clGetPlatformIDs(0, NULL, &platform_count);
  if (code == CL_SUCCESS && platform_count == 0) code = XR_CL_PLATFORM_NOT_FOUND_KHR;
  if (code != CL_SUCCESS) {
    xr_dynload_report_append(reason, capacity, "clGetPlatformIDs: %s (%d)",
                             xr_opencl_error_name(code), (int)code);
    return XR_UNAVAILABLE;
  }
  cl_platform_id *platforms = calloc(platform_count, sizeof *platforms);
  if (!platforms) return XR_UNAVAILABLE;
  code = cl.clGetPlatformIDs(platform_count, platforms, NULL);
  if (code != CL_SUCCESS) {
    xr_dynload_report_append(reason, capacity, "clGetPlatformIDs: %s (%d)",
                             xr_opencl_error_name(code), (int)code);
    free(platforms);
    return XR_UNAVAILABLE;
  }
  for (cl_uint p = 0; p < platform_count; p++) {
    char platform_name[128] = "";
    cl.clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof platform_name - 1, platform_name,
                         NULL);
    cl_uint count = 0;
    code = cl.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &count);
    if (code != CL_SUCCESS || count == 0) {
      xr_dynload_report_append(reason, capacity, "platform \"%s\": clGetDeviceIDs: %s (%d)",
                               platform_name, xr_opencl_error_name(code), (int)code);
      continue;
    }
    cl_device_id *ids = calloc(count, sizeof *ids);
    flat_device_t *grown = realloc(flat_devices, (flat_device_count + count) * sizeof *grown);
    if (!ids || !grown) {
      free(ids);
      if (grown) flat_devices = grown;
      break;
    }
    flat_devices = grown;
    if (cl.clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, count, ids, NULL) == CL_SUCCESS) {
      for (cl_uint d = 0; d < count; d++) {
        cl_device_type type = 0;
        cl.clGetDeviceInfo(ids[d], CL_DEVICE_TYPE, sizeof type, &type, NULL);
        flat_devices[flat_device_count++] = (flat_device_t){
            .platform = platforms[p], .device = ids[d], .is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0};
      }
      xr_dynload_report_append(reason, capacity, "platform \"%s\": %u device%s", platform_name,
                               count, count == 1 ? "" : "s");
    }
    free(ids);
  }
  free(platforms);
  *out_device_count = flat_device_count;
  return XR_OK;
}

static bool opencl_device_is_gpu(int ordinal) {
  return ordinal >= 0 && ordinal < flat_device_count && flat_devices[ordinal].is_gpu;
}

/* ------------------------------------------------------------------------------------------ */
/* Handles                                                                                    */

typedef struct opencl_device {
  xr_hal_device_t base;
  cl_device_id id;
  cl_context context;
  xr_hal_device_properties_t properties; /* queried once at creation */
  size_t base_address_alignment;         /* bytes; sub-buffer origins must be multiples */
  char platform_version[128];
  char device_version[128];
} opencl_device_t;

typedef struct opencl_buffer {
  xr_hal_buffer_t base;
  cl_mem mem;  /* NULL for an empty buffer, or for a view that cannot be a sub-buffer */
} opencl_buffer_t;

typedef struct opencl_stream {
  xr_hal_stream_t base;
  cl_command_queue queue;
} opencl_stream_t;

typedef struct opencl_event {
  xr_hal_event_t base;
  cl_event marker;  /* the latest record's marker; NULL before the first */
} opencl_event_t;

typedef struct opencl_kernel {
  xr_hal_kernel_t base;
  cl_kernel kernel;
  pthread_mutex_t mutex;  /* clSetKernelArg + enqueue must not interleave between threads */
  struct opencl_kernel *next;
  char name[];
} opencl_kernel_t;

typedef struct opencl_executable {
  xr_hal_executable_t base;
  cl_program program;
  pthread_mutex_t mutex;  /* guards kernels */
  opencl_kernel_t *kernels;
} opencl_executable_t;

static opencl_device_t *cl_device(xr_hal_device_t *device) { return (opencl_device_t *)device; }
static cl_mem root_mem(xr_hal_buffer_t *root) { return ((opencl_buffer_t *)root)->mem; }
static cl_command_queue queue_of(xr_hal_stream_t *stream) {
  return ((opencl_stream_t *)stream)->queue;
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers                                                                                    */

static xr_status_t opencl_buffer_alloc(xr_hal_device_t *base, size_t size, xr_hal_buffer_t **out) {
  opencl_device_t *device = cl_device(base);
  const xr_hal_device_properties_t *properties = &device->properties;
  if (size > properties->memory_bytes) {
    return xr_error(XR_RESOURCE_EXHAUSTED,
                    "%s: cannot allocate %zu bytes: the device has %llu bytes of memory",
                    base->spec, size, (unsigned long long)properties->memory_bytes);
  }
  if (size > properties->max_allocation_bytes) {
    return xr_error(XR_RESOURCE_EXHAUSTED,
                    "%s: cannot allocate %zu bytes: the largest single allocation is %llu bytes "
                    "(CL_DEVICE_MAX_MEM_ALLOC_SIZE)",
                    base->spec, size, (unsigned long long)properties->max_allocation_bytes);
  }
  opencl_buffer_t *buffer = calloc(1, sizeof *buffer);
  if (!buffer) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", base->spec);
  if (size > 0) {
    cl_int code = CL_SUCCESS;
    buffer->mem = cl.clCreateBuffer(device->context, CL_MEM_READ_WRITE, size, NULL, &code);
    if (code != CL_SUCCESS) {
      free(buffer);
      return xr_error_prefix(cl_fail(cl_status_for(code), base->spec, "clCreateBuffer", code),
                             "allocating %zu bytes: ", size);
    }
  }
  xr_hal_buffer_base_init(&buffer->base, base, NULL, 0, size);
  *out = &buffer->base;
  return XR_OK;
}

static void opencl_buffer_destroy(xr_hal_buffer_t *root) {
  opencl_buffer_t *buffer = (opencl_buffer_t *)root;
  /* The runtime keeps the memory until enqueued commands that use it have finished. */
  if (buffer->mem) cl.clReleaseMemObject(buffer->mem);
  free(buffer);
}

static xr_status_t opencl_buffer_view_create(xr_hal_buffer_t *root, size_t offset, size_t length,
                                             xr_hal_buffer_t **out) {
  opencl_device_t *device = cl_device(root->device);
  opencl_buffer_t *view = calloc(1, sizeof *view);
  if (!view) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", root->device->spec);
  /* Transfers address views through the root plus an offset, so any offset works for them;
   * only kernel arguments need a real sub-buffer, whose origin must be aligned. */
  if (length > 0 && offset % device->base_address_alignment == 0 && root_mem(root)) {
    cl_buffer_region region = {.origin = offset, .size = length};
    cl_int code = CL_SUCCESS;
    view->mem = cl.clCreateSubBuffer(root_mem(root), CL_MEM_READ_WRITE,
                                     CL_BUFFER_CREATE_TYPE_REGION, &region, &code);
    if (code != CL_SUCCESS) view->mem = NULL;
  }
  *out = &view->base;
  return XR_OK;
}

static void opencl_buffer_view_destroy(xr_hal_buffer_t *view) { opencl_buffer_destroy(view); }

/* ------------------------------------------------------------------------------------------ */
/* Streams and transfers                                                                      */

static xr_status_t opencl_stream_create(xr_hal_device_t *base, xr_hal_stream_t **out) {
  opencl_device_t *device = cl_device(base);
  opencl_stream_t *stream = calloc(1, sizeof *stream);
  if (!stream) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", base->spec);
  cl_int code = CL_SUCCESS;
  stream->queue =
      cl.clCreateCommandQueue(device->context, device->id, CL_QUEUE_PROFILING_ENABLE, &code);
  if (code != CL_SUCCESS) {
    free(stream);
    return cl_fail(cl_status_for(code), base->spec, "clCreateCommandQueue", code);
  }
  stream->base.device = base;
  *out = &stream->base;
  return XR_OK;
}

static void opencl_stream_destroy(xr_hal_stream_t *base) {
  opencl_stream_t *stream = (opencl_stream_t *)base;
  cl.clFinish(stream->queue);
  cl.clReleaseCommandQueue(stream->queue);
  free(stream);
}

static xr_status_t opencl_stream_synchronize(xr_hal_stream_t *stream) {
  cl_int code = cl.clFinish(queue_of(stream));
  if (code != CL_SUCCESS) return cl_fail(XR_DEVICE_ERROR, stream->device->spec, "clFinish", code);
  return XR_OK;
}

/* Submits at once, so the queue runs while the host goes on and other queues waiting on its
 * events are not stalled behind an unflushed batch. */
static xr_status_t submitted(xr_hal_stream_t *stream, const char *call, cl_int code) {
  if (code != CL_SUCCESS) return cl_fail(cl_status_for(code), stream->device->spec, call, code);
  code = cl.clFlush(queue_of(stream));
  if (code != CL_SUCCESS) return cl_fail(XR_DEVICE_ERROR, stream->device->spec, "clFlush", code);
  return XR_OK;
}

static xr_status_t opencl_stream_write(xr_hal_stream_t *stream, xr_hal_buffer_t *dst,
                                       size_t dst_offset, const void *src, size_t size) {
  cl_int code = cl.clEnqueueWriteBuffer(queue_of(stream), root_mem(dst), CL_FALSE, dst_offset,
                                        size, src, 0, NULL, NULL);
  return submitted(stream, "clEnqueueWriteBuffer", code);
}

static xr_status_t opencl_stream_read(xr_hal_stream_t *stream, void *dst, xr_hal_buffer_t *src,
                                      size_t src_offset, size_t size) {
  cl_int code = cl.clEnqueueReadBuffer(queue_of(stream), root_mem(src), CL_FALSE, src_offset,
                                       size, dst, 0, NULL, NULL);
  return submitted(stream, "clEnqueueReadBuffer", code);
}

static xr_status_t opencl_stream_copy(xr_hal_stream_t *stream, xr_hal_buffer_t *dst,
                                      size_t dst_offset, xr_hal_buffer_t *src, size_t src_offset,
                                      size_t size) {
  cl_int code = cl.clEnqueueCopyBuffer(queue_of(stream), root_mem(src), root_mem(dst),
                                       src_offset, dst_offset, size, 0, NULL, NULL);
  return submitted(stream, "clEnqueueCopyBuffer", code);
}

static xr_status_t opencl_stream_fill(xr_hal_stream_t *stream, xr_hal_buffer_t *buffer,
                                      size_t offset, size_t size, uint32_t pattern,
                                      size_t pattern_size) {
  uint8_t byte = (uint8_t)pattern;
  uint16_t half = (uint16_t)pattern;
  const void *value = pattern_size == 1 ? (const void *)&byte
                      : pattern_size == 2 ? (const void *)&half
                                          : (const void *)&pattern;
  cl_int code = cl.clEnqueueFillBuffer(queue_of(stream), root_mem(buffer), value, pattern_size,
                                       offset, size, 0, NULL, NULL);
  return submitted(stream, "clEnqueueFillBuffer", code);
}

/* ------------------------------------------------------------------------------------------ */
/* Events                                                                                     */

static xr_status_t opencl_event_create(xr_hal_device_t *device, xr_hal_event_t **out) {
  opencl_event_t *event = calloc(1, sizeof *event);
  if (!event) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", device->spec);
  event->base.device = device;
  *out = &event->base;
  return XR_OK;
}

static void opencl_event_destroy(xr_hal_event_t *base) {
  opencl_event_t *event = (opencl_event_t *)base;
  /* Releasing a pending event is fine: the runtime keeps it until the marker completes. */
  if (event->marker) cl.clReleaseEvent(event->marker);
  free(event);
}

static xr_status_t opencl_event_record(xr_hal_event_t *base, xr_hal_stream_t *stream) {
  opencl_event_t *event = (opencl_event_t *)base;
  cl_event marker = NULL;
  /* An empty wait list makes the marker wait for everything enqueued before it. */
  cl_int code = cl.clEnqueueMarkerWithWaitList(queue_of(stream), 0, NULL, &marker);
  xr_status_t status = submitted(stream, "clEnqueueMarkerWithWaitList", code);
  if (status != XR_OK) return status;
  if (event->marker) cl.clReleaseEvent(event->marker);
  event->marker = marker;
  return XR_OK;
}

static xr_status_t opencl_event_synchronize(xr_hal_event_t *base) {
  opencl_event_t *event = (opencl_event_t *)base;
  if (!event->marker) return XR_OK;
  cl_int code = cl.clWaitForEvents(1, &event->marker);
  if (code != CL_SUCCESS) {
    return cl_fail(XR_DEVICE_ERROR, base->device->spec, "clWaitForEvents", code);
  }
  return XR_OK;
}

static xr_status_t opencl_stream_wait_event(xr_hal_stream_t *stream, xr_hal_event_t *base) {
  opencl_event_t *event = (opencl_event_t *)base;
  if (!event->marker) return XR_OK;
  cl_int code = cl.clEnqueueBarrierWithWaitList(queue_of(stream), 1, &event->marker, NULL);
  return submitted(stream, "clEnqueueBarrierWithWaitList", code);
}

static xr_status_t marker_end_ns(opencl_event_t *event, cl_ulong *out_ns) {
  cl_int code = cl.clGetEventProfilingInfo(event->marker, CL_PROFILING_COMMAND_END,
                                           sizeof *out_ns, out_ns, NULL);
  if (code != CL_SUCCESS) {
    return cl_fail(XR_DEVICE_ERROR, event->base.device->spec,
                   "clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)", code);
  }
  return XR_OK;
}

static xr_status_t opencl_event_elapsed_ms(xr_hal_event_t *start, xr_hal_event_t *end,
                                           double *out_ms) {
  xr_status_t status = opencl_event_synchronize(start);
  if (status == XR_OK) status = opencl_event_synchronize(end);
  cl_ulong t0 = 0, t1 = 0;
  /* A marker completes when everything before it on its queue has: its END time is the moment
   * the stream reached the event. */
  if (status == XR_OK) status = marker_end_ns((opencl_event_t *)start, &t0);
  if (status == XR_OK) status = marker_end_ns((opencl_event_t *)end, &t1);
  if (status != XR_OK) return status;
  *out_ms = ((double)t1 - (double)t0) * 1e-6;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Programs, kernels, dispatch                                                                */

/* Appends the program's build log to a message, trimmed to what xr_last_error can hold. */
static void build_log(opencl_device_t *device, cl_program program, char *out, size_t capacity) {
  size_t size = 0;
  out[0] = '\0';
  if (cl.clGetProgramBuildInfo(program, device->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &size) !=
          CL_SUCCESS ||
      size == 0) {
    return;
  }
  char *log = malloc(size + 1);
  if (!log) return;
  if (cl.clGetProgramBuildInfo(program, device->id, CL_PROGRAM_BUILD_LOG, size, log, NULL) ==
      CL_SUCCESS) {
    log[size] = '\0';
    xr_hal_copy_string(out, capacity, log);
  }
  free(log);
}

static xr_cache_key_t program_cache_key(opencl_device_t *device, const char *source, size_t size,
                                        const char *options) {
  const void *parts[] = {source, options, device->properties.name,
                         device->properties.driver_version, device->device_version,
                         device->platform_version};
  size_t sizes[] = {size, strlen(options), strlen(device->properties.name),
                    strlen(device->properties.driver_version), strlen(device->device_version),
                    strlen(device->platform_version)};
  return xr_cache_key(parts, sizes, sizeof parts / sizeof parts[0]);
}

/* A cached binary, or NULL when absent or unusable (then the caller builds from source). */
static cl_program program_from_cache(opencl_device_t *device, xr_cache_key_t key,
                                     const char *options) {
  size_t size = 0;
  unsigned char *binary = xr_cache_load("opencl", key, &size);
  if (!binary) return NULL;
  cl_int code = CL_SUCCESS, binary_status = CL_SUCCESS;
  const unsigned char *binaries[] = {binary};
  cl_program program = cl.clCreateProgramWithBinary(device->context, 1, &device->id, &size,
                                                    binaries, &binary_status, &code);
  free(binary);
  if (code != CL_SUCCESS || binary_status != CL_SUCCESS) {
    if (program) cl.clReleaseProgram(program);
    return NULL;
  }
  if (cl.clBuildProgram(program, 1, &device->id, options, NULL, NULL) != CL_SUCCESS) {
    cl.clReleaseProgram(program);
    return NULL;
  }
  return program;
}

static void program_to_cache(opencl_device_t *device, cl_program program, xr_cache_key_t key) {
  size_t size = 0;
  if (cl.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) !=
          CL_SUCCESS ||
      size == 0) {
    return;
  }
  unsigned char *binary = malloc(size);
  if (!binary) return;
  unsigned char *binaries[] = {binary};
  if (cl.clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof binaries, binaries, NULL) ==
      CL_SUCCESS) {
    xr_cache_store("opencl", key, binary, size);
  }
  (void)device;
  free(binary);
}

static xr_status_t build_program(opencl_device_t *device, const char *label, const char *source,
                                 size_t size, const char *options, cl_program *out_program) {
  const char *spec = device->base.spec;
  xr_cache_key_t key = program_cache_key(device, source, size, options);
  cl_program program = program_from_cache(device, key, options);
  if (program) {
    *out_program = program;
    return XR_OK;
  }
  cl_int code = CL_SUCCESS;
  program = cl.clCreateProgramWithSource(device->context, 1, &source, &size, &code);
  if (code != CL_SUCCESS) {
    return xr_error_prefix(cl_fail(cl_status_for(code), spec, "clCreateProgramWithSource", code),
                           "%s: ", label);
  }
  code = cl.clBuildProgram(program, 1, &device->id, options, NULL, NULL);
  if (code != CL_SUCCESS) {
    char log[3072];
    build_log(device, program, log, sizeof log);
    cl.clReleaseProgram(program);
    xr_status_t status = code == CL_BUILD_PROGRAM_FAILURE || code == CL_INVALID_BUILD_OPTIONS
                             ? XR_INVALID_ARGUMENT
                             : cl_status_for(code);
    return xr_error(status, "%s: building %s: clBuildProgram: %s (%d); build log:\n%s", spec,
                    label, xr_opencl_error_name(code), (int)code, log[0] ? log : "(empty)");
  }
  program_to_cache(device, program, key);
  *out_program = program;
  return XR_OK;
}

static xr_status_t opencl_executable_create(xr_hal_device_t *base,
                                            const xr_hal_executable_params_t *params,
                                            xr_hal_executable_t **out) {
  if (params->format != XR_HAL_EXECUTABLE_OPENCL_C) {
    return xr_error(XR_UNIMPLEMENTED, "%s: the opencl driver builds OpenCL C source only",
                    base->spec);
  }
  opencl_executable_t *executable = calloc(1, sizeof *executable);
  if (!executable) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", base->spec);
  const char *label = params->label ? params->label : "program";
  xr_status_t status = build_program(cl_device(base), label, params->data, params->size,
                                     params->options ? params->options : "",
                                     &executable->program);
  if (status != XR_OK) {
    free(executable);
    return status;
  }
  executable->base.device = base;
  pthread_mutex_init(&executable->mutex, NULL);
  *out = &executable->base;
  return XR_OK;
}

static void opencl_executable_destroy(xr_hal_executable_t *base) {
  opencl_executable_t *executable = (opencl_executable_t *)base;
  for (opencl_kernel_t *kernel = executable->kernels, *next; kernel; kernel = next) {
    next = kernel->next;
    cl.clReleaseKernel(kernel->kernel);
    pthread_mutex_destroy(&kernel->mutex);
    free(kernel);
  }
  cl.clReleaseProgram(executable->program);
  pthread_mutex_destroy(&executable->mutex);
  free(executable);
}

static xr_status_t opencl_kernel_lookup(xr_hal_executable_t *base, const char *name,
                                        xr_hal_kernel_t **out) {
  opencl_executable_t *executable = (opencl_executable_t *)base;
  xr_status_t status = XR_OK;
  pthread_mutex_lock(&executable->mutex);
  opencl_kernel_t *kernel = executable->kernels;
  while (kernel && strcmp(kernel->name, name) != 0) kernel = kernel->next;
  if (!kernel) {
    size_t length = strlen(name);
    kernel = calloc(1, sizeof *kernel + length + 1);
    cl_int code = CL_SUCCESS;
    if (!kernel) {
      status = xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", base->device->spec);
    } else if (!(kernel->kernel = cl.clCreateKernel(executable->program, name, &code)) ||
               code != CL_SUCCESS) {
      status = code == CL_INVALID_KERNEL_NAME
                   ? xr_error(XR_NOT_FOUND, "%s: kernel \"%s\" not found: clCreateKernel: %s (%d)",
                              base->device->spec, name, xr_opencl_error_name(code), (int)code)
                   : cl_fail(cl_status_for(code), base->device->spec, "clCreateKernel", code);
      free(kernel);
      kernel = NULL;
    } else {
      memcpy(kernel->name, name, length + 1);
      kernel->base.executable = base;
      pthread_mutex_init(&kernel->mutex, NULL);
      kernel->next = executable->kernels;
      executable->kernels = kernel;
    }
  }
  pthread_mutex_unlock(&executable->mutex);
  if (status == XR_OK) *out = &kernel->base;
  return status;
}

static xr_status_t set_arguments(opencl_kernel_t *kernel, const xr_hal_dispatch_t *dispatch,
                                 const char *spec) {
  opencl_device_t *device = cl_device(kernel->base.executable->device);
  for (size_t i = 0; i < dispatch->arg_count; i++) {
    const xr_hal_kernel_arg_t *arg = &dispatch->args[i];
    cl_int code = CL_SUCCESS;
    if (arg->kind == XR_HAL_ARG_BUFFER) {
      opencl_buffer_t *buffer = (opencl_buffer_t *)arg->buffer;
      if (!buffer->mem && arg->buffer->size > 0) {
        return xr_error(XR_INVALID_ARGUMENT,
                        "%s: kernel %s args[%zu]: a view at offset %zu cannot be a kernel "
                        "argument: OpenCL sub-buffers must start at a multiple of %zu bytes "
                        "(CL_DEVICE_MEM_BASE_ADDR_ALIGN)",
                        spec, kernel->name, i, arg->buffer->offset,
                        device->base_address_alignment);
      }
      /* An empty buffer is passed as a NULL buffer. */
      code = cl.clSetKernelArg(kernel->kernel, (cl_uint)i, sizeof(cl_mem),
                               buffer->mem ? (const void *)&buffer->mem : NULL);
    } else if (arg->kind == XR_HAL_ARG_BYTES) {
      code = cl.clSetKernelArg(kernel->kernel, (cl_uint)i, arg->size, arg->bytes);
    } else {
      code = cl.clSetKernelArg(kernel->kernel, (cl_uint)i, arg->size, NULL);
    }
    if (code != CL_SUCCESS) {
      return xr_error(XR_INVALID_ARGUMENT, "%s: kernel %s args[%zu]: clSetKernelArg: %s (%d)", spec,
                      kernel->name, i, xr_opencl_error_name(code), (int)code);
    }
  }
  return XR_OK;
}

static xr_status_t opencl_stream_dispatch(xr_hal_stream_t *stream, xr_hal_kernel_t *base,
                                          const xr_hal_dispatch_t *dispatch) {
  opencl_kernel_t *kernel = (opencl_kernel_t *)base;
  const char *spec = stream->device->spec;
  if (dispatch->shared_memory_bytes) {
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: kernel %s: OpenCL has no dynamic shared memory size; pass an "
                    "XR_HAL_ARG_LOCAL argument instead",
                    spec, kernel->name);
  }
  size_t global[3], local[3];
  cl_uint dimensions = 1;
  for (int d = 0; d < 3; d++) {
    global[d] = (size_t)dispatch->grid[d] * dispatch->block[d];
    local[d] = dispatch->block[d];
    if (global[d] > 1) dimensions = (cl_uint)d + 1;
  }
  pthread_mutex_lock(&kernel->mutex);
  xr_status_t status = set_arguments(kernel, dispatch, spec);
  cl_int code = CL_SUCCESS;
  if (status == XR_OK) {
    code = cl.clEnqueueNDRangeKernel(queue_of(stream), kernel->kernel, dimensions, NULL, global,
                                     local, 0, NULL, NULL);
  }
  pthread_mutex_unlock(&kernel->mutex);
  if (status != XR_OK) return status;
  if (code == CL_INVALID_WORK_GROUP_SIZE || code == CL_INVALID_WORK_ITEM_SIZE ||
      code == CL_INVALID_KERNEL_ARGS) {
    return xr_error(XR_INVALID_ARGUMENT, "%s: kernel %s: clEnqueueNDRangeKernel: %s (%d)", spec,
                    kernel->name, xr_opencl_error_name(code), (int)code);
  }
  return submitted(stream, "clEnqueueNDRangeKernel", code);
}

/* fp32 calibration: eight independent float4 multiply-add chains per work item keep the FMA
 * pipes busy without touching memory (one store at the end). */
static const char fma_peak_source[] =
    "__kernel void xr_fma_peak(__global float *out, float a, float b) {\n"
    "  float4 x0 = (float4)(get_global_id(0)), x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3;\n"
    "  float4 x4 = x0 + 4, x5 = x0 + 5, x6 = x0 + 6, x7 = x0 + 7;\n"
    "  for (int i = 0; i < 128; i++) {\n"
    "    x0 = mad(x0, a, b); x1 = mad(x1, a, b); x2 = mad(x2, a, b); x3 = mad(x3, a, b);\n"
    "    x4 = mad(x4, a, b); x5 = mad(x5, a, b); x6 = mad(x6, a, b); x7 = mad(x7, a, b);\n"
    "  }\n"
    "  float4 s = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;\n"
    "  out[get_global_id(0)] = s.x + s.y + s.z + s.w;\n"
    "}\n";
#define FMA_PEAK_FLOPS_PER_ITEM (128.0 * 8 * 4 * 2)

static xr_status_t opencl_calibrate_fp32(xr_hal_device_t *device, double *out_flops) {
  xr_hal_executable_params_t params = {.format = XR_HAL_EXECUTABLE_OPENCL_C,
                                       .data = fma_peak_source,
                                       .size = sizeof fma_peak_source - 1,
                                       .label = "xr_fma_peak"};
  xr_hal_executable_t *executable = NULL;
  xr_hal_kernel_t *kernel = NULL;
  xr_hal_buffer_t *out = NULL;
  xr_hal_stream_t *stream = NULL;
  xr_hal_event_t *start = NULL, *end = NULL;
  uint32_t block = 64;
  const xr_hal_device_properties_t *properties = &cl_device(device)->properties;
  if (properties->max_work_group_size && properties->max_work_group_size < block) {
    block = (uint32_t)properties->max_work_group_size;
  }
  uint32_t groups = 64 * (properties->compute_units ? properties->compute_units : 1);
  size_t items = (size_t)groups * block;
  xr_status_t status = xr_hal_executable_create(device, &params, &executable);
  if (status == XR_OK) status = xr_hal_kernel_lookup(executable, "xr_fma_peak", &kernel);
  if (status == XR_OK) status = xr_hal_buffer_alloc(device, items * sizeof(float), &out);
  if (status == XR_OK) status = xr_hal_stream_create(device, &stream);
  if (status == XR_OK) status = xr_hal_event_create(device, &start);
  if (status == XR_OK) status = xr_hal_event_create(device, &end);
  double best_ms = 0;
  float a = 0.999f, b = 0.001f;
  xr_hal_kernel_arg_t args[] = {xr_hal_arg_buffer(out), xr_hal_arg_bytes(&a, sizeof a),
                                xr_hal_arg_bytes(&b, sizeof b)};
  xr_hal_dispatch_t dispatch = {.grid = {groups, 1, 1}, .block = {block, 1, 1}, .args = args,
                                .arg_count = 3};
  for (int iteration = 0; status == XR_OK && iteration < 3; iteration++) {
    status = xr_hal_event_record(start, stream);
    if (status == XR_OK) status = xr_hal_stream_dispatch(stream, kernel, &dispatch);
    if (status == XR_OK) status = xr_hal_event_record(end, stream);
    double ms = 0;
    if (status == XR_OK) status = xr_hal_event_elapsed_ms(start, end, &ms);
    if (status == XR_OK && iteration > 0 && ms > 0 && (best_ms == 0 || ms < best_ms)) best_ms = ms;
  }
  if (status == XR_OK && best_ms > 0) {
    *out_flops = (double)items * FMA_PEAK_FLOPS_PER_ITEM / (best_ms * 1e-3);
  }
  xr_hal_event_destroy(end);
  xr_hal_event_destroy(start);
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(out);
  xr_hal_executable_destroy(executable);
  return status;
}

/* ------------------------------------------------------------------------------------------ */
/* Device                                                                                     */

static void opencl_device_destroy(xr_hal_device_t *base) {
  opencl_device_t *device = cl_device(base);
  cl.clReleaseContext(device->context);
  free(device);
}

static void opencl_device_properties(xr_hal_device_t *base, xr_hal_device_properties_t *out) {
  *out = cl_device(base)->properties;
}

static void device_string(cl_device_id id, cl_device_info what, char *out, size_t capacity) {
  out[0] = '\0';
  if (cl.clGetDeviceInfo(id, what, capacity - 1, out, NULL) != CL_SUCCESS) out[0] = '\0';
  out[capacity - 1] = '\0';
}

static void query_properties(opencl_device_t *device, cl_platform_id platform) {
  xr_hal_device_properties_t *p = &device->properties;
  cl_device_id id = device->id;
  device_string(id, CL_DEVICE_NAME, p->name, sizeof p->name);
  device_string(id, CL_DEVICE_VENDOR, p->vendor, sizeof p->vendor);
  device_string(id, CL_DRIVER_VERSION, p->driver_version, sizeof p->driver_version);
  device_string(id, CL_DEVICE_VERSION, device->device_version, sizeof device->device_version);
  if (cl.clGetPlatformInfo(platform, CL_PLATFORM_VERSION, sizeof device->platform_version - 1,
                           device->platform_version, NULL) != CL_SUCCESS) {
    device->platform_version[0] = '\0';
  }
  snprintf(p->runtime_version, sizeof p->runtime_version, "%.56s; device %.56s",
           device->platform_version, device->device_version);

  cl_device_type type = 0;
  cl_ulong global_memory = 0, max_allocation = 0, cache = 0;
  cl_uint units = 0, clock = 0, alignment_bits = 0, vector_width = 0, simd = 0;
  size_t work_group = 0;
  cl.clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  cl.clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global_memory, &global_memory, NULL);
  cl.clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_allocation, &max_allocation,
                     NULL);
  cl.clGetDeviceInfo(id, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache, &cache, NULL);
  cl.clGetDeviceInfo(id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
  cl.clGetDeviceInfo(id, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof clock, &clock, NULL);
  cl.clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof work_group, &work_group, NULL);
  cl.clGetDeviceInfo(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof alignment_bits, &alignment_bits,
                     NULL);
  cl.clGetDeviceInfo(id, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof vector_width, &vector_width,
                     NULL);
  /* Warp / wavefront width from the vendor extension when there is one; otherwise the native
   * float vector width (CPU devices vectorise work-items across SIMD lanes). */
  if (strstr(p->vendor, "NVIDIA") &&
      cl.clGetDeviceInfo(id, XR_CL_DEVICE_WARP_SIZE_NV, sizeof simd, &simd, NULL) != CL_SUCCESS) {
    simd = 0;
  }
  if ((strstr(p->vendor, "Advanced Micro Devices") || strstr(p->vendor, "AMD")) &&
      cl.clGetDeviceInfo(id, XR_CL_DEVICE_WAVEFRONT_WIDTH_AMD, sizeof simd, &simd, NULL) !=
          CL_SUCCESS) {
    simd = 0;
  }
  p->is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
  p->host_addressable = false;
  p->memory_bytes = global_memory;
  p->max_allocation_bytes = max_allocation;
  p->compute_units = units;
  p->clock_mhz = clock;
  p->simd_width = simd ? simd : vector_width;
  p->max_work_group_size = work_group;
  p->last_level_cache_bytes = cache;
  device->base_address_alignment = alignment_bits >= 8 ? alignment_bits / 8 : 128;
  xr_datasheet_lookup(p->name, p);
  xr_datasheet_cache_levels(p, "global");
}

/* Native handles for vendor libraries (CLBlast). */
static void *opencl_buffer_native(xr_hal_buffer_t *root) { return root_mem(root); }
static void *opencl_stream_native(xr_hal_stream_t *stream) { return queue_of(stream); }
static void *opencl_device_native(xr_hal_device_t *device) { return cl_device(device)->id; }

static const xr_hal_device_vtable_t opencl_vtable = {
    .device_destroy = opencl_device_destroy,
    .device_properties = opencl_device_properties,
    .calibrate_fp32 = opencl_calibrate_fp32,
    .buffer_alloc = opencl_buffer_alloc,
    .buffer_destroy = opencl_buffer_destroy,
    .buffer_view_create = opencl_buffer_view_create,
    .buffer_view_destroy = opencl_buffer_view_destroy,
    .stream_create = opencl_stream_create,
    .stream_destroy = opencl_stream_destroy,
    .stream_synchronize = opencl_stream_synchronize,
    .stream_write = opencl_stream_write,
    .stream_read = opencl_stream_read,
    .stream_copy = opencl_stream_copy,
    .stream_fill = opencl_stream_fill,
    .event_create = opencl_event_create,
    .event_destroy = opencl_event_destroy,
    .event_record = opencl_event_record,
    .event_synchronize = opencl_event_synchronize,
    .stream_wait_event = opencl_stream_wait_event,
    .event_elapsed_ms = opencl_event_elapsed_ms,
    .executable_create = opencl_executable_create,
    .executable_destroy = opencl_executable_destroy,
    .kernel_lookup = opencl_kernel_lookup,
    .stream_dispatch = opencl_stream_dispatch,
    .buffer_native = opencl_buffer_native,
    .stream_native = opencl_stream_native,
    .device_native = opencl_device_native,
};

extern const xr_hal_driver_t xr_hal_opencl_driver;

static xr_status_t opencl_device_create(int ordinal, xr_hal_device_t **out) {
  opencl_device_t *device = calloc(1, sizeof *device);
  if (!device) return xr_error(XR_RESOURCE_EXHAUSTED, "opencl: out of host memory");
  xr_status_t status =
      xr_hal_device_base_init(&device->base, &opencl_vtable, &xr_hal_opencl_driver, ordinal);
  if (status != XR_OK) {
    free(device);
    return status;
  }
  device->id = flat_devices[ordinal].device;
  cl_int code = CL_SUCCESS;
  cl_context_properties properties[] = {
      CL_CONTEXT_PLATFORM, (cl_context_properties)flat_devices[ordinal].platform, 0};
  device->context = cl.clCreateContext(properties, 1, &device->id, NULL, NULL, &code);
  if (code != CL_SUCCESS) {
    status = cl_fail(cl_status_for(code), device->base.spec, "clCreateContext", code);
    pthread_mutex_destroy(&device->base.mutex);
    free(device);
    return status;
  }
  query_properties(device, flat_devices[ordinal].platform);
  *out = &device->base;
  return XR_OK;
}

const xr_hal_driver_t xr_hal_opencl_driver = {
    .name = "opencl",
    .probe = opencl_probe,
    .device_is_gpu = opencl_device_is_gpu,
    .device_create = opencl_device_create,
};
