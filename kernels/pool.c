/* The pool family: pooling and upsampling as PyTorch defines them, with a plain-C reference.
 *   max_pool2d_with_indices(self, kernel_size, stride=[], padding=0, dilation=1, ceil_mode)
 *       -> (values, indices): indices are int64 positions h * W + w in the input plane; the
 *       first maximum wins, NaN propagates.
 *   max_pool2d_with_indices_backward(grad_output, self, kernel_size, stride, padding,
 *       dilation, ceil_mode, indices) -> grad_input: each grad_output element added at its
 *       index (the family's initializer makes recorded-shape indices valid window positions).
 *   avg_pool2d(self, kernel_size, stride=[], padding=0, ceil_mode, count_include_pad=True,
 *       divisor_override=None): zero padding; the divisor is the override, else the window
 *       clipped to the padded input (count_include_pad) or its real elements.
 *       avg_pool2d_backward(grad_output, self, the same...): each grad_output element / that
 *       divisor added over its window's real elements.
 *   adaptive_avg_pool2d / _adaptive_avg_pool2d(self, output_size): cell i averages
 *       [floor(i * in / out), ceil((i + 1) * in / out)); _adaptive_avg_pool2d_backward
 *       (grad_output, self) spreads each cell's gradient evenly over those.
 *   upsample_nearest1d/2d/3d(self, output_size, scales...) and their .vec(input, output_size?,
 *       scale_factors?): src = min(floor(dst * scale), in - 1), scale = 1 / scale_factor when
 *       given, else in / out, in float as PyTorch computes it.
 *   upsample_bilinear2d(self, output_size, align_corners, scales_h?, scales_w?) and .vec: src =
 *       dst * (in - 1) / (out - 1) with align_corners, else max(0, (dst + 0.5) * scale - 0.5);
 *       linear between floor(src) and min(floor(src) + 1, in - 1) in h and w.
 * Pooling is 2-D; inputs are [N, C, H, W] or unbatched [C, H, W], any strides. Outputs take the
 * input's memory format (channels-last in, channels-last out). The reference sums in double and
 * rounds once; cpu.pool (kernels/cpu/pool_cpu.c, fp32) runs every op on the cpu, opencl.pool and
 * gpu.pool (kernels/vision_device.c) on OpenCL, CUDA and HIP devices. */
#include "kernels/pool.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/initializer.h"

static const char *const pool_ops[] = {
    "aten::max_pool2d_with_indices",
    "aten::max_pool2d_with_indices_backward",
    "aten::avg_pool2d",
    "aten::avg_pool2d_backward",
    "aten::adaptive_avg_pool2d",
    "aten::_adaptive_avg_pool2d",
    "aten::_adaptive_avg_pool2d_backward",
    "aten::upsample_nearest1d",
    "aten::upsample_nearest2d",
    "aten::upsample_nearest3d",
    "aten::upsample_bilinear2d",
    NULL,
};

static bool is_float(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16 || d == XR_DTYPE_F64;
}

static void view_of(xr_view5_t *v, int index, xr_dtype_t dtype, int rank, const int64_t *shape,
                    const int64_t *strides, int spatial) {
  v->index = index;
  v->dtype = dtype;
  for (int d = 0; d < 5; d++) v->shape[d] = 1, v->strides[d] = 0;
  int lead = rank - spatial; /* 1 (unbatched) or 2 */
  if (lead == 2) v->shape[0] = shape[0], v->strides[0] = strides[0];
  v->shape[1] = shape[lead - 1], v->strides[1] = strides[lead - 1];
  for (int d = 0; d < spatial; d++) {
    v->shape[5 - spatial + d] = shape[lead + d];
    v->strides[5 - spatial + d] = strides[lead + d];
  }
}

