/* `replay compare A.json B.json [--threshold=P] [--svg FILE]`: two reports side by side (an
 * MI300X report and an H200 report of one bundle, or of the same model traced on each):
 * the ops paired as replay/report_compare.h says, per-op medians, the speed-up of B over A with
 * its 95% interval and verdict, the geometric mean over matched ops with its interval, the ops
 * of each side left unmatched with their share of its time, and an SVG bar chart. When the
 * bundles recorded the source traces' times, each run's replay / trace ratio per op and the
 * ratio statistics of both summaries. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/categories.h"
#include "replay/report_compare.h"
#include "replay/report_html.h"
#include "tools/cli.h"

static const char usage[] =
    "usage: replay compare A.json B.json [--threshold=P] [--svg FILE]\n"
    "  Compares two replay reports (--report=FILE.json): reports of one bundle pair op by op,\n"
    "  others by signature (name, dtypes, shapes, strides, scalar values). Per pair: the median\n"
    "  times, speed-up = A time / B time (> 1: B is faster) with a bootstrap 95% interval, and a\n"
    "  verdict: FASTER / SLOWER (the interval clears the threshold, P percent, default 10, or\n"
    "  either run's own noise if larger), SAME (the interval lies within it) or UNSURE. Then the\n"
    "  geometric mean over matched ops with its interval, and each side's unmatched ops with\n"
    "  their share of its time; with the source traces' times, each run's replay / trace ratio.\n";

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

/* Each side's time by category: the replay's count x median over its timed ops (all of them,
 * matched or not), and where either side has them, the times its trace recorded. */
static void print_categories(const xr_report_contents_t *a, const xr_report_contents_t *b) {
  xr_category_total_t ta[XR_CATEGORY_COUNT], tb[XR_CATEGORY_COUNT];
  xr_report_category_totals(a, ta);
  xr_report_category_totals(b, tb);
  bool traced = has_trace_times(a) || has_trace_times(b);
  printf("time by category (replay: count x median over each side's timed ops%s):\n",
         traced ? "; trace: the time its trace recorded for all its ops" : "");
  printf("  %-26s %5s %12s", "category", "A ops", "A replay us");
  if (traced) printf(" %12s", "A trace us");
  printf("  %5s %12s", "B ops", "B replay us");
  if (traced) printf(" %12s", "B trace us");
  putchar('\n');
  for (int k = 0; k < XR_CATEGORY_COUNT; k++) {
    if (!ta[k].ops && !tb[k].ops) continue;
    printf("  %-26s %5zu %12.1f", xr_category_name(k), ta[k].ops, ta[k].replay_us);
    if (traced && ta[k].trace_us > 0) printf(" %12.1f", ta[k].trace_us);
    else if (traced) printf(" %12s", "-");
    printf("  %5zu %12.1f", tb[k].ops, tb[k].replay_us);
    if (traced && tb[k].trace_us > 0) printf(" %12.1f", tb[k].trace_us);
    else if (traced) printf(" %12s", "-");
    putchar('\n');
  }
}

/* One side's unmatched ops: how many, their share of its time, the largest few. */
static void print_unmatched(const char *which, const xr_compare_side_t *s) {
  if (!s->unmatched_count) return;
  printf("unmatched in %s: %zu ops, %.1f%% of %s's timed time (count x median)", which,
         s->unmatched_count, s->timed_us > 0 ? 100 * s->unmatched_us / s->timed_us : 0, which);
  for (size_t k = 0; k < s->unmatched_count && k < 5; k++) {
    const xr_report_entry_t *e = s->unmatched[k];
    printf("%s #%lld %s %s", k ? ";" : ":", (long long)e->index, e->name, e->args);
  }
  printf("%s\n", s->unmatched_count > 5 ? "; ..." : "");
}

