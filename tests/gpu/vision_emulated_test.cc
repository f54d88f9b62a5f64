// kernels/gpu/conv.cu, pool.cu and channel_norm.cu executed on the CPU under
// tests/gpu/cuda_emulation.h, once per warp width (XR_EMULATED_WARP=32 and 64), with argument
// blocks filled as kernels/conv_device.c and kernels/vision_device.c fill them: a grouped,
// strided, padded and dilated 2-D convolution's four steps; max, average (ceil_mode, padding
// counted), adaptive (overlapping cells) pooling and their backwards, nearest and bilinear
// upsampling; batch norm in training with running statistics and its backward; group norm and
// its backward with the parameter gradients. Expected values: the formulas evaluated here in
// double, on fp32 tensors; results within 1e-4 relative. A machine without a GPU thus runs the
// device code's logic; tests/kernels:conv_matrix_* and vision_matrix_* (cuda, hip) run it on
// devices.
#include <criterion/criterion.h>

#include <cmath>
#include <random>
#include <vector>

#include "tests/gpu/cuda_emulation.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "tests/gpu/channel_norm_emulated.inc"
#include "tests/gpu/conv_emulated.inc"
#include "tests/gpu/pool_emulated.inc"
#pragma GCC diagnostic pop

namespace {

std::mt19937 rng(5);

std::vector<float> randoms(size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float &f : v) f = u(rng);
  return v;
}

// A contiguous [n, c, 1, h, w] fp32 tensor (the canonical 2-D form: d of size 1, stride 0).
struct t4 {
  long long n, c, h, w;
  std::vector<float> v;
  long long at(long long i0, long long i1, long long i2, long long i3) const {
    return ((i0 * c + i1) * h + i2) * w + i3;
  }
  float &operator()(long long i0, long long i1, long long i2, long long i3) {
    return v[at(i0, i1, i2, i3)];
  }
  float operator()(long long i0, long long i1, long long i2, long long i3) const {
    return v[at(i0, i1, i2, i3)];
  }
};

t4 make(long long n, long long c, long long h, long long w, bool random = true) {
  t4 t{n, c, h, w, {}};
  t.v =
      random ? randoms((size_t)(n * c * h * w)) : std::vector<float>((size_t)(n * c * h * w), NAN);
  return t;
}

void strides5(const t4 &t, long *s) {
  s[0] = (long)(t.c * t.h * t.w), s[1] = (long)(t.h * t.w), s[2] = 0, s[3] = (long)t.w, s[4] = 1;
}

void expect_near(const char *what, const std::vector<float> &got, const std::vector<double> &want) {
  cr_assert_eq(got.size(), want.size(), "%s: sizes", what);
  for (size_t i = 0; i < got.size(); i++)
    cr_assert(std::fabs(got[i] - want[i]) <= 1e-4 * (1 + std::fabs(want[i])),
              "%s[%zu]: %g, expected %g", what, i, got[i], want[i]);
}

// ---- convolution ------------------------------------------------------------------------------

