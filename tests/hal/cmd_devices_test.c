/* `replay devices` through xr_cmd_devices(): exit codes, text and JSON output. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static char *read_stream(FILE *stream) {
  size_t capacity = 1 << 16, size = 0;
  char *text = malloc(capacity);
  cr_assert_not_null(text);
  for (size_t n; (n = fread(text + size, 1, capacity - 1 - size, stream)) > 0;) {
    size += n;
    if (size + 1 == capacity) {
      capacity *= 2;
      text = realloc(text, capacity);
      cr_assert_not_null(text);
    }
  }
  text[size] = '\0';
  return text;
}

static int run(char *const *arguments, int count) { return xr_cmd_devices(count, (char **)arguments); }

Test(cmd_devices, json_lists_every_driver_and_the_cpu_device, .init = cr_redirect_stdout) {
  char *arguments[] = {"devices", "--json"};
  cr_assert_eq(run(arguments, 2), 0);
  fflush(stdout);
  char *text = read_stream(cr_get_redirected_stdout());
  cJSON *root = cJSON_Parse(text);
  cr_assert_not_null(root, "not JSON: %s", text);
  cJSON *drivers = cJSON_GetObjectItem(root, "drivers");
  cr_assert(cJSON_IsArray(drivers));
  cr_assert_eq(cJSON_GetArraySize(drivers), 4);
  cJSON *cpu = cJSON_GetArrayItem(drivers, 0);
  cr_assert_str_eq(cJSON_GetObjectItem(cpu, "name")->valuestring, "cpu");
  cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(cpu, "available")));
  cJSON *device = cJSON_GetArrayItem(cJSON_GetObjectItem(cpu, "devices"), 0);
  cr_assert_not_null(device);
  cr_assert_str_eq(cJSON_GetObjectItem(device, "spec")->valuestring, "cpu:0");
  /* The cpu driver has no graphs; its kernels are its own. */
  cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(device, "graphs")), "%s", text);
  cr_assert_str_eq(cJSON_GetObjectItem(device, "kernel_family")->valuestring, "cpu");
  cr_assert_gt(cJSON_GetObjectItem(device, "memory_bytes")->valuedouble, 0);
  /* Every cache level together holds at least the last one (what the cold flush is sized by). */
  double llc = cJSON_GetObjectItem(device, "last_level_cache_bytes")->valuedouble;
  double caches = cJSON_GetObjectItem(device, "cache_total_bytes")->valuedouble;
  if (llc > 0) cr_assert_geq(caches, llc, "%s", text);
  cr_assert_eq(cJSON_GetObjectItem(device, "memory_side_cache_bytes")->valuedouble, 0,
               "a CPU has no memory-side cache in the datasheet");
  cJSON *fp32 = cJSON_GetObjectItem(cJSON_GetObjectItem(device, "peak_flops"), "fp32");
  cr_assert_not_null(cJSON_GetObjectItem(fp32, "source"));
  /* Clocks: read through cpufreq, or why not (this machine's cpufreq decides which). */
  cJSON *clocks = cJSON_GetObjectItem(device, "clocks");
  cr_assert(cJSON_IsObject(clocks), "%s", text);
  if (cJSON_IsTrue(cJSON_GetObjectItem(clocks, "available"))) {
    cr_assert_str_eq(cJSON_GetObjectItem(clocks, "status")->valuestring, "OK");
    cr_assert_gt(cJSON_GetObjectItem(clocks, "current_mhz")->valuedouble, 0);
    cr_assert(cJSON_IsBool(cJSON_GetObjectItem(clocks, "locked")));
    cr_assert(strncmp(cJSON_GetObjectItem(clocks, "source")->valuestring, "cpufreq", 7) == 0);
  } else {
    cr_assert_str_eq(cJSON_GetObjectItem(clocks, "status")->valuestring, "UNAVAILABLE");
    cr_assert(strstr(cJSON_GetObjectItem(clocks, "reason")->valuestring, "scaling_cur_freq"), "%s",
              cJSON_GetObjectItem(clocks, "reason")->valuestring);
  }
  /* opencl, where it runs here, has no clocks and says so. */
  cJSON *opencl = cJSON_GetArrayItem(drivers, 1);
  cJSON *opencl_device = cJSON_GetArrayItem(cJSON_GetObjectItem(opencl, "devices"), 0);
  if (opencl_device && cJSON_GetObjectItem(opencl_device, "clocks")) {
    cJSON *none = cJSON_GetObjectItem(opencl_device, "clocks");
    cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(none, "available")));
    cr_assert_str_eq(cJSON_GetObjectItem(none, "status")->valuestring, "UNIMPLEMENTED");
    cr_assert(strstr(cJSON_GetObjectItem(none, "reason")->valuestring, "no clocks"));
  }
  cJSON *hip = cJSON_GetArrayItem(drivers, 3);
  cr_assert_str_eq(cJSON_GetObjectItem(hip, "name")->valuestring, "hip");
  cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(hip, "available")));
  cr_assert_neq(cJSON_GetObjectItem(hip, "reason")->valuestring[0], '\0');
  cJSON_Delete(root);
  free(text);
}

Test(cmd_devices, text_names_drivers_and_reasons, .init = cr_redirect_stdout) {
  char *arguments[] = {"devices"};
  cr_assert_eq(run(arguments, 1), 0);
  fflush(stdout);
  char *text = read_stream(cr_get_redirected_stdout());
  cr_assert(strstr(text, "cpu     available"), "%s", text);
  cr_assert(strstr(text, "cpu:0"), "%s", text);
  cr_assert(strstr(text, "hip     UNAVAILABLE: libamdhip64.so.7") ||
                strstr(text, "hip     UNIMPLEMENTED"),
            "%s", text);
  cr_assert(strstr(text, "            caches ") && strstr(text, "; last-level "), "%s", text);
  cr_assert(strstr(text, "            clocks "), "%s", text);
  free(text);
}

Test(cmd_devices, usage_errors_exit_2, .init = cr_redirect_stderr) {
  char *arguments[] = {"devices", "--frobnicate"};
  cr_assert_eq(run(arguments, 2), 2);
  fflush(stderr);
  char *text = read_stream(cr_get_redirected_stderr());
  /* One line naming it, no usage text (that is for --help). */
  cr_assert(strstr(text, "replay devices: unknown option --frobnicate") && !strstr(text, "usage"),
            "%s", text);
  cr_assert_eq(strchr(text, '\n'), text + strlen(text) - 1, "more than one line: %s", text);
  free(text);
}

Test(cmd_devices, help_exits_0, .init = cr_redirect_stdout) {
  char *arguments[] = {"devices", "--help"};
  cr_assert_eq(run(arguments, 2), 0);
}
