/* Streams and events: ordering, cross-stream joins, timing. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "tests/cts/cts.h"

TestSuite(stream, .init = cts_setup, .fini = cts_teardown);
TestSuite(event, .init = cts_setup, .fini = cts_teardown);

#define BIG (64u << 20)

static void sleep_ms(void *context) {
  long ms = (long)(intptr_t)context;
  struct timespec duration = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  nanosleep(&duration, NULL);
}

/* Puts a slow host function on the stream where the driver supports them (cpu); the other
 * drivers get a long device operation instead. Returns whether a host function was queued. */
static bool enqueue_slow_work(xr_hal_stream_t *stream, xr_hal_buffer_t *scratch, long ms) {
  xr_status_t status = xr_hal_stream_enqueue_host(stream, sleep_ms, (void *)(intptr_t)ms);
  if (status == XR_OK) return true;
  cr_assert_eq(status, XR_UNIMPLEMENTED, "%s", xr_last_error());
  uint32_t junk = 0x01020304;
  for (int i = 0; i < 4; i++) {
    CTS_OK(xr_hal_stream_fill(stream, scratch, 0, xr_hal_buffer_size(scratch), &junk, 4));
  }
  return false;
}

static void assert_all_bytes(const uint8_t *data, size_t size, uint8_t expected) {
  for (size_t i = 0; i < size; i++) {
    if (data[i] != expected) {
      cr_assert_fail("byte %zu of %zu is %#x, expected %#x", i, size, data[i], expected);
    }
  }
}

Test(stream, in_order_long_operation_then_dependent_copy) {
  uint8_t *host = cts_malloc(BIG), *back = cts_malloc(BIG);
  cts_pattern(host, BIG, 7);
  xr_hal_buffer_t *a = NULL, *b = NULL, *scratch = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, BIG, &a));
  CTS_OK(xr_hal_buffer_alloc(cts_device, BIG, &b));
  CTS_OK(xr_hal_buffer_alloc(cts_device, BIG, &scratch));
  uint8_t old = 0x11, fresh = 0x77;
  CTS_OK(xr_hal_buffer_fill(b, 0, BIG, &old, 1));
  xr_hal_stream_t *stream = NULL;
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  enqueue_slow_work(stream, scratch, 100);
  CTS_OK(xr_hal_stream_write(stream, a, 0, host, BIG));
  CTS_OK(xr_hal_stream_fill(stream, a, 0, BIG, &fresh, 1));
  CTS_OK(xr_hal_stream_copy(stream, b, 0, a, 0, BIG));
  CTS_OK(xr_hal_stream_read(stream, back, b, 0, BIG));
  CTS_OK(xr_hal_stream_synchronize(stream));
  assert_all_bytes(back, BIG, fresh);
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(scratch);
  xr_hal_buffer_free(b);
  xr_hal_buffer_free(a);
  free(back);
  free(host);
}

Test(stream, two_streams_joined_by_an_event) {
  uint8_t *back = cts_malloc(BIG);
  xr_hal_buffer_t *a = NULL, *b = NULL, *scratch = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, BIG, &a));
  CTS_OK(xr_hal_buffer_alloc(cts_device, BIG, &b));
  CTS_OK(xr_hal_buffer_alloc(cts_device, BIG, &scratch));
  uint8_t zero = 0, value = 0x5a;
  CTS_OK(xr_hal_buffer_fill(a, 0, BIG, &zero, 1));
  CTS_OK(xr_hal_buffer_fill(b, 0, BIG, &zero, 1));
  xr_hal_stream_t *producer = NULL, *consumer = NULL;
  xr_hal_event_t *ready = NULL;
  CTS_OK(xr_hal_stream_create(cts_device, &producer));
  CTS_OK(xr_hal_stream_create(cts_device, &consumer));
  CTS_OK(xr_hal_event_create(cts_device, &ready));
  enqueue_slow_work(producer, scratch, 100);
  CTS_OK(xr_hal_stream_fill(producer, a, 0, BIG, &value, 1));
  CTS_OK(xr_hal_event_record(ready, producer));
  CTS_OK(xr_hal_stream_wait_event(consumer, ready));
  CTS_OK(xr_hal_stream_copy(consumer, b, 0, a, 0, BIG));
  CTS_OK(xr_hal_stream_read(consumer, back, b, 0, BIG));
  CTS_OK(xr_hal_stream_synchronize(consumer)); /* only the consumer: the event carries the join */
  assert_all_bytes(back, BIG, value);
  xr_hal_event_destroy(ready);
  xr_hal_stream_destroy(consumer);
  xr_hal_stream_destroy(producer);
  xr_hal_buffer_free(scratch);
  xr_hal_buffer_free(b);
  xr_hal_buffer_free(a);
  free(back);
}

