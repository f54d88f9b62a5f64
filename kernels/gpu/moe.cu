// Mixture-of-experts kernels for CUDA and HIP (semantics in kernels/moe.h; launched by
// kernels/moe_device.c). They follow the OpenCL kernels of kernels/opencl/moe.cl, which are
// tested against the reference on every CI run:
//  - sorting (vLLM moe_align_block_size, CK moe_sorting, the fused path's own routing) is the
//    same deterministic counting sort: xr_moe_count counts each chunk's ids per expert,
//    xr_moe_scan (one block) turns counts into per-chunk offsets and expert segments,
//    xr_moe_scatter writes every chunk's ids in order, so a segment lists ids ascending, as the
//    reference does;
//  - xr_moe_gemm1_* / xr_moe_gemm2_* are grouped GEMMs over the sorted rows: a block takes a
//    tile of sorted rows of one expert (the tile's row count divides the sorted block size) and
//    64 output columns, gathers the rows' inputs and the expert's weights through shared memory
//    and keeps rows-per-thread x 4 accumulators per thread (fp32). GEMM-1 fuses the activation
//    (gate and up columns in the same tile): silu_and_mul, or moe_forward's swigluoai with gate
//    and up interleaved in w1's rows; GEMM-2 applies the routing weight. moe_forward's biases
//    join the accumulators (GEMM-1's before its rounding, GEMM-2's before the routing weight).
//    The weight format is a compile-time variant, as the activations' dtype is: the plain
//    kernels read the weights in that dtype, the _mxfp4 ones decode e2m1 pairs as the tiles
//    load (the byte, its nibble, times the e8m0 scale of its 32), the _fp8 ones fp8 codes of
//    any of the four formats (through a table of the 256 codes' values that each block decodes
//    first with dtype_io.h's decoders, the format a run-time parameter) times the float32
//    scale of the weight's [bn, bk] block or of its expert;
//  - xr_moe_reduce_* sums each token's top-k rows in fp32 and rounds once;
//  - xr_moe_topk_softmax is the router (softmax in fp32, top-k by logit, ties to the lower
//    expert).
// Intermediate values are rounded where vLLM's kernels store them in the activation dtype:
// the GEMM-1 outputs (bias included), the activation's output, the weighted GEMM-2 output
// (bias included).
#include "hip_compat.h"
#include "dtype_codes.h"
#include "dtype_io.h"
#include "moe_args.h"

// Expert weight formats, the GEMM kernels' compile-time variants.
enum { XR_MOE_PLAIN = 0, XR_MOE_MXFP4 = 1, XR_MOE_FP8 = 2 };

static __device__ __forceinline__ long long xr_moe_min(long long a, long long b) {
  return a < b ? a : b;
}

// Secondary float tensors (routing weights, logits) whose dtype is a run-time code.
static __device__ __forceinline__ float xr_moe_load(const void *p, long long i, int dtype) {
  if (dtype == XR_MOE_F32) return xr_io_f32::load((const float *)p, i);
  if (dtype == XR_MOE_F16) return xr_io_f16::load((const unsigned short *)p, i);
  return xr_io_bf16::load((const unsigned short *)p, i);
}

static __device__ __forceinline__ void xr_moe_store(void *p, long long i, int dtype, float v) {
  if (dtype == XR_MOE_F32) xr_io_f32::store((float *)p, i, v);
  else if (dtype == XR_MOE_F16) xr_io_f16::store((unsigned short *)p, i, v);
  else xr_io_bf16::store((unsigned short *)p, i, v);
}

// Element i of an int32 (wide = 0) or int64 (wide = 1) tensor.
static __device__ __forceinline__ int xr_moe_load_index(const void *p, long long i, int wide) {
  return wide ? (int)((const long long *)p)[i] : ((const int *)p)[i];
}

static __device__ __forceinline__ void xr_moe_store_index(void *p, long long i, int wide, int v) {
  if (wide) ((long long *)p)[i] = v;
  else ((int *)p)[i] = v;
}

// v as the activation dtype stores it.
template <class IO>
static __device__ __forceinline__ float xr_moe_round(float v) {
  typename IO::storage bits;
  IO::store(&bits, 0, v);
  return IO::load(&bits, 0);
}

