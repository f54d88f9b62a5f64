/* What the cuda and hip drivers share, written once (gpu.h) over the entry points of
 * gpu_symbols.h. Every entry first makes the device current on the calling thread, so any
 * thread may call. Streams are non-blocking vendor streams, events vendor events with timing,
 * buffers single allocations addressed as base + offset (views need no driver object). Device
 * code comes as the vendor's prebuilt image or as CUDA C++ compiled at run time for the
 * device's own architecture (hal/core/gpu_compiler.h). */
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "hal/core/datasheet.h"
#include "hal/drivers/gpu/gpu.h"

/* cuStreamCreate's CU_STREAM_NON_BLOCKING and hipStreamNonBlocking; the default event flags. */
enum { STREAM_NON_BLOCKING = 1, EVENT_DEFAULT = 0 };
#define MAX_KERNEL_ARGS 64

typedef struct gpu_buffer {
  xr_hal_buffer_t base;
  uint64_t pointer;         /* 0 for an empty buffer */
} gpu_buffer_t;

typedef struct gpu_stream {
  xr_hal_stream_t base;
  void *stream;
  /* Between xr_hal_stream_begin_capture and end_capture: event records, waits and
   * synchronisation are refused with a sentence (the vendor would break the capture). */
  atomic_bool capturing;
} gpu_stream_t;

/* The captured graph and its executable instance. */
typedef struct gpu_graph {
  xr_hal_graph_t base;
  void *graph; /* CUgraph / hipGraph_t */
  void *exec;  /* CUgraphExec / hipGraphExec_t */
} gpu_graph_t;

typedef struct gpu_event {
  xr_hal_event_t base;
  void *event;
} gpu_event_t;

typedef struct gpu_kernel {
  xr_hal_kernel_t base;
  void *function;
  struct gpu_kernel *next;
  char name[];
} gpu_kernel_t;

typedef struct gpu_executable {
  xr_hal_executable_t base;
  void *module;
  pthread_mutex_t mutex;    /* guards kernels */
  gpu_kernel_t *kernels;
} gpu_executable_t;

static xr_gpu_device_t *gpu_device(xr_hal_device_t *device) { return (xr_gpu_device_t *)device; }
static const xr_gpu_vendor_t *vendor_of(xr_hal_device_t *device) {
  return gpu_device(device)->vendor;
}
static const xr_gpu_symbols_t *api_of(xr_hal_device_t *device) {
  return &vendor_of(device)->runtime->api;
}
static uint64_t address_of(xr_hal_buffer_t *root, size_t offset) {
  return ((gpu_buffer_t *)root)->pointer + offset;
}
static void *stream_of(xr_hal_stream_t *stream) { return ((gpu_stream_t *)stream)->stream; }
static bool capturing(xr_hal_stream_t *stream) {
  return atomic_load(&((gpu_stream_t *)stream)->capturing);
}
static void *event_of(xr_hal_event_t *event) { return ((gpu_event_t *)event)->event; }

/* ------------------------------------------------------------------------------------------ */
/* Errors                                                                                     */

/* A common entry, for sentences: they name the vendor's own symbol, found in the list the
 * vendor was loaded from. */
#define ENTRY(field) offsetof(xr_gpu_symbols_t, field)

static const char *symbol_name(const xr_gpu_vendor_t *vendor, size_t entry) {
  for (size_t i = 0; i < vendor->symbol_count; i++) {
    if (vendor->symbols[i].offset == entry) return vendor->symbols[i].name;
  }
  return "(unlisted entry)";
}

xr_status_t xr_gpu_fail(xr_status_t status, const xr_gpu_device_t *device, const char *call,
                        int code) {
  return xr_error(status, "%s: %s: %s (%d)", device->base.spec, call,
                  device->vendor->error_name(code), code);
}

static xr_status_t status_for(int code) {
  return code == XR_GPU_ERROR_OUT_OF_MEMORY ? XR_RESOURCE_EXHAUSTED : XR_DEVICE_ERROR;
}

/* The failure of common entry `entry` on `device` as the sentence of `status`. */
static xr_status_t entry_failed(xr_status_t status, xr_hal_device_t *device, size_t entry,
                                int code) {
  return xr_gpu_fail(status, gpu_device(device), symbol_name(vendor_of(device), entry), code);
}

xr_status_t xr_gpu_make_current(xr_gpu_device_t *device) {
  int result = device->vendor->make_current(device);
  if (result == XR_GPU_SUCCESS) return XR_OK;
  return xr_gpu_fail(XR_DEVICE_ERROR, device, device->vendor->make_current_call, result);
}

static xr_status_t make_current(xr_hal_device_t *device) {
  return xr_gpu_make_current(gpu_device(device));
}

