/* The cuda driver: the CUDA driver API (libcuda.so.1) under the common GPU code (gpu.h). What is
 * CUDA's own: cuInit, the device's primary context (the one the CUDA runtime and PyTorch
 * share), retained at creation and made current at every entry, CUresult names, compute
 * capability (NVRTC compiles for sm_<major><minor>), fatbin / cubin / PTX images, and the opt-in
 * to more than 48 KiB of dynamic shared memory. */
#include <stdio.h>

#include "hal/drivers/gpu/gpu.h"

/* From cuda.h (values fixed by the ABI). */
enum {
  CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
  CU_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

/* Dynamic shared memory a kernel may use without opting in. */
#define DEFAULT_SHARED_MEMORY_LIMIT (48 * 1024)

/* CUDA's entry points besides gpu_symbols.h (the list style of base/dynload.h). cuGetErrorName
 * writes the name through a pointer, unlike hipGetErrorName. */
#define CUDA_SYMBOLS(X) \
  X(REQUIRED, int, cuInit, (unsigned int flags)) \
  X(REQUIRED, int, cuDevicePrimaryCtxRetain, (void **context, int device)) \
  X(REQUIRED, int, cuDevicePrimaryCtxRelease_v2, (int device)) \
  X(REQUIRED, int, cuCtxSetCurrent, (void *context)) \
  X(OPTIONAL, int, cuGetErrorName, (int error, const char **name)) \
  X(OPTIONAL, int, cuFuncSetAttribute, (void *function, int attribute, int value))

typedef struct vendor_state {
  xr_gpu_runtime_t gpu; /* first: what the common code reads */
  CUDA_SYMBOLS(XR_DYNLOAD_FIELD)
} vendor_state_t;

/* cuInit first: it is the probe's first call, so a library that is not the driver API is
 * reported by it ("missing required symbol cuInit"). */
static const xr_dynload_symbol_t cuda_symbol_list[] = {
    CUDA_SYMBOLS(XR_GPU_OWN_SYMBOL) XR_GPU_SYMBOLS(XR_GPU_CUDA_SYMBOL)};

/* Written once by the probe (under the registry's lock), read-only afterwards. */
static vendor_state_t cu;

/* The vendor's name for a CUresult. cuGetErrorName fails in the toolkit's stub libcuda, so the
 * names a user is likely to meet are also known here. */
static const char *cuda_error_name(int code) {
  const char *name = NULL;
  if (cu.cuGetErrorName && cu.cuGetErrorName(code, &name) == XR_GPU_SUCCESS && name) return name;
  switch (code) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return "CUDA_ERROR_DEINITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 200: return "CUDA_ERROR_INVALID_IMAGE";
    case 201: return "CUDA_ERROR_INVALID_CONTEXT";
    case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 218: return "CUDA_ERROR_INVALID_PTX";
    case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case 304: return "CUDA_ERROR_OPERATING_SYSTEM";
    case 400: return "CUDA_ERROR_INVALID_HANDLE";
    case 500: return "CUDA_ERROR_NOT_FOUND";
    case 600: return "CUDA_ERROR_NOT_READY";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    case 702: return "CUDA_ERROR_LAUNCH_TIMEOUT";
    case 719: return "CUDA_ERROR_LAUNCH_FAILED";
    case 801: return "CUDA_ERROR_NOT_SUPPORTED";
    case 803: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case 804: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case 900: return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
    case 901: return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
    case 905: return "CUDA_ERROR_STREAM_CAPTURE_ISOLATION";
    case 906: return "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT";
    case 907: return "CUDA_ERROR_CAPTURED_EVENT";
    case 908: return "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return "CUDA error";
  }
}

static int cuda_init(void) { return cu.cuInit(0); }

/* "CUDA 13.0 driver" from 13000. */
static bool cuda_describe_runtime(char *reason, size_t capacity) {
  int version = cu.gpu.driver_version;
  xr_dynload_report_append(reason, capacity, "CUDA %d.%d driver", version / 1000,
                           version % 1000 / 10);
  return true;
}

/* Makes the device's primary context current on this thread (cheap: a thread-local store). */
static int cuda_make_current(const xr_gpu_device_t *device) {
  return cu.cuCtxSetCurrent(device->native);
}

