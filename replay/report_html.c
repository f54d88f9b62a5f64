/* Replay reports drawn as HTML and SVG: see report_html.h. */
#include "replay/report_html.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay/categories.h"

#define DASH "&#8212;" /* what a report does not hold */

/* Text and attribute values alike: op names hold < > & ("aten::to<T>"), paths may hold quotes. */
static void esc(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '&': fputs("&amp;", f); break;
      case '"': fputs("&quot;", f); break;
      case '\'': fputs("&#39;", f); break;
      default: fputc(*s, f);
    }
  }
}

void xr_report_label(const xr_report_contents_t *c, char *buf, size_t size) {
  if (c->hal[0] && c->device[0])
    snprintf(buf, size, "%s \u00b7 %s", c->hal, c->device);
  else if (c->hal[0] || c->device[0])
    snprintf(buf, size, "%s", c->hal[0] ? c->hal : c->device);
  else
    snprintf(buf, size, "%s", c->path);
}

/* ------------------------------------------------------------------------------------------ */
/* commands to paste                                                                           */

/* Appends `s` at buf + *at; false when it does not fit with its NUL. */
static bool put(char *buf, size_t size, size_t *at, const char *s) {
  size_t n = strlen(s);
  if (*at + n >= size) return false;
  memcpy(buf + *at, s, n + 1);
  *at += n;
  return true;
}

bool xr_shell_word(const char *s, char *buf, size_t size) {
  static const char plain[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@%";
  size_t at = 0;
  bool ok = size > 0;
  if (ok) buf[0] = '\0';
  if (!s[0] || s[strspn(s, plain)]) {
    ok = ok && put(buf, size, &at, "'");
    for (const char *p = s; ok && *p; p++) {
      char one[2] = {*p, '\0'};
      ok = put(buf, size, &at, *p == '\'' ? "'\\''" : one);
    }
    ok = ok && put(buf, size, &at, "'");
  } else {
    ok = ok && put(buf, size, &at, s);
  }
  if (!ok && size) buf[0] = '\0';
  return ok;
}

bool xr_report_slice_command(const char *bundle, int64_t index, const char *hal, char *buf,
                             size_t size) {
  char bundle_word[16384], hal_word[256], out[32];
  snprintf(out, sizeof out, "op%lld.json", (long long)index);
  int n = -1;
  if (xr_shell_word(bundle, bundle_word, sizeof bundle_word) &&
      xr_shell_word(hal && hal[0] ? hal : "cpu", hal_word, sizeof hal_word))
    n = snprintf(buf, size, "replay slice %s --op=%lld -o %s && replay --hal=%s %s", bundle_word,
                 (long long)index, out, hal_word, out);
  if (n >= 0 && (size_t)n < size) return true;
  if (size) buf[0] = '\0';
  return false;
}

/* Runs on one page (`replay report` takes at most 16). */
#define MAX_PAGE_RUNS 16

static bool timed(const xr_report_entry_t *e) {
  return e && e->median_us > 0;
}

/* ------------------------------------------------------------------------------------------ */
/* the speed-up chart                                                                          */

/* The geometric mean and its interval, in words. */
static void geomean_text(FILE *f, const xr_comparison_t *c) {
  fprintf(f, "geometric mean %.3gx over the %zu matched ops timed on both", c->geomean,
          c->timed_pairs);
  if (!isnan(c->geomean_lo))
    fprintf(f, " (95%% interval %.3g\u2013%.3gx)", c->geomean_lo, c->geomean_hi);
  if (c->contended_pairs) fprintf(f, ", %zu of them CONTENDED", c->contended_pairs);
}

void xr_report_speedup_svg(FILE *f, const xr_report_contents_t *a, const xr_report_contents_t *b,
                           const xr_comparison_t *c) {
  char a_label[600], b_label[600];
  xr_report_label(a, a_label, sizeof a_label);
  xr_report_label(b, b_label, sizeof b_label);
  double max_log = 1;
  for (size_t i = 0; i < c->pair_count; i++) {
    const xr_compare_pair_t *p = &c->pairs[i];
    if (!p->timed) continue;
    double l = fabs(log2(p->speedup));
    if (!isnan(p->lo)) l = fmax(l, fmax(fabs(log2(p->lo)), fabs(log2(p->hi))));
    if (l > max_log) max_log = l;
  }
  const int bar_h = 18, top = 78, label_w = 330, half = 260, width = label_w + 2 * half + 150;
  int height = top + (int)(c->timed_pairs + 1) * bar_h + 30;
  int mid = label_w + half;
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"speedup\" width=\"%d\" height=\"%d\" "
          "font-family=\"sans-serif\" font-size=\"12\">\n",
          width, height);
  fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  fputs("<text x=\"10\" y=\"20\" font-size=\"14\">Speed-up of ", f);
  esc(f, b_label);
  fputs("</text>\n<text x=\"10\" y=\"38\" font-size=\"14\">over ", f);
  esc(f, a_label);
  fputs("</text>\n<text class=\"geomean\" x=\"10\" y=\"56\" fill=\"#555\">", f);
  if (c->timed_pairs) {
    fputs("per op, log scale (the first's median / the second's; right of 1x, the second is "
          "faster), 95% intervals; ",
          f);
    geomean_text(f, c);
    fputs("</text>\n", f);
  } else {
    fputs("no matched op was timed in both</text>\n", f);
  }
  fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", mid, top - 6,
          mid, height - 25);
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">1x</text>\n", mid, height - 10);
  int y = top;
  for (size_t i = 0; i < c->pair_count; i++) {
    const xr_compare_pair_t *p = &c->pairs[i];
    if (!p->timed) continue;
    double l = log2(p->speedup);
    int w = (int)(fabs(l) / max_log * half);
    int x = l >= 0 ? mid : mid - w;
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%lld ", label_w - 8, y + 13,
            (long long)p->a->index);
    esc(f, p->a->name);
    fprintf(f,
            "</text>\n<rect class=\"bar\" data-index=\"%lld\" x=\"%d\" y=\"%d\" width=\"%d\" "
            "height=\"%d\" fill=\"%s\"><title>",
            (long long)p->a->index, x, y + 2, w > 0 ? w : 1, bar_h - 4,
            p->verdict == XR_VERDICT_SAME || p->verdict == XR_VERDICT_UNSURE ? "#999"
            : l >= 0                                                         ? "#2a7ab9"
                                                                             : "#d9534f");
    esc(f, p->a->name);
    fprintf(f, ": %.2f us / %.2f us = %.3fx, %s", p->a->median_us, p->b->median_us, p->speedup,
            xr_verdict_name(p->verdict));
    if (!isnan(p->lo)) fprintf(f, " (95%% interval %.3g\u2013%.3gx)", p->lo, p->hi);
    fputs("</title></rect>\n", f);
    if (!isnan(p->lo)) {
      int x0 = mid + (int)(log2(p->lo) / max_log * half);
      int x1 = mid + (int)(log2(p->hi) / max_log * half);
      fprintf(f,
              "<line class=\"interval\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
              "stroke=\"black\"/>\n",
              x0, y + bar_h / 2, x1, y + bar_h / 2);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\">%.2fx %s</text>\n", l >= 0 ? x + w + 4 : mid + 4, y + 13,
            p->speedup, xr_verdict_name(p->verdict));
    y += bar_h;
  }
  fprintf(f, "</svg>\n");
}

