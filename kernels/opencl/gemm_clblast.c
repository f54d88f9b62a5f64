/* opencl.clblast_gemm: the GEMM family on CLBlast (fp32; fp16 where the device has
 * cl_khr_fp16) straight on the HAL's OpenCL buffers and queue (xr_hal_buffer_native,
 * xr_hal_stream_native). CLBlast takes each operand as row- or column-major with a leading
 * dimension, optionally transposed, and batches as per-entry offsets, so transposed weights,
 * padded rows, views (element offsets: no sub-buffers) and batch broadcasting map directly.
 * CLBlast accumulates into its output, so beta * C first copies C there (gemm.cl's
 * xr_gemm_copy_addend, which also broadcasts a bias row). Anything else (bf16, fp8, layouts with
 * no unit stride, empty products) is UNIMPLEMENTED here and runs on opencl.gemm_tiled. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/family.h"
#include "kernels/opencl/clblast.h"
#include "kernels/gemm_device.h"

#ifdef XR_HAVE_CLBLAST_H

/* (r, c) at r * ld + c with ld >= cols: the row-major form of a [rows, cols] operand. */
static bool row_major_fit(int64_t rs, int64_t cs, int64_t rows, int64_t cols, size_t *ld) {
  if (cs != 1 && cols > 1) return false;
  int64_t l = rows > 1 ? rs : (cols > 1 ? cols : 1);
  if (l < (cols > 1 ? cols : 1)) return false;
  *ld = (size_t)l;
  return true;
}

/* How CLBlast reads a [rows, cols] operand in `layout`: plain or transposed, with its ld. */
static bool operand_fit(CLBlastLayout layout, const xr_gemm_operand_t *o, int64_t rows,
                        int64_t cols, CLBlastTranspose *trans, size_t *ld) {
  bool row = layout == CLBlastLayoutRowMajor;
  if (row ? row_major_fit(o->row_stride, o->col_stride, rows, cols, ld)
          : row_major_fit(o->col_stride, o->row_stride, cols, rows, ld)) {
    *trans = CLBlastTransposeNo;
    return true;
  }
  if (row ? row_major_fit(o->col_stride, o->row_stride, cols, rows, ld)
          : row_major_fit(o->row_stride, o->col_stride, rows, cols, ld)) {
    *trans = CLBlastTransposeYes;
    return true;
  }
  return false;
}

typedef struct clblast_call {
  CLBlastLayout layout;
  CLBlastTranspose a_trans, b_trans;
  size_t lda, ldb, ldc;
} clblast_call_t;

static bool device_has_fp16(const xr_clblast_t *lib, xr_hal_device_t *device) {
  void *id;
  if (xr_hal_device_native(device, &id) != XR_OK) return false;
  size_t size = 0;
  if (lib->clGetDeviceInfo((cl_device_id)id, CL_DEVICE_EXTENSIONS, 0, NULL, &size) != CL_SUCCESS)
    return false;
  char *ext = malloc(size + 1);
  bool found = false;
  if (ext && lib->clGetDeviceInfo((cl_device_id)id, CL_DEVICE_EXTENSIONS, size, ext, NULL) == CL_SUCCESS) {
    ext[size] = '\0';
    found = strstr(ext, "cl_khr_fp16") != NULL;
  }
  free(ext);
  return found;
}

static xr_status_t plan_call(const xr_op_plan_t *plan, xr_hal_device_t *device,
                             const xr_clblast_t **out_lib, clblast_call_t *call) {
  const xr_gemm_problem_t *p = plan->problem;
  const char *op = plan->op->name;
  const xr_clblast_t *lib;
  if (xr_clblast_get(&lib) != XR_OK) return xr_error_prefix(XR_UNIMPLEMENTED, "opencl.clblast_gemm: ");
  if (p->scale_a.index >= 0 || p->a_dtype != p->b_dtype || p->a_dtype != p->out_dtype ||
      (p->a_dtype != XR_DTYPE_F32 && p->a_dtype != XR_DTYPE_F16))
    return xr_error(XR_UNIMPLEMENTED, "opencl.clblast_gemm: %s: CLBlast runs fp32 and fp16 (got %s x %s -> %s)",
                    op, xr_dtype_name(p->a_dtype), xr_dtype_name(p->b_dtype), xr_dtype_name(p->out_dtype));
  if (p->a_dtype == XR_DTYPE_F16 &&
      (!lib->CLBlastHgemm || !lib->CLBlastHgemmBatched || !device_has_fp16(lib, device)))
    return xr_error(XR_UNIMPLEMENTED, "opencl.clblast_gemm: %s: fp16 needs cl_khr_fp16, which this device lacks", op);
  if (p->M == 0 || p->N == 0 || p->K == 0)
    return xr_error(XR_UNIMPLEMENTED, "opencl.clblast_gemm: %s: empty product", op);
  size_t ldc;
  if (row_major_fit(p->out.row_stride, p->out.col_stride, p->M, p->N, &ldc)) call->layout = CLBlastLayoutRowMajor;
  else if (row_major_fit(p->out.col_stride, p->out.row_stride, p->N, p->M, &ldc)) call->layout = CLBlastLayoutColMajor;
  else
    return xr_error(XR_UNIMPLEMENTED, "opencl.clblast_gemm: %s: the output has no unit stride", op);
  call->ldc = ldc;
  if (!operand_fit(call->layout, &p->a, p->M, p->K, &call->a_trans, &call->lda) ||
      !operand_fit(call->layout, &p->b, p->K, p->N, &call->b_trans, &call->ldb))
    return xr_error(XR_UNIMPLEMENTED, "opencl.clblast_gemm: %s: an operand has no unit stride", op);
  *out_lib = lib;
  return XR_OK;
}

