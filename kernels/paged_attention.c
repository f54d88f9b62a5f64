/* The paged-attention family: vLLM's decode kernels over a paged KV cache
 * (_C::paged_attention_v1, _C::paged_attention_v2 with its split-K partitions,
 * _rocm_C::paged_attention) and the ops that fill that cache (_C_cache_ops::reshape_and_cache,
 * reshape_and_cache_flash; the kv_cache family, which also has SGLang's sglang::store_cache).
 * Conventions from vLLM's csrc/attention and csrc/cache_kernels.cu:
 * - query and out [num_seqs, num_heads, head_size] (_rocm_C with query_start_loc: packed
 *   [num_tokens, ...], each sequence's queries causal against its last tokens);
 * - key_cache [num_blocks, kv_heads, head_size / x, block_size, x], x = 16 / element size;
 *   value_cache [num_blocks, kv_heads, head_size, block_size]; the flash cache layout is
 *   [num_blocks, block_size, kv_heads, head_size];
 * - logit = scale * q.k + alibi_slope * (t - seq_len + 1); tokens t >= seq_lens[s] never read;
 * - kv_cache_dtype "fp8"/"fp8_e4m3"/"fp8_e5m2": the cache holds fp8 bytes, dequantised as
 *   value * k_scale (v_scale); written as fp8(value / scale). e4m3 is OCP e4m3fn for the CUDA
 *   _C ops and e4m3fnuz for _rocm_C (MI300), unless the cache tensor's dtype says otherwise;
 * - v2: partitions of 512 tokens; per partition max_logits (max scaled logit), exp_sums
 *   (sum of exp(logit - max)) and tmp_out (the partition's normalised output, in the output
 *   dtype); out combines the partitions; partitions past a sequence stay untouched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/initializer.h"

static const char *const paged_ops[] = {
    "_C::paged_attention_v1",
    "_C::paged_attention_v2",
    "_rocm_C::paged_attention",
    NULL,
};

static const char *const cache_ops[] = {
    "_C_cache_ops::reshape_and_cache",
    "_C_cache_ops::reshape_and_cache_flash",
    "sglang::store_cache",
    NULL,
};

/* The element format of a cache tensor under kv_cache_dtype. */
static xr_status_t cache_format(const xr_op_plan_t *plan, xr_dtype_t tensor_dtype, const char *kv_dtype,
                                bool rocm, xr_dtype_t data_dtype, xr_dtype_t *out) {
  bool fp8 = tensor_dtype == XR_DTYPE_F8E4M3FN || tensor_dtype == XR_DTYPE_F8E5M2 ||
             tensor_dtype == XR_DTYPE_F8E4M3FNUZ || tensor_dtype == XR_DTYPE_F8E5M2FNUZ;
  if (!strcmp(kv_dtype, "auto")) {
    if (tensor_dtype != data_dtype)
      return xr_plan_error(plan, "kv_cache_dtype 'auto' needs a %s cache, got %s", xr_dtype_name(data_dtype),
                           xr_dtype_name(tensor_dtype));
    *out = tensor_dtype;
    return XR_OK;
  }
  bool e5m2 = !strcmp(kv_dtype, "fp8_e5m2");
  if (!e5m2 && strcmp(kv_dtype, "fp8") && strcmp(kv_dtype, "fp8_e4m3"))
    return xr_plan_error(plan, "kv_cache_dtype '%s': expected auto, fp8, fp8_e4m3 or fp8_e5m2", kv_dtype);
  if (fp8) {
    *out = tensor_dtype;
  } else if (tensor_dtype == XR_DTYPE_U8 || tensor_dtype == XR_DTYPE_I8) {
    *out = e5m2 ? (rocm ? XR_DTYPE_F8E5M2FNUZ : XR_DTYPE_F8E5M2)
                : (rocm ? XR_DTYPE_F8E4M3FNUZ : XR_DTYPE_F8E4M3FN);
  } else {
    return xr_plan_error(plan, "kv_cache_dtype '%s' needs a uint8 or fp8 cache, got %s", kv_dtype,
                         xr_dtype_name(tensor_dtype));
  }
  return XR_OK;
}

/* k_scale / v_scale: a float32 tensor read at run time (vLLM >= 0.6.4) or a float. */
static xr_status_t read_kv_scale(xr_op_plan_t *plan, int position, const char *name, int *out_index,
                                 int64_t *out_off, double *out_value) {
  const xr_value_t *v = xr_op_arg(plan->op, position, name);
  *out_index = -1;
  if (v && v->kind == XR_VALUE_TENSOR) {
    xr_status_t st = xr_arg_tensor(plan, position, name, true, out_index);
    if (st != XR_OK) return st;
    const xr_tensor_spec_t *t = plan->inputs[*out_index];
    if (t->dtype != XR_DTYPE_F32 || xr_spec_numel(t) < 1)
      return xr_plan_error(plan, "%s: expected a float32 tensor with one element", name);
    *out_off = t->storage_offset;
    return XR_OK;
  }
  return xr_arg_double(plan->op, position, name, false, out_value);
}

static xr_status_t bind_int(xr_op_plan_t *plan, int index, const char *name, int rank) {
  const xr_tensor_spec_t *t = plan->inputs[index];
  if ((t->dtype != XR_DTYPE_I32 && t->dtype != XR_DTYPE_I64) || t->rank != rank)
    return xr_plan_error(plan, "%s: expected a %d-D int32 or int64 tensor", name, rank);
  return XR_OK;
}

/* Work and traffic of one call whose sequences hold lens[i] keys and qlens[i] queries (NULL:
 * one each); lens NULL: every sequence at max_seq_len, the estimate a plan makes before the
 * initializer or the bundle's data settle them. FLOPs: 2 x 2 x head_size per (query, key)
 * pair a causal mask allows, per head. Bytes: the cache the block tables reference, not the
 * whole cache: each sequence's keys (at most what its row of block_tables holds), keys and
 * values of every kv head, at most the tokens the cache holds (a block sequences share is one
 * block of memory); the block-table entries those tokens use, seq_lens and the other small
 * inputs bound; the queries read and the outputs written; v2 also writes, then reads back, its
 * partitions' tmp_out, exp_sums and max_logits. */
