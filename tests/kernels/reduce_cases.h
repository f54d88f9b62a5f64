/* The reduce family's cases (reductions, scans, sorts), written once and run per device:
 * REDUCE_MATRIX at the end lists them for tests/kernels/matrix.c, which runs them on every
 * driver (the reduce_matrix_<driver> targets). Each
 * case replays a one-op TraceLens IR entry through the engine with --check (the device's kernel
 * against the CPU reference on the same seeded inputs, outputs poisoned) and expects a `prefix`
 * kernel to have run: f32, f16 and bf16; reduced extents of 1, 3, 17, 129, 1000 and 2^20 + 3;
 * last, first, middle, several and negative dims, keepdim both ways; transposed, sliced,
 * offset and expanded (stride 0) views; empty and 0-d tensors; out= variants. */
#ifndef XR_TESTS_KERNELS_REDUCE_CASES_H
#define XR_TESTS_KERNELS_REDUCE_CASES_H

#include <stdarg.h>

#include "tests/kernels/check.h"

static const char *const rc_dtypes[] = {"float", "c10::Half", "c10::BFloat16"};
static const int64_t rc_sizes[] = {1, 3, 17, 129, 1000};

/* ------------------------------------------------------------------------------------------ */
/* one-op TraceLens IR entries                                                                 */

typedef struct rc_json {
  char text[8192];
  size_t len;
  int args;
  bool kwargs;
} rc_json_t;

static inline void rc_put(rc_json_t *j, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(j->text + j->len, sizeof j->text - j->len, fmt, ap);
  va_end(ap);
  cr_assert(n >= 0 && j->len + (size_t)n < sizeof j->text, "op JSON too long");
  j->len += (size_t)n;
}

static inline void rc_begin(rc_json_t *j, const char *op) {
  j->len = 0, j->args = 0, j->kwargs = false;
  rc_put(j, "{\"op_name\": \"%s\", \"replay_ir\": {\"list_pos_args\": [", op);
}

/* Keyword arguments from here on. */
static inline void rc_kw(rc_json_t *j) {
  rc_put(j, "], \"list_kwargs\": [");
  j->args = 0, j->kwargs = true;
}

static inline void rc_head(rc_json_t *j, const char *name, const char *type) {
  rc_put(j, "%s{\"arg_name\": \"%s\", \"arg_type\": \"%s\", \"value\": ", j->args++ ? ", " : "",
         name, type);
}

/* A tensor view: shape, strides (NULL: contiguous) and storage offset. */
typedef struct rc_view {
  int rank;
  int64_t shape[4], strides[4], offset;
  bool strided;
} rc_view_t;

static inline rc_view_t rc_contiguous(int rank, const int64_t *shape) {
  rc_view_t v = {.rank = rank};
  for (int d = 0; d < rank; d++) v.shape[d] = shape[d];
  return v;
}

static inline rc_view_t rc_strided(int rank, const int64_t *shape, const int64_t *strides,
                                   int64_t offset) {
  rc_view_t v = rc_contiguous(rank, shape);
  for (int d = 0; d < rank; d++) v.strides[d] = strides[d];
  v.offset = offset, v.strided = true;
  return v;
}

#define RC_SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define RC_RANK(...) ((int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define RC_VIEW(...) rc_contiguous(RC_RANK(__VA_ARGS__), RC_SHAPE(__VA_ARGS__))

static inline void rc_tensor(rc_json_t *j, const char *name, const char *type, const char *dtype,
                             const rc_view_t *v) {
  rc_head(j, name, type);
  rc_put(j, "{\"shape\": [");
  for (int d = 0; d < v->rank; d++) rc_put(j, "%s%lld", d ? ", " : "", (long long)v->shape[d]);
  rc_put(j, "], \"dtype\": \"%s\"", dtype);
  if (v->strided) {
    rc_put(j, ", \"strides\": [");
    for (int d = 0; d < v->rank; d++) rc_put(j, "%s%lld", d ? ", " : "", (long long)v->strides[d]);
    rc_put(j, "]");
  }
  if (v->offset) rc_put(j, ", \"storage_offset\": %lld", (long long)v->offset);
  rc_put(j, "}}");
}

static inline void rc_value(rc_json_t *j, const char *name, const char *type, const char *value) {
  rc_head(j, name, type);
  rc_put(j, "%s}", value);
}

static inline const char *rc_end(rc_json_t *j) {
  rc_put(j, j->kwargs ? "]}}" : "], \"list_kwargs\": []}}");
  return j->text;
}

/* ------------------------------------------------------------------------------------------ */
/* the ops as the golden cases and traces spell them                                           */

