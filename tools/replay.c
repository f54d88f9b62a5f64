/* replay: the xreplay command-line tool. Subcommands live in tools/cmd_*.c; this file only
 * dispatches. Exit codes: 0 ok, 1 some work failed, 2 usage or input error, 3 HAL unavailable. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "formats/bundle.h"
#include "tools/build_info.h"
#include "tools/cli.h"
#include "tools/cmd_extract.h"

static const char usage[] =
    "usage: replay [OPTIONS] BUNDLE       replay a bundle (.msgpack, .json or TraceLens IR);\n"
    "                                     `replay --help-run` lists the options\n"
    "       replay plan BUNDLE [--hal=LIST] [--json]  which kernel each HAL would take, or why\n"
    "                                     none, and the share of the trace's GPU time it covers;\n"
    "                                     runs nothing (`replay plan --help`)\n"
    "       replay devices [--json]         HAL drivers and devices, and why one is unavailable\n"
    "       replay compare A.json B.json [--svg FILE]  two reports side by side\n"
    "       replay report A.json [B.json ...] -o PAGE.html  reports as one HTML page: roofline,\n"
    "                                     speed-ups, every op (`replay report --help`)\n"
    "       replay merge R.0.json R.1.json ... -o R.json  the reports of a sharded run\n"
    "                                     (--shard=K/N) as one (`replay merge --help`)\n"
    "       replay inspect BUNDLE [--json]  print the op table\n"
    "       replay validate BUNDLE          check a bundle, its .npy files and what the planner\n"
    "                                     says of its ops' arguments\n"
    "       replay convert IN OUT [--to=json|msgpack|tracelens] [--embed-data|--strip-data]\n"
    "       replay slice BUNDLE --op=N[,M...]|--op-filter=TEXT -o OUT [--keep-data]  some ops as\n"
    "                                     a bundle to replay alone (`replay slice --help`)\n"
    "       replay extract TRACE.json[.gz] -o BUNDLE.msgpack|.json   bundle from a profiler trace\n"
    "       replay history --db=FILE [--runs]  each op's medians across the runs `replay\n"
    "                                     --db=FILE` recorded (`replay history --help`)\n"
    "       replay regress --db=FILE --baseline=RUN [--run=RUN] [--tolerance=5%]  the ops of a\n"
    "                                     run slower than the baseline's; exit 1 when any is\n"
    "       replay --version\n";

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
    printf("replay (xreplay) %s, commit %s, bundle format %d\n", XR_VERSION, XR_COMMIT,
           XR_BUNDLE_FORMAT_VERSION);
    return XR_EXIT_OK;
  }
  static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
  } commands[] = {{"convert", xr_cmd_convert}, {"inspect", xr_cmd_inspect},
                  {"validate", xr_cmd_validate}, {"plan", xr_cmd_plan},
                  {"devices", xr_cmd_devices}, {"compare", xr_cmd_compare},
                  {"report", xr_cmd_report},   {"merge", xr_cmd_merge},
                  {"extract", xr_cmd_extract}, {"slice", xr_cmd_slice},
                  {"history", xr_cmd_history}, {"regress", xr_cmd_regress}};
  const char *names[sizeof commands / sizeof commands[0] + 1] = {NULL};
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(cmd, commands[i].name) == 0) return commands[i].run(argc - 1, argv + 1);
    names[i] = commands[i].name;
  }
  if (strcmp(cmd, "--help-run") == 0) {
    char *help[] = {"replay", "--help"};
    return xr_cmd_replay(2, help);
  }
  /* Anything else is `replay [OPTIONS] BUNDLE`; a word that is no file but nearly a subcommand
   * was meant as one. */
  char suggestion[64], pbuf[4096];
  if (cmd[0] != '-' && access(xr_cli_path(cmd, pbuf, sizeof pbuf), F_OK) != 0 &&
      xr_cli_closest(cmd, names, suggestion, sizeof suggestion))
    return xr_cli_error("replay", "%s: no such subcommand or file (did you mean `replay %s`?)", cmd,
                        suggestion);
  return xr_cmd_replay(argc, argv);
}