/* ------------------------------------------------------------------------------------------ */
/* numbers                                                                                     */

/* `digits` significant digits, but whole numbers from 10^digits up (10448, not 1.045e+04). */
static void fmt(char *buf, size_t n, double v, int digits) {
  if (fabs(v) >= pow(10, digits) && fabs(v) < 1e15)
    snprintf(buf, n, "%.0f", v);
  else
    snprintf(buf, n, "%.*g", digits, v);
}

/* A number, or the dash when the report does not hold it. */
static void num(FILE *f, double v, int digits) {
  char buf[64];
  fmt(buf, sizeof buf, v, digits);
  fputs(isfinite(v) ? buf : DASH, f);
}

/* "12.3 G": SI prefixes for the roofline's ticks and the ceilings' labels. */
static void si(char *buf, size_t n, double v) {
  static const char *const prefix[] = {"", "k", "M", "G", "T", "P", "E"};
  int k = 0;
  while (fabs(v) >= 1000 && k < 6) v /= 1000, k++;
  snprintf(buf, n, "%.3g %s", v, prefix[k]);
}

/* A table cell: its sort key in data-v (numbers sort as numbers), its text or the dash. */
static void num_cell(FILE *f, double v, int digits) {
  if (isfinite(v))
    fprintf(f, "<td class=\"n\" data-v=\"%.17g\">", v);
  else
    fputs("<td class=\"n\" data-v=\"\">", f);
  num(f, v, digits);
  fputs("</td>", f);
}

/* A report's string, or the dash when it holds none. */
static void text(FILE *f, const char *s) {
  if (s && s[0])
    esc(f, s);
  else
    fputs(DASH, f);
}

static void text_cell(FILE *f, const char *cls, const char *s) {
  fprintf(f, "<td class=\"%s\">", cls);
  text(f, s);
  fputs("</td>", f);
}

/* What ran here (the implementation and what a vendor library chose in it) over what the
 * trace recorded (its kernels, with their launches). */
static void kernel_cell(FILE *f, const xr_report_entry_t *e) {
  fputs("<td class=\"kernel\">", f);
  text(f, e->kernel);
  if (e->algorithm[0]) {
    fputs("<div class=\"algorithm\">", f);
    esc(f, e->algorithm);
    fputs("</div>", f);
  }
  const cJSON *k;
  bool first = true;
  cJSON_ArrayForEach(k, e->trace_kernels) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(k, "name");
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(k, "count");
    if (!cJSON_IsString(name)) continue;
    fputs(first ? "<div class=\"trace-kernels\">trace: " : "; ", f);
    first = false;
    esc(f, name->valuestring);
    if (cJSON_IsNumber(count) && count->valuedouble > 1)
      fprintf(f, " &#215;%.0f", count->valuedouble);
  }
  if (!first) fputs("</div>", f);
  fputs("</td>", f);
}

/* ------------------------------------------------------------------------------------------ */
/* op families' colours, one per family over the whole page                                    */

#define MAX_FAMILIES 32

typedef struct families {
  size_t count;
  const char *names[MAX_FAMILIES];
} families_t;

static const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
#define UNKNOWN_COLOUR "#444444"

static const char *family_colour(families_t *fam, const char *name) {
  if (!name[0]) return UNKNOWN_COLOUR;
  size_t k = 0;
  while (k < fam->count && strcmp(fam->names[k], name)) k++;
  if (k == fam->count && fam->count < MAX_FAMILIES) fam->names[fam->count++] = name;
  return palette[k % (sizeof palette / sizeof palette[0])];
}

/* ------------------------------------------------------------------------------------------ */
/* the roofline                                                                                */

static bool plottable(const xr_report_entry_t *e) {
  return timed(e) && e->flops > 0 && e->bytes > 0 && isfinite(e->flops) && isfinite(e->bytes);
}

typedef struct axes {
  int left, top, width, height;
  double x_lo, x_hi, y_lo, y_hi; /* decades */
} axes_t;

