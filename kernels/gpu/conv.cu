// The convolution steps (kernels/conv.h) on CUDA and HIP, the twin of kernels/opencl/conv.cl
// (one host, kernels/conv_device.c, launches both): one thread per element the step writes,
// summing in fp32 over the elements it depends on, every operand read and written through its
// strides. Dtypes are run-time values (f32, f16, bf16). A direct form, not yet an implicit
// GEMM: it is there for coverage and for agreement with the other backends.
// Each header uses the ones before it.
// clang-format off
#include "hip_compat.h"
#include "dtype_io.h"
#include "dtype_codes.h"
#include "dtype_dispatch.h"
#include "conv_args.h"
// clang-format on

typedef long long i64;

static __device__ __forceinline__ i64 xr_conv_at(const xr_conv_operand_args_t &o, i64 i0, i64 i1,
                                                 i64 i2, i64 i3, i64 i4) {
  return o.offset + i0 * o.strides[0] + i1 * o.strides[1] + i2 * o.strides[2] + i3 * o.strides[3] +
         i4 * o.strides[4];
}

static __device__ __forceinline__ float xr_conv_ld(const unsigned char *base,
                                                   const xr_conv_operand_args_t &o, i64 i) {
  return xr_load_as_float(base, (int)o.dtype, i);
}

static __device__ __forceinline__ float xr_conv_bias(const xr_conv_args_t &a,
                                                     const unsigned char *bias, i64 c) {
  return a.has_bias ? xr_conv_ld(bias, a.bias, a.bias.offset + c * a.bias.strides[0]) : 0.0f;
}

// The output position o with o * stride - pad + k * dilation == i, or -1.
static __device__ __forceinline__ i64 xr_conv_source(i64 i, i64 k, i64 stride, i64 pad,
                                                     i64 dilation, i64 out) {
  const i64 t = i + pad - k * dilation;
  if (t < 0 || t % stride != 0 || t / stride >= out) return -1;
  return t / stride;
}

static __device__ __forceinline__ i64 xr_conv_element() {
  return (i64)blockIdx.x * blockDim.x + threadIdx.x;
}

// y[n, co, od, oh, ow] = bias[co] + sum x * w.
extern "C" __global__ void __launch_bounds__(XR_CONV_THREADS)
    xr_conv_forward(xr_conv_args_t a, const unsigned char *x, const unsigned char *w,
                    unsigned char *y, const unsigned char *bias) {
  const i64 e = xr_conv_element();
  if (e >= a.total) return;
  const i64 ow = e % a.out_size[2];
  i64 t = e / a.out_size[2];
  const i64 oh = t % a.out_size[1];
  t /= a.out_size[1];
  const i64 od = t % a.out_size[0];
  t /= a.out_size[0];
  const i64 co = t % a.c_out, n = t / a.c_out;
  const i64 cg_in = a.c_in / a.groups, g = co / (a.c_out / a.groups);
  float acc = xr_conv_bias(a, bias, co);
  for (i64 ci = 0; ci < cg_in; ci++)
    for (i64 kd = 0; kd < a.window[0]; kd++) {
      const i64 id = od * a.stride[0] - a.pad[0] + kd * a.dilation[0];
      if (id < 0 || id >= a.in_size[0]) continue;
      for (i64 kh = 0; kh < a.window[1]; kh++) {
        const i64 ih = oh * a.stride[1] - a.pad[1] + kh * a.dilation[1];
        if (ih < 0 || ih >= a.in_size[1]) continue;
        for (i64 kw = 0; kw < a.window[2]; kw++) {
          const i64 iw = ow * a.stride[2] - a.pad[2] + kw * a.dilation[2];
          if (iw < 0 || iw >= a.in_size[2]) continue;
          acc += xr_conv_ld(x, a.x, xr_conv_at(a.x, n, g * cg_in + ci, id, ih, iw)) *
                 xr_conv_ld(w, a.w, xr_conv_at(a.w, co, ci, kd, kh, kw));
        }
      }
    }
  xr_store_float(y, (int)a.y.dtype, xr_conv_at(a.y, n, co, od, oh, ow), acc);
}

