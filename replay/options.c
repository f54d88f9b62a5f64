/* A run's options and the names of its outcomes: what the engine, the planner, the sharder and
 * the reports share, kept apart so that none of them depends on another for it. */
#include <string.h>

#include "replay/internal.h"

void xr_replay_options_default(xr_replay_options_t *o) {
  memset(o, 0, sizeof *o);
  o->device = "auto";
  o->warmup = 3;
  o->iters = 20;
  o->max_iters = 100000;
  o->noise_percent = 0.5;
  o->unstable_percent = 5;
  o->min_samples = 10;
  o->rotate = 1;
  o->op_limit = -1;
  o->timeline_events = XR_TIMELINE_DEFAULT_EVENTS;
}

xr_status_t xr_replay_options_check(const xr_replay_options_t *o) {
  if (o->iters < 0 || o->warmup < 0 || o->rotate < XR_ROTATE_AUTO || o->max_iters < 1 ||
      o->min_time_ms < 0 || o->max_time_ms < 0 || o->min_samples < 0 || !(o->noise_percent > 0) ||
      !(o->unstable_percent > 0) || o->timeline_events < 0)
    return xr_error(XR_INVALID_ARGUMENT,
                    "replay: negative iterations, warm-up, rotation, samples, timeline events or "
                    "time, or a noise target that is not positive");
  if (o->launch == XR_LAUNCH_GRAPH && o->cache != XR_CACHE_WARM)
    return xr_error(XR_INVALID_ARGUMENT,
                    "replay: --launch=graph runs the op back to back, so its data stays in cache: "
                    "time cold caches with --launch=eager");
  return XR_OK;
}

const char *xr_op_outcome_name(xr_op_outcome_t outcome) {
  switch (outcome) {
    case XR_OP_SUCCEEDED: return "ok";
    case XR_OP_FAILED: return "failed";
    case XR_OP_UNSUPPORTED: return "unsupported";
    case XR_OP_INTERRUPTED: return "interrupted";
  }
  return "?";
}

bool xr_op_passes_filter(const xr_replay_options_t *o, const xr_op_t *op) {
  return !o->op_filter || strstr(op->name, o->op_filter);
}

size_t xr_replay_filter_count(const xr_bundle_t *bundle, const xr_replay_options_t *options) {
  size_t n = 0;
  for (size_t i = 0; i < bundle->op_count; i++) n += xr_op_passes_filter(options, &bundle->ops[i]);
  return n;
}