typedef struct handshake {
  atomic_int flag;
  atomic_int saw_flag;
} handshake_t;

static void wait_for_flag(void *context) {
  handshake_t *handshake = context;
  for (int i = 0; i < 5000 && !atomic_load(&handshake->flag); i++) sleep_ms((void *)(intptr_t)1);
  atomic_store(&handshake->saw_flag, atomic_load(&handshake->flag));
}

static void set_flag(void *context) { atomic_store(&((handshake_t *)context)->flag, 1); }

Test(stream, separate_streams_run_independently) {
  xr_hal_stream_t *first = NULL, *second = NULL;
  CTS_OK(xr_hal_stream_create(cts_device, &first));
  CTS_OK(xr_hal_stream_create(cts_device, &second));
  handshake_t handshake = {0};
  /* The first stream blocks until the second one runs: only independent streams finish. */
  xr_status_t status = xr_hal_stream_enqueue_host(first, wait_for_flag, &handshake);
  if (status == XR_UNIMPLEMENTED) {
    xr_hal_stream_destroy(second);
    xr_hal_stream_destroy(first);
    cr_skip_test("%s: needs host functions on streams: %s", XR_CTS_DRIVER_NAME, xr_last_error());
  }
  CTS_OK(status);
  CTS_OK(xr_hal_stream_enqueue_host(second, set_flag, &handshake));
  CTS_OK(xr_hal_stream_synchronize(first));
  CTS_OK(xr_hal_stream_synchronize(second));
  cr_assert_eq(atomic_load(&handshake.saw_flag), 1, "the streams did not run concurrently");
  xr_hal_stream_destroy(second);
  xr_hal_stream_destroy(first);
}

Test(stream, destroy_with_work_in_flight_is_safe) {
  uint8_t *host = cts_malloc(BIG);
  xr_hal_buffer_t *a = NULL, *b = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, BIG, &a));
  CTS_OK(xr_hal_buffer_alloc(cts_device, BIG, &b));
  xr_hal_stream_t *stream = NULL;
  xr_hal_event_t *event = NULL;
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  CTS_OK(xr_hal_event_create(cts_device, &event));
  enqueue_slow_work(stream, b, 50);
  uint32_t word = 0xfeedface;
  CTS_OK(xr_hal_stream_fill(stream, a, 0, BIG, &word, 4));
  CTS_OK(xr_hal_stream_copy(stream, b, 0, a, 0, BIG));
  CTS_OK(xr_hal_stream_read(stream, host, b, 0, BIG));
  CTS_OK(xr_hal_event_record(event, stream));
  /* Handles go while the work is queued: the HAL keeps what the work needs. */
  xr_hal_buffer_free(a);
  xr_hal_buffer_free(b);
  xr_hal_event_destroy(event);
  xr_hal_stream_destroy(stream); /* drains */
  for (size_t i = 0; i < BIG; i += 4) {
    if (memcmp(host + i, &word, 4) != 0) cr_assert_fail("word at %zu was not copied", i);
  }
  free(host);
}

Test(stream, invalid_arguments) {
  xr_hal_stream_t *stream = NULL;
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_create(NULL, &stream));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_create(cts_device, NULL));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_synchronize(NULL));
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  xr_hal_buffer_t *buffer = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, 64, &buffer));
  uint8_t data[64] = {0};
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_write(NULL, buffer, 0, data, 64));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_write(stream, NULL, 0, data, 64));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_read(stream, NULL, buffer, 0, 64));
  CTS_FAILS_WITH(XR_OUT_OF_RANGE, xr_hal_stream_read(stream, data, buffer, 1, 64));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_copy(stream, buffer, 0, NULL, 0, 1));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_enqueue_host(stream, NULL, NULL));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_enqueue_parallel(stream, 4, 1, NULL, NULL));
  CTS_OK(xr_hal_stream_synchronize(stream));
  xr_hal_buffer_free(buffer);
  xr_hal_stream_destroy(stream);
}

