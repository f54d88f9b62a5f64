/* JSON codec: our bundle schema and TraceLens EventReplay IR, parsed with cJSON.
 *
 * cJSON keeps every number as a double, which would round integers past 2^53 and cannot tell
 * 1 from 1.0. So before parsing we scan the text once for number tokens; cJSON builds its tree
 * in document order, so the k-th number item met in a pre-order walk is the k-th token, and its
 * literal text decides int (exact, full int64 range) or float. The scan also accepts the bare
 * NaN, Infinity and -Infinity that Python's json module writes, blanking them to 0 for cJSON
 * and remembering what they were. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "formats/internal.h"

/* ------------------------------------------------------------------------------------------ */
/* number tokens                                                                               */

enum { TOKEN_FINITE = 0, TOKEN_NAN, TOKEN_POS_INF, TOKEN_NEG_INF };

typedef struct number_token {
  uint32_t offset; /* into the text */
  uint16_t length;
  uint8_t special;
  uint8_t is_integer;
} number_token_t;

typedef struct json_decoder {
  const char *text;
  const char *name;
  number_token_t *tokens;
  size_t token_count, token_capacity;
  xr_bundle_t *bundle;
  xr_path_t path;
  const char *op_name, *arg_name; /* for messages about the value being decoded */
  bool tracelens;                 /* the document is TraceLens IR */
} json_decoder_t;

