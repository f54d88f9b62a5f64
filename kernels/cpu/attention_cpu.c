/* Fast CPU attention (flash-style): one work item is (sequence, kv head, block of query rows,
 * key partition); its rows are every query head of the kv head's group times the block's
 * queries, so a key/value tile is converted to fp32 once and used by all of them. Keys are
 * walked in tiles of 64 with an online softmax (running max, running sum, rescaled fp32
 * accumulators); the score matrix of a tile is the only one ever held.
 *
 * The inner products are register-blocked micro-kernels (4 rows x 64 keys for Q K^T, 4 rows x
 * 64 dims for P V) written with GCC vector extensions and compiled for AVX-512, AVX+FMA and a
 * baseline (target_clones picks one by the CPU's features at load time), as are the fp16/bf16
 * conversions and exp(). */
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "kernels/family.h"

/* ISO C mode forbids contracting a * b + c into an FMA; the micro-kernels want exactly that,
 * and so does exp's polynomial (vector_ext.h, included after this for that reason). */
#pragma GCC optimize("fp-contract=fast")
#include "kernels/cpu/vector_ext.h"

#define HOT XR_VHOT
#define CLONES __attribute__((target_clones("avx512f", "fma", "default")))

/* DECODE_ROWS: the most rows a kv head may have for its block to walk the keys with the other
 * heads of its item (decode and short speculative steps). */
enum { BK = 64, MR = 4, DECODE_ROWS = 16 };

static inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

HOT float hsum(vf v) {
  float s = 0;
  for (int i = 0; i < VW; i++) s += v[i];
  return s;
}

HOT float hmax(vf v) {
  float m = v[0];
  for (int i = 1; i < VW; i++) m = v[i] > m ? v[i] : m;
  return m;
}

/* In-place 16 x 16 transpose: four butterfly stages, stage k swapping bit k of the row index
 * with bit k of the lane index (two-source shuffles). */
#define TR_LO(k, l) (((l) & (k)) ? 16 + (l) - (k) : (l))
#define TR_HI(k, l) (((l) & (k)) ? 16 + (l) : (l) + (k))
#define TR_MASK(M, k)                                                                                 \
  (vi) {                                                                                              \
    M(k, 0), M(k, 1), M(k, 2), M(k, 3), M(k, 4), M(k, 5), M(k, 6), M(k, 7), M(k, 8), M(k, 9), M(k, 10), \
        M(k, 11), M(k, 12), M(k, 13), M(k, 14), M(k, 15)                                              \
  }
#define TR_STAGE(r, k)                                                \
  for (int i = 0; i < 16; i++)                                        \
    if (!(i & (k))) {                                                 \
      vf lo = __builtin_shuffle(r[i], r[i + (k)], TR_MASK(TR_LO, k)); \
      r[i + (k)] = __builtin_shuffle(r[i], r[i + (k)], TR_MASK(TR_HI, k)); \
      r[i] = lo;                                                      \
    }

HOT void transpose16(vf r[16]) {
  TR_STAGE(r, 8)
  TR_STAGE(r, 4)
  TR_STAGE(r, 2)
  TR_STAGE(r, 1)
}

/* n elements (index, index + stride, ...) of a dtype to fp32; fp8 through a 256-entry table
 * with the cache scale folded in. */
HOT void cvt_run(float *dst, const void *base, xr_dtype_t dt, int64_t index, int64_t n, int64_t stride,
                 const float *lut) {
  int64_t i = 0;
  if (dt == XR_DTYPE_F32) {
    const float *s = (const float *)base + index;
    if (stride == 1) memcpy(dst, s, sizeof(float) * (size_t)n);
    else for (; i < n; i++) dst[i] = s[i * stride];
    return;
  }
  if (dt == XR_DTYPE_F16 || dt == XR_DTYPE_BF16) {
    const uint16_t *s = (const uint16_t *)base + index;
    bool half = dt == XR_DTYPE_F16;
    if (stride == 1) {
      for (; i + VW <= n; i += VW) {
        vh hv;
        memcpy(&hv, s + i, sizeof hv);
        vu h = __builtin_convertvector(hv, vu);
        vf f;
        if (half) {
          /* Exponent re-bias by a multiply handles normals and subnormals; inf/NaN kept. */
          vu em = h & 0x7fff, bits = em << 13;
          vu fb = (vu)((vf)bits * 0x1p112f);
          vu special = (vu)(em >= 0x7c00);
          fb = (fb & ~special) | ((bits | 0x7f800000u) & special);
          f = (vf)(fb | ((h & 0x8000) << 16));
        } else {
          f = (vf)(h << 16);
        }
        vstore(dst + i, f);
      }
    }
    for (; i < n; i++) dst[i] = half ? xr_f16_to_f32(s[i * stride]) : xr_bf16_to_f32(s[i * stride]);
    return;
  }
  const uint8_t *s = (const uint8_t *)base + index;
  for (; i < n; i++) dst[i] = lut[s[i * stride]];
}

