/* The shared parts of cuda.cudnn_conv and hip.miopen_conv (kernels/gpu/dnn_conv.h). */
#include "kernels/gpu/dnn_conv.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

int xr_dnn_view_dims(const xr_conv_problem_t *p, const xr_conv_operand_t *v, int *dims,
                     int *strides) {
  int spatial = p->spatial == 3 ? 3 : 2, nd = 2 + spatial;
  int64_t d[5], s[5];
  d[0] = v->shape[0], s[0] = v->strides[0];
  d[1] = v->shape[1], s[1] = v->strides[1];
  for (int k = 0; k < spatial; k++)
    d[2 + k] = v->shape[5 - spatial + k], s[2 + k] = v->strides[5 - spatial + k];
  xr_unit_dim_strides(nd, d, s);
  for (int k = 0; k < nd; k++) {
    if (d[k] > INT_MAX || s[k] > INT_MAX || s[k] <= 0) return 0;
    dims[k] = (int)d[k];
    if (strides) strides[k] = (int)s[k];
  }
  return nd;
}

int xr_dnn_vector_dims(const xr_conv_problem_t *p, const xr_conv_operand_t *v, int *dims,
                       int *strides) {
  int nd = 2 + (p->spatial == 3 ? 3 : 2);
  if (v->shape[0] > INT_MAX || v->strides[0] * v->shape[0] > INT_MAX) return 0;
  for (int k = 0; k < nd; k++) dims[k] = 1, strides[k] = 1;
  dims[1] = (int)v->shape[0];
  strides[1] = (int)(v->shape[0] > 1 ? v->strides[0] : 1);
  strides[0] = dims[1] * strides[1];
  return nd;
}

xr_status_t xr_dnn_check_dtypes(const xr_op_plan_t *plan, const char *impl) {
  const xr_conv_problem_t *p = plan->problem;
  for (int i = 0; i < p->step_count; i++) {
    const xr_conv_step_t *s = &p->steps[i];
    const xr_conv_operand_t *all[4] = {&s->x, &s->w, &s->y, &s->bias};
    xr_dtype_t dtype = s->pass == XR_CONV_BIAS_GRAD ? s->y.dtype : s->w.dtype;
    if (!xr_fast_float_dtype(dtype))
      return xr_error(XR_UNIMPLEMENTED, "%s: %s: %s (fp32, fp16, bf16)", impl, plan->op->name,
                      xr_dtype_name(dtype));
    for (int k = 0; k < 4; k++)
      if (all[k]->index >= 0 && all[k]->dtype != dtype)
        return xr_error(XR_UNIMPLEMENTED, "%s: %s: operands of more than one dtype", impl,
                        plan->op->name);
  }
  return XR_OK;
}

int xr_dnn_geometry(const xr_conv_problem_t *p, int *pad, int *stride, int *dilation) {
  int spatial = p->spatial == 3 ? 3 : 2;
  for (int k = 0; k < spatial; k++) {
    int c = 3 - spatial + k;
    pad[k] = (int)p->pad[c], stride[k] = (int)p->stride[c], dilation[k] = (int)p->dilation[c];
  }
  return spatial;
}

xr_status_t xr_dnn_check_output(const xr_conv_problem_t *p, const xr_dnn_step_t *c, const int *got,
                                int nd, const char *library, const char *op) {
  int want[5];
  if (xr_dnn_view_dims(p, &c->step->y, want, NULL) != nd)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s's output has %d dims", op, library, nd);
  for (int k = 0; k < nd; k++)
    if (got[k] != want[k])
      return xr_error(XR_UNIMPLEMENTED,
                      "%s: %s's output size %d in dim %d, not %d (uneven padding)", op, library,
                      got[k], k, want[k]);
  return XR_OK;
}

/* The device addresses of a step's x, w, y and bias (an absent one: left as it is). */
static xr_status_t step_pointers(const xr_conv_step_t *step, const xr_tensor_t *tensors,
                                 const void *out[4]) {
  const xr_conv_operand_t *all[4] = {&step->x, &step->w, &step->y, &step->bias};
  for (int k = 0; k < 4; k++) {
    if (all[k]->index < 0) continue;
    const xr_tensor_t *t = &tensors[all[k]->index];
    void *base;
    size_t offset;
    xr_status_t st = xr_hal_buffer_native(t->buffer, &base, &offset);
    if (st != XR_OK) return st;
    out[k] = (char *)base + offset + (size_t)t->offset * xr_dtype_size(t->dtype);
  }
  return XR_OK;
}

xr_status_t xr_dnn_bind(xr_dnn_steps_t *s, xr_hal_device_t *device, const xr_tensor_t *tensors) {
  xr_status_t st = XR_OK;
  for (int i = 0; i < s->count && st == XR_OK; i++)
    st = step_pointers(s->step[i].step, tensors, s->step[i].pointer);
  if (st != XR_OK || s->workspace_bytes == 0) return st;
  void *base;
  size_t offset;
  st = xr_hal_buffer_alloc(device, s->workspace_bytes, &s->workspace);
  if (st == XR_OK) st = xr_hal_buffer_native(s->workspace, &base, &offset);
  if (st == XR_OK) s->workspace_pointer = (char *)base + offset;
  return st;
}

xr_status_t xr_dnn_device_handle(xr_dnn_handles_t *cache, xr_hal_device_t *device,
                                 int (*create)(void **handle), const char *(*error_string)(int),
                                 const char *call, void **out) {
  xr_hal_device_properties_t p;
  void *native;
  xr_status_t st = xr_hal_device_properties(device, &p);
  if (st == XR_OK) st = xr_hal_device_native(device, &native); /* makes it current */
  if (st != XR_OK) return st;
  pthread_mutex_lock(&cache->lock);
  for (size_t i = 0; i < cache->count; i++) {
    if (!strcmp(cache->entries[i].spec, p.spec)) {
      *out = cache->entries[i].handle;
      pthread_mutex_unlock(&cache->lock);
      return XR_OK;
    }
  }
  void *handle = NULL;
  int result = cache->count < XR_DNN_MAX_DEVICES ? create(&handle) : -1;
  if (result == 0) {
    snprintf(cache->entries[cache->count].spec, sizeof cache->entries[0].spec, "%s", p.spec);
    cache->entries[cache->count++].handle = handle;
  }
  pthread_mutex_unlock(&cache->lock);
  if (result != 0)
    return xr_error(XR_UNAVAILABLE, "%s: %s: %s", p.spec, call,
                    result < 0 ? "too many devices" : error_string(result));
  *out = handle;
  return XR_OK;
}
