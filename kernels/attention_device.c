/* The attention families on OpenCL and on cuda/hip, from one backend table:
 *   opencl.flash_attention   attention and paged attention  kernels/opencl/attention.cl
 *   gpu.flash_attention      attention                      kernels/gpu/attention.cu
 *   gpu.paged_attention      paged attention                kernels/gpu/paged_attention.cu
 *   <driver>.reshape_and_cache                              attention.cl, gpu/kv_cache.cu
 *   <driver>.unified_attention: the cache writer, then the paged attention kernel, on one
 *                               in-order stream (kernels/unified_attention.c composes them)
 * Every kernel follows kernels/attention.h's problem and takes the argument blocks of
 * kernels/attention_args.h by value, after its buffers. OpenCL runs one kernel for every element
 * kind (one work-item per query row); CUDA and HIP run kernels typed by name where the problem
 * allows (xr_attention_<q>[_fp8], xr_reshape_and_cache_<src>_<cache>) and run-time typed ones
 * otherwise (xr_attention_any[_fp8]), one warp per query row. prepare() builds the source (cached
 * on disk), fills the block and the dispatches; enqueue() zeroes the outputs the ops never fill
 * and launches, then the v2 partition reduction. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/attention.h"
#include "kernels/attention_args.h"
#include "kernels/family.h"
#include "kernels/gpu/sources.h"
#include "kernels/opencl/sources.h"
#include "kernels/unified_attention.h"

_Static_assert(sizeof(long) == 8, "the device argument blocks need a 64-bit long");
/* OpenCL guarantees a kernel 1024 bytes of arguments (CL_DEVICE_MAX_PARAMETER_SIZE): the
 * attention kernel takes 18 buffers, the block and two local tiles. */
_Static_assert(sizeof(xr_attn_args_t) + 20 * 8 <= 1024,
               "the attention kernel's arguments exceed what every OpenCL device takes");

/* How a device runs the kernels. */
typedef struct backend {
  const char *name; /* "opencl", "gpu" */
  xr_status_t (*build)(xr_hal_device_t *device, const char *file, const char *options,
                       xr_hal_executable_t **out_executable);
  const char *attention_source, *paged_source, *cache_source;
  /* CUDA/HIP: kernels typed by name, a warp per query row, the grid's y and z at most
   * MAX_GRID_YZ (the kernels loop past it), the tiles in dynamic shared memory. OpenCL: one
   * kernel for every kind, a work-item per row, the tiles as local-memory arguments. */
  bool typed;
  /* unified attention's two steps: this backend's cache writer and paged attention */
  const xr_kernel_impl_t *cache_impl, *paged_impl;
} backend_t;

static const backend_t opencl = {.name = "opencl",
                                 .build = xr_opencl_build,
                                 .attention_source = "attention.cl",
                                 .paged_source = "attention.cl",
                                 .cache_source = "attention.cl",
                                 .typed = false,
                                 .cache_impl = &xr_cache_opencl_impl,
                                 .paged_impl = &xr_attn_opencl_impl};
static const backend_t gpu = {.name = "gpu",
                              .build = xr_gpu_build,
                              .attention_source = "attention.cu",
                              .paged_source = "paged_attention.cu",
                              .cache_source = "kv_cache.cu",
                              .typed = true,
                              .cache_impl = &xr_cache_gpu_impl,
                              .paged_impl = &xr_paged_attn_gpu_impl};

/* Largest grid dimension y/z on both GPU vendors (x allows 2^31 - 1). */
#define MAX_GRID_YZ 65535
#define MAX_GRID_X 0x7fffffffLL

static int64_t grid_yz(const backend_t *b, int64_t n) {
  return b->typed && n > MAX_GRID_YZ ? MAX_GRID_YZ : n;
}

static bool is_float(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16;
}

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

/* XR_ATTN_F8* of an fp8 dtype (e4m3fn for any other). */
static long fp8_format(xr_dtype_t d) {
  return d == XR_DTYPE_F8E5M2 ? XR_ATTN_F8E5M2
         : d == XR_DTYPE_F8E4M3FNUZ ? XR_ATTN_F8E4M3FNUZ
         : d == XR_DTYPE_F8E5M2FNUZ ? XR_ATTN_F8E5M2FNUZ
                                    : XR_ATTN_F8E4M3FN;
}

