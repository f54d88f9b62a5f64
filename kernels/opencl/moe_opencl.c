/* OpenCL implementation of every MoE op (kernels/opencl/moe.cl): the deterministic two-pass
 * sort (vLLM align, CK sorting, and the fused path's own routing), the tiled grouped GEMMs with
 * the fused activation, the top-k reduction, and the router. moe_forward's layer runs whole:
 * mxfp4 or fp8 expert weights (decoded in the GEMMs' tile loads; fp8 times the float32 scale of
 * the weight's block or expert), biases, silu or swigluoai; the layer's format, row map and
 * flags are run-time arguments, as the dtypes are. */
#include <stdlib.h>
#include <string.h>

#include "kernels/family.h"
#include "kernels/moe.h"
#include "kernels/opencl/sources.h"

enum { TS = 16, CHUNK = 64, MAX_ARGS = 64 };

/* An argument list whose by-value bytes live as long as the list. */
typedef struct args {
  xr_hal_kernel_arg_t a[MAX_ARGS];
  int32_t i32[MAX_ARGS];
  int64_t i64[MAX_ARGS];
  size_t n;
} args_t;

static void arg_buf(args_t *g, xr_hal_buffer_t *b) { g->a[g->n++] = xr_hal_arg_buffer(b); }
static void arg_int(args_t *g, int64_t v) {
  g->i32[g->n] = (int32_t)v;
  g->a[g->n] = xr_hal_arg_bytes(&g->i32[g->n], sizeof(int32_t));
  g->n++;
}
static void arg_float(args_t *g, double v) {
  float f = (float)v;
  memcpy(&g->i32[g->n], &f, sizeof f);
  g->a[g->n] = xr_hal_arg_bytes(&g->i32[g->n], sizeof(float));
  g->n++;
}
static void arg_long(args_t *g, int64_t v) {
  g->i64[g->n] = v;
  g->a[g->n] = xr_hal_arg_bytes(&g->i64[g->n], sizeof(int64_t));
  g->n++;
}

static uint32_t groups(int64_t n, int64_t per) { return (uint32_t)((n + per - 1) / per > 0 ? (n + per - 1) / per : 1); }

typedef struct cl_state {
  const xr_moe_problem_t *p;
  xr_tensor_t t[16];
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *count, *scan, *scatter, *gemm1, *gemm2, *reduce, *topk;
  uint32_t scan_width;
  int64_t numel, nchunks;
  /* scratch */
  xr_hal_buffer_t *counts, *starts;
  xr_hal_buffer_t *sorted, *expert_ids, *num_valid; /* the fused path's own sort */
  int64_t sorted_len, blocks_len;
  xr_hal_buffer_t *H, *Y, *mask, *route_ids, *route_w;
} cl_state_t;

static const xr_tensor_t *T(const cl_state_t *s, int i) { return &s->t[i]; }

/* A routing source: expert ids [M, topk] (int32 or int64) and, for CK, the weights. */
typedef struct route_src {
  xr_hal_buffer_t *ids;
  int64_t off, s0, s1;
  int wide;
  xr_hal_buffer_t *w;
  int wdt;
  int64_t w_off, w_s0, w_s1;
} route_src_t;

/* A sort's outputs: contiguous 1-D int32 ranges (and fp32 weights for CK). */
typedef struct sort_dst {
  xr_hal_buffer_t *sorted, *sorted_w, *expert_ids, *num_valid;
  int64_t sorted_off, sorted_len, sw_off, eid_off, blocks_len, nv_off, nv_len;
} sort_dst_t;

static xr_status_t dispatch(xr_hal_stream_t *stream, xr_hal_kernel_t *k, uint32_t gx, uint32_t gy,
                            uint32_t bx, uint32_t by, const args_t *g) {
  xr_hal_dispatch_t d = {.grid = {gx, gy, 1}, .block = {bx, by, 1}, .args = g->a, .arg_count = g->n};
  return xr_hal_stream_dispatch(stream, k, &d);
}

