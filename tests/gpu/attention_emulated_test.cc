// kernels/gpu/paged_attention.cu's kernels (the attention template of attention_kernel.h, the
// fp8 table, the v2 partition reduction) and kv_cache.cu's executed on the CPU under tests/gpu/cuda_emulation.h,
// built once per warp width (XR_EMULATED_WARP=32 and 64), against a float64 evaluation of the
// same problem: block- and warp-uniform control flow, the lane-to-dimension mapping, the
// per-lane scores and shuffles, the online softmax across tiles and partitions. A machine
// without a GPU thus runs the device code's logic; tests/kernels:paged_attention_matrix_* and
// unified_attention_matrix_* (cuda, hip) run it on devices.
// Launch geometry as kernels/attention_device.c computes it. Outputs start as NaN, and cache
// slots no sequence uses hold fp8 NaN, so an unwritten output or a read past a sequence fails.
#include <criterion/criterion.h>

#include <algorithm>
#include <random>

#include "tests/gpu/cuda_emulation.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wnarrowing"
#include "tests/gpu/paged_attention_emulated.inc"
#include "tests/gpu/kv_cache_emulated.inc"  // the shared headers' include guards keep one copy
#pragma GCC diagnostic pop

namespace {

std::mt19937 rng(7);
// An e4m3fn code as the kernels' stores write it.
unsigned char e4m3fn(float v) {
  unsigned char c;
  xr_io_f8e4m3fn::store(&c, 0, v);
  return c;
}
float uniform() { return std::uniform_real_distribution<float>(-1, 1)(rng); }
void fill(std::vector<float> &v, size_t n) {
  v.resize(n);
  for (float &x : v) x = uniform();
}

struct problem {
  xr_attn_args_t p;
  std::vector<float> q, k, v, out, lse, alibi, exp_sums, max_logits, tmp_out, k_scale{0.5f}, v_scale{0.5f};
  std::vector<unsigned char> k8, v8;  // fp8 e4m3fn caches
  std::vector<int> cu_q, cu_k, lens, table;
  bool fp8 = false;
  problem() {
    memset(&p, 0, sizeof p);
    p.lse_off = p.cu_q_off = p.cu_k_off = p.lens_off = p.table_off = p.indptr_off = p.alibi_off = p.mask_off = -1;
    p.k_scale_off = p.v_scale_off = p.es_off = p.ml_off = p.to_off = -1;
    p.window_left = p.window_right = -1;
    p.page_size = 1;
    p.k_scale = p.v_scale = 1;
    p.empty_lse = INFINITY;
  }
  double key(long long i) const { return fp8 ? xr_io_f8e4m3fn::load(k8.data(), i) * (double)k_scale[0] : k[i]; }
  double value(long long i) const { return fp8 ? xr_io_f8e4m3fn::load(v8.data(), i) * (double)v_scale[0] : v[i]; }
};

// The problem's definition (kernels/attention.h) in float64, through the kernel's addressing
// helpers (copies of kernels/attention.h's, read against them).
void reference(const problem &P, std::vector<double> &out, std::vector<double> &lse) {
  const xr_attn_args_t &p = P.p;
  for (long long b = 0; b < p.batch; b++) {
    const xr_attn_seq s = xr_attn_get_seq(p, P.cu_q.data(), P.cu_k.data(), P.lens.data(), nullptr, b);
    for (long long h = 0; h < p.heads; h++) {
      const long long kvh = h / p.group;
      for (long long i = 0; i < s.q_len; i++) {
        long long lo, hi;
        xr_attn_key_range(p, s, i, &lo, &hi);
        std::vector<double> logits;
        double m = -INFINITY;
        for (long long t = lo; t < hi; t++) {
          long long ki, vi;
          xr_attn_token(p, P.table.data(), nullptr, b, s, t, &ki, &vi);
          double dot = 0;
          for (long long d = 0; d < p.head_dim; d++)
            dot += (double)P.q[p.q_off + b * p.q_sb + (s.qstart + i) * p.q_ss + h * p.q_sh + d * p.q_sd] *
                   P.key(ki + kvh * p.k_sh + (d / p.k_x) * p.k_sdx + (d % p.k_x) * p.k_sd);
          double x = p.scale * dot;
          if (p.softcap > 0) x = p.softcap * tanh(x / p.softcap);
          if (p.alibi_off >= 0) x -= P.alibi[h] * fabs((double)(t - (i + s.diag)));
          logits.push_back(x);
          m = std::max(m, x);
        }
        std::vector<double> o(p.head_dim_v, 0.0);
        double sum = 0;
        for (long long t = lo; t < hi && m > -INFINITY; t++) {
          long long ki, vi;
          xr_attn_token(p, P.table.data(), nullptr, b, s, t, &ki, &vi);
          const double w = exp(logits[t - lo] - m);
          sum += w;
          for (long long d = 0; d < p.head_dim_v; d++) o[d] += w * P.value(vi + kvh * p.v_sh + d * p.v_sd);
        }
        const long long oi = p.o_off + b * p.o_sb + (s.qstart + i) * p.o_ss + h * p.o_sh;
        for (long long d = 0; d < p.head_dim_v; d++) out[oi + d * p.o_sd] = sum > 0 ? o[d] / sum : 0;
        if (p.lse_off >= 0)
          lse[p.lse_off + b * p.lse_sb + h * p.lse_sh + (s.qstart + i) * p.lse_ss] = sum > 0 ? m + log(sum) : p.empty_lse;
      }
    }
  }
}

// Launches as kernels/attention_device.c does, then compares every output the reference defines.
void expect_matches(const char *what, problem &P) {
  const xr_attn_args_t &p = P.p;
  std::fill(P.out.begin(), P.out.end(), NAN);
  std::fill(P.lse.begin(), P.lse.end(), NAN);
  const long long rows = std::max(p.max_q, p.lse_rows) * p.group;
  const long long rows_per_block = std::min((long long)XR_ATTN_GPU_MAX_THREADS / warpSize, rows);
  const long long parts = p.part_size > 0 ? p.part_count : 1;
  const xr_emu_dim grid{(unsigned)((rows + rows_per_block - 1) / rows_per_block), (unsigned)(p.batch * p.kv_heads),
                        (unsigned)parts};
  const void *k = P.fp8 ? (const void *)P.k8.data() : (const void *)P.k.data();
  const void *v = P.fp8 ? (const void *)P.v8.data() : (const void *)P.v.data();
  xr_emu_launch(grid, (unsigned)(rows_per_block * warpSize), [&] {
    if (P.fp8)
      xr_attention<xr_io_f32, true>(P.q.data(), k, v, P.out.data(), P.lse.data(), P.cu_q.data(), P.cu_k.data(),
                                    P.lens.data(), P.table.data(), nullptr, P.alibi.data(), nullptr,
                                    P.k_scale.data(), P.v_scale.data(), P.exp_sums.data(), P.max_logits.data(),
                                    P.tmp_out.data(), p);
    else
      xr_attention<xr_io_f32, false>(P.q.data(), k, v, P.out.data(), P.lse.data(), P.cu_q.data(), P.cu_k.data(),
                                     P.lens.data(), P.table.data(), nullptr, P.alibi.data(), nullptr,
                                     P.k_scale.data(), P.v_scale.data(), P.exp_sums.data(), P.max_logits.data(),
                                     P.tmp_out.data(), p);
  });
  if (p.part_size > 0) {
    const xr_emu_dim grid{(unsigned)((p.head_dim_v + XR_ATTN_COMBINE_THREADS - 1) / XR_ATTN_COMBINE_THREADS),
                          (unsigned)p.heads, (unsigned)p.batch};
    xr_emu_launch(grid, XR_ATTN_COMBINE_THREADS, [&] {
      xr_attention_combine<xr_io_f32>(P.cu_q.data(), P.cu_k.data(), P.lens.data(), nullptr, P.out.data(),
                                      P.exp_sums.data(), P.max_logits.data(), P.tmp_out.data(), p);
    });
  }
  std::vector<double> out(P.out.size(), NAN), lse(P.lse.size(), NAN);
  reference(P, out, lse);
  double err = 0, norm = 0;
  int checked = 0;
  for (size_t i = 0; i < out.size(); i++) {
    if (std::isnan(out[i])) continue;  // no output element there
    cr_assert(!std::isnan(P.out[i]), "%s: output %zu unwritten or NaN", what, i);
    err += (P.out[i] - out[i]) * (P.out[i] - out[i]);
    norm += out[i] * out[i];
    checked++;
  }
  cr_assert_gt(checked, 0, "%s: no output", what);
  cr_assert_lt(err / (norm > 0 ? norm : 1), 1e-10, "%s: nmse %g", what, err / norm);
  for (size_t i = 0; i < lse.size(); i++) {
    if (std::isnan(lse[i])) continue;
    if (std::isinf(lse[i])) cr_assert_eq(P.lse[i], lse[i], "%s: logsumexp %zu of a row without keys", what, i);
    else cr_assert_lt(fabs(P.lse[i] - lse[i]), 1e-4, "%s: logsumexp %zu: %g, expected %g", what, i, P.lse[i], lse[i]);
  }
  cr_log_info("%s (warp %d): %d outputs, nmse %.3g", what, warpSize, checked, err / (norm > 0 ? norm : 1));
}

}  // namespace

