/* Graphs and clocks on a real cuda or hip device (built once per driver, XR_GPU_DRIVER=cuda|hip):
 * fills and kernel dispatches captured from a stream run only when the graph is launched, and
 * each launch gives what the eager work gives; N captured dispatches launched as one graph
 * against the same N launched eagerly; what a capturing stream refuses; the clocks read through
 * NVML / AMD SMI. Without such a device every case skips with the driver's reason. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hal/hal.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

#define OK(expr)                                                                       \
  do {                                                                                 \
    xr_status_t ok_status_ = (expr);                                                   \
    cr_assert_eq(ok_status_, XR_OK, "%s -> %s: %s", #expr, xr_status_name(ok_status_), \
                 xr_last_error());                                                     \
  } while (0)

static xr_hal_device_t *device;
static xr_hal_stream_t *stream;

static void open_device(void) {
  const char *tmp = getenv("TEST_TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/xr-gpu-cache", tmp ? tmp : "/tmp");
  setenv("XR_HAL_CACHE_DIR", path, 1);
  xr_hal_driver_info_t info;
  OK(xr_hal_driver_info_by_name(DRIVER, &info));
  if (info.status != XR_OK) {
    cr_skip_test("%s unavailable (%s): %s", DRIVER, xr_status_name(info.status), info.reason);
  }
  OK(xr_hal_device_create(DRIVER, &device));
  OK(xr_hal_stream_create(device, &stream));
  /* What the engine reads to launch as graphs, and the family the shared kernels take. */
  xr_hal_device_properties_t properties;
  OK(xr_hal_device_properties(device, &properties));
  cr_assert(properties.graphs, "%s: properties say no graphs", DRIVER);
  cr_assert_str_eq(properties.kernel_family, "gpu");
}

static void close_device(void) {
  xr_hal_stream_destroy(stream);
  xr_hal_device_destroy(device);
  stream = NULL;
  device = NULL;
}

TestSuite(graph, .init = open_device, .fini = close_device);

/* begin_capture, skipping where the runtime has no graphs (the sentence says which entry). */
static void begin_capture(xr_hal_stream_t *on) {
  xr_status_t status = xr_hal_stream_begin_capture(on);
  if (status == XR_UNAVAILABLE) cr_skip_test("%s", xr_last_error());
  OK(status);
}

enum { CHUNKS = 16, CHUNK_WORDS = 1024 };

Test(graph, captured_fills_run_at_each_launch_not_at_capture) {
  xr_hal_buffer_t *buffer = NULL;
  size_t bytes = (size_t)CHUNKS * CHUNK_WORDS * 4;
  OK(xr_hal_buffer_alloc(device, bytes, &buffer));
  uint32_t before = 0xdeadbeefu;
  OK(xr_hal_buffer_fill(buffer, 0, bytes, &before, 4));

  begin_capture(stream);
  uint32_t patterns[CHUNKS];
  for (uint32_t i = 0; i < CHUNKS; i++) {
    patterns[i] = 0x01010101u * (i + 1); /* the call copies the pattern: reuse is fine */
    OK(xr_hal_stream_fill(stream, buffer, (size_t)i * CHUNK_WORDS * 4, CHUNK_WORDS * 4,
                          &patterns[i], 4));
  }
  xr_hal_graph_t *graph = NULL;
  OK(xr_hal_stream_end_capture(stream, &graph));
  cr_assert_not_null(graph);

  uint32_t *words = malloc(bytes);
  cr_assert_not_null(words);
  OK(xr_hal_buffer_read(words, buffer, 0, bytes));
  for (size_t w = 0; w < (size_t)CHUNKS * CHUNK_WORDS; w++) {
    cr_assert_eq(words[w], before, "word %zu changed by the capture itself: 0x%08x", w, words[w]);
  }
  for (int launch = 0; launch < 2; launch++) {
    if (launch == 1) OK(xr_hal_buffer_fill(buffer, 0, bytes, &before, 4));
    OK(xr_hal_graph_launch(graph, stream));
    OK(xr_hal_stream_synchronize(stream));
    OK(xr_hal_buffer_read(words, buffer, 0, bytes));
    for (size_t w = 0; w < (size_t)CHUNKS * CHUNK_WORDS; w++) {
      uint32_t expected = 0x01010101u * (uint32_t)(w / CHUNK_WORDS + 1);
      cr_assert_eq(words[w], expected, "launch %d, word %zu: 0x%08x, expected 0x%08x", launch, w,
                   words[w], expected);
    }
  }
  free(words);
  xr_hal_graph_destroy(graph);
  xr_hal_buffer_free(buffer);
}

static const char kernel_source[] =
    "extern \"C\" __global__ void add_one(int *data, unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) data[i] += 1;\n"
    "}\n";

