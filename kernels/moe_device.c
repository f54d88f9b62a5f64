/* The mixture-of-experts family on OpenCL (kernels/opencl/moe.cl, "opencl.moe") and on cuda
 * and hip (kernels/gpu/moe.cu, compiled at run time for the device by NVRTC / hiprtc, "gpu.moe"),
 * from one backend table; both take kernels/moe_args.h's block after the same buffers. Every op
 * of the family runs as a short sequence of launches (and fills) that prepare() lays out once;
 * enqueue() replays it without allocating:
 *   moe_align_block_size, moe_sorting_fwd   count -> scan -> scatter (+ moe_buf zeroed)
 *   topk_softmax                             router
 *   fused experts                            count -> scan -> scatter (own sort, block = tile
 *                                            rows) -> GEMM-1 + silu_and_mul -> GEMM-2 ->
 *                                            reduce over top-k
 *   moe_forward                              router, then the fused experts, its layer whole:
 *                                            mxfp4 or fp8 weights (the _mxfp4 and _fp8 GEMM
 *                                            kernels; fp8's format, scale blocks and scales
 *                                            per block or per expert are run-time
 *                                            parameters), biases, silu or swigluoai
 *   ck_moe_stage1                            GEMM-1 + silu_and_mul over the given sorted ids
 *   ck_moe_stage2                            GEMM-2 over the given sorted ids -> reduce onto out
 * CUDA's GEMM kernels are typed by name (activations, weight format, tile rows) and loop past
 * the grid's limits; OpenCL's take those as arguments, with 16 x 16 tiles and fp32 scratch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/family.h"
#include "kernels/gpu/sources.h"
#include "kernels/moe.h"
#include "kernels/moe_args.h"
#include "kernels/opencl/sources.h"

_Static_assert(sizeof(long) == 8, "the device argument blocks need a 64-bit long");
/* OpenCL guarantees a kernel 1024 bytes of arguments (CL_DEVICE_MAX_PARAMETER_SIZE): GEMM-2
 * takes 12 buffers and the block. */
_Static_assert(sizeof(xr_moe_args_t) + 12 * 8 <= 1024,
               "the MoE kernels' arguments exceed what every OpenCL device takes");

/* How a device runs the kernels. */
typedef struct backend {
  const char *name; /* the impl's: "opencl.moe", "gpu.moe" */
  xr_status_t (*build)(xr_hal_device_t *device, const char *file, const char *options,
                       xr_hal_executable_t **out_executable);
  const char *source;
  /* CUDA/HIP: GEMM and reduction kernels typed by name, GEMM tiles of 16 x rows-per-thread rows
   * by 64 columns, grids capped where the kernels loop past them, scratch in the activations'
   * dtype. OpenCL: one kernel each, 16 x 16 tiles, fp32 scratch. */
  bool typed;
} backend_t;

static const backend_t opencl = {"opencl.moe", xr_opencl_build, "moe.cl", false};
static const backend_t gpu = {"gpu.moe", xr_gpu_build, "moe.cu", true};

enum {
  CHUNK = 64,     /* routing entries per counting thread */
  MAX_STEPS = 8,  /* moe_forward: router, 3 sort launches, mask fill, 2 GEMMs, reduce */
  MAX_BUFFERS = 12,
};

/* Largest grid dimension y on both vendors (x allows 2^31 - 1). */
#define MAX_GRID_Y 65535u

/* One launch, or (kernel NULL) a zero fill of `fill_size` bytes of `fill` at `fill_offset`. */
typedef struct step {
  xr_hal_kernel_t *kernel;
  xr_hal_buffer_t *fill;
  size_t fill_offset, fill_size;
  xr_moe_args_t params;
  xr_hal_kernel_arg_t args[MAX_BUFFERS + 1];
  xr_hal_dispatch_t dispatch;
} step_t;

