/* The unified-attention family: vLLM v1's attention layer as one op (kernels/unified_attention.h
 * says what the op does and which tensors the replay supplies). Conventions from vLLM
 * (vllm/attention/layer.py, vllm/v1/attention/backends/flash_attn.py):
 * - query [num_tokens, num_heads, head_size] or flattened [num_tokens, num_heads * head_size];
 *   key/value [num_tokens, num_kv_heads, head_size] or flattened; output like query
 *   (unified_attention returns it);
 * - kv_cache [2, num_blocks, block_size, num_kv_heads, head_size], unbound into the key and the
 *   value cache; reshape_and_cache_flash writes token t at slot slot_mapping[t] (< 0: padding);
 * - flash_attn_varlen_func(cu_seqlens_q = query_start_loc, seqused_k = seq_lens, block_table,
 *   causal = True): query i of a sequence sees keys j <= i + seq_len - query_len;
 * - scale 1 / sqrt(head_size) (the layer's scale for standard attention; kwarg scale overrides);
 * - kv_cache_dtype fp8 / fp8_e4m3 / fp8_e5m2 with k_scale = v_scale = 1 (the layer default);
 *   without the kwarg a uint8 / fp8 kv_cache or an fp8 query means an fp8 cache;
 * - fp8 queries (Attention.query_quant over an fp8 cache): key, value and output in the model's
 *   dtype, queries dequantised by the layer's _q_scale (kwarg q_scale, default 1);
 * - an fp8 output with output_scale (the attention + quant fusion): fp8(clamp(o / scale)), as
 *   TritonAttentionImpl does; output_block_scale (NVFP4) is not implemented;
 * - the cache write was part of this op up to vLLM 0.11 and is what the op's key/value
 *   arguments are for; newer vLLM moved it to vllm::unified_kv_cache_update.
 * The work is two existing kernels over the same bindings: the kv_cache family's scatter and
 * the attention family's paged kernel, so every implementation composes two parts. */
#include "kernels/unified_attention.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/initializer.h"

static const char *const ua_ops[] = {
    "vllm::unified_attention_with_output",
    "vllm::unified_attention",
    NULL,
};

/* The kwargs the replay adds when the bundle lacks them, in binding order. */
static const char *const synthesized[] = {"kv_cache", "block_table", "seq_lens", "query_start_loc",
                                          "slot_mapping"};
enum { SYNTH_COUNT = 5, DEFAULT_BLOCK_SIZE = 16 };

/* INVALID_ARGUMENT with the op's name in front (analysis has a plan for that; completion not). */
__attribute__((format(printf, 2, 3))) static xr_status_t op_error(const xr_op_t *op, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  return xr_error(XR_INVALID_ARGUMENT, "%s: %s", op->name, text);
}

static const xr_tensor_spec_t *tensor_arg(const xr_op_t *op, int position, const char *name) {
  const xr_value_t *v = xr_op_arg(op, position, name);
  return v && v->kind == XR_VALUE_TENSOR ? v->as.tensor : NULL;
}

static bool is_float(xr_dtype_t d) { return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16; }

static bool has_contents(const xr_tensor_spec_t *t) { return t->data || t->data_file; }

/* ------------------------------------------------------------------------------------------ */
/* geometry: what query, key and value say                                                      */

typedef struct geometry {
  const xr_tensor_spec_t *q, *k, *v, *kv_cache;
  int64_t tokens, heads, kv_heads, head_size, block_size, num_blocks, kv_block_dim;
  xr_dtype_t dtype;       /* the model's: key and value (an fp8 query was quantized from it) */
  xr_dtype_t cache_dtype; /* the cache's element format */
} geometry_t;

static bool is_fnuz(xr_dtype_t d) { return d == XR_DTYPE_F8E4M3FNUZ || d == XR_DTYPE_F8E5M2FNUZ; }

/* The cache's element format. kv_cache_dtype "fp8" / "fp8_e4m3" / "fp8_e5m2" is OCP e4m3fn /
 * e5m2, or AMD's fnuz variant where the query or output is an fnuz type (vLLM on MI300); a given
 * fp8 kv_cache tensor is its own format. Without the kwarg (the layer attribute a trace does not
 * record) a uint8 or fp8 kv_cache, or an fp8 query, means an fp8 cache: vLLM quantizes queries
 * only over an fp8 cache; the format is the cache tensor's, else the fp8 query's (e4m3 for a
 * uint8 cache). */
static xr_status_t cache_format(const xr_op_t *op, geometry_t *g, const char *kv_dtype, bool given) {
  const xr_tensor_spec_t *c = g->kv_cache, *out = tensor_arg(op, 3, "output");
  bool fnuz = is_fnuz(g->q->dtype) || (out && is_fnuz(out->dtype));
  bool bytes = c && (c->dtype == XR_DTYPE_U8 || c->dtype == XR_DTYPE_I8), fp8_tensor = c && xr_dtype_is_fp8(c->dtype);
  if (!given) {
    if (fp8_tensor) g->cache_dtype = c->dtype;
    else if (xr_dtype_is_fp8(g->q->dtype) && !bytes) g->cache_dtype = g->q->dtype;
    else if (bytes || xr_dtype_is_fp8(g->q->dtype))
      g->cache_dtype = fnuz ? XR_DTYPE_F8E4M3FNUZ : XR_DTYPE_F8E4M3FN;
    else g->cache_dtype = g->dtype;
    return XR_OK;
  }
  if (!strcmp(kv_dtype, "auto")) g->cache_dtype = g->dtype;
  else if (!strcmp(kv_dtype, "fp8") || !strcmp(kv_dtype, "fp8_e4m3"))
    g->cache_dtype = fnuz ? XR_DTYPE_F8E4M3FNUZ : XR_DTYPE_F8E4M3FN;
  else if (!strcmp(kv_dtype, "fp8_e5m2")) g->cache_dtype = fnuz ? XR_DTYPE_F8E5M2FNUZ : XR_DTYPE_F8E5M2;
  else return xr_error(XR_INVALID_ARGUMENT, "%s: kv_cache_dtype '%s': expected auto, fp8, fp8_e4m3 or fp8_e5m2",
                       op->name, kv_dtype);
  if (fp8_tensor && xr_dtype_is_fp8(g->cache_dtype)) g->cache_dtype = c->dtype;
  return XR_OK;
}

