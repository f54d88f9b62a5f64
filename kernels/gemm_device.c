/* The GEMM family's own kernels on OpenCL (kernels/opencl/gemm.cl, "opencl.gemm_tiled": every
 * layout and dtype the family has but float64, block-scaled _scaled_mm included; the fallback
 * behind CLBlast) and on cuda and hip (kernels/gpu/gemm.cu compiled at run time for the device by
 * NVRTC / hiprtc, "gpu.gemm_tiled" serving both drivers), both over kernels/gemm_args.h's block.
 * This file is the pattern for every device implementation (docs/gpu.md):
 *   supports()  says UNIMPLEMENTED, with the reason, for what the kernels cannot run;
 *   prepare()   builds the executable once (cached on disk), picks the kernel, fills the
 *               by-value argument block and the dispatch;
 *   enqueue()   is a single xr_hal_stream_dispatch, no allocation;
 *   release()   destroys the executable.
 * gemm.cl reads per-batch offsets from a table the host writes (CLBlast's batches take the same
 * offsets); gemm.cu walks the batch dims itself and has typed kernels, an M == 1 kernel and the
 * _scaled_mm kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/family.h"
#include "kernels/gemm.h"
#include "kernels/gemm_args.h"
#include "kernels/gemm_device.h"
#include "kernels/gpu/sources.h"
#include "kernels/opencl/sources.h"

_Static_assert(sizeof(long) == 8, "the device argument blocks need a 64-bit long");
_Static_assert(XR_MAX_RANK <= XR_GEMM_MAX_BATCH_RANK, "the argument block holds every batch dimension");
/* OpenCL guarantees a kernel 1024 bytes of arguments (CL_DEVICE_MAX_PARAMETER_SIZE): the tiled
 * kernel takes 8 buffers and the block. */
_Static_assert(sizeof(xr_gemm_args_t) + 8 * 8 <= 1024,
               "the GEMM kernel's arguments exceed what every OpenCL device takes");

/* The block of an operand at element `offset` of its tensor. */
static void operand_args(const xr_gemm_problem_t *p, const xr_gemm_operand_t *o, int64_t offset,
                         xr_gemm_operand_args_t *out) {
  out->offset = offset;
  out->row_stride = o->row_stride;
  out->col_stride = o->col_stride;
  for (int d = 0; d < p->batch_rank; d++) out->batch_strides[d] = o->batch_strides[d];
}

