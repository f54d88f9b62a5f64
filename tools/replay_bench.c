/* replay_bench: what replaying costs on the cpu driver.
 *  1. Overhead per timed iteration: a bundle of 10,000 tiny ops (1x4x1 GEMMs), each timed for
 *     20 and then 96 iterations; per iteration, the wall time of the engine's timed loop minus
 *     the kernel's own event-measured time. Goal: under 2 us.
 *  2. End to end: a 1,000-op bundle of small GEMMs, wall time of the whole replay (plan,
 *     allocate, initialise, first run, warm-up, timing) next to the sum of the kernel times.
 *  3. Small elementwise ops: per execution, the kernel time of pointwise-table ops (unary,
 *     binary, ternary) on 4-element tensors and of a trace's f32 x 0-d f64 multiply, next to
 *     aten::add of the same sizes (the elementwise family's first op) in the same run; and the
 *     whole run per op (planning, tensors, warm-up). Goal: set-up per execution under 1 us.
 *
 *   bazel run -c opt //tools:replay_bench                                                   */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/bundle.h"
#include "replay/replay.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static xr_bundle_t *gemm_bundle(size_t n, int m, int k, int nn) {
  xr_bundle_t *b;
  if (xr_bundle_create(&b) != XR_OK) return NULL;
  for (size_t i = 0; i < n; i++) {
    xr_op_t *op = xr_bundle_append_op(b);
    op->name = xr_arena_strdup(b->arena, "aten::mm");
    xr_op_alloc_args(b->arena, op, 2, 0);
    const int64_t dims[2][2] = {{m, k}, {k, nn}};
    const char *names[2] = {"self", "mat2"};
    for (int a = 0; a < 2; a++) {
      op->args[a].name = xr_arena_strdup(b->arena, names[a]);
      op->args[a].type = xr_arena_strdup(b->arena, "Tensor");
      xr_value_make_tensor(b->arena, &op->args[a].value, 2);
      xr_tensor_spec_t *t = op->args[a].value.as.tensor;
      memcpy(t->shape, dims[a], sizeof dims[a]);
      xr_tensor_set_contiguous(t);
      t->dtype = XR_DTYPE_F32;
    }
  }
  return b;
}

typedef struct totals {
  double kernel_us, host_us, timed_kernel_us;
  size_t ops, iterations;
} totals_t;

static void add(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  (void)position, (void)count;
  totals_t *t = ctx;
  if (r->outcome != XR_OP_SUCCEEDED) {
    fprintf(stderr, "replay_bench: op %zu: %s\n", r->index, r->message);
    return;
  }
  t->ops++;
  t->iterations += (size_t)r->iterations;
  t->kernel_us += r->mean_us * r->iterations;
  t->host_us += r->host_us_per_iteration * r->iterations;
  t->timed_kernel_us += r->median_us;
}

/* `n` copies of one op, `args` its argument list as bundle JSON. */
static xr_bundle_t *json_bundle(size_t n, const char *name, const char *args) {
  size_t one = strlen(name) + strlen(args) + 64, size = n * one + 128, at = 0;
  char *text = malloc(size);
  if (!text) return NULL;
  at += (size_t)snprintf(text, size, "{\"format\": \"xreplay-bundle\", \"format_version\": 1, "
                                     "\"ops\": [");
  for (size_t i = 0; i < n; i++)
    at += (size_t)snprintf(text + at, size - at, "%s{\"name\": \"%s\", \"args\": [%s]}",
                           i ? ", " : "", name, args);
  at += (size_t)snprintf(text + at, size - at, "]}");
  xr_bundle_t *b = NULL;
  if (xr_bundle_decode((const uint8_t *)text, at, name, ".", NULL, &b) != XR_OK) b = NULL;
  free(text);
  return b;
}

#define T(dtype, shape) "{\"type\": \"Tensor\", \"value\": {\"dtype\": \"" dtype \
                        "\", \"shape\": " shape "}}"

