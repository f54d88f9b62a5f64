/* The elementwise family through the replay engine with --check: on "cpu" the fast
 * implementation (cpu.elementwise) against ref.elementwise, on "opencl" opencl.elementwise
 * against the same reference; fresh seeded inputs per case, outputs poisoned before the run.
 * Also plan-level checks: result shapes and dtypes (broadcasting, type promotion) and errors
 * that name the argument. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "tests/kernels/bundle_text.h"

static void both(const char *json) {
  expect_match(json, "cpu", "cpu.elementwise");
  expect_match(json, "opencl", "opencl.elementwise");
}

/* Plans without running; returns the status (and the plan when OK, freed by the caller). */
static xr_status_t plan_of(const char *json, xr_bundle_t **out_bundle, xr_op_plan_t *plan) {
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, out_bundle),
               XR_OK, "%s", xr_last_error());
  return xr_kernel_plan(&(*out_bundle)->ops[0], plan);
}

/* ------------------------------------------------------------------------------------------ */
/* binary arithmetic                                                                           */

static const int64_t sizes[] = {1, 3, 17, 129, 1000};

static const char *binary(const char *op, const char *self, const char *other, const char *kwargs) {
  static char args[8192];
  format(args, sizeof args,
           "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, "
           "{\"name\": \"other\", \"type\": \"%s\", \"value\": %s}",
           self, other[0] == '{' ? "Tensor" : "Scalar", other);
  return bundle(op, args, kwargs);
}

Test(elementwise_cpu, add_sub_mul_div_sizes_and_dtypes) {
  const char *dtypes[] = {"float", "c10::BFloat16", "c10::Half"};
  const char *ops[] = {"aten::add", "aten::sub", "aten::mul", "aten::div"};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
    for (size_t d = 0; d < 3; d++)
      for (size_t o = 0; o < 4; o++) {
        text_t a = {0}, b = {0};
        const char *kw = o < 2 ? "{\"name\": \"alpha\", \"type\": \"Scalar\", \"value\": 0.5}" : NULL;
        expect_match(binary(ops[o], tensor(&a, dtypes[d], 1, SHAPE(sizes[s]), NULL, 0),
                            tensor(&b, dtypes[d], 1, SHAPE(sizes[s]), NULL, 0), kw),
                     "cpu", "cpu.elementwise");
      }
}

