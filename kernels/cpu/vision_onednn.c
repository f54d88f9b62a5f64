/* oneDNN's pooling, resampling and batch-normalization primitives for the pool and channel_norm
 * families, where they compute what PyTorch does (elsewhere cpu.pool and cpu.channel_norm run):
 *
 * cpu.onednn_pool: average pooling and its backward, when no divisor_override is given and,
 *     with count_include_pad, no ceil-mode window reaches past the padded input (oneDNN then
 *     counts the whole window); adaptive average pooling and its backward when every output
 *     cell averages an equal, disjoint window (in a multiple of out); nearest upsampling by
 *     whole factors where PyTorch's float source index is the integer one; bilinear
 *     upsampling without align_corners at the sizes' own scale (both half-pixel, clamped at
 *     the edges); bf16 resampling only over channels-last data (over NCHW cpu.pool's is
 *     faster). Not max pooling: oneDNN keeps its own workspace, not PyTorch's indices.
 * cpu.onednn_batch_norm: batch norm's training and eval forms and their backwards over
 *     channels-last data (channels innermost; over NCHW, cpu.channel_norm is faster). oneDNN
 *     reads and writes fp32 [C] statistics (mean, biased variance), scale and shift of its own;
 *     the traced vectors are converted into them before the primitive and out after it, where
 *     PyTorch's saved invstd and the running statistics' momentum update are computed.
 *
 * Operands are described with their own strides, so nothing is copied; fp16, which this oneDNN
 * does not compute on x86, and layouts for which it has only its reference kernel are left to
 * our kernels (supports() says so). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/channel_norm.h"
#include "kernels/cpu/onednn.h"
#include "kernels/dtype.h"
#include "kernels/pool.h"

#ifdef XR_HAVE_DNNL_H

static void *first_element(const xr_tensor_t *t, void *base) {
  return (uint8_t *)base + (size_t)t->offset * xr_dtype_size(t->dtype);
}

/* The first element of the tensor viewed by v (index >= 0). */
static xr_status_t view_data(const xr_tensor_t *tensors, const xr_view5_t *v, void **out) {
  void *base;
  xr_status_t st = xr_tensor_host(&tensors[v->index], &base);
  if (st == XR_OK) *out = first_element(&tensors[v->index], base);
  return st;
}

/* ---- cpu.onednn_pool ---- */

/* Average pooling's window in dim c (1: h, 2: w): kernel, stride and pads. */
static xr_status_t avg_window(const xr_pool_problem_t *p, int c, dnnl_dim_t *k, dnnl_dim_t *s,
                              dnnl_dim_t *pad_l, dnnl_dim_t *pad_r) {
  if (xr_pool_is_adaptive(p->kind)) {
    if (p->in[c] % p->out[c])
      return xr_error(XR_UNIMPLEMENTED, "adaptive cells of unequal sizes (%lld to %lld)",
                      (long long)p->in[c], (long long)p->out[c]);
    *k = *s = p->in[c] / p->out[c];
    *pad_l = *pad_r = 0;
    return XR_OK;
  }
  *k = p->kernel[c], *s = p->stride[c], *pad_l = p->pad[c];
  *pad_r = xr_dnnl_right_pad(p->in[c], p->out[c], *k, *s, *pad_l);
  if (p->count_include_pad && *pad_r > *pad_l)
    return xr_error(XR_UNIMPLEMENTED,
                    "a ceil-mode window past the padding, which PyTorch leaves out of the divisor");
  return XR_OK;
}

/* Whether nearest upsampling in dim c picks source i / factor for every destination i. */
static bool nearest_is_whole(const xr_pool_problem_t *p, int c) {
  if (p->out[c] % p->in[c]) return false;
  int64_t factor = p->out[c] / p->in[c];
  for (int64_t i = 0; i < p->out[c]; i++)
    if (xr_pool_nearest_source(p, c, i) != i / factor) return false;
  return true;
}

