/* Internal interface between the HAL core (hal/core/hal.c: argument checks, reference counts,
 * blocking helpers) and the drivers (hal/drivers/<name>/). Not part of the public API.
 *
 * A driver is one `static const xr_hal_driver_t` plus one `static const xr_hal_device_vtable_t`.
 * Every handle a driver creates embeds the matching core struct below as its FIRST member named
 * `base`, so core and driver convert between them with a cast. The core has already checked
 * arguments (non-NULL handles, same device, ranges inside buffers, views resolved to their root
 * buffer plus an absolute offset) before it calls a vtable entry; drivers only report what the
 * vendor runtime says. Adding a driver means: new files under hal/drivers/<name>/, one line in
 * hal/drivers.bzl (which writes hal/core/driver_list.h and the CTS targets), its sources in
 * hal/BUILD. */
#ifndef XR_HAL_CORE_DRIVER_H
#define XR_HAL_CORE_DRIVER_H

#include <pthread.h>
#include <stdatomic.h>

#include "hal/hal.h"

typedef struct xr_hal_device_vtable xr_hal_device_vtable_t;

/* Room for the reason a driver is unavailable: every path tried plus the vendor's error. */
#define XR_HAL_REASON_CAPACITY 1024

typedef struct xr_hal_driver {
  const char *name;
  /* Loads the runtime and counts devices; called once per process under the registry's lock.
   * Returns OK, UNAVAILABLE or UNIMPLEMENTED and writes the reason (or a note when OK). */
  xr_status_t (*probe)(char *reason, size_t reason_capacity, int *out_device_count);
  /* Optional: whether device `ordinal` is a GPU, for "auto" selection. Only after probe OK. */
  bool (*device_is_gpu)(int ordinal);
  /* Only after probe OK; 0 <= ordinal < device count. */
  xr_status_t (*device_create)(int ordinal, xr_hal_device_t **out_device);
} xr_hal_driver_t;

struct xr_hal_device {
  const xr_hal_device_vtable_t *vtable;
  const xr_hal_driver_t *driver;
  char spec[32];
  /* Core-owned state, set up by xr_hal_device_base_init. */
  pthread_mutex_t mutex;          /* guards the fields below */
  xr_hal_stream_t *blocking_stream; /* lazily created; serves the blocking buffer_* calls */
  bool calibrated;
  xr_hal_measured_t measured;
  xr_hal_figure_t datasheet_bandwidth;                     /* a user's, UNKNOWN when none */
  xr_hal_figure_t datasheet_flops[XR_HAL_PEAK_DTYPE_COUNT];
};

struct xr_hal_buffer {
  xr_hal_device_t *device;
  xr_hal_buffer_t *root;  /* the allocation; itself for a root buffer */
  size_t offset;          /* from the root's first byte */
  size_t size;
  atomic_size_t references; /* the handle + views + in-flight work that retained it */
};

struct xr_hal_stream {
  xr_hal_device_t *device;
};

struct xr_hal_event {
  xr_hal_device_t *device;
  bool recorded;          /* set by the core after a successful record */
};

struct xr_hal_graph {
  xr_hal_device_t *device;
};

struct xr_hal_executable {
  xr_hal_device_t *device;
};

struct xr_hal_kernel {
  xr_hal_executable_t *executable;
};

struct xr_hal_device_vtable {
  void (*device_destroy)(xr_hal_device_t *device);
  /* Fills everything it knows; the core has zeroed *out and fills spec, driver, the user's
   * datasheet figures and the measured ones afterwards. */
  void (*device_properties)(xr_hal_device_t *device, xr_hal_device_properties_t *out);
  /* Optional: measures fp32 FLOP/s (the core measures bandwidth itself). */
  xr_status_t (*calibrate_fp32)(xr_hal_device_t *device, double *out_flops);

  /* size may be 0. The driver initialises base with xr_hal_buffer_base_init. */
  xr_status_t (*buffer_alloc)(xr_hal_device_t *device, size_t size, xr_hal_buffer_t **out);
  /* Called when the last reference to a root buffer goes. */
  void (*buffer_destroy)(xr_hal_buffer_t *root);
  /* Optional pair: driver-specific views (OpenCL sub-buffers). When absent the core allocates
   * plain xr_hal_buffer_t views. `root` is a root buffer, `offset` absolute. */
  xr_status_t (*buffer_view_create)(xr_hal_buffer_t *root, size_t offset, size_t length,
                                    xr_hal_buffer_t **out);
  void (*buffer_view_destroy)(xr_hal_buffer_t *view);
  /* Optional: host address of a root buffer's first byte (host-addressable devices). */
  void *(*buffer_host_pointer)(xr_hal_buffer_t *root);
  /* Optional trio: the vendor's own handles (xr_hal_buffer_native and friends). stream_native
   * and device_native make the device current on the calling thread where the vendor has such
   * a notion (cuda, hip) and return NULL, with a sentence, when that fails. */
  void *(*buffer_native)(xr_hal_buffer_t *root);
  void *(*stream_native)(xr_hal_stream_t *stream);
  void *(*device_native)(xr_hal_device_t *device);

