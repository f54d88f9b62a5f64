/* The attention families on cuda and hip devices (the GEMM pattern of docs/gpu.md), one
 * implementation each for both drivers:
 *   attention       kernels/gpu/attention.cu        "gpu.flash_attention"
 *   paged_attention kernels/gpu/paged_attention.cu  "gpu.paged_attention"
 *   kv_cache        kernels/gpu/kv_cache.cu         "gpu.reshape_and_cache"
 * The first two run one kernel (kernels/gpu/attention_kernel.h) over kernels/attention.h's
 * problem, as kernels/opencl/attention_opencl.c does, plus the partition reduction of
 * paged_attention_v2. prepare() builds the source (cached on disk), fills the by-value parameter
 * block and the dispatches; enqueue() zeroes the outputs the ops never fill and launches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/gpu/attention_params.h"
#include "kernels/gpu/sources.h"

/* Largest grid dimension y/z on both vendors (x allows 2^31 - 1). */
#define MAX_GRID_YZ 65535
#define MAX_GRID_X 0x7fffffffLL

static bool is_float(xr_dtype_t d) { return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16; }

/* Kernel-name suffix of a storage type. */
static const char *suffix(xr_dtype_t d) {
  switch (d) {
    case XR_DTYPE_F32: return "f32";
    case XR_DTYPE_F16: return "f16";
    case XR_DTYPE_BF16: return "bf16";
    case XR_DTYPE_F8E4M3FN: return "f8e4m3fn";
    case XR_DTYPE_F8E5M2: return "f8e5m2";
    case XR_DTYPE_F8E4M3FNUZ: return "f8e4m3fnuz";
    default: return "f8e5m2fnuz";
  }
}

static long long fp8_format(xr_dtype_t d) {
  return d == XR_DTYPE_F8E5M2 ? XR_ATTN_GPU_F8E5M2
         : d == XR_DTYPE_F8E4M3FNUZ ? XR_ATTN_GPU_F8E4M3FNUZ
         : d == XR_DTYPE_F8E5M2FNUZ ? XR_ATTN_GPU_F8E5M2FNUZ
                                    : XR_ATTN_GPU_F8E4M3FN;
}

/* Element kinds of the run-time typed kernels' queries, outputs and float caches; -1: none. */
static long long elem_of(xr_dtype_t d) {
  if (xr_dtype_is_fp8(d)) return XR_ATTN_GPU_ELEM_FP8;
  return is_float(d) ? (d == XR_DTYPE_F32 ? XR_ATTN_GPU_ELEM_F32 : d == XR_DTYPE_F16 ? XR_ATTN_GPU_ELEM_F16
                                                                                    : XR_ATTN_GPU_ELEM_BF16)
                     : -1;
}

/* Whether the typed kernels (xr_attention_<q>[_fp8]: queries and outputs of one float type, keys
 * of that type or an fp8 cache) take the problem; otherwise the run-time typed ones of
 * paged_attention.cu (xr_attention_any[_fp8]) do: fp8 queries, fp8 outputs with their scale. */
static bool typed_kernels(const xr_attn_problem_t *a, bool fp8_cache) {
  return is_float(a->q_dtype) && a->o_dtype == a->q_dtype && a->p[XR_AP_o_scale_off] < 0 &&
         (a->kv_dtype == a->q_dtype || (fp8_cache && xr_dtype_is_fp8(a->kv_dtype)));
}

/* Mask and ALiBi element kinds the kernel reads; -1: none of them. */
static long long elem_kind(xr_dtype_t d) {
  switch (d) {
    case XR_DTYPE_F32: return XR_ATTN_GPU_ELEM_F32;
    case XR_DTYPE_F16: return XR_ATTN_GPU_ELEM_F16;
    case XR_DTYPE_BF16: return XR_ATTN_GPU_ELEM_BF16;
    case XR_DTYPE_BOOL:
    case XR_DTYPE_U8: return XR_ATTN_GPU_ELEM_BYTE;
    default: return -1;
  }
}

/* The device's warp width, if the kernels can use it: a whole number of warps per block and at
 * least 32 lanes (each lane holds up to DMAX / 32 dimensions). */
