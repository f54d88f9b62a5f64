/* The bundle model: arena, dtypes, construction, tensor geometry and structural equality. */
#include "formats/bundle.h"
#include "formats/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------------------------------ */
/* arena: bump allocation in chunks, freed all at once with the bundle                          */

typedef struct xr_arena_chunk {
  struct xr_arena_chunk *next;
  size_t used, capacity;
  max_align_t data[];
} xr_arena_chunk_t;

struct xr_arena {
  xr_arena_chunk_t *head;
};

enum { XR_ARENA_CHUNK = 256 * 1024 };

static void *arena_alloc(xr_arena_t *arena, size_t size) {
  size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
  xr_arena_chunk_t *c = arena->head;
  if (!c || c->capacity - c->used < size) {
    /* Large requests get a chunk of their own so the current chunk keeps its free space. */
    size_t capacity = size > XR_ARENA_CHUNK / 4 ? size : XR_ARENA_CHUNK;
    if (capacity > SIZE_MAX - sizeof(xr_arena_chunk_t)) return NULL;
    xr_arena_chunk_t *n = malloc(sizeof(xr_arena_chunk_t) + capacity);
    if (!n) return NULL;
    n->used = 0;
    n->capacity = capacity;
    if (c && capacity == size) {
      n->next = c->next;
      c->next = n;
    } else {
      n->next = c;
      arena->head = n;
    }
    c = n;
  }
  void *p = (char *)c->data + c->used;
  c->used += size;
  memset(p, 0, size);
  return p;
}

void *xr_bundle_alloc(xr_bundle_t *bundle, size_t size) {
  void *p = arena_alloc(bundle->arena, size ? size : 1);
  if (!p) xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory allocating %zu bytes for a bundle", size);
  return p;
}

char *xr_bundle_strndup(xr_bundle_t *bundle, const char *s, size_t n) {
  char *d = xr_bundle_alloc(bundle, n + 1);
  if (d) memcpy(d, s, n);
  return d;
}

char *xr_bundle_strdup(xr_bundle_t *bundle, const char *s) {
  return s ? xr_bundle_strndup(bundle, s, strlen(s)) : NULL;
}

xr_status_t xr_bundle_create(xr_bundle_t **out_bundle) {
  if (!out_bundle) return xr_error(XR_INVALID_ARGUMENT, "xr_bundle_create: out_bundle is NULL");
  xr_bundle_t *b = calloc(1, sizeof *b);
  xr_arena_t *a = calloc(1, sizeof *a);
  if (!b || !a) {
    free(b);
    free(a);
    return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory creating a bundle");
  }
  b->arena = a;
  b->meta.format_version = XR_BUNDLE_FORMAT_VERSION;
  b->base_dir = xr_bundle_strdup(b, ".");
  if (!b->base_dir) {
    xr_bundle_destroy(b);
    return XR_RESOURCE_EXHAUSTED;
  }
  *out_bundle = b;
  return XR_OK;
}

void xr_bundle_destroy(xr_bundle_t *bundle) {
  if (!bundle) return;
  if (bundle->arena) {
    xr_arena_chunk_t *c = bundle->arena->head;
    while (c) {
      xr_arena_chunk_t *next = c->next;
      free(c);
      c = next;
    }
    free(bundle->arena);
  }
  free(bundle->ops);
  free(bundle);
}

xr_op_t *xr_bundle_append_op(xr_bundle_t *bundle) {
  if (bundle->op_count == bundle->op_capacity) {
    size_t cap = bundle->op_capacity ? bundle->op_capacity * 2 : 16;
    xr_op_t *ops = realloc(bundle->ops, cap * sizeof *ops);
    if (!ops) {
      xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory growing a bundle to %zu ops", cap);
      return NULL;
    }
    bundle->ops = ops;
    bundle->op_capacity = cap;
  }
  xr_op_t *op = &bundle->ops[bundle->op_count++];
  memset(op, 0, sizeof *op);
  return op;
}

