// The convolution steps (kernels/conv.h): one work-item per element the step writes, summing in
// fp32 over the elements it depends on, every operand read and written through its strides
// (dtypes as xr_dtype_t codes, float_io.h).
// The twin of kernels/gpu/conv.cu; the host is kernels/conv_device.c (argument block:
// kernels/conv_args.h).

#include "conv_args.h"
#include "float_io.h"

long at(const xr_conv_operand_args_t *o, long i0, long i1, long i2, long i3, long i4) {
  return o->offset + i0 * o->strides[0] + i1 * o->strides[1] + i2 * o->strides[2] +
         i3 * o->strides[3] + i4 * o->strides[4];
}

float bias_of(const xr_conv_args_t *a, __global const uchar *bias, long c) {
  return a->has_bias ? xr_ld(bias, a->bias.dtype, a->bias.offset + c * a->bias.strides[0]) : 0.0f;
}

// The output position o with o * stride - pad + k * dilation == i, or -1.
long source_of(long i, long k, long stride, long pad, long dilation, long out) {
  long t = i + pad - k * dilation;
  if (t < 0 || t % stride != 0 || t / stride >= out) return -1;
  return t / stride;
}

// y[n, co, od, oh, ow] = bias[co] + sum x * w.
__kernel void xr_conv_forward(const xr_conv_args_t a, __global const uchar *x,
                              __global const uchar *w, __global uchar *y,
                              __global const uchar *bias) {
  long e = get_global_id(0);
  if (e >= a.total) return;
  long ow = e % a.out_size[2], t = e / a.out_size[2];
  long oh = t % a.out_size[1];
  t /= a.out_size[1];
  long od = t % a.out_size[0];
  t /= a.out_size[0];
  long co = t % a.c_out, n = t / a.c_out;
  long cg_in = a.c_in / a.groups, g = co / (a.c_out / a.groups);
  float acc = bias_of(&a, bias, co);
  for (long ci = 0; ci < cg_in; ci++)
    for (long kd = 0; kd < a.window[0]; kd++) {
      long id = od * a.stride[0] - a.pad[0] + kd * a.dilation[0];
      if (id < 0 || id >= a.in_size[0]) continue;
      for (long kh = 0; kh < a.window[1]; kh++) {
        long ih = oh * a.stride[1] - a.pad[1] + kh * a.dilation[1];
        if (ih < 0 || ih >= a.in_size[1]) continue;
        for (long kw = 0; kw < a.window[2]; kw++) {
          long iw = ow * a.stride[2] - a.pad[2] + kw * a.dilation[2];
          if (iw < 0 || iw >= a.in_size[2]) continue;
          acc += xr_ld(x, a.x.dtype, at(&a.x, n, g * cg_in + ci, id, ih, iw)) *
                 xr_ld(w, a.w.dtype, at(&a.w, co, ci, kd, kh, kw));
        }
      }
    }
  xr_st(y, a.y.dtype, at(&a.y, n, co, od, oh, ow), acc);
}

// x[n, ci, id, ih, iw] = bias[ci] + the forward's products that read it.
__kernel void xr_conv_backward_data(const xr_conv_args_t a, __global uchar *x,
                                    __global const uchar *w, __global const uchar *y,
                                    __global const uchar *bias) {
  long e = get_global_id(0);
  if (e >= a.total) return;
  long iw = e % a.in_size[2], t = e / a.in_size[2];
  long ih = t % a.in_size[1];
  t /= a.in_size[1];
  long id = t % a.in_size[0];
  t /= a.in_size[0];
  long ci = t % a.c_in, n = t / a.c_in;
  long cg_in = a.c_in / a.groups, cg_out = a.c_out / a.groups, g = ci / cg_in;
  float acc = bias_of(&a, bias, ci);
  for (long kd = 0; kd < a.window[0]; kd++) {
    long od = source_of(id, kd, a.stride[0], a.pad[0], a.dilation[0], a.out_size[0]);
    if (od < 0) continue;
    for (long kh = 0; kh < a.window[1]; kh++) {
      long oh = source_of(ih, kh, a.stride[1], a.pad[1], a.dilation[1], a.out_size[1]);
      if (oh < 0) continue;
      for (long kw = 0; kw < a.window[2]; kw++) {
        long ow = source_of(iw, kw, a.stride[2], a.pad[2], a.dilation[2], a.out_size[2]);
        if (ow < 0) continue;
        for (long co = g * cg_out; co < (g + 1) * cg_out; co++)
          acc += xr_ld(y, a.y.dtype, at(&a.y, n, co, od, oh, ow)) *
                 xr_ld(w, a.w.dtype, at(&a.w, co, ci - g * cg_in, kd, kh, kw));
      }
    }
  }
  xr_st(x, a.x.dtype, at(&a.x, n, ci, id, ih, iw), acc);
}

