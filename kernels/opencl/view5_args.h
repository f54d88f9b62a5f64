/* A tensor as five dims (n, c, d, h, w; kernels/family.h's xr_view5_t) inside the by-value
 * argument structs of the vision kernels (pool.cl, channel_norm.cl). The header is shared by
 * host C and OpenCL C: every field is a `long`, 64-bit in OpenCL C and on the LP64 hosts we
 * build for (the host files assert it), so both sides lay the structs out alike. */
#ifndef XR_KERNELS_OPENCL_VIEW5_ARGS_H
#define XR_KERNELS_OPENCL_VIEW5_ARGS_H

typedef struct xr_cl_view5 {
  long offset; /* elements from the buffer's start */
  long dtype;  /* xr_dtype_t code; -1: absent */
  long strides[5];
} xr_cl_view5_t;

#ifndef __OPENCL_VERSION__
#include "kernels/family.h"

_Static_assert(sizeof(long) == 8, "the OpenCL argument structs need a 64-bit long");

/* v's argument (absent: dtype -1) and its buffer (absent: `fallback`'s). */
static inline xr_hal_buffer_t *xr_cl_view5_set(xr_cl_view5_t *out, const xr_view5_t *v,
                                               const xr_tensor_t *tensors, int fallback) {
  out->offset = 0, out->dtype = -1;
  for (int d = 0; d < 5; d++) out->strides[d] = 0;
  if (v->index < 0) return tensors[fallback].buffer;
  out->offset = tensors[v->index].offset;
  out->dtype = v->dtype;
  for (int d = 0; d < 5; d++) out->strides[d] = v->strides[d];
  return tensors[v->index].buffer;
}
#endif

#endif
