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
 * Graphs (stream capture, instantiate, launch) and the PCI bus id are OPTIONAL: a runtime without
 * them still serves everything else, and the entries that need them say which symbol is missing.
 * cuGraphInstantiateWithFlags (CUDA 11.4+) is the one instantiate entry whose name and ABI are
 * the same in CUDA 11.4 to 13 (cuda.h maps cuGraphInstantiate to it since 12.0; the older
 * cuGraphInstantiate and cuGraphInstantiate_v2 take an error node and a log buffer);
 * hipGraphInstantiateWithFlags has the same signature. cuStreamBeginCapture_v2 is the form that
 * takes a capture mode (CUDA 10.1+). Capture modes have the same numbers in both vendors.
 *
 * Order: hipGetDeviceCount first, the hip probe's first call, so that a library which is not
 * the runtime is reported by it ("missing required symbol hipGetDeviceCount"). */
#ifndef XR_HAL_DRIVERS_GPU_GPU_SYMBOLS_H
#define XR_HAL_DRIVERS_GPU_GPU_SYMBOLS_H

/* cuStreamBeginCapture_v2's CU_STREAM_CAPTURE_MODE_THREAD_LOCAL and
 * hipStreamCaptureModeThreadLocal: calls of other threads that are unsafe during a capture
 * (allocations, synchronisation) do not break it, while the capturing thread's own are refused
 * at once instead of recorded wrongly. The results of work a capture cannot record, or of a
 * capture broken by it, are 900 ... 908 (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED ... _WRONG_THREAD;
 * hipErrorStreamCapture*) in both. */
enum {
  XR_GPU_CAPTURE_MODE_THREAD_LOCAL = 1,
  XR_GPU_ERROR_STREAM_CAPTURE_FIRST = 900,
  XR_GPU_ERROR_STREAM_CAPTURE_LAST = 908,
};

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
    cuLaunchKernel, hipModuleLaunchKernel) \
  X(OPTIONAL, int, device_pci_bus_id, (char *id, int length, int device), \
    cuDeviceGetPCIBusId, hipDeviceGetPCIBusId) \
  X(OPTIONAL, int, stream_begin_capture, (void *stream, int mode), \
    cuStreamBeginCapture_v2, hipStreamBeginCapture) \
  X(OPTIONAL, int, stream_end_capture, (void *stream, void **graph), \
    cuStreamEndCapture, hipStreamEndCapture) \
  X(OPTIONAL, int, graph_instantiate, (void **exec, void *graph, unsigned long long flags), \
    cuGraphInstantiateWithFlags, hipGraphInstantiateWithFlags) \
  X(OPTIONAL, int, graph_launch, (void *exec, void *stream), cuGraphLaunch, hipGraphLaunch) \
  X(OPTIONAL, int, graph_exec_destroy, (void *exec), cuGraphExecDestroy, hipGraphExecDestroy) \
  X(OPTIONAL, int, graph_destroy, (void *graph), cuGraphDestroy, hipGraphDestroy)

#endif