Test(attention_emulated, dense_gqa_causal_and_a_decode_row) {
  problem P;
  xr_attn_args_t &p = P.p;
  const long long B = 2, H = 4, Hk = 2, Sq = 17, Sk = 40, D = 64, Dv = 32;  // [B, H, S, D], Dv != D
  p.batch = B, p.heads = H, p.kv_heads = Hk, p.group = H / Hk, p.head_dim = D, p.head_dim_v = Dv;
  p.max_q = Sq, p.max_k = Sk;
  p.q_sb = H * Sq * D, p.q_ss = D, p.q_sh = Sq * D, p.q_sd = 1;
  p.o_sb = H * Sq * Dv, p.o_ss = Dv, p.o_sh = Sq * Dv, p.o_sd = 1;
  p.lse_off = 0, p.lse_sb = H * Sq, p.lse_sh = Sq, p.lse_ss = 1, p.lse_rows = Sq;
  p.k_sp = Hk * Sk * D, p.k_ss = D, p.k_sh = Sk * D, p.k_sd = 1, p.k_x = D;
  p.v_sp = Hk * Sk * Dv, p.v_ss = Dv, p.v_sh = Sk * Dv, p.v_sd = 1;
  p.causal = 1, p.scale = 0.125f;  // top-left, as SDPA
  fill(P.q, B * H * Sq * D), fill(P.k, B * Hk * Sk * D), fill(P.v, B * Hk * Sk * Dv);
  P.out.resize(B * H * Sq * Dv), P.lse.resize(B * H * Sq);
  expect_matches("dense gqa causal 17x40", P);
  p.causal = 0, p.max_q = 1, p.lse_rows = 1;  // two rows per kv head: fewer warps than a full block
  expect_matches("dense decode row", P);
}

