/* cpu.conv: every convolution step (kernels/conv.h) in our own C, for what oneDNN does not run
 * (fp16 and f64 in this oneDNN, layouts it only has a reference kernel for) or where it is
 * absent. Each read operand is first copied into a contiguous float buffer (in canonical n, c,
 * d, h, w order, whatever its strides); the step then runs over those with float products and
 * contiguous inner loops over the innermost spatial dim, each work item (an output plane, or a
 * weight's kernel window) owned by one thread and stored, rounded once, through the written
 * operand's strides. Weight gradients sum in double across rows. */
#include <stdlib.h>
#include <string.h>

#include "kernels/conv.h"

typedef struct cpu_operand {
  const xr_conv_operand_t *o;
  void *base; /* storage start */
  int64_t offset;
  float *f; /* contiguous float copy (read operands) or result (the written one) */
} cpu_operand_t;

typedef struct cpu_step {
  const xr_conv_problem_t *p;
  const xr_conv_step_t *step;
  cpu_operand_t x, w, y, bias;
  cpu_operand_t *reads[4];
  int read_count;
} cpu_step_t;

typedef struct cpu_state {
  int count;
  cpu_step_t step[3];
} cpu_state_t;

static int64_t planes_of(const xr_conv_operand_t *o) {
  return o->shape[0] * o->shape[1];
}
static int64_t plane_size(const xr_conv_operand_t *o) {
  return o->shape[2] * o->shape[3] * o->shape[4];
}

/* Canonical planes [begin, end) of operand `ctx` into its float copy. */
static void convert_planes(void *ctx, size_t begin, size_t end) {
  const cpu_operand_t *c = ctx;
  const xr_conv_operand_t *o = c->o;
  for (size_t plane = begin; plane < end; plane++) {
    int64_t i0 = (int64_t)plane / o->shape[1], i1 = (int64_t)plane % o->shape[1];
    float *dst = c->f + (int64_t)plane * plane_size(o);
    for (int64_t d = 0; d < o->shape[2]; d++)
      for (int64_t h = 0; h < o->shape[3]; h++)
        for (int64_t w = 0; w < o->shape[4]; w++)
          *dst++ = (float)xr_load_element(c->base, o->dtype,
                                          c->offset + xr_conv_offset(o, i0, i1, d, h, w));
  }
}

/* Stores plane (i0, i1) of the float result through the operand's strides. */
static void store_plane(const cpu_operand_t *c, int64_t i0, int64_t i1) {
  const xr_conv_operand_t *o = c->o;
  const float *src = c->f + (i0 * o->shape[1] + i1) * plane_size(o);
  for (int64_t d = 0; d < o->shape[2]; d++)
    for (int64_t h = 0; h < o->shape[3]; h++)
      for (int64_t w = 0; w < o->shape[4]; w++)
        xr_store_element(c->base, o->dtype, c->offset + xr_conv_offset(o, i0, i1, d, h, w), *src++);
}

static int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}
static int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* The output positions o in [0, out) whose input position o * stride - pad + k * dilation lies
 * in [0, in): [*lo, *hi). */
static void valid_range(int64_t in, int64_t out, int64_t stride, int64_t pad, int64_t k,
                        int64_t dilation, int64_t *lo, int64_t *hi) {
  int64_t shift = pad - k * dilation;
  *lo = ceil_div(shift, stride);
  *hi = floor_div(in - 1 + shift, stride) + 1;
  if (*lo < 0) *lo = 0;
  if (*hi > out) *hi = out;
}

/* valid_range in each spatial dim for kernel position (kd, kh, kw). */
static void window_ranges(const xr_conv_problem_t *p, int64_t kd, int64_t kh, int64_t kw,
                          int64_t *d0, int64_t *d1, int64_t *h0, int64_t *h1, int64_t *w0,
                          int64_t *w1) {
  valid_range(p->in[0], p->out[0], p->stride[0], p->pad[0], kd, p->dilation[0], d0, d1);
  valid_range(p->in[1], p->out[1], p->stride[1], p->pad[1], kh, p->dilation[1], h0, h1);
  valid_range(p->in[2], p->out[2], p->stride[2], p->pad[2], kw, p->dilation[2], w0, w1);
}

