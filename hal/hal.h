/* xreplay hardware abstraction layer (HAL): devices, memory, streams, events and kernel dispatch
 * over the cpu, opencl, cuda and hip drivers. This is the only header a HAL user includes.
 *
 * Conventions
 * - Every fallible call returns xr_status_t (base/status.h). On failure it leaves one sentence
 *   in the calling thread's xr_last_error(), naming the object and the vendor's own error name
 *   and code where one exists. Outputs come last and are named out_*; on failure they are left
 *   untouched unless documented otherwise. Nothing in the HAL exits or aborts the process.
 * - Handles are opaque and come in create/destroy pairs. Destroy functions accept NULL.
 * - A handle belongs to the device it was created on; mixing devices is INVALID_ARGUMENT.
 * - Thread-safety is stated per function. "Thread-safe" means any number of threads may call
 *   it at once, also on the same handle. "Externally synchronised" means the caller must not
 *   use that handle from another thread during the call (other handles are fine).
 * - Vendor runtimes are loaded with dlopen on first use; no vendor library is linked.
 *
 * Environment variables
 *   XR_HAL_DEVICE      replaces the device string "auto" (or NULL) in xr_hal_device_create.
 *   XR_HAL_CACHE_DIR   directory of the program-binary cache (default $XDG_CACHE_HOME/xreplay,
 *                      else ~/.cache/xreplay); "off" disables the cache.
 *   XR_OPENCL_LIBRARY  path of the OpenCL ICD loader tried before libOpenCL.so.1/libOpenCL.so.
 *   XR_CUDA_LIBRARY, XR_HIP_LIBRARY  the same for the CUDA driver API and the HIP runtime.
 *   XR_NVRTC_LIBRARY, XR_HIPRTC_LIBRARY  the run-time compilers of XR_HAL_EXECUTABLE_CUDA_SOURCE
 *                      (see docs/gpu.md).
 *   XR_NVML_LIBRARY, XR_AMD_SMI_LIBRARY  the management libraries xr_hal_device_clocks reads
 *                      (NVML on cuda, AMD SMI on hip), tried before their usual names; "off"
 *                      disables them.
 *   XR_MPI_LIBRARY     Open MPI's libmpi tried before libmpi.so.40 (communicators); "off"
 *                      disables it. XR_NCCL_LIBRARY, XR_RCCL_LIBRARY: the same for NCCL (cuda)
 *                      and RCCL (hip).
 *   XR_NVTX_LIBRARY, XR_ROCTX_LIBRARY  the profiler-range libraries (NVTX on cuda, roctx on
 *                      hip) tried before libnvToolsExt.so.1 / libroctx64.so.4; "off" disables
 *                      them. */
#ifndef XR_HAL_HAL_H
#define XR_HAL_HAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/dtype.h"
#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------------
 * Drivers
 * ------------------------------------------------------------------------------------------- */

typedef struct xr_hal_driver_info {
  const char *name;      /* "cpu", "opencl", "cuda", "hip" */
  /* XR_OK when the driver can open devices; otherwise UNAVAILABLE (runtime or device absent)
   * or UNIMPLEMENTED (this version has no such driver yet). */
  xr_status_t status;
  /* Why it is unavailable: every library path tried and the vendor's own error, e.g.
   * "libOpenCL.so.1: loaded; clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR (-1001)". For an
   * available driver, a short note on what was loaded ("" for cpu). Valid for the process. */
  const char *reason;
  int device_count;      /* devices this driver can open (0 when unavailable) */
} xr_hal_driver_info_t;

/* Number of drivers compiled into the HAL (available or not). Thread-safe. */
size_t xr_hal_driver_count(void);

/* Describes driver `index` (0 <= index < xr_hal_driver_count()), probing it on first use: the
 * probe loads the vendor runtime and counts devices once per process. Thread-safe.
 * OUT_OF_RANGE for a bad index. The driver's unavailability is reported in out_info->status,
 * not as this call's status. */
xr_status_t xr_hal_driver_info(size_t index, xr_hal_driver_info_t *out_info);

/* Looks a driver up by name. NOT_FOUND for an unknown name. Thread-safe. */
xr_status_t xr_hal_driver_info_by_name(const char *name, xr_hal_driver_info_t *out_info);

/* ---------------------------------------------------------------------------------------------
 * Devices
 * ------------------------------------------------------------------------------------------- */

typedef struct xr_hal_device xr_hal_device_t;

/* Opens a device by string:
 *   "cpu"                  the host CPU (always available)
 *   "opencl", "opencl:N"   OpenCL device N of the flat list over every platform (default 0)
 *   "cuda:N", "hip:N"      CUDA / HIP device N
 *   "auto" or NULL         best available: cuda, hip, an OpenCL GPU, then cpu. When the
 *                          environment variable XR_HAL_DEVICE is set (and not empty) it is used
 *                          instead; explicit strings are never overridden.
 * NOT_FOUND for an unknown driver or device index, UNAVAILABLE (with the driver's reason) for a
 * driver that cannot run here, INVALID_ARGUMENT for a malformed string. Thread-safe. */
xr_status_t xr_hal_device_create(const char *device_spec, xr_hal_device_t **out_device);

