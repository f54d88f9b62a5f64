/* The indexing ops through the replay engine with --check, on "cpu" (fast vs reference) and
 * "opencl": aten::cat (cpu.elementwise copies per input), index_select and embedding (gathers),
 * argmax (its own family). Indices come from the engine's integer initialiser (0..15), so the
 * indexed dimensions here have at least 16 entries. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "tests/kernels/bundle_text.h"

/* cpu (fast vs reference) then opencl, for a family whose kernels are "<driver>.<family>". */
static void both(const char *json, const char *family) {
  char cpu[64], cl[64];
  format(cpu, sizeof cpu, "cpu.%s", family);
  format(cl, sizeof cl, "opencl.%s", family);
  expect_match(json, "cpu", cpu);
  expect_match(json, "opencl", cl);
}

/* Plans without running; returns the status (and the plan when OK, freed by the caller). */
static xr_status_t plan_of(const char *json, xr_bundle_t **out_bundle, xr_op_plan_t *plan) {
  cr_assert_eq(xr_bundle_decode((const uint8_t *)json, strlen(json), "case", ".", NULL, out_bundle),
               XR_OK, "%s", xr_last_error());
  return xr_kernel_plan(&(*out_bundle)->ops[0], plan);
}

static const int64_t sizes[] = {1, 3, 17, 129, 1000};

/* ------------------------------------------------------------------------------------------ */
/* cat                                                                                         */

static const char *cat(const char *list, int64_t dim) {
  static char args[8192];
  format(args, sizeof args,
         "{\"name\": \"tensors\", \"type\": \"Tensor[]\", \"value\": [%s]}, "
         "{\"name\": \"dim\", \"type\": \"int\", \"value\": %lld}",
         list, (long long)dim);
  return bundle("aten::cat", args, NULL);
}

Test(indexing, cat) {
  text_t l = {0};
  /* the real-trace shapes, scaled down: a broadcast (stride 0) view and a transposed one */
  tensor(&l, "c10::BFloat16", 3, SHAPE(4, 1, 24), SHAPE(0, 24, 1), 0);
  put(&l, ", ");
  tensor(&l, "c10::BFloat16", 3, SHAPE(4, 19, 24), SHAPE(456, 1, 19), 0);
  both(cat(l.s, 1), "elementwise");
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    l.n = 0;
    tensor(&l, "float", 2, SHAPE(3, sizes[s]), NULL, 0);
    put(&l, ", ");
    tensor(&l, "float", 1, SHAPE(0), NULL, 0); /* legacy: skipped */
    put(&l, ", ");
    tensor(&l, "float", 2, SHAPE(3, 5), NULL, 4);
    expect_match(cat(l.s, -1), "cpu", "cpu.elementwise");
  }
  l.n = 0;
  tensor(&l, "long int", 1, SHAPE(7), NULL, 0);
  put(&l, ", ");
  tensor(&l, "long int", 1, SHAPE(9), NULL, 0);
  expect_match(cat(l.s, 0), "cpu", "cpu.elementwise");
}

Test(indexing, cat_errors) {
  text_t l = {0};
  tensor(&l, "float", 2, SHAPE(3, 4), NULL, 0);
  put(&l, ", ");
  tensor(&l, "float", 2, SHAPE(5, 4), NULL, 0);
  xr_bundle_t *b;
  xr_op_plan_t p;
  cr_assert_eq(plan_of(cat(l.s, 1), &b, &p), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "tensors[1]"), "%s", xr_last_error());
  xr_bundle_destroy(b);
  cr_assert_eq(plan_of(cat(l.s, 2), &b, &p), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "dim"), "%s", xr_last_error());
  xr_bundle_destroy(b);
  cr_assert_eq(plan_of(cat(l.s, 0), &b, &p), XR_OK, "%s", xr_last_error());
  cr_assert_eq(p.returns[0].shape[0], 8);
  cr_assert_eq(p.returns[0].shape[1], 4);
  xr_kernel_plan_free(&p);
  xr_bundle_destroy(b);
}

/* ------------------------------------------------------------------------------------------ */
/* index_select and embedding                                                                  */

static const char *index_select(const char *self, int64_t dim, const char *index) {
  static char args[8192];
  format(args, sizeof args,
         "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"dim\", \"type\": \"int\", \"value\": %lld}, "
         "{\"name\": \"index\", \"type\": \"Tensor\", \"value\": %s}",
         self, (long long)dim, index);
  return bundle("aten::index_select", args, NULL);
}

static const char *embedding(const char *weight, const char *indices) {
  static char args[8192];
  format(args, sizeof args,
         "{\"name\": \"weight\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"indices\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"padding_idx\", \"type\": \"SymInt\", \"value\": -1}",
         weight, indices);
  return bundle("aten::embedding", args, NULL);
}

