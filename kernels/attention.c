/* The attention family: dense scaled-dot-product attention (PyTorch's SDPA ops and the flash
 * forward, with cu_seqlens the variable-length forward) and AITER's varlen / batch-prefill
 * forwards. Each op is reduced to the shared xr_attn_problem_t (kernels/attention.h).
 *
 * Conventions (from the ops' own sources):
 * - SDPA ops take [B, H, S, D] views (any strides) and return a contiguous [B, H, Sq, Dv];
 *   is_causal is top-left aligned (query i sees keys j <= i), as PyTorch documents for SDPA.
 * - aten::_flash_attention_forward and the AITER ops take [B, S, H, D] (dense) or packed
 *   [total, H, D] (with cumulative sequence starts) and follow flash-attention: causal and
 *   sliding windows are bottom-right aligned (diagonal at i + k_len - q_len), ALiBi adds
 *   -slope * |i + k_len - q_len - j|, softcap s -> cap * tanh(s / cap). Their logsumexp is
 *   [B, H, Sq] dense and [H, total_q] packed.
 * - A row that sees no key returns zeros and logsumexp +inf (flash); the memory-efficient
 *   kernel's logsumexp is padded to a multiple of 32 rows with +inf, as its CUDA kernel does.
 * - Outputs the ops return but never fill without dropout (rng state, philox seed/offset) are
 *   zeroed. dropout_p > 0 is random and not replayed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "kernels/family.h"
#include "kernels/initializer.h"

/* SGLang's profiler annotation around AITER's paged_attention_ragged (decode over a page list). */
#define RAGGED "sglang_profiler::attention_paged_attention_ragged"

static const char *const attention_ops[] = {
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention",
    "aten::scaled_dot_product_attention",
    "aten::_flash_attention_forward",
    "aiter::mha_varlen_fwd",
    "aiter::mha_batch_prefill",
    RAGGED,
    NULL,
};

void xr_attn_init_params(xr_attn_problem_t *a) {
  memset(a, 0, sizeof *a);
  for (int i = 0; i < XR_AT_COUNT; i++) a->t[i] = -1;
  int64_t *p = a->p;
  p[XR_AP_lse_off] = p[XR_AP_cu_q_off] = p[XR_AP_cu_k_off] = p[XR_AP_lens_off] = -1;
  p[XR_AP_table_off] = p[XR_AP_indptr_off] = p[XR_AP_alibi_off] = p[XR_AP_mask_off] = -1;
  p[XR_AP_k_scale_off] = p[XR_AP_v_scale_off] = p[XR_AP_o_scale_off] = -1;
  p[XR_AP_es_off] = p[XR_AP_ml_off] = p[XR_AP_to_off] = -1;
  p[XR_AP_window_left] = p[XR_AP_window_right] = -1;
  p[XR_AP_page_size] = 1;
  xr_attn_set_float(a, XR_AP_k_scale_bits, 1.0);
  xr_attn_set_float(a, XR_AP_v_scale_bits, 1.0);
  xr_attn_set_float(a, XR_AP_q_scale_bits, 1.0);
  xr_attn_set_float(a, XR_AP_empty_lse_bits, INFINITY);
}

static bool is_float(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16;
}

static bool is_index(xr_dtype_t d) { return d == XR_DTYPE_I32 || d == XR_DTYPE_I64; }

/* Binds an index tensor (int32/int64) to a role. */
static xr_status_t bind_index(xr_op_plan_t *plan, xr_attn_problem_t *a, int role, int index,
                              const char *name, int off_param, int is64_param) {
  const xr_tensor_spec_t *t = plan->inputs[index];
  if (!is_index(t->dtype) || t->rank < 1)
    return xr_plan_error(plan, "%s: expected an int32 or int64 tensor, got %s of rank %d", name,
                         xr_dtype_name(t->dtype), t->rank);
  a->t[role] = index;
  a->p[off_param] = t->storage_offset;
  a->p[is64_param] = t->dtype == XR_DTYPE_I64;
  return XR_OK;
}

/* A return of the op; its binding index. */
static int add_return(xr_op_plan_t *plan, xr_dtype_t dtype, int rank, const int64_t *shape) {
  int r = (int)plan->return_count++;
  xr_desc_set(&plan->returns[r], dtype, rank, shape);
  return (int)plan->input_count + r;
}

/* Query / output addressing from a tensor's strides: dims (b, s, h, d) at positions given
 * (-1: absent, stride 0). */
static void set_rows(int64_t *p, int base, const int64_t *strides, int db, int ds, int dh, int dd) {
  p[base + 1] = db >= 0 ? strides[db] : 0;
  p[base + 2] = ds >= 0 ? strides[ds] : 0;
  p[base + 3] = dh >= 0 ? strides[dh] : 0;
  p[base + 4] = dd >= 0 ? strides[dd] : 0;
}

static xr_status_t read_scale(xr_op_plan_t *plan, int position, const char *name, int64_t head_dim,
                              xr_attn_problem_t *a) {
  double scale = NAN;
  xr_status_t st = xr_arg_double(plan->op, position, name, false, &scale);
  if (st != XR_OK) return st;
  /* None, and the AITER convention of a non-positive scale, mean 1/sqrt(D). */
  if (isnan(scale) || scale <= 0) scale = 1.0 / sqrt((double)head_dim);
  xr_attn_set_float(a, XR_AP_scale_bits, scale);
  return XR_OK;
}

static xr_status_t read_dropout(xr_op_plan_t *plan, int position, const char *name,
                                xr_attn_problem_t *a) {
  double p = 0;
  xr_status_t st = xr_arg_double(plan->op, position, name, false, &p);
  if (st == XR_OK && p > 0) a->unsupported = "dropout_p > 0 is random and is not replayed";
  return st;
}

static xr_status_t optional_int(const xr_op_t *op, int position, const char *name, int64_t *out) {
  const xr_value_t *v = xr_op_arg(op, position, name);
  if (!v || v->kind == XR_VALUE_NULL) return XR_OK;
  return xr_arg_int(op, position, name, true, out);
}