/* The status of an enqueue (or any call whose failure is the vendor's usual). */
static xr_status_t submitted(xr_hal_device_t *device, size_t entry, int result) {
  if (result == XR_GPU_SUCCESS) return XR_OK;
  return entry_failed(status_for(result), device, entry, result);
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers                                                                                    */

static xr_status_t gpu_buffer_alloc(xr_hal_device_t *base, size_t size, xr_hal_buffer_t **out) {
  const xr_hal_device_properties_t *properties = &gpu_device(base)->properties;
  if (size > properties->memory_bytes) {
    return xr_error(XR_RESOURCE_EXHAUSTED,
                    "%s: cannot allocate %zu bytes: the device has %llu bytes of memory",
                    base->spec, size, (unsigned long long)properties->memory_bytes);
  }
  gpu_buffer_t *buffer = calloc(1, sizeof *buffer);
  if (!buffer) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", base->spec);
  xr_status_t status = size > 0 ? make_current(base) : XR_OK;
  if (status == XR_OK && size > 0) {
    status = submitted(base, ENTRY(mem_alloc), api_of(base)->mem_alloc(&buffer->pointer, size));
    if (status != XR_OK) xr_error_prefix(status, "allocating %zu bytes: ", size);
  }
  if (status != XR_OK) {
    free(buffer);
    return status;
  }
  xr_hal_buffer_base_init(&buffer->base, base, NULL, 0, size);
  *out = &buffer->base;
  return XR_OK;
}

static void gpu_buffer_destroy(xr_hal_buffer_t *root) {
  gpu_buffer_t *buffer = (gpu_buffer_t *)root;
  if (buffer->pointer && make_current(root->device) == XR_OK) {
    /* Work already queued may still use the memory (hal.h promises it stays valid): wait for
     * the device first. Freeing is rare in replays (allocate once, run many times). */
    api_of(root->device)->synchronize();
    api_of(root->device)->mem_free(buffer->pointer);
  }
  free(buffer);
}

/* Native handles for vendor libraries (cuBLASLt, hipBLASLt): the allocation's device pointer,
 * the stream, the device's `native`. */
static void *gpu_buffer_native(xr_hal_buffer_t *root) {
  return (void *)(uintptr_t)((gpu_buffer_t *)root)->pointer;
}

/* ------------------------------------------------------------------------------------------ */
/* Streams and transfers                                                                      */

static xr_status_t gpu_stream_create(xr_hal_device_t *device, xr_hal_stream_t **out) {
  xr_status_t status = make_current(device);
  if (status != XR_OK) return status;
  gpu_stream_t *stream = calloc(1, sizeof *stream);
  if (!stream) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", device->spec);
  atomic_init(&stream->capturing, false);
  /* Non-blocking: no implicit ordering with the legacy default stream other code may use. */
  status = submitted(device, ENTRY(stream_create),
                     api_of(device)->stream_create(&stream->stream, STREAM_NON_BLOCKING));
  if (status != XR_OK) {
    free(stream);
    return status;
  }
  stream->base.device = device;
  *out = &stream->base;
  return XR_OK;
}

static void gpu_stream_destroy(xr_hal_stream_t *base) {
  gpu_stream_t *stream = (gpu_stream_t *)base;
  if (make_current(base->device) == XR_OK) {
    const xr_gpu_symbols_t *api = api_of(base->device);
    if (atomic_load(&stream->capturing)) {
      /* A capture left open: end it and drop what it recorded, so the stream can go. */
      void *graph = NULL;
      if (api->stream_end_capture(stream->stream, &graph) == XR_GPU_SUCCESS && graph) {
        api->graph_destroy(graph);
      }
    }
    api->stream_synchronize(stream->stream);
    api->stream_destroy(stream->stream);
  }
  free(stream);
}

/* The stream, with the device made current: cuBLASLt and hipBLASLt run on the current one. */
static void *gpu_stream_native(xr_hal_stream_t *stream) {
  return make_current(stream->device) == XR_OK ? stream_of(stream) : NULL;
}

/* What a capturing stream refuses (hal.h): the vendor would invalidate the capture. */
static xr_status_t refused_while_capturing(xr_hal_stream_t *stream, const char *what) {
  return xr_error(XR_INVALID_ARGUMENT,
                  "%s: cannot %s a stream that is being captured (end the capture first)",
                  stream->device->spec, what);
}

static xr_status_t gpu_stream_synchronize(xr_hal_stream_t *stream) {
  if (capturing(stream)) return refused_while_capturing(stream, "synchronise");
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  int result = api_of(stream->device)->stream_synchronize(stream_of(stream));
  /* Errors of earlier asynchronous work (a faulting kernel) surface here. */
  if (result == XR_GPU_SUCCESS) return XR_OK;
  return entry_failed(XR_DEVICE_ERROR, stream->device, ENTRY(stream_synchronize), result);
}

static xr_status_t gpu_stream_write(xr_hal_stream_t *stream, xr_hal_buffer_t *dst,
                                    size_t dst_offset, const void *src, size_t size) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream->device, ENTRY(copy_to_device),
                   api_of(stream->device)->copy_to_device(address_of(dst, dst_offset), src, size,
                                                          stream_of(stream)));
}

