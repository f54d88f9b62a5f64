// kernels/gpu/moe.cu's grouped GEMMs for fp8 expert weights (the _fp8 kernels moe_device.c launches
// for moe_forward) executed on the CPU under tests/gpu/cuda_emulation.h, in blocks of 16 x 16
// threads, over sorted rows laid out as kernels/moe_device.c's own sort lays them out: scales
// per expert and per [bn, bk] block (powers of two, odd sizes, a block larger than the matrix),
// the four fp8 formats, silu's and swigluoai's gate / up rows, row-major and transposed weights,
// tiles of 16, 32 and 64 rows, more than one column tile. Expected values are evaluated here in
// float64 from the problem's definition (kernels/moe.h): weight (e, r, c) = the code's value times
// scale[e, r / bn, c / bk] (scale[e] per expert). GEMM-2 is checked on the h GEMM-1 wrote. The
// outputs start as NaN, so an element left unwritten fails. A machine without a GPU thus runs
// the _fp8 kernels' decoding and scale indexing; tests/kernels:moe_matrix_{cuda,hip} run them
// whole on devices.
#include <criterion/criterion.h>

#include <cmath>
#include <random>
#include <vector>

#include "tests/gpu/cuda_emulation.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "tests/gpu/moe_emulated.inc"
#pragma GCC diagnostic pop

namespace {

// Runs `kernel()` for every thread of every block of `grid`, blocks of 16 x 16 threads as
// moe_device.c launches the GEMMs (the kernels use no warp operations).
template <class F> void launch(xr_emu_dim grid, F kernel) {
  const unsigned threads = XR_MOE_THREADS_X * XR_MOE_THREADS_Y;
  gridDim = grid;
  blockDim = {XR_MOE_THREADS_X, XR_MOE_THREADS_Y, 1};
  std::barrier<> block_barrier(threads);
  xr_emu_block_barrier = &block_barrier;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; t++) {
    pool.emplace_back([=] {
      threadIdx = {t % XR_MOE_THREADS_X, t / XR_MOE_THREADS_X, 0};
      for (unsigned y = 0; y < grid.y; y++)
        for (unsigned x = 0; x < grid.x; x++) {
          blockIdx = {x, y, 0};
          __syncthreads();
          kernel();
          __syncthreads();
        }
    });
  }
  for (std::thread &t : pool) t.join();
}

std::mt19937 rng(13);
double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); }

// The value of fp8 code c, by the test's own choice of dtype_io.h's decoder.
double fp8_value(unsigned char c, int dtype) {
  switch (dtype) {
    case XR_GPU_F8E4M3FN: return xr_io_f8e4m3fn::load(&c, 0);
    case XR_GPU_F8E4M3FNUZ: return xr_io_f8e4m3fnuz::load(&c, 0);
    case XR_GPU_F8E5M2: return xr_io_f8e5m2::load(&c, 0);
    case XR_GPU_F8E5M2FNUZ: return xr_io_f8e5m2fnuz::load(&c, 0);
  }
  return NAN;
}

struct layer_case {
  int dtype;        // the weights' fp8 format
  long long bn, bk; // 0: one scale per expert
  bool swiglu;      // swigluoai (gate and up rows interleaved), else silu
  bool transposed;  // the weights stored column-major within each expert
  int rm;           // rows per thread: tiles of 16 * rm sorted rows
};

struct problem {
  layer_case c;
  long long M = 9, topk = 2, E = 3, K = 72, N = 70;
  std::vector<float> x, h, y, scale1, scale2;
  std::vector<unsigned char> w1, w2;
  std::vector<int> sorted, expert_ids, num_valid, mask;
  xr_moe_args_t p;

  long long srows(long long rows) const { return c.bn ? (rows + c.bn - 1) / c.bn : 1; }
  long long scols(long long cols) const { return c.bk ? (cols + c.bk - 1) / c.bk : 1; }
  // Element (e, r, col) of an expert weight [E, rows, cols] as stored.
  long long at(long long e, long long r, long long col, long long rows, long long cols) const {
    return e * rows * cols + (c.transposed ? col * rows + r : r * cols + col);
  }
  double weight(int which, long long e, long long r, long long col) const {
    const long long rows = which ? K : 2 * N, cols = which ? N : K;
    const std::vector<unsigned char> &w = which ? w2 : w1;
    const std::vector<float> &s = which ? scale2 : scale1;
    const double scale = c.bn ? s[(e * srows(rows) + r / c.bn) * scols(cols) + col / c.bk] : s[e];
    return fp8_value(w[at(e, r, col, rows, cols)], c.dtype) * scale;
  }
  long long gate_row(long long n) const { return c.swiglu ? 2 * n : n; }
  long long up_row(long long n) const { return c.swiglu ? 2 * n + 1 : N + n; }
};

