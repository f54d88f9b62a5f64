/* hip.miopen_conv: the convolution steps (kernels/conv.h) on MIOpen's convolution API, ahead of
 * our kernels (gpu.conv), on the HAL's own buffers and stream:
 *   FORWARD          miopenConvolutionForward (+ miopenConvolutionForwardBias)
 *   BACKWARD_DATA    miopenConvolutionBackwardData (+ the bias a transposed convolution adds)
 *   BACKWARD_WEIGHT  miopenConvolutionBackwardWeights
 *   BIAS_GRAD        miopenConvolutionBackwardBias
 * Every operand, the weights included, is a tensor descriptor with its own strides. Each step's
 * algorithm is the first that miopenFind*Algorithm returns without an exhaustive search, within
 * the larger of the workspaces MIOpen asks for and 64 MiB, as PyTorch's MIOpen path does with
 * benchmarking off. Find runs the convolution, so it happens in prepare() on the real tensors
 * (untimed); supports() checks dtypes, the library, the handle and the geometry.
 * One MIOpen handle per device, created on first use and kept for the process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/conv.h"
#include "kernels/gpu/dnn_conv.h"
#include "kernels/gpu/miopen.h"

static xr_dnn_handles_t handles = XR_DNN_HANDLES_INIT;

static xr_status_t miopen_fail(const xr_miopen_t *lib, const char *op, const char *call,
                               int result) {
  return xr_error(XR_DEVICE_ERROR, "%s: %s %s: %s (%d)", op, lib->version, call,
                  lib->miopenGetErrorString(result), result);
}

static int miopen_type(xr_dtype_t d) {
  return d == XR_DTYPE_F32   ? XR_MIOPEN_FLOAT
         : d == XR_DTYPE_F16 ? XR_MIOPEN_HALF
                             : XR_MIOPEN_BFLOAT16;
}

typedef struct miopen_state {
  const xr_miopen_t *lib;
  const char *op;
  void *handle;
  xr_dnn_steps_t steps;
} miopen_state_t;

static void destroy_descriptors(miopen_state_t *s) {
  for (int i = 0; i < s->steps.count; i++) {
    xr_dnn_step_t *c = &s->steps.step[i];
    void *tensors[4] = {c->x, c->y, c->w, c->bias};
    for (int k = 0; k < 4; k++)
      if (tensors[k]) s->lib->miopenDestroyTensorDescriptor(tensors[k]);
    if (c->conv) s->lib->miopenDestroyConvolutionDescriptor(c->conv);
  }
}

static void miopen_release(void *state) {
  miopen_state_t *s = state;
  if (!s) return;
  destroy_descriptors(s);
  xr_hal_buffer_free(s->steps.workspace);
  free(s);
}

static xr_status_t tensor_desc(miopen_state_t *s, const xr_conv_problem_t *p,
                               const xr_conv_operand_t *v, bool vector, void **out) {
  int dims[5], strides[5];
  int nd = vector ? xr_dnn_vector_dims(p, v, dims, strides) : xr_dnn_view_dims(p, v, dims, strides);
  if (!nd) return xr_error(XR_UNIMPLEMENTED, "%s: an operand's size or stride exceeds int", s->op);
  int r = s->lib->miopenCreateTensorDescriptor(out);
  if (r == 0) r = s->lib->miopenSetTensorDescriptor(*out, miopen_type(v->dtype), nd, dims, strides);
  return r == 0 ? XR_OK : miopen_fail(s->lib, s->op, "miopenSetTensorDescriptor", r);
}

static xr_status_t conv_desc(miopen_state_t *s, const xr_conv_problem_t *p, void **out) {
  int pad[3], stride[3], dilation[3], spatial = xr_dnn_geometry(p, pad, stride, dilation);
  int r = s->lib->miopenCreateConvolutionDescriptor(out);
  if (r == 0)
    r = s->lib->miopenInitConvolutionNdDescriptor(*out, spatial, pad, stride, dilation,
                                                  XR_MIOPEN_CONVOLUTION);
  if (r == 0) r = s->lib->miopenSetConvolutionGroupCount(*out, (int)p->groups);
  return r == 0 ? XR_OK : miopen_fail(s->lib, s->op, "miopenInitConvolutionNdDescriptor", r);
}

/* MIOpen's output size of x under w must be y's (its padding is symmetric), and the workspace
 * it asks for within the limit. */
