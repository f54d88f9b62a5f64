/* The paged-attention and KV-cache families' GPU implementations (kernels/gpu/paged_attention.cu
 * and kv_cache.cu via kernels/gpu/attention_gpu.c) on a cuda or hip device (built once per
 * driver, XR_GPU_DRIVER=cuda|hip): the same cases the cpu and opencl suites run
 * (tests/kernels/paged_attention_cases.h: v1, v2 partitions, rocm with query_start_loc, block
 * sizes 8/16/32, head sizes 64..256, ALiBi, fp8 caches; sglang::store_cache), each compared
 * with the CPU reference on the same seeded inputs through the real engine, with every cache
 * slot no sequence uses NaN. Skips without such a device. */
#include <criterion/criterion.h>

#include "tests/kernels/paged_attention_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

Test(paged_attention_gpu, decode) { run_paged(DRIVER, "gpu.paged_attention"); }
Test(kv_cache_gpu, reshape_and_cache) { run_cache(DRIVER, "gpu.reshape_and_cache"); }
Test(kv_cache_gpu, store_cache) { run_store_cache(DRIVER, "gpu.reshape_and_cache"); }
