/* Public HAL entry points: check arguments, resolve views, then dispatch to the driver. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hal/core/driver.h"

void xr_hal_copy_string(char *dst, size_t capacity, const char *src) {
  if (!dst || capacity == 0) return;
  snprintf(dst, capacity, "%s", src ? src : "");
}

/* ------------------------------------------------------------------------------------------ */
/* Devices                                                                                    */

xr_status_t xr_hal_device_base_init(xr_hal_device_t *device, const xr_hal_device_vtable_t *vtable,
                                    const xr_hal_driver_t *driver, int ordinal) {
  memset(device, 0, sizeof *device);
  device->vtable = vtable;
  device->driver = driver;
  snprintf(device->spec, sizeof device->spec, "%s:%d", driver->name, ordinal);
  if (pthread_mutex_init(&device->mutex, NULL) != 0) {
    return xr_error(XR_INTERNAL, "%s: pthread_mutex_init failed", device->spec);
  }
  return XR_OK;
}

/* XR_HAL_LOG=devices: a line on stderr for each device opened and closed, with the process id,
 * so that a run's (and each rank's) device opens can be counted. */
void xr_hal_log_device(const xr_hal_device_t *device, const char *what) {
  const char *log = getenv("XR_HAL_LOG");
  if (log && strstr(log, "devices"))
    fprintf(stderr, "xr_hal: %d %s %s\n", (int)getpid(), what, device->spec);
}

void xr_hal_device_destroy(xr_hal_device_t *device) {
  if (!device) return;
  xr_hal_log_device(device, "closed");
  if (device->blocking_stream) device->vtable->stream_destroy(device->blocking_stream);
  device->blocking_stream = NULL;
  pthread_mutex_destroy(&device->mutex);
  device->vtable->device_destroy(device);
}

const char *xr_hal_peak_dtype_name(xr_hal_peak_dtype_t dtype) {
  switch (dtype) {
    case XR_HAL_PEAK_FP64: return "fp64";
    case XR_HAL_PEAK_FP32: return "fp32";
    case XR_HAL_PEAK_FP16: return "fp16";
    case XR_HAL_PEAK_BF16: return "bf16";
    case XR_HAL_PEAK_FP8: return "fp8";
    case XR_HAL_PEAK_DTYPE_COUNT: break;
  }
  return "unknown-dtype";
}

const char *xr_hal_figure_source_name(xr_hal_figure_source_t source) {
  switch (source) {
    case XR_HAL_FIGURE_UNKNOWN: return "unknown";
    case XR_HAL_FIGURE_DATASHEET: return "datasheet";
    case XR_HAL_FIGURE_ESTIMATED: return "estimated";
    case XR_HAL_FIGURE_CALIBRATED: return "calibrated";
  }
  return "unknown";
}

xr_status_t xr_hal_device_properties(xr_hal_device_t *device,
                                     xr_hal_device_properties_t *out_properties) {
  if (!device || !out_properties) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_device_properties: NULL argument");
  }
  memset(out_properties, 0, sizeof *out_properties);
  device->vtable->device_properties(device, out_properties);
  xr_hal_copy_string(out_properties->spec, sizeof out_properties->spec, device->spec);
  xr_hal_copy_string(out_properties->driver, sizeof out_properties->driver,
                     device->driver->name);
  if (!out_properties->kernel_family[0])
    xr_hal_copy_string(out_properties->kernel_family, sizeof out_properties->kernel_family,
                       device->driver->name);
  if (!device->vtable->stream_begin_capture) out_properties->graphs = false;
  pthread_mutex_lock(&device->mutex);
  if (device->datasheet_bandwidth.source != XR_HAL_FIGURE_UNKNOWN)
    out_properties->memory_bandwidth = device->datasheet_bandwidth;
  for (int d = 0; d < XR_HAL_PEAK_DTYPE_COUNT; d++)
    if (device->datasheet_flops[d].source != XR_HAL_FIGURE_UNKNOWN)
      out_properties->peak_flops[d] = device->datasheet_flops[d];
  out_properties->measured = device->measured;
  pthread_mutex_unlock(&device->mutex);
  return XR_OK;
}

/* Best of `repeats` timed samples (after one untimed one), each of as many back-to-back
 * device-to-device copies of `size` bytes as move 64 MiB (at least one), so that a copy within
 * a small cache is not its enqueue cost; bandwidth counts bytes read plus bytes written. */