/* The argument block of problem p over `tensors` (the same for both backends). */
static void gemm_args(const xr_gemm_problem_t *p, const xr_tensor_t *tensors, xr_gemm_args_t *q) {
  memset(q, 0, sizeof *q);
  q->M = p->M;
  q->N = p->N;
  q->K = p->K;
  q->batch = p->batch;
  q->batch_rank = p->batch_rank;
  for (int d = 0; d < p->batch_rank; d++) q->batch_shape[d] = p->batch_shape[d];
  operand_args(p, &p->a, tensors[p->a.index].offset, &q->a);
  operand_args(p, &p->b, tensors[p->b.index].offset, &q->b);
  operand_args(p, &p->out, tensors[p->out.index].offset, &q->out);
  if (p->c.index >= 0) operand_args(p, &p->c, tensors[p->c.index].offset, &q->c);
  q->alpha = (float)p->alpha;
  q->beta = (float)p->beta;
  q->has_c = p->c.index >= 0;
  q->a_dtype = p->a_dtype;
  q->b_dtype = p->b_dtype;
  q->c_dtype = p->c_dtype;
  q->out_dtype = p->out_dtype;
  if (p->scale_a.index >= 0) {
    q->scale_a_offset = tensors[p->scale_a.index].offset;
    q->scale_a_stride = p->scale_a.stride;
    q->has_scale_a = !p->block; /* block-scaled: the scales are read with the codes */
  }
  if (p->scale_b.index >= 0) {
    q->scale_b_offset = tensors[p->scale_b.index].offset;
    q->scale_b_stride = p->scale_b.stride;
    q->has_scale_b = !p->block;
  }
  if (p->scale_result >= 0) {
    q->scale_result_offset = tensors[p->scale_result].offset;
    q->has_scale_result = 1;
  }
  q->block = p->block;
  q->scale_dtype = p->block ? p->scale_dtype : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* OpenCL                                                                                     */

/* Whether gemm.cl reads dtype (f4e2m1x2 and f8e8m0 only as the operands and scales of
 * block-scaled products). */
static bool opencl_dtype(xr_dtype_t dtype) {
  switch (dtype) {
    case XR_DTYPE_F32:
    case XR_DTYPE_F16:
    case XR_DTYPE_BF16:
    case XR_DTYPE_F8E4M3FN:
    case XR_DTYPE_F8E5M2:
    case XR_DTYPE_F8E4M3FNUZ:
    case XR_DTYPE_F8E5M2FNUZ:
    case XR_DTYPE_F4E2M1X2:
    case XR_DTYPE_F8E8M0: return true;
    default: return false;
  }
}

void xr_gemm_cl_release(xr_gemm_cl_t *cl) {
  xr_hal_buffer_free(cl->batch_offsets);
  xr_hal_executable_destroy(cl->executable);
  free(cl->host_offsets);
  memset(cl, 0, sizeof *cl);
}

xr_status_t xr_gemm_cl_init(const xr_op_plan_t *plan, xr_hal_device_t *device,
                            const xr_tensor_t *tensors, xr_gemm_cl_t *out) {
  const xr_gemm_problem_t *p = plan->problem;
  memset(out, 0, sizeof *out);
  out->p = p;
  int idx[XR_GEMM_OPERANDS];
  xr_gemm_bindings(p, idx);
  for (int i = 0; i < XR_GEMM_OPERANDS; i++)
    if (idx[i] >= 0) out->buffer[i] = tensors[idx[i]].buffer;
  gemm_args(p, tensors, &out->args);
  size_t bytes = sizeof(int64_t) * 4 * (size_t)(p->batch ? p->batch : 1);
  out->host_offsets = calloc(1, bytes);
  if (!out->host_offsets) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory", plan->op->name);
  for (int64_t b = 0; b < p->batch; b++) {
    out->host_offsets[4 * b] = xr_gemm_offset(&p->a, p, b);
    out->host_offsets[4 * b + 1] = xr_gemm_offset(&p->b, p, b);
    out->host_offsets[4 * b + 2] = p->c.index >= 0 ? xr_gemm_offset(&p->c, p, b) : 0;
    out->host_offsets[4 * b + 3] = xr_gemm_offset(&p->out, p, b);
  }
  xr_status_t st = xr_hal_buffer_alloc(device, bytes, &out->batch_offsets);
  if (st == XR_OK) st = xr_hal_buffer_write(out->batch_offsets, 0, out->host_offsets, bytes);
  if (st == XR_OK) st = xr_opencl_build(device, "gemm.cl", NULL, &out->executable);
  if (st != XR_OK) {
    xr_gemm_cl_release(out);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  return XR_OK;
}

static xr_status_t opencl_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_gemm_problem_t *p = plan->problem;
  xr_dtype_t dtypes[] = {p->a_dtype, p->b_dtype, p->c_dtype, p->out_dtype};
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (!opencl_dtype(dtypes[i]))
      return xr_error(XR_UNIMPLEMENTED, "opencl.gemm_tiled: %s: %s operands are not supported",
                      plan->op->name, xr_dtype_name(dtypes[i]));
  if ((p->N + XR_GEMM_TILE_N - 1) / XR_GEMM_TILE_N > UINT32_MAX ||
      (p->M + XR_GEMM_TILE_M - 1) / XR_GEMM_TILE_M > UINT32_MAX || p->batch > UINT32_MAX)
    return xr_error(XR_UNIMPLEMENTED, "opencl.gemm_tiled: %s: grid too large", plan->op->name);
  return XR_OK;
}

typedef struct opencl_state {
  xr_gemm_cl_t cl;
  xr_hal_kernel_t *kernel;
  xr_hal_kernel_arg_t args[9];
  xr_hal_dispatch_t dispatch;
  bool empty; /* M, N or the batch is 0: nothing to launch */
} opencl_state_t;

static void opencl_release(void *state) {
  opencl_state_t *s = state;
  if (!s) return;
  xr_gemm_cl_release(&s->cl);
  free(s);
}

static xr_status_t opencl_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                  const xr_tensor_t *tensors, void **out_state) {
  const xr_gemm_problem_t *p = plan->problem;
  opencl_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "opencl.gemm_tiled: out of memory");
  xr_status_t st = xr_gemm_cl_init(plan, device, tensors, &s->cl);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->cl.executable, "xr_gemm_tiled", &s->kernel);
  if (st != XR_OK) {
    opencl_release(s);
    return st;
  }
  s->empty = p->M == 0 || p->N == 0 || p->batch == 0;
  xr_hal_buffer_t **b = s->cl.buffer;
  xr_hal_buffer_t *any = b[XR_GEMM_A]; /* stands in for absent operands, never read */
  static const int order[] = {XR_GEMM_A,       XR_GEMM_B,       XR_GEMM_C,           XR_GEMM_OUT,
                              XR_GEMM_SCALE_A, XR_GEMM_SCALE_B, XR_GEMM_SCALE_RESULT};
  size_t n = 0;
  for (size_t i = 0; i < sizeof order / sizeof *order; i++)
    s->args[n++] = xr_hal_arg_buffer(b[order[i]] ? b[order[i]] : any);
  s->args[n++] = xr_hal_arg_buffer(s->cl.batch_offsets);
  s->args[n++] = xr_hal_arg_bytes(&s->cl.args, sizeof s->cl.args);
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {(uint32_t)((p->N + XR_GEMM_TILE_N - 1) / XR_GEMM_TILE_N),
               (uint32_t)((p->M + XR_GEMM_TILE_M - 1) / XR_GEMM_TILE_M), (uint32_t)p->batch},
      .block = {XR_GEMM_THREADS_X, XR_GEMM_THREADS_Y, 1},
      .args = s->args,
      .arg_count = n,
  };
  *out_state = s;
  return XR_OK;
}

