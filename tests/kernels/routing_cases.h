/* The routing family's cases (triton_kernels' TopK and SortTokens, kernels/routing.h), written
 * once and run per device through the engine with --check against ref.routing on every driver
 * (ROUTING_MATRIX at the end, the routing_matrix_<driver> targets): the recorded GPT-OSS shapes
 * (bf16 [32, 32] logits, k 4; [32, 4] weights with int16 ids over 32 experts), k = 1 and k = E,
 * expert counts that are not a multiple of 32 (a partial bitmatrix word) and past one word,
 * strided and offset views, f32 / f16 / bf16, with and without the softmax; TopK on logits full
 * of ties (--init ties) and SortTokens with ids no expert has (--init wild); bad arguments, each
 * refused with a sentence naming the op and the argument. */
#ifndef XR_TESTS_KERNELS_ROUTING_CASES_H
#define XR_TESTS_KERNELS_ROUTING_CASES_H

#include "tests/kernels/bundle_text.h"

/* Replays `json` on `device` with --check and the initializer policy `init` (or NULL); the
 * routing kernel of the device's driver must have run and matched the reference. */
static inline void rt_expect(const char *json, const char *op, const char *device,
                             const char *init) {
  xr_op_result_t result = check_op_init(json, device, next_seed++, init);
  const xr_op_result_t *r = &result;
  cr_assert_eq(r->outcome, XR_OP_SUCCEEDED, "%s on %s (init %s): %s: %s", json, device,
               init ? init : "default", xr_op_outcome_name(r->outcome), r->message);
  cr_assert(r->checked && r->check_passed, "%s on %s (init %s): check failed: %s", json, device,
            init ? init : "default", r->message);
  cr_assert_eq(r->output_count, op[0] == 'T' ? 3u : 7u, "%s: %zu outputs checked", json,
               r->output_count);
  const char *impl = kernel_impl(device, "routing");
  cr_assert_str_eq(r->kernel, impl, "%s: ran %s, expected %s", json, r->kernel, impl);
}

static inline void rt_arg(text_t *list, const char *type, const char *value) {
  put(list, "%s{\"type\": \"%s\", \"value\": %s}", list->n ? ", " : "", type, value);
}

/* TopK(x [rows, experts] (strides or NULL, offset), k, apply_softmax, 1, True). */
static inline const char *rt_topk(const char *dtype, int64_t rows, int64_t experts,
                                  const int64_t *strides, int64_t offset, int64_t k, bool softmax) {
  static text_t args, x, v;
  args.n = x.n = v.n = 0;
  rt_arg(&args, "Tensor", tensor(&x, dtype, 2, SHAPE(rows, experts), strides, offset));
  format(v.s, sizeof v.s, "%lld", (long long)k);
  rt_arg(&args, "int", v.s);
  rt_arg(&args, "bool", softmax ? "true" : "false");
  rt_arg(&args, "int", "1");
  rt_arg(&args, "bool", "true");
  return bundle("TopK", args.s, "");
}

/* SortTokens(expt_scal [rows, k], expt_indx [rows, k] (strides or NULL), experts). */
static inline const char *rt_sort(const char *scal_dtype, const char *ids_dtype, int64_t rows,
                                  int64_t k, const int64_t *ids_strides, int64_t experts) {
  static text_t args, s, i, v;
  args.n = s.n = i.n = v.n = 0;
  rt_arg(&args, "Tensor", tensor(&s, scal_dtype, 2, SHAPE(rows, k), NULL, 0));
  rt_arg(&args, "Tensor", tensor(&i, ids_dtype, 2, SHAPE(rows, k), ids_strides, 0));
  format(v.s, sizeof v.s, "%lld", (long long)experts);
  rt_arg(&args, "int", v.s);
  return bundle("SortTokens", args.s, "");
}

static inline void rt_topk_cases(const char *device) {
  /* the recorded shape: GPT-OSS's bf16 router logits, 32 experts, k 4 */
  rt_expect(rt_topk("c10::BFloat16", 32, 32, NULL, 0, 4, true), "TopK", device, NULL);
  rt_expect(rt_topk("c10::BFloat16", 32, 32, NULL, 0, 4, true), "TopK", device, "ties");
  /* k = 1, k = E, no softmax; f32 and f16 */
  rt_expect(rt_topk("float", 7, 32, NULL, 0, 1, true), "TopK", device, NULL);
  rt_expect(rt_topk("c10::Half", 5, 8, NULL, 0, 8, true), "TopK", device, "ties");
  rt_expect(rt_topk("float", 9, 20, NULL, 0, 3, false), "TopK", device, "ties");
  /* 128 experts (4 words), 1 row, decode-like; 300 tokens over 100 experts (a partial word) */
  rt_expect(rt_topk("c10::BFloat16", 1, 128, NULL, 0, 4, true), "TopK", device, NULL);
  rt_expect(rt_topk("c10::BFloat16", 300, 100, NULL, 0, 8, true), "TopK", device, "ties");
  rt_expect(rt_topk("float", 300, 100, NULL, 0, 8, false), "TopK", device, NULL);
  /* a transposed view with an offset */
  rt_expect(rt_topk("c10::Half", 33, 40, SHAPE(1, 34), 2, 6, true), "TopK", device, NULL);
}

