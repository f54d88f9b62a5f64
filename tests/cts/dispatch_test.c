/* Kernel dispatch: host functions and parallel-for where the driver runs host work (cpu);
 * OpenCL C programs built from source where it builds device code (opencl). Each case skips,
 * with the reason, on drivers without that path. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/cts/cts.h"

TestSuite(dispatch, .init = cts_setup, .fini = cts_teardown);

/* ---- host work ---- */

typedef struct scale_job {
  xr_hal_buffer_t *input, *output;
  size_t count;
} scale_job_t;

/* output[i] = 2 * input[i] + 1, through the host-pointer accessor. */
static void scale_range(void *context, size_t begin, size_t end) {
  scale_job_t *job = context;
  float *in = NULL, *out = NULL;
  if (xr_hal_buffer_host_pointer(job->input, (void **)&in) != XR_OK ||
      xr_hal_buffer_host_pointer(job->output, (void **)&out) != XR_OK) {
    return; /* leaves the output unwritten, which the test detects */
  }
  for (size_t i = begin; i < end; i++) out[i] = 2.0f * in[i] + 1.0f;
}

static void scale_all(void *context) {
  scale_job_t *job = context;
  scale_range(job, 0, job->count);
}

static void skip_unless_host_work(xr_status_t status) {
  if (status == XR_UNIMPLEMENTED) {
    cr_skip_test("%s runs no host functions: %s", XR_CTS_DRIVER_NAME, xr_last_error());
  }
  CTS_OK(status);
}

static void run_scale(bool parallel) {
  enum { COUNT = 1 << 20 };
  float *input = cts_malloc(COUNT * sizeof(float)), *output = cts_malloc(COUNT * sizeof(float));
  for (size_t i = 0; i < COUNT; i++) input[i] = (float)(i % 1000) - 500.0f;
  xr_hal_buffer_t *in = NULL, *out = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, COUNT * sizeof(float), &in));
  CTS_OK(xr_hal_buffer_alloc(cts_device, COUNT * sizeof(float), &out));
  uint32_t poison = 0x7fc00001; /* a NaN: any element the kernel skips fails the check */
  CTS_OK(xr_hal_buffer_fill(out, 0, COUNT * sizeof(float), &poison, 4));
  xr_hal_stream_t *stream = NULL;
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  scale_job_t job = {.input = in, .output = out, .count = COUNT};
  /* Upload, compute, download: all in stream order, nothing synchronised in between. */
  CTS_OK(xr_hal_stream_write(stream, in, 0, input, COUNT * sizeof(float)));
  xr_status_t status = parallel ? xr_hal_stream_enqueue_parallel(stream, COUNT, 0, scale_range, &job)
                                : xr_hal_stream_enqueue_host(stream, scale_all, &job);
  if (status != XR_OK) {
    xr_hal_stream_destroy(stream);
    xr_hal_buffer_free(out);
    xr_hal_buffer_free(in);
    free(input);
    free(output);
    skip_unless_host_work(status);
  }
  CTS_OK(xr_hal_stream_read(stream, output, out, 0, COUNT * sizeof(float)));
  CTS_OK(xr_hal_stream_synchronize(stream));
  for (size_t i = 0; i < COUNT; i++) {
    float expected = 2.0f * input[i] + 1.0f;
    if (output[i] != expected) cr_assert_fail("out[%zu] = %g, expected %g", i, output[i], expected);
  }
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(out);
  xr_hal_buffer_free(in);
  free(input);
  free(output);
}

Test(dispatch, host_function_round_trip) { run_scale(false); }

Test(dispatch, parallel_for_round_trip) { run_scale(true); }

typedef struct coverage {
  _Atomic unsigned char *hits;
} coverage_t;

static void mark_range(void *context, size_t begin, size_t end) {
  coverage_t *coverage = context;
  for (size_t i = begin; i < end; i++) coverage->hits[i]++;
}