static xr_status_t opencl_enqueue(void *state, xr_hal_stream_t *stream) {
  opencl_state_t *s = state;
  return s->empty ? XR_OK : xr_hal_stream_dispatch(stream, s->kernel, &s->dispatch);
}

const xr_kernel_impl_t xr_gemm_opencl_tiled_impl = {
    .name = "opencl.gemm_tiled",
    .driver = "opencl",
    .supports = opencl_supports,
    .prepare = opencl_prepare,
    .enqueue = opencl_enqueue,
    .release = opencl_release,
};

/* ------------------------------------------------------------------------------------------ */
/* CUDA and HIP                                                                               */

/* Largest grid dimension y/z on both vendors (x allows 2^31 - 1). */
#define MAX_GRID_YZ 65535u

static bool gpu_dtype(xr_dtype_t dtype) {
  return dtype == XR_DTYPE_F32 || dtype == XR_DTYPE_F16 || dtype == XR_DTYPE_BF16;
}

static bool fp8_dtype(xr_dtype_t dtype) {
  return dtype == XR_DTYPE_F8E4M3FN || dtype == XR_DTYPE_F8E5M2 ||
         dtype == XR_DTYPE_F8E4M3FNUZ || dtype == XR_DTYPE_F8E5M2FNUZ;
}

static bool scaled_product(const xr_gemm_problem_t *p) {
  return p->scale_a.index >= 0 || p->scale_b.index >= 0 || p->scale_result >= 0;
}

/* aten::_scaled_mm: fp8 operands (any mix of the four), float32 scales, and a bias and an
 * output the kernels store in float (f32, f16, bf16, fp8); block-scaled (the _block kernels):
 * fp8 or f4e2m1x2 operands with e8m0 / e4m3fn block scales. */
