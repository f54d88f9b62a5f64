/* Structural equality of two bundles: what the codecs' round-trip tests and `convert` check. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "formats/bundle.h"
#include "formats/internal.h"

/* ------------------------------------------------------------------------------------------ */
/* structural equality                                                                         */

typedef struct where {
  char *buf;
  size_t size;
} where_t;

static bool differ(where_t *w, const char *fmt, const char *path, const char *what) {
  if (w->buf && w->size) snprintf(w->buf, w->size, fmt, path, what);
  return false;
}

static bool str_eq(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool value_equal(const xr_value_t *a, const xr_value_t *b, const char *path, where_t *w);

static bool tensor_equal(const xr_tensor_spec_t *a, const xr_tensor_spec_t *b, const char *path,
                         where_t *w) {
  if (a->rank != b->rank) return differ(w, "%s.%s", path, "rank");
  for (int32_t i = 0; i < a->rank; i++) {
    if (a->shape[i] != b->shape[i]) return differ(w, "%s.%s", path, "shape");
    if (a->strides[i] != b->strides[i]) return differ(w, "%s.%s", path, "strides");
  }
  if (a->storage_offset != b->storage_offset) return differ(w, "%s.%s", path, "storage_offset");
  if (a->storage_size != b->storage_size) return differ(w, "%s.%s", path, "storage_size");
  if (a->dtype != b->dtype) return differ(w, "%s.%s", path, "dtype");
  if (a->init != b->init) return differ(w, "%s.%s", path, "init");
  if (!str_eq(a->data_file, b->data_file)) return differ(w, "%s.%s", path, "data");
  if (a->data_size != b->data_size || (a->data_size && memcmp(a->data, b->data, a->data_size)))
    return differ(w, "%s.%s", path, "embedded data");
  return true;
}

static bool value_equal(const xr_value_t *a, const xr_value_t *b, const char *path, where_t *w) {
  if (a->kind != b->kind) return differ(w, "%s%s", path, " (kind)");
  switch (a->kind) {
    case XR_VALUE_NULL: return true;
    case XR_VALUE_BOOL: return a->as.b == b->as.b || differ(w, "%s%s", path, "");
    case XR_VALUE_INT: return a->as.i == b->as.i || differ(w, "%s%s", path, "");
    case XR_VALUE_FLOAT:
      /* NaN equals NaN here: the question is whether the file kept the value. */
      if ((isnan(a->as.f) && isnan(b->as.f)) ||
          memcmp(&a->as.f, &b->as.f, sizeof(double)) == 0)
        return true;
      return differ(w, "%s%s", path, "");
    case XR_VALUE_STRING: return str_eq(a->as.s, b->as.s) || differ(w, "%s%s", path, "");
    case XR_VALUE_LIST: {
      if (a->as.list.count != b->as.list.count) return differ(w, "%s%s", path, " (length)");
      for (size_t i = 0; i < a->as.list.count; i++) {
        char sub[512];
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        if (!value_equal(&a->as.list.items[i], &b->as.list.items[i], sub, w)) return false;
      }
      return true;
    }
    case XR_VALUE_TENSOR: return tensor_equal(a->as.tensor, b->as.tensor, path, w);
  }
  return false;
}

static bool args_equal(const xr_arg_t *a, const xr_arg_t *b, size_t n, const char *path,
                       where_t *w) {
  for (size_t i = 0; i < n; i++) {
    char sub[512];
    snprintf(sub, sizeof sub, "%s[%zu]", path, i);
    if (!str_eq(a[i].name, b[i].name)) return differ(w, "%s.%s", sub, "name");
    if (!str_eq(a[i].type, b[i].type)) return differ(w, "%s.%s", sub, "type");
    if (a[i].defaulted != b[i].defaulted) return differ(w, "%s.%s", sub, "defaulted");
    strncat(sub, ".value", sizeof sub - strlen(sub) - 1);
    if (!value_equal(&a[i].value, &b[i].value, sub, w)) return false;
  }
  return true;
}

bool xr_bundle_equal(const xr_bundle_t *a, const xr_bundle_t *b, char *out_where,
                     size_t where_size) {
  where_t w = {out_where, where_size};
  const xr_bundle_metadata_t *ma = &a->meta, *mb = &b->meta;
  if (ma->format_version != mb->format_version) return differ(&w, "%s.%s", "metadata", "format_version");
  for (size_t i = 0; xr_metadata_fields[i]; i++)
    if (!str_eq(xr_metadata_value(ma, i), xr_metadata_value(mb, i)))
      return differ(&w, "%s.%s", "metadata", xr_metadata_fields[i]);
  if (ma->extra_count != mb->extra_count) return differ(&w, "%s.%s", "metadata", "extra");
  if (!args_equal(ma->extra, mb->extra, ma->extra_count, "metadata.extra", &w)) return false;
  if (a->op_count != b->op_count) return differ(&w, "%s%s", "ops", " (count)");
  for (size_t i = 0; i < a->op_count; i++) {
    const xr_op_t *x = &a->ops[i], *y = &b->ops[i];
    char p[64];
    snprintf(p, sizeof p, "ops[%zu]", i);
    if (!str_eq(x->name, y->name)) return differ(&w, "%s.%s", p, "name");
    if (!str_eq(x->alias, y->alias)) return differ(&w, "%s.%s", p, "alias");
    if (x->count != y->count) return differ(&w, "%s.%s", p, "count");
    if (x->arg_count != y->arg_count) return differ(&w, "%s.%s", p, "args (count)");
    if (x->kwarg_count != y->kwarg_count) return differ(&w, "%s.%s", p, "kwargs (count)");
    if (x->hint_count != y->hint_count) return differ(&w, "%s.%s", p, "hints (count)");
    char sub[96];
    snprintf(sub, sizeof sub, "%s.args", p);
    if (!args_equal(x->args, y->args, x->arg_count, sub, &w)) return false;
    snprintf(sub, sizeof sub, "%s.kwargs", p);
    if (!args_equal(x->kwargs, y->kwargs, x->kwarg_count, sub, &w)) return false;
    snprintf(sub, sizeof sub, "%s.hints", p);
    if (!args_equal(x->hints, y->hints, x->hint_count, sub, &w)) return false;
    if (!x->timing != !y->timing) return differ(&w, "%s.%s", p, "timing");
    if (x->timing) {
      const xr_op_timing_t *s = x->timing, *t = y->timing;
      if (s->gpu_time_us != t->gpu_time_us || !str_eq(s->device, t->device) ||
          !str_eq(s->graph_capture, t->graph_capture) ||
          s->graph_batch_size != t->graph_batch_size || s->kernel_count != t->kernel_count)
        return differ(&w, "%s.%s", p, "timing");
      for (size_t k = 0; k < s->kernel_count; k++)
        if (!str_eq(s->kernels[k].name, t->kernels[k].name) ||
            s->kernels[k].duration_us != t->kernels[k].duration_us ||
            s->kernels[k].count != t->kernels[k].count)
          return differ(&w, "%s.%s", p, "timing.kernels");
    }
  }
  return true;
}
