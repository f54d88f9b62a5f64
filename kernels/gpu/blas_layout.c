/* The GEMM problem as a column-major strided-batched BLAS call (blas_layout.h). */
#include "kernels/gpu/blas_layout.h"

#include "kernels/family.h"

/* The [rows x cols] matrix X whose (i, j) is at i * si + j * sj, as the library's op(S):
 * S = X column-major (plain) or S = X^T column-major (transposed). A dimension of size 1 takes
 * any stride; the leading dimension must cover the rows of S so columns do not overlap. */
static bool fit(int64_t rows, int64_t cols, int64_t si, int64_t sj, bool allow_transpose,
                xr_blas_matrix_t *out) {
  if (si == 1 || rows <= 1) {
    int64_t need = rows > 1 ? rows : 1;
    int64_t ld = cols > 1 ? sj : need;
    if (ld >= need) {
      *out = (xr_blas_matrix_t){.role = out->role, .rows = rows, .cols = cols, .ld = ld};
      return true;
    }
  }
  if (allow_transpose && (sj == 1 || cols <= 1)) {
    int64_t need = cols > 1 ? cols : 1;
    int64_t ld = rows > 1 ? si : need;
    if (ld >= need) {
      *out = (xr_blas_matrix_t){
          .role = out->role, .transposed = true, .rows = cols, .cols = rows, .ld = ld};
      return true;
    }
  }
  return false;
}

/* The one stride s with offset(batch b) == b * s, if the operand's batch offsets have one. */
static bool uniform_batch_stride(const xr_gemm_operand_t *o, const xr_gemm_problem_t *p,
                                 int64_t *out) {
  *out = 0;
  if (p->batch <= 1) return true;
  int64_t s = xr_gemm_offset(o, p, 1) - xr_gemm_offset(o, p, 0);
  int64_t span = 1;
  for (int d = p->batch_rank - 1; d >= 0; d--) {
    if (p->batch_shape[d] > 1 && o->batch_strides[d] != s * span) return false;
    span *= p->batch_shape[d];
  }
  *out = s;
  return true;
}

static const char *role_name(int role) {
  return role == XR_GEMM_A ? "the first operand" : role == XR_GEMM_B ? "the second operand"
         : role == XR_GEMM_C ? "the added tensor" : "the output";
}

xr_status_t xr_blas_gemm_map(const xr_op_plan_t *plan, const xr_blas_limits_t *limits,
                             xr_blas_gemm_t *out) {
  const xr_gemm_problem_t *p = plan->problem;
  const char *op = plan->op->name;
  if (p->M <= 0 || p->N <= 0 || p->K <= 0 || p->batch <= 0) {
    return xr_error(XR_UNIMPLEMENTED, "%s: an empty product (M %lld, N %lld, K %lld, batch %lld)",
                    op, (long long)p->M, (long long)p->N, (long long)p->K, (long long)p->batch);
  }
  if (p->M > INT32_MAX || p->N > INT32_MAX || p->K > INT32_MAX || p->batch > INT32_MAX) {
    return xr_error(XR_UNIMPLEMENTED, "%s: sizes past 2^31 - 1 (M %lld, N %lld, K %lld, batch "
                    "%lld)", op, (long long)p->M, (long long)p->N, (long long)p->K,
                    (long long)p->batch);
  }
  xr_blas_gemm_t g = {.k = p->K, .batch = p->batch};
  g.a.role = XR_GEMM_A;
  g.b.role = XR_GEMM_B;
  g.d.role = XR_GEMM_OUT;
  g.c.role = XR_GEMM_C;
  /* D = out^T (row-major out, the transpose trick) or D = out (column-major out). */
  const xr_gemm_operand_t *o = &p->out;
  if (fit(p->N, p->M, o->col_stride, o->row_stride, false, &g.d)) {
    g.swapped = true;
    g.m = p->N;
    g.n = p->M;
    g.a.role = XR_GEMM_B;
    g.b.role = XR_GEMM_A;
    /* library A = B^T [N x K], library B = A^T [K x M] */
    if (!fit(p->N, p->K, p->b.col_stride, p->b.row_stride, true, &g.a) ||
        !fit(p->K, p->M, p->a.col_stride, p->a.row_stride, true, &g.b)) {
      return xr_error(XR_UNIMPLEMENTED, "%s: an operand has no unit stride (a: %lld, %lld; b: "
                      "%lld, %lld)", op, (long long)p->a.row_stride, (long long)p->a.col_stride,
                      (long long)p->b.row_stride, (long long)p->b.col_stride);
    }
  } else if (fit(p->M, p->N, o->row_stride, o->col_stride, false, &g.d)) {
    g.m = p->M;
    g.n = p->N;
    if (!fit(p->M, p->K, p->a.row_stride, p->a.col_stride, true, &g.a) ||
        !fit(p->K, p->N, p->b.row_stride, p->b.col_stride, true, &g.b)) {
      return xr_error(XR_UNIMPLEMENTED, "%s: an operand has no unit stride (a: %lld, %lld; b: "
                      "%lld, %lld)", op, (long long)p->a.row_stride, (long long)p->a.col_stride,
                      (long long)p->b.row_stride, (long long)p->b.col_stride);
    }
  } else {
    return xr_error(XR_UNIMPLEMENTED, "%s: the output (strides %lld, %lld) is neither row- nor "
                    "column-major", op, (long long)o->row_stride, (long long)o->col_stride);
  }
  const xr_gemm_operand_t *operands[] = {[XR_GEMM_A] = &p->a, [XR_GEMM_B] = &p->b,
                                         [XR_GEMM_C] = &p->c, [XR_GEMM_OUT] = &p->out};
  xr_blas_matrix_t *matrices[] = {&g.a, &g.b, &g.d};
  for (int i = 0; i < 3; i++) {
    if (!uniform_batch_stride(operands[matrices[i]->role], p, &matrices[i]->batch_stride)) {
      return xr_error(XR_UNIMPLEMENTED, "%s: the batch offsets of %s are not one stride apart "
                      "(a broadcast over some batch dimensions only)", op,
                      role_name(matrices[i]->role));
    }
  }
  g.alpha = (float)p->alpha;
  g.beta = (float)p->beta;
  if (p->c.index >= 0) {
    const xr_gemm_operand_t *c = &p->c;
    /* C's strides along D's rows and columns. */
    int64_t along_rows = g.swapped ? c->col_stride : c->row_stride;
    int64_t along_cols = g.swapped ? c->row_stride : c->col_stride;
    int64_t batch_stride;
    bool uniform = uniform_batch_stride(c, p, &batch_stride);
    if (uniform && fit(g.m, g.n, along_rows, along_cols, false, &g.c) && g.c.ld == g.d.ld &&
        batch_stride == g.d.batch_stride) {
      g.has_c = true;
      g.c.batch_stride = batch_stride;
    } else if (p->beta == 1.0 && uniform && batch_stride == 0 && (along_cols == 0 || g.n == 1) &&
               (along_rows == 1 || g.m == 1) && (g.batch == 1 || (limits && limits->batched_bias))) {
      g.bias = true;
      g.beta = 0.0f;
    } else {
      return xr_error(XR_UNIMPLEMENTED, "%s: the added tensor (strides %lld, %lld, beta %g) is "
                      "neither laid out like the output nor a bias vector with beta 1", op,
                      (long long)c->row_stride, (long long)c->col_stride, p->beta);
    }
  }
  *out = g;
  return XR_OK;
}
