/* `replay compare A.json B.json [--svg FILE]`: two reports of the same bundle, made on different
 * machines (an MI300X report and an H200 report, say), side by side: per-op medians, the
 * speed-up of B over A, the geometric mean, and an SVG bar chart of the per-op speed-ups. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/report.h"
#include "tools/cli.h"

static const char usage[] =
    "usage: replay compare A.json B.json [--svg FILE]\n"
    "  Compares two replay reports (--report=FILE.json) of the same bundle: per-op median times,\n"
    "  speed-up = A time / B time (> 1: B is faster), and their geometric mean.\n";

typedef struct row {
  int index;
  const char *name;
  double a_us, b_us;   /* < 0 when the op did not succeed there */
  const char *a_kernel, *b_kernel;
} row_t;

static void xml_escape(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<') fputs("&lt;", f);
    else if (*s == '>') fputs("&gt;", f);
    else if (*s == '&') fputs("&amp;", f);
    else if (*s == '"') fputs("&quot;", f);
    else fputc(*s, f);
  }
}

/* Horizontal bars on a log2 axis centred on 1x: right of the line, B is faster. */
static int write_svg(const char *path, const row_t *rows, size_t n, const char *a_label,
                     const char *b_label, double geomean) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "replay compare: %s: cannot create\n", path);
    return XR_EXIT_USAGE;
  }
  size_t shown = 0;
  double max_log = 1;
  for (size_t i = 0; i < n; i++) {
    if (rows[i].a_us <= 0 || rows[i].b_us <= 0) continue;
    double l = fabs(log2(rows[i].a_us / rows[i].b_us));
    if (l > max_log) max_log = l;
    shown++;
  }
  const int bar_h = 18, top = 50, label_w = 330, half = 260, width = label_w + 2 * half + 90;
  int height = top + (int)(shown + 1) * bar_h + 30;
  int mid = label_w + half;
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
             "font-family=\"sans-serif\" font-size=\"12\">\n", width, height);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  fprintf(f, "<text x=\"10\" y=\"20\" font-size=\"14\">Speed-up of ");
  xml_escape(f, b_label);
  fprintf(f, " over ");
  xml_escape(f, a_label);
  fprintf(f, " per op (log scale; geometric mean %.2fx)</text>\n", geomean);
  fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", mid, top - 10, mid,
          height - 25);
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">1x</text>\n", mid, top - 14);
  int y = top;
  for (size_t i = 0; i < n; i++) {
    if (rows[i].a_us <= 0 || rows[i].b_us <= 0) continue;
    double s = rows[i].a_us / rows[i].b_us, l = log2(s);
    int w = (int)(fabs(l) / max_log * half);
    int x = l >= 0 ? mid : mid - w;
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%d ", label_w - 8, y + 13, rows[i].index);
    xml_escape(f, rows[i].name);
    fprintf(f, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", x,
            y + 2, w > 0 ? w : 1, bar_h - 4, l >= 0 ? "#2a7ab9" : "#d9534f");
    fprintf(f, "<text x=\"%d\" y=\"%d\">%.2fx</text>\n", l >= 0 ? x + w + 4 : mid + 4, y + 13, s);
    y += bar_h;
  }
  fprintf(f, "</svg>\n");
  return fclose(f) == 0 ? XR_EXIT_OK : XR_EXIT_FAILED;
}

int xr_cmd_compare(int argc, char **argv) {
  const char *paths[2] = {NULL, NULL}, *svg = NULL;
  int n_paths = 0;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--svg=", 6)) svg = argv[i] + 6;
    else if (!strcmp(argv[i], "--svg") && i + 1 < argc) svg = argv[++i];
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(usage, stdout);
      return XR_EXIT_OK;
    } else if (argv[i][0] == '-' || n_paths == 2) {
      fprintf(stderr, "replay compare: unexpected %s\n%s", argv[i], usage);
      return XR_EXIT_USAGE;
    } else {
      paths[n_paths++] = argv[i];
    }
  }
  if (n_paths != 2) {
    fputs(usage, stderr);
    return XR_EXIT_USAGE;
  }
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
  size_t n = a->op_count;
  row_t *rows = calloc(n ? n : 1, sizeof *rows);
  const char *a_dev = a->device[0] ? a->device : paths[0];
  const char *b_dev = b->device[0] ? b->device : paths[1];
  printf("A: %s (%s)\nB: %s (%s)\n", paths[0], a_dev, paths[1], b_dev);
  printf("%4s %-44s %12s %12s %9s  %s\n", "#", "op", "A us", "B us", "A/B", "kernels (A | B)");
  double log_sum = 0;
  size_t both = 0, unmatched = 0;
  for (size_t i = 0; i < n; i++) {
    const xr_report_entry_t *ea = &a->ops[i], *eb = xr_report_find(b, ea->index, ea->name);
    row_t *r = &rows[i];
    r->index = (int)ea->index;
    r->name = ea->name;
    if (!eb) unmatched++;
    r->a_us = ea->median_us;
    r->b_us = eb ? eb->median_us : -1;
    r->a_kernel = ea->kernel[0] ? ea->kernel : "-";
    r->b_kernel = eb && eb->kernel[0] ? eb->kernel : "-";
    printf("%4d %-44s", r->index, r->name);
    if (r->a_us > 0) printf(" %12.2f", r->a_us);
    else printf(" %12s", ea->outcome[0] ? ea->outcome : "-");
    if (r->b_us > 0) printf(" %12.2f", r->b_us);
    else printf(" %12s", eb ? (eb->outcome[0] ? eb->outcome : "-") : "missing");
    if (r->a_us > 0 && r->b_us > 0) {
      printf(" %8.2fx", r->a_us / r->b_us);
      log_sum += log(r->a_us / r->b_us);
      both++;
    } else {
      printf(" %9s", "-");
    }
    printf("  %s | %s\n", r->a_kernel, r->b_kernel);
  }
  double geomean = both ? exp(log_sum / (double)both) : NAN;
  printf("%zu ops timed on both; geometric-mean speed-up of B over A: %.3fx\n", both, geomean);
  if (unmatched)
    printf("%zu ops of A are not in B (different bundles or a run stopped early)\n", unmatched);
  int rc = XR_EXIT_OK;
  if (svg) {
    rc = write_svg(svg, rows, n, a_dev, b_dev, geomean);
    if (rc == XR_EXIT_OK) printf("wrote %s\n", svg);
  }
  free(rows);
  xr_report_contents_free(a);
  xr_report_contents_free(b);
  return rc;
}
