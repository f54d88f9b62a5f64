/* Subcommands of the `replay` command-line tool. Each takes the arguments after its own name
 * (argv[0] is the subcommand) and returns the process exit code:
 * 0 success, 1 some work failed, 2 usage or input error, 3 requested HAL unavailable. */
#ifndef XR_TOOLS_CLI_H
#define XR_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/model.h"

enum { XR_EXIT_OK = 0, XR_EXIT_FAILED = 1, XR_EXIT_USAGE = 2, XR_EXIT_UNAVAILABLE = 3 };

int xr_cmd_replay(int argc, char **argv);    /* tools/cmd_replay.c: replay [OPTIONS] BUNDLE */
int xr_cmd_plan(int argc, char **argv);      /* tools/cmd_plan.c: what replay would run, no run */
int xr_cmd_compare(int argc, char **argv);   /* tools/cmd_compare.c: two reports side by side */
int xr_cmd_report(int argc, char **argv);    /* tools/cmd_report.c: reports as one HTML page */
int xr_cmd_devices(int argc, char **argv);   /* tools/cmd_devices.c */
int xr_cmd_convert(int argc, char **argv);   /* tools/cmd_formats.c */
int xr_cmd_inspect(int argc, char **argv);   /* tools/cmd_formats.c */
int xr_cmd_validate(int argc, char **argv);  /* tools/cmd_formats.c */
int xr_cmd_merge(int argc, char **argv);     /* tools/cmd_merge.c: shards' reports as one */
int xr_cmd_slice(int argc, char **argv);     /* tools/cmd_slice.c: some ops as a bundle */
int xr_cmd_history(int argc, char **argv);   /* tools/cmd_history.c: ops' medians across runs */
int xr_cmd_regress(int argc, char **argv);   /* tools/cmd_history.c: a run against a baseline */

/* ------------------------------------------------------------------------------------------ */
/* Options (tools/cli_common.c), the same for every subcommand.
 *
 * A command names its options once, NULL-terminated: "--hal=" takes a value (--hal=V or
 * --hal V), "--json" takes none. xr_cli_next walks argv against that list. Every mistake is one
 * line on stderr, "PROG: ...", naming the argument and what is wrong with it, and the command
 * exits XR_EXIT_USAGE; usage text is printed only for -h / --help:
 *   replay: unknown option --iter=1 (did you mean --iters?)
 *   replay plan: --hal: needs a value
 *   replay: --check=yes: takes no value
 *   replay: --iters=0: must be at least 1
 * "--" ends the options: what follows is operands. */
typedef struct xr_cli_args {
  const char *prog;             /* the prefix of every message: "replay", "replay plan" */
  const char *const *options;   /* the command's options, as above */
  const char *help;             /* what lists them, for an unknown one ("replay plan --help") */
  int argc;
  char **argv;
  int next;                     /* argv index of the next argument */
  bool operands_only;           /* after "--" */
  const char *arg;              /* the argument as given (an option's first argv entry) */
  char option[64];              /* the option matched, without "=": "--hal"; "" for an operand */
  char *value;                  /* its value (argv's, writable), or NULL */
  char help_buf[64];
} xr_cli_args_t;

typedef enum xr_cli_token {
  XR_CLI_END = 0,  /* no argument left */
  XR_CLI_OPTION,   /* one of the command's options: option, value */
  XR_CLI_OPERAND,  /* anything else: arg */
  XR_CLI_BAD,      /* unknown option, missing or unwanted value: said on stderr */
} xr_cli_token_t;

/* argv[0] is the subcommand (or the program), skipped. `help` is "PROG --help" unless set after. */
void xr_cli_args_init(xr_cli_args_t *a, const char *prog, const char *const *options, int argc,
                      char **argv);
xr_cli_token_t xr_cli_next(xr_cli_args_t *a);
/* The option just matched is `option` ("--hal"). */
bool xr_cli_is(const xr_cli_args_t *a, const char *option);

/* "PROG: " and the sentence, as one line on stderr; returns XR_EXIT_USAGE. */
int xr_cli_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The option's value is wrong: "PROG: --iters=0: " and why; returns XR_EXIT_USAGE. */
int xr_cli_bad_value(const xr_cli_args_t *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The option's value as a decimal integer of at least `lo`; false after saying why. */
bool xr_cli_int_value(const xr_cli_args_t *a, long long lo, long long *out);

/* Of `candidates` (NULL-terminated; a trailing "=" is ignored), the one closest to `given` by
 * edit distance (a swap of neighbours counts once) when it is close enough to be a slip, or
 * that `given` abbreviates alone; NULL when none is. */
const char *xr_cli_closest(const char *given, const char *const *candidates, char *buf,
                           size_t size);

/* A path from the command line. Under `bazel run` the working directory is the runfiles tree,
 * so a relative path is taken from BUILD_WORKING_DIRECTORY (where the user typed the command). */
const char *xr_cli_path(const char *arg, char *buf, size_t size);

/* --model-config FILE: writes the layer state the config gives into the bundle's ops that need
 * it (formats/model_config.h), printing what came from where on stderr, as `prog`. XR_EXIT_OK,
 * or XR_EXIT_USAGE after printing the error. */
int xr_cli_apply_model_config(const char *prog, const char *path, xr_bundle_t *bundle);

/* tools/cli_common.c: values and bundles, for `replay` and `replay plan`. */

/* A decimal integer of at least `lo`, the whole string. */
bool xr_cli_parse_int(const char *s, long long lo, long long *out);

/* "1048576", "512M", "24G", "64K": a positive byte count (--max-memory). */
bool xr_cli_parse_bytes(const char *s, uint64_t *out);

/* --cache-blocks: "auto", "full" or "compact" (an xr_cache_blocks_t, replay/replay.h). */
bool xr_cli_parse_cache_blocks(const char *s, int *out);
#define XR_CLI_CACHE_BLOCKS_FORM "takes auto, full or compact"

/* Loads the bundle at `path` (already through xr_cli_path) and applies `model_config` (NULL for
 * none). XR_EXIT_OK, or XR_EXIT_USAGE after printing the error naming the file, as `prog`. */
int xr_cli_load_bundle(const char *prog, const char *path, const char *model_config,
                       xr_bundle_t **out_bundle);

/* tools/cli_shard.c and tools/cli_select.c (the :cli_shard library): which ops a run takes. */
struct xr_replay_options;
struct xr_shard;

/* --op-filter that selects none of the bundle's ops (at `path`): XR_EXIT_USAGE after one line
 * saying so, with the bundle's first op names; XR_EXIT_OK otherwise, and without a filter. */
int xr_cli_check_filter(const char *prog, const char *path, const xr_bundle_t *bundle,
                        const struct xr_replay_options *options);

/* --shard=SPEC (K/N, auto or auto/N; replay/shard.h), the environment read for auto.
 * XR_EXIT_OK, or XR_EXIT_USAGE after printing the error, as `prog`. */
int xr_cli_shard_parse(const char *prog, const char *spec, uint32_t *out_index,
                       uint32_t *out_count);
/* Shard `index` of `count` of the ops `options` selects, announced on stdout (its ops and its
 * share of the recorded time). XR_EXIT_OK, or XR_EXIT_USAGE after printing the error. */
int xr_cli_shard_create(const char *prog, const xr_bundle_t *bundle,
                        const struct xr_replay_options *options, uint32_t index, uint32_t count,
                        struct xr_shard **out_shard);

#endif