static float bias_value(const cpu_step_t *s, int64_t c) {
  return s->bias.f ? s->bias.f[c] : 0.0f;
}

/* y[n, co] for item n * c_out + co. */
static void run_forward(void *ctx, size_t begin, size_t end) {
  const cpu_step_t *s = ctx;
  const xr_conv_problem_t *p = s->p;
  int64_t cg_in = p->c_in / p->groups, cg_out = p->c_out / p->groups;
  int64_t in_plane = p->in[0] * p->in[1] * p->in[2], out_plane = p->out[0] * p->out[1] * p->out[2];
  int64_t kpos = p->kernel[0] * p->kernel[1] * p->kernel[2];
  for (size_t item = begin; item < end; item++) {
    int64_t n = (int64_t)item / p->c_out, co = (int64_t)item % p->c_out, g = co / cg_out;
    float *acc = s->y.f + (int64_t)item * out_plane;
    float b = bias_value(s, co);
    for (int64_t i = 0; i < out_plane; i++) acc[i] = b;
    for (int64_t ci = 0; ci < cg_in; ci++) {
      const float *xp = s->x.f + (n * p->c_in + g * cg_in + ci) * in_plane;
      const float *wp = s->w.f + (co * cg_in + ci) * kpos;
      for (int64_t kd = 0; kd < p->kernel[0]; kd++)
        for (int64_t kh = 0; kh < p->kernel[1]; kh++)
          for (int64_t kw = 0; kw < p->kernel[2]; kw++) {
            float wv = wp[(kd * p->kernel[1] + kh) * p->kernel[2] + kw];
            int64_t d0, d1, h0, h1, w0, w1;
            window_ranges(p, kd, kh, kw, &d0, &d1, &h0, &h1, &w0, &w1);
            for (int64_t od = d0; od < d1; od++)
              for (int64_t oh = h0; oh < h1; oh++) {
                int64_t id = od * p->stride[0] - p->pad[0] + kd * p->dilation[0];
                int64_t ih = oh * p->stride[1] - p->pad[1] + kh * p->dilation[1];
                const float *xr =
                    xp + (id * p->in[1] + ih) * p->in[2] - p->pad[2] + kw * p->dilation[2];
                float *ar = acc + (od * p->out[1] + oh) * p->out[2];
                int64_t sw = p->stride[2];
                if (sw == 1)
                  for (int64_t ow = w0; ow < w1; ow++) ar[ow] += wv * xr[ow];
                else
                  for (int64_t ow = w0; ow < w1; ow++) ar[ow] += wv * xr[ow * sw];
              }
          }
    }
    store_plane(&s->y, n, co);
  }
}

/* x[n, ci] for item n * c_in + ci: the forward's products scattered back. */
static void run_backward_data(void *ctx, size_t begin, size_t end) {
  const cpu_step_t *s = ctx;
  const xr_conv_problem_t *p = s->p;
  int64_t cg_in = p->c_in / p->groups, cg_out = p->c_out / p->groups;
  int64_t in_plane = p->in[0] * p->in[1] * p->in[2], out_plane = p->out[0] * p->out[1] * p->out[2];
  int64_t kpos = p->kernel[0] * p->kernel[1] * p->kernel[2];
  for (size_t item = begin; item < end; item++) {
    int64_t n = (int64_t)item / p->c_in, ci = (int64_t)item % p->c_in, g = ci / cg_in;
    float *acc = s->x.f + (int64_t)item * in_plane;
    float b = bias_value(s, ci);
    for (int64_t i = 0; i < in_plane; i++) acc[i] = b;
    for (int64_t co = g * cg_out; co < (g + 1) * cg_out; co++) {
      const float *yp = s->y.f + (n * p->c_out + co) * out_plane;
      const float *wp = s->w.f + (co * cg_in + ci - g * cg_in) * kpos;
      for (int64_t kd = 0; kd < p->kernel[0]; kd++)
        for (int64_t kh = 0; kh < p->kernel[1]; kh++)
          for (int64_t kw = 0; kw < p->kernel[2]; kw++) {
            float wv = wp[(kd * p->kernel[1] + kh) * p->kernel[2] + kw];
            int64_t d0, d1, h0, h1, w0, w1;
            window_ranges(p, kd, kh, kw, &d0, &d1, &h0, &h1, &w0, &w1);
            for (int64_t od = d0; od < d1; od++)
              for (int64_t oh = h0; oh < h1; oh++) {
                int64_t id = od * p->stride[0] - p->pad[0] + kd * p->dilation[0];
                int64_t ih = oh * p->stride[1] - p->pad[1] + kh * p->dilation[1];
                float *ar = acc + (id * p->in[1] + ih) * p->in[2] - p->pad[2] + kw * p->dilation[2];
                const float *yr = yp + (od * p->out[1] + oh) * p->out[2];
                int64_t sw = p->stride[2];
                for (int64_t ow = w0; ow < w1; ow++) ar[ow * sw] += wv * yr[ow];
              }
          }
    }
    store_plane(&s->x, n, ci);
  }
}