typedef struct moe_state {
  const backend_t *b;
  const xr_moe_problem_t *p;
  const xr_tensor_t *t; /* the prepare() call's tensors: read only during prepare */
  xr_hal_executable_t *exe;
  const char *suffix;   /* f32, f16, bf16 */
  uint32_t scan_threads;
  /* scratch */
  xr_hal_buffer_t *counts, *starts;                  /* the sort's */
  xr_hal_buffer_t *sorted, *expert_ids, *num_valid;  /* the fused path's own sort */
  xr_hal_buffer_t *h, *y, *mask;                     /* GEMM-1 output, GEMM-2 rows, rows written */
  xr_hal_buffer_t *route_ids, *route_w;              /* moe_forward's router output */
  step_t steps[MAX_STEPS];
  int step_count;
} moe_state_t;

static const char *dtype_suffix(xr_dtype_t d) {
  return d == XR_DTYPE_F32 ? "f32" : d == XR_DTYPE_F16 ? "f16" : "bf16";
}

static long dtype_code(xr_dtype_t d) {
  return d == XR_DTYPE_F32 ? XR_MOE_F32 : d == XR_DTYPE_F16 ? XR_MOE_F16 : XR_MOE_BF16;
}

static uint32_t blocks_for(int64_t n, int64_t per) {
  int64_t b = (n + per - 1) / per;
  return b < 1 ? 1 : (uint32_t)b;
}

static xr_moe_view_t view_of(const xr_tensor_t *t) {
  xr_moe_view_t v = {.offset = t->offset};
  long *s[3] = {&v.s0, &v.s1, &v.s2};
  for (int32_t d = 0; d < t->rank && d < 3; d++) *s[d] = t->strides[d];
  return v;
}

/* Sorted-row tile of CUDA's grouped GEMMs: 16, 32 or 64 rows (1, 2, 4 per thread), one that
 * divides `block` (the stages' block_m; the fused path picks its own block). OpenCL's: 16. */
static int rows_per_thread(const backend_t *b, int64_t block) {
  int64_t rows = XR_MOE_THREADS_Y;
  if (!b->typed) return 1;
  return block % (4 * rows) == 0 ? 4 : block % (2 * rows) == 0 ? 2 : 1;
}

/* Appends a launch of `name` over grid x grid_y blocks of `threads_x` x `threads_y`, with the
 * buffers then the parameter block as arguments. */
static xr_status_t add_launch(moe_state_t *s, const char *name, const xr_moe_args_t *params,
                              uint32_t grid_x, uint32_t grid_y, uint32_t threads_x,
                              uint32_t threads_y, xr_hal_buffer_t *const *buffers, size_t count) {
  if (s->step_count >= MAX_STEPS || count > MAX_BUFFERS)
    return xr_error(XR_INTERNAL, "%s: too many steps or arguments for %s", s->b->name, name);
  step_t *step = &s->steps[s->step_count];
  xr_status_t st = xr_hal_kernel_lookup(s->exe, name, &step->kernel);
  if (st != XR_OK) return st;
  step->params = *params;
  for (size_t i = 0; i < count; i++) step->args[i] = xr_hal_arg_buffer(buffers[i]);
  step->args[count] = xr_hal_arg_bytes(&step->params, sizeof step->params);
  step->dispatch = (xr_hal_dispatch_t){.grid = {grid_x, grid_y, 1},
                                       .block = {threads_x, threads_y, 1},
                                       .args = step->args,
                                       .arg_count = count + 1};
  s->step_count++;
  return XR_OK;
}

static xr_status_t add_zero_fill(moe_state_t *s, xr_hal_buffer_t *buffer, size_t offset, size_t size) {
  if (s->step_count >= MAX_STEPS) return xr_error(XR_INTERNAL, "%s: too many steps", s->b->name);
  s->steps[s->step_count++] = (step_t){.fill = buffer, .fill_offset = offset, .fill_size = size};
  return XR_OK;
}

/* Where a sort reads its routing and writes its outputs. */
typedef struct sort_io {
  xr_hal_buffer_t *ids, *weights;                                /* routing (weights: CK only) */
  xr_hal_buffer_t *sorted, *sorted_w, *expert_ids, *num_valid;   /* outputs (sorted_w: CK only) */
} sort_io_t;

