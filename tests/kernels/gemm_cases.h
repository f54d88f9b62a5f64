/* GEMM test cases shared by the gemm_matrix_<driver> targets (GEMM_MATRIX at the end),
 * gemm_test.c, gemm_clblast_test.c and tests/gpu's GEMM suites: one-op JSON bundles built in C,
 * and the family's cases written once and run per device and implementation. */
#ifndef XR_TESTS_KERNELS_GEMM_CASES_H
#define XR_TESTS_KERNELS_GEMM_CASES_H

#include <stdarg.h>
#include <stdlib.h>

#include "tests/kernels/check.h"

/* ------------------------------------------------------------------------------------------ */
/* JSON builders                                                                              */

typedef struct json {
  char text[8192];
  size_t used;
} json_t;

static inline void put(json_t *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(j->text + j->used, sizeof j->text - j->used, fmt, ap);
  va_end(ap);
  cr_assert(n >= 0 && (size_t)n < sizeof j->text - j->used, "test JSON too long");
  j->used += (size_t)n;
}

#define MAXR 6
/* A tensor argument; strides NULL: contiguous. offset/storage 0: none. */
typedef struct tensor {
  const char *dtype;
  int rank;
  int64_t shape[MAXR];
  int64_t strides[MAXR]; /* all 0: contiguous */
  int64_t offset, storage;
  const char *init;
} tensor_t;

static inline void put_tensor(json_t *j, const tensor_t *t) {
  put(j, "{\"dtype\": \"%s\", \"shape\": [", t->dtype);
  for (int d = 0; d < t->rank; d++) put(j, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
  put(j, "]");
  bool strided = false;
  for (int d = 0; d < t->rank; d++) strided |= t->strides[d] != 0;
  if (strided) {
    put(j, ", \"strides\": [");
    for (int d = 0; d < t->rank; d++) put(j, "%s%lld", d ? ", " : "", (long long)t->strides[d]);
    put(j, "]");
  }
  if (t->offset) put(j, ", \"storage_offset\": %lld", (long long)t->offset);
  if (t->storage) put(j, ", \"storage_size\": %lld", (long long)t->storage);
  if (t->init) put(j, ", \"init\": \"%s\"", t->init);
  put(j, "}");
}

typedef struct arg {
  const char *name, *type;
  const tensor_t *tensor; /* else `literal` */
  const char *literal;
} arg_t;

static inline const char *op_json(json_t *j, const char *op, const arg_t *args, int count) {
  j->used = 0;
  put(j, "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": \"%s\", "
         "\"args\": [", op);
  for (int i = 0; i < count; i++) {
    put(j, "%s{\"name\": \"%s\", \"type\": \"%s\", \"value\": ", i ? ", " : "", args[i].name,
        args[i].type);
    if (args[i].tensor) put_tensor(j, args[i].tensor);
    else put(j, "%s", args[i].literal);
    put(j, "}");
  }
  put(j, "]}]}");
  return j->text;
}

static inline tensor_t mat(const char *dtype, int64_t rows, int64_t cols) {
  return (tensor_t){.dtype = dtype, .rank = 2, .shape = {rows, cols}};
}

/* [rows, cols] stored transposed: a [cols, rows] buffer viewed with strides [1, rows]. */
static inline tensor_t mat_t(const char *dtype, int64_t rows, int64_t cols) {
  return (tensor_t){.dtype = dtype, .rank = 2, .shape = {rows, cols}, .strides = {1, rows}};
}

/* [rows, cols] inside a larger buffer: row pitch cols + 5, starting at element 7. */
static inline tensor_t mat_view(const char *dtype, int64_t rows, int64_t cols) {
  int64_t pitch = cols + 5;
  return (tensor_t){.dtype = dtype, .rank = 2, .shape = {rows, cols}, .strides = {pitch, 1},
                    .offset = 7, .storage = 7 + rows * pitch + 3};
}

static inline tensor_t vec(const char *dtype, int64_t n) {
  return (tensor_t){.dtype = dtype, .rank = 1, .shape = {n}};
}

/* Replays and asserts: the named kernel ran (prefix match) and matched the reference. */
static inline void expect(const char *json, const char *device, const char *kernel, uint64_t seed) {
  xr_op_result_t r = check_op_seeded(json, device, seed);
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s on %s: %s: %s", json, device,
               xr_op_outcome_name(r.outcome), r.message);
  cr_assert(r.checked && r.check_passed, "%s on %s: check failed (nmse %g)", json, device,
            r.outputs[0].nmse);
  cr_assert(strncmp(r.kernel, kernel, strlen(kernel)) == 0, "%s on %s: ran %s, expected %s", json,
            device, r.kernel, kernel);
}

