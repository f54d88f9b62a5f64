/* cpu.argmax: aten::argmax on the host thread pool. Rows of the reduced dim are loaded in
 * float blocks (vectorised conversion) and scanned; a reduction with few outputs (dim=None) is
 * split into chunks whose partial results a host step combines in order, so the first maximum
 * still wins. f32, f16, bf16 and fp8 inputs (exact in float); others run on ref.argmax. */
#include <math.h>
#include <stdlib.h>

#include "kernels/argmax.h"
#include "kernels/cpu/avx512.h"
#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/family.h"

enum { CHUNK = 1 << 16 };

typedef struct partial {
  float value;
  int64_t k;
} partial_t;

typedef struct cpu_argmax {
  const xr_argmax_problem_t *p;
  const char *in;       /* the input's first element */
  size_t esize;
  int64_t *out;
  int64_t chunks;       /* per output */
  bool avx512;          /* contiguous f32 / bf16 / f16 rows: scan_avx512() */
  partial_t *partials;  /* out_numel * chunks when chunks > 1 */
} cpu_argmax_t;

enum { LANES = 16 };

/* First maximum of v[0, n) as {value, position}: position -1 when every element is -inf, -2
 * when there is a NaN (the caller then looks for the first one). Lane j follows elements j,
 * j + LANES, ...: a strict > keeps each lane's first maximum, and the lanes merge by value,
 * then by the smaller position. The lane loop is written so that the compiler turns it into
 * vector compares and blends. */
XR_CPU_CLONES static partial_t block_max(const float *v, int64_t n) {
  float m[LANES];
  int32_t at[LANES], nan[LANES];
  for (int j = 0; j < LANES; j++) m[j] = -INFINITY, at[j] = -1, nan[j] = 0;
  int64_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int j = 0; j < LANES; j++) {
      bool greater = v[i + j] > m[j];
      nan[j] |= v[i + j] != v[i + j];
      m[j] = greater ? v[i + j] : m[j];
      at[j] = greater ? (int32_t)(i + j) : at[j];
    }
  partial_t best = {-INFINITY, -1};
  for (int j = 0; j < LANES; j++) {
    if (nan[j]) return (partial_t){NAN, -2};
    if (at[j] >= 0 && (m[j] > best.value || (m[j] == best.value && at[j] < best.k)))
      best.value = m[j], best.k = at[j];
  }
  for (; i < n; i++) {
    if (isnan(v[i])) return (partial_t){NAN, -2};
    if (v[i] > best.value) best.value = v[i], best.k = i;
  }
  return best;
}

#ifdef XR_HAVE_AVX512_PATHS
/* block_max over n (< 2^31) contiguous f32, bf16 or f16 values at src, with AVX-512: four
 * independent sets of 16 lanes (a lane's compare waits on its previous select; four keep the
 * vector units busy), merged at the end by value, then by the smaller position. */
XR_AVX512 static partial_t scan_avx512(const char *src, xr_dtype_t dt, int64_t n) {
  enum { SETS = 4 };
  const int64_t esize = dt == XR_DTYPE_F32 ? 4 : 2;
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512 best[SETS];
  __m512i at[SETS];
  __mmask16 nan = 0;
  for (int a = 0; a < SETS; a++) best[a] = _mm512_set1_ps(-INFINITY), at[a] = _mm512_set1_epi32(-1);
  int64_t i = 0;
  for (; i + 16 * SETS <= n; i += 16 * SETS)
    for (int a = 0; a < SETS; a++) {
      __m512 v = xr_avx512_load(src + (i + 16 * a) * esize, dt, 0xffff);
      nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      __mmask16 greater = _mm512_cmp_ps_mask(v, best[a], _CMP_GT_OQ);
      best[a] = _mm512_mask_mov_ps(best[a], greater, v);
      at[a] = _mm512_mask_mov_epi32(at[a], greater, _mm512_add_epi32(iota, _mm512_set1_epi32((int)(i + 16 * a))));
    }
  for (; i < n; i += 16) {
    __mmask16 m = xr_avx512_lanes(n - i);
    __m512 v = xr_avx512_load(src + i * esize, dt, m);
    nan |= _mm512_mask_cmp_ps_mask(m, v, v, _CMP_UNORD_Q);
    __mmask16 greater = _mm512_mask_cmp_ps_mask(m, v, best[0], _CMP_GT_OQ);
    best[0] = _mm512_mask_mov_ps(best[0], greater, v);
    at[0] = _mm512_mask_mov_epi32(at[0], greater, _mm512_add_epi32(iota, _mm512_set1_epi32((int)i)));
  }
  if (nan) return (partial_t){NAN, -2};
  partial_t r = {-INFINITY, -1};
  for (int a = 0; a < SETS; a++) {
    float value[16];
    int32_t pos[16];
    _mm512_storeu_ps(value, best[a]);
    _mm512_storeu_si512(pos, at[a]);
    for (int j = 0; j < 16; j++)
      if (pos[j] >= 0 && (value[j] > r.value || (value[j] == r.value && pos[j] < r.k)))
        r.value = value[j], r.k = pos[j];
  }
  return r;
}
#endif