static double ax_x(const axes_t *a, double v) {
  return a->left + (log10(v) - a->x_lo) / (a->x_hi - a->x_lo) * a->width;
}
static double ax_y(const axes_t *a, double v) {
  return a->top + a->height - (log10(v) - a->y_lo) / (a->y_hi - a->y_lo) * a->height;
}

/* Whole decades around [lo, hi], at least two. */
static void decades(double lo, double hi, double *out_lo, double *out_hi) {
  if (!(lo > 0) || !isfinite(lo)) lo = 0.1;
  if (!(hi >= lo) || !isfinite(hi)) hi = lo * 100;
  /* Any figure a report may hold stays within a few hundred ticks. */
  double l = fmax(floor(log10(lo)), -300), h = fmin(fmax(ceil(log10(hi)), l), 300);
  if (h - l < 2) l = h - 2;
  *out_lo = l;
  *out_hi = h;
}

static const char *const ceiling_dash[] = {"", "6 3", "2 3", "8 3 2 3", "1 2", "10 4"};

/* Beside measured ceilings, what the device states (its datasheet, or an estimate), so that a
 * reader sees both "max achievable" and the vendor's figure. */
static void stated_figures(FILE *f, const xr_report_contents_t *c) {
  char buf[64];
  bool any = false;
  const xr_report_figure_t *b = &c->stated_bandwidth;
  if (isfinite(b->value) && b->value > 0 && b->value != c->bandwidth.value) {
    si(buf, sizeof buf, b->value);
    fprintf(f, "<p class=\"plotnote stated\">The device states: memory bandwidth %sB/s (", buf);
    esc(f, b->source);
    fputs(")", f);
    any = true;
  }
  for (size_t k = 0; k < c->stated_peak_count; k++) {
    const xr_report_figure_t *p = &c->stated_peaks[k];
    bool same = false;
    for (size_t j = 0; j < c->peak_count; j++)
      same |= !strcmp(c->peaks[j].dtype, p->dtype) && c->peaks[j].value == p->value;
    if (same) continue;
    si(buf, sizeof buf, p->value);
    fputs(any ? ", " : "<p class=\"plotnote stated\">The device states: ", f);
    esc(f, p->dtype);
    fprintf(f, " peak %sFLOP/s (", buf);
    esc(f, p->source);
    fputs(")", f);
    any = true;
  }
  if (any) fputs("; the ceilings drawn and the percentages use the measured figures.</p>\n", f);
}

/* Each op at (FLOPs per byte, achieved FLOP/s) under the ceilings its percentage and bound use:
 * the bandwidth line up to each compute peak's ridge point, then that peak. */