typedef struct cpu_state {
  const xr_attn_problem_t *a;
  xr_attn_host_t h;
  xr_tensor_t *bound;
  int64_t bq, qblocks, parts, items;
  int64_t hc;   /* kv heads per item (see cpu_prepare) */
  int64_t rows; /* q / acc rows of the scratch: a query block of one head, or hc decode heads */
  bool bias;    /* ALiBi or a mask: per-logit additive terms */
  float lut_k[256], lut_v[256];
  float lut_q[256]; /* fp8 queries: decoded times q_scale */
} cpu_state_t;

/* Per-thread scratch. */
typedef struct scratch {
  float *q, *kt, *v, *s, *acc, *m, *l, *tmp;
  int64_t *lo, *hi;
  void *block;
} scratch_t;

static bool scratch_alloc(const cpu_state_t *st, scratch_t *w) {
  const int64_t *p = st->a->p;
  int64_t R4 = round_up(p[XR_AP_group] * st->bq, MR), rows = st->rows, D = p[XR_AP_head_dim];
  int64_t Dvp = round_up(p[XR_AP_head_dim_v], 64), T = D > Dvp ? D : Dvp;
  if (T < BK * p[XR_AP_k_x] && p[XR_AP_k_x] < D) T = BK * p[XR_AP_k_x]; /* a run of slots x one d-chunk */
  if (T < BK) T = BK;
  if (T < 16 * round_up(D, 16)) T = 16 * round_up(D, 16); /* 16 token rows to transpose */
  size_t floats[] = {(size_t)(rows * D), (size_t)(D * BK), (size_t)(BK * Dvp), (size_t)(R4 * BK),
                     (size_t)(rows * Dvp), (size_t)rows, (size_t)rows, (size_t)T};
  size_t total = 0;
  for (size_t i = 0; i < 8; i++) total += round_up((int64_t)floats[i], 16) * sizeof(float);
  total += 2 * (size_t)round_up(R4, 8) * sizeof(int64_t);
  w->block = aligned_alloc(64, (size_t)round_up((int64_t)total, 64));
  if (!w->block) return false;
  memset(w->block, 0, total);
  float *f = w->block;
  float **dst[] = {&w->q, &w->kt, &w->v, &w->s, &w->acc, &w->m, &w->l, &w->tmp};
  for (size_t i = 0; i < 8; i++) *dst[i] = f, f += round_up((int64_t)floats[i], 16);
  w->lo = (int64_t *)f, w->hi = w->lo + round_up(R4, 8);
  return true;
}

/* S[r][0..63] = Q[r] . Kt[:, 0..63] for rows r < R4 (a multiple of 4). The unrolled loops
 * keep the 16 accumulators in registers. */
HOT void qk_tile(const float *q, int64_t D, const float *kt, float *s, int64_t R4) {
  for (int64_t r = 0; r < R4; r += MR) {
    vf c[MR][4];
#pragma GCC unroll 4
    for (int rr = 0; rr < MR; rr++)
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++) c[rr][j] = (vf){0};
    const float *q0 = q + r * D;
    for (int64_t d = 0; d < D; d++) {
      const float *k = kt + d * BK;
      vf k0 = vload(k), k1 = vload(k + 16), k2 = vload(k + 32), k3 = vload(k + 48);
#pragma GCC unroll 4
      for (int rr = 0; rr < MR; rr++) {
        float qv = q0[rr * D + d];
        c[rr][0] += qv * k0, c[rr][1] += qv * k1, c[rr][2] += qv * k2, c[rr][3] += qv * k3;
      }
    }
#pragma GCC unroll 4
    for (int rr = 0; rr < MR; rr++)
#pragma GCC unroll 4
      for (int j = 0; j < 4; j++) vstore(s + (r + rr) * BK + j * 16, c[rr][j]);
  }
}

