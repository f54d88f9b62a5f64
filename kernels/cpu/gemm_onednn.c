/* cpu.onednn_matmul: the GEMM family on oneDNN's matmul primitive (fp32; bf16, on AMX or
 * AVX512-BF16 where the CPU has them). Every operand is described with its own strides, batch
 * dims included (a broadcast batch dim is a dim of 1), so transposed weights and views need no
 * copies and the output is written through the op's strides. The epilogue maps onto oneDNN:
 * alpha -> output scales; beta * C with C a [N] row and alpha = beta = 1 -> the bias argument;
 * any other C -> copied into the output before the run, then the sum post-op with scale beta.
 * The primitive is created in prepare(); enqueue() queues one host function that executes it.
 *
 * Not here (supports() says so and cpu.gemm_blocked runs them): fp16 (oneDNN 2.6 has no fp16
 * matmul on x86 CPUs), fp8 (_scaled_mm), float64, layouts for which oneDNN only offers its
 * slow reference implementation, more than 10 batch dims. */
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/onednn.h"
#include "kernels/family.h"
#include "kernels/gemm.h"

#ifdef XR_HAVE_DNNL_H

typedef struct onednn_descs {
  dnnl_memory_desc_t a, b, bias, dst;
  bool bias_arg;   /* C goes in as the bias argument */
  bool sum;        /* C is copied into dst first, then accumulated with the sum post-op */
} onednn_descs_t;

static dnnl_data_type_t dnnl_dtype(xr_dtype_t d) {
  switch (d) {
    case XR_DTYPE_F32: return dnnl_f32;
    case XR_DTYPE_BF16: return dnnl_bf16;
    case XR_DTYPE_F16: return dnnl_f16;
    default: return dnnl_data_type_undef;
  }
}

/* Dims and strides of [batch..., rows, cols] for one operand; a batch dim it broadcasts over
 * becomes a dim of 1. A size-1 dim gets the extent of the dims inside it as its stride, so that
 * oneDNN sees the plain row-major layout its fast kernels want (its stride is never used). */
static xr_status_t operand_desc(const xr_dnnl_t *d, const xr_gemm_problem_t *p,
                                const xr_gemm_operand_t *o, int64_t rows, int64_t cols,
                                xr_dtype_t dtype, dnnl_memory_desc_t *out) {
  int nd = p->batch_rank + 2;
  dnnl_dims_t dims, strides;
  for (int i = 0; i < p->batch_rank; i++) {
    dims[i] = o->batch_strides[i] == 0 ? 1 : p->batch_shape[i];
    strides[i] = o->batch_strides[i];
  }
  dims[nd - 2] = rows;
  dims[nd - 1] = cols;
  strides[nd - 2] = o->row_stride;
  strides[nd - 1] = o->col_stride;
  for (int i = nd - 1; i >= 0; i--) {
    if (dims[i] == 1) {
      dnnl_dim_t extent = 1; /* of the dims inside this one */
      for (int j = i + 1; j < nd; j++)
        if (strides[j] * dims[j] > extent) extent = strides[j] * dims[j];
      strides[i] = extent;
    } else if (strides[i] <= 0) {
      return xr_error(XR_UNIMPLEMENTED, "an operand has a zero or negative stride");
    }
  }
  dnnl_status_t st = d->dnnl_memory_desc_init_by_strides(out, nd, dims, dnnl_dtype(dtype), strides);
  if (st != dnnl_success)
    return xr_error(XR_UNIMPLEMENTED, "dnnl_memory_desc_init_by_strides: %s",
                    xr_dnnl_status_name(d, st));
  return XR_OK;
}

static bool c_is_row(const xr_gemm_problem_t *p) {
  if (p->c.row_stride != 0) return false;
  for (int i = 0; i < p->batch_rank; i++)
    if (p->c.batch_strides[i] != 0) return false;
  return true;
}

/* Describes the problem and creates the primitive descriptor; UNIMPLEMENTED with the reason
 * when oneDNN cannot run it (well). */
