/* A vision training step as a user's trace holds it: tests/data/traces/h100_vision_train_step.json
 * (hand-written Kineto, see tests/data/traces/README.md) has a ResNet basic block's forward and
 * backward (conv2d > convolution > _convolution > cudnn_convolution, batch_norm > cudnn_batch_norm,
 * relu_, max_pool2d > max_pool2d_with_indices, their backwards) and the SD VAE decoder's group
 * norm, SiLU and nearest upsampling, bf16 on an H100. Extracted, it must replay whole with
 * --check on the cpu, on opencl and (where present) on cuda and hip: every op run (on a device
 * by a device kernel), every output matching the reference, all of the trace's GPU time
 * covered. */
#include "replay/replay.h"
#include "tests/extract/extract_util.h"

#define VISION_TRACE "tests/data/traces/h100_vision_train_step.json"

/* The innermost ops extraction attributes the kernels to, in the trace's order of first launch. */
static const char *const expected_ops[] = {
    "aten::cudnn_convolution",
    "aten::cudnn_batch_norm",
    "aten::relu_",
    "aten::max_pool2d_with_indices",
    "aten::native_group_norm",
    "aten::silu",
    "aten::upsample_nearest2d",
    "aten::max_pool2d_with_indices_backward",
    "aten::cudnn_batch_norm_backward",
    "aten::convolution_backward",
};

#define OP_COUNT (sizeof expected_ops / sizeof *expected_ops)

static xr_bundle_t *extract_vision(void) {
  xr_extract_options_t o = {0};
  xr_bundle_t *b = NULL;
  cr_assert_eq(xr_trace_extract(VISION_TRACE, &o, &b, NULL), XR_OK, "%s", xr_last_error());
  cr_assert_eq(b->op_count, OP_COUNT, "%zu ops", b->op_count);
  for (size_t i = 0; i < OP_COUNT; i++) {
    bool found = false;
    for (size_t k = 0; k < b->op_count; k++) found |= !strcmp(b->ops[k].name, expected_ops[i]);
    cr_assert(found, "%s not extracted", expected_ops[i]);
  }
  return b;
}

typedef struct outcomes {
  const char *kernel_prefix; /* what every kernel that ran must start with ("" on the cpu) */
  size_t count;
  char failures[4096];
} outcomes_t;

static void collect(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  (void)position, (void)count;
  outcomes_t *o = ctx;
  o->count++;
  bool ok = r->outcome == XR_OP_SUCCEEDED && r->checked && r->check_passed &&
            !strncmp(r->kernel, o->kernel_prefix, strlen(o->kernel_prefix));
  size_t n = strlen(o->failures);
  if (!ok)
    snprintf(o->failures + n, sizeof o->failures - n, "%s on %s: %s %s%s; ", r->op->name, r->kernel,
             xr_op_outcome_name(r->outcome), r->message,
             r->checked && !r->check_passed ? " (check failed)" : "");
}

static void replays_whole(const char *device, const char *kernel_prefix) {
  xr_bundle_t *b = extract_vision();
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = device;
  o.check = true;
  o.warmup = 0;
  o.iters = 1;
  outcomes_t out = {.kernel_prefix = kernel_prefix};
  xr_replay_observer_t observer = {.result = collect, .context = &out};
  xr_replay_summary_t summary;
  xr_status_t st = xr_replay_run(b, &o, &observer, &summary);
  if (st == XR_UNAVAILABLE || st == XR_NOT_FOUND) {
    xr_bundle_destroy(b);
    cr_skip_test("%s unavailable: %s", device, xr_last_error());
  }
  cr_assert_eq(st, XR_OK, "%s", xr_last_error());
  cr_assert_eq(out.count, OP_COUNT);
  cr_assert_str_empty(out.failures, "%s", out.failures);
  cr_assert_float_eq(summary.trace_total_us, 368.5, 1e-6, "the trace's kernels sum to 368.5 us");
  cr_assert_eq(summary.succeeded, OP_COUNT);
  cr_assert_float_eq(summary.trace_covered_us, summary.trace_total_us, 1e-6,
                     "covered %.1f of %.1f us", summary.trace_covered_us, summary.trace_total_us);
  xr_bundle_destroy(b);
}

Test(vision, replays_whole_on_cpu, .timeout = 300) {
  replays_whole("cpu", "");
}

Test(vision, replays_whole_on_opencl, .timeout = 300) {
  replays_whole("opencl", "opencl.");
}

/* Where a GPU is present (they skip elsewhere). */
Test(vision, replays_whole_on_cuda, .timeout = 300) {
  replays_whole("cuda", "gpu.");
}

Test(vision, replays_whole_on_hip, .timeout = 300) {
  replays_whole("hip", "gpu.");
}
