/* Every schema of every op the families claim, as the built-in schemas list them
 * (formats/trace_schema.c: what extraction names a recorded op's arguments by), runs on the cpu,
 * and on OpenCL where a device is present, and matches the reference. A trace records an op's
 * name without its overload; the overload shows in the arguments (`add.Scalar`'s `other` is a
 * number, `add.Tensor`'s a tensor, `.out`'s result is an argument), and a family that reads only
 * one form fails the others. Each schema, an op's only one included, gets a case made from the
 * schema alone: tensors [4, 4] float (indices int64, masks bool, a `value` 0-d), numbers, lists
 * and strings by the argument's name, optional arguments and those with defaults left out, the
 * result arguments (`out`, `values`, ...) shaped as the op without them plans its returns; and a
 * few rules by family: convolutions' [N, C, spatial] activations and weights, norms' per-channel
 * tensors (given where optional), attention's 4-D query/key/value, the gated activations' halved
 * result. Where the arguments must agree in ways no rule tells, special[] (overload_cases.h)
 * gives the case; a schema that cannot run is in gaps[] with the reason it reports, so that a
 * new schema without a case, a gap that closes, or an entry that names no schema fails here.
 * Claimed ops without any schema (the pointwise table's, most of them) must have a reason to
 * have none: overload_cases.h's schemaless[], or the rules in why_schemaless(). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <string.h>

#include "formats/bundle.h"
#include "formats/trace_schema.h"
#include "kernels/kernels.h"
#include "tests/kernels/bundle_text.h"
#include "tests/kernels/overload_cases.h"

#define F44 "{\"dtype\": \"float\", \"shape\": [4, 4]}"

static bool claimed(const char *op) {
  static const char *names[4096];
  static size_t count;
  if (!count) count = xr_kernel_op_names(names, sizeof names / sizeof names[0]);
  cr_assert_leq(count, sizeof names / sizeof names[0], "more op names than this test lists");
  for (size_t i = 0; i < count; i++)
    if (!strcmp(names[i], op)) return true;
  return false;
}

static bool ends_with(const char *s, const char *end) {
  size_t n = strlen(s), k = strlen(end);
  return n >= k && !strcmp(s + n - k, end);
}

static bool named(const char *name, const char *const *names) {
  for (; *names; names++)
    if (!strcmp(name, *names)) return true;
  return false;
}

/* A result the op writes, given as an argument (the .out overloads' out, max.dim_max's max). */
static bool is_result(const xr_schema_arg_t *a) {
  return a->is_tensor && a->is_mutable && a->kwarg_only;
}

/* Convolutions: [1, 4, 5, ...] activations (conv1d, conv_transpose3d ...: 1 or 3 spatial
 * dimensions, the rest 2), [4, 4 / groups, 3, ...] weights (the same shape serves the transposed
 * ones' [C_in, C_out / groups, ...]), groups 2 where the schema has no default, stride, padding
 * and dilation 1, output_padding 0: the output is the input's size. */
static bool is_conv(const char *op) {
  return strstr(op, "convolution") || strstr(op, "::conv");
}

static void conv_value(text_t *t, const xr_schema_t *s, const xr_schema_arg_t *a) {
  int spatial = strstr(s->op, "1d") ? 1 : strstr(s->op, "3d") ? 3 : 2, groups = 1;
  for (size_t i = 0; i < s->arg_count; i++)
    if (!strcmp(s->args[i].name, "groups") && !s->args[i].has_default) groups = 2;
  if (a->is_tensor) {
    bool weight = !strcmp(a->name, "weight");
    put(t, "{\"dtype\": \"float\", \"shape\": [%d, %d", weight ? 4 : 1, weight ? 4 / groups : 4);
    for (int d = 0; d < spatial; d++) put(t, ", %d", weight ? 3 : 5);
    put(t, "]}");
  } else if (a->is_list) {
    put(t, "[");
    for (int d = 0; d < spatial; d++)
      put(t, "%s%d", d ? ", " : "", !strcmp(a->name, "output_padding") ? 0 : 1);
    put(t, "]");
  } else {
    put(t, "%d", groups);
  }
}