xr_status_t xr_op_alloc_args(xr_bundle_t *bundle, xr_op_t *op, size_t arg_count,
                             size_t kwarg_count) {
  if (arg_count > SIZE_MAX / sizeof(xr_arg_t) || kwarg_count > SIZE_MAX / sizeof(xr_arg_t))
    return xr_error(XR_OUT_OF_RANGE, "argument count overflows");
  op->args = arg_count ? xr_bundle_alloc(bundle, arg_count * sizeof(xr_arg_t)) : NULL;
  op->kwargs = kwarg_count ? xr_bundle_alloc(bundle, kwarg_count * sizeof(xr_arg_t)) : NULL;
  if ((arg_count && !op->args) || (kwarg_count && !op->kwargs)) return XR_RESOURCE_EXHAUSTED;
  op->arg_count = arg_count;
  op->kwarg_count = kwarg_count;
  return XR_OK;
}

xr_status_t xr_value_make_list(xr_bundle_t *bundle, xr_value_t *value, size_t count) {
  if (count > SIZE_MAX / sizeof(xr_value_t)) return xr_error(XR_OUT_OF_RANGE, "list too long");
  xr_value_t *items = count ? xr_bundle_alloc(bundle, count * sizeof *items) : NULL;
  if (count && !items) return XR_RESOURCE_EXHAUSTED;
  value->kind = XR_VALUE_LIST;
  value->as.list.count = count;
  value->as.list.items = items;
  return XR_OK;
}

xr_status_t xr_value_make_tensor(xr_bundle_t *bundle, xr_value_t *value, int32_t rank) {
  if (rank < 0 || rank > XR_MAX_RANK)
    return xr_error(XR_OUT_OF_RANGE, "rank %d outside [0, %d]", rank, XR_MAX_RANK);
  xr_tensor_spec_t *t = xr_bundle_alloc(bundle, sizeof *t + 2 * (size_t)rank * sizeof(int64_t));
  if (!t) return XR_RESOURCE_EXHAUSTED;
  int64_t *dims = (int64_t *)(t + 1);
  t->rank = rank;
  t->shape = dims;
  t->strides = dims + rank;
  t->storage_size = -1;
  value->kind = XR_VALUE_TENSOR;
  value->as.tensor = t;
  return XR_OK;
}

xr_status_t xr_value_make_string(xr_bundle_t *bundle, xr_value_t *value, const char *s) {
  char *d = xr_bundle_strdup(bundle, s);
  if (!d) return XR_RESOURCE_EXHAUSTED;
  value->kind = XR_VALUE_STRING;
  value->as.s = d;
  return XR_OK;
}

static void describe(const xr_value_t *v, xr_buf_t *o) {
  switch (v->kind) {
    case XR_VALUE_NULL: xr_buf_puts(o, "None"); break;
    case XR_VALUE_BOOL: xr_buf_puts(o, v->as.b ? "True" : "False"); break;
    case XR_VALUE_INT: xr_buf_printf(o, "%lld", (long long)v->as.i); break;
    case XR_VALUE_FLOAT: {
      char text[32];
      snprintf(text, sizeof text, "%.6g", v->as.f);
      if (!strpbrk(text, ".eEna")) strcat(text, ".0");
      xr_buf_puts(o, text);
      break;
    }
    case XR_VALUE_STRING: xr_buf_printf(o, "'%s'", v->as.s); break;
    case XR_VALUE_LIST:
      xr_buf_puts(o, "[");
      for (size_t i = 0; i < v->as.list.count; i++) {
        if (i) xr_buf_puts(o, ", ");
        describe(&v->as.list.items[i], o);
      }
      xr_buf_puts(o, "]");
      break;
    case XR_VALUE_TENSOR: {
      const xr_tensor_spec_t *t = v->as.tensor;
      xr_buf_printf(o, "%s[", xr_dtype_short_name(t->dtype));
      for (int32_t i = 0; i < t->rank; i++) xr_buf_printf(o, i ? ",%lld" : "%lld", (long long)t->shape[i]);
      xr_buf_puts(o, "]");
      if (!xr_tensor_is_contiguous(t)) {
        xr_buf_puts(o, "{");
        for (int32_t i = 0; i < t->rank; i++)
          xr_buf_printf(o, i ? ",%lld" : "%lld", (long long)t->strides[i]);
        xr_buf_puts(o, "}");
      }
      if (t->storage_offset) xr_buf_printf(o, "+%lld", (long long)t->storage_offset);
      break;
    }
  }
}

