/* Pooling, upsampling and batch norm at ResNet-50 and Stable Diffusion VAE shapes on the cpu
 * driver: the replay path (the kernel the engine picks: oneDNN's primitive where it computes
 * the op as PyTorch does, cpu.onednn_pool / cpu.onednn_batch_norm) next to our own fp32 kernel
 * of the family (cpu.pool / cpu.channel_norm) on the same op in the same run. Not a test:
 *   bazel run -c opt //tools:vision_bench [-- --op SUBSTRING] [-- --dtype fp32|bf16] [-- --layout
 * nchw|nhwc]
 *
 * GB/s count the bytes each op must move (the activations read and written once); every column
 * is the best of 3 batches of at least 0.2 s after 2 warm-ups (tools/op_timing.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/channel_norm.h"
#include "kernels/pool.h"
#include "tools/op_timing.h"

typedef enum kind { AVG, ADAPTIVE, NEAREST, BILINEAR, BN_TRAIN, BN_EVAL, BN_BACKWARD } kind_t;

typedef struct vision_shape {
  const char *label;
  kind_t kind;
  int64_t n, c, h, w;
  int64_t k, stride, pad; /* avg pooling */
  bool exclude_pad;
  int64_t oh, ow; /* adaptive pooling, upsampling */
} vision_shape_t;

#define SHAPE4(N, C, H, W) .n = N, .c = C, .h = H, .w = W
static const vision_shape_t shapes[] = {
    {"ResNet-D shortcut avg_pool2d 2x2/2", AVG, SHAPE4(8, 256, 56, 56), .k = 2, .stride = 2},
    {"Inception avg_pool2d 3x3/1, padding not counted", AVG, SHAPE4(8, 192, 28, 28), .k = 3,
     .stride = 1, .pad = 1, .exclude_pad = true},
    {"ResNet-50 head adaptive_avg_pool2d -> 1x1", ADAPTIVE, SHAPE4(32, 2048, 7, 7), .oh = 1,
     .ow = 1},
    {"SD VAE decoder upsample_nearest2d x2", NEAREST, SHAPE4(1, 512, 64, 64), .oh = 128, .ow = 128},
    {"upsample_bilinear2d x2", BILINEAR, SHAPE4(1, 256, 64, 64), .oh = 128, .ow = 128},
    {"ResNet-50 layer1 native_batch_norm (training)", BN_TRAIN, SHAPE4(8, 256, 56, 56)},
    {"ResNet-50 layer1 native_batch_norm (eval)", BN_EVAL, SHAPE4(8, 256, 56, 56)},
    {"ResNet-50 layer1 native_batch_norm_backward", BN_BACKWARD, SHAPE4(8, 256, 56, 56)},
};

/* An activation [n, c, h, w], NCHW or channels-last. */
static int activation(char *out, size_t size, const char *dtype, int64_t n, int64_t c, int64_t h,
                      int64_t w, bool nhwc) {
  char strides[128] = "";
  if (nhwc)
    snprintf(strides, sizeof strides, ", \"strides\": [%lld, 1, %lld, %lld]",
             (long long)(h * w * c), (long long)(w * c), (long long)c);
  return snprintf(out, size, "{\"dtype\": \"%s\", \"shape\": [%lld, %lld, %lld, %lld]%s}", dtype,
                  (long long)n, (long long)c, (long long)h, (long long)w, strides);
}

#define ARG(name, type, fmt, ...)                                                          \
  at += snprintf(args + at, sizeof args - at,                                              \
                 "%s{\"name\": \"" name "\", \"type\": \"" type "\", \"value\": " fmt "}", \
                 at ? ", " : "", __VA_ARGS__)

static const char *op_name(kind_t k) {
  static const char *const names[] = {"aten::avg_pool2d",
                                      "aten::adaptive_avg_pool2d",
                                      "aten::upsample_nearest2d",
                                      "aten::upsample_bilinear2d",
                                      "aten::native_batch_norm",
                                      "aten::native_batch_norm",
                                      "aten::native_batch_norm_backward"};
  return names[k];
}