/* acc[r][:] += P[r][0..n) . V[0..n)[:] for rows r < R4; Dvp a multiple of 64. */
HOT void pv_tile(const float *pm, const float *v, int64_t n, float *acc, int64_t Dvp, int64_t R4) {
  for (int64_t r = 0; r < R4; r += MR) {
    for (int64_t d0 = 0; d0 < Dvp; d0 += 64) {
      vf c[MR][4];
#pragma GCC unroll 4
      for (int rr = 0; rr < MR; rr++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) c[rr][j] = vload(acc + (r + rr) * Dvp + d0 + j * 16);
      for (int64_t t = 0; t < n; t++) {
        const float *vr = v + t * Dvp + d0;
        vf v0 = vload(vr), v1 = vload(vr + 16), v2 = vload(vr + 32), v3 = vload(vr + 48);
#pragma GCC unroll 4
        for (int rr = 0; rr < MR; rr++) {
          float pv = pm[(r + rr) * BK + t];
          c[rr][0] += pv * v0, c[rr][1] += pv * v1, c[rr][2] += pv * v2, c[rr][3] += pv * v3;
        }
      }
#pragma GCC unroll 4
      for (int rr = 0; rr < MR; rr++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) vstore(acc + (r + rr) * Dvp + d0 + j * 16, c[rr][j]);
    }
  }
}

/* Kt[d][j] for keys j0 .. j0 + n; columns past n are zero. vLLM's key cache [block][head]
 * [d / x][slot][x] holds a page's slots of one d-chunk contiguously: those runs are converted
 * whole, then transposed; other layouts go 16 tokens at a time, their rows converted into
 * tmp[16][Dp] and transposed in registers. */
HOT void gather_k(const cpu_state_t *st, scratch_t *w, int64_t b, const xr_attn_seq_t *seq, int64_t kvh,
                  int64_t j0, int64_t n) {
  const xr_attn_problem_t *a = st->a;
  const int64_t *p = a->p;
  int64_t D = p[XR_AP_head_dim], Dp = round_up(D, 16), x = p[XR_AP_k_x], ps = p[XR_AP_page_size];
  bool runs = x < D && p[XR_AP_k_sd] == 1 && p[XR_AP_k_ss] == x;
  for (int64_t j = 0; j < n;) {
    int64_t ki, vi, t = j0 + j;
    xr_attn_token(a, &st->h, b, seq, t, &ki, &vi);
    ki += kvh * p[XR_AP_k_sh];
    if (runs) {
      int64_t run = n - j;
      if (p[XR_AP_paged] && ps - t % ps < run) run = ps - t % ps;
      for (int64_t c = 0; c < D / x; c++) {
        cvt_run(w->tmp, st->h.base[XR_AT_K], a->kv_dtype, ki + c * p[XR_AP_k_sdx], run * x, 1, st->lut_k);
        for (int64_t e = 0; e < x; e++) {
          float *dst = w->kt + (c * x + e) * BK + j;
          for (int64_t s = 0; s < run; s++) dst[s] = w->tmp[s * x + e];
        }
      }
      j += run;
      continue;
    }
    for (int64_t s = 0; s < 16; s++) {
      float *row = w->tmp + s * Dp;
      if (j + s >= n) {
        memset(row, 0, sizeof(float) * (size_t)Dp);
        continue;
      }
      memset(row + D, 0, sizeof(float) * (size_t)(Dp - D));
      if (s > 0) {
        xr_attn_token(a, &st->h, b, seq, t + s, &ki, &vi);
        ki += kvh * p[XR_AP_k_sh];
      }
      for (int64_t c = 0; c < D / x; c++)
        cvt_run(row + c * x, st->h.base[XR_AT_K], a->kv_dtype, ki + c * p[XR_AP_k_sdx], x, p[XR_AP_k_sd], st->lut_k);
    }
    for (int64_t d0 = 0; d0 < D; d0 += 16) {
      vf r[16];
      for (int s = 0; s < 16; s++) r[s] = vload(w->tmp + s * Dp + d0);
      transpose16(r);
      for (int64_t e = 0; e < 16 && d0 + e < D; e++) vstore(w->kt + (d0 + e) * BK + j, r[e]);
    }
    j += 16;
  }
  if (n < BK)
    for (int64_t d = 0; d < D; d++) memset(w->kt + d * BK + n, 0, sizeof(float) * (size_t)(BK - n));
}

/* V[j][:] for keys j0 .. j0 + n: token rows when the head dim is contiguous, else runs of
 * consecutive slots (vLLM's value cache [block][head][dim][slot]) transposed. */
