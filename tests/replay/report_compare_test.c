/* Two reports compared (replay/report_compare.h): the verdict rule on samples whose answer is
 * known, pairing by position and by signature, unmatched ops and their share, the geometric mean
 * and its interval, and two real runs of one op on this machine. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "formats/bundle.h"
#include "replay/replay.h"
#include "replay/report.h"
#include "replay/report_compare.h"

/* n samples around `median_us`, spread +-`spread` (a fraction) by a fixed pseudo-random walk. */
static void samples(double *out, int n, double median_us, double spread, uint64_t seed) {
  for (int i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(seed >> 11) / 9007199254740992.0; /* [0, 1) */
    out[i] = median_us * (1 + spread * (2 * u - 1));
  }
}

static xr_compare_pair_t judge(double a_median, double a_spread, double b_median, double b_spread,
                               int n, bool contended, double threshold) {
  double a[128], b[128];
  samples(a, n, a_median, a_spread, 1);
  samples(b, n, b_median, b_spread, 2);
  xr_compare_pair_t p;
  xr_compare_samples(a, n, a_median, NAN, b, n, b_median, NAN, contended, threshold, 7, &p, NULL);
  return p;
}

Test(verdicts, known_answers) {
  /* 25% faster with 2% noise: the interval sits around 1.25, well clear of 10%. */
  xr_compare_pair_t p = judge(100, 0.02, 80, 0.02, 64, false, 10);
  cr_assert_eq(p.verdict, XR_VERDICT_FASTER, "%s [%g, %g]", xr_verdict_name(p.verdict), p.lo, p.hi);
  cr_assert(p.lo > 1.2 && p.hi < 1.3 && p.lo <= p.speedup && p.speedup <= p.hi, "[%g, %g]", p.lo,
            p.hi);
  p = judge(80, 0.02, 100, 0.02, 64, false, 10);
  cr_assert_eq(p.verdict, XR_VERDICT_SLOWER, "%s", xr_verdict_name(p.verdict));
  /* The same distribution: SAME, the interval within the threshold and around 1. */
  p = judge(100, 0.02, 100, 0.02, 64, false, 10);
  cr_assert_eq(p.verdict, XR_VERDICT_SAME, "%s [%g, %g]", xr_verdict_name(p.verdict), p.lo, p.hi);
  cr_assert(p.lo < 1 && p.hi > 1 && p.lo > 0.98, "[%g, %g]", p.lo, p.hi);
  /* 12% faster, but each side spreads +-60% over 8 samples: the interval straddles 10%. */
  p = judge(100, 0.6, 88, 0.6, 8, false, 10);
  cr_assert_eq(p.verdict, XR_VERDICT_UNSURE, "%s [%g, %g]", xr_verdict_name(p.verdict), p.lo, p.hi);
  cr_assert_str_eq(p.why, "the interval straddles the threshold");
  /* A clear difference timed on a crowded host: no verdict, and why. */
  p = judge(100, 0.02, 80, 0.02, 64, true, 10);
  cr_assert_eq(p.verdict, XR_VERDICT_UNSURE);
  cr_assert(strstr(p.why, "contended"), "%s", p.why);
  /* Too few samples: the speed-up without an interval. */
  p = judge(100, 0.02, 80, 0.02, 4, false, 10);
  cr_assert_eq(p.verdict, XR_VERDICT_UNSURE);
  cr_assert_float_eq(p.speedup, 1.25, 1e-12);
  cr_assert(isnan(p.lo) && isnan(p.hi));
  cr_assert_str_eq(p.why, "too few samples in a report");
  /* 7% faster: FASTER at a 5% threshold, SAME-or-UNSURE at the 10% default. */
  p = judge(107, 0.01, 100, 0.01, 64, false, 5);
  cr_assert_eq(p.verdict, XR_VERDICT_FASTER, "%s", xr_verdict_name(p.verdict));
  p = judge(107, 0.01, 100, 0.01, 64, false, XR_COMPARE_DEFAULT_THRESHOLD_PERCENT);
  cr_assert_eq(p.verdict, XR_VERDICT_SAME, "%s [%g, %g]", xr_verdict_name(p.verdict), p.lo, p.hi);
}