static xr_status_t fail(json_decoder_t *d, xr_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static xr_status_t fail(json_decoder_t *d, xr_status_t st, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return xr_error(st, "%s: %s: %s", d->name, d->path.len ? d->path.buf : "(top level)", what);
}

static int add_token(json_decoder_t *d, size_t offset, size_t length, int special, int integer) {
  if (d->token_count == d->token_capacity) {
    size_t cap = d->token_capacity ? d->token_capacity * 2 : 1024;
    number_token_t *t = realloc(d->tokens, cap * sizeof *t);
    if (!t) return 0;
    d->tokens = t;
    d->token_capacity = cap;
  }
  d->tokens[d->token_count++] = (number_token_t){(uint32_t)offset,
                                                 (uint16_t)(length > 65535 ? 65535 : length),
                                                 (uint8_t)special, (uint8_t)integer};
  return 1;
}

/* Where cJSON stopped (or the scan found a malformed number), as "line L, column C". */
static void describe_position(const char *text, size_t size, const char *at, char *out, size_t n) {
  if (!at || at < text || at > text + size) {
    snprintf(out, n, "unknown position");
    return;
  }
  size_t line = 1, col = 1;
  for (const char *p = text; p < at; p++) {
    if (*p == '\n') line++, col = 1;
    else col++;
  }
  snprintf(out, n, "line %zu, column %zu", line, col);
}

/* Records every number token; blanks NaN/Infinity in `mutable_text` (a copy made on demand). */
static xr_status_t scan_numbers(json_decoder_t *d, const char *text, size_t size,
                                char **mutable_text) {
  if (size >= UINT32_MAX) return xr_error(XR_OUT_OF_RANGE, "%s: JSON larger than 4 GiB", d->name);
  for (size_t i = 0; i < size;) {
    char c = text[i];
    if (c == '"') {
      for (i++; i < size && text[i] != '"'; i++)
        if (text[i] == '\\') i++;
      i++;
      continue;
    }
    int special = 0;
    size_t len = 0;
    if (c == 'N' && size - i >= 3 && memcmp(text + i, "NaN", 3) == 0) {
      special = TOKEN_NAN, len = 3;
    } else if (c == 'I' && size - i >= 8 && memcmp(text + i, "Infinity", 8) == 0) {
      special = TOKEN_POS_INF, len = 8;
    } else if (c == '-' && size - i >= 9 && memcmp(text + i, "-Infinity", 9) == 0) {
      special = TOKEN_NEG_INF, len = 9;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      int integer = 1;
      size_t j = i + 1;
      for (; j < size; j++) {
        char k = text[j];
        if (k == '.' || k == 'e' || k == 'E') integer = 0;
        else if (!((k >= '0' && k <= '9') || k == '+' || k == '-')) break;
      }
      /* "-NaN", "1NaN", "2Infinity": not JSON, and blanking the word would make them numbers. */
      if ((c == '-' && j == i + 1) || (j < size && isalpha((unsigned char)text[j]))) {
        char where[64];
        describe_position(text, size, text + j, where, sizeof where);
        return xr_error(XR_DATA_LOSS, "%s: not valid JSON near %s: a malformed number", d->name,
                        where);
      }
      if (!add_token(d, i, j - i, TOKEN_FINITE, integer)) goto oom;
      i = j;
      continue;
    } else {
      i++;
      continue;
    }
    if (!*mutable_text) {
      *mutable_text = malloc(size + 1);
      if (!*mutable_text) goto oom;
      memcpy(*mutable_text, text, size);
      (*mutable_text)[size] = '\0';
    }
    (*mutable_text)[i] = '0';
    memset(*mutable_text + i + 1, ' ', len - 1);
    if (!add_token(d, i, len, special, 0)) goto oom;
    i += len;
  }
  return XR_OK;
oom:
  return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory scanning JSON numbers", d->name);
}

/* Pre-order walk: store each number item's token index in its (otherwise unused) valueint. */
static int bind_tokens(cJSON *item, size_t *next, size_t count) {
  for (; item; item = item->next) {
    if (cJSON_IsNumber(item)) {
      if (*next >= count) return 0;
      item->valueint = (int)(*next)++;
    } else if (item->child) {
      if (!bind_tokens(item->child, next, count)) return 0;
    }
  }
  return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* typed accessors                                                                             */

static const char *json_type_name(const cJSON *j) {
  if (!j) return "nothing";
  if (cJSON_IsNull(j)) return "null";
  if (cJSON_IsBool(j)) return "a bool";
  if (cJSON_IsNumber(j)) return "a number";
  if (cJSON_IsString(j)) return "a string";
  if (cJSON_IsArray(j)) return "an array";
  if (cJSON_IsObject(j)) return "an object";
  return "invalid JSON";
}

typedef struct number {
  int is_integer;
  int64_t i;
  double f;
} number_t;

static xr_status_t read_number(json_decoder_t *d, const cJSON *j, number_t *out) {
  const number_token_t *t = &d->tokens[j->valueint];
  out->is_integer = 0;
  out->i = 0;
  switch (t->special) {
    case TOKEN_NAN: out->f = NAN; return XR_OK;
    case TOKEN_POS_INF: out->f = INFINITY; return XR_OK;
    case TOKEN_NEG_INF: out->f = -INFINITY; return XR_OK;
  }
  out->f = j->valuedouble;
  if (t->is_integer) {
    char digits[32];
    if (t->length >= sizeof digits)
      return fail(d, XR_OUT_OF_RANGE, "integer %.*s... outside the 64-bit range", 20,
                  d->text + t->offset);
    memcpy(digits, d->text + t->offset, t->length);
    digits[t->length] = '\0';
    errno = 0;
    long long v = strtoll(digits, NULL, 10);
    if (errno == ERANGE) return fail(d, XR_OUT_OF_RANGE, "integer %s outside the 64-bit range", digits);
    out->is_integer = 1;
    out->i = v;
  }
  return XR_OK;
}

static xr_status_t read_int(json_decoder_t *d, const cJSON *j, const char *field, int64_t *out) {
  size_t mark = xr_path_push(&d->path, "%s%s", d->path.len && field[0] != '[' ? "." : "", field);
  number_t n;
  xr_status_t st = XR_OK;
  if (!cJSON_IsNumber(j)) st = fail(d, XR_INVALID_ARGUMENT, "expected an integer, got %s", json_type_name(j));
  else if ((st = read_number(d, j, &n)) == XR_OK && !n.is_integer)
    st = fail(d, XR_INVALID_ARGUMENT, "expected an integer, got %.17g", n.f);
  if (st == XR_OK) *out = n.i;
  xr_path_pop(&d->path, mark);
  return st;
}

static xr_status_t read_double(json_decoder_t *d, const cJSON *j, const char *field, double *out) {
  size_t mark = xr_path_push(&d->path, ".%s", field);
  number_t n;
  xr_status_t st = XR_OK;
  if (!cJSON_IsNumber(j)) st = fail(d, XR_INVALID_ARGUMENT, "expected a number, got %s", json_type_name(j));
  else if ((st = read_number(d, j, &n)) == XR_OK) *out = n.is_integer ? (double)n.i : n.f;
  xr_path_pop(&d->path, mark);
  return st;
}

/* A string field, or NULL when absent or null. */
static xr_status_t read_opt_string(json_decoder_t *d, const cJSON *obj, const char *field,
                                   char **out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, field);
  *out = NULL;
  if (!j || cJSON_IsNull(j)) return XR_OK;
  if (!cJSON_IsString(j)) {
    size_t mark = xr_path_push(&d->path, ".%s", field);
    xr_status_t st = fail(d, XR_INVALID_ARGUMENT, "expected a string, got %s", json_type_name(j));
    xr_path_pop(&d->path, mark);
    return st;
  }
  *out = xr_arena_strdup(d->bundle->arena, j->valuestring);
  return *out ? XR_OK : XR_RESOURCE_EXHAUSTED;
}

static xr_status_t expect(json_decoder_t *d, const cJSON *j, int ok, const char *field,
                          const char *what) {
  if (ok) return XR_OK;
  size_t mark = field[0] ? xr_path_push(&d->path, "%s%s", d->path.len ? "." : "", field) : d->path.len;
  xr_status_t st = fail(d, XR_INVALID_ARGUMENT, "expected %s, got %s", what, json_type_name(j));
  xr_path_pop(&d->path, mark);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* values                                                                                      */

static xr_status_t decode_dims(json_decoder_t *d, const cJSON *arr, const char *field,
                               int64_t *dims) {
  size_t mark = xr_path_push(&d->path, ".%s", field);
  int32_t i = 0;
  xr_status_t st = XR_OK;
  for (const cJSON *e = arr->child; e && st == XR_OK; e = e->next, i++) {
    char idx[24];
    snprintf(idx, sizeof idx, "[%d]", i);
    st = read_int(d, e, idx, &dims[i]);
  }
  xr_path_pop(&d->path, mark);
  return st;
}

static xr_status_t decode_tensor(json_decoder_t *d, const cJSON *obj, xr_value_t *out) {
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(obj, "shape");
  const cJSON *strides = cJSON_GetObjectItemCaseSensitive(obj, "strides");
  const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(obj, "dtype");
  xr_status_t st;
  if ((st = expect(d, shape, cJSON_IsArray(shape), "shape", "an array of integers")) != XR_OK ||
      (st = expect(d, dtype, cJSON_IsString(dtype), "dtype", "a dtype string")) != XR_OK)
    return st;
  int rank = cJSON_GetArraySize(shape);
  if (rank > XR_MAX_RANK) {
    size_t mark = xr_path_push(&d->path, ".shape");
    st = fail(d, XR_OUT_OF_RANGE, "rank %d exceeds the maximum %d", rank, XR_MAX_RANK);
    xr_path_pop(&d->path, mark);
    return st;
  }
  if ((st = xr_value_make_tensor(d->bundle->arena, out, rank)) != XR_OK) return st;
  xr_tensor_spec_t *t = out->as.tensor;
  if ((st = decode_dims(d, shape, "shape", t->shape)) != XR_OK) return st;
  if (strides && !cJSON_IsNull(strides)) {
    if ((st = expect(d, strides, cJSON_IsArray(strides), "strides", "an array of integers")) != XR_OK)
      return st;
    if (cJSON_GetArraySize(strides) != rank) {
      size_t mark = xr_path_push(&d->path, ".strides");
      st = fail(d, XR_INVALID_ARGUMENT, "%d strides for %d dimensions",
                cJSON_GetArraySize(strides), rank);
      xr_path_pop(&d->path, mark);
      return st;
    }
    if ((st = decode_dims(d, strides, "strides", t->strides)) != XR_OK) return st;
  } else {
    xr_tensor_set_contiguous(t);
  }
  t->dtype = xr_dtype_parse(dtype->valuestring);
  if (t->dtype == XR_DTYPE_INVALID) {
    size_t mark = xr_path_push(&d->path, ".dtype");
    st = fail(d, XR_INVALID_ARGUMENT, "unknown dtype \"%s\" (op %s, argument %s)",
              dtype->valuestring, d->op_name ? d->op_name : "?", d->arg_name ? d->arg_name : "?");
    xr_path_pop(&d->path, mark);
    return st;
  }
  const cJSON *j;
  if ((j = cJSON_GetObjectItemCaseSensitive(obj, "storage_offset")) &&
      (st = read_int(d, j, "storage_offset", &t->storage_offset)) != XR_OK)
    return st;
  if ((j = cJSON_GetObjectItemCaseSensitive(obj, "storage_size")) &&
      (st = read_int(d, j, "storage_size", &t->storage_size)) != XR_OK)
    return st;
  if ((j = cJSON_GetObjectItemCaseSensitive(obj, "init"))) {
    if (cJSON_IsNull(j)) {
      t->init = XR_INIT_NONE;
    } else if (!cJSON_IsString(j) || !xr_init_parse(j->valuestring, &t->init)) {
      size_t mark = xr_path_push(&d->path, ".init");
      st = fail(d, XR_INVALID_ARGUMENT,
                "expected normal, uniform, zeros, ones or null, got %s%s%s",
                cJSON_IsString(j) ? "\"" : json_type_name(j),
                cJSON_IsString(j) ? j->valuestring : "", cJSON_IsString(j) ? "\"" : "");
      xr_path_pop(&d->path, mark);
      return st;
    }
  }
  if ((st = read_opt_string(d, obj, "data", &t->data_file)) != XR_OK) return st;
  if ((j = cJSON_GetObjectItemCaseSensitive(obj, "data_base64"))) {
    if ((st = expect(d, j, cJSON_IsString(j), "data_base64", "a base64 string")) != XR_OK) return st;
    size_t len = strlen(j->valuestring), n;
    t->data = xr_arena_alloc(d->bundle->arena, xr_base64_decoded_max(len));
    if (!t->data) return XR_RESOURCE_EXHAUSTED;
    if (!xr_base64_decode(j->valuestring, len, t->data, &n)) {
      size_t mark = xr_path_push(&d->path, ".data_base64");
      st = fail(d, XR_DATA_LOSS, "malformed base64");
      xr_path_pop(&d->path, mark);
      return st;
    }
    t->data_size = n;
  }
  return XR_OK;
}

static xr_status_t decode_value(json_decoder_t *d, const cJSON *j, xr_value_t *out, int depth) {
  if (cJSON_IsNull(j)) {
    out->kind = XR_VALUE_NULL;
  } else if (cJSON_IsBool(j)) {
    out->kind = XR_VALUE_BOOL;
    out->as.b = cJSON_IsTrue(j);
  } else if (cJSON_IsNumber(j)) {
    number_t n;
    xr_status_t st = read_number(d, j, &n);
    if (st != XR_OK) return st;
    out->kind = n.is_integer ? XR_VALUE_INT : XR_VALUE_FLOAT;
    if (n.is_integer) out->as.i = n.i;
    else out->as.f = n.f;
  } else if (cJSON_IsString(j)) {
    return xr_value_make_string(d->bundle->arena, out, j->valuestring);
  } else if (cJSON_IsArray(j)) {
    if (depth >= XR_MAX_VALUE_DEPTH)
      return fail(d, XR_OUT_OF_RANGE, "lists nested deeper than %d levels", XR_MAX_VALUE_DEPTH);
    xr_status_t st = xr_value_make_list(d->bundle->arena, out, (size_t)cJSON_GetArraySize(j));
    size_t i = 0;
    for (const cJSON *e = j->child; e && st == XR_OK; e = e->next, i++) {
      size_t mark = xr_path_push(&d->path, "[%zu]", i);
      st = decode_value(d, e, &out->as.list.items[i], depth + 1);
      if (st == XR_OK) xr_path_pop(&d->path, mark);
    }
    return st;
  } else if (cJSON_IsObject(j)) {
    return decode_tensor(d, j, out);
  } else {
    return fail(d, XR_INVALID_ARGUMENT, "unexpected JSON value");
  }
  return XR_OK;
}

/* One argument object; key names differ between our schema and TraceLens'. */
static xr_status_t decode_arg(json_decoder_t *d, const cJSON *obj, const char *name_key,
                              const char *type_key, xr_arg_t *out) {
  xr_status_t st;
  if ((st = expect(d, obj, cJSON_IsObject(obj), "", "an argument object")) != XR_OK) return st;
  if ((st = read_opt_string(d, obj, name_key, &out->name)) != XR_OK ||
      (st = read_opt_string(d, obj, type_key, &out->type)) != XR_OK)
    return st;
  d->arg_name = out->name;
  const cJSON *def = cJSON_GetObjectItemCaseSensitive(obj, "defaulted");
  out->defaulted = cJSON_IsTrue(def);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "value");
  if (!v) return expect(d, v, 0, "value", "a value (use null for None)");
  /* TraceLens writes "" for a string the profiler dropped (aten::gelu's approximate): the
   * argument is then left to its default, as extraction does, and marked defaulted. */
  if (d->tracelens && out->type && strstr(out->type, "str") && cJSON_IsString(v) &&
      !v->valuestring[0]) {
    out->defaulted = true;
    return XR_OK;
  }
  size_t mark = xr_path_push(&d->path, ".value");
  st = decode_value(d, v, &out->value, 0);
  if (st == XR_OK) xr_path_pop(&d->path, mark);
  return st;
}

static xr_status_t decode_arg_list(json_decoder_t *d, const cJSON *arr, const char *field,
                                   const char *name_key, const char *type_key, xr_arg_t *args) {
  size_t i = 0;
  for (const cJSON *e = arr ? arr->child : NULL; e; e = e->next, i++) {
    size_t mark = xr_path_push(&d->path, ".%s[%zu]", field, i);
    xr_status_t st = decode_arg(d, e, name_key, type_key, &args[i]);
    if (st != XR_OK) return st;
    xr_path_pop(&d->path, mark);
  }
  return XR_OK;
}

static size_t array_size(const cJSON *j) { return j ? (size_t)cJSON_GetArraySize(j) : 0; }

/* Named values from an object ({"key": value, ...}), used for hints and metadata extras. */
static xr_status_t decode_named_values(json_decoder_t *d, const cJSON *obj, const char *field,
                                       const char *const *skip, xr_arg_t **out, size_t *out_count) {
  size_t n = 0;
  for (const cJSON *e = obj->child; e; e = e->next) {
    int skipped = 0;
    for (const char *const *s = skip; s && *s; s++) skipped |= strcmp(e->string, *s) == 0;
    n += !skipped;
  }
  *out_count = 0;
  *out = n ? xr_arena_alloc(d->bundle->arena, n * sizeof(xr_arg_t)) : NULL;
  if (n && !*out) return XR_RESOURCE_EXHAUSTED;
  size_t i = 0;
  for (const cJSON *e = obj->child; e; e = e->next) {
    int skipped = 0;
    for (const char *const *s = skip; s && *s; s++) skipped |= strcmp(e->string, *s) == 0;
    if (skipped) continue;
    (*out)[i].name = xr_arena_strdup(d->bundle->arena, e->string);
    if (!(*out)[i].name) return XR_RESOURCE_EXHAUSTED;
    size_t mark = xr_path_push(&d->path, "%s%s.%s", d->path.len ? "." : "", field, e->string);
    xr_status_t st = decode_value(d, e, &(*out)[i].value, 0);
    if (st != XR_OK) return st;
    xr_path_pop(&d->path, mark);
    i++;
  }
  *out_count = n;
  return XR_OK;
}

static xr_status_t decode_timing(json_decoder_t *d, const cJSON *obj, xr_op_t *op) {
  xr_status_t st;
  size_t mark = xr_path_push(&d->path, ".timing");
  if ((st = expect(d, obj, cJSON_IsObject(obj), "", "an object")) != XR_OK) return st;
  xr_op_timing_t *t = xr_arena_alloc(d->bundle->arena, sizeof *t);
  if (!t) return XR_RESOURCE_EXHAUSTED;
  t->gpu_time_us = -1;
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, "gpu_time_us");
  if (j && (st = read_double(d, j, "gpu_time_us", &t->gpu_time_us)) != XR_OK) return st;
  if ((st = read_opt_string(d, obj, "device", &t->device)) != XR_OK) return st;
  if ((st = read_opt_string(d, obj, "graph_capture", &t->graph_capture)) != XR_OK) return st;
  if ((j = cJSON_GetObjectItemCaseSensitive(obj, "graph_batch_size")) &&
      (st = read_int(d, j, "graph_batch_size", &t->graph_batch_size)) != XR_OK)
    return st;
  const cJSON *kernels = cJSON_GetObjectItemCaseSensitive(obj, "kernels");
  if (kernels) {
    if ((st = expect(d, kernels, cJSON_IsArray(kernels), "kernels", "an array")) != XR_OK) return st;
    t->kernel_count = array_size(kernels);
    t->kernels = xr_arena_alloc(d->bundle->arena, t->kernel_count * sizeof *t->kernels);
    if (!t->kernels) return XR_RESOURCE_EXHAUSTED;
    size_t i = 0;
    for (const cJSON *k = kernels->child; k; k = k->next, i++) {
      size_t m2 = xr_path_push(&d->path, ".kernels[%zu]", i);
      if ((st = expect(d, k, cJSON_IsObject(k), "", "an object")) != XR_OK ||
          (st = read_opt_string(d, k, "name", &t->kernels[i].name)) != XR_OK)
        return st;
      if ((j = cJSON_GetObjectItemCaseSensitive(k, "duration_us")) &&
          (st = read_double(d, j, "duration_us", &t->kernels[i].duration_us)) != XR_OK)
        return st;
      if ((j = cJSON_GetObjectItemCaseSensitive(k, "count")) &&
          (st = read_int(d, j, "count", &t->kernels[i].count)) != XR_OK)
        return st;
      xr_path_pop(&d->path, m2);
    }
  }
  op->timing = t;
  xr_path_pop(&d->path, mark);
  return XR_OK;
}

