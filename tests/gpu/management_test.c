/* The management libraries the clocks are read through (hal/drivers/gpu/management.h), without
 * a GPU:
 *  - our NVML and AMD SMI declarations against nvml.h and amd_smi/amdsmi.h, compiled with the
 *    system compiler where those headers are installed (neither is on our CI: the cases skip);
 *  - a library that is absent, disabled or not the library is UNAVAILABLE with every path
 *    tried, never a crash. Criterion runs each case in its own process, so each loads afresh
 *    with its own environment. */
#include "hal/drivers/gpu/management.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/gpu/abi_compile.h"

static bool loadable(const char *library) {
  void *handle = dlopen(library, RTLD_LAZY | RTLD_LOCAL);
  if (handle) dlclose(handle);
  return handle != NULL;
}

/* The first directory of `candidates` holding `header`, or NULL. */
static const char *header_dir(const char *header, const char *const *candidates, size_t count) {
  for (size_t i = 0; i < count; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", candidates[i], header);
    if (access(path, R_OK) == 0) return candidates[i];
  }
  return NULL;
}

/* Compiles `source` as C11 with `flags`: the compiler's exit status. */
static int compile(const char *source, const char *flags) {
  char all[1024];
  snprintf(all, sizeof all, "-std=c11 %s", flags);
  return xr_test_compile(source, "c", "cc", all);
}

static const char nvml_check[] =
    "#include <stddef.h>\n"
    "#include <nvml.h>\n"
    "#include \"hal/drivers/gpu/management.h\"\n"
    "#define SAME_ERROR(code, name) _Static_assert((code) == (name), #name);\n"
    "XR_NVML_ERRORS(SAME_ERROR)\n"
    "#define SAME_REASON(bit, name, words) _Static_assert((bit) == (name), #name);\n"
    "XR_NVML_THROTTLE_REASONS(SAME_REASON)\n"
    "_Static_assert(XR_NVML_CLOCK_SM == NVML_CLOCK_SM, \"NVML_CLOCK_SM\");\n"
    "_Static_assert(sizeof(nvmlReturn_t) == sizeof(int), \"nvmlReturn_t\");\n"
    "_Static_assert(sizeof(nvmlClockType_t) == sizeof(int), \"nvmlClockType_t\");\n"
    "_Static_assert(sizeof(nvmlDevice_t) == sizeof(void *), \"nvmlDevice_t\");\n"
    /* The functions in the header's types, parameter for parameter. */
    "nvmlReturn_t (*init)(void) = nvmlInit_v2;\n"
    "nvmlReturn_t (*version)(char *, unsigned int) = nvmlSystemGetDriverVersion;\n"
    "nvmlReturn_t (*by_bus)(const char *, nvmlDevice_t *) = nvmlDeviceGetHandleByPciBusId_v2;\n"
    "nvmlReturn_t (*clock)(nvmlDevice_t, nvmlClockType_t, unsigned int *) =\n"
    "    nvmlDeviceGetClockInfo;\n"
    "nvmlReturn_t (*max_clock)(nvmlDevice_t, nvmlClockType_t, unsigned int *) =\n"
    "    nvmlDeviceGetMaxClockInfo;\n"
    "nvmlReturn_t (*default_clock)(nvmlDevice_t, nvmlClockType_t, unsigned int *) =\n"
    "    nvmlDeviceGetDefaultApplicationsClock;\n"
    "nvmlReturn_t (*app_clock)(nvmlDevice_t, nvmlClockType_t, unsigned int *) =\n"
    "    nvmlDeviceGetApplicationsClock;\n"
    "nvmlReturn_t (*throttle)(nvmlDevice_t, unsigned long long *) =\n"
    "    nvmlDeviceGetCurrentClocksThrottleReasons;\n"
    "const char *(*error_string)(nvmlReturn_t) = nvmlErrorString;\n";

Test(management, nvml_declarations_equal_nvml_h) {
  static const char *const dirs[] = {"/usr/local/cuda/include", "/usr/include"};
  const char *dir = header_dir("nvml.h", dirs, 2);
  if (!dir) cr_skip_test("no nvml.h in /usr/local/cuda/include or /usr/include");
  char flags[600];
  /* Newer headers mark the throttle-reason call deprecated in favour of the event-reason one. */
  snprintf(flags, sizeof flags, "-Wall -Werror -Wno-deprecated-declarations -I%s", dir);
  cr_assert_eq(compile(nvml_check, flags), 0, "our NVML declarations differ from %s/nvml.h", dir);
}

