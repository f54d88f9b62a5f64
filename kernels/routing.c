/* The routing family (kernels/routing.h): triton_kernels' TopK and SortTokens, the MoE routing
 * of GPT-OSS on ROCm. Planning, the initializers, and ref.routing, the plain-C reference:
 *
 * TopK: per row of x, the k columns of largest value (ties: the smaller column first; values
 * ordered by their bits' keys, so -0 < +0 and a NaN above +inf, as triton_kernels' packed keys
 * order them), returned in ascending column order; y_vals their values, or with apply_softmax
 * the softmax over the k of them (fp32, exp(v - max) / sum, summed in column order) rounded to
 * x's dtype; bitmatrix bit c % 32 of word c / 32 set per selected column c.
 *
 * SortTokens: the n k selections (flat position p = t k + j, expert expt_indx[t, j]) sorted by
 * expert, stably: combine_indx[i] the position at sorted place i, dispatch_indx[p] its inverse,
 * gate_scal[i] = expt_scal at combine_indx[i]; hist the count per expert, token_offs_raw its
 * exclusive prefix sum (E + 1 values), token_offs_pad[b] that of ceil(hist / (16 << b)), and
 * block_pid_map[b] for tile c of expert e at token_offs_pad[b][e] + c the int32 e | c << 16,
 * -1 elsewhere. An expert id outside [0, E) is not routed: counted nowhere, dispatch_indx -1,
 * the sorted places past the routed ones combine_indx -1 and gate_scal 0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/family.h"
#include "kernels/initializer.h"
#include "kernels/routing.h"

static const char *const routing_ops[] = {"TopK", "SortTokens", NULL};

static bool float_dtype(xr_dtype_t d) {
  return d == XR_DTYPE_F32 || d == XR_DTYPE_F16 || d == XR_DTYPE_BF16;
}

static bool id_dtype(xr_dtype_t d) {
  return d == XR_DTYPE_I16 || d == XR_DTYPE_I32 || d == XR_DTYPE_I64;
}

static xr_status_t analyze_topk(xr_op_plan_t *plan, xr_routing_problem_t *p) {
  const xr_op_t *op = plan->op;
  xr_status_t st;
  int64_t dim = 1;
  p->softmax = true;
  if ((st = xr_arg_tensor(plan, 0, "x", true, &p->x)) || (st = xr_arg_int(op, 1, "k", true, &p->k)) ||
      (st = xr_arg_bool(op, 2, "apply_softmax", false, &p->softmax)) ||
      (st = xr_arg_int(op, 3, "dim", false, &dim)))
    return st;
  if (plan->input_count != 1)
    return xr_plan_error(plan, "y_indx: user-provided indices are not supported (only x may be a "
                               "tensor; %zu tensors given)", plan->input_count);
  const xr_value_t *rb = xr_op_arg(op, 4, "return_bitmatrix");
  if (rb && rb->kind == XR_VALUE_BOOL && !rb->as.b)
    return xr_plan_error(plan, "return_bitmatrix: false is not supported (triton_kernels "
                               "requires it)");
  const xr_tensor_spec_t *x = plan->inputs[p->x];
  if (x->rank != 2)
    return xr_plan_error(plan, "x: expected a 2-D tensor [tokens, experts], got %d-D", x->rank);
  if (!float_dtype(x->dtype))
    return xr_plan_error(plan, "x: unsupported dtype %s (f32, f16 or bf16)",
                         xr_dtype_name(x->dtype));
  if (dim != 1 && dim != -1)
    return xr_plan_error(plan, "dim: %lld is not supported (the expert dim, 1)", (long long)dim);
  p->rows = x->shape[0], p->cols = x->shape[1];
  for (int i = 5; i < 8; i++) { /* n_rows (position 5 or 6 by version; y_indx is a tensor) */
    const xr_value_t *v = xr_op_arg(op, i, i == 6 ? "n_rows" : NULL);
    if (v && v->kind == XR_VALUE_INT && v->as.i != p->rows)
      return xr_plan_error(plan, "n_rows: %lld of %lld rows is not supported (all rows only)",
                           (long long)v->as.i, (long long)p->rows);
  }
  if (p->cols < 1 || p->cols >= 32768)
    return xr_plan_error(plan, "x: %lld experts is out of range [1, 32768)", (long long)p->cols);
  if (p->k < 1 || p->k > p->cols)
    return xr_plan_error(plan, "k: %lld is out of range [1, %lld] (x's experts)",
                         (long long)p->k, (long long)p->cols);
  p->dtype = x->dtype;
  p->x_rs = x->strides[0], p->x_cs = x->strides[1];
  p->words = (p->cols + 31) / 32;
  p->vals = (int)plan->input_count, p->indx = p->vals + 1, p->bits = p->vals + 2;
  plan->return_count = 3;
  xr_desc_set(&plan->returns[0], p->dtype, 2, (int64_t[]){p->rows, p->k});
  xr_desc_set(&plan->returns[1], XR_DTYPE_I16, 2, (int64_t[]){p->rows, p->k});
  xr_desc_set(&plan->returns[2], XR_DTYPE_U32, 2, (int64_t[]){p->rows, p->words});
  double n = (double)p->rows, es = (double)xr_dtype_size(p->dtype);
  /* A compare per element of x; with the softmax, per selected value a subtract, an exp, an add
   * and a divide. */
  plan->flops = n * (double)p->cols + (p->softmax ? 4.0 * n * (double)p->k : 0.0);
  plan->bytes = xr_spec_distinct_numel(x) * es + n * (double)p->k * (es + 2.0) +
                4.0 * n * (double)p->words;
  return XR_OK;
}