/* Return k shaped like input x (its rank) with spatial sizes `out`, in x's memory format. */
static void add_return(xr_op_plan_t *plan, int k, const xr_tensor_spec_t *x, int spatial,
                       const int64_t *out, xr_dtype_t dtype, xr_view5_t *v) {
  int64_t shape[5], strides[5];
  int lead = x->rank - spatial;
  for (int d = 0; d < lead; d++) shape[d] = x->shape[d];
  for (int d = 0; d < spatial; d++) shape[lead + d] = out[3 - spatial + d];
  xr_desc_set_format(&plan->returns[k], dtype, x->rank, shape, xr_spec_channels_last(x), strides);
  view_of(v, (int)plan->input_count + k, dtype, x->rank, shape, strides, spatial);
}

/* A 2-entry (or 1, repeated) int list; an empty or absent one gives `fallback` (NULL: error). */
static xr_status_t pair(const xr_op_plan_t *plan, int position, const char *name,
                        const int64_t *fallback, int64_t lo, int64_t *out) {
  int64_t v[2];
  int n = 0;
  const xr_value_t *value = xr_op_arg(plan->op, position, name);
  if (value && value->kind != XR_VALUE_NULL) {
    xr_status_t st = xr_arg_int_list(plan->op, position, name, false, v, 2, &n);
    if (st != XR_OK) return st;
  }
  if (n == 0) {
    if (!fallback) return xr_plan_error(plan, "%s: missing", name);
    out[0] = fallback[0], out[1] = fallback[1];
  } else {
    out[0] = v[0], out[1] = v[n == 2 ? 1 : 0];
  }
  for (int d = 0; d < 2; d++)
    if (out[d] < lo)
      return xr_plan_error(plan, "%s: %lld must be at least %lld", name, (long long)out[d],
                           (long long)lo);
  return XR_OK;
}

static int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t out = (span + (ceil_mode ? s - 1 : 0)) / s + 1;
  /* the last window must start inside the input or the left padding */
  if (ceil_mode && (out - 1) * s >= in + p) out--;
  return out;
}