/* Norms: the per-channel tensors (the normalised row's, for layer and RMS norms) [4], given
 * where they are optional too, so that batch norm's backward has its saved statistics. */
static bool is_channel_tensor(const char *op, const xr_schema_arg_t *a) {
  static const char *const names[] = {"weight",    "bias",        "running_mean", "running_var",
                                      "save_mean", "save_invstd", "save_var",     NULL};
  return a->is_tensor && strstr(op, "norm") && named(a->name, names);
}

/* One argument of the generic case as the bundle's JSON writes it; `result` the shape and dtype
 * of a result argument (NULL: leave it out). False when the argument is left out. */
static bool generic_arg(text_t *t, const xr_schema_t *s, const xr_schema_arg_t *a,
                        const xr_tensor_desc_t *result) {
  const char *op = s->op;
  static const char *const index_names[] = {"index", "indices", NULL};
  static const char *const dim_names[] = {"dim", "dim0", "dim1", "start_dim", NULL};
  static const char *const shape_names[] = {"size", "sizes", "shape", "normalized_shape", NULL};
  static const char *const qkv_names[] = {"query", "key", "value", NULL};
  bool bool_list = a->is_list && !strncmp(a->type, "bool", 4);
  if (is_result(a) && !result) return false;
  if (!is_result(a) && (a->has_default || a->is_optional) && !is_channel_tensor(op, a))
    return false;
  put(t, "{\"name\": \"%s\", \"type\": \"%s\", \"value\": ", a->name, a->type);
  if (result) {
    put(t, "{\"dtype\": \"%s\", \"shape\": [", xr_dtype_name(result->dtype));
    for (int d = 0; d < result->rank; d++)
      put(t, "%s%lld", d ? ", " : "", (long long)result->shape[d]);
    put(t, "], \"init\": null}");
  } else if (is_conv(op) && (a->is_tensor || a->is_int || (a->is_list && !bool_list))) {
    conv_value(t, s, a);
  } else if (a->is_tensor_list) {
    /* index's Tensor?[] a list of rows; a collective's list one tensor per rank (one here) */
    put(t, strchr(a->type, '?')        ? "[{\"dtype\": \"long int\", \"shape\": [2]}]"
           : !strncmp(op, "c10d::", 6) ? "[" F44 "]"
                                       : "[" F44 ", " F44 "]");
  } else if (a->is_tensor && named(a->name, index_names)) {
    /* index_select and its kin take a list of rows; gather and scatter one per element */
    put(t, strstr(op, "index_") ? "{\"dtype\": \"long int\", \"shape\": [2]}"
                                : "{\"dtype\": \"long int\", \"shape\": [4, 4]}");
  } else if (a->is_tensor && strstr(op, "index_") && !strcmp(a->name, "source")) {
    put(t, "{\"dtype\": \"float\", \"shape\": [4, 2]}"); /* index_add/copy: 2 columns (dim 1) */
  } else if (a->is_tensor && strstr(op, "index_") && !strcmp(a->name, "values")) {
    put(t, "{\"dtype\": \"float\", \"shape\": [2, 4]}"); /* index_put: the 2 rows indexed */
  } else if (a->is_tensor && (ends_with(a->name, "_ids") || ends_with(a->name, "_indices"))) {
    put(t, "{\"dtype\": \"int\", \"shape\": [4, 4]}"); /* MoE routing's int32 ids */
  } else if (a->is_tensor && !strcmp(a->name, "mask")) {
    put(t, "{\"dtype\": \"bool\", \"shape\": [4, 4]}");
  } else if (is_channel_tensor(op, a)) {
    put(t, "{\"dtype\": \"float\", \"shape\": [4]}");
  } else if (a->is_tensor && !strncmp(op, "aten::", 6) && strstr(op, "attention") &&
             named(a->name, qkv_names)) {
    put(t, "{\"dtype\": \"float\", \"shape\": [1, 2, 4, 8]}"); /* [B, H, S, D] ([B, S, H, D]) */
  } else if (a->is_tensor && !strcmp(a->name, "value")) {
    put(t, "{\"dtype\": \"float\", \"shape\": []}");
  } else if (a->is_tensor && a->is_mutable && ends_with(op, "_and_mul")) {
    put(t, "{\"dtype\": \"float\", \"shape\": [4, 2]}"); /* act(x[:, :2]) * x[:, 2:] */
  } else if (a->is_tensor) {
    put(t, F44);
  } else if (bool_list) {
    put(t, "[true, true, true]"); /* output_mask: every gradient */
  } else if (a->is_list) {
    put(t, named(a->name, shape_names) ? "[4]" : "[1]");
  } else if (a->is_bool) {
    /* batch norm in training: the batch's statistics, no running ones needed */
    put(t, !strcmp(a->name, "training") || !strcmp(a->name, "train") ? "true" : "false");
  } else if (!strcmp(a->type, "ScalarType")) {
    put(t, "%d", xr_dtype_torch_code(XR_DTYPE_F32));
  } else if (a->is_float || !strncmp(a->type, "Scalar", 6)) {
    put(t, !strcmp(a->name, "dropout_p") ? "0.0" : "2.5");
  } else if (a->is_int) {
    put(t, named(a->name, dim_names) ? "1" : !strncmp(a->name, "root", 4) ? "0" : "2");
  } else if (a->is_string) {
    /* scatter's reduce is 'add' or 'multiply'; scatter_reduce's 'sum', 'prod', ... */
    const char *v =
        !strcmp(a->name, "reduce") && strstr(op, "scatter") && !strstr(op, "scatter_reduce")
            ? "add"
            : xr_schema_string_fallback(a->name);
    put(t, "\"%s\"", v ? v : "none");
  } else {
    put(t, "null");
  }
  put(t, "}");
  return true;
}

