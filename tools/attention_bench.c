/* attention_bench: dense attention in FLOP/s, paged-attention decode and vLLM's unified
 * attention (a decode-heavy mixed batch, cache write included) in GB/s on every
 * available device (cpu, opencl, cuda, hip), each as a fraction of two baselines measured in the same run
 * on the same device: an fp32 GEMM through the kernel registry (aten::mm, whatever
 * implementation the registry picks; its name is printed) — or, while the registry has only
 * the plain-C reference for the device, a simple blocked fp32 GEMM of this file on the cpu
 * driver (said so in the output) — and the device copy bandwidth (xr_hal_stream_copy, payload
 * bytes per second as tools/hal_bench counts them).
 *
 *   bazel run -c opt //tools:attention_bench -- [--device cpu|opencl|cuda|hip] [--quick] [--case TEXT]
 *
 * --case keeps the rows whose case name contains TEXT ("causal", "unified", "Half NHD"; the
 * baselines always run), so a frozen-machine run of one row stays short.
 *
 * The ops run through the replay engine (plan, initializers, event-timed iterations): what a
 * user's replay measures. Rates are at the median time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "kernels/kernels.h"
#include "replay/replay.h"

/* The blocked GEMM's vectors never cross a call whose ABI the clones could disagree on. */
#pragma GCC diagnostic ignored "-Wpsabi"

typedef struct measured {
  bool ok;
  char kernel[256];
  double median_us, flops, bytes;
} measured_t;

static void collect(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  (void)position, (void)count;
  measured_t *m = ctx;
  m->ok = r->outcome == XR_OP_SUCCEEDED;
  snprintf(m->kernel, sizeof m->kernel, "%.200s", m->ok ? r->kernel : r->message);
  m->median_us = r->median_us;
  m->flops = r->flops;
  m->bytes = r->bytes;
}

static measured_t run_json(const char *json, const char *device, int iters) {
  measured_t m = {0};
  xr_bundle_t *b;
  if (xr_bundle_decode((const uint8_t *)json, strlen(json), "bench", ".", NULL, &b) != XR_OK) {
    snprintf(m.kernel, sizeof m.kernel, "%s", xr_last_error());
    return m;
  }
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = device;
  o.warmup = 1;
  o.iters = iters;
  xr_replay_observer_t observer = {.result = collect, .context = &m};
  if (xr_replay_run(b, &o, &observer, NULL) != XR_OK) snprintf(m.kernel, sizeof m.kernel, "%s", xr_last_error());
  xr_bundle_destroy(b);
  return m;
}

#define HEADER "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{"
#define T(name, type, shape, strides, dtype, extra)                                               \
  "{\"name\": \"" name "\", \"type\": \"" type "\", \"value\": {\"shape\": " shape ", \"strides\": " \
  strides ", \"dtype\": \"" dtype "\"" extra "}}"

/* fp32 GEMM 2048^3 through the registry. */
static const char *gemm_json =
    HEADER "\"name\": \"aten::mm\", \"args\": [" T("self", "Tensor", "[2048, 2048]", "[2048, 1]", "float", "") ", " T(
        "mat2", "Tensor", "[2048, 2048]", "[2048, 1]", "float", "") "]}]}";

/* The fallback baseline: C = A B, fp32 n x n, blocked 4 rows x 64 columns in registers and 256
 * k at a time (a 64 KiB panel of B), parallel over 64-column chunks on the cpu driver's pool;
 * compiled for AVX-512, AVX+FMA and a baseline like the attention kernel. */
typedef float vf __attribute__((vector_size(64)));

typedef struct blocked_gemm {
  const float *a, *b;
  float *c;
  int n;
} blocked_gemm_t;

__attribute__((target_clones("avx512f", "fma", "default"))) static void gemm_columns(
    void *ctx, size_t begin, size_t end) {
  const blocked_gemm_t *g = ctx;
  const int n = g->n;
  for (size_t chunk = begin; chunk < end; chunk++) {
    const int n0 = (int)chunk * 64;
    for (int k0 = 0; k0 < n; k0 += 256) {
      for (int r = 0; r + 4 <= n; r += 4) {
        vf c[4][4];
        for (int i = 0; i < 4; i++)
          for (int j = 0; j < 4; j++)
            if (k0) memcpy(&c[i][j], g->c + (size_t)(r + i) * n + n0 + 16 * j, sizeof(vf));
            else c[i][j] = (vf){0};
        for (int k = k0; k < k0 + 256 && k < n; k++) {
          vf b[4];
          memcpy(b, g->b + (size_t)k * n + n0, sizeof b);
          for (int i = 0; i < 4; i++) {
            float av = g->a[(size_t)(r + i) * n + k];
            for (int j = 0; j < 4; j++) c[i][j] += av * b[j];
          }
        }
        for (int i = 0; i < 4; i++)
          for (int j = 0; j < 4; j++) memcpy(g->c + (size_t)(r + i) * n + n0 + 16 * j, &c[i][j], sizeof(vf));
      }
    }
  }
}

