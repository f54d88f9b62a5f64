/* vLLM's fp8 quantization ops (kernels/gpu/quant.cu) on a cuda or hip device (built once per
 * driver, XR_GPU_DRIVER=cuda|hip) against the CPU reference, with the cases of the cpu/opencl
 * suite (tests/kernels/quant_cases.h); the result and the scales the dynamic ops write are
 * compared. Skips without such a device. */
#include <criterion/criterion.h>

#include "tests/kernels/quant_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

Test(quant_gpu, cases) { run_quant_cases(DRIVER, "gpu.quant"); }
