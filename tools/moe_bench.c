/* moe_bench: the fused-experts path (vllm::outplace_fused_experts) at LLM MoE shapes, in FLOP/s
 * and as a fraction of the GEMM rate for the same FLOPs measured in the same run: a plain GEMM
 * of (M*topk) x K x 2N then (M*topk) x N x K (aten::linear through the kernel registry, on the
 * same device, same dtype). Everything runs through the replay engine (tensors initialised,
 * balanced routing, event-timed iterations); the table gives the median of the timed runs and
 * names the kernels that ran. Shapes 0-3 are decode-sized batches (16 to 64 rows per expert),
 * 4-8 prefill chunks (256-512 rows per expert).
 *
 *   bazel run -c opt //tools:moe_bench -- [--devices cpu,opencl] [--iters N] [--quick] [--shape I]
 *                                          [--gpt-oss]  (the second table alone)
 *
 * The fused op must read every routed expert's weights where the baseline GEMM reads one
 * matrix, so at a few rows per expert it is bound by memory, not by the GEMM rate. The last
 * column says how close it gets to what the device allows: its time over the roofline floor,
 * max(FLOPs / GEMM rate, bytes / copy bandwidth), both measured in the same run (the copy is a
 * 512 MiB aten::copy_ through the engine: larger than this machine's 480 MB L3, as the experts'
 * weights are; a 64 MiB copy stays partly in L3 and overstated the memory's rate by a third).
 *
 * A device whose only GEMM is the plain-C reference gets no ratio (that would flatter the MoE
 * path); its fused figure is still printed.
 *
 * A second table runs vllm::moe_forward with GPT-OSS-20B's layer (32 experts, top-4, hidden and
 * intermediate 2880, biases, swigluoai) twice in one run, with mxfp4 and with bf16 expert
 * weights: the same FLOPs, so the ratio is mxfp4's rate over bf16's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "replay/replay.h"

typedef struct shape {
  const char *model;
  int64_t M, K, N, E, topk;
} shape_t;

static const shape_t full_shapes[] = {
    {"OLMoE-1B-7B", 128, 2048, 1024, 64, 8},
    {"OLMoE-1B-7B", 512, 2048, 1024, 64, 8},
    {"Qwen1.5-MoE-A2.7B", 256, 2048, 1408, 60, 4},
    {"Mixtral-8x7B (1/4 width)", 256, 4096, 3584, 8, 2},
    /* Prefill as chunked prefill hands it to the MoE layer: hundreds of rows per expert, so
     * bound by the GEMMs rather than by reading the weights. */
    {"OLMoE-1B-7B", 2048, 2048, 1024, 64, 8},
    {"OLMoE-1B-7B", 4096, 2048, 1024, 64, 8},
    {"Qwen1.5-MoE-A2.7B", 4096, 2048, 1408, 60, 4},
    {"Mixtral-8x7B (1/4 width)", 1024, 4096, 3584, 8, 2},
    {"Mixtral-8x7B (1/4 width)", 2048, 4096, 3584, 8, 2},
};
static const shape_t quick_shapes[] = {
    {"small", 64, 512, 256, 8, 2},
};

typedef struct collected {
  xr_op_result_t r[4];
  size_t n;
} collected_t;

static void collect(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  (void)position, (void)count;
  collected_t *c = ctx;
  if (c->n < 4) c->r[c->n++] = *r;
}

static void tensor(char **p, const char *name, const char *dtype, int64_t a, int64_t b, int64_t c,
                   int rank) {
  if (rank == 2)
    *p += sprintf(*p, "{\"arg_name\": \"%s\", \"arg_type\": \"Tensor\", \"value\": {\"dtype\": \"%s\", "
                      "\"shape\": [%lld, %lld], \"strides\": [%lld, 1]}}",
                  name, dtype, (long long)a, (long long)b, (long long)b);
  else
    *p += sprintf(*p, "{\"arg_name\": \"%s\", \"arg_type\": \"Tensor\", \"value\": {\"dtype\": \"%s\", "
                      "\"shape\": [%lld, %lld, %lld], \"strides\": [%lld, %lld, 1]}}",
                  name, dtype, (long long)a, (long long)b, (long long)c, (long long)(b * c),
                  (long long)c);
}

