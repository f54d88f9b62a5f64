/* The GEMM family on the vendors' Lt libraries: "cuda.cublaslt_matmul" (cuBLASLt) and
 * "hip.hipblaslt_matmul" (hipBLASLt), ahead of our tiled kernel (kernels/gemm_device.c).
 * The two APIs are one API under two prefixes (kernels/gpu/blaslt.h), so one implementation
 * serves both, on the HAL's own buffers and stream (xr_hal_buffer_native, xr_hal_stream_native).
 *
 *   supports()  loads the library (UNAVAILABLE with every path tried when absent), takes
 *               f32 / f16 / bf16 products of one dtype with fp32 accumulation, maps the
 *               problem onto a column-major strided-batched call (blas_layout.h) and asks the
 *               heuristic whether it has an algorithm for the shapes at all (pointers aligned
 *               to 256 bytes, as fresh allocations are); anything else is UNIMPLEMENTED with a
 *               sentence, and the tiled kernel takes it;
 *   prepare()   creates the descriptors for the real pointers and asks the heuristic for one
 *               algorithm at their real alignment (workspace up to 32 MiB, allocated with the
 *               HAL for what it needs). It declines (UNIMPLEMENTED: the registry hands the op to
 *               the tiled kernel, and the report says so) when the heuristic has nothing at that
 *               alignment, or when the bias is not 16-byte aligned: the alignment preferences
 *               cover A, B, C and D only, and a kernel reading a misaligned bias can fault
 *               ("misaligned address"), an error that ends the context for every later op;
 *   enqueue()   is one matmul call on the stream, no allocation;
 *   release()   destroys the descriptors and the workspace.
 * One library handle per device, created on first use and kept for the process. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/gpu/blas_layout.h"
#include "kernels/gpu/blaslt.h"

#define MAX_WORKSPACE_BYTES (32u << 20)
/* hipBLASLt 0.7 (ROCm 6.1) moved to hipDataType / hipblasComputeType_t, which we declare. */
#define HIPBLASLT_MIN_VERSION 700

/* ------------------------------------------------------------------------------------------ */
/* One handle per device                                                                      */

#define MAX_DEVICES 64

