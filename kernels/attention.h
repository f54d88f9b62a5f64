/* The attention families' parsed problem, shared by their implementations (ref, cpu, opencl,
 * gpu).
 *
 * Every attention op — dense SDPA, variable-length flash, paged decode, batch prefill — is
 * reduced to one description: for sequence b, query row i (0 <= i < q_len(b)) and head h,
 *   out[b,i,h,:] = sum_t softmax_t(s(b,i,h,t)) * V[b,t,h / group,:]
 *   s = cap(scale * Q[b,i,h,:] . K[b,t,h / group,:]) + alibi + mask   over the allowed keys t,
 * where the allowed keys are 0 <= t < k_len(b), cut by a causal mask and a sliding window on the
 * diagonal t = i + diag(b) (diag = 0 top-left aligned, k_len - q_len bottom-right aligned).
 * Sequence lengths come from index tensors read at run time (cu_seqlens, seq_lens, kv_indptr),
 * keys either from a strided dense tensor or from a paged cache through a block table; a token
 * past k_len is never read, so unused cache slots cannot influence a result.
 *
 * The addressing is an array of int64 parameters (XR_ATTN_PARAMS) that the C kernels read;
 * the device kernels get the same fields by name in kernels/attention_args.h's block. Floats
 * are stored as their IEEE bits. Offsets are in elements of the tensor's storage; -1 marks an
 * absent tensor. */
#ifndef XR_KERNELS_ATTENTION_H
#define XR_KERNELS_ATTENTION_H

#include <math.h>

#include "kernels/dtype.h"
#include "kernels/kernels.h"

#define XR_ATTN_PARAMS(X)                                                                      \
  /* sizes */                                                                                  \
  X(batch) X(heads) X(kv_heads) X(group) X(head_dim) X(head_dim_v) X(max_q) X(max_k)           \
  /* query, output and logsumexp: [seq][qstart + i][head][dim] */                              \
  X(q_off) X(q_sb) X(q_ss) X(q_sh) X(q_sd)                                                     \
  X(o_off) X(o_sb) X(o_ss) X(o_sh) X(o_sd)                                                     \
  X(lse_off) X(lse_sb) X(lse_ss) X(lse_sh) X(lse_rows)                                         \
  /* keys and values: [page][slot][kv head][dim]; key dims may be split (d / x, d % x) */      \
  X(k_off) X(k_sp) X(k_ss) X(k_sh) X(k_sdx) X(k_sd) X(k_x)                                     \
  X(v_off) X(v_sp) X(v_ss) X(v_sh) X(v_sd)                                                     \
  /* sequence lengths: cumulative starts, per-sequence key lengths */                          \
  X(cu_q_off) X(cu_q_64) X(cu_k_off) X(cu_k_64) X(lens_off) X(lens_64)                         \
  /* paging: 0 dense, 1 block table [seq][page], 2 kv_indptr + page indices */                 \
  X(paged) X(table_off) X(table_64) X(table_sb) X(table_sp) X(page_size)                       \
  X(indptr_off) X(indptr_64)                                                                   \
  /* masks */                                                                                  \
  X(causal) X(bottom_right) X(window_left) X(window_right)                                     \
  X(alibi_off) X(alibi_sb) X(alibi_sh) X(alibi_dtype)                                          \
  X(mask_kind) X(mask_dtype) X(mask_off) X(mask_sb) X(mask_sh) X(mask_sq) X(mask_sk)           \
  /* fp8 caches: element format of K/V and their scale tensors (float32 [1]) */                \
  X(kv_fp8) X(k_scale_off) X(v_scale_off) X(k_scale_bits) X(v_scale_bits)                      \
  /* split-K partitions (paged_attention_v2): exp_sums, max_logits [seq][head][part] and */   \
  /* tmp_out [seq][head][part][dim] */                                                         \
  X(part_size) X(part_count)                                                                   \
  X(es_off) X(es_sb) X(es_sh) X(es_sp) X(ml_off) X(ml_sb) X(ml_sh) X(ml_sp)                    \
  X(to_off) X(to_sb) X(to_sh) X(to_sp) X(to_sd)                                                \
  /* scalars (float bits) */                                                                   \
  X(scale_bits) X(softcap_bits) X(empty_lse_bits)                                              \
  /* fp8 queries and outputs (vLLM's quantized attention): queries dequantised as */           \
  /* value * q_scale; an output scale tensor (float32 [1], o_scale_off >= 0) stores */          \
  /* fp8(clamp(o / output_scale, -max, +max)), max the output format's largest value */        \
  X(q_scale_bits) X(o_scale_off)

