/* vLLM's unified attention on the cpu driver: the cache scatter (the kv_cache family's strided
 * copy, already the fast path) then the flash-style attention kernel (kernels/cpu/attention_cpu.c)
 * over the paged cache. */
#include "kernels/unified_attention.h"

static xr_status_t cpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  return xr_ua_supports(plan, device, &xr_cache_ref_impl, &xr_attn_cpu_impl);
}

static xr_status_t cpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                               void **out_state) {
  return xr_ua_prepare(plan, device, tensors, &xr_cache_ref_impl, &xr_attn_cpu_impl, out_state);
}

const xr_kernel_impl_t xr_ua_cpu_impl = {
    .name = "cpu.unified_attention",
    .driver = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .enqueue = xr_ua_enqueue,
    .release = xr_ua_release,
};
