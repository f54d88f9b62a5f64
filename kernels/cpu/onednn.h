/* oneDNN (libdnnl.so.2, the 2.x C API of dnnl.h) loaded at run time: libdnnl links libOpenCL,
 * so it is opened with dlopen, never linked. Every symbol the GEMM family uses is listed once
 * below, in the list style of base/dynload.h, and the convolution, pooling, resampling and
 * batch-norm primitives with them: those are OPTIONAL, so that a oneDNN without them still
 * serves the GEMMs.
 *
 * Environment: XR_ONEDNN_LIBRARY is tried before libdnnl.so.2 / libdnnl.so; "off" disables
 * oneDNN (the blocked kernel then runs everything, which is how its tests reach it). */
#ifndef XR_KERNELS_CPU_ONEDNN_H
#define XR_KERNELS_CPU_ONEDNN_H

#if defined(__has_include)
#if __has_include(<oneapi/dnnl/dnnl.h>)
#define XR_HAVE_DNNL_H 1
#endif
#endif

#ifdef XR_HAVE_DNNL_H
#include <oneapi/dnnl/dnnl.h>

#include "base/dynload.h"
#include "formats/model.h"
#include "hal/hal.h"
#include "kernels/family.h"

#define XR_DNNL_SYMBOLS(X)                                                                       \
  X(REQUIRED, dnnl_status_t, dnnl_engine_create, (dnnl_engine_t *, dnnl_engine_kind_t, size_t))  \
  X(REQUIRED, dnnl_status_t, dnnl_stream_create, (dnnl_stream_t *, dnnl_engine_t, unsigned))     \
  X(REQUIRED, dnnl_status_t, dnnl_stream_wait, (dnnl_stream_t))                                  \
  X(REQUIRED, dnnl_status_t, dnnl_stream_destroy, (dnnl_stream_t))                               \
  X(REQUIRED, dnnl_status_t, dnnl_memory_desc_init_by_strides,                                   \
    (dnnl_memory_desc_t *, int, const dnnl_dims_t, dnnl_data_type_t, const dnnl_dims_t))         \
  X(REQUIRED, dnnl_status_t, dnnl_matmul_desc_init,                                              \
    (dnnl_matmul_desc_t *, const dnnl_memory_desc_t *, const dnnl_memory_desc_t *,               \
     const dnnl_memory_desc_t *, const dnnl_memory_desc_t *))                                    \
  X(REQUIRED, dnnl_status_t, dnnl_primitive_attr_create, (dnnl_primitive_attr_t *))              \
  X(REQUIRED, dnnl_status_t, dnnl_primitive_attr_destroy, (dnnl_primitive_attr_t))               \
  X(REQUIRED, dnnl_status_t, dnnl_primitive_attr_set_output_scales,                              \
    (dnnl_primitive_attr_t, dnnl_dim_t, int, const float *))                                     \
  X(REQUIRED, dnnl_status_t, dnnl_primitive_attr_set_scratchpad_mode,                            \
    (dnnl_primitive_attr_t, dnnl_scratchpad_mode_t))                                             \
  X(REQUIRED, dnnl_status_t, dnnl_primitive_attr_set_post_ops,                                   \
    (dnnl_primitive_attr_t, const_dnnl_post_ops_t))                                              \
  X(REQUIRED, dnnl_status_t, dnnl_post_ops_create, (dnnl_post_ops_t *))                          \
  X(REQUIRED, dnnl_status_t, dnnl_post_ops_destroy, (dnnl_post_ops_t))                           \
  X(REQUIRED, dnnl_status_t, dnnl_post_ops_append_sum, (dnnl_post_ops_t, float))                 \
  X(REQUIRED, dnnl_status_t, dnnl_primitive_desc_create,                                         \
    (dnnl_primitive_desc_t *, const_dnnl_op_desc_t, const_dnnl_primitive_attr_t, dnnl_engine_t,  \
     const_dnnl_primitive_desc_t))                                                               \
  X(REQUIRED, dnnl_status_t, dnnl_primitive_desc_query,                                          \
    (const_dnnl_primitive_desc_t, dnnl_query_t, int, void *))                                    \
  X(REQUIRED, dnnl_status_t, dnnl_primitive_desc_destroy, (dnnl_primitive_desc_t))               \
  X(REQUIRED, dnnl_status_t, dnnl_primitive_create,                                              \
    (dnnl_primitive_t *, const_dnnl_primitive_desc_t))                                           \
  X(REQUIRED, dnnl_status_t, dnnl_primitive_execute,                                             \
    (const_dnnl_primitive_t, dnnl_stream_t, int, const dnnl_exec_arg_t *))                       \
  X(REQUIRED, dnnl_status_t, dnnl_primitive_destroy, (dnnl_primitive_t))                         \
  X(REQUIRED, dnnl_status_t, dnnl_memory_create,                                                 \
    (dnnl_memory_t *, const dnnl_memory_desc_t *, dnnl_engine_t, void *))                        \
  X(REQUIRED, dnnl_status_t, dnnl_memory_destroy, (dnnl_memory_t))                               \
  X(REQUIRED, dnnl_status_t, dnnl_memory_desc_init_by_tag,                                       \
    (dnnl_memory_desc_t *, int, const dnnl_dims_t, dnnl_data_type_t, dnnl_format_tag_t))         \
  X(REQUIRED, const dnnl_memory_desc_t *, dnnl_primitive_desc_query_md,                          \
    (const_dnnl_primitive_desc_t, dnnl_query_t, int))                                            \
  X(REQUIRED, size_t, dnnl_memory_desc_get_size, (const dnnl_memory_desc_t *))                   \
  X(REQUIRED, dnnl_status_t, dnnl_reorder_primitive_desc_create,                                 \
    (dnnl_primitive_desc_t *, const dnnl_memory_desc_t *, dnnl_engine_t,                         \
     const dnnl_memory_desc_t *, dnnl_engine_t, const_dnnl_primitive_attr_t))                    \
  X(OPTIONAL, dnnl_status_t, dnnl_dilated_convolution_forward_desc_init,                         \
    (dnnl_convolution_desc_t *, dnnl_prop_kind_t, dnnl_alg_kind_t, const dnnl_memory_desc_t *,   \
     const dnnl_memory_desc_t *, const dnnl_memory_desc_t *, const dnnl_memory_desc_t *,         \
     const dnnl_dims_t, const dnnl_dims_t, const dnnl_dims_t, const dnnl_dims_t))                \
  X(OPTIONAL, dnnl_status_t, dnnl_dilated_convolution_backward_weights_desc_init,                \
    (dnnl_convolution_desc_t *, dnnl_alg_kind_t, const dnnl_memory_desc_t *,                     \
     const dnnl_memory_desc_t *, const dnnl_memory_desc_t *, const dnnl_memory_desc_t *,         \
     const dnnl_dims_t, const dnnl_dims_t, const dnnl_dims_t, const dnnl_dims_t))                \
  X(OPTIONAL, dnnl_status_t, dnnl_dilated_deconvolution_forward_desc_init,                       \
    (dnnl_deconvolution_desc_t *, dnnl_prop_kind_t, dnnl_alg_kind_t, const dnnl_memory_desc_t *, \
     const dnnl_memory_desc_t *, const dnnl_memory_desc_t *, const dnnl_memory_desc_t *,         \
     const dnnl_dims_t, const dnnl_dims_t, const dnnl_dims_t, const dnnl_dims_t))                \
  X(OPTIONAL, dnnl_status_t, dnnl_pooling_v2_forward_desc_init,                                  \
    (dnnl_pooling_v2_desc_t *, dnnl_prop_kind_t, dnnl_alg_kind_t, const dnnl_memory_desc_t *,    \
     const dnnl_memory_desc_t *, const dnnl_dims_t, const dnnl_dims_t, const dnnl_dims_t,        \
     const dnnl_dims_t, const dnnl_dims_t))                                                      \
  X(OPTIONAL, dnnl_status_t, dnnl_pooling_v2_backward_desc_init,                                 \
    (dnnl_pooling_v2_desc_t *, dnnl_alg_kind_t, const dnnl_memory_desc_t *,                      \
     const dnnl_memory_desc_t *, const dnnl_dims_t, const dnnl_dims_t, const dnnl_dims_t,        \
     const dnnl_dims_t, const dnnl_dims_t))                                                      \
  X(OPTIONAL, dnnl_status_t, dnnl_batch_normalization_forward_desc_init,                         \
    (dnnl_batch_normalization_desc_t *, dnnl_prop_kind_t, const dnnl_memory_desc_t *, float,     \
     unsigned))                                                                                  \
  X(OPTIONAL, dnnl_status_t, dnnl_batch_normalization_backward_desc_init,                        \
    (dnnl_batch_normalization_desc_t *, dnnl_prop_kind_t, const dnnl_memory_desc_t *,            \
     const dnnl_memory_desc_t *, float, unsigned))                                               \
  X(OPTIONAL, dnnl_status_t, dnnl_resampling_forward_desc_init,                                  \
    (dnnl_resampling_desc_t *, dnnl_prop_kind_t, dnnl_alg_kind_t, const float *,                 \
     const dnnl_memory_desc_t *, const dnnl_memory_desc_t *))                                    \
  X(OPTIONAL, const char *, dnnl_status2str, (dnnl_status_t))                                    \
  X(OPTIONAL, const dnnl_version_t *, dnnl_version, (void))

