/* The devices of a run, each opened once (xr_replay_devices_open): the engine runs on them and
 * the communicator joins the ranks on the first, instead of each opening its own. */
#include <stdio.h>
#include <string.h>

#include "replay/internal.h"

xr_status_t xr_replay_devices_open(const char *list, int local_rank, xr_replay_devices_t *out) {
  memset(out, 0, sizeof *out);
  char buf[512];
  const char *specs[XR_REPLAY_MAX_DEVICES];
  size_t count;
  xr_status_t st = xr_device_specs(list, buf, sizeof buf, specs, &count);
  if (st != XR_OK) return st;
  for (size_t i = 0; i < count; i++) {
    snprintf(out->specs[i], sizeof out->specs[i], "%s", specs[i]);
    /* A bare driver name alone in the list gives each rank of a node its own device of that
     * driver: the local rank's (a GPU per rank, as torchrun and mpirun place them). */
    xr_hal_driver_info_t info;
    if (local_rank >= 0 && count == 1 && !strchr(specs[i], ':') && strcmp(specs[i], "auto") &&
        xr_hal_driver_info_by_name(specs[i], &info) == XR_OK && info.device_count > 1)
      snprintf(out->specs[i], sizeof out->specs[i], "%.16s:%d", specs[i],
               local_rank % info.device_count);
    if ((st = xr_hal_device_create(out->specs[i], &out->devices[i])) != XR_OK) {
      xr_replay_devices_close(out);
      return st;
    }
    out->count = i + 1;
  }
  return XR_OK;
}

void xr_replay_devices_close(xr_replay_devices_t *d) {
  for (size_t i = 0; i < d->count; i++) xr_hal_device_destroy(d->devices[i]);
  memset(d, 0, sizeof *d);
}
