/* elementwise_bench: memory-bound ops of the elementwise and argmax families on large tensors
 * (about 64 MiB per input), each replayed through the engine (the kernel a user's replay
 * picks), next to a device-to-device copy of 64 MiB between two buffers of the same device
 * measured in the same run (xr_hal_stream_copy, HAL events, best of 10).
 *
 *   bazel run -c opt //tools:elementwise_bench -- [--device cpu|opencl|all] [--iters N]
 *                                                 [--only SUBSTRING]
 *
 * Traffic is counted the same way on both sides: the copy moves 2 x 64 MiB (read + write);
 * an op moves plan->bytes (every input element read once, every output element written once).
 * "ratio" = op GB/s / copy GB/s: 1.0 means the op runs at copy speed. The copy is measured
 * again right before each op, so that a machine whose load drifts during the run (a shared CI
 * box) compares each op with the bandwidth it had at that moment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "replay/replay.h"

#define MIB (1u << 20)

typedef struct op_case {
  const char *label;
  const char *json; /* one op, our bundle schema */
} op_case_t;

/* 16 Mi f32 or 32 Mi bf16 elements = 64 MiB per tensor. */
#define T_F32(shape) "{\"dtype\": \"float\", \"shape\": " shape "}"
#define T_BF16(shape) "{\"dtype\": \"c10::BFloat16\", \"shape\": " shape "}"
#define T_F16(shape) "{\"dtype\": \"c10::Half\", \"shape\": " shape "}"
#define ARG(name, type, value) "{\"name\": \"" name "\", \"type\": \"" type "\", \"value\": " value "}"
#define OP(name, args, kwargs)                                                                \
  "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": \"" name      \
  "\", \"args\": [" args "], \"kwargs\": [" kwargs "]}]}"

