/* Rotary embedding (kernels/gpu/norm.cu's xr_rotary via kernels/norm_device.c) on a cuda or
 * hip device (built once per driver, XR_GPU_DRIVER=cuda|hip): the cases of
 * tests/kernels/rotary_cases.h, as the cpu and opencl suites run them, each compared with the
 * CPU reference through the real engine. Skips without such a device. */
#include "tests/kernels/rotary_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

Test(rotary_gpu, neox_and_gptj, .timeout = 120) { rotary_cases(DRIVER, "gpu.rotary"); }