static xr_status_t create_pd(const xr_op_plan_t *plan, const xr_dnnl_t *d, onednn_descs_t *descs,
                             dnnl_primitive_desc_t *out_pd) {
  const xr_gemm_problem_t *p = plan->problem;
  const char *op = plan->op->name;
  if (p->scale_a.index >= 0 || p->a_dtype != p->b_dtype || p->a_dtype != p->out_dtype)
    return xr_error(XR_UNIMPLEMENTED, "cpu.onednn_matmul: %s: mixed or fp8 dtypes (%s x %s -> %s)",
                    op, xr_dtype_name(p->a_dtype), xr_dtype_name(p->b_dtype),
                    xr_dtype_name(p->out_dtype));
  if (dnnl_dtype(p->a_dtype) == dnnl_data_type_undef)
    return xr_error(XR_UNIMPLEMENTED, "cpu.onednn_matmul: %s: %s is not a oneDNN matmul dtype", op,
                    xr_dtype_name(p->a_dtype));
  if (p->batch_rank + 2 > DNNL_MAX_NDIMS)
    return xr_error(XR_UNIMPLEMENTED, "cpu.onednn_matmul: %s: %d batch dims (oneDNN takes %d)", op,
                    p->batch_rank, DNNL_MAX_NDIMS - 2);
  if (p->M == 0 || p->N == 0 || p->K == 0)
    return xr_error(XR_UNIMPLEMENTED, "cpu.onednn_matmul: %s: empty product (M, N or K is 0)", op);
  memset(descs, 0, sizeof *descs);
  xr_status_t st;
  if ((st = operand_desc(d, p, &p->a, p->M, p->K, p->a_dtype, &descs->a)) ||
      (st = operand_desc(d, p, &p->b, p->K, p->N, p->b_dtype, &descs->b)) ||
      (st = operand_desc(d, p, &p->out, p->M, p->N, p->out_dtype, &descs->dst)))
    return xr_error_prefix(st, "cpu.onednn_matmul: %s: ", op);
  bool has_c = p->c.index >= 0 && p->beta != 0;
  descs->bias_arg = has_c && p->alpha == 1 && p->beta == 1 && c_is_row(p) && p->c.col_stride != 0;
  descs->sum = has_c && !descs->bias_arg;
  if (descs->bias_arg) {
    xr_gemm_operand_t row = p->c;
    if ((st = operand_desc(d, p, &row, 1, p->N, p->c_dtype, &descs->bias)))
      return xr_error_prefix(st, "cpu.onednn_matmul: %s: bias: ", op);
  }

  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t post_ops = NULL;
  dnnl_status_t ds = d->dnnl_primitive_attr_create(&attr);
  float alpha = (float)p->alpha;
  if (ds == dnnl_success && p->alpha != 1)
    ds = d->dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha);
  if (ds == dnnl_success && descs->sum) {
    ds = d->dnnl_post_ops_create(&post_ops);
    if (ds == dnnl_success) ds = d->dnnl_post_ops_append_sum(post_ops, (float)p->beta);
    if (ds == dnnl_success) ds = d->dnnl_primitive_attr_set_post_ops(attr, post_ops);
  }
  dnnl_matmul_desc_t md;
  if (ds == dnnl_success)
    ds = d->dnnl_matmul_desc_init(&md, &descs->a, &descs->b, descs->bias_arg ? &descs->bias : NULL,
                                  &descs->dst);
  dnnl_primitive_desc_t pd = NULL;
  if (ds == dnnl_success) ds = d->dnnl_primitive_desc_create(&pd, &md, attr, d->engine, NULL);
  if (post_ops) d->dnnl_post_ops_destroy(post_ops);
  if (attr) d->dnnl_primitive_attr_destroy(attr);
  if (ds != dnnl_success)
    return xr_error(XR_UNIMPLEMENTED, "cpu.onednn_matmul: %s: %s %s: oneDNN matmul: %s", op,
                    xr_dtype_name(p->a_dtype), p->a_dtype == XR_DTYPE_F16 ? "(no fp16 matmul in this oneDNN on this CPU)" : "",
                    xr_dnnl_status_name(d, ds));
  const char *impl = "";
  d->dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  if (!impl || !strncmp(impl, "ref", 3)) {
    d->dnnl_primitive_desc_destroy(pd);
    return xr_error(XR_UNIMPLEMENTED,
                    "cpu.onednn_matmul: %s: oneDNN offers only its reference implementation for "
                    "this dtype/layout",
                    op);
  }
  *out_pd = pd;
  return XR_OK;
}

static xr_status_t onednn_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_dnnl_t *d;
  xr_status_t st = xr_dnnl_get(&d);
  if (st != XR_OK) return xr_error_prefix(XR_UNIMPLEMENTED, "cpu.onednn_matmul: ");
  onednn_descs_t descs;
  dnnl_primitive_desc_t pd;
  if ((st = create_pd(plan, d, &descs, &pd)) != XR_OK) return st;
  d->dnnl_primitive_desc_destroy(pd);
  return XR_OK;
}

typedef struct onednn_state {
  const xr_dnnl_t *d;
  const xr_gemm_problem_t *p;
  dnnl_primitive_t primitive;
  dnnl_stream_t stream;
  dnnl_memory_t memory[4];
  dnnl_exec_arg_t args[4];
  int arg_count;
  bool sum;
  uint8_t *c, *out; /* first elements of C and the output (sum path) */
  char algorithm[96]; /* oneDNN's implementation: "oneDNN 2.6.3 brg:avx512_core_amx" */
} onednn_state_t;

/* out[b][m][n] = C[b][m][n] (same dtype), before the sum post-op adds beta * it. */
static void copy_c(const onednn_state_t *s) {
  const xr_gemm_problem_t *p = s->p;
  size_t esize = xr_dtype_size(p->out_dtype);
  for (int64_t bi = 0; bi < p->batch; bi++) {
    int64_t co = xr_gemm_offset(&p->c, p, bi), oo = xr_gemm_offset(&p->out, p, bi);
    for (int64_t m = 0; m < p->M; m++)
      for (int64_t n = 0; n < p->N; n++)
        memcpy(s->out + (size_t)(oo + m * p->out.row_stride + n * p->out.col_stride) * esize,
               s->c + (size_t)(co + m * p->c.row_stride + n * p->c.col_stride) * esize, esize);
  }
}

