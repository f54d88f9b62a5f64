/* Test harness for kernel families: replays a one-op bundle on a device through the real engine
 * with --check, so the device's implementation is compared with the CPU reference on the same
 * seeded inputs, outputs poisoned (NaN / -1) before the run. A device that is absent skips. */
#ifndef XR_TESTS_KERNELS_CHECK_H
#define XR_TESTS_KERNELS_CHECK_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "formats/bundle.h"
#include "replay/replay.h"

typedef struct check_result {
  xr_op_result_t r;
  size_t count;
} check_result_t;

static inline void check_collect(void *ctx, const xr_op_result_t *r, size_t position,
                                 size_t count) {
  (void)position, (void)count;
  check_result_t *c = ctx;
  c->r = *r;
  c->count++;
}

/* The driver part of the kernels `device` runs ("cpu", "opencl"): "gpu" for cuda and hip,
 * which one implementation serves. */
static inline const char *kernel_driver(const char *device) {
  return !strncmp(device, "cuda", 4) || !strncmp(device, "hip", 3) ? "gpu" : device;
}

/* The implementation `name` of the kernels `device` runs: "cpu.reduce", "gpu.reduce" on cuda.
 * The last four results stay valid, for calls that take several. */
static inline const char *kernel_impl(const char *device, const char *name) {
  static char impl[4][64];
  static unsigned next;
  char *out = impl[next++ % 4];
  snprintf(out, sizeof impl[0], "%s.%s", kernel_driver(device), name);
  return out;
}

/* How replay_once runs a one-op bundle. */
typedef struct once {
  const char *device;
  xr_kernel_choice_t choice; /* the best kernel, or the cpu reference */
  bool check;                /* --check: against the reference on the same inputs */
  uint64_t seed;
  const char *init;     /* --init for the op (NULL: its default policy) */
  const char *dump_dir; /* --dump (NULL: no dump) */
} once_t;

/* One execution (no warm-up) of the one-op bundle `b` as `how` says, the op's result into *out
 * (its `op` NULL: it would point into the bundle, which the caller owns). UNAVAILABLE or
 * NOT_FOUND when the device is absent, for the caller to skip on. */
static inline xr_status_t replay_once(const xr_bundle_t *b, const once_t *how,
                                      xr_op_result_t *out) {
  cr_assert_eq(b->op_count, 1);
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = how->device;
  o.choice = how->choice;
  o.check = how->check;
  o.warmup = 0;
  o.iters = 1;
  o.seed = how->seed;
  o.dump_dir = how->dump_dir;
  xr_init_override_t override = {b->ops[0].name, how->init};
  o.init_overrides = how->init ? &override : NULL;
  o.init_override_count = how->init ? 1 : 0;
  static check_result_t c;
  memset(&c, 0, sizeof c);
  xr_replay_observer_t observer = {.result = check_collect, .context = &c};
  xr_status_t st = xr_replay_run(b, &o, &observer, NULL);
  if (st == XR_UNAVAILABLE || st == XR_NOT_FOUND) return st;
  cr_assert_eq(st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(c.count, 1);
  c.r.op = NULL;
  *out = c.r;
  return XR_OK;
}

/* Replays a one-op bundle already built on `device` with --check, the op's initializer policy
 * `init` (NULL: its default), into *out; as replay_once. */
static inline xr_status_t check_bundle_init(const xr_bundle_t *b, const char *device, uint64_t seed,
                                            const char *init, xr_op_result_t *out) {
  once_t how = {.device = device, .check = true, .seed = seed, .init = init};
  return replay_once(b, &how, out);
}

static inline xr_status_t check_bundle(const xr_bundle_t *b, const char *device, uint64_t seed,
                                       xr_op_result_t *out) {
  return check_bundle_init(b, device, seed, NULL, out);
}

/* Replays `json` (one op, our schema or TraceLens IR) on `device`, with the initializer policy
 * `init` (NULL: the default); skips the test when the device is unavailable. `seed` varies the
 * inputs. */
static inline xr_op_result_t check_op_init(const char *json, const char *device, uint64_t seed,
                                           const char *init) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK,
               "%s", xr_last_error());
  xr_op_result_t r;
  xr_status_t st = check_bundle_init(b, device, seed, init, &r);
  xr_bundle_destroy(b);
  if (st != XR_OK) cr_skip_test("%s unavailable: %s", device, xr_last_error());
  return r;
}

static inline xr_op_result_t check_op_seeded(const char *json, const char *device, uint64_t seed) {
  return check_op_init(json, device, seed, NULL);
}

static inline xr_op_result_t check_op(const char *json, const char *device) {
  return check_op_seeded(json, device, 0);
}

/* Asserts the op ran on `device` with `kernel_prefix` (e.g. "opencl.", "" for any) and matched
 * the reference on every output. */
#define assert_matches_reference(json, device, kernel_prefix)                                   \
  do {                                                                                         \
    xr_op_result_t r_ = check_op((json), (device));                                            \
    cr_assert_eq(r_.outcome, XR_OP_SUCCEEDED, "%s on %s: %s: %s", (json), (device),            \
                 xr_op_outcome_name(r_.outcome), r_.message);                                  \
    cr_assert(r_.checked && r_.check_passed, "%s: check failed", (json));                      \
    cr_assert(strncmp(r_.kernel, (kernel_prefix), strlen(kernel_prefix)) == 0,                 \
              "ran %s, expected a %s kernel", r_.kernel, (kernel_prefix));                     \
  } while (0)

/* oneDNN computes bf16 with kernels of its own on AVX-512 CPUs (avx512_core and newer) only;
 * elsewhere (an AVX2 EPYC) it has just its reference kernel, which cpu.onednn_* decline. */
static inline bool onednn_computes(const char *dtype) {
  return !strstr(dtype, "BFloat16") || __builtin_cpu_supports("avx512bw");
}

#endif