/* q, k, v dtypes and head counts; GQA when heads is a multiple of kv_heads. */
static xr_status_t check_qkv(xr_op_plan_t *plan, xr_attn_problem_t *a, const xr_tensor_spec_t *q,
                             const xr_tensor_spec_t *k, const xr_tensor_spec_t *v) {
  if (!is_float(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
    return xr_plan_error(plan, "query, key and value must share a float dtype (got %s, %s, %s)",
                         xr_dtype_name(q->dtype), xr_dtype_name(k->dtype), xr_dtype_name(v->dtype));
  int64_t *p = a->p;
  if (p[XR_AP_kv_heads] < 1 || p[XR_AP_heads] % p[XR_AP_kv_heads] != 0)
    return xr_plan_error(plan, "query has %lld heads, key %lld: not a multiple (GQA)",
                         (long long)p[XR_AP_heads], (long long)p[XR_AP_kv_heads]);
  if (p[XR_AP_head_dim] < 1 || p[XR_AP_head_dim_v] < 1)
    return xr_plan_error(plan, "empty head dimension");
  p[XR_AP_group] = p[XR_AP_heads] / p[XR_AP_kv_heads];
  a->q_dtype = a->kv_dtype = a->o_dtype = q->dtype;
  p[XR_AP_q_off] = q->storage_offset;
  p[XR_AP_k_off] = k->storage_offset;
  p[XR_AP_v_off] = v->storage_offset;
  p[XR_AP_k_x] = p[XR_AP_head_dim];
  return XR_OK;
}

/* An additive or boolean mask broadcastable to the logits [..., Sq, Sk]; `out_rank` dims
 * (b, h, q, k) of which the query had `q_rank` (3: no head dim). */
static xr_status_t set_mask(xr_op_plan_t *plan, xr_attn_problem_t *a, int index, const char *name,
                            int q_rank) {
  const xr_tensor_spec_t *m = plan->inputs[index];
  int64_t *p = a->p;
  int64_t logical[4] = {p[XR_AP_batch], p[XR_AP_heads], p[XR_AP_max_q], p[XR_AP_max_k]};
  int map[4] = {0, 1, 2, 3}; /* logical dims present for the query's rank, right-aligned */
  int n = 4;
  if (q_rank == 3) map[0] = 0, map[1] = 2, map[2] = 3, n = 3;
  if (m->rank > n) return xr_plan_error(plan, "%s: rank %d exceeds the logits' %d", name, m->rank, n);
  int64_t strides[4] = {0, 0, 0, 0};
  for (int d = 0; d < m->rank; d++) {
    int ld = map[n - m->rank + d];
    if (m->shape[d] != 1 && m->shape[d] != logical[ld])
      return xr_plan_error(plan, "%s: dimension %d (%lld) does not broadcast to %lld", name, d,
                           (long long)m->shape[d], (long long)logical[ld]);
    strides[ld] = m->shape[d] == 1 ? 0 : m->strides[d];
  }
  if (m->dtype == XR_DTYPE_BOOL || m->dtype == XR_DTYPE_U8) p[XR_AP_mask_kind] = XR_ATTN_MASK_BOOL;
  else if (is_float(m->dtype)) p[XR_AP_mask_kind] = XR_ATTN_MASK_ADD;
  else return xr_plan_error(plan, "%s: expected a bool or float mask, got %s", name, xr_dtype_name(m->dtype));
  a->t[XR_AT_MASK] = index;
  p[XR_AP_mask_dtype] = m->dtype;
  p[XR_AP_mask_off] = m->storage_offset;
  p[XR_AP_mask_sb] = strides[0];
  p[XR_AP_mask_sh] = strides[1];
  p[XR_AP_mask_sq] = strides[2];
  p[XR_AP_mask_sk] = strides[3];
  return XR_OK;
}

static xr_status_t set_alibi(xr_op_plan_t *plan, xr_attn_problem_t *a, int index) {
  const xr_tensor_spec_t *s = plan->inputs[index];
  int64_t *p = a->p;
  bool per_batch = s->rank == 2;
  if ((s->rank != 1 && s->rank != 2) || s->shape[s->rank - 1] != p[XR_AP_heads] ||
      (per_batch && s->shape[0] != p[XR_AP_batch]) || !xr_dtype_is_floating(s->dtype))
    return xr_plan_error(plan, "alibi_slopes: expected a float [num_heads] or [batch, num_heads] tensor");
  a->t[XR_AT_ALIBI] = index;
  p[XR_AP_alibi_off] = s->storage_offset;
  p[XR_AP_alibi_dtype] = s->dtype;
  p[XR_AP_alibi_sh] = s->strides[s->rank - 1];
  p[XR_AP_alibi_sb] = per_batch ? s->strides[0] : 0;
  return XR_OK;
}

/* FLOPs: two products of (D + Dv) per allowed key. Bytes: each tensor bound read or written
 * once, except a paged key/value cache (a page list's, varlen's block_table): the pages
 * referenced, not the whole cache, and of a page list the entries used. */
static void set_costs(xr_op_plan_t *plan, const xr_attn_problem_t *a, double rows_times_keys) {
  const int64_t *p = a->p;
  plan->flops = 2.0 * rows_times_keys * (double)(p[XR_AP_head_dim] + p[XR_AP_head_dim_v]);
  double kv_tokens = -1; /* tokens of the paged cache referenced; -1: not paged */
  if (p[XR_AP_paged] && a->t[XR_AT_TABLE] >= 0) {
    double pages = (double)xr_spec_numel(plan->inputs[a->t[XR_AT_TABLE]]);
    int64_t page = p[XR_AP_page_size] > 0 ? p[XR_AP_page_size] : 1;
    double per_seq = (double)((p[XR_AP_max_k] + page - 1) / page); /* block_table rows: what max_k needs */
    /* A block table, or a page list (which may be allocated for far more), holds at most what
     * max_k needs per sequence. */
    if ((double)p[XR_AP_batch] * per_seq < pages) pages = (double)p[XR_AP_batch] * per_seq;
    kv_tokens = pages * (double)page;
  }
  double bytes = 0;
  for (int r = 0; r < XR_AT_COUNT; r++) {
    int i = a->t[r];
    if (i < 0) continue;
    if (i < (int)plan->input_count) {
      double n = xr_spec_distinct_numel(plan->inputs[i]); /* an expanded GQA head once */
      if (kv_tokens >= 0 && (r == XR_AT_K || r == XR_AT_V)) {
        double referenced = kv_tokens * (double)p[XR_AP_kv_heads] *
                            (double)(r == XR_AT_K ? p[XR_AP_head_dim] : p[XR_AP_head_dim_v]);
        if (referenced < n) n = referenced;
      }
      double entries = kv_tokens / (double)(p[XR_AP_page_size] > 0 ? p[XR_AP_page_size] : 1);
      if (kv_tokens >= 0 && r == XR_AT_TABLE && p[XR_AP_paged] == 2 && entries < n)
        n = entries; /* the page list's entries the sequences use */
      bytes += n * (double)xr_dtype_size(plan->inputs[i]->dtype);
    } else
      bytes += (double)xr_desc_numel(&plan->returns[i - plan->input_count]) *
               (double)xr_dtype_size(plan->returns[i - plan->input_count].dtype);
  }
  plan->bytes = bytes;
}

/* Rows x keys a dense (equal-length) problem computes, causal and windows included. */
static double dense_work(const xr_attn_problem_t *a) {
  xr_attn_seq_t s = {.q_len = a->p[XR_AP_max_q], .k_len = a->p[XR_AP_max_k]};
  s.diag = a->p[XR_AP_bottom_right] ? s.k_len - s.q_len : 0;
  double keys = 0;
  for (int64_t i = 0; i < s.q_len; i++) {
    int64_t lo, hi;
    xr_attn_key_range(a, &s, i, &lo, &hi);
    if (hi > lo) keys += (double)(hi - lo);
  }
  return keys * (double)(a->p[XR_AP_batch] * a->p[XR_AP_heads]);
}

/* ------------------------------------------------------------------------------------------ */
/* SDPA: [B, H, S, D] views (or [B, S, D])                                                      */

static xr_status_t analyze_sdpa(xr_op_plan_t *plan, xr_attn_problem_t *a) {
  const xr_op_t *op = plan->op;
  const char *name = op->name;
  bool flash = !strcmp(name, "aten::_scaled_dot_product_flash_attention");
  bool efficient = !strcmp(name, "aten::_scaled_dot_product_efficient_attention");
  int iq, ik, iv, imask = -1;
  xr_status_t st;
  bool causal = false, compute_lse = true, enable_gqa = false;
  if ((st = xr_arg_tensor(plan, 0, "query", true, &iq)) ||
      (st = xr_arg_tensor(plan, 1, "key", true, &ik)) ||
      (st = xr_arg_tensor(plan, 2, "value", true, &iv)))
    return st;
  if (flash) {
    if ((st = read_dropout(plan, 3, "dropout_p", a)) || (st = xr_arg_bool(op, 4, "is_causal", false, &causal)))
      return st;
  } else if (efficient) {
    if ((st = xr_arg_tensor(plan, 3, "attn_bias", false, &imask)) ||
        (st = xr_arg_bool(op, 4, "compute_log_sumexp", false, &compute_lse)) ||
        (st = read_dropout(plan, 5, "dropout_p", a)) || (st = xr_arg_bool(op, 6, "is_causal", false, &causal)))
      return st;
  } else {
    if ((st = xr_arg_tensor(plan, 3, "attn_mask", false, &imask)) ||
        (st = read_dropout(plan, 4, "dropout_p", a)) || (st = xr_arg_bool(op, 5, "is_causal", false, &causal)) ||
        (st = xr_arg_bool(op, -1, "enable_gqa", false, &enable_gqa)))
      return st;
  }
  if (iq < 0 || ik < 0 || iv < 0) return xr_plan_error(plan, "query/key/value are not bound");
  const xr_tensor_spec_t *q = plan->inputs[iq], *k = plan->inputs[ik], *v = plan->inputs[iv];
  int rank = q->rank;
  if ((rank != 4 && rank != 3) || k->rank != rank || v->rank != rank)
    return xr_plan_error(plan, "query, key and value must be 4-D [B, H, S, D] (or 3-D), got %d-D, %d-D, %d-D",
                         q->rank, k->rank, v->rank);
  int64_t *p = a->p;
  bool heads = rank == 4;
  p[XR_AP_batch] = q->shape[0];
  p[XR_AP_heads] = heads ? q->shape[1] : 1;
  p[XR_AP_kv_heads] = heads ? k->shape[1] : 1;
  p[XR_AP_max_q] = q->shape[rank - 2];
  p[XR_AP_max_k] = k->shape[rank - 2];
  p[XR_AP_head_dim] = q->shape[rank - 1];
  p[XR_AP_head_dim_v] = v->shape[rank - 1];
  if (k->shape[0] != q->shape[0] || v->shape[0] != q->shape[0] || v->shape[rank - 2] != p[XR_AP_max_k] ||
      k->shape[rank - 1] != p[XR_AP_head_dim] || (heads && v->shape[1] != k->shape[1]))
    return xr_plan_error(plan, "key/value shapes do not match the query's batch, key length or head size");
  if (!strcmp(name, "aten::scaled_dot_product_attention") && !enable_gqa &&
      p[XR_AP_kv_heads] != p[XR_AP_heads] && p[XR_AP_kv_heads] != 1)
    return xr_plan_error(plan, "query has %lld heads and key %lld: pass enable_gqa=True",
                         (long long)p[XR_AP_heads], (long long)p[XR_AP_kv_heads]);
  if ((st = check_qkv(plan, a, q, k, v))) return st;
  if ((st = read_scale(plan, -1, "scale", p[XR_AP_head_dim], a))) return st;
  a->t[XR_AT_Q] = iq, a->t[XR_AT_K] = ik, a->t[XR_AT_V] = iv;
  int db = 0, dh = heads ? 1 : -1, ds = rank - 2, dd = rank - 1;
  set_rows(p, XR_AP_q_off, q->strides, db, ds, dh, dd);
  p[XR_AP_k_sp] = k->strides[0];
  p[XR_AP_k_ss] = k->strides[ds];
  p[XR_AP_k_sh] = heads ? k->strides[1] : 0;
  p[XR_AP_k_sd] = k->strides[dd];
  p[XR_AP_v_sp] = v->strides[0];
  p[XR_AP_v_ss] = v->strides[ds];
  p[XR_AP_v_sh] = heads ? v->strides[1] : 0;
  p[XR_AP_v_sd] = v->strides[dd];
  p[XR_AP_causal] = causal;
  if (imask >= 0 && (st = set_mask(plan, a, imask, efficient ? "attn_bias" : "attn_mask", rank))) return st;

  int64_t shape[4], strides[4];
  memcpy(shape, q->shape, sizeof(int64_t) * (size_t)rank);
  shape[rank - 1] = p[XR_AP_head_dim_v];
  xr_contiguous_strides(rank, shape, strides);
  a->t[XR_AT_OUT] = add_return(plan, q->dtype, rank, shape);
  set_rows(p, XR_AP_o_off, strides, db, ds, dh, dd);
  if (flash || efficient) {
    int64_t rows = p[XR_AP_max_q];
    if (efficient) rows = compute_lse ? (rows + 31) / 32 * 32 : 0;
    int64_t lshape[3] = {p[XR_AP_batch], p[XR_AP_heads], rows};
    a->t[XR_AT_LSE] = add_return(plan, XR_DTYPE_F32, 3, lshape);
    p[XR_AP_lse_off] = rows ? 0 : -1;
    p[XR_AP_lse_sb] = p[XR_AP_heads] * rows;
    p[XR_AP_lse_sh] = rows;
    p[XR_AP_lse_ss] = 1;
    p[XR_AP_lse_rows] = rows;
    if (efficient) {
      xr_attn_set_float(a, XR_AP_empty_lse_bits, 0.0); /* fully masked rows: log(1) + 0 */
      for (int r = 0; r < 2; r++) a->zero_outputs[a->zero_count++] = add_return(plan, XR_DTYPE_I64, 0, shape);
    }
  }
  set_costs(plan, a, dense_work(a));
  a->total_q_rows = p[XR_AP_batch] * p[XR_AP_max_q];
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* flash forward: [B, S, H, D] or packed [total, H, D] with cumulative starts                  */

/* Packed or dense q/k/v addressing. */
static xr_status_t set_bshd(xr_op_plan_t *plan, xr_attn_problem_t *a, const xr_tensor_spec_t *q,
                            const xr_tensor_spec_t *k, const xr_tensor_spec_t *v, bool packed) {
  int64_t *p = a->p;
  int r = packed ? 3 : 4;
  if (q->rank != r || v->rank != k->rank)
    return xr_plan_error(plan, "query must be %s, got %d-D", packed ? "[total, H, D]" : "[B, S, H, D]", q->rank);
  int o = packed ? -1 : 0; /* dim offset: packed tensors have no batch dim */
  p[XR_AP_heads] = q->shape[2 + o];
  p[XR_AP_head_dim] = q->shape[3 + o];
  p[XR_AP_kv_heads] = k->shape[k->rank - 2];
  p[XR_AP_head_dim_v] = v->shape[v->rank - 1];
  if (k->shape[k->rank - 1] != p[XR_AP_head_dim] || v->shape[v->rank - 2] != p[XR_AP_kv_heads])
    return xr_plan_error(plan, "key/value heads or head size do not match the query's");
  set_rows(p, XR_AP_q_off, q->strides, packed ? -1 : 0, 1 + o, 2 + o, 3 + o);
  if (k->rank == r) { /* dense keys: [B, S, Hk, D] or [total_k, Hk, D] */
    p[XR_AP_k_sp] = packed ? 0 : k->strides[0];
    p[XR_AP_v_sp] = packed ? 0 : v->strides[0];
  }
  p[XR_AP_k_ss] = k->strides[k->rank - 3];
  p[XR_AP_k_sh] = k->strides[k->rank - 2];
  p[XR_AP_k_sd] = k->strides[k->rank - 1];
  p[XR_AP_v_ss] = v->strides[v->rank - 3];
  p[XR_AP_v_sh] = v->strides[v->rank - 2];
  p[XR_AP_v_sd] = v->strides[v->rank - 1];
  return check_qkv(plan, a, q, k, v);
}

/* Output [.., H, Dv] like the query, and logsumexp ([B, H, Sq] dense, [H, total] packed). */
static void add_flash_returns(xr_op_plan_t *plan, xr_attn_problem_t *a, const xr_tensor_spec_t *q,
                              bool packed, bool lse, bool lse_empty_when_off) {
  int64_t *p = a->p;
  int64_t shape[4], strides[4];
  memcpy(shape, q->shape, sizeof(int64_t) * (size_t)q->rank);
  shape[q->rank - 1] = p[XR_AP_head_dim_v];
  xr_contiguous_strides(q->rank, shape, strides);
  a->t[XR_AT_OUT] = add_return(plan, q->dtype, q->rank, shape);
  set_rows(p, XR_AP_o_off, strides, packed ? -1 : 0, packed ? 0 : 1, packed ? 1 : 2, packed ? 2 : 3);
  int64_t total = q->shape[0];
  if (!lse && lse_empty_when_off) {
    int64_t zero = 0;
    add_return(plan, XR_DTYPE_F32, 1, &zero);
    return;
  }
  if (packed) {
    int64_t lshape[2] = {p[XR_AP_heads], total};
    a->t[XR_AT_LSE] = add_return(plan, XR_DTYPE_F32, 2, lshape);
    p[XR_AP_lse_sb] = 0, p[XR_AP_lse_sh] = total, p[XR_AP_lse_ss] = 1;
  } else {
    int64_t lshape[3] = {p[XR_AP_batch], p[XR_AP_heads], p[XR_AP_max_q]};
    a->t[XR_AT_LSE] = add_return(plan, XR_DTYPE_F32, 3, lshape);
    p[XR_AP_lse_sb] = p[XR_AP_heads] * p[XR_AP_max_q], p[XR_AP_lse_sh] = p[XR_AP_max_q], p[XR_AP_lse_ss] = 1;
  }
  p[XR_AP_lse_off] = 0;
}

static xr_status_t set_windows(xr_op_plan_t *plan, xr_attn_problem_t *a, int64_t left, int64_t right) {
  (void)plan;
  int64_t *p = a->p;
  /* flash-attention: causal means window_right = 0; a negative size is unbounded. */
  p[XR_AP_window_left] = left < 0 ? -1 : left;
  p[XR_AP_window_right] = right < 0 ? -1 : right;
  p[XR_AP_bottom_right] = 1;
  return XR_OK;
}

static xr_status_t analyze_flash_forward(xr_op_plan_t *plan, xr_attn_problem_t *a) {
  const xr_op_t *op = plan->op;
  int iq, ik, iv, icq, ick, iused = -1, ialibi = -1;
  int64_t max_q = 0, max_k = 0, wl = -1, wr = -1;
  bool causal = false;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "query", true, &iq)) || (st = xr_arg_tensor(plan, 1, "key", true, &ik)) ||
      (st = xr_arg_tensor(plan, 2, "value", true, &iv)) ||
      (st = xr_arg_tensor(plan, 3, "cum_seq_q", false, &icq)) ||
      (st = xr_arg_tensor(plan, 4, "cum_seq_k", false, &ick)) ||
      (st = xr_arg_int(op, 5, "max_q", true, &max_q)) || (st = xr_arg_int(op, 6, "max_k", true, &max_k)) ||
      (st = read_dropout(plan, 7, "dropout_p", a)) || (st = xr_arg_bool(op, 8, "is_causal", false, &causal)) ||
      (st = optional_int(op, -1, "window_size_left", &wl)) ||
      (st = optional_int(op, -1, "window_size_right", &wr)) ||
      (st = xr_arg_tensor(plan, -1, "seqused_k", false, &iused)) ||
      (st = xr_arg_tensor(plan, -1, "alibi_slopes", false, &ialibi)))
    return st;
  if (iq < 0 || ik < 0 || iv < 0) return xr_plan_error(plan, "query/key/value are not bound");
  bool packed = icq >= 0;
  if (packed != (ick >= 0)) return xr_plan_error(plan, "cum_seq_q and cum_seq_k must be given together");
  const xr_tensor_spec_t *q = plan->inputs[iq], *k = plan->inputs[ik], *v = plan->inputs[iv];
  int64_t *p = a->p;
  if ((st = set_bshd(plan, a, q, k, v, packed))) return st;
  if (packed) {
    if ((st = bind_index(plan, a, XR_AT_CU_Q, icq, "cum_seq_q", XR_AP_cu_q_off, XR_AP_cu_q_64)) ||
        (st = bind_index(plan, a, XR_AT_CU_K, ick, "cum_seq_k", XR_AP_cu_k_off, XR_AP_cu_k_64)))
      return st;
    p[XR_AP_batch] = plan->inputs[icq]->shape[0] - 1;
    p[XR_AP_max_q] = max_q;
    p[XR_AP_max_k] = max_k;
  } else {
    p[XR_AP_batch] = q->shape[0];
    p[XR_AP_max_q] = q->shape[1];
    p[XR_AP_max_k] = k->shape[1];
  }
  if (p[XR_AP_batch] < 0) return xr_plan_error(plan, "cum_seq_q: empty");
  if (iused >= 0 && (st = bind_index(plan, a, XR_AT_LENS, iused, "seqused_k", XR_AP_lens_off, XR_AP_lens_64)))
    return st;
  if (ialibi >= 0 && (st = set_alibi(plan, a, ialibi))) return st;
  if ((st = read_scale(plan, -1, "scale", p[XR_AP_head_dim], a))) return st;
  a->t[XR_AT_Q] = iq, a->t[XR_AT_K] = ik, a->t[XR_AT_V] = iv;
  p[XR_AP_causal] = causal;
  set_windows(plan, a, wl, wr);
  add_flash_returns(plan, a, q, packed, true, false);
  int64_t two = 2;
  a->zero_outputs[a->zero_count++] = add_return(plan, XR_DTYPE_U64, 1, &two); /* rng_state */
  a->zero_outputs[a->zero_count++] = add_return(plan, XR_DTYPE_U64, 0, &two); /* unused */
  a->total_q_rows = packed ? q->shape[0] : p[XR_AP_batch] * p[XR_AP_max_q];
  set_costs(plan, a, packed ? (double)a->total_q_rows * (double)p[XR_AP_heads] * (double)max_k *
                                  (causal ? 0.5 : 1.0)
                            : dense_work(a));
  return XR_OK;
}