/* The primitive descriptor for p over mds (x, y as traced). */
static xr_status_t pool_pd(const xr_dnnl_t *d, const xr_pool_problem_t *p,
                           const dnnl_memory_desc_t mds[2], dnnl_primitive_desc_t *out) {
  char what[64];
  snprintf(what, sizeof what, "%s for %s",
           p->kind == XR_POOL_NEAREST || p->kind == XR_POOL_BILINEAR ? "resampling" : "pooling",
           xr_dtype_name(p->x.dtype));
  dnnl_status_t ds;
  if (p->kind == XR_POOL_NEAREST || p->kind == XR_POOL_BILINEAR) {
    bool nearest = p->kind == XR_POOL_NEAREST;
    for (int c = 3 - p->spatial; c < 3; c++) {
      if (nearest && !nearest_is_whole(p, c))
        return xr_error(XR_UNIMPLEMENTED, "nearest upsampling by other than a whole factor");
      if (!nearest &&
          (p->align_corners || xr_pool_source_scale(p, c, false) != (float)p->in[c] / p->out[c]))
        return xr_error(XR_UNIMPLEMENTED,
                        "bilinear upsampling with align_corners or a scale not the sizes'");
    }
    /* Measured (tools:vision_bench): oneDNN 2.6's bf16 resampling over plain layouts ran at
     * 0.47x (bilinear) and 0.97-1.00x (nearest) of cpu.pool's on SD VAE shapes; channels-last
     * and fp32 run faster on oneDNN's. */
    if (p->x.dtype == XR_DTYPE_BF16 && p->x.strides[1] != 1)
      return xr_error(XR_UNIMPLEMENTED, "bf16 resampling over a channels-first layout (cpu.pool's "
                                        "is faster)");
    if (!d->dnnl_resampling_forward_desc_init)
      return xr_error(XR_UNIMPLEMENTED, "this oneDNN lacks the resampling primitive");
    dnnl_resampling_desc_t rd;
    ds = d->dnnl_resampling_forward_desc_init(
        &rd, dnnl_forward_inference, nearest ? dnnl_resampling_nearest : dnnl_resampling_linear,
        NULL, &mds[0], &mds[1]);
    if (ds == dnnl_success) return xr_dnnl_pd_create(d, &rd, NULL, what, out);
    return xr_error(XR_UNIMPLEMENTED, "oneDNN %s: %s", what, xr_dnnl_status_name(d, ds));
  }
  if (p->kind == XR_POOL_MAX || p->kind == XR_POOL_MAX_BACKWARD)
    return xr_error(XR_UNIMPLEMENTED, "oneDNN's max pooling gives no indices");
  if (p->divisor) return xr_error(XR_UNIMPLEMENTED, "divisor_override");
  if (!d->dnnl_pooling_v2_forward_desc_init || !d->dnnl_pooling_v2_backward_desc_init)
    return xr_error(XR_UNIMPLEMENTED, "this oneDNN lacks the pooling primitives");
  dnnl_dims_t k, s, pad_l, pad_r, dilation = {0, 0};
  for (int i = 0; i < 2; i++) {
    xr_status_t st = avg_window(p, 1 + i, &k[i], &s[i], &pad_l[i], &pad_r[i]);
    if (st != XR_OK) return st;
  }
  /* Adaptive windows hold no padding, so both algorithms agree there. */
  dnnl_alg_kind_t alg = p->count_include_pad || xr_pool_is_adaptive(p->kind)
                            ? dnnl_pooling_avg_include_padding
                            : dnnl_pooling_avg_exclude_padding;
  dnnl_pooling_v2_desc_t fd, bd;
  bool backward = xr_pool_is_backward(p->kind);
  ds = d->dnnl_pooling_v2_forward_desc_init(
      &fd, backward ? dnnl_forward_training : dnnl_forward_inference, alg, &mds[0], &mds[1], s, k,
      dilation, pad_l, pad_r);
  if (ds == dnnl_success && !backward) return xr_dnnl_pd_create(d, &fd, NULL, what, out);
  if (ds == dnnl_success)
    ds = d->dnnl_pooling_v2_backward_desc_init(&bd, alg, &mds[0], &mds[1], s, k, dilation, pad_l,
                                               pad_r);
  if (ds == dnnl_success) return xr_dnnl_pd_create(d, &bd, &fd, what, out);
  return xr_error(XR_UNIMPLEMENTED, "oneDNN %s: %s", what, xr_dnnl_status_name(d, ds));
}

static xr_status_t pool_describe(const xr_op_plan_t *plan, const xr_dnnl_t **out_d,
                                 dnnl_primitive_desc_t *out_pd, dnnl_memory_desc_t mds[2]) {
  const xr_pool_problem_t *p = plan->problem;
  xr_status_t st = xr_dnnl_get(out_d);
  if (st == XR_OK) st = xr_dnnl_view_md(*out_d, &p->x, p->spatial, p->x.dtype, &mds[0]);
  if (st == XR_OK) st = xr_dnnl_view_md(*out_d, &p->y, p->spatial, p->y.dtype, &mds[1]);
  if (st == XR_OK) st = pool_pd(*out_d, p, mds, out_pd);
  if (st != XR_OK)
    return xr_error_prefix(XR_UNIMPLEMENTED, "cpu.onednn_pool: %s: ", plan->op->name);
  return XR_OK;
}

