/* stop_rule_bench: the noise stopping rule next to today's fixed iteration count, on one bundle
 * (default: the shipped example), run after run in one process on the cpu driver.
 *
 * Per op and rule: the timing loop's wall time (warm-up excluded), the samples taken, the noise
 * of the samples (relative stdev of batch means; "-" with too few samples to tell) and, for the
 * noise rule, whether it met its target or why it stopped. The last column is the noise rule's
 * wall time over the iteration rule's: under 1 where the noise rule settles sooner. Each rule
 * runs `--runs` times, alternating, so both see the same machine; figures are ranges over runs.
 *
 *   bazel run -c opt //tools:stop_rule_bench -- [--runs=3] [--noise=0.5] [BUNDLE]           */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "replay/replay.h"

enum { MAX_OPS = 256, MAX_RUNS = 16 };

/* What one run of one rule left per op. */
typedef struct sample {
  double wall_ms, noise, median_us;
  int iterations;
  const char *reason;
  bool met, ok;
} sample_t;

typedef struct collected {
  sample_t *ops; /* [op index] */
} collected_t;

static void keep(void *context, const xr_op_result_t *r, size_t position, size_t count) {
  (void)position, (void)count;
  collected_t *c = context;
  if (r->index >= MAX_OPS) return;
  sample_t *s = &c->ops[r->index];
  s->ok = r->outcome == XR_OP_SUCCEEDED;
  if (!s->ok) return;
  s->wall_ms = r->timed_wall_ms;
  s->noise = r->noise_percent;
  s->median_us = r->median_us;
  s->iterations = r->iterations;
  s->reason = r->stop_reason;
  s->met = r->noise_met;
}

static void range(const double *v, int n, double *lo, double *hi) {
  *lo = INFINITY, *hi = -INFINITY;
  for (int i = 0; i < n; i++) {
    if (v[i] < *lo) *lo = v[i];
    if (v[i] > *hi) *hi = v[i];
  }
}

static void print_range(const double *v, int n, const char *format, int width) {
  double lo, hi;
  range(v, n, &lo, &hi);
  char a[32], b[32], text[80];
  snprintf(a, sizeof a, format, lo);
  snprintf(b, sizeof b, format, hi);
  if (!isfinite(lo)) snprintf(text, sizeof text, "-");
  else if (!strcmp(a, b)) snprintf(text, sizeof text, "%s", a);
  else snprintf(text, sizeof text, "%s-%s", a, b);
  printf(" %*s", width, text);
}

int main(int argc, char **argv) {
  const char *path = "examples/llm_small.msgpack";
  int runs = 3;
  double target = 0.5;
  for (int i = 1; i < argc; i++) {
    if (!strncmp(argv[i], "--runs=", 7)) runs = atoi(argv[i] + 7);
    else if (!strncmp(argv[i], "--noise=", 8)) target = atof(argv[i] + 8);
    else if (argv[i][0] != '-') path = argv[i];
    else {
      fprintf(stderr, "usage: stop_rule_bench [--runs=N] [--noise=PERCENT] [BUNDLE]\n");
      return 2;
    }
  }
  if (runs < 1 || runs > MAX_RUNS || !(target > 0)) {
    fprintf(stderr, "stop_rule_bench: --runs is 1..%d and --noise positive\n", MAX_RUNS);
    return 2;
  }
  /* `bazel run` starts in the runfiles tree; the user's paths are relative to where they are. */
  const char *cwd = getenv("BUILD_WORKING_DIRECTORY");
  char full[4096];
  if (cwd && path[0] != '/') {
    snprintf(full, sizeof full, "%s/%s", cwd, path);
    path = full;
  }
  xr_bundle_t *b;
  if (xr_bundle_load(path, &b) != XR_OK) {
    fprintf(stderr, "stop_rule_bench: %s\n", xr_last_error());
    return 2;
  }
  size_t ops = b->op_count < MAX_OPS ? b->op_count : MAX_OPS;
  static sample_t results[2][MAX_RUNS][MAX_OPS];
  xr_replay_options_t rule[2];
  for (int k = 0; k < 2; k++) {
    xr_replay_options_default(&rule[k]);
    rule[k].device = "cpu";
    rule[k].noise_percent = target;
  }
  rule[1].stop = XR_STOP_NOISE;
  for (int run = 0; run < runs; run++) {
    for (int k = 0; k < 2; k++) {
      collected_t c = {results[k][run]};
      xr_replay_observer_t observer = {.result = keep, .context = &c};
      if (xr_replay_run(b, &rule[k], &observer, NULL) != XR_OK) {
        fprintf(stderr, "stop_rule_bench: %s\n", xr_last_error());
        return 1;
      }
    }
  }
  printf("%s on cpu, %d runs of each rule; ranges over runs\n", path, runs);
  printf("%-4s %-36s %24s | %24s %20s | %-34s %12s\n", "", "",
         "--stop=iters (20): wall ms", "--stop=noise: wall ms", "samples", "noise %: iters / noise rule",
         "wall ratio");
  double total[2][MAX_RUNS] = {{0}};
  for (size_t i = 0; i < ops; i++) {
    double v[2][4][MAX_RUNS], ratio[MAX_RUNS];
    int n = 0, met = 0;
    const char *reason = "";
    for (int run = 0; run < runs; run++) {
      const sample_t *a = &results[0][run][i], *z = &results[1][run][i];
      if (!a->ok || !z->ok) continue;
      v[0][0][n] = a->wall_ms;
      v[1][0][n] = z->wall_ms;
      v[1][1][n] = z->iterations;
      v[0][2][n] = a->noise >= 0 ? a->noise : NAN;
      v[1][2][n] = z->noise >= 0 ? z->noise : NAN;
      ratio[n] = z->wall_ms / a->wall_ms;
      total[0][run] += a->wall_ms;
      total[1][run] += z->wall_ms;
      met += z->met;
      if (!z->met) reason = z->reason ? z->reason : "?";
      n++;
    }
    printf("%4zu %-36.36s", i, b->ops[i].name);
    if (!n) {
      printf(" (did not run)\n");
      continue;
    }
    print_range(v[0][0], n, "%.2f", 24);
    printf(" |");
    print_range(v[1][0], n, "%.2f", 24);
    print_range(v[1][1], n, "%.0f", 20);
    printf(" |");
    print_range(v[0][2], n, "%.2g", 16);
    printf(" /");
    print_range(v[1][2], n, "%.2g", 15);
    print_range(ratio, n, "%.2f", 12);
    if (met == n) printf("  target met");
    else printf("  met %d of %d (%s)", met, n, reason);
    putchar('\n');
  }
  double ratio[MAX_RUNS];
  for (int run = 0; run < runs; run++) ratio[run] = total[1][run] / total[0][run];
  printf("%-41s", "all ops");
  print_range(total[0], runs, "%.1f", 24);
  printf(" |");
  print_range(total[1], runs, "%.1f", 24);
  printf(" %20s | %34s", "", "");
  print_range(ratio, runs, "%.2f", 12);
  putchar('\n');
  xr_bundle_destroy(b);
  return 0;
}