  xr_status_t (*stream_create)(xr_hal_device_t *device, xr_hal_stream_t **out);
  void (*stream_destroy)(xr_hal_stream_t *stream); /* drains first */
  xr_status_t (*stream_synchronize)(xr_hal_stream_t *stream);
  /* Transfers take root buffers and absolute offsets; size > 0. */
  xr_status_t (*stream_write)(xr_hal_stream_t *stream, xr_hal_buffer_t *dst, size_t dst_offset,
                              const void *src, size_t size);
  xr_status_t (*stream_read)(xr_hal_stream_t *stream, void *dst, xr_hal_buffer_t *src,
                             size_t src_offset, size_t size);
  xr_status_t (*stream_copy)(xr_hal_stream_t *stream, xr_hal_buffer_t *dst, size_t dst_offset,
                             xr_hal_buffer_t *src, size_t src_offset, size_t size);
  xr_status_t (*stream_fill)(xr_hal_stream_t *stream, xr_hal_buffer_t *buffer, size_t offset,
                             size_t size, uint32_t pattern, size_t pattern_size);
  /* Optional blocking fast paths; when absent the core uses the device's blocking stream. */
  xr_status_t (*buffer_write)(xr_hal_buffer_t *dst, size_t dst_offset, const void *src,
                              size_t size);
  xr_status_t (*buffer_read)(void *dst, xr_hal_buffer_t *src, size_t src_offset, size_t size);
  xr_status_t (*buffer_copy)(xr_hal_buffer_t *dst, size_t dst_offset, xr_hal_buffer_t *src,
                             size_t src_offset, size_t size);

  /* Optional: host work (host-addressable devices). */
  xr_status_t (*stream_enqueue_host)(xr_hal_stream_t *stream, xr_hal_host_fn_t fn,
                                     void *context);
  xr_status_t (*stream_enqueue_parallel)(xr_hal_stream_t *stream, size_t count, size_t grain,
                                         xr_hal_parallel_fn_t fn, void *context);

  xr_status_t (*event_create)(xr_hal_device_t *device, xr_hal_event_t **out);
  void (*event_destroy)(xr_hal_event_t *event);
  xr_status_t (*event_record)(xr_hal_event_t *event, xr_hal_stream_t *stream);
  xr_status_t (*event_synchronize)(xr_hal_event_t *event);
  xr_status_t (*stream_wait_event)(xr_hal_stream_t *stream, xr_hal_event_t *event);
  /* Both events recorded (checked by the core). */
  xr_status_t (*event_elapsed_ms)(xr_hal_event_t *start, xr_hal_event_t *end, double *out_ms);

  /* Optional set: graphs (cuda, hip). The core checked the handles' devices. */
  xr_status_t (*stream_begin_capture)(xr_hal_stream_t *stream);
  xr_status_t (*stream_end_capture)(xr_hal_stream_t *stream, xr_hal_graph_t **out);
  xr_status_t (*graph_launch)(xr_hal_graph_t *graph, xr_hal_stream_t *stream);
  void (*graph_destroy)(xr_hal_graph_t *graph);

  /* Optional: clocks; the core has zeroed *out. */
  xr_status_t (*device_clocks)(xr_hal_device_t *device, xr_hal_clocks_t *out);

  /* Optional trio: profiler ranges. `source` may be NULL; the core has emptied it otherwise. */
  xr_status_t (*device_ranges)(xr_hal_device_t *device, char *source, size_t capacity);
  xr_status_t (*range_push)(xr_hal_device_t *device, const char *name);
  xr_status_t (*range_pop)(xr_hal_device_t *device);

  /* Optional: device code. The core checked params (format, data, size). */
  xr_status_t (*executable_create)(xr_hal_device_t *device,
                                   const xr_hal_executable_params_t *params,
                                   xr_hal_executable_t **out);
  void (*executable_destroy)(xr_hal_executable_t *executable);
  xr_status_t (*kernel_lookup)(xr_hal_executable_t *executable, const char *name,
                               xr_hal_kernel_t **out);
  /* The core checked grid/block >= 1 and each argument's shape and device. */
  xr_status_t (*stream_dispatch)(xr_hal_stream_t *stream, xr_hal_kernel_t *kernel,
                                 const xr_hal_dispatch_t *dispatch);
};

/* Helpers for drivers (hal/core/hal.c). */
xr_status_t xr_hal_device_base_init(xr_hal_device_t *device, const xr_hal_device_vtable_t *vtable,
                                    const xr_hal_driver_t *driver, int ordinal);
void xr_hal_buffer_base_init(xr_hal_buffer_t *buffer, xr_hal_device_t *device,
                             xr_hal_buffer_t *root, size_t offset, size_t size);
/* The core's XR_HAL_LOG=devices line for a device opened or closed (registry.c, hal.c). */
void xr_hal_log_device(const xr_hal_device_t *device, const char *what);
/* Reference counting for drivers that keep buffers alive while work is in flight. */
void xr_hal_buffer_retain(xr_hal_buffer_t *buffer);
void xr_hal_buffer_release(xr_hal_buffer_t *buffer);

/* Copies at most capacity-1 bytes of src into dst, always terminated. */
void xr_hal_copy_string(char *dst, size_t capacity, const char *src);

#endif /* XR_HAL_CORE_DRIVER_H */