static xr_status_t warp_width(const char *impl, xr_hal_device_t *device, uint32_t *out) {
  xr_hal_device_properties_t properties;
  xr_status_t st = xr_hal_device_properties(device, &properties);
  if (st != XR_OK) return st;
  uint32_t w = properties.simd_width;
  if (w < 32 || w > XR_ATTN_GPU_MAX_THREADS || XR_ATTN_GPU_MAX_THREADS % w)
    return xr_error(XR_UNIMPLEMENTED, "%s: a warp of %u lanes (the kernels take 32 to %d, dividing %d)", impl, w,
                    XR_ATTN_GPU_MAX_THREADS, XR_ATTN_GPU_MAX_THREADS);
  *out = w;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* attention and paged attention                                                              */

typedef struct attn_gpu_state {
  xr_hal_executable_t *executable;
  xr_hal_kernel_t *main, *combine;
  xr_attn_gpu_params_t params;
  xr_hal_kernel_arg_t args[19], cargs[9];
  xr_hal_dispatch_t dispatch, combine_dispatch;
  xr_hal_buffer_t *zero[2];
  int zero_count;
  bool run, partitioned;
} attn_gpu_state_t;

/* Rows (query position x head of a kv head) per kv head and sequence. */
static int64_t attn_rows(const int64_t *p) {
  return (p[XR_AP_max_q] > p[XR_AP_lse_rows] ? p[XR_AP_max_q] : p[XR_AP_lse_rows]) * p[XR_AP_group];
}

static xr_status_t attn_gpu_supports_common(const xr_op_plan_t *plan, xr_hal_device_t *device, const char *impl,
                                            bool fp8_cache) {
  const xr_attn_problem_t *a = plan->problem;
  const int64_t *p = a->p;
  xr_status_t st = xr_attn_supported(plan);
  if (st != XR_OK) return st;
  if (p[XR_AP_head_dim] > XR_ATTN_GPU_DMAX || p[XR_AP_head_dim_v] > XR_ATTN_GPU_DMAX)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: head size %lld / %lld above %d", impl, plan->op->name,
                    (long long)p[XR_AP_head_dim], (long long)p[XR_AP_head_dim_v], XR_ATTN_GPU_DMAX);
  if (!typed_kernels(a, fp8_cache)) {
    if (!fp8_cache)
      return xr_error(XR_UNIMPLEMENTED, "%s: %s: %s queries, %s outputs over %s keys and values: the kernels take "
                      "f32, f16 or bf16 queries and outputs over keys of the same type", impl, plan->op->name,
                      xr_dtype_name(a->q_dtype), xr_dtype_name(a->o_dtype), xr_dtype_name(a->kv_dtype));
    if (elem_of(a->q_dtype) < 0 || elem_of(a->o_dtype) < 0 || elem_of(a->kv_dtype) < 0 || p[XR_AP_part_size] > 0)
      return xr_error(XR_UNIMPLEMENTED, "%s: %s: %s queries, %s outputs over %s keys and values%s: the kernels "
                      "take f32, f16, bf16 or fp8 queries and outputs over float or fp8 keys, unpartitioned", impl,
                      plan->op->name, xr_dtype_name(a->q_dtype), xr_dtype_name(a->o_dtype),
                      xr_dtype_name(a->kv_dtype), p[XR_AP_part_size] > 0 ? " in partitions" : "");
  }
  if (p[XR_AP_alibi_off] >= 0 && (elem_kind((xr_dtype_t)p[XR_AP_alibi_dtype]) < 0 ||
                                  elem_kind((xr_dtype_t)p[XR_AP_alibi_dtype]) == XR_ATTN_GPU_ELEM_BYTE))
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: %s ALiBi slopes (the kernels read f32, f16, bf16)", impl,
                    plan->op->name, xr_dtype_name((xr_dtype_t)p[XR_AP_alibi_dtype]));
  if (p[XR_AP_mask_kind] != XR_ATTN_MASK_NONE && elem_kind((xr_dtype_t)p[XR_AP_mask_dtype]) < 0)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: a %s mask (the kernels read bool, uint8, f32, f16, bf16)", impl,
                    plan->op->name, xr_dtype_name((xr_dtype_t)p[XR_AP_mask_dtype]));
  uint32_t warp;
  if ((st = warp_width(impl, device, &warp)) != XR_OK) return st;
  int64_t parts = p[XR_AP_part_size] > 0 ? p[XR_AP_part_count] : 1;
  if (attn_rows(p) > MAX_GRID_X || parts > MAX_GRID_YZ || p[XR_AP_heads] > MAX_GRID_YZ)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: %lld query rows per kv head, %lld heads, %lld partitions exceed "
                    "the kernels' grid", impl, plan->op->name, (long long)attn_rows(p), (long long)p[XR_AP_heads],
                    (long long)parts);
  return XR_OK;
}

