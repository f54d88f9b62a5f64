/* The AVX-512 paths of the cpu kernels (kernels/cpu/avx512.h, elementwise_avx512.c) on the
 * values random inputs rarely hit: every conversion bit-exact with base/float_formats.h over
 * subnormals, rounding ties, NaNs, infinities and the fp8 saturation edges; the activations
 * against double precision over [-100, 100] and the special values; argmax's ties, NaNs and
 * infinities. Skipped where the CPU lacks
 * AVX-512 BF16 (the cases of elementwise_test run the same ops through the engine either way). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "kernels/cpu/avx512.h"
#include "kernels/cpu/elementwise_avx512.h"
#include "kernels/cpu/elementwise_cpu.h"
#include "kernels/dtype.h"
#include "kernels/kernels.h"

static void require_avx512(void) {
  if (!xr_cpu_avx512()) cr_skip_test("this CPU has no AVX-512 BF16 (or XR_CPU_AVX512=off)");
}

/* Float bit patterns that probe conversions: both signs of zero, subnormals, the normal range's
 * edges, values on and beside bf16 / fp8 rounding ties, NaNs with payloads, infinities, plus a
 * stride through all 2^32 patterns. */
static size_t special_floats(float **out) {
  static const uint32_t fixed[] = {
      0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x00008000, 0x00018000, 0x007fffff,
      0x807fffff, 0x00800000, 0x80800000, 0x3f808000, 0x3f818000, 0x3f808001, 0x3f807fff,
      0x7f7fffff, 0xff7fffff, 0x7f7f8000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
      0x7f800001, 0x7fbfffff, 0x7fff0001, 0xffa00000, 0x43e00000, 0x43e80000, 0x43f00000,
      0x43700000, 0x43780000, 0x47600000, 0x47700000, 0x477fffff, 0x3b000000, 0x3a800000,
      0x3a000000, 0x34000000, 0x33800000, 0x33000000, 0x42b00000, 0xc2b00000, 0x42b20000,
      0xc2b20000, 0x42c80000, 0xc2c80000};
  size_t n_fixed = sizeof fixed / sizeof *fixed, n = n_fixed + 65536 + 4096;
  float *v = malloc(n * sizeof *v);
  cr_assert_not_null(v);
  size_t k = 0;
  for (size_t i = 0; i < n_fixed; i++) v[k++] = xr_bits_to_f32(fixed[i]);
  for (uint32_t i = 0; i < 65536; i++) v[k++] = xr_bits_to_f32(i * 65537u + 0x1234u);
  for (uint32_t i = 0; i < 4096; i++) v[k++] = xr_bits_to_f32(0x00800000u - 2048u + i); /* around 2^-126 */
  *out = v;
  return k;
}

/* A rank-1 step over n contiguous elements. */
static xr_ew_step_t step(xr_ew_op_t op, xr_dtype_t out, xr_dtype_t a, int64_t n) {
  xr_ew_step_t s;
  memset(&s, 0, sizeof s);
  s.op = op;
  s.rank = 1;
  s.shape[0] = s.numel = n;
  s.out.dtype = out;
  s.a.dtype = a;
  s.b.index = -1;
  s.out.strides[0] = s.a.strides[0] = 1;
  s.alpha = 1;
  return s;
}

Test(avx512, bf16_encode_matches_the_portable_rounding) {
  require_avx512();
  float *v;
  size_t n = special_floats(&v);
  uint16_t *got = malloc(n * sizeof *got);
  cr_assert_not_null(got);
  xr_ew_step_t s = step(XR_EW_COPY, XR_DTYPE_BF16, XR_DTYPE_F32, (int64_t)n);
  cr_assert(xr_ew_avx512_takes(&s));
  xr_ew_avx512_row(&s, (char *)got, (const char *)v, NULL, 0, (int64_t)n, false);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(got[i], xr_f32_to_bf16(v[i]), "bf16 of %a (0x%08x): 0x%04x, expected 0x%04x",
                 v[i], xr_f32_to_bits(v[i]), got[i], xr_f32_to_bf16(v[i]));
  free(got);
  free(v);
}

