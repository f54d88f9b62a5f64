/* NCCL on cuda, RCCL on hip (the same API), loaded at run time through our declarations
 * (hal/comm/nccl_symbols.h). Rank 0 makes the unique id and the caller's broadcast (MPI)
 * carries it to the others, or every rank makes the same one from NCCL_COMM_ID; every call
 * runs on the device's native stream, made current on the calling thread by
 * xr_hal_stream_native. */
#include "hal/comm/nccl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynload.h"
#include "base/vendor_libraries.h"
#include "hal/comm/nccl_symbols.h"
#include "hal/core/driver.h"

typedef struct nccl_api {
  XR_NCCL_SYMBOLS(XR_DYNLOAD_FIELD)
} nccl_api_t;

#define NCCL_SYMBOL(need, ret, field, params) XR_DYNLOAD_SYMBOL(nccl_api_t, need, field, field)
static const xr_dynload_symbol_t nccl_symbols[] = {XR_NCCL_SYMBOLS(NCCL_SYMBOL)};
#undef NCCL_SYMBOL

/* One library per vendor: [0] NCCL for cuda, [1] RCCL for hip. */
static const xr_dynload_spec_t *const libraries[2] = {
    &xr_vendor_libraries[XR_VENDOR_LIBRARY_NCCL],
    &xr_vendor_libraries[XR_VENDOR_LIBRARY_RCCL],
};

typedef struct vendor {
  pthread_once_t once;
  nccl_api_t api;
  xr_dynload_library_t library;
  xr_status_t status;
  char report[XR_HAL_REASON_CAPACITY];
} vendor_t;

static vendor_t vendors[2] = {{.once = PTHREAD_ONCE_INIT}, {.once = PTHREAD_ONCE_INIT}};

static void load(vendor_t *v, int k) {
  v->status =
      xr_dynload_open(libraries[k], nccl_symbols, sizeof nccl_symbols / sizeof *nccl_symbols,
                      &v->api, &v->library, v->report, sizeof v->report);
}
static void load_nccl(void) {
  load(&vendors[0], 0);
}
static void load_rccl(void) {
  load(&vendors[1], 1);
}

struct xr_nccl {
  const nccl_api_t *api;
  const char *label;
  xr_nccl_comm_t comm;
  int rank, size;
  char transport[600];
  /* xr_nccl_host_exchange's, made at its first call and grown as needed: it runs between every
   * timed batch, where a device allocation each time would cost milliseconds. */
  xr_hal_stream_t *host_stream;
  xr_hal_buffer_t *host_buffer;
  size_t host_capacity;
};

static xr_status_t nccl_fail(const xr_nccl_t *n, const char *call, int result) {
  const char *text = n->api->ncclGetErrorString ? n->api->ncclGetErrorString(result) : NULL;
  return xr_error(XR_DEVICE_ERROR, "%s on rank %d of %d: %s: %s (%d)", n->label, n->rank, n->size,
                  call, text ? text : "error", result);
}

/* The vendor of `driver`, loaded; NULL with the reason when its library does not load. */
static vendor_t *vendor_of(const char *driver, const char *spec, int *out_k) {
  int k = !strcmp(driver, "hip");
  pthread_once(&vendors[k].once, k ? load_rccl : load_nccl);
  *out_k = k;
  if (vendors[k].status == XR_OK) return &vendors[k];
  xr_error(XR_UNAVAILABLE, "%s: %s unavailable: %s", spec, libraries[k]->label, vendors[k].report);
  return NULL;
}

