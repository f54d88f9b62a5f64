/* Fast CPU path for the fused experts (vllm::outplace/inplace_fused_experts, vllm::moe_forward).
 *
 * With oneDNN (bf16, fp32): the routing and the weights are known at prepare() (the inputs are
 * in place and fixed between runs), so each expert's GEMMs get oneDNN matmul primitives there,
 * one per distinct row count, and each expert's w1[e] and w2[e] are packed once into the layout
 * the primitive reads (as a CPU serving stack does at load time; same bytes per run). A run
 * gathers each expert's rows in the op's dtype, runs GEMM-1 into the op's dtype (vLLM's rounding
 * of the GEMM-1 output), silu_and_mul, GEMM-2 into fp32, then the reduce applies the routing
 * weight, rounds and sums over top-k. Many small experts run one per thread (see
 * dnnl_prepare), few large ones one after another on every thread. Should the routing differ
 * from the prepared one (inputs changed), the run takes the micro-kernel path below instead.
 *
 * Without (fp16: oneDNN 2.6 has no fp16 matmul on x86; or oneDNN absent), the micro-kernel path:
 *   1. route (one host step): the rows routed to each expert, each expert's rows padded to the
 *      micro-kernel height;
 *   2. gather: those rows of hidden_states as fp32, expert by expert;
 *   3. GEMM-1 with fused silu_and_mul: per (expert, 32 intermediate columns) task, the gate and
 *      up panels of w1 are packed (converted to fp32) a K-chunk at a time and multiplied with
 *      every row of the expert; then act = silu(g) * u;
 *   4. GEMM-2: per (expert, 32 output columns) task, y = act @ w2[e]^T times the routing weight;
 *   5. reduce: out[m] = sum over the token's top-k rows, rounded once.
 * Steps 2-5 are parallel-for jobs on the device's thread pool. Intermediates are rounded to
 * fp16/bf16 where vLLM stores them (GEMM-1 output, act, weighted GEMM-2 output); accumulation
 * is fp32. The 8x32 micro-kernel uses AVX-512 FMAs where the CPU has them, plain C otherwise. */
#include <stdlib.h>
#include <string.h>

#include <immintrin.h>

#include "kernels/cpu/onednn.h"
#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/moe.h"

enum { MR = 8, NR = 32, KC = 256 };

typedef void (*micro_fn)(int64_t kc, const float *A, int64_t lda, const float *P, float *C,
                         int64_t ldc, bool accumulate);

/* C[MR][NR] (+)= A[MR][kc] @ P[kc][NR] */
static void micro_generic(int64_t kc, const float *A, int64_t lda, const float *P, float *C,
                          int64_t ldc, bool accumulate) {
  float c[MR][NR] = {{0}};
  for (int64_t k = 0; k < kc; k++)
    for (int i = 0; i < MR; i++) {
      float a = A[i * lda + k];
      for (int j = 0; j < NR; j++) c[i][j] += a * P[k * NR + j];
    }
  for (int i = 0; i < MR; i++)
    for (int j = 0; j < NR; j++) C[i * ldc + j] = (accumulate ? C[i * ldc + j] : 0.0f) + c[i][j];
}

#define ROW(i)                                                   \
  {                                                              \
    __m512 a = _mm512_set1_ps(A[(i) * lda + k]);                 \
    c##i##0 = _mm512_fmadd_ps(a, b0, c##i##0);                   \
    c##i##1 = _mm512_fmadd_ps(a, b1, c##i##1);                   \
  }