/* XR_ATTN_ELEM_* of queries, outputs, keys and values: a float or fp8 dtype; -1 otherwise. */
static long elem_of(xr_dtype_t d) {
  if (xr_dtype_is_fp8(d)) return XR_ATTN_ELEM_FP8;
  switch (d) {
    case XR_DTYPE_F32: return XR_ATTN_ELEM_F32;
    case XR_DTYPE_F16: return XR_ATTN_ELEM_F16;
    case XR_DTYPE_BF16: return XR_ATTN_ELEM_BF16;
    default: return -1;
  }
}

/* XR_ATTN_ELEM_* of a mask or ALiBi slopes: f32, f16, bf16 or bytes; -1 otherwise. */
static long mask_elem_of(xr_dtype_t d) {
  if (d == XR_DTYPE_BOOL || d == XR_DTYPE_U8) return XR_ATTN_ELEM_BYTE;
  return xr_dtype_is_fp8(d) ? -1 : elem_of(d);
}

/* ------------------------------------------------------------------------------------------ */
/* attention and paged attention                                                              */

/* Whether CUDA/HIP's typed kernels (xr_attention_<q>[_fp8]: queries and outputs of one float
 * type, keys of that type or, with fp8_cache, an fp8 cache) take the problem; otherwise the
 * run-time typed ones of paged_attention.cu (xr_attention_any[_fp8]) do. */
static bool typed_kernels(const xr_attn_problem_t *a, bool fp8_cache) {
  return is_float(a->q_dtype) && a->o_dtype == a->q_dtype && a->p[XR_AP_o_scale_off] < 0 &&
         (a->kv_dtype == a->q_dtype || (fp8_cache && xr_dtype_is_fp8(a->kv_dtype)));
}

/* The device's warp width, if the CUDA/HIP kernels can use it: a whole number of warps per
 * block and at least 32 lanes (each lane holds up to DMAX / 32 dimensions). */
static xr_status_t warp_width(const char *impl, xr_hal_device_t *device, uint32_t *out) {
  xr_hal_device_properties_t properties;
  xr_status_t st = xr_hal_device_properties(device, &properties);
  if (st != XR_OK) return st;
  uint32_t w = properties.simd_width;
  if (w < 32 || w > XR_ATTN_GPU_MAX_THREADS || XR_ATTN_GPU_MAX_THREADS % w)
    return xr_error(XR_UNIMPLEMENTED, "%s: a warp of %u lanes (the kernels take 32 to %d, dividing %d)",
                    impl, w, XR_ATTN_GPU_MAX_THREADS, XR_ATTN_GPU_MAX_THREADS);
  *out = w;
  return XR_OK;
}

/* Rows (query position x head of a kv head) per kv head and sequence. */
static int64_t attn_rows(const int64_t *p) {
  return (p[XR_AP_max_q] > p[XR_AP_lse_rows] ? p[XR_AP_max_q] : p[XR_AP_lse_rows]) * p[XR_AP_group];
}

static int64_t attn_parts(const int64_t *p) {
  return p[XR_AP_part_size] > 0 ? p[XR_AP_part_count] : 1;
}

/* The element kinds a backend's kernels take: OpenCL's one kernel any float or fp8 kind; CUDA's
 * typed kernels one float type (with fp8_cache, over an fp8 cache too), the run-time typed ones
 * (fp8_cache only) fp8 queries and outputs, unpartitioned. */
