/* CPU references of the attention families: every logit of a row materialised in double,
 * softmax and the weighted sum in double, each output rounded once (an fp8 query dequantised
 * with q_scale, an fp8 output scaled by 1 / output_scale and clamped first). Partitioned problems
 * (paged_attention_v2) compute each partition the same way, store it as vLLM does, and combine
 * the stored partials. The cache scatter (reshape_and_cache) converts each element once. */
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "kernels/family.h"

typedef struct ref_state {
  const xr_attn_problem_t *a;
  xr_attn_host_t h;
  xr_tensor_t *bound; /* the plan's bindings, for zeroing */
} ref_state_t;

static double load_kv(const ref_state_t *s, int role, int64_t index, float scale) {
  double v = xr_load_element(s->h.base[role], s->a->kv_dtype, index);
  return s->a->p[XR_AP_kv_fp8] ? v * scale : v;
}

/* An output value: times 1 / output_scale and clamped to the fp8 output's range when there is
 * an output scale (vLLM's fp8 epilogue), in double. */
static double output(const ref_state_t *s, double v) {
  if (s->h.o_max == INFINITY) return v;
  v *= (double)s->h.o_inv_scale;
  return v > s->h.o_max ? s->h.o_max : v < -s->h.o_max ? -s->h.o_max : v;
}

/* Softmax over keys [lo, hi) of one row into o (Dv doubles); returns the max logit (or -inf
 * when no key counts) and the sum of exp(logit - max). */
static double row_softmax(const ref_state_t *s, int64_t b, const xr_attn_seq_t *seq, int64_t head,
                          int64_t i, int64_t lo, int64_t hi, const double *q, double *logits, double *o,
                          double *out_sum) {
  const xr_attn_problem_t *a = s->a;
  const int64_t *p = a->p;
  int64_t D = p[XR_AP_head_dim], Dv = p[XR_AP_head_dim_v], kvh = head / p[XR_AP_group];
  double scale = xr_attn_float(a, XR_AP_scale_bits), cap = xr_attn_float(a, XR_AP_softcap_bits);
  double m = -INFINITY;
  for (int64_t t = lo; t < hi; t++) {
    int64_t ki, vi;
    xr_attn_token(a, &s->h, b, seq, t, &ki, &vi);
    ki += kvh * p[XR_AP_k_sh];
    double dot = 0;
    for (int64_t d = 0; d < D; d++) dot += q[d] * load_kv(s, XR_AT_K, ki + xr_attn_k_dim(a, d), s->h.k_scale);
    double logit = scale * dot;
    if (cap > 0) logit = cap * tanh(logit / cap);
    logit += xr_attn_bias(a, &s->h, b, seq, head, i, t);
    logits[t - lo] = logit;
    if (logit > m) m = logit;
  }
  for (int64_t d = 0; d < Dv; d++) o[d] = 0;
  double sum = 0;
  if (m == -INFINITY) {
    *out_sum = 0;
    return m;
  }
  for (int64_t t = lo; t < hi; t++) {
    double w = exp(logits[t - lo] - m);
    if (w == 0) continue;
    sum += w;
    int64_t ki, vi;
    xr_attn_token(a, &s->h, b, seq, t, &ki, &vi);
    vi += kvh * p[XR_AP_v_sh];
    for (int64_t d = 0; d < Dv; d++) o[d] += w * load_kv(s, XR_AT_V, vi + d * p[XR_AP_v_sd], s->h.v_scale);
  }
  for (int64_t d = 0; d < Dv; d++) o[d] /= sum;
  *out_sum = sum;
  return m;
}