/* aiter::mha_varlen_fwd and aiter::mha_batch_prefill (positions: the AITER Python signatures
 * with min_seqlen_q and logits_soft_cap). Returns (out, softmax_lse, p, rng_state). */
static xr_status_t analyze_aiter(xr_op_plan_t *plan, xr_attn_problem_t *a) {
  const xr_op_t *op = plan->op;
  bool prefill = !strcmp(op->name, "aiter::mha_batch_prefill");
  int iq, ik, iv, icq, ick = -1, iindptr = -1, ipages = -1, itable = -1, ialibi = -1, ibias = -1;
  int64_t max_q = 0, max_k = 0, wl = -1, wr = -1;
  double softcap = 0;
  bool causal = false, ret_lse = false;
  xr_status_t st;
  int m = prefill ? 6 : 5; /* batch prefill has two index tensors before max_seqlen_q */
  if ((st = xr_arg_tensor(plan, 0, "q", true, &iq)) || (st = xr_arg_tensor(plan, 1, "k", true, &ik)) ||
      (st = xr_arg_tensor(plan, 2, "v", true, &iv)) ||
      (st = xr_arg_tensor(plan, 3, "cu_seqlens_q", true, &icq)))
    return st;
  if (prefill) {
    if ((st = xr_arg_tensor(plan, 4, "kv_indptr", true, &iindptr)) ||
        (st = xr_arg_tensor(plan, 5, "kv_page_indices", true, &ipages)))
      return st;
  } else if ((st = xr_arg_tensor(plan, 4, "cu_seqlens_k", false, &ick))) {
    return st;
  }
  if ((st = xr_arg_int(op, m, "max_seqlen_q", true, &max_q)) ||
      (st = xr_arg_int(op, m + 1, "max_seqlen_k", true, &max_k)) || (st = read_dropout(plan, 8, "dropout_p", a)) ||
      (st = xr_arg_double(op, 10, "logits_soft_cap", false, &softcap)) ||
      (st = xr_arg_bool(op, 12, "is_causal", false, &causal)) ||
      (st = xr_arg_int(op, 13, "window_size_left", false, &wl)) ||
      (st = xr_arg_int(op, 14, "window_size_right", false, &wr)) ||
      (st = xr_arg_bool(op, 15, "return_softmax_lse", false, &ret_lse)) ||
      (st = xr_arg_tensor(plan, prefill ? 18 : 20, "alibi_slopes", false, &ialibi)) ||
      (!prefill && (st = xr_arg_tensor(plan, 19, "bias", false, &ibias))) ||
      (!prefill && (st = xr_arg_tensor(plan, 18, "block_table", false, &itable))))
    return st;
  if (iq < 0 || ik < 0 || iv < 0 || icq < 0) return xr_plan_error(plan, "q/k/v/cu_seqlens_q are not bound");
  if (ibias >= 0) a->unsupported = "an elementwise bias tensor is not implemented";
  const xr_tensor_spec_t *q = plan->inputs[iq], *k = plan->inputs[ik], *v = plan->inputs[iv];
  int64_t *p = a->p;
  bool paged_k = k->rank == 4; /* [pages, page_size, Hk, D] */
  if (k->rank != 3 && !paged_k) return xr_plan_error(plan, "k: expected [total_k, Hk, D] or [pages, page, Hk, D]");
  if ((st = set_bshd(plan, a, q, k, v, true))) return st;
  if ((st = read_scale(plan, 9, "softmax_scale", p[XR_AP_head_dim], a))) return st;
  if ((st = bind_index(plan, a, XR_AT_CU_Q, icq, "cu_seqlens_q", XR_AP_cu_q_off, XR_AP_cu_q_64))) return st;
  p[XR_AP_batch] = plan->inputs[icq]->shape[0] - 1;
  if (p[XR_AP_batch] < 0) return xr_plan_error(plan, "cu_seqlens_q: empty");
  p[XR_AP_max_q] = max_q;
  p[XR_AP_max_k] = max_k;
  if (prefill) {
    if ((st = bind_index(plan, a, XR_AT_INDPTR, iindptr, "kv_indptr", XR_AP_indptr_off, XR_AP_indptr_64)) ||
        (st = bind_index(plan, a, XR_AT_TABLE, ipages, "kv_page_indices", XR_AP_table_off, XR_AP_table_64)))
      return st;
    p[XR_AP_paged] = 2;
    p[XR_AP_page_size] = paged_k ? k->shape[1] : 1;
    if (p[XR_AP_page_size] != 1)
      return xr_plan_error(plan, "k: pages of %lld tokens need the last page's length; only 1-token pages",
                           (long long)p[XR_AP_page_size]);
    p[XR_AP_k_sp] = k->strides[0];
    p[XR_AP_v_sp] = v->strides[0];
    p[XR_AP_k_ss] = p[XR_AP_v_ss] = 0;
  } else {
    if (ick < 0) return xr_plan_error(plan, "cu_seqlens_k is missing");
    if ((st = bind_index(plan, a, XR_AT_CU_K, ick, "cu_seqlens_k", XR_AP_cu_k_off, XR_AP_cu_k_64))) return st;
    if (paged_k) {
      if (itable < 0) return xr_plan_error(plan, "k is paged ([pages, page, Hk, D]) but block_table is missing");
      const xr_tensor_spec_t *t = plan->inputs[itable];
      if ((st = bind_index(plan, a, XR_AT_TABLE, itable, "block_table", XR_AP_table_off, XR_AP_table_64)))
        return st;
      if (t->rank != 2) return xr_plan_error(plan, "block_table: expected [batch, max_blocks]");
      p[XR_AP_paged] = 1;
      p[XR_AP_page_size] = k->shape[1];
      p[XR_AP_table_sb] = t->strides[0];
      p[XR_AP_table_sp] = t->strides[1];
      p[XR_AP_k_sp] = k->strides[0];
      p[XR_AP_v_sp] = v->strides[0];
    }
  }
  if (ialibi >= 0 && (st = set_alibi(plan, a, ialibi))) return st;
  if (softcap > 0) xr_attn_set_float(a, XR_AP_softcap_bits, softcap);
  a->t[XR_AT_Q] = iq, a->t[XR_AT_K] = ik, a->t[XR_AT_V] = iv;
  p[XR_AP_causal] = causal;
  set_windows(plan, a, wl, wr);
  add_flash_returns(plan, a, q, true, ret_lse, true);
  int64_t zero = 0, two = 2;
  add_return(plan, q->dtype, 1, &zero);                                        /* dropout p */
  a->zero_outputs[a->zero_count++] = add_return(plan, XR_DTYPE_I64, 1, &two);  /* rng_state */
  a->total_q_rows = q->shape[0];
  set_costs(plan, a, (double)q->shape[0] * (double)p[XR_AP_heads] * (double)max_k * (causal ? 0.5 : 1.0));
  return XR_OK;
}

