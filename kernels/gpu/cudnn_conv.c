/* cuda.cudnn_conv: the convolution steps (kernels/conv.h) on cuDNN's convolution API, ahead of
 * our direct kernel (gpu.conv), on the HAL's own buffers and stream:
 *   FORWARD          cudnnConvolutionForward (+ cudnnAddTensor of the bias)
 *   BACKWARD_DATA    cudnnConvolutionBackwardData (+ the bias a transposed convolution adds)
 *   BACKWARD_WEIGHT  cudnnConvolutionBackwardFilter
 *   BIAS_GRAD        cudnnConvolutionBackwardBias
 * Activations are described with their own strides (NCHW, channels-last, views); the weights
 * must be packed NCHW or NHWC, as cuDNN's filter descriptors are. Each step's algorithm is
 * cuDNN's first heuristic choice (cudnnGet*Algorithm_v7) that needs at most 64 MiB of workspace,
 * with the math type that choice names, as PyTorch's default (benchmark off) takes it: fp32
 * may then run on TF32 tensor cores, as PyTorch's does with allow_tf32 (its default for cuDNN).
 *
 *   supports()  loads cuDNN, takes fp32 / fp16 / bf16 steps of one dtype with packed weights,
 *               and asks the heuristics for every step (UNIMPLEMENTED with a sentence when one
 *               has no algorithm: gpu.conv takes it);
 *   prepare()   the same for the real tensors, plus the workspace (a HAL buffer);
 *   enqueue()   the steps' calls on the stream, no allocation.
 * One cuDNN handle per device, created on first use and kept for the process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/conv.h"
#include "kernels/gpu/cudnn.h"
#include "kernels/gpu/dnn_conv.h"

static xr_dnn_handles_t handles = XR_DNN_HANDLES_INIT;

static xr_status_t cudnn_fail(const xr_cudnn_t *lib, const char *op, const char *call, int result) {
  return xr_error(XR_DEVICE_ERROR, "%s: %s %s: %s (%d)", op, lib->version, call,
                  lib->cudnnGetErrorString(result), result);
}

static int cudnn_type(xr_dtype_t d) {
  return d == XR_DTYPE_F32   ? XR_CUDNN_DATA_FLOAT
         : d == XR_DTYPE_F16 ? XR_CUDNN_DATA_HALF
                             : XR_CUDNN_DATA_BFLOAT16;
}

/* The filter format of weights packed NCHW (co, ci, k... row-major) or NHWC (co, k..., ci
 * innermost), or -1. */
static int filter_format(int nd, const int *dims, const int *strides) {
  static const int nchw[5] = {0, 1, 2, 3, 4}, nhwc4[4] = {0, 2, 3, 1}, nhwc5[5] = {0, 2, 3, 4, 1};
  const int *orders[2] = {nchw, nd == 4 ? nhwc4 : nhwc5};
  for (int f = 0; f < 2; f++) {
    int64_t expect = 1;
    bool packed = true;
    for (int k = nd - 1; k >= 0 && packed; k--) {
      int dim = orders[f][k];
      packed = dims[dim] == 1 || strides[dim] == expect;
      expect *= dims[dim];
    }
    if (packed) return f == 0 ? XR_CUDNN_TENSOR_NCHW : XR_CUDNN_TENSOR_NHWC;
  }
  return -1;
}

/* The steps' w descriptors are filter descriptors. */
typedef struct cudnn_state {
  const xr_cudnn_t *lib;
  const char *op;
  void *handle;
  xr_dnn_steps_t steps;
} cudnn_state_t;

static void destroy_descriptors(cudnn_state_t *s) {
  for (int i = 0; i < s->steps.count; i++) {
    xr_dnn_step_t *c = &s->steps.step[i];
    if (c->x) s->lib->cudnnDestroyTensorDescriptor(c->x);
    if (c->y) s->lib->cudnnDestroyTensorDescriptor(c->y);
    if (c->bias) s->lib->cudnnDestroyTensorDescriptor(c->bias);
    if (c->w) s->lib->cudnnDestroyFilterDescriptor(c->w);
    if (c->conv) s->lib->cudnnDestroyConvolutionDescriptor(c->conv);
  }
}

