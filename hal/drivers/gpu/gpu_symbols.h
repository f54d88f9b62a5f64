/* The entry points the common GPU code (gpu_driver.c) calls, one list for both vendors: the CUDA
 * driver API (libcuda) and the HIP runtime (libamdhip64), whose driver-API-style twins
 * (hipMemcpyHtoDAsync, hipModuleLaunchKernel, ...) take the same arguments. Each entry reads
 *   X(need, return type, field, (parameters), CUDA symbol, HIP symbol)
 * the two-vendor list style of base/dynload.h. Types are plain C: results are int enums, handles
 * pointers, device pointers 64-bit integers (CUdeviceptr; HIP's void * has the same size and
 * calling convention), so no vendor header is needed to build. What only one vendor has (cuInit,
 * primary contexts, hipSetDevice, the error-name calls, whose signatures differ) is listed in
 * that vendor's file, cuda.c or hip.c.
 *
 * Versioned CUDA entry points: cuda.h maps e.g. cuMemAlloc to cuMemAlloc_v2 with macros, and the
 * library still exports the old names with the old ABI (32-bit sizes for cuMemAlloc). We name
 * the versioned symbol explicitly wherever one exists in CUDA 11.0, the oldest driver API we
 * support; cuEventElapsedTime_v2 (CUDA 12.8+) is taken when the driver has it (HIP has one
 * entry, listed for both fields). Every HIP symbol has the same name and ABI in ROCm 5 and 6.
 *
 * Order: hipGetDeviceCount first, the hip probe's first call, so that a library which is not
 * the runtime is reported by it ("missing required symbol hipGetDeviceCount"). */
#ifndef XR_HAL_DRIVERS_GPU_GPU_SYMBOLS_H
#define XR_HAL_DRIVERS_GPU_GPU_SYMBOLS_H

#define XR_GPU_SYMBOLS(X) \
  X(REQUIRED, int, device_count, (int *count), cuDeviceGetCount, hipGetDeviceCount) \
  X(REQUIRED, int, driver_version, (int *version), cuDriverGetVersion, hipDriverGetVersion) \
  X(REQUIRED, int, device_get, (int *device, int ordinal), cuDeviceGet, hipDeviceGet) \
  X(REQUIRED, int, device_name, (char *name, int length, int device), \
    cuDeviceGetName, hipDeviceGetName) \
  X(REQUIRED, int, device_attribute, (int *value, int attribute, int device), \
    cuDeviceGetAttribute, hipDeviceGetAttribute) \
  X(REQUIRED, int, device_memory, (size_t *bytes, int device), \
    cuDeviceTotalMem_v2, hipDeviceTotalMem) \
  X(REQUIRED, int, synchronize, (void), cuCtxSynchronize, hipDeviceSynchronize) \
  X(REQUIRED, int, mem_alloc, (uint64_t *pointer, size_t bytes), cuMemAlloc_v2, hipMalloc) \
  X(REQUIRED, int, mem_free, (uint64_t pointer), cuMemFree_v2, hipFree) \
  X(REQUIRED, int, copy_to_device, (uint64_t dst, const void *src, size_t bytes, void *stream), \
    cuMemcpyHtoDAsync_v2, hipMemcpyHtoDAsync) \
  X(REQUIRED, int, copy_to_host, (void *dst, uint64_t src, size_t bytes, void *stream), \
    cuMemcpyDtoHAsync_v2, hipMemcpyDtoHAsync) \
  X(REQUIRED, int, copy_on_device, (uint64_t dst, uint64_t src, size_t bytes, void *stream), \
    cuMemcpyDtoDAsync_v2, hipMemcpyDtoDAsync) \
  X(REQUIRED, int, fill_8, (uint64_t dst, unsigned char value, size_t count, void *stream), \
    cuMemsetD8Async, hipMemsetD8Async) \
  X(REQUIRED, int, fill_16, (uint64_t dst, unsigned short value, size_t count, void *stream), \
    cuMemsetD16Async, hipMemsetD16Async) \
  X(REQUIRED, int, fill_32, (uint64_t dst, unsigned int value, size_t count, void *stream), \
    cuMemsetD32Async, hipMemsetD32Async) \
  X(REQUIRED, int, stream_create, (void **stream, unsigned int flags), \
    cuStreamCreate, hipStreamCreateWithFlags) \
  X(REQUIRED, int, stream_destroy, (void *stream), cuStreamDestroy_v2, hipStreamDestroy) \
  X(REQUIRED, int, stream_synchronize, (void *stream), cuStreamSynchronize, hipStreamSynchronize) \
  X(REQUIRED, int, stream_wait_event, (void *stream, void *event, unsigned int flags), \
    cuStreamWaitEvent, hipStreamWaitEvent) \
  X(REQUIRED, int, event_create, (void **event, unsigned int flags), \
    cuEventCreate, hipEventCreateWithFlags) \
  X(REQUIRED, int, event_destroy, (void *event), cuEventDestroy_v2, hipEventDestroy) \
  X(REQUIRED, int, event_record, (void *event, void *stream), cuEventRecord, hipEventRecord) \
  X(REQUIRED, int, event_synchronize, (void *event), cuEventSynchronize, hipEventSynchronize) \
  X(REQUIRED, int, event_elapsed, (float *milliseconds, void *start, void *end), \
    cuEventElapsedTime, hipEventElapsedTime) \
  X(OPTIONAL, int, event_elapsed_v2, (float *milliseconds, void *start, void *end), \
    cuEventElapsedTime_v2, hipEventElapsedTime) \
  X(REQUIRED, int, module_load, (void **module, const void *image), \
    cuModuleLoadData, hipModuleLoadData) \
  X(REQUIRED, int, module_unload, (void *module), cuModuleUnload, hipModuleUnload) \
  X(REQUIRED, int, module_function, (void **function, void *module, const char *name), \
    cuModuleGetFunction, hipModuleGetFunction) \
  X(REQUIRED, int, launch, \
    (void *function, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z, \
     unsigned int block_x, unsigned int block_y, unsigned int block_z, \
     unsigned int shared_bytes, void *stream, void **params, void **extra), \
    cuLaunchKernel, hipModuleLaunchKernel)

#endif