/* The ragged op's positions, as SGLang's annotation records them: tensors only, no names, no
 * scalars (the softmax scale is then 1/sqrt(D)). */
enum {
  RAGGED_OUT, RAGGED_WORKSPACE, RAGGED_QUERY, RAGGED_K_CACHE, RAGGED_V_CACHE, RAGGED_INDPTR,
  RAGGED_PAGES, RAGGED_LAST_PAGE_LENS, RAGGED_ALIBI, RAGGED_K_SCALE, RAGGED_V_SCALE,
  RAGGED_ARGS
};

/* The context tokens the trace's hints give for the whole batch (decode and prefill), or -1. */
static int64_t hinted_context(const xr_op_t *op) {
  int64_t total = -1;
  for (size_t i = 0; i < op->hint_count; i++) {
    const xr_arg_t *h = &op->hints[i];
    if (h->name && h->value.kind == XR_VALUE_INT && h->value.as.i >= 0 &&
        (!strcmp(h->name, "decode_context_tokens") || !strcmp(h->name, "prefill_context_tokens")))
      total = (total < 0 ? 0 : total) + h->value.as.i;
  }
  return total;
}

/* sglang_profiler::attention_paged_attention_ragged(out!, workspace, query [B, H, D], key_cache
 * and value_cache [pages, page_size, Hk, D], kv_indptr [B + 1], kv_page_indices,
 * kv_last_page_lens, alibi_slopes, k_scale, v_scale, fp8_out_scale): one query token per
 * sequence attends the keys of its pages kv_page_indices[kv_indptr[b] .. kv_indptr[b + 1]).
 * Only one-token pages (SGLang's layout): longer ones would need kv_last_page_lens. The
 * workspace is AITER's scratch, which the replay's kernels do not use. */
