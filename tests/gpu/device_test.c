/* Device code on a real cuda or hip device (built once per driver, XR_GPU_DRIVER=cuda|hip):
 * CUDA C++ compiled at run time, the same source loaded as a prebuilt binary, by-value and
 * buffer arguments, dynamic shared memory, a warp reduction over the device's warp width,
 * properties, and misuse. Without such a device every case skips with the driver's reason. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/hal.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

#define OK(expr)                                                                            \
  do {                                                                                      \
    xr_status_t ok_status_ = (expr);                                                        \
    cr_assert_eq(ok_status_, XR_OK, "%s -> %s: %s", #expr, xr_status_name(ok_status_),      \
                 xr_last_error());                                                          \
  } while (0)

static xr_hal_device_t *device;
static xr_hal_device_properties_t properties;

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
  OK(xr_hal_device_properties(device, &properties));
}

static void close_device(void) {
  xr_hal_device_destroy(device);
  device = NULL;
}

TestSuite(device, .init = open_device, .fini = close_device);

/* One source for both vendors: the rename header's spellings, written inline here. */
static const char source[] =
    "#if defined(__HIPCC_RTC__)\n"
    "#define __shfl_xor_sync(mask, v, m) __shfl_xor((v), (m))\n"
    "#endif\n"
    "extern \"C\" __global__ void saxpy(float *y, const float *x, float a, unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = a * x[i] + y[i] + OFFSET;\n"
    "}\n"
    "extern \"C\" __global__ void reverse_in_block(int *data) {\n"
    "  extern __shared__ int scratch[];\n"
    "  unsigned l = threadIdx.x, n = blockDim.x, base = blockIdx.x * n;\n"
    "  scratch[l] = data[base + l];\n"
    "  __syncthreads();\n"
    "  data[base + l] = scratch[n - 1 - l];\n"
    "}\n"
    "extern \"C\" __global__ void warp_sums(float *out, const float *in, int *width) {\n"
    "  float v = in[blockIdx.x * blockDim.x + threadIdx.x];\n"
    "  for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
    "  if (threadIdx.x == 0) { out[blockIdx.x] = v; *width = warpSize; }\n"
    "}\n";

static xr_hal_executable_t *build(const char *options) {
  xr_hal_executable_params_t params = {.format = XR_HAL_EXECUTABLE_CUDA_SOURCE,
                                       .data = source,
                                       .size = sizeof source - 1,
                                       .options = options,
                                       .label = "device_test.cu"};
  xr_hal_executable_t *executable = NULL;
  OK(xr_hal_executable_create(device, &params, &executable));
  return executable;
}

Test(device, properties_describe_the_gpu) {
  cr_assert(properties.is_gpu);
  cr_assert_not(properties.host_addressable);
  cr_assert_gt(properties.memory_bytes, 1ull << 30);
  cr_assert_gt(properties.compute_units, 0);
  cr_assert_gt(properties.last_level_cache_bytes, 0);
  cr_assert_geq(properties.max_work_group_size, 256);
  if (!strcmp(DRIVER, "cuda")) cr_assert_eq(properties.simd_width, 32);
  cr_assert(properties.simd_width == 32 || properties.simd_width == 64, "%u", properties.simd_width);
  cr_assert_neq(properties.peak_flops[XR_HAL_PEAK_FP32].source, XR_HAL_FIGURE_UNKNOWN);
  cr_assert_neq(properties.memory_bandwidth.source, XR_HAL_FIGURE_UNKNOWN);
  cr_assert(strstr(properties.runtime_version, DRIVER[0] == 'c' ? "sm_" : "gfx"), "%s",
            properties.runtime_version);
}

/* Profiler ranges: NVTX on cuda, roctx on hip where the library loads (pushes and pops then
 * succeed, nested); where it does not, every call says why and pushes nothing. */
Test(device, profiler_ranges_load_or_say_why) {
  const char *label = !strcmp(DRIVER, "cuda") ? "NVTX" : "roctx";
  char source[1024];
  xr_status_t st = xr_hal_device_ranges(device, source, sizeof source);
  cr_assert(st == XR_OK || st == XR_UNAVAILABLE, "%s: %s", xr_status_name(st), source);
  if (st == XR_OK) {
    cr_assert(!strncmp(source, label, strlen(label)) && source[strlen(label)] == ':', "%s",
              source);
    OK(xr_hal_device_range_push(device, "0 aten::mm"));
    OK(xr_hal_device_range_push(device, "inner"));
    OK(xr_hal_device_range_pop(device));
    OK(xr_hal_device_range_pop(device));
    cr_log_info("%s ranges: %s", DRIVER, source);
  } else {
    cr_assert(strstr(source, "ranges: ") && strstr(source, label), "%s", source);
    cr_assert_eq(xr_hal_device_range_push(device, "0 aten::mm"), XR_UNAVAILABLE);
    cr_assert_eq(xr_hal_device_range_pop(device), XR_UNAVAILABLE);
    cr_log_info("%s has no ranges here: %s", DRIVER, source);
  }
}

