/* MessagePack codec (msgpack-c). The schema mirrors the JSON one with short keys per op, per
 * argument and per tensor (docs/bundle-format.md), so that a bundle of 100,000 ops stays small
 * and loads fast; tensor contents may ride inside as `bin`.
 *
 * Before msgpack-c sees the bytes, one linear pass checks the framing: every string, binary and
 * extension fits in what is left, every array or map announces no more entries than bytes
 * remain, and nesting stays shallow. A truncated or hostile file therefore gets a precise error
 * ("truncated at byte N") instead of a giant allocation inside the unpacker. */
#include <msgpack.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "formats/internal.h"

/* Error paths use the logical field names of the JSON schema ("ops[3].args[1].value.shape"),
 * not the short keys. */

/* msgpack-c's unpacker keeps a fixed stack of 32 containers; stay below it. */
#define MAX_CONTAINER_DEPTH 31

static uint64_t be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}

/* Checks the framing of exactly one top-level object spanning [0, size). */
static xr_status_t check_framing(const uint8_t *p, size_t size, const char *name) {
  /* Entries still expected at each open container. */
  uint64_t pending[MAX_CONTAINER_DEPTH + 1];
  int depth = 0;
  pending[0] = 1;
  size_t i = 0;
  while (depth > 0 || pending[0] > 0) {
    if (pending[depth] == 0) {
      depth--;
      continue;
    }
    pending[depth]--;
    if (i >= size) return xr_error(XR_DATA_LOSS, "%s: MessagePack truncated at byte %zu", name, i);
    uint8_t c = p[i++];
    uint64_t payload = 0, entries = 0;
    int len_bytes = 0;
    if (c <= 0x7f || c >= 0xe0 || (c >= 0xc0 && c <= 0xc3 && c != 0xc1)) {
      /* fixint, nil, false, true */
    } else if (c >= 0xa0 && c <= 0xbf) {
      payload = c & 0x1f;
    } else if (c >= 0x90 && c <= 0x9f) {
      entries = c & 0x0f;
    } else if (c >= 0x80 && c <= 0x8f) {
      entries = 2u * (c & 0x0f);
    } else {
      switch (c) {
        case 0xc4: case 0xd9: len_bytes = 1; break;                /* bin8, str8 */
        case 0xc5: case 0xda: len_bytes = 2; break;                /* bin16, str16 */
        case 0xc6: case 0xdb: len_bytes = 4; break;                /* bin32, str32 */
        case 0xcc: case 0xd0: payload = 1; break;                  /* uint8, int8 */
        case 0xcd: case 0xd1: payload = 2; break;
        case 0xca: case 0xce: case 0xd2: payload = 4; break;
        case 0xcb: case 0xcf: case 0xd3: payload = 8; break;
        case 0xd4: payload = 2; break;                             /* fixext 1..16 + type */
        case 0xd5: payload = 3; break;
        case 0xd6: payload = 5; break;
        case 0xd7: payload = 9; break;
        case 0xd8: payload = 17; break;
        case 0xc7: len_bytes = 1; payload = 1; break;              /* ext8/16/32 + type */
        case 0xc8: len_bytes = 2; payload = 1; break;
        case 0xc9: len_bytes = 4; payload = 1; break;
        case 0xdc: case 0xdd: case 0xde: case 0xdf: {              /* array/map 16/32 */
          int n = (c == 0xdc || c == 0xde) ? 2 : 4;
          if (size - i < (size_t)n)
            return xr_error(XR_DATA_LOSS, "%s: MessagePack truncated at byte %zu", name, size);
          entries = be(p + i, n) * (c >= 0xde ? 2 : 1);
          i += (size_t)n;
          break;
        }
        default:
          return xr_error(XR_DATA_LOSS, "%s: corrupt MessagePack: byte 0x%02x at offset %zu is not a type",
                          name, c, i - 1);
      }
    }
    if (len_bytes) {
      if (size - i < (size_t)len_bytes)
        return xr_error(XR_DATA_LOSS, "%s: MessagePack truncated at byte %zu", name, size);
      payload += be(p + i, len_bytes);
      i += (size_t)len_bytes;
    }
    if (payload > size - i)
      return xr_error(XR_DATA_LOSS,
                      "%s: MessagePack truncated: an object at byte %zu needs %llu bytes, %zu remain",
                      name, i, (unsigned long long)payload, size - i);
    i += payload;
    if (entries) {
      if (entries > size - i)
        return xr_error(XR_DATA_LOSS,
                        "%s: corrupt MessagePack: a container at byte %zu announces %llu entries "
                        "but only %zu bytes remain",
                        name, i, (unsigned long long)entries, size - i);
      if (depth == MAX_CONTAINER_DEPTH)
        return xr_error(XR_OUT_OF_RANGE, "%s: MessagePack nested deeper than %d levels", name,
                        MAX_CONTAINER_DEPTH);
      pending[++depth] = entries;
    }
  }
  if (i != size)
    return xr_error(XR_DATA_LOSS, "%s: %zu bytes of trailing data after the MessagePack bundle",
                    name, size - i);
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* decoder                                                                                     */

typedef struct mp_decoder {
  const char *name;
  xr_bundle_t *bundle;
  xr_path_t path;
  const char *op_name, *arg_name; /* for messages about the value being decoded */
} mp_decoder_t;

static xr_status_t fail(mp_decoder_t *d, xr_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static xr_status_t fail(mp_decoder_t *d, xr_status_t st, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return xr_error(st, "%s: %s: %s", d->name, d->path.len ? d->path.buf : "(top level)", what);
}

static const char *type_name(const msgpack_object *o) {
  if (!o) return "nothing";
  switch (o->type) {
    case MSGPACK_OBJECT_NIL: return "nil";
    case MSGPACK_OBJECT_BOOLEAN: return "a bool";
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: return "an integer";
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: return "a float";
    case MSGPACK_OBJECT_STR: return "a string";
    case MSGPACK_OBJECT_ARRAY: return "an array";
    case MSGPACK_OBJECT_MAP: return "a map";
    case MSGPACK_OBJECT_BIN: return "binary data";
    case MSGPACK_OBJECT_EXT: return "an extension";
  }
  return "an unknown type";
}

static bool key_is(const msgpack_object *k, const char *name) {
  size_t n = strlen(name);
  return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
         memcmp(k->via.str.ptr, name, n) == 0;
}

static const msgpack_object *get(const msgpack_object *map, const char *name) {
  for (uint32_t i = 0; i < map->via.map.size; i++)
    if (key_is(&map->via.map.ptr[i].key, name)) return &map->via.map.ptr[i].val;
  return NULL;
}

static xr_status_t wrong(mp_decoder_t *d, const char *field, const char *what,
                         const msgpack_object *o) {
  size_t mark = field[0] ? xr_path_push(&d->path, "%s%s", d->path.len ? "." : "", field) : d->path.len;
  xr_status_t st = fail(d, XR_INVALID_ARGUMENT, "expected %s, got %s", what, type_name(o));
  xr_path_pop(&d->path, mark);
  return st;
}

static xr_status_t get_int(mp_decoder_t *d, const msgpack_object *o, const char *field,
                           int64_t *out) {
  if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
    *out = o->via.i64;
    return XR_OK;
  }
  if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
    if (o->via.u64 > INT64_MAX) {
      size_t mark = xr_path_push(&d->path, "%s%s", field[0] == '[' ? "" : ".", field);
      xr_status_t st = fail(d, XR_OUT_OF_RANGE, "integer %llu outside the 64-bit signed range",
                            (unsigned long long)o->via.u64);
      xr_path_pop(&d->path, mark);
      return st;
    }
    *out = (int64_t)o->via.u64;
    return XR_OK;
  }
  return wrong(d, field, "an integer", o);
}