static xr_status_t measure_copy_bandwidth(xr_hal_device_t *device, size_t size, int repeats,
                                          double *out_bytes_per_second) {
  xr_hal_buffer_t *a = NULL, *b = NULL;
  xr_hal_stream_t *stream = NULL;
  xr_hal_event_t *start = NULL, *end = NULL;
  double best_ms = 0;
  size_t copies = (64u << 20) / (2 * size) + 1;
  xr_status_t status;
  if ((status = xr_hal_buffer_alloc(device, size, &a)) != XR_OK) goto done;
  if ((status = xr_hal_buffer_alloc(device, size, &b)) != XR_OK) goto done;
  if ((status = xr_hal_stream_create(device, &stream)) != XR_OK) goto done;
  if ((status = xr_hal_event_create(device, &start)) != XR_OK) goto done;
  if ((status = xr_hal_event_create(device, &end)) != XR_OK) goto done;
  uint8_t zero = 0;
  if ((status = xr_hal_stream_fill(stream, a, 0, size, &zero, 1)) != XR_OK) goto done;
  for (int iteration = 0; iteration <= repeats; iteration++) {
    if ((status = xr_hal_event_record(start, stream)) != XR_OK) goto done;
    for (size_t k = 0; k < copies; k++)
      if ((status = xr_hal_stream_copy(stream, b, 0, a, 0, size)) != XR_OK) goto done;
    if ((status = xr_hal_event_record(end, stream)) != XR_OK) goto done;
    double ms = 0;
    if ((status = xr_hal_event_elapsed_ms(start, end, &ms)) != XR_OK) goto done;
    if (iteration > 0 && ms > 0 && (best_ms == 0 || ms < best_ms)) best_ms = ms;
  }
  if (best_ms > 0) *out_bytes_per_second = 2.0 * (double)size * copies / (best_ms * 1e-3);
done:
  xr_hal_event_destroy(end);
  xr_hal_event_destroy(start);
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(b);
  xr_hal_buffer_free(a);
  return status;
}

/* The DRAM copy's working set (both buffers): 4x every cache, at least 256 MiB so a GPU's launch
 * cost vanishes, 2 GiB when the caches are unknown; within the largest allocation (each buffer)
 * and a quarter of the device's memory. */
static uint64_t dram_working_set(const xr_hal_device_properties_t *p) {
  uint64_t caches = p->cache_total_bytes ? p->cache_total_bytes
                                         : p->last_level_cache_bytes + p->memory_side_cache_bytes;
  uint64_t set = caches ? 4 * caches : 2ull << 30;
  if (set < (256ull << 20)) set = 256ull << 20;
  if (p->max_allocation_bytes && set > 2 * p->max_allocation_bytes)
    set = 2 * p->max_allocation_bytes;
  if (p->memory_bytes && set > p->memory_bytes / 4) set = p->memory_bytes / 4;
  return set & ~(uint64_t)4095;
}

xr_status_t xr_hal_device_calibrate(xr_hal_device_t *device) {
  if (!device) return xr_error(XR_INVALID_ARGUMENT, "xr_hal_device_calibrate: device is NULL");
  pthread_mutex_lock(&device->mutex);
  bool done = device->calibrated;
  pthread_mutex_unlock(&device->mutex);
  if (done) return XR_OK;

  /* Measured outside the lock (it uses the HAL itself); two racing callers both measure and
   * the later result wins, which is harmless. */
  xr_hal_device_properties_t p;
  xr_status_t status = xr_hal_device_properties(device, &p);
  if (status != XR_OK) return status;
  xr_hal_measured_t m = {0};
  double bandwidth = 0, fp32 = 0;
  m.memory_working_set_bytes = dram_working_set(&p);
  status = measure_copy_bandwidth(device, m.memory_working_set_bytes / 2, 3, &bandwidth);
  if (status != XR_OK)
    return xr_error_prefix(status, "%s: calibrating DRAM bandwidth: ", device->spec);
  if (bandwidth > 0) m.memory_bandwidth = (xr_hal_figure_t){bandwidth, XR_HAL_FIGURE_CALIBRATED};
  if (p.last_level_cache_bytes >= (64u << 10)) {
    /* Each buffer a quarter of the cache; more repeats, as each copy is short. */
    m.cache_working_set_bytes = (p.last_level_cache_bytes / 2) & ~(uint64_t)4095;
    bandwidth = 0;
    status = measure_copy_bandwidth(device, m.cache_working_set_bytes / 2, 10, &bandwidth);
    if (status != XR_OK)
      return xr_error_prefix(status, "%s: calibrating cache bandwidth: ", device->spec);
    if (bandwidth > 0) m.cache_bandwidth = (xr_hal_figure_t){bandwidth, XR_HAL_FIGURE_CALIBRATED};
  }
  /* Each level within half of it, where that is 1 MiB or more: a smaller copy (an L1) measures
   * the copy's own dispatch more than the cache. The last level is the one just measured. */
  for (uint32_t i = 0; i < p.cache_level_count; i++) {
    uint64_t set = (p.cache_levels[i].total_bytes / 2) & ~(uint64_t)4095;
    if (p.cache_levels[i].total_bytes == p.last_level_cache_bytes) {
      m.cache_level_bandwidth[i] = m.cache_bandwidth;
      m.cache_level_working_set_bytes[i] = m.cache_working_set_bytes;
      continue;
    }
    if (set < (1u << 20) || set >= m.memory_working_set_bytes) continue;
    bandwidth = 0;
    status = measure_copy_bandwidth(device, set / 2, 10, &bandwidth);
    if (status != XR_OK)
      return xr_error_prefix(status, "%s: calibrating %s bandwidth: ", device->spec,
                             p.cache_levels[i].name);
    if (bandwidth > 0) {
      m.cache_level_bandwidth[i] = (xr_hal_figure_t){bandwidth, XR_HAL_FIGURE_CALIBRATED};
      m.cache_level_working_set_bytes[i] = set;
    }
  }
  if (device->vtable->calibrate_fp32) {
    status = device->vtable->calibrate_fp32(device, &fp32);
    if (status != XR_OK) return xr_error_prefix(status, "%s: calibrating fp32: ", device->spec);
    if (fp32 > 0)
      m.peak_flops[XR_HAL_PEAK_FP32] = (xr_hal_figure_t){fp32, XR_HAL_FIGURE_CALIBRATED};
  }
  return xr_hal_device_set_measured(device, &m);
}

