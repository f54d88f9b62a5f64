/* vLLM's unified attention on cuda and hip: the KV-cache writer then the attention kernel of
 * kernels/gpu/attention_gpu.c (kv_cache.cu, then paged_attention.cu, whose kernels also read fp8
 * caches and take fp8 queries and outputs) on one in-order stream, the second reading what the
 * first wrote; the same composition as the cpu and opencl implementations. */
#include "kernels/unified_attention.h"

static xr_status_t ua_gpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  return xr_ua_supports(plan, device, &xr_cache_gpu_impl, &xr_paged_attn_gpu_impl);
}

static xr_status_t ua_gpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                  const xr_tensor_t *tensors, void **out_state) {
  return xr_ua_prepare(plan, device, tensors, &xr_cache_gpu_impl, &xr_paged_attn_gpu_impl, out_state);
}

const xr_kernel_impl_t xr_ua_gpu_impl = {
    .name = "gpu.unified_attention",
    .driver = "gpu",
    .supports = ua_gpu_supports,
    .prepare = ua_gpu_prepare,
    .enqueue = xr_ua_enqueue,
    .release = xr_ua_release,
};

