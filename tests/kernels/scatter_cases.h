/* The scatter family's cases (gather, take, scatter*, index_add/copy/fill, index.Tensor,
 * index_put, masked_scatter, masked_select, nonzero), written once and run per device through
 * the engine with --check against the CPU reference on every driver (SCATTER_MATRIX at the
 * end, the scatter_matrix_<driver> targets). Index tensors come from the family's
 * initializer (a shuffled cycle over the indexed range: distinct where they fit, repeated
 * evenly beyond, so longer index tensors accumulate duplicates); cases run with "wild"
 * indices too (uniform in [-n-2, n+2): negative ones wrap, out-of-range ones clamp). */
#ifndef XR_TESTS_KERNELS_SCATTER_CASES_H
#define XR_TESTS_KERNELS_SCATTER_CASES_H

#include "tests/kernels/bundle_text.h"

typedef struct sc_case {
  text_t args, kwargs;
  text_t v[8];
  int nv;
} sc_case_t;

/* A fresh case (one static instance: cases are built and run one at a time). */
static inline sc_case_t *sc_new(void) {
  static sc_case_t c;
  c.args.n = c.kwargs.n = 0;
  c.args.s[0] = c.kwargs.s[0] = '\0';
  c.nv = 0;
  return &c;
}

/* An empty value text, kept until the case runs. */
static inline text_t *sc_text(sc_case_t *c) {
  cr_assert_lt(c->nv, 8, "too many values in a case");
  text_t *t = &c->v[c->nv++];
  t->n = 0;
  return t;
}

/* A tensor value (shape, strides or NULL, storage offset), kept until the case runs. */
static inline const char *sc_t(sc_case_t *c, const char *dtype, int rank, const int64_t *shape,
                               const int64_t *strides, int64_t offset) {
  return tensor(sc_text(c), dtype, rank, shape, strides, offset);
}

/* Any other value text, kept until the case runs. */
static inline const char *sc_v(sc_case_t *c, const char *fmt, ...) {
  cr_assert_lt(c->nv, 8, "too many values in a case");
  text_t *t = &c->v[c->nv++];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(t->s, sizeof t->s, fmt, ap);
  va_end(ap);
  cr_assert(k >= 0 && (size_t)k < sizeof t->s, "value text too long");
  return t->s;
}

static inline void sc_arg(text_t *list, const char *name, const char *type, const char *value) {
  put(list, "%s{\"name\": \"%s\", \"type\": \"%s\", \"value\": %s}", list->n ? ", " : "", name,
      type, value);
}

/* Runs the case on `device`: its "<driver>.scatter" kernel must match the reference, with the
 * default indices and with wild ones. */
static inline void sc_run(sc_case_t *c, const char *op, const char *device) {
  const char *json = bundle(op, c->args.s, c->kwargs.s);
  char prefix[32];
  format(prefix, sizeof prefix, "%s.scatter", kernel_driver(device));
  for (int wild = 0; wild < 2; wild++) {
    xr_op_result_t r = check_op_init(json, device, next_seed++, wild ? "wild" : NULL);
    cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s on %s%s: %s: %s", json, device,
                 wild ? " (wild indices)" : "", xr_op_outcome_name(r.outcome), r.message);
    cr_assert(r.checked && r.check_passed, "%s on %s: check failed (nmse %g)", json, device,
              r.outputs[0].nmse);
    cr_assert(strncmp(r.kernel, prefix, strlen(prefix)) == 0, "%s: ran %s, expected %s", json,
              r.kernel, prefix);
  }
}

/* Whether the device computes in float only (f64 reductions are the CPU's). */
static inline bool sc_cpu(const char *device) {
  return !strcmp(device, "cpu");
}

static const int64_t sc_sizes[] = {1, 3, 17, 129, 1000};