static void take_known(xr_hal_figure_t *to, const xr_hal_figure_t *from) {
  if (from->source != XR_HAL_FIGURE_UNKNOWN) *to = *from;
}

xr_status_t xr_hal_device_set_measured(xr_hal_device_t *device, const xr_hal_measured_t *m) {
  if (!device || !m)
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_device_set_measured: NULL argument");
  pthread_mutex_lock(&device->mutex);
  xr_hal_measured_t *to = &device->measured;
  if (m->memory_bandwidth.source != XR_HAL_FIGURE_UNKNOWN) {
    to->memory_bandwidth = m->memory_bandwidth;
    to->memory_working_set_bytes = m->memory_working_set_bytes;
  }
  if (m->cache_bandwidth.source != XR_HAL_FIGURE_UNKNOWN) {
    to->cache_bandwidth = m->cache_bandwidth;
    to->cache_working_set_bytes = m->cache_working_set_bytes;
  }
  for (int i = 0; i < XR_HAL_MAX_CACHE_LEVELS; i++) {
    if (m->cache_level_bandwidth[i].source == XR_HAL_FIGURE_UNKNOWN) continue;
    to->cache_level_bandwidth[i] = m->cache_level_bandwidth[i];
    to->cache_level_working_set_bytes[i] = m->cache_level_working_set_bytes[i];
  }
  for (int d = 0; d < XR_HAL_PEAK_DTYPE_COUNT; d++)
    take_known(&to->peak_flops[d], &m->peak_flops[d]);
  device->calibrated = true;
  pthread_mutex_unlock(&device->mutex);
  return XR_OK;
}

xr_status_t xr_hal_device_set_datasheet(xr_hal_device_t *device, const xr_hal_figure_t *bandwidth,
                                        const xr_hal_figure_t peak_flops[XR_HAL_PEAK_DTYPE_COUNT]) {
  if (!device) return xr_error(XR_INVALID_ARGUMENT, "xr_hal_device_set_datasheet: device is NULL");
  pthread_mutex_lock(&device->mutex);
  if (bandwidth) take_known(&device->datasheet_bandwidth, bandwidth);
  for (int d = 0; peak_flops && d < XR_HAL_PEAK_DTYPE_COUNT; d++)
    take_known(&device->datasheet_flops[d], &peak_flops[d]);
  pthread_mutex_unlock(&device->mutex);
  return XR_OK;
}

/* The higher of a stated and a measured figure: a ceiling below what was reached is none. */
static xr_hal_figure_t higher(xr_hal_figure_t stated, xr_hal_figure_t measured) {
  return measured.value > stated.value ? measured : stated;
}

xr_hal_figure_t xr_hal_bandwidth_ceiling(const xr_hal_device_properties_t *p) {
  return higher(p->memory_bandwidth, p->measured.memory_bandwidth);
}

/* Element widths: what a wider type reaches, a narrower one can (computing in the wider one). */
static int peak_width(xr_hal_peak_dtype_t d) {
  return d == XR_HAL_PEAK_FP64 ? 8 : d == XR_HAL_PEAK_FP32 ? 4 : d == XR_HAL_PEAK_FP8 ? 1 : 2;
}

xr_hal_figure_t xr_hal_flops_ceiling(const xr_hal_device_properties_t *p, xr_hal_peak_dtype_t d,
                                     xr_hal_peak_dtype_t *out_from) {
  xr_hal_figure_t best = {0, XR_HAL_FIGURE_UNKNOWN};
  if (out_from) *out_from = d;
  if ((unsigned)d >= XR_HAL_PEAK_DTYPE_COUNT) return best;
  for (int k = 0; k < XR_HAL_PEAK_DTYPE_COUNT; k++) {
    if (k != (int)d && peak_width((xr_hal_peak_dtype_t)k) <= peak_width(d)) continue;
    xr_hal_figure_t f = higher(p->peak_flops[k], p->measured.peak_flops[k]);
    /* The dtype's own figure wins a tie. */
    if (f.value > best.value || (f.value == best.value && k == (int)d && f.value > 0)) {
      best = f;
      if (out_from) *out_from = (xr_hal_peak_dtype_t)k;
    }
  }
  return best;
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers                                                                                    */

void xr_hal_buffer_base_init(xr_hal_buffer_t *buffer, xr_hal_device_t *device,
                             xr_hal_buffer_t *root, size_t offset, size_t size) {
  buffer->device = device;
  buffer->root = root ? root : buffer;
  buffer->offset = offset;
  buffer->size = size;
  atomic_init(&buffer->references, 1);
}

void xr_hal_buffer_retain(xr_hal_buffer_t *buffer) {
  atomic_fetch_add_explicit(&buffer->references, 1, memory_order_relaxed);
}

void xr_hal_buffer_release(xr_hal_buffer_t *buffer) {
  if (!buffer) return;
  if (atomic_fetch_sub_explicit(&buffer->references, 1, memory_order_acq_rel) != 1) return;
  const xr_hal_device_vtable_t *vtable = buffer->device->vtable;
  if (buffer->root == buffer) {
    vtable->buffer_destroy(buffer);
    return;
  }
  xr_hal_buffer_t *root = buffer->root;
  if (vtable->buffer_view_destroy) {
    vtable->buffer_view_destroy(buffer);
  } else {
    free(buffer);
  }
  xr_hal_buffer_release(root);
}

xr_status_t xr_hal_buffer_alloc(xr_hal_device_t *device, size_t size,
                                xr_hal_buffer_t **out_buffer) {
  if (!device || !out_buffer) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_buffer_alloc: NULL argument");
  }
  return device->vtable->buffer_alloc(device, size, out_buffer);
}

