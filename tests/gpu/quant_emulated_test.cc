// kernels/gpu/quant.cu's kernels (vLLM's fp8 quantization ops) executed on the CPU under
// tests/gpu/cuda_emulation.h, once per warp width (XR_EMULATED_WARP=32 and 64), launched as
// kernels/quant_device.c launches them: static (per tensor over special values, 2-D groups),
// dynamic per tensor (absmax, reduce, quantize; a row split in two segments, an all-zero input)
// and per token (scale_ub, a zero row, a NaN). Expected values are vLLM's formulas evaluated
// here in float, rounded to the nearest e4m3 value by a search over the decoded codes. A machine
// without a GPU thus runs the device code's logic; tests/kernels:quant_matrix_{cuda,hip} run
// it on devices.
#include <criterion/criterion.h>

#include <cmath>
#include <random>
#include <vector>

#include "tests/gpu/cuda_emulation.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#include "tests/gpu/quant_emulated.inc"
#pragma GCC diagnostic pop

namespace {

std::mt19937 rng(11);
float uniform(float scale) { return std::uniform_real_distribution<float>(-scale, scale)(rng); }

float decode(unsigned char c, bool fnuz) {
  return fnuz ? xr_io_f8e4m3fnuz::load(&c, 0) : xr_io_f8e4m3fn::load(&c, 0);
}

// The e4m3 value nearest x (finite, in range), ties to the even code.
double nearest(float x, bool fnuz) {
  double best = NAN, err = INFINITY;
  int code = -1;
  for (int c = 0; c < 256; c++) {
    double v = decode((unsigned char)c, fnuz);
    if (std::isnan(v)) continue;
    double e = fabs(v - x);
    if (e < err || (e == err && (c & 1) == 0 && (code & 1))) best = v, err = e, code = c;
  }
  return best;
}

// vLLM's scaled_fp8_conversion: fmaxf(-M, fminf(x, M)) then fp8.
double convert(float x, float m, bool fnuz) { return nearest(fmaxf(-m, fminf(x, m)), fnuz); }

struct job {
  xr_quant_args_t p;
  std::vector<float> in;  // as f32 (in_dtype F32) ...
  std::vector<unsigned short> in16;  // ... or f16 / bf16 bits
  std::vector<unsigned char> out;
  std::vector<float> scale, ub, partial;
  const void *input() const { return p.in_dtype == XR_GPU_F32 ? (const void *)in.data() : (const void *)in16.data(); }
  float at(long long r, long long c) const {
    const long long i = p.in_off + r * p.in_rs + c;
    return p.in_dtype == XR_GPU_F32 ? in[i] : p.in_dtype == XR_GPU_F16 ? xr_io_f16::load(in16.data(), i)
                                                                       : xr_io_bf16::load(in16.data(), i);
  }
};

job make(int op, int in_dtype, bool fnuz, long long rows, long long hidden) {
  job j;
  memset(&j.p, 0, sizeof j.p);
  xr_quant_args_t &p = j.p;
  p.op = op, p.in_dtype = in_dtype, p.out_dtype = fnuz ? XR_GPU_F8E4M3FNUZ : XR_GPU_F8E4M3FN;
  p.rows = rows, p.hidden = hidden, p.in_rs = hidden, p.out_rs = hidden;
  p.segments = (hidden + XR_QUANT_GPU_SEGMENT - 1) / XR_QUANT_GPU_SEGMENT;
  p.items = op == XR_QUANT_ARG_PER_TOKEN ? rows : rows * p.segments;
  p.fp8_max = fnuz ? 224.0f : 448.0f, p.min_scale = 1.0f / (p.fp8_max * 512.0f);
  p.group_m = rows, p.group_n = hidden, p.scale_si = op == XR_QUANT_ARG_PER_TOKEN ? 1 : 0;
  j.out.assign(rows * hidden, 0x7f);
  return j;
}

void set_input(job &j, const std::vector<float> &x) {
  if (j.p.in_dtype == XR_GPU_F32) {
    j.in = x;
    return;
  }
  j.in16.resize(x.size());
  for (size_t i = 0; i < x.size(); i++)
    j.p.in_dtype == XR_GPU_F16 ? xr_io_f16::store(j.in16.data(), i, x[i]) : xr_io_bf16::store(j.in16.data(), i, x[i]);
}

void run(job &j) {
  const unsigned blocks = (unsigned)std::min<long long>(j.p.items, 1 << 20);
  unsigned char *in = (unsigned char *)j.input();
  if (j.p.op == XR_QUANT_ARG_DYNAMIC) {
    j.partial.assign(j.p.items, NAN);
    xr_emu_launch(xr_emu_dim{blocks, 1, 1}, XR_QUANT_GPU_THREADS,
                  [&] { xr_quant_absmax(j.partial.data(), in, j.p); });
    xr_emu_launch(xr_emu_dim{1, 1, 1}, XR_QUANT_GPU_THREADS,
                  [&] { xr_quant_reduce(j.scale.data(), j.partial.data(), j.p); });
  }
  xr_emu_launch(xr_emu_dim{blocks, 1, 1}, XR_QUANT_GPU_THREADS, [&] {
    xr_quant_rows(j.out.data(), in, j.scale.data(), j.ub.empty() ? j.scale.data() : j.ub.data(), j.p);
  });
}

// Every result against vLLM's formula; `scale_of(r, c)` the expected scale of an element.
template <class F> void expect(const char *what, const job &j, F scale_of) {
  const bool fnuz = j.p.out_dtype == XR_GPU_F8E4M3FNUZ, token = j.p.op == XR_QUANT_ARG_PER_TOKEN;
  for (long long r = 0; r < j.p.rows; r++)
    for (long long c = 0; c < j.p.hidden; c++) {
      const float x = j.at(r, c), s = scale_of(r, c);
      const double e = convert(token ? x / s : x * (1.0f / s), j.p.fp8_max, fnuz);
      const double a = decode(j.out[r * j.p.out_rs + c], fnuz);
      cr_assert(a == e, "%s (warp %d): row %lld col %lld: x %g gives %g, expected %g", what, warpSize, r, c, (double)x,
                a, e);
    }
}

}  // namespace