static inline void rt_sort_cases(const char *device) {
  /* the recorded shape: bf16 weights, int16 ids, 32 experts */
  rt_expect(rt_sort("c10::BFloat16", "short int", 32, 4, NULL, 32), "SortTokens", device, NULL);
  rt_expect(rt_sort("c10::BFloat16", "short int", 32, 4, NULL, 32), "SortTokens", device, "wild");
  /* k = 1; one token; k = E */
  rt_expect(rt_sort("float", "int", 50, 1, NULL, 8), "SortTokens", device, NULL);
  rt_expect(rt_sort("c10::Half", "long int", 1, 4, NULL, 128), "SortTokens", device, NULL);
  rt_expect(rt_sort("float", "short int", 10, 6, NULL, 6), "SortTokens", device, NULL);
  /* many tokens on few experts: tiles of every block size, more than one per expert */
  rt_expect(rt_sort("c10::BFloat16", "short int", 1000, 4, NULL, 32), "SortTokens", device, NULL);
  rt_expect(rt_sort("c10::BFloat16", "int", 777, 2, NULL, 5), "SortTokens", device, "wild");
  /* transposed ids */
  rt_expect(rt_sort("float", "int", 40, 3, SHAPE(1, 40), 16), "SortTokens", device, NULL);
}

/* Planning errors reach the result with the op and the argument named. */
static inline void rt_expect_refused(const char *json, const char *what) {
  xr_op_result_t r = check_op(json, "cpu");
  cr_assert_neq(r.outcome, XR_OP_SUCCEEDED, "%s: planned", json);
  cr_assert(strstr(r.message, what), "%s: message '%s' lacks '%s'", json, r.message, what);
}

static inline void rt_error_cases(const char *device) {
  (void)device; /* planning only: the same on every driver */
  rt_expect_refused(rt_topk("c10::BFloat16", 4, 8, NULL, 0, 9, true), "k: 9 is out of range");
  rt_expect_refused(rt_topk("c10::BFloat16", 4, 8, NULL, 0, 0, true), "k: 0 is out of range");
  rt_expect_refused(rt_topk("int", 4, 8, NULL, 0, 2, true), "x: unsupported dtype");
  static text_t a, x;
  a.n = x.n = 0;
  rt_arg(&a, "Tensor", tensor(&x, "float", 3, SHAPE(2, 4, 8), NULL, 0));
  rt_arg(&a, "int", "2");
  rt_expect_refused(bundle("TopK", a.s, ""), "x: expected a 2-D tensor");
  a.n = x.n = 0;
  rt_arg(&a, "Tensor", tensor(&x, "float", 2, SHAPE(4, 8), NULL, 0));
  rt_arg(&a, "int", "2");
  rt_arg(&a, "bool", "true");
  rt_arg(&a, "int", "0");
  rt_expect_refused(bundle("TopK", a.s, ""), "dim: 0 is not supported");
  rt_expect_refused(rt_sort("float", "float", 4, 2, NULL, 8), "expt_indx: unsupported dtype");
  rt_expect_refused(rt_sort("float", "int", 4, 2, NULL, 0), "n_expts_tot: 0 is out of range");
  a.n = x.n = 0;
  rt_arg(&a, "Tensor", tensor(&x, "float", 2, SHAPE(4, 2), NULL, 0));
  rt_arg(&a, "Tensor", tensor(&x, "int", 2, SHAPE(4, 3), NULL, 0));
  rt_arg(&a, "int", "8");
  rt_expect_refused(bundle("SortTokens", a.s, ""), "expt_indx: expected expt_scal's shape");
  a.n = x.n = 0;
  rt_arg(&a, "Tensor", tensor(&x, "float", 2, SHAPE(4, 2), NULL, 0));
  rt_expect_refused(bundle("SortTokens", a.s, ""), "expt_indx");
}

#define ROUTING_MATRIX(GROUP)          \
  GROUP(topk, rt_topk_cases(device))   \
  GROUP(sort, rt_sort_cases(device))   \
  GROUP(errors, rt_error_cases(device))
#define ROUTING_MATRIX_GAPS(GAP)

#endif