/* Heads of a [T, heads, D] or [T, heads * D] tensor. */
static xr_status_t heads_of(const xr_op_t *op, const char *name, const xr_tensor_spec_t *t, int64_t D,
                            int64_t *out) {
  if (t->rank == 3) {
    if (t->shape[2] != D)
      return op_error(op, "%s: head size %lld differs from %lld", name, (long long)t->shape[2], (long long)D);
    *out = t->shape[1];
  } else {
    if (t->shape[1] % D) return op_error(op, "%s: width %lld is not a multiple of head_size %lld", name, (long long)t->shape[1], (long long)D);
    *out = t->shape[1] / D;
  }
  return XR_OK;
}

static xr_status_t read_geometry(const xr_op_t *op, geometry_t *g) {
  memset(g, 0, sizeof *g);
  g->q = tensor_arg(op, 0, "query"), g->k = tensor_arg(op, 1, "key"), g->v = tensor_arg(op, 2, "value");
  const char *names[3] = {"query", "key", "value"};
  const xr_tensor_spec_t *t[3] = {g->q, g->k, g->v};
  for (int i = 0; i < 3; i++) {
    if (!t[i]) return op_error(op, "%s: expected a tensor (the argument is missing or None)", names[i]);
    if (t[i]->rank != 2 && t[i]->rank != 3)
      return op_error(op, "%s: expected [num_tokens, heads, head_size] or [num_tokens, heads * head_size], got "
                          "%d-D", names[i], t[i]->rank);
    if (t[i]->shape[0] != g->q->shape[0])
      return op_error(op, "%s: %lld tokens, query has %lld", names[i], (long long)t[i]->shape[0], (long long)g->q->shape[0]);
  }
  /* query: the model's float type, or fp8 (quantized by the layer, vLLM's fp8 attention);
   * key and value: the model's float type */
  bool fp8_query = xr_dtype_is_fp8(g->q->dtype);
  if (!is_float(g->q->dtype) && !fp8_query)
    return op_error(op, "%s: expected float32, float16, bfloat16 or an fp8 type, got %s", "query",
                    xr_dtype_name(g->q->dtype));
  for (int i = 1; i < 3; i++)
    if (!is_float(t[i]->dtype) || t[i]->dtype != (fp8_query ? g->k->dtype : g->q->dtype))
      return xr_error(XR_INVALID_ARGUMENT, "%s: %s: expected float32, float16 or bfloat16 like %s, got %s", op->name,
                      names[i], fp8_query ? "key" : "query", xr_dtype_name(t[i]->dtype));
  g->dtype = g->k->dtype;
  g->tokens = g->q->shape[0];
  if (g->tokens < 1) return op_error(op, "%s: no tokens (a serving step has at least one)", "query");
  int64_t D = g->k->rank == 3 ? g->k->shape[2] : g->q->rank == 3 ? g->q->shape[2] : 0;
  xr_status_t st;
  if (!D && (st = xr_arg_int(op, -1, "head_size", false, &D)) != XR_OK) return st;
  if (D < 1)
    return op_error(op, "%s: query and key are both flattened ([num_tokens, heads * head_size]); add an int kwarg "
                        "head_size", "head_size");
  int64_t kv_heads_v;
  if ((st = heads_of(op, "query", g->q, D, &g->heads)) || (st = heads_of(op, "key", g->k, D, &g->kv_heads)) ||
      (st = heads_of(op, "value", g->v, D, &kv_heads_v)))
    return st;
  if (kv_heads_v != g->kv_heads)
    return op_error(op, "%s: %lld heads, key has %lld (a head_size_v differing from head_size is not supported: "
                        "one cache holds both)", "value", (long long)kv_heads_v, (long long)g->kv_heads);
  if (g->kv_heads < 1 || g->heads % g->kv_heads)
    return op_error(op, "%s: %lld kv heads do not divide the query's %lld heads", "key", (long long)g->kv_heads, (long long)g->heads);
  g->head_size = D;
  const char *kv_dtype = NULL;
  if ((st = xr_arg_string(op, -1, "kv_cache_dtype", false, &kv_dtype)) != XR_OK) return st;
  /* block_size and num_blocks: a given kv_cache fixes them, else the kwargs. */
  g->block_size = DEFAULT_BLOCK_SIZE;
  g->num_blocks = -1;
  if ((st = xr_arg_int(op, -1, "block_size", false, &g->block_size)) != XR_OK ||
      (st = xr_arg_int(op, -1, "num_blocks", false, &g->num_blocks)) != XR_OK)
    return st;
  if (g->block_size < 1) return op_error(op, "%s: must be positive, got %lld", "block_size", (long long)g->block_size);
  g->kv_block_dim = 1;
  const xr_value_t *kvv = xr_op_arg(op, -1, "kv_cache");
  if (kvv && kvv->kind != XR_VALUE_NULL && kvv->kind != XR_VALUE_TENSOR)
    return op_error(op, "%s: expected a tensor", "kv_cache");
  g->kv_cache = tensor_arg(op, -1, "kv_cache");
  if ((st = cache_format(op, g, kv_dtype, kv_dtype != NULL)) != XR_OK) return st;
  if (!kv_dtype) kv_dtype = xr_dtype_is_fp8(g->cache_dtype) ? "fp8 (implied)" : "auto";
  if (g->kv_cache) {
    const xr_tensor_spec_t *c = g->kv_cache;
    if (c->rank != 5 || (c->shape[0] != 2 && c->shape[1] != 2) || c->shape[3] != g->kv_heads ||
        c->shape[4] != D)
      return xr_error(XR_INVALID_ARGUMENT,
                      "%s: kv_cache: expected [2, num_blocks, block_size, %lld, %lld] (or [num_blocks, 2, ...])",
                      op->name, (long long)g->kv_heads, (long long)D);
    g->kv_block_dim = c->shape[0] == 2 ? 1 : 0;
    int64_t bs = c->shape[2], nb = c->shape[g->kv_block_dim];
    if (xr_op_arg(op, -1, "block_size") && bs != g->block_size)
      return op_error(op, "%s: %lld differs from kv_cache's block size %lld", "block_size", (long long)g->block_size, (long long)bs);
    if (g->num_blocks >= 0 && nb != g->num_blocks)
      return op_error(op, "%s: %lld differs from kv_cache's %lld blocks", "num_blocks", (long long)g->num_blocks, (long long)nb);
    g->block_size = bs, g->num_blocks = nb;
    bool fp8_bytes = (c->dtype == XR_DTYPE_U8 || c->dtype == XR_DTYPE_I8) && xr_dtype_is_fp8(g->cache_dtype);
    if (c->dtype != g->cache_dtype && !fp8_bytes)
      return xr_error(XR_INVALID_ARGUMENT, "%s: kv_cache: kv_cache_dtype '%s' needs a %s cache, got %s", op->name,
                      kv_dtype, xr_dtype_name(g->cache_dtype), xr_dtype_name(c->dtype));
  }
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* the layout: sequences and their lengths                                                      */

static bool hint_int(const xr_op_t *op, const char *name, int64_t *out) {
  for (size_t i = 0; i < op->hint_count; i++)
    if (op->hints[i].name && !strcmp(op->hints[i].name, name) && op->hints[i].value.kind == XR_VALUE_INT) {
      *out = op->hints[i].value.as.i;
      return true;
    }
  return false;
}

/* An int list kwarg (a single int counts as one entry); *out_count 0 when absent or a tensor. */
static xr_status_t int_list(const xr_op_t *op, const char *name, const xr_value_t **out_items, size_t *out_count) {
  const xr_value_t *v = xr_op_arg(op, -1, name);
  *out_items = NULL, *out_count = 0;
  if (!v || v->kind == XR_VALUE_NULL || v->kind == XR_VALUE_TENSOR) return XR_OK;
  if (v->kind == XR_VALUE_INT) {
    *out_items = v, *out_count = 1;
    return XR_OK;
  }
  if (v->kind != XR_VALUE_LIST || v->as.list.count == 0)
    return op_error(op, "%s: expected a tensor or a non-empty list of ints", name);
  for (size_t i = 0; i < v->as.list.count; i++)
    if (v->as.list.items[i].kind != XR_VALUE_INT)
      return op_error(op, "%s: entry %lld is not an int", name, (long long)i);
  *out_items = v->as.list.items, *out_count = v->as.list.count;
  return XR_OK;
}

static int64_t share(int64_t total, int64_t count, int64_t i) { return total / count + (i < total % count); }

static void layout_free(xr_ua_layout_t *l) {
  free(l->q_len);
  free(l->k_len);
  l->q_len = l->k_len = NULL;
}

static xr_status_t layout_alloc(const xr_op_t *op, xr_ua_layout_t *l, int64_t seqs) {
  l->seqs = seqs;
  l->q_len = calloc((size_t)seqs, sizeof *l->q_len);
  l->k_len = calloc((size_t)seqs, sizeof *l->k_len);
  if (!l->q_len || !l->k_len) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory for %lld sequences",
                                              op->name, (long long)seqs);
  return XR_OK;
}

