/* OpenCL attention (kernels/opencl/attention.cl): one program for every op and dtype (element
 * formats are parameters), the problem's parameter array uploaded once per instance, the
 * indices of that array passed as build options generated from the same X-macro list the C
 * side uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attention.h"
#include "kernels/family.h"
#include "kernels/opencl/sources.h"

enum { WG = 64, BK = 16, DMAX = 256 };

/* The ones copied from xr_cache_problem_t. */
#define XR_CACHE_FIELDS(X)                                                                          \
  X(kv_heads) X(head_dim) X(block_size) X(slots_off) X(slots_64) X(key_off) X(key_st) X(key_sh)      \
  X(key_sd) X(value_off) X(value_st) X(value_sh) X(value_sd) X(kc_off) X(kc_sb) X(kc_ss) X(kc_sh)    \
  X(kc_sdx) X(kc_sd) X(kc_x) X(vc_off) X(vc_sb) X(vc_ss) X(vc_sh) X(vc_sd) X(k_scale_off)            \
  X(v_scale_off)

/* The cache kernel's parameters: those, then the element formats. */
#define XR_CACHE_PARAMS(X)                                                                          \
  XR_CACHE_FIELDS(X) X(src_kind) X(cache_kind) X(fp8_mbits) X(fp8_bias) X(fp8_fnuz) X(fp8_inf)       \
  X(fp8_max_bits)

#define XR_CACHE_ENUM(name) XR_CP_##name,
enum { XR_CACHE_PARAMS(XR_CACHE_ENUM) XR_CACHE_PARAM_COUNT };
#undef XR_CACHE_ENUM

/* 0 f32, 1 f16, 2 bf16, 3 fp8 (any format); -1 otherwise. */
static int kind_of(xr_dtype_t d) {
  switch (d) {
    case XR_DTYPE_F32: return 0;
    case XR_DTYPE_F16: return 1;
    case XR_DTYPE_BF16: return 2;
    case XR_DTYPE_F8E4M3FN:
    case XR_DTYPE_F8E5M2:
    case XR_DTYPE_F8E4M3FNUZ:
    case XR_DTYPE_F8E5M2FNUZ: return 3;
    default: return -1;
  }
}

static size_t append(char *buf, size_t len, size_t cap, const char *fmt, const char *name, int value) {
  if (len < cap) len += (size_t)snprintf(buf + len, cap - len, fmt, name, value);
  return len;
}

/* fp8 layout of a format: mantissa bits, bias, fnuz, has inf, largest finite value. */
/* The fields of fp8 dtype d the kernels read (base/float_formats.h's format). */
static void fp8_format(xr_dtype_t d, int64_t *mbits, int64_t *bias, int64_t *fnuz, int64_t *inf, float *max) {
  xr_fp8_format_t f = xr_fp8_format(d);
  *mbits = f.mbits, *bias = f.bias, *fnuz = f.fnuz_mask != 0, *inf = f.has_inf, *max = f.max;
}

static xr_status_t build(xr_hal_device_t *device, xr_hal_executable_t **out) {
  char opts[8192];
  size_t n = (size_t)snprintf(opts, sizeof opts, "-DWG=%d -DBK=%d -DDMAX=%d -DDT_F32=%d -DDT_F16=%d -DDT_BF16=%d",
                              WG, BK, DMAX, XR_DTYPE_F32, XR_DTYPE_F16, XR_DTYPE_BF16);
#define XR_ATTN_OPT(name) n = append(opts, n, sizeof opts, " -DAP_%s=%d", #name, XR_AP_##name);
  XR_ATTN_PARAMS(XR_ATTN_OPT)
#undef XR_ATTN_OPT
#define XR_CACHE_OPT(name) n = append(opts, n, sizeof opts, " -DCP_%s=%d", #name, XR_CP_##name);
  XR_CACHE_PARAMS(XR_CACHE_OPT)
#undef XR_CACHE_OPT
  if (n >= sizeof opts) return xr_error(XR_INTERNAL, "attention.cl: build options too long");
  return xr_opencl_build(device, "attention.cl", opts, out);
}

