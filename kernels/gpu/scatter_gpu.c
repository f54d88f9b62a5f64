/* gpu.scatter: the scatter family on cuda and hip devices through kernels/gpu/scatter.cu, one
 * source compiled once per device (NVRTC / hiprtc, cached on disk), the parameter block by
 * value; the host side is kernels/scatter_device.c's, shared with opencl.scatter. Raw moves of
 * every dtype; reductions in float (every float dtype but f64, which is left to the CPU) or
 * 64-bit integers, deterministic (no atomics). */
#include "kernels/gpu/sources.h"
#include "kernels/scatter.h"

static const xr_sc_device_backend_t backend = {
    .name = "gpu.scatter",
    .source = "scatter.cu",
    .build = xr_gpu_build,
    .params_in_buffer = false,
    .target_items = 65536,
};

static xr_status_t gpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  return xr_sc_device_supports(plan, "GPU");
}

static xr_status_t gpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  return xr_sc_device_prepare(&backend, plan, device, tensors, out_state);
}

const xr_kernel_impl_t xr_gpu_scatter = {
    .name = "gpu.scatter",
    .driver = "gpu",
    .supports = gpu_supports,
    .prepare = gpu_prepare,
    .enqueue = xr_sc_device_enqueue,
    .release = xr_sc_device_release,
};