/* ------------------------------------------------------------------------------------------ */
/* The cases, written once and run per device/implementation                                  */

typedef struct target {
  const char *device;
  const char *f32, *bf16, *f16, *fp8; /* the kernel expected per dtype (prefix) */
  /* When set, each case goes here instead of the replay above (tests/gpu: the vendor-BLAS
   * layout check on the CPU, and the GPU suites, which pick the expected kernel per case). */
  void (*run)(const struct target *t, const char *json, const char *dtype, uint64_t seed);
} target_t;

static inline const char *kernel_for(const target_t *t, const char *dtype) {
  if (!strcmp(dtype, "float")) return t->f32;
  if (!strcmp(dtype, "c10::BFloat16")) return t->bf16;
  if (!strcmp(dtype, "c10::Half")) return t->f16;
  return t->fp8;
}

static uint64_t seed_counter = 1; /* per process: each case gets fresh inputs */

static inline void run_case(const target_t *t, const char *dtype, const char *op, const arg_t *args,
                     int count) {
  json_t j;
  op_json(&j, op, args, count);
  if (t->run) t->run(t, j.text, dtype, seed_counter++);
  else expect(j.text, t->device, kernel_for(t, dtype), seed_counter++);
}

/* mm / addmm / bmm / baddbmm / matmul / linear-style ops at one dtype. */
static inline void products(const target_t *t, const char *dt) {
  /* mm: sizes 1, 3, 17, 129 and a K of 1000; transposed and offset operands. */
  const int64_t sizes[][3] = {{1, 1, 1}, {3, 17, 129}, {17, 129, 3}, {129, 3, 17}, {3, 1000, 17}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    int64_t M = sizes[i][0], K = sizes[i][1], N = sizes[i][2];
    tensor_t a = mat(dt, M, K), b = mat(dt, K, N);
    arg_t args[] = {{"self", "Tensor", &a, NULL}, {"mat2", "Tensor", &b, NULL}};
    run_case(t, dt, "aten::mm", args, 2);
  }
  {
    tensor_t a = mat_view(dt, 17, 129), b = mat_t(dt, 129, 33);
    arg_t args[] = {{"self", "Tensor", &a, NULL}, {"mat2", "Tensor", &b, NULL}};
    run_case(t, dt, "aten::mm", args, 2);
  }
  /* addmm: bias row (oneDNN's bias argument), full C with beta/alpha, transposed weight. */
  {
    tensor_t c = vec(dt, 65), a = mat(dt, 17, 129), b = mat_t(dt, 129, 65);
    arg_t args[] = {{"self", "Tensor", &c, NULL}, {"mat1", "Tensor", &a, NULL},
                    {"mat2", "Tensor", &b, NULL}};
    run_case(t, dt, "aten::addmm", args, 3);
  }
  {
    tensor_t c = mat_view(dt, 3, 129), a = mat(dt, 3, 17), b = mat(dt, 17, 129);
    arg_t args[] = {{"self", "Tensor", &c, NULL}, {"mat1", "Tensor", &a, NULL},
                    {"mat2", "Tensor", &b, NULL}, {"beta", "Scalar", NULL, "0.5"},
                    {"alpha", "Scalar", NULL, "2.0"}};
    run_case(t, dt, "aten::addmm", args, 5);
  }
  /* bmm / baddbmm, one of them with transposed batch2. */
  {
    tensor_t a = {.dtype = dt, .rank = 3, .shape = {3, 17, 33}};
    tensor_t b = {.dtype = dt, .rank = 3, .shape = {3, 33, 129}, .strides = {33 * 129, 1, 33}};
    arg_t args[] = {{"self", "Tensor", &a, NULL}, {"mat2", "Tensor", &b, NULL}};
    run_case(t, dt, "aten::bmm", args, 2);
  }
  {
    tensor_t c = {.dtype = dt, .rank = 3, .shape = {2, 17, 3}};
    tensor_t a = {.dtype = dt, .rank = 3, .shape = {2, 17, 129}};
    tensor_t b = {.dtype = dt, .rank = 3, .shape = {2, 129, 3}};
    arg_t args[] = {{"self", "Tensor", &c, NULL}, {"batch1", "Tensor", &a, NULL},
                    {"batch2", "Tensor", &b, NULL}, {"beta", "Scalar", NULL, "1"},
                    {"alpha", "Scalar", NULL, "0.25"}};
    run_case(t, dt, "aten::baddbmm", args, 5);
  }
  /* matmul: batch broadcasting [2,1,17,33] @ [3,33,5], vector @ matrix, matrix @ vector. */
  {
    tensor_t a = {.dtype = dt, .rank = 4, .shape = {2, 1, 17, 33}};
    tensor_t b = {.dtype = dt, .rank = 3, .shape = {3, 33, 5}};
    arg_t args[] = {{"self", "Tensor", &a, NULL}, {"other", "Tensor", &b, NULL}};
    run_case(t, dt, "aten::matmul", args, 2);
  }
  {
    tensor_t a = vec(dt, 129), b = mat(dt, 129, 17);
    arg_t args[] = {{"self", "Tensor", &a, NULL}, {"other", "Tensor", &b, NULL}};
    run_case(t, dt, "aten::matmul", args, 2);
  }
  {
    tensor_t a = mat(dt, 17, 129), b = vec(dt, 129);
    arg_t args[] = {{"self", "Tensor", &a, NULL}, {"other", "Tensor", &b, NULL}};
    run_case(t, dt, "aten::matmul", args, 2);
  }
  /* linear and the serving-stack names: x @ W^T (+ bias), 3-D input, decode-shaped M. */
  {
    tensor_t x = {.dtype = dt, .rank = 3, .shape = {2, 3, 129}}, w = mat(dt, 17, 129), bias = vec(dt, 17);
    arg_t args[] = {{"input", "Tensor", &x, NULL}, {"weight", "Tensor", &w, NULL},
                    {"bias", "Tensor?", &bias, NULL}};
    run_case(t, dt, "aten::linear", args, 3);
  }
  {
    tensor_t x = mat(dt, 1, 1000), w = mat(dt, 17, 1000);
    arg_t args[] = {{"input", "Tensor", &x, NULL}, {"weight", "Tensor", &w, NULL},
                    {"bias", "Tensor?", NULL, "null"}};
    run_case(t, dt, "aten::linear", args, 3);
  }
  {
    tensor_t x = mat(dt, 16, 129), w = mat_view(dt, 33, 129);
    arg_t args[] = {{"A", "Tensor", &x, NULL}, {"B", "Tensor", &w, NULL}};
    run_case(t, dt, "aiter::gemm_a16w16", args, 2);
  }
  {
    tensor_t x = mat(dt, 3, 64), w = mat(dt, 129, 64), bias = vec(dt, 129);
    arg_t args[] = {{"x", "Tensor", &x, NULL}, {"weight", "Tensor", &w, NULL},
                    {"bias", "Tensor?", &bias, NULL}};
    run_case(t, dt, "vllm::rocm_unquantized_gemm", args, 3);
  }
}