/* gather and take */
static inline void sc_gather_cases(const char *device) {
  sc_case_t *c;
  const char *dtypes[] = {"float", "c10::BFloat16", "c10::Half", "long int", "bool", "double"};
  for (size_t s = 0; s < sizeof sc_sizes / sizeof *sc_sizes; s++) {
    c = sc_new();
    sc_arg(&c->args, "self", "Tensor", sc_t(c, dtypes[s], 2, SHAPE(sc_sizes[s] + 4, 7), NULL, 0));
    sc_arg(&c->args, "dim", "int", "0");
    sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 2, SHAPE(sc_sizes[s], 5), NULL, 0));
    sc_arg(&c->kwargs, "sparse_grad", "bool", "false");
    sc_run(c, "aten::gather", device);
  }
  /* a transposed bf16 self, negative dim, int32 index with a stride and an offset */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor",
         sc_t(c, "c10::BFloat16", 3, SHAPE(4, 6, 33), SHAPE(1, 132, 4), 0));
  sc_arg(&c->args, "dim", "int", "-1");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "int", 3, SHAPE(3, 5, 40), SHAPE(400, 80, 2), 1));
  sc_run(c, "aten::gather", device);
  /* rows of a wide table: the row copies of the cpu path */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "c10::Half", 2, SHAPE(300, 129), NULL, 5));
  sc_arg(&c->args, "dim", "int", "1");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 2, SHAPE(300, 64), NULL, 0));
  sc_run(c, "aten::gather", device);
  /* take: the flattened (transposed) self */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 2, SHAPE(7, 9), SHAPE(1, 7), 0));
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "int", 2, SHAPE(4, 17), NULL, 0));
  sc_run(c, "aten::take", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "long int", 3, SHAPE(3, 4, 5), NULL, 2));
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 1, SHAPE(1000), NULL, 0));
  sc_run(c, "aten::take", device);
}

/* scatter (src and value, reduce add / multiply), scatter_add, scatter_reduce; in place */
static inline void sc_scatter_cases(const char *device) {
  sc_case_t *c;
  /* scatter_add with duplicates: index longer than self's dim */
  const char *dtypes[] = {"float", "c10::BFloat16", "c10::Half", "long int", "int"};
  for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++) {
    for (size_t s = 0; s < sizeof sc_sizes / sizeof *sc_sizes; s += 2) {
      c = sc_new();
      sc_arg(&c->args, "self", "Tensor", sc_t(c, dtypes[d], 2, SHAPE(5, sc_sizes[s]), NULL, 0));
      sc_arg(&c->args, "dim", "int", "0");
      sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 2, SHAPE(8, sc_sizes[s]), NULL, 0));
      sc_arg(&c->args, "src", "Tensor", sc_t(c, dtypes[d], 2, SHAPE(9, sc_sizes[s] + 1), NULL, 0));
      sc_run(c, "aten::scatter_add", device);
    }
  }
  /* in place along dim -1 of a transposed self, src a strided view */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)",
         sc_t(c, "c10::BFloat16", 2, SHAPE(17, 24), SHAPE(1, 17), 0));
  sc_arg(&c->args, "dim", "int", "-1");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 2, SHAPE(17, 30), NULL, 0));
  sc_arg(&c->args, "src", "Tensor", sc_t(c, "c10::BFloat16", 2, SHAPE(17, 31), SHAPE(64, 2), 3));
  sc_run(c, "aten::scatter_add_", device);
  /* scatter: src; value; reduce add / multiply */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 3, SHAPE(6, 5, 4), NULL, 0));
  sc_arg(&c->args, "dim", "int", "1");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 3, SHAPE(6, 9, 3), NULL, 0));
  sc_arg(&c->args, "src", "Tensor", sc_t(c, "float", 3, SHAPE(6, 9, 4), NULL, 0));
  sc_run(c, "aten::scatter", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", sc_t(c, "c10::Half", 2, SHAPE(129, 10), NULL, 0));
  sc_arg(&c->args, "dim", "int", "1");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "int", 2, SHAPE(129, 2), NULL, 0));
  sc_arg(&c->args, "value", "Scalar", "1.5");
  sc_run(c, "aten::scatter_", device);
  const char *legacy[] = {"\"add\"", "\"multiply\""};
  for (int r = 0; r < 2; r++) {
    c = sc_new();
    sc_arg(&c->args, "self", "Tensor",
           sc_t(c, r ? "long int" : "c10::BFloat16", 2, SHAPE(7, 17), NULL, 0));
    sc_arg(&c->args, "dim", "int", "0");
    sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 2, SHAPE(12, 17), NULL, 0));
    sc_arg(&c->args, "src", "Tensor",
           sc_t(c, r ? "long int" : "c10::BFloat16", 2, SHAPE(12, 17), NULL, 0));
    sc_arg(&c->kwargs, "reduce", "str", legacy[r]);
    sc_run(c, "aten::scatter", device);
  }
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", sc_t(c, "float", 2, SHAPE(3, 1000), NULL, 0));
  sc_arg(&c->args, "dim", "int", "1");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 2, SHAPE(3, 1500), NULL, 0));
  sc_arg(&c->args, "value", "Scalar", "2.0");
  sc_arg(&c->kwargs, "reduce", "str", "\"multiply\"");
  sc_run(c, "aten::scatter_", device);
  /* scatter_reduce: every reduction, with and without self */
  const char *reductions[] = {"sum", "prod", "mean", "amax", "amin"};
  const char *rdtypes[] = {"float", "c10::BFloat16", "long int", "c10::Half", "int", "double"};
  for (int r = 0; r < 5; r++)
    for (int d = 0; d < 6; d++)
      for (int self = 0; self < 2; self++) {
        if (d == 5 && !sc_cpu(device)) continue;
        c = sc_new();
        sc_arg(&c->args, "self", "Tensor", sc_t(c, rdtypes[d], 2, SHAPE(6, 17), NULL, 0));
        sc_arg(&c->args, "dim", "int", "0");
        sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 2, SHAPE(9, 17), NULL, 0));
        sc_arg(&c->args, "src", "Tensor", sc_t(c, rdtypes[d], 2, SHAPE(9, 17), NULL, 0));
        sc_arg(&c->args, "reduce", "str", sc_v(c, "\"%s\"", reductions[r]));
        sc_arg(&c->kwargs, "include_self", "bool", self ? "true" : "false");
        sc_run(c, (r + d) % 2 ? "aten::scatter_reduce" : "aten::scatter_reduce_", device);
      }
  /* a 1-D scatter: one free position, the cpu's chunks share the range */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 1, SHAPE(1000), NULL, 0));
  sc_arg(&c->args, "dim", "int", "0");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 1, SHAPE(3000), NULL, 0));
  sc_arg(&c->args, "src", "Tensor", sc_t(c, "float", 1, SHAPE(3000), NULL, 0));
  sc_arg(&c->args, "reduce", "str", "\"mean\"");
  sc_run(c, "aten::scatter_reduce", device);
}

