// The GEMM family on CUDA and HIP (kernels/gemm_device.c launches these): out = alpha * A B +
// beta * C over the family's strided, batched problem (kernels/gemm.h), fp32 accumulation,
// one rounding to the output dtype. Kernels exist per storage type: f32, f16, bf16; and for
// aten::_scaled_mm (`_scaled`): fp8 operands of run-time dtypes (each its own), float32
// per-tensor / row-wise / column-wise scales, a bias and an output of any float dtype; and
// (`_block`) its block-scaled forms, mxfp8 / mxfp4 / nvfp4: fp8 or fp4 (e2m1 pairs) operands
// dequantized as they are loaded, code times the e8m0 / e4m3fn scale of its block along K.
//  - xr_gemm_tiled_*: 64 x 64 output tiles through shared memory, any strides (transposed and
//    broadcast operands included). Each tile of A and B is loaded with the operand's
//    contiguous dimension across neighbouring threads, so loads coalesce either way round.
//  - xr_gemv_*: M == 1 with K contiguous in B (decode-time `linear`): one warp per output,
//    lanes striding over K, reduced across warpSize lanes (32 on NVIDIA, 64 on AMD Instinct).
#include "hip_compat.h"
#include "dtype_io.h"
#include "dtype_codes.h"
#include "dtype_dispatch.h"
#include "gemm_args.h"

// Element offset of batch entry `batch` (row-major over batch_shape) in operand o.
static __device__ __forceinline__ long long xr_batch_offset(const xr_gemm_args_t &p,
                                                            const xr_gemm_operand_args_t &o,
                                                            long long batch) {
  long long offset = o.offset;
  for (int d = (int)p.batch_rank - 1; d >= 0; d--) {
    offset += (batch % p.batch_shape[d]) * o.batch_strides[d];
    batch /= p.batch_shape[d];
  }
  return offset;
}

// Operand loaders: element (m, k) of A and (k, n) of B given the batch's base offsets; one
// storage type for A and B, or (_scaled_mm) each operand's run-time dtype.
template <class IO>
struct xr_typed_operands {
  const typename IO::storage *a, *b;
  __device__ __forceinline__ float load_a(const xr_gemm_args_t &p, long long base,
                                          long long m, long long k) const {
    return IO::load(a, base + m * p.a.row_stride + k * p.a.col_stride);
  }
  __device__ __forceinline__ float load_b(const xr_gemm_args_t &p, long long base,
                                          long long k, long long n) const {
    return IO::load(b, base + k * p.b.row_stride + n * p.b.col_stride);
  }
};

struct xr_scaled_operands {
  const unsigned char *a, *b;
  __device__ __forceinline__ float load_a(const xr_gemm_args_t &p, long long base,
                                          long long m, long long k) const {
    return xr_load_as_float(a, p.a_dtype, base + m * p.a.row_stride + k * p.a.col_stride);
  }
  __device__ __forceinline__ float load_b(const xr_gemm_args_t &p, long long base,
                                          long long k, long long n) const {
    return xr_load_as_float(b, p.b_dtype, base + k * p.b.row_stride + n * p.b.col_stride);
  }
};

// e2m1 code (sign bit 3; exponent bits 2-1, bias 1; mantissa bit 0): 0, 0.5, 1, 1.5, 2, 3, 4, 6.
static __device__ __forceinline__ float xr_gemm_e2m1(unsigned int code) {
  const unsigned int e = (code >> 1) & 3u, m = code & 1u;
  const float magnitude = e ? ldexpf(1.0f + 0.5f * (float)m, (int)e - 1) : 0.5f * (float)m;
  return (code & 8u) ? -magnitude : magnitude;
}

// A block scale: e8m0 byte b = 2^(b - 127) (0xff NaN), or an fp8 (nvfp4: e4m3fn) value.
static __device__ __forceinline__ float xr_gemm_block_scale(const unsigned char *scales,
                                                            int dtype, long long i) {
  if (dtype != XR_GPU_F8E8M0) return xr_load_as_float(scales, dtype, i);
  const unsigned int b = scales[i];
  if (b == 0xffu) return __int_as_float(0x7fc00000);
  return b ? __uint_as_float(b << 23) : __uint_as_float(0x00400000u);  // 2^-127 is subnormal
}