/* Releases the device. Every buffer, stream, event and executable of the device must have been
 * destroyed first (destroying a stream waits for its work); using any of them afterwards is
 * undefined. Externally synchronised. */
void xr_hal_device_destroy(xr_hal_device_t *device);

/* Where a performance figure comes from. */
typedef enum xr_hal_figure_source {
  XR_HAL_FIGURE_UNKNOWN = 0,  /* value is 0 */
  XR_HAL_FIGURE_DATASHEET,    /* vendor's published number for this exact part */
  XR_HAL_FIGURE_ESTIMATED,    /* computed from reported features: units x clock x ops/cycle */
  XR_HAL_FIGURE_CALIBRATED,   /* measured on this machine by xr_hal_device_calibrate() */
} xr_hal_figure_source_t;

typedef struct xr_hal_figure {
  double value;                   /* FLOP/s or bytes/s */
  xr_hal_figure_source_t source;
} xr_hal_figure_t;

/* Data types with a peak-throughput figure. */
typedef enum xr_hal_peak_dtype {
  XR_HAL_PEAK_FP64 = 0,
  XR_HAL_PEAK_FP32,
  XR_HAL_PEAK_FP16,
  XR_HAL_PEAK_BF16,
  XR_HAL_PEAK_FP8,
  XR_HAL_PEAK_DTYPE_COUNT,
} xr_hal_peak_dtype_t;

/* One level of a device's data caches (cpu: L1d, L2, L3; gpu: L2 and a memory-side cache). */
#define XR_HAL_MAX_CACHE_LEVELS 4
typedef struct xr_hal_cache_level {
  char name[8];         /* "L1d", "L2", "L3", "MALL" */
  uint64_t bytes;       /* one instance: a core's L1d, the shared L3 */
  uint64_t total_bytes; /* every instance together */
} xr_hal_cache_level_t;

/* What a device was measured to reach on this machine, as opposed to what it states: TraceLens'
 * "max achievable". Each figure is UNKNOWN until xr_hal_device_calibrate measures it or
 * xr_hal_device_set_measured sets it (a peaks file written by an earlier calibration). */
typedef struct xr_hal_measured {
  /* A device-to-device copy (bytes read plus bytes written) whose working set is at least 4x
   * every cache of the device (2 GiB when its caches are unknown): DRAM, not a cache. */
  xr_hal_figure_t memory_bandwidth;
  uint64_t memory_working_set_bytes;
  /* The same copy within half the last-level cache, where the device reports its size. */
  xr_hal_figure_t cache_bandwidth;
  uint64_t cache_working_set_bytes;
  /* The same copy within half of each cache level (its total_bytes; properties.cache_levels'
   * order), repeated so that each timed sample moves at least 64 MiB. A copy runs on the cores the device's copy uses (the cpu: one core below
   * 4 MiB), so an inner level's figure can be below what a kernel on every core reaches. The
   * level whose size is last_level_cache_bytes gets cache_bandwidth. */
  xr_hal_figure_t cache_level_bandwidth[XR_HAL_MAX_CACHE_LEVELS];
  uint64_t cache_level_working_set_bytes[XR_HAL_MAX_CACHE_LEVELS];
  xr_hal_figure_t peak_flops[XR_HAL_PEAK_DTYPE_COUNT];
} xr_hal_measured_t;

typedef struct xr_hal_device_properties {
  char spec[32];              /* the string that reopens this device: "opencl:1" */
  char driver[16];            /* "cpu", "opencl", ... */
  char name[256];
  char vendor[128];
  char driver_version[128];   /* the vendor driver (OpenCL: CL_DRIVER_VERSION) */
  char runtime_version[128];  /* the runtime / API (OpenCL: platform + device version) */
  /* The name kernels written for several drivers give this device: "gpu" for cuda and hip (one
   * CUDA C++ source, compiled by NVRTC or hiprtc), else the driver's own name. */
  char kernel_family[16];
  bool is_gpu;
  bool host_addressable;      /* buffers have host pointers: xr_hal_buffer_host_pointer works */
  bool graphs; /* streams capture into graphs: the driver and its runtime have the entries */
  uint64_t memory_bytes;      /* device memory (cpu: physical memory) */
  uint64_t max_allocation_bytes; /* the largest single buffer */
  uint32_t compute_units;     /* SMs / CUs / cores */
  uint32_t clock_mhz;         /* 0 when unknown */
  uint32_t simd_width;        /* warp / wavefront / SIMD lanes (fp32) */
  uint64_t max_work_group_size;
  uint64_t last_level_cache_bytes; /* 0 when unknown */
  /* A cache in front of device memory that the last level's size leaves out: AMD's Infinity
   * Cache (MALL), from the datasheet; 0 when none or unknown. */
  uint64_t memory_side_cache_bytes;
  /* Every cache level of the device together (cpu: each core's own caches plus the shared
   * ones; gpu: L2 plus the memory-side cache); 0 when unknown. The replay engine's cold-cache
   * flush is twice this. */
  uint64_t cache_total_bytes;
  /* The levels themselves, innermost first, where the device reports them (a memory-side
   * cache last). */
  xr_hal_cache_level_t cache_levels[XR_HAL_MAX_CACHE_LEVELS];
  uint32_t cache_level_count;
  /* What the device states: its datasheet, else an estimate from its features (or figures a
   * user gave for it, xr_hal_device_set_datasheet). */
  xr_hal_figure_t peak_flops[XR_HAL_PEAK_DTYPE_COUNT];
  xr_hal_figure_t memory_bandwidth; /* bytes/s */
  xr_hal_measured_t measured;       /* what it reached on this machine, when measured */
} xr_hal_device_properties_t;