/* index_add (alpha), index_copy, index_fill (Scalar and 0-d tensor) */
static inline void sc_index_op_cases(const char *device) {
  sc_case_t *c;
  const char *dtypes[] = {"float", "c10::BFloat16", "long int", "c10::Half"};
  for (int d = 0; d < 4; d++)
    for (size_t s = 1; s < sizeof sc_sizes / sizeof *sc_sizes; s += 2) {
      c = sc_new();
      sc_arg(&c->args, "self", "Tensor", sc_t(c, dtypes[d], 2, SHAPE(sc_sizes[s], 24), NULL, 0));
      sc_arg(&c->args, "dim", "int", "0");
      sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 1, SHAPE(2 * sc_sizes[s]), NULL, 0));
      sc_arg(&c->args, "source", "Tensor",
             sc_t(c, dtypes[d], 2, SHAPE(2 * sc_sizes[s], 24), NULL, 0));
      sc_arg(&c->kwargs, "alpha", "Scalar", d == 2 ? "3" : "0.5");
      sc_run(c, "aten::index_add", device);
    }
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)",
         sc_t(c, "c10::BFloat16", 3, SHAPE(4, 33, 5), SHAPE(1, 20, 4), 0));
  sc_arg(&c->args, "dim", "int", "-2");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "int", 1, SHAPE(20), SHAPE(3), 2));
  sc_arg(&c->args, "source", "Tensor", sc_t(c, "c10::BFloat16", 3, SHAPE(4, 20, 5), NULL, 0));
  sc_run(c, "aten::index_add_", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", sc_t(c, "c10::Half", 2, SHAPE(129, 17), NULL, 0));
  sc_arg(&c->args, "dim", "int", "0");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 1, SHAPE(100), NULL, 0));
  sc_arg(&c->args, "source", "Tensor", sc_t(c, "c10::Half", 2, SHAPE(100, 17), SHAPE(1, 100), 0));
  sc_run(c, "aten::index_copy_", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "long int", 3, SHAPE(3, 17, 2), NULL, 0));
  sc_arg(&c->args, "dim", "int", "1");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 1, SHAPE(30), NULL, 0));
  sc_arg(&c->args, "source", "Tensor", sc_t(c, "long int", 3, SHAPE(3, 30, 2), NULL, 0));
  sc_run(c, "aten::index_copy", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", sc_t(c, "c10::BFloat16", 2, SHAPE(17, 129), NULL, 0));
  sc_arg(&c->args, "dim", "int", "1");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 1, SHAPE(40), NULL, 0));
  sc_arg(&c->args, "value", "Scalar", "-2.5");
  sc_run(c, "aten::index_fill_", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 2, SHAPE(9, 4), SHAPE(1, 9), 0));
  sc_arg(&c->args, "dim", "int", "0");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "int", 0, NULL, NULL, 0));
  sc_arg(&c->args, "value", "Tensor", sc_t(c, "float", 0, NULL, NULL, 0));
  sc_run(c, "aten::index_fill", device);
}

