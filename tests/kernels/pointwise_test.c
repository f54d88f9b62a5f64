/* The pointwise table beyond its case matrix (pointwise_cases.h, run on every driver by the
 * pointwise_matrix_* targets): exact values on embedded inputs, and plan-level checks: result
 * dtypes by torch's rules, the registry's names, and errors that name the argument. The reference itself is checked against tests/data/golden's
 * pointwise cases by tests/replay:golden_test. */
#include "formats/bundle.h"
#include "kernels/kernels.h"
#include "tests/kernels/exact.h"
#include "tests/kernels/pointwise_cases.h"

/* tril / triu on embedded matrices against values worked out by hand, on the reference and on
 * the cpu and opencl kernels. */
static void expect_tri(const char *op, const char *self_text, const char *diagonal,
                       const char *target, const double *want, int64_t n) {
  static const exact_run_t runs[] = {{"cpu", XR_KERNEL_REFERENCE, "ref.elementwise"},
                                     {"cpu", XR_KERNEL_BEST, "cpu.elementwise"},
                                     {"opencl", XR_KERNEL_BEST, "opencl.elementwise"}};
  static text_t args;
  args.n = 0;
  put(&args, "{\"name\": \"self\", \"type\": \"Tensor%s\", \"value\": %s}, "
      "{\"name\": \"diagonal\", \"type\": \"int\", \"value\": %s}",
      !strcmp(target, "self") ? "(a!)" : "", self_text, diagonal);
  exact_expect(bundle(op, args.s, NULL), op, target, want, n, runs, sizeof runs / sizeof *runs);
}

Test(pointwise_exact, tril_and_triu_keep_their_triangle) {
  text_t t = {0};
  const char *m = EXACT_DATA(&t, "float", float, 2, SHAPE(3, 4), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                             11, 12);
  expect_tri("aten::tril", m, "0", "return0",
             (const double[]){1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0}, 12);
  expect_tri("aten::tril", m, "-1", "return0",
             (const double[]){0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}, 12);
  expect_tri("aten::triu", m, "1", "return0",
             (const double[]){0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12}, 12);
  /* in place over a batch of two 3 x 2 matrices, 8-byte elements */
  t.n = 0;
  const char *batch = EXACT_DATA(&t, "long int", int64_t, 3, SHAPE(2, 3, 2), 1, 2, 3, 4, 5, 6, 7,
                                 8, 9, 10, 11, 12);
  expect_tri("aten::triu_", batch, "-1", "self",
             (const double[]){1, 2, 3, 4, 0, 6, 7, 8, 9, 10, 0, 12}, 12);
  /* bool, one byte each; a diagonal beyond the matrix keeps everything */
  t.n = 0;
  const char *mask = EXACT_DATA(&t, "bool", uint8_t, 2, SHAPE(2, 3), 1, 1, 1, 1, 1, 1);
  expect_tri("aten::tril", mask, "0", "return0", (const double[]){1, 0, 0, 1, 1, 0}, 6);
  expect_tri("aten::tril", mask, "5", "return0", (const double[]){1, 1, 1, 1, 1, 1}, 6);
}

/* max.other and min.other (the reduce family's names) are torch.maximum and torch.minimum:
 * elementwise, broadcast, NaN propagated; hand-worked. */
