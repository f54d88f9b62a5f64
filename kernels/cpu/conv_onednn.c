/* cpu.onednn_conv: the convolution steps (kernels/conv.h) on oneDNN's primitives — FORWARD on
 * the convolution forward primitive (bias fused), BACKWARD_DATA on the deconvolution forward
 * primitive (oneDNN's deconvolution is the data gradient of its convolution, and takes the bias
 * a transposed convolution adds), BACKWARD_WEIGHT on the convolution backward-weights primitive,
 * which also sums the bias gradient when that sums the same tensor (a plain convolution's
 * grad_output); any other BIAS_GRAD is a per-channel sum of ours. Every operand is described
 * with its own strides (NCHW, channels-last, views), so where oneDNN has fast kernels for the
 * traced layouts nothing is copied.
 *
 * Where oneDNN's kernels want other layouts than the traced ones (channels-last activations
 * want blocked weights), it picks them and reorders run around the step (create_pd). A forward
 * convolution that does run on the traced layouts is also built with every tensor in oneDNN's
 * own, and prepare() keeps whichever of the two runs faster there (worth_timing). fp16, which
 * this oneDNN does not compute on x86, and bf16 where it has only its reference kernel (CPUs
 * without AVX-512; channels-last backward steps on any), run on fp32 copies of the tensors
 * converted in before and out after (the conversions are part of what is timed), as PyTorch
 * sums them in fp32 too.
 *
 * Not here (supports() says which, and cpu.conv runs them): f64, zero strides, layouts for
 * which oneDNN has only its reference kernel even in fp32. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/conv.h"
#include "kernels/cpu/onednn.h"
#include "kernels/dtype.h"

#ifdef XR_HAVE_DNNL_H

/* The dtype oneDNN computes an operand in: fp32 for fp16 and bf16 ones when `widen` (their
 * fp32 copies, see onednn_state_t). */
static xr_dtype_t computed(xr_dtype_t dtype, bool widen) {
  return widen && (dtype == XR_DTYPE_F16 || dtype == XR_DTYPE_BF16) ? XR_DTYPE_F32 : dtype;
}

static xr_status_t memory_desc(const xr_dnnl_t *d, int nd, dnnl_dims_t dims, dnnl_dims_t strides,
                               xr_dtype_t dtype, bool widen, dnnl_memory_desc_t *out) {
  return xr_dnnl_strided_md(d, nd, dims, strides, computed(dtype, widen), out);
}

/* An activation [n, c, spatial...] of the traced rank. */
static xr_status_t activation_desc(const xr_dnnl_t *d, const xr_conv_problem_t *p,
                                   const xr_conv_operand_t *o, bool widen,
                                   dnnl_memory_desc_t *out) {
  return xr_dnnl_view_md(d, o, p->spatial, computed(o->dtype, widen), out);
}

/* The weights as oneDNN's convolution wants them ([g,] oc/g, ic/g, k...), or, `deconv`, as its
 * deconvolution wants them for the same tensor: the roles of oc and ic exchanged. */
static xr_status_t weights_desc(const xr_dnnl_t *d, const xr_conv_problem_t *p,
                                const xr_conv_operand_t *o, bool deconv, bool widen,
                                dnnl_memory_desc_t *out) {
  int64_t cg_out = p->c_out / p->groups;
  dnnl_dims_t dims, strides;
  int nd = 0;
  if (p->groups > 1) dims[nd] = p->groups, strides[nd++] = cg_out * o->strides[0];
  if (deconv) {
    dims[nd] = o->shape[1], strides[nd++] = o->strides[1];
    dims[nd] = cg_out, strides[nd++] = o->strides[0];
  } else {
    dims[nd] = p->groups > 1 ? cg_out : o->shape[0], strides[nd++] = o->strides[0];
    dims[nd] = o->shape[1], strides[nd++] = o->strides[1];
  }
  for (int k = 0; k < p->spatial; k++) {
    dims[nd] = o->shape[5 - p->spatial + k];
    strides[nd++] = o->strides[5 - p->spatial + k];
  }
  return memory_desc(d, nd, dims, strides, o->dtype, widen, out);
}