static inline const char *sc_list(sc_case_t *c, const char *a, const char *b, const char *d) {
  return sc_v(c, "[%s%s%s%s%s]", a, b ? ", " : "", b ? b : "", d ? ", " : "", d ? d : "");
}

/* index.Tensor: one index, None entries, broadcast indices, separated indices, masks (out=) */
static inline void sc_index_cases(const char *device) {
  sc_case_t *c;
  for (size_t s = 0; s < sizeof sc_sizes / sizeof *sc_sizes; s++) {
    c = sc_new();
    sc_arg(&c->args, "self", "Tensor",
           sc_t(c, "c10::BFloat16", 2, SHAPE(sc_sizes[s] + 2, 33), NULL, 0));
    const char *i0 = sc_t(c, "long int", 1, SHAPE(sc_sizes[s]), NULL, 0);
    sc_arg(&c->args, "indices", "Tensor?[]", sc_list(c, i0, NULL, NULL));
    sc_run(c, "aten::index", device);
  }
  /* [None, idx]: the index's dims in place; a transposed self */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 3, SHAPE(4, 6, 5), SHAPE(1, 20, 4), 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, "null", sc_t(c, "int", 2, SHAPE(2, 3), NULL, 0), NULL));
  sc_run(c, "aten::index", device);
  /* two broadcast indices */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "c10::Half", 3, SHAPE(6, 8, 3), NULL, 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, sc_t(c, "long int", 2, SHAPE(3, 1), NULL, 0),
                 sc_t(c, "long int", 1, SHAPE(4), NULL, 0), NULL));
  sc_run(c, "aten::index", device);
  /* separated by None: the broadcast dims first */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "long int", 4, SHAPE(5, 4, 6, 3), NULL, 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, sc_t(c, "long int", 2, SHAPE(2, 7), NULL, 0), "null",
                 sc_t(c, "long int", 1, SHAPE(7), NULL, 0)));
  sc_run(c, "aten::index", device);
  /* a bool mask, with the recorded size in out= (index.Tensor_out) */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 3, SHAPE(2, 6, 5), NULL, 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, "null", sc_t(c, "bool", 1, SHAPE(6), NULL, 0), NULL));
  sc_arg(&c->kwargs, "out", "Tensor(a!)", sc_t(c, "float", 3, SHAPE(2, 4, 5), NULL, 0));
  sc_run(c, "aten::index", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "c10::BFloat16", 2, SHAPE(40, 33), NULL, 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, sc_t(c, "bool", 2, SHAPE(40, 33), NULL, 0), NULL, NULL));
  sc_arg(&c->kwargs, "out", "Tensor(a!)", sc_t(c, "c10::BFloat16", 1, SHAPE(500), NULL, 0));
  sc_run(c, "aten::index", device);
}