Test(device, source_kernels_run_with_buffers_bytes_and_shared_memory) {
  enum { N = 1000, BLOCK = 128 };
  xr_hal_executable_t *executable = build("-DOFFSET=0.5f");
  xr_hal_kernel_t *saxpy = NULL, *again = NULL, *reverse = NULL;
  OK(xr_hal_kernel_lookup(executable, "saxpy", &saxpy));
  OK(xr_hal_kernel_lookup(executable, "saxpy", &again));
  cr_assert_eq(saxpy, again, "lookups of one name share a handle");
  float x[N], y[N], result[N];
  for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = (float)(N - i);
  /* y lives in a view at an odd offset: device pointers need no alignment beyond the type's. */
  xr_hal_buffer_t *xs = NULL, *backing = NULL, *ys = NULL;
  OK(xr_hal_buffer_alloc(device, sizeof x, &xs));
  OK(xr_hal_buffer_alloc(device, 4 + sizeof y, &backing));
  OK(xr_hal_buffer_view(backing, 4, sizeof y, &ys));
  OK(xr_hal_buffer_write(xs, 0, x, sizeof x));
  OK(xr_hal_buffer_write(ys, 0, y, sizeof y));
  float a = 3.0f;
  uint32_t n = N;
  xr_hal_kernel_arg_t args[] = {xr_hal_arg_buffer(ys), xr_hal_arg_buffer(xs),
                                xr_hal_arg_bytes(&a, sizeof a), xr_hal_arg_bytes(&n, sizeof n)};
  xr_hal_dispatch_t dispatch = {.grid = {(N + BLOCK - 1) / BLOCK, 1, 1}, .block = {BLOCK, 1, 1},
                                .args = args, .arg_count = 4};
  xr_hal_stream_t *stream = NULL;
  OK(xr_hal_stream_create(device, &stream));
  OK(xr_hal_stream_dispatch(stream, saxpy, &dispatch));
  a = 100.0f; /* captured at dispatch */
  OK(xr_hal_stream_read(stream, result, ys, 0, sizeof result));
  OK(xr_hal_stream_synchronize(stream));
  for (int i = 0; i < N; i++) {
    cr_assert_eq(result[i], 3.0f * x[i] + y[i] + 0.5f, "y[%d] = %g", i, result[i]);
  }

  OK(xr_hal_kernel_lookup(executable, "reverse_in_block", &reverse));
  int32_t values[512], reversed[512];
  for (int i = 0; i < 512; i++) values[i] = i;
  xr_hal_buffer_t *data = NULL;
  OK(xr_hal_buffer_alloc(device, sizeof values, &data));
  OK(xr_hal_buffer_write(data, 0, values, sizeof values));
  xr_hal_kernel_arg_t data_arg = xr_hal_arg_buffer(data);
  xr_hal_dispatch_t shared = {.grid = {512 / BLOCK, 1, 1}, .block = {BLOCK, 1, 1},
                              .shared_memory_bytes = BLOCK * sizeof(int32_t), .args = &data_arg,
                              .arg_count = 1};
  OK(xr_hal_stream_dispatch(stream, reverse, &shared));
  OK(xr_hal_stream_read(stream, reversed, data, 0, sizeof reversed));
  OK(xr_hal_stream_synchronize(stream));
  for (int i = 0; i < 512; i++) {
    cr_assert_eq(reversed[i], (i / BLOCK) * BLOCK + BLOCK - 1 - i % BLOCK, "element %d", i);
  }

  /* Misuse: unknown kernel, local-memory arguments (OpenCL only), OpenCL C source. */
  xr_hal_kernel_t *missing = NULL;
  cr_assert_eq(xr_hal_kernel_lookup(executable, "no_such_kernel", &missing), XR_NOT_FOUND);
  xr_hal_kernel_arg_t local = xr_hal_arg_local(64);
  xr_hal_dispatch_t bad = {.grid = {1, 1, 1}, .block = {1, 1, 1}, .args = &local, .arg_count = 1};
  cr_assert_eq(xr_hal_stream_dispatch(stream, reverse, &bad), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "shared_memory_bytes"), "%s", xr_last_error());
  xr_hal_executable_params_t opencl = {.format = XR_HAL_EXECUTABLE_OPENCL_C, .data = "x", .size = 1};
  xr_hal_executable_t *none = NULL;
  cr_assert_eq(xr_hal_executable_create(device, &opencl, &none), XR_UNIMPLEMENTED);

  xr_hal_buffer_free(data);
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(ys);
  xr_hal_buffer_free(backing);
  xr_hal_buffer_free(xs);
  xr_hal_executable_destroy(executable);
}