static xr_status_t attn_gpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  return attn_gpu_supports_common(plan, device, "flash_attention (gpu)", false);
}

static xr_status_t paged_gpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  return attn_gpu_supports_common(plan, device, "paged_attention (gpu)", true);
}

static void attn_gpu_release(void *state) {
  attn_gpu_state_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->executable);
  free(s);
}

static void attn_fill_params(const xr_attn_problem_t *a, xr_attn_gpu_params_t *q) {
  const int64_t *p = a->p;
#define XR_ATTN_GPU_COPY(name) q->name = p[XR_AP_##name];
  XR_ATTN_GPU_FIELDS(XR_ATTN_GPU_COPY)
#undef XR_ATTN_GPU_COPY
  q->alibi_elem = p[XR_AP_alibi_off] >= 0 ? elem_kind((xr_dtype_t)p[XR_AP_alibi_dtype]) : 0;
  q->mask_elem = p[XR_AP_mask_kind] != XR_ATTN_MASK_NONE ? elem_kind((xr_dtype_t)p[XR_AP_mask_dtype]) : 0;
  q->fp8_format = fp8_format(a->kv_dtype);
  q->q_elem = elem_of(a->q_dtype), q->q_fp8 = fp8_format(a->q_dtype);
  q->o_elem = elem_of(a->o_dtype), q->o_fp8 = fp8_format(a->o_dtype);
  q->kv_elem = xr_dtype_is_fp8(a->kv_dtype) ? 0 : elem_of(a->kv_dtype);
  q->q_scale = xr_dtype_is_fp8(a->q_dtype) ? xr_attn_float(a, XR_AP_q_scale_bits) : 1.0f;
  q->o_max = xr_attn_fp8_max(a->o_dtype);
  q->scale = xr_attn_float(a, XR_AP_scale_bits);
  q->softcap = xr_attn_float(a, XR_AP_softcap_bits);
  q->empty_lse = xr_attn_float(a, XR_AP_empty_lse_bits);
  q->k_scale = xr_attn_float(a, XR_AP_k_scale_bits);
  q->v_scale = xr_attn_float(a, XR_AP_v_scale_bits);
}