static void roofline(FILE *f, const xr_report_contents_t *c, families_t *fam) {
  double x_min = INFINITY, x_max = 0, y_min = INFINITY, y_max = 0;
  size_t points = 0, no_flops = 0, untimed = 0;
  for (size_t i = 0; i < c->op_count; i++) {
    const xr_report_entry_t *e = &c->ops[i];
    if (!timed(e)) {
      untimed++;
      continue;
    }
    if (!plottable(e)) {
      no_flops++;
      continue;
    }
    double x = e->flops / e->bytes, y = e->flops / (e->median_us * 1e-6);
    x_min = fmin(x_min, x), x_max = fmax(x_max, x);
    y_min = fmin(y_min, y), y_max = fmax(y_max, y);
    points++;
  }
  double bw = c->bandwidth.value;
  bool has_bw = isfinite(bw) && bw > 0;
  for (size_t k = 0; k < c->peak_count; k++) {
    double p = c->peaks[k].value;
    y_max = fmax(y_max, p);
    y_min = fmin(y_min, p / 100);
    if (has_bw) x_min = fmin(x_min, p / bw / 10), x_max = fmax(x_max, p / bw * 10);
  }
  axes_t a = {.left = 78, .top = 16, .width = 560, .height = 330};
  decades(x_min, x_max, &a.x_lo, &a.x_hi);
  decades(y_min, y_max, &a.y_lo, &a.y_hi);
  int w = a.left + a.width + 130, h = a.top + a.height + 50;
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"roofline\" width=\"%d\" height=\"%d\" "
          "font-family=\"sans-serif\" font-size=\"11\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n",
          w, h, a.left, a.top, a.width, a.height);
  char buf[64];
  for (double d = a.x_lo; d <= a.x_hi + 1e-9; d++) {
    double x = ax_x(&a, pow(10, d));
    fprintf(f,
            "<line class=\"tick\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e4e4e4\"/>"
            "<text class=\"xtick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
            x, a.top, x, a.top + a.height, x, a.top + a.height + 14, pow(10, d));
  }
  for (double d = a.y_lo; d <= a.y_hi + 1e-9; d++) {
    double y = ax_y(&a, pow(10, d));
    si(buf, sizeof buf, pow(10, d));
    fprintf(f,
            "<line class=\"tick\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
            "<text class=\"ytick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
            a.left, y, a.left + a.width, y, a.left - 4, y + 4, buf);
  }
  fprintf(f,
          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n"
          "<text transform=\"translate(14 %d) rotate(-90)\" text-anchor=\"middle\">achieved "
          "FLOP/s</text>\n",
          a.left + a.width / 2, a.top + a.height + 34, a.top + a.height / 2);
  /* Ceilings: clipped to the plot. */
  double x_left = pow(10, a.x_lo), x_right = pow(10, a.x_hi), y_floor = pow(10, a.y_lo);
  double top_peak = 0;
  for (size_t k = 0; k < c->peak_count; k++) top_peak = fmax(top_peak, c->peaks[k].value);
  if (has_bw) {
    double x0 = fmax(x_left, y_floor / bw),
           x1 = top_peak > 0 ? fmin(x_right, top_peak / bw) : x_right;
    si(buf, sizeof buf, bw);
    fprintf(f,
            "<line class=\"ceiling\" data-kind=\"memory\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
            "y2=\"%.1f\" stroke=\"black\" stroke-width=\"1.5\"><title>memory %sB/s (",
            ax_x(&a, x0), ax_y(&a, bw * x0), ax_x(&a, x1), ax_y(&a, fmin(bw * x1, pow(10, a.y_hi))),
            buf);
    esc(f, c->bandwidth.source);
    fputs(")</title></line>\n", f);
  }
  for (size_t k = 0; k < c->peak_count; k++) {
    const xr_report_figure_t *p = &c->peaks[k];
    double x0 = has_bw ? fmax(x_left, p->value / bw) : x_left;
    if (x0 > x_right) x0 = x_right;
    double y = ax_y(&a, p->value);
    si(buf, sizeof buf, p->value);
    fputs("<line class=\"ceiling\" data-kind=\"compute\" data-dtype=\"", f);
    esc(f, p->dtype);
    fprintf(f,
            "\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\" "
            "stroke-dasharray=\"%s\"><title>",
            ax_x(&a, x0), y, ax_x(&a, x_right), y, ceiling_dash[k % 6]);
    esc(f, p->dtype);
    fprintf(f, " %sFLOP/s (", buf);
    esc(f, p->source);
    fprintf(f, ")</title></line>\n<text x=\"%d\" y=\"%.1f\">", a.left + a.width + 4, y + 4);
    esc(f, p->dtype);
    fprintf(f, " %sFLOP/s</text>\n", buf);
  }
  for (size_t i = 0; i < c->op_count; i++) {
    const xr_report_entry_t *e = &c->ops[i];
    if (!plottable(e)) continue;
    double x = e->flops / e->bytes, y = e->flops / (e->median_us * 1e-6);
    fprintf(f,
            "<circle class=\"pt\" data-index=\"%lld\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" "
            "fill=\"%s\" fill-opacity=\"0.8\" stroke=\"#222\" stroke-width=\"0.5\"><title>%lld ",
            (long long)e->index, ax_x(&a, x), ax_y(&a, y), family_colour(fam, e->family),
            (long long)e->index);
    esc(f, e->name);
    fputs(" (", f);
    esc(f, e->family[0] ? e->family : "family not recorded");
    fputs(", ", f);
    esc(f, e->kernel);
    si(buf, sizeof buf, y);
    fprintf(f, "): %.3g FLOP/byte, %sFLOP/s", x, buf);
    if (isfinite(e->peak_percent)) fprintf(f, ", %.3g%% of peak", e->peak_percent);
    fputs("</title></circle>\n", f);
  }
  fputs("</svg>\n", f);

  /* The legend: ceilings with their source, the families shown. */
  fputs("<ul class=\"legend\">", f);
  if (has_bw) {
    si(buf, sizeof buf, bw);
    fprintf(
        f,
        "<li class=\"ceiling-legend\"><span class=\"swatch line\"></span>memory bandwidth %sB/s (",
        buf);
    esc(f, c->bandwidth.source[0] ? c->bandwidth.source : "source not recorded");
    fputs(")</li>", f);
  }
  for (size_t k = 0; k < c->peak_count; k++) {
    si(buf, sizeof buf, c->peaks[k].value);
    fprintf(f,
            "<li class=\"ceiling-legend\"><svg width=\"28\" height=\"8\"><line x1=\"0\" y1=\"4\" "
            "x2=\"28\" y2=\"4\" stroke=\"black\" stroke-dasharray=\"%s\"/></svg> ",
            ceiling_dash[k % 6]);
    esc(f, c->peaks[k].dtype);
    fprintf(f, " peak %sFLOP/s (", buf);
    esc(f, c->peaks[k].source[0] ? c->peaks[k].source : "source not recorded");
    fputs(")</li>", f);
  }
  bool unknown = false;
  for (size_t i = 0; i < c->op_count; i++) {
    const xr_report_entry_t *e = &c->ops[i];
    if (!plottable(e)) continue;
    bool seen = false;
    for (size_t j = 0; j < i && !seen; j++)
      seen = plottable(&c->ops[j]) && !strcmp(c->ops[j].family, e->family);
    if (seen) continue;
    if (!e->family[0]) {
      unknown = true;
      continue;
    }
    fprintf(f, "<li><span class=\"swatch\" style=\"background:%s\"></span>",
            family_colour(fam, e->family));
    esc(f, e->family);
    fputs("</li>", f);
  }
  if (unknown)
    fputs("<li><span class=\"swatch\" style=\"background:" UNKNOWN_COLOUR
          "\"></span>family not recorded (older report)</li>",
          f);
  fputs("</ul>\n", f);
  fprintf(f, "<p class=\"plotnote\">%zu ops plotted", points);
  if (no_flops)
    fprintf(f,
            "; %zu timed ops with no FLOPs or bytes (data movement) are not: their GB/s is in the "
            "table",
            no_flops);
  if (untimed) fprintf(f, "; %zu ops did not run here (table below)", untimed);
  if (!c->peak_count && !has_bw)
    fputs(
        ". No ceilings: the report holds no device peaks (written by an older version, or the "
        "device reported none)",
        f);
  fputs(".</p>\n", f);
  stated_figures(f, c);
}

/* ------------------------------------------------------------------------------------------ */
/* the page                                                                                    */