// x[n, ci, id, ih, iw] = bias[ci] + the forward's products that read it.
extern "C" __global__ void __launch_bounds__(XR_CONV_THREADS)
    xr_conv_backward_data(xr_conv_args_t a, unsigned char *x, const unsigned char *w,
                          const unsigned char *y, const unsigned char *bias) {
  const i64 e = xr_conv_element();
  if (e >= a.total) return;
  const i64 iw = e % a.in_size[2];
  i64 t = e / a.in_size[2];
  const i64 ih = t % a.in_size[1];
  t /= a.in_size[1];
  const i64 id = t % a.in_size[0];
  t /= a.in_size[0];
  const i64 ci = t % a.c_in, n = t / a.c_in;
  const i64 cg_in = a.c_in / a.groups, cg_out = a.c_out / a.groups, g = ci / cg_in;
  float acc = xr_conv_bias(a, bias, ci);
  for (i64 kd = 0; kd < a.window[0]; kd++) {
    const i64 od = xr_conv_source(id, kd, a.stride[0], a.pad[0], a.dilation[0], a.out_size[0]);
    if (od < 0) continue;
    for (i64 kh = 0; kh < a.window[1]; kh++) {
      const i64 oh = xr_conv_source(ih, kh, a.stride[1], a.pad[1], a.dilation[1], a.out_size[1]);
      if (oh < 0) continue;
      for (i64 kw = 0; kw < a.window[2]; kw++) {
        const i64 ow = xr_conv_source(iw, kw, a.stride[2], a.pad[2], a.dilation[2], a.out_size[2]);
        if (ow < 0) continue;
        for (i64 co = g * cg_out; co < (g + 1) * cg_out; co++)
          acc += xr_conv_ld(y, a.y, xr_conv_at(a.y, n, co, od, oh, ow)) *
                 xr_conv_ld(w, a.w, xr_conv_at(a.w, co, ci - g * cg_in, kd, kh, kw));
      }
    }
  }
  xr_store_float(x, (int)a.x.dtype, xr_conv_at(a.x, n, ci, id, ih, iw), acc);
}

// w[co, ci, kd, kh, kw] = sum over n and output positions of y * x.
extern "C" __global__ void __launch_bounds__(XR_CONV_THREADS)
    xr_conv_backward_weight(xr_conv_args_t a, const unsigned char *x, unsigned char *w,
                            const unsigned char *y, const unsigned char *unused) {
  const i64 e = xr_conv_element();
  if (e >= a.total) return;
  const i64 kw = e % a.window[2];
  i64 t = e / a.window[2];
  const i64 kh = t % a.window[1];
  t /= a.window[1];
  const i64 kd = t % a.window[0];
  t /= a.window[0];
  const i64 cg_in = a.c_in / a.groups;
  const i64 ci = t % cg_in, co = t / cg_in, g = co / (a.c_out / a.groups);
  float acc = 0.0f;
  for (i64 n = 0; n < a.n; n++)
    for (i64 od = 0; od < a.out_size[0]; od++) {
      const i64 id = od * a.stride[0] - a.pad[0] + kd * a.dilation[0];
      if (id < 0 || id >= a.in_size[0]) continue;
      for (i64 oh = 0; oh < a.out_size[1]; oh++) {
        const i64 ih = oh * a.stride[1] - a.pad[1] + kh * a.dilation[1];
        if (ih < 0 || ih >= a.in_size[1]) continue;
        float row = 0.0f;
        for (i64 ow = 0; ow < a.out_size[2]; ow++) {
          const i64 iw = ow * a.stride[2] - a.pad[2] + kw * a.dilation[2];
          if (iw < 0 || iw >= a.in_size[2]) continue;
          row += xr_conv_ld(y, a.y, xr_conv_at(a.y, n, co, od, oh, ow)) *
                 xr_conv_ld(x, a.x, xr_conv_at(a.x, n, g * cg_in + ci, id, ih, iw));
        }
        acc += row;
      }
    }
  xr_store_float(w, (int)a.w.dtype, xr_conv_at(a.w, co, ci, kd, kh, kw), acc);
}

// bias[c] = the sum of channel c of the tensor in the y slot (its own shape).
extern "C" __global__ void __launch_bounds__(XR_CONV_THREADS)
    xr_conv_bias_grad(xr_conv_args_t a, const unsigned char *x, const unsigned char *w,
                      const unsigned char *y, unsigned char *bias) {
  const i64 c = xr_conv_element();
  if (c >= a.total) return;
  float acc = 0.0f;
  for (i64 n = 0; n < a.y.shape[0]; n++)
    for (i64 d = 0; d < a.y.shape[2]; d++)
      for (i64 h = 0; h < a.y.shape[3]; h++) {
        float row = 0.0f;
        for (i64 v = 0; v < a.y.shape[4]; v++)
          row += xr_conv_ld(y, a.y, xr_conv_at(a.y, n, c, d, h, v));
        acc += row;
      }
  xr_store_float(bias, (int)a.bias.dtype, a.bias.offset + c * a.bias.strides[0], acc);
}
