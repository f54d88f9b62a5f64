/* CLBlast (libclblast.so.1, C API of clblast_c.h) loaded at run time through the symbol table
 * below, in the list style of base/dynload.h.
 *
 * Environment: XR_CLBLAST_LIBRARY is tried before libclblast.so.1 / libclblast.so; "off"
 * disables CLBlast (our tiled kernel then runs everything, which is how its tests reach it). */
#ifndef XR_KERNELS_OPENCL_CLBLAST_H
#define XR_KERNELS_OPENCL_CLBLAST_H

#if defined(__has_include)
#if __has_include(<clblast_c.h>)
#define XR_HAVE_CLBLAST_H 1
#endif
#endif

#ifdef XR_HAVE_CLBLAST_H
#define CL_TARGET_OPENCL_VERSION 300
#include <clblast_c.h>

#include "base/dynload.h"
#include "hal/hal.h"

#define XR_CLBLAST_GEMM_PARAMS(T)                                                              \
  (const CLBlastLayout, const CLBlastTranspose, const CLBlastTranspose, const size_t,          \
   const size_t, const size_t, const T, const cl_mem, const size_t, const size_t, const cl_mem, \
   const size_t, const size_t, const T, cl_mem, const size_t, const size_t, cl_command_queue *, \
   cl_event *)
#define XR_CLBLAST_BATCHED_PARAMS(T)                                                           \
  (const CLBlastLayout, const CLBlastTranspose, const CLBlastTranspose, const size_t,          \
   const size_t, const size_t, const T *, const cl_mem, const size_t *, const size_t,          \
   const cl_mem, const size_t *, const size_t, const T *, cl_mem, const size_t *, const size_t, \
   const size_t, cl_command_queue *, cl_event *)

#define XR_CLBLAST_SYMBOLS(X)                                                             \
  X(REQUIRED, CLBlastStatusCode, CLBlastSgemm, XR_CLBLAST_GEMM_PARAMS(float))             \
  X(REQUIRED, CLBlastStatusCode, CLBlastSgemmBatched, XR_CLBLAST_BATCHED_PARAMS(float))   \
  X(OPTIONAL, CLBlastStatusCode, CLBlastHgemm, XR_CLBLAST_GEMM_PARAMS(cl_half))           \
  X(OPTIONAL, CLBlastStatusCode, CLBlastHgemmBatched, XR_CLBLAST_BATCHED_PARAMS(cl_half)) \
  X(OPTIONAL, CLBlastStatusCode, CLBlastSconvgemm,                                        \
    (const CLBlastKernelMode, const size_t, const size_t, const size_t, const size_t,     \
     const size_t, const size_t, const size_t, const size_t, const size_t, const size_t,  \
     const size_t, const size_t, const size_t, const cl_mem, const size_t, const cl_mem,  \
     const size_t, cl_mem, const size_t, cl_command_queue *, cl_event *))                 \
  /* from the OpenCL loader CLBlast links, to ask the device for cl_khr_fp16 */           \
  X(REQUIRED, cl_int, clGetDeviceInfo, (cl_device_id, cl_device_info, size_t, void *, size_t *))

typedef struct xr_clblast {
  XR_CLBLAST_SYMBOLS(XR_DYNLOAD_FIELD)
} xr_clblast_t;

/* Loads CLBlast once per process. UNAVAILABLE with every path tried when it cannot.
 * Thread-safe. */
xr_status_t xr_clblast_get(const xr_clblast_t **out_clblast);

#endif /* XR_HAVE_CLBLAST_H */
#endif
