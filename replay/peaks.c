/* Ceilings that hold: a device's measured figures (the HAL's copies, and the compute peak per
 * dtype from the GEMM kernels a replay takes), and the peaks file that saves them for later runs
 * or carries a datasheet's figures written by hand. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "replay/internal.h"

/* ------------------------------------------------------------------------------------------ */
/* the compute peak per dtype, from the replay's own best GEMM                                */

typedef struct best_run {
  double median_us;
  bool ok;
} best_run_t;

static void keep_result(void *context, const xr_op_result_t *r, size_t position, size_t count) {
  (void)position, (void)count;
  best_run_t *b = context;
  b->ok = r->outcome == XR_OP_SUCCEEDED && r->median_us > 0;
  b->median_us = r->median_us;
}

/* FLOP/s of one square aten::mm of `dtype` on `device` through the engine: the kernel a replay
 * of that op takes, so the ceiling is what this tool reaches. 0 when no kernel runs it. */
static double gemm_rate(xr_hal_device_t *device, const char *spec, xr_dtype_t dtype, int n) {
  xr_bundle_t *bundle = NULL;
  if (xr_bundle_create(&bundle) != XR_OK) return 0;
  xr_op_t *op = xr_bundle_add_op(bundle, "aten::mm");
  const int64_t shape[2] = {n, n};
  if (!op || !xr_op_add_tensor(bundle->arena, op, "self", dtype, 2, shape, NULL) ||
      !xr_op_add_tensor(bundle->arena, op, "mat2", dtype, 2, shape, NULL)) {
    xr_bundle_destroy(bundle);
    return 0;
  }
  xr_replay_devices_t devices = {.count = 1, .devices = {device}};
  snprintf(devices.specs[0], sizeof devices.specs[0], "%s", spec);
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = spec;
  o.devices = &devices;
  o.warmup = 2;
  o.iters = 5;
  best_run_t best = {0};
  xr_replay_observer_t observer = {.result = keep_result, .context = &best};
  xr_status_t st = xr_replay_run(bundle, &o, &observer, NULL);
  xr_bundle_destroy(bundle);
  if (st != XR_OK || !best.ok) return 0;
  return 2.0 * n * (double)n * n / (best.median_us * 1e-6);
}

xr_status_t xr_replay_device_calibrate(xr_hal_device_t *device) {
  xr_hal_device_properties_t p;
  xr_status_t st = xr_hal_device_properties(device, &p);
  if (st != XR_OK) return st;
  if (p.measured.memory_bandwidth.source != XR_HAL_FIGURE_UNKNOWN) return XR_OK; /* done before */
  if ((st = xr_hal_device_calibrate(device)) != XR_OK) return st;
  if ((st = xr_hal_device_properties(device, &p)) != XR_OK) return st;
  static const struct {
    xr_hal_peak_dtype_t peak;
    xr_dtype_t dtype;
  } dtypes[] = {{XR_HAL_PEAK_FP64, XR_DTYPE_F64},
                {XR_HAL_PEAK_FP32, XR_DTYPE_F32},
                {XR_HAL_PEAK_FP16, XR_DTYPE_F16},
                {XR_HAL_PEAK_BF16, XR_DTYPE_BF16}};
  xr_hal_measured_t found = {0};
  for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++) {
    /* Doubling the size until one product takes 20 ms (a GPU's launch and a CPU's threading
     * cost then vanish) or reaches 8192 (4096 on a host), so that a slow dtype costs little. */
    double best = 0;
    for (int n = 256; n <= (p.is_gpu ? 8192 : 4096); n *= 2) {
      double rate = gemm_rate(device, p.spec, dtypes[i].dtype, n);
      if (rate <= 0) break;
      if (rate > best) best = rate;
      if (2.0 * n * (double)n * n / rate > 20e-3) break;
    }
    /* The better of the HAL's own calibration kernel and the GEMM: a ceiling below what a
     * kernel reaches would not be one. */
    if (best > p.measured.peak_flops[dtypes[i].peak].value)
      found.peak_flops[dtypes[i].peak] = (xr_hal_figure_t){best, XR_HAL_FIGURE_CALIBRATED};
  }
  return xr_hal_device_set_measured(device, &found);
}

/* ------------------------------------------------------------------------------------------ */
/* the peaks file                                                                              */

/* "cpu" and "cpu:0" name one device. */
static bool same_spec(const char *a, const char *b) {
  size_t la = strcspn(a, ":"), lb = strcspn(b, ":");
  if (la != lb || strncmp(a, b, la)) return false;
  const char *na = a[la] ? a + la + 1 : "0", *nb = b[lb] ? b + lb + 1 : "0";
  return atoi(na) == atoi(nb);
}

