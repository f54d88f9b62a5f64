// The loss family (kernels/loss.h: geometry and semantics) on OpenCL devices: f32, f16 and bf16
// computed in float, each result rounded once; the twin of kernels/gpu/loss.cu, with the same
// kernels and arguments (kernels/loss_args.h), launched by kernels/loss_device.c.
//  - xr_loss_elements: mse_loss with reduction none and mse_loss_backward, a work-item per
//    element (grid-stride), each operand through its own strides (0 where it broadcasts).
//  - xr_loss_sum: mse_loss with mean or sum, one work-group: each work-item adds a strided
//    share of (self - target)^2, the shares merge through a tree in local memory.
#include "float_io.h"
#include "loss_args.h"

#define XR_WG XR_LOSS_DEV_THREADS

// Element e (row-major over the iteration shape) of slot s: its storage index.
long loss_at(const xr_loss_dev_args_t *a, int s, long e) {
  long off = a->offset[s];
  for (int d = (int)a->rank - 1; d >= 0; d--) {
    off += (e % a->shape[d]) * a->strides[s][d];
    e /= a->shape[d];
  }
  return off;
}

#define XR_LOSS_ARGS                                                                   \
  __global const uchar *self, __global const uchar *target, __global const uchar *grad, \
      __global uchar *out, xr_loss_dev_args_t a

__kernel void xr_loss_elements(XR_LOSS_ARGS) {
  for (long e = get_global_id(0); e < a.numel; e += get_global_size(0)) {
    const float d = xr_ld(self, a.dtype[0], loss_at(&a, 0, e)) -
                    xr_ld(target, a.dtype[1], loss_at(&a, 1, e));
    const float v = a.backward ? a.norm * d * xr_ld(grad, a.dtype[2], loss_at(&a, 2, e)) : d * d;
    xr_st(out, a.dtype[3], loss_at(&a, 3, e), v);
  }
}

__kernel __attribute__((reqd_work_group_size(XR_WG, 1, 1))) void xr_loss_sum(XR_LOSS_ARGS) {
  __local float part[XR_WG];
  const int lid = get_local_id(0);
  float s = 0.0f;
  for (long e = lid; e < a.numel; e += XR_WG) {
    const float d = xr_ld(self, a.dtype[0], loss_at(&a, 0, e)) -
                    xr_ld(target, a.dtype[1], loss_at(&a, 1, e));
    s += d * d;
  }
  part[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = XR_WG / 2; w > 0; w >>= 1) {
    if (lid < w) part[lid] += part[lid + w];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    float v = part[0];
    if (a.reduction == 1) v = v / (float)a.numel; // an empty mean: 0 / 0, NaN
    xr_st(out, a.dtype[3], a.offset[3], v);
  }
}