/* The arguments of the generic case; `results` (NULL: none) the result arguments' shapes, in
 * order. */
static const char *generic_args(const xr_schema_t *s, const xr_tensor_desc_t *results,
                                size_t count) {
  static text_t args;
  args.n = 0;
  args.s[0] = '\0';
  size_t next = 0;
  for (size_t i = 0; i < s->arg_count; i++) {
    const xr_schema_arg_t *a = &s->args[i];
    const xr_tensor_desc_t *result =
        is_result(a) && results && next < count ? &results[next++] : NULL;
    size_t at = args.n;
    if (at) put(&args, ", ");
    if (!generic_arg(&args, s, a, result)) {
      args.n = at;
      args.s[at] = '\0';
    }
  }
  return args.s;
}

/* The generic case, its result arguments shaped as the op without them plans its returns. */
static const char *generic_case(const xr_schema_t *s) {
  bool has_results = false;
  for (size_t i = 0; i < s->arg_count; i++) has_results |= is_result(&s->args[i]);
  if (!has_results) return generic_args(s, NULL, 0);
  const char *json = bundle(s->op, generic_args(s, NULL, 0), NULL);
  xr_bundle_t *b;
  xr_op_plan_t plan;
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, &b), XR_OK,
               "%s", xr_last_error());
  xr_tensor_desc_t results[XR_MAX_RETURNS];
  size_t count = 0;
  if (xr_kernel_plan(&b->ops[0], &plan) == XR_OK) {
    count = plan.return_count;
    memcpy(results, plan.returns, sizeof results[0] * count);
    xr_kernel_plan_free(&plan);
  }
  xr_bundle_destroy(b);
  return generic_args(s, results, count);
}

/* A schema's names for the tables: "op.overload" and "op.overload/arity" (overloads of one name,
 * vLLM's across versions, are told apart by their arity). */
typedef struct schema_key {
  char key[160], arity[176];
} schema_key_t;