/* index_put / index_put_ (accumulate, duplicates, broadcast values, masks) */
static inline void sc_index_put_cases(const char *device) {
  sc_case_t *c;
  const char *dtypes[] = {"float", "c10::BFloat16", "c10::Half", "long int"};
  for (int d = 0; d < 4; d++)
    for (int acc = 0; acc < 2; acc++)
      for (size_t s = 0; s < sizeof sc_sizes / sizeof *sc_sizes; s += 2) {
        c = sc_new();
        sc_arg(&c->args, "self", acc ? "Tensor(a!)" : "Tensor",
               sc_t(c, dtypes[d], 2, SHAPE(sc_sizes[s] + 5, 17), NULL, 0));
        sc_arg(&c->args, "indices", "Tensor?[]",
               sc_list(c, sc_t(c, "long int", 1, SHAPE(2 * sc_sizes[s] + 3), NULL, 0), NULL, NULL));
        sc_arg(&c->args, "values", "Tensor",
               sc_t(c, dtypes[d], 2, SHAPE(2 * sc_sizes[s] + 3, 17), NULL, 0));
        sc_arg(&c->args, "accumulate", "bool", acc ? "true" : "false");
        sc_run(c, acc ? "aten::index_put_" : "aten::index_put", device);
      }
  /* two indices into a strided self, values broadcast along the rows */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", sc_t(c, "float", 3, SHAPE(5, 6, 3), SHAPE(1, 15, 5), 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, sc_t(c, "long int", 1, SHAPE(4), NULL, 0),
                 sc_t(c, "int", 1, SHAPE(4), SHAPE(2), 0), NULL));
  sc_arg(&c->args, "values", "Tensor", sc_t(c, "float", 1, SHAPE(3), NULL, 0));
  sc_arg(&c->args, "accumulate", "bool", "true");
  sc_run(c, "aten::index_put_", device);
  /* [None, idx] with a 0-d value; the KV-cache shape: rows of [slots, heads, dim] */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", sc_t(c, "c10::BFloat16", 3, SHAPE(3, 40, 7), NULL, 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, "null", sc_t(c, "long int", 2, SHAPE(2, 9), NULL, 0), NULL));
  sc_arg(&c->args, "values", "Tensor", sc_t(c, "c10::BFloat16", 0, NULL, NULL, 0));
  sc_arg(&c->args, "accumulate", "bool", "false");
  sc_run(c, "aten::index_put_", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", sc_t(c, "c10::Half", 3, SHAPE(300, 4, 16), NULL, 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, sc_t(c, "long int", 1, SHAPE(37), NULL, 0), NULL, NULL));
  sc_arg(&c->args, "values", "Tensor", sc_t(c, "c10::Half", 3, SHAPE(37, 4, 16), NULL, 0));
  sc_arg(&c->args, "accumulate", "bool", "false");
  sc_run(c, "aten::_index_put_impl_", device);
  /* masks: a 0-d value (x[mask] = v), and values with the count's dim */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", sc_t(c, "float", 2, SHAPE(33, 17), NULL, 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, sc_t(c, "bool", 2, SHAPE(33, 17), NULL, 0), NULL, NULL));
  sc_arg(&c->args, "values", "Tensor", sc_t(c, "float", 0, NULL, NULL, 0));
  sc_arg(&c->args, "accumulate", "bool", "false");
  sc_run(c, "aten::index_put_", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", sc_t(c, "c10::BFloat16", 3, SHAPE(4, 20, 6), NULL, 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, "null", sc_t(c, "bool", 1, SHAPE(20), NULL, 0), NULL));
  sc_arg(&c->args, "values", "Tensor", sc_t(c, "c10::BFloat16", 3, SHAPE(4, 7, 6), NULL, 0));
  sc_arg(&c->args, "accumulate", "bool", "true");
  sc_run(c, "aten::index_put_", device);
}

/* masked_scatter, masked_select (out=), nonzero (out=), nonzero_static */
static inline void sc_masked_cases(const char *device) {
  sc_case_t *c;
  /* a VLM's image features into the token embeddings: a [B, S, 1] mask over [B, S, H] */
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", sc_t(c, "c10::BFloat16", 3, SHAPE(2, 17, 24), NULL, 0));
  sc_arg(&c->args, "mask", "Tensor", sc_t(c, "bool", 3, SHAPE(2, 17, 1), NULL, 0));
  sc_arg(&c->args, "source", "Tensor", sc_t(c, "c10::BFloat16", 2, SHAPE(9, 24), NULL, 0));
  sc_run(c, "aten::masked_scatter_", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "long int", 2, SHAPE(13, 7), SHAPE(1, 13), 0));
  sc_arg(&c->args, "mask", "Tensor", sc_t(c, "bool", 2, SHAPE(13, 7), NULL, 0));
  sc_arg(&c->args, "source", "Tensor", sc_t(c, "long int", 1, SHAPE(100), SHAPE(2), 1));
  sc_run(c, "aten::masked_scatter", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 2, SHAPE(1000, 3), NULL, 0));
  sc_arg(&c->args, "mask", "Tensor", sc_t(c, "bool", 1, SHAPE(3), NULL, 0));
  sc_arg(&c->kwargs, "out", "Tensor(a!)", sc_t(c, "float", 1, SHAPE(2000), NULL, 0));
  sc_run(c, "aten::masked_select", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "c10::Half", 1, SHAPE(1), NULL, 0));
  sc_arg(&c->args, "mask", "Tensor", sc_t(c, "bool", 2, SHAPE(17, 129), NULL, 0));
  sc_arg(&c->kwargs, "out", "Tensor(a!)", sc_t(c, "c10::Half", 1, SHAPE(1000), NULL, 0));
  sc_run(c, "aten::masked_select", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 3, SHAPE(5, 7, 129), SHAPE(1, 645, 5), 0));
  sc_arg(&c->kwargs, "out", "Tensor(a!)", sc_t(c, "long int", 2, SHAPE(333, 3), NULL, 0));
  sc_run(c, "aten::nonzero", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "bool", 2, SHAPE(40, 17), NULL, 0));
  sc_arg(&c->kwargs, "size", "int", "500");
  sc_arg(&c->kwargs, "fill_value", "int", "-7");
  sc_run(c, "aten::nonzero_static", device);
}

