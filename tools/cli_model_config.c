/* --model-config for `replay` and `replay extract` (tools/cli.h). */
#include <stdio.h>

#include "formats/model_config.h"
#include "tools/cli.h"

static void print_note(void *context, size_t op_index, const char *sentence) {
  fprintf(stderr, "%s: ops[%zu] vllm::moe_forward: %s\n", (const char *)context, op_index, sentence);
}

int xr_cli_apply_model_config(const char *prog, const char *path, xr_bundle_t *bundle) {
  xr_model_config_t config;
  size_t ops = 0;
  if (xr_model_config_load(path, &config) != XR_OK ||
      xr_model_config_apply(bundle, &config, print_note, (void *)prog, &ops) != XR_OK) {
    fprintf(stderr, "%s: --model-config %s: %s\n", prog, path, xr_last_error());
    return XR_EXIT_USAGE;
  }
  if (!ops) fprintf(stderr, "%s: --model-config %s: no op needs a layer's state\n", prog, path);
  return XR_EXIT_OK;
}
