/* gpu_warm: compiles every GPU kernel source the families use (kernels/gpu/ *.cu, as embedded)
 * for a device into the kernel cache ($XR_HAL_CACHE_DIR, else ~/.cache/xreplay), one thread per
 * source, so that the first replay or test on the machine does not pay the compiles, nor do
 * parallel test cases all compile the same source at once. Prints each source's time.
 *   gpu_warm [cuda|hip|DEVICE]          (default cuda)
 * Exit: 0 every source built, 1 one failed (its compiler's words printed), 3 no such device. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hal/hal.h"
#include "kernels/gpu/sources.h"

typedef struct build {
  xr_hal_device_t *device;
  const char *name;
  double seconds;
  xr_status_t status;
  char error[2048];
} build_t;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *build_one(void *argument) {
  build_t *b = argument;
  double start = now();
  xr_hal_executable_t *executable = NULL;
  b->status = xr_gpu_build(b->device, b->name, NULL, &executable);
  b->seconds = now() - start;
  if (b->status != XR_OK) snprintf(b->error, sizeof b->error, "%s", xr_last_error());
  xr_hal_executable_destroy(executable);
  return NULL;
}

int main(int argc, char **argv) {
  const char *spec = argc > 1 ? argv[1] : "cuda";
  if (argc > 2 || !strcmp(spec, "-h") || !strcmp(spec, "--help")) {
    fprintf(stderr, "usage: gpu_warm [cuda|hip|DEVICE]\n");
    return 2;
  }
  xr_hal_device_t *device;
  if (xr_hal_device_create(spec, &device) != XR_OK) {
    fprintf(stderr, "gpu_warm: %s\n", xr_last_error());
    return 3;
  }
  size_t count = 0;
  while (xr_gpu_sources[count].name) count++;
  build_t *builds = calloc(count, sizeof *builds);
  pthread_t *threads = calloc(count, sizeof *threads);
  bool *started = calloc(count, sizeof *started);
  if (!builds || !threads || !started) return 1;
  double start = now();
  for (size_t i = 0; i < count; i++) {
    builds[i] = (build_t){.device = device, .name = xr_gpu_sources[i].name};
    started[i] = pthread_create(&threads[i], NULL, build_one, &builds[i]) == 0;
    if (!started[i]) build_one(&builds[i]);
  }
  int failures = 0;
  for (size_t i = 0; i < count; i++) {
    if (started[i]) pthread_join(threads[i], NULL);
    printf("%-24s %7.2f s  %s\n", builds[i].name, builds[i].seconds,
           builds[i].status == XR_OK ? "ok" : builds[i].error);
    failures += builds[i].status != XR_OK;
  }
  xr_hal_device_properties_t p;
  xr_hal_device_properties(device, &p);
  printf("gpu_warm: %zu sources for %s in %.1f s, %d failed\n", count, p.name, now() - start,
         failures);
  free(started);
  free(threads);
  free(builds);
  xr_hal_device_destroy(device);
  return failures ? 1 : 0;
}