static void cudnn_release(void *state) {
  cudnn_state_t *s = state;
  if (!s) return;
  destroy_descriptors(s);
  xr_hal_buffer_free(s->steps.workspace);
  free(s);
}

static xr_status_t tensor_desc(cudnn_state_t *s, const xr_conv_problem_t *p,
                               const xr_conv_operand_t *v, bool vector, void **out) {
  int dims[XR_CUDNN_DIM_MAX], strides[XR_CUDNN_DIM_MAX];
  int nd = vector ? xr_dnn_vector_dims(p, v, dims, strides) : xr_dnn_view_dims(p, v, dims, strides);
  if (!nd) return xr_error(XR_UNIMPLEMENTED, "%s: an operand's size or stride exceeds int", s->op);
  int r = s->lib->cudnnCreateTensorDescriptor(out);
  if (r == 0) r = s->lib->cudnnSetTensorNdDescriptor(*out, cudnn_type(v->dtype), nd, dims, strides);
  return r == 0 ? XR_OK : cudnn_fail(s->lib, s->op, "cudnnSetTensorNdDescriptor", r);
}

static xr_status_t filter_desc(cudnn_state_t *s, const xr_conv_problem_t *p,
                               const xr_conv_operand_t *v, void **out) {
  int dims[XR_CUDNN_DIM_MAX], strides[XR_CUDNN_DIM_MAX];
  int nd = xr_dnn_view_dims(p, v, dims, strides);
  int format = nd ? filter_format(nd, dims, strides) : -1;
  if (format < 0)
    return xr_error(XR_UNIMPLEMENTED, "%s: weights not packed NCHW or NHWC (cuDNN's filters)",
                    s->op);
  int r = s->lib->cudnnCreateFilterDescriptor(out);
  if (r == 0) r = s->lib->cudnnSetFilterNdDescriptor(*out, cudnn_type(v->dtype), format, nd, dims);
  return r == 0 ? XR_OK : cudnn_fail(s->lib, s->op, "cudnnSetFilterNdDescriptor", r);
}

static xr_status_t conv_desc(cudnn_state_t *s, const xr_conv_problem_t *p, void **out) {
  int pad[3], stride[3], dilation[3], spatial = xr_dnn_geometry(p, pad, stride, dilation);
  int r = s->lib->cudnnCreateConvolutionDescriptor(out);
  if (r == 0)
    r = s->lib->cudnnSetConvolutionNdDescriptor(*out, spatial, pad, stride, dilation,
                                                XR_CUDNN_CROSS_CORRELATION, XR_CUDNN_DATA_FLOAT);
  if (r == 0) r = s->lib->cudnnSetConvolutionGroupCount(*out, (int)p->groups);
  return r == 0 ? XR_OK : cudnn_fail(s->lib, s->op, "cudnnSetConvolutionNdDescriptor", r);
}

/* Step c's algorithm: the heuristics' first that succeeds within the workspace limit, its math
 * type set on the convolution descriptor, and the workspace it needs. */