#define OUT(i)                                                                          \
  {                                                                                     \
    float *o = C + (i) * ldc;                                                           \
    if (accumulate) {                                                                   \
      c##i##0 = _mm512_add_ps(c##i##0, _mm512_loadu_ps(o));                             \
      c##i##1 = _mm512_add_ps(c##i##1, _mm512_loadu_ps(o + 16));                        \
    }                                                                                   \
    _mm512_storeu_ps(o, c##i##0);                                                       \
    _mm512_storeu_ps(o + 16, c##i##1);                                                  \
  }

__attribute__((target("avx512f"))) static void micro_avx512(int64_t kc, const float *A,
                                                            int64_t lda, const float *P, float *C,
                                                            int64_t ldc, bool accumulate) {
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m512 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00;
  __m512 c61 = c00, c70 = c00, c71 = c00;
  for (int64_t k = 0; k < kc; k++) {
    __m512 b0 = _mm512_loadu_ps(P + k * NR), b1 = _mm512_loadu_ps(P + k * NR + 16);
    ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5) ROW(6) ROW(7)
  }
  OUT(0) OUT(1) OUT(2) OUT(3) OUT(4) OUT(5) OUT(6) OUT(7)
}
#undef ROW
#undef OUT

/* A value as the op's dtype stores it. */
static inline float round_to(xr_dtype_t d, float x) {
  if (d == XR_DTYPE_BF16) return xr_bf16_to_f32(xr_f32_to_bf16(x));
  if (d == XR_DTYPE_F16) return xr_f16_to_f32(xr_f32_to_f16(x));
  return x;
}

/* n elements from storage index `start` stepping `stride`, as fp32. */
static void load_f32(const void *base, xr_dtype_t d, int64_t start, int64_t stride, int64_t n,
                     float *dst) {
  if (d == XR_DTYPE_F32) {
    const float *s = (const float *)base + start;
    for (int64_t i = 0; i < n; i++) dst[i] = s[i * stride];
  } else if (d == XR_DTYPE_BF16) {
    const uint16_t *s = (const uint16_t *)base + start;
    for (int64_t i = 0; i < n; i++) dst[i] = xr_bits_to_f32((uint32_t)s[i * stride] << 16);
  } else {
    const uint16_t *s = (const uint16_t *)base + start;
    for (int64_t i = 0; i < n; i++) dst[i] = xr_f16_to_f32(s[i * stride]);
  }
}

/* P[k][n] = W[row0 + n][k0 + k] for n < rows (zero beyond), k < kc; W addressed by storage
 * index `at` of (row0, k0) and its row/col strides. */
static void pack_panel(const void *w, xr_dtype_t d, int64_t at, int64_t rs, int64_t cs,
                       int64_t rows, int64_t kc, float *P) {
  float line[KC];
  for (int64_t n = 0; n < NR; n++) {
    if (n < rows) load_f32(w, d, at + n * rs, cs, kc, line);
    else memset(line, 0, sizeof(float) * (size_t)kc);
    for (int64_t k = 0; k < kc; k++) P[k * NR + n] = line[k];
  }
}

#ifdef XR_HAVE_DNNL_H
/* One GEMM of one expert: memories bound to its gathered rows, its weights (packed at prepare()
 * into the layout the primitive wants) and its outputs. */
typedef struct expert_gemm {
  dnnl_primitive_t prim;         /* shared by the experts with the same row count */
  dnnl_memory_t mem[3];          /* src, weights, dst */
  dnnl_memory_desc_t packed_md;  /* the weights' layout */
  xr_hal_buffer_t *packed_buffer; /* the weights in it: a device buffer, so large ones get the
                                    * cpu driver's huge pages, as the inputs do */
  void *packed;
  size_t scratchpad_size;        /* per_expert: the primitive's user scratchpad */
} expert_gemm_t;

typedef struct expert_gemms {
  expert_gemm_t gemm[2];
  void *scratchpad;              /* per_expert: for both GEMMs, which run one after the other */
  dnnl_memory_t scratchpad_mem;
} expert_gemms_t;

typedef struct dnnl_path {
  const xr_dnnl_t *d;
  xr_hal_device_t *device;
  dnnl_stream_t stream;
  /* Experts spread over the device's pool, each expert's GEMMs on one thread (primitives
   * created single-threaded, a stream per expert) instead of every GEMM on all threads. */
  bool per_expert;
  dnnl_stream_t *expert_streams; /* [E] when per_expert */
  int64_t *rows_prepared;     /* [E+1] row_start at prepare() */
  expert_gemms_t *experts;    /* [E] */
  dnnl_primitive_t *owned;    /* [2E] distinct primitives, for release */
  int owned_count;
} dnnl_path_t;
#endif

typedef struct cpu_state {
  const xr_moe_problem_t *p;
  xr_tensor_t hidden, w1, w2, weights, ids, logits, out;
  void *hb, *w1b, *w2b, *wb, *ib, *lb, *ob;
  micro_fn micro;
  int64_t rows_cap;        /* M*topk + (MR-1)*E */
  int64_t *row_start;      /* [E+1] first gathered row of each expert (multiples of MR) */
  int32_t *row_pair;       /* [rows_cap] token*topk + slot, -1 for padding */
  int32_t *route_ids;      /* [M*topk] expert of each pair, -1 when not routed */
  float *route_w;          /* [M*topk] routing weight of each pair */
  int32_t *pair_row;       /* [M*topk] gathered row of each pair (oneDNN path) */
  float *A;                /* [rows_cap][K] gathered inputs (fp32; the op's dtype for oneDNN) */
  float *H;                /* [rows_cap][N] silu(g) * u (ditto) */
  float *Y;                /* [M*topk][K] weighted expert outputs; [rows_cap][K] GEMM-2 outputs
                            * for oneDNN */
  void *G;                 /* [rows_cap][2N] GEMM-1 outputs in the op's dtype (oneDNN) */
  bool use_dnnl;           /* this run: the routing matches the prepared primitives */
#ifdef XR_HAVE_DNNL_H
  dnnl_path_t dnnl;
#endif
} cpu_state_t;

/* Softmax top-k of one token's router logits in fp32, as vLLM's topk_softmax does; experts are
 * picked by logit (the softmax is monotonic), ties going to the lower index. */
static void route_logits(const cpu_state_t *s, int64_t m, float *logit) {
  const xr_moe_problem_t *p = s->p;
  int32_t *ids = s->route_ids + m * p->topk;
  float *w = s->route_w + m * p->topk;
  load_f32(s->lb, s->logits.dtype, xr_moe_at(&s->logits, m, 0, 0), s->logits.strides[1], p->E, logit);
  float mx = logit[0], sum = 0, picked = 0;
  for (int64_t e = 1; e < p->E; e++) mx = logit[e] > mx ? logit[e] : mx;
  for (int64_t e = 0; e < p->E; e++) sum += expf(logit[e] - mx);
  for (int64_t j = 0; j < p->topk; j++) {
    int64_t best = -1;
    for (int64_t e = 0; e < p->E; e++) {
      bool taken = false;
      for (int64_t q = 0; q < j; q++) taken |= ids[q] == e;
      if (!taken && (best < 0 || logit[e] > logit[best])) best = e;
    }
    ids[j] = (int32_t)best;
    picked += w[j] = expf(logit[best] - mx) / sum;
  }
  if (p->renormalize)
    for (int64_t j = 0; j < p->topk; j++) w[j] /= picked;
}

static void step_route(void *ctx) {
  cpu_state_t *s = ctx;
  const xr_moe_problem_t *p = s->p;
  int64_t pairs = p->M * p->topk;
  float *prob = p->kind == XR_MOE_FORWARD ? malloc(sizeof(float) * (size_t)p->E) : NULL;
  for (int64_t m = 0; m < p->M; m++) {
    if (prob) {
      route_logits(s, m, prob);
      continue;
    }
    for (int64_t j = 0; j < p->topk; j++) {
      int64_t e = (int64_t)xr_load_element(s->ib, s->ids.dtype, xr_moe_at(&s->ids, m, j, 0));
      s->route_ids[m * p->topk + j] = e >= 0 && e < p->E ? (int32_t)e : -1;
      s->route_w[m * p->topk + j] =
          (float)xr_load_element(s->wb, s->weights.dtype, xr_moe_at(&s->weights, m, j, 0));
    }
  }
  free(prob);
  /* Count, pad each expert to MR rows, then list pairs in ascending order per expert. */
  for (int64_t e = 0; e <= p->E; e++) s->row_start[e] = 0;
  for (int64_t i = 0; i < pairs; i++)
    if (s->route_ids[i] >= 0) s->row_start[s->route_ids[i] + 1]++;
  for (int64_t e = 0; e < p->E; e++)
    s->row_start[e + 1] = s->row_start[e] + (s->row_start[e + 1] + MR - 1) / MR * MR;
  for (int64_t r = 0; r < s->row_start[p->E]; r++) s->row_pair[r] = -1;
  int64_t *next = malloc(sizeof(int64_t) * (size_t)p->E);
  if (!next) {
    s->row_start[p->E] = 0; /* nothing runs; the poisoned output shows it */
    for (int64_t e = 0; e < p->E; e++) s->row_start[e] = 0;
    return;
  }
  memcpy(next, s->row_start, sizeof(int64_t) * (size_t)p->E);
  for (int64_t i = 0; i < pairs; i++) {
    s->pair_row[i] = -1;
    if (s->route_ids[i] >= 0) s->row_pair[s->pair_row[i] = (int32_t)next[s->route_ids[i]]++] = (int32_t)i;
  }
  free(next);
  s->use_dnnl = false;
#ifdef XR_HAVE_DNNL_H
  s->use_dnnl = s->dnnl.experts &&
                !memcmp(s->row_start, s->dnnl.rows_prepared, sizeof(int64_t) * (size_t)(p->E + 1));
#endif
}

/* Gathered rows [begin, end) of A. */
static void gather_rows(const cpu_state_t *s, size_t begin, size_t end) {
  const xr_moe_problem_t *p = s->p;
  for (size_t r = begin; r < end && (int64_t)r < s->row_start[p->E]; r++) {
    float *a = s->A + r * (size_t)p->K, line[KC];
    int32_t pair = s->row_pair[r];
    if (!s->use_dnnl) {
      if (pair < 0) {
        memset(a, 0, sizeof(float) * (size_t)p->K);
        continue;
      }
      int64_t m = pair / p->topk;
      load_f32(s->hb, s->hidden.dtype, xr_moe_at(&s->hidden, m, 0, 0), s->hidden.strides[1], p->K, a);
      if (p->weight_on_input) {
        float w = s->route_w[pair];
        for (int64_t k = 0; k < p->K; k++) a[k] = round_to(p->dtype, a[k] * w);
      }
      continue;
    }
    /* oneDNN: the row in the op's dtype. */
    size_t esize = xr_dtype_size(p->dtype);
    uint8_t *row = (uint8_t *)s->A + r * (size_t)p->K * esize;
    if (pair < 0) {
      memset(row, 0, esize * (size_t)p->K);
      continue;
    }
    int64_t at = xr_moe_at(&s->hidden, pair / p->topk, 0, 0), ks = s->hidden.strides[1];
    if (s->hidden.dtype == p->dtype && ks == 1 && !p->weight_on_input) {
      memcpy(row, (const uint8_t *)s->hb + (size_t)at * esize, esize * (size_t)p->K);
      continue;
    }
    float w = p->weight_on_input ? s->route_w[pair] : 1.0f;
    for (int64_t k0 = 0; k0 < p->K; k0 += KC) {
      int64_t kc = p->K - k0 < KC ? p->K - k0 : KC;
      load_f32(s->hb, s->hidden.dtype, at + k0 * ks, ks, kc, line);
      for (int64_t k = 0; k < kc; k++) {
        float v = p->weight_on_input ? line[k] * w : line[k];
        if (p->dtype == XR_DTYPE_F32) ((float *)row)[k0 + k] = v;
        else ((uint16_t *)row)[k0 + k] = xr_f32_to_bf16(v);
      }
    }
  }
}

static void step_gather(void *ctx, size_t begin, size_t end) {
  const cpu_state_t *s = ctx;
#ifdef XR_HAVE_DNNL_H
  if (s->use_dnnl && s->dnnl.per_expert) return; /* step_expert gathers its own rows */
#endif
  gather_rows(s, begin, end);
}

/* out[rows][NR] (ldc) = A[rows][kdim] @ W[row0 .. row0+NR)^T for one expert; W rows are
 * addressed from storage index `at` with row/col strides. `scratch` holds KC*NR floats. */
static void expert_panel(const cpu_state_t *s, const float *A, int64_t lda, int64_t rows,
                         int64_t kdim, const xr_tensor_t *w, const void *wb, int64_t at,
                         int64_t wrows, float *scratch, float *out, int64_t ldc) {
  for (int64_t k0 = 0; k0 < kdim; k0 += KC) {
    int64_t kc = kdim - k0 < KC ? kdim - k0 : KC;
    pack_panel(wb, w->dtype, at + k0 * w->strides[2], w->strides[1], w->strides[2], wrows, kc, scratch);
    for (int64_t r = 0; r < rows; r += MR)
      s->micro(kc, A + r * lda + k0, lda, scratch, out + r * ldc, ldc, k0 > 0);
  }
}

/* Task t: expert t % E, intermediate columns [32 j, 32 j + 32) with j = t / E. */
static void step_gemm1(void *ctx, size_t begin, size_t end) {
  const cpu_state_t *s = ctx;
  const xr_moe_problem_t *p = s->p;
  for (size_t t = begin; t < end && !s->use_dnnl; t++) {
    int64_t e = (int64_t)t % p->E, n0 = (int64_t)t / p->E * NR;
    int64_t r0 = s->row_start[e], rows = s->row_start[e + 1] - r0;
    if (!rows) continue;
    int64_t cols = p->N - n0 < NR ? p->N - n0 : NR;
    float *buf = malloc(sizeof(float) * (size_t)(KC * NR + rows * 2 * NR));
    if (!buf) continue; /* H keeps stale values: the check reports it */
    float *C = buf + KC * NR;
    const float *A = s->A + r0 * p->K;
    expert_panel(s, A, p->K, rows, p->K, &s->w1, s->w1b, xr_moe_at(&s->w1, e, n0, 0), cols, buf, C,
                 2 * NR);
    expert_panel(s, A, p->K, rows, p->K, &s->w1, s->w1b, xr_moe_at(&s->w1, e, p->N + n0, 0), cols,
                 buf, C + NR, 2 * NR);
    for (int64_t r = 0; r < rows; r++) {
      float *h = s->H + (r0 + r) * p->N + n0;
      const float *g = C + r * 2 * NR, *u = g + NR;
      for (int64_t c = 0; c < cols; c++) {
        float gv = round_to(p->dtype, g[c]), uv = round_to(p->dtype, u[c]);
        h[c] = round_to(p->dtype, gv / (1.0f + expf(-gv)) * uv);
      }
    }
    free(buf);
  }
}

/* Task t: expert t % E, output columns [32 j, 32 j + 32) with j = t / E. */
static void step_gemm2(void *ctx, size_t begin, size_t end) {
  const cpu_state_t *s = ctx;
  const xr_moe_problem_t *p = s->p;
  for (size_t t = begin; t < end && !s->use_dnnl; t++) {
    int64_t e = (int64_t)t % p->E, k0 = (int64_t)t / p->E * NR;
    int64_t r0 = s->row_start[e], rows = s->row_start[e + 1] - r0;
    if (!rows) continue;
    int64_t cols = p->K - k0 < NR ? p->K - k0 : NR;
    float *buf = malloc(sizeof(float) * (size_t)(KC * NR + rows * NR));
    if (!buf) continue;
    float *C = buf + KC * NR;
    expert_panel(s, s->H + r0 * p->N, p->N, rows, p->N, &s->w2, s->w2b, xr_moe_at(&s->w2, e, k0, 0),
                 cols, buf, C, NR);
    for (int64_t r = 0; r < rows; r++) {
      int32_t pair = s->row_pair[r0 + r];
      if (pair < 0) continue;
      float w = p->weight_on_input ? 1.0f : s->route_w[pair];
      float *y = s->Y + (int64_t)pair * p->K + k0;
      for (int64_t c = 0; c < cols; c++) y[c] = round_to(p->dtype, C[r * NR + c] * w);
    }
    free(buf);
  }
}

#ifdef XR_HAVE_DNNL_H
/* Runs GEMM-1 (which = 0) or GEMM-2 of every expert with rows; oneDNN threads each one. A failed
 * execution leaves stale outputs, which the check reports. */
static void run_experts(const cpu_state_t *s, int which) {
  const dnnl_path_t *dp = &s->dnnl;
  for (int64_t e = 0; e < s->p->E; e++) {
    const expert_gemm_t *g = &dp->experts[e].gemm[which];
    dnnl_primitive_t prim = g->prim;
    dnnl_memory_t const *mem = g->mem;
    if (!prim) continue;
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]}, {DNNL_ARG_DST, mem[2]}};
    dp->d->dnnl_primitive_execute(prim, dp->stream, 3, args);
  }
  dp->d->dnnl_stream_wait(dp->stream);
}