static xr_status_t clblast_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  const xr_clblast_t *lib;
  clblast_call_t call;
  return plan_call(plan, device, &lib, &call);
}

typedef struct clblast_state {
  const xr_clblast_t *lib;
  clblast_call_t call;
  xr_gemm_cl_t cl;
  xr_hal_kernel_t *copy;        /* C -> output, when beta * C is added */
  cl_mem mem[3];                /* A, B, output */
  size_t *offsets[3];           /* per batch entry, elements */
  float *alphas, *betas;
  cl_half *half_alphas, *half_betas;
  char algorithm[128]; /* the routine called, for reports */
} clblast_state_t;

static void clblast_release(void *state) {
  clblast_state_t *s = state;
  if (!s) return;
  xr_gemm_cl_release(&s->cl);
  for (int i = 0; i < 3; i++) free(s->offsets[i]);
  free(s->alphas);
  free(s->betas);
  free(s->half_alphas);
  free(s->half_betas);
  free(s);
}

static xr_status_t clblast_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                   const xr_tensor_t *tensors, void **out_state) {
  const xr_gemm_problem_t *p = plan->problem;
  clblast_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "opencl.clblast_gemm: out of memory");
  xr_status_t st = plan_call(plan, device, &s->lib, &s->call);
  if (st == XR_OK) st = xr_gemm_cl_init(plan, device, tensors, &s->cl);
  /* CLBlast picks its direct or indirect GEMM kernel inside the routine, by its tuned size
   * threshold, and does not say which: the routine and the transposes are what is known. */
  snprintf(s->algorithm, sizeof s->algorithm, "CLBlast %cgemm%s (%s, %s)",
           p->out_dtype == XR_DTYPE_F16 ? 'H' : 'S', p->batch == 1 ? "" : "Batched",
           s->call.a_trans == CLBlastTransposeYes ? "A^T" : "A",
           s->call.b_trans == CLBlastTransposeYes ? "B^T" : "B");
  if (st == XR_OK && s->cl.buffer[XR_GEMM_C])
    st = xr_hal_kernel_lookup(s->cl.executable, "xr_gemm_copy_addend", &s->copy);
  size_t batch = (size_t)p->batch;
  const int roles[3] = {XR_GEMM_A, XR_GEMM_B, XR_GEMM_OUT};
  const int columns[3] = {0, 1, 3}; /* in xr_gemm_cl_t's host_offsets */
  size_t esize = xr_dtype_size(p->out_dtype);
  for (int i = 0; st == XR_OK && i < 3; i++) {
    void *mem;
    size_t byte_offset;
    st = xr_hal_buffer_native(s->cl.buffer[roles[i]], &mem, &byte_offset);
    s->mem[i] = mem;
    if (st == XR_OK && !(s->offsets[i] = calloc(batch, sizeof(size_t))))
      st = xr_error(XR_RESOURCE_EXHAUSTED, "opencl.clblast_gemm: out of memory");
    const int64_t base[3] = {s->cl.args.a.offset, s->cl.args.b.offset, s->cl.args.out.offset};
    for (size_t b = 0; st == XR_OK && b < batch; b++)
      s->offsets[i][b] = byte_offset / esize + (size_t)(base[i] + s->cl.host_offsets[4 * b + columns[i]]);
  }
  if (st == XR_OK) {
    s->alphas = calloc(batch, sizeof *s->alphas);
    s->betas = calloc(batch, sizeof *s->betas);
    s->half_alphas = calloc(batch, sizeof *s->half_alphas);
    s->half_betas = calloc(batch, sizeof *s->half_betas);
    if (!s->alphas || !s->betas || !s->half_alphas || !s->half_betas)
      st = xr_error(XR_RESOURCE_EXHAUSTED, "opencl.clblast_gemm: out of memory");
  }
  float beta = s->cl.buffer[XR_GEMM_C] ? (float)p->beta : 0.0f;
  for (size_t b = 0; st == XR_OK && b < batch; b++) {
    s->alphas[b] = (float)p->alpha;
    s->betas[b] = beta;
    s->half_alphas[b] = xr_f32_to_f16((float)p->alpha);
    s->half_betas[b] = xr_f32_to_f16(beta);
  }
  if (st != XR_OK) {
    clblast_release(s);
    return xr_error_prefix(st, "opencl.clblast_gemm: ");
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t clblast_enqueue(void *state, xr_hal_stream_t *stream) {
  clblast_state_t *s = state;
  const xr_gemm_problem_t *p = s->cl.p;
  xr_status_t st;
  if (s->copy) {
    xr_hal_kernel_arg_t args[] = {
        xr_hal_arg_buffer(s->cl.buffer[XR_GEMM_C]), xr_hal_arg_buffer(s->cl.buffer[XR_GEMM_OUT]),
        xr_hal_arg_buffer(s->cl.batch_offsets), xr_hal_arg_bytes(&s->cl.args, sizeof s->cl.args)};
    xr_hal_dispatch_t d = {.grid = {(uint32_t)((p->N + 15) / 16), (uint32_t)((p->M + 15) / 16),
                                    (uint32_t)p->batch},
                           .block = {16, 16, 1}, .args = args, .arg_count = 4};
    if ((st = xr_hal_stream_dispatch(stream, s->copy, &d)) != XR_OK) return st;
  }
  void *queue_handle;
  if ((st = xr_hal_stream_native(stream, &queue_handle)) != XR_OK) return st;
  cl_command_queue queue = queue_handle;
  const clblast_call_t *c = &s->call;
  size_t M = (size_t)p->M, N = (size_t)p->N, K = (size_t)p->K;
  CLBlastStatusCode code;
  bool half = p->out_dtype == XR_DTYPE_F16;
  if (p->batch == 1 && !half)
    code = s->lib->CLBlastSgemm(c->layout, c->a_trans, c->b_trans, M, N, K, s->alphas[0], s->mem[0],
                                s->offsets[0][0], c->lda, s->mem[1], s->offsets[1][0], c->ldb,
                                s->betas[0], s->mem[2], s->offsets[2][0], c->ldc, &queue, NULL);
  else if (p->batch == 1)
    code = s->lib->CLBlastHgemm(c->layout, c->a_trans, c->b_trans, M, N, K, s->half_alphas[0],
                                s->mem[0], s->offsets[0][0], c->lda, s->mem[1], s->offsets[1][0],
                                c->ldb, s->half_betas[0], s->mem[2], s->offsets[2][0], c->ldc,
                                &queue, NULL);
  else if (!half)
    code = s->lib->CLBlastSgemmBatched(c->layout, c->a_trans, c->b_trans, M, N, K, s->alphas,
                                       s->mem[0], s->offsets[0], c->lda, s->mem[1], s->offsets[1],
                                       c->ldb, s->betas, s->mem[2], s->offsets[2], c->ldc,
                                       (size_t)p->batch, &queue, NULL);
  else
    code = s->lib->CLBlastHgemmBatched(c->layout, c->a_trans, c->b_trans, M, N, K, s->half_alphas,
                                       s->mem[0], s->offsets[0], c->lda, s->mem[1], s->offsets[1],
                                       c->ldb, s->half_betas, s->mem[2], s->offsets[2], c->ldc,
                                       (size_t)p->batch, &queue, NULL);
  if (code != CLBlastSuccess)
    return xr_error(XR_DEVICE_ERROR, "opencl.clblast_gemm: %s x %s x %s: CLBlast status %d",
                    xr_dtype_name(p->a_dtype), c->a_trans == CLBlastTransposeYes ? "A^T" : "A",
                    c->b_trans == CLBlastTransposeYes ? "B^T" : "B", (int)code);
  return XR_OK;
}

static const char *clblast_algorithm(void *state) {
  return ((clblast_state_t *)state)->algorithm;
}

const xr_kernel_impl_t xr_gemm_clblast_impl = {
    .name = "opencl.clblast_gemm",
    .driver = "opencl",
    .supports = clblast_supports,
    .prepare = clblast_prepare,
    .enqueue = clblast_enqueue,
    .release = clblast_release,
    .algorithm = clblast_algorithm,
};

#else /* no clblast_c.h at build time */

static xr_status_t clblast_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)plan, (void)device;
  return xr_error(XR_UNIMPLEMENTED, "opencl.clblast_gemm: built without CLBlast's header (clblast_c.h)");
}

const xr_kernel_impl_t xr_gemm_clblast_impl = {
    .name = "opencl.clblast_gemm",
    .driver = "opencl",
    .supports = clblast_supports,
};
#endif