static const char style[] =
    "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1500px}"
    "h1{font-size:1.5em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ccc}"
    "h3{font-size:1.05em}"
    "table{border-collapse:collapse;font-size:0.85em}td,th{border:1px solid #ddd;padding:2px 6px;"
    "vertical-align:top}th{background:#f2f2f2;cursor:pointer;position:sticky;top:0}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}td.args{font-family:monospace;"
    "max-width:32em;word-break:break-all}tr.failed{background:#fde8e8}"
    "tr.unsupported{background:#fdf6e3}td.reproduce{font-size:0.9em;min-width:24em}"
    "td.reproduce code{user-select:all;word-break:break-all}"
    "dl.head{display:grid;grid-template-columns:max-content auto;gap:2px 1em}dt{color:#666}"
    ".note{background:#fff3cd;border:1px solid #e0c36a;padding:6px 10px;margin:6px 0}"
    ".error{background:#fde8e8;border-color:#d9534f}"
    "ul.legend{list-style:none;padding:0;font-size:0.85em;display:flex;flex-wrap:wrap;gap:4px 16px}"
    ".swatch{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle;"
    "border:1px solid #222}.swatch.line{height:0;border:0;border-top:2px solid black;width:28px}"
    ".plotnote{font-size:0.85em;color:#555}";

/* Sorting by a column and filtering by op name; the page is complete without it. */
static const char script[] =
    "document.querySelectorAll('table.ops').forEach(function(t){"
    "t.querySelectorAll('th').forEach(function(th,c){th.title='sort';th.onclick=function(){"
    "var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows),up=th.dataset.up!=='1';"
    "th.dataset.up=up?'1':'0';rows.sort(function(x,y){"
    "var p=x.cells[c],q=y.cells[c],u=p.dataset.v,v=q.dataset.v,r;"
    "if(u!==undefined&&v!==undefined){u=u===''?-Infinity:+u;v=v===''?-Infinity:+v;r=u-v;}"
    "else r=p.textContent.localeCompare(q.textContent);return up?r:-r;});"
    "rows.forEach(function(r){b.appendChild(r);});};});});"
    "var box=document.getElementById('filter');if(box)box.oninput=function(){"
    "var s=box.value.toLowerCase();document.querySelectorAll('tr.op').forEach(function(r){"
    "r.style.display=r.cells[1].textContent.toLowerCase().indexOf(s)<0?'none':'';});};"
    "var f=document.getElementById('filterbox');if(f)f.style.display='';";

static void head_row(FILE *f, const char *key, const char *value) {
  fprintf(f, "<dt>%s</dt><dd>", key);
  text(f, value);
  fputs("</dd>", f);
}

/* The run's options on one line: "warmup 3, iters 20 (at least), min_time_ms 0, cache warm ...". */
static void options_row(FILE *f, const xr_report_contents_t *c) {
  fputs("<dt>options</dt><dd>", f);
  if (!c->options) fputs(DASH, f);
  const cJSON *o;
  bool first = true;
  cJSON_ArrayForEach(o, c->options) {
    fputs(first ? "" : ", ", f);
    first = false;
    esc(f, o->string);
    fputc(' ', f);
    if (cJSON_IsString(o))
      esc(f, o->valuestring);
    else if (cJSON_IsNumber(o))
      fprintf(f, "%g", o->valuedouble);
    else if (cJSON_IsBool(o))
      fputs(cJSON_IsTrue(o) ? "true" : "false", f);
    else
      fputs("?", f);
  }
  const cJSON *iters = cJSON_GetObjectItemCaseSensitive(c->options, "iters");
  const cJSON *ms = cJSON_GetObjectItemCaseSensitive(c->options, "min_time_ms");
  if (cJSON_IsNumber(iters) && cJSON_IsNumber(ms))
    fprintf(f, " (stopping rule: at least %g timed iterations and %g ms of measured work)",
            iters->valuedouble, ms->valuedouble);
  fputs("</dd>", f);
}

static void notes(FILE *f, const xr_report_contents_t *c) {
  if (c->version < XR_REPORT_VERSION) {
    fprintf(f,
            "<p class=\"note version\">Written by an older version of xreplay (report version "
            "%d; this one writes %d): it records no date, source trace, device peaks or op "
            "families, shown as " DASH " and without ceilings.</p>\n",
            c->version, XR_REPORT_VERSION);
  }
  if (!c->finished) {
    fprintf(f,
            "<p class=\"note partial\">This run did not finish (its report has no summary: "
            "killed, or still running): it holds the %zu ops that finished before it "
            "stopped; later ops are missing, not failed.</p>\n",
            c->op_count);
  } else if (c->cancelled) {
    fputs(
        "<p class=\"note partial\">This run was interrupted: an op whose timing was cut short "
        "is listed as interrupted, with no time; the ops after it were not attempted.</p>\n",
        f);
  }
}

/* The summary's replay vs trace, when the run wrote one: whether it is a cross-device ratio, and
 * its distribution. */
static void trace_ratio_line(FILE *f, const xr_report_contents_t *c) {
  const xr_report_trace_ratio_t *t = &c->replay_vs_trace;
  if (t->count == 0) return;
  fputs("<p class=\"trace-ratio\">Replay vs trace (", f);
  if (t->same_device) {
    fputs("same device: ", f);
    esc(f, c->device);
  } else if (t->trace_device[0]) {
    fputs("cross-device: the trace was recorded on ", f);
    esc(f, t->trace_device);
  } else {
    fputs("the trace's device is not recorded", f);
  }
  fprintf(f, "): %zu ops, median ratio ", t->count);
  num(f, t->median, 3);
  fputs(", geometric mean ", f);
  num(f, t->geomean, 3);
  fputs(", ", f);
  num(f, t->within_10_percent, 3);
  fputs("% within &#177;10%", f);
  for (size_t k = 0; k < t->worst_count; k++) {
    fprintf(f, "%s #%lld ", k ? "," : "; furthest from the trace:", (long long)t->worst[k].index);
    esc(f, t->worst[k].name);
    fputs(" ", f);
    num(f, t->worst[k].ratio, 3);
  }
  fputs(".</p>\n", f);
}

