/* Fast CPU kernels for softmax, layer norm, RMS norm and rotary embedding: rows (tokens) split
 * into work items run in parallel on the cpu device's pool, fp32 arithmetic, each row widened
 * once into a float scratch row (or used in place when it is contiguous fp32) and rounded once
 * on the way out.
 *
 * The inner loops run over fixed blocks of 16 elements with 16 independent partial sums, so
 * the compiler vectorises them at -O2 without reassociating anything itself; the fp16 and bf16
 * conversions are branch-free for the same reason (base/float_formats.h). On x86-64 the
 * row kernels are also built for AVX-512 and AVX2 + FMA and picked at run time (target_clones).
 * Where the CPU has AVX-512 BF16, softmax and the norms of contiguous f32, bf16 and f16 rows
 * take row_avx512() instead (widening and rounding fused into the passes that need them).
 * Outputs too large for the cache are written with streaming stores. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/avx512.h"
#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/cpu/norm_avx512.h"
#include "kernels/norm.h"

/* -std=c11 turns off the contraction of a * b + c into one fused multiply-add, which the sums
 * and polynomials here are written for (faster, and at least as accurate). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#endif

/* Inlined into the multiversioned callers so that they, too, get the AVX2 build. Blocks are
 * computed into a local array and copied out, so that an output which may alias an input
 * (in-place rows) does not keep the compiler from vectorising. */
#define HOT static inline __attribute__((always_inline))

enum { BLOCK = 16 };

/* ------------------------------------------------------------------------------------------ */
/* conversions                                                                                */

HOT float load_one(const void *base, xr_dtype_t dt, int64_t i) {
  if (dt == XR_DTYPE_F32) return ((const float *)base)[i];
  if (dt == XR_DTYPE_BF16) return xr_bf16_to_f32(((const uint16_t *)base)[i]);
  return xr_f16_to_f32(((const uint16_t *)base)[i]);
}

HOT void store_one(void *base, xr_dtype_t dt, int64_t i, float v) {
  if (dt == XR_DTYPE_F32) ((float *)base)[i] = v;
  else if (dt == XR_DTYPE_BF16) ((uint16_t *)base)[i] = xr_f32_to_bf16(v);
  else ((uint16_t *)base)[i] = xr_f32_to_f16(v);
}

/* n elements from base[off + i*stride] into dst. */
HOT void load_row(float *dst, const void *base, xr_dtype_t dt, int64_t off, int64_t stride,
                     int64_t n) {
  int64_t i = 0;
  if (stride == 1) {
    if (dt == XR_DTYPE_F32) {
      memcpy(dst, (const float *)base + off, sizeof(float) * (size_t)n);
      return;
    }
    const uint16_t *src = (const uint16_t *)base + off;
    if (dt == XR_DTYPE_BF16) {
      for (; i + BLOCK <= n; i += BLOCK)
        for (int j = 0; j < BLOCK; j++) dst[i + j] = xr_bf16_to_f32(src[i + j]);
    } else {
      for (; i + BLOCK <= n; i += BLOCK)
        for (int j = 0; j < BLOCK; j++) dst[i + j] = xr_f16_to_f32(src[i + j]);
    }
  }
  for (; i < n; i++) dst[i] = load_one(base, dt, off + i * stride);
}

HOT void store_row(void *base, xr_dtype_t dt, int64_t off, int64_t stride, const float *src,
                      int64_t n) {
  int64_t i = 0;
  if (stride == 1) {
    if (dt == XR_DTYPE_F32) {
      memcpy((float *)base + off, src, sizeof(float) * (size_t)n);
      return;
    }
    uint16_t *dst = (uint16_t *)base + off;
    if (dt == XR_DTYPE_BF16) {
      for (; i + BLOCK <= n; i += BLOCK)
        for (int j = 0; j < BLOCK; j++) dst[i + j] = xr_f32_to_bf16(src[i + j]);
    } else {
      for (; i + BLOCK <= n; i += BLOCK)
        for (int j = 0; j < BLOCK; j++) dst[i + j] = xr_f32_to_f16(src[i + j]);
    }
  }
  for (; i < n; i++) store_one(base, dt, off + i * stride, src[i]);
}

