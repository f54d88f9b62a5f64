/* The pool and channel_norm families' cases, written once and run on every driver through the
 * engine with --check against the CPU reference (VISION_MATRIX at the end, the
 * vision_matrix_<driver> targets; vision_ops_test.c runs them again with oneDNN off):
 * every op name of both families; fp32, fp16 and bf16; odd sizes, channels-last and unbatched
 * inputs; ceil_mode, padding, dilation, count_include_pad and divisor_override; adaptive cells
 * that overlap; upsampling by size and by scale factor, bilinear with and without
 * align_corners; batch norm in training and eval, with and without affine parameters, from 2-D
 * to 5-D; every backward with its output masks; group norm and aiter's group norm in both
 * forms. */
#ifndef XR_TESTS_KERNELS_VISION_CASES_H
#define XR_TESTS_KERNELS_VISION_CASES_H

#include "tests/kernels/bundle_text.h"

typedef struct pool_case {
  const char *op;
  const char *dtype;
  int rank;         /* of the input: spatial + 2, or + 1 unbatched */
  int64_t shape[5]; /* the input's */
  bool channels_last;
  int64_t k, stride, pad, dilation; /* pooling (square); stride 0: the kernel size; dilation 0: 1 */
  bool ceil_mode, exclude_pad;      /* exclude_pad: count_include_pad false */
  int64_t divisor;                  /* avg pooling's divisor_override; 0: None */
  int64_t out[3];                   /* adaptive pooling, upsampling: the output's spatial sizes */
  double scale; /* upsampling by scale_factors (the .vec overload); 0: by output_size */
  bool align_corners;
} pool_case_t;

static inline int64_t pool_case_dilation(const pool_case_t *c) {
  return c->dilation ? c->dilation : 1;
}

static inline int64_t pool_case_out(const pool_case_t *c, int64_t in) {
  int64_t s = c->stride ? c->stride : c->k;
  int64_t span = in + 2 * c->pad - pool_case_dilation(c) * (c->k - 1) - 1;
  int64_t out = (span + (c->ceil_mode ? s - 1 : 0)) / s + 1;
  if (c->ceil_mode && (out - 1) * s >= in + c->pad) out--;
  return out;
}

static inline const char *pool_tensor(text_t *t, const pool_case_t *c, const char *dtype,
                                      const int64_t *shape) {
  int64_t strides[5];
  if (c->channels_last) channels_last_strides(c->rank, shape, strides);
  return tensor(t, dtype, c->rank, shape, c->channels_last ? strides : NULL, 0);
}

