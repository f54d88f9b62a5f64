/* One family's case matrix on one driver. tests/kernels/matrix.bzl builds this file once per
 * driver of hal/drivers.bzl and family, with
 *   XR_MATRIX_HEADER  the family's cases header ("tests/kernels/reduce_cases.h"),
 *   XR_MATRIX_GROUPS  its list of case groups (REDUCE_MATRIX): GROUP(name, call), `call` a
 *                     statement over `device` (the driver's name, "cpu" ... "hip"),
 *   XR_MATRIX_GAPS    its list of what a driver does not run: GAP(driver, name, "why"),
 *   XR_MATRIX_DRIVER, XR_MATRIX_SUITE (reduce_cpu) and XR_MATRIX_TIMEOUT.
 * Every group is one test, `<family>_<driver>/<name>`; a gap skips with its reason, and an
 * absent device skips every case with the driver's (check.h). */
#include <string.h>

#include "tests/kernels/check.h"
#include XR_MATRIX_HEADER

#define MATRIX_STR2(x) #x
#define MATRIX_STR(x) MATRIX_STR2(x)

typedef struct matrix_gap {
  const char *driver, *group, *why;
} matrix_gap_t;

#define MATRIX_GAP(driver, group, why) {#driver, #group, why},
static const matrix_gap_t matrix_gaps[] = {XR_MATRIX_GAPS(MATRIX_GAP){NULL, NULL, NULL}};

static void skip_a_gap(const char *device, const char *group) {
  for (const matrix_gap_t *g = matrix_gaps; g->driver; g++)
    if (!strcmp(g->driver, device) && !strcmp(g->group, group))
      cr_skip_test("%s does not run these cases: %s", device, g->why);
}

/* Criterion 2.4.1 wants one .timeout for every timed test of a binary (conv_test.c says why). */
#define MATRIX_TEST(group, call)                                   \
  Test(XR_MATRIX_SUITE, group, .timeout = XR_MATRIX_TIMEOUT) {     \
    const char *device = MATRIX_STR(XR_MATRIX_DRIVER);             \
    skip_a_gap(device, #group);                                    \
    call;                                                          \
  }

XR_MATRIX_GROUPS(MATRIX_TEST)
