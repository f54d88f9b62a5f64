/* `replay compare A.json B.json [--svg FILE]`: two reports of the same bundle, made on different
 * machines (an MI300X report and an H200 report, say), side by side: per-op medians, the
 * speed-up of B over A, the geometric mean, and an SVG bar chart of the per-op speed-ups. When
 * the bundle recorded the source trace's times, each run's replay / trace ratio per op and the
 * ratio statistics of both summaries. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "replay/report_html.h"
#include "tools/cli.h"

static const char usage[] =
    "usage: replay compare A.json B.json [--svg FILE]\n"
    "  Compares two replay reports (--report=FILE.json) of the same bundle: per-op median times,\n"
    "  speed-up = A time / B time (> 1: B is faster), and their geometric mean; with the\n"
    "  source trace's times, each run's replay / trace ratio per op and over the run.\n";

/* Any op of the report with a recorded time: the ratio columns are shown. */
static bool has_trace_times(const xr_report_contents_t *c) {
  for (size_t i = 0; i < c->op_count; i++)
    if (c->ops[i].trace_us >= 0) return true;
  return false;
}

/* A report's summary.replay_vs_trace in a line, or why there is none. */
static void print_trace_ratio(const char *which, const xr_report_contents_t *c) {
  const xr_report_trace_ratio_t *t = &c->replay_vs_trace;
  if (t->count == 0) {
    printf(
        "%s: replay vs trace: %s\n", which,
        c->finished ? "no op timed with a recorded time" : "no summary (the run did not finish)");
    return;
  }
  if (t->same_device)
    printf("%s: replay vs trace (same device: %s)", which, c->device);
  else if (t->trace_device[0])
    printf("%s: trace recorded on %s, replayed on %s: cross-device replay vs trace", which,
           t->trace_device, c->device);
  else
    printf("%s: replay vs trace (the trace's device is not recorded; replayed on %s)", which,
           c->device);
  printf(": %zu ops, median ratio %.3g, geometric mean %.3g, %.1f%% within \u00b110%%", t->count,
         t->median, t->geomean, t->within_10_percent);
  for (size_t k = 0; k < t->worst_count; k++)
    printf("%s #%lld %s %.3g", k ? "," : "; worst:", (long long)t->worst[k].index, t->worst[k].name,
           t->worst[k].ratio);
  putchar('\n');
}

/* An op's replay / trace ratio; "-" for NULL or an op not timed. */
static void ratio_cell(const xr_report_entry_t *e) {
  if (e && e->median_us > 0 && isfinite(e->replay_over_trace))
    printf(" %9.3g", e->replay_over_trace);
  else
    printf(" %9s", "-");
}

int xr_cmd_compare(int argc, char **argv) {
  const char *paths[2] = {NULL, NULL}, *svg = NULL;
  int n_paths = 0;
  static const char *const options[] = {"--svg=", "-h", "--help", NULL};
  xr_cli_args_t args;
  xr_cli_args_init(&args, "replay compare", options, argc, argv);
  for (xr_cli_token_t t; (t = xr_cli_next(&args)) != XR_CLI_END;) {
    if (t == XR_CLI_BAD) return XR_EXIT_USAGE;
    if (t == XR_CLI_OPERAND) {
      if (n_paths == 2)
        return xr_cli_error("replay compare", "two reports at a time (%s is a third)", args.arg);
      paths[n_paths++] = args.arg;
    } else if (xr_cli_is(&args, "--svg")) {
      svg = args.value;
    } else {
      fputs(usage, stdout);
      return XR_EXIT_OK;
    }
  }
  if (n_paths != 2)
    return xr_cli_error("replay compare", "two reports, A.json and B.json, are required (got %d)",
                        n_paths);
  char b0[4096], b1[4096], b2[4096];
  paths[0] = xr_cli_path(paths[0], b0, sizeof b0);
  paths[1] = xr_cli_path(paths[1], b1, sizeof b1);
  if (svg) svg = xr_cli_path(svg, b2, sizeof b2);
  xr_report_contents_t *a = NULL, *b = NULL;
  if (xr_report_read(paths[0], &a) != XR_OK || xr_report_read(paths[1], &b) != XR_OK) {
    fprintf(stderr, "replay compare: %s\n", xr_last_error());
    xr_report_contents_free(a);
    return XR_EXIT_USAGE;
  }
  char a_label[600], b_label[600];
  xr_report_label(a, a_label, sizeof a_label);
  xr_report_label(b, b_label, sizeof b_label);
  printf("A: %s (%s)\nB: %s (%s)\n", paths[0], a_label, paths[1], b_label);
  bool ratios = has_trace_times(a) || has_trace_times(b);
  printf("%4s %-44s %12s %12s %9s", "#", "op", "A us", "B us", "A/B");
  if (ratios) printf(" %9s %9s", "A/trace", "B/trace");
  printf("  %s\n", "kernels (A | B)");
  size_t unmatched = 0;
  for (size_t i = 0; i < a->op_count; i++) {
    const xr_report_entry_t *ea = &a->ops[i], *eb = xr_report_find(b, ea->index, ea->name);
    if (!eb) unmatched++;
    printf("%4lld %-44s", (long long)ea->index, ea->name);
    if (ea->median_us > 0) printf(" %12.2f", ea->median_us);
    else printf(" %12s", ea->outcome[0] ? ea->outcome : "-");
    if (eb && eb->median_us > 0) printf(" %12.2f", eb->median_us);
    else printf(" %12s", eb ? (eb->outcome[0] ? eb->outcome : "-") : "missing");
    bool both = ea->median_us > 0 && eb && eb->median_us > 0;
    if (both) printf(" %8.2fx", ea->median_us / eb->median_us);
    else printf(" %9s", "-");
    if (ratios) {
      /* Only where both runs have the recorded time, so that the two columns compare. */
      bool traced = ea->trace_us >= 0 && eb && eb->trace_us >= 0;
      ratio_cell(traced ? ea : NULL);
      ratio_cell(traced ? eb : NULL);
    }
    printf("  %s | %s\n", ea->kernel[0] ? ea->kernel : "-", eb && eb->kernel[0] ? eb->kernel : "-");
  }
  size_t both;
  double geomean = xr_report_speedup_geomean(a, b, &both);
  printf("%zu ops timed on both; geometric-mean speed-up of B over A: %.3fx\n", both, geomean);
  if (unmatched)
    printf("%zu ops of A are not in B (different bundles or a run stopped early)\n", unmatched);
  if (ratios) {
    print_trace_ratio("A", a);
    print_trace_ratio("B", b);
  }
  int rc = XR_EXIT_OK;
  if (svg) {
    FILE *f = fopen(svg, "w");
    if (!f) {
      fprintf(stderr, "replay compare: %s: cannot create\n", svg);
      rc = XR_EXIT_USAGE;
    } else {
      xr_report_speedup_svg(f, a, b);
      if (fclose(f) == 0) printf("wrote %s\n", svg);
      else rc = XR_EXIT_FAILED;
    }
  }
  xr_report_contents_free(a);
  xr_report_contents_free(b);
  return rc;
}