static xr_status_t add_sort(moe_state_t *s, const xr_moe_args_t *q, const sort_io_t *io) {
  uint32_t grid = blocks_for(q->nchunks, XR_MOE_THREADS);
  xr_hal_buffer_t *count[] = {io->ids, s->counts};
  xr_hal_buffer_t *scan[] = {s->counts, s->starts, io->sorted, io->sorted_w, io->expert_ids, io->num_valid};
  xr_hal_buffer_t *scatter[] = {io->ids, io->weights, s->counts, s->starts, io->sorted, io->sorted_w};
  xr_status_t st;
  if ((st = add_launch(s, "xr_moe_count", q, grid, 1, XR_MOE_THREADS, 1, count, 2)) ||
      (st = add_launch(s, "xr_moe_scan", q, 1, 1, s->scan_threads, 1, scan, 6)))
    return st;
  return add_launch(s, "xr_moe_scatter", q, grid, 1, XR_MOE_THREADS, 1, scatter, 6);
}

/* The sorted rows the grouped GEMMs read. */
typedef struct rows_io {
  xr_hal_buffer_t *sorted, *expert_ids, *num_valid, *sorted_w;
} rows_io_t;

/* Groups per tile of output columns (64 on CUDA, 16 on OpenCL), and per row tile (CUDA's
 * kernels loop past MAX_GRID_Y tiles). */
static void gemm_grid(const moe_state_t *s, const xr_moe_args_t *q, int64_t columns, uint32_t *gx,
                      uint32_t *gy) {
  *gx = blocks_for(columns, s->b->typed ? XR_MOE_TILE_N : XR_MOE_OPENCL_TILE);
  *gy = q->tiles < 1 ? 1 : q->tiles > MAX_GRID_Y && s->b->typed ? MAX_GRID_Y : (uint32_t)q->tiles;
}

/* A GEMM or reduction kernel's name: CUDA's typed by the activations' dtype, the weights'
 * format and the tile's rows per thread (rm; 0: none), OpenCL's one kernel. */
static void typed_name(const moe_state_t *s, const char *base, const char *format, int rm, char *name,
                       size_t size) {
  if (!s->b->typed)
    snprintf(name, size, "%s", base);
  else if (rm)
    snprintf(name, size, "%s_%s%s_m%d", base, s->suffix, format, rm);
  else
    snprintf(name, size, "%s_%s", base, s->suffix);
}

/* The GEMM kernel for the weights' format: "" plain (the activations' dtype), "_mxfp4",
 * "_fp8". */
static const char *format_suffix(const xr_moe_problem_t *p) {
  return p->weights == XR_MOE_W_MXFP4 ? "_mxfp4" : p->weights == XR_MOE_W_FP8 ? "_fp8" : "";
}

/* Tensor `index`'s buffer, or a stand-in the kernel does not read (absent scales, biases). */
static xr_hal_buffer_t *buffer_or(const moe_state_t *s, int index) {
  return index >= 0 ? s->t[index].buffer : s->counts;
}

/* GEMM-1 + activation: x (tensor p->hidden) against w1 (+ its scales, bias), into h or out. */
static xr_status_t add_gemm1(moe_state_t *s, const xr_moe_args_t *q, int rm,
                             const rows_io_t *r, xr_hal_buffer_t *weights) {
  const xr_moe_problem_t *p = s->p;
  char name[48];
  typed_name(s, "xr_moe_gemm1", format_suffix(p), rm, name, sizeof name);
  uint32_t gx, gy;
  gemm_grid(s, q, p->N, &gx, &gy);
  xr_hal_buffer_t *out = q->out_mode == 1 ? s->t[p->out].buffer : s->counts;
  xr_hal_buffer_t *b[] = {r->sorted, r->expert_ids, r->num_valid, r->sorted_w, s->t[p->hidden].buffer,
                          s->t[p->w1].buffer, buffer_or(s, p->w1_scale), buffer_or(s, p->w1_bias),
                          weights, s->h, out};
  return add_launch(s, name, q, gx, gy, XR_MOE_THREADS_X, XR_MOE_THREADS_Y, b, 11);
}