static xr_status_t decode_count(json_decoder_t *d, const cJSON *obj, xr_op_t *op) {
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, "count");
  if (!c || cJSON_IsNull(c)) return XR_OK;
  return read_int(d, c, "count", &op->count);
}

/* Our schema: {"name", "alias"?, "args", "kwargs", "count"?, "timing"?, "hints"?}. */
static xr_status_t decode_our_op(json_decoder_t *d, const cJSON *obj, xr_op_t *op) {
  xr_status_t st;
  if ((st = expect(d, obj, cJSON_IsObject(obj), "", "an op object")) != XR_OK) return st;
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
  if ((st = expect(d, name, cJSON_IsString(name), "name", "the op name as a string")) != XR_OK)
    return st;
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(obj, "args");
  const cJSON *kwargs = cJSON_GetObjectItemCaseSensitive(obj, "kwargs");
  if ((args && (st = expect(d, args, cJSON_IsArray(args), "args", "an array")) != XR_OK) ||
      (kwargs && (st = expect(d, kwargs, cJSON_IsArray(kwargs), "kwargs", "an array")) != XR_OK))
    return st;
  if (!(op->name = xr_arena_strdup(d->bundle->arena, name->valuestring))) return XR_RESOURCE_EXHAUSTED;
  d->op_name = op->name;
  if ((st = read_opt_string(d, obj, "alias", &op->alias)) != XR_OK ||
      (st = xr_op_alloc_args(d->bundle->arena, op, array_size(args), array_size(kwargs))) != XR_OK ||
      (st = decode_arg_list(d, args, "args", "name", "type", op->args)) != XR_OK ||
      (st = decode_arg_list(d, kwargs, "kwargs", "name", "type", op->kwargs)) != XR_OK ||
      (st = decode_count(d, obj, op)) != XR_OK)
    return st;
  const cJSON *timing = cJSON_GetObjectItemCaseSensitive(obj, "timing");
  if (timing && !cJSON_IsNull(timing) && (st = decode_timing(d, timing, op)) != XR_OK) return st;
  const cJSON *hints = cJSON_GetObjectItemCaseSensitive(obj, "hints");
  if (hints && !cJSON_IsNull(hints)) {
    if ((st = expect(d, hints, cJSON_IsObject(hints), "hints", "an object")) != XR_OK) return st;
    if ((st = decode_named_values(d, hints, "hints", NULL, &op->hints, &op->hint_count)) != XR_OK)
      return st;
  }
  return XR_OK;
}

