#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, mkstemp; Bazel's toolchain may already define it */
#endif
#include "hal/drivers/cpu/cpu_info.h"

#include <gnu/libc-version.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "hal/core/driver.h"

/* The value after "key\t: " on the first matching /proc/cpuinfo line, trimmed. */
static bool cpuinfo_field(const char *key, char *out, size_t capacity) {
  FILE *file = fopen("/proc/cpuinfo", "r");
  if (!file) return false;
  char line[8192];
  bool found = false;
  size_t key_length = strlen(key);
  while (!found && fgets(line, sizeof line, file)) {
    if (strncmp(line, key, key_length) != 0) continue;
    const char *rest = line + key_length;
    while (*rest == ' ' || *rest == '\t') rest++;
    if (*rest != ':') continue;
    rest++;
    while (*rest == ' ') rest++;
    xr_hal_copy_string(out, capacity, rest);
    size_t length = strlen(out);
    while (length && (out[length - 1] == '\n' || out[length - 1] == ' ')) out[--length] = '\0';
    found = true;
  }
  fclose(file);
  return found;
}

static bool has_flag(const char *flags, const char *flag) {
  size_t length = strlen(flag);
  for (const char *p = flags; (p = strstr(p, flag)) != NULL; p += length) {
    bool starts = p == flags || p[-1] == ' ';
    bool ends = p[length] == '\0' || p[length] == ' ';
    if (starts && ends) return true;
  }
  return false;
}

static uint64_t read_u64_file(const char *path) {
  FILE *file = fopen(path, "r");
  if (!file) return 0;
  unsigned long long value = 0;
  if (fscanf(file, "%llu", &value) != 1) value = 0;
  fclose(file);
  return value;
}

/* "2048K" / "32M" from /sys/devices/system/cpu/cpu0/cache/indexN/size. */
static uint64_t read_size_file(const char *path) {
  FILE *file = fopen(path, "r");
  if (!file) return 0;
  unsigned long long value = 0;
  char unit = 0;
  int fields = fscanf(file, "%llu%c", &value, &unit);
  fclose(file);
  if (fields < 1) return 0;
  if (unit == 'K') value <<= 10;
  if (unit == 'M') value <<= 20;
  if (unit == 'G') value <<= 30;
  return value;
}

/* How many CPUs a sysfs list such as "0-3,8,10-11" names; 0 when unreadable. */
static unsigned cpu_list_count(const char *path) {
  FILE *file = fopen(path, "r");
  if (!file) return 0;
  unsigned count = 0, first, last;
  for (;;) {
    if (fscanf(file, "%u", &first) != 1) break;
    last = first;
    int c = fgetc(file);
    if (c == '-' && fscanf(file, "%u", &last) == 1) c = fgetc(file);
    if (last >= first) count += last - first + 1;
    if (c != ',') break;
  }
  fclose(file);
  return count;
}

/* Adds a level's one-instance size and instance count to the list (by level, innermost first). */
static void add_level(xr_cpu_info_t *out, unsigned level, uint64_t bytes, uint64_t instances) {
  if (!bytes || out->cache_level_count == XR_HAL_MAX_CACHE_LEVELS) return;
  xr_hal_cache_level_t *c = &out->cache_levels[out->cache_level_count++];
  snprintf(c->name, sizeof c->name, level == 1 ? "L1d" : "L%u", level);
  c->bytes = bytes;
  c->total_bytes = bytes * (instances ? instances : 1);
}

/* Every data and unified cache level of the machine: cpu0's levels, each with its instances
 * (online CPUs / CPUs sharing one); without sysfs (containers sometimes hide it), glibc's
 * cpuid-based sizes, the first two levels per CPU as on x86 cores, the third once. */
static void read_cache_levels(xr_cpu_info_t *out) {
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  uint64_t cpus = online > 0 ? (uint64_t)online : 1;
  for (unsigned level = 1; level <= 4; level++) {
    for (int index = 0; index < 16; index++) {
      char path[128], type[32] = "";
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", index);
      if (read_u64_file(path) != level) continue;
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", index);
      FILE *file = fopen(path, "r");
      if (!file) continue;
      int read = fscanf(file, "%31s", type);
      fclose(file);
      if (read != 1 || !strcmp(type, "Instruction")) continue;
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
      uint64_t size = read_size_file(path);
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list",
               index);
      unsigned sharing = cpu_list_count(path);
      add_level(out, level, size, sharing ? (cpus + sharing - 1) / sharing : 1);
    }
  }
  if (out->cache_level_count == 0) {
    long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    add_level(out, 1, l1 > 0 ? (uint64_t)l1 : 0, cpus);
    add_level(out, 2, l2 > 0 ? (uint64_t)l2 : 0, cpus);
    add_level(out, 3, l3 > 0 ? (uint64_t)l3 : 0, 1);
  }
  for (uint32_t i = 0; i < out->cache_level_count; i++)
    out->cache_total_bytes += out->cache_levels[i].total_bytes;
  if (out->cache_level_count == 0) return;
  /* The outermost level; of two caches at that level, the larger. */
  const char *outer = out->cache_levels[out->cache_level_count - 1].name;
  for (uint32_t i = 0; i < out->cache_level_count; i++)
    if (!strcmp(out->cache_levels[i].name, outer) &&
        out->cache_levels[i].bytes > out->last_level_cache_bytes)
      out->last_level_cache_bytes = out->cache_levels[i].bytes;
}

