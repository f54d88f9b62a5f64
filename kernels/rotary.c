/* The rotary family: _C::rotary_embedding(positions, query, key?, head_size, cos_sin_cache,
 * is_neox[, rope_dim_offset=0, inverse=False]) as vLLM defines it, and sgl-kernel's copy of it,
 * sgl_kernel::rotary_embedding(positions, query!, key!?, head_size, cos_sin_cache, is_neox)
 * (sgl-kernel/csrc/common_extension_rocm.cc; the kernel is vLLM's); the semantics are spelled
 * out at xr_rotary_problem_t in kernels/norm.h. A traced sgl_kernel op records only dtypes as
 * argument types, so query and key are marked written here.
 *
 * Layouts: positions [T] or [B, S]; query and key [tokens..., heads * head_size] or
 * [tokens..., heads, head_size] (any strides), key having num_kv_heads heads; cos_sin_cache
 * [max_position, rot_dim] = cat(cos, sin), of any float dtype. In place on query and key. The
 * reference computes each rotated pair in double from the stored values and rounds once (vLLM
 * computes in fp32; the golden tolerances cover either). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/norm.h"
#include "kernels/initializer.h"

static const char *const rotary_ops[] = {"_C::rotary_embedding", "sgl_kernel::rotary_embedding",
                                         NULL};

static bool is_float(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16 || d == XR_DTYPE_F64;
}

/* Heads, head stride and element stride of query or key. */
static xr_status_t head_layout(const xr_op_plan_t *plan, const char *name,
                               const xr_tensor_spec_t *t, const xr_rotary_problem_t *p,
                               int64_t *out_heads, int64_t *out_head_stride,
                               int64_t *out_elem_stride, int64_t *out_token_strides) {
  const xr_tensor_spec_t *pos = plan->inputs[p->positions];
  int tr = p->token_rank;
  if (t->rank != tr + 1 && t->rank != tr + 2)
    return xr_plan_error(plan, "%s: expected %d or %d dimensions for %d-D positions, got %d", name,
                         tr + 1, tr + 2, tr, t->rank);
  for (int d = 0; d < tr; d++) {
    if (t->shape[d] != pos->shape[d])
      return xr_plan_error(plan, "%s: dimension %d is %lld, positions has %lld", name, d,
                           (long long)t->shape[d], (long long)pos->shape[d]);
    out_token_strides[d] = t->strides[d];
  }
  if (t->rank == tr + 2) {
    if (t->shape[tr + 1] != p->head_size)
      return xr_plan_error(plan, "%s: head dimension is %lld, head_size %lld", name,
                           (long long)t->shape[tr + 1], (long long)p->head_size);
    *out_heads = t->shape[tr];
    *out_head_stride = t->strides[tr];
    *out_elem_stride = t->strides[tr + 1];
  } else {
    int64_t hidden = t->shape[tr];
    if (hidden % p->head_size != 0)
      return xr_plan_error(plan, "%s: hidden size %lld is not a multiple of head_size %lld", name,
                           (long long)hidden, (long long)p->head_size);
    *out_heads = hidden / p->head_size;
    *out_head_stride = p->head_size * t->strides[tr];
    *out_elem_stride = t->strides[tr];
  }
  return XR_OK;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  const xr_op_t *op = plan->op;
  xr_rotary_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", op->name);
  plan->problem = p;
  p->key = -1;
  bool vllm = !strcmp(op->name, "_C::rotary_embedding"); /* sgl_kernel's has no trailing two */
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "positions", true, &p->positions)) ||
      (st = xr_arg_tensor(plan, 1, "query", true, &p->query)) ||
      (st = xr_arg_tensor(plan, 2, "key", false, &p->key)) ||
      (st = xr_arg_int(op, 3, "head_size", true, &p->head_size)) ||
      (st = xr_arg_tensor(plan, 4, "cos_sin_cache", true, &p->cache)) ||
      (st = xr_arg_bool(op, 5, "is_neox", true, &p->is_neox)) ||
      (vllm && (st = xr_arg_int(op, 6, "rope_dim_offset", false, &p->rope_dim_offset))) ||
      (vllm && (st = xr_arg_bool(op, 7, "inverse", false, &p->inverse))))
    return st;
  if (p->positions < 0 || p->query < 0 || p->cache < 0)
    return xr_plan_error(plan, "tensor arguments are not bound");
  const xr_tensor_spec_t *pos = plan->inputs[p->positions], *q = plan->inputs[p->query];
  const xr_tensor_spec_t *cache = plan->inputs[p->cache];
  if (pos->dtype != XR_DTYPE_I64 && pos->dtype != XR_DTYPE_I32)
    return xr_plan_error(plan, "positions: expected int64 or int32, got %s", xr_dtype_name(pos->dtype));
  if (pos->rank != 1 && pos->rank != 2)
    return xr_plan_error(plan, "positions: expected [num_tokens] or [batch, seq], got %d-D", pos->rank);
  if (!is_float(q->dtype))
    return xr_plan_error(plan, "query: expected a float tensor, got %s", xr_dtype_name(q->dtype));
  if (!is_float(cache->dtype) || cache->rank != 2)
    return xr_plan_error(plan, "cos_sin_cache: expected a 2-D float tensor [max_position, rot_dim]");
  if (p->head_size < 1) return xr_plan_error(plan, "head_size: %lld", (long long)p->head_size);
  p->pos_dtype = pos->dtype;
  p->q_dtype = q->dtype;
  p->cache_dtype = cache->dtype;
  p->token_rank = pos->rank;
  p->tokens = 1;
  for (int d = 0; d < pos->rank; d++) {
    p->token_shape[d] = pos->shape[d];
    p->pos_strides[d] = pos->strides[d];
    p->tokens *= pos->shape[d];
  }
  p->max_position = cache->shape[0];
  p->rot_dim = cache->shape[1];
  p->cache_pos_stride = cache->strides[0];
  p->cache_elem_stride = cache->strides[1];
  if (p->rot_dim % 2 != 0 || p->rope_dim_offset < 0 || p->rot_dim + p->rope_dim_offset > p->head_size)
    return xr_plan_error(plan, "cos_sin_cache: rot_dim %lld (+ rope_dim_offset %lld) must be even "
                         "and fit head_size %lld", (long long)p->rot_dim,
                         (long long)p->rope_dim_offset, (long long)p->head_size);
  if ((st = head_layout(plan, "query", q, p, &p->num_heads, &p->q_head_stride, &p->q_elem_stride,
                        p->q_token_strides)))
    return st;
  p->num_kv_heads = 0;
  if (p->key >= 0) {
    const xr_tensor_spec_t *k = plan->inputs[p->key];
    if (k->dtype != q->dtype)
      return xr_plan_error(plan, "key: expected %s like query, got %s", xr_dtype_name(q->dtype),
                           xr_dtype_name(k->dtype));
    if ((st = head_layout(plan, "key", k, p, &p->num_kv_heads, &p->k_head_stride,
                          &p->k_elem_stride, p->k_token_strides)))
      return st;
    if (p->num_kv_heads == 0 || p->num_heads % p->num_kv_heads != 0)
      return xr_plan_error(plan, "key: %lld heads do not divide the query's %lld",
                           (long long)p->num_kv_heads, (long long)p->num_heads);
  }
  xr_plan_mark_written(plan, p->query);
  xr_plan_mark_written(plan, p->key);
  plan->return_count = 0;
  double rotated = (double)p->tokens * (double)(p->num_heads + p->num_kv_heads) * (double)p->rot_dim;
  plan->flops = 3.0 * rotated; /* two multiplies and an add per rotated element */
  plan->bytes = 2.0 * rotated * (double)xr_dtype_size(q->dtype) +
                (double)p->tokens * ((double)p->rot_dim * (double)xr_dtype_size(cache->dtype) +
                                     (double)xr_dtype_size(pos->dtype));
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* CPU reference                                                                              */