Test(quant_emulated, static_specials_and_groups) {
  const std::vector<float> specials{1000.0f, -1000.0f, 224.0f, 224.1f, -300.0f, 0.0f,    -0.0f,           NAN,
                                    INFINITY, -INFINITY, 1e-9f, 0x1p-10f, 0.53125f, 0.59375f, 3e-3f, 17.0f};
  for (int fnuz = 0; fnuz < 2; fnuz++) {
    job j = make(XR_QUANT_ARG_STATIC, XR_GPU_F32, fnuz, 2, 16);
    std::vector<float> x = specials;
    for (int i = 0; i < 16; i++) x.push_back(uniform(100));
    set_input(j, x);
    j.scale = {0.5f};
    run(j);
    expect("static specials", j, [](long long, long long) { return 0.5f; });
    cr_assert_eq(decode(j.out[7], fnuz), fnuz ? 224.0f : 448.0f, "NaN becomes +M");
  }
  // 2-D groups of 2 x 64 over a [4, 256] bf16 input: scale [2, 4]
  job j = make(XR_QUANT_ARG_STATIC, XR_GPU_BF16, false, 4, 256);
  std::vector<float> x(4 * 256);
  for (float &v : x) v = uniform(8);
  set_input(j, x);
  j.scale = {0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f, 0.07f, 0.08f};
  j.p.group_m = 2, j.p.group_n = 64, j.p.scale_si = 4, j.p.scale_sj = 1, j.p.grouped = 1;
  run(j);
  expect("static 2-D groups", j, [&](long long r, long long c) { return j.scale[(r / 2) * 4 + c / 64]; });
}

Test(quant_emulated, dynamic_segments_and_zeros) {
  job j = make(XR_QUANT_ARG_DYNAMIC, XR_GPU_F16, false, 3, 10000);  // two segments a row
  std::vector<float> x(3 * 10000);
  for (float &v : x) v = uniform(3);
  x[2 * 10000 + 9000] = -50.0f, x[17] = NAN;  // the max in a row's second segment; a NaN
  set_input(j, x);
  j.scale = {NAN};
  run(j);
  const float s = 50.0f / 448.0f;
  cr_assert_eq(j.scale[0], s, "scale %g, expected %g", (double)j.scale[0], (double)s);
  expect("dynamic", j, [&](long long, long long) { return s; });
  job z = make(XR_QUANT_ARG_DYNAMIC, XR_GPU_F32, true, 2, 8);
  set_input(z, std::vector<float>(16, 0.0f));
  z.scale = {NAN};
  run(z);
  cr_assert_eq(z.scale[0], 0.0f);
  for (int i = 0; i < 16; i++) cr_assert_eq(decode(z.out[i], true), 224.0f, "0 * (1 / 0) is NaN, then +M");
}

Test(quant_emulated, per_token_scale_ub_zero_row_and_nan) {
  for (int fnuz = 0; fnuz < 2; fnuz++) {
    job j = make(XR_QUANT_ARG_PER_TOKEN, XR_GPU_BF16, fnuz, 4, 300);
    std::vector<float> x(4 * 300);
    for (float &v : x) v = uniform(4);
    for (int c = 0; c < 300; c++) x[c] = 0.0f;  // a zero row: the scale's floor
    x[300 + 5] = NAN;
    x[600 + 7] = 10.0f;  // clamped by scale_ub
    set_input(j, x);
    j.scale.assign(4, NAN);
    j.ub = {2.5f};
    j.p.has_ub = 1;
    run(j);
    std::vector<float> expect_scale(4);
    for (long long r = 0; r < 4; r++) {
      float m = 0.0f;
      for (long long c = 0; c < 300; c++) m = fmaxf(m, fabsf(j.at(r, c)));
      expect_scale[r] = fmaxf(fminf(m, 2.5f) / j.p.fp8_max, j.p.min_scale);
      cr_assert_eq(j.scale[r], expect_scale[r], "row %lld: scale %g, expected %g", r, (double)j.scale[r],
                   (double)expect_scale[r]);
    }
    expect("per token", j, [&](long long r, long long) { return expect_scale[r]; });
    cr_assert_eq(decode(j.out[300 + 5], fnuz), j.p.fp8_max, "NaN becomes +M");
  }
}