static xr_status_t analyze_sort(xr_op_plan_t *plan, xr_routing_problem_t *p) {
  const xr_op_t *op = plan->op;
  xr_status_t st;
  if ((st = xr_arg_tensor(plan, 0, "expt_scal", true, &p->scal)) ||
      (st = xr_arg_tensor(plan, 1, "expt_indx", true, &p->ids)) ||
      (st = xr_arg_int(op, 2, "n_expts_tot", true, &p->cols)))
    return st;
  const xr_tensor_spec_t *s = plan->inputs[p->scal], *ids = plan->inputs[p->ids];
  if (s->rank != 2)
    return xr_plan_error(plan, "expt_scal: expected a 2-D tensor [tokens, k], got %d-D", s->rank);
  if (ids->rank != 2 || ids->shape[0] != s->shape[0] || ids->shape[1] != s->shape[1])
    return xr_plan_error(plan, "expt_indx: expected expt_scal's shape [%lld, %lld]",
                         (long long)s->shape[0], (long long)s->shape[1]);
  if (!xr_dtype_is_floating(s->dtype) || xr_dtype_size(s->dtype) < 2)
    return xr_plan_error(plan, "expt_scal: unsupported dtype %s (a float type)",
                         xr_dtype_name(s->dtype));
  if (!id_dtype(ids->dtype))
    return xr_plan_error(plan, "expt_indx: unsupported dtype %s (int16, int32 or int64)",
                         xr_dtype_name(ids->dtype));
  if (p->cols < 1 || p->cols >= 65536)
    return xr_plan_error(plan, "n_expts_tot: %lld is out of range [1, 65536)",
                         (long long)p->cols);
  p->rows = s->shape[0], p->k = s->shape[1];
  int64_t gates = p->rows * p->k;
  if (gates > (int64_t)1 << 30)
    return xr_plan_error(plan, "expt_indx: %lld selections do not fit the int32 indices",
                         (long long)gates);
  p->scal_dtype = s->dtype, p->ids_dtype = ids->dtype;
  p->scal_rs = s->strides[0], p->scal_cs = s->strides[1];
  p->ids_rs = ids->strides[0], p->ids_cs = ids->strides[1];
  p->tiles = xr_routing_max_tiles(p->cols, gates);
  int r = (int)plan->input_count;
  p->hist = r, p->combine = r + 1, p->dispatch = r + 2, p->gate = r + 3;
  p->offs_raw = r + 4, p->offs_pad = r + 5, p->pid_map = r + 6;
  plan->return_count = 7;
  int64_t E = p->cols, B = XR_ROUTING_BLOCK_SIZES;
  xr_desc_set(&plan->returns[0], XR_DTYPE_I32, 1, (int64_t[]){E});
  xr_desc_set(&plan->returns[1], XR_DTYPE_I32, 1, (int64_t[]){gates});
  xr_desc_set(&plan->returns[2], XR_DTYPE_I32, 1, (int64_t[]){gates});
  xr_desc_set(&plan->returns[3], s->dtype, 1, (int64_t[]){gates});
  xr_desc_set(&plan->returns[4], XR_DTYPE_I32, 1, (int64_t[]){E + 1});
  xr_desc_set(&plan->returns[5], XR_DTYPE_I32, 2, (int64_t[]){B, E + 1});
  xr_desc_set(&plan->returns[6], XR_DTYPE_I32, 2, (int64_t[]){B, p->tiles});
  /* Integer work only: no FLOPs. Bytes: both inputs read once; every result written once. */
  double g = (double)gates, ses = (double)xr_dtype_size(s->dtype);
  plan->flops = 0;
  plan->bytes = xr_spec_distinct_numel(s) * ses +
                xr_spec_distinct_numel(ids) * (double)xr_dtype_size(ids->dtype) +
                4.0 * (double)E /* hist */ + 8.0 * g /* combine, dispatch */ + g * ses +
                4.0 * (double)(E + 1) * (1 + B) /* token offsets */ +
                4.0 * (double)(B * p->tiles) /* block_pid_map */;
  return XR_OK;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  xr_routing_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", plan->op->name);
  plan->problem = p;
  p->op = strcmp(plan->op->name, "SortTokens") ? XR_ROUTING_TOPK : XR_ROUTING_SORT;
  return p->op == XR_ROUTING_TOPK ? analyze_topk(plan, p) : analyze_sort(plan, p);
}

