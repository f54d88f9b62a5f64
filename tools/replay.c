/* replay: the xreplay command-line tool. Subcommands live in tools/cmd_*.c; this file only
 * dispatches. Exit codes: 0 ok, 1 some work failed, 2 usage or input error, 3 HAL unavailable. */
#include <stdio.h>
#include <string.h>

#include "formats/bundle.h"
#include "tools/cli.h"
#include "tools/op_table.h"

#ifndef XR_VERSION
#define XR_VERSION "0.1.0"
#endif

static const char usage[] =
    "usage: replay [OPTIONS] BUNDLE       replay a bundle (.msgpack, .json or TraceLens IR)\n"
    "       replay inspect BUNDLE [--json]  print the op table\n"
    "       replay validate BUNDLE          check a bundle and its .npy files\n"
    "       replay convert IN OUT [--to=json|msgpack|tracelens] [--embed-data|--strip-data]\n"
    "       replay --version\n";

/* Until the replay engine lands, replaying a bundle shows what would run. */
static int run_bundle(int argc, char **argv) {
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "replay: unknown option %s\n%s", argv[i], usage);
      return XR_EXIT_USAGE;
    }
    if (path) {
      fprintf(stderr, "replay: one bundle at a time\n%s", usage);
      return XR_EXIT_USAGE;
    }
    path = argv[i];
  }
  char buf[4096];
  path = xr_cli_path(path, buf, sizeof buf);
  xr_bundle_t *b;
  if (xr_bundle_load(path, &b) != XR_OK) {
    fprintf(stderr, "replay: %s\n", xr_last_error());
    return XR_EXIT_USAGE;
  }
  printf("%s: %zu ops (%s)\n", path, b->op_count, xr_bundle_format_name(b->source_format));
  xr_status_t st = xr_print_op_table(stdout, b);
  printf("(this build has no replay engine yet: ops are listed, not run)\n");
  xr_bundle_destroy(b);
  return st == XR_OK ? XR_EXIT_OK : XR_EXIT_FAILED;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return XR_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
    fputs(usage, stdout);
    return XR_EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("replay (xreplay) %s, bundle format %d\n", XR_VERSION, XR_BUNDLE_FORMAT_VERSION);
    return XR_EXIT_OK;
  }
  if (strcmp(cmd, "convert") == 0) return xr_cmd_convert(argc - 1, argv + 1);
  if (strcmp(cmd, "inspect") == 0) return xr_cmd_inspect(argc - 1, argv + 1);
  if (strcmp(cmd, "validate") == 0) return xr_cmd_validate(argc - 1, argv + 1);
  return run_bundle(argc, argv);
}
