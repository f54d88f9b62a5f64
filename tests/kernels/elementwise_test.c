/* The elementwise family beyond its case matrix (elementwise_cases.h, run on every driver by
 * the elementwise_matrix_* targets): what the cpu leaves to the reference, large outputs and
 * transposed tiles on the cpu, and plan-level checks: result shapes and dtypes (broadcasting, type promotion)
 * and errors that name the argument. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "formats/bundle.h"
#include "kernels/kernels.h"
#include "tests/kernels/elementwise_cases.h"

/* Plans without running; returns the status (and the plan when OK, freed by the caller). */
static xr_status_t plan_of(const char *json, xr_bundle_t **out_bundle, xr_op_plan_t *plan) {
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, out_bundle),
               XR_OK, "%s", xr_last_error());
  return xr_kernel_plan(&(*out_bundle)->ops[0], plan);
}

Test(elementwise_cpu, integers_run_on_the_reference) {
  text_t a = {0}, b = {0};
  expect_match(binary("aten::add", tensor(&a, "long int", 1, SHAPE(100), NULL, 0),
                      tensor(&b, "long int", 1, SHAPE(100), NULL, 0), NULL),
               "cpu", "ref.elementwise");
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

/* Outputs of 8 MiB and more are written with streaming stores: rows that start off a 16-byte
 * boundary (odd widths, storage offsets), fills, raw copies. Same-dtype transposed copies go
 * tile by tile: edge tiles, every element size, a batch dim, large (streamed) and small. */
Test(elementwise_cpu, large_outputs_and_transposed_tiles) {
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
  /* whole 16 x 16 blocks (the AVX-512 transpose), streamed and at offsets */
  a.n = b.n = 0;
  expect_match(copy_(tensor(&a, "float", 2, SHAPE(1024, 2048), NULL, 0),
                     tensor(&b, "float", 2, SHAPE(1024, 2048), SHAPE(1, 1024), 0)),
               "cpu", "cpu.elementwise");
  a.n = b.n = 0;
  expect_match(copy_(tensor(&a, "float", 3, SHAPE(2, 48, 80), NULL, 4),
                     tensor(&b, "float", 3, SHAPE(2, 48, 80), SHAPE(3840, 1, 48), 1)),
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