static inline const char *pool_json(const pool_case_t *c) {
  static text_t args;
  text_t x = {0}, g = {0}, ix = {0};
  args.n = 0;
  const char *op = c->op;
  bool backward = strstr(op, "_backward") != NULL;
  int spatial = strstr(op, "1d") ? 1 : strstr(op, "3d") ? 3 : 2;
  int64_t pooled[5];
  memcpy(pooled, c->shape, sizeof pooled);
  if (strstr(op, "adaptive") || strstr(op, "upsample")) {
    for (int d = 0; d < spatial; d++) pooled[c->rank - spatial + d] = c->out[d];
  } else {
    for (int d = 0; d < 2; d++)
      pooled[c->rank - 2 + d] = pool_case_out(c, c->shape[c->rank - 2 + d]);
  }
  const char *self = pool_tensor(&x, c, c->dtype, c->shape);
  if (backward)
    put(&args, "{\"name\": \"grad_output\", \"type\": \"Tensor\", \"value\": %s}, ",
        pool_tensor(&g, c, c->dtype, pooled));
  if (c->scale) /* the .vec overload (traces name it without the overload) */
    put(&args, "{\"name\": \"input\", \"type\": \"Tensor\", \"value\": %s}", self);
  else
    put(&args, "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}", self);
  if (strstr(op, "max_pool") || (strstr(op, "avg_pool") && !strstr(op, "adaptive"))) {
    put(&args,
        ", {\"name\": \"kernel_size\", \"type\": \"int[2]\", \"value\": [%lld, %lld]}"
        ", {\"name\": \"stride\", \"type\": \"int[2]\", \"value\": [%lld, %lld]}"
        ", {\"name\": \"padding\", \"type\": \"int[2]\", \"value\": [%lld, %lld]}",
        (long long)c->k, (long long)c->k, (long long)c->stride, (long long)c->stride,
        (long long)c->pad, (long long)c->pad);
    if (strstr(op, "max_pool"))
      put(&args, ", {\"name\": \"dilation\", \"type\": \"int[2]\", \"value\": [%lld, %lld]}",
          (long long)pool_case_dilation(c), (long long)pool_case_dilation(c));
    put(&args, ", {\"name\": \"ceil_mode\", \"type\": \"bool\", \"value\": %s}",
        c->ceil_mode ? "true" : "false");
    if (strstr(op, "avg_pool")) {
      put(&args, ", {\"name\": \"count_include_pad\", \"type\": \"bool\", \"value\": %s}",
          c->exclude_pad ? "false" : "true");
      if (c->divisor)
        put(&args, ", {\"name\": \"divisor_override\", \"type\": \"int?\", \"value\": %lld}",
            (long long)c->divisor);
      else
        put(&args, ", {\"name\": \"divisor_override\", \"type\": \"int?\", \"value\": null}");
    }
    if (strstr(op, "max_pool") && backward)
      put(&args, ", {\"name\": \"indices\", \"type\": \"Tensor\", \"value\": %s}",
          pool_tensor(&ix, c, "long int", pooled));
  } else if (strstr(op, "adaptive") && !backward) {
    put(&args, ", {\"name\": \"output_size\", \"type\": \"SymInt[2]\", \"value\": [%lld, %lld]}",
        (long long)c->out[0], (long long)c->out[1]);
  } else if (strstr(op, "upsample")) {
    if (c->scale) {
      put(&args, ", {\"name\": \"output_size\", \"type\": \"SymInt[]?\", \"value\": null}");
    } else {
      put(&args, ", {\"name\": \"output_size\", \"type\": \"SymInt[%d]\", \"value\": [", spatial);
      for (int d = 0; d < spatial; d++) put(&args, "%s%lld", d ? ", " : "", (long long)c->out[d]);
      put(&args, "]}");
    }
    if (strstr(op, "bilinear"))
      put(&args, ", {\"name\": \"align_corners\", \"type\": \"bool\", \"value\": %s}",
          c->align_corners ? "true" : "false");
    if (c->scale) {
      put(&args, ", {\"name\": \"scale_factors\", \"type\": \"float[]?\", \"value\": [");
      for (int d = 0; d < spatial; d++) put(&args, "%s%g", d ? ", " : "", c->scale);
      put(&args, "]}");
    }
  }
  return bundle(op, args.s, NULL);
}