// Random finite codes of magnitude at most 4, scales near 0.1 that differ from block to block
// and expert to expert (so a wrong block or expert changes the result).
void fill_weights(problem &P, std::vector<unsigned char> &w, std::vector<float> &s, long long rows,
                  long long cols) {
  w.resize(P.E * rows * cols);
  for (unsigned char &code : w) {
    double v;
    do {
      code = (unsigned char)(rng() & 0xff);
      v = fp8_value(code, P.c.dtype);
    } while (!std::isfinite(v) || std::fabs(v) > 4);
  }
  s.resize(P.E * P.srows(rows) * P.scols(cols));
  for (float &v : s) v = (float)uniform(0.04, 0.16);
}

// Routing: token m's slot j goes to expert (m + j) % E, except that expert E - 1 gets none; the
// sorted ids, per expert ascending and padded to blocks of 16 * rm with numel, as
// xr_moe_count / scan / scatter write them.
void route(problem &P) {
  const long long block = XR_MOE_THREADS_Y * P.c.rm, numel = P.M * P.topk;
  std::vector<std::vector<int>> per(P.E);
  for (long long m = 0; m < P.M; m++)
    for (long long j = 0; j < P.topk; j++) per[(m + j) % (P.E - 1)].push_back((int)(m * P.topk + j));
  for (long long e = 0; e < P.E; e++) {
    if (per[e].empty()) continue;
    for (int id : per[e]) P.sorted.push_back(id);
    while (P.sorted.size() % block) P.sorted.push_back((int)numel);
    for (size_t b = P.expert_ids.size(); b < P.sorted.size() / block; b++) P.expert_ids.push_back((int)e);
  }
  P.num_valid = {(int)P.sorted.size()};
  // as the fused path sizes them: numel + E * (block - 1) sorted positions
  const long long len = numel + P.E * (block - 1);
  P.sorted.resize(len, (int)numel);
  P.expert_ids.resize((len + block - 1) / block, 0);
}

problem make(const layer_case &c) {
  problem P;
  P.c = c;
  const long long K = P.K, N = P.N, E = P.E;
  P.x.resize(P.M * K);
  for (float &v : P.x) v = (float)uniform(-1, 1);
  fill_weights(P, P.w1, P.scale1, 2 * N, K);
  fill_weights(P, P.w2, P.scale2, K, N);
  route(P);
  memset(&P.p, 0, sizeof P.p);
  xr_moe_args_t &p = P.p;
  p.M = P.M, p.K = K, p.N = N, p.E = E, p.topk = P.topk, p.numel = P.M * P.topk;
  p.block = XR_MOE_THREADS_Y * c.rm;
  p.sorted_len = (long long)P.sorted.size();
  p.blocks_len = (long long)P.expert_ids.size();
  p.tiles = (p.sorted_len + p.block - 1) / p.block;
  p.num_valid_len = 1;
  p.x = {0, K, 1, 0};
  // [E, rows, cols], row-major or column-major within an expert
  p.w1 = c.transposed ? xr_moe_view_t{0, 2 * N * K, 1, 2 * N} : xr_moe_view_t{0, 2 * N * K, K, 1};
  p.w2 = c.transposed ? xr_moe_view_t{0, K * N, 1, K} : xr_moe_view_t{0, K * N, N, 1};
  if (c.bn) {
    p.w1_scale = {0, P.srows(2 * N) * P.scols(K), P.scols(K), 1};
    p.w2_scale = {0, P.srows(K) * P.scols(N), P.scols(N), 1};
  } else {
    p.w1_scale = p.w2_scale = {0, 1, 0, 0};
  }
  p.scale_rows = xr_moe_divisor(c.bn ? c.bn : 1);
  p.scale_cols = xr_moe_divisor(c.bk ? c.bk : 1);
  p.w_fp8_dtype = c.dtype;
  p.gate_step = c.swiglu ? 2 : 1;
  p.up_row0 = c.swiglu ? 1 : N;
  p.act = c.swiglu;
  p.swiglu_alpha = 1.702f;
  p.swiglu_limit = 7.0f;
  p.w1_bias_dtype = p.w2_bias_dtype = -1;
  return P;
}

