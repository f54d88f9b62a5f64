/* The shared part of norm_bench and reduce_bench (copy_ratio_bench.h). */
#include "tools/copy_ratio_bench.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "formats/bundle.h"
#include "replay/replay.h"

double xr_bench_copy_traffic_gbps(const char *device_spec, size_t bytes) {
  xr_hal_device_t *device;
  if (xr_hal_device_create(device_spec, &device) != XR_OK) return 0;
  xr_hal_stream_t *stream = NULL;
  xr_hal_event_t *start = NULL, *end = NULL;
  xr_hal_buffer_t *a = NULL, *b = NULL;
  double best = 0;
  uint32_t pattern = 0x3f803f80u;
  if (xr_hal_stream_create(device, &stream) == XR_OK && xr_hal_event_create(device, &start) == XR_OK &&
      xr_hal_event_create(device, &end) == XR_OK && xr_hal_buffer_alloc(device, bytes, &a) == XR_OK &&
      xr_hal_buffer_alloc(device, bytes, &b) == XR_OK &&
      xr_hal_buffer_fill(a, 0, bytes, &pattern, 4) == XR_OK &&
      xr_hal_buffer_fill(b, 0, bytes, &pattern, 4) == XR_OK) {
    for (int r = 0; r < 8; r++) { /* the first is a warm-up */
      double ms = 0;
      if (xr_hal_event_record(start, stream) != XR_OK ||
          xr_hal_stream_copy(stream, b, 0, a, 0, bytes) != XR_OK ||
          xr_hal_event_record(end, stream) != XR_OK ||
          xr_hal_event_elapsed_ms(start, end, &ms) != XR_OK)
        break;
      if (r > 0 && ms > 0 && (best == 0 || ms < best)) best = ms;
    }
  }
  xr_hal_buffer_free(a);
  xr_hal_buffer_free(b);
  xr_hal_event_destroy(start);
  xr_hal_event_destroy(end);
  xr_hal_stream_destroy(stream);
  xr_hal_device_destroy(device);
  return best > 0 ? 2.0 * (double)bytes / (best * 1e6) : 0;
}

typedef struct result_slot {
  xr_op_result_t r;
  bool seen;
} result_slot_t;

static void collect(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  (void)position, (void)count;
  result_slot_t *slot = ctx;
  slot->r = *r;
  slot->r.op = NULL;
  slot->seen = true;
}

int xr_bench_copy_ratio_row(const char *tool, const char *device, const char *label, int width,
                            const char *ir, size_t copy_bytes) {
  double copy = xr_bench_copy_traffic_gbps(device, copy_bytes);
  xr_bundle_t *bundle;
  if (xr_bundle_decode((const uint8_t *)ir, strlen(ir), tool, ".", NULL, &bundle) != XR_OK) {
    fprintf(stderr, "%s: %s: %s\n", tool, label, xr_last_error());
    return 1;
  }
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = device;
  o.warmup = 2;
  o.iters = 15;
  result_slot_t slot = {0};
  xr_replay_observer_t observer = {.result = collect, .context = &slot};
  xr_status_t st = xr_replay_run(bundle, &o, &observer, NULL);
  xr_bundle_destroy(bundle);
  if (st != XR_OK || !slot.seen || slot.r.outcome != XR_OP_SUCCEEDED) {
    printf("  %-*s %s\n", width, label, st != XR_OK ? xr_last_error() : slot.r.message);
    return 0;
  }
  double gbps = slot.r.min_us > 0 ? slot.r.bytes / (slot.r.min_us * 1e3) : 0;
  printf("  %-*s %-16s %10.0f %10.0f %9.2f %9.2f %7.0f%%\n", width, label, slot.r.kernel,
         slot.r.min_us, slot.r.median_us, gbps, copy, copy > 0 ? 100.0 * gbps / copy : 0.0);
  return 0;
}