static const op_case_t cases[] = {
    {"add f32 (a + b)", OP("aten::add", ARG("self", "Tensor", T_F32("[4096, 4096]")) ", "
                        ARG("other", "Tensor", T_F32("[4096, 4096]")), "")},
    {"add bf16, alpha 0.5", OP("aten::add", ARG("self", "Tensor", T_BF16("[8192, 4096]")) ", "
                            ARG("other", "Tensor", T_BF16("[8192, 4096]")),
                            ARG("alpha", "Scalar", "0.5"))},
    {"mul f32 by a row [4096]", OP("aten::mul", ARG("self", "Tensor", T_F32("[4096, 4096]")) ", "
                                ARG("other", "Tensor", T_F32("[4096]")), "")},
    {"mul bf16 by Scalar", OP("aten::mul", ARG("self", "Tensor", T_BF16("[8192, 4096]")) ", "
                           ARG("other", "Scalar", "0.125"), "")},
    {"div f32", OP("aten::div", ARG("self", "Tensor", T_F32("[4096, 4096]")) ", "
                ARG("other", "Tensor", T_F32("[4096, 4096]")), "")},
    {"gelu f32 (erf)", OP("aten::gelu", ARG("self", "Tensor", T_F32("[4096, 4096]")), "")},
    {"gelu bf16 (tanh)", OP("aten::gelu", ARG("self", "Tensor", T_BF16("[8192, 4096]")),
                            ARG("approximate", "str", "\"tanh\""))},
    {"silu bf16", OP("aten::silu", ARG("self", "Tensor", T_BF16("[8192, 4096]")), "")},
    {"silu_and_mul bf16", OP("_C::silu_and_mul", ARG("result", "Tensor(a!)", T_BF16("[8192, 2048]")) ", "
                             ARG("input", "Tensor", T_BF16("[8192, 4096]")), "")},
    {"silu_and_mul f16", OP("_C::silu_and_mul", ARG("result", "Tensor(a!)", T_F16("[8192, 2048]")) ", "
                            ARG("input", "Tensor", T_F16("[8192, 4096]")), "")},
    {"copy_ f32 <- bf16", OP("aten::copy_", ARG("self", "Tensor(a!)", T_F32("[8192, 2048]")) ", "
                          ARG("src", "Tensor", T_BF16("[8192, 2048]")), "")},
    {"copy_ f32, transposed src", OP("aten::copy_", ARG("self", "Tensor(a!)", T_F32("[4096, 4096]")) ", "
                                  ARG("src", "Tensor", "{\"dtype\": \"float\", \"shape\": [4096, 4096], \"strides\": [1, 4096]}"), "")},
    {"_to_copy f32 -> f16", OP("aten::_to_copy", ARG("self", "Tensor", T_F32("[4096, 4096]")),
                               ARG("dtype", "ScalarType?", "5"))},
    {"_to_copy f32 -> fp8 e4m3fn", OP("aten::_to_copy", ARG("self", "Tensor", T_F32("[4096, 4096]")),
                                      ARG("dtype", "ScalarType?", "24"))},
    /* the pointwise table (kernels/pointwise_ops.h): unary, binary, ternary, comparison, a
     * row with Scalar arguments, and a binary op on a transposed operand */
    {"exp f32 (table)", OP("aten::exp", ARG("self", "Tensor", T_F32("[4096, 4096]")), "")},
    {"rsqrt bf16 (table)", OP("aten::rsqrt", ARG("self", "Tensor", T_BF16("[8192, 4096]")), "")},
    {"maximum bf16 (table)", OP("aten::maximum", ARG("self", "Tensor", T_BF16("[8192, 4096]")) ", "
                             ARG("other", "Tensor", T_BF16("[8192, 4096]")), "")},
    {"where bf16, bool mask (table)", OP("aten::where", ARG("condition", "Tensor", "{\"dtype\": \"bool\", \"shape\": [8192, 4096]}") ", "
                                      ARG("self", "Tensor", T_BF16("[8192, 4096]")) ", "
                                      ARG("other", "Tensor", T_BF16("[8192, 4096]")), "")},
    {"lt f32 -> bool (table)", OP("aten::lt", ARG("self", "Tensor", T_F32("[4096, 4096]")) ", "
                               ARG("other", "Tensor", T_F32("[4096, 4096]")), "")},
    {"clamp bf16, min and max (table)", OP("aten::clamp", ARG("self", "Tensor", T_BF16("[8192, 4096]")) ", "
                                        ARG("min", "Scalar", "-0.5") ", " ARG("max", "Scalar", "0.5"), "")},
    {"maximum f32, transposed other (table)", OP("aten::maximum", ARG("self", "Tensor", T_F32("[4096, 4096]")) ", "
                                              ARG("other", "Tensor", "{\"dtype\": \"float\", \"shape\": [4096, 4096], \"strides\": [1, 4096]}"), "")},
    {"fill_ bf16", OP("aten::fill_", ARG("self", "Tensor(a!)", T_BF16("[8192, 4096]")) ", "
                   ARG("value", "Scalar", "1.5"), "")},
    {"cat bf16, 2 x 32 MiB", OP("aten::cat", ARG("tensors", "Tensor[]", "[" T_BF16("[4096, 4096]") ", " T_BF16("[4096, 4096]") "]") ", "
                             ARG("dim", "int", "1"), "")},
    {"embedding bf16 [8192, 4096] x 8192 ids", OP("aten::embedding", ARG("weight", "Tensor", T_BF16("[8192, 4096]")) ", "
                                ARG("indices", "Tensor", "{\"dtype\": \"long int\", \"shape\": [8192]}"), "")},
    {"argmax f32, dim -1", OP("aten::argmax", ARG("self", "Tensor", T_F32("[4096, 4096]")) ", "
                           ARG("dim", "int?", "-1"), "")},
};

static int fail(const char *what) {
  fprintf(stderr, "elementwise_bench: %s: %s\n", what, xr_last_error());
  return 1;
}

