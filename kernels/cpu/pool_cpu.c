/* cpu.pool: the pool family (kernels/pool.h) on the cpu in fp32, one (n, c) plane per task on
 * the device's thread pool. Each task gathers its input plane (any strides, fp32 / fp16 / bf16)
 * into a contiguous fp32 buffer once, computes there, and writes its result plane rounded once
 * to the result's dtype; the backwards scatter into an fp32 plane the same way. Semantics as
 * the reference (kernels/pool.c), whose window and source-index helpers it calls. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/plane_io.h"
#include "kernels/pool.h"

typedef struct cpu_pool {
  const xr_pool_problem_t *p;
  void *base[3]; /* x, y, indices */
  int64_t off[3];
} cpu_pool_t;

static int64_t index_at(const cpu_pool_t *s, int64_t n, int64_t c, int64_t h, int64_t w) {
  const xr_view5_t *v = &s->p->indices;
  return s->off[2] + n * v->strides[0] + c * v->strides[1] + h * v->strides[3] + w * v->strides[4];
}

/* The result plane y from the input plane x (both contiguous fp32, d-h-w order). */
static void forward_plane(const cpu_pool_t *s, int64_t n, int64_t c, const float *x, float *y) {
  const xr_pool_problem_t *p = s->p;
  const int64_t H = p->in[1], W = p->in[2];
  for (int64_t od = 0; od < p->out[0]; od++)
    for (int64_t oh = 0; oh < p->out[1]; oh++)
      for (int64_t ow = 0; ow < p->out[2]; ow++) {
        float v = 0;
        if (p->kind == XR_POOL_MAX) {
          int64_t best = -1;
          v = -INFINITY;
          for (int64_t kh = 0; kh < p->kernel[1]; kh++) {
            int64_t ih = oh * p->stride[1] - p->pad[1] + kh * p->dilation[1];
            if (ih < 0 || ih >= H) continue;
            for (int64_t kw = 0; kw < p->kernel[2]; kw++) {
              int64_t iw = ow * p->stride[2] - p->pad[2] + kw * p->dilation[2];
              if (iw < 0 || iw >= W) continue;
              float e = x[ih * W + iw];
              if (best < 0 || e > v || (isnan(e) && !isnan(v))) v = e, best = ih * W + iw;
            }
          }
          ((int64_t *)s->base[2])[index_at(s, n, c, oh, ow)] = best;
        } else if (p->kind == XR_POOL_AVG || p->kind == XR_POOL_ADAPTIVE_AVG) {
          int64_t win[4];
          float divisor = (float)xr_pool_avg_window(p, oh, ow, win);
          for (int64_t ih = win[0]; ih < win[1]; ih++)
            for (int64_t iw = win[2]; iw < win[3]; iw++) v += x[ih * W + iw];
          v /= divisor;
        } else if (p->kind == XR_POOL_NEAREST) {
          v = x[(xr_pool_nearest_source(p, 0, od) * H + xr_pool_nearest_source(p, 1, oh)) * W +
                xr_pool_nearest_source(p, 2, ow)];
        } else { /* bilinear */
          int64_t h[2], w[2];
          float lh = xr_pool_linear_source(p, 1, oh, h), lw = xr_pool_linear_source(p, 2, ow, w);
          for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++)
              v += (a ? lh : 1 - lh) * (b ? lw : 1 - lw) * x[h[a] * W + w[b]];
        }
        y[(od * p->out[1] + oh) * p->out[2] + ow] = v;
      }
}

/* grad_input plane gx (zeroed) from the grad_output plane g. */
static void backward_plane(const cpu_pool_t *s, int64_t n, int64_t c, const float *g, float *gx) {
  const xr_pool_problem_t *p = s->p;
  const int64_t plane = p->in[1] * p->in[2];
  for (int64_t oh = 0; oh < p->out[1]; oh++)
    for (int64_t ow = 0; ow < p->out[2]; ow++) {
      float v = g[oh * p->out[2] + ow];
      if (p->kind == XR_POOL_MAX_BACKWARD) {
        const xr_view5_t *I = &p->indices;
        int64_t at = index_at(s, n, c, oh, ow);
        int64_t i = I->dtype == XR_DTYPE_I64 ? ((const int64_t *)s->base[2])[at]
                                             : ((const int32_t *)s->base[2])[at];
        if (i >= 0 && i < plane) gx[i] += v;
        continue;
      }
      int64_t win[4];
      float share = v / (float)xr_pool_avg_window(p, oh, ow, win);
      for (int64_t ih = win[0]; ih < win[1]; ih++)
        for (int64_t iw = win[2]; iw < win[3]; iw++) gx[ih * p->in[2] + iw] += share;
    }
}

static void run_planes(void *ctx, size_t begin, size_t end) {
  const cpu_pool_t *s = ctx;
  const xr_pool_problem_t *p = s->p;
  bool backward = xr_pool_is_backward(p->kind);
  int64_t in_n = p->in[0] * p->in[1] * p->in[2], out_n = p->out[0] * p->out[1] * p->out[2];
  float *in = malloc(sizeof(float) * (size_t)in_n), *out = malloc(sizeof(float) * (size_t)out_n);
  if (in && out) {
    int64_t C = p->x.shape[1];
    for (size_t item = begin; item < end; item++) {
      int64_t n = (int64_t)item / C, c = (int64_t)item % C;
      if (backward) {
        xr_plane_gather(s->base[1], s->off[1], &p->y, n, c, p->out, out);
        memset(in, 0, sizeof(float) * (size_t)in_n);
        backward_plane(s, n, c, out, in);
        xr_plane_scatter(s->base[0], s->off[0], &p->x, n, c, p->in, in);
      } else {
        xr_plane_gather(s->base[0], s->off[0], &p->x, n, c, p->in, in);
        forward_plane(s, n, c, in, out);
        xr_plane_scatter(s->base[1], s->off[1], &p->y, n, c, p->out, out);
      }
    }
  } /* else: out of memory, and the poisoned result shows it */
  free(in);
  free(out);
}

static xr_status_t cpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_pool_problem_t *p = plan->problem;
  if (!xr_fast_float_dtype(p->x.dtype) || !xr_fast_float_dtype(p->y.dtype))
    return xr_error(XR_UNIMPLEMENTED, "cpu.pool: %s: %s tensors (fp32, fp16, bf16; f64: ref.pool)",
                    plan->op->name,
                    xr_dtype_name(xr_fast_float_dtype(p->x.dtype) ? p->y.dtype : p->x.dtype));
  return XR_OK;
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_pool_problem_t *p = plan->problem;
  cpu_pool_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  const xr_view5_t *views[3] = {&p->x, &p->y, &p->indices};
  for (int k = 0; k < 3; k++) {
    if (views[k]->index < 0) continue;
    s->off[k] = tensors[views[k]->index].offset;
    xr_status_t st = xr_tensor_host(&tensors[views[k]->index], &s->base[k]);
    if (st != XR_OK) {
      free(s);
      return st;
    }
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t cpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_pool_t *s = state;
  return xr_hal_stream_enqueue_parallel(stream, (size_t)(s->p->x.shape[0] * s->p->x.shape[1]), 1,
                                        run_planes, s);
}

const xr_kernel_impl_t xr_cpu_pool_impl = {
    .name = "cpu.pool",
    .driver = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .enqueue = cpu_enqueue,
    .release = free,
};