Test(pointwise_exact, max_and_min_of_two_tensors_are_elementwise) {
  static const exact_run_t runs[] = {{"cpu", XR_KERNEL_REFERENCE, "ref.elementwise"},
                                     {"cpu", XR_KERNEL_BEST, "cpu.elementwise"},
                                     {"opencl", XR_KERNEL_BEST, "opencl.elementwise"}};
  static const char *const ops[] = {"aten::max", "aten::min"};
  static const double want[2][6] = {{1, 3, NAN, 4, 3, 1}, {0, -2, NAN, 0, 0.5, -1}};
  for (int k = 0; k < 2; k++) {
    text_t t = {0}, args = {0};
    const char *self = EXACT_DATA(&t, "float", float, 2, SHAPE(2, 3), 1, -2, NAN, 4, 0.5f, -1);
    put(&args, "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, ", self);
    t.n = 0;
    const char *other = EXACT_DATA(&t, "float", float, 1, SHAPE(3), 0, 3, 1); /* broadcast */
    put(&args, "{\"name\": \"other\", \"type\": \"Tensor\", \"value\": %s}", other);
    exact_expect(bundle(ops[k], args.s, NULL), ops[k], "return0", want[k], 6, runs,
                 sizeof runs / sizeof *runs);
  }
}

/* The Scalar and ScalarList overloads of the _foreach_ ops, under their schemas' own argument
 * names (`scalar`, `scalars`), over two embedded float tensors; the wanted values were printed
 * by torch 1.13 (torch._foreach_add_(l, 2.5), _foreach_mul_(l, [2, -0.5]), _foreach_sub_(l, 1),
 * _foreach_div_(l, 4)); clamp_max's (min(x, 2)) were worked out by hand. */
static void expect_foreach(const char *op, const char *arg, const double *want0,
                           const double *want1) {
  static const exact_run_t runs[] = {{"cpu", XR_KERNEL_REFERENCE, "ref.elementwise"},
                                     {"cpu", XR_KERNEL_BEST, "cpu.elementwise"},
                                     {"opencl", XR_KERNEL_BEST, "opencl.elementwise"}};
  text_t t = {0}, args = {0};
  put(&t, "[");
  EXACT_DATA(&t, "float", float, 1, SHAPE(3), 1, 2, 3);
  put(&t, ", ");
  EXACT_DATA(&t, "float", float, 2, SHAPE(2, 2), -1, 0.5, 4, -8);
  put(&t, "]");
  put(&args, "{\"name\": \"self\", \"type\": \"Tensor(a!)[]\", \"value\": %s}, %s", t.s, arg);
  const char *json = bundle(op, args.s, NULL);
  exact_expect(json, op, "self.0", want0, 3, runs, sizeof runs / sizeof *runs);
  exact_expect(json, op, "self.1", want1, 4, runs, sizeof runs / sizeof *runs);
}

Test(pointwise_exact, foreach_scalar_overloads) {
  expect_foreach("aten::_foreach_add_", "{\"name\": \"scalar\", \"type\": \"Scalar\", \"value\": 2.5}",
                 (const double[]){3.5, 4.5, 5.5}, (const double[]){1.5, 3, 6.5, -5.5});
  expect_foreach("aten::_foreach_mul_",
                 "{\"name\": \"scalars\", \"type\": \"Scalar[]\", \"value\": [2, -0.5]}",
                 (const double[]){2, 4, 6}, (const double[]){0.5, -0.25, -2, 4});
  expect_foreach("aten::_foreach_sub_", "{\"name\": \"scalar\", \"type\": \"Scalar\", \"value\": 1}",
                 (const double[]){0, 1, 2}, (const double[]){-2, -0.5, 3, -9});
  expect_foreach("aten::_foreach_div_", "{\"name\": \"scalar\", \"type\": \"Scalar\", \"value\": 4}",
                 (const double[]){0.25, 0.5, 0.75}, (const double[]){-0.25, 0.125, 1, -2});
  expect_foreach("aten::_foreach_clamp_max_",
                 "{\"name\": \"scalar\", \"type\": \"Scalar\", \"value\": 2}",
                 (const double[]){1, 2, 2}, (const double[]){-1, 0.5, 2, -8});
}

/* A creation or movement op on the reference, the cpu's best kernel (`cpu_kernel`: sequences
 * stay on the reference there) and opencl; `want` as torch gives it. */
