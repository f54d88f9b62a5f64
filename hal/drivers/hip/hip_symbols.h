/* The HIP runtime symbols xreplay uses, each listed once as REQUIRED or OPTIONAL (the X-macro
 * pattern of IREE's runtime/src/iree/hal/drivers/hip/dynamic_symbol_tables.h). The includer
 * defines XR_HIP_REQUIRED(ret, name, params) and XR_HIP_OPTIONAL(...) first. Types are plain C
 * (hipError_t is an int enum; handles and device pointers are pointers), so no HIP header is
 * needed to build. Everything here has the same name and ABI in ROCm 5 and 6, with one
 * exception handled in hip_driver.c: hipDeviceProp_t, whose layout changed in ROCm 6; only the
 * frozen ROCm 5 layout (hipGetDevicePropertiesR0000, exported by ROCm 6 too) is used, and only
 * for gcnArchName. No include guard: included once per expansion. */
XR_HIP_REQUIRED(int, hipGetDeviceCount, (int *count))
XR_HIP_REQUIRED(int, hipDriverGetVersion, (int *version))
XR_HIP_REQUIRED(int, hipRuntimeGetVersion, (int *version))
XR_HIP_REQUIRED(int, hipSetDevice, (int device))
XR_HIP_REQUIRED(int, hipDeviceGetName, (char *name, int length, int device))
XR_HIP_REQUIRED(int, hipDeviceGetAttribute, (int *value, int attribute, int device))
XR_HIP_REQUIRED(int, hipDeviceTotalMem, (size_t *bytes, int device))
XR_HIP_REQUIRED(int, hipDeviceSynchronize, (void))
XR_HIP_REQUIRED(int, hipMalloc, (void **pointer, size_t bytes))
XR_HIP_REQUIRED(int, hipFree, (void *pointer))
XR_HIP_REQUIRED(int, hipMemcpyAsync, (void *dst, const void *src, size_t bytes, int kind, void *stream))
XR_HIP_REQUIRED(int, hipMemsetD8Async, (void *dst, unsigned char value, size_t count, void *stream))
XR_HIP_REQUIRED(int, hipMemsetD16Async, (void *dst, unsigned short value, size_t count, void *stream))
XR_HIP_REQUIRED(int, hipMemsetD32Async, (void *dst, int value, size_t count, void *stream))
XR_HIP_REQUIRED(int, hipStreamCreateWithFlags, (void **stream, unsigned int flags))
XR_HIP_REQUIRED(int, hipStreamDestroy, (void *stream))
XR_HIP_REQUIRED(int, hipStreamSynchronize, (void *stream))
XR_HIP_REQUIRED(int, hipStreamWaitEvent, (void *stream, void *event, unsigned int flags))
XR_HIP_REQUIRED(int, hipEventCreateWithFlags, (void **event, unsigned int flags))
XR_HIP_REQUIRED(int, hipEventDestroy, (void *event))
XR_HIP_REQUIRED(int, hipEventRecord, (void *event, void *stream))
XR_HIP_REQUIRED(int, hipEventSynchronize, (void *event))
XR_HIP_REQUIRED(int, hipEventElapsedTime, (float *milliseconds, void *start, void *end))
XR_HIP_REQUIRED(int, hipModuleLoadData, (void **module, const void *image))
XR_HIP_REQUIRED(int, hipModuleUnload, (void *module))
XR_HIP_REQUIRED(int, hipModuleGetFunction, (void **function, void *module, const char *name))
XR_HIP_REQUIRED(int, hipModuleLaunchKernel, (void *function, unsigned int grid_x,
                                             unsigned int grid_y, unsigned int grid_z,
                                             unsigned int block_x, unsigned int block_y,
                                             unsigned int block_z, unsigned int shared_bytes,
                                             void *stream, void **params, void **extra))
XR_HIP_OPTIONAL(const char *, hipGetErrorName, (int error))
XR_HIP_OPTIONAL(int, hipGetDevicePropertiesR0000, (void *properties, int device))
XR_HIP_OPTIONAL(int, hipGetDeviceProperties, (void *properties, int device))