static void paged_costs(const xr_op_plan_t *plan, const int64_t *lens, const int64_t *qlens,
                        double *out_flops, double *out_bytes) {
  const xr_attn_problem_t *a = plan->problem;
  const int64_t *p = a->p;
  const xr_tensor_spec_t *kc = plan->inputs[a->t[XR_AT_K]], *tab = plan->inputs[a->t[XR_AT_TABLE]];
  int64_t seqs = p[XR_AP_batch], heads = p[XR_AP_heads], head = p[XR_AP_head_dim];
  int64_t block_size = p[XR_AP_page_size], cap = tab->shape[1] * block_size;
  double rows = (double)a->total_q_rows * (double)heads, pairs = 0, tokens = 0, entries = 0;
  double parts = 0;
  for (int64_t i = 0; i < seqs; i++) {
    int64_t len = lens ? lens[i] : p[XR_AP_max_k], q = qlens ? qlens[i] : 1;
    if (len < 0) len = 0; /* a bundle's own data may hold anything */
    if (q > len) q = len;
    if (q < 0) q = 0;
    /* Before the lengths are known, each query row is held against max_seq_len keys. */
    pairs += lens ? (double)q * (double)(len - q) + (double)q * (double)(q + 1) / 2 : 0;
    int64_t held = len < cap ? len : cap;
    tokens += (double)held;
    entries += (double)((held + block_size - 1) / block_size);
    parts += (double)((len + 511) / 512);
  }
  if (!lens) pairs = (double)a->total_q_rows * (double)p[XR_AP_max_k];
  *out_flops = 2.0 * pairs * (double)heads * (double)(2 * head);
  if (tokens > (double)(kc->shape[0] * block_size)) tokens = (double)(kc->shape[0] * block_size);
  double small = entries * (double)xr_dtype_size(tab->dtype);
  const int others[] = {a->t[XR_AT_LENS], a->t[XR_AT_CU_Q], a->t[XR_AT_ALIBI],
                        a->t[XR_AT_K_SCALE], a->t[XR_AT_V_SCALE]};
  for (size_t i = 0; i < sizeof others / sizeof *others; i++)
    if (others[i] >= 0)
      small += (double)xr_spec_numel(plan->inputs[others[i]]) *
               (double)xr_dtype_size(plan->inputs[others[i]]->dtype);
  double qsize = (double)xr_dtype_size(a->q_dtype);
  *out_bytes = 2.0 * tokens * (double)p[XR_AP_kv_heads] * (double)head *
                   (double)xr_dtype_size(kc->dtype) +
               small + 2.0 * rows * (double)head * qsize;
  if (p[XR_AP_part_count] > 0) /* v2's partitions */
    *out_bytes += 2.0 * (double)heads * parts * ((double)head * qsize + 4.0 + 4.0);
}