static void expect_moved(const char *op, const char *args, const char *cpu_kernel,
                         const double *want, int64_t n) {
  const exact_run_t runs[] = {{"cpu", XR_KERNEL_REFERENCE, "ref.elementwise"},
                              {"cpu", XR_KERNEL_BEST, cpu_kernel},
                              {"opencl", XR_KERNEL_BEST, "opencl.elementwise"}};
  exact_expect(bundle(op, args, NULL), op, "return0", want, n, runs, sizeof runs / sizeof *runs);
}

/* linspace's one step is [start] (torch.linspace(3, 10, 1) is tensor([3.])); more steps run
 * evenly from start to end (torch.linspace(-2, 1, 4) is [-2, -1, 0, 1]). */
Test(pointwise_exact, linspace_of_one_step_is_start) {
  expect_moved("aten::linspace",
               "{\"name\": \"start\", \"type\": \"Scalar\", \"value\": 3.0}, "
               "{\"name\": \"end\", \"type\": \"Scalar\", \"value\": 10.0}, "
               "{\"name\": \"steps\", \"type\": \"int\", \"value\": 1}",
               "ref.elementwise", (const double[]){3}, 1);
  expect_moved("aten::linspace",
               "{\"name\": \"start\", \"type\": \"Scalar\", \"value\": -2.0}, "
               "{\"name\": \"end\", \"type\": \"Scalar\", \"value\": 1.0}, "
               "{\"name\": \"steps\", \"type\": \"int\", \"value\": 4}",
               "ref.elementwise", (const double[]){-2, -1, 0, 1}, 4);
}

/* roll without dims rolls the flattened tensor and restores its shape; the wanted values were
 * printed by torch 1.13: x = torch.arange(12.).reshape(3, 4), torch.roll(x, 5),
 * torch.roll(x.t(), -2) (a transposed view read through its strides) and
 * torch.roll(torch.arange(24.).reshape(2, 3, 4), 7). */
Test(pointwise_exact, roll_without_dims_rolls_the_flattened_tensor) {
  float v[24];
  for (int i = 0; i < 24; i++) v[i] = (float)i;
  text_t t = {0}, args = {0};
  const char *x = exact_view(&t, "float", 2, SHAPE(3, 4), NULL, v, 12 * sizeof(float));
  put(&args, "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, "
      "{\"name\": \"shifts\", \"type\": \"int[]\", \"value\": [5]}, "
      "{\"name\": \"dims\", \"type\": \"int[]\", \"value\": []}", x);
  expect_moved("aten::roll", args.s, "cpu.elementwise",
               (const double[]){7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6}, 12);
  t.n = args.n = 0;
  x = exact_view(&t, "float", 2, SHAPE(4, 3), SHAPE(1, 4), v, 12 * sizeof(float));
  put(&args, "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, "
      "{\"name\": \"shifts\", \"type\": \"int[]\", \"value\": [-2]}", x);
  expect_moved("aten::roll", args.s, "cpu.elementwise",
               (const double[]){8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 0, 4}, 12);
  t.n = args.n = 0;
  x = exact_view(&t, "float", 3, SHAPE(2, 3, 4), NULL, v, 24 * sizeof(float));
  put(&args, "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, "
      "{\"name\": \"shifts\", \"type\": \"int[]\", \"value\": [7]}", x);
  expect_moved("aten::roll", args.s, "cpu.elementwise",
               (const double[]){17, 18, 19, 20, 21, 22, 23, 0, 1, 2, 3, 4,
                                5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 24);
}

/* clamp_min and clamp_max with one bound: a NaN self stays NaN (torch propagates it), infinities
 * are clamped like any value; hand-worked. */
Test(pointwise_exact, one_sided_clamps_keep_nan_and_clamp_infinities) {
  static const exact_run_t runs[] = {{"cpu", XR_KERNEL_REFERENCE, "ref.elementwise"},
                                     {"cpu", XR_KERNEL_BEST, "cpu.elementwise"},
                                     {"opencl", XR_KERNEL_BEST, "opencl.elementwise"}};
  static const char *const ops[] = {"aten::clamp_min", "aten::clamp_max"};
  static const char *const bounds[] = {"min", "max"};
  static const double want[2][6] = {{NAN, 0.5, 0.5, 2, 0.5, INFINITY},
                                    {NAN, -1, 0.5, 0.5, -INFINITY, 0.5}};
  for (int k = 0; k < 2; k++) {
    text_t t = {0}, args = {0};
    const char *self = EXACT_DATA(&t, "float", float, 1, SHAPE(6), NAN, -1, 0.5f, 2, -INFINITY,
                                  INFINITY);
    put(&args, "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, "
        "{\"name\": \"%s\", \"type\": \"Scalar\", \"value\": 0.5}", self, bounds[k]);
    exact_expect(bundle(ops[k], args.s, NULL), ops[k], "return0", want[k], 6, runs,
                 sizeof runs / sizeof *runs);
  }
}

/* Plans the one-op bundle; returns the status, the result dtype in *out_dtype when OK. */
static xr_status_t plan_dtype(const char *json, xr_dtype_t *out_dtype) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK,
               "%s", xr_last_error());
  xr_op_plan_t p;
  xr_status_t st = xr_kernel_plan(&b->ops[0], &p);
  if (st == XR_OK) {
    *out_dtype = p.return_count ? p.returns[0].dtype : XR_DTYPE_INVALID;
    xr_kernel_plan_free(&p);
  }
  xr_bundle_destroy(b);
  return st;
}

