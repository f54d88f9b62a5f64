/* Fast CPU path for the fused experts (vllm::outplace/inplace_fused_experts, vllm::moe_forward).
 * Three ways, the first that applies.
 *
 * AMX (bf16 with K and N multiples of 32, on CPUs with AMX-BF16; kernels/cpu/moe_amx.h): every
 * expert's weights are packed into AMX tiles once at prepare(). A run gathers each expert's rows
 * into tiles; then each (expert, ~256 KB slice of columns) task of GEMM-1 computes gate and up
 * together and stores silu(g) * u, each task of GEMM-2 stores its columns times the routing
 * weight (row-major, so the reduce reads whole rows), and the reduce sums over top-k. A thread
 * takes all of an expert's tasks, in order, fetching the next slice's weights while it computes
 * the current one. Rounding as vLLM's (below). Works for any routing.
 *
 * With oneDNN (bf16, fp32): the routing and the weights are known at prepare() (the inputs are
 * in place and fixed between runs), so the GEMMs get oneDNN matmul primitives there and the
 * weights are packed once into the layout the primitive reads (as a CPU serving stack does at
 * load time; same bytes per run). Each expert's GEMMs are cut into slices of weight columns,
 * about 256 KB of weights each, so that a slice stays in L2 while all of the expert's rows
 * stream past: a whole expert's weights (8 MB in OLMoE) do not, and oneDNN then re-reads them
 * from memory for every block of rows, which at hundreds of rows per expert (prefill) cost more
 * than half the rate. Slices are single-threaded tasks on the device's pool. A run gathers each
 * expert's rows in the op's dtype; a GEMM-1 task computes its gate and up columns into the op's
 * dtype (vLLM's rounding of the GEMM-1 output) and applies silu_and_mul to them while they are
 * in L2; a GEMM-2 task computes its columns in fp32 and applies the routing weight and vLLM's
 * rounding; the reduce sums over top-k. Should the routing differ from the prepared one (inputs
 * changed), the run takes the micro-kernel path below instead.
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
 * is fp32. The 8x32 micro-kernel uses AVX-512 or AVX2 FMAs where the CPU has them, plain C
 * otherwise (kernels/cpu/fma_micro.h).
 *
 * moe_forward's layers (kernels/moe.h): biases enter GEMM-1's and GEMM-2's epilogues (read as
 * fp32 at prepare), swigluoai's interleaved gate/up rows are read with a row step of 2, and
 * quantized weights (mxfp4, fp8 with float32 scales) are decoded as they are read: the AMX path
 * decodes each task's slice into its thread's scratch in the tile layout on every run (nothing
 * packed at prepare), the micro-kernel path into its fp32 panels. The oneDNN path takes only
 * plain silu layers. */
#include <immintrin.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/cpu/fma_micro.h"
#include "kernels/cpu/moe_amx.h"
#include "kernels/cpu/onednn.h"
#include "kernels/cpu/vector_ext.h"
#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/moe.h"

/* SLICE_BYTES: the weights of one oneDNN task (see dnnl_path_t), at most KC columns. */
enum { MR = 8, NR = 32, KC = 256, SLICE_BYTES = 256 << 10 };

/* Columns per task of a sliced GEMM (oneDNN and AMX paths): SLICE_BYTES of weights, in whole
 * blocks of `unit` columns, at least one block and at most `most` columns. */
static int64_t slice_columns(int64_t column_bytes, int64_t unit, int64_t most) {
  int64_t cols = SLICE_BYTES / column_bytes / unit * unit;
  cols = cols < unit ? unit : cols;
  return cols < most ? cols : most;
}

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

XR_AVX2_FMA static void micro_avx2(int64_t kc, const float *A, int64_t lda, const float *P,
                                   float *C, int64_t ldc, bool accumulate) {
  xr_fma_8x32_avx2(kc, A, lda, 1, P, C, ldc, accumulate);
}

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

/* Vector helpers for the passes between the GEMMs (silu_and_mul, weighting, reduce), built
 * for AVX-512, AVX2 and plain x86-64 (target_clones picks one when the library loads). */
#define CLONES XR_CPU_CLONES
#define HOT XR_VHOT

/* silu(g) * u = g * sigmoid(g) * u, sigmoid from exp(-|g|) so that nothing overflows. */
HOT vf vsilu_mul(vf g, vf u) {
  vi negative = g < 0.0f;
  vf e = vexp_nonpositive((vf)((vu)g | 0x80000000u));
  vf d = 1.0f / (1.0f + e);
  vf sigmoid = (vf)(((vi)d & ~negative) | ((vi)(e * d) & negative));
  return g * sigmoid * u;
}

static inline float silu_mul(float g, float u) { return g / (1.0f + expf(-g)) * u; }

/* h[c] = silu(g[c]) * u[c] in the op's dtype (bf16 or fp32), rounded once. */
CLONES static void silu_mul_row(xr_dtype_t d, const void *g, const void *u, void *h, int64_t n) {
  int64_t c = 0;
  if (d == XR_DTYPE_BF16) {
    const uint16_t *gb = g, *ub = u;
    uint16_t *hb = h;
    for (; c + VW <= n; c += VW) vstore_bf16(hb + c, vsilu_mul(vload_bf16(gb + c), vload_bf16(ub + c)));
    for (; c < n; c++) hb[c] = xr_f32_to_bf16(silu_mul(xr_bf16_to_f32(gb[c]), xr_bf16_to_f32(ub[c])));
    return;
  }
  const float *gf = g, *uf = u;
  float *hf = h;
  for (; c + VW <= n; c += VW) vstore(hf + c, vsilu_mul(vload(gf + c), vload(uf + c)));
  for (; c < n; c++) hf[c] = silu_mul(gf[c], uf[c]);
}

/* out[c] = y[c] * w in the op's dtype (bf16 or fp32), rounded once. */
CLONES static void weigh_row(xr_dtype_t d, const float *y, float w, void *out, int64_t n) {
  int64_t c = 0;
  if (d == XR_DTYPE_BF16) {
    uint16_t *o = out;
    for (; c + VW <= n; c += VW) vstore_bf16(o + c, vload(y + c) * w);
    for (; c < n; c++) o[c] = xr_f32_to_bf16(y[c] * w);
    return;
  }
  float *o = out;
  for (; c < n; c++) o[c] = y[c] * w;
}

/* acc[c] += y[c], y in bf16 or fp32. */
CLONES static void add_row(xr_dtype_t d, float *acc, const void *y, int64_t n) {
  int64_t c = 0;
  if (d == XR_DTYPE_BF16) {
    const uint16_t *yb = y;
    for (; c + VW <= n; c += VW) vstore(acc + c, vload(acc + c) + vload_bf16(yb + c));
    for (; c < n; c++) acc[c] += xr_bf16_to_f32(yb[c]);
    return;
  }
  const float *yf = y;
  for (; c + VW <= n; c += VW) vstore(acc + c, vload(acc + c) + vload(yf + c));
  for (; c < n; c++) acc[c] += yf[c];
}