/* Copies a description into buf, cut with "..." when it does not fit; frees it. */
static void finish_description(xr_buf_t *o, char *buf, size_t size) {
  if (o->failed || !o->data) {
    snprintf(buf, size, "%s", o->failed ? "?" : "");
  } else if (o->len < size) {
    memcpy(buf, o->data, o->len + 1);
  } else {
    snprintf(buf, size, "%.*s...", (int)(size > 4 ? size - 4 : 0), o->data);
  }
  free(o->data);
}

static bool holds_tensors(const xr_value_t *v) {
  return v->kind == XR_VALUE_TENSOR || (v->kind == XR_VALUE_LIST && v->as.list.count &&
                                        v->as.list.items[0].kind == XR_VALUE_TENSOR);
}

void xr_op_describe_args(const xr_op_t *op, bool tensors_only, char *buf, size_t size) {
  if (!size) return;
  xr_buf_t o = {0};
  for (size_t i = 0; i < op->arg_count + op->kwarg_count; i++) {
    const xr_arg_t *a = i < op->arg_count ? &op->args[i] : &op->kwargs[i - op->arg_count];
    if (tensors_only && !holds_tensors(&a->value)) continue;
    if (o.len) xr_buf_puts(&o, " ");
    if (a->name && !tensors_only) xr_buf_printf(&o, "%s=", a->name);
    describe(&a->value, &o);
  }
  finish_description(&o, buf, size);
}

void xr_value_describe(const xr_value_t *value, char *buf, size_t size) {
  if (!size) return;
  xr_buf_t o = {0};
  describe(value, &o);
  finish_description(&o, buf, size);
}