#define XR_ATTN_ENUM(name) XR_AP_##name,
enum { XR_ATTN_PARAMS(XR_ATTN_ENUM) XR_ATTN_PARAM_COUNT };
#undef XR_ATTN_ENUM

/* mask_kind */
enum { XR_ATTN_MASK_NONE = 0, XR_ATTN_MASK_BOOL = 1, XR_ATTN_MASK_ADD = 2 };

/* Tensors an attention kernel binds (binding indices into the plan's tensors; -1 absent). */
enum {
  XR_AT_Q, XR_AT_K, XR_AT_V, XR_AT_OUT, XR_AT_LSE, XR_AT_CU_Q, XR_AT_CU_K, XR_AT_LENS,
  XR_AT_TABLE, XR_AT_INDPTR, XR_AT_ALIBI, XR_AT_MASK, XR_AT_K_SCALE, XR_AT_V_SCALE,
  XR_AT_EXP_SUMS, XR_AT_MAX_LOGITS, XR_AT_TMP_OUT, XR_AT_O_SCALE, XR_AT_COUNT
};

typedef struct xr_attn_problem {
  int64_t p[XR_ATTN_PARAM_COUNT];
  int t[XR_AT_COUNT];            /* binding index of each tensor role, -1 when absent */
  /* kv_dtype: the element format (fp8 for u8 caches); q_dtype and o_dtype may be fp8 (unified
   * attention only: q_scale_bits, o_scale_off) */
  xr_dtype_t q_dtype, kv_dtype, o_dtype;
  int zero_outputs[2];           /* returns the op defines but never fills (rng state): zeroed */
  int zero_count;
  const char *unsupported;       /* why no implementation runs it (dropout), or NULL */
  int64_t total_q_rows;          /* bound on query rows over all sequences, for work splitting */
} xr_attn_problem_t;

/* The reshape_and_cache ops: key/value [tokens, kv_heads, head] scattered into a cache at
 * slot_mapping[token] (negative: padding, skipped); same key layout conventions as above.
 * sglang::store_cache is the case kv_heads = 1, block_size = 1 (a cache row per slot). */
typedef struct xr_cache_problem {
  int key, value, key_cache, value_cache, slots, k_scale, v_scale; /* binding indices */
  xr_dtype_t src_dtype, cache_dtype;  /* cache_dtype: element format (fp8 for u8 caches) */
  bool slots_64;
  int64_t tokens, kv_heads, head_dim, block_size;
  int64_t key_st, key_sh, key_sd, value_st, value_sh, value_sd, key_off, value_off;
  int64_t kc_sb, kc_ss, kc_sh, kc_sdx, kc_sd, kc_x, kc_off; /* key cache [block][slot][h][d] */
  int64_t vc_sb, vc_ss, vc_sh, vc_sd, vc_off;
  int64_t slots_off, k_scale_off, v_scale_off;
  const char *unsupported;            /* why no implementation runs it, or NULL */
} xr_cache_problem_t;

/* Every cache writer's first check: UNIMPLEMENTED with the problem's reason, naming `impl`. */
static inline xr_status_t xr_cache_supported(const xr_op_plan_t *plan, const char *impl) {
  const xr_cache_problem_t *c = plan->problem;
  if (c->unsupported) return xr_error(XR_UNIMPLEMENTED, "%s: %s: %s", impl, plan->op->name, c->unsupported);
  return XR_OK;
}

static inline float xr_attn_float(const xr_attn_problem_t *a, int param) {
  return xr_bits_to_f32((uint32_t)a->p[param]);
}
static inline void xr_attn_set_float(xr_attn_problem_t *a, int param, double v) {
  a->p[param] = (int64_t)xr_f32_to_bits((float)v);
}

/* Host-side views of the bound tensors (storage starts), by role. */
typedef struct xr_attn_host {
  const void *base[XR_AT_COUNT];
  void *out, *lse, *exp_sums, *max_logits, *tmp_out;
  float k_scale, v_scale;
  float q_scale;      /* fp8 queries' dequantisation (1 for float queries) */
  float o_inv_scale;  /* 1 / output_scale of an fp8 output, else 1 */
  float o_max;        /* an fp8 output's largest value, else INFINITY */
} xr_attn_host_t;

/* The largest finite value of an fp8 output (as torch.finfo gives it), INFINITY otherwise. */
static inline float xr_attn_fp8_max(xr_dtype_t d) {
  return xr_dtype_is_fp8(d) ? xr_fp8_format(d).max : INFINITY;
}

