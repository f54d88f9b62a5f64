/* Pieces of the replay engine shared between its files; not part of the public API. */
#ifndef XR_REPLAY_INTERNAL_H
#define XR_REPLAY_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "replay/categories.h"
#include "replay/replay.h"
#include "replay/timing.h"

/* A seed for tensor `tensor_index` of op `op_index`: independent of which ops are filtered. */
uint64_t xr_seed_for(uint64_t seed, size_t op_index, size_t tensor_index);

/* A report summary's replay_vs_trace (replay/report.c): `trace_device` (may be NULL), the
 * statistics and whether the device is that model; NULL when no op has a ratio. */
cJSON *xr_trace_ratio_json(const char *trace_device, const xr_trace_ratio_stats_t *stats,
                           bool same_device);

/* Default initialisation of a tensor's storage by its init (or dtype when unset). */
const char *xr_fill_policy(const xr_tensor_spec_t *t, bool written);
void xr_fill(void *host, const xr_tensor_spec_t *t, size_t bytes, uint64_t seed);
/* NaN for floats, -1 for integers: any element a kernel fails to write shows. */
void xr_poison(void *host, xr_dtype_t dtype, size_t bytes);

/* The initializer for a planned op: one registered for its name, else its family's; or NULL. */
xr_initializer_fn xr_find_initializer(const xr_op_plan_t *plan);

/* Over the logical elements of one view of two storages, element by element (no copies, so an
 * output of billions of elements is compared in place): the sum of (a - e)^2 where finite, the
 * sum of e^2 over finite e, and whether a is NaN or Inf anywhere e is finite. */
void xr_compare_views(const void *actual, const void *expected, xr_dtype_t dtype, int32_t rank,
                      const int64_t *shape, const int64_t *strides, int64_t offset,
                      double *out_sum_sq_diff, double *out_sum_sq, bool *out_nonfinite);

/* Writes the logical tensor as .npy in its own dtype (bf16 as '<u2', fp8 as '|u1'). */
xr_status_t xr_npy_write(const char *path, const void *storage, xr_dtype_t dtype, int32_t rank,
                         const int64_t *shape, const int64_t *strides, int64_t offset);

/* NMSE threshold used by --check for an output dtype. */
double xr_check_threshold(xr_dtype_t dtype);

/* ------------------------------------------------------------------------------------------ */
/* deciding what runs (replay/plan.c): xr_replay_run and xr_replay_plan decide through these    */

/* The outcome of a step done once per op, kept so that every device after the first that needs
 * it sees the same status and sentence. */
typedef struct xr_once {
  bool done;
  xr_status_t status;
  char message[1024];
} xr_once_t;

xr_status_t xr_once_keep(xr_once_t *once, xr_status_t status);
xr_status_t xr_once_replay(const xr_once_t *once); /* the kept status, its sentence set again */

/* Splits a --hal list ("cpu,opencl:1") into `specs` (pointers into `buf`) and checks that each
 * names a known driver or "auto": INVALID_ARGUMENT otherwise, naming the entry. */
xr_status_t xr_device_specs(const char *list, char *buf, size_t buf_size,
                            const char *specs[XR_REPLAY_MAX_DEVICES], size_t *out_count);

/* Whether op `op`, at position `index` of the bundle, is among those a run attempts before
 * --op-limit: --op-filter's substring, and in the options' shard when there is one. */
bool xr_op_selected(const xr_replay_options_t *options, size_t index, const xr_op_t *op);

/* The op's recorded GPU time (all calls), 0 when the trace has none: what the summaries add. */
double xr_op_trace_total_us(const xr_op_t *op);

/* One op as every device of a run sees it: planned once (xr_kernel_plan), its tensors laid out
 * (views and storage sizes, no storage), and the host-memory check done once at the first device
 * that selects an implementation. */
