/* Linked into test binaries that select their cases with --filter: with XR_MIN_CASES=N in the
 * environment, the binary fails when fewer than N cases ran (passed, failed or crashed), so that
 * a filter left behind by a renamed test cannot pass by running nothing. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdio.h>
#include <stdlib.h>

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
  const char *setting = getenv("XR_MIN_CASES");
  if (!setting) return;
  size_t ran = stats->tests_passed + stats->tests_failed + stats->tests_crashed;
  if (ran < (size_t)atol(setting)) {
    fprintf(stderr, "min_cases: %zu cases ran, XR_MIN_CASES asks for at least %s: does the --filter still match?\n",
            ran, setting);
    exit(1);
  }
}