typedef struct ref_state {
  const xr_rotary_problem_t *p;
  void *pos, *q, *k, *cache;
  int64_t pos_offset, q_offset, k_offset, cache_offset;
} ref_state_t;

static void rotate_heads(const ref_state_t *s, void *base, int64_t token_base, int64_t heads,
                         int64_t head_stride, int64_t elem_stride, int64_t cache_row) {
  const xr_rotary_problem_t *p = s->p;
  int64_t embed = p->rot_dim / 2;
  for (int64_t h = 0; h < heads; h++) {
    int64_t head = token_base + h * head_stride + p->rope_dim_offset * elem_stride;
    for (int64_t i = 0; i < embed; i++) {
      double c = xr_load_element(s->cache, p->cache_dtype, cache_row + i * p->cache_elem_stride);
      double sn = xr_load_element(s->cache, p->cache_dtype,
                                  cache_row + (embed + i) * p->cache_elem_stride);
      if (p->inverse) sn = -sn;
      int64_t xi = p->is_neox ? i : 2 * i, yi = p->is_neox ? embed + i : 2 * i + 1;
      double x = xr_load_element(base, p->q_dtype, head + xi * elem_stride);
      double y = xr_load_element(base, p->q_dtype, head + yi * elem_stride);
      xr_store_element(base, p->q_dtype, head + xi * elem_stride, x * c - y * sn);
      xr_store_element(base, p->q_dtype, head + yi * elem_stride, y * c + x * sn);
    }
  }
}

