#include "kernels/dtype.h"

float xr_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man) { /* subnormal: value = man * 2^-24 */
    float f = (float)man * 0x1p-24f;
    return sign ? -f : f;
  } else {
    bits = sign;
  }
  return xr_bits_to_f32(bits);
}

uint16_t xr_f32_to_f16(float f) {
  uint32_t u = xr_f32_to_bits(f), sign = (u >> 16) & 0x8000u;
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
  if (a < 0x38800000u) {                                   /* below the smallest normal */
    /* value / 2^-24, rounded to nearest even, as the subnormal mantissa */
    float scaled = xr_bits_to_f32(a) * 0x1p24f;
    float r = nearbyintf(scaled); /* default rounding mode: nearest even */
    return (uint16_t)(sign | (uint32_t)r);
  }
  uint32_t rounded = a + 0xfffu + ((a >> 13) & 1u);
  return (uint16_t)(sign | ((rounded - 0x38000000u) >> 13));
}

/* Decodes an 8-bit float with `mbits` mantissa bits and exponent `bias`. */
static float fp8_decode(uint8_t v, int mbits, int bias, int fnuz, int has_inf) {
  int ebits = 7 - mbits;
  uint32_t sign = v >> 7, exp = (v >> mbits) & ((1u << ebits) - 1), man = v & ((1u << mbits) - 1);
  if (fnuz && v == 0x80) return NAN;
  if (!fnuz) {
    if (has_inf && exp == (1u << ebits) - 1) return man ? NAN : (sign ? -INFINITY : INFINITY);
    if (!has_inf && exp == (1u << ebits) - 1 && man == (1u << mbits) - 1) return NAN; /* e4m3fn */
  }
  float f = exp ? ldexpf(1.0f + (float)man / (float)(1u << mbits), (int)exp - bias)
                : ldexpf((float)man / (float)(1u << mbits), 1 - bias);
  return sign ? -f : f;
}

static void fp8_params(xr_dtype_t d, int *mbits, int *bias, int *fnuz, int *has_inf, float *max) {
  switch (d) {
    case XR_DTYPE_F8E4M3FN: *mbits = 3, *bias = 7, *fnuz = 0, *has_inf = 0, *max = 448.0f; break;
    case XR_DTYPE_F8E5M2: *mbits = 2, *bias = 15, *fnuz = 0, *has_inf = 1, *max = 57344.0f; break;
    case XR_DTYPE_F8E4M3FNUZ: *mbits = 3, *bias = 8, *fnuz = 1, *has_inf = 0, *max = 240.0f; break;
    default: *mbits = 2, *bias = 16, *fnuz = 1, *has_inf = 0, *max = 57344.0f; break;
  }
}

float xr_fp8_to_f32(uint8_t v, xr_dtype_t dtype) {
  int mbits, bias, fnuz, has_inf;
  float max;
  fp8_params(dtype, &mbits, &bias, &fnuz, &has_inf, &max);
  return fp8_decode(v, mbits, bias, fnuz, has_inf);
}

uint8_t xr_f32_to_fp8(float f, xr_dtype_t dtype) {
  int mbits, bias, fnuz, has_inf;
  float max;
  fp8_params(dtype, &mbits, &bias, &fnuz, &has_inf, &max);
  if (isnan(f)) return fnuz ? 0x80 : (has_inf ? 0x7f : 0x7f);
  uint8_t sign = signbit(f) ? 0x80 : 0;
  float a = fabsf(f);
  if (a > max) a = max; /* saturate, as torch's conversion with saturation does */
  /* Pick the nearest representable value by searching the 128 magnitudes; exact ties go to the
   * even encoding. A table-free search is plenty fast for initialisers and references. */
  uint8_t best = 0;
  float best_err = INFINITY;
  for (int code = 0; code < 128; code++) {
    float m = fp8_decode((uint8_t)code, mbits, bias, fnuz, has_inf);
    if (isnan(m) || isinf(m) || m > max) continue;
    float err = fabsf(m - a);
    if (err < best_err || (err == best_err && (code & 1) == 0)) best = (uint8_t)code, best_err = err;
  }
  if (best == 0 && fnuz) sign = 0; /* fnuz has no negative zero */
  return (uint8_t)(sign | best);
}