xr_status_t xr_hal_buffer_view(xr_hal_buffer_t *buffer, size_t offset, size_t length,
                               xr_hal_buffer_t **out_view) {
  if (!buffer || !out_view) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_buffer_view: NULL argument");
  }
  if (offset > buffer->size || length > buffer->size - offset) {
    return xr_error(XR_OUT_OF_RANGE,
                    "xr_hal_buffer_view: [%zu, %zu + %zu) is outside the %zu-byte buffer", offset,
                    offset, length, buffer->size);
  }
  xr_hal_buffer_t *root = buffer->root;
  size_t absolute = buffer->offset + offset;
  xr_hal_buffer_t *view = NULL;
  const xr_hal_device_vtable_t *vtable = buffer->device->vtable;
  if (vtable->buffer_view_create) {
    xr_status_t status = vtable->buffer_view_create(root, absolute, length, &view);
    if (status != XR_OK) return status;
  } else {
    view = malloc(sizeof *view);
    if (!view) return xr_error(XR_RESOURCE_EXHAUSTED, "xr_hal_buffer_view: out of host memory");
  }
  xr_hal_buffer_base_init(view, buffer->device, root, absolute, length);
  xr_hal_buffer_retain(root);
  *out_view = view;
  return XR_OK;
}

void xr_hal_buffer_free(xr_hal_buffer_t *buffer) { xr_hal_buffer_release(buffer); }

size_t xr_hal_buffer_size(const xr_hal_buffer_t *buffer) { return buffer ? buffer->size : 0; }

xr_hal_device_t *xr_hal_buffer_device(const xr_hal_buffer_t *buffer) {
  return buffer ? buffer->device : NULL;
}

xr_status_t xr_hal_buffer_host_pointer(xr_hal_buffer_t *buffer, void **out_pointer) {
  if (!buffer || !out_pointer) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_buffer_host_pointer: NULL argument");
  }
  const xr_hal_device_vtable_t *vtable = buffer->device->vtable;
  if (!vtable->buffer_host_pointer) {
    return xr_error(XR_UNIMPLEMENTED,
                    "%s: buffers are not host-addressable; use xr_hal_buffer_read/write",
                    buffer->device->spec);
  }
  char *base = vtable->buffer_host_pointer(buffer->root);
  *out_pointer = base && buffer->size ? base + buffer->offset : NULL;
  return XR_OK;
}

xr_status_t xr_hal_buffer_native(xr_hal_buffer_t *buffer, void **out_handle, size_t *out_offset) {
  if (!buffer || !out_handle || !out_offset) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_buffer_native: NULL argument");
  }
  const xr_hal_device_vtable_t *vtable = buffer->device->vtable;
  if (!vtable->buffer_native) {
    return xr_error(XR_UNIMPLEMENTED, "%s: buffers have no native handle", buffer->device->spec);
  }
  *out_handle = vtable->buffer_native(buffer->root);
  *out_offset = buffer->offset;
  return XR_OK;
}

xr_status_t xr_hal_stream_native(xr_hal_stream_t *stream, void **out_handle) {
  if (!stream || !out_handle) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_stream_native: NULL argument");
  }
  if (!stream->device->vtable->stream_native) {
    return xr_error(XR_UNIMPLEMENTED, "%s: streams have no native handle", stream->device->spec);
  }
  /* NULL: the driver could not make the device current; its sentence is in xr_last_error(). */
  void *handle = stream->device->vtable->stream_native(stream);
  if (!handle) return XR_DEVICE_ERROR;
  *out_handle = handle;
  return XR_OK;
}

xr_status_t xr_hal_device_native(xr_hal_device_t *device, void **out_handle) {
  if (!device || !out_handle) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_device_native: NULL argument");
  }
  if (!device->vtable->device_native) {
    return xr_error(XR_UNIMPLEMENTED, "%s: the device has no native handle", device->spec);
  }
  void *handle = device->vtable->device_native(device);
  if (!handle) return XR_DEVICE_ERROR;
  *out_handle = handle;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Streams and transfers                                                                      */

xr_status_t xr_hal_stream_create(xr_hal_device_t *device, xr_hal_stream_t **out_stream) {
  if (!device || !out_stream) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_stream_create: NULL argument");
  }
  return device->vtable->stream_create(device, out_stream);
}

void xr_hal_stream_destroy(xr_hal_stream_t *stream) {
  if (stream) stream->device->vtable->stream_destroy(stream);
}

xr_status_t xr_hal_stream_synchronize(xr_hal_stream_t *stream) {
  if (!stream) return xr_error(XR_INVALID_ARGUMENT, "xr_hal_stream_synchronize: stream is NULL");
  return stream->device->vtable->stream_synchronize(stream);
}