/* TraceLens: {"op_name", "replay_ir": {"list_pos_args", "list_kwargs"}, "count"?}. */
static xr_status_t decode_tracelens_op(json_decoder_t *d, const cJSON *obj, xr_op_t *op) {
  d->tracelens = true;
  xr_status_t st;
  if ((st = expect(d, obj, cJSON_IsObject(obj), "", "an IR entry object")) != XR_OK) return st;
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "op_name");
  const cJSON *ir = cJSON_GetObjectItemCaseSensitive(obj, "replay_ir");
  if ((st = expect(d, name, cJSON_IsString(name), "op_name", "the op name as a string")) != XR_OK ||
      (st = expect(d, ir, cJSON_IsObject(ir), "replay_ir", "an object")) != XR_OK)
    return st;
  const cJSON *args = cJSON_GetObjectItemCaseSensitive(ir, "list_pos_args");
  const cJSON *kwargs = cJSON_GetObjectItemCaseSensitive(ir, "list_kwargs");
  size_t mark = xr_path_push(&d->path, ".replay_ir");
  if ((args && (st = expect(d, args, cJSON_IsArray(args), "list_pos_args", "an array")) != XR_OK) ||
      (kwargs &&
       (st = expect(d, kwargs, cJSON_IsArray(kwargs), "list_kwargs", "an array")) != XR_OK))
    return st;
  if (!(op->name = xr_arena_strdup(d->bundle->arena, name->valuestring))) return XR_RESOURCE_EXHAUSTED;
  d->op_name = op->name;
  if ((st = xr_op_alloc_args(d->bundle->arena, op, array_size(args), array_size(kwargs))) != XR_OK ||
      (st = decode_arg_list(d, args, "list_pos_args", "arg_name", "arg_type", op->args)) != XR_OK ||
      (st = decode_arg_list(d, kwargs, "list_kwargs", "arg_name", "arg_type", op->kwargs)) != XR_OK)
    return st;
  xr_path_pop(&d->path, mark);
  return decode_count(d, obj, op);
}