HOT void gather_v(const cpu_state_t *st, scratch_t *w, int64_t b, const xr_attn_seq_t *seq, int64_t kvh,
                  int64_t j0, int64_t n, int64_t Dvp) {
  const xr_attn_problem_t *a = st->a;
  const int64_t *p = a->p;
  int64_t Dv = p[XR_AP_head_dim_v], ps = p[XR_AP_page_size];
  bool rows = p[XR_AP_v_sd] == 1 || p[XR_AP_v_ss] != 1;
  for (int64_t j = 0; j < n;) {
    int64_t ki, vi, t = j0 + j;
    xr_attn_token(a, &st->h, b, seq, t, &ki, &vi);
    vi += kvh * p[XR_AP_v_sh];
    if (rows) {
      cvt_run(w->v + j * Dvp, st->h.base[XR_AT_V], a->kv_dtype, vi, Dv, p[XR_AP_v_sd], st->lut_v);
      j++;
      continue;
    }
    int64_t run = n - j;
    if (p[XR_AP_paged] && ps - t % ps < run) run = ps - t % ps;
    for (int64_t d = 0; d < Dv; d++) {
      cvt_run(w->tmp, st->h.base[XR_AT_V], a->kv_dtype, vi + d * p[XR_AP_v_sd], run, 1, st->lut_v);
      for (int64_t s = 0; s < run; s++) w->v[(j + s) * Dvp + d] = w->tmp[s];
    }
    j += run;
  }
}

/* Asks for the keys and values of heads kvh0 .. kvh0 + nh at tokens j0 .. j0 + n into L2 while
 * the tile before them is computed: token-major rows sit a page or more apart, past what the
 * hardware prefetchers follow. Only for unit-stride rows (a head's run is then one span). */
HOT void prefetch_tile(const cpu_state_t *st, int64_t b, const xr_attn_seq_t *seq, int64_t kvh0, int64_t nh,
                       int64_t j0, int64_t n) {
  const xr_attn_problem_t *a = st->a;
  const int64_t *p = a->p;
  if (p[XR_AP_k_sd] != 1 || p[XR_AP_k_x] != p[XR_AP_head_dim] || p[XR_AP_v_sd] != 1 || p[XR_AP_k_sh] < 0 ||
      p[XR_AP_v_sh] < 0)
    return;
  size_t esz = xr_dtype_size(a->kv_dtype);
  int64_t kspan = (nh - 1) * p[XR_AP_k_sh] + p[XR_AP_head_dim], vspan = (nh - 1) * p[XR_AP_v_sh] + p[XR_AP_head_dim_v];
  for (int64_t t = j0; t < j0 + n; t++) {
    int64_t ki, vi;
    xr_attn_token(a, &st->h, b, seq, t, &ki, &vi);
    const char *k = (const char *)st->h.base[XR_AT_K] + (size_t)(ki + kvh0 * p[XR_AP_k_sh]) * esz;
    const char *v = (const char *)st->h.base[XR_AT_V] + (size_t)(vi + kvh0 * p[XR_AP_v_sh]) * esz;
    for (size_t o = 0; o < (size_t)kspan * esz; o += 64) __builtin_prefetch(k + o, 0, 2);
    for (size_t o = 0; o < (size_t)vspan * esz; o += 64) __builtin_prefetch(v + o, 0, 2);
  }
}

/* dst[d] = src[d] * mul in the output's dtype; fp32 and bf16 (round to nearest even, NaN kept
 * quiet, as xr_f32_to_bf16) rows of unit stride a vector at a time. */
HOT void store_row(void *base, xr_dtype_t dt, int64_t index, int64_t stride, const float *src, int64_t n,
                   float mul) {
  int64_t d = 0;
  if (stride == 1 && dt == XR_DTYPE_F32)
    for (; d + VW <= n; d += VW) vstore((float *)base + index + d, vload(src + d) * mul);
  if (stride == 1 && dt == XR_DTYPE_BF16)
    for (; d + VW <= n; d += VW) vstore_bf16((uint16_t *)base + index + d, vload(src + d) * mul);
  for (; d < n; d++) xr_store_element(base, dt, index + d * stride, (double)(src[d] * mul));
}

/* An output row: store_row, or with an output scale (an fp8 output) each value times
 * 1 / output_scale and clamped first; e4m3 outputs through the branch-free encoder. */
HOT void store_out(const cpu_state_t *st, int64_t index, int64_t stride, const float *src, int64_t n, float mul) {
  xr_dtype_t dt = st->a->o_dtype;
  if (st->h.o_max == INFINITY) {
    store_row(st->h.out, dt, index, stride, src, n, mul);
    return;
  }
  if (dt != XR_DTYPE_F8E4M3FN && dt != XR_DTYPE_F8E4M3FNUZ) {
    for (int64_t d = 0; d < n; d++)
      xr_store_element(st->h.out, dt, index + d * stride, (double)xr_attn_output(&st->h, src[d] * mul));
    return;
  }
  xr_fp8_format_t f = xr_fp8_format(dt);
  uint8_t *out = st->h.out;
  for (int64_t d = 0; d < n; d++)
    out[index + d * stride] = xr_fp8_encode(xr_attn_output(&st->h, src[d] * mul), &f);
}