static void step_dnnl_gemm1(void *ctx) {
  const cpu_state_t *s = ctx;
  if (s->use_dnnl && !s->dnnl.per_expert) run_experts(s, 0);
}

static void step_dnnl_gemm2(void *ctx) {
  const cpu_state_t *s = ctx;
  if (s->use_dnnl && !s->dnnl.per_expert) run_experts(s, 1);
}

/* H[r] = silu(g) * u from the GEMM-1 row [g | u], all in the op's dtype, rows [begin, end). */
static void silu_rows(const cpu_state_t *s, size_t begin, size_t end) {
  const xr_moe_problem_t *p = s->p;
  float g[KC], u[KC];
  size_t esize = xr_dtype_size(p->dtype);
  for (size_t r = begin; r < end && (int64_t)r < s->row_start[p->E]; r++) {
    int64_t grow = (int64_t)r * 2 * p->N;
    uint8_t *h = (uint8_t *)s->H + r * (size_t)p->N * esize;
    for (int64_t n0 = 0; n0 < p->N; n0 += KC) {
      int64_t nc = p->N - n0 < KC ? p->N - n0 : KC;
      load_f32(s->G, p->dtype, grow + n0, 1, nc, g);
      load_f32(s->G, p->dtype, grow + p->N + n0, 1, nc, u);
      for (int64_t c = 0; c < nc; c++) {
        float v = g[c] / (1.0f + expf(-g[c])) * u[c];
        if (p->dtype == XR_DTYPE_F32) ((float *)h)[n0 + c] = v;
        else ((uint16_t *)h)[n0 + c] = xr_f32_to_bf16(v);
      }
    }
  }
}

