/* The convolution family's cases, written once and run on every driver through the engine with
 * --check against the CPU reference (CONV_MATRIX at the end, the conv_matrix_<driver> targets;
 * conv_test.c and tests/gpu/conv_gpu_test.c run them again with the vendor libraries off).
 * 1-D, 2-D and 3-D; stride, padding (numbers and "same"/"valid"), dilation, groups (depthwise included); channels-last and offset views; unbatched inputs; transposed
 * convolutions with output_padding; the names PyTorch dispatches to (cudnn, miopen, mkldnn,
 * conv2d) with their argument orders; convolution_backward with each output_mask, plain and
 * transposed; fp32, fp16 and bf16. */
#ifndef XR_TESTS_KERNELS_CONV_CASES_H
#define XR_TESTS_KERNELS_CONV_CASES_H

#include "tests/kernels/bundle_text.h"

typedef struct conv_case {
  const char *op; /* NULL: aten::convolution */
  const char *dtype;
  int spatial;
  int64_t n;           /* 0: unbatched */
  int64_t c_in, c_out; /* the op's input and output channels */
  int64_t in[3], k[3]; /* spatial sizes (the first `spatial` entries) */
  int64_t stride, pad, dilation, groups;
  int64_t stride_h;    /* non-zero: the second spatial dim's stride differs (2-D) */
  const char *padding; /* "same" or "valid" (aten::conv2d.padding), else numbers */
  bool bias, transposed, channels_last;
  int64_t output_padding, offset;
  /* aten::convolution_backward: true, with the mask of (grad_input, grad_weight, grad_bias). */
  bool backward;
  bool mask[3];
} conv_case_t;

/* The op's spatial output size in dim d. */
static inline int64_t conv_out_size(const conv_case_t *c, int d) {
  int64_t s = d == 1 && c->stride_h ? c->stride_h : c->stride;
  int64_t span = c->dilation * (c->k[d] - 1);
  if (c->transposed) return (c->in[d] - 1) * s - 2 * c->pad + span + c->output_padding + 1;
  if (c->padding && !strcmp(c->padding, "same")) return c->in[d];
  int64_t pad = c->padding ? 0 : c->pad;
  return s > 0 ? (c->in[d] + 2 * pad - span - 1) / s + 1 : 1; /* stride 0: a malformed case */
}

/* A list argument of `spatial` entries, the second (2-D) `second` when non-zero. */
static inline void conv_list(text_t *t, const char *name, int spatial, int64_t v, int64_t second,
                             bool comma) {
  put(t, "%s{\"name\": \"%s\", \"type\": \"int[]\", \"value\": [", comma ? ", " : "", name);
  for (int d = 0; d < spatial; d++)
    put(t, "%s%lld", d ? ", " : "", (long long)(d == 1 && second ? second : v));
  put(t, "]}");
}

/* An activation-like tensor argument: [n, c, sizes...] (or [c, sizes...] unbatched). */
static inline void conv_activation(text_t *t, const conv_case_t *c, const char *name, int64_t ch,
                                   const int64_t *sizes, bool comma) {
  int64_t shape[5], strides[5];
  int rank = 0;
  if (c->n) shape[rank++] = c->n;
  shape[rank++] = ch;
  for (int d = 0; d < c->spatial; d++) shape[rank++] = sizes[d];
  bool cl = c->channels_last && c->n;
  if (cl) channels_last_strides(rank, shape, strides);
  text_t v = {.n = 0};
  tensor(&v, c->dtype, rank, shape, cl ? strides : NULL, c->offset);
  put(t, "%s{\"name\": \"%s\", \"type\": \"Tensor\", \"value\": %s}", comma ? ", " : "", name, v.s);
}