/* _scaled_mm: per-tensor and row-wise scales, bias, fp8 output with scale_result, out_dtype as
 * a ScalarType code (15 bfloat16, 5 half, 6 float, 24 e4m3fn), and omitted. */
static inline void scaled_products(const target_t *t) {
  const char *fp8[] = {"c10::Float8_e4m3fn", "c10::Float8_e5m2", "c10::Float8_e4m3fnuz",
                       "c10::Float8_e5m2fnuz"};
  for (size_t i = 0; i < 4; i++) {
    tensor_t a = mat(fp8[i], 17, 129), b = mat_t(fp8[i], 129, 33);
    tensor_t sa = {.dtype = "float", .rank = 0, .init = "uniform"};
    tensor_t sb = {.dtype = "float", .rank = 0, .init = "uniform"};
    arg_t args[] = {{"self", "Tensor", &a, NULL}, {"mat2", "Tensor", &b, NULL},
                    {"scale_a", "Tensor", &sa, NULL}, {"scale_b", "Tensor", &sb, NULL},
                    {"bias", "Tensor?", NULL, "null"}, {"scale_result", "Tensor?", NULL, "null"},
                    {"out_dtype", "ScalarType?", NULL, i % 2 ? "5" : "15"}};
    run_case(t, fp8[i], "aten::_scaled_mm", args, 7);
  }
  {
    /* Row-wise: scale_a [M, 1], scale_b [1, N]; bf16 bias; 1000 columns. */
    tensor_t a = mat("c10::Float8_e4m3fn", 3, 64), b = mat_t("c10::Float8_e4m3fn", 64, 1000);
    tensor_t sa = {.dtype = "float", .rank = 2, .shape = {3, 1}, .init = "uniform"};
    tensor_t sb = {.dtype = "float", .rank = 2, .shape = {1, 1000}, .init = "uniform"};
    tensor_t bias = vec("c10::BFloat16", 1000);
    arg_t args[] = {{"self", "Tensor", &a, NULL}, {"mat2", "Tensor", &b, NULL},
                    {"scale_a", "Tensor", &sa, NULL}, {"scale_b", "Tensor", &sb, NULL},
                    {"bias", "Tensor?", &bias, NULL}, {"scale_result", "Tensor?", NULL, "null"},
                    {"out_dtype", "ScalarType?", NULL, "15"}};
    run_case(t, "fp8", "aten::_scaled_mm", args, 7);
  }
  {
    /* fp8 output scaled by scale_result; out_dtype omitted means self's dtype. */
    tensor_t a = mat_view("c10::Float8_e4m3fn", 17, 32), b = mat("c10::Float8_e4m3fn", 32, 17);
    tensor_t sa = {.dtype = "float", .rank = 0, .init = "uniform"};
    tensor_t sb = {.dtype = "float", .rank = 1, .shape = {1}, .init = "uniform"};
    tensor_t sr = {.dtype = "float", .rank = 0, .init = "uniform"};
    arg_t args[] = {{"self", "Tensor", &a, NULL}, {"mat2", "Tensor", &b, NULL},
                    {"scale_a", "Tensor", &sa, NULL}, {"scale_b", "Tensor", &sb, NULL},
                    {"bias", "Tensor?", NULL, "null"}, {"scale_result", "Tensor?", &sr, NULL}};
    run_case(t, "fp8", "aten::_scaled_mm", args, 6);
  }
  {
    /* fp32 output, keyword-style names of older releases (no positions needed). */
    tensor_t a = mat("c10::Float8_e5m2", 1, 129), b = mat("c10::Float8_e4m3fn", 129, 3);
    tensor_t sa = {.dtype = "float", .rank = 0, .init = "uniform"};
    tensor_t sb = {.dtype = "float", .rank = 0, .init = "uniform"};
    tensor_t bias = vec("float", 3);
    arg_t args[] = {{"self", "Tensor", &a, NULL}, {"mat2", "Tensor", &b, NULL},
                    {"out_dtype", "ScalarType?", NULL, "6"}, {"scale_b", "Tensor", &sb, NULL},
                    {"scale_a", "Tensor", &sa, NULL}, {"bias", "Tensor?", &bias, NULL}};
    run_case(t, "fp8", "aten::_scaled_mm", args, 6);
  }
}