static xr_status_t vector_desc(const xr_dnnl_t *d, const xr_conv_operand_t *o, bool widen,
                               dnnl_memory_desc_t *out) {
  dnnl_dims_t dims = {o->shape[0]}, strides = {o->strides[0]};
  return memory_desc(d, 1, dims, strides, o->dtype, widen, out);
}

/* Strides, dilations (oneDNN counts the gaps: dilation - 1) and pads of the traced spatial
 * dims. */
static void geometry(const xr_conv_problem_t *p, dnnl_dims_t strides, dnnl_dims_t dilates,
                     dnnl_dims_t pad_l, dnnl_dims_t pad_r) {
  for (int k = 0; k < p->spatial; k++) {
    int c = 3 - p->spatial + k;
    int64_t span = (p->kernel[c] - 1) * p->dilation[c] + 1;
    strides[k] = p->stride[c];
    dilates[k] = p->dilation[c] - 1;
    pad_l[k] = p->pad[c];
    pad_r[k] = xr_dnnl_right_pad(p->in[c], p->out[c], span, p->stride[c], p->pad[c]);
  }
}

typedef struct onednn_step {
  const xr_conv_step_t *step;
  /* A staged step's reorders: the read arguments in before the step (`in`), its results out
   * after it (`out`); without a conv primitive, our per-channel sum (a BIAS_GRAD step). */
  xr_dnnl_call_t in[2], conv, out;
  void *staging[4];
  void *y_base, *bias_base; /* the per-channel sum's operands */
  int64_t y_offset, bias_offset;
  unsigned staged; /* create_pd's bits */
} onednn_step_t;

/* An fp16 or bf16 tensor's fp32 copy (its whole storage) for steps oneDNN computes in fp32. */
typedef struct widened {
  uint16_t *narrow;
  bool bf16; /* else fp16 */
  float *f32;
  int64_t count;
  bool out; /* a result: copied back after the steps, not in before them */
  xr_hal_buffer_t *buffer;
} widened_t;

#define MAX_TENSORS 8

typedef struct onednn_state {
  const xr_dnnl_t *d;
  dnnl_stream_t stream;
  int count;
  onednn_step_t step[3];
  int widened_count;
  widened_t widened[MAX_TENSORS];
} onednn_state_t;

/* The bias-gradient step after BACKWARD_WEIGHT step i that sums that step's y, or NULL. */
static const xr_conv_step_t *fusable_bias(const xr_conv_problem_t *p, int i) {
  const xr_conv_step_t *s = &p->steps[i];
  if (s->pass != XR_CONV_BACKWARD_WEIGHT || i + 1 >= p->step_count) return NULL;
  const xr_conv_step_t *next = &p->steps[i + 1];
  if (next->pass != XR_CONV_BIAS_GRAD || next->y.index != s->y.index) return NULL;
  return next;
}

/* The argument a step writes: the weights' gradient, else the destination. */
static int written_arg(const xr_conv_step_t *s) {
  return s->pass == XR_CONV_BACKWARD_WEIGHT ? 1 : 3;
}

/* The memory descriptors of step i's arguments on the traced layouts, in `args` order: (src,
 * weights, bias?, dst) for FORWARD and BACKWARD_DATA, (src, diff_weights, diff_bias?, diff_dst)
 * for BACKWARD_WEIGHT; operands[k] the operand of each (NULL: no bias). `widen`: fp16 operands
 * as fp32 (their fp32 copies, see onednn_state_t). */