/* Rounds a float row to dt and back (fp32: nothing to do). */
HOT void round_row(float *x, xr_dtype_t dt, int64_t n) {
  if (dt == XR_DTYPE_F32) return;
  int64_t i = 0;
  if (dt == XR_DTYPE_BF16) {
    for (; i + BLOCK <= n; i += BLOCK)
      for (int j = 0; j < BLOCK; j++) x[i + j] = xr_bf16_to_f32(xr_f32_to_bf16(x[i + j]));
  } else {
    for (; i + BLOCK <= n; i += BLOCK)
      for (int j = 0; j < BLOCK; j++) x[i + j] = xr_f16_to_f32(xr_f32_to_f16(x[i + j]));
  }
  for (; i < n; i++)
    x[i] = dt == XR_DTYPE_BF16 ? xr_bf16_to_f32(xr_f32_to_bf16(x[i])) : xr_f16_to_f32(xr_f32_to_f16(x[i]));
}

/* ------------------------------------------------------------------------------------------ */
/* row arithmetic on floats                                                                   */

HOT float sum_lanes(const float *acc) {
  float s = 0;
  for (int j = 0; j < BLOCK; j++) s += acc[j];
  return s;
}

/* Sum of (x - shift)^2. */
HOT float sum_sq(const float *x, int64_t n, float shift) {
  float acc[BLOCK] = {0};
  int64_t i = 0;
  for (; i + BLOCK <= n; i += BLOCK)
    for (int j = 0; j < BLOCK; j++) {
      float d = x[i + j] - shift;
      acc[j] += d * d;
    }
  float s = sum_lanes(acc);
  for (; i < n; i++) s += (x[i] - shift) * (x[i] - shift);
  return s;
}

HOT float sum(const float *x, int64_t n) {
  float acc[BLOCK] = {0};
  int64_t i = 0;
  for (; i + BLOCK <= n; i += BLOCK)
    for (int j = 0; j < BLOCK; j++) acc[j] += x[i + j];
  float s = sum_lanes(acc);
  for (; i < n; i++) s += x[i];
  return s;
}

HOT float max_of(const float *x, int64_t n) {
  float m = -INFINITY;
  float acc[BLOCK];
  for (int j = 0; j < BLOCK; j++) acc[j] = -INFINITY;
  int64_t i = 0;
  for (; i + BLOCK <= n; i += BLOCK)
    for (int j = 0; j < BLOCK; j++) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
  for (int j = 0; j < BLOCK; j++) m = acc[j] > m ? acc[j] : m;
  for (; i < n; i++) m = x[i] > m ? x[i] : m;
  return m;
}

/* exp for x <= 0 (softmax's shifted inputs), relative error below 2e-7: x = k ln2 + r with
 * |r| <= ln2/2, e^r by its Taylor series to r^7, 2^k built in the exponent bits. Inputs below
 * -87 give 2^-126-ish instead of 0, immaterial next to the row sum (which is at least 1). */
HOT float exp_nonpositive(float x) {
  /* The clamp compares bits: for x <= 0 a larger magnitude has larger bits, and an unsigned
   * min vectorises where a float compare (NaN-aware) would branch. */
  uint32_t bits = xr_f32_to_bits(x), floor_bits = 0xc2ae0000u; /* -87.0f */
  x = xr_bits_to_f32(bits < floor_bits ? bits : floor_bits);
  float k = (x * 1.44269504f + 12582912.0f) - 12582912.0f; /* round to nearest */
  float r = (x - k * 0.693145752f) - k * 1.42860677e-6f;  /* ln2 split in two */
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * xr_bits_to_f32(((uint32_t)(int32_t)k + 127u) << 23);
}

/* y = exp(x - m); returns the sum of y. */
HOT float exp_shifted(float *y, const float *x, int64_t n, float m) {
  float acc[BLOCK] = {0};
  int64_t i = 0;
  for (; i + BLOCK <= n; i += BLOCK) {
    float t[BLOCK];
    for (int j = 0; j < BLOCK; j++) acc[j] += t[j] = exp_nonpositive(x[i + j] - m);
    memcpy(y + i, t, sizeof t);
  }
  float s = sum_lanes(acc);
  for (; i < n; i++) s += y[i] = exp_nonpositive(x[i] - m);
  return s;
}