static xr_status_t analyze_ragged(xr_op_plan_t *plan, xr_attn_problem_t *a) {
  int iout, iq, ik, iv, iindptr, ipages, ialibi;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, RAGGED_OUT, "out", true, &iout)) ||
      (st = xr_arg_tensor(plan, RAGGED_QUERY, "query", true, &iq)) ||
      (st = xr_arg_tensor(plan, RAGGED_K_CACHE, "key_cache", true, &ik)) ||
      (st = xr_arg_tensor(plan, RAGGED_V_CACHE, "value_cache", true, &iv)) ||
      (st = xr_arg_tensor(plan, RAGGED_INDPTR, "kv_indptr", true, &iindptr)) ||
      (st = xr_arg_tensor(plan, RAGGED_PAGES, "kv_page_indices", true, &ipages)) ||
      (st = xr_arg_tensor(plan, RAGGED_ALIBI, "alibi_slopes", false, &ialibi)))
    return st;
  if (iout < 0 || iq < 0 || ik < 0 || iv < 0 || iindptr < 0 || ipages < 0)
    return xr_plan_error(plan, "tensor arguments are not bound");
  const xr_tensor_spec_t *q = plan->inputs[iq], *k = plan->inputs[ik], *v = plan->inputs[iv];
  const xr_tensor_spec_t *out = plan->inputs[iout];
  if (k->rank != 4) return xr_plan_error(plan, "key_cache: expected [pages, page_size, Hk, D]");
  if ((st = set_bshd(plan, a, q, k, v, true))) return st;
  if (k->shape[1] != 1)
    return xr_plan_error(plan, "key_cache: pages of %lld tokens need kv_last_page_lens; only "
                               "one-token pages", (long long)k->shape[1]);
  if (out->rank != 3 || out->dtype != q->dtype || out->shape[0] != q->shape[0] ||
      out->shape[1] != q->shape[1] || out->shape[2] != a->p[XR_AP_head_dim_v])
    return xr_plan_error(plan, "out: expected a %s tensor shaped like the query", xr_dtype_name(q->dtype));
  int64_t *p = a->p;
  if ((st = read_scale(plan, -1, "scale", p[XR_AP_head_dim], a)) ||
      (st = bind_index(plan, a, XR_AT_INDPTR, iindptr, "kv_indptr", XR_AP_indptr_off, XR_AP_indptr_64)) ||
      (st = bind_index(plan, a, XR_AT_TABLE, ipages, "kv_page_indices", XR_AP_table_off, XR_AP_table_64)))
    return st;
  p[XR_AP_batch] = plan->inputs[iindptr]->shape[0] - 1;
  if (p[XR_AP_batch] < 0 || q->shape[0] < p[XR_AP_batch])
    return xr_plan_error(plan, "kv_indptr: %lld sequences, the query has %lld tokens",
                         (long long)p[XR_AP_batch], (long long)q->shape[0]);
  /* One query token per sequence: rows by sequence, not by token. */
  p[XR_AP_q_sb] = q->strides[0], p[XR_AP_q_ss] = 0;
  p[XR_AP_o_off] = out->storage_offset;
  set_rows(p, XR_AP_o_off, out->strides, 0, -1, 1, 2);
  a->t[XR_AT_OUT] = iout;
  plan->input_written[iout] = true;
  p[XR_AP_paged] = 2;
  p[XR_AP_page_size] = 1;
  p[XR_AP_k_sp] = k->strides[0], p[XR_AP_v_sp] = v->strides[0];
  p[XR_AP_k_ss] = p[XR_AP_v_ss] = 0;
  p[XR_AP_max_q] = 1;
  /* Keys per sequence, for the work counted: the hints' context split evenly, else the page
   * list (or the cache, if smaller) split evenly; a run reads the lengths kv_indptr holds. */
  int64_t keys = hinted_context(plan->op), batch = p[XR_AP_batch] ? p[XR_AP_batch] : 1;
  if (keys < 0) {
    keys = plan->inputs[ipages]->shape[0];
    if (k->shape[0] < keys) keys = k->shape[0];
  }
  p[XR_AP_max_k] = (keys + batch - 1) / batch;
  if (ialibi >= 0 && (st = set_alibi(plan, a, ialibi))) return st;
  a->t[XR_AT_Q] = iq, a->t[XR_AT_K] = ik, a->t[XR_AT_V] = iv;
  a->total_q_rows = p[XR_AP_batch];
  set_costs(plan, a, (double)p[XR_AP_batch] * (double)p[XR_AP_heads] * (double)p[XR_AP_max_k]);
  return XR_OK;
}