static xr_status_t attn_gpu_prepare_source(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                           const xr_tensor_t *tensors, const char *source, void **out_state) {
  const xr_attn_problem_t *a = plan->problem;
  const int64_t *p = a->p;
  attn_gpu_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  attn_fill_params(a, &s->params);
  for (int i = 0; i < a->zero_count; i++) s->zero[s->zero_count++] = tensors[a->zero_outputs[i]].buffer;
  int64_t rows = attn_rows(p), items = p[XR_AP_batch] * p[XR_AP_kv_heads];
  int64_t parts = p[XR_AP_part_size] > 0 ? p[XR_AP_part_count] : 1;
  s->partitioned = p[XR_AP_part_size] > 0;
  s->run = rows > 0 && items > 0 && parts > 0;
  if (!s->run) {
    *out_state = s;
    return XR_OK;
  }

  uint32_t warp = 0;
  xr_status_t st = warp_width(source, device, &warp);
  if (st == XR_OK) st = xr_gpu_build(device, source, NULL, &s->executable);
  char name[64];
  bool typed = typed_kernels(a, xr_dtype_is_fp8(a->kv_dtype));
  snprintf(name, sizeof name, "xr_attention_%s%s", typed ? suffix(a->q_dtype) : "any",
           xr_dtype_is_fp8(a->kv_dtype) ? "_fp8" : "");
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->executable, name, &s->main);
  if (st == XR_OK && s->partitioned) {
    snprintf(name, sizeof name, "xr_attention_combine_%s", suffix(a->q_dtype));
    st = xr_hal_kernel_lookup(s->executable, name, &s->combine);
  }
  if (st != XR_OK) {
    attn_gpu_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }

  /* Absent tensors are never read; any buffer of the device stands in for them. */
  xr_hal_buffer_t *buf[XR_AT_COUNT];
  for (int r = 0; r < XR_AT_COUNT; r++) buf[r] = tensors[a->t[r] >= 0 ? a->t[r] : a->t[XR_AT_OUT]].buffer;
  static const int order[17] = {XR_AT_Q,       XR_AT_K,       XR_AT_V,        XR_AT_OUT,        XR_AT_LSE,
                                XR_AT_CU_Q,    XR_AT_CU_K,    XR_AT_LENS,     XR_AT_TABLE,      XR_AT_INDPTR,
                                XR_AT_ALIBI,   XR_AT_MASK,    XR_AT_K_SCALE,  XR_AT_V_SCALE,    XR_AT_EXP_SUMS,
                                XR_AT_MAX_LOGITS, XR_AT_TMP_OUT};
  for (int i = 0; i < 17; i++) s->args[i] = xr_hal_arg_buffer(buf[order[i]]);
  int n_args = 17;
  if (!typed) s->args[n_args++] = xr_hal_arg_buffer(buf[XR_AT_O_SCALE]); /* the run-time typed kernels' */
  s->args[n_args++] = xr_hal_arg_bytes(&s->params, sizeof s->params);
  /* One warp per row; up to MAX_THREADS / warp rows share a block's key and value tiles. */
  int64_t rows_per_block = XR_ATTN_GPU_MAX_THREADS / warp;
  if (rows < rows_per_block) rows_per_block = rows;
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {(uint32_t)((rows + rows_per_block - 1) / rows_per_block),
               (uint32_t)(items > MAX_GRID_YZ ? MAX_GRID_YZ : items), (uint32_t)parts},
      .block = {(uint32_t)(rows_per_block * warp), 1, 1},
      .shared_memory_bytes =
          (uint32_t)(sizeof(float) * XR_ATTN_GPU_BK * (size_t)(p[XR_AP_head_dim] + p[XR_AP_head_dim_v])),
      .args = s->args,
      .arg_count = (size_t)n_args};
  static const int combine_order[8] = {XR_AT_CU_Q,     XR_AT_CU_K,       XR_AT_LENS,   XR_AT_INDPTR,
                                       XR_AT_OUT,      XR_AT_EXP_SUMS,   XR_AT_MAX_LOGITS, XR_AT_TMP_OUT};
  for (int i = 0; i < 8; i++) s->cargs[i] = xr_hal_arg_buffer(buf[combine_order[i]]);
  s->cargs[8] = xr_hal_arg_bytes(&s->params, sizeof s->params);
  s->combine_dispatch = (xr_hal_dispatch_t){
      .grid = {(uint32_t)((p[XR_AP_head_dim_v] + XR_ATTN_GPU_COMBINE_THREADS - 1) / XR_ATTN_GPU_COMBINE_THREADS),
               (uint32_t)p[XR_AP_heads],
               (uint32_t)(p[XR_AP_batch] > MAX_GRID_YZ ? MAX_GRID_YZ : p[XR_AP_batch])},
      .block = {XR_ATTN_GPU_COMBINE_THREADS, 1, 1},
      .args = s->cargs,
      .arg_count = 9};
  *out_state = s;
  return XR_OK;
}

static xr_status_t attn_gpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                                    void **out_state) {
  return attn_gpu_prepare_source(plan, device, tensors, "attention.cu", out_state);
}

static xr_status_t paged_gpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                                     void **out_state) {
  return attn_gpu_prepare_source(plan, device, tensors, "paged_attention.cu", out_state);
}

static xr_status_t attn_gpu_enqueue(void *state, xr_hal_stream_t *stream) {
  attn_gpu_state_t *s = state;
  uint8_t zero = 0;
  xr_status_t st = XR_OK;
  for (int i = 0; i < s->zero_count && st == XR_OK; i++)
    if (xr_hal_buffer_size(s->zero[i])) st = xr_hal_stream_fill(stream, s->zero[i], 0, xr_hal_buffer_size(s->zero[i]), &zero, 1);
  if (st == XR_OK && s->run) st = xr_hal_stream_dispatch(stream, s->main, &s->dispatch);
  if (st == XR_OK && s->run && s->partitioned) st = xr_hal_stream_dispatch(stream, s->combine, &s->combine_dispatch);
  return st;
}

const xr_kernel_impl_t xr_attn_gpu_impl = {
    .name = "gpu.flash_attention",
    .driver = "gpu",
    .supports = attn_gpu_supports,
    .prepare = attn_gpu_prepare,
    .enqueue = attn_gpu_enqueue,
    .release = attn_gpu_release,
};

const xr_kernel_impl_t xr_paged_attn_gpu_impl = {
    .name = "gpu.paged_attention",
    .driver = "gpu",
    .supports = paged_gpu_supports,
    .prepare = paged_gpu_prepare,
    .enqueue = attn_gpu_enqueue,
    .release = attn_gpu_release,
};