xr_status_t xr_peaks_write(const char *path, const xr_hal_device_properties_t *devices,
                           size_t count) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "xreplay-peaks");
  cJSON *list = cJSON_AddArrayToObject(root, "devices");
  for (size_t i = 0; i < count; i++) {
    const xr_hal_device_properties_t *p = &devices[i];
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "hal", p->spec);
    cJSON_AddStringToObject(d, "name", p->name);
    xr_add_measured(d, p);
    cJSON_AddItemToArray(list, d);
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory", path);
  FILE *f = fopen(path, "w");
  bool written = f && fprintf(f, "%s\n", text) >= 0;
  if (f && fclose(f) != 0) written = false;
  xr_status_t st =
      written ? XR_OK : xr_error(XR_INVALID_ARGUMENT, "%s: cannot write the peaks file", path);
  cJSON_free(text);
  return st;
}

/* A positive finite number at `key` of `object` into *out (source `source`): written by hand, a
 * number; saved by a calibration, {"value": number, "source": ...} as a report has it. Absent
 * leaves *out. */
static xr_status_t read_figure(const char *path, const char *where, const cJSON *object,
                               const char *key, xr_hal_figure_source_t source,
                               xr_hal_figure_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(object, key);
  if (!v) return XR_OK;
  if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "value");
  if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || !isfinite(v->valuedouble))
    return xr_error(XR_INVALID_ARGUMENT, "%s: %s.%s: must be a positive number (bytes/s or FLOP/s)",
                    path, where, key);
  *out = (xr_hal_figure_t){v->valuedouble, source};
  return XR_OK;
}

static xr_status_t read_flops(const char *path, const char *where, const cJSON *block,
                              xr_hal_figure_source_t source, xr_hal_figure_t out[]) {
  const cJSON *flops = cJSON_GetObjectItemCaseSensitive(block, "flops");
  if (!flops) return XR_OK;
  if (!cJSON_IsObject(flops))
    return xr_error(XR_INVALID_ARGUMENT, "%s: %s.flops: must be an object of dtype: FLOP/s", path,
                    where);
  char at[128];
  snprintf(at, sizeof at, "%s.flops", where);
  for (const cJSON *e = flops->child; e; e = e->next) {
    int k = 0;
    while (k < XR_HAL_PEAK_DTYPE_COUNT && strcmp(e->string, xr_hal_peak_dtype_name(k))) k++;
    if (k == XR_HAL_PEAK_DTYPE_COUNT)
      return xr_error(XR_INVALID_ARGUMENT,
                      "%s: %s.%s: unknown dtype (fp64, fp32, fp16, bf16 or fp8)", path, at,
                      e->string);
    xr_status_t st = read_figure(path, at, flops, e->string, source, &out[k]);
    if (st != XR_OK) return st;
  }
  return XR_OK;
}

/* measured.cache_levels: {"L2": figure with working_set_bytes, ...}, each a level the device
 * reports. */
static xr_status_t read_cache_levels(const char *path, const char *where, const cJSON *measured,
                                     const xr_hal_device_properties_t *p, xr_hal_measured_t *m) {
  const cJSON *levels = cJSON_GetObjectItemCaseSensitive(measured, "cache_levels");
  if (!levels) return XR_OK;
  if (!cJSON_IsObject(levels))
    return xr_error(XR_INVALID_ARGUMENT, "%s: %s.cache_levels: must be an object of level: B/s",
                    path, where);
  char at[128], names[64] = "";
  snprintf(at, sizeof at, "%s.cache_levels", where);
  for (uint32_t i = 0; i < p->cache_level_count; i++)
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
             p->cache_levels[i].name);
  for (const cJSON *e = levels->child; e; e = e->next) {
    uint32_t i = 0;
    while (i < p->cache_level_count && strcmp(e->string, p->cache_levels[i].name)) i++;
    if (i == p->cache_level_count)
      return xr_error(XR_INVALID_ARGUMENT, "%s: %s.%s: the device has no such cache level (%s)",
                      path, at, e->string, names[0] ? names : "it reports none");
    xr_status_t st = read_figure(path, at, levels, e->string, XR_HAL_FIGURE_CALIBRATED,
                                 &m->cache_level_bandwidth[i]);
    if (st != XR_OK) return st;
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(e, "working_set_bytes");
    if (cJSON_IsNumber(ws) && ws->valuedouble > 0)
      m->cache_level_working_set_bytes[i] = (uint64_t)ws->valuedouble;
  }
  return XR_OK;
}

