/* Built-in custom initializers for ops whose arguments do not determine their work: paged
 * attention (sequence lengths, block tables), vLLM's unified attention (its whole KV cache and
 * batch metadata), MoE routing (expert ids, routing weights) and
 * indexing (indices inside the table they index).
 * Tensors that carry real contents from the bundle are never overwritten. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/unified_attention.h"
#include "replay/internal.h"

/* The binding index of a tensor argument by name, or -1. */
static int input_index(const xr_init_context_t *c, const char *name) {
  const xr_arg_t *a = xr_op_find_arg(c->op, name);
  if (!a || a->value.kind != XR_VALUE_TENSOR) return -1;
  for (size_t i = 0; i < c->plan->input_count; i++)
    if (c->plan->inputs[i] == a->value.as.tensor) return (int)i;
  return -1;
}

static int64_t int_arg(const xr_init_context_t *c, const char *name, int64_t fallback) {
  const xr_arg_t *a = xr_op_find_arg(c->op, name);
  return a && a->value.kind == XR_VALUE_INT ? a->value.as.i : fallback;
}

static void append(xr_init_context_t *c, const char *fmt, const char *what) {
  size_t len = strlen(c->policy);
  snprintf(c->policy + len, c->policy_size - len, fmt, len ? "; " : "", what);
}

/* NaN in the dtype of a cache or key tensor; uint8 caches hold fp8 bytes (e4m3fnuz on
 * _rocm_C, where 0x80 is the NaN; 0x7f in the OCP formats). */
static void store_nan(const xr_init_context_t *c, int index, int64_t at) {
  const xr_tensor_spec_t *t = c->plan->inputs[index];
  if (t->dtype == XR_DTYPE_U8 || t->dtype == XR_DTYPE_I8)
    ((uint8_t *)c->host[index])[at] = strncmp(c->op->name, "_rocm_C::", 9) ? 0x7f : 0x80;
  else
    xr_store_element(c->host[index], t->dtype, at, NAN);
}

/* Writes NaN into every element of tensor `index` whose cell is not live: the cell of an element
 * is its index along `dim_a` times `cells_b` plus its index along `dim_b` (or 0 when dim_b < 0).
 * Attention must never read those: a NaN that reaches a softmax or a weighted sum shows in the
 * output. Tensors with real contents are left alone. */
static void poison_dead_cells(const xr_init_context_t *c, int index, int dim_a, int dim_b, int64_t cells_b,
                              const bool *live) {
  if (index < 0 || c->has_data[index]) return;
  const xr_tensor_spec_t *t = c->plan->inputs[index];
  if (!xr_dtype_is_floating(t->dtype) && t->dtype != XR_DTYPE_U8 && t->dtype != XR_DTYPE_I8) return;
  int64_t n = 1, idx[XR_MAX_RANK] = {0};
  for (int32_t d = 0; d < t->rank; d++) n *= t->shape[d];
  for (int64_t e = 0; e < n; e++) {
    int64_t cell = idx[dim_a] * cells_b + (dim_b >= 0 ? idx[dim_b] : 0);
    if (!live[cell]) {
      int64_t at = t->storage_offset;
      for (int32_t d = 0; d < t->rank; d++) at += idx[d] * t->strides[d];
      store_nan(c, index, at);
    }
    for (int32_t d = t->rank - 1; d >= 0 && ++idx[d] == t->shape[d]; d--) idx[d] = 0;
  }
}

static int64_t load_1d(const xr_init_context_t *c, int index, int64_t i) {
  const xr_tensor_spec_t *t = c->plan->inputs[index];
  return (int64_t)xr_load_element(c->host[index], t->dtype, t->storage_offset + i * t->strides[0]);
}

static void store_at(xr_init_context_t *c, int index, int64_t i, double v) {
  const xr_tensor_spec_t *t = c->plan->inputs[index];
  xr_store_element(c->host[index], t->dtype, t->storage_offset + i * t->strides[0], v);
}

/* Cumulative starts of `count` sequences sharing `total` tokens as evenly as possible, each at
 * most `max_len` (tokens past the last sequence stay unused). */
static void even_split(xr_init_context_t *c, int index, int64_t count, int64_t total, int64_t max_len) {
  int64_t start = 0;
  store_at(c, index, 0, 0);
  for (int64_t b = 0; b < count; b++) {
    int64_t len = total / count + (b < total % count);
    if (max_len > 0 && len > max_len) len = max_len;
    start += len;
    store_at(c, index, b + 1, (double)start);
  }
}