/* Block-scaled _scaled_mm (mxfp8, mxfp4, nvfp4; kernels/gemm.c analyze_scaled_mm): fresh
 * random codes and scales (e8m0 powers of two near 1, e4m3fn normal), K a multiple of the
 * block (and one mxfp8 K with a shorter last block, as torch counts scales), odd M and N,
 * torch's transposed mat2 and other layouts, biases, out_dtype variants, plain and padded
 * (swizzled-size) scale tensors, the M == 1 decode shape. Cases expect the `fp8` kernel. */
#define BS_F8 "c10::Float8_e4m3fn"
#define BS_F8E5 "c10::Float8_e5m2"
#define BS_F4 "c10::Float4_e2m1fn_x2"
#define BS_E8M0 "c10::Float8_e8m0fnu"

static inline void block_case(const target_t *t, tensor_t *a, tensor_t *b, tensor_t *sa,
                              tensor_t *sb, const tensor_t *bias, const char *out_dtype) {
  arg_t args[] = {{"self", "Tensor", a, NULL},
                  {"mat2", "Tensor", b, NULL},
                  {"scale_a", "Tensor", sa, NULL},
                  {"scale_b", "Tensor", sb, NULL},
                  {"bias", "Tensor?", bias, bias ? NULL : "null"},
                  {"scale_result", "Tensor?", NULL, "null"},
                  {"out_dtype", "ScalarType?", NULL, out_dtype ? out_dtype : "null"}};
  run_case(t, "fp8", "aten::_scaled_mm", args, 7);
}

