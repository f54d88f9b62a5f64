// The KV-cache writers on CUDA and HIP (kernels/attention_device.c launches these): vLLM's
// reshape_and_cache (key cache [blocks, kv_heads, head_size / x, block_size, x], value cache
// [blocks, kv_heads, head_size, block_size]) and reshape_and_cache_flash ([blocks, block_size,
// kv_heads, head_size]), as kernels/opencl/attention.cl's xr_reshape_and_cache: token t's key
// and value, every (head, dim), go to cache slot slot_mapping[t]; a negative slot is padding.
// fp8 caches store value / scale, rounded to nearest even and saturated (dtype_io.h).
// Grid: (tokens, element blocks); one thread per (head, dim) element.
#include "hip_compat.h"
#include "dtype_io.h"
#include "attention_args.h"

template <class SRC, class CACHE>
static __device__ void xr_reshape_and_cache(const typename SRC::storage *key, const typename SRC::storage *value,
                                            typename CACHE::storage *key_cache,
                                            typename CACHE::storage *value_cache, const void *slots,
                                            const float *k_scale, const float *v_scale,
                                            const xr_cache_args_t &p) {
  const long long t = blockIdx.x;
  const long long e = (long long)blockIdx.y * blockDim.x + threadIdx.x;
  const long long D = p.head_dim;
  if (t >= p.tokens || e >= p.kv_heads * D) return;
  const long long h = e / D, d = e % D;
  const long long slot = p.slots_64 ? ((const long long *)slots)[p.slots_off + t]
                                    : (long long)((const int *)slots)[p.slots_off + t];
  if (slot < 0) return;
  const long long blk = slot / p.block_size, off = slot % p.block_size;
  float kv = SRC::load(key, p.key_off + t * p.key_st + h * p.key_sh + d * p.key_sd);
  float vv = SRC::load(value, p.value_off + t * p.value_st + h * p.value_sh + d * p.value_sd);
  if (p.scaled) {
    kv /= p.k_scale_off >= 0 ? k_scale[p.k_scale_off] : 1.0f;
    vv /= p.v_scale_off >= 0 ? v_scale[p.v_scale_off] : 1.0f;
  }
  CACHE::store(key_cache,
               p.kc_off + blk * p.kc_sb + off * p.kc_ss + h * p.kc_sh + (d / p.kc_x) * p.kc_sdx + (d % p.kc_x) * p.kc_sd,
               kv);
  CACHE::store(value_cache, p.vc_off + blk * p.vc_sb + off * p.vc_ss + h * p.vc_sh + d * p.vc_sd, vv);
}

#define XR_CACHE_KERNEL(suffix, SRC, CACHE)                                                                   \
  extern "C" __global__ void __launch_bounds__(XR_CACHE_THREADS) xr_reshape_and_cache_##suffix(            \
      const SRC::storage *key, const SRC::storage *value, CACHE::storage *key_cache,                           \
      CACHE::storage *value_cache, const void *slots, const float *k_scale, const float *v_scale,              \
      xr_cache_args_t p) {                                                                               \
    xr_reshape_and_cache<SRC, CACHE>(key, value, key_cache, value_cache, slots, k_scale, v_scale, p);          \
  }

#define XR_CACHE_KERNELS(src, SRC)                                 \
  XR_CACHE_KERNEL(src##_##src, SRC, SRC)                           \
  XR_CACHE_KERNEL(src##_f8e4m3fn, SRC, xr_io_f8e4m3fn)             \
  XR_CACHE_KERNEL(src##_f8e5m2, SRC, xr_io_f8e5m2)                 \
  XR_CACHE_KERNEL(src##_f8e4m3fnuz, SRC, xr_io_f8e4m3fnuz)         \
  XR_CACHE_KERNEL(src##_f8e5m2fnuz, SRC, xr_io_f8e5m2fnuz)

XR_CACHE_KERNELS(f32, xr_io_f32)
XR_CACHE_KERNELS(f16, xr_io_f16)
XR_CACHE_KERNELS(bf16, xr_io_bf16)