/* A contiguous output row from fp32 sums. */
CLONES static void store_row(xr_dtype_t d, const float *acc, void *out, int64_t n) {
  int64_t c = 0;
  if (d == XR_DTYPE_F32) {
    memcpy(out, acc, sizeof(float) * (size_t)n);
  } else if (d == XR_DTYPE_BF16) {
    for (; c + VW <= n; c += VW) vstore_bf16((uint16_t *)out + c, vload(acc + c));
    for (; c < n; c++) ((uint16_t *)out)[c] = xr_f32_to_bf16(acc[c]);
  } else {
    for (; c < n; c++) ((uint16_t *)out)[c] = xr_f32_to_f16(acc[c]);
  }
}


#ifdef XR_HAVE_DNNL_H
/* One primitive per (GEMM, rows, columns), shared by every slice of that size. */
typedef struct dnnl_kind {
  int which;                   /* 0: GEMM-1 (gate or up), 1: GEMM-2 */
  int64_t rows, cols;
  dnnl_primitive_t prim;
  dnnl_memory_desc_t mds[3];   /* src, packed weights, dst */
  size_t scratchpad_size;
} dnnl_kind_t;

/* One GEMM of one slice: memories bound to the expert's rows, the slice's packed weights and
 * its columns of the output. */
typedef struct slice_gemm {
  int kind;                    /* index in kinds */
  size_t packed_at;            /* byte offset of its weights in the packed buffer */
  dnnl_memory_t mem[3];
} slice_gemm_t;

/* A task on the pool: a slice of columns of one expert's GEMM-1 (gate and up, then
 * silu_and_mul on them) or GEMM-2 (then the routing weight). */
typedef struct dnnl_task {
  int64_t expert, col0, cols;
  slice_gemm_t gemm[2];        /* GEMM-1: gate, up; GEMM-2: gemm[0] */
} dnnl_task_t;

/* What a thread running tasks needs for itself: oneDNN's own scratchpad is shared by every
 * primitive its creator runs, so tasks on other threads bring their own. */
typedef struct dnnl_slot {
  atomic_bool busy;
  dnnl_stream_t stream;
  void *scratchpad;
  dnnl_memory_t scratchpad_mem;
} dnnl_slot_t;

typedef struct dnnl_path {
  const xr_dnnl_t *d;
  int64_t *rows_prepared;      /* [E+1] row_start at prepare() */
  dnnl_kind_t *kinds;
  int kind_count, kind_capacity;
  int64_t slice[2];            /* columns per task of GEMM-1 (gate and up each), GEMM-2 */
  dnnl_task_t *tasks[2];       /* GEMM-1 tasks, then GEMM-2 tasks, expert by expert */
  size_t task_count[2];
  dnnl_slot_t *slots;          /* one per thread of the device's pool */
  size_t slot_count;
  xr_hal_buffer_t *packed_buffer; /* every slice's weights: one device buffer, so the cpu
                                   * driver's huge pages, as the inputs have */
  uint8_t *packed;
} dnnl_path_t;
#endif

/* Scratch of one thread running AMX tasks on quantized weights: the slice decoded to bf16 and
 * packed (fp8: decoded into `plain` rows first). */
typedef struct amx_slot {
  atomic_bool busy;
  uint16_t *weights, *plain;
} amx_slot_t;

typedef struct cpu_state {
  const xr_moe_problem_t *p;
  xr_tensor_t hidden, w1, w2, weights, ids, logits, out, w1s, w2s;
  void *hb, *w1b, *w2b, *wb, *ib, *lb, *ob, *w1sb, *w2sb;
  bool mxfp4, fp8;         /* quantized weights, decoded as they are read */
  float fp8_value[256];    /* fp8: each byte's value */
  int64_t gate_step;       /* w1 rows between gate (and up) columns n and n + 1 */
  float *bias1;            /* [E][2N]: the gate biases of columns 0 .. N-1, then the up ones; or NULL */
  float *bias2;            /* [E][K], or NULL */
  micro_fn micro;
  int64_t rows_cap;        /* M*topk + (MR-1)*E */
  int64_t *row_start;      /* [E+1] first gathered row of each expert (multiples of MR) */
  int32_t *row_pair;       /* [rows_cap] token*topk + slot, -1 for padding */
  int32_t *route_ids;      /* [M*topk] expert of each pair, -1 when not routed */
  float *route_w;          /* [M*topk] routing weight of each pair */
  int32_t *pair_row;       /* [M*topk] gathered row of each pair (oneDNN path) */
  float *A;                /* [rows_cap][K] gathered inputs (fp32; the op's dtype for oneDNN,
                            * where, free once GEMM-1 is done, it then holds the weighted
                            * GEMM-2 outputs in the op's dtype) */
  float *H;                /* [rows_cap][N] silu(g) * u (fp32; the op's dtype for oneDNN) */
  float *Y;                /* [M*topk][K] weighted expert outputs; [rows_cap][K] GEMM-2 outputs
                            * for oneDNN */
  void *G;                 /* [rows_cap][2N] GEMM-1 outputs in the op's dtype (oneDNN) */
  /* oneDNN path: G, Y and the weighted outputs in A are stored slice by slice (slice_at). */
  bool use_dnnl;           /* this run: the routing matches the prepared primitives */
  /* AMX path (bf16, see moe_amx.h), chosen at prepare(), for any routing: A and H tiled, each
   * expert's weights packed once into amx_w1 ([E][N/16][gate, up][K/32] tiles) and amx_w2
   * ([E][K/16][N/32] tiles); GEMM-2 writes the weighted rows into A, row-major. */
  bool use_amx;
  int64_t row_pad;         /* each expert's rows padded to a multiple of this */
  float *row_scale;        /* [rows_cap] GEMM-2's factor per gathered row (AMX path) */
  xr_hal_buffer_t *amx_buffer;
  uint16_t *amx_w1, *amx_w2;
  int64_t amx_slice[2];    /* columns per task: GEMM-1 (gate and up each), GEMM-2 */
  amx_slot_t *amx_slots;   /* quantized weights: a slice decoded per task, one slot per pool thread */
  size_t amx_slot_count;
#ifdef XR_HAVE_DNNL_H
  dnnl_path_t dnnl;
#endif
} cpu_state_t;

/* n weights of row `row` of expert e's w1 (which 0) or w2 from column k0, as fp32. */
static void weight_row(const cpu_state_t *s, int which, int64_t e, int64_t row, int64_t k0, int64_t n, float *dst) {
  const xr_tensor_t *w = which ? &s->w2 : &s->w1;
  const void *wb = which ? s->w2b : s->w1b;
  if (!s->mxfp4 && !s->fp8) {
    load_f32(wb, w->dtype, xr_moe_at(w, e, row, k0), w->strides[2], n, dst);
    return;
  }
  const xr_tensor_t *sc = which ? &s->w2s : &s->w1s;
  if (s->fp8) { /* the row's scales: one per block of block_k columns, or the expert's one */
    const uint8_t *bytes = wb;
    const float *scale = (const float *)(which ? s->w2sb : s->w1sb) +
                         xr_moe_at(sc, e, s->p->block_n ? row / s->p->block_n : 0, 0);
    int64_t block = s->p->block_n ? s->p->block_k : n + k0, step = s->p->block_n ? sc->strides[2] : 0;
    for (int64_t i = 0; i < n; i++)
      dst[i] = s->fp8_value[bytes[xr_moe_at(w, e, row, k0 + i)]] * scale[(k0 + i) / block * step];
    return;
  }
  const uint8_t *codes = wb, *scales = which ? s->w2sb : s->w1sb;
  for (int64_t i = 0; i < n; i++) {
    int64_t k = k0 + i;
    uint8_t pair = codes[xr_moe_at(w, e, row, k / 2)];
    dst[i] = xr_e2m1_to_f32(k % 2 ? pair >> 4 : pair & 15) * xr_e8m0_to_f32(scales[xr_moe_at(sc, e, row, k / 32)]);
  }
}