Test(elementwise_cpu, broadcasting_views_scalars_and_edges) {
  text_t a = {0}, b = {0};
  /* numpy broadcasting with alpha (the golden bf16 case's shape, other sizes) */
  expect_match(binary("aten::add", tensor(&a, "c10::BFloat16", 3, SHAPE(8, 1, 65), NULL, 0),
                      tensor(&b, "c10::BFloat16", 3, SHAPE(1, 5, 65), NULL, 0),
                      "{\"name\": \"alpha\", \"type\": \"Scalar\", \"value\": 2}"),
               "cpu", "cpu.elementwise");
  /* a transposed view plus an offset view */
  a.n = b.n = 0;
  expect_match(binary("aten::mul", tensor(&a, "float", 2, SHAPE(33, 17), SHAPE(1, 33), 0),
                      tensor(&b, "float", 2, SHAPE(33, 17), SHAPE(20, 1), 7), NULL),
               "cpu", "cpu.elementwise");
  /* float tensor * double 0-d tensor -> float (the real-trace fixture) */
  a.n = b.n = 0;
  expect_match(binary("aten::mul", tensor(&a, "float", 3, SHAPE(1, 559, 64), SHAPE(35776, 64, 1), 0),
                      tensor(&b, "double", 0, NULL, NULL, 0), NULL),
               "cpu", "cpu.elementwise");
  /* Scalar overloads: int and float scalars */
  a.n = 0;
  expect_match(binary("aten::sub", tensor(&a, "c10::Half", 2, SHAPE(17, 129), NULL, 0), "0.25",
                      "{\"name\": \"alpha\", \"type\": \"Scalar\", \"value\": 3}"),
               "cpu", "cpu.elementwise");
  a.n = 0;
  expect_match(binary("aten::div", tensor(&a, "float", 1, SHAPE(1000), NULL, 0), "3", NULL), "cpu",
               "cpu.elementwise");
  /* rounding modes */
  const char *modes[] = {"\"trunc\"", "\"floor\"", "null"};
  for (int m = 0; m < 3; m++) {
    char kw[128];
    format(kw, sizeof kw, "{\"name\": \"rounding_mode\", \"type\": \"str?\", \"value\": %s}", modes[m]);
    a.n = b.n = 0;
    expect_match(binary("aten::div", tensor(&a, "float", 2, SHAPE(40, 50), NULL, 0),
                        tensor(&b, "float", 1, SHAPE(50), NULL, 0), kw),
                 "cpu", "cpu.elementwise");
  }
  /* 0-d with 0-d, and empty tensors */
  a.n = b.n = 0;
  expect_match(binary("aten::add", tensor(&a, "float", 0, NULL, NULL, 0), tensor(&b, "float", 0, NULL, NULL, 0), NULL),
               "cpu", "cpu.elementwise");
  a.n = b.n = 0;
  expect_match(binary("aten::add", tensor(&a, "float", 2, SHAPE(0, 5), NULL, 0),
                      tensor(&b, "float", 1, SHAPE(5), NULL, 0), NULL),
               "cpu", "cpu.elementwise");
  /* mixed float dtypes promote: bf16 + f32 -> f32 */
  a.n = b.n = 0;
  expect_match(binary("aten::add", tensor(&a, "c10::BFloat16", 2, SHAPE(9, 31), NULL, 0),
                      tensor(&b, "float", 2, SHAPE(9, 31), NULL, 0), NULL),
               "cpu", "cpu.elementwise");
  /* integers and f64 run on the reference */
  a.n = b.n = 0;
  expect_match(binary("aten::add", tensor(&a, "long int", 1, SHAPE(100), NULL, 0),
                      tensor(&b, "long int", 1, SHAPE(100), NULL, 0), NULL),
               "cpu", "ref.elementwise");
}

Test(elementwise_cpu, in_place_and_out) {
  text_t a = {0}, b = {0};
  char args[4096];
  format(args, sizeof args,
           "{\"name\": \"self\", \"type\": \"Tensor(a!)\", \"value\": %s}, "
           "{\"name\": \"other\", \"type\": \"Tensor\", \"value\": %s}",
           tensor(&a, "c10::BFloat16", 2, SHAPE(12, 40), SHAPE(1, 12), 0),
           tensor(&b, "c10::BFloat16", 1, SHAPE(40), NULL, 0));
  expect_match(bundle("aten::mul_", args, NULL), "cpu", "cpu.elementwise");
  expect_match(bundle("aten::add_", args, "{\"name\": \"alpha\", \"type\": \"Scalar\", \"value\": -1.5}"),
               "cpu", "cpu.elementwise");
  a.n = b.n = 0;
  text_t o = {0};
  char kw[1024];
  format(kw, sizeof kw, "{\"name\": \"out\", \"type\": \"Tensor(a!)\", \"value\": %s}",
           tensor(&o, "float", 2, SHAPE(6, 7), SHAPE(1, 6), 0));
  expect_match(binary("aten::add", tensor(&a, "float", 2, SHAPE(6, 7), NULL, 0),
                      tensor(&b, "float", 2, SHAPE(6, 1), NULL, 0), kw),
               "cpu", "cpu.elementwise");
}