/* 0-size iterations, and an empty self under an empty index */
static inline void sc_empty_cases(const char *device) {
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 2, SHAPE(5, 4), NULL, 0));
  sc_arg(&c->args, "dim", "int", "0");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 2, SHAPE(0, 4), NULL, 0));
  sc_run(c, "aten::gather", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "c10::BFloat16", 2, SHAPE(5, 4), NULL, 0));
  sc_arg(&c->args, "dim", "int", "1");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 2, SHAPE(5, 0), NULL, 0));
  sc_arg(&c->args, "src", "Tensor", sc_t(c, "c10::BFloat16", 2, SHAPE(5, 3), NULL, 0));
  sc_run(c, "aten::scatter_add", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor(a!)", sc_t(c, "float", 2, SHAPE(0, 4), NULL, 0));
  sc_arg(&c->args, "indices", "Tensor?[]",
         sc_list(c, sc_t(c, "long int", 1, SHAPE(0), NULL, 0), NULL, NULL));
  sc_arg(&c->args, "values", "Tensor", sc_t(c, "float", 1, SHAPE(4), NULL, 0));
  sc_arg(&c->args, "accumulate", "bool", "true");
  sc_run(c, "aten::index_put_", device);
  c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "float", 2, SHAPE(6, 0), NULL, 0));
  sc_arg(&c->args, "mask", "Tensor", sc_t(c, "bool", 2, SHAPE(6, 0), NULL, 0));
  sc_arg(&c->args, "source", "Tensor", sc_t(c, "float", 1, SHAPE(3), NULL, 0));
  sc_run(c, "aten::masked_scatter", device);
}

/* The family's matrix (tests/kernels/matrix.c): every group on every driver. */
#define SCATTER_MATRIX(GROUP)                                         \
  GROUP(gather_and_take, sc_gather_cases(device))                     \
  GROUP(scatter_scatter_add_scatter_reduce, sc_scatter_cases(device)) \
  GROUP(index_add_copy_fill, sc_index_op_cases(device))               \
  GROUP(advanced_indexing, sc_index_cases(device))                    \
  GROUP(index_put, sc_index_put_cases(device))                        \
  GROUP(masks_and_nonzero, sc_masked_cases(device))                   \
  GROUP(empty, sc_empty_cases(device))
#define SCATTER_MATRIX_GAPS(GAP)

#endif