/* Checks that [offset, offset + size) lies inside `buffer`, naming the call and role. */
static xr_status_t check_range(const char *call, const char *role, const xr_hal_buffer_t *buffer,
                               size_t offset, size_t size) {
  if (!buffer) return xr_error(XR_INVALID_ARGUMENT, "%s: %s buffer is NULL", call, role);
  if (offset > buffer->size || size > buffer->size - offset) {
    return xr_error(XR_OUT_OF_RANGE, "%s: %s range [%zu, %zu + %zu) is outside the %zu-byte buffer",
                    call, role, offset, offset, size, buffer->size);
  }
  return XR_OK;
}

static xr_status_t check_same_device(const char *call, const xr_hal_device_t *a,
                                     const xr_hal_device_t *b) {
  if (a != b) {
    return xr_error(XR_INVALID_ARGUMENT, "%s: objects belong to different devices (%s, %s)", call,
                    a->spec, b->spec);
  }
  return XR_OK;
}

static xr_status_t check_write(const char *call, xr_hal_buffer_t *dst, size_t dst_offset,
                               const void *src, size_t size) {
  xr_status_t status = check_range(call, "destination", dst, dst_offset, size);
  if (status != XR_OK) return status;
  if (!src && size) return xr_error(XR_INVALID_ARGUMENT, "%s: source host pointer is NULL", call);
  return XR_OK;
}

static xr_status_t check_read(const char *call, void *dst, xr_hal_buffer_t *src,
                              size_t src_offset, size_t size) {
  xr_status_t status = check_range(call, "source", src, src_offset, size);
  if (status != XR_OK) return status;
  if (!dst && size) {
    return xr_error(XR_INVALID_ARGUMENT, "%s: destination host pointer is NULL", call);
  }
  return XR_OK;
}

static xr_status_t check_copy(const char *call, xr_hal_buffer_t *dst, size_t dst_offset,
                              xr_hal_buffer_t *src, size_t src_offset, size_t size) {
  xr_status_t status = check_range(call, "destination", dst, dst_offset, size);
  if (status == XR_OK) status = check_range(call, "source", src, src_offset, size);
  if (status == XR_OK) status = check_same_device(call, dst->device, src->device);
  if (status != XR_OK) return status;
  if (dst->root == src->root && size) {
    size_t d = dst->offset + dst_offset, s = src->offset + src_offset;
    if (d < s + size && s < d + size) {
      return xr_error(XR_INVALID_ARGUMENT,
                      "%s: source and destination overlap in the same allocation", call);
    }
  }
  return XR_OK;
}

static xr_status_t check_fill(const char *call, xr_hal_buffer_t *buffer, size_t offset,
                              size_t size, const void *pattern, size_t pattern_size,
                              uint32_t *out_pattern) {
  xr_status_t status = check_range(call, "destination", buffer, offset, size);
  if (status != XR_OK) return status;
  if (!pattern) return xr_error(XR_INVALID_ARGUMENT, "%s: pattern is NULL", call);
  if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4) {
    return xr_error(XR_INVALID_ARGUMENT, "%s: pattern size %zu is not 1, 2 or 4 bytes", call,
                    pattern_size);
  }
  /* The offset counts from the allocation, views included: backends (OpenCL) align there. */
  if ((buffer->offset + offset) % pattern_size || size % pattern_size) {
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: offset %zu (from the allocation's start) and size %zu must be multiples "
                    "of the %zu-byte pattern",
                    call, buffer->offset + offset, size, pattern_size);
  }
  uint32_t value = 0;
  memcpy(&value, pattern, pattern_size);
  *out_pattern = value;
  return XR_OK;
}

xr_status_t xr_hal_stream_write(xr_hal_stream_t *stream, xr_hal_buffer_t *dst, size_t dst_offset,
                                const void *src, size_t size) {
  static const char call[] = "xr_hal_stream_write";
  if (!stream) return xr_error(XR_INVALID_ARGUMENT, "%s: stream is NULL", call);
  xr_status_t status = check_write(call, dst, dst_offset, src, size);
  if (status == XR_OK) status = check_same_device(call, stream->device, dst->device);
  if (status != XR_OK || size == 0) return status;
  return stream->device->vtable->stream_write(stream, dst->root, dst->offset + dst_offset, src,
                                              size);
}

xr_status_t xr_hal_stream_read(xr_hal_stream_t *stream, void *dst, xr_hal_buffer_t *src,
                               size_t src_offset, size_t size) {
  static const char call[] = "xr_hal_stream_read";
  if (!stream) return xr_error(XR_INVALID_ARGUMENT, "%s: stream is NULL", call);
  xr_status_t status = check_read(call, dst, src, src_offset, size);
  if (status == XR_OK) status = check_same_device(call, stream->device, src->device);
  if (status != XR_OK || size == 0) return status;
  return stream->device->vtable->stream_read(stream, dst, src->root, src->offset + src_offset,
                                             size);
}

xr_status_t xr_hal_stream_copy(xr_hal_stream_t *stream, xr_hal_buffer_t *dst, size_t dst_offset,
                               xr_hal_buffer_t *src, size_t src_offset, size_t size) {
  static const char call[] = "xr_hal_stream_copy";
  if (!stream) return xr_error(XR_INVALID_ARGUMENT, "%s: stream is NULL", call);
  xr_status_t status = check_copy(call, dst, dst_offset, src, src_offset, size);
  if (status == XR_OK) status = check_same_device(call, stream->device, dst->device);
  if (status != XR_OK || size == 0) return status;
  return stream->device->vtable->stream_copy(stream, dst->root, dst->offset + dst_offset,
                                             src->root, src->offset + src_offset, size);
}