static inline int64_t xr_attn_index(const void *base, int64_t off, int64_t is64, int64_t i) {
  return is64 ? ((const int64_t *)base)[off + i] : ((const int32_t *)base)[off + i];
}

/* One sequence's geometry. */
typedef struct xr_attn_seq {
  int64_t q_len, k_len, qstart, kstart, diag;
} xr_attn_seq_t;

static inline xr_attn_seq_t xr_attn_seq(const xr_attn_problem_t *a, const xr_attn_host_t *h,
                                        int64_t b) {
  const int64_t *p = a->p;
  xr_attn_seq_t s = {.q_len = p[XR_AP_max_q], .k_len = p[XR_AP_max_k]};
  if (p[XR_AP_cu_q_off] >= 0) {
    s.qstart = xr_attn_index(h->base[XR_AT_CU_Q], p[XR_AP_cu_q_off], p[XR_AP_cu_q_64], b);
    s.q_len = xr_attn_index(h->base[XR_AT_CU_Q], p[XR_AP_cu_q_off], p[XR_AP_cu_q_64], b + 1) - s.qstart;
  }
  if (p[XR_AP_cu_k_off] >= 0) {
    s.kstart = xr_attn_index(h->base[XR_AT_CU_K], p[XR_AP_cu_k_off], p[XR_AP_cu_k_64], b);
    s.k_len = xr_attn_index(h->base[XR_AT_CU_K], p[XR_AP_cu_k_off], p[XR_AP_cu_k_64], b + 1) - s.kstart;
  }
  if (p[XR_AP_paged] == 2)
    s.k_len = (xr_attn_index(h->base[XR_AT_INDPTR], p[XR_AP_indptr_off], p[XR_AP_indptr_64], b + 1) -
               xr_attn_index(h->base[XR_AT_INDPTR], p[XR_AP_indptr_off], p[XR_AP_indptr_64], b)) *
              p[XR_AP_page_size];
  if (p[XR_AP_lens_off] >= 0)
    s.k_len = xr_attn_index(h->base[XR_AT_LENS], p[XR_AP_lens_off], p[XR_AP_lens_64], b);
  if (s.q_len < 0) s.q_len = 0;
  if (s.k_len < 0) s.k_len = 0;
  if (s.q_len > p[XR_AP_max_q] && p[XR_AP_cu_q_off] < 0) s.q_len = p[XR_AP_max_q];
  s.diag = p[XR_AP_bottom_right] ? s.k_len - s.q_len : 0;
  return s;
}

/* Keys row i may see: [*lo, *hi) (empty when lo >= hi). */
static inline void xr_attn_key_range(const xr_attn_problem_t *a, const xr_attn_seq_t *s, int64_t i,
                                     int64_t *lo, int64_t *hi) {
  const int64_t *p = a->p;
  int64_t l = 0, r = s->k_len, c = i + s->diag;
  if (p[XR_AP_causal] && c + 1 < r) r = c + 1;
  if (p[XR_AP_window_right] >= 0 && c + p[XR_AP_window_right] + 1 < r) r = c + p[XR_AP_window_right] + 1;
  if (p[XR_AP_window_left] >= 0 && c - p[XR_AP_window_left] > l) l = c - p[XR_AP_window_left];
  *lo = l;
  *hi = r;
}

/* Storage index of key token t's first element (kv head 0, dim 0) and of its value. */
static inline void xr_attn_token(const xr_attn_problem_t *a, const xr_attn_host_t *h, int64_t b,
                                 const xr_attn_seq_t *s, int64_t t, int64_t *k_index,
                                 int64_t *v_index) {
  const int64_t *p = a->p;
  int64_t page = b, slot = s->kstart + t;
  if (p[XR_AP_paged]) {
    int64_t ps = p[XR_AP_page_size], e = t / ps;
    slot = t % ps;
    if (p[XR_AP_paged] == 1) {
      page = xr_attn_index(h->base[XR_AT_TABLE], p[XR_AP_table_off], p[XR_AP_table_64],
                           b * p[XR_AP_table_sb] + e * p[XR_AP_table_sp]);
    } else {
      int64_t first = xr_attn_index(h->base[XR_AT_INDPTR], p[XR_AP_indptr_off], p[XR_AP_indptr_64], b);
      page = xr_attn_index(h->base[XR_AT_TABLE], p[XR_AP_table_off], p[XR_AP_table_64], first + e);
    }
  }
  *k_index = p[XR_AP_k_off] + page * p[XR_AP_k_sp] + slot * p[XR_AP_k_ss];
  *v_index = p[XR_AP_v_off] + page * p[XR_AP_v_sp] + slot * p[XR_AP_v_ss];
}