typedef struct xr_dnnl {
  XR_DNNL_SYMBOLS(XR_DYNLOAD_FIELD)
  dnnl_engine_t engine; /* the process's cpu engine */
  char version[64];     /* "oneDNN 2.6.3" */
} xr_dnnl_t;

/* "oneDNN 2.6.3 brg:avx512_core_amx": the library and the implementation a primitive
 * descriptor picked (its impl_info_str), for reports. */
void xr_dnnl_impl_name(const xr_dnnl_t *d, const_dnnl_primitive_desc_t pd, char *buf,
                       size_t size);

/* Loads oneDNN and creates the cpu engine once per process. UNAVAILABLE with every path tried
 * (or the failing call) when it cannot. Thread-safe. */
xr_status_t xr_dnnl_get(const xr_dnnl_t **out_dnnl);

/* One 2-D matmul operand: dtype, extent and strides in elements. */
typedef struct xr_dnnl_matrix {
  xr_dtype_t dtype;
  int64_t rows, cols, row_stride, col_stride;
} xr_dnnl_matrix_t;

/* dst = src @ weights on operands described by their strides (so weights are used in place,
 * transposed or not): creates the primitive and fills mds (src, weights, dst) for
 * dnnl_memory_create (only mds when out_primitive is NULL). With `packed_weights`, oneDNN picks
 * the weights' layout instead and mds[1] describes it (see xr_dnnl_pack_weights); without a
 * primitive mds[1] is then left as it was. With `user_scratchpad` (non-NULL, and a primitive),
 * the caller provides the scratchpad (DNNL_ARG_SCRATCHPAD, xr_dnnl_scratchpad_md) of the size
 * stored there: oneDNN's own is shared by every primitive a thread runs, so primitives executed
 * concurrently on other threads than their creator's need their own. UNIMPLEMENTED with the
 * reason when oneDNN cannot run it, or only with its reference kernel. */