static void step_dnnl_silu(void *ctx, size_t begin, size_t end) {
  const cpu_state_t *s = ctx;
  if (s->use_dnnl && !s->dnnl.per_expert) silu_rows(s, begin, end);
}

/* Experts [begin, end) start to finish on this thread: gather, GEMM-1, silu_and_mul, GEMM-2.
 * Claimed one at a time from the pool, so a descheduled thread delays one expert, not a
 * barrier that every thread waits at (which is what OpenMP regions per GEMM suffer under load). */
static void step_expert(void *ctx, size_t begin, size_t end) {
  const cpu_state_t *s = ctx;
  const dnnl_path_t *dp = &s->dnnl;
  if (!s->use_dnnl || !dp->per_expert) return;
  /* This thread's own oneDNN calls run on it alone; restored for whatever runs here next. */
  int previous = xr_dnnl_set_thread_count(dp->d, 1);
  for (size_t e = begin; e < end; e++) {
    size_t r0 = (size_t)s->row_start[e], r1 = (size_t)s->row_start[e + 1];
    if (r0 == r1) continue;
    gather_rows(s, r0, r1);
    const expert_gemms_t *x = &dp->experts[e];
    for (int which = 0; which < 2; which++) {
      const expert_gemm_t *g = &x->gemm[which];
      dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, g->mem[0]},
                                 {DNNL_ARG_WEIGHTS, g->mem[1]},
                                 {DNNL_ARG_DST, g->mem[2]},
                                 {DNNL_ARG_SCRATCHPAD, x->scratchpad_mem}};
      dp->d->dnnl_primitive_execute(g->prim, dp->expert_streams[e], x->scratchpad_mem ? 4 : 3, args);
      dp->d->dnnl_stream_wait(dp->expert_streams[e]);
      if (which == 0) silu_rows(s, r0, r1);
    }
  }
  if (previous > 0) xr_dnnl_set_thread_count(dp->d, previous);
}