/* A copy of tensor argument `arg` of `c` (in `scratch`) whose dim 0 holds `rows`. */
static xr_status_t resize_rows(xr_arena_t *scratch, xr_op_t *c, int arg, int64_t rows) {
  const xr_tensor_spec_t *t = c->args[arg].value.as.tensor;
  xr_value_t v;
  xr_status_t st = xr_value_make_tensor(scratch, &v, t->rank);
  if (st != XR_OK) return st;
  xr_tensor_spec_t *r = v.as.tensor;
  memcpy(r->shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
  memcpy(r->strides, t->strides, sizeof(int64_t) * (size_t)t->rank);
  r->shape[0] = rows;
  r->dtype = t->dtype;
  r->init = t->init;
  r->storage_offset = t->storage_offset;
  c->args[arg].value = v;
  return XR_OK;
}

static bool bare_tensor(const xr_op_t *op, int arg) {
  const xr_value_t *v = &op->args[arg].value;
  return v->kind == XR_VALUE_TENSOR && v->as.tensor->rank >= 1 && !v->as.tensor->data &&
         !v->as.tensor->data_file;
}

/* The ragged op's workspace is AITER's scratch, which no replay kernel reads: one byte. */
static xr_status_t complete(const xr_op_t *op, xr_arena_t *scratch, xr_op_t **out_op) {
  *out_op = NULL;
  if (strcmp(op->name, RAGGED) != 0 || op->arg_count <= RAGGED_WORKSPACE ||
      !bare_tensor(op, RAGGED_WORKSPACE) ||
      op->args[RAGGED_WORKSPACE].value.as.tensor->shape[0] <= 1)
    return XR_OK;
  xr_op_t *c = xr_arena_alloc(scratch, sizeof *c);
  if (!c) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory completing %s", op->name);
  *c = *op;
  c->args = xr_arena_alloc(scratch, sizeof *c->args * op->arg_count);
  if (!c->args) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory completing %s", op->name);
  memcpy(c->args, op->args, sizeof *c->args * op->arg_count);
  xr_status_t st = resize_rows(scratch, c, RAGGED_WORKSPACE, 1);
  if (st == XR_OK) *out_op = c;
  return st;
}

/* --cache-blocks (xr_kernel_compact) for the ragged op, when the trace's hints give the batch's
 * context tokens and the bundle holds no page indices: the caches hold those tokens' pages and
 * one more (no sequence's, poisoned), the page list its used entries. The kernel reads as many
 * pages as the recorded one did, from a pool of their size instead of the whole cache. */
static xr_status_t compact(const xr_op_plan_t *plan, xr_arena_t *arena, xr_op_t **out_op) {
  if (strcmp(plan->op->name, RAGGED) != 0) return XR_OK;
  const xr_attn_problem_t *a = plan->problem;
  int k = a->t[XR_AT_K], v = a->t[XR_AT_V], list = a->t[XR_AT_TABLE], indptr = a->t[XR_AT_INDPTR];
  int64_t context = hinted_context(plan->op), pages = plan->inputs[k]->shape[0];
  for (int i = 0; i < 2; i++) {
    const xr_tensor_spec_t *t = plan->inputs[i ? list : indptr];
    if (t->data || t->data_file) return XR_OK;
  }
  if (context < 0 || context + 1 >= pages || plan->inputs[list]->shape[0] < context) return XR_OK;
  int64_t *dim0 = xr_arena_alloc(arena, sizeof(int64_t) * plan->input_count);
  if (!dim0) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < plan->input_count; i++) dim0[i] = -1;
  dim0[k] = dim0[v] = context + 1;
  dim0[list] = context > 0 ? context : 1;
  xr_status_t st = xr_plan_op_resized(plan, dim0, arena, out_op);
  return st == XR_OK ? xr_op_hint_int(arena, *out_op, "recorded_cache_blocks", pages) : st;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  xr_attn_problem_t *a = malloc(sizeof *a);
  if (!a) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", plan->op->name);
  xr_attn_init_params(a);
  plan->problem = a;
  const char *name = plan->op->name;
  if (!strncmp(name, "aiter::", 7)) return analyze_aiter(plan, a);
  if (!strcmp(name, RAGGED)) return analyze_ragged(plan, a);
  if (!strcmp(name, "aten::_flash_attention_forward")) return analyze_flash_forward(plan, a);
  return analyze_sdpa(plan, a);
}