/* ------------------------------------------------------------------------------------------ */
/* attention                                                                                   */

typedef struct ocl_state {
  const xr_attn_problem_t *a;
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *main, *combine;
  xr_hal_buffer_t *params, *dummy;
  xr_hal_buffer_t *zero[2];
  xr_hal_kernel_arg_t args[21], cargs[9];
  xr_hal_dispatch_t d, cd;
  bool run, partitioned;
} ocl_state_t;

static void ocl_release(void *state) {
  ocl_state_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  xr_hal_buffer_free(s->params);
  xr_hal_buffer_free(s->dummy);
  free(s);
}

static xr_status_t ocl_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_attn_problem_t *a = plan->problem;
  const int64_t *p = a->p;
  if (p[XR_AP_head_dim] > DMAX || p[XR_AP_head_dim_v] > DMAX)
    return xr_error(XR_UNIMPLEMENTED, "opencl.flash_attention: head size %lld above %d",
                    (long long)(p[XR_AP_head_dim] > p[XR_AP_head_dim_v] ? p[XR_AP_head_dim] : p[XR_AP_head_dim_v]), DMAX);
  if (kind_of(a->q_dtype) < 0 || kind_of(a->kv_dtype) < 0 || kind_of(a->o_dtype) < 0)
    return xr_error(XR_UNIMPLEMENTED, "opencl.flash_attention: %s queries over a %s cache into %s outputs",
                    xr_dtype_name(a->q_dtype), xr_dtype_name(a->kv_dtype), xr_dtype_name(a->o_dtype));
  return xr_attn_supported(plan);
}