static void dnnl_release(dnnl_path_t *dp, int64_t E) {
  if (!dp->d) return;
  for (int64_t e = 0; dp->experts && e < E; e++)
    for (int which = 0; which < 2; which++) {
      expert_gemm_t *g = &dp->experts[e].gemm[which];
      for (int i = 0; i < 3; i++)
        if (g->mem[i]) dp->d->dnnl_memory_destroy(g->mem[i]);
      xr_hal_buffer_free(g->packed_buffer);
    }
  for (int64_t e = 0; dp->experts && e < E; e++) {
    if (dp->experts[e].scratchpad_mem) dp->d->dnnl_memory_destroy(dp->experts[e].scratchpad_mem);
    free(dp->experts[e].scratchpad);
  }
  for (int i = 0; i < dp->owned_count; i++) dp->d->dnnl_primitive_destroy(dp->owned[i]);
  if (dp->stream) dp->d->dnnl_stream_destroy(dp->stream);
  for (int64_t e = 0; dp->expert_streams && e < E; e++)
    if (dp->expert_streams[e]) dp->d->dnnl_stream_destroy(dp->expert_streams[e]);
  free(dp->expert_streams);
  free(dp->experts);
  free(dp->owned);
  free(dp->rows_prepared);
  memset(dp, 0, sizeof *dp);
}