/* GEMM-2: h (a_mode 0) or the tensor p->hidden (a_mode 1) against w2 (+ its scales, bias),
 * into y and mask. */
static xr_status_t add_gemm2(moe_state_t *s, const xr_moe_args_t *q, int rm,
                             const rows_io_t *r, xr_hal_buffer_t *weights) {
  const xr_moe_problem_t *p = s->p;
  char name[48];
  typed_name(s, "xr_moe_gemm2", format_suffix(p), rm, name, sizeof name);
  uint32_t gx, gy;
  gemm_grid(s, q, p->K, &gx, &gy);
  xr_hal_buffer_t *b[] = {r->sorted, r->expert_ids, r->num_valid, r->sorted_w, s->h,
                          s->t[p->hidden].buffer, s->t[p->w2].buffer, buffer_or(s, p->w2_scale),
                          buffer_or(s, p->w2_bias), weights, s->y, s->mask};
  return add_launch(s, name, q, gx, gy, XR_MOE_THREADS_X, XR_MOE_THREADS_Y, b, 12);
}

/* Sum over top-k of y's written rows into out. */
static xr_status_t add_reduce(moe_state_t *s, const xr_moe_args_t *q) {
  const xr_moe_problem_t *p = s->p;
  char name[48];
  typed_name(s, "xr_moe_reduce", "", 0, name, sizeof name);
  uint32_t grid = blocks_for(p->M * p->K, XR_MOE_THREADS); /* CUDA's kernel loops past its grid */
  if (grid > MAX_GRID_Y && s->b->typed) grid = MAX_GRID_Y;
  xr_hal_buffer_t *b[] = {s->y, s->mask, s->t[p->out].buffer};
  return add_launch(s, name, q, grid, 1, XR_MOE_THREADS, 1, b, 3);
}

static xr_status_t add_router(moe_state_t *s, const xr_moe_args_t *q, xr_hal_buffer_t *weights,
                              xr_hal_buffer_t *ids, xr_hal_buffer_t *tei) {
  xr_hal_buffer_t *b[] = {s->t[s->p->logits].buffer, weights, ids, tei};
  return add_launch(s, "xr_moe_topk_softmax", q, blocks_for(s->p->M, XR_MOE_THREADS), 1,
                    XR_MOE_THREADS, 1, b, 4);
}

/* The element range of a contiguous tensor, in bytes. */
static void byte_range(const xr_tensor_t *t, size_t *offset, size_t *size) {
  size_t es = xr_dtype_size(t->dtype), n = 1;
  for (int32_t d = 0; d < t->rank; d++) n *= (size_t)t->shape[d];
  *offset = (size_t)t->offset * es;
  *size = n * es;
}

static xr_status_t plan_sorting(moe_state_t *s, xr_moe_args_t *q) {
  const xr_moe_problem_t *p = s->p;
  const xr_tensor_t *t = s->t;
  bool ck = p->kind == XR_MOE_SORTING;
  q->ck = ck;
  q->block = p->block;
  q->sorted_len = p->sorted_len;
  q->blocks_len = p->blocks_len;
  q->sorted_off = t[p->sorted_ids].offset;
  q->expert_ids_off = t[p->expert_ids].offset;
  q->num_valid_off = t[p->num_valid].offset;
  q->num_valid_len = t[p->num_valid].shape[0];
  sort_io_t io = {.ids = t[p->topk_ids].buffer, .weights = s->counts,
                  .sorted = t[p->sorted_ids].buffer, .sorted_w = s->counts,
                  .expert_ids = t[p->expert_ids].buffer, .num_valid = t[p->num_valid].buffer};
  if (ck) {
    io.weights = t[p->topk_weights].buffer;
    io.sorted_w = t[p->sorted_weights].buffer;
    q->sorted_w_off = t[p->sorted_weights].offset;
  }
  xr_status_t st = add_sort(s, q, &io);
  if (st != XR_OK || !ck || p->moe_buf < 0) return st;
  size_t offset, size;
  byte_range(&t[p->moe_buf], &offset, &size);
  return add_zero_fill(s, t[p->moe_buf].buffer, offset, size);
}