// n / d for 0 <= n < 2^31 (moe_args.h).
static __device__ __forceinline__ long long xr_moe_div(long long n, xr_moe_divisor_t d) {
  const unsigned int u = (unsigned int)n;
  const unsigned int t = (unsigned int)(((unsigned long long)u * d.mul) >> 32);
  return (long long)((t + u) >> d.shift);
}

// The value of fp8 code c of dtype `dtype` (XR_GPU_F8*), by dtype_io.h's decoders.
static __device__ __forceinline__ float xr_moe_fp8_value(unsigned char c, int dtype) {
  if (dtype == XR_GPU_F8E4M3FNUZ) return xr_io_f8e4m3fnuz::load(&c, 0);
  if (dtype == XR_GPU_F8E5M2) return xr_io_f8e5m2::load(&c, 0);
  if (dtype == XR_GPU_F8E5M2FNUZ) return xr_io_f8e5m2fnuz::load(&c, 0);
  return xr_io_f8e4m3fn::load(&c, 0);
}

// fp8 weights: table[c] = the value of code c, filled by the block's threads (read after the
// next __syncthreads); nothing for the other formats.
template <int FORMAT>
static __device__ __forceinline__ void xr_moe_fp8_table(float *table,
                                                        const xr_moe_args_t &p) {
  if (FORMAT == XR_MOE_FP8) {
    for (int c = threadIdx.y * XR_MOE_THREADS_X + threadIdx.x; c < 256;
         c += XR_MOE_THREADS_X * XR_MOE_THREADS_Y)
      table[c] = xr_moe_fp8_value((unsigned char)c, p.w_fp8_dtype);
  }
}

// The row of a weight's scales: the weight's own row (mxfp4), or its block of bn rows (fp8;
// one scale per expert has no row stride).
template <int FORMAT>
static __device__ __forceinline__ long long xr_moe_scale_row(long long row,
                                                            const xr_moe_args_t &p) {
  return FORMAT == XR_MOE_FP8 ? xr_moe_div(row, p.scale_rows) : row;
}

// Weight k of an expert's row, as fp32: plain, the activations' storage at w[at + k * ks];
// mxfp4, nibble k % 2 (the lower k in the low nibble) of byte w[at + (k / 2) * ks] times the
// e8m0 scale scales[scale_at + (k / 32) * scale_ks]; fp8, table[w[at + k * ks]] times the
// float32 scale scales[scale_at + (k / bk) * scale_ks]. at and scale_at address the row's
// element 0 and its scales' row (xr_moe_scale_row).
template <class IO, int FORMAT>
static __device__ __forceinline__ float xr_moe_weight(const void *w, const unsigned char *scales,
                                                      const float *table, long long at,
                                                      long long ks, long long scale_at,
                                                      long long scale_ks, long long k,
                                                      const xr_moe_args_t &p) {
  if (FORMAT == XR_MOE_PLAIN) return IO::load((const typename IO::storage *)w, at + k * ks);
  if (FORMAT == XR_MOE_FP8) {
    return table[((const unsigned char *)w)[at + k * ks]] *
           ((const float *)scales)[scale_at + xr_moe_div(k, p.scale_cols) * scale_ks];
  }
  const unsigned int pair = ((const unsigned char *)w)[at + (k >> 1) * ks];
  return xr_e2m1_to_f32(k & 1 ? pair >> 4 : pair) *
         xr_e8m0_to_f32(scales[scale_at + (k >> 5) * scale_ks]);
}

// GEMM-1's activation of its (rounded) gate and up outputs: silu(g) * u, or swigluoai:
// g = min(g, limit), u = clamp(u, -limit, limit), g * sigmoid(alpha * g) * (u + 1).
static __device__ __forceinline__ float xr_moe_activate(float g, float u,
                                                        const xr_moe_args_t &p) {
  if (p.act == 0) return g / (1.0f + expf(-g)) * u;
  g = fminf(g, p.swiglu_limit);
  u = fminf(fmaxf(u, -p.swiglu_limit), p.swiglu_limit);
  return g / (1.0f + expf(-p.swiglu_alpha * g)) * (u + 1.0f);
}

// The expert of flat routing entry i (token i / topk, slot i % topk).
static __device__ __forceinline__ int xr_moe_routed(const void *ids, const xr_moe_args_t &p,
                                                    long long i) {
  return xr_moe_load_index(ids, p.ids.offset + (i / p.topk) * p.ids.s0 + (i % p.topk) * p.ids.s1,
                           p.ids_wide);
}

