/* Row-wise families (softmax, layer norm, RMS norm) and rotary embedding: the problems their
 * analyses produce, shared by the CPU reference (kernels/norm.c, softmax.c, rotary.c), the fast
 * CPU kernels (kernels/cpu/norm_cpu.c) and the OpenCL and CUDA/HIP kernels (kernels/norm_device.c).
 *
 * A row op sees every tensor as rows x n: element i of row r of operand k lies at
 * offset + outer(r) + inner(i), outer(r) decomposing r over outer_shape with the operand's outer
 * strides and inner(i) decomposing i over inner_shape with its inner strides. A weight has outer
 * strides 0; mean and rstd have inner strides 0. Dims that are contiguous in every operand are
 * merged, so the common cases end with inner_rank <= 1 and few outer dims. */
#ifndef XR_KERNELS_NORM_H
#define XR_KERNELS_NORM_H

#include "kernels/family.h"

typedef enum xr_rows_op {
  XR_ROWS_SOFTMAX = 0,
  XR_ROWS_LAYER_NORM,   /* (x - mean) * rstd * weight + bias; mean and rstd returned if asked */
  XR_ROWS_RMS_NORM,     /* x * rstd * weight */
  /* residual_out = round(x + residual_in); out = rms_norm of that sum: the sum as stored
   * (vLLM, sgl-kernel: in place, residual_out the residual_in binding and out the x binding) or
   * the unrounded fp32 sum (fp32_sum: aiter's out-of-place ops, four distinct tensors). */
  XR_ROWS_ADD_RMS_NORM,
} xr_rows_op_t;

enum {
  XR_ROWS_X = 0,     /* input */
  XR_ROWS_OUT,       /* output (the X binding for the in-place ADD_RMS_NORM) */
  XR_ROWS_RESIDUAL_IN,
  XR_ROWS_RESIDUAL_OUT, /* the RESIDUAL_IN binding for the in-place ADD_RMS_NORM */
  XR_ROWS_WEIGHT,
  XR_ROWS_BIAS,
  XR_ROWS_MEAN,
  XR_ROWS_RSTD,
  XR_ROWS_OPERANDS,
};

typedef struct xr_rows_operand {
  int index; /* binding index; -1 when absent */
  xr_dtype_t dtype;
  int64_t outer_strides[XR_MAX_RANK];
  int64_t inner_strides[XR_MAX_RANK];
} xr_rows_operand_t;

typedef struct xr_rows_problem {
  xr_rows_op_t op;
  int64_t rows, n;
  int outer_rank, inner_rank;
  int64_t outer_shape[XR_MAX_RANK], inner_shape[XR_MAX_RANK];
  xr_rows_operand_t operand[XR_ROWS_OPERANDS];
  double eps;
  bool fp32_sum;           /* ADD_RMS_NORM normalises the fp32 sum, not the stored residual */
  const char *unsupported; /* why no implementation runs it (gemma_norm), or NULL */
} xr_rows_problem_t;

/* Merges dims that are contiguous in every present operand and drops size-1 dims. */
void xr_rows_simplify(xr_rows_problem_t *p);

/* What every fast implementation (cpu, opencl, cuda/hip) of the row ops and of rotary runs:
 * f32, f16 and bf16 tensors (mean/rstd f32), the normalised dims one strided run in every
 * tensor, a problem without an `unsupported` reason. UNIMPLEMENTED naming the `backend` ("cpu",
 * "opencl", "GPU") and the op otherwise; each backend checks its own limits (grid, dispatch
 * size) after this. */
static inline bool xr_norm_fast_dtype(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16;
}
xr_status_t xr_rows_check_fast(const xr_op_plan_t *plan, const char *backend);
xr_status_t xr_rotary_check_fast(const xr_op_plan_t *plan, const char *backend);

/* Storage offsets (without the tensor's own offset) of row r / element i of operand k. */
static inline int64_t xr_rows_outer_offset(const xr_rows_problem_t *p, int k, int64_t r) {
  int64_t off = 0;
  for (int d = p->outer_rank - 1; d >= 0; d--) {
    off += (r % p->outer_shape[d]) * p->operand[k].outer_strides[d];
    r /= p->outer_shape[d];
  }
  return off;
}