static struct {
  pthread_mutex_t lock;
  size_t count;
  struct {
    xr_blaslt_vendor_t vendor;
    char spec[32];
    void *handle;
    int version; /* hipBLASLt's; 0 for cuBLASLt */
  } entries[MAX_DEVICES];
} handles = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The device's handle, created with the device current (the library binds it to that device). */
static xr_status_t device_handle(const xr_blaslt_t *lib, xr_blaslt_vendor_t vendor,
                                 xr_hal_device_t *device, void **out_handle, int *out_version) {
  xr_hal_device_properties_t p;
  void *native;
  xr_status_t status = xr_hal_device_properties(device, &p);
  if (status == XR_OK) status = xr_hal_device_native(device, &native); /* makes it current */
  if (status != XR_OK) return status;
  pthread_mutex_lock(&handles.lock);
  for (size_t i = 0; i < handles.count; i++) {
    if (handles.entries[i].vendor == vendor && !strcmp(handles.entries[i].spec, p.spec)) {
      *out_handle = handles.entries[i].handle;
      *out_version = handles.entries[i].version;
      pthread_mutex_unlock(&handles.lock);
      return XR_OK;
    }
  }
  void *handle = NULL;
  int version = 0;
  int result = handles.count < MAX_DEVICES ? lib->fn.create(&handle) : -1;
  if (result == 0 && lib->hipblaslt_get_version) result = lib->hipblaslt_get_version(handle, &version);
  if (result == 0) {
    handles.entries[handles.count].vendor = vendor;
    snprintf(handles.entries[handles.count].spec, sizeof handles.entries[0].spec, "%s", p.spec);
    handles.entries[handles.count].handle = handle;
    handles.entries[handles.count].version = version;
    handles.count++;
  }
  pthread_mutex_unlock(&handles.lock);
  if (result != 0) {
    return xr_error(XR_UNAVAILABLE, "%s: %s (%s): creating a handle: %s (%d)", p.spec, lib->label,
                    lib->path, result < 0 ? "too many devices" : xr_blaslt_status_name(lib, result),
                    result);
  }
  *out_handle = handle;
  *out_version = version;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* supports                                                                                   */

static bool lt_dtype(xr_dtype_t dtype) {
  return dtype == XR_DTYPE_F32 || dtype == XR_DTYPE_F16 || dtype == XR_DTYPE_BF16;
}

static xr_status_t map_problem(const xr_op_plan_t *plan, xr_blaslt_vendor_t vendor,
                               xr_blas_gemm_t *out) {
  const xr_gemm_problem_t *p = plan->problem;
  if (p->block) {
    /* cuBLASLt's block-scaled matmul (CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 / VEC16_UE4M3,
     * sm_100+) and hipBLASLt's (gfx950) want their own scale layouts and are not wired. */
    return xr_error(XR_UNIMPLEMENTED, "%s: block-scaled (%s, %s scales per %d) products are not "
                    "mapped onto the Lt libraries (their block-scaled matmul needs sm_100+ or "
                    "gfx950 and swizzled scales); gpu.gemm_tiled runs them", plan->op->name,
                    xr_dtype_name(p->a_dtype), xr_dtype_name(p->scale_dtype), p->block);
  }
  if (!lt_dtype(p->a_dtype) || p->b_dtype != p->a_dtype || p->out_dtype != p->a_dtype) {
    return xr_error(XR_UNIMPLEMENTED, "%s: %s x %s -> %s: the Lt path takes f32, f16 or bf16 "
                    "operands of one dtype", plan->op->name, xr_dtype_name(p->a_dtype),
                    xr_dtype_name(p->b_dtype), xr_dtype_name(p->out_dtype));
  }
  if (p->scale_a.index >= 0 || p->scale_b.index >= 0 || p->scale_result >= 0) {
    return xr_error(XR_UNIMPLEMENTED, "%s: scaled (fp8) products are not mapped onto the Lt "
                    "libraries yet", plan->op->name);
  }
  if (p->c.index >= 0 && plan->inputs[p->c.index]->dtype != p->out_dtype) {
    return xr_error(XR_UNIMPLEMENTED, "%s: the added tensor is %s, the output %s", plan->op->name,
                    xr_dtype_name(plan->inputs[p->c.index]->dtype), xr_dtype_name(p->out_dtype));
  }
  /* cuBLASLt repeats the bias over strided batches (BIAS_BATCH_STRIDE defaults to 0); what
   * hipBLASLt does there is not documented, so it gets single-batch biases only. */
  xr_blas_limits_t limits = {.batched_bias = vendor == XR_BLASLT_CUBLASLT};
  return xr_blas_gemm_map(plan, &limits, out);
}

/* ------------------------------------------------------------------------------------------ */
/* prepare / enqueue / release                                                                */

enum { LAYOUT_A, LAYOUT_B, LAYOUT_C, LAYOUT_D, LAYOUTS };

typedef struct blaslt_state {
  const xr_blaslt_t *lib;
  const char *op;
  void *handle, *desc, *preference;
  void *layouts[LAYOUTS];
  union {
    xr_cublaslt_heuristic_t cuda;
    xr_hipblaslt_heuristic_t hip;
  } heuristic; /* the chosen algorithm is its first member */
  xr_hal_buffer_t *workspace;
  void *workspace_pointer;
  size_t workspace_size;
  const void *a, *b, *c;
  void *d;
  float alpha, beta;
  char algorithm[128]; /* what the heuristic chose, for reports */
} blaslt_state_t;

static void destroy_descriptors(blaslt_state_t *s) {
  for (int i = 0; i < LAYOUTS; i++)
    if (s->layouts[i]) s->lib->fn.matrix_layout_destroy(s->layouts[i]);
  if (s->desc) s->lib->fn.matmul_desc_destroy(s->desc);
  if (s->preference) s->lib->fn.preference_destroy(s->preference);
}

static void blaslt_release(void *state) {
  blaslt_state_t *s = state;
  if (!s) return;
  destroy_descriptors(s);
  xr_hal_buffer_free(s->workspace);
  free(s);
}

static xr_status_t lt_fail(const blaslt_state_t *s, const char *call, int result) {
  return xr_error(XR_DEVICE_ERROR, "%s: %s %s: %s (%d)", s->op, s->lib->label, call,
                  xr_blaslt_status_name(s->lib, result), result);
}

/* The device address of a tensor's first element. */
static xr_status_t device_pointer(const xr_tensor_t *t, void **out) {
  void *base;
  size_t offset;
  xr_status_t status = xr_hal_buffer_native(t->buffer, &base, &offset);
  if (status != XR_OK) return status;
  *out = (char *)base + offset + (size_t)t->offset * xr_dtype_size(t->dtype);
  return XR_OK;
}

/* The largest power of two, up to 256, dividing the address (cuBLASLt's alignment preference). */
static uint32_t alignment_of(const void *pointer) {
  uintptr_t address = (uintptr_t)pointer;
  uint32_t alignment = 1;
  while (alignment < 256 && address % (alignment * 2) == 0) alignment *= 2;
  return alignment;
}

static int lt_type(const xr_blaslt_constants_t *k, xr_dtype_t dtype) {
  return dtype == XR_DTYPE_F32 ? k->r_32f : dtype == XR_DTYPE_F16 ? k->r_16f : k->r_16bf;
}

static xr_status_t create_layout(blaslt_state_t *s, int which, const xr_blas_matrix_t *m,
                                 int type, int64_t batch) {
  const xr_blaslt_functions_t *fn = &s->lib->fn;
  int result = fn->matrix_layout_create(&s->layouts[which], type, (uint64_t)m->rows,
                                        (uint64_t)m->cols, m->ld);
  if (result != 0) return lt_fail(s, "MatrixLayoutCreate", result);
  if (batch > 1) {
    int32_t count = (int32_t)batch;
    int64_t stride = m->batch_stride;
    result = fn->matrix_layout_set_attribute(s->layouts[which], s->lib->k->layout_batch_count,
                                             &count, sizeof count);
    if (result == 0) {
      result = fn->matrix_layout_set_attribute(
          s->layouts[which], s->lib->k->layout_strided_batch_offset, &stride, sizeof stride);
    }
    if (result != 0) return lt_fail(s, "MatrixLayoutSetAttribute", result);
  }
  return XR_OK;
}

/* The heuristic's choice in words: cuBLASLt's algorithm id, tile, stages and split-K (its
 * config attributes); hipBLASLt's solution index, the first int of its algo's data (what
 * hipblaslt_ext::getIndexFromAlgo reads). */
static void describe_algorithm(blaslt_state_t *s) {
  if (s->lib->hipblaslt_get_version) {
    int32_t solution;
    memcpy(&solution, s->heuristic.hip.algo.data, sizeof solution);
    snprintf(s->algorithm, sizeof s->algorithm, "hipBLASLt solution %d (heuristic's first)",
             (int)solution);
    return;
  }
  int (*get)(const void *, int, void *, size_t, size_t *) = s->lib->fn.algo_config_get_attribute;
  int32_t id = -1, splitk = -1;
  uint32_t tile = 0, stages = 0;
  size_t written;
  if (!get || get(&s->heuristic.cuda.algo, XR_CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written)) {
    snprintf(s->algorithm, sizeof s->algorithm, "cuBLASLt heuristic's first (not described)");
    return;
  }
  get(&s->heuristic.cuda.algo, XR_CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &written);
  get(&s->heuristic.cuda.algo, XR_CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages,
      &written);
  get(&s->heuristic.cuda.algo, XR_CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk,
      &written);
  snprintf(s->algorithm, sizeof s->algorithm,
           "cuBLASLt algo %d, tile %u, stages %u, split-K %d (heuristic's first)", (int)id,
           (unsigned)tile, (unsigned)stages, (int)splitk);
}

/* Descriptors, layouts and preference for the pointers in `s`, then one algorithm from the
 * heuristic (UNIMPLEMENTED when it has none) and the workspace size it needs. */
static xr_status_t configure(blaslt_state_t *s, const xr_op_plan_t *plan,
                             const xr_blas_gemm_t *g) {
  const xr_blaslt_functions_t *fn = &s->lib->fn;
  const xr_blaslt_constants_t *k = s->lib->k;
  const xr_gemm_problem_t *p = plan->problem;
  int type = lt_type(k, p->out_dtype);
  int result = fn->matmul_desc_create(&s->desc, k->compute_32f, k->r_32f);
  if (result != 0) return lt_fail(s, "MatmulDescCreate", result);
  if (g->bias && alignment_of(s->c) < 16) {
    return xr_error(XR_UNIMPLEMENTED, "%s: the bias at %p is %u-byte aligned; %s's epilogue "
                    "needs 16 (its alignment preferences do not cover the bias)", s->op,
                    s->c, alignment_of(s->c), s->lib->label);
  }
  int32_t transa = g->a.transposed ? k->op_t : k->op_n;
  int32_t transb = g->b.transposed ? k->op_t : k->op_n;
  result = fn->matmul_desc_set_attribute(s->desc, k->desc_transa, &transa, sizeof transa);
  if (result == 0)
    result = fn->matmul_desc_set_attribute(s->desc, k->desc_transb, &transb, sizeof transb);
  if (result == 0 && g->bias) {
    uint32_t epilogue = (uint32_t)k->epilogue_bias;
    result = fn->matmul_desc_set_attribute(s->desc, k->desc_epilogue, &epilogue, sizeof epilogue);
    if (result == 0)
      result = fn->matmul_desc_set_attribute(s->desc, k->desc_bias_pointer, &s->c, sizeof s->c);
    if (result == 0 && k->desc_bias_data_type >= 0) {
      int32_t bias_type = type;
      result = fn->matmul_desc_set_attribute(s->desc, k->desc_bias_data_type, &bias_type,
                                             sizeof bias_type);
    }
  }
  if (result != 0) return lt_fail(s, "MatmulDescSetAttribute", result);
  xr_status_t status = create_layout(s, LAYOUT_A, &g->a, type, g->batch);
  if (status == XR_OK) status = create_layout(s, LAYOUT_B, &g->b, type, g->batch);
  /* Without a C matrix, beta is 0 and the library never reads C: D's layout stands in. */
  if (status == XR_OK) status = create_layout(s, LAYOUT_C, g->has_c ? &g->c : &g->d, type, g->batch);
  if (status == XR_OK) status = create_layout(s, LAYOUT_D, &g->d, type, g->batch);
  if (status != XR_OK) return status;

  result = fn->preference_create(&s->preference);
  if (result != 0) return lt_fail(s, "MatmulPreferenceCreate", result);
  uint64_t max_workspace = MAX_WORKSPACE_BYTES;
  result = fn->preference_set_attribute(s->preference, k->pref_max_workspace_bytes,
                                        &max_workspace, sizeof max_workspace);
  /* Views start anywhere: tell cuBLASLt how aligned each pointer really is (default 256). */
  const void *pointers[4] = {s->a, s->b, g->has_c ? s->c : s->d, s->d};
  for (int i = 0; i < 4 && result == 0; i++) {
    if (k->pref_min_alignment[i] < 0) continue;
    uint32_t alignment = alignment_of(pointers[i]);
    result = fn->preference_set_attribute(s->preference, k->pref_min_alignment[i], &alignment,
                                          sizeof alignment);
  }
  if (result != 0) return lt_fail(s, "MatmulPreferenceSetAttribute", result);

  int returned = 0;
  memset(&s->heuristic, 0, sizeof s->heuristic);
  result = fn->algo_get_heuristic(s->handle, s->desc, s->layouts[LAYOUT_A], s->layouts[LAYOUT_B],
                                  s->layouts[LAYOUT_C], s->layouts[LAYOUT_D], s->preference, 1,
                                  &s->heuristic, &returned);
  const char *bytes = (const char *)&s->heuristic;
  int state;
  memcpy(&state, bytes + k->heuristic_state_offset, sizeof state);
  if (result != 0 || returned < 1 || state != 0) {
    int code = result != 0 ? result : state;
    return xr_error(XR_UNIMPLEMENTED, "%s: %s has no algorithm for %lld x %lld x %lld (batch %lld): "
                    "MatmulAlgoGetHeuristic: %s (%d), %d returned", s->op, s->lib->label,
                    (long long)g->m, (long long)g->n, (long long)g->k, (long long)g->batch,
                    xr_blaslt_status_name(s->lib, code), code, returned);
  }
  memcpy(&s->workspace_size, bytes + k->heuristic_workspace_offset, sizeof s->workspace_size);
  describe_algorithm(s);
  return XR_OK;
}

static xr_status_t allocate_workspace(blaslt_state_t *s, xr_hal_device_t *device) {
  if (s->workspace_size == 0) return XR_OK;
  void *base;
  size_t offset;
  xr_status_t status = xr_hal_buffer_alloc(device, s->workspace_size, &s->workspace);
  if (status == XR_OK) status = xr_hal_buffer_native(s->workspace, &base, &offset);
  if (status != XR_OK) return xr_error_prefix(status, "%s: workspace: ", s->op);
  s->workspace_pointer = (char *)base + offset;
  return XR_OK;
}

static xr_status_t blaslt_supports(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                   xr_blaslt_vendor_t vendor) {
  xr_blas_gemm_t g;
  /* Block-scaled products are declined with their reason whether the library loads or not. */
  if (((const xr_gemm_problem_t *)plan->problem)->block) return map_problem(plan, vendor, &g);
  const xr_blaslt_t *lib;
  xr_status_t status = xr_blaslt_get(vendor, &lib);
  if (status != XR_OK) return status;
  if ((status = map_problem(plan, vendor, &g)) != XR_OK) return status;
  void *handle;
  int version;
  if ((status = device_handle(lib, vendor, device, &handle, &version)) != XR_OK) return status;
  if (vendor == XR_BLASLT_HIPBLASLT && version < HIPBLASLT_MIN_VERSION) {
    return xr_error(XR_UNIMPLEMENTED, "%s: hipBLASLt %d.%d.%d (%s) predates the hipDataType API "
                    "of 0.7 (ROCm 6.1) that we call", plan->op->name, version / 100000,
                    version / 100 % 1000, version % 100, lib->path);
  }
  /* Ask the heuristic here whether it has an algorithm for these shapes at all, with pointers
   * as aligned as fresh allocations (the addresses are never dereferenced); prepare asks again
   * at the real alignment of the views. */
  blaslt_state_t probe = {.lib = lib, .op = plan->op->name, .handle = handle};
  const void *aligned = (const void *)(uintptr_t)0x100000;
  probe.a = probe.b = probe.c = aligned;
  probe.d = (void *)(uintptr_t)aligned;
  status = configure(&probe, plan, &g);
  destroy_descriptors(&probe);
  return status;
}

static xr_status_t blaslt_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                  const xr_tensor_t *tensors, xr_blaslt_vendor_t vendor,
                                  void **out_state) {
  const xr_gemm_problem_t *p = plan->problem;
  blaslt_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  s->op = plan->op->name;
  xr_blas_gemm_t g;
  int version;
  xr_status_t status = xr_blaslt_get(vendor, &s->lib);
  if (status == XR_OK) status = map_problem(plan, vendor, &g);
  if (status == XR_OK) status = device_handle(s->lib, vendor, device, &s->handle, &version);
  void *a = NULL, *b = NULL, *c = NULL, *d = NULL;
  if (status == XR_OK) status = device_pointer(&tensors[p->a.index], &a);
  if (status == XR_OK) status = device_pointer(&tensors[p->b.index], &b);
  if (status == XR_OK && p->c.index >= 0) status = device_pointer(&tensors[p->c.index], &c);
  if (status == XR_OK) status = device_pointer(&tensors[p->out.index], &d);
  if (status != XR_OK) {
    free(s);
    return xr_error_prefix(status, "%s: ", plan->op->name);
  }
  s->a = g.swapped ? b : a;
  s->b = g.swapped ? a : b;
  s->c = c ? c : d;
  s->d = d;
  s->alpha = g.alpha;
  s->beta = g.beta;
  if ((status = configure(s, plan, &g)) != XR_OK ||
      (status = allocate_workspace(s, device)) != XR_OK) {
    blaslt_release(s);
    return status;
  }
  *out_state = s;
  return XR_OK;
}