static __device__ __forceinline__ int xr_moe_ck_id(long long token, long long slot) {
  return (int)(((unsigned int)token & 0xffffffu) | ((unsigned int)slot << 24));
}

// ---- sorting ---------------------------------------------------------------------------------

// counts[c * E + e] = entries of chunk c routed to expert e.
extern "C" __global__ void __launch_bounds__(XR_MOE_THREADS)
    xr_moe_count(const void *ids, int *counts, xr_moe_args_t p) {
  const long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= p.nchunks) return;
  int *mine = counts + c * p.E;
  for (long long e = 0; e < p.E; e++) mine[e] = 0;
  const long long end = xr_moe_min(p.numel, (c + 1) * p.chunk);
  for (long long i = c * p.chunk; i < end; i++) {
    const int e = xr_moe_routed(ids, p, i);
    if (e >= 0 && e < p.E) mine[e]++;
  }
}

// One block. counts become each chunk's offset inside its expert's segment; starts[e] is the
// segment's first position (starts[E] the padded total, starts[E + 1 + e] expert e's count).
// CK: every expert gets at least one block, padding is M | topk << 24 with weight 0; vLLM:
// padding is numel. Global memory written before __syncthreads is visible to the whole block
// after it.
extern "C" __global__ void __launch_bounds__(XR_MOE_THREADS)
    xr_moe_scan(int *counts, int *starts, int *sorted, float *sorted_w, int *expert_ids,
                int *num_valid, xr_moe_args_t p) {
  const long long E = p.E;
  for (long long e = threadIdx.x; e < E; e += blockDim.x) {
    int running = 0;
    for (long long c = 0; c < p.nchunks; c++) {
      const int t = counts[c * E + e];
      counts[c * E + e] = running;
      running += t;
    }
    starts[E + 1 + e] = running;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    long long pos = 0;
    for (long long e = 0; e < E; e++) {
      starts[e] = (int)pos;
      long long blocks = (starts[E + 1 + e] + p.block - 1) / p.block;
      if (p.ck && blocks == 0) blocks = 1;
      pos += blocks * p.block;
    }
    starts[E] = (int)pos;
    num_valid[p.num_valid_off] = (int)pos;
    if (p.ck && p.num_valid_len > 1) num_valid[p.num_valid_off + 1] = (int)p.M;
  }
  const int pad = p.ck ? xr_moe_ck_id(p.M, p.topk) : (int)p.numel;
  for (long long i = threadIdx.x; i < p.sorted_len; i += blockDim.x) {
    sorted[p.sorted_off + i] = pad;
    if (p.ck) sorted_w[p.sorted_w_off + i] = 0.0f;
  }
  for (long long b = threadIdx.x; b < p.blocks_len; b += blockDim.x) {
    expert_ids[p.expert_ids_off + b] = 0;
  }
  __syncthreads();
  for (long long e = threadIdx.x; e < E; e += blockDim.x) {
    for (long long b = starts[e] / p.block; b < starts[e + 1] / p.block && b < p.blocks_len; b++) {
      expert_ids[p.expert_ids_off + b] = (int)e;
    }
  }
}

// Writes chunk c's ids in order after the earlier chunks' (CK: with their routing weights).
extern "C" __global__ void __launch_bounds__(XR_MOE_THREADS)
    xr_moe_scatter(const void *ids, const void *weights, int *counts, const int *starts,
                   int *sorted, float *sorted_w, xr_moe_args_t p) {
  const long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= p.nchunks) return;
  int *next = counts + c * p.E;
  const long long end = xr_moe_min(p.numel, (c + 1) * p.chunk);
  for (long long i = c * p.chunk; i < end; i++) {
    const int e = xr_moe_routed(ids, p, i);
    if (e < 0 || e >= p.E) continue;
    const long long pos = (long long)starts[e] + next[e]++;
    if (pos >= p.sorted_len) continue;
    const long long token = i / p.topk, slot = i % p.topk;
    sorted[p.sorted_off + pos] = p.ck ? xr_moe_ck_id(token, slot) : (int)i;
    if (p.ck) {
      sorted_w[p.sorted_w_off + pos] = xr_moe_load(
          weights, p.weights.offset + token * p.weights.s0 + slot * p.weights.s1, p.weights_dtype);
    }
  }
}