/* sum / mean / nansum (.dim_IntList: self, dim, keepdim, *, dtype); dim "null": every dim. */
static inline const char *rc_sum(rc_json_t *j, const char *op, const char *dt, rc_view_t v,
                                 const char *dim, bool keepdim, const char *dtype) {
  rc_begin(j, op);
  rc_tensor(j, "self", "Tensor", dt, &v);
  rc_value(j, "dim", "int[1]?", dim);
  rc_value(j, "keepdim", "bool", keepdim ? "true" : "false");
  rc_kw(j);
  rc_value(j, "dtype", "ScalarType?", dtype ? dtype : "null");
  return rc_end(j);
}

/* Ops of (self, dim, keepdim): amax/amin (int[1]), max.dim/min.dim/argmin/all.dim/any.dim
 * (int), logsumexp (int[1]), prod.dim_int (int, then dtype); keepdim NULL: no keepdim
 * argument (count_nonzero). */
static inline const char *rc_dim_op(rc_json_t *j, const char *op, const char *dt, rc_view_t v,
                                    const char *dim_type, const char *dim, const char *keepdim) {
  rc_begin(j, op);
  rc_tensor(j, "self", "Tensor", dt, &v);
  rc_value(j, "dim", dim_type, dim);
  if (keepdim) rc_value(j, "keepdim", "bool", keepdim);
  return rc_end(j);
}

/* var / std / var_mean / std_mean .correction(self, dim, *, correction, keepdim). */
static inline const char *rc_var(rc_json_t *j, const char *op, const char *dt, rc_view_t v,
                                 const char *dim, const char *correction, bool keepdim) {
  rc_begin(j, op);
  rc_tensor(j, "self", "Tensor", dt, &v);
  rc_value(j, "dim", "int[1]?", dim);
  rc_kw(j);
  rc_value(j, "correction", "int?", correction);
  rc_value(j, "keepdim", "bool", keepdim ? "true" : "false");
  return rc_end(j);
}

/* aten::norm.ScalarOpt_dim(self, p, dim, keepdim) and
 * aten::linalg_vector_norm(self, ord, dim, keepdim, *, dtype). */
static inline const char *rc_norm(rc_json_t *j, bool vector, const char *dt, rc_view_t v,
                                  const char *p, const char *dim, bool keepdim, const char *dtype) {
  rc_begin(j, vector ? "aten::linalg_vector_norm" : "aten::norm");
  rc_tensor(j, "self", "Tensor", dt, &v);
  rc_value(j, vector ? "ord" : "p", vector ? "Scalar" : "Scalar?", p);
  rc_value(j, "dim", vector ? "int[1]?" : "int[1]", dim);
  rc_value(j, "keepdim", "bool", keepdim ? "true" : "false");
  if (vector) {
    rc_kw(j);
    rc_value(j, "dtype", "ScalarType?", dtype ? dtype : "null");
  }
  return rc_end(j);
}

/* cumsum / cumprod (self, dim, *, dtype). */
static inline const char *rc_scan(rc_json_t *j, const char *op, const char *dt, rc_view_t v,
                                  int dim, const char *dtype) {
  char d[16];
  snprintf(d, sizeof d, "%d", dim);
  rc_begin(j, op);
  rc_tensor(j, "self", strchr(op, '_') ? "Tensor(a!)" : "Tensor", dt, &v);
  rc_value(j, "dim", "int", d);
  rc_kw(j);
  rc_value(j, "dtype", "ScalarType?", dtype ? dtype : "null");
  return rc_end(j);
}

/* sort(self, dim, descending). */
static inline const char *rc_sort(rc_json_t *j, const char *dt, rc_view_t v, int dim, bool descending) {
  char d[16];
  snprintf(d, sizeof d, "%d", dim);
  rc_begin(j, "aten::sort");
  rc_tensor(j, "self", "Tensor", dt, &v);
  rc_value(j, "dim", "int", d);
  rc_value(j, "descending", "bool", descending ? "true" : "false");
  return rc_end(j);
}

/* topk(self, k, dim, largest, sorted). */
static inline const char *rc_topk(rc_json_t *j, const char *dt, rc_view_t v, int64_t k, int dim,
                                  bool largest) {
  char kt[24], d[16];
  snprintf(kt, sizeof kt, "%lld", (long long)k);
  snprintf(d, sizeof d, "%d", dim);
  rc_begin(j, "aten::topk");
  rc_tensor(j, "self", "Tensor", dt, &v);
  rc_value(j, "k", "SymInt", kt);
  rc_value(j, "dim", "int", d);
  rc_value(j, "largest", "bool", largest ? "true" : "false");
  rc_value(j, "sorted", "bool", "true");
  return rc_end(j);
}

/* ------------------------------------------------------------------------------------------ */
/* running                                                                                     */

