/* What the vendor-DNN convolutions (cuda.cudnn_conv, hip.miopen_conv) share: the operands as
 * the libraries' Nd tensor descriptors want them, device addresses and workspaces, and one
 * library handle per device. */
#ifndef XR_KERNELS_GPU_DNN_CONV_H
#define XR_KERNELS_GPU_DNN_CONV_H

#include <pthread.h>

#include "kernels/conv.h"

/* A view's dims as the libraries' tensors: n, c and the spatial dims (at least two: a 1-D
 * convolution runs as a 2-D one of height 1), strides in `strides` when non-NULL, in int. The
 * dim count, or 0 when a value exceeds int. */
int xr_dnn_view_dims(const xr_conv_problem_t *p, const xr_conv_operand_t *v, int *dims,
                     int *strides);

/* A per-channel vector (a bias) as [1, C, 1, 1(, 1)]; the dim count, or 0 past int. */
int xr_dnn_vector_dims(const xr_conv_problem_t *p, const xr_conv_operand_t *v, int *dims,
                       int *strides);

/* UNIMPLEMENTED, naming `impl`, unless every step's operands share one of fp32, fp16, bf16. */
xr_status_t xr_dnn_check_dtypes(const xr_op_plan_t *plan, const char *impl);

/* The device addresses of a step's x, w, y and bias (an absent one: left as it is). */
xr_status_t xr_dnn_step_pointers(const xr_conv_step_t *step, const xr_tensor_t *tensors,
                                 const void *out[4]);

/* A device workspace of `bytes` and its address (nothing for 0). */
xr_status_t xr_dnn_workspace(xr_hal_device_t *device, size_t bytes, xr_hal_buffer_t **out_buffer,
                             void **out_pointer);

#define XR_DNN_MAX_DEVICES 64

/* A library's handles, one per device, created on first use and kept for the process. */
typedef struct xr_dnn_handles {
  pthread_mutex_t lock;
  size_t count;
  struct {
    char spec[32];
    void *handle;
  } entries[XR_DNN_MAX_DEVICES];
} xr_dnn_handles_t;

#define XR_DNN_HANDLES_INIT \
  { .lock = PTHREAD_MUTEX_INITIALIZER }

/* The device's handle in `cache`, made with `create` (the library's cudnnCreate / miopenCreate)
 * with the device current, as the libraries bind a handle to it. On failure UNAVAILABLE, with
 * *out_result the library's status (-1: too many devices). */
xr_status_t xr_dnn_device_handle(xr_dnn_handles_t *cache, xr_hal_device_t *device,
                                 int (*create)(void **handle), void **out, int *out_result);

#endif