static xr_status_t decode_metadata(json_decoder_t *d, const cJSON *meta) {
  xr_bundle_metadata_t *m = &d->bundle->meta;
  size_t mark = xr_path_push(&d->path, "metadata");
  xr_status_t st;
  if ((st = expect(d, meta, cJSON_IsObject(meta), "", "an object")) != XR_OK) return st;
  for (size_t i = 0; xr_metadata_fields[i]; i++)
    if ((st = read_opt_string(d, meta, xr_metadata_fields[i], xr_metadata_slot(m, i))) != XR_OK)
      return st;
  xr_path_pop(&d->path, mark);
  return decode_named_values(d, meta, "metadata", xr_metadata_fields, &m->extra, &m->extra_count);
}

static xr_status_t decode_ops(json_decoder_t *d, const cJSON *ops, int tracelens) {
  for (const cJSON *e = ops->child; e; e = e->next) {
    xr_op_t *op = xr_bundle_append_op(d->bundle);
    if (!op) return XR_RESOURCE_EXHAUSTED;
    size_t mark = xr_path_push(&d->path, "ops[%zu]", d->bundle->op_count - 1);
    xr_status_t st = tracelens ? decode_tracelens_op(d, e, op) : decode_our_op(d, e, op);
    if (st != XR_OK) return st;
    xr_path_pop(&d->path, mark);
  }
  return XR_OK;
}

static xr_status_t decode_root(json_decoder_t *d, const cJSON *root) {
  if (cJSON_IsArray(root)) {
    d->bundle->source_format = XR_FORMAT_TRACELENS;
    return decode_ops(d, root, 1);
  }
  if (cJSON_IsObject(root) && cJSON_GetObjectItemCaseSensitive(root, "replay_ir")) {
    /* A single TraceLens IR entry, as golden/manifest.json's "ir" fields hold. */
    d->bundle->source_format = XR_FORMAT_TRACELENS;
    xr_op_t *op = xr_bundle_append_op(d->bundle);
    if (!op) return XR_RESOURCE_EXHAUSTED;
    xr_path_push(&d->path, "ops[0]");
    return decode_tracelens_op(d, root, op);
  }
  if (!cJSON_IsObject(root))
    return fail(d, XR_INVALID_ARGUMENT,
                "expected an xreplay bundle object or a TraceLens IR list, got %s",
                json_type_name(root));
  d->bundle->source_format = XR_FORMAT_JSON;
  const cJSON *ops = cJSON_GetObjectItemCaseSensitive(root, "ops");
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
  if (fmt && !(cJSON_IsString(fmt) && strcmp(fmt->valuestring, "xreplay-bundle") == 0))
    return fail(d, XR_INVALID_ARGUMENT, "\"format\" is not \"xreplay-bundle\"");
  if (!ops && cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
    return xr_trace_not_bundle(d->name, true);
  if (!cJSON_IsArray(ops))
    return fail(d, XR_INVALID_ARGUMENT, "not an xreplay bundle: \"ops\" is %s, expected an array",
                json_type_name(ops));
  const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "format_version");
  xr_status_t st;
  if (version) {
    if ((st = read_int(d, version, "format_version", &d->bundle->meta.format_version)) != XR_OK)
      return st;
    if (d->bundle->meta.format_version > XR_BUNDLE_FORMAT_VERSION ||
        d->bundle->meta.format_version < 1)
      return fail(d, XR_UNIMPLEMENTED, "format_version %lld: this build reads versions 1 to %d",
                  (long long)d->bundle->meta.format_version, XR_BUNDLE_FORMAT_VERSION);
  }
  const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
  if (meta && (st = decode_metadata(d, meta)) != XR_OK) return st;
  return decode_ops(d, ops, 0);
}