xr_status_t xr_attn_analyze_paged(xr_op_plan_t *plan) {
  const xr_op_t *op = plan->op;
  bool v2 = !strcmp(op->name, "_C::paged_attention_v2");
  bool rocm = !strcmp(op->name, "_rocm_C::paged_attention");
  xr_attn_problem_t *a = plan->problem;
  int64_t *p = a->p;
  int o = (v2 || rocm) ? 3 : 0; /* exp_sums, max_logits, tmp_out come first in v2 and rocm */
  int r = rocm ? 1 : 0;         /* rocm has query_start_loc after seq_lens */
  int iout, iq, ikc, ivc, itab, ilens, iqsl = -1, ialibi = -1, ies = -1, iml = -1, ito = -1, iks, ivs, ifp8 = -1;
  int64_t num_kv_heads = 0, block_size = 0, max_seq_len = 0, vert_stride = 0;
  double scale = 0, ks = 1, vs = 1;
  const char *kv_dtype = "auto";
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "out", true, &iout)) ||
      (v2 && ((st = xr_arg_tensor(plan, 1, "exp_sums", true, &ies)) ||
              (st = xr_arg_tensor(plan, 2, "max_logits", true, &iml)) ||
              (st = xr_arg_tensor(plan, 3, "tmp_out", true, &ito)))) ||
      (st = xr_arg_tensor(plan, 1 + o, "query", true, &iq)) ||
      (st = xr_arg_tensor(plan, 2 + o, "key_cache", true, &ikc)) ||
      (st = xr_arg_tensor(plan, 3 + o, "value_cache", true, &ivc)) ||
      (st = xr_arg_int(op, 4 + o, "num_kv_heads", true, &num_kv_heads)) ||
      (st = xr_arg_double(op, 5 + o, "scale", true, &scale)) ||
      (st = xr_arg_tensor(plan, 6 + o, "block_tables", true, &itab)) ||
      (st = xr_arg_tensor(plan, 7 + o, "seq_lens", true, &ilens)) ||
      (rocm && (st = xr_arg_tensor(plan, 8 + o, "query_start_loc", false, &iqsl))) ||
      (st = xr_arg_int(op, 8 + o + r, "block_size", true, &block_size)) ||
      (st = xr_arg_int(op, 9 + o + r, "max_seq_len", true, &max_seq_len)) ||
      (st = xr_arg_tensor(plan, 10 + o + r, "alibi_slopes", false, &ialibi)) ||
      (st = xr_arg_string(op, 11 + o + r, "kv_cache_dtype", false, &kv_dtype)) ||
      (st = read_kv_scale(plan, 12 + o + r, "k_scale", &iks, &p[XR_AP_k_scale_off], &ks)) ||
      (st = read_kv_scale(plan, 13 + o + r, "v_scale", &ivs, &p[XR_AP_v_scale_off], &vs)) ||
      (!rocm && (st = xr_arg_int(op, 16 + o, "blocksparse_vert_stride", false, &vert_stride))) ||
      (rocm && (st = xr_arg_tensor(plan, 14 + o + r, "fp8_out_scale", false, &ifp8))))
    return st;
  if (iout < 0 || iq < 0 || ikc < 0 || ivc < 0 || itab < 0 || ilens < 0)
    return xr_plan_error(plan, "tensor arguments are not bound");
  if (vert_stride > 1) a->unsupported = "block-sparse attention (blocksparse_vert_stride > 1) is not implemented";
  if (ifp8 >= 0) a->unsupported = "fp8 output (fp8_out_scale) is not implemented";
  const xr_tensor_spec_t *q = plan->inputs[iq], *out = plan->inputs[iout];
  const xr_tensor_spec_t *kc = plan->inputs[ikc], *vc = plan->inputs[ivc], *tab = plan->inputs[itab];
  if (q->rank != 3 || out->rank != 3 || kc->rank != 5 || vc->rank != 4)
    return xr_plan_error(plan, "expected query/out [seqs, heads, head_size], key_cache 5-D, value_cache 4-D "
                               "(got %d-D, %d-D, %d-D, %d-D)", q->rank, out->rank, kc->rank, vc->rank);
  if (q->dtype != XR_DTYPE_F32 && q->dtype != XR_DTYPE_F16 && q->dtype != XR_DTYPE_BF16)
    return xr_plan_error(plan, "query: expected a float32, float16 or bfloat16 tensor, got %s", xr_dtype_name(q->dtype));
  if (out->dtype != q->dtype) return xr_plan_error(plan, "out must have the query's dtype");
  for (int d = 0; d < 3; d++)
    if (out->shape[d] != q->shape[d] && !(d == 2 && out->shape[2] == vc->shape[2]))
      return xr_plan_error(plan, "out: dimension %d (%lld) differs from the query's (%lld)", d,
                           (long long)out->shape[d], (long long)q->shape[d]);
  if ((st = bind_int(plan, itab, "block_tables", 2)) || (st = bind_int(plan, ilens, "seq_lens", 1))) return st;
  xr_dtype_t kfmt, vfmt;
  if ((st = cache_format(plan, kc->dtype, kv_dtype, rocm, q->dtype, &kfmt)) ||
      (st = cache_format(plan, vc->dtype, kv_dtype, rocm, q->dtype, &vfmt)))
    return st;
  if (kfmt != vfmt) return xr_plan_error(plan, "key and value caches hold different formats");
  int64_t heads = q->shape[1], head = q->shape[2], x = kc->shape[4];
  if (num_kv_heads < 1 || heads % num_kv_heads)
    return xr_plan_error(plan, "num_kv_heads %lld does not divide the query's %lld heads", (long long)num_kv_heads,
                         (long long)heads);
  if (kc->shape[1] != num_kv_heads || vc->shape[1] != num_kv_heads || kc->shape[2] * x != head ||
      kc->shape[3] != block_size || vc->shape[2] != head || vc->shape[3] != block_size ||
      vc->shape[0] != kc->shape[0])
    return xr_plan_error(plan, "key_cache [%lld, %lld, %lld, %lld, %lld] / value_cache do not match "
                               "num_kv_heads %lld, head_size %lld, block_size %lld",
                         (long long)kc->shape[0], (long long)kc->shape[1], (long long)kc->shape[2],
                         (long long)kc->shape[3], (long long)x, (long long)num_kv_heads, (long long)head,
                         (long long)block_size);
  if (block_size < 1) return xr_plan_error(plan, "block_size must be positive");
  p[XR_AP_heads] = heads;
  p[XR_AP_kv_heads] = num_kv_heads;
  p[XR_AP_group] = heads / num_kv_heads;
  p[XR_AP_head_dim] = p[XR_AP_head_dim_v] = head;
  p[XR_AP_batch] = plan->inputs[ilens]->shape[0];
  p[XR_AP_max_k] = max_seq_len;
  if (tab->shape[0] < p[XR_AP_batch]) return xr_plan_error(plan, "block_tables has fewer rows than seq_lens");
  a->q_dtype = a->o_dtype = q->dtype;
  a->kv_dtype = kfmt;
  p[XR_AP_kv_fp8] = xr_dtype_is_fp8(kfmt);
  a->t[XR_AT_Q] = iq, a->t[XR_AT_K] = ikc, a->t[XR_AT_V] = ivc, a->t[XR_AT_OUT] = iout;
  a->t[XR_AT_TABLE] = itab, a->t[XR_AT_LENS] = ilens;
  p[XR_AP_q_off] = q->storage_offset, p[XR_AP_o_off] = out->storage_offset;
  p[XR_AP_k_off] = kc->storage_offset, p[XR_AP_v_off] = vc->storage_offset;
  if (iqsl >= 0) { /* packed queries, causal against the sequence's last tokens */
    if ((st = bind_int(plan, iqsl, "query_start_loc", 1))) return st;
    a->t[XR_AT_CU_Q] = iqsl;
    p[XR_AP_cu_q_off] = plan->inputs[iqsl]->storage_offset;
    p[XR_AP_cu_q_64] = plan->inputs[iqsl]->dtype == XR_DTYPE_I64;
    p[XR_AP_max_q] = q->shape[0];
    p[XR_AP_q_sb] = 0, p[XR_AP_q_ss] = q->strides[0];
    p[XR_AP_o_sb] = 0, p[XR_AP_o_ss] = out->strides[0];
    a->total_q_rows = q->shape[0];
  } else {
    if (q->shape[0] < p[XR_AP_batch]) return xr_plan_error(plan, "query has fewer rows than seq_lens");
    p[XR_AP_max_q] = 1;
    p[XR_AP_q_sb] = q->strides[0], p[XR_AP_o_sb] = out->strides[0];
    a->total_q_rows = p[XR_AP_batch];
  }
  p[XR_AP_q_sh] = q->strides[1], p[XR_AP_q_sd] = q->strides[2];
  p[XR_AP_o_sh] = out->strides[1], p[XR_AP_o_sd] = out->strides[2];
  p[XR_AP_k_sp] = kc->strides[0], p[XR_AP_k_sh] = kc->strides[1], p[XR_AP_k_sdx] = kc->strides[2];
  p[XR_AP_k_ss] = kc->strides[3], p[XR_AP_k_sd] = kc->strides[4], p[XR_AP_k_x] = x;
  p[XR_AP_v_sp] = vc->strides[0], p[XR_AP_v_sh] = vc->strides[1], p[XR_AP_v_sd] = vc->strides[2];
  p[XR_AP_v_ss] = vc->strides[3];
  p[XR_AP_lens_off] = plan->inputs[ilens]->storage_offset;
  p[XR_AP_lens_64] = plan->inputs[ilens]->dtype == XR_DTYPE_I64;
  p[XR_AP_paged] = 1;
  p[XR_AP_page_size] = block_size;
  p[XR_AP_table_off] = tab->storage_offset;
  p[XR_AP_table_64] = tab->dtype == XR_DTYPE_I64;
  p[XR_AP_table_sb] = tab->strides[0];
  p[XR_AP_table_sp] = tab->strides[1];
  p[XR_AP_causal] = p[XR_AP_bottom_right] = 1;
  xr_attn_set_float(a, XR_AP_scale_bits, scale);
  if (p[XR_AP_kv_fp8]) {
    a->t[XR_AT_K_SCALE] = iks, a->t[XR_AT_V_SCALE] = ivs;
    if (iks < 0) p[XR_AP_k_scale_off] = -1;
    if (ivs < 0) p[XR_AP_v_scale_off] = -1;
    xr_attn_set_float(a, XR_AP_k_scale_bits, ks);
    xr_attn_set_float(a, XR_AP_v_scale_bits, vs);
  } else {
    p[XR_AP_k_scale_off] = p[XR_AP_v_scale_off] = -1;
  }
  if (ialibi >= 0) {
    const xr_tensor_spec_t *s = plan->inputs[ialibi];
    if (s->rank != 1 || s->shape[0] != heads || !xr_dtype_is_floating(s->dtype))
      return xr_plan_error(plan, "alibi_slopes: expected a float [num_heads] tensor");
    a->t[XR_AT_ALIBI] = ialibi;
    p[XR_AP_alibi_off] = s->storage_offset, p[XR_AP_alibi_dtype] = s->dtype;
    p[XR_AP_alibi_sh] = s->strides[0], p[XR_AP_alibi_sb] = 0;
  }
  if (v2) {
    const xr_tensor_spec_t *es = plan->inputs[ies], *ml = plan->inputs[iml], *to = plan->inputs[ito];
    int64_t parts = es->rank == 3 ? es->shape[2] : 0;
    if (es->rank != 3 || ml->rank != 3 || to->rank != 4 || es->dtype != XR_DTYPE_F32 ||
        ml->dtype != XR_DTYPE_F32 || to->dtype != q->dtype || ml->shape[2] != parts ||
        to->shape[2] != parts || to->shape[3] != head || es->shape[1] != heads)
      return xr_plan_error(plan, "exp_sums/max_logits must be float32 [seqs, heads, partitions] and tmp_out "
                                 "[seqs, heads, partitions, head_size] in the query's dtype");
    p[XR_AP_part_size] = 512;
    p[XR_AP_part_count] = parts;
    if (parts * 512 < max_seq_len)
      return xr_plan_error(plan, "%lld partitions of 512 tokens cannot hold max_seq_len %lld", (long long)parts,
                           (long long)max_seq_len);
    a->t[XR_AT_EXP_SUMS] = ies, a->t[XR_AT_MAX_LOGITS] = iml, a->t[XR_AT_TMP_OUT] = ito;
    p[XR_AP_es_off] = es->storage_offset, p[XR_AP_es_sb] = es->strides[0];
    p[XR_AP_es_sh] = es->strides[1], p[XR_AP_es_sp] = es->strides[2];
    p[XR_AP_ml_off] = ml->storage_offset, p[XR_AP_ml_sb] = ml->strides[0];
    p[XR_AP_ml_sh] = ml->strides[1], p[XR_AP_ml_sp] = ml->strides[2];
    p[XR_AP_to_off] = to->storage_offset, p[XR_AP_to_sb] = to->strides[0], p[XR_AP_to_sh] = to->strides[1];
    p[XR_AP_to_sp] = to->strides[2], p[XR_AP_to_sd] = to->strides[3];
  }
  paged_costs(plan, NULL, NULL, &plan->flops, &plan->bytes);
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* reshape_and_cache(key, value, key_cache!, value_cache!, slot_mapping, kv_cache_dtype,       */
/*                   k_scale, v_scale)                                                          */

xr_status_t xr_attn_analyze_cache(xr_op_plan_t *plan) {
  const xr_op_t *op = plan->op;
  bool flash = !strcmp(op->name, "_C_cache_ops::reshape_and_cache_flash");
  xr_cache_problem_t *c = plan->problem;
  const char *kv_dtype = "auto";
  double ks = 1, vs = 1;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "key", true, &c->key)) || (st = xr_arg_tensor(plan, 1, "value", true, &c->value)) ||
      (st = xr_arg_tensor(plan, 2, "key_cache", true, &c->key_cache)) ||
      (st = xr_arg_tensor(plan, 3, "value_cache", true, &c->value_cache)) ||
      (st = xr_arg_tensor(plan, 4, "slot_mapping", true, &c->slots)) ||
      (st = xr_arg_string(op, 5, "kv_cache_dtype", false, &kv_dtype)) ||
      (st = read_kv_scale(plan, 6, "k_scale", &c->k_scale, &c->k_scale_off, &ks)) ||
      (st = read_kv_scale(plan, 7, "v_scale", &c->v_scale, &c->v_scale_off, &vs)))
    return st;
  if (c->key < 0 || c->value < 0 || c->key_cache < 0 || c->value_cache < 0 || c->slots < 0)
    return xr_plan_error(plan, "tensor arguments are not bound");
  if (ks != 1 || vs != 1)
    return xr_plan_error(plan, "k_scale/v_scale as floats other than 1.0 are not supported; pass tensors");
  const xr_tensor_spec_t *k = plan->inputs[c->key], *v = plan->inputs[c->value];
  const xr_tensor_spec_t *kc = plan->inputs[c->key_cache], *vc = plan->inputs[c->value_cache];
  const xr_tensor_spec_t *sl = plan->inputs[c->slots];
  if (k->rank != 3 || v->rank != 3 || sl->rank != 1 || (flash ? kc->rank != 4 : kc->rank != 5) ||
      vc->rank != 4)
    return xr_plan_error(plan, "expected key/value [tokens, kv_heads, head_size], slot_mapping [tokens] and "
                               "%s caches", flash ? "4-D [blocks, block_size, kv_heads, head_size]" : "vLLM 5-D/4-D");
  if ((st = bind_int(plan, c->slots, "slot_mapping", 1))) return st;
  if (k->dtype != v->dtype || (k->dtype != XR_DTYPE_F32 && k->dtype != XR_DTYPE_F16 && k->dtype != XR_DTYPE_BF16))
    return xr_plan_error(plan, "key and value must share a float dtype");
  c->src_dtype = k->dtype;
  xr_dtype_t vfmt;
  if ((st = cache_format(plan, kc->dtype, kv_dtype, false, k->dtype, &c->cache_dtype)) ||
      (st = cache_format(plan, vc->dtype, kv_dtype, false, k->dtype, &vfmt)))
    return st;
  c->slots_64 = sl->dtype == XR_DTYPE_I64;
  c->tokens = sl->shape[0];
  c->kv_heads = k->shape[1];
  c->head_dim = k->shape[2];
  if (k->shape[0] < c->tokens || v->shape[0] < c->tokens || v->shape[1] != c->kv_heads || v->shape[2] != c->head_dim)
    return xr_plan_error(plan, "key/value shapes do not match each other or slot_mapping");
  c->key_st = k->strides[0], c->key_sh = k->strides[1], c->key_sd = k->strides[2], c->key_off = k->storage_offset;
  c->value_st = v->strides[0], c->value_sh = v->strides[1], c->value_sd = v->strides[2];
  c->value_off = v->storage_offset;
  c->slots_off = sl->storage_offset;
  c->kc_off = kc->storage_offset, c->vc_off = vc->storage_offset;
  if (flash) {
    c->block_size = kc->shape[1];
    if (kc->shape[2] != c->kv_heads || kc->shape[3] != c->head_dim || vc->shape[1] != c->block_size ||
        vc->shape[2] != c->kv_heads || vc->shape[3] != c->head_dim)
      return xr_plan_error(plan, "caches must be [blocks, block_size, %lld, %lld]", (long long)c->kv_heads,
                           (long long)c->head_dim);
    c->kc_sb = kc->strides[0], c->kc_ss = kc->strides[1], c->kc_sh = kc->strides[2];
    c->kc_sd = kc->strides[3], c->kc_sdx = 0, c->kc_x = c->head_dim;
    c->vc_sb = vc->strides[0], c->vc_ss = vc->strides[1], c->vc_sh = vc->strides[2], c->vc_sd = vc->strides[3];
  } else {
    c->block_size = kc->shape[3];
    c->kc_x = kc->shape[4];
    if (kc->shape[1] != c->kv_heads || kc->shape[2] * c->kc_x != c->head_dim || vc->shape[1] != c->kv_heads ||
        vc->shape[2] != c->head_dim || vc->shape[3] != c->block_size)
      return xr_plan_error(plan, "key_cache/value_cache do not match kv_heads %lld, head_size %lld",
                           (long long)c->kv_heads, (long long)c->head_dim);
    c->kc_sb = kc->strides[0], c->kc_sh = kc->strides[1], c->kc_sdx = kc->strides[2];
    c->kc_ss = kc->strides[3], c->kc_sd = kc->strides[4];
    c->vc_sb = vc->strides[0], c->vc_sh = vc->strides[1], c->vc_sd = vc->strides[2], c->vc_ss = vc->strides[3];
  }
  if (!xr_dtype_is_fp8(c->cache_dtype)) c->k_scale = c->v_scale = -1;
  /* Bytes: the slots written, not the caches: each token's key and value read and stored in
   * the cache's element size, the slot_mapping read, and the fp8 scales. */
  double elems = 2.0 * (double)c->tokens * (double)c->kv_heads * (double)c->head_dim;
  plan->flops = xr_dtype_is_fp8(c->cache_dtype) ? elems : 0;
  plan->bytes = elems * (double)(xr_dtype_size(k->dtype) + xr_dtype_size(kc->dtype)) +
                (double)c->tokens * (double)xr_dtype_size(sl->dtype);
  for (int i = 0; i < 2; i++) {
    int scale = i ? c->v_scale : c->k_scale;
    if (scale >= 0) plan->bytes += (double)xr_dtype_size(plan->inputs[scale]->dtype);
  }
  return XR_OK;
}

