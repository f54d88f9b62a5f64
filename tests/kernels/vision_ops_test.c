/* The pool and channel_norm families (kernels/pool.c, kernels/channel_norm.c) beyond their case
 * matrix (vision_cases.h, run on every driver by the vision_matrix_* targets): the cases again
 * on our own cpu kernels with oneDNN off, what oneDNN must take; plans (output sizes, memory formats, saved statistics), argument
 * errors that name the argument, and the ops the golden cases leave out (backwards, eval forms,
 * upsampling by scale factor). Their semantics are checked against independent outputs by
 * tests/replay:golden_test. */
#include <dlfcn.h>
#include <math.h>

#include "formats/bundle.h"
#include "kernels/channel_norm.h"
#include "kernels/kernels.h"
#include "tests/kernels/bundle_text.h"
#include "tests/kernels/exact.h"
#include "tests/kernels/vision_cases.h"

/* Both timed tests have the same .timeout (conv_test.c says why). */

/* The cases again with oneDNN off: our own cpu kernels run every one. */
Test(vision, cpu_own_kernels_match_reference, .timeout = 300) {
  setenv("XR_ONEDNN_LIBRARY", "off", 1);
  vision_cases("cpu", "cpu.pool", "cpu.channel_norm");
}

/* oneDNN runs the cases it computes as PyTorch does (fp32 and bf16, NCHW and channels-last,
 * backwards, eval) wherever it loads, and leaves the rest to our kernels: a regression that
 * quietly sends them elsewhere, or lets oneDNN take a case it gets wrong, fails here. */
Test(vision, onednn_runs_the_cases_it_matches, .timeout = 300) {
  void *dnnl = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!dnnl) cr_skip_test("oneDNN is not installed: %s", dlerror());
  dlclose(dnnl);
  /* avg pooling (padding counted; ceil_mode with padding left out) and its backward, adaptive
   * pooling to 1 x 1 and back, nearest by whole factors, bilinear at the sizes' scale */
  const size_t pool_onednn[] = {6, 7, 9, 10, 13, 16, 19, 22};
  /* max pooling (indices), nearest 7 -> 12, bilinear with align_corners, bf16 resampling over
   * NCHW (faster on cpu.pool) */
  const size_t pool_ours[] = {0, 3, 18, 23, 24, 25, 26, 27};
  /* batch norm over channels-last data ([N, C] included): training 2-D to 5-D, eval, cudnn's
   * forms, backwards in both forms */
  const size_t norm_onednn[] = {1, 3, 5, 9, 12, 23, 24, 25};
  /* NCHW batch norm (faster on cpu.channel_norm), group norm */
  const size_t norm_ours[] = {0, 4, 7, 8, 10, 14, 26};
  const size_t pools = sizeof pool_cases / sizeof *pool_cases,
               norms = sizeof cn_cases / sizeof *cn_cases;
  for (size_t i = 0; i < sizeof pool_onednn / sizeof *pool_onednn; i++) {
    cr_assert_lt(pool_onednn[i], pools);
    const pool_case_t *c = &pool_cases[pool_onednn[i]];
    expect_onednn(pool_json(c), c->dtype, "cpu.onednn_pool", "cpu.pool");
  }
  for (size_t i = 0; i < sizeof pool_ours / sizeof *pool_ours; i++) {
    cr_assert_lt(pool_ours[i], pools);
    expect_match(pool_json(&pool_cases[pool_ours[i]]), "cpu", "cpu.pool");
  }
  for (size_t i = 0; i < sizeof norm_onednn / sizeof *norm_onednn; i++) {
    cr_assert_lt(norm_onednn[i], norms);
    const cn_case_t *c = &cn_cases[norm_onednn[i]];
    expect_onednn(cn_json(c), c->dtype, "cpu.onednn_batch_norm", "cpu.channel_norm");
  }
  for (size_t i = 0; i < sizeof norm_ours / sizeof *norm_ours; i++) {
    cr_assert_lt(norm_ours[i], norms);
    expect_match(cn_json(&cn_cases[norm_ours[i]]), "cpu", "cpu.channel_norm");
  }
}

static const char *T(text_t *t, const char *dtype, int rank, const int64_t *shape,
                     const int64_t *strides) {
  t->n = 0;
  return tensor(t, dtype, rank, shape, strides, 0);
}