Test(attention_emulated, varlen_empty_rows_window_softcap_alibi) {
  problem P;
  xr_attn_args_t &p = P.p;
  const long long H = 4, Hk = 1, D = 128, total_q = 30, total_k = 70;  // packed [total, H, D], MQA
  P.cu_q = {0, 13, 13, 30};  // an empty sequence; 13 queries over 5 keys bottom-right: 8 rows see none
  P.cu_k = {0, 5, 45, 70};
  p.batch = 3, p.heads = H, p.kv_heads = Hk, p.group = H / Hk, p.head_dim = D, p.head_dim_v = D;
  p.max_q = 17, p.max_k = 40;
  p.q_ss = H * D, p.q_sh = D, p.q_sd = 1, p.o_ss = H * D, p.o_sh = D, p.o_sd = 1;
  p.lse_off = 0, p.lse_sh = total_q, p.lse_ss = 1;
  p.k_ss = Hk * D, p.k_sh = D, p.k_sd = 1, p.k_x = D, p.v_ss = Hk * D, p.v_sh = D, p.v_sd = 1;
  p.cu_q_off = 0, p.cu_k_off = 0;
  p.causal = 1, p.bottom_right = 1, p.window_left = 20, p.window_right = 0, p.softcap = 3.0f, p.scale = 0.3f;
  P.alibi = {0.5f, 0.25f, 0.125f, 0.0625f};
  p.alibi_off = 0, p.alibi_sh = 1, p.alibi_elem = XR_ATTN_ELEM_F32;
  fill(P.q, total_q * H * D), fill(P.k, total_k * Hk * D), fill(P.v, total_k * Hk * D);
  P.out.resize(total_q * H * D), P.lse.resize(H * total_q);
  expect_matches("varlen window softcap alibi", P);
}