static xr_status_t analyze_paged(xr_op_plan_t *plan) {
  xr_attn_problem_t *a = malloc(sizeof *a);
  if (!a) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", plan->op->name);
  xr_attn_init_params(a);
  plan->problem = a;
  return xr_attn_analyze_paged(plan);
}

/* ------------------------------------------------------------------------------------------ */
/* sglang::store_cache(k, v, k_cache!, v_cache!, indices, *, row_bytes=0, num_split=0,          */
/*                     size_limit=0)                                                            */

/* SGLang's KV-cache store (python/sglang/jit_kernel/kvcache.py, csrc/elementwise/kvcache.cuh):
 * k and v [B, D], k_cache and v_cache [slots, D] (every tensor of one dtype, last dims dense in
 * SGLang), indices [B] int32/int64; row i of k and v is copied to row indices[i] of the caches.
 * row_bytes (0: D x the element size) must be D x the element size; num_split only divides a
 * row's copy among warps; size_limit (0: the cache's rows) bounds the valid indices. As a
 * reshape_and_cache problem: one kv head of D elements, one slot per block. */
static xr_status_t analyze_store_cache(xr_op_plan_t *plan) {
  const xr_op_t *op = plan->op;
  xr_cache_problem_t *c = plan->problem;
  int64_t row_bytes = 0, num_split = 0, size_limit = 0;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "k", true, &c->key)) || (st = xr_arg_tensor(plan, 1, "v", true, &c->value)) ||
      (st = xr_arg_tensor(plan, 2, "k_cache", true, &c->key_cache)) ||
      (st = xr_arg_tensor(plan, 3, "v_cache", true, &c->value_cache)) ||
      (st = xr_arg_tensor(plan, 4, "indices", true, &c->slots)) ||
      (st = xr_arg_int(op, 5, "row_bytes", false, &row_bytes)) ||
      (st = xr_arg_int(op, 6, "num_split", false, &num_split)) ||
      (st = xr_arg_int(op, 7, "size_limit", false, &size_limit)))
    return st;
  if (c->key < 0 || c->value < 0 || c->key_cache < 0 || c->value_cache < 0 || c->slots < 0)
    return xr_plan_error(plan, "tensor arguments are not bound");
  const xr_tensor_spec_t *k = plan->inputs[c->key], *v = plan->inputs[c->value];
  const xr_tensor_spec_t *kc = plan->inputs[c->key_cache], *vc = plan->inputs[c->value_cache];
  const xr_tensor_spec_t *ix = plan->inputs[c->slots];
  if (k->rank != 2 || v->rank != 2 || kc->rank != 2 || vc->rank != 2)
    return xr_plan_error(plan, "expected k, v [batch, row] and k_cache, v_cache [slots, row]");
  if ((st = bind_int(plan, c->slots, "indices", 1))) return st;
  int64_t B = k->shape[0], D = k->shape[1];
  if (v->shape[0] != B || v->shape[1] != D || ix->shape[0] != B || kc->shape[1] != D || vc->shape[1] != D ||
      vc->shape[0] != kc->shape[0])
    return xr_plan_error(plan, "k [%lld, %lld]: v, indices and the caches' rows must match", (long long)B,
                         (long long)D);
  if (v->dtype != k->dtype || kc->dtype != k->dtype || vc->dtype != k->dtype)
    return xr_plan_error(plan, "k, v, k_cache and v_cache must share a dtype (k is %s)", xr_dtype_name(k->dtype));
  int64_t esize = (int64_t)xr_dtype_size(k->dtype);
  if (row_bytes != 0 && row_bytes != D * esize)
    return xr_plan_error(plan, "row_bytes %lld: a row of k is %lld x %lld bytes", (long long)row_bytes,
                         (long long)D, (long long)esize);
  if (size_limit < 0 || size_limit > kc->shape[0])
    return xr_plan_error(plan, "size_limit %lld: the caches have %lld rows", (long long)size_limit,
                         (long long)kc->shape[0]);
  (void)num_split; /* how many warps share a row: no effect on what is written */
  c->src_dtype = c->cache_dtype = k->dtype;
  c->k_scale = c->v_scale = -1;
  c->slots_64 = ix->dtype == XR_DTYPE_I64;
  c->tokens = B, c->kv_heads = 1, c->head_dim = D, c->block_size = 1;
  c->key_st = k->strides[0], c->key_sh = 0, c->key_sd = k->strides[1], c->key_off = k->storage_offset;
  c->value_st = v->strides[0], c->value_sh = 0, c->value_sd = v->strides[1], c->value_off = v->storage_offset;
  c->slots_off = ix->storage_offset;
  c->kc_sb = kc->strides[0], c->kc_ss = 0, c->kc_sh = 0, c->kc_sdx = 0, c->kc_sd = kc->strides[1], c->kc_x = D;
  c->vc_sb = vc->strides[0], c->vc_ss = 0, c->vc_sh = 0, c->vc_sd = vc->strides[1];
  c->kc_off = kc->storage_offset, c->vc_off = vc->storage_offset;
  if (B > 1 && ix->strides[0] != 1)
    c->unsupported = "a strided indices tensor is not supported (the cache writers read slot i at offset + i)";
  else if (!xr_dtype_is_floating(k->dtype) && esize > 4)
    c->unsupported = "rows of 8-byte integers are not supported (the copy goes through double)";
  xr_plan_mark_written(plan, c->key_cache);
  xr_plan_mark_written(plan, c->value_cache);
  plan->flops = 0;
  plan->bytes = 2.0 * (double)B * (double)D * (double)(2 * esize) + (double)B * (double)xr_dtype_size(ix->dtype);
  return XR_OK;
}

