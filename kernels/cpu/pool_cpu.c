/* cpu.pool: the pool family (kernels/pool.h) on the cpu in fp32, one (n, c) plane per task on
 * the device's thread pool. Each task gathers its input plane (any strides, fp32 / fp16 / bf16)
 * into a contiguous fp32 buffer once, computes there, and writes its result plane rounded once
 * to the result's dtype; the backwards scatter into an fp32 plane the same way. Max pooling and
 * its backward over channels-last data read the channels where they lie instead
 * (max_rows_nhwc, max_backward_nhwc_items). Semantics as the reference (kernels/pool.c), whose
 * window and source-index helpers it calls, once per output index of each dim at prepare time
 * for upsampling and max pooling (dim_table_t). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/cpu/plane_io.h"
#include "kernels/cpu/vector_ext.h" /* after elementwise_cpu.h, as attention_cpu.c says */
#include "kernels/pool.h"

/* Per-output-index tables of one dim, computed once per op (prepare): nearest and bilinear
 * upsampling's source indices and weights, and max pooling's window range inside the input. */
typedef struct dim_table {
  int64_t *src0, *src1; /* nearest: src0; bilinear: src0, src1; max: the first and end kernel */
  float *weight;        /* bilinear: src1's weight */
} dim_table_t;

typedef struct cpu_pool {
  const xr_pool_problem_t *p;
  void *base[3]; /* x, y, indices */
  int64_t off[3];
  dim_table_t *table; /* [3]: d, h, w (the forward kinds that use them) */
} cpu_pool_t;

enum { X, Y, INDICES }; /* base[] and off[] slots */

/* The element (n, c, h, w) of slot k's view (2-D: d = 0), in elements from its base. */
static inline int64_t element_at(const cpu_pool_t *s, int k, int64_t n, int64_t c, int64_t h,
                                 int64_t w) {
  const xr_pool_problem_t *p = s->p;
  const xr_view5_t *v = k == X ? &p->x : k == Y ? &p->y : &p->indices;
  return s->off[k] + n * v->strides[0] + c * v->strides[1] + h * v->strides[3] + w * v->strides[4];
}

/* The recorded max-pooling position at element `at` of the indices (int64 or int32). */
static inline int64_t index_value(const cpu_pool_t *s, int64_t at) {
  return s->p->indices.dtype == XR_DTYPE_I64 ? ((const int64_t *)s->base[INDICES])[at]
                                             : ((const int32_t *)s->base[INDICES])[at];
}

/* The kernel positions k in [lo, hi) whose input index o * stride - pad + k * dilation lies in
 * [0, in). */
static void max_range(const xr_pool_problem_t *p, int d, int64_t o, int64_t *lo, int64_t *hi) {
  int64_t start = o * p->stride[d] - p->pad[d], dil = p->dilation[d];
  *lo = start < 0 ? (-start + dil - 1) / dil : 0;
  int64_t end = (p->in[d] - start + dil - 1) / dil;
  *hi = end < p->kernel[d] ? end : p->kernel[d];
  if (*hi < *lo) *hi = *lo;
}

/* Max pooling's plane: the first maximum of each window wins, a NaN over any number. */
static void max_plane(const cpu_pool_t *s, int64_t n, int64_t c, const float *x, float *y) {
  const xr_pool_problem_t *p = s->p;
  const int64_t W = p->in[2], OH = p->out[1], OW = p->out[2];
  const int64_t sh = p->stride[1], sw = p->stride[2], ph = p->pad[1], pw = p->pad[2];
  const int64_t dh = p->dilation[1], dw = p->dilation[2];
  const dim_table_t *th = &s->table[1], *tw = &s->table[2];
  const xr_view5_t *I = &p->indices;
  int64_t *indices =
      (int64_t *)s->base[INDICES] + s->off[INDICES] + n * I->strides[0] + c * I->strides[1];
  const int64_t ish = I->strides[3], isw = I->strides[4];
  for (int64_t oh = 0; oh < OH; oh++) {
    const int64_t h0 = oh * sh - ph, kh0 = th->src0[oh], kh1 = th->src1[oh];
    for (int64_t ow = 0; ow < OW; ow++) {
      const int64_t w0 = ow * sw - pw, kw0 = tw->src0[ow], kw1 = tw->src1[ow];
      float v = -INFINITY;
      int64_t best = -1;
      for (int64_t kh = kh0; kh < kh1; kh++) {
        const int64_t row = (h0 + kh * dh) * W + w0;
        for (int64_t kw = kw0; kw < kw1; kw++) {
          const int64_t at = row + kw * dw;
          const float e = x[at];
          const bool take = best < 0 || e > v || (e != e && v == v);
          v = take ? e : v;
          best = take ? at : best;
        }
      }
      y[oh * OW + ow] = v;
      indices[oh * ish + ow * isw] = best;
    }
  }
}