/* w[co, ci] for item co * (c_in / groups) + ci. */
static void run_backward_weight(void *ctx, size_t begin, size_t end) {
  const cpu_step_t *s = ctx;
  const xr_conv_problem_t *p = s->p;
  int64_t cg_in = p->c_in / p->groups, cg_out = p->c_out / p->groups;
  int64_t in_plane = p->in[0] * p->in[1] * p->in[2], out_plane = p->out[0] * p->out[1] * p->out[2];
  int64_t kpos = p->kernel[0] * p->kernel[1] * p->kernel[2];
  for (size_t item = begin; item < end; item++) {
    int64_t co = (int64_t)item / cg_in, ci = (int64_t)item % cg_in, g = co / cg_out;
    float *wp = s->w.f + (int64_t)item * kpos;
    for (int64_t kd = 0; kd < p->kernel[0]; kd++)
      for (int64_t kh = 0; kh < p->kernel[1]; kh++)
        for (int64_t kw = 0; kw < p->kernel[2]; kw++) {
          int64_t d0, d1, h0, h1, w0, w1;
          window_ranges(p, kd, kh, kw, &d0, &d1, &h0, &h1, &w0, &w1);
          double acc = 0;
          for (int64_t n = 0; n < p->n; n++) {
            const float *yp = s->y.f + (n * p->c_out + co) * out_plane;
            const float *xp = s->x.f + (n * p->c_in + g * cg_in + ci) * in_plane;
            for (int64_t od = d0; od < d1; od++)
              for (int64_t oh = h0; oh < h1; oh++) {
                int64_t id = od * p->stride[0] - p->pad[0] + kd * p->dilation[0];
                int64_t ih = oh * p->stride[1] - p->pad[1] + kh * p->dilation[1];
                const float *xr =
                    xp + (id * p->in[1] + ih) * p->in[2] - p->pad[2] + kw * p->dilation[2];
                const float *yr = yp + (od * p->out[1] + oh) * p->out[2];
                int64_t sw = p->stride[2];
                float row = 0;
                for (int64_t ow = w0; ow < w1; ow++) row += yr[ow] * xr[ow * sw];
                acc += row;
              }
          }
          wp[(kd * p->kernel[1] + kh) * p->kernel[2] + kw] = (float)acc;
        }
    store_plane(&s->w, co, ci);
  }
}

/* bias[c] = the sum of channel c of the y slot. */
static void run_bias_grad(void *ctx, size_t begin, size_t end) {
  const cpu_step_t *s = ctx;
  const xr_conv_operand_t *Y = s->y.o;
  int64_t plane = plane_size(Y);
  for (size_t c = begin; c < end; c++) {
    double acc = 0;
    for (int64_t n = 0; n < Y->shape[0]; n++) {
      const float *yp = s->y.f + (n * Y->shape[1] + (int64_t)c) * plane;
      float row = 0;
      for (int64_t i = 0; i < plane; i++) row += yp[i];
      acc += row;
    }
    xr_store_element(s->bias.base, s->bias.o->dtype,
                     s->bias.offset + (int64_t)c * s->bias.o->strides[0], acc);
  }
}

static void cpu_release(void *state) {
  cpu_state_t *st = state;
  if (!st) return;
  for (int i = 0; i < st->count; i++) {
    cpu_step_t *s = &st->step[i];
    cpu_operand_t *all[4] = {&s->x, &s->w, &s->y, &s->bias};
    for (int k = 0; k < 4; k++) free(all[k]->f);
  }
  free(st);
}