void xr_cpu_info_read(xr_cpu_info_t *out) {
  memset(out, 0, sizeof *out);
  if (!cpuinfo_field("model name", out->model_name, sizeof out->model_name)) {
    xr_hal_copy_string(out->model_name, sizeof out->model_name, "host CPU");
  }
  cpuinfo_field("vendor_id", out->vendor, sizeof out->vendor);
  struct utsname names;
  if (uname(&names) == 0) {
    snprintf(out->kernel_release, sizeof out->kernel_release, "Linux %.80s %.30s", names.release,
             names.machine);
  }
  snprintf(out->libc_version, sizeof out->libc_version, "glibc %s", gnu_get_libc_version());

  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) out->cores = (unsigned)CPU_COUNT(&set);
  if (out->cores == 0) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    out->cores = online > 0 ? (unsigned)online : 1;
  }

  uint64_t khz = read_u64_file("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  if (khz) {
    out->clock_mhz = (unsigned)(khz / 1000);
  } else {
    char mhz[64];
    if (cpuinfo_field("cpu MHz", mhz, sizeof mhz)) out->clock_mhz = (unsigned)atof(mhz);
  }

  char *flags = malloc(8192);
  if (flags && cpuinfo_field("flags", flags, 8192)) {
    out->has_fma = has_flag(flags, "fma");
    out->has_avx512f = has_flag(flags, "avx512f");
    out->has_avx512_bf16 = has_flag(flags, "avx512_bf16");
    out->has_avx512_fp16 = has_flag(flags, "avx512_fp16");
    out->has_amx_bf16 = has_flag(flags, "amx_bf16");
    out->has_amx_fp16 = has_flag(flags, "amx_fp16");
    out->fp32_lanes = out->has_avx512f ? 16 : has_flag(flags, "avx") ? 8 : 4;
  } else {
    out->fp32_lanes = 4;
  }
  free(flags);

  long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) out->physical_memory_bytes = (uint64_t)pages * (uint64_t)page_size;
  read_cache_levels(out);
}

void xr_cpu_info_peak_flops(const xr_cpu_info_t *info,
                            xr_hal_figure_t out_peak[XR_HAL_PEAK_DTYPE_COUNT]) {
  for (int i = 0; i < XR_HAL_PEAK_DTYPE_COUNT; i++) out_peak[i] = (xr_hal_figure_t){0};
  if (info->clock_mhz == 0) return;
  double cycles_per_second = (double)info->cores * info->clock_mhz * 1e6;
  const double pipes = 2.0;
  /* FMA = 2 flops per lane; without FMA, a separate multiply and add still give 2 per lane. */
  double fp32_per_cycle = pipes * info->fp32_lanes * 2.0;
  double per_cycle[XR_HAL_PEAK_DTYPE_COUNT] = {0};
  per_cycle[XR_HAL_PEAK_FP32] = fp32_per_cycle;
  per_cycle[XR_HAL_PEAK_FP64] = fp32_per_cycle / 2;
  /* AVX512_BF16 dot products take pairs: twice the fp32 rate. AMX tiles: 1024 MACs/cycle. */
  if (info->has_amx_bf16) per_cycle[XR_HAL_PEAK_BF16] = 2048;
  else if (info->has_avx512_bf16) per_cycle[XR_HAL_PEAK_BF16] = 2 * fp32_per_cycle;
  if (info->has_amx_fp16) per_cycle[XR_HAL_PEAK_FP16] = 2048;
  else if (info->has_avx512_fp16) per_cycle[XR_HAL_PEAK_FP16] = 2 * fp32_per_cycle;
  for (int i = 0; i < XR_HAL_PEAK_DTYPE_COUNT; i++) {
    if (per_cycle[i] > 0) {
      out_peak[i] = (xr_hal_figure_t){.value = per_cycle[i] * cycles_per_second,
                                      .source = XR_HAL_FIGURE_ESTIMATED};
    }
  }
}
