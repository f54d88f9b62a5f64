// Mixture-of-experts kernels (semantics in kernels/moe.h). OpenCL C 1.2, no extensions: fp16
// goes through vload_half/vstore_half, bf16 through bit shifts. Every kernel takes its buffers
// (whole, in kernels/gpu/moe.cu's order) then kernels/moe_args.h's block, which
// kernels/moe_device.c fills for both: element types (XR_MOE_*), offsets and strides are
// run-time values there, and each kernel names the fields it reads as locals first.
//
// Sorting is a deterministic two-pass counting sort: xr_moe_count counts each chunk's ids per
// expert, xr_moe_scan turns the counts into per-chunk offsets and expert segments (one work-group),
// xr_moe_scatter writes every chunk's ids in order, so a segment lists ids ascending.
// The grouped GEMMs tile 16 sorted rows x 16 columns per work-group through local memory; a
// tile never straddles two experts because the sorted block size is a multiple of 16.
// moe_forward's layer rides on run-time arguments too: the experts' weight format (plain in the
// activations' dtype; mxfp4, decoded on the fly as the tiles load: the byte, its nibble, times
// the e8m0 scale of its 32; or fp8 of any of the four formats, decoded as the tiles load by
// base/float_formats.h's fp8 decoder, times the float32 scale of the weight's [bn, bk] block or of its expert),
// where gate and up rows sit in w1 (silu: [0, N) and [N, 2N); swigluoai: interleaved), the
// optional biases of both GEMMs and the activation.

#include "float_formats_cl.h"
#include "moe_args.h"

#define TS XR_MOE_OPENCL_TILE

// Float elements of dtype dt (XR_MOE_*); fp8 weights carry their xreplay dtype code (XR_*).
float ld(__global const uchar *b, long i, int dt) {
  if (dt == XR_MOE_F32) return ((__global const float *)b)[i];
  if (dt == XR_MOE_BF16) return xr_bf16_to_f32(((__global const ushort *)b)[i]);
  return vload_half((size_t)i, (__global const half *)b);
}

void st(__global uchar *b, long i, int dt, float v) {
  if (dt == XR_MOE_F32) ((__global float *)b)[i] = v;
  else if (dt == XR_MOE_BF16) ((__global ushort *)b)[i] = xr_f32_to_bf16(v);
  else vstore_half_rte(v, (size_t)i, (__global half *)b);
}

// v as dtype dt stores it.
float rnd(float v, int dt) {
  if (dt == XR_MOE_BF16) return xr_bf16_to_f32(xr_f32_to_bf16(v));
  if (dt == XR_MOE_F16) return xr_f16_to_f32(xr_f32_to_f16(v));
  return v;
}

// Weight formats (fmt).
#define W_PLAIN XR_MOE_W_FORMAT_PLAIN
#define W_MXFP4 XR_MOE_W_FORMAT_MXFP4
#define W_FP8 XR_MOE_W_FORMAT_FP8

// Weight k of an expert's row: plain (dtype dt) at w[row_at + k * ks]; mxfp4: nibble k % 2 (the
// lower k in the low nibble) of byte w[row_at + (k / 2) * ks], times the e8m0 scale
// sc[sc_at + (k / 32) * sks]; fp8 (format fp8_dt): byte w[row_at + k * ks] decoded, times the
// float32 scale sc[sc_at + (k / sbk) * sks]. row_at and sc_at address element 0 of the row and of
// its scales' row (see scale_row).
float ld_w(__global const uchar *w, long row_at, long ks, int dt, int fmt, int fp8_dt,
           __global const uchar *sc, long sc_at, long sks, long sbk, long k) {
  if (fmt == W_PLAIN) return ld(w, row_at + k * ks, dt);
  if (fmt == W_MXFP4) {
    uint pair = w[row_at + (k >> 1) * ks];
    return xr_e2m1_to_f32((uchar)(k & 1 ? pair >> 4 : pair)) * xr_e8m0_to_f32(sc[sc_at + (k >> 5) * sks]);
  }
  return xr_fp8_decode_code(w[row_at + k * ks], fp8_dt) * ((__global const float *)sc)[sc_at + (k / sbk) * sks];
}