static const char amd_smi_check[] =
    "#include <stddef.h>\n"
    "#include <amd_smi/amdsmi.h>\n"
    "#include \"hal/drivers/gpu/management.h\"\n"
    "#define SAME_LEVEL(value, name, words) _Static_assert((value) == (name), #name);\n"
    "XR_AMDSMI_PERF_LEVELS(SAME_LEVEL)\n"
    "_Static_assert(XR_AMDSMI_INIT_AMD_GPUS == AMDSMI_INIT_AMD_GPUS, \"init flag\");\n"
    "_Static_assert(XR_AMDSMI_CLK_TYPE_GFX == AMDSMI_CLK_TYPE_GFX, \"clock type\");\n"
    "_Static_assert(sizeof(amdsmi_clk_info_t) <= sizeof(xr_amdsmi_clk_info_t), \"room\");\n"
    "_Static_assert(offsetof(amdsmi_clk_info_t, clk) == offsetof(xr_amdsmi_clk_info_t, clk),\n"
    "               \"clk\");\n"
    "_Static_assert(offsetof(amdsmi_clk_info_t, min_clk) ==\n"
    "               offsetof(xr_amdsmi_clk_info_t, min_clk), \"min_clk\");\n"
    "_Static_assert(offsetof(amdsmi_clk_info_t, max_clk) ==\n"
    "               offsetof(xr_amdsmi_clk_info_t, max_clk), \"max_clk\");\n"
    "_Static_assert(sizeof(amdsmi_bdf_t) == sizeof(uint64_t), \"amdsmi_bdf_t\");\n"
    "_Static_assert(sizeof(amdsmi_status_t) == sizeof(int), \"amdsmi_status_t\");\n"
    "_Static_assert(sizeof(amdsmi_dev_perf_level_t) == sizeof(int), \"perf level\");\n"
    "amdsmi_status_t (*init)(uint64_t) = amdsmi_init;\n"
    "amdsmi_status_t (*sockets)(uint32_t *, amdsmi_socket_handle *) = amdsmi_get_socket_handles;\n"
    "amdsmi_status_t (*processors)(amdsmi_socket_handle, uint32_t *, amdsmi_processor_handle *)\n"
    "    = amdsmi_get_processor_handles;\n"
    "amdsmi_status_t (*bdf)(amdsmi_processor_handle, amdsmi_bdf_t *) = amdsmi_get_gpu_device_bdf;\n"
    "amdsmi_status_t (*clock)(amdsmi_processor_handle, amdsmi_clk_type_t, amdsmi_clk_info_t *)\n"
    "    = amdsmi_get_clock_info;\n"
    "amdsmi_status_t (*level)(amdsmi_processor_handle, amdsmi_dev_perf_level_t *)\n"
    "    = amdsmi_get_gpu_perf_level;\n"
    "amdsmi_status_t (*text)(amdsmi_status_t, const char **) = amdsmi_status_code_to_string;\n";

Test(management, amd_smi_declarations_equal_amdsmi_h) {
  static const char *const dirs[] = {"/opt/rocm/include", "/usr/include"};
  const char *dir = header_dir("amd_smi/amdsmi.h", dirs, 2);
  if (!dir) cr_skip_test("no amd_smi/amdsmi.h in /opt/rocm/include or /usr/include");
  char flags[600];
  snprintf(flags, sizeof flags, "-Wall -Werror -I%s", dir);
  cr_assert_eq(compile(amd_smi_check, flags), 0,
               "our AMD SMI declarations differ from %s/amd_smi/amdsmi.h", dir);
}

/* ---- loading ---- */

static void assert_unavailable(const xr_gpu_management_t *library, const char *expected) {
  void *handle = NULL;
  cr_assert_eq(library->open("cuda:0", "0000:65:00.0", &handle), XR_UNAVAILABLE, "%s",
               xr_last_error());
  cr_assert_null(handle);
  cr_assert_str_eq(xr_last_error(), expected);
  /* Loaded once per process: the second device gets the same sentence without a new attempt. */
  cr_assert_eq(library->open("cuda:1", "0000:66:00.0", &handle), XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), expected + strlen("cuda:0")), "%s", xr_last_error());
  library->close(NULL);
}

Test(management, without_nvml_every_path_tried_is_named) {
  if (loadable("libnvidia-ml.so.1") || loadable("libnvidia-ml.so")) {
    cr_skip_test("NVML is installed here");
  }
  if (!access("/usr/local/nvidia/lib64", F_OK) || !access("/usr/local/nvidia/lib", F_OK) ||
      !access("/usr/lib/wsl/lib", F_OK)) {
    cr_skip_test("a GPU driver directory exists here");
  }
  setenv("XR_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  assert_unavailable(&xr_gpu_nvml,
                     "cuda:0: clocks: NVML unavailable: XR_NVML_LIBRARY=/nonexistent/"
                     "libnvidia-ml.so.1: not found; libnvidia-ml.so.1: not found; "
                     "libnvidia-ml.so: not found; no GPU driver directory to search");
}

Test(management, a_library_that_is_not_nvml_is_unavailable) {
  setenv("XR_NVML_LIBRARY", "libz.so.1", 1);
  assert_unavailable(&xr_gpu_nvml,
                     "cuda:0: clocks: NVML unavailable: XR_NVML_LIBRARY=libz.so.1: "
                     "loaded; missing required symbol nvmlInit_v2");
}

Test(management, nvml_off_is_disabled) {
  setenv("XR_NVML_LIBRARY", "off", 1);
  assert_unavailable(&xr_gpu_nvml,
                     "cuda:0: clocks: NVML unavailable: XR_NVML_LIBRARY=off: NVML disabled");
}

Test(management, without_amd_smi_every_path_tried_is_named) {
  static const char *const names[] = {"libamd_smi.so.26", "libamd_smi.so.25", "libamd_smi.so.24",
                                      "libamd_smi.so"};
  for (size_t i = 0; i < 4; i++) {
    if (loadable(names[i])) cr_skip_test("AMD SMI is installed here (%s)", names[i]);
  }
  if (!access("/opt/rocm", F_OK)) cr_skip_test("ROCm is installed in /opt/rocm here");
  unsetenv("XR_AMD_SMI_LIBRARY");
  unsetenv("ROCM_PATH");
  assert_unavailable(&xr_gpu_amd_smi,
                     "cuda:0: clocks: AMD SMI unavailable: libamd_smi.so.26: not found; "
                     "libamd_smi.so.25: not found; libamd_smi.so.24: not found; libamd_smi.so: not "
                     "found; no ROCm directory to search");
}

Test(management, a_library_that_is_not_amd_smi_is_unavailable) {
  setenv("XR_AMD_SMI_LIBRARY", "libz.so.1", 1);
  assert_unavailable(&xr_gpu_amd_smi,
                     "cuda:0: clocks: AMD SMI unavailable: XR_AMD_SMI_LIBRARY=libz.so.1: loaded; "
                     "missing required symbol amdsmi_init");
}