/* P[k][n] = W[row0 + n * row_step][k0 + k] of expert e's w1 (which 0) or w2, for n < rows (zero
 * beyond), k < kc. */
static void pack_panel(const cpu_state_t *s, int which, int64_t e, int64_t row0, int64_t row_step, int64_t k0,
                       int64_t rows, int64_t kc, float *P) {
  float line[KC];
  for (int64_t n = 0; n < NR; n++) {
    if (n < rows) weight_row(s, which, e, row0 + n * row_step, k0, kc, line);
    else memset(line, 0, sizeof(float) * (size_t)kc);
    for (int64_t k = 0; k < kc; k++) P[k * NR + n] = line[k];
  }
}

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
  /* Count, pad each expert to row_pad rows, then list pairs in ascending order per expert. */
  int64_t pad = s->row_pad;
  for (int64_t e = 0; e <= p->E; e++) s->row_start[e] = 0;
  for (int64_t i = 0; i < pairs; i++)
    if (s->route_ids[i] >= 0) s->row_start[s->route_ids[i] + 1]++;
  for (int64_t e = 0; e < p->E; e++)
    s->row_start[e + 1] = s->row_start[e] + (s->row_start[e + 1] + pad - 1) / pad * pad;
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
  if (s->use_amx)
    for (int64_t r = 0; r < s->row_start[p->E]; r++) {
      int32_t pair = s->row_pair[r];
      s->row_scale[r] = pair < 0 ? 0.0f : p->weight_on_input ? 1.0f : s->route_w[pair];
    }
  s->use_dnnl = false;
#ifdef XR_HAVE_DNNL_H
  s->use_dnnl = s->dnnl.task_count[0] > 0 &&
                !memcmp(s->row_start, s->dnnl.rows_prepared, sizeof(int64_t) * (size_t)(p->E + 1));
#endif
}

/* AMX path: gathered row r of A, in tiles, in the op's dtype (bf16). */
static void gather_tiled(const cpu_state_t *s, int64_t r, int32_t pair) {
  const xr_moe_problem_t *p = s->p;
  uint16_t *A = (uint16_t *)s->A, line[32];
  int64_t at = pair < 0 ? 0 : xr_moe_at(&s->hidden, pair / p->topk, 0, 0), ks = s->hidden.strides[1];
  float w = pair >= 0 && p->weight_on_input ? s->route_w[pair] : 1.0f, chunk[32];
  for (int64_t k0 = 0; k0 < p->K; k0 += 32) {
    uint16_t *to = A + xr_amx_tiled_at(p->K, r, k0);
    if (pair < 0) {
      memset(to, 0, sizeof line);
    } else if (s->hidden.dtype == XR_DTYPE_BF16 && ks == 1 && !p->weight_on_input) {
      memcpy(to, (const uint16_t *)s->hb + at + k0, sizeof line);
    } else {
      load_f32(s->hb, s->hidden.dtype, at + k0 * ks, ks, 32, chunk);
      for (int k = 0; k < 32; k++) line[k] = xr_f32_to_bf16(chunk[k] * w);
      memcpy(to, line, sizeof line);
    }
  }
}

