/* Subcommands of the `replay` command-line tool. Each takes the arguments after its own name
 * (argv[0] is the subcommand) and returns the process exit code:
 * 0 success, 1 some work failed, 2 usage or input error, 3 requested HAL unavailable. */
#ifndef XR_TOOLS_CLI_H
#define XR_TOOLS_CLI_H

#include <stddef.h>

#include "formats/model.h"

enum { XR_EXIT_OK = 0, XR_EXIT_FAILED = 1, XR_EXIT_USAGE = 2, XR_EXIT_UNAVAILABLE = 3 };

int xr_cmd_replay(int argc, char **argv);    /* tools/cmd_replay.c: replay [OPTIONS] BUNDLE */
int xr_cmd_compare(int argc, char **argv);   /* tools/cmd_compare.c: two reports side by side */
int xr_cmd_devices(int argc, char **argv);   /* tools/cmd_devices.c */
int xr_cmd_convert(int argc, char **argv);   /* tools/cmd_formats.c */
int xr_cmd_inspect(int argc, char **argv);   /* tools/cmd_formats.c */
int xr_cmd_validate(int argc, char **argv);  /* tools/cmd_formats.c */

/* A path from the command line. Under `bazel run` the working directory is the runfiles tree,
 * so a relative path is taken from BUILD_WORKING_DIRECTORY (where the user typed the command). */
const char *xr_cli_path(const char *arg, char *buf, size_t size);

/* --model-config FILE: writes the layer state the config gives into the bundle's ops that need
 * it (formats/model_config.h), printing what came from where on stderr, as `prog`. XR_EXIT_OK,
 * or XR_EXIT_USAGE after printing the error. */
int xr_cli_apply_model_config(const char *prog, const char *path, xr_bundle_t *bundle);

#endif