/* ------------------------------------------------------------------------------------------ */
/* reshape_and_cache                                                                           */

typedef struct cache_gpu_state {
  xr_hal_executable_t *executable;
  xr_hal_kernel_t *kernel;
  xr_cache_gpu_params_t params;
  xr_hal_kernel_arg_t args[8];
  xr_hal_dispatch_t dispatch;
  bool run;
} cache_gpu_state_t;

static xr_status_t cache_gpu_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_cache_problem_t *c = plan->problem;
  xr_status_t st = xr_cache_supported(plan, "gpu.reshape_and_cache");
  if (st != XR_OK) return st;
  if (!is_float(c->src_dtype) || (c->cache_dtype != c->src_dtype && !xr_dtype_is_fp8(c->cache_dtype)))
    return xr_error(XR_UNIMPLEMENTED, "reshape_and_cache (gpu): %s: %s into a %s cache (the kernels write f32, "
                    "f16 or bf16 into a cache of the same type or fp8)", plan->op->name,
                    xr_dtype_name(c->src_dtype), xr_dtype_name(c->cache_dtype));
  int64_t element_blocks = (c->kv_heads * c->head_dim + XR_CACHE_GPU_THREADS - 1) / XR_CACHE_GPU_THREADS;
  if (c->tokens > MAX_GRID_X || element_blocks > MAX_GRID_YZ)
    return xr_error(XR_UNIMPLEMENTED, "reshape_and_cache (gpu): %s: %lld tokens of %lld x %lld exceed the "
                    "kernel's grid", plan->op->name, (long long)c->tokens, (long long)c->kv_heads,
                    (long long)c->head_dim);
  return XR_OK;
}

static void cache_gpu_release(void *state) {
  cache_gpu_state_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->executable);
  free(s);
}

static xr_status_t cache_gpu_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                     const xr_tensor_t *tensors, void **out_state) {
  const xr_cache_problem_t *c = plan->problem;
  cache_gpu_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  xr_cache_gpu_params_t *q = &s->params;
#define XR_CACHE_GPU_COPY(name) q->name = (long long)c->name;
  XR_CACHE_GPU_FIELDS(XR_CACHE_GPU_COPY)
#undef XR_CACHE_GPU_COPY
  if (c->k_scale < 0) q->k_scale_off = -1;
  if (c->v_scale < 0) q->v_scale_off = -1;
  q->scaled = xr_dtype_is_fp8(c->cache_dtype);
  int64_t elements = c->kv_heads * c->head_dim;
  s->run = c->tokens > 0 && elements > 0;
  if (!s->run) {
    *out_state = s;
    return XR_OK;
  }
  char name[64];
  snprintf(name, sizeof name, "xr_reshape_and_cache_%s_%s", suffix(c->src_dtype), suffix(c->cache_dtype));
  xr_status_t st = xr_gpu_build(device, "kv_cache.cu", NULL, &s->executable);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->executable, name, &s->kernel);
  if (st != XR_OK) {
    cache_gpu_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  /* Absent scale tensors are never read; the key stands in for them. */
  const int idx[7] = {c->key, c->value, c->key_cache, c->value_cache, c->slots,
                      c->k_scale >= 0 ? c->k_scale : c->key, c->v_scale >= 0 ? c->v_scale : c->key};
  for (int i = 0; i < 7; i++) s->args[i] = xr_hal_arg_buffer(tensors[idx[i]].buffer);
  s->args[7] = xr_hal_arg_bytes(&s->params, sizeof s->params);
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {(uint32_t)c->tokens, (uint32_t)((elements + XR_CACHE_GPU_THREADS - 1) / XR_CACHE_GPU_THREADS), 1},
      .block = {XR_CACHE_GPU_THREADS, 1, 1},
      .args = s->args,
      .arg_count = 8};
  *out_state = s;
  return XR_OK;
}

static xr_status_t cache_gpu_enqueue(void *state, xr_hal_stream_t *stream) {
  cache_gpu_state_t *s = state;
  return s->run ? xr_hal_stream_dispatch(stream, s->kernel, &s->dispatch) : XR_OK;
}

const xr_kernel_impl_t xr_cache_gpu_impl = {
    .name = "gpu.reshape_and_cache",
    .driver = "gpu",
    .supports = cache_gpu_supports,
    .prepare = cache_gpu_prepare,
    .enqueue = cache_gpu_enqueue,
    .release = cache_gpu_release,
};

