/* Embedding the xreplay HAL: time a device-to-device copy on the best device here.
 *
 *   bazel run //examples/embed:time_copy            # "auto": cuda, hip, an OpenCL GPU, then cpu
 *   XR_HAL_DEVICE=opencl bazel run //examples/embed:time_copy
 *
 * Only hal/hal.h is used: open a device, allocate, record events around the work on a stream,
 * read the elapsed time. Every call returns a status; xr_last_error() says what went wrong. */
#include <stdio.h>

#include "hal/hal.h"

#define COPY_BYTES (64u << 20)
#define REPETITIONS 10

#define TRY(expr)                                                                        \
  do {                                                                                   \
    xr_status_t try_status_ = (expr);                                                    \
    if (try_status_ != XR_OK) {                                                          \
      fprintf(stderr, "time_copy: %s: %s\n", xr_status_name(try_status_), xr_last_error()); \
      return 1;                                                                          \
    }                                                                                    \
  } while (0)

int main(void) {
  xr_hal_device_t *device = NULL;
  TRY(xr_hal_device_create("auto", &device));
  xr_hal_device_properties_t properties;
  TRY(xr_hal_device_properties(device, &properties));

  xr_hal_buffer_t *src = NULL, *dst = NULL;
  xr_hal_stream_t *stream = NULL;
  xr_hal_event_t *start = NULL, *end = NULL;
  TRY(xr_hal_buffer_alloc(device, COPY_BYTES, &src));
  TRY(xr_hal_buffer_alloc(device, COPY_BYTES, &dst));
  TRY(xr_hal_stream_create(device, &stream));
  TRY(xr_hal_event_create(device, &start));
  TRY(xr_hal_event_create(device, &end));

  uint8_t pattern = 0x5a;
  TRY(xr_hal_stream_fill(stream, src, 0, COPY_BYTES, &pattern, 1));
  TRY(xr_hal_stream_copy(stream, dst, 0, src, 0, COPY_BYTES)); /* warm-up */
  TRY(xr_hal_event_record(start, stream));
  for (int i = 0; i < REPETITIONS; i++) {
    TRY(xr_hal_stream_copy(stream, dst, 0, src, 0, COPY_BYTES));
  }
  TRY(xr_hal_event_record(end, stream));
  double ms = 0;
  TRY(xr_hal_event_elapsed_ms(start, end, &ms));

  double gb_per_s = (double)COPY_BYTES * REPETITIONS / (ms * 1e-3) / 1e9;
  printf("%s (%s): %d x %u MiB device copy in %.3f ms: %.2f GB/s\n", properties.spec,
         properties.name, REPETITIONS, COPY_BYTES >> 20, ms, gb_per_s);

  xr_hal_event_destroy(end);
  xr_hal_event_destroy(start);
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(dst);
  xr_hal_buffer_free(src);
  xr_hal_device_destroy(device);
  return 0;
}