/* The iteration hints, when they fit `tokens` query tokens: decode sequences first (vLLM v1
 * reorders a mixed batch so), each holding decode_tokens / decode_seqs queries, then the
 * prefills sharing prefill_tokens. Key lengths share the *_context_tokens totals (each at least
 * its queries); without them a prefill is a fresh prompt (keys = its queries) and a decode
 * sequence has XR_UA_DEFAULT_DECODE_KEYS keys. False when there are no usable hints. */
static bool layout_from_hints(const xr_op_t *op, int64_t tokens, xr_ua_layout_t *l, xr_status_t *st) {
  int64_t P, PT, Dn, DT, PK = -1, DK = -1;
  *st = XR_OK;
  if (!hint_int(op, "prefill_seqs", &P) || !hint_int(op, "prefill_tokens", &PT) ||
      !hint_int(op, "decode_seqs", &Dn) || !hint_int(op, "decode_tokens", &DT))
    return false;
  hint_int(op, "prefill_context_tokens", &PK);
  hint_int(op, "decode_context_tokens", &DK);
  if (P < 0 || PT < 0 || Dn < 0 || DT < 0 || P + Dn < 1 || (P == 0) != (PT == 0) || PT < P ||
      (Dn == 0) != (DT == 0) || DT < Dn || PT + DT > tokens)
    return false;
  if ((*st = layout_alloc(op, l, P + Dn)) != XR_OK) return false;
  for (int64_t b = 0; b < P + Dn; b++) {
    bool decode = b < Dn;
    int64_t i = decode ? b : b - Dn, n = decode ? Dn : P, q = share(decode ? DT : PT, n, i);
    int64_t total = decode ? DK : PK;
    int64_t k = total >= (decode ? DT : PT) ? share(total, n, i) : decode ? XR_UA_DEFAULT_DECODE_KEYS : q;
    l->q_len[b] = q;
    l->k_len[b] = k > q ? k : q;
  }
  char decode_keys[48];
  snprintf(decode_keys, sizeof decode_keys, "%d keys each", XR_UA_DEFAULT_DECODE_KEYS);
  snprintf(l->text, sizeof l->text, "layout from the trace's hints: %lld decode (%lld tokens, %s) + %lld prefill "
           "(%lld tokens, %s)", (long long)Dn, (long long)DT, DK >= DT && Dn ? "keys from the hints" :
           Dn ? decode_keys : "-", (long long)P, (long long)PT, PK >= PT && P ? "keys from the hints" :
           P ? "keys = queries" : "-");
  l->source = XR_UA_FROM_HINTS;
  return true;
}