static xr_status_t describe(const xr_op_plan_t *plan, const xr_dnnl_t *d, int i, bool widen,
                            dnnl_memory_desc_t mds[4], const xr_conv_operand_t *operands[4]) {
  const xr_conv_problem_t *p = plan->problem;
  const xr_conv_step_t *s = &p->steps[i];
  if (!d->dnnl_dilated_convolution_forward_desc_init ||
      !d->dnnl_dilated_convolution_backward_weights_desc_init ||
      !d->dnnl_dilated_deconvolution_forward_desc_init)
    return xr_error(XR_UNIMPLEMENTED, "this oneDNN lacks the convolution primitives");
  bool deconv = s->pass == XR_CONV_BACKWARD_DATA;
  const xr_conv_operand_t *src = deconv ? &s->y : &s->x, *dst = deconv ? &s->x : &s->y;
  const xr_conv_step_t *fused = fusable_bias(p, i);
  const xr_conv_operand_t *bias = s->pass == XR_CONV_BACKWARD_WEIGHT
                                      ? (fused ? &fused->bias : NULL)
                                      : (s->bias.index >= 0 ? &s->bias : NULL);
  operands[0] = src, operands[1] = &s->w, operands[2] = bias, operands[3] = dst;
  xr_status_t st;
  if ((st = activation_desc(d, p, src, widen, &mds[0])) ||
      (st = weights_desc(d, p, &s->w, deconv, widen, &mds[1])) ||
      (bias && (st = vector_desc(d, bias, widen, &mds[2]))) ||
      (st = activation_desc(d, p, dst, widen, &mds[3])))
    return st;
  return XR_OK;
}

/* The primitive descriptor of step i over `mds` (a bias when mds_bias). */
static xr_status_t try_pd(const xr_op_plan_t *plan, const xr_dnnl_t *d, int i,
                          const dnnl_memory_desc_t mds[4], bool has_bias,
                          dnnl_primitive_desc_t *out_pd) {
  const xr_conv_problem_t *p = plan->problem;
  const xr_conv_step_t *s = &p->steps[i];
  dnnl_dims_t strides, dilates, pad_l, pad_r;
  geometry(p, strides, dilates, pad_l, pad_r);
  const dnnl_memory_desc_t *bias_md = has_bias ? &mds[2] : NULL;
  static const char *const pass_names[] = {"forward", "backward data", "backward weights"};
  char what[64];
  snprintf(what, sizeof what, "convolution %s for %s", pass_names[s->pass],
           xr_dtype_name(s->w.dtype));
  dnnl_status_t ds;
  if (s->pass == XR_CONV_FORWARD) {
    dnnl_convolution_desc_t cd;
    ds = d->dnnl_dilated_convolution_forward_desc_init(
        &cd, dnnl_forward_inference, dnnl_convolution_direct, &mds[0], &mds[1], bias_md, &mds[3],
        strides, dilates, pad_l, pad_r);
    if (ds == dnnl_success) return xr_dnnl_pd_create(d, &cd, NULL, what, out_pd);
  } else if (s->pass == XR_CONV_BACKWARD_DATA) {
    dnnl_deconvolution_desc_t dd;
    ds = d->dnnl_dilated_deconvolution_forward_desc_init(
        &dd, dnnl_forward_inference, dnnl_deconvolution_direct, &mds[0], &mds[1], bias_md, &mds[3],
        strides, dilates, pad_l, pad_r);
    if (ds == dnnl_success) return xr_dnnl_pd_create(d, &dd, NULL, what, out_pd);
  } else {
    dnnl_convolution_desc_t fd, bd;
    ds = d->dnnl_dilated_convolution_forward_desc_init(
        &fd, dnnl_forward_training, dnnl_convolution_direct, &mds[0], &mds[1], bias_md, &mds[3],
        strides, dilates, pad_l, pad_r);
    if (ds == dnnl_success)
      ds = d->dnnl_dilated_convolution_backward_weights_desc_init(
          &bd, dnnl_convolution_direct, &mds[0], &mds[1], bias_md, &mds[3], strides, dilates, pad_l,
          pad_r);
    if (ds == dnnl_success) return xr_dnnl_pd_create(d, &bd, &fd, what, out_pd);
  }
  return xr_error(XR_UNIMPLEMENTED, "oneDNN %s: %s", what, xr_dnnl_status_name(d, ds));
}

