/* Softmax, layer norm and RMS norm (the norm and softmax families): every op replayed through
 * the engine with --check on "cpu" (the fast kernels against the reference) and "opencl", in
 * fp32, fp16 and bf16, rows of 1, 3, 17, 129 and 1000 elements, many rows, strided and offset
 * views, softmax over inner and outer dims; plus argument errors that name the argument. */
#include <stdarg.h>

#include "kernels/kernels.h"
#include "tests/kernels/check.h"

/* PoCL's compiler (LLVM) keeps allocations until exit; only leaks inside it are suppressed. */

static const char *const dtypes[] = {"float", "c10::Half", "c10::BFloat16"};
static const int64_t row_sizes[] = {1, 3, 17, 129, 1000};

/* A one-op TraceLens IR entry built piece by piece. */
typedef struct op_json {
  char text[16384];
  size_t len;
  int args;
} op_json_t;

static void put(op_json_t *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(j->text + j->len, sizeof j->text - j->len, fmt, ap);
  va_end(ap);
  cr_assert(n >= 0 && j->len + (size_t)n < sizeof j->text, "op JSON too long");
  j->len += (size_t)n;
}

static void begin(op_json_t *j, const char *op) {
  j->len = 0;
  j->args = 0;
  put(j, "{\"op_name\": \"%s\", \"replay_ir\": {\"list_pos_args\": [", op);
}

static void arg_head(op_json_t *j, const char *name, const char *type) {
  put(j, "%s{\"arg_name\": \"%s\", \"arg_type\": \"%s\", \"value\": ", j->args++ ? ", " : "", name,
      type);
}

/* A tensor argument; strides NULL: contiguous. */
static void tensor(op_json_t *j, const char *name, const char *type, const char *dtype, int rank,
                   const int64_t *shape, const int64_t *strides, int64_t offset) {
  arg_head(j, name, type);
  put(j, "{\"shape\": [");
  for (int d = 0; d < rank; d++) put(j, "%s%lld", d ? ", " : "", (long long)shape[d]);
  put(j, "], \"dtype\": \"%s\"", dtype);
  if (strides) {
    put(j, ", \"strides\": [");
    for (int d = 0; d < rank; d++) put(j, "%s%lld", d ? ", " : "", (long long)strides[d]);
    put(j, "]");
  }
  if (offset) put(j, ", \"storage_offset\": %lld", (long long)offset);
  put(j, "}}");
}

static void scalar(op_json_t *j, const char *name, const char *type, const char *value) {
  arg_head(j, name, type);
  put(j, "%s}", value);
}

static const char *end(op_json_t *j) {
  put(j, "], \"list_kwargs\": []}}");
  return j->text;
}

/* Replays the op on `device` and asserts a `prefix` kernel ran and matched the reference. */
static void expect_match(const char *json, const char *device, const char *prefix, uint64_t seed) {
  xr_op_result_t r = check_op_seeded(json, device, seed);
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s on %s: %s: %s", json, device,
               xr_op_outcome_name(r.outcome), r.message);
  cr_assert(r.checked && r.check_passed, "%s on %s: check failed", json, device);
  cr_assert(strncmp(r.kernel, prefix, strlen(prefix)) == 0, "%s: ran %s, expected %s*", json,
            r.kernel, prefix);
  cr_assert_gt(r.output_count, 0);
  for (size_t k = 0; k < r.output_count; k++)
    cr_assert(!r.outputs[k].nonfinite && r.outputs[k].nmse <= r.outputs[k].threshold,
              "%s: %s nmse %g", json, r.outputs[k].target, r.outputs[k].nmse);
}

/* ------------------------------------------------------------------------------------------ */
/* RMS norm                                                                                    */

/* vLLM (_C::rms_norm(result, input, weight, epsilon)) or sgl-kernel naming; `fused` for the
 * in-place add variants. `stride` > n makes input (and residual) strided row views at an
 * offset. */
static const char *rms_case(op_json_t *j, bool fused, bool sgl, const char *dt, int64_t rows,
                            int64_t n, int64_t stride) {
  const char *op = sgl ? (fused ? "sgl_kernel::fused_add_rmsnorm" : "sgl_kernel::rmsnorm")
                       : (fused ? "_C::fused_add_rms_norm" : "_C::rms_norm");
  int64_t shape[2] = {rows, n}, strides[2] = {stride, 1}, wshape[1] = {n};
  bool view = stride != n;
  begin(j, op);
  if (!fused) tensor(j, sgl ? "output" : "result", "Tensor(a!)", dt, 2, shape, NULL, 0);
  tensor(j, "input", fused ? "Tensor(a!)" : "Tensor", dt, 2, shape, view ? strides : NULL,
         view ? 5 : 0);
  if (fused) tensor(j, "residual", "Tensor(b!)", dt, 2, shape, view ? strides : NULL, view ? 2 : 0);
  tensor(j, "weight", "Tensor", dt, 1, wshape, NULL, 0);
  scalar(j, sgl ? "eps" : "epsilon", "float", "1e-06");
  if (sgl) scalar(j, "enable_pdl", "bool", "false");
  return end(j);
}

