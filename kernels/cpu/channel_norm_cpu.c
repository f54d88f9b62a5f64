/* cpu.channel_norm: batch norm and group norm (kernels/channel_norm.h) on the cpu in fp32, one
 * statistic per work item on the device's thread pool (a channel for batch norm, batched into
 * tasks of about TASK_ELEMENTS elements; a sample's group of channels for group norm; group
 * norm's parameter gradients one channel per task). Each item
 * gathers its elements (any strides, fp32 / fp16 / bf16) into a contiguous fp32 buffer once,
 * takes the mean and the variance (batch norm: the sum and the sum of squares in one pass; group
 * norm: the mean, then the squares around it; sums in double), and writes its results rounded
 * once. Semantics as the reference (kernels/channel_norm.c). */
#include <math.h>
#include <stdlib.h>

#include "kernels/channel_norm.h"
#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/cpu/plane_io.h"

typedef struct cpu_cn {
  const xr_cn_problem_t *p;
  void *base[XR_CN_SLOTS];
  int64_t off[XR_CN_SLOTS];
  int64_t size[3]; /* d, h, w */
} cpu_cn_t;

/* Vector slot k at (n, c) (a [C] vector: n = 0; group statistics: [N, groups]), or `fallback`. */
static float vec(const cpu_cn_t *s, int k, int64_t n, int64_t c, float fallback) {
  const xr_view5_t *v = &s->p->v[k];
  if (!s->base[k]) return fallback;
  return (float)xr_load_element(s->base[k], v->dtype,
                                s->off[k] + n * v->strides[0] + c * v->strides[1]);
}

static void set_vec(const cpu_cn_t *s, int k, int64_t n, int64_t c, double value) {
  const xr_view5_t *v = &s->p->v[k];
  if (s->base[k])
    xr_store_element(s->base[k], v->dtype, s->off[k] + n * v->strides[0] + c * v->strides[1],
                     value);
}

/* The planes (n, c) for n in [n0, n1), c in [c0, c1), n-major, into or out of one buffer. */
XR_PLANE_IO void gather(const cpu_cn_t *s, int k, int64_t n0, int64_t n1, int64_t c0, int64_t c1,
                        float *out) {
  int64_t plane = s->size[0] * s->size[1] * s->size[2];
  for (int64_t n = n0; n < n1; n++)
    for (int64_t c = c0; c < c1; c++, out += plane)
      xr_plane_gather(s->base[k], s->off[k], &s->p->v[k], n, c, s->size, out);
}

XR_PLANE_IO void scatter(const cpu_cn_t *s, int k, int64_t n0, int64_t n1, int64_t c0, int64_t c1,
                         const float *in) {
  int64_t plane = s->size[0] * s->size[1] * s->size[2];
  for (int64_t n = n0; n < n1; n++)
    for (int64_t c = c0; c < c1; c++, in += plane)
      xr_plane_scatter(s->base[k], s->off[k], &s->p->v[k], n, c, s->size, in);
}

/* Sums in double: as cheap as fp32 next to the loads, and exact enough for any count; 16
 * partial sums, a constant trip count the -O2 vectoriser takes. */
enum { LANES = 16 };

/* The sum and the sum of squares of x[0, count), in one pass. */
XR_CPU_CLONES static void sums_of(const float *x, int64_t count, double *sum, double *sum_sq) {
  double acc[LANES] = {0}, acc_sq[LANES] = {0}, s = 0, q = 0;
  int64_t i = 0;
  for (; i + LANES <= count; i += LANES)
    for (int j = 0; j < LANES; j++) {
      double v = x[i + j];
      acc[j] += v, acc_sq[j] += v * v;
    }
  for (int j = 0; j < LANES; j++) s += acc[j], q += acc_sq[j];
  for (; i < count; i++) s += x[i], q += (double)x[i] * x[i];
  *sum = s, *sum_sq = q;
}

