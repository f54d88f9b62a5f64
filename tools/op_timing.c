/* The replay path timed one op at a time (tools/op_timing.h). */
#include "tools/op_timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/bundle.h"
#include "hal/hal.h"
#include "kernels/kernels.h"

double op_timing_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void op_timing_fill(void *data, int dtype, size_t count, unsigned *seed) {
  for (size_t i = 0; i < count; i++) {
    float v = (float)rand_r(seed) / (float)RAND_MAX - 0.5f;
    if (dtype == XR_DTYPE_F32) {
      ((float *)data)[i] = v;
    } else {
      uint32_t u;
      memcpy(&u, &v, sizeof u);
      /* bf16: truncated bits; fp16: a small exactly representable value */
      ((uint16_t *)data)[i] = dtype == XR_DTYPE_BF16 ? (uint16_t)(u >> 16)
                                                     : (uint16_t)(0x3800 + (rand_r(seed) & 0x3ff));
    }
  }
}

static xr_status_t enqueue_instance(void *instance, xr_hal_stream_t *stream) {
  return xr_kernel_enqueue(instance, stream);
}

double op_timing_best(xr_kernel_instance_t *instance, xr_hal_device_t *device,
                      xr_hal_stream_t *stream, int warmups, double batch_seconds) {
  return op_timing_best_calls(enqueue_instance, instance, device, stream, warmups, batch_seconds);
}

double op_timing_best_calls(xr_status_t (*enqueue)(void *context, xr_hal_stream_t *stream),
                            void *context, xr_hal_device_t *device, xr_hal_stream_t *stream,
                            int warmups, double batch_seconds) {
  xr_hal_event_t *start = NULL, *end = NULL;
  xr_status_t st = xr_hal_event_create(device, &start);
  if (st == XR_OK) st = xr_hal_event_create(device, &end);
  double best = -1;
  int iters = 1;
  for (int w = 0; st == XR_OK && w < warmups; w++) st = enqueue(context, stream);
  if (st == XR_OK) st = xr_hal_stream_synchronize(stream);
  for (int batch = 0; st == XR_OK && batch < 4; batch++) {
    st = xr_hal_event_record(start, stream);
    for (int i = 0; st == XR_OK && i < iters; i++) st = enqueue(context, stream);
    if (st == XR_OK) st = xr_hal_event_record(end, stream);
    double ms = 0;
    if (st == XR_OK) st = xr_hal_event_elapsed_ms(start, end, &ms);
    double per = ms * 1e-3 / iters;
    if (batch == 0) { /* sizing run */
      iters = per > 0 ? (int)(batch_seconds / per) + 1 : 100;
      continue;
    }
    if (st == XR_OK && (best < 0 || per < best)) best = per;
  }
  xr_hal_stream_synchronize(stream);
  xr_hal_event_destroy(end);
  xr_hal_event_destroy(start);
  return st == XR_OK ? best : -1;
}

#define MAX_TENSORS 16

double op_time_seconds(const char *json, const char *device_spec, char *kernel,
                       size_t kernel_size) {
  return op_time_impl_seconds(json, device_spec, NULL, kernel, kernel_size);
}

double op_time_impl_seconds(const char *json, const char *device_spec, const xr_kernel_impl_t *impl,
                            char *kernel, size_t kernel_size) {
  xr_bundle_t *bundle = NULL;
  xr_hal_device_t *device = NULL;
  xr_hal_stream_t *stream = NULL;
  xr_op_plan_t plan;
  bool planned = false;
  xr_kernel_instance_t *instance = NULL;
  xr_tensor_t tensors[MAX_TENSORS] = {{0}};
  double best = -1;
  xr_status_t st =
      xr_bundle_decode((const uint8_t *)json, strlen(json), "bench", ".", NULL, &bundle);
  if (st == XR_OK) st = xr_hal_device_create(device_spec, &device);
  if (st == XR_OK) st = xr_kernel_plan(&bundle->ops[0], &plan);
  planned = st == XR_OK;
  if (st == XR_OK && plan.input_count + plan.return_count > MAX_TENSORS)
    st = xr_error(XR_UNIMPLEMENTED, "more than %d tensors", MAX_TENSORS);
  if (st == XR_OK && impl)
    st = impl->supports(&plan, device);
  else if (st == XR_OK)
    st = xr_kernel_select(&plan, device, XR_KERNEL_BEST, &impl);
  if (st == XR_OK) snprintf(kernel, kernel_size, "%s", xr_kernel_impl_name(impl));
  unsigned seed = 1;
  for (size_t i = 0; st == XR_OK && i < plan.input_count + plan.return_count; i++) {
    xr_tensor_t *t = &tensors[i];
    size_t bytes;
    if (i < plan.input_count) { /* the traced view: strides and offset */
      const xr_tensor_spec_t *spec = plan.inputs[i];
      t->dtype = spec->dtype;
      t->rank = spec->rank;
      t->offset = spec->storage_offset;
      for (int d = 0; d < t->rank; d++)
        t->shape[d] = spec->shape[d], t->strides[d] = spec->strides[d];
      st = xr_tensor_storage_bytes(spec, &bytes);
    } else {
      const xr_tensor_desc_t *desc = &plan.returns[i - plan.input_count];
      t->dtype = desc->dtype;
      t->rank = desc->rank;
      size_t count = 1;
      for (int d = t->rank - 1; d >= 0; d--)
        t->shape[d] = desc->shape[d],
        t->strides[d] = desc->dense_strides ? desc->strides[d] : (int64_t)count,
        count *= (size_t)desc->shape[d];
      bytes = count * xr_dtype_size(t->dtype);
    }
    if (bytes == 0) bytes = 1;
    if (st == XR_OK) st = xr_hal_buffer_alloc(device, bytes, &t->buffer);
    void *host = malloc(bytes);
    if (st == XR_OK && host) {
      op_timing_fill(host, t->dtype, bytes / xr_dtype_size(t->dtype), &seed);
      st = xr_hal_buffer_write(t->buffer, 0, host, bytes);
    }
    free(host);
  }
  if (st == XR_OK) st = xr_kernel_prepare(&plan, impl, device, tensors, &instance);
  if (st == XR_OK) st = xr_hal_stream_create(device, &stream);
  if (st == XR_OK) {
    best = op_timing_best(instance, device, stream, 2, 0.2);
    if (best < 0) st = XR_INTERNAL;
  }
  if (st != XR_OK) {
    fprintf(stderr, "  %s on %s: %s\n", planned ? bundle->ops[0].name : "op", device_spec,
            xr_last_error());
    best = -1;
  }
  if (stream) xr_hal_stream_synchronize(stream);
  xr_kernel_instance_destroy(instance);
  xr_hal_stream_destroy(stream);
  for (size_t i = 0; i < MAX_TENSORS; i++) xr_hal_buffer_free(tensors[i].buffer);
  if (planned) xr_kernel_plan_free(&plan);
  xr_hal_device_destroy(device);
  xr_bundle_destroy(bundle);
  return best;
}