static inline const char *conv_json(const conv_case_t *c) {
  static text_t args;
  args.n = 0;
  text_t w = {.n = 0}, b = {.n = 0};
  int64_t wshape[5] = {c->transposed ? c->c_in : c->c_out,
                       (c->transposed ? c->c_out : c->c_in) / c->groups};
  for (int d = 0; d < c->spatial; d++) wshape[2 + d] = c->k[d];
  tensor(&w, c->dtype, c->spatial + 2, wshape, NULL, 0);
  tensor(&b, c->dtype, 1, SHAPE(c->c_out), NULL, 0);
  const char *op = c->op ? c->op : c->backward ? "aten::convolution_backward" : "aten::convolution";
  int64_t out[3];
  for (int d = 0; d < c->spatial; d++) out[d] = conv_out_size(c, d);
  const char *bias = c->bias ? b.s : "null";
  if (c->backward) {
    conv_activation(&args, c, "grad_output", c->c_out, out, false);
    conv_activation(&args, c, "input", c->c_in, c->in, true);
    put(&args, ", {\"name\": \"weight\", \"type\": \"Tensor\", \"value\": %s}", w.s);
    put(&args, ", {\"name\": \"bias_sizes\", \"type\": \"SymInt[]?\", \"value\": [%lld]}",
        (long long)(c->mask[2] ? c->c_out : 0));
  } else {
    conv_activation(
        &args, c,
        strstr(op, "cudnn") || strstr(op, "miopen") || strstr(op, "mkldnn") ? "self" : "input",
        c->c_in, c->in, false);
    put(&args, ", {\"name\": \"weight\", \"type\": \"Tensor\", \"value\": %s}", w.s);
  }
  bool plain = !strcmp(op, "aten::convolution") || c->backward;
  if (plain) {
    if (!c->backward)
      put(&args, ", {\"name\": \"bias\", \"type\": \"Tensor?\", \"value\": %s}", bias);
    conv_list(&args, "stride", c->spatial, c->stride, c->stride_h, true);
    conv_list(&args, "padding", c->spatial, c->pad, 0, true);
    conv_list(&args, "dilation", c->spatial, c->dilation, 0, true);
    put(&args, ", {\"name\": \"transposed\", \"type\": \"bool\", \"value\": %s}",
        c->transposed ? "true" : "false");
    conv_list(&args, "output_padding", c->spatial, c->output_padding, 0, true);
    put(&args, ", {\"name\": \"groups\", \"type\": \"int\", \"value\": %lld}",
        (long long)c->groups);
    if (c->backward)
      put(&args, ", {\"name\": \"output_mask\", \"type\": \"bool[3]\", \"value\": [%s, %s, %s]}",
          c->mask[0] ? "true" : "false", c->mask[1] ? "true" : "false",
          c->mask[2] ? "true" : "false");
  } else if (strstr(op, "aten::conv") == op) { /* conv1d/2d/3d, maybe with a padding mode */
    put(&args, ", {\"name\": \"bias\", \"type\": \"Tensor?\", \"value\": %s}", bias);
    conv_list(&args, "stride", c->spatial, c->stride, c->stride_h, true);
    if (c->padding)
      put(&args, ", {\"name\": \"padding\", \"type\": \"str\", \"value\": \"%s\"}", c->padding);
    else
      conv_list(&args, "padding", c->spatial, c->pad, 0, true);
    conv_list(&args, "dilation", c->spatial, c->dilation, 0, true);
    put(&args, ", {\"name\": \"groups\", \"type\": \"int\", \"value\": %lld}",
        (long long)c->groups);
  } else { /* cudnn/miopen/mkldnn: padding before stride; cudnn's have no bias */
    if (!strstr(op, "cudnn"))
      put(&args, ", {\"name\": \"bias\", \"type\": \"Tensor?\", \"value\": %s}", bias);
    conv_list(&args, "padding", c->spatial, c->pad, 0, true);
    conv_list(&args, "stride", c->spatial, c->stride, c->stride_h, true);
    conv_list(&args, "dilation", c->spatial, c->dilation, 0, true);
    put(&args, ", {\"name\": \"groups\", \"type\": \"int\", \"value\": %lld}",
        (long long)c->groups);
  }
  return bundle(op, args.s, NULL);
}

