/* xreplay kernels: one entry per op family, each with a CPU reference and device implementations.
 *
 * The replay engine drives every op through three steps:
 *   1. xr_kernel_plan()    reads the op's arguments (by schema name, else by position), checks
 *                          them, and returns what the op produces (return tensors), its FLOPs and
 *                          bytes. Nothing runs; no device is needed.
 *   2. xr_kernel_select()  picks the implementation for a device: vendor library first, our own
 *                          kernel otherwise, each with a capability check (dtype, layout, sizes).
 *                          An unsupported combination is UNIMPLEMENTED with the reason, never run
 *                          wrongly.
 *   3. xr_kernel_prepare() binds device tensors once (builds programs, creates vendor plans) and
 *      xr_kernel_enqueue() then queues the work on a stream as often as the timing loop needs,
 *      without allocating.
 * kernels/ never reads files and never calls a vendor API except through the HAL (cpu host
 * work, OpenCL programs) or a vendor library it opens itself at run time.
 *
 * Tensor binding order (what `tensors` means everywhere below): every tensor value of the op's
 * arguments in order — positional args, then kwargs, list items in order, depth first; absent
 * (None) tensors take no slot — followed by the plan's return tensors (return0, return1, ...).
 * Each xr_tensor_t holds a buffer with the whole storage: element `offset` of the storage is
 * the view's first element, exactly as the bundle's tensor spec says.
 *
 * Thread-safety: planning and selection are thread-safe; a prepared instance is externally
 * synchronised (one stream enqueues it at a time). */
#ifndef XR_KERNELS_KERNELS_H
#define XR_KERNELS_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats/model.h"
#include "hal/hal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XR_MAX_RETURNS 8

/* A tensor on a device: the bundle's view (dtype, shape, strides, offset) over a buffer that
 * holds its storage. */
typedef struct xr_tensor {
  xr_hal_buffer_t *buffer;
  xr_dtype_t dtype;
  int32_t rank;
  int64_t shape[XR_MAX_RANK];
  int64_t strides[XR_MAX_RANK];  /* elements */
  int64_t offset;                /* elements from the buffer's start */
} xr_tensor_t;

/* A tensor the op returns, offset 0: contiguous, or, when `dense_strides`, laid out densely in
 * another dim order given by `strides` (a convolution of a channels-last input returns a
 * channels-last result, as PyTorch does). */
typedef struct xr_tensor_desc {
  xr_dtype_t dtype;
  int32_t rank;
  int64_t shape[XR_MAX_RANK];
  bool dense_strides;
  int64_t strides[XR_MAX_RANK]; /* elements; only with dense_strides */
} xr_tensor_desc_t;

typedef struct xr_op_family xr_op_family_t;
typedef struct xr_kernel_impl xr_kernel_impl_t;

/* What planning learned about one op. Owned by the caller; release with xr_kernel_plan_free. */
typedef struct xr_op_plan {
  const xr_op_t *op;              /* borrowed from the bundle; must outlive the plan */
  const xr_op_family_t *family;
  size_t input_count;             /* tensors among the op's arguments (binding order) */
  const xr_tensor_spec_t **inputs;/* their specs, borrowed from the bundle */
  bool *input_written;            /* per input: the op writes it (schema type "Tensor(a!)") */
  size_t return_count;
  xr_tensor_desc_t returns[XR_MAX_RETURNS];
  double flops;                   /* floating-point operations of one execution */
  double bytes;                   /* bytes one execution must move at least (reads + writes) */
  void *problem;                  /* the family's parsed problem (sizes, scalars, layouts) */
  /* Owns `op` when the family completed it (xr_op_family_t.complete); NULL otherwise. */
  xr_arena_t *completion;
  /* Collectives (kernels/collective.c). Planning sets `collective` (the op runs across ranks:
   * every rank must execute it the same number of times, in the same order) and its kind; the
   * caller sets, before xr_kernel_select, the ranks it runs across (NULL: this process alone)
   * and whether a group recorded with another size may run on them. */
  bool collective;
  xr_hal_collective_kind_t collective_kind;
  xr_hal_comm_t *comm;
  bool scale_collectives;
} xr_op_plan_t;

/* Plans `op`. A family whose ops lack state the trace cannot record (vLLM's KV cache and batch
 * metadata) first completes the op: plan->op is then a copy with those tensors added as kwargs,
 * owned by the plan, and the binding order is the completed op's. NOT_FOUND when no family knows the op name ("no kernel for op 'x::y'"),
 * INVALID_ARGUMENT when its arguments are malformed for the op (missing, wrong kind, shapes that
 * do not agree), each with a sentence naming the argument. Thread-safe. */
xr_status_t xr_kernel_plan(const xr_op_t *op, xr_op_plan_t *out_plan);
void xr_kernel_plan_free(xr_op_plan_t *plan);

/* Which implementation to pick. */
typedef enum xr_kernel_choice {
  XR_KERNEL_BEST = 0,    /* the first implementation that supports the device and the problem */
  XR_KERNEL_REFERENCE,   /* the plain-C CPU reference (the device must be a cpu device) */
} xr_kernel_choice_t;