/* Fills *out_properties. Cheap: never runs work on the device. Thread-safe. */
xr_status_t xr_hal_device_properties(xr_hal_device_t *device,
                                     xr_hal_device_properties_t *out_properties);

/* Measures what the device reaches into properties.measured, as CALIBRATED figures: DRAM and
 * last-level-cache copy bandwidth (xr_hal_measured_t says how), and fp32 FLOP/s where the driver
 * has a calibration kernel. Runs at most once per device (later calls, and calls after
 * xr_hal_device_set_measured, return at once); allocates twice the DRAM working set for a
 * moment and takes about a second. Thread-safe. */
xr_status_t xr_hal_device_calibrate(xr_hal_device_t *device);

/* Sets measured figures (what an earlier calibration saved, or a peak measured with a kernel
 * library above the HAL); figures whose source is UNKNOWN leave the current ones. Counts as
 * calibrated: xr_hal_device_calibrate then measures nothing. Thread-safe. */
xr_status_t xr_hal_device_set_measured(xr_hal_device_t *device, const xr_hal_measured_t *measured);

/* Replaces stated figures with a user's datasheet figures (source DATASHEET); figures whose
 * source is UNKNOWN leave the device's own. Thread-safe. */
xr_status_t xr_hal_device_set_datasheet(xr_hal_device_t *device, const xr_hal_figure_t *bandwidth,
                                        const xr_hal_figure_t peak_flops[XR_HAL_PEAK_DTYPE_COUNT]);

/* The ceilings a percentage of peak is taken against and an op's bound is decided with: the
 * higher of the stated and the measured figure (a ceiling below what was reached would be
 * none); for FLOP/s, the highest of `dtype`'s and every wider dtype's (what fp32 reaches, bf16
 * reaches too, computed in fp32), *out_from (may be NULL) naming the dtype whose figure it is.
 * UNKNOWN when there is none. */
xr_hal_figure_t xr_hal_bandwidth_ceiling(const xr_hal_device_properties_t *properties);
xr_hal_figure_t xr_hal_flops_ceiling(const xr_hal_device_properties_t *properties,
                                     xr_hal_peak_dtype_t dtype, xr_hal_peak_dtype_t *out_from);

/* Lower-case names for printing: "fp32", "datasheet". Never NULL. Thread-safe. */
const char *xr_hal_peak_dtype_name(xr_hal_peak_dtype_t dtype);
const char *xr_hal_figure_source_name(xr_hal_figure_source_t source);

/* ---------------------------------------------------------------------------------------------
 * Buffers
 * ------------------------------------------------------------------------------------------- */

typedef struct xr_hal_buffer xr_hal_buffer_t;

/* Allocates `size` bytes of device memory (contents undefined). 0 bytes is a valid, empty
 * buffer. A request larger than the device's memory (or its largest allocation) is
 * RESOURCE_EXHAUSTED with a sentence, never a crash. Thread-safe. */
xr_status_t xr_hal_buffer_alloc(xr_hal_device_t *device, size_t size,
                                xr_hal_buffer_t **out_buffer);

/* A view of [offset, offset + length) of `buffer` (itself possibly a view), usable wherever a
 * buffer is. The view keeps the memory alive: buffer and view may be freed in any order.
 * OUT_OF_RANGE when the range does not fit. Thread-safe. */
xr_status_t xr_hal_buffer_view(xr_hal_buffer_t *buffer, size_t offset, size_t length,
                               xr_hal_buffer_t **out_view);

/* Releases a buffer or view. Work already submitted that uses it stays valid: the memory is
 * returned once that work completes. Externally synchronised for this handle. */
void xr_hal_buffer_free(xr_hal_buffer_t *buffer);

/* Size in bytes of a buffer or view. Thread-safe. */
size_t xr_hal_buffer_size(const xr_hal_buffer_t *buffer);

/* The device of a buffer. Thread-safe. */
xr_hal_device_t *xr_hal_buffer_device(const xr_hal_buffer_t *buffer);

/* The host address of the buffer's first byte, for host-addressable devices only (the cpu
 * driver); meant for host functions running on a stream. UNIMPLEMENTED on other devices.
 * The pointer is NULL for an empty buffer. Thread-safe. */
xr_status_t xr_hal_buffer_host_pointer(xr_hal_buffer_t *buffer, void **out_pointer);

/* ---------------------------------------------------------------------------------------------
 * Streams: in-order queues of work. Work on different streams runs independently unless joined
 * by events.
 * ------------------------------------------------------------------------------------------- */

typedef struct xr_hal_stream xr_hal_stream_t;

/* Thread-safe. */
xr_status_t xr_hal_stream_create(xr_hal_device_t *device, xr_hal_stream_t **out_stream);