/* Step i's primitive descriptor on the traced layouts; else with oneDNN's choice of layout
 * for the weights; else for the weights and the argument the step writes; else for every
 * argument but the bias (its fast kernels for channels-last activations want blocked weights,
 * its bf16 deconvolution blocked everything; with the traced layouts it has only the reference).
 * *out_staged then has bit k set for each argument k that goes through a staging buffer in the
 * layout mds[k]: reorders copy the read ones in before the step and the written one out after
 * it, out_user[k] describing the tensor as traced. `widen` as for describe(); `only` >= 0: that
 * staging alone (0: the weights, 1: and the result, 2: every argument), without the traced
 * layouts first. */
static xr_status_t create_pd(const xr_op_plan_t *plan, const xr_dnnl_t *d, int i, bool widen,
                             int only, dnnl_primitive_desc_t *out_pd, dnnl_memory_desc_t mds[4],
                             const xr_conv_operand_t *operands[4], dnnl_memory_desc_t out_user[4],
                             unsigned *out_staged) {
  *out_staged = 0;
  xr_status_t st = describe(plan, d, i, widen, mds, operands);
  if (st != XR_OK || (only < 0 && try_pd(plan, d, i, mds, operands[2] != NULL, out_pd) == XR_OK))
    return st;
  int written = written_arg(&((const xr_conv_problem_t *)plan->problem)->steps[i]);
  bool bw = written == 1;
  for (int k = 0; k < 4; k++) out_user[k] = mds[k];
  const unsigned attempts[3] = {1u << 1, 1u << 1 | 1u << written, 1u << 0 | 1u << 1 | 1u << 3};
  for (int a = only < 0 ? 0 : only; a < (only < 0 ? 3 : only + 1); a++) {
    for (int k = 0; k < 4; k++) {
      if (!(attempts[a] & 1u << k)) continue;
      dnnl_memory_desc_t *md = &mds[k];
      dnnl_status_t ds = d->dnnl_memory_desc_init_by_tag(md, md->ndims, md->dims, md->data_type,
                                                         dnnl_format_tag_any);
      if (ds != dnnl_success)
        return xr_error(XR_UNIMPLEMENTED, "dnnl_memory_desc_init_by_tag: %s",
                        xr_dnnl_status_name(d, ds));
    }
    if ((st = try_pd(plan, d, i, mds, operands[2] != NULL, out_pd)) != XR_OK) continue;
    const dnnl_query_t queries[4] = {dnnl_query_src_md,
                                     bw ? dnnl_query_diff_weights_md : dnnl_query_weights_md,
                                     dnnl_query_undef, /* the bias keeps its layout */
                                     bw ? dnnl_query_diff_dst_md : dnnl_query_dst_md};
    for (int k = 0; k < 4; k++)
      if (attempts[a] & 1u << k) mds[k] = *d->dnnl_primitive_desc_query_md(*out_pd, queries[k], 0);
    *out_staged = attempts[a];
    return XR_OK;
  }
  return st;
}

/* Whether the plan's fp16 or bf16 steps must run on fp32 copies: some step has no primitive in
 * that dtype but oneDNN's reference. */
static bool needs_widening(const xr_op_plan_t *plan, const xr_dnnl_t *d) {
  const xr_conv_problem_t *p = plan->problem;
  xr_dtype_t w = p->steps[0].w.dtype, y = p->steps[0].y.dtype;
  if (computed(w, true) == w && computed(y, true) == y) return false;
  for (int i = 0; i < p->step_count; i++) {
    if (p->steps[i].pass == XR_CONV_BIAS_GRAD) continue;
    dnnl_primitive_desc_t pd;
    dnnl_memory_desc_t mds[4], user[4];
    const xr_conv_operand_t *operands[4];
    unsigned staged;
    if (create_pd(plan, d, i, false, -1, &pd, mds, operands, user, &staged) != XR_OK) return true;
    d->dnnl_primitive_desc_destroy(pd);
  }
  return false;
}

static bool fused_into_previous(const xr_conv_problem_t *p, int i) {
  return i > 0 && fusable_bias(p, i - 1) == &p->steps[i];
}

