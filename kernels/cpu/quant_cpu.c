/* cpu.quant: vLLM's fp8 quantization ops (kernels/quant.h) on the host thread pool, bit-exact
 * with ref.quant: each row is loaded in float blocks (xr_ew_cpu_load's vectorised f32 / f16 /
 * bf16 conversion), scaled in float as the CUDA kernels do it, clamped to +-M (a NaN becoming
 * +M, as fminf / fmaxf make it) and rounded to e4m3 by base/float_formats.h's branch-free
 * encoder, which the compiler vectorises. Static and dynamic ops split
 * rows into segments, so a single long row still spreads over the cores; the dynamic op first
 * finds each segment's max|x| (kept from prepare() on), reduces them in a host step and only
 * then quantizes; the per-token op takes one row per item (its scale needs the whole row). */
#include <math.h>
#include <stdlib.h>

#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/family.h"
#include "kernels/quant.h"

enum { BLOCK = XR_EW_CPU_BLOCK, SEGMENT = 16 * XR_EW_CPU_BLOCK };

typedef struct cpu_quant {
  const xr_quant_problem_t *p;
  const char *in;     /* the input's storage */
  uint8_t *out;
  float *scale;
  const float *ub;
  int64_t segments;   /* per row (static, dynamic) */
  float *partial;     /* dynamic: max|x| of each (row, segment) */
  float inv;          /* dynamic: 1 / scale */
  xr_fp8_format_t e4m3; /* the result's format */
} cpu_quant_t;

/* One value, already scaled, to e4m3 as ref.quant computes it: fp8(clamp(x, -M, M)), a NaN
 * becoming +M. */
static inline uint8_t encode(const cpu_quant_t *s, float x, float m) {
  x = xr_select_f(xr_mask_if(x != x), m, x);
  x = x > m ? m : x;
  x = x < -m ? -m : x;
  return xr_fp8_encode(x, &s->e4m3);
}

/* n values x[i] * mul[i * mul_step] (mul_step 0: one factor) into dst. */
XR_CPU_CLONES static void encode_mul(const cpu_quant_t *s, uint8_t *restrict dst, const float *restrict x,
                                     const float *restrict mul, int64_t mul_step, int64_t n) {
  const float m = s->p->fp8_max;
  for (int64_t i = 0; i < n; i++) dst[i] = encode(s, x[i] * mul[i * mul_step], m);
}

XR_CPU_CLONES static void encode_div(const cpu_quant_t *s, uint8_t *restrict dst, const float *restrict x, float div,
                                     int64_t n) {
  const float m = s->p->fp8_max;
  for (int64_t i = 0; i < n; i++) dst[i] = encode(s, x[i] / div, m);
}

/* max(m, |x[i]|) over n values, NaN ignored (fmaxf's rule). */
XR_CPU_CLONES static float absmax(float m, const float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float a = fabsf(x[i]);
    m = a > m ? a : m; /* false for NaN */
  }
  return m;
}

static const char *row_in(const cpu_quant_t *s, int64_t r, int64_t c) {
  const xr_quant_problem_t *p = s->p;
  return s->in + (p->in_off + r * p->in_rs + c) * (int64_t)xr_dtype_size(p->in_dtype);
}

static float segment_absmax(const cpu_quant_t *s, int64_t r, int64_t c0, int64_t c1) {
  float x[BLOCK], m = 0.0f;
  for (int64_t c = c0; c < c1; c += BLOCK) {
    int64_t n = c1 - c < BLOCK ? c1 - c : BLOCK;
    xr_ew_cpu_load(x, row_in(s, r, c), s->p->in_dtype, 1, n);
    m = absmax(m, x, n);
  }
  return m;
}

/* Columns [c0, c1) of row r times the reciprocal scale(s). */
static void segment_scale(const cpu_quant_t *s, int64_t r, int64_t c0, int64_t c1) {
  const xr_quant_problem_t *p = s->p;
  float x[BLOCK], inv[BLOCK];
  uint8_t *out = s->out + p->out_off + r * p->out_rs;
  float one = p->op == XR_QUANT_DYNAMIC ? s->inv : 1.0f / s->scale[p->scale_off];
  for (int64_t c = c0; c < c1; c += BLOCK) {
    int64_t n = c1 - c < BLOCK ? c1 - c : BLOCK;
    xr_ew_cpu_load(x, row_in(s, r, c), p->in_dtype, 1, n);
    if (p->grouped) {
      const float *row_scale = s->scale + p->scale_off + (r / p->group_m) * p->scale_si;
      for (int64_t i = 0; i < n; i++) inv[i] = 1.0f / row_scale[((c + i) / p->group_n) * p->scale_sj];
      encode_mul(s, out + c, x, inv, 1, n);
    } else {
      encode_mul(s, out + c, x, &one, 0, n);
    }
  }
}