/* ------------------------------------------------------------------------------------------ */
/* ref.routing                                                                                 */

typedef struct ref_pick {
  uint32_t key;
  int64_t col;
} ref_pick_t;

static int pick_order(const void *a, const void *b) { /* selection order first */
  const ref_pick_t *x = a, *y = b;
  if (xr_routing_before(x->key, x->col, y->key, y->col)) return -1;
  return xr_routing_before(y->key, y->col, x->key, x->col) ? 1 : 0;
}

static int col_order(const void *a, const void *b) {
  const ref_pick_t *x = a, *y = b;
  return (x->col > y->col) - (x->col < y->col);
}

static uint32_t load_bits(const void *base, xr_dtype_t dt, int64_t i) {
  return dt == XR_DTYPE_F32 ? ((const uint32_t *)base)[i] : ((const uint16_t *)base)[i];
}

/* Each row: every column's key sorted into selection order, the first k re-sorted by column. */
static void ref_topk(const xr_routing_problem_t *p, const xr_tensor_t *t) {
  void *x, *vals, *indx, *bits;
  if (xr_tensor_host(&t[p->x], &x) || xr_tensor_host(&t[p->vals], &vals) ||
      xr_tensor_host(&t[p->indx], &indx) || xr_tensor_host(&t[p->bits], &bits))
    return;
  int nbits = p->dtype == XR_DTYPE_F32 ? 32 : 16;
  ref_pick_t *row = malloc(sizeof *row * (size_t)p->cols);
  if (!row) return;
  for (int64_t r = 0; r < p->rows; r++) {
    int64_t base = t[p->x].offset + r * p->x_rs;
    for (int64_t c = 0; c < p->cols; c++)
      row[c] = (ref_pick_t){xr_routing_key(load_bits(x, p->dtype, base + c * p->x_cs), nbits), c};
    qsort(row, (size_t)p->cols, sizeof *row, pick_order);
    qsort(row, (size_t)p->k, sizeof *row, col_order);
    float m = 0, sum = 0; /* the max in column order (a NaN makes every value NaN anyway) */
    for (int64_t j = 0; j < p->k; j++) {
      float v = (float)xr_load_element(x, p->dtype, base + row[j].col * p->x_cs);
      if (j == 0 || v > m) m = v;
    }
    for (int64_t j = 0; j < p->k; j++)
      sum += expf((float)xr_load_element(x, p->dtype, base + row[j].col * p->x_cs) - m);
    uint32_t *w = (uint32_t *)bits + r * p->words;
    for (int64_t i = 0; i < p->words; i++) w[i] = 0;
    for (int64_t j = 0; j < p->k; j++) {
      int64_t c = row[j].col;
      float v = (float)xr_load_element(x, p->dtype, base + c * p->x_cs);
      xr_store_element(vals, p->dtype, r * p->k + j, p->softmax ? expf(v - m) / sum : v);
      ((int16_t *)indx)[r * p->k + j] = (int16_t)c;
      w[c / 32] |= 1u << (c % 32);
    }
  }
  free(row);
}

