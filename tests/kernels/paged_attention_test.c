/* Paged attention (vLLM _C::paged_attention_v1/v2, _rocm_C::paged_attention) and the cache
 * writers (reshape_and_cache, reshape_and_cache_flash) on cpu and opencl against the CPU
 * reference through the replay engine. Block sizes 8/16/32, head sizes 64/128/256, GQA/MQA,
 * ALiBi, fp8 caches (e4m3, e5m2) with a k_scale of 0.5, v2 partitions, multi-token queries
 * (query_start_loc), strided queries, random sequence lengths. The engine's initializer makes
 * every cache slot no sequence uses NaN, so reading past seq_lens fails the check. */
#include <criterion/criterion.h>

#include "tests/kernels/paged_attention_cases.h"

Test(paged_attention_cpu, decode) { run_paged("cpu", "cpu.flash_attention"); }
Test(paged_attention_opencl, decode) { run_paged("opencl", "opencl.flash_attention"); }
Test(kv_cache_cpu, reshape_and_cache) { run_cache("cpu", "ref.reshape_and_cache"); }
Test(kv_cache_opencl, reshape_and_cache) { run_cache("opencl", "opencl.reshape_and_cache"); }
