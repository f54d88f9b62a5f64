/* The scatter family's parsed problem (kernels/scatter.c), shared by its implementations: the
 * data-dependent gathers and scatters (gather, take, scatter*, index_add/copy/fill, index.Tensor,
 * index_put, masked_scatter, masked_select, nonzero).
 *
 * Every op is one walk over an iteration shape. At each point x an element moves between a
 * source (a tensor read through strides over x, or a Scalar) and a destination (written through
 * strides over x), and index "slots" add data-dependent offsets to one of the two:
 *   - GATHER: dst is the op's result, addressed by x alone; slots address src (gather, take,
 *     index, masked_select). No two points write the same element: every point is parallel.
 *   - SCATTER: slots address dst (scatter*, index_add/copy/fill, index_put, masked_scatter).
 *     Points that differ only in the "serial" dims of x (the dims an index replaces) may hit
 *     the same element; points that differ in a free dim never do. Writes land in row-major
 *     order of x, so with duplicate indices the last write wins and reductions run in that
 *     order (the fast implementations keep it: one worker per free position loops over the
 *     serial dims in order; no atomics, deterministic).
 *   - NONZERO: the result is the row-major coordinates of the input's non-zero elements.
 * A slot's value comes from an integer index tensor, from the positions of a mask's set
 * elements (computed first, in row-major order: "compaction"), or from x itself (masked_scatter
 * reads its source in order). The value wraps once when negative (v + n, as torch) and is then
 * clamped into [0, n) — torch raises on an index out of range; a replay clamps so that random
 * contents read valid memory, every implementation alike — and is unravelled over the slot's
 * group of dims (one dim for most ops; every dim of self for take; the mask's dims).
 *
 * Offsets are in elements relative to each tensor's own view offset. */
#ifndef XR_KERNELS_SCATTER_H
#define XR_KERNELS_SCATTER_H

#include "kernels/scatter_args.h"
#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XR_SC_MAX_SLOTS 16

typedef enum xr_sc_kind { XR_SC_GATHER = 0, XR_SC_SCATTER, XR_SC_NONZERO } xr_sc_kind_t;

typedef enum xr_sc_reduce {
  XR_SC_ASSIGN = 0, /* dst = src */
  XR_SC_ADD,        /* dst + alpha * src */
  XR_SC_MUL,        /* dst * src */
  XR_SC_MEAN,       /* (dst? + sum src) / count; integers floor-divide */
  XR_SC_MAX,        /* NaN propagates */
  XR_SC_MIN,
} xr_sc_reduce_t;

typedef enum xr_sc_source {
  XR_SC_INDEX = 0, /* an int32 / int64 index tensor */
  XR_SC_POSITIONS, /* the compaction's positions (int64, row-major over the mask's shape) */
  XR_SC_IOTA,      /* sum(x * strides) itself (masked_scatter reads its source in order) */
} xr_sc_source_t;

typedef struct xr_sc_slot {
  xr_sc_source_t source;
  int tensor;                   /* INDEX: binding index */
  xr_dtype_t dtype;             /* INDEX: int32 or int64 */
  bool on_src;                  /* adds to the source's offset (else the destination's) */
  int64_t strides[XR_MAX_RANK]; /* where the value is read, over the iteration dims */
  int group_rank;               /* the addressed tensor's dims the value is unravelled over */
  int64_t group_shape[XR_MAX_RANK], group_strides[XR_MAX_RANK];
  int64_t numel; /* product of group_shape: the clamp range */
} xr_sc_slot_t;

typedef struct xr_sc_operand {
  int tensor; /* binding index; -1 for a Scalar source */
  xr_dtype_t dtype;
  int64_t strides[XR_MAX_RANK]; /* over the iteration dims; 0 where it broadcasts */
} xr_sc_operand_t;

