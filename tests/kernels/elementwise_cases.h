/* The elementwise family's cases (arithmetic, activations, gated activations, copies and
 * conversions, fills), written once and run on every driver (ELEMENTWISE_MATRIX at the end, the
 * elementwise_matrix_<driver> targets). Each case replays a one-op
 * bundle through the engine with --check (fresh seeded inputs, outputs poisoned) and expects
 * the device's "<device>.elementwise" kernel to match the reference. Sizes 1, 3, 17, 129 and
 * 1000; transposed, offset and broadcast views; f32, bf16, f16 and the four fp8 types. */
#ifndef XR_TESTS_KERNELS_ELEMENTWISE_CASES_H
#define XR_TESTS_KERNELS_ELEMENTWISE_CASES_H

#include "tests/kernels/bundle_text.h"

static const int64_t sizes[] = {1, 3, 17, 129, 1000};

/* The elementwise kernel of `device` must run the case and match the reference. */
static inline void ew_expect(const char *json, const char *device) {
  char prefix[64];
  format(prefix, sizeof prefix, "%s.elementwise", kernel_driver(device));
  expect_match(json, device, prefix);
}

static inline const char *binary(const char *op, const char *self, const char *other,
                                 const char *kwargs) {
  static char args[8192];
  format(args, sizeof args,
           "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}, "
           "{\"name\": \"other\", \"type\": \"%s\", \"value\": %s}",
           self, other[0] == '{' ? "Tensor" : "Scalar", other);
  return bundle(op, args, kwargs);
}

static inline const char *unary(const char *op, const char *self, const char *approximate) {
  static char kw[128];
  static char args[4096];
  format(args, sizeof args, "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}", self);
  if (approximate)
    format(kw, sizeof kw, "{\"name\": \"approximate\", \"type\": \"str\", \"value\": \"%s\"}", approximate);
  return bundle(op, args, approximate ? kw : NULL);
}

static inline const char *gated(const char *op, const char *out_name, const char *out,
                                const char *in) {
  static char args[4096];
  format(args, sizeof args,
           "{\"name\": \"%s\", \"type\": \"Tensor(a!)\", \"value\": %s}, "
           "{\"name\": \"input\", \"type\": \"Tensor\", \"value\": %s}",
           out_name, out, in);
  return bundle(op, args, NULL);
}

static inline const char *copy_(const char *self, const char *src) {
  static char args[4096];
  format(args, sizeof args,
           "{\"name\": \"self\", \"type\": \"Tensor(a!)\", \"value\": %s}, "
           "{\"name\": \"src\", \"type\": \"Tensor\", \"value\": %s}, "
           "{\"name\": \"non_blocking\", \"type\": \"bool\", \"value\": false}",
           self, src);
  return bundle("aten::copy_", args, NULL);
}

static inline const char *to_copy(const char *op, const char *self, int dtype_code) {
  static char args[4096], kw[128];
  format(args, sizeof args, "{\"name\": \"self\", \"type\": \"Tensor\", \"value\": %s}", self);
  format(kw, sizeof kw, "{\"name\": \"dtype\", \"type\": \"ScalarType?\", \"value\": %d}", dtype_code);
  return bundle(op, args, kw);
}

/* torch.ScalarType codes */
enum { T_HALF = 5, T_FLOAT = 6, T_BF16 = 15, T_E5M2 = 23, T_E4M3FN = 24, T_E5M2FNUZ = 25,
       T_E4M3FNUZ = 26 };

static inline const char *fill(const char *self, const char *value) {
  static char args[4096];
  format(args, sizeof args,
           "{\"name\": \"self\", \"type\": \"Tensor(a!)\", \"value\": %s}%s%s%s%s%s",
           self, value ? ", {\"name\": \"value\", \"type\": \"" : "",
           value ? (value[0] == '{' ? "Tensor" : "Scalar") : "", value ? "\", \"value\": " : "",
           value ? value : "", value ? "}" : "");
  static char json[8192];
  format(json, sizeof json, "%s", bundle(value ? "aten::fill_" : "aten::zero_", args, NULL));
  return json;
}

/* ------------------------------------------------------------------------------------------ */
/* binary arithmetic                                                                           */

