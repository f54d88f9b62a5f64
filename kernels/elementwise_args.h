/* The elementwise family's step (kernels/elementwise.h) and aten::argmax's problem
 * (kernels/argmax.h) as the device kernels receive them: by-value blocks of
 * kernels/opencl/elementwise.cl and kernels/gpu/elementwise.cu (the same kernels, xr_elementwise
 * and xr_argmax, with the same arguments), filled by kernels/elementwise_device.c. Shared by host
 * C, OpenCL C and CUDA/HIP C++: `long` fields first (view5_args.h), then floats, then ints.
 * Offsets and strides count elements of each operand's own dtype; dtypes are xr_dtype_t codes.
 * OpenCL builds a program per op and dtypes (-DOP=.. -DPATH=..), so its kernels read the op,
 * dtype and path fields only where the program is shared (the pointwise table's `op`); CUDA and
 * HIP have one program that reads them all. */
#ifndef XR_KERNELS_ELEMENTWISE_ARGS_H
#define XR_KERNELS_ELEMENTWISE_ARGS_H

#define XR_EW_DEV_DIMS 8     /* after merging dims (xr_ew_coalesce) */
#define XR_EW_GPU_THREADS 256 /* per block of the CUDA/HIP grid-stride loop */

/* xr_ew_op_t's values (kernels/elementwise.h; elementwise_device.c asserts they agree). */
#define XR_EW_DEV_ADD 0
#define XR_EW_DEV_SUB 1
#define XR_EW_DEV_MUL 2
#define XR_EW_DEV_DIV 3
#define XR_EW_DEV_DIV_TRUNC 4
#define XR_EW_DEV_DIV_FLOOR 5
#define XR_EW_DEV_COPY 6
#define XR_EW_DEV_FILL 7
#define XR_EW_DEV_GELU 8
#define XR_EW_DEV_GELU_TANH 9
#define XR_EW_DEV_SILU 10
#define XR_EW_DEV_SILU_AND_MUL 11
#define XR_EW_DEV_GELU_AND_MUL 12
#define XR_EW_DEV_GELU_TANH_AND_MUL 13
#define XR_EW_DEV_GATHER 14
#define XR_EW_DEV_ARANGE 15
#define XR_EW_DEV_LINSPACE 16
#define XR_EW_DEV_TRIL 17
#define XR_EW_DEV_TRIU 18
#define XR_EW_DEV_TABLE_FIRST 19 /* the pointwise table's rows follow (kernels/pointwise_ops.h) */

/* How a step moves its elements. */
#define XR_EW_PATH_FLOAT 0 /* load as float, compute, round once to a float output dtype */
#define XR_EW_PATH_RAW 1   /* copy or gather of elem_size-byte elements, same dtype */
#define XR_EW_PATH_FILL 2  /* store `pattern`, the value's bits in the output dtype */
#define XR_EW_PATH_INT 3   /* integer operands as 64-bit integers, wrapping; integer result */

/* What an operand slot holds. */
#define XR_EW_KIND_NONE 0
#define XR_EW_KIND_TENSOR 1
#define XR_EW_KIND_SCALAR 2

typedef struct xr_ew_args {
  long shape[XR_EW_DEV_DIMS];
  long strides[4][XR_EW_DEV_DIMS]; /* out, a, b, c; 0 where an operand broadcasts */
  long offset[4];
  long numel;
  long gather_stride, gather_size; /* GATHER: a's stride and size along the index */
  long pattern;                    /* FILL: the value's bits in the output dtype */
  long ivalue[3];                  /* INT: the a, b and c Scalars */
  long iparam[3];                  /* INT: the row's arguments as integers */
  long ialpha;
  long tri[3];                     /* TRIL, TRIU: matrix rows, columns, the diagonal */
  float alpha, scalar;             /* scalar: b's value when b is a Scalar */
  float a_value, c_value;          /* a's and c's values when they are Scalars */
  float param[3];                  /* the table row's Scalar arguments */
  int rank;
  int op;                          /* xr_ew_op_t (OpenCL: the table row of a shared program) */
  int compute_dtype;               /* table ops: the dtype the formula computes in */
  int out_dtype, a_dtype, b_dtype, c_dtype;
  int a_kind, b_kind, c_kind;      /* XR_EW_KIND_* */
  int path;                        /* XR_EW_PATH_* */
  int elem_size;                   /* RAW and FILL: 1, 2, 4 or 8 bytes */
} xr_ew_args_t;

#define XR_ARGMAX_DEV_DIMS 8
#define XR_ARGMAX_GPU_THREADS 256 /* CUDA/HIP: a block per output; OpenCL: a work-item each */

/* Positions counted row-major over the reduced dims. */
typedef struct xr_argmax_args {
  long out_shape[XR_ARGMAX_DEV_DIMS], in_strides[XR_ARGMAX_DEV_DIMS];
  long red_shape[XR_ARGMAX_DEV_DIMS], red_strides[XR_ARGMAX_DEV_DIMS];
  long offset, out_numel, red_numel;
  int out_rank, red_rank;
  int dtype;
  int reserved;
} xr_argmax_args_t;

#endif