/* Fused experts and moe_forward (after its router): own vLLM-style sort with the tile's rows
 * as block size, GEMM-1 into h, GEMM-2 into y, reduce into out. */
static xr_status_t plan_fused(moe_state_t *s, xr_moe_args_t *q, int rm) {
  const xr_moe_problem_t *p = s->p;
  xr_hal_buffer_t *ids = p->topk_ids >= 0 ? s->t[p->topk_ids].buffer : s->route_ids;
  xr_hal_buffer_t *weights = p->topk_weights >= 0 ? s->t[p->topk_weights].buffer : s->route_w;
  xr_status_t st;
  if (p->kind == XR_MOE_FORWARD) {
    q->ids = (xr_moe_view_t){.s0 = p->topk, .s1 = 1};
    q->weights = (xr_moe_view_t){.s0 = p->topk, .s1 = 1};
    q->ids_wide = 0;
    q->weights_dtype = XR_MOE_F32;
    q->renormalize = p->renormalize;
    if ((st = add_router(s, q, s->route_w, s->route_ids, s->counts)) != XR_OK) return st;
  }
  q->ck = 0;
  q->block = XR_MOE_THREADS_Y * rm;
  sort_io_t io = {.ids = ids, .weights = s->counts, .sorted = s->sorted, .sorted_w = s->counts,
                  .expert_ids = s->expert_ids, .num_valid = s->num_valid};
  rows_io_t rows = {.sorted = s->sorted, .expert_ids = s->expert_ids, .num_valid = s->num_valid,
                    .sorted_w = s->counts};
  xr_moe_args_t g1 = *q, g2 = *q;
  g1.scale_mode = p->weight_on_input ? 1 : 0;
  g1.out_mode = 0;
  g2.scale_mode = p->weight_on_input ? 0 : 3;
  g2.a_mode = 0;
  g2.accumulate = 0;
  if ((st = add_sort(s, q, &io)) != XR_OK ||
      (st = add_zero_fill(s, s->mask, 0, xr_hal_buffer_size(s->mask))) != XR_OK ||
      (st = add_gemm1(s, &g1, rm, &rows, weights)) != XR_OK ||
      (st = add_gemm2(s, &g2, rm, &rows, weights)) != XR_OK)
    return st;
  return add_reduce(s, &g2);
}

/* ck_moe_stage1 / stage2 over the sorted ids they are given. */
static xr_status_t plan_stage(moe_state_t *s, xr_moe_args_t *q, int rm) {
  const xr_moe_problem_t *p = s->p;
  const xr_tensor_t *t = s->t;
  q->ck = 1;
  q->block = p->block;
  q->sorted_len = p->sorted_len;
  q->blocks_len = p->blocks_len;
  q->sorted_off = t[p->sorted_ids].offset;
  q->expert_ids_off = t[p->expert_ids].offset;
  q->num_valid_off = t[p->num_valid].offset;
  rows_io_t rows = {.sorted = t[p->sorted_ids].buffer, .expert_ids = t[p->expert_ids].buffer,
                    .num_valid = t[p->num_valid].buffer, .sorted_w = s->counts};
  int weighted = p->sorted_weights >= 0;
  if (weighted) {
    rows.sorted_w = t[p->sorted_weights].buffer;
    q->sorted_w_off = t[p->sorted_weights].offset;
  }
  q->scale_mode = weighted ? 2 : 0;
  if (p->kind == XR_MOE_STAGE1) {
    q->out_mode = 1;
    return add_gemm1(s, q, rm, &rows, s->counts);
  }
  q->a_mode = 1;
  q->accumulate = 1;
  xr_status_t st;
  if ((st = add_zero_fill(s, s->mask, 0, xr_hal_buffer_size(s->mask))) != XR_OK ||
      (st = add_gemm2(s, q, rm, &rows, s->counts)) != XR_OK)
    return st;
  return add_reduce(s, q);
}

