/* xr_dtype_t's codes for device code (CUDA and HIP through hip_compat.h), expanded from the
 * dtype table: XR_GPU_F32 == XR_DTYPE_F32 and so on, by construction. The parameter blocks of
 * the GPU kernels carry dtypes as these ints. */
#ifndef XR_KERNELS_GPU_DTYPE_CODES_H
#define XR_KERNELS_GPU_DTYPE_CODES_H

enum xr_gpu_dtype {
#define XR_DTYPE(name, code, spelling, short_name, bytes, class, torch) XR_GPU_##name = code,
#include "base/dtype_table.h"
#undef XR_DTYPE
};

#endif