const xr_arg_t *xr_op_find_arg(const xr_op_t *op, const char *name) {
  for (size_t i = 0; i < op->arg_count; i++)
    if (op->args[i].name && strcmp(op->args[i].name, name) == 0) return &op->args[i];
  for (size_t i = 0; i < op->kwarg_count; i++)
    if (op->kwargs[i].name && strcmp(op->kwargs[i].name, name) == 0) return &op->kwargs[i];
  return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* dtypes                                                                                      */

typedef struct dtype_info {
  const char *name;      /* profiler spelling, written to files */
  const char *short_name;
  size_t size;
  bool floating;
} dtype_info_t;

static const dtype_info_t dtype_table[XR_DTYPE_COUNT] = {
    [XR_DTYPE_INVALID] = {"invalid", "invalid", 0, false},
    [XR_DTYPE_F32] = {"float", "f32", 4, true},
    [XR_DTYPE_F64] = {"double", "f64", 8, true},
    [XR_DTYPE_F16] = {"c10::Half", "f16", 2, true},
    [XR_DTYPE_BF16] = {"c10::BFloat16", "bf16", 2, true},
    [XR_DTYPE_F8E4M3FN] = {"c10::Float8_e4m3fn", "f8e4m3fn", 1, true},
    [XR_DTYPE_F8E5M2] = {"c10::Float8_e5m2", "f8e5m2", 1, true},
    [XR_DTYPE_F8E4M3FNUZ] = {"c10::Float8_e4m3fnuz", "f8e4m3fnuz", 1, true},
    [XR_DTYPE_F8E5M2FNUZ] = {"c10::Float8_e5m2fnuz", "f8e5m2fnuz", 1, true},
    [XR_DTYPE_I8] = {"signed char", "i8", 1, false},
    [XR_DTYPE_I16] = {"short int", "i16", 2, false},
    [XR_DTYPE_I32] = {"int", "i32", 4, false},
    [XR_DTYPE_I64] = {"long int", "i64", 8, false},
    [XR_DTYPE_U8] = {"unsigned char", "u8", 1, false},
    [XR_DTYPE_U16] = {"unsigned short", "u16", 2, false},
    [XR_DTYPE_U32] = {"unsigned int", "u32", 4, false},
    [XR_DTYPE_U64] = {"unsigned long", "u64", 8, false},
    [XR_DTYPE_BOOL] = {"bool", "bool", 1, false},
};

/* Other spellings: torch names, C names and numpy-ish short names. */
static const struct {
  const char *alias;
  xr_dtype_t dtype;
} dtype_aliases[] = {
    {"float32", XR_DTYPE_F32},         {"f32", XR_DTYPE_F32},
    {"fp32", XR_DTYPE_F32},            {"float64", XR_DTYPE_F64},
    {"f64", XR_DTYPE_F64},             {"half", XR_DTYPE_F16},
    {"float16", XR_DTYPE_F16},         {"f16", XR_DTYPE_F16},
    {"fp16", XR_DTYPE_F16},            {"bfloat16", XR_DTYPE_BF16},
    {"bf16", XR_DTYPE_BF16},           {"float8_e4m3fn", XR_DTYPE_F8E4M3FN},
    {"float8_e5m2", XR_DTYPE_F8E5M2},  {"float8_e4m3fnuz", XR_DTYPE_F8E4M3FNUZ},
    {"float8_e5m2fnuz", XR_DTYPE_F8E5M2FNUZ},
    {"int8", XR_DTYPE_I8},             {"i8", XR_DTYPE_I8},
    {"char", XR_DTYPE_I8},             {"short", XR_DTYPE_I16},
    {"int16", XR_DTYPE_I16},           {"i16", XR_DTYPE_I16},
    {"int32", XR_DTYPE_I32},           {"i32", XR_DTYPE_I32},
    {"long", XR_DTYPE_I64},            {"int64", XR_DTYPE_I64},
    {"i64", XR_DTYPE_I64},             {"long long", XR_DTYPE_I64},
    {"uint8", XR_DTYPE_U8},            {"u8", XR_DTYPE_U8},
    {"uint16", XR_DTYPE_U16},          {"unsigned short int", XR_DTYPE_U16},
    {"uint32", XR_DTYPE_U32},          {"uint64", XR_DTYPE_U64},
    {"unsigned long int", XR_DTYPE_U64},
};

xr_dtype_t xr_dtype_parse(const char *s) {
  if (!s) return XR_DTYPE_INVALID;
  if (strncmp(s, "torch.", 6) == 0) s += 6;
  for (int d = 1; d < XR_DTYPE_COUNT; d++) {
    const char *name = dtype_table[d].name;
    if (strcmp(s, name) == 0) return (xr_dtype_t)d;
    /* "c10::Half" may also appear as plain "Half". */
    if (strncmp(name, "c10::", 5) == 0 && strcmp(s, name + 5) == 0) return (xr_dtype_t)d;
  }
  for (size_t i = 0; i < sizeof dtype_aliases / sizeof dtype_aliases[0]; i++)
    if (strcasecmp(s, dtype_aliases[i].alias) == 0) return dtype_aliases[i].dtype;
  return XR_DTYPE_INVALID;
}

static const dtype_info_t *dtype_info(xr_dtype_t d) {
  return (unsigned)d < XR_DTYPE_COUNT ? &dtype_table[d] : &dtype_table[0];
}
const char *xr_dtype_name(xr_dtype_t d) { return dtype_info(d)->name; }
const char *xr_dtype_short_name(xr_dtype_t d) { return dtype_info(d)->short_name; }
size_t xr_dtype_size(xr_dtype_t d) { return dtype_info(d)->size; }
bool xr_dtype_is_floating(xr_dtype_t d) { return dtype_info(d)->floating; }

static const char *const init_names[] = {
    [XR_INIT_NORMAL] = "normal", [XR_INIT_UNIFORM] = "uniform",
    [XR_INIT_ZEROS] = "zeros",   [XR_INIT_ONES] = "ones",
};

const char *xr_init_name(xr_init_t init) {
  return (init >= XR_INIT_NORMAL && init <= XR_INIT_ONES) ? init_names[init] : NULL;
}

bool xr_init_parse(const char *name, xr_init_t *out_init) {
  for (int i = XR_INIT_NORMAL; i <= XR_INIT_ONES; i++) {
    if (strcmp(name, init_names[i]) == 0) {
      *out_init = (xr_init_t)i;
      return true;
    }
  }
  return false;
}

/* ------------------------------------------------------------------------------------------ */
/* geometry                                                                                    */

xr_status_t xr_tensor_numel(const xr_tensor_spec_t *t, int64_t *out_numel) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->shape[i] < 0)
      return xr_error(XR_OUT_OF_RANGE, "shape[%d]: negative dimension %lld", i,
                      (long long)t->shape[i]);
    if (__builtin_mul_overflow(n, t->shape[i], &n))
      return xr_error(XR_OUT_OF_RANGE, "shape[%d]: element count overflows 64 bits", i);
  }
  *out_numel = n;
  return XR_OK;
}