/* FLOP/s of the blocked GEMM at n = 2048 on the cpu driver, best of 3 after a warm-up. */
static double blocked_gemm_rate(void) {
  const int n = 2048;
  xr_hal_device_t *dev;
  if (xr_hal_device_create("cpu", &dev) != XR_OK) return 0;
  xr_hal_stream_t *s = NULL;
  xr_hal_event_t *e0 = NULL, *e1 = NULL;
  size_t bytes = sizeof(float) * (size_t)n * (size_t)n;
  blocked_gemm_t g = {.a = malloc(bytes), .b = malloc(bytes), .c = malloc(bytes), .n = n};
  double best = 0;
  if (g.a && g.b && g.c && xr_hal_stream_create(dev, &s) == XR_OK && xr_hal_event_create(dev, &e0) == XR_OK &&
      xr_hal_event_create(dev, &e1) == XR_OK) {
    for (size_t i = 0; i < (size_t)n * (size_t)n; i++) {
      ((float *)g.a)[i] = (float)(i % 7) * 0.25f;
      ((float *)g.b)[i] = (float)(i % 5) * 0.5f;
    }
    for (int r = 0; r < 4; r++) {
      double ms = 0;
      if (xr_hal_event_record(e0, s) != XR_OK ||
          xr_hal_stream_enqueue_parallel(s, (size_t)n / 64, 1, gemm_columns, &g) != XR_OK ||
          xr_hal_event_record(e1, s) != XR_OK || xr_hal_event_elapsed_ms(e0, e1, &ms) != XR_OK)
        break;
      double rate = 2.0 * n * (double)n * n / (ms * 1e-3);
      if (r > 0 && rate > best) best = rate;
    }
  }
  free((void *)g.a);
  free((void *)g.b);
  free(g.c);
  xr_hal_event_destroy(e0);
  xr_hal_event_destroy(e1);
  xr_hal_stream_destroy(s);
  xr_hal_device_destroy(dev);
  return best;
}

/* The implementation the registry picks for the GEMM on `device`; "" when none. */
static void registry_gemm(const char *device, char *out, size_t n) {
  snprintf(out, n, "%s", "");
  xr_bundle_t *b;
  if (xr_bundle_decode((const uint8_t *)gemm_json, strlen(gemm_json), "gemm", ".", NULL, &b) != XR_OK) return;
  xr_hal_device_t *dev;
  xr_op_plan_t plan;
  const xr_kernel_impl_t *impl;
  if (xr_hal_device_create(device, &dev) == XR_OK) {
    if (xr_kernel_plan(&b->ops[0], &plan) == XR_OK) {
      if (xr_kernel_select(&plan, dev, XR_KERNEL_BEST, &impl) == XR_OK)
        snprintf(out, n, "%s", xr_kernel_impl_name(impl));
      xr_kernel_plan_free(&plan);
    }
    xr_hal_device_destroy(dev);
  }
  xr_bundle_destroy(b);
}

/* SDPA flash, B=1, H=16, S=1024, D=128, non-causal, [B, H, S, D] views of [B, S, H, D]. */
static void sdpa_json(char *buf, size_t n, const char *dtype, bool causal) {
  const char *shape = "[1, 16, 1024, 128]", *strides = "[2097152, 128, 2048, 1]";
  snprintf(buf, n,
           HEADER "\"name\": \"aten::_scaled_dot_product_flash_attention\", \"args\": ["
                  "{\"name\": \"query\", \"type\": \"Tensor\", \"value\": {\"shape\": %s, \"strides\": %s, \"dtype\": \"%s\"}}, "
                  "{\"name\": \"key\", \"type\": \"Tensor\", \"value\": {\"shape\": %s, \"strides\": %s, \"dtype\": \"%s\"}}, "
                  "{\"name\": \"value\", \"type\": \"Tensor\", \"value\": {\"shape\": %s, \"strides\": %s, \"dtype\": \"%s\"}}, "
                  "{\"name\": \"dropout_p\", \"type\": \"float\", \"value\": 0.0}, "
                  "{\"name\": \"is_causal\", \"type\": \"bool\", \"value\": %s}, "
                  "{\"name\": \"return_debug_mask\", \"type\": \"bool\", \"value\": false}], "
                  "\"kwargs\": [{\"name\": \"scale\", \"type\": \"float?\", \"value\": null}]}]}",
           shape, strides, dtype, shape, strides, dtype, shape, strides, dtype, causal ? "true" : "false");
}

