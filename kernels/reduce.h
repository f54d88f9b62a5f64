/* The reduce family: reductions (sum, mean, prod, amax/amin, max/min, argmin, all/any,
 * count_nonzero, logsumexp, var/std, norms), scans (cumsum, cumprod) and sorts (sort, argsort,
 * topk). The problem its analysis (kernels/reduce.c) produces, shared by the CPU reference, the
 * fast CPU kernels (kernels/cpu/reduce_cpu.c), and the OpenCL and CUDA/HIP kernels
 * (kernels/reduce_device.c, which fills kernels/reduce_args.h's block).
 *
 * Geometry. Every op walks its input as outer x inner: output position o decomposes over the
 * kept dims (outer_shape, row-major) and, for each, the reduced positions k = 0 .. red_numel-1
 * decompose over the reduced dims (red_shape, row-major, in the input's dim order). Input
 * element (o, k) is at offset + outer(o) + red(k) with the input's strides. Scans and sorts
 * have exactly one "reduced" dim (the dim they run along, red_rank 1) and write along it too:
 * element j of row o of output s is at out(o) + j * out[s].dim_stride. Dims contiguous in every
 * operand are merged and size-1 dims dropped, so the common cases end with one or two dims per
 * side; merging keeps row-major order, so a flat index over the reduced dims (argmin with
 * dim=None) is unchanged.
 *
 * Semantics (torch's, rounding once to the output dtype):
 *   - sum / nansum / prod / mean: the elements converted to `cast` first (dtype=, or the
 *     result dtype: int64 for integer and bool sums and products); empty sum 0, prod 1, mean NaN.
 *   - amax / amin / max / min: NaN propagates (max.dim / min.dim / argmin: the first NaN's
 *     index; otherwise the first extreme's). Empty reductions are refused at planning.
 *   - all / any: element != 0 (NaN counts); count_nonzero likewise, int64.
 *   - logsumexp: m = max (NaN propagates; m = 0 where |m| is inf), log(sum(exp(x - m))) + m.
 *   - var / std: sum((x - mean)^2) / max(0, N - correction); var_mean / std_mean also return
 *     the mean (output 1).
 *   - norm (aten::norm, aten::linalg_vector_norm): p = inf: max|x|, -inf: min|x|, 0: count of
 *     nonzeros, otherwise (sum |x|^p)^(1/p).
 *   - cumsum / cumprod: inclusive scans along dim, in `cast`.
 *   - sort / argsort / topk: a stable sort of each row by (value, position), NaN above every
 *     number, descending (topk largest) reversing the value order only; topk keeps the first k.
 * Thread-safety: as every family (kernels/kernels.h). */
#ifndef XR_KERNELS_REDUCE_H
#define XR_KERNELS_REDUCE_H

#include "kernels/family.h"

typedef enum xr_reduce_op {
  XR_REDUCE_SUM = 0,
  XR_REDUCE_NANSUM,
  XR_REDUCE_MEAN,
  XR_REDUCE_PROD,
  XR_REDUCE_MAX,     /* amax, max(), max.dim: values (output 0) and/or indices (output 1) */
  XR_REDUCE_MIN,     /* amin, min(), min.dim, argmin */
  XR_REDUCE_ALL,
  XR_REDUCE_ANY,
  XR_REDUCE_COUNT_NONZERO,
  XR_REDUCE_LOGSUMEXP,
  XR_REDUCE_VAR,     /* output 1: the mean (var_mean) */
  XR_REDUCE_STD,     /* output 1: the mean (std_mean) */
  XR_REDUCE_NORM,    /* order p */
  XR_REDUCE_CUMSUM,  /* scans: red_rank 1 */
  XR_REDUCE_CUMPROD,
  XR_REDUCE_SORT,    /* sort, argsort, topk: output 0 values, output 1 indices; red_rank 1 */
  XR_REDUCE_OPS,
} xr_reduce_op_t;

/* Output slots. */
enum { XR_REDUCE_VALUES = 0, XR_REDUCE_INDICES = 1, XR_REDUCE_OUTPUTS = 2 };

static inline bool xr_reduce_is_scan(xr_reduce_op_t op) {
  return op == XR_REDUCE_CUMSUM || op == XR_REDUCE_CUMPROD;
}
/* Ops whose outputs run along the reduced dim (red_rank 1): scans and sorts. */
static inline bool xr_reduce_along(xr_reduce_op_t op) {
  return xr_reduce_is_scan(op) || op == XR_REDUCE_SORT;
}

typedef struct xr_reduce_output {
  int index;                          /* binding index; -1 when the op does not produce it */
  xr_dtype_t dtype;
  int64_t outer_strides[XR_MAX_RANK]; /* over the kept dims */
  int64_t dim_stride;                 /* scans and sorts: along the dim */
} xr_reduce_output_t;

