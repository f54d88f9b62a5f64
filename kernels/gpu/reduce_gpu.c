/* gpu.reduce: not written yet; declines every problem. */
#include "kernels/reduce.h"

static xr_status_t stub_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)plan, (void)device;
  return xr_error(XR_UNIMPLEMENTED, "gpu.reduce: not written yet");
}

const xr_kernel_impl_t xr_gpu_reduce = {
    .name = "gpu.reduce",
    .driver = "gpu",
    .supports = stub_supports,
};