Test(attention_emulated, paged_fp8_partitions_and_v1) {
  problem P;
  xr_attn_args_t &p = P.p;
  // vLLM layouts: key_cache [blocks, Hk, D / x, bs, x], value_cache [blocks, Hk, D, bs]
  const long long S = 3, H = 8, Hk = 2, D = 64, bs = 16, x = 16, per_seq = 5, blocks = S * per_seq + 3, parts = 3;
  P.fp8 = true;
  P.lens = {70, 1, 33};
  std::vector<int> pages(blocks);
  for (int i = 0; i < blocks; i++) pages[i] = i;
  std::shuffle(pages.begin(), pages.end(), rng);
  P.table.assign(pages.begin(), pages.begin() + S * per_seq);
  p.batch = S, p.heads = H, p.kv_heads = Hk, p.group = H / Hk, p.head_dim = D, p.head_dim_v = D;
  p.max_q = 1, p.max_k = 70;
  p.q_sb = H * D, p.q_sh = D, p.q_sd = 1, p.o_sb = H * D, p.o_sh = D, p.o_sd = 1;
  p.k_sp = Hk * D * bs, p.k_sh = D * bs, p.k_sdx = bs * x, p.k_ss = x, p.k_sd = 1, p.k_x = x;
  p.v_sp = Hk * D * bs, p.v_sh = D * bs, p.v_sd = bs, p.v_ss = 1;
  p.lens_off = 0, p.paged = 1, p.page_size = bs, p.table_off = 0, p.table_sb = per_seq, p.table_sp = 1;
  p.causal = 1, p.bottom_right = 1, p.scale = 0.125f;
  p.kv_fp8 = 1, p.k_scale_off = 0, p.v_scale_off = 0, p.fp8_format = XR_ATTN_F8E4M3FN;
  P.alibi = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f};
  p.alibi_off = 0, p.alibi_sh = 1, p.alibi_elem = XR_ATTN_ELEM_F32;
  P.k8.assign(blocks * Hk * D * bs, 0x7f), P.v8.assign(blocks * Hk * D * bs, 0x7f);  // e4m3fn NaN...
  for (long long b = 0; b < S; b++)  // ...but in the live tokens' slots
    for (long long t = 0; t < P.lens[b]; t++) {
      const long long page = P.table[b * per_seq + t / bs], slot = t % bs;
      for (long long h = 0; h < Hk; h++)
        for (long long d = 0; d < D; d++) {
          P.k8[page * p.k_sp + h * p.k_sh + (d / x) * p.k_sdx + slot * p.k_ss + d % x] =
              e4m3fn(2 * uniform());
          P.v8[page * p.v_sp + h * p.v_sh + d * p.v_sd + slot] = e4m3fn(2 * uniform());
        }
    }
  fill(P.q, S * H * D);
  P.out.resize(S * H * D);
  // v2 with 32-token partitions (vLLM's are 512; the kernel takes any size)
  p.part_size = 32, p.part_count = parts;
  p.es_off = p.ml_off = 0, p.es_sb = p.ml_sb = H * parts, p.es_sh = p.ml_sh = parts, p.es_sp = p.ml_sp = 1;
  p.to_off = 0, p.to_sb = H * parts * D, p.to_sh = parts * D, p.to_sp = D, p.to_sd = 1;
  P.exp_sums.assign(S * H * parts, NAN), P.max_logits.assign(S * H * parts, NAN);
  P.tmp_out.assign(S * H * parts * D, NAN);
  expect_matches("paged v2 fp8 alibi, 3 partitions", P);
  p.part_size = 0, p.part_count = 0;
  expect_matches("paged v1 fp8 alibi", P);
}

