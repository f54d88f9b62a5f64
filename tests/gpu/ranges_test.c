/* Profiler ranges (hal/drivers/gpu/ranges.h, xr_hal_device_range_push), without a GPU:
 *  - our NVTX and roctx declarations against nvtx3/nvToolsExt.h and roctracer/roctx.h where
 *    those headers are installed (the CUDA toolkit's nvtx3 is on our CI machine);
 *  - a library that is absent, disabled or not the library is UNAVAILABLE with every path
 *    tried, never a crash; one that loads receives the pushes and pops;
 *  - the drivers without ranges (cpu) say so and push nothing.
 * Criterion runs each case in its own process, so each loads afresh with its own environment. */
#include "hal/drivers/gpu/ranges.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hal/hal.h"
#include "tests/gpu/abi_compile.h"

static bool loadable(const char *library) {
  void *handle = dlopen(library, RTLD_LAZY | RTLD_LOCAL);
  if (handle) dlclose(handle);
  return handle != NULL;
}

/* Our list against the vendor's header: each entry's type, under the vendor's name. */
static const char declarations_check[] =
    "#include <stddef.h>\n"
    "#include HEADER\n"
    "#include \"hal/drivers/gpu/ranges.h\"\n"
    "#define SAME_TYPE(need, ret, field, params, cuda, hip) \\\n"
    "  ret(*field##_entry) params = PICK(cuda, hip);\n"
    "XR_GPU_RANGE_SYMBOLS(SAME_TYPE)\n";

/* `pick`: "c" for the cuda names, "h" for the hip ones. */
static void check_declarations(const char *dir, const char *header, const char *pick) {
  char path[512], flags[1024];
  snprintf(path, sizeof path, "%s/%s", dir, header);
  if (access(path, R_OK) != 0) cr_skip_test("no %s", path);
  snprintf(flags, sizeof flags,
           "-std=c11 -Wall -Werror -I%s -DHEADER='<%s>' '-DPICK(c,h)=%s'", dir, header, pick);
  cr_assert_eq(xr_test_compile(declarations_check, "c", "cc", flags), 0,
               "our range declarations differ from %s", path);
}

Test(ranges, nvtx_declarations_equal_nvtx3_header) {
  check_declarations("/usr/local/cuda/include", "nvtx3/nvToolsExt.h", "c");
}

Test(ranges, roctx_declarations_equal_roctx_h) {
  check_declarations("/opt/rocm/include", "roctracer/roctx.h", "h");
}

/* ---- loading ---- */

/* UNAVAILABLE, the sentence starting with `expected`, also in `source`; again the same. */
static void assert_unavailable(const xr_gpu_ranges_t *ranges, const char *expected) {
  char source[1024] = "untouched";
  cr_assert_eq(ranges->open("cuda:0", source, sizeof source), XR_UNAVAILABLE, "%s",
               xr_last_error());
  cr_assert(!strncmp(xr_last_error(), expected, strlen(expected)), "%s\nexpected: %s...",
            xr_last_error(), expected);
  cr_assert_str_eq(source, xr_last_error());
  /* Loaded once per process: a second device gets the same sentence without a new attempt. */
  cr_assert_eq(ranges->open("cuda:1", NULL, 0), XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), expected + strlen("cuda:0")), "%s", xr_last_error());
}

Test(ranges, without_nvtx_every_path_tried_is_named) {
  if (loadable("libnvToolsExt.so.1") || loadable("libnvToolsExt.so"))
    cr_skip_test("NVTX is installed here");
  setenv("XR_NVTX_LIBRARY", "/nonexistent/libnvToolsExt.so.1", 1);
  assert_unavailable(&xr_gpu_nvtx,
                     "cuda:0: ranges: NVTX unavailable: XR_NVTX_LIBRARY=/nonexistent/"
                     "libnvToolsExt.so.1: not found; libnvToolsExt.so.1: not found; "
                     "libnvToolsExt.so: not found");
}

Test(ranges, without_roctx_every_path_tried_is_named) {
  if (loadable("libroctx64.so.4") || loadable("libroctx64.so"))
    cr_skip_test("roctx is installed here");
  unsetenv("XR_ROCTX_LIBRARY");
  assert_unavailable(&xr_gpu_roctx,
                     "cuda:0: ranges: roctx unavailable: libroctx64.so.4: not found; "
                     "libroctx64.so: not found");
}

Test(ranges, a_library_that_is_not_nvtx_is_unavailable) {
  setenv("XR_NVTX_LIBRARY", "libz.so.1", 1);
  assert_unavailable(&xr_gpu_nvtx, "cuda:0: ranges: NVTX unavailable: XR_NVTX_LIBRARY=libz.so.1: "
                                   "loaded; missing required symbol nvtxRangePushA");
}

Test(ranges, nvtx_off_is_disabled) {
  setenv("XR_NVTX_LIBRARY", "off", 1);
  assert_unavailable(&xr_gpu_nvtx,
                     "cuda:0: ranges: NVTX unavailable: XR_NVTX_LIBRARY=off: NVTX disabled");
}

/* A library with the two entry points gets every push and pop, with the name as given. */
Test(ranges, a_loaded_library_receives_the_pushes_and_pops) {
  char fake[PATH_MAX];
  cr_assert_not_null(realpath("tests/gpu/libfake_nvtx.so", fake), "the fake NVTX library");
  setenv("XR_NVTX_LIBRARY", fake, 1);
  char source[1024];
  cr_assert_eq(xr_gpu_nvtx.open("cuda:0", source, sizeof source), XR_OK, "%s", xr_last_error());
  char expected[PATH_MAX + 16];
  snprintf(expected, sizeof expected, "NVTX: %s", fake);
  cr_assert_str_eq(source, expected);
  xr_gpu_nvtx.push("3 aten::mm");
  xr_gpu_nvtx.push("inner");
  xr_gpu_nvtx.pop();
  xr_gpu_nvtx.pop();
  /* The same file, already loaded: its record of the calls. */
  void *handle = dlopen(fake, RTLD_NOW | RTLD_NOLOAD);
  cr_assert_not_null(handle, "the loader closed the library");
  const char *(*log)(void) = (const char *(*)(void))dlsym(handle, "fake_nvtx_log");
  cr_assert_not_null(log);
  cr_assert_str_eq(log(), "3 aten::mm|inner|pop|pop");
  dlclose(handle);
}

/* ---- drivers without ranges ---- */

Test(ranges, the_cpu_driver_has_none_and_pushes_nothing) {
  xr_hal_device_t *cpu;
  cr_assert_eq(xr_hal_device_create("cpu", &cpu), XR_OK, "%s", xr_last_error());
  char source[256] = "untouched";
  cr_assert_eq(xr_hal_device_ranges(cpu, source, sizeof source), XR_UNIMPLEMENTED);
  cr_assert_str_eq(source, "cpu:0: the cpu driver has no profiler ranges (cuda and hip do)");
  cr_assert_str_eq(xr_last_error(), source);
  cr_assert_eq(xr_hal_device_range_push(cpu, "0 aten::mm"), XR_UNIMPLEMENTED);
  cr_assert_eq(xr_hal_device_range_pop(cpu), XR_UNIMPLEMENTED);
  cr_assert_eq(xr_hal_device_range_push(cpu, NULL), XR_INVALID_ARGUMENT);
  cr_assert_eq(xr_hal_device_ranges(NULL, source, sizeof source), XR_INVALID_ARGUMENT);
  cr_assert_eq(xr_hal_device_ranges(cpu, NULL, 0), XR_UNIMPLEMENTED);
  xr_hal_device_destroy(cpu);
}
