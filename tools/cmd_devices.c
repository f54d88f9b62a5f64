/* `replay devices`: every HAL driver, its devices with their properties, and why anything is
 * unavailable; --json for machines. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "hal/hal.h"
#include "replay/replay.h"
#include "tools/cli.h"

static void print_usage(FILE *out) {
  fprintf(out,
          "usage: replay devices [--json] [--calibrate [-o PEAKS.json]]\n"
          "  Lists the HAL drivers (cpu, opencl, cuda, hip), their devices and properties, their\n"
          "  clocks (through NVML, AMD SMI or cpufreq), and the reason for anything unavailable.\n"
          "  --json       machine-readable output on stdout\n"
          "  --calibrate  measure what each device reaches: DRAM bandwidth (a copy over at least\n"
          "               4x its caches), last-level cache bandwidth, the compute peak per dtype\n"
          "               with the replay's own GEMM; a few seconds per device\n"
          "  -o FILE      save the measured figures as a peaks file for `replay --peaks=FILE`\n");
}

/* "23.4 GiB" */
static const char *format_bytes(double bytes, char *out, size_t capacity) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    unit++;
  }
  snprintf(out, capacity, unit ? "%.1f %s" : "%.0f %s", bytes, units[unit]);
  return out;
}

/* "1.23 TFLOP/s (datasheet)" */
static const char *format_figure(xr_hal_figure_t figure, const char *unit, char *out,
                                 size_t capacity) {
  if (figure.source == XR_HAL_FIGURE_UNKNOWN) {
    snprintf(out, capacity, "unknown");
    return out;
  }
  static const char *const prefixes[] = {"", "K", "M", "G", "T", "P"};
  double value = figure.value;
  int prefix = 0;
  while (value >= 1000.0 && prefix < 5) {
    value /= 1000.0;
    prefix++;
  }
  snprintf(out, capacity, "%.3g %s%s (%s)", value, prefixes[prefix], unit,
           xr_hal_figure_source_name(figure.source));
  return out;
}

/* A device's clocks, or the sentence saying why they cannot be read. */
typedef struct device_clocks {
  xr_status_t status;
  xr_hal_clocks_t clocks;
  char reason[1024];
} device_clocks_t;

static void print_clocks_text(const device_clocks_t *c) {
  if (c->status != XR_OK) {
    printf("            clocks %s: %s\n", xr_status_name(c->status), c->reason);
    return;
  }
  const xr_hal_clocks_t *k = &c->clocks;
  printf("            clocks %u MHz now", k->current_mhz);
  if (k->default_mhz) printf(", default %u", k->default_mhz);
  if (k->max_mhz) printf(", max %u", k->max_mhz);
  printf(", %s", k->locked ? "locked" : "not locked");
  if (k->throttle_known) {
    printf(", throttle: %s", k->throttle[0] ? k->throttle : "none");
  } else {
    printf(", throttling not reported");
  }
  printf(" (%s)\n", k->source);
}

static cJSON *clocks_json(const device_clocks_t *c) {
  cJSON *object = cJSON_CreateObject();
  cJSON_AddBoolToObject(object, "available", c->status == XR_OK);
  cJSON_AddStringToObject(object, "status", xr_status_name(c->status));
  if (c->status != XR_OK) {
    cJSON_AddStringToObject(object, "reason", c->reason);
    return object;
  }
  const xr_hal_clocks_t *k = &c->clocks;
  cJSON_AddStringToObject(object, "source", k->source);
  cJSON_AddNumberToObject(object, "current_mhz", k->current_mhz);
  cJSON_AddNumberToObject(object, "default_mhz", k->default_mhz);
  cJSON_AddNumberToObject(object, "max_mhz", k->max_mhz);
  cJSON_AddBoolToObject(object, "locked", k->locked);
  cJSON_AddBoolToObject(object, "throttle_known", k->throttle_known);
  cJSON_AddNumberToObject(object, "throttle_reasons", (double)k->throttle_reasons);
  cJSON_AddStringToObject(object, "throttle", k->throttle);
  return object;
}

