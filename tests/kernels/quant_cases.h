/* vLLM's fp8 quantization ops (kernels/quant.h) as one-op bundles, written once and run on
 * every driver (QUANT_MATRIX at the end, the quant_matrix_<driver> targets; quant_test.c
 * compares them bit for bit too): static (per tensor, per channel, group_shape, 2-D groups),
 * dynamic per tensor and per token (with and without scale_ub), f32/f16/bf16 inputs, e4m3fn and
 * e4m3fnuz results, 3-D inputs, strided views, padded results and rows long enough to be split.
 * Each replays with --check: the result and the scales the dynamic ops write are compared with
 * the reference (fp8 as decoded values). */
#ifndef XR_TESTS_KERNELS_QUANT_CASES_H
#define XR_TESTS_KERNELS_QUANT_CASES_H

#include "tests/kernels/attention_case.h"

#define Q_STATIC "_C::static_scaled_fp8_quant"
#define Q_DYNAMIC "_C::dynamic_scaled_fp8_quant"
#define Q_TOKEN "_C::dynamic_per_token_scaled_fp8_quant"
#define FN "c10::Float8_e4m3fn"
#define FNUZ "c10::Float8_e4m3fnuz"
#define Q_F16 "c10::Half"
#define Q_BF16 "c10::BFloat16"

typedef struct quant_case {
  const char *what, *op, *in_dtype, *out_dtype;
  int rank;
  int64_t shape[3];
  int64_t out_rows;     /* 0: the input's; more: a padded 2-D result */
  int64_t row_stride;   /* 0: contiguous 2-D input; more: a strided view of a 2-D input */
  int scale_rank;
  int64_t scale_shape[2];
  const char *group_shape; /* JSON int list or NULL */
  bool ub;                 /* per token: a scale_ub */
} quant_case_t;

/* The bundle of case c. */
static inline const char *quant_json(jbuf_t *b, const quant_case_t *c) {
  op_begin(b, c->op);
  int64_t out_shape[3] = {c->shape[0], c->shape[1], c->shape[2]};
  if (c->out_rows) out_shape[0] = c->out_rows;
  arg_tensor(b, "result", "Tensor!", c->rank, out_shape, NULL, c->out_dtype, "\"init\": null");
  if (c->row_stride) {
    int64_t strides[2] = {c->row_stride, 1};
    arg_tensor(b, "input", "Tensor", c->rank, c->shape, strides, c->in_dtype, "\"storage_offset\": 16");
  } else {
    arg_tensor(b, "input", "Tensor", c->rank, c->shape, NULL, c->in_dtype, NULL);
  }
  bool written = strcmp(c->op, Q_STATIC) != 0;
  arg_tensor(b, "scale", written ? "Tensor!" : "Tensor", c->scale_rank, c->scale_shape, NULL, "float",
             written ? "\"init\": null" : NULL);
  if (!strcmp(c->op, Q_TOKEN)) {
    if (c->ub) {
      int64_t one[1] = {1};
      arg_tensor(b, "scale_ub", "Tensor?", 1, one, NULL, "float", NULL);
    } else {
      arg_raw(b, "scale_ub", "Tensor?", "null");
    }
  }
  if (c->group_shape) arg_raw(b, "group_shape", "int[]?", c->group_shape);
  return op_end(b);
}

static const quant_case_t quant_cases[] = {
    {"static bf16 per tensor", Q_STATIC, Q_BF16, FN, 2, {7, 384}, 0, 0, 1, {1}, NULL, false},
    {"static f16 3-D, e4m3fnuz", Q_STATIC, Q_F16, FNUZ, 3, {3, 5, 64}, 0, 0, 1, {1}, NULL, false},
    {"static f32 per channel [hidden]", Q_STATIC, "float", FN, 2, {4, 96}, 0, 0, 1, {96}, NULL, false},
    {"static bf16 per token by group_shape (1, -1)", Q_STATIC, Q_BF16, FN, 2, {6, 128}, 0, 0, 1, {6}, "[1, -1]", false},
    {"static bf16 2-D groups of 4 x 64", Q_STATIC, Q_BF16, FNUZ, 2, {8, 256}, 0, 0, 2, {2, 4}, NULL, false},
    {"static f16 strided view, padded result", Q_STATIC, Q_F16, FN, 2, {5, 200}, 9, 256, 1, {1}, NULL, false},
    {"static f32 rows split in segments", Q_STATIC, "float", FN, 2, {2, 20000}, 0, 0, 1, {1}, NULL, false},
    {"dynamic bf16", Q_DYNAMIC, Q_BF16, FN, 2, {33, 1000}, 0, 0, 1, {1}, NULL, false},
    {"dynamic f16 3-D e4m3fnuz", Q_DYNAMIC, Q_F16, FNUZ, 3, {2, 3, 100}, 0, 0, 1, {1}, NULL, false},
    {"dynamic f32 one long row", Q_DYNAMIC, "float", FN, 2, {1, 20000}, 0, 0, 1, {1}, NULL, false},
    {"dynamic bf16 strided view", Q_DYNAMIC, Q_BF16, FN, 2, {6, 300}, 0, 320, 1, {1}, NULL, false},
    {"per token bf16", Q_TOKEN, Q_BF16, FN, 2, {17, 512}, 0, 0, 2, {17, 1}, NULL, false},
    {"per token f16 with scale_ub", Q_TOKEN, Q_F16, FN, 2, {9, 300}, 0, 0, 2, {9, 1}, NULL, true},
    {"per token f32 3-D e4m3fnuz", Q_TOKEN, "float", FNUZ, 3, {3, 4, 64}, 0, 0, 2, {12, 1}, NULL, false},
    {"per token bf16 padded result and scale", Q_TOKEN, Q_BF16, FN, 2, {10, 128}, 12, 0, 2, {12, 1}, NULL, true},
};

/* Every case on `device`, expected on a kernel named `prefix`*, each output checked. */
static inline void run_quant_cases(const char *device, const char *prefix) {
  for (size_t i = 0; i < sizeof quant_cases / sizeof *quant_cases; i++) {
    const quant_case_t *c = &quant_cases[i];
    jbuf_t b;
    xr_op_result_t r = run_case(quant_json(&b, c), device, 500 + i, NULL);
    cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s on %s: %s: %s\n%s", c->what, device, xr_op_outcome_name(r.outcome),
                 r.message, b.s);
    cr_assert(r.checked && r.check_passed, "%s on %s: check failed", c->what, device);
    cr_assert(strncmp(r.kernel, prefix, strlen(prefix)) == 0, "%s: ran %s, expected %s*", c->what, r.kernel, prefix);
    /* the result, and the scale the dynamic ops write */
    size_t outputs = strcmp(c->op, Q_STATIC) ? 2 : 1;
    cr_assert_eq(r.output_count, outputs, "%s: %zu outputs compared", c->what, r.output_count);
    cr_assert_str_eq(r.outputs[0].target, "result");
    if (outputs == 2) cr_assert_str_eq(r.outputs[1].target, "scale");
    for (size_t k = 0; k < r.output_count; k++) {
      cr_assert(!r.outputs[k].nonfinite, "%s: %s has NaN/Inf where the reference is finite", c->what,
                r.outputs[k].target);
      cr_log_info("%s on %s: %s nmse %.3g", c->what, device, r.outputs[k].target, r.outputs[k].nmse);
    }
  }
}

/* The family's matrix (tests/kernels/matrix.c): every group on every driver. */
#define QUANT_MATRIX(GROUP) GROUP(cases, run_quant_cases(device, kernel_impl(device, "quant")))
#define QUANT_MATRIX_GAPS(GAP)

#endif