/* Gathered rows [begin, end) of A. */
static void gather_rows(const cpu_state_t *s, size_t begin, size_t end) {
  const xr_moe_problem_t *p = s->p;
  for (size_t r = begin; r < end && (int64_t)r < s->row_start[p->E]; r++) {
    float *a = s->A + r * (size_t)p->K, line[KC];
    int32_t pair = s->row_pair[r];
    if (s->use_amx) {
      gather_tiled(s, r, pair);
      continue;
    }
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

static void step_gather(void *ctx, size_t begin, size_t end) { gather_rows(ctx, begin, end); }

/* out[rows][NR] (ldc) = A[rows][kdim] @ W[row0, row0 + row_step, ...]^T (wrows of them) of
 * expert e's w1 (which 0) or w2. `scratch` holds KC*NR floats. */
static void expert_panel(const cpu_state_t *s, const float *A, int64_t lda, int64_t rows, int64_t kdim,
                         int which, int64_t e, int64_t row0, int64_t row_step, int64_t wrows, float *scratch,
                         float *out, int64_t ldc) {
  for (int64_t k0 = 0; k0 < kdim; k0 += KC) {
    int64_t kc = kdim - k0 < KC ? kdim - k0 : KC;
    pack_panel(s, which, e, row0, row_step, k0, wrows, kc, scratch);
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
    expert_panel(s, A, p->K, rows, p->K, 0, e, xr_moe_gate_row(p, n0), s->gate_step, cols, buf, C, 2 * NR);
    expert_panel(s, A, p->K, rows, p->K, 0, e, xr_moe_up_row(p, n0), s->gate_step, cols, buf, C + NR, 2 * NR);
    const float *gb = s->bias1 ? s->bias1 + e * 2 * p->N + n0 : NULL, *ub = gb ? gb + p->N : NULL;
    for (int64_t r = 0; r < rows; r++) {
      float *h = s->H + (r0 + r) * p->N + n0;
      const float *g = C + r * 2 * NR, *u = g + NR;
      for (int64_t c = 0; c < cols; c++) {
        float gv = round_to(p->dtype, g[c] + (gb ? gb[c] : 0.0f)), uv = round_to(p->dtype, u[c] + (ub ? ub[c] : 0.0f));
        h[c] = round_to(p->dtype, p->act == XR_MOE_ACT_SILU ? gv / (1.0f + expf(-gv)) * uv
                                                             : (float)xr_moe_activate(p, gv, uv));
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
    expert_panel(s, s->H + r0 * p->N, p->N, rows, p->N, 1, e, k0, 1, cols, buf, C, NR);
    const float *b2 = s->bias2 ? s->bias2 + e * p->K + k0 : NULL;
    for (int64_t r = 0; r < rows; r++) {
      int32_t pair = s->row_pair[r0 + r];
      if (pair < 0) continue;
      float w = p->weight_on_input ? 1.0f : s->route_w[pair];
      float *y = s->Y + (int64_t)pair * p->K + k0;
      for (int64_t c = 0; c < cols; c++) y[c] = round_to(p->dtype, (C[r * NR + c] + (b2 ? b2[c] : 0.0f)) * w);
    }
    free(buf);
  }
}

#ifdef XR_HAVE_DNNL_H
/* Where a slice's output starts, in elements: oneDNN 2.6 runs its AMX GEMMs only on dense
 * outputs, so each expert's rows of G (and Y) are stored slice by slice, each [rows][cols];
 * GEMM-1 writes gate (part 0) then up (part 1). */
static int64_t slice_at(const cpu_state_t *s, int which, const dnnl_task_t *task, int part) {
  int64_t r0 = s->row_start[task->expert], rows = s->row_start[task->expert + 1] - r0;
  int64_t width = which ? s->p->K : 2 * s->p->N;
  return r0 * width + (which ? 1 : 2) * task->col0 * rows + part * task->cols * rows;
}

/* The routing weight and vLLM's rounding of the GEMM-2 output, on a slice of Y while it is in L2. */
static void weigh_slice(const cpu_state_t *s, const dnnl_task_t *task) {
  const xr_moe_problem_t *p = s->p;
  int64_t r0 = s->row_start[task->expert], r1 = s->row_start[task->expert + 1];
  int64_t at = slice_at(s, 1, task, 0);
  size_t esize = xr_dtype_size(p->dtype);
  for (int64_t r = r0; r < r1; r++, at += task->cols) {
    int32_t pair = s->row_pair[r];
    if (pair < 0) continue;
    weigh_row(p->dtype, s->Y + at, p->weight_on_input ? 1.0f : s->route_w[pair],
              (uint8_t *)s->A + (size_t)at * esize, task->cols);
  }
}

/* H[r][col0 + c] = silu(g) * u for the expert's rows and `cols` columns from col0, from the
 * slice's GEMM-1 outputs; all in the op's dtype. Run right after the slice's GEMMs, while they
 * are in L2. */
static void silu_slice(const cpu_state_t *s, const dnnl_task_t *task) {
  const xr_moe_problem_t *p = s->p;
  size_t esize = xr_dtype_size(p->dtype);
  int64_t r0 = s->row_start[task->expert], rows = s->row_start[task->expert + 1] - r0;
  int64_t cols = task->cols, gate = slice_at(s, 0, task, 0), up = slice_at(s, 0, task, 1);
  const uint8_t *G = s->G;
  for (int64_t r = 0; r < rows; r++)
    silu_mul_row(p->dtype, G + (size_t)(gate + r * cols) * esize, G + (size_t)(up + r * cols) * esize,
                 (uint8_t *)s->H + (size_t)((r0 + r) * p->N + task->col0) * esize, cols);
}

/* A free slot; there are as many as the pool runs tasks at once. */
static dnnl_slot_t *claim_slot(const dnnl_path_t *dp) {
  for (;;)
    for (size_t i = 0; i < dp->slot_count; i++)
      if (!atomic_exchange_explicit(&dp->slots[i].busy, true, memory_order_acquire)) return &dp->slots[i];
}

/* A failed execution leaves stale outputs, which the check reports. */
static void run_gemm(const dnnl_path_t *dp, const dnnl_slot_t *slot, const slice_gemm_t *g) {
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, g->mem[0]},
                             {DNNL_ARG_WEIGHTS, g->mem[1]},
                             {DNNL_ARG_DST, g->mem[2]},
                             {DNNL_ARG_SCRATCHPAD, slot->scratchpad_mem}};
  dp->d->dnnl_primitive_execute(dp->kinds[g->kind].prim, slot->stream, slot->scratchpad_mem ? 4 : 3, args);
}

/* Tasks [begin, end) of GEMM `which` on this thread alone (the primitives are single-threaded). */
static void run_tasks(const cpu_state_t *s, int which, size_t begin, size_t end) {
  const dnnl_path_t *dp = &s->dnnl;
  if (!s->use_dnnl) return;
  int previous = xr_dnnl_set_thread_count(dp->d, 1); /* restored for whatever runs here next */
  dnnl_slot_t *slot = claim_slot(dp);
  for (size_t t = begin; t < end; t++) {
    const dnnl_task_t *task = &dp->tasks[which][t];
    run_gemm(dp, slot, &task->gemm[0]);
    if (which == 0) run_gemm(dp, slot, &task->gemm[1]);
    dp->d->dnnl_stream_wait(slot->stream);
    if (which == 0) silu_slice(s, task);
    else weigh_slice(s, task);
  }
  atomic_store_explicit(&slot->busy, false, memory_order_release);
  if (previous > 0) xr_dnnl_set_thread_count(dp->d, previous);
}

static void step_slices1(void *ctx, size_t begin, size_t end) { run_tasks(ctx, 0, begin, end); }
static void step_slices2(void *ctx, size_t begin, size_t end) { run_tasks(ctx, 1, begin, end); }

static void dnnl_release(dnnl_path_t *dp) {
  if (!dp->d) return;
  for (int which = 0; which < 2; which++)
    for (size_t t = 0; dp->tasks[which] && t < dp->task_count[which]; t++)
      for (int g = 0; g < 2; g++)
        for (int i = 0; i < 3; i++)
          if (dp->tasks[which][t].gemm[g].mem[i]) dp->d->dnnl_memory_destroy(dp->tasks[which][t].gemm[g].mem[i]);
  for (int i = 0; i < dp->kind_count; i++) dp->d->dnnl_primitive_destroy(dp->kinds[i].prim);
  for (size_t i = 0; dp->slots && i < dp->slot_count; i++) {
    if (dp->slots[i].scratchpad_mem) dp->d->dnnl_memory_destroy(dp->slots[i].scratchpad_mem);
    if (dp->slots[i].stream) dp->d->dnnl_stream_destroy(dp->slots[i].stream);
    free(dp->slots[i].scratchpad);
  }
  xr_hal_buffer_free(dp->packed_buffer);
  free(dp->tasks[0]);
  free(dp->tasks[1]);
  free(dp->kinds);
  free(dp->slots);
  free(dp->rows_prepared);
  memset(dp, 0, sizeof *dp);
}

/* The weights of a slice: `cols` rows of w1[e] from gate (part 0) or up (part 1) row col0, or
 * of w2[e] (which = 1), as the [in, cols] matrix the GEMM multiplies by, and where it starts. */
static xr_dnnl_matrix_t slice_weights(const cpu_state_t *s, int which, int64_t e, int part,
                                      int64_t col0, int64_t cols, const void **from) {
  const xr_moe_problem_t *p = s->p;
  const xr_tensor_t *w = which ? &s->w2 : &s->w1;
  size_t at = (size_t)xr_moe_at(w, e, (which ? 0 : part * p->N) + col0, 0);
  *from = (const uint8_t *)(which ? s->w2b : s->w1b) + at * xr_dtype_size(p->dtype);
  return (xr_dnnl_matrix_t){p->dtype, which ? p->N : p->K, cols, w->strides[2], w->strides[1]};
}

/* The kind for (which, rows, cols), its primitive created on first use. */
static xr_status_t find_kind(cpu_state_t *s, int which, int64_t rows, int64_t cols, int *out) {
  const xr_moe_problem_t *p = s->p;
  dnnl_path_t *dp = &s->dnnl;
  for (int i = 0; i < dp->kind_count; i++)
    if (dp->kinds[i].which == which && dp->kinds[i].rows == rows && dp->kinds[i].cols == cols) {
      *out = i;
      return XR_OK;
    }
  if (dp->kind_count == dp->kind_capacity) {
    int capacity = dp->kind_capacity ? 2 * dp->kind_capacity : 16;
    dnnl_kind_t *grown = realloc(dp->kinds, sizeof *grown * (size_t)capacity);
    if (!grown) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
    dp->kinds = grown;
    dp->kind_capacity = capacity;
  }
  dnnl_kind_t *k = &dp->kinds[dp->kind_count];
  memset(k, 0, sizeof *k);
  k->which = which, k->rows = rows, k->cols = cols;
  const void *from;
  const xr_dnnl_matrix_t src = {p->dtype, rows, which ? p->N : p->K, which ? p->N : p->K, 1};
  const xr_dnnl_matrix_t weights = slice_weights(s, which, 0, 0, 0, cols, &from);
  const xr_dnnl_matrix_t dst = {which ? XR_DTYPE_F32 : p->dtype, rows, cols, cols, 1};
  xr_status_t st = xr_dnnl_matmul_create(dp->d, &src, &weights, &dst, true, &k->scratchpad_size,
                                         &k->prim, k->mds);
  if (st != XR_OK) return st;
  *out = dp->kind_count++;
  return XR_OK;
}

/* The tasks of every expert with rows, each GEMM with its kind and the offset of its packed
 * weights (*packed_size: their total). */
static xr_status_t plan_tasks(cpu_state_t *s, size_t *packed_size) {
  const xr_moe_problem_t *p = s->p;
  dnnl_path_t *dp = &s->dnnl;
  int64_t widths[2] = {p->N, p->K}, depths[2] = {p->K, p->N};
  size_t active = 0;
  for (int64_t e = 0; e < p->E; e++) active += s->row_start[e + 1] > s->row_start[e];
  *packed_size = 0;
  for (int which = 0; which < 2; which++) {
    /* whole 64-column blocks of the packed layout */
    int64_t slice = dp->slice[which] = slice_columns(depths[which] * (int64_t)xr_dtype_size(p->dtype), 64, KC);
    size_t slices = (size_t)((widths[which] + slice - 1) / slice);
    if (!(dp->tasks[which] = calloc(active * slices + 1, sizeof(dnnl_task_t))))
      return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
    for (int64_t e = 0; e < p->E; e++) {
      int64_t rows = s->row_start[e + 1] - s->row_start[e];
      for (int64_t col0 = 0; rows && col0 < widths[which]; col0 += slice) {
        dnnl_task_t *task = &dp->tasks[which][dp->task_count[which]++];
        task->expert = e, task->col0 = col0;
        task->cols = widths[which] - col0 < slice ? widths[which] - col0 : slice;
        int kind = 0;
        xr_status_t st = find_kind(s, which, rows, task->cols, &kind);
        if (st != XR_OK) return st;
        for (int g = 0; g < (which ? 1 : 2); g++) {
          task->gemm[g].kind = kind;
          task->gemm[g].packed_at = *packed_size;
          *packed_size += (dp->d->dnnl_memory_desc_get_size(&dp->kinds[kind].mds[1]) + 63) / 64 * 64;
        }
      }
    }
  }
  return XR_OK;
}

/* Packs a task's weights once, as a CPU serving stack packs them at load time (read in place,
 * the transposed [n, k] weights are repacked by oneDNN on every call), and binds its memories. */
static xr_status_t bind_task(cpu_state_t *s, int which, dnnl_task_t *task) {
  const xr_moe_problem_t *p = s->p;
  dnnl_path_t *dp = &s->dnnl;
  size_t esize = xr_dtype_size(p->dtype);
  int64_t r0 = s->row_start[task->expert];
  for (int g = 0; g < (which ? 1 : 2); g++) {
    slice_gemm_t *sg = &task->gemm[g];
    const dnnl_kind_t *k = &dp->kinds[sg->kind];
    const void *from;
    const xr_dnnl_matrix_t weights = slice_weights(s, which, task->expert, g, task->col0, task->cols, &from);
    void *packed = dp->packed + sg->packed_at;
    xr_status_t st = xr_dnnl_pack_weights(dp->d, &weights, from, &k->mds[1], packed);
    if (st != XR_OK) return st;
    void *const ptr[3] = {
        which ? (uint8_t *)s->H + (size_t)(r0 * p->N) * esize : (uint8_t *)s->A + (size_t)(r0 * p->K) * esize,
        packed,
        which ? (void *)(s->Y + slice_at(s, 1, task, 0))
              : (uint8_t *)s->G + (size_t)slice_at(s, 0, task, g) * esize};
    for (int i = 0; i < 3; i++)
      if (dp->d->dnnl_memory_create(&sg->mem[i], &k->mds[i], dp->d->engine, ptr[i]) != dnnl_success)
        return xr_error(XR_DEVICE_ERROR, "dnnl_memory_create failed");
  }
  return XR_OK;
}

/* A stream and a scratchpad (for the largest kind) per thread of the pool. */
static xr_status_t make_slots(dnnl_path_t *dp, size_t width) {
  size_t scratch = 0;
  for (int i = 0; i < dp->kind_count; i++)
    if (dp->kinds[i].scratchpad_size > scratch) scratch = dp->kinds[i].scratchpad_size;
  if (!(dp->slots = calloc(width, sizeof *dp->slots))) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  dp->slot_count = width;
  for (size_t i = 0; i < width; i++) {
    dnnl_slot_t *slot = &dp->slots[i];
    atomic_init(&slot->busy, false);
    if (dp->d->dnnl_stream_create(&slot->stream, dp->d->engine, dnnl_stream_default_flags) != dnnl_success)
      return xr_error(XR_DEVICE_ERROR, "dnnl_stream_create failed");
    if (!scratch) continue;
    dnnl_memory_desc_t md;
    xr_status_t st = xr_dnnl_scratchpad_md(dp->d, scratch, &md);
    if (st != XR_OK) return st;
    if (!(slot->scratchpad = aligned_alloc(64, (scratch + 63) / 64 * 64)))
      return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory for a oneDNN scratchpad");
    if (dp->d->dnnl_memory_create(&slot->scratchpad_mem, &md, dp->d->engine, slot->scratchpad) != dnnl_success)
      return xr_error(XR_DEVICE_ERROR, "dnnl_memory_create failed");
  }
  return XR_OK;
}

static xr_status_t dnnl_build(cpu_state_t *s, xr_hal_device_t *device, size_t width);

/* Creates the slices' primitives for the routing of the inputs as they are now (the routing
 * and the weights are fixed between runs); any failure (fp16, odd strides, no oneDNN) leaves the
 * micro-kernel path in charge. `width`: the threads of the device's pool. */
static xr_status_t dnnl_prepare(cpu_state_t *s, xr_hal_device_t *device, size_t width) {
  const xr_moe_problem_t *p = s->p;
  dnnl_path_t *dp = &s->dnnl;
  xr_status_t st = xr_dnnl_get(&dp->d);
  if (st != XR_OK) return st;
  if (s->hidden.rank != 2 || s->w1.rank != 3 || s->w2.rank != 3 || s->w1.dtype != p->dtype ||
      p->act != XR_MOE_ACT_SILU || s->bias1 || s->bias2 ||
      s->w2.dtype != p->dtype || (p->dtype != XR_DTYPE_BF16 && p->dtype != XR_DTYPE_F32))
    return xr_error(XR_UNIMPLEMENTED, "weights of another dtype than the activations, fp16, biases or swigluoai");
  if (!(dp->rows_prepared = calloc((size_t)p->E + 1, sizeof(int64_t))))
    return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  step_route(s);
  memcpy(dp->rows_prepared, s->row_start, sizeof(int64_t) * (size_t)(p->E + 1));
  /* Primitives created now run single-threaded: the tasks, not oneDNN, spread over the pool. */
  int previous = xr_dnnl_set_thread_count(dp->d, 1);
  if (previous <= 0)
    return xr_error(XR_UNIMPLEMENTED, "oneDNN's OpenMP runtime is out of reach, so its GEMMs cannot be made single-threaded");
  st = dnnl_build(s, device, width);
  xr_dnnl_set_thread_count(dp->d, previous);
  return st;
}

static xr_status_t dnnl_build(cpu_state_t *s, xr_hal_device_t *device, size_t width) {
  dnnl_path_t *dp = &s->dnnl;
  size_t packed_size;
  xr_status_t st;
  if ((st = plan_tasks(s, &packed_size))) return st;
  if ((st = xr_hal_buffer_alloc(device, packed_size ? packed_size : 1, &dp->packed_buffer)) ||
      (st = xr_hal_buffer_host_pointer(dp->packed_buffer, (void **)&dp->packed)))
    return st;
  for (int which = 0; which < 2; which++)
    for (size_t t = 0; t < dp->task_count[which]; t++)
      if ((st = bind_task(s, which, &dp->tasks[which][t]))) return st;
  return make_slots(dp, width);
}
#endif

/* ------------------------------------------------------------------------------------------ */
/* AMX path                                                                                    */

/* Packs expert e's weights for the AMX kernels. */
static void amx_pack_expert(const cpu_state_t *s, int64_t e) {
  const xr_moe_problem_t *p = s->p;
  int64_t KT = p->K / 32, per_expert1 = 2 * p->N * p->K, per_expert2 = p->K * p->N;
  const uint16_t *w1 = s->w1b, *w2 = s->w2b;
  for (int64_t c = 0; c < p->N; c += 16)
    for (int part = 0; part < 2; part++)
      xr_amx_pack(w1 + xr_moe_at(&s->w1, e, part ? xr_moe_up_row(p, c) : xr_moe_gate_row(p, c), 0),
                  s->w1.strides[1] * s->gate_step, s->w1.strides[2], 16, p->K,
                  s->amx_w1 + e * per_expert1 + (2 * (c / 16) + part) * KT * 16 * 32);
  xr_amx_pack(w2 + xr_moe_at(&s->w2, e, 0, 0), s->w2.strides[1], s->w2.strides[2], p->K, p->N,
              s->amx_w2 + e * per_expert2);
}

static void step_pack(void *ctx, size_t begin, size_t end) {
  for (size_t e = begin; e < end; e++) amx_pack_expert(ctx, (int64_t)e);
}

/* Packs every expert's weights for the AMX kernels, once per prepare, expert by expert on the
 * device's pool (a stream of its own, synchronised before returning): Qwen1.5-MoE's 1 GB takes
 * 1.6 s here, 2.9 s on one thread (a new buffer's first touches included). */
static xr_status_t amx_prepare(cpu_state_t *s, xr_hal_device_t *device) {
  const xr_moe_problem_t *p = s->p;
  /* GEMM-1: gate and up, 16-column tiles; GEMM-2: the kernel's pairs of tiles (bf16 weights) */
  s->amx_slice[0] = slice_columns(2 * p->K * 2, 16, p->N);
  s->amx_slice[1] = slice_columns(p->N * 2, 32, p->K);
  if (s->mxfp4 || s->fp8) { /* decoded per task, a slice at a time, into the slot of the thread running it */
    xr_hal_device_properties_t properties;
    size_t width = xr_hal_device_properties(device, &properties) == XR_OK ? properties.max_work_group_size : 1;
    size_t per1 = (size_t)(2 * s->amx_slice[0] * p->K), per2 = (size_t)(s->amx_slice[1] * p->N);
    s->amx_slot_count = width ? width : 1;
    s->amx_slots = calloc(s->amx_slot_count, sizeof *s->amx_slots);
    for (size_t i = 0; s->amx_slots && i < s->amx_slot_count; i++)
      if (!(s->amx_slots[i].weights = aligned_alloc(64, (per1 > per2 ? per1 : per2) * sizeof(uint16_t))) ||
          (s->fp8 && !(s->amx_slots[i].plain = malloc((per1 > per2 ? per1 : per2) * sizeof(uint16_t)))))
        return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", "cpu.moe_fused");
    return s->amx_slots ? XR_OK : xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", "cpu.moe_fused");
  }
  size_t bytes = (size_t)(p->E * 3 * p->N * p->K) * sizeof(uint16_t);
  xr_status_t st;
  void *host;
  xr_hal_stream_t *stream = NULL;
  if ((st = xr_hal_buffer_alloc(device, bytes ? bytes : 1, &s->amx_buffer)) ||
      (st = xr_hal_buffer_host_pointer(s->amx_buffer, &host)))
    return st;
  s->amx_w1 = host;
  s->amx_w2 = s->amx_w1 + p->E * 2 * p->N * p->K;
  if ((st = xr_hal_stream_create(device, &stream)) ||
      (st = xr_hal_stream_enqueue_parallel(stream, (size_t)p->E, 1, step_pack, s)) ||
      (st = xr_hal_stream_synchronize(stream))) {
    if (stream) xr_hal_stream_destroy(stream);
    return st;
  }
  xr_hal_stream_destroy(stream);
  return XR_OK;
}

static int64_t amx_tasks_per_expert(const cpu_state_t *s, int which) {
  int64_t width = which ? s->p->K : s->p->N;
  return (width + s->amx_slice[which] - 1) / s->amx_slice[which];
}

/* Task t of GEMM `which`: expert t / tasks per expert, its columns from *col0 (*cols of them),
 * its packed weights and their size; false when the expert has no rows. */
static bool amx_task(const cpu_state_t *s, int which, size_t t, int64_t *e, int64_t *col0, int64_t *cols,
                     xr_amx_ahead_t *weights) {
  const xr_moe_problem_t *p = s->p;
  int64_t per = amx_tasks_per_expert(s, which), width = which ? p->K : p->N;
  int64_t depth = which ? p->N : p->K, parts = which ? 1 : 2;
  *e = (int64_t)t / per;
  *col0 = (int64_t)t % per * s->amx_slice[which];
  *cols = width - *col0 < s->amx_slice[which] ? width - *col0 : s->amx_slice[which];
  *weights = (xr_amx_ahead_t){NULL, 0};
  if (!s->mxfp4 && !s->fp8) {
    const uint16_t *base = which ? s->amx_w2 + *e * p->K * p->N : s->amx_w1 + *e * 2 * p->N * p->K;
    *weights = (xr_amx_ahead_t){base + parts * *col0 * depth, (size_t)(parts * *cols * depth) * sizeof(uint16_t)};
  }
  return s->row_start[*e + 1] > s->row_start[*e];
}

/* `cols` fp8 weight rows from `row0` (every row_step-th) of expert e's w1 or w2, decoded to bf16
 * in `plain` and packed into `out`. */
static void amx_decode_fp8(const cpu_state_t *s, int which, int64_t e, int64_t row0, int64_t row_step,
                           int64_t cols, uint16_t *plain, uint16_t *out) {
  int64_t depth = which ? s->p->N : s->p->K;
  float line[KC];
  for (int64_t c = 0; c < cols; c++)
    for (int64_t k0 = 0; k0 < depth; k0 += KC) {
      int64_t kc = depth - k0 < KC ? depth - k0 : KC;
      weight_row(s, which, e, row0 + c * row_step, k0, kc, line);
      for (int64_t k = 0; k < kc; k++) plain[c * depth + k0 + k] = xr_f32_to_bf16(line[k]);
    }
  xr_amx_pack(plain, depth, 1, cols, depth, out);
}

/* Decodes a task's quantized weights into `out` in the packed layout (as amx_w1 / amx_w2 hold). */
static void amx_decode_slice(const cpu_state_t *s, int which, int64_t e, int64_t col0, int64_t cols, uint16_t *out,
                             uint16_t *plain) {
  const xr_moe_problem_t *p = s->p;
  if (s->fp8) {
    if (which) {
      amx_decode_fp8(s, 1, e, col0, 1, cols, plain, out);
      return;
    }
    for (int64_t c = col0; c < col0 + cols; c += 16)
      for (int part = 0; part < 2; part++)
        amx_decode_fp8(s, 0, e, part ? xr_moe_up_row(p, c) : xr_moe_gate_row(p, c), s->gate_step, 16, plain,
                       out + (2 * ((c - col0) / 16) + part) * (p->K / 32) * 16 * 32);
    return;
  }
  const uint8_t *codes = which ? s->w2b : s->w1b, *scales = which ? s->w2sb : s->w1sb;
  if (which) {
    xr_amx_pack_mxfp4(codes + xr_moe_at(&s->w2, e, col0, 0), s->w2.strides[1],
                      scales + xr_moe_at(&s->w2s, e, col0, 0), s->w2s.strides[1], cols, p->N, out);
    return;
  }
  int64_t KT = p->K / 32;
  for (int64_t c = col0; c < col0 + cols; c += 16)
    for (int part = 0; part < 2; part++) {
      int64_t row = part ? xr_moe_up_row(p, c) : xr_moe_gate_row(p, c);
      xr_amx_pack_mxfp4(codes + xr_moe_at(&s->w1, e, row, 0), s->w1.strides[1] * s->gate_step,
                        scales + xr_moe_at(&s->w1s, e, row, 0), s->w1s.strides[1] * s->gate_step, 16, p->K,
                        out + (2 * ((c - col0) / 16) + part) * KT * 16 * 32);
    }
}

static amx_slot_t *claim_amx_slot(const cpu_state_t *s) {
  for (;;)
    for (size_t i = 0; i < s->amx_slot_count; i++)
      if (!atomic_exchange_explicit(&s->amx_slots[i].busy, true, memory_order_acquire)) return &s->amx_slots[i];
}

/* Tasks [begin, end) of GEMM `which` (one expert's: a chunk is an expert's tasks), each fetching
 * the next one's weights while it computes. */
static void amx_run(const cpu_state_t *s, int which, size_t begin, size_t end) {
  const xr_moe_problem_t *p = s->p;
  amx_slot_t *slot = NULL;
  for (size_t t = begin; t < end; t++) {
    int64_t e, col0, cols;
    xr_amx_ahead_t weights, next = {NULL, 0};
    if (!amx_task(s, which, t, &e, &col0, &cols, &weights)) break; /* an expert without rows */
    if (t + 1 < end) {
      int64_t next_e, next_col0, next_cols;
      amx_task(s, which, t + 1, &next_e, &next_col0, &next_cols, &next);
    }
    if (s->mxfp4 || s->fp8) {
      if (!slot) slot = claim_amx_slot(s);
      amx_decode_slice(s, which, e, col0, cols, slot->weights, slot->plain);
      weights.at = slot->weights;
    }
    int64_t r0 = s->row_start[e], rows = s->row_start[e + 1] - r0;
    if (which == 0) {
      const float *gb = s->bias1 ? s->bias1 + e * 2 * p->N + col0 : NULL;
      xr_amx_act_t act = {p->act == XR_MOE_ACT_SWIGLUOAI, (float)p->swiglu_alpha, (float)p->swiglu_limit, gb,
                          gb ? gb + p->N : NULL};
      xr_amx_gate_up((const uint16_t *)s->A + xr_amx_tiled_at(p->K, r0, 0), rows, p->K, weights.at, cols,
                     (uint16_t *)s->H + xr_amx_tiled_at(p->N, r0, 0), p->N, col0, &act, next);
    } else {
      xr_amx_scaled((const uint16_t *)s->H + xr_amx_tiled_at(p->N, r0, 0), rows, p->N, weights.at, cols,
                    s->row_scale + r0, s->bias2 ? s->bias2 + e * p->K + col0 : NULL,
                    (uint16_t *)s->A + r0 * p->K + col0, p->K, next);
    }
  }
  if (slot) atomic_store_explicit(&slot->busy, false, memory_order_release);
}

static void step_amx1(void *ctx, size_t begin, size_t end) { amx_run(ctx, 0, begin, end); }
static void step_amx2(void *ctx, size_t begin, size_t end) { amx_run(ctx, 1, begin, end); }

static void step_reduce(void *ctx, size_t begin, size_t end) {
  const cpu_state_t *s = ctx;
  const xr_moe_problem_t *p = s->p;
  const xr_tensor_t *o = &s->out;
  float acc[KC];
  for (size_t mi = begin; mi < end; mi++) {
    int64_t m = (int64_t)mi;
    /* A strip at a time (a GEMM-2 slice on the oneDNN path), summed over top-k in slot order. */
    int64_t strip = KC;
#ifdef XR_HAVE_DNNL_H
    if (s->use_dnnl) strip = s->dnnl.slice[1];
#endif
    for (int64_t k0 = 0; k0 < p->K; k0 += strip) {
      int64_t kc = p->K - k0 < strip ? p->K - k0 : strip;
      memset(acc, 0, sizeof(float) * (size_t)kc);
      for (int64_t j = 0; j < p->topk; j++) {
        int64_t pair = m * p->topk + j, e = s->route_ids[pair];
        if (e < 0) continue;
        const void *y = s->Y + pair * p->K + k0;
        xr_dtype_t y_dtype = XR_DTYPE_F32;
        if (s->use_amx) { /* the pair's weighted row, row-major in A */
          y = (const uint16_t *)s->A + s->pair_row[pair] * p->K + k0;
          y_dtype = p->dtype;
        } else if (s->use_dnnl) { /* the pair's weighted row in the expert's slice from k0, in A */
          int64_t r0 = s->row_start[e], rows = s->row_start[e + 1] - r0;
          int64_t at = r0 * p->K + k0 * rows + (s->pair_row[pair] - r0) * kc;
          y = (const uint8_t *)s->A + (size_t)at * xr_dtype_size(p->dtype);
          y_dtype = p->dtype;
        }
        add_row(y_dtype, acc, y, kc);
      }
      if (o->strides[1] == 1) {
        size_t at = (size_t)xr_moe_at(o, m, k0, 0);
        store_row(o->dtype, acc, (uint8_t *)s->ob + at * xr_dtype_size(o->dtype), kc);
        continue;
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
  free(s->row_scale);
  free(s->bias1);
  free(s->bias2);
  for (size_t i = 0; s->amx_slots && i < s->amx_slot_count; i++) {
    free(s->amx_slots[i].weights);
    free(s->amx_slots[i].plain);
  }
  free(s->amx_slots);
  xr_hal_buffer_free(s->amx_buffer);
#ifdef XR_HAVE_DNNL_H
  dnnl_release(&s->dnnl);
#endif
  free(s);
}

static xr_status_t bind(const xr_tensor_t *tensors, int index, xr_tensor_t *t, void **base) {
  if (index < 0) return XR_OK;
  *t = tensors[index];
  return xr_tensor_host(t, base);
}

/* The layer's biases as fp32, once at prepare (like the weights' packing): bias1 holds gate
 * columns then up columns, whichever rows of w1 they are. */
static xr_status_t load_biases(cpu_state_t *s, const xr_tensor_t *tensors) {
  const xr_moe_problem_t *p = s->p;
  xr_tensor_t t;
  void *base;
  xr_status_t st;
  if (p->w1_bias >= 0) {
    if ((st = bind(tensors, p->w1_bias, &t, &base))) return st;
    if (!(s->bias1 = malloc(sizeof(float) * (size_t)(p->E * 2 * p->N))))
      return xr_error(XR_RESOURCE_EXHAUSTED, "cpu.moe_fused: out of host memory");
    for (int64_t e = 0; e < p->E; e++)
      for (int64_t n = 0; n < p->N; n++) {
        s->bias1[e * 2 * p->N + n] = (float)xr_load_element(base, t.dtype, xr_moe_at(&t, e, xr_moe_gate_row(p, n), 0));
        s->bias1[e * 2 * p->N + p->N + n] =
            (float)xr_load_element(base, t.dtype, xr_moe_at(&t, e, xr_moe_up_row(p, n), 0));
      }
  }
  if (p->w2_bias >= 0) {
    if ((st = bind(tensors, p->w2_bias, &t, &base))) return st;
    if (!(s->bias2 = malloc(sizeof(float) * (size_t)(p->E * p->K))))
      return xr_error(XR_RESOURCE_EXHAUSTED, "cpu.moe_fused: out of host memory");
    for (int64_t e = 0; e < p->E; e++)
      for (int64_t k = 0; k < p->K; k++) s->bias2[e * p->K + k] = (float)xr_load_element(base, t.dtype, xr_moe_at(&t, e, k, 0));
  }
  return XR_OK;
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
      (st = bind(tensors, p->out, &s->out, &s->ob)) || (st = bind(tensors, p->w1_scale, &s->w1s, &s->w1sb)) ||
      (st = bind(tensors, p->w2_scale, &s->w2s, &s->w2sb)) || (st = load_biases(s, tensors))) {
    cpu_release(s);
    return st;
  }
  s->mxfp4 = p->weights == XR_MOE_W_MXFP4;
  s->fp8 = p->weights == XR_MOE_W_FP8;
  for (int v = 0; s->fp8 && v < 256; v++) s->fp8_value[v] = xr_fp8_to_f32((uint8_t)v, s->w1.dtype);
  s->gate_step = p->act == XR_MOE_ACT_SWIGLUOAI ? 2 : 1;
  xr_fma_isa_t isa = xr_fma_isa();
  s->micro = isa == XR_FMA_AVX512 ? micro_avx512 : isa == XR_FMA_AVX2 ? micro_avx2 : micro_generic;
  size_t pairs = (size_t)(p->M * p->topk);
  /* AMX: bf16 weights whose GEMMs come in whole tiles (K and N multiples of 32). */
  /* mxfp4 codes and scales decode a row's k at a time: contiguous along k */
  bool mx_rows = s->mxfp4 && s->w1.strides[2] == 1 && s->w2.strides[2] == 1 && s->w1s.strides[2] == 1 &&
                 s->w2s.strides[2] == 1;
  s->use_amx = xr_amx_usable() && p->dtype == XR_DTYPE_BF16 &&
               ((s->w1.dtype == p->dtype && s->w2.dtype == p->dtype) || mx_rows || s->fp8) && s->hidden.rank == 2 &&
               s->w1.rank == 3 && s->w2.rank == 3 && p->K % 32 == 0 && p->N % 32 == 0 && p->K > 0 && p->N > 0;
  s->row_pad = s->use_amx ? 16 : MR;
  s->rows_cap = p->M * p->topk + (s->row_pad - 1) * p->E;
  size_t rows = (size_t)s->rows_cap ? (size_t)s->rows_cap : 1;
  s->row_start = calloc((size_t)p->E + 1, sizeof *s->row_start);
  s->row_pair = malloc(sizeof *s->row_pair * rows);
  s->route_ids = malloc(sizeof *s->route_ids * (pairs ? pairs : 1));
  s->route_w = malloc(sizeof *s->route_w * (pairs ? pairs : 1));
  s->A = malloc(sizeof(float) * rows * (size_t)(p->K ? p->K : 1));
  s->H = malloc(sizeof(float) * rows * (size_t)(p->N ? p->N : 1));
  /* Y: weighted pairs (micro-kernel path) or GEMM-2 rows (oneDNN path); G: oneDNN's GEMM-1
   * outputs. The AMX path needs neither. */
  size_t y_rows = rows > pairs ? rows : (pairs ? pairs : 1);
  if (!s->use_amx) s->Y = malloc(sizeof(float) * y_rows * (size_t)(p->K ? p->K : 1));
  s->pair_row = malloc(sizeof *s->pair_row * (pairs ? pairs : 1));
  if (!s->use_amx) s->G = malloc(xr_dtype_size(p->dtype) * rows * (size_t)(p->N ? 2 * p->N : 1));
  s->row_scale = malloc(sizeof *s->row_scale * rows);
  if (!s->row_start || !s->row_pair || !s->route_ids || !s->route_w || !s->A || !s->H ||
      (!s->use_amx && (!s->Y || !s->G)) || !s->pair_row || !s->row_scale) {
    cpu_release(s);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory for %lld routed rows",
                    plan->op->name, (long long)s->rows_cap);
  }
  if (s->use_amx) {
    if ((st = amx_prepare(s, device)) != XR_OK) {
      cpu_release(s);
      return st;
    }
    *out_state = s;
    return XR_OK;
  }
#ifdef XR_HAVE_DNNL_H
  xr_hal_device_properties_t properties;
  /* A slot per thread that runs the pool's chunks (its workers and the stream's thread). */
  size_t width = xr_hal_device_properties(device, &properties) == XR_OK ? properties.max_work_group_size : 1;
  if (dnnl_prepare(s, device, width) != XR_OK) dnnl_release(&s->dnnl); /* the micro-kernel path runs */
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
      (st = xr_hal_stream_enqueue_parallel(stream, (size_t)s->rows_cap, 8, step_gather, s)))
    return st;
  if (s->use_amx) { /* chosen at prepare(), for any routing: its GEMMs alone */
    size_t per1 = (size_t)amx_tasks_per_expert(s, 0), per2 = (size_t)amx_tasks_per_expert(s, 1);
    if ((st = xr_hal_stream_enqueue_parallel(stream, (size_t)p->E * per1, per1, step_amx1, s)) ||
        (st = xr_hal_stream_enqueue_parallel(stream, (size_t)p->E * per2, per2, step_amx2, s)))
      return st;
    return xr_hal_stream_enqueue_parallel(stream, (size_t)p->M, 1, step_reduce, s);
  }
  /* The micro-kernel steps do nothing in a run that takes the oneDNN slices (step_route decides). */
  if ((st = xr_hal_stream_enqueue_parallel(stream, (size_t)p->E * panels1, 1, step_gemm1, s)) ||
      (st = xr_hal_stream_enqueue_parallel(stream, (size_t)p->E * panels2, 1, step_gemm2, s)))
    return st;
#ifdef XR_HAVE_DNNL_H
  if (s->dnnl.task_count[0] &&
      ((st = xr_hal_stream_enqueue_parallel(stream, s->dnnl.task_count[0], 1, step_slices1, s)) ||
       (st = xr_hal_stream_enqueue_parallel(stream, s->dnnl.task_count[1], 1, step_slices2, s))))
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