/* Binds one GEMM: dst[rows, n] = src[rows, k] @ weights, the primitive shared with an earlier
 * expert of the same row count (`same`, or NULL). The weights are packed once here into the
 * layout the primitive reads fastest, as a CPU serving stack packs them at load time: reading
 * the transposed [n, k] weights in place, oneDNN repacks them on every call, which at a few
 * rows per expert costs more than the product. */
static xr_status_t bind_gemm(dnnl_path_t *dp, const xr_dnnl_matrix_t m[3], void *const ptr[3],
                             const expert_gemm_t *same, expert_gemm_t *g) {
  dnnl_memory_desc_t mds[3];
  xr_status_t st = xr_dnnl_matmul_create(dp->d, &m[0], &m[1], &m[2], true,
                                         dp->per_expert ? &g->scratchpad_size : NULL,
                                         same ? NULL : &g->prim, mds);
  if (st != XR_OK) return st;
  if (same) {
    g->prim = same->prim;
    g->scratchpad_size = same->scratchpad_size;
    mds[1] = same->packed_md;
  } else {
    dp->owned[dp->owned_count++] = g->prim;
  }
  g->packed_md = mds[1];
  size_t size = dp->d->dnnl_memory_desc_get_size(&mds[1]);
  if ((st = xr_hal_buffer_alloc(dp->device, size, &g->packed_buffer)) ||
      (st = xr_hal_buffer_host_pointer(g->packed_buffer, &g->packed)))
    return st;
  if ((st = xr_dnnl_pack_weights(dp->d, &m[1], ptr[1], &mds[1], g->packed))) return st;
  void *const bound[3] = {ptr[0], g->packed, ptr[2]};
  for (int i = 0; i < 3; i++)
    if (dp->d->dnnl_memory_create(&g->mem[i], &mds[i], dp->d->engine, bound[i]) != dnnl_success)
      return xr_error(XR_DEVICE_ERROR, "dnnl_memory_create failed");
  return XR_OK;
}

/* An expert's own scratchpad (per_expert), for both of its GEMMs: run concurrently with other
 * experts' GEMMs on other threads than their creator's, the primitives cannot share oneDNN's. */
static xr_status_t bind_scratchpad(dnnl_path_t *dp, expert_gemms_t *x) {
  size_t size = x->gemm[0].scratchpad_size > x->gemm[1].scratchpad_size ? x->gemm[0].scratchpad_size
                                                                          : x->gemm[1].scratchpad_size;
  if (!dp->per_expert || size == 0) return XR_OK;
  dnnl_memory_desc_t md;
  xr_status_t st = xr_dnnl_scratchpad_md(dp->d, size, &md);
  if (st != XR_OK) return st;
  if (!(x->scratchpad = aligned_alloc(64, (size + 63) / 64 * 64)))
    return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory for a oneDNN scratchpad");
  if (dp->d->dnnl_memory_create(&x->scratchpad_mem, &md, dp->d->engine, x->scratchpad) != dnnl_success)
    return xr_error(XR_DEVICE_ERROR, "dnnl_memory_create failed");
  return XR_OK;
}

static xr_status_t dnnl_bind_experts(cpu_state_t *s);

/* Creates every expert's primitives for the routing of the inputs as they are now; any failure
 * (fp16, odd strides, no oneDNN) leaves the micro-kernel path in charge. `width`: the threads of
 * the device's pool. With many experts per thread (8; each small, as in OLMoE or Qwen-MoE),
 * experts go one per thread, single-threaded: a few rows per expert make every GEMM bound by
 * reading its weights, which threads do best side by side, and the experts balance the load.
 * With few experts (Mixtral: 8), each GEMM is big enough to use every thread. */

static xr_status_t dnnl_prepare(cpu_state_t *s, xr_hal_device_t *device, size_t width) {
  const xr_moe_problem_t *p = s->p;
  dnnl_path_t *dp = &s->dnnl;
  dp->device = device;
  xr_status_t st = xr_dnnl_get(&dp->d);
  if (st != XR_OK) return st;
  if (s->hidden.rank != 2 || s->w1.rank != 3 || s->w2.rank != 3 || s->w1.dtype != p->dtype ||
      s->w2.dtype != p->dtype || (p->dtype != XR_DTYPE_BF16 && p->dtype != XR_DTYPE_F32))
    return xr_error(XR_UNIMPLEMENTED, "weights of another dtype than the activations, or fp16");
  size_t E = (size_t)p->E;
  dp->rows_prepared = calloc(E + 1, sizeof(int64_t));
  dp->experts = calloc(E, sizeof *dp->experts);
  dp->owned = calloc(2 * E, sizeof *dp->owned);
  if (!dp->rows_prepared || !dp->experts || !dp->owned)
    return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  if (dp->d->dnnl_stream_create(&dp->stream, dp->d->engine, dnnl_stream_default_flags) != dnnl_success)
    return xr_error(XR_DEVICE_ERROR, "dnnl_stream_create failed");
  step_route(s);
  memcpy(dp->rows_prepared, s->row_start, sizeof(int64_t) * (E + 1));
  size_t active = 0;
  for (size_t e = 0; e < E; e++) active += s->row_start[e + 1] > s->row_start[e];
  int previous = 0; /* oneDNN's thread count before single-threaded primitives, 0: unchanged */
  if (width > 1 && active >= 8 * width && (dp->expert_streams = calloc(E, sizeof(dnnl_stream_t)))) {
    previous = xr_dnnl_set_thread_count(dp->d, 1);
    dp->per_expert = previous > 0;
  }
  st = dnnl_bind_experts(s);
  if (previous > 0) xr_dnnl_set_thread_count(dp->d, previous);
  return st;
}

