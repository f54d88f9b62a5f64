/* Softmax, layer norm and RMS norm cases (the norm and softmax families), written once and run
 * on every driver (NORM_MATRIX at the end, the norm_matrix_<driver> targets).
 * fp32, fp16 and bf16, rows of 1, 3, 17, 129 and 1000 elements, many rows, strided and offset
 * views, softmax over inner and outer dims; aiter's RMS norms as traces record them. Each case
 * replays a one-op bundle (TraceLens IR, or our schema for the traced aiter ops) through the
 * engine with --check and expects a `prefix` kernel to match the reference. */
#ifndef XR_TESTS_KERNELS_NORM_CASES_H
#define XR_TESTS_KERNELS_NORM_CASES_H

#include <stdarg.h>

#include "tests/kernels/check.h"

static const char *const dtypes[] = {"float", "c10::Half", "c10::BFloat16"};
static const int64_t row_sizes[] = {1, 3, 17, 129, 1000};

/* A one-op TraceLens IR entry built piece by piece. */
typedef struct op_json {
  char text[16384];
  size_t len;
  int args;
} op_json_t;

static inline void put(op_json_t *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(j->text + j->len, sizeof j->text - j->len, fmt, ap);
  va_end(ap);
  cr_assert(n >= 0 && j->len + (size_t)n < sizeof j->text, "op JSON too long");
  j->len += (size_t)n;
}

static inline void begin(op_json_t *j, const char *op) {
  j->len = 0;
  j->args = 0;
  put(j, "{\"op_name\": \"%s\", \"replay_ir\": {\"list_pos_args\": [", op);
}

static inline void arg_head(op_json_t *j, const char *name, const char *type) {
  put(j, "%s{\"arg_name\": \"%s\", \"arg_type\": \"%s\", \"value\": ", j->args++ ? ", " : "", name,
      type);
}