/* A side whose batch means move by 20% moves its median by about that from run to run: a 15%
 * difference is not called. */
Test(verdicts, a_noisy_side_raises_the_threshold) {
  double a[64], b[64];
  samples(a, 64, 115, 0.01, 1);
  samples(b, 64, 100, 0.01, 2);
  xr_compare_pair_t p;
  xr_compare_samples(a, 64, 115, 20, b, 64, 100, 3, false, 10, 7, &p, NULL);
  cr_assert_float_eq(p.threshold_percent, 20, 1e-12);
  cr_assert_eq(p.verdict, XR_VERDICT_SAME, "%s [%g, %g]", xr_verdict_name(p.verdict), p.lo, p.hi);
  xr_compare_samples(a, 64, 115, NAN, b, 64, 100, NAN, false, 10, 7, &p, NULL);
  cr_assert_eq(p.verdict, XR_VERDICT_FASTER, "without the noise: %s", xr_verdict_name(p.verdict));
}

/* ------------------------------------------------------------------------------------------ */
/* pairing                                                                                     */

/* A report of ops given as "name|args|median|count" entries, each with 16 samples around its
 * median (none when the median is 0: not timed). */
static xr_report_contents_t *report(const char *hash, const char *const *ops, size_t n) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "xreplay_report", 2);
  cJSON_AddStringToObject(j, "bundle_hash", hash);
  cJSON_AddStringToObject(j, "hal", "cpu");
  cJSON *list = cJSON_AddArrayToObject(j, "ops");
  for (size_t i = 0; i < n; i++) {
    char name[128], args[256];
    double median, count;
    cr_assert_eq(sscanf(ops[i], "%127[^|]|%255[^|]|%lf|%lf", name, args, &median, &count), 4,
                 "%s", ops[i]);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", (double)i);
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "args", args);
    cJSON_AddNumberToObject(o, "count", count);
    cJSON_AddStringToObject(o, "outcome", median > 0 ? "ok" : "unsupported");
    if (median > 0) {
      cJSON_AddNumberToObject(o, "median_us", median);
      double s[16];
      samples(s, 16, median, 0.01, i + 1);
      cJSON_AddItemToObject(o, "samples_us", cJSON_CreateDoubleArray(s, 16));
    }
    cJSON_AddItemToArray(list, o);
  }
  xr_report_contents_t *c;
  cr_assert_eq(xr_report_from_json(j, "r.json", &c), XR_OK, "%s", xr_last_error());
  return c;
}

#define N(list) (sizeof list / sizeof list[0])

/* The BERT case: the same model traced on two vendors, whose bundles order and hold their ops
 * differently. Pairing by position put a 512x512 addmm beside a 512x30522 one. */
