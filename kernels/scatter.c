/* The scatter family: aten's data-dependent gathers and scatters (kernels/scatter.h).
 *
 *   gather(self, dim, index, *, sparse_grad)      out[x] = self[x, x[dim] := index[x]]
 *   take(self, index)                             out[x] = self.flatten()[index[x]]
 *   scatter(self, dim, index, src|value, *, reduce=None|'add'|'multiply'), scatter_ (in place)
 *   scatter_add(self, dim, index, src), scatter_add_
 *   scatter_reduce(self, dim, index, src, reduce, *, include_self=True), scatter_reduce_
 *                                                 reduce: sum, prod, mean, amax, amin
 *   index_add(self, dim, index, source, *, alpha=1), index_add_
 *   index_copy(self, dim, index, source), index_copy_
 *   index_fill(self, dim, index, value), index_fill_   (value a Scalar or a 0-d tensor)
 *   index(self, indices)                          advanced indexing (index.Tensor)
 *   index_put(self, indices, values, accumulate=False), index_put_, _index_put_impl_
 *   masked_scatter(self, mask, source), masked_scatter_
 *   masked_select(self, mask)                     (its result size needs out=)
 *   nonzero(self)                                 (its result size needs out=)
 *   nonzero_static(self, *, size, fill_value=-1)
 * and the out= forms of each (an "out" argument). Indices are int32 or int64; negative ones wrap
 * once and every index is then clamped into range (torch raises instead). Bool (or uint8)
 * index tensors are masks. */
#include "kernels/scatter.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/initializer.h"

static const char *const scatter_ops[] = {
    "aten::gather",         "aten::take",
    "aten::scatter",        "aten::scatter_",
    "aten::scatter_add",    "aten::scatter_add_",
    "aten::scatter_reduce", "aten::scatter_reduce_",
    "aten::index_add",      "aten::index_add_",
    "aten::index_copy",     "aten::index_copy_",
    "aten::index_fill",     "aten::index_fill_",
    "aten::index",          "aten::index_put",
    "aten::index_put_",     "aten::_index_put_impl_",
    "aten::masked_scatter", "aten::masked_scatter_",
    "aten::masked_select",  "aten::nonzero",
    "aten::nonzero_static", NULL,
};

/* ------------------------------------------------------------------------------------------ */
/* element helpers                                                                             */

int64_t xr_sc_load_int(const void *base, xr_dtype_t dtype, int64_t i) {
  switch (dtype) {
    case XR_DTYPE_I8: return ((const int8_t *)base)[i];
    case XR_DTYPE_I16: return ((const int16_t *)base)[i];
    case XR_DTYPE_I32: return ((const int32_t *)base)[i];
    case XR_DTYPE_I64: return ((const int64_t *)base)[i];
    case XR_DTYPE_U16: return ((const uint16_t *)base)[i];
    case XR_DTYPE_U32: return ((const uint32_t *)base)[i];
    case XR_DTYPE_U64: return (int64_t)((const uint64_t *)base)[i];
    case XR_DTYPE_BOOL: return ((const uint8_t *)base)[i] != 0;
    default: return ((const uint8_t *)base)[i];
  }
}

void xr_sc_store_int(void *base, xr_dtype_t dtype, int64_t i, int64_t v) {
  if (dtype == XR_DTYPE_BOOL) {
    ((uint8_t *)base)[i] = v != 0;
    return;
  }
  switch (xr_dtype_size(dtype)) {
    case 1: ((uint8_t *)base)[i] = (uint8_t)v; break;
    case 2: ((uint16_t *)base)[i] = (uint16_t)v; break;
    case 4: ((uint32_t *)base)[i] = (uint32_t)v; break;
    default: ((uint64_t *)base)[i] = (uint64_t)v; break;
  }
}

int64_t xr_sc_wrap_int(int64_t v, xr_dtype_t dtype) {
  switch (dtype) {
    case XR_DTYPE_I8: return (int8_t)v;
    case XR_DTYPE_I16: return (int16_t)v;
    case XR_DTYPE_I32: return (int32_t)v;
    case XR_DTYPE_U8: return (uint8_t)v;
    case XR_DTYPE_U16: return (uint16_t)v;
    case XR_DTYPE_U32: return (uint32_t)v;
    case XR_DTYPE_BOOL: return v != 0;
    default: return v;
  }
}

bool xr_sc_element_nonzero(const void *base, xr_dtype_t dtype, int64_t i) {
  if (!xr_dtype_is_floating(dtype)) return xr_sc_load_int(base, dtype, i) != 0;
  return xr_load_element(base, dtype, i) != 0.0; /* NaN != 0; -0.0 == 0 */
}

bool xr_sc_needs_scratch(const xr_scatter_problem_t *p) {
  if (p->kind != XR_SC_SCATTER || p->reduce == XR_SC_ASSIGN) return false;
  if (p->reduce == XR_SC_MEAN || !p->include_self) return true;
  bool narrow = xr_dtype_is_floating(p->dst.dtype) && p->dst.dtype != XR_DTYPE_F32 &&
                p->dst.dtype != XR_DTYPE_F64;
  return narrow && (p->reduce == XR_SC_ADD || p->reduce == XR_SC_MUL);
}

void xr_sc_reorder(const xr_scatter_problem_t *p, int *perm, int *out_rank, int *out_free_rank) {
  int n = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int d = 0; d < p->rank; d++) {
      bool serial = p->kind == XR_SC_SCATTER && p->serial[d];
      if ((p->shape[d] == 1 && d != p->count_dim) || serial != (pass == 1)) continue;
      perm[n++] = d;
    }
  int free_rank = 0;
  for (int i = 0; i < n; i++)
    if (!(p->kind == XR_SC_SCATTER && p->serial[perm[i]])) free_rank++;
  *out_rank = n;
  *out_free_rank = free_rank;
}

/* ------------------------------------------------------------------------------------------ */
/* the device kernels' parameters                                                             */

_Static_assert(XR_SC_DEV_ASSIGN == XR_SC_ASSIGN && XR_SC_DEV_ADD == XR_SC_ADD &&
                   XR_SC_DEV_MUL == XR_SC_MUL && XR_SC_DEV_MEAN == XR_SC_MEAN &&
                   XR_SC_DEV_MAX == XR_SC_MAX && XR_SC_DEV_MIN == XR_SC_MIN &&
                   XR_SC_DEV_INDEX == XR_SC_INDEX && XR_SC_DEV_POSITIONS == XR_SC_POSITIONS &&
                   XR_SC_DEV_IOTA == XR_SC_IOTA && XR_SC_DEV_GATHER == XR_SC_GATHER &&
                   XR_SC_DEV_SCATTER == XR_SC_SCATTER && XR_SC_DEV_NONZERO == XR_SC_NONZERO,
               "scatter_args.h's codes are kernels/scatter.h's");

static int drop_unit_dims(int rank, const int64_t *shape, int *keep) {
  int n = 0;
  for (int d = 0; d < rank; d++)
    if (shape[d] != 1) keep[n++] = d;
  return n;
}

xr_status_t xr_sc_device_supports(const xr_op_plan_t *plan, const char *who) {
  const xr_scatter_problem_t *p = plan->problem;
  int perm[XR_MAX_RANK], rank, free_rank, keep[XR_MAX_RANK];
  xr_sc_reorder(p, perm, &rank, &free_rank);
  int copy_rank = drop_unit_dims(p->copy_rank, p->copy_shape, keep);
  if (rank > XR_SC_DEV_DIMS || copy_rank > XR_SC_DEV_DIMS || p->mask_rank > XR_SC_DEV_DIMS)
    return xr_error(XR_UNIMPLEMENTED,
                    "%s: more than %d dimensions (the %s kernels take at most "
                    "%d)",
                    plan->op->name, XR_SC_DEV_DIMS, who, XR_SC_DEV_DIMS);
  if (p->slot_count > XR_SC_DEV_SLOTS)
    return xr_error(XR_UNIMPLEMENTED, "%s: %d index tensors (the %s kernels take at most %d)",
                    plan->op->name, p->slot_count, who, XR_SC_DEV_SLOTS);
  for (int i = 0; i < p->slot_count; i++)
    if (p->slots[i].group_rank > XR_SC_DEV_DIMS)
      return xr_error(XR_UNIMPLEMENTED,
                      "%s: an index over %d dimensions (the %s kernels take at "
                      "most %d)",
                      plan->op->name, p->slots[i].group_rank, who, XR_SC_DEV_DIMS);
  if (p->kind == XR_SC_SCATTER && p->reduce != XR_SC_ASSIGN && p->dst.dtype == XR_DTYPE_F64)
    return xr_error(XR_UNIMPLEMENTED,
                    "%s: f64 reductions are left to the CPU (the %s kernels "
                    "accumulate in float or int64)",
                    plan->op->name, who);
  if (p->numel > (int64_t)1 << 36 || p->mask_numel > (int64_t)1 << 36)
    return xr_error(XR_UNIMPLEMENTED, "%s: too many elements for one launch", plan->op->name);
  return XR_OK;
}

