/* vLLM's unified attention on the cpu driver: the cache scatter (the kv_cache family's strided
 * copy, or cpu.reshape_and_cache for an fp8 e4m3 cache) then the flash-style attention kernel
 * (kernels/cpu/attention_cpu.c) over the paged cache. */
#include "kernels/unified_attention.h"

/* The cache writer: cpu.reshape_and_cache for fp8 e4m3 caches, else the reference's copy. */
static const xr_kernel_impl_t *cache_impl(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  const xr_ua_problem_t *u = plan->problem;
  xr_op_plan_t part = *plan;
  part.problem = (void *)&u->cache;
  return xr_cache_cpu_impl.supports(&part, device) == XR_OK ? &xr_cache_cpu_impl : &xr_cache_ref_impl;
}

static xr_status_t cpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  return xr_ua_supports(plan, device, cache_impl(plan, device), &xr_attn_cpu_impl);
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                               void **out_state) {
  return xr_ua_prepare(plan, device, tensors, cache_impl(plan, device), &xr_attn_cpu_impl, out_state);
}

const xr_kernel_impl_t xr_ua_cpu_impl = {
    .name = "cpu.unified_attention",
    .driver = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .enqueue = xr_ua_enqueue,
    .release = xr_ua_release,
};