static xr_status_t ocl_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                               void **out_state) {
  const xr_attn_problem_t *a = plan->problem;
  const int64_t *p = a->p;
  ocl_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->a = a;
  int64_t prm[XR_ATTN_PARAM_COUNT];
  memcpy(prm, a->p, sizeof prm);
  prm[XR_AP_q_kind] = kind_of(a->q_dtype);
  prm[XR_AP_kv_kind] = kind_of(a->kv_dtype);
  prm[XR_AP_o_kind] = kind_of(a->o_dtype);
  prm[XR_AP_q_dtype] = a->q_dtype, prm[XR_AP_o_dtype] = a->o_dtype;
  float max;
  fp8_format(a->kv_dtype, &prm[XR_AP_fp8_mbits], &prm[XR_AP_fp8_bias], &prm[XR_AP_fp8_fnuz], &prm[XR_AP_fp8_inf], &max);
  xr_status_t st = build(device, &s->exe);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, "xr_attention", &s->main);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, "xr_attention_combine", &s->combine);
  if (st == XR_OK) st = xr_hal_buffer_alloc(device, sizeof prm, &s->params);
  if (st == XR_OK) st = xr_hal_buffer_write(s->params, 0, prm, sizeof prm);
  if (st == XR_OK) st = xr_hal_buffer_alloc(device, 64, &s->dummy);
  if (st != XR_OK) {
    ocl_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  xr_hal_buffer_t *buf[XR_AT_COUNT];
  for (int r = 0; r < XR_AT_COUNT; r++) buf[r] = a->t[r] >= 0 ? tensors[a->t[r]].buffer : s->dummy;
  static const int order[] = {XR_AT_Q,      XR_AT_K,     XR_AT_V,     XR_AT_OUT,       XR_AT_LSE,       XR_AT_CU_Q,
                              XR_AT_CU_K,   XR_AT_LENS,  XR_AT_TABLE, XR_AT_INDPTR,    XR_AT_ALIBI,     XR_AT_MASK,
                              XR_AT_K_SCALE, XR_AT_V_SCALE, XR_AT_EXP_SUMS, XR_AT_MAX_LOGITS, XR_AT_TMP_OUT,
                              XR_AT_O_SCALE};
  s->args[0] = xr_hal_arg_buffer(s->params);
  for (int i = 0; i < 18; i++) s->args[1 + i] = xr_hal_arg_buffer(buf[order[i]]);
  s->args[19] = xr_hal_arg_local(sizeof(float) * BK * (size_t)p[XR_AP_head_dim]);
  s->args[20] = xr_hal_arg_local(sizeof(float) * BK * (size_t)p[XR_AP_head_dim_v]);
  int64_t rows = p[XR_AP_max_q] > p[XR_AP_lse_rows] ? p[XR_AP_max_q] : p[XR_AP_lse_rows];
  int64_t blocks = (rows * p[XR_AP_group] + WG - 1) / WG;
  int64_t parts = p[XR_AP_part_size] > 0 ? p[XR_AP_part_count] : 1;
  s->run = blocks > 0 && p[XR_AP_batch] > 0 && parts > 0;
  s->d = (xr_hal_dispatch_t){.grid = {(uint32_t)blocks, (uint32_t)(p[XR_AP_batch] * p[XR_AP_kv_heads]), (uint32_t)parts},
                             .block = {WG, 1, 1},
                             .args = s->args,
                             .arg_count = 21};
  s->partitioned = p[XR_AP_part_size] > 0;
  xr_hal_kernel_arg_t *c = s->cargs;
  c[0] = xr_hal_arg_buffer(s->params), c[1] = xr_hal_arg_buffer(buf[XR_AT_CU_Q]);
  c[2] = xr_hal_arg_buffer(buf[XR_AT_CU_K]), c[3] = xr_hal_arg_buffer(buf[XR_AT_LENS]);
  c[4] = xr_hal_arg_buffer(buf[XR_AT_INDPTR]), c[5] = xr_hal_arg_buffer(buf[XR_AT_OUT]);
  c[6] = xr_hal_arg_buffer(buf[XR_AT_EXP_SUMS]), c[7] = xr_hal_arg_buffer(buf[XR_AT_MAX_LOGITS]);
  c[8] = xr_hal_arg_buffer(buf[XR_AT_TMP_OUT]);
  s->cd = (xr_hal_dispatch_t){.grid = {(uint32_t)((p[XR_AP_head_dim_v] + 63) / 64), (uint32_t)p[XR_AP_heads],
                                       (uint32_t)p[XR_AP_batch]},
                              .block = {64, 1, 1},
                              .args = s->cargs,
                              .arg_count = 9};
  for (int i = 0; i < a->zero_count; i++) s->zero[i] = tensors[a->zero_outputs[i]].buffer;
  *out_state = s;
  return XR_OK;
}

static xr_status_t ocl_enqueue(void *state, xr_hal_stream_t *stream) {
  ocl_state_t *s = state;
  uint8_t zero = 0;
  xr_status_t st = XR_OK;
  for (int i = 0; i < s->a->zero_count && st == XR_OK; i++)
    if (xr_hal_buffer_size(s->zero[i])) st = xr_hal_stream_fill(stream, s->zero[i], 0, xr_hal_buffer_size(s->zero[i]), &zero, 1);
  if (st == XR_OK && s->run) st = xr_hal_stream_dispatch(stream, s->main, &s->d);
  if (st == XR_OK && s->run && s->partitioned) st = xr_hal_stream_dispatch(stream, s->combine, &s->cd);
  return st;
}

const xr_kernel_impl_t xr_attn_opencl_impl = {
    .name = "opencl.flash_attention",
    .driver = "opencl",
    .supports = ocl_supports,
    .prepare = ocl_prepare,
    .enqueue = ocl_enqueue,
    .release = ocl_release,
};

/* ------------------------------------------------------------------------------------------ */
/* reshape_and_cache                                                                           */

typedef struct cache_state {
  xr_hal_executable_t *exe;
  xr_hal_kernel_t *kernel;
  xr_hal_buffer_t *params, *dummy;
  xr_hal_kernel_arg_t args[8];
  xr_hal_dispatch_t d;
  bool run;
} cache_state_t;