static inline int64_t xr_attn_k_dim(const xr_attn_problem_t *a, int64_t d) {
  return (d / a->p[XR_AP_k_x]) * a->p[XR_AP_k_sdx] + (d % a->p[XR_AP_k_x]) * a->p[XR_AP_k_sd];
}

/* Additive terms of logit (i, t) of head h besides the scaled product: ALiBi and the mask.
 * -INFINITY when a boolean mask excludes it. */
static inline double xr_attn_bias(const xr_attn_problem_t *a, const xr_attn_host_t *h, int64_t b,
                                  const xr_attn_seq_t *s, int64_t head, int64_t i, int64_t t) {
  const int64_t *p = a->p;
  double bias = 0;
  if (p[XR_AP_alibi_off] >= 0) {
    double slope = xr_load_element(h->base[XR_AT_ALIBI], (xr_dtype_t)p[XR_AP_alibi_dtype],
                                   p[XR_AP_alibi_off] + b * p[XR_AP_alibi_sb] + head * p[XR_AP_alibi_sh]);
    int64_t dist = t - (i + s->diag);
    bias -= slope * (double)(dist < 0 ? -dist : dist);
  }
  if (p[XR_AP_mask_kind] != XR_ATTN_MASK_NONE) {
    double m = xr_load_element(h->base[XR_AT_MASK], (xr_dtype_t)p[XR_AP_mask_dtype],
                               p[XR_AP_mask_off] + b * p[XR_AP_mask_sb] + head * p[XR_AP_mask_sh] +
                                   i * p[XR_AP_mask_sq] + t * p[XR_AP_mask_sk]);
    if (p[XR_AP_mask_kind] == XR_ATTN_MASK_BOOL) {
      if (m == 0) return -INFINITY;
    } else {
      bias += m;
    }
  }
  return bias;
}

/* Fills the host view from bound tensors (cpu devices). */
/* The cache writers' host storage, by role (NULL for an absent scale). */
typedef struct xr_cache_host {
  const void *key, *value, *slots, *k_scale, *v_scale;
  void *key_cache, *value_cache;
} xr_cache_host_t;

xr_status_t xr_cache_host_bind(const xr_cache_problem_t *c, const xr_tensor_t *tensors, xr_cache_host_t *out_host);

xr_status_t xr_attn_host_bind(const xr_attn_problem_t *a, const xr_tensor_t *tensors,
                              xr_attn_host_t *out_host);

/* At the start of each execution (the scale tensors' contents are read then): the output
 * scale's reciprocal and the clamp of an fp8 output. */
void xr_attn_host_begin(const xr_attn_problem_t *a, xr_attn_host_t *h);

/* An output value as vLLM's fp8 epilogue stores it: v * (1 / output_scale) clamped to the
 * format's range (a NaN stays NaN); unchanged without an output scale. */
static inline float xr_attn_output(const xr_attn_host_t *h, float v) {
  if (h->o_max == INFINITY) return v;
  v *= h->o_inv_scale;
  return v > h->o_max ? h->o_max : v < -h->o_max ? -h->o_max : v;
}

/* The same problem for every implementation: shared `supports` checks. */
xr_status_t xr_attn_supported(const xr_op_plan_t *plan);

/* Zeroes the outputs the op defines but attention never fills (rng state) on the host. */
void xr_attn_zero_host_outputs(const xr_attn_problem_t *a, const xr_tensor_t *tensors);

/* Implementations (kernels/attention_ref.c, kernels/cpu/attention_cpu.c,
 * kernels/attention_device.c), listed by both families. */
extern const xr_kernel_impl_t xr_attn_ref_impl, xr_attn_cpu_impl, xr_attn_opencl_impl;
extern const xr_kernel_impl_t xr_cache_ref_impl, xr_cache_opencl_impl;
extern const xr_kernel_impl_t xr_cache_cpu_impl; /* fp8 e4m3 caches (kernels/cpu/kv_cache_cpu.c) */
/* CUDA / HIP (kernels/attention_device.c): one pair per family. */
extern const xr_kernel_impl_t xr_attn_gpu_impl;
extern const xr_kernel_impl_t xr_paged_attn_gpu_impl;
extern const xr_kernel_impl_t xr_cache_gpu_impl;

/* Argument parsing helpers shared by the dense and the paged analysis. */
xr_status_t xr_attn_analyze_paged(xr_op_plan_t *plan);
xr_status_t xr_attn_analyze_cache(xr_op_plan_t *plan);
void xr_attn_init_params(xr_attn_problem_t *a);

#endif
