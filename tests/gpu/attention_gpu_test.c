/* The attention family's GPU implementation (kernels/gpu/attention.cu via
 * kernels/gpu/attention_gpu.c) on a cuda or hip device (built once per driver,
 * XR_GPU_DRIVER=cuda|hip): the same cases the cpu and opencl suites run
 * (tests/kernels/attention_cases.h), each compared with the CPU reference on the same seeded
 * inputs through the real engine, unused key rows NaN. Skips without such a device. */
#include <criterion/criterion.h>

#include "tests/kernels/attention_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

Test(attention_gpu, sdpa) { run_sdpa(DRIVER, "gpu.flash_attention"); }
Test(attention_gpu, varlen) { run_varlen(DRIVER, "gpu.flash_attention"); }