// Element (r, k) of a block-scaled operand (A: r = m; B: r = n, with its strides swapped),
// dequantized: its code (an fp8 byte, or nibble k % 2 of the byte holding k / 2, the lower k in
// the low nibble) times the scale of block k / block of row r, the scales row-major `pitch` apart.
static __device__ __forceinline__ float xr_gemm_block_element(
    const xr_gemm_args_t &p, const unsigned char *codes, int dtype, long long at,
    long long r_stride, long long k_stride, long long r, long long k, const unsigned char *scales,
    long long scale_offset, long long pitch) {
  float v;
  if (dtype == XR_GPU_F4E2M1X2) {
    const unsigned int byte = codes[at + r * r_stride + (k >> 1) * k_stride];
    v = xr_gemm_e2m1((k & 1) ? byte >> 4 : byte & 0x0fu);
  } else {
    v = xr_load_as_float(codes, dtype, at + r * r_stride + k * k_stride);
  }
  return v * xr_gemm_block_scale(scales, p.scale_dtype, scale_offset + r * pitch + k / p.block);
}

struct xr_block_operands {
  const unsigned char *a, *b, *scale_a, *scale_b;
  __device__ __forceinline__ float load_a(const xr_gemm_args_t &p, long long base,
                                          long long m, long long k) const {
    return xr_gemm_block_element(p, a, p.a_dtype, base, p.a.row_stride, p.a.col_stride, m, k,
                                 scale_a, p.scale_a_offset, p.scale_a_stride);
  }
  __device__ __forceinline__ float load_b(const xr_gemm_args_t &p, long long base,
                                          long long k, long long n) const {
    return xr_gemm_block_element(p, b, p.b_dtype, base, p.b.col_stride, p.b.row_stride, n, k,
                                 scale_b, p.scale_b_offset, p.scale_b_stride);
  }
};

// Epilogues: out[m][n] from the accumulated dot product, given the batch's bases in out and C.
template <class IO>
struct xr_plain_epilogue {
  const typename IO::storage *c;
  typename IO::storage *out;
  __device__ __forceinline__ void store(const xr_gemm_args_t &p, long long out_base,
                                        long long c_base, long long m, long long n,
                                        float acc) const {
    float value = p.alpha * acc;
    if (p.has_c && p.beta != 0.0f) {
      value += p.beta * IO::load(c, c_base + m * p.c.row_stride + n * p.c.col_stride);
    }
    IO::store(out, out_base + m * p.out.row_stride + n * p.out.col_stride, value);
  }
};

// _scaled_mm: ((alpha * scale_a[m] * scale_b[n] * acc + beta * bias[n]) * scale_result), as
// kernels/gemm.c's reference computes it (scale_result is absent unless the output is fp8).
struct xr_scaled_epilogue {
  const unsigned char *c;
  unsigned char *out;
  const float *scale_a, *scale_b, *scale_result;
  __device__ __forceinline__ void store(const xr_gemm_args_t &p, long long out_base,
                                        long long c_base, long long m, long long n,
                                        float acc) const {
    float value = p.alpha * scale_a[p.scale_a_offset + m * p.scale_a_stride] *
                  scale_b[p.scale_b_offset + n * p.scale_b_stride] * acc;
    if (p.has_c && p.beta != 0.0f) {
      value += p.beta *
               xr_load_as_float(c, p.c_dtype, c_base + m * p.c.row_stride + n * p.c.col_stride);
    }
    if (p.has_scale_result) value *= scale_result[p.scale_result_offset];
    xr_store_float(out, p.out_dtype, out_base + m * p.out.row_stride + n * p.out.col_stride,
                   value);
  }
};

// Block-scaled _scaled_mm: the scales are inside the sum, so only alpha, the bias and
// scale_result remain.
struct xr_block_epilogue {
  const unsigned char *c;
  unsigned char *out;
  const float *scale_result;
  __device__ __forceinline__ void store(const xr_gemm_args_t &p, long long out_base,
                                        long long c_base, long long m, long long n,
                                        float acc) const {
    float value = p.alpha * acc;
    if (p.has_c && p.beta != 0.0f) {
      value += p.beta *
               xr_load_as_float(c, p.c_dtype, c_base + m * p.c.row_stride + n * p.c.col_stride);
    }
    if (p.has_scale_result) value *= scale_result[p.scale_result_offset];
    xr_store_float(out, p.out_dtype, out_base + m * p.out.row_stride + n * p.out.col_stride,
                   value);
  }
};