static xr_status_t attn_kinds_supported(const backend_t *b, const xr_op_plan_t *plan, const char *impl,
                                        bool fp8_cache) {
  const xr_attn_problem_t *a = plan->problem;
  const char *q = xr_dtype_name(a->q_dtype), *o = xr_dtype_name(a->o_dtype), *kv = xr_dtype_name(a->kv_dtype);
  bool kinds = elem_of(a->q_dtype) >= 0 && elem_of(a->o_dtype) >= 0 && elem_of(a->kv_dtype) >= 0;
  if (!b->typed) {
    if (!kinds)
      return xr_error(XR_UNIMPLEMENTED, "%s: %s: %s queries over a %s cache into %s outputs (the kernel takes "
                      "f32, f16, bf16 and fp8)", impl, plan->op->name, q, kv, o);
    return XR_OK;
  }
  if (typed_kernels(a, fp8_cache)) return XR_OK;
  if (!fp8_cache)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: %s queries, %s outputs over %s keys and values: the kernels take "
                    "f32, f16 or bf16 queries and outputs over keys of the same type", impl, plan->op->name, q, o,
                    kv);
  if (!kinds || a->p[XR_AP_part_size] > 0)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: %s queries, %s outputs over %s keys and values%s: the kernels "
                    "take f32, f16, bf16 or fp8 queries and outputs over float or fp8 keys, unpartitioned", impl,
                    plan->op->name, q, o, kv, a->p[XR_AP_part_size] > 0 ? " in partitions" : "");
  return XR_OK;
}

static xr_status_t attn_supports_common(const backend_t *b, const xr_op_plan_t *plan, xr_hal_device_t *device,
                                        const char *impl, bool fp8_cache) {
  const xr_attn_problem_t *a = plan->problem;
  const int64_t *p = a->p;
  xr_status_t st = xr_attn_supported(plan);
  if (st != XR_OK) return st;
  if (p[XR_AP_head_dim] > XR_ATTN_DMAX || p[XR_AP_head_dim_v] > XR_ATTN_DMAX)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: head size %lld / %lld above %d", impl, plan->op->name,
                    (long long)p[XR_AP_head_dim], (long long)p[XR_AP_head_dim_v], XR_ATTN_DMAX);
  if ((st = attn_kinds_supported(b, plan, impl, fp8_cache)) != XR_OK) return st;
  xr_dtype_t alibi = (xr_dtype_t)p[XR_AP_alibi_dtype], mask = (xr_dtype_t)p[XR_AP_mask_dtype];
  if (p[XR_AP_alibi_off] >= 0 && (mask_elem_of(alibi) < 0 || mask_elem_of(alibi) == XR_ATTN_ELEM_BYTE))
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: %s ALiBi slopes (the kernels read f32, f16, bf16)", impl,
                    plan->op->name, xr_dtype_name(alibi));
  if (p[XR_AP_mask_kind] != XR_ATTN_MASK_NONE && mask_elem_of(mask) < 0)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: a %s mask (the kernels read bool, uint8, f32, f16, bf16)", impl,
                    plan->op->name, xr_dtype_name(mask));
  int64_t items = p[XR_AP_batch] * p[XR_AP_kv_heads];
  if (b->typed) {
    uint32_t warp;
    if ((st = warp_width(impl, device, &warp)) != XR_OK) return st;
    if (attn_rows(p) > MAX_GRID_X || attn_parts(p) > MAX_GRID_YZ || p[XR_AP_heads] > MAX_GRID_YZ)
      return xr_error(XR_UNIMPLEMENTED, "%s: %s: %lld query rows per kv head, %lld heads, %lld partitions "
                      "exceed the kernels' grid", impl, plan->op->name, (long long)attn_rows(p),
                      (long long)p[XR_AP_heads], (long long)attn_parts(p));
  } else if (items > UINT32_MAX || attn_parts(p) > UINT32_MAX || p[XR_AP_heads] > UINT32_MAX ||
             p[XR_AP_batch] > UINT32_MAX) {
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: %lld sequences x kv heads exceed one dispatch", impl,
                    plan->op->name, (long long)items);
  }
  return XR_OK;
}

/* CUDA/HIP's dense attention (attention.cu has no fp8-cache kernels); OpenCL's one kernel serves
 * both families through paged_supports. */
static xr_status_t attn_supports(const backend_t *b, const xr_op_plan_t *plan, xr_hal_device_t *device) {
  return attn_supports_common(b, plan, device, "flash_attention (gpu)", false);
}

