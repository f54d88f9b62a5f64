/* A small fixed pool of worker threads for parallel-for jobs (cpu driver). Several threads may
 * submit jobs at once (one per stream worker); each submitter also works on its own job, so a
 * pool with zero workers still makes progress. */
#ifndef XR_HAL_DRIVERS_CPU_THREAD_POOL_H
#define XR_HAL_DRIVERS_CPU_THREAD_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

typedef struct xr_thread_pool xr_thread_pool_t;
typedef void (*xr_thread_pool_fn_t)(void *context, size_t begin, size_t end);

/* Starts `worker_count` threads (0 is allowed). */
xr_status_t xr_thread_pool_create(size_t worker_count, xr_thread_pool_t **out_pool);

/* Joins the workers; no job may be running. */
void xr_thread_pool_destroy(xr_thread_pool_t *pool);

/* Number of threads that can run a job at once: workers + the caller. */
size_t xr_thread_pool_width(const xr_thread_pool_t *pool);

/* Runs fn over [0, count) in chunks of `chunk` items (>= 1) and returns when all are done.
 * `followed`: the caller has another job queued behind this one, so the workers watch for it
 * a little while instead of going to sleep. Thread-safe. */
void xr_thread_pool_parallel_for(xr_thread_pool_t *pool, size_t count, size_t chunk,
                                 xr_thread_pool_fn_t fn, void *context, bool followed);

#endif