static void absmax_items(void *ctx, size_t begin, size_t end) {
  cpu_quant_t *s = ctx;
  for (size_t i = begin; i < end; i++) {
    int64_t r = (int64_t)i / s->segments, c0 = ((int64_t)i % s->segments) * SEGMENT;
    int64_t c1 = c0 + SEGMENT < s->p->hidden ? c0 + SEGMENT : s->p->hidden;
    s->partial[i] = segment_absmax(s, r, c0, c1);
  }
}

static void reduce_scale(void *ctx) {
  cpu_quant_t *s = ctx;
  const xr_quant_problem_t *p = s->p;
  float m = 0.0f;
  for (int64_t i = 0; i < p->rows * s->segments; i++) m = s->partial[i] > m ? s->partial[i] : m;
  float scale = m / p->fp8_max;
  s->scale[p->scale_off] = scale;
  s->inv = 1.0f / scale;
}

static void scale_items(void *ctx, size_t begin, size_t end) {
  const cpu_quant_t *s = ctx;
  for (size_t i = begin; i < end; i++) {
    int64_t r = (int64_t)i / s->segments, c0 = ((int64_t)i % s->segments) * SEGMENT;
    segment_scale(s, r, c0, c0 + SEGMENT < s->p->hidden ? c0 + SEGMENT : s->p->hidden);
  }
}

static void token_rows(void *ctx, size_t begin, size_t end) {
  const cpu_quant_t *s = ctx;
  const xr_quant_problem_t *p = s->p;
  float x[BLOCK];
  for (int64_t r = (int64_t)begin; r < (int64_t)end; r++) {
    float m = segment_absmax(s, r, 0, p->hidden);
    if (s->ub) m = fminf(m, s->ub[p->ub_off]);
    float ts = fmaxf(m / p->fp8_max, p->min_scale);
    s->scale[p->scale_off + r * p->scale_si] = ts;
    uint8_t *out = s->out + p->out_off + r * p->out_rs;
    for (int64_t c = 0; c < p->hidden; c += BLOCK) {
      int64_t n = p->hidden - c < BLOCK ? p->hidden - c : BLOCK;
      xr_ew_cpu_load(x, row_in(s, r, c), p->in_dtype, 1, n);
      encode_div(s, out + c, x, ts, n);
    }
  }
}

static void cpu_release(void *state) {
  cpu_quant_t *s = state;
  if (s) free(s->partial);
  free(s);
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                               void **out_state) {
  (void)device;
  const xr_quant_problem_t *p = plan->problem;
  cpu_quant_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  xr_quant_host_t h;
  xr_status_t st = xr_quant_host(p, tensors, &h);
  if (st != XR_OK) {
    free(s);
    return st;
  }
  s->in = h.in, s->out = h.out, s->scale = h.scale, s->ub = h.ub;
  s->segments = (p->hidden + SEGMENT - 1) / SEGMENT;
  s->e4m3 = xr_fp8_format(p->out_dtype);
  if (p->op == XR_QUANT_DYNAMIC &&
      !(s->partial = malloc(sizeof(float) * (size_t)(p->rows * s->segments > 0 ? p->rows * s->segments : 1)))) {
    free(s);
    return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t cpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_quant_t *s = state;
  const xr_quant_problem_t *p = s->p;
  size_t items = (size_t)(p->rows * s->segments);
  xr_status_t st = XR_OK;
  if (p->op == XR_QUANT_PER_TOKEN) {
    if (p->rows > 0) st = xr_hal_stream_enqueue_parallel(stream, (size_t)p->rows, 1, token_rows, s);
    return st;
  }
  if (p->op == XR_QUANT_DYNAMIC) {
    if (items) st = xr_hal_stream_enqueue_parallel(stream, items, 1, absmax_items, s);
    if (st == XR_OK) st = xr_hal_stream_enqueue_host(stream, reduce_scale, s);
  }
  if (st == XR_OK && items) st = xr_hal_stream_enqueue_parallel(stream, items, 1, scale_items, s);
  return st;
}

const xr_kernel_impl_t xr_quant_cpu_impl = {
    .name = "cpu.quant",
    .driver = "cpu",
    .prepare = cpu_prepare,
    .enqueue = cpu_enqueue,
    .release = cpu_release,
};