/* The op as a replay sees it; returns the bytes it must move. */
static double op_json(const vision_shape_t *s, const char *dtype, size_t esize, bool nhwc,
                      char *out, size_t size) {
  char x[256], g[256], args[4096];
  size_t at = 0;
  activation(x, sizeof x, dtype, s->n, s->c, s->h, s->w, nhwc);
  double in_bytes = (double)(s->n * s->c * s->h * s->w) * (double)esize, out_bytes = in_bytes;
  const char *vec = "{\"dtype\": \"float\", \"shape\": [%lld]}";
  char v[64];
  snprintf(v, sizeof v, vec, (long long)s->c);
  switch (s->kind) {
    case AVG: {
      int64_t oh = (s->h + 2 * s->pad - s->k) / s->stride + 1;
      int64_t ow = (s->w + 2 * s->pad - s->k) / s->stride + 1;
      out_bytes = (double)(s->n * s->c * oh * ow) * (double)esize;
      ARG("self", "Tensor", "%s", x);
      ARG("kernel_size", "int[2]", "[%lld, %lld]", (long long)s->k, (long long)s->k);
      ARG("stride", "int[2]", "[%lld, %lld]", (long long)s->stride, (long long)s->stride);
      ARG("padding", "int[2]", "[%lld, %lld]", (long long)s->pad, (long long)s->pad);
      ARG("ceil_mode", "bool", "%s", "false");
      ARG("count_include_pad", "bool", "%s", s->exclude_pad ? "false" : "true");
      ARG("divisor_override", "int?", "%s", "null");
      break;
    }
    case ADAPTIVE:
    case NEAREST:
    case BILINEAR:
      out_bytes = (double)(s->n * s->c * s->oh * s->ow) * (double)esize;
      ARG("self", "Tensor", "%s", x);
      ARG("output_size", "SymInt[2]", "[%lld, %lld]", (long long)s->oh, (long long)s->ow);
      if (s->kind == BILINEAR) ARG("align_corners", "bool", "%s", "false");
      break;
    case BN_TRAIN:
    case BN_EVAL:
      ARG("input", "Tensor", "%s", x);
      ARG("weight", "Tensor?", "%s", v);
      ARG("bias", "Tensor?", "%s", v);
      ARG("running_mean", "Tensor(a!)?", "%s", v);
      ARG("running_var", "Tensor(b!)?", "%s", v);
      ARG("training", "bool", "%s", s->kind == BN_TRAIN ? "true" : "false");
      ARG("momentum", "float", "%g", 0.1);
      ARG("eps", "float", "%g", 1e-5);
      if (s->kind == BN_TRAIN) in_bytes *= 2; /* the statistics' pass, then the normalisation's */
      break;
    case BN_BACKWARD:
      memcpy(g, x, sizeof g);
      ARG("grad_out", "Tensor", "%s", g);
      ARG("input", "Tensor", "%s", x);
      ARG("weight", "Tensor?", "%s", v);
      ARG("running_mean", "Tensor?", "%s", v);
      ARG("running_var", "Tensor?", "%s", v);
      ARG("save_mean", "Tensor?", "%s", v);
      ARG("save_invstd", "Tensor?", "%s", v);
      ARG("train", "bool", "%s", "true");
      ARG("eps", "float", "%g", 1e-5);
      ARG("output_mask", "bool[3]", "%s", "[true, true, true]");
      in_bytes *= 4; /* grad_output and input, read for the sums and again for grad_input */
      break;
  }
  snprintf(out, size,
           "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": \"%s\", "
           "\"args\": [%s]}]}",
           op_name(s->kind), args);
  return in_bytes + out_bytes;
}

int main(int argc, char **argv) {
  const char *only_op = NULL, *only_dtype = NULL, *only_layout = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--op") && i + 1 < argc)
      only_op = argv[++i];
    else if (!strcmp(argv[i], "--dtype") && i + 1 < argc)
      only_dtype = argv[++i];
    else if (!strcmp(argv[i], "--layout") && i + 1 < argc)
      only_layout = argv[++i];
    else {
      fprintf(stderr,
              "usage: vision_bench [--op SUBSTRING] [--dtype fp32|bf16] [--layout "
              "nchw|nhwc]\n");
      return 2;
    }
  }
  printf(
      "cpu driver: the replay path next to our own fp32 kernel of the family (GB/s, best of 3 "
      "batches)\n");
  printf(
      "| op | shape | input | dtype | replay kernel | replay GB/s | our kernel | GB/s | "
      "replay / ours |\n");
  printf("|---|---|---|---|---|---:|---|---:|---:|\n");
  const struct {
    const char *name, *spelling;
    size_t size;
  } dtypes[] = {{"fp32", "float", 4}, {"bf16", "c10::BFloat16", 2}};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    const vision_shape_t *s = &shapes[i];
    if (only_op && !strstr(s->label, only_op)) continue;
    bool norm = s->kind >= BN_TRAIN;
    const xr_kernel_impl_t *ours = norm ? &xr_cpu_channel_norm_impl : &xr_cpu_pool_impl;
    for (int layout = 0; layout < 2; layout++) {
      if (only_layout && strcmp(only_layout, layout ? "nhwc" : "nchw")) continue;
      for (size_t t = 0; t < 2; t++) {
        if (only_dtype && strcmp(only_dtype, dtypes[t].name)) continue;
        char json[8192], kernel[64] = "?", own[64] = "?";
        double bytes =
            op_json(s, dtypes[t].spelling, dtypes[t].size, layout == 1, json, sizeof json);
        double replay = op_time_seconds(json, "cpu", kernel, sizeof kernel);
        double mine = op_time_impl_seconds(json, "cpu", ours, own, sizeof own);
        printf("| %s | [%lld,%lld,%lld,%lld] | %s | %s | %s | %.1f | %s | %.1f | %.2f |\n",
               s->label, (long long)s->n, (long long)s->c, (long long)s->h, (long long)s->w,
               layout ? "channels-last" : "NCHW", dtypes[t].name, kernel,
               replay > 0 ? bytes / replay * 1e-9 : 0, own, mine > 0 ? bytes / mine * 1e-9 : 0,
               replay > 0 && mine > 0 ? mine / replay : 0);
        fflush(stdout);
      }
    }
  }
  return 0;
}