static xr_status_t gpu_stream_read(xr_hal_stream_t *stream, void *dst, xr_hal_buffer_t *src,
                                   size_t src_offset, size_t size) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream->device, ENTRY(copy_to_host),
                   api_of(stream->device)->copy_to_host(dst, address_of(src, src_offset), size,
                                                        stream_of(stream)));
}

static xr_status_t gpu_stream_copy(xr_hal_stream_t *stream, xr_hal_buffer_t *dst,
                                   size_t dst_offset, xr_hal_buffer_t *src, size_t src_offset,
                                   size_t size) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream->device, ENTRY(copy_on_device),
                   api_of(stream->device)->copy_on_device(address_of(dst, dst_offset),
                                                          address_of(src, src_offset), size,
                                                          stream_of(stream)));
}

static xr_status_t gpu_stream_fill(xr_hal_stream_t *stream, xr_hal_buffer_t *buffer,
                                   size_t offset, size_t size, uint32_t pattern,
                                   size_t pattern_size) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  /* The core checked that offset and size are multiples of the pattern, so the address is
   * aligned for the 16- and 32-bit forms (allocations start 256-byte aligned). */
  const xr_gpu_symbols_t *api = api_of(stream->device);
  uint64_t address = address_of(buffer, offset);
  void *queue = stream_of(stream);
  if (pattern_size == 1) {
    return submitted(stream->device, ENTRY(fill_8),
                     api->fill_8(address, (unsigned char)pattern, size, queue));
  }
  if (pattern_size == 2) {
    return submitted(stream->device, ENTRY(fill_16),
                     api->fill_16(address, (unsigned short)pattern, size / 2, queue));
  }
  return submitted(stream->device, ENTRY(fill_32), api->fill_32(address, pattern, size / 4, queue));
}

/* ------------------------------------------------------------------------------------------ */
/* Events                                                                                     */

static xr_status_t gpu_event_create(xr_hal_device_t *device, xr_hal_event_t **out) {
  xr_status_t status = make_current(device);
  if (status != XR_OK) return status;
  gpu_event_t *event = calloc(1, sizeof *event);
  if (!event) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", device->spec);
  status = submitted(device, ENTRY(event_create),
                     api_of(device)->event_create(&event->event, EVENT_DEFAULT));
  if (status != XR_OK) {
    free(event);
    return status;
  }
  event->base.device = device;
  *out = &event->base;
  return XR_OK;
}

static void gpu_event_destroy(xr_hal_event_t *base) {
  gpu_event_t *event = (gpu_event_t *)base;
  /* Destroying an event whose record is pending is allowed: the runtime releases it later. */
  if (make_current(base->device) == XR_OK) api_of(base->device)->event_destroy(event->event);
  free(event);
}

static xr_status_t gpu_event_record(xr_hal_event_t *event, xr_hal_stream_t *stream) {
  if (capturing(stream)) return refused_while_capturing(stream, "record an event on");
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream->device, ENTRY(event_record),
                   api_of(stream->device)->event_record(event_of(event), stream_of(stream)));
}

static xr_status_t gpu_event_synchronize(xr_hal_event_t *event) {
  xr_status_t status = make_current(event->device);
  if (status != XR_OK) return status;
  int result = api_of(event->device)->event_synchronize(event_of(event));
  if (result == XR_GPU_SUCCESS) return XR_OK;
  return entry_failed(XR_DEVICE_ERROR, event->device, ENTRY(event_synchronize), result);
}

static xr_status_t gpu_stream_wait_event(xr_hal_stream_t *stream, xr_hal_event_t *event) {
  if (capturing(stream)) return refused_while_capturing(stream, "wait for an event on");
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(stream->device, ENTRY(stream_wait_event),
                   api_of(stream->device)->stream_wait_event(stream_of(stream), event_of(event),
                                                             0));
}