/* Decides the layout of an op with `tokens` query tokens (see kernels/unified_attention.h). */
static xr_status_t decide_layout(const xr_op_t *op, int64_t tokens, xr_ua_layout_t *l) {
  memset(l, 0, sizeof *l);
  const xr_value_t *ql, *sl;
  size_t nq, ns;
  xr_status_t st;
  if ((st = int_list(op, "query_lens", &ql, &nq)) != XR_OK ||
      (st = int_list(op, "context_lens", &sl, &ns)) != XR_OK)
    return st;
  if (nq) {
    if ((st = layout_alloc(op, l, (int64_t)nq)) != XR_OK) return st;
    int64_t sum = 0;
    for (size_t b = 0; b < nq; b++) {
      l->q_len[b] = ql[b].as.i;
      if (l->q_len[b] < 1) return op_error(op, "%s: entry %lld is %lld; a sequence has at least one query", "query_lens",
                                           (long long)b, (long long)l->q_len[b]);
      sum += l->q_len[b];
      l->k_len[b] = l->q_len[b];
    }
    if (sum > tokens) return op_error(op, "%s: %lld tokens in all, the query has %lld", "query_lens", (long long)sum, (long long)tokens);
    l->source = XR_UA_FROM_KWARGS;
    snprintf(l->text, sizeof l->text, "layout from the query_lens kwarg: %lld sequences", (long long)nq);
  } else if (!layout_from_hints(op, tokens, l, &st)) {
    if (st != XR_OK) return st;
    if ((st = layout_alloc(op, l, 1)) != XR_OK) return st;
    l->q_len[0] = l->k_len[0] = tokens;
    snprintf(l->text, sizeof l->text, "default layout: one sequence, all %lld tokens its queries",
             (long long)tokens);
  }
  if (ns) {
    if (ns != 1 && (int64_t)ns != l->seqs)
      return op_error(op, "%s: %lld entries for %lld sequences (give one per sequence, or one for all)",
                      "context_lens", (long long)ns, (long long)l->seqs);
    for (int64_t b = 0; b < l->seqs; b++) {
      int64_t cached = sl[ns == 1 ? 0 : b].as.i;
      if (cached < 0)
        return op_error(op, "%s: sequence %lld has %lld cached tokens", "context_lens", (long long)b, (long long)cached);
      l->k_len[b] = l->q_len[b] + cached;
    }
    size_t n = strlen(l->text);
    snprintf(l->text + n, sizeof l->text - n, ", cached tokens from the context_lens kwarg");
    l->source = XR_UA_FROM_KWARGS;
  }
  return XR_OK;
}