static xr_status_t cuda_open(xr_gpu_device_t *device) {
  int result = cu.cuDevicePrimaryCtxRetain(&device->native, device->device);
  if (result != XR_GPU_SUCCESS) {
    return xr_gpu_fail(result == XR_GPU_ERROR_OUT_OF_MEMORY ? XR_RESOURCE_EXHAUSTED
                                                            : XR_UNAVAILABLE,
                       device, "cuDevicePrimaryCtxRetain", result);
  }
  xr_hal_device_properties_t *p = &device->properties;
  xr_hal_copy_string(p->vendor, sizeof p->vendor, "NVIDIA");
  int major = xr_gpu_attribute(device, CU_ATTR_COMPUTE_CAPABILITY_MAJOR);
  int minor = xr_gpu_attribute(device, CU_ATTR_COMPUTE_CAPABILITY_MINOR);
  snprintf(device->target, sizeof device->target, "sm_%d%d", major, minor);
  int version = cu.gpu.driver_version;
  snprintf(p->driver_version, sizeof p->driver_version, "CUDA %d.%d (%.100s)", version / 1000,
           version % 1000 / 10, cu.gpu.library.path);
  char compiler[256];
  xr_gpu_compiler_describe(XR_GPU_COMPILER_NVRTC, compiler, sizeof compiler);
  snprintf(p->runtime_version, sizeof p->runtime_version, "compute capability %d.%d (%.15s); %.80s",
           major, minor, device->target, compiler);
  return XR_OK;
}

static void cuda_close(xr_gpu_device_t *device) { cu.cuDevicePrimaryCtxRelease_v2(device->device); }

/* FP32 lanes per SM by compute capability: 64 on Volta, Turing and A100, 128 since GA10x.
 * Data-centre parts (x.0 since Volta) run fp64 at half rate, others at 1/64. */
static void cuda_estimate(xr_gpu_device_t *device, int *out_fp32_lanes, double *out_fp64_rate) {
  int major = xr_gpu_attribute(device, CU_ATTR_COMPUTE_CAPABILITY_MAJOR);
  int minor = xr_gpu_attribute(device, CU_ATTR_COMPUTE_CAPABILITY_MINOR);
  *out_fp32_lanes = major >= 9 || (major == 8 && minor > 0) ? 128 : 64;
  *out_fp64_rate = minor == 0 && major >= 7 ? 1.0 / 2 : 1.0 / 64;
}

/* Above 48 KiB a kernel must opt in to larger dynamic shared memory. */
static void cuda_before_launch(void *function, unsigned int shared_bytes) {
  if (shared_bytes > DEFAULT_SHARED_MEMORY_LIMIT && cu.cuFuncSetAttribute) {
    cu.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                          (int)shared_bytes);
  }
}

/* What the probe reports besides the driver (NVTX: whether runs get profiler ranges). */
static const xr_vendor_library_id_t cuda_libraries[] = {
    XR_VENDOR_LIBRARY_CUBLASLT, XR_VENDOR_LIBRARY_CUBLAS, XR_VENDOR_LIBRARY_CUDNN,
    XR_VENDOR_LIBRARY_NVTX};

static const xr_gpu_vendor_t cuda_vendor = {
    .library = &xr_vendor_libraries[XR_VENDOR_LIBRARY_CUDA],
    .symbols = cuda_symbol_list, .symbol_count = XR_GPU_COUNT(cuda_symbol_list),
    .runtime = &cu.gpu, .init = cuda_init, .init_call = "cuInit",
    .error_name = cuda_error_name, .describe_runtime = cuda_describe_runtime,
    .compiler = XR_GPU_COMPILER_NVRTC,
    .libraries = cuda_libraries, .library_count = XR_GPU_COUNT(cuda_libraries),
    .open = cuda_open, .close = cuda_close,
    .make_current = cuda_make_current, .make_current_call = "cuCtxSetCurrent",
    .binary_format = XR_HAL_EXECUTABLE_CUDA_FATBIN, .binary_formats = "fatbin/cubin/PTX",
    .no_code_result = CU_ERROR_UNSUPPORTED_PTX_VERSION, .before_launch = cuda_before_launch,
    /* CUdevice_attribute numbers. */
    .attributes = {.compute_units = 16, .clock_khz = 13, .memory_clock_khz = 36,
                   .memory_bus_bits = 37, .warp_size = 10, .max_threads_per_block = 1,
                   .l2_cache_bytes = 38},
    .estimate = cuda_estimate,
    .management = &xr_gpu_nvml,
    .ranges = &xr_gpu_nvtx,
    .frees_graphs_in_flight = true,
};

/* const xr_hal_driver_t xr_hal_cuda_driver, listed in hal/drivers.bzl. */
XR_GPU_DRIVER(cuda, cuda_vendor);