Test(avx512, f16_conversions_match_the_portable_ones) {
  require_avx512();
  float *v;
  size_t n = special_floats(&v);
  uint16_t *got = malloc(n * sizeof *got);
  cr_assert_not_null(got);
  xr_ew_step_t s = step(XR_EW_COPY, XR_DTYPE_F16, XR_DTYPE_F32, (int64_t)n);
  cr_assert(xr_ew_avx512_takes(&s));
  xr_ew_avx512_row(&s, (char *)got, (const char *)v, NULL, 0, (int64_t)n, false);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(got[i], xr_f32_to_f16(v[i]), "f16 of %a (0x%08x): 0x%04x, expected 0x%04x",
                 v[i], xr_f32_to_bits(v[i]), got[i], xr_f32_to_f16(v[i]));
  /* every f16 code to f32: the same float, NaN for NaN (vcvtph2ps quiets signalling ones) */
  uint16_t codes[65536];
  float wide[65536];
  for (int i = 0; i < 65536; i++) codes[i] = (uint16_t)i;
  s = step(XR_EW_COPY, XR_DTYPE_F32, XR_DTYPE_F16, 65536);
  cr_assert(xr_ew_avx512_takes(&s));
  xr_ew_avx512_row(&s, (char *)wide, (const char *)codes, NULL, 0, 65536, false);
  for (int i = 0; i < 65536; i++) {
    float want = xr_f16_to_f32(codes[i]);
    if (isnan(want)) cr_assert(isnan(wide[i]), "f16 0x%04x: %a, expected NaN", i, wide[i]);
    else cr_assert_eq(xr_f32_to_bits(wide[i]), xr_f32_to_bits(want), "f16 0x%04x: %a, expected %a", i, wide[i], want);
  }
  free(got);
  free(v);
}

Test(avx512, bf16_pairs_keep_element_order) {
  require_avx512();
  float *v;
  size_t n = special_floats(&v);
  uint16_t *in = malloc(n * sizeof *in), *got = malloc(n * sizeof *got);
  cr_assert(in && got);
  for (size_t i = 0; i < n; i++) in[i] = xr_f32_to_bf16(v[i]);
  /* bf16 -> bf16 through the float pipeline: the 32-element even/odd path, then a tail */
  xr_ew_step_t s = step(XR_EW_MUL, XR_DTYPE_BF16, XR_DTYPE_BF16, (int64_t)n);
  s.b_scalar = true;
  cr_assert(xr_ew_avx512_takes(&s));
  xr_ew_avx512_row(&s, (char *)got, (const char *)in, NULL, 1.0f, (int64_t)n, false);
  for (size_t i = 0; i < n; i++) {
    uint16_t want = xr_f32_to_bf16(xr_bf16_to_f32(in[i]) * 1.0f);
    cr_assert_eq(got[i], want, "element %zu: 0x%04x, expected 0x%04x", i, got[i], want);
  }
  free(in);
  free(got);
  free(v);
}

/* A multiplier broadcast along the row in a dtype the vector loads do not read (a 0-d double,
 * an int64): read once, as the float pipeline rounds it, then a vector multiply. */
Test(avx512, broadcast_multiplier_of_any_dtype) {
  require_avx512();
  enum { N = 37 };
  float x[N], got[N];
  for (int i = 0; i < N; i++) x[i] = (float)i * 0.37f - 5.0f;
  const double d = 0.1;
  const int64_t k = -3;
  const struct {
    xr_dtype_t dtype;
    const void *value;
    float as_float;
  } cases[] = {{XR_DTYPE_F64, &d, (float)0.1}, {XR_DTYPE_I64, &k, -3.0f}};
  for (size_t c = 0; c < 2; c++) {
    xr_ew_step_t s = step(XR_EW_MUL, XR_DTYPE_F32, XR_DTYPE_F32, N);
    s.b.index = 1;
    s.b.dtype = cases[c].dtype;
    s.b.strides[0] = 0;
    cr_assert(xr_ew_avx512_takes(&s), "%s", xr_dtype_name(cases[c].dtype));
    xr_ew_avx512_row(&s, (char *)got, (const char *)x, cases[c].value, 0, N, false);
    for (int i = 0; i < N; i++)
      cr_assert_eq(got[i], x[i] * cases[c].as_float, "%s element %d: %g, expected %g",
                   xr_dtype_name(cases[c].dtype), i, got[i], x[i] * cases[c].as_float);
  }
}

/* clamp_min and clamp_max with a bound of 0.25: self beyond it becomes it, a NaN self stays;
 * f32 and bf16 rows with a masked tail. */