Test(dispatch, parallel_for_covers_every_item_once) {
  static const size_t counts[] = {1, 7, 1000, 100003};
  static const size_t grains[] = {0, 1, 3, 4096};
  xr_hal_stream_t *stream = NULL;
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  for (size_t c = 0; c < 4; c++) {
    for (size_t g = 0; g < 4; g++) {
      coverage_t coverage = {.hits = calloc(counts[c], 1)};
      xr_status_t status =
          xr_hal_stream_enqueue_parallel(stream, counts[c], grains[g], mark_range, &coverage);
      if (status != XR_OK) {
        free((void *)coverage.hits);
        xr_hal_stream_destroy(stream);
        skip_unless_host_work(status);
      }
      CTS_OK(xr_hal_stream_synchronize(stream));
      for (size_t i = 0; i < counts[c]; i++) {
        cr_assert_eq(coverage.hits[i], 1, "count %zu grain %zu: item %zu ran %d times", counts[c],
                     grains[g], i, coverage.hits[i]);
      }
      free((void *)coverage.hits);
    }
  }
  xr_hal_stream_destroy(stream);
}

/* ---- device code ---- */

static const char saxpy_source[] =
    "__kernel void saxpy(__global float *y, __global const float *x, float a, uint n) {\n"
    "  size_t i = get_global_id(0);\n"
    "  if (i < n) y[i] = a * x[i] + y[i] + OFFSET;\n"
    "}\n"
    "__kernel void reverse_in_group(__global int *data, __local int *scratch) {\n"
    "  size_t l = get_local_id(0), n = get_local_size(0), base = get_group_id(0) * n;\n"
    "  scratch[l] = data[base + l];\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  data[base + l] = scratch[n - 1 - l];\n"
    "}\n";

static xr_hal_executable_t *build_or_skip(const char *source, const char *options) {
  xr_hal_executable_params_t params = {.format = XR_HAL_EXECUTABLE_OPENCL_C,
                                       .data = source,
                                       .size = strlen(source),
                                       .options = options,
                                       .label = "cts.cl"};
  xr_hal_executable_t *executable = NULL;
  xr_status_t status = xr_hal_executable_create(cts_device, &params, &executable);
  if (status == XR_UNIMPLEMENTED) {
    cr_skip_test("%s builds no OpenCL C: %s", XR_CTS_DRIVER_NAME, xr_last_error());
  }
  CTS_OK(status);
  return executable;
}