typedef struct xr_reduce_problem {
  xr_reduce_op_t op;
  int self;                /* binding index of the input */
  xr_dtype_t in_dtype;
  /* The dtype elements are converted to before the op (sum's dtype=, int64 for integer sums,
   * the out= tensor's dtype); in_dtype when there is no conversion. */
  xr_dtype_t cast;
  int outer_rank, red_rank;
  int64_t outer_shape[XR_MAX_RANK], in_outer[XR_MAX_RANK];
  int64_t red_shape[XR_MAX_RANK], in_red[XR_MAX_RANK];
  int64_t outer_numel, red_numel;
  int64_t k;               /* sorts: positions written per row (topk's k; n for sort) */
  xr_reduce_output_t out[XR_REDUCE_OUTPUTS];
  double p;                /* norm: the order (inf allowed) */
  double correction;       /* var / std */
  bool descending;         /* sort descending, topk largest */
  /* Non-empty: a form this family does not run (every implementation declines with it). */
  char unsupported[200];
} xr_reduce_problem_t;

/* Offsets (elements, without the tensor's own offset) of output position o in the input and in
 * output s, and of reduced position k in the input. */
static inline int64_t xr_reduce_outer_offset(const xr_reduce_problem_t *p, const int64_t *strides,
                                             int64_t o) {
  int64_t off = 0;
  for (int d = p->outer_rank - 1; d >= 0; d--) {
    off += (o % p->outer_shape[d]) * strides[d];
    o /= p->outer_shape[d];
  }
  return off;
}

static inline int64_t xr_reduce_red_offset(const xr_reduce_problem_t *p, int64_t k) {
  int64_t off = 0;
  for (int d = p->red_rank - 1; d >= 0; d--) {
    off += (k % p->red_shape[d]) * p->in_red[d];
    k /= p->red_shape[d];
  }
  return off;
}

/* The input dtypes the fast implementations (cpu, opencl, gpu) compute in float: f32, f16 and
 * bf16, with outputs in those, bool (all/any) or int64 (counts, indices). */
static inline bool xr_reduce_fast_dtype(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16;
}

/* What every fast implementation checks first: the form is one this family runs, and its input,
 * conversion and output dtypes are float ones (f32/f16/bf16; outputs also bool or int64), or
 * it is one of xr_reduce_int_to_float's. UNIMPLEMENTED naming the `backend` ("cpu", "opencl",
 * "GPU") otherwise. Integer sorts (xr_reduce_int_sort) are each backend's own to admit. */
xr_status_t xr_reduce_check_fast(const xr_op_plan_t *plan, const char *backend);

/* Whether the opencl and gpu kernels compute the problem exactly in 64-bit integers, wrapping
 * as the reference does: sum, nansum, prod, cumsum and cumprod (the elements converted to an
 * integer cast first), max / min (values and first positions), all, any and count_nonzero, of
 * integer and bool tensors the reference loads exactly (signed 8 to 64 bits, uint8, bool),
 * into integer or bool outputs. */
bool xr_reduce_int_pipeline(const xr_reduce_problem_t *p);

/* Whether the problem reduces or scans integer or bool elements (signed 8 to 64 bits, uint8,
 * bool) converted to a float cast first (f32/f16/bf16: sum / nansum / prod / mean with
 * dtype=, logsumexp's float32, cumsum / cumprod with dtype=) into float outputs: the fast
 * kernels load the integers as floats (exact up to 2^24, else rounded once to the cast, as the
 * reference does) and run their float path. */
bool xr_reduce_int_to_float(const xr_reduce_problem_t *p);

/* Whether the problem is a sort, argsort or topk of an integer or bool tensor (signed 8 to 64
 * bits, uint8, bool): sorted exactly on their integer values, stably, as the reference. */
bool xr_reduce_int_sort(const xr_reduce_problem_t *p);

/* The elementwise identity and the float parameters a fast kernel needs: for NORM, which of
 * the special orders applies. */
typedef enum xr_reduce_norm_kind {
  XR_NORM_P = 0, /* (sum |x|^p)^(1/p) */
  XR_NORM_1,
  XR_NORM_2,
  XR_NORM_INF,
  XR_NORM_NEG_INF,
  XR_NORM_0,
} xr_reduce_norm_kind_t;
xr_reduce_norm_kind_t xr_reduce_norm_kind(double p);

extern const xr_kernel_impl_t xr_cpu_reduce;    /* kernels/cpu/reduce_cpu.c */
extern const xr_kernel_impl_t xr_opencl_reduce; /* kernels/reduce_device.c */
extern const xr_kernel_impl_t xr_gpu_reduce;    /* kernels/reduce_device.c */

#endif