xr_status_t xr_hal_stream_fill(xr_hal_stream_t *stream, xr_hal_buffer_t *buffer, size_t offset,
                               size_t size, const void *pattern, size_t pattern_size) {
  static const char call[] = "xr_hal_stream_fill";
  if (!stream) return xr_error(XR_INVALID_ARGUMENT, "%s: stream is NULL", call);
  uint32_t value = 0;
  xr_status_t status = check_fill(call, buffer, offset, size, pattern, pattern_size, &value);
  if (status == XR_OK) status = check_same_device(call, stream->device, buffer->device);
  if (status != XR_OK || size == 0) return status;
  return stream->device->vtable->stream_fill(stream, buffer->root, buffer->offset + offset, size,
                                             value, pattern_size);
}

/* The device's stream for blocking calls, created on first use. */
static xr_status_t blocking_stream(xr_hal_device_t *device, xr_hal_stream_t **out_stream) {
  xr_status_t status = XR_OK;
  pthread_mutex_lock(&device->mutex);
  if (!device->blocking_stream) {
    status = device->vtable->stream_create(device, &device->blocking_stream);
  }
  *out_stream = device->blocking_stream;
  pthread_mutex_unlock(&device->mutex);
  return status;
}

xr_status_t xr_hal_buffer_write(xr_hal_buffer_t *dst, size_t dst_offset, const void *src,
                                size_t size) {
  xr_status_t status = check_write("xr_hal_buffer_write", dst, dst_offset, src, size);
  if (status != XR_OK || size == 0) return status;
  const xr_hal_device_vtable_t *vtable = dst->device->vtable;
  if (vtable->buffer_write) return vtable->buffer_write(dst->root, dst->offset + dst_offset, src, size);
  xr_hal_stream_t *stream;
  if ((status = blocking_stream(dst->device, &stream)) != XR_OK) return status;
  status = vtable->stream_write(stream, dst->root, dst->offset + dst_offset, src, size);
  return status == XR_OK ? vtable->stream_synchronize(stream) : status;
}

xr_status_t xr_hal_buffer_read(void *dst, xr_hal_buffer_t *src, size_t src_offset, size_t size) {
  xr_status_t status = check_read("xr_hal_buffer_read", dst, src, src_offset, size);
  if (status != XR_OK || size == 0) return status;
  const xr_hal_device_vtable_t *vtable = src->device->vtable;
  if (vtable->buffer_read) return vtable->buffer_read(dst, src->root, src->offset + src_offset, size);
  xr_hal_stream_t *stream;
  if ((status = blocking_stream(src->device, &stream)) != XR_OK) return status;
  status = vtable->stream_read(stream, dst, src->root, src->offset + src_offset, size);
  return status == XR_OK ? vtable->stream_synchronize(stream) : status;
}

xr_status_t xr_hal_buffer_copy(xr_hal_buffer_t *dst, size_t dst_offset, xr_hal_buffer_t *src,
                               size_t src_offset, size_t size) {
  xr_status_t status = check_copy("xr_hal_buffer_copy", dst, dst_offset, src, src_offset, size);
  if (status != XR_OK || size == 0) return status;
  const xr_hal_device_vtable_t *vtable = dst->device->vtable;
  size_t d = dst->offset + dst_offset, s = src->offset + src_offset;
  if (vtable->buffer_copy) return vtable->buffer_copy(dst->root, d, src->root, s, size);
  xr_hal_stream_t *stream;
  if ((status = blocking_stream(dst->device, &stream)) != XR_OK) return status;
  status = vtable->stream_copy(stream, dst->root, d, src->root, s, size);
  return status == XR_OK ? vtable->stream_synchronize(stream) : status;
}

xr_status_t xr_hal_buffer_fill(xr_hal_buffer_t *buffer, size_t offset, size_t size,
                               const void *pattern, size_t pattern_size) {
  uint32_t value = 0;
  xr_status_t status =
      check_fill("xr_hal_buffer_fill", buffer, offset, size, pattern, pattern_size, &value);
  if (status != XR_OK || size == 0) return status;
  xr_hal_stream_t *stream;
  if ((status = blocking_stream(buffer->device, &stream)) != XR_OK) return status;
  const xr_hal_device_vtable_t *vtable = buffer->device->vtable;
  status = vtable->stream_fill(stream, buffer->root, buffer->offset + offset, size, value,
                               pattern_size);
  return status == XR_OK ? vtable->stream_synchronize(stream) : status;
}

/* ------------------------------------------------------------------------------------------ */
/* Host work                                                                                  */

xr_status_t xr_hal_stream_enqueue_host(xr_hal_stream_t *stream, xr_hal_host_fn_t fn,
                                       void *context) {
  if (!stream || !fn) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_stream_enqueue_host: NULL stream or function");
  }
  const xr_hal_device_vtable_t *vtable = stream->device->vtable;
  if (!vtable->stream_enqueue_host) {
    return xr_error(XR_UNIMPLEMENTED, "%s: host functions on streams need a host device (cpu)",
                    stream->device->spec);
  }
  return vtable->stream_enqueue_host(stream, fn, context);
}

