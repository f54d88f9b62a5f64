/* The quant family: vLLM's fp8 activation quantization ops (kernels/quant.h says what they
 * compute). Conventions from vLLM's csrc/quantization/w8a8/fp8/common.cu and common.cuh,
 * csrc/quantization/utils.cuh (quant_type_max, min_scaling_factor) and vllm/_custom_ops.py
 * (scaled_fp8_quant: result [tokens or num_token_padding, hidden], per-token scale
 * [tokens, 1], dynamic scale [1]). The reference evaluates each step of the CUDA kernel's float
 * arithmetic in double and rounds it to float where the kernel does (a float division, product
 * or quotient computed in double and rounded once is the float operation's result), so it is
 * exact, and rounds to fp8 once. */
#include "kernels/quant.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/initializer.h"

static const char *const quant_ops[] = {
    "_C::static_scaled_fp8_quant",
    "_C::dynamic_scaled_fp8_quant",
    "_C::dynamic_per_token_scaled_fp8_quant",
    NULL,
};

float xr_quant_fp8_max(xr_dtype_t result_dtype) {
  /* csrc/quantization/utils.cuh: ROCm's e4m3fnuz uses 224 (0x7E) "to avoid accuracy issues
   * when running dynamic quantization", not the format's 240. */
  return result_dtype == XR_DTYPE_F8E4M3FNUZ ? 224.0f : 448.0f;
}

static bool is_float(xr_dtype_t d) { return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16; }