static bool hint_int(const xr_op_t *op, const char *name, int64_t *out) {
  for (size_t i = 0; i < op->hint_count; i++)
    if (op->hints[i].name && !strcmp(op->hints[i].name, name) && op->hints[i].value.kind == XR_VALUE_INT) {
      *out = op->hints[i].value.as.i;
      return true;
    }
  return false;
}

/* The prefill/decode mix a trace recorded (extraction's vLLM iteration hints): the first
 * prefill_seqs sequences share prefill_tokens query tokens, every decode sequence has one.
 * False when there are no hints or they do not fit this op's shapes. */
static bool split_from_hints(xr_init_context_t *c, int qsl, int64_t num_seqs, int64_t tokens,
                             int64_t max_len) {
  int64_t prefill_seqs, prefill_tokens, decode_seqs;
  if (!hint_int(c->op, "prefill_seqs", &prefill_seqs) ||
      !hint_int(c->op, "prefill_tokens", &prefill_tokens) ||
      !hint_int(c->op, "decode_seqs", &decode_seqs) || prefill_seqs < 0 || decode_seqs < 0 ||
      prefill_seqs + decode_seqs != num_seqs || prefill_tokens + decode_seqs != tokens ||
      (prefill_seqs == 0) != (prefill_tokens == 0) || prefill_tokens < prefill_seqs)
    return false;
  int64_t start = 0;
  store_at(c, qsl, 0, 0);
  for (int64_t b = 0; b < num_seqs; b++) {
    int64_t len = b < prefill_seqs ? prefill_tokens / prefill_seqs + (b < prefill_tokens % prefill_seqs) : 1;
    if (max_len > 0 && len > max_len) return false;
    start += len;
    store_at(c, qsl, b + 1, (double)start);
  }
  char what[160];
  snprintf(what, sizeof what, "query_start_loc from the trace: %lld prefill (%lld tokens) + %lld decode",
           (long long)prefill_seqs, (long long)prefill_tokens, (long long)decode_seqs);
  append(c, "%s%s", what);
  return true;
}

/* Sequence lengths: "max" (all at max_seq_len, the default), "uniform" (1..max_seq_len), or an
 * explicit comma-separated list (repeated as needed). Then block tables of distinct random
 * blocks (a Fisher-Yates shuffle of all cache blocks). With query_start_loc (_rocm_C), the
 * query tokens follow the op's prefill/decode hints when the bundle has them, else split evenly
 * over the sequences, and each sequence holds at least its queries. Cache slots no sequence uses (unused blocks, slots past seq_lens) are NaN. */
