/* Building one-op bundles as JSON text for kernel tests, and checking them against the
 * reference with a fresh seed each time (shared by the elementwise and indexing suites). */
#ifndef XR_TESTS_KERNELS_BUNDLE_TEXT_H
#define XR_TESTS_KERNELS_BUNDLE_TEXT_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tests/kernels/check.h"

typedef struct text {
  char s[8192];
  size_t n;
} text_t;

static inline void put(text_t *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(t->s + t->n, sizeof t->s - t->n, fmt, ap);
  va_end(ap);
  cr_assert(k >= 0 && (size_t)k < sizeof t->s - t->n, "case text too long");
  t->n += (size_t)k;
}

/* snprintf that fails the test when the text does not fit. */
static inline void format(char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  cr_assert(k >= 0 && (size_t)k < size, "case text too long");
}

/* A tensor value: shape, optional strides (NULL: contiguous), storage offset. */
static inline const char *tensor(text_t *t, const char *dtype, int rank, const int64_t *shape,
                          const int64_t *strides, int64_t offset) {
  size_t start = t->n;
  put(t, "{\"dtype\": \"%s\", \"shape\": [", dtype);
  for (int d = 0; d < rank; d++) put(t, "%s%lld", d ? ", " : "", (long long)shape[d]);
  put(t, "]");
  if (strides) {
    put(t, ", \"strides\": [");
    for (int d = 0; d < rank; d++) put(t, "%s%lld", d ? ", " : "", (long long)strides[d]);
    put(t, "]");
  }
  if (offset) put(t, ", \"storage_offset\": %lld", (long long)offset);
  put(t, "}");
  return t->s + start;
}

/* Channels-last strides of an [n, c, spatial...] shape (memory order n, spatial..., c). */
static inline void channels_last_strides(int rank, const int64_t *shape, int64_t *strides) {
  int64_t s = shape[1];
  strides[1] = 1;
  for (int d = rank - 1; d >= 2; d--) strides[d] = s, s *= shape[d];
  strides[0] = s;
}

#define SHAPE(...) (const int64_t[]){__VA_ARGS__}
#define RANK(...) ((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))

/* Assembles {"ops": [{"name": op, "args": [...], "kwargs": [...]}]} from argument snippets
 * already written as `{"name": .., "type": .., "value": ..}`. */
static inline const char *bundle(const char *op, const char *args, const char *kwargs) {
  static char buf[16384];
  format(buf, sizeof buf,
           "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": \"%s\", "
           "\"args\": [%s], \"kwargs\": [%s]}]}",
           op, args, kwargs ? kwargs : "");
  return buf;
}

static uint64_t next_seed = 1;

/* Runs on `device`; the kernel that ran must start with `prefix`. */
static inline void expect_match(const char *json, const char *device, const char *prefix) {
  xr_op_result_t r = check_op_seeded(json, device, next_seed++);
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s on %s: %s: %s", json, device,
               xr_op_outcome_name(r.outcome), r.message);
  cr_assert(r.checked && r.check_passed, "%s on %s: check failed (nmse %g)", json, device,
            r.outputs[0].nmse);
  cr_assert(strncmp(r.kernel, prefix, strlen(prefix)) == 0, "%s: ran %s, expected %s*", json,
            r.kernel, prefix);
}

/* expect_match on the cpu for a case oneDNN runs (`onednn`) where it computes the dtype, and our
 * own kernel (`own`) elsewhere. */
static inline void expect_onednn(const char *json, const char *dtype, const char *onednn,
                                 const char *own) {
  expect_match(json, "cpu", onednn_computes(dtype) ? onednn : own);
}

#endif