static xr_status_t onednn_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_conv_problem_t *p = plan->problem;
  const xr_dnnl_t *d;
  xr_status_t st = xr_dnnl_get(&d);
  if (st != XR_OK) return xr_error_prefix(XR_UNIMPLEMENTED, "cpu.onednn_conv: ");
  if (plan->input_count + plan->return_count > MAX_TENSORS)
    return xr_error(XR_UNIMPLEMENTED, "cpu.onednn_conv: more than %d tensors", MAX_TENSORS);
  bool widen = needs_widening(plan, d);
  for (int i = 0; i < p->step_count; i++) {
    if (p->steps[i].pass == XR_CONV_BIAS_GRAD) continue;
    dnnl_primitive_desc_t pd;
    dnnl_memory_desc_t mds[4], user[4];
    const xr_conv_operand_t *operands[4];
    unsigned staged;
    if ((st = create_pd(plan, d, i, widen, -1, &pd, mds, operands, user, &staged)) != XR_OK)
      return xr_error_prefix(st, "cpu.onednn_conv: %s: ", plan->op->name);
    d->dnnl_primitive_desc_destroy(pd);
  }
  return XR_OK;
}

static void onednn_release(void *state) {
  onednn_state_t *s = state;
  if (!s) return;
  for (int i = 0; i < s->count; i++) {
    onednn_step_t *os = &s->step[i];
    xr_dnnl_call_t *calls[4] = {&os->in[0], &os->in[1], &os->conv, &os->out};
    for (int c = 0; c < 4; c++) xr_dnnl_call_release(s->d, calls[c]);
    for (int k = 0; k < 4; k++) free(os->staging[k]);
  }
  for (int k = 0; k < s->widened_count; k++) xr_hal_buffer_free(s->widened[k].buffer);
  if (s->stream) s->d->dnnl_stream_destroy(s->stream);
  free(s);
}

static void *first_element(const xr_tensor_t *t, void *base) {
  return (uint8_t *)base + (size_t)t->offset * xr_dtype_size(t->dtype);
}

/* A reorder from `from` (described by from_md) to `to`. */
static xr_status_t reorder_create(const xr_dnnl_t *d, const dnnl_memory_desc_t *from_md, void *from,
                                  const dnnl_memory_desc_t *to_md, void *to, xr_dnnl_call_t *call) {
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_status_t ds = d->dnnl_primitive_attr_create(&attr);
  if (ds == dnnl_success)
    ds = d->dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (ds == dnnl_success)
    ds = d->dnnl_reorder_primitive_desc_create(&pd, from_md, d->engine, to_md, d->engine, attr);
  if (attr) d->dnnl_primitive_attr_destroy(attr);
  if (ds != dnnl_success)
    return xr_error(XR_DEVICE_ERROR, "a layout reorder: %s", xr_dnnl_status_name(d, ds));
  xr_status_t st;
  if ((st = xr_dnnl_call_create(d, pd, call)) ||
      (st = xr_dnnl_call_arg(d, call, DNNL_ARG_FROM, from_md, from)) ||
      (st = xr_dnnl_call_arg(d, call, DNNL_ARG_TO, to_md, to)))
    return st;
  return XR_OK;
}

/* Step i on `tensors`, its convolution on `conv_tensors` (fp32 copies of fp16 ones when
 * `widen`). */