/* Waits for the stream's work to finish, then releases it (destroying with work in flight is
 * safe: it drains first). Externally synchronised for this handle. */
void xr_hal_stream_destroy(xr_hal_stream_t *stream);

/* Blocks until all work submitted to the stream so far has finished. Returns DEVICE_ERROR if
 * any of it failed (the first failure's sentence). Thread-safe. */
xr_status_t xr_hal_stream_synchronize(xr_hal_stream_t *stream);

/* Enqueue operations (all thread-safe; they return once the work is queued). Ranges must lie
 * inside the buffers (OUT_OF_RANGE); host memory passed to write/read must stay valid and
 * untouched until the stream has passed the operation. Copies between overlapping ranges of
 * the same memory are INVALID_ARGUMENT. */
xr_status_t xr_hal_stream_write(xr_hal_stream_t *stream, xr_hal_buffer_t *dst, size_t dst_offset,
                                const void *src, size_t size);
xr_status_t xr_hal_stream_read(xr_hal_stream_t *stream, void *dst, xr_hal_buffer_t *src,
                               size_t src_offset, size_t size);
xr_status_t xr_hal_stream_copy(xr_hal_stream_t *stream, xr_hal_buffer_t *dst, size_t dst_offset,
                               xr_hal_buffer_t *src, size_t src_offset, size_t size);
/* Repeats a 1-, 2- or 4-byte pattern (read from `pattern` in host byte order) over
 * [offset, offset + size); size and the offset from the allocation's first byte (a view's own
 * offset included) must be multiples of pattern_size. */
xr_status_t xr_hal_stream_fill(xr_hal_stream_t *stream, xr_hal_buffer_t *buffer, size_t offset,
                               size_t size, const void *pattern, size_t pattern_size);

/* Blocking forms of the above: they return when the data has arrived. They do not wait for work
 * on the caller's streams; synchronise those first. Thread-safe. */
xr_status_t xr_hal_buffer_write(xr_hal_buffer_t *dst, size_t dst_offset, const void *src,
                                size_t size);
xr_status_t xr_hal_buffer_read(void *dst, xr_hal_buffer_t *src, size_t src_offset, size_t size);
xr_status_t xr_hal_buffer_copy(xr_hal_buffer_t *dst, size_t dst_offset, xr_hal_buffer_t *src,
                               size_t src_offset, size_t size);
xr_status_t xr_hal_buffer_fill(xr_hal_buffer_t *buffer, size_t offset, size_t size,
                               const void *pattern, size_t pattern_size);

/* Native handles, for code that hands HAL objects to a vendor library (CLBlast on opencl,
 * cuBLASLt on cuda, hipBLASLt on hip): a buffer's allocation with the byte offset of the view
 * in it (opencl: the root buffer's cl_mem; cuda: the CUdeviceptr; hip: the device pointer;
 * NULL for an empty buffer), a stream's queue (cl_command_queue, CUstream, hipStream_t) and
 * the device (cl_device_id; cuda: its primary CUcontext; hip: a pointer to its int ordinal).
 * On cuda and hip, xr_hal_stream_native and xr_hal_device_native also make the device current
 * on the calling thread (cuCtxSetCurrent / hipSetDevice), so a vendor library called next on
 * that thread works on this device; DEVICE_ERROR when that fails. Work queued on the native
 * queue runs in stream order, between the stream's other work and events. The handles stay
 * owned by the HAL. UNIMPLEMENTED on drivers without native handles (cpu). Thread-safe. */
xr_status_t xr_hal_buffer_native(xr_hal_buffer_t *buffer, void **out_handle, size_t *out_offset);
xr_status_t xr_hal_stream_native(xr_hal_stream_t *stream, void **out_handle);
xr_status_t xr_hal_device_native(xr_hal_device_t *device, void **out_handle);

/* ---------------------------------------------------------------------------------------------
 * Events: points on a stream, for ordering across streams and for timing.
 * ------------------------------------------------------------------------------------------- */

typedef struct xr_hal_event xr_hal_event_t;

/* A new event starts out completed (waiting on it returns at once). Thread-safe. */
xr_status_t xr_hal_event_create(xr_hal_device_t *device, xr_hal_event_t **out_event);

/* Releases the event; safe while a recording is still pending. Externally synchronised. */
void xr_hal_event_destroy(xr_hal_event_t *event);

/* Marks the point after all work submitted to `stream` so far; re-recording moves the mark.
 * Externally synchronised for the event (thread-safe for the stream). */
xr_status_t xr_hal_event_record(xr_hal_event_t *event, xr_hal_stream_t *stream);

/* Blocks the calling thread until the stream has reached the event. Thread-safe. */
xr_status_t xr_hal_event_synchronize(xr_hal_event_t *event);

/* Makes work submitted to `stream` after this call wait until the event's point is reached
 * (the event's stream may differ from `stream`). The host does not block. Thread-safe. */
xr_status_t xr_hal_stream_wait_event(xr_hal_stream_t *stream, xr_hal_event_t *event);

/* Milliseconds between two recorded events (end - start), waiting for both to complete. The
 * resolution is the backend's best: CLOCK_MONOTONIC on cpu, profiling nanoseconds on OpenCL.
 * INVALID_ARGUMENT if either was never recorded. Thread-safe. */