static void layout_totals(xr_ua_layout_t *l, int64_t block_size) {
  l->tokens = l->max_q = l->max_k = l->blocks_needed = 0;
  for (int64_t b = 0; b < l->seqs; b++) {
    l->tokens += l->q_len[b];
    if (l->q_len[b] > l->max_q) l->max_q = l->q_len[b];
    if (l->k_len[b] > l->max_k) l->max_k = l->k_len[b];
    l->blocks_needed += (l->k_len[b] + block_size - 1) / block_size;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* completion                                                                                  */

static xr_status_t add_tensor(xr_arena_t *arena, xr_arg_t *arg, const char *name, const char *type, xr_dtype_t dtype,
                              int32_t rank, const int64_t *shape) {
  arg->name = xr_arena_strdup(arena, name);
  arg->type = xr_arena_strdup(arena, type);
  xr_status_t st = xr_value_make_tensor(arena, &arg->value, rank);
  if (st != XR_OK) return st;
  if (!arg->name || !arg->type) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory completing %s", name);
  xr_tensor_spec_t *t = arg->value.as.tensor;
  memcpy(t->shape, shape, sizeof(int64_t) * (size_t)rank);
  t->dtype = dtype;
  xr_tensor_set_contiguous(t);
  return XR_OK;
}

static xr_status_t complete(const xr_op_t *op, xr_arena_t *scratch, xr_op_t **out_op) {
  *out_op = NULL;
  bool missing[SYNTH_COUNT];
  size_t n_missing = 0;
  for (int i = 0; i < SYNTH_COUNT; i++) {
    const xr_value_t *v = xr_op_arg(op, -1, synthesized[i]);
    missing[i] = !v || v->kind != XR_VALUE_TENSOR;
    if (missing[i] && v && v->kind != XR_VALUE_NULL)
      return op_error(op, "%s: expected a tensor", synthesized[i]);
    n_missing += missing[i];
  }
  if (!n_missing) return XR_OK;
  geometry_t g;
  xr_ua_layout_t l = {0};
  xr_status_t st = read_geometry(op, &g);
  if (st == XR_OK) st = decide_layout(op, g.tokens, &l);
  if (st != XR_OK) {
    layout_free(&l);
    return st;
  }
  layout_totals(&l, g.block_size);
  int64_t max_blocks = (l.max_k + g.block_size - 1) / g.block_size;
  const xr_tensor_spec_t *given_table = tensor_arg(op, -1, "block_table");
  if (given_table && given_table->rank == 2) max_blocks = given_table->shape[1];
  int64_t num_blocks = g.num_blocks >= 0 ? g.num_blocks : l.blocks_needed + 1; /* one spare, poisoned */
  layout_free(&l);
  xr_op_t *c = xr_arena_alloc(scratch, sizeof *c);
  if (!c) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory completing %s", op->name);
  *c = *op;
  c->kwargs = xr_arena_alloc(scratch, (op->kwarg_count + n_missing) * sizeof *c->kwargs);
  if (!c->kwargs) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory completing %s", op->name);
  /* Named None kwargs of the same names would shadow the added ones: drop them. */
  c->kwarg_count = 0;
  for (size_t i = 0; i < op->kwarg_count; i++) {
    bool shadow = false;
    for (int k = 0; k < SYNTH_COUNT; k++)
      if (missing[k] && op->kwargs[i].name && !strcmp(op->kwargs[i].name, synthesized[k]) &&
          op->kwargs[i].value.kind == XR_VALUE_NULL)
        shadow = true;
    if (!shadow) c->kwargs[c->kwarg_count++] = op->kwargs[i];
  }
  int64_t seqs = l.seqs;
  int64_t kv_shape[5] = {2, num_blocks, g.block_size, g.kv_heads, g.head_size};
  int64_t table_shape[2] = {seqs, max_blocks}, lens_shape[1] = {seqs}, qsl_shape[1] = {seqs + 1};
  int64_t slots_shape[1] = {g.tokens};
  struct { const char *type; xr_dtype_t dtype; int32_t rank; const int64_t *shape; } spec[SYNTH_COUNT] = {
      {"Tensor(a!)", g.cache_dtype, 5, kv_shape}, {"Tensor", XR_DTYPE_I32, 2, table_shape},
      {"Tensor", XR_DTYPE_I32, 1, lens_shape},    {"Tensor", XR_DTYPE_I32, 1, qsl_shape},
      {"Tensor", XR_DTYPE_I64, 1, slots_shape}};
  for (int k = 0; k < SYNTH_COUNT; k++) {
    if (!missing[k]) continue;
    if ((st = add_tensor(scratch, &c->kwargs[c->kwarg_count++], synthesized[k], spec[k].type, spec[k].dtype,
                         spec[k].rank, spec[k].shape)) != XR_OK)
      return st;
  }
  *out_op = c;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* analysis                                                                                    */

static void free_problem(void *problem) {
  xr_ua_problem_t *u = problem;
  if (!u) return;
  layout_free(&u->layout);
  free(u);
}

static xr_status_t index_tensor(xr_op_plan_t *plan, int index, const char *name, int rank, int64_t min0,
                                bool exact) {
  const xr_tensor_spec_t *t = plan->inputs[index];
  if ((t->dtype != XR_DTYPE_I32 && t->dtype != XR_DTYPE_I64) || t->rank != rank)
    return xr_plan_error(plan, "%s: expected a %d-D int32 or int64 tensor", name, rank);
  if (exact ? t->shape[0] != min0 : t->shape[0] < min0)
    return xr_plan_error(plan, "%s: %lld rows, the layout needs %s%lld", name, (long long)t->shape[0],
                         exact ? "" : "at least ", (long long)min0);
  return XR_OK;
}

/* Strides of a [T, heads, D] or flattened [T, heads * D] view: token, head, dim. */
static void head_strides(const xr_tensor_spec_t *t, int64_t D, int64_t *st, int64_t *sh, int64_t *sd) {
  *st = t->strides[0];
  if (t->rank == 3) *sh = t->strides[1], *sd = t->strides[2];
  else *sh = D * t->strides[1], *sd = t->strides[1];
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  const xr_op_t *op = plan->op;
  xr_ua_problem_t *u = calloc(1, sizeof *u);
  if (!u) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", op->name);
  plan->problem = u;
  bool with_output = !strcmp(op->name, "vllm::unified_attention_with_output");
  geometry_t g;
  const char *layer = NULL;
  int oscale = -1, oblock = -1;
  xr_status_t st;
  if ((st = read_geometry(op, &g)) || (st = xr_arg_tensor(plan, 0, "query", true, &u->query)) ||
      (st = xr_arg_tensor(plan, 1, "key", true, &u->key)) || (st = xr_arg_tensor(plan, 2, "value", true, &u->value)) ||
      (with_output && (st = xr_arg_tensor(plan, 3, "output", true, &u->output))) ||
      (st = xr_arg_string(op, with_output ? 4 : 3, "layer_name", false, &layer)) ||
      (with_output && (st = xr_arg_tensor(plan, 5, "output_scale", false, &oscale))) ||
      (with_output && (st = xr_arg_tensor(plan, 6, "output_block_scale", false, &oblock))) ||
      (st = xr_arg_tensor(plan, -1, "kv_cache", true, &u->kv_cache)) ||
      (st = xr_arg_tensor(plan, -1, "block_table", true, &u->block_table)) ||
      (st = xr_arg_tensor(plan, -1, "seq_lens", true, &u->seq_lens)) ||
      (st = xr_arg_tensor(plan, -1, "query_start_loc", true, &u->query_start_loc)) ||
      (st = xr_arg_tensor(plan, -1, "slot_mapping", true, &u->slot_mapping)) ||
      (st = decide_layout(op, g.tokens, &u->layout)))
    return st;
  xr_ua_layout_t *l = &u->layout;
  layout_totals(l, g.block_size);
  u->num_tokens = g.tokens, u->heads = g.heads, u->kv_heads = g.kv_heads, u->head_size = g.head_size;
  u->block_size = g.block_size, u->num_blocks = g.num_blocks, u->kv_block_dim = g.kv_block_dim;
  const int64_t T = g.tokens, H = g.heads, Hk = g.kv_heads, D = g.head_size, S = l->seqs;
  const xr_tensor_spec_t *q = g.q, *k = g.k, *v = g.v, *kv = plan->inputs[u->kv_cache];
  const xr_tensor_spec_t *tab = plan->inputs[u->block_table], *lens = plan->inputs[u->seq_lens];
  const xr_tensor_spec_t *qsl = plan->inputs[u->query_start_loc], *slots = plan->inputs[u->slot_mapping];
  if ((st = index_tensor(plan, u->block_table, "block_table", 2, S, false)) ||
      (st = index_tensor(plan, u->seq_lens, "seq_lens", 1, S, true)) ||
      (st = index_tensor(plan, u->query_start_loc, "query_start_loc", 1, S + 1, true)) ||
      (st = index_tensor(plan, u->slot_mapping, "slot_mapping", 1, 0, false)))
    return st;
  if (slots->shape[0] > T)
    return xr_plan_error(plan, "slot_mapping: %lld entries for %lld tokens", (long long)slots->shape[0], (long long)T);
  u->max_blocks = tab->shape[1];
  if (!has_contents(lens) && u->max_blocks * g.block_size < l->max_k)
    return xr_plan_error(plan, "block_table: %lld blocks per sequence cannot hold %lld keys of %lld-token blocks",
                         (long long)u->max_blocks, (long long)l->max_k, (long long)g.block_size);
  if (!has_contents(tab) && u->num_blocks < l->blocks_needed)
    return xr_plan_error(plan, "num_blocks: %lld cache blocks cannot hold the %lld the sequences need",
                         (long long)u->num_blocks, (long long)l->blocks_needed);
  /* The output: given (with_output) or returned, in the model's dtype (key's; the query's
   * unless it is fp8), or fp8 with an output_scale (vLLM's fused output quantization). */
  const xr_tensor_spec_t *out = NULL;
  xr_dtype_t o_dtype = g.dtype;
  if (with_output) {
    out = plan->inputs[u->output];
    o_dtype = out->dtype;
    if (oscale >= 0) {
      const xr_tensor_spec_t *os = plan->inputs[oscale];
      if (os->dtype != XR_DTYPE_F32 || xr_spec_numel(os) != 1)
        return xr_plan_error(plan, "output_scale: expected a float32 tensor with one element, got %s",
                             xr_dtype_name(os->dtype));
      if (!xr_dtype_is_fp8(out->dtype))
        return xr_plan_error(plan, "output_scale: given, but output is %s (vLLM quantizes into an fp8 output)",
                             xr_dtype_name(out->dtype));
    } else if (xr_dtype_is_fp8(out->dtype)) {
      return xr_plan_error(plan, "output: an fp8 output (%s) needs output_scale, as vLLM's fused quantization "
                                 "passes it", xr_dtype_name(out->dtype));
    } else if (out->dtype != g.dtype) {
      return xr_plan_error(plan, "output: expected %s like %s, or fp8 with output_scale", xr_dtype_name(g.dtype),
                           xr_dtype_is_fp8(q->dtype) ? "key" : "query");
    }
    if (out->rank != q->rank || out->shape[0] != T || out->shape[1] != q->shape[1] ||
        (q->rank == 3 && out->shape[2] != q->shape[2]))
      return xr_plan_error(plan, "output: expected the query's shape");
  } else {
    plan->return_count = 1;
    xr_desc_set(&plan->returns[0], g.dtype, q->rank, q->shape);
    u->output = (int)plan->input_count;
  }
  if (oblock >= 0) u->attn.unsupported = "a block-scaled output (output_block_scale, NVFP4) is not implemented";

  /* The cache write: reshape_and_cache_flash over the key and value halves of kv_cache. */
  xr_cache_problem_t *c = &u->cache;
  int64_t half = kv->strides[u->kv_block_dim ? 0 : 1], blk = kv->strides[u->kv_block_dim];
  c->key = u->key, c->value = u->value, c->key_cache = c->value_cache = u->kv_cache;
  c->slots = u->slot_mapping, c->k_scale = c->v_scale = -1;
  c->src_dtype = k->dtype, c->cache_dtype = g.cache_dtype;
  c->slots_64 = slots->dtype == XR_DTYPE_I64;
  c->tokens = slots->shape[0], c->kv_heads = Hk, c->head_dim = D, c->block_size = g.block_size;
  head_strides(k, D, &c->key_st, &c->key_sh, &c->key_sd);
  head_strides(v, D, &c->value_st, &c->value_sh, &c->value_sd);
  c->key_off = k->storage_offset, c->value_off = v->storage_offset, c->slots_off = slots->storage_offset;
  c->kc_off = kv->storage_offset, c->vc_off = kv->storage_offset + half;
  c->kc_sb = c->vc_sb = blk, c->kc_ss = c->vc_ss = kv->strides[2], c->kc_sh = c->vc_sh = kv->strides[3];
  c->kc_sd = c->vc_sd = kv->strides[4], c->kc_sdx = 0, c->kc_x = D;

  /* The attention: packed queries per query_start_loc, keys through block_table up to seq_lens,
   * causal bottom-right. Real index contents are only bounded by the tensors' shapes. */
  xr_attn_problem_t *a = &u->attn;
  const char *unsupported = a->unsupported;
  xr_attn_init_params(a);
  a->unsupported = unsupported;
  int64_t *p = a->p;
  double scale = 1.0 / sqrt((double)D), softcap = 0, q_scale = 1.0;
  if ((st = xr_arg_double(op, -1, "scale", false, &scale)) ||
      (st = xr_arg_double(op, -1, "logits_soft_cap", false, &softcap)) ||
      (st = xr_arg_double(op, -1, "q_scale", false, &q_scale)))
    return st;
  p[XR_AP_batch] = S, p[XR_AP_heads] = H, p[XR_AP_kv_heads] = Hk, p[XR_AP_group] = H / Hk;
  p[XR_AP_head_dim] = p[XR_AP_head_dim_v] = D;
  p[XR_AP_max_q] = has_contents(qsl) ? T : l->max_q;
  p[XR_AP_max_k] = has_contents(lens) ? u->max_blocks * g.block_size : l->max_k;
  a->q_dtype = q->dtype, a->o_dtype = o_dtype;
  a->kv_dtype = g.cache_dtype;
  xr_attn_set_float(a, XR_AP_q_scale_bits, q_scale); /* fp8 queries: the layer's _q_scale */
  u->output_scale = oscale;
  if (oscale >= 0) a->t[XR_AT_O_SCALE] = oscale, p[XR_AP_o_scale_off] = plan->inputs[oscale]->storage_offset;
  p[XR_AP_kv_fp8] = xr_dtype_is_fp8(g.cache_dtype);
  a->t[XR_AT_Q] = u->query, a->t[XR_AT_K] = a->t[XR_AT_V] = u->kv_cache, a->t[XR_AT_OUT] = u->output;
  a->t[XR_AT_CU_Q] = u->query_start_loc, a->t[XR_AT_LENS] = u->seq_lens, a->t[XR_AT_TABLE] = u->block_table;
  p[XR_AP_q_off] = q->storage_offset, p[XR_AP_q_sb] = 0;
  head_strides(q, D, &p[XR_AP_q_ss], &p[XR_AP_q_sh], &p[XR_AP_q_sd]);
  if (out) {
    p[XR_AP_o_off] = out->storage_offset;
    head_strides(out, D, &p[XR_AP_o_ss], &p[XR_AP_o_sh], &p[XR_AP_o_sd]);
  } else {
    p[XR_AP_o_ss] = H * D, p[XR_AP_o_sh] = D, p[XR_AP_o_sd] = 1;
  }
  p[XR_AP_o_sb] = 0;
  p[XR_AP_k_off] = c->kc_off, p[XR_AP_k_sp] = blk, p[XR_AP_k_ss] = c->kc_ss, p[XR_AP_k_sh] = c->kc_sh;
  p[XR_AP_k_sd] = c->kc_sd, p[XR_AP_k_sdx] = 0, p[XR_AP_k_x] = D;
  p[XR_AP_v_off] = c->vc_off, p[XR_AP_v_sp] = blk, p[XR_AP_v_ss] = c->vc_ss, p[XR_AP_v_sh] = c->vc_sh;
  p[XR_AP_v_sd] = c->vc_sd;
  p[XR_AP_cu_q_off] = qsl->storage_offset, p[XR_AP_cu_q_64] = qsl->dtype == XR_DTYPE_I64;
  p[XR_AP_lens_off] = lens->storage_offset, p[XR_AP_lens_64] = lens->dtype == XR_DTYPE_I64;
  p[XR_AP_paged] = 1, p[XR_AP_page_size] = g.block_size;
  p[XR_AP_table_off] = tab->storage_offset, p[XR_AP_table_64] = tab->dtype == XR_DTYPE_I64;
  p[XR_AP_table_sb] = tab->strides[0], p[XR_AP_table_sp] = tab->strides[1];
  p[XR_AP_causal] = p[XR_AP_bottom_right] = 1;
  xr_attn_set_float(a, XR_AP_scale_bits, scale);
  xr_attn_set_float(a, XR_AP_softcap_bits, softcap);
  a->total_q_rows = T;

  /* Work of the layout: row i of a sequence sees k_len - q_len + i + 1 keys; every key costs a
   * dot product and an accumulation of head_size each. Traffic: each sequence's keys and values
   * once per kv head (the cache the block table references, not the whole cache), the queries
   * and outputs, the new tokens' key/value read and written, and the small inputs: the
   * block-table entries those keys use, seq_lens, query_start_loc, slot_mapping, the output
   * scale. */
  double keys = 0, kv_tokens = 0, table_entries = 0;
  for (int64_t b = 0; b < S; b++) {
    double qn = (double)l->q_len[b], kn = (double)l->k_len[b];
    keys += qn * (kn - qn) + qn * (qn + 1) / 2;
    kv_tokens += kn;
    table_entries += (double)((l->k_len[b] + g.block_size - 1) / g.block_size);
  }
  double qsz = (double)xr_dtype_size(q->dtype), osz = (double)xr_dtype_size(o_dtype);
  double esz = (double)xr_dtype_size(k->dtype), csz = (double)xr_dtype_size(kv->dtype);
  double small = table_entries * (double)xr_dtype_size(tab->dtype) +
                 (double)S * (double)xr_dtype_size(lens->dtype) + (double)(S + 1) * (double)xr_dtype_size(qsl->dtype) +
                 (double)slots->shape[0] * (double)xr_dtype_size(slots->dtype) + (oscale >= 0 ? 4.0 : 0.0);
  plan->flops = 2.0 * (double)H * keys * (double)(2 * D);
  plan->bytes = 2.0 * kv_tokens * (double)(Hk * D) * csz + (double)(T * H * D) * (qsz + osz) +
                2.0 * (double)(l->tokens * Hk * D) * (esz + csz) + small;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* implementations: the cache write, then the attention, each by its family's implementation   */

typedef struct ua_state {
  const xr_kernel_impl_t *cache, *attn;
  void *cache_state, *attn_state;
} ua_state_t;

static xr_op_plan_t part_plan(const xr_op_plan_t *plan, void *problem) {
  xr_op_plan_t part = *plan;
  part.problem = problem;
  return part;
}

xr_status_t xr_ua_supports(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_kernel_impl_t *cache,
                           const xr_kernel_impl_t *attn) {
  xr_ua_problem_t *u = plan->problem;
  xr_op_plan_t cp = part_plan(plan, &u->cache), ap = part_plan(plan, &u->attn);
  xr_status_t st = cache->supports ? cache->supports(&cp, device) : XR_OK;
  if (st == XR_OK && attn->supports) st = attn->supports(&ap, device);
  return st;
}

void xr_ua_release(void *state) {
  ua_state_t *s = state;
  if (!s) return;
  if (s->cache_state && s->cache->release) s->cache->release(s->cache_state);
  if (s->attn_state && s->attn->release) s->attn->release(s->attn_state);
  free(s);
}

xr_status_t xr_ua_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                          const xr_kernel_impl_t *cache, const xr_kernel_impl_t *attn, void **out_state) {
  xr_ua_problem_t *u = plan->problem;
  ua_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->cache = cache, s->attn = attn;
  xr_op_plan_t cp = part_plan(plan, &u->cache), ap = part_plan(plan, &u->attn);
  xr_status_t st = cache->prepare(&cp, device, tensors, &s->cache_state);
  if (st == XR_OK) st = attn->prepare(&ap, device, tensors, &s->attn_state);
  if (st != XR_OK) {
    xr_ua_release(s);
    return st;
  }
  *out_state = s;
  return XR_OK;
}

xr_status_t xr_ua_enqueue(void *state, xr_hal_stream_t *stream) {
  ua_state_t *s = state;
  xr_status_t st = s->cache->enqueue(s->cache_state, stream);
  return st == XR_OK ? s->attn->enqueue(s->attn_state, stream) : st;
}

static xr_status_t ref_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  return xr_ua_supports(plan, device, &xr_cache_ref_impl, &xr_attn_ref_impl);
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                               void **out_state) {
  return xr_ua_prepare(plan, device, tensors, &xr_cache_ref_impl, &xr_attn_ref_impl, out_state);
}

static const xr_kernel_impl_t ua_ref_impl = {
    .name = "ref.unified_attention",
    .driver = "cpu",
    .reference = true,
    .supports = ref_supports,
    .prepare = ref_prepare,
    .enqueue = xr_ua_enqueue,
    .release = xr_ua_release,
};

/* ------------------------------------------------------------------------------------------ */
/* custom initializers                                                                         */

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
    xr_init_store(c, qsl, 0, 0);
    for (int64_t b = 0; b < S; b++) xr_init_store(c, qsl, b + 1, (double)(start += l->q_len[b]));
  }
  if (!c->has_data[sl])
    for (int64_t b = 0; b < S; b++) xr_init_store(c, sl, b, (double)l->k_len[b]);
  for (int64_t b = 0; b < S; b++) {
    int64_t q0 = xr_init_load(c, qsl, b), q1 = xr_init_load(c, qsl, b + 1), k = xr_init_load(c, sl, b);
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
    xr_init_shuffle(perm, nb, nb, &s);
    for (int64_t b = 0; b < S; b++) {
      int64_t used = (xr_init_load(c, sl, b) + bs - 1) / bs;
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
    for (int64_t e = 0; e < (xr_init_load(c, sl, b) + bs - 1) / bs; e++) {
      int64_t block = xr_init_load_2d(c, bt, b, e);
      if (block < 0 || block >= nb)
        return xr_error(XR_INVALID_ARGUMENT, "block_table: sequence %lld page %lld is block %lld of a %lld-block cache",
                        (long long)b, (long long)e, (long long)block, (long long)nb);
    }
  if (!c->has_data[sm]) {
    for (int64_t t = 0; t < n_slots; t++) xr_init_store(c, sm, t, -1); /* padding */
    for (int64_t b = 0; b < S; b++) {
      int64_t q0 = xr_init_load(c, qsl, b), q1 = xr_init_load(c, qsl, b + 1), k = xr_init_load(c, sl, b);
      for (int64_t t = q0; t < q1 && t < n_slots; t++) {
        int64_t pos = k - (q1 - q0) + (t - q0);
        xr_init_store(c, sm, t, (double)(xr_init_load_2d(c, bt, b, pos / bs) * bs + pos % bs));
      }
    }
  }
  for (int64_t t = 0; t < n_slots; t++) {
    int64_t slot = xr_init_load(c, sm, t);
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
    int64_t k = xr_init_load(c, sl, b), q = xr_init_load(c, qsl, b + 1) - xr_init_load(c, qsl, b);
    int64_t end = c->has_data[sm] ? k : k - q;
    for (int64_t pos = 0; pos < end; pos++) live[xr_init_load_2d(c, bt, b, pos / bs) * bs + pos % bs] = true;
    cached += k - q;
  }
  xr_init_poison_dead_cells(c, u->kv_cache, (int)u->kv_block_dim, 2, bs, live);
  free(live);
  char what[400];
  snprintf(what, sizeof what, "%s; %lld cached tokens in %lld blocks of %lld, every other cache slot NaN",
           l->text, (long long)cached, (long long)nb, (long long)bs);
  xr_init_describe(c, what);
  /* An fp8 output's scale is the next layer's calibration, which the trace lacks (N(0, 1) would
   * flip and saturate the output): max|value| / the format's maximum, so that outputs, averages
   * of values, fill the fp8 range. */
  if (u->output_scale >= 0 && !c->has_data[u->output_scale]) {
    const xr_tensor_spec_t *v = c->plan->inputs[u->value], *os = c->plan->inputs[u->output_scale];
    double m = 0;
    for (int64_t i = 0; i < xr_spec_numel(v); i++) {
      int64_t t = i, index = v->storage_offset;
      for (int d = v->rank - 1; d >= 0; d--) index += (t % v->shape[d]) * v->strides[d], t /= v->shape[d];
      m = fmax(m, fabs(xr_load_element(c->host[u->value], v->dtype, index)));
    }
    double scale = m > 0 ? m / (double)xr_attn_fp8_max(c->plan->inputs[u->output]->dtype) : 1.0;
    xr_store_element(c->host[u->output_scale], XR_DTYPE_F32, os->storage_offset, scale);
    snprintf(what, sizeof what, "output_scale = max|value| / %g = %.6g",
             (double)xr_attn_fp8_max(c->plan->inputs[u->output]->dtype), scale);
    xr_init_describe(c, what);
  }
  return XR_OK;
}

static const struct xr_op_initializer ua_initializers[] = {
    {"vllm::unified_attention_with_output", init_unified_attention},
    {"vllm::unified_attention", init_unified_attention},
    {NULL, NULL},
};

static const xr_kernel_impl_t *const ua_impls[] = {
    &xr_ua_cpu_impl,
    &xr_ua_opencl_impl,
    &xr_ua_gpu_impl,
    &ua_ref_impl,
    NULL,
};

const xr_op_family_t xr_family_unified_attention = {
    .name = "unified_attention",
    .op_names = ua_ops,
    .analyze = analyze,
    .free_problem = free_problem,
    .complete = complete,
    .impls = ua_impls,
    .initializers = ua_initializers,
};