xr_status_t xr_bundle_decode_json(const char *text, size_t size, const char *name,
                                  xr_bundle_t *bundle) {
  json_decoder_t d = {.text = text, .name = name, .bundle = bundle};
  char *blanked = NULL;
  xr_status_t st = scan_numbers(&d, text, size, &blanked);
  if (st != XR_OK) goto out;
  const char *parse_text = blanked ? blanked : text;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(parse_text, size, &end, 0);
  if (!root) {
    char where[64];
    const char *err = cJSON_GetErrorPtr();
    describe_position(parse_text, size, err ? err : end, where, sizeof where);
    st = size == 0 ? xr_error(XR_DATA_LOSS, "%s: empty file", name)
                   : xr_error(XR_DATA_LOSS,
                              "%s: not valid JSON (or nested too deeply) near %s", name, where);
    goto out;
  }
  size_t next = 0;
  if (!bind_tokens(root, &next, d.token_count) || next != d.token_count) {
    st = xr_error(XR_INTERNAL, "%s: JSON number scan disagrees with the parser (%zu vs %zu)", name,
                  next, d.token_count);
  } else {
    st = decode_root(&d, root);
  }
  cJSON_Delete(root);
out:
  free(blanked);
  free(d.tokens);
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* encoder                                                                                     */

typedef struct json_writer {
  xr_buf_t out;
  bool pretty;
  bool tracelens;
  int depth;
  xr_status_t status;
} json_writer_t;

static void newline(json_writer_t *w) {
  if (!w->pretty) return;
  xr_buf_reserve(&w->out, (size_t)w->depth * 2 + 1);
  xr_buf_append(&w->out, "\n", 1);
  for (int i = 0; i < w->depth; i++) xr_buf_append(&w->out, "  ", 2);
}

static void put_string(json_writer_t *w, const char *s) {
  xr_buf_t *o = &w->out;
  xr_buf_append(o, "\"", 1);
  const char *run = s;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    xr_buf_append(o, run, (size_t)(s - run));
    switch (c) {
      case '"': xr_buf_puts(o, "\\\""); break;
      case '\\': xr_buf_puts(o, "\\\\"); break;
      case '\n': xr_buf_puts(o, "\\n"); break;
      case '\t': xr_buf_puts(o, "\\t"); break;
      case '\r': xr_buf_puts(o, "\\r"); break;
      default: xr_buf_printf(o, "\\u%04x", c);
    }
    run = s + 1;
  }
  xr_buf_append(o, run, (size_t)(s - run));
  xr_buf_append(o, "\"", 1);
}

/* Shortest text that reads back as the same double, always marked as a float ("1.0"). */
static void put_double(json_writer_t *w, double v) {
  if (isnan(v)) {
    xr_buf_puts(&w->out, "NaN");
    return;
  }
  if (isinf(v)) {
    xr_buf_puts(&w->out, v > 0 ? "Infinity" : "-Infinity");
    return;
  }
  char text[40];
  for (int precision = 15; precision <= 17; precision++) {
    snprintf(text, sizeof text, "%.*g", precision, v);
    if (strtod(text, NULL) == v) break;
  }
  if (!strpbrk(text, ".eE")) strcat(text, ".0");
  xr_buf_puts(&w->out, text);
}

static void key(json_writer_t *w, const char *k, int *first) {
  if (!*first) xr_buf_append(&w->out, ",", 1);
  *first = 0;
  newline(w);
  put_string(w, k);
  xr_buf_puts(&w->out, w->pretty ? ": " : ":");
}

static void open_block(json_writer_t *w, char c) {
  xr_buf_append(&w->out, &c, 1);
  w->depth++;
}

static void close_block(json_writer_t *w, char c, int empty) {
  w->depth--;
  if (!empty) newline(w);
  xr_buf_append(&w->out, &c, 1);
}

static void put_dims(json_writer_t *w, const int64_t *dims, int32_t rank) {
  xr_buf_append(&w->out, "[", 1);
  for (int32_t i = 0; i < rank; i++)
    xr_buf_printf(&w->out, i ? (w->pretty ? ", %lld" : ",%lld") : "%lld", (long long)dims[i]);
  xr_buf_append(&w->out, "]", 1);
}

static void put_value(json_writer_t *w, const xr_value_t *v);