// The run-time typed kernel (xr_attention_any*, vLLM's unified attention with fp8 queries and
// outputs) over a paged flash-layout cache [blocks, bs, Hk, D], packed causal queries: e4m3fn
// queries dequantised by q_scale 0.5 over an e4m3fn cache (k_scale 0.5) into an e4m3fn output
// with output_scale 0.01 (within one fp8 step of o / 0.01, clamped); then f32 queries over an
// f32 cache into a bf16 output (the typed loads of the same kernel without an fp8 table).
Test(attention_emulated, run_time_typed_fp8_queries_and_outputs) {
  const long long S = 2, H = 4, Hk = 2, D = 64, bs = 16, per_seq = 2, blocks = S * per_seq + 1;
  const std::vector<int> cu_q{0, 3, 4}, lens{20, 9};
  std::vector<int> table{3, 0, 4, 1};
  const long long total_q = 4, cache = blocks * bs * Hk * D;
  for (int fp8 = 1; fp8 >= 0; fp8--) {
    xr_attn_args_t p;
    memset(&p, 0, sizeof p);
    p.lse_off = p.cu_k_off = p.indptr_off = p.alibi_off = p.mask_off = -1;
    p.es_off = p.ml_off = p.to_off = -1;
    p.window_left = p.window_right = -1;
    p.batch = S, p.heads = H, p.kv_heads = Hk, p.group = H / Hk, p.head_dim = D, p.head_dim_v = D;
    p.max_q = 3, p.max_k = 20;
    p.q_ss = H * D, p.q_sh = D, p.q_sd = 1, p.o_ss = H * D, p.o_sh = D, p.o_sd = 1;
    p.k_sp = bs * Hk * D, p.k_ss = Hk * D, p.k_sh = D, p.k_sd = 1, p.k_x = D;
    p.v_off = 0, p.v_sp = bs * Hk * D, p.v_ss = Hk * D, p.v_sh = D, p.v_sd = 1;
    p.cu_q_off = 0, p.lens_off = 0, p.paged = 1, p.page_size = bs, p.table_off = 0, p.table_sb = per_seq,
    p.table_sp = 1;
    p.causal = 1, p.bottom_right = 1, p.scale = 0.125f, p.empty_lse = INFINITY;
    p.k_scale = p.v_scale = 1, p.q_scale = 1, p.o_max = INFINITY;
    std::vector<float> qf(total_q * H * D), kf(cache, NAN), vf(cache, NAN), scales{0.5f}, o_scale{0.01f};
    std::vector<unsigned char> q8(total_q * H * D), k8(cache, 0x7f), v8(cache, 0x7f), out8(total_q * H * D, 0x7f);
    std::vector<unsigned short> out16(total_q * H * D, 0x7fc0);  // bf16 NaN
    for (size_t i = 0; i < qf.size(); i++) {
      q8[i] = e4m3fn(3 * uniform());
      qf[i] = fp8 ? xr_io_f8e4m3fn::load(q8.data(), i) * 0.5f : uniform();
    }
    for (long long b = 0; b < S; b++)
      for (long long t = 0; t < lens[b]; t++)
        for (long long e = 0; e < Hk * D; e++) {
          const long long i = (table[b * per_seq + t / bs] * bs + t % bs) * Hk * D + e;
          k8[i] = e4m3fn(2 * uniform());
          v8[i] = e4m3fn(2 * uniform());
          kf[i] = fp8 ? xr_io_f8e4m3fn::load(k8.data(), i) * 0.5f : uniform();
          vf[i] = fp8 ? xr_io_f8e4m3fn::load(v8.data(), i) * 0.5f : uniform();
        }
    if (fp8) {
      p.q_elem = XR_ATTN_ELEM_FP8, p.q_fp8 = XR_ATTN_F8E4M3FN, p.q_scale = 0.5f;
      p.kv_fp8 = 1, p.fp8_format = XR_ATTN_F8E4M3FN, p.k_scale_off = p.v_scale_off = 0;
      p.o_elem = XR_ATTN_ELEM_FP8, p.o_fp8 = XR_ATTN_F8E4M3FN, p.o_scale_off = 0, p.o_max = 448.0f;
    } else {
      p.q_elem = XR_ATTN_ELEM_F32, p.kv_elem = XR_ATTN_ELEM_F32, p.o_elem = XR_ATTN_ELEM_BF16;
      p.k_scale_off = p.v_scale_off = p.o_scale_off = -1;
    }
    const long long rows = p.max_q * p.group, rows_per_block = std::min((long long)XR_ATTN_GPU_MAX_THREADS / warpSize, rows);
    const xr_emu_dim grid{(unsigned)((rows + rows_per_block - 1) / rows_per_block), (unsigned)(S * Hk), 1};
    const unsigned char *q = fp8 ? q8.data() : (const unsigned char *)qf.data();
    const void *k = fp8 ? (const void *)k8.data() : (const void *)kf.data();
    const void *v = fp8 ? (const void *)v8.data() : (const void *)vf.data();
    unsigned char *out = fp8 ? out8.data() : (unsigned char *)out16.data();
    xr_emu_launch(grid, (unsigned)(rows_per_block * warpSize), [&] {
      if (fp8)
        xr_attention<xr_io_any, true, true>(q, k, v, out, nullptr, cu_q.data(), nullptr, lens.data(), table.data(),
                                            nullptr, nullptr, nullptr, scales.data(), scales.data(), nullptr, nullptr,
                                            nullptr, p, o_scale.data());
      else
        xr_attention<xr_io_any, false, true>(q, k, v, out, nullptr, cu_q.data(), nullptr, lens.data(), table.data(),
                                             nullptr, nullptr, nullptr, scales.data(), scales.data(), nullptr, nullptr,
                                             nullptr, p, o_scale.data());
    });
    int checked = 0;
    for (long long b = 0; b < S; b++)
      for (long long i = 0; i < cu_q[b + 1] - cu_q[b]; i++)
        for (long long h = 0; h < H; h++) {
          const long long hk = h / p.group, last = lens[b] - (cu_q[b + 1] - cu_q[b]) + i, row = cu_q[b] + i;
          std::vector<double> logits(last + 1), o(D, 0.0);
          double m = -INFINITY, sum = 0;
          for (long long t = 0; t <= last; t++) {
            const long long base = (table[b * per_seq + t / bs] * bs + t % bs) * Hk * D + hk * D;
            double dot = 0;
            for (long long d = 0; d < D; d++) dot += (double)qf[(row * H + h) * D + d] * kf[base + d];
            logits[t] = 0.125 * dot, m = std::max(m, logits[t]);
          }
          for (long long t = 0; t <= last; t++) {
            const long long base = (table[b * per_seq + t / bs] * bs + t % bs) * Hk * D + hk * D;
            const double w = exp(logits[t] - m);
            sum += w;
            for (long long d = 0; d < D; d++) o[d] += w * vf[base + d];
          }
          for (long long d = 0; d < D; d++) {
            const long long at = (row * H + h) * D + d;
            double e = o[d] / sum;
            if (fp8) {
              e = std::max(-448.0, std::min(448.0, e / 0.01));
              const double a = xr_io_f8e4m3fn::load(out8.data(), at);
              const double step = fabs(e) >= 0x1p-6 ? ldexp(1.0, (int)floor(log2(fabs(e))) - 3) : 0x1p-9;
              cr_assert(fabs(a - e) <= step, "fp8: seq %lld row %lld head %lld dim %lld: %g, expected %g", b, i, h, d,
                        a, e);
            } else {
              const double a = xr_io_bf16::load(out16.data(), at);
              cr_assert(fabs(a - e) <= 0x1p-8 * fabs(e) + 1e-6, "bf16: seq %lld row %lld head %lld dim %lld: %g, "
                        "expected %g", b, i, h, d, a, e);
            }
            checked++;
          }
        }
    cr_assert_eq(checked, total_q * H * D);
    cr_log_info("run-time typed kernel, %s (warp %d): %d outputs", fp8 ? "fp8" : "f32 / bf16", warpSize, checked);
  }
}