/* A query block of one sequence and key partition: queries i0 .. i0 + nq, keys plo .. phi. */
typedef struct qblock {
  int64_t b, i0, nq, plo, phi, part;
  xr_attn_seq_t seq;
} qblock_t;

/* The block's rows for kv heads kvh0 .. kvh0 + nh, walked over the key tiles together: each
 * head has R4h rows (a multiple of MR), row hh * R4h + g * nq + ii being query head
 * (kvh0 + hh) * G + g, query i0 + ii; queries pre-scaled. Key ranges depend on the query only. */
CLONES static void run_heads(const cpu_state_t *st, scratch_t *w, const qblock_t *qb, int64_t kvh0, int64_t nh) {
  const xr_attn_problem_t *a = st->a;
  const int64_t *p = a->p;
  const xr_attn_seq_t *seq = &qb->seq;
  int64_t b = qb->b, i0 = qb->i0, nq = qb->nq, part = qb->part;
  int64_t G = p[XR_AP_group], D = p[XR_AP_head_dim], Dv = p[XR_AP_head_dim_v], Dvp = round_up(Dv, 64);
  int64_t R = G * nq, R4h = round_up(R, MR);
  float scale = xr_attn_float(a, XR_AP_scale_bits), cap = xr_attn_float(a, XR_AP_softcap_bits);
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int64_t r = 0; r < R; r++) {
    xr_attn_key_range(a, seq, i0 + r % nq, &w->lo[r], &w->hi[r]);
    if (w->lo[r] < qb->plo) w->lo[r] = qb->plo;
    if (w->hi[r] > qb->phi) w->hi[r] = qb->phi;
    if (w->lo[r] < w->hi[r]) {
      if (w->lo[r] < lo) lo = w->lo[r];
      if (w->hi[r] > hi) hi = w->hi[r];
    }
  }
  for (int64_t hh = 0; hh < nh; hh++)
    for (int64_t r = 0; r < R4h; r++) {
      int64_t row = hh * R4h + r;
      float *qr = w->q + row * D;
      w->m[row] = -INFINITY, w->l[row] = 0;
      memset(w->acc + row * Dvp, 0, sizeof(float) * (size_t)Dvp);
      if (r >= R) {
        memset(qr, 0, sizeof(float) * (size_t)D);
        continue;
      }
      int64_t head = (kvh0 + hh) * G + r / nq, i = i0 + r % nq;
      int64_t qi = p[XR_AP_q_off] + b * p[XR_AP_q_sb] + (seq->qstart + i) * p[XR_AP_q_ss] + head * p[XR_AP_q_sh];
      cvt_run(qr, st->h.base[XR_AT_Q], a->q_dtype, qi, D, p[XR_AP_q_sd], st->lut_q);
      for (int64_t d = 0; d < D; d++) qr[d] *= scale;
    }
  for (int64_t j0 = lo; j0 < hi; j0 += BK) {
    int64_t n = hi - j0 < BK ? hi - j0 : BK;
    if (j0 + BK < hi) prefetch_tile(st, b, seq, kvh0, nh, j0 + BK, hi - j0 - BK < BK ? hi - j0 - BK : BK);
    for (int64_t hh = 0; hh < nh; hh++) {
      int64_t kvh = kvh0 + hh;
      float *m = w->m + hh * R4h, *l = w->l + hh * R4h, *acc = w->acc + hh * R4h * Dvp;
      gather_k(st, w, b, seq, kvh, j0, n);
      gather_v(st, w, b, seq, kvh, j0, n, Dvp);
      qk_tile(w->q + hh * R4h * D, D, w->kt, w->s, R4h);
      for (int64_t r = 0; r < R; r++) {
        float *s = w->s + r * BK;
        int64_t ja = w->lo[r] - j0, jb = w->hi[r] - j0;
        if (ja < 0) ja = 0;
        if (jb > n) jb = n;
        if (ja >= jb) {
          memset(s, 0, sizeof(float) * BK);
          continue;
        }
        int64_t g = r / nq, i = i0 + r % nq;
        for (int64_t j = 0; j < ja; j++) s[j] = -INFINITY;
        for (int64_t j = jb; j < BK; j++) s[j] = -INFINITY;
        if (cap > 0)
          for (int64_t j = ja; j < jb; j++) s[j] = cap * tanhf(s[j] / cap);
        if (st->bias)
          for (int64_t j = ja; j < jb; j++)
            s[j] += (float)xr_attn_bias(a, &st->h, b, seq, kvh * G + g, i, j0 + j);
        vf mv = vload(s);
        for (int j = 1; j < 4; j++) {
          vf o = vload(s + 16 * j);
          mv = (vf)(((vi)mv & (vi)(mv >= o)) | ((vi)o & (vi)(mv < o)));
        }
        float mt = hmax(mv), mnew = mt > m[r] ? mt : m[r];
        if (mnew == -INFINITY) {
          memset(s, 0, sizeof(float) * BK);
          continue;
        }
        vf sum = {0};
        for (int j = 0; j < 4; j++) {
          vf e = vexp_nonpositive(vload(s + 16 * j) - mnew);
          vstore(s + 16 * j, e);
          sum += e;
        }
        float alpha = m[r] == -INFINITY ? 0.0f : vexp_nonpositive((vf){0} + (m[r] - mnew))[0];
        l[r] = l[r] * alpha + hsum(sum);
        m[r] = mnew;
        if (alpha != 1.0f) {
          float *ar = acc + r * Dvp;
          for (int64_t d = 0; d < Dvp; d += VW) vstore(ar + d, vload(ar + d) * alpha);
        }
      }
      for (int64_t r = R; r < R4h; r++) memset(w->s + r * BK, 0, sizeof(float) * BK);
      pv_tile(w->s, w->v, n, acc, Dvp, R4h);
    }
  }
  for (int64_t hh = 0; hh < nh; hh++)
    for (int64_t r = 0; r < R; r++) {
      int64_t row = hh * R4h + r, head = (kvh0 + hh) * G + r / nq, i = i0 + r % nq;
      float inv = w->l[row] > 0 ? 1.0f / w->l[row] : 0.0f;
      if (p[XR_AP_part_size] > 0) {
        ((float *)st->h.max_logits)[p[XR_AP_ml_off] + b * p[XR_AP_ml_sb] + head * p[XR_AP_ml_sh] +
                                    part * p[XR_AP_ml_sp]] = w->m[row];
        ((float *)st->h.exp_sums)[p[XR_AP_es_off] + b * p[XR_AP_es_sb] + head * p[XR_AP_es_sh] +
                                  part * p[XR_AP_es_sp]] = w->l[row];
        store_row(st->h.tmp_out, a->o_dtype,
                  p[XR_AP_to_off] + b * p[XR_AP_to_sb] + head * p[XR_AP_to_sh] + part * p[XR_AP_to_sp],
                  p[XR_AP_to_sd], w->acc + row * Dvp, Dv, inv);
        continue;
      }
      store_out(st, p[XR_AP_o_off] + b * p[XR_AP_o_sb] + (seq->qstart + i) * p[XR_AP_o_ss] + head * p[XR_AP_o_sh],
                p[XR_AP_o_sd], w->acc + row * Dvp, Dv, inv);
      if (p[XR_AP_lse_off] >= 0)
        ((float *)st->h.lse)[p[XR_AP_lse_off] + b * p[XR_AP_lse_sb] + head * p[XR_AP_lse_sh] +
                             (seq->qstart + i) * p[XR_AP_lse_ss]] =
            w->l[row] > 0 ? w->m[row] + logf(w->l[row]) : xr_attn_float(a, XR_AP_empty_lse_bits);
    }
}

