// Flash-style attention forward for every op of the attention and paged-attention families
// (kernels/attention.h's problem), its partition reduction and the KV-cache writer.
//
// One work-item owns one query row (query position i, head kvh * GROUP + g); a work-group holds
// WG consecutive rows of one (sequence, kv head), so every row of a GQA group shares the key
// and value tiles the group stages in local memory, BK tokens at a time. Each row keeps its
// running max, running sum and fp32 accumulators (online softmax): only BK scores per row exist
// at any time, never the score matrix. Grid: (row blocks, sequences x kv heads, partitions).
//
// Element kinds and fp8 formats are arguments (kernels/attention_args.h: q_elem, kv_elem, o_elem
// and their formats), so one build serves every op. fp8 queries are dequantised with q_scale;
// with an output scale (o_scale_off >= 0) an output is o / output_scale, clamped to its fp8
// range (o_max). The argument blocks (xr_attn_args_t, xr_cache_args_t) come by value, last, as
// on CUDA; kernels/attention_device.c fills them for both.

#include "float_formats_cl.h"
#include "attention_args.h"

#define P(name) p->name
#define WG XR_ATTN_OPENCL_THREADS
#define BK XR_ATTN_BK
#define DMAX XR_ATTN_DMAX

inline long load_idx(const __global uchar *base, long off, long is64, long i) {
  return is64 ? ((const __global long *)base)[off + i] : (long)((const __global int *)base)[off + i];
}

/* The layout of fp8 format `code` (XR_ATTN_F8*). */
inline xr_fp8_format_t attn_fp8(long code) {
  return xr_fp8_format_of(code == XR_ATTN_F8E4M3FN || code == XR_ATTN_F8E4M3FNUZ ? 3 : 2,
                          code == XR_ATTN_F8E4M3FNUZ || code == XR_ATTN_F8E5M2FNUZ);
}

/* An element of kind f32, f16, bf16 (XR_ATTN_ELEM_*), or a byte (bool / uint8 masks). */
inline float load_elem(const __global uchar *base, long elem, long i) {
  if (elem == XR_ATTN_ELEM_F32) return ((const __global float *)base)[i];
  if (elem == XR_ATTN_ELEM_F16) return vload_half(i, (const __global half *)base);
  if (elem == XR_ATTN_ELEM_BF16) return xr_bf16_to_f32(((const __global ushort *)base)[i]);
  return (float)base[i];
}

/* Element i of kind `elem`, fp8 in format `format`. */
inline float load_kind(const __global uchar *base, long elem, long format, long i) {
  if (elem != XR_ATTN_ELEM_FP8) return load_elem(base, elem, i);
  xr_fp8_format_t f = attn_fp8(format);
  return xr_fp8_decode(base[i], &f);
}

/* A query element: of its kind, or an fp8 query times q_scale. */
inline float load_q(const xr_attn_args_t *p, const __global uchar *base, long i) {
  const float v = load_kind(base, P(q_elem), P(q_fp8), i);
  return P(q_elem) == XR_ATTN_ELEM_FP8 ? v * P(q_scale) : v;
}

/* A key or value element; an fp8 cache's times its scale. */
inline float load_kv(const xr_attn_args_t *p, const __global uchar *base, long i, float scale) {
  const float x = load_kind(base, P(kv_elem), P(fp8_format), i);
  return P(kv_elem) == XR_ATTN_ELEM_FP8 ? x * scale : x;
}

/* Element i of kind `elem`, fp8 in format `format`. */
inline void store_elem(__global uchar *base, long elem, long format, long i, float v) {
  if (elem == XR_ATTN_ELEM_F32) {
    ((__global float *)base)[i] = v;
  } else if (elem == XR_ATTN_ELEM_F16) {
    vstore_half_rte(v, i, (__global half *)base);
  } else if (elem == XR_ATTN_ELEM_BF16) {
    ((__global ushort *)base)[i] = xr_f32_to_bf16(v);
  } else {
    xr_fp8_format_t f = attn_fp8(format);
    base[i] = xr_fp8_encode(v, &f);
  }
}

/* An output element (out or tmp_out). `inv`: 1 / the output scale when there is one (then the
 * value is clamped to the format's range first). */
inline void store_out(const xr_attn_args_t *p, __global uchar *base, long i, float v, float inv) {
  if (P(o_scale_off) >= 0) {
    v *= inv;
    v = v > P(o_max) ? P(o_max) : v < -P(o_max) ? -P(o_max) : v;
  }
  store_elem(base, P(o_elem), P(o_fp8), i, v);
}

