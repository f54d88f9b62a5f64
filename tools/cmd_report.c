/* `replay report A.json [B.json ...] -o report.html`: one self-contained HTML page of one or more
 * replay reports (replay/report_html.h draws it): a roofline per run, the per-op speed-ups of
 * each run over the first, and every op's figures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/report_html.h"
#include "tools/cli.h"

static const char usage[] =
    "usage: replay report A.json [B.json ...] -o PAGE.html\n"
    "  One HTML page (no network needed, readable without JavaScript) of replay reports\n"
    "  (--report=FILE.json): header, roofline and op table per run; with several, the per-op\n"
    "  speed-ups of each over the first (A time / other time, > 1: the other is faster).\n";

#define MAX_REPORTS 16

int xr_cmd_report(int argc, char **argv) {
  const char *out = NULL, *paths[MAX_REPORTS];
  size_t n = 0;
  static const char *const options[] = {"-o=", "--output=", "-h", "--help", NULL};
  xr_cli_args_t a;
  xr_cli_args_init(&a, "replay report", options, argc, argv);
  for (xr_cli_token_t t; (t = xr_cli_next(&a)) != XR_CLI_END;) {
    if (t == XR_CLI_BAD) return XR_EXIT_USAGE;
    if (t == XR_CLI_OPERAND) {
      if (n == MAX_REPORTS)
        return xr_cli_error("replay report", "at most %d reports on one page", MAX_REPORTS);
      paths[n++] = a.arg;
    } else if (xr_cli_is(&a, "-o") || xr_cli_is(&a, "--output")) {
      out = a.value;
    } else {
      fputs(usage, stdout);
      return XR_EXIT_OK;
    }
  }
  if (!n) return xr_cli_error("replay report", "no report given (`replay report --help`)");
  if (!out) return xr_cli_error("replay report", "-o PAGE.html is required");
  static char bufs[MAX_REPORTS + 1][4096];
  xr_report_contents_t *reports[MAX_REPORTS] = {0};
  int rc = XR_EXIT_OK;
  for (size_t k = 0; k < n && rc == XR_EXIT_OK; k++) {
    if (xr_report_read(xr_cli_path(paths[k], bufs[k], sizeof bufs[k]), &reports[k]) != XR_OK) {
      fprintf(stderr, "replay report: %s\n", xr_last_error());
      rc = XR_EXIT_USAGE;
    } else if (!reports[k]->finished) {
      fprintf(stderr, "replay report: %s: the run did not finish (no summary); drawn with a note\n",
              reports[k]->path);
    }
  }
  if (rc == XR_EXIT_OK) {
    out = xr_cli_path(out, bufs[MAX_REPORTS], sizeof bufs[MAX_REPORTS]);
    if (xr_report_html_write(out, (const xr_report_contents_t *const *)reports, n) == XR_OK) {
      printf("wrote %s (%zu report%s)\n", out, n, n == 1 ? "" : "s");
    } else {
      fprintf(stderr, "replay report: %s\n", xr_last_error());
      rc = XR_EXIT_USAGE;
    }
  }
  for (size_t k = 0; k < n; k++) xr_report_contents_free(reports[k]);
  return rc;
}