xr_status_t xr_hal_event_elapsed_ms(xr_hal_event_t *start, xr_hal_event_t *end, double *out_ms);

/* ---------------------------------------------------------------------------------------------
 * Graphs: a stream's work captured once and launched again as one unit (CUDA/HIP graphs), so
 * that timing many back-to-back launches leaves the host's launch overhead out.
 * ------------------------------------------------------------------------------------------- */

typedef struct xr_hal_graph xr_hal_graph_t;

/* Starts capturing `stream`: work submitted to it afterwards (dispatches, fills, copies, vendor
 * library calls on its native queue) is recorded, not run, until xr_hal_stream_end_capture.
 * Events must not be recorded on or waited for on a capturing stream, and nothing may
 * synchronise it: those calls are INVALID_ARGUMENT with a sentence, and the capture goes on.
 * The capturing thread must not allocate, free or use the blocking buffer_* calls until the
 * capture ends (the vendor refuses them and the capture fails at its end); other threads may
 * (CUDA/HIP's thread-local capture mode). Warm up first: work that allocates or compiles on
 * first use (a vendor library's workspace, a kernel's module) must have run once before.
 * UNIMPLEMENTED on drivers without graphs (cpu, opencl), with a sentence; UNAVAILABLE on a
 * runtime too old to export the graph entry points (the sentence names the missing one).
 * Externally synchronised for the stream. */
xr_status_t xr_hal_stream_begin_capture(xr_hal_stream_t *stream);

/* Ends the capture and instantiates what was recorded as a graph of the stream's device.
 * On failure (the driver refused some captured work) the capture is over and nothing is
 * returned. Externally synchronised for the stream. */
xr_status_t xr_hal_stream_end_capture(xr_hal_stream_t *stream, xr_hal_graph_t **out_graph);

/* Runs the graph's work once on `stream` (any stream of the graph's device), in stream order.
 * The first launch also uploads the graph to the device: time launches after a warm-up one.
 * Thread-safe. */
xr_status_t xr_hal_graph_launch(xr_hal_graph_t *graph, xr_hal_stream_t *stream);

/* Releases the graph; safe while launches are in flight (hip drains the device first). Accepts
 * NULL. Externally synchronised. */
void xr_hal_graph_destroy(xr_hal_graph_t *graph);

/* ---------------------------------------------------------------------------------------------
 * Clocks: what the device runs at now, read through the vendor's management library (NVML on
 * cuda, AMD SMI on hip, loaded with dlopen and optional) or cpufreq on cpu.
 * ------------------------------------------------------------------------------------------- */

typedef struct xr_hal_clocks {
  uint32_t current_mhz;      /* the SM / graphics / core clock now */
  uint32_t default_mhz;      /* what it runs at unless throttled or locked (NVIDIA: the default
                                application clock; AMD: the top DPM level; cpu: the base
                                frequency); 0 when unknown */
  uint32_t max_mhz;          /* the highest it can reach; 0 when unknown */
  bool locked;               /* clocks are pinned (locked GPU clocks, application clocks or a
                                fixed performance level) */
  uint64_t throttle_reasons; /* the vendor's bit mask of why it runs slower now; 0: none */
  char throttle[128];        /* those reasons in words ("power cap, thermal"); "" for none */
  char source[64];           /* what answered: "NVML 550.54.15", "AMD SMI, perf level auto",
                                "cpufreq intel_pstate, governor powersave" */
  bool throttle_known;       /* whether the source reports throttling at all (NVML does; AMD SMI
                                and cpufreq are read without it): when false, throttle_reasons 0
                                means "not known", not "none" */
} xr_hal_clocks_t;

/* Reads the device's clocks. Cheap enough to call around every batch of a timing loop (tens
 * of microseconds: the library and the device's handle are found once per device, later calls
 * only read). UNAVAILABLE with the reason (every library tried, or the vendor's error) when
 * they cannot be read on this machine, the same sentence on every call; UNIMPLEMENTED on
 * drivers that have no clocks to read (opencl). docs/hal.md says what each field means on each
 * driver. Thread-safe. */
xr_status_t xr_hal_device_clocks(xr_hal_device_t *device, xr_hal_clocks_t *out_clocks);

/* ---------------------------------------------------------------------------------------------
 * Profiler ranges: named spans of the calling thread that a vendor profiler draws beside the
 * device's work (Nsight Systems through NVTX on cuda, rocprof through roctx on hip). The
 * library (libnvToolsExt.so.1, libroctx64.so.4) is loaded with dlopen on first use, once per
 * process, and is optional: where it is absent nothing is pushed, and the calls say why.
 * ------------------------------------------------------------------------------------------- */

/* Whether ranges pushed on `device` reach a profiler's library: OK with what serves them in
 * `source` ("NVTX: /usr/local/cuda/lib64/libnvToolsExt.so.1"); UNAVAILABLE when the library
 * does not load (the sentence names every path tried); UNIMPLEMENTED on drivers without ranges
 * (cpu, opencl). On failure `source` holds the sentence too. `source` may be NULL. The first
 * call loads the library; later calls only read. Thread-safe. */
xr_status_t xr_hal_device_ranges(xr_hal_device_t *device, char *source, size_t capacity);