Test(elementwise_plan, shapes_dtypes_and_errors) {
  text_t a = {0}, b = {0};
  xr_bundle_t *bd;
  xr_op_plan_t p;
  /* float * double 0-d: float; broadcast shape */
  cr_assert_eq(plan_of(binary("aten::mul", tensor(&a, "float", 3, SHAPE(2, 1, 4), NULL, 0),
                              tensor(&b, "double", 0, NULL, NULL, 0), NULL), &bd, &p), XR_OK,
               "%s", xr_last_error());
  cr_assert_eq(p.returns[0].dtype, XR_DTYPE_F32);
  cr_assert_eq(p.returns[0].rank, 3);
  cr_assert_eq(p.bytes, 2 * 4 * 4 + 8 + 2 * 4 * 4);
  xr_kernel_plan_free(&p);
  xr_bundle_destroy(bd);
  /* int tensor / int scalar -> float32; int + 0.5 -> float32; bf16 + f16 -> f32 */
  a.n = 0;
  cr_assert_eq(plan_of(binary("aten::div", tensor(&a, "int", 1, SHAPE(3), NULL, 0), "2", NULL), &bd, &p), XR_OK);
  cr_assert_eq(p.returns[0].dtype, XR_DTYPE_F32);
  xr_kernel_plan_free(&p);
  xr_bundle_destroy(bd);
  a.n = 0;
  cr_assert_eq(plan_of(binary("aten::add", tensor(&a, "long int", 1, SHAPE(3), NULL, 0), "0.5", NULL), &bd, &p), XR_OK);
  cr_assert_eq(p.returns[0].dtype, XR_DTYPE_F32);
  xr_kernel_plan_free(&p);
  xr_bundle_destroy(bd);
  a.n = b.n = 0;
  cr_assert_eq(plan_of(binary("aten::add", tensor(&a, "c10::BFloat16", 2, SHAPE(4, 5), NULL, 0),
                              tensor(&b, "c10::Half", 1, SHAPE(5), NULL, 0), NULL), &bd, &p), XR_OK);
  cr_assert_eq(p.returns[0].dtype, XR_DTYPE_F32);
  cr_assert_eq(p.returns[0].shape[0], 4);
  xr_kernel_plan_free(&p);
  xr_bundle_destroy(bd);
  /* shapes that do not broadcast name the argument */
  a.n = b.n = 0;
  cr_assert_eq(plan_of(binary("aten::add", tensor(&a, "float", 2, SHAPE(4, 5), NULL, 0),
                              tensor(&b, "float", 1, SHAPE(3), NULL, 0), NULL), &bd, &p),
               XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "other") && strstr(xr_last_error(), "aten::add"), "%s", xr_last_error());
  xr_bundle_destroy(bd);
  /* gated: odd last dimension */
  a.n = b.n = 0;
  char args[2048];
  format(args, sizeof args,
           "{\"name\": \"result\", \"type\": \"Tensor(a!)\", \"value\": %s}, "
           "{\"name\": \"input\", \"type\": \"Tensor\", \"value\": %s}",
           tensor(&a, "float", 2, SHAPE(3, 4), NULL, 0), tensor(&b, "float", 2, SHAPE(3, 9), NULL, 0));
  cr_assert_eq(plan_of(bundle("_C::silu_and_mul", args, NULL), &bd, &p), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "input"), "%s", xr_last_error());
  xr_bundle_destroy(bd);
  /* gelu's approximate must be none or tanh */
  a.n = 0;
  format(args, sizeof args, "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}",
           tensor(&a, "float", 1, SHAPE(4), NULL, 0));
  cr_assert_eq(plan_of(bundle("aten::gelu", args, "{\"name\": \"approximate\", \"type\": \"str\", \"value\": \"erf\"}"),
                       &bd, &p), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "approximate"), "%s", xr_last_error());
  xr_bundle_destroy(bd);
}

/* ------------------------------------------------------------------------------------------ */
/* activations                                                                                 */

static const char *unary(const char *op, const char *self, const char *approximate) {
  static char kw[128];
  static char args[4096];
  format(args, sizeof args, "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}", self);
  if (approximate)
    format(kw, sizeof kw, "{\"name\": \"approximate\", \"type\": \"str\", \"value\": \"%s\"}", approximate);
  return bundle(op, args, approximate ? kw : NULL);
}

