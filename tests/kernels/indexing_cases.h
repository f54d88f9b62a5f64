/* The indexing ops' cases (aten::cat, index_select, embedding: "<device>.elementwise"; argmax:
 * "<device>.argmax"), written once and run on every driver (INDEXING_MATRIX at the end, the
 * indexing_matrix_<driver> targets). `every_case` false runs only the cases
 * marked for lean devices (OpenCL on PoCL, where each distinct program costs a compile of
 * seconds). Indices come from the engine's integer initialiser (0..15), so the indexed
 * dimensions have at least 16 entries. */
#ifndef XR_TESTS_KERNELS_INDEXING_CASES_H
#define XR_TESTS_KERNELS_INDEXING_CASES_H

#include "tests/kernels/bundle_text.h"

static const int64_t sizes[] = {1, 3, 17, 129, 1000};

/* Runs the case on `device` (its "<device>.<family>" kernel must match the reference), unless
 * the device runs lean cases only and this one is not `lean`. */
static inline void ix_expect(const char *json, const char *device, bool every_case, bool lean,
                             const char *family) {
  if (!every_case && !lean) return;
  char prefix[64];
  format(prefix, sizeof prefix, "%s.%s", kernel_driver(device), family);
  expect_match(json, device, prefix);
}

static inline const char *cat(const char *list, int64_t dim) {
  static char args[8192];
  format(args, sizeof args,
         "{\"name\": \"tensors\", \"type\": \"Tensor[]\", \"value\": [%s]}, "
         "{\"name\": \"dim\", \"type\": \"int\", \"value\": %lld}",
         list, (long long)dim);
  return bundle("aten::cat", args, NULL);
}

static inline const char *index_select(const char *self, int64_t dim, const char *index) {
  static char args[8192];
  format(args, sizeof args,
         "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"dim\", \"type\": \"int\", \"value\": %lld}, "
         "{\"name\": \"index\", \"type\": \"Tensor\", \"value\": %s}",
         self, (long long)dim, index);
  return bundle("aten::index_select", args, NULL);
}

static inline const char *embedding(const char *weight, const char *indices) {
  static char args[8192];
  format(args, sizeof args,
         "{\"name\": \"weight\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"indices\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"padding_idx\", \"type\": \"SymInt\", \"value\": -1}",
         weight, indices);
  return bundle("aten::embedding", args, NULL);
}

static inline const char *argmax(const char *self, const char *dim, bool keepdim) {
  static char args[8192];
  format(args, sizeof args,
         "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, "
         "{\"name\": \"dim\", \"type\": \"int?\", \"value\": %s}, "
         "{\"name\": \"keepdim\", \"type\": \"bool\", \"value\": %s}",
         self, dim, keepdim ? "true" : "false");
  return bundle("aten::argmax", args, NULL);
}

static inline void cat_cases(const char *device, bool every_case) {
  text_t l = {0};
  /* the real-trace shapes, scaled down: a broadcast (stride 0) view and a transposed one */
  tensor(&l, "c10::BFloat16", 3, SHAPE(4, 1, 24), SHAPE(0, 24, 1), 0);
  put(&l, ", ");
  tensor(&l, "c10::BFloat16", 3, SHAPE(4, 19, 24), SHAPE(456, 1, 19), 0);
  ix_expect(cat(l.s, 1), device, every_case, true, "elementwise");
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    l.n = 0;
    tensor(&l, "float", 2, SHAPE(3, sizes[s]), NULL, 0);
    put(&l, ", ");
    tensor(&l, "float", 1, SHAPE(0), NULL, 0); /* legacy: skipped */
    put(&l, ", ");
    tensor(&l, "float", 2, SHAPE(3, 5), NULL, 4);
    ix_expect(cat(l.s, -1), device, every_case, false, "elementwise");
  }
  l.n = 0;
  tensor(&l, "long int", 1, SHAPE(7), NULL, 0);
  put(&l, ", ");
  tensor(&l, "long int", 1, SHAPE(9), NULL, 0);
  ix_expect(cat(l.s, 0), device, every_case, false, "elementwise");
  /* mixed dtypes promote (bf16 with float32: float32), each piece converted as it is copied */
  l.n = 0;
  tensor(&l, "c10::BFloat16", 2, SHAPE(5, 129), SHAPE(1, 5), 0);
  put(&l, ", ");
  tensor(&l, "float", 2, SHAPE(3, 129), NULL, 0);
  put(&l, ", ");
  tensor(&l, "int", 2, SHAPE(2, 129), NULL, 3);
  ix_expect(cat(l.s, 0), device, every_case, true, "elementwise");
}