static xr_status_t get_double(mp_decoder_t *d, const msgpack_object *o, const char *field,
                              double *out) {
  if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64) {
    *out = o->via.f64;
    return XR_OK;
  }
  int64_t i;
  if (get_int(d, o, field, &i) != XR_OK) return wrong(d, field, "a number", o);
  *out = (double)i;
  return XR_OK;
}

/* A string or nil (-> NULL). */
static xr_status_t get_string(mp_decoder_t *d, const msgpack_object *o, const char *field,
                              char **out) {
  *out = NULL;
  if (!o || o->type == MSGPACK_OBJECT_NIL) return XR_OK;
  if (o->type != MSGPACK_OBJECT_STR) return wrong(d, field, "a string", o);
  *out = xr_arena_strndup(d->bundle->arena, o->via.str.ptr, o->via.str.size);
  return *out ? XR_OK : XR_RESOURCE_EXHAUSTED;
}

static xr_status_t get_dims(mp_decoder_t *d, const msgpack_object *arr, const char *field,
                            int64_t *dims) {
  size_t mark = xr_path_push(&d->path, ".%s", field);
  for (uint32_t i = 0; i < arr->via.array.size; i++) {
    char idx[24];
    snprintf(idx, sizeof idx, "[%u]", i);
    xr_status_t st = get_int(d, &arr->via.array.ptr[i], idx, &dims[i]);
    if (st != XR_OK) return st;
  }
  xr_path_pop(&d->path, mark);
  return XR_OK;
}

