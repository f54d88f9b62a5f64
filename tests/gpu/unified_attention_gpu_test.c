/* vLLM's unified attention (cache write + attention, batch from the trace's hints) on a cuda or
 * hip device (built once per driver, XR_GPU_DRIVER=cuda|hip) against the CPU reference, with the
 * cases of the cpu/opencl suite (tests/kernels/unified_attention_cases.h); both the output and
 * the written cache are compared. Skips without such a device. */
#include <criterion/criterion.h>

#include "tests/kernels/unified_attention_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

Test(unified_attention_gpu, mixes) { run_cases(DRIVER, "gpu.unified_attention"); }