// clang-format off
static const pool_case_t pool_cases[] = {
    /* max pooling: ResNet's stem, ceil_mode, dilation, channels-last, unbatched */
    {.op = "aten::max_pool2d_with_indices", .dtype = "float", .rank = 4, .shape = {2, 3, 17, 15},
     .k = 3, .stride = 2, .pad = 1},
    {.op = "aten::max_pool2d_with_indices", .dtype = "c10::BFloat16", .rank = 4,
     .shape = {2, 4, 11, 9}, .k = 3, .stride = 2, .pad = 1, .ceil_mode = true,
     .channels_last = true},
    {.op = "aten::max_pool2d_with_indices", .dtype = "c10::Half", .rank = 3, .shape = {5, 12, 10},
     .k = 2, .stride = 1, .dilation = 2},
    {.op = "aten::max_pool2d_with_indices_backward", .dtype = "float", .rank = 4,
     .shape = {2, 3, 17, 15}, .k = 3, .stride = 2, .pad = 1},
    {.op = "aten::max_pool2d_with_indices_backward", .dtype = "c10::BFloat16", .rank = 4,
     .shape = {2, 4, 9, 9}, .k = 2, .stride = 2, .channels_last = true},
    {.op = "aten::max_pool2d_with_indices_backward", .dtype = "c10::Half", .rank = 3,
     .shape = {3, 10, 11}, .k = 3, .stride = 1, .dilation = 2, .ceil_mode = true},
    /* average pooling: padding counted or not, ceil_mode, divisor_override */
    {.op = "aten::avg_pool2d", .dtype = "float", .rank = 4, .shape = {2, 3, 9, 8}, .k = 3,
     .stride = 2, .pad = 1},
    {.op = "aten::avg_pool2d", .dtype = "c10::BFloat16", .rank = 4, .shape = {1, 5, 10, 7}, .k = 3,
     .stride = 2, .pad = 1, .ceil_mode = true, .exclude_pad = true, .channels_last = true},
    {.op = "aten::avg_pool2d", .dtype = "c10::Half", .rank = 3, .shape = {4, 7, 7}, .k = 2,
     .stride = 1, .divisor = 3},
    {.op = "aten::avg_pool2d_backward", .dtype = "float", .rank = 4, .shape = {2, 3, 9, 8}, .k = 3,
     .stride = 2, .pad = 1},
    {.op = "aten::avg_pool2d_backward", .dtype = "c10::BFloat16", .rank = 4, .shape = {1, 5, 10, 7},
     .k = 3, .stride = 2, .pad = 1, .ceil_mode = true, .exclude_pad = true, .channels_last = true},
    {.op = "aten::avg_pool2d_backward", .dtype = "c10::Half", .rank = 3, .shape = {4, 7, 7}, .k = 2,
     .stride = 1, .divisor = 3},
    /* adaptive: cells that overlap (7 -> 3, 5 -> 2), global (-> 1), growing (3 -> 5) */
    {.op = "aten::adaptive_avg_pool2d", .dtype = "float", .rank = 4, .shape = {2, 3, 7, 5},
     .out = {3, 2}},
    {.op = "aten::_adaptive_avg_pool2d", .dtype = "c10::BFloat16", .rank = 4,
     .shape = {2, 16, 7, 7}, .out = {1, 1}, .channels_last = true},
    {.op = "aten::_adaptive_avg_pool2d", .dtype = "c10::Half", .rank = 3, .shape = {3, 3, 4},
     .out = {5, 6}},
    {.op = "aten::_adaptive_avg_pool2d_backward", .dtype = "float", .rank = 4,
     .shape = {2, 3, 7, 5}, .out = {3, 2}},
    {.op = "aten::_adaptive_avg_pool2d_backward", .dtype = "c10::BFloat16", .rank = 4,
     .shape = {2, 16, 7, 7}, .out = {1, 1}, .channels_last = true},
    {.op = "aten::_adaptive_avg_pool2d_backward", .dtype = "c10::Half", .rank = 3,
     .shape = {3, 3, 4}, .out = {5, 6}},
    /* upsampling */
    {.op = "aten::upsample_nearest1d", .dtype = "float", .rank = 3, .shape = {2, 3, 7},
     .out = {12}},
    {.op = "aten::upsample_nearest2d", .dtype = "c10::BFloat16", .rank = 4, .shape = {2, 4, 5, 6},
     .out = {10, 12}, .channels_last = true},
    {.op = "aten::upsample_nearest2d", .dtype = "c10::Half", .rank = 4, .shape = {1, 3, 5, 7},
     .scale = 1.5},
    {.op = "aten::upsample_nearest3d", .dtype = "float", .rank = 5, .shape = {1, 2, 3, 4, 5},
     .out = {6, 5, 9}},
    {.op = "aten::upsample_bilinear2d", .dtype = "float", .rank = 4, .shape = {2, 3, 5, 6},
     .out = {9, 13}},
    {.op = "aten::upsample_bilinear2d", .dtype = "c10::BFloat16", .rank = 4, .shape = {1, 4, 6, 5},
     .out = {11, 3}, .align_corners = true, .channels_last = true},
    {.op = "aten::upsample_bilinear2d", .dtype = "c10::Half", .rank = 3, .shape = {3, 4, 7},
     .scale = 2.0},
    /* channels-last max pooling and its backward over more channels than one 16-lane vector
     * (cpu.pool's vectorised paths and their tail), overlapping windows */
    {.op = "aten::max_pool2d_with_indices", .dtype = "float", .rank = 4, .shape = {2, 20, 9, 7},
     .k = 3, .stride = 2, .pad = 1, .channels_last = true},
    {.op = "aten::max_pool2d_with_indices_backward", .dtype = "c10::BFloat16", .rank = 4,
     .shape = {2, 20, 9, 7}, .k = 3, .stride = 2, .pad = 1, .channels_last = true},
    /* bf16 over NCHW by whole factors, at the sizes' scale: oneDNN's resampling could, cpu.pool's
     * is faster */
    {.op = "aten::upsample_nearest2d", .dtype = "c10::BFloat16", .rank = 4, .shape = {1, 4, 5, 6},
     .out = {10, 12}},
    {.op = "aten::upsample_bilinear2d", .dtype = "c10::BFloat16", .rank = 4, .shape = {1, 3, 5, 6},
     .out = {10, 12}},
};
// clang-format on