static schema_key_t key_of(const xr_schema_t *s) {
  schema_key_t k;
  snprintf(k.key, sizeof k.key, "%s%s%s", s->op, s->overload[0] ? "." : "", s->overload);
  snprintf(k.arity, sizeof k.arity, "%s/%zu", k.key, s->arg_count);
  return k;
}

static bool names_schema(const char *entry, const schema_key_t *k) {
  return !strcmp(entry, k->key) || !strcmp(entry, k->arity);
}

typedef struct tally {
  size_t ran, known, failed;
} tally_t;

/* Every schema of every claimed op on `device`, each against the reference. */
static tally_t run_every_overload(const char *device) {
  size_t count;
  const char *const *texts = xr_schema_builtin(&count);
  tally_t n = {0};
  for (size_t i = 0; i < count; i++) {
    xr_schema_t s;
    if (xr_schema_parse(texts[i], &s) != XR_OK || !claimed(s.op)) continue;
    schema_key_t k = key_of(&s);
    const char *args = NULL, *gap = NULL;
    for (size_t c = 0; special[c].schema; c++)
      if (names_schema(special[c].schema, &k)) args = special[c].args;
    for (size_t c = 0; gaps[c].schema; c++)
      if (names_schema(gaps[c].schema, &k)) gap = gaps[c].reason;
    const char *json = bundle(s.op, args ? args : generic_case(&s), NULL);
    xr_op_result_t r = check_op_seeded(json, device, i + 1);
    /* off the cpu, on one of the device's own kernels (opencl.*), not a host fallback */
    const char *own = kernel_impl(device, "");
    bool on_device = !strcmp(device, "cpu") || !strncmp(r.kernel, own, strlen(own));
    bool ok = r.outcome == XR_OP_SUCCEEDED && r.checked && r.check_passed && on_device;
    bool known = !ok && gap && strstr(r.message, gap);
    n.ran += ok, n.known += known, n.failed += !ok && !known;
    const char *what = ok                              ? "(listed as a gap)"
                       : r.outcome != XR_OP_SUCCEEDED  ? r.message
                       : !r.checked || !r.check_passed ? "the check failed"
                                                       : "not on a kernel of the device";
    if (!ok || gap)
      cr_log_info("%s on %s: %s%s%s: %s", k.arity, device, xr_op_outcome_name(r.outcome),
                  r.kernel[0] ? " on " : "", r.kernel, what);
    cr_expect(!(ok && gap), "%s runs on %s now: take it off gaps[]", k.arity, device);
  }
  cr_log_info("%s: %zu overloads ran and matched, %zu known gaps, %zu failed", device, n.ran,
              n.known, n.failed);
  return n;
}

Test(overloads, every_overload_of_a_claimed_op_runs_or_is_a_known_gap) {
  tally_t n = run_every_overload("cpu");
  cr_assert_eq(n.failed, 0, "%zu overloads did not run on the cpu (the log lists them)", n.failed);
  cr_assert_gt(n.ran, 250, "the schemas hold at least that many overloads of claimed ops");
}

/* The same cases on OpenCL (PoCL on a CI machine): each runs an opencl kernel, and the gaps are
 * the cpu's. Skipped where no OpenCL device is present. */
Test(overloads, every_overload_runs_on_opencl_too) {
  tally_t n = run_every_overload("opencl");
  cr_assert_eq(n.failed, 0, "%zu overloads did not run on opencl (the log lists them)", n.failed);
  cr_assert_gt(n.ran, 250, "the schemas hold at least that many overloads of claimed ops");
}

/* A case or gap that names no built-in schema of a claimed op (a schema renamed or removed) would
 * never run. */
Test(overloads, every_case_and_gap_names_a_schema_of_a_claimed_op) {
  size_t count;
  const char *const *texts = xr_schema_builtin(&count);
  for (int table = 0; table < 2; table++)
    for (size_t c = 0; table ? gaps[c].schema != NULL : special[c].schema != NULL; c++) {
      const char *entry = table ? gaps[c].schema : special[c].schema;
      bool found = false;
      for (size_t i = 0; i < count && !found; i++) {
        xr_schema_t s;
        if (xr_schema_parse(texts[i], &s) != XR_OK || !claimed(s.op)) continue;
        schema_key_t k = key_of(&s);
        found = names_schema(entry, &k);
      }
      cr_expect(found, "%s[]: %s names no built-in schema of a claimed op",
                table ? "gaps" : "special", entry);
    }
}