static inline void ew_arithmetic_cases(const char *device) {
  const char *dtypes[] = {"float", "c10::BFloat16", "c10::Half"};
  const char *ops[] = {"aten::add", "aten::sub", "aten::mul", "aten::div"};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
    for (size_t d = 0; d < 3; d++)
      for (size_t o = 0; o < 4; o++) {
        text_t a = {0}, b = {0};
        const char *kw = o < 2 ? "{\"name\": \"alpha\", \"type\": \"Scalar\", \"value\": 0.5}" : NULL;
        ew_expect(binary(ops[o], tensor(&a, dtypes[d], 1, SHAPE(sizes[s]), NULL, 0),
                         tensor(&b, dtypes[d], 1, SHAPE(sizes[s]), NULL, 0), kw),
                  device);
      }
}

static inline void ew_broadcasting_cases(const char *device) {
  text_t a = {0}, b = {0};
  /* numpy broadcasting with alpha (the golden bf16 case's shape, other sizes) */
  ew_expect(binary("aten::add", tensor(&a, "c10::BFloat16", 3, SHAPE(8, 1, 65), NULL, 0),
                   tensor(&b, "c10::BFloat16", 3, SHAPE(1, 5, 65), NULL, 0),
                   "{\"name\": \"alpha\", \"type\": \"Scalar\", \"value\": 2}"),
            device);
  /* a transposed view plus an offset view */
  a.n = b.n = 0;
  ew_expect(binary("aten::mul", tensor(&a, "float", 2, SHAPE(33, 17), SHAPE(1, 33), 0),
                   tensor(&b, "float", 2, SHAPE(33, 17), SHAPE(20, 1), 7), NULL),
            device);
  /* float tensor * double 0-d tensor -> float (the real-trace fixture) */
  a.n = b.n = 0;
  ew_expect(binary("aten::mul", tensor(&a, "float", 3, SHAPE(1, 559, 64), SHAPE(35776, 64, 1), 0),
                   tensor(&b, "double", 0, NULL, NULL, 0), NULL),
            device);
  /* Scalar overloads: int and float scalars */
  a.n = 0;
  ew_expect(binary("aten::sub", tensor(&a, "c10::Half", 2, SHAPE(17, 129), NULL, 0), "0.25",
                   "{\"name\": \"alpha\", \"type\": \"Scalar\", \"value\": 3}"),
            device);
  a.n = 0;
  ew_expect(binary("aten::div", tensor(&a, "float", 1, SHAPE(1000), NULL, 0), "3", NULL), device);
  /* rounding modes */
  const char *modes[] = {"\"trunc\"", "\"floor\"", "null"};
  for (int m = 0; m < 3; m++) {
    char kw[128];
    format(kw, sizeof kw, "{\"name\": \"rounding_mode\", \"type\": \"str?\", \"value\": %s}", modes[m]);
    a.n = b.n = 0;
    ew_expect(binary("aten::div", tensor(&a, "float", 2, SHAPE(40, 50), NULL, 0),
                     tensor(&b, "float", 1, SHAPE(50), NULL, 0), kw),
              device);
  }
  /* 0-d with 0-d, and empty tensors */
  a.n = b.n = 0;
  ew_expect(binary("aten::add", tensor(&a, "float", 0, NULL, NULL, 0), tensor(&b, "float", 0, NULL, NULL, 0), NULL),
            device);
  a.n = b.n = 0;
  ew_expect(binary("aten::add", tensor(&a, "float", 2, SHAPE(0, 5), NULL, 0),
                   tensor(&b, "float", 1, SHAPE(5), NULL, 0), NULL),
            device);
  /* mixed float dtypes promote: bf16 + f32 -> f32 */
  a.n = b.n = 0;
  ew_expect(binary("aten::add", tensor(&a, "c10::BFloat16", 2, SHAPE(9, 31), NULL, 0),
                   tensor(&b, "float", 2, SHAPE(9, 31), NULL, 0), NULL),
            device);
}

static inline void ew_in_place_and_out_cases(const char *device) {
  text_t a = {0}, b = {0};
  char args[4096];
  format(args, sizeof args,
           "{\"name\": \"self\", \"type\": \"Tensor(a!)\", \"value\": %s}, "
           "{\"name\": \"other\", \"type\": \"Tensor\", \"value\": %s}",
           tensor(&a, "c10::BFloat16", 2, SHAPE(12, 40), SHAPE(1, 12), 0),
           tensor(&b, "c10::BFloat16", 1, SHAPE(40), NULL, 0));
  ew_expect(bundle("aten::mul_", args, NULL), device);
  ew_expect(bundle("aten::add_", args, "{\"name\": \"alpha\", \"type\": \"Scalar\", \"value\": -1.5}"),
            device);
  a.n = b.n = 0;
  text_t o = {0};
  char kw[1024];
  format(kw, sizeof kw, "{\"name\": \"out\", \"type\": \"Tensor(a!)\", \"value\": %s}",
           tensor(&o, "float", 2, SHAPE(6, 7), SHAPE(1, 6), 0));
  ew_expect(binary("aten::add", tensor(&a, "float", 2, SHAPE(6, 7), NULL, 0),
                   tensor(&b, "float", 2, SHAPE(6, 1), NULL, 0), kw),
            device);
}