static void rms_norm_cases(const char *device, const char *prefix) {
  op_json_t j;
  uint64_t seed = 1;
  for (int fused = 0; fused < 2; fused++)
    for (size_t d = 0; d < 3; d++)
      for (size_t s = 0; s < sizeof row_sizes / sizeof *row_sizes; s++)
        expect_match(rms_case(&j, fused, false, dtypes[d], 7, row_sizes[s], row_sizes[s]), device,
                     prefix, seed++);
  for (int fused = 0; fused < 2; fused++) {
    expect_match(rms_case(&j, fused, false, "c10::BFloat16", 2500, 64, 64), device, prefix, seed++);
    expect_match(rms_case(&j, fused, false, "float", 9, 129, 200), device, prefix, seed++);
    expect_match(rms_case(&j, fused, false, "c10::Half", 5, 17, 33), device, prefix, seed++);
    expect_match(rms_case(&j, fused, true, "c10::BFloat16", 6, 1000, 1000), device, prefix, seed++);
    expect_match(rms_case(&j, fused, true, "float", 4, 129, 150), device, prefix, seed++);
  }
}

Test(rms_norm, cpu_fast_matches_reference, .timeout = 120) { rms_norm_cases("cpu", "cpu."); }
Test(rms_norm, opencl_matches_reference, .timeout = 120) { rms_norm_cases("opencl", "opencl."); }

/* ------------------------------------------------------------------------------------------ */
/* layer norm                                                                                  */

/* input [rows..., inner...]: `norm_dims` trailing dims normalised; `transposed` makes the input
 * a transposed view (rows strided by 1); weight/bias optional. */
static const char *layer_case(op_json_t *j, bool native, const char *dt, int rank,
                              const int64_t *shape, int norm_dims, bool affine, bool transposed,
                              int64_t offset) {
  begin(j, native ? "aten::native_layer_norm" : "aten::layer_norm");
  int64_t strides[4];
  if (transposed) { /* a [R, N] view of an [N, R] buffer */
    strides[0] = 1;
    strides[1] = shape[0];
  }
  tensor(j, "input", "Tensor", dt, rank, shape, transposed ? strides : NULL, offset);
  arg_head(j, "normalized_shape", "SymInt[]");
  put(j, "[");
  for (int d = rank - norm_dims; d < rank; d++)
    put(j, "%s%lld", d > rank - norm_dims ? ", " : "", (long long)shape[d]);
  put(j, "]}");
  const int64_t *inner = shape + rank - norm_dims;
  if (affine) {
    tensor(j, "weight", "Tensor?", dt, norm_dims, inner, NULL, 0);
    tensor(j, "bias", "Tensor?", dt, norm_dims, inner, NULL, 0);
  } else {
    scalar(j, "weight", "Tensor?", "null");
    scalar(j, "bias", "Tensor?", "null");
  }
  scalar(j, "eps", "float", "1e-05");
  if (!native) scalar(j, "cudnn_enable", "bool", "true");
  return end(j);
}

static void layer_norm_cases(const char *device, const char *prefix) {
  op_json_t j;
  uint64_t seed = 100;
  for (size_t d = 0; d < 3; d++)
    for (size_t s = 0; s < sizeof row_sizes / sizeof *row_sizes; s++) {
      int64_t shape[2] = {6, row_sizes[s]};
      expect_match(layer_case(&j, true, dtypes[d], 2, shape, 1, s % 2 == 0, false, 0), device,
                   prefix, seed++);
    }
  int64_t many[2] = {3000, 48}, three[3] = {4, 10, 64}, t[2] = {33, 129};
  expect_match(layer_case(&j, true, "c10::BFloat16", 2, many, 1, true, false, 0), device, prefix, seed++);
  expect_match(layer_case(&j, true, "float", 3, three, 2, true, false, 0), device, prefix, seed++);
  expect_match(layer_case(&j, false, "c10::Half", 3, three, 1, true, false, 7), device, prefix, seed++);
  expect_match(layer_case(&j, false, "float", 2, t, 1, true, true, 3), device, prefix, seed++);
  expect_match(layer_case(&j, true, "c10::BFloat16", 2, t, 1, false, true, 0), device, prefix, seed++);
}