/* copy_ of 512 MiB; linear(x [R, K], w1 [2N, K]); linear(h [R, N], w2 [K, N]); fused experts. */
static char *bundle_json(const shape_t *s, const char *dtype) {
  char *text = malloc(8192), *p = text;
  int64_t R = s->M * s->topk, copy_rows = (int64_t)512 << 20 >> 12; /* rows of 2048 bf16 */
  p += sprintf(p, "[{\"op_name\": \"aten::copy_\", \"replay_ir\": {\"list_pos_args\": [");
  tensor(&p, "self", dtype, copy_rows, 2048, 0, 2);
  p += sprintf(p, ", ");
  tensor(&p, "src", dtype, copy_rows, 2048, 0, 2);
  p += sprintf(p, "], \"list_kwargs\": []}}, {\"op_name\": \"aten::linear\", \"replay_ir\": {\"list_pos_args\": [");
  tensor(&p, "input", dtype, R, s->K, 0, 2);
  p += sprintf(p, ", ");
  tensor(&p, "weight", dtype, 2 * s->N, s->K, 0, 2);
  p += sprintf(p, "], \"list_kwargs\": []}}, {\"op_name\": \"aten::linear\", \"replay_ir\": {\"list_pos_args\": [");
  tensor(&p, "input", dtype, R, s->N, 0, 2);
  p += sprintf(p, ", ");
  tensor(&p, "weight", dtype, s->K, s->N, 0, 2);
  p += sprintf(p, "], \"list_kwargs\": []}}, {\"op_name\": \"vllm::outplace_fused_experts\", "
                  "\"replay_ir\": {\"list_pos_args\": [");
  tensor(&p, "hidden_states", dtype, s->M, s->K, 0, 2);
  p += sprintf(p, ", ");
  tensor(&p, "w1", dtype, s->E, 2 * s->N, s->K, 3);
  p += sprintf(p, ", ");
  tensor(&p, "w2", dtype, s->E, s->K, s->N, 3);
  p += sprintf(p, ", ");
  tensor(&p, "topk_weights", "float", s->M, s->topk, 0, 2);
  p += sprintf(p, ", ");
  tensor(&p, "topk_ids", "int", s->M, s->topk, 0, 2);
  p += sprintf(p, "], \"list_kwargs\": []}}]");
  return text;
}

/* vllm::moe_forward with GPT-OSS's layer (biases, swigluoai), mxfp4 weights then bf16. */
static char *gpt_oss_json(const shape_t *s) {
  char *text = malloc(16384), *p = text;
  for (int mx = 1; mx >= 0; mx--) {
    const char *wd = mx ? "c10::Float4_e2m1fn_x2" : "c10::BFloat16";
    int64_t div = mx ? 2 : 1;
    p += sprintf(p, "%s{\"op_name\": \"vllm::moe_forward\", \"replay_ir\": {\"list_pos_args\": [", mx ? "[" : ", ");
    tensor(&p, "hidden_states", "c10::BFloat16", s->M, s->K, 0, 2);
    p += sprintf(p, ", ");
    tensor(&p, "router_logits", "c10::BFloat16", s->M, s->E, 0, 2);
    p += sprintf(p, ", ");
    tensor(&p, "w1", wd, s->E, 2 * s->N, s->K / div, 3);
    p += sprintf(p, ", ");
    tensor(&p, "w1_bias", "c10::BFloat16", s->E, 2 * s->N, 0, 2);
    p += sprintf(p, ", ");
    tensor(&p, "w2", wd, s->E, s->K, s->N / div, 3);
    p += sprintf(p, ", ");
    tensor(&p, "w2_bias", "c10::BFloat16", s->E, s->K, 0, 2);
    if (mx) {
      p += sprintf(p, ", ");
      tensor(&p, "w1_scale", "c10::Float8_e8m0fnu", s->E, 2 * s->N, s->K / 32, 3);
      p += sprintf(p, ", ");
      tensor(&p, "w2_scale", "c10::Float8_e8m0fnu", s->E, s->K, s->N / 32, 3);
    }
    p += sprintf(p, ", {\"arg_name\": \"top_k\", \"arg_type\": \"int\", \"value\": %lld}, {\"arg_name\": "
                    "\"activation\", \"arg_type\": \"str\", \"value\": \"swigluoai\"}], \"list_kwargs\": []}}",
                 (long long)s->topk);
  }
  p += sprintf(p, "]");
  return text;
}

static const shape_t gpt_oss_shapes[] = {
    {"GPT-OSS-20B", 1024, 2880, 2880, 32, 4},
    {"GPT-OSS-20B", 4096, 2880, 2880, 32, 4},
};
static const shape_t gpt_oss_quick[] = {
    {"small", 64, 512, 256, 8, 2},
};