static xr_status_t analyze_pool(xr_op_plan_t *plan, xr_pool_problem_t *p, const xr_tensor_spec_t *x,
                                int base) {
  const xr_op_t *op = plan->op;
  bool avg = p->kind == XR_POOL_AVG || p->kind == XR_POOL_AVG_BACKWARD;
  int64_t k[2], s[2], pad[2], dil[2] = {1, 1}, one[2] = {1, 1}, zero[2] = {0, 0};
  xr_status_t st;
  if ((st = pair(plan, base + 1, "kernel_size", NULL, 1, k)) ||
      (st = pair(plan, base + 2, "stride", k, 1, s)) ||
      (st = pair(plan, base + 3, "padding", zero, 0, pad)) ||
      (!avg && (st = pair(plan, base + 4, "dilation", one, 1, dil))) ||
      (st = xr_arg_bool(op, base + (avg ? 4 : 5), "ceil_mode", false, &p->ceil_mode)))
    return st;
  if (avg) {
    p->count_include_pad = true;
    if ((st = xr_arg_bool(op, base + 5, "count_include_pad", false, &p->count_include_pad)) ||
        (st = xr_arg_int(op, base + 6, "divisor_override", false, &p->divisor)))
      return st;
    if (p->divisor < 0) return xr_plan_error(plan, "divisor_override: %lld", (long long)p->divisor);
  }
  for (int d = 0; d < 2; d++) {
    if (pad[d] * 2 > k[d])
      return xr_plan_error(plan, "padding: %lld is more than half the kernel_size %lld",
                           (long long)pad[d], (long long)k[d]);
    p->kernel[1 + d] = k[d], p->stride[1 + d] = s[d], p->pad[1 + d] = pad[d];
    p->dilation[1 + d] = dil[d];
    p->out[1 + d] =
        pooled_size(x->shape[x->rank - 2 + d], k[d], s[d], pad[d], dil[d], p->ceil_mode);
    if (p->out[1 + d] < 1)
      return xr_plan_error(plan, "kernel_size: %lld x %lld gives an output size below 1",
                           (long long)k[0], (long long)k[1]);
  }
  return XR_OK;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  const xr_op_t *op = plan->op;
  xr_pool_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", op->name);
  plan->problem = p;
  p->indices.index = -1;
  const char *name = op->name;
  bool backward = strstr(name, "_backward") != NULL;
  p->kind = strstr(name, "max_pool2d") ? (backward ? XR_POOL_MAX_BACKWARD : XR_POOL_MAX)
            : strstr(name, "adaptive_avg_pool2d")
                ? (backward ? XR_POOL_ADAPTIVE_AVG_BACKWARD : XR_POOL_ADAPTIVE_AVG)
            : strstr(name, "avg_pool2d")       ? (backward ? XR_POOL_AVG_BACKWARD : XR_POOL_AVG)
            : strstr(name, "upsample_nearest") ? XR_POOL_NEAREST
                                               : XR_POOL_BILINEAR;
  p->spatial = p->kind == XR_POOL_NEAREST ? name[strlen(name) - 2] - '0' : 2;
  int x_index = -1, grad = -1, indices = -1;
  xr_status_t st;
  if (backward) {
    if ((st = xr_arg_tensor(plan, 0, "grad_output", true, &grad)) ||
        (st = xr_arg_tensor(plan, 1, "self", true, &x_index)) ||
        (p->kind == XR_POOL_MAX_BACKWARD &&
         (st = xr_arg_tensor(plan, 7, "indices", true, &indices))))
      return st;
  } else {
    const xr_value_t *self = xr_op_arg(op, 0, "self");
    if ((st = xr_arg_tensor(plan, 0, self ? "self" : "input", true, &x_index))) return st;
  }
  const xr_tensor_spec_t *x = plan->inputs[x_index];
  if (x->rank != p->spatial + 1 && x->rank != p->spatial + 2)
    return xr_plan_error(plan, "self: expected %d-D or %d-D, got %d-D", p->spatial + 1,
                         p->spatial + 2, x->rank);
  if (!is_float(x->dtype))
    return xr_plan_error(plan, "self: expected a float tensor, got %s", xr_dtype_name(x->dtype));
  for (int d = 0; d < 3; d++) {
    p->in[d] = d >= 3 - p->spatial ? x->shape[x->rank - 3 + d] : 1;
    p->out[d] = p->in[d];
    p->kernel[d] = p->stride[d] = p->dilation[d] = 1;
  }
  view_of(&p->x, x_index, x->dtype, x->rank, x->shape, x->strides, p->spatial);
  double elements = 1;
  if (p->kind == XR_POOL_ADAPTIVE_AVG_BACKWARD) { /* the pooled size is grad_output's */
    const xr_tensor_spec_t *g = plan->inputs[grad];
    p->out[1] = g->rank >= 2 ? g->shape[g->rank - 2] : 0;
    p->out[2] = g->shape[g->rank - 1];
  } else if (p->kind != XR_POOL_ADAPTIVE_AVG && p->kind != XR_POOL_NEAREST &&
             p->kind != XR_POOL_BILINEAR) {
    if ((st = analyze_pool(plan, p, x, backward ? 1 : 0))) return st;
  } else if (p->kind == XR_POOL_ADAPTIVE_AVG) {
    int64_t size[2];
    if ((st = pair(plan, 1, "output_size", NULL, 1, size))) return st;
    p->out[1] = size[0], p->out[2] = size[1];
  } else { /* upsampling: output_size, or (.vec) scale_factors */
    bool vec = xr_op_arg(op, -1, "scale_factors") || xr_op_arg(op, 0, "input");
    int64_t size[3];
    int n = 0;
    const xr_value_t *os = xr_op_arg(op, 1, "output_size");
    if (os && os->kind != XR_VALUE_NULL &&
        (st = xr_arg_int_list(op, 1, "output_size", false, size, 3, &n)))
      return st;
    if (p->kind == XR_POOL_BILINEAR &&
        (st = xr_arg_bool(op, 2, "align_corners", true, &p->align_corners)))
      return st;
    int scales_at = p->kind == XR_POOL_BILINEAR ? 3 : 2;
    if (vec) {
      const xr_value_t *sf = xr_op_arg(op, scales_at, "scale_factors");
      if (sf && sf->kind == XR_VALUE_LIST) {
        if ((int)sf->as.list.count != p->spatial)
          return xr_plan_error(plan, "scale_factors: %zu entries for %d spatial dims",
                               sf->as.list.count, p->spatial);
        for (int d = 0; d < p->spatial; d++) {
          const xr_value_t *e = &sf->as.list.items[d];
          p->scale[3 - p->spatial + d] = e->kind == XR_VALUE_FLOAT ? e->as.f : (double)e->as.i;
        }
      }
    } else {
      static const char *const names[3][3] = {{"scales", NULL, NULL},
                                              {"scales_h", "scales_w", NULL},
                                              {"scales_d", "scales_h", "scales_w"}};
      for (int d = 0; d < p->spatial; d++) {
        double v = 0;
        if ((st = xr_arg_double(op, scales_at + d, names[p->spatial - 1][d], false, &v))) return st;
        p->scale[3 - p->spatial + d] = v;
      }
    }
    for (int d = 0; d < p->spatial; d++) {
      int c = 3 - p->spatial + d;
      if (n == p->spatial)
        p->out[c] = size[d];
      else if (n == 0 && p->scale[c] > 0)
        p->out[c] = (int64_t)floor((double)p->in[c] * p->scale[c]);
      else
        return xr_plan_error(plan, "output_size: expected %d entries (or scale_factors)",
                             p->spatial);
      if (p->out[c] < 1) return xr_plan_error(plan, "output_size: %lld", (long long)p->out[c]);
    }
  }
  if (backward) {
    const xr_tensor_spec_t *g = plan->inputs[grad];
    if (g->rank != x->rank || g->shape[x->rank - 1] != p->out[2] ||
        g->shape[x->rank - 2] != p->out[1] || p->out[1] < 1 || p->out[2] < 1)
      return xr_plan_error(plan, "grad_output: expected the pooled shape [.., %lld, %lld]",
                           (long long)p->out[1], (long long)p->out[2]);
    if (!is_float(g->dtype))
      return xr_plan_error(plan, "grad_output: expected a float tensor, got %s",
                           xr_dtype_name(g->dtype));
    view_of(&p->y, grad, g->dtype, g->rank, g->shape, g->strides, 2);
    if (p->kind == XR_POOL_MAX_BACKWARD) {
      const xr_tensor_spec_t *ix = plan->inputs[indices];
      if (ix->rank != x->rank || memcmp(ix->shape, g->shape, sizeof(int64_t) * (size_t)g->rank))
        return xr_plan_error(plan, "indices: expected grad_output's shape");
      if (ix->dtype != XR_DTYPE_I64 && ix->dtype != XR_DTYPE_I32)
        return xr_plan_error(plan, "indices: expected int64, got %s", xr_dtype_name(ix->dtype));
      view_of(&p->indices, indices, ix->dtype, ix->rank, ix->shape, ix->strides, 2);
    }
    plan->return_count = 1;
    xr_view5_t gi;
    add_return(plan, 0, x, 2, p->in, x->dtype, &gi);
    p->x = gi; /* the written gradient takes the input's place */
  } else {
    plan->return_count = p->kind == XR_POOL_MAX ? 2 : 1;
    add_return(plan, 0, x, p->spatial, p->out, x->dtype, &p->y);
    if (p->kind == XR_POOL_MAX) add_return(plan, 1, x, 2, p->out, XR_DTYPE_I64, &p->indices);
  }
  for (int d = 0; d < 5; d++) elements *= (double)p->y.shape[d];
  double window = xr_pool_is_adaptive(p->kind)
                      ? (double)(p->in[1] * p->in[2]) / (double)(p->out[1] * p->out[2])
                      : (double)(p->kernel[1] * p->kernel[2]);
  plan->flops = elements * (p->kind == XR_POOL_BILINEAR  ? 8
                            : p->kind == XR_POOL_NEAREST ? 0
                                                         : window);
  /* Bytes: the input (backward: grad_input written) once, each pooled element once (forward:
   * written; backward: grad_output read), and max pooling's index per pooled element in its
   * own dtype (written forward, read backward; int64 is 8 bytes whatever the values' dtype). */
  double index_size = p->kind == XR_POOL_MAX              ? (double)xr_dtype_size(XR_DTYPE_I64)
                      : p->kind == XR_POOL_MAX_BACKWARD ? (double)xr_dtype_size(p->indices.dtype)
                                                          : 0.0;
  plan->bytes = (double)xr_spec_numel(x) * (double)xr_dtype_size(x->dtype) +
                elements * ((double)xr_dtype_size(p->y.dtype) + index_size);
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* CPU reference                                                                              */

typedef struct ref_state {
  const xr_pool_problem_t *p;
  void *x, *y, *ix;
  int64_t x_off, y_off, ix_off;
} ref_state_t;

static int64_t at(const xr_view5_t *v, int64_t off, int64_t n, int64_t c, int64_t d, int64_t h,
                  int64_t w) {
  return off + n * v->strides[0] + c * v->strides[1] + d * v->strides[2] + h * v->strides[3] +
         w * v->strides[4];
}

static double load(void *base, const xr_view5_t *v, int64_t i) {
  return xr_load_element(base, v->dtype, i);
}

float xr_pool_source_scale(const xr_pool_problem_t *p, int d, bool align) {
  if (align) return p->out[d] > 1 ? (float)(p->in[d] - 1) / (float)(p->out[d] - 1) : 0.0f;
  return p->scale[d] > 0 ? (float)(1.0 / p->scale[d]) : (float)p->in[d] / (float)p->out[d];
}

int64_t xr_pool_nearest_source(const xr_pool_problem_t *p, int d, int64_t i) {
  float s = xr_pool_source_scale(p, d, false);
  int64_t src = (int64_t)floorf((float)i * s);
  return src < p->in[d] - 1 ? src : p->in[d] - 1;
}

float xr_pool_linear_source(const xr_pool_problem_t *p, int d, int64_t o, int64_t *src) {
  float scale = xr_pool_source_scale(p, d, p->align_corners);
  float f = p->align_corners ? (float)o * scale : ((float)o + 0.5f) * scale - 0.5f;
  if (f < 0) f = 0;
  int64_t i0 = (int64_t)f;
  if (i0 > p->in[d] - 1) i0 = p->in[d] - 1;
  src[0] = i0, src[1] = i0 + 1 < p->in[d] ? i0 + 1 : i0;
  return f - (float)i0;
}

double xr_pool_avg_window(const xr_pool_problem_t *p, int64_t oh, int64_t ow, int64_t *win) {
  if (xr_pool_is_adaptive(p->kind)) {
    win[0] = xr_pool_adaptive_start(oh, p->in[1], p->out[1]);
    win[1] = xr_pool_adaptive_end(oh, p->in[1], p->out[1]);
    win[2] = xr_pool_adaptive_start(ow, p->in[2], p->out[2]);
    win[3] = xr_pool_adaptive_end(ow, p->in[2], p->out[2]);
    return (double)((win[1] - win[0]) * (win[3] - win[2]));
  }
  int64_t h0 = oh * p->stride[1] - p->pad[1], w0 = ow * p->stride[2] - p->pad[2];
  int64_t h1 = h0 + p->kernel[1], w1 = w0 + p->kernel[2];
  if (h1 > p->in[1] + p->pad[1]) h1 = p->in[1] + p->pad[1];
  if (w1 > p->in[2] + p->pad[2]) w1 = p->in[2] + p->pad[2];
  int64_t padded = (h1 - h0) * (w1 - w0);
  win[0] = h0 > 0 ? h0 : 0, win[1] = h1 < p->in[1] ? h1 : p->in[1];
  win[2] = w0 > 0 ? w0 : 0, win[3] = w1 < p->in[2] ? w1 : p->in[2];
  return (double)(p->divisor             ? p->divisor
                  : p->count_include_pad ? padded
                                         : (win[1] - win[0]) * (win[3] - win[2]));
}

/* Output plane (n, c) for item = n * C + c. */
static void ref_plane(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_pool_problem_t *p = s->p;
  const xr_view5_t *X = &p->x, *Y = &p->y, *I = &p->indices;
  int64_t C = X->shape[1];
  for (size_t item = begin; item < end; item++) {
    int64_t n = (int64_t)item / C, c = (int64_t)item % C;
    for (int64_t od = 0; od < p->out[0]; od++)
      for (int64_t oh = 0; oh < p->out[1]; oh++)
        for (int64_t ow = 0; ow < p->out[2]; ow++) {
          double v = 0;
          int64_t best = -1;
          if (p->kind == XR_POOL_MAX) {
            v = -INFINITY;
            for (int64_t kh = 0; kh < p->kernel[1]; kh++) {
              int64_t ih = oh * p->stride[1] - p->pad[1] + kh * p->dilation[1];
              if (ih < 0 || ih >= p->in[1]) continue;
              for (int64_t kw = 0; kw < p->kernel[2]; kw++) {
                int64_t iw = ow * p->stride[2] - p->pad[2] + kw * p->dilation[2];
                if (iw < 0 || iw >= p->in[2]) continue;
                double e = load(s->x, X, at(X, s->x_off, n, c, 0, ih, iw));
                if (best < 0 || e > v || (isnan(e) && !isnan(v))) v = e, best = ih * p->in[2] + iw;
              }
            }
            xr_store_element(s->ix, I->dtype, at(I, s->ix_off, n, c, 0, oh, ow), (double)best);
          } else if (p->kind == XR_POOL_AVG || p->kind == XR_POOL_ADAPTIVE_AVG) {
            int64_t win[4];
            double divisor = xr_pool_avg_window(p, oh, ow, win);
            for (int64_t ih = win[0]; ih < win[1]; ih++)
              for (int64_t iw = win[2]; iw < win[3]; iw++)
                v += load(s->x, X, at(X, s->x_off, n, c, 0, ih, iw));
            v /= divisor;
          } else if (p->kind == XR_POOL_NEAREST) {
            v = load(s->x, X,
                     at(X, s->x_off, n, c, xr_pool_nearest_source(p, 0, od),
                        xr_pool_nearest_source(p, 1, oh), xr_pool_nearest_source(p, 2, ow)));
          } else { /* bilinear */
            int64_t h[2], w[2];
            double lh = xr_pool_linear_source(p, 1, oh, h), lw = xr_pool_linear_source(p, 2, ow, w);
            for (int a = 0; a < 2; a++)
              for (int b = 0; b < 2; b++)
                v += (a ? lh : 1 - lh) * (b ? lw : 1 - lw) *
                     load(s->x, X, at(X, s->x_off, n, c, 0, h[a], w[b]));
          }
          xr_store_element(s->y, Y->dtype, at(Y, s->y_off, n, c, od, oh, ow), v);
        }
  }
}

/* grad_input plane (n, c): zero, then each grad_output element added at its index (max) or
 * spread over its window (average). */
static void ref_backward_plane(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_pool_problem_t *p = s->p;
  const xr_view5_t *GI = &p->x, *G = &p->y, *I = &p->indices;
  int64_t C = GI->shape[1], plane = p->in[1] * p->in[2];
  double *acc = malloc(sizeof(double) * (size_t)plane);
  if (!acc) return; /* the poisoned output shows it */
  for (size_t item = begin; item < end; item++) {
    int64_t n = (int64_t)item / C, c = (int64_t)item % C;
    memset(acc, 0, sizeof(double) * (size_t)plane);
    for (int64_t oh = 0; oh < p->out[1]; oh++)
      for (int64_t ow = 0; ow < p->out[2]; ow++) {
        double g = load(s->y, G, at(G, s->y_off, n, c, 0, oh, ow));
        if (p->kind == XR_POOL_MAX_BACKWARD) {
          int64_t i = (int64_t)xr_load_element(s->ix, I->dtype, at(I, s->ix_off, n, c, 0, oh, ow));
          if (i >= 0 && i < plane) acc[i] += g;
          continue;
        }
        int64_t win[4];
        double share = g / xr_pool_avg_window(p, oh, ow, win);
        for (int64_t ih = win[0]; ih < win[1]; ih++)
          for (int64_t iw = win[2]; iw < win[3]; iw++) acc[ih * p->in[2] + iw] += share;
      }
    for (int64_t i = 0; i < plane; i++)
      xr_store_element(s->x, GI->dtype, at(GI, s->x_off, n, c, 0, i / p->in[2], i % p->in[2]),
                       acc[i]);
  }
  free(acc);
}

static xr_status_t bind(const xr_tensor_t *tensors, const xr_view5_t *v, void **base,
                        int64_t *off) {
  *base = NULL;
  if (v->index < 0) return XR_OK;
  *off = tensors[v->index].offset;
  return xr_tensor_host(&tensors[v->index], base);
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_pool_problem_t *p = plan->problem;
  ref_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  xr_status_t st;
  if ((st = bind(tensors, &p->x, &s->x, &s->x_off)) ||
      (st = bind(tensors, &p->y, &s->y, &s->y_off)) ||
      (st = bind(tensors, &p->indices, &s->ix, &s->ix_off))) {
    free(s);
    return st;
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  ref_state_t *s = state;
  size_t planes = (size_t)(s->p->x.shape[0] * s->p->x.shape[1]);
  if (planes == 0) return XR_OK;
  return xr_hal_stream_enqueue_parallel(
      stream, planes, 1, xr_pool_is_backward(s->p->kind) ? ref_backward_plane : ref_plane, s);
}

static const xr_kernel_impl_t ref_pool = {
    .name = "ref.pool",
    .driver = "cpu",
    .reference = true,
    .prepare = ref_prepare,
    .enqueue = ref_enqueue,
    .release = free,
};

/* ------------------------------------------------------------------------------------------ */
/* initializers                                                                               */

/* max_pool2d_with_indices_backward's indices: for each output cell, a random position of its
 * window inside the input, as the forward pass could have chosen. */
static xr_status_t init_max_backward(xr_init_context_t *c) {
  const xr_pool_problem_t *p = c->plan->problem;
  int index = p->indices.index;
  if (index < 0 || c->has_data[index]) return XR_OK;
  const xr_tensor_spec_t *t = c->plan->inputs[index];
  const xr_view5_t *I = &p->indices;
  uint64_t seed = c->seed;
  for (int64_t n = 0; n < I->shape[0]; n++)
    for (int64_t ch = 0; ch < I->shape[1]; ch++)
      for (int64_t oh = 0; oh < p->out[1]; oh++)
        for (int64_t ow = 0; ow < p->out[2]; ow++) {
          int64_t cells[64], count = 0;
          for (int64_t kh = 0; kh < p->kernel[1] && count < 64; kh++) {
            int64_t ih = oh * p->stride[1] - p->pad[1] + kh * p->dilation[1];
            if (ih < 0 || ih >= p->in[1]) continue;
            for (int64_t kw = 0; kw < p->kernel[2] && count < 64; kw++) {
              int64_t iw = ow * p->stride[2] - p->pad[2] + kw * p->dilation[2];
              if (iw >= 0 && iw < p->in[2]) cells[count++] = ih * p->in[2] + iw;
            }
          }
          int64_t pick = count ? cells[xr_rng_next(&seed) % (uint64_t)count] : 0;
          xr_store_element(c->host[index], t->dtype, at(I, t->storage_offset, n, ch, 0, oh, ow),
                           (double)pick);
        }
  xr_init_describe(c, "indices: a random position of each output cell's window");
  return XR_OK;
}

static const struct xr_op_initializer pool_initializers[] = {
    {"aten::max_pool2d_with_indices_backward", init_max_backward},
    {NULL, NULL},
};

static const xr_kernel_impl_t *const pool_impls[] = {
    &xr_cpu_onednn_pool_impl, /* cpu, where oneDNN computes the op as PyTorch does */
    &xr_cpu_pool_impl,        /* cpu */
    &xr_opencl_pool_impl,     /* opencl */
    &xr_gpu_pool_impl,        /* cuda, hip */
    &ref_pool,
    NULL,
};

const xr_op_family_t xr_family_pool = {
    .name = "pool",
    .op_names = pool_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = pool_impls,
    .initializers = pool_initializers,
};
