/* The attention families' device argument blocks (kernels/attention.h's problem for attention
 * and paged attention, xr_cache_problem_t for the KV-cache writer), by value to
 * kernels/opencl/attention.cl and kernels/gpu/attention.cu, paged_attention.cu and kv_cache.cu,
 * filled by kernels/attention_device.c. Shared by host C, OpenCL C and CUDA/HIP C++: every
 * integer field is a `long` (view5_args.h), the floats come last. The integer fields are copied
 * by name from attention.h's parameter array (XR_AP_<name>) and xr_cache_problem_t, so a field
 * that disappears there fails the host build. Offsets and strides count elements; -1 offsets
 * mark absent tensors. */
#ifndef XR_KERNELS_ATTENTION_ARGS_H
#define XR_KERNELS_ATTENTION_ARGS_H

/* Keys per staged tile and the largest head size, on every device. */
#define XR_ATTN_BK 16
#define XR_ATTN_DMAX 256
/* OpenCL: one work-item per query row, this many rows per work-group. CUDA/HIP: one warp per
 * row, DMAX / 32 dimensions per lane at the narrowest warp (NVIDIA's 32 lanes; AMD's 64 use
 * half of them), at most MAX_THREADS threads (rows x warp width) per block. */
#define XR_ATTN_OPENCL_THREADS 64
#define XR_ATTN_GPU_PER_LANE (XR_ATTN_DMAX / 32)
#define XR_ATTN_GPU_MAX_THREADS 256
/* Threads per group of the partition-combining and cache kernels. */
#define XR_ATTN_COMBINE_THREADS 64
#define XR_CACHE_THREADS 128

/* The XR_AP_* parameters the attention kernels read. */
#define XR_ATTN_ARGS_FIELDS(X)                                                                  \
  X(batch) X(heads) X(kv_heads) X(group) X(head_dim) X(head_dim_v) X(max_q) X(max_k)            \
  X(q_off) X(q_sb) X(q_ss) X(q_sh) X(q_sd) X(o_off) X(o_sb) X(o_ss) X(o_sh) X(o_sd)             \
  X(lse_off) X(lse_sb) X(lse_ss) X(lse_sh) X(lse_rows)                                          \
  X(k_off) X(k_sp) X(k_ss) X(k_sh) X(k_sdx) X(k_sd) X(k_x) X(v_off) X(v_sp) X(v_ss) X(v_sh)     \
  X(v_sd) X(cu_q_off) X(cu_q_64) X(cu_k_off) X(cu_k_64) X(lens_off) X(lens_64)                  \
  X(paged) X(table_off) X(table_64) X(table_sb) X(table_sp) X(page_size) X(indptr_off)          \
  X(indptr_64) X(causal) X(bottom_right) X(window_left) X(window_right)                         \
  X(alibi_off) X(alibi_sb) X(alibi_sh) X(mask_kind) X(mask_off) X(mask_sb) X(mask_sh)           \
  X(mask_sq) X(mask_sk) X(kv_fp8) X(k_scale_off) X(v_scale_off) X(o_scale_off) X(part_size)     \
  X(part_count)                                                                                  \
  X(es_off) X(es_sb) X(es_sh) X(es_sp) X(ml_off) X(ml_sb) X(ml_sh) X(ml_sp)                     \
  X(to_off) X(to_sb) X(to_sh) X(to_sp) X(to_sd)

/* Element kinds of queries, outputs, keys and values, masks and ALiBi slopes: */
#define XR_ATTN_ELEM_F32 0
#define XR_ATTN_ELEM_F16 1
#define XR_ATTN_ELEM_BF16 2
#define XR_ATTN_ELEM_BYTE 3 /* bool / uint8 masks */
#define XR_ATTN_ELEM_FP8 4  /* in one of the formats below */

/* fp8 formats (base/float_formats.h): OCP e4m3fn / e5m2, AMD's fnuz variants. */
#define XR_ATTN_F8E4M3FN 0
#define XR_ATTN_F8E5M2 1
#define XR_ATTN_F8E4M3FNUZ 2
#define XR_ATTN_F8E5M2FNUZ 3

typedef struct xr_attn_args {
#define XR_ATTN_ARGS_FIELD(name) long name;
  XR_ATTN_ARGS_FIELDS(XR_ATTN_ARGS_FIELD)
#undef XR_ATTN_ARGS_FIELD
  long alibi_elem, mask_elem; /* XR_ATTN_ELEM_* of those present */
  /* element kinds (XR_ATTN_ELEM_F32/F16/BF16/FP8) and fp8 formats of the queries, the outputs
   * (out, tmp_out) and the cache (fp8_format when kv_fp8). CUDA/HIP's typed kernels
   * (xr_attention_<q>[_fp8]) know them from their name; the others read these. */
  long q_elem, q_fp8, o_elem, o_fp8, kv_elem, fp8_format;
  float scale, softcap, empty_lse; /* softcap 0: none; empty_lse: a row that sees no key */
  float k_scale, v_scale;          /* fp8 dequantisation when no scale tensor is bound */
  float q_scale;                   /* fp8 queries: value * q_scale */
  float o_max;                     /* with an output scale (o_scale_off >= 0): the clamp */
} xr_attn_args_t;

/* The xr_cache_problem_t fields the cache kernels read. */
#define XR_CACHE_ARGS_FIELDS(X)                                                                 \
  X(tokens) X(kv_heads) X(head_dim) X(block_size) X(slots_off) X(key_off) X(key_st) X(key_sh)   \
  X(key_sd) X(value_off) X(value_st) X(value_sh) X(value_sd) X(kc_off) X(kc_sb) X(kc_ss)       \
  X(kc_sh) X(kc_sdx) X(kc_sd) X(kc_x) X(vc_off) X(vc_sb) X(vc_ss) X(vc_sh) X(vc_sd)             \
  X(k_scale_off) X(v_scale_off) X(slots_64)

typedef struct xr_cache_args {
#define XR_CACHE_ARGS_FIELD(name) long name;
  XR_CACHE_ARGS_FIELDS(XR_CACHE_ARGS_FIELD)
#undef XR_CACHE_ARGS_FIELD
  long scaled; /* fp8 cache: divide by k_scale / v_scale (tensors at the offsets) */
  /* element kinds of the keys and values and of the cache (its fp8 format in cache_fp8); CUDA's
   * kernels know them from their name (xr_reshape_and_cache_<src>_<cache>) */
  long src_elem, cache_elem, cache_fp8;
} xr_cache_args_t;

#endif
