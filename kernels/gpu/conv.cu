// The convolution steps (kernels/conv.h) on CUDA and HIP. The direct kernels are the twins of
// kernels/opencl/conv.cl (one host, kernels/conv_device.c, launches both): one thread per
// element the step writes, summing in fp32 over the elements it depends on, every operand read
// and written through its strides. The implicit-GEMM kernels below (CUDA and HIP only) run the
// three products as tiled GEMMs where their GEMM view is wide enough. Dtypes are run-time
// values (f32, f16, bf16).
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

// ---- implicit GEMM ---------------------------------------------------------------------------
// The three products as tiled GEMMs over one group each (blockIdx.z), the operands gathered
// from the tensors as the tiles are loaded (nothing is materialised):
//   FORWARD          C[M = n x out positions, N = c_out / g] over K = c_in / g x kernel positions:
//                    A = x at the window's position (0 in the padding), B = w
//   BACKWARD_DATA    C[M = n x in positions, N = c_in / g] over K = c_out / g x kernel positions:
//                    A = y at the output position that reads the input one (0 where none), B = w
//   BACKWARD_WEIGHT  C[M = c_out / g, N = c_in / g x kernel positions] over K = n x out
//                    positions: A = y, B = x at the window's position
// Each block computes an XR_CONV_TILE x XR_CONV_TILE tile of C from XR_CONV_TILE_K-deep slices
// staged in shared memory, each of its 256 threads a 4 x 4 block of it, summing in fp32.

#define XR_CONV_TILE_K 16

struct xr_conv_gemm {
  i64 m, n, k;        // the GEMM's sizes
  i64 cg_in, cg_out;  // channels per group
  i64 window, out_pos, in_pos;
};

static __device__ __forceinline__ xr_conv_gemm xr_conv_gemm_of(const xr_conv_args_t &a, int pass) {
  xr_conv_gemm s;
  s.cg_in = a.c_in / a.groups, s.cg_out = a.c_out / a.groups;
  s.window = a.window[0] * a.window[1] * a.window[2];
  s.out_pos = a.out_size[0] * a.out_size[1] * a.out_size[2];
  s.in_pos = a.in_size[0] * a.in_size[1] * a.in_size[2];
  if (pass == 0)
    s.m = a.n * s.out_pos, s.n = s.cg_out, s.k = s.cg_in * s.window;
  else if (pass == 1)
    s.m = a.n * s.in_pos, s.n = s.cg_in, s.k = s.cg_out * s.window;
  else
    s.m = s.cg_out, s.n = s.cg_in * s.window, s.k = a.n * s.out_pos;
  return s;
}

// A position index as (d, h, w) of `size`.
static __device__ __forceinline__ void xr_conv_split(i64 p, const long *size, i64 *d) {
  d[2] = p % size[2];
  p /= size[2];
  d[1] = p % size[1];
  d[0] = p / size[1];
}

// The input position the kernel position `kk` of output position `o` reads, or false (padding).
static __device__ __forceinline__ bool xr_conv_input_of(const xr_conv_args_t &a, const i64 *o,
                                                        const i64 *kk, i64 *in) {
  bool inside = true;
  for (int d = 0; d < 3; d++) {
    in[d] = o[d] * a.stride[d] - a.pad[d] + kk[d] * a.dilation[d];
    inside = inside && in[d] >= 0 && in[d] < a.in_size[d];
  }
  return inside;
}

// A[row, col] of the pass's GEMM for group g.
static __device__ float xr_conv_a(const xr_conv_args_t &a, const xr_conv_gemm &s, int pass, i64 g,
                                  i64 row, i64 col, const unsigned char *x,
                                  const unsigned char *y) {
  i64 o[3], kk[3], in[3];
  if (pass == 0) {  // x[n, g * cg_in + ci, window position of output position]
    const i64 n = row / s.out_pos, ci = col / s.window;
    xr_conv_split(row % s.out_pos, a.out_size, o);
    xr_conv_split(col % s.window, a.window, kk);
    if (!xr_conv_input_of(a, o, kk, in)) return 0.0f;
    return xr_conv_ld(x, a.x, xr_conv_at(a.x, n, g * s.cg_in + ci, in[0], in[1], in[2]));
  }
  if (pass == 1) {  // y[n, g * cg_out + co, the output position reading input position row]
    const i64 n = row / s.in_pos, co = col / s.window;
    xr_conv_split(row % s.in_pos, a.in_size, in);
    xr_conv_split(col % s.window, a.window, kk);
    for (int d = 0; d < 3; d++) {
      o[d] = xr_conv_source(in[d], kk[d], a.stride[d], a.pad[d], a.dilation[d], a.out_size[d]);
      if (o[d] < 0) return 0.0f;
    }
    return xr_conv_ld(y, a.y, xr_conv_at(a.y, n, g * s.cg_out + co, o[0], o[1], o[2]));
  }
  // y[n, g * cg_out + row, output position]
  const i64 n = col / s.out_pos;
  xr_conv_split(col % s.out_pos, a.out_size, o);
  return xr_conv_ld(y, a.y, xr_conv_at(a.y, n, g * s.cg_out + row, o[0], o[1], o[2]));
}

