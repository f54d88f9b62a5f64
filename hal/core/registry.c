/* Driver registry: probes each driver once, lists them, and turns device strings ("opencl:1",
 * "auto") into devices. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/core/driver.h"

#define XR_HAL_DRIVER(name) extern const xr_hal_driver_t xr_hal_##name##_driver;
#include "hal/core/driver_list.h"
#undef XR_HAL_DRIVER

static const xr_hal_driver_t *const drivers[] = {
#define XR_HAL_DRIVER(name) &xr_hal_##name##_driver,
#include "hal/core/driver_list.h"
#undef XR_HAL_DRIVER
};
#define DRIVER_COUNT (sizeof drivers / sizeof drivers[0])

typedef struct probe_result {
  bool probed;
  xr_status_t status;
  int device_count;
  char reason[XR_HAL_REASON_CAPACITY];
} probe_result_t;

static pthread_mutex_t probe_mutex = PTHREAD_MUTEX_INITIALIZER;
static probe_result_t probe_results[DRIVER_COUNT];

/* Probes once per process; the result (and its reason string) then never changes, so callers
 * may keep pointers into it. */
static const probe_result_t *probe(size_t index) {
  pthread_mutex_lock(&probe_mutex);
  probe_result_t *result = &probe_results[index];
  if (!result->probed) {
    int count = 0;
    result->reason[0] = '\0';
    /* The probe may leave a sentence in xr_last_error; keep the caller's untouched. */
    char saved_error[XR_HAL_REASON_CAPACITY];
    xr_hal_copy_string(saved_error, sizeof saved_error, xr_last_error());
    xr_status_t status = drivers[index]->probe(result->reason, sizeof result->reason, &count);
    xr_error(XR_OK, "%s", saved_error);
    result->status = status;
    result->device_count = status == XR_OK ? count : 0;
    if (status == XR_OK && count == 0) {
      result->status = XR_UNAVAILABLE;
      if (!result->reason[0]) {
        xr_hal_copy_string(result->reason, sizeof result->reason, "no devices found");
      }
    }
    result->probed = true;
  }
  pthread_mutex_unlock(&probe_mutex);
  return result;
}

size_t xr_hal_driver_count(void) { return DRIVER_COUNT; }

xr_status_t xr_hal_driver_info(size_t index, xr_hal_driver_info_t *out_info) {
  if (!out_info) return xr_error(XR_INVALID_ARGUMENT, "xr_hal_driver_info: out_info is NULL");
  if (index >= DRIVER_COUNT) {
    return xr_error(XR_OUT_OF_RANGE, "xr_hal_driver_info: index %zu is not below %zu drivers",
                    index, (size_t)DRIVER_COUNT);
  }
  const probe_result_t *result = probe(index);
  out_info->name = drivers[index]->name;
  out_info->status = result->status;
  out_info->reason = result->reason;
  out_info->device_count = result->device_count;
  return XR_OK;
}

static bool find_driver(const char *name, size_t name_length, size_t *out_index) {
  for (size_t i = 0; i < DRIVER_COUNT; i++) {
    if (strlen(drivers[i]->name) == name_length &&
        strncmp(drivers[i]->name, name, name_length) == 0) {
      *out_index = i;
      return true;
    }
  }
  return false;
}

xr_status_t xr_hal_driver_info_by_name(const char *name, xr_hal_driver_info_t *out_info) {
  if (!name || !out_info) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_driver_info_by_name: NULL argument");
  }
  size_t index = 0;
  if (!find_driver(name, strlen(name), &index)) {
    return xr_error(XR_NOT_FOUND, "driver \"%s\" not found (known: cpu, opencl, cuda, hip)",
                    name);
  }
  return xr_hal_driver_info(index, out_info);
}

static xr_status_t open_device(size_t index, int ordinal, xr_hal_device_t **out_device) {
  const xr_hal_driver_t *driver = drivers[index];
  const probe_result_t *result = probe(index);
  if (result->status != XR_OK) {
    return xr_error(result->status, "%s unavailable: %s", driver->name, result->reason);
  }
  if (ordinal < 0 || ordinal >= result->device_count) {
    return xr_error(XR_NOT_FOUND, "device %s:%d not found (%s has %d device%s)", driver->name,
                    ordinal, driver->name, result->device_count,
                    result->device_count == 1 ? "" : "s");
  }
  xr_status_t st = driver->device_create(ordinal, out_device);
  if (st == XR_OK) xr_hal_log_device(*out_device, "opened");
  return st;
}

/* "auto": cuda, hip, an OpenCL GPU, then cpu. */
static xr_status_t open_best_device(xr_hal_device_t **out_device) {
  static const char *const preference[] = {"cuda", "hip"};
  for (size_t p = 0; p < sizeof preference / sizeof preference[0]; p++) {
    size_t index = 0;
    if (find_driver(preference[p], strlen(preference[p]), &index) && probe(index)->status == XR_OK) {
      if (open_device(index, 0, out_device) == XR_OK) return XR_OK;
    }
  }
  size_t index = 0;
  if (find_driver("opencl", 6, &index) && probe(index)->status == XR_OK &&
      drivers[index]->device_is_gpu) {
    for (int ordinal = 0; ordinal < probe(index)->device_count; ordinal++) {
      if (drivers[index]->device_is_gpu(ordinal) &&
          open_device(index, ordinal, out_device) == XR_OK) {
        return XR_OK;
      }
    }
  }
  find_driver("cpu", 3, &index);
  return open_device(index, 0, out_device);
}

xr_status_t xr_hal_device_create(const char *device_spec, xr_hal_device_t **out_device) {
  if (!out_device) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_device_create: out_device is NULL");
  }
  const char *spec = device_spec;
  if (!spec || strcmp(spec, "auto") == 0) {
    const char *from_environment = getenv("XR_HAL_DEVICE");
    spec = from_environment && from_environment[0] ? from_environment : "auto";
    /* XR_HAL_DEVICE=auto must not loop back here. */
    if (strcmp(spec, "auto") == 0) return open_best_device(out_device);
  }
  const char *colon = strchr(spec, ':');
  size_t name_length = colon ? (size_t)(colon - spec) : strlen(spec);
  int ordinal = 0;
  if (colon) {
    const char *digits = colon + 1;
    if (!digits[0] || strlen(digits) > 6) {
      return xr_error(XR_INVALID_ARGUMENT,
                      "device \"%s\": expected <driver>[:<index>], e.g. opencl:1", spec);
    }
    for (const char *c = digits; *c; c++) {
      if (!isdigit((unsigned char)*c)) {
        return xr_error(XR_INVALID_ARGUMENT,
                        "device \"%s\": index \"%s\" is not a non-negative integer", spec,
                        digits);
      }
    }
    ordinal = atoi(digits);
  }
  size_t index = 0;
  if (name_length == 0 || !find_driver(spec, name_length, &index)) {
    return xr_error(XR_NOT_FOUND,
                    "device \"%s\": unknown driver (known: cpu, opencl, cuda, hip, auto)", spec);
  }
  return open_device(index, ordinal, out_device);
}