static void onednn_run(void *ctx) {
  onednn_state_t *s = ctx;
  if (s->sum) copy_c(s);
  /* A failure leaves the output poisoned, which the check reports. */
  if (s->d->dnnl_primitive_execute(s->primitive, s->stream, s->arg_count, s->args) == dnnl_success)
    s->d->dnnl_stream_wait(s->stream);
}

static void onednn_release(void *state) {
  onednn_state_t *s = state;
  if (!s) return;
  for (int i = 0; i < 4; i++)
    if (s->memory[i]) s->d->dnnl_memory_destroy(s->memory[i]);
  if (s->primitive) s->d->dnnl_primitive_destroy(s->primitive);
  if (s->stream) s->d->dnnl_stream_destroy(s->stream);
  free(s);
}

static xr_status_t onednn_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                  const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_gemm_problem_t *p = plan->problem;
  const xr_dnnl_t *d;
  xr_status_t st = xr_dnnl_get(&d);
  if (st != XR_OK) return st;
  onednn_descs_t descs;
  dnnl_primitive_desc_t pd;
  if ((st = create_pd(plan, d, &descs, &pd)) != XR_OK) return st;
  onednn_state_t *s = calloc(1, sizeof *s);
  if (!s) {
    d->dnnl_primitive_desc_destroy(pd);
    return xr_error(XR_RESOURCE_EXHAUSTED, "cpu.onednn_matmul: out of memory");
  }
  s->d = d;
  s->p = p;
  s->sum = descs.sum;
  xr_dnnl_impl_name(d, pd, s->algorithm, sizeof s->algorithm);
  dnnl_status_t ds = d->dnnl_primitive_create(&s->primitive, pd);
  d->dnnl_primitive_desc_destroy(pd);
  if (ds == dnnl_success) ds = d->dnnl_stream_create(&s->stream, d->engine, dnnl_stream_default_flags);
  const struct {
    int role, arg;
    const dnnl_memory_desc_t *md;
  } bind[] = {{XR_GEMM_A, DNNL_ARG_SRC, &descs.a},
              {XR_GEMM_B, DNNL_ARG_WEIGHTS, &descs.b},
              {XR_GEMM_OUT, DNNL_ARG_DST, &descs.dst},
              {XR_GEMM_C, DNNL_ARG_BIAS, descs.bias_arg ? &descs.bias : NULL}};
  int idx[XR_GEMM_OPERANDS];
  xr_gemm_bindings(p, idx);
  for (int i = 0; ds == dnnl_success && st == XR_OK && i < 4; i++) {
    int t = idx[bind[i].role];
    if (t < 0) continue;
    void *base;
    if ((st = xr_tensor_host(&tensors[t], &base)) != XR_OK) break;
    uint8_t *first = (uint8_t *)base + (size_t)tensors[t].offset * xr_dtype_size(tensors[t].dtype);
    if (bind[i].role == XR_GEMM_C) s->c = first;
    if (bind[i].role == XR_GEMM_OUT) s->out = first;
    if (!bind[i].md) continue; /* C on the sum path: copied, not an argument */
    ds = d->dnnl_memory_create(&s->memory[s->arg_count], bind[i].md, d->engine, first);
    s->args[s->arg_count] = (dnnl_exec_arg_t){bind[i].arg, s->memory[s->arg_count]};
    if (ds == dnnl_success) s->arg_count++;
  }
  if (st == XR_OK && ds != dnnl_success)
    st = xr_error(XR_DEVICE_ERROR, "cpu.onednn_matmul: %s: creating the primitive: %s",
                  plan->op->name, xr_dnnl_status_name(d, ds));
  if (st != XR_OK) {
    onednn_release(s);
    return st;
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t onednn_enqueue(void *state, xr_hal_stream_t *stream) {
  return xr_hal_stream_enqueue_host(stream, onednn_run, state);
}

static const char *onednn_algorithm(void *state) { return ((onednn_state_t *)state)->algorithm; }

const xr_kernel_impl_t xr_gemm_onednn_impl = {
    .name = "cpu.onednn_matmul",
    .driver = "cpu",
    .supports = onednn_supports,
    .prepare = onednn_prepare,
    .enqueue = onednn_enqueue,
    .release = onednn_release,
    .algorithm = onednn_algorithm,
};

#else /* no dnnl.h at build time */

static xr_status_t onednn_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)plan, (void)device;
  return xr_error(XR_UNIMPLEMENTED, "cpu.onednn_matmul: built without oneDNN's headers (dnnl.h)");
}

const xr_kernel_impl_t xr_gemm_onednn_impl = {
    .name = "cpu.onednn_matmul",
    .driver = "cpu",
    .supports = onednn_supports,
};
#endif
