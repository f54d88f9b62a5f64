/* opencl.scatter and gpu.scatter: the scatter family's device kernels (kernels/opencl/scatter.cl
 * and kernels/gpu/scatter.cu have the same kernels, names and parameter block,
 * kernels/scatter_args.h), one program for every op and dtype, built once per device. Raw moves
 * of every dtype; reductions in float (every float dtype but f64, left to the CPU) or 64-bit
 * integers, deterministic (no atomics). The two differ only in how they build the source and
 * pass the parameter block: in a constant buffer (OpenCL) or by value (CUDA/HIP).
 *
 * Per execution: the out-of-place copy of self (xr_sc_gather without slots), the mask's
 * compaction (count, scan, write), then the main pass. Enqueue allocates nothing: the
 * positions, per-chunk counts, the count, and the accumulators with their (zeroed) counts are
 * made at prepare. */
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/gpu/sources.h"
#include "kernels/opencl/sources.h"
#include "kernels/scatter.h"

_Static_assert(sizeof(long) == 8, "the device parameter block needs a 64-bit long");

typedef struct backend {
  const char *name, *label; /* "opencl.scatter", and as xr_sc_device_supports names it */
  const char *source;       /* "scatter.cl" */
  xr_status_t (*build)(xr_hal_device_t *device, const char *file, const char *options,
                       xr_hal_executable_t **out_executable);
  bool params_in_buffer;
  int64_t target_items; /* work-items SCATTER's chunks aim at */
} backend_t;

static const backend_t opencl = {"opencl.scatter", "OpenCL", "scatter.cl", xr_opencl_build, true,
                                 4096};
static const backend_t gpu = {"gpu.scatter", "GPU", "scatter.cu", xr_gpu_build, false, 65536};

enum { COPY, MAIN, MASK_COUNT, MASK_SCAN, MASK_WRITE, LAUNCHES };
#define MAX_ARGS 11

typedef struct sc_device {
  const backend_t *backend;
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *kernel[LAUNCHES];
  xr_sc_dev_params_t q[2]; /* main, copy */
  xr_hal_buffer_t *params[2], *positions, *chunk_base, *count, *acc, *cnt, *dummy;
  xr_hal_kernel_arg_t args[LAUNCHES][MAX_ARGS];
  xr_hal_dispatch_t dispatch[LAUNCHES];
  bool run[LAUNCHES];
} sc_device_t;

static void sc_release(void *state) {
  sc_device_t *s = state;
  if (!s) return;
  xr_hal_buffer_t *buffers[] = {s->params[0], s->params[1], s->positions, s->chunk_base,
                                s->count,     s->acc,       s->cnt,       s->dummy};
  for (size_t i = 0; i < sizeof buffers / sizeof *buffers; i++) xr_hal_buffer_free(buffers[i]);
  xr_hal_executable_destroy(s->exe);
  free(s);
}

static xr_status_t alloc_zeroed(xr_hal_device_t *device, size_t bytes, xr_hal_buffer_t **out) {
  bytes = bytes < 64 ? 64 : (bytes + 7) / 8 * 8;
  xr_status_t st = xr_hal_buffer_alloc(device, bytes, out);
  uint32_t zero = 0;
  if (st == XR_OK) st = xr_hal_buffer_fill(*out, 0, bytes, &zero, sizeof zero);
  return st;
}

static void launch(sc_device_t *s, int which, int64_t items, size_t arg_count) {
  uint32_t block = XR_SC_DEV_THREADS;
  int64_t grid = (items + block - 1) / block;
  s->run[which] = items > 0;
  s->dispatch[which] = (xr_hal_dispatch_t){
      .grid = {(uint32_t)(grid > 0 ? grid : 1), 1, 1},
      .block = {block, 1, 1},
      .args = s->args[which],
      .arg_count = arg_count,
  };
}

static xr_hal_kernel_arg_t params_arg(sc_device_t *s, int which) {
  if (s->backend->params_in_buffer) return xr_hal_arg_buffer(s->params[which]);
  return xr_hal_arg_bytes(&s->q[which], sizeof s->q[which]);
}