void xr_sc_device_params(const xr_scatter_problem_t *p, const xr_tensor_t *tensors, bool copy,
                         int64_t target_items, xr_sc_dev_params_t *q) {
  memset(q, 0, sizeof *q);
  q->dtype = (int)p->dst.dtype;
  q->elem_size = (int)xr_dtype_size(p->dst.dtype);
  q->offset[0] = tensors[p->dst.tensor].offset;
  q->count_dim = -1;
  if (copy) {
    int keep[XR_MAX_RANK];
    q->kind = XR_SC_DEV_GATHER;
    q->rank = drop_unit_dims(p->copy_rank, p->copy_shape, keep);
    for (int i = 0; i < q->rank; i++) {
      q->shape[i] = p->copy_shape[keep[i]];
      q->strides[0][i] = p->copy_dst_strides[keep[i]];
      q->strides[1][i] = p->copy_src_strides[keep[i]];
    }
    q->numel = p->copy_numel;
    q->offset[1] = tensors[p->copy_src].offset;
    return;
  }
  int perm[XR_MAX_RANK];
  xr_sc_reorder(p, perm, &q->rank, &q->free_rank);
  q->kind = (int)p->kind;
  q->nf = q->ns = 1;
  for (int i = 0; i < q->rank; i++) {
    int d = perm[i];
    q->shape[i] = p->shape[d];
    q->strides[0][i] = p->dst.strides[d];
    q->strides[1][i] = p->src.strides[d];
    for (int k = 0; k < p->slot_count; k++) q->strides[2 + k][i] = p->slots[k].strides[d];
    if (d == p->count_dim) q->count_dim = i;
    if (i < q->free_rank)
      q->nf *= q->shape[i];
    else
      q->ns *= q->shape[i];
  }
  q->numel = p->numel;
  if (p->kind == XR_SC_NONZERO) { /* [n, rank] as it is: rows past the count get `fill` */
    q->rank = 2;
    q->count_dim = 0;
    for (int d = 0; d < 2; d++) q->shape[d] = p->shape[d], q->strides[0][d] = p->dst.strides[d];
  }
  if (p->src.tensor >= 0) q->offset[1] = tensors[p->src.tensor].offset;
  q->slot_count = p->slot_count;
  double range = 1;
  for (int k = 0; k < p->slot_count; k++) {
    const xr_sc_slot_t *s = &p->slots[k];
    q->slot_source[k] = (int)s->source;
    q->slot_dtype[k] = (int)s->dtype;
    q->slot_on_src[k] = s->on_src;
    q->slot_group_rank[k] = s->group_rank;
    q->slot_numel[k] = s->numel;
    for (int d = 0; d < s->group_rank; d++) {
      q->group_shape[k][d] = s->group_shape[d];
      q->group_strides[k][d] = s->group_strides[d];
    }
    if (s->source == XR_SC_INDEX) q->offset[2 + k] = tensors[s->tensor].offset;
    if (!s->on_src) range *= (double)s->numel;
  }
  q->chunks = 1;
  q->range = 1;
  if (p->kind == XR_SC_SCATTER && range < 0x1p40 && q->nf > 0) {
    q->range = (int64_t)range;
    q->chunks = (target_items + q->nf - 1) / q->nf;
    if (q->chunks > 8) q->chunks = 8;
    if (q->chunks > q->range) q->chunks = q->range > 0 ? q->range : 1;
    if (q->chunks < 1) q->chunks = 1;
  }
  if (p->mask >= 0) {
    q->mask_rank = p->mask_rank;
    q->mask_dtype = (int)p->mask_dtype;
    q->mask_numel = p->mask_numel;
    q->mask_offset = tensors[p->mask].offset;
    for (int d = 0; d < p->mask_rank; d++) {
      q->mask_shape[d] = p->mask_shape[d];
      q->mask_strides[d] = p->mask_strides[d];
    }
    q->mask_chunk = (p->mask_numel + 65535) / 65536;
    if (q->mask_chunk < 256) q->mask_chunk = 256;
    q->mask_chunks = (p->mask_numel + q->mask_chunk - 1) / q->mask_chunk;
  }
  q->reduce = (int)p->reduce;
  q->include_self = p->include_self;
  q->src_scalar = p->src_scalar;
  q->scratch = xr_sc_needs_scratch(p);
  q->floating = xr_dtype_is_floating(p->dst.dtype);
  q->value = (float)p->value;
  q->ivalue = p->ivalue;
  q->alpha = (float)p->alpha;
  q->ialpha = (int64_t)p->alpha;
  memcpy(&q->pattern, &p->pattern, sizeof q->pattern);
  q->fill = p->fill;
}

/* ------------------------------------------------------------------------------------------ */
/* analysis                                                                                    */

static bool is_index_dtype(xr_dtype_t d) {
  return d == XR_DTYPE_I32 || d == XR_DTYPE_I64;
}
static bool is_mask_dtype(xr_dtype_t d) {
  return d == XR_DTYPE_BOOL || d == XR_DTYPE_U8;
}

static const char *base_name(const xr_op_t *op) {
  const char *p = strstr(op->name, "::");
  return p ? p + 2 : op->name;
}

static bool name_starts(const char *base, const char *prefix) {
  return !strncmp(base, prefix, strlen(prefix));
}

static bool in_place(const char *base) {
  return base[strlen(base) - 1] == '_';
}