/* Binds operand o (absent: nothing) and allocates its float buffer when `buffered`. */
static xr_status_t bind(const xr_tensor_t *tensors, const xr_conv_operand_t *o, bool buffered,
                        cpu_operand_t *c) {
  c->o = o;
  if (o->index < 0) return XR_OK;
  c->offset = tensors[o->index].offset;
  xr_status_t st = xr_tensor_host(&tensors[o->index], &c->base);
  if (st != XR_OK || !buffered) return st;
  size_t n = 1;
  for (int d = 0; d < 5; d++) n *= (size_t)o->shape[d];
  c->f = malloc(sizeof(float) * (n ? n : 1));
  if (!c->f) return xr_error(XR_RESOURCE_EXHAUSTED, "cpu.conv: out of memory for %zu floats", n);
  return XR_OK;
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_conv_problem_t *p = plan->problem;
  cpu_state_t *st = calloc(1, sizeof *st);
  if (!st) return xr_error(XR_RESOURCE_EXHAUSTED, "cpu.conv: out of memory");
  st->count = p->step_count;
  xr_status_t status = XR_OK;
  for (int i = 0; i < p->step_count && status == XR_OK; i++) {
    cpu_step_t *s = &st->step[i];
    const xr_conv_step_t *step = &p->steps[i];
    s->p = p;
    s->step = step;
    /* The bias-gradient result is stored element by element: no buffer. */
    bool bias_buffer = step->pass != XR_CONV_BIAS_GRAD;
    if ((status = bind(tensors, &step->x, true, &s->x)) ||
        (status = bind(tensors, &step->w, true, &s->w)) ||
        (status = bind(tensors, &step->y, true, &s->y)) ||
        (status = bind(tensors, &step->bias, bias_buffer, &s->bias)))
      break;
    cpu_operand_t *read[4] = {NULL};
    switch (step->pass) {
      case XR_CONV_FORWARD: read[0] = &s->x, read[1] = &s->w, read[2] = &s->bias; break;
      case XR_CONV_BACKWARD_DATA: read[0] = &s->y, read[1] = &s->w, read[2] = &s->bias; break;
      case XR_CONV_BACKWARD_WEIGHT: read[0] = &s->x, read[1] = &s->y; break;
      case XR_CONV_BIAS_GRAD: read[0] = &s->y; break;
    }
    for (int k = 0; k < 4; k++)
      if (read[k] && read[k]->o->index >= 0) s->reads[s->read_count++] = read[k];
  }
  if (status != XR_OK) {
    cpu_release(st);
    return status;
  }
  *out_state = st;
  return XR_OK;
}

static xr_status_t cpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_state_t *st = state;
  for (int i = 0; i < st->count; i++) {
    cpu_step_t *s = &st->step[i];
    const xr_conv_problem_t *p = s->p;
    xr_status_t status = XR_OK;
    for (int k = 0; k < s->read_count && status == XR_OK; k++)
      status = xr_hal_stream_enqueue_parallel(stream, (size_t)planes_of(s->reads[k]->o), 1,
                                              convert_planes, s->reads[k]);
    if (status != XR_OK) return status;
    xr_hal_parallel_fn_t fn;
    int64_t items;
    switch (s->step->pass) {
      case XR_CONV_FORWARD: fn = run_forward, items = p->n * p->c_out; break;
      case XR_CONV_BACKWARD_DATA: fn = run_backward_data, items = p->n * p->c_in; break;
      case XR_CONV_BACKWARD_WEIGHT:
        fn = run_backward_weight, items = p->c_out * (p->c_in / p->groups);
        break;
      default: fn = run_bias_grad, items = s->bias.o->shape[0]; break;
    }
    if (items > 0 && (status = xr_hal_stream_enqueue_parallel(stream, (size_t)items, 1, fn, s)))
      return status;
  }
  return XR_OK;
}

const xr_kernel_impl_t xr_cpu_conv_impl = {
    .name = "cpu.conv",
    .driver = "cpu",
    .prepare = cpu_prepare,
    .enqueue = cpu_enqueue,
    .release = cpu_release,
};
