/* GPU GEMM throughput: the vendor's Lt library (cuda.cublaslt_matmul / hip.hipblaslt_matmul)
 * next to our tiled kernel (gpu.gemm_tiled) on the same device, the same
 * tensors and in the same run, each prepared and enqueued exactly as the engine does and timed
 * with HAL events. Not a test:
 *   bazel run -c opt //tools:gpu_gemm_bench [-- cuda|hip] [-- --quick]
 * Shapes: 1024^3, 2048^3, 4096^3 (aten::mm) and decode (aten::linear, M = 1 and 16,
 * K = N = 4096, weight [N, K]); f32, bf16, f16. Prints GFLOP/s of both and vendor / tiled.
 * Exits 3 when the device cannot be opened (no GPU here), with the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "hal/hal.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "tools/op_timing.h"

typedef struct shape {
  const char *op;
  int64_t M, N, K;
} shape_t;

static const shape_t shapes[] = {
    {"aten::mm", 1024, 1024, 1024},  {"aten::mm", 2048, 2048, 2048},
    {"aten::mm", 4096, 4096, 4096},  {"aten::linear", 1, 4096, 4096},
    {"aten::linear", 16, 4096, 4096},
};

static void op_json(const shape_t *s, const char *dtype, char *json, size_t size) {
  bool linear = !strcmp(s->op, "aten::linear");
  snprintf(json, size,
           "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": \"%s\", "
           "\"args\": [{\"name\": \"%s\", \"type\": \"Tensor\", \"value\": {\"dtype\": \"%s\", "
           "\"shape\": [%lld, %lld]}}, {\"name\": \"%s\", \"type\": \"Tensor\", \"value\": "
           "{\"dtype\": \"%s\", \"shape\": [%lld, %lld]}}]}]}",
           s->op, linear ? "input" : "self", dtype, (long long)s->M, (long long)s->K,
           linear ? "weight" : "mat2", dtype, (long long)(linear ? s->N : s->K),
           (long long)(linear ? s->K : s->N));
}

/* Seconds per execution with `impl` (best of 3 batches of >= 0.1 s), or < 0 with the reason. */
static double time_impl(const xr_op_plan_t *plan, const xr_kernel_impl_t *impl,
                        xr_hal_device_t *device, xr_hal_stream_t *stream, const xr_tensor_t *tensors,
                        char *reason, size_t reason_size) {
  xr_kernel_instance_t *instance = NULL;
  xr_status_t st = impl->supports ? impl->supports(plan, device) : XR_OK;
  if (st == XR_OK) st = xr_kernel_prepare(plan, impl, device, tensors, &instance);
  double best = st == XR_OK ? op_timing_best(instance, device, stream, 3, 0.1) : -1;
  if (best < 0) snprintf(reason, reason_size, "%s", xr_last_error());
  xr_kernel_instance_destroy(instance);
  return best;
}

int main(int argc, char **argv) {
  const char *driver = "cuda";
  bool quick = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = true;
    else driver = argv[i];
  }
  bool cuda = !strcmp(driver, "cuda");
  const xr_kernel_impl_t *vendor = cuda ? &xr_gemm_cublaslt_impl : &xr_gemm_hipblaslt_impl;
  const xr_kernel_impl_t *tiled = &xr_gemm_gpu_impl;
  xr_hal_device_t *device;
  xr_hal_stream_t *stream;
  if (xr_hal_device_create(driver, &device) != XR_OK) {
    fprintf(stderr, "gpu_gemm_bench: %s\n", xr_last_error());
    return 3;
  }
  if (xr_hal_stream_create(device, &stream) != XR_OK) {
    fprintf(stderr, "gpu_gemm_bench: %s\n", xr_last_error());
    xr_hal_device_destroy(device);
    return 1;
  }
  xr_hal_device_properties_t p;
  xr_hal_device_properties(device, &p);
  printf("%s (%s)\n%-13s %-6s %5s %5s %5s %12s %12s %8s\n", p.name, p.spec, "op", "dtype", "M",
         "N", "K", "vendor GF/s", "tiled GF/s", "ratio");
  const char *dtypes[] = {"float", "c10::BFloat16", "c10::Half"};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    const shape_t *s = &shapes[si];
    if (quick && s->M == 4096) continue;
    for (size_t di = 0; di < 3; di++) {
      char json[1024], vendor_reason[512] = "", tiled_reason[512] = "";
      op_json(s, dtypes[di], json, sizeof json);
      xr_bundle_t *bundle;
      xr_op_plan_t plan;
      if (xr_bundle_decode((const uint8_t *)json, strlen(json), "bench", ".", NULL, &bundle) != XR_OK)
        continue;
      if (xr_kernel_plan(&bundle->ops[0], &plan) != XR_OK) {
        xr_bundle_destroy(bundle);
        continue;
      }
      xr_tensor_t tensors[3] = {{0}};
      xr_status_t st = XR_OK;
      for (size_t i = 0; st == XR_OK && i < plan.input_count + plan.return_count; i++) {
        xr_tensor_t *t = &tensors[i];
        bool input = i < plan.input_count;
        const xr_tensor_desc_t *desc = input ? NULL : &plan.returns[i - plan.input_count];
        t->dtype = input ? plan.inputs[i]->dtype : desc->dtype;
        t->rank = input ? plan.inputs[i]->rank : desc->rank;
        size_t count = 1;
        for (int d = 0; d < t->rank; d++)
          t->shape[d] = input ? plan.inputs[i]->shape[d] : desc->shape[d];
        for (int d = t->rank - 1; d >= 0; d--)
          t->strides[d] = (int64_t)count, count *= (size_t)t->shape[d];
        /* 0x3c00: 1.0 in f16, 1/128 in bf16 (and in each f32 half): sums stay finite. */
        uint16_t pattern = 0x3c00;
        size_t bytes = count * xr_dtype_size(t->dtype);
        st = xr_hal_buffer_alloc(device, bytes, &t->buffer);
        if (st == XR_OK) st = xr_hal_buffer_fill(t->buffer, 0, bytes, &pattern, sizeof pattern);
      }
      double flops = 2.0 * (double)s->M * (double)s->N * (double)s->K;
      double tv = st == XR_OK ? time_impl(&plan, vendor, device, stream, tensors, vendor_reason,
                                          sizeof vendor_reason) : -1;
      double tt = st == XR_OK ? time_impl(&plan, tiled, device, stream, tensors, tiled_reason,
                                          sizeof tiled_reason) : -1;
      printf("%-13s %-6s %5lld %5lld %5lld", s->op, xr_dtype_name(tensors[0].dtype),
             (long long)s->M, (long long)s->N, (long long)s->K);
      if (tv > 0) printf(" %12.1f", flops / tv * 1e-9);
      else printf(" %12s", "-");
      if (tt > 0) printf(" %12.1f", flops / tt * 1e-9);
      else printf(" %12s", "-");
      if (tv > 0 && tt > 0) printf(" %8.2f\n", tt / tv);
      else printf(" %8s\n", "-");
      if (tv <= 0) printf("  vendor: %s\n", vendor_reason[0] ? vendor_reason : xr_last_error());
      if (tt <= 0) printf("  tiled: %s\n", tiled_reason[0] ? tiled_reason : xr_last_error());
      for (size_t i = 0; i < 3; i++) xr_hal_buffer_free(tensors[i].buffer);
      xr_kernel_plan_free(&plan);
      xr_bundle_destroy(bundle);
    }
  }
  xr_hal_stream_destroy(stream);
  xr_hal_device_destroy(device);
  return 0;
}