/* y = (x - shift) * scale [* w] [+ b]. */
HOT void affine(float *y, const float *x, int64_t n, float shift, float scale, const float *w,
                   const float *b) {
  int64_t i = 0;
  for (; i + BLOCK <= n; i += BLOCK) {
    float t[BLOCK];
    if (w && b) {
      for (int j = 0; j < BLOCK; j++) t[j] = (x[i + j] - shift) * scale * w[i + j] + b[i + j];
    } else if (w) {
      for (int j = 0; j < BLOCK; j++) t[j] = (x[i + j] - shift) * scale * w[i + j];
    } else {
      for (int j = 0; j < BLOCK; j++) t[j] = (x[i + j] - shift) * scale;
    }
    memcpy(y + i, t, sizeof t);
  }
  for (; i < n; i++) {
    float v = (x[i] - shift) * scale;
    if (w) v *= w[i];
    if (b) v += b[i];
    y[i] = v;
  }
}

HOT void add_rows(float *y, const float *a, const float *b, int64_t n) {
  int64_t i = 0;
  for (; i + BLOCK <= n; i += BLOCK) {
    float t[BLOCK];
    for (int j = 0; j < BLOCK; j++) t[j] = a[i + j] + b[i + j];
    memcpy(y + i, t, sizeof t);
  }
  for (; i < n; i++) y[i] = a[i] + b[i];
}

/* ------------------------------------------------------------------------------------------ */
/* rows: softmax and the norms                                                                */

typedef struct cpu_rows {
  const xr_rows_problem_t *p;
  char *base[XR_ROWS_OPERANDS];
  int64_t offset[XR_ROWS_OPERANDS];
  int64_t stride[XR_ROWS_OPERANDS]; /* along the row */
  size_t items;                     /* work items; each owns a slice of rows and scratch */
  bool stream;                      /* the output is written with streaming stores */
  bool avx512;                      /* rows go through row_avx512() */
  float *weight, *bias;             /* widened once per execution */
  float *scratch;                   /* items x 3 rows of `pitch` floats */
  size_t pitch;
} cpu_rows_t;

/* Whether operand k is read or computed where it lies (contiguous fp32, not streamed). */
HOT bool is_direct(const cpu_rows_t *s, int k) {
  return s->p->operand[k].dtype == XR_DTYPE_F32 && s->stride[k] == 1 &&
         !(s->stream && k == XR_ROWS_OUT);
}

/* Row r of operand k as floats: in place when contiguous fp32, else widened into `scratch`. */
HOT float *row_in(const cpu_rows_t *s, int k, int64_t r, float *scratch) {
  const xr_rows_problem_t *p = s->p;
  int64_t off = s->offset[k] + xr_rows_outer_offset(p, k, r);
  if (is_direct(s, k)) return (float *)s->base[k] + off;
  load_row(scratch, s->base[k], p->operand[k].dtype, off, s->stride[k], p->n);
  return scratch;
}

/* Where row r of operand k is computed: the output itself when contiguous fp32. */
HOT float *row_out(const cpu_rows_t *s, int k, int64_t r, float *scratch) {
  if (!is_direct(s, k)) return scratch;
  return (float *)s->base[k] + s->offset[k] + xr_rows_outer_offset(s->p, k, r);
}

/* Writes row r of operand k from y; a streamed output is converted into `encoded` first. */
HOT void row_flush(const cpu_rows_t *s, int k, int64_t r, const float *y, void *encoded) {
  if (is_direct(s, k)) return;
  const xr_rows_problem_t *p = s->p;
  xr_dtype_t dt = p->operand[k].dtype;
  int64_t off = s->offset[k] + xr_rows_outer_offset(p, k, r);
  if (s->stream && k == XR_ROWS_OUT) {
    size_t esize = dt == XR_DTYPE_F32 ? 4 : 2;
    if (dt != XR_DTYPE_F32) store_row(encoded, dt, 0, 1, y, p->n), y = encoded;
    xr_cpu_stream_copy(s->base[k] + off * (int64_t)esize, y, (size_t)p->n * esize);
    return;
  }
  store_row(s->base[k], dt, off, s->stride[k], y, p->n);
}

