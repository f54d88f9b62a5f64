/* The scatter family's device parameter block (kernels/scatter.h's problem, reordered free dims
 * first): a by-value argument of the CUDA/HIP kernels (kernels/gpu/scatter.cu) and a constant
 * buffer of the OpenCL ones (kernels/opencl/scatter.cl), both including this header. Shared by
 * host C, OpenCL C and CUDA/HIP C++: `long` (view5_args.h), float and int fields, longs first,
 * so that all three lay it out alike. Offsets and strides count elements of each operand's own
 * dtype; dtypes are xr_dtype_t codes. Filled by xr_sc_device_params (kernels/scatter.c). */
#ifndef XR_KERNELS_SCATTER_ARGS_H
#define XR_KERNELS_SCATTER_ARGS_H

#define XR_SC_DEV_DIMS 8
#define XR_SC_DEV_SLOTS 4
#define XR_SC_DEV_OPS 6 /* dst, src, slots 0..3 */
#define XR_SC_DEV_THREADS 128

/* Which pass a launch makes (its kernel's name says the same). */
#define XR_SC_DEV_GATHER 0
#define XR_SC_DEV_SCATTER 1
#define XR_SC_DEV_NONZERO 2

/* xr_sc_reduce_t and xr_sc_source_t (the host asserts they agree) */
#define XR_SC_DEV_ASSIGN 0
#define XR_SC_DEV_ADD 1
#define XR_SC_DEV_MUL 2
#define XR_SC_DEV_MEAN 3
#define XR_SC_DEV_MAX 4
#define XR_SC_DEV_MIN 5
#define XR_SC_DEV_INDEX 0
#define XR_SC_DEV_POSITIONS 1
#define XR_SC_DEV_IOTA 2

typedef struct xr_sc_dev_params {
  long shape[XR_SC_DEV_DIMS];
  long strides[XR_SC_DEV_OPS][XR_SC_DEV_DIMS];
  long group_shape[XR_SC_DEV_SLOTS][XR_SC_DEV_DIMS];
  long group_strides[XR_SC_DEV_SLOTS][XR_SC_DEV_DIMS];
  long slot_numel[XR_SC_DEV_SLOTS];
  long offset[XR_SC_DEV_OPS]; /* views' offsets: dst, src, index tensors */
  long mask_shape[XR_SC_DEV_DIMS], mask_strides[XR_SC_DEV_DIMS];
  long numel;         /* points of the iteration */
  long nf, ns;        /* SCATTER: free and serial positions */
  long chunks, range; /* SCATTER: chunks of the destination's indexed range */
  long mask_numel, mask_offset, mask_chunk, mask_chunks;
  long ivalue, ialpha; /* integer Scalar source and alpha */
  long pattern;        /* the Scalar source's bits in dst's dtype */
  long fill;           /* NONZERO: past the count */
  float value, alpha;       /* float Scalar source and alpha */
  int rank, free_rank, count_dim, slot_count;
  int slot_source[XR_SC_DEV_SLOTS], slot_dtype[XR_SC_DEV_SLOTS];
  int slot_on_src[XR_SC_DEV_SLOTS], slot_group_rank[XR_SC_DEV_SLOTS];
  int dtype, elem_size, reduce, include_self;
  int src_scalar, scratch, floating, mask_dtype;
  int mask_rank, kind;
} xr_sc_dev_params_t;

#endif