static xr_status_t choose_algorithm(cudnn_state_t *s, xr_dnn_step_t *c) {
  const xr_cudnn_t *l = s->lib;
  xr_cudnn_algo_perf_t perf[8];
  int returned = 0, r;
  xr_conv_pass_t pass = c->step->pass;
  if (pass == XR_CONV_FORWARD)
    r = l->cudnnGetConvolutionForwardAlgorithm_v7(s->handle, c->x, c->w, c->conv, c->y, 8,
                                                  &returned, perf);
  else if (pass == XR_CONV_BACKWARD_DATA)
    r = l->cudnnGetConvolutionBackwardDataAlgorithm_v7(s->handle, c->w, c->y, c->conv, c->x, 8,
                                                       &returned, perf);
  else
    r = l->cudnnGetConvolutionBackwardFilterAlgorithm_v7(s->handle, c->x, c->y, c->conv, c->w, 8,
                                                         &returned, perf);
  if (r != 0) return cudnn_fail(l, s->op, "cudnnGetConvolution*Algorithm_v7", r);
  for (int i = 0; i < returned; i++) {
    if (perf[i].status != XR_CUDNN_STATUS_SUCCESS || perf[i].memory > XR_DNN_MAX_WORKSPACE_BYTES)
      continue;
    c->algo = perf[i].algo;
    r = l->cudnnSetConvolutionMathType(c->conv, perf[i].math_type);
    if (r == 0 && pass == XR_CONV_FORWARD)
      r = l->cudnnGetConvolutionForwardWorkspaceSize(s->handle, c->x, c->w, c->conv, c->y, c->algo,
                                                     &c->workspace);
    else if (r == 0 && pass == XR_CONV_BACKWARD_DATA)
      r = l->cudnnGetConvolutionBackwardDataWorkspaceSize(s->handle, c->w, c->y, c->conv, c->x,
                                                          c->algo, &c->workspace);
    else if (r == 0)
      r = l->cudnnGetConvolutionBackwardFilterWorkspaceSize(s->handle, c->x, c->y, c->conv, c->w,
                                                            c->algo, &c->workspace);
    if (r != 0) return cudnn_fail(l, s->op, "cudnnGetConvolution*WorkspaceSize", r);
    if (c->workspace > s->steps.workspace_bytes) s->steps.workspace_bytes = c->workspace;
    return XR_OK;
  }
  static const char *const passes[] = {"forward", "backward data", "backward filter"};
  return xr_error(XR_UNIMPLEMENTED,
                  "%s: %s has no %s algorithm within %zu MiB of workspace (%d "
                  "proposed)",
                  s->op, l->version, passes[pass], XR_DNN_MAX_WORKSPACE_BYTES >> 20, returned);
}

static xr_status_t check_geometry(cudnn_state_t *s, const xr_conv_problem_t *p, xr_dnn_step_t *c) {
  int dims[XR_CUDNN_DIM_MAX], nd = 2 + (p->spatial == 3 ? 3 : 2);
  int r = s->lib->cudnnGetConvolutionNdForwardOutputDim(c->conv, c->x, c->w, nd, dims);
  if (r != 0) return cudnn_fail(s->lib, s->op, "cudnnGetConvolutionNdForwardOutputDim", r);
  return xr_dnn_check_output(p, c, dims, nd, "cuDNN", s->op);
}

/* Descriptors and algorithms of every step. */
static xr_status_t configure(cudnn_state_t *s, const xr_op_plan_t *plan) {
  const xr_conv_problem_t *p = plan->problem;
  xr_status_t st = XR_OK;
  for (int i = 0; i < p->step_count && st == XR_OK; i++) {
    xr_dnn_step_t *c = &s->steps.step[s->steps.count++];
    const xr_conv_step_t *step = c->step = &p->steps[i];
    if (step->pass == XR_CONV_BIAS_GRAD) {
      if ((st = tensor_desc(s, p, &step->y, false, &c->y)) == XR_OK)
        st = tensor_desc(s, p, &step->bias, true, &c->bias);
      continue;
    }
    if ((st = tensor_desc(s, p, &step->x, false, &c->x)) ||
        (st = tensor_desc(s, p, &step->y, false, &c->y)) ||
        (st = filter_desc(s, p, &step->w, &c->w)) || (st = conv_desc(s, p, &c->conv)) ||
        (step->pass != XR_CONV_BACKWARD_WEIGHT && step->bias.index >= 0 &&
         (st = tensor_desc(s, p, &step->bias, true, &c->bias))))
      break;
    if ((st = check_geometry(s, p, c)) == XR_OK) st = choose_algorithm(s, c);
  }
  return st;
}