XR_CPU_CLONES static double mean_of(const float *x, int64_t count) {
  double acc[LANES] = {0}, sum = 0;
  int64_t i = 0;
  for (; i + LANES <= count; i += LANES)
    for (int j = 0; j < LANES; j++) acc[j] += x[i + j];
  for (int j = 0; j < LANES; j++) sum += acc[j];
  for (; i < count; i++) sum += x[i];
  return sum / (double)count;
}

XR_CPU_CLONES static float squares_around(const float *x, int64_t count, float mean) {
  double acc[LANES] = {0}, sq = 0;
  int64_t i = 0;
  for (; i + LANES <= count; i += LANES)
    for (int j = 0; j < LANES; j++) {
      float d = x[i + j] - mean;
      acc[j] += (double)d * d;
    }
  for (int j = 0; j < LANES; j++) sq += acc[j];
  for (; i < count; i++) sq += (double)(x[i] - mean) * (x[i] - mean);
  return (float)sq;
}

/* y = x * scale + shift; restrict parameters tell the vectoriser the buffers never overlap
 * (without them it left the loop scalar). */
XR_PLANE_IO void affine(float *restrict y, const float *restrict x, int64_t count, float scale,
                        float shift) {
  XR_PLANE_LOOP(count, y[i] = x[i] * scale + shift);
}

/* The scratch a task needs: two fp32 buffers of `count` elements, on the stack up to
 * SMALL_SCRATCH (a task is often one channel: a malloc per task cost as much as its work). */
enum { SMALL_SCRATCH = 4096 };

typedef struct scratch {
  float *a, *b;
  float small[2][SMALL_SCRATCH];
} scratch_t;

static bool scratch_get(scratch_t *t, int64_t count) {
  if (count <= SMALL_SCRATCH) {
    t->a = t->small[0], t->b = t->small[1];
    return true;
  }
  t->a = malloc(sizeof(float) * (size_t)count);
  t->b = malloc(sizeof(float) * (size_t)count);
  return t->a && t->b;
}

static void scratch_put(scratch_t *t) {
  if (t->a == t->small[0]) return;
  free(t->a);
  free(t->b);
}

/* Batch norm and its backward: item = channel; elements n-major, then spatial. */
XR_CPU_CLONES static void batch_items(void *ctx, size_t begin, size_t end) {
  const cpu_cn_t *s = ctx;
  const xr_cn_problem_t *p = s->p;
  int64_t count = p->n * p->spatial;
  scratch_t t;
  if (!scratch_get(&t, count)) goto done; /* the poisoned results show it */
  for (size_t cc = begin; cc < end; cc++) {
    int64_t c = (int64_t)cc;
    gather(s, XR_CN_X, 0, p->n, c, c + 1, t.a);
    float w = vec(s, XR_CN_WEIGHT, 0, c, 1);
    if (p->kind == XR_CN_BATCH) {
      float mean, invstd;
      if (p->training) {
        double sum, sum_sq;
        sums_of(t.a, count, &sum, &sum_sq);
        mean = (float)(sum / (double)count);
        /* the squared deviations' sum, in double: cancellation costs digits double can spare */
        double deviations = sum_sq - sum * (sum / (double)count);
        float sq = (float)(deviations > 0 ? deviations : 0), var = sq / (float)count;
        invstd = 1.0f / sqrtf(var + (float)p->eps);
        set_vec(s, XR_CN_OUT_MEAN, 0, c, mean);
        set_vec(s, XR_CN_OUT_INV, 0, c, invstd);
        double m = p->momentum, unbiased = count > 1 ? sq / (double)(count - 1) : var;
        set_vec(s, XR_CN_RMEAN, 0, c, (1 - m) * vec(s, XR_CN_RMEAN, 0, c, 0) + m * mean);
        set_vec(s, XR_CN_RVAR, 0, c, (1 - m) * vec(s, XR_CN_RVAR, 0, c, 0) + m * unbiased);
      } else {
        mean = vec(s, XR_CN_RMEAN, 0, c, 0);
        invstd = 1.0f / sqrtf(vec(s, XR_CN_RVAR, 0, c, 1) + (float)p->eps);
      }
      float scale = invstd * w, shift = vec(s, XR_CN_BIAS, 0, c, 0) - mean * scale;
      affine(t.b, t.a, count, scale, shift);
    } else { /* backward */
      gather(s, XR_CN_GRAD, 0, p->n, c, c + 1, t.b);
      float mean = p->training ? vec(s, XR_CN_SMEAN, 0, c, 0) : vec(s, XR_CN_RMEAN, 0, c, 0);
      float invstd = p->training ? vec(s, XR_CN_SINV, 0, c, 1)
                                 : 1.0f / sqrtf(vec(s, XR_CN_RVAR, 0, c, 1) + (float)p->eps);
      double sum_g = 0, sum_gx = 0;
      for (int64_t i = 0; i < count; i++) {
        sum_g += t.b[i];
        sum_gx += t.b[i] * (t.a[i] - mean) * invstd;
      }
      set_vec(s, XR_CN_GRAD_W, 0, c, sum_gx);
      set_vec(s, XR_CN_GRAD_B, 0, c, sum_g);
      if (!s->base[XR_CN_OUT]) continue;
      float mg = (float)(sum_g / (double)count), mgx = (float)(sum_gx / (double)count);
      for (int64_t i = 0; i < count; i++) {
        float xhat = (t.a[i] - mean) * invstd;
        t.b[i] = p->training ? w * invstd * (t.b[i] - mg - xhat * mgx) : t.b[i] * w * invstd;
      }
    }
    scatter(s, XR_CN_OUT, 0, p->n, c, c + 1, t.b);
  }
done:
  scratch_put(&t);
}