static inline void gather_cases(const char *device, bool every_case) {
  text_t a = {0}, b = {0};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    a.n = b.n = 0;
    ix_expect(index_select(tensor(&a, "float", 2, SHAPE(20, sizes[s]), NULL, 0), 0,
                           tensor(&b, "long int", 1, SHAPE(sizes[s]), NULL, 0)),
              device, every_case, false, "elementwise");
    a.n = b.n = 0;
    ix_expect(embedding(tensor(&a, "c10::BFloat16", 2, SHAPE(32, sizes[s]), NULL, 0),
                        tensor(&b, "long int", 2, SHAPE(2, 3), NULL, 0)),
              device, every_case, false, "elementwise");
  }
  /* dim 1 of a transposed view, int32 indices with a stride; 0-d index */
  a.n = b.n = 0;
  ix_expect(index_select(tensor(&a, "c10::Half", 2, SHAPE(7, 30), SHAPE(1, 7), 0), 1,
                         tensor(&b, "int", 1, SHAPE(9), SHAPE(2), 1)),
            device, every_case, true, "elementwise");
  a.n = b.n = 0;
  ix_expect(index_select(tensor(&a, "float", 3, SHAPE(3, 16, 5), NULL, 0), -2,
                         tensor(&b, "long int", 0, NULL, NULL, 0)),
            device, every_case, true, "elementwise");
  /* the real-trace embedding, smaller: bf16 [vocab, hidden] rows by int64 token ids */
  a.n = b.n = 0;
  ix_expect(embedding(tensor(&a, "c10::BFloat16", 2, SHAPE(251, 288), NULL, 0),
                      tensor(&b, "long int", 1, SHAPE(88), NULL, 0)),
            device, every_case, true, "elementwise");
  /* an int32 table (raw moves work for every dtype) */
  a.n = b.n = 0;
  ix_expect(index_select(tensor(&a, "int", 1, SHAPE(4096), NULL, 0), 0,
                         tensor(&b, "long int", 1, SHAPE(888), NULL, 0)),
            device, every_case, false, "elementwise");
  /* 8- and 1-byte elements (the gather's loops by element size), int32 and int64 indices */
  a.n = b.n = 0;
  ix_expect(index_select(tensor(&a, "long int", 1, SHAPE(300), NULL, 0), 0,
                         tensor(&b, "int", 1, SHAPE(77), NULL, 0)),
            device, every_case, false, "elementwise");
  a.n = b.n = 0;
  ix_expect(index_select(tensor(&a, "unsigned char", 1, SHAPE(300), NULL, 0), 0,
                         tensor(&b, "long int", 1, SHAPE(77), NULL, 0)),
            device, every_case, false, "elementwise");
  /* empty index */
  a.n = b.n = 0;
  ix_expect(index_select(tensor(&a, "float", 2, SHAPE(20, 4), NULL, 0), 0,
                         tensor(&b, "long int", 1, SHAPE(0), NULL, 0)),
            device, every_case, false, "elementwise");
}

static inline void argmax_cases(const char *device, bool every_case) {
  text_t a = {0};
  const char *dtypes[] = {"float", "c10::BFloat16", "c10::Half"};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
    for (int d = 0; d < 3; d++) {
      a.n = 0;
      const char *t = tensor(&a, dtypes[d], 2, SHAPE(4, sizes[s]), NULL, 0);
      ix_expect(argmax(t, "-1", false), device, every_case, false, "argmax");
      ix_expect(argmax(t, "0", true), device, every_case, false, "argmax");
      ix_expect(argmax(t, "null", false), device, every_case, false, "argmax");
    }
  /* a long reduction (split into chunks on the CPU), a transposed view, an offset */
  a.n = 0;
  ix_expect(argmax(tensor(&a, "float", 1, SHAPE(300000), NULL, 0), "null", false), device,
            every_case, false, "argmax");
  a.n = 0;
  ix_expect(argmax(tensor(&a, "float", 3, SHAPE(5, 17, 9), SHAPE(1, 45, 5), 0), "1", false),
            device, every_case, true, "argmax");
  a.n = 0;
  ix_expect(argmax(tensor(&a, "c10::BFloat16", 2, SHAPE(6, 129), NULL, 3), "null", true), device,
            every_case, true, "argmax");
  /* 0-d input */
  a.n = 0;
  ix_expect(argmax(tensor(&a, "float", 0, NULL, NULL, 0), "null", false), device, every_case,
            false, "argmax");
}

/* Every case on every driver but OpenCL, which runs the lean subset (PoCL compiles a program
 * per distinct op, dtype and shape class). */
static inline bool ix_every_case(const char *device) {
  return strcmp(device, "opencl") != 0;
}

/* The family's matrix (tests/kernels/matrix.c): every group on every driver. */
#define INDEXING_MATRIX(GROUP)                                                   \
  GROUP(cat, cat_cases(device, ix_every_case(device)))                           \
  GROUP(index_select_and_embedding, gather_cases(device, ix_every_case(device))) \
  GROUP(argmax, argmax_cases(device, ix_every_case(device)))
#define INDEXING_MATRIX_GAPS(GAP)

#endif