Test(pairing, different_bundles_pair_by_signature) {
  static const char *const a_ops[] = {
      "aten::addmm|self=f32[512] mat1=f32[64,512] mat2=f32[512,512]{1,512}|100|12",
      "aten::addmm|self=f32[30522] mat1=f32[64,512] mat2=f32[512,30522]{1,512}|4000|1",
      "aten::gelu|self=f32[64,2048] approximate='none'|30|12",
      "aten::addmm|self=f32[512] mat1=f32[64,512] mat2=f32[512,512]{1,512}|100|12",
      "aten::softmax|self=f32[8,64,64] dim=-1 half_to_float=False|50|12",
  };
  static const char *const b_ops[] = {
      "aten::addmm|self=f32[30522] mat1=f32[64,512] mat2=f32[512,30522]{1,512}|2000|1",
      "aten::addmm|self=f32[512] mat1=f32[64,512] mat2=f32[512,512]{1,512}|50|12",
      "aten::gelu|self=f32[64,2048] approximate='tanh'|30|12",
      "aten::addmm|self=f32[512] mat1=f32[64,512] mat2=f32[512,512]{1,512}|50|12",
      "aten::layer_norm|input=f32[64,512] normalized_shape=[512]|20|25",
  };
  xr_report_contents_t *a = report("00000000000000aa", a_ops, N(a_ops));
  xr_report_contents_t *b = report("00000000000000bb", b_ops, N(b_ops));
  xr_comparison_t *c;
  cr_assert_eq(xr_report_compare(a, b, 10, &c), XR_OK, "%s", xr_last_error());
  cr_assert_not(c->by_position);
  cr_assert_eq(c->pair_count, 3, "the two 512x512 addmms and the 512x30522 one");
  /* Each pair computes the same thing; the k-th of a signature with the k-th. */
  for (size_t i = 0; i < c->pair_count; i++) {
    cr_assert_str_eq(c->pairs[i].a->args, c->pairs[i].b->args);
    cr_assert_float_eq(c->pairs[i].speedup, 2, 1e-12, "pair %zu", i);
    cr_assert_eq(c->pairs[i].verdict, XR_VERDICT_FASTER);
  }
  cr_assert_eq(c->pairs[0].a->index, 0);
  cr_assert_eq(c->pairs[0].b->index, 1);
  cr_assert_eq(c->pairs[2].a->index, 3);
  cr_assert_eq(c->pairs[2].b->index, 3);
  /* The geometric mean is over matched ops only, with an interval around it. */
  cr_assert_eq(c->timed_pairs, 3);
  cr_assert_float_eq(c->geomean, 2, 1e-12);
  cr_assert(c->geomean_lo < 2 && c->geomean_hi > 2 && c->geomean_lo > 1.9, "[%g, %g]",
            c->geomean_lo, c->geomean_hi);
  /* Unmatched: a's gelu (another approximation) and softmax; b's gelu and layer_norm; each side's
   * share of its time by count x median. */
  cr_assert_eq(c->a.unmatched_count, 2);
  cr_assert_str_eq(c->a.unmatched[0]->name, "aten::gelu");
  cr_assert_str_eq(c->a.unmatched[1]->name, "aten::softmax");
  cr_assert_float_eq(c->a.timed_us, 100 * 12 + 4000 + 30 * 12 + 100 * 12 + 50 * 12, 1e-9);
  cr_assert_float_eq(c->a.unmatched_us, 30 * 12 + 50 * 12, 1e-9);
  cr_assert_eq(c->b.unmatched_count, 2);
  cr_assert_float_eq(c->b.unmatched_us, 30 * 12 + 20 * 25, 1e-9);
  cr_assert_eq(c->verdicts[XR_VERDICT_FASTER], 3);
  xr_comparison_free(c);
  xr_report_contents_free(a);
  xr_report_contents_free(b);
}

/* Reports of one bundle pair by position, even where an op's args line was cut differently. */
Test(pairing, one_bundle_pairs_by_position) {
  static const char *const a_ops[] = {"aten::mm|self=f32[4,4] mat2=f32[4,4]|10|1",
                                      "aten::mm|self=f32[4,4] mat2=f32[4,4]|20|1",
                                      "aten::relu|self=f32[4]|0|1"};
  static const char *const b_ops[] = {"aten::mm|self=f32[4,4] mat2=f32[4,4]|20|1",
                                      "aten::mm|self=f32[4,4] mat2=f32[4,4]|10|1",
                                      "aten::relu|self=f32[4]|5|1"};
  xr_report_contents_t *a = report("0123456789abcdef", a_ops, 3);
  xr_report_contents_t *b = report("0123456789abcdef", b_ops, 3);
  xr_comparison_t *c;
  cr_assert_eq(xr_report_compare(a, b, 10, &c), XR_OK);
  cr_assert(c->by_position);
  cr_assert_eq(c->pair_count, 3);
  cr_assert_float_eq(c->pairs[0].speedup, 0.5, 1e-12);
  cr_assert_float_eq(c->pairs[1].speedup, 2, 1e-12);
  cr_assert_not(c->pairs[2].timed, "the relu is timed on one side only");
  cr_assert_eq(c->timed_pairs, 2);
  cr_assert_float_eq(c->geomean, 1, 1e-12);
  cr_assert_eq(c->a.unmatched_count + c->b.unmatched_count, 0);
  xr_comparison_free(c);
  xr_report_contents_free(a);
  xr_report_contents_free(b);
}