/* ---- max pooling over channels-last data ---------------------------------------------- */
/* Channels innermost in x, y and the indices: a task takes output rows (n, oh) and, per output
 * position, reads each window element's channels as 16-lane vectors where they lie (gathering
 * planes through the channel stride ran at a quarter of PyTorch's own kernel). Each lane keeps
 * its best value, that value's order key and its flat position h * W + w. The key orders the
 * floats as max pooling does (max_plane): NaN above every number (so a later NaN never replaces
 * an earlier one), -0 equal to 0, so one strict integer compare decides, as the first maximum
 * wins. */

XR_VHOT vi order_key(vf x) {
  vi b = (vi)x;
  vi key = b ^ ((b >> 31) & 0x7fffffff); /* signed order of the floats */
  key -= b == INT32_MIN;                 /* -0: 0's key */
  vi nan = (b & 0x7fffffff) > 0x7f800000;
  return (key & ~nan) | (nan & INT32_MAX);
}

/* Channels [c, c + count) (count <= VW) of the element at `at` as floats. */
XR_VHOT vf load_channels(const void *base, xr_dtype_t dt, int64_t at, int64_t count) {
  if (count == VW && dt == XR_DTYPE_F32) return vload((const float *)base + at);
  if (count == VW && dt == XR_DTYPE_BF16) return vload_bf16((const uint16_t *)base + at);
  float lanes[VW] = {0};
  for (int64_t j = 0; j < count; j++) lanes[j] = (float)xr_load_element(base, dt, at + j);
  return vload(lanes);
}

XR_VHOT void store_channels(void *base, xr_dtype_t dt, int64_t at, int64_t count, vf v) {
  if (count == VW && dt == XR_DTYPE_F32) {
    vstore((float *)base + at, v);
  } else if (count == VW && dt == XR_DTYPE_BF16) {
    vstore_bf16((uint16_t *)base + at, v);
  } else {
    float lanes[VW];
    vstore(lanes, v);
    for (int64_t j = 0; j < count; j++) xr_store_element(base, dt, at + j, lanes[j]);
  }
}

static bool channels_last(const xr_view5_t *v, int64_t channels) {
  return channels == 1 || v->strides[1] == 1;
}

/* Whether the op is 2-D max pooling or its backward (d = 1) with every view channels-last:
 * max_rows_nhwc and max_backward_nhwc_items take those. */
static bool max_nhwc(const xr_pool_problem_t *p) {
  int64_t C = p->x.shape[1];
  return (p->kind == XR_POOL_MAX || p->kind == XR_POOL_MAX_BACKWARD) && p->in[0] == 1 &&
         p->out[0] == 1 && C > 1 && channels_last(&p->x, C) && channels_last(&p->y, C) &&
         channels_last(&p->indices, C);
}

XR_CPU_CLONES static void max_rows_nhwc(void *ctx, size_t begin, size_t end) {
  const cpu_pool_t *s = ctx;
  const xr_pool_problem_t *p = s->p;
  const int64_t C = p->x.shape[1], W = p->in[2], OH = p->out[1], OW = p->out[2];
  const dim_table_t *th = &s->table[1], *tw = &s->table[2];
  for (size_t item = begin; item < end; item++) {
    const int64_t n = (int64_t)item / OH, oh = (int64_t)item % OH;
    const int64_t h0 = oh * p->stride[1] - p->pad[1], kh0 = th->src0[oh], kh1 = th->src1[oh];
    for (int64_t ow = 0; ow < OW; ow++) {
      const int64_t w0 = ow * p->stride[2] - p->pad[2], kw0 = tw->src0[ow], kw1 = tw->src1[ow];
      for (int64_t c = 0; c < C; c += VW) {
        const int64_t count = C - c < VW ? C - c : VW;
        vf m = (vf){0} - INFINITY;
        vi key = (vi){0} + INT32_MIN, at = (vi){0} - 1;
        bool first = true;
        for (int64_t kh = kh0; kh < kh1; kh++) {
          const int64_t h = h0 + kh * p->dilation[1];
          for (int64_t kw = kw0; kw < kw1; kw++) {
            const int64_t w = w0 + kw * p->dilation[2];
            vf e = load_channels(s->base[X], p->x.dtype, element_at(s, X, n, c, h, w), count);
            vi k = order_key(e), take = first ? (vi){0} - 1 : k > key;
            m = (vf)(((vi)e & take) | ((vi)m & ~take));
            key = (k & take) | (key & ~take);
            at = (((vi){0} + (int32_t)(h * W + w)) & take) | (at & ~take);
            first = false;
          }
        }
        store_channels(s->base[Y], p->y.dtype, element_at(s, Y, n, c, oh, ow), count, m);
        int64_t *ix = (int64_t *)s->base[INDICES] + element_at(s, INDICES, n, c, oh, ow);
        for (int64_t j = 0; j < count; j++) ix[j] = at[j];
      }
    }
  }
}