xr_status_t xr_dnnl_matmul_create(const xr_dnnl_t *dnnl, const xr_dnnl_matrix_t *src,
                                  const xr_dnnl_matrix_t *weights, const xr_dnnl_matrix_t *dst,
                                  bool packed_weights, size_t *user_scratchpad,
                                  dnnl_primitive_t *out_primitive, dnnl_memory_desc_t mds[3]);

/* The memory descriptor of a user scratchpad of `size` bytes (size > 0). */
xr_status_t xr_dnnl_scratchpad_md(const xr_dnnl_t *dnnl, size_t size, dnnl_memory_desc_t *md);

/* Copies `weights` (strided, at `from`) into `to` in the layout `packed` (mds[1] of a
 * packed_weights matmul; dnnl_memory_desc_get_size bytes), on the calling thread. */
xr_status_t xr_dnnl_pack_weights(const xr_dnnl_t *dnnl, const xr_dnnl_matrix_t *weights,
                                 const void *from, const dnnl_memory_desc_t *packed, void *to);

/* Sets the number of threads oneDNN uses for primitives created and run on the calling thread
 * from now on (OpenMP's per-thread nthreads ICV, through the libgomp libdnnl loaded) and returns
 * the previous number, or 0 (nothing changed) when the OpenMP runtime cannot be reached. A
 * primitive keeps the thread count it was created with. */
