/* The HIP runtime symbols xreplay uses, each listed once as REQUIRED or OPTIONAL (the X-macro
 * list style of base/dynload.h). Types are plain C
 * (hipError_t is an int enum; handles and device pointers are pointers), so no HIP header is
 * needed to build. Everything here has the same name and ABI in ROCm 5 and 6, with one
 * exception handled in hip_driver.c: hipDeviceProp_t, whose layout changed in ROCm 6; only the
 * frozen ROCm 5 layout (hipGetDevicePropertiesR0000, exported by ROCm 6 too) is used, and only
 * for gcnArchName. */
#ifndef XR_HAL_DRIVERS_HIP_SYMBOLS_H
#define XR_HAL_DRIVERS_HIP_SYMBOLS_H

#define XR_HIP_SYMBOLS(X) \
  X(REQUIRED, int, hipGetDeviceCount, (int *count)) \
  X(REQUIRED, int, hipDriverGetVersion, (int *version)) \
  X(REQUIRED, int, hipRuntimeGetVersion, (int *version)) \
  X(REQUIRED, int, hipSetDevice, (int device)) \
  X(REQUIRED, int, hipDeviceGetName, (char *name, int length, int device)) \
  X(REQUIRED, int, hipDeviceGetAttribute, (int *value, int attribute, int device)) \
  X(REQUIRED, int, hipDeviceTotalMem, (size_t *bytes, int device)) \
  X(REQUIRED, int, hipDeviceSynchronize, (void)) \
  X(REQUIRED, int, hipMalloc, (void **pointer, size_t bytes)) \
  X(REQUIRED, int, hipFree, (void *pointer)) \
  X(REQUIRED, int, hipMemcpyAsync, (void *dst, const void *src, size_t bytes, int kind, void *stream)) \
  X(REQUIRED, int, hipMemsetD8Async, (void *dst, unsigned char value, size_t count, void *stream)) \
  X(REQUIRED, int, hipMemsetD16Async, (void *dst, unsigned short value, size_t count, void *stream)) \
  X(REQUIRED, int, hipMemsetD32Async, (void *dst, int value, size_t count, void *stream)) \
  X(REQUIRED, int, hipStreamCreateWithFlags, (void **stream, unsigned int flags)) \
  X(REQUIRED, int, hipStreamDestroy, (void *stream)) \
  X(REQUIRED, int, hipStreamSynchronize, (void *stream)) \
  X(REQUIRED, int, hipStreamWaitEvent, (void *stream, void *event, unsigned int flags)) \
  X(REQUIRED, int, hipEventCreateWithFlags, (void **event, unsigned int flags)) \
  X(REQUIRED, int, hipEventDestroy, (void *event)) \
  X(REQUIRED, int, hipEventRecord, (void *event, void *stream)) \
  X(REQUIRED, int, hipEventSynchronize, (void *event)) \
  X(REQUIRED, int, hipEventElapsedTime, (float *milliseconds, void *start, void *end)) \
  X(REQUIRED, int, hipModuleLoadData, (void **module, const void *image)) \
  X(REQUIRED, int, hipModuleUnload, (void *module)) \
  X(REQUIRED, int, hipModuleGetFunction, (void **function, void *module, const char *name)) \
  X(REQUIRED, int, hipModuleLaunchKernel, (void *function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z, unsigned int block_x, unsigned int block_y, unsigned int block_z, unsigned int shared_bytes, void *stream, void **params, void **extra)) \
  X(OPTIONAL, const char *, hipGetErrorName, (int error)) \
  X(OPTIONAL, int, hipGetDevicePropertiesR0000, (void *properties, int device)) \
  X(OPTIONAL, int, hipGetDeviceProperties, (void *properties, int device))

#endif