static xr_status_t paged_supports(const backend_t *b, const xr_op_plan_t *plan, xr_hal_device_t *device) {
  return attn_supports_common(b, plan, device, b->typed ? "paged_attention (gpu)" : "opencl.flash_attention",
                              true);
}

typedef struct attn_state {
  xr_hal_executable_t *executable;
  xr_hal_kernel_t *main, *combine;
  xr_attn_args_t args;
  xr_hal_kernel_arg_t main_args[21], combine_args[9];
  xr_hal_dispatch_t dispatch, combine_dispatch;
  xr_hal_buffer_t *zero[2];
  int zero_count;
  bool run, partitioned;
} attn_state_t;

static void attn_release(void *state) {
  attn_state_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->executable);
  free(s);
}

static void attn_fill_args(const xr_attn_problem_t *a, xr_attn_args_t *q) {
  const int64_t *p = a->p;
#define XR_ATTN_ARGS_COPY(name) q->name = p[XR_AP_##name];
  XR_ATTN_ARGS_FIELDS(XR_ATTN_ARGS_COPY)
#undef XR_ATTN_ARGS_COPY
  q->alibi_elem = p[XR_AP_alibi_off] >= 0 ? mask_elem_of((xr_dtype_t)p[XR_AP_alibi_dtype]) : 0;
  q->mask_elem = p[XR_AP_mask_kind] != XR_ATTN_MASK_NONE ? mask_elem_of((xr_dtype_t)p[XR_AP_mask_dtype]) : 0;
  q->q_elem = elem_of(a->q_dtype), q->q_fp8 = fp8_format(a->q_dtype);
  q->o_elem = elem_of(a->o_dtype), q->o_fp8 = fp8_format(a->o_dtype);
  q->kv_elem = elem_of(a->kv_dtype), q->fp8_format = fp8_format(a->kv_dtype);
  q->scale = xr_attn_float(a, XR_AP_scale_bits);
  q->softcap = xr_attn_float(a, XR_AP_softcap_bits);
  q->empty_lse = xr_attn_float(a, XR_AP_empty_lse_bits);
  q->k_scale = xr_attn_float(a, XR_AP_k_scale_bits);
  q->v_scale = xr_attn_float(a, XR_AP_v_scale_bits);
  q->q_scale = xr_dtype_is_fp8(a->q_dtype) ? xr_attn_float(a, XR_AP_q_scale_bits) : 1.0f;
  q->o_max = xr_attn_fp8_max(a->o_dtype);
}

/* The main kernel's name: OpenCL's one; on CUDA/HIP by the queries' type and the cache's. */
static void attn_kernel_name(const backend_t *b, const xr_attn_problem_t *a, bool typed, char *name,
                             size_t size) {
  if (!b->typed)
    snprintf(name, size, "xr_attention");
  else
    snprintf(name, size, "xr_attention_%s%s", typed ? suffix(a->q_dtype) : "any",
             xr_dtype_is_fp8(a->kv_dtype) ? "_fp8" : "");
}