static xr_status_t decode_tensor(mp_decoder_t *d, const msgpack_object *m, xr_value_t *out) {
  const msgpack_object *shape = get(m, "s"), *strides = get(m, "st"), *dtype = get(m, "d");
  if (!shape || shape->type != MSGPACK_OBJECT_ARRAY)
    return wrong(d, "shape", "the shape as an array of integers", shape);
  if (!dtype || dtype->type != MSGPACK_OBJECT_STR) return wrong(d, "dtype", "a dtype string", dtype);
  if (shape->via.array.size > XR_MAX_RANK)
    return fail(d, XR_OUT_OF_RANGE, "rank %u exceeds the maximum %d", shape->via.array.size,
                XR_MAX_RANK);
  int32_t rank = (int32_t)shape->via.array.size;
  xr_status_t st = xr_value_make_tensor(d->bundle->arena, out, rank);
  if (st != XR_OK) return st;
  xr_tensor_spec_t *t = out->as.tensor;
  if ((st = get_dims(d, shape, "shape", t->shape)) != XR_OK) return st;
  if (strides && strides->type != MSGPACK_OBJECT_NIL) {
    if (strides->type != MSGPACK_OBJECT_ARRAY) return wrong(d, "strides", "an array of integers", strides);
    if (strides->via.array.size != (uint32_t)rank)
      return fail(d, XR_INVALID_ARGUMENT, "%u strides for %d dimensions", strides->via.array.size,
                  rank);
    if ((st = get_dims(d, strides, "strides", t->strides)) != XR_OK) return st;
  } else {
    xr_tensor_set_contiguous(t);
  }
  char dname[64];
  snprintf(dname, sizeof dname, "%.*s", (int)(dtype->via.str.size < 63 ? dtype->via.str.size : 63),
           dtype->via.str.ptr);
  if ((t->dtype = xr_dtype_parse(dname)) == XR_DTYPE_INVALID) {
    size_t mark = xr_path_push(&d->path, ".dtype");
    st = fail(d, XR_INVALID_ARGUMENT, "unknown dtype \"%s\" (op %s, argument %s)", dname,
              d->op_name ? d->op_name : "?", d->arg_name ? d->arg_name : "?");
    xr_path_pop(&d->path, mark);
    return st;
  }
  const msgpack_object *o;
  if ((o = get(m, "o")) && (st = get_int(d, o, "storage_offset", &t->storage_offset)) != XR_OK) return st;
  if ((o = get(m, "ss")) && (st = get_int(d, o, "storage_size", &t->storage_size)) != XR_OK) return st;
  if ((o = get(m, "i"))) {
    char iname[16];
    if (o->type == MSGPACK_OBJECT_NIL) {
      t->init = XR_INIT_NONE;
    } else if (o->type != MSGPACK_OBJECT_STR || o->via.str.size >= sizeof iname ||
               (snprintf(iname, sizeof iname, "%.*s", (int)o->via.str.size, o->via.str.ptr),
                !xr_init_parse(iname, &t->init))) {
      return wrong(d, "init", "normal, uniform, zeros, ones or nil", o);
    }
  }
  if ((st = get_string(d, get(m, "f"), "data", &t->data_file)) != XR_OK) return st;
  if ((o = get(m, "b")) && o->type != MSGPACK_OBJECT_NIL) {
    if (o->type != MSGPACK_OBJECT_BIN) return wrong(d, "data", "binary tensor contents", o);
    t->data_size = o->via.bin.size;
    t->data = xr_arena_alloc(d->bundle->arena, t->data_size);
    if (!t->data) return XR_RESOURCE_EXHAUSTED;
    memcpy(t->data, o->via.bin.ptr, t->data_size);
  }
  return XR_OK;
}