typedef struct kernel_setup {
  xr_hal_executable_t *executable;
  xr_hal_kernel_t *kernel;
  xr_hal_buffer_t *buffer;
  unsigned n;
  xr_hal_kernel_arg_t args[2];
  xr_hal_dispatch_t dispatch;
} kernel_setup_t;

static void setup_kernel(kernel_setup_t *k, unsigned n) {
  memset(k, 0, sizeof *k);
  xr_hal_executable_params_t params = {.format = XR_HAL_EXECUTABLE_CUDA_SOURCE,
                                       .data = kernel_source,
                                       .size = sizeof kernel_source - 1,
                                       .label = "graph_test.cu"};
  OK(xr_hal_executable_create(device, &params, &k->executable));
  OK(xr_hal_kernel_lookup(k->executable, "add_one", &k->kernel));
  k->n = n;
  OK(xr_hal_buffer_alloc(device, (size_t)n * 4, &k->buffer));
  int zero = 0;
  OK(xr_hal_buffer_fill(k->buffer, 0, (size_t)n * 4, &zero, 4));
  k->args[0] = xr_hal_arg_buffer(k->buffer);
  k->args[1] = xr_hal_arg_bytes(&k->n, sizeof k->n);
  k->dispatch = (xr_hal_dispatch_t){
      .grid = {(n + 255) / 256, 1, 1}, .block = {256, 1, 1}, .args = k->args, .arg_count = 2};
}

static void teardown_kernel(kernel_setup_t *k) {
  xr_hal_buffer_free(k->buffer);
  xr_hal_executable_destroy(k->executable);
}

/* Every element of the kernel's buffer equals `expected`. */
static void expect_all(const kernel_setup_t *k, int expected) {
  int *values = malloc((size_t)k->n * 4);
  cr_assert_not_null(values);
  OK(xr_hal_buffer_read(values, k->buffer, 0, (size_t)k->n * 4));
  for (unsigned i = 0; i < k->n; i++) {
    cr_assert_eq(values[i], expected, "element %u: %d, expected %d", i, values[i], expected);
  }
  free(values);
}

Test(graph, captured_dispatches_accumulate_per_launch) {
  kernel_setup_t k;
  setup_kernel(&k, 4096);
  OK(xr_hal_stream_dispatch(stream, k.kernel, &k.dispatch)); /* warm-up, eager: 1 */
  begin_capture(stream);
  enum { DISPATCHES = 5 };
  for (int i = 0; i < DISPATCHES; i++) OK(xr_hal_stream_dispatch(stream, k.kernel, &k.dispatch));
  xr_hal_graph_t *graph = NULL;
  OK(xr_hal_stream_end_capture(stream, &graph));
  OK(xr_hal_stream_synchronize(stream));
  expect_all(&k, 1);
  /* Any stream of the device may launch it. */
  xr_hal_stream_t *other = NULL;
  OK(xr_hal_stream_create(device, &other));
  OK(xr_hal_graph_launch(graph, stream));
  OK(xr_hal_stream_synchronize(stream));
  OK(xr_hal_graph_launch(graph, other));
  OK(xr_hal_stream_synchronize(other));
  expect_all(&k, 1 + 2 * DISPATCHES);
  xr_hal_stream_destroy(other);
  xr_hal_graph_destroy(graph);
  teardown_kernel(&k);
}

/* Device milliseconds of `work` between two events, the best of `runs`. */
static double best_ms(void (*work)(void *), void *context, int runs) {
  xr_hal_event_t *start = NULL, *end = NULL;
  OK(xr_hal_event_create(device, &start));
  OK(xr_hal_event_create(device, &end));
  double best = 1e30;
  for (int run = 0; run < runs; run++) {
    OK(xr_hal_event_record(start, stream));
    work(context);
    OK(xr_hal_event_record(end, stream));
    double ms = 0;
    OK(xr_hal_event_elapsed_ms(start, end, &ms));
    if (ms < best) best = ms;
  }
  xr_hal_event_destroy(start);
  xr_hal_event_destroy(end);
  return best;
}

enum { TIMED_DISPATCHES = 256 };

static void eager_dispatches(void *context) {
  kernel_setup_t *k = context;
  for (int i = 0; i < TIMED_DISPATCHES; i++)
    OK(xr_hal_stream_dispatch(stream, k->kernel, &k->dispatch));
}

static void graph_launch(void *context) {
  OK(xr_hal_graph_launch(context, stream));
}

/* Not a benchmark: a graph of N tiny dispatches must not take longer on the device than the
 * same N launched one by one (whose gaps are the host's launch cost), and both must do the work. */