static xr_status_t analyze_cache(xr_op_plan_t *plan) {
  xr_cache_problem_t *c = calloc(1, sizeof *c);
  if (!c) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", plan->op->name);
  plan->problem = c;
  if (!strcmp(plan->op->name, "sglang::store_cache")) return analyze_store_cache(plan);
  return xr_attn_analyze_cache(plan);
}

/* ------------------------------------------------------------------------------------------ */
/* custom initializers                                                                         */

/* The prefill/decode mix a trace recorded (extraction's vLLM iteration hints): the first
 * prefill_seqs sequences share prefill_tokens query tokens, every decode sequence has one.
 * False when there are no hints or they do not fit this op's shapes. */
static bool split_from_hints(xr_init_context_t *c, int qsl, int64_t num_seqs, int64_t tokens,
                             int64_t max_len) {
  int64_t prefill_seqs, prefill_tokens, decode_seqs;
  if (!xr_init_hint(c, "prefill_seqs", &prefill_seqs) ||
      !xr_init_hint(c, "prefill_tokens", &prefill_tokens) ||
      !xr_init_hint(c, "decode_seqs", &decode_seqs) || prefill_seqs < 0 || decode_seqs < 0 ||
      prefill_seqs + decode_seqs != num_seqs || prefill_tokens + decode_seqs != tokens ||
      (prefill_seqs == 0) != (prefill_tokens == 0) || prefill_tokens < prefill_seqs)
    return false;
  int64_t start = 0;
  xr_init_store(c, qsl, 0, 0);
  for (int64_t b = 0; b < num_seqs; b++) {
    int64_t len = b < prefill_seqs ? prefill_tokens / prefill_seqs + (b < prefill_tokens % prefill_seqs) : 1;
    if (max_len > 0 && len > max_len) return false;
    start += len;
    xr_init_store(c, qsl, b + 1, (double)start);
  }
  char what[160];
  snprintf(what, sizeof what, "query_start_loc from the trace: %lld prefill (%lld tokens) + %lld decode",
           (long long)prefill_seqs, (long long)prefill_tokens, (long long)decode_seqs);
  xr_init_describe(c, what);
  return true;
}