static void print_device_text(const xr_hal_device_properties_t *p) {
  char a[64], b[64];
  printf("  %-9s %s", p->spec, p->name);
  if (p->vendor[0]) printf(" (%s)", p->vendor);
  printf("%s\n", p->is_gpu ? ", GPU" : "");
  printf("            driver %s; runtime %s\n", p->driver_version[0] ? p->driver_version : "?",
         p->runtime_version[0] ? p->runtime_version : "?");
  printf("            memory %s (largest allocation %s), %u compute units", 
         format_bytes((double)p->memory_bytes, a, sizeof a),
         format_bytes((double)p->max_allocation_bytes, b, sizeof b), p->compute_units);
  if (p->clock_mhz) printf(" @ %u MHz", p->clock_mhz);
  printf(", SIMD width %u, max work-group %llu\n", p->simd_width,
         (unsigned long long)p->max_work_group_size);
  printf("            caches");
  for (uint32_t i = 0; i < p->cache_level_count; i++) {
    const xr_hal_cache_level_t *c = &p->cache_levels[i];
    printf("%s %s %s", i ? "," : "", c->name, format_bytes((double)c->bytes, a, sizeof a));
    if (c->total_bytes != c->bytes)
      printf(" (%llu of them)", (unsigned long long)(c->total_bytes / c->bytes));
  }
  if (!p->cache_level_count) printf(" unknown");
  printf("; last-level %s",
         p->last_level_cache_bytes ? format_bytes((double)p->last_level_cache_bytes, a, sizeof a)
                                   : "unknown");
  if (p->memory_side_cache_bytes)
    printf(", memory-side cache %s", format_bytes((double)p->memory_side_cache_bytes, a, sizeof a));
  if (p->cache_total_bytes)
    printf(", all caches %s", format_bytes((double)p->cache_total_bytes, a, sizeof a));
  printf(", host-addressable %s, graphs %s\n", p->host_addressable ? "yes" : "no",
         p->graphs ? "yes" : "no");
  printf("            peak");
  for (int d = 0; d < XR_HAL_PEAK_DTYPE_COUNT; d++) {
    printf("%s %s %s", d ? "," : "", xr_hal_peak_dtype_name((xr_hal_peak_dtype_t)d),
           format_figure(p->peak_flops[d], "FLOP/s", a, sizeof a));
  }
  printf("\n            memory bandwidth %s\n",
         format_figure(p->memory_bandwidth, "B/s", a, sizeof a));
  const xr_hal_measured_t *m = &p->measured;
  if (m->memory_bandwidth.value <= 0) return;
  printf("            measured: DRAM %s over %s",
         format_figure(m->memory_bandwidth, "B/s", a, sizeof a),
         format_bytes((double)m->memory_working_set_bytes, b, sizeof b));
  /* Each measured level; the last-level figure by that name only where no level carries it. */
  bool in_levels = false;
  for (uint32_t i = 0; i < p->cache_level_count && i < XR_HAL_MAX_CACHE_LEVELS; i++) {
    if (!(m->cache_level_bandwidth[i].value > 0)) continue;
    printf(", %s %s over %s", p->cache_levels[i].name,
           format_figure(m->cache_level_bandwidth[i], "B/s", a, sizeof a),
           format_bytes((double)m->cache_level_working_set_bytes[i], b, sizeof b));
    in_levels |= m->cache_level_working_set_bytes[i] == m->cache_working_set_bytes;
  }
  if (m->cache_bandwidth.value > 0 && !in_levels)
    printf(", last-level cache %s over %s", format_figure(m->cache_bandwidth, "B/s", a, sizeof a),
           format_bytes((double)m->cache_working_set_bytes, b, sizeof b));
  printf("\n            measured peak");
  for (int d = 0; d < XR_HAL_PEAK_DTYPE_COUNT; d++)
    printf("%s %s %s", d ? "," : "", xr_hal_peak_dtype_name((xr_hal_peak_dtype_t)d),
           format_figure(m->peak_flops[d], "FLOP/s", a, sizeof a));
  putchar('\n');
}

static cJSON *figure_json(xr_hal_figure_t figure) {
  cJSON *object = cJSON_CreateObject();
  cJSON_AddNumberToObject(object, "value", figure.value);
  cJSON_AddStringToObject(object, "source", xr_hal_figure_source_name(figure.source));
  return object;
}