/* Picks an implementation for `device`. UNIMPLEMENTED with every candidate's reason when none
 * fits ("opencl.gemm: bf16 output not supported; ..."). Thread-safe. */
xr_status_t xr_kernel_select(const xr_op_plan_t *plan, xr_hal_device_t *device,
                             xr_kernel_choice_t choice, const xr_kernel_impl_t **out_impl);

/* The implementation's name, as reports show it ("cpu.onednn_matmul", "opencl.clblast_gemm",
 * "ref.gemm"). Thread-safe. */
const char *xr_kernel_impl_name(const xr_kernel_impl_t *impl);

typedef struct xr_kernel_instance xr_kernel_instance_t;

/* Binds tensors (plan->input_count inputs then plan->return_count returns, in binding order, on
 * `device`) and does all one-time work. The tensors' buffers must stay alive until the instance
 * is destroyed. An implementation that declines here, seeing the real tensors (UNIMPLEMENTED:
 * a vendor library with no algorithm for the pointers' alignment), hands the op to the next one
 * of its family that supports it; the instance names what runs and why the first declined. */
xr_status_t xr_kernel_prepare(const xr_op_plan_t *plan, const xr_kernel_impl_t *impl,
                              xr_hal_device_t *device, const xr_tensor_t *tensors,
                              xr_kernel_instance_t **out_instance);

/* The implementation that runs the instance ("gpu.gemm_tiled"). */
const char *xr_kernel_instance_impl_name(const xr_kernel_instance_t *instance);

/* Why the implementation given to xr_kernel_prepare declined in favour of the one that runs
 * ("cuda.cublaslt_matmul declined: ..."), or "". */
const char *xr_kernel_instance_declined(const xr_kernel_instance_t *instance);

/* What the vendor library chose for the instance ("oneDNN 2.6.3 brg:avx512_core_amx", "cuBLASLt
 * algo 6, tile 18, stages 12, split-K 1"), or "" for our own kernels. */
const char *xr_kernel_instance_algorithm(const xr_kernel_instance_t *instance);

/* Queues one execution on `stream`. Cheap: no allocation, no blocking. */
xr_status_t xr_kernel_enqueue(xr_kernel_instance_t *instance, xr_hal_stream_t *stream);

/* Queues what must precede each timed execution outside its timing (a collective's barrier,
 * so that every rank starts together); nothing for most ops. */
xr_status_t xr_kernel_enqueue_prologue(xr_kernel_instance_t *instance, xr_hal_stream_t *stream);

/* The first failure of work queued by the instance that its stream could not report (a
 * collective whose ranks stopped answering); OK for most ops. Call after synchronising. */
xr_status_t xr_kernel_instance_status(xr_kernel_instance_t *instance);

/* Waits for nothing; the caller synchronises the stream before destroying. */
void xr_kernel_instance_destroy(xr_kernel_instance_t *instance);

/* A collective's size in NCCL-tests' sense on `ranks` ranks, in bytes: what its algorithm
 * bandwidth divides by — allreduce and broadcast: the message; allgather: the gathered result;
 * reduce_scatter: the input scattered; alltoall: all a rank sends. 0 for other ops. */
double xr_kernel_collective_bytes(const xr_op_plan_t *plan, int ranks);

/* Whether the collective runs in a group smaller than the world at hand (plan->comm), which it
 * tiles: the group's size and stride for xr_hal_comm_group, which the caller calls first, in
 * the same order on every rank. */
bool xr_kernel_collective_group(const xr_op_plan_t *plan, int *out_size, int *out_stride);
/* The ranks a collective runs across: its group's, else the world's (1 alone). */
int xr_kernel_collective_ranks(const xr_op_plan_t *plan);

/* Every op name some family handles, NULL-terminated; for `replay ops`-style listings. */
size_t xr_kernel_op_names(const char **out_names, size_t capacity);

/* A paged KV cache cut to the blocks the op references (--cache-blocks, replay/replay.h): a
 * copy of plan->op, allocated in `arena`, whose caches (and page lists) hold only the blocks
 * its index tensors will reference, and one more that none does; the initializer then draws
 * the indices among them, and its policy says `cache: compact, N of M blocks` (the op's hint
 * recorded_cache_blocks keeps M). *out_op NULL when the family cannot (not a cache op, index
 * tensors with real contents, nothing to gain). */
xr_status_t xr_kernel_compact(const xr_op_plan_t *plan, xr_arena_t *arena, xr_op_t **out_op);

/* --check of an op whose reference does not fit whole: the rows its results split into (dim 0
 * of every result, and of each input it marks in row_inputs, plan->input_count entries), such
 * that result row i reads row i of those inputs and every other input whole; 0 when its family
 * cannot split this op so. */
