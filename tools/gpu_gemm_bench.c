/* GPU GEMM throughput on the same device, the same tensors and in the same run, timed with HAL
 * events:
 *   direct  the vendor's Lt library (cuBLASLt / hipBLASLt) called directly, as its user would:
 *           the simplest descriptors, default preferences, the heuristic's first algorithm;
 *   replay  what the engine runs: the Lt implementation (cuda.cublaslt_matmul /
 *           hip.hipblaslt_matmul), prepared and enqueued exactly as the engine does;
 *   tiled   our own kernel (gpu.gemm_tiled), likewise.
 * replay / direct near 1 says the replay adds nothing to the library; below 1, it picked a
 * worse algorithm (our preferences, the 32 MiB workspace cap). Not a test:
 *   bazel run -c opt //tools:gpu_gemm_bench [-- cuda|hip] [-- --quick]
 * Shapes: 1024^3, 2048^3, 4096^3 (aten::mm) and decode (aten::linear, M = 1 and 16,
 * K = N = 4096, weight [N, K]); f32, bf16, f16. Prints GFLOP/s of each and the ratios.
 * Exits 3 when the device cannot be opened (no GPU here), with the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "hal/hal.h"
#include "kernels/dtype.h"
#include "kernels/gemm.h"
#include "kernels/gpu/blaslt.h"
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

/* ---- the Lt library called directly -------------------------------------------------------- */

#define DIRECT_WORKSPACE_BYTES (32u << 20)

typedef struct direct {
  const xr_blaslt_t *lib;
  void *handle, *desc, *layouts[3], *preference; /* layouts: the library's A, B and D */
  unsigned char *heuristic;                       /* lib->k->heuristic_size bytes */
  const void *a, *b;
  void *d, *workspace;
  size_t workspace_size;
  float alpha, beta;
} direct_t;

static void direct_release(direct_t *g) {
  const xr_blaslt_functions_t *fn = &g->lib->fn;
  for (int i = 0; i < 3; i++)
    if (g->layouts[i]) fn->matrix_layout_destroy(g->layouts[i]);
  if (g->desc) fn->matmul_desc_destroy(g->desc);
  if (g->preference) fn->preference_destroy(g->preference);
  free(g->heuristic);
}

static xr_status_t direct_fail(const direct_t *g, const char *call, int result) {
  return xr_error(XR_DEVICE_ERROR, "%s%s: %s (%d)", g->lib->label, call,
                  xr_blaslt_status_name(g->lib, result), result);
}

static void *device_address(xr_hal_buffer_t *buffer) {
  void *base = NULL;
  size_t offset = 0;
  return xr_hal_buffer_native(buffer, &base, &offset) == XR_OK ? (char *)base + offset : NULL;
}

/* Row-major D[M, N] = A[M, K] B[K, N] (mm) or X[M, K] W[N, K]^T (linear) as the column-major
 * D^T = B^T A^T the library computes: its A is our B (or W, transposed), its B our A. */
static xr_status_t direct_prepare(direct_t *g, const shape_t *s, xr_dtype_t dtype,
                                  const xr_tensor_t *tensors, xr_hal_buffer_t *workspace) {
  const xr_blaslt_functions_t *fn = &g->lib->fn;
  const xr_blaslt_constants_t *k = g->lib->k;
  bool linear = !strcmp(s->op, "aten::linear");
  int type = dtype == XR_DTYPE_F32 ? k->r_32f : dtype == XR_DTYPE_F16 ? k->r_16f : k->r_16bf;
  int32_t transa = linear ? k->op_t : k->op_n, transb = k->op_n;
  uint64_t max_workspace = DIRECT_WORKSPACE_BYTES;
  int result = fn->matmul_desc_create(&g->desc, k->compute_32f, k->r_32f);
  if (result) return direct_fail(g, "MatmulDescCreate", result);
  if ((result = fn->matmul_desc_set_attribute(g->desc, k->desc_transa, &transa, sizeof transa)) ||
      (result = fn->matmul_desc_set_attribute(g->desc, k->desc_transb, &transb, sizeof transb)))
    return direct_fail(g, "MatmulDescSetAttribute", result);
  /* Stored shapes: B is [K, N] row-major (N x K column-major, ld N); W is [N, K] (K x N, ld K,
   * transposed by the op); A is [M, K] (K x M, ld K); D is [M, N] (N x M, ld N). */
  if ((result = linear ? fn->matrix_layout_create(&g->layouts[0], type, (uint64_t)s->K,
                                                  (uint64_t)s->N, s->K)
                       : fn->matrix_layout_create(&g->layouts[0], type, (uint64_t)s->N,
                                                  (uint64_t)s->K, s->N)) ||
      (result = fn->matrix_layout_create(&g->layouts[1], type, (uint64_t)s->K, (uint64_t)s->M,
                                         s->K)) ||
      (result = fn->matrix_layout_create(&g->layouts[2], type, (uint64_t)s->N, (uint64_t)s->M,
                                         s->N)))
    return direct_fail(g, "MatrixLayoutCreate", result);
  if ((result = fn->preference_create(&g->preference)) ||
      (result = fn->preference_set_attribute(g->preference, k->pref_max_workspace_bytes,
                                             &max_workspace, sizeof max_workspace)))
    return direct_fail(g, "MatmulPreference", result);
  g->heuristic = calloc(1, k->heuristic_size);
  if (!g->heuristic) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  int returned = 0, state = 0;
  result = fn->algo_get_heuristic(g->handle, g->desc, g->layouts[0], g->layouts[1], g->layouts[2],
                                  g->layouts[2], g->preference, 1, g->heuristic, &returned);
  memcpy(&state, g->heuristic + k->heuristic_state_offset, sizeof state);
  if (result || returned < 1 || state) {
    return xr_error(XR_UNIMPLEMENTED, "%sMatmulAlgoGetHeuristic: %s (%d), %d returned",
                    g->lib->label, xr_blaslt_status_name(g->lib, result ? result : state),
                    result ? result : state, returned);
  }
  memcpy(&g->workspace_size, g->heuristic + k->heuristic_workspace_offset, sizeof g->workspace_size);
  g->a = device_address(tensors[1].buffer);
  g->b = device_address(tensors[0].buffer);
  g->d = device_address(tensors[2].buffer);
  g->workspace = g->workspace_size ? device_address(workspace) : NULL;
  g->alpha = 1.0f;
  g->beta = 0.0f;
  if (!g->a || !g->b || !g->d) return xr_error(XR_INTERNAL, "no device address for a tensor");
  return XR_OK;
}