/* Each expert's two GEMMs (and, per_expert, its stream and scratchpad). */
static xr_status_t dnnl_bind_experts(cpu_state_t *s) {
  const xr_moe_problem_t *p = s->p;
  dnnl_path_t *dp = &s->dnnl;
  size_t esize = xr_dtype_size(p->dtype);
  xr_status_t st;
  for (int64_t e = 0; e < p->E; e++) {
    int64_t r0 = s->row_start[e], rows = s->row_start[e + 1] - r0;
    if (!rows) continue;
    expert_gemms_t *x = &dp->experts[e], *same = NULL;
    for (int64_t q = 0; q < e && !same; q++)
      if (s->row_start[q + 1] - s->row_start[q] == rows) same = &dp->experts[q];
    const xr_dnnl_matrix_t m1[3] = {
        {p->dtype, rows, p->K, p->K, 1},
        {p->dtype, p->K, 2 * p->N, s->w1.strides[2], s->w1.strides[1]},
        {p->dtype, rows, 2 * p->N, 2 * p->N, 1}};
    void *const ptr1[3] = {(uint8_t *)s->A + (size_t)(r0 * p->K) * esize,
                           (uint8_t *)s->w1b + (size_t)xr_moe_at(&s->w1, e, 0, 0) * esize,
                           (uint8_t *)s->G + (size_t)(r0 * 2 * p->N) * esize};
    const xr_dnnl_matrix_t m2[3] = {
        {p->dtype, rows, p->N, p->N, 1},
        {p->dtype, p->N, p->K, s->w2.strides[2], s->w2.strides[1]},
        {XR_DTYPE_F32, rows, p->K, p->K, 1}};
    void *const ptr2[3] = {(uint8_t *)s->H + (size_t)(r0 * p->N) * esize,
                           (uint8_t *)s->w2b + (size_t)xr_moe_at(&s->w2, e, 0, 0) * esize,
                           s->Y + r0 * p->K};
    if (dp->per_expert && dp->d->dnnl_stream_create(&dp->expert_streams[e], dp->d->engine,
                                                    dnnl_stream_default_flags) != dnnl_success)
      return xr_error(XR_DEVICE_ERROR, "dnnl_stream_create failed");
    if ((st = bind_gemm(dp, m1, ptr1, same ? &same->gemm[0] : NULL, &x->gemm[0])) ||
        (st = bind_gemm(dp, m2, ptr2, same ? &same->gemm[1] : NULL, &x->gemm[1])) ||
        (st = bind_scratchpad(dp, x)))
      return st;
  }
  return XR_OK;
}
#endif

static void step_reduce(void *ctx, size_t begin, size_t end) {
  const cpu_state_t *s = ctx;
  const xr_moe_problem_t *p = s->p;
  const xr_tensor_t *o = &s->out;
  float acc[KC];
  for (size_t mi = begin; mi < end; mi++) {
    int64_t m = (int64_t)mi;
    /* A KC-wide strip at a time, summed over top-k in slot order, contiguous in Y. */
    for (int64_t k0 = 0; k0 < p->K; k0 += KC) {
      int64_t kc = p->K - k0 < KC ? p->K - k0 : KC;
      memset(acc, 0, sizeof(float) * (size_t)kc);
      for (int64_t j = 0; j < p->topk; j++) {
        int64_t pair = m * p->topk + j;
        if (s->route_ids[pair] < 0) continue;
        if (!s->use_dnnl) {
          const float *y = s->Y + pair * p->K + k0;
          for (int64_t k = 0; k < kc; k++) acc[k] += y[k];
          continue;
        }
        /* oneDNN path: the routing weight and vLLM's rounding of the GEMM-2 output here. */
        const float *y = s->Y + s->pair_row[pair] * p->K + k0;
        float w = p->weight_on_input ? 1.0f : s->route_w[pair];
        for (int64_t k = 0; k < kc; k++) acc[k] += round_to(p->dtype, y[k] * w);
      }
      for (int64_t k = 0; k < kc; k++) {
        int64_t at = xr_moe_at(o, m, k0 + k, 0);
        if (o->dtype == XR_DTYPE_F32) ((float *)s->ob)[at] = acc[k];
        else if (o->dtype == XR_DTYPE_BF16) ((uint16_t *)s->ob)[at] = xr_f32_to_bf16(acc[k]);
        else ((uint16_t *)s->ob)[at] = xr_f32_to_f16(acc[k]);
      }
    }
  }
}

static xr_status_t cpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_moe_problem_t *p = plan->problem;
  if (p->kind != XR_MOE_FUSED && p->kind != XR_MOE_FORWARD)
    return xr_error(XR_UNIMPLEMENTED, "cpu.moe_fused: only the fused-experts ops have a fast CPU path");
  return xr_moe_check_supported(plan, "cpu.moe_fused");
}

