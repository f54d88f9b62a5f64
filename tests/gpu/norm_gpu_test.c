/* Softmax, layer norm, RMS norm and fused add + RMS norm, in place and aiter's out of place
 * (kernels/gpu/norm.cu via kernels/norm_device.c) on a cuda or hip device (built once per
 * driver, XR_GPU_DRIVER=cuda|hip): the cases of tests/kernels/norm_cases.h, as the cpu and opencl
 * suites run them, each compared with the CPU reference through the real engine. Skips
 * without such a device. */
#include "tests/kernels/norm_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

Test(norm_gpu, rms_norm, .timeout = 120) { rms_norm_cases(DRIVER, "gpu.norm"); }
Test(norm_gpu, aiter_rms_norm, .timeout = 120) { aiter_norm_cases(DRIVER, "gpu.norm"); }
Test(norm_gpu, layer_norm, .timeout = 120) { layer_norm_cases(DRIVER, "gpu.norm"); }
Test(norm_gpu, softmax, .timeout = 120) { softmax_cases(DRIVER, "gpu.softmax"); }