static xr_status_t gpu_event_elapsed_ms(xr_hal_event_t *start, xr_hal_event_t *end,
                                        double *out_ms) {
  xr_status_t status = gpu_event_synchronize(start);
  if (status == XR_OK) status = gpu_event_synchronize(end);
  if (status != XR_OK) return status;
  const xr_gpu_symbols_t *api = api_of(start->device);
  bool v2 = api->event_elapsed_v2 != NULL;
  float ms = 0;
  int result = (v2 ? api->event_elapsed_v2 : api->event_elapsed)(&ms, event_of(start),
                                                                  event_of(end));
  if (result != XR_GPU_SUCCESS) {
    return entry_failed(XR_DEVICE_ERROR, start->device,
                        v2 ? ENTRY(event_elapsed_v2) : ENTRY(event_elapsed), result);
  }
  *out_ms = ms;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Graphs                                                                                     */

/* The first graph entry the runtime does not export, or SIZE_MAX when it exports them all. */
static size_t missing_graph_entry(const xr_gpu_symbols_t *api) {
  const struct {
    bool present;
    size_t entry;
  } needed[] = {
      {api->stream_begin_capture != NULL, ENTRY(stream_begin_capture)},
      {api->stream_end_capture != NULL, ENTRY(stream_end_capture)},
      {api->graph_instantiate != NULL, ENTRY(graph_instantiate)},
      {api->graph_launch != NULL, ENTRY(graph_launch)},
      {api->graph_exec_destroy != NULL, ENTRY(graph_exec_destroy)},
      {api->graph_destroy != NULL, ENTRY(graph_destroy)},
  };
  for (size_t i = 0; i < XR_GPU_COUNT(needed); i++)
    if (!needed[i].present) return needed[i].entry;
  return SIZE_MAX;
}

/* OK when the runtime exports every graph entry; otherwise UNAVAILABLE naming the missing one. */
static xr_status_t graphs_available(xr_hal_device_t *device) {
  size_t missing = missing_graph_entry(api_of(device));
  if (missing == SIZE_MAX) return XR_OK;
  const xr_gpu_vendor_t *vendor = vendor_of(device);
  return xr_error(XR_UNAVAILABLE, "%s: graphs need %s, which the %s runtime %s does not export",
                  device->spec, symbol_name(vendor, missing), vendor->library->label,
                  vendor->runtime->library.path);
}

/* A capture the vendor refused: the caller submitted work a capture cannot record. */
static xr_status_t capture_failed(xr_hal_device_t *device, size_t entry, int result) {
  if (result >= XR_GPU_ERROR_STREAM_CAPTURE_FIRST && result <= XR_GPU_ERROR_STREAM_CAPTURE_LAST) {
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: %s: %s (%d): the capture holds work it cannot record (an allocation, a "
                    "synchronisation or an event of the capturing thread?)",
                    device->spec, symbol_name(vendor_of(device), entry),
                    vendor_of(device)->error_name(result), result);
  }
  return entry_failed(status_for(result), device, entry, result);
}

static xr_status_t gpu_stream_begin_capture(xr_hal_stream_t *base) {
  gpu_stream_t *stream = (gpu_stream_t *)base;
  xr_status_t status = graphs_available(base->device);
  if (status != XR_OK) return status;
  if (atomic_load(&stream->capturing)) {
    return xr_error(XR_INVALID_ARGUMENT, "%s: the stream is already being captured",
                    base->device->spec);
  }
  status = make_current(base->device);
  if (status != XR_OK) return status;
  int result =
      api_of(base->device)->stream_begin_capture(stream->stream, XR_GPU_CAPTURE_MODE_THREAD_LOCAL);
  if (result != XR_GPU_SUCCESS) {
    return capture_failed(base->device, ENTRY(stream_begin_capture), result);
  }
  atomic_store(&stream->capturing, true);
  return XR_OK;
}

static xr_status_t gpu_stream_end_capture(xr_hal_stream_t *base, xr_hal_graph_t **out) {
  gpu_stream_t *stream = (gpu_stream_t *)base;
  xr_hal_device_t *device = base->device;
  if (!atomic_load(&stream->capturing)) {
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: the stream is not being captured (xr_hal_stream_begin_capture first)",
                    device->spec);
  }
  xr_status_t status = make_current(device);
  if (status != XR_OK) return status;
  const xr_gpu_symbols_t *api = api_of(device);
  void *captured = NULL;
  int result = api->stream_end_capture(stream->stream, &captured);
  /* Over, whatever the result: the vendor ends a refused capture too. */
  atomic_store(&stream->capturing, false);
  if (result != XR_GPU_SUCCESS) {
    if (captured) api->graph_destroy(captured);
    return capture_failed(device, ENTRY(stream_end_capture), result);
  }
  gpu_graph_t *graph = calloc(1, sizeof *graph);
  if (!graph) {
    api->graph_destroy(captured);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", device->spec);
  }
  result = api->graph_instantiate(&graph->exec, captured, 0);
  if (result != XR_GPU_SUCCESS) {
    api->graph_destroy(captured);
    free(graph);
    return capture_failed(device, ENTRY(graph_instantiate), result);
  }
  graph->graph = captured;
  graph->base.device = device;
  *out = &graph->base;
  return XR_OK;
}

static xr_status_t gpu_graph_launch(xr_hal_graph_t *base, xr_hal_stream_t *stream) {
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  return submitted(
      stream->device, ENTRY(graph_launch),
      api_of(stream->device)->graph_launch(((gpu_graph_t *)base)->exec, stream_of(stream)));
}

/* CUDA frees an executable graph still in flight once it completes; HIP documents no such
 * promise, so the device is drained first there (destroying graphs is rare: once per capture). */