static void cpu_release(void *state) {
  cpu_state_t *s = state;
  if (!s) return;
  free(s->row_start);
  free(s->row_pair);
  free(s->route_ids);
  free(s->route_w);
  free(s->A);
  free(s->H);
  free(s->Y);
  free(s->pair_row);
  free(s->G);
#ifdef XR_HAVE_DNNL_H
  dnnl_release(&s->dnnl, s->p->E);
#endif
  free(s);
}

static xr_status_t bind(const xr_tensor_t *tensors, int index, xr_tensor_t *t, void **base) {
  if (index < 0) return XR_OK;
  *t = tensors[index];
  return xr_tensor_host(t, base);
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  const xr_moe_problem_t *p = plan->problem;
  cpu_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  s->p = p;
  xr_status_t st;
  if ((st = bind(tensors, p->hidden, &s->hidden, &s->hb)) ||
      (st = bind(tensors, p->w1, &s->w1, &s->w1b)) || (st = bind(tensors, p->w2, &s->w2, &s->w2b)) ||
      (st = bind(tensors, p->topk_weights, &s->weights, &s->wb)) ||
      (st = bind(tensors, p->topk_ids, &s->ids, &s->ib)) ||
      (st = bind(tensors, p->logits, &s->logits, &s->lb)) ||
      (st = bind(tensors, p->out, &s->out, &s->ob))) {
    cpu_release(s);
    return st;
  }
  __builtin_cpu_init();
  s->micro = __builtin_cpu_supports("avx512f") ? micro_avx512 : micro_generic;
  size_t pairs = (size_t)(p->M * p->topk);
  s->rows_cap = p->M * p->topk + (MR - 1) * p->E;
  size_t rows = (size_t)s->rows_cap ? (size_t)s->rows_cap : 1;
  s->row_start = calloc((size_t)p->E + 1, sizeof *s->row_start);
  s->row_pair = malloc(sizeof *s->row_pair * rows);
  s->route_ids = malloc(sizeof *s->route_ids * (pairs ? pairs : 1));
  s->route_w = malloc(sizeof *s->route_w * (pairs ? pairs : 1));
  s->A = malloc(sizeof(float) * rows * (size_t)(p->K ? p->K : 1));
  s->H = malloc(sizeof(float) * rows * (size_t)(p->N ? p->N : 1));
  /* Y: weighted pairs (micro-kernel path) or GEMM-2 rows (oneDNN path). */
  size_t y_rows = rows > pairs ? rows : (pairs ? pairs : 1);
  s->Y = malloc(sizeof(float) * y_rows * (size_t)(p->K ? p->K : 1));
  s->pair_row = malloc(sizeof *s->pair_row * (pairs ? pairs : 1));
  s->G = malloc(xr_dtype_size(p->dtype) * rows * (size_t)(p->N ? 2 * p->N : 1));
  if (!s->row_start || !s->row_pair || !s->route_ids || !s->route_w || !s->A || !s->H || !s->Y ||
      !s->pair_row || !s->G) {
    cpu_release(s);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory for %lld routed rows",
                    plan->op->name, (long long)s->rows_cap);
  }
#ifdef XR_HAVE_DNNL_H
  xr_hal_device_properties_t properties;
  size_t width = xr_hal_device_properties(device, &properties) == XR_OK ? properties.compute_units : 1;
  if (dnnl_prepare(s, device, width) != XR_OK) dnnl_release(&s->dnnl, p->E); /* the micro-kernel path runs */
#endif
  *out_state = s;
  return XR_OK;
}

static xr_status_t cpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_state_t *s = state;
  const xr_moe_problem_t *p = s->p;
  size_t panels1 = (size_t)((p->N + NR - 1) / NR), panels2 = (size_t)((p->K + NR - 1) / NR);
  xr_status_t st;
  if ((st = xr_hal_stream_enqueue_host(stream, step_route, s)) ||
      (st = xr_hal_stream_enqueue_parallel(stream, (size_t)s->rows_cap, 8, step_gather, s)) ||
      (st = xr_hal_stream_enqueue_parallel(stream, (size_t)p->E * panels1, 1, step_gemm1, s)) ||
      (st = xr_hal_stream_enqueue_parallel(stream, (size_t)p->E * panels2, 1, step_gemm2, s)))
    return st;
#ifdef XR_HAVE_DNNL_H
  if (s->dnnl.experts &&
      ((st = xr_hal_stream_enqueue_host(stream, step_dnnl_gemm1, s)) ||
       (st = xr_hal_stream_enqueue_parallel(stream, (size_t)s->rows_cap, 8, step_dnnl_silu, s)) ||
       (st = xr_hal_stream_enqueue_host(stream, step_dnnl_gemm2, s)) ||
       (st = xr_hal_stream_enqueue_parallel(stream, (size_t)p->E, 1, step_expert, s))))
    return st;
#endif
  return xr_hal_stream_enqueue_parallel(stream, (size_t)p->M, 1, step_reduce, s);
}

const xr_kernel_impl_t xr_moe_cpu_fused = {
    .name = "cpu.moe_fused",
    .driver = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .enqueue = cpu_enqueue,
    .release = cpu_release,
};