typedef struct seq {
  long q_len, k_len, qstart, kstart, diag;
} seq_t;

inline seq_t get_seq(const xr_attn_args_t *p, const __global uchar *cu_q, const __global uchar *cu_k,
                     const __global uchar *lens, const __global uchar *indptr, long b) {
  seq_t s;
  s.q_len = P(max_q), s.k_len = P(max_k), s.qstart = 0, s.kstart = 0;
  if (P(cu_q_off) >= 0) {
    s.qstart = load_idx(cu_q, P(cu_q_off), P(cu_q_64), b);
    s.q_len = load_idx(cu_q, P(cu_q_off), P(cu_q_64), b + 1) - s.qstart;
  }
  if (P(cu_k_off) >= 0) {
    s.kstart = load_idx(cu_k, P(cu_k_off), P(cu_k_64), b);
    s.k_len = load_idx(cu_k, P(cu_k_off), P(cu_k_64), b + 1) - s.kstart;
  }
  if (P(paged) == 2)
    s.k_len = (load_idx(indptr, P(indptr_off), P(indptr_64), b + 1) -
               load_idx(indptr, P(indptr_off), P(indptr_64), b)) * P(page_size);
  if (P(lens_off) >= 0) s.k_len = load_idx(lens, P(lens_off), P(lens_64), b);
  if (s.q_len < 0) s.q_len = 0;
  if (s.k_len < 0) s.k_len = 0;
  if (s.q_len > P(max_q) && P(cu_q_off) < 0) s.q_len = P(max_q);
  s.diag = P(bottom_right) ? s.k_len - s.q_len : 0;
  return s;
}

inline void key_range(const xr_attn_args_t *p, const seq_t *s, long i, long *lo, long *hi) {
  long l = 0, r = s->k_len, c = i + s->diag;
  if (P(causal) && c + 1 < r) r = c + 1;
  if (P(window_right) >= 0 && c + P(window_right) + 1 < r) r = c + P(window_right) + 1;
  if (P(window_left) >= 0 && c - P(window_left) > l) l = c - P(window_left);
  *lo = l;
  *hi = r;
}

inline void token(const xr_attn_args_t *p, const __global uchar *table, const __global uchar *indptr, long b,
                  const seq_t *s, long t, long *ki, long *vi) {
  long page = b, slot = s->kstart + t;
  if (P(paged)) {
    long ps = P(page_size), e = t / ps;
    slot = t % ps;
    if (P(paged) == 1) {
      page = load_idx(table, P(table_off), P(table_64), b * P(table_sb) + e * P(table_sp));
    } else {
      long first = load_idx(indptr, P(indptr_off), P(indptr_64), b);
      page = load_idx(table, P(table_off), P(table_64), first + e);
    }
  }
  *ki = P(k_off) + page * P(k_sp) + slot * P(k_ss);
  *vi = P(v_off) + page * P(v_sp) + slot * P(v_ss);
}