/* mxfp4 against bf16 weights, per device. */
static int run_gpt_oss(const char *devices, int iters, bool quick) {
  const shape_t *shapes = quick ? gpt_oss_quick : gpt_oss_shapes;
  size_t count = quick ? 1 : sizeof gpt_oss_shapes / sizeof *gpt_oss_shapes;
  printf("\n%-26s %5s %5s %6s %4s %4s %-7s | %-14s %9s %8s | %9s %8s | %6s\n", "moe_forward layer", "M", "K",
         "N", "E", "top", "device", "kernel", "mxfp4 ms", "GFLOP/s", "bf16 ms", "GFLOP/s", "ratio");
  char list[256];
  for (size_t i = 0; i < count; i++) {
    const shape_t *s = &shapes[i];
    char *json = gpt_oss_json(s);
    xr_bundle_t *b;
    if (xr_bundle_decode((const uint8_t *)json, strlen(json), "moe_bench", ".", NULL, &b) != XR_OK) {
      fprintf(stderr, "moe_bench: %s\n", xr_last_error());
      free(json);
      return 1;
    }
    free(json);
    snprintf(list, sizeof list, "%s", devices);
    for (char *save = NULL, *dev = strtok_r(list, ",", &save); dev; dev = strtok_r(NULL, ",", &save)) {
      xr_replay_options_t o;
      xr_replay_options_default(&o);
      o.device = dev;
      o.warmup = 1;
      o.iters = iters;
      collected_t c = {.n = 0};
      xr_replay_observer_t observer = {.result = collect, .context = &c};
      printf("%-26s %5lld %5lld %6lld %4lld %4lld %-7s | ", s->model, (long long)s->M, (long long)s->K,
             (long long)s->N, (long long)s->E, (long long)s->topk, dev);
      if (xr_replay_run(b, &o, &observer, NULL) != XR_OK || c.n != 2) {
        printf("unavailable: %s\n", xr_last_error());
        continue;
      }
      if (c.r[0].outcome != XR_OP_SUCCEEDED || c.r[1].outcome != XR_OP_SUCCEEDED) {
        const xr_op_result_t *bad = c.r[0].outcome != XR_OP_SUCCEEDED ? &c.r[0] : &c.r[1];
        printf("%s: %s\n", xr_op_outcome_name(bad->outcome), bad->message);
        continue;
      }
      double mx = c.r[0].flops / (c.r[0].median_us * 1e-6) / 1e9, bf = c.r[1].flops / (c.r[1].median_us * 1e-6) / 1e9;
      printf("%-14s %9.2f %8.1f | %9.2f %8.1f | %5.0f%%\n", c.r[0].kernel, c.r[0].median_us / 1e3, mx,
             c.r[1].median_us / 1e3, bf, 100.0 * mx / bf);
      fflush(stdout);
    }
    xr_bundle_destroy(b);
  }
  return 0;
}

/* The GEMM implementation the registry picks for op 1 on `device`, or NULL. */
static const char *gemm_kernel(const xr_bundle_t *b, const char *device) {
  static char name[64];
  xr_hal_device_t *dev;
  if (xr_hal_device_create(device, &dev) != XR_OK) return NULL;
  xr_op_plan_t plan;
  const xr_kernel_impl_t *impl;
  const char *out = NULL;
  if (xr_kernel_plan(&b->ops[1], &plan) == XR_OK) {
    if (xr_kernel_select(&plan, dev, XR_KERNEL_BEST, &impl) == XR_OK) {
      snprintf(name, sizeof name, "%s", xr_kernel_impl_name(impl));
      out = name;
    }
    xr_kernel_plan_free(&plan);
  }
  xr_hal_device_destroy(dev);
  return out;
}