// w[co, ci, kd, kh, kw] = sum over n and output positions of y * x.
__kernel void xr_conv_backward_weight(const xr_conv_args_t a, __global const uchar *x,
                                      __global uchar *w, __global const uchar *y,
                                      __global const uchar *unused) {
  long e = get_global_id(0);
  if (e >= a.total) return;
  long kw = e % a.window[2], t = e / a.window[2];
  long kh = t % a.window[1];
  t /= a.window[1];
  long kd = t % a.window[0];
  t /= a.window[0];
  long cg_in = a.c_in / a.groups;
  long ci = t % cg_in, co = t / cg_in, g = co / (a.c_out / a.groups);
  float acc = 0;
  for (long n = 0; n < a.n; n++)
    for (long od = 0; od < a.out_size[0]; od++) {
      long id = od * a.stride[0] - a.pad[0] + kd * a.dilation[0];
      if (id < 0 || id >= a.in_size[0]) continue;
      for (long oh = 0; oh < a.out_size[1]; oh++) {
        long ih = oh * a.stride[1] - a.pad[1] + kh * a.dilation[1];
        if (ih < 0 || ih >= a.in_size[1]) continue;
        float row = 0;
        for (long ow = 0; ow < a.out_size[2]; ow++) {
          long iw = ow * a.stride[2] - a.pad[2] + kw * a.dilation[2];
          if (iw < 0 || iw >= a.in_size[2]) continue;
          row += xr_ld(y, a.y.dtype, at(&a.y, n, co, od, oh, ow)) *
                 xr_ld(x, a.x.dtype, at(&a.x, n, g * cg_in + ci, id, ih, iw));
        }
        acc += row;
      }
    }
  xr_st(w, a.w.dtype, at(&a.w, co, ci, kd, kh, kw), acc);
}

// bias[c] = the sum of channel c of the tensor in the y slot (its own shape).
__kernel void xr_conv_bias_grad(const xr_conv_args_t a, __global const uchar *x,
                                __global const uchar *w, __global const uchar *y,
                                __global uchar *bias) {
  long c = get_global_id(0);
  if (c >= a.total) return;
  float acc = 0;
  for (long n = 0; n < a.y.shape[0]; n++)
    for (long d = 0; d < a.y.shape[2]; d++)
      for (long h = 0; h < a.y.shape[3]; h++) {
        float row = 0;
        for (long v = 0; v < a.y.shape[4]; v++) row += xr_ld(y, a.y.dtype, at(&a.y, n, c, d, h, v));
        acc += row;
      }
  xr_st(bias, a.bias.dtype, a.bias.offset + c * a.bias.strides[0], acc);
}

// y[n, c, ...] += bias[c] over the y slot's elements (after CLBlast's convgemm, which has no
// bias).
__kernel void xr_conv_add_bias(const xr_conv_args_t a, __global const uchar *x,
                               __global const uchar *w, __global uchar *y,
                               __global const uchar *bias) {
  long e = get_global_id(0);
  if (e >= a.total) return;
  long i4 = e % a.y.shape[4], t = e / a.y.shape[4];
  long i3 = t % a.y.shape[3];
  t /= a.y.shape[3];
  long i2 = t % a.y.shape[2];
  t /= a.y.shape[2];
  long c = t % a.y.shape[1], n = t / a.y.shape[1];
  long i = at(&a.y, n, c, i2, i3, i4);
  xr_st(y, a.y.dtype, i, xr_ld(y, a.y.dtype, i) + bias_of(&a, bias, c));
}