// ---- grouped GEMMs over the sorted rows ------------------------------------------------------

// Sorted id -> (token, slot); false for padding.
static __device__ __forceinline__ bool xr_moe_decode(int id, const xr_moe_args_t &p,
                                                     int *token, int *slot) {
  if (p.ck) {
    *token = (int)((unsigned int)id & 0xffffffu);
    *slot = (int)((unsigned int)id >> 24);
    return *token < p.M && *slot < p.topk;
  }
  if (id < 0 || id >= p.numel) return false;
  *token = (int)(id / p.topk);
  *slot = (int)(id % p.topk);
  return true;
}

// Sorted rows the GEMMs read: whole blocks of the first num_valid[0] positions.
static __device__ __forceinline__ long long xr_moe_rows(const int *num_valid,
                                                        const xr_moe_args_t &p) {
  const long long blocks = xr_moe_min(num_valid[p.num_valid_off] / p.block, p.blocks_len);
  return xr_moe_min(blocks * p.block, p.sorted_len);
}

// The tile's rows: token (-1 for padding or rows past the sorted list) and slot per row.
template <int BM>
static __device__ __forceinline__ void xr_moe_tile_rows(const int *sorted, long long row0,
                                                        long long rows,
                                                        const xr_moe_args_t &p,
                                                        int *row_token, int *row_slot) {
  const int thread = threadIdx.y * XR_MOE_THREADS_X + threadIdx.x;
  for (int r = thread; r < BM; r += XR_MOE_THREADS_X * XR_MOE_THREADS_Y) {
    const long long pos = row0 + r;
    int token = 0, slot = 0;
    const bool valid = pos < rows && xr_moe_decode(sorted[p.sorted_off + pos], p, &token, &slot);
    row_token[r] = valid ? token : -1;
    row_slot[r] = slot;
  }
}