/* Max pooling's backward over channels-last data: a task takes BLOCK_C channels of one sample
 * (two vectors: whole cache lines of bf16 gradients and of int64 indices), adds each output
 * position's gradient into an fp32 [H, W, BLOCK_C] buffer at its channels' recorded positions,
 * in output order as backward_plane does, and writes the buffer rounded once. */
enum { BLOCK_C = 2 * VW };

XR_CPU_CLONES static void max_backward_nhwc_items(void *ctx, size_t begin, size_t end) {
  const cpu_pool_t *s = ctx;
  const xr_pool_problem_t *p = s->p;
  const int64_t C = p->x.shape[1], H = p->in[1], W = p->in[2], OH = p->out[1], OW = p->out[2];
  const int64_t blocks = (C + BLOCK_C - 1) / BLOCK_C, plane = H * W;
  float *acc = malloc(sizeof(float) * (size_t)(plane * BLOCK_C));
  if (!acc) return; /* out of memory: the poisoned result shows it */
  for (size_t item = begin; item < end; item++) {
    const int64_t n = (int64_t)item / blocks, c0 = (int64_t)item % blocks * BLOCK_C;
    const int64_t count = C - c0 < BLOCK_C ? C - c0 : BLOCK_C;
    memset(acc, 0, sizeof(float) * (size_t)(plane * BLOCK_C));
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        float g[BLOCK_C];
        const int64_t gat = element_at(s, Y, n, c0, oh, ow);
        const int64_t at = element_at(s, INDICES, n, c0, oh, ow);
        for (int64_t v = 0; v < count; v += VW)
          vstore(g + v,
                 load_channels(s->base[Y], p->y.dtype, gat + v, count - v < VW ? count - v : VW));
        for (int64_t j = 0; j < count; j++) {
          int64_t i = index_value(s, at + j);
          if (i >= 0 && i < plane) acc[i * BLOCK_C + j] += g[j];
        }
      }
    for (int64_t h = 0; h < H; h++)
      for (int64_t w = 0; w < W; w++) {
        const int64_t xat = element_at(s, X, n, c0, h, w);
        for (int64_t v = 0; v < count; v += VW)
          store_channels(s->base[X], p->x.dtype, xat + v, count - v < VW ? count - v : VW,
                         vload(acc + (h * W + w) * BLOCK_C + v));
      }
  }
  free(acc);
}

