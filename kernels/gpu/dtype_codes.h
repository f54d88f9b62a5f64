/* xr_dtype_t's values (formats/bundle.h) as plain macros, for the parameter blocks of the GPU
 * kernels and for device code (kernels/gpu/dtype_dispatch.h), which cannot include the bundle
 * header. Host code that passes dtypes asserts the two agree (XR_GPU_DTYPE_CODES_AGREE). */
#ifndef XR_KERNELS_GPU_DTYPE_CODES_H
#define XR_KERNELS_GPU_DTYPE_CODES_H

#define XR_GPU_F32 1
#define XR_GPU_F64 2
#define XR_GPU_F16 3
#define XR_GPU_BF16 4
#define XR_GPU_F8E4M3FN 5
#define XR_GPU_F8E5M2 6
#define XR_GPU_F8E4M3FNUZ 7
#define XR_GPU_F8E5M2FNUZ 8
#define XR_GPU_I8 9
#define XR_GPU_I16 10
#define XR_GPU_I32 11
#define XR_GPU_I64 12
#define XR_GPU_U8 13
#define XR_GPU_U16 14
#define XR_GPU_U32 15
#define XR_GPU_U64 16
#define XR_GPU_BOOL 17

#define XR_GPU_DTYPE_CODES_AGREE                                                              \
  (XR_GPU_F32 == XR_DTYPE_F32 && XR_GPU_F64 == XR_DTYPE_F64 && XR_GPU_F16 == XR_DTYPE_F16 &&  \
   XR_GPU_BF16 == XR_DTYPE_BF16 && XR_GPU_F8E4M3FN == XR_DTYPE_F8E4M3FN &&                    \
   XR_GPU_F8E5M2 == XR_DTYPE_F8E5M2 && XR_GPU_F8E4M3FNUZ == XR_DTYPE_F8E4M3FNUZ &&            \
   XR_GPU_F8E5M2FNUZ == XR_DTYPE_F8E5M2FNUZ && XR_GPU_I8 == XR_DTYPE_I8 &&                    \
   XR_GPU_I16 == XR_DTYPE_I16 && XR_GPU_I32 == XR_DTYPE_I32 && XR_GPU_I64 == XR_DTYPE_I64 &&  \
   XR_GPU_U8 == XR_DTYPE_U8 && XR_GPU_U16 == XR_DTYPE_U16 && XR_GPU_U32 == XR_DTYPE_U32 &&    \
   XR_GPU_U64 == XR_DTYPE_U64 && XR_GPU_BOOL == XR_DTYPE_BOOL)

#endif
