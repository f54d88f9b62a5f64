/* Our declarations of NCCL's API (libnccl.so.2), which RCCL (librccl.so.1) shares, loaded with
 * dlopen by hal/comm/nccl.c. tests/hal:comm_abi_test checks every entry and constant against
 * nccl.h where it is installed (the CUDA toolkit's, /usr/local/cuda/include). */
#ifndef XR_HAL_COMM_NCCL_SYMBOLS_H
#define XR_HAL_COMM_NCCL_SYMBOLS_H

#include <stddef.h>

typedef void *xr_nccl_comm_t;   /* ncclComm_t */
typedef void *xr_nccl_stream_t; /* cudaStream_t / hipStream_t */

typedef struct xr_nccl_unique_id { /* ncclUniqueId */
  char internal[128];
} xr_nccl_unique_id_t;

enum {
  XR_NCCL_SUCCESS = 0,
  XR_NCCL_IN_PROGRESS = 7,
  XR_NCCL_SUM = 0, /* ncclRedOp_t */
  /* ncclDataType_t */
  XR_NCCL_INT8 = 0,
  XR_NCCL_UINT8 = 1,
  XR_NCCL_INT32 = 2,
  XR_NCCL_INT64 = 4,
  XR_NCCL_FLOAT16 = 6,
  XR_NCCL_FLOAT32 = 7,
  XR_NCCL_FLOAT64 = 8,
  XR_NCCL_BFLOAT16 = 9,
};

/* X(need, return type, symbol, (parameters)); every entry returns ncclResult_t (int) but
 * ncclGetErrorString. */
#define XR_NCCL_SYMBOLS(X)                                                                       \
  X(REQUIRED, int, ncclGetVersion, (int *))                                                      \
  X(REQUIRED, int, ncclGetUniqueId, (xr_nccl_unique_id_t *))                                     \
  X(REQUIRED, int, ncclCommInitRank, (xr_nccl_comm_t *, int, xr_nccl_unique_id_t, int))          \
  X(REQUIRED, int, ncclCommDestroy, (xr_nccl_comm_t))                                            \
  X(REQUIRED, int, ncclCommAbort, (xr_nccl_comm_t))                                              \
  X(REQUIRED, int, ncclCommGetAsyncError, (xr_nccl_comm_t, int *))                               \
  X(REQUIRED, const char *, ncclGetErrorString, (int))                                           \
  X(REQUIRED, int, ncclAllReduce,                                                                \
    (const void *, void *, size_t, int, int, xr_nccl_comm_t, xr_nccl_stream_t))                  \
  X(REQUIRED, int, ncclAllGather,                                                                \
    (const void *, void *, size_t, int, xr_nccl_comm_t, xr_nccl_stream_t))                       \
  X(REQUIRED, int, ncclReduceScatter,                                                            \
    (const void *, void *, size_t, int, int, xr_nccl_comm_t, xr_nccl_stream_t))                  \
  X(REQUIRED, int, ncclBroadcast,                                                                \
    (const void *, void *, size_t, int, int, xr_nccl_comm_t, xr_nccl_stream_t))                  \
  X(REQUIRED, int, ncclSend, (const void *, size_t, int, int, xr_nccl_comm_t, xr_nccl_stream_t)) \
  X(REQUIRED, int, ncclRecv, (void *, size_t, int, int, xr_nccl_comm_t, xr_nccl_stream_t))       \
  X(REQUIRED, int, ncclGroupStart, (void))                                                       \
  X(REQUIRED, int, ncclGroupEnd, (void))

#endif
