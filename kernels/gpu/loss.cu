// The loss family (kernels/loss.h: geometry and semantics) on CUDA and HIP: f32, f16 and bf16
// computed in float, each result rounded once; the twin of kernels/opencl/loss.cl, with the same
// kernels and arguments (kernels/loss_args.h), launched by kernels/loss_device.c.
//  - xr_loss_elements: mse_loss with reduction none and mse_loss_backward, a thread per element
//    (grid-stride), each operand through its own strides (0 where it broadcasts).
//  - xr_loss_sum: mse_loss with mean or sum, one block: each thread adds a strided share of
//    (self - target)^2, the shares merge through a tree in shared memory.
#include "hip_compat.h"
#include "dtype_io.h"
#include "dtype_codes.h"
#include "dtype_dispatch.h"
#include "loss_args.h"

#define XR_LOSS_THREADS XR_LOSS_DEV_THREADS

typedef xr_loss_dev_args_t xr_lp;

// Element e (row-major over the iteration shape) of slot s: its storage index.
static __device__ __forceinline__ long long xr_loss_at(const xr_lp &a, int s, long long e) {
  long long off = a.offset[s];
  for (int d = (int)a.rank - 1; d >= 0; d--) {
    off += (e % a.shape[d]) * a.strides[s][d];
    e /= a.shape[d];
  }
  return off;
}

#define XR_LOSS_ARGS                                                                  \
  const unsigned char *self, const unsigned char *target, const unsigned char *grad, \
      unsigned char *out, xr_loss_dev_args_t a

extern "C" __global__ void __launch_bounds__(XR_LOSS_THREADS) xr_loss_elements(XR_LOSS_ARGS) {
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < a.numel;
       e += (long long)gridDim.x * blockDim.x) {
    const float d = xr_load_as_float(self, a.dtype[0], xr_loss_at(a, 0, e)) -
                    xr_load_as_float(target, a.dtype[1], xr_loss_at(a, 1, e));
    const float v =
        a.backward ? a.norm * d * xr_load_as_float(grad, a.dtype[2], xr_loss_at(a, 2, e)) : d * d;
    xr_store_float(out, a.dtype[3], xr_loss_at(a, 3, e), v);
  }
}

extern "C" __global__ void __launch_bounds__(XR_LOSS_THREADS) xr_loss_sum(XR_LOSS_ARGS) {
  __shared__ float part[XR_LOSS_THREADS];
  (void)grad;
  const int t = threadIdx.x;
  float s = 0.0f;
  for (long long e = t; e < a.numel; e += blockDim.x) {
    const float d = xr_load_as_float(self, a.dtype[0], xr_loss_at(a, 0, e)) -
                    xr_load_as_float(target, a.dtype[1], xr_loss_at(a, 1, e));
    s += d * d;
  }
  part[t] = s;
  __syncthreads();
  for (int w = XR_LOSS_THREADS / 2; w > 0; w >>= 1) {
    if (t < w) part[t] += part[t + w];
    __syncthreads();
  }
  if (t == 0) {
    float v = part[0];
    if (a.reduction == 1) v = v / (float)a.numel; // an empty mean: 0 / 0, NaN
    xr_store_float(out, a.dtype[3], a.offset[3], v);
  }
}