static void expect_dtype(const char *json, xr_dtype_t want) {
  xr_dtype_t got = XR_DTYPE_INVALID;
  cr_assert_eq(plan_dtype(json, &got), XR_OK, "%s: %s", json, xr_last_error());
  cr_assert_eq(got, want, "%s: %s, expected %s", json, xr_dtype_name(got), xr_dtype_name(want));
}

static void expect_error(const char *json, const char *words) {
  xr_dtype_t got;
  cr_assert_eq(plan_dtype(json, &got), XR_INVALID_ARGUMENT, "%s", json);
  cr_assert(strstr(xr_last_error(), words), "%s: %s", json, xr_last_error());
}

/* repeat_interleave with a Tensor of repeats whose contents the bundle embeds (the result's
 * size is then known); the wanted values were printed by torch 1.13:
 * repeat_interleave(int32 [2, 0, 3, 1]) is int32 [0, 0, 2, 2, 2, 3], of int64 [1, 0, 2]
 * [0, 2, 2]; with x = [[1., 2], [3, 4], [5, 6]]: repeat_interleave(x, [1, 0, 2], dim=0) is
 * [1, 2, 5, 6, 5, 6], (x, [2, 1], dim=1) [1, 1, 2, 3, 3, 4, 5, 5, 6], (x.t(), [0, 1, 2, 1, 1, 3])
 * (flattened, a transposed view) [3, 5, 5, 2, 4, 6, 6, 6], (x, tensor(2), dim=1)
 * [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]. */
static const char *repeat_args(text_t *args, const char *self, const char *repeats,
                               const char *dim) {
  args->n = 0;
  if (self) put(args, "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, ", self);
  put(args, "{\"name\": \"repeats\", \"type\": \"Tensor\", \"value\": %s}", repeats);
  if (dim) put(args, ", {\"name\": \"dim\", \"type\": \"int?\", \"value\": %s}", dim);
  return args->s;
}

