/* One (n, c) plane of a 5-D view (kernels/family.h's xr_view5_t: d, h, w sizes `size`, any
 * strides, fp32 / fp16 / bf16) to or from a contiguous fp32 buffer in d-h-w order, for the cpu
 * kernels that compute on fp32 copies (pool_cpu.c, channel_norm_cpu.c). `off` is the tensor's
 * storage offset; stores round once to the view's dtype. */
#ifndef XR_KERNELS_CPU_PLANE_IO_H
#define XR_KERNELS_CPU_PLANE_IO_H

#include "kernels/dtype.h"
#include "kernels/family.h"

static inline void xr_plane_gather(const void *base, int64_t off, const xr_view5_t *v, int64_t n,
                                   int64_t c, const int64_t *size, float *out) {
  int64_t o = off + n * v->strides[0] + c * v->strides[1], k = 0;
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

static inline void xr_plane_scatter(void *base, int64_t off, const xr_view5_t *v, int64_t n,
                                    int64_t c, const int64_t *size, const float *in) {
  int64_t o = off + n * v->strides[0] + c * v->strides[1], k = 0;
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
