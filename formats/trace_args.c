/* Trace extraction, stage 3: arguments. Re-reads a group's argument text ({"d": Input Dims,
 * "t": Input type, "s": Input Strides, "c": Concrete Inputs}) into a small DOM, checks it, names
 * and types the arguments with the first schema that fits (trace_schema.c) and builds their
 * values: tensors, lists of tensors, scalars parsed from the profiler's text, and the strings the
 * profiler dropped, from defaults. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/trace_extract_internal.h"
#include "formats/trace_json.h"
#include "formats/trace_schema.h"

/* ------------------------------------------------------------------------------------------ */
/* argument texts                                                                              */

void xr_extract_dom_free(jnode_t *n) {
  for (size_t i = 0; i < n->n; i++) xr_extract_dom_free(&n->items[i]);
  free(n->items);
  free(n->text);
  free(n->key);
  memset(n, 0, sizeof *n);
}

static xr_status_t dom_parse(xr_jreader_t *r, xr_jtok_t t, jnode_t *out) {
  memset(out, 0, sizeof *out);
  out->kind = t;
  if (t == XR_JTOK_STRING || t == XR_JTOK_NUMBER) {
    out->text = strdup(xr_jreader_text(r, NULL));
    return out->text ? XR_OK : XR_RESOURCE_EXHAUSTED;
  }
  if (t != XR_JTOK_OBJECT_BEGIN && t != XR_JTOK_ARRAY_BEGIN) return XR_OK;
  size_t cap = 0;
  for (;;) {
    xr_jtok_t u;
    xr_status_t st = xr_jreader_next(r, &u);
    if (st != XR_OK) return st;
    if (u == XR_JTOK_OBJECT_END || u == XR_JTOK_ARRAY_END) return XR_OK;
    char *key = NULL;
    if (u == XR_JTOK_KEY) {
      key = strdup(xr_jreader_text(r, NULL));
      if (!key || (st = xr_jreader_next(r, &u)) != XR_OK) {
        free(key);
        return st != XR_OK ? st : XR_RESOURCE_EXHAUSTED;
      }
    }
    if (!xr_extract_reserve((void **)&out->items, &cap, out->n, sizeof *out->items)) {
      free(key);
      return XR_RESOURCE_EXHAUSTED;
    }
    jnode_t *item = &out->items[out->n++];
    st = dom_parse(r, u, item);
    item->key = key;
    if (st != XR_OK) return st;
  }
}

const jnode_t *xr_extract_dom_get(const jnode_t *obj, const char *key) {
  for (size_t i = 0; i < obj->n; i++)
    if (obj->items[i].key && strcmp(obj->items[i].key, key) == 0) return &obj->items[i];
  return NULL;
}

xr_status_t xr_extract_args_parse(ctx_t *c, const group_t *g, jnode_t *out_root) {
  xr_jreader_t *r = NULL;
  xr_jtok_t t;
  memset(out_root, 0, sizeof *out_root);
  xr_status_t st =
      xr_jreader_open_memory(c->strs.strs[g->args], c->strs.lens[g->args], c->name, &r);
  if (st == XR_OK && (st = xr_jreader_next(r, &t)) == XR_OK) st = dom_parse(r, t, out_root);
  xr_jreader_close(r);
  if (st == XR_OK) return XR_OK;
  xr_extract_dom_free(out_root);
  if (st == XR_RESOURCE_EXHAUSTED) return st;
  return xr_error(XR_INTERNAL, "%s: %s: re-reading argument text failed: %s", c->name,
                  c->strs.strs[g->name], xr_last_error());
}

static bool is_array(const jnode_t *n) { return n && n->kind == XR_JTOK_ARRAY_BEGIN; }

/* K_OBJECT: a script object (a c10d ProcessGroup, ReduceOp or Work), recorded without a value. */
typedef enum kind { K_NONE, K_SCALAR, K_SCALARLIST, K_TENSOR, K_TENSORLIST, K_OBJECT } kind_t;