// N=2, C_in=4, C_out=6, 2 groups, 7x6 input, 3x2 kernel, stride (2, 1), pad (1, 1), dilation
// (1, 2): 4x6 output.
struct conv_case {
  long long n = 2, ci = 4, co = 6, groups = 2, ih = 7, iw = 6, kh = 3, kw = 2;
  long long sh = 2, sw = 1, ph = 1, pw = 1, dh = 1, dw = 2;
  long long oh() const {
    return (ih + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
  }
  long long ow() const {
    return (iw + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
  }
};

void operand(xr_conv_operand_args_t &o, const t4 &t) {
  o.offset = 0, o.dtype = XR_GPU_F32;
  o.shape[0] = (long)t.n, o.shape[1] = (long)t.c, o.shape[2] = 1, o.shape[3] = (long)t.h;
  o.shape[4] = (long)t.w;
  strides5(t, o.strides);
}

xr_conv_args_t conv_args(const conv_case &k, const t4 &x, const t4 &w, const t4 &y, long total) {
  xr_conv_args_t a;
  memset(&a, 0, sizeof a);
  a.n = k.n, a.groups = k.groups, a.c_in = k.ci, a.c_out = k.co;
  const long in[3] = {1, (long)k.ih, (long)k.iw}, out[3] = {1, (long)k.oh(), (long)k.ow()};
  const long win[3] = {1, (long)k.kh, (long)k.kw}, st[3] = {1, (long)k.sh, (long)k.sw};
  const long pad[3] = {0, (long)k.ph, (long)k.pw}, dil[3] = {1, (long)k.dh, (long)k.dw};
  for (int d = 0; d < 3; d++) {
    a.in_size[d] = in[d], a.out_size[d] = out[d], a.window[d] = win[d];
    a.stride[d] = st[d], a.pad[d] = pad[d], a.dilation[d] = dil[d];
  }
  operand(a.x, x), operand(a.w, w), operand(a.y, y);
  a.total = total;
  return a;
}

template <class F>
void launch_conv(long total, F kernel) {
  xr_emu_launch(xr_emu_dim{(unsigned)((total + XR_CONV_THREADS - 1) / XR_CONV_THREADS), 1, 1},
                XR_CONV_THREADS, kernel);
}

// Calls f(n, co, oh, ow, ci, kh, kw, ih, iw) for every product of the forward convolution.
template <class F>
void each_product(const conv_case &k, F f) {
  const long long cg_in = k.ci / k.groups, cg_out = k.co / k.groups;
  for (long long n = 0; n < k.n; n++)
    for (long long co = 0; co < k.co; co++)
      for (long long oh = 0; oh < k.oh(); oh++)
        for (long long ow = 0; ow < k.ow(); ow++)
          for (long long c = 0; c < cg_in; c++)
            for (long long a = 0; a < k.kh; a++)
              for (long long b = 0; b < k.kw; b++) {
                const long long ih = oh * k.sh - k.ph + a * k.dh, iw = ow * k.sw - k.pw + b * k.dw;
                if (ih < 0 || ih >= k.ih || iw < 0 || iw >= k.iw) continue;
                f(n, co, oh, ow, co / cg_out * cg_in + c, c, a, b, ih, iw);
              }
}

// The grid of an implicit-GEMM step whose GEMM view is m x n per group.
xr_emu_dim gemm_grid(long long m, long long n, long long groups) {
  return xr_emu_dim{(unsigned)((m + XR_CONV_TILE - 1) / XR_CONV_TILE),
                    (unsigned)((n + XR_CONV_TILE - 1) / XR_CONV_TILE), (unsigned)groups};
}

// k's three products, on the direct kernels or the implicit GEMMs (`gemm`), against the formulas;
// the forward with a bias.
void check_products(const conv_case &k, bool gemm) {
  t4 x = make(k.n, k.ci, k.ih, k.iw), w = make(k.co, k.ci / k.groups, k.kh, k.kw);
  t4 y = make(k.n, k.co, k.oh(), k.ow(), false);
  std::vector<float> bias = randoms((size_t)k.co);
  const long long cg_in = k.ci / k.groups, cg_out = k.co / k.groups, window = k.kh * k.kw;
  const char *how = gemm ? "implicit GEMM" : "direct";

  // FORWARD with bias
  xr_conv_args_t a = conv_args(k, x, w, y, (long)y.v.size());
  a.has_bias = 1;
  a.bias.dtype = XR_GPU_F32, a.bias.shape[0] = (long)k.co, a.bias.strides[0] = 1;
  auto forward = [&] {
    if (gemm)
      xr_conv_forward_gemm(a, (const unsigned char *)x.v.data(), (const unsigned char *)w.v.data(),
                           (unsigned char *)y.v.data(), (const unsigned char *)bias.data());
    else
      xr_conv_forward(a, (const unsigned char *)x.v.data(), (const unsigned char *)w.v.data(),
                      (unsigned char *)y.v.data(), (const unsigned char *)bias.data());
  };
  if (gemm)
    xr_emu_launch(gemm_grid(k.n * k.oh() * k.ow(), cg_out, k.groups), XR_CONV_GEMM_THREADS,
                  forward);
  else
    launch_conv(a.total, forward);
  std::vector<double> want(y.v.size());
  for (long long i = 0; i < (long long)want.size(); i++)
    want[i] = bias[(i / (k.oh() * k.ow())) % k.co];
  each_product(k, [&](auto n, auto co, auto oh, auto ow, auto ci, auto c, auto kh, auto kw, auto ih,
                      auto iw) {
    want[y.at(n, co, oh, ow)] += (double)x(n, ci, ih, iw) * w(co, c, kh, kw);
  });
  cr_log_info("%s forward", how);
  expect_near("forward", y.v, want);

  // BACKWARD_DATA: x' = sum of y * w over the products that read x (no bias)
  t4 dx = make(k.n, k.ci, k.ih, k.iw, false);
  a = conv_args(k, dx, w, y, (long)dx.v.size());
  auto backward_data = [&] {
    unsigned char *out = (unsigned char *)dx.v.data();
    const unsigned char *wp = (const unsigned char *)w.v.data(),
                        *yp = (const unsigned char *)y.v.data();
    if (gemm)
      xr_conv_backward_data_gemm(a, out, wp, yp, wp);
    else
      xr_conv_backward_data(a, out, wp, yp, wp);
  };
  if (gemm)
    xr_emu_launch(gemm_grid(k.n * k.ih * k.iw, cg_in, k.groups), XR_CONV_GEMM_THREADS,
                  backward_data);
  else
    launch_conv(a.total, backward_data);
  want.assign(dx.v.size(), 0.0);
  each_product(k, [&](auto n, auto co, auto oh, auto ow, auto ci, auto c, auto kh, auto kw, auto ih,
                      auto iw) {
    want[dx.at(n, ci, ih, iw)] += (double)y(n, co, oh, ow) * w(co, c, kh, kw);
  });
  cr_log_info("%s backward data", how);
  expect_near("backward_data", dx.v, want);

  // BACKWARD_WEIGHT: w' = sum of y * x
  t4 dw = make(k.co, k.ci / k.groups, k.kh, k.kw, false);
  a = conv_args(k, x, dw, y, (long)dw.v.size());
  auto backward_weight = [&] {
    const unsigned char *xp = (const unsigned char *)x.v.data(),
                        *yp = (const unsigned char *)y.v.data();
    unsigned char *out = (unsigned char *)dw.v.data();
    if (gemm)
      xr_conv_backward_weight_gemm(a, xp, out, yp, xp);
    else
      xr_conv_backward_weight(a, xp, out, yp, xp);
  };
  if (gemm)
    xr_emu_launch(gemm_grid(cg_out, cg_in * window, k.groups), XR_CONV_GEMM_THREADS,
                  backward_weight);
  else
    launch_conv(a.total, backward_weight);
  want.assign(dw.v.size(), 0.0);
  each_product(k, [&](auto n, auto co, auto oh, auto ow, auto ci, auto c, auto kh, auto kw, auto ih,
                      auto iw) {
    want[dw.at(co, c, kh, kw)] += (double)y(n, co, oh, ow) * x(n, ci, ih, iw);
  });
  cr_log_info("%s backward weight", how);
  expect_near("backward_weight", dw.v, want);
}

}  // namespace

Test(vision_emulated, convolution_steps) {
  conv_case k;
  check_products(k, false);

  // BIAS_GRAD: the sums of y's channels
  t4 x = make(k.n, k.ci, k.ih, k.iw), w = make(k.co, k.ci / k.groups, k.kh, k.kw);
  t4 y = make(k.n, k.co, k.oh(), k.ow());
  std::vector<float> bias_grad((size_t)k.co, NAN);
  xr_conv_args_t a = conv_args(k, x, w, y, (long)k.co);
  a.bias.dtype = XR_GPU_F32, a.bias.shape[0] = (long)k.co, a.bias.strides[0] = 1;
  launch_conv(a.total, [&] {
    xr_conv_bias_grad(a, (const unsigned char *)x.v.data(), (const unsigned char *)w.v.data(),
                      (const unsigned char *)y.v.data(), (unsigned char *)bias_grad.data());
  });
  std::vector<double> want((size_t)k.co, 0.0);
  for (long long i = 0; i < (long long)y.v.size(); i++)
    want[(i / (k.oh() * k.ow())) % k.co] += y.v[i];
  expect_near("bias_grad", bias_grad, want);
}

// The implicit GEMMs on a case of several tiles in M and N, partial tiles and K slices (the
// forward's K is 9 x 3 x 3 = 81, five slices of 16), 2 groups, stride, padding and dilation.
Test(vision_emulated, implicit_gemm_convolution_steps) {
  conv_case k;
  k.n = 2, k.ci = 18, k.co = 68, k.groups = 2, k.ih = 11, k.iw = 9, k.kh = 3, k.kw = 3;
  k.sh = 1, k.sw = 2, k.ph = 1, k.pw = 2, k.dh = 2, k.dw = 1;
  check_products(k, true);
}

// ---- pooling ----------------------------------------------------------------------------------

namespace {

void view(xr_view5_args_t &v, const t4 &t, int dtype = XR_GPU_F32) {
  v.offset = 0, v.dtype = dtype;
  strides5(t, v.strides);
}

xr_pool_args_t pool_args(int kind, const t4 &in, long long oh, long long ow, long long k,
                         long long s, long long p) {
  xr_pool_args_t a;
  memset(&a, 0, sizeof a);
  a.kind = kind, a.planes_c = (long)in.c;
  const long isz[3] = {1, (long)in.h, (long)in.w}, osz[3] = {1, (long)oh, (long)ow};
  for (int d = 0; d < 3; d++) {
    a.in_size[d] = isz[d], a.out_size[d] = osz[d];
    a.window[d] = d ? (long)k : 1, a.stride[d] = d ? (long)s : 1, a.pad[d] = d ? (long)p : 0;
    a.dilation[d] = 1;
    a.src_scale[d] = (float)isz[d] / (float)osz[d];
  }
  a.count_include_pad = 1;
  a.indices.dtype = -1;
  return a;
}

void launch_pool(bool backward, xr_pool_args_t a, t4 &x, t4 &y, std::vector<long long> &ix) {
  a.total = (long)(backward ? x.v.size() : y.v.size());
  view(a.x, x), view(a.y, y);
  if (!ix.empty()) {
    t4 shape = y;
    view(a.indices, shape, XR_GPU_I64);
  }
  xr_emu_launch(xr_emu_dim{(unsigned)((a.total + XR_POOL_THREADS - 1) / XR_POOL_THREADS), 1, 1},
                XR_POOL_THREADS, [&] {
                  if (backward)
                    xr_pool_backward(a, (unsigned char *)x.v.data(),
                                     (const unsigned char *)y.v.data(),
                                     (const unsigned char *)ix.data());
                  else
                    xr_pool_forward(a, (const unsigned char *)x.v.data(),
                                    (unsigned char *)y.v.data(), (unsigned char *)ix.data());
                });
}

// The input cells of average pooling's output cell (oh, ow) and its divisor, as PyTorch's
// avg_pool2d computes them (ceil_mode windows clipped to the padded input).
double avg_cell(const t4 &x, long long oh, long long ow, long long k, long long s, long long p,
                bool adaptive, long long out_h, long long out_w, long long *win) {
  if (adaptive) {
    win[0] = oh * x.h / out_h, win[1] = ((oh + 1) * x.h + out_h - 1) / out_h;
    win[2] = ow * x.w / out_w, win[3] = ((ow + 1) * x.w + out_w - 1) / out_w;
    return (double)((win[1] - win[0]) * (win[3] - win[2]));
  }
  long long h0 = oh * s - p, w0 = ow * s - p;
  long long h1 = std::min(h0 + k, x.h + p), w1 = std::min(w0 + k, x.w + p);
  double divisor = (double)((h1 - h0) * (w1 - w0));
  win[0] = std::max(h0, 0LL), win[1] = std::min(h1, x.h), win[2] = std::max(w0, 0LL);
  win[3] = std::min(w1, x.w);
  return divisor;
}

}  // namespace

Test(vision_emulated, pooling_and_backwards) {
  t4 x = make(2, 3, 9, 8);
  std::vector<long long> none, ix;
  // max 3x3 / 2, pad 1: 5x4, with indices
  t4 y = make(2, 3, 5, 4, false);
  ix.assign(y.v.size(), -7);
  launch_pool(false, pool_args(XR_POOL_ARGS_MAX, x, 5, 4, 3, 2, 1), x, y, ix);
  std::vector<double> want(y.v.size());
  std::vector<double> want_ix(y.v.size());
  for (long long n = 0; n < 2; n++)
    for (long long c = 0; c < 3; c++)
      for (long long oh = 0; oh < 5; oh++)
        for (long long ow = 0; ow < 4; ow++) {
          double best = -INFINITY;
          long long at = -1;
          for (long long ih = oh * 2 - 1; ih < oh * 2 + 2; ih++)
            for (long long iw = ow * 2 - 1; iw < ow * 2 + 2; iw++)
              if (ih >= 0 && ih < 9 && iw >= 0 && iw < 8 && x(n, c, ih, iw) > best)
                best = x(n, c, ih, iw), at = ih * 8 + iw;
          want[y.at(n, c, oh, ow)] = best, want_ix[y.at(n, c, oh, ow)] = (double)at;
        }
  expect_near("max_pool", y.v, want);
  for (size_t i = 0; i < ix.size(); i++) cr_assert_eq((double)ix[i], want_ix[i], "indices[%zu]", i);

  // its backward: each gradient added at its index
  t4 g = make(2, 3, 5, 4), dx = make(2, 3, 9, 8, false);
  launch_pool(true, pool_args(XR_POOL_ARGS_MAX_BACKWARD, x, 5, 4, 3, 2, 1), dx, g, ix);
  want.assign(dx.v.size(), 0.0);
  for (long long i = 0; i < (long long)g.v.size(); i++) want[(i / 20) * 72 + ix[i]] += g.v[i];
  expect_near("max_pool_backward", dx.v, want);

  // average 3x3 / 2, pad 1 counted (9 -> 5, and 8 -> 5 as ceil_mode sizes it: the last window
  // clipped to the padded input), and the adaptive 9x8 -> 4x3, forward and backward
  for (int adaptive = 0; adaptive < 2; adaptive++) {
    const long long oh_n = adaptive ? 4 : 5, ow_n = adaptive ? 3 : 5;
    xr_pool_args_t a =
        pool_args(adaptive ? XR_POOL_ARGS_ADAPTIVE_AVG : XR_POOL_ARGS_AVG, x, oh_n, ow_n, 3, 2, 1);
    t4 ya = make(2, 3, oh_n, ow_n, false);
    launch_pool(false, a, x, ya, none);
    want.assign(ya.v.size(), 0.0);
    std::vector<double> want_dx(x.v.size(), 0.0);
    t4 ga = make(2, 3, oh_n, ow_n), dxa = make(2, 3, 9, 8, false);
    for (long long n = 0; n < 2; n++)
      for (long long c = 0; c < 3; c++)
        for (long long oh = 0; oh < oh_n; oh++)
          for (long long ow = 0; ow < ow_n; ow++) {
            long long win[4];
            const double divisor = avg_cell(x, oh, ow, 3, 2, 1, adaptive, oh_n, ow_n, win);
            for (long long ih = win[0]; ih < win[1]; ih++)
              for (long long iw = win[2]; iw < win[3]; iw++) {
                want[ya.at(n, c, oh, ow)] += x(n, c, ih, iw) / divisor;
                want_dx[x.at(n, c, ih, iw)] += ga(n, c, oh, ow) / divisor;
              }
          }
    expect_near(adaptive ? "adaptive_avg_pool" : "avg_pool", ya.v, want);
    a.kind = adaptive ? XR_POOL_ARGS_ADAPTIVE_AVG_BACKWARD : XR_POOL_ARGS_AVG_BACKWARD;
    launch_pool(true, a, dxa, ga, none);
    expect_near(adaptive ? "adaptive_avg_pool_backward" : "avg_pool_backward", dxa.v, want_dx);
  }
}

Test(vision_emulated, upsampling) {
  t4 x = make(1, 2, 5, 6);
  // nearest 5x6 -> 13x4: src = min(floor(dst * in / out), in - 1)
  t4 y = make(1, 2, 13, 4, false);
  std::vector<long long> none;
  launch_pool(false, pool_args(XR_POOL_ARGS_NEAREST, x, 13, 4, 1, 1, 0), x, y, none);
  std::vector<double> want(y.v.size());
  for (long long c = 0; c < 2; c++)
    for (long long oh = 0; oh < 13; oh++)
      for (long long ow = 0; ow < 4; ow++)
        want[y.at(0, c, oh, ow)] =
            x(0, c, std::min((long long)std::floor(oh * (5.0f / 13.0f)), 4LL),
              std::min((long long)std::floor(ow * (6.0f / 4.0f)), 5LL));
  expect_near("upsample_nearest2d", y.v, want);
  // bilinear 5x6 -> 9x11 without align_corners: src = max(0, (dst + 0.5) * in / out - 0.5)
  t4 yb = make(1, 2, 9, 11, false);
  launch_pool(false, pool_args(XR_POOL_ARGS_BILINEAR, x, 9, 11, 1, 1, 0), x, yb, none);
  want.assign(yb.v.size(), 0.0);
  for (long long c = 0; c < 2; c++)
    for (long long oh = 0; oh < 9; oh++)
      for (long long ow = 0; ow < 11; ow++) {
        const double sh = std::max(0.0, (oh + 0.5) * 5.0 / 9.0 - 0.5);
        const double sw = std::max(0.0, (ow + 0.5) * 6.0 / 11.0 - 0.5);
        const long long h0 = (long long)sh, w0 = (long long)sw;
        const long long h1 = std::min(h0 + 1, 4LL), w1 = std::min(w0 + 1, 5LL);
        const double lh = sh - h0, lw = sw - w0;
        want[yb.at(0, c, oh, ow)] = (1 - lh) * ((1 - lw) * x(0, c, h0, w0) + lw * x(0, c, h0, w1)) +
                                    lh * ((1 - lw) * x(0, c, h1, w0) + lw * x(0, c, h1, w1));
      }
  expect_near("upsample_bilinear2d", yb.v, want);
}

// ---- batch and group norm ---------------------------------------------------------------------

namespace {

// Slots of kernels/channel_norm.h; the emulated source's unnamed enum spells them too.
enum slot {
  S_X,
  S_GRAD,
  S_WEIGHT,
  S_BIAS,
  S_RMEAN,
  S_RVAR,
  S_SMEAN,
  S_SINV,
  S_OUT,
  S_OUT_MEAN,
  S_OUT_INV,
  S_GRAD_W,
  S_GRAD_B
};

struct cn_run {
  xr_cn_args_t a;
  std::vector<float> *buf[XR_CN_ARGS_SLOTS] = {};
  cn_run(int kind, const t4 &x, long long groups) {
    memset(&a, 0, sizeof a);
    a.kind = kind, a.n = (long)x.n, a.c = (long)x.c, a.groups = (long)groups;
    a.size[0] = 1, a.size[1] = (long)x.h, a.size[2] = (long)x.w;
    a.eps = 1e-5f, a.momentum = 0.1f;
    for (auto &v : a.v) v.dtype = -1;
  }
  void act(int k, t4 &t) {
    view(a.v[k], t);
    buf[k] = &t.v;
  }
  // a [C] vector (or [N, groups] when `rows`)
  void vec(int k, std::vector<float> &v, long long row_stride = 0) {
    a.v[k].dtype = XR_GPU_F32, a.v[k].strides[0] = (long)row_stride, a.v[k].strides[1] = 1;
    buf[k] = &v;
  }
  template <class K>
  void launch(long long groups, K kernel) {
    unsigned char *b[XR_CN_ARGS_SLOTS];
    for (int k = 0; k < XR_CN_ARGS_SLOTS; k++)
      b[k] = (unsigned char *)(buf[k] ? buf[k]->data() : buf[S_X]->data());
    xr_emu_launch(xr_emu_dim{(unsigned)groups, 1, 1}, XR_CN_THREADS, [&] {
      kernel(a, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12]);
    });
  }
};

}  // namespace