Test(event, times_are_monotonic_and_non_negative) {
  xr_hal_buffer_t *a = NULL, *b = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, 8u << 20, &a));
  CTS_OK(xr_hal_buffer_alloc(cts_device, 8u << 20, &b));
  xr_hal_stream_t *stream = NULL;
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  xr_hal_event_t *events[4] = {0};
  for (int i = 0; i < 4; i++) CTS_OK(xr_hal_event_create(cts_device, &events[i]));
  uint8_t zero = 0;
  CTS_OK(xr_hal_stream_fill(stream, a, 0, 8u << 20, &zero, 1));
  for (int i = 0; i < 4; i++) {
    CTS_OK(xr_hal_event_record(events[i], stream));
    CTS_OK(xr_hal_stream_copy(stream, b, 0, a, 0, 8u << 20));
  }
  double previous = 0;
  for (int i = 0; i < 4; i++) {
    double ms = -1;
    CTS_OK(xr_hal_event_elapsed_ms(events[0], events[i], &ms));
    cr_assert_geq(ms, previous, "event %d at %g ms is before event %d at %g ms", i, ms, i - 1,
                  previous);
    previous = ms;
  }
  double zero_ms = -1;
  CTS_OK(xr_hal_event_elapsed_ms(events[2], events[2], &zero_ms));
  cr_assert_eq(zero_ms, 0.0);
  for (int i = 0; i < 4; i++) xr_hal_event_destroy(events[i]);
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(b);
  xr_hal_buffer_free(a);
}

Test(event, elapsed_time_of_known_work_is_plausible) {
  xr_hal_buffer_t *a = NULL, *b = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, BIG, &a));
  CTS_OK(xr_hal_buffer_alloc(cts_device, BIG, &b));
  xr_hal_stream_t *stream = NULL;
  xr_hal_event_t *start = NULL, *end = NULL;
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  CTS_OK(xr_hal_event_create(cts_device, &start));
  CTS_OK(xr_hal_event_create(cts_device, &end));
  uint8_t zero = 0;
  CTS_OK(xr_hal_buffer_fill(a, 0, BIG, &zero, 1));

  /* Four 64 MiB copies: bounded below by a 10 TB/s memory system, above by the host's own
   * wall-clock time around them. */
  double host_start = cts_now_ms();
  CTS_OK(xr_hal_event_record(start, stream));
  for (int i = 0; i < 4; i++) CTS_OK(xr_hal_stream_copy(stream, b, 0, a, 0, BIG));
  CTS_OK(xr_hal_event_record(end, stream));
  CTS_OK(xr_hal_event_synchronize(end));
  double host_ms = cts_now_ms() - host_start;
  double ms = 0;
  CTS_OK(xr_hal_event_elapsed_ms(start, end, &ms));
  double fastest_ms = 4.0 * 2 * BIG / 10e12 * 1e3;
  cr_assert(ms > fastest_ms && ms <= host_ms + 1.0,
            "4 x 64 MiB copies took %g ms by events, %g ms by the host clock", ms, host_ms);

  /* A host function that sleeps 50 ms, where the driver runs them. */
  CTS_OK(xr_hal_event_record(start, stream));
  bool slept = xr_hal_stream_enqueue_host(stream, sleep_ms, (void *)(intptr_t)50) == XR_OK;
  CTS_OK(xr_hal_event_record(end, stream));
  CTS_OK(xr_hal_event_elapsed_ms(start, end, &ms));
  if (slept) cr_assert(ms >= 49.0 && ms < 1000.0, "a 50 ms sleep measured %g ms", ms);
  else cr_assert(ms >= 0.0 && ms < 1000.0, "an empty interval measured %g ms", ms);

  xr_hal_event_destroy(end);
  xr_hal_event_destroy(start);
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(b);
  xr_hal_buffer_free(a);
}

