/* Helpers for writing an op family (kernels/<family>.c): reading arguments by schema name or
 * position with errors that name them, and walking strided tensors on the host.
 *
 * A family's files (kernels/family_list.h lists the families):
 *   <family>.h              its problem: what planning makes of an op, read by every kernel
 *   <family>.c              planning (arguments by schema), initializers, the plain-C
 *                           reference (or <family>_ref.c beside it) and the list of impls
 *   cpu/<family>_cpu.c      the fast CPU kernels (our own; oneDNN's in cpu/<family>_onednn.c)
 *   <family>_args.h         the device argument block, one header for host C, OpenCL C and
 *                           CUDA/HIP C++ (`long` fields: view5_args.h); nothing mirrored by hand
 *   <family>_device.c       the OpenCL and CUDA/HIP hosts together: a backend table (source,
 *                           builder, threads) and the impls opencl.<family> and gpu.<family>
 *   opencl/<family>.cl, gpu/<family>.cu   the kernels, with the same names and arguments
 * Every family with device kernels is in this shape: attention (paged attention, the KV-cache
 * writer and unified attention ride on it), conv, elementwise (argmax rides on it), gemm (its
 * vendor libraries beside it: cpu/gemm_onednn.c, opencl/gemm_clblast.c, gpu/blaslt_gemm.c), moe,
 * norm (softmax and rotary ride on it), quant, reduce, loss, routing, scatter, pool and
 * channel_norm (one vision_device.c). XR_DEVICE_IMPL below declares most impls; gemm_device.c hosts its two
 * backends side by side over the one block (gemm.cl reads a per-batch offset table CLBlast
 * shares; gemm.cu has typed, M == 1 and _scaled_mm kernels).
 * A new op of a family touches <family>.c (planning and the reference), the kernels' switch in
 * the .cl and .cu when devices compute it, and its cases in tests/kernels/<family>_cases.h,
 * whose <FAMILY>_MATRIX list runs them on every driver (tests/kernels/matrix.bzl). */
#ifndef XR_KERNELS_FAMILY_H
#define XR_KERNELS_FAMILY_H

#include "kernels/dtype.h"
#include "kernels/kernels.h"

/* The impl `symbol` ("opencl.conv" on "opencl") of a family's device host (<family>_device.c),
 * whose functions take its backend table first: supports_fn(&backend, plan, device) and
 * prepare_fn(&backend, plan, device, tensors, out_state). */
#define XR_DEVICE_IMPL(symbol, impl_name, driver_name, backend, supports_fn, prepare_fn,         \
                       enqueue_fn, release_fn)                                                 \
  static xr_status_t symbol##_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) { \
    return supports_fn(&backend, plan, device);                                             \
  }                                                                                         \
  static xr_status_t symbol##_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,    \
                                      const xr_tensor_t *tensors, void **out_state) {       \
    return prepare_fn(&backend, plan, device, tensors, out_state);                          \
  }                                                                                         \
  const xr_kernel_impl_t symbol = {                                                         \
      .name = impl_name,                                                                    \
      .driver = driver_name,                                                                \
      .supports = symbol##_supports,                                                        \
      .prepare = symbol##_prepare,                                                          \
      .enqueue = enqueue_fn,                                                                \
      .release = release_fn,                                                                \
  };

/* Every family of kernels/family_list.h. */
#define XR_FAMILY(name) extern const xr_op_family_t xr_family_##name;
#include "kernels/family_list.h"
#undef XR_FAMILY

/* The argument at schema `name`, else the positional argument `position` (-1: name only), else
 * NULL. A null value (None) is returned as is. */
const xr_value_t *xr_op_arg(const xr_op_t *op, int position, const char *name);

/* Typed readers. `required` arguments that are absent or None are INVALID_ARGUMENT:
 * "aten::addmm: argument 'mat2' (position 2) is missing". Optional ones keep *out unchanged. */
xr_status_t xr_arg_tensor(const xr_op_plan_t *plan, int position, const char *name, bool required,
                          int *out_index); /* binding index, or -1 when absent */
xr_status_t xr_arg_int(const xr_op_t *op, int position, const char *name, bool required,
                       int64_t *out);
xr_status_t xr_arg_double(const xr_op_t *op, int position, const char *name, bool required,
                          double *out); /* accepts ints and floats (Scalar) */
xr_status_t xr_arg_bool(const xr_op_t *op, int position, const char *name, bool required,
                        bool *out);
xr_status_t xr_arg_string(const xr_op_t *op, int position, const char *name, bool required,
                          const char **out);
/* A Tensor[] argument's list. UNIMPLEMENTED when the trace recorded it as null (TraceLens IR
 * does when it cannot record the tensors): "aten::cat: argument 'tensors' (Tensor[]) was not
 * recorded (null): its shapes are unknown"; INVALID_ARGUMENT when absent or not a list. */
xr_status_t xr_arg_tensor_list(const xr_op_t *op, int position, const char *name,
                               const xr_value_t **out_list);
/* An int list (int[], SymInt[]); a single int counts as a one-element list. */
xr_status_t xr_arg_int_list(const xr_op_t *op, int position, const char *name, bool required,
                            int64_t *out, int capacity, int *out_count);

/* Marks input `index` (binding order; -1 ignored) as one the op writes, for ops whose traced
 * argument types lack the "!" of "Tensor(a!)" (custom ops record only dtypes): the engine
 * poisons and checks the inputs marked so. */
static inline void xr_plan_mark_written(xr_op_plan_t *plan, int index) {
  if (index >= 0 && (size_t)index < plan->input_count) plan->input_written[index] = true;
}

