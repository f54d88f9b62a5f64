/* The mixture-of-experts family's device argument block (kernels/moe.h's problem), by value to
 * every kernel of kernels/opencl/moe.cl and kernels/gpu/moe.cu after its buffers, filled by
 * kernels/moe_device.c. Shared by host C, OpenCL C and CUDA/HIP C++: `long`, `float` and
 * (unsigned) int fields only. Offsets and strides count elements of the tensor they describe.
 * The host also finds here how it computes a divisor. */
#ifndef XR_KERNELS_MOE_ARGS_H
#define XR_KERNELS_MOE_ARGS_H

/* Run-time dtype codes of the float tensors (activations, routing weights, logits, biases). */
#define XR_MOE_F32 0
#define XR_MOE_F16 1
#define XR_MOE_BF16 2

/* Expert weight formats: in the activations' dtype, mxfp4 (e2m1 pairs, e8m0 scales per 32),
 * fp8 (float32 scales per block or per expert). */
#define XR_MOE_W_FORMAT_PLAIN 0
#define XR_MOE_W_FORMAT_MXFP4 1
#define XR_MOE_W_FORMAT_FP8 2

/* A view of up to three dimensions: element (a, b, c) is offset + a * s0 + b * s1 + c * s2. */
typedef struct xr_moe_view {
  long offset, s0, s1, s2;
} xr_moe_view_t;

/* A divisor d fixed for a launch: for 0 <= n < 2^31, n / d == (umulhi(n, mul) + n) >> shift,
 * where shift = ceil(log2 d) and mul = floor(2^32 (2^shift - d) / d) + 1 (Granlund and
 * Montgomery's round-up multiplier; d = 1 is mul 1, shift 0). */
typedef struct xr_moe_divisor {
  unsigned int mul;
  int shift;
} xr_moe_divisor_t;

#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__) && !defined(__OPENCL_VERSION__)
/* d >= 1 as the CUDA/HIP kernels divide by it (host code: moe_device.c, the emulated tests). A
 * d above 2^31 divides every dividend below 2^31 as 2^31 does, to 0. */
static inline xr_moe_divisor_t xr_moe_divisor(long long d) {
  const long long top = 1LL << 31;
  if (d > top) d = top;
  int shift = 0;
  while ((1LL << shift) < d) shift++;
  const unsigned long long mul =
      ((1ULL << shift) - (unsigned long long)d) * (1ULL << 32) / (unsigned long long)d + 1;
  xr_moe_divisor_t v;
  v.mul = (unsigned int)mul;
  v.shift = shift;
  return v;
}
#endif

typedef struct xr_moe_args {
  long M, K, N, E, topk;
  long numel;        /* M * topk routing entries */
  long chunk;        /* routing entries per counting thread of the sort */
  long nchunks;
  long block;        /* rows per sorted block: vLLM block_size, CK unit_size / block_m */
  long sorted_len;   /* elements of the sorted ids */
  long blocks_len;   /* elements of the per-block expert ids */
  long tiles;        /* CUDA's row tiles of the grouped GEMMs: sorted_len / tile rows, rounded up */
  long sorted_off, sorted_w_off, expert_ids_off, num_valid_off, num_valid_len;
  xr_moe_view_t ids;     /* expert ids [M, topk] (int32 or int64) */
  xr_moe_view_t weights; /* routing weights [M, topk] (weights_dtype) */
  xr_moe_view_t x;       /* GEMM-1 input [M, K], or GEMM-2 input [M, topk, N] (a_mode 1) */
  xr_moe_view_t w1, w2;  /* [E, 2N, K], [E, K, N] */
  xr_moe_view_t out;     /* [M, K], or [M, topk, N] for GEMM-1's out_mode 1 */
  xr_moe_view_t logits;  /* router logits [M, E] (logits_dtype) */
  xr_moe_view_t tei;     /* token_expert_indices [M, topk] */
  /* moe_forward's layer (w_format; CUDA's GEMM kernels are named by it: _mxfp4, _fp8). mxfp4
   * weights: w1 and w2 above are e2m1 pairs [E, 2N, K / 2], [E, K, N / 2] with these e8m0
   * scales [E, 2N, K / 32], [E, K, N / 32]. fp8 weights: w1 and w2 hold codes of dtype
   * w_fp8_dtype (an xr_dtype_t code) and these float32 scales, per [bn, bk] block
   * ([E, ceil(2N / bn), ceil(K / bk)], [E, ceil(K / bn), ceil(N / bk)]) or per expert ([E]: no
   * row or column stride); weight (e, r, c) is its code's value times
   * scale[e, r / bn, c / bk], bn = scale_block_rows and bk = scale_block_cols (both 1 per
   * expert), which CUDA divides by through scale_rows and scale_cols. */
  long w_format; /* XR_MOE_W_FORMAT_* */
  xr_moe_view_t w1_scale, w2_scale;
  long scale_block_rows, scale_block_cols;
  xr_moe_divisor_t scale_rows, scale_cols;
  xr_moe_view_t w1_bias, w2_bias; /* [E, 2N], [E, K] (offset, s0, s1) */
  long gate_step, up_row0; /* gate n is w1's row n * gate_step, up n row up_row0 + that */
  long dtype;              /* the activations' XR_MOE_* (CUDA's kernels are named by it) */
  long ck;                 /* CK sorting (ids token | slot << 24, every expert a block) vs vLLM's */
  long ids_wide;           /* expert ids are int64 */
  long weights_dtype;      /* XR_MOE_* */
  long logits_dtype;
  long has_tei, tei_wide;
  long renormalize;
  /* scale_mode: 0 none; 1 weights[token, slot] on the GEMM-1 accumulators (weight on the
   * input); 2 sorted_w[pos] after the activation (CK stage 1) or on GEMM-2 (stage 2);
   * 3 weights[token, slot] on GEMM-2 (vLLM). */
  long scale_mode;
  long a_mode;     /* GEMM-2's input: 0 the GEMM-1 scratch h, 1 x[token, slot, :] */
  long out_mode;   /* GEMM-1's output: 0 the scratch h[pos, n], 1 out[token, slot, n] */
  long accumulate; /* the reduction adds to out (CK stage 2) instead of overwriting it */
  long w1_bias_dtype, w2_bias_dtype; /* XR_MOE_*, or -1: no bias */
  long act;                          /* 0 silu_and_mul, 1 swigluoai (GPT-OSS) */
  long w_fp8_dtype;                  /* fp8 weights: their xr_dtype_t code */
  float swiglu_alpha, swiglu_limit;
} xr_moe_args_t;

/* CUDA's grouped GEMM tiles: (16 * rows per thread) sorted rows x 64 columns per block of
 * 16 x 16 threads, 4 columns per thread, stepping the reduction by 16 through shared memory.
 * OpenCL's: 16 x 16 per work-group of 16 x 16. A tile holds rows of one expert only: its row
 * count divides the sorted block size. */
#define XR_MOE_TILE_N 64
#define XR_MOE_TILE_K 16
#define XR_MOE_THREADS_X 16
#define XR_MOE_THREADS_Y 16
#define XR_MOE_OPENCL_TILE 16
/* Threads per group of the one-dimensional kernels (sort, router, reduction). */
#define XR_MOE_THREADS 256

#endif
