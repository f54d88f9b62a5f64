/* The hip driver: the HIP runtime (libamdhip64.so.7, .so.6, .so.5) under the common GPU code (gpu.h).
 * What is HIP's own: the runtime keeps a current device per thread, so every entry selects the
 * device (hipSetDevice, a thread-local store) and there is no device object; hipGetErrorName;
 * code objects as images, and hiprtc compiling for the device's gcnArchName
 * (kernels/gpu/hip_compat.h maps the CUDA spellings).
 *
 * ROCm 5 and 6 differ in hipDeviceProp_t's layout and in hipDeviceAttribute_t's AMD-specific
 * values, so scalar properties come from hipDeviceGetAttribute with CUDA-compatible attribute
 * numbers (kept stable since ROCm 5.0: retired ones became "Unused" placeholders), and only
 * gcnArchName is read from a struct: the frozen ROCm 5 layout (hipDeviceProp_tR0000), which
 * ROCm 6 and later still export as hipGetDevicePropertiesR0000 and hipGetDeviceProperties. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "hal/drivers/gpu/gpu.h"

/* The leading fields of hipDeviceProp_tR0000 (ROCm 5's hipDeviceProp_t) up to gcnArchName. */
typedef struct hip_properties_r0000 {
  char name[256];
  size_t total_global_memory, shared_memory_per_block;
  int registers_per_block, warp_size, max_threads_per_block, max_threads_dim[3], max_grid[3];
  int clock_rate, memory_clock_rate, memory_bus_width;
  size_t total_constant_memory;
  int major, minor, multiprocessor_count, l2_cache_size, max_threads_per_multiprocessor;
  int compute_mode, clock_instruction_rate;
  unsigned int arch_flags; /* hipDeviceArch_t: 17 one-bit fields */
  int concurrent_kernels, pci_domain, pci_bus, pci_device;
  size_t max_shared_memory_per_multiprocessor;
  int is_multi_gpu_board, can_map_host_memory, gcn_arch;
  char gcn_arch_name[256];
} hip_properties_r0000_t;
_Static_assert(offsetof(hip_properties_r0000_t, gcn_arch_name) == 396,
               "hipDeviceProp_tR0000 puts gcnArchName at byte 396");
/* The whole R0000 struct is 792 bytes; the runtime writes all of it. */
#define HIP_PROPERTIES_R0000_BYTES 792

/* HIP's entry points besides gpu_symbols.h (the list style of base/dynload.h). hipGetErrorName
 * returns the name, unlike cuGetErrorName. */
#define HIP_SYMBOLS(X) \
  X(REQUIRED, int, hipRuntimeGetVersion, (int *version)) \
  X(REQUIRED, int, hipSetDevice, (int device)) \
  X(OPTIONAL, const char *, hipGetErrorName, (int error)) \
  X(OPTIONAL, int, hipGetDevicePropertiesR0000, (void *properties, int device)) \
  X(OPTIONAL, int, hipGetDeviceProperties, (void *properties, int device))

typedef struct vendor_state {
  xr_gpu_runtime_t gpu; /* first: what the common code reads */
  HIP_SYMBOLS(XR_DYNLOAD_FIELD)
  int runtime_version;  /* 60241234-style: major * 10000000 + minor * 100000 + patch */
} vendor_state_t;

/* The common list first: its hipGetDeviceCount is the probe's first call. */
static const xr_dynload_symbol_t hip_symbol_list[] = {
    XR_GPU_SYMBOLS(XR_GPU_HIP_SYMBOL) HIP_SYMBOLS(XR_GPU_OWN_SYMBOL)};

/* Written once by the probe (under the registry's lock), read-only afterwards. */
static vendor_state_t hip;

static const char *hip_error_name(int code) {
  const char *name = hip.hipGetErrorName ? hip.hipGetErrorName(code) : NULL;
  return name ? name : "HIP error";
}

/* gcnArchName is the compiler's target: without a way to read it the runtime cannot serve. */
static bool hip_describe_runtime(char *reason, size_t capacity) {
  if (!hip.hipGetDevicePropertiesR0000 && !hip.hipGetDeviceProperties) {
    xr_dynload_report_append(reason, capacity,
                             "neither hipGetDevicePropertiesR0000 nor hipGetDeviceProperties is "
                             "exported: cannot read gcnArchName");
    return false;
  }
  hip.hipRuntimeGetVersion(&hip.runtime_version);
  xr_dynload_report_append(reason, capacity, "HIP %d.%d runtime", hip.runtime_version / 10000000,
                           hip.runtime_version / 100000 % 100);
  return true;
}

/* Selects the device on this thread (a thread-local store in the runtime). */
static int hip_make_current(const xr_gpu_device_t *device) {
  return hip.hipSetDevice(device->ordinal);
}

