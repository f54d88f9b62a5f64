/* The cuda and hip drivers where they cannot run, which is every CI machine: the runtime
 * missing, present as the toolkit's stub, present without a device, or a library that is not
 * the runtime. Each situation must give UNAVAILABLE with every path tried and the vendor's own
 * error, through the registry, device creation, `replay devices` and `replay --hal=...`
 * (exit 3). Criterion runs each case in its own process, so each probes afresh with its own
 * environment. Cases whose situation this machine does not have skip with what it has. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hal/hal.h"

#define EXAMPLE "examples/llm_small.msgpack"
#define CUDA_STUB "/usr/local/cuda/lib64/stubs/libcuda.so"

static bool loadable(const char *library) {
  void *handle = dlopen(library, RTLD_LAZY | RTLD_LOCAL);
  if (handle) dlclose(handle);
  return handle != NULL;
}

static bool gpu_device_nodes(void) {
  return access("/dev/kfd", F_OK) == 0 || access("/dev/nvidiactl", F_OK) == 0;
}

static xr_hal_driver_info_t driver(const char *name) {
  xr_hal_driver_info_t info;
  cr_assert_eq(xr_hal_driver_info_by_name(name, &info), XR_OK, "%s", xr_last_error());
  return info;
}

/* The unavailable driver's reason reaches device creation unchanged. */
static void assert_device_unavailable(const char *spec, const xr_hal_driver_info_t *info) {
  xr_hal_device_t *device = NULL;
  cr_assert_eq(xr_hal_device_create(spec, &device), XR_UNAVAILABLE, "%s: %s", spec,
               xr_last_error());
  cr_assert_null(device);
  cr_assert(strstr(xr_last_error(), info->reason), "%s: %s", spec, xr_last_error());
}

Test(cuda_driver, without_libcuda_every_path_tried_is_named) {
  if (loadable("libcuda.so.1") || loadable("libcuda.so")) cr_skip_test("libcuda is installed here");
  if (!access("/usr/local/nvidia/lib64", F_OK) || !access("/usr/local/nvidia/lib", F_OK) ||
      !access("/usr/lib/wsl/lib", F_OK)) {
    cr_skip_test("a GPU driver directory exists here");
  }
  unsetenv("XR_CUDA_LIBRARY");
  xr_hal_driver_info_t cuda = driver("cuda");
  cr_assert_eq(cuda.status, XR_UNAVAILABLE);
  cr_assert_str_eq(cuda.reason, "libcuda.so.1: not found; libcuda.so: not found; "
                                "no GPU driver directory to search");
  cr_assert_eq(cuda.device_count, 0);
  assert_device_unavailable("cuda", &cuda);
  assert_device_unavailable("cuda:0", &cuda);
}

Test(cuda_driver, the_toolkit_stub_library_reports_cuda_error_stub_library) {
  if (access(CUDA_STUB, R_OK) != 0) cr_skip_test("no CUDA toolkit stub at %s", CUDA_STUB);
  setenv("XR_CUDA_LIBRARY", CUDA_STUB, 1);
  xr_hal_driver_info_t cuda = driver("cuda");
  cr_assert_eq(cuda.status, XR_UNAVAILABLE, "%s", cuda.reason);
  /* The stub's cuGetErrorName fails too: the driver knows the name itself. */
  cr_assert_str_eq(cuda.reason, "XR_CUDA_LIBRARY=" CUDA_STUB
                                ": loaded; cuInit: CUDA_ERROR_STUB_LIBRARY (34)");
  assert_device_unavailable("cuda:0", &cuda);
}

Test(cuda_driver, a_library_without_the_driver_api_is_unavailable) {
  setenv("XR_CUDA_LIBRARY", "libz.so.1", 1);
  xr_hal_driver_info_t cuda = driver("cuda");
  cr_assert_eq(cuda.status, XR_UNAVAILABLE);
  cr_assert_str_eq(cuda.reason, "XR_CUDA_LIBRARY=libz.so.1: loaded; missing required symbol cuInit");
}