/* vLLM paged_attention_v1 decode: 16 sequences of 2048 tokens, 32 query / 8 kv heads of 128,
 * block size 16 (cache of 2048 + 16 blocks). */
static void paged_json(char *buf, size_t n, const char *dtype) {
  bool f32 = !strcmp(dtype, "float");
  const char *kc = f32 ? "[2064, 8, 32, 16, 4]" : "[2064, 8, 16, 16, 8]";
  const char *kcs = f32 ? "[16384, 2048, 64, 4, 1]" : "[16384, 2048, 128, 8, 1]";
  snprintf(buf, n,
           HEADER "\"name\": \"_C::paged_attention_v1\", \"args\": ["
                  "{\"name\": \"out\", \"type\": \"Tensor(a!)\", \"value\": {\"shape\": [16, 32, 128], \"strides\": [4096, 128, 1], \"dtype\": \"%s\", \"init\": null}}, "
                  "{\"name\": \"query\", \"type\": \"Tensor\", \"value\": {\"shape\": [16, 32, 128], \"strides\": [4096, 128, 1], \"dtype\": \"%s\"}}, "
                  "{\"name\": \"key_cache\", \"type\": \"Tensor\", \"value\": {\"shape\": %s, \"strides\": %s, \"dtype\": \"%s\"}}, "
                  "{\"name\": \"value_cache\", \"type\": \"Tensor\", \"value\": {\"shape\": [2064, 8, 128, 16], \"strides\": [16384, 2048, 16, 1], \"dtype\": \"%s\"}}, "
                  "{\"name\": \"num_kv_heads\", \"type\": \"int\", \"value\": 8}, "
                  "{\"name\": \"scale\", \"type\": \"float\", \"value\": 0.08838834764831845}, "
                  "{\"name\": \"block_tables\", \"type\": \"Tensor\", \"value\": {\"shape\": [16, 128], \"strides\": [128, 1], \"dtype\": \"int\"}}, "
                  "{\"name\": \"seq_lens\", \"type\": \"Tensor\", \"value\": {\"shape\": [16], \"strides\": [1], \"dtype\": \"int\"}}, "
                  "{\"name\": \"block_size\", \"type\": \"int\", \"value\": 16}, "
                  "{\"name\": \"max_seq_len\", \"type\": \"int\", \"value\": 2048}, "
                  "{\"name\": \"alibi_slopes\", \"type\": \"Tensor?\", \"value\": null}, "
                  "{\"name\": \"kv_cache_dtype\", \"type\": \"str\", \"value\": \"auto\"}, "
                  "{\"name\": \"k_scale\", \"type\": \"Tensor\", \"value\": {\"shape\": [1], \"strides\": [1], \"dtype\": \"float\", \"init\": \"ones\"}}, "
                  "{\"name\": \"v_scale\", \"type\": \"Tensor\", \"value\": {\"shape\": [1], \"strides\": [1], \"dtype\": \"float\", \"init\": \"ones\"}}, "
                  "{\"name\": \"tp_rank\", \"type\": \"int\", \"value\": 0}, "
                  "{\"name\": \"blocksparse_local_blocks\", \"type\": \"int\", \"value\": 0}, "
                  "{\"name\": \"blocksparse_vert_stride\", \"type\": \"int\", \"value\": 0}, "
                  "{\"name\": \"blocksparse_block_size\", \"type\": \"int\", \"value\": 64}, "
                  "{\"name\": \"blocksparse_head_sliding_step\", \"type\": \"int\", \"value\": 0}], \"kwargs\": []}]}",
           dtype, dtype, kc, kcs, dtype, dtype);
}

/* vLLM unified_attention_with_output, decode-heavy: 16 decode sequences of 2048 keys and one
 * 64-token prompt, as the trace hints of such an iteration say; 32 query / 8 kv heads of 128.
 * The replay supplies the cache (vLLM FlashAttention's default NHD layout), block table and
 * lengths (docs/replay.md); `hnd` passes instead a kv_cache of the same shape whose strides put
 * each kv head's block contiguous (VLLM_KV_CACHE_LAYOUT=HND), 2053 blocks as the replay sizes it. */
