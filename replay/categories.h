/* Op categories, for the time a trace and its replay spend on each kind of work (GEMM, attention,
 * MoE, ...): an op's category from its family and, for ops no family planned (unsupported), its
 * name; and the totals per category of a report, replayed (Σ count x median) beside recorded
 * (Σ count x the trace's per-call time). No engine: reports read back are enough. */
#ifndef XR_REPLAY_CATEGORIES_H
#define XR_REPLAY_CATEGORIES_H

#include <stdbool.h>
#include <stddef.h>

#include "replay/report_read.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum xr_category {
  XR_CATEGORY_GEMM = 0,
  XR_CATEGORY_ATTENTION,   /* attention, paged and unified attention, KV-cache writes */
  XR_CATEGORY_MOE,
  XR_CATEGORY_NORMALIZATION, /* norms and softmax */
  XR_CATEGORY_ELEMENTWISE,   /* pointwise ops, reductions, scans, sorts, rotary, quantization */
  XR_CATEGORY_CONV_POOL,
  XR_CATEGORY_COLLECTIVE,
  XR_CATEGORY_COPY,          /* copies, casts, concatenation, gathers and scatters */
  XR_CATEGORY_OTHER,
  XR_CATEGORY_COUNT,
} xr_category_t;

/* "GEMM", "attention", "MoE", "normalization", "elementwise and reductions",
 * "convolution and pooling", "collectives", "copies", "other". */
const char *xr_category_name(xr_category_t category);

/* `family` is the planning family ("gemm"; "" or NULL when none planned the op). */
xr_category_t xr_op_category(const char *family, const char *op_name);

/* One category of a run: its ops, those timed, Σ count x median over the timed ones, and the
 * trace's recorded time (count x per-call time) of all of them and of the timed ones. */
typedef struct xr_category_total {
  size_t ops, timed;
  double replay_us;
  double trace_us, trace_timed_us;
} xr_category_total_t;

/* Adds one op: `median_us` <= 0 when it was not timed, `trace_us` (per call) < 0 when the trace
 * recorded no time, `count` the calls the trace made (< 1 counts as 1). */
void xr_category_add(xr_category_total_t totals[XR_CATEGORY_COUNT], const char *family,
                     const char *op_name, double count, double median_us, double trace_us);

/* The totals of a report read back, over its ops (zeroed first). */
void xr_report_category_totals(const xr_report_contents_t *report,
                               xr_category_total_t totals[XR_CATEGORY_COUNT]);

#ifdef __cplusplus
}
#endif
#endif /* XR_REPLAY_CATEGORIES_H */