static xr_status_t attn_prepare_source(const backend_t *b, const xr_op_plan_t *plan, xr_hal_device_t *device,
                                       const xr_tensor_t *tensors, const char *source, void **out_state) {
  const xr_attn_problem_t *a = plan->problem;
  const int64_t *p = a->p;
  attn_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  attn_fill_args(a, &s->args);
  for (int i = 0; i < a->zero_count; i++) s->zero[s->zero_count++] = tensors[a->zero_outputs[i]].buffer;
  int64_t rows = attn_rows(p), items = p[XR_AP_batch] * p[XR_AP_kv_heads], parts = attn_parts(p);
  s->partitioned = p[XR_AP_part_size] > 0;
  s->run = rows > 0 && items > 0 && parts > 0;
  if (!s->run) {
    *out_state = s;
    return XR_OK;
  }

  /* Threads per query row, and rows per group: OpenCL's fixed work-group (the kernel's
   * reqd_work_group_size), CUDA's as many warps as a block holds. */
  uint32_t row_threads = 1;
  int64_t rows_per_group = XR_ATTN_OPENCL_THREADS;
  xr_status_t st = XR_OK;
  if (b->typed) {
    st = warp_width(source, device, &row_threads);
    rows_per_group = XR_ATTN_GPU_MAX_THREADS / row_threads;
    if (rows < rows_per_group) rows_per_group = rows;
  }
  bool typed = b->typed && typed_kernels(a, xr_dtype_is_fp8(a->kv_dtype));
  char name[64];
  attn_kernel_name(b, a, typed, name, sizeof name);
  if (st == XR_OK) st = b->build(device, source, NULL, &s->executable);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->executable, name, &s->main);
  if (st == XR_OK && s->partitioned) {
    snprintf(name, sizeof name, b->typed ? "xr_attention_combine_%s" : "xr_attention_combine",
             suffix(a->q_dtype));
    st = xr_hal_kernel_lookup(s->executable, name, &s->combine);
  }
  if (st != XR_OK) {
    attn_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }

  /* Absent tensors are never read; any buffer of the device stands in for them. */
  xr_hal_buffer_t *buf[XR_AT_COUNT];
  for (int r = 0; r < XR_AT_COUNT; r++) buf[r] = tensors[a->t[r] >= 0 ? a->t[r] : a->t[XR_AT_OUT]].buffer;
  static const int order[] = {XR_AT_Q,     XR_AT_K,       XR_AT_V,          XR_AT_OUT,     XR_AT_LSE,
                              XR_AT_CU_Q,  XR_AT_CU_K,    XR_AT_LENS,       XR_AT_TABLE,   XR_AT_INDPTR,
                              XR_AT_ALIBI, XR_AT_MASK,    XR_AT_K_SCALE,    XR_AT_V_SCALE, XR_AT_EXP_SUMS,
                              XR_AT_MAX_LOGITS, XR_AT_TMP_OUT};
  size_t n = 0;
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) s->main_args[n++] = xr_hal_arg_buffer(buf[order[i]]);
  if (!typed) s->main_args[n++] = xr_hal_arg_buffer(buf[XR_AT_O_SCALE]); /* the run-time typed kernels' */
  s->main_args[n++] = xr_hal_arg_bytes(&s->args, sizeof s->args);
  size_t key_tile = sizeof(float) * XR_ATTN_BK * (size_t)p[XR_AP_head_dim];
  size_t value_tile = sizeof(float) * XR_ATTN_BK * (size_t)p[XR_AP_head_dim_v];
  if (!b->typed) {
    s->main_args[n++] = xr_hal_arg_local(key_tile);
    s->main_args[n++] = xr_hal_arg_local(value_tile);
  }
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {(uint32_t)((rows + rows_per_group - 1) / rows_per_group), (uint32_t)grid_yz(b, items),
               (uint32_t)parts},
      .block = {(uint32_t)rows_per_group * row_threads, 1, 1},
      .shared_memory_bytes = b->typed ? (uint32_t)(key_tile + value_tile) : 0,
      .args = s->main_args,
      .arg_count = n};
  static const int combine_order[] = {XR_AT_CU_Q, XR_AT_CU_K,     XR_AT_LENS,       XR_AT_INDPTR,
                                      XR_AT_OUT,  XR_AT_EXP_SUMS, XR_AT_MAX_LOGITS, XR_AT_TMP_OUT};
  for (int i = 0; i < 8; i++) s->combine_args[i] = xr_hal_arg_buffer(buf[combine_order[i]]);
  s->combine_args[8] = xr_hal_arg_bytes(&s->args, sizeof s->args);
  s->combine_dispatch = (xr_hal_dispatch_t){
      .grid = {(uint32_t)((p[XR_AP_head_dim_v] + XR_ATTN_COMBINE_THREADS - 1) / XR_ATTN_COMBINE_THREADS),
               (uint32_t)p[XR_AP_heads], (uint32_t)grid_yz(b, p[XR_AP_batch])},
      .block = {XR_ATTN_COMBINE_THREADS, 1, 1},
      .args = s->combine_args,
      .arg_count = 9};
  *out_state = s;
  return XR_OK;
}