static xr_status_t run_sort(cl_state_t *s, xr_hal_stream_t *stream, const route_src_t *r,
                            const sort_dst_t *o, int64_t E, int64_t block, int ck) {
  const xr_moe_problem_t *p = s->p;
  args_t g = {.n = 0};
  arg_buf(&g, r->ids), arg_long(&g, r->off), arg_long(&g, r->s0), arg_long(&g, r->s1);
  arg_int(&g, r->wide), arg_int(&g, p->topk), arg_long(&g, s->numel), arg_int(&g, E);
  arg_int(&g, CHUNK), arg_int(&g, s->nchunks), arg_buf(&g, s->counts);
  xr_status_t st = dispatch(stream, s->count, groups(s->nchunks, 64), 1, 64, 1, &g);
  if (st != XR_OK) return st;
  g.n = 0;
  arg_buf(&g, s->counts), arg_int(&g, s->nchunks), arg_int(&g, E), arg_int(&g, block);
  arg_int(&g, ck), arg_long(&g, s->numel), arg_int(&g, p->M), arg_int(&g, p->topk);
  arg_buf(&g, s->starts), arg_buf(&g, o->sorted), arg_long(&g, o->sorted_off);
  arg_long(&g, o->sorted_len), arg_buf(&g, o->sorted_w), arg_long(&g, o->sw_off);
  arg_buf(&g, o->expert_ids), arg_long(&g, o->blocks_len), arg_long(&g, o->eid_off);
  arg_buf(&g, o->num_valid), arg_long(&g, o->nv_off), arg_long(&g, o->nv_len);
  if ((st = dispatch(stream, s->scan, 1, 1, s->scan_width, 1, &g)) != XR_OK) return st;
  g.n = 0;
  arg_buf(&g, r->ids), arg_long(&g, r->off), arg_long(&g, r->s0), arg_long(&g, r->s1);
  arg_int(&g, r->wide), arg_int(&g, p->topk), arg_long(&g, s->numel), arg_int(&g, E);
  arg_int(&g, CHUNK), arg_int(&g, s->nchunks), arg_buf(&g, s->counts), arg_buf(&g, s->starts);
  arg_int(&g, ck), arg_buf(&g, o->sorted), arg_long(&g, o->sorted_off), arg_long(&g, o->sorted_len);
  arg_buf(&g, r->w), arg_int(&g, r->wdt), arg_long(&g, r->w_off), arg_long(&g, r->w_s0);
  arg_long(&g, r->w_s1), arg_buf(&g, o->sorted_w), arg_long(&g, o->sw_off);
  return dispatch(stream, s->scatter, groups(s->nchunks, 64), 1, 64, 1, &g);
}

/* Sorted rows as the GEMM kernels read them. */
typedef struct sorted_rows {
  xr_hal_buffer_t *sorted, *expert_ids, *num_valid, *sorted_w;
  int64_t s_off, e_off, nv_off, sw_off, sorted_len, blocks_len, block;
  int ck;
} sorted_rows_t;

static void arg_rows(args_t *g, const cl_state_t *s, const sorted_rows_t *r) {
  const xr_moe_problem_t *p = s->p;
  arg_buf(g, r->sorted), arg_long(g, r->s_off), arg_buf(g, r->expert_ids), arg_long(g, r->e_off);
  arg_buf(g, r->num_valid), arg_long(g, r->nv_off), arg_long(g, r->sorted_len);
  arg_long(g, r->blocks_len), arg_int(g, r->ck), arg_int(g, p->M), arg_int(g, p->topk);
  arg_int(g, p->E), arg_int(g, r->block), arg_long(g, s->numel), arg_int(g, p->N);
  arg_int(g, p->K), arg_int(g, (int)p->dtype);
}

static void arg_tensor3(args_t *g, const xr_tensor_t *t) {
  arg_buf(g, t->buffer), arg_long(g, t->offset);
  for (int d = 0; d < 3; d++) arg_long(g, d < t->rank ? t->strides[d] : 0);
}