Test(avx512, one_sided_clamps_keep_nan) {
  require_avx512();
  enum { N = 45 };
  float x[N], got[N];
  uint16_t x16[N], got16[N];
  for (int i = 0; i < N; i++) {
    x[i] = i % 7 == 0 ? NAN : i % 11 == 0 ? INFINITY : ((float)i - 22) / 8;
    x16[i] = xr_f32_to_bf16(x[i]);
  }
  for (int max = 0; max < 2; max++)
    for (int bf16 = 0; bf16 < 2; bf16++) {
      xr_dtype_t dt = bf16 ? XR_DTYPE_BF16 : XR_DTYPE_F32;
      xr_ew_step_t s = step(max ? XR_EW_CLAMP_MAX : XR_EW_CLAMP_MIN, dt, dt, N);
      s.param[0] = 0.25;
      cr_assert(xr_ew_avx512_takes(&s));
      if (bf16) xr_ew_avx512_row(&s, (char *)got16, (const char *)x16, NULL, 0, N, false);
      else xr_ew_avx512_row(&s, (char *)got, (const char *)x, NULL, 0, N, false);
      for (int i = 0; i < N; i++) {
        float want = max ? (x[i] > 0.25f ? 0.25f : x[i]) : (x[i] < 0.25f ? 0.25f : x[i]);
        float g = bf16 ? xr_bits_to_f32((uint32_t)got16[i] << 16) : got[i];
        if (bf16) want = xr_bits_to_f32((uint32_t)xr_f32_to_bf16(want) << 16);
        cr_assert(isnan(want) ? isnan(g) : g == want, "%s %s element %d (%g): %g, expected %g",
                  max ? "clamp_max" : "clamp_min", xr_dtype_name(dt), i, x[i], g, want);
      }
    }
}

/* threshold_backward: grad where self > threshold, else 0; a NaN self, or self at the
 * threshold, gives 0; f32 rows (16 lanes) and bf16 rows (pairs of 16, a masked tail). */
Test(avx512, threshold_backward_keeps_the_gradient_above_the_threshold) {
  require_avx512();
  enum { N = 45 };
  float grad[N], self[N], got[N];
  uint16_t grad16[N], self16[N], got16[N];
  for (int i = 0; i < N; i++) {
    grad[i] = (float)i - 20.5f;
    self[i] = i % 7 == 0 ? NAN : i % 5 == 0 ? 0.25f : (float)(i % 3) - 0.75f;
    grad16[i] = xr_f32_to_bf16(grad[i]), self16[i] = xr_f32_to_bf16(self[i]);
  }
  for (int bf16 = 0; bf16 < 2; bf16++) {
    xr_dtype_t dt = bf16 ? XR_DTYPE_BF16 : XR_DTYPE_F32;
    xr_ew_step_t s = step(XR_EW_THRESHOLD_BACKWARD, dt, dt, N);
    s.b.index = 1;
    s.b.dtype = dt;
    s.b.strides[0] = 1;
    s.param[0] = 0.25; /* the threshold */
    cr_assert(xr_ew_avx512_takes(&s));
    if (bf16) xr_ew_avx512_row(&s, (char *)got16, (const char *)grad16, (const char *)self16, 0, N, false);
    else xr_ew_avx512_row(&s, (char *)got, (const char *)grad, (const char *)self, 0, N, false);
    for (int i = 0; i < N; i++) {
      float want = self[i] > 0.25f ? grad[i] : 0.0f;
      float g = bf16 ? xr_bits_to_f32((uint32_t)got16[i] << 16) : got[i];
      if (bf16) want = xr_bits_to_f32((uint32_t)xr_f32_to_bf16(want) << 16);
      cr_assert_eq(g, want, "%s element %d (self %g): %g, expected %g", xr_dtype_name(dt), i,
                   self[i], g, want);
    }
  }
}