static kind_t classify_type(const char *type) {
  if (!type || !*type) return K_NONE;
  if (strcmp(type, "Scalar") == 0) return K_SCALAR;
  if (strcmp(type, "ScriptObject") == 0 || strcmp(type, "Object") == 0 ||
      strncmp(type, "__torch__.", 10) == 0)
    return K_OBJECT;
  if (strcmp(type, "TensorList") == 0) return K_TENSORLIST;
  size_t n = strlen(type);
  if (n >= 4 && strcmp(type + n - 4, "List") == 0) return K_SCALARLIST;
  return K_TENSOR;
}

/* The recorded arguments, checked: equal-length arrays, integer dims, known dtypes. */
typedef struct recorded {
  size_t n;
  const jnode_t *d, *t, *s, *c;
} recorded_t;

static bool int_array(const jnode_t *a, bool allow_negative) {
  if (!is_array(a)) return false;
  for (size_t i = 0; i < a->n; i++) {
    if (a->items[i].kind != XR_JTOK_NUMBER) return false;
    char *end;
    long long v = strtoll(a->items[i].text, &end, 10);
    if (*end != '\0' || (!allow_negative && v < 0)) return false;
  }
  return true;
}

/* Whether the tensor a recorded shape and strides (contiguous when absent) describe has element
 * and byte counts that fit 64 bits, as the bundle's validator requires. */
static bool geometry_fits(const jnode_t *dims, const jnode_t *strides, xr_dtype_t dtype) {
  int64_t shape[XR_MAX_RANK], st[XR_MAX_RANK];
  xr_tensor_spec_t t = {.rank = (int32_t)dims->n, .shape = shape, .strides = st,
                        .storage_size = -1, .dtype = dtype};
  for (size_t i = 0; i < dims->n; i++) shape[i] = strtoll(dims->items[i].text, NULL, 10);
  if (int_array(strides, false) && strides->n == dims->n)
    for (size_t i = 0; i < dims->n; i++) st[i] = strtoll(strides->items[i].text, NULL, 10);
  else
    xr_tensor_set_contiguous(&t);
  size_t bytes;
  return xr_tensor_storage_bytes(&t, &bytes) == XR_OK;
}

static bool check_recorded(const jnode_t *root, recorded_t *rec, char *why, size_t why_size) {
  rec->d = xr_extract_dom_get(root, "d");
  rec->t = xr_extract_dom_get(root, "t");
  rec->s = xr_extract_dom_get(root, "s");
  rec->c = xr_extract_dom_get(root, "c");
  if (!is_array(rec->d) || !is_array(rec->t)) {
    snprintf(why, why_size, "\"Input Dims\" or \"Input type\" is not an array");
    return false;
  }
  rec->n = rec->t->n;
  if (rec->d->n != rec->n || (rec->s && (!is_array(rec->s) || rec->s->n != rec->n)) ||
      (rec->c && (!is_array(rec->c) || rec->c->n != rec->n))) {
    snprintf(why, why_size,
             "argument arrays of unequal length (Input Dims %zu, Input type %zu, Input Strides "
             "%zu, Concrete Inputs %zu)",
             rec->d->n, rec->n, rec->s && is_array(rec->s) ? rec->s->n : rec->n,
             rec->c && is_array(rec->c) ? rec->c->n : rec->n);
    return false;
  }
  for (size_t i = 0; i < rec->n; i++) {
    const jnode_t *ty = &rec->t->items[i];
    if (ty->kind != XR_JTOK_STRING) {
      snprintf(why, why_size, "Input type[%zu] is not a string", i);
      return false;
    }
    kind_t k = classify_type(ty->text);
    const jnode_t *dims = &rec->d->items[i];
    if (k == K_TENSOR) {
      if (xr_dtype_parse(ty->text) == XR_DTYPE_INVALID) {
        snprintf(why, why_size, "Input type[%zu]: unknown dtype \"%s\"", i, ty->text);
        return false;
      }
      if (!int_array(dims, false)) {
        snprintf(why, why_size, "Input Dims[%zu] is not a list of non-negative integers", i);
        return false;
      }
      if (dims->n > XR_MAX_RANK) {
        snprintf(why, why_size, "Input Dims[%zu]: rank %zu above %d", i, dims->n, XR_MAX_RANK);
        return false;
      }
      const jnode_t *strides = rec->s ? &rec->s->items[i] : NULL;
      if (!geometry_fits(dims, strides, xr_dtype_parse(ty->text))) {
        snprintf(why, why_size, "Input Dims[%zu]: the tensor's size overflows 64 bits", i);
        return false;
      }
    } else if (k == K_TENSORLIST) {
      if (!is_array(dims)) {
        snprintf(why, why_size, "Input Dims[%zu] is not a list of shapes", i);
        return false;
      }
      for (size_t j = 0; j < dims->n; j++) {
        if (!int_array(&dims->items[j], false) || dims->items[j].n > XR_MAX_RANK) {
          snprintf(why, why_size, "Input Dims[%zu][%zu] is not a shape", i, j);
          return false;
        }
        /* the element dtype is decided later: checked at the widest */
        const jnode_t *ls = rec->s ? &rec->s->items[i] : NULL;
        const jnode_t *sj = is_array(ls) && ls->n == dims->n ? &ls->items[j] : NULL;
        if (!geometry_fits(&dims->items[j], sj, XR_DTYPE_F64)) {
          snprintf(why, why_size, "Input Dims[%zu][%zu]: the tensor's size overflows 64 bits", i,
                   j);
          return false;
        }
      }
    }
  }
  return true;
}