// The row of a weight's scales: the weight's own row (mxfp4), or its block of sbn rows (fp8; one
// scale per expert has a scale row stride of 0).
long scale_row(int fmt, long row, long sbn) { return fmt == W_FP8 ? row / sbn : row; }

// act 0: silu(g) * u; 1: moe_forward's swigluoai (GPT-OSS): g clamped above at limit, u on both
// sides, then g * sigmoid(alpha * g) * (u + 1).
float activate(int act, float g, float u, float alpha, float limit) {
  if (act == 0) return g / (1.0f + exp(-g)) * u;
  g = fmin(g, limit);
  u = clamp(u, -limit, limit);
  return g / (1.0f + exp(-alpha * g)) * (u + 1.0f);
}

// Element i of an int32 (wide = 0) or int64 (wide = 1, little-endian low word) tensor.
int ld_index(__global const int *b, long i, int wide) { return b[wide ? 2 * i : i]; }

void st_index(__global int *b, long i, int wide, int v) {
  if (wide) {
    b[2 * i] = v;
    b[2 * i + 1] = v < 0 ? -1 : 0;
  } else {
    b[i] = v;
  }
}

// The expert of flat routing entry i (token i / topk, slot i % topk).
int routed(__global const int *ids, long off, long s0, long s1, int wide, long i, int topk) {
  return ld_index(ids, off + (i / topk) * s0 + (i % topk) * s1, wide);
}

// The routing source's fields (p.ids) the sort kernels read.
#define ROUTING_LOCALS(p)                                                                           \
  const long off = p.ids.offset, s0 = p.ids.s0, s1 = p.ids.s1, numel = p.numel;                    \
  const int wide = (int)p.ids_wide, topk = (int)p.topk, E = (int)p.E, chunk = (int)p.chunk;         \
  const int nchunks = (int)p.nchunks

__kernel void xr_moe_count(__global const int *ids, __global int *counts, const xr_moe_args_t p) {
  ROUTING_LOCALS(p);
  int c = get_global_id(0);
  if (c >= nchunks) return;
  __global int *mine = counts + (long)c * E;
  for (int e = 0; e < E; e++) mine[e] = 0;
  long end = min(numel, (long)(c + 1) * chunk);
  for (long i = (long)c * chunk; i < end; i++) {
    int e = routed(ids, off, s0, s1, wide, i, topk);
    if (e >= 0 && e < E) mine[e]++;
  }
}

