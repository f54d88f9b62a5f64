/* vLLM's unified attention on OpenCL: xr_reshape_and_cache then xr_attention
 * (kernels/opencl/attention.cl) on one in-order stream, the second reading what the first
 * wrote. */
#include "kernels/unified_attention.h"

static xr_status_t ocl_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  return xr_ua_supports(plan, device, &xr_cache_opencl_impl, &xr_attn_opencl_impl);
}

static xr_status_t ocl_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                               void **out_state) {
  return xr_ua_prepare(plan, device, tensors, &xr_cache_opencl_impl, &xr_attn_opencl_impl, out_state);
}

const xr_kernel_impl_t xr_ua_opencl_impl = {
    .name = "opencl.unified_attention",
    .driver = "opencl",
    .supports = ocl_supports,
    .prepare = ocl_prepare,
    .enqueue = xr_ua_enqueue,
    .release = xr_ua_release,
};