/* One (sequence, head): every query row. */
static void ref_rows(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_attn_problem_t *a = s->a;
  const int64_t *p = a->p;
  int64_t H = p[XR_AP_heads], D = p[XR_AP_head_dim], Dv = p[XR_AP_head_dim_v];
  int64_t keys = p[XR_AP_max_k] > 0 ? p[XR_AP_max_k] : 1;
  double *q = malloc(sizeof(double) * (size_t)D), *o = malloc(sizeof(double) * (size_t)Dv);
  double *acc = malloc(sizeof(double) * (size_t)Dv);
  double *logits = NULL;
  size_t logits_cap = 0;
  if (!q || !o || !acc) goto out; /* outputs stay poisoned; the check reports it */
  for (size_t item = begin; item < end; item++) {
    int64_t b = (int64_t)item / H, head = (int64_t)item % H;
    xr_attn_seq_t seq = xr_attn_seq(a, &s->h, b);
    if ((size_t)seq.k_len > logits_cap || !logits) {
      free(logits);
      logits_cap = (size_t)(seq.k_len > keys ? seq.k_len : keys);
      logits = malloc(sizeof(double) * logits_cap);
      if (!logits) goto out;
    }
    for (int64_t i = 0; i < seq.q_len; i++) {
      int64_t qrow = b * p[XR_AP_q_sb] + (seq.qstart + i) * p[XR_AP_q_ss] + head * p[XR_AP_q_sh];
      int64_t orow = p[XR_AP_o_off] + b * p[XR_AP_o_sb] + (seq.qstart + i) * p[XR_AP_o_ss] + head * p[XR_AP_o_sh];
      for (int64_t d = 0; d < D; d++)
        q[d] = xr_load_element(s->h.base[XR_AT_Q], a->q_dtype, p[XR_AP_q_off] + qrow + d * p[XR_AP_q_sd]) *
               (double)s->h.q_scale;
      int64_t lo, hi;
      xr_attn_key_range(a, &seq, i, &lo, &hi);
      if (p[XR_AP_part_size] > 0) {
        /* Partitions over [0, k_len) as vLLM's v2 splits them; stored, then combined. */
        int64_t ps = p[XR_AP_part_size], parts = (seq.k_len + ps - 1) / ps;
        for (int64_t part = 0; part < parts; part++) {
          int64_t plo = part * ps > lo ? part * ps : lo, phi = (part + 1) * ps < hi ? (part + 1) * ps : hi;
          double sum, m = row_softmax(s, b, &seq, head, i, plo, phi, q, logits, o, &sum);
          xr_store_element(s->h.max_logits, XR_DTYPE_F32,
                           p[XR_AP_ml_off] + b * p[XR_AP_ml_sb] + head * p[XR_AP_ml_sh] + part * p[XR_AP_ml_sp], m);
          xr_store_element(s->h.exp_sums, XR_DTYPE_F32,
                           p[XR_AP_es_off] + b * p[XR_AP_es_sb] + head * p[XR_AP_es_sh] + part * p[XR_AP_es_sp], sum);
          int64_t to = p[XR_AP_to_off] + b * p[XR_AP_to_sb] + head * p[XR_AP_to_sh] + part * p[XR_AP_to_sp];
          for (int64_t d = 0; d < Dv; d++) xr_store_element(s->h.tmp_out, a->o_dtype, to + d * p[XR_AP_to_sd], o[d]);
        }
        double gmax = -INFINITY, gsum = 0;
        for (int64_t part = 0; part < parts; part++) {
          double m = xr_load_element(s->h.max_logits, XR_DTYPE_F32,
                                     p[XR_AP_ml_off] + b * p[XR_AP_ml_sb] + head * p[XR_AP_ml_sh] + part * p[XR_AP_ml_sp]);
          if (m > gmax) gmax = m;
        }
        for (int64_t d = 0; d < Dv; d++) acc[d] = 0;
        for (int64_t part = 0; part < parts; part++) {
          int64_t ml = p[XR_AP_ml_off] + b * p[XR_AP_ml_sb] + head * p[XR_AP_ml_sh] + part * p[XR_AP_ml_sp];
          int64_t es = p[XR_AP_es_off] + b * p[XR_AP_es_sb] + head * p[XR_AP_es_sh] + part * p[XR_AP_es_sp];
          double w = parts == 1 ? 1.0
                                : xr_load_element(s->h.exp_sums, XR_DTYPE_F32, es) *
                                      exp(xr_load_element(s->h.max_logits, XR_DTYPE_F32, ml) - gmax);
          gsum += w;
          int64_t to = p[XR_AP_to_off] + b * p[XR_AP_to_sb] + head * p[XR_AP_to_sh] + part * p[XR_AP_to_sp];
          for (int64_t d = 0; d < Dv; d++)
            acc[d] += w * xr_load_element(s->h.tmp_out, a->o_dtype, to + d * p[XR_AP_to_sd]);
        }
        for (int64_t d = 0; d < Dv; d++)
          xr_store_element(s->h.out, a->o_dtype, orow + d * p[XR_AP_o_sd], output(s, gsum > 0 ? acc[d] / gsum : 0));
        continue;
      }
      double sum, m = lo < hi ? row_softmax(s, b, &seq, head, i, lo, hi, q, logits, o, &sum) : -INFINITY;
      if (m == -INFINITY)
        for (int64_t d = 0; d < Dv; d++) o[d] = 0;
      for (int64_t d = 0; d < Dv; d++) xr_store_element(s->h.out, a->o_dtype, orow + d * p[XR_AP_o_sd], output(s, o[d]));
      if (p[XR_AP_lse_off] >= 0) {
        double lse = m == -INFINITY ? xr_attn_float(a, XR_AP_empty_lse_bits) : m + log(sum);
        xr_store_element(s->h.lse, XR_DTYPE_F32,
                         p[XR_AP_lse_off] + b * p[XR_AP_lse_sb] + head * p[XR_AP_lse_sh] + (seq.qstart + i) * p[XR_AP_lse_ss],
                         lse);
      }
    }
    /* The memory-efficient kernel's padding rows. */
    if (p[XR_AP_lse_off] >= 0)
      for (int64_t i = seq.q_len; i < p[XR_AP_lse_rows]; i++)
        xr_store_element(s->h.lse, XR_DTYPE_F32, p[XR_AP_lse_off] + b * p[XR_AP_lse_sb] + head * p[XR_AP_lse_sh] + i,
                         INFINITY);
  }
out:
  free(q);
  free(o);
  free(acc);
  free(logits);
}

