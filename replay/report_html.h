/* Replay reports drawn: one self-contained HTML page (`replay report`, `replay --html`) with a
 * roofline per run, per-op speed-ups between runs and the per-op tables, and the speed-up chart
 * alone as SVG (`replay compare --svg`). Reads only what report_read.h gives, so that pages are
 * drawn from other labs' reports without the engine. docs/replay.md describes the page. */
#ifndef XR_REPLAY_REPORT_HTML_H
#define XR_REPLAY_REPORT_HTML_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "replay/report_compare.h"
#include "replay/report_read.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a run is called in tables and charts: "opencl · Intel(R) Xeon(R) Processor", its HAL and
 * device, so that two HALs on one device differ; the file name when the report names neither. */
void xr_report_label(const xr_report_contents_t *report, char *buf, size_t size);

/* The per-op speed-up of b over a (a's median / b's: > 1, b is faster; pairs as `comparison`,
 * xr_report_compare of the two, made them) as SVG bars on a log scale centred on 1x, each with
 * its 95% interval as a whisker and its verdict in the tooltip, labelled with both runs' labels
 * and the geometric mean with its interval. A complete SVG document, also valid inline in HTML. */
void xr_report_speedup_svg(FILE *f, const xr_report_contents_t *a, const xr_report_contents_t *b,
                           const xr_comparison_t *comparison);

/* `s` as one POSIX shell word in `buf`: as it is when it holds only characters no shell treats
 * specially, else in single quotes ('\'' for a quote). False, and "" in buf, when it does not
 * fit. For the commands the page and `replay slice` print. */
bool xr_shell_word(const char *s, char *buf, size_t size);

/* The command that slices op `index` out of `bundle` and replays it on `hal` ("cpu" when "" or
 * NULL), the paths as shell words:
 *   replay slice b.msgpack --op=7 -o op7.json && replay --hal=cpu op7.json
 * False, and "" in buf, when it does not fit. */
bool xr_report_slice_command(const char *bundle, int64_t index, const char *hal, char *buf,
                             size_t size);

/* Writes the page for `count` reports (reports[0] is the baseline of the speed-ups) to `path`:
 * everything inline (styles, SVG, a few lines of script for sorting and filtering that the page
 * does not need to be read), every string from the reports HTML-escaped, "—" for what a report
 * does not hold. INVALID_ARGUMENT when the file cannot be written. */
xr_status_t xr_report_html_write(const char *path, const xr_report_contents_t *const *reports,
                                 size_t count);

#ifdef __cplusplus
}
#endif
#endif /* XR_REPLAY_REPORT_HTML_H */
