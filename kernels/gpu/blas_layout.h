/* The GEMM family's problem (kernels/gemm.h) in the terms of a column-major BLAS with strided
 * batches (cuBLASLt, hipBLASLt): D = alpha * op(A) op(B) + beta * C (+ bias), m x n, inner k.
 *
 * Row-major output (the common case) uses the transpose trick: out[M, N] read column-major
 * is out^T [N, M], and out^T = B^T A^T, so the library's A is our B and its B our A, and no
 * data moves. A column-major output (a transposed `out=` view) maps directly. Every operand
 * needs a unit stride in one of its two dimensions (then it is plain or transposed), a leading
 * dimension covering the other, and batch offsets that are one stride apart (stride 0, a
 * broadcast, is fine for A and B). C is either a matrix laid out exactly like D, or, with
 * beta == 1, a vector along D's rows (the addmm / linear bias) added by the BIAS epilogue.
 * Pure host code, no device: tests/gpu:blas_layout_test checks it by evaluating the mapped
 * column-major product on the CPU against the problem's own addressing. */
#ifndef XR_KERNELS_GPU_BLAS_LAYOUT_H
#define XR_KERNELS_GPU_BLAS_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels/gemm.h"

/* One column-major matrix as the library stores it; op() transposes it when `transposed`. */
typedef struct xr_blas_matrix {
  int role;              /* XR_GEMM_A, XR_GEMM_B, XR_GEMM_C, XR_GEMM_OUT: which operand */
  bool transposed;
  int64_t rows, cols;    /* of the stored matrix (before op) */
  int64_t ld;            /* elements between columns; >= max(1, rows) */
  int64_t batch_stride;  /* elements between batch entries; 0 repeats the matrix */
} xr_blas_matrix_t;

typedef struct xr_blas_gemm {
  int64_t m, n, k, batch;
  bool swapped;          /* the transpose trick: the library's A is our B */
  xr_blas_matrix_t a, b, d;
  xr_blas_matrix_t c;    /* valid when has_c */
  bool has_c;            /* beta * C with C laid out exactly like D */
  bool bias;             /* C is a unit-stride vector of m values, added once per column */
  float alpha, beta;     /* beta is 0 when `bias` (the bias is added unscaled: beta was 1) */
} xr_blas_gemm_t;

/* Which limits the library puts on a mapping. */
typedef struct xr_blas_limits {
  bool batched_bias;     /* the BIAS epilogue repeats one vector over strided batches */
} xr_blas_limits_t;

/* Maps the plan's GEMM problem (f32 / f16 / bf16 products are the caller's check). OK, or
 * UNIMPLEMENTED with a sentence naming the op and the reason (no unit stride, uneven batch
 * offsets, a C the library cannot take, sizes past int32). */
xr_status_t xr_blas_gemm_map(const xr_op_plan_t *plan, const xr_blas_limits_t *limits,
                             xr_blas_gemm_t *out);

#endif