Test(dispatch, opencl_kernel_round_trip) {
  enum { N = 1000, BLOCK = 64 };
  xr_hal_executable_t *executable = build_or_skip(saxpy_source, "-DOFFSET=0.5f");
  xr_hal_kernel_t *saxpy = NULL;
  CTS_OK(xr_hal_kernel_lookup(executable, "saxpy", &saxpy));
  xr_hal_kernel_t *again = NULL;
  CTS_OK(xr_hal_kernel_lookup(executable, "saxpy", &again));
  cr_assert_eq(again, saxpy, "lookups of one name share a handle");
  float x[N], y[N], result[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = (float)(N - i);
  }
  /* y lives in a view at an aligned offset, to pass a view as an argument. */
  xr_hal_buffer_t *xs = NULL, *backing = NULL, *ys = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, sizeof x, &xs));
  CTS_OK(xr_hal_buffer_alloc(cts_device, 4096 + sizeof y, &backing));
  CTS_OK(xr_hal_buffer_view(backing, 4096, sizeof y, &ys));
  CTS_OK(xr_hal_buffer_write(xs, 0, x, sizeof x));
  CTS_OK(xr_hal_buffer_write(ys, 0, y, sizeof y));
  float a = 3.0f;
  uint32_t n = N;
  xr_hal_kernel_arg_t args[] = {xr_hal_arg_buffer(ys), xr_hal_arg_buffer(xs),
                                xr_hal_arg_bytes(&a, sizeof a), xr_hal_arg_bytes(&n, sizeof n)};
  xr_hal_dispatch_t dispatch = {.grid = {(N + BLOCK - 1) / BLOCK, 1, 1},
                                .block = {BLOCK, 1, 1},
                                .args = args,
                                .arg_count = 4};
  xr_hal_stream_t *stream = NULL;
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  CTS_OK(xr_hal_stream_dispatch(stream, saxpy, &dispatch));
  a = 100.0f; /* by-value arguments were captured at dispatch */
  CTS_OK(xr_hal_stream_read(stream, result, ys, 0, sizeof result));
  CTS_OK(xr_hal_stream_synchronize(stream));
  for (int i = 0; i < N; i++) {
    float expected = 3.0f * x[i] + y[i] + 0.5f;
    cr_assert_eq(result[i], expected, "y[%d] = %g, expected %g", i, result[i], expected);
  }

  /* Local memory arguments. */
  xr_hal_kernel_t *reverse = NULL;
  CTS_OK(xr_hal_kernel_lookup(executable, "reverse_in_group", &reverse));
  int32_t values[256], reversed[256];
  for (int i = 0; i < 256; i++) values[i] = i;
  xr_hal_buffer_t *data = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, sizeof values, &data));
  CTS_OK(xr_hal_buffer_write(data, 0, values, sizeof values));
  xr_hal_kernel_arg_t local_args[] = {xr_hal_arg_buffer(data),
                                      xr_hal_arg_local(BLOCK * sizeof(int32_t))};
  xr_hal_dispatch_t local_dispatch = {
      .grid = {256 / BLOCK, 1, 1}, .block = {BLOCK, 1, 1}, .args = local_args, .arg_count = 2};
  CTS_OK(xr_hal_stream_dispatch(stream, reverse, &local_dispatch));
  CTS_OK(xr_hal_stream_read(stream, reversed, data, 0, sizeof reversed));
  CTS_OK(xr_hal_stream_synchronize(stream));
  for (int i = 0; i < 256; i++) {
    int expected = (i / BLOCK) * BLOCK + (BLOCK - 1 - i % BLOCK);
    cr_assert_eq(reversed[i], expected, "element %d = %d, expected %d", i, reversed[i], expected);
  }

  /* Misuse: unknown kernel, zero-size grid, unaligned view, shared memory size on OpenCL. */
  xr_hal_kernel_t *missing = NULL;
  CTS_FAILS_WITH(XR_NOT_FOUND, xr_hal_kernel_lookup(executable, "no_such_kernel", &missing));
  xr_hal_dispatch_t empty = dispatch;
  empty.grid[1] = 0;
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_dispatch(stream, saxpy, &empty));
  xr_hal_buffer_t *unaligned = NULL;
  CTS_OK(xr_hal_buffer_view(backing, 4, sizeof y, &unaligned));
  args[0] = xr_hal_arg_buffer(unaligned);
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_dispatch(stream, saxpy, &dispatch));
  cr_assert(strstr(xr_last_error(), "args[0]"), "%s", xr_last_error());
  args[0] = xr_hal_arg_buffer(ys);
  xr_hal_dispatch_t bad_args = dispatch;
  bad_args.arg_count = 2;
  bad_args.args = NULL;
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_dispatch(stream, saxpy, &bad_args));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_stream_dispatch(stream, NULL, &dispatch));

  xr_hal_buffer_free(unaligned);
  xr_hal_buffer_free(data);
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(ys);
  xr_hal_buffer_free(backing);
  xr_hal_buffer_free(xs);
  xr_hal_executable_destroy(executable);
}

Test(dispatch, build_error_carries_the_compiler_log) {
  static const char broken[] =
      "__kernel void broken(__global float *y) { y[0] = undefined_identifier_xyz; }\n";
  xr_hal_executable_params_t params = {.format = XR_HAL_EXECUTABLE_OPENCL_C,
                                       .data = broken,
                                       .size = sizeof broken - 1,
                                       .label = "broken.cl"};
  xr_hal_executable_t *executable = NULL;
  xr_status_t status = xr_hal_executable_create(cts_device, &params, &executable);
  if (status == XR_UNIMPLEMENTED) {
    cr_skip_test("%s builds no OpenCL C: %s", XR_CTS_DRIVER_NAME, xr_last_error());
  }
  cr_assert_eq(status, XR_INVALID_ARGUMENT, "%s: %s", xr_status_name(status), xr_last_error());
  cr_assert_null(executable);
  const char *message = xr_last_error();
  cr_assert(strstr(message, "broken.cl"), "names the program: %s", message);
  cr_assert(strstr(message, "CL_BUILD_PROGRAM_FAILURE"), "names the error: %s", message);
  cr_assert(strstr(message, "undefined_identifier_xyz"), "includes the log: %s", message);
}