Test(vision_emulated, batch_norm_training_and_backward) {
  const long long N = 3, C = 4, H = 5, W = 6, count = N * H * W;
  t4 x = make(N, C, H, W), out = make(N, C, H, W, false), g = make(N, C, H, W);
  t4 dx = make(N, C, H, W, false);
  std::vector<float> w = randoms(C, 0.5f, 1.5f), b = randoms(C), rm = randoms(C),
                     rv = randoms(C, 0.5f, 1.5f);
  std::vector<float> rm0 = rm, rv0 = rv, mean(C, NAN), inv(C, NAN), gw(C, NAN), gb(C, NAN);
  cn_run f(XR_CN_ARGS_BATCH, x, 0);
  f.a.training = 1;
  f.act(S_X, x), f.act(S_OUT, out), f.vec(S_WEIGHT, w), f.vec(S_BIAS, b), f.vec(S_RMEAN, rm);
  f.vec(S_RVAR, rv), f.vec(S_OUT_MEAN, mean), f.vec(S_OUT_INV, inv);
  f.launch(C, xr_cn_batch);
  std::vector<double> want(out.v.size()), want_mean(C), want_inv(C), want_rm(C), want_rv(C);
  for (long long c = 0; c < C; c++) {
    double s = 0, q = 0;
    for (long long n = 0; n < N; n++)
      for (long long i = 0; i < H * W; i++) s += x.v[x.at(n, c, 0, 0) + i];
    const double m = s / count;
    for (long long n = 0; n < N; n++)
      for (long long i = 0; i < H * W; i++) q += std::pow(x.v[x.at(n, c, 0, 0) + i] - m, 2);
    want_mean[c] = m, want_inv[c] = 1 / std::sqrt(q / count + 1e-5);
    want_rm[c] = 0.9 * rm0[c] + 0.1 * m, want_rv[c] = 0.9 * rv0[c] + 0.1 * q / (count - 1);
    for (long long n = 0; n < N; n++)
      for (long long i = 0; i < H * W; i++) {
        const long long e = x.at(n, c, 0, 0) + i;
        want[e] = (x.v[e] - m) * want_inv[c] * w[c] + b[c];
      }
  }
  expect_near("batch_norm", out.v, want);
  expect_near("save_mean", mean, want_mean);
  expect_near("save_invstd", inv, want_inv);
  expect_near("running_mean", rm, want_rm);
  expect_near("running_var", rv, want_rv);

  cn_run bk(XR_CN_ARGS_BATCH_BACKWARD, x, 0);
  bk.a.training = 1;
  bk.act(S_X, x), bk.act(S_GRAD, g), bk.act(S_OUT, dx), bk.vec(S_WEIGHT, w);
  bk.vec(S_SMEAN, mean), bk.vec(S_SINV, inv), bk.vec(S_GRAD_W, gw), bk.vec(S_GRAD_B, gb);
  bk.launch(C, xr_cn_batch_backward);
  std::vector<double> want_gw(C, 0.0), want_gb(C, 0.0);
  want.assign(dx.v.size(), 0.0);
  for (long long c = 0; c < C; c++) {
    for (long long n = 0; n < N; n++)
      for (long long i = 0; i < H * W; i++) {
        const long long e = x.at(n, c, 0, 0) + i;
        want_gb[c] += g.v[e], want_gw[c] += g.v[e] * (x.v[e] - mean[c]) * inv[c];
      }
    for (long long n = 0; n < N; n++)
      for (long long i = 0; i < H * W; i++) {
        const long long e = x.at(n, c, 0, 0) + i;
        const double xhat = (x.v[e] - mean[c]) * inv[c];
        want[e] = w[c] * inv[c] * (g.v[e] - want_gb[c] / count - xhat * want_gw[c] / count);
      }
  }
  expect_near("batch_norm_backward", dx.v, want);
  expect_near("grad_weight", gw, want_gw);
  expect_near("grad_bias", gb, want_gb);
}