xr_status_t xr_hal_stream_enqueue_parallel(xr_hal_stream_t *stream, size_t count, size_t grain,
                                           xr_hal_parallel_fn_t fn, void *context) {
  if (!stream || !fn) {
    return xr_error(XR_INVALID_ARGUMENT,
                    "xr_hal_stream_enqueue_parallel: NULL stream or function");
  }
  const xr_hal_device_vtable_t *vtable = stream->device->vtable;
  if (!vtable->stream_enqueue_parallel) {
    return xr_error(XR_UNIMPLEMENTED, "%s: parallel host work needs a host device (cpu)",
                    stream->device->spec);
  }
  if (count == 0) return XR_OK;
  return vtable->stream_enqueue_parallel(stream, count, grain, fn, context);
}

/* ------------------------------------------------------------------------------------------ */
/* Events                                                                                     */

xr_status_t xr_hal_event_create(xr_hal_device_t *device, xr_hal_event_t **out_event) {
  if (!device || !out_event) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_event_create: NULL argument");
  }
  xr_status_t status = device->vtable->event_create(device, out_event);
  if (status == XR_OK) (*out_event)->recorded = false;
  return status;
}

void xr_hal_event_destroy(xr_hal_event_t *event) {
  if (event) event->device->vtable->event_destroy(event);
}

xr_status_t xr_hal_event_record(xr_hal_event_t *event, xr_hal_stream_t *stream) {
  if (!event || !stream) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_event_record: NULL event or stream");
  }
  xr_status_t status = check_same_device("xr_hal_event_record", event->device, stream->device);
  if (status == XR_OK) status = event->device->vtable->event_record(event, stream);
  if (status == XR_OK) event->recorded = true;
  return status;
}

xr_status_t xr_hal_event_synchronize(xr_hal_event_t *event) {
  if (!event) return xr_error(XR_INVALID_ARGUMENT, "xr_hal_event_synchronize: event is NULL");
  if (!event->recorded) return XR_OK;
  return event->device->vtable->event_synchronize(event);
}

xr_status_t xr_hal_stream_wait_event(xr_hal_stream_t *stream, xr_hal_event_t *event) {
  if (!event || !stream) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_stream_wait_event: NULL stream or event");
  }
  xr_status_t status = check_same_device("xr_hal_stream_wait_event", stream->device,
                                         event->device);
  if (status != XR_OK || !event->recorded) return status;
  return stream->device->vtable->stream_wait_event(stream, event);
}

xr_status_t xr_hal_event_elapsed_ms(xr_hal_event_t *start, xr_hal_event_t *end, double *out_ms) {
  if (!start || !end || !out_ms) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_event_elapsed_ms: NULL argument");
  }
  xr_status_t status = check_same_device("xr_hal_event_elapsed_ms", start->device, end->device);
  if (status != XR_OK) return status;
  if (!start->recorded || !end->recorded) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_event_elapsed_ms: the %s event was never recorded",
                    start->recorded ? "end" : "start");
  }
  return start->device->vtable->event_elapsed_ms(start, end, out_ms);
}

/* ------------------------------------------------------------------------------------------ */
/* Executables and dispatch                                                                   */

xr_status_t xr_hal_executable_create(xr_hal_device_t *device,
                                     const xr_hal_executable_params_t *params,
                                     xr_hal_executable_t **out_executable) {
  if (!device || !params || !out_executable) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_executable_create: NULL argument");
  }
  if (!params->data || params->size == 0) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_executable_create: %s: empty source or binary",
                    params->label ? params->label : "executable");
  }
  if (params->format < XR_HAL_EXECUTABLE_OPENCL_C ||
      params->format > XR_HAL_EXECUTABLE_CUDA_SOURCE) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_executable_create: unknown format %d",
                    (int)params->format);
  }
  if (!device->vtable->executable_create) {
    return xr_error(XR_UNIMPLEMENTED,
                    "%s: no device code on this driver; enqueue host functions instead",
                    device->spec);
  }
  return device->vtable->executable_create(device, params, out_executable);
}

void xr_hal_executable_destroy(xr_hal_executable_t *executable) {
  if (executable) executable->device->vtable->executable_destroy(executable);
}

xr_status_t xr_hal_kernel_lookup(xr_hal_executable_t *executable, const char *name,
                                 xr_hal_kernel_t **out_kernel) {
  if (!executable || !name || !out_kernel) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_kernel_lookup: NULL argument");
  }
  return executable->device->vtable->kernel_lookup(executable, name, out_kernel);
}