/* Opens a range named `name` on the calling thread, or closes the innermost one it opened: the
 * statuses of xr_hal_device_ranges, and nothing is pushed or popped unless OK. A push and its
 * pop belong to one thread. Cheap once loaded (the vendor's call). Thread-safe. */
xr_status_t xr_hal_device_range_push(xr_hal_device_t *device, const char *name);
xr_status_t xr_hal_device_range_pop(xr_hal_device_t *device);

/* ---------------------------------------------------------------------------------------------
 * Kernel dispatch. Two paths:
 *  (a) host work, for host-addressable devices (cpu): a function, or a parallel-for over N work
 *      items split across the device's thread pool, run in stream order;
 *  (b) device code: an executable built from OpenCL C source (opencl), loaded from a binary
 *      (cuda fatbin/cubin/PTX, hip code object) or compiled from CUDA C++ source at run time
 *      (cuda, hip), a kernel looked up by name, and a dispatch of grid x block work-groups with
 *      typed arguments.
 * ------------------------------------------------------------------------------------------- */

typedef void (*xr_hal_host_fn_t)(void *context);
/* Processes work items [begin, end). Called concurrently from several threads. */
typedef void (*xr_hal_parallel_fn_t)(void *context, size_t begin, size_t end);

/* Runs fn(context) on the stream's worker once earlier work is done. UNIMPLEMENTED on devices
 * without host streams (opencl, cuda, hip). Thread-safe. */
xr_status_t xr_hal_stream_enqueue_host(xr_hal_stream_t *stream, xr_hal_host_fn_t fn,
                                       void *context);

/* Splits [0, count) into chunks of at least `grain` items (0: the driver picks) run in parallel
 * on the device's thread pool; the next operation on the stream starts when all chunks are
 * done. UNIMPLEMENTED where enqueue_host is. Thread-safe. */
xr_status_t xr_hal_stream_enqueue_parallel(xr_hal_stream_t *stream, size_t count, size_t grain,
                                           xr_hal_parallel_fn_t fn, void *context);

typedef struct xr_hal_executable xr_hal_executable_t;
typedef struct xr_hal_kernel xr_hal_kernel_t;

typedef enum xr_hal_executable_format {
  XR_HAL_EXECUTABLE_OPENCL_C = 1,    /* OpenCL C source text (opencl) */
  XR_HAL_EXECUTABLE_CUDA_FATBIN,     /* fatbin, cubin or PTX text (cuda) */
  XR_HAL_EXECUTABLE_HIP_CODE_OBJECT, /* code object (hip) */
  /* CUDA C++ source compiled at run time for the device's own architecture: NVRTC on cuda,
   * hiprtc on hip (one source for both, via kernels/gpu/hip_compat.h). Kernels should be
   * extern "C"; options are NVRTC/hiprtc options ("-DTILE=64"). Cached on disk like OpenCL
   * programs. UNAVAILABLE when no compiler can be loaded or it cannot target the device. */
  XR_HAL_EXECUTABLE_CUDA_SOURCE,
} xr_hal_executable_format_t;

typedef struct xr_hal_executable_params {
  xr_hal_executable_format_t format;
  const void *data;     /* source text or binary blob */
  size_t size;          /* bytes of data (source need not be NUL-terminated) */
  const char *options;  /* build options ("-cl-fast-relaxed-math"), NULL for none */
  const char *label;    /* a name for error messages ("gemm.cl"), NULL for none */
} xr_hal_executable_params_t;

/* Builds or loads an executable. A build failure is INVALID_ARGUMENT and its sentence includes
 * the compiler's log. OpenCL programs are cached on disk (see docs/hal.md); cache failures are
 * never fatal. UNIMPLEMENTED for a format the device cannot run. Thread-safe. */
xr_status_t xr_hal_executable_create(xr_hal_device_t *device,
                                     const xr_hal_executable_params_t *params,
                                     xr_hal_executable_t **out_executable);

/* Compiles XR_HAL_EXECUTABLE_CUDA_SOURCE for a named target without a device, exactly as the
 * cuda and hip drivers do inside xr_hal_executable_create: "sm_80", "sm_90" (NVRTC, a cubin)
 * or "gfx90a" (hiprtc, a code object). For ahead-of-time checks on machines without a GPU.
 * UNAVAILABLE when the compiler cannot be loaded (every path tried) or does not know the
 * target; INVALID_ARGUMENT with the compiler's log on a compile error. *out_binary is
 * malloc'd: release it with free(). Thread-safe. */
xr_status_t xr_hal_compile(const char *target, const xr_hal_executable_params_t *params,
                           void **out_binary, size_t *out_size);

/* Releases the executable and its kernels; safe with dispatches in flight. Externally
 * synchronised. */
void xr_hal_executable_destroy(xr_hal_executable_t *executable);

/* Finds a kernel by name; the handle belongs to the executable (no destroy) and stays valid
 * until it is destroyed. NOT_FOUND for an unknown name. Thread-safe. */
xr_status_t xr_hal_kernel_lookup(xr_hal_executable_t *executable, const char *name,
                                 xr_hal_kernel_t **out_kernel);