/* A tensor argument; strides NULL: contiguous. */
static inline void tensor(op_json_t *j, const char *name, const char *type, const char *dtype, int rank,
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

static inline void scalar(op_json_t *j, const char *name, const char *type, const char *value) {
  arg_head(j, name, type);
  put(j, "%s}", value);
}

static inline const char *end(op_json_t *j) {
  put(j, "], \"list_kwargs\": []}}");
  return j->text;
}

/* Replays the op on `device` and asserts a `prefix` kernel ran and matched the reference. */
static inline xr_op_result_t expect_match(const char *json, const char *device, const char *prefix,
                                          uint64_t seed) {
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
  return r;
}

/* ------------------------------------------------------------------------------------------ */
/* RMS norm                                                                                    */

/* vLLM (_C::rms_norm(result, input, weight, epsilon)) or sgl-kernel naming; `fused` for the
 * in-place add variants. `stride` > n makes input (and residual) strided row views at an
 * offset. */
static inline const char *rms_case(op_json_t *j, bool fused, bool sgl, const char *dt, int64_t rows,
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

static inline void rms_norm_cases(const char *device, const char *prefix) {
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

/* ------------------------------------------------------------------------------------------ */
/* aiter's RMS norms, as a profiled trace records them                                          */

enum { AITER_RMSNORM, AITER_ADD_RMSNORM, AITER_ADD_CK, AITER_RMS_NORM_RETURNED };

/* A tensor argument of a traced custom op: no name, the dtype as its type (so nothing marks it
 * written: the family must). */
static inline void traced_tensor(op_json_t *j, const char *dt, int rank, const int64_t *shape,
                                 const int64_t *strides, int64_t offset) {
  put(j, "%s{\"type\": \"%s\", \"value\": {\"shape\": [", j->args++ ? ", " : "", dt);
  for (int d = 0; d < rank; d++) put(j, "%s%lld", d ? ", " : "", (long long)shape[d]);
  put(j, "], \"strides\": [");
  for (int d = 0; d < rank; d++) put(j, "%s%lld", d ? ", " : "", (long long)strides[d]);
  put(j, "], \"storage_offset\": %lld, \"dtype\": \"%s\"}}", (long long)offset, dt);
}

/* aiter::rmsnorm(out, input, weight, epsilon), aiter::add_rmsnorm(out, input, residual_in,
 * residual_out, weight, epsilon), aiter::rmsnorm2d_fwd_with_add_ck(..., epsilon,
 * use_model_sensitive_rmsnorm = 0) or aiter::rms_norm(input, weight, epsilon,
 * use_model_sensitive_rmsnorm = 0), which returns its result; `stride` > n makes input and residual_in strided row views
 * at an offset (the vLLM fixture's input is [8192, 2880] in rows of 3072). `flag`: a trailing
 * gemma_norm / use_model_sensitive_rmsnorm value, or NULL. */
static inline const char *aiter_case(op_json_t *j, int kind, const char *dt, int64_t rows,
                                     int64_t n, int64_t stride, const char *flag) {
  static const char *const ops[] = {"aiter::rmsnorm", "aiter::add_rmsnorm",
                                    "aiter::rmsnorm2d_fwd_with_add_ck", "aiter::rms_norm"};
  int64_t shape[2] = {rows, n}, dense[2] = {n, 1}, strides[2] = {stride, 1}, w[1] = {n}, one[1] = {1};
  bool view = stride != n;
  j->len = 0;
  j->args = 0;
  put(j, "{\"format\": \"xreplay-bundle\", \"ops\": [{\"name\": \"%s\", \"args\": [", ops[kind]);
  if (kind != AITER_RMS_NORM_RETURNED)
    traced_tensor(j, dt, 2, shape, dense, 0);                               /* out */
  traced_tensor(j, dt, 2, shape, view ? strides : dense, view ? 5 : 0);    /* input */
  if (kind == AITER_ADD_RMSNORM || kind == AITER_ADD_CK) {
    traced_tensor(j, dt, 2, shape, view ? strides : dense, view ? 2 : 0);  /* residual_in */
    traced_tensor(j, dt, 2, shape, dense, 0);                               /* residual_out */
  }
  traced_tensor(j, dt, 1, w, one, 0);                                       /* weight */
  put(j, ", {\"type\": \"Scalar\", \"value\": 1e-06}");
  if ((kind == AITER_ADD_CK || kind == AITER_RMS_NORM_RETURNED) && !flag) flag = "0";
  if (flag) put(j, ", {\"type\": \"Scalar\", \"value\": %s}", flag);
  put(j, "]}]}");
  return j->text;
}

/* Every output the op writes (out, and residual_out for the adds) is checked. */
static inline void expect_aiter_match(const char *json, int kind, const char *device,
                                      const char *prefix, uint64_t seed) {
  xr_op_result_t r = expect_match(json, device, prefix, seed);
  bool one = kind == AITER_RMSNORM || kind == AITER_RMS_NORM_RETURNED;
  cr_assert_eq(r.output_count, one ? 1u : 2u, "%s: outputs checked", json);
}

static inline void aiter_norm_cases(const char *device, const char *prefix) {
  op_json_t j;
  uint64_t seed = 400;
  for (int kind = AITER_RMSNORM; kind <= AITER_RMS_NORM_RETURNED; kind++)
    for (size_t d = 0; d < 3; d++)
      for (size_t s = 0; s < sizeof row_sizes / sizeof *row_sizes; s++)
        expect_aiter_match(aiter_case(&j, kind, dtypes[d], 5, row_sizes[s], row_sizes[s], NULL),
                           kind, device, prefix, seed++);
  for (int kind = AITER_RMSNORM; kind <= AITER_RMS_NORM_RETURNED; kind++) {
    expect_aiter_match(aiter_case(&j, kind, "c10::BFloat16", 2500, 64, 64, "false"), kind, device,
                       prefix, seed++);
    expect_aiter_match(aiter_case(&j, kind, "c10::BFloat16", 9, 2880, 3072, NULL), kind, device,
                       prefix, seed++);
    expect_aiter_match(aiter_case(&j, kind, "c10::Half", 6, 129, 150, NULL), kind, device, prefix,
                       seed++);
    expect_aiter_match(aiter_case(&j, kind, "float", 4, 1000, 1003, NULL), kind, device, prefix,
                       seed++);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* layer norm                                                                                  */

/* input [rows..., inner...]: `norm_dims` trailing dims normalised; `transposed` makes the input
 * a transposed view (rows strided by 1); weight/bias optional. */
static inline const char *layer_case(op_json_t *j, bool native, const char *dt, int rank,
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

static inline void layer_norm_cases(const char *device, const char *prefix) {
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

/* ------------------------------------------------------------------------------------------ */
/* softmax                                                                                     */

static inline const char *softmax_case(op_json_t *j, const char *op, const char *dt, int rank,
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

static inline void softmax_cases(const char *device, const char *prefix) {
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

/* The family's matrix (tests/kernels/matrix.c): every group on every driver. */
#define NORM_MATRIX(GROUP)                                                     \
  GROUP(rms_norm, rms_norm_cases(device, kernel_impl(device, "norm")))         \
  GROUP(aiter_rms_norm, aiter_norm_cases(device, kernel_impl(device, "norm"))) \
  GROUP(layer_norm, layer_norm_cases(device, kernel_impl(device, "norm")))     \
  GROUP(softmax, softmax_cases(device, kernel_impl(device, "softmax")))
#define NORM_MATRIX_GAPS(GAP)

#endif