/* ------------------------------------------------------------------------------------------ */
/* activations                                                                                 */

static inline void ew_activation_cases(const char *device) {
  const char *dtypes[] = {"float", "c10::BFloat16", "c10::Half"};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
    for (size_t d = 0; d < 3; d++) {
      text_t a = {0};
      const char *t = tensor(&a, dtypes[d], 2, SHAPE(3, sizes[s]), NULL, 0);
      ew_expect(unary("aten::gelu", t, "none"), device);
      ew_expect(unary("aten::gelu", t, "tanh"), device);
      ew_expect(unary("aten::silu", t, NULL), device);
    }
  text_t a = {0};
  const char *t = tensor(&a, "float", 2, SHAPE(40, 30), SHAPE(1, 41), 3); /* transposed, offset */
  ew_expect(unary("aten::silu", t, NULL), device);
  ew_expect(unary("aten::gelu", t, NULL), device);
}

static inline void ew_gated_cases(const char *device) {
  const char *ops[] = {"_C::silu_and_mul", "_C::gelu_and_mul", "_C::gelu_tanh_and_mul",
                       "sgl_kernel::silu_and_mul", "sgl_kernel::gelu_tanh_and_mul"};
  const char *dtypes[] = {"float", "c10::BFloat16", "c10::Half"};
  for (size_t o = 0; o < 5; o++)
    for (size_t d = 0; d < 3; d++)
      for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        text_t a = {0}, b = {0};
        int64_t n = sizes[s];
        ew_expect(gated(ops[o], o < 3 ? "result" : "out",
                        tensor(&a, dtypes[d], 2, SHAPE(5, n), NULL, 0),
                        tensor(&b, dtypes[d], 2, SHAPE(5, 2 * n), NULL, 0)),
                  device);
      }
  /* rows of a wider buffer (a strided view) with an offset; a 3-D input */
  text_t a = {0}, b = {0};
  ew_expect(gated("_C::silu_and_mul", "result", tensor(&a, "c10::BFloat16", 2, SHAPE(3, 344), NULL, 0),
                  tensor(&b, "c10::BFloat16", 2, SHAPE(3, 688), SHAPE(1000, 1), 11)),
            device);
  a.n = b.n = 0;
  ew_expect(gated("_C::silu_and_mul", "result", tensor(&a, "float", 3, SHAPE(2, 3, 17), NULL, 0),
                  tensor(&b, "float", 3, SHAPE(2, 3, 34), NULL, 0)),
            device);
}

/* ------------------------------------------------------------------------------------------ */
/* copies, conversions, fills                                                                  */