#define F32 "float"
#define F16 "c10::Half"
#define BF16 "c10::BFloat16"

/* Forward cases: shapes from ResNet (stem, 3x3, 1x1, strided), SD's VAE and UNet (3x3 at 32
 * channels), MobileNet (depthwise), and the odd ones (1-D, 3-D, grouped and dilated, kernels of
 * unequal sides, padding modes, views). */
static const conv_case_t conv_forward_cases[] = {
    {.dtype = F32,
     .spatial = 2,
     .n = 2,
     .c_in = 8,
     .c_out = 16,
     .in = {13, 11},
     .k = {3, 3},
     .stride = 1,
     .pad = 1,
     .dilation = 1,
     .groups = 1,
     .bias = true},
    {.dtype = F16,
     .spatial = 2,
     .n = 1,
     .c_in = 6,
     .c_out = 12,
     .in = {15, 17},
     .k = {3, 3},
     .stride = 2,
     .pad = 1,
     .dilation = 1,
     .groups = 1},
    {.dtype = BF16,
     .spatial = 2,
     .n = 2,
     .c_in = 32,
     .c_out = 24,
     .in = {8, 8},
     .k = {1, 1},
     .stride = 1,
     .pad = 0,
     .dilation = 1,
     .groups = 1,
     .channels_last = true},
    {.dtype = F32,
     .spatial = 2,
     .n = 2,
     .c_in = 16,
     .c_out = 16,
     .in = {12, 12},
     .k = {3, 3},
     .stride = 1,
     .pad = 1,
     .dilation = 1,
     .groups = 16,
     .bias = true,
     .channels_last = true},
    {.dtype = F32,
     .spatial = 2,
     .n = 1,
     .c_in = 16,
     .c_out = 8,
     .in = {14, 10},
     .k = {3, 3},
     .stride = 1,
     .pad = 2,
     .dilation = 2,
     .groups = 4,
     .bias = true},
    {.dtype = F32,
     .spatial = 1,
     .n = 3,
     .c_in = 8,
     .c_out = 16,
     .in = {50},
     .k = {5},
     .stride = 2,
     .pad = 2,
     .dilation = 1,
     .groups = 1,
     .bias = true},
    {.dtype = F32,
     .spatial = 3,
     .n = 1,
     .c_in = 4,
     .c_out = 6,
     .in = {6, 7, 8},
     .k = {3, 3, 3},
     .stride = 1,
     .stride_h = 2,
     .pad = 1,
     .dilation = 1,
     .groups = 1,
     .bias = true},
    {.dtype = F32,
     .spatial = 2,
     .n = 0,
     .c_in = 8,
     .c_out = 8,
     .in = {9, 9},
     .k = {3, 3},
     .stride = 1,
     .pad = 1,
     .dilation = 1,
     .groups = 1,
     .bias = true},
    {.dtype = F32,
     .spatial = 2,
     .n = 1,
     .c_in = 3,
     .c_out = 16,
     .in = {32, 32},
     .k = {7, 7},
     .stride = 2,
     .pad = 3,
     .dilation = 1,
     .groups = 1},
    {.dtype = BF16,
     .spatial = 2,
     .n = 2,
     .c_in = 64,
     .c_out = 64,
     .in = {14, 14},
     .k = {3, 3},
     .stride = 1,
     .pad = 1,
     .dilation = 1,
     .groups = 1,
     .channels_last = true},
    {.dtype = F16,
     .spatial = 2,
     .n = 1,
     .c_in = 32,
     .c_out = 32,
     .in = {16, 16},
     .k = {3, 3},
     .stride = 1,
     .pad = 1,
     .dilation = 1,
     .groups = 1,
     .bias = true},
    {.dtype = F32,
     .spatial = 2,
     .n = 2,
     .c_in = 5,
     .c_out = 7,
     .in = {9, 16},
     .k = {2, 5},
     .stride = 1,
     .stride_h = 3,
     .pad = 1,
     .dilation = 1,
     .groups = 1,
     .bias = true,
     .offset = 7},
    {.op = "aten::conv2d",
     .dtype = F32,
     .spatial = 2,
     .n = 1,
     .c_in = 4,
     .c_out = 6,
     .in = {10, 11},
     .k = {4, 3},
     .stride = 1,
     .dilation = 2,
     .groups = 2,
     .padding = "same",
     .bias = true},
    {.op = "aten::conv2d",
     .dtype = F16,
     .spatial = 2,
     .n = 2,
     .c_in = 4,
     .c_out = 4,
     .in = {9, 9},
     .k = {3, 3},
     .stride = 2,
     .dilation = 1,
     .groups = 1,
     .padding = "valid"},
    {.op = "aten::conv1d",
     .dtype = BF16,
     .spatial = 1,
     .n = 2,
     .c_in = 16,
     .c_out = 16,
     .in = {40},
     .k = {4},
     .stride = 1,
     .pad = 3,
     .dilation = 1,
     .groups = 16,
     .bias = true},
    {.op = "aten::miopen_convolution",
     .dtype = BF16,
     .spatial = 2,
     .n = 2,
     .c_in = 16,
     .c_out = 32,
     .in = {14, 14},
     .k = {3, 3},
     .stride = 2,
     .pad = 1,
     .dilation = 1,
     .groups = 1},
    {.op = "aten::cudnn_convolution",
     .dtype = F16,
     .spatial = 2,
     .n = 1,
     .c_in = 8,
     .c_out = 8,
     .in = {10, 12},
     .k = {3, 3},
     .stride = 1,
     .stride_h = 2,
     .pad = 1,
     .dilation = 1,
     .groups = 2},
    {.op = "aten::mkldnn_convolution",
     .dtype = F32,
     .spatial = 3,
     .n = 1,
     .c_in = 3,
     .c_out = 4,
     .in = {5, 6, 5},
     .k = {2, 2, 2},
     .stride = 1,
     .pad = 0,
     .dilation = 1,
     .groups = 1,
     .bias = true},
    /* transposed: the SD VAE decoder's upsampling and a strided 1-D one */
    {.dtype = F32,
     .spatial = 2,
     .n = 1,
     .c_in = 8,
     .c_out = 4,
     .in = {7, 9},
     .k = {3, 3},
     .stride = 2,
     .pad = 1,
     .dilation = 1,
     .groups = 2,
     .bias = true,
     .transposed = true,
     .output_padding = 1},
    {.dtype = BF16,
     .spatial = 2,
     .n = 2,
     .c_in = 16,
     .c_out = 8,
     .in = {6, 6},
     .k = {4, 4},
     .stride = 2,
     .pad = 1,
     .dilation = 1,
     .groups = 1,
     .transposed = true,
     .channels_last = true},
    {.op = "aten::conv_transpose1d",
     .dtype = F16,
     .spatial = 1,
     .n = 2,
     .c_in = 6,
     .c_out = 9,
     .in = {11},
     .k = {5},
     .stride = 3,
     .pad = 2,
     .dilation = 1,
     .groups = 3,
     .bias = true,
     .transposed = true,
     .output_padding = 2},
    {.op = "aten::miopen_convolution_transpose",
     .dtype = F32,
     .spatial = 3,
     .n = 1,
     .c_in = 4,
     .c_out = 3,
     .in = {3, 4, 3},
     .k = {3, 3, 3},
     .stride = 2,
     .pad = 1,
     .dilation = 1,
     .groups = 1,
     .bias = true,
     .transposed = true,
     .output_padding = 1},
};