/* Sequence lengths: "max" (all at max_seq_len, the default), "uniform" (1..max_seq_len), or an
 * explicit comma-separated list (repeated as needed). Then block tables of distinct random
 * blocks (a Fisher-Yates shuffle of all cache blocks). With query_start_loc (_rocm_C), the
 * query tokens follow the op's prefill/decode hints when the bundle has them, else split evenly
 * over the sequences, and each sequence holds at least its queries. Cache slots no sequence uses (unused blocks, slots past seq_lens) are NaN. */
static xr_status_t init_paged_attention(xr_init_context_t *c) {
  int sl = xr_init_input(c, "seq_lens"), bt = xr_init_input(c, "block_tables");
  int kc = xr_init_input(c, "key_cache"), vc = xr_init_input(c, "value_cache");
  int qsl = xr_init_input(c, "query_start_loc"), q = xr_init_input(c, "query");
  if (sl < 0 || bt < 0 || kc < 0) return XR_OK; /* not the layout we know: leave defaults */
  const xr_tensor_spec_t *seq = c->plan->inputs[sl], *tab = c->plan->inputs[bt];
  int64_t num_seqs = seq->shape[0], max_blocks = tab->rank == 2 ? tab->shape[1] : 0;
  int64_t block_size = xr_init_int_arg(c, "block_size", 16);
  int64_t max_len = xr_init_int_arg(c, "max_seq_len", max_blocks * block_size);
  int64_t num_blocks = c->plan->inputs[kc]->shape[0];
  if (max_len > max_blocks * block_size) max_len = max_blocks * block_size;
  if (max_len < 1 || block_size < 1) return XR_OK;
  if (qsl >= 0 && q >= 0 && !c->has_data[qsl] && c->plan->inputs[qsl]->shape[0] == num_seqs + 1) {
    if (!split_from_hints(c, qsl, num_seqs, c->plan->inputs[q]->shape[0], max_len)) {
      xr_init_even_split(c, qsl, num_seqs, c->plan->inputs[q]->shape[0], max_len);
      xr_init_describe(c, "query_start_loc even split");
    }
  }
  uint64_t s = c->seed;
  const char *mode = c->params && c->params[0] ? c->params : "max";
  if (!strncmp(mode, "seq_lens=", 9)) mode += 9;
  if (!c->has_data[sl]) {
    const char *p = mode;
    for (int64_t i = 0; i < num_seqs; i++) {
      int64_t len = max_len;
      if (!strcmp(mode, "uniform")) {
        len = 1 + (int64_t)(xr_rng_next(&s) % (uint64_t)max_len);
      } else if (strcmp(mode, "max") != 0) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p)
          return xr_error(XR_INVALID_ARGUMENT,
                          "paged attention policy \"%s\": expected max, uniform or a list of lengths",
                          mode);
        len = v < 1 ? 1 : v > max_len ? max_len : v;
        p = *end == ',' ? end + 1 : mode; /* wrap around */
      }
      if (qsl >= 0) { /* a sequence holds at least its own queries */
        int64_t qlen = xr_init_load(c, qsl, i + 1) - xr_init_load(c, qsl, i);
        if (len < qlen) len = qlen < max_len ? qlen : max_len;
      }
      xr_init_store(c, sl, i, (double)len);
    }
    char what[160];
    snprintf(what, sizeof what, "seq_lens %s (max %lld)", mode, (long long)max_len);
    xr_init_describe(c, what);
  }
  if (!c->has_data[bt]) {
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)(num_blocks ? num_blocks : 1));
    if (!perm) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
    xr_init_shuffle(perm, num_blocks, num_blocks, &s);
    int64_t next = 0;
    bool reused = false;
    for (int64_t q = 0; q < num_seqs; q++) {
      int64_t len = xr_init_load(c, sl, q);
      int64_t used = (len + block_size - 1) / block_size;
      for (int64_t b = 0; b < max_blocks; b++) {
        int64_t block = 0;
        if (b < used && num_blocks > 0) {
          if (next == num_blocks) next = 0, reused = true;
          block = perm[next++];
        }
        xr_store_element(c->host[bt], tab->dtype,
                         tab->storage_offset + q * tab->strides[0] + b * tab->strides[1],
                         (double)block);
      }
    }
    free(perm);
    xr_init_describe(c, reused ? "block_tables random blocks (cache too small: blocks shared)"
                             : "block_tables distinct random blocks");
    if (!reused) xr_init_describe_compact(c, num_blocks, "blocks");
  }
  if (c->flops && c->bytes) { /* the counts for the lengths now settled, not max_seq_len's */
    int64_t *lens = malloc(sizeof(int64_t) * 2 * (size_t)(num_seqs ? num_seqs : 1));
    if (!lens) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
    int64_t *qlens = lens + num_seqs;
    for (int64_t i = 0; i < num_seqs; i++) {
      lens[i] = xr_init_load(c, sl, i);
      qlens[i] = qsl >= 0 ? xr_init_load(c, qsl, i + 1) - xr_init_load(c, qsl, i) : 1;
    }
    paged_costs(c->plan, lens, qlens, c->flops, c->bytes);
    free(lens);
  }
  /* Live (block, slot) cells: key_cache [blocks, heads, d/x, slot, x], value_cache [blocks,
   * heads, d, slot]. */
  const xr_tensor_spec_t *kt = c->plan->inputs[kc];
  if (kt->rank != 5 || kt->shape[3] != block_size || (vc >= 0 && c->plan->inputs[vc]->rank != 4)) return XR_OK;
  bool *live = calloc((size_t)(num_blocks * block_size + 1), sizeof *live);
  if (!live) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  for (int64_t q = 0; q < num_seqs; q++) {
    int64_t len = xr_init_load(c, sl, q);
    for (int64_t t = 0; t < len && t < max_blocks * block_size; t++) {
      int64_t block = (int64_t)xr_load_element(c->host[bt], tab->dtype, tab->storage_offset + q * tab->strides[0] +
                                                                             (t / block_size) * tab->strides[1]);
      if (block >= 0 && block < num_blocks) live[block * block_size + t % block_size] = true;
    }
  }
  xr_init_poison_dead_cells(c, kc, 0, 3, block_size, live);
  xr_init_poison_dead_cells(c, vc, 0, 3, block_size, live);
  free(live);
  return XR_OK;
}