static int small_elementwise(xr_replay_options_t o) {
  static const struct {
    const char *label, *op, *args;
  } cases[] = {
      {"aten::add f32[4] (baseline)", "aten::add", T("float", "[4]") ", " T("float", "[4]")},
      {"aten::abs f32[4]", "aten::abs", T("float", "[4]")},
      {"aten::maximum f32[4]", "aten::maximum", T("float", "[4]") ", " T("float", "[4]")},
      {"aten::where bool[4] f32[4] f32[4]", "aten::where",
       T("bool", "[4]") ", " T("float", "[4]") ", " T("float", "[4]")},
      {"aten::add f32[1,559,64] (baseline)", "aten::add",
       T("float", "[1, 559, 64]") ", " T("float", "[1, 559, 64]")},
      {"aten::mul f32[1,559,64] x f64[]", "aten::mul",
       T("float", "[1, 559, 64]") ", " T("double", "[]")},
  };
  const size_t ops = 2000;
  double base_kernel = 0;
  printf("3. small elementwise ops (cpu driver, %zu ops each, %d iterations)\n", ops, o.iters);
  printf("   %-36s %12s %10s %14s\n", "op", "kernel us", "vs add", "whole run/op");
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    xr_bundle_t *b = json_bundle(ops, cases[c].op, cases[c].args);
    totals_t t = {0};
    xr_replay_observer_t observer = {.result = add, .context = &t};
    double start = now_s();
    if (!b || xr_replay_run(b, &o, &observer, NULL) != XR_OK || t.ops == 0) {
      fprintf(stderr, "replay_bench: %s: %s\n", cases[c].label, xr_last_error());
      xr_bundle_destroy(b);
      return 1;
    }
    double wall = now_s() - start, kernel = t.timed_kernel_us / (double)t.ops;
    if (strstr(cases[c].label, "baseline")) base_kernel = kernel;
    printf("   %-36s %12.3f %9.2fx %11.1f us\n", cases[c].label, kernel, kernel / base_kernel,
           wall * 1e6 / (double)t.ops);
    xr_bundle_destroy(b);
  }
  return 0;
}

int main(void) {
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = "cpu";
  o.warmup = 2;
  o.iters = 20;

  /* The host waits for the device once per batch of up to 32 iterations; at the default 20
   * iterations that wait is paid once per op, at 96 three times. Both are shown. */
  xr_bundle_t *tiny = gemm_bundle(10000, 1, 4, 1);
  const int iteration_counts[2] = {20, 96};
  for (int c = 0; c < 2; c++) {
    totals_t t = {0};
    o.iters = iteration_counts[c];
    double start = now_s();
    xr_replay_observer_t observer = {.result = add, .context = &t};
    if (!tiny || xr_replay_run(tiny, &o, &observer, NULL) != XR_OK) {
      fprintf(stderr, "replay_bench: %s\n", xr_last_error());
      return 1;
    }
    double wall = now_s() - start;
    printf("1%c. overhead per timed iteration (cpu driver, %zu tiny ops x %d iterations)\n",
           'a' + c, t.ops, o.iters);
    printf("   kernel time (events)     %8.3f us per iteration\n", t.kernel_us / t.iterations);
    printf("   timed loop (wall clock)  %8.3f us per iteration\n", t.host_us / t.iterations);
    printf("   replay overhead          %8.3f us per iteration (goal: < 2 us)\n",
           (t.host_us - t.kernel_us) / t.iterations);
    printf("   whole run: %.2f s, %.1f us per op including planning, tensors and warm-up\n", wall,
           wall * 1e6 / (double)t.ops);
  }
  xr_bundle_destroy(tiny);
  o.iters = 20;

  xr_bundle_t *small = gemm_bundle(1000, 64, 64, 64);
  totals_t s = {0};
  double start = now_s();
  xr_replay_observer_t observer = {.result = add, .context = &s};
  if (!small || xr_replay_run(small, &o, &observer, NULL) != XR_OK) {
    fprintf(stderr, "replay_bench: %s\n", xr_last_error());
    return 1;
  }
  double wall = now_s() - start;
  printf("2. end to end, %zu ops of 64x64x64 fp32 GEMM, %d warm-up + %d timed iterations each\n",
         s.ops, o.warmup, o.iters);
  printf("   wall time of the replay    %8.3f s\n", wall);
  printf("   sum of kernel times        %8.3f s (all %zu executions: %.1f%% of the wall time)\n",
         s.kernel_us * 1e-6, s.iterations, 100.0 * s.kernel_us * 1e-6 / wall);
  xr_bundle_destroy(small);
  return small_elementwise(o);
}
