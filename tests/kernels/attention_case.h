/* Builders for one-op attention bundles (our JSON schema) and a replay with --check that can
 * pass initializer policies (the engine's --init), shared by the attention
 * families' cases and suites. */
#ifndef XR_TESTS_KERNELS_ATTENTION_CASE_H
#define XR_TESTS_KERNELS_ATTENTION_CASE_H

#include <stdarg.h>
#include <stdint.h>

#include "tests/kernels/check.h"

typedef struct jbuf {
  char s[16384];
  size_t n;
  int args; /* arguments written in the current list */
} jbuf_t;

static inline void jb(jbuf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (b->n < sizeof b->s) b->n += (size_t)vsnprintf(b->s + b->n, sizeof b->s - b->n, fmt, ap);
  va_end(ap);
  cr_assert_lt(b->n, sizeof b->s, "case JSON too long");
}

static inline void op_begin(jbuf_t *b, const char *name) {
  b->n = 0;
  b->args = 0;
  jb(b, "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": \"%s\", \"args\": [", name);
}

static inline void op_kwargs(jbuf_t *b) {
  jb(b, "], \"kwargs\": [");
  b->args = 0;
}

static inline const char *op_end(jbuf_t *b) {
  jb(b, "]}]}");
  return b->s;
}

static inline void arg_begin(jbuf_t *b, const char *name, const char *type) {
  jb(b, "%s{\"name\": \"%s\", \"type\": \"%s\", \"value\": ", b->args++ ? ", " : "", name, type);
}

/* A tensor argument; strides NULL: contiguous. `extra` adds fields ("\"init\": null"). */
static inline void arg_tensor(jbuf_t *b, const char *name, const char *type, int rank, const int64_t *shape,
                              const int64_t *strides, const char *dtype, const char *extra) {
  int64_t st[8];
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) st[d] = strides ? strides[d] : s, s *= shape[d];
  arg_begin(b, name, type);
  jb(b, "{\"shape\": [");
  for (int d = 0; d < rank; d++) jb(b, "%s%lld", d ? ", " : "", (long long)shape[d]);
  jb(b, "], \"strides\": [");
  for (int d = 0; d < rank; d++) jb(b, "%s%lld", d ? ", " : "", (long long)st[d]);
  jb(b, "], \"dtype\": \"%s\"%s%s}}", dtype, extra ? ", " : "", extra ? extra : "");
}

static inline void arg_raw(jbuf_t *b, const char *name, const char *type, const char *value) {
  arg_begin(b, name, type);
  jb(b, "%s}", value);
}

static inline void arg_int(jbuf_t *b, const char *name, long long v) {
  arg_begin(b, name, "int");
  jb(b, "%lld}", v);
}

static inline void arg_float(jbuf_t *b, const char *name, double v) {
  arg_begin(b, name, "float");
  jb(b, "%.17g}", v);
}

static inline void arg_bool(jbuf_t *b, const char *name, bool v) {
  arg_begin(b, name, "bool");
  jb(b, "%s}", v ? "true" : "false");
}

/* Replays with --check; `init` is the op's initializer policy (--init) or NULL; the paged caches
 * as `cache_blocks` says (--cache-blocks). Skips when the device is absent. */
static inline xr_op_result_t run_case_with(const char *json, const char *device, uint64_t seed,
                                           const char *init, xr_cache_blocks_t cache_blocks) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK, "%s",
               xr_last_error());
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = device;
  o.check = true;
  o.warmup = 0;
  o.iters = 1;
  o.seed = seed;
  o.cache_blocks = cache_blocks;
  xr_init_override_t override = {b->ops[0].name, init};
  o.init_overrides = init ? &override : NULL;
  o.init_override_count = init ? 1 : 0;
  static check_result_t c;
  memset(&c, 0, sizeof c);
  xr_replay_observer_t observer = {.result = check_collect, .context = &c};
  xr_status_t st = xr_replay_run(b, &o, &observer, NULL);
  if (st == XR_UNAVAILABLE || st == XR_NOT_FOUND) {
    xr_bundle_destroy(b);
    cr_skip_test("%s unavailable: %s", device, xr_last_error());
  }
  cr_assert_eq(st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(c.count, 1);
  c.r.op = NULL;
  xr_bundle_destroy(b);
  return c.r;
}

/* Asserts the case ran on `device` with a kernel named `prefix`* and matched the reference on
 * every output. */
static inline xr_op_result_t run_case(const char *json, const char *device, uint64_t seed, const char *init) {
  return run_case_with(json, device, seed, init, XR_CACHE_BLOCKS_AUTO);
}

/* The result of a run expected to succeed, checked, on a kernel whose name starts `prefix`. */
static inline void expect_checked(const char *what, const xr_op_result_t *r, const char *json,
                                  const char *device, const char *prefix) {
  cr_assert_eq(r->outcome, XR_OP_SUCCEEDED, "%s on %s: %s: %s\n%s", what, device,
               xr_op_outcome_name(r->outcome), r->message, json);
  cr_assert(r->checked && r->check_passed, "%s on %s: check failed", what, device);
  cr_assert(strncmp(r->kernel, prefix, strlen(prefix)) == 0, "%s: ran %s, expected %s*", what,
            r->kernel, prefix);
}

static inline void expect_match(const char *what, const char *json, const char *device, const char *prefix,
                                uint64_t seed, const char *init) {
  xr_op_result_t r = run_case(json, device, seed, init);
  expect_checked(what, &r, json, device, prefix);
  for (size_t k = 0; k < r.output_count; k++)
    cr_log_info("%s on %s: %s nmse %.3g", what, device, r.outputs[k].target, r.outputs[k].nmse);
}

#endif
