#include <string.h>

#include "kernels/gpu/sources.h"

const char *xr_gpu_source_text(const char *name) {
  for (const xr_gpu_source_t *s = xr_gpu_sources; s->name; s++)
    if (!strcmp(s->name, name)) return s->text;
  return NULL;
}

xr_status_t xr_gpu_build(xr_hal_device_t *device, const char *file, const char *options,
                         xr_hal_executable_t **out_executable) {
  const char *text = xr_gpu_source_text(file);
  if (!text) return xr_error(XR_NOT_FOUND, "no embedded GPU source %s", file);
  xr_hal_executable_params_t params = {
      .format = XR_HAL_EXECUTABLE_CUDA_SOURCE,
      .data = text,
      .size = strlen(text),
      .options = options,
      .label = file,
  };
  return xr_hal_executable_create(device, &params, out_executable);
}