/* Expert by expert, the positions routed to it in order. */
static void ref_sort(const xr_routing_problem_t *p, const xr_tensor_t *t) {
  void *scal, *ids, *hist, *combine, *dispatch, *gate, *raw, *pad, *map;
  if (xr_tensor_host(&t[p->scal], &scal) || xr_tensor_host(&t[p->ids], &ids) ||
      xr_tensor_host(&t[p->hist], &hist) || xr_tensor_host(&t[p->combine], &combine) ||
      xr_tensor_host(&t[p->dispatch], &dispatch) || xr_tensor_host(&t[p->gate], &gate) ||
      xr_tensor_host(&t[p->offs_raw], &raw) || xr_tensor_host(&t[p->offs_pad], &pad) ||
      xr_tensor_host(&t[p->pid_map], &map))
    return;
  const int64_t E = p->cols, gates = p->rows * p->k;
  const size_t es = xr_dtype_size(p->scal_dtype);
  int32_t *h = hist, *ci = combine, *di = dispatch, *offs = raw, *tp = pad, *pm = map;
  for (int64_t i = 0; i < gates; i++) di[i] = -1;
  int64_t place = 0;
  for (int64_t e = 0; e < E; e++) {
    h[e] = 0;
    for (int64_t i = 0; i < gates; i++) {
      int64_t r = i / p->k, j = i % p->k;
      if (xr_routing_load_id(ids, p->ids_dtype, t[p->ids].offset + r * p->ids_rs + j * p->ids_cs) != e)
        continue;
      h[e]++;
      ci[place] = (int32_t)i, di[i] = (int32_t)place;
      memcpy((char *)gate + (size_t)place * es,
             (const char *)scal + (size_t)(t[p->scal].offset + r * p->scal_rs + j * p->scal_cs) * es,
             es);
      place++;
    }
  }
  for (int64_t i = place; i < gates; i++) {
    ci[i] = -1;
    xr_store_element(gate, p->scal_dtype, i, 0);
  }
  offs[0] = 0;
  for (int64_t e = 0; e < E; e++) offs[e + 1] = offs[e] + h[e];
  for (int b = 0; b < XR_ROUTING_BLOCK_SIZES; b++) {
    int64_t bm = (int64_t)XR_ROUTING_BLOCK_M_MIN << b;
    int32_t *row = tp + b * (E + 1), *ids_of = pm + b * p->tiles;
    for (int64_t c = 0; c < p->tiles; c++) ids_of[c] = -1;
    row[0] = 0;
    for (int64_t e = 0; e < E; e++) {
      int64_t n = (h[e] + bm - 1) / bm;
      for (int64_t c = 0; c < n; c++)
        if (row[e] + c < p->tiles) ids_of[row[e] + c] = (int32_t)(e | c << 16);
      row[e + 1] = (int32_t)(row[e] + n);
    }
  }
}

static void ref_run(void *context) {
  xr_host_call_t *call = context;
  const xr_routing_problem_t *p = call->plan->problem;
  if (p->op == XR_ROUTING_TOPK)
    ref_topk(p, call->tensors);
  else
    ref_sort(p, call->tensors);
}

static xr_status_t ref_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  return xr_host_call_create(plan, tensors, (xr_host_call_t **)out_state);
}

static xr_status_t ref_enqueue(void *state, xr_hal_stream_t *stream) {
  return xr_hal_stream_enqueue_host(stream, ref_run, state);
}