/* The pointwise table's rows (kernels/pointwise_ops.h), `aten::NAME`. */
static const char *const pointwise_rows[] = {
#define XR_PW(ID, NAME, ...) "aten::" NAME,
#include "kernels/pointwise_ops.h"
#undef XR_PW
    NULL,
};

static bool has_schema(const char *op) {
  size_t count;
  const char *const *texts = xr_schema_builtin(&count);
  for (size_t i = 0; i < count; i++) {
    xr_schema_t s;
    if (xr_schema_parse(texts[i], &s) == XR_OK && !strcmp(s.op, op)) return true;
  }
  return false;
}

#define SCHEMALESS_GROUPS (sizeof schemaless / sizeof schemaless[0])

/* The names of schemaless[g], up to the first NULL. */
static size_t schemaless_count(size_t g) {
  size_t n = 0, cap = sizeof schemaless[g].names / sizeof schemaless[g].names[0];
  while (n < cap && schemaless[g].names[n]) n++;
  return n;
}

/* The reason of the group of schemaless[] that lists `op`, or NULL. */
static const char *listed_schemaless(const char *op) {
  for (size_t g = 0; g < SCHEMALESS_GROUPS; g++)
    for (size_t k = 0; k < schemaless_count(g); k++)
      if (!strcmp(op, schemaless[g].names[k])) return schemaless[g].why;
  return NULL;
}

/* Why `op` (claimed, without a schema) needs none, or NULL: listed, a pointwise row, or the
 * in-place (`NAME_`) or list (`_foreach_NAME[_]`) form of a row, of a listed op or of one with a
 * schema. */
static const char *why_schemaless(const char *op) {
  char base[128];
  snprintf(base, sizeof base, "%s", op);
  if (!strncmp(base, "aten::_foreach_", 15)) memmove(base + 6, base + 15, strlen(base + 15) + 1);
  for (;;) {
    bool form = strcmp(base, op) != 0;
    const char *why = listed_schemaless(base);
    if (why) return why;
    if (named(base, pointwise_rows))
      return "a pointwise row: kernels/pointwise_ops.h names its operands";
    if (form && has_schema(base)) return "the in-place or list form of an op with a schema";
    size_t n = strlen(base);
    if (!n || base[n - 1] != '_') return NULL;
    base[n - 1] = '\0';
  }
}

Test(overloads, every_claimed_op_has_a_schema_or_a_reason_to_have_none) {
  static const char *names[4096];
  size_t count = xr_kernel_op_names(names, sizeof names / sizeof names[0]), without = 0,
         unexplained = 0;
  cr_assert_leq(count, sizeof names / sizeof names[0], "more op names than this test lists");
  for (size_t i = 0; i < count; i++) {
    if (has_schema(names[i])) continue;
    without++;
    if (why_schemaless(names[i])) continue;
    unexplained++;
    cr_log_info("%s: claimed, without a built-in schema or a reason", names[i]);
  }
  /* every listed name is claimed and still without a schema */
  for (size_t g = 0; g < SCHEMALESS_GROUPS; g++)
    for (size_t k = 0; k < schemaless_count(g); k++) {
      const char *op = schemaless[g].names[k];
      cr_expect(claimed(op), "%s is listed in schemaless[] but no family claims it", op);
      cr_expect(!has_schema(op), "%s has a built-in schema now: take it off schemaless[]", op);
    }
  cr_log_info("%zu of %zu claimed op names have no built-in schema", without, count);
  cr_assert_eq(unexplained, 0,
               "%zu claimed ops have neither a schema nor a reason (the log lists them)",
               unexplained);
}