static void summary_line(FILE *f, const xr_report_contents_t *c) {
  size_t ok = 0, failed = 0, unsupported = 0, interrupted = 0, contended = 0, unstable = 0;
  for (size_t i = 0; i < c->op_count; i++) {
    const char *o = c->ops[i].outcome;
    contended += !strcmp(o, "ok") && c->ops[i].contended == 1;
    unstable += !strcmp(o, "ok") && c->ops[i].unstable == 1;
    if (!strcmp(o, "ok"))
      ok++;
    else if (!strcmp(o, "failed"))
      failed++;
    else if (!strcmp(o, "interrupted"))
      interrupted++;
    else
      unsupported++;
  }
  if (contended || unstable)
    fprintf(f,
            "<p class=\"doubt\"><b>Timings to doubt: %zu CONTENDED</b> (timed on a crowded "
            "host), <b>%zu UNSTABLE</b> (noise above the run's threshold).</p>\n",
            contended, unstable);
  fprintf(f,
          "<p class=\"summary\">%zu ops in this report: %zu succeeded, %zu failed, %zu "
          "unsupported",
          c->op_count, ok, failed, unsupported);
  if (interrupted) fprintf(f, ", %zu interrupted", interrupted);
  if (c->finished) {
    fputs(" (the run's summary: ", f);
    num(f, c->attempted, 12);
    fputs(" of ", f);
    num(f, c->total, 12);
    fputs(" ops attempted", f);
    if (c->trace_total_us > 0 && isfinite(c->trace_covered_us))
      fprintf(f, "; the ops that ran cover %.1f%% of the source trace's GPU time",
              100.0 * c->trace_covered_us / c->trace_total_us);
    fputs(")", f);
  }
  fputs(".</p>\n", f);
  trace_ratio_line(f, c);
}

static const char *const columns[] = {
    "#",       "op",   "shapes",    "kernel", "median us", "p10&#8211;p90 us", "noise %",
    "TFLOP/s", "GB/s", "% of peak", "bound",  "trace us",  "replay / trace",   "check",
    "outcome", "reproduce"};
enum { CHECK_COLUMN = 13 }; /* the NMSE against the run's first HAL follows it */

/* The noise of the op's samples, with why timing stopped as its title, and the flags that make
 * a time doubtful: CONTENDED (timed mostly on a crowded host), a missed noise target. */
static void noise_cell(FILE *f, const xr_report_entry_t *e) {
  if (!timed(e)) {
    fputs("<td class=\"n\" data-v=\"\">" DASH "</td>", f);
    return;
  }
  fprintf(f, "<td class=\"n\" data-v=\"%.17g\" title=\"",
          isfinite(e->noise_percent) ? e->noise_percent : -1);
  if (e->stop_reason[0]) {
    fputs("stopped: ", f);
    esc(f, e->stop_reason);
  }
  fputs("\">", f);
  if (isfinite(e->noise_percent))
    num(f, e->noise_percent, 2);
  else
    fputs(DASH, f);
  if (e->contended == 1)
    fputs(" <b>CONTENDED</b>", f);
  else if (e->unstable == 1)
    fputs(" <b>UNSTABLE</b>", f);
  else if (!strcmp(e->stop_reason, "max-time") && e->noise_met == 0)
    fputs(" (target missed)", f);
  fputs("</td>", f);
}

/* The command that slices the op out of the run's bundle and replays it alone on the run's HAL;
 * the dash when the report does not name its bundle. */
static void reproduce_cell(FILE *f, const xr_report_contents_t *c, const xr_report_entry_t *e) {
  char command[20000];
  fputs("<td class=\"reproduce\">", f);
  if (c->bundle[0] && xr_report_slice_command(c->bundle, e->index, c->hal, command,
                                              sizeof command)) {
    fputs("<code>", f);
    esc(f, command);
    fputs("</code>", f);
  } else {
    fputs(DASH, f);
  }
  fputs("</td>", f);
}