Test(event, unrecorded_events_and_invalid_arguments) {
  xr_hal_event_t *start = NULL, *end = NULL;
  xr_hal_stream_t *stream = NULL;
  CTS_OK(xr_hal_event_create(cts_device, &start));
  CTS_OK(xr_hal_event_create(cts_device, &end));
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  CTS_OK(xr_hal_event_synchronize(start)); /* a new event counts as reached */
  CTS_OK(xr_hal_stream_wait_event(stream, start));
  double ms = 0;
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_event_elapsed_ms(start, end, &ms));
  CTS_OK(xr_hal_event_record(start, stream));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_event_elapsed_ms(start, end, &ms));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_event_elapsed_ms(start, start, NULL));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_event_record(NULL, stream));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_event_record(start, NULL));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_event_synchronize(NULL));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_wait_event(stream, NULL));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_event_create(NULL, &end));
  /* Re-recording moves the mark. */
  CTS_OK(xr_hal_event_record(end, stream));
  CTS_OK(xr_hal_event_synchronize(end));
  double first = 0, second = 0;
  CTS_OK(xr_hal_event_elapsed_ms(start, end, &first));
  xr_hal_buffer_t *scratch = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, 4u << 20, &scratch));
  enqueue_slow_work(stream, scratch, 20);
  CTS_OK(xr_hal_event_record(end, stream));
  CTS_OK(xr_hal_event_elapsed_ms(start, end, &second));
  cr_assert_geq(second, first);
  xr_hal_buffer_free(scratch);
  xr_hal_stream_destroy(stream);
  xr_hal_event_destroy(end);
  xr_hal_event_destroy(start);
}

/* Several threads share one device and one stream: enqueues and blocking calls are thread-safe. */
typedef struct worker_args {
  xr_hal_stream_t *shared_stream;
  int index;
  int failures;
} worker_args_t;

static void *hammer(void *argument) {
  worker_args_t *args = argument;
  enum { SIZE = 256 * 1024 };
  uint8_t *data = malloc(SIZE), *back = malloc(SIZE), *back2 = malloc(SIZE);
  xr_hal_buffer_t *buffer = NULL, *copy = NULL;
  if (!data || !back || !back2 || xr_hal_buffer_alloc(cts_device, SIZE, &buffer) != XR_OK ||
      xr_hal_buffer_alloc(cts_device, SIZE, &copy) != XR_OK) {
    args->failures++;
  } else {
    for (int round = 0; round < 20; round++) {
      cts_pattern(data, SIZE, (uint32_t)(args->index * 100 + round));
      /* Blocking calls go through the device's shared blocking stream. */
      if (xr_hal_buffer_write(buffer, 0, data, SIZE) != XR_OK ||
          xr_hal_buffer_read(back, buffer, 0, SIZE) != XR_OK ||
          memcmp(back, data, SIZE) != 0) {
        args->failures++;
      }
      /* Stream calls on a stream every thread uses. */
      if (xr_hal_stream_copy(args->shared_stream, copy, 0, buffer, 0, SIZE) != XR_OK ||
          xr_hal_stream_read(args->shared_stream, back2, copy, 0, SIZE) != XR_OK ||
          xr_hal_stream_synchronize(args->shared_stream) != XR_OK ||
          memcmp(back2, data, SIZE) != 0) {
        args->failures++;
      }
    }
  }
  xr_hal_buffer_free(copy);
  xr_hal_buffer_free(buffer);
  free(back2);
  free(back);
  free(data);
  return NULL;
}

Test(stream, threads_share_a_device_and_a_stream) {
  enum { THREADS = 4 };
  xr_hal_stream_t *stream = NULL;
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  pthread_t threads[THREADS];
  worker_args_t args[THREADS];
  for (int i = 0; i < THREADS; i++) {
    args[i] = (worker_args_t){.shared_stream = stream, .index = i};
    cr_assert_eq(pthread_create(&threads[i], NULL, hammer, &args[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
  for (int i = 0; i < THREADS; i++) cr_assert_eq(args[i].failures, 0, "thread %d failed", i);
  xr_hal_stream_destroy(stream);
}