/* "[4, 8]" into buf. */
static const char *shape_text(const xr_tensor_spec_t *t, char *buf, size_t cap) {
  size_t n = (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < t->rank && n < cap; d++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
  if (n < cap) snprintf(buf + n, cap - n, "]");
  return buf;
}

/* Whether the first `dims` dims of t, walked row-major, are evenly spaced (size-1 dims ignored);
 * *out their common stride (1 when fewer than two elements). */
static bool even_stride(const xr_tensor_spec_t *t, int dims, int64_t *out) {
  int64_t stride = 1, expect = 0;
  bool any = false;
  for (int d = dims - 1; d >= 0; d--) {
    if (t->shape[d] == 1) continue;
    if (!any) {
      stride = t->strides[d], expect = stride * t->shape[d], any = true;
    } else {
      if (t->strides[d] != expect) return false;
      expect *= t->shape[d];
    }
  }
  *out = stride;
  return true;
}

/* A [..., hidden] tensor's rows: contiguous columns, one row stride. */
static xr_status_t rows_of(xr_op_plan_t *plan, const char *name, const xr_tensor_spec_t *t, int64_t *out_rows,
                           int64_t *out_rs) {
  int r = t->rank;
  if (r < 1) return xr_plan_error(plan, "%s: expected a tensor of at least one dimension, got a 0-D one", name);
  if (t->shape[r - 1] > 1 && t->strides[r - 1] != 1)
    return xr_plan_error(plan, "%s: the last dimension must be contiguous (stride %lld), as vLLM requires", name,
                         (long long)t->strides[r - 1]);
  int64_t rows = 1;
  for (int d = 0; d < r - 1; d++) rows *= t->shape[d];
  if (!even_stride(t, r - 1, out_rs))
    return xr_plan_error(plan, "%s: the leading dimensions are not one evenly strided run of rows", name);
  if (r == 1) *out_rs = t->shape[0];
  *out_rows = rows;
  return XR_OK;
}

/* The static scale's groups (kernels/quant.h), as vLLM's static_scaled_fp8_quant reads them:
 * one element; a 1-D scale with group_shape, or without it a [hidden] one (per channel, as vLLM
 * did before group_shape); a 2-D scale whose shape divides the input's. */
static xr_status_t static_groups(xr_op_plan_t *plan, xr_quant_problem_t *p, const xr_tensor_spec_t *sc, int64_t sn) {
  char a[96];
  int64_t gs[2] = {0, 0};
  int count = 0;
  const xr_value_t *v = xr_op_arg(plan->op, 3, "group_shape");
  xr_status_t st;
  if (v && v->kind != XR_VALUE_NULL) {
    if ((st = xr_arg_int_list(plan->op, 3, "group_shape", true, gs, 2, &count))) return st;
    if (count != 2 || gs[0] == 0 || gs[1] == 0 || gs[0] < -1 || gs[1] < -1)
      return xr_plan_error(plan, "group_shape: expected two group sizes (each positive or -1)");
    gs[0] = gs[0] == -1 ? p->rows : gs[0], gs[1] = gs[1] == -1 ? p->hidden : gs[1];
  }
  p->scale_si = p->scale_sj = 0;
  if (sn == 1) return XR_OK; /* per tensor */
  p->grouped = true;
  if (sc->rank == 1) {
    if (!count) { /* vLLM before group_shape: a [hidden] scale is per channel */
      if (sn != p->hidden)
        return xr_plan_error(plan, "scale: expected 1 element (per tensor) or %lld (per channel), got shape %s; "
                                   "other 1-D scales need group_shape", (long long)p->hidden, shape_text(sc, a, sizeof a));
      gs[0] = p->rows, gs[1] = 1;
    }
    if (gs[0] < 1 || gs[1] < 1 || p->rows % gs[0] || p->hidden % gs[1] ||
        (p->rows / gs[0]) * (p->hidden / gs[1]) != sn || (p->rows / gs[0] != 1 && p->hidden / gs[1] != 1))
      return xr_plan_error(plan, "scale: %lld elements do not fit group_shape (%lld, %lld) of a [%lld, %lld] input "
                                 "(a 1-D scale is per channel or per token)", (long long)sn, (long long)gs[0],
                           (long long)gs[1], (long long)p->rows, (long long)p->hidden);
    p->group_m = gs[0], p->group_n = gs[1];
    if (p->rows / gs[0] == 1) p->scale_sj = sc->strides[0];
    else p->scale_si = sc->strides[0];
    return XR_OK;
  }
  if (sc->rank != 2 || sc->shape[0] < 1 || sc->shape[1] < 1 || p->rows % sc->shape[0] || p->hidden % sc->shape[1])
    return xr_plan_error(plan, "scale: shape %s does not divide the [%lld, %lld] input into groups (expected 1, "
                               "[hidden], or 2-D [rows / group_m, hidden / group_n])", shape_text(sc, a, sizeof a),
                         (long long)p->rows, (long long)p->hidden);
  p->group_m = p->rows / sc->shape[0], p->group_n = p->hidden / sc->shape[1];
  if (count && (gs[0] != p->group_m || gs[1] != p->group_n))
    return xr_plan_error(plan, "group_shape: (%lld, %lld) differs from the scale's groups (%lld, %lld)",
                         (long long)gs[0], (long long)gs[1], (long long)p->group_m, (long long)p->group_n);
  p->scale_si = sc->strides[0], p->scale_sj = sc->strides[1];
  return XR_OK;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  const xr_op_t *op = plan->op;
  xr_quant_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", op->name);
  plan->problem = p;
  p->op = !strcmp(op->name, "_C::static_scaled_fp8_quant")    ? XR_QUANT_STATIC
          : !strcmp(op->name, "_C::dynamic_scaled_fp8_quant") ? XR_QUANT_DYNAMIC
                                                              : XR_QUANT_PER_TOKEN;
  p->scale_ub = -1;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "result", true, &p->result)) ||
      (st = xr_arg_tensor(plan, 1, "input", true, &p->input)) ||
      (st = xr_arg_tensor(plan, 2, "scale", true, &p->scale)) ||
      (p->op == XR_QUANT_PER_TOKEN && (st = xr_arg_tensor(plan, 3, "scale_ub", false, &p->scale_ub))))
    return st;
  if (p->result < 0 || p->input < 0 || p->scale < 0) return xr_plan_error(plan, "tensor arguments are not bound");
  const xr_tensor_spec_t *in = plan->inputs[p->input], *out = plan->inputs[p->result];
  const xr_tensor_spec_t *sc = plan->inputs[p->scale];
  char a[96], b[96];
  if (!is_float(in->dtype))
    return xr_plan_error(plan, "input: expected a float32, float16 or bfloat16 tensor, got %s",
                         xr_dtype_name(in->dtype));
  if (out->dtype != XR_DTYPE_F8E4M3FN && out->dtype != XR_DTYPE_F8E4M3FNUZ)
    return xr_plan_error(plan, "result: expected a float8_e4m3fn or float8_e4m3fnuz tensor (vLLM's fp8 types), "
                               "got %s", xr_dtype_name(out->dtype));
  int64_t out_rows;
  if ((st = rows_of(plan, "input", in, &p->rows, &p->in_rs)) || (st = rows_of(plan, "result", out, &out_rows, &p->out_rs)))
    return st;
  bool same = out->rank == in->rank;
  for (int d = 0; same && d < in->rank; d++)
    same = d == 0 && in->rank == 2 ? out->shape[0] >= in->shape[0] : out->shape[d] == in->shape[d];
  if (!same)
    return xr_plan_error(plan, "result: shape %s does not match the input's %s (only a 2-D result may have more "
                               "rows, vLLM's num_token_padding)", shape_text(out, a, sizeof a), shape_text(in, b, sizeof b));
  p->in_dtype = in->dtype, p->out_dtype = out->dtype;
  p->hidden = in->shape[in->rank - 1];
  p->in_off = in->storage_offset, p->out_off = out->storage_offset;
  p->fp8_max = xr_quant_fp8_max(out->dtype);
  p->min_scale = (float)(1.0 / ((double)p->fp8_max * 512.0));
  /* scale */
  int64_t sn = xr_spec_numel(sc);
  if (sc->dtype != XR_DTYPE_F32)
    return xr_plan_error(plan, "scale: expected a float32 tensor, got %s", xr_dtype_name(sc->dtype));
  p->scale_off = sc->storage_offset, p->scale_si = 1, p->scale_sj = 0;
  p->group_m = p->rows > 0 ? p->rows : 1, p->group_n = p->hidden > 0 ? p->hidden : 1;
  if (p->op == XR_QUANT_STATIC) {
    if ((st = static_groups(plan, p, sc, sn))) return st;
  } else if (p->op == XR_QUANT_DYNAMIC) {
    p->scale_si = 0;
    if (sn != 1)
      return xr_plan_error(plan, "scale: expected one element (the per-tensor scale the op writes), got shape %s",
                           shape_text(sc, a, sizeof a));
  } else {
    if (sn < p->rows || !even_stride(sc, sc->rank, &p->scale_si))
      return xr_plan_error(plan, "scale: expected [%lld, 1] (one float per token, evenly strided), got shape %s",
                           (long long)p->rows, shape_text(sc, a, sizeof a));
  }
  if (p->scale_ub >= 0) {
    const xr_tensor_spec_t *ub = plan->inputs[p->scale_ub];
    if (ub->dtype != XR_DTYPE_F32 || xr_spec_numel(ub) != 1)
      return xr_plan_error(plan, "scale_ub: expected a float32 tensor with one element, got %s %s",
                           xr_dtype_name(ub->dtype), shape_text(ub, a, sizeof a));
    p->ub_off = ub->storage_offset;
  }
  /* Work: one scaling per element, plus the absolute maximum of the dynamic ops; traffic: the
   * input read once (the per-tensor maximum's second pass over it is the algorithm's, not data
   * the op must move), the fp8 result written (a byte an element), the scales. */
  double n = (double)p->rows * (double)p->hidden, esz = (double)xr_dtype_size(in->dtype);
  bool reduces = p->op != XR_QUANT_STATIC;
  plan->flops = n * (reduces ? 2.0 : 1.0);
  plan->bytes = n * esz + n +
                4.0 * (p->op == XR_QUANT_PER_TOKEN ? (double)p->rows
                       : p->grouped ? (double)(p->rows / p->group_m) * (double)(p->hidden / p->group_n)
                                    : 1.0);
  plan->return_count = 0;
  return XR_OK;
}