static void put_tensor(json_writer_t *w, const xr_tensor_spec_t *t) {
  int first = 1;
  open_block(w, '{');
  key(w, "shape", &first);
  put_dims(w, t->shape, t->rank);
  key(w, "strides", &first);
  put_dims(w, t->strides, t->rank);
  if (t->storage_offset) {
    key(w, "storage_offset", &first);
    xr_buf_printf(&w->out, "%lld", (long long)t->storage_offset);
  }
  if (t->storage_size >= 0) {
    key(w, "storage_size", &first);
    xr_buf_printf(&w->out, "%lld", (long long)t->storage_size);
  }
  key(w, "dtype", &first);
  put_string(w, xr_dtype_name(t->dtype));
  if (t->init != XR_INIT_UNSET) {
    key(w, "init", &first);
    if (t->init == XR_INIT_NONE) xr_buf_puts(&w->out, "null");
    else put_string(w, xr_init_name(t->init));
  }
  if (t->data_file) {
    key(w, "data", &first);
    put_string(w, t->data_file);
  }
  if (t->data) {
    if (w->tracelens) {
      w->status = xr_error(XR_UNIMPLEMENTED,
                           "TraceLens IR cannot hold embedded tensor contents; convert with "
                           "--strip-data, or write .msgpack or our .json instead");
    } else {
      key(w, "data_base64", &first);
      xr_buf_append(&w->out, "\"", 1);
      xr_base64_encode(&w->out, t->data, t->data_size);
      xr_buf_append(&w->out, "\"", 1);
    }
  }
  close_block(w, '}', 0);
}

static bool is_scalar_list(const xr_value_t *v) {
  for (size_t i = 0; i < v->as.list.count; i++)
    if (v->as.list.items[i].kind == XR_VALUE_LIST || v->as.list.items[i].kind == XR_VALUE_TENSOR)
      return false;
  return true;
}

static void put_value(json_writer_t *w, const xr_value_t *v) {
  switch (v->kind) {
    case XR_VALUE_NULL: xr_buf_puts(&w->out, "null"); break;
    case XR_VALUE_BOOL: xr_buf_puts(&w->out, v->as.b ? "true" : "false"); break;
    case XR_VALUE_INT: xr_buf_printf(&w->out, "%lld", (long long)v->as.i); break;
    case XR_VALUE_FLOAT: put_double(w, v->as.f); break;
    case XR_VALUE_STRING: put_string(w, v->as.s); break;
    case XR_VALUE_TENSOR: put_tensor(w, v->as.tensor); break;
    case XR_VALUE_LIST: {
      /* Lists of scalars stay on one line; lists of tensors get one line each. */
      bool inline_list = is_scalar_list(v);
      open_block(w, '[');
      for (size_t i = 0; i < v->as.list.count; i++) {
        if (i) xr_buf_puts(&w->out, inline_list && w->pretty ? ", " : ",");
        if (!inline_list) newline(w);
        put_value(w, &v->as.list.items[i]);
      }
      w->depth--;
      if (!inline_list && v->as.list.count) newline(w);
      xr_buf_append(&w->out, "]", 1);
      break;
    }
  }
}

static void put_args(json_writer_t *w, const xr_arg_t *args, size_t n) {
  const char *name_key = w->tracelens ? "arg_name" : "name";
  const char *type_key = w->tracelens ? "arg_type" : "type";
  open_block(w, '[');
  for (size_t i = 0; i < n; i++) {
    if (i) xr_buf_append(&w->out, ",", 1);
    newline(w);
    int first = 1;
    open_block(w, '{');
    if (args[i].name || w->tracelens) {
      key(w, name_key, &first);
      if (args[i].name) put_string(w, args[i].name);
      else xr_buf_puts(&w->out, "null");
    }
    if (args[i].type || w->tracelens) {
      key(w, type_key, &first);
      if (args[i].type) put_string(w, args[i].type);
      else xr_buf_puts(&w->out, "null");
    }
    key(w, "value", &first);
    put_value(w, &args[i].value);
    if (args[i].defaulted && !w->tracelens) {
      key(w, "defaulted", &first);
      xr_buf_puts(&w->out, "true");
    }
    close_block(w, '}', 0);
  }
  close_block(w, ']', n == 0);
}

static void put_named_values(json_writer_t *w, const xr_arg_t *values, size_t n, int *first) {
  for (size_t i = 0; i < n; i++) {
    key(w, values[i].name, first);
    put_value(w, &values[i].value);
  }
}

static void put_op(json_writer_t *w, const xr_op_t *op) {
  int first = 1;
  open_block(w, '{');
  if (w->tracelens) {
    key(w, "op_name", &first);
    put_string(w, op->name);
    key(w, "replay_ir", &first);
    int inner = 1;
    open_block(w, '{');
    key(w, "list_pos_args", &inner);
    put_args(w, op->args, op->arg_count);
    key(w, "list_kwargs", &inner);
    put_args(w, op->kwargs, op->kwarg_count);
    close_block(w, '}', 0);
    if (op->count) {
      key(w, "count", &first);
      xr_buf_printf(&w->out, "%lld", (long long)op->count);
    }
    close_block(w, '}', 0);
    return;
  }
  key(w, "name", &first);
  put_string(w, op->name);
  if (op->alias) {
    key(w, "alias", &first);
    put_string(w, op->alias);
  }
  key(w, "args", &first);
  put_args(w, op->args, op->arg_count);
  key(w, "kwargs", &first);
  put_args(w, op->kwargs, op->kwarg_count);
  if (op->count) {
    key(w, "count", &first);
    xr_buf_printf(&w->out, "%lld", (long long)op->count);
  }
  if (op->timing) {
    const xr_op_timing_t *t = op->timing;
    key(w, "timing", &first);
    int tf = 1;
    open_block(w, '{');
    if (t->gpu_time_us >= 0) {
      key(w, "gpu_time_us", &tf);
      put_double(w, t->gpu_time_us);
    }
    if (t->device) {
      key(w, "device", &tf);
      put_string(w, t->device);
    }
    if (t->graph_capture) {
      key(w, "graph_capture", &tf);
      put_string(w, t->graph_capture);
    }
    if (t->graph_batch_size) {
      key(w, "graph_batch_size", &tf);
      xr_buf_printf(&w->out, "%lld", (long long)t->graph_batch_size);
    }
    key(w, "kernels", &tf);
    open_block(w, '[');
    for (size_t k = 0; k < t->kernel_count; k++) {
      if (k) xr_buf_append(&w->out, ",", 1);
      newline(w);
      int kf = 1;
      open_block(w, '{');
      key(w, "name", &kf);
      if (t->kernels[k].name) put_string(w, t->kernels[k].name);
      else xr_buf_puts(&w->out, "null");
      key(w, "duration_us", &kf);
      put_double(w, t->kernels[k].duration_us);
      key(w, "count", &kf);
      xr_buf_printf(&w->out, "%lld", (long long)t->kernels[k].count);
      close_block(w, '}', 0);
    }
    close_block(w, ']', t->kernel_count == 0);
    close_block(w, '}', 0);
  }
  if (op->hint_count) {
    key(w, "hints", &first);
    int hf = 1;
    open_block(w, '{');
    put_named_values(w, op->hints, op->hint_count, &hf);
    close_block(w, '}', 0);
  }
  close_block(w, '}', 0);
}

