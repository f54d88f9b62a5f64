/* hal_bench: copy bandwidth (host->device, device->host, device->device) from 1 MiB to 256 MiB
 * and the overhead of an event record + synchronize, for the first device of every available
 * HAL driver, next to plain memcpy on this machine as the ceiling.
 *
 *   bazel run -c opt //tools:hal_bench -- [--driver NAME] [--max-mib N]
 *
 * Device timings come from HAL events (what the replay engine uses); memcpy from
 * CLOCK_MONOTONIC. Each figure is the best of several repetitions; GB/s = 1e9 bytes per second
 * of payload (a copy of N bytes counts N, not the 2N of memory traffic). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hal/hal.h"

static double now_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec * 1e3 + (double)now.tv_nsec * 1e-6;
}

static int repetitions_for(size_t bytes) {
  if (bytes <= (4u << 20)) return 30;
  if (bytes <= (64u << 20)) return 10;
  return 5;
}

static double memcpy_best_ms(void *dst, const void *src, size_t bytes) {
  double best = 0;
  for (int r = 0; r < repetitions_for(bytes) + 1; r++) {
    double start = now_ms();
    memcpy(dst, src, bytes);
    double ms = now_ms() - start;
    /* Keeps the copy from being optimised away and reads the result once. */
    if (((volatile char *)dst)[bytes - 1] != ((const char *)src)[bytes - 1]) return -1;
    if (r > 0 && (best == 0 || ms < best)) best = ms;
  }
  return best;
}

typedef enum direction { HOST_TO_DEVICE, DEVICE_TO_HOST, DEVICE_TO_DEVICE } direction_t;

#define CHECK(expr)                                                                           \
  do {                                                                                        \
    xr_status_t check_status_ = (expr);                                                       \
    if (check_status_ != XR_OK) {                                                             \
      fprintf(stderr, "hal_bench: %s: %s: %s\n", #expr, xr_status_name(check_status_),         \
              xr_last_error());                                                               \
      return -1;                                                                              \
    }                                                                                         \
  } while (0)

typedef struct bench {
  xr_hal_device_t *device;
  xr_hal_stream_t *stream;
  xr_hal_event_t *start, *end;
  xr_hal_buffer_t *a, *b;
  char *host_a, *host_b;
} bench_t;

static double transfer_best_ms(bench_t *bench, direction_t direction, size_t bytes) {
  double best = 0;
  for (int r = 0; r < repetitions_for(bytes) + 1; r++) {
    CHECK(xr_hal_event_record(bench->start, bench->stream));
    switch (direction) {
      case HOST_TO_DEVICE:
        CHECK(xr_hal_stream_write(bench->stream, bench->a, 0, bench->host_a, bytes));
        break;
      case DEVICE_TO_HOST:
        CHECK(xr_hal_stream_read(bench->stream, bench->host_b, bench->a, 0, bytes));
        break;
      case DEVICE_TO_DEVICE:
        CHECK(xr_hal_stream_copy(bench->stream, bench->b, 0, bench->a, 0, bytes));
        break;
    }
    CHECK(xr_hal_event_record(bench->end, bench->stream));
    double ms = 0;
    CHECK(xr_hal_event_elapsed_ms(bench->start, bench->end, &ms));
    if (r > 0 && ms > 0 && (best == 0 || ms < best)) best = ms; /* r == 0 warms up */
  }
  return best;
}

/* Mean microseconds of record + host synchronize on an idle stream. */
static double event_overhead_us(bench_t *bench) {
  enum { ROUNDS = 2000 };
  CHECK(xr_hal_stream_synchronize(bench->stream));
  double start = now_ms();
  for (int i = 0; i < ROUNDS; i++) {
    CHECK(xr_hal_event_record(bench->end, bench->stream));
    CHECK(xr_hal_event_synchronize(bench->end));
  }
  return (now_ms() - start) * 1e3 / ROUNDS;
}

static double gbps(size_t bytes, double ms) { return ms > 0 ? (double)bytes / (ms * 1e6) : 0; }