/* Plans `json`; returns its status, the plan in *plan (free it when OK). */
static xr_status_t plan_json(const char *json, xr_bundle_t **b, xr_op_plan_t *plan) {
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, b), XR_OK,
               "%s", xr_last_error());
  return xr_kernel_plan(&(*b)->ops[0], plan);
}

static void expect_error(const char *json, const char *field) {
  xr_bundle_t *b;
  xr_op_plan_t plan;
  cr_assert_eq(plan_json(json, &b, &plan), XR_INVALID_ARGUMENT, "%s: expected an error", json);
  cr_assert(strstr(xr_last_error(), field), "'%s' does not name %s", xr_last_error(), field);
  xr_bundle_destroy(b);
}

static const char *max_pool(const char *x, const char *k, const char *s, const char *p,
                            const char *ceil) {
  static char args[4096];
  format(args, sizeof args,
         "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"kernel_size\", \"type\": \"int[2]\", \"value\": %s}, "
         "{\"name\": \"stride\", \"type\": \"int[2]\", \"value\": %s}, "
         "{\"name\": \"padding\", \"type\": \"int[2]\", \"value\": %s}, "
         "{\"name\": \"dilation\", \"type\": \"int[2]\", \"value\": [1, 1]}, "
         "{\"name\": \"ceil_mode\", \"type\": \"bool\", \"value\": %s}",
         x, k, s, p, ceil);
  return bundle("aten::max_pool2d_with_indices", args, NULL);
}

