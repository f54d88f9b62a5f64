// kernels/gpu/loss.cu's kernels executed on the CPU under tests/gpu/cuda_emulation.h, once per
// warp width (XR_EMULATED_WARP=32 and 64), launched as kernels/loss_device.c launches them (256
// threads a block; the sum in one block): mse_loss with reduction none, mean and sum over a
// target broadcast along the rows and a transposed self, and mse_loss_backward with a 0-d
// gradient, against a double-precision evaluation here. tests/kernels:loss_matrix_{cuda,hip}
// run the same kernels on devices, against the CPU reference.
#include <criterion/criterion.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "tests/gpu/cuda_emulation.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "tests/gpu/loss_emulated.inc"
#pragma GCC diagnostic pop

namespace {

std::mt19937 rng(11);
float normal() { return std::normal_distribution<float>(0.0f, 1.0f)(rng); }

// self [r, c] stored transposed (strides 1, r), target [c] broadcast over the rows, the result
// contiguous [r, c] (or one element).
xr_loss_dev_args_t args(long long r, long long c, int backward, int reduction) {
  xr_loss_dev_args_t a;
  memset(&a, 0, sizeof a);
  a.rank = 2, a.shape[0] = r, a.shape[1] = c, a.numel = r * c;
  a.strides[0][0] = 1, a.strides[0][1] = r;   // self, transposed
  a.strides[1][0] = 0, a.strides[1][1] = 1;   // target row
  a.strides[2][0] = 0, a.strides[2][1] = 0;   // a 0-d gradient
  a.strides[3][0] = c, a.strides[3][1] = 1;   // the result
  for (int s = 0; s < 4; s++) a.dtype[s] = XR_GPU_F32;
  a.backward = backward, a.reduction = reduction;
  a.norm = reduction == 1 ? 2.0f / (float)(r * c) : 2.0f;
  return a;
}

void run(bool sum, const xr_loss_dev_args_t &a, const float *self, const float *target,
         const float *grad, float *out) {
  const unsigned blocks = sum ? 1u : 5u;  // grid-stride loops too
  xr_emu_launch(xr_emu_dim{blocks, 1, 1}, XR_LOSS_DEV_THREADS, [&] {
    const unsigned char *s = (const unsigned char *)self, *t = (const unsigned char *)target,
                        *g = (const unsigned char *)grad;
    if (sum) xr_loss_sum(s, t, g, (unsigned char *)out, a);
    else xr_loss_elements(s, t, g, (unsigned char *)out, a);
  });
}

}  // namespace

Test(loss_emulated, mse_loss_and_backward_match_double_sums) {
  for (long long c : {3LL, 700LL}) {
    const long long r = 9;
    std::vector<float> self(r * c), target(c), grad = {0.75f};
    for (float &v : self) v = normal();
    for (float &v : target) v = normal();
    auto d = [&](long long i, long long j) { return (double)self[j * r + i] - target[j]; };
    std::vector<float> none(r * c, NAN), back(r * c, NAN), mean(1, NAN), sum(1, NAN);
    run(false, args(r, c, 0, 0), self.data(), target.data(), grad.data(), none.data());
    run(true, args(r, c, 0, 1), self.data(), target.data(), grad.data(), mean.data());
    run(true, args(r, c, 0, 2), self.data(), target.data(), grad.data(), sum.data());
    run(false, args(r, c, 1, 1), self.data(), target.data(), grad.data(), back.data());
    double total = 0;
    for (long long i = 0; i < r; i++)
      for (long long j = 0; j < c; j++) {
        const double want = d(i, j) * d(i, j), grad_want = 2.0 / (r * c) * d(i, j) * 0.75;
        total += want;
        cr_assert(std::fabs(none[i * c + j] - want) <= 1e-6 * (1 + want), "none[%lld, %lld]: %g, want %g",
                  i, j, none[i * c + j], want);
        cr_assert(std::fabs(back[i * c + j] - grad_want) <= 1e-6 * (1 + std::fabs(grad_want)),
                  "backward[%lld, %lld]: %g, want %g", i, j, back[i * c + j], grad_want);
      }
    cr_assert(std::fabs(sum[0] - total) <= 1e-5 * total, "sum: %g, want %g", sum[0], total);
    cr_assert(std::fabs(mean[0] - total / (r * c)) <= 1e-5 * total / (r * c), "mean: %g, want %g",
              mean[0], total / (r * c));
  }
  // an empty mean is NaN, an empty sum 0
  std::vector<float> out(1, 7.0f);
  run(true, args(0, 3, 0, 1), nullptr, nullptr, nullptr, out.data());
  cr_assert(std::isnan(out[0]), "empty mean: %g", out[0]);
  run(true, args(0, 3, 0, 2), nullptr, nullptr, nullptr, out.data());
  cr_assert_eq(out[0], 0.0f);
}