static xr_status_t apply_entry(const char *path, const char *where, const cJSON *entry,
                               const xr_hal_device_properties_t *p, xr_hal_device_t *device) {
  xr_hal_figure_t bandwidth = {0}, flops[XR_HAL_PEAK_DTYPE_COUNT] = {{0}};
  const cJSON *sheet = cJSON_GetObjectItemCaseSensitive(entry, "datasheet");
  char at[96];
  xr_status_t st = XR_OK;
  if (sheet) {
    snprintf(at, sizeof at, "%s.datasheet", where);
    if (!cJSON_IsObject(sheet))
      return xr_error(XR_INVALID_ARGUMENT, "%s: %s: must be an object", path, at);
    st = read_figure(path, at, sheet, "memory_bandwidth", XR_HAL_FIGURE_DATASHEET, &bandwidth);
    if (st == XR_OK) st = read_flops(path, at, sheet, XR_HAL_FIGURE_DATASHEET, flops);
    if (st == XR_OK) st = xr_hal_device_set_datasheet(device, &bandwidth, flops);
    if (st != XR_OK) return st;
  }
  const cJSON *measured = cJSON_GetObjectItemCaseSensitive(entry, "measured");
  if (!measured) return XR_OK;
  snprintf(at, sizeof at, "%s.measured", where);
  if (!cJSON_IsObject(measured))
    return xr_error(XR_INVALID_ARGUMENT, "%s: %s: must be an object", path, at);
  xr_hal_measured_t m = {0};
  st = read_figure(path, at, measured, "memory_bandwidth", XR_HAL_FIGURE_CALIBRATED,
                   &m.memory_bandwidth);
  if (st == XR_OK)
    st = read_figure(path, at, measured, "cache_bandwidth", XR_HAL_FIGURE_CALIBRATED,
                     &m.cache_bandwidth);
  if (st == XR_OK) st = read_cache_levels(path, at, measured, p, &m);
  if (st == XR_OK) st = read_flops(path, at, measured, XR_HAL_FIGURE_CALIBRATED, m.peak_flops);
  if (st != XR_OK) return st;
  const cJSON *ws = cJSON_GetObjectItemCaseSensitive(measured, "memory_working_set_bytes");
  if (cJSON_IsNumber(ws) && ws->valuedouble > 0)
    m.memory_working_set_bytes = (uint64_t)ws->valuedouble;
  ws = cJSON_GetObjectItemCaseSensitive(measured, "cache_working_set_bytes");
  if (cJSON_IsNumber(ws) && ws->valuedouble > 0)
    m.cache_working_set_bytes = (uint64_t)ws->valuedouble;
  return xr_hal_device_set_measured(device, &m);
}

xr_status_t xr_peaks_apply(const char *path, xr_hal_device_t *device) {
  xr_hal_device_properties_t p;
  xr_status_t st = xr_hal_device_properties(device, &p);
  if (st != XR_OK) return st;
  uint8_t *bytes = NULL;
  size_t size = 0;
  if ((st = xr_read_file(path, &bytes, &size)) != XR_OK) return st;
  cJSON *root = cJSON_ParseWithLength((const char *)bytes, size);
  free(bytes);
  if (!root)
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: not JSON (a peaks file: replay devices --calibrate -o FILE writes one)",
                    path);
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "devices");
  if (!cJSON_IsArray(list)) {
    cJSON_Delete(root);
    return xr_error(XR_INVALID_ARGUMENT, "%s: devices: missing or not a list", path);
  }
  st = xr_error(XR_INVALID_ARGUMENT, "%s: no entry for %s (\"hal\": \"%s\")", path, p.spec, p.spec);
  int i = 0;
  for (const cJSON *e = list->child; e; e = e->next, i++) {
    char where[32];
    snprintf(where, sizeof where, "devices[%d]", i);
    const cJSON *hal = cJSON_GetObjectItemCaseSensitive(e, "hal");
    if (!cJSON_IsString(hal)) {
      st = xr_error(XR_INVALID_ARGUMENT, "%s: %s.hal: missing (the device: \"cpu:0\", \"cuda:1\")",
                    path, where);
      break;
    }
    if (!same_spec(hal->valuestring, p.spec)) continue;
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
    if (cJSON_IsString(name) && strcmp(name->valuestring, p.name)) {
      st = xr_error(XR_INVALID_ARGUMENT,
                    "%s: %s.name: the figures are for \"%s\", and %s is \"%s\"", path, where,
                    name->valuestring, p.spec, p.name);
      break;
    }
    st = apply_entry(path, where, e, &p, device);
    break;
  }
  cJSON_Delete(root);
  return st;
}