static void gpu_graph_destroy(xr_hal_graph_t *base) {
  gpu_graph_t *graph = (gpu_graph_t *)base;
  if (make_current(base->device) == XR_OK) {
    const xr_gpu_symbols_t *api = api_of(base->device);
    if (!vendor_of(base->device)->frees_graphs_in_flight) api->synchronize();
    api->graph_exec_destroy(graph->exec);
    api->graph_destroy(graph->graph);
  }
  free(graph);
}

/* ------------------------------------------------------------------------------------------ */
/* Executables, kernels, dispatch                                                             */

static xr_status_t load_module(xr_gpu_device_t *device, const char *label, const void *image,
                               void **out_module) {
  int result = device->vendor->runtime->api.module_load(out_module, image);
  if (result == XR_GPU_SUCCESS) return XR_OK;
  const char *spec = device->base.spec;
  const char *call = symbol_name(device->vendor, ENTRY(module_load));
  const char *name = device->vendor->error_name(result);
  if (result == XR_GPU_ERROR_NO_BINARY_FOR_GPU || result == device->vendor->no_code_result) {
    return xr_error(XR_UNAVAILABLE, "%s: %s has no usable code for %s (%s): %s: %s (%d)", spec,
                    label, device->target, device->properties.name, call, name, result);
  }
  if (result == XR_GPU_ERROR_INVALID_IMAGE || result == XR_GPU_ERROR_INVALID_PTX ||
      result == XR_GPU_ERROR_INVALID_VALUE) {
    return xr_error(XR_INVALID_ARGUMENT, "%s: loading %s: %s: %s (%d)", spec, label, call, name,
                    result);
  }
  return xr_error_prefix(xr_gpu_fail(status_for(result), device, call, result), "loading %s: ",
                         label);
}

static xr_status_t gpu_executable_create(xr_hal_device_t *base,
                                         const xr_hal_executable_params_t *params,
                                         xr_hal_executable_t **out) {
  xr_gpu_device_t *device = gpu_device(base);
  const char *label = params->label ? params->label : "program";
  if (params->format != device->vendor->binary_format &&
      params->format != XR_HAL_EXECUTABLE_CUDA_SOURCE) {
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: the %s driver loads %s or compiles CUDA C++ source",
                    base->spec, label, base->driver->name, device->vendor->binary_formats);
  }
  void *image = NULL;
  size_t image_size = 0;
  xr_status_t status = XR_OK;
  if (params->format == XR_HAL_EXECUTABLE_CUDA_SOURCE) {
    status = xr_gpu_compile(device->target, label, params->data, params->size, params->options,
                            &image, &image_size);
    if (status != XR_OK) return xr_error_prefix(status, "%s: ", base->spec);
  } else {
    /* A private, malloc-aligned copy, NUL-terminated for PTX text (binary images carry their
     * own size and ignore the extra byte). */
    image = malloc(params->size + 1);
    if (!image) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", base->spec);
    memcpy(image, params->data, params->size);
    ((char *)image)[params->size] = '\0';
  }
  gpu_executable_t *executable = calloc(1, sizeof *executable);
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

static void gpu_executable_destroy(xr_hal_executable_t *base) {
  gpu_executable_t *executable = (gpu_executable_t *)base;
  for (gpu_kernel_t *kernel = executable->kernels, *next; kernel; kernel = next) {
    next = kernel->next;
    free(kernel);
  }
  if (make_current(base->device) == XR_OK) {
    /* hal.h allows dispatches in flight; unloading waits for nothing, so wait here. */
    api_of(base->device)->synchronize();
    api_of(base->device)->module_unload(executable->module);
  }
  pthread_mutex_destroy(&executable->mutex);
  free(executable);
}

/* A name the module lacks is NOT_FOUND. */
static xr_status_t lookup_failed(xr_hal_device_t *device, const char *name, int result) {
  const xr_gpu_vendor_t *vendor = vendor_of(device);
  if (result != XR_GPU_ERROR_NOT_FOUND && result != vendor->missing_kernel_result) {
    return submitted(device, ENTRY(module_function), result);
  }
  return xr_error(XR_NOT_FOUND, "%s: kernel \"%s\" not found (is it extern \"C\"?): %s: %s (%d)",
                  device->spec, name, symbol_name(vendor, ENTRY(module_function)),
                  vendor->error_name(result), result);
}