Test(pool, plans_sizes_and_memory_formats) {
  text_t x;
  xr_bundle_t *b;
  xr_op_plan_t plan;
  /* ceil_mode: (10 + 2 - 3 + 1) / 2 + 1 = 6, the last window starting inside: 6 */
  const char *json =
      max_pool(T(&x, "float", 4, SHAPE(2, 3, 10, 10), NULL), "[3, 3]", "[2, 2]", "[1, 1]", "true");
  cr_assert_eq(plan_json(json, &b, &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan.return_count, 2);
  cr_assert(plan.returns[0].shape[2] == 6 && plan.returns[0].shape[3] == 6);
  cr_assert_eq(plan.returns[1].dtype, XR_DTYPE_I64, "indices are int64");
  cr_assert(!plan.returns[0].dense_strides);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  /* channels-last in, channels-last out */
  json = max_pool(T(&x, "c10::BFloat16", 4, SHAPE(2, 3, 8, 8), SHAPE(192, 1, 24, 3)), "[2, 2]",
                  "[]", "[0, 0]", "false");
  cr_assert_eq(plan_json(json, &b, &plan), XR_OK, "%s", xr_last_error());
  cr_assert(plan.returns[0].dense_strides && plan.returns[0].strides[1] == 1 &&
                plan.returns[0].strides[3] == 3,
            "channels-last result");
  cr_assert(plan.returns[0].shape[2] == 4, "stride defaults to the kernel size");
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
}

Test(pool, malformed_arguments_name_the_argument) {
  text_t x;
  expect_error(
      max_pool(T(&x, "float", 4, SHAPE(1, 1, 8, 8), NULL), "[0, 3]", "[1, 1]", "[0, 0]", "false"),
      "kernel_size");
  expect_error(
      max_pool(T(&x, "float", 4, SHAPE(1, 1, 8, 8), NULL), "[3, 3]", "[1, 1]", "[2, 2]", "false"),
      "padding");
  expect_error(max_pool(T(&x, "float", 5, SHAPE(1, 1, 2, 8, 8), NULL), "[3, 3]", "[1, 1]", "[0, 0]",
                        "false"),
               "self");
  expect_error(
      max_pool(T(&x, "float", 4, SHAPE(1, 1, 2, 2), NULL), "[3, 3]", "[1, 1]", "[0, 0]", "false"),
      "kernel_size");
}

/* Upsampling by scale factors (.vec): out = floor(in * scale); replayed on the cpu. */
Test(pool, upsampling_by_scale_factor) {
  text_t x;
  char args[4096];
  format(args, sizeof args,
         "{\"name\": \"input\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"output_size\", \"type\": \"SymInt[]?\", \"value\": null}, "
         "{\"name\": \"align_corners\", \"type\": \"bool\", \"value\": false}, "
         "{\"name\": \"scale_factors\", \"type\": \"float[]?\", \"value\": [2.5, 1.5]}",
         T(&x, "float", 4, SHAPE(1, 2, 4, 6), NULL));
  const char *json = bundle("aten::upsample_bilinear2d", args, NULL);
  xr_bundle_t *b;
  xr_op_plan_t plan;
  cr_assert_eq(plan_json(json, &b, &plan), XR_OK, "%s", xr_last_error());
  cr_assert(plan.returns[0].shape[2] == 10 && plan.returns[0].shape[3] == 9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  expect_match(json, "cpu", "cpu.");
}

/* The backward's indices come from the family's initializer: valid positions, so the
 * reference's scatter stays in the plane (ASan would see it leave). */
/* Max pooling over channels-last data runs vectorised over the channels (16 lanes): its first
 * maximum, NaN over any number, -0 equal to 0, an all -inf window, in a full vector and in the
 * tail of one more channel, in fp32 and bf16, by hand against cpu.pool and the reference. */
Test(pool, max_pool_channels_last_by_hand) {
  enum { C = 17 };
  /* per channel, the 2 x 2 window's values in h-w order; one output position */
  double v[C][4] = {
      {1, 3, 2, 3},                          /* a tie: the first 3 */
      {1, 5, NAN, NAN},                      /* the first NaN */
      {-0.0, 0.0, -1, -2},                   /* -0 and 0 equal: the first */
      {-INFINITY, -INFINITY, -INFINITY, -INFINITY},
      {1, 1, 1, INFINITY},
  };
  for (int c = 5; c < 16; c++) v[c][0] = c, v[c][2] = c + 1;
  v[16][0] = 7, v[16][1] = NAN, v[16][3] = NAN; /* the tail lane */
  const double want_values[C] = {3, NAN, -0.0, -INFINITY, INFINITY, 6, 7, 8, 9, 10, 11, 12,
                                 13, 14, 15, 16, NAN};
  double want_indices[C] = {1, 2, 0, 0, 3};
  for (int c = 5; c < 16; c++) want_indices[c] = 2;
  want_indices[16] = 1;
  const int64_t shape[4] = {1, C, 2, 2}, strides[4] = {4 * C, 1, 2 * C, C};
  float f32[4 * C];
  uint16_t bf16[4 * C];
  for (int c = 0; c < C; c++)
    for (int k = 0; k < 4; k++) {
      f32[(k / 2) * 2 * C + (k % 2) * C + c] = (float)v[c][k];
      bf16[(k / 2) * 2 * C + (k % 2) * C + c] = xr_f32_to_bf16((float)v[c][k]);
    }
  const exact_run_t runs[] = {{"cpu", XR_KERNEL_BEST, "cpu.pool"},
                              {"cpu", XR_KERNEL_REFERENCE, "ref.pool"}};
  setenv("XR_ONEDNN_LIBRARY", "off", 1); /* oneDNN takes no max pooling; make sure of it */
  for (int d = 0; d < 2; d++) {
    text_t x = {0};
    const char *json = max_pool(d ? exact_view(&x, "c10::BFloat16", 4, shape, strides, bf16, sizeof bf16)
                                  : exact_view(&x, "float", 4, shape, strides, f32, sizeof f32),
                                "[2, 2]", "[2, 2]", "[0, 0]", "false");
    double want_bits[C]; /* the dump writes bf16 as its bits */
    for (int c = 0; c < C; c++) want_bits[c] = xr_f32_to_bf16((float)want_values[c]);
    exact_expect(json, "max_pool2d_with_indices", "return0", d ? want_bits : want_values, C, runs, 2);
    exact_expect(json, "max_pool2d_with_indices", "return1", want_indices, C, runs, 2);
  }
  unsetenv("XR_ONEDNN_LIBRARY");
}

Test(pool, max_pool_backward_replays) {
  text_t g, x, ix;
  char args[4096];
  format(args, sizeof args,
         "{\"name\": \"grad_output\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"kernel_size\", \"type\": \"int[2]\", \"value\": [3, 3]}, "
         "{\"name\": \"stride\", \"type\": \"int[2]\", \"value\": [2, 2]}, "
         "{\"name\": \"padding\", \"type\": \"int[2]\", \"value\": [1, 1]}, "
         "{\"name\": \"dilation\", \"type\": \"int[2]\", \"value\": [1, 1]}, "
         "{\"name\": \"ceil_mode\", \"type\": \"bool\", \"value\": false}, "
         "{\"name\": \"indices\", \"type\": \"Tensor\", \"value\": %s}",
         T(&g, "c10::BFloat16", 4, SHAPE(2, 3, 5, 5), NULL),
         T(&x, "c10::BFloat16", 4, SHAPE(2, 3, 9, 9), NULL),
         T(&ix, "long int", 4, SHAPE(2, 3, 5, 5), NULL));
  expect_match(bundle("aten::max_pool2d_with_indices_backward", args, NULL), "cpu", "cpu.pool");
}

static const char *batch_norm(const char *op, const char *x, const char *w, const char *rm,
                              const char *rv, bool training) {
  static char args[4096];
  bool cudnn = strstr(op, "cudnn") != NULL;
  format(args, sizeof args,
         "{\"name\": \"input\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"weight\", \"type\": \"Tensor?\", \"value\": %s}, "
         "{\"name\": \"bias\", \"type\": \"Tensor?\", \"value\": null}, "
         "{\"name\": \"running_mean\", \"type\": \"Tensor(a!)?\", \"value\": %s}, "
         "{\"name\": \"running_var\", \"type\": \"Tensor(b!)?\", \"value\": %s}, "
         "{\"name\": \"training\", \"type\": \"bool\", \"value\": %s}, "
         "{\"name\": \"%s\", \"type\": \"float\", \"value\": 0.1}, "
         "{\"name\": \"%s\", \"type\": \"float\", \"value\": 1e-05}",
         x, w, rm, rv, training ? "true" : "false",
         cudnn ? "exponential_average_factor" : "momentum", cudnn ? "epsilon" : "eps");
  return bundle(op, args, NULL);
}

/* _native_batch_norm_legit.no_stats: training without running statistics, the arguments
 * named (as traces and TraceLens IR name them) or by position alone. */
Test(channel_norm, no_stats_overload_replays) {
  text_t x, w;
  const char *named = "{\"name\": \"%s\", \"type\": \"%s\", \"value\": %s}";
  const char *names[6] = {"input", "weight", "bias", "training", "momentum", "eps"};
  const char *types[6] = {"Tensor", "Tensor?", "Tensor?", "bool", "float", "float"};
  const char *values[6] = {T(&x, "c10::BFloat16", 4, SHAPE(3, 5, 4, 6), NULL),
                           T(&w, "float", 1, SHAPE(5), NULL),
                           "null",
                           "true",
                           "0.1",
                           "1e-05"};
  for (int positional = 0; positional < 2; positional++) {
    static char args[4096];
    size_t at = 0;
    for (int i = 0; i < 6; i++) {
      at += (size_t)snprintf(args + at, sizeof args - at, "%s", i ? ", " : "");
      if (positional)
        at += (size_t)snprintf(args + at, sizeof args - at, "{\"type\": \"%s\", \"value\": %s}",
                               types[i], values[i]);
      else
        at += (size_t)snprintf(args + at, sizeof args - at, named, names[i], types[i], values[i]);
    }
    const char *json = bundle("aten::_native_batch_norm_legit", args, NULL);
    xr_bundle_t *b;
    xr_op_plan_t plan;
    cr_assert_eq(plan_json(json, &b, &plan), XR_OK, "%s", xr_last_error());
    const xr_cn_problem_t *p = plan.problem;
    cr_assert(p->training && p->v[XR_CN_RMEAN].index < 0 && fabs(p->momentum - 0.1) < 1e-12 &&
                  fabs(p->eps - 1e-5) < 1e-12,
              "%s: training, no running statistics, momentum and eps read", json);
    cr_assert_eq(plan.returns[1].shape[0], 5, "the saved mean");
    xr_kernel_plan_free(&plan);
    xr_bundle_destroy(b);
    expect_match(json, "cpu", "cpu.");
  }
}

Test(channel_norm, plans_saved_statistics) {
  text_t x, w, rm, rv;
  xr_bundle_t *b;
  xr_op_plan_t plan;
  const char *json =
      batch_norm("aten::cudnn_batch_norm", T(&x, "c10::BFloat16", 4, SHAPE(2, 8, 5, 5), NULL),
                 T(&w, "float", 1, SHAPE(8), NULL), T(&rm, "float", 1, SHAPE(8), NULL),
                 T(&rv, "float", 1, SHAPE(8), NULL), true);
  cr_assert_eq(plan_json(json, &b, &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan.return_count, 4, "out, save_mean, save_var, reserve");
  cr_assert(plan.returns[1].dtype == XR_DTYPE_F32 && plan.returns[1].shape[0] == 8);
  cr_assert(plan.returns[3].dtype == XR_DTYPE_U8 && plan.returns[3].shape[0] == 0);
  cr_assert(plan.input_written[2] && plan.input_written[3], "running statistics are written");
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  /* eval: the saved statistics are empty */
  json = batch_norm("aten::native_batch_norm", T(&x, "float", 3, SHAPE(2, 8, 7), NULL), "null",
                    T(&rm, "float", 1, SHAPE(8), NULL), T(&rv, "float", 1, SHAPE(8), NULL), false);
  cr_assert_eq(plan_json(json, &b, &plan), XR_OK, "%s", xr_last_error());
  cr_assert(plan.returns[1].shape[0] == 0 && plan.returns[2].shape[0] == 0);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  expect_match(json, "cpu", "cpu.");
}

Test(channel_norm, malformed_arguments_name_the_argument) {
  text_t x, w, rm, rv;
  expect_error(batch_norm("aten::native_batch_norm", T(&x, "float", 4, SHAPE(2, 8, 5, 5), NULL),
                          T(&w, "float", 1, SHAPE(7), NULL), "null", "null", true),
               "weight");
  expect_error(batch_norm("aten::native_batch_norm", T(&x, "float", 4, SHAPE(2, 8, 5, 5), NULL),
                          "null", "null", "null", false),
               "running_mean");
  expect_error(
      batch_norm("aten::native_batch_norm", T(&x, "float", 6, SHAPE(2, 8, 2, 2, 2, 2), NULL),
                 "null", T(&rm, "float", 1, SHAPE(8), NULL), T(&rv, "float", 1, SHAPE(8), NULL),
                 true),
      "input");
  char args[2048];
  format(args, sizeof args,
         "{\"name\": \"input\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"weight\", \"type\": \"Tensor?\", \"value\": null}, "
         "{\"name\": \"bias\", \"type\": \"Tensor?\", \"value\": null}, "
         "{\"name\": \"N\", \"type\": \"SymInt\", \"value\": 2}, "
         "{\"name\": \"C\", \"type\": \"SymInt\", \"value\": 6}, "
         "{\"name\": \"HxW\", \"type\": \"SymInt\", \"value\": 9}, "
         "{\"name\": \"group\", \"type\": \"int\", \"value\": 4}, "
         "{\"name\": \"eps\", \"type\": \"float\", \"value\": 1e-05}",
         T(&x, "float", 4, SHAPE(2, 6, 3, 3), NULL));
  expect_error(bundle("aten::native_group_norm", args, NULL), "group");
}

/* Batch norm's backward in both forms, and each output_mask, on the cpu. */
Test(channel_norm, backward_replays) {
  text_t g, x, w, rm, rv, sm, si;
  for (int train = 0; train < 2; train++)
    for (int m = 0; m < 3; m++) {
      char args[4096];
      const char *masks[] = {"[true, true, true]", "[true, false, false]", "[false, true, true]"};
      format(args, sizeof args,
             "{\"name\": \"grad_out\", \"type\": \"Tensor\", \"value\": %s}, "
             "{\"name\": \"input\", \"type\": \"Tensor\", \"value\": %s}, "
             "{\"name\": \"weight\", \"type\": \"Tensor?\", \"value\": %s}, "
             "{\"name\": \"running_mean\", \"type\": \"Tensor?\", \"value\": %s}, "
             "{\"name\": \"running_var\", \"type\": \"Tensor?\", \"value\": %s}, "
             "{\"name\": \"save_mean\", \"type\": \"Tensor?\", \"value\": %s}, "
             "{\"name\": \"save_invstd\", \"type\": \"Tensor?\", \"value\": %s}, "
             "{\"name\": \"train\", \"type\": \"bool\", \"value\": %s}, "
             "{\"name\": \"eps\", \"type\": \"float\", \"value\": 1e-05}, "
             "{\"name\": \"output_mask\", \"type\": \"bool[3]\", \"value\": %s}",
             T(&g, "float", 4, SHAPE(2, 4, 3, 5), NULL), T(&x, "float", 4, SHAPE(2, 4, 3, 5), NULL),
             T(&w, "float", 1, SHAPE(4), NULL), T(&rm, "float", 1, SHAPE(4), NULL),
             T(&rv, "float", 1, SHAPE(4), NULL), T(&sm, "float", 1, SHAPE(4), NULL),
             T(&si, "float", 1, SHAPE(4), NULL), train ? "true" : "false", masks[m]);
      expect_match(bundle("aten::native_batch_norm_backward", args, NULL), "cpu", "cpu.");
    }
}