static void cache_release(void *state) {
  cache_state_t *s = state;
  if (!s) return;
  xr_hal_executable_destroy(s->exe);
  xr_hal_buffer_free(s->params);
  xr_hal_buffer_free(s->dummy);
  free(s);
}

static xr_status_t cache_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                                 void **out_state) {
  const xr_cache_problem_t *c = plan->problem;
  int64_t prm[XR_CACHE_PARAM_COUNT];
#define XR_CACHE_SET(name) prm[XR_CP_##name] = (int64_t)c->name;
  XR_CACHE_FIELDS(XR_CACHE_SET)
#undef XR_CACHE_SET
  if (c->k_scale < 0) prm[XR_CP_k_scale_off] = -1;
  if (c->v_scale < 0) prm[XR_CP_v_scale_off] = -1;
  prm[XR_CP_src_kind] = kind_of(c->src_dtype);
  prm[XR_CP_cache_kind] = kind_of(c->cache_dtype);
  float max;
  fp8_format(c->cache_dtype, &prm[XR_CP_fp8_mbits], &prm[XR_CP_fp8_bias], &prm[XR_CP_fp8_fnuz], &prm[XR_CP_fp8_inf], &max);
  prm[XR_CP_fp8_max_bits] = (int64_t)xr_f32_to_bits(max);
  cache_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  xr_status_t st = build(device, &s->exe);
  if (st == XR_OK) st = xr_hal_kernel_lookup(s->exe, "xr_reshape_and_cache", &s->kernel);
  if (st == XR_OK) st = xr_hal_buffer_alloc(device, sizeof prm, &s->params);
  if (st == XR_OK) st = xr_hal_buffer_write(s->params, 0, prm, sizeof prm);
  if (st == XR_OK) st = xr_hal_buffer_alloc(device, 64, &s->dummy);
  if (st != XR_OK) {
    cache_release(s);
    return xr_error_prefix(st, "%s: ", plan->op->name);
  }
  const int idx[7] = {c->key, c->value, c->key_cache, c->value_cache, c->slots, c->k_scale, c->v_scale};
  s->args[0] = xr_hal_arg_buffer(s->params);
  for (int i = 0; i < 7; i++) s->args[1 + i] = xr_hal_arg_buffer(idx[i] >= 0 ? tensors[idx[i]].buffer : s->dummy);
  int64_t elems = c->kv_heads * c->head_dim;
  s->run = c->tokens > 0 && elems > 0;
  s->d = (xr_hal_dispatch_t){.grid = {(uint32_t)((elems + 63) / 64), (uint32_t)c->tokens, 1},
                             .block = {64, 1, 1},
                             .args = s->args,
                             .arg_count = 8};
  *out_state = s;
  return XR_OK;
}

static xr_status_t cache_enqueue(void *state, xr_hal_stream_t *stream) {
  cache_state_t *s = state;
  return s->run ? xr_hal_stream_dispatch(stream, s->kernel, &s->d) : XR_OK;
}

static xr_status_t cache_supports(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)device;
  const xr_cache_problem_t *c = plan->problem;
  xr_status_t st = xr_cache_supported(plan, "opencl.reshape_and_cache");
  if (st != XR_OK) return st;
  if (kind_of(c->src_dtype) < 0 || kind_of(c->src_dtype) == 3 || kind_of(c->cache_dtype) < 0)
    return xr_error(XR_UNIMPLEMENTED, "opencl.reshape_and_cache: %s into a %s cache", xr_dtype_name(c->src_dtype),
                    xr_dtype_name(c->cache_dtype));
  return XR_OK;
}

const xr_kernel_impl_t xr_cache_opencl_impl = {
    .name = "opencl.reshape_and_cache",
    .driver = "opencl",
    .supports = cache_supports,
    .prepare = cache_prepare,
    .enqueue = cache_enqueue,
    .release = cache_release,
};