typedef struct cn_case {
  const char *op;
  const char *dtype, *param_dtype; /* the activations', the per-channel tensors' */
  int rank;
  int64_t shape[5];
  bool channels_last;
  bool affine;  /* weight and bias given */
  bool running; /* running statistics given */
  bool eval;    /* batch norm: training false */
  int64_t groups;
  const char *mask; /* backward: output_mask */
  bool in_place;    /* aiter::_groupnorm_run's (y, workspace, ...) form */
} cn_case_t;

static inline const char *cn_json(const cn_case_t *c) {
  static text_t args;
  static text_t x, g, p[6];
  x.n = g.n = 0;
  for (int k = 0; k < 6; k++) p[k].n = 0;
  args.n = 0;
  int64_t strides[5], ch = c->shape[1], n = c->shape[0], hxw = 1;
  for (int d = 2; d < c->rank; d++) hxw *= c->shape[d];
  if (c->channels_last) channels_last_strides(c->rank, c->shape, strides);
  const int64_t *st = c->channels_last ? strides : NULL;
  const char *input = tensor(&x, c->dtype, c->rank, c->shape, st, 0);
  const char *grad = tensor(&g, c->dtype, c->rank, c->shape, st, 0);
  const char *pd = c->param_dtype ? c->param_dtype : c->dtype;
  const char *vec[6];
  for (int k = 0; k < 6; k++) vec[k] = tensor(&p[k], pd, 1, (int64_t[]){ch}, NULL, 0);
  const char *weight = c->affine ? vec[0] : "null", *bias = c->affine ? vec[1] : "null";
  const char *rm = c->running ? vec[2] : "null", *rv = c->running ? vec[3] : "null";
  const char *op = c->op;
  bool cudnn = strstr(op, "cudnn") || strstr(op, "miopen");
#define ARG(name, type, fmt, ...)                                                      \
  put(&args, "%s{\"name\": \"" name "\", \"type\": \"" type "\", \"value\": " fmt "}", \
      args.n ? ", " : "", __VA_ARGS__)
  if (!strcmp(op, "aiter::_groupnorm_run")) {
    if (c->in_place) {
      text_t y = {0}, ws = {0};
      ARG("y", "Tensor", "%s", tensor(&y, c->dtype, c->rank, c->shape, st, 0));
      ARG("workspace", "Tensor", "%s", tensor(&ws, "float", 1, (int64_t[]){64}, NULL, 0));
    }
    ARG("input", "Tensor", "%s", input);
    ARG("num_groups", "int", "%lld", (long long)c->groups);
    ARG("weight", "Tensor", "%s", vec[0]);
    ARG("bias", "Tensor", "%s", vec[1]);
    ARG("eps", "float", "%g", 1e-5);
  } else if (!strcmp(op, "aten::native_group_norm") ||
             !strcmp(op, "aten::native_group_norm_backward")) {
    bool backward = strstr(op, "_backward") != NULL;
    text_t mean = {0}, rstd = {0};
    if (backward) {
      ARG("grad_out", "Tensor", "%s", grad);
      ARG("input", "Tensor", "%s", input);
      ARG("mean", "Tensor", "%s", tensor(&mean, c->dtype, 2, (int64_t[]){n, c->groups}, NULL, 0));
      ARG("rstd", "Tensor", "%s", tensor(&rstd, c->dtype, 2, (int64_t[]){n, c->groups}, NULL, 0));
      ARG("weight", "Tensor?", "%s", weight);
    } else {
      ARG("input", "Tensor", "%s", input);
      ARG("weight", "Tensor?", "%s", weight);
      ARG("bias", "Tensor?", "%s", bias);
    }
    ARG("N", "SymInt", "%lld", (long long)n);
    ARG("C", "SymInt", "%lld", (long long)ch);
    ARG("HxW", "SymInt", "%lld", (long long)hxw);
    ARG("group", "int", "%lld", (long long)c->groups);
    if (backward)
      ARG("output_mask", "bool[3]", "%s", c->mask);
    else
      ARG("eps", "float", "%g", 1e-5);
  } else if (strstr(op, "_backward") && cudnn) {
    ARG("input", "Tensor", "%s", input);
    ARG("grad_output", "Tensor", "%s", grad);
    ARG("weight", "Tensor", "%s", vec[0]);
    ARG("running_mean", "Tensor?", "%s", rm);
    ARG("running_var", "Tensor?", "%s", rv);
    ARG("save_mean", "Tensor?", "%s", vec[4]);
    ARG("save_var", "Tensor?", "%s", vec[5]);
    ARG("epsilon", "float", "%g", 1e-5);
    if (strstr(op, "cudnn")) {
      text_t r = {0};
      ARG("reserveSpace", "Tensor", "%s", tensor(&r, "unsigned char", 1, (int64_t[]){0}, NULL, 0));
    }
  } else if (strstr(op, "_backward")) {
    ARG("grad_out", "Tensor", "%s", grad);
    ARG("input", "Tensor", "%s", input);
    ARG("weight", "Tensor?", "%s", weight);
    ARG("running_mean", "Tensor?", "%s", rm);
    ARG("running_var", "Tensor?", "%s", rv);
    ARG("save_mean", "Tensor?", "%s", c->eval ? "null" : vec[4]);
    ARG("save_invstd", "Tensor?", "%s", c->eval ? "null" : vec[5]);
    ARG("train", "bool", "%s", c->eval ? "false" : "true");
    ARG("eps", "float", "%g", 1e-5);
    ARG("output_mask", "bool[3]", "%s", c->mask);
  } else { /* the batch norm forwards */
    bool no_training = strstr(op, "no_training") != NULL;
    ARG("input", "Tensor", "%s", input);
    ARG("weight", "Tensor?", "%s", weight);
    ARG("bias", "Tensor?", "%s", bias);
    ARG("running_mean", "Tensor(a!)?", "%s", rm);
    ARG("running_var", "Tensor(b!)?", "%s", rv);
    if (!no_training) ARG("training", "bool", "%s", c->eval ? "false" : "true");
    if (cudnn) {
      ARG("exponential_average_factor", "float", "%g", 0.1);
      ARG("epsilon", "float", "%g", 1e-5);
    } else {
      ARG("momentum", "float", "%g", 0.1);
      ARG("eps", "float", "%g", 1e-5);
    }
  }
#undef ARG
  return bundle(op, args.s, NULL);
}