Test(avx512, fp8_encode_matches_kernels_dtype) {
  require_avx512();
  static const xr_dtype_t kinds[] = {XR_DTYPE_F8E4M3FN, XR_DTYPE_F8E5M2, XR_DTYPE_F8E4M3FNUZ,
                                     XR_DTYPE_F8E5M2FNUZ};
  float *v;
  size_t n = special_floats(&v);
  uint8_t *got = malloc(n);
  cr_assert_not_null(got);
  for (size_t k = 0; k < 4; k++) {
    /* every code's value and the midpoints between neighbours, +-1 ulp */
    xr_ew_step_t s = step(XR_EW_COPY, kinds[k], XR_DTYPE_F32, (int64_t)n);
    cr_assert(xr_ew_avx512_takes(&s));
    xr_ew_avx512_row(&s, (char *)got, (const char *)v, NULL, 0, (int64_t)n, false);
    for (size_t i = 0; i < n; i++)
      cr_assert_eq(got[i], xr_f32_to_fp8(v[i], kinds[k]), "%s of %a: 0x%02x, expected 0x%02x",
                   xr_dtype_name(kinds[k]), v[i], got[i], xr_f32_to_fp8(v[i], kinds[k]));
    float mids[3 * 255];
    size_t m = 0;
    for (int c = 0; c < 255; c++) {
      float lo = xr_fp8_to_f32((uint8_t)c, kinds[k]), hi = xr_fp8_to_f32((uint8_t)(c + 1), kinds[k]);
      if (!isfinite(lo) || !isfinite(hi)) continue;
      float mid = (lo + hi) / 2;
      mids[m++] = mid, mids[m++] = nextafterf(mid, -INFINITY), mids[m++] = nextafterf(mid, INFINITY);
    }
    s = step(XR_EW_COPY, kinds[k], XR_DTYPE_F32, (int64_t)m);
    xr_ew_avx512_row(&s, (char *)got, (const char *)mids, NULL, 0, (int64_t)m, false);
    for (size_t i = 0; i < m; i++)
      cr_assert_eq(got[i], xr_f32_to_fp8(mids[i], kinds[k]), "%s of midpoint %a: 0x%02x, expected 0x%02x",
                   xr_dtype_name(kinds[k]), mids[i], got[i], xr_f32_to_fp8(mids[i], kinds[k]));
  }
  free(got);
  free(v);
}

static double gelu_erf_exact(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }
/* 0.5 x (1 + tanh u) as x / (1 + e^-2u): the same function, without 1 + tanh u's cancellation
 * for negative x */