/* Replays the op on `device` and asserts a `prefix` kernel ran and matched the reference. */
static inline void rc_expect(const char *json, const char *device, const char *prefix, uint64_t seed) {
  xr_op_result_t r = check_op_seeded(json, device, seed);
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s on %s: %s: %s", json, device,
               xr_op_outcome_name(r.outcome), r.message);
  cr_assert(r.checked && r.check_passed, "%s on %s: check failed (%s nmse %g)", json, device,
            r.outputs[0].target, r.outputs[0].nmse);
  cr_assert(strncmp(r.kernel, prefix, strlen(prefix)) == 0, "%s: ran %s, expected %s*", json,
            r.kernel, prefix);
  cr_assert_gt(r.output_count, 0);
  for (size_t k = 0; k < r.output_count; k++)
    cr_assert(!r.outputs[k].nonfinite && r.outputs[k].nmse <= r.outputs[k].threshold,
              "%s: %s nmse %g", json, r.outputs[k].target, r.outputs[k].nmse);
}

/* The reductions over the last dim of [7, n], every dtype and row size. */
static inline void reduce_row_cases(const char *device, const char *prefix) {
  rc_json_t j;
  uint64_t seed = 1;
  static const char *const sums[] = {"aten::sum", "aten::mean", "aten::nansum"};
  for (size_t d = 0; d < 3; d++) {
    const char *dt = rc_dtypes[d];
    for (size_t s = 0; s < sizeof rc_sizes / sizeof *rc_sizes; s++) {
      rc_view_t v = RC_VIEW(7, rc_sizes[s]);
      for (size_t o = 0; o < 3; o++)
        rc_expect(rc_sum(&j, sums[o], dt, v, "[-1]", s % 2, NULL), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::amax", dt, v, "int[1]", "[1]", "false"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::amin", dt, v, "int[1]", "[-1]", "true"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::max", dt, v, "int", "1", "false"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::min", dt, v, "int", "-1", "true"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::argmin", dt, v, "int?", "1", "false"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::logsumexp", dt, v, "int[1]", "[1]", "false"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::all", dt, v, "int", "1", "false"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::any", dt, v, "int", "-1", "true"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::count_nonzero", dt, v, "int[]", "[1]", NULL), device, prefix, seed++);
      rc_expect(rc_var(&j, "aten::var", dt, v, "[1]", "1", false), device, prefix, seed++);
      rc_expect(rc_var(&j, "aten::std_mean", dt, v, "[-1]", "0", true), device, prefix, seed++);
      rc_expect(rc_norm(&j, false, dt, v, "2", "[1]", false, NULL), device, prefix, seed++);
      rc_expect(rc_norm(&j, true, dt, v, "1", "[1]", true, NULL), device, prefix, seed++);
      rc_expect(rc_norm(&j, true, dt, v, "Infinity", "[-1]", false, NULL), device, prefix, seed++);
      rc_expect(rc_norm(&j, true, dt, v, "3.5", "[-1]", false, "6"), device, prefix, seed++);
      if (rc_sizes[s] <= 17) /* longer products of N(0, 1) values underflow */
        rc_expect(rc_dim_op(&j, "aten::prod", dt, v, "int", "1", "false"), device, prefix, seed++);
    }
  }
}

/* Other dims of [5, 33, 7]: first, middle, several, negative, every dim; keepdim both ways. And
 * a ResNet head's: the sum over a batch of 1000 logits (full tiles of columns and a partial
 * one), the mean over H x W (one contiguous run per output). */
static inline void reduce_dim_cases(const char *device, const char *prefix) {
  rc_json_t j;
  uint64_t seed = 500;
  for (size_t d = 0; d < 3; d++) {
    rc_expect(rc_sum(&j, "aten::sum", rc_dtypes[d], RC_VIEW(10, 1000), "[0]", true, NULL), device,
              prefix, seed++);
    rc_expect(rc_sum(&j, "aten::mean", rc_dtypes[d], RC_VIEW(10, 1000), "[0]", false, NULL), device,
              prefix, seed++);
    rc_expect(rc_sum(&j, "aten::mean", rc_dtypes[d], RC_VIEW(4, 64, 7, 7), "[-1, -2]", true, NULL),
              device, prefix, seed++);
  }
  static const char *const dims[] = {"[0]", "[1]", "[0, 2]", "[-1, -2]", "[]", "null"};
  rc_view_t v = RC_VIEW(5, 33, 7);
  for (size_t d = 0; d < 3; d++) {
    const char *dt = rc_dtypes[d];
    for (size_t k = 0; k < sizeof dims / sizeof *dims; k++) {
      bool keep = k % 2;
      const char *kd = keep ? "true" : "false";
      rc_expect(rc_sum(&j, "aten::sum", dt, v, dims[k], keep, NULL), device, prefix, seed++);
      rc_expect(rc_sum(&j, "aten::mean", dt, v, dims[k], !keep, NULL), device, prefix, seed++);
      rc_expect(rc_var(&j, "aten::var_mean", dt, v, dims[k], "1", keep), device, prefix, seed++);
      rc_expect(rc_var(&j, "aten::std", dt, v, dims[k], "0", !keep), device, prefix, seed++);
      rc_expect(rc_norm(&j, true, dt, v, "2", dims[k], keep, NULL), device, prefix, seed++);
      if (strcmp(dims[k], "null")) {
        rc_expect(rc_dim_op(&j, "aten::amax", dt, v, "int[1]", dims[k], kd), device, prefix, seed++);
        rc_expect(rc_dim_op(&j, "aten::logsumexp", dt, v, "int[1]", dims[k], kd), device, prefix, seed++);
        rc_expect(rc_dim_op(&j, "aten::any", dt, v, "int[1]?", dims[k], kd), device, prefix, seed++);
      }
    }
    for (int dim = -3; dim < 3; dim++) {
      char text[16];
      snprintf(text, sizeof text, "%d", dim);
      rc_expect(rc_dim_op(&j, "aten::max", dt, v, "int", text, dim % 2 ? "true" : "false"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::argmin", dt, v, "int?", text, "false"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::all", dt, v, "int", text, "true"), device, prefix, seed++);
    }
    rc_expect(rc_dim_op(&j, "aten::argmin", dt, v, "int?", "null", "true"), device, prefix, seed++);
    rc_expect(rc_dim_op(&j, "aten::argmin", dt, v, "int?", "null", "false"), device, prefix, seed++);
    rc_expect(rc_dim_op(&j, "aten::prod", dt, RC_VIEW(5, 3, 7), "int", "1", "true"), device, prefix, seed++);
  }
  /* dtype=: bf16 summed as float, float rounded to bf16 first */
  rc_expect(rc_sum(&j, "aten::sum", "c10::BFloat16", v, "[0, 2]", false, "6"), device, prefix, seed++);
  rc_expect(rc_sum(&j, "aten::sum", "float", v, "[1]", false, "15"), device, prefix, seed++);
  rc_expect(rc_sum(&j, "aten::mean", "c10::Half", v, "[1]", true, "6"), device, prefix, seed++);
}

/* Transposed, sliced (offset, rows padded), expanded (stride 0) views. */
static inline void reduce_view_cases(const char *device, const char *prefix) {
  rc_json_t j;
  uint64_t seed = 900;
  rc_view_t transposed = rc_strided(2, RC_SHAPE(129, 17), RC_SHAPE(1, 129), 0);
  rc_view_t sliced = rc_strided(2, RC_SHAPE(7, 100), RC_SHAPE(150, 1), 5);
  rc_view_t strided = rc_strided(2, RC_SHAPE(9, 40), RC_SHAPE(81, 2), 3); /* every 2nd element */
  rc_view_t expand_rows = rc_strided(2, RC_SHAPE(4, 1000), RC_SHAPE(0, 1), 0);
  rc_view_t expand_cols = rc_strided(2, RC_SHAPE(1000, 4), RC_SHAPE(1, 0), 0);
  rc_view_t views[] = {transposed, sliced, strided, expand_rows, expand_cols};
  for (size_t d = 0; d < 3; d++)
    for (size_t k = 0; k < sizeof views / sizeof *views; k++)
      for (int dim = 0; dim < 2; dim++) {
        const char *dt = rc_dtypes[d], *dims = dim ? "[1]" : "[0]", *dim1 = dim ? "1" : "0";
        rc_expect(rc_sum(&j, "aten::sum", dt, views[k], dims, dim, NULL), device, prefix, seed++);
        rc_expect(rc_dim_op(&j, "aten::amin", dt, views[k], "int[1]", dims, "false"), device, prefix, seed++);
        rc_expect(rc_dim_op(&j, "aten::max", dt, views[k], "int", dim1, "true"), device, prefix, seed++);
        rc_expect(rc_var(&j, "aten::var", dt, views[k], dims, "1", false), device, prefix, seed++);
        rc_expect(rc_dim_op(&j, "aten::logsumexp", dt, views[k], "int[1]", dims, "true"), device, prefix, seed++);
        rc_expect(rc_scan(&j, "aten::cumsum", dt, views[k], dim, NULL), device, prefix, seed++);
      }
}

/* 2^20 + 3 elements to one output (split reductions), and a long column reduction. */
static inline void reduce_large_cases(const char *device, const char *prefix) {
  rc_json_t j;
  uint64_t seed = 1300;
  rc_view_t flat = RC_VIEW((1 << 20) + 3);
  rc_view_t tall = RC_VIEW(4099, 256);
  for (size_t d = 0; d < 3; d += 2) {
    const char *dt = rc_dtypes[d];
    rc_expect(rc_sum(&j, "aten::sum", dt, flat, "null", false, NULL), device, prefix, seed++);
    rc_expect(rc_dim_op(&j, "aten::amax", dt, flat, "int[1]", "[]", "false"), device, prefix, seed++);
    rc_expect(rc_dim_op(&j, "aten::argmin", dt, flat, "int?", "null", "false"), device, prefix, seed++);
    rc_expect(rc_var(&j, "aten::var", dt, flat, "null", "1", false), device, prefix, seed++);
    rc_expect(rc_dim_op(&j, "aten::logsumexp", dt, flat, "int[1]", "[0]", "false"), device, prefix, seed++);
    rc_expect(rc_norm(&j, true, dt, flat, "2", "null", false, NULL), device, prefix, seed++);
    rc_expect(rc_sum(&j, "aten::sum", dt, tall, "[0]", false, NULL), device, prefix, seed++);
    rc_expect(rc_dim_op(&j, "aten::max", dt, tall, "int", "0", "false"), device, prefix, seed++);
    rc_expect(rc_var(&j, "aten::std", dt, tall, "[0]", "1", true), device, prefix, seed++);
  }
}

/* cumsum and cumprod along the last and the first dim, dtype=, in place, many rows. */
static inline void scan_cases(const char *device, const char *prefix) {
  rc_json_t j;
  uint64_t seed = 1700;
  for (size_t d = 0; d < 3; d++) {
    const char *dt = rc_dtypes[d];
    for (size_t s = 0; s < sizeof rc_sizes / sizeof *rc_sizes; s++) {
      rc_expect(rc_scan(&j, "aten::cumsum", dt, RC_VIEW(7, rc_sizes[s]), -1, NULL), device, prefix, seed++);
      rc_expect(rc_scan(&j, "aten::cumsum", dt, RC_VIEW(rc_sizes[s], 33), 0, NULL), device, prefix, seed++);
      if (rc_sizes[s] <= 17)
        rc_expect(rc_scan(&j, "aten::cumprod", dt, RC_VIEW(rc_sizes[s], 40), 0, NULL), device, prefix, seed++);
    }
    rc_expect(rc_scan(&j, "aten::cumsum", dt, RC_VIEW(3, 5, 33), 1, "6"), device, prefix, seed++);
    rc_expect(rc_scan(&j, "aten::cumsum_", dt, RC_VIEW(6, 129), 1, NULL), device, prefix, seed++);
    rc_expect(rc_scan(&j, "aten::cumprod", dt, RC_VIEW(9, 17), -1, NULL), device, prefix, seed++);
    rc_expect(rc_scan(&j, "aten::cumsum", dt, RC_VIEW(100003), 0, NULL), device, prefix, seed++);
    /* rows in groups of eight and a tail, longer than one block (the cpu scans eight at once) */
    rc_expect(rc_scan(&j, "aten::cumsum", dt, RC_VIEW(19, 600), -1, NULL), device, prefix, seed++);
  }
}

/* sort, argsort and topk along the last and the first dim. */
static inline void sort_cases(const char *device, const char *prefix) {
  rc_json_t j;
  uint64_t seed = 2100;
  for (size_t d = 0; d < 3; d++) {
    const char *dt = rc_dtypes[d];
    for (size_t s = 0; s < sizeof rc_sizes / sizeof *rc_sizes; s++) {
      int64_t n = rc_sizes[s];
      rc_expect(rc_sort(&j, dt, RC_VIEW(7, n), -1, s % 2), device, prefix, seed++);
      rc_expect(rc_sort(&j, dt, RC_VIEW(n, 9), 0, !(s % 2)), device, prefix, seed++);
      rc_expect(rc_topk(&j, dt, RC_VIEW(5, n), n < 5 ? n : 5, 1, true), device, prefix, seed++);
      rc_expect(rc_topk(&j, dt, RC_VIEW(n, 6), 1, 0, false), device, prefix, seed++);
      rc_expect(rc_topk(&j, dt, RC_VIEW(3, n), n, -1, s % 2), device, prefix, seed++);
    }
    /* rows longer than a work-group sorts in local memory: topk's candidates path */
    rc_expect(rc_topk(&j, dt, RC_VIEW(2, 50000), 16, -1, true), device, prefix, seed++);
    rc_expect(rc_topk(&j, dt, RC_VIEW(3, 3001), 1, -1, false), device, prefix, seed++);
    rc_begin(&j, "aten::argsort");
    rc_tensor(&j, "self", "Tensor", dt, &(rc_view_t){.rank = 2, .shape = {4, 300}});
    rc_kw(&j);
    rc_value(&j, "stable", "bool", "true");
    rc_value(&j, "dim", "int", "-1");
    rc_value(&j, "descending", "bool", "true");
    rc_expect(rc_end(&j), device, prefix, seed++);
    rc_view_t t = rc_strided(2, RC_SHAPE(33, 20), RC_SHAPE(1, 40), 7);
    rc_expect(rc_sort(&j, dt, t, 0, false), device, prefix, seed++);
    rc_expect(rc_topk(&j, dt, t, 4, 1, true), device, prefix, seed++);
  }
}

/* Integer and bool sums, products, extremes, truth values, counts and scans, which the opencl
 * and gpu kernels compute in 64-bit integers, wrapping as the reference: every integer dtype the
 * reference loads exactly, short and long rows, strided views, a dtype= cast (int8). */
static inline void reduce_integer_cases(const char *device, const char *prefix) {
  rc_json_t j;
  static const char *const dtypes[] = {"int", "long int", "bool", "signed char", "unsigned char",
                                       "short int"};
  rc_view_t views[] = {RC_VIEW(4, 17), RC_VIEW(3, 1000),
                       rc_strided(2, RC_SHAPE(129, 17), RC_SHAPE(1, 129), 0),
                       rc_strided(2, RC_SHAPE(9, 40), RC_SHAPE(81, 2), 3)};
  uint64_t seed = 3100;
  for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++)
    for (size_t k = 0; k < sizeof views / sizeof *views; k++) {
      rc_view_t v = views[k];
      const char *dt = dtypes[d];
      rc_expect(rc_sum(&j, "aten::sum", dt, v, "[1]", false, NULL), device, prefix, seed++);
      rc_expect(rc_sum(&j, "aten::sum", dt, v, "null", false, NULL), device, prefix, seed++);
      rc_expect(rc_sum(&j, "aten::sum", dt, v, "[0]", true, "1"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::prod", dt, v, "int", "0", "false"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::amax", dt, v, "int[1]", "[0]", "true"), device, prefix,
                seed++);
      rc_expect(rc_dim_op(&j, "aten::min", dt, v, "int", "1", "false"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::max", dt, v, "int", "0", "true"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::all", dt, v, "int", "1", "false"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::any", dt, v, "int", "0", "true"), device, prefix, seed++);
      rc_expect(rc_dim_op(&j, "aten::count_nonzero", dt, v, "int[1]", "[1]", NULL), device, prefix,
                seed++);
      rc_expect(rc_scan(&j, "aten::cumsum", dt, v, 1, NULL), device, prefix, seed++);
      rc_expect(rc_scan(&j, "aten::cumprod", dt, v, 0, NULL), device, prefix, seed++);
    }
}

static const char *const rc_int_dtypes[] = {"int", "long int", "bool", "signed char",
                                            "unsigned char", "short int"};

/* Integer and bool elements converted to a float dtype= (sum, nansum, mean), logsumexp's
 * float32 and cumsum with dtype=: the fast kernels load integers as floats. Short rows (a
 * work-item each on opencl), long ones (a work-group each), transposed and offset views, and
 * the full reduction. float64 casts stay on the reference, saying so. */
static inline void reduce_int_float_cases(const char *device, const char *prefix) {
  rc_json_t j;
  rc_view_t views[] = {RC_VIEW(4, 17), RC_VIEW(3, 1000),
                       rc_strided(2, RC_SHAPE(129, 17), RC_SHAPE(1, 129), 0),
                       rc_strided(2, RC_SHAPE(9, 40), RC_SHAPE(81, 2), 3)};
  uint64_t seed = 3700;
#define RC_INT(json) rc_expect(json, device, prefix, seed++)
  for (size_t d = 0; d < sizeof rc_int_dtypes / sizeof *rc_int_dtypes; d++)
    for (size_t k = 0; k < sizeof views / sizeof *views; k++) {
      rc_view_t v = views[k];
      const char *dt = rc_int_dtypes[d];
      /* ScalarType codes: 5 float16, 6 float32, 15 bfloat16 */
      RC_INT(rc_sum(&j, "aten::mean", dt, v, "[1]", false, "6"));
      RC_INT(rc_sum(&j, "aten::mean", dt, v, "[0]", true, "15"));
      RC_INT(rc_sum(&j, "aten::mean", dt, v, "null", false, "5"));
      RC_INT(rc_sum(&j, "aten::sum", dt, v, "[1]", false, "6"));
      RC_INT(rc_sum(&j, "aten::sum", dt, v, "null", false, "6"));
      RC_INT(rc_sum(&j, "aten::nansum", dt, v, "[0]", false, "15"));
      RC_INT(rc_dim_op(&j, "aten::logsumexp", dt, v, "int[1]", "[1]", "false"));
      RC_INT(rc_scan(&j, "aten::cumsum", dt, v, 1, "6"));
      RC_INT(rc_scan(&j, "aten::cumsum", dt, v, 0, "15"));
    }
  RC_INT(rc_sum(&j, "aten::mean", "int", RC_VIEW(100003), "null", false, "6"));
#undef RC_INT
  if (!strcmp(device, "cpu")) return; /* the reference runs float64 there */
  xr_op_result_t r = check_op(rc_sum(&j, "aten::sum", "int", RC_VIEW(4, 17), "[1]", false, "7"), device);
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "double tensors run on the reference"), "%s", r.message);
}