HOT void store_stat(const cpu_rows_t *s, int k, int64_t r, float v) {
  if (s->p->operand[k].index < 0) return;
  ((float *)s->base[k])[s->offset[k] + xr_rows_outer_offset(s->p, k, r)] = v;
}

/* Row r of softmax, layer norm, RMS norm or the fused add + RMS norm with contiguous f32 / bf16 /
 * f16 rows, in three passes at most (kernels/cpu/norm_avx512.c): widen while summing (or add, round
 * and store the residual while summing the squares of the sum, as stored or in fp32), then (layer
 * norm) the centred squares or (softmax) the exponentials, then scale, round and store in one. */
static void row_avx512(const cpu_rows_t *s, int64_t r, float *sx, float *sy) {
  const xr_rows_problem_t *p = s->p;
  const int64_t n = p->n;
  const xr_dtype_t in_dt = p->operand[XR_ROWS_X].dtype, out_dt = p->operand[XR_ROWS_OUT].dtype;
  const char *in = s->base[XR_ROWS_X] + (s->offset[XR_ROWS_X] + xr_rows_outer_offset(p, XR_ROWS_X, r)) *
                                            (int64_t)xr_dtype_size(in_dt);
  char *out = s->base[XR_ROWS_OUT] + (s->offset[XR_ROWS_OUT] + xr_rows_outer_offset(p, XR_ROWS_OUT, r)) *
                                         (int64_t)xr_dtype_size(out_dt);
  const float nf = (float)n, eps = (float)p->eps;
  if (p->op == XR_ROWS_ADD_RMS_NORM) { /* every tensor of the input's dtype */
    const int64_t esize = (int64_t)xr_dtype_size(in_dt);
    const int64_t in_at = s->offset[XR_ROWS_RESIDUAL_IN] +
                          xr_rows_outer_offset(p, XR_ROWS_RESIDUAL_IN, r);
    const int64_t out_at = s->offset[XR_ROWS_RESIDUAL_OUT] +
                           xr_rows_outer_offset(p, XR_ROWS_RESIDUAL_OUT, r);
    const char *res_in = s->base[XR_ROWS_RESIDUAL_IN] + in_at * esize;
    char *res_out = s->base[XR_ROWS_RESIDUAL_OUT] + out_at * esize;
    float sq = xr_rows_avx512_add_round(sx, res_out, res_in, in, in_dt, n, !p->fp32_sum);
    float rstd = 1.0f / sqrtf(sq / nf + eps);
    xr_rows_avx512_affine_store(out, out_dt, sx, n, 0.0f, rstd, s->weight, NULL, false);
    return;
  }
  /* fp32 rows are read where they lie */
  const float *x = in_dt == XR_DTYPE_F32 ? (const float *)in : sx;
  xr_row_stats_t st = xr_rows_avx512_widen(in_dt == XR_DTYPE_F32 ? NULL : sx, in, in_dt, n);
  switch (p->op) {
    case XR_ROWS_SOFTMAX: {
      float total = xr_rows_avx512_exp_sum(sy, x, n, st.max);
      xr_rows_avx512_affine_store(out, out_dt, sy, n, 0.0f, 1.0f / total, NULL, NULL, s->stream);
      break;
    }
    case XR_ROWS_LAYER_NORM: {
      float mean = st.sum / nf;
      float rstd = 1.0f / sqrtf(xr_rows_avx512_sum_sq(x, n, mean) / nf + eps);
      xr_rows_avx512_affine_store(out, out_dt, x, n, mean, rstd, s->weight, s->bias, s->stream);
      store_stat(s, XR_ROWS_MEAN, r, mean);
      store_stat(s, XR_ROWS_RSTD, r, rstd);
      break;
    }
    default: { /* XR_ROWS_RMS_NORM */
      float rstd = 1.0f / sqrtf(st.sum_sq / nf + eps);
      xr_rows_avx512_affine_store(out, out_dt, x, n, 0.0f, rstd, s->weight, NULL, s->stream);
      break;
    }
  }
}