static int count_cache_entries(const char *directory) {
  DIR *dir = opendir(directory);
  if (!dir) return 0;
  int count = 0;
  for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
    if (strncmp(entry->d_name, "opencl-", 7) == 0 && strstr(entry->d_name, ".bin")) count++;
  }
  closedir(dir);
  return count;
}

Test(dispatch, program_binaries_are_cached_and_corruption_is_harmless) {
  char directory[4096];
  const char *tmp = getenv("TEST_TMPDIR");
  snprintf(directory, sizeof directory, "%s/xr-cache-XXXXXX", tmp ? tmp : "/tmp");
  cr_assert_not_null(mkdtemp(directory));
  setenv("XR_HAL_CACHE_DIR", directory, 1);
  static const char source[] = "__kernel void k(__global int *p) { p[get_global_id(0)] = 7; }\n";
  xr_hal_executable_t *executable = build_or_skip(source, NULL);
  xr_hal_executable_destroy(executable);
  cr_assert_eq(count_cache_entries(directory), 1, "one entry after the first build");
  executable = build_or_skip(source, NULL);
  xr_hal_executable_destroy(executable);
  cr_assert_eq(count_cache_entries(directory), 1, "the second build reuses it");
  executable = build_or_skip(source, "-DDIFFERENT_OPTIONS");
  xr_hal_executable_destroy(executable);
  cr_assert_eq(count_cache_entries(directory), 2, "options are part of the key");

  /* Corrupt every entry: builds still succeed and the kernel still runs. */
  DIR *dir = opendir(directory);
  for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
    if (entry->d_name[0] == '.') continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", directory, entry->d_name);
    FILE *file = fopen(path, "r+b");
    cr_assert_not_null(file);
    fseek(file, 40, SEEK_SET);
    fputs("garbage", file);
    fclose(file);
  }
  closedir(dir);
  executable = build_or_skip(source, NULL);
  xr_hal_kernel_t *kernel = NULL;
  CTS_OK(xr_hal_kernel_lookup(executable, "k", &kernel));
  xr_hal_buffer_t *buffer = NULL;
  CTS_OK(xr_hal_buffer_alloc(cts_device, 16 * sizeof(int32_t), &buffer));
  xr_hal_stream_t *stream = NULL;
  CTS_OK(xr_hal_stream_create(cts_device, &stream));
  xr_hal_kernel_arg_t arg = xr_hal_arg_buffer(buffer);
  xr_hal_dispatch_t dispatch = {.grid = {4, 1, 1}, .block = {4, 1, 1}, .args = &arg, .arg_count = 1};
  CTS_OK(xr_hal_stream_dispatch(stream, kernel, &dispatch));
  int32_t values[16] = {0};
  CTS_OK(xr_hal_stream_read(stream, values, buffer, 0, sizeof values));
  CTS_OK(xr_hal_stream_synchronize(stream));
  for (int i = 0; i < 16; i++) cr_assert_eq(values[i], 7);
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(buffer);
  xr_hal_executable_destroy(executable);

  /* An unwritable cache directory is not an error either. */
  setenv("XR_HAL_CACHE_DIR", "/proc/no-such-dir/xreplay", 1);
  executable = build_or_skip(source, "-DUNCACHED");
  xr_hal_executable_destroy(executable);
}

Test(dispatch, executable_arguments_are_checked) {
  xr_hal_executable_t *executable = NULL;
  xr_hal_executable_params_t params = {.format = XR_HAL_EXECUTABLE_OPENCL_C};
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_executable_create(cts_device, &params, &executable));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_executable_create(cts_device, NULL, &executable));
  params.data = "x";
  params.size = 1;
  params.format = (xr_hal_executable_format_t)99;
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_executable_create(cts_device, &params, &executable));
  CTS_FAILS_WITH(XR_INVALID_ARGUMENT, xr_hal_kernel_lookup(NULL, "k", NULL));
  cr_assert_null(executable);
}