typedef struct onednn_op {
  const xr_dnnl_t *d;
  dnnl_stream_t stream;
  xr_dnnl_call_t call;
} onednn_op_t;

static void op_release(onednn_op_t *s) {
  xr_dnnl_call_release(s->d, &s->call);
  if (s->stream) s->d->dnnl_stream_destroy(s->stream);
}

static xr_status_t op_start(const xr_dnnl_t *d, dnnl_primitive_desc_t pd, onednn_op_t *s) {
  s->d = d;
  dnnl_status_t ds = d->dnnl_stream_create(&s->stream, d->engine, dnnl_stream_default_flags);
  if (ds != dnnl_success) {
    d->dnnl_primitive_desc_destroy(pd);
    return xr_error(XR_DEVICE_ERROR, "dnnl_stream_create: %s", xr_dnnl_status_name(d, ds));
  }
  return xr_dnnl_call_create(d, pd, &s->call);
}

static xr_status_t pool_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_dnnl_t *d;
  dnnl_primitive_desc_t pd;
  dnnl_memory_desc_t mds[2];
  xr_status_t st = pool_describe(plan, &d, &pd, mds);
  if (st == XR_OK) d->dnnl_primitive_desc_destroy(pd);
  return st;
}

static void pool_release(void *state) {
  if (!state) return;
  op_release(state);
  free(state);
}

static xr_status_t pool_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_pool_problem_t *p = plan->problem;
  const xr_dnnl_t *d;
  dnnl_primitive_desc_t pd;
  dnnl_memory_desc_t mds[2];
  xr_status_t st = pool_describe(plan, &d, &pd, mds);
  if (st != XR_OK) return st;
  onednn_op_t *s = calloc(1, sizeof *s);
  if (!s) {
    d->dnnl_primitive_desc_destroy(pd);
    return xr_error(XR_RESOURCE_EXHAUSTED, "cpu.onednn_pool: out of memory");
  }
  void *x, *y;
  bool backward = xr_pool_is_backward(p->kind);
  if ((st = op_start(d, pd, s)) || (st = view_data(tensors, &p->x, &x)) ||
      (st = view_data(tensors, &p->y, &y)) ||
      (st = xr_dnnl_call_arg(d, &s->call, backward ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC, &mds[0],
                             x)) ||
      (st = xr_dnnl_call_arg(d, &s->call, backward ? DNNL_ARG_DIFF_DST : DNNL_ARG_DST, &mds[1],
                             y))) {
    pool_release(s);
    return xr_error_prefix(st, "cpu.onednn_pool: ");
  }
  *out_state = s;
  return XR_OK;
}

static void op_run(void *ctx) {
  onednn_op_t *s = ctx;
  /* A failure leaves the output poisoned, which the check reports. */
  xr_dnnl_call_run(s->d, s->stream, &s->call);
}

static xr_status_t pool_enqueue(void *state, xr_hal_stream_t *stream) {
  return xr_hal_stream_enqueue_host(stream, op_run, state);
}

const xr_kernel_impl_t xr_cpu_onednn_pool_impl = {
    .name = "cpu.onednn_pool",
    .driver = "cpu",
    .supports = pool_supports,
    .prepare = pool_prepare,
    .enqueue = pool_enqueue,
    .release = pool_release,
};

/* ---- cpu.onednn_batch_norm ---- */

/* oneDNN's fp32 [C] vectors, in DNNL_ARG order of use. */
enum { BN_MEAN, BN_VAR, BN_SCALE, BN_SHIFT, BN_DIFF_SCALE, BN_DIFF_SHIFT, BN_VECTORS };

typedef struct onednn_bn {
  onednn_op_t op;
  const xr_cn_problem_t *p;
  void *base[XR_CN_SLOTS]; /* the traced vectors' first elements */
  float *v[BN_VECTORS];
} onednn_bn_t;

static bool backward_form(const xr_cn_problem_t *p) {
  return p->kind == XR_CN_BATCH_BACKWARD;
}