/* ------------------------------------------------------------------------------------------ */

/* The elements of a tensor as one contiguous range. */
static bool contiguous(const xr_tensor_spec_t *t) {
  int64_t s = 1;
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    if (t->shape[d] != 1 && t->strides[d] != s) return false;
    s *= t->shape[d];
  }
  return true;
}

static xr_status_t moe_supports(const backend_t *b, const xr_op_plan_t *plan,
                                xr_hal_device_t *device) {
  (void)device;
  const xr_moe_problem_t *p = plan->problem;
  const char *impl = b->name;
  xr_status_t st = xr_moe_check_supported(plan, impl);
  if (st != XR_OK) return st;
  /* CUDA divides by the scale blocks through 32-bit multipliers (xr_moe_divisor). */
  if (b->typed && p->weights == XR_MOE_W_FP8 && (2 * p->N > INT32_MAX || p->K > INT32_MAX))
    return xr_error(XR_UNIMPLEMENTED, "%s: fp8 expert weights of %lld rows by %lld columns: the "
                    "scale blocks' indices are 32-bit", impl, (long long)(2 * p->N),
                    (long long)p->K);
  const int outs[] = {p->sorted_ids, p->sorted_weights, p->expert_ids, p->num_valid, p->moe_buf};
  for (size_t i = 0; i < sizeof outs / sizeof *outs; i++)
    if (outs[i] >= 0 && !contiguous(plan->inputs[outs[i]]))
      return xr_error(XR_UNIMPLEMENTED, "%s: sorted ids, weights, block experts and moe_buf must "
                      "be contiguous", impl);
  if ((p->kind == XR_MOE_STAGE1 || p->kind == XR_MOE_STAGE2) && p->block % XR_MOE_THREADS_Y)
    return xr_error(XR_UNIMPLEMENTED, "%s: block_m %lld is not a multiple of %d (the tile's rows)",
                    impl, (long long)p->block, XR_MOE_THREADS_Y);
  if (p->M * p->topk > INT32_MAX / 2 || p->E > 65536)
    return xr_error(XR_UNIMPLEMENTED, "%s: %lld routed rows over %lld experts exceed 32-bit ids",
                    impl, (long long)(p->M * p->topk), (long long)p->E);
  return XR_OK;
}

static void moe_release(void *state) {
  moe_state_t *s = state;
  if (!s) return;
  xr_hal_buffer_t *bufs[] = {s->counts, s->starts, s->sorted, s->expert_ids, s->num_valid,
                             s->h,      s->y,      s->mask,   s->route_ids,  s->route_w};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) xr_hal_buffer_free(bufs[i]);
  if (s->exe) xr_hal_executable_destroy(s->exe);
  free(s);
}

static xr_status_t scratch(xr_hal_device_t *device, size_t bytes, xr_hal_buffer_t **out) {
  return xr_hal_buffer_alloc(device, bytes ? bytes : 4, out);
}

/* The fused path's tile rows on CUDA: 64 when experts average that many rows, fewer for small
 * batches (less padding per expert). OpenCL's tiles have 16. */
static int fused_rows_per_thread(const backend_t *b, const xr_moe_problem_t *p) {
  int64_t per_expert = p->M * p->topk / (p->E > 0 ? p->E : 1);
  if (!b->typed) return 1;
  return per_expert >= 64 ? 4 : per_expert >= 32 ? 2 : 1;
}

