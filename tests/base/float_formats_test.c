/* base/float_formats.h against the formats' definitions, written here the slow, obvious way:
 * a value decoded from its fields with ldexp, a float encoded as the nearest value found by
 * searching every code (ties to the even code, saturating), f16 against the compiler's own
 * _Float16 conversion; plus hand-worked codes. Every fp8 value, the midpoints between neighbours
 * and one float ulp either side, and a stride through all float bit patterns. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>

#include "base/float_formats.h"

typedef struct format {
  xr_dtype_t dtype;
  int mbits, bias;
  bool fnuz, has_inf;
  float max;
} format_t;

static const format_t fp8[4] = {
    {XR_DTYPE_F8E4M3FN, 3, 7, false, false, 448.0f},
    {XR_DTYPE_F8E5M2, 2, 15, false, true, 57344.0f},
    {XR_DTYPE_F8E4M3FNUZ, 3, 8, true, false, 240.0f},
    {XR_DTYPE_F8E5M2FNUZ, 2, 16, true, false, 57344.0f},
};

static float spec_decode(const format_t *f, uint8_t v) {
  int ebits = 7 - f->mbits, emax = (1 << ebits) - 1;
  int exp = (v >> f->mbits) & emax, man = v & ((1 << f->mbits) - 1);
  if (f->fnuz && v == 0x80) return NAN;
  if (!f->fnuz && exp == emax && (f->has_inf ? true : man == (1 << f->mbits) - 1))
    return f->has_inf && man == 0 ? (v & 0x80 ? -INFINITY : INFINITY) : NAN;
  double m = exp ? ldexp(1.0 + man / (double)(1 << f->mbits), exp - f->bias)
                 : ldexp(man / (double)(1 << f->mbits), 1 - f->bias);
  return (float)(v & 0x80 ? -m : m);
}

static uint8_t spec_encode(const format_t *f, float x) {
  if (isnan(x)) return f->fnuz ? 0x80 : 0x7f;
  double a = fmin(fabs((double)x), f->max);
  int best = 0;
  double best_err = INFINITY;
  for (int c = 0; c < 128; c++) {
    double m = spec_decode(f, (uint8_t)c);
    if (!isfinite(m)) continue;
    double err = fabs(m - a);
    if (err < best_err || (err == best_err && c % 2 == 0)) best = c, best_err = err;
  }
  bool negative = signbit(x) && !(f->fnuz && best == 0); /* fnuz has no negative zero */
  return (uint8_t)(best | (negative ? 0x80 : 0));
}

static bool same_float(float a, float b) {
  return (isnan(a) && isnan(b)) || xr_f32_to_bits(a) == xr_f32_to_bits(b);
}

Test(float_formats, fp8_decodes_every_code_as_its_definition) {
  for (int k = 0; k < 4; k++)
    for (int v = 0; v < 256; v++)
      cr_assert(same_float(xr_fp8_to_f32((uint8_t)v, fp8[k].dtype), spec_decode(&fp8[k], v)),
                "%s 0x%02x: %a, not %a", xr_dtype_name(fp8[k].dtype), v,
                xr_fp8_to_f32((uint8_t)v, fp8[k].dtype), spec_decode(&fp8[k], v));
}

Test(float_formats, fp8_encodes_to_the_nearest_code_ties_to_even_saturating) {
  for (int k = 0; k < 4; k++) {
    const format_t *f = &fp8[k];
    size_t checked = 0;
    for (int sign = 0; sign < 2; sign++) {
      for (int c = 0; c < 127; c++) {
        float lo = spec_decode(f, (uint8_t)c), hi = spec_decode(f, (uint8_t)(c + 1));
        if (!isfinite(lo) || !isfinite(hi)) continue;
        float mid = (lo + hi) / 2;
        float v[6] = {lo, mid, nextafterf(mid, 0), nextafterf(mid, INFINITY), hi,
                      lo == 0 ? 0x1p-149f : nextafterf(lo, INFINITY)};
        for (int i = 0; i < 6; i++, checked++) {
          float x = sign ? -v[i] : v[i];
          cr_assert_eq(xr_f32_to_fp8(x, f->dtype), spec_encode(f, x), "%s of %a",
                       xr_dtype_name(f->dtype), x);
        }
      }
    }
    /* Every 65537th float pattern: subnormals, out of range, infinities and NaNs included. */
    for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 65537, checked++) {
      float x = xr_bits_to_f32((uint32_t)bits);
      cr_assert_eq(xr_f32_to_fp8(x, f->dtype), spec_encode(f, x), "%s of %a (0x%08x)",
                   xr_dtype_name(f->dtype), x, (uint32_t)bits);
    }
    cr_log_info("%s: %zu values", xr_dtype_name(f->dtype), checked);
  }
}

