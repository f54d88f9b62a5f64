/* Exact values on small embedded inputs: a tensor value with its contents in the bundle
 * ("data_base64"), and a one-op run on several devices and kernels whose dumped result must
 * equal values worked out by hand. */
#ifndef XR_TESTS_KERNELS_EXACT_H
#define XR_TESTS_KERNELS_EXACT_H

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "formats/bundle.h"
#include "kernels/kernels.h"
#include "tests/kernels/bundle_text.h"

/* A tensor value viewing `bytes` bytes of `dtype`'s elements (its storage) through `strides`
 * (NULL: contiguous), written into t. */
static inline const char *exact_view(text_t *t, const char *dtype, int rank, const int64_t *shape,
                                     const int64_t *strides, const void *data, size_t bytes) {
  static const char *const table =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const uint8_t *p = data;
  size_t start = t->n;
  put(t, "{\"dtype\": \"%s\", \"shape\": [", dtype);
  for (int d = 0; d < rank; d++) put(t, "%s%lld", d ? ", " : "", (long long)shape[d]);
  if (strides) {
    put(t, "], \"strides\": [");
    for (int d = 0; d < rank; d++) put(t, "%s%lld", d ? ", " : "", (long long)strides[d]);
  }
  put(t, "], \"data_base64\": \"");
  for (size_t i = 0; i < bytes; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < bytes ? (uint32_t)p[i + 1] << 8 : 0) |
                 (i + 2 < bytes ? p[i + 2] : 0);
    put(t, "%c%c%c%c", table[v >> 18 & 63], table[v >> 12 & 63],
        i + 1 < bytes ? table[v >> 6 & 63] : '=', i + 2 < bytes ? table[v & 63] : '=');
  }
  put(t, "\"}");
  return t->s + start;
}

/* A contiguous tensor value holding `bytes` bytes of `dtype`'s elements, written into t. */
static inline const char *exact_tensor(text_t *t, const char *dtype, int rank,
                                       const int64_t *shape, const void *data, size_t bytes) {
  return exact_view(t, dtype, rank, shape, NULL, data, bytes);
}

/* exact_tensor of the listed values as `ctype`s. */
#define EXACT_DATA(t, dtype, ctype, rank, shape, ...)                  \
  exact_tensor(t, dtype, rank, shape, (const ctype[]){__VA_ARGS__}, \
               sizeof((const ctype[]){__VA_ARGS__}))

/* One run: a device, how to choose its kernel, and the kernel expected. */
typedef struct exact_run {
  const char *device;
  xr_kernel_choice_t choice;
  const char *kernel;
} exact_run_t;

/* Replays `json` once on `run`, its outputs dumped into `dir` (made here, unique to this process
 * and `tag`); the op must succeed on the run's kernel. false, having run nothing, when the
 * run's device is absent. */
static inline bool exact_run_dump(const char *json, const char *op, const exact_run_t *run,
                                  size_t tag, char *dir, size_t dir_size) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK,
               "%s", xr_last_error());
  format(dir, dir_size, "%s/exact_%d_%zu", getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp",
         (int)getpid(), tag);
  once_t how = {.device = run->device, .choice = run->choice, .dump_dir = dir};
  xr_op_result_t r;
  xr_status_t st = replay_once(b, &how, &r);
  xr_bundle_destroy(b);
  if (st != XR_OK) return false;
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s on %s: %s", op, run->device, r.message);
  cr_assert_str_eq(r.kernel, run->kernel);
  return true;
}

/* Replays `json` once per run (an absent device is skipped and logged at info level: a
 * Criterion warning fails the suite); `target`'s dumped values ("return0", "self", "out") must
 * be `want` exactly, NaN matching NaN (16-bit floats, which the dump writes as their bits:
 * `want` holds the bits). */
static inline void exact_expect(const char *json, const char *op, const char *target,
                                const double *want, int64_t n, const exact_run_t *runs,
                                size_t run_count) {
  for (size_t k = 0; k < run_count; k++) {
    char dir[512], path[700];
    if (!exact_run_dump(json, op, &runs[k], k, dir, sizeof dir)) {
      cr_log_info("%s: %s absent", op, runs[k].device);
      continue;
    }
    format(path, sizeof path, "%s/op0_%s.npy", dir, target);
    xr_npy_t npy;
    cr_assert_eq(xr_npy_load(path, &npy), XR_OK, "%s", xr_last_error());
    cr_assert_eq(npy.numel, n, "%s: %lld elements, expected %lld", op, (long long)npy.numel,
                 (long long)n);
    for (int64_t i = 0; i < n; i++) {
      const uint8_t *e = npy.data + (size_t)i * npy.item_size;
      const char *d = npy.descr + 1;
      double got = !strcmp(d, "f4")   ? *(const float *)e
                   : !strcmp(d, "i8") ? (double)*(const int64_t *)e
                   : !strcmp(d, "i4") ? *(const int32_t *)e
                   : !strcmp(d, "u2") ? *(const uint16_t *)e /* bf16, f16: their bits */
                   : !strcmp(d, "u1") || !strcmp(d, "b1") ? *e
                                      : *(const double *)e;
      bool same = (isnan(got) && isnan(want[i])) || got == want[i];
      cr_assert(same, "%s on %s: %s[%lld] = %g, expected %g", op, runs[k].kernel, target,
                (long long)i, got, want[i]);
    }
    xr_npy_free(&npy);
  }
}

#endif