xr_status_t xr_quant_host(const xr_quant_problem_t *p, const xr_tensor_t *tensors, xr_quant_host_t *h) {
  void *in, *out, *scale, *ub = NULL;
  xr_status_t st;
  if ((st = xr_tensor_host(&tensors[p->input], &in)) || (st = xr_tensor_host(&tensors[p->result], &out)) ||
      (st = xr_tensor_host(&tensors[p->scale], &scale)) ||
      (p->scale_ub >= 0 && (st = xr_tensor_host(&tensors[p->scale_ub], &ub))))
    return st;
  *h = (xr_quant_host_t){in, out, scale, ub};
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* the reference                                                                               */

typedef struct ref_state {
  const xr_quant_problem_t *p;
  const void *in;
  uint8_t *out;
  float *scale;
  const float *ub;
  float inv; /* dynamic: 1 / the scale computed by ref_absmax */
} ref_state_t;

/* fp8(clamp(x, -M, M)), C's fmin/fmax ignoring a NaN as CUDA's fminf/fmaxf do. */
static uint8_t ref_fp8(const xr_quant_problem_t *p, double x) {
  double r = fmax(-(double)p->fp8_max, fmin(x, (double)p->fp8_max));
  return xr_f32_to_fp8((float)r, p->out_dtype);
}

static double ref_load(const ref_state_t *s, int64_t r, int64_t c) {
  return xr_load_element(s->in, s->p->in_dtype, s->p->in_off + r * s->p->in_rs + c);
}

/* max |x| over a row, NaN ignored, starting at 0. */
static double ref_row_absmax(const ref_state_t *s, int64_t r) {
  double m = 0;
  for (int64_t c = 0; c < s->p->hidden; c++) m = fmax(m, fabs(ref_load(s, r, c)));
  return m;
}

static void ref_rows(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_quant_problem_t *p = s->p;
  for (int64_t r = (int64_t)begin; r < (int64_t)end; r++) {
    uint8_t *row = s->out + p->out_off + r * p->out_rs;
    if (p->op == XR_QUANT_PER_TOKEN) {
      double m = ref_row_absmax(s, r);
      if (s->ub) m = fmin(m, (double)s->ub[p->ub_off]);
      float ts = (float)fmax((double)(float)(m / (double)p->fp8_max), (double)p->min_scale);
      s->scale[p->scale_off + r * p->scale_si] = ts;
      for (int64_t c = 0; c < p->hidden; c++) row[c] = ref_fp8(p, (double)(float)(ref_load(s, r, c) / (double)ts));
      continue;
    }
    for (int64_t c = 0; c < p->hidden; c++) {
      double inv = p->op == XR_QUANT_DYNAMIC
                       ? (double)s->inv
                       : (double)(float)(1.0 / (double)s->scale[p->scale_off + (r / p->group_m) * p->scale_si +
                                                                (c / p->group_n) * p->scale_sj]);
      row[c] = ref_fp8(p, (double)(float)(ref_load(s, r, c) * inv));
    }
  }
}

/* dynamic: scale[0] = max|x| / M over the whole input, then its reciprocal, both in float. */
static void ref_absmax(void *ctx) {
  ref_state_t *s = ctx;
  const xr_quant_problem_t *p = s->p;
  double m = 0;
  for (int64_t r = 0; r < p->rows; r++) m = fmax(m, ref_row_absmax(s, r));
  float scale = (float)(m / (double)p->fp8_max);
  s->scale[p->scale_off] = scale;
  s->inv = (float)(1.0 / (double)scale);
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device, const xr_tensor_t *tensors,
                               void **out_state) {
  (void)device;
  const xr_quant_problem_t *p = plan->problem;
  ref_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  xr_quant_host_t h;
  xr_status_t st = xr_quant_host(p, tensors, &h);
  if (st != XR_OK) {
    free(s);
    return st;
  }
  s->in = h.in, s->out = h.out, s->scale = h.scale, s->ub = h.ub;
  *out_state = s;
  return XR_OK;
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  ref_state_t *s = state;
  xr_status_t st = XR_OK;
  if (s->p->op == XR_QUANT_DYNAMIC) st = xr_hal_stream_enqueue_host(stream, ref_absmax, s);
  if (st == XR_OK && s->p->rows > 0 && s->p->hidden > 0)
    st = xr_hal_stream_enqueue_parallel(stream, (size_t)s->p->rows, 1, ref_rows, s);
  return st;
}

static const xr_kernel_impl_t ref_quant = {
    .name = "ref.quant",
    .driver = "cpu",
    .reference = true,
    .prepare = ref_prepare,
    .enqueue = ref_enqueue,
    .release = free,
};

/* ------------------------------------------------------------------------------------------ */
/* custom initializer                                                                          */

/* A static scale and a scale_ub are a checkpoint's calibration, which a trace does not record;
 * N(0, 1) values (negative, near zero) would saturate or flip every element. Without real
 * contents the static scale becomes max|input| / M (grouped scales: each group's; 1 for an
 * all-zero group), the calibration of these very inputs, and scale_ub the median of the rows' max|x|, so that about
 * half the tokens are clamped by it. */
static double init_load(const xr_init_context_t *c, const xr_quant_problem_t *p, int64_t r, int64_t col) {
  return xr_load_element(c->host[p->input], p->in_dtype, p->in_off + r * p->in_rs + col);
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

static xr_status_t init_quant(xr_init_context_t *c) {
  const xr_quant_problem_t *p = c->plan->problem;
  char what[160];
  if (p->op == XR_QUANT_STATIC && !c->has_data[p->scale]) {
    int64_t gi = p->rows / p->group_m > 0 ? p->rows / p->group_m : 1;
    int64_t gj = p->hidden / p->group_n > 0 ? p->hidden / p->group_n : 1;
    double *m = calloc((size_t)(gi * gj), sizeof *m);
    if (!m) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
    for (int64_t r = 0; r < p->rows; r++)
      for (int64_t col = 0; col < p->hidden; col++) {
        double *g = &m[(r / p->group_m) * gj + col / p->group_n];
        *g = fmax(*g, fabs(init_load(c, p, r, col)));
      }
    for (int64_t i = 0; i < gi; i++)
      for (int64_t j = 0; j < gj; j++)
        xr_store_element(c->host[p->scale], XR_DTYPE_F32, p->scale_off + i * p->scale_si + j * p->scale_sj,
                         m[i * gj + j] > 0 ? m[i * gj + j] / (double)p->fp8_max : 1.0);
    if (p->grouped)
      snprintf(what, sizeof what, "scale = max|input| / %g per group of %lld x %lld", (double)p->fp8_max,
               (long long)p->group_m, (long long)p->group_n);
    else
      snprintf(what, sizeof what, "scale = max|input| / %g = %.6g", (double)p->fp8_max,
               m[0] > 0 ? m[0] / (double)p->fp8_max : 1.0);
    free(m);
    xr_init_describe(c, what);
  }
  if (p->scale_ub >= 0 && !c->has_data[p->scale_ub] && p->rows > 0) {
    double *m = malloc(sizeof(double) * (size_t)p->rows);
    if (!m) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
    for (int64_t r = 0; r < p->rows; r++) {
      m[r] = 0;
      for (int64_t col = 0; col < p->hidden; col++) m[r] = fmax(m[r], fabs(init_load(c, p, r, col)));
    }
    qsort(m, (size_t)p->rows, sizeof *m, cmp_double);
    double ub = m[(p->rows - 1) / 2];
    free(m);
    xr_store_element(c->host[p->scale_ub], XR_DTYPE_F32, p->ub_off, ub);
    snprintf(what, sizeof what, "scale_ub = the median row max|input| = %.6g", ub);
    xr_init_describe(c, what);
  }
  return XR_OK;
}

static const struct xr_op_initializer quant_initializers[] = {
    {"_C::static_scaled_fp8_quant", init_quant},
    {"_C::dynamic_per_token_scaled_fp8_quant", init_quant},
    {NULL, NULL},
};

static const xr_kernel_impl_t *const quant_impls[] = {
    &xr_quant_cpu_impl,
    &xr_quant_opencl_impl,
    &xr_quant_gpu_impl,
    &ref_quant,
    NULL,
};

const xr_op_family_t xr_family_quant = {
    .name = "quant",
    .op_names = quant_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = quant_impls,
    .initializers = quant_initializers,
};