/* One work item: (sequence, hc kv heads, query block, key partition). A block with few rows a
 * head (decode) walks the keys once for all hc heads, so each tile of a token-major cache is
 * read while its lines are fresh; a larger block takes the heads one after another. */
static void run_item(const cpu_state_t *st, scratch_t *w, int64_t item) {
  const xr_attn_problem_t *a = st->a;
  const int64_t *p = a->p;
  qblock_t qb = {.part = item % st->parts};
  int64_t rest = item / st->parts;
  /* Last query blocks first: under a causal mask they see the most keys, and the pool's dynamic
   * claiming balances the threads best when the small items come last. */
  int64_t block = st->qblocks - 1 - rest % st->qblocks;
  rest /= st->qblocks;
  int64_t chunks = p[XR_AP_kv_heads] / st->hc, kvh0 = rest % chunks * st->hc, G = p[XR_AP_group];
  qb.b = rest / chunks;
  qb.seq = xr_attn_seq(a, &st->h, qb.b);
  if (p[XR_AP_lse_off] >= 0 && block == 0 && qb.part == 0) /* padding rows of the efficient kernel */
    for (int64_t head = kvh0 * G; head < (kvh0 + st->hc) * G; head++)
      for (int64_t i = qb.seq.q_len; i < p[XR_AP_lse_rows]; i++)
        ((float *)st->h.lse)[p[XR_AP_lse_off] + qb.b * p[XR_AP_lse_sb] + head * p[XR_AP_lse_sh] + i] = INFINITY;
  qb.i0 = block * st->bq;
  if (qb.i0 >= qb.seq.q_len) return;
  qb.nq = qb.seq.q_len - qb.i0 < st->bq ? qb.seq.q_len - qb.i0 : st->bq;
  qb.plo = 0, qb.phi = qb.seq.k_len;
  if (p[XR_AP_part_size] > 0) {
    qb.plo = qb.part * p[XR_AP_part_size];
    if (qb.plo >= qb.seq.k_len) return; /* vLLM leaves partitions past the sequence untouched */
    qb.phi = qb.plo + p[XR_AP_part_size] < qb.seq.k_len ? qb.plo + p[XR_AP_part_size] : qb.seq.k_len;
  }
  if (G * qb.nq <= DECODE_ROWS) {
    run_heads(st, w, &qb, kvh0, st->hc);
    return;
  }
  for (int64_t kvh = kvh0; kvh < kvh0 + st->hc; kvh++) run_heads(st, w, &qb, kvh, 1);
}