/* An expert weight's format as moe.cl's ld_w reads it: fmt (W_PLAIN, W_MXFP4, W_FP8) and the
 * fp8 dtype, the scales (mxfp4 [E, rows, cols / 32]; fp8 [E, ceil(rows / bn), ceil(cols / bk)]
 * or [E]) or a stand-in, and the rows and columns per scale (fp8; 1 for one per expert, whose
 * rank-1 view has no row or column stride). */
static void arg_format(args_t *g, const cl_state_t *s, int scale) {
  const xr_moe_problem_t *p = s->p;
  bool fp8 = p->weights == XR_MOE_W_FP8;
  arg_int(g, p->weights == XR_MOE_W_MXFP4 ? 1 : fp8 ? 2 : 0);
  arg_int(g, fp8 ? (int)T(s, p->w1)->dtype : 0);
  if (scale >= 0 && p->weights != XR_MOE_W_PLAIN) {
    arg_tensor3(g, T(s, scale));
  } else {
    arg_buf(g, s->counts);
    for (int i = 0; i < 4; i++) arg_long(g, 0);
  }
  arg_long(g, fp8 && p->block_n ? p->block_n : 1), arg_long(g, fp8 && p->block_k ? p->block_k : 1);
}

/* has_bias, a bias [E, rows] (buffer, dtype, offset, strides), or a stand-in. */
static void arg_bias(args_t *g, const cl_state_t *s, int bias) {
  arg_int(g, bias >= 0);
  const xr_tensor_t *b = bias >= 0 ? T(s, bias) : NULL;
  arg_buf(g, b ? b->buffer : s->counts), arg_int(g, b ? (int)b->dtype : 0);
  arg_long(g, b ? b->offset : 0), arg_long(g, b ? b->strides[0] : 0), arg_long(g, b ? b->strides[1] : 0);
}

/* scale_mode as moe.cl documents it; `weights` is a route source's weight tensor. */
static xr_status_t run_gemm1(cl_state_t *s, xr_hal_stream_t *stream, const sorted_rows_t *r,
                             int scale_mode, const route_src_t *w, int out_mode) {
  const xr_moe_problem_t *p = s->p;
  args_t g = {.n = 0};
  arg_rows(&g, s, r);
  const xr_tensor_t *x = T(s, p->hidden);
  arg_buf(&g, x->buffer), arg_long(&g, x->offset), arg_long(&g, x->strides[0]), arg_long(&g, x->strides[1]);
  arg_tensor3(&g, T(s, p->w1));
  arg_format(&g, s, p->w1_scale);
  int64_t gate_step = xr_moe_gate_row(p, 1) - xr_moe_gate_row(p, 0);
  arg_int(&g, gate_step), arg_int(&g, xr_moe_up_row(p, 0));
  arg_bias(&g, s, p->w1_bias);
  arg_int(&g, p->act == XR_MOE_ACT_SWIGLUOAI), arg_float(&g, p->swiglu_alpha);
  arg_float(&g, p->swiglu_limit);
  arg_int(&g, scale_mode), arg_buf(&g, w->w), arg_int(&g, w->wdt), arg_long(&g, w->w_off);
  arg_long(&g, w->w_s0), arg_long(&g, w->w_s1), arg_buf(&g, r->sorted_w), arg_long(&g, r->sw_off);
  arg_int(&g, out_mode), arg_buf(&g, s->H);
  const xr_tensor_t *o = T(s, p->out);
  arg_buf(&g, o->buffer), arg_long(&g, o->offset);
  for (int d = 0; d < 3; d++) arg_long(&g, d < o->rank ? o->strides[d] : 0);
  return dispatch(stream, s->gemm1, groups(p->N, TS), groups(r->sorted_len, TS), TS, TS, &g);
}

