/* Helpers for the families' custom initializers (kernels/initializer.h). */
#include "kernels/initializer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/family.h"

/* splitmix64: small, fast, and good enough to seed and to fill test tensors. */
uint64_t xr_rng_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double xr_rng_uniform(uint64_t *state) { return (double)(xr_rng_next(state) >> 11) * 0x1p-53; }

double xr_rng_normal(uint64_t *state) {
  double u1 = xr_rng_uniform(state), u2 = xr_rng_uniform(state);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* The family's argument readers (kernels/family.h), by name only; an argument of another kind
 * counts as absent here (the op's analysis has already judged it). */
int xr_init_input(const xr_init_context_t *c, const char *name) {
  int index = -1;
  xr_arg_tensor(c->plan, -1, name, false, &index);
  return index;
}

int64_t xr_init_int_arg(const xr_init_context_t *c, const char *name, int64_t fallback) {
  int64_t value = fallback;
  return xr_arg_int(c->op, -1, name, false, &value) == XR_OK ? value : fallback;
}

bool xr_init_hint(const xr_init_context_t *c, const char *name, int64_t *out) {
  for (size_t i = 0; i < c->op->hint_count; i++) {
    const xr_arg_t *h = &c->op->hints[i];
    if (h->name && !strcmp(h->name, name) && h->value.kind == XR_VALUE_INT) {
      *out = h->value.as.i;
      return true;
    }
  }
  return false;
}

void xr_init_describe_compact(xr_init_context_t *c, int64_t blocks, const char *unit) {
  int64_t recorded;
  if (!xr_init_hint(c, "recorded_cache_blocks", &recorded)) return;
  char what[128];
  snprintf(what, sizeof what, "cache: compact, %lld of %lld %s", (long long)blocks,
           (long long)recorded, unit);
  xr_init_describe(c, what);
}

void xr_init_describe(xr_init_context_t *c, const char *what) {
  size_t len = strlen(c->policy);
  snprintf(c->policy + len, c->policy_size - len, "%s%s", len ? "; " : "", what);
}

int64_t xr_init_load(const xr_init_context_t *c, int index, int64_t i) {
  const xr_tensor_spec_t *t = c->plan->inputs[index];
  return (int64_t)xr_load_element(c->host[index], t->dtype, t->storage_offset + i * t->strides[0]);
}

int64_t xr_init_load_2d(const xr_init_context_t *c, int index, int64_t i, int64_t j) {
  const xr_tensor_spec_t *t = c->plan->inputs[index];
  return (int64_t)xr_load_element(c->host[index], t->dtype,
                                  t->storage_offset + i * t->strides[0] + j * t->strides[1]);
}

void xr_init_store(xr_init_context_t *c, int index, int64_t i, double value) {
  const xr_tensor_spec_t *t = c->plan->inputs[index];
  xr_store_element(c->host[index], t->dtype, t->storage_offset + i * t->strides[0], value);
}

void xr_init_even_split(xr_init_context_t *c, int index, int64_t count, int64_t total,
                        int64_t max_len) {
  int64_t start = 0;
  xr_init_store(c, index, 0, 0);
  for (int64_t b = 0; b < count; b++) {
    int64_t len = total / count + (b < total % count);
    if (max_len > 0 && len > max_len) len = max_len;
    start += len;
    xr_init_store(c, index, b + 1, (double)start);
  }
}

void xr_init_shuffle(int64_t *perm, int64_t n, int64_t take, uint64_t *seed) {
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  for (int64_t i = 0; i < take && i < n - 1; i++) {
    int64_t j = i + (int64_t)(xr_rng_next(seed) % (uint64_t)(n - i)), t = perm[i];
    perm[i] = perm[j], perm[j] = t;
  }
}

void xr_init_indices(xr_init_context_t *c, int index, int64_t rows, const char *what) {
  if (index < 0 || c->has_data[index] || rows < 1) return;
  const xr_tensor_spec_t *t = c->plan->inputs[index];
  if (xr_dtype_is_floating(t->dtype)) return;
  uint64_t s = c->seed;
  size_t n = c->sizes[index] / xr_dtype_size(t->dtype);
  for (size_t i = 0; i < n; i++)
    xr_store_element(c->host[index], t->dtype, (int64_t)i,
                     (double)(xr_rng_next(&s) % (uint64_t)rows));
  char text[96];
  snprintf(text, sizeof text, "%s uniform in [0, %lld)", what, (long long)rows);
  xr_init_describe(c, text);
}

static void store_nan(const xr_init_context_t *c, int index, int64_t at) {
  const xr_tensor_spec_t *t = c->plan->inputs[index];
  if (t->dtype == XR_DTYPE_U8 || t->dtype == XR_DTYPE_I8)
    ((uint8_t *)c->host[index])[at] = strncmp(c->op->name, "_rocm_C::", 9) ? 0x7f : 0x80;
  else
    xr_store_element(c->host[index], t->dtype, at, NAN);
}

void xr_init_poison_dead_cells(const xr_init_context_t *c, int index, int dim_a, int dim_b,
                               int64_t cells_b, const bool *live) {
  if (index < 0 || c->has_data[index]) return;
  const xr_tensor_spec_t *t = c->plan->inputs[index];
  if (!xr_dtype_is_floating(t->dtype) && t->dtype != XR_DTYPE_U8 && t->dtype != XR_DTYPE_I8)
    return;
  int64_t n = 1, idx[XR_MAX_RANK] = {0};
  for (int32_t d = 0; d < t->rank; d++) n *= t->shape[d];
  for (int64_t e = 0; e < n; e++) {
    int64_t cell = idx[dim_a] * cells_b + (dim_b >= 0 ? idx[dim_b] : 0);
    if (!live[cell]) {
      int64_t at = t->storage_offset;
      for (int32_t d = 0; d < t->rank; d++) at += idx[d] * t->strides[d];
      store_nan(c, index, at);
    }
    for (int32_t d = t->rank - 1; d >= 0 && ++idx[d] == t->shape[d]; d--) idx[d] = 0;
  }
}
