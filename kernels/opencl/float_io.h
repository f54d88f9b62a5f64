// Loads and stores of fp32, fp16 and bf16 elements for OpenCL C kernels (dtypes as xr_dtype_t
// codes, dtype_codes.h): arithmetic in fp32, fp16 through vload_half / vstore_half_rte, bf16 as
// ushort bits rounded to nearest even. Index i counts elements from `base`.
#ifndef XR_KERNELS_OPENCL_FLOAT_IO_H
#define XR_KERNELS_OPENCL_FLOAT_IO_H

#include "dtype_codes.h"

float xr_ld(__global const uchar *base, long dt, long i) {
  if (dt == XR_F32) return ((__global const float *)base)[i];
  if (dt == XR_F16) return vload_half(i, (__global const half *)base);
  return as_float((uint)((__global const ushort *)base)[i] << 16);
}

ushort xr_to_bf16(float v) {
  uint u = as_uint(v);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);  // quiet NaN
  return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

void xr_st(__global uchar *base, long dt, long i, float v) {
  if (dt == XR_F32)
    ((__global float *)base)[i] = v;
  else if (dt == XR_F16)
    vstore_half_rte(v, i, (__global half *)base);
  else
    ((__global ushort *)base)[i] = xr_to_bf16(v);
}

#endif