static xr_status_t attn_prepare(const backend_t *b, const xr_op_plan_t *plan, xr_hal_device_t *device,
                                const xr_tensor_t *tensors, void **out_state) {
  return attn_prepare_source(b, plan, device, tensors, b->attention_source, out_state);
}

static xr_status_t paged_prepare(const backend_t *b, const xr_op_plan_t *plan, xr_hal_device_t *device,
                                 const xr_tensor_t *tensors, void **out_state) {
  return attn_prepare_source(b, plan, device, tensors, b->paged_source, out_state);
}

static xr_status_t attn_enqueue(void *state, xr_hal_stream_t *stream) {
  attn_state_t *s = state;
  uint8_t zero = 0;
  xr_status_t st = XR_OK;
  for (int i = 0; i < s->zero_count && st == XR_OK; i++)
    if (xr_hal_buffer_size(s->zero[i]))
      st = xr_hal_stream_fill(stream, s->zero[i], 0, xr_hal_buffer_size(s->zero[i]), &zero, 1);
  if (st == XR_OK && s->run) st = xr_hal_stream_dispatch(stream, s->main, &s->dispatch);
  if (st == XR_OK && s->run && s->partitioned) st = xr_hal_stream_dispatch(stream, s->combine, &s->combine_dispatch);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* reshape_and_cache                                                                           */

static xr_status_t cache_supports(const backend_t *b, const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_cache_problem_t *c = plan->problem;
  const char *impl = b->typed ? "reshape_and_cache (gpu)" : "opencl.reshape_and_cache";
  xr_status_t st = xr_cache_supported(plan, impl);
  if (st != XR_OK) return st;
  /* OpenCL's kernel converts between float kinds; CUDA's are typed by source and cache. */
  bool cache_ok = xr_dtype_is_fp8(c->cache_dtype) || (b->typed ? c->cache_dtype == c->src_dtype
                                                               : is_float(c->cache_dtype));
  if (!is_float(c->src_dtype) || !cache_ok)
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: %s into a %s cache (the kernels write f32, f16 or bf16 into a "
                    "cache of %s or fp8)", impl, plan->op->name, xr_dtype_name(c->src_dtype),
                    xr_dtype_name(c->cache_dtype), b->typed ? "the same type" : "a float type");
  int64_t element_blocks = (c->kv_heads * c->head_dim + XR_CACHE_THREADS - 1) / XR_CACHE_THREADS;
  if (c->tokens > (b->typed ? MAX_GRID_X : UINT32_MAX) || element_blocks > (b->typed ? MAX_GRID_YZ : UINT32_MAX))
    return xr_error(XR_UNIMPLEMENTED, "%s: %s: %lld tokens of %lld x %lld exceed the kernel's grid", impl,
                    plan->op->name, (long long)c->tokens, (long long)c->kv_heads, (long long)c->head_dim);
  return XR_OK;
}

typedef struct cache_state {
  xr_hal_executable_t *executable;
  xr_hal_kernel_t *kernel;
  xr_cache_args_t args;
  xr_hal_kernel_arg_t kernel_args[8];
  xr_hal_dispatch_t dispatch;
  bool run;
} cache_state_t;

static void cache_release(void *state) {
  cache_state_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->executable);
  free(s);
}