static xr_status_t init_paged_attention(xr_init_context_t *c) {
  int sl = input_index(c, "seq_lens"), bt = input_index(c, "block_tables");
  int kc = input_index(c, "key_cache"), vc = input_index(c, "value_cache");
  int qsl = input_index(c, "query_start_loc"), q = input_index(c, "query");
  if (sl < 0 || bt < 0 || kc < 0) return XR_OK; /* not the layout we know: leave defaults */
  const xr_tensor_spec_t *seq = c->plan->inputs[sl], *tab = c->plan->inputs[bt];
  int64_t num_seqs = seq->shape[0], max_blocks = tab->rank == 2 ? tab->shape[1] : 0;
  int64_t block_size = int_arg(c, "block_size", 16);
  int64_t max_len = int_arg(c, "max_seq_len", max_blocks * block_size);
  int64_t num_blocks = c->plan->inputs[kc]->shape[0];
  if (max_len > max_blocks * block_size) max_len = max_blocks * block_size;
  if (max_len < 1 || block_size < 1) return XR_OK;
  if (qsl >= 0 && q >= 0 && !c->has_data[qsl] && c->plan->inputs[qsl]->shape[0] == num_seqs + 1) {
    if (!split_from_hints(c, qsl, num_seqs, c->plan->inputs[q]->shape[0], max_len)) {
      even_split(c, qsl, num_seqs, c->plan->inputs[q]->shape[0], max_len);
      append(c, "%s%s", "query_start_loc even split");
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
        int64_t qlen = load_1d(c, qsl, i + 1) - load_1d(c, qsl, i);
        if (len < qlen) len = qlen < max_len ? qlen : max_len;
      }
      store_at(c, sl, i, (double)len);
    }
    char what[160];
    snprintf(what, sizeof what, "seq_lens %s (max %lld)", mode, (long long)max_len);
    append(c, "%s%s", what);
  }
  if (!c->has_data[bt]) {
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)(num_blocks ? num_blocks : 1));
    if (!perm) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
    for (int64_t i = 0; i < num_blocks; i++) perm[i] = i;
    for (int64_t i = num_blocks - 1; i > 0; i--) {
      int64_t j = (int64_t)(xr_rng_next(&s) % (uint64_t)(i + 1)), t = perm[i];
      perm[i] = perm[j], perm[j] = t;
    }
    int64_t next = 0;
    bool reused = false;
    for (int64_t q = 0; q < num_seqs; q++) {
      int64_t len = load_1d(c, sl, q);
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
    append(c, "%s%s", reused ? "block_tables random blocks (cache too small: blocks shared)"
                             : "block_tables distinct random blocks");
  }
  /* Live (block, slot) cells: key_cache [blocks, heads, d/x, slot, x], value_cache [blocks,
   * heads, d, slot]. */
  const xr_tensor_spec_t *kt = c->plan->inputs[kc];
  if (kt->rank != 5 || kt->shape[3] != block_size || (vc >= 0 && c->plan->inputs[vc]->rank != 4)) return XR_OK;
  bool *live = calloc((size_t)(num_blocks * block_size + 1), sizeof *live);
  if (!live) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  for (int64_t q = 0; q < num_seqs; q++) {
    int64_t len = load_1d(c, sl, q);
    for (int64_t t = 0; t < len && t < max_blocks * block_size; t++) {
      int64_t block = (int64_t)xr_load_element(c->host[bt], tab->dtype, tab->storage_offset + q * tab->strides[0] +
                                                                             (t / block_size) * tab->strides[1]);
      if (block >= 0 && block < num_blocks) live[block * block_size + t % block_size] = true;
    }
  }
  poison_dead_cells(c, kc, 0, 3, block_size, live);
  poison_dead_cells(c, vc, 0, 3, block_size, live);
  free(live);
  return XR_OK;
}

static int64_t load_2d(const xr_init_context_t *c, int index, int64_t i, int64_t j) {
  const xr_tensor_spec_t *t = c->plan->inputs[index];
  return (int64_t)xr_load_element(c->host[index], t->dtype, t->storage_offset + i * t->strides[0] + j * t->strides[1]);
}

/* vLLM's unified attention (kernels/unified_attention.h): query_start_loc and seq_lens from the
 * layout the analysis decided (hints, kwargs or the default), a block table of distinct random
 * blocks, each new token's slot at its position in its sequence, and a KV cache whose context
 * slots (the tokens cached before this step) keep their seeded values while every other slot —
 * unused blocks, slots past a sequence, and the slots this op must itself write — is NaN.
 * Index tensors with real contents are kept but checked, so no kernel can address outside the
 * cache. */