/* sort, argsort and topk of integer and bool tensors, on their integer values: ties (bool rows,
 * int8 and uint8 rows longer than 256) keep their positions' order; int64 needs 64-bit keys;
 * topk of rows longer than a work-group sorts takes the candidates path on opencl. */
static inline void int_sort_cases(const char *device, const char *prefix) {
  rc_json_t j;
  uint64_t seed = 4300;
#define RC_INT(json) rc_expect(json, device, prefix, seed++)
  for (size_t d = 0; d < sizeof rc_int_dtypes / sizeof *rc_int_dtypes; d++) {
    const char *dt = rc_int_dtypes[d];
    for (size_t s = 0; s < sizeof rc_sizes / sizeof *rc_sizes; s++) {
      int64_t n = rc_sizes[s];
      RC_INT(rc_sort(&j, dt, RC_VIEW(7, n), -1, s % 2));
      RC_INT(rc_sort(&j, dt, RC_VIEW(n, 9), 0, !(s % 2)));
      RC_INT(rc_topk(&j, dt, RC_VIEW(5, n), n < 5 ? n : 5, 1, true));
      RC_INT(rc_topk(&j, dt, RC_VIEW(3, n), n, -1, s % 2));
    }
    RC_INT(rc_topk(&j, dt, RC_VIEW(2, 50000), 16, -1, true));
    RC_INT(rc_topk(&j, dt, RC_VIEW(3, 3001), 1, -1, false));
    rc_begin(&j, "aten::argsort");
    rc_tensor(&j, "self", "Tensor", dt, &(rc_view_t){.rank = 2, .shape = {4, 300}});
    rc_kw(&j);
    rc_value(&j, "stable", "bool", "true");
    rc_value(&j, "dim", "int", "-1");
    rc_value(&j, "descending", "bool", "true");
    RC_INT(rc_end(&j));
    rc_view_t t = rc_strided(2, RC_SHAPE(33, 20), RC_SHAPE(1, 40), 7);
    RC_INT(rc_sort(&j, dt, t, 0, false));
    RC_INT(rc_topk(&j, dt, t, 4, 1, true));
  }
#undef RC_INT
}