Test(pointwise_exact, repeat_interleave_with_embedded_repeats) {
  text_t x = {0}, y = {0}, r = {0}, args = {0};
  const char *reps = EXACT_DATA(&r, "int", int32_t, 1, SHAPE(4), 2, 0, 3, 1);
  expect_moved("aten::repeat_interleave", repeat_args(&args, NULL, reps, NULL), "cpu.elementwise",
               (const double[]){0, 0, 2, 2, 2, 3}, 6);
  r.n = 0;
  reps = EXACT_DATA(&r, "long int", int64_t, 1, SHAPE(3), 1, 0, 2);
  expect_moved("aten::repeat_interleave", repeat_args(&args, NULL, reps, NULL), "cpu.elementwise",
               (const double[]){0, 2, 2}, 3);
  const float v[] = {1, 2, 3, 4, 5, 6};
  const char *m = exact_view(&x, "float", 2, SHAPE(3, 2), NULL, v, sizeof v);
  expect_moved("aten::repeat_interleave", repeat_args(&args, m, reps, "0"), "cpu.elementwise",
               (const double[]){1, 2, 5, 6, 5, 6}, 6);
  r.n = 0;
  reps = EXACT_DATA(&r, "long int", int64_t, 1, SHAPE(2), 2, 1);
  expect_moved("aten::repeat_interleave", repeat_args(&args, m, reps, "1"), "cpu.elementwise",
               (const double[]){1, 1, 2, 3, 3, 4, 5, 5, 6}, 9);
  r.n = 0;
  reps = EXACT_DATA(&r, "long int", int64_t, 0, NULL, 2);
  expect_moved("aten::repeat_interleave", repeat_args(&args, m, reps, "1"), "cpu.elementwise",
               (const double[]){1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}, 12);
  r.n = 0;
  const char *mt = exact_view(&y, "float", 2, SHAPE(2, 3), SHAPE(1, 2), v, sizeof v);
  reps = EXACT_DATA(&r, "long int", int64_t, 1, SHAPE(6), 0, 1, 2, 1, 1, 3);
  expect_moved("aten::repeat_interleave", repeat_args(&args, mt, reps, NULL), "cpu.elementwise",
               (const double[]){3, 5, 5, 2, 4, 6, 6, 6}, 8);
  /* bad input names the argument: a negative repeat, an output_size that is not the sum, a
   * count that is neither one nor one per index */
  r.n = 0;
  reps = EXACT_DATA(&r, "long int", int64_t, 1, SHAPE(3), 1, -1, 2);
  expect_error(bundle("aten::repeat_interleave", repeat_args(&args, m, reps, "0"), NULL),
               "aten::repeat_interleave: repeats[1]: negative (-1)");
  r.n = 0;
  reps = EXACT_DATA(&r, "long int", int64_t, 1, SHAPE(3), 1, 1, 2);
  expect_error(bundle("aten::repeat_interleave", repeat_args(&args, m, reps, "0"),
                      "{\"name\": \"output_size\", \"type\": \"SymInt?\", \"value\": 5}"),
               "aten::repeat_interleave: output_size: 5, the repeats add up to 4");
  expect_error(bundle("aten::repeat_interleave", repeat_args(&args, m, reps, "1"), NULL),
               "aten::repeat_interleave: repeats: 3 values for dimension dim of 2");
}

