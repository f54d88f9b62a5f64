// Loads and stores of fp32, fp16 and bf16 elements for OpenCL C kernels (dtypes as xr_dtype_t
// codes, dtype_codes.h): arithmetic in fp32, fp16 through vload_half / vstore_half_rte, bf16 as
// ushort bits rounded to nearest even (base/float_formats.h). Index i counts elements from
// `base`.
#ifndef XR_KERNELS_OPENCL_FLOAT_IO_H
#define XR_KERNELS_OPENCL_FLOAT_IO_H

#include "dtype_codes.h"
#include "float_formats_cl.h"

float xr_ld(__global const uchar *base, long dt, long i) {
  if (dt == XR_F32) return ((__global const float *)base)[i];
  if (dt == XR_F16) return vload_half(i, (__global const half *)base);
  return xr_bf16_to_f32(((__global const ushort *)base)[i]);
}

void xr_st(__global uchar *base, long dt, long i, float v) {
  if (dt == XR_F32)
    ((__global float *)base)[i] = v;
  else if (dt == XR_F16)
    vstore_half_rte(v, i, (__global half *)base);
  else
    ((__global ushort *)base)[i] = xr_f32_to_bf16(v);
}

#endif