static inline int64_t xr_rows_inner_offset(const xr_rows_problem_t *p, int k, int64_t i) {
  int64_t off = 0;
  for (int d = p->inner_rank - 1; d >= 0; d--) {
    off += (i % p->inner_shape[d]) * p->operand[k].inner_strides[d];
    i /= p->inner_shape[d];
  }
  return off;
}

/* Rotary embedding (_C::rotary_embedding, sgl_kernel::rotary_embedding): per token t, with
 * p = positions[t], c = cache[p][i], s = cache[p][rot_dim/2 + i] (s negated when inverse), for
 * every head and i < rot_dim/2:
 * x' = x*c - y*s, y' = y*c + x*s, where (x, y) = (h[i], h[rot_dim/2 + i]) in NeoX style and
 * (h[2i], h[2i+1]) in GPT-J style, h starting rope_dim_offset elements into the head. A
 * position outside [0, max_position) leaves the token unchanged (the cache has no row for it). */
typedef struct xr_rotary_problem {
  int positions, query, key, cache; /* binding indices; key -1 when None */
  xr_dtype_t pos_dtype, q_dtype, cache_dtype;
  int64_t tokens;
  int token_rank; /* positions' rank: 1 ([T]) or 2 ([B, S]) */
  int64_t token_shape[2];
  int64_t pos_strides[2], q_token_strides[2], k_token_strides[2];
  int64_t q_head_stride, q_elem_stride, k_head_stride, k_elem_stride;
  int64_t num_heads, num_kv_heads, head_size, rot_dim, rope_dim_offset;
  int64_t max_position, cache_pos_stride, cache_elem_stride;
  bool is_neox, inverse;
} xr_rotary_problem_t;

static inline int64_t xr_rotary_token_offset(const xr_rotary_problem_t *p, const int64_t *strides,
                                             int64_t t) {
  int64_t off = 0;
  for (int d = p->token_rank - 1; d >= 0; d--) {
    off += (t % p->token_shape[d]) * strides[d];
    t /= p->token_shape[d];
  }
  return off;
}

/* Implementations other files provide, listed in the families' impl tables. The norm and
 * softmax impls share their code (the problem says which op) and differ only in name. */
extern const xr_kernel_impl_t xr_cpu_norm_impl, xr_cpu_softmax_impl, xr_cpu_rotary_impl;
extern const xr_kernel_impl_t xr_opencl_norm_impl, xr_opencl_softmax_impl, xr_opencl_rotary_impl;
extern const xr_kernel_impl_t xr_gpu_norm_impl, xr_gpu_softmax_impl, xr_gpu_rotary_impl;

/* The reference's storage pointers for a rows problem (used by norm.c and softmax.c). */
typedef struct xr_rows_ref {
  const xr_rows_problem_t *p;
  void *base[XR_ROWS_OPERANDS];
  int64_t offset[XR_ROWS_OPERANDS];
} xr_rows_ref_t;

xr_status_t xr_rows_ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                const xr_tensor_t *tensors, void **out_state);
/* Element i of row r of operand k, widened to double. */
static inline double xr_rows_ref_load(const xr_rows_ref_t *s, int k, int64_t r, int64_t i) {
  const xr_rows_problem_t *p = s->p;
  return xr_load_element(s->base[k], p->operand[k].dtype,
                         s->offset[k] + xr_rows_outer_offset(p, k, r) + xr_rows_inner_offset(p, k, i));
}
static inline void xr_rows_ref_store(const xr_rows_ref_t *s, int k, int64_t r, int64_t i, double v) {
  const xr_rows_problem_t *p = s->p;
  xr_store_element(s->base[k], p->operand[k].dtype,
                   s->offset[k] + xr_rows_outer_offset(p, k, r) + xr_rows_inner_offset(p, k, i), v);
}

/* Sets operand k (outer_rank / inner_rank strides as the problem's unsimplified dims; NULL: 0,
 * i.e. broadcast, as weights over rows and mean/rstd over a row). */
void xr_rows_set_operand(xr_rows_problem_t *p, int k, int index, xr_dtype_t dtype,
                         const int64_t *outer_strides, const int64_t *inner_strides);
/* Flops and bytes of one execution of a simplified problem. */
void xr_rows_costs(const xr_rows_problem_t *p, double *out_flops, double *out_bytes);

#endif