XR_CPU_CLONES
static void rows_item(void *ctx, size_t begin, size_t end) {
  const cpu_rows_t *s = ctx;
  const xr_rows_problem_t *p = s->p;
  const int64_t n = p->n;
  const float nf = (float)n, eps = (float)p->eps;
  for (size_t item = begin; item < end; item++) {
    float *sx = s->scratch + item * 3 * s->pitch, *sy = sx + s->pitch, *sz = sy + s->pitch;
    int64_t r0 = (int64_t)(item * (size_t)p->rows / s->items);
    int64_t r1 = (int64_t)((item + 1) * (size_t)p->rows / s->items);
    for (int64_t r = r0; r < r1; r++) {
      if (s->avx512) {
        row_avx512(s, r, sx, sy);
        continue;
      }
      switch (p->op) {
        case XR_ROWS_SOFTMAX: {
          xr_dtype_t out = p->operand[XR_ROWS_OUT].dtype;
          bool cast = out != XR_DTYPE_F32 && out != p->operand[XR_ROWS_X].dtype;
          float *x = row_in(s, XR_ROWS_X, r, sx);
          if (cast) { /* softmax(dtype=narrower): the input is rounded first */
            if (x != sx) memcpy(sx, x, sizeof(float) * (size_t)n), x = sx;
            round_row(x, out, n);
          }
          float *y = row_out(s, XR_ROWS_OUT, r, sy);
          float total = exp_shifted(y, x, n, max_of(x, n));
          affine(y, y, n, 0.0f, 1.0f / total, NULL, NULL);
          row_flush(s, XR_ROWS_OUT, r, y, sz);
          break;
        }
        case XR_ROWS_LAYER_NORM: {
          float *x = row_in(s, XR_ROWS_X, r, sx);
          float mean = sum(x, n) / nf;
          float rstd = 1.0f / sqrtf(sum_sq(x, n, mean) / nf + eps);
          float *y = row_out(s, XR_ROWS_OUT, r, sy);
          affine(y, x, n, mean, rstd, s->weight, s->bias);
          row_flush(s, XR_ROWS_OUT, r, y, sz);
          store_stat(s, XR_ROWS_MEAN, r, mean);
          store_stat(s, XR_ROWS_RSTD, r, rstd);
          break;
        }
        case XR_ROWS_RMS_NORM: {
          float *x = row_in(s, XR_ROWS_X, r, sx);
          float rstd = 1.0f / sqrtf(sum_sq(x, n, 0.0f) / nf + eps);
          float *y = row_out(s, XR_ROWS_OUT, r, sy);
          affine(y, x, n, 0.0f, rstd, s->weight, NULL);
          row_flush(s, XR_ROWS_OUT, r, y, sz);
          break;
        }
        case XR_ROWS_ADD_RMS_NORM: {
          /* residual_out = round(x + residual_in), stored first; out = rms_norm(the sum as
           * stored, or the fp32 sum kept in the row). In place, residual_out's row is
           * residual_in's and out's is x's: each is read before it is written. */
          float *x = row_in(s, XR_ROWS_X, r, sx);
          float *res = row_in(s, XR_ROWS_RESIDUAL_IN, r, sy);
          float *sum_row = row_out(s, XR_ROWS_RESIDUAL_OUT, r, sy);
          add_rows(sum_row, x, res, n);
          row_flush(s, XR_ROWS_RESIDUAL_OUT, r, sum_row, sz);
          if (!p->fp32_sum) round_row(sum_row, p->operand[XR_ROWS_RESIDUAL_OUT].dtype, n);
          float rstd = 1.0f / sqrtf(sum_sq(sum_row, n, 0.0f) / nf + eps);
          float *y = row_out(s, XR_ROWS_OUT, r, sx);
          affine(y, sum_row, n, 0.0f, rstd, s->weight, NULL);
          row_flush(s, XR_ROWS_OUT, r, y, sz);
          break;
        }
      }
    }
  }
  if (s->stream) xr_cpu_stream_fence();
}