/* Group norm and its grad_input: item = n * groups + g; elements channel-major, then spatial. */
static void group_items(void *ctx, size_t begin, size_t end) {
  const cpu_cn_t *s = ctx;
  const xr_cn_problem_t *p = s->p;
  int64_t per = p->c / p->groups, plane = p->spatial, count = per * plane;
  scratch_t t;
  if (!scratch_get(&t, count)) goto done;
  for (size_t item = begin; item < end; item++) {
    int64_t n = (int64_t)item / p->groups, g = (int64_t)item % p->groups, c0 = g * per;
    gather(s, XR_CN_X, n, n + 1, c0, c0 + per, t.a);
    if (p->kind == XR_CN_GROUP) {
      float mean = (float)mean_of(t.a, count);
      float rstd = 1.0f / sqrtf(squares_around(t.a, count, mean) / (float)count + (float)p->eps);
      set_vec(s, XR_CN_OUT_MEAN, n, g, mean);
      set_vec(s, XR_CN_OUT_INV, n, g, rstd);
      for (int64_t k = 0; k < per; k++) {
        float scale = rstd * vec(s, XR_CN_WEIGHT, 0, c0 + k, 1);
        float shift = vec(s, XR_CN_BIAS, 0, c0 + k, 0) - mean * scale;
        for (int64_t i = k * plane; i < (k + 1) * plane; i++) t.b[i] = t.a[i] * scale + shift;
      }
    } else {
      float *gr = t.b;
      gather(s, XR_CN_GRAD, n, n + 1, c0, c0 + per, gr);
      float mean = vec(s, XR_CN_SMEAN, n, g, 0), rstd = vec(s, XR_CN_SINV, n, g, 1);
      double a = 0, b = 0;
      for (int64_t k = 0; k < per; k++) {
        float w = vec(s, XR_CN_WEIGHT, 0, c0 + k, 1);
        for (int64_t i = k * plane; i < (k + 1) * plane; i++) {
          a += w * gr[i];
          b += w * gr[i] * (t.a[i] - mean) * rstd;
        }
      }
      float ma = (float)(a / (double)count), mb = (float)(b / (double)count);
      for (int64_t k = 0; k < per; k++) {
        float w = vec(s, XR_CN_WEIGHT, 0, c0 + k, 1);
        for (int64_t i = k * plane; i < (k + 1) * plane; i++)
          gr[i] = rstd * (w * gr[i] - ma - (t.a[i] - mean) * rstd * mb);
      }
    }
    scatter(s, XR_CN_OUT, n, n + 1, c0, c0 + per, t.b);
  }
done:
  scratch_put(&t);
}

