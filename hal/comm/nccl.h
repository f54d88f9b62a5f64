/* NCCL / RCCL communicators for hal/comm/comm.c (internal): collectives on cuda and hip
 * buffers, queued on the device's own streams. */
#ifndef XR_HAL_COMM_NCCL_H
#define XR_HAL_COMM_NCCL_H

#include "hal/hal.h"

typedef struct xr_nccl xr_nccl_t;

/* How the ranks share NCCL's unique id: rank `root`'s `bytes` at `data` to every rank. */
typedef xr_status_t (*xr_nccl_broadcast_fn)(void *context, void *data, size_t bytes, int root);

/* Loads NCCL (cuda) or RCCL (hip) and joins rank `rank` of `size` on `device`: rank 0 makes
 * the unique id and `broadcast` carries it, or, with `broadcast` NULL, every rank makes it
 * alike from NCCL_COMM_ID (NCCL's own rendezvous: rank 0's ncclCommInitRank listens there). */
xr_status_t xr_nccl_create(xr_hal_device_t *device, const char *driver, int rank, int size,
                           xr_nccl_broadcast_fn broadcast, void *context, xr_nccl_t **out_nccl);
/* ncclCommDestroy, or ncclCommAbort after a failure. */
void xr_nccl_destroy(xr_nccl_t *nccl, bool failed);
/* "NCCL: libnccl.so.2 (2.28.9)". */
const char *xr_nccl_transport(const xr_nccl_t *nccl);

/* Queues one collective on `stream` (device pointers). UNIMPLEMENTED for dtypes NCCL cannot
 * sum. */
xr_status_t xr_nccl_collective(xr_nccl_t *nccl, xr_hal_stream_t *stream,
                               xr_hal_collective_kind_t kind, xr_dtype_t dtype, size_t count,
                               const void *send, void *recv, int root);
/* Whether NCCL can carry `kind` in `dtype` (sums: not of bool or 8-bit floats). */
bool xr_nccl_supports(xr_hal_collective_kind_t kind, xr_dtype_t dtype);
/* Host bytes through the communicator itself, where no MPI runs beside it (torchrun): every
 * rank's `bytes` at `send` into `recv` by rank (gather), or rank `root`'s `bytes` at `send`
 * into `recv` on every rank (broadcast). Blocking, on a stream of `device`'s own. */
xr_status_t xr_nccl_host_exchange(xr_nccl_t *nccl, xr_hal_device_t *device, bool gather,
                                  const void *send, size_t bytes, void *recv, int root);
/* The communicator's asynchronous error (ncclCommGetAsyncError), with a sentence. */
xr_status_t xr_nccl_status(xr_nccl_t *nccl);

/* "NCCL (cuda): libnccl.so.2; RCCL (hip): absent (...)" appended to `report`. */
void xr_nccl_transports(char *report, size_t capacity);

#endif
