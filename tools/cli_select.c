/* --op-filter for `replay` and `replay plan` (tools/cli.h): a filter that selects no op of the
 * bundle is a usage error, not an empty run. */
#include <stdio.h>
#include <string.h>

#include "replay/replay.h"
#include "tools/cli.h"

int xr_cli_check_filter(const char *prog, const char *path, const xr_bundle_t *bundle,
                        const xr_replay_options_t *options) {
  if (!options->op_filter || xr_replay_filter_count(bundle, options) > 0) return XR_EXIT_OK;
  /* The bundle's first few distinct names, to show what the filter could have matched. */
  char names[512] = "";
  size_t shown = 0, at = 0;
  for (size_t i = 0; i < bundle->op_count && at < sizeof names; i++) {
    const char *name = bundle->ops[i].name;
    bool seen = false;
    for (size_t k = 0; k < i && !seen; k++) seen = !strcmp(bundle->ops[k].name, name);
    if (seen) continue;
    if (shown == 4) {
      at += (size_t)snprintf(names + at, sizeof names - at, ", ...");
      break;
    }
    at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", shown ? ", " : "", name);
    shown++;
  }
  return xr_cli_error(prog,
                      "--op-filter=%s: no op of %s has a name containing \"%s\" (%zu op%s%s%s)",
                      options->op_filter, path, options->op_filter, bundle->op_count,
                      bundle->op_count == 1 ? "" : "s", shown ? ": " : "", names);
}