static xr_status_t init_unified_attention(xr_init_context_t *c) {
  const xr_ua_problem_t *u = c->plan->problem;
  const xr_ua_layout_t *l = &u->layout;
  int qsl = u->query_start_loc, sl = u->seq_lens, bt = u->block_table, sm = u->slot_mapping;
  const xr_tensor_spec_t *tab = c->plan->inputs[bt];
  int64_t S = l->seqs, bs = u->block_size, nb = u->num_blocks, W = u->max_blocks, T = u->num_tokens;
  int64_t n_slots = c->plan->inputs[sm]->shape[0];
  if (!c->has_data[qsl]) {
    int64_t start = 0;
    store_at(c, qsl, 0, 0);
    for (int64_t b = 0; b < S; b++) store_at(c, qsl, b + 1, (double)(start += l->q_len[b]));
  }
  if (!c->has_data[sl])
    for (int64_t b = 0; b < S; b++) store_at(c, sl, b, (double)l->k_len[b]);
  for (int64_t b = 0; b < S; b++) {
    int64_t q0 = load_1d(c, qsl, b), q1 = load_1d(c, qsl, b + 1), k = load_1d(c, sl, b);
    if (q0 < 0 || q1 < q0 || q1 > T)
      return xr_error(XR_INVALID_ARGUMENT, "query_start_loc: sequence %lld spans tokens [%lld, %lld) of %lld",
                      (long long)b, (long long)q0, (long long)q1, (long long)T);
    if (k < q1 - q0 || k > W * bs)
      return xr_error(XR_INVALID_ARGUMENT, "seq_lens: sequence %lld has %lld keys for %lld queries and room for %lld",
                      (long long)b, (long long)k, (long long)(q1 - q0), (long long)(W * bs));
  }
  uint64_t s = c->seed;
  if (!c->has_data[bt]) {
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)(nb > 0 ? nb : 1)), next = 0;
    if (!perm) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
    for (int64_t i = 0; i < nb; i++) perm[i] = i;
    for (int64_t i = nb - 1; i > 0; i--) {
      int64_t j = (int64_t)(xr_rng_next(&s) % (uint64_t)(i + 1)), t = perm[i];
      perm[i] = perm[j], perm[j] = t;
    }
    for (int64_t b = 0; b < S; b++) {
      int64_t used = (load_1d(c, sl, b) + bs - 1) / bs;
      for (int64_t e = 0; e < tab->shape[1]; e++) {
        if (e < used && next == nb) {
          free(perm);
          return xr_error(XR_INVALID_ARGUMENT, "num_blocks: %lld cache blocks cannot hold the sequences' keys",
                          (long long)nb);
        }
        xr_store_element(c->host[bt], tab->dtype, tab->storage_offset + b * tab->strides[0] + e * tab->strides[1],
                         (double)(e < used ? perm[next++] : 0));
      }
    }
    free(perm);
  }
  for (int64_t b = 0; b < S; b++)
    for (int64_t e = 0; e < (load_1d(c, sl, b) + bs - 1) / bs; e++) {
      int64_t block = load_2d(c, bt, b, e);
      if (block < 0 || block >= nb)
        return xr_error(XR_INVALID_ARGUMENT, "block_table: sequence %lld page %lld is block %lld of a %lld-block cache",
                        (long long)b, (long long)e, (long long)block, (long long)nb);
    }
  if (!c->has_data[sm]) {
    for (int64_t t = 0; t < n_slots; t++) store_at(c, sm, t, -1); /* padding */
    for (int64_t b = 0; b < S; b++) {
      int64_t q0 = load_1d(c, qsl, b), q1 = load_1d(c, qsl, b + 1), k = load_1d(c, sl, b);
      for (int64_t t = q0; t < q1 && t < n_slots; t++) {
        int64_t pos = k - (q1 - q0) + (t - q0);
        store_at(c, sm, t, (double)(load_2d(c, bt, b, pos / bs) * bs + pos % bs));
      }
    }
  }
  for (int64_t t = 0; t < n_slots; t++) {
    int64_t slot = load_1d(c, sm, t);
    if (slot < -1 || slot >= nb * bs)
      return xr_error(XR_INVALID_ARGUMENT, "slot_mapping: token %lld goes to slot %lld of a %lld-slot cache",
                      (long long)t, (long long)slot, (long long)(nb * bs));
  }
  /* Live cells: the cached context; with real slot contents, the new tokens' slots too (where
   * the op writes is then the bundle's business). */
  bool *live = calloc((size_t)(nb * bs + 1), sizeof *live);
  if (!live) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  int64_t cached = 0;
  for (int64_t b = 0; b < S; b++) {
    int64_t k = load_1d(c, sl, b), q = load_1d(c, qsl, b + 1) - load_1d(c, qsl, b);
    int64_t end = c->has_data[sm] ? k : k - q;
    for (int64_t pos = 0; pos < end; pos++) live[load_2d(c, bt, b, pos / bs) * bs + pos % bs] = true;
    cached += k - q;
  }
  poison_dead_cells(c, u->kv_cache, (int)u->kv_block_dim, 2, bs, live);
  free(live);
  char what[400];
  snprintf(what, sizeof what, "%s; %lld cached tokens in %lld blocks of %lld, every other cache slot NaN",
           l->text, (long long)cached, (long long)nb, (long long)bs);
  append(c, "%s%s", what);
  return XR_OK;
}

/* Variable-length attention (aten::_flash_attention_forward with cum_seq_q/k,
 * aiter::mha_varlen_fwd, aiter::mha_batch_prefill): the packed query and key tokens split
 * evenly over the sequences, each at most max_seqlen; seqused_k keeps three quarters of each
 * sequence's keys; page indices are distinct random pages. Key/value rows no sequence uses are
 * NaN. */