// reshape_and_cache into vLLM's 5-D key / 4-D value fp8 caches (value / 0.5) with int64 slots,
// one of them padding, and reshape_and_cache_flash's [blocks, bs, Hk, D] f32 cache: every
// written element lands at its slot's address, every other element keeps its sentinel.
Test(kv_cache_emulated, reshape_and_cache_layouts_scales_and_padding) {
  const long long tokens = 19, Hk = 2, D = 32, bs = 8, blocks = 4, x = 16;
  std::vector<float> key, value, scales{0.5f};
  fill(key, tokens * Hk * D), fill(value, tokens * Hk * D);
  std::vector<long long> slots(tokens);
  std::vector<long long> order(blocks * bs);
  for (long long i = 0; i < blocks * bs; i++) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (long long t = 0; t < tokens; t++) slots[t] = order[t];
  slots[5] = -1;  // padding token
  for (int flash = 0; flash < 2; flash++) {
    xr_cache_args_t p;
    memset(&p, 0, sizeof p);
    p.tokens = tokens, p.kv_heads = Hk, p.head_dim = D, p.block_size = bs, p.slots_64 = 1;
    p.key_st = Hk * D, p.key_sh = D, p.key_sd = 1, p.value_st = Hk * D, p.value_sh = D, p.value_sd = 1;
    if (flash) {
      p.kc_sb = bs * Hk * D, p.kc_ss = Hk * D, p.kc_sh = D, p.kc_sd = 1, p.kc_sdx = 0, p.kc_x = D;
      p.vc_sb = bs * Hk * D, p.vc_ss = Hk * D, p.vc_sh = D, p.vc_sd = 1;
      p.k_scale_off = p.v_scale_off = -1;
    } else {
      p.kc_sb = Hk * D * bs, p.kc_sh = D * bs, p.kc_sdx = bs * x, p.kc_ss = x, p.kc_sd = 1, p.kc_x = x;
      p.vc_sb = Hk * D * bs, p.vc_sh = D * bs, p.vc_sd = bs, p.vc_ss = 1;
      p.scaled = 1;
    }
    const size_t cache_size = (size_t)(blocks * bs * Hk * D);
    std::vector<float> key_cache(cache_size, -7.0f), value_cache(cache_size, -7.0f);
    std::vector<unsigned char> key_cache8(cache_size, 0xaa), value_cache8(cache_size, 0xaa);
    const long long element_blocks = (Hk * D + XR_CACHE_THREADS - 1) / XR_CACHE_THREADS;
    xr_emu_launch(xr_emu_dim{(unsigned)tokens, (unsigned)element_blocks, 1}, XR_CACHE_THREADS, [&] {
      if (flash)
        xr_reshape_and_cache<xr_io_f32, xr_io_f32>(key.data(), value.data(), key_cache.data(), value_cache.data(),
                                                   slots.data(), scales.data(), scales.data(), p);
      else
        xr_reshape_and_cache<xr_io_f32, xr_io_f8e4m3fn>(key.data(), value.data(), key_cache8.data(),
                                                        value_cache8.data(), slots.data(), scales.data(),
                                                        scales.data(), p);
    });
    std::vector<bool> written(cache_size, false);
    for (long long t = 0; t < tokens; t++) {
      if (slots[t] < 0) continue;
      const long long block = slots[t] / bs, slot = slots[t] % bs;
      for (long long h = 0; h < Hk; h++)
        for (long long d = 0; d < D; d++) {
          const float k = key[t * Hk * D + h * D + d], v = value[t * Hk * D + h * D + d];
          if (flash) {
            const long long i = ((block * bs + slot) * Hk + h) * D + d;
            cr_assert_eq(key_cache[i], k, "flash key token %lld head %lld dim %lld", t, h, d);
            cr_assert_eq(value_cache[i], v, "flash value token %lld head %lld dim %lld", t, h, d);
            written[i] = true;
          } else {
            const long long ki = (((block * Hk + h) * (D / x) + d / x) * bs + slot) * x + d % x;
            const long long vi = ((block * Hk + h) * D + d) * bs + slot;
            unsigned char k8 = 0, v8 = 0;
            xr_io_f8e4m3fn::store(&k8, 0, k / 0.5f);
            xr_io_f8e4m3fn::store(&v8, 0, v / 0.5f);
            cr_assert_eq(key_cache8[ki], k8, "key token %lld head %lld dim %lld", t, h, d);
            cr_assert_eq(value_cache8[vi], v8, "value token %lld head %lld dim %lld", t, h, d);
            written[ki] = true;  // the key and value layouts differ: track the key's
          }
        }
    }
    for (size_t i = 0; i < cache_size; i++) {
      if (written[i]) continue;
      if (flash) cr_assert(key_cache[i] == -7.0f && value_cache[i] == -7.0f, "flash element %zu overwritten", i);
      else cr_assert_eq(key_cache8[i], 0xaa, "key cache element %zu overwritten", i);
    }
  }
}