static kind_t recorded_kind(const recorded_t *rec, size_t i) {
  return classify_type(rec->t->items[i].text);
}

static const char *concrete_text(const recorded_t *rec, size_t i) {
  if (!rec->c) return NULL;
  const jnode_t *n = &rec->c->items[i];
  if (n->kind == XR_JTOK_STRING || n->kind == XR_JTOK_NUMBER) return n->text;
  if (n->kind == XR_JTOK_TRUE) return "True";
  if (n->kind == XR_JTOK_FALSE) return "False";
  return "";
}

static bool compatible(const xr_schema_arg_t *a, kind_t k) {
  switch (k) {
    case K_TENSOR: return a->is_tensor;
    case K_TENSORLIST: return a->is_tensor_list;
    case K_SCALARLIST: return a->is_list && !a->is_tensor_list;
    case K_SCALAR: return !a->is_tensor && !a->is_tensor_list;
    case K_NONE: return !a->is_tensor || a->is_optional;
    case K_OBJECT: return !a->is_tensor && !a->is_tensor_list;
  }
  return false;
}

static const xr_schema_t *match_schema(const xr_schema_t *schemas, size_t count,
                                       const char *name, const recorded_t *rec) {
  for (size_t s = 0; s < count; s++) {
    const xr_schema_t *sc = &schemas[s];
    if (strcmp(sc->op, name) != 0 || rec->n > sc->arg_count) continue;
    bool ok = true;
    for (size_t i = 0; ok && i < sc->arg_count; i++) {
      if (i < rec->n) ok = compatible(&sc->args[i], recorded_kind(rec, i));
      else ok = sc->args[i].has_default; /* an older op version without trailing args */
    }
    if (ok) return sc;
  }
  return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* values                                                                                      */

void xr_extract_trim(const char **s, size_t *n) {
  while (*n && isspace((unsigned char)**s)) (*s)++, (*n)--;
  while (*n && isspace((unsigned char)(*s)[*n - 1])) (*n)--;
}

/* The profiler's text forms: "1", "0.5", "0.", "True", "None", "[1, 2]", "'none'", "cuda:0". */
static xr_status_t parse_text_value(xr_bundle_t *b, xr_value_t *v, const char *s, size_t n,
                                    const xr_schema_arg_t *a, int depth) {
  xr_extract_trim(&s, &n);
  if (depth > 8) return xr_error(XR_INVALID_ARGUMENT, "list nested too deeply");
  if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
    size_t count = 0, start = 1;
    int nest = 0;
    const char *inner = s + 1;
    size_t inner_n = n - 2;
    xr_extract_trim(&inner, &inner_n);
    if (inner_n > 0) {
      count = 1;
      for (size_t i = 1; i + 1 < n; i++) {
        if (s[i] == '[') nest++;
        else if (s[i] == ']') nest--;
        else if (s[i] == ',' && nest == 0) count++;
      }
    }
    xr_status_t st = xr_value_make_list(b->arena, v, count);
    if (st != XR_OK) return st;
    size_t idx = 0;
    nest = 0;
    for (size_t i = 1; count && i < n; i++) {
      if (s[i] == '[') nest++;
      else if (s[i] == ']' && i + 1 < n) nest--;
      if ((s[i] == ',' && nest == 0) || i + 1 == n) {
        st = parse_text_value(b, &v->as.list.items[idx++], s + start, i - start, a, depth + 1);
        if (st != XR_OK) return st;
        start = i + 1;
      }
    }
    return XR_OK;
  }
  if (n >= 2 && (s[0] == '\'' || s[0] == '"') && s[n - 1] == s[0]) {
    char *str = xr_arena_strndup(b->arena, s + 1, n - 2);
    if (!str) return XR_RESOURCE_EXHAUSTED;
    v->kind = XR_VALUE_STRING;
    v->as.s = str;
    return XR_OK;
  }
  char buf[64];
  if (n < sizeof buf) {
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (strcmp(buf, "True") == 0 || strcmp(buf, "False") == 0) {
      v->kind = XR_VALUE_BOOL;
      v->as.b = buf[0] == 'T';
      return XR_OK;
    }
    if (strcmp(buf, "None") == 0) {
      v->kind = XR_VALUE_NULL;
      return XR_OK;
    }
    char *end;
    errno = 0;
    long long i = strtoll(buf, &end, 10);
    if (n && *end == '\0' && errno == 0) {
      if (a && a->is_float) {
        v->kind = XR_VALUE_FLOAT;
        v->as.f = (double)i;
      } else if (a && a->is_bool && (i == 0 || i == 1)) {
        v->kind = XR_VALUE_BOOL;
        v->as.b = i == 1;
      } else {
        v->kind = XR_VALUE_INT;
        v->as.i = i;
      }
      return XR_OK;
    }
    double d = strtod(buf, &end);
    if (n && *end == '\0') {
      if (a && a->is_int && d == floor(d) && fabs(d) < 9e18) {
        v->kind = XR_VALUE_INT;
        v->as.i = (int64_t)d;
      } else {
        v->kind = XR_VALUE_FLOAT;
        v->as.f = d;
      }
      return XR_OK;
    }
  }
  char *str = xr_arena_strndup(b->arena, s, n);
  if (!str) return XR_RESOURCE_EXHAUSTED;
  v->kind = XR_VALUE_STRING;
  v->as.s = str;
  return XR_OK;
}