static double gelu_tanh_exact(double x) {
  return x / (1 + exp(-2 * sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
static double silu_exact(double x) { return x / (1 + exp(-x)); }

/* gelu_tanh's exp argument 2u, computed in float: its rounding (2 ulps of 2u) carries into the
 * result as a relative error of 2u's size times 2^-22, in any float implementation. */
static double gelu_tanh_argument(double x) {
  return 2 * sqrt(2 / M_PI) * (x + 0.044715 * x * x * x);
}

/* f32 results against double precision: within `rel` relative (plus the rounding of a computed
 * exp argument, when `argument` is given), `per_x` times |x| absolute (the erf approximation's
 * error is absolute), or 1e-35 absolute (the exp argument is clamped at 87.3: tails give
 * values of 1e-36 or less for 0); NaN exactly where the formula gives NaN, infinities where it
 * gives them. */
static void check_activation(xr_ew_op_t op, double (*exact)(double), const char *name, double rel,
                             double per_x, double (*argument)(double)) {
  enum { N = 20001 + 8 };
  static float x[N], y[N];
  for (int i = 0; i < 20001; i++) x[i] = -100.0f + 0.01f * (float)i;
  const float specials[8] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 88.7f};
  memcpy(x + 20001, specials, sizeof specials);
  xr_ew_step_t s = step(op, XR_DTYPE_F32, XR_DTYPE_F32, N);
  cr_assert(xr_ew_avx512_takes(&s));
  xr_ew_avx512_row(&s, (char *)y, (const char *)x, NULL, 0, N, false);
  for (int i = 0; i < N; i++) {
    double want = exact(x[i]);
    if (isinf(x[i]) && x[i] < 0) continue; /* -inf * 0: NaN in the formula, 0 in the limit */
    if (isnan(want)) {
      cr_assert(isnan(y[i]), "%s(%a) = %a, expected NaN", name, x[i], y[i]);
    } else if (isinf(want)) {
      cr_assert_eq(y[i], (float)want, "%s(%a) = %a, expected %a", name, x[i], y[i], want);
    } else {
      double err = fabs(y[i] - want);
      double r = rel + (argument ? fabs(argument(x[i])) * 0x1p-22 : 0);
      cr_assert(err <= r * fabs(want) + per_x * fabs(x[i]) || err <= 1e-35,
                "%s(%a) = %.9g, expected %.9g", name, x[i], y[i], want);
    }
  }
}

Test(avx512, activations_against_double_precision) {
  require_avx512();
  check_activation(XR_EW_SILU, silu_exact, "silu", 4e-7, 0, NULL);
  check_activation(XR_EW_GELU, gelu_erf_exact, "gelu", 4e-7, 1e-7, NULL);
  check_activation(XR_EW_GELU_TANH, gelu_tanh_exact, "gelu_tanh", 4e-7, 0, gelu_tanh_argument);
}

/* e^x for x = lanes[i], computed both as e^(+x) and as e^(-(-x)). */
XR_AVX512 static void exp_both_ways(const float *lanes, float *plus, float *minus) {
  __m512 x = _mm512_loadu_ps(lanes);
  _mm512_storeu_ps(plus, xr_avx512_exp_signed(x, 1.0f));
  _mm512_storeu_ps(minus, xr_avx512_exp_signed(_mm512_sub_ps(_mm512_setzero_ps(), x), -1.0f));
}

/* Below the smallest normal float exp gives exact 0 (masked softmax entries, silu of large x):
 * a denormal result would cost a microcode assist per vector. Above it, normal values. */
Test(avx512, exp_is_exact_zero_below_the_normal_range) {
  require_avx512();
  const float lanes[16] = {-87.2f, -87.29f, -87.31f, -87.5f, -88.0f, -88.7f, -100.0f, -1e30f,
                           -INFINITY, 0.0f, -1.0f, -80.0f, -87.0f, 88.0f, 100.0f, NAN};
  float plus[16], minus[16];
  exp_both_ways(lanes, plus, minus);
  for (int i = 0; i < 16; i++) {
    for (int way = 0; way < 2; way++) {
      float got = way ? minus[i] : plus[i];
      if (isnan(lanes[i])) {
        cr_assert(isnan(got), "e^NaN = %a", got);
      } else if (lanes[i] < -87.3f) {
        cr_assert(got == 0.0f && !signbit(got), "e^%g = %a, expected +0", lanes[i], got);
      } else {
        double want = exp(lanes[i] > 87.3f ? 87.3f : lanes[i]); /* the argument is clamped there */
        cr_assert(isnormal(got) && fabs(got - want) <= 4e-7 * want, "e^%g = %a, expected %a",
                  lanes[i], got, want);
      }
    }
  }
}

Test(avx512, streaming_rows_of_every_alignment) {
  require_avx512();
  enum { N = 300 };
  _Alignas(64) uint16_t in[N + 64], out[N + 64], want[N + 64];
  for (int i = 0; i < N + 64; i++) in[i] = xr_f32_to_bf16((float)(i % 97) * 0.25f - 12.0f);
  static const int sizes[] = {0, 1, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 129, N};
  for (int off = 0; off < 33; off++)
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
      int n = sizes[k];
      memset(out, 0xff, sizeof out);
      xr_ew_step_t s = step(XR_EW_SILU, XR_DTYPE_BF16, XR_DTYPE_BF16, n);
      xr_ew_avx512_row(&s, (char *)(out + off), (const char *)(in + off), NULL, 0, n, true);
      xr_ew_avx512_row(&s, (char *)(want + off), (const char *)(in + off), NULL, 0, n, false);
      xr_cpu_stream_fence();
      cr_assert_eq(memcmp(out + off, want + off, (size_t)n * 2), 0, "offset %d, %d elements", off, n);
      for (int i = 0; i < off; i++) cr_assert_eq(out[i], 0xffff, "wrote before the row");
      for (int i = off + n; i < N + 64; i++) cr_assert_eq(out[i], 0xffff, "wrote past the row");
    }
}

/* aten::argmax over the last dim of a [rows, n] f32 tensor with the given values, on the cpu
 * device's fast implementation; the chosen positions into out[rows]. */
static void argmax_rows(const float *values, int64_t rows, int64_t n, int64_t *out) {
  char json[512];
  snprintf(json, sizeof json,
           "{\"ops\": [{\"name\": \"aten::argmax\", \"args\": ["
           "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": {\"dtype\": \"float\", "
           "\"shape\": [%lld, %lld]}}, {\"name\": \"dim\", \"type\": \"int\", \"value\": -1}, "
           "{\"name\": \"keepdim\", \"type\": \"bool\", \"value\": false}]}]}",
           (long long)rows, (long long)n);
  xr_bundle_t *bundle;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "argmax", ".", NULL, &bundle),
               XR_OK, "%s", xr_last_error());
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&bundle->ops[0], &plan), XR_OK, "%s", xr_last_error());
  xr_hal_device_t *device;
  cr_assert_eq(xr_hal_device_create("cpu", &device), XR_OK, "%s", xr_last_error());
  const xr_kernel_impl_t *impl;
  cr_assert_eq(xr_kernel_select(&plan, device, XR_KERNEL_BEST, &impl), XR_OK);
  cr_assert_str_eq(xr_kernel_impl_name(impl), "cpu.argmax");
  xr_tensor_t t[2] = {{.dtype = XR_DTYPE_F32, .rank = 2, .shape = {rows, n}, .strides = {n, 1}},
                      {.dtype = XR_DTYPE_I64, .rank = 1, .shape = {rows}, .strides = {1}}};
  cr_assert_eq(xr_hal_buffer_alloc(device, (size_t)(rows * n) * 4, &t[0].buffer), XR_OK);
  cr_assert_eq(xr_hal_buffer_alloc(device, (size_t)rows * 8, &t[1].buffer), XR_OK);
  cr_assert_eq(xr_hal_buffer_write(t[0].buffer, 0, values, (size_t)(rows * n) * 4), XR_OK);
  xr_kernel_instance_t *instance;
  xr_hal_stream_t *stream;
  cr_assert_eq(xr_kernel_prepare(&plan, impl, device, t, &instance), XR_OK, "%s", xr_last_error());
  cr_assert_eq(xr_hal_stream_create(device, &stream), XR_OK);
  cr_assert_eq(xr_kernel_enqueue(instance, stream), XR_OK);
  cr_assert_eq(xr_hal_stream_synchronize(stream), XR_OK);
  cr_assert_eq(xr_hal_buffer_read(out, t[1].buffer, 0, (size_t)rows * 8), XR_OK);
  xr_hal_stream_destroy(stream);
  xr_kernel_instance_destroy(instance);
  xr_hal_buffer_free(t[0].buffer);
  xr_hal_buffer_free(t[1].buffer);
  xr_hal_device_destroy(device);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(bundle);
}