Test(elementwise_cpu, gelu_and_silu) {
  const char *dtypes[] = {"float", "c10::BFloat16", "c10::Half"};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
    for (size_t d = 0; d < 3; d++) {
      text_t a = {0};
      const char *t = tensor(&a, dtypes[d], 2, SHAPE(3, sizes[s]), NULL, 0);
      expect_match(unary("aten::gelu", t, "none"), "cpu", "cpu.elementwise");
      expect_match(unary("aten::gelu", t, "tanh"), "cpu", "cpu.elementwise");
      expect_match(unary("aten::silu", t, NULL), "cpu", "cpu.elementwise");
    }
  text_t a = {0};
  const char *t = tensor(&a, "float", 2, SHAPE(40, 30), SHAPE(1, 41), 3); /* transposed, offset */
  expect_match(unary("aten::silu", t, NULL), "cpu", "cpu.elementwise");
  expect_match(unary("aten::gelu", t, NULL), "cpu", "cpu.elementwise");
}

static const char *gated(const char *op, const char *out_name, const char *out, const char *in) {
  static char args[4096];
  format(args, sizeof args,
           "{\"name\": \"%s\", \"type\": \"Tensor(a!)\", \"value\": %s}, "
           "{\"name\": \"input\", \"type\": \"Tensor\", \"value\": %s}",
           out_name, out, in);
  return bundle(op, args, NULL);
}

Test(elementwise_cpu, gated_activations) {
  const char *ops[] = {"_C::silu_and_mul", "_C::gelu_and_mul", "_C::gelu_tanh_and_mul",
                       "sgl_kernel::silu_and_mul", "sgl_kernel::gelu_tanh_and_mul"};
  const char *dtypes[] = {"float", "c10::BFloat16", "c10::Half"};
  for (size_t o = 0; o < 5; o++)
    for (size_t d = 0; d < 3; d++)
      for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        text_t a = {0}, b = {0};
        int64_t n = sizes[s];
        expect_match(gated(ops[o], o < 3 ? "result" : "out",
                           tensor(&a, dtypes[d], 2, SHAPE(5, n), NULL, 0),
                           tensor(&b, dtypes[d], 2, SHAPE(5, 2 * n), NULL, 0)),
                     "cpu", "cpu.elementwise");
      }
  /* rows of a wider buffer (a strided view) with an offset; a 3-D input */
  text_t a = {0}, b = {0};
  expect_match(gated("_C::silu_and_mul", "result", tensor(&a, "c10::BFloat16", 2, SHAPE(3, 344), NULL, 0),
                     tensor(&b, "c10::BFloat16", 2, SHAPE(3, 688), SHAPE(1000, 1), 11)),
               "cpu", "cpu.elementwise");
  a.n = b.n = 0;
  expect_match(gated("_C::silu_and_mul", "result", tensor(&a, "float", 3, SHAPE(2, 3, 17), NULL, 0),
                     tensor(&b, "float", 3, SHAPE(2, 3, 34), NULL, 0)),
               "cpu", "cpu.elementwise");
}

/* ------------------------------------------------------------------------------------------ */
/* copies, conversions, fills                                                                  */

static const char *copy_(const char *self, const char *src) {
  static char args[4096];
  format(args, sizeof args,
           "{\"name\": \"self\", \"type\": \"Tensor(a!)\", \"value\": %s}, "
           "{\"name\": \"src\", \"type\": \"Tensor\", \"value\": %s}, "
           "{\"name\": \"non_blocking\", \"type\": \"bool\", \"value\": false}",
           self, src);
  return bundle("aten::copy_", args, NULL);
}

static const char *to_copy(const char *op, const char *self, int dtype_code) {
  static char args[4096], kw[128];
  format(args, sizeof args, "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}", self);
  format(kw, sizeof kw, "{\"name\": \"dtype\", \"type\": \"ScalarType?\", \"value\": %d}", dtype_code);
  return bundle(op, args, kw);
}

/* torch.ScalarType codes */
enum { T_HALF = 5, T_FLOAT = 6, T_BF16 = 15, T_E5M2 = 23, T_E4M3FN = 24, T_E5M2FNUZ = 25,
       T_E4M3FNUZ = 26 };