static xr_status_t cache_prepare(const backend_t *b, const xr_op_plan_t *plan, xr_hal_device_t *device,
                                 const xr_tensor_t *tensors, void **out_state) {
  const xr_cache_problem_t *c = plan->problem;
  cache_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", plan->op->name);
  xr_cache_args_t *q = &s->args;
#define XR_CACHE_ARGS_COPY(name) q->name = (long)c->name;
  XR_CACHE_ARGS_FIELDS(XR_CACHE_ARGS_COPY)
#undef XR_CACHE_ARGS_COPY
  if (c->k_scale < 0) q->k_scale_off = -1;
  if (c->v_scale < 0) q->v_scale_off = -1;
  q->scaled = xr_dtype_is_fp8(c->cache_dtype);
  q->src_elem = elem_of(c->src_dtype);
  q->cache_elem = elem_of(c->cache_dtype), q->cache_fp8 = fp8_format(c->cache_dtype);
  int64_t elements = c->kv_heads * c->head_dim;
  s->run = c->tokens > 0 && elements > 0;
  if (!s->run) {
    *out_state = s;
    return XR_OK;
  }
  char name[64] = "xr_reshape_and_cache";
  if (b->typed)
    snprintf(name, sizeof name, "xr_reshape_and_cache_%s_%s", suffix(c->src_dtype), suffix(c->cache_dtype));
  xr_status_t st = b->build(device, b->cache_source, NULL, &s->executable);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->executable, name, &s->kernel);
  if (st != XR_OK) {
    cache_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  /* Absent scale tensors are never read; the key stands in for them. */
  const int idx[7] = {c->key, c->value, c->key_cache, c->value_cache, c->slots,
                      c->k_scale >= 0 ? c->k_scale : c->key, c->v_scale >= 0 ? c->v_scale : c->key};
  for (int i = 0; i < 7; i++) s->kernel_args[i] = xr_hal_arg_buffer(tensors[idx[i]].buffer);
  s->kernel_args[7] = xr_hal_arg_bytes(&s->args, sizeof s->args);
  s->dispatch = (xr_hal_dispatch_t){
      .grid = {(uint32_t)c->tokens, (uint32_t)((elements + XR_CACHE_THREADS - 1) / XR_CACHE_THREADS), 1},
      .block = {XR_CACHE_THREADS, 1, 1},
      .args = s->kernel_args,
      .arg_count = 8};
  *out_state = s;
  return XR_OK;
}

static xr_status_t cache_enqueue(void *state, xr_hal_stream_t *stream) {
  cache_state_t *s = state;
  return s->run ? xr_hal_stream_dispatch(stream, s->kernel, &s->dispatch) : XR_OK;
}

/* ------------------------------------------------------------------------------------------ */

/* OpenCL's one attention kernel serves both families (it takes fp8 caches). */
XR_DEVICE_IMPL(xr_attn_opencl_impl, "opencl.flash_attention", "opencl", opencl, paged_supports,
               paged_prepare, attn_enqueue, attn_release)
XR_DEVICE_IMPL(xr_cache_opencl_impl, "opencl.reshape_and_cache", "opencl", opencl, cache_supports,
               cache_prepare, cache_enqueue, cache_release)
XR_DEVICE_IMPL(xr_attn_gpu_impl, "gpu.flash_attention", "gpu", gpu, attn_supports, attn_prepare,
               attn_enqueue, attn_release)
XR_DEVICE_IMPL(xr_paged_attn_gpu_impl, "gpu.paged_attention", "gpu", gpu, paged_supports,
               paged_prepare, attn_enqueue, attn_release)
XR_DEVICE_IMPL(xr_cache_gpu_impl, "gpu.reshape_and_cache", "gpu", gpu, cache_supports,
               cache_prepare, cache_enqueue, cache_release)

/* vLLM's unified attention: a backend's cache writer, then its paged attention. */
static xr_status_t ua_supports(const backend_t *b, const xr_op_plan_t *plan, xr_hal_device_t *device) {
  return xr_ua_supports(plan, device, b->cache_impl, b->paged_impl);
}

static xr_status_t ua_prepare(const backend_t *b, const xr_op_plan_t *plan, xr_hal_device_t *device,
                              const xr_tensor_t *tensors, void **out_state) {
  return xr_ua_prepare(plan, device, tensors, b->cache_impl, b->paged_impl, out_state);
}

XR_DEVICE_IMPL(xr_ua_opencl_impl, "opencl.unified_attention", "opencl", opencl, ua_supports,
               ua_prepare, xr_ua_enqueue, xr_ua_release)
XR_DEVICE_IMPL(xr_ua_gpu_impl, "gpu.unified_attention", "gpu", gpu, ua_supports, ua_prepare,
               xr_ua_enqueue, xr_ua_release)