Test(graph, n_dispatches_as_one_graph_are_not_slower_than_eager) {
  kernel_setup_t k;
  setup_kernel(&k, 256);
  eager_dispatches(&k); /* warm-up */
  begin_capture(stream);
  eager_dispatches(&k);
  xr_hal_graph_t *graph = NULL;
  OK(xr_hal_stream_end_capture(stream, &graph));
  graph_launch(graph); /* the first launch uploads the graph */
  OK(xr_hal_stream_synchronize(stream));
  enum { RUNS = 5 };
  double eager = best_ms(eager_dispatches, &k, RUNS);
  double graphed = best_ms(graph_launch, graph, RUNS);
  cr_log_info(
      "%d dispatches: eager %.3f ms (%.2f us each), graph %.3f ms (%.2f us each), "
      "ratio %.2f",
      TIMED_DISPATCHES, eager, eager * 1e3 / TIMED_DISPATCHES, graphed,
      graphed * 1e3 / TIMED_DISPATCHES, graphed / eager);
  cr_expect_gt(graphed, 0);
  cr_expect_lt(graphed, eager * 1.5, "graph %.3f ms vs eager %.3f ms", graphed, eager);
  OK(xr_hal_stream_synchronize(stream));
  /* 1 + RUNS eager batches and 1 + RUNS graph launches (the capture itself ran nothing). */
  expect_all(&k, TIMED_DISPATCHES * (2 + 2 * RUNS));
  xr_hal_graph_destroy(graph);
  teardown_kernel(&k);
}

Test(graph, a_capturing_stream_refuses_events_and_synchronisation) {
  xr_hal_event_t *event = NULL;
  OK(xr_hal_event_create(device, &event));
  xr_hal_graph_t *graph = NULL;
  cr_assert_eq(xr_hal_stream_end_capture(stream, &graph), XR_INVALID_ARGUMENT);
  cr_assert_null(graph);
  cr_assert(strstr(xr_last_error(), "not being captured"), "%s", xr_last_error());
  begin_capture(stream);
  cr_assert_eq(xr_hal_stream_begin_capture(stream), XR_INVALID_ARGUMENT);
  cr_assert_eq(xr_hal_event_record(event, stream), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "being captured"), "%s", xr_last_error());
  cr_assert_eq(xr_hal_stream_wait_event(stream, event), XR_INVALID_ARGUMENT);
  cr_assert_eq(xr_hal_stream_synchronize(stream), XR_INVALID_ARGUMENT);
  /* The capture survived the refusals. */
  OK(xr_hal_stream_end_capture(stream, &graph));
  OK(xr_hal_graph_launch(graph, stream)); /* an empty graph */
  OK(xr_hal_stream_synchronize(stream));
  xr_hal_graph_destroy(graph);
  xr_hal_graph_destroy(NULL);
  xr_hal_event_destroy(event);
}

Test(graph, a_stream_destroyed_while_capturing_ends_the_capture) {
  xr_hal_stream_t *doomed = NULL;
  OK(xr_hal_stream_create(device, &doomed));
  uint32_t pattern = 7;
  xr_hal_buffer_t *buffer = NULL;
  OK(xr_hal_buffer_alloc(device, 64, &buffer)); /* never while this thread captures */
  begin_capture(doomed);
  OK(xr_hal_stream_fill(doomed, buffer, 0, 64, &pattern, 4));
  xr_hal_stream_destroy(doomed);
  /* The device still works. */
  OK(xr_hal_buffer_fill(buffer, 0, 64, &pattern, 4));
  xr_hal_buffer_free(buffer);
}

/* ---- clocks ---- */

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

Test(graph, clocks_are_read_through_the_management_library) {
  xr_hal_clocks_t clocks;
  xr_status_t status = xr_hal_device_clocks(device, &clocks);
  if (status == XR_UNAVAILABLE) cr_skip_test("%s", xr_last_error());
  OK(status);
  cr_log_info("%s: current %u MHz, default %u, max %u, locked %d, throttle %s%s (0x%llx), %s",
              DRIVER, clocks.current_mhz, clocks.default_mhz, clocks.max_mhz, clocks.locked,
              clocks.throttle_known ? "" : "unknown ", clocks.throttle,
              (unsigned long long)clocks.throttle_reasons, clocks.source);
  cr_assert_gt(clocks.current_mhz, 0);
  cr_assert_gt(clocks.max_mhz, 0);
  cr_assert_leq(clocks.current_mhz, clocks.max_mhz + clocks.max_mhz / 10);
  cr_assert(strncmp(clocks.source, "NVML", 4) == 0 || strncmp(clocks.source, "AMD SMI", 7) == 0,
            "%s", clocks.source);
  cr_assert_eq(clocks.throttle_reasons == 0, clocks.throttle[0] == '\0', "%s", clocks.throttle);
  /* Cheap after the first call: the engine reads them around every timing batch. */
  enum { CALLS = 200 };
  double started = now_us();
  for (int i = 0; i < CALLS; i++) OK(xr_hal_device_clocks(device, &clocks));
  double each = (now_us() - started) / CALLS;
  cr_log_info("xr_hal_device_clocks: %.1f us per call", each);
  cr_expect_lt(each, 1000.0);
}