/* convolution_backward: each mask, plain and transposed, grouped, 1-D and 3-D. */
static const conv_case_t conv_backward_cases[] = {
    {.dtype = F32,
     .spatial = 2,
     .n = 2,
     .c_in = 8,
     .c_out = 12,
     .in = {9, 10},
     .k = {3, 3},
     .stride = 1,
     .pad = 1,
     .dilation = 1,
     .groups = 1,
     .backward = true,
     .mask = {true, true, true}},
    {.dtype = BF16,
     .spatial = 2,
     .n = 2,
     .c_in = 16,
     .c_out = 16,
     .in = {7, 7},
     .k = {3, 3},
     .stride = 1,
     .pad = 1,
     .dilation = 1,
     .groups = 1,
     .backward = true,
     .mask = {true, true, false},
     .channels_last = true},
    {.dtype = F16,
     .spatial = 2,
     .n = 3,
     .c_in = 6,
     .c_out = 9,
     .in = {11, 8},
     .k = {3, 2},
     .stride = 2,
     .pad = 1,
     .dilation = 1,
     .groups = 3,
     .backward = true,
     .mask = {false, true, true}},
    {.dtype = F32,
     .spatial = 2,
     .n = 1,
     .c_in = 8,
     .c_out = 8,
     .in = {10, 10},
     .k = {3, 3},
     .stride = 1,
     .pad = 2,
     .dilation = 2,
     .groups = 8,
     .backward = true,
     .mask = {true, false, false}},
    {.dtype = F32,
     .spatial = 1,
     .n = 2,
     .c_in = 4,
     .c_out = 6,
     .in = {30},
     .k = {5},
     .stride = 3,
     .pad = 1,
     .dilation = 1,
     .groups = 1,
     .backward = true,
     .mask = {true, true, true}},
    {.dtype = F32,
     .spatial = 3,
     .n = 1,
     .c_in = 3,
     .c_out = 4,
     .in = {5, 6, 5},
     .k = {3, 3, 3},
     .stride = 1,
     .stride_h = 2,
     .pad = 1,
     .dilation = 1,
     .groups = 1,
     .backward = true,
     .mask = {true, true, true}},
    {.dtype = F32,
     .spatial = 2,
     .n = 2,
     .c_in = 8,
     .c_out = 6,
     .in = {5, 6},
     .k = {3, 3},
     .stride = 2,
     .pad = 1,
     .dilation = 1,
     .groups = 2,
     .transposed = true,
     .output_padding = 1,
     .backward = true,
     .mask = {true, true, true}},
    {.dtype = BF16,
     .spatial = 2,
     .n = 1,
     .c_in = 4,
     .c_out = 4,
     .in = {6, 5},
     .k = {2, 2},
     .stride = 2,
     .pad = 0,
     .dilation = 1,
     .groups = 1,
     .transposed = true,
     .backward = true,
     .mask = {true, false, true}},
};

