#include "kernels/dtype.h"

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