xr_status_t xr_nccl_create(xr_hal_device_t *device, const char *driver, int rank, int size,
                           xr_nccl_broadcast_fn broadcast, void *context, xr_nccl_t **out) {
  int k;
  vendor_t *v = vendor_of(driver, device->spec, &k);
  if (!v) return XR_UNAVAILABLE;
  xr_nccl_t *n = calloc(1, sizeof *n);
  if (!n) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory for a communicator");
  n->api = &v->api;
  n->label = libraries[k]->label;
  n->rank = rank;
  n->size = size;
  int version = 0;
  n->api->ncclGetVersion(&version);
  snprintf(n->transport, sizeof n->transport, "%s: %s (%d.%d.%d)", n->label, v->library.path,
           version / 10000, version / 100 % 100, version % 100);
  xr_nccl_unique_id_t id;
  memset(&id, 0, sizeof id);
  void *native;
  xr_status_t st = xr_hal_device_native(device, &native); /* makes the device current */
  int result = XR_NCCL_SUCCESS;
  if (st == XR_OK && (rank == 0 || !broadcast) &&
      (result = n->api->ncclGetUniqueId(&id)) != XR_NCCL_SUCCESS)
    st = nccl_fail(n, "ncclGetUniqueId", result);
  if (st == XR_OK && broadcast) st = broadcast(context, &id, sizeof id, 0);
  if (st == XR_OK) st = xr_hal_device_native(device, &native);
  if (st == XR_OK &&
      (result = n->api->ncclCommInitRank(&n->comm, size, id, rank)) != XR_NCCL_SUCCESS)
    st = nccl_fail(n, "ncclCommInitRank", result);
  if (st != XR_OK) {
    free(n);
    return st;
  }
  *out = n;
  return XR_OK;
}

void xr_nccl_destroy(xr_nccl_t *n, bool failed) {
  if (!n) return;
  xr_hal_stream_destroy(n->host_stream);
  xr_hal_buffer_free(n->host_buffer);
  if (n->comm) failed ? n->api->ncclCommAbort(n->comm) : n->api->ncclCommDestroy(n->comm);
  free(n);
}

const char *xr_nccl_transport(const xr_nccl_t *n) {
  return n->transport;
}

static int nccl_type(xr_dtype_t d) {
  switch (d) {
    case XR_DTYPE_I8: return XR_NCCL_INT8;
    case XR_DTYPE_U8: return XR_NCCL_UINT8;
    case XR_DTYPE_I32: return XR_NCCL_INT32;
    case XR_DTYPE_I64: return XR_NCCL_INT64;
    case XR_DTYPE_F16: return XR_NCCL_FLOAT16;
    case XR_DTYPE_F32: return XR_NCCL_FLOAT32;
    case XR_DTYPE_F64: return XR_NCCL_FLOAT64;
    case XR_DTYPE_BF16: return XR_NCCL_BFLOAT16;
    default: return -1;
  }
}

bool xr_nccl_supports(xr_hal_collective_kind_t kind, xr_dtype_t dtype) {
  bool reduces = kind == XR_HAL_ALLREDUCE || kind == XR_HAL_REDUCE_SCATTER;
  return !reduces || nccl_type(dtype) >= 0;
}

xr_status_t xr_nccl_collective(xr_nccl_t *n, xr_hal_stream_t *stream, xr_hal_collective_kind_t kind,
                               xr_dtype_t dtype, size_t count, const void *send, void *recv,
                               int root) {
  bool reduces = kind == XR_HAL_ALLREDUCE || kind == XR_HAL_REDUCE_SCATTER;
  int type = reduces ? nccl_type(dtype) : XR_NCCL_UINT8; /* moved as bytes */
  size_t units = reduces ? count : count * xr_dtype_size(dtype);
  if (type < 0)
    return xr_error(XR_UNIMPLEMENTED, "%s cannot sum %s", n->label, xr_dtype_short_name(dtype));
  void *native;
  xr_status_t st = xr_hal_stream_native(stream, &native);
  if (st != XR_OK) return st;
  const nccl_api_t *a = n->api;
  int result;
  const char *call;
  switch (kind) {
    case XR_HAL_ALLREDUCE:
      call = "ncclAllReduce";
      result = a->ncclAllReduce(send, recv, units, type, XR_NCCL_SUM, n->comm, native);
      break;
    case XR_HAL_ALLGATHER:
      call = "ncclAllGather";
      result = a->ncclAllGather(send, recv, units, type, n->comm, native);
      break;
    case XR_HAL_REDUCE_SCATTER:
      call = "ncclReduceScatter";
      result = a->ncclReduceScatter(send, recv, units, type, XR_NCCL_SUM, n->comm, native);
      break;
    case XR_HAL_BROADCAST:
      call = "ncclBroadcast";
      result = a->ncclBroadcast(send, recv, units, type, root, n->comm, native);
      break;
    case XR_HAL_ALLTOALL: /* one send and one receive per peer, grouped (NCCL's own recipe) */
      call = "ncclSend/ncclRecv";
      result = a->ncclGroupStart();
      for (int peer = 0; peer < n->size && result == XR_NCCL_SUCCESS; peer++) {
        result = a->ncclSend((const char *)send + (size_t)peer * units, units, type, peer, n->comm,
                             native);
        if (result == XR_NCCL_SUCCESS)
          result =
              a->ncclRecv((char *)recv + (size_t)peer * units, units, type, peer, n->comm, native);
      }
      int ended = a->ncclGroupEnd();
      if (result == XR_NCCL_SUCCESS) result = ended;
      break;
    default: /* a barrier: a one-element sum on the caller's scratch */
      call = "ncclAllReduce (barrier)";
      result = a->ncclAllReduce(send, recv, 1, XR_NCCL_FLOAT32, XR_NCCL_SUM, n->comm, native);
      break;
  }
  return result == XR_NCCL_SUCCESS ? XR_OK : nccl_fail(n, call, result);
}

