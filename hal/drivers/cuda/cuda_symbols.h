/* The CUDA driver API symbols xreplay uses, each listed once as REQUIRED or OPTIONAL (the
 * X-macro pattern of IREE's runtime/src/iree/hal/drivers/hip/dynamic_symbol_tables.h). The
 * includer defines XR_CUDA_REQUIRED(ret, name, params) and XR_CUDA_OPTIONAL(...) first. Types
 * are plain C (CUresult is an int enum; handles are pointers; CUdeviceptr is 64-bit), so no CUDA
 * header is needed to build.
 *
 * Versioned entry points: cuda.h maps e.g. cuMemAlloc to cuMemAlloc_v2 with macros, and the
 * library still exports the old names with the old ABI (32-bit sizes for cuMemAlloc). We name
 * the versioned symbol explicitly wherever one exists in CUDA 11.0, the oldest driver API we
 * support; cuEventElapsedTime_v2 (CUDA 12.8+) is taken when the driver has it.
 * No include guard: included once per expansion. */
XR_CUDA_REQUIRED(int, cuInit, (unsigned int flags))
XR_CUDA_REQUIRED(int, cuDriverGetVersion, (int *version))
XR_CUDA_REQUIRED(int, cuDeviceGetCount, (int *count))
XR_CUDA_REQUIRED(int, cuDeviceGet, (int *device, int ordinal))
XR_CUDA_REQUIRED(int, cuDeviceGetName, (char *name, int length, int device))
XR_CUDA_REQUIRED(int, cuDeviceGetAttribute, (int *value, int attribute, int device))
XR_CUDA_REQUIRED(int, cuDeviceTotalMem_v2, (size_t *bytes, int device))
XR_CUDA_REQUIRED(int, cuDevicePrimaryCtxRetain, (void **context, int device))
XR_CUDA_REQUIRED(int, cuDevicePrimaryCtxRelease_v2, (int device))
XR_CUDA_REQUIRED(int, cuCtxSetCurrent, (void *context))
XR_CUDA_REQUIRED(int, cuCtxSynchronize, (void))
XR_CUDA_REQUIRED(int, cuMemAlloc_v2, (uint64_t *pointer, size_t bytes))
XR_CUDA_REQUIRED(int, cuMemFree_v2, (uint64_t pointer))
XR_CUDA_REQUIRED(int, cuMemcpyHtoDAsync_v2, (uint64_t dst, const void *src, size_t bytes, void *stream))
XR_CUDA_REQUIRED(int, cuMemcpyDtoHAsync_v2, (void *dst, uint64_t src, size_t bytes, void *stream))
XR_CUDA_REQUIRED(int, cuMemcpyDtoDAsync_v2, (uint64_t dst, uint64_t src, size_t bytes, void *stream))
XR_CUDA_REQUIRED(int, cuMemsetD8Async, (uint64_t dst, unsigned char value, size_t count, void *stream))
XR_CUDA_REQUIRED(int, cuMemsetD16Async, (uint64_t dst, unsigned short value, size_t count, void *stream))
XR_CUDA_REQUIRED(int, cuMemsetD32Async, (uint64_t dst, unsigned int value, size_t count, void *stream))
XR_CUDA_REQUIRED(int, cuStreamCreate, (void **stream, unsigned int flags))
XR_CUDA_REQUIRED(int, cuStreamDestroy_v2, (void *stream))
XR_CUDA_REQUIRED(int, cuStreamSynchronize, (void *stream))
XR_CUDA_REQUIRED(int, cuStreamWaitEvent, (void *stream, void *event, unsigned int flags))
XR_CUDA_REQUIRED(int, cuEventCreate, (void **event, unsigned int flags))
XR_CUDA_REQUIRED(int, cuEventDestroy_v2, (void *event))
XR_CUDA_REQUIRED(int, cuEventRecord, (void *event, void *stream))
XR_CUDA_REQUIRED(int, cuEventSynchronize, (void *event))
XR_CUDA_REQUIRED(int, cuEventElapsedTime, (float *milliseconds, void *start, void *end))
XR_CUDA_REQUIRED(int, cuModuleLoadData, (void **module, const void *image))
XR_CUDA_REQUIRED(int, cuModuleUnload, (void *module))
XR_CUDA_REQUIRED(int, cuModuleGetFunction, (void **function, void *module, const char *name))
XR_CUDA_REQUIRED(int, cuLaunchKernel, (void *function, unsigned int grid_x, unsigned int grid_y,
                                       unsigned int grid_z, unsigned int block_x,
                                       unsigned int block_y, unsigned int block_z,
                                       unsigned int shared_bytes, void *stream, void **params,
                                       void **extra))
XR_CUDA_OPTIONAL(int, cuGetErrorName, (int error, const char **name))
XR_CUDA_OPTIONAL(int, cuEventElapsedTime_v2, (float *milliseconds, void *start, void *end))
XR_CUDA_OPTIONAL(int, cuFuncSetAttribute, (void *function, int attribute, int value))