Test(layer_norm, cpu_fast_matches_reference, .timeout = 120) { layer_norm_cases("cpu", "cpu."); }
Test(layer_norm, opencl_matches_reference, .timeout = 120) { layer_norm_cases("opencl", "opencl."); }

Test(layer_norm, native_returns_output_mean_and_rstd) {
  op_json_t j;
  int64_t shape[3] = {4, 10, 64};
  xr_bundle_t *b;
  const char *json = layer_case(&j, true, "c10::BFloat16", 3, shape, 2, true, false, 0);
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK);
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan.return_count, 3);
  cr_assert_eq(plan.returns[0].dtype, XR_DTYPE_BF16);
  for (int k = 1; k < 3; k++) {
    cr_assert_eq(plan.returns[k].dtype, XR_DTYPE_F32, "mean/rstd are fp32 for bf16 input");
    cr_assert_eq(plan.returns[k].rank, 3);
    cr_assert(plan.returns[k].shape[0] == 4 && plan.returns[k].shape[1] == 1 &&
              plan.returns[k].shape[2] == 1);
  }
  /* bf16 in and out, 640 elements per row: 2 bytes each way per element plus weight, bias,
   * and 4 + 4 bytes of statistics per row. */
  cr_assert_float_eq(plan.bytes, 4.0 * 640 * 4 + 2.0 * 640 * 2 + 4 * 8.0, 1e-9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
}

/* ------------------------------------------------------------------------------------------ */
/* softmax                                                                                     */

static const char *softmax_case(op_json_t *j, const char *op, const char *dt, int rank,
                                const int64_t *shape, const int64_t *strides, int64_t offset,
                                int dim, const char *last) {
  begin(j, op);
  tensor(j, "self", "Tensor", dt, rank, shape, strides, offset);
  char dim_text[16];
  snprintf(dim_text, sizeof dim_text, "%d", dim);
  scalar(j, "dim", "int", dim_text);
  if (!strcmp(op, "aten::_softmax")) scalar(j, "half_to_float", "bool", last);
  else scalar(j, "dtype", "ScalarType?", last);
  return end(j);
}

static void softmax_cases(const char *device, const char *prefix) {
  op_json_t j;
  uint64_t seed = 200;
  for (size_t d = 0; d < 3; d++)
    for (size_t s = 0; s < sizeof row_sizes / sizeof *row_sizes; s++) {
      int64_t inner[2] = {5, row_sizes[s]}, outer[2] = {row_sizes[s], 9};
      expect_match(softmax_case(&j, "aten::_softmax", dtypes[d], 2, inner, NULL, 0, -1, "false"),
                   device, prefix, seed++);
      expect_match(softmax_case(&j, "aten::_softmax", dtypes[d], 2, outer, NULL, 0, 0, "false"),
                   device, prefix, seed++);
    }
  int64_t many[2] = {4000, 32}, three[3] = {4, 37, 6};
  expect_match(softmax_case(&j, "aten::_softmax", "float", 2, many, NULL, 0, 1, "false"), device, prefix, seed++);
  expect_match(softmax_case(&j, "aten::_softmax", "c10::BFloat16", 3, three, NULL, 0, 1, "false"), device, prefix, seed++);
  expect_match(softmax_case(&j, "aten::_softmax", "c10::Half", 3, three, NULL, 0, 2, "true"), device, prefix, seed++);
  expect_match(softmax_case(&j, "aten::_softmax", "c10::BFloat16", 2, many, NULL, 0, -1, "true"), device, prefix, seed++);
  /* A transposed view at an offset: rows strided by 1, elements by 40. */
  int64_t vshape[2] = {17, 129}, vstrides[2] = {1, 40};
  expect_match(softmax_case(&j, "aten::_softmax", "float", 2, vshape, vstrides, 11, 1, "false"), device, prefix, seed++);
  expect_match(softmax_case(&j, "aten::_softmax", "c10::Half", 2, vshape, vstrides, 3, 0, "false"), device, prefix, seed++);
  /* aten::softmax: dtype None, widening to float (6), narrowing to half (5). */
  expect_match(softmax_case(&j, "aten::softmax", "c10::BFloat16", 3, three, NULL, 0, -1, "null"), device, prefix, seed++);
  expect_match(softmax_case(&j, "aten::softmax", "c10::Half", 3, three, NULL, 0, 1, "6"), device, prefix, seed++);
  expect_match(softmax_case(&j, "aten::softmax", "float", 3, three, NULL, 0, -1, "5"), device, prefix, seed++);
}