static xr_status_t decode_value(mp_decoder_t *d, const msgpack_object *o, xr_value_t *out,
                                int depth) {
  switch (o->type) {
    case MSGPACK_OBJECT_NIL: out->kind = XR_VALUE_NULL; return XR_OK;
    case MSGPACK_OBJECT_BOOLEAN:
      out->kind = XR_VALUE_BOOL;
      out->as.b = o->via.boolean;
      return XR_OK;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
      out->kind = XR_VALUE_INT;
      return get_int(d, o, "", &out->as.i);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
      out->kind = XR_VALUE_FLOAT;
      out->as.f = o->via.f64;
      return XR_OK;
    case MSGPACK_OBJECT_STR: {
      char *s = xr_arena_strndup(d->bundle->arena, o->via.str.ptr, o->via.str.size);
      if (!s) return XR_RESOURCE_EXHAUSTED;
      out->kind = XR_VALUE_STRING;
      out->as.s = s;
      return XR_OK;
    }
    case MSGPACK_OBJECT_ARRAY: {
      if (depth >= XR_MAX_VALUE_DEPTH)
        return fail(d, XR_OUT_OF_RANGE, "lists nested deeper than %d levels", XR_MAX_VALUE_DEPTH);
      xr_status_t st = xr_value_make_list(d->bundle->arena, out, o->via.array.size);
      for (uint32_t i = 0; i < o->via.array.size && st == XR_OK; i++) {
        size_t mark = xr_path_push(&d->path, "[%u]", i);
        st = decode_value(d, &o->via.array.ptr[i], &out->as.list.items[i], depth + 1);
        if (st == XR_OK) xr_path_pop(&d->path, mark);
      }
      return st;
    }
    case MSGPACK_OBJECT_MAP: return decode_tensor(d, o, out);
    default: return fail(d, XR_INVALID_ARGUMENT, "unexpected %s as a value", type_name(o));
  }
}

/* An argument: [name|nil, type|nil, value] or [name, type, value, defaulted]. */
static xr_status_t decode_args(mp_decoder_t *d, const msgpack_object *arr, const char *field,
                               xr_arg_t *args) {
  for (uint32_t i = 0; i < arr->via.array.size; i++) {
    size_t mark = xr_path_push(&d->path, ".%s[%u]", field, i);
    const msgpack_object *a = &arr->via.array.ptr[i];
    if (a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size < 3 || a->via.array.size > 4)
      return wrong(d, "", "an argument [name, type, value]", a);
    const msgpack_object *e = a->via.array.ptr;
    xr_status_t st;
    if ((st = get_string(d, &e[0], "name", &args[i].name)) != XR_OK ||
        (st = get_string(d, &e[1], "type", &args[i].type)) != XR_OK)
      return st;
    if (a->via.array.size == 4) {
      if (e[3].type != MSGPACK_OBJECT_BOOLEAN) return wrong(d, "defaulted", "a bool", &e[3]);
      args[i].defaulted = e[3].via.boolean;
    }
    d->arg_name = args[i].name;
    xr_path_push(&d->path, ".value");
    if ((st = decode_value(d, &e[2], &args[i].value, 0)) != XR_OK) return st;
    xr_path_pop(&d->path, mark);
  }
  return XR_OK;
}

static xr_status_t decode_named(mp_decoder_t *d, const msgpack_object *map, const char *field,
                                const char *const *skip, xr_arg_t **out, size_t *out_count) {
  size_t n = 0;
  for (uint32_t i = 0; i < map->via.map.size; i++) {
    const msgpack_object *k = &map->via.map.ptr[i].key;
    if (k->type != MSGPACK_OBJECT_STR) return wrong(d, field, "string keys", k);
    int skipped = 0;
    for (const char *const *s = skip; s && *s; s++) skipped |= key_is(k, *s);
    n += !skipped;
  }
  *out = n ? xr_arena_alloc(d->bundle->arena, n * sizeof(xr_arg_t)) : NULL;
  if (n && !*out) return XR_RESOURCE_EXHAUSTED;
  size_t j = 0;
  for (uint32_t i = 0; i < map->via.map.size; i++) {
    const msgpack_object *k = &map->via.map.ptr[i].key;
    int skipped = 0;
    for (const char *const *s = skip; s && *s; s++) skipped |= key_is(k, *s);
    if (skipped) continue;
    xr_arg_t *a = &(*out)[j++];
    if (!(a->name = xr_arena_strndup(d->bundle->arena, k->via.str.ptr, k->via.str.size)))
      return XR_RESOURCE_EXHAUSTED;
    size_t mark = xr_path_push(&d->path, "%s%s.%s", d->path.len ? "." : "", field, a->name);
    xr_status_t st = decode_value(d, &map->via.map.ptr[i].val, &a->value, 0);
    if (st != XR_OK) return st;
    xr_path_pop(&d->path, mark);
  }
  *out_count = n;
  return XR_OK;
}