/* Bytes per second of a 64 MiB device-to-device copy, counting read + write. */
static int copy_rate(const char *spec, double *out_bps) {
  xr_hal_device_t *dev;
  if (xr_hal_device_create(spec, &dev) != XR_OK) return fail(spec);
  xr_hal_stream_t *s = NULL;
  xr_hal_buffer_t *a = NULL, *b = NULL;
  xr_hal_event_t *e0 = NULL, *e1 = NULL;
  size_t size = 64 * MIB;
  uint8_t pattern = 0x3c;
  double best = 0;
  int rc = 0;
  if (xr_hal_stream_create(dev, &s) || xr_hal_buffer_alloc(dev, size, &a) ||
      xr_hal_buffer_alloc(dev, size, &b) || xr_hal_event_create(dev, &e0) ||
      xr_hal_event_create(dev, &e1) || xr_hal_buffer_fill(a, 0, size, &pattern, 1) ||
      xr_hal_buffer_fill(b, 0, size, &pattern, 1)) {
    rc = fail("copy baseline setup");
  }
  for (int r = 0; r < 6 && rc == 0; r++) {
    double ms;
    if (xr_hal_event_record(e0, s) || xr_hal_stream_copy(s, b, 0, a, 0, size) ||
        xr_hal_event_record(e1, s) || xr_hal_stream_synchronize(s) ||
        xr_hal_event_elapsed_ms(e0, e1, &ms)) {
      rc = fail("copy baseline");
      break;
    }
    if (r > 0 && (best == 0 || ms < best)) best = ms; /* the first run warms the pages */
  }
  *out_bps = best > 0 ? 2.0 * (double)size / (best * 1e-3) : 0;
  xr_hal_event_destroy(e0);
  xr_hal_event_destroy(e1);
  xr_hal_buffer_free(a);
  xr_hal_buffer_free(b);
  xr_hal_stream_destroy(s);
  xr_hal_device_destroy(dev);
  return rc;
}

typedef struct outcome {
  xr_op_result_t r;
  int seen;
} outcome_t;

static void observe(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  (void)position, (void)count;
  outcome_t *o = ctx;
  o->r = *r;
  o->seen = 1;
}

static int bench_device(const char *spec, int iters, const char *only) {
  printf("\n%s (copy: a 64 MiB device-to-device copy measured just before each op, read + write)\n\n", spec);
  printf("| op | kernel | MB moved | median us | GB/s | copy GB/s | ratio to copy |\n"
         "|---|---|---|---|---|---|---|\n");
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (only && !strstr(cases[i].label, only)) continue;
    double copy_bps = 0;
    if (copy_rate(spec, &copy_bps)) return 1;
    xr_bundle_t *b;
    if (xr_bundle_decode((const uint8_t *)cases[i].json, strlen(cases[i].json), cases[i].label, ".",
                         NULL, &b) != XR_OK)
      return fail(cases[i].label);
    xr_replay_options_t o;
    xr_replay_options_default(&o);
    o.device = spec;
    o.warmup = 2;
    o.iters = iters;
    outcome_t out = {0};
    xr_replay_observer_t observer = {.result = observe, .context = &out};
    xr_status_t st = xr_replay_run(b, &o, &observer, NULL);
    xr_bundle_destroy(b);
    if (st != XR_OK) return fail(cases[i].label);
    if (!out.seen || out.r.outcome != XR_OP_SUCCEEDED) {
      printf("| %s | - | - | - | - | - | %s: %s |\n", cases[i].label,
             out.seen ? xr_op_outcome_name(out.r.outcome) : "not run", out.seen ? out.r.message : "");
      continue;
    }
    double gbps = out.r.bytes / (out.r.median_us * 1e-6) / 1e9;
    double ratio = gbps * 1e9 / copy_bps;
    sum += ratio;
    n++;
    printf("| %s | %s | %.0f | %.0f | %.2f | %.2f | %.2f |\n", cases[i].label, out.r.kernel,
           out.r.bytes / 1e6, out.r.median_us, gbps, copy_bps / 1e9, ratio);
    fflush(stdout);
  }
  if (n) printf("\nmean ratio to copy: %.2f over %d ops\n", sum / n, n);
  return 0;
}

int main(int argc, char **argv) {
  const char *device = "all", *only = NULL;
  int iters = 10;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else {
      fprintf(stderr, "usage: elementwise_bench [--device cpu|opencl|all] [--iters N] "
                      "[--only SUBSTRING]\n");
      return 2;
    }
  }
  if (iters < 1) iters = 1;
  int rc = 0;
  if (!strcmp(device, "all") || !strcmp(device, "cpu")) rc |= bench_device("cpu", iters, only);
  if (!strcmp(device, "all") || !strcmp(device, "opencl")) {
    xr_hal_driver_info_t info;
    if (xr_hal_driver_info_by_name("opencl", &info) == XR_OK && info.status == XR_OK)
      rc |= bench_device("opencl", iters, only);
    else
      printf("\nopencl: unavailable (%s)\n", info.reason ? info.reason : "");
  }
  return rc;
}