static int bench_driver(const char *driver, size_t max_bytes, char *host_a, char *host_b) {
  bench_t bench = {.host_a = host_a, .host_b = host_b};
  xr_status_t status = xr_hal_device_create(driver, &bench.device);
  if (status != XR_OK) {
    printf("%s: %s: %s\n\n", driver, xr_status_name(status), xr_last_error());
    return 0;
  }
  xr_hal_device_properties_t properties;
  CHECK(xr_hal_device_properties(bench.device, &properties));
  CHECK(xr_hal_stream_create(bench.device, &bench.stream));
  CHECK(xr_hal_event_create(bench.device, &bench.start));
  CHECK(xr_hal_event_create(bench.device, &bench.end));
  CHECK(xr_hal_buffer_alloc(bench.device, max_bytes, &bench.a));
  CHECK(xr_hal_buffer_alloc(bench.device, max_bytes, &bench.b));
  uint32_t pattern = 0x01234567;
  CHECK(xr_hal_buffer_fill(bench.a, 0, max_bytes, &pattern, 4));
  CHECK(xr_hal_buffer_fill(bench.b, 0, max_bytes, &pattern, 4));

  printf("%s (%s)\n", properties.spec, properties.name);
  printf("  %8s  %10s %6s  %10s %6s  %10s %6s  %10s\n", "size", "h2d GB/s", "ratio", "d2h GB/s",
         "ratio", "d2d GB/s", "ratio", "memcpy");
  for (size_t bytes = 1u << 20; bytes <= max_bytes; bytes *= 4) {
    double ceiling = gbps(bytes, memcpy_best_ms(host_b, host_a, bytes));
    double h2d = gbps(bytes, transfer_best_ms(&bench, HOST_TO_DEVICE, bytes));
    double d2h = gbps(bytes, transfer_best_ms(&bench, DEVICE_TO_HOST, bytes));
    double d2d = gbps(bytes, transfer_best_ms(&bench, DEVICE_TO_DEVICE, bytes));
    printf("  %5zu MiB  %10.2f %5.0f%%  %10.2f %5.0f%%  %10.2f %5.0f%%  %10.2f\n", bytes >> 20, h2d,
           100 * h2d / ceiling, d2h, 100 * d2h / ceiling, d2d, 100 * d2d / ceiling, ceiling);
  }
  printf("  event record + synchronize: %.2f us\n\n", event_overhead_us(&bench));

  xr_hal_buffer_free(bench.b);
  xr_hal_buffer_free(bench.a);
  xr_hal_event_destroy(bench.end);
  xr_hal_event_destroy(bench.start);
  xr_hal_stream_destroy(bench.stream);
  xr_hal_device_destroy(bench.device);
  return 0;
}

int main(int argc, char **argv) {
  const char *only = NULL;
  size_t max_mib = 256;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--driver") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (strcmp(argv[i], "--max-mib") == 0 && i + 1 < argc) {
      max_mib = strtoul(argv[++i], NULL, 10);
    } else {
      fprintf(stderr, "usage: hal_bench [--driver NAME] [--max-mib N]\n");
      return 2;
    }
  }
  if (max_mib == 0) max_mib = 1;
  size_t max_bytes = max_mib << 20;
  char *host_a = NULL, *host_b = NULL;
  if (posix_memalign((void **)&host_a, 4096, max_bytes) || posix_memalign((void **)&host_b, 4096, max_bytes)) {
    fprintf(stderr, "hal_bench: cannot allocate 2 x %zu MiB of host memory\n", max_mib);
    return 1;
  }
  memset(host_a, 1, max_bytes); /* fault the pages in before anything is timed */
  memset(host_b, 2, max_bytes);

  int failures = 0;
  for (size_t index = 0; index < xr_hal_driver_count(); index++) {
    xr_hal_driver_info_t info;
    if (xr_hal_driver_info(index, &info) != XR_OK) continue;
    if (only && strcmp(only, info.name) != 0) continue;
    if (info.status != XR_OK) {
      printf("%s: %s: %s\n\n", info.name, xr_status_name(info.status), info.reason);
      continue;
    }
    if (bench_driver(info.name, max_bytes, host_a, host_b) != 0) failures++;
  }
  free(host_b);
  free(host_a);
  return failures ? 1 : 0;
}