static void ref_tokens(void *ctx, size_t begin, size_t end) {
  const ref_state_t *s = ctx;
  const xr_rotary_problem_t *p = s->p;
  for (int64_t t = (int64_t)begin; t < (int64_t)end; t++) {
    int64_t position = (int64_t)xr_load_element(
        s->pos, p->pos_dtype, s->pos_offset + xr_rotary_token_offset(p, p->pos_strides, t));
    if (position < 0 || position >= p->max_position) continue;
    int64_t cache_row = s->cache_offset + position * p->cache_pos_stride;
    rotate_heads(s, s->q, s->q_offset + xr_rotary_token_offset(p, p->q_token_strides, t),
                 p->num_heads, p->q_head_stride, p->q_elem_stride, cache_row);
    if (s->k)
      rotate_heads(s, s->k, s->k_offset + xr_rotary_token_offset(p, p->k_token_strides, t),
                   p->num_kv_heads, p->k_head_stride, p->k_elem_stride, cache_row);
  }
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_rotary_problem_t *p = plan->problem;
  ref_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  const int idx[4] = {p->positions, p->query, p->key, p->cache};
  void **base[4] = {&s->pos, &s->q, &s->k, &s->cache};
  int64_t *offset[4] = {&s->pos_offset, &s->q_offset, &s->k_offset, &s->cache_offset};
  for (int i = 0; i < 4; i++) {
    if (idx[i] < 0) continue;
    xr_status_t st = xr_tensor_host(&tensors[idx[i]], base[i]);
    if (st != XR_OK) {
      free(s);
      return st;
    }
    *offset[i] = tensors[idx[i]].offset;
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  ref_state_t *s = state;
  if (s->p->tokens == 0) return XR_OK;
  return xr_hal_stream_enqueue_parallel(stream, (size_t)s->p->tokens, 1, ref_tokens, s);
}

static const xr_kernel_impl_t ref_rotary = {
    .name = "ref.rotary",
    .driver = "cpu",
    .reference = true,
    .prepare = ref_prepare,
    .enqueue = ref_enqueue,
    .release = free,
};

/* ------------------------------------------------------------------------------------------ */
/* custom initializers                                                                         */

/* Rotary positions index rows of the cos/sin cache. The problem's binding indices, not the
 * argument names, find them: a traced custom op's arguments have no names. */
static xr_status_t init_rotary(xr_init_context_t *c) {
  const xr_rotary_problem_t *p = c->plan->problem;
  xr_init_indices(c, p->positions, p->max_position, "positions");
  return XR_OK;
}

static const struct xr_op_initializer rotary_initializers[] = {
    {"_C::rotary_embedding", init_rotary},
    {"sgl_kernel::rotary_embedding", init_rotary},
    {NULL, NULL},
};

static const xr_kernel_impl_t *const rotary_impls[] = {
    &xr_cpu_rotary_impl,
    &xr_opencl_rotary_impl,
    &xr_gpu_rotary_impl,
    &ref_rotary,
    NULL,
};

const xr_op_family_t xr_family_rotary = {
    .name = "rotary",
    .op_names = rotary_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = rotary_impls,
    .initializers = rotary_initializers,
};