/* Group norm's grad_weight = sum(g * xhat) and grad_bias = sum(g): item = channel. */
static void group_param_items(void *ctx, size_t begin, size_t end) {
  const cpu_cn_t *s = ctx;
  const xr_cn_problem_t *p = s->p;
  int64_t per = p->c / p->groups, plane = p->spatial;
  scratch_t t;
  if (!scratch_get(&t, plane)) goto done;
  for (size_t cc = begin; cc < end; cc++) {
    int64_t c = (int64_t)cc, g = c / per;
    double sum_g = 0, sum_gx = 0;
    for (int64_t n = 0; n < p->n; n++) {
      gather(s, XR_CN_X, n, n + 1, c, c + 1, t.a);
      gather(s, XR_CN_GRAD, n, n + 1, c, c + 1, t.b);
      float mean = vec(s, XR_CN_SMEAN, n, g, 0), rstd = vec(s, XR_CN_SINV, n, g, 1);
      for (int64_t i = 0; i < plane; i++) {
        sum_g += t.b[i];
        sum_gx += t.b[i] * (t.a[i] - mean) * rstd;
      }
    }
    set_vec(s, XR_CN_GRAD_W, 0, c, sum_gx);
    set_vec(s, XR_CN_GRAD_B, 0, c, sum_g);
  }
done:
  scratch_put(&t);
}

static xr_status_t cpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_cn_problem_t *p = plan->problem;
  for (int k = 0; k < XR_CN_SLOTS; k++)
    if (p->v[k].index >= 0 && !xr_fast_float_dtype(p->v[k].dtype))
      return xr_error(XR_UNIMPLEMENTED,
                      "cpu.channel_norm: %s: %s tensors (fp32, fp16, bf16; f64: ref.channel_norm)",
                      plan->op->name, xr_dtype_name(p->v[k].dtype));
  return XR_OK;
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_cn_problem_t *p = plan->problem;
  cpu_cn_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  for (int d = 0; d < 3; d++) s->size[d] = p->v[XR_CN_X].shape[2 + d];
  for (int k = 0; k < XR_CN_SLOTS; k++) {
    if (p->v[k].index < 0) continue;
    s->off[k] = tensors[p->v[k].index].offset;
    xr_status_t st = xr_tensor_host(&tensors[p->v[k].index], &s->base[k]);
    if (st != XR_OK) {
      free(s);
      return st;
    }
  }
  *out_state = s;
  return XR_OK;
}

/* Channels per task: enough elements to pay for a task (a ResNet layer4 channel holds 490). */
enum { TASK_ELEMENTS = 16384 };

static xr_status_t cpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_cn_t *s = state;
  const xr_cn_problem_t *p = s->p;
  size_t channels = (size_t)p->c, groups = (size_t)(p->n * p->groups);
  int64_t per_channel = p->n * p->spatial;
  size_t grain = per_channel >= TASK_ELEMENTS ? 1 : (size_t)(TASK_ELEMENTS / (per_channel ? per_channel : 1));
  switch (p->kind) {
    case XR_CN_BATCH:
    case XR_CN_BATCH_BACKWARD:
      return xr_hal_stream_enqueue_parallel(stream, channels, grain, batch_items, s);
    case XR_CN_GROUP: return xr_hal_stream_enqueue_parallel(stream, groups, 1, group_items, s);
    case XR_CN_GROUP_BACKWARD: {
      xr_status_t st = XR_OK;
      if (s->base[XR_CN_OUT])
        st = xr_hal_stream_enqueue_parallel(stream, groups, 1, group_items, s);
      if (st == XR_OK && (s->base[XR_CN_GRAD_W] || s->base[XR_CN_GRAD_B]))
        st = xr_hal_stream_enqueue_parallel(stream, channels, 1, group_param_items, s);
      return st;
    }
  }
  return XR_OK;
}

const xr_kernel_impl_t xr_cpu_channel_norm_impl = {
    .name = "cpu.channel_norm",
    .driver = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .enqueue = cpu_enqueue,
    .release = free,
};