static xr_status_t run_gemm2(cl_state_t *s, xr_hal_stream_t *stream, const sorted_rows_t *r,
                             int a_mode, int scale_mode, const route_src_t *w) {
  const xr_moe_problem_t *p = s->p;
  args_t g = {.n = 0};
  arg_rows(&g, s, r);
  arg_int(&g, a_mode), arg_buf(&g, s->H);
  arg_tensor3(&g, T(s, p->hidden));
  arg_tensor3(&g, T(s, p->w2));
  arg_format(&g, s, p->w2_scale);
  arg_bias(&g, s, p->w2_bias);
  arg_int(&g, scale_mode), arg_buf(&g, w->w), arg_int(&g, w->wdt), arg_long(&g, w->w_off);
  arg_long(&g, w->w_s0), arg_long(&g, w->w_s1), arg_buf(&g, r->sorted_w), arg_long(&g, r->sw_off);
  arg_buf(&g, s->Y), arg_buf(&g, s->mask);
  return dispatch(stream, s->gemm2, groups(p->K, TS), groups(r->sorted_len, TS), TS, TS, &g);
}

static xr_status_t run_reduce(cl_state_t *s, xr_hal_stream_t *stream, int accumulate) {
  const xr_moe_problem_t *p = s->p;
  const xr_tensor_t *o = T(s, p->out);
  args_t g = {.n = 0};
  arg_buf(&g, s->Y), arg_buf(&g, s->mask), arg_int(&g, p->M), arg_int(&g, p->topk);
  arg_int(&g, p->K), arg_int(&g, (int)p->dtype), arg_buf(&g, o->buffer);
  arg_long(&g, o->offset), arg_long(&g, o->strides[0]), arg_long(&g, o->strides[1]);
  arg_int(&g, accumulate);
  return dispatch(stream, s->reduce, groups(p->M * p->K, 256), 1, 256, 1, &g);
}

static xr_status_t zero_mask(cl_state_t *s, xr_hal_stream_t *stream) {
  uint8_t zero = 0;
  return xr_hal_stream_fill(stream, s->mask, 0, xr_hal_buffer_size(s->mask), &zero, 1);
}

static route_src_t route_from(const cl_state_t *s) {
  const xr_moe_problem_t *p = s->p;
  route_src_t r = {.ids = s->counts, .w = s->counts};
  if (p->topk_ids >= 0) {
    const xr_tensor_t *t = T(s, p->topk_ids);
    r.ids = t->buffer, r.off = t->offset, r.s0 = t->strides[0];
    r.s1 = t->rank > 1 ? t->strides[1] : 0, r.wide = t->dtype == XR_DTYPE_I64;
  }
  if (p->topk_weights >= 0) {
    const xr_tensor_t *w = T(s, p->topk_weights);
    r.w = w->buffer, r.wdt = (int)w->dtype, r.w_off = w->offset;
    r.w_s0 = w->strides[0], r.w_s1 = w->strides[1];
  }
  return r;
}

static xr_status_t run_topk(cl_state_t *s, xr_hal_stream_t *stream, const route_src_t *dst,
                            const xr_tensor_t *tei) {
  const xr_moe_problem_t *p = s->p;
  const xr_tensor_t *l = T(s, p->logits);
  args_t g = {.n = 0};
  arg_buf(&g, l->buffer), arg_int(&g, (int)l->dtype), arg_long(&g, l->offset);
  arg_long(&g, l->strides[0]), arg_long(&g, l->strides[1]), arg_int(&g, p->M), arg_int(&g, p->E);
  arg_int(&g, p->topk), arg_int(&g, p->renormalize), arg_buf(&g, dst->w), arg_int(&g, dst->wdt);
  arg_long(&g, dst->w_off), arg_long(&g, dst->w_s0), arg_long(&g, dst->w_s1), arg_buf(&g, dst->ids);
  arg_int(&g, dst->wide), arg_long(&g, dst->off), arg_long(&g, dst->s0), arg_long(&g, dst->s1);
  arg_int(&g, tei != NULL), arg_buf(&g, tei ? tei->buffer : s->counts);
  arg_int(&g, tei && tei->dtype == XR_DTYPE_I64), arg_long(&g, tei ? tei->offset : 0);
  arg_long(&g, tei ? tei->strides[0] : 0), arg_long(&g, tei ? tei->strides[1] : 0);
  return dispatch(stream, s->topk, groups(p->M, 64), 1, 64, 1, &g);
}