static xr_status_t decode_timing(mp_decoder_t *d, const msgpack_object *m, xr_op_t *op) {
  if (m->type != MSGPACK_OBJECT_MAP) return wrong(d, "timing", "a timing map", m);
  size_t mark = xr_path_push(&d->path, ".timing");
  xr_op_timing_t *t = xr_arena_alloc(d->bundle->arena, sizeof *t);
  if (!t) return XR_RESOURCE_EXHAUSTED;
  t->gpu_time_us = -1;
  const msgpack_object *o;
  xr_status_t st;
  if ((o = get(m, "g")) && (st = get_double(d, o, "gpu_time_us", &t->gpu_time_us)) != XR_OK) return st;
  if ((st = get_string(d, get(m, "d"), "device", &t->device)) != XR_OK) return st;
  if ((st = get_string(d, get(m, "gc"), "graph_capture", &t->graph_capture)) != XR_OK) return st;
  if ((o = get(m, "gb")) && (st = get_int(d, o, "graph_batch_size", &t->graph_batch_size)) != XR_OK)
    return st;
  if ((o = get(m, "k"))) {
    if (o->type != MSGPACK_OBJECT_ARRAY) return wrong(d, "kernels", "an array of kernels", o);
    t->kernel_count = o->via.array.size;
    t->kernels = xr_arena_alloc(d->bundle->arena, t->kernel_count * sizeof *t->kernels);
    if (t->kernel_count && !t->kernels) return XR_RESOURCE_EXHAUSTED;
    for (uint32_t i = 0; i < o->via.array.size; i++) {
      const msgpack_object *k = &o->via.array.ptr[i];
      size_t m2 = xr_path_push(&d->path, ".kernels[%u]", i);
      if (k->type != MSGPACK_OBJECT_ARRAY || k->via.array.size != 3)
        return wrong(d, "", "a kernel [name, duration_us, count]", k);
      if ((st = get_string(d, &k->via.array.ptr[0], "name", &t->kernels[i].name)) != XR_OK ||
          (st = get_double(d, &k->via.array.ptr[1], "duration_us", &t->kernels[i].duration_us)) !=
              XR_OK ||
          (st = get_int(d, &k->via.array.ptr[2], "count", &t->kernels[i].count)) != XR_OK)
        return st;
      xr_path_pop(&d->path, m2);
    }
  }
  op->timing = t;
  xr_path_pop(&d->path, mark);
  return XR_OK;
}

static xr_status_t decode_op(mp_decoder_t *d, const msgpack_object *m, xr_op_t *op) {
  if (m->type != MSGPACK_OBJECT_MAP) return wrong(d, "", "an op map", m);
  const msgpack_object *name = get(m, "n"), *args = get(m, "a"), *kwargs = get(m, "k"), *o;
  if (!name || name->type != MSGPACK_OBJECT_STR) return wrong(d, "name", "the op name", name);
  if (args && args->type != MSGPACK_OBJECT_ARRAY) return wrong(d, "args", "an array", args);
  if (kwargs && kwargs->type != MSGPACK_OBJECT_ARRAY) return wrong(d, "kwargs", "an array", kwargs);
  xr_status_t st;
  if ((st = get_string(d, name, "name", &op->name)) != XR_OK) return st;
  d->op_name = op->name;
  if ((st = get_string(d, get(m, "al"), "alias", &op->alias)) != XR_OK ||
      (st = xr_op_alloc_args(d->bundle->arena, op, args ? args->via.array.size : 0,
                             kwargs ? kwargs->via.array.size : 0)) != XR_OK ||
      (args && (st = decode_args(d, args, "args", op->args)) != XR_OK) ||
      (kwargs && (st = decode_args(d, kwargs, "kwargs", op->kwargs)) != XR_OK))
    return st;
  if ((o = get(m, "c")) && (st = get_int(d, o, "count", &op->count)) != XR_OK) return st;
  if ((o = get(m, "t")) && o->type != MSGPACK_OBJECT_NIL && (st = decode_timing(d, o, op)) != XR_OK)
    return st;
  if ((o = get(m, "h")) && o->type != MSGPACK_OBJECT_NIL) {
    if (o->type != MSGPACK_OBJECT_MAP) return wrong(d, "hints", "a map of hints", o);
    if ((st = decode_named(d, o, "hints", NULL, &op->hints, &op->hint_count)) != XR_OK) return st;
  }
  return XR_OK;
}