typedef enum xr_hal_arg_kind {
  XR_HAL_ARG_BUFFER = 1, /* a buffer or view (OpenCL: a view's offset must be a multiple of the
                            device's base-address alignment, 128 bytes or so) */
  XR_HAL_ARG_BYTES,      /* `size` bytes at `bytes`, passed by value (copied at dispatch) */
  XR_HAL_ARG_LOCAL,      /* `size` bytes of work-group local memory (OpenCL __local pointer) */
} xr_hal_arg_kind_t;

typedef struct xr_hal_kernel_arg {
  xr_hal_arg_kind_t kind;
  xr_hal_buffer_t *buffer;  /* BUFFER */
  const void *bytes;        /* BYTES */
  size_t size;              /* BYTES, LOCAL */
} xr_hal_kernel_arg_t;

/* Convenience constructors for argument lists. */
static inline xr_hal_kernel_arg_t xr_hal_arg_buffer(xr_hal_buffer_t *buffer) {
  xr_hal_kernel_arg_t arg = {.kind = XR_HAL_ARG_BUFFER, .buffer = buffer};
  return arg;
}
static inline xr_hal_kernel_arg_t xr_hal_arg_bytes(const void *bytes, size_t size) {
  xr_hal_kernel_arg_t arg = {.kind = XR_HAL_ARG_BYTES, .bytes = bytes, .size = size};
  return arg;
}
static inline xr_hal_kernel_arg_t xr_hal_arg_local(size_t size) {
  xr_hal_kernel_arg_t arg = {.kind = XR_HAL_ARG_LOCAL, .size = size};
  return arg;
}

typedef struct xr_hal_dispatch {
  uint32_t grid[3];   /* work-groups (blocks) per dimension, each >= 1 */
  uint32_t block[3];  /* work-items (threads) per work-group, each >= 1 */
  uint32_t shared_memory_bytes; /* dynamic shared memory (cuda/hip); must be 0 on OpenCL,
                                   which uses XR_HAL_ARG_LOCAL arguments instead */
  const xr_hal_kernel_arg_t *args;
  size_t arg_count;
} xr_hal_dispatch_t;

/* Launches grid x block work-items of `kernel` on `stream` (OpenCL: global size = grid * block,
 * local size = block). Arguments are captured at the call: byte arguments may be reused at
 * once, and buffers may be freed right after the call (the memory lives until the dispatch ends).
 * Thread-safe (dispatches of the same kernel from several threads are serialised). */
xr_status_t xr_hal_stream_dispatch(xr_hal_stream_t *stream, xr_hal_kernel_t *kernel,
                                   const xr_hal_dispatch_t *dispatch);

/* ---------------------------------------------------------------------------------------------
 * Communicators: the processes a launcher started together (mpirun, srun), and collectives
 * across them on device buffers. The transport is loaded at run time like any vendor library:
 * MPI (Open MPI's libmpi.so.40) for cpu buffers, and for opencl buffers through host copies
 * (those collectives block the calling thread, in stream order); NCCL (libnccl.so.2) for cuda
 * and RCCL (librccl.so.1) for hip, on the device's streams, with MPI carrying their unique id
 * (so the ranks still come from mpirun or srun). Every rank must queue the same collectives in
 * the same order.
 * ------------------------------------------------------------------------------------------- */

/* How this process was launched, from the environment: Open MPI's mpirun (OMPI_COMM_WORLD_RANK,
 * _SIZE, _LOCAL_RANK), Slurm's srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID in a job step),
 * a PMIx launcher (PMIX_RANK) or torchrun (RANK, WORLD_SIZE, LOCAL_RANK). */
typedef struct xr_hal_launch {
  bool launched; /* under one of them */
  bool mpi;      /* one that MPI_Init can join (mpirun, srun, PMIx); torchrun is not */
  int rank, size, local_rank;
  char launcher[16]; /* "mpirun", "srun", "pmix", "torchrun", "" */
} xr_hal_launch_t;

/* Reads the environment. Thread-safe. */
void xr_hal_launch_detect(xr_hal_launch_t *out_launch);

typedef struct xr_hal_comm xr_hal_comm_t;

/* Joins the processes started with this one for collectives on `device`'s buffers (the device
 * chooses the transport; NCCL / RCCL run on it, so it must outlive the communicator). A
 * collective that waits longer than `timeout_ms` for the other ranks (0: 300 s) fails the
 * communicator, naming the collective and the wait.
 * UNAVAILABLE when the process was not started by a launcher MPI can join (on cuda and hip,
 * torchrun's ranks are joined by NCCL / RCCL alone, through NCCL_COMM_ID: docs/collectives.md),
 * or the transport does not load (every path tried); UNIMPLEMENTED for devices without a
 * transport yet. One communicator per process, made once: MPI cannot start again after it
 * ended. Not thread-safe. */
xr_status_t xr_hal_comm_create(xr_hal_device_t *device, double timeout_ms,
                               xr_hal_comm_t **out_comm);
/* Ends the transport (MPI_Finalize) once every queued collective is done. */
void xr_hal_comm_destroy(xr_hal_comm_t *comm);
/* Whether collectives on `device`'s buffers can run on this communicator (MPI: cpu and opencl;
 * NCCL / RCCL: the driver it was made for). Thread-safe. */