/* Fused experts (and moe_forward after its router): own vLLM-style sort with block TS, GEMM-1
 * into H, GEMM-2 into Y, reduce into out. */
static xr_status_t run_fused(cl_state_t *s, xr_hal_stream_t *stream) {
  const xr_moe_problem_t *p = s->p;
  route_src_t r = route_from(s);
  xr_status_t st;
  if (p->kind == XR_MOE_FORWARD) {
    r = (route_src_t){.ids = s->route_ids, .s0 = p->topk, .s1 = 1, .w = s->route_w, .w_s0 = p->topk, .w_s1 = 1};
    if ((st = run_topk(s, stream, &r, NULL)) != XR_OK) return st;
  }
  sort_dst_t o = {.sorted = s->sorted, .sorted_w = s->counts, .expert_ids = s->expert_ids,
                  .num_valid = s->num_valid, .sorted_len = s->sorted_len,
                  .blocks_len = s->blocks_len, .nv_len = 1};
  sorted_rows_t rows = {.sorted = s->sorted, .expert_ids = s->expert_ids, .num_valid = s->num_valid,
                        .sorted_w = s->counts, .sorted_len = s->sorted_len,
                        .blocks_len = s->blocks_len, .block = TS, .ck = 0};
  if ((st = run_sort(s, stream, &r, &o, p->E, TS, 0)) || (st = zero_mask(s, stream)) ||
      (st = run_gemm1(s, stream, &rows, p->weight_on_input ? 1 : 0, &r, 0)) ||
      (st = run_gemm2(s, stream, &rows, 0, p->weight_on_input ? 0 : 3, &r)))
    return st;
  return run_reduce(s, stream, 0);
}

static sorted_rows_t rows_from(const cl_state_t *s) {
  const xr_moe_problem_t *p = s->p;
  sorted_rows_t r = {.sorted = T(s, p->sorted_ids)->buffer, .s_off = T(s, p->sorted_ids)->offset,
                     .expert_ids = T(s, p->expert_ids)->buffer, .e_off = T(s, p->expert_ids)->offset,
                     .num_valid = T(s, p->num_valid)->buffer, .nv_off = T(s, p->num_valid)->offset,
                     .sorted_w = s->counts, .sorted_len = p->sorted_len, .blocks_len = p->blocks_len,
                     .block = p->block, .ck = 1};
  if (p->sorted_weights >= 0)
    r.sorted_w = T(s, p->sorted_weights)->buffer, r.sw_off = T(s, p->sorted_weights)->offset;
  return r;
}