static xr_status_t start(const xr_op_plan_t *plan, xr_hal_device_t *device, cudnn_state_t *s) {
  s->op = plan->op->name;
  xr_status_t st = xr_dnn_check_dtypes(plan, "cuda.cudnn_conv");
  if (st == XR_OK) st = xr_cudnn_get(&s->lib);
  if (st == XR_OK) {
    char call[640];
    snprintf(call, sizeof call, "%s (%s): cudnnCreate", s->lib->version, s->lib->path);
    st = xr_dnn_device_handle(&handles, device, s->lib->cudnnCreate, s->lib->cudnnGetErrorString,
                              call, &s->handle);
  }
  if (st == XR_OK) st = configure(s, plan);
  return st;
}

static xr_status_t cudnn_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  cudnn_state_t probe = {0};
  xr_status_t st = start(plan, device, &probe);
  if (probe.lib) destroy_descriptors(&probe);
  return st;
}

static xr_status_t cudnn_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                 const xr_tensor_t *tensors, void **out_state) {
  cudnn_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  xr_status_t st = start(plan, device, s);
  if (st == XR_OK) st = xr_dnn_bind(&s->steps, device, tensors);
  if (st != XR_OK) {
    cudnn_release(s);
    return st;
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t cudnn_enqueue(void *state, xr_hal_stream_t *stream) {
  cudnn_state_t *s = state;
  const xr_cudnn_t *l = s->lib;
  void *native;
  xr_status_t st = xr_hal_stream_native(stream, &native); /* makes the device current */
  if (st != XR_OK) return xr_error_prefix(st, "%s: ", s->op);
  int r = l->cudnnSetStream(s->handle, native);
  if (r != 0) return cudnn_fail(l, s->op, "cudnnSetStream", r);
  const float one = 1, zero = 0;
  for (int i = 0; i < s->steps.count; i++) {
    xr_dnn_step_t *c = &s->steps.step[i];
    void *x = (void *)c->pointer[0], *w = (void *)c->pointer[1], *y = (void *)c->pointer[2];
    void *bias = (void *)c->pointer[3], *ws = s->steps.workspace_pointer;
    size_t wsb = s->steps.workspace_bytes;
    const char *call;
    switch (c->step->pass) {
      case XR_CONV_FORWARD:
        call = "cudnnConvolutionForward";
        r = l->cudnnConvolutionForward(s->handle, &one, c->x, x, c->w, w, c->conv, c->algo, ws, wsb,
                                       &zero, c->y, y);
        if (r == 0 && c->bias) {
          call = "cudnnAddTensor";
          r = l->cudnnAddTensor(s->handle, &one, c->bias, bias, &one, c->y, y);
        }
        break;
      case XR_CONV_BACKWARD_DATA:
        call = "cudnnConvolutionBackwardData";
        r = l->cudnnConvolutionBackwardData(s->handle, &one, c->w, w, c->y, y, c->conv, c->algo, ws,
                                            wsb, &zero, c->x, x);
        if (r == 0 && c->bias) {
          call = "cudnnAddTensor";
          r = l->cudnnAddTensor(s->handle, &one, c->bias, bias, &one, c->x, x);
        }
        break;
      case XR_CONV_BACKWARD_WEIGHT:
        call = "cudnnConvolutionBackwardFilter";
        r = l->cudnnConvolutionBackwardFilter(s->handle, &one, c->x, x, c->y, y, c->conv, c->algo,
                                              ws, wsb, &zero, c->w, w);
        break;
      default:
        call = "cudnnConvolutionBackwardBias";
        r = l->cudnnConvolutionBackwardBias(s->handle, &one, c->y, y, &zero, c->bias, bias);
    }
    if (r != 0) return cudnn_fail(l, s->op, call, r);
  }
  return XR_OK;
}

const xr_kernel_impl_t xr_cuda_cudnn_conv_impl = {
    .name = "cuda.cudnn_conv",
    .driver = "cuda",
    .supports = cudnn_supports,
    .prepare = cudnn_prepare,
    .enqueue = cudnn_enqueue,
    .release = cudnn_release,
};