static xr_status_t make_tensor(xr_bundle_t *b, xr_value_t *v, const jnode_t *dims,
                               const jnode_t *strides, xr_dtype_t dtype, xr_init_t init) {
  xr_status_t st = xr_value_make_tensor(b->arena, v, (int32_t)dims->n);
  if (st != XR_OK) return st;
  xr_tensor_spec_t *t = v->as.tensor;
  for (size_t i = 0; i < dims->n; i++) t->shape[i] = strtoll(dims->items[i].text, NULL, 10);
  t->dtype = dtype;
  t->init = init;
  if (int_array(strides, false) && strides->n == dims->n) {
    for (size_t i = 0; i < dims->n; i++) t->strides[i] = strtoll(strides->items[i].text, NULL, 10);
  } else {
    xr_tensor_set_contiguous(t);
  }
  return XR_OK;
}

/* The kv_cache_dtype an op's cache tensor implies, for traces whose profiler dropped the string:
 * vLLM keeps fp8 caches as uint8 (or, in newer versions, fp8) tensors, so such a key_cache,
 * value_cache or kv_cache means "fp8" (e4m3; "fp8_e5m2" for an e5m2 tensor). NULL when the op
 * has no recorded cache tensor or it holds another dtype (then the usual fallback applies).
 * *out_cache and *out_type name the tensor and its recorded type. */