/* What oneDNN's descriptor says beyond the data: statistics given (eval) or computed, and
 * which of scale and shift are used (a scale of ones where a backward without a weight is
 * asked for grad_weight). */
static unsigned bn_flags(const xr_cn_problem_t *p) {
  unsigned flags = p->training ? 0 : dnnl_use_global_stats;
  if (p->v[XR_CN_WEIGHT].index >= 0 || (backward_form(p) && p->v[XR_CN_GRAD_W].index >= 0))
    flags |= dnnl_use_scale;
  if (backward_form(p) ? p->v[XR_CN_GRAD_B].index >= 0 : p->v[XR_CN_BIAS].index >= 0)
    flags |= dnnl_use_shift;
  return flags;
}

static bool same_layout(const xr_view5_t *a, const xr_view5_t *b) {
  for (int k = 0; k < 5; k++)
    if (a->shape[k] > 1 && a->strides[k] != b->strides[k]) return false;
  return true;
}

/* The primitive descriptor over mds: (data, diff data) for the backward, (data) forward. */
static xr_status_t bn_pd(const xr_dnnl_t *d, const xr_cn_problem_t *p,
                         const dnnl_memory_desc_t mds[2], dnnl_primitive_desc_t *out) {
  char what[64];
  snprintf(what, sizeof what, "batch normalization %s for %s",
           backward_form(p) ? "backward" : "forward", xr_dtype_name(p->v[XR_CN_X].dtype));
  if (!d->dnnl_batch_normalization_forward_desc_init ||
      !d->dnnl_batch_normalization_backward_desc_init)
    return xr_error(XR_UNIMPLEMENTED, "this oneDNN lacks the batch normalization primitives");
  unsigned flags = bn_flags(p);
  float eps = (float)p->eps;
  dnnl_batch_normalization_desc_t fd, bd;
  dnnl_prop_kind_t forward =
      p->training || backward_form(p) ? dnnl_forward_training : dnnl_forward_inference;
  dnnl_status_t ds =
      d->dnnl_batch_normalization_forward_desc_init(&fd, forward, &mds[0], eps, flags);
  if (ds == dnnl_success && !backward_form(p)) return xr_dnnl_pd_create(d, &fd, NULL, what, out);
  if (ds == dnnl_success)
    ds = d->dnnl_batch_normalization_backward_desc_init(
        &bd, flags & (dnnl_use_scale | dnnl_use_shift) ? dnnl_backward : dnnl_backward_data,
        &mds[1], &mds[0], eps, flags);
  if (ds == dnnl_success) return xr_dnnl_pd_create(d, &bd, &fd, what, out);
  return xr_error(XR_UNIMPLEMENTED, "oneDNN %s: %s", what, xr_dnnl_status_name(d, ds));
}

static xr_status_t bn_check(const xr_cn_problem_t *p) {
  if (p->kind != XR_CN_BATCH && p->kind != XR_CN_BATCH_BACKWARD)
    return xr_error(XR_UNIMPLEMENTED, "group norm is not in this oneDNN");
  const xr_view5_t *x = &p->v[XR_CN_X], *out = &p->v[XR_CN_OUT];
  if (out->index < 0) return xr_error(XR_UNIMPLEMENTED, "no grad_input asked for");
  /* Over NCHW data this oneDNN's batch norm ran at 0.25-0.6x of cpu.channel_norm
   * (tools/vision_bench); over channels-last data it runs at 12-33x. */
  if (x->shape[1] > 1 && x->strides[1] != 1)
    return xr_error(XR_UNIMPLEMENTED, "channels not innermost (cpu.channel_norm is faster there)");
  /* oneDNN's data and its result share one layout (so do the gradients). */
  if (!same_layout(backward_form(p) ? &p->v[XR_CN_GRAD] : x, out))
    return xr_error(XR_UNIMPLEMENTED, "a result in another layout than its input");
  return XR_OK;
}

static xr_status_t bn_describe(const xr_op_plan_t *plan, const xr_dnnl_t **out_d,
                               dnnl_primitive_desc_t *out_pd, dnnl_memory_desc_t mds[2]) {
  const xr_cn_problem_t *p = plan->problem;
  xr_status_t st = bn_check(p);
  if (st == XR_OK) st = xr_dnnl_get(out_d);
  const xr_view5_t *x = &p->v[XR_CN_X], *g = &p->v[XR_CN_GRAD];
  if (st == XR_OK) st = xr_dnnl_view_md(*out_d, x, 3, x->dtype, &mds[0]);
  if (st == XR_OK && backward_form(p)) st = xr_dnnl_view_md(*out_d, g, 3, g->dtype, &mds[1]);
  if (st == XR_OK) st = bn_pd(*out_d, p, mds, out_pd);
  if (st != XR_OK)
    return xr_error_prefix(XR_UNIMPLEMENTED, "cpu.onednn_batch_norm: %s: ", plan->op->name);
  return XR_OK;
}

