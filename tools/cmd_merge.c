/* `replay merge R.0.json R.1.json ... -o R.json`: the reports of a sharded run (replay
 * --shard=K/N, one per shard, made on as many machines) as the one report an unsharded run
 * would have written: every op once, in bundle order, and a summary over them all
 * (xr_report_merge, replay/report.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/report.h"
#include "tools/cli.h"

static const char usage[] =
    "usage: replay merge R.0.json R.1.json ... -o R.json [--allow-mixed-devices]\n"
    "  Merges the JSON reports of every shard of one run (replay --shard=K/N --report=...):\n"
    "  ops back in bundle order, each once, and a summary over them all. Shards of different\n"
    "  bundles, partitions or options, a missing or repeated shard, and an op missing from its\n"
    "  shard's report are errors; so are shards run on different devices, unless\n"
    "  --allow-mixed-devices. docs/fleet.md.\n";

int xr_cmd_merge(int argc, char **argv) {
  const char *out = NULL;
  bool mixed = false;
  char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
  size_t n = 0;
  if (!inputs) {
    fputs("replay merge: out of memory\n", stderr);
    return XR_EXIT_USAGE;
  }
  static const char *const options[] = {"-o=", "--output=", "--allow-mixed-devices", "-h",
                                         "--help", NULL};
  xr_cli_args_t a;
  xr_cli_args_init(&a, "replay merge", options, argc, argv);
  for (xr_cli_token_t t; (t = xr_cli_next(&a)) != XR_CLI_END;) {
    if (t == XR_CLI_BAD) {
      free(inputs);
      return XR_EXIT_USAGE;
    }
    if (t == XR_CLI_OPERAND) {
      inputs[n++] = a.argv[a.next - 1];
    } else if (xr_cli_is(&a, "-o") || xr_cli_is(&a, "--output")) {
      out = a.value;
    } else if (xr_cli_is(&a, "--allow-mixed-devices")) {
      mixed = true;
    } else {
      fputs(usage, stdout);
      free(inputs);
      return XR_EXIT_OK;
    }
  }
  if (!n || !out) {
    xr_cli_error("replay merge", "%s", !n ? "no report given (`replay merge --help`)"
                                          : "-o R.json is required");
    free(inputs);
    return XR_EXIT_USAGE;
  }
  xr_report_contents_t **reports = calloc(n, sizeof *reports);
  int rc = reports ? XR_EXIT_OK : XR_EXIT_USAGE;
  for (size_t k = 0; k < n && rc == XR_EXIT_OK; k++) {
    char buf[4096];
    const char *path = xr_cli_path(inputs[k], buf, sizeof buf);
    if (xr_report_read(path, &reports[k]) != XR_OK) {
      fprintf(stderr, "replay merge: %s\n", xr_last_error());
      rc = XR_EXIT_USAGE;
    }
  }
  cJSON *merged = NULL;
  if (rc == XR_EXIT_OK &&
      xr_report_merge((const xr_report_contents_t *const *)reports, n, mixed, &merged) != XR_OK) {
    fprintf(stderr, "replay merge: %s\n", xr_last_error());
    rc = XR_EXIT_USAGE;
  }
  char obuf[4096];
  if (rc == XR_EXIT_OK) out = xr_cli_path(out, obuf, sizeof obuf);
  if (rc == XR_EXIT_OK && xr_report_write(out, merged) != XR_OK) {
    fprintf(stderr, "replay merge: %s\n", xr_last_error());
    rc = XR_EXIT_USAGE;
  }
  if (rc == XR_EXIT_OK) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(merged, "summary");
    printf(
        "merged %zu shards of %s into %s: %d of %d ops, %d succeeded, %d failed, %d "
        "unsupported\n",
        n, reports[0]->bundle, out, cJSON_GetObjectItemCaseSensitive(s, "attempted")->valueint,
        cJSON_GetObjectItemCaseSensitive(s, "total")->valueint,
        cJSON_GetObjectItemCaseSensitive(s, "succeeded")->valueint,
        cJSON_GetObjectItemCaseSensitive(s, "failed")->valueint,
        cJSON_GetObjectItemCaseSensitive(s, "unsupported")->valueint);
  }
  cJSON_Delete(merged);
  for (size_t k = 0; reports && k < n; k++) xr_report_contents_free(reports[k]);
  free(reports);
  free(inputs);
  return rc;
}