static xr_status_t decode_root(mp_decoder_t *d, const msgpack_object *root) {
  if (root->type != MSGPACK_OBJECT_MAP) return wrong(d, "", "a bundle map", root);
  const msgpack_object *fmt = get(root, "format"), *ops = get(root, "ops"), *o;
  if (!fmt || !key_is(fmt, "xreplay-bundle"))
    return fail(d, XR_INVALID_ARGUMENT, "not an xreplay bundle: \"format\" is not \"xreplay-bundle\"");
  if (!ops || ops->type != MSGPACK_OBJECT_ARRAY) return wrong(d, "ops", "an array of ops", ops);
  xr_bundle_t *b = d->bundle;
  xr_status_t st;
  if ((o = get(root, "format_version"))) {
    if ((st = get_int(d, o, "format_version", &b->meta.format_version)) != XR_OK) return st;
    if (b->meta.format_version < 1 || b->meta.format_version > XR_BUNDLE_FORMAT_VERSION)
      return fail(d, XR_UNIMPLEMENTED, "format_version %lld: this build reads versions 1 to %d",
                  (long long)b->meta.format_version, XR_BUNDLE_FORMAT_VERSION);
  }
  if ((o = get(root, "metadata")) && o->type != MSGPACK_OBJECT_NIL) {
    if (o->type != MSGPACK_OBJECT_MAP) return wrong(d, "metadata", "a map", o);
    xr_bundle_metadata_t *m = &b->meta;
    size_t mark = xr_path_push(&d->path, "metadata");
    for (size_t i = 0; xr_metadata_fields[i]; i++)
      if ((st = get_string(d, get(o, xr_metadata_fields[i]), xr_metadata_fields[i],
                           xr_metadata_slot(m, i))) != XR_OK)
        return st;
    xr_path_pop(&d->path, mark);
    if ((st = decode_named(d, o, "metadata", xr_metadata_fields, &m->extra, &m->extra_count)) != XR_OK)
      return st;
  }
  if (ops->via.array.size > b->op_capacity) {
    xr_op_t *grown = realloc(b->ops, ops->via.array.size * sizeof *grown);
    if (!grown) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory for %u ops", d->name,
                                ops->via.array.size);
    b->ops = grown;
    b->op_capacity = ops->via.array.size;
  }
  for (uint32_t i = 0; i < ops->via.array.size; i++) {
    xr_op_t *op = xr_bundle_append_op(b);
    size_t mark = xr_path_push(&d->path, "ops[%u]", i);
    if ((st = decode_op(d, &ops->via.array.ptr[i], op)) != XR_OK) return st;
    xr_path_pop(&d->path, mark);
  }
  return XR_OK;
}

