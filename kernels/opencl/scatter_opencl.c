/* opencl.scatter: declines every problem until its kernels land (the reference runs them). */
#include "kernels/scatter.h"
static xr_status_t stub_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)plan, (void)device;
  return xr_error(XR_UNIMPLEMENTED, "not yet");
}
const xr_kernel_impl_t xr_opencl_scatter = {
    .name = "opencl.scatter",
    .driver = "opencl",
    .supports = stub_supports,
};