xr_status_t xr_hal_stream_dispatch(xr_hal_stream_t *stream, xr_hal_kernel_t *kernel,
                                   const xr_hal_dispatch_t *dispatch) {
  static const char call[] = "xr_hal_stream_dispatch";
  if (!stream || !kernel || !dispatch) {
    return xr_error(XR_INVALID_ARGUMENT, "%s: NULL argument", call);
  }
  xr_status_t status = check_same_device(call, stream->device, kernel->executable->device);
  if (status != XR_OK) return status;
  for (int d = 0; d < 3; d++) {
    if (dispatch->grid[d] == 0 || dispatch->block[d] == 0) {
      return xr_error(XR_INVALID_ARGUMENT,
                      "%s: grid and block sizes must be >= 1 in every dimension (dimension %d: "
                      "grid %u, block %u)",
                      call, d, dispatch->grid[d], dispatch->block[d]);
    }
  }
  if (dispatch->arg_count && !dispatch->args) {
    return xr_error(XR_INVALID_ARGUMENT, "%s: %zu arguments but args is NULL", call,
                    dispatch->arg_count);
  }
  for (size_t i = 0; i < dispatch->arg_count; i++) {
    const xr_hal_kernel_arg_t *arg = &dispatch->args[i];
    switch (arg->kind) {
      case XR_HAL_ARG_BUFFER:
        if (!arg->buffer) return xr_error(XR_INVALID_ARGUMENT, "%s: args[%zu]: NULL buffer", call, i);
        status = check_same_device(call, stream->device, arg->buffer->device);
        if (status != XR_OK) return xr_error_prefix(status, "args[%zu]: ", i);
        break;
      case XR_HAL_ARG_BYTES:
        if (!arg->bytes || arg->size == 0) {
          return xr_error(XR_INVALID_ARGUMENT, "%s: args[%zu]: by-value argument without bytes",
                          call, i);
        }
        break;
      case XR_HAL_ARG_LOCAL:
        if (arg->size == 0) {
          return xr_error(XR_INVALID_ARGUMENT, "%s: args[%zu]: local memory of 0 bytes", call, i);
        }
        break;
      default:
        return xr_error(XR_INVALID_ARGUMENT, "%s: args[%zu]: unknown kind %d", call, i,
                        (int)arg->kind);
    }
  }
  if (!stream->device->vtable->stream_dispatch) {
    return xr_error(XR_UNIMPLEMENTED, "%s: no device code on this driver", stream->device->spec);
  }
  return stream->device->vtable->stream_dispatch(stream, kernel, dispatch);
}

/* ---------------------------------------------------------------------------------------------
 * Graphs and clocks
 * ------------------------------------------------------------------------------------------- */

xr_status_t xr_hal_stream_begin_capture(xr_hal_stream_t *stream) {
  if (!stream) return xr_error(XR_INVALID_ARGUMENT, "xr_hal_stream_begin_capture: NULL stream");
  if (!stream->device->vtable->stream_begin_capture) {
    return xr_error(XR_UNIMPLEMENTED, "%s: the driver has no graphs (cuda and hip do)",
                    stream->device->spec);
  }
  return stream->device->vtable->stream_begin_capture(stream);
}

xr_status_t xr_hal_stream_end_capture(xr_hal_stream_t *stream, xr_hal_graph_t **out_graph) {
  if (!stream || !out_graph) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_stream_end_capture: NULL argument");
  }
  if (!stream->device->vtable->stream_end_capture) {
    return xr_error(XR_UNIMPLEMENTED, "%s: the driver has no graphs (cuda and hip do)",
                    stream->device->spec);
  }
  return stream->device->vtable->stream_end_capture(stream, out_graph);
}

xr_status_t xr_hal_graph_launch(xr_hal_graph_t *graph, xr_hal_stream_t *stream) {
  if (!graph || !stream) return xr_error(XR_INVALID_ARGUMENT, "xr_hal_graph_launch: NULL argument");
  if (graph->device != stream->device) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_graph_launch: graph of %s on a stream of %s",
                    graph->device->spec, stream->device->spec);
  }
  return stream->device->vtable->graph_launch(graph, stream);
}

void xr_hal_graph_destroy(xr_hal_graph_t *graph) {
  if (graph) graph->device->vtable->graph_destroy(graph);
}

xr_status_t xr_hal_device_clocks(xr_hal_device_t *device, xr_hal_clocks_t *out_clocks) {
  if (!device || !out_clocks) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_device_clocks: NULL argument");
  }
  if (!device->vtable->device_clocks) {
    return xr_error(XR_UNIMPLEMENTED, "%s: the driver has no clocks to read", device->spec);
  }
  memset(out_clocks, 0, sizeof *out_clocks);
  return device->vtable->device_clocks(device, out_clocks);
}

/* ---------------------------------------------------------------------------------------------
 * Profiler ranges
 * ------------------------------------------------------------------------------------------- */

/* UNIMPLEMENTED for a driver without ranges, the sentence also in `source` when given. */
static xr_status_t no_ranges(const xr_hal_device_t *device, char *source, size_t capacity) {
  xr_status_t st = xr_error(XR_UNIMPLEMENTED, "%s: the %s driver has no profiler ranges (cuda "
                            "and hip do)", device->spec, device->driver->name);
  if (source && capacity) xr_hal_copy_string(source, capacity, xr_last_error());
  return st;
}

xr_status_t xr_hal_device_ranges(xr_hal_device_t *device, char *source, size_t capacity) {
  if (source && capacity) source[0] = '\0';
  if (!device) return xr_error(XR_INVALID_ARGUMENT, "xr_hal_device_ranges: NULL device");
  if (!device->vtable->device_ranges) return no_ranges(device, source, capacity);
  return device->vtable->device_ranges(device, source, capacity);
}

xr_status_t xr_hal_device_range_push(xr_hal_device_t *device, const char *name) {
  if (!device || !name) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_device_range_push: NULL argument");
  }
  if (!device->vtable->range_push) return no_ranges(device, NULL, 0);
  return device->vtable->range_push(device, name);
}

xr_status_t xr_hal_device_range_pop(xr_hal_device_t *device) {
  if (!device) return xr_error(XR_INVALID_ARGUMENT, "xr_hal_device_range_pop: NULL device");
  if (!device->vtable->range_pop) return no_ranges(device, NULL, 0);
  return device->vtable->range_pop(device);
}