static const char *blaslt_algorithm(void *state) { return ((blaslt_state_t *)state)->algorithm; }

static xr_status_t blaslt_enqueue(void *state, xr_hal_stream_t *stream) {
  blaslt_state_t *s = state;
  void *native;
  xr_status_t status = xr_hal_stream_native(stream, &native); /* makes the device current */
  if (status != XR_OK) return xr_error_prefix(status, "%s: ", s->op);
  int result = s->lib->fn.matmul(s->handle, s->desc, &s->alpha, s->a, s->layouts[LAYOUT_A], s->b,
                                 s->layouts[LAYOUT_B], &s->beta, s->c, s->layouts[LAYOUT_C], s->d,
                                 s->layouts[LAYOUT_D], &s->heuristic, s->workspace_pointer,
                                 s->workspace_size, native);
  return result == 0 ? XR_OK : lt_fail(s, "Matmul", result);
}

static xr_status_t cublaslt_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  return blaslt_supports(plan, device, XR_BLASLT_CUBLASLT);
}
static xr_status_t cublaslt_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                    const xr_tensor_t *tensors, void **out_state) {
  return blaslt_prepare(plan, device, tensors, XR_BLASLT_CUBLASLT, out_state);
}
static xr_status_t hipblaslt_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  return blaslt_supports(plan, device, XR_BLASLT_HIPBLASLT);
}
static xr_status_t hipblaslt_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                     const xr_tensor_t *tensors, void **out_state) {
  return blaslt_prepare(plan, device, tensors, XR_BLASLT_HIPBLASLT, out_state);
}

const xr_kernel_impl_t xr_gemm_cublaslt_impl = {
    .name = "cuda.cublaslt_matmul",
    .driver = "cuda",
    .supports = cublaslt_supports,
    .prepare = cublaslt_prepare,
    .enqueue = blaslt_enqueue,
    .release = blaslt_release,
    .algorithm = blaslt_algorithm,
};

const xr_kernel_impl_t xr_gemm_hipblaslt_impl = {
    .name = "hip.hipblaslt_matmul",
    .driver = "hip",
    .supports = hipblaslt_supports,
    .prepare = hipblaslt_prepare,
    .enqueue = blaslt_enqueue,
    .release = blaslt_release,
    .algorithm = blaslt_algorithm,
};