static xr_status_t direct_enqueue(void *context, xr_hal_stream_t *stream) {
  direct_t *g = context;
  void *native;
  xr_status_t st = xr_hal_stream_native(stream, &native); /* makes the device current */
  if (st != XR_OK) return st;
  int result = g->lib->fn.matmul(g->handle, g->desc, &g->alpha, g->a, g->layouts[0], g->b,
                                 g->layouts[1], &g->beta, g->d, g->layouts[2], g->d,
                                 g->layouts[2], g->heuristic, g->workspace, g->workspace_size,
                                 native);
  return result ? direct_fail(g, "Matmul", result) : XR_OK;
}

/* Seconds per execution with the library called directly, or < 0 with the reason. */
static double time_direct(const xr_blaslt_t *lib, void *handle, const shape_t *s,
                          xr_dtype_t dtype, const xr_tensor_t *tensors, xr_hal_buffer_t *workspace,
                          xr_hal_device_t *device, xr_hal_stream_t *stream, char *reason,
                          size_t reason_size) {
  if (!lib) {
    snprintf(reason, reason_size, "%s", "the Lt library is unavailable");
    return -1;
  }
  direct_t g = {.lib = lib, .handle = handle};
  double best = direct_prepare(&g, s, dtype, tensors, workspace) == XR_OK
                    ? op_timing_best_calls(direct_enqueue, &g, device, stream, 3, 0.1)
                    : -1;
  if (best < 0) snprintf(reason, reason_size, "%s", xr_last_error());
  direct_release(&g);
  return best;
}

static void print_rate(double flops, double seconds) {
  if (seconds > 0) printf(" %11.1f", flops / seconds * 1e-9);
  else printf(" %11s", "-");
}

static void print_ratio(double numerator, double denominator) {
  if (numerator > 0 && denominator > 0) printf(" %8.2f", numerator / denominator);
  else printf(" %8s", "-");
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
  /* One library handle and one workspace for the direct calls, made with the device current. */
  const xr_blaslt_t *lib = NULL;
  void *handle = NULL, *native = NULL;
  xr_hal_buffer_t *workspace = NULL;
  char lib_reason[512] = "";
  int created = -1;
  if (xr_blaslt_get(cuda ? XR_BLASLT_CUBLASLT : XR_BLASLT_HIPBLASLT, &lib) != XR_OK ||
      xr_hal_stream_native(stream, &native) != XR_OK ||
      xr_hal_buffer_alloc(device, DIRECT_WORKSPACE_BYTES, &workspace) != XR_OK) {
    snprintf(lib_reason, sizeof lib_reason, "%s", xr_last_error());
    lib = NULL;
  } else if ((created = lib->fn.create(&handle)) != 0) {
    snprintf(lib_reason, sizeof lib_reason, "%sCreate: %s (%d)", lib->label,
             xr_blaslt_status_name(lib, created), created);
    lib = NULL;
  }
  printf("%s (%s); %s\n", p.name, p.spec, lib ? lib->path : lib_reason);
  printf("%-13s %-6s %5s %5s %5s %11s %11s %11s %8s %8s\n", "op", "dtype", "M", "N", "K",
         "direct GF/s", "replay GF/s", "tiled GF/s", "rep/dir", "til/rep");
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
      char direct_reason[512] = "";
      double td = st == XR_OK ? time_direct(lib, handle, s, tensors[0].dtype, tensors, workspace,
                                            device, stream, direct_reason, sizeof direct_reason)
                              : -1;
      double tv = st == XR_OK ? time_impl(&plan, vendor, device, stream, tensors, vendor_reason,
                                          sizeof vendor_reason) : -1;
      double tt = st == XR_OK ? time_impl(&plan, tiled, device, stream, tensors, tiled_reason,
                                          sizeof tiled_reason) : -1;
      printf("%-13s %-6s %5lld %5lld %5lld", s->op, xr_dtype_name(tensors[0].dtype),
             (long long)s->M, (long long)s->N, (long long)s->K);
      print_rate(flops, td);
      print_rate(flops, tv);
      print_rate(flops, tt);
      print_ratio(td, tv); /* replay / direct in rate: direct time over replay time */
      print_ratio(tv, tt);
      printf("\n");
      if (td <= 0) printf("  direct: %s\n", direct_reason[0] ? direct_reason : lib_reason);
      if (tv <= 0) printf("  replay: %s\n", vendor_reason[0] ? vendor_reason : xr_last_error());
      if (tt <= 0) printf("  tiled: %s\n", tiled_reason[0] ? tiled_reason : xr_last_error());
      for (size_t i = 0; i < 3; i++) xr_hal_buffer_free(tensors[i].buffer);
      xr_kernel_plan_free(&plan);
      xr_bundle_destroy(bundle);
    }
  }
  xr_hal_buffer_free(workspace);
  xr_hal_stream_destroy(stream);
  xr_hal_device_destroy(device);
  return 0;
}