Test(pointwise_plan, result_dtypes_follow_torch) {
  text_t a = {0}, b = {0}, c = {0};
  const char *i32 = tensor(&a, "int", 1, SHAPE(4), NULL, 0);
  const char *bf16 = tensor(&b, "c10::BFloat16", 1, SHAPE(4), NULL, 0);
  const char *f32_0d = tensor(&c, "float", 0, NULL, NULL, 0);
  expect_dtype(pw_op("aten::exp", "self", (const char *[]){i32}, NULL), XR_DTYPE_F32);
  expect_dtype(pw_op("aten::abs", "self", (const char *[]){i32}, NULL), XR_DTYPE_I32);
  expect_dtype(pw_op("aten::eq", "self,other", (const char *[]){bf16, i32}, NULL), XR_DTYPE_BOOL);
  expect_dtype(pw_op("aten::isnan", "self", (const char *[]){bf16}, NULL), XR_DTYPE_BOOL);
  /* a dimensioned bf16 outranks a 0-d float32 and a Python float */
  expect_dtype(pw_op("aten::maximum", "self,other", (const char *[]){bf16, f32_0d}, NULL),
               XR_DTYPE_BF16);
  expect_dtype(pw_op("aten::pow", "self,exponent", (const char *[]){bf16, "2.5"}, NULL),
               XR_DTYPE_BF16);
  /* an int tensor with a float Scalar becomes the default float dtype */
  expect_dtype(pw_op("aten::pow", "self,exponent", (const char *[]){i32, "0.5"}, NULL),
               XR_DTYPE_F32);
  expect_dtype(pw_op("aten::pow", "self,exponent", (const char *[]){i32, "2"}, NULL), XR_DTYPE_I32);
  /* where's condition takes no part; masked_fill keeps self's dtype */
  const char *m = tensor(&c, "bool", 1, SHAPE(4), NULL, 0);
  expect_dtype(pw_op("aten::where", "condition,self,other", (const char *[]){m, bf16, i32}, NULL),
               XR_DTYPE_BF16);
  expect_dtype(pw_op("aten::masked_fill", "self,mask,value", (const char *[]){i32, m, "0.5"}, NULL),
               XR_DTYPE_I32);
  expect_dtype(pw_op("aten::logical_not", "self", (const char *[]){bf16}, NULL), XR_DTYPE_BOOL);
  expect_dtype(pw_op("aten::bitwise_and", "self,other", (const char *[]){m, m}, NULL),
               XR_DTYPE_BOOL);
}

Test(pointwise_plan, errors_name_the_argument) {
  text_t a = {0}, b = {0};
  const char *f32 = tensor(&a, "float", 2, SHAPE(4, 5), NULL, 0);
  expect_error(pw_op("aten::bitwise_or", "self,other", (const char *[]){f32, f32}, NULL),
               "expected integer or bool operands");
  expect_error(pw_op("aten::atan2", "self", (const char *[]){f32}, NULL), "'other'");
  const char *bad = tensor(&b, "float", 1, SHAPE(3), NULL, 0);
  expect_error(pw_op("aten::hypot", "self,other", (const char *[]){f32, bad}, NULL), "other");
  expect_error(pw_op("aten::clamp", "self", (const char *[]){f32}, NULL), "'min' and 'max'");
  xr_dtype_t got;
  cr_assert_eq(plan_dtype(pw_op("aten::clamp", "self,min", (const char *[]){f32, bad}, NULL), &got),
               XR_UNIMPLEMENTED);
  cr_assert(strstr(xr_last_error(), "a Tensor min is not implemented"), "%s", xr_last_error());
  expect_error(pw_op("aten::exp_", "self", (const char *[]){"1.0"}, NULL), "in-place");
  /* an out= that cannot take the broadcast result */
  b.n = 0;
  char kw[256];
  format(kw, sizeof kw, "{\"name\": \"out\", \"type\": \"Tensor(a!)\", \"value\": %s}",
         tensor(&b, "float", 1, SHAPE(5), NULL, 0));
  expect_error(pw_op("aten::sin", "self", (const char *[]){f32}, kw), "out");
}

/* Every row is served in its plain, in-place and _foreach_ spellings. */
Test(pointwise_plan, every_row_is_registered) {
  const char *names[4096];
  size_t n = xr_kernel_op_names(names, 4096);
  cr_assert_lt(n, 4096);
  for (size_t r = 0; r < sizeof pw_rows / sizeof *pw_rows; r++) {
    char want[3][64];
    format(want[0], sizeof want[0], "aten::%s", pw_rows[r].name);
    format(want[1], sizeof want[1], "aten::%s_", pw_rows[r].name);
    format(want[2], sizeof want[2], "aten::_foreach_%s_", pw_rows[r].name);
    for (int k = 0; k < 3; k++) {
      bool found = false;
      for (size_t i = 0; i < n && !found; i++) found = !strcmp(names[i], want[k]);
      cr_assert(found, "%s is not registered", want[k]);
    }
  }
}