/* First maximum of positions [k0, k1) of output o; NaN beats every number. */
static partial_t scan(const cpu_argmax_t *s, int64_t o, int64_t k0, int64_t k1) {
  const xr_argmax_problem_t *p = s->p;
  const char *base = s->in + xr_argmax_input_offset(p, o) * (int64_t)s->esize;
  if (k0 >= k1) return (partial_t){0, -1};
  partial_t best = {-INFINITY, k0}; /* all -inf: the first one */
#ifdef XR_HAVE_AVX512_PATHS
  if (s->avx512 && k1 - k0 <= INT32_MAX) {
    const char *row = base + k0 * (int64_t)s->esize;
    partial_t b = scan_avx512(row, p->dtype, k1 - k0);
    if (b.k == -2) { /* the first NaN is the answer */
      int64_t i = 0;
      while (!isnan((float)xr_load_element(row, p->dtype, i))) i++;
      return (partial_t){NAN, k0 + i};
    }
    return b.k >= 0 ? (partial_t){b.value, k0 + b.k} : best;
  }
#endif
  float buf[XR_EW_CPU_BLOCK];
  for (int64_t k = k0; k < k1; k += XR_EW_CPU_BLOCK) {
    int64_t n = k1 - k < XR_EW_CPU_BLOCK ? k1 - k : XR_EW_CPU_BLOCK;
    const float *v = buf;
    if (p->red_rank == 1 && p->dtype == XR_DTYPE_F32 && p->red_strides[0] == 1) {
      v = (const float *)base + k; /* scanned where it lies */
    } else if (p->red_rank == 1) {
      xr_ew_cpu_load(buf, base + k * p->red_strides[0] * (int64_t)s->esize, p->dtype,
                     p->red_strides[0], n);
    } else {
      for (int64_t i = 0; i < n; i++)
        xr_ew_cpu_load(&buf[i], base + xr_argmax_reduced_offset(p, k + i) * (int64_t)s->esize,
                       p->dtype, 1, 1);
    }
    partial_t b = block_max(v, n);
    if (b.k == -2) { /* the first NaN is the answer */
      int64_t i = 0;
      while (v[i] == v[i]) i++;
      return (partial_t){v[i], k + i};
    }
    if (b.k >= 0 && b.value > best.value) best.value = b.value, best.k = k + b.k;
  }
  return best;
}

static void run_items(void *ctx, size_t begin, size_t end) {
  const cpu_argmax_t *s = ctx;
  for (size_t item = begin; item < end; item++) {
    int64_t o = (int64_t)item / s->chunks, c = (int64_t)item % s->chunks;
    int64_t k0 = c * CHUNK, k1 = s->chunks == 1 ? s->p->red_numel : k0 + CHUNK;
    if (k1 > s->p->red_numel) k1 = s->p->red_numel;
    partial_t r = scan(s, o, k0, k1);
    if (s->chunks == 1) s->out[o] = r.k;
    else s->partials[item] = r;
  }
}

static void combine(void *ctx) {
  const cpu_argmax_t *s = ctx;
  for (int64_t o = 0; o < s->p->out_numel; o++) {
    partial_t best = s->partials[o * s->chunks];
    for (int64_t c = 1; c < s->chunks; c++) {
      partial_t r = s->partials[o * s->chunks + c];
      if (!isnan(best.value) && (isnan(r.value) || r.value > best.value)) best = r;
    }
    s->out[o] = best.k;
  }
}

static xr_status_t cpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_argmax_problem_t *p = plan->problem;
  if (!xr_dtype_is_floating(p->dtype) || p->dtype == XR_DTYPE_F64)
    return xr_error(XR_UNIMPLEMENTED, "%s input: compared in float only for narrower floats",
                    xr_dtype_name(p->dtype));
  return XR_OK;
}

static void cpu_release(void *state) {
  cpu_argmax_t *s = state;
  if (s) free(s->partials);
  free(s);
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_argmax_problem_t *p = plan->problem;
  cpu_argmax_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  s->esize = xr_dtype_size(p->dtype);
  s->avx512 = xr_cpu_avx512() && p->red_rank == 1 && p->red_strides[0] == 1 &&
              xr_avx512_dtype(p->dtype);
  void *in, *out;
  xr_status_t st;
  if ((st = xr_tensor_host(&tensors[p->self], &in)) || (st = xr_tensor_host(&tensors[p->out], &out))) {
    free(s);
    return st;
  }
  s->in = (const char *)in + tensors[p->self].offset * (int64_t)s->esize;
  s->out = out;
  /* Few outputs over long reductions: split them so every thread works. */
  s->chunks = p->out_numel < 16 && p->red_numel > 2 * CHUNK ? (p->red_numel + CHUNK - 1) / CHUNK : 1;
  if (s->chunks > 1) {
    s->partials = calloc((size_t)(p->out_numel * s->chunks), sizeof *s->partials);
    if (!s->partials) {
      free(s);
      return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
    }
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t cpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_argmax_t *s = state;
  if (s->p->out_numel == 0) return XR_OK;
  size_t items = (size_t)(s->p->out_numel * s->chunks);
  xr_status_t st = xr_hal_stream_enqueue_parallel(stream, items, 1, run_items, s);
  if (st == XR_OK && s->chunks > 1) st = xr_hal_stream_enqueue_host(stream, combine, s);
  return st;
}

const xr_kernel_impl_t xr_cpu_argmax = {
    .name = "cpu.argmax",
    .driver = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .enqueue = cpu_enqueue,
    .release = cpu_release,
};