// GEMM-1 + activation: for each sorted row (token, slot) of expert e and column n < N,
// g = x[token] . w1[e, gate row] + b1[e, gate row], u likewise with the up row (gate row
// n * gate_step, up row up_row0 + n * gate_step: silu's [0, N) and [N, 2N), swigluoai's
// interleaved pairs), both rounded, then act(g, u); stored in the scratch h[pos, n]
// (out_mode 0) or out[token, slot, n] (out_mode 1, CK stage 1).
template <class IO, int FORMAT, int RM>
static __device__ void xr_moe_gemm1(const int *sorted, const int *expert_ids, const int *num_valid,
                                    const float *sorted_w, const typename IO::storage *x,
                                    const void *w1, const unsigned char *w1_scale,
                                    const void *w1_bias, const void *weights,
                                    typename IO::storage *h, typename IO::storage *out,
                                    const xr_moe_args_t &p) {
  enum { BM = RM * XR_MOE_THREADS_Y, BN = XR_MOE_TILE_N, BK = XR_MOE_TILE_K };
  // +1: the k-major stores of a column do not all fall in one bank.
  __shared__ float a_tile[BK][BM + 1];
  __shared__ float g_tile[BK][BN + 1];
  __shared__ float u_tile[BK][BN + 1];
  __shared__ float fp8_table[FORMAT == XR_MOE_FP8 ? 256 : 1];
  __shared__ int row_token[BM], row_slot[BM];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int thread = ty * XR_MOE_THREADS_X + tx;
  const int threads = XR_MOE_THREADS_X * XR_MOE_THREADS_Y;
  const long long n0 = (long long)blockIdx.x * BN;
  const long long rows = xr_moe_rows(num_valid, p);
  const bool w_k_fast = p.w1.s2 == 1 && p.w1.s1 != 1;
  xr_moe_fp8_table<FORMAT>(fp8_table, p);

  for (long long tile = blockIdx.y; tile < p.tiles; tile += gridDim.y) {
    const long long row0 = tile * BM;
    if (row0 >= rows) break;  // later tiles start further on
    const int e = expert_ids[p.expert_ids_off + row0 / p.block];
    if (e < 0 || e >= p.E) continue;
    __syncthreads();  // the previous tile is done with the shared arrays
    xr_moe_tile_rows<BM>(sorted, row0, rows, p, row_token, row_slot);
    __syncthreads();
    const long long w_base = p.w1.offset + e * p.w1.s0;
    const long long s_base = p.w1_scale.offset + e * p.w1_scale.s0;
    float acc_g[RM][4], acc_u[RM][4];
    #pragma unroll
    for (int i = 0; i < RM; i++)
      #pragma unroll
      for (int j = 0; j < 4; j++) acc_g[i][j] = acc_u[i][j] = 0.0f;

    for (long long k0 = 0; k0 < p.K; k0 += BK) {
      for (int i = thread; i < BM * BK; i += threads) {
        const int kk = i % BK, mm = i / BK;
        const long long k = k0 + kk;
        const int token = row_token[mm];
        a_tile[kk][mm] = token >= 0 && k < p.K
                             ? IO::load(x, p.x.offset + token * p.x.s0 + k * p.x.s1)
                             : 0.0f;
      }
      for (int i = thread; i < BN * BK; i += threads) {
        const int nn = w_k_fast ? i / BK : i % BN;
        const int kk = w_k_fast ? i % BK : i / BN;
        const long long n = n0 + nn, k = k0 + kk;
        const bool inside = n < p.N && k < p.K;
        const long long gate = n * p.gate_step, up = p.up_row0 + gate;
        g_tile[kk][nn] =
            inside ? xr_moe_weight<IO, FORMAT>(
                         w1, w1_scale, fp8_table, w_base + gate * p.w1.s1, p.w1.s2,
                         s_base + xr_moe_scale_row<FORMAT>(gate, p) * p.w1_scale.s1,
                         p.w1_scale.s2, k, p)
                   : 0.0f;
        u_tile[kk][nn] =
            inside ? xr_moe_weight<IO, FORMAT>(
                         w1, w1_scale, fp8_table, w_base + up * p.w1.s1, p.w1.s2,
                         s_base + xr_moe_scale_row<FORMAT>(up, p) * p.w1_scale.s1,
                         p.w1_scale.s2, k, p)
                   : 0.0f;
      }
      __syncthreads();
      #pragma unroll
      for (int kk = 0; kk < BK; kk++) {
        float a_values[RM], g_values[4], u_values[4];
        #pragma unroll
        for (int i = 0; i < RM; i++) a_values[i] = a_tile[kk][ty + i * XR_MOE_THREADS_Y];
        #pragma unroll
        for (int j = 0; j < 4; j++) {
          g_values[j] = g_tile[kk][tx + j * XR_MOE_THREADS_X];
          u_values[j] = u_tile[kk][tx + j * XR_MOE_THREADS_X];
        }
        #pragma unroll
        for (int i = 0; i < RM; i++)
          #pragma unroll
          for (int j = 0; j < 4; j++) {
            acc_g[i][j] = fmaf(a_values[i], g_values[j], acc_g[i][j]);
            acc_u[i][j] = fmaf(a_values[i], u_values[j], acc_u[i][j]);
          }
      }
      __syncthreads();
    }

    #pragma unroll
    for (int i = 0; i < RM; i++) {
      const int r = ty + i * XR_MOE_THREADS_Y;
      const int token = row_token[r], slot = row_slot[r];
      if (token < 0) continue;
      const long long pos = row0 + r;
      float scale = 1.0f;
      if (p.scale_mode == 1) {
        scale = xr_moe_load(weights, p.weights.offset + token * p.weights.s0 + slot * p.weights.s1,
                            p.weights_dtype);
      }
      #pragma unroll
      for (int j = 0; j < 4; j++) {
        const long long n = n0 + tx + j * XR_MOE_THREADS_X;
        if (n >= p.N) continue;
        float g = acc_g[i][j], u = acc_u[i][j];
        if (p.scale_mode == 1) {
          g *= scale;
          u *= scale;
        }
        if (p.w1_bias_dtype >= 0) {
          const long long at =
              p.w1_bias.offset + e * p.w1_bias.s0 + n * p.gate_step * p.w1_bias.s1;
          g += xr_moe_load(w1_bias, at, p.w1_bias_dtype);
          u += xr_moe_load(w1_bias, at + p.up_row0 * p.w1_bias.s1, p.w1_bias_dtype);
        }
        g = xr_moe_round<IO>(g);
        u = xr_moe_round<IO>(u);
        float act = xr_moe_activate(g, u, p);
        if (p.scale_mode == 2) act *= sorted_w[p.sorted_w_off + pos];
        if (p.out_mode == 0) {
          IO::store(h, pos * p.N + n, act);
        } else {
          IO::store(out, p.out.offset + token * p.out.s0 + slot * p.out.s1 + n * p.out.s2, act);
        }
      }
    }
  }
}