static xr_status_t bn_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_dnnl_t *d;
  dnnl_primitive_desc_t pd;
  dnnl_memory_desc_t mds[2];
  xr_status_t st = bn_describe(plan, &d, &pd, mds);
  if (st == XR_OK) d->dnnl_primitive_desc_destroy(pd);
  return st;
}

static void bn_release(void *state) {
  onednn_bn_t *s = state;
  if (!s) return;
  op_release(&s->op);
  for (int k = 0; k < BN_VECTORS; k++) free(s->v[k]);
  free(s);
}

static float load_vec(const onednn_bn_t *s, int slot, int64_t c) {
  const xr_view5_t *v = &s->p->v[slot];
  return (float)xr_load_element(s->base[slot], v->dtype, c * v->strides[1]);
}

static void store_vec(const onednn_bn_t *s, int slot, int64_t c, double value) {
  const xr_view5_t *v = &s->p->v[slot];
  if (s->base[slot]) xr_store_element(s->base[slot], v->dtype, c * v->strides[1], value);
}

static xr_status_t bn_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                              const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_cn_problem_t *p = plan->problem;
  const xr_dnnl_t *d;
  dnnl_primitive_desc_t pd;
  dnnl_memory_desc_t mds[2];
  xr_status_t st = bn_describe(plan, &d, &pd, mds);
  if (st != XR_OK) return st;
  onednn_bn_t *s = calloc(1, sizeof *s);
  if (!s) {
    d->dnnl_primitive_desc_destroy(pd);
    return xr_error(XR_RESOURCE_EXHAUSTED, "cpu.onednn_batch_norm: out of memory");
  }
  s->p = p;
  if ((st = op_start(d, pd, &s->op)) != XR_OK) goto fail;
  for (int k = 0; k < XR_CN_SLOTS && st == XR_OK; k++)
    if (p->v[k].index >= 0) st = view_data(tensors, &p->v[k], &s->base[k]);
  dnnl_memory_desc_t vector_md;
  dnnl_dims_t c_dims = {p->c};
  if (st == XR_OK &&
      d->dnnl_memory_desc_init_by_tag(&vector_md, 1, c_dims, dnnl_f32, dnnl_a) != dnnl_success)
    st = xr_error(XR_DEVICE_ERROR, "a [C] fp32 memory descriptor");
  for (int k = 0; k < BN_VECTORS && st == XR_OK; k++)
    if (!(s->v[k] = calloc((size_t)p->c, sizeof(float))))
      st = xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  if (st != XR_OK) goto fail;
  bool backward = backward_form(p);
  unsigned flags = bn_flags(p);
  xr_dnnl_call_t *call = &s->op.call;
  const struct {
    int role, vector;
    bool used;
  } vectors[] = {
      {DNNL_ARG_MEAN, BN_MEAN, true},
      {DNNL_ARG_VARIANCE, BN_VAR, true},
      {DNNL_ARG_SCALE, BN_SCALE, flags & dnnl_use_scale},
      /* A backward with use_shift reads a shift (zeros here: no gradient depends on it); its
       * diff_src is NaN without one. */
      {DNNL_ARG_SHIFT, BN_SHIFT, flags & dnnl_use_shift},
      {DNNL_ARG_DIFF_SCALE, BN_DIFF_SCALE, backward && (flags & dnnl_use_scale)},
      {DNNL_ARG_DIFF_SHIFT, BN_DIFF_SHIFT, backward && (flags & dnnl_use_shift)},
  };
  st = xr_dnnl_call_arg(d, call, DNNL_ARG_SRC, &mds[0], s->base[XR_CN_X]);
  if (st == XR_OK && backward)
    st = xr_dnnl_call_arg(d, call, DNNL_ARG_DIFF_DST, &mds[1], s->base[XR_CN_GRAD]);
  if (st == XR_OK)
    st = xr_dnnl_call_arg(d, call, backward ? DNNL_ARG_DIFF_SRC : DNNL_ARG_DST,
                          &mds[backward ? 1 : 0], s->base[XR_CN_OUT]);
  for (size_t k = 0; k < sizeof vectors / sizeof vectors[0] && st == XR_OK; k++)
    if (vectors[k].used)
      st = xr_dnnl_call_arg(d, call, vectors[k].role, &vector_md, s->v[vectors[k].vector]);
  if (st != XR_OK) goto fail;
  *out_state = s;
  return XR_OK;