static const xr_kernel_impl_t ref_routing = {
    .name = "ref.routing",
    .driver = "cpu",
    .reference = true,
    .prepare = ref_prepare,
    .enqueue = ref_enqueue,
    .release = free,
};

/* ------------------------------------------------------------------------------------------ */
/* initializers                                                                                */

/* SortTokens' expt_indx as TopK leaves it: per token, k distinct experts of [0, E) (cycling
 * when k > E) in ascending order; "wild": uniform in [-2, E + 2), ids no expert has included. */
static xr_status_t init_sort(xr_init_context_t *c) {
  const xr_routing_problem_t *p = c->plan->problem;
  if (c->has_data[p->ids] || p->rows * p->k == 0) return XR_OK;
  bool wild = c->params && !strcmp(c->params, "wild");
  if (c->params && !wild)
    return xr_error(XR_INVALID_ARGUMENT, "SortTokens: --init policy '%s' is unknown (wild)",
                    c->params);
  const xr_tensor_spec_t *t = c->plan->inputs[p->ids];
  int64_t *perm = malloc(sizeof(int64_t) * (size_t)(p->cols + p->k));
  if (!perm) return xr_error(XR_RESOURCE_EXHAUSTED, "SortTokens: out of memory initializing");
  uint64_t seed = c->seed;
  for (int64_t r = 0; r < p->rows; r++) {
    int64_t *row = perm + p->cols;
    if (wild) {
      for (int64_t j = 0; j < p->k; j++)
        row[j] = (int64_t)(xr_rng_next(&seed) % (uint64_t)(p->cols + 4)) - 2;
    } else {
      xr_init_shuffle(perm, p->cols, p->k, &seed);
      for (int64_t j = 0; j < p->k; j++) row[j] = perm[j % p->cols];
      for (int64_t j = 1; j < p->k; j++) /* ascending, as TopK returns them */
        for (int64_t i = j; i > 0 && row[i - 1] > row[i]; i--) {
          int64_t v = row[i];
          row[i] = row[i - 1], row[i - 1] = v;
        }
    }
    for (int64_t j = 0; j < p->k; j++)
      xr_store_element(c->host[p->ids], t->dtype,
                       t->storage_offset + r * t->strides[0] + j * t->strides[1], (double)row[j]);
  }
  free(perm);
  xr_init_describe(c, wild ? "expert ids uniform in [-2, E + 2): some routed nowhere"
                           : "per token k distinct expert ids of [0, E), ascending");
  return XR_OK;
}

/* TopK's x keeps the default fill; "ties": integers in [-2, 2], so that rows hold many equal
 * values and the smaller column must win. */
static xr_status_t init_topk(xr_init_context_t *c) {
  const xr_routing_problem_t *p = c->plan->problem;
  if (!c->params) return XR_OK;
  if (strcmp(c->params, "ties"))
    return xr_error(XR_INVALID_ARGUMENT, "TopK: --init policy '%s' is unknown (ties)", c->params);
  if (c->has_data[p->x]) return XR_OK;
  const xr_tensor_spec_t *t = c->plan->inputs[p->x];
  uint64_t seed = c->seed;
  for (int64_t r = 0; r < p->rows; r++)
    for (int64_t j = 0; j < p->cols; j++)
      xr_store_element(c->host[p->x], t->dtype,
                       t->storage_offset + r * t->strides[0] + j * t->strides[1],
                       (double)(int64_t)(xr_rng_next(&seed) % 5) - 2.0);
  xr_init_describe(c, "x integers in [-2, 2]: many ties");
  return XR_OK;
}

static const struct xr_op_initializer routing_initializers[] = {
    {"SortTokens", init_sort},
    {"TopK", init_topk},
    {NULL, NULL},
};

static const xr_kernel_impl_t *const routing_impls[] = {
    &xr_routing_cpu,
    &xr_routing_opencl,
    &xr_routing_gpu,
    &ref_routing,
    NULL,
};

const xr_op_family_t xr_family_routing = {
    .name = "routing",
    .op_names = routing_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = routing_impls,
    .initializers = routing_initializers,
};