/* The cases random rows never produce: ties (the first maximum wins, in whichever of the
 * scan's lanes and sets it lies), NaN (the first NaN wins), every value -inf (position 0), +inf,
 * and maxima in the unrolled body and in the tail, for lengths around the 64-element unroll. */
Test(avx512, argmax_ties_nan_and_infinities) {
  static const int64_t lengths[] = {1, 15, 16, 17, 63, 64, 65, 200, 1000};
  for (size_t L = 0; L < sizeof lengths / sizeof *lengths; L++) {
    const int64_t n = lengths[L], rows = 6;
    float *v = malloc(sizeof(float) * (size_t)(rows * n));
    int64_t got[6], want[6];
    cr_assert_not_null(v);
    for (int64_t i = 0; i < rows * n; i++) v[i] = (float)((i * 7919) % 101) / 10.0f - 5.0f;
    int64_t a = n / 3, b = n - 1 - n / 5, c = n / 2;
    /* row 0: a tie at the row's maximum, at positions a < b */
    for (int64_t i = 0; i < n; i++) v[i] = -1.0f;
    v[b] = 2.0f, v[a] = 2.0f;
    want[0] = a < b ? a : b;
    /* row 1: NaNs at c and after it, a larger number before */
    v[n + c] = NAN, v[n + n - 1] = NAN, v[n] = 1e30f;
    want[1] = c;
    /* row 2: every value -inf */
    for (int64_t i = 0; i < n; i++) v[2 * n + i] = -INFINITY;
    want[2] = 0;
    /* row 3: +inf in the tail beats the finite maximum */
    v[3 * n + n - 1] = INFINITY;
    want[3] = n - 1;
    /* rows 4, 5: ordinary; the reference scan decides */
    for (int r = 4; r < 6; r++) {
      want[r] = 0;
      for (int64_t i = 1; i < n; i++)
        if (v[r * n + i] > v[r * n + want[r]]) want[r] = i;
    }
    if (n == 1) want[1] = 0; /* NaN at 0 */
    argmax_rows(v, rows, n, got);
    for (int r = 0; r < rows; r++)
      cr_assert_eq(got[r], want[r], "n = %lld, row %d: %lld, expected %lld", (long long)n, r,
                   (long long)got[r], (long long)want[r]);
    free(v);
  }
}