static inline void block_scaled_products(const target_t *t) {
  { /* mxfp8 e4m3fn, torch's layout (mat2 the transpose of [N, K]), bf16 bias and output */
    tensor_t a = mat(BS_F8, 17, 96), b = mat_t(BS_F8, 96, 33);
    tensor_t sa = mat(BS_E8M0, 17, 3), sb = mat(BS_E8M0, 33, 3), bias = vec("c10::BFloat16", 33);
    block_case(t, &a, &b, &sa, &sb, &bias, "15");
  }
  { /* mxfp8 e5m2 x e4m3fn, K = 80 (a last block of 16), flattened scales, fp32 output */
    tensor_t a = mat(BS_F8E5, 3, 80), b = mat_t(BS_F8, 80, 129);
    tensor_t sa = vec(BS_E8M0, 3 * 3), sb = mat(BS_E8M0, 129, 3);
    block_case(t, &a, &b, &sa, &sb, NULL, "6");
  }
  { /* mxfp8, scales of torch's swizzled count (128 x 4 per operand, 1-D as to_blocked returns
     * them), row-major mat2, out_dtype omitted: self's dtype (fp8 output) */
    tensor_t a = mat(BS_F8, 5, 64), b = mat(BS_F8, 64, 7);
    tensor_t sa = vec(BS_E8M0, 128 * 4), sb = vec(BS_E8M0, 128 * 4);
    block_case(t, &a, &b, &sa, &sb, NULL, NULL);
  }
  { /* mxfp4: self [M, K/2], mat2 [K/2, N] the transpose of [N, K/2]; out_dtype omitted: bf16 */
    tensor_t a = mat(BS_F4, 17, 64), b = mat_t(BS_F4, 64, 33);
    tensor_t sa = mat(BS_E8M0, 17, 4), sb = mat(BS_E8M0, 33, 4), bias = vec("c10::BFloat16", 33);
    block_case(t, &a, &b, &sa, &sb, &bias, NULL);
  }
  { /* mxfp4 with a padded, pitched self view, a row-major mat2, padded 2-D scales [128, 4] */
    tensor_t a = mat_view(BS_F4, 9, 32), b = mat(BS_F4, 32, 17);
    tensor_t sa = mat(BS_E8M0, 128, 4), sb = mat(BS_E8M0, 128, 4);
    block_case(t, &a, &b, &sa, &sb, NULL, "6");
  }
  { /* nvfp4: e4m3fn scales per 16, fp16 output and bias */
    tensor_t a = mat(BS_F4, 9, 48), b = mat_t(BS_F4, 48, 65);
    tensor_t sa = mat(BS_F8, 9, 6), sb = mat(BS_F8, 65, 6), bias = vec("c10::Half", 65);
    block_case(t, &a, &b, &sa, &sb, &bias, "5");
  }
  { /* nvfp4, decode-shaped (M = 1), K = 256, fp32 output */
    tensor_t a = mat(BS_F4, 1, 128), b = mat_t(BS_F4, 128, 129);
    tensor_t sa = mat(BS_F8, 1, 16), sb = mat(BS_F8, 129, 16);
    block_case(t, &a, &b, &sa, &sb, NULL, "6");
  }
}

/* ------------------------------------------------------------------------------------------ */
/* The family's matrix (tests/kernels/matrix.c)                                               */

/* The kernels a driver's cases must take: the cpu's default choice (oneDNN for f32, and for
 * bf16 where it computes it; cpu.gemm_blocked for the rest), and on the other drivers the
 * family's own tiled kernels, the vendor libraries switched off for this test's process
 * (gemm_test steers cpu and opencl among their implementations, tests/gpu:gemm_blaslt_test_*
 * runs cuBLASLt / hipBLASLt). */
static inline const target_t *gemm_matrix_target(const char *device) {
  static target_t t;
  const char *driver = kernel_driver(device);
  if (!strcmp(driver, "cpu")) {
    const char *bf16 = onednn_computes("c10::BFloat16") ? "cpu.onednn_matmul" : "cpu.gemm_blocked";
    t = (target_t){device, "cpu.onednn_matmul", bf16, "cpu.gemm_blocked", "cpu.gemm_blocked", NULL};
    return &t;
  }
  setenv("XR_CLBLAST_LIBRARY", "off", 1);
  setenv("XR_CUBLASLT_LIBRARY", "off", 1);
  setenv("XR_HIPBLASLT_LIBRARY", "off", 1);
  const char *tiled = kernel_impl(device, "gemm_tiled");
  t = (target_t){device, tiled, tiled, tiled, tiled, NULL};
  return &t;
}

#define GEMM_MATRIX(GROUP)                                                         \
  GROUP(products_f32, products(gemm_matrix_target(device), "float"))               \
  GROUP(products_bf16, products(gemm_matrix_target(device), "c10::BFloat16"))      \
  GROUP(products_f16, products(gemm_matrix_target(device), "c10::Half"))           \
  GROUP(scaled_mm, scaled_products(gemm_matrix_target(device)))                    \
  GROUP(block_scaled_mm, block_scaled_products(gemm_matrix_target(device)))
#define GEMM_MATRIX_GAPS(GAP)

#endif