static xr_status_t scaled_supports(const xr_op_plan_t *plan, const xr_gemm_problem_t *p) {
  bool fp4 = p->a_dtype == XR_DTYPE_F4E2M1X2 && p->b_dtype == XR_DTYPE_F4E2M1X2;
  if (p->block && !fp4 && (!fp8_dtype(p->a_dtype) || !fp8_dtype(p->b_dtype)))
    return xr_error(XR_UNIMPLEMENTED, "%s: %s x %s: the block-scaled GPU kernels take fp8 or "
                    "f4e2m1x2 operands", plan->op->name, xr_dtype_name(p->a_dtype),
                    xr_dtype_name(p->b_dtype));
  if (p->block && p->scale_dtype != XR_DTYPE_F8E8M0 && p->scale_dtype != XR_DTYPE_F8E4M3FN)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s block scales: the block-scaled GPU kernels read "
                    "f8e8m0 or f8e4m3fn", plan->op->name, xr_dtype_name(p->scale_dtype));
  if (!p->block && (!fp8_dtype(p->a_dtype) || !fp8_dtype(p->b_dtype)))
    return xr_error(XR_UNIMPLEMENTED, "%s: %s x %s: the scaled GPU kernels take fp8 operands",
                    plan->op->name, xr_dtype_name(p->a_dtype), xr_dtype_name(p->b_dtype));
  if (p->scale_a.index < 0 || p->scale_b.index < 0)
    return xr_error(XR_UNIMPLEMENTED, "%s: the scaled GPU kernels need scale_a and scale_b",
                    plan->op->name);
  if (!gpu_dtype(p->out_dtype) && !fp8_dtype(p->out_dtype))
    return xr_error(XR_UNIMPLEMENTED, "%s: %s output: the scaled GPU kernels store f32, f16, "
                    "bf16 or fp8", plan->op->name, xr_dtype_name(p->out_dtype));
  if (p->c.index >= 0 && !gpu_dtype(p->c_dtype) && !fp8_dtype(p->c_dtype))
    return xr_error(XR_UNIMPLEMENTED, "%s: %s bias: the scaled GPU kernels read f32, f16, bf16 "
                    "or fp8", plan->op->name, xr_dtype_name(p->c_dtype));
  return XR_OK;
}

static xr_status_t gemm_gpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_gemm_problem_t *p = plan->problem;
  if (scaled_product(p)) {
    xr_status_t status = scaled_supports(plan, p);
    if (status != XR_OK) return status;
  } else if (!gpu_dtype(p->a_dtype) || p->b_dtype != p->a_dtype || p->out_dtype != p->a_dtype) {
    return xr_error(XR_UNIMPLEMENTED, "%s: %s x %s -> %s: the GPU kernels take f32, f16 or bf16 "
                    "operands of one dtype (fp8 through aten::_scaled_mm)", plan->op->name,
                    xr_dtype_name(p->a_dtype), xr_dtype_name(p->b_dtype),
                    xr_dtype_name(p->out_dtype));
  } else if (p->c.index >= 0 && plan->inputs[p->c.index]->dtype != p->out_dtype) {
    return xr_error(XR_UNIMPLEMENTED, "%s: the added tensor is %s, the output %s", plan->op->name,
                    xr_dtype_name(plan->inputs[p->c.index]->dtype), xr_dtype_name(p->out_dtype));
  }
  if ((uint64_t)(p->M + XR_GEMM_TILE_M - 1) / XR_GEMM_TILE_M > MAX_GRID_YZ) {
    return xr_error(XR_UNIMPLEMENTED, "%s: M = %lld exceeds the tiled kernel's grid (%u rows "
                    "of %d)", plan->op->name, (long long)p->M, MAX_GRID_YZ, XR_GEMM_TILE_M);
  }
  if ((uint64_t)(p->N + XR_GEMM_TILE_N - 1) / XR_GEMM_TILE_N > 0x7fffffffu) {
    return xr_error(XR_UNIMPLEMENTED, "%s: N = %lld exceeds the kernel's grid", plan->op->name,
                    (long long)p->N);
  }
  return XR_OK;
}

typedef struct gemm_gpu_state {
  xr_hal_executable_t *executable;
  xr_hal_kernel_t *kernel;
  xr_gemm_args_t params;
  xr_hal_kernel_arg_t args[8];
  xr_hal_dispatch_t dispatch;
  bool empty; /* M or N is 0: nothing to launch */
} gemm_gpu_state_t;

static const char *kernel_suffix(const xr_gemm_problem_t *p) {
  if (p->block) return "block";
  if (scaled_product(p)) return "scaled";
  return p->out_dtype == XR_DTYPE_F32 ? "f32" : p->out_dtype == XR_DTYPE_F16 ? "f16" : "bf16";
}

static void gemm_gpu_release(void *state) {
  gemm_gpu_state_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->executable);
  free(s);
}

