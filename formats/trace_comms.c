/* Trace extraction, stage 4: collectives. The fields Kineto records in a record_param_comms event
 * ("Collective name", "dtype", "In msg nelems", ...), checked and built into the op's kwargs,
 * and the group size the c10d ops do not record, from the trace's distributedInfo.world_size.
 * See docs/extract.md "Collectives". */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/trace_extract_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* collectives: record_param_comms                                                             */

const char *const xr_extract_comms_keys[CM_COUNT] = {
    "Collective name", "dtype",          "In msg nelems",
    "Out msg nelems",  "Group size",     "Rank",
    "In split size",   "Out split size", "Global rank stride",
};
const char xr_extract_comms_op_name[] = "record_param_comms";

/* c10::ScalarType names, as c10::toString writes them into a collective's "dtype" field. Other
 * spellings ("bfloat16", "float", "c10::Half") are xr_dtype_parse's. */
static const struct {
  const char *name;
  xr_dtype_t dtype;
} scalar_type_names[] = {
    {"Byte", XR_DTYPE_U8},
    {"Char", XR_DTYPE_I8},
    {"Short", XR_DTYPE_I16},
    {"Int", XR_DTYPE_I32},
    {"Long", XR_DTYPE_I64},
    {"Half", XR_DTYPE_F16},
    {"Float", XR_DTYPE_F32},
    {"Double", XR_DTYPE_F64},
    {"Bool", XR_DTYPE_BOOL},
    {"BFloat16", XR_DTYPE_BF16},
    {"Float8_e5m2", XR_DTYPE_F8E5M2},
    {"Float8_e4m3fn", XR_DTYPE_F8E4M3FN},
    {"Float8_e5m2fnuz", XR_DTYPE_F8E5M2FNUZ},
    {"Float8_e4m3fnuz", XR_DTYPE_F8E4M3FNUZ},
    {"UInt16", XR_DTYPE_U16},
    {"UInt32", XR_DTYPE_U32},
    {"UInt64", XR_DTYPE_U64},
    {"Float8_e8m0fnu", XR_DTYPE_F8E8M0},
    {"Float4_e2m1fn_x2", XR_DTYPE_F4E2M1X2},
};

static xr_dtype_t comms_dtype(const char *s) {
  for (size_t i = 0; i < sizeof scalar_type_names / sizeof scalar_type_names[0]; i++)
    if (strcmp(s, scalar_type_names[i].name) == 0) return scalar_type_names[i].dtype;
  return xr_dtype_parse(s);
}

/* A collective's fields, checked. Pointers into the parsed argument text. */
typedef struct comms {
  const char *collective; /* NULL when not recorded as a string */
  xr_dtype_t dtype;
  int64_t v[CM_COUNT];     /* the integer fields: nelems, group size, rank, stride (1 if absent) */
  const jnode_t *split[2]; /* "In split size", "Out split size" */
  size_t split_n[2];       /* their entries; 0 when empty */
} comms_t;