/* ------------------------------------------------------------------------------------------ */
/* shared by the implementations                                                              */

xr_status_t xr_attn_supported(const xr_op_plan_t *plan) {
  const xr_attn_problem_t *a = plan->problem;
  if (a->unsupported) return xr_error(XR_UNIMPLEMENTED, "%s: %s", plan->op->name, a->unsupported);
  return XR_OK;
}

xr_status_t xr_attn_host_bind(const xr_attn_problem_t *a, const xr_tensor_t *tensors,
                              xr_attn_host_t *h) {
  memset(h, 0, sizeof *h);
  for (int r = 0; r < XR_AT_COUNT; r++) {
    if (a->t[r] < 0) continue;
    void *base;
    xr_status_t st = xr_tensor_host(&tensors[a->t[r]], &base);
    if (st != XR_OK) return st;
    h->base[r] = base;
  }
  h->out = (void *)h->base[XR_AT_OUT];
  h->lse = (void *)h->base[XR_AT_LSE];
  h->exp_sums = (void *)h->base[XR_AT_EXP_SUMS];
  h->max_logits = (void *)h->base[XR_AT_MAX_LOGITS];
  h->tmp_out = (void *)h->base[XR_AT_TMP_OUT];
  h->q_scale = xr_dtype_is_fp8(a->q_dtype) ? xr_attn_float(a, XR_AP_q_scale_bits) : 1.0f;
  h->o_inv_scale = 1.0f, h->o_max = INFINITY;
  return XR_OK;
}

xr_status_t xr_cache_host_bind(const xr_cache_problem_t *c, const xr_tensor_t *tensors, xr_cache_host_t *h) {
  void *p[7] = {0};
  const int idx[7] = {c->key, c->value, c->slots, c->k_scale, c->v_scale, c->key_cache, c->value_cache};
  for (int i = 0; i < 7; i++) {
    xr_status_t st = idx[i] >= 0 ? xr_tensor_host(&tensors[idx[i]], &p[i]) : XR_OK;
    if (st != XR_OK) return st;
  }
  *h = (xr_cache_host_t){p[0], p[1], p[2], p[3], p[4], p[5], p[6]};
  return XR_OK;
}

void xr_attn_host_begin(const xr_attn_problem_t *a, xr_attn_host_t *h) {
  if (a->p[XR_AP_o_scale_off] < 0) return;
  h->o_inv_scale = 1.0f / ((const float *)h->base[XR_AT_O_SCALE])[a->p[XR_AP_o_scale_off]];
  h->o_max = xr_attn_fp8_max(a->o_dtype);
}

void xr_attn_zero_host_outputs(const xr_attn_problem_t *a, const xr_tensor_t *tensors) {
  for (int i = 0; i < a->zero_count; i++) {
    void *base;
    if (xr_tensor_host(&tensors[a->zero_outputs[i]], &base) == XR_OK && base)
      memset(base, 0, xr_hal_buffer_size(tensors[a->zero_outputs[i]].buffer));
  }
}

/* ------------------------------------------------------------------------------------------ */
/* custom initializers                                                                         */

/* Variable-length attention (aten::_flash_attention_forward with cum_seq_q/k,
 * aiter::mha_varlen_fwd, aiter::mha_batch_prefill): the packed query and key tokens split
 * evenly over the sequences, each at most max_seqlen; seqused_k keeps three quarters of each
 * sequence's keys; page indices are distinct random pages. Key/value rows no sequence uses are
 * NaN. */
