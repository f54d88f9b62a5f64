/* The elementwise family's parsed problem, shared by its implementations (ref, cpu, opencl,
 * gpu).
 *
 * Every op of the family (binary arithmetic, activations, gated activations, copies and
 * conversions, fills, the pointwise table of kernels/pointwise_ops.h, the creation and movement
 * ops of kernels/movement.c, and the gathers and concatenations of kernels/indexing.c) is reduced
 * to one or more steps; a step walks an iteration shape and, per element, reads up to three
 * operands (a tensor through its own strides, 0 where it broadcasts, or a Scalar) and writes
 * one. */
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
  XR_EW_ARANGE,            /* a_value + i * alpha, i the element's row-major index */
  XR_EW_LINSPACE,          /* a_value to c_value in numel evenly spaced steps, as torch */
  XR_EW_TRIL,              /* a where column - row <= diagonal in its matrix, else 0 */
  XR_EW_TRIU,              /* a where column - row >= diagonal, else 0 */
  /* The pointwise table (kernels/pointwise_ops.h): XR_EW_ABS, XR_EW_NEG, ... */
#define XR_PW(ID, ...) XR_EW_##ID,
#include "kernels/pointwise_ops.h"
#undef XR_PW
  XR_EW_OP_COUNT
} xr_ew_op_t;

#define XR_EW_PW_FIRST XR_EW_ABS /* the table's first op; every op from it on is a table op */
#define XR_EW_MAX_PARAMS 3

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
  int64_t tri_rows, tri_cols;    /* TRIL, TRIU: the matrices' size (the iteration's last dims) */
  int64_t diagonal;              /* TRIL, TRIU */
  /* Table ops: a third operand (where, lerp, addcmul ...); a and c may be Scalars too, as b
   * is with b_scalar and scalar. */
  xr_ew_operand_t c;
  bool a_scalar, c_scalar;
  double a_value, c_value;
  double param[XR_EW_MAX_PARAMS]; /* the row's Scalar arguments, p0.. (None: NaN) */
  int64_t iparam[XR_EW_MAX_PARAMS]; /* the same as integers (None: INT64_MIN for p0, else MAX) */
  xr_dtype_t compute;            /* the dtype the row's formula computes in */
} xr_ew_step_t;

typedef struct xr_ew_problem {
  size_t step_count;             /* several for aten::cat (one copy per input) */
  xr_ew_step_t steps[];
} xr_ew_problem_t;

/* Whether an op reads b (a tensor or the scalar). */
bool xr_ew_op_binary(xr_ew_op_t op);
static inline bool xr_ew_is_table_op(xr_ew_op_t op) { return op >= XR_EW_PW_FIRST; }
/* Whether a step's results are exact when computed in float from its operands loaded as float
 * (what the cpu fast path and the OpenCL and GPU kernels do): float results but f64, and for
 * table ops a float compute dtype (integer comparisons and arithmetic are the reference's). */
bool xr_ew_float_pipeline(const xr_ew_step_t *step);
/* Whether a step computes exactly in 64-bit integers from its operands loaded as such (the
 * OpenCL and GPU kernels' integer path): integer or bool results and compute, every tensor
 * operand an integer or a bool; copies, add, sub, mul, rounded division and the table. */
bool xr_ew_int_pipeline(const xr_ew_step_t *step);
/* A Python number argument (bool, int or float): whether `v` is one, its value, and its dtype in
 * type promotion (a float is the default dtype, float32; an int int64). */
bool xr_ew_is_number(const xr_value_t *v);
double xr_ew_number(const xr_value_t *v);
xr_dtype_t xr_ew_number_dtype(const xr_value_t *v);
/* A Scalar as the integer pipeline reads it: truncated, NaN 0, saturated at the int64 limits. */
int64_t xr_ew_int_value(double v);
/* Whether the output dtype is computed through float (every float dtype but f64). */
bool xr_ew_float_compute(xr_dtype_t dtype);

/* The same iteration with dimensions merged where every operand allows it (row-major walks of
 * both are identical), size-1 dimensions dropped; rank 0 stays rank 0 (one element). */
void xr_ew_coalesce(const xr_ew_step_t *step, xr_ew_step_t *out_flat);

/* The creation and data-movement ops (kernels/movement.c): arange, full, zeros, flip, roll,
 * repeat, constant_pad_nd, stack, ... */