static void unified_json(char *buf, size_t n, const char *dtype, bool hnd) {
  char cache[512] = "";
  if (hnd)
    snprintf(cache, sizeof cache,
             "{\"name\": \"kv_cache\", \"type\": \"Tensor(a!)\", \"value\": {\"shape\": [2, 2053, 16, 8, 128], "
             "\"strides\": [33636352, 16384, 128, 2048, 1], \"dtype\": \"%s\"}}",
             dtype);
  snprintf(buf, n,
           HEADER "\"name\": \"vllm::unified_attention_with_output\", \"args\": ["
                  "{\"name\": \"query\", \"type\": \"Tensor\", \"value\": {\"shape\": [80, 32, 128], \"strides\": [4096, 128, 1], \"dtype\": \"%s\"}}, "
                  "{\"name\": \"key\", \"type\": \"Tensor\", \"value\": {\"shape\": [80, 8, 128], \"strides\": [1024, 128, 1], \"dtype\": \"%s\"}}, "
                  "{\"name\": \"value\", \"type\": \"Tensor\", \"value\": {\"shape\": [80, 8, 128], \"strides\": [1024, 128, 1], \"dtype\": \"%s\"}}, "
                  "{\"name\": \"output\", \"type\": \"Tensor(a!)\", \"value\": {\"shape\": [80, 32, 128], \"strides\": [4096, 128, 1], \"dtype\": \"%s\", \"init\": null}}, "
                  "{\"name\": \"layer_name\", \"type\": \"str\", \"value\": \"model.layers.0.self_attn.attn\"}, "
                  "{\"name\": \"output_scale\", \"type\": \"Tensor?\", \"value\": null}, "
                  "{\"name\": \"output_block_scale\", \"type\": \"Tensor?\", \"value\": null}], \"kwargs\": [%s], "
                  "\"hints\": {\"prefill_seqs\": 1, \"prefill_tokens\": 64, \"decode_seqs\": 16, \"decode_tokens\": 16, "
                  "\"prefill_context_tokens\": 64, \"decode_context_tokens\": 32768}}]}",
           dtype, dtype, dtype, dtype, cache);
}

/* Device copy bandwidth: best of 5 copies of 128 MiB between two device buffers, event-timed. */
static double copy_gbps(const char *device) {
  xr_hal_device_t *dev;
  if (xr_hal_device_create(device, &dev) != XR_OK) return 0;
  size_t bytes = (size_t)128 << 20;
  xr_hal_stream_t *s = NULL;
  xr_hal_event_t *e0 = NULL, *e1 = NULL;
  xr_hal_buffer_t *a = NULL, *b = NULL;
  double best = 0;
  uint8_t one = 1;
  if (xr_hal_stream_create(dev, &s) == XR_OK && xr_hal_event_create(dev, &e0) == XR_OK &&
      xr_hal_event_create(dev, &e1) == XR_OK && xr_hal_buffer_alloc(dev, bytes, &a) == XR_OK &&
      xr_hal_buffer_alloc(dev, bytes, &b) == XR_OK && xr_hal_buffer_fill(a, 0, bytes, &one, 1) == XR_OK &&
      xr_hal_buffer_fill(b, 0, bytes, &one, 1) == XR_OK) {
    for (int r = 0; r < 6; r++) {
      double ms = 0;
      if (xr_hal_event_record(e0, s) != XR_OK || xr_hal_stream_copy(s, b, 0, a, 0, bytes) != XR_OK ||
          xr_hal_event_record(e1, s) != XR_OK || xr_hal_event_elapsed_ms(e0, e1, &ms) != XR_OK)
        break;
      double gbps = (double)bytes / (ms * 1e-3) / 1e9;
      if (r > 0 && gbps > best) best = gbps; /* r == 0 warms up */
    }
  }
  xr_hal_buffer_free(a);
  xr_hal_buffer_free(b);
  xr_hal_event_destroy(e0);
  xr_hal_event_destroy(e1);
  xr_hal_stream_destroy(s);
  xr_hal_device_destroy(dev);
  return best;
}

/* One table row: the op's rate in FLOP/s as a share of the GEMM's (`flops`), or in GB/s as a
 * share of the copy's; `baseline` in the same unit per second (0: unknown, shown as 0%). */