static xr_status_t prepare_step(const xr_op_plan_t *plan, onednn_state_t *s, int i,
                                const xr_tensor_t *tensors, const xr_tensor_t *conv_tensors,
                                bool widen, int only) {
  const xr_conv_problem_t *p = plan->problem;
  const xr_dnnl_t *d = s->d;
  onednn_step_t *os = &s->step[s->count++];
  os->step = &p->steps[i];
  xr_status_t st;
  if (os->step->pass == XR_CONV_BIAS_GRAD) {
    if ((st = xr_tensor_host(&tensors[os->step->y.index], &os->y_base)) ||
        (st = xr_tensor_host(&tensors[os->step->bias.index], &os->bias_base)))
      return st;
    os->y_offset = tensors[os->step->y.index].offset;
    os->bias_offset = tensors[os->step->bias.index].offset;
    return XR_OK;
  }
  dnnl_primitive_desc_t pd;
  dnnl_memory_desc_t mds[4], user[4];
  const xr_conv_operand_t *operands[4];
  unsigned staged;
  if ((st = create_pd(plan, d, i, widen, only, &pd, mds, operands, user, &staged)) != XR_OK)
    return st;
  os->staged = staged;
  bool backward_weights = os->step->pass == XR_CONV_BACKWARD_WEIGHT;
  const int roles[4] = {
      DNNL_ARG_SRC,
      backward_weights ? DNNL_ARG_DIFF_WEIGHTS : DNNL_ARG_WEIGHTS,
      backward_weights ? DNNL_ARG_DIFF_BIAS : DNNL_ARG_BIAS,
      backward_weights ? DNNL_ARG_DIFF_DST : DNNL_ARG_DST,
  };
  int written = written_arg(os->step), reads = 0;
  if ((st = xr_dnnl_call_create(d, pd, &os->conv)) != XR_OK) return st;
  for (int k = 0; k < 4; k++) {
    if (!operands[k]) continue;
    const xr_tensor_t *t = &conv_tensors[operands[k]->index];
    void *base;
    if ((st = xr_tensor_host(t, &base)) != XR_OK) return st;
    void *at = first_element(t, base);
    if (staged & 1u << k) {
      void **staging = &os->staging[k];
      size_t size = d->dnnl_memory_desc_get_size(&mds[k]);
      *staging = aligned_alloc(64, (size + 63) / 64 * 64);
      if (!*staging) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
      bool out = k == written;
      if ((st = reorder_create(d, out ? &mds[k] : &user[k], out ? *staging : at,
                               out ? &user[k] : &mds[k], out ? at : *staging,
                               out ? &os->out : &os->in[reads++])))
        return st;
      at = *staging;
    }
    if ((st = xr_dnnl_call_arg(d, &os->conv, roles[k], &mds[k], at)) != XR_OK) return st;
  }
  return XR_OK;
}

/* The tensors the convolution steps use: `tensors`, or, when `widen`, fp32 copies (cpu
 * buffers of the same strides and offset) in place of the fp16 and bf16 ones, listed in
 * s->widened. */
static xr_status_t widen_tensors(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                 const xr_tensor_t *tensors, bool widen, onednn_state_t *s,
                                 xr_tensor_t *out) {
  const xr_conv_problem_t *p = plan->problem;
  size_t count = plan->input_count + plan->return_count;
  bool used[MAX_TENSORS] = {false};
  for (int i = 0; i < p->step_count; i++) {
    const xr_conv_step_t *step = &p->steps[i];
    if (step->pass == XR_CONV_BIAS_GRAD && !fused_into_previous(p, i)) continue;
    const xr_conv_operand_t *all[4] = {&step->x, &step->w, &step->y, &step->bias};
    for (int k = 0; k < 4; k++)
      if (all[k]->index >= 0) used[all[k]->index] = true;
  }
  for (size_t i = 0; i < count; i++) {
    out[i] = tensors[i];
    if (!widen || !used[i] || computed(tensors[i].dtype, true) == tensors[i].dtype) continue;
    int64_t extent = tensors[i].offset + 1;
    for (int d = 0; d < tensors[i].rank; d++)
      extent += (tensors[i].shape[d] - 1) * tensors[i].strides[d];
    widened_t *w = &s->widened[s->widened_count];
    void *narrow, *f32;
    xr_status_t st = xr_tensor_host(&tensors[i], &narrow);
    if (st == XR_OK) st = xr_hal_buffer_alloc(device, (size_t)extent * sizeof(float), &w->buffer);
    if (st != XR_OK) return st;
    s->widened_count++;
    if ((st = xr_hal_buffer_host_pointer(w->buffer, &f32)) != XR_OK) return st;
    w->narrow = narrow, w->f32 = f32, w->count = extent, w->out = i >= plan->input_count;
    w->bf16 = tensors[i].dtype == XR_DTYPE_BF16;
    out[i].buffer = w->buffer;
    out[i].dtype = XR_DTYPE_F32;
  }
  return XR_OK;
}