static xr_status_t gpu_kernel_lookup(xr_hal_executable_t *base, const char *name,
                                     xr_hal_kernel_t **out) {
  gpu_executable_t *executable = (gpu_executable_t *)base;
  xr_hal_device_t *device = base->device;
  xr_status_t status = make_current(device);
  if (status != XR_OK) return status;
  pthread_mutex_lock(&executable->mutex);
  gpu_kernel_t *kernel = executable->kernels;
  while (kernel && strcmp(kernel->name, name) != 0) kernel = kernel->next;
  if (!kernel) {
    size_t length = strlen(name);
    kernel = calloc(1, sizeof *kernel + length + 1);
    int result = XR_GPU_SUCCESS;
    if (!kernel) {
      status = xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", device->spec);
    } else if ((result = api_of(device)->module_function(&kernel->function, executable->module,
                                                          name)) != XR_GPU_SUCCESS) {
      status = lookup_failed(device, name, result);
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

static xr_status_t gpu_stream_dispatch(xr_hal_stream_t *stream, xr_hal_kernel_t *base,
                                       const xr_hal_dispatch_t *dispatch) {
  gpu_kernel_t *kernel = (gpu_kernel_t *)base;
  const xr_gpu_vendor_t *vendor = gpu_device(stream->device)->vendor;
  const char *spec = stream->device->spec;
  if (dispatch->arg_count > MAX_KERNEL_ARGS) {
    return xr_error(XR_INVALID_ARGUMENT, "%s: kernel %s: %zu arguments (at most %d)", spec,
                    kernel->name, dispatch->arg_count, MAX_KERNEL_ARGS);
  }
  /* The launch copies every argument at the call, so these may live on the stack. */
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
                      "%s: kernel %s args[%zu]: %s kernels take no local-memory arguments; "
                      "use the dispatch's shared_memory_bytes (extern __shared__)",
                      spec, kernel->name, i, vendor->library->label);
    }
  }
  xr_status_t status = make_current(stream->device);
  if (status != XR_OK) return status;
  if (vendor->before_launch) vendor->before_launch(kernel->function, dispatch->shared_memory_bytes);
  int result = vendor->runtime->api.launch(kernel->function, dispatch->grid[0], dispatch->grid[1],
                                           dispatch->grid[2], dispatch->block[0],
                                           dispatch->block[1], dispatch->block[2],
                                           dispatch->shared_memory_bytes, stream_of(stream),
                                           values, NULL);
  if (result == XR_GPU_ERROR_INVALID_VALUE || result == XR_GPU_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: kernel %s: grid %ux%ux%u, block %ux%ux%u, %u bytes shared: %s: %s (%d)",
                    spec, kernel->name, dispatch->grid[0], dispatch->grid[1], dispatch->grid[2],
                    dispatch->block[0], dispatch->block[1], dispatch->block[2],
                    dispatch->shared_memory_bytes, symbol_name(vendor, ENTRY(launch)),
                    vendor->error_name(result), result);
  }
  return submitted(stream->device, ENTRY(launch), result);
}

/* ------------------------------------------------------------------------------------------ */
/* Device                                                                                     */

static void gpu_device_destroy(xr_hal_device_t *base) {
  xr_gpu_device_t *device = gpu_device(base);
  if (device->clocks_handle) device->vendor->management->close(device->clocks_handle);
  pthread_mutex_destroy(&device->clocks_mutex);
  if (device->vendor->close) device->vendor->close(device);
  free(device);
}

/* Finds the device in the vendor's management library by its PCI bus id. */
static xr_status_t open_clocks(xr_gpu_device_t *device) {
  const xr_gpu_symbols_t *api = &device->vendor->runtime->api;
  const char *spec = device->base.spec;
  if (!api->device_pci_bus_id) {
    return xr_error(XR_UNAVAILABLE, "%s: clocks: the %s runtime does not export %s", spec,
                    device->vendor->library->label,
                    symbol_name(device->vendor, ENTRY(device_pci_bus_id)));
  }
  char bus_id[64] = "";
  int result = api->device_pci_bus_id(bus_id, (int)sizeof bus_id, device->device);
  if (result != XR_GPU_SUCCESS) {
    return xr_error(XR_UNAVAILABLE, "%s: clocks: %s: %s (%d)", spec,
                    symbol_name(device->vendor, ENTRY(device_pci_bus_id)),
                    device->vendor->error_name(result), result);
  }
  return device->vendor->management->open(spec, bus_id, &device->clocks_handle);
}

static xr_status_t gpu_device_clocks(xr_hal_device_t *base, xr_hal_clocks_t *out) {
  xr_gpu_device_t *device = gpu_device(base);
  const xr_gpu_management_t *management = device->vendor->management;
  if (!management) {
    return xr_error(XR_UNIMPLEMENTED, "%s: the %s driver reads no clocks", base->spec,
                    base->driver->name);
  }
  pthread_mutex_lock(&device->clocks_mutex);
  if (!device->clocks_opened) {
    device->clocks_status = open_clocks(device);
    if (device->clocks_status != XR_OK) {
      xr_hal_copy_string(device->clocks_reason, sizeof device->clocks_reason, xr_last_error());
    }
    device->clocks_opened = true;
  }
  xr_status_t status = device->clocks_status;
  pthread_mutex_unlock(&device->clocks_mutex);
  if (status != XR_OK) return xr_error(status, "%s", device->clocks_reason);
  return management->read(base->spec, device->clocks_handle, out);
}