static xr_status_t moe_prepare(const backend_t *b, const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  const xr_moe_problem_t *p = plan->problem;
  moe_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  s->b = b;
  s->p = p;
  s->t = tensors;
  bool fused = p->kind == XR_MOE_FUSED || p->kind == XR_MOE_FORWARD;
  bool gemm = fused || p->kind == XR_MOE_STAGE1 || p->kind == XR_MOE_STAGE2;
  s->suffix = dtype_suffix(p->dtype);
  int rm = fused ? fused_rows_per_thread(b, p) : rows_per_thread(b, p->block);
  /* the scratch rows' elements (h, y) */
  size_t es = !gemm ? 0 : b->typed ? xr_dtype_size(p->dtype) : sizeof(float);

  xr_moe_args_t q = {.M = p->M, .K = p->K, .N = p->N, .E = p->E, .topk = p->topk,
                           .numel = p->M * p->topk, .chunk = CHUNK};
  q.nchunks = (q.numel + CHUNK - 1) / CHUNK;
  if (p->topk_ids >= 0) {
    q.ids = view_of(&tensors[p->topk_ids]);
    q.ids_wide = tensors[p->topk_ids].dtype == XR_DTYPE_I64;
  }
  if (p->topk_weights >= 0) {
    q.weights = view_of(&tensors[p->topk_weights]);
    q.weights_dtype = dtype_code(tensors[p->topk_weights].dtype);
  }
  if (p->hidden >= 0) q.x = view_of(&tensors[p->hidden]);
  if (p->w1 >= 0) q.w1 = view_of(&tensors[p->w1]);
  if (p->w2 >= 0) q.w2 = view_of(&tensors[p->w2]);
  if (p->out >= 0) q.out = view_of(&tensors[p->out]);
  if (p->logits >= 0) {
    q.logits = view_of(&tensors[p->logits]);
    q.logits_dtype = dtype_code(tensors[p->logits].dtype);
  }
  if (p->token_expert_indices >= 0) {
    q.tei = view_of(&tensors[p->token_expert_indices]);
    q.tei_wide = tensors[p->token_expert_indices].dtype == XR_DTYPE_I64;
    q.has_tei = 1;
  }
  q.renormalize = p->renormalize;
  /* moe_forward's layer (the plain silu layer of every other op: no scales, no biases) */
  q.w1_bias_dtype = q.w2_bias_dtype = -1;
  if (p->weights != XR_MOE_W_PLAIN) {
    q.w1_scale = view_of(&tensors[p->w1_scale]);
    q.w2_scale = view_of(&tensors[p->w2_scale]);
  }
  q.w_format = p->weights == XR_MOE_W_MXFP4 ? XR_MOE_W_FORMAT_MXFP4
               : p->weights == XR_MOE_W_FP8 ? XR_MOE_W_FORMAT_FP8
                                            : XR_MOE_W_FORMAT_PLAIN;
  q.scale_block_rows = q.scale_block_cols = 1;
  if (p->weights == XR_MOE_W_FP8) { /* per expert: the [E] views have no row or column stride */
    q.w_fp8_dtype = tensors[p->w1].dtype;
    q.scale_block_rows = p->block_n ? p->block_n : 1;
    q.scale_block_cols = p->block_k ? p->block_k : 1;
  }
  q.scale_rows = xr_moe_divisor(q.scale_block_rows);
  q.scale_cols = xr_moe_divisor(q.scale_block_cols);
  if (p->w1_bias >= 0) {
    q.w1_bias = view_of(&tensors[p->w1_bias]);
    q.w1_bias_dtype = dtype_code(tensors[p->w1_bias].dtype);
  }
  if (p->w2_bias >= 0) {
    q.w2_bias = view_of(&tensors[p->w2_bias]);
    q.w2_bias_dtype = dtype_code(tensors[p->w2_bias].dtype);
  }
  q.dtype = dtype_code(p->dtype);
  q.gate_step = xr_moe_gate_row(p, 1) - xr_moe_gate_row(p, 0);
  q.up_row0 = xr_moe_up_row(p, 0);
  q.act = p->act == XR_MOE_ACT_SWIGLUOAI;
  q.swiglu_alpha = (float)p->swiglu_alpha;
  q.swiglu_limit = (float)p->swiglu_limit;

  size_t E = (size_t)(p->E > 0 ? p->E : 1), pairs = (size_t)q.numel;
  /* One group sorts: as many threads as the device gives it, up to XR_MOE_THREADS. */
  xr_hal_device_properties_t properties;
  xr_status_t st = xr_hal_device_properties(device, &properties);
  s->scan_threads = properties.max_work_group_size < XR_MOE_THREADS ? (uint32_t)properties.max_work_group_size
                                                                    : XR_MOE_THREADS;
  if (st == XR_OK) st = b->build(device, b->source, NULL, &s->exe);
  if (st == XR_OK)
    st = scratch(device, sizeof(int32_t) * (size_t)(q.nchunks > 0 ? q.nchunks : 1) * E, &s->counts);
  if (st == XR_OK) st = scratch(device, sizeof(int32_t) * (2 * E + 1), &s->starts);
  if (fused) {
    int64_t block = XR_MOE_THREADS_Y * rm;
    q.sorted_len = q.numel + p->E * (block - 1);
    q.blocks_len = (q.sorted_len + block - 1) / block;
    q.num_valid_len = 1;
    if (st == XR_OK) st = scratch(device, sizeof(int32_t) * (size_t)q.sorted_len, &s->sorted);
    if (st == XR_OK) st = scratch(device, sizeof(int32_t) * (size_t)q.blocks_len, &s->expert_ids);
    if (st == XR_OK) st = scratch(device, sizeof(int32_t), &s->num_valid);
    if (st == XR_OK) st = scratch(device, es * (size_t)q.sorted_len * (size_t)p->N, &s->h);
  }
  if (p->kind == XR_MOE_FORWARD) {
    if (st == XR_OK) st = scratch(device, sizeof(int32_t) * pairs, &s->route_ids);
    if (st == XR_OK) st = scratch(device, sizeof(float) * pairs, &s->route_w);
  }
  if (fused || p->kind == XR_MOE_STAGE2) {
    if (st == XR_OK) st = scratch(device, es * pairs * (size_t)p->K, &s->y);
    if (st == XR_OK) st = scratch(device, sizeof(int32_t) * pairs, &s->mask);
  }
  /* Kernels that do not read h, y or mask still take a pointer. */
  if (st == XR_OK && !s->h) st = scratch(device, 4, &s->h);
  if (st == XR_OK && !s->y) st = scratch(device, 4, &s->y);
  if (st == XR_OK && !s->mask) st = scratch(device, 4, &s->mask);

  if (st == XR_OK) {
    switch (p->kind) {
      case XR_MOE_ALIGN:
      case XR_MOE_SORTING: st = plan_sorting(s, &q); break;
      case XR_MOE_TOPK_SOFTMAX:
        st = add_router(s, &q, tensors[p->topk_weights].buffer, tensors[p->topk_ids].buffer,
                        tensors[p->token_expert_indices].buffer);
        break;
      case XR_MOE_FUSED:
      case XR_MOE_FORWARD:
        q.tiles = (q.sorted_len + XR_MOE_THREADS_Y * rm - 1) / (XR_MOE_THREADS_Y * rm);
        st = plan_fused(s, &q, rm);
        break;
      case XR_MOE_STAGE1:
      case XR_MOE_STAGE2:
        q.tiles = (p->sorted_len + XR_MOE_THREADS_Y * rm - 1) / (XR_MOE_THREADS_Y * rm);
        st = plan_stage(s, &q, rm);
        break;
    }
  }
  s->t = NULL;
  if (st != XR_OK) {
    moe_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t moe_enqueue(void *state, xr_hal_stream_t *stream) {
  moe_state_t *s = state;
  for (int i = 0; i < s->step_count; i++) {
    const step_t *step = &s->steps[i];
    xr_status_t st;
    if (step->kernel) {
      st = xr_hal_stream_dispatch(stream, step->kernel, &step->dispatch);
    } else {
      uint8_t zero = 0;
      st = xr_hal_stream_fill(stream, step->fill, step->fill_offset, step->fill_size, &zero, 1);
    }
    if (st != XR_OK) return st;
  }
  return XR_OK;
}

XR_DEVICE_IMPL(xr_moe_opencl, "opencl.moe", "opencl", opencl, moe_supports, moe_prepare, moe_enqueue,
               moe_release)
XR_DEVICE_IMPL(xr_moe_gpu, "gpu.moe", "gpu", gpu, moe_supports, moe_prepare, moe_enqueue, moe_release)
