/* Every library xreplay opens at run time, in one table: the label reports use, the environment
 * variable that overrides it (a path tried first, "off" disables), the places searched after the
 * loader's own path (base/dynload.h), and the sonames, most preferred first. Every loader takes
 * its spec from here (xr_vendor_libraries), so a soname or a place is written once. */
#ifndef XR_BASE_VENDOR_LIBRARIES_H
#define XR_BASE_VENDOR_LIBRARIES_H

#include "base/dynload.h"

/* X(id, label, override variable, places, sonames...) */
#define XR_VENDOR_LIBRARIES(X)                                                                   \
  X(CUDA, "CUDA", "XR_CUDA_LIBRARY", XR_DYNLOAD_IN_GPU_DRIVER, "libcuda.so.1", "libcuda.so")     \
  X(NVML, "NVML", "XR_NVML_LIBRARY", XR_DYNLOAD_IN_GPU_DRIVER, "libnvidia-ml.so.1",              \
    "libnvidia-ml.so")                                                                           \
  X(NVRTC, "NVRTC", "XR_NVRTC_LIBRARY", XR_DYNLOAD_IN_CUDA, "libnvrtc.so.13", "libnvrtc.so.12",  \
    "libnvrtc.so.11.2", "libnvrtc.so")                                                           \
  X(CUBLASLT, "cuBLASLt", "XR_CUBLASLT_LIBRARY", XR_DYNLOAD_IN_CUDA, "libcublasLt.so.13",        \
    "libcublasLt.so.12", "libcublasLt.so.11")                                                    \
  X(CUBLAS, "cuBLAS", "XR_CUBLAS_LIBRARY", XR_DYNLOAD_IN_CUDA, "libcublas.so.13",                \
    "libcublas.so.12", "libcublas.so.11")                                                        \
  X(CUDNN, "cuDNN", "XR_CUDNN_LIBRARY", XR_DYNLOAD_IN_CUDA, "libcudnn.so.9", "libcudnn.so.8")    \
  X(NCCL, "NCCL", "XR_NCCL_LIBRARY", XR_DYNLOAD_IN_CUDA, "libnccl.so.2", "libnccl.so")           \
  /* NVTX 3 is header-only: its v2 library, which the toolkit and the nvidia-nvtx wheels ship */ \
  X(NVTX, "NVTX", "XR_NVTX_LIBRARY", XR_DYNLOAD_IN_CUDA, "libnvToolsExt.so.1",                   \
    "libnvToolsExt.so")                                                                          \
  X(HIP, "HIP", "XR_HIP_LIBRARY", XR_DYNLOAD_IN_ROCM, "libamdhip64.so.7", "libamdhip64.so.6",    \
    "libamdhip64.so.5", "libamdhip64.so")                                                        \
  /* ROCm 5 ships hiprtc inside the HIP runtime. */                                              \
  X(HIPRTC, "hiprtc", "XR_HIPRTC_LIBRARY", XR_DYNLOAD_IN_ROCM, "libhiprtc.so.7",                 \
    "libhiprtc.so.6", "libhiprtc.so", "libamdhip64.so.5")                                        \
  X(HIPBLASLT, "hipBLASLt", "XR_HIPBLASLT_LIBRARY", XR_DYNLOAD_IN_ROCM, "libhipblaslt.so.1",     \
    "libhipblaslt.so.0")                                                                         \
  X(ROCBLAS, "rocBLAS", "XR_ROCBLAS_LIBRARY", XR_DYNLOAD_IN_ROCM, "librocblas.so.5",             \
    "librocblas.so.4", "librocblas.so.3")                                                        \
  X(MIOPEN, "MIOpen", "XR_MIOPEN_LIBRARY", XR_DYNLOAD_IN_ROCM, "libMIOpen.so.1")                 \
  X(RCCL, "RCCL", "XR_RCCL_LIBRARY", XR_DYNLOAD_IN_ROCM, "librccl.so.1", "librccl.so")           \
  X(ROCTX, "roctx", "XR_ROCTX_LIBRARY", XR_DYNLOAD_IN_ROCM, "libroctx64.so.4", "libroctx64.so")  \
  /* ROCm 6.0-6.2 ship .so.24, 6.3-6.4 .so.25, 7.x .so.26. */                                    \
  X(AMD_SMI, "AMD SMI", "XR_AMD_SMI_LIBRARY", XR_DYNLOAD_IN_ROCM, "libamd_smi.so.26",            \
    "libamd_smi.so.25", "libamd_smi.so.24", "libamd_smi.so")                                     \
  X(OPENCL, "OpenCL", "XR_OPENCL_LIBRARY", 0, "libOpenCL.so.1", "libOpenCL.so")                  \
  X(CLBLAST, "CLBlast", "XR_CLBLAST_LIBRARY", 0, "libclblast.so.1", "libclblast.so")             \
  X(ONEDNN, "oneDNN", "XR_ONEDNN_LIBRARY", 0, "libdnnl.so.2", "libdnnl.so")                      \
  X(MPI, "MPI", "XR_MPI_LIBRARY", 0, "libmpi.so.40", "libmpi.so")

typedef enum xr_vendor_library_id {
#define XR_VENDOR_LIBRARY_ID(id, ...) XR_VENDOR_LIBRARY_##id,
  XR_VENDOR_LIBRARIES(XR_VENDOR_LIBRARY_ID)
#undef XR_VENDOR_LIBRARY_ID
  XR_VENDOR_LIBRARY_COUNT
} xr_vendor_library_id_t;

/* The spec of each library, indexed by id: &xr_vendor_libraries[XR_VENDOR_LIBRARY_CUDA]. */
extern const xr_dynload_spec_t xr_vendor_libraries[XR_VENDOR_LIBRARY_COUNT];

#endif /* XR_BASE_VENDOR_LIBRARIES_H */