static xr_status_t check_step(miopen_state_t *s, const xr_conv_problem_t *p, xr_dnn_step_t *c) {
  const xr_miopen_t *l = s->lib;
  int dims[8], nd = 0; /* MIOpen writes nd of them */
  int r = l->miopenGetConvolutionNdForwardOutputDim(c->conv, c->x, c->w, &nd, dims);
  if (r != 0) return miopen_fail(l, s->op, "miopenGetConvolutionNdForwardOutputDim", r);
  xr_status_t st = xr_dnn_check_output(p, c, dims, nd, "MIOpen", s->op);
  if (st != XR_OK) return st;
  xr_conv_pass_t pass = c->step->pass;
  if (pass == XR_CONV_FORWARD)
    r = l->miopenConvolutionForwardGetWorkSpaceSize(s->handle, c->w, c->x, c->conv, c->y,
                                                    &c->workspace);
  else if (pass == XR_CONV_BACKWARD_DATA)
    r = l->miopenConvolutionBackwardDataGetWorkSpaceSize(s->handle, c->y, c->w, c->conv, c->x,
                                                         &c->workspace);
  else
    r = l->miopenConvolutionBackwardWeightsGetWorkSpaceSize(s->handle, c->y, c->x, c->conv, c->w,
                                                            &c->workspace);
  if (r != 0) return miopen_fail(l, s->op, "miopenConvolution*GetWorkSpaceSize", r);
  if (c->workspace > XR_DNN_MAX_WORKSPACE_BYTES)
    return xr_error(XR_UNIMPLEMENTED, "%s: MIOpen asks for %zu MiB of workspace (at most %zu)",
                    s->op, c->workspace >> 20, XR_DNN_MAX_WORKSPACE_BYTES >> 20);
  if (c->workspace > s->steps.workspace_bytes) s->steps.workspace_bytes = c->workspace;
  return XR_OK;
}

/* Descriptors of every step and their checks. */
static xr_status_t configure(miopen_state_t *s, const xr_op_plan_t *plan) {
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
        (st = tensor_desc(s, p, &step->w, false, &c->w)) || (st = conv_desc(s, p, &c->conv)) ||
        (step->pass != XR_CONV_BACKWARD_WEIGHT && step->bias.index >= 0 &&
         (st = tensor_desc(s, p, &step->bias, true, &c->bias))))
      break;
    st = check_step(s, p, c);
  }
  return st;
}

static xr_status_t start(const xr_op_plan_t *plan, xr_hal_device_t *device, miopen_state_t *s) {
  s->op = plan->op->name;
  xr_status_t st = xr_dnn_check_dtypes(plan, "hip.miopen_conv");
  const xr_conv_problem_t *p = plan->problem;
  for (int i = 0; i < p->step_count && st == XR_OK; i++)
    if (p->steps[i].bias.index >= 0 && p->steps[i].bias.dtype == XR_DTYPE_BF16)
      st = xr_error(XR_UNIMPLEMENTED,
                    "hip.miopen_conv: %s: a bf16 bias (MIOpen's bias calls "
                    "decline bf16)",
                    plan->op->name);
  if (st == XR_OK) st = xr_miopen_get(&s->lib);
  if (st == XR_OK) {
    char call[640];
    snprintf(call, sizeof call, "%s (%s): miopenCreate", s->lib->version, s->lib->path);
    st = xr_dnn_device_handle(&handles, device, s->lib->miopenCreate, s->lib->miopenGetErrorString,
                              call, &s->handle);
  }
  if (st == XR_OK) st = configure(s, plan);
  return st;
}

static xr_status_t miopen_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  miopen_state_t probe = {0};
  xr_status_t st = start(plan, device, &probe);
  if (probe.lib) destroy_descriptors(&probe);
  return st;
}