int main(int argc, char **argv) {
  const char *devices = "cpu,opencl";
  int iters = 5;
  bool quick = false;
  int only = -1;
  bool gpt_oss_only = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--devices") && i + 1 < argc) devices = argv[++i];
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quick")) quick = true;
    else if (!strcmp(argv[i], "--shape") && i + 1 < argc) only = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--gpt-oss")) gpt_oss_only = true;
    else {
      fprintf(stderr, "usage: moe_bench [--devices cpu,opencl] [--iters N] [--quick] [--shape I] [--gpt-oss]\n");
      return 2;
    }
  }
  if (gpt_oss_only) return run_gpt_oss(devices, iters, quick);
  const shape_t *shapes = quick ? quick_shapes : full_shapes;
  size_t count = quick ? sizeof quick_shapes / sizeof *quick_shapes : sizeof full_shapes / sizeof *full_shapes;
  printf("%-26s %5s %5s %6s %4s %4s %-7s | %-14s %9s %8s | %-18s %9s %8s | %6s | %5s %7s\n", "model",
         "M", "K", "N", "E", "top", "device", "fused kernel", "ms", "GFLOP/s", "GEMM kernel", "ms",
         "GFLOP/s", "ratio", "GB/s", "of roof");
  char list[256];
  snprintf(list, sizeof list, "%s", devices);
  for (size_t i = 0; i < count; i++) {
    if (only >= 0 && (size_t)only != i) continue;
    const shape_t *s = &shapes[i];
    char *json = bundle_json(s, "c10::BFloat16");
    xr_bundle_t *b;
    if (xr_bundle_decode((const uint8_t *)json, strlen(json), "moe_bench", ".", NULL, &b) != XR_OK) {
      fprintf(stderr, "moe_bench: %s\n", xr_last_error());
      return 1;
    }
    free(json);
    for (char *save = NULL, *dev = strtok_r(list, ",", &save); dev; dev = strtok_r(NULL, ",", &save)) {
      const char *gemm = gemm_kernel(b, dev);
      bool baseline = gemm && strncmp(gemm, "ref.", 4) != 0;
      xr_replay_options_t o;
      xr_replay_options_default(&o);
      o.device = dev;
      o.warmup = 1;
      o.iters = iters;
      o.op_filter = baseline ? NULL : "fused_experts"; /* no baseline: skip the slow reference GEMMs */
      collected_t c = {.n = 0};
      xr_replay_observer_t observer = {.result = collect, .context = &c};
      xr_status_t st = xr_replay_run(b, &o, &observer, NULL);
      if (st != XR_OK) {
        printf("%-26s %5lld %5lld %6lld %4lld %4lld %-7s | unavailable: %s\n", s->model, (long long)s->M,
               (long long)s->K, (long long)s->N, (long long)s->E, (long long)s->topk, dev, xr_last_error());
        continue;
      }
      const xr_op_result_t *fused = &c.r[c.n - 1];
      double gemm_ms = 0, gemm_flops = 0;
      bool gemm_ok = baseline && c.n == 4 && c.r[0].outcome == XR_OP_SUCCEEDED;
      for (size_t k = 1; gemm_ok && k < 3; k++) {
        gemm_ok = c.r[k].outcome == XR_OP_SUCCEEDED;
        gemm_ms += c.r[k].median_us / 1e3;
        gemm_flops += c.r[k].flops;
      }
      printf("%-26s %5lld %5lld %6lld %4lld %4lld %-7s | ", s->model, (long long)s->M, (long long)s->K,
             (long long)s->N, (long long)s->E, (long long)s->topk, dev);
      if (fused->outcome != XR_OP_SUCCEEDED) {
        printf("%s: %s\n", xr_op_outcome_name(fused->outcome), fused->message);
        continue;
      }
      double fused_rate = fused->flops / (fused->median_us * 1e-6) / 1e9;
      printf("%-14s %9.2f %8.1f | ", fused->kernel, fused->median_us / 1e3, fused_rate);
      if (gemm_ok) {
        double gemm_rate = gemm_flops / (gemm_ms * 1e-3) / 1e9;
        double copy_rate = c.r[0].gbps * 1e9; /* bytes/s */
        double floor_s = fused->flops / (gemm_rate * 1e9);
        if (fused->bytes / copy_rate > floor_s) floor_s = fused->bytes / copy_rate;
        printf("%-18s %9.2f %8.1f | %5.0f%% | %5.1f %6.0f%%\n", c.r[1].kernel, gemm_ms, gemm_rate,
               100.0 * fused_rate / gemm_rate, c.r[0].gbps,
               100.0 * floor_s / (fused->median_us * 1e-6));
      } else {
        printf("%-18s %9s %8s | %6s\n", gemm ? gemm : "none", "-", "-", "n/a");
      }
      fflush(stdout);
    }
    snprintf(list, sizeof list, "%s", devices);
    xr_bundle_destroy(b);
  }
  return only >= 0 ? 0 : run_gpt_oss(devices, iters, quick);
}