xr_status_t xr_tensor_storage_extent(const xr_tensor_spec_t *t, int64_t *out_elements) {
  int64_t numel;
  xr_status_t st = xr_tensor_numel(t, &numel);
  if (st != XR_OK) return st;
  if (numel == 0) {
    *out_elements = 0;
    return XR_OK;
  }
  if (t->storage_offset < 0)
    return xr_error(XR_OUT_OF_RANGE, "storage_offset: negative offset %lld",
                    (long long)t->storage_offset);
  int64_t extent = t->storage_offset + 1, term;
  for (int32_t i = 0; i < t->rank; i++) {
    if (t->strides[i] < 0)
      return xr_error(XR_OUT_OF_RANGE, "strides[%d]: negative stride %lld", i,
                      (long long)t->strides[i]);
    if (__builtin_mul_overflow(t->shape[i] - 1, t->strides[i], &term) ||
        __builtin_add_overflow(extent, term, &extent))
      return xr_error(XR_OUT_OF_RANGE, "strides[%d]: storage extent overflows 64 bits", i);
  }
  *out_elements = extent;
  return XR_OK;
}

xr_status_t xr_tensor_storage_bytes(const xr_tensor_spec_t *t, size_t *out_bytes) {
  int64_t extent;
  xr_status_t st = xr_tensor_storage_extent(t, &extent);
  if (st != XR_OK) return st;
  size_t bytes;
  if ((uint64_t)extent > SIZE_MAX ||
      __builtin_mul_overflow((size_t)extent, xr_dtype_size(t->dtype), &bytes))
    return xr_error(XR_OUT_OF_RANGE, "byte size of %lld elements of %s overflows",
                    (long long)extent, xr_dtype_name(t->dtype));
  *out_bytes = bytes;
  return XR_OK;
}

bool xr_tensor_is_contiguous(const xr_tensor_spec_t *t) {
  int64_t expected = 1;
  for (int32_t i = t->rank - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->strides[i] != expected) return false;
    expected *= t->shape[i];
  }
  return true;
}

void xr_tensor_set_contiguous(xr_tensor_spec_t *t) {
  int64_t s = 1;
  for (int32_t i = t->rank - 1; i >= 0; i--) {
    t->strides[i] = s;
    /* Saturate: a shape this large fails validation anyway, with its own message. */
    if (t->shape[i] > 0 && __builtin_mul_overflow(s, t->shape[i], &s)) s = INT64_MAX;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* data forms                                                                                  */



static void visit_value(xr_value_t *v, xr_tensor_visit_fn fn, void *ctx) {
  if (v->kind == XR_VALUE_TENSOR) fn(v->as.tensor, ctx);
  else if (v->kind == XR_VALUE_LIST)
    for (size_t i = 0; i < v->as.list.count; i++) visit_value(&v->as.list.items[i], fn, ctx);
}

void xr_bundle_visit_tensors(xr_bundle_t *b, xr_tensor_visit_fn fn, void *ctx) {
  for (size_t i = 0; i < b->op_count; i++) {
    xr_op_t *op = &b->ops[i];
    for (size_t a = 0; a < op->arg_count; a++) visit_value(&op->args[a].value, fn, ctx);
    for (size_t a = 0; a < op->kwarg_count; a++) visit_value(&op->kwargs[a].value, fn, ctx);
  }
}

static void count_forms(xr_tensor_spec_t *t, void *ctx) {
  unsigned *bits = ctx;
  if (t->data) *bits |= 2;
  else if (t->data_file) *bits |= 1;
}

xr_data_form_t xr_bundle_data_form(const xr_bundle_t *bundle) {
  unsigned bits = 0;
  xr_bundle_visit_tensors((xr_bundle_t *)bundle, count_forms, &bits);
  static const xr_data_form_t forms[] = {XR_DATA_NONE, XR_DATA_FILES, XR_DATA_EMBEDDED,
                                         XR_DATA_MIXED};
  return forms[bits];
}

static void strip_one(xr_tensor_spec_t *t, void *ctx) {
  size_t *n = ctx;
  if (t->data || t->data_file) ++*n;
  t->data = NULL;
  t->data_size = 0;
  t->data_file = NULL;
}

void xr_bundle_strip_data(xr_bundle_t *bundle, size_t *out_tensors) {
  size_t n = 0;
  xr_bundle_visit_tensors(bundle, strip_one, &n);
  if (out_tensors) *out_tensors = n;
}

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
          s->kernel_count != t->kernel_count)
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