/* Ranges: the vendor's library, loaded on the first call; absent, nothing is pushed. */
static xr_status_t gpu_device_ranges(xr_hal_device_t *base, char *source, size_t capacity) {
  const xr_gpu_ranges_t *ranges = gpu_device(base)->vendor->ranges;
  if (!ranges) {
    xr_status_t st = xr_error(XR_UNIMPLEMENTED, "%s: the %s driver has no profiler ranges",
                              base->spec, base->driver->name);
    if (source && capacity) xr_hal_copy_string(source, capacity, xr_last_error());
    return st;
  }
  return ranges->open(base->spec, source, capacity);
}

static xr_status_t gpu_range_push(xr_hal_device_t *base, const char *name) {
  xr_status_t st = gpu_device_ranges(base, NULL, 0);
  if (st == XR_OK) gpu_device(base)->vendor->ranges->push(name);
  return st;
}

static xr_status_t gpu_range_pop(xr_hal_device_t *base) {
  xr_status_t st = gpu_device_ranges(base, NULL, 0);
  if (st == XR_OK) gpu_device(base)->vendor->ranges->pop();
  return st;
}

static void *gpu_device_native(xr_hal_device_t *base) {
  return make_current(base) == XR_OK ? gpu_device(base)->native : NULL;
}

static void gpu_device_properties(xr_hal_device_t *base, xr_hal_device_properties_t *out) {
  *out = gpu_device(base)->properties;
}

int xr_gpu_attribute(const xr_gpu_device_t *device, int attribute) {
  int value = 0;
  if (device->vendor->runtime->api.device_attribute(&value, attribute, device->device) !=
      XR_GPU_SUCCESS) {
    value = 0;
  }
  return value;
}

/* What every GPU reports the same way; the vendor's open already set target and versions. */
static void query_properties(xr_gpu_device_t *device) {
  const xr_gpu_symbols_t *api = &device->vendor->runtime->api;
  const xr_gpu_attributes_t *which = &device->vendor->attributes;
  xr_hal_device_properties_t *p = &device->properties;
  if (api->device_name(p->name, (int)sizeof p->name - 1, device->device) != XR_GPU_SUCCESS) {
    p->name[0] = '\0';
  }
  size_t memory = 0;
  if (api->device_memory(&memory, device->device) != XR_GPU_SUCCESS) memory = 0;
  int units = xr_gpu_attribute(device, which->compute_units);
  int clock_khz = xr_gpu_attribute(device, which->clock_khz);
  int memory_clock_khz = xr_gpu_attribute(device, which->memory_clock_khz);
  int bus_bits = xr_gpu_attribute(device, which->memory_bus_bits);
  p->is_gpu = true;
  memcpy(p->kernel_family, "gpu", sizeof "gpu");
  p->graphs = missing_graph_entry(api) == SIZE_MAX;
  p->host_addressable = false;
  p->memory_bytes = memory;
  p->max_allocation_bytes = memory;
  p->compute_units = (uint32_t)units;
  p->clock_mhz = (uint32_t)(clock_khz / 1000);
  /* 32 on NVIDIA; 64 on AMD Instinct, 32 on RDNA. */
  p->simd_width = (uint32_t)xr_gpu_attribute(device, which->warp_size);
  p->max_work_group_size = (uint64_t)xr_gpu_attribute(device, which->max_threads_per_block);
  p->last_level_cache_bytes = (uint64_t)xr_gpu_attribute(device, which->l2_cache_bytes);
  bool known = xr_datasheet_lookup(p->name, p);
  xr_datasheet_cache_levels(p, "L2");
  if (known) return;
  /* Unknown part: vector peaks from units x clock x lanes x 2 (FMA), bandwidth from the memory
   * clock and bus width (double data rate). Tensor-core peaks stay unknown. */
  int lanes = 0;
  double fp64_rate = 0;
  device->vendor->estimate(device, &lanes, &fp64_rate);
  double fp32 = (double)units * clock_khz * 1e3 * lanes * 2.0;
  if (fp32 > 0) {
    p->peak_flops[XR_HAL_PEAK_FP32] = (xr_hal_figure_t){fp32, XR_HAL_FIGURE_ESTIMATED};
    if (fp64_rate > 0) {
      p->peak_flops[XR_HAL_PEAK_FP64] =
          (xr_hal_figure_t){fp32 * fp64_rate, XR_HAL_FIGURE_ESTIMATED};
    }
  }
  double bandwidth = 2.0 * memory_clock_khz * 1e3 * bus_bits / 8.0;
  if (bandwidth > 0) p->memory_bandwidth = (xr_hal_figure_t){bandwidth, XR_HAL_FIGURE_ESTIMATED};
}

