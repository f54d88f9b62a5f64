// The paged-attention family on CUDA and HIP (kernels/attention_device.c launches these):
// vLLM's paged_attention_v1 / v2 and _rocm_C::paged_attention over the paged KV cache, with the
// attention family's kernel (attention_kernel.h) reading keys and values through the block
// table. Queries and outputs are f32, f16 or bf16; the cache holds the queries' type
// (kv_cache_dtype "auto") or one of the four fp8 formats (decoded through a 256-entry table),
// dequantised with k_scale / v_scale.
// v2 writes each 512-token partition's max_logits, exp_sums and tmp_out, then
// xr_attention_combine_* reduces them into out. xr_attention_any / xr_attention_any_fp8 serve
// vLLM's unified attention with fp8 queries (dequantised by q_scale) or fp8 outputs (scaled by
// 1 / output_scale and clamped).
#include "hip_compat.h"
#include "dtype_io.h"
#include "attention_args.h"
#include "attention_kernel.h"

// Per query type: xr_attention_<q> (cache of the queries' type), xr_attention_<q>_fp8 (any fp8
// cache format) and xr_attention_combine_<q>.
#define XR_PAGED_KERNELS(q, QIO)                                                                       \
  XR_ATTENTION_KERNEL(q, QIO, false)                                                                   \
  XR_ATTENTION_KERNEL(q##_fp8, QIO, true)                                                              \
  extern "C" __global__ void __launch_bounds__(XR_ATTN_COMBINE_THREADS) xr_attention_combine_##q( \
      const void *cu_q, const void *cu_k, const void *lens, const void *indptr, QIO::storage *out,     \
      const float *exp_sums, const float *max_logits, const QIO::storage *tmp_out,                     \
      xr_attn_args_t p) {                                                                        \
    xr_attention_combine<QIO>(cu_q, cu_k, lens, indptr, out, exp_sums, max_logits, tmp_out, p);        \
  }

XR_PAGED_KERNELS(f32, xr_io_f32)
XR_PAGED_KERNELS(f16, xr_io_f16)
XR_PAGED_KERNELS(bf16, xr_io_bf16)

// vLLM's unified attention with fp8 queries or fp8 outputs (kernels/attention_device.c picks
// these when the kernels above do not fit): element kinds read at run time.
XR_ATTENTION_ANY_KERNEL(any, false)
XR_ATTENTION_ANY_KERNEL(any_fp8, true)
