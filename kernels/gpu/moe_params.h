/* The mixture-of-experts family's problem as the GPU kernels (kernels/gpu/moe.cu) receive it:
 * one by-value argument per launch, shared by the host (C, kernels/gpu/moe_gpu.c) and the device
 * (CUDA/HIP C++), so only long long, float and (unsigned) int appear. Offsets and strides count
 * elements of the tensor they describe. The host also finds here how it computes a divisor. */
#ifndef XR_KERNELS_GPU_MOE_PARAMS_H
#define XR_KERNELS_GPU_MOE_PARAMS_H

/* Run-time dtype codes of the secondary float tensors (routing weights, logits, biases). */
#define XR_MOE_GPU_F32 0
#define XR_MOE_GPU_F16 1
#define XR_MOE_GPU_BF16 2

/* A view of up to three dimensions: element (a, b, c) is offset + a * s0 + b * s1 + c * s2. */
typedef struct xr_moe_gpu_view {
  long long offset, s0, s1, s2;
} xr_moe_gpu_view_t;

/* A divisor d fixed for a launch: for 0 <= n < 2^31, n / d == (umulhi(n, mul) + n) >> shift,
 * where shift = ceil(log2 d) and mul = floor(2^32 (2^shift - d) / d) + 1 (Granlund and
 * Montgomery's round-up multiplier; d = 1 is mul 1, shift 0). */
typedef struct xr_moe_gpu_divisor {
  unsigned int mul;
  int shift;
} xr_moe_gpu_divisor_t;

#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
/* d >= 1 as the kernels divide by it (host code: moe_gpu.c, the emulated tests). A d above 2^31
 * divides every dividend below 2^31 as 2^31 does, to 0. */
static inline xr_moe_gpu_divisor_t xr_moe_gpu_divisor(long long d) {
  const long long top = 1LL << 31;
  if (d > top) d = top;
  int shift = 0;
  while ((1LL << shift) < d) shift++;
  const unsigned long long mul =
      ((1ULL << shift) - (unsigned long long)d) * (1ULL << 32) / (unsigned long long)d + 1;
  xr_moe_gpu_divisor_t v;
  v.mul = (unsigned int)mul;
  v.shift = shift;
  return v;
}
#endif

typedef struct xr_moe_gpu_params {
  long long M, K, N, E, topk;
  long long numel;        /* M * topk routing entries */
  long long chunk;        /* routing entries per counting thread of the sort */
  long long nchunks;
  long long block;        /* rows per sorted block: vLLM block_size, CK unit_size / block_m */
  long long sorted_len;   /* elements of the sorted ids */
  long long blocks_len;   /* elements of the per-block expert ids */
  long long tiles;        /* row tiles of the grouped GEMMs: sorted_len / tile rows, rounded up */
  long long sorted_off, sorted_w_off, expert_ids_off, num_valid_off, num_valid_len;
  xr_moe_gpu_view_t ids;     /* expert ids [M, topk] (int32 or int64) */
  xr_moe_gpu_view_t weights; /* routing weights [M, topk] (weights_dtype) */
  xr_moe_gpu_view_t x;       /* GEMM-1 input [M, K], or GEMM-2 input [M, topk, N] (a_mode 1) */
  xr_moe_gpu_view_t w1, w2;  /* [E, 2N, K], [E, K, N] */
  xr_moe_gpu_view_t out;     /* [M, K], or [M, topk, N] for GEMM-1's out_mode 1 */
  xr_moe_gpu_view_t logits;  /* router logits [M, E] (logits_dtype) */
  xr_moe_gpu_view_t tei;     /* token_expert_indices [M, topk] */
  /* moe_forward's layer. mxfp4 weights (the _mxfp4 GEMM kernels): w1 and w2 above are e2m1
   * pairs [E, 2N, K / 2], [E, K, N / 2] with these e8m0 scales [E, 2N, K / 32], [E, K, N / 32].
   * fp8 weights (the _fp8 kernels): w1 and w2 hold codes of dtype w_fp8_dtype (an XR_GPU_*
   * fp8 code) and these float32 scales, per [bn, bk] block ([E, ceil(2N / bn), ceil(K / bk)],
   * [E, ceil(K / bn), ceil(N / bk)]) or per expert ([E]: no row or column stride); weight
   * (e, r, c) is its code's value times scale[e, r / bn, c / bk], the divisions by scale_rows
   * (bn) and scale_cols (bk; both 1 per expert). */
  xr_moe_gpu_view_t w1_scale, w2_scale;
  xr_moe_gpu_divisor_t scale_rows, scale_cols;
  xr_moe_gpu_view_t w1_bias, w2_bias; /* [E, 2N], [E, K] (offset, s0, s1) */
  long long gate_step, up_row0; /* gate n is w1's row n * gate_step, up n row up_row0 + that */
  int ck;            /* CK sorting (ids token | slot << 24, every expert a block) vs vLLM's */
  int ids_wide;      /* expert ids are int64 */
  int weights_dtype; /* XR_MOE_GPU_* */
  int logits_dtype;
  int has_tei, tei_wide;
  int renormalize;
  /* scale_mode: 0 none; 1 weights[token, slot] on the GEMM-1 accumulators (weight on the
   * input); 2 sorted_w[pos] after the activation (CK stage 1) or on GEMM-2 (stage 2);
   * 3 weights[token, slot] on GEMM-2 (vLLM). */
  int scale_mode;
  int a_mode;     /* GEMM-2's input: 0 the GEMM-1 scratch h, 1 x[token, slot, :] */
  int out_mode;   /* GEMM-1's output: 0 the scratch h[pos, n], 1 out[token, slot, n] */
  int accumulate; /* the reduction adds to out (CK stage 2) instead of overwriting it */
  int w1_bias_dtype, w2_bias_dtype; /* XR_MOE_GPU_*, or -1: no bias */
  int act;                          /* 0 silu_and_mul, 1 swigluoai (GPT-OSS) */
  float swiglu_alpha, swiglu_limit;
  int w_fp8_dtype; /* fp8 weights: their dtype (XR_GPU_F8*) */
} xr_moe_gpu_params_t;

/* Grouped GEMM tiles: (16 * rows per thread) sorted rows x 64 columns per block of 16 x 16
 * threads, 4 columns per thread, stepping the reduction by 16 through shared memory. A tile
 * holds rows of one expert only: its row count divides the sorted block size. */
#define XR_MOE_TILE_N 64
#define XR_MOE_TILE_K 16
#define XR_MOE_THREADS_X 16
#define XR_MOE_THREADS_Y 16
/* Threads per block of the one-dimensional kernels (sort, router, reduction). */
#define XR_MOE_THREADS 256

#endif