int xr_dnnl_set_thread_count(const xr_dnnl_t *dnnl, int count);

/* A memory descriptor of `nd` dims over element strides (fp32, bf16, fp16), size-1 dims' zero
 * strides replaced (xr_unit_dim_strides; `strides` is updated). Other zero or negative strides
 * are UNIMPLEMENTED. */
xr_status_t xr_dnnl_strided_md(const xr_dnnl_t *dnnl, int nd, const dnnl_dims_t dims,
                               dnnl_dims_t strides, xr_dtype_t dtype, dnnl_memory_desc_t *out);

/* An activation view (n, c, d, h, w) as [n, c, spatial...] with its last `spatial` dims, in
 * `dtype` (the view's own, or the dtype of a converted copy of the same layout). */
xr_status_t xr_dnnl_view_md(const xr_dnnl_t *dnnl, const xr_view5_t *v, int spatial,
                            xr_dtype_t dtype, dnnl_memory_desc_t *out);

/* The right pad of a window `span` wide moved by `stride` over `in` elements padded by `pad_l`
 * on the left that gives `out` windows: oneDNN derives the output size as (in - span + pad_l +
 * pad_r) / stride + 1, so the smallest non-negative one that does (or the negative one that
 * drops a tail no window reaches). */
static inline int64_t xr_dnnl_right_pad(int64_t in, int64_t out, int64_t span, int64_t stride,
                                        int64_t pad_l) {
  int64_t right = (out - 1) * stride + span - in - pad_l;
  if (right < 0) right = right + stride - 1 >= 0 ? 0 : right + stride - 1;
  return right;
}

/* The primitive descriptor of the op descriptor `desc`, with a user scratchpad: oneDNN's own
 * belongs to the thread that created the primitive, and the stream's worker runs it. A backward
 * primitive names the forward op descriptor it is the gradient of (`forward`; else NULL),
 * whose primitive descriptor oneDNN wants as a hint. UNIMPLEMENTED, naming `what`
 * ("convolution forward for bf16"), when oneDNN has no kernel or only its reference one. */
xr_status_t xr_dnnl_pd_create(const xr_dnnl_t *dnnl, const_dnnl_op_desc_t desc,
                              const_dnnl_op_desc_t forward, const char *what,
                              dnnl_primitive_desc_t *out_pd);

/* A primitive with its arguments and its own scratchpad. */
#define XR_DNNL_MAX_ARGS 12
typedef struct xr_dnnl_call {
  dnnl_primitive_t primitive;
  dnnl_memory_t memory[XR_DNNL_MAX_ARGS];
  dnnl_exec_arg_t args[XR_DNNL_MAX_ARGS];
  int arg_count;
  void *scratchpad;
} xr_dnnl_call_t;

/* Creates call's primitive from `pd` (destroying pd), with a scratchpad of its own. */
xr_status_t xr_dnnl_call_create(const xr_dnnl_t *dnnl, dnnl_primitive_desc_t pd,
                                xr_dnnl_call_t *call);

/* Appends argument `role` (DNNL_ARG_SRC, ...) over `at`, described by md. */
xr_status_t xr_dnnl_call_arg(const xr_dnnl_t *dnnl, xr_dnnl_call_t *call, int role,
                             const dnnl_memory_desc_t *md, void *at);

/* Executes call's primitive (if any) on `stream` and waits; false when oneDNN fails. */
bool xr_dnnl_call_run(const xr_dnnl_t *dnnl, dnnl_stream_t stream, const xr_dnnl_call_t *call);

/* Frees what call holds (a zeroed call holds nothing). */
void xr_dnnl_call_release(const xr_dnnl_t *dnnl, xr_dnnl_call_t *call);

/* "dnnl_unimplemented (3)". */
const char *xr_dnnl_status_name(const xr_dnnl_t *dnnl, dnnl_status_t status);

#endif /* XR_HAVE_DNNL_H */
#endif