static void print_row(const char *device, const char *what, const measured_t *m, bool flops, double baseline) {
  if (!m->ok) {
    printf("| %s | %s | failed: %s | | | |\n", device, what, m->kernel);
    return;
  }
  double rate = (flops ? m->flops : m->bytes) / (m->median_us * 1e-6);
  double share = baseline > 0 ? 100.0 * rate / baseline : 0;
  if (flops)
    printf("| %s | %s | %s | %.2f ms | %.1f GFLOP/s | %.0f%% of GEMM |\n", device, what, m->kernel,
           m->median_us / 1e3, rate / 1e9, share);
  else
    printf("| %s | %s | %s | %.2f ms | %.2f GB/s | %.0f%% of copy |\n", device, what, m->kernel,
           m->median_us / 1e3, rate / 1e9, share);
}

static const char *case_filter;

static bool wanted(const char *what) { return !case_filter || strstr(what, case_filter); }

static void bench_device(const char *device, bool quick) {
  int iters = quick ? 2 : (!strcmp(device, "opencl") ? 3 : 10);
  char impl[128], source[256];
  registry_gemm(device, impl, sizeof impl);
  double gemm_rate = 0;
  if (impl[0] && strncmp(impl, "ref.", 4)) {
    measured_t gemm = run_json(gemm_json, device, iters);
    gemm_rate = gemm.ok ? gemm.flops / (gemm.median_us * 1e-6) : 0;
    snprintf(source, sizeof source, "registry: %s", impl);
  } else {
    gemm_rate = blocked_gemm_rate();
    snprintf(source, sizeof source, "this file's blocked GEMM on the cpu driver; the registry has %s on %s",
             impl[0] ? impl : "no GEMM", device);
  }
  double copy = copy_gbps(device);
  printf("\n%s: baselines: fp32 GEMM 2048^3 %.1f GFLOP/s (%s); device copy %.2f GB/s (128 MiB)\n", device,
         gemm_rate / 1e9, source, copy);
  printf("\n| device | case | kernel | time | rate | vs baseline |\n|---|---|---|---|---|---|\n");
  static char json[8192];
  const struct {
    const char *what, *dtype;
    bool causal;
  } dense[] = {{"SDPA f32 1x16x1024x128", "float", false},
               {"SDPA bf16 1x16x1024x128", "c10::BFloat16", false},
               {"SDPA bf16 causal 1x16x1024x128", "c10::BFloat16", true}};
  for (size_t i = 0; i < sizeof dense / sizeof *dense; i++) {
    if (!wanted(dense[i].what)) continue;
    sdpa_json(json, sizeof json, dense[i].dtype, dense[i].causal);
    measured_t m = run_json(json, device, iters);
    print_row(device, dense[i].what, &m, true, gemm_rate);
  }
  const char *paged[] = {"c10::Half", "c10::BFloat16", "float"};
  char what[256];
  for (size_t i = 0; i < sizeof paged / sizeof *paged; i++) {
    snprintf(what, sizeof what, "paged v1 decode %s 16x2048 tokens, 32/8 heads of 128", paged[i]);
    if (!wanted(what)) continue;
    paged_json(json, sizeof json, paged[i]);
    measured_t m = run_json(json, device, iters);
    print_row(device, what, &m, false, copy * 1e9);
  }
  const struct {
    const char *dtype, *layout;
    bool hnd;
  } unified[] = {{"c10::Half", "NHD", false}, {"c10::BFloat16", "NHD", false}, {"c10::Half", "HND", true}};
  for (size_t i = 0; i < sizeof unified / sizeof *unified; i++) {
    snprintf(what, sizeof what,
             "vLLM unified_attention %s %s cache, 16 decode x 2048 keys + 1 prompt of 64, 32/8 heads of 128",
             unified[i].dtype, unified[i].layout);
    if (!wanted(what)) continue;
    unified_json(json, sizeof json, unified[i].dtype, unified[i].hnd);
    measured_t m = run_json(json, device, iters);
    print_row(device, what, &m, false, copy * 1e9);
  }
}

int main(int argc, char **argv) {
  const char *only = NULL;
  bool quick = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--device") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--quick")) quick = true;
    else if (!strcmp(argv[i], "--case") && i + 1 < argc) case_filter = argv[++i];
    else {
      fprintf(stderr, "usage: attention_bench [--device cpu|opencl|cuda|hip] [--quick] [--case TEXT]\n");
      return 2;
    }
  }
  const char *devices[] = {"cpu", "opencl", "cuda", "hip"};
  for (size_t i = 0; i < sizeof devices / sizeof *devices; i++) {
    if (only && strcmp(only, devices[i])) continue;
    xr_hal_device_t *dev;
    if (xr_hal_device_create(devices[i], &dev) != XR_OK) {
      printf("%s: unavailable: %s\n", devices[i], xr_last_error());
      continue;
    }
    xr_hal_device_destroy(dev);
    bench_device(devices[i], quick);
  }
  return 0;
}