// B[row, col] of the pass's GEMM for group g.
static __device__ float xr_conv_b(const xr_conv_args_t &a, const xr_conv_gemm &s, int pass, i64 g,
                                  i64 row, i64 col, const unsigned char *x,
                                  const unsigned char *w) {
  i64 kk[3];
  if (pass != 2) {  // w[g * cg_out + co, ci, kernel position]
    const i64 outer = row / s.window;
    xr_conv_split(row % s.window, a.window, kk);
    const i64 co = pass == 0 ? col : outer, ci = pass == 0 ? outer : col;
    return xr_conv_ld(w, a.w, xr_conv_at(a.w, g * s.cg_out + co, ci, kk[0], kk[1], kk[2]));
  }
  // x[n, g * cg_in + ci, window position kk of output position]
  i64 o[3], in[3];
  const i64 n = row / s.out_pos, ci = col / s.window;
  xr_conv_split(row % s.out_pos, a.out_size, o);
  xr_conv_split(col % s.window, a.window, kk);
  if (!xr_conv_input_of(a, o, kk, in)) return 0.0f;
  return xr_conv_ld(x, a.x, xr_conv_at(a.x, n, g * s.cg_in + ci, in[0], in[1], in[2]));
}

// C[row, col] (+ the bias) into the tensor the pass writes.
static __device__ void xr_conv_c(const xr_conv_args_t &a, const xr_conv_gemm &s, int pass, i64 g,
                                 i64 row, i64 col, float v, unsigned char *out,
                                 const unsigned char *bias) {
  i64 p[3];
  if (pass == 0) {
    const i64 n = row / s.out_pos, co = g * s.cg_out + col;
    xr_conv_split(row % s.out_pos, a.out_size, p);
    xr_store_float(out, (int)a.y.dtype, xr_conv_at(a.y, n, co, p[0], p[1], p[2]),
                   v + xr_conv_bias(a, bias, co));
  } else if (pass == 1) {
    const i64 n = row / s.in_pos, ci = g * s.cg_in + col;
    xr_conv_split(row % s.in_pos, a.in_size, p);
    xr_store_float(out, (int)a.x.dtype, xr_conv_at(a.x, n, ci, p[0], p[1], p[2]),
                   v + xr_conv_bias(a, bias, ci));
  } else {
    const i64 ci = col / s.window;
    xr_conv_split(col % s.window, a.window, p);
    xr_store_float(out, (int)a.w.dtype, xr_conv_at(a.w, g * s.cg_out + row, ci, p[0], p[1], p[2]),
                   v);
  }
}

static __device__ void xr_conv_igemm(const xr_conv_args_t &a, int pass, const unsigned char *x,
                                     const unsigned char *w, const unsigned char *y,
                                     const unsigned char *bias, unsigned char *out) {
  __shared__ float as[XR_CONV_TILE_K][XR_CONV_TILE];
  __shared__ float bs[XR_CONV_TILE_K][XR_CONV_TILE];
  const xr_conv_gemm s = xr_conv_gemm_of(a, pass);
  const i64 g = blockIdx.z, row0 = (i64)blockIdx.x * XR_CONV_TILE,
            col0 = (i64)blockIdx.y * XR_CONV_TILE;
  const int t = threadIdx.x, tr = t / 16, tc = t % 16;
  float acc[4][4] = {{0.0f}};
  for (i64 k0 = 0; k0 < s.k; k0 += XR_CONV_TILE_K) {
    // 256 threads stage 16 x 64 elements of A and of B, 4 each, consecutive threads along
    // the tile's 64 (output positions for A: x's fastest dim in NCHW).
    for (int i = 0; i < 4; i++) {
      const int e = t + 256 * i, r = e % XR_CONV_TILE, kk = e / XR_CONV_TILE;
      const i64 k = k0 + kk, row = row0 + r, col = col0 + r;
      as[kk][r] = k < s.k && row < s.m ? xr_conv_a(a, s, pass, g, row, k, x, y) : 0.0f;
      bs[kk][r] = k < s.k && col < s.n ? xr_conv_b(a, s, pass, g, k, col, x, w) : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < XR_CONV_TILE_K; kk++) {
      float av[4], bv[4];
      for (int i = 0; i < 4; i++) av[i] = as[kk][tr + 16 * i], bv[i] = bs[kk][tc + 16 * i];
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      const i64 row = row0 + tr + 16 * i, col = col0 + tc + 16 * j;
      if (row < s.m && col < s.n) xr_conv_c(a, s, pass, g, row, col, acc[i][j], out, bias);
    }
}

// Grid: (ceil(M / XR_CONV_TILE), ceil(N / XR_CONV_TILE), groups), XR_CONV_GEMM_THREADS threads.
extern "C" __global__ void __launch_bounds__(XR_CONV_GEMM_THREADS)
    xr_conv_forward_gemm(xr_conv_args_t a, const unsigned char *x, const unsigned char *w,
                         unsigned char *y, const unsigned char *bias) {
  xr_conv_igemm(a, 0, x, w, y, bias, y);
}

extern "C" __global__ void __launch_bounds__(XR_CONV_GEMM_THREADS)
    xr_conv_backward_data_gemm(xr_conv_args_t a, unsigned char *x, const unsigned char *w,
                               const unsigned char *y, const unsigned char *bias) {
  xr_conv_igemm(a, 1, x, w, y, bias, x);
}

extern "C" __global__ void __launch_bounds__(XR_CONV_GEMM_THREADS)
    xr_conv_backward_weight_gemm(xr_conv_args_t a, const unsigned char *x, unsigned char *w,
                                 const unsigned char *y, const unsigned char *unused) {
  xr_conv_igemm(a, 2, x, w, y, unused, w);
}