/* Host task ahead of the rows: weight and bias widened to floats. */
static void widen_params(void *ctx) {
  cpu_rows_t *s = ctx;
  float *dst[2] = {s->weight, s->bias};
  for (int k = XR_ROWS_WEIGHT; k <= XR_ROWS_BIAS; k++)
    if (dst[k - XR_ROWS_WEIGHT])
      load_row(dst[k - XR_ROWS_WEIGHT], s->base[k], s->p->operand[k].dtype, s->offset[k],
               s->stride[k], s->p->n);
}

static xr_status_t rows_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  return xr_rows_check_fast(plan, "cpu");
}

/* Work items: a few per thread for balance, fewer when rows are long (scratch <= 64 MiB). */
static size_t item_count(xr_hal_device_t *device, int64_t units, int64_t scratch_per_item) {
  xr_hal_device_properties_t props;
  int64_t threads = xr_hal_device_properties(device, &props) == XR_OK && props.compute_units
                        ? props.compute_units
                        : 1;
  int64_t items = 8 * threads;
  int64_t cap = ((int64_t)64 << 20) / (scratch_per_item > 0 ? scratch_per_item : 1);
  if (items > cap) items = cap;
  if (items > units) items = units;
  return (size_t)(items > 0 ? items : 1);
}

static void rows_release(void *state) {
  cpu_rows_t *s = state;
  if (!s) return;
  free(s->scratch);
  free(s->weight);
  free(s->bias);
  free(s);
}

static xr_status_t rows_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                const xr_tensor_t *tensors, void **out_state) {
  const xr_rows_problem_t *p = plan->problem;
  cpu_rows_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  for (int k = 0; k < XR_ROWS_OPERANDS; k++) {
    int index = p->operand[k].index;
    if (index < 0) continue;
    void *base;
    xr_status_t st = xr_tensor_host(&tensors[index], &base);
    if (st != XR_OK) {
      rows_release(s);
      return st;
    }
    s->base[k] = base;
    s->offset[k] = tensors[index].offset;
    s->stride[k] = p->inner_rank == 1 ? p->operand[k].inner_strides[0] : 1;
  }
  size_t n = (size_t)p->n;
  /* Streaming pays for outputs that do not stay in the cache; the fused add + norm (in place,
   * where the lines are already present, or not) stores plainly. */
  xr_dtype_t out_dtype = p->operand[XR_ROWS_OUT].dtype;
  s->stream = p->op != XR_ROWS_ADD_RMS_NORM && p->operand[XR_ROWS_OUT].index >= 0 &&
              s->stride[XR_ROWS_OUT] == 1 &&
              p->rows * p->n * (out_dtype == XR_DTYPE_F32 ? 4 : 2) >= XR_CPU_STREAM_MIN_BYTES;
  xr_dtype_t in_dtype = p->operand[XR_ROWS_X].dtype;
  bool softmax_cast = p->op == XR_ROWS_SOFTMAX && out_dtype != XR_DTYPE_F32 && out_dtype != in_dtype;
  s->avx512 = xr_cpu_avx512() && !softmax_cast && s->stride[XR_ROWS_X] == 1 &&
              s->stride[XR_ROWS_OUT] == 1 &&
              (p->op != XR_ROWS_ADD_RMS_NORM ||
               (s->stride[XR_ROWS_RESIDUAL_IN] == 1 && s->stride[XR_ROWS_RESIDUAL_OUT] == 1)) &&
              xr_avx512_dtype(in_dtype) && xr_avx512_dtype(out_dtype);
  s->pitch = (n + 15) & ~(size_t)15; /* rows start on cache lines */
  s->items = item_count(device, p->rows, (int64_t)(3 * s->pitch * sizeof(float)));
  s->scratch = aligned_alloc(64, sizeof(float) * 3 * s->pitch * s->items + 64);
  bool ok = s->scratch != NULL;
  if (p->operand[XR_ROWS_WEIGHT].index >= 0) ok = ok && (s->weight = malloc(sizeof(float) * n + 1));
  if (p->operand[XR_ROWS_BIAS].index >= 0) ok = ok && (s->bias = malloc(sizeof(float) * n + 1));
  if (!ok) {
    rows_release(s);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory for %zu-element row scratch",
                    plan->op->name, n);
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t rows_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_rows_t *s = state;
  if (s->p->rows == 0 || s->p->n == 0) return XR_OK;
  xr_status_t st = XR_OK;
  if (s->weight || s->bias) st = xr_hal_stream_enqueue_host(stream, widen_params, s);
  if (st == XR_OK) st = xr_hal_stream_enqueue_parallel(stream, s->items, 1, rows_item, s);
  return st;
}

