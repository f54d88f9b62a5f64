/* Every overload of every op the families claim, as the built-in schemas list them
 * (formats/trace_schema.c: what extraction names a recorded op's arguments by), runs on the cpu
 * and matches the reference. A trace records an op's name without its overload; the overload
 * shows in the arguments (`add.Scalar`'s `other` is a number, `add.Tensor`'s a tensor, `.out`'s
 * result is an argument), and a family that reads only one form fails the others. Ops with one
 * schema are the families' matrices' business; here every op with several gets a case per
 * overload, made from the schema alone: tensors [4, 4] float (indices int64, masks bool, a
 * `value` 0-d), numbers and lists by the argument's name, optional arguments and those with
 * defaults left out, and the result arguments (`out`, `values`, ...) shaped as the op without
 * them plans its returns. Where the arguments must agree in ways no name tells, special[]
 * gives the case; an overload that cannot run is in gaps[] with the reason it reports, so that
 * a new schema without a case, or a gap that closes, fails here. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <string.h>

#include "formats/bundle.h"
#include "formats/trace_schema.h"
#include "kernels/kernels.h"
#include "tests/kernels/bundle_text.h"

#define F44 "{\"dtype\": \"float\", \"shape\": [4, 4]}"
#define ARG(name, type, value) "{\"name\": \"" name "\", \"type\": \"" type "\", \"value\": " value "}"

/* Ops whose generic case cannot be right: the whole argument list. */
static const struct {
  const char *schema; /* "op.overload", or "op.overload/arity" where overloads share a name */
  const char *args;   /* the "args" array's contents */
} special[] = {
    {"aten::bmm",
     ARG("self", "Tensor", "{\"dtype\": \"float\", \"shape\": [2, 4, 3]}") ", "
     ARG("mat2", "Tensor", "{\"dtype\": \"float\", \"shape\": [2, 3, 5]}")},
    /* out= records the result's size, the mask's count of set elements */
    {"aten::masked_select.out",
     ARG("self", "Tensor", F44) ", " ARG("mask", "Tensor", "{\"dtype\": \"bool\", \"shape\": [4, 4]}") ", "
     ARG("out", "Tensor(a!)", "{\"dtype\": \"float\", \"shape\": [5], \"init\": null}")},
    {"aten::nonzero.out",
     ARG("self", "Tensor", "{\"dtype\": \"bool\", \"shape\": [4, 4]}") ", "
     ARG("out", "Tensor(a!)", "{\"dtype\": \"long int\", \"shape\": [5, 2], \"init\": null}")},
    {"aten::upsample_nearest1d",
     ARG("self", "Tensor", "{\"dtype\": \"float\", \"shape\": [1, 2, 4]}") ", "
     ARG("output_size", "SymInt[1]", "[8]")},
    {"aten::upsample_nearest1d.vec",
     ARG("input", "Tensor", "{\"dtype\": \"float\", \"shape\": [1, 2, 4]}") ", "
     ARG("output_size", "SymInt[]?", "[8]") ", " ARG("scale_factors", "float[]?", "null")},
    {"aten::upsample_nearest2d",
     ARG("self", "Tensor", "{\"dtype\": \"float\", \"shape\": [1, 2, 4, 4]}") ", "
     ARG("output_size", "SymInt[2]", "[8, 6]")},
    {"aten::upsample_nearest2d.vec",
     ARG("input", "Tensor", "{\"dtype\": \"float\", \"shape\": [1, 2, 4, 4]}") ", "
     ARG("output_size", "SymInt[]?", "null") ", " ARG("scale_factors", "float[]?", "[2.0, 1.5]")},
    {"aten::upsample_nearest3d",
     ARG("self", "Tensor", "{\"dtype\": \"float\", \"shape\": [1, 2, 2, 4, 4]}") ", "
     ARG("output_size", "SymInt[3]", "[4, 8, 8]")},
    {"aten::upsample_nearest3d.vec",
     ARG("input", "Tensor", "{\"dtype\": \"float\", \"shape\": [1, 2, 2, 4, 4]}") ", "
     ARG("output_size", "SymInt[]?", "[4, 8, 8]") ", " ARG("scale_factors", "float[]?", "null")},
    {"aten::upsample_bilinear2d",
     ARG("self", "Tensor", "{\"dtype\": \"float\", \"shape\": [1, 2, 4, 4]}") ", "
     ARG("output_size", "SymInt[2]", "[8, 6]") ", " ARG("align_corners", "bool", "false")},
    {"aten::upsample_bilinear2d.vec",
     ARG("input", "Tensor", "{\"dtype\": \"float\", \"shape\": [1, 2, 4, 4]}") ", "
     ARG("output_size", "SymInt[]?", "[8, 6]") ", " ARG("align_corners", "bool", "true") ", "
     ARG("scale_factors", "float[]?", "null")},
    /* training: the batch's own statistics (evaluation needs running ones, the legit op's
     * running_mean and running_var updated in place) */
    {"aten::_native_batch_norm_legit",
     ARG("input", "Tensor", "{\"dtype\": \"float\", \"shape\": [2, 4, 3]}") ", "
     ARG("weight", "Tensor?", "{\"dtype\": \"float\", \"shape\": [4]}") ", "
     ARG("bias", "Tensor?", "null") ", "
     ARG("running_mean", "Tensor(a!)", "{\"dtype\": \"float\", \"shape\": [4]}") ", "
     ARG("running_var", "Tensor(b!)", "{\"dtype\": \"float\", \"shape\": [4], \"init\": \"ones\"}") ", "
     ARG("training", "bool", "true") ", " ARG("momentum", "float", "0.1") ", "
     ARG("eps", "float", "1e-05")},
    {"aten::_native_batch_norm_legit.no_stats",
     ARG("input", "Tensor", "{\"dtype\": \"float\", \"shape\": [2, 4, 3]}") ", "
     ARG("weight", "Tensor?", "null") ", " ARG("bias", "Tensor?", "{\"dtype\": \"float\", \"shape\": [4]}") ", "
     ARG("training", "bool", "true") ", " ARG("momentum", "float", "0.1") ", "
     ARG("eps", "float", "1e-05")},
    {"aiter::_groupnorm_run",
     ARG("input", "Tensor", "{\"dtype\": \"float\", \"shape\": [2, 4, 3, 3]}") ", "
     ARG("num_groups", "int", "2") ", " ARG("weight", "Tensor", "{\"dtype\": \"float\", \"shape\": [4]}") ", "
     ARG("bias", "Tensor", "{\"dtype\": \"float\", \"shape\": [4]}") ", " ARG("eps", "float", "1e-05")},
    {"aiter::_groupnorm_run.out",
     ARG("y", "Tensor!", "{\"dtype\": \"float\", \"shape\": [2, 4, 3, 3], \"init\": null}") ", "
     ARG("workspace", "Tensor", "{\"dtype\": \"float\", \"shape\": [64]}") ", "
     ARG("input", "Tensor", "{\"dtype\": \"float\", \"shape\": [2, 4, 3, 3]}") ", "
     ARG("num_groups", "int", "2") ", " ARG("weight", "Tensor", "{\"dtype\": \"float\", \"shape\": [4]}") ", "
     ARG("bias", "Tensor", "{\"dtype\": \"float\", \"shape\": [4]}") ", " ARG("eps", "float", "1e-05")},
    /* 16 routed ids of 4 experts in blocks of 2: at most 16 + 4 x (2 - 1) sorted slots */
    {"_moe_C::moe_align_block_size/6",
     ARG("topk_ids", "Tensor", "{\"dtype\": \"int\", \"shape\": [4, 4]}") ", "
     ARG("num_experts", "int", "4") ", " ARG("block_size", "int", "2") ", "
     ARG("sorted_token_ids", "Tensor!", "{\"dtype\": \"int\", \"shape\": [20], \"init\": null}") ", "
     ARG("experts_ids", "Tensor!", "{\"dtype\": \"int\", \"shape\": [10], \"init\": null}") ", "
     ARG("num_tokens_post_pad", "Tensor!", "{\"dtype\": \"int\", \"shape\": [1], \"init\": null}")},
    {"_moe_C::moe_align_block_size/7",
     ARG("topk_ids", "Tensor", "{\"dtype\": \"int\", \"shape\": [4, 4]}") ", "
     ARG("num_experts", "int", "4") ", " ARG("block_size", "int", "2") ", "
     ARG("sorted_token_ids", "Tensor!", "{\"dtype\": \"int\", \"shape\": [20], \"init\": null}") ", "
     ARG("experts_ids", "Tensor!", "{\"dtype\": \"int\", \"shape\": [10], \"init\": null}") ", "
     ARG("num_tokens_post_pad", "Tensor!", "{\"dtype\": \"int\", \"shape\": [1], \"init\": null}") ", "
     ARG("maybe_expert_map", "Tensor?", "null")},
    /* 2 sequences of 4 heads (2 kv heads) of 64 over blocks of 16 floats (x = 4), one partition */
#define ROCM_PAGED                                                                                 \
  ARG("out", "Tensor!", "{\"dtype\": \"float\", \"shape\": [2, 4, 64], \"init\": null}") ", "          \
  ARG("exp_sums", "Tensor", "{\"dtype\": \"float\", \"shape\": [2, 4, 1], \"init\": null}") ", "       \
  ARG("max_logits", "Tensor", "{\"dtype\": \"float\", \"shape\": [2, 4, 1], \"init\": null}") ", "     \
  ARG("tmp_out", "Tensor", "{\"dtype\": \"float\", \"shape\": [2, 4, 1, 64], \"init\": null}") ", "    \
  ARG("query", "Tensor", "{\"dtype\": \"float\", \"shape\": [2, 4, 64]}") ", "                          \
  ARG("key_cache", "Tensor", "{\"dtype\": \"float\", \"shape\": [6, 2, 16, 16, 4]}") ", "               \
  ARG("value_cache", "Tensor", "{\"dtype\": \"float\", \"shape\": [6, 2, 64, 16]}") ", "                \
  ARG("num_kv_heads", "int", "2") ", " ARG("scale", "float", "0.125") ", "                         \
  ARG("block_tables", "Tensor", "{\"dtype\": \"int\", \"shape\": [2, 2]}") ", "                         \
  ARG("seq_lens", "Tensor", "{\"dtype\": \"int\", \"shape\": [2]}") ", "                                \
  ARG("query_start_loc", "Tensor?", "null") ", " ARG("block_size", "int", "16") ", "               \
  ARG("max_seq_len", "int", "32") ", " ARG("alibi_slopes", "Tensor?", "null") ", "                 \
  ARG("kv_cache_dtype", "str", "\"auto\"") ", "                                                    \
  ARG("k_scale", "Tensor", "{\"dtype\": \"float\", \"shape\": [1], \"init\": \"ones\"}") ", "          \
  ARG("v_scale", "Tensor", "{\"dtype\": \"float\", \"shape\": [1], \"init\": \"ones\"}") ", "          \
  ARG("fp8_out_scale", "Tensor?", "null")
    {"_rocm_C::paged_attention/19", ROCM_PAGED},
    {"_rocm_C::paged_attention/20", ROCM_PAGED ", " ARG("mfma_type", "str", "\"fp8\"")},
    {"aten::bmm.out",
     ARG("self", "Tensor", "{\"dtype\": \"float\", \"shape\": [2, 4, 3]}") ", "
     ARG("mat2", "Tensor", "{\"dtype\": \"float\", \"shape\": [2, 3, 5]}") ", "
     ARG("out", "Tensor(a!)", "{\"dtype\": \"float\", \"shape\": [2, 4, 5]}")},
    {NULL, NULL},
};