static void run_items(void *ctx, size_t begin, size_t end) {
  const cpu_state_t *st = ctx;
  scratch_t w;
  if (!scratch_alloc(st, &w)) return; /* outputs stay poisoned; the check reports it */
  for (size_t item = begin; item < end; item++) run_item(st, &w, (int64_t)item);
  free(w.block);
}

/* paged_attention_v2's reduction: out = sum_p tmp_out_p * w_p / sum_p w_p with
 * w_p = exp_sums_p * exp(max_logits_p - max); one partition is copied. */
static void combine_rows(void *ctx, size_t begin, size_t end) {
  const cpu_state_t *st = ctx;
  const xr_attn_problem_t *a = st->a;
  const int64_t *p = a->p;
  int64_t H = p[XR_AP_heads], Dv = p[XR_AP_head_dim_v];
  float *acc = malloc(sizeof(float) * (size_t)Dv);
  if (!acc) return;
  for (size_t item = begin; item < end; item++) {
    int64_t b = (int64_t)item / H, head = (int64_t)item % H;
    xr_attn_seq_t seq = xr_attn_seq(a, &st->h, b);
    int64_t parts = (seq.k_len + p[XR_AP_part_size] - 1) / p[XR_AP_part_size];
    const float *ml = (const float *)st->h.max_logits + p[XR_AP_ml_off] + b * p[XR_AP_ml_sb] + head * p[XR_AP_ml_sh];
    const float *es = (const float *)st->h.exp_sums + p[XR_AP_es_off] + b * p[XR_AP_es_sb] + head * p[XR_AP_es_sh];
    float gmax = -INFINITY, gsum = 0;
    for (int64_t k = 0; k < parts; k++) gmax = ml[k * p[XR_AP_ml_sp]] > gmax ? ml[k * p[XR_AP_ml_sp]] : gmax;
    memset(acc, 0, sizeof(float) * (size_t)Dv);
    for (int64_t k = 0; k < parts; k++) {
      float wk = parts == 1 ? 1.0f : es[k * p[XR_AP_es_sp]] * expf(ml[k * p[XR_AP_ml_sp]] - gmax);
      gsum += wk;
      int64_t to = p[XR_AP_to_off] + b * p[XR_AP_to_sb] + head * p[XR_AP_to_sh] + k * p[XR_AP_to_sp];
      for (int64_t d = 0; d < Dv; d++)
        acc[d] += wk * (float)xr_load_element(st->h.tmp_out, a->o_dtype, to + d * p[XR_AP_to_sd]);
    }
    store_out(st, p[XR_AP_o_off] + b * p[XR_AP_o_sb] + head * p[XR_AP_o_sh], p[XR_AP_o_sd], acc, Dv,
              gsum > 0 ? 1.0f / gsum : 0.0f);
  }
  free(acc);
}

