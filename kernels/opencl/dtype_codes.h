/* xr_dtype_t's codes for OpenCL C, expanded from the dtype table: XR_F32 == XR_DTYPE_F32 and
 * so on, by construction. Kernels receive dtypes as these ints. */
#ifndef XR_KERNELS_OPENCL_DTYPE_CODES_H
#define XR_KERNELS_OPENCL_DTYPE_CODES_H

enum xr_opencl_dtype {
#define XR_DTYPE(name, code, spelling, short_name, bytes, class, torch) XR_##name = code,
#include "base/dtype_table.h"
#undef XR_DTYPE
};

#endif
