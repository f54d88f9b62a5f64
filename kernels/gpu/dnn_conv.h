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

/* The convolution's pads, strides and dilations over the spatial dims the libraries see (as
 * xr_dnn_view_dims); their count. */
int xr_dnn_geometry(const xr_conv_problem_t *p, int *pad, int *stride, int *dilation);

/* The largest workspace a step may ask for. */
#define XR_DNN_MAX_WORKSPACE_BYTES ((size_t)64 << 20)

/* One step: its descriptors (the library's own, as pointers), algorithm and workspace size,
 * and its operands' device addresses. */
typedef struct xr_dnn_step {
  const xr_conv_step_t *step;
  void *x, *y, *w, *bias, *conv;
  int algo;
  size_t workspace;
  const void *pointer[4]; /* x, w, y, bias */
} xr_dnn_step_t;

/* An op's steps and the workspace they share (the largest step's). */
typedef struct xr_dnn_steps {
  int count;
  xr_dnn_step_t step[3];
  size_t workspace_bytes;
  xr_hal_buffer_t *workspace;
  void *workspace_pointer;
} xr_dnn_steps_t;

/* UNIMPLEMENTED, naming `library`, unless its output size `got` of c's x under its w (nd dims)
 * is c's y: the libraries pad symmetrically, so geometries PyTorch pads unevenly ("same" with
 * an even kernel) are not theirs. */
xr_status_t xr_dnn_check_output(const xr_conv_problem_t *p, const xr_dnn_step_t *c, const int *got,
                                int nd, const char *library, const char *op);

/* Every step's operand addresses on `tensors`, and the workspace. */
xr_status_t xr_dnn_bind(xr_dnn_steps_t *s, xr_hal_device_t *device, const xr_tensor_t *tensors);

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
 * with the device current, as the libraries bind a handle to it. UNAVAILABLE when that fails,
 * naming the device, `call` ("cuDNN 9.19.0 (libcudnn.so.9): cudnnCreate") and the library's
 * reason for the status (`error_string`). */
xr_status_t xr_dnn_device_handle(xr_dnn_handles_t *cache, xr_hal_device_t *device,
                                 int (*create)(void **handle), const char *(*error_string)(int),
                                 const char *call, void **out);

#endif