static cJSON *device_json(const xr_hal_device_properties_t *p) {
  cJSON *device = cJSON_CreateObject();
  cJSON_AddStringToObject(device, "spec", p->spec);
  cJSON_AddStringToObject(device, "driver", p->driver);
  cJSON_AddStringToObject(device, "name", p->name);
  cJSON_AddStringToObject(device, "vendor", p->vendor);
  cJSON_AddStringToObject(device, "driver_version", p->driver_version);
  cJSON_AddStringToObject(device, "runtime_version", p->runtime_version);
  cJSON_AddBoolToObject(device, "is_gpu", p->is_gpu);
  cJSON_AddBoolToObject(device, "host_addressable", p->host_addressable);
  cJSON_AddBoolToObject(device, "graphs", p->graphs);
  cJSON_AddStringToObject(device, "kernel_family", p->kernel_family);
  cJSON_AddNumberToObject(device, "memory_bytes", (double)p->memory_bytes);
  cJSON_AddNumberToObject(device, "max_allocation_bytes", (double)p->max_allocation_bytes);
  cJSON_AddNumberToObject(device, "compute_units", p->compute_units);
  cJSON_AddNumberToObject(device, "clock_mhz", p->clock_mhz);
  cJSON_AddNumberToObject(device, "simd_width", p->simd_width);
  cJSON_AddNumberToObject(device, "max_work_group_size", (double)p->max_work_group_size);
  cJSON_AddNumberToObject(device, "last_level_cache_bytes", (double)p->last_level_cache_bytes);
  cJSON_AddNumberToObject(device, "memory_side_cache_bytes", (double)p->memory_side_cache_bytes);
  cJSON_AddNumberToObject(device, "cache_total_bytes", (double)p->cache_total_bytes);
  cJSON *levels = cJSON_AddArrayToObject(device, "cache_levels");
  for (uint32_t i = 0; i < p->cache_level_count; i++) {
    cJSON *level = cJSON_CreateObject();
    cJSON_AddStringToObject(level, "name", p->cache_levels[i].name);
    cJSON_AddNumberToObject(level, "bytes", (double)p->cache_levels[i].bytes);
    cJSON_AddNumberToObject(level, "total_bytes", (double)p->cache_levels[i].total_bytes);
    cJSON_AddItemToObject(level, "measured_bandwidth_bytes_per_second",
                          figure_json(p->measured.cache_level_bandwidth[i]));
    cJSON_AddNumberToObject(level, "measured_working_set_bytes",
                            (double)p->measured.cache_level_working_set_bytes[i]);
    cJSON_AddItemToArray(levels, level);
  }
  cJSON *peak = cJSON_AddObjectToObject(device, "peak_flops");
  for (int d = 0; d < XR_HAL_PEAK_DTYPE_COUNT; d++) {
    cJSON_AddItemToObject(peak, xr_hal_peak_dtype_name((xr_hal_peak_dtype_t)d),
                          figure_json(p->peak_flops[d]));
  }
  cJSON_AddItemToObject(device, "memory_bandwidth_bytes_per_second",
                        figure_json(p->memory_bandwidth));
  const xr_hal_measured_t *m = &p->measured;
  cJSON *measured = cJSON_AddObjectToObject(device, "measured");
  cJSON_AddItemToObject(measured, "memory_bandwidth_bytes_per_second",
                        figure_json(m->memory_bandwidth));
  cJSON_AddNumberToObject(measured, "memory_working_set_bytes",
                          (double)m->memory_working_set_bytes);
  cJSON_AddItemToObject(measured, "cache_bandwidth_bytes_per_second",
                        figure_json(m->cache_bandwidth));
  cJSON_AddNumberToObject(measured, "cache_working_set_bytes", (double)m->cache_working_set_bytes);
  peak = cJSON_AddObjectToObject(measured, "peak_flops");
  for (int d = 0; d < XR_HAL_PEAK_DTYPE_COUNT; d++)
    cJSON_AddItemToObject(peak, xr_hal_peak_dtype_name((xr_hal_peak_dtype_t)d),
                          figure_json(m->peak_flops[d]));
  return device;
}

/* Opens device `ordinal` of a driver and reads its properties (calibrating on request) and its
 * clocks (whose failure is reported in *out_clocks, not as this call's status). */
static xr_status_t query_device(const char *driver, int ordinal, bool calibrate,
                                xr_hal_device_properties_t *out, device_clocks_t *out_clocks) {
  char spec[64];
  snprintf(spec, sizeof spec, "%s:%d", driver, ordinal);
  xr_hal_device_t *device = NULL;
  xr_status_t status = xr_hal_device_create(spec, &device);
  if (status != XR_OK) return status;
  if (calibrate) status = xr_replay_device_calibrate(device);
  if (status == XR_OK) status = xr_hal_device_properties(device, out);
  if (status == XR_OK) {
    out_clocks->status = xr_hal_device_clocks(device, &out_clocks->clocks);
    out_clocks->reason[0] = '\0';
    if (out_clocks->status != XR_OK) {
      snprintf(out_clocks->reason, sizeof out_clocks->reason, "%s", xr_last_error());
    }
  }
  xr_hal_device_destroy(device);
  return status;
}