static xr_status_t cl_enqueue(void *state, xr_hal_stream_t *stream) {
  cl_state_t *s = state;
  const xr_moe_problem_t *p = s->p;
  route_src_t r = route_from(s);
  xr_status_t st;
  switch (p->kind) {
    case XR_MOE_ALIGN:
    case XR_MOE_SORTING: {
      bool ck = p->kind == XR_MOE_SORTING;
      sort_dst_t o = {.sorted = T(s, p->sorted_ids)->buffer, .sorted_off = T(s, p->sorted_ids)->offset,
                      .sorted_len = p->sorted_len, .sorted_w = s->counts,
                      .expert_ids = T(s, p->expert_ids)->buffer, .eid_off = T(s, p->expert_ids)->offset,
                      .blocks_len = p->blocks_len, .num_valid = T(s, p->num_valid)->buffer,
                      .nv_off = T(s, p->num_valid)->offset, .nv_len = T(s, p->num_valid)->shape[0]};
      if (ck) o.sorted_w = T(s, p->sorted_weights)->buffer, o.sw_off = T(s, p->sorted_weights)->offset;
      if ((st = run_sort(s, stream, &r, &o, p->E, p->block, ck)) != XR_OK) return st;
      if (ck && p->moe_buf >= 0) {
        const xr_tensor_t *b = T(s, p->moe_buf);
        size_t es = xr_dtype_size(b->dtype), n = 1;
        for (int32_t d = 0; d < b->rank; d++) n *= (size_t)b->shape[d];
        uint8_t zero = 0;
        return xr_hal_stream_fill(stream, b->buffer, (size_t)b->offset * es, n * es, &zero, 1);
      }
      return XR_OK;
    }
    case XR_MOE_TOPK_SOFTMAX: {
      route_src_t dst = r;
      return run_topk(s, stream, &dst, T(s, p->token_expert_indices));
    }
    case XR_MOE_FUSED:
    case XR_MOE_FORWARD: return run_fused(s, stream);
    case XR_MOE_STAGE1: {
      sorted_rows_t rows = rows_from(s);
      return run_gemm1(s, stream, &rows, p->sorted_weights >= 0 ? 2 : 0, &r, 1);
    }
    case XR_MOE_STAGE2: {
      sorted_rows_t rows = rows_from(s);
      if ((st = zero_mask(s, stream)) ||
          (st = run_gemm2(s, stream, &rows, 1, p->sorted_weights >= 0 ? 2 : 0, &r)))
        return st;
      return run_reduce(s, stream, 1);
    }
  }
  return xr_error(XR_INTERNAL, "opencl.moe: unknown problem kind");
}

/* The elements of a tensor as one contiguous range (1-D with unit stride, or any contiguous
 * tensor). */
static bool contiguous(const xr_tensor_spec_t *t) {
  int64_t s = 1;
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    if (t->shape[d] != 1 && t->strides[d] != s) return false;
    s *= t->shape[d];
  }
  return true;
}

static xr_status_t cl_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_moe_problem_t *p = plan->problem;
  xr_status_t st = xr_moe_check_supported(plan, "opencl.moe");
  if (st != XR_OK) return st;
  const int outs[] = {p->sorted_ids, p->sorted_weights, p->expert_ids, p->num_valid, p->moe_buf};
  for (size_t i = 0; i < sizeof outs / sizeof *outs; i++)
    if (outs[i] >= 0 && !contiguous(plan->inputs[outs[i]]))
      return xr_error(XR_UNIMPLEMENTED, "opencl.moe: sorted ids, weights, block experts and moe_buf must be contiguous");
  if ((p->kind == XR_MOE_STAGE1 || p->kind == XR_MOE_STAGE2) && p->block % TS)
    return xr_error(XR_UNIMPLEMENTED, "opencl.moe: block_m %lld is not a multiple of %d",
                    (long long)p->block, TS);
  if (p->M * p->topk > INT32_MAX / 2 || p->E > 65536)
    return xr_error(XR_UNIMPLEMENTED, "opencl.moe: %lld routed rows over %lld experts exceed 32-bit ids",
                    (long long)(p->M * p->topk), (long long)p->E);
  return XR_OK;
}

static void cl_release(void *state) {
  cl_state_t *s = state;
  if (!s) return;
  xr_hal_buffer_t *bufs[] = {s->counts, s->starts, s->sorted, s->expert_ids, s->num_valid,
                             s->H,      s->Y,      s->mask,   s->route_ids,  s->route_w};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) xr_hal_buffer_free(bufs[i]);
  if (s->exe) xr_hal_executable_destroy(s->exe);
  free(s);
}

static xr_status_t scratch(xr_hal_device_t *device, size_t bytes, xr_hal_buffer_t **out) {
  return xr_hal_buffer_alloc(device, bytes ? bytes : 4, out);
}