static const char *kv_cache_dtype_of(const recorded_t *rec, const xr_schema_t *sc,
                                     const char **out_cache, const char **out_type) {
  static const char *const caches[] = {"key_cache", "value_cache", "kv_cache"};
  for (size_t j = 0; sc && j < rec->n && j < sc->arg_count; j++)
    for (size_t k = 0; k < sizeof caches / sizeof caches[0]; k++) {
      if (strcmp(sc->args[j].name, caches[k]) != 0 || recorded_kind(rec, j) != K_TENSOR) continue;
      xr_dtype_t d = xr_dtype_parse(rec->t->items[j].text);
      if (d != XR_DTYPE_U8 && !xr_dtype_is_fp8(d)) return NULL;
      *out_cache = caches[k], *out_type = rec->t->items[j].text;
      return d == XR_DTYPE_F8E5M2 || d == XR_DTYPE_F8E5M2FNUZ ? "fp8_e5m2" : "fp8";
    }
  return NULL;
}

static xr_status_t build_value(build_t *B, const recorded_t *rec, size_t i,
                               const xr_schema_t *sc, xr_arg_t *arg) {
  const xr_schema_arg_t *a = sc ? &sc->args[i] : NULL;
  xr_bundle_t *b = B->b;
  if (i >= rec->n) { /* trailing argument the recorded op version did not have */
    arg->defaulted = true;
    return parse_text_value(b, &arg->value, a->default_text, strlen(a->default_text), a, 0);
  }
  const char *type = rec->t->items[i].text;
  const jnode_t *dims = &rec->d->items[i];
  const jnode_t *strides = rec->s ? &rec->s->items[i] : NULL;
  kind_t k = classify_type(type);
  xr_init_t init = sc && xr_schema_arg_is_pure_output(sc, i) ? XR_INIT_NONE : XR_INIT_UNSET;
  if (k == K_TENSOR) return make_tensor(b, &arg->value, dims, strides, xr_dtype_parse(type), init);
  if (k == K_TENSORLIST) {
    /* The profiler records shapes but not the dtype of list elements: borrow the op's first
     * tensor dtype, else float, and say so. */
    xr_dtype_t dtype = XR_DTYPE_INVALID;
    for (size_t j = 0; j < rec->n && dtype == XR_DTYPE_INVALID; j++)
      if (recorded_kind(rec, j) == K_TENSOR) dtype = xr_dtype_parse(rec->t->items[j].text);
    if (dtype == XR_DTYPE_INVALID) dtype = XR_DTYPE_F32;
    xr_extract_warn(B->c,
                    "%s: dtype of Tensor[] elements not recorded by the profiler; assuming %s",
                    B->op_name, xr_dtype_name(dtype));
    arg->defaulted = true;
    xr_status_t st = xr_value_make_list(b->arena, &arg->value, dims->n);
    for (size_t j = 0; st == XR_OK && j < dims->n; j++) {
      const jnode_t *sj = is_array(strides) && strides->n == dims->n ? &strides->items[j] : NULL;
      st = make_tensor(b, &arg->value.as.list.items[j], &dims->items[j], sj, dtype, init);
    }
    return st;
  }
  if (k == K_OBJECT) return XR_OK; /* None: a process group or reduce op has no value to replay */
  const char *text = concrete_text(rec, i);
  if (text && *text) return parse_text_value(b, &arg->value, text, strlen(text), a, 0);
  /* Nothing recorded: None, a dropped string, or an old trace without Concrete Inputs. */
  if (a && a->is_string) {
    const char *fallback = NULL;
    char dflt[64];
    if (a->has_default && strcmp(a->default_text, "None") != 0) {
      size_t n = strlen(a->default_text);
      const char *d = a->default_text;
      if (n >= 2 && (d[0] == '\'' || d[0] == '"')) d++, n -= 2;
      snprintf(dflt, sizeof dflt, "%.*s", (int)n, d);
      fallback = dflt;
    } else {
      fallback = xr_schema_string_fallback(a->name);
    }
    const char *cache = NULL, *cache_type = NULL, *from_cache = NULL;
    if (strcmp(a->name, "kv_cache_dtype") == 0 &&
        (from_cache = kv_cache_dtype_of(rec, sc, &cache, &cache_type)) != NULL)
      fallback = from_cache;
    if (!fallback && a->is_optional) return XR_OK; /* None */
    if (!fallback) fallback = "";
    arg->defaulted = true;
    B->c->sum.defaulted_args++;
    if (from_cache)
      xr_extract_warn(
          B->c, "%s: string argument '%s' not recorded by the profiler; using '%s' (%s is %s)",
          B->op_name, a->name, fallback, cache, cache_type);
    else
      xr_extract_warn(B->c, "%s: string argument '%s' not recorded by the profiler; using '%s'",
                      B->op_name, a->name, fallback);
    return xr_value_make_string(b->arena, &arg->value, fallback);
  }
  if (!rec->c && a && a->has_default) {
    arg->defaulted = true;
    return parse_text_value(b, &arg->value, a->default_text, strlen(a->default_text), a, 0);
  }
  return XR_OK; /* None */
}