/* The result plane y from the input plane x (both contiguous fp32, d-h-w order). */
static void forward_plane(const cpu_pool_t *s, int64_t n, int64_t c, const float *x, float *y) {
  const xr_pool_problem_t *p = s->p;
  if (p->kind == XR_POOL_MAX) {
    max_plane(s, n, c, x, y);
    return;
  }
  const int64_t H = p->in[1], W = p->in[2], OD = p->out[0], OH = p->out[1], OW = p->out[2];
  const dim_table_t *t = s->table;
  for (int64_t od = 0; od < OD; od++)
    for (int64_t oh = 0; oh < OH; oh++) {
      float *out = y + (od * OH + oh) * OW;
      if (p->kind == XR_POOL_NEAREST) {
        const float *row = x + (t[0].src0[od] * H + t[1].src0[oh]) * W;
        for (int64_t ow = 0; ow < OW; ow++) out[ow] = row[t[2].src0[ow]];
      } else if (p->kind == XR_POOL_BILINEAR) {
        const float lh = t[1].weight[oh];
        const float *r0 = x + t[1].src0[oh] * W, *r1 = x + t[1].src1[oh] * W;
        for (int64_t ow = 0; ow < OW; ow++) {
          const int64_t w0 = t[2].src0[ow], w1 = t[2].src1[ow];
          const float lw = t[2].weight[ow];
          out[ow] = (1 - lh) * (1 - lw) * r0[w0] + (1 - lh) * lw * r0[w1] + lh * (1 - lw) * r1[w0] +
                    lh * lw * r1[w1];
        }
      } else { /* average, plain or adaptive */
        for (int64_t ow = 0; ow < OW; ow++) {
          int64_t win[4];
          float divisor = (float)xr_pool_avg_window(p, oh, ow, win), v = 0;
          for (int64_t ih = win[0]; ih < win[1]; ih++)
            for (int64_t iw = win[2]; iw < win[3]; iw++) v += x[ih * W + iw];
          out[ow] = v / divisor;
        }
      }
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
        int64_t i = index_value(s, element_at(s, INDICES, n, c, oh, ow));
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
        xr_plane_gather(s->base[Y], s->off[Y], &p->y, n, c, p->out, out);
        memset(in, 0, sizeof(float) * (size_t)in_n);
        backward_plane(s, n, c, out, in);
        xr_plane_scatter(s->base[X], s->off[X], &p->x, n, c, p->in, in);
      } else {
        xr_plane_gather(s->base[X], s->off[X], &p->x, n, c, p->in, in);
        forward_plane(s, n, c, in, out);
        xr_plane_scatter(s->base[Y], s->off[Y], &p->y, n, c, p->out, out);
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

static void cpu_release(void *state) {
  cpu_pool_t *s = state;
  if (!s) return;
  if (s->table)
    for (int d = 0; d < 3; d++)
      free(s->table[d].src0), free(s->table[d].src1), free(s->table[d].weight);
  free(s->table);
  free(s);
}

/* The per-dim tables of the forward kinds that use them (dim_table_t). */
static bool build_tables(cpu_pool_t *s) {
  const xr_pool_problem_t *p = s->p;
  if (p->kind != XR_POOL_MAX && p->kind != XR_POOL_NEAREST && p->kind != XR_POOL_BILINEAR)
    return true;
  if (!(s->table = calloc(3, sizeof *s->table))) return false;
  for (int d = 0; d < 3; d++) {
    dim_table_t *t = &s->table[d];
    size_t n = (size_t)p->out[d];
    t->src0 = malloc(sizeof(int64_t) * n), t->src1 = malloc(sizeof(int64_t) * n);
    t->weight = malloc(sizeof(float) * n);
    if (!t->src0 || !t->src1 || !t->weight) return false;
    for (int64_t i = 0; i < p->out[d]; i++) {
      if (p->kind == XR_POOL_MAX) {
        max_range(p, d, i, &t->src0[i], &t->src1[i]);
      } else if (p->kind == XR_POOL_NEAREST) {
        t->src0[i] = xr_pool_nearest_source(p, d, i);
      } else {
        int64_t src[2];
        t->weight[i] = xr_pool_linear_source(p, d, i, src);
        t->src0[i] = src[0], t->src1[i] = src[1];
      }
    }
  }
  return true;
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_pool_problem_t *p = plan->problem;
  cpu_pool_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  const xr_view5_t *views[3] = {&p->x, &p->y, &p->indices};
  xr_status_t st = XR_OK;
  for (int k = 0; k < 3 && st == XR_OK; k++) {
    if (views[k]->index < 0) continue;
    s->off[k] = tensors[views[k]->index].offset;
    st = xr_tensor_host(&tensors[views[k]->index], &s->base[k]);
  }
  if (st == XR_OK && !build_tables(s))
    st = xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  if (st != XR_OK) {
    cpu_release(s);
    return st;
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t cpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_pool_t *s = state;
  if (max_nhwc(s->p) && s->p->kind == XR_POOL_MAX)
    return xr_hal_stream_enqueue_parallel(stream, (size_t)(s->p->x.shape[0] * s->p->out[1]), 1,
                                          max_rows_nhwc, s);
  if (max_nhwc(s->p))
    return xr_hal_stream_enqueue_parallel(
        stream, (size_t)(s->p->x.shape[0] * ((s->p->x.shape[1] + BLOCK_C - 1) / BLOCK_C)), 1,
        max_backward_nhwc_items, s);
  return xr_hal_stream_enqueue_parallel(stream, (size_t)(s->p->x.shape[0] * s->p->x.shape[1]), 1,
                                        run_planes, s);
}

const xr_kernel_impl_t xr_cpu_pool_impl = {
    .name = "cpu.pool",
    .driver = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .enqueue = cpu_enqueue,
    .release = cpu_release,
};