/* The binding index of input spec `t` (by identity), or -1. */
int xr_plan_input_index(const xr_op_plan_t *plan, const xr_tensor_spec_t *t);
/* A dim argument in [-rank, rank) (a 0-d tensor takes 0 and -1) made non-negative into *out;
 * INVALID_ARGUMENT "dim: 5 is out of range for a 2-D tensor" otherwise. */
xr_status_t xr_plan_wrap_dim(const xr_op_plan_t *plan, int64_t dim, int rank, int *out);

/* Formats the op name into an error: returns INVALID_ARGUMENT. */
xr_status_t xr_plan_error(const xr_op_plan_t *plan, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The dtypes the fast kernels compute in fp32 (f64 stays on the reference). */
static inline bool xr_fast_float_dtype(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16;
}

/* A tensor seen as five dims n, c, d, h, w (the vision families' operands: a missing dim has
 * size 1 and stride 0). Element (i0..i4) is at storage offset + sum(i_k * strides[k]). */
typedef struct xr_view5 {
  int index; /* binding index; -1 when absent */
  xr_dtype_t dtype;
  int64_t shape[5];
  int64_t strides[5];
} xr_view5_t;

/* For the descriptors of vendor libraries (oneDNN, cuDNN), which read a zero stride as an
 * unsupported layout: each size-1 dim of stride 0 or less (a broadcast batch, an unbatched
 * input, the leading spatial dims of a lower-rank view) gets the extent of the dims inside it.
 * PyTorch's own strides of size-1 dims are kept: they are the ones its memory format gives (a
 * channels-last [n, c, 1, 1] is [c, 1, c, c]). */
static inline void xr_unit_dim_strides(int nd, const int64_t *dims, int64_t *strides) {
  for (int i = nd - 1; i >= 0; i--) {
    if (dims[i] != 1 || strides[i] > 0) continue;
    int64_t extent = 1;
    for (int j = i + 1; j < nd; j++)
      if (strides[j] * dims[j] > extent) extent = strides[j] * dims[j];
    strides[i] = extent;
  }
}

/* Fills a contiguous return descriptor. */
void xr_desc_set(xr_tensor_desc_t *d, xr_dtype_t dtype, int32_t rank, const int64_t *shape);
int64_t xr_desc_numel(const xr_tensor_desc_t *d);
/* Row-major strides of a contiguous shape. */
void xr_contiguous_strides(int rank, const int64_t *shape, int64_t *out_strides);
/* Whether a 4-D or 5-D tensor is laid out channels-last (its dims of more than one element
 * dense in the order n, spatial..., c) and not also contiguous: PyTorch's suggest_memory_format,
 * which picks the memory format of convolution, pooling and normalisation results. */
bool xr_spec_channels_last(const xr_tensor_spec_t *t);
/* xr_desc_set, then strides into out_strides: contiguous, or, when `channels_last` (4-D and 5-D
 * only), channels-last, which the descriptor then carries as dense strides. */
void xr_desc_set_format(xr_tensor_desc_t *d, xr_dtype_t dtype, int32_t rank, const int64_t *shape,
                        bool channels_last, int64_t *out_strides);
int64_t xr_spec_numel(const xr_tensor_spec_t *t); /* validated specs only: no overflow */
/* The elements of memory a tensor's view reaches: an expanded (stride-0) dim counts once, so a
 * broadcast operand is read at its own size. What the families' byte counts read. */
double xr_spec_distinct_numel(const xr_tensor_spec_t *t);

/* A copy of plan->op, allocated in `arena`, whose input i (binding order) holds dim0[i] entries
 * along dim 0 (< 0: as it is), with the same strides and storage offset (xr_kernel_compact,
 * xr_kernel_op_rows). */
xr_status_t xr_plan_op_resized(const xr_op_plan_t *plan, const int64_t *dim0, xr_arena_t *arena,
                               xr_op_t **out_op);
/* Appends an int hint to `op` (its hints array copied into `arena`). */
xr_status_t xr_op_hint_int(xr_arena_t *arena, xr_op_t *op, const char *name, int64_t value);

/* Element `linear` (row-major over its shape, through its strides and storage offset) of an
 * integer or bool tensor whose contents the bundle embeds (spec->data), as an int64: what an op
 * whose result's size depends on values (a mask's count, a Tensor of repeats) plans from. false
 * when the spec embeds no contents, the element lies outside them, or the dtype is a float. */
bool xr_spec_embedded_int(const xr_tensor_spec_t *t, int64_t linear, int64_t *out);

/* A tensor's host address on host-addressable devices (cpu): the storage start; element
 * (i0, i1, ...) is at index offset + sum(i_k * strides[k]). */
xr_status_t xr_tensor_host(const xr_tensor_t *t, void **out_base);

/* Row-major index walk over a shape: returns the storage index (offset included) of flat
 * element `linear` of tensor t. */
static inline int64_t xr_tensor_index(const xr_tensor_t *t, int64_t linear) {
  int64_t index = t->offset;
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    int64_t size = t->shape[d];
    index += (linear % size) * t->strides[d];
    linear /= size;
  }
  return index;
}

/* Creates a state-less instance helper for families whose host kernels need only plan +
 * tensors: copies them into one allocation. */
typedef struct xr_host_call {
  const xr_op_plan_t *plan;
  size_t tensor_count;
  xr_tensor_t tensors[];  /* inputs then returns */
} xr_host_call_t;

xr_status_t xr_host_call_create(const xr_op_plan_t *plan, const xr_tensor_t *tensors,
                                xr_host_call_t **out_call);

#endif