static xr_status_t cl_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                              const xr_tensor_t *tensors, void **out_state) {
  const xr_moe_problem_t *p = plan->problem;
  size_t n = plan->input_count + plan->return_count;
  if (n > 16) return xr_error(XR_INVALID_ARGUMENT, "%s: %zu tensors, at most 16", plan->op->name, n);
  cl_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  s->p = p;
  memcpy(s->t, tensors, n * sizeof *tensors);
  s->numel = p->M * p->topk;
  s->nchunks = (s->numel + CHUNK - 1) / CHUNK;
  xr_hal_device_properties_t props;
  xr_status_t st = xr_hal_device_properties(device, &props);
  s->scan_width = props.max_work_group_size >= 256 ? 256 : (uint32_t)props.max_work_group_size;
  if (st == XR_OK) st = xr_opencl_build(device, "moe.cl", NULL, &s->exe);
  struct {
    const char *name;
    xr_hal_kernel_t **k;
  } kernels[] = {{"moe_count", &s->count},     {"moe_scan", &s->scan},     {"moe_scatter", &s->scatter},
                 {"moe_gemm1", &s->gemm1},     {"moe_gemm2", &s->gemm2},   {"moe_reduce", &s->reduce},
                 {"moe_topk_softmax", &s->topk}};
  for (size_t i = 0; st == XR_OK && i < sizeof kernels / sizeof *kernels; i++)
    st = xr_hal_kernel_lookup(s->exe, kernels[i].name, kernels[i].k);
  size_t E = (size_t)(p->E > 0 ? p->E : 1), pairs = (size_t)s->numel;
  if (st == XR_OK) st = scratch(device, sizeof(int32_t) * (size_t)(s->nchunks > 0 ? s->nchunks : 1) * E, &s->counts);
  if (st == XR_OK) st = scratch(device, sizeof(int32_t) * (2 * E + 1), &s->starts);
  bool fused = p->kind == XR_MOE_FUSED || p->kind == XR_MOE_FORWARD;
  if (fused) {
    s->sorted_len = s->numel + p->E * (TS - 1);
    s->blocks_len = (s->sorted_len + TS - 1) / TS;
    size_t rows = (size_t)s->sorted_len;
    if (st == XR_OK) st = scratch(device, sizeof(int32_t) * rows, &s->sorted);
    if (st == XR_OK) st = scratch(device, sizeof(int32_t) * (size_t)s->blocks_len, &s->expert_ids);
    if (st == XR_OK) st = scratch(device, sizeof(int32_t), &s->num_valid);
    if (st == XR_OK) st = scratch(device, sizeof(float) * rows * (size_t)p->N, &s->H);
  }
  if (p->kind == XR_MOE_FORWARD) {
    if (st == XR_OK) st = scratch(device, sizeof(int32_t) * pairs, &s->route_ids);
    if (st == XR_OK) st = scratch(device, sizeof(float) * pairs, &s->route_w);
  }
  if (fused || p->kind == XR_MOE_STAGE2) {
    if (st == XR_OK) st = scratch(device, sizeof(float) * pairs * (size_t)p->K, &s->Y);
    if (st == XR_OK) st = scratch(device, sizeof(int32_t) * pairs, &s->mask);
  }
  if (!s->H && st == XR_OK) st = scratch(device, 4, &s->H);
  if (!s->Y && st == XR_OK) st = scratch(device, 4, &s->Y);
  if (!s->mask && st == XR_OK) st = scratch(device, 4, &s->mask);
  if (st != XR_OK) {
    cl_release(s);
    return xr_error_prefix(st, "opencl.moe %s: ", plan->op->name);
  }
  *out_state = s;
  return XR_OK;
}

const xr_kernel_impl_t xr_moe_opencl = {
    .name = "opencl.moe",
    .driver = "opencl",
    .supports = cl_supports,
    .prepare = cl_prepare,
    .enqueue = cl_enqueue,
    .release = cl_release,
};