const xr_kernel_impl_t xr_cpu_norm_impl = {
    .name = "cpu.norm",
    .driver = "cpu",
    .supports = rows_supports,
    .prepare = rows_prepare,
    .enqueue = rows_enqueue,
    .release = rows_release,
};

const xr_kernel_impl_t xr_cpu_softmax_impl = {
    .name = "cpu.softmax",
    .driver = "cpu",
    .supports = rows_supports,
    .prepare = rows_prepare,
    .enqueue = rows_enqueue,
    .release = rows_release,
};

/* ------------------------------------------------------------------------------------------ */
/* rotary embedding                                                                           */

typedef struct cpu_rotary {
  const xr_rotary_problem_t *p;
  char *pos, *q, *k, *cache;
  int64_t pos_offset, q_offset, k_offset, cache_offset;
  size_t items;
  bool avx512;    /* heads rotated in place by xr_rotary_avx512_head() */
  float *scratch; /* items x 3 rows of rot_dim: cos|sin, a head widened, the head rotated */
} cpu_rotary_t;

/* NeoX: the two halves of the head are the pairs. (restrict: the rows are distinct parts of
 * one scratch allocation, which the compiler cannot tell apart by itself.) */
HOT void rotate_halves(float *restrict out, const float *restrict in, const float *restrict c,
                       const float *restrict sn, int64_t embed) {
  const float *x = in, *y = in + embed;
  int64_t i = 0;
  for (; i + BLOCK <= embed; i += BLOCK) {
    for (int j = 0; j < BLOCK; j++) out[i + j] = x[i + j] * c[i + j] - y[i + j] * sn[i + j];
    for (int j = 0; j < BLOCK; j++)
      out[embed + i + j] = y[i + j] * c[i + j] + x[i + j] * sn[i + j];
  }
  for (; i < embed; i++) {
    out[i] = x[i] * c[i] - y[i] * sn[i];
    out[embed + i] = y[i] * c[i] + x[i] * sn[i];
  }
}

/* GPT-J: neighbours are the pairs. */
HOT void rotate_pairs(float *restrict out, const float *restrict in, const float *restrict c,
                      const float *restrict sn, int64_t embed) {
  int64_t i = 0;
  for (; i + BLOCK <= embed; i += BLOCK)
    for (int j = 0; j < BLOCK; j++) {
      float x = in[2 * (i + j)], y = in[2 * (i + j) + 1];
      out[2 * (i + j)] = x * c[i + j] - y * sn[i + j];
      out[2 * (i + j) + 1] = y * c[i + j] + x * sn[i + j];
    }
  for (; i < embed; i++) {
    float x = in[2 * i], y = in[2 * i + 1];
    out[2 * i] = x * c[i] - y * sn[i];
    out[2 * i + 1] = y * c[i] + x * sn[i];
  }
}

HOT void rotate_heads(const cpu_rotary_t *s, char *base, int64_t token_base, int64_t heads,
                         int64_t head_stride, int64_t elem_stride, const float *c,
                         const float *sn, float *in, float *out) {
  const xr_rotary_problem_t *p = s->p;
  const int64_t embed = p->rot_dim / 2, rot = p->rot_dim;
  for (int64_t h = 0; h < heads; h++) {
    int64_t head = token_base + h * head_stride + p->rope_dim_offset * elem_stride;
    if (s->avx512) {
      xr_rotary_avx512_head(base + head * (int64_t)xr_dtype_size(p->q_dtype), p->q_dtype, c, sn,
                            embed, p->is_neox);
      continue;
    }
    load_row(in, base, p->q_dtype, head, elem_stride, rot);
    if (p->is_neox) rotate_halves(out, in, c, sn, embed);
    else rotate_pairs(out, in, c, sn, embed);
    store_row(base, p->q_dtype, head, elem_stride, out, rot);
  }
}

