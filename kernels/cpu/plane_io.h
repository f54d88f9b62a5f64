/* One (n, c) plane of a 5-D view (kernels/family.h's xr_view5_t: d, h, w sizes `size`, any
 * strides, fp32 / fp16 / bf16) to or from a contiguous fp32 buffer in d-h-w order, for the cpu
 * kernels that compute on fp32 copies (pool_cpu.c, channel_norm_cpu.c). `off` is the tensor's
 * storage offset; stores round once to the view's dtype. */
#ifndef XR_KERNELS_CPU_PLANE_IO_H
#define XR_KERNELS_CPU_PLANE_IO_H

#include "kernels/dtype.h"
#include "kernels/family.h"

/* Runs `body` (using i) for i in [0, n): blocks of 16 with a constant trip count, which GCC's
 * -O2 vectoriser takes (a loop of unknown count it leaves scalar), then the tail. */
#define XR_PLANE_LOOP(n, ...)                                                   \
  do {                                                                          \
    int64_t i_ = 0;                                                             \
    for (; i_ + 16 <= (n); i_ += 16)                                            \
      for (int64_t j_ = 0; j_ < 16; j_++) { int64_t i = i_ + j_; __VA_ARGS__; } \
    for (int64_t i = i_; i < (n); i++) { __VA_ARGS__; }                         \
  } while (0)

/* Inlined always: the callers are compiled per instruction set (XR_CPU_CLONES), and an
 * out-of-line copy would run the conversions at the baseline's (SSE2) width. */
#define XR_PLANE_IO static inline __attribute__((always_inline))

/* Whether the plane's d-h-w elements are one contiguous run. */
XR_PLANE_IO bool xr_plane_contiguous(const xr_view5_t *v, const int64_t *size) {
  return (size[2] == 1 || v->strides[4] == 1) && (size[1] == 1 || v->strides[3] == size[2]) &&
         (size[0] == 1 || v->strides[2] == size[1] * size[2]);
}

XR_PLANE_IO void xr_plane_gather(const void *base, int64_t off, const xr_view5_t *v, int64_t n,
                                   int64_t c, const int64_t *size, float *out) {
  int64_t o = off + n * v->strides[0] + c * v->strides[1], k = 0;
  if (xr_plane_contiguous(v, size)) {
    int64_t count = size[0] * size[1] * size[2];
    if (v->dtype == XR_DTYPE_F32) {
      const float *src = (const float *)base + o;
      XR_PLANE_LOOP(count, out[i] = src[i]);
    } else if (v->dtype == XR_DTYPE_BF16) {
      const uint16_t *src = (const uint16_t *)base + o;
      XR_PLANE_LOOP(count, out[i] = xr_bf16_to_f32(src[i]));
    } else {
      const uint16_t *src = (const uint16_t *)base + o;
      XR_PLANE_LOOP(count, out[i] = xr_f16_to_f32(src[i]));
    }
    return;
  }
  for (int64_t d = 0; d < size[0]; d++)
    for (int64_t h = 0; h < size[1]; h++) {
      int64_t row = o + d * v->strides[2] + h * v->strides[3], s = v->strides[4];
      if (v->dtype == XR_DTYPE_F32) {
        const float *src = (const float *)base + row;
        for (int64_t w = 0; w < size[2]; w++) out[k++] = src[w * s];
      } else {
        const uint16_t *src = (const uint16_t *)base + row;
        if (v->dtype == XR_DTYPE_BF16)
          for (int64_t w = 0; w < size[2]; w++) out[k++] = xr_bf16_to_f32(src[w * s]);
        else
          for (int64_t w = 0; w < size[2]; w++) out[k++] = xr_f16_to_f32(src[w * s]);
      }
    }
}

XR_PLANE_IO void xr_plane_scatter(void *base, int64_t off, const xr_view5_t *v, int64_t n,
                                    int64_t c, const int64_t *size, const float *in) {
  int64_t o = off + n * v->strides[0] + c * v->strides[1], k = 0;
  if (xr_plane_contiguous(v, size)) {
    int64_t count = size[0] * size[1] * size[2];
    if (v->dtype == XR_DTYPE_F32) {
      float *dst = (float *)base + o;
      XR_PLANE_LOOP(count, dst[i] = in[i]);
    } else if (v->dtype == XR_DTYPE_BF16) {
      uint16_t *dst = (uint16_t *)base + o;
      XR_PLANE_LOOP(count, dst[i] = xr_f32_to_bf16(in[i]));
    } else {
      uint16_t *dst = (uint16_t *)base + o;
      XR_PLANE_LOOP(count, dst[i] = xr_f32_to_f16(in[i]));
    }
    return;
  }
  for (int64_t d = 0; d < size[0]; d++)
    for (int64_t h = 0; h < size[1]; h++) {
      int64_t row = o + d * v->strides[2] + h * v->strides[3], s = v->strides[4];
      if (v->dtype == XR_DTYPE_F32) {
        float *dst = (float *)base + row;
        for (int64_t w = 0; w < size[2]; w++) dst[w * s] = in[k++];
      } else {
        uint16_t *dst = (uint16_t *)base + row;
        if (v->dtype == XR_DTYPE_BF16)
          for (int64_t w = 0; w < size[2]; w++) dst[w * s] = xr_f32_to_bf16(in[k++]);
        else
          for (int64_t w = 0; w < size[2]; w++) dst[w * s] = xr_f32_to_f16(in[k++]);
      }
    }
}

#endif