static xr_status_t init_varlen_attention(xr_init_context_t *c) {
  bool aiter = !strncmp(c->op->name, "aiter::", 7);
  int cq = xr_init_input(c, aiter ? "cu_seqlens_q" : "cum_seq_q");
  int ck = xr_init_input(c, aiter ? "cu_seqlens_k" : "cum_seq_k");
  int q = xr_init_input(c, aiter ? "q" : "query"), k = xr_init_input(c, aiter ? "k" : "key");
  int v = xr_init_input(c, aiter ? "v" : "value"), used = xr_init_input(c, "seqused_k");
  int indptr = xr_init_input(c, "kv_indptr"), pages = xr_init_input(c, "kv_page_indices");
  if (cq < 0 || q < 0 || k < 0) return XR_OK; /* dense: the shapes say it all */
  int64_t batch = c->plan->inputs[cq]->shape[0] - 1;
  int64_t max_q = xr_init_int_arg(c, aiter ? "max_seqlen_q" : "max_q", 0);
  int64_t max_k = xr_init_int_arg(c, aiter ? "max_seqlen_k" : "max_k", 0);
  const xr_tensor_spec_t *kt = c->plan->inputs[k];
  int64_t total_k = kt->shape[0];
  if (batch < 1) return XR_OK;
  if (!c->has_data[cq]) xr_init_even_split(c, cq, batch, c->plan->inputs[q]->shape[0], max_q);
  bool *live = calloc((size_t)(total_k + 1), sizeof *live);
  if (!live) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  if (indptr >= 0 && pages >= 0) { /* batch prefill: one-token pages */
    int64_t npages = c->plan->inputs[pages]->shape[0];
    if (!c->has_data[indptr]) xr_init_even_split(c, indptr, batch, npages < total_k ? npages : total_k, max_k);
    if (!c->has_data[pages]) {
      int64_t *perm = malloc(sizeof(int64_t) * (size_t)(total_k ? total_k : 1));
      if (!perm) {
        free(live);
        return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
      }
      uint64_t s = c->seed;
      xr_init_shuffle(perm, total_k, total_k, &s);
      for (int64_t i = 0; i < npages; i++) xr_init_store(c, pages, i, (double)(total_k ? perm[i % total_k] : 0));
      free(perm);
    }
    for (int64_t i = xr_init_load(c, indptr, 0); i < xr_init_load(c, indptr, batch); i++) {
      int64_t page = xr_init_load(c, pages, i);
      if (page >= 0 && page < total_k) live[page] = true;
    }
    xr_init_describe(c, "cu_seqlens_q and kv_indptr even split, distinct random pages");
  } else if (ck >= 0 && kt->rank == 3) {
    if (!c->has_data[ck]) xr_init_even_split(c, ck, batch, total_k, max_k);
    for (int64_t b = 0; b < batch; b++) {
      int64_t start = xr_init_load(c, ck, b), len = xr_init_load(c, ck, b + 1) - start;
      if (used >= 0) {
        if (!c->has_data[used]) xr_init_store(c, used, b, (double)(len - len / 4));
        len = xr_init_load(c, used, b);
      }
      for (int64_t t = start; t < start + len && t < total_k; t++)
        if (t >= 0) live[t] = true;
    }
    xr_init_describe(c, used >= 0 ? "cumulative lengths even split, seqused_k 3/4 of each sequence"
                                : "cumulative lengths even split");
  } else {
    free(live);
    return XR_OK;
  }
  xr_init_poison_dead_cells(c, k, 0, -1, 1, live);
  xr_init_poison_dead_cells(c, v, 0, -1, 1, live);
  free(live);
  return XR_OK;
}

/* The ragged op: the context tokens (the hints', else as many as the page list and the cache
 * allow) split evenly over the sequences in kv_indptr; distinct random pages; every last page
 * one token long. Pages no sequence uses are NaN. */
static xr_status_t init_ragged(xr_init_context_t *c) {
  const xr_attn_problem_t *a = c->plan->problem;
  int indptr = a->t[XR_AT_INDPTR], list = a->t[XR_AT_TABLE], k = a->t[XR_AT_K], last = -1;
  xr_arg_tensor(c->plan, RAGGED_LAST_PAGE_LENS, "kv_last_page_lens", false, &last);
  int64_t batch = a->p[XR_AP_batch], pages = c->plan->inputs[k]->shape[0];
  int64_t entries = c->plan->inputs[list]->shape[0], total = hinted_context(c->op);
  int64_t most = entries < pages ? entries : pages;
  bool hinted = total >= 0;
  if (!hinted || total > most) total = most;
  char what[256];
  if (!c->has_data[indptr]) {
    xr_init_even_split(c, indptr, batch, total, 0);
    snprintf(what, sizeof what, "kv_indptr even split of %lld context tokens (%s)",
             (long long)total, hinted ? "the trace's hints" : "no hints: the page list");
    xr_init_describe(c, what);
  }
  int64_t used = batch > 0 ? xr_init_load(c, indptr, batch) : 0;
  if (!c->has_data[list]) {
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)(pages ? pages : 1));
    if (!perm) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
    uint64_t s = c->seed;
    xr_init_shuffle(perm, pages, used < pages ? used : pages, &s);
    for (int64_t i = 0; i < entries; i++)
      xr_init_store(c, list, i, (double)(i < used && pages ? perm[i % pages] : 0));
    free(perm);
    xr_init_describe(c, "distinct random pages");
  }
  if (last >= 0 && !c->has_data[last])
    for (int64_t i = 0; i < c->plan->inputs[last]->shape[0]; i++) xr_init_store(c, last, i, 1);
  xr_init_describe_compact(c, pages, "pages");
  bool *live = calloc((size_t)(pages + 1), sizeof *live);
  if (!live) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  for (int64_t i = xr_init_load(c, indptr, 0); i < used && i < entries; i++) {
    int64_t page = xr_init_load(c, list, i);
    if (page >= 0 && page < pages) live[page] = true;
  }
  xr_init_poison_dead_cells(c, k, 0, -1, 1, live);
  xr_init_poison_dead_cells(c, a->t[XR_AT_V], 0, -1, 1, live);
  free(live);
  return XR_OK;
}

static const struct xr_op_initializer attention_initializers[] = {
    {RAGGED, init_ragged},
    {"aten::_flash_attention_forward", init_varlen_attention},
    {"aiter::mha_varlen_fwd", init_varlen_attention},
    {"aiter::mha_batch_prefill", init_varlen_attention},
    {NULL, NULL},
};

static const xr_kernel_impl_t *const attention_impls[] = {
    &xr_attn_cpu_impl,
    &xr_attn_opencl_impl,
    &xr_attn_gpu_impl,
    &xr_attn_ref_impl,
    NULL,
};

const xr_op_family_t xr_family_attention = {
    .name = "attention",
    .op_names = attention_ops,
    .analyze = analyze,
    .free_problem = free,
    .complete = complete,
    .compact = compact,
    .impls = attention_impls,
    .initializers = attention_initializers,
};

