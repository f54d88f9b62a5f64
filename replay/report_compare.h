/* Two replay reports compared (`replay compare`, the page's speed-ups): which ops pair up, the
 * speed-up of each pair with a confidence interval and a verdict, and the geometric mean over the
 * pairs with its interval. Reads only what report_read.h gives.
 *
 * Pairing: reports of one bundle (the same bundle_hash) pair by op position; others (the same
 * model traced on two vendors, two versions of a model) by signature: the op's name and its
 * arguments as the report writes them (dtypes, shapes, strides where not contiguous, storage
 * offsets, scalar values), the k-th op of a signature in A with the k-th in B.
 *
 * Verdict of a pair (B against A; speed-up = A's median / B's, > 1: B is faster): a percentile
 * bootstrap of the ratio of medians over each side's kept samples (XR_COMPARE_RESAMPLES
 * resamples, 95% interval [lo, hi]) against an effect threshold t, the larger of the caller's
 * and each side's own batch-to-batch noise (what its median moves by from run to run):
 *   FASTER  lo > 1 + t          SLOWER  hi < 1 / (1 + t)
 *   SAME    1 / (1 + t) <= lo and hi <= 1 + t
 *   UNSURE  otherwise, or either side was timed on a crowded host (CONTENDED), or has fewer than
 *           XR_COMPARE_MIN_SAMPLES samples (the pair keeps its speed-up, without an interval). */
#ifndef XR_REPLAY_REPORT_COMPARE_H
#define XR_REPLAY_REPORT_COMPARE_H

#include "replay/report_read.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XR_COMPARE_RESAMPLES 1000
#define XR_COMPARE_MIN_SAMPLES 5
/* Medians of one op on a shared 2-core host move by up to 10% between runs; on a quiet GPU machine
 * a smaller threshold (2-5%) tells more. */
#define XR_COMPARE_DEFAULT_THRESHOLD_PERCENT 10.0

typedef enum xr_verdict {
  XR_VERDICT_SAME = 0,
  XR_VERDICT_FASTER, /* B is faster than A */
  XR_VERDICT_SLOWER, /* B is slower than A */
  XR_VERDICT_UNSURE,
} xr_verdict_t;

typedef struct xr_compare_pair {
  const xr_report_entry_t *a, *b;
  /* Both timed: A's median / B's, its 95% interval (NAN without enough samples) and verdict. */
  bool timed;
  double speedup, lo, hi;
  double threshold_percent; /* the effect threshold the verdict used */
  xr_verdict_t verdict;
  const char *why;          /* what an UNSURE verdict rests on ("contended", ...) */
} xr_compare_pair_t;

typedef struct xr_compare_side {
  size_t unmatched_count;
  const xr_report_entry_t **unmatched; /* in the report's order */
  /* Σ count x median over the side's timed ops, and the part of it on unmatched ops. */
  double timed_us, unmatched_us;
} xr_compare_side_t;

typedef struct xr_comparison {
  bool by_position; /* one bundle: paired by position; else by signature */
  size_t pair_count;
  xr_compare_pair_t *pairs; /* in A's order */
  xr_compare_side_t a, b;
  /* Over the pairs timed on both sides: the count, the geometric mean of their speed-ups and its
   * 95% interval (resampled with the pairs' own resamples; NAN where none has samples). */
  size_t timed_pairs, contended_pairs; /* contended: either side timed on a crowded host */
  double geomean, geomean_lo, geomean_hi;
  size_t verdicts[XR_VERDICT_UNSURE + 1];
} xr_comparison_t;

/* Compares B against A with an effect threshold of `threshold_percent` (> 0). Deterministic:
 * the resampling is seeded by the ops' positions. RESOURCE_EXHAUSTED when out of memory. */
xr_status_t xr_report_compare(const xr_report_contents_t *a, const xr_report_contents_t *b,
                              double threshold_percent, xr_comparison_t **out);
void xr_comparison_free(xr_comparison_t *comparison); /* accepts NULL */

/* "FASTER", "SLOWER", "SAME", "UNSURE". */
const char *xr_verdict_name(xr_verdict_t verdict);

/* The verdict rule alone, over two sample sets (for tests and callers with their own samples):
 * fills speedup, lo, hi, threshold_percent, verdict and why of *out. `contended` marks either
 * side timed on a crowded host; noise_*_percent each side's noise (NAN: unknown). `seed` picks
 * the resamples; `ratios` (may be NULL) receives the XR_COMPARE_RESAMPLES resampled ratios. */
void xr_compare_samples(const double *a_us, int a_n, double a_median, double a_noise_percent,
                        const double *b_us, int b_n, double b_median, double b_noise_percent,
                        bool contended, double threshold_percent, uint64_t seed,
                        xr_compare_pair_t *out, double *ratios);

#ifdef __cplusplus
}
#endif
#endif /* XR_REPLAY_REPORT_COMPARE_H */