static xr_status_t unimplemented(const xr_op_plan_t *plan, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static xr_status_t unimplemented(const xr_op_plan_t *plan, const char *fmt, ...) {
  char what[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return xr_error(XR_UNIMPLEMENTED, "%s: %s", plan->op->name, what);
}

static int64_t numel_of(int rank, const int64_t *shape) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= shape[d];
  return n;
}

static xr_status_t need_index(const xr_op_plan_t *plan, int index, const char *name) {
  xr_dtype_t d = plan->inputs[index]->dtype;
  if (!is_index_dtype(d))
    return xr_plan_error(plan, "%s: expected int32 or int64 indices, got %s", name,
                         xr_dtype_name(d));
  return XR_OK;
}

static xr_status_t need_same_dtype(const xr_op_plan_t *plan, int t, const char *name,
                                   xr_dtype_t want) {
  if (plan->inputs[t]->dtype != want)
    return xr_plan_error(plan, "%s is %s, self %s: torch requires the same dtype", name,
                         xr_dtype_name(plan->inputs[t]->dtype), xr_dtype_name(want));
  return XR_OK;
}

/* A tensor the op writes must not overlap itself (an expanded view). */
static xr_status_t check_writable(const xr_op_plan_t *plan, int t, const char *name) {
  const xr_tensor_spec_t *s = plan->inputs[t];
  for (int d = 0; d < s->rank; d++)
    if (s->shape[d] > 1 && s->strides[d] == 0)
      return xr_plan_error(plan,
                           "%s: a written tensor with stride 0 in dim %d (an expanded view) "
                           "has elements that alias",
                           name, d);
  return XR_OK;
}

/* The strides of binding b: an input's own, or a return's contiguous ones. */
static void strides_of(const xr_op_plan_t *plan, int b, int64_t *strides) {
  if (b < (int)plan->input_count) {
    const xr_tensor_spec_t *s = plan->inputs[b];
    memcpy(strides, s->strides, sizeof(int64_t) * (size_t)s->rank);
  } else {
    const xr_tensor_desc_t *d = &plan->returns[b - (int)plan->input_count];
    xr_contiguous_strides(d->rank, d->shape, strides);
  }
}

/* The written tensor: self in place, else the out= argument (of exactly `shape` and `dtype`),
 * else a new return. Written inputs are marked (a trace's types may lack the "!"). */
static xr_status_t pick_dst(xr_op_plan_t *plan, xr_scatter_problem_t *p, int self, bool inplace,
                            xr_dtype_t dtype, int rank, const int64_t *shape) {
  int out = -1;
  xr_status_t st;
  if (inplace) {
    out = self;
  } else if ((st = xr_arg_tensor(plan, -1, "out", false, &out))) {
    return st;
  }
  if (out >= 0) {
    const xr_tensor_spec_t *t = plan->inputs[out];
    const char *name = inplace ? "self" : "out";
    bool same = t->rank == rank;
    for (int d = 0; same && d < rank; d++) same = t->shape[d] == shape[d];
    if (!same) return xr_plan_error(plan, "%s: its shape is not the result's", name);
    if (t->dtype != dtype)
      return xr_plan_error(plan, "%s is %s, the result %s", name, xr_dtype_name(t->dtype),
                           xr_dtype_name(dtype));
    if ((st = check_writable(plan, out, name))) return st;
    plan->input_written[out] = true;
    p->dst.tensor = out;
  } else {
    p->dst.tensor = (int)plan->input_count;
    plan->return_count = 1;
    xr_desc_set(&plan->returns[0], dtype, rank, shape);
  }
  p->dst.dtype = dtype;
  return XR_OK;
}

/* SCATTER out of place: self copied into dst first. */
static void set_copy(const xr_op_plan_t *plan, xr_scatter_problem_t *p, int self) {
  if (p->dst.tensor == self) return;
  const xr_tensor_spec_t *t = plan->inputs[self];
  p->copy_src = self;
  p->copy_rank = t->rank;
  memcpy(p->copy_shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
  memcpy(p->copy_src_strides, t->strides, sizeof(int64_t) * (size_t)t->rank);
  strides_of(plan, p->dst.tensor, p->copy_dst_strides);
  p->copy_numel = numel_of(t->rank, t->shape);
}

static xr_sc_slot_t *add_slot(xr_scatter_problem_t *p, xr_sc_source_t source, int tensor,
                              xr_dtype_t dtype, bool on_src) {
  xr_sc_slot_t *s = &p->slots[p->slot_count++];
  memset(s, 0, sizeof *s);
  s->source = source;
  s->tensor = tensor;
  s->dtype = dtype;
  s->on_src = on_src;
  s->numel = 1;
  return s;
}

static void slot_group(xr_sc_slot_t *s, int rank, const int64_t *shape, const int64_t *strides) {
  s->group_rank = rank;
  memcpy(s->group_shape, shape, sizeof(int64_t) * (size_t)rank);
  memcpy(s->group_strides, strides, sizeof(int64_t) * (size_t)rank);
  s->numel = numel_of(rank, shape);
}

/* A Scalar source in dst's dtype. */
static void set_scalar(xr_scatter_problem_t *p, double v) {
  p->src_scalar = true;
  p->src.tensor = -1;
  p->src.dtype = p->dst.dtype;
  p->value = v;
  p->ivalue = isnan(v) ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (int64_t)v;
  uint8_t bits[8] = {0};
  if (p->dst.dtype == XR_DTYPE_BOOL)
    bits[0] = v != 0;
  else if (xr_dtype_is_floating(p->dst.dtype))
    xr_store_element(bits, p->dst.dtype, 0, v);
  else
    xr_sc_store_int(bits, p->dst.dtype, 0, p->ivalue);
  memcpy(&p->pattern, bits, sizeof bits);
}

/* A Scalar argument, or a 0-d tensor standing for one (its binding in *out_tensor). */
static xr_status_t scalar_or_tensor(xr_op_plan_t *plan, int position, const char *name,
                                    const char *alt, double *out_value, int *out_tensor) {
  const xr_value_t *v = xr_op_arg(plan->op, position, name);
  if (!v && alt) v = xr_op_arg(plan->op, position, alt);
  *out_tensor = -1;
  if (!v || v->kind == XR_VALUE_NULL)
    return xr_plan_error(plan, "argument '%s' (position %d) is missing", name, position);
  if (v->kind == XR_VALUE_TENSOR) {
    *out_tensor = xr_plan_input_index(plan, v->as.tensor);
    return XR_OK;
  }
  if (v->kind == XR_VALUE_FLOAT)
    *out_value = v->as.f;
  else if (v->kind == XR_VALUE_INT)
    *out_value = (double)v->as.i;
  else if (v->kind == XR_VALUE_BOOL)
    *out_value = v->as.b;
  else
    return xr_plan_error(plan, "%s: expected a number or a tensor", name);
  return XR_OK;
}

/* gather(self, dim, index, *, sparse_grad) and take(self, index). */
static xr_status_t analyze_gather(xr_op_plan_t *plan, xr_scatter_problem_t *p, bool take) {
  int self = -1, index = -1, dim = 0;
  int64_t dim_arg = 0;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self)) ||
      (st = xr_arg_tensor(plan, take ? 1 : 2, "index", true, &index)) ||
      (!take && (st = xr_arg_int(plan->op, 1, "dim", true, &dim_arg))) ||
      (st = need_index(plan, index, "index")))
    return st;
  const xr_tensor_spec_t *ts = plan->inputs[self], *ti = plan->inputs[index];
  p->kind = XR_SC_GATHER;
  p->rank = ti->rank;
  memcpy(p->shape, ti->shape, sizeof(int64_t) * (size_t)ti->rank);
  p->src = (xr_sc_operand_t){.tensor = self, .dtype = ts->dtype};
  xr_sc_slot_t *s = add_slot(p, XR_SC_INDEX, index, ti->dtype, true);
  memcpy(s->strides, ti->strides, sizeof(int64_t) * (size_t)ti->rank);
  if (take) {
    slot_group(s, ts->rank, ts->shape, ts->strides);
  } else {
    if ((st = xr_plan_wrap_dim(plan, dim_arg, ts->rank, &dim))) return st;
    if (ti->rank != ts->rank)
      return xr_plan_error(plan, "index has %d dimensions, self %d: they must agree", ti->rank,
                           ts->rank);
    for (int d = 0; d < ts->rank; d++) {
      if (d == dim) continue;
      if (ti->shape[d] > ts->shape[d])
        return xr_plan_error(plan, "index: size %lld in dim %d exceeds self's %lld",
                             (long long)ti->shape[d], d, (long long)ts->shape[d]);
      p->src.strides[d] = ts->strides[d];
    }
    if (ts->rank > 0) slot_group(s, 1, &ts->shape[dim], &ts->strides[dim]);
  }
  return pick_dst(plan, p, self, false, ts->dtype, ti->rank, ti->shape);
}

static xr_status_t parse_reduce(const xr_op_plan_t *plan, const char *r, bool legacy,
                                xr_sc_reduce_t *out) {
  static const struct {
    const char *name;
    xr_sc_reduce_t reduce;
    bool legacy;
  } table[] = {{"add", XR_SC_ADD, true},    {"multiply", XR_SC_MUL, true},
               {"sum", XR_SC_ADD, false},   {"prod", XR_SC_MUL, false},
               {"mean", XR_SC_MEAN, false}, {"amax", XR_SC_MAX, false},
               {"amin", XR_SC_MIN, false}};
  for (size_t i = 0; i < sizeof table / sizeof *table; i++)
    if (table[i].legacy == legacy && !strcmp(table[i].name, r)) {
      *out = table[i].reduce;
      return XR_OK;
    }
  return xr_plan_error(plan, "reduce: expected %s, got '%s'",
                       legacy ? "'add' or 'multiply'" : "'sum', 'prod', 'mean', 'amax' or 'amin'",
                       r);
}

/* scatter, scatter_add, scatter_reduce and their in-place forms. */
static xr_status_t analyze_scatter(xr_op_plan_t *plan, xr_scatter_problem_t *p, const char *base) {
  const xr_op_t *op = plan->op;
  bool inplace = in_place(base), add = name_starts(base, "scatter_add"),
       reduce = name_starts(base, "scatter_reduce");
  int self = -1, index = -1, dim = 0, src = -1;
  int64_t dim_arg = 0;
  double value = 0;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self)) ||
      (st = xr_arg_int(op, 1, "dim", true, &dim_arg)) ||
      (st = xr_arg_tensor(plan, 2, "index", true, &index)) ||
      (st = need_index(plan, index, "index")) ||
      (st = scalar_or_tensor(plan, 3, "src", "value", &value, &src)))
    return st;
  const xr_tensor_spec_t *ts = plan->inputs[self], *ti = plan->inputs[index];
  if ((st = xr_plan_wrap_dim(plan, dim_arg, ts->rank, &dim))) return st;
  p->kind = XR_SC_SCATTER;
  if (reduce) {
    const char *r = NULL;
    const xr_value_t *v = xr_op_arg(op, 4, "reduce");
    if (!v || v->kind == XR_VALUE_NULL)
      return unimplemented(plan,
                           "reduce was not recorded (profilers drop string arguments): "
                           "which reduction is unknown");
    if ((st = xr_arg_string(op, 4, "reduce", true, &r)) ||
        (st = parse_reduce(plan, r, false, &p->reduce)) ||
        (st = xr_arg_bool(op, 5, "include_self", false, &p->include_self)))
      return st;
  } else if (add) {
    p->reduce = XR_SC_ADD;
  } else {
    const char *r = NULL;
    if ((st = xr_arg_string(op, 4, "reduce", false, &r))) return st;
    /* a string the profiler dropped is extraction's fallback 'sum': the legacy 'add' */
    const xr_arg_t *a = xr_op_find_arg(op, "reduce");
    if (r && a && a->defaulted && !strcmp(r, "sum")) r = "add";
    if (r && (st = parse_reduce(plan, r, true, &p->reduce))) return st;
  }
  if ((add || reduce) && src < 0) return xr_plan_error(plan, "src: expected a tensor");
  if (ti->rank != ts->rank)
    return xr_plan_error(plan, "index has %d dimensions, self %d: they must agree", ti->rank,
                         ts->rank);
  if ((st = pick_dst(plan, p, self, inplace, ts->dtype, ts->rank, ts->shape))) return st;
  set_copy(plan, p, self);
  int64_t dst_strides[XR_MAX_RANK];
  strides_of(plan, p->dst.tensor, dst_strides);
  p->rank = ti->rank;
  memcpy(p->shape, ti->shape, sizeof(int64_t) * (size_t)ti->rank);
  if (src >= 0) {
    const xr_tensor_spec_t *tv = plan->inputs[src];
    if ((st = need_same_dtype(plan, src, "src", ts->dtype))) return st;
    if (tv->rank != ti->rank)
      return xr_plan_error(plan, "src has %d dimensions, index %d: they must agree", tv->rank,
                           ti->rank);
    p->src = (xr_sc_operand_t){.tensor = src, .dtype = tv->dtype};
    for (int d = 0; d < tv->rank; d++) {
      if (ti->shape[d] > tv->shape[d])
        return xr_plan_error(plan, "index: size %lld in dim %d exceeds src's %lld",
                             (long long)ti->shape[d], d, (long long)tv->shape[d]);
      p->src.strides[d] = tv->strides[d];
    }
  } else {
    set_scalar(p, value);
  }
  for (int d = 0; d < ts->rank; d++) {
    if (d == dim) continue;
    if (ti->shape[d] > ts->shape[d])
      return xr_plan_error(plan, "index: size %lld in dim %d exceeds self's %lld",
                           (long long)ti->shape[d], d, (long long)ts->shape[d]);
    p->dst.strides[d] = dst_strides[d];
  }
  xr_sc_slot_t *s = add_slot(p, XR_SC_INDEX, index, ti->dtype, false);
  memcpy(s->strides, ti->strides, sizeof(int64_t) * (size_t)ti->rank);
  if (ts->rank > 0) {
    slot_group(s, 1, &ts->shape[dim], &dst_strides[dim]);
    p->serial[dim] = true;
  }
  return XR_OK;
}

