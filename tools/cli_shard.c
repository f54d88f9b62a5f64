/* --shard for `replay` (tools/cli.h): which shard, from the option or the environment, and the
 * shard of the bundle's ops it names (replay/shard.h). */
#include <stdio.h>
#include <stdlib.h>

#include "replay/shard.h"
#include "tools/cli.h"

static const char *from_environment(const char *name, void *context) {
  (void)context;
  return getenv(name);
}

int xr_cli_shard_parse(const char *prog, const char *spec, uint32_t *out_index,
                       uint32_t *out_count) {
  if (xr_shard_parse(spec, from_environment, NULL, out_index, out_count) == XR_OK)
    return XR_EXIT_OK;
  fprintf(stderr, "%s: %s\n", prog, xr_last_error());
  return XR_EXIT_USAGE;
}

int xr_cli_shard_create(const char *prog, const xr_bundle_t *bundle,
                        const xr_replay_options_t *options, uint32_t index, uint32_t count,
                        xr_shard_t **out_shard) {
  if (xr_shard_create(bundle, options, index, count, out_shard) != XR_OK) {
    fprintf(stderr, "%s: --shard=%u/%u: %s\n", prog, index, count, xr_last_error());
    return XR_EXIT_USAGE;
  }
  const xr_shard_t *s = *out_shard;
  printf("shard %u of %u (0-based): %zu of %zu ops", s->index, s->count, s->op_count, s->selected);
  if (s->by_time)
    printf(", %.1f of %.1f us of the trace's per-call GPU time\n", s->load / 1000.0,
           s->total / 1000.0);
  else
    printf(" (the bundle records no GPU times: balanced by count)\n");
  return XR_EXIT_OK;
}