xr_status_t xr_nccl_host_exchange(xr_nccl_t *n, xr_hal_device_t *device, bool gather,
                                  const void *send, size_t bytes, void *recv, int root) {
  size_t total = gather ? bytes * (size_t)n->size : bytes;
  size_t at = gather ? bytes * (size_t)n->rank : 0;
  void *base = NULL;
  size_t offset = 0;
  xr_status_t st = n->host_stream ? XR_OK : xr_hal_stream_create(device, &n->host_stream);
  if (st == XR_OK && total > n->host_capacity) {
    xr_hal_buffer_free(n->host_buffer);
    n->host_buffer = NULL;
    n->host_capacity = 0;
    st = xr_hal_buffer_alloc(device, total, &n->host_buffer);
    if (st == XR_OK) n->host_capacity = total;
  }
  xr_hal_stream_t *stream = n->host_stream;
  xr_hal_buffer_t *buffer = n->host_buffer;
  if (st == XR_OK && !total) return XR_OK;
  if (st == XR_OK && bytes && (gather || n->rank == root))
    st = xr_hal_buffer_write(buffer, at, send, bytes);
  if (st == XR_OK) st = xr_hal_buffer_native(buffer, &base, &offset);
  char *p = (char *)base + offset;
  if (st == XR_OK) /* in place: allgather's own part sits in its slot */
    st = xr_nccl_collective(n, stream, gather ? XR_HAL_ALLGATHER : XR_HAL_BROADCAST, XR_DTYPE_U8,
                            bytes, p + at, p, root);
  if (st == XR_OK) st = xr_hal_stream_synchronize(stream);
  if (st == XR_OK) st = xr_nccl_status(n);
  if (st == XR_OK) st = xr_hal_buffer_read(recv, buffer, 0, total);
  return st;
}

xr_status_t xr_nccl_status(xr_nccl_t *n) {
  int error = XR_NCCL_SUCCESS;
  int result = n->api->ncclCommGetAsyncError(n->comm, &error);
  if (result != XR_NCCL_SUCCESS) return nccl_fail(n, "ncclCommGetAsyncError", result);
  return error == XR_NCCL_SUCCESS || error == XR_NCCL_IN_PROGRESS
             ? XR_OK
             : nccl_fail(n, "a collective in flight", error);
}

void xr_nccl_transports(char *report, size_t capacity) {
  const char *drivers[2] = {"cuda", "hip"};
  for (int k = 0; k < 2; k++) {
    char found[XR_HAL_REASON_CAPACITY] = "";
    xr_dynload_probe(libraries[k], found, sizeof found);
    xr_dynload_report_append(report, capacity, "%s: %s", drivers[k], found);
  }
}