// One work-group. counts become each chunk's offset inside its expert's segment; starts[e] is
// the segment's first position. ck: every expert gets at least one block, and padding is
// M | topk << 24 with weight 0 (CK); otherwise padding is numel (vLLM).
__kernel void xr_moe_scan(__global int *counts, __global int *starts, __global int *sorted,
                          __global float *sorted_w, __global int *expert_ids,
                          __global int *num_valid, const xr_moe_args_t p) {
  const int nchunks = (int)p.nchunks, E = (int)p.E, block = (int)p.block, ck = (int)p.ck;
  const int M = (int)p.M, topk = (int)p.topk;
  const long numel = p.numel, sorted_off = p.sorted_off, sorted_len = p.sorted_len;
  const long sw_off = p.sorted_w_off, blocks_len = p.blocks_len, eid_off = p.expert_ids_off;
  const long nv_off = p.num_valid_off, nv_len = p.num_valid_len;
  int lid = get_local_id(0), lsz = get_local_size(0);
  for (int e = lid; e < E; e += lsz) {
    int running = 0;
    for (int c = 0; c < nchunks; c++) {
      int t = counts[(long)c * E + e];
      counts[(long)c * E + e] = running;
      running += t;
    }
    starts[E + 1 + e] = running; // totals, kept after the E + 1 starts
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  if (lid == 0) {
    int pos = 0;
    for (int e = 0; e < E; e++) {
      starts[e] = pos;
      int blocks = (starts[E + 1 + e] + block - 1) / block;
      if (ck && blocks == 0) blocks = 1;
      pos += blocks * block;
    }
    starts[E] = pos;
    num_valid[nv_off] = pos;
    if (ck && nv_len > 1) num_valid[nv_off + 1] = M;
  }
  int pad = ck ? (int)(((uint)M & 0xffffffu) | ((uint)topk << 24)) : (int)numel;
  for (long i = lid; i < sorted_len; i += lsz) {
    sorted[sorted_off + i] = pad;
    if (ck) sorted_w[sw_off + i] = 0.0f;
  }
  for (long b = lid; b < blocks_len; b += lsz) expert_ids[eid_off + b] = 0;
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (int e = lid; e < E; e += lsz)
    for (long b = starts[e] / block; b < starts[e + 1] / block && b < blocks_len; b++)
      expert_ids[eid_off + b] = e;
}

__kernel void xr_moe_scatter(__global const int *ids, __global const uchar *weights,
                             __global int *counts, __global const int *starts, __global int *sorted,
                             __global float *sorted_w, const xr_moe_args_t p) {
  ROUTING_LOCALS(p);
  const int ck = (int)p.ck, wdt = (int)p.weights_dtype;
  const long sorted_off = p.sorted_off, sorted_len = p.sorted_len, sw_off = p.sorted_w_off;
  const long w_off = p.weights.offset, w_s0 = p.weights.s0, w_s1 = p.weights.s1;
  int c = get_global_id(0);
  if (c >= nchunks) return;
  __global int *next = counts + (long)c * E;
  long end = min(numel, (long)(c + 1) * chunk);
  for (long i = (long)c * chunk; i < end; i++) {
    int e = routed(ids, off, s0, s1, wide, i, topk);
    if (e < 0 || e >= E) continue;
    long pos = starts[e] + next[e]++;
    if (pos >= sorted_len) continue;
    long token = i / topk, slot = i % topk;
    sorted[sorted_off + pos] = ck ? (int)(((uint)token & 0xffffffu) | ((uint)slot << 24)) : (int)i;
    if (ck) sorted_w[sw_off + pos] = ld(weights, w_off + token * w_s0 + slot * w_s1, wdt);
  }
}

// Decodes sorted position pos into (token, slot); returns 0 for padding.
int decode(int id, int ck, int M, int topk, long numel, int *token, int *slot) {
  if (ck) {
    *token = id & 0xffffff;
    *slot = (int)((uint)id >> 24);
    return *token < M && *slot < topk;
  }
  *token = id / topk;
  *slot = id % topk;
  return id >= 0 && id < numel;
}

// scale_mode: 0 none; 1 topk_weights[token, slot] on the GEMM-1 accumulators (weight on the
// input); 2 sorted_w[pos] after the activation (CK stage 1) or on GEMM-2 (stage 2);
// 3 topk_weights[token, slot] on GEMM-2 (vLLM).

// GEMM-1 + activation over the sorted rows. A = x[token] (dtype dt, off, row stride xs0, col
// stride xs1). w1 [E, 2N, K] in format fmt (see ld_w; mxfp4: [E, 2N, K / 2] e2m1 pairs with
// scales w1s [E, 2N, K / 32]; fp8: w1s float32 [E, ceil(2N / sbn), ceil(K / sbk)] or [E]);
// gate n is row n * gate_step, up n row up0 + n * gate_step. The bias b1 [E, 2N] (has_b1,
// dtype bdt) joins the accumulators before they are rounded to dt; act 0 silu_and_mul,
// 1 swigluoai (alpha, limit). Output: out_mode 0 -> H[pos * N + n] (fp32 scratch, rounded to
// dt), out_mode 1 -> out[token, slot, n] (dtype dt).
// The sorted rows' and the problem's fields (p) the grouped GEMMs read.
#define ROWS_LOCALS(p)                                                                              \
  const long s_off = p.sorted_off, e_off = p.expert_ids_off, nv_off = p.num_valid_off;             \
  const long sorted_len = p.sorted_len, blocks_len = p.blocks_len, numel = p.numel;                \
  const long sw_off = p.sorted_w_off;                                                              \
  const int ck = (int)p.ck, M = (int)p.M, topk = (int)p.topk, E = (int)p.E, block = (int)p.block;  \
  const int N = (int)p.N, K = (int)p.K, dt = (int)p.dtype, fmt = (int)p.w_format;                  \
  const int fp8_dt = (int)p.w_fp8_dtype, scale_mode = (int)p.scale_mode;                           \
  const int wdt = (int)p.weights_dtype;                                                            \
  const long tw_off = p.weights.offset, tw_s0 = p.weights.s0, tw_s1 = p.weights.s1;                \
  const long sbn = p.scale_block_rows, sbk = p.scale_block_cols

__kernel __attribute__((reqd_work_group_size(TS, TS, 1))) void xr_moe_gemm1(
    __global const int *sorted, __global const int *expert_ids, __global const int *num_valid,
    __global const float *sorted_w, __global const uchar *x, __global const uchar *w1,
    __global const uchar *w1s, __global const uchar *b1, __global const uchar *weights,
    __global float *H, __global uchar *out, const xr_moe_args_t p) {
  ROWS_LOCALS(p);
  const long x_off = p.x.offset, xs0 = p.x.s0, xs1 = p.x.s1;
  const long w_off = p.w1.offset, ws0 = p.w1.s0, ws1 = p.w1.s1, ws2 = p.w1.s2;
  const long sc_off = p.w1_scale.offset, ss0 = p.w1_scale.s0, ss1 = p.w1_scale.s1, ss2 = p.w1_scale.s2;
  const int gate_step = (int)p.gate_step, up0 = (int)p.up_row0;
  const int has_b1 = p.w1_bias_dtype >= 0, bdt = (int)p.w1_bias_dtype;
  const long b_off = p.w1_bias.offset, bs0 = p.w1_bias.s0, bs1 = p.w1_bias.s1;
  const int act = (int)p.act, out_mode = (int)p.out_mode;
  const float alpha = p.swiglu_alpha, limit = p.swiglu_limit;
  const long o_off = p.out.offset, os0 = p.out.s0, os1 = p.out.s1, os2 = p.out.s2;
  __local float As[TS][TS], Gs[TS][TS + 1], Us[TS][TS + 1];
  int lx = get_local_id(0), ly = get_local_id(1);
  int n0 = get_group_id(0) * TS;
  long row0 = (long)get_group_id(1) * TS;
  long rows = min(min((long)num_valid[nv_off] / block, blocks_len) * block, sorted_len);
  if (row0 >= rows) return;
  int e = expert_ids[e_off + row0 / block];
  if (e < 0 || e >= E) return;
  long pos = row0 + ly;
  int token = 0, slot = 0;
  int valid = pos < rows && decode(sorted[s_off + pos], ck, M, topk, numel, &token, &slot);
  // this work-item loads the gate and up rows of column n0 + ly
  long gate_row = (long)(n0 + ly) * gate_step, up_row = up0 + gate_row;
  long g_at = w_off + e * ws0 + gate_row * ws1, u_at = w_off + e * ws0 + up_row * ws1;
  long gs_at = sc_off + e * ss0 + scale_row(fmt, gate_row, sbn) * ss1;
  long us_at = sc_off + e * ss0 + scale_row(fmt, up_row, sbn) * ss1;
  float g = 0.0f, u = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TS) {
    int k = k0 + lx;
    As[ly][lx] = valid && k < K ? ld(x, x_off + token * xs0 + k * xs1, dt) : 0.0f;
    int inside = n0 + ly < N && k < K;
    Gs[ly][lx] = inside ? ld_w(w1, g_at, ws2, dt, fmt, fp8_dt, w1s, gs_at, ss2, sbk, k) : 0.0f;
    Us[ly][lx] = inside ? ld_w(w1, u_at, ws2, dt, fmt, fp8_dt, w1s, us_at, ss2, sbk, k) : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = 0; t < TS; t++) {
      g += As[ly][t] * Gs[lx][t];
      u += As[ly][t] * Us[lx][t];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  int n = n0 + lx;
  if (!valid || n >= N) return;
  if (scale_mode == 1) {
    float w = ld(weights, tw_off + token * tw_s0 + slot * tw_s1, wdt);
    g *= w;
    u *= w;
  }
  if (has_b1) {
    long at = b_off + e * bs0 + (long)n * gate_step * bs1;
    g += ld(b1, at, bdt);
    u += ld(b1, at + up0 * bs1, bdt);
  }
  g = rnd(g, dt);
  u = rnd(u, dt);
  float a = activate(act, g, u, alpha, limit);
  if (scale_mode == 2) a *= sorted_w[sw_off + pos];
  if (out_mode == 0) H[pos * N + n] = rnd(a, dt);
  else st(out, o_off + token * os0 + slot * os1 + n * os2, dt, a);
}

// GEMM-2 over the sorted rows: y = a @ w2[e]^T (w2 [E, K, N] in format fmt; mxfp4:
// [E, K, N / 2] e2m1 pairs with scales w2s [E, K, N / 32]; fp8: w2s float32
// [E, ceil(K / sbn), ceil(N / sbk)] or [E]) plus the bias b2 [E, K] (has_b2, dtype bdt), scaled
// per scale_mode, stored rounded into Y[(token * topk + slot) * K + k] with
// mask[token * topk + slot] = 1. a_mode 0: a = H[pos] (fp32, N wide); a_mode 1:
// a = a_src[token, slot, :] (dtype dt).
__kernel __attribute__((reqd_work_group_size(TS, TS, 1))) void xr_moe_gemm2(
    __global const int *sorted, __global const int *expert_ids, __global const int *num_valid,
    __global const float *sorted_w, __global const float *H, __global const uchar *a_src,
    __global const uchar *w2, __global const uchar *w2s, __global const uchar *b2,
    __global const uchar *weights, __global float *Y, __global int *mask, const xr_moe_args_t p) {
  ROWS_LOCALS(p);
  const int a_mode = (int)p.a_mode;
  const long a_off = p.x.offset, as0 = p.x.s0, as1 = p.x.s1, as2 = p.x.s2;
  const long w_off = p.w2.offset, ws0 = p.w2.s0, ws1 = p.w2.s1, ws2 = p.w2.s2;
  const long sc_off = p.w2_scale.offset, ss0 = p.w2_scale.s0, ss1 = p.w2_scale.s1, ss2 = p.w2_scale.s2;
  const int has_b2 = p.w2_bias_dtype >= 0, bdt = (int)p.w2_bias_dtype;
  const long b_off = p.w2_bias.offset, bs0 = p.w2_bias.s0, bs1 = p.w2_bias.s1;
  __local float As[TS][TS], Ws[TS][TS + 1];
  int lx = get_local_id(0), ly = get_local_id(1);
  int k0 = get_group_id(0) * TS;
  long row0 = (long)get_group_id(1) * TS;
  long rows = min(min((long)num_valid[nv_off] / block, blocks_len) * block, sorted_len);
  if (row0 >= rows) return;
  int e = expert_ids[e_off + row0 / block];
  if (e < 0 || e >= E) return;
  long pos = row0 + ly;
  int token = 0, slot = 0;
  int valid = pos < rows && decode(sorted[s_off + pos], ck, M, topk, numel, &token, &slot);
  int wk = k0 + ly; // this work-item loads weight row wk
  long w_at = w_off + e * ws0 + wk * ws1, s_at = sc_off + e * ss0 + scale_row(fmt, wk, sbn) * ss1;
  float acc = 0.0f;
  for (int n0 = 0; n0 < N; n0 += TS) {
    int n = n0 + lx;
    float a = 0.0f;
    if (valid && n < N)
      a = a_mode == 0 ? H[pos * N + n] : ld(a_src, a_off + token * as0 + slot * as1 + n * as2, dt);
    As[ly][lx] = a;
    Ws[ly][lx] = wk < K && n < N ? ld_w(w2, w_at, ws2, dt, fmt, fp8_dt, w2s, s_at, ss2, sbk, n) : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = 0; t < TS; t++) acc += As[ly][t] * Ws[lx][t];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  int k = k0 + lx;
  if (!valid || k >= K) return;
  if (has_b2) acc += ld(b2, b_off + e * bs0 + k * bs1, bdt);
  if (scale_mode == 2) acc *= sorted_w[sw_off + pos];
  if (scale_mode == 3) acc *= ld(weights, tw_off + token * tw_s0 + slot * tw_s1, wdt);
  long pair = (long)token * topk + slot;
  Y[pair * K + k] = rnd(acc, dt);
  if (lx == 0) mask[pair] = 1;
}

// out[m, k] = (accumulate ? out[m, k] : 0) + sum of the token's written rows, rounded once.
__kernel void xr_moe_reduce(__global const float *Y, __global const int *mask, __global uchar *out,
                            const xr_moe_args_t p) {
  const int M = (int)p.M, topk = (int)p.topk, K = (int)p.K, dt = (int)p.dtype;
  const int accumulate = (int)p.accumulate;
  const long o_off = p.out.offset, os0 = p.out.s0, os1 = p.out.s1;
  long i = get_global_id(0);
  if (i >= (long)M * K) return;
  long m = i / K, k = i % K;
  long at = o_off + m * os0 + k * os1;
  float acc = accumulate ? ld(out, at, dt) : 0.0f;
  for (int j = 0; j < topk; j++)
    if (mask[m * topk + j]) acc += Y[(m * topk + j) * K + k];
  st(out, at, dt, acc);
}

// Router: softmax of one token's logits (fp32), top-k picked by logit (ties: lower expert),
// renormalised when asked. ids/token_expert_indices int32 or int64 (wide), weights dtype wdt;
// has_tei = 0 skips token_expert_indices.
__kernel void xr_moe_topk_softmax(__global const uchar *logits, __global uchar *weights,
                                  __global int *ids, __global int *tei, const xr_moe_args_t p) {
  const int ldt = (int)p.logits_dtype, M = (int)p.M, E = (int)p.E, topk = (int)p.topk;
  const int renormalize = (int)p.renormalize, wdt = (int)p.weights_dtype;
  const int ids_wide = (int)p.ids_wide, has_tei = (int)p.has_tei, tei_wide = (int)p.tei_wide;
  const long l_off = p.logits.offset, ls0 = p.logits.s0, ls1 = p.logits.s1;
  const long w_off = p.weights.offset, w_s0 = p.weights.s0, w_s1 = p.weights.s1;
  const long i_off = p.ids.offset, i_s0 = p.ids.s0, i_s1 = p.ids.s1;
  const long t_off = p.tei.offset, t_s0 = p.tei.s0, t_s1 = p.tei.s1;
  int m = get_global_id(0);
  if (m >= M) return;
  long row = l_off + (long)m * ls0;
  float mx = -INFINITY, sum = 0.0f, picked = 0.0f;
  for (int e = 0; e < E; e++) mx = fmax(mx, ld(logits, row + e * ls1, ldt));
  for (int e = 0; e < E; e++) sum += exp(ld(logits, row + e * ls1, ldt) - mx);
  for (int j = 0; j < topk; j++) {
    int best = -1;
    float bv = 0.0f;
    for (int e = 0; e < E; e++) {
      int taken = 0;
      for (int q = 0; q < j; q++) taken |= ld_index(ids, i_off + m * i_s0 + q * i_s1, ids_wide) == e;
      float v = ld(logits, row + e * ls1, ldt);
      if (!taken && (best < 0 || v > bv)) best = e, bv = v;
    }
    picked += exp(bv - mx) / sum;
    st_index(ids, i_off + m * i_s0 + j * i_s1, ids_wide, best);
    if (has_tei) st_index(tei, t_off + m * t_s0 + j * t_s1, tei_wide, j * M + m);
  }
  float scale = renormalize ? 1.0f / picked : 1.0f;
  for (int j = 0; j < topk; j++) {
    int e = ld_index(ids, i_off + m * i_s0 + j * i_s1, ids_wide);
    st(weights, w_off + m * w_s0 + j * w_s1, wdt, exp(ld(logits, row + e * ls1, ldt) - mx) / sum * scale);
  }
}