Test(indexing, index_select_and_embedding) {
  text_t a = {0}, b = {0};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    a.n = b.n = 0;
    expect_match(index_select(tensor(&a, "float", 2, SHAPE(20, sizes[s]), NULL, 0), 0,
                              tensor(&b, "long int", 1, SHAPE(sizes[s]), NULL, 0)),
                 "cpu", "cpu.elementwise");
    a.n = b.n = 0;
    expect_match(embedding(tensor(&a, "c10::BFloat16", 2, SHAPE(32, sizes[s]), NULL, 0),
                           tensor(&b, "long int", 2, SHAPE(2, 3), NULL, 0)),
                 "cpu", "cpu.elementwise");
  }
  /* dim 1 of a transposed view, int32 indices with a stride; 0-d index */
  a.n = b.n = 0;
  both(index_select(tensor(&a, "c10::Half", 2, SHAPE(7, 30), SHAPE(1, 7), 0), 1,
                    tensor(&b, "int", 1, SHAPE(9), SHAPE(2), 1)), "elementwise");
  a.n = b.n = 0;
  both(index_select(tensor(&a, "float", 3, SHAPE(3, 16, 5), NULL, 0), -2,
                    tensor(&b, "long int", 0, NULL, NULL, 0)), "elementwise");
  /* the real-trace embedding, smaller: bf16 [vocab, hidden] rows by int64 token ids */
  a.n = b.n = 0;
  both(embedding(tensor(&a, "c10::BFloat16", 2, SHAPE(251, 288), NULL, 0),
                 tensor(&b, "long int", 1, SHAPE(88), NULL, 0)), "elementwise");
  /* an int32 table (raw moves work for every dtype) */
  a.n = b.n = 0;
  expect_match(index_select(tensor(&a, "int", 1, SHAPE(4096), NULL, 0), 0,
                            tensor(&b, "long int", 1, SHAPE(888), NULL, 0)),
               "cpu", "cpu.elementwise");
  /* empty index */
  a.n = b.n = 0;
  expect_match(index_select(tensor(&a, "float", 2, SHAPE(20, 4), NULL, 0), 0,
                            tensor(&b, "long int", 1, SHAPE(0), NULL, 0)),
               "cpu", "cpu.elementwise");
}

Test(indexing, gather_errors) {
  text_t a = {0}, b = {0};
  xr_bundle_t *bd;
  xr_op_plan_t p;
  cr_assert_eq(plan_of(index_select(tensor(&a, "float", 2, SHAPE(20, 4), NULL, 0), 0,
                                    tensor(&b, "float", 1, SHAPE(3), NULL, 0)), &bd, &p),
               XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "index"), "%s", xr_last_error());
  xr_bundle_destroy(bd);
  a.n = b.n = 0;
  cr_assert_eq(plan_of(embedding(tensor(&a, "float", 3, SHAPE(2, 20, 4), NULL, 0),
                                 tensor(&b, "long int", 1, SHAPE(3), NULL, 0)), &bd, &p),
               XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "weight"), "%s", xr_last_error());
  xr_bundle_destroy(bd);
  a.n = b.n = 0;
  cr_assert_eq(plan_of(embedding(tensor(&a, "float", 2, SHAPE(20, 4), NULL, 0),
                                 tensor(&b, "long int", 2, SHAPE(3, 5), NULL, 0)), &bd, &p), XR_OK);
  cr_assert_eq(p.returns[0].rank, 3);
  cr_assert_eq(p.returns[0].shape[2], 4);
  xr_kernel_plan_free(&p);
  xr_bundle_destroy(bd);
}

/* ------------------------------------------------------------------------------------------ */
/* argmax                                                                                      */

static const char *argmax(const char *self, const char *dim, bool keepdim) {
  static char args[8192];
  format(args, sizeof args,
         "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"dim\", \"type\": \"int?\", \"value\": %s}, "
         "{\"name\": \"keepdim\", \"type\": \"bool\", \"value\": %s}",
         self, dim, keepdim ? "true" : "false");
  return bundle("aten::argmax", args, NULL);
}

Test(indexing, argmax) {
  text_t a = {0};
  const char *dtypes[] = {"float", "c10::BFloat16", "c10::Half"};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
    for (int d = 0; d < 3; d++) {
      a.n = 0;
      const char *t = tensor(&a, dtypes[d], 2, SHAPE(4, sizes[s]), NULL, 0);
      expect_match(argmax(t, "-1", false), "cpu", "cpu.argmax");
      expect_match(argmax(t, "0", true), "cpu", "cpu.argmax");
      expect_match(argmax(t, "null", false), "cpu", "cpu.argmax");
    }
  /* a long reduction split into chunks, a transposed view, int64 input on the reference */
  a.n = 0;
  expect_match(argmax(tensor(&a, "float", 1, SHAPE(300000), NULL, 0), "null", false), "cpu", "cpu.argmax");
  a.n = 0;
  both(argmax(tensor(&a, "float", 3, SHAPE(5, 17, 9), SHAPE(1, 45, 5), 0), "1", false), "argmax");
  a.n = 0;
  both(argmax(tensor(&a, "c10::BFloat16", 2, SHAPE(6, 129), NULL, 3), "null", true), "argmax");
  a.n = 0;
  expect_match(argmax(tensor(&a, "long int", 1, SHAPE(100), NULL, 0), "0", false), "cpu", "ref.argmax");
  /* 0-d input */
  a.n = 0;
  expect_match(argmax(tensor(&a, "float", 0, NULL, NULL, 0), "null", false), "cpu", "cpu.argmax");
}