typedef struct xr_planned_op {
  size_t index;
  xr_op_plan_t plan;
  xr_once_t planned;           /* xr_kernel_plan */
  xr_once_t laid_out;          /* the views and storage sizes (after a successful plan) */
  xr_once_t host_fits;         /* the op's tensors against the host's memory */
  /* --check: the reference's tensors and outputs against the host memory the op leaves; not OK
   * (its sentence saying what it needs) means the op runs unchecked. Set by xr_decide. */
  xr_once_t check_fits;
  /* --check of an op whose reference does not fit whole but whose family splits it into rows
   * (xr_kernel_result_rows): the first check_rows of its result_rows rows are checked; 0: the
   * whole op (or none, per check_fits). */
  int64_t check_rows, result_rows;
  /* --cache-blocks: while `plan` is of the op with its caches compacted (an op in
   * compact_arena), the plan of the op as recorded, which owns what the two share. */
  xr_op_plan_t *recorded;
  xr_arena_t *compact_arena;
  uint64_t recorded_bytes;     /* xr_planned_op_bytes of the op as recorded */
  xr_arena_t *contents_arena;  /* the op with its small .npy contents read (xr_planned_op_init) */
  size_t count;                /* inputs + returns */
  xr_tensor_t *layout;         /* per tensor: dtype, shape, strides, offset (no buffer) */
  size_t *bytes;               /* per tensor: storage bytes */
  size_t out_count, out[XR_MAX_CHECKED_OUTPUTS]; /* returns, then the inputs it writes */
} xr_planned_op_t;

/* Storage bytes of all the op's tensors together: one copy of its inputs and outputs. */
uint64_t xr_planned_op_bytes(const xr_planned_op_t *p);

void xr_planned_op_init(const xr_bundle_t *bundle, size_t index, xr_planned_op_t *out);
/* The same for an op outside the bundle (one cut to rows for --check), which must outlive p. */
void xr_planned_op_init_op(const xr_op_t *op, size_t index, xr_planned_op_t *p);
void xr_planned_op_free(xr_planned_op_t *p);

/* What the decisions of one run share. */
typedef struct xr_decide_context {
  const xr_replay_options_t *options; /* choice, rotate, max_memory_bytes */
  bool host_device; /* some device of the run is host-addressable: its copies use host memory */
} xr_decide_context_t;

/* --cache-blocks: replans `p` on its op with the paged caches compacted (xr_kernel_compact)
 * when the options say so, or (auto) when its tensors would not fit, whole, in the host's or
 * one of the `count` devices' memory; keeps the plan as it is where the op has no cache. */
void xr_planned_op_compact(const xr_decide_context_t *c, xr_planned_op_t *p,
                           const xr_hal_device_properties_t *const *devices, size_t count);
/* "cache: compact, its tensors 672.1 MiB (13.85 GiB as recorded)", for a compacted `p`. */
void xr_planned_op_compact_note(const xr_planned_op_t *p, char *out, size_t size);

/* Whether op `p` runs on `device` (with `properties`): its plan, the implementation
 * (xr_kernel_select), then whether its tensors fit in the host's and the device's memory.
 * SUCCEEDED with *out_impl set; otherwise UNSUPPORTED or FAILED with the sentence the run reports
 * in `message`. Nothing is allocated on the device and nothing runs. What can still go wrong
 * after it says yes happens only when the op runs: reading the tensors' contents, the custom
 * initializer, preparing and executing the kernel, the check. */
xr_op_outcome_t xr_decide(const xr_decide_context_t *context, xr_planned_op_t *p,
                          xr_hal_device_t *device, const xr_hal_device_properties_t *properties,
                          const xr_kernel_impl_t **out_impl, char *message, size_t message_size);

/* `measured` of a report's head and of a peaks file's device (they are one form): each figure
 * as {"value", "source"}, with its working set. */
void xr_add_measured(cJSON *to, const xr_hal_device_properties_t *properties);
/* The summary's "categories" (replayed and recorded time per op category, the categories that
 * hold an op) and "projected" (their sums) into `summary`. */
void xr_add_categories(cJSON *summary, const xr_category_total_t totals[XR_CATEGORY_COUNT]);

#endif