static void ref_begin(void *ctx) {
  ref_state_t *s = ctx;
  const int64_t *p = s->a->p;
  xr_attn_zero_host_outputs(s->a, s->bound);
  xr_attn_host_begin(s->a, &s->h);
  s->h.k_scale = p[XR_AP_k_scale_off] >= 0 ? ((const float *)s->h.base[XR_AT_K_SCALE])[p[XR_AP_k_scale_off]]
                                           : xr_attn_float(s->a, XR_AP_k_scale_bits);
  s->h.v_scale = p[XR_AP_v_scale_off] >= 0 ? ((const float *)s->h.base[XR_AT_V_SCALE])[p[XR_AP_v_scale_off]]
                                           : xr_attn_float(s->a, XR_AP_v_scale_bits);
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                               void **out_state) {
  (void)device;
  size_t n = plan->input_count + plan->return_count;
  ref_state_t *s = calloc(1, sizeof *s + n * sizeof(xr_tensor_t));
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->a = plan->problem;
  s->bound = (xr_tensor_t *)(s + 1);
  memcpy(s->bound, tensors, n * sizeof(xr_tensor_t));
  xr_status_t st = xr_attn_host_bind(s->a, tensors, &s->h);
  if (st != XR_OK) {
    free(s);
    return st;
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  ref_state_t *s = state;
  const int64_t *p = s->a->p;
  xr_status_t st = xr_hal_stream_enqueue_host(stream, ref_begin, s);
  if (st != XR_OK) return st;
  return xr_hal_stream_enqueue_parallel(stream, (size_t)(p[XR_AP_batch] * p[XR_AP_heads]), 1, ref_rows, s);
}

static xr_status_t ref_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  return xr_attn_supported(plan);
}

const xr_kernel_impl_t xr_attn_ref_impl = {
    .name = "ref.attention",
    .driver = "cpu",
    .reference = true,
    .supports = ref_supports,
    .prepare = ref_prepare,
    .enqueue = ref_enqueue,
    .release = free,
};

/* ------------------------------------------------------------------------------------------ */
/* reshape_and_cache                                                                           */

typedef struct cache_state {
  const xr_cache_problem_t *c;
  xr_cache_host_t h;
} cache_state_t;

static void cache_tokens(void *ctx, size_t begin, size_t end) {
  const cache_state_t *s = ctx;
  const xr_cache_problem_t *c = s->c;
  const xr_cache_host_t *m = &s->h;
  bool fp8 = c->k_scale >= 0 || c->v_scale >= 0;
  double ks = c->k_scale >= 0 ? ((const float *)m->k_scale)[c->k_scale_off] : 1.0;
  double vs = c->v_scale >= 0 ? ((const float *)m->v_scale)[c->v_scale_off] : 1.0;
  for (size_t t = begin; t < end; t++) {
    int64_t slot = xr_attn_index(m->slots, c->slots_off, c->slots_64, (int64_t)t);
    if (slot < 0) continue; /* padding token */
    int64_t blk = slot / c->block_size, off = slot % c->block_size;
    for (int64_t h = 0; h < c->kv_heads; h++) {
      for (int64_t d = 0; d < c->head_dim; d++) {
        double k = xr_load_element(m->key, c->src_dtype, c->key_off + (int64_t)t * c->key_st + h * c->key_sh + d * c->key_sd);
        double v = xr_load_element(m->value, c->src_dtype,
                                   c->value_off + (int64_t)t * c->value_st + h * c->value_sh + d * c->value_sd);
        int64_t ki = c->kc_off + blk * c->kc_sb + off * c->kc_ss + h * c->kc_sh + (d / c->kc_x) * c->kc_sdx +
                     (d % c->kc_x) * c->kc_sd;
        int64_t vi = c->vc_off + blk * c->vc_sb + off * c->vc_ss + h * c->vc_sh + d * c->vc_sd;
        xr_store_element(m->key_cache, c->cache_dtype, ki, fp8 ? k / ks : k);
        xr_store_element(m->value_cache, c->cache_dtype, vi, fp8 ? v / vs : v);
      }
    }
  }
}

static xr_status_t cache_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                                 void **out_state) {
  (void)device;
  const xr_cache_problem_t *c = plan->problem;
  cache_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->c = c;
  xr_status_t st = xr_cache_host_bind(c, tensors, &s->h);
  if (st != XR_OK) {
    free(s);
    return st;
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t cache_enqueue(void *state, xr_hal_stream_t *stream) {
  cache_state_t *s = state;
  return xr_hal_stream_enqueue_parallel(stream, (size_t)s->c->tokens, 16, cache_tokens, s);
}

static xr_status_t cache_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  return xr_cache_supported(plan, "ref.reshape_and_cache");
}

const xr_kernel_impl_t xr_cache_ref_impl = {
    .name = "ref.reshape_and_cache",
    .driver = "cpu",
    .reference = true,
    .supports = cache_supports,
    .prepare = cache_prepare,
    .enqueue = cache_enqueue,
    .release = free,
};