static xr_status_t init_varlen_attention(xr_init_context_t *c) {
  bool aiter = !strncmp(c->op->name, "aiter::", 7);
  int cq = input_index(c, aiter ? "cu_seqlens_q" : "cum_seq_q");
  int ck = input_index(c, aiter ? "cu_seqlens_k" : "cum_seq_k");
  int q = input_index(c, aiter ? "q" : "query"), k = input_index(c, aiter ? "k" : "key");
  int v = input_index(c, aiter ? "v" : "value"), used = input_index(c, "seqused_k");
  int indptr = input_index(c, "kv_indptr"), pages = input_index(c, "kv_page_indices");
  if (cq < 0 || q < 0 || k < 0) return XR_OK; /* dense: the shapes say it all */
  int64_t batch = c->plan->inputs[cq]->shape[0] - 1;
  int64_t max_q = int_arg(c, aiter ? "max_seqlen_q" : "max_q", 0);
  int64_t max_k = int_arg(c, aiter ? "max_seqlen_k" : "max_k", 0);
  const xr_tensor_spec_t *kt = c->plan->inputs[k];
  int64_t total_k = kt->shape[0];
  if (batch < 1) return XR_OK;
  if (!c->has_data[cq]) even_split(c, cq, batch, c->plan->inputs[q]->shape[0], max_q);
  bool *live = calloc((size_t)(total_k + 1), sizeof *live);
  if (!live) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  if (indptr >= 0 && pages >= 0) { /* batch prefill: one-token pages */
    int64_t npages = c->plan->inputs[pages]->shape[0];
    if (!c->has_data[indptr]) even_split(c, indptr, batch, npages < total_k ? npages : total_k, max_k);
    if (!c->has_data[pages]) {
      int64_t *perm = malloc(sizeof(int64_t) * (size_t)(total_k ? total_k : 1));
      if (!perm) {
        free(live);
        return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
      }
      uint64_t s = c->seed;
      for (int64_t i = 0; i < total_k; i++) perm[i] = i;
      for (int64_t i = total_k - 1; i > 0; i--) {
        int64_t j = (int64_t)(xr_rng_next(&s) % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
      }
      for (int64_t i = 0; i < npages; i++) store_at(c, pages, i, (double)(total_k ? perm[i % total_k] : 0));
      free(perm);
    }
    for (int64_t i = load_1d(c, indptr, 0); i < load_1d(c, indptr, batch); i++) {
      int64_t page = load_1d(c, pages, i);
      if (page >= 0 && page < total_k) live[page] = true;
    }
    append(c, "%s%s", "cu_seqlens_q and kv_indptr even split, distinct random pages");
  } else if (ck >= 0 && kt->rank == 3) {
    if (!c->has_data[ck]) even_split(c, ck, batch, total_k, max_k);
    for (int64_t b = 0; b < batch; b++) {
      int64_t start = load_1d(c, ck, b), len = load_1d(c, ck, b + 1) - start;
      if (used >= 0) {
        if (!c->has_data[used]) store_at(c, used, b, (double)(len - len / 4));
        len = load_1d(c, used, b);
      }
      for (int64_t t = start; t < start + len && t < total_k; t++)
        if (t >= 0) live[t] = true;
    }
    append(c, "%s%s", used >= 0 ? "cumulative lengths even split, seqused_k 3/4 of each sequence"
                                : "cumulative lengths even split");
  } else {
    free(live);
    return XR_OK;
  }
  poison_dead_cells(c, k, 0, -1, 1, live);
  poison_dead_cells(c, v, 0, -1, 1, live);
  free(live);
  return XR_OK;
}

/* reshape_and_cache(_flash): distinct random cache slots per token, so no two tokens race for
 * one slot. */
static xr_status_t init_cache_slots(xr_init_context_t *c) {
  int sm = input_index(c, "slot_mapping"), kc = input_index(c, "key_cache");
  if (sm < 0 || kc < 0 || c->has_data[sm]) return XR_OK;
  const xr_tensor_spec_t *cache = c->plan->inputs[kc];
  bool flash = !strcmp(c->op->name, "_C_cache_ops::reshape_and_cache_flash");
  if (cache->rank < 4) return XR_OK;
  int64_t slots = cache->shape[0] * cache->shape[flash ? 1 : 3], tokens = c->plan->inputs[sm]->shape[0];
  if (tokens > slots)
    return xr_error(XR_INVALID_ARGUMENT, "slot_mapping: %lld tokens for %lld cache slots", (long long)tokens,
                    (long long)slots);
  int64_t *perm = malloc(sizeof(int64_t) * (size_t)(slots ? slots : 1));
  if (!perm) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  uint64_t s = c->seed;
  for (int64_t i = 0; i < slots; i++) perm[i] = i;
  for (int64_t i = 0; i < tokens; i++) { /* partial Fisher-Yates: the first `tokens` entries */
    int64_t j = i + (int64_t)(xr_rng_next(&s) % (uint64_t)(slots - i)), t = perm[i];
    perm[i] = perm[j], perm[j] = t;
    store_at(c, sm, i, (double)perm[i]);
  }
  free(perm);
  append(c, "%s%s", "slot_mapping distinct random slots");
  return XR_OK;
}

/* MoE routing policies: "balanced" round-robin (default), "uniform", or "zipf:S" expert ids,
 * distinct within a token; routing weights positive, summing to 1 per token. Draws
 * ids[m * topk + j] and weights[m * topk + j]. */
static xr_status_t draw_routing(xr_init_context_t *c, int64_t tokens, int64_t topk,
                                int64_t experts, int64_t *ids, double *weights, const char **out_mode) {
  const char *mode = c->params && c->params[0] ? c->params : "balanced";
  *out_mode = mode;
  double zipf_s = 0;
  if (!strncmp(mode, "zipf", 4)) zipf_s = mode[4] == ':' ? atof(mode + 5) : 1.0;
  else if (strcmp(mode, "balanced") && strcmp(mode, "uniform"))
    return xr_error(XR_INVALID_ARGUMENT,
                    "MoE routing policy \"%s\": expected balanced, uniform or zipf:S", mode);
  if (topk > experts)
    return xr_error(XR_INVALID_ARGUMENT, "top-%lld routing over %lld experts", (long long)topk,
                    (long long)experts);
  double *cdf = NULL;
  if (zipf_s > 0) {
    cdf = malloc(sizeof(double) * (size_t)experts);
    if (!cdf) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
    double sum = 0;
    for (int64_t e = 0; e < experts; e++) cdf[e] = (sum += 1.0 / pow((double)(e + 1), zipf_s));
    for (int64_t e = 0; e < experts; e++) cdf[e] /= sum;
  }
  uint64_t s = c->seed;
  for (int64_t m = 0; m < tokens; m++) {
    int64_t *chosen = ids + m * topk;
    for (int64_t j = 0; j < topk; j++) {
      int64_t e;
      for (;;) {
        if (cdf) {
          double u = xr_rng_uniform(&s);
          e = 0;
          while (e < experts - 1 && cdf[e] < u) e++;
        } else if (!strcmp(mode, "uniform")) {
          e = (int64_t)(xr_rng_next(&s) % (uint64_t)experts);
        } else {
          e = (m * topk + j) % experts; /* topk <= experts: never repeats within a token */
        }
        bool dup = false;
        for (int64_t k = 0; k < j; k++) dup |= chosen[k] == e;
        if (!dup) break;
      }
      chosen[j] = e;
    }
    double sum = 0;
    for (int64_t j = 0; j < topk; j++) sum += weights[m * topk + j] = 0.5 + xr_rng_uniform(&s);
    for (int64_t j = 0; j < topk; j++) weights[m * topk + j] /= sum;
  }
  free(cdf);
  return XR_OK;
}

static void store_1d(xr_init_context_t *c, int index, int64_t i, double v) {
  const xr_tensor_spec_t *t = c->plan->inputs[index];
  xr_store_element(c->host[index], t->dtype, t->storage_offset + i * t->strides[0], v);
}

/* aiter::ck_moe_stage1/2 take the sorting's outputs instead of topk_ids: sorted ids packed as
 * token | slot << 24, every expert at least one block of block_m, padding M | topk << 24 with
 * weight 0, ascending within an expert; num_valid_ids = {padded total, M}. */
static xr_status_t init_ck_sorted(xr_init_context_t *c) {
  int sid = input_index(c, "sorted_token_ids"), eid = input_index(c, "sorted_expert_ids");
  int nv = input_index(c, "num_valid_ids"), sw = input_index(c, "sorted_weights");
  int x = input_index(c, "hidden_states"), w2 = input_index(c, "w2"), out = input_index(c, "out");
  if (x < 0) x = input_index(c, "inter_states");
  if (sid < 0 || eid < 0 || nv < 0 || x < 0 || w2 < 0) return XR_OK;
  if (c->has_data[sid] || c->has_data[eid] || c->has_data[nv]) return XR_OK; /* real sorting */
  const xr_tensor_spec_t *st = c->plan->inputs[sid], *et = c->plan->inputs[eid];
  if (st->rank != 1 || et->rank != 1 || c->plan->inputs[w2]->rank != 3) return XR_OK;
  int64_t tokens = c->plan->inputs[x]->shape[0], topk = int_arg(c, "topk", 1);
  int64_t experts = c->plan->inputs[w2]->shape[0], block = int_arg(c, "block_m", 32);
  int64_t len = st->shape[0], blocks = et->shape[0];
  if (topk < 1 || block < 1 || experts < 1) return XR_OK;
  int64_t *ids = malloc(sizeof(int64_t) * (size_t)(tokens * topk + 1));
  double *weights = malloc(sizeof(double) * (size_t)(tokens * topk + 1));
  int64_t *start = calloc((size_t)experts + 1, sizeof *start);
  const char *mode;
  xr_status_t status = ids && weights && start ? XR_OK : xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  if (status == XR_OK) status = draw_routing(c, tokens, topk, experts, ids, weights, &mode);
  if (status == XR_OK) {
    for (int64_t i = 0; i < tokens * topk; i++) start[ids[i] + 1]++;
    for (int64_t e = 0; e < experts; e++) {
      int64_t n = (start[e + 1] + block - 1) / block;
      start[e + 1] = start[e] + (n ? n : 1) * block;
    }
    int64_t total = start[experts];
    double pad = (double)(int32_t)(((uint32_t)tokens & 0xffffffu) | ((uint32_t)topk << 24));
    for (int64_t i = 0; i < len; i++) {
      store_1d(c, sid, i, pad);
      if (sw >= 0 && !c->has_data[sw]) store_1d(c, sw, i, 0.0);
    }
    for (int64_t b = 0; b < blocks; b++) store_1d(c, eid, b, 0.0);
    for (int64_t e = 0; e < experts; e++)
      for (int64_t b = start[e] / block; b < start[e + 1] / block && b < blocks; b++)
        store_1d(c, eid, b, (double)e);
    for (int64_t i = 0; i < tokens * topk; i++) { /* ascending per expert: start[] advances */
      int64_t pos = start[ids[i]]++;
      if (pos >= len) continue;
      int64_t m = i / topk, j = i % topk;
      store_1d(c, sid, pos, (double)(int32_t)(((uint32_t)m & 0xffffffu) | ((uint32_t)j << 24)));
      if (sw >= 0 && !c->has_data[sw]) store_1d(c, sw, pos, weights[i]);
    }
    store_1d(c, nv, 0, (double)total);
    if (c->plan->inputs[nv]->shape[0] > 1) store_1d(c, nv, 1, (double)tokens);
    /* stage 2 accumulates into out, which the sorting zeroes (moe_buf) */
    if (out >= 0 && !c->has_data[out] && strstr(c->op->name, "stage2"))
      memset(c->host[out], 0, c->sizes[out]);
    char what[160];
    snprintf(what, sizeof what, "sorted ids (block_m %lld) from %s routing over %lld experts",
             (long long)block, mode, (long long)experts);
    append(c, "%s%s", what);
  }
  free(ids);
  free(weights);
  free(start);
  return status;
}

/* Expert ids for ops that take topk_ids (align, sorting, fused experts) and their routing
 * weights; pre-sorted inputs for the CK stages. */
static xr_status_t init_moe_routing(xr_init_context_t *c) {
  int ids = input_index(c, "topk_ids");
  if (ids < 0) ids = input_index(c, "topk_indices");
  if (ids < 0) return init_ck_sorted(c);
  if (c->has_data[ids]) return XR_OK;
  const xr_tensor_spec_t *t = c->plan->inputs[ids];
  if (t->rank != 2) return XR_OK;
  int64_t tokens = t->shape[0], topk = t->shape[1];
  int64_t experts = int_arg(c, "num_experts", -1);
  int w1 = input_index(c, "w1");
  if (experts < 0 && w1 >= 0) experts = c->plan->inputs[w1]->shape[0];
  if (experts < 1) return XR_OK;
  int64_t *drawn = malloc(sizeof(int64_t) * (size_t)(tokens * topk + 1));
  double *weights = malloc(sizeof(double) * (size_t)(tokens * topk + 1));
  const char *mode;
  xr_status_t status = drawn && weights ? XR_OK : xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  if (status == XR_OK) status = draw_routing(c, tokens, topk, experts, drawn, weights, &mode);
  if (status == XR_OK) {
    for (int64_t m = 0; m < tokens; m++)
      for (int64_t j = 0; j < topk; j++)
        xr_store_element(c->host[ids], t->dtype,
                         t->storage_offset + m * t->strides[0] + j * t->strides[1],
                         (double)drawn[m * topk + j]);
    int wt = input_index(c, "topk_weights");
    if (wt >= 0 && !c->has_data[wt] && !c->plan->input_written[wt] && c->plan->inputs[wt]->rank == 2) {
      const xr_tensor_spec_t *w = c->plan->inputs[wt];
      for (int64_t m = 0; m < tokens && w->shape[0] == tokens && w->shape[1] == topk; m++)
        for (int64_t j = 0; j < topk; j++)
          xr_store_element(c->host[wt], w->dtype,
                           w->storage_offset + m * w->strides[0] + j * w->strides[1],
                           weights[m * topk + j]);
    }
    char what[128];
    snprintf(what, sizeof what, "topk_ids %s over %lld experts", mode, (long long)experts);
    append(c, "%s%s", what);
  }
  free(drawn);
  free(weights);
  return status;
}

/* Index tensors must address rows that exist: draws each index uniformly in [0, rows). */
static xr_status_t fill_indices(xr_init_context_t *c, int index, int64_t rows, const char *what) {
  if (index < 0 || c->has_data[index] || rows < 1) return XR_OK;
  const xr_tensor_spec_t *t = c->plan->inputs[index];
  if (xr_dtype_is_floating(t->dtype)) return XR_OK;
  uint64_t s = c->seed;
  size_t n = c->sizes[index] / xr_dtype_size(t->dtype);
  for (size_t i = 0; i < n; i++)
    xr_store_element(c->host[index], t->dtype, (int64_t)i, (double)(xr_rng_next(&s) % (uint64_t)rows));
  char text[96];
  snprintf(text, sizeof text, "%s uniform in [0, %lld)", what, (long long)rows);
  append(c, "%s%s", text);
  return XR_OK;
}

static xr_status_t init_embedding(xr_init_context_t *c) {
  int w = input_index(c, "weight");
  return w < 0 ? XR_OK : fill_indices(c, input_index(c, "indices"), c->plan->inputs[w]->shape[0], "indices");
}

static xr_status_t init_index_select(xr_init_context_t *c) {
  int self = input_index(c, "self");
  if (self < 0) return XR_OK;
  const xr_tensor_spec_t *t = c->plan->inputs[self];
  int64_t dim = int_arg(c, "dim", 0);
  if (dim < 0) dim += t->rank;
  int64_t rows = t->rank == 0 ? 1 : (dim >= 0 && dim < t->rank ? t->shape[dim] : 0);
  return fill_indices(c, input_index(c, "index"), rows, "index");
}

/* Rotary positions index rows of the cos/sin cache. */
static xr_status_t init_rotary(xr_init_context_t *c) {
  int cache = input_index(c, "cos_sin_cache");
  return cache < 0 ? XR_OK
                   : fill_indices(c, input_index(c, "positions"), c->plan->inputs[cache]->shape[0],
                                  "positions");
}

void xr_register_builtin_initializers(void) {
  xr_register_initializer_locked("_C::rotary_embedding", init_rotary);
  xr_register_initializer_locked("aten::embedding", init_embedding);
  xr_register_initializer_locked("aten::index_select", init_index_select);
  static const char *const paged[] = {"_C::paged_attention_v1", "_C::paged_attention_v2",
                                      "_rocm_C::paged_attention"};
  static const char *const moe[] = {"_moe_C::moe_align_block_size", "vllm::outplace_fused_experts",
                                    "vllm::inplace_fused_experts", "aiter::moe_sorting_fwd",
                                    "aiter::ck_moe_stage1", "aiter::ck_moe_stage2"};
  for (size_t i = 0; i < sizeof paged / sizeof *paged; i++)
    xr_register_initializer_locked(paged[i], init_paged_attention);
  static const char *const varlen[] = {"aten::_flash_attention_forward", "aiter::mha_varlen_fwd",
                                       "aiter::mha_batch_prefill"};
  for (size_t i = 0; i < sizeof varlen / sizeof *varlen; i++)
    xr_register_initializer_locked(varlen[i], init_varlen_attention);
  xr_register_initializer_locked("vllm::unified_attention_with_output", init_unified_attention);
  xr_register_initializer_locked("vllm::unified_attention", init_unified_attention);
  xr_register_initializer_locked("_C_cache_ops::reshape_and_cache", init_cache_slots);
  xr_register_initializer_locked("_C_cache_ops::reshape_and_cache_flash", init_cache_slots);
  for (size_t i = 0; i < sizeof moe / sizeof *moe; i++)
    xr_register_initializer_locked(moe[i], init_moe_routing);
}