/* index_add, index_copy, index_fill and their in-place forms: along dim, source slice i (or the
 * value) goes to self's slice index[i]. */
static xr_status_t analyze_index_op(xr_op_plan_t *plan, xr_scatter_problem_t *p, const char *base) {
  const xr_op_t *op = plan->op;
  bool inplace = in_place(base), fill = name_starts(base, "index_fill"),
       add = name_starts(base, "index_add");
  int self = -1, index = -1, dim = 0, src = -1;
  int64_t dim_arg = 0;
  double value = 0;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self)) ||
      (st = xr_arg_int(op, 1, "dim", true, &dim_arg)) ||
      (st = xr_arg_tensor(plan, 2, "index", true, &index)) ||
      (st = need_index(plan, index, "index")))
    return st;
  if (fill) {
    if ((st = scalar_or_tensor(plan, 3, "value", NULL, &value, &src))) return st;
  } else if ((st = xr_arg_tensor(plan, 3, "source", true, &src))) {
    return st;
  }
  if (add && (st = xr_arg_double(op, 4, "alpha", false, &p->alpha))) return st;
  const xr_tensor_spec_t *ts = plan->inputs[self], *ti = plan->inputs[index];
  if ((st = xr_plan_wrap_dim(plan, dim_arg, ts->rank, &dim))) return st;
  if (ti->rank > 1) return xr_plan_error(plan, "index: expected a 1-D tensor, got %d-D", ti->rank);
  int64_t n = ti->rank ? ti->shape[0] : 1;
  p->kind = XR_SC_SCATTER;
  p->reduce = add ? XR_SC_ADD : XR_SC_ASSIGN;
  if ((st = pick_dst(plan, p, self, inplace, ts->dtype, ts->rank, ts->shape))) return st;
  set_copy(plan, p, self);
  int64_t dst_strides[XR_MAX_RANK];
  strides_of(plan, p->dst.tensor, dst_strides);
  p->rank = ts->rank;
  memcpy(p->shape, ts->shape, sizeof(int64_t) * (size_t)ts->rank);
  if (ts->rank > 0) p->shape[dim] = n;
  if (fill && src >= 0) {
    const xr_tensor_spec_t *tv = plan->inputs[src];
    if (tv->rank != 0)
      return xr_plan_error(plan, "value: expected a 0-d tensor, got %d-D", tv->rank);
    if (tv->dtype != ts->dtype)
      return unimplemented(plan,
                           "value: a %s tensor filling %s: only the same dtype is "
                           "implemented",
                           xr_dtype_name(tv->dtype), xr_dtype_name(ts->dtype));
    p->src = (xr_sc_operand_t){.tensor = src, .dtype = tv->dtype};
  } else if (fill) {
    set_scalar(p, value);
  } else {
    const xr_tensor_spec_t *tv = plan->inputs[src];
    if ((st = need_same_dtype(plan, src, "source", ts->dtype))) return st;
    if (tv->rank != ts->rank)
      return xr_plan_error(plan, "source has %d dimensions, self %d: they must agree", tv->rank,
                           ts->rank);
    for (int d = 0; d < ts->rank; d++)
      if (tv->shape[d] != p->shape[d])
        return xr_plan_error(plan, "source: size %lld in dim %d, expected %lld",
                             (long long)tv->shape[d], d, (long long)p->shape[d]);
    p->src = (xr_sc_operand_t){.tensor = src, .dtype = tv->dtype};
    memcpy(p->src.strides, tv->strides, sizeof(int64_t) * (size_t)tv->rank);
  }
  for (int d = 0; d < ts->rank; d++)
    if (d != dim) p->dst.strides[d] = dst_strides[d];
  xr_sc_slot_t *s = add_slot(p, XR_SC_INDEX, index, ti->dtype, false);
  if (ts->rank > 0) {
    if (ti->rank == 1) s->strides[dim] = ti->strides[0];
    slot_group(s, 1, &ts->shape[dim], &dst_strides[dim]);
    p->serial[dim] = true;
  } else if (n == 0) {
    p->numel = 0; /* a 0-d self and no index: nothing moves */
  }
  return XR_OK;
}

/* The geometry of advanced indexing (index.Tensor, index_put): `indices` is a list of optional
 * tensors, entry i indexing self's dim (or, for a mask, dims) where the previous entries end;
 * None entries and dims past the list are taken whole. Integer index tensors broadcast to B;
 * a mask stands for the coordinates of its set elements (B = [count]). The result has B in
 * place of the indexed dims when the index entries are adjacent, else B first. `strides` are
 * those of the indexed tensor (src for index, dst for index_put). */
