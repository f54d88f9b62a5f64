/* One op of a one-op bundle timed through the kernel API exactly as the replay engine runs it
 * (xr_kernel_plan / select / prepare, then enqueue between HAL events), for the benchmarks that
 * put the replay path next to a vendor library called directly (gemm_bench, conv_bench) or next
 * to another of our kernels (vision_bench). */
#ifndef XR_TOOLS_OP_TIMING_H
#define XR_TOOLS_OP_TIMING_H

#include <stddef.h>

#include "hal/hal.h"
#include "kernels/kernels.h"

/* Seconds per execution of the bundle's op (`json`, our schema or TraceLens IR) on
 * `device_spec`: 2 warm-ups, a sizing batch, then the best of 3 batches of at least 0.2 s.
 * Inputs hold random values (bf16 truncated, fp16 small exact ones) in storage as their specs
 * lay it out. The kernel that ran goes to `kernel`. < 0 with the reason on stderr when it
 * cannot run. */
double op_time_seconds(const char *json, const char *device_spec, char *kernel, size_t kernel_size);

/* op_time_seconds with `impl` (when it supports the op there) in place of the one the engine
 * picks; NULL: the engine's pick. */
double op_time_impl_seconds(const char *json, const char *device_spec, const xr_kernel_impl_t *impl,
                            char *kernel, size_t kernel_size);

/* Seconds per execution of a prepared `instance` on `stream`: `warmups` executions, a sizing
 * batch, then the best of 3 batches of at least `batch_seconds`, timed with HAL events. < 0
 * when a call fails (xr_last_error() says why). */
double op_timing_best(xr_kernel_instance_t *instance, xr_hal_device_t *device,
                      xr_hal_stream_t *stream, int warmups, double batch_seconds);

/* op_timing_best for any enqueue: `enqueue(context, stream)` queues one execution (a vendor
 * library called directly, say). */
double op_timing_best_calls(xr_status_t (*enqueue)(void *context, xr_hal_stream_t *stream),
                            void *context, xr_hal_device_t *device, xr_hal_stream_t *stream,
                            int warmups, double batch_seconds);

/* Fills `count` elements of fp32, bf16 or fp16 with values in [-0.5, 0.5). */
void op_timing_fill(void *data, int dtype, size_t count, unsigned *seed);

/* CLOCK_MONOTONIC in seconds. */
double op_timing_now(void);

#endif