static inline void ew_copy_cases(const char *device) {
  text_t a = {0}, b = {0};
  /* same dtype (raw) contiguous, transposed, broadcast source */
  ew_expect(copy_(tensor(&a, "int", 2, SHAPE(1, 512), NULL, 0), tensor(&b, "int", 2, SHAPE(1, 512), NULL, 0)),
            device);
  a.n = b.n = 0;
  ew_expect(copy_(tensor(&a, "float", 2, SHAPE(33, 65), NULL, 0), tensor(&b, "float", 2, SHAPE(33, 65), SHAPE(1, 33), 0)),
            device);
  a.n = b.n = 0;
  ew_expect(copy_(tensor(&a, "c10::BFloat16", 2, SHAPE(4, 129), NULL, 0), tensor(&b, "c10::BFloat16", 1, SHAPE(129), NULL, 0)),
            device);
  /* conversions through copy_ */
  a.n = b.n = 0;
  ew_expect(copy_(tensor(&a, "float", 2, SHAPE(17, 30), NULL, 0), tensor(&b, "c10::Half", 2, SHAPE(17, 30), SHAPE(1, 17), 2)),
            device);
  /* _to_copy and to: f32 -> every narrow float, and back */
  const int codes[] = {T_HALF, T_BF16, T_E4M3FN, T_E5M2, T_E4M3FNUZ, T_E5M2FNUZ};
  const char *narrow[] = {"c10::Half", "c10::BFloat16", "c10::Float8_e4m3fn", "c10::Float8_e5m2",
                          "c10::Float8_e4m3fnuz", "c10::Float8_e5m2fnuz"};
  for (int k = 0; k < 6; k++)
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
      a.n = b.n = 0;
      ew_expect(to_copy("aten::_to_copy", tensor(&a, "float", 1, SHAPE(sizes[s]), NULL, 0), codes[k]),
                device);
      ew_expect(to_copy("aten::to", tensor(&b, narrow[k], 2, SHAPE(3, sizes[s]), NULL, 0), T_FLOAT),
                device);
    }
  /* bf16 -> fp8 */
  a.n = 0;
  ew_expect(to_copy("aten::_to_copy", tensor(&a, "c10::BFloat16", 1, SHAPE(100), NULL, 0), T_E4M3FN),
            device);
  /* 0-d and empty */
  a.n = 0;
  ew_expect(to_copy("aten::_to_copy", tensor(&a, "float", 0, NULL, NULL, 0), T_BF16), device);
  a.n = 0;
  ew_expect(to_copy("aten::_to_copy", tensor(&a, "float", 2, SHAPE(0, 3), NULL, 0), T_BF16), device);
}

static inline void ew_fill_cases(const char *device) {
  text_t a = {0}, b = {0};
  ew_expect(fill(tensor(&a, "float", 1, SHAPE(1000), NULL, 0), "2.5"), device);
  a.n = 0;
  ew_expect(fill(tensor(&a, "long int", 1, SHAPE(17), NULL, 0), "-1"), device);
  a.n = 0;
  ew_expect(fill(tensor(&a, "c10::BFloat16", 2, SHAPE(9, 13), SHAPE(1, 10), 4), "-0.375"), device);
  a.n = 0;
  ew_expect(fill(tensor(&a, "c10::Half", 2, SHAPE(3, 129), NULL, 0), NULL), device);
  a.n = 0;
  ew_expect(fill(tensor(&a, "long int", 1, SHAPE(0), NULL, 0), "-1"), device);
  a.n = b.n = 0;
  ew_expect(fill(tensor(&a, "float", 2, SHAPE(5, 6), NULL, 0), tensor(&b, "float", 0, NULL, NULL, 0)),
            device);
}

/* One case per op class and dtype pattern: what OpenCL runs (each distinct PoCL program costs
 * a compile of seconds) besides the CPU. */