// The GEMM kernels of one tile height.
struct kernels {
  decltype(&xr_moe_gemm1_f32_fp8_m1) gemm1;
  decltype(&xr_moe_gemm2_f32_fp8_m1) gemm2;
};
kernels kernels_for(int rm) {
  if (rm == 4) return {xr_moe_gemm1_f32_fp8_m4, xr_moe_gemm2_f32_fp8_m4};
  if (rm == 2) return {xr_moe_gemm1_f32_fp8_m2, xr_moe_gemm2_f32_fp8_m2};
  return {xr_moe_gemm1_f32_fp8_m1, xr_moe_gemm2_f32_fp8_m1};
}

bool close(double got, double want) {
  return std::fabs(got - want) <= 1e-4 * std::fabs(want) + 1e-5;
}

void run_case(const layer_case &c) {
  problem P = make(c);
  const xr_moe_args_t &p = P.p;
  const kernels k = kernels_for(c.rm);
  P.h.assign(p.sorted_len * P.N, NAN);
  P.y.assign(P.M * P.topk * P.K, NAN);
  P.mask.assign(P.M * P.topk, 0);
  float unused = 0;
  const unsigned tiles = (unsigned)p.tiles;
  launch({(unsigned)((P.N + XR_MOE_TILE_N - 1) / XR_MOE_TILE_N), tiles, 1}, [&] {
    k.gemm1(P.sorted.data(), P.expert_ids.data(), P.num_valid.data(), &unused, P.x.data(),
            P.w1.data(), (const unsigned char *)P.scale1.data(), nullptr, nullptr, P.h.data(),
            nullptr, p);
  });
  launch({(unsigned)((P.K + XR_MOE_TILE_N - 1) / XR_MOE_TILE_N), tiles, 1}, [&] {
    k.gemm2(P.sorted.data(), P.expert_ids.data(), P.num_valid.data(), &unused, P.h.data(), nullptr,
            P.w2.data(), (const unsigned char *)P.scale2.data(), nullptr, nullptr, P.y.data(),
            P.mask.data(), p);
  });
  const char *what = c.bn ? "blocks" : "per expert";
  long long rows = 0;
  for (long long pos = 0; pos < P.num_valid[0]; pos++) {
    const int id = P.sorted[pos];
    if (id >= p.numel) continue;
    rows++;
    const long long e = P.expert_ids[pos / p.block], token = id / P.topk;
    for (long long n = 0; n < P.N; n++) {
      double g = 0, u = 0;
      for (long long kk = 0; kk < P.K; kk++) {
        g += P.weight(0, e, P.gate_row(n), kk) * P.x[token * P.K + kk];
        u += P.weight(0, e, P.up_row(n), kk) * P.x[token * P.K + kk];
      }
      double want;
      if (c.swiglu) {
        const double gc = std::fmin(g, 7.0), uc = std::fmax(-7.0, std::fmin(u, 7.0));
        want = gc / (1 + std::exp(-1.702 * gc)) * (uc + 1);
      } else {
        want = g / (1 + std::exp(-g)) * u;
      }
      const double got = P.h[pos * P.N + n];
      cr_assert(close(got, want), "dtype %d %s [%lld, %lld] gemm1 pos %lld n %lld: %g, expected %g",
                c.dtype, what, c.bn, c.bk, pos, n, got, want);
    }
    for (long long kk = 0; kk < P.K; kk++) {
      double want = 0;
      for (long long n = 0; n < P.N; n++) want += P.weight(1, e, kk, n) * P.h[pos * P.N + n];
      const double got = P.y[id * P.K + kk];
      cr_assert(close(got, want), "dtype %d %s [%lld, %lld] gemm2 row %d k %lld: %g, expected %g",
                c.dtype, what, c.bn, c.bk, id, kk, got, want);
    }
    cr_assert_eq(P.mask[id], 1);
  }
  cr_assert_eq(rows, p.numel, "every routed row checked");
}

}  // namespace

Test(moe_emulated, fp8_scales_per_expert) {
  run_case({XR_GPU_F8E4M3FN, 0, 0, false, false, 1});
  run_case({XR_GPU_F8E4M3FNUZ, 0, 0, true, true, 4});
}

Test(moe_emulated, fp8_scale_blocks) {
  run_case({XR_GPU_F8E4M3FN, 32, 64, false, false, 2});
  run_case({XR_GPU_F8E4M3FNUZ, 16, 16, true, false, 1});
  run_case({XR_GPU_F8E5M2, 7, 5, false, true, 4});        // odd block sizes
  run_case({XR_GPU_F8E5M2FNUZ, 128, 128, true, false, 1}); // one block per expert and matrix
}