/* --cache-blocks (xr_kernel_compact): the caches cut to the blocks the block tables can
 * reference, each sequence's blocks for max_seq_len tokens, and one more that none does; the
 * initializer then draws them all distinct, as from the recorded cache. Not when the block
 * tables or the sequence lengths are the bundle's own. */
static xr_status_t compact_paged(const xr_op_plan_t *plan, xr_arena_t *arena, xr_op_t **out_op) {
  const xr_attn_problem_t *a = plan->problem;
  const int64_t *p = a->p;
  int kc = a->t[XR_AT_K], vc = a->t[XR_AT_V];
  const xr_tensor_spec_t *tab = plan->inputs[a->t[XR_AT_TABLE]], *lens = plan->inputs[a->t[XR_AT_LENS]];
  int64_t blocks = plan->inputs[kc]->shape[0], block_size = plan->inputs[kc]->shape[3];
  int64_t max_len = p[XR_AP_max_k] < tab->shape[1] * block_size ? p[XR_AP_max_k] : tab->shape[1] * block_size;
  int64_t keep = p[XR_AP_batch] * ((max_len + block_size - 1) / block_size) + 1;
  if (tab->data || tab->data_file || lens->data || lens->data_file || keep >= blocks) return XR_OK;
  int64_t *dim0 = xr_arena_alloc(arena, sizeof(int64_t) * plan->input_count);
  if (!dim0) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < plan->input_count; i++) dim0[i] = -1;
  dim0[kc] = dim0[vc] = keep;
  xr_op_t *op;
  xr_status_t st = xr_plan_op_resized(plan, dim0, arena, &op);
  if (st == XR_OK) st = xr_op_hint_int(arena, op, "recorded_cache_blocks", blocks);
  if (st == XR_OK) *out_op = op;
  return st;
}