template <class Operands, class Epilogue>
static __device__ void xr_gemm_tiled(const Operands &ops, const Epilogue &epilogue,
                                     const xr_gemm_args_t &p) {
  __shared__ float a_tile[XR_GEMM_TILE_K][XR_GEMM_TILE_M];
  __shared__ float b_tile[XR_GEMM_TILE_K][XR_GEMM_TILE_N];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int thread = ty * XR_GEMM_THREADS_X + tx;
  const int threads = XR_GEMM_THREADS_X * XR_GEMM_THREADS_Y;
  const long long m0 = (long long)blockIdx.y * XR_GEMM_TILE_M;
  const long long n0 = (long long)blockIdx.x * XR_GEMM_TILE_N;
  // The contiguous dimension of each operand goes across neighbouring threads.
  const bool a_m_fast = p.a.row_stride == 1 && p.a.col_stride != 1;
  const bool b_k_fast = p.b.row_stride == 1 && p.b.col_stride != 1;

  for (long long batch = blockIdx.z; batch < p.batch; batch += gridDim.z) {
    const long long a_base = xr_batch_offset(p, p.a, batch);
    const long long b_base = xr_batch_offset(p, p.b, batch);
    float acc[4][4];
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;

    for (long long k0 = 0; k0 < p.K; k0 += XR_GEMM_TILE_K) {
      for (int e = thread; e < XR_GEMM_TILE_M * XR_GEMM_TILE_K; e += threads) {
        int mm = a_m_fast ? e % XR_GEMM_TILE_M : e / XR_GEMM_TILE_K;
        int kk = a_m_fast ? e / XR_GEMM_TILE_M : e % XR_GEMM_TILE_K;
        long long m = m0 + mm, k = k0 + kk;
        a_tile[kk][mm] = m < p.M && k < p.K ? ops.load_a(p, a_base, m, k) : 0.0f;
      }
      for (int e = thread; e < XR_GEMM_TILE_N * XR_GEMM_TILE_K; e += threads) {
        int nn = b_k_fast ? e / XR_GEMM_TILE_K : e % XR_GEMM_TILE_N;
        int kk = b_k_fast ? e % XR_GEMM_TILE_K : e / XR_GEMM_TILE_N;
        long long n = n0 + nn, k = k0 + kk;
        b_tile[kk][nn] = n < p.N && k < p.K ? ops.load_b(p, b_base, k, n) : 0.0f;
      }
      __syncthreads();
      for (int kk = 0; kk < XR_GEMM_TILE_K; kk++) {
        float a_values[4], b_values[4];
        for (int i = 0; i < 4; i++) a_values[i] = a_tile[kk][ty + i * XR_GEMM_THREADS_Y];
        for (int j = 0; j < 4; j++) b_values[j] = b_tile[kk][tx + j * XR_GEMM_THREADS_X];
        for (int i = 0; i < 4; i++)
          for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a_values[i], b_values[j], acc[i][j]);
      }
      __syncthreads();
    }

    const long long out_base = xr_batch_offset(p, p.out, batch);
    const long long c_base = p.has_c ? xr_batch_offset(p, p.c, batch) : 0;
    for (int i = 0; i < 4; i++) {
      long long m = m0 + ty + i * XR_GEMM_THREADS_Y;
      if (m >= p.M) continue;
      for (int j = 0; j < 4; j++) {
        long long n = n0 + tx + j * XR_GEMM_THREADS_X;
        if (n >= p.N) continue;
        epilogue.store(p, out_base, c_base, m, n, acc[i][j]);
      }
    }
  }
}