/* The state of the plan's steps on `tensors`, with create_pd's staging `only` (-1: its own
 * choice). */
static xr_status_t build_state(const xr_op_plan_t *plan, const xr_dnnl_t *d,
                               xr_hal_device_t *device, const xr_tensor_t *tensors, int only,
                               onednn_state_t **out) {
  const xr_conv_problem_t *p = plan->problem;
  onednn_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "cpu.onednn_conv: out of memory");
  s->d = d;
  xr_status_t st = XR_OK;
  dnnl_status_t ds = d->dnnl_stream_create(&s->stream, d->engine, dnnl_stream_default_flags);
  if (ds != dnnl_success)
    st = xr_error(XR_DEVICE_ERROR, "dnnl_stream_create: %s", xr_dnnl_status_name(d, ds));
  bool widen = st == XR_OK && needs_widening(plan, d);
  xr_tensor_t conv_tensors[MAX_TENSORS];
  if (st == XR_OK) st = widen_tensors(plan, device, tensors, widen, s, conv_tensors);
  for (int i = 0; i < p->step_count && st == XR_OK; i++)
    if (!fused_into_previous(p, i))
      st = prepare_step(plan, s, i, tensors, conv_tensors, widen, only);
  if (st != XR_OK) {
    onednn_release(s);
    return xr_error_prefix(st, "cpu.onednn_conv: ");
  }
  *out = s;
  return XR_OK;
}

static void onednn_run(void *ctx);

/* The best of 3 runs of s after one, on this thread, in seconds. */
static double best_of_three(onednn_state_t *s) {
  double best = -1;
  for (int r = 0; r < 4; r++) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    onednn_run(s);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double t = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (r > 0 && (best < 0 || t < best)) best = t;
  }
  return best;
}

/* Whether a forward convolution that runs on its traced layouts might run faster with tensors
 * reordered through oneDNN's own: with an NCHW output oneDNN keeps to its gemm-based kernel,
 * while a blocked one, reorders included, is faster on some shapes (the ResNet stem, 3x3
 * layers) and slower on others (1x1), so each staging is timed and the fastest kept, as
 * cuDNN's benchmark mode does. */
static bool worth_timing(const xr_op_plan_t *plan, const onednn_state_t *s) {
  const xr_conv_problem_t *p = plan->problem;
  return p->step_count == 1 && p->steps[0].pass == XR_CONV_FORWARD && s->count == 1 &&
         s->step[0].staged == 0 && s->widened_count == 0;
}

/* The variants of one convolution, timed on a thread of their own: libgomp keeps a pool of
 * threads per calling thread, and this one's goes with it instead of idling (spinning, in
 * libgomp's default wait policy) beside the stream worker's. */
typedef struct timing {
  onednn_state_t *state[4];
  double seconds[4];
  int count;
} timing_t;

static void *time_variants(void *context) {
  timing_t *t = context;
  for (int i = 0; i < t->count; i++) t->seconds[i] = best_of_three(t->state[i]);
  return NULL;
}

static xr_status_t onednn_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                  const xr_tensor_t *tensors, void **out_state) {
  const xr_dnnl_t *d;
  timing_t t = {.count = 1};
  xr_status_t st = xr_dnnl_get(&d);
  if (st == XR_OK) st = build_state(plan, d, device, tensors, -1, &t.state[0]);
  if (st != XR_OK) return st;
  pthread_t thread;
  if (worth_timing(plan, t.state[0])) {
    for (int only = 0; only < 3; only++)
      if (build_state(plan, d, device, tensors, only, &t.state[t.count]) == XR_OK) t.count++;
    if (t.count > 1 && pthread_create(&thread, NULL, time_variants, &t) == 0)
      pthread_join(thread, NULL);
    else
      t.count = 1; /* no thread: the traced layouts, as without timing */
  }
  int fastest = 0;
  for (int i = 1; i < t.count; i++)
    if (t.seconds[i] < t.seconds[fastest]) fastest = i;
  for (int i = 0; i < 4; i++)
    if (i != fastest && t.state[i]) onednn_release(t.state[i]);
  *out_state = t.state[fastest];
  return XR_OK;
}