static xr_status_t sc_prepare(const backend_t *backend, const xr_op_plan_t *plan,
                              xr_hal_device_t *device, const xr_tensor_t *tensors,
                              void **out_state) {
  const xr_scatter_problem_t *p = plan->problem;
  sc_device_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  s->backend = backend;
  static const char *const names[LAUNCHES] = {"xr_sc_gather", NULL, "xr_sc_mask_count",
                                              "xr_sc_mask_scan", "xr_sc_mask_write"};
  const char *main_name = p->kind == XR_SC_GATHER    ? "xr_sc_gather"
                          : p->kind == XR_SC_SCATTER ? "xr_sc_scatter"
                                                     : "xr_sc_nonzero";
  xr_status_t st = backend->build(device, backend->source, NULL, &s->exe);
  for (int k = 0; k < LAUNCHES && st == XR_OK; k++)
    st = xr_hal_kernel_lookup(s->exe, k == MAIN ? main_name : names[k], &s->kernel[k]);
  xr_sc_device_params(p, tensors, false, backend->target_items, &s->q[0]);
  if (p->copy_src >= 0) xr_sc_device_params(p, tensors, true, 0, &s->q[1]);
  const xr_sc_dev_params_t *q = &s->q[0];
  size_t extent = (size_t)(p->dst_extent > 0 ? p->dst_extent : 1);
  bool scratch = q->scratch;
  if (st == XR_OK) st = alloc_zeroed(device, 64, &s->dummy);
  if (st == XR_OK) st = alloc_zeroed(device, 8, &s->count);
  if (st == XR_OK && p->mask >= 0)
    st = alloc_zeroed(device, 8 * (size_t)(p->mask_numel ? p->mask_numel : 1), &s->positions);
  if (st == XR_OK && p->mask >= 0)
    st = alloc_zeroed(device, 8 * (size_t)(q->mask_chunks ? q->mask_chunks : 1), &s->chunk_base);
  if (st == XR_OK && scratch) st = alloc_zeroed(device, 8 * extent, &s->acc);
  if (st == XR_OK && scratch) st = alloc_zeroed(device, 4 * extent, &s->cnt);
  for (int k = 0; k < 2 && st == XR_OK && backend->params_in_buffer; k++) {
    st = xr_hal_buffer_alloc(device, sizeof s->q[k], &s->params[k]);
    if (st == XR_OK) st = xr_hal_buffer_write(s->params[k], 0, &s->q[k], sizeof s->q[k]);
  }
  if (st != XR_OK) {
    sc_release(s);
    return xr_error_prefix(st, "%s: ", backend->name);
  }
  xr_hal_buffer_t *dummy = s->dummy;
  xr_hal_buffer_t *dst = tensors[p->dst.tensor].buffer;
  xr_hal_buffer_t *src = p->src.tensor >= 0 ? tensors[p->src.tensor].buffer : dummy;
  xr_hal_buffer_t *index[XR_SC_DEV_SLOTS];
  for (int k = 0; k < XR_SC_DEV_SLOTS; k++)
    index[k] = k < p->slot_count && p->slots[k].source == XR_SC_INDEX
                   ? tensors[p->slots[k].tensor].buffer
                   : dummy;
  xr_hal_buffer_t *positions = s->positions ? s->positions : dummy;
  xr_hal_buffer_t *mask = p->mask >= 0 ? tensors[p->mask].buffer : dummy;
  /* the copy: a gather from self, no slots */
  if (p->copy_src >= 0) {
    xr_hal_kernel_arg_t *a = s->args[COPY];
    a[0] = params_arg(s, 1);
    a[1] = xr_hal_arg_buffer(dst);
    a[2] = xr_hal_arg_buffer(tensors[p->copy_src].buffer);
    for (int k = 0; k < 4; k++) a[3 + k] = xr_hal_arg_buffer(dummy);
    a[7] = xr_hal_arg_buffer(dummy);
    a[8] = xr_hal_arg_buffer(s->count);
    launch(s, COPY, s->q[1].numel, 9);
  }
  if (p->mask >= 0 && p->mask_numel > 0) {
    xr_hal_kernel_arg_t *a = s->args[MASK_COUNT];
    a[0] = params_arg(s, 0);
    a[1] = xr_hal_arg_buffer(mask);
    a[2] = xr_hal_arg_buffer(s->chunk_base);
    launch(s, MASK_COUNT, q->mask_chunks, 3);
    a = s->args[MASK_SCAN];
    a[0] = params_arg(s, 0);
    a[1] = xr_hal_arg_buffer(s->chunk_base);
    a[2] = xr_hal_arg_buffer(s->count);
    launch(s, MASK_SCAN, 1, 3);
    a = s->args[MASK_WRITE];
    a[0] = params_arg(s, 0);
    a[1] = xr_hal_arg_buffer(mask);
    a[2] = xr_hal_arg_buffer(s->chunk_base);
    a[3] = xr_hal_arg_buffer(positions);
    launch(s, MASK_WRITE, q->mask_chunks, 4);
  }
  xr_hal_kernel_arg_t *a = s->args[MAIN];
  size_t n = 0;
  a[n++] = params_arg(s, 0);
  a[n++] = xr_hal_arg_buffer(dst);
  if (p->kind != XR_SC_NONZERO) {
    a[n++] = xr_hal_arg_buffer(src);
    for (int k = 0; k < 4; k++) a[n++] = xr_hal_arg_buffer(index[k]);
  }
  a[n++] = xr_hal_arg_buffer(positions);
  a[n++] = xr_hal_arg_buffer(s->count);
  if (p->kind == XR_SC_SCATTER) {
    a[n++] = xr_hal_arg_buffer(s->acc ? s->acc : dummy);
    a[n++] = xr_hal_arg_buffer(s->cnt ? s->cnt : dummy);
  }
  int64_t items = p->kind == XR_SC_GATHER    ? q->numel
                  : p->kind == XR_SC_SCATTER ? (q->numel > 0 ? q->nf * q->chunks : 0)
                                             : q->shape[0];
  launch(s, MAIN, items, n);
  *out_state = s;
  return XR_OK;
}

static xr_status_t sc_enqueue(void *state, xr_hal_stream_t *stream) {
  sc_device_t *s = state;
  xr_status_t st = XR_OK;
  static const int order[LAUNCHES] = {COPY, MASK_COUNT, MASK_SCAN, MASK_WRITE, MAIN};
  for (int k = 0; k < LAUNCHES && st == XR_OK; k++)
    if (s->run[order[k]])
      st = xr_hal_stream_dispatch(stream, s->kernel[order[k]], &s->dispatch[order[k]]);
  return st;
}

static xr_status_t sc_supports(const backend_t *b, const xr_op_plan_t *plan,
                               xr_hal_device_t *device) {
  (void)device;
  return xr_sc_device_supports(plan, b->label);
}

XR_DEVICE_IMPL(xr_opencl_scatter, "opencl.scatter", "opencl", opencl, sc_supports, sc_prepare,
               sc_enqueue, sc_release)
XR_DEVICE_IMPL(xr_gpu_scatter, "gpu.scatter", "gpu", gpu, sc_supports, sc_prepare, sc_enqueue,
               sc_release)