/* Every case on `device`; the kernel that ran must start with `prefix` ("cpu.", "opencl.",
 * "gpu."). */
static inline void conv_cases(const char *device, const char *prefix) {
  for (size_t i = 0; i < sizeof conv_forward_cases / sizeof *conv_forward_cases; i++)
    expect_match(conv_json(&conv_forward_cases[i]), device, prefix);
  for (size_t i = 0; i < sizeof conv_backward_cases / sizeof *conv_backward_cases; i++)
    expect_match(conv_json(&conv_backward_cases[i]), device, prefix);
}

/* The kernels a device may take a case to: its own or its vendor library's ("cpu." covers
 * cpu.onednn_conv, "opencl." opencl.conv_clblast); on cuda and hip cuDNN's and MIOpen's carry
 * the driver's name (cuda.cudnn_conv beside gpu.conv), so there any kernel that matches will do
 * (tests/gpu/conv_gpu_test.c pins each). */
static inline const char *conv_any_impl(const char *device) {
  return strcmp(kernel_driver(device), "gpu") ? kernel_impl(device, "") : "";
}

/* The family's matrix (tests/kernels/matrix.c): every group on every driver. */
#define CONV_MATRIX(GROUP) GROUP(matches_reference, conv_cases(device, conv_any_impl(device)))
#define CONV_MATRIX_GAPS(GAP)

#endif