/* `s[0, n)` (spaces around allowed) as a decimal integer. */
static bool parse_int(const char *s, size_t n, long long *out) {
  xr_extract_trim(&s, &n);
  char buf[32];
  if (!n || n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  char *end;
  errno = 0;
  *out = strtoll(buf, &end, 10);
  return *end == '\0' && errno == 0 && !isspace((unsigned char)buf[0]);
}

/* An integer field: a JSON number or a numeric string, at least `min`. */
static bool comms_int(const jnode_t *m, int f, int64_t min, int64_t *out, char *why, size_t size) {
  const jnode_t *n = xr_extract_dom_get(m, xr_extract_comms_keys[f]);
  long long v;
  if (!n) {
    snprintf(why, size, "\"%s\" is missing", xr_extract_comms_keys[f]);
    return false;
  }
  if (n->kind != XR_JTOK_NUMBER && n->kind != XR_JTOK_STRING) {
    snprintf(why, size, "\"%s\" is not a number", xr_extract_comms_keys[f]);
    return false;
  }
  if (!parse_int(n->text, strlen(n->text), &v)) {
    snprintf(why, size, "\"%s\" is not an integer (\"%.40s\")", xr_extract_comms_keys[f], n->text);
    return false;
  }
  if (v < min) {
    if (v < 0 && min >= 0)
      snprintf(why, size, "\"%s\" is negative (%lld)", xr_extract_comms_keys[f], v);
    else
      snprintf(why, size, "\"%s\" is %lld, below %lld", xr_extract_comms_keys[f], v,
               (long long)min);
    return false;
  }
  *out = v;
  return true;
}

/* A split size list: "[]" or "[4, 4, 8]" as Kineto writes it (a string), or a JSON array.
 * Counts the entries and, with `out`, stores them. A missing field is an empty list. */
static bool comms_split(const jnode_t *m, int f, int64_t *out, size_t *count, char *why,
                        size_t size) {
  const jnode_t *n = xr_extract_dom_get(m, xr_extract_comms_keys[f]);
  *count = 0;
  if (!n) return true;
  if (n->kind == XR_JTOK_ARRAY_BEGIN) {
    for (size_t i = 0; i < n->n; i++) {
      const jnode_t *x = &n->items[i];
      long long v;
      if ((x->kind != XR_JTOK_NUMBER && x->kind != XR_JTOK_STRING) ||
          !parse_int(x->text, strlen(x->text), &v) || v < 0) {
        snprintf(why, size, "\"%s\"[%zu] is not a non-negative integer", xr_extract_comms_keys[f],
                 i);
        return false;
      }
      if (out) out[i] = v;
    }
    *count = n->n;
    return true;
  }
  const char *s = n->kind == XR_JTOK_STRING ? n->text : NULL;
  size_t len = s ? strlen(s) : 0;
  if (s) xr_extract_trim(&s, &len);
  if (!s || len < 2 || s[0] != '[' || s[len - 1] != ']') {
    snprintf(why, size, "\"%s\" is not a list (\"%.40s\")", xr_extract_comms_keys[f],
             s ? n->text : "");
    return false;
  }
  if (strstr(n->text, "...")) {
    snprintf(why, size,
             "\"%s\" was cut short by the profiler, which records 30 entries at most (\"%.40s\")",
             xr_extract_comms_keys[f], n->text);
    return false;
  }
  const char *p = s + 1, *stop = s + len - 1;
  size_t inner = (size_t)(stop - p);
  xr_extract_trim(&p, &inner);
  if (!inner) return true; /* "[]" */
  for (size_t i = 0;; i++) {
    const char *comma = memchr(p, ',', (size_t)(stop - p));
    const char *end = comma ? comma : stop;
    long long v;
    if (!parse_int(p, (size_t)(end - p), &v) || v < 0) {
      snprintf(why, size, "\"%s\" entry %zu is not a non-negative integer (\"%.40s\")",
               xr_extract_comms_keys[f], i, n->text);
      return false;
    }
    if (out) out[i] = v;
    *count = i + 1;
    if (!comma) return true;
    p = comma + 1;
  }
}

static bool check_comms(const jnode_t *m, comms_t *cm, char *why, size_t size) {
  memset(cm, 0, sizeof *cm);
  const jnode_t *n = xr_extract_dom_get(m, xr_extract_comms_keys[CM_COLLECTIVE]);
  if (n && n->kind == XR_JTOK_STRING && *n->text) cm->collective = n->text;
  if (!cm->collective) {
    snprintf(why, size, "\"%s\" is %s", xr_extract_comms_keys[CM_COLLECTIVE],
             !n                          ? "missing"
             : n->kind == XR_JTOK_STRING ? "empty"
                                         : "not a string");
    return false;
  }
  n = xr_extract_dom_get(m, xr_extract_comms_keys[CM_DTYPE]);
  if (!n || n->kind != XR_JTOK_STRING) {
    snprintf(why, size, "\"%s\" is %s", xr_extract_comms_keys[CM_DTYPE],
             !n ? "missing" : "not a string");
    return false;
  }
  if ((cm->dtype = comms_dtype(n->text)) == XR_DTYPE_INVALID) {
    snprintf(why, size, "\"%s\": unknown dtype \"%.40s\"", xr_extract_comms_keys[CM_DTYPE],
             n->text);
    return false;
  }
  if (!comms_int(m, CM_IN_NELEMS, 0, &cm->v[CM_IN_NELEMS], why, size) ||
      !comms_int(m, CM_OUT_NELEMS, 0, &cm->v[CM_OUT_NELEMS], why, size) ||
      !comms_int(m, CM_GROUP_SIZE, 1, &cm->v[CM_GROUP_SIZE], why, size) ||
      !comms_int(m, CM_RANK, 0, &cm->v[CM_RANK], why, size))
    return false;
  /* torch's: the ranks' distance in the world, -1 when not evenly spaced, 0 for one rank. */
  cm->v[CM_STRIDE] = 1;
  if (xr_extract_dom_get(m, xr_extract_comms_keys[CM_STRIDE]) &&
      !comms_int(m, CM_STRIDE, -1, &cm->v[CM_STRIDE], why, size))
    return false;
  if (cm->v[CM_RANK] >= cm->v[CM_GROUP_SIZE]) {
    snprintf(why, size, "\"%s\" %lld is not below \"%s\" %lld", xr_extract_comms_keys[CM_RANK],
             (long long)cm->v[CM_RANK], xr_extract_comms_keys[CM_GROUP_SIZE],
             (long long)cm->v[CM_GROUP_SIZE]);
    return false;
  }
  for (int i = 0; i < 2; i++) {
    int f = i ? CM_OUT_NELEMS : CM_IN_NELEMS;
    int64_t shape[1] = {cm->v[f]}, strides[1] = {1};
    xr_tensor_spec_t t = {
        .rank = 1, .shape = shape, .strides = strides, .storage_size = -1, .dtype = cm->dtype};
    size_t bytes;
    if (xr_tensor_storage_bytes(&t, &bytes) != XR_OK) {
      snprintf(why, size, "\"%s\": %lld elements of %s overflow 64-bit sizes",
               xr_extract_comms_keys[f], (long long)cm->v[f], xr_dtype_short_name(cm->dtype));
      return false;
    }
    f = i ? CM_OUT_SPLIT : CM_IN_SPLIT;
    if (!comms_split(m, f, NULL, &cm->split_n[i], why, size)) return false;
    cm->split[i] = xr_extract_dom_get(m, xr_extract_comms_keys[f]);
  }
  return true;
}

static xr_status_t name_arg(xr_arena_t *arena, xr_arg_t *a, const char *name, const char *type) {
  a->name = xr_arena_strdup(arena, name);
  a->type = xr_arena_strdup(arena, type);
  return a->name && a->type ? XR_OK : XR_RESOURCE_EXHAUSTED;
}

/* record_param_comms: no positional arguments; kwargs input, output (contiguous, of the
 * recorded dtype, [In msg nelems] and [Out msg nelems]), collective, group_size, rank and, when
 * recorded non-empty, in_split_sizes and out_split_sizes; group_stride when a group of several
 * was recorded with ranks other than adjacent. */
static xr_status_t build_comms_op(build_t *B, const group_t *g, const jnode_t *m, const comms_t *cm,
                                  xr_op_t **out_op) {
  ctx_t *c = B->c;
  xr_bundle_t *b = B->b;
  xr_arena_t *arena = b->arena;
  xr_op_t *op = xr_bundle_append_op(b);
  if (!op) return XR_RESOURCE_EXHAUSTED;
  const char *recorded = c->strs.strs[g->name];
  if (!(op->name = xr_arena_strdup(arena, xr_extract_comms_op_name))) return XR_RESOURCE_EXHAUSTED;
  if (strcmp(recorded, xr_extract_comms_op_name) != 0 &&
      !(op->alias = xr_arena_strdup(arena, recorded)))
    return XR_RESOURCE_EXHAUSTED;
  B->op_name = op->name;
  bool strided = cm->v[CM_GROUP_SIZE] > 1 && cm->v[CM_STRIDE] != 1;
  size_t nkw = 5 + (cm->split_n[0] > 0) + (cm->split_n[1] > 0) + strided;
  xr_status_t st = xr_op_alloc_args(arena, op, 0, nkw);
  if (st != XR_OK) return st;
  xr_arg_t *kw = op->kwargs;
  for (int i = 0; i < 2; i++) {
    if ((st = name_arg(arena, &kw[i], i ? "output" : "input", "Tensor")) != XR_OK ||
        (st = xr_value_make_tensor(arena, &kw[i].value, 1)) != XR_OK)
      return st;
    xr_tensor_spec_t *t = kw[i].value.as.tensor;
    t->shape[0] = cm->v[i ? CM_OUT_NELEMS : CM_IN_NELEMS];
    t->dtype = cm->dtype;
    xr_tensor_set_contiguous(t);
  }
  if ((st = name_arg(arena, &kw[2], "collective", "str")) != XR_OK ||
      (st = xr_value_make_string(arena, &kw[2].value, cm->collective)) != XR_OK ||
      (st = name_arg(arena, &kw[3], "group_size", "int")) != XR_OK ||
      (st = name_arg(arena, &kw[4], "rank", "int")) != XR_OK)
    return st;
  kw[3].value = (xr_value_t){.kind = XR_VALUE_INT, .as.i = cm->v[CM_GROUP_SIZE]};
  kw[4].value = (xr_value_t){.kind = XR_VALUE_INT, .as.i = cm->v[CM_RANK]};
  size_t k = 5;
  for (int i = 0; i < 2; i++) {
    size_t n = cm->split_n[i], got;
    if (!n) continue;
    xr_arg_t *a = &kw[k++];
    if ((st = name_arg(arena, a, i ? "out_split_sizes" : "in_split_sizes", "int[]")) != XR_OK ||
        (st = xr_value_make_list(arena, &a->value, n)) != XR_OK)
      return st;
    int64_t *v = xr_arena_alloc(arena, n * sizeof *v);
    char why[8];
    if (!v) return XR_RESOURCE_EXHAUSTED;
    comms_split(m, i ? CM_OUT_SPLIT : CM_IN_SPLIT, v, &got, why, sizeof why); /* checked */
    for (size_t j = 0; j < n; j++)
      a->value.as.list.items[j] = (xr_value_t){.kind = XR_VALUE_INT, .as.i = v[j]};
  }
  if (strided) {
    if ((st = name_arg(arena, &kw[k], "group_stride", "int")) != XR_OK) return st;
    kw[k++].value = (xr_value_t){.kind = XR_VALUE_INT, .as.i = cm->v[CM_STRIDE]};
  }
  *out_op = op;
  return XR_OK;
}

xr_status_t xr_extract_comms_op(build_t *B, const group_t *g, const jnode_t *m, xr_op_t **out_op) {
  ctx_t *c = B->c;
  comms_t cm;
  char why[256];
  *out_op = NULL;
  if (!check_comms(m, &cm, why, sizeof why)) {
    const char *name = c->strs.strs[g->name];
    if (cm.collective)
      xr_extract_warn(c, "%s (%s): skipped: %s", name, cm.collective, why);
    else
      xr_extract_warn(c, "%s: skipped: %s", name, why);
    c->sum.ops_bad_args++;
    return XR_OK;
  }
  return build_comms_op(B, g, m, &cm, out_op);
}

/* The c10d ops and the other collectives record no group size: the trace's world size stands
 * in, marked defaulted. */
xr_status_t xr_extract_comms_group_size(build_t *B, xr_op_t *op) {
  ctx_t *c = B->c;
  if (xr_op_find_arg(op, "group_size")) return XR_OK;
  if (c->world_size <= 0) {
    xr_extract_warn(c,
                    "%s: group size not recorded by the profiler, and the trace gives no world "
                    "size (distributedInfo): no group_size",
                    op->name);
    return XR_OK;
  }
  xr_arg_t *a = xr_op_add_kwarg(B->b->arena, op, "group_size", "int");
  if (!a) return XR_RESOURCE_EXHAUSTED;
  a->value = (xr_value_t){.kind = XR_VALUE_INT, .as.i = c->world_size};
  a->defaulted = true;
  xr_extract_warn(c,
                  "%s: group size not recorded by the profiler; using the trace's world size "
                  "%lld (distributedInfo)",
                  op->name, (long long)c->world_size);
  return XR_OK;
}