/* bias[c] = the sum of channel c of y, for channels [begin, end). */
static void bias_sum(void *ctx, size_t begin, size_t end) {
  const onednn_step_t *os = ctx;
  const xr_conv_operand_t *Y = &os->step->y, *B = &os->step->bias;
  for (size_t c = begin; c < end; c++) {
    double acc = 0;
    for (int64_t n = 0; n < Y->shape[0]; n++)
      for (int64_t z = 0; z < Y->shape[2]; z++)
        for (int64_t h = 0; h < Y->shape[3]; h++)
          for (int64_t w = 0; w < Y->shape[4]; w++)
            acc += xr_load_element(os->y_base, Y->dtype,
                                   os->y_offset + xr_conv_offset(Y, n, (int64_t)c, z, h, w));
    xr_store_element(os->bias_base, B->dtype, os->bias_offset + (int64_t)c * B->strides[0], acc);
  }
}

static void onednn_run(void *ctx) {
  onednn_state_t *s = ctx;
  for (int i = 0; i < s->count; i++) {
    onednn_step_t *os = &s->step[i];
    xr_dnnl_call_t *calls[4] = {&os->in[0], &os->in[1], &os->conv, &os->out};
    /* A failure leaves the output poisoned, which the check reports. */
    for (int c = 0; c < 4; c++)
      if (!xr_dnnl_call_run(s->d, s->stream, calls[c])) break;
  }
}

/* Elements [begin, end) of an fp16 or bf16 tensor into its fp32 copy, or back for a result. */
static void widen_run(void *ctx, size_t begin, size_t end) {
  const widened_t *w = ctx;
  for (size_t i = begin; i < end; i++) {
    if (w->out)
      w->narrow[i] = w->bf16 ? xr_f32_to_bf16(w->f32[i]) : xr_f32_to_f16(w->f32[i]);
    else
      w->f32[i] = w->bf16 ? xr_bf16_to_f32(w->narrow[i]) : xr_f16_to_f32(w->narrow[i]);
  }
}

static xr_status_t onednn_enqueue(void *state, xr_hal_stream_t *stream) {
  onednn_state_t *s = state;
  xr_status_t st = XR_OK;
  for (int k = 0; k < s->widened_count && st == XR_OK; k++)
    if (!s->widened[k].out)
      st = xr_hal_stream_enqueue_parallel(stream, (size_t)s->widened[k].count, 4096, widen_run,
                                          &s->widened[k]);
  if (st == XR_OK) st = xr_hal_stream_enqueue_host(stream, onednn_run, s);
  for (int k = 0; k < s->widened_count && st == XR_OK; k++)
    if (s->widened[k].out)
      st = xr_hal_stream_enqueue_parallel(stream, (size_t)s->widened[k].count, 4096, widen_run,
                                          &s->widened[k]);
  for (int i = 0; i < s->count && st == XR_OK; i++) {
    onednn_step_t *os = &s->step[i];
    if (!os->conv.primitive)
      st = xr_hal_stream_enqueue_parallel(stream, (size_t)os->step->bias.shape[0], 1, bias_sum, os);
  }
  return st;
}

const xr_kernel_impl_t xr_cpu_conv_onednn_impl = {
    .name = "cpu.onednn_conv",
    .driver = "cpu",
    .supports = onednn_supports,
    .prepare = onednn_prepare,
    .enqueue = onednn_enqueue,
    .release = onednn_release,
};

#else /* no dnnl.h at build time */

static xr_status_t onednn_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)plan, (void)device;
  return xr_error(XR_UNIMPLEMENTED, "cpu.onednn_conv: built without oneDNN's headers (dnnl.h)");
}

const xr_kernel_impl_t xr_cpu_conv_onednn_impl = {
    .name = "cpu.onednn_conv",
    .driver = "cpu",
    .supports = onednn_supports,
};
#endif