static void begin_run(void *ctx) {
  cpu_state_t *st = ctx;
  const xr_attn_problem_t *a = st->a;
  const int64_t *p = a->p;
  xr_attn_zero_host_outputs(a, st->bound);
  xr_attn_host_begin(a, &st->h);
  if (xr_dtype_is_fp8(a->q_dtype))
    for (int i = 0; i < 256; i++) st->lut_q[i] = xr_fp8_to_f32((uint8_t)i, a->q_dtype) * st->h.q_scale;
  float ks = p[XR_AP_k_scale_off] >= 0 ? ((const float *)st->h.base[XR_AT_K_SCALE])[p[XR_AP_k_scale_off]]
                                        : xr_attn_float(a, XR_AP_k_scale_bits);
  float vs = p[XR_AP_v_scale_off] >= 0 ? ((const float *)st->h.base[XR_AT_V_SCALE])[p[XR_AP_v_scale_off]]
                                        : xr_attn_float(a, XR_AP_v_scale_bits);
  if (p[XR_AP_kv_fp8])
    for (int i = 0; i < 256; i++) {
      st->lut_k[i] = xr_fp8_to_f32((uint8_t)i, a->kv_dtype) * ks;
      st->lut_v[i] = xr_fp8_to_f32((uint8_t)i, a->kv_dtype) * vs;
    }
}

static xr_status_t cpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_attn_problem_t *a = plan->problem;
  if (a->p[XR_AP_head_dim] % a->p[XR_AP_k_x])
    return xr_error(XR_UNIMPLEMENTED, "cpu.attention: head size %lld is not a multiple of the key split %lld",
                    (long long)a->p[XR_AP_head_dim], (long long)a->p[XR_AP_k_x]);
  return xr_attn_supported(plan);
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                               void **out_state) {
  (void)device;
  size_t n = plan->input_count + plan->return_count;
  cpu_state_t *st = calloc(1, sizeof *st + n * sizeof(xr_tensor_t));
  if (!st) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  const xr_attn_problem_t *a = plan->problem;
  const int64_t *p = a->p;
  st->a = a;
  st->bound = (xr_tensor_t *)(st + 1);
  memcpy(st->bound, tensors, n * sizeof(xr_tensor_t));
  xr_status_t s = xr_attn_host_bind(a, tensors, &st->h);
  if (s != XR_OK) {
    free(st);
    return s;
  }
  /* About 64 rows per item share each key tile: a block of queries times the group's heads. */
  int64_t G = p[XR_AP_group], bq = 64 / G > 0 ? 64 / G : 1;
  st->bq = p[XR_AP_max_q] < bq ? (p[XR_AP_max_q] > 0 ? p[XR_AP_max_q] : 1) : bq;
  st->qblocks = (p[XR_AP_max_q] + st->bq - 1) / st->bq;
  if (st->qblocks < 1) st->qblocks = 1;
  st->parts = p[XR_AP_part_size] > 0 ? p[XR_AP_part_count] : 1;
  if (st->parts < 1) st->parts = 1;
  /* In a token-major cache (FlashAttention's NHD layout: a token's kv heads side by side) an
   * item of one kv head reads a head_size run from every slot, and the other heads' items
   * fetch the same pages again later; decode items of hc heads walk the keys once for all of
   * them. hc stays small enough to leave at least 8 items a query block to the pool. */
  int64_t Hk = p[XR_AP_kv_heads];
  bool token_major = llabs(p[XR_AP_k_sh]) < llabs(p[XR_AP_k_ss]);
  bool decode = G <= DECODE_ROWS && (p[XR_AP_cu_q_off] >= 0 || G * p[XR_AP_max_q] <= DECODE_ROWS);
  st->hc = 1;
  for (int64_t h = Hk; h > 1 && token_major && decode && st->hc == 1; h--)
    if (Hk % h == 0 && p[XR_AP_batch] * (Hk / h) >= 8) st->hc = h;
  int64_t decode_rows = round_up(G * st->bq < DECODE_ROWS ? G * st->bq : DECODE_ROWS, MR);
  st->rows = round_up(G * st->bq, MR);
  if (st->rows < st->hc * decode_rows) st->rows = st->hc * decode_rows;
  st->items = p[XR_AP_batch] * (Hk / st->hc) * st->qblocks * st->parts;
  st->bias = p[XR_AP_alibi_off] >= 0 || p[XR_AP_mask_kind] != XR_ATTN_MASK_NONE;
  *out_state = st;
  return XR_OK;
}

static xr_status_t cpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_state_t *st = state;
  const int64_t *p = st->a->p;
  xr_status_t s = xr_hal_stream_enqueue_host(stream, begin_run, st);
  if (s == XR_OK && st->items > 0) s = xr_hal_stream_enqueue_parallel(stream, (size_t)st->items, 1, run_items, st);
  if (s == XR_OK && p[XR_AP_part_size] > 0)
    s = xr_hal_stream_enqueue_parallel(stream, (size_t)(p[XR_AP_batch] * p[XR_AP_heads]), 4, combine_rows, st);
  return s;
}

const xr_kernel_impl_t xr_attn_cpu_impl = {
    .name = "cpu.flash_attention",
    .driver = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .enqueue = cpu_enqueue,
    .release = free,
};
