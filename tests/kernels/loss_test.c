/* The loss family (kernels/loss.c) beyond its case matrix (loss_cases.h): the reference and
 * cpu.loss on small embedded inputs against torch's values, what planning says about shapes,
 * dtypes and costs, and the errors bad arguments get.
 *
 * The expected values were produced once with python3-torch 1.13 (/usr/bin/python3) in float64:
 *   a = [[1.5, -2.0, 0.25], [3.0, 0.5, -1.0]]; b = [[0.5, 1.0, 0.25], [-1.0, 2.5, 2.0]]
 *   t = [1.0, -1.0, 0.5]; go = [[1, 2, 3], [-1, 0.5, 2]]; g = tensor(0.5)
 *   torch.ops.aten.mse_loss(a, b, r) for r in 0, 1, 2; torch.ops.aten.mse_loss(a, t, r);
 *   torch.ops.aten.mse_loss_backward(go if r == 0 else g, a, b, r);
 *   torch.ops.aten.mse_loss_backward(g, a, t, 1); ...backward(tensor([1, 2, 3]), a, b, 0)
 * and are small multiples of powers of two (exact in float32) except the means, which are
 * checked in float64 on the reference (its arithmetic is torch's: norm * (a - b) * grad). */
#include "formats/bundle.h"
#include "kernels/kernels.h"
#include "tests/kernels/exact.h"

typedef struct loss_case {
  text_t args, kwargs, data;
} loss_case_t;

static loss_case_t *lc_new(void) {
  static loss_case_t c;
  memset(&c, 0, sizeof c);
  return &c;
}

static void lc_arg(text_t *t, const char *name, const char *type, const char *value) {
  put(t, "%s{\"name\": \"%s\", \"type\": \"%s\", \"value\": %s}", t->n ? ", " : "", name, type,
      value);
}

#define F32_DATA(c, rank, shape, ...) \
  exact_tensor(&(c)->data, "float", rank, shape, (const float[]){__VA_ARGS__}, sizeof((const float[]){__VA_ARGS__}))
#define F64_DATA(c, rank, shape, ...) \
  exact_tensor(&(c)->data, "double", rank, shape, (const double[]){__VA_ARGS__}, sizeof((const double[]){__VA_ARGS__}))

#define A_VALUES 1.5, -2.0, 0.25, 3.0, 0.5, -1.0
#define B_VALUES 0.5, 1.0, 0.25, -1.0, 2.5, 2.0
#define T_VALUES 1.0, -1.0, 0.5

static const exact_run_t both[] = {{"cpu", XR_KERNEL_REFERENCE, "ref.loss"},
                                   {"cpu", XR_KERNEL_BEST, "cpu.loss"},
                                   {"opencl", XR_KERNEL_BEST, "opencl.loss"}};
static const exact_run_t reference[] = {{"cpu", XR_KERNEL_REFERENCE, "ref.loss"}};

/* mse_loss(a, target, reduction) in float32 (target b, or t broadcast along rows). */
static const char *forward32(loss_case_t *c, bool broadcast, int reduction) {
  lc_arg(&c->args, "self", "Tensor", F32_DATA(c, 2, SHAPE(2, 3), A_VALUES));
  lc_arg(&c->args, "target", "Tensor",
         broadcast ? F32_DATA(c, 1, SHAPE(3), T_VALUES) : F32_DATA(c, 2, SHAPE(2, 3), B_VALUES));
  char r[8];
  format(r, sizeof r, "%d", reduction);
  lc_arg(&c->args, "reduction", "int", r);
  return bundle("aten::mse_loss", c->args.s, c->kwargs.s);
}

