/* cpu.loss: the loss family (kernels/loss.h) on the host thread pool, f32, f16 and bf16
 * computed in float. The iteration runs as rows (every dim but the last) cut into runs of up to
 * XR_EW_CPU_BLOCK elements along the last dim; each run's operands are widened into float
 * blocks (cpu.elementwise's loader, any stride), computed, and stored rounded once. Reduced
 * losses add each run's float sum into a double partial per run, which one host step adds up in
 * run order (the same result for any thread count). f64 runs on the reference. */
#include <stdlib.h>

#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/loss.h"

enum { BLOCK = XR_EW_CPU_BLOCK };

typedef struct cpu_loss {
  const xr_loss_problem_t *p;
  const char *in[XR_LOSS_OPERANDS]; /* at the tensor's offset */
  size_t in_size[XR_LOSS_OPERANDS];
  char *out;                        /* at the tensor's offset */
  int64_t inner, runs_per_row, runs;
  double *partials;                 /* reduced: one per run */
} cpu_loss_t;

static void store_run(const cpu_loss_t *s, int64_t at, int64_t stride, const float *v, int64_t n) {
  switch (s->p->out.dtype) {
    case XR_DTYPE_F32:
      for (int64_t j = 0; j < n; j++) ((float *)s->out)[at + j * stride] = v[j];
      break;
    case XR_DTYPE_BF16:
      for (int64_t j = 0; j < n; j++) ((uint16_t *)s->out)[at + j * stride] = xr_f32_to_bf16(v[j]);
      break;
    default: /* f16 */
      for (int64_t j = 0; j < n; j++) ((uint16_t *)s->out)[at + j * stride] = xr_f32_to_f16(v[j]);
      break;
  }
}

static void runs(void *ctx, size_t begin, size_t end) {
  const cpu_loss_t *s = ctx;
  const xr_loss_problem_t *p = s->p;
  const int last = p->rank - 1;
  const bool reduced = xr_loss_reduced(p);
  float a[BLOCK], b[BLOCK], c[BLOCK], r[BLOCK];
  for (size_t u = begin; u < end; u++) {
    const int64_t row = (int64_t)u / s->runs_per_row;
    const int64_t j0 = (int64_t)u % s->runs_per_row * BLOCK;
    const int64_t n = s->inner - j0 < BLOCK ? s->inner - j0 : BLOCK;
    const int64_t first = row * s->inner + j0; /* row-major index of the run's first element */
    float *blocks[XR_LOSS_OPERANDS] = {a, b, c};
    for (int k = 0; k < XR_LOSS_OPERANDS; k++) {
      const xr_loss_operand_t *o = &p->in[k];
      if (o->index < 0) continue;
      int64_t at = xr_loss_offset(p, o->strides, first);
      xr_ew_cpu_load(blocks[k], s->in[k] + at * (int64_t)s->in_size[k], o->dtype,
                     last >= 0 ? o->strides[last] : 0, n);
    }
    if (reduced) {
      float sum = 0;
      for (int64_t j = 0; j < n; j++) {
        float d = a[j] - b[j];
        sum += d * d;
      }
      s->partials[u] = sum;
      continue;
    }
    if (p->backward) {
      const float norm = (float)p->norm;
      for (int64_t j = 0; j < n; j++) r[j] = norm * (a[j] - b[j]) * c[j];
    } else {
      for (int64_t j = 0; j < n; j++) {
        float d = a[j] - b[j];
        r[j] = d * d;
      }
    }
    store_run(s, xr_loss_offset(p, p->out.strides, first), last >= 0 ? p->out.strides[last] : 0,
              r, n);
  }
}

static void combine(void *ctx) {
  const cpu_loss_t *s = ctx;
  double sum = 0;
  for (int64_t u = 0; u < s->runs; u++) sum += s->partials[u];
  if (s->p->reduction == XR_LOSS_MEAN) sum /= (double)s->p->numel; /* empty: NaN, as torch */
  float v = (float)sum;
  store_run(s, 0, 0, &v, 1);
}

static xr_status_t cpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_loss_problem_t *p = plan->problem;
  for (int k = 0; k < XR_LOSS_OPERANDS; k++)
    if (p->in[k].index >= 0 && !xr_fast_float_dtype(p->in[k].dtype))
      return xr_error(XR_UNIMPLEMENTED, "cpu kernels: %s: %s tensors run on the reference (the "
                      "cpu kernels compute f32, f16 and bf16 in float)", plan->op->name,
                      xr_dtype_name(p->in[k].dtype));
  return XR_OK;
}

static void cpu_release(void *state) {
  cpu_loss_t *s = state;
  if (!s) return;
  free(s->partials);
  free(s);
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_loss_problem_t *p = plan->problem;
  cpu_loss_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  xr_status_t st = XR_OK;
  void *base;
  for (int k = 0; st == XR_OK && k < XR_LOSS_OPERANDS; k++) {
    const xr_loss_operand_t *o = &p->in[k];
    if (o->index < 0) continue;
    st = xr_tensor_host(&tensors[o->index], &base);
    s->in_size[k] = xr_dtype_size(o->dtype);
    s->in[k] = (const char *)base + tensors[o->index].offset * (int64_t)s->in_size[k];
  }
  if (st == XR_OK) st = xr_tensor_host(&tensors[p->out.index], &base);
  if (st != XR_OK) {
    free(s);
    return st;
  }
  s->out = (char *)base + tensors[p->out.index].offset * (int64_t)xr_dtype_size(p->out.dtype);
  s->inner = p->rank ? p->shape[p->rank - 1] : 1;
  s->runs_per_row = (s->inner + BLOCK - 1) / BLOCK;
  s->runs = s->inner ? p->numel / s->inner * s->runs_per_row : 0;
  if (xr_loss_reduced(p) && s->runs) {
    s->partials = malloc(sizeof *s->partials * (size_t)s->runs);
    if (!s->partials) {
      free(s);
      return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory for the partial sums",
                      plan->op->name);
    }
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t cpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_loss_t *s = state;
  xr_status_t st = XR_OK;
  if (s->runs) st = xr_hal_stream_enqueue_parallel(stream, (size_t)s->runs, 8, runs, s);
  if (st == XR_OK && xr_loss_reduced(s->p)) st = xr_hal_stream_enqueue_host(stream, combine, s);
  return st;
}

const xr_kernel_impl_t xr_cpu_loss = {
    .name = "cpu.loss",
    .driver = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .enqueue = cpu_enqueue,
    .release = cpu_release,
};