static void op_table(FILE *f, const xr_report_contents_t *c, size_t run, bool nmse_column) {
  fprintf(f, "<table class=\"ops\" id=\"ops-%zu\"><thead><tr>", run);
  for (size_t k = 0; k < sizeof columns / sizeof columns[0]; k++) {
    fprintf(f, "<th>%s</th>", columns[k]);
    if (k == CHECK_COLUMN && nmse_column) fputs("<th>NMSE vs its run's first HAL</th>", f);
  }
  fputs("</tr></thead><tbody>\n", f);
  for (size_t i = 0; i < c->op_count; i++) {
    const xr_report_entry_t *e = &c->ops[i];
    const char *outcome = e->outcome[0] ? e->outcome : "unknown";
    fprintf(f, "<tr class=\"op ");
    esc(f, outcome);
    fprintf(f, "\" data-index=\"%lld\"><td class=\"n\" data-v=\"%lld\">%lld</td>",
            (long long)e->index, (long long)e->index, (long long)e->index);
    text_cell(f, "name", e->name);
    text_cell(f, "args", e->args);
    kernel_cell(f, e);
    num_cell(f, timed(e) ? e->median_us : NAN, 4);
    if (timed(e) && isfinite(e->p10_us) && isfinite(e->p90_us)) {
      fprintf(f, "<td class=\"n\" data-v=\"%.17g\" title=\"%d iterations\">", e->p90_us - e->p10_us,
              e->iterations);
      num(f, e->p10_us, 4);
      fputs("&#8211;", f);
      num(f, e->p90_us, 4);
      fputs("</td>", f);
    } else {
      fputs("<td class=\"n\" data-v=\"\">" DASH "</td>", f);
    }
    noise_cell(f, e);
    num_cell(f, timed(e) ? e->tflops : NAN, 3);
    num_cell(f, timed(e) ? e->gbps : NAN, 3);
    if (timed(e) && e->peak_basis[0]) { /* what the percentage is of, or why there is none */
      fprintf(f, "<td class=\"n\" data-v=\"%.17g\" title=\"",
              isfinite(e->peak_percent) ? e->peak_percent : -1);
      esc(f, e->peak_basis);
      if (e->above_ceiling[0]) {
        fputs(" &#8212; ", f);
        esc(f, e->above_ceiling);
      }
      fputs("\">", f);
      if (isfinite(e->peak_percent)) {
        num(f, e->peak_percent, 3);
        if (e->above_ceiling[0]) fputs(" <span class=\"above\">above the ceiling</span>", f);
      } else
        fputs(strstr(e->peak_basis, "cache") ? "in cache" : DASH, f);
      fputs("</td>", f);
    } else {
      num_cell(f, timed(e) ? e->peak_percent : NAN, 3);
    }
    text_cell(f, "bound", timed(e) ? e->bound : "");
    num_cell(f, e->trace_us >= 0 ? e->trace_us : NAN, 4);
    num_cell(f, e->replay_over_trace, 3);
    fputs("<td class=\"check\">", f);
    if (e->check_passed < 0)
      fputs(DASH, f);
    else {
      fputs(e->check_passed ? "pass" : "FAIL", f);
      if (isfinite(e->check_nmse)) fprintf(f, " (nmse %.2g)", e->check_nmse);
    }
    fputs("</td>", f);
    if (nmse_column) {
      if (isfinite(e->nmse_vs_first))
        fprintf(f, "<td class=\"n\" data-v=\"%.17g\">%.2g%s</td>", e->nmse_vs_first,
                e->nmse_vs_first, e->nonfinite_vs_first ? " NaN/Inf" : "");
      else
        fputs("<td class=\"n\" data-v=\"\">" DASH "</td>", f);
    }
    fputs("<td class=\"outcome\">", f);
    esc(f, outcome);
    if (e->message[0]) {
      fputs(": ", f);
      esc(f, e->message);
    }
    fputs("</td>", f);
    reproduce_cell(f, c, e);
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
}

/* Time by category: the replay's count x median over the timed ops beside the trace's time. */
static void category_table(FILE *f, const xr_report_contents_t *c) {
  xr_category_total_t t[XR_CATEGORY_COUNT];
  xr_report_category_totals(c, t);
  double trace_all = 0, trace_timed = 0;
  for (int k = 0; k < XR_CATEGORY_COUNT; k++) {
    trace_all += t[k].trace_us;
    trace_timed += t[k].trace_timed_us;
  }
  fputs("<h3>Time by category</h3>\n<table class=\"categories\"><thead><tr><th>category</th>"
        "<th>ops</th><th>timed</th><th>replay &#956;s (count &#215; median)</th><th>trace "
        "&#956;s of the timed ops</th><th>trace &#956;s of all</th><th>share of the trace</th>"
        "</tr></thead><tbody>",
        f);
  for (int k = 0; k < XR_CATEGORY_COUNT; k++) {
    if (!t[k].ops) continue;
    fputs("<tr><td>", f);
    esc(f, xr_category_name(k));
    fprintf(f, "</td><td class=\"n\">%zu</td><td class=\"n\">%zu</td>", t[k].ops, t[k].timed);
    num_cell(f, t[k].replay_us, 4);
    num_cell(f, trace_all > 0 ? t[k].trace_timed_us : NAN, 4);
    num_cell(f, trace_all > 0 ? t[k].trace_us : NAN, 4);
    num_cell(f, trace_all > 0 ? 100 * t[k].trace_us / trace_all : NAN, 3);
    fputs("</tr>", f);
  }
  fputs("</tbody></table>\n", f);
  if (trace_all > trace_timed)
    fprintf(f,
            "<p class=\"note partial\">The replay could not time ops holding %.1f%% of the "
            "trace's recorded time (%.1f of %.1f &#956;s).</p>\n",
            100 * (trace_all - trace_timed) / trace_all, trace_all - trace_timed, trace_all);
}

static void run_section(FILE *f, const xr_report_contents_t *c, size_t run, families_t *fam) {
  char label[600];
  xr_report_label(c, label, sizeof label);
  fprintf(f, "<section class=\"run\" id=\"run-%zu\"><h2>Run %zu: ", run, run + 1);
  esc(f, label);
  fputs("</h2>\n", f);
  notes(f, c);
  fputs("<dl class=\"head\">", f);
  head_row(f, "report", c->path);
  head_row(f, "bundle", c->bundle);
  head_row(f, "source trace", c->source_trace);
  head_row(f, "trace recorded on", c->source_device);
  head_row(f, "HAL", c->hal);
  head_row(f, "device", c->device);
  head_row(f, "driver", c->driver);
  head_row(f, "driver version", c->driver_version);
  head_row(f, "runtime version", c->runtime_version);
  options_row(f, c);
  head_row(f, "date", c->date);
  fputs("</dl>\n", f);
  summary_line(f, c);
  category_table(f, c);
  fputs("<h3>Roofline</h3>\n", f);
  roofline(f, c, fam);
  bool nmse_column = false;
  for (size_t i = 0; i < c->op_count && !nmse_column; i++)
    nmse_column = isfinite(c->ops[i].nmse_vs_first);
  fputs("<h3>Ops</h3>\n", f);
  fputs(
      "<p class=\"plotnote\">Each row's last cell is the command that slices the op out of the "
      "bundle (<code>replay slice</code>, without tensor contents) and replays it alone.</p>\n",
      f);
  op_table(f, c, run, nmse_column);
  fputs("</section>\n", f);
}

static void comparison(FILE *f, const xr_report_contents_t *const *r, size_t count) {
  fputs("<section class=\"comparison\"><h2>Speed-ups</h2>\n", f);
  char b_label[600];
  fputs(
      "<table class=\"geomean\"><thead><tr><th>run</th><th>matched by</th><th>ops timed in "
      "both</th><th>geometric-mean speed-up over run 1 (95% interval)</th><th>FASTER</th>"
      "<th>SLOWER</th><th>SAME</th><th>UNSURE</th><th>unmatched (share of its time)</th>"
      "</tr></thead><tbody>",
      f);
  xr_comparison_t *c[MAX_PAGE_RUNS] = {NULL};
  for (size_t k = 1; k < count && k < MAX_PAGE_RUNS; k++) {
    xr_report_label(r[k], b_label, sizeof b_label);
    fprintf(f, "<tr><td>%zu: ", k + 1);
    esc(f, b_label);
    if (xr_report_compare(r[0], r[k], XR_COMPARE_DEFAULT_THRESHOLD_PERCENT, &c[k]) != XR_OK) {
      fputs("</td><td colspan=\"8\">", f);
      esc(f, xr_last_error());
      fputs("</td></tr>", f);
      continue;
    }
    const xr_comparison_t *x = c[k];
    fprintf(f, "</td><td>%s</td><td class=\"n\">%zu</td><td class=\"n geomean\">",
            x->by_position ? "position (one bundle)" : "signature", x->timed_pairs);
    if (x->timed_pairs) {
      fprintf(f, "%.3fx", x->geomean);
      if (!isnan(x->geomean_lo)) fprintf(f, " (%.3g\u2013%.3g)", x->geomean_lo, x->geomean_hi);
    } else {
      fputs(DASH, f);
    }
    fputs("</td>", f);
    const xr_verdict_t order[] = {XR_VERDICT_FASTER, XR_VERDICT_SLOWER, XR_VERDICT_SAME,
                                  XR_VERDICT_UNSURE};
    for (size_t v = 0; v < 4; v++) fprintf(f, "<td class=\"n\">%zu</td>", x->verdicts[order[v]]);
    fprintf(f, "<td>run 1: %zu (%.1f%%), run %zu: %zu (%.1f%%)</td></tr>", x->a.unmatched_count,
            x->a.timed_us > 0 ? 100 * x->a.unmatched_us / x->a.timed_us : 0, k + 1,
            x->b.unmatched_count, x->b.timed_us > 0 ? 100 * x->b.unmatched_us / x->b.timed_us : 0);
  }
  fprintf(f,
          "</tbody></table>\n<p>Speed-up = run 1's median / the other run's, per op (&gt; 1: the "
          "other run is faster), over the ops both runs matched: by position for reports of one "
          "bundle, else by signature (name, dtypes, shapes, strides, scalar values). The "
          "geometric mean is over matched ops only. Verdicts: a bootstrap 95%% interval of the "
          "ratio of medians against a %.0f%% threshold (or either run's own noise, if larger); "
          "contended timings are UNSURE. NMSE between the runs' outputs, where a multi-HAL run "
          "measured it, is in each run's table.</p>\n",
          XR_COMPARE_DEFAULT_THRESHOLD_PERCENT);
  for (size_t k = 1; k < count && k < MAX_PAGE_RUNS; k++)
    if (c[k]) xr_report_speedup_svg(f, r[0], r[k], c[k]);
  for (size_t k = 1; k < count && k < MAX_PAGE_RUNS; k++) xr_comparison_free(c[k]);
  fputs("</section>\n", f);
}

xr_status_t xr_report_html_write(const char *path, const xr_report_contents_t *const *reports,
                                 size_t count) {
  if (!count) return xr_error(XR_INVALID_ARGUMENT, "%s: a page needs at least one report", path);
  FILE *f = fopen(path, "w");
  if (!f) return xr_error(XR_INVALID_ARGUMENT, "%s: cannot create: %s", path, strerror(errno));
  fprintf(f,
          "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>xreplay "
          "report: ");
  esc(f, reports[0]->bundle[0] ? reports[0]->bundle : reports[0]->path);
  fprintf(f, "</title>\n<style>%s</style></head><body>\n<h1>xreplay report: ", style);
  esc(f, reports[0]->bundle[0] ? reports[0]->bundle : reports[0]->path);
  fputs("</h1>\n<ul class=\"runs\">", f);
  for (size_t k = 0; k < count; k++) {
    char label[600];
    xr_report_label(reports[k], label, sizeof label);
    fprintf(f, "<li><a href=\"#run-%zu\">Run %zu: ", k, k + 1);
    esc(f, label);
    fputs("</a> (", f);
    esc(f, reports[k]->bundle[0] ? reports[k]->bundle : "bundle not recorded");
    fputs(")", f);
    if (!reports[k]->finished) fputs(" &#8212; partial: the run did not finish", f);
    fputs("</li>", f);
  }
  fputs("</ul>\n", f);
  for (size_t k = 1; k < count; k++)
    if (strcmp(reports[k]->bundle, reports[0]->bundle)) {
      fputs(
          "<p class=\"note\">The reports name different bundles: ops are matched by position "
          "and name, so compare with care.</p>\n",
          f);
      break;
    }
  fputs(
      "<p id=\"filterbox\" style=\"display:none\">Filter ops by name: <input id=\"filter\" "
      "type=\"search\"> (click a column's heading to sort)</p>\n",
      f);
  if (count > 1) comparison(f, reports, count);
  families_t fam = {0};
  for (size_t k = 0; k < count; k++) run_section(f, reports[k], k, &fam);
  fprintf(f, "<script>%s</script>\n</body></html>\n", script);
  bool failed = ferror(f) != 0;
  if (fclose(f) != 0 || failed) return xr_error(XR_DATA_LOSS, "%s: writing the page failed", path);
  return XR_OK;
}