// GEMM-2: for each sorted row (token, slot) of expert e and column k < K,
// y = a . w2[e, k] + b2[e, k] with a = h[pos] (a_mode 0) or x[token, slot] (a_mode 1), scaled
// per scale_mode, stored rounded in y[(token * topk + slot) * K + k];
// mask[token * topk + slot] = 1 marks the rows written.
template <class IO, int FORMAT, int RM>
static __device__ void xr_moe_gemm2(const int *sorted, const int *expert_ids, const int *num_valid,
                                    const float *sorted_w, const typename IO::storage *h,
                                    const typename IO::storage *x, const void *w2,
                                    const unsigned char *w2_scale, const void *w2_bias,
                                    const void *weights, typename IO::storage *y, int *mask,
                                    const xr_moe_args_t &p) {
  enum { BM = RM * XR_MOE_THREADS_Y, BN = XR_MOE_TILE_N, BK = XR_MOE_TILE_K };
  __shared__ float a_tile[BK][BM + 1];
  __shared__ float w_tile[BK][BN + 1];
  __shared__ float fp8_table[FORMAT == XR_MOE_FP8 ? 256 : 1];
  __shared__ int row_token[BM], row_slot[BM];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int thread = ty * XR_MOE_THREADS_X + tx;
  const int threads = XR_MOE_THREADS_X * XR_MOE_THREADS_Y;
  const long long k0 = (long long)blockIdx.x * BN;
  const long long rows = xr_moe_rows(num_valid, p);
  const bool w_n_fast = p.w2.s2 == 1 && p.w2.s1 != 1;
  xr_moe_fp8_table<FORMAT>(fp8_table, p);

  for (long long tile = blockIdx.y; tile < p.tiles; tile += gridDim.y) {
    const long long row0 = tile * BM;
    if (row0 >= rows) break;
    const int e = expert_ids[p.expert_ids_off + row0 / p.block];
    if (e < 0 || e >= p.E) continue;
    __syncthreads();
    xr_moe_tile_rows<BM>(sorted, row0, rows, p, row_token, row_slot);
    __syncthreads();
    const long long w_base = p.w2.offset + e * p.w2.s0;
    const long long s_base = p.w2_scale.offset + e * p.w2_scale.s0;
    float acc[RM][4];
    #pragma unroll
    for (int i = 0; i < RM; i++)
      #pragma unroll
      for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;

    for (long long n0 = 0; n0 < p.N; n0 += BK) {
      for (int i = thread; i < BM * BK; i += threads) {
        const int nn = i % BK, mm = i / BK;
        const long long n = n0 + nn;
        const int token = row_token[mm];
        float a = 0.0f;
        if (token >= 0 && n < p.N) {
          a = p.a_mode == 0
                  ? IO::load(h, (row0 + mm) * p.N + n)
                  : IO::load(x, p.x.offset + token * p.x.s0 + row_slot[mm] * p.x.s1 + n * p.x.s2);
        }
        a_tile[nn][mm] = a;
      }
      for (int i = thread; i < BN * BK; i += threads) {
        const int kk = w_n_fast ? i / BK : i % BN;
        const int nn = w_n_fast ? i % BK : i / BN;
        const long long k = k0 + kk, n = n0 + nn;
        w_tile[nn][kk] =
            k < p.K && n < p.N
                ? xr_moe_weight<IO, FORMAT>(
                      w2, w2_scale, fp8_table, w_base + k * p.w2.s1, p.w2.s2,
                      s_base + xr_moe_scale_row<FORMAT>(k, p) * p.w2_scale.s1, p.w2_scale.s2, n, p)
                : 0.0f;
      }
      __syncthreads();
      #pragma unroll
      for (int nn = 0; nn < BK; nn++) {
        float a_values[RM], w_values[4];
        #pragma unroll
        for (int i = 0; i < RM; i++) a_values[i] = a_tile[nn][ty + i * XR_MOE_THREADS_Y];
        #pragma unroll
        for (int j = 0; j < 4; j++) w_values[j] = w_tile[nn][tx + j * XR_MOE_THREADS_X];
        #pragma unroll
        for (int i = 0; i < RM; i++)
          #pragma unroll
          for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a_values[i], w_values[j], acc[i][j]);
      }
      __syncthreads();
    }

    #pragma unroll
    for (int i = 0; i < RM; i++) {
      const int r = ty + i * XR_MOE_THREADS_Y;
      const int token = row_token[r], slot = row_slot[r];
      if (token < 0) continue;
      const long long pos = row0 + r, pair = (long long)token * p.topk + slot;
      float scale = 1.0f;
      if (p.scale_mode == 2) scale = sorted_w[p.sorted_w_off + pos];
      if (p.scale_mode == 3) {
        scale = xr_moe_load(weights, p.weights.offset + token * p.weights.s0 + slot * p.weights.s1,
                            p.weights_dtype);
      }
      #pragma unroll
      for (int j = 0; j < 4; j++) {
        const long long k = k0 + tx + j * XR_MOE_THREADS_X;
        if (k >= p.K) continue;
        const float bias =
            p.w2_bias_dtype >= 0
                ? xr_moe_load(w2_bias, p.w2_bias.offset + e * p.w2_bias.s0 + k * p.w2_bias.s1,
                              p.w2_bias_dtype)
                : 0.0f;
        IO::store(y, pair * p.K + k, (acc[i][j] + bias) * scale);
      }
      if (blockIdx.x == 0 && tx == 0) mask[pair] = 1;
    }
  }
}