static inline void ew_op_class_cases(const char *device) {
  text_t a = {0}, b = {0};
  ew_expect(binary("aten::add", tensor(&a, "c10::BFloat16", 3, SHAPE(8, 1, 65), NULL, 0),
                   tensor(&b, "c10::BFloat16", 3, SHAPE(1, 5, 65), NULL, 0),
                   "{\"name\": \"alpha\", \"type\": \"Scalar\", \"value\": 0.5}"),
            device);
  a.n = 0;
  ew_expect(binary("aten::sub", tensor(&a, "c10::Half", 2, SHAPE(17, 129), SHAPE(130, 1), 5), "0.25", NULL),
            device);
  /* float * double 0-d (the real-trace fixture), then the same program over sizes and views */
  a.n = b.n = 0;
  const char *scale = tensor(&b, "double", 0, NULL, NULL, 0);
  ew_expect(binary("aten::mul", tensor(&a, "float", 3, SHAPE(1, 559, 64), SHAPE(35776, 64, 1), 0), scale, NULL),
            device);
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    a.n = 0;
    ew_expect(binary("aten::mul", tensor(&a, "float", 2, SHAPE(sizes[s], 3), SHAPE(1, sizes[s]), 1), scale, NULL),
              device);
  }
  const char *floor_mode = "{\"name\": \"rounding_mode\", \"type\": \"str?\", \"value\": \"floor\"}";
  a.n = b.n = 0;
  ew_expect(binary("aten::div", tensor(&a, "float", 2, SHAPE(40, 50), NULL, 0), tensor(&b, "float", 1, SHAPE(50), NULL, 0),
                   floor_mode),
            device);
  a.n = b.n = 0;
  ew_expect(binary("aten::div", tensor(&a, "float", 0, NULL, NULL, 0), tensor(&b, "float", 0, NULL, NULL, 0), floor_mode),
            device);
  a.n = b.n = 0;
  ew_expect(binary("aten::div", tensor(&a, "float", 2, SHAPE(0, 5), NULL, 0), tensor(&b, "float", 1, SHAPE(5), NULL, 0),
                   floor_mode),
            device);
  a.n = 0;
  const char *t = tensor(&a, "c10::BFloat16", 2, SHAPE(33, 65), NULL, 0);
  ew_expect(unary("aten::gelu", t, "none"), device);
  ew_expect(unary("aten::gelu", t, "tanh"), device);
  ew_expect(unary("aten::silu", t, NULL), device);
  a.n = b.n = 0;
  ew_expect(gated("_C::silu_and_mul", "result", tensor(&a, "c10::BFloat16", 2, SHAPE(5, 344), NULL, 0),
                  tensor(&b, "c10::BFloat16", 2, SHAPE(5, 688), SHAPE(1000, 1), 3)),
            device);
  a.n = b.n = 0;
  ew_expect(gated("sgl_kernel::gelu_and_mul", "out", tensor(&a, "c10::Half", 2, SHAPE(3, 129), NULL, 0),
                  tensor(&b, "c10::Half", 2, SHAPE(3, 258), NULL, 0)),
            device);
  a.n = b.n = 0;
  ew_expect(copy_(tensor(&a, "int", 2, SHAPE(1, 512), NULL, 0), tensor(&b, "int", 2, SHAPE(1, 512), NULL, 0)),
            device);
  a.n = b.n = 0;
  ew_expect(copy_(tensor(&a, "float", 2, SHAPE(17, 30), NULL, 0), tensor(&b, "c10::BFloat16", 2, SHAPE(17, 30), SHAPE(1, 17), 2)),
            device);
  /* fp8: two encodings each way */
  a.n = b.n = 0;
  ew_expect(to_copy("aten::_to_copy", tensor(&a, "float", 1, SHAPE(1000), NULL, 0), T_E4M3FN), device);
  ew_expect(to_copy("aten::_to_copy", tensor(&b, "float", 1, SHAPE(1000), NULL, 0), T_E5M2FNUZ), device);
  a.n = b.n = 0;
  ew_expect(to_copy("aten::to", tensor(&a, "c10::Float8_e5m2", 1, SHAPE(129), NULL, 0), T_FLOAT), device);
  ew_expect(to_copy("aten::to", tensor(&b, "c10::Float8_e4m3fnuz", 1, SHAPE(129), NULL, 0), T_FLOAT), device);
  a.n = 0;
  ew_expect(fill(tensor(&a, "long int", 1, SHAPE(17), NULL, 0), "-1"), device);
  a.n = 0;
  ew_expect(fill(tensor(&a, "c10::BFloat16", 2, SHAPE(9, 13), SHAPE(1, 10), 4), "-0.375"), device);
}

/* The family's matrix (tests/kernels/matrix.c): every group on every driver. */
#define ELEMENTWISE_MATRIX(GROUP)                                             \
  GROUP(add_sub_mul_div_sizes_and_dtypes, ew_arithmetic_cases(device))        \
  GROUP(broadcasting_views_scalars_and_edges, ew_broadcasting_cases(device))  \
  GROUP(in_place_and_out, ew_in_place_and_out_cases(device))                  \
  GROUP(gelu_and_silu, ew_activation_cases(device))                           \
  GROUP(gated_activations, ew_gated_cases(device))                            \
  GROUP(copies_and_conversions, ew_copy_cases(device))                        \
  GROUP(fills, ew_fill_cases(device))                                         \
  GROUP(every_op_class, ew_op_class_cases(device))
/* PoCL compiles a program per op, dtype pattern and shape class, seconds each. */
#define EW_OPENCL_LEAN "a compile per program on PoCL: every_op_class runs one case of each class"
#define ELEMENTWISE_MATRIX_GAPS(GAP)                               \
  GAP(opencl, add_sub_mul_div_sizes_and_dtypes, EW_OPENCL_LEAN)    \
  GAP(opencl, broadcasting_views_scalars_and_edges, EW_OPENCL_LEAN) \
  GAP(opencl, in_place_and_out, EW_OPENCL_LEAN)                    \
  GAP(opencl, gelu_and_silu, EW_OPENCL_LEAN)                       \
  GAP(opencl, gated_activations, EW_OPENCL_LEAN)                   \
  GAP(opencl, copies_and_conversions, EW_OPENCL_LEAN)              \
  GAP(opencl, fills, EW_OPENCL_LEAN)

#endif