static xr_status_t index_geometry(xr_op_plan_t *plan, xr_scatter_problem_t *p, int self,
                                  const int64_t *strides, bool on_src, int *out_b_first) {
  const xr_value_t *list = xr_op_arg(plan->op, 1, "indices");
  if (list && list->kind == XR_VALUE_NULL) /* what a profiler records of a Tensor?[] */
    return xr_error(XR_UNIMPLEMENTED, "%s: indices: the trace recorded none (profilers do not "
                    "record the tensors of a Tensor?[] list); add them to the op", plan->op->name);
  if (!list || list->kind != XR_VALUE_LIST)
    return xr_plan_error(plan, "indices: expected a list of optional tensors");
  const xr_tensor_spec_t *ts = plan->inputs[self];
  size_t n = list->as.list.count;
  int first_dim[XR_MAX_RANK + 1];
  bool consumed[XR_MAX_RANK] = {false};
  int d = 0, adv_first = -1, adv_last = -1, ints = 0, masks = 0;
  bool gap = false;
  for (size_t i = 0; i < n; i++) {
    const xr_value_t *v = &list->as.list.items[i];
    if (d > ts->rank || i > (size_t)XR_MAX_RANK)
      return xr_plan_error(plan, "indices: too many indices for a %d-D tensor", ts->rank);
    first_dim[i] = d;
    if (v->kind == XR_VALUE_NULL) {
      d++;
      continue;
    }
    if (v->kind != XR_VALUE_TENSOR)
      return xr_plan_error(plan, "indices[%zu]: expected a tensor", i);
    const xr_tensor_spec_t *t = v->as.tensor;
    int m = 1;
    if (is_mask_dtype(t->dtype)) {
      if (t->rank == 0)
        return unimplemented(plan, "indices[%zu]: a 0-d mask is not implemented", i);
      m = t->rank;
      masks++;
      if (d + m > ts->rank)
        return xr_plan_error(plan, "indices: too many indices for a %d-D tensor", ts->rank);
      for (int k = 0; k < m; k++)
        if (t->shape[k] != ts->shape[d + k])
          return xr_plan_error(plan, "indices[%zu]: the mask's dim %d is %lld, self's dim %d %lld",
                               i, k, (long long)t->shape[k], d + k, (long long)ts->shape[d + k]);
    } else if (is_index_dtype(t->dtype)) {
      ints++;
    } else if (xr_dtype_is_floating(t->dtype)) {
      /* what extraction gives a Tensor?[] element: the profiler records no dtype for them */
      return unimplemented(plan,
                           "indices[%zu] is %s: the dtype of a Tensor?[] list's elements "
                           "was not recorded (int64 indices or a bool mask?); give the bundle "
                           "the real dtype",
                           i, xr_dtype_name(t->dtype));
    } else {
      return xr_plan_error(plan, "indices[%zu]: expected int32, int64 or bool indices, got %s", i,
                           xr_dtype_name(t->dtype));
    }
    if (adv_last >= 0 && adv_last != (int)i - 1) gap = true;
    if (adv_first < 0) adv_first = (int)i;
    adv_last = (int)i;
    for (int k = 0; k < m; k++)
      if (d + k < ts->rank) consumed[d + k] = true;
    d += m;
  }
  if (d > ts->rank)
    return xr_plan_error(plan, "indices: too many indices for a %d-D tensor", ts->rank);
  if (masks && (masks > 1 || ints))
    return unimplemented(plan,
                         "indices: a bool mask together with other index tensors is not "
                         "implemented (one mask, or integer indices only)");
  /* B: the broadcast of the integer indices, or the mask's count. */
  int b_rank = 0;
  int64_t b_shape[XR_MAX_RANK];
  if (masks) {
    b_rank = 1;
    b_shape[0] = 1; /* the caller sets the count's extent */
  } else {
    for (int i = adv_first; ints && i <= adv_last; i++) {
      const xr_value_t *v = &list->as.list.items[i];
      if (v->kind != XR_VALUE_TENSOR) continue;
      const xr_tensor_spec_t *t = v->as.tensor;
      int r = t->rank > b_rank ? t->rank : b_rank;
      int64_t merged[XR_MAX_RANK];
      for (int k = 0; k < r; k++) {
        int kt = k - (r - t->rank), kb = k - (r - b_rank);
        int64_t a = kt >= 0 ? t->shape[kt] : 1, b = kb >= 0 ? b_shape[kb] : 1;
        if (a != b && a != 1 && b != 1)
          return xr_plan_error(plan, "indices[%d]: shape does not broadcast with the others", i);
        merged[k] = a == 1 ? b : a;
      }
      b_rank = r;
      memcpy(b_shape, merged, sizeof(int64_t) * (size_t)r);
    }
  }
  /* The result's dims: ('B', k) or ('self', d). */
  int rank = 0, b_first = -1, src_dim[2 * XR_MAX_RANK];
  int rest = 0;
  for (int k = 0; k < ts->rank; k++) rest += !consumed[k];
  if (rest + b_rank > XR_MAX_RANK)
    return xr_plan_error(plan, "the result would have %d dimensions", rest + b_rank);
  int start = adv_first < 0 ? -1 : (gap ? -2 : first_dim[adv_first]);
  if (start == -2) {
    b_first = 0;
    for (int k = 0; k < b_rank; k++) src_dim[rank++] = -1;
  }
  for (int k = 0; k < ts->rank; k++) {
    if (k == start) {
      b_first = rank;
      for (int j = 0; j < b_rank; j++) src_dim[rank++] = -1;
    }
    if (!consumed[k]) src_dim[rank++] = k;
  }
  if (adv_first >= 0 && b_first < 0) { /* advanced entries past every dim (only 0-d ints) */
    b_first = rank;
    for (int j = 0; j < b_rank; j++) src_dim[rank++] = -1;
  }
  p->rank = rank;
  xr_sc_operand_t *addressed = on_src ? &p->src : &p->dst;
  for (int r = 0; r < rank; r++) {
    if (src_dim[r] >= 0) {
      p->shape[r] = ts->shape[src_dim[r]];
      addressed->strides[r] = strides[src_dim[r]];
    } else {
      p->shape[r] = b_shape[r - b_first];
      p->serial[r] = ints > 0;
      addressed->strides[r] = 0;
    }
  }
  for (int i = adv_first; adv_first >= 0 && i <= adv_last; i++) {
    const xr_value_t *v = &list->as.list.items[i];
    if (v->kind != XR_VALUE_TENSOR) continue;
    const xr_tensor_spec_t *t = v->as.tensor;
    int dim = first_dim[i];
    if (masks) {
      xr_sc_slot_t *s = add_slot(p, XR_SC_POSITIONS, -1, XR_DTYPE_I64, on_src);
      s->strides[b_first] = 1;
      slot_group(s, t->rank, &ts->shape[dim], &strides[dim]);
      p->mask = xr_plan_input_index(plan, t);
      p->mask_dtype = t->dtype;
      p->mask_rank = t->rank;
      memcpy(p->mask_shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
      memcpy(p->mask_strides, t->strides, sizeof(int64_t) * (size_t)t->rank);
      p->mask_numel = numel_of(t->rank, t->shape);
      p->count_dim = b_first;
      continue;
    }
    xr_sc_slot_t *s = add_slot(p, XR_SC_INDEX, xr_plan_input_index(plan, t), t->dtype, on_src);
    for (int k = 0; k < t->rank; k++) {
      int r = b_first + (b_rank - t->rank) + k;
      s->strides[r] = t->shape[k] == 1 ? 0 : t->strides[k];
    }
    slot_group(s, 1, &ts->shape[dim], &strides[dim]);
  }
  *out_b_first = b_first;
  return XR_OK;
}

static const char *const mask_size_reason =
    "the result's size is the mask's non-zero count, which only an out= argument records "
    "(the trace has none): not replayable";

/* index.Tensor(self, indices) and its out= form. */
static xr_status_t analyze_index(xr_op_plan_t *plan, xr_scatter_problem_t *p) {
  int self = -1, b_first = -1;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self))) return st;
  const xr_tensor_spec_t *ts = plan->inputs[self];
  p->kind = XR_SC_GATHER;
  p->src = (xr_sc_operand_t){.tensor = self, .dtype = ts->dtype};
  if ((st = index_geometry(plan, p, self, ts->strides, true, &b_first))) return st;
  if (p->count_dim >= 0) {
    int out = -1;
    if ((st = xr_arg_tensor(plan, -1, "out", false, &out))) return st;
    if (out < 0) { /* the count from the mask's contents, when the bundle embeds them */
      const xr_tensor_spec_t *tm = plan->inputs[p->mask];
      if (!tm->data)
        return unimplemented(plan, "a bool mask index: the result's size is the mask's non-zero "
                             "count, which neither an out= argument nor the mask's contents "
                             "embedded in the bundle give here: not replayable");
      int64_t count = 0, v = 0;
      for (int64_t i = 0; i < p->mask_numel; i++) {
        if (!xr_spec_embedded_int(tm, i, &v))
          return xr_plan_error(plan, "indices: the mask's element %lld lies outside its embedded "
                               "contents", (long long)i);
        count += v != 0;
      }
      p->shape[p->count_dim] = count;
      p->mask_want = count;
      return pick_dst(plan, p, self, false, ts->dtype, p->rank, p->shape);
    }
    const xr_tensor_spec_t *to = plan->inputs[out];
    if (to->rank != p->rank)
      return xr_plan_error(plan, "out has %d dimensions, the result %d", to->rank, p->rank);
    p->shape[p->count_dim] = to->shape[p->count_dim];
    p->mask_want = p->shape[p->count_dim];
  }
  return pick_dst(plan, p, self, false, ts->dtype, p->rank, p->shape);
}

/* index_put(self, indices, values, accumulate), index_put_, _index_put_impl_. */
static xr_status_t analyze_index_put(xr_op_plan_t *plan, xr_scatter_problem_t *p,
                                     const char *base) {
  const xr_op_t *op = plan->op;
  bool inplace = in_place(base);
  int self = -1, values = -1, b_first = -1;
  bool accumulate = false;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self)) ||
      (st = xr_arg_tensor(plan, 2, "values", true, &values)) ||
      (st = xr_arg_bool(op, 3, "accumulate", false, &accumulate)))
    return st;
  const xr_tensor_spec_t *ts = plan->inputs[self], *tv = plan->inputs[values];
  if ((st = need_same_dtype(plan, values, "values", ts->dtype))) return st;
  p->kind = XR_SC_SCATTER;
  p->reduce = accumulate ? XR_SC_ADD : XR_SC_ASSIGN;
  if ((st = pick_dst(plan, p, self, inplace, ts->dtype, ts->rank, ts->shape))) return st;
  set_copy(plan, p, self);
  int64_t dst_strides[XR_MAX_RANK];
  strides_of(plan, p->dst.tensor, dst_strides);
  if ((st = index_geometry(plan, p, self, dst_strides, false, &b_first))) return st;
  /* values broadcast to the result (extra leading dims of size 1 allowed) */
  int lead = tv->rank - p->rank;
  for (int k = 0; k < lead; k++)
    if (tv->shape[k] != 1)
      return xr_plan_error(plan, "values: shape cannot be broadcast to the indexing result");
  if (p->count_dim >= 0) {
    int k = p->count_dim + lead;
    bool has = k >= 0 && k < tv->rank && tv->shape[k] != 1;
    p->shape[p->count_dim] = has ? tv->shape[k] : p->mask_numel;
    p->mask_want = has ? tv->shape[k] : -1;
  }
  p->src = (xr_sc_operand_t){.tensor = values, .dtype = tv->dtype};
  for (int r = 0; r < p->rank; r++) {
    int k = r + lead;
    if (k < 0) continue;
    if (tv->shape[k] != 1 && tv->shape[k] != p->shape[r])
      return xr_plan_error(plan, "values: size %lld in dim %d does not broadcast to %lld",
                           (long long)tv->shape[k], k, (long long)p->shape[r]);
    p->src.strides[r] = tv->shape[k] == 1 ? 0 : tv->strides[k];
  }
  return XR_OK;
}

/* Right-aligned broadcast of `t` to `rank`/`shape`: its strides (0 where it broadcasts). */
static xr_status_t broadcast_to(const xr_op_plan_t *plan, const char *name,
                                const xr_tensor_spec_t *t, int rank, const int64_t *shape,
                                int64_t *strides) {
  if (t->rank > rank) return xr_plan_error(plan, "%s: cannot be broadcast", name);
  for (int r = 0; r < rank; r++) {
    int k = r - (rank - t->rank);
    strides[r] = 0;
    if (k < 0) continue;
    if (t->shape[k] != 1 && t->shape[k] != shape[r])
      return xr_plan_error(plan, "%s: size %lld in dim %d does not broadcast to %lld", name,
                           (long long)t->shape[k], k, (long long)shape[r]);
    if (t->shape[k] != 1) strides[r] = t->strides[k];
  }
  return XR_OK;
}

