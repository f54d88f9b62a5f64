/* The CUDA driver API symbols xreplay uses, each listed once as REQUIRED or OPTIONAL (the
 * list style of base/dynload.h). Types are plain C (CUresult is an int enum; handles are pointers; CUdeviceptr is 64-bit), so no CUDA
 * header is needed to build.
 *
 * Versioned entry points: cuda.h maps e.g. cuMemAlloc to cuMemAlloc_v2 with macros, and the
 * library still exports the old names with the old ABI (32-bit sizes for cuMemAlloc). We name
 * the versioned symbol explicitly wherever one exists in CUDA 11.0, the oldest driver API we
 * support; cuEventElapsedTime_v2 (CUDA 12.8+) is taken when the driver has it. */
#ifndef XR_HAL_DRIVERS_CUDA_SYMBOLS_H
#define XR_HAL_DRIVERS_CUDA_SYMBOLS_H

#define XR_CUDA_SYMBOLS(X) \
  X(REQUIRED, int, cuInit, (unsigned int flags)) \
  X(REQUIRED, int, cuDriverGetVersion, (int *version)) \
  X(REQUIRED, int, cuDeviceGetCount, (int *count)) \
  X(REQUIRED, int, cuDeviceGet, (int *device, int ordinal)) \
  X(REQUIRED, int, cuDeviceGetName, (char *name, int length, int device)) \
  X(REQUIRED, int, cuDeviceGetAttribute, (int *value, int attribute, int device)) \
  X(REQUIRED, int, cuDeviceTotalMem_v2, (size_t *bytes, int device)) \
  X(REQUIRED, int, cuDevicePrimaryCtxRetain, (void **context, int device)) \
  X(REQUIRED, int, cuDevicePrimaryCtxRelease_v2, (int device)) \
  X(REQUIRED, int, cuCtxSetCurrent, (void *context)) \
  X(REQUIRED, int, cuCtxSynchronize, (void)) \
  X(REQUIRED, int, cuMemAlloc_v2, (uint64_t *pointer, size_t bytes)) \
  X(REQUIRED, int, cuMemFree_v2, (uint64_t pointer)) \
  X(REQUIRED, int, cuMemcpyHtoDAsync_v2, (uint64_t dst, const void *src, size_t bytes, void *stream)) \
  X(REQUIRED, int, cuMemcpyDtoHAsync_v2, (void *dst, uint64_t src, size_t bytes, void *stream)) \
  X(REQUIRED, int, cuMemcpyDtoDAsync_v2, (uint64_t dst, uint64_t src, size_t bytes, void *stream)) \
  X(REQUIRED, int, cuMemsetD8Async, (uint64_t dst, unsigned char value, size_t count, void *stream)) \
  X(REQUIRED, int, cuMemsetD16Async, (uint64_t dst, unsigned short value, size_t count, void *stream)) \
  X(REQUIRED, int, cuMemsetD32Async, (uint64_t dst, unsigned int value, size_t count, void *stream)) \
  X(REQUIRED, int, cuStreamCreate, (void **stream, unsigned int flags)) \
  X(REQUIRED, int, cuStreamDestroy_v2, (void *stream)) \
  X(REQUIRED, int, cuStreamSynchronize, (void *stream)) \
  X(REQUIRED, int, cuStreamWaitEvent, (void *stream, void *event, unsigned int flags)) \
  X(REQUIRED, int, cuEventCreate, (void **event, unsigned int flags)) \
  X(REQUIRED, int, cuEventDestroy_v2, (void *event)) \
  X(REQUIRED, int, cuEventRecord, (void *event, void *stream)) \
  X(REQUIRED, int, cuEventSynchronize, (void *event)) \
  X(REQUIRED, int, cuEventElapsedTime, (float *milliseconds, void *start, void *end)) \
  X(REQUIRED, int, cuModuleLoadData, (void **module, const void *image)) \
  X(REQUIRED, int, cuModuleUnload, (void *module)) \
  X(REQUIRED, int, cuModuleGetFunction, (void **function, void *module, const char *name)) \
  X(REQUIRED, int, cuLaunchKernel, (void *function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z, unsigned int block_x, unsigned int block_y, unsigned int block_z, unsigned int shared_bytes, void *stream, void **params, void **extra)) \
  X(OPTIONAL, int, cuGetErrorName, (int error, const char **name)) \
  X(OPTIONAL, int, cuEventElapsedTime_v2, (float *milliseconds, void *start, void *end)) \
  X(OPTIONAL, int, cuFuncSetAttribute, (void *function, int attribute, int value))

#endif