Test(softmax, cpu_fast_matches_reference, .timeout = 120) { softmax_cases("cpu", "cpu."); }
Test(softmax, opencl_matches_reference, .timeout = 120) { softmax_cases("opencl", "opencl."); }

Test(softmax, half_to_float_returns_float) {
  op_json_t j;
  int64_t shape[2] = {16, 64};
  xr_bundle_t *b;
  const char *json = softmax_case(&j, "aten::_softmax", "c10::Half", 2, shape, NULL, 0, -1, "true");
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK);
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_OK, "%s", xr_last_error());
  cr_assert_eq(plan.return_count, 1);
  cr_assert_eq(plan.returns[0].dtype, XR_DTYPE_F32);
  cr_assert_float_eq(plan.bytes, 16.0 * 64 * (2 + 4), 1e-9);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
}

/* ------------------------------------------------------------------------------------------ */
/* fp64 and bad arguments                                                                      */

/* Outputs of 8 MiB and more are written with streaming stores; odd row lengths put most rows
 * off a 16-byte boundary. */
Test(norm, cpu_large_outputs, .timeout = 120) {
  op_json_t j;
  uint64_t seed = 300;
  expect_match(rms_case(&j, false, false, "c10::BFloat16", 1030, 4099, 4099), "cpu", "cpu.", seed++);
  expect_match(rms_case(&j, false, false, "float", 520, 4100, 4100), "cpu", "cpu.", seed++);
  int64_t shape[2] = {1030, 4099};
  expect_match(layer_case(&j, true, "c10::Half", 2, shape, 1, true, false, 3), "cpu", "cpu.", seed++);
  expect_match(softmax_case(&j, "aten::_softmax", "c10::BFloat16", 2, shape, NULL, 0, -1, "false"),
               "cpu", "cpu.", seed++);
  expect_match(softmax_case(&j, "aten::_softmax", "float", 2, shape, NULL, 0, -1, "false"),
               "cpu", "cpu.", seed++);
}

Test(norm, fp64_runs_on_the_reference) {
  op_json_t j;
  expect_match(rms_case(&j, false, false, "double", 3, 17, 17), "cpu", "ref.norm", 7);
}

static void expect_plan_error(const char *json, const char *needle) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK,
               "%s", xr_last_error());
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&b->ops[0], &plan), XR_INVALID_ARGUMENT, "%s", json);
  cr_assert(strstr(xr_last_error(), needle), "error \"%s\" lacks \"%s\"", xr_last_error(), needle);
  xr_bundle_destroy(b);
}

Test(norm, bad_arguments_name_the_argument) {
  op_json_t j;
  int64_t shape[2] = {4, 8}, bad[1] = {7};
  begin(&j, "_C::rms_norm");
  tensor(&j, "result", "Tensor(a!)", "float", 2, shape, NULL, 0);
  tensor(&j, "input", "Tensor", "float", 2, shape, NULL, 0);
  tensor(&j, "weight", "Tensor", "float", 1, bad, NULL, 0);
  scalar(&j, "epsilon", "float", "1e-06");
  expect_plan_error(end(&j), "weight");

  begin(&j, "_C::fused_add_rms_norm");
  tensor(&j, "input", "Tensor(a!)", "float", 2, shape, NULL, 0);
  tensor(&j, "residual", "Tensor(b!)", "c10::Half", 2, shape, NULL, 0);
  tensor(&j, "weight", "Tensor", "float", 1, shape + 1, NULL, 0);
  scalar(&j, "epsilon", "float", "1e-06");
  expect_plan_error(end(&j), "residual");

  begin(&j, "aten::native_layer_norm");
  tensor(&j, "input", "Tensor", "float", 2, shape, NULL, 0);
  scalar(&j, "normalized_shape", "SymInt[]", "[9]");
  scalar(&j, "weight", "Tensor?", "null");
  scalar(&j, "bias", "Tensor?", "null");
  scalar(&j, "eps", "float", "1e-05");
  expect_plan_error(end(&j), "normalized_shape");

  expect_plan_error(softmax_case(&j, "aten::_softmax", "float", 2, shape, NULL, 0, 2, "false"), "dim");
  expect_plan_error(softmax_case(&j, "aten::_softmax", "float", 2, shape, NULL, 0, -1, "true"),
                    "half_to_float");
}