template <class Operands, class Epilogue>
static __device__ void xr_gemv(const Operands &ops, const Epilogue &epilogue,
                               const xr_gemm_args_t &p) {
  const int lane = threadIdx.x % warpSize;
  const long long warps_per_block = blockDim.x / warpSize;
  const long long n = (long long)blockIdx.x * warps_per_block + threadIdx.x / warpSize;
  if (n >= p.N) return;  // whole warps leave together: no lane of a live warp is missing
  for (long long batch = blockIdx.z; batch < p.batch; batch += gridDim.z) {
    const long long a_base = xr_batch_offset(p, p.a, batch);
    const long long b_base = xr_batch_offset(p, p.b, batch);
    float sum = 0.0f;
    for (long long k = lane; k < p.K; k += warpSize) {
      sum = fmaf(ops.load_a(p, a_base, 0, k), ops.load_b(p, b_base, k, n), sum);
    }
    sum = xr_warp_sum(sum);
    if (lane == 0) {
      const long long c_base = p.has_c ? xr_batch_offset(p, p.c, batch) : 0;
      epilogue.store(p, xr_batch_offset(p, p.out, batch), c_base, 0, n, sum);
    }
  }
}

#define XR_GEMM_KERNELS(suffix, IO)                                                          \
  extern "C" __global__ void __launch_bounds__(XR_GEMM_THREADS_X * XR_GEMM_THREADS_Y)         \
      xr_gemm_tiled_##suffix(const IO::storage *a, const IO::storage *b, const IO::storage *c, \
                             IO::storage *out, xr_gemm_args_t p) {                      \
    xr_gemm_tiled(xr_typed_operands<IO>{a, b}, xr_plain_epilogue<IO>{c, out}, p);              \
  }                                                                                            \
  extern "C" __global__ void __launch_bounds__(XR_GEMV_THREADS)                               \
      xr_gemv_##suffix(const IO::storage *a, const IO::storage *b, const IO::storage *c,       \
                       IO::storage *out, xr_gemm_args_t p) {                            \
    xr_gemv(xr_typed_operands<IO>{a, b}, xr_plain_epilogue<IO>{c, out}, p);                    \
  }

XR_GEMM_KERNELS(f32, xr_io_f32)
XR_GEMM_KERNELS(f16, xr_io_f16)
XR_GEMM_KERNELS(bf16, xr_io_bf16)

// aten::_scaled_mm: the same two kernels over fp8 operands, run-time dtypes throughout.
#define XR_GEMM_SCALED_ARGS                                                                    \
  const unsigned char *a, const unsigned char *b, const unsigned char *c, unsigned char *out,  \
      const float *scale_a, const float *scale_b, const float *scale_result, xr_gemm_args_t p

extern "C" __global__ void __launch_bounds__(XR_GEMM_THREADS_X * XR_GEMM_THREADS_Y)
    xr_gemm_tiled_scaled(XR_GEMM_SCALED_ARGS) {
  xr_gemm_tiled(xr_scaled_operands{a, b},
                xr_scaled_epilogue{c, out, scale_a, scale_b, scale_result}, p);
}

extern "C" __global__ void __launch_bounds__(XR_GEMV_THREADS) xr_gemv_scaled(XR_GEMM_SCALED_ARGS) {
  xr_gemv(xr_scaled_operands{a, b}, xr_scaled_epilogue{c, out, scale_a, scale_b, scale_result}, p);
}

// Block-scaled aten::_scaled_mm (mxfp8, mxfp4, nvfp4): the scales are bytes (e8m0 or e4m3fn).
#define XR_GEMM_BLOCK_ARGS                                                                     \
  const unsigned char *a, const unsigned char *b, const unsigned char *c, unsigned char *out,  \
      const unsigned char *scale_a, const unsigned char *scale_b, const float *scale_result,   \
      xr_gemm_args_t p

extern "C" __global__ void __launch_bounds__(XR_GEMM_THREADS_X * XR_GEMM_THREADS_Y)
    xr_gemm_tiled_block(XR_GEMM_BLOCK_ARGS) {
  xr_gemm_tiled(xr_block_operands{a, b, scale_a, scale_b}, xr_block_epilogue{c, out, scale_result},
                p);
}

extern "C" __global__ void __launch_bounds__(XR_GEMV_THREADS) xr_gemv_block(XR_GEMM_BLOCK_ARGS) {
  xr_gemv(xr_block_operands{a, b, scale_a, scale_b}, xr_block_epilogue{c, out, scale_result}, p);
}