Test(elementwise_cpu, copies_and_conversions) {
  text_t a = {0}, b = {0};
  /* same dtype (raw) contiguous, transposed, broadcast source */
  expect_match(copy_(tensor(&a, "int", 2, SHAPE(1, 512), NULL, 0), tensor(&b, "int", 2, SHAPE(1, 512), NULL, 0)),
               "cpu", "cpu.elementwise");
  a.n = b.n = 0;
  expect_match(copy_(tensor(&a, "float", 2, SHAPE(33, 65), NULL, 0), tensor(&b, "float", 2, SHAPE(33, 65), SHAPE(1, 33), 0)),
               "cpu", "cpu.elementwise");
  a.n = b.n = 0;
  expect_match(copy_(tensor(&a, "c10::BFloat16", 2, SHAPE(4, 129), NULL, 0), tensor(&b, "c10::BFloat16", 1, SHAPE(129), NULL, 0)),
               "cpu", "cpu.elementwise");
  /* conversions through copy_ */
  a.n = b.n = 0;
  expect_match(copy_(tensor(&a, "float", 2, SHAPE(17, 30), NULL, 0), tensor(&b, "c10::Half", 2, SHAPE(17, 30), SHAPE(1, 17), 2)),
               "cpu", "cpu.elementwise");
  /* _to_copy and to: f32 -> every narrow float, and back */
  const int codes[] = {T_HALF, T_BF16, T_E4M3FN, T_E5M2, T_E4M3FNUZ, T_E5M2FNUZ};
  const char *narrow[] = {"c10::Half", "c10::BFloat16", "c10::Float8_e4m3fn", "c10::Float8_e5m2",
                          "c10::Float8_e4m3fnuz", "c10::Float8_e5m2fnuz"};
  for (int k = 0; k < 6; k++)
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
      a.n = b.n = 0;
      expect_match(to_copy("aten::_to_copy", tensor(&a, "float", 1, SHAPE(sizes[s]), NULL, 0), codes[k]),
                   "cpu", "cpu.elementwise");
      expect_match(to_copy("aten::to", tensor(&b, narrow[k], 2, SHAPE(3, sizes[s]), NULL, 0), T_FLOAT),
                   "cpu", "cpu.elementwise");
    }
  /* bf16 -> fp8 */
  a.n = 0;
  expect_match(to_copy("aten::_to_copy", tensor(&a, "c10::BFloat16", 1, SHAPE(100), NULL, 0), T_E4M3FN), "cpu",
               "cpu.elementwise");
  /* 0-d and empty */
  a.n = 0;
  expect_match(to_copy("aten::_to_copy", tensor(&a, "float", 0, NULL, NULL, 0), T_BF16), "cpu", "cpu.elementwise");
  a.n = 0;
  expect_match(to_copy("aten::_to_copy", tensor(&a, "float", 2, SHAPE(0, 3), NULL, 0), T_BF16), "cpu", "cpu.elementwise");
}

static const char *fill(const char *self, const char *value) {
  static char args[4096];
  format(args, sizeof args,
           "{\"name\": \"self\", \"type\": \"Tensor(a!)\", \"value\": %s}%s%s%s%s%s",
           self, value ? ", {\"name\": \"value\", \"type\": \"" : "",
           value ? (value[0] == '{' ? "Tensor" : "Scalar") : "", value ? "\", \"value\": " : "",
           value ? value : "", value ? "}" : "");
  static char json[8192];
  format(json, sizeof json, "%s", bundle(value ? "aten::fill_" : "aten::zero_", args, NULL));
  return json;
}

