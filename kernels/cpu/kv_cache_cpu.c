/* cpu.reshape_and_cache: the KV-cache writers (reshape_and_cache, reshape_and_cache_flash, and
 * the cache write of vLLM's unified attention) on the host thread pool. A cache of the source's
 * type is a strided copy, which ref.reshape_and_cache already is; this one serves fp8 e4m3
 * caches (fn and fnuz, vLLM's fp8 caches on CUDA and ROCm), whose elements it rounds as the
 * reference does: value / scale through base/float_formats.h's encoder (saturating, a NaN
 * staying NaN). Other caches are left to the reference. */
#include <stdlib.h>

#include "kernels/attention.h"
#include "kernels/dtype.h"
#include "kernels/family.h"

typedef struct cpu_cache {
  const xr_cache_problem_t *c;
  const void *key, *value, *slots;
  const float *k_scale, *v_scale;
  uint8_t *key_cache, *value_cache;
  xr_fp8_format_t fp8;
} cpu_cache_t;

static inline uint8_t encode(const cpu_cache_t *s, float x) { return xr_fp8_encode(x, &s->fp8); }

static void cache_tokens(void *ctx, size_t begin, size_t end) {
  const cpu_cache_t *s = ctx;
  const xr_cache_problem_t *c = s->c;
  /* The reference divides in double and rounds once; the quotient of floats rounded to float
   * is the same value, so the float division here gives the same code. */
  float ks = c->k_scale >= 0 ? s->k_scale[c->k_scale_off] : 1.0f;
  float vs = c->v_scale >= 0 ? s->v_scale[c->v_scale_off] : 1.0f;
  bool scaled = c->k_scale >= 0 || c->v_scale >= 0;
  for (size_t t = begin; t < end; t++) {
    int64_t slot = xr_attn_index(s->slots, c->slots_off, c->slots_64, (int64_t)t);
    if (slot < 0) continue; /* padding token */
    int64_t blk = slot / c->block_size, off = slot % c->block_size;
    for (int64_t h = 0; h < c->kv_heads; h++)
      for (int64_t d = 0; d < c->head_dim; d++) {
        float k = (float)xr_load_element(s->key, c->src_dtype, c->key_off + (int64_t)t * c->key_st + h * c->key_sh +
                                                                 d * c->key_sd);
        float v = (float)xr_load_element(s->value, c->src_dtype, c->value_off + (int64_t)t * c->value_st +
                                                                     h * c->value_sh + d * c->value_sd);
        int64_t ki = c->kc_off + blk * c->kc_sb + off * c->kc_ss + h * c->kc_sh + (d / c->kc_x) * c->kc_sdx +
                     (d % c->kc_x) * c->kc_sd;
        int64_t vi = c->vc_off + blk * c->vc_sb + off * c->vc_ss + h * c->vc_sh + d * c->vc_sd;
        s->key_cache[ki] = encode(s, scaled ? k / ks : k);
        s->value_cache[vi] = encode(s, scaled ? v / vs : v);
      }
  }
}

static xr_status_t cpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_cache_problem_t *c = plan->problem;
  xr_status_t st = xr_cache_supported(plan, "cpu.reshape_and_cache");
  if (st != XR_OK) return st;
  if (c->cache_dtype != XR_DTYPE_F8E4M3FN && c->cache_dtype != XR_DTYPE_F8E4M3FNUZ)
    return xr_error(XR_UNIMPLEMENTED, "cpu.reshape_and_cache: a %s cache is a copy (the reference's)",
                    xr_dtype_name(c->cache_dtype));
  return XR_OK;
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                               void **out_state) {
  (void)device;
  const xr_cache_problem_t *c = plan->problem;
  cpu_cache_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->c = c;
  xr_cache_host_t h;
  xr_status_t st = xr_cache_host_bind(c, tensors, &h);
  if (st != XR_OK) {
    free(s);
    return st;
  }
  s->key = h.key, s->value = h.value, s->slots = h.slots, s->k_scale = h.k_scale, s->v_scale = h.v_scale;
  s->key_cache = h.key_cache, s->value_cache = h.value_cache;
  s->fp8 = xr_fp8_format(c->cache_dtype);
  *out_state = s;
  return XR_OK;
}

static xr_status_t cpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cpu_cache_t *s = state;
  return s->c->tokens > 0 ? xr_hal_stream_enqueue_parallel(stream, (size_t)s->c->tokens, 4, cache_tokens, s) : XR_OK;
}

const xr_kernel_impl_t xr_cache_cpu_impl = {
    .name = "cpu.reshape_and_cache",
    .driver = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .enqueue = cpu_enqueue,
    .release = free,
};