Test(hip_driver, runtime_without_a_device_reports_hip_error_no_device) {
  if (loadable("libamdhip64.so.7") || loadable("libamdhip64.so.6")) {
    cr_skip_test("ROCm 6 or 7 is installed here");
  }
  if (!loadable("libamdhip64.so.5")) cr_skip_test("libamdhip64.so.5 is not installed here");
  if (gpu_device_nodes()) cr_skip_test("a GPU device node exists here");
  unsetenv("XR_HIP_LIBRARY");
  xr_hal_driver_info_t hip = driver("hip");
  cr_assert_eq(hip.status, XR_UNAVAILABLE);
  cr_assert_str_eq(hip.reason, "libamdhip64.so.7: not found; libamdhip64.so.6: not found; "
                               "libamdhip64.so.5: loaded; "
                               "hipGetDeviceCount: hipErrorNoDevice (100)");
  assert_device_unavailable("hip", &hip);
  assert_device_unavailable("hip:1", &hip);
}

Test(hip_driver, override_is_tried_first) {
  setenv("XR_HIP_LIBRARY", "/nonexistent/libamdhip64.so", 1);
  xr_hal_driver_info_t hip = driver("hip");
  cr_assert(strstr(hip.reason, "XR_HIP_LIBRARY=/nonexistent/libamdhip64.so: not found; "
                               "libamdhip64.so.7"),
            "%s", hip.reason);
}

Test(hip_driver, a_library_without_the_runtime_is_unavailable) {
  setenv("XR_HIP_LIBRARY", "libz.so.1", 1);
  xr_hal_driver_info_t hip = driver("hip");
  cr_assert_eq(hip.status, XR_UNAVAILABLE);
  cr_assert_str_eq(hip.reason, "XR_HIP_LIBRARY=libz.so.1: loaded; missing required symbol "
                               "hipGetDeviceCount");
}

/* ---- the command line: `replay devices` and `replay --hal=...` ---- */

static char out_text[1 << 16], err_text[1 << 16];

static void slurp(const char *path, char *buffer, size_t capacity) {
  FILE *file = fopen(path, "r");
  size_t got = file ? fread(buffer, 1, capacity - 1, file) : 0;
  buffer[got] = '\0';
  if (file) fclose(file);
}

/* Runs tools/replay with `arguments`; returns its exit code, keeping stdout and stderr. */
static int replay(const char *arguments) {
  const char *tmp = getenv("TEST_TMPDIR");
  char out[1024], err[1024], command[4096];
  snprintf(out, sizeof out, "%s/out.%d", tmp ? tmp : "/tmp", (int)getpid());
  snprintf(err, sizeof err, "%s/err.%d", tmp ? tmp : "/tmp", (int)getpid());
  snprintf(command, sizeof command, "tools/replay %s >%s 2>%s", arguments, out, err);
  int status = system(command);
  slurp(out, out_text, sizeof out_text);
  slurp(err, err_text, sizeof err_text);
  cr_assert(WIFEXITED(status), "replay %s did not exit normally", arguments);
  return WEXITSTATUS(status);
}

static void replay_on_unavailable_driver_exits_3(const char *name) {
  xr_hal_driver_info_t info = driver(name);
  if (info.status == XR_OK) cr_skip_test("%s is available here: %s", name, info.reason);
  char arguments[256], expected[2048];
  snprintf(arguments, sizeof arguments, "--hal=%s --iters=1 --warmup=0 " EXAMPLE, name);
  cr_assert_eq(replay(arguments), 3, "stdout: %s\nstderr: %s", out_text, err_text);
  snprintf(expected, sizeof expected, "replay: --hal=%s: %s unavailable: %s", name, name,
           info.reason);
  cr_assert(strstr(err_text, expected), "expected \"%s\" in: %s", expected, err_text);
}

Test(cli, replay_on_hip_without_a_gpu_exits_3_with_the_reason) {
  replay_on_unavailable_driver_exits_3("hip");
}

Test(cli, replay_on_cuda_without_a_gpu_exits_3_with_the_reason) {
  replay_on_unavailable_driver_exits_3("cuda");
}

Test(cli, devices_lists_both_gpu_drivers_with_their_reasons) {
  cr_assert_eq(replay("devices"), 0, "%s", err_text);
  const char *names[] = {"cuda", "hip"};
  for (int i = 0; i < 2; i++) {
    xr_hal_driver_info_t info = driver(names[i]);
    char line[2048];
    if (info.status == XR_OK) {
      snprintf(line, sizeof line, "%s:0", names[i]);
    } else {
      snprintf(line, sizeof line, "%-7s UNAVAILABLE: %s", names[i], info.reason);
    }
    cr_assert(strstr(out_text, line), "expected \"%s\" in:\n%s", line, out_text);
  }
}
