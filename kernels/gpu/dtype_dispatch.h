// Element loads and stores whose dtype is a run-time value (an XR_GPU_* code of
// kernels/gpu/dtype_codes.h), for kernels that serve every dtype from one compiled source
// instead of one build per dtype combination. The branch is uniform across a launch, so it
// costs little next to the memory access. Include after hip_compat.h, dtype_io.h and
// dtype_codes.h (kernels/embed_sources.sh inlines them at build time).
#ifndef XR_KERNELS_GPU_DTYPE_DISPATCH_H
#define XR_KERNELS_GPU_DTYPE_DISPATCH_H

// Element i of a `dtype` array as float: floats rounded to nearest (f64), integers converted,
// bool as 0 or 1, as OpenCL's LOAD_AS_FLOAT does.
static __device__ __forceinline__ float xr_load_as_float(const void *p, int dtype, long long i) {
  switch (dtype) {
    case XR_GPU_F32: return xr_io_f32::load((const float *)p, i);
    case XR_GPU_F64: return (float)((const double *)p)[i];
    case XR_GPU_F16: return xr_io_f16::load((const unsigned short *)p, i);
    case XR_GPU_BF16: return xr_io_bf16::load((const unsigned short *)p, i);
    case XR_GPU_F8E4M3FN: return xr_io_f8e4m3fn::load((const unsigned char *)p, i);
    case XR_GPU_F8E5M2: return xr_io_f8e5m2::load((const unsigned char *)p, i);
    case XR_GPU_F8E4M3FNUZ: return xr_io_f8e4m3fnuz::load((const unsigned char *)p, i);
    case XR_GPU_F8E5M2FNUZ: return xr_io_f8e5m2fnuz::load((const unsigned char *)p, i);
    case XR_GPU_I8: return (float)((const signed char *)p)[i];
    case XR_GPU_I16: return (float)((const short *)p)[i];
    case XR_GPU_I32: return (float)((const int *)p)[i];
    case XR_GPU_I64: return (float)((const long long *)p)[i];
    case XR_GPU_U16: return (float)((const unsigned short *)p)[i];
    case XR_GPU_U32: return (float)((const unsigned int *)p)[i];
    case XR_GPU_U64: return (float)((const unsigned long long *)p)[i];
    case XR_GPU_BOOL: return ((const unsigned char *)p)[i] != 0 ? 1.0f : 0.0f;
    default: return (float)((const unsigned char *)p)[i];  // XR_GPU_U8
  }
}

// Element i of an integer or bool array as a 64-bit integer (the integer pipelines).
static __device__ __forceinline__ long long xr_load_as_long(const void *p, int dtype, long long i) {
  switch (dtype) {
    case XR_GPU_I8: return ((const signed char *)p)[i];
    case XR_GPU_I16: return ((const short *)p)[i];
    case XR_GPU_I32: return ((const int *)p)[i];
    case XR_GPU_I64: return ((const long long *)p)[i];
    case XR_GPU_U16: return ((const unsigned short *)p)[i];
    case XR_GPU_U32: return ((const unsigned int *)p)[i];
    case XR_GPU_U64: return (long long)((const unsigned long long *)p)[i];
    case XR_GPU_BOOL: return ((const unsigned char *)p)[i] != 0;
    default: return ((const unsigned char *)p)[i];  // XR_GPU_U8
  }
}

// Stores the low bytes of v in an integer dtype of `size` bytes, or v != 0 as a bool.
static __device__ __forceinline__ void xr_store_long(void *p, int dtype, int size, long long i,
                                                     long long v) {
  if (dtype == XR_GPU_BOOL) {
    ((unsigned char *)p)[i] = v != 0;
    return;
  }
  switch (size) {
    case 1: ((unsigned char *)p)[i] = (unsigned char)v; break;
    case 2: ((unsigned short *)p)[i] = (unsigned short)v; break;
    case 4: ((unsigned int *)p)[i] = (unsigned int)v; break;
    default: ((unsigned long long *)p)[i] = (unsigned long long)v; break;
  }
}

// Stores v rounded once to a float dtype (f32, f16, bf16, fp8; fp8 saturates), or as a bool
// (v != 0). Callers check that the dtype is one of these on the host: others store nothing.
static __device__ __forceinline__ void xr_store_float(void *p, int dtype, long long i, float v) {
  switch (dtype) {
    case XR_GPU_F32: xr_io_f32::store((float *)p, i, v); break;
    case XR_GPU_F16: xr_io_f16::store((unsigned short *)p, i, v); break;
    case XR_GPU_BF16: xr_io_bf16::store((unsigned short *)p, i, v); break;
    case XR_GPU_F8E4M3FN: xr_io_f8e4m3fn::store((unsigned char *)p, i, v); break;
    case XR_GPU_F8E5M2: xr_io_f8e5m2::store((unsigned char *)p, i, v); break;
    case XR_GPU_F8E4M3FNUZ: xr_io_f8e4m3fnuz::store((unsigned char *)p, i, v); break;
    case XR_GPU_F8E5M2FNUZ: xr_io_f8e5m2fnuz::store((unsigned char *)p, i, v); break;
    case XR_GPU_BOOL: ((unsigned char *)p)[i] = v != 0.0f; break;
    default: break;
  }
}

// The block-wide sum and maximum of one value per thread, returned to every thread. blockDim.x
// must be a multiple of warpSize (32 or 64) and at most XR_BLOCK_MAX_THREADS; every thread of
// the block must call it. Partials are added in warp order, so results are reproducible.
#define XR_BLOCK_MAX_THREADS 1024

static __device__ __forceinline__ float xr_warp_max(float value) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2) {
    value = fmaxf(value, __shfl_xor_sync(XR_FULL_MASK, value, offset));
  }
  return value;
}

static __device__ float xr_block_reduce(float value, bool is_max) {
  __shared__ float partial[XR_BLOCK_MAX_THREADS / 32];  // one per warp; 32 lanes is the narrowest
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  const int warps = blockDim.x / warpSize;
  value = is_max ? xr_warp_max(value) : xr_warp_sum(value);
  __syncthreads();  // the previous call's readers are done with `partial`
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  float total = partial[0];
  for (int w = 1; w < warps; w++) total = is_max ? fmaxf(total, partial[w]) : total + partial[w];
  return total;
}

static __device__ __forceinline__ float xr_block_sum(float value) {
  return xr_block_reduce(value, false);
}
static __device__ __forceinline__ float xr_block_max(float value) {
  return xr_block_reduce(value, true);
}

#endif  // XR_KERNELS_GPU_DTYPE_DISPATCH_H