static void set_mask(const xr_op_plan_t *plan, xr_scatter_problem_t *p, int mask, int rank,
                     const int64_t *shape, const int64_t *strides) {
  p->mask = mask;
  p->mask_dtype = plan->inputs[mask]->dtype;
  p->mask_rank = rank;
  memcpy(p->mask_shape, shape, sizeof(int64_t) * (size_t)rank);
  memcpy(p->mask_strides, strides, sizeof(int64_t) * (size_t)rank);
  p->mask_numel = numel_of(rank, shape);
}

/* masked_scatter(self, mask, source), masked_scatter_ and masked_select(self, mask). */
static xr_status_t analyze_masked(xr_op_plan_t *plan, xr_scatter_problem_t *p, const char *base) {
  bool select = name_starts(base, "masked_select"), inplace = in_place(base);
  int self = -1, mask = -1, source = -1;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self)) ||
      (st = xr_arg_tensor(plan, 1, "mask", true, &mask)) ||
      (!select && (st = xr_arg_tensor(plan, 2, "source", true, &source))))
    return st;
  const xr_tensor_spec_t *ts = plan->inputs[self], *tm = plan->inputs[mask];
  if (!is_mask_dtype(tm->dtype))
    return xr_plan_error(plan, "mask: expected a bool tensor, got %s", xr_dtype_name(tm->dtype));
  int64_t mask_strides[XR_MAX_RANK];
  if (select) {
    /* self and mask broadcast together to S; the result is S's elements where the mask is set */
    int rank = ts->rank > tm->rank ? ts->rank : tm->rank;
    int64_t shape[XR_MAX_RANK], self_strides[XR_MAX_RANK];
    for (int r = 0; r < rank; r++) {
      int ks = r - (rank - ts->rank), km = r - (rank - tm->rank);
      int64_t a = ks >= 0 ? ts->shape[ks] : 1, b = km >= 0 ? tm->shape[km] : 1;
      if (a != b && a != 1 && b != 1)
        return xr_plan_error(plan, "mask: shape does not broadcast with self's");
      shape[r] = a == 1 ? b : a;
    }
    if ((st = broadcast_to(plan, "self", ts, rank, shape, self_strides)) ||
        (st = broadcast_to(plan, "mask", tm, rank, shape, mask_strides)))
      return st;
    int out = -1;
    if ((st = xr_arg_tensor(plan, -1, "out", false, &out))) return st;
    if (out < 0) return unimplemented(plan, "%s", mask_size_reason);
    if (plan->inputs[out]->rank != 1) return xr_plan_error(plan, "out: expected a 1-D tensor");
    p->kind = XR_SC_GATHER;
    p->rank = 1;
    p->shape[0] = plan->inputs[out]->shape[0];
    p->count_dim = 0;
    p->mask_want = p->shape[0];
    p->src = (xr_sc_operand_t){.tensor = self, .dtype = ts->dtype};
    xr_sc_slot_t *s = add_slot(p, XR_SC_POSITIONS, -1, XR_DTYPE_I64, true);
    s->strides[0] = 1;
    slot_group(s, rank, shape, self_strides);
    set_mask(plan, p, mask, rank, shape, mask_strides);
    return pick_dst(plan, p, self, false, ts->dtype, 1, p->shape);
  }
  const xr_tensor_spec_t *tsrc = plan->inputs[source];
  if ((st = need_same_dtype(plan, source, "source", ts->dtype)) ||
      (st = broadcast_to(plan, "mask", tm, ts->rank, ts->shape, mask_strides)) ||
      (st = pick_dst(plan, p, self, inplace, ts->dtype, ts->rank, ts->shape)))
    return st;
  set_copy(plan, p, self);
  int64_t dst_strides[XR_MAX_RANK];
  strides_of(plan, p->dst.tensor, dst_strides);
  p->kind = XR_SC_SCATTER;
  p->reduce = XR_SC_ASSIGN;
  int64_t self_numel = numel_of(ts->rank, ts->shape), src_numel = numel_of(tsrc->rank, tsrc->shape);
  p->rank = 1;
  p->shape[0] = self_numel < src_numel ? self_numel : src_numel;
  p->count_dim = 0;
  p->mask_want = p->shape[0];
  p->src = (xr_sc_operand_t){.tensor = source, .dtype = tsrc->dtype};
  xr_sc_slot_t *s = add_slot(p, XR_SC_POSITIONS, -1, XR_DTYPE_I64, false);
  s->strides[0] = 1;
  slot_group(s, ts->rank, ts->shape, dst_strides);
  s = add_slot(p, XR_SC_IOTA, -1, XR_DTYPE_I64, true);
  s->strides[0] = 1;
  slot_group(s, tsrc->rank, tsrc->shape, tsrc->strides);
  set_mask(plan, p, mask, ts->rank, ts->shape, mask_strides);
  return XR_OK;
}

/* nonzero(self), its out= form and nonzero_static(self, *, size, fill_value). */
static xr_status_t analyze_nonzero(xr_op_plan_t *plan, xr_scatter_problem_t *p, const char *base) {
  bool is_static = !strcmp(base, "nonzero_static");
  int self = -1;
  int64_t n = 0;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "self", true, &self))) return st;
  const xr_tensor_spec_t *ts = plan->inputs[self];
  p->fill = -1;
  if (is_static) {
    if ((st = xr_arg_int(plan->op, 1, "size", true, &n)) ||
        (st = xr_arg_int(plan->op, 2, "fill_value", false, &p->fill)))
      return st;
    if (n < 0) return xr_plan_error(plan, "size: %lld is negative", (long long)n);
    p->mask_want = -1;
  } else {
    int out = -1;
    if ((st = xr_arg_tensor(plan, -1, "out", false, &out))) return st;
    if (out < 0) return unimplemented(plan, "%s", mask_size_reason);
    const xr_tensor_spec_t *to = plan->inputs[out];
    if (to->rank != 2 || to->shape[1] != ts->rank)
      return xr_plan_error(plan, "out: expected a [n, %d] tensor", ts->rank);
    n = to->shape[0];
    p->mask_want = n;
  }
  if (xr_dtype_size(ts->dtype) > 8)
    return unimplemented(plan, "self: %s is not implemented", xr_dtype_name(ts->dtype));
  p->kind = XR_SC_NONZERO;
  p->rank = 2;
  p->shape[0] = n;
  p->shape[1] = ts->rank;
  p->count_dim = 0;
  set_mask(plan, p, self, ts->rank, ts->shape, ts->strides);
  return pick_dst(plan, p, self, false, XR_DTYPE_I64, 2, p->shape);
}

static double view_bytes(const xr_op_plan_t *plan, int b) {
  if (b < 0 || b >= (int)plan->input_count) return 0;
  const xr_tensor_spec_t *t = plan->inputs[b];
  return (double)xr_spec_numel(t) * (double)xr_dtype_size(t->dtype);
}

/* Bytes: each index tensor, mask and source element read once, each destination element
 * written once (read too when accumulating), the out-of-place copy of self; flops: one per
 * accumulation (two with an alpha). */