Test(float_formats, fp8_hand_worked_codes) {
  cr_assert_eq(xr_f32_to_fp8(448.0f, XR_DTYPE_F8E4M3FN), 0x7e);
  cr_assert_eq(xr_f32_to_fp8(1e9f, XR_DTYPE_F8E4M3FN), 0x7e, "saturates");
  cr_assert_eq(xr_f32_to_fp8(-INFINITY, XR_DTYPE_F8E4M3FN), 0xfe);
  cr_assert_eq(xr_f32_to_fp8(NAN, XR_DTYPE_F8E4M3FN), 0x7f);
  cr_assert_eq(xr_f32_to_fp8(1.0f, XR_DTYPE_F8E4M3FN), 0x38); /* exponent 7 = bias */
  cr_assert_eq(xr_f32_to_fp8(1.0f, XR_DTYPE_F8E4M3FNUZ), 0x40);
  cr_assert_eq(xr_f32_to_fp8(-0.0f, XR_DTYPE_F8E4M3FNUZ), 0x00, "no negative zero");
  cr_assert_eq(xr_f32_to_fp8(-0.0f, XR_DTYPE_F8E4M3FN), 0x80);
  cr_assert_eq(xr_f32_to_fp8(NAN, XR_DTYPE_F8E5M2FNUZ), 0x80);
  cr_assert_eq(xr_f32_to_fp8(57344.0f, XR_DTYPE_F8E5M2), 0x7b);
  cr_assert_eq(xr_f32_to_fp8(0x1p-9f, XR_DTYPE_F8E4M3FN), 0x01, "the smallest subnormal");
  cr_assert_eq(xr_f32_to_fp8(0x1p-10f, XR_DTYPE_F8E4M3FN), 0x00, "half of it: a tie to even 0");
  cr_assert_eq(xr_f32_to_fp8(1.0625f, XR_DTYPE_F8E4M3FN), 0x38, "1 + 1/16 ties to 1");
  cr_assert_eq(xr_f32_to_fp8(1.1875f, XR_DTYPE_F8E4M3FN), 0x3a, "1 + 3/16 ties to 1.25");
  cr_assert(isinf(xr_fp8_to_f32(0x7c, XR_DTYPE_F8E5M2)));
  cr_assert_eq(xr_fp8_to_f32(0x7f, XR_DTYPE_F8E4M3FNUZ), 240.0f);
}

Test(float_formats, f16_matches_the_compilers_half_conversion) {
  for (uint32_t h = 0; h < 65536; h++) {
    _Float16 half;
    uint16_t bits = (uint16_t)h;
    memcpy(&half, &bits, sizeof half);
    cr_assert(same_float(xr_f16_to_f32(bits), (float)half), "0x%04x", h);
  }
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 4099) {
    float x = xr_bits_to_f32((uint32_t)bits);
    _Float16 half = (_Float16)x;
    uint16_t expected;
    memcpy(&expected, &half, sizeof expected);
    if (isnan(x)) expected = (uint16_t)((expected & 0x8000u) | 0x7e00u); /* the quiet NaN */
    cr_assert_eq(xr_f32_to_f16(x), expected, "%a (0x%08x)", x, (uint32_t)bits);
  }
  cr_assert_eq(xr_f32_to_f16(65520.0f), 0x7c00, "rounds to infinity");
  cr_assert_eq(xr_f32_to_f16(65519.0f), 0x7bff);
  cr_assert_eq(xr_f32_to_f16(0x1p-25f), 0x0000, "half the smallest subnormal ties to 0");
}

Test(float_formats, bf16_rounds_to_nearest_even_and_keeps_nan_quiet) {
  cr_assert_eq(xr_f32_to_bf16(1.0f), 0x3f80);
  cr_assert_eq(xr_f32_to_bf16(xr_bits_to_f32(0x3f808000u)), 0x3f80, "a tie to even");
  cr_assert_eq(xr_f32_to_bf16(xr_bits_to_f32(0x3f818000u)), 0x3f82, "a tie to even, upwards");
  cr_assert_eq(xr_f32_to_bf16(xr_bits_to_f32(0x3f808001u)), 0x3f81);
  cr_assert_eq(xr_f32_to_bf16(xr_bits_to_f32(0x7f800001u)), 0x7fc0, "a signalling NaN made quiet");
  cr_assert_eq(xr_f32_to_bf16(xr_bits_to_f32(0x7f7fffffu)), 0x7f80, "the largest float rounds up");
  for (uint32_t h = 0; h < 65536; h++) {
    float x = xr_bf16_to_f32((uint16_t)h);
    if (!isnan(x)) cr_assert_eq(xr_f32_to_bf16(x), h, "0x%04x does not round-trip", h);
  }
}

Test(float_formats, e2m1_and_e8m0) {
  static const float magnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int c = 0; c < 16; c++)
    cr_assert(same_float(xr_e2m1_to_f32((uint8_t)c), c & 8 ? -magnitude[c & 7] : magnitude[c & 7]),
              "code %d", c);
  /* Midpoints tie to the even code; beyond 6 saturates; NaN gives 6. */
  const struct { float x; uint8_t code; } cases[] = {
      {0.25f, 0}, {0.26f, 1}, {0.75f, 2}, {1.25f, 2}, {1.75f, 4}, {2.5f, 4}, {2.6f, 5},
      {3.5f, 6},  {5.0f, 6},  {5.1f, 7},  {100.0f, 7}, {-0.0f, 8}, {-3.0f, 13}, {NAN, 7},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    cr_assert_eq(xr_f32_to_e2m1(cases[i].x), cases[i].code, "%a", cases[i].x);
  for (int b = 0; b < 255; b++) {
    cr_assert_eq(xr_e8m0_to_f32((uint8_t)b), ldexpf(1.0f, b - 127), "%d", b);
    cr_assert_eq(xr_f32_to_e8m0(ldexpf(1.0f, b - 127)), b);
  }
  cr_assert(isnan(xr_e8m0_to_f32(0xff)));
  cr_assert_eq(xr_f32_to_e8m0(NAN), 0xff);
  cr_assert_eq(xr_f32_to_e8m0(3.0f), 128 + 1, "log2(3) = 1.58 rounds to 2");
}