// out[m, k] = (accumulate ? out[m, k] : 0) + the token's written rows of y, rounded once.
template <class IO>
static __device__ void xr_moe_reduce(const typename IO::storage *y, const int *mask,
                                     typename IO::storage *out, const xr_moe_args_t &p) {
  const long long total = p.M * p.K;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long m = i / p.K, k = i % p.K;
    const long long at = p.out.offset + m * p.out.s0 + k * p.out.s1;
    float acc = p.accumulate ? IO::load(out, at) : 0.0f;
    for (long long j = 0; j < p.topk; j++) {
      if (mask[m * p.topk + j]) acc += IO::load(y, (m * p.topk + j) * p.K + k);
    }
    IO::store(out, at, acc);
  }
}

// The grouped GEMMs of one activation dtype, weight format (FORMAT; name: "" plain, "_mxfp4",
// "_fp8") and tile height (RM rows per thread).
#define XR_MOE_GEMM_KERNELS(suffix, IO, FORMAT, format, RM)                                        \
  extern "C" __global__ void __launch_bounds__(XR_MOE_THREADS_X * XR_MOE_THREADS_Y)                \
      xr_moe_gemm1_##suffix##format##_m##RM(const int *sorted, const int *expert_ids,              \
                                            const int *num_valid, const float *sorted_w,           \
                                            const IO::storage *x, const void *w1,                  \
                                            const unsigned char *w1_scale, const void *w1_bias,    \
                                            const void *weights, IO::storage *h, IO::storage *out, \
                                            xr_moe_args_t p) {                               \
    xr_moe_gemm1<IO, FORMAT, RM>(sorted, expert_ids, num_valid, sorted_w, x, w1, w1_scale,         \
                                 w1_bias, weights, h, out, p);                                     \
  }                                                                                                \
  extern "C" __global__ void __launch_bounds__(XR_MOE_THREADS_X * XR_MOE_THREADS_Y)                \
      xr_moe_gemm2_##suffix##format##_m##RM(const int *sorted, const int *expert_ids,              \
                                            const int *num_valid, const float *sorted_w,           \
                                            const IO::storage *h, const IO::storage *x,            \
                                            const void *w2, const unsigned char *w2_scale,         \
                                            const void *w2_bias, const void *weights,              \
                                            IO::storage *y, int *mask, xr_moe_args_t p) {    \
    xr_moe_gemm2<IO, FORMAT, RM>(sorted, expert_ids, num_valid, sorted_w, h, x, w2, w2_scale,      \
                                 w2_bias, weights, y, mask, p);                                    \
  }