int xr_cmd_devices(int argc, char **argv) {
  bool json = false, calibrate = false;
  const char *peaks_path = NULL;
  static const char *const options[] = {"--json", "--calibrate", "-o=", "-h", "--help", NULL};
  xr_cli_args_t a;
  xr_cli_args_init(&a, "replay devices", options, argc, argv);
  for (xr_cli_token_t t; (t = xr_cli_next(&a)) != XR_CLI_END;) {
    if (t == XR_CLI_BAD) return XR_EXIT_USAGE;
    if (t == XR_CLI_OPERAND)
      return xr_cli_error("replay devices", "unexpected argument %s (it takes options only)",
                          a.arg);
    if (xr_cli_is(&a, "--json")) {
      json = true;
    } else if (xr_cli_is(&a, "-o")) {
      peaks_path = a.value;
    } else if (xr_cli_is(&a, "--calibrate")) {
      calibrate = true;
    } else {
      print_usage(stdout);
      return XR_EXIT_OK;
    }
  }

  if (peaks_path && !calibrate)
    return xr_cli_error("replay devices",
                        "-o %s: the peaks file holds measured figures: add --calibrate",
                        peaks_path);
  char pbuf[4096];
  if (peaks_path) peaks_path = xr_cli_path(peaks_path, pbuf, sizeof pbuf);
  xr_hal_device_properties_t measured[64];
  size_t measured_count = 0;
  cJSON *root = json ? cJSON_CreateObject() : NULL;
  cJSON *drivers = json ? cJSON_AddArrayToObject(root, "drivers") : NULL;
  for (size_t index = 0; index < xr_hal_driver_count(); index++) {
    xr_hal_driver_info_t info;
    if (xr_hal_driver_info(index, &info) != XR_OK) continue;
    bool available = info.status == XR_OK;
    cJSON *driver = NULL, *devices = NULL;
    if (json) {
      driver = cJSON_CreateObject();
      cJSON_AddStringToObject(driver, "name", info.name);
      cJSON_AddBoolToObject(driver, "available", available);
      cJSON_AddStringToObject(driver, "status", xr_status_name(info.status));
      cJSON_AddStringToObject(driver, "reason", info.reason);
      cJSON_AddNumberToObject(driver, "device_count", info.device_count);
      devices = cJSON_AddArrayToObject(driver, "devices");
      cJSON_AddItemToArray(drivers, driver);
    } else if (available) {
      printf("%-7s available, %d device%s%s%s%s\n", info.name, info.device_count,
             info.device_count == 1 ? "" : "s", info.reason[0] ? " (" : "", info.reason,
             info.reason[0] ? ")" : "");
    } else {
      printf("%-7s %s: %s\n", info.name, xr_status_name(info.status), info.reason);
    }
    for (int ordinal = 0; available && ordinal < info.device_count; ordinal++) {
      xr_hal_device_properties_t properties;
      device_clocks_t clocks;
      xr_status_t status = query_device(info.name, ordinal, calibrate, &properties, &clocks);
      if (status != XR_OK) {
        if (json) {
          cJSON *failed = cJSON_CreateObject();
          char spec[64];
          snprintf(spec, sizeof spec, "%s:%d", info.name, ordinal);
          cJSON_AddStringToObject(failed, "spec", spec);
          cJSON_AddStringToObject(failed, "error", xr_last_error());
          cJSON_AddItemToArray(devices, failed);
        } else {
          printf("  %s:%d   %s: %s\n", info.name, ordinal, xr_status_name(status),
                 xr_last_error());
        }
        continue;
      }
      if (measured_count < sizeof measured / sizeof *measured)
        measured[measured_count++] = properties;
      if (json) {
        cJSON *device = device_json(&properties);
        cJSON_AddItemToObject(device, "clocks", clocks_json(&clocks));
        cJSON_AddItemToArray(devices, device);
      } else {
        print_device_text(&properties);
        print_clocks_text(&clocks);
      }
    }
  }
  /* Which collective transports load (hal.h "Communicators"). */
  char transports[2048];
  xr_hal_comm_transports(transports, sizeof transports);
  if (json)
    cJSON_AddStringToObject(root, "collectives", transports);
  else
    printf("collectives: %s\n", transports);
  if (json) {
    char *text = cJSON_Print(root);
    if (text) printf("%s\n", text);
    cJSON_free(text);
    cJSON_Delete(root);
  }
  fflush(stdout);
  if (peaks_path) {
    if (xr_peaks_write(peaks_path, measured, measured_count) != XR_OK)
      return xr_cli_error("replay devices", "%s", xr_last_error());
    fprintf(json ? stderr : stdout, "peaks of %zu device%s written to %s\n", measured_count,
            measured_count == 1 ? "" : "s", peaks_path);
  }
  return 0;
}
