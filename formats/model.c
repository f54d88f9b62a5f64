/* The op model: arena, bundles and ops in memory, builders, descriptions and tensor geometry.
 * Nothing here reads or writes a file. */
#include "formats/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* arena: bump allocation in chunks, freed all at once                                         */

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

xr_status_t xr_arena_create(xr_arena_t **out_arena) {
  if (!out_arena) return xr_error(XR_INVALID_ARGUMENT, "xr_arena_create: out_arena is NULL");
  xr_arena_t *a = calloc(1, sizeof *a);
  if (!a) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory creating an arena");
  *out_arena = a;
  return XR_OK;
}

void xr_arena_destroy(xr_arena_t *arena) {
  if (!arena) return;
  for (xr_arena_chunk_t *c = arena->head, *next; c; c = next) {
    next = c->next;
    free(c);
  }
  free(arena);
}

void *xr_arena_alloc(xr_arena_t *arena, size_t size) {
  void *p = arena_alloc(arena, size ? size : 1);
  if (!p) xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory allocating %zu bytes", size);
  return p;
}

char *xr_arena_strndup(xr_arena_t *arena, const char *s, size_t n) {
  char *d = xr_arena_alloc(arena, n + 1);
  if (d) memcpy(d, s, n);
  return d;
}

char *xr_arena_strdup(xr_arena_t *arena, const char *s) {
  return s ? xr_arena_strndup(arena, s, strlen(s)) : NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* bundles and ops                                                                             */

xr_status_t xr_bundle_create(xr_bundle_t **out_bundle) {
  if (!out_bundle) return xr_error(XR_INVALID_ARGUMENT, "xr_bundle_create: out_bundle is NULL");
  xr_bundle_t *b = calloc(1, sizeof *b);
  if (!b) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory creating a bundle");
  xr_status_t st = xr_arena_create(&b->arena);
  if (st != XR_OK) {
    free(b);
    return st;
  }
  b->meta.format_version = XR_BUNDLE_FORMAT_VERSION;
  b->base_dir = xr_arena_strdup(b->arena, ".");
  if (!b->base_dir) {
    xr_bundle_destroy(b);
    return XR_RESOURCE_EXHAUSTED;
  }
  *out_bundle = b;
  return XR_OK;
}

void xr_bundle_destroy(xr_bundle_t *bundle) {
  if (!bundle) return;
  xr_arena_destroy(bundle->arena);
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

xr_status_t xr_op_alloc_args(xr_arena_t *arena, xr_op_t *op, size_t arg_count, size_t kwarg_count) {
  if (arg_count > SIZE_MAX / sizeof(xr_arg_t) || kwarg_count > SIZE_MAX / sizeof(xr_arg_t))
    return xr_error(XR_OUT_OF_RANGE, "argument count overflows");
  op->args = arg_count ? xr_arena_alloc(arena, arg_count * sizeof(xr_arg_t)) : NULL;
  op->kwargs = kwarg_count ? xr_arena_alloc(arena, kwarg_count * sizeof(xr_arg_t)) : NULL;
  if ((arg_count && !op->args) || (kwarg_count && !op->kwargs)) return XR_RESOURCE_EXHAUSTED;
  op->arg_count = arg_count;
  op->kwarg_count = kwarg_count;
  return XR_OK;
}

xr_status_t xr_value_make_list(xr_arena_t *arena, xr_value_t *value, size_t count) {
  if (count > SIZE_MAX / sizeof(xr_value_t)) return xr_error(XR_OUT_OF_RANGE, "list too long");
  xr_value_t *items = count ? xr_arena_alloc(arena, count * sizeof *items) : NULL;
  if (count && !items) return XR_RESOURCE_EXHAUSTED;
  value->kind = XR_VALUE_LIST;
  value->as.list.count = count;
  value->as.list.items = items;
  return XR_OK;
}

xr_status_t xr_value_make_tensor(xr_arena_t *arena, xr_value_t *value, int32_t rank) {
  if (rank < 0 || rank > XR_MAX_RANK)
    return xr_error(XR_OUT_OF_RANGE, "rank %d outside [0, %d]", rank, XR_MAX_RANK);
  xr_tensor_spec_t *t = xr_arena_alloc(arena, sizeof *t + 2 * (size_t)rank * sizeof(int64_t));
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

xr_status_t xr_value_make_string(xr_arena_t *arena, xr_value_t *value, const char *s) {
  char *d = xr_arena_strdup(arena, s);
  if (!d) return XR_RESOURCE_EXHAUSTED;
  value->kind = XR_VALUE_STRING;
  value->as.s = d;
  return XR_OK;
}

xr_op_t *xr_bundle_add_op(xr_bundle_t *bundle, const char *name) {
  xr_op_t *op = xr_bundle_append_op(bundle);
  if (!op) return NULL;
  op->name = xr_arena_strdup(bundle->arena, name ? name : "");
  if (!op->name) {
    bundle->op_count--;
    return NULL;
  }
  return op;
}

/* Appends a named positional argument with a null value and returns it (valid until the next
 * append: the argument array is copied to grow). */
/* A new last entry of args (or kwargs), named, value null. */
static xr_arg_t *append_to(xr_arena_t *arena, const xr_op_t *op, xr_arg_t **list, size_t *count,
                           const char *name) {
  if (*count >= SIZE_MAX / sizeof(xr_arg_t) - 1) {
    xr_error(XR_OUT_OF_RANGE, "%s: too many arguments", op->name ? op->name : "op");
    return NULL;
  }
  xr_arg_t *args = xr_arena_alloc(arena, (*count + 1) * sizeof *args);
  char *copy = xr_arena_strdup(arena, name);
  if (!args || (name && !copy)) return NULL;
  if (*count) memcpy(args, *list, *count * sizeof *args);
  *list = args;
  xr_arg_t *a = &args[(*count)++];
  memset(a, 0, sizeof *a);
  a->name = copy;
  return a;
}

static xr_arg_t *append_arg(xr_arena_t *arena, xr_op_t *op, const char *name) {
  return append_to(arena, op, &op->args, &op->arg_count, name);
}

xr_arg_t *xr_op_add_kwarg(xr_arena_t *arena, xr_op_t *op, const char *name, const char *type) {
  xr_arg_t *a = append_to(arena, op, &op->kwargs, &op->kwarg_count, name);
  if (a && type && !(a->type = xr_arena_strdup(arena, type))) return NULL;
  return a;
}

xr_tensor_spec_t *xr_op_add_tensor(xr_arena_t *arena, xr_op_t *op, const char *name,
                                   xr_dtype_t dtype, int32_t rank, const int64_t *shape,
                                   const int64_t *strides) {
  xr_value_t value;
  if (xr_value_make_tensor(arena, &value, rank) != XR_OK) return NULL;
  xr_tensor_spec_t *t = value.as.tensor;
  t->dtype = dtype;
  if (rank) memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
  if (strides)
    memcpy(t->strides, strides, (size_t)rank * sizeof *strides);
  else
    xr_tensor_set_contiguous(t);
  xr_arg_t *a = append_arg(arena, op, name);
  if (!a) return NULL;
  a->value = value;
  return t;
}

static xr_status_t add_value(xr_arena_t *arena, xr_op_t *op, const char *name, xr_value_t value) {
  xr_arg_t *a = append_arg(arena, op, name);
  if (!a) return XR_RESOURCE_EXHAUSTED;
  a->value = value;
  return XR_OK;
}

xr_status_t xr_op_add_int(xr_arena_t *arena, xr_op_t *op, const char *name, int64_t value) {
  return add_value(arena, op, name, (xr_value_t){.kind = XR_VALUE_INT, .as.i = value});
}

xr_status_t xr_op_add_float(xr_arena_t *arena, xr_op_t *op, const char *name, double value) {
  return add_value(arena, op, name, (xr_value_t){.kind = XR_VALUE_FLOAT, .as.f = value});
}

xr_status_t xr_op_add_bool(xr_arena_t *arena, xr_op_t *op, const char *name, bool value) {
  return add_value(arena, op, name, (xr_value_t){.kind = XR_VALUE_BOOL, .as.b = value});
}

xr_status_t xr_op_add_string(xr_arena_t *arena, xr_op_t *op, const char *name, const char *value) {
  xr_value_t v;
  xr_status_t st = xr_value_make_string(arena, &v, value ? value : "");
  return st == XR_OK ? add_value(arena, op, name, v) : st;
}

xr_status_t xr_op_add_int_list(xr_arena_t *arena, xr_op_t *op, const char *name,
                               const int64_t *values, size_t count) {
  xr_value_t v;
  xr_status_t st = xr_value_make_list(arena, &v, count);
  if (st != XR_OK) return st;
  for (size_t i = 0; i < count; i++)
    v.as.list.items[i] = (xr_value_t){.kind = XR_VALUE_INT, .as.i = values[i]};
  return add_value(arena, op, name, v);
}

const xr_arg_t *xr_op_find_arg(const xr_op_t *op, const char *name) {
  for (size_t i = 0; i < op->arg_count; i++)
    if (op->args[i].name && strcmp(op->args[i].name, name) == 0) return &op->args[i];
  for (size_t i = 0; i < op->kwarg_count; i++)
    if (op->kwargs[i].name && strcmp(op->kwargs[i].name, name) == 0) return &op->kwargs[i];
  return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* descriptions                                                                                */

/* Writes into the caller's buffer; once it is full, the text is cut with "...". */
typedef struct writer {
  char *buf;
  size_t size, len;
  bool cut;
} writer_t;

__attribute__((format(printf, 2, 3))) static void put(writer_t *w, const char *fmt, ...) {
  if (w->cut) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(w->buf + w->len, w->size - w->len, fmt, ap);
  va_end(ap);
  if (n >= 0 && (size_t)n < w->size - w->len) {
    w->len += (size_t)n;
    return;
  }
  w->cut = true;
  size_t keep = w->size > 4 ? w->size - 4 : 0;
  snprintf(w->buf + keep, w->size - keep, "%s", "...");
}

static void describe(const xr_value_t *v, writer_t *o) {
  switch (v->kind) {
    case XR_VALUE_NULL: put(o, "None"); break;
    case XR_VALUE_BOOL: put(o, "%s", v->as.b ? "True" : "False"); break;
    case XR_VALUE_INT: put(o, "%lld", (long long)v->as.i); break;
    case XR_VALUE_FLOAT: {
      char text[32];
      snprintf(text, sizeof text, "%.6g", v->as.f);
      if (!strpbrk(text, ".eEna")) strcat(text, ".0");
      put(o, "%s", text);
      break;
    }
    case XR_VALUE_STRING: put(o, "'%s'", v->as.s); break;
    case XR_VALUE_LIST:
      put(o, "[");
      for (size_t i = 0; i < v->as.list.count; i++) {
        if (i) put(o, ", ");
        describe(&v->as.list.items[i], o);
      }
      put(o, "]");
      break;
    case XR_VALUE_TENSOR: {
      const xr_tensor_spec_t *t = v->as.tensor;
      put(o, "%s[", xr_dtype_short_name(t->dtype));
      for (int32_t i = 0; i < t->rank; i++) put(o, i ? ",%lld" : "%lld", (long long)t->shape[i]);
      put(o, "]");
      if (!xr_tensor_is_contiguous(t)) {
        put(o, "{");
        for (int32_t i = 0; i < t->rank; i++)
          put(o, i ? ",%lld" : "%lld", (long long)t->strides[i]);
        put(o, "}");
      }
      if (t->storage_offset) put(o, "+%lld", (long long)t->storage_offset);
      break;
    }
  }
}

static bool holds_tensors(const xr_value_t *v) {
  return v->kind == XR_VALUE_TENSOR || (v->kind == XR_VALUE_LIST && v->as.list.count &&
                                        v->as.list.items[0].kind == XR_VALUE_TENSOR);
}

void xr_op_describe_args(const xr_op_t *op, bool tensors_only, char *buf, size_t size) {
  if (!size) return;
  writer_t o = {buf, size, 0, false};
  buf[0] = '\0';
  for (size_t i = 0; i < op->arg_count + op->kwarg_count; i++) {
    const xr_arg_t *a = i < op->arg_count ? &op->args[i] : &op->kwargs[i - op->arg_count];
    if (tensors_only && !holds_tensors(&a->value)) continue;
    if (o.len) put(&o, " ");
    if (a->name && !tensors_only) put(&o, "%s=", a->name);
    describe(&a->value, &o);
  }
}

void xr_value_describe(const xr_value_t *value, char *buf, size_t size) {
  if (!size) return;
  writer_t o = {buf, size, 0, false};
  buf[0] = '\0';
  describe(value, &o);
}

static const char *const init_names[] = {
    [XR_INIT_NORMAL] = "normal",
    [XR_INIT_UNIFORM] = "uniform",
    [XR_INIT_ZEROS] = "zeros",
    [XR_INIT_ONES] = "ones",
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

/* Exactly the strides xr_tensor_set_contiguous writes (size-1 dims take any stride). */
bool xr_tensor_is_contiguous(const xr_tensor_spec_t *t) {
  int64_t expected = 1;
  for (int32_t i = t->rank - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->strides[i] != expected) return false;
    if (t->shape[i] > 0 && __builtin_mul_overflow(expected, t->shape[i], &expected))
      expected = INT64_MAX;
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
/* tensor contents                                                                             */

static void visit_value(xr_value_t *v, xr_tensor_visit_fn fn, void *ctx) {
  if (v->kind == XR_VALUE_TENSOR)
    fn(v->as.tensor, ctx);
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
  if (t->data)
    *bits |= 2;
  else if (t->data_file)
    *bits |= 1;
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

xr_status_t xr_tensor_read_data(const xr_bundle_t *bundle, const xr_tensor_spec_t *t,
                                uint8_t **out_bytes, size_t *out_size) {
  size_t need;
  xr_status_t st = xr_tensor_storage_bytes(t, &need);
  if (st != XR_OK) return st;
  if (t->data) {
    if (t->data_size < need)
      return xr_error(XR_DATA_LOSS, "embedded contents hold %zu bytes, the view needs %zu",
                      t->data_size, need);
    uint8_t *copy = malloc(need ? need : 1);
    if (!copy) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory for %zu bytes", need);
    memcpy(copy, t->data, need);
    *out_bytes = copy;
    *out_size = need;
    return XR_OK;
  }
  if (!t->data_file) return xr_error(XR_NOT_FOUND, "tensor has no real contents");
  if (!bundle->read_data_file)
    return xr_error(XR_NOT_FOUND,
                    "%s: no reader for data files in this bundle (load it with "
                    "xr_bundle_load, or set read_data_file)",
                    t->data_file);
  return bundle->read_data_file(bundle, t, out_bytes, out_size);
}

/* ------------------------------------------------------------------------------------------ */
/* identity                                                                                    */

typedef struct hasher {
  uint64_t h;
} hasher_t;

static void hash_bytes(hasher_t *x, const void *data, size_t n) {
  const uint8_t *p = data;
  for (size_t i = 0; i < n; i++) {
    x->h ^= p[i];
    x->h *= 0x100000001b3ull; /* FNV-1a's 64-bit prime */
  }
}

/* Little-endian whatever the host's byte order. */
static void hash_u64(hasher_t *x, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
  hash_bytes(x, b, sizeof b);
}

static void hash_double(hasher_t *x, double v) {
  uint64_t bits = 0x7ff8000000000000ull; /* every NaN alike */
  if (!isnan(v)) memcpy(&bits, &v, sizeof bits);
  hash_u64(x, bits);
}

/* Its length first, so that ("ab", "c") and ("a", "bc") differ; NULL differs from "". */
static void hash_string(hasher_t *x, const char *s) {
  if (!s) {
    hash_u64(x, UINT64_MAX);
    return;
  }
  size_t n = strlen(s);
  hash_u64(x, n);
  hash_bytes(x, s, n);
}

static void hash_value(hasher_t *x, const xr_value_t *v) {
  hash_u64(x, (uint64_t)v->kind);
  switch (v->kind) {
    case XR_VALUE_NULL: break;
    case XR_VALUE_BOOL: hash_u64(x, v->as.b); break;
    case XR_VALUE_INT: hash_u64(x, (uint64_t)v->as.i); break;
    case XR_VALUE_FLOAT: hash_double(x, v->as.f); break;
    case XR_VALUE_STRING: hash_string(x, v->as.s); break;
    case XR_VALUE_LIST:
      hash_u64(x, v->as.list.count);
      for (size_t i = 0; i < v->as.list.count; i++) hash_value(x, &v->as.list.items[i]);
      break;
    case XR_VALUE_TENSOR: {
      const xr_tensor_spec_t *t = v->as.tensor;
      hash_u64(x, (uint64_t)t->rank);
      for (int32_t d = 0; d < t->rank; d++) {
        hash_u64(x, (uint64_t)t->shape[d]);
        hash_u64(x, (uint64_t)t->strides[d]);
      }
      hash_u64(x, (uint64_t)t->storage_offset);
      hash_u64(x, (uint64_t)t->storage_size);
      hash_u64(x, (uint64_t)t->dtype);
      hash_u64(x, (uint64_t)t->init);
      hash_string(x, t->data_file);
      hash_u64(x, t->data_size);
      if (t->data_size) hash_bytes(x, t->data, t->data_size);
      break;
    }
  }
}

static void hash_args(hasher_t *x, const xr_arg_t *args, size_t n) {
  hash_u64(x, n);
  for (size_t i = 0; i < n; i++) {
    hash_string(x, args[i].name);
    hash_string(x, args[i].type);
    hash_u64(x, args[i].defaulted);
    hash_value(x, &args[i].value);
  }
}

uint64_t xr_bundle_hash(const xr_bundle_t *b) {
  hasher_t x = {0xcbf29ce484222325ull}; /* FNV-1a's 64-bit offset basis */
  hash_u64(&x, b->op_count);
  for (size_t i = 0; i < b->op_count; i++) {
    const xr_op_t *op = &b->ops[i];
    hash_string(&x, op->name);
    hash_string(&x, op->alias);
    hash_u64(&x, (uint64_t)op->count);
    hash_args(&x, op->args, op->arg_count);
    hash_args(&x, op->kwargs, op->kwarg_count);
    hash_args(&x, op->hints, op->hint_count);
    const xr_op_timing_t *t = op->timing;
    hash_u64(&x, t != NULL);
    if (!t) continue;
    hash_double(&x, t->gpu_time_us);
    hash_string(&x, t->device);
    hash_string(&x, t->graph_capture);
    hash_u64(&x, (uint64_t)t->graph_batch_size);
    hash_u64(&x, t->kernel_count);
    for (size_t k = 0; k < t->kernel_count; k++) {
      hash_string(&x, t->kernels[k].name);
      hash_double(&x, t->kernels[k].duration_us);
      hash_u64(&x, (uint64_t)t->kernels[k].count);
    }
  }
  return x.h;
}
