/* The elementwise family's step (kernels/elementwise.h) and aten::argmax's problem
 * (kernels/argmax.h) as the GPU kernels (kernels/gpu/elementwise.cu) receive them: by-value
 * blocks shared by host C (kernels/gpu/elementwise_gpu.c) and device C++, holding only long
 * long, float and int. Offsets and strides count elements of each operand's own dtype; dtypes
 * are XR_GPU_* codes (kernels/gpu/dtype_codes.h). */
#ifndef XR_KERNELS_GPU_ELEMENTWISE_PARAMS_H
#define XR_KERNELS_GPU_ELEMENTWISE_PARAMS_H

#define XR_EW_GPU_MAX_DIMS 8 /* after merging dims (xr_ew_coalesce) */
#define XR_EW_GPU_THREADS 256

/* xr_ew_op_t's values (kernels/elementwise.h; the host asserts they agree). */
#define XR_EW_GPU_ADD 0
#define XR_EW_GPU_SUB 1
#define XR_EW_GPU_MUL 2
#define XR_EW_GPU_DIV 3
#define XR_EW_GPU_DIV_TRUNC 4
#define XR_EW_GPU_DIV_FLOOR 5
#define XR_EW_GPU_COPY 6
#define XR_EW_GPU_FILL_OP 7
#define XR_EW_GPU_GELU 8
#define XR_EW_GPU_GELU_TANH 9
#define XR_EW_GPU_SILU 10
#define XR_EW_GPU_SILU_AND_MUL 11
#define XR_EW_GPU_GELU_AND_MUL 12
#define XR_EW_GPU_GELU_TANH_AND_MUL 13
#define XR_EW_GPU_GATHER 14
#define XR_EW_GPU_ARANGE 15
#define XR_EW_GPU_LINSPACE 16
#define XR_EW_GPU_TRIL 17
#define XR_EW_GPU_TRIU 18
#define XR_EW_GPU_TABLE_FIRST 19 /* the pointwise table's rows follow (kernels/pointwise_ops.h) */

/* How a step moves its elements. */
#define XR_EW_GPU_FLOAT 0 /* load as float, compute, round once to a float output dtype */
#define XR_EW_GPU_RAW 1   /* copy or gather of elem_size-byte elements, same dtype */
#define XR_EW_GPU_FILL 2  /* store `pattern`, the value's bits in the output dtype */
#define XR_EW_GPU_INT 3   /* integer operands as 64-bit integers, wrapping; integer result */

typedef struct xr_ew_gpu_params {
  long long shape[XR_EW_GPU_MAX_DIMS];
  long long strides[4][XR_EW_GPU_MAX_DIMS]; /* out, a, b, c; 0 where an operand broadcasts */
  long long offset[4];
  long long numel;
  long long gather_stride, gather_size;     /* GATHER: a's stride and size along the index */
  long long pattern;
  long long ivalue[3];                      /* INT: the a, b and c Scalars */
  long long iparam[3];                      /* INT: the row's arguments as integers */
  long long ialpha;
  long long tri[3];                         /* TRIL, TRIU: matrix rows, columns, the diagonal */
  float alpha, scalar;                      /* scalar: b's value when b_kind is 2 */
  float a_value, c_value;                   /* a's and c's values when their kind is 2 */
  float param[3];                           /* the table row's Scalar arguments */
  int rank;
  int op;                                   /* xr_ew_op_t */
  int compute_dtype;                        /* table ops: the dtype the formula computes in */
  int out_dtype, a_dtype, b_dtype, c_dtype;
  int a_kind, b_kind, c_kind;               /* 0 none, 1 tensor, 2 a scalar */
  int path;                                 /* XR_EW_GPU_FLOAT, _RAW, _FILL, _INT */
  int elem_size;                            /* RAW and FILL: 1, 2, 4 or 8 bytes */
} xr_ew_gpu_params_t;

#define XR_ARGMAX_GPU_MAX_DIMS 8
#define XR_ARGMAX_GPU_THREADS 256

/* One block per output element; positions counted row-major over the reduced dims. */
typedef struct xr_argmax_gpu_params {
  long long out_shape[XR_ARGMAX_GPU_MAX_DIMS], in_strides[XR_ARGMAX_GPU_MAX_DIMS];
  long long red_shape[XR_ARGMAX_GPU_MAX_DIMS], red_strides[XR_ARGMAX_GPU_MAX_DIMS];
  long long offset, out_numel, red_numel;
  int out_rank, red_rank;
  int dtype;
  int reserved;
} xr_argmax_gpu_params_t;

#endif