static void cost(xr_op_plan_t *plan, const xr_scatter_problem_t *p) {
  double n = (double)p->numel, es = (double)xr_dtype_size(p->dst.dtype), bytes = 0;
  for (int i = 0; i < p->slot_count; i++)
    if (p->slots[i].source == XR_SC_INDEX) bytes += view_bytes(plan, p->slots[i].tensor);
  bytes += view_bytes(plan, p->mask);
  double src = p->src_scalar ? 0 : fmin(n, view_bytes(plan, p->src.tensor) / es);
  if (p->kind == XR_SC_GATHER) {
    bytes += (src + n) * es;
  } else if (p->kind == XR_SC_NONZERO) {
    bytes += n * 8;
  } else {
    double dst_numel = (double)p->dst_extent;
    if (p->dst.tensor < (int)plan->input_count)
      dst_numel = (double)xr_spec_numel(plan->inputs[p->dst.tensor]);
    double touched = fmin(n, dst_numel);
    bytes += 2.0 * (double)(p->copy_src >= 0 ? p->copy_numel : 0) * es;
    bytes += src * es + touched * es * (p->reduce == XR_SC_ASSIGN ? 1 : 2);
    if (p->reduce != XR_SC_ASSIGN)
      plan->flops = n * (p->reduce == XR_SC_ADD && p->alpha != 1 ? 2 : 1);
  }
  plan->bytes = bytes;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  xr_scatter_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", plan->op->name);
  plan->problem = p;
  p->include_self = true;
  p->alpha = 1;
  p->copy_src = p->mask = p->count_dim = -1;
  p->src.tensor = p->dst.tensor = -1;
  p->mask_want = -1;
  p->numel = -1;
  const char *base = base_name(plan->op);
  xr_status_t st;
  if (!strcmp(base, "gather"))
    st = analyze_gather(plan, p, false);
  else if (!strcmp(base, "take"))
    st = analyze_gather(plan, p, true);
  else if (name_starts(base, "scatter"))
    st = analyze_scatter(plan, p, base);
  else if (!strcmp(base, "index"))
    st = analyze_index(plan, p);
  else if (name_starts(base, "index_put") || !strcmp(base, "_index_put_impl_"))
    st = analyze_index_put(plan, p, base);
  else if (name_starts(base, "index_"))
    st = analyze_index_op(plan, p, base);
  else if (name_starts(base, "masked_"))
    st = analyze_masked(plan, p, base);
  else
    st = analyze_nonzero(plan, p, base);
  if (st != XR_OK) return st;
  if (p->numel < 0) p->numel = numel_of(p->rank, p->shape);
  /* dst's storage, relative to its view */
  int64_t dst_shape[XR_MAX_RANK], dst_strides[XR_MAX_RANK];
  int dst_rank;
  if (p->dst.tensor < (int)plan->input_count) {
    const xr_tensor_spec_t *t = plan->inputs[p->dst.tensor];
    dst_rank = t->rank;
    memcpy(dst_shape, t->shape, sizeof(int64_t) * (size_t)t->rank);
  } else {
    dst_rank = plan->returns[0].rank;
    memcpy(dst_shape, plan->returns[0].shape, sizeof(int64_t) * (size_t)dst_rank);
  }
  strides_of(plan, p->dst.tensor, dst_strides);
  p->dst_extent = numel_of(dst_rank, dst_shape) ? 1 : 0;
  for (int d = 0; p->dst_extent && d < dst_rank; d++)
    p->dst_extent += (dst_shape[d] - 1) * dst_strides[d];
  /* GATHER and NONZERO walk their result: dst's own strides (contiguous, or out='s) */
  if (p->kind != XR_SC_SCATTER) strides_of(plan, p->dst.tensor, p->dst.strides);
  if (p->numel > 0)
    for (int i = 0; i < p->slot_count; i++)
      if (p->slots[i].numel == 0 && p->slots[i].source != XR_SC_IOTA)
        return xr_plan_error(plan, "cannot index into an empty dimension");
  bool accumulate = p->kind == XR_SC_SCATTER && p->reduce != XR_SC_ASSIGN;
  if (accumulate && p->dst.dtype == XR_DTYPE_BOOL)
    return unimplemented(plan, "reductions into a bool tensor are not implemented");
  if (accumulate && !xr_dtype_is_floating(p->dst.dtype) && xr_dtype_size(p->dst.dtype) > 8)
    return unimplemented(plan, "%s is not implemented", xr_dtype_name(p->dst.dtype));
  if (xr_dtype_size(p->dst.dtype) > 8 || xr_dtype_size(p->dst.dtype) == 0)
    return unimplemented(plan, "%s is not implemented", xr_dtype_name(p->dst.dtype));
  cost(plan, p);
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* CPU reference: one serial pass in row-major order of the iteration; reductions in double    */
/* (int64 for integers, wrapping) per destination element, rounded once                        */

typedef struct ref_state {
  const xr_scatter_problem_t *p;
  char *dst;
  const char *src, *copy, *mask;
  const char *index[XR_SC_MAX_SLOTS];
  int64_t *positions, count;
  double *acc;
  int64_t *iacc, *touched;
} ref_state_t;

static void ref_release(void *state) {
  ref_state_t *s = state;
  if (!s) return;
  free(s->positions);
  free(s->acc);
  free(s->iacc);
  free(s->touched);
  free(s);
}

const char *xr_sc_host_at(const xr_tensor_t *t, xr_status_t *st) {
  void *base = NULL;
  if (*st == XR_OK) *st = xr_tensor_host(t, &base);
  return *st == XR_OK ? (const char *)base + t->offset * (int64_t)xr_dtype_size(t->dtype) : NULL;
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const xr_scatter_problem_t *p = plan->problem;
  ref_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->p = p;
  xr_status_t st = XR_OK;
  s->dst = (char *)xr_sc_host_at(&tensors[p->dst.tensor], &st);
  if (p->src.tensor >= 0) s->src = xr_sc_host_at(&tensors[p->src.tensor], &st);
  if (p->copy_src >= 0) s->copy = xr_sc_host_at(&tensors[p->copy_src], &st);
  if (p->mask >= 0) s->mask = xr_sc_host_at(&tensors[p->mask], &st);
  for (int i = 0; i < p->slot_count; i++)
    if (p->slots[i].source == XR_SC_INDEX)
      s->index[i] = xr_sc_host_at(&tensors[p->slots[i].tensor], &st);
  size_t extent = (size_t)(p->dst_extent > 0 ? p->dst_extent : 1);
  if (st == XR_OK && p->mask >= 0 &&
      !(s->positions = malloc(sizeof(int64_t) * (size_t)(p->mask_numel ? p->mask_numel : 1))))
    st = XR_RESOURCE_EXHAUSTED;
  if (st == XR_OK && p->kind == XR_SC_SCATTER && p->reduce != XR_SC_ASSIGN) {
    s->touched = calloc(extent, sizeof *s->touched);
    if (xr_dtype_is_floating(p->dst.dtype))
      s->acc = malloc(extent * sizeof *s->acc);
    else
      s->iacc = malloc(extent * sizeof *s->iacc);
    if (!s->touched || (!s->acc && !s->iacc)) st = XR_RESOURCE_EXHAUSTED;
  }
  if (st != XR_OK) {
    ref_release(s);
    return st == XR_RESOURCE_EXHAUSTED ? xr_error(st, "out of memory preparing %s", plan->op->name)
                                       : st;
  }
  *out_state = s;
  return XR_OK;
}

static int64_t offset_of(int rank, const int64_t *shape, const int64_t *strides, int64_t linear) {
  int64_t off = 0;
  for (int d = rank - 1; d >= 0; d--) {
    off += (linear % shape[d]) * strides[d];
    linear /= shape[d];
  }
  return off;
}

static double ref_combine(xr_sc_reduce_t r, double a, double c) {
  switch (r) {
    case XR_SC_MUL: return a * c;
    case XR_SC_MAX: return isnan(a) || isnan(c) ? NAN : a > c ? a : c;
    case XR_SC_MIN: return isnan(a) || isnan(c) ? NAN : a < c ? a : c;
    default: return a + c; /* ADD (c holds alpha * src), MEAN */
  }
}

static int64_t ref_combine_int(xr_sc_reduce_t r, int64_t a, int64_t c) {
  switch (r) {
    case XR_SC_MUL: return (int64_t)((uint64_t)a * (uint64_t)c);
    case XR_SC_MAX: return a > c ? a : c;
    case XR_SC_MIN: return a < c ? a : c;
    default: return (int64_t)((uint64_t)a + (uint64_t)c);
  }
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static void ref_run(void *context) {
  ref_state_t *s = context;
  const xr_scatter_problem_t *p = s->p;
  xr_dtype_t dt = p->dst.dtype;
  size_t es = xr_dtype_size(dt);
  for (int64_t e = 0; e < p->copy_numel && p->copy_src >= 0; e++)
    memcpy(s->dst + offset_of(p->copy_rank, p->copy_shape, p->copy_dst_strides, e) * (int64_t)es,
           s->copy + offset_of(p->copy_rank, p->copy_shape, p->copy_src_strides, e) * (int64_t)es,
           es);
  s->count = 0;
  for (int64_t e = 0; p->mask >= 0 && e < p->mask_numel; e++)
    if (xr_sc_element_nonzero(s->mask, p->mask_dtype,
                              offset_of(p->mask_rank, p->mask_shape, p->mask_strides, e)))
      s->positions[s->count++] = e;
  if (p->kind == XR_SC_NONZERO) {
    for (int64_t k = 0; k < p->shape[0]; k++)
      for (int64_t d = 0; d < p->shape[1]; d++) {
        int64_t v = p->fill;
        if (k < s->count) {
          int64_t rest = s->positions[k];
          for (int64_t j = p->shape[1] - 1; j > d; j--) rest /= p->mask_shape[j];
          v = rest % p->mask_shape[d];
        }
        ((int64_t *)s->dst)[k * p->dst.strides[0] + d * p->dst.strides[1]] = v;
      }
    return;
  }
  bool accumulate = p->kind == XR_SC_SCATTER && p->reduce != XR_SC_ASSIGN;
  bool floating = xr_dtype_is_floating(dt);
  if (accumulate) memset(s->touched, 0, sizeof(int64_t) * (size_t)p->dst_extent);
  for (int64_t x = 0; x < p->numel; x++) {
    int64_t coord[XR_MAX_RANK] = {0}, rest = x, dst = 0, src = 0;
    for (int d = p->rank - 1; d >= 0; d--) coord[d] = rest % p->shape[d], rest /= p->shape[d];
    if (p->count_dim >= 0 && coord[p->count_dim] >= s->count) {
      if (p->kind == XR_SC_GATHER) {
        for (int d = 0; d < p->rank; d++) dst += coord[d] * p->dst.strides[d];
        memset(s->dst + dst * (int64_t)es, 0, es);
      }
      continue;
    }
    for (int d = 0; d < p->rank; d++) {
      dst += coord[d] * p->dst.strides[d];
      src += coord[d] * p->src.strides[d];
    }
    for (int i = 0; i < p->slot_count; i++) {
      const xr_sc_slot_t *sl = &p->slots[i];
      int64_t at = 0, v;
      for (int d = 0; d < p->rank; d++) at += coord[d] * sl->strides[d];
      if (sl->source == XR_SC_INDEX)
        v = xr_sc_load_int(s->index[i], sl->dtype, at);
      else if (sl->source == XR_SC_POSITIONS)
        v = s->positions[at];
      else
        v = at; /* IOTA */
      int64_t off = xr_sc_unravel(sl, xr_sc_clamp(v, sl->numel));
      if (sl->on_src)
        src += off;
      else
        dst += off;
    }
    if (!accumulate) {
      if (p->src_scalar)
        memcpy(s->dst + dst * (int64_t)es, &p->pattern, es);
      else
        memcpy(s->dst + dst * (int64_t)es, s->src + src * (int64_t)es, es);
      continue;
    }
    int64_t n = s->touched[dst]++;
    if (floating) {
      double c = p->src_scalar ? p->value : xr_load_element(s->src, dt, src);
      if (p->reduce == XR_SC_ADD) c *= p->alpha;
      if (n == 0) {
        s->acc[dst] =
            p->include_self ? ref_combine(p->reduce, xr_load_element(s->dst, dt, dst), c) : c;
      } else {
        s->acc[dst] = ref_combine(p->reduce, s->acc[dst], c);
      }
    } else {
      int64_t c = p->src_scalar ? p->ivalue : xr_sc_load_int(s->src, dt, src);
      if (p->reduce == XR_SC_ADD) c = (int64_t)((uint64_t)c * (uint64_t)(int64_t)p->alpha);
      if (n == 0) {
        s->iacc[dst] =
            p->include_self ? ref_combine_int(p->reduce, xr_sc_load_int(s->dst, dt, dst), c) : c;
      } else {
        s->iacc[dst] = ref_combine_int(p->reduce, s->iacc[dst], c);
      }
    }
  }
  for (int64_t o = 0; accumulate && o < p->dst_extent; o++) {
    int64_t n = s->touched[o];
    if (!n) continue;
    int64_t count = n + (p->include_self ? 1 : 0);
    if (floating) {
      double v = s->acc[o];
      if (p->reduce == XR_SC_MEAN) v /= (double)count;
      xr_store_element(s->dst, dt, o, v);
    } else {
      int64_t v = xr_sc_wrap_int(s->iacc[o], dt);
      if (p->reduce == XR_SC_MEAN) v = floor_div(v, count);
      xr_sc_store_int(s->dst, dt, o, v);
    }
  }
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  return xr_hal_stream_enqueue_host(stream, ref_run, state);
}

static const xr_kernel_impl_t ref_scatter = {
    .name = "ref.scatter",
    .driver = "cpu",
    .reference = true,
    .prepare = ref_prepare,
    .enqueue = ref_enqueue,
    .release = ref_release,
};

/* ------------------------------------------------------------------------------------------ */
/* initializers                                                                                */

enum { SHUFFLE_MAX = 1 << 24 };

/* Index tensor `b` over [0, n): a shuffled cycle (a random permutation of [0, n), then another,
 * ...) along its row-major elements, so that indices are distinct wherever the tensor has at
 * most n elements and evenly repeated beyond; `wild`: uniform in [-n - 2, n + 2), negative and
 * out-of-range values included. */
static void fill_indices(xr_init_context_t *c, int b, int64_t n, bool wild, uint64_t *seed) {
  const xr_tensor_spec_t *t = c->plan->inputs[b];
  int64_t total = xr_spec_numel(t);
  int64_t *perm = !wild && n <= SHUFFLE_MAX ? malloc(sizeof(int64_t) * (size_t)n) : NULL;
  for (int64_t e = 0; e < total; e++) {
    int64_t v;
    if (wild) {
      v = (int64_t)(xr_rng_next(seed) % (uint64_t)(2 * n + 4)) - n - 2;
    } else if (perm) {
      if (e % n == 0) xr_init_shuffle(perm, n, total - e < n ? total - e : n, seed);
      v = perm[e % n];
    } else {
      v = (int64_t)(xr_rng_next(seed) % (uint64_t)n);
    }
    int64_t at = t->storage_offset + offset_of(t->rank, t->shape, t->strides, e);
    xr_sc_store_int(c->host[b], t->dtype, at, v);
  }
  free(perm);
}

/* Exactly `want` set elements in mask `b` (its own view), at random places; for nonzero's
 * input, the chosen elements keep their values (1 where they were 0) and the rest become 0. */
static void fill_mask(xr_init_context_t *c, int b, int64_t want, bool keep_values, uint64_t *seed) {
  const xr_tensor_spec_t *t = c->plan->inputs[b];
  int64_t total = xr_spec_numel(t);
  if (want > total) want = total;
  int64_t *perm =
      total <= SHUFFLE_MAX ? malloc(sizeof(int64_t) * (size_t)(total ? total : 1)) : NULL;
  bool *set = calloc((size_t)(total ? total : 1), 1);
  if (!set) {
    free(perm);
    return;
  }
  if (perm) {
    xr_init_shuffle(perm, total, want, seed);
    for (int64_t i = 0; i < want; i++) set[perm[i]] = true;
  } else {
    for (int64_t e = 0; e < total; e++)
      set[e] = xr_rng_uniform(seed) * (double)total < (double)want;
  }
  for (int64_t e = 0; e < total; e++) {
    int64_t at = t->storage_offset + offset_of(t->rank, t->shape, t->strides, e);
    if (!set[e])
      xr_store_element(c->host[b], t->dtype, at, 0);
    else if (!keep_values || !xr_sc_element_nonzero(c->host[b], t->dtype, at))
      xr_store_element(c->host[b], t->dtype, at, 1);
  }
  free(perm);
  free(set);
}

static xr_status_t init_scatter(xr_init_context_t *c) {
  const xr_scatter_problem_t *p = c->plan->problem;
  bool wild = c->params && !strcmp(c->params, "wild");
  uint64_t seed = c->seed;
  bool filled = false;
  for (int i = 0; i < p->slot_count; i++) {
    const xr_sc_slot_t *s = &p->slots[i];
    if (s->source != XR_SC_INDEX || c->has_data[s->tensor] || s->numel < 1) continue;
    bool again = false;
    for (int j = 0; j < i; j++)
      again |= p->slots[j].source == XR_SC_INDEX && p->slots[j].tensor == s->tensor;
    if (again) continue;
    fill_indices(c, s->tensor, s->numel, wild, &seed);
    filled = true;
  }
  if (filled)
    xr_init_describe(c, wild ? "indices uniform in [-n-2, n+2) (wrapped, then clamped)"
                             : "indices a shuffled cycle over [0, n): distinct where they fit");
  if (p->mask >= 0 && !c->has_data[p->mask] && p->mask_want >= 0) {
    int64_t own = xr_spec_numel(c->plan->inputs[p->mask]);
    int64_t factor = own > 0 ? p->mask_numel / own : 1;
    int64_t want = p->mask_want / (factor > 0 ? factor : 1);
    fill_mask(c, p->mask, want, p->kind == XR_SC_NONZERO, &seed);
    char text[128];
    snprintf(text, sizeof text, "%lld set mask elements (the recorded count)", (long long)want);
    xr_init_describe(c, text);
  }
  return XR_OK;
}

#define XR_SC_INIT(name) \
  { "aten::" name, init_scatter }
static const struct xr_op_initializer scatter_initializers[] = {
    XR_SC_INIT("gather"),         XR_SC_INIT("take"),
    XR_SC_INIT("scatter"),        XR_SC_INIT("scatter_"),
    XR_SC_INIT("scatter_add"),    XR_SC_INIT("scatter_add_"),
    XR_SC_INIT("scatter_reduce"), XR_SC_INIT("scatter_reduce_"),
    XR_SC_INIT("index_add"),      XR_SC_INIT("index_add_"),
    XR_SC_INIT("index_copy"),     XR_SC_INIT("index_copy_"),
    XR_SC_INIT("index_fill"),     XR_SC_INIT("index_fill_"),
    XR_SC_INIT("index"),          XR_SC_INIT("index_put"),
    XR_SC_INIT("index_put_"),     XR_SC_INIT("_index_put_impl_"),
    XR_SC_INIT("masked_scatter"), XR_SC_INIT("masked_scatter_"),
    XR_SC_INIT("masked_select"),  XR_SC_INIT("nonzero"),
    XR_SC_INIT("nonzero_static"), {NULL, NULL},
};
#undef XR_SC_INIT

static const xr_kernel_impl_t *const scatter_impls[] = {
    &xr_cpu_scatter, &xr_opencl_scatter, &xr_gpu_scatter, &ref_scatter, NULL,
};

const xr_op_family_t xr_family_scatter = {
    .name = "scatter",
    .op_names = scatter_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = scatter_impls,
    .initializers = scatter_initializers,
};