/* Step c's algorithm: MIOpen's first without an exhaustive search (which runs the step). */
static xr_status_t find_algorithm(miopen_state_t *s, xr_dnn_step_t *c) {
  const xr_miopen_t *l = s->lib;
  xr_miopen_algo_perf_t perf;
  int returned = 0, r;
  void *x = (void *)c->pointer[0], *w = (void *)c->pointer[1], *y = (void *)c->pointer[2];
  void *ws = s->steps.workspace_pointer;
  size_t wsb = s->steps.workspace_bytes;
  if (c->step->pass == XR_CONV_FORWARD)
    r = l->miopenFindConvolutionForwardAlgorithm(s->handle, c->x, x, c->w, w, c->conv, c->y, y, 1,
                                                 &returned, &perf, ws, wsb, false);
  else if (c->step->pass == XR_CONV_BACKWARD_DATA)
    r = l->miopenFindConvolutionBackwardDataAlgorithm(s->handle, c->y, y, c->w, w, c->conv, c->x, x,
                                                      1, &returned, &perf, ws, wsb, false);
  else
    r = l->miopenFindConvolutionBackwardWeightsAlgorithm(s->handle, c->y, y, c->x, x, c->conv, c->w,
                                                         w, 1, &returned, &perf, ws, wsb, false);
  if (r != 0) return miopen_fail(l, s->op, "miopenFindConvolution*Algorithm", r);
  if (returned < 1) return xr_error(XR_DEVICE_ERROR, "%s: MIOpen found no algorithm", s->op);
  c->algo = perf.algo;
  return XR_OK;
}

static xr_status_t miopen_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                  const xr_tensor_t *tensors, void **out_state) {
  miopen_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  xr_status_t st = start(plan, device, s);
  if (st == XR_OK) st = xr_dnn_bind(&s->steps, device, tensors);
  for (int i = 0; i < s->steps.count && st == XR_OK; i++)
    if (s->steps.step[i].step->pass != XR_CONV_BIAS_GRAD) st = find_algorithm(s, &s->steps.step[i]);
  if (st != XR_OK) {
    miopen_release(s);
    return st;
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t miopen_enqueue(void *state, xr_hal_stream_t *stream) {
  miopen_state_t *s = state;
  const xr_miopen_t *l = s->lib;
  void *native;
  xr_status_t st = xr_hal_stream_native(stream, &native); /* makes the device current */
  if (st != XR_OK) return xr_error_prefix(st, "%s: ", s->op);
  int r = l->miopenSetStream(s->handle, native);
  if (r != 0) return miopen_fail(l, s->op, "miopenSetStream", r);
  const float one = 1, zero = 0;
  for (int i = 0; i < s->steps.count; i++) {
    xr_dnn_step_t *c = &s->steps.step[i];
    void *x = (void *)c->pointer[0], *w = (void *)c->pointer[1], *y = (void *)c->pointer[2];
    void *bias = (void *)c->pointer[3], *ws = s->steps.workspace_pointer;
    size_t wsb = s->steps.workspace_bytes;
    const char *call;
    switch (c->step->pass) {
      case XR_CONV_FORWARD:
        call = "miopenConvolutionForward";
        r = l->miopenConvolutionForward(s->handle, &one, c->x, x, c->w, w, c->conv, c->algo, &zero,
                                        c->y, y, ws, wsb);
        if (r == 0 && c->bias) {
          call = "miopenConvolutionForwardBias";
          r = l->miopenConvolutionForwardBias(s->handle, &one, c->bias, bias, &zero, c->y, y);
        }
        break;
      case XR_CONV_BACKWARD_DATA:
        call = "miopenConvolutionBackwardData";
        r = l->miopenConvolutionBackwardData(s->handle, &one, c->y, y, c->w, w, c->conv, c->algo,
                                             &zero, c->x, x, ws, wsb);
        if (r == 0 && c->bias) {
          call = "miopenConvolutionForwardBias";
          r = l->miopenConvolutionForwardBias(s->handle, &one, c->bias, bias, &zero, c->x, x);
        }
        break;
      case XR_CONV_BACKWARD_WEIGHT:
        call = "miopenConvolutionBackwardWeights";
        r = l->miopenConvolutionBackwardWeights(s->handle, &one, c->y, y, c->x, x, c->conv, c->algo,
                                                &zero, c->w, w, ws, wsb);
        break;
      default:
        call = "miopenConvolutionBackwardBias";
        r = l->miopenConvolutionBackwardBias(s->handle, &one, c->y, y, &zero, c->bias, bias);
    }
    if (r != 0) return miopen_fail(l, s->op, call, r);
  }
  return XR_OK;
}

const xr_kernel_impl_t xr_hip_miopen_conv_impl = {
    .name = "hip.miopen_conv",
    .driver = "hip",
    .supports = miopen_supports,
    .prepare = miopen_prepare,
    .enqueue = miopen_enqueue,
    .release = miopen_release,
};