static const xr_hal_device_vtable_t gpu_vtable = {
    .device_destroy = gpu_device_destroy,
    .device_properties = gpu_device_properties,
    .buffer_alloc = gpu_buffer_alloc,
    .buffer_destroy = gpu_buffer_destroy,
    .buffer_native = gpu_buffer_native,
    .stream_native = gpu_stream_native,
    .device_native = gpu_device_native,
    .stream_create = gpu_stream_create,
    .stream_destroy = gpu_stream_destroy,
    .stream_synchronize = gpu_stream_synchronize,
    .stream_write = gpu_stream_write,
    .stream_read = gpu_stream_read,
    .stream_copy = gpu_stream_copy,
    .stream_fill = gpu_stream_fill,
    .event_create = gpu_event_create,
    .event_destroy = gpu_event_destroy,
    .event_record = gpu_event_record,
    .event_synchronize = gpu_event_synchronize,
    .stream_wait_event = gpu_stream_wait_event,
    .event_elapsed_ms = gpu_event_elapsed_ms,
    .stream_begin_capture = gpu_stream_begin_capture,
    .stream_end_capture = gpu_stream_end_capture,
    .graph_launch = gpu_graph_launch,
    .graph_destroy = gpu_graph_destroy,
    .device_clocks = gpu_device_clocks,
    .device_ranges = gpu_device_ranges,
    .range_push = gpu_range_push,
    .range_pop = gpu_range_pop,
    .executable_create = gpu_executable_create,
    .executable_destroy = gpu_executable_destroy,
    .kernel_lookup = gpu_kernel_lookup,
    .stream_dispatch = gpu_stream_dispatch,
};

xr_status_t xr_gpu_device_create(const xr_gpu_vendor_t *vendor, const xr_hal_driver_t *driver,
                                 int ordinal, xr_hal_device_t **out_device) {
  xr_gpu_device_t *device = calloc(1, sizeof *device);
  if (!device) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", driver->name);
  xr_status_t status = xr_hal_device_base_init(&device->base, &gpu_vtable, driver, ordinal);
  if (status != XR_OK) {
    free(device);
    return status;
  }
  device->vendor = vendor;
  device->ordinal = ordinal;
  pthread_mutex_init(&device->clocks_mutex, NULL);
  int result = vendor->runtime->api.device_get(&device->device, ordinal);
  if (result != XR_GPU_SUCCESS) {
    status = entry_failed(result == XR_GPU_ERROR_OUT_OF_MEMORY ? XR_RESOURCE_EXHAUSTED
                                                                 : XR_UNAVAILABLE,
                          &device->base, ENTRY(device_get), result);
  }
  if (status == XR_OK) status = vendor->open(device);
  if (status != XR_OK) {
    pthread_mutex_destroy(&device->clocks_mutex);
    pthread_mutex_destroy(&device->base.mutex);
    free(device);
    return status;
  }
  query_properties(device);
  *out_device = &device->base;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Probe                                                                                      */

/* Appends what serves kernels besides the runtime: the run-time compiler and vendor libraries. */
static void describe_libraries(const xr_gpu_vendor_t *vendor, char *reason, size_t capacity) {
  char compiler[512];
  xr_gpu_compiler_describe(vendor->compiler, compiler, sizeof compiler);
  xr_dynload_report_append(reason, capacity, "kernels: %s", compiler);
  for (size_t i = 0; i < vendor->library_count; i++) {
    xr_dynload_probe(&xr_vendor_libraries[vendor->libraries[i]], reason, capacity);
  }
}

xr_status_t xr_gpu_probe(const xr_gpu_vendor_t *vendor, char *reason, size_t capacity,
                         int *out_device_count) {
  xr_gpu_runtime_t *runtime = vendor->runtime;
  *out_device_count = 0;
  if (xr_dynload_open(vendor->library, vendor->symbols, vendor->symbol_count, runtime,
                      &runtime->library, reason, capacity) != XR_OK) {
    return XR_UNAVAILABLE;
  }
  const char *call = vendor->init_call;
  int result = vendor->init ? vendor->init() : XR_GPU_SUCCESS;
  int count = 0;
  if (result == XR_GPU_SUCCESS) {
    call = symbol_name(vendor, ENTRY(device_count));
    result = runtime->api.device_count(&count);
  }
  if (result == XR_GPU_SUCCESS && count == 0) result = XR_GPU_ERROR_NO_DEVICE;
  bool ready = result == XR_GPU_SUCCESS;
  if (ready) {
    runtime->api.driver_version(&runtime->driver_version);
    ready = vendor->describe_runtime(reason, capacity);
  } else {
    xr_dynload_report_append(reason, capacity, "%s: %s (%d)", call, vendor->error_name(result),
                             result);
  }
  if (!ready) {
    xr_dynload_close(&runtime->library);
    /* Nothing may call into the closed library. */
    for (size_t i = 0; i < vendor->symbol_count; i++) {
      memset((char *)runtime + vendor->symbols[i].offset, 0, sizeof(void (*)(void)));
    }
    return XR_UNAVAILABLE;
  }
  xr_dynload_report_append(reason, capacity, "%d device%s", count, count == 1 ? "" : "s");
  describe_libraries(vendor, reason, capacity);
  *out_device_count = count;
  return XR_OK;
}
