// kernels/gpu/gemm.cu's block-scaled _scaled_mm kernels (xr_gemm_tiled_block: 16 x 16 threads
// per 64 x 64 tile; xr_gemv_block: a warp per output column for M == 1) executed on the CPU
// under tests/gpu/cuda_emulation.h, built once per warp width (32 and 64), against a float64
// evaluation of the same problem written here from the formats' definitions (kernels/gemm.h):
// mxfp8 (e4m3fn / e5m2 codes, e8m0 scales per 32), mxfp4 (e2m1 pairs along K, low nibble first,
// e8m0 per 32), nvfp4 (e2m1 pairs, e4m3fn scales per 16); torch's transposed mat2 and a
// row-major one, padded scale pitches, a bf16 bias, odd M and N. The launch geometry and the
// parameter block are filled as kernels/gemm_device.c fills them; outputs start as NaN, so an
// unwritten element fails. tests/gpu:gemm_gpu_test_* run the same kernels on devices.
#include <criterion/criterion.h>

#include <random>
#include <vector>

#include "tests/gpu/cuda_emulation.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wnarrowing"
#include "tests/gpu/gemm_emulated.inc"
#pragma GCC diagnostic pop

namespace {

std::mt19937 rng(11);

int random_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// The formats, from their definitions (OCP MX v1.0; e4m3fn: bias 7, S.1111.111 NaN; e5m2:
// bias 15; e2m1: 0, 0.5, 1, 1.5, 2, 3, 4, 6 with sign bit 3; e8m0 byte b: 2^(b - 127)).
double fp8_value(unsigned v, bool e5m2) {
  const int mbits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
  const unsigned e = (v >> mbits) & ((1u << (7 - mbits)) - 1), m = v & ((1u << mbits) - 1);
  const double f = e ? ldexp(1.0 + (double)m / (1 << mbits), (int)e - bias)
                     : ldexp((double)m / (1 << mbits), 1 - bias);
  return v & 0x80 ? -f : f;
}

double e2m1_value(unsigned code) {
  static const double magnitude[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  return code & 8 ? -magnitude[code & 7] : magnitude[code & 7];
}

// A random finite fp8 byte (e4m3fn without NaN; e5m2 without inf/NaN).
unsigned char random_fp8(bool e5m2) {
  for (;;) {
    const unsigned v = (unsigned)random_int(0, 255);
    if (e5m2 ? ((v >> 2) & 31) != 31 : (v & 0x7f) != 0x7f) return (unsigned char)v;
  }
}

enum format { MXFP8, MXFP4, NVFP4 };

struct problem {
  format f = MXFP8;
  bool a_e5m2 = false, b_e5m2 = false;
  bool b_row_major = false;  // mat2 [K, N] row-major instead of torch's transpose of [N, K]
  long long M = 1, N = 1, K = 32, scale_pitch_pad = 0;
  std::vector<unsigned char> a, b, sa, sb;
  std::vector<unsigned short> bias;  // bf16 bits
  xr_gemm_args_t p;

  bool fp4() const { return f != MXFP8; }
  long long block() const { return f == NVFP4 ? 16 : 32; }
  long long kb() const { return (K + block() - 1) / block(); }
  long long pitch() const { return kb() + scale_pitch_pad; }

  void make() {
    const long long kbytes = fp4() ? K / 2 : K;
    a.resize(M * kbytes), b.resize(kbytes * N);
    for (auto &x : a) x = fp4() ? (unsigned char)random_int(0, 255) : random_fp8(a_e5m2);
    for (auto &x : b) x = fp4() ? (unsigned char)random_int(0, 255) : random_fp8(b_e5m2);
    sa.resize(M * pitch()), sb.resize(N * pitch());
    for (auto *s : {&sa, &sb})
      for (auto &x : *s)  // e8m0 near 1; nvfp4: e4m3fn 2^-3 .. 2^3, positive
        x = f == NVFP4 ? (unsigned char)random_int(0x20, 0x50) : (unsigned char)random_int(122, 132);
    bias.resize(N);
    for (auto &x : bias) x = xr_f32_to_bf16(std::uniform_real_distribution<float>(-1, 1)(rng));

    memset(&p, 0, sizeof p);
    p.M = M, p.N = N, p.K = K, p.batch = 1, p.batch_rank = 0;
    p.a.row_stride = kbytes, p.a.col_stride = 1;
    if (b_row_major) p.b.row_stride = N, p.b.col_stride = 1;
    else p.b.row_stride = 1, p.b.col_stride = kbytes;
    p.c.row_stride = 0, p.c.col_stride = 1;
    p.out.row_stride = N, p.out.col_stride = 1;
    p.alpha = 1.0f, p.beta = 1.0f, p.has_c = 1;
    p.a_dtype = fp4() ? XR_GPU_F4E2M1X2 : a_e5m2 ? XR_GPU_F8E5M2 : XR_GPU_F8E4M3FN;
    p.b_dtype = fp4() ? XR_GPU_F4E2M1X2 : b_e5m2 ? XR_GPU_F8E5M2 : XR_GPU_F8E4M3FN;
    p.c_dtype = XR_GPU_BF16, p.out_dtype = XR_GPU_F32;
    p.scale_a_stride = pitch(), p.scale_b_stride = pitch();
    p.block = (int)block(), p.scale_dtype = f == NVFP4 ? XR_GPU_F8E4M3FN : XR_GPU_F8E8M0;
  }

  double scale(const std::vector<unsigned char> &s, long long r, long long k) const {
    const unsigned v = s[r * pitch() + k / block()];
    return f == NVFP4 ? fp8_value(v, false) : ldexp(1.0, (int)v - 127);
  }
  double a_at(long long m, long long k) const {
    if (!fp4()) return fp8_value(a[m * K + k], a_e5m2) * scale(sa, m, k);
    const unsigned byte = a[m * (K / 2) + k / 2];
    return e2m1_value(k % 2 ? byte >> 4 : byte & 15) * scale(sa, m, k);
  }
  double b_at(long long k, long long n) const {
    const long long kbytes = fp4() ? K / 2 : K;
    const long long at = b_row_major ? (fp4() ? k / 2 : k) * N + n : n * kbytes + (fp4() ? k / 2 : k);
    if (!fp4()) return fp8_value(b[at], b_e5m2) * scale(sb, n, k);
    return e2m1_value(k % 2 ? b[at] >> 4 : b[at] & 15) * scale(sb, n, k);
  }
};

// Launches as kernels/gemm_device.c does and compares every output with float64.
void expect_matches(const char *what, problem &P) {
  P.make();
  const xr_gemm_args_t p = P.p;
  std::vector<float> out(P.M * P.N, NAN);
  const float *no_result_scale = nullptr;
  const bool gemv = P.M == 1 && p.b.row_stride == 1 && XR_GEMV_THREADS % warpSize == 0;
  const unsigned char *c = reinterpret_cast<const unsigned char *>(P.bias.data());
  unsigned char *o = reinterpret_cast<unsigned char *>(out.data());
  if (gemv) {
    const unsigned columns = XR_GEMV_THREADS / warpSize;
    xr_emu_launch(xr_emu_dim{(unsigned)((P.N + columns - 1) / columns), 1, 1}, XR_GEMV_THREADS, [&] {
      xr_gemv_block(P.a.data(), P.b.data(), c, o, P.sa.data(), P.sb.data(), no_result_scale, p);
    });
  } else {
    const xr_emu_dim grid{(unsigned)((P.N + XR_GEMM_TILE_N - 1) / XR_GEMM_TILE_N),
                          (unsigned)((P.M + XR_GEMM_TILE_M - 1) / XR_GEMM_TILE_M), 1};
    xr_emu_launch(grid, xr_emu_dim{XR_GEMM_THREADS_X, XR_GEMM_THREADS_Y, 1}, [&] {
      xr_gemm_tiled_block(P.a.data(), P.b.data(), c, o, P.sa.data(), P.sb.data(), no_result_scale, p);
    });
  }
  for (long long m = 0; m < P.M; m++) {
    for (long long n = 0; n < P.N; n++) {
      double acc = 0, magnitude = 0;
      for (long long k = 0; k < P.K; k++) {
        const double term = P.a_at(m, k) * P.b_at(k, n);
        acc += term;
        magnitude += fabs(term);
      }
      const double want = acc + xr_bf16_to_f32(P.bias[n]), got = out[m * P.N + n];
      cr_assert(!std::isnan(got), "%s: out[%lld][%lld] unwritten or NaN", what, m, n);
      cr_assert_leq(fabs(got - want), 1e-5 * (magnitude + 1.0), "%s (warp %d): out[%lld][%lld] %.9g, expected %.9g",
                    what, warpSize, m, n, got, want);
    }
  }
  cr_log_info("%s (warp %d, %s): %lld x %lld outputs", what, warpSize, gemv ? "gemv" : "tiled", P.M, P.N);
}

}  // namespace

Test(gemm_emulated, mxfp8_tiled_and_decode_row) {
  problem P;
  P.f = MXFP8, P.M = 17, P.N = 33, P.K = 96;
  expect_matches("mxfp8 e4m3fn 17x33x96", P);
  P.a_e5m2 = true, P.M = 70, P.N = 5, P.K = 80, P.b_row_major = true, P.scale_pitch_pad = 1;
  expect_matches("mxfp8 e5m2 x e4m3fn 70x5x80 (a shorter last block), row-major mat2", P);
  P.a_e5m2 = false, P.M = 1, P.N = 129, P.K = 64, P.b_row_major = false, P.scale_pitch_pad = 0;
  expect_matches("mxfp8 decode row 1x129x64", P);
}

Test(gemm_emulated, mxfp4_tiled_and_decode_row) {
  problem P;
  P.f = MXFP4, P.M = 17, P.N = 33, P.K = 128;
  expect_matches("mxfp4 17x33x128", P);
  P.M = 9, P.N = 65, P.K = 64, P.b_row_major = true, P.scale_pitch_pad = 2;
  expect_matches("mxfp4 9x65x64, row-major mat2, padded scale pitch", P);
  P.M = 1, P.N = 70, P.K = 256, P.b_row_major = false, P.scale_pitch_pad = 0;
  expect_matches("mxfp4 decode row 1x70x256", P);
}

Test(gemm_emulated, nvfp4_tiled_and_decode_row) {
  problem P;
  P.f = NVFP4, P.M = 65, P.N = 17, P.K = 96;
  expect_matches("nvfp4 65x17x96", P);
  P.M = 1, P.N = 33, P.K = 128;
  expect_matches("nvfp4 decode row 1x33x128", P);
}

// The other kernels share the tiles and the warp-per-column loop (and the operand loaders'
// interface): fp32 and fp8 per-tensor _scaled_mm, tiled and M == 1, against float64.
Test(gemm_emulated, f32_and_per_tensor_scaled_share_the_loops) {
  for (long long M : {1LL, 19LL}) {
    const long long N = 70, K = 45;
    std::vector<float> a(M * K), b(K * N), out(M * N, NAN);
    std::vector<unsigned char> a8(M * K), b8(K * N), out8(M * N * 4);
    for (auto &x : a) x = std::uniform_real_distribution<float>(-1, 1)(rng);
    for (auto &x : b) x = std::uniform_real_distribution<float>(-1, 1)(rng);
    for (auto &x : a8) x = random_fp8(false);
    for (auto &x : b8) x = random_fp8(true);
    const float scale_a = 0.5f, scale_b = 0.25f;
    xr_gemm_args_t p;
    memset(&p, 0, sizeof p);
    p.M = M, p.N = N, p.K = K, p.batch = 1;
    p.a.row_stride = K, p.a.col_stride = 1, p.b.row_stride = 1, p.b.col_stride = K;  // B = [N, K]^T
    p.out.row_stride = N, p.out.col_stride = 1, p.alpha = 1.0f;
    const bool gemv = M == 1;
    const unsigned columns = XR_GEMV_THREADS / warpSize;
    const xr_emu_dim grid = gemv ? xr_emu_dim{(unsigned)((N + columns - 1) / columns), 1, 1}
                                 : xr_emu_dim{(unsigned)((N + 63) / 64), (unsigned)((M + 63) / 64), 1};
    const xr_emu_dim block = gemv ? xr_emu_dim{XR_GEMV_THREADS, 1, 1} : xr_emu_dim{16, 16, 1};
    xr_emu_launch(grid, block, [&] {
      if (gemv) xr_gemv_f32(a.data(), b.data(), nullptr, out.data(), p);
      else xr_gemm_tiled_f32(a.data(), b.data(), nullptr, out.data(), p);
    });
    xr_gemm_args_t q = p;
    q.a_dtype = XR_GPU_F8E4M3FN, q.b_dtype = XR_GPU_F8E5M2, q.out_dtype = XR_GPU_F32;
    std::vector<float> out_s(M * N, NAN);
    unsigned char *o = reinterpret_cast<unsigned char *>(out_s.data());
    xr_emu_launch(grid, block, [&] {
      if (gemv) xr_gemv_scaled(a8.data(), b8.data(), nullptr, o, &scale_a, &scale_b, nullptr, q);
      else xr_gemm_tiled_scaled(a8.data(), b8.data(), nullptr, o, &scale_a, &scale_b, nullptr, q);
    });
    for (long long m = 0; m < M; m++)
      for (long long n = 0; n < N; n++) {
        double want = 0, want_s = 0, mag = 0, mag_s = 0;
        for (long long k = 0; k < K; k++) {
          want += (double)a[m * K + k] * b[n * K + k];
          mag += fabs((double)a[m * K + k] * b[n * K + k]);
          const double t = fp8_value(a8[m * K + k], false) * fp8_value(b8[n * K + k], true);
          want_s += t, mag_s += fabs(t);
        }
        want_s *= (double)scale_a * scale_b, mag_s *= (double)scale_a * scale_b;
        cr_assert_leq(fabs(out[m * N + n] - want), 1e-5 * (mag + 1), "f32 %lldx%lld: [%lld][%lld]", M, N, m, n);
        cr_assert_leq(fabs(out_s[m * N + n] - want_s), 1e-5 * (mag_s + 1), "scaled %lldx%lld: [%lld][%lld]", M, N,
                      m, n);
      }
  }
}