// clang-format off
static const cn_case_t cn_cases[] = {
    /* batch norm forwards: ResNet's bf16 activations with fp32 parameters, 2-D to 5-D */
    {.op = "aten::native_batch_norm", .dtype = "float", .rank = 4, .shape = {3, 5, 7, 6},
     .affine = true, .running = true},
    {.op = "aten::native_batch_norm", .dtype = "float", .rank = 2, .shape = {9, 6}},
    {.op = "aten::native_batch_norm", .dtype = "c10::Half", .rank = 3, .shape = {4, 5, 9},
     .affine = true, .running = true, .eval = true},
    {.op = "aten::_native_batch_norm_legit", .dtype = "c10::BFloat16", .param_dtype = "float",
     .rank = 5, .shape = {2, 3, 3, 4, 5}, .affine = true, .running = true, .channels_last = true},
    {.op = "aten::_native_batch_norm_legit_no_training", .dtype = "float", .rank = 4,
     .shape = {2, 6, 5, 5}, .affine = true, .running = true},
    {.op = "aten::cudnn_batch_norm", .dtype = "c10::BFloat16", .param_dtype = "float", .rank = 4,
     .shape = {4, 8, 9, 7}, .affine = true, .running = true, .channels_last = true},
    {.op = "aten::miopen_batch_norm", .dtype = "c10::Half", .param_dtype = "float", .rank = 4,
     .shape = {2, 8, 6, 6}, .affine = true, .running = true},
    {.op = "aten::cudnn_batch_norm", .dtype = "float", .rank = 4, .shape = {2, 4, 5, 3},
     .affine = true, .running = true, .eval = true},
    /* batch norm backwards: training and eval forms, each mask */
    {.op = "aten::native_batch_norm_backward", .dtype = "float", .rank = 4, .shape = {3, 5, 7, 6},
     .affine = true, .running = true, .mask = "[true, true, true]"},
    {.op = "aten::native_batch_norm_backward", .dtype = "c10::BFloat16", .param_dtype = "float",
     .rank = 4, .shape = {2, 4, 9, 9}, .affine = true, .running = true, .channels_last = true,
     .mask = "[true, false, false]"},
    {.op = "aten::native_batch_norm_backward", .dtype = "float", .rank = 3, .shape = {4, 5, 6},
     .running = true, .eval = true, .mask = "[true, true, true]"},
    {.op = "aten::native_batch_norm_backward", .dtype = "c10::Half", .rank = 2, .shape = {12, 5},
     .affine = true, .mask = "[false, true, true]"},
    {.op = "aten::cudnn_batch_norm_backward", .dtype = "c10::BFloat16", .param_dtype = "float",
     .rank = 4, .shape = {4, 8, 7, 7}, .running = true, .channels_last = true},
    {.op = "aten::miopen_batch_norm_backward", .dtype = "c10::Half", .param_dtype = "float",
     .rank = 4, .shape = {2, 6, 5, 5}, .running = true},
    /* group norm: the SD VAE's 32 groups, one group, a channel each, 5-D */
    {.op = "aten::native_group_norm", .dtype = "float", .rank = 4, .shape = {2, 64, 5, 6},
     .affine = true, .groups = 32},
    {.op = "aten::native_group_norm", .dtype = "c10::BFloat16", .rank = 4, .shape = {2, 6, 7, 5},
     .groups = 1, .channels_last = true},
    {.op = "aten::native_group_norm", .dtype = "c10::Half", .rank = 5, .shape = {2, 4, 3, 4, 5},
     .affine = true, .groups = 4},
    {.op = "aten::native_group_norm", .dtype = "float", .rank = 3, .shape = {3, 6, 11},
     .affine = true, .groups = 2},
    {.op = "aten::native_group_norm_backward", .dtype = "float", .rank = 4, .shape = {2, 64, 5, 6},
     .affine = true, .groups = 32, .mask = "[true, true, true]"},
    {.op = "aten::native_group_norm_backward", .dtype = "c10::BFloat16", .rank = 4,
     .shape = {2, 6, 7, 5}, .groups = 3, .channels_last = true, .mask = "[true, false, false]"},
    {.op = "aten::native_group_norm_backward", .dtype = "c10::Half", .rank = 5,
     .shape = {2, 4, 3, 4, 5}, .affine = true, .groups = 2, .mask = "[false, true, true]"},
    {.op = "aiter::_groupnorm_run", .dtype = "c10::BFloat16", .rank = 4, .shape = {2, 32, 6, 6},
     .groups = 8},
    {.op = "aiter::_groupnorm_run", .dtype = "c10::Half", .rank = 4, .shape = {1, 16, 5, 7},
     .groups = 4, .in_place = true},
    /* batch norm over 3 values a channel: the running variance's unbiased factor is 3 / 2 */
    {.op = "aten::native_batch_norm", .dtype = "float", .rank = 2, .shape = {3, 4},
     .affine = true, .running = true},
    /* the eval forms over channels-last data */
    {.op = "aten::native_batch_norm", .dtype = "c10::BFloat16", .param_dtype = "float", .rank = 4,
     .shape = {2, 6, 5, 7}, .affine = true, .running = true, .eval = true, .channels_last = true},
    {.op = "aten::native_batch_norm_backward", .dtype = "float", .rank = 4, .shape = {3, 4, 5, 3},
     .affine = true, .running = true, .eval = true, .channels_last = true,
     .mask = "[true, true, true]"},
    /* a channel of 2 x 48 x 48 elements: more than cpu.channel_norm's stack scratch holds */
    {.op = "aten::native_batch_norm", .dtype = "c10::BFloat16", .rank = 4, .shape = {2, 3, 48, 48},
     .affine = true, .running = true},
};
// clang-format on

/* Every case on `device`; the kernel that ran must start with `pool_prefix` for the pool
 * family, `norm_prefix` for batch and group norm ("cpu.", "ref.", "opencl.", "gpu."). */
static inline void vision_cases(const char *device, const char *pool_prefix,
                                const char *norm_prefix) {
  for (size_t i = 0; i < sizeof pool_cases / sizeof *pool_cases; i++)
    expect_match(pool_json(&pool_cases[i]), device, pool_prefix);
  for (size_t i = 0; i < sizeof cn_cases / sizeof *cn_cases; i++)
    expect_match(cn_json(&cn_cases[i]), device, norm_prefix);
}

/* The families' matrix (tests/kernels/matrix.c): every group on every driver. */
#define VISION_MATRIX(GROUP) \
  GROUP(matches_reference, vision_cases(device, kernel_impl(device, ""), kernel_impl(device, "")))
#define VISION_MATRIX_GAPS(GAP)

#endif
