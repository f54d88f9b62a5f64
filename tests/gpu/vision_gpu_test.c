/* The pool and channel_norm families (kernels/gpu/pool.cu, channel_norm.cu) on a cuda or hip
 * device (built once per driver, XR_GPU_DRIVER=cuda|hip) against the CPU reference, with the
 * cases of the cpu/opencl suite (tests/kernels/vision_cases.h). Skips without such a device. */
#include <criterion/criterion.h>

#include "tests/kernels/vision_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

Test(vision_gpu, cases, .timeout = 600) {
  vision_cases(DRIVER, "gpu.", "gpu.");
}