int64_t xr_kernel_result_rows(const xr_op_plan_t *plan, bool *row_inputs);
/* A copy of plan->op, allocated in `arena`, whose row inputs hold their first `rows` rows only:
 * the same strides and storage offset, so each reads a prefix of the whole one's storage. */
xr_status_t xr_kernel_op_rows(const xr_op_plan_t *plan, const bool *row_inputs, int64_t rows,
                              xr_arena_t *arena, xr_op_t **out_op);

/* ------------------------------------------------------------------------------------------ */
/* custom initializers                                                                         */

/* Inputs a kernel reads as data (sequence lengths, block tables, routing ids, indices) must be
 * consistent, not random. What an initializer sees: the op, its plan, and the host copies of its
 * inputs (binding order) already filled by the default policy; it overwrites what must be
 * consistent and describes what it did in `policy`. */
typedef struct xr_init_context {
  const xr_op_t *op;
  const xr_op_plan_t *plan;
  void **host;             /* plan->input_count host buffers holding each tensor's storage */
  const size_t *sizes;     /* their byte sizes */
  const bool *has_data;    /* per input: real contents from the bundle; never overwrite those */
  uint64_t seed;           /* per-op seed: use it for reproducible choices */
  const char *params;      /* the policy text given with --init for this op, or NULL */
  char *policy;            /* write a one-line description here */
  size_t policy_size;
  /* The plan's counts (xr_op_plan_t flops, bytes), or NULL: an initializer that settles data
   * they depend on (sequence lengths) restates them for the contents it leaves. */
  double *flops, *bytes;
} xr_init_context_t;

typedef xr_status_t (*xr_initializer_fn)(xr_init_context_t *context);

/* The initializer the op's family provides for it, or NULL when the default fill is right. */
xr_initializer_fn xr_kernel_initializer(const xr_op_plan_t *plan);

/* ------------------------------------------------------------------------------------------ */
/* For family authors: one kernels/<family>.c each, defining `const xr_op_family_t             */
/* xr_family_<name>` and listed in kernels/family_list.h; kernels/gemm.c is a complete example.  */

struct xr_kernel_impl {
  const char *name;       /* "<driver>.<what>" or "ref.<family>" */
  /* The devices it runs on: a driver ("cpu", "opencl", "cuda", "hip") or a kernel family of
   * the HAL's device properties ("gpu": one source compiled for both cuda and hip,
   * kernels/gpu/). */
  const char *driver;
  bool reference;         /* the plain-C reference of the family (driver "cpu") */
  /* OK if it can run this problem on this device; otherwise UNIMPLEMENTED with a sentence in
   * xr_last_error(). May be NULL (supports everything its driver's devices can run). */
  xr_status_t (*supports)(const xr_op_plan_t *plan, xr_hal_device_t *device);
  /* One-time work; returns the state enqueue uses. `tensors` as in xr_kernel_prepare. */
  xr_status_t (*prepare)(const xr_op_plan_t *plan, xr_hal_device_t *device,
                         const xr_tensor_t *tensors, void **out_state);
  xr_status_t (*enqueue)(void *state, xr_hal_stream_t *stream);
  void (*release)(void *state);
  /* Optional: xr_kernel_instance_algorithm (a string the state owns). */
  const char *(*algorithm)(void *state);
  /* Optional: xr_kernel_enqueue_prologue and xr_kernel_instance_status. */
  xr_status_t (*enqueue_prologue)(void *state, xr_hal_stream_t *stream);
  xr_status_t (*status)(void *state);
};

struct xr_op_family {
  const char *name;                    /* "gemm" */
  const char *const *op_names;         /* NULL-terminated list of profiler op names */
  /* Fills plan->returns, return_count, flops, bytes and problem (inputs are filled by the
   * caller before this runs). Errors name the argument: "aten::mm: mat2: expected a 2-D
   * tensor, got 3-D". */
  xr_status_t (*analyze)(xr_op_plan_t *plan);
  void (*free_problem)(void *problem);
  /* Optional, runs before analyze: sets *out_op to a copy of `op` (allocated in `scratch`) with
   * the tensor kwargs the op needs but the trace does not record, or leaves it NULL when the op
   * already has them all. Errors name the argument, like analyze. */
  xr_status_t (*complete)(const xr_op_t *op, xr_arena_t *scratch, xr_op_t **out_op);
  /* Optional: xr_kernel_compact for this family's ops (NULL: none compacts). */
  xr_status_t (*compact)(const xr_op_plan_t *plan, xr_arena_t *arena, xr_op_t **out_op);
  /* Optional: xr_kernel_result_rows for this family's ops (NULL: none splits). */
  int64_t (*result_rows)(const xr_op_plan_t *plan, bool *row_inputs);
  const xr_kernel_impl_t *const *impls; /* NULL-terminated, most preferred first */
  /* Optional: the initializers of ops whose inputs are data (NULL-terminated by op_name). */
  const struct xr_op_initializer {
    const char *op_name;
    xr_initializer_fn fn;
  } *initializers;
};

#ifdef __cplusplus
}
#endif
#endif /* XR_KERNELS_KERNELS_H */