/* gcnArchName from the frozen ROCm 5 layout of hipDeviceProp_t. */
static xr_status_t read_arch_name(xr_gpu_device_t *device) {
  union {
    hip_properties_r0000_t fields;
    unsigned char bytes[HIP_PROPERTIES_R0000_BYTES + 256]; /* room to spare */
  } properties;
  memset(&properties, 0, sizeof properties);
  const char *call =
      hip.hipGetDevicePropertiesR0000 ? "hipGetDevicePropertiesR0000" : "hipGetDeviceProperties";
  int result = hip.hipGetDevicePropertiesR0000
                   ? hip.hipGetDevicePropertiesR0000(&properties, device->ordinal)
                   : hip.hipGetDeviceProperties(&properties, device->ordinal);
  if (result != XR_GPU_SUCCESS) return xr_gpu_fail(XR_UNAVAILABLE, device, call, result);
  char *arch = properties.fields.gcn_arch_name;
  arch[sizeof properties.fields.gcn_arch_name - 1] = '\0';
  if (strncmp(arch, "gfx", 3) != 0) {
    return xr_error(XR_UNAVAILABLE, "%s: %s returned no gcnArchName (\"%.32s\")",
                    device->base.spec, call, arch);
  }
  xr_hal_copy_string(device->target, sizeof device->target, arch);
  return XR_OK;
}

static xr_status_t hip_open(xr_gpu_device_t *device) {
  device->native = &device->ordinal;
  xr_status_t status = xr_gpu_make_current(device);
  if (status == XR_OK) status = read_arch_name(device);
  if (status != XR_OK) return status;
  xr_hal_device_properties_t *p = &device->properties;
  xr_hal_copy_string(p->vendor, sizeof p->vendor, "AMD");
  snprintf(p->driver_version, sizeof p->driver_version, "HIP driver %d (%.100s)",
           hip.gpu.driver_version, hip.gpu.library.path);
  char compiler[256];
  xr_gpu_compiler_describe(XR_GPU_COMPILER_HIPRTC, compiler, sizeof compiler);
  snprintf(p->runtime_version, sizeof p->runtime_version, "HIP %d.%d; %.32s; %.60s",
           hip.runtime_version / 10000000, hip.runtime_version / 100000 % 100, device->target,
           compiler);
  return XR_OK;
}

/* 64 lanes per CU, without the packed-fp32 doubling CDNA2+ reaches only with paired operands;
 * fp64 rates vary too much across parts to guess. */
static void hip_estimate(xr_gpu_device_t *device, int *out_fp32_lanes, double *out_fp64_rate) {
  (void)device;
  *out_fp32_lanes = 64;
  *out_fp64_rate = 0;
}

/* What the probe reports besides the runtime (roctx: whether runs get profiler ranges). */
static const xr_vendor_library_id_t hip_libraries[] = {
    XR_VENDOR_LIBRARY_HIPBLASLT, XR_VENDOR_LIBRARY_ROCBLAS, XR_VENDOR_LIBRARY_MIOPEN,
    XR_VENDOR_LIBRARY_ROCTX};

static const xr_gpu_vendor_t hip_vendor = {
    .library = &xr_vendor_libraries[XR_VENDOR_LIBRARY_HIP],
    .symbols = hip_symbol_list, .symbol_count = XR_GPU_COUNT(hip_symbol_list),
    .runtime = &hip.gpu,
    .error_name = hip_error_name, .describe_runtime = hip_describe_runtime,
    .compiler = XR_GPU_COMPILER_HIPRTC,
    .libraries = hip_libraries, .library_count = XR_GPU_COUNT(hip_libraries),
    .open = hip_open,
    .make_current = hip_make_current, .make_current_call = "hipSetDevice",
    .binary_format = XR_HAL_EXECUTABLE_HIP_CODE_OBJECT, .binary_formats = "code objects",
    .missing_kernel_result = XR_GPU_ERROR_INVALID_VALUE,
    /* hipDeviceAttribute_t numbers, the CUDA-compatible block (the same in ROCm 5.0 to 7.x). */
    .attributes = {.compute_units = 63, .clock_khz = 5, .memory_clock_khz = 60,
                   .memory_bus_bits = 59, .warp_size = 87, .max_threads_per_block = 56,
                   .l2_cache_bytes = 19},
    .estimate = hip_estimate,
    .management = &xr_gpu_amd_smi,
    .ranges = &xr_gpu_roctx,
};

/* const xr_hal_driver_t xr_hal_hip_driver, listed in hal/drivers.bzl. */
XR_GPU_DRIVER(hip, hip_vendor);