static const struct xr_op_initializer paged_initializers[] = {
    {"_C::paged_attention_v1", init_paged_attention},
    {"_C::paged_attention_v2", init_paged_attention},
    {"_rocm_C::paged_attention", init_paged_attention},
    {NULL, NULL},
};

static const xr_kernel_impl_t *const paged_impls[] = {
    &xr_attn_cpu_impl,
    &xr_attn_opencl_impl,
    &xr_paged_attn_gpu_impl,
    &xr_attn_ref_impl,
    NULL,
};

const xr_op_family_t xr_family_paged_attention = {
    .name = "paged_attention",
    .op_names = paged_ops,
    .analyze = analyze_paged,
    .free_problem = free,
    .compact = compact_paged,
    .impls = paged_impls,
    .initializers = paged_initializers,
};


/* The cache scatter is a strided copy: the reference is the fast CPU path, but for fp8 e4m3
 * caches (cpu.reshape_and_cache, kernels/cpu/kv_cache_cpu.c). */
/* ------------------------------------------------------------------------------------------ */
/* custom initializers                                                                         */

/* reshape_and_cache(_flash), store_cache: distinct random cache slots per token, so no two
 * tokens race for one slot (store_cache's below size_limit). The problem's binding indices find
 * the tensors: a traced custom op's arguments have no names. */
static xr_status_t init_cache_slots(xr_init_context_t *c) {
  const xr_cache_problem_t *p = c->plan->problem;
  int sm = p->slots;
  if (sm < 0 || c->has_data[sm]) return XR_OK;
  const xr_tensor_spec_t *cache = c->plan->inputs[p->key_cache];
  int64_t slots = cache->shape[0] * p->block_size, tokens = p->tokens;
  bool store = !strcmp(c->op->name, "sglang::store_cache");
  int64_t limit = 0;
  if (store && xr_arg_int(c->op, 7, "size_limit", false, &limit) == XR_OK && limit > 0 && limit < slots)
    slots = limit;
  const char *what = store ? "indices" : "slot_mapping";
  if (tokens > slots)
    return xr_error(XR_INVALID_ARGUMENT, "%s: %lld tokens for %lld cache slots", what, (long long)tokens,
                    (long long)slots);
  int64_t *perm = malloc(sizeof(int64_t) * (size_t)(slots ? slots : 1));
  if (!perm) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  uint64_t s = c->seed;
  xr_init_shuffle(perm, slots, tokens, &s);
  for (int64_t i = 0; i < tokens; i++) xr_init_store(c, sm, i, (double)perm[i]);
  free(perm);
  xr_init_describe(c, store ? "indices distinct random slots" : "slot_mapping distinct random slots");
  xr_init_describe_compact(c, cache->shape[0], store ? "rows" : "blocks");
  return XR_OK;
}

/* --cache-blocks (xr_kernel_compact): the caches cut to one block per token written and one
 * more, among which the initializer then draws the slots (each token still writes its own
 * slot); store_cache's size_limit, which bounded the recorded cache, is dropped. Not when the
 * slots are the bundle's own. */
static xr_status_t compact_cache(const xr_op_plan_t *plan, xr_arena_t *arena, xr_op_t **out_op) {
  const xr_cache_problem_t *c = plan->problem;
  const xr_tensor_spec_t *slots = plan->inputs[c->slots];
  int64_t blocks = plan->inputs[c->key_cache]->shape[0], keep = c->tokens + 1;
  if (slots->data || slots->data_file || keep >= blocks ||
      plan->inputs[c->value_cache]->shape[0] != blocks)
    return XR_OK;
  int64_t *dim0 = xr_arena_alloc(arena, sizeof(int64_t) * plan->input_count);
  if (!dim0) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < plan->input_count; i++) dim0[i] = -1;
  dim0[c->key_cache] = dim0[c->value_cache] = keep;
  xr_op_t *op;
  xr_status_t st = xr_plan_op_resized(plan, dim0, arena, &op);
  if (st == XR_OK) st = xr_op_hint_int(arena, op, "recorded_cache_blocks", blocks);
  if (st != XR_OK) return st;
  xr_value_t *limit = (xr_value_t *)xr_op_arg(op, 7, "size_limit");
  if (!strcmp(op->name, "sglang::store_cache") && limit && limit->kind == XR_VALUE_INT)
    limit->as.i = 0;
  *out_op = op;
  return XR_OK;
}

static const struct xr_op_initializer cache_initializers[] = {
    {"_C_cache_ops::reshape_and_cache", init_cache_slots},
    {"_C_cache_ops::reshape_and_cache_flash", init_cache_slots},
    {"sglang::store_cache", init_cache_slots},
    {NULL, NULL},
};

static const xr_kernel_impl_t *const cache_impls[] = {
    &xr_cache_cpu_impl,
    &xr_cache_opencl_impl,
    &xr_cache_gpu_impl,
    &xr_cache_ref_impl,
    NULL,
};

const xr_op_family_t xr_family_kv_cache = {
    .name = "kv_cache",
    .op_names = cache_ops,
    .analyze = analyze_cache,
    .free_problem = free,
    .compact = compact_cache,
    .impls = cache_impls,
    .initializers = cache_initializers,
};

