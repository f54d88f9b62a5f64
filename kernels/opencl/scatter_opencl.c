/* opencl.scatter: the scatter family through kernels/opencl/scatter.cl, one program for every op
 * and dtype (built once per device), the parameter block in a constant buffer; the host side is
 * kernels/scatter_device.c's, shared with gpu.scatter. Raw moves of every dtype; reductions in
 * float (every float dtype but f64) or 64-bit integers, deterministic (no atomics). */
#include "kernels/opencl/sources.h"
#include "kernels/scatter.h"

static const xr_sc_device_backend_t backend = {
    .name = "opencl.scatter",
    .source = "scatter.cl",
    .build = xr_opencl_build,
    .params_in_buffer = true,
    .target_items = 4096,
};

static xr_status_t cl_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  return xr_sc_device_supports(plan, "OpenCL");
}

static xr_status_t cl_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                              const xr_tensor_t *tensors, void **out_state) {
  return xr_sc_device_prepare(&backend, plan, device, tensors, out_state);
}

const xr_kernel_impl_t xr_opencl_scatter = {
    .name = "opencl.scatter",
    .driver = "opencl",
    .supports = cl_supports,
    .prepare = cl_prepare,
    .enqueue = xr_sc_device_enqueue,
    .release = xr_sc_device_release,
};