xr_status_t xr_bundle_decode_msgpack(const uint8_t *bytes, size_t size, const char *name,
                                     xr_bundle_t *bundle) {
  if (size == 0) return xr_error(XR_DATA_LOSS, "%s: empty file", name);
  xr_status_t st = check_framing(bytes, size, name);
  if (st != XR_OK) return st;
  msgpack_zone zone;
  if (!msgpack_zone_init(&zone, 64 * 1024))
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory", name);
  msgpack_object root;
  size_t off = 0;
  msgpack_unpack_return r = msgpack_unpack((const char *)bytes, size, &off, &zone, &root);
  if (r == MSGPACK_UNPACK_SUCCESS) {
    mp_decoder_t d = {.name = name, .bundle = bundle};
    bundle->source_format = XR_FORMAT_MSGPACK;
    st = decode_root(&d, &root);
  } else if (r == MSGPACK_UNPACK_NOMEM_ERROR) {
    st = xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory unpacking MessagePack", name);
  } else {
    st = xr_error(XR_DATA_LOSS, "%s: corrupt MessagePack (msgpack-c unpack error %d)", name, (int)r);
  }
  msgpack_zone_destroy(&zone);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* encoder                                                                                     */

static void pack_str(msgpack_packer *pk, const char *s) {
  if (!s) {
    msgpack_pack_nil(pk);
    return;
  }
  size_t n = strlen(s);
  msgpack_pack_str(pk, n);
  msgpack_pack_str_body(pk, s, n);
}

/* float32 when it holds the value exactly: half the bytes, same double on the way back. */
static void pack_double(msgpack_packer *pk, double v) {
  float f = (float)v;
  if (!isnan(v) && (double)f == v) msgpack_pack_float(pk, f);
  else msgpack_pack_double(pk, v);
}

static void pack_dims(msgpack_packer *pk, const int64_t *dims, int32_t rank) {
  msgpack_pack_array(pk, (size_t)rank);
  for (int32_t i = 0; i < rank; i++) msgpack_pack_int64(pk, dims[i]);
}

static void pack_value(msgpack_packer *pk, const xr_value_t *v) {
  switch (v->kind) {
    case XR_VALUE_NULL: msgpack_pack_nil(pk); break;
    case XR_VALUE_BOOL:
      if (v->as.b) msgpack_pack_true(pk);
      else msgpack_pack_false(pk);
      break;
    case XR_VALUE_INT: msgpack_pack_int64(pk, v->as.i); break;
    case XR_VALUE_FLOAT: pack_double(pk, v->as.f); break;
    case XR_VALUE_STRING: pack_str(pk, v->as.s); break;
    case XR_VALUE_LIST:
      msgpack_pack_array(pk, v->as.list.count);
      for (size_t i = 0; i < v->as.list.count; i++) pack_value(pk, &v->as.list.items[i]);
      break;
    case XR_VALUE_TENSOR: {
      const xr_tensor_spec_t *t = v->as.tensor;
      size_t n = 3 + (t->storage_offset != 0) + (t->storage_size >= 0) +
                 (t->init != XR_INIT_UNSET) + (t->data_file != NULL) + (t->data != NULL);
      msgpack_pack_map(pk, n);
      pack_str(pk, "s");
      pack_dims(pk, t->shape, t->rank);
      pack_str(pk, "st");
      pack_dims(pk, t->strides, t->rank);
      pack_str(pk, "d");
      pack_str(pk, xr_dtype_name(t->dtype));
      if (t->storage_offset) {
        pack_str(pk, "o");
        msgpack_pack_int64(pk, t->storage_offset);
      }
      if (t->storage_size >= 0) {
        pack_str(pk, "ss");
        msgpack_pack_int64(pk, t->storage_size);
      }
      if (t->init != XR_INIT_UNSET) {
        pack_str(pk, "i");
        pack_str(pk, xr_init_name(t->init)); /* NULL (-> nil) for INIT_NONE */
      }
      if (t->data_file) {
        pack_str(pk, "f");
        pack_str(pk, t->data_file);
      }
      if (t->data) {
        pack_str(pk, "b");
        msgpack_pack_bin(pk, t->data_size);
        msgpack_pack_bin_body(pk, t->data, t->data_size);
      }
      break;
    }
  }
}

static void pack_args(msgpack_packer *pk, const xr_arg_t *args, size_t n) {
  msgpack_pack_array(pk, n);
  for (size_t i = 0; i < n; i++) {
    msgpack_pack_array(pk, args[i].defaulted ? 4 : 3);
    pack_str(pk, args[i].name);
    pack_str(pk, args[i].type);
    pack_value(pk, &args[i].value);
    if (args[i].defaulted) msgpack_pack_true(pk);
  }
}

static void pack_named(msgpack_packer *pk, const xr_arg_t *values, size_t n) {
  for (size_t i = 0; i < n; i++) {
    pack_str(pk, values[i].name);
    pack_value(pk, &values[i].value);
  }
}

static void pack_op(msgpack_packer *pk, const xr_op_t *op) {
  size_t n = 3 + (op->alias != NULL) + (op->count != 0) + (op->timing != NULL) +
             (op->hint_count != 0);
  msgpack_pack_map(pk, n);
  pack_str(pk, "n");
  pack_str(pk, op->name);
  if (op->alias) {
    pack_str(pk, "al");
    pack_str(pk, op->alias);
  }
  pack_str(pk, "a");
  pack_args(pk, op->args, op->arg_count);
  pack_str(pk, "k");
  pack_args(pk, op->kwargs, op->kwarg_count);
  if (op->count) {
    pack_str(pk, "c");
    msgpack_pack_int64(pk, op->count);
  }
  if (op->timing) {
    const xr_op_timing_t *t = op->timing;
    pack_str(pk, "t");
    msgpack_pack_map(pk, 1 + (t->gpu_time_us >= 0) + (t->device != NULL) +
                             (t->graph_capture != NULL) + (t->graph_batch_size != 0));
    if (t->gpu_time_us >= 0) {
      pack_str(pk, "g");
      msgpack_pack_double(pk, t->gpu_time_us);
    }
    if (t->device) {
      pack_str(pk, "d");
      pack_str(pk, t->device);
    }
    if (t->graph_capture) {
      pack_str(pk, "gc");
      pack_str(pk, t->graph_capture);
    }
    if (t->graph_batch_size) {
      pack_str(pk, "gb");
      msgpack_pack_int64(pk, t->graph_batch_size);
    }
    pack_str(pk, "k");
    msgpack_pack_array(pk, t->kernel_count);
    for (size_t k = 0; k < t->kernel_count; k++) {
      msgpack_pack_array(pk, 3);
      pack_str(pk, t->kernels[k].name);
      msgpack_pack_double(pk, t->kernels[k].duration_us);
      msgpack_pack_int64(pk, t->kernels[k].count);
    }
  }
  if (op->hint_count) {
    pack_str(pk, "h");
    msgpack_pack_map(pk, op->hint_count);
    pack_named(pk, op->hints, op->hint_count);
  }
}

/* msgpack_sbuffer_write, remembering whether any write failed (the packer's return codes are
 * otherwise easy to lose deep inside the recursion). */
typedef struct checked_sbuffer {
  msgpack_sbuffer sbuf;
  int failed;
} checked_sbuffer_t;

static int checked_write(void *data, const char *buf, size_t len) {
  checked_sbuffer_t *c = data;
  if (c->failed || msgpack_sbuffer_write(&c->sbuf, buf, len) != 0) c->failed = 1;
  return c->failed ? -1 : 0;
}

xr_status_t xr_bundle_encode_msgpack(const xr_bundle_t *bundle, uint8_t **out_bytes,
                                     size_t *out_size) {
  checked_sbuffer_t out = {.failed = 0};
  msgpack_sbuffer_init(&out.sbuf);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &out, checked_write);
  const xr_bundle_metadata_t *m = &bundle->meta;
  size_t meta_n = m->extra_count;
  for (size_t i = 0; xr_metadata_fields[i]; i++) meta_n += xr_metadata_value(m, i) != NULL;

  msgpack_pack_map(&pk, 4);
  pack_str(&pk, "format");
  pack_str(&pk, "xreplay-bundle");
  pack_str(&pk, "format_version");
  msgpack_pack_int64(&pk, m->format_version);
  pack_str(&pk, "metadata");
  msgpack_pack_map(&pk, meta_n);
  for (size_t i = 0; xr_metadata_fields[i]; i++) {
    if (!xr_metadata_value(m, i)) continue;
    pack_str(&pk, xr_metadata_fields[i]);
    pack_str(&pk, xr_metadata_value(m, i));
  }
  pack_named(&pk, m->extra, m->extra_count);
  pack_str(&pk, "ops");
  msgpack_pack_array(&pk, bundle->op_count);
  for (size_t i = 0; i < bundle->op_count; i++) pack_op(&pk, &bundle->ops[i]);
  if (out.failed) {
    msgpack_sbuffer_destroy(&out.sbuf);
    return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory writing MessagePack");
  }
  *out_size = out.sbuf.size;
  *out_bytes = (uint8_t *)msgpack_sbuffer_release(&out.sbuf);
  return XR_OK;
}