typedef struct xr_scatter_problem {
  xr_sc_kind_t kind;
  xr_sc_reduce_t reduce;
  bool include_self; /* reductions: dst's own value takes part */
  double alpha;      /* ADD (index_add's alpha), as the reference uses it */
  int rank;
  int64_t shape[XR_MAX_RANK];
  bool serial[XR_MAX_RANK]; /* SCATTER: dims whose points may collide */
  int64_t numel;
  xr_sc_operand_t dst, src;
  bool src_scalar;
  double value;     /* the Scalar source */
  int64_t ivalue;   /* ... as an integer (integer dtypes) */
  uint64_t pattern; /* ... as its bits in dst's dtype */
  int slot_count;
  xr_sc_slot_t slots[XR_SC_MAX_SLOTS];
  /* Out of place: self copied whole into dst first (copy_src >= 0). */
  int copy_src;
  int copy_rank;
  int64_t copy_shape[XR_MAX_RANK], copy_src_strides[XR_MAX_RANK], copy_dst_strides[XR_MAX_RANK];
  int64_t copy_numel;
  /* Compaction (mask >= 0): the row-major positions of the mask's non-zero elements over
   * mask_shape (the mask broadcast through mask_strides). */
  int mask;
  xr_dtype_t mask_dtype;
  int mask_rank;
  int64_t mask_shape[XR_MAX_RANK], mask_strides[XR_MAX_RANK];
  int64_t mask_numel;
  /* The iteration dim that runs over the positions (-1: none): points at or past the run
   * time count are inactive (SCATTER) or write zero bits (GATHER) and `fill` (NONZERO). */
  int count_dim;
  int64_t fill;
  /* What the initializer gives the mask (without real contents): this many set elements over
   * mask_shape (the recorded result size), or -1 to keep the default random bools. */
  int64_t mask_want;
  int64_t dst_extent; /* dst's storage in elements (scratch for reductions) */
} xr_scatter_problem_t;

/* Wraps a negative index once and clamps it into [0, n) (n > 0). */
static inline int64_t xr_sc_clamp(int64_t v, int64_t n) {
  if (v < 0) v += n;
  return v < 0 ? 0 : v >= n ? n - 1 : v;
}

/* The offset of a clamped slot value in the tensor it addresses. */
static inline int64_t xr_sc_unravel(const xr_sc_slot_t *s, int64_t v) {
  int64_t off = 0;
  for (int d = s->group_rank - 1; d >= 0; d--) {
    off += (v % s->group_shape[d]) * s->group_strides[d];
    v /= s->group_shape[d];
  }
  return off;
}

/* Whether reductions of this problem need a per-element accumulator and count on the fast
 * paths: narrow floats (accumulated in float, rounded once) for sums and products, means, and
 * reductions that leave self out (the first contribution replaces it). */
bool xr_sc_needs_scratch(const xr_scatter_problem_t *p);

/* The iteration's dims reordered: free dims first, then serial dims, each in order; size-1
 * dims dropped (but the count dim). perm[i] is the original dim of reordered dim i. */
void xr_sc_reorder(const xr_scatter_problem_t *p, int *perm, int *out_rank, int *out_free_rank);

/* Integer element `i` of an integer or bool array, exactly. */
int64_t xr_sc_load_int(const void *base, xr_dtype_t dtype, int64_t i);
/* Stores the low bytes of v (bool: v != 0). */
void xr_sc_store_int(void *base, xr_dtype_t dtype, int64_t i, int64_t v);
/* v wrapped to the width and signedness of an integer dtype. */
int64_t xr_sc_wrap_int(int64_t v, xr_dtype_t dtype);
/* Whether element i is non-zero (NaN is; -0.0 is not). */
bool xr_sc_element_nonzero(const void *base, xr_dtype_t dtype, int64_t i);

/* What the device kernels (opencl, gpu) take: at most XR_SC_DEV_DIMS dims of iteration, copy
 * and mask (size-1 dims dropped), XR_SC_DEV_SLOTS slots, reductions in float or int64 (not
 * f64). UNIMPLEMENTED with the reason otherwise; `who` names the kernels in it. */
/* A host tensor's first element (its storage offset applied); NULL, with *st set, when it is not
 * host-addressable. Does nothing when *st is already an error, so that calls chain. */
const char *xr_sc_host_at(const xr_tensor_t *t, xr_status_t *st);
xr_status_t xr_sc_device_supports(const xr_op_plan_t *plan, const char *who);
/* The device parameter block of the main pass, or (copy) of the out-of-place copy of self into
 * dst (a gather without slots). `tensors` give the views' offsets; SCATTER's chunks aim at
 * `target_items` work-items, at most 8 chunks. */
void xr_sc_device_params(const xr_scatter_problem_t *p, const xr_tensor_t *tensors, bool copy,
                         int64_t target_items, xr_sc_dev_params_t *out);


extern const xr_kernel_impl_t xr_cpu_scatter;    /* kernels/cpu/scatter_cpu.c */
extern const xr_kernel_impl_t xr_opencl_scatter, xr_gpu_scatter; /* kernels/scatter_device.c */

#ifdef __cplusplus
}
#endif
#endif