fail:
  bn_release(s);
  return xr_error_prefix(st, "cpu.onednn_batch_norm: ");
}

/* The traced vectors into oneDNN's: scale and shift, and the statistics it is given (the
 * running ones in eval; the saved mean and invstd, as a variance, in a training backward). */
static void bn_before(const onednn_bn_t *s) {
  const xr_cn_problem_t *p = s->p;
  bool backward = backward_form(p);
  for (int64_t c = 0; c < p->c; c++) {
    s->v[BN_SCALE][c] = s->base[XR_CN_WEIGHT] ? load_vec(s, XR_CN_WEIGHT, c) : 1;
    if (!backward && s->base[XR_CN_BIAS]) s->v[BN_SHIFT][c] = load_vec(s, XR_CN_BIAS, c);
    if (!p->training) {
      s->v[BN_MEAN][c] = load_vec(s, XR_CN_RMEAN, c);
      s->v[BN_VAR][c] = load_vec(s, XR_CN_RVAR, c);
    } else if (backward) {
      double invstd = load_vec(s, XR_CN_SINV, c);
      s->v[BN_MEAN][c] = load_vec(s, XR_CN_SMEAN, c);
      s->v[BN_VAR][c] = (float)(1 / (invstd * invstd) - p->eps);
    }
  }
}

/* oneDNN's results into the traced vectors: the saved statistics and the running update of a
 * training forward, the parameter gradients of a backward. */
static void bn_after(const onednn_bn_t *s) {
  const xr_cn_problem_t *p = s->p;
  double count = (double)p->n * (double)p->spatial;
  for (int64_t c = 0; c < p->c; c++) {
    if (backward_form(p)) {
      store_vec(s, XR_CN_GRAD_W, c, s->v[BN_DIFF_SCALE][c]);
      store_vec(s, XR_CN_GRAD_B, c, s->v[BN_DIFF_SHIFT][c]);
    } else if (p->training) {
      double mean = s->v[BN_MEAN][c], var = s->v[BN_VAR][c];
      store_vec(s, XR_CN_OUT_MEAN, c, mean);
      store_vec(s, XR_CN_OUT_INV, c, 1 / sqrt(var + p->eps));
      if (s->base[XR_CN_RMEAN])
        store_vec(s, XR_CN_RMEAN, c,
                  (1 - p->momentum) * load_vec(s, XR_CN_RMEAN, c) + p->momentum * mean);
      if (s->base[XR_CN_RVAR])
        store_vec(s, XR_CN_RVAR, c,
                  (1 - p->momentum) * load_vec(s, XR_CN_RVAR, c) +
                      p->momentum * (count > 1 ? var * count / (count - 1) : var));
    }
  }
}

static void bn_run(void *ctx) {
  onednn_bn_t *s = ctx;
  bn_before(s);
  /* A failure leaves the output poisoned, which the check reports. */
  if (xr_dnnl_call_run(s->op.d, s->op.stream, &s->op.call)) bn_after(s);
}

static xr_status_t bn_enqueue(void *state, xr_hal_stream_t *stream) {
  return xr_hal_stream_enqueue_host(stream, bn_run, state);
}

const xr_kernel_impl_t xr_cpu_onednn_batch_norm_impl = {
    .name = "cpu.onednn_batch_norm",
    .driver = "cpu",
    .supports = bn_supports,
    .prepare = bn_prepare,
    .enqueue = bn_enqueue,
    .release = bn_release,
};

#else /* no dnnl.h at build time */

static xr_status_t no_onednn(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)plan, (void)device;
  return xr_error(XR_UNIMPLEMENTED, "built without oneDNN's headers (dnnl.h)");
}

const xr_kernel_impl_t xr_cpu_onednn_pool_impl = {
    .name = "cpu.onednn_pool",
    .driver = "cpu",
    .supports = no_onednn,
};

const xr_kernel_impl_t xr_cpu_onednn_batch_norm_impl = {
    .name = "cpu.onednn_batch_norm",
    .driver = "cpu",
    .supports = no_onednn,
};
#endif