/* What put_op and xr_bundle_encode_json leave out with `tracelens`: keep the two together. */
size_t xr_bundle_tracelens_losses(const xr_bundle_t *bundle,
                                  void (*note)(void *context, const char *phrase), void *context) {
  char phrase[1024];
  size_t kinds = 0;
  const xr_bundle_metadata_t *m = &bundle->meta;
  for (size_t i = 0; xr_metadata_fields[i]; i++) {
    const char *value = xr_metadata_value(m, i);
    if (!value) continue;
    snprintf(phrase, sizeof phrase, "metadata.%s: %s", xr_metadata_fields[i], value);
    note(context, phrase);
    kinds++;
  }
  if (m->extra_count) {
    size_t at = (size_t)snprintf(phrase, sizeof phrase, "metadata:");
    for (size_t i = 0; i < m->extra_count && at < sizeof phrase; i++)
      at += (size_t)snprintf(phrase + at, sizeof phrase - at, "%s %s", i ? "," : "",
                             m->extra[i].name);
    note(context, phrase);
    kinds++;
  }
  size_t timed = 0, kernels = 0, with_kernels = 0, devices = 0, graphs = 0, aliases = 0,
         hinted = 0, defaulted = 0;
  for (size_t i = 0; i < bundle->op_count; i++) {
    const xr_op_t *op = &bundle->ops[i];
    const xr_op_timing_t *t = op->timing;
    if (t && t->gpu_time_us >= 0) timed++;
    if (t && t->kernel_count) kernels += t->kernel_count, with_kernels++;
    if (t && t->device) devices++;
    if (t && (t->graph_capture || t->graph_batch_size)) graphs++;
    if (op->alias) aliases++;
    if (op->hint_count) hinted++;
    for (size_t k = 0; k < op->arg_count; k++) defaulted += op->args[k].defaulted;
    for (size_t k = 0; k < op->kwarg_count; k++) defaulted += op->kwargs[k].defaulted;
  }
  struct {
    size_t n;
    const char *text;
  } per_op[] = {
      {timed, "timing.gpu_time_us of %zu op%s: the GPU time the trace recorded (a replay's "
              "trace_us and its replay / trace ratios)"},
      {devices, "timing.device of %zu op%s: the device the trace ran on"},
      {graphs, "timing.graph_capture and graph_batch_size of %zu op%s: the CUDA/HIP graph "
               "capture they were measured in"},
      {aliases, "alias of %zu op%s: the name the source recorded"},
      {hinted, "hints of %zu op%s: what their initializers follow (prefill and decode split)"},
      {defaulted, "defaulted of %zu argument%s: filled from the schema's default, not recorded"},
  };
  for (size_t k = 0; k < sizeof per_op / sizeof per_op[0]; k++) {
    if (!per_op[k].n) continue;
    snprintf(phrase, sizeof phrase, per_op[k].text, per_op[k].n, per_op[k].n == 1 ? "" : "s");
    note(context, phrase);
    kinds++;
  }
  if (kernels) {
    snprintf(phrase, sizeof phrase,
             "timing.kernels of %zu op%s: the %zu kernel%s the trace recorded for them",
             with_kernels, with_kernels == 1 ? "" : "s", kernels, kernels == 1 ? "" : "s");
    note(context, phrase);
    kinds++;
  }
  return kinds;
}

xr_status_t xr_bundle_encode_json(const xr_bundle_t *bundle, const xr_json_options_t *options,
                                  char **out_text, size_t *out_size) {
  json_writer_t w = {.pretty = options ? options->pretty : true,
                     .tracelens = options ? options->tracelens : false,
                     .status = XR_OK};
  if (w.tracelens) {
    open_block(&w, '[');
  } else {
    int first = 1;
    open_block(&w, '{');
    key(&w, "format", &first);
    put_string(&w, "xreplay-bundle");
    key(&w, "format_version", &first);
    xr_buf_printf(&w.out, "%lld", (long long)bundle->meta.format_version);
    key(&w, "metadata", &first);
    const xr_bundle_metadata_t *m = &bundle->meta;
    int mf = 1;
    open_block(&w, '{');
    for (size_t i = 0; xr_metadata_fields[i]; i++) {
      const char *value = xr_metadata_value(m, i);
      if (!value) continue;
      key(&w, xr_metadata_fields[i], &mf);
      put_string(&w, value);
    }
    put_named_values(&w, m->extra, m->extra_count, &mf);
    close_block(&w, '}', mf);
    key(&w, "ops", &first);
    open_block(&w, '[');
  }
  for (size_t i = 0; i < bundle->op_count && w.status == XR_OK; i++) {
    if (i) xr_buf_append(&w.out, ",", 1);
    newline(&w);
    put_op(&w, &bundle->ops[i]);
  }
  close_block(&w, ']', bundle->op_count == 0);
  if (!w.tracelens) close_block(&w, '}', 0);
  xr_buf_append(&w.out, "\n", 1);
  if (w.status == XR_OK && w.out.failed)
    w.status = xr_error(XR_RESOURCE_EXHAUSTED, "out of memory writing JSON");
  if (w.status != XR_OK) {
    free(w.out.data);
    return w.status;
  }
  *out_text = w.out.data;
  *out_size = w.out.len;
  return XR_OK;
}
