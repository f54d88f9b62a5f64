// kernels/gpu/norm.cu's fused add + RMS norm (xr_add_rms_norm) executed on the CPU under
// tests/gpu/cuda_emulation.h, once per warp width (XR_EMULATED_WARP=32 and 64), launched as
// kernels/norm_device.c launches it: vLLM's in place form (out is x, residual_out is
// residual_in: the sum as stored is normalised) and aiter's out-of-place one (four buffers, the
// fp32 sum normalised), bf16 and f16, rows of 1, 300 and 1000 elements, a strided input at an
// offset, and rows built so that the two forms' outputs differ (sums that lose 0.3% when stored
// as bf16). Expected values: the formulas evaluated here in double and rounded once;
// residual_out must match bit for bit, out within one rounding everywhere and exactly in 99% of
// elements. A machine without a GPU thus runs the device code's logic; tests/kernels:norm_matrix_{cuda,hip}
// run it on devices.
#include <criterion/criterion.h>

#include <cmath>
#include <random>
#include <vector>

#include "tests/gpu/cuda_emulation.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "tests/gpu/norm_emulated.inc"
#pragma GCC diagnostic pop

namespace {

std::mt19937 rng(7);

float load(int dtype, const std::vector<unsigned short> &v, long long i) {
  return dtype == XR_GPU_BF16 ? xr_bf16_to_f32(v[i]) : xr_half_to_float(v[i]);
}
unsigned short encode(int dtype, float f) {
  return dtype == XR_GPU_BF16 ? xr_f32_to_bf16(f) : xr_float_to_half(f);
}

struct add_case {
  int dtype;
  long long rows, n, x_stride, x_off;
  bool in_place, fp32_sum;
  bool lossy; /* even elements 1 + k/128 + 3/1024 (stored as 1 + k/128), odd ones -1.5 + 0 */
};

void set_view(xr_rows_args_t &p, int slot, int dtype, long long offset,
              long long row_stride) {
  xr_rows_view_args_t &v = p.v[slot];
  v.offset = offset;
  v.stride = 1;
  v.outer[0] = row_stride;
  v.dtype = dtype;
  v.present = 1;
}

void run(const add_case &c) {
  const long long R = c.rows, n = c.n, xs = c.x_stride ? c.x_stride : n;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<unsigned short> x(c.x_off + R * xs), res(R * n), w(n), out(R * n, 0xffff),
      res_out(R * n, 0xffff);
  for (auto &e : x) e = encode(c.dtype, normal(rng));
  for (auto &e : res) e = encode(c.dtype, normal(rng));
  if (c.lossy)
    for (long long r = 0; r < R; r++)
      for (long long i = 0; i < n; i++) {
        x[c.x_off + r * xs + i] = encode(c.dtype, i % 2 ? -1.5f : 1.0f + (float)(i / 2 % 64) / 128);
        res[r * n + i] = encode(c.dtype, i % 2 ? 0.0f : 3.0f / 1024);
      }
  for (auto &e : w) e = encode(c.dtype, 1.0f + 0.25f * normal(rng));
  const std::vector<unsigned short> x0 = x, res0 = res;

  xr_rows_args_t p;
  memset(&p, 0, sizeof p);
  p.rows = R, p.n = n, p.shape[0] = R, p.outer_rank = 1, p.eps = 1e-6f, p.fp32_sum = c.fp32_sum;
  set_view(p, XR_ROWS_ARG_X, c.dtype, c.x_off, xs);
  set_view(p, XR_ROWS_ARG_RESIDUAL_IN, c.dtype, 0, n);
  set_view(p, XR_ROWS_ARG_WEIGHT, c.dtype, 0, 0);
  if (c.in_place) {
    p.v[XR_ROWS_ARG_OUT] = p.v[XR_ROWS_ARG_X];
    p.v[XR_ROWS_ARG_RESIDUAL_OUT] = p.v[XR_ROWS_ARG_RESIDUAL_IN];
  } else {
    set_view(p, XR_ROWS_ARG_OUT, c.dtype, 0, n);
    set_view(p, XR_ROWS_ARG_RESIDUAL_OUT, c.dtype, 0, n);
  }
  unsigned char *xb = (unsigned char *)x.data(), *rb = (unsigned char *)res.data();
  unsigned char *ob = c.in_place ? xb : (unsigned char *)out.data();
  unsigned char *sb = c.in_place ? rb : (unsigned char *)res_out.data();
  float unused = 0;
  xr_emu_launch(xr_emu_dim{(unsigned)R, 1, 1}, XR_ROWS_GPU_THREADS, [&] {
    xr_add_rms_norm(xb, ob, rb, sb, (const unsigned char *)w.data(), xb, &unused, &unused, p);
  });

  const std::vector<unsigned short> &got_out = c.in_place ? x : out,
                                    &got_sum = c.in_place ? res : res_out;
  const long long out_off = c.in_place ? c.x_off : 0, out_rs = c.in_place ? xs : n;
  long long inexact = 0, discriminating = 0;
  for (long long r = 0; r < R; r++) {
    std::vector<double> sum(n), other(n); /* what this form normalises, and the other form */
    double sq = 0, other_sq = 0;
    for (long long i = 0; i < n; i++) {
      float f = load(c.dtype, x0, c.x_off + r * xs + i) + load(c.dtype, res0, r * n + i);
      unsigned short stored = encode(c.dtype, f);
      cr_assert_eq(got_sum[r * n + i], stored, "row %lld elem %lld: residual_out %#x, expected %#x",
                   r, i, got_sum[r * n + i], stored);
      double rounded = load(c.dtype, got_sum, r * n + i);
      sum[i] = c.fp32_sum ? (double)f : rounded;
      other[i] = c.fp32_sum ? rounded : (double)f;
      sq += sum[i] * sum[i];
      other_sq += other[i] * other[i];
    }
    const double rstd = 1.0 / std::sqrt(sq / (double)n + 1e-6);
    const double other_rstd = 1.0 / std::sqrt(other_sq / (double)n + 1e-6);
    const double ulp = c.dtype == XR_GPU_BF16 ? 1.0 / 128 : 1.0 / 1024;
    for (long long i = 0; i < n; i++) {
      const double want = sum[i] * rstd * load(c.dtype, w, i);
      const unsigned short have_bits = got_out[out_off + r * out_rs + i];
      const double have = load(c.dtype, got_out, out_off + r * out_rs + i);
      cr_assert(std::fabs(have - want) <= ulp * std::fabs(want) + 1e-6,
                "row %lld elem %lld: out %g, expected %g", r, i, have, want);
      inexact += have_bits != encode(c.dtype, (float)want);
      discriminating += encode(c.dtype, (float)(other[i] * other_rstd * load(c.dtype, w, i))) !=
                        encode(c.dtype, (float)want);
    }
  }
  cr_assert_leq(inexact * 100, R * n, "%lld of %lld outputs are not the nearest value", inexact,
                R * n);
  if (c.lossy) /* the other form's outputs differ: this case tells the two apart */
    cr_assert_geq(discriminating * 20, R * n, "%lld of %lld", discriminating, R * n);
  if (!c.in_place) { /* the inputs are only read */
    cr_assert(x == x0 && res == res0, "input or residual_in was written");
  }
}

}  // namespace

Test(norm_emulated, add_rms_norm_in_place_normalises_the_stored_sum) {
  run({XR_GPU_BF16, 3, 300, 0, 0, true, false, false});
  run({XR_GPU_F16, 2, 1000, 0, 0, true, false, false});
  run({XR_GPU_BF16, 2, 1, 0, 0, true, false, false});
  run({XR_GPU_BF16, 2, 512, 0, 0, true, false, true});
}

Test(norm_emulated, add_rms_norm_out_of_place_normalises_the_fp32_sum) {
  run({XR_GPU_BF16, 3, 300, 0, 0, false, true, false});
  run({XR_GPU_F16, 2, 1000, 1003, 5, false, true, false});
  run({XR_GPU_BF16, 2, 1, 0, 0, false, true, false});
  run({XR_GPU_BF16, 2, 512, 520, 3, false, true, true});
}
