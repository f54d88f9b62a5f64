/* The elementwise family's parsed problem, shared by its implementations (ref, cpu, opencl).
 *
 * Every op of the family (binary arithmetic, activations, gated activations, copies and
 * conversions, fills, and the gathers and concatenations of kernels/indexing.c) is reduced to
 * one or more steps; a step walks an iteration shape and, per element, reads up to two operands
 * through their own strides (0 where they broadcast) and writes one. */
#ifndef XR_KERNELS_ELEMENTWISE_H
#define XR_KERNELS_ELEMENTWISE_H

#include "kernels/kernels.h"

typedef enum xr_ew_op {
  XR_EW_ADD = 0,           /* a + alpha * b */
  XR_EW_SUB,               /* a - alpha * b */
  XR_EW_MUL,               /* a * b */
  XR_EW_DIV,               /* a / b */
  XR_EW_DIV_TRUNC,         /* trunc(a / b) */
  XR_EW_DIV_FLOOR,         /* floor(a / b) */
  XR_EW_COPY,              /* a, converted to the output dtype */
  XR_EW_FILL,              /* the scalar */
  XR_EW_GELU,              /* 0.5 a (1 + erf(a / sqrt 2)) */
  XR_EW_GELU_TANH,         /* 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))) */
  XR_EW_SILU,              /* a / (1 + exp(-a)) */
  XR_EW_SILU_AND_MUL,      /* silu(a) * b */
  XR_EW_GELU_AND_MUL,      /* gelu(a) * b */
  XR_EW_GELU_TANH_AND_MUL, /* gelu_tanh(a) * b */
  XR_EW_GATHER,            /* a[.., clamp(b), ..]: b holds integer indices along one dim of a */
  XR_EW_OP_COUNT
} xr_ew_op_t;

/* One operand addressed through strides over the step's iteration shape. */
typedef struct xr_ew_operand {
  int index;                     /* binding index; -1 when absent (unary ops, scalar b) */
  xr_dtype_t dtype;
  int64_t offset;                /* elements added to the tensor's own offset */
  int64_t strides[XR_MAX_RANK];  /* elements; 0 where the operand broadcasts */
} xr_ew_operand_t;

typedef struct xr_ew_step {
  xr_ew_op_t op;
  int rank;
  int64_t shape[XR_MAX_RANK];
  int64_t numel;
  xr_ew_operand_t out, a, b;
  bool b_scalar;                 /* b is `scalar` (Scalar overloads, fills) */
  double scalar;
  double alpha;                  /* ADD and SUB */
  int64_t gather_stride;         /* GATHER: a's stride along the indexed dim */
  int64_t gather_size;           /* GATHER: a's size along it (indices are clamped to it) */
} xr_ew_step_t;

typedef struct xr_ew_problem {
  size_t step_count;             /* several for aten::cat (one copy per input) */
  xr_ew_step_t steps[];
} xr_ew_problem_t;

/* Whether an op reads b (a tensor or the scalar). */
bool xr_ew_op_binary(xr_ew_op_t op);
/* Whether the output dtype is computed through float (every float dtype but f64). */
bool xr_ew_float_compute(xr_dtype_t dtype);

/* The same iteration with dimensions merged where every operand allows it (row-major walks of
 * both are identical), size-1 dimensions dropped; rank 0 stays rank 0 (one element). */
void xr_ew_coalesce(const xr_ew_step_t *step, xr_ew_step_t *out_flat);

/* Analysis of the indexing ops (kernels/indexing.c): aten::cat, index_select, embedding. */
bool xr_ew_is_indexing_op(const char *name);
xr_status_t xr_ew_analyze_indexing(xr_op_plan_t *plan, xr_ew_problem_t **out_problem);
/* The indexing ops' initializers (their index tensors stay inside the table they index). */
extern const struct xr_op_initializer xr_indexing_initializers[];
/* Allocates a problem of `steps` zeroed steps. */
xr_ew_problem_t *xr_ew_problem_alloc(size_t steps);
/* Bytes (at least) and floating-point operations one execution of the step moves and does. */
void xr_ew_step_cost(const xr_ew_step_t *step, double *bytes, double *flops);

/* The fast implementations (kernels/cpu/elementwise_cpu.c, kernels/opencl/elementwise_opencl.c,
 * kernels/gpu/elementwise_gpu.c). */
extern const xr_kernel_impl_t xr_cpu_elementwise;
extern const xr_kernel_impl_t xr_opencl_elementwise;
extern const xr_kernel_impl_t xr_gpu_elementwise;

#endif
