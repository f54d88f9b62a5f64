#include <string.h>

#include "kernels/opencl/sources.h"

const char *xr_opencl_source_text(const char *name) {
  for (const xr_opencl_source_t *s = xr_opencl_sources; s->name; s++)
    if (!strcmp(s->name, name)) return s->text;
  return NULL;
}

xr_status_t xr_opencl_build(xr_hal_device_t *device, const char *file, const char *options,
                            xr_hal_executable_t **out_executable) {
  const char *text = xr_opencl_source_text(file);
  if (!text) return xr_error(XR_NOT_FOUND, "no embedded OpenCL source %s", file);
  xr_hal_executable_params_t params = {
      .format = XR_HAL_EXECUTABLE_OPENCL_C,
      .data = text,
      .size = strlen(text),
      .options = options,
      .label = file,
  };
  return xr_hal_executable_create(device, &params, out_executable);
}