// The tiles (BK x head_dim keys, BK x head_dim_v values) come as local-memory arguments.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void xr_attention(
    __global const uchar *q, __global const uchar *k, __global const uchar *v, __global uchar *out,
    __global float *lse, __global const uchar *cu_q, __global const uchar *cu_k,
    __global const uchar *lens, __global const uchar *table, __global const uchar *indptr,
    __global const uchar *alibi, __global const uchar *mask, __global const float *k_scale,
    __global const float *v_scale, __global float *exp_sums, __global float *max_logits,
    __global uchar *tmp_out, __global const float *o_scale, const xr_attn_args_t args,
    __local float *ktile, __local float *vtile) {
  const xr_attn_args_t *p = &args;
  __local long tk[BK], tv[BK];
  const long G = P(group), D = P(head_dim), Dv = P(head_dim_v);
  const long b = get_group_id(1) / P(kv_heads), kvh = get_group_id(1) % P(kv_heads);
  const long part = get_group_id(2);
  const int lid = get_local_id(0);
  const long row0 = (long)get_group_id(0) * WG, row = row0 + lid;
  const seq_t s = get_seq(p, cu_q, cu_k, lens, indptr, b);
  const long i = row / G, head = kvh * G + row % G;
  if (P(lse_off) >= 0 && part == 0 && i >= s.q_len && i < P(lse_rows)) /* efficient-kernel padding */
    lse[P(lse_off) + b * P(lse_sb) + head * P(lse_sh) + i] = INFINITY;
  long i_first = row0 / G, i_last = (row0 + WG - 1) / G;
  if (i_first >= s.q_len) return; /* the whole work-group: no barrier is skipped by a part */
  if (i_last >= s.q_len) i_last = s.q_len - 1;
  long plo = 0, phi = s.k_len;
  if (P(part_size) > 0) {
    plo = part * P(part_size);
    if (plo >= s.k_len) return; /* vLLM leaves partitions past the sequence untouched */
    phi = min(plo + P(part_size), s.k_len);
  }
  /* The rows' key ranges grow with i: the group needs [range(i_first).lo, range(i_last).hi). */
  long glo, ghi, unused;
  key_range(p, &s, i_first, &glo, &unused);
  key_range(p, &s, i_last, &unused, &ghi);
  glo = max(glo, plo);
  ghi = min(ghi, phi);

  const bool valid = i < s.q_len;
  const float scale = P(scale), cap = P(softcap);
  const float ks = P(k_scale_off) >= 0 ? k_scale[P(k_scale_off)] : P(k_scale);
  const float vs = P(v_scale_off) >= 0 ? v_scale[P(v_scale_off)] : P(v_scale);
  float qv[DMAX], acc[DMAX], sc[BK];
  float m = -INFINITY, l = 0.0f, slope = 0.0f;
  long lo = 0, hi = 0;
  if (valid) {
    long qi = P(q_off) + b * P(q_sb) + (s.qstart + i) * P(q_ss) + head * P(q_sh);
    for (long d = 0; d < D; d++) qv[d] = load_q(p, q, qi + d * P(q_sd)) * scale;
    for (long d = 0; d < Dv; d++) acc[d] = 0.0f;
    key_range(p, &s, i, &lo, &hi);
    lo = max(lo, plo);
    hi = min(hi, phi);
    if (P(alibi_off) >= 0)
      slope = load_elem(alibi, P(alibi_elem), P(alibi_off) + b * P(alibi_sb) + head * P(alibi_sh));
  }
  for (long t0 = glo; t0 < ghi; t0 += BK) {
    const int n = (int)min((long)BK, ghi - t0);
    if (lid < n) {
      long ki, vi;
      token(p, table, indptr, b, &s, t0 + lid, &ki, &vi);
      tk[lid] = ki + kvh * P(k_sh);
      tv[lid] = vi + kvh * P(v_sh);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (long e = lid; e < n * D; e += WG) {
      long j = e / D, d = e % D;
      ktile[e] = load_kv(p, k, tk[j] + (d / P(k_x)) * P(k_sdx) + (d % P(k_x)) * P(k_sd), ks);
    }
    for (long e = lid; e < n * Dv; e += WG) {
      long j = e / Dv, d = e % Dv;
      vtile[e] = load_kv(p, v, tv[j] + d * P(v_sd), vs);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (valid) {
      float mt = -INFINITY;
      for (int j = 0; j < n; j++) {
        long t = t0 + j;
        float x = -INFINITY;
        if (t >= lo && t < hi) {
          x = 0.0f;
          for (long d = 0; d < D; d++) x += qv[d] * ktile[j * D + d];
          if (cap > 0.0f) x = cap * tanh(x / cap);
          if (P(alibi_off) >= 0) x -= slope * fabs((float)(t - (i + s.diag)));
          if (P(mask_kind) != 0) {
            float mv = load_elem(mask, P(mask_elem),
                                P(mask_off) + b * P(mask_sb) + head * P(mask_sh) + i * P(mask_sq) + t * P(mask_sk));
            if (P(mask_kind) == 1) x = mv != 0.0f ? x : -INFINITY;
            else x += mv;
          }
        }
        sc[j] = x;
        mt = fmax(mt, x);
      }
      float mnew = fmax(m, mt);
      if (mnew != -INFINITY) {
        float alpha = m == -INFINITY ? 0.0f : exp(m - mnew);
        l *= alpha;
        for (long d = 0; d < Dv; d++) acc[d] *= alpha;
        for (int j = 0; j < n; j++) {
          if (sc[j] == -INFINITY) continue;
          float pj = exp(sc[j] - mnew);
          l += pj;
          for (long d = 0; d < Dv; d++) acc[d] += pj * vtile[j * Dv + d];
        }
        m = mnew;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (!valid) return;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  if (P(part_size) > 0) {
    max_logits[P(ml_off) + b * P(ml_sb) + head * P(ml_sh) + part * P(ml_sp)] = m;
    exp_sums[P(es_off) + b * P(es_sb) + head * P(es_sh) + part * P(es_sp)] = l;
    long to = P(to_off) + b * P(to_sb) + head * P(to_sh) + part * P(to_sp);
    for (long d = 0; d < Dv; d++) store_elem(tmp_out, P(o_elem), P(o_fp8), to + d * P(to_sd), acc[d] * inv);
    return;
  }
  long oi = P(o_off) + b * P(o_sb) + (s.qstart + i) * P(o_ss) + head * P(o_sh);
  const float o_inv = P(o_scale_off) >= 0 ? 1.0f / o_scale[P(o_scale_off)] : 1.0f;
  for (long d = 0; d < Dv; d++) store_out(p, out, oi + d * P(o_sd), acc[d] * inv, o_inv);
  if (P(lse_off) >= 0)
    lse[P(lse_off) + b * P(lse_sb) + head * P(lse_sh) + (s.qstart + i) * P(lse_ss)] =
        l > 0.0f ? m + log(l) : P(empty_lse);
}

// paged_attention_v2's reduction, one work-item per output element (dim, head, sequence).
__kernel void xr_attention_combine(__global const uchar *cu_q, __global const uchar *cu_k,
                                   __global const uchar *lens, __global const uchar *indptr,
                                   __global uchar *out, __global const float *exp_sums,
                                   __global const float *max_logits, __global const uchar *tmp_out,
                                   const xr_attn_args_t args) {
  const xr_attn_args_t *p = &args;
  const long d = get_global_id(0), head = get_global_id(1), b = get_global_id(2);
  if (d >= P(head_dim_v)) return;
  const seq_t s = get_seq(p, cu_q, cu_k, lens, indptr, b);
  const long parts = (s.k_len + P(part_size) - 1) / P(part_size);
  const __global float *ml = max_logits + P(ml_off) + b * P(ml_sb) + head * P(ml_sh);
  const __global float *es = exp_sums + P(es_off) + b * P(es_sb) + head * P(es_sh);
  float gmax = -INFINITY, gsum = 0.0f, acc = 0.0f;
  for (long part = 0; part < parts; part++) gmax = fmax(gmax, ml[part * P(ml_sp)]);
  for (long part = 0; part < parts; part++) {
    float w = parts == 1 ? 1.0f : es[part * P(es_sp)] * exp(ml[part * P(ml_sp)] - gmax);
    gsum += w;
    acc += w * load_kind(tmp_out, P(o_elem), P(o_fp8),
                         P(to_off) + b * P(to_sb) + head * P(to_sh) + part * P(to_sp) + d * P(to_sd));
  }
  store_elem(out, P(o_elem), P(o_fp8), P(o_off) + b * P(o_sb) + head * P(o_sh) + d * P(o_sd),
             gsum > 0.0f ? acc / gsum : 0.0f);
}

// reshape_and_cache(_flash): token t's key/value for every (head, dim) into the cache slot
// slot_mapping[t]; negative slots are padding. Grid: (tokens, element blocks), one work-item per
// (head, dim) element, as kernels/gpu/kv_cache.cu.
__kernel void xr_reshape_and_cache(__global const uchar *key, __global const uchar *value,
                                   __global uchar *key_cache, __global uchar *value_cache,
                                   __global const uchar *slots, __global const float *k_scale,
                                   __global const float *v_scale, const xr_cache_args_t c) {
  const long t = get_group_id(0), e = get_group_id(1) * get_local_size(0) + get_local_id(0);
  const long D = c.head_dim;
  if (e >= c.kv_heads * D) return;
  const long h = e / D, d = e % D;
  const long slot = load_idx(slots, c.slots_off, c.slots_64, t);
  if (slot < 0) return;
  const long blk = slot / c.block_size, off = slot % c.block_size;
  float kv = load_elem(key, c.src_elem, c.key_off + t * c.key_st + h * c.key_sh + d * c.key_sd);
  float vv = load_elem(value, c.src_elem, c.value_off + t * c.value_st + h * c.value_sh + d * c.value_sd);
  if (c.scaled) {
    kv /= c.k_scale_off >= 0 ? k_scale[c.k_scale_off] : 1.0f;
    vv /= c.v_scale_off >= 0 ? v_scale[c.v_scale_off] : 1.0f;
  }
  store_elem(key_cache, c.cache_elem, c.cache_fp8,
             c.kc_off + blk * c.kc_sb + off * c.kc_ss + h * c.kc_sh + (d / c.kc_x) * c.kc_sdx + (d % c.kc_x) * c.kc_sd,
             kv);
  store_elem(value_cache, c.cache_elem, c.cache_fp8,
             c.vc_off + blk * c.vc_sb + off * c.vc_ss + h * c.vc_sh + d * c.vc_sd, vv);
}