/* out= variants (strided out tensors too), empty and 0-d tensors. */
static inline void reduce_edge_cases(const char *device, const char *prefix) {
  rc_json_t j;
  uint64_t seed = 2500;
  rc_view_t x = RC_VIEW(6, 40);
  rc_view_t out_t = rc_strided(1, RC_SHAPE(6), RC_SHAPE(3), 1);
  rc_begin(&j, "aten::sum");
  rc_tensor(&j, "self", "Tensor", "c10::BFloat16", &x);
  rc_value(&j, "dim", "int[1]?", "[1]");
  rc_value(&j, "keepdim", "bool", "false");
  rc_kw(&j);
  rc_value(&j, "dtype", "ScalarType?", "null");
  rc_tensor(&j, "out", "Tensor(a!)", "float", &out_t);
  rc_expect(rc_end(&j), device, prefix, seed++);

  rc_begin(&j, "aten::max");
  rc_tensor(&j, "self", "Tensor", "float", &x);
  rc_value(&j, "dim", "int", "0");
  rc_value(&j, "keepdim", "bool", "true");
  rc_kw(&j);
  rc_tensor(&j, "max", "Tensor(a!)", "float", &(rc_view_t){.rank = 2, .shape = {1, 40}});
  rc_tensor(&j, "max_values", "Tensor(b!)", "long int", &(rc_view_t){.rank = 2, .shape = {1, 40}});
  rc_expect(rc_end(&j), device, prefix, seed++);

  rc_begin(&j, "aten::topk");
  rc_tensor(&j, "self", "Tensor", "c10::Half", &x);
  rc_value(&j, "k", "SymInt", "3");
  rc_value(&j, "dim", "int", "-1");
  rc_value(&j, "largest", "bool", "true");
  rc_value(&j, "sorted", "bool", "true");
  rc_kw(&j);
  rc_view_t kt = rc_strided(2, RC_SHAPE(6, 3), RC_SHAPE(1, 6), 0);
  rc_tensor(&j, "values", "Tensor(a!)", "c10::Half", &kt);
  rc_tensor(&j, "indices", "Tensor(b!)", "long int", &kt);
  rc_expect(rc_end(&j), device, prefix, seed++);

  rc_begin(&j, "aten::cumsum");
  rc_tensor(&j, "self", "Tensor", "float", &x);
  rc_value(&j, "dim", "int", "0");
  rc_kw(&j);
  rc_value(&j, "dtype", "ScalarType?", "null");
  rc_tensor(&j, "out", "Tensor(a!)", "float", &(rc_view_t){.rank = 2, .shape = {6, 40}, .strides = {1, 6}, .strided = true});
  rc_expect(rc_end(&j), device, prefix, seed++);

  rc_begin(&j, "aten::var_mean");
  rc_tensor(&j, "self", "Tensor", "float", &x);
  rc_value(&j, "dim", "int[1]?", "[0]");
  rc_kw(&j);
  rc_value(&j, "correction", "int?", "1");
  rc_value(&j, "keepdim", "bool", "false");
  rc_tensor(&j, "out0", "Tensor(a!)", "float", &(rc_view_t){.rank = 1, .shape = {40}});
  rc_tensor(&j, "out1", "Tensor(b!)", "float", &(rc_view_t){.rank = 1, .shape = {40}});
  rc_expect(rc_end(&j), device, prefix, seed++);

  /* empty reductions and empty outputs; only the ones with any output element are checked */
  rc_expect(rc_sum(&j, "aten::sum", "float", RC_VIEW(5, 0), "[1]", false, NULL), device, prefix, seed++);
  rc_expect(rc_sum(&j, "aten::sum", "c10::BFloat16", RC_VIEW(0, 5), "[0]", true, NULL), device, prefix, seed++);
  rc_expect(rc_dim_op(&j, "aten::count_nonzero", "float", RC_VIEW(3, 0, 4), "int[]", "[1]", NULL), device, prefix, seed++);
  rc_expect(rc_dim_op(&j, "aten::any", "float", RC_VIEW(4, 0), "int", "1", "false"), device, prefix, seed++);
  rc_expect(rc_dim_op(&j, "aten::all", "float", RC_VIEW(4, 0), "int", "1", "false"), device, prefix, seed++);
  rc_expect(rc_dim_op(&j, "aten::logsumexp", "float", RC_VIEW(4, 0), "int[1]", "[1]", "false"), device, prefix, seed++);
  rc_expect(rc_norm(&j, true, "float", RC_VIEW(3, 0), "2", "[1]", false, NULL), device, prefix, seed++);
  /* 0-d tensors */
  rc_view_t scalar = {.rank = 0};
  rc_expect(rc_sum(&j, "aten::sum", "float", scalar, "null", false, NULL), device, prefix, seed++);
  rc_expect(rc_dim_op(&j, "aten::amax", "c10::BFloat16", scalar, "int[1]", "[]", "false"), device, prefix, seed++);
  rc_expect(rc_dim_op(&j, "aten::max", "float", scalar, "int", "0", "false"), device, prefix, seed++);
  rc_expect(rc_scan(&j, "aten::cumsum", "float", scalar, 0, NULL), device, prefix, seed++);
  rc_expect(rc_sort(&j, "c10::Half", scalar, -1, false), device, prefix, seed++);
  rc_expect(rc_topk(&j, "float", scalar, 1, 0, true), device, prefix, seed++);
}

/* The family's matrix (tests/kernels/matrix.c): every group on every driver. */
#define REDUCE_MATRIX(GROUP)                                              \
  GROUP(rows, reduce_row_cases(device, kernel_impl(device, "reduce")))    \
  GROUP(dims, reduce_dim_cases(device, kernel_impl(device, "reduce")))    \
  GROUP(views, reduce_view_cases(device, kernel_impl(device, "reduce")))  \
  GROUP(large, reduce_large_cases(device, kernel_impl(device, "reduce"))) \
  GROUP(scans, scan_cases(device, kernel_impl(device, "reduce")))         \
  GROUP(sorts, sort_cases(device, kernel_impl(device, "reduce")))         \
  GROUP(edges, reduce_edge_cases(device, kernel_impl(device, "reduce")))  \
  GROUP(integers, reduce_integer_cases(device, kernel_impl(device, "reduce"))) \
  GROUP(int_float, reduce_int_float_cases(device, kernel_impl(device, "reduce"))) \
  GROUP(int_sorts, int_sort_cases(device, kernel_impl(device, "reduce")))
#define REDUCE_MATRIX_GAPS(GAP) \
  GAP(cpu, integers, "cpu.reduce computes float inputs; integer ones run on the reference")

#endif