static xr_status_t build_op(build_t *B, const group_t *g, const recorded_t *rec,
                            const xr_schema_t *sc, const char *alias, xr_op_t **out_op) {
  ctx_t *c = B->c;
  xr_bundle_t *b = B->b;
  xr_op_t *op = xr_bundle_append_op(b);
  if (!op) return XR_RESOURCE_EXHAUSTED;
  const char *recorded = c->strs.strs[g->name];
  op->name = xr_arena_strdup(b->arena, sc ? sc->op : recorded);
  if (alias) op->alias = xr_arena_strdup(b->arena, alias);
  if (!op->name || (alias && !op->alias)) return XR_RESOURCE_EXHAUSTED;
  B->op_name = op->name;
  size_t total = sc ? sc->arg_count : rec->n, nkw = 0;
  for (size_t i = 0; sc && i < total; i++) nkw += sc->args[i].kwarg_only;
  xr_status_t st = xr_op_alloc_args(b->arena, op, total - nkw, nkw);
  if (st != XR_OK) return st;
  size_t pi = 0, ki = 0;
  for (size_t i = 0; i < total; i++) {
    bool kw = sc && sc->args[i].kwarg_only;
    xr_arg_t *arg = kw ? &op->kwargs[ki++] : &op->args[pi++];
    if (sc) {
      arg->name = xr_arena_strdup(b->arena, sc->args[i].name);
      arg->type = xr_arena_strdup(b->arena, sc->args[i].type);
      if (!arg->name || !arg->type) return XR_RESOURCE_EXHAUSTED;
    } else if (rec->t->items[i].text[0]) {
      if (!(arg->type = xr_arena_strdup(b->arena, rec->t->items[i].text)))
        return XR_RESOURCE_EXHAUSTED;
    }
    if ((st = build_value(B, rec, i, sc, arg)) != XR_OK) return st;
  }
  *out_op = op;
  return XR_OK;
}

xr_status_t xr_extract_args_op(build_t *B, const group_t *g, const jnode_t *root,
                               xr_op_t **out_op) {
  ctx_t *c = B->c;
  const char *name = c->strs.strs[g->name];
  recorded_t rec;
  char why[256];
  *out_op = NULL;
  if (!check_recorded(root, &rec, why, sizeof why)) {
    xr_extract_warn(c, "%s: skipped: %s", name, why);
    c->sum.ops_bad_args++;
    return XR_OK;
  }
  const char *target = xr_schema_alias_target(name);
  const xr_schema_t *sc = target ? match_schema(B->schemas, B->schema_count, target, &rec) : NULL;
  const char *alias = sc ? name : NULL;
  if (!sc) sc = match_schema(B->schemas, B->schema_count, name, &rec);
  if (!rec.c) B->any_concrete_missing = true;
  return build_op(B, g, &rec, sc, alias, out_op);
}