Test(loss_exact, mse_loss_none_mean_sum_match_torch) {
  exact_expect(forward32(lc_new(), false, 0), "mse_loss none", "return0",
               (const double[]){1.0, 9.0, 0.0, 16.0, 4.0, 9.0}, 6, both, 3);
  exact_expect(forward32(lc_new(), false, 1), "mse_loss mean", "return0", (const double[]){6.5}, 1,
               both, 3);
  exact_expect(forward32(lc_new(), false, 2), "mse_loss sum", "return0", (const double[]){39.0}, 1,
               both, 3);
  exact_expect(forward32(lc_new(), true, 0), "mse_loss none, target broadcast", "return0",
               (const double[]){0.25, 1.0, 0.0625, 4.0, 2.25, 2.25}, 6, both, 3);
  exact_expect(forward32(lc_new(), true, 2), "mse_loss sum, target broadcast", "return0",
               (const double[]){9.8125}, 1, both, 3);
  loss_case_t *c = lc_new();
  lc_arg(&c->args, "self", "Tensor", F64_DATA(c, 2, SHAPE(2, 3), A_VALUES));
  lc_arg(&c->args, "target", "Tensor", F64_DATA(c, 1, SHAPE(3), T_VALUES));
  exact_expect(bundle("aten::mse_loss", c->args.s, NULL), "mse_loss default (mean) float64",
               "return0", (const double[]){1.6354166666666667}, 1, reference, 1);
  /* an empty mean is NaN, an empty sum 0 */
  c = lc_new();
  lc_arg(&c->args, "self", "Tensor", "{\"dtype\": \"float\", \"shape\": [0, 3]}");
  lc_arg(&c->args, "target", "Tensor", "{\"dtype\": \"float\", \"shape\": [0, 3]}");
  exact_expect(bundle("aten::mse_loss", c->args.s, NULL), "mse_loss empty mean", "return0",
               (const double[]){NAN}, 1, both, 3);
}

Test(loss_exact, mse_loss_backward_matches_torch) {
  loss_case_t *c = lc_new();
  lc_arg(&c->args, "grad_output", "Tensor", F32_DATA(c, 2, SHAPE(2, 3), 1, 2, 3, -1, 0.5, 2));
  lc_arg(&c->args, "self", "Tensor", F32_DATA(c, 2, SHAPE(2, 3), A_VALUES));
  lc_arg(&c->args, "target", "Tensor", F32_DATA(c, 2, SHAPE(2, 3), B_VALUES));
  lc_arg(&c->args, "reduction", "int", "0");
  exact_expect(bundle("aten::mse_loss_backward", c->args.s, NULL), "backward none", "return0",
               (const double[]){2.0, -12.0, 0.0, -8.0, -2.0, -12.0}, 6, both, 3);
  c = lc_new();
  lc_arg(&c->args, "grad_output", "Tensor", F32_DATA(c, 1, SHAPE(3), 1, 2, 3));
  lc_arg(&c->args, "self", "Tensor", F32_DATA(c, 2, SHAPE(2, 3), A_VALUES));
  lc_arg(&c->args, "target", "Tensor", F32_DATA(c, 2, SHAPE(2, 3), B_VALUES));
  lc_arg(&c->args, "reduction", "int", "0");
  exact_expect(bundle("aten::mse_loss_backward", c->args.s, NULL), "backward none, grad row",
               "return0", (const double[]){2.0, -12.0, 0.0, 8.0, -8.0, -18.0}, 6, both, 3);
  c = lc_new();
  lc_arg(&c->args, "grad_output", "Tensor", F32_DATA(c, 0, NULL, 0.5));
  lc_arg(&c->args, "self", "Tensor", F32_DATA(c, 2, SHAPE(2, 3), A_VALUES));
  lc_arg(&c->args, "target", "Tensor", F32_DATA(c, 2, SHAPE(2, 3), B_VALUES));
  lc_arg(&c->args, "reduction", "int", "2");
  exact_expect(bundle("aten::mse_loss_backward", c->args.s, NULL), "backward sum", "return0",
               (const double[]){1.0, -3.0, 0.0, 4.0, -2.0, -3.0}, 6, both, 3);
  c = lc_new();
  lc_arg(&c->args, "grad_output", "Tensor", F64_DATA(c, 0, NULL, 0.5));
  lc_arg(&c->args, "self", "Tensor", F64_DATA(c, 2, SHAPE(2, 3), A_VALUES));
  lc_arg(&c->args, "target", "Tensor", F64_DATA(c, 2, SHAPE(2, 3), B_VALUES));
  lc_arg(&c->args, "reduction", "int", "1");
  exact_expect(bundle("aten::mse_loss_backward", c->args.s, NULL), "backward mean", "return0",
               (const double[]){0.16666666666666666, -0.5, 0.0, 0.6666666666666666,
                                -0.3333333333333333, -0.5}, 6, reference, 1);
  c = lc_new();
  lc_arg(&c->args, "grad_output", "Tensor", F64_DATA(c, 0, NULL, 0.5));
  lc_arg(&c->args, "self", "Tensor", F64_DATA(c, 2, SHAPE(2, 3), A_VALUES));
  lc_arg(&c->args, "target", "Tensor", F64_DATA(c, 1, SHAPE(3), T_VALUES));
  lc_arg(&c->args, "reduction", "int", "1");
  exact_expect(bundle("aten::mse_loss_backward", c->args.s, NULL), "backward mean, target row",
               "return0", (const double[]){0.08333333333333333, -0.16666666666666666,
                                           -0.041666666666666664, 0.3333333333333333, 0.25, -0.25},
               6, reference, 1);
}