Test(vision_emulated, group_norm_and_backward) {
  const long long N = 2, C = 6, G = 3, H = 4, W = 7, per = C / G, count = per * H * W;
  t4 x = make(N, C, H, W), out = make(N, C, H, W, false), g = make(N, C, H, W);
  t4 dx = make(N, C, H, W, false);
  std::vector<float> w = randoms(C, 0.5f, 1.5f), b = randoms(C), mean(N * G, NAN), rstd(N * G, NAN);
  std::vector<float> gw(C, NAN), gb(C, NAN);
  cn_run f(XR_CN_ARGS_GROUP, x, G);
  f.act(S_X, x), f.act(S_OUT, out), f.vec(S_WEIGHT, w), f.vec(S_BIAS, b);
  f.vec(S_OUT_MEAN, mean, G), f.vec(S_OUT_INV, rstd, G);
  f.launch(N * G, xr_cn_group);
  std::vector<double> want(out.v.size()), want_mean(N * G), want_rstd(N * G);
  for (long long n = 0; n < N; n++)
    for (long long k = 0; k < G; k++) {
      const long long base = x.at(n, k * per, 0, 0);
      double s = 0, q = 0;
      for (long long i = 0; i < count; i++) s += x.v[base + i];
      const double m = s / count;
      for (long long i = 0; i < count; i++) q += std::pow(x.v[base + i] - m, 2);
      const double r = 1 / std::sqrt(q / count + 1e-5);
      want_mean[n * G + k] = m, want_rstd[n * G + k] = r;
      for (long long i = 0; i < count; i++) {
        const long long c = k * per + i / (H * W);
        want[base + i] = (x.v[base + i] - m) * r * w[c] + b[c];
      }
    }
  expect_near("group_norm", out.v, want);
  expect_near("mean", mean, want_mean);
  expect_near("rstd", rstd, want_rstd);

  cn_run bk(XR_CN_ARGS_GROUP_BACKWARD, x, G);
  bk.act(S_X, x), bk.act(S_GRAD, g), bk.act(S_OUT, dx), bk.vec(S_WEIGHT, w);
  bk.vec(S_SMEAN, mean, G), bk.vec(S_SINV, rstd, G), bk.vec(S_GRAD_W, gw), bk.vec(S_GRAD_B, gb);
  bk.launch(N * G, xr_cn_group_backward);
  bk.launch(C, xr_cn_group_param_grads);
  std::vector<double> want_gw(C, 0.0), want_gb(C, 0.0);
  want.assign(dx.v.size(), 0.0);
  for (long long n = 0; n < N; n++)
    for (long long k = 0; k < G; k++) {
      const long long base = x.at(n, k * per, 0, 0);
      const double m = mean[n * G + k], r = rstd[n * G + k];
      double a = 0, bsum = 0;
      for (long long i = 0; i < count; i++) {
        const long long c = k * per + i / (H * W);
        const double xhat = (x.v[base + i] - m) * r;
        a += w[c] * g.v[base + i], bsum += w[c] * g.v[base + i] * xhat;
        want_gb[c] += g.v[base + i], want_gw[c] += g.v[base + i] * xhat;
      }
      for (long long i = 0; i < count; i++) {
        const long long c = k * per + i / (H * W);
        const double xhat = (x.v[base + i] - m) * r;
        want[base + i] = r * (w[c] * g.v[base + i] - a / count - xhat * bsum / count);
      }
    }
  expect_near("group_norm_backward", dx.v, want);
  expect_near("grad_weight", gw, want_gw);
  expect_near("grad_bias", gb, want_gb);
}