/* ------------------------------------------------------------------------------------------ */
/* two runs of one op here                                                                     */

typedef struct run_state {
  const xr_replay_options_t *o;
  xr_report_t *report;
} run_state_t;

static bool started(void *ctx, const xr_replay_summary_t *run) {
  run_state_t *s = ctx;
  cr_assert_eq(xr_report_open(NULL, "t.json", NULL, run, 0, s->o, &s->report), XR_OK, "%s",
               xr_last_error());
  return true;
}

static void result(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  (void)position, (void)count;
  cr_assert_eq(xr_report_add(((run_state_t *)ctx)->report, r), XR_OK);
}

static xr_report_contents_t *run_once(const xr_bundle_t *b) {
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = "cpu";
  o.iters = 200;
  run_state_t s = {.o = &o};
  xr_replay_observer_t observer = {.started = started, .result = result, .context = &s};
  static xr_replay_summary_t summary; /* large */
  cr_assert_eq(xr_replay_run(b, &o, &observer, &summary), XR_OK, "%s", xr_last_error());
  xr_report_contents_t *c;
  cr_assert_eq(xr_report_close_contents(s.report, &summary, "memory", &c), XR_OK, "%s",
               xr_last_error());
  return c;
}

/* The same op timed twice in a row on this shared machine: whatever the medians did between the
 * runs, the default threshold must not call a difference (the noisy-machine case). The
 * samples kept in the report are what the interval rests on. */
Test(two_runs, of_one_op_are_not_called_faster_or_slower) {
  const char *json =
      "{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": \"aten::mm\", \"args\": ["
      "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": {\"shape\": [128, 128], \"dtype\": "
      "\"float\"}}, {\"name\": \"mat2\", \"type\": \"Tensor\", \"value\": {\"shape\": [128, 128], "
      "\"dtype\": \"float\"}}]}, {\"name\": \"aten::add\", \"args\": [{\"name\": \"self\", "
      "\"type\": \"Tensor\", \"value\": {\"shape\": [65536], \"dtype\": \"float\"}}, {\"name\": "
      "\"other\", \"type\": \"Tensor\", \"value\": {\"shape\": [65536], \"dtype\": \"float\"}}]}]}";
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "t.json", ".", NULL, &b),
               XR_OK, "%s", xr_last_error());
  xr_report_contents_t *first = run_once(b), *second = run_once(b);
  xr_comparison_t *c;
  cr_assert_eq(xr_report_compare(first, second, XR_COMPARE_DEFAULT_THRESHOLD_PERCENT, &c), XR_OK);
  cr_assert(c->by_position, "one bundle: %s, %s", first->bundle_hash, second->bundle_hash);
  cr_assert_eq(c->timed_pairs, 2);
  for (size_t i = 0; i < c->pair_count; i++) {
    const xr_compare_pair_t *p = &c->pairs[i];
    cr_assert_geq(p->a->sample_count, 64, "the report keeps the samples");
    cr_assert(p->verdict == XR_VERDICT_SAME || p->verdict == XR_VERDICT_UNSURE,
              "%s: %.3fx [%g, %g] called %s", p->a->name, p->speedup, p->lo, p->hi,
              xr_verdict_name(p->verdict));
  }
  xr_comparison_free(c);
  xr_report_contents_free(first);
  xr_report_contents_free(second);
  xr_bundle_destroy(b);
}