/* ------------------------------------------------------------------------------------------ */
/* planning                                                                                    */

/* Plans `json`: XR_OK with *out_plan filled (the caller frees it), or the error. */
static xr_status_t plan_of(const char *json, xr_bundle_t **out_bundle, xr_op_plan_t *out_plan) {
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, out_bundle),
               XR_OK, "%s", xr_last_error());
  return xr_kernel_plan(&(*out_bundle)->ops[0], out_plan);
}

static void expect_error(const char *json, const char *text) {
  xr_bundle_t *b;
  xr_op_plan_t plan;
  xr_status_t st = plan_of(json, &b, &plan);
  cr_assert_eq(st, XR_INVALID_ARGUMENT, "%s: planned (%d), expected an error saying '%s'", json,
               (int)st, text);
  cr_assert(strstr(xr_last_error(), text), "%s: '%s' does not say '%s'", json, xr_last_error(), text);
  xr_bundle_destroy(b);
}

#define TEN(dtype, shape) "{\"dtype\": \"" dtype "\", \"shape\": " shape "}"
#define ARG(name, type, value) "{\"name\": \"" name "\", \"type\": \"" type "\", \"value\": " value "}"

Test(loss_plan, result_shapes_and_dtypes_follow_torch) {
  xr_bundle_t *b;
  xr_op_plan_t plan;
  /* f16 self, f32 target: promoted to float32; [4, 1] with [5]: [4, 5] */
  cr_assert_eq(plan_of(bundle("aten::mse_loss", ARG("self", "Tensor", TEN("c10::Half", "[4, 1]")) ", "
                              ARG("target", "Tensor", TEN("float", "[5]")) ", " ARG("reduction", "int", "0"), NULL),
                       &b, &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan.returns[0].dtype, XR_DTYPE_F32);
  cr_assert_eq(plan.returns[0].rank, 2);
  cr_assert(plan.returns[0].shape[0] == 4 && plan.returns[0].shape[1] == 5);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  /* mean (the default): 0-d */
  cr_assert_eq(plan_of(bundle("aten::mse_loss", ARG("self", "Tensor", TEN("c10::BFloat16", "[4, 5]")) ", "
                              ARG("target", "Tensor", TEN("c10::BFloat16", "[4, 5]")), NULL),
                       &b, &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan.returns[0].dtype, XR_DTYPE_BF16);
  cr_assert_eq(plan.returns[0].rank, 0);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  /* backward: self's shape and dtype */
  cr_assert_eq(plan_of(bundle("aten::mse_loss_backward", ARG("grad_output", "Tensor", TEN("float", "[]")) ", "
                              ARG("self", "Tensor", TEN("float", "[3, 7]")) ", "
                              ARG("target", "Tensor", TEN("float", "[7]")) ", " ARG("reduction", "int", "1"), NULL),
                       &b, &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan.returns[0].rank, 2);
  cr_assert(plan.returns[0].shape[0] == 3 && plan.returns[0].shape[1] == 7);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
}

Test(loss_plan, bad_arguments_name_the_argument) {
  expect_error(bundle("aten::mse_loss", ARG("self", "Tensor", TEN("long int", "[4]")) ", "
                      ARG("target", "Tensor", TEN("long int", "[4]")), NULL),
               "self: long int tensors are not supported");
  expect_error(bundle("aten::mse_loss", ARG("self", "Tensor", TEN("float", "[4]")) ", "
                      ARG("target", "Tensor", TEN("float", "[4]")) ", " ARG("reduction", "int", "3"), NULL),
               "reduction: 3 is not one of 0 (none), 1 (mean), 2 (sum)");
  expect_error(bundle("aten::mse_loss", ARG("self", "Tensor", TEN("float", "[4]")) ", "
                      ARG("target", "Tensor", TEN("float", "[4]")) ", " ARG("reduction", "str", "\"avg\""), NULL),
               "reduction: 'avg' is not one of 'none', 'mean', 'sum'");
  expect_error(bundle("aten::mse_loss", ARG("self", "Tensor", TEN("float", "[4, 3]")) ", "
                      ARG("target", "Tensor", TEN("float", "[4]")), NULL),
               "target: shape [4] does not broadcast with self's [4, 3]");
  expect_error(bundle("aten::mse_loss", ARG("self", "Tensor", TEN("float", "[4]")), NULL),
               "argument 'target' (position 1) is missing");
  expect_error(bundle("aten::mse_loss_backward", ARG("grad_output", "Tensor", TEN("float", "[]")) ", "
                      ARG("self", "Tensor", TEN("float", "[4]")) ", " ARG("target", "Tensor", TEN("float", "[4]")), NULL),
               "argument 'reduction' (position 3) is missing");
  expect_error(bundle("aten::mse_loss_backward", ARG("grad_output", "Tensor", TEN("float", "[]")) ", "
                      ARG("self", "Tensor", TEN("float", "[4]")) ", " ARG("target", "Tensor", TEN("c10::Half", "[4]")) ", "
                      ARG("reduction", "int", "1"), NULL),
               "target: expected a float tensor like self, got");
  expect_error(bundle("aten::mse_loss_backward", ARG("grad_output", "Tensor", TEN("float", "[2, 4]")) ", "
                      ARG("self", "Tensor", TEN("float", "[4]")) ", " ARG("target", "Tensor", TEN("float", "[4]")) ", "
                      ARG("reduction", "int", "0"), NULL),
               "grad_output: shape [2, 4] does not broadcast to [4]");
  expect_error(bundle("aten::mse_loss", ARG("self", "Tensor", TEN("float", "[4]")) ", "
                      ARG("target", "Tensor", TEN("float", "[4]")) ", " ARG("reduction", "int", "2"),
                      ARG("out", "Tensor(a!)", TEN("float", "[4]"))),
               "out: expected the result's shape [], got [4]");
  expect_error(bundle("aten::mse_loss", ARG("self", "Tensor", TEN("float", "[4]")) ", "
                      ARG("target", "Tensor", TEN("float", "[4]")) ", " ARG("reduction", "int", "0"),
                      ARG("out", "Tensor(a!)", TEN("c10::Half", "[4]"))),
               "out: expected a float tensor, got");
}

/* float64 stays on the reference: the device kernels decline it, saying so. */
Test(loss_plan, opencl_declines_float64_with_the_reason) {
  xr_op_result_t r = check_op(bundle("aten::mse_loss", ARG("self", "Tensor", TEN("double", "[4, 3]")) ", "
                                     ARG("target", "Tensor", TEN("double", "[4, 3]")), NULL), "opencl");
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "double tensors run on the reference"), "%s", r.message);
}