bool xr_hal_comm_serves(const xr_hal_comm_t *comm, xr_hal_device_t *device);
int xr_hal_comm_rank(const xr_hal_comm_t *comm);
int xr_hal_comm_size(const xr_hal_comm_t *comm);
/* "MPI: libmpi.so.40 (Open MPI v4.1.4, ...)". */
const char *xr_hal_comm_transport(const xr_hal_comm_t *comm);

/* The communicator of this rank's process group when the world's ranks are split into groups
 * of `size` ranks `stride` apart, as torch records a process group ("Group size", "Global rank
 * stride"): world rank r is rank (r / stride) % size of the group that holds r + (k - that) x
 * stride for k < size. Tensor-parallel groups are stride 1; the data-parallel groups across
 * them, stride = their size. INVALID_ARGUMENT unless size x stride divides the world's size.
 * Made the first time it is asked for, collectively: every rank of the world must ask for the
 * same groups in the same order (a rank asking for another group, or missing within the
 * timeout, fails it on every rank). Then the same one; size = the world's, stride 1, is the
 * world. Owned by the world (xr_hal_comm_destroy of a group does nothing). Not thread-safe. */
xr_status_t xr_hal_comm_group(xr_hal_comm_t *world, int size, int stride,
                              xr_hal_comm_t **out_group);
/* The group made before (or the world), NULL if none: communicates nothing. */
xr_hal_comm_t *xr_hal_comm_find_group(xr_hal_comm_t *world, int size, int stride);

typedef enum xr_hal_collective_kind {
  XR_HAL_ALLREDUCE = 0, /* sum */
  XR_HAL_ALLGATHER,
  XR_HAL_REDUCE_SCATTER, /* sum */
  XR_HAL_BROADCAST,
  XR_HAL_ALLTOALL,
  XR_HAL_BARRIER,
} xr_hal_collective_kind_t;

/* One collective. `count`: elements of `dtype` per rank, as the vendors count them —
 * allreduce and broadcast: the whole message; allgather: what each rank sends (recv holds
 * size x count); reduce_scatter: what each rank receives (send holds size x count); alltoall:
 * what each rank sends to each other (both hold size x count). Offsets in bytes. send == recv
 * (same buffer and offset) is in place. */
typedef struct xr_hal_collective_params {
  xr_hal_collective_kind_t kind;
  xr_dtype_t dtype;
  size_t count;
  xr_hal_buffer_t *send;
  size_t send_offset;
  xr_hal_buffer_t *recv;
  size_t recv_offset;
  int root; /* broadcast */
} xr_hal_collective_params_t;

/* What the send and receive buffers of `kind` hold, in elements, for `count` on `ranks` ranks
 * (the counting above). Thread-safe. */
void xr_hal_collective_elements(xr_hal_collective_kind_t kind, size_t count, int ranks,
                                size_t *out_send, size_t *out_recv);

typedef struct xr_hal_collective xr_hal_collective_t;

/* Checks and binds a collective once (sums of bf16, fp16 and 8-bit floats get a reduction of
 * our own in float); the buffers must outlive it. INVALID_ARGUMENT for buffers too small or a
 * bad root, UNIMPLEMENTED for a dtype the transport cannot sum. Not thread-safe. */
xr_status_t xr_hal_collective_create(xr_hal_comm_t *comm, const xr_hal_collective_params_t *params,
                                     xr_hal_collective_t **out_collective);
void xr_hal_collective_destroy(xr_hal_collective_t *collective);

/* Queues the collective on `stream`. A failure while it runs (a rank that does not answer
 * within the timeout, a transport error) shows at xr_hal_comm_status; a failed communicator
 * skips every later collective. Externally synchronised per stream. */
xr_status_t xr_hal_stream_collective(xr_hal_stream_t *stream, xr_hal_collective_t *collective);

/* OK, or the first failure of a queued collective (its sentence in xr_last_error()). Call once
 * the stream is synchronised. */
xr_status_t xr_hal_comm_status(xr_hal_comm_t *comm);

/* Blocking, on the calling thread, for the caller's own agreement between ranks (no stream
 * work may be in flight): every rank's `bytes` at `send` into `recv` (size x bytes, by rank). */
xr_status_t xr_hal_comm_host_allgather(xr_hal_comm_t *comm, const void *send, size_t bytes,
                                       void *recv);
/* `bytes` at `data` from rank `root` to every rank. */
xr_status_t xr_hal_comm_host_broadcast(xr_hal_comm_t *comm, void *data, size_t bytes, int root);

/* Ends every rank of the job (MPI_Abort) with `exit_code`: for tools, once a communicator has
 * failed, since the ranks still waiting would wait forever. Does not return. */
void xr_hal_comm_abort(xr_hal_comm_t *comm, int exit_code) __attribute__((noreturn));

/* Which transports load, for listings: "MPI: libmpi.so.40 (Open MPI v4.1.4)" or "MPI: absent
 * (...every path tried)"; "; "-separated. Loads nothing for good. Thread-safe. */
void xr_hal_comm_transports(char *report, size_t capacity);

#ifdef __cplusplus
}
#endif
#endif /* XR_HAL_HAL_H */