/* Overloads that do not run, with (a part of) the reason they report. */
static const struct {
  const char *schema, *reason;
} gaps[] = {
    /* a mask's count of set elements sizes the result: without out= nothing records it */
    {"aten::masked_select", "only an out= argument records"},
    {"aten::nonzero", "only an out= argument records"},
    {NULL, NULL},
};

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

/* One argument of the generic case as the bundle's JSON writes it; `result` the shape and dtype
 * of a result argument (NULL: leave it out). False when the argument is left out. */
static bool generic_arg(text_t *t, const char *op, const xr_schema_arg_t *a,
                        const xr_tensor_desc_t *result) {
  static const char *const index_names[] = {"index", "indices", NULL};
  static const char *const dim_names[] = {"dim", "dim0", "dim1", "start_dim", NULL};
  static const char *const shape_names[] = {"size", "sizes", "shape", "normalized_shape", NULL};
  if (is_result(a) && !result) return false;
  if (!is_result(a) && (a->has_default || a->is_optional)) return false;
  put(t, "{\"name\": \"%s\", \"type\": \"%s\", \"value\": ", a->name, a->type);
  if (result) {
    put(t, "{\"dtype\": \"%s\", \"shape\": [", xr_dtype_name(result->dtype));
    for (int d = 0; d < result->rank; d++) put(t, "%s%lld", d ? ", " : "", (long long)result->shape[d]);
    put(t, "], \"init\": null}");
  } else if (a->is_tensor_list) {
    /* index's Tensor?[] a list of rows; a collective's list one tensor per rank (one here) */
    put(t, strchr(a->type, '?')             ? "[{\"dtype\": \"long int\", \"shape\": [2]}]"
           : !strncmp(op, "c10d::", 6) ? "[" F44 "]"
                                       : "[" F44 ", " F44 "]");
  } else if (a->is_tensor && named(a->name, index_names)) {
    /* index_select and its kin take a list of rows; gather and scatter one per element */
    put(t, strstr(op, "index_") ? "{\"dtype\": \"long int\", \"shape\": [2]}"
                                : "{\"dtype\": \"long int\", \"shape\": [4, 4]}");
  } else if (a->is_tensor && (ends_with(a->name, "_ids") || ends_with(a->name, "_indices"))) {
    put(t, "{\"dtype\": \"int\", \"shape\": [4, 4]}"); /* MoE routing's int32 ids */
  } else if (a->is_tensor && !strcmp(a->name, "mask")) {
    put(t, "{\"dtype\": \"bool\", \"shape\": [4, 4]}");
  } else if (a->is_tensor && !strcmp(a->name, "value")) {
    put(t, "{\"dtype\": \"float\", \"shape\": []}");
  } else if (a->is_tensor) {
    put(t, F44);
  } else if (a->is_list) {
    put(t, named(a->name, shape_names) ? "[4]" : "[1]");
  } else if (a->is_bool) {
    put(t, "false");
  } else if (!strcmp(a->type, "ScalarType")) {
    put(t, "%d", xr_dtype_torch_code(XR_DTYPE_F32));
  } else if (a->is_float || !strncmp(a->type, "Scalar", 6)) {
    put(t, "2.5");
  } else if (a->is_int) {
    put(t, named(a->name, dim_names) ? "1" : !strncmp(a->name, "root", 4) ? "0" : "2");
  } else if (a->is_string) {
    const char *s = !strcmp(a->name, "reduce") && strstr(op, "scatter") ? "add"
                                                                        : xr_schema_string_fallback(a->name);
    put(t, "\"%s\"", s ? s : "none");
  } else {
    put(t, "null");
  }
  put(t, "}");
  return true;
}

