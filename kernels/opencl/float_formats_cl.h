// base/float_formats.h in OpenCL C: its function qualifiers and bit casts, then the header itself
// (kernels/embed_sources.sh inlines both into each program), and the fp8 conversions by dtype
// code (dtype_codes.h), as kernels receive dtypes. f16 goes through OpenCL's own vload_half and
// vstore_half_rte, exact and rounded to nearest even.
#ifndef XR_KERNELS_OPENCL_FLOAT_FORMATS_CL_H
#define XR_KERNELS_OPENCL_FLOAT_FORMATS_CL_H

#define XR_FLOAT_FN
#define XR_AS_FLOAT(u) as_float((uint)(u))
#define XR_AS_UINT(f) as_uint((float)(f))
#include "base/float_formats.h"
#include "dtype_codes.h"

// The format of an 8-bit float dtype code (XR_F8E4M3FN .. XR_F8E5M2FNUZ).
xr_fp8_format_t xr_fp8_format_code(long dt) {
  return xr_fp8_format_of(dt == XR_F8E4M3FN || dt == XR_F8E4M3FNUZ ? 3 : 2,
                          dt == XR_F8E4M3FNUZ || dt == XR_F8E5M2FNUZ);
}

float xr_fp8_decode_code(uchar v, long dt) {
  xr_fp8_format_t f = xr_fp8_format_code(dt);
  return xr_fp8_decode(v, &f);
}

uchar xr_fp8_encode_code(float v, long dt) {
  xr_fp8_format_t f = xr_fp8_format_code(dt);
  return xr_fp8_encode(v, &f);
}

#endif