Test(elementwise_cpu, fills) {
  text_t a = {0}, b = {0};
  expect_match(fill(tensor(&a, "float", 1, SHAPE(1000), NULL, 0), "2.5"), "cpu", "cpu.elementwise");
  a.n = 0;
  expect_match(fill(tensor(&a, "long int", 1, SHAPE(17), NULL, 0), "-1"), "cpu", "cpu.elementwise");
  a.n = 0;
  expect_match(fill(tensor(&a, "c10::BFloat16", 2, SHAPE(9, 13), SHAPE(1, 10), 4), "-0.375"), "cpu", "cpu.elementwise");
  a.n = 0;
  expect_match(fill(tensor(&a, "c10::Half", 2, SHAPE(3, 129), NULL, 0), NULL), "cpu", "cpu.elementwise");
  a.n = 0;
  expect_match(fill(tensor(&a, "long int", 1, SHAPE(0), NULL, 0), "-1"), "cpu", "cpu.elementwise");
  a.n = b.n = 0;
  expect_match(fill(tensor(&a, "float", 2, SHAPE(5, 6), NULL, 0), tensor(&b, "float", 0, NULL, NULL, 0)),
               "cpu", "cpu.elementwise");
}

/* Outputs of 8 MiB and more are written with streaming stores: rows that start off a 16-byte
 * boundary (odd widths, storage offsets), fills, raw copies. Same-dtype transposed copies go
 * tile by tile: edge tiles, every element size, a batch dim, large (streamed) and small. */
Test(elementwise_cpu, large_outputs_and_transposed_tiles, .timeout = 120) {
  text_t a = {0}, b = {0};
  expect_match(binary("aten::add", tensor(&a, "c10::BFloat16", 2, SHAPE(1030, 4099), NULL, 0),
                      tensor(&b, "c10::BFloat16", 2, SHAPE(1030, 4099), NULL, 0), NULL),
               "cpu", "cpu.elementwise");
  a.n = 0;
  expect_match(unary("aten::gelu", tensor(&a, "float", 2, SHAPE(1030, 2049), NULL, 0), "tanh"),
               "cpu", "cpu.elementwise");
  a.n = b.n = 0;
  expect_match(copy_(tensor(&a, "float", 2, SHAPE(1030, 2049), NULL, 3),
                     tensor(&b, "c10::BFloat16", 2, SHAPE(1030, 2049), NULL, 0)),
               "cpu", "cpu.elementwise");
  a.n = b.n = 0;
  expect_match(copy_(tensor(&a, "c10::Half", 2, SHAPE(2049, 2049), NULL, 1),
                     tensor(&b, "c10::Half", 2, SHAPE(2049, 2049), NULL, 5)),
               "cpu", "cpu.elementwise");
  a.n = 0;
  expect_match(fill(tensor(&a, "c10::BFloat16", 2, SHAPE(2049, 2049), NULL, 1), "1.5"), "cpu",
               "cpu.elementwise");
  a.n = b.n = 0;
  expect_match(copy_(tensor(&a, "float", 2, SHAPE(1000, 2100), NULL, 0),
                     tensor(&b, "float", 2, SHAPE(1000, 2100), SHAPE(1, 1000), 0)),
               "cpu", "cpu.elementwise");
  a.n = b.n = 0;
  expect_match(copy_(tensor(&a, "double", 2, SHAPE(65, 130), NULL, 0),
                     tensor(&b, "double", 2, SHAPE(65, 130), SHAPE(1, 65), 0)),
               "cpu", "cpu.elementwise");
  a.n = b.n = 0;
  expect_match(copy_(tensor(&a, "c10::Half", 3, SHAPE(3, 70, 90), NULL, 0),
                     tensor(&b, "c10::Half", 3, SHAPE(3, 70, 90), SHAPE(6300, 1, 70), 2)),
               "cpu", "cpu.elementwise");
  a.n = b.n = 0;
  expect_match(copy_(tensor(&a, "signed char", 2, SHAPE(129, 3), NULL, 0),
                     tensor(&b, "signed char", 2, SHAPE(129, 3), SHAPE(1, 129), 0)),
               "cpu", "cpu.elementwise");
}

/* ------------------------------------------------------------------------------------------ */
/* OpenCL: one case per op class and dtype pattern (each distinct program costs a compile)     */