static xr_status_t gemm_gpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                    const xr_tensor_t *tensors, void **out_state) {
  const xr_gemm_problem_t *p = plan->problem;
  gemm_gpu_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  gemm_args(p, tensors, &s->params);
  const xr_tensor_t *a = &tensors[p->a.index], *b = &tensors[p->b.index];
  const xr_tensor_t *out = &tensors[p->out.index];
  const xr_tensor_t *c = p->c.index >= 0 ? &tensors[p->c.index] : NULL;
  bool scaled = scaled_product(p);
  s->empty = p->M == 0 || p->N == 0 || p->batch == 0;
  if (s->empty) {
    *out_state = s;
    return XR_OK;
  }

  xr_hal_device_properties_t properties;
  xr_status_t status = xr_hal_device_properties(device, &properties);
  if (status == XR_OK) status = xr_gpu_build(device, "gemm.cu", NULL, &s->executable);
  if (status != XR_OK) {
    free(s);
    return xr_error_prefix(status, "%s: ", plan->op->name);
  }
  /* M == 1 with K contiguous in B (a decode-time linear): one warp per output column. The warp
   * width comes from the device (32 on NVIDIA, 64 on AMD Instinct). */
  uint32_t warp = properties.simd_width;
  bool gemv = p->M == 1 && p->b.row_stride == 1 && warp > 0 && XR_GEMV_THREADS % warp == 0;
  char name[64];
  snprintf(name, sizeof name, "%s_%s", gemv ? "xr_gemv" : "xr_gemm_tiled",
           kernel_suffix(p));
  status = xr_hal_kernel_lookup(s->executable, name, &s->kernel);
  if (status != XR_OK) {
    gemm_gpu_release(s);
    return xr_error_prefix(status, "%s: ", plan->op->name);
  }
  uint32_t batches = p->batch > MAX_GRID_YZ ? MAX_GRID_YZ : (uint32_t)p->batch;
  if (gemv) {
    uint32_t columns_per_block = XR_GEMV_THREADS / warp;
    s->dispatch = (xr_hal_dispatch_t){
        .grid = {(uint32_t)((p->N + columns_per_block - 1) / columns_per_block), 1, batches},
        .block = {XR_GEMV_THREADS, 1, 1}};
  } else {
    s->dispatch = (xr_hal_dispatch_t){
        .grid = {(uint32_t)((p->N + XR_GEMM_TILE_N - 1) / XR_GEMM_TILE_N),
                 (uint32_t)((p->M + XR_GEMM_TILE_M - 1) / XR_GEMM_TILE_M), batches},
        .block = {XR_GEMM_THREADS_X, XR_GEMM_THREADS_Y, 1}};
  }
  /* Without C the kernel never reads its pointer; any buffer of the device will do. */
  s->args[0] = xr_hal_arg_buffer(a->buffer);
  s->args[1] = xr_hal_arg_buffer(b->buffer);
  s->args[2] = xr_hal_arg_buffer(c ? c->buffer : out->buffer);
  s->args[3] = xr_hal_arg_buffer(out->buffer);
  if (scaled) {
    /* Without a result scale the kernel never reads its pointer. */
    int result = p->scale_result >= 0 ? p->scale_result : p->scale_a.index;
    s->args[4] = xr_hal_arg_buffer(tensors[p->scale_a.index].buffer);
    s->args[5] = xr_hal_arg_buffer(tensors[p->scale_b.index].buffer);
    s->args[6] = xr_hal_arg_buffer(tensors[result].buffer);
    s->args[7] = xr_hal_arg_bytes(&s->params, sizeof s->params);
    s->dispatch.arg_count = 8;
  } else {
    s->args[4] = xr_hal_arg_bytes(&s->params, sizeof s->params);
    s->dispatch.arg_count = 5;
  }
  s->dispatch.args = s->args;
  *out_state = s;
  return XR_OK;
}

static xr_status_t gemm_gpu_enqueue(void *state, xr_hal_stream_t *stream) {
  gemm_gpu_state_t *s = state;
  if (s->empty) return XR_OK;
  return xr_hal_stream_dispatch(stream, s->kernel, &s->dispatch);
}

const xr_kernel_impl_t xr_gemm_gpu_impl = {
    .name = "gpu.gemm_tiled",
    .driver = "gpu",
    .supports = gemm_gpu_supports,
    .prepare = gemm_gpu_prepare,
    .enqueue = gemm_gpu_enqueue,
    .release = gemm_gpu_release,
};