XR_CPU_CLONES
static void rotary_item(void *ctx, size_t begin, size_t end) {
  const cpu_rotary_t *s = ctx;
  const xr_rotary_problem_t *p = s->p;
  const int64_t embed = p->rot_dim / 2;
  for (size_t item = begin; item < end; item++) {
    float *cs = s->scratch + item * 3 * (size_t)p->rot_dim, *in = cs + p->rot_dim,
          *out = in + p->rot_dim;
    int64_t t0 = (int64_t)(item * (size_t)p->tokens / s->items);
    int64_t t1 = (int64_t)((item + 1) * (size_t)p->tokens / s->items);
    for (int64_t t = t0; t < t1; t++) {
      int64_t pos_index = s->pos_offset + xr_rotary_token_offset(p, p->pos_strides, t);
      int64_t position = p->pos_dtype == XR_DTYPE_I64 ? ((const int64_t *)s->pos)[pos_index]
                                                      : ((const int32_t *)s->pos)[pos_index];
      if (position < 0 || position >= p->max_position) continue;
      load_row(cs, s->cache, p->cache_dtype, s->cache_offset + position * p->cache_pos_stride,
               p->cache_elem_stride, p->rot_dim);
      if (p->inverse)
        for (int64_t i = 0; i < embed; i++) cs[embed + i] = -cs[embed + i];
      rotate_heads(s, s->q, s->q_offset + xr_rotary_token_offset(p, p->q_token_strides, t),
                   p->num_heads, p->q_head_stride, p->q_elem_stride, cs, cs + embed, in, out);
      if (s->k)
        rotate_heads(s, s->k, s->k_offset + xr_rotary_token_offset(p, p->k_token_strides, t),
                     p->num_kv_heads, p->k_head_stride, p->k_elem_stride, cs, cs + embed, in, out);
    }
  }
}

static xr_status_t rotary_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  return xr_rotary_check_fast(plan, "cpu");
}

static void rotary_release(void *state) {
  cpu_rotary_t *s = state;
  if (!s) return;
  free(s->scratch);
  free(s);
}

static xr_status_t rotary_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                  const xr_tensor_t *tensors, void **out_state) {
  const xr_rotary_problem_t *p = plan->problem;
  cpu_rotary_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  const int idx[4] = {p->positions, p->query, p->key, p->cache};
  char **base[4] = {&s->pos, &s->q, &s->k, &s->cache};
  int64_t *offset[4] = {&s->pos_offset, &s->q_offset, &s->k_offset, &s->cache_offset};
  for (int i = 0; i < 4; i++) {
    if (idx[i] < 0) continue;
    void *host;
    xr_status_t st = xr_tensor_host(&tensors[idx[i]], &host);
    if (st != XR_OK) {
      rotary_release(s);
      return st;
    }
    *base[i] = host;
    *offset[i] = tensors[idx[i]].offset;
  }
  s->avx512 = xr_cpu_avx512() &&
              xr_avx512_dtype(p->q_dtype) &&
              p->q_elem_stride == 1 && (p->key < 0 || p->k_elem_stride == 1) &&
              (p->is_neox || (p->q_dtype == XR_DTYPE_BF16 && (p->rot_dim / 2) % 16 == 0));
  s->items = item_count(device, p->tokens, (int64_t)(3 * (size_t)p->rot_dim * sizeof(float)));
  s->scratch = malloc(sizeof(float) * 3 * (size_t)p->rot_dim * s->items + 1);
  if (!s->scratch) {
    rotary_release(s);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory for scratch", plan->op->name);
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t rotary_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_rotary_t *s = state;
  if (s->p->tokens == 0 || s->p->rot_dim == 0) return XR_OK;
  return xr_hal_stream_enqueue_parallel(stream, s->items, 1, rotary_item, s);
}

const xr_kernel_impl_t xr_cpu_rotary_impl = {
    .name = "cpu.rotary",
    .driver = "cpu",
    .supports = rotary_supports,
    .prepare = rotary_prepare,
    .enqueue = rotary_enqueue,
    .release = rotary_release,
};