Test(elementwise_opencl, every_op_class, .timeout = 240) {
  text_t a = {0}, b = {0};
  both(binary("aten::add", tensor(&a, "c10::BFloat16", 3, SHAPE(8, 1, 65), NULL, 0),
              tensor(&b, "c10::BFloat16", 3, SHAPE(1, 5, 65), NULL, 0),
              "{\"name\": \"alpha\", \"type\": \"Scalar\", \"value\": 0.5}"));
  a.n = 0;
  both(binary("aten::sub", tensor(&a, "c10::Half", 2, SHAPE(17, 129), SHAPE(130, 1), 5), "0.25", NULL));
  /* float * double 0-d (the real-trace fixture), then the same program over sizes and views */
  a.n = b.n = 0;
  const char *scale = tensor(&b, "double", 0, NULL, NULL, 0);
  both(binary("aten::mul", tensor(&a, "float", 3, SHAPE(1, 559, 64), SHAPE(35776, 64, 1), 0), scale, NULL));
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    a.n = 0;
    both(binary("aten::mul", tensor(&a, "float", 2, SHAPE(sizes[s], 3), SHAPE(1, sizes[s]), 1), scale, NULL));
  }
  const char *floor_mode = "{\"name\": \"rounding_mode\", \"type\": \"str?\", \"value\": \"floor\"}";
  a.n = b.n = 0;
  both(binary("aten::div", tensor(&a, "float", 2, SHAPE(40, 50), NULL, 0), tensor(&b, "float", 1, SHAPE(50), NULL, 0),
              floor_mode));
  a.n = b.n = 0;
  both(binary("aten::div", tensor(&a, "float", 0, NULL, NULL, 0), tensor(&b, "float", 0, NULL, NULL, 0), floor_mode));
  a.n = b.n = 0;
  both(binary("aten::div", tensor(&a, "float", 2, SHAPE(0, 5), NULL, 0), tensor(&b, "float", 1, SHAPE(5), NULL, 0),
              floor_mode));
  a.n = 0;
  const char *t = tensor(&a, "c10::BFloat16", 2, SHAPE(33, 65), NULL, 0);
  both(unary("aten::gelu", t, "none"));
  both(unary("aten::gelu", t, "tanh"));
  both(unary("aten::silu", t, NULL));
  a.n = b.n = 0;
  both(gated("_C::silu_and_mul", "result", tensor(&a, "c10::BFloat16", 2, SHAPE(5, 344), NULL, 0),
             tensor(&b, "c10::BFloat16", 2, SHAPE(5, 688), SHAPE(1000, 1), 3)));
  a.n = b.n = 0;
  both(gated("sgl_kernel::gelu_and_mul", "out", tensor(&a, "c10::Half", 2, SHAPE(3, 129), NULL, 0),
             tensor(&b, "c10::Half", 2, SHAPE(3, 258), NULL, 0)));
  a.n = b.n = 0;
  both(copy_(tensor(&a, "int", 2, SHAPE(1, 512), NULL, 0), tensor(&b, "int", 2, SHAPE(1, 512), NULL, 0)));
  a.n = b.n = 0;
  both(copy_(tensor(&a, "float", 2, SHAPE(17, 30), NULL, 0), tensor(&b, "c10::BFloat16", 2, SHAPE(17, 30), SHAPE(1, 17), 2)));
  /* fp8: two encodings each way */
  a.n = b.n = 0;
  both(to_copy("aten::_to_copy", tensor(&a, "float", 1, SHAPE(1000), NULL, 0), T_E4M3FN));
  both(to_copy("aten::_to_copy", tensor(&b, "float", 1, SHAPE(1000), NULL, 0), T_E5M2FNUZ));
  a.n = b.n = 0;
  both(to_copy("aten::to", tensor(&a, "c10::Float8_e5m2", 1, SHAPE(129), NULL, 0), T_FLOAT));
  both(to_copy("aten::to", tensor(&b, "c10::Float8_e4m3fnuz", 1, SHAPE(129), NULL, 0), T_FLOAT));
  a.n = 0;
  both(fill(tensor(&a, "long int", 1, SHAPE(17), NULL, 0), "-1"));
  a.n = 0;
  both(fill(tensor(&a, "c10::BFloat16", 2, SHAPE(9, 13), SHAPE(1, 10), 4), "-0.375"));
}