static const float e2m1_magnitude[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

float xr_e2m1_to_f32(uint8_t code) {
  float m = e2m1_magnitude[code & 7];
  return code & 8 ? -m : m;
}

uint8_t xr_f32_to_e2m1(float f) {
  uint8_t sign = signbit(f) ? 8 : 0;
  float a = isnan(f) ? 6.0f : fminf(fabsf(f), 6.0f); /* saturate */
  uint8_t best = 0;
  for (uint8_t c = 1; c < 8; c++) { /* a tie is between neighbours: keep the even code */
    float d = fabsf(e2m1_magnitude[c] - a), db = fabsf(e2m1_magnitude[best] - a);
    if (d < db || (d == db && (c & 1) == 0)) best = c;
  }
  return (uint8_t)(sign | best);
}

float xr_e8m0_to_f32(uint8_t b) { return b == 0xff ? NAN : ldexpf(1.0f, (int)b - 127); }

uint8_t xr_f32_to_e8m0(float f) {
  float a = fabsf(f);
  if (isnan(f)) return 0xff;
  if (!(a > 0)) return 0;
  double e = nearbyint(log2((double)a));
  return (uint8_t)(e < -127 ? 0 : e > 127 ? 254 : e + 127);
}

int xr_mx_block_size(xr_mx_format_t f) { return f == XR_MX_NVFP4 ? 16 : 32; }

static bool mx_is_fp4(xr_mx_format_t f) { return f == XR_MX_FP4 || f == XR_MX_NVFP4; }

static xr_dtype_t mx_fp8_dtype(xr_mx_format_t f) {
  return f == XR_MX_FP8_E5M2 ? XR_DTYPE_F8E5M2 : XR_DTYPE_F8E4M3FN;
}

static void mx_put(xr_mx_format_t f, uint8_t *row, int64_t i, float v) {
  if (!mx_is_fp4(f)) {
    row[i] = xr_f32_to_fp8(v, mx_fp8_dtype(f));
    return;
  }
  uint8_t code = xr_f32_to_e2m1(v), *b = &row[i / 2];
  *b = i % 2 ? (uint8_t)((*b & 0x0f) | code << 4) : (uint8_t)((*b & 0xf0) | code);
}

void xr_mx_quantize(xr_mx_format_t f, const float *x, int64_t rows, int64_t k, uint8_t *codes,
                    uint8_t *scales, float *global_scale) {
  int64_t bs = xr_mx_block_size(f), blocks = k / bs, row_bytes = xr_mx_code_bytes(f, k);
  float global = 1.0f;
  if (f == XR_MX_NVFP4) {
    float amax = 0;
    for (int64_t i = 0; i < rows * k; i++) amax = fmaxf(amax, fabsf(x[i]));
    global = amax / (6.0f * 448.0f);
    if (global_scale) *global_scale = global;
  }
  /* emax of the element format: the exponent of its largest normal */
  int emax = f == XR_MX_FP8_E4M3 ? 8 : f == XR_MX_FP8_E5M2 ? 15 : 2;
  for (int64_t r = 0; r < rows; r++) {
    uint8_t *row = codes + r * row_bytes;
    for (int64_t b = 0; b < blocks; b++) {
      const float *blk = x + r * k + b * bs;
      float amax = 0;
      for (int64_t i = 0; i < bs; i++) amax = fmaxf(amax, fabsf(blk[i]));
      float inv_scale; /* multiply-free: elements are x / scale */
      if (f == XR_MX_NVFP4) {
        uint8_t sb = xr_f32_to_fp8(global > 0 ? amax / (6.0f * global) : 0.0f, XR_DTYPE_F8E4M3FN);
        scales[r * blocks + b] = sb;
        inv_scale = xr_fp8_to_f32(sb, XR_DTYPE_F8E4M3FN) * global;
      } else {
        int e = -127;
        if (amax > 0) {
          int ex;
          frexpf(amax, &ex); /* amax = m * 2^ex, m in [0.5, 1): floor(log2(amax)) = ex - 1 */
          e = ex - 1 - emax;
          e = e < -127 ? -127 : e > 127 ? 127 : e;
        }
        scales[r * blocks + b] = (uint8_t)(e + 127);
        inv_scale = ldexpf(1.0f, e);
      }
      for (int64_t i = 0; i < bs; i++)
        mx_put(f, row, b * bs + i, inv_scale > 0 ? blk[i] / inv_scale : 0.0f * blk[i]);
    }
  }
}

float xr_mx_dequant(xr_mx_format_t f, const uint8_t *codes, const uint8_t *scales, int64_t i,
                    float global) {
  uint8_t s = scales[i / xr_mx_block_size(f)];
  float scale = f == XR_MX_NVFP4 ? xr_fp8_to_f32(s, XR_DTYPE_F8E4M3FN) * global : xr_e8m0_to_f32(s);
  float v = mx_is_fp4(f) ? xr_e2m1_to_f32(i % 2 ? codes[i / 2] >> 4 : codes[i / 2] & 0x0f)
                         : xr_fp8_to_f32(codes[i], mx_fp8_dtype(f));
  return v * scale;
}

double xr_load_element(const void *base, xr_dtype_t dtype, int64_t i) {
  switch (dtype) {
    case XR_DTYPE_F32: return ((const float *)base)[i];
    case XR_DTYPE_F64: return ((const double *)base)[i];
    case XR_DTYPE_F16: return xr_f16_to_f32(((const uint16_t *)base)[i]);
    case XR_DTYPE_BF16: return xr_bf16_to_f32(((const uint16_t *)base)[i]);
    case XR_DTYPE_F8E4M3FN:
    case XR_DTYPE_F8E5M2:
    case XR_DTYPE_F8E4M3FNUZ:
    case XR_DTYPE_F8E5M2FNUZ: return xr_fp8_to_f32(((const uint8_t *)base)[i], dtype);
    case XR_DTYPE_I8: return ((const int8_t *)base)[i];
    case XR_DTYPE_I16: return ((const int16_t *)base)[i];
    case XR_DTYPE_I32: return ((const int32_t *)base)[i];
    case XR_DTYPE_I64: return (double)((const int64_t *)base)[i];
    case XR_DTYPE_U8: return ((const uint8_t *)base)[i];
    case XR_DTYPE_U16: return ((const uint16_t *)base)[i];
    case XR_DTYPE_U32: return ((const uint32_t *)base)[i];
    case XR_DTYPE_U64: return (double)((const uint64_t *)base)[i];
    case XR_DTYPE_BOOL: return ((const uint8_t *)base)[i] != 0;
    case XR_DTYPE_F4E2M1X2: return ((const uint8_t *)base)[i];
    case XR_DTYPE_F8E8M0: return xr_e8m0_to_f32(((const uint8_t *)base)[i]);
    default: return NAN;
  }
}

void xr_store_element(void *base, xr_dtype_t dtype, int64_t i, double v) {
  switch (dtype) {
    case XR_DTYPE_F32: ((float *)base)[i] = (float)v; break;
    case XR_DTYPE_F64: ((double *)base)[i] = v; break;
    case XR_DTYPE_F16: ((uint16_t *)base)[i] = xr_f32_to_f16((float)v); break;
    case XR_DTYPE_BF16: ((uint16_t *)base)[i] = xr_f32_to_bf16((float)v); break;
    case XR_DTYPE_F8E4M3FN:
    case XR_DTYPE_F8E5M2:
    case XR_DTYPE_F8E4M3FNUZ:
    case XR_DTYPE_F8E5M2FNUZ: ((uint8_t *)base)[i] = xr_f32_to_fp8((float)v, dtype); break;
    case XR_DTYPE_I8: ((int8_t *)base)[i] = (int8_t)v; break;
    case XR_DTYPE_I16: ((int16_t *)base)[i] = (int16_t)v; break;
    case XR_DTYPE_I32: ((int32_t *)base)[i] = (int32_t)v; break;
    case XR_DTYPE_I64: ((int64_t *)base)[i] = (int64_t)v; break;
    case XR_DTYPE_U8: ((uint8_t *)base)[i] = (uint8_t)v; break;
    case XR_DTYPE_U16: ((uint16_t *)base)[i] = (uint16_t)v; break;
    case XR_DTYPE_U32: ((uint32_t *)base)[i] = (uint32_t)v; break;
    case XR_DTYPE_U64: ((uint64_t *)base)[i] = (uint64_t)v; break;
    case XR_DTYPE_BOOL: ((uint8_t *)base)[i] = v != 0; break;
    case XR_DTYPE_F4E2M1X2: ((uint8_t *)base)[i] = (uint8_t)v; break;
    case XR_DTYPE_F8E8M0: ((uint8_t *)base)[i] = xr_f32_to_e8m0((float)v); break;
    default: break;
  }
}