/* The arguments of the generic case; `results` (NULL: none) the result arguments' shapes, in
 * order. */
static const char *generic_args(const xr_schema_t *s, const xr_tensor_desc_t *results, size_t count) {
  static text_t args;
  args.n = 0;
  args.s[0] = '\0';
  size_t next = 0;
  for (size_t i = 0; i < s->arg_count; i++) {
    const xr_schema_arg_t *a = &s->args[i];
    const xr_tensor_desc_t *result = is_result(a) && results && next < count ? &results[next++] : NULL;
    size_t at = args.n;
    if (at) put(&args, ", ");
    if (!generic_arg(&args, s->op, a, result)) {
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

/* Whether another built-in schema names the same op. */
static bool overloaded(const char *const *texts, size_t count, const xr_schema_t *s) {
  size_t same = 0;
  for (size_t i = 0; i < count; i++) {
    xr_schema_t t;
    if (xr_schema_parse(texts[i], &t) == XR_OK && !strcmp(t.op, s->op)) same++;
  }
  return same > 1;
}

Test(overloads, every_overload_of_a_claimed_op_runs_or_is_a_known_gap) {
  size_t count;
  const char *const *texts = xr_schema_builtin(&count);
  size_t ran = 0, known = 0, failed = 0;
  for (size_t i = 0; i < count; i++) {
    xr_schema_t s;
    if (xr_schema_parse(texts[i], &s) != XR_OK || !claimed(s.op) || !overloaded(texts, count, &s))
      continue;
    char key[160];
    snprintf(key, sizeof key, "%s%s%s", s.op, s.overload[0] ? "." : "", s.overload);
    /* Overloads of one name (vLLM's, across versions) are told apart by their arity. */
    char arity[176];
    snprintf(arity, sizeof arity, "%s/%zu", key, s.arg_count);
    const char *args = NULL, *gap = NULL;
    for (size_t k = 0; special[k].schema; k++)
      if (!strcmp(special[k].schema, key) || !strcmp(special[k].schema, arity)) args = special[k].args;
    for (size_t k = 0; gaps[k].schema; k++)
      if (!strcmp(gaps[k].schema, key) || !strcmp(gaps[k].schema, arity)) gap = gaps[k].reason;
    const char *json = bundle(s.op, args ? args : generic_case(&s), NULL);
    xr_op_result_t r = check_op_seeded(json, "cpu", i + 1);
    bool ok = r.outcome == XR_OP_SUCCEEDED && r.checked && r.check_passed;
    if (ok) ran++;
    else if (gap && strstr(r.message, gap)) known++;
    else failed++;
    if (!ok || gap)
      cr_log_info("%s: %s%s%s", arity, ok ? "ran" : xr_op_outcome_name(r.outcome), ok ? "" : ": ",
                  ok ? " (listed as a gap)" : r.message);
    cr_expect(!(ok && gap), "%s runs now: take it off gaps[]", arity);
  }
  cr_log_info("%zu overloads ran and matched, %zu known gaps, %zu failed", ran, known, failed);
  cr_assert_eq(failed, 0, "%zu overloads did not run (the log lists them)", failed);
  cr_assert_gt(ran, 50, "the schemas hold at least that many overloads of claimed ops");
}