// Rows per thread 1, 2, 4: tiles of 16, 32, 64 sorted rows (suffix _m1, _m2, _m4), plain,
// mxfp4 and fp8 weights.
#define XR_MOE_KERNELS(suffix, IO)                                                         \
  XR_MOE_GEMM_KERNELS(suffix, IO, XR_MOE_PLAIN, , 1)                                       \
  XR_MOE_GEMM_KERNELS(suffix, IO, XR_MOE_PLAIN, , 2)                                       \
  XR_MOE_GEMM_KERNELS(suffix, IO, XR_MOE_PLAIN, , 4)                                       \
  XR_MOE_GEMM_KERNELS(suffix, IO, XR_MOE_MXFP4, _mxfp4, 1)                                 \
  XR_MOE_GEMM_KERNELS(suffix, IO, XR_MOE_MXFP4, _mxfp4, 2)                                 \
  XR_MOE_GEMM_KERNELS(suffix, IO, XR_MOE_MXFP4, _mxfp4, 4)                                 \
  XR_MOE_GEMM_KERNELS(suffix, IO, XR_MOE_FP8, _fp8, 1)                                     \
  XR_MOE_GEMM_KERNELS(suffix, IO, XR_MOE_FP8, _fp8, 2)                                     \
  XR_MOE_GEMM_KERNELS(suffix, IO, XR_MOE_FP8, _fp8, 4)                                     \
  extern "C" __global__ void __launch_bounds__(XR_MOE_THREADS)                             \
      xr_moe_reduce_##suffix(const IO::storage *y, const int *mask, IO::storage *out,       \
                             xr_moe_args_t p) {                                      \
    xr_moe_reduce<IO>(y, mask, out, p);                                                    \
  }

XR_MOE_KERNELS(f32, xr_io_f32)
XR_MOE_KERNELS(f16, xr_io_f16)
XR_MOE_KERNELS(bf16, xr_io_bf16)

// ---- router ----------------------------------------------------------------------------------

// One thread per token: softmax of the token's logits (fp32), the top-k picked by logit (ties:
// the lower expert), renormalised when asked; ids (int32 or int64), weights (weights_dtype) and,
// when has_tei, token_expert_indices[m, j] = j * M + m.
extern "C" __global__ void __launch_bounds__(XR_MOE_THREADS)
    xr_moe_topk_softmax(const void *logits, void *weights, void *ids, void *tei,
                        xr_moe_args_t p) {
  const long long m = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= p.M) return;
  const long long row = p.logits.offset + m * p.logits.s0;
  const long long id_row = p.ids.offset + m * p.ids.s0;
  float mx = __int_as_float(0xff800000), sum = 0.0f, picked = 0.0f;
  for (long long e = 0; e < p.E; e++) {
    mx = fmaxf(mx, xr_moe_load(logits, row + e * p.logits.s1, p.logits_dtype));
  }
  for (long long e = 0; e < p.E; e++) {
    sum += expf(xr_moe_load(logits, row + e * p.logits.s1, p.logits_dtype) - mx);
  }
  for (long long j = 0; j < p.topk; j++) {
    int best = -1;
    float best_value = 0.0f;
    for (int e = 0; e < p.E; e++) {
      bool taken = false;
      for (long long q = 0; q < j; q++) {
        taken |= xr_moe_load_index(ids, id_row + q * p.ids.s1, p.ids_wide) == e;
      }
      const float v = xr_moe_load(logits, row + e * p.logits.s1, p.logits_dtype);
      if (!taken && (best < 0 || v > best_value)) {
        best = e;
        best_value = v;
      }
    }
    picked += expf(best_value - mx) / sum;
    xr_moe_store_index(ids, id_row + j * p.ids.s1, p.ids_wide, best);
    if (p.has_tei) {
      xr_moe_store_index(tei, p.tei.offset + m * p.tei.s0 + j * p.tei.s1, p.tei_wide,
                         (int)(j * p.M + m));
    }
  }
  const float scale = p.renormalize ? 1.0f / picked : 1.0f;
  for (long long j = 0; j < p.topk; j++) {
    const int e = xr_moe_load_index(ids, id_row + j * p.ids.s1, p.ids_wide);
    xr_moe_store(weights, p.weights.offset + m * p.weights.s0 + j * p.weights.s1,
                 p.weights_dtype,
                 expf(xr_moe_load(logits, row + e * p.logits.s1, p.logits_dtype) - mx) / sum *
                     scale);
  }
}