int xr_cmd_compare(int argc, char **argv) {
  const char *paths[2] = {NULL, NULL}, *svg = NULL;
  double threshold = XR_COMPARE_DEFAULT_THRESHOLD_PERCENT;
  int n_paths = 0;
  static const char *const options[] = {"--svg=", "--threshold=", "-h", "--help", NULL};
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
    } else if (xr_cli_is(&args, "--threshold")) {
      char *end;
      threshold = strtod(args.value, &end);
      if (*end || !(threshold > 0) || !isfinite(threshold))
        return xr_cli_bad_value(&args, "not a percentage above 0");
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
  xr_comparison_t *c = NULL;
  if (xr_report_compare(a, b, threshold, &c) != XR_OK) {
    fprintf(stderr, "replay compare: %s\n", xr_last_error());
    xr_report_contents_free(a);
    xr_report_contents_free(b);
    return XR_EXIT_FAILED;
  }
  char a_label[600], b_label[600];
  xr_report_label(a, a_label, sizeof a_label);
  xr_report_label(b, b_label, sizeof b_label);
  printf("A: %s (%s)\nB: %s (%s)\n", paths[0], a_label, paths[1], b_label);
  if (c->by_position)
    printf("one bundle (%s): ops paired by position\n", a->bundle_hash);
  else
    printf("different bundles: ops paired by signature (name, dtypes, shapes, strides, scalar "
           "values), %zu pairs\n",
           c->pair_count);
  bool ratios = has_trace_times(a) || has_trace_times(b);
  printf("%11s %-40s %11s %11s %8s %15s %-7s", c->by_position ? "#" : "# A/B", "op", "A us",
         "B us", "A/B", "95% interval", "verdict");
  if (ratios) printf(" %9s %9s", "A/trace", "B/trace");
  printf("  %s\n", "kernels (A | B)");
  for (size_t i = 0; i < c->pair_count; i++) {
    const xr_compare_pair_t *p = &c->pairs[i];
    const xr_report_entry_t *ea = p->a, *eb = p->b;
    char at[32];
    if (c->by_position) snprintf(at, sizeof at, "%lld", (long long)ea->index);
    else snprintf(at, sizeof at, "%lld/%lld", (long long)ea->index, (long long)eb->index);
    printf("%11s %-40s", at, ea->name);
    if (ea->median_us > 0) printf(" %11.2f", ea->median_us);
    else printf(" %11s", ea->outcome[0] ? ea->outcome : "-");
    if (eb->median_us > 0) printf(" %11.2f", eb->median_us);
    else printf(" %11s", eb->outcome[0] ? eb->outcome : "-");
    if (p->timed) printf(" %7.3fx", p->speedup);
    else printf(" %8s", "-");
    char interval[40] = "-";
    if (!isnan(p->lo)) snprintf(interval, sizeof interval, "%.3g-%.3gx", p->lo, p->hi);
    printf(" %15s %-7s", interval, p->timed ? xr_verdict_name(p->verdict) : "-");
    if (ratios) {
      /* Only where both runs have the recorded time, so that the two columns compare. */
      bool traced = ea->trace_us >= 0 && eb->trace_us >= 0;
      ratio_cell(traced ? ea : NULL);
      ratio_cell(traced ? eb : NULL);
    }
    printf("  %s | %s", ea->kernel[0] ? ea->kernel : "-", eb->kernel[0] ? eb->kernel : "-");
    if (p->timed && p->verdict == XR_VERDICT_UNSURE && p->why[0]) printf("  (%s)", p->why);
    putchar('\n');
  }
  if (c->timed_pairs) {
    printf("geometric-mean speed-up of B over A over the %zu matched ops timed on both: %.3fx",
           c->timed_pairs, c->geomean);
    if (!isnan(c->geomean_lo))
      printf(" (95%% interval %.3g-%.3gx)", c->geomean_lo, c->geomean_hi);
    if (c->contended_pairs)
      printf("; %zu of them timed on a crowded host (CONTENDED), whose times are not the "
             "kernels' own",
             c->contended_pairs);
    putchar('\n');
  } else {
    printf("no matched op was timed on both\n");
  }
  printf("verdicts at a %.3g%% threshold: %zu FASTER, %zu SLOWER, %zu SAME, %zu UNSURE\n",
         threshold, c->verdicts[XR_VERDICT_FASTER], c->verdicts[XR_VERDICT_SLOWER],
         c->verdicts[XR_VERDICT_SAME], c->verdicts[XR_VERDICT_UNSURE]);
  print_unmatched("A", &c->a);
  print_unmatched("B", &c->b);
  print_categories(a, b);
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
      xr_report_speedup_svg(f, a, b, c);
      if (fclose(f) == 0) printf("wrote %s\n", svg);
      else rc = XR_EXIT_FAILED;
    }
  }
  xr_comparison_free(c);
  xr_report_contents_free(a);
  xr_report_contents_free(b);
  return rc;
}