#define XR_EW_MOVEMENT_OPS                                                                     \
  "aten::arange", "aten::linspace", "aten::full", "aten::zeros", "aten::ones", "aten::new_full", \
      "aten::new_zeros", "aten::new_ones", "aten::full_like", "aten::zeros_like",                \
      "aten::ones_like", "aten::clone", "aten::contiguous", "aten::flip", "aten::roll",          \
      "aten::repeat", "aten::constant_pad_nd", "aten::stack", "aten::narrow_copy",               \
      "aten::repeat_interleave", "aten::tril", "aten::tril_", "aten::triu", "aten::triu_",      \
      "aten::split_copy", "aten::split_with_sizes_copy", "aten::unbind_copy"
bool xr_ew_is_movement_op(const char *name);
xr_status_t xr_ew_analyze_movement(xr_op_plan_t *plan, xr_ew_problem_t **out_problem);

/* The pointwise table's ops (kernels/pointwise.c): `aten::NAME`, `aten::NAME_` (in place) and
 * out= forms of each row. */
bool xr_ew_is_pointwise_op(const char *name);
xr_status_t xr_ew_analyze_pointwise(xr_op_plan_t *plan, xr_ew_step_t *step);
/* The table's formulas in the reference: in double, and in int64 for integer compute. */
double xr_ew_pointwise_float(const xr_ew_step_t *step, double a, double b, double c);
int64_t xr_ew_pointwise_int(const xr_ew_step_t *step, int64_t a, int64_t b, int64_t c);
/* Per-element cost of a table op. */
double xr_ew_pointwise_flops(xr_ew_op_t op);

/* Analysis of the indexing ops (kernels/indexing.c): aten::cat, index_select, embedding. */
bool xr_ew_is_indexing_op(const char *name);
xr_status_t xr_ew_analyze_indexing(xr_op_plan_t *plan, xr_ew_problem_t **out_problem);
/* The indexing ops' initializers (their index tensors stay inside the table they index). */
extern const struct xr_op_initializer xr_indexing_initializers[];
/* Analysis helpers shared by the family's files (kernels/elementwise.c). */
xr_dtype_t xr_ew_promote(xr_dtype_t a, xr_dtype_t b);          /* torch.promote_types */
xr_dtype_t xr_ew_combine(xr_dtype_t higher, xr_dtype_t lower); /* across priority classes */
xr_status_t xr_ew_broadcast_shape(const xr_op_plan_t *plan, const char *name,
                                  const xr_tensor_spec_t *t, int *rank, int64_t *shape);
void xr_ew_set_operand(const xr_op_plan_t *plan, int index, int rank, const int64_t *shape,
                       xr_ew_operand_t *operand);
/* The step's output: a new contiguous return tensor (index < 0) or the written input `index`. */
void xr_ew_set_output(xr_op_plan_t *plan, int index, xr_dtype_t dtype, xr_ew_step_t *step);
xr_status_t xr_ew_check_written(const xr_op_plan_t *plan, const char *name, int index,
                                const xr_ew_step_t *step);

/* A `dtype` argument (a ScalarType code, a dtype name, or a tensor whose dtype it is); absent or
 * None keeps `fallback`. */
xr_status_t xr_ew_read_dtype(const xr_op_plan_t *plan, const xr_value_t *v, xr_dtype_t fallback,
                             xr_dtype_t *out);

/* Allocates a problem of `steps` zeroed steps (operand c absent). */
xr_ew_problem_t *xr_ew_problem_alloc(size_t steps);
/* Whether a TRIL or TRIU step keeps element i (row-major over the step's shape, which coalescing
 * preserves); the OpenCL and CUDA kernels say the same in their languages. */
static inline bool xr_ew_tri_keeps(const xr_ew_step_t *s, int64_t i) {
  int64_t d = i % s->tri_cols - i / s->tri_cols % s->tri_rows;
  return s->op == XR_EW_TRIL ? d <= s->diagonal : d >= s->diagonal;
}
/* A sequence step's value at element i (ARANGE, LINSPACE), in double. */
double xr_ew_sequence_value(const xr_ew_step_t *step, int64_t i);
/* Bytes (at least) and floating-point operations one execution of the step moves and does. */
void xr_ew_step_cost(const xr_ew_step_t *step, double *bytes, double *flops);

/* The fast implementations (kernels/cpu/elementwise_cpu.c; OpenCL and CUDA/HIP:
 * kernels/elementwise_device.c). */
extern const xr_kernel_impl_t xr_cpu_elementwise;
extern const xr_kernel_impl_t xr_opencl_elementwise;
extern const xr_kernel_impl_t xr_gpu_elementwise;

#endif