Test(device, warp_reductions_use_the_device_warp_width) {
  xr_hal_executable_t *executable = build("-DOFFSET=0");
  xr_hal_kernel_t *kernel = NULL;
  OK(xr_hal_kernel_lookup(executable, "warp_sums", &kernel));
  uint32_t warp = properties.simd_width, warps = 4;
  float *in = calloc(warp * warps, sizeof *in), sums[4];
  for (uint32_t i = 0; i < warp * warps; i++) in[i] = (float)(i % 7);
  xr_hal_buffer_t *input = NULL, *output = NULL, *width = NULL;
  OK(xr_hal_buffer_alloc(device, warp * warps * sizeof *in, &input));
  OK(xr_hal_buffer_alloc(device, sizeof sums, &output));
  OK(xr_hal_buffer_alloc(device, sizeof(int32_t), &width));
  OK(xr_hal_buffer_write(input, 0, in, warp * warps * sizeof *in));
  xr_hal_kernel_arg_t args[] = {xr_hal_arg_buffer(output), xr_hal_arg_buffer(input),
                                xr_hal_arg_buffer(width)};
  xr_hal_dispatch_t dispatch = {.grid = {warps, 1, 1}, .block = {warp, 1, 1}, .args = args,
                                .arg_count = 3};
  xr_hal_stream_t *stream = NULL;
  OK(xr_hal_stream_create(device, &stream));
  OK(xr_hal_stream_dispatch(stream, kernel, &dispatch));
  int32_t device_width = 0;
  OK(xr_hal_stream_read(stream, sums, output, 0, sizeof sums));
  OK(xr_hal_stream_read(stream, &device_width, width, 0, sizeof device_width));
  OK(xr_hal_stream_synchronize(stream));
  cr_assert_eq((uint32_t)device_width, warp, "warpSize %d, simd_width %u", device_width, warp);
  for (uint32_t w = 0; w < warps; w++) {
    float expected = 0;
    for (uint32_t i = 0; i < warp; i++) expected += (float)((w * warp + i) % 7);
    cr_assert_eq(sums[w], expected, "warp %u: %g, expected %g", w, sums[w], expected);
  }
  xr_hal_stream_destroy(stream);
  xr_hal_buffer_free(width);
  xr_hal_buffer_free(output);
  xr_hal_buffer_free(input);
  xr_hal_executable_destroy(executable);
  free(in);
}

Test(device, prebuilt_binaries_load_and_compile_errors_carry_the_log) {
  /* The device's own target, compiled ahead of time, loads as a fatbin / code object. */
  const char *target = strstr(properties.runtime_version, DRIVER[0] == 'c' ? "sm_" : "gfx");
  cr_assert_not_null(target, "%s", properties.runtime_version);
  char name[64];
  size_t length = strcspn(target, " ;)");
  snprintf(name, sizeof name, "%.*s", (int)length, target);
  xr_hal_executable_params_t params = {.format = XR_HAL_EXECUTABLE_CUDA_SOURCE,
                                       .data = source,
                                       .size = sizeof source - 1,
                                       .options = "-DOFFSET=1",
                                       .label = "device_test.cu"};
  void *binary = NULL;
  size_t size = 0;
  OK(xr_hal_compile(name, &params, &binary, &size));
  params.format = DRIVER[0] == 'c' ? XR_HAL_EXECUTABLE_CUDA_FATBIN : XR_HAL_EXECUTABLE_HIP_CODE_OBJECT;
  params.data = binary;
  params.size = size;
  xr_hal_executable_t *executable = NULL;
  OK(xr_hal_executable_create(device, &params, &executable));
  xr_hal_kernel_t *kernel = NULL;
  OK(xr_hal_kernel_lookup(executable, "saxpy", &kernel));
  xr_hal_executable_destroy(executable);
  free(binary);

  static const char broken[] = "extern \"C\" __global__ void k(float *y) { y[0] = nope_xyz; }\n";
  params = (xr_hal_executable_params_t){.format = XR_HAL_EXECUTABLE_CUDA_SOURCE, .data = broken,
                                        .size = sizeof broken - 1, .label = "broken.cu"};
  cr_assert_eq(xr_hal_executable_create(device, &params, &executable), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "nope_xyz") && strstr(xr_last_error(), "broken.cu"), "%s",
            xr_last_error());
}

Test(device, allocations_beyond_memory_are_resource_exhausted) {
  xr_hal_buffer_t *buffer = NULL;
  cr_assert_eq(xr_hal_buffer_alloc(device, (size_t)properties.memory_bytes + 1, &buffer),
               XR_RESOURCE_EXHAUSTED);
  cr_assert(strstr(xr_last_error(), DRIVER ":0"), "%s", xr_last_error());
  cr_assert_null(buffer);
}
