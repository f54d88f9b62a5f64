/* The pointwise table's cases (kernels/pointwise_ops.h), written once and run on every driver
 * (POINTWISE_MATRIX at the end, the pointwise_matrix_<driver> targets).
 * Each replays a one-op bundle through the engine with --check (fresh seeded inputs, outputs
 * poisoned) and expects the device's elementwise kernel to match the reference: every row of
 * the table, sizes up to 2^20 + 3, transposed, offset, zero-stride and empty views, Scalar
 * operands and arguments, in-place, out= and _foreach_ forms. Integer compute runs on the
 * reference only; the fast kernels say so. */
#ifndef XR_TESTS_KERNELS_POINTWISE_CASES_H
#define XR_TESTS_KERNELS_POINTWISE_CASES_H

#include "tests/kernels/elementwise_cases.h"

typedef struct pw_row {
  const char *name, *kind, *operands;
} pw_row_t;

static const pw_row_t pw_rows[] = {
#define XR_PW(ID, NAME, KIND, OPERANDS, ...) {NAME, #KIND, OPERANDS},
#include "kernels/pointwise_ops.h"
#undef XR_PW
};

/* One argument snippet: {"name": name, "type": Tensor|Scalar, "value": value}. */
static inline void pw_arg(text_t *args, const char *name, const char *value) {
  put(args, "%s{\"name\": \"%s\", \"type\": \"%s\", \"value\": %s}", args->n ? ", " : "", name,
      value[0] == '{' || value[0] == '[' ? (value[0] == '[' ? "Tensor[]" : "Tensor") : "Scalar",
      value);
}

/* An op over up to three operand values (JSON: a tensor, a list of tensors, or a number) named
 * by `names` ("self,other"), with extra kwargs. */
static inline const char *pw_op(const char *op, const char *names, const char *const *values,
                                const char *kwargs) {
  text_t args = {0};
  char name[32];
  const char *p = names;
  for (int k = 0; p && *p; k++) {
    size_t n = strcspn(p, ",");
    format(name, sizeof name, "%.*s", (int)(n && p[n - 1] == '~' ? n - 1 : n), p);
    pw_arg(&args, name, values[k]);
    p = p[n] ? p + n + 1 : NULL;
  }
  return bundle(op, args.s, kwargs);
}

static inline int pw_operand_count(const char *operands) {
  int n = 1;
  for (const char *p = operands; *p; p++) n += *p == ',';
  return n;
}

/* The row's op on [rows, cols] (its first operand) and [cols] (the others, broadcast); bool
 * for the operands that take no part in promotion; ints for the BITS rows. */
static inline const char *pw_row_case(const pw_row_t *row, const char *dtype, int64_t rows,
                                      int64_t cols) {
  static text_t t[3];
  const char *values[3];
  int n = pw_operand_count(row->operands);
  const char *p = row->operands;
  for (int k = 0; k < n; k++) {
    size_t len = strcspn(p, ",");
    bool flag = p[len - 1] == '~';
    const char *d = flag ? "bool" : !strcmp(row->kind, "BITS") ? "int" : dtype;
    t[k].n = 0;
    values[k] = k == 0 ? tensor(&t[k], d, 2, SHAPE(rows, cols), NULL, 0)
                       : tensor(&t[k], d, 1, SHAPE(cols), NULL, 0);
    p += len + (p[len] ? 1 : 0);
  }
  char op[64];
  format(op, sizeof op, "aten::%s", row->name);
  /* clamp needs a bound; the other rows' Scalar arguments keep their defaults */
  const char *kw = strcmp(row->name, "clamp")
                       ? NULL
                       : "{\"name\": \"min\", \"type\": \"Scalar\", \"value\": -0.5}, "
                         "{\"name\": \"max\", \"type\": \"Scalar\", \"value\": 0.5}";
  static char json[16384];
  format(json, sizeof json, "%s", pw_op(op, row->operands, values, kw));
  return json;
}

/* Integer compute: the reference on cpu (its fast path computes in float), the device's
 * integer pipeline elsewhere. */
static inline void pw_expect_integer(const char *json, const char *device) {
  if (strcmp(device, "cpu")) {
    ew_expect(json, device);
    return;
  }
  xr_op_result_t r = check_op(json, device);
  cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s: %s", json, r.message);
  cr_assert(r.checked && r.check_passed, "%s: check failed", json);
  cr_assert_str_eq(r.kernel, "ref.elementwise", "%s", json);
}

/* ------------------------------------------------------------------------------------------ */

/* Every row, float32 and bfloat16, odd sizes with a broadcast operand. */
static inline void pw_every_row_cases(const char *device, const char *dtype) {
  for (size_t i = 0; i < sizeof pw_rows / sizeof *pw_rows; i++) {
    const char *json = pw_row_case(&pw_rows[i], dtype, 17, 33);
    if (!strcmp(pw_rows[i].kind, "BITS"))
      pw_expect_integer(json, device);
    else
      ew_expect(json, device);
  }
}

/* Sizes and views: exp (unary), maximum (binary), where (ternary). */
static inline void pw_size_and_view_cases(const char *device) {
  static const int64_t n[] = {1, 3, 17, 129, 1000, (1 << 20) + 3};
  for (size_t s = 0; s < sizeof n / sizeof *n; s++) {
    text_t a = {0}, b = {0}, c = {0};
    const char *x = tensor(&a, "float", 1, SHAPE(n[s]), NULL, 0);
    ew_expect(pw_op("aten::exp", "self", (const char *[]){x}, NULL), device);
    const char *y = tensor(&b, "c10::BFloat16", 1, SHAPE(n[s]), NULL, 0);
    ew_expect(pw_op("aten::maximum", "self,other", (const char *[]){x, y}, NULL), device);
    const char *m = tensor(&c, "bool", 1, SHAPE(n[s]), NULL, 0);
    ew_expect(pw_op("aten::where", "condition,self,other", (const char *[]){m, x, y}, NULL),
              device);
  }
  text_t a = {0}, b = {0}, c = {0};
  /* transposed, with a storage offset */
  const char *tr = tensor(&a, "c10::Half", 2, SHAPE(129, 17), SHAPE(1, 130), 3);
  ew_expect(pw_op("aten::sigmoid", "self", (const char *[]){tr}, NULL), device);
  /* transposed operands (cpu: tiles): edge tiles, a batch, a transposed third operand, and an
   * output large enough for streaming stores */
  a.n = b.n = c.n = 0;
  const char *t2 = tensor(&a, "float", 2, SHAPE(130, 70), SHAPE(1, 130), 0);
  const char *p2 = tensor(&b, "float", 2, SHAPE(130, 70), NULL, 0);
  ew_expect(pw_op("aten::maximum", "self,other", (const char *[]){p2, t2}, NULL), device);
  a.n = b.n = c.n = 0;
  const char *t3 = tensor(&a, "c10::BFloat16", 3, SHAPE(3, 65, 129), SHAPE(129 * 65, 1, 65), 0);
  const char *p3 = tensor(&b, "c10::BFloat16", 3, SHAPE(3, 65, 129), NULL, 0);
  const char *m3 = tensor(&c, "bool", 3, SHAPE(3, 65, 129), NULL, 0);
  ew_expect(pw_op("aten::where", "condition,self,other", (const char *[]){m3, t3, p3}, NULL),
            device);
  ew_expect(pw_op("aten::lerp", "self,end,weight", (const char *[]){p3, p3, t3}, NULL), device);
  a.n = 0;
  ew_expect(pw_op("aten::neg", "self",
                  (const char *[]){tensor(&a, "float", 2, SHAPE(1500, 1503), SHAPE(1, 1500), 0)},
                  NULL),
            device);
  /* zero strides: an expanded row and an expanded column */
  a.n = b.n = c.n = 0;
  const char *row = tensor(&a, "float", 2, SHAPE(64, 33), SHAPE(0, 1), 0);
  const char *col = tensor(&b, "float", 2, SHAPE(64, 33), SHAPE(1, 0), 0);
  ew_expect(pw_op("aten::atan2", "self,other", (const char *[]){row, col}, NULL), device);
  const char *m = tensor(&c, "bool", 2, SHAPE(64, 33), SHAPE(0, 1), 0);
  ew_expect(pw_op("aten::where", "condition,self,other", (const char *[]){m, row, col}, NULL),
            device);
  /* 0-size and 0-d */
  a.n = b.n = 0;
  const char *empty = tensor(&a, "float", 2, SHAPE(0, 7), NULL, 0);
  ew_expect(pw_op("aten::rsqrt", "self", (const char *[]){empty}, NULL), device);
  const char *zero_d = tensor(&b, "float", 0, NULL, NULL, 0);
  ew_expect(pw_op("aten::log1p", "self", (const char *[]){zero_d}, NULL), device);
}

/* Scalar operands, Scalar arguments, and the row's defaults. */
static inline void pw_scalar_cases(const char *device) {
  text_t a = {0}, b = {0}, c = {0};
  const char *x = tensor(&a, "c10::BFloat16", 2, SHAPE(9, 65), NULL, 0);
  ew_expect(pw_op("aten::pow", "self,exponent", (const char *[]){x, "3"}, NULL), device);
  ew_expect(pw_op("aten::pow", "self,exponent", (const char *[]){"2.0", x}, NULL), device);
  ew_expect(pw_op("aten::remainder", "self,other", (const char *[]){x, "-0.75"}, NULL), device);
  ew_expect(pw_op("aten::ge", "self,other", (const char *[]){x, "0.25"}, NULL), device);
  const char *m = tensor(&b, "bool", 1, SHAPE(65), NULL, 0);
  ew_expect(pw_op("aten::where", "condition,self,other", (const char *[]){m, "0.0", x}, NULL),
            device);
  ew_expect(pw_op("aten::masked_fill", "self,mask,value", (const char *[]){x, m, "-10000.0"}, NULL),
            device);
  const char *v = tensor(&c, "float", 0, NULL, NULL, 0);
  ew_expect(pw_op("aten::masked_fill", "self,mask,value", (const char *[]){x, m, v}, NULL), device);
  ew_expect(pw_op("aten::lerp", "self,end,weight", (const char *[]){x, x, "0.7"}, NULL), device);
  ew_expect(pw_op("aten::clamp", "self,min,max", (const char *[]){x, "-0.5", "1.25"}, NULL),
            device);
  ew_expect(pw_op("aten::clamp", "self,min", (const char *[]){x, "0.1"}, NULL), device);
  ew_expect(pw_op("aten::hardtanh", "self,min_val,max_val", (const char *[]){x, "-2", "0.5"}, NULL),
            device);
  ew_expect(pw_op("aten::leaky_relu", "self,negative_slope", (const char *[]){x, "0.2"}, NULL),
            device);
  ew_expect(
      pw_op("aten::threshold", "self,threshold,value", (const char *[]){x, "0.1", "20"}, NULL),
      device);
  ew_expect(pw_op("aten::softplus", "self,beta,threshold", (const char *[]){x, "2", "3"}, NULL),
            device);
  ew_expect(pw_op("aten::elu", "self,alpha,scale,input_scale",
                  (const char *[]){x, "1.5", "1.05", "2"}, NULL),
            device);
  ew_expect(pw_op("aten::round", "self", (const char *[]){x},
                  "{\"name\": \"decimals\", \"type\": \"int\", \"value\": 1}"),
            device);
  ew_expect(pw_op("aten::addcmul", "self,tensor1,tensor2", (const char *[]){x, x, x},
                  "{\"name\": \"value\", \"type\": \"Scalar\", \"value\": -0.5}"),
            device);
  ew_expect(pw_op("aten::nan_to_num", "self,nan,posinf", (const char *[]){x, "1.5", "100"}, NULL),
            device);
}

/* In place, out=, fp8, and the _foreach_ lists. */
static inline void pw_form_cases(const char *device) {
  text_t a = {0}, b = {0}, c = {0};
  const char *x = tensor(&a, "float", 2, SHAPE(33, 17), NULL, 0);
  ew_expect(pw_op("aten::clamp_min_", "self,min", (const char *[]){x, "0.0"}, NULL), device);
  ew_expect(pw_op("aten::lerp_", "self,end,weight", (const char *[]){x, x, x}, NULL), device);
  const char *y = tensor(&b, "c10::BFloat16", 1, SHAPE(17), NULL, 0);
  ew_expect(pw_op("aten::mul_", "self,other", (const char *[]){x, y}, NULL), device);
  char kw[512];
  format(kw, sizeof kw, "{\"name\": \"out\", \"type\": \"Tensor(a!)\", \"value\": %s}",
         tensor(&c, "bool", 2, SHAPE(33, 17), NULL, 0));
  ew_expect(pw_op("aten::lt", "self,other", (const char *[]){x, y}, kw), device);
  a.n = 0;
  const char *f8 = tensor(&a, "c10::Float8_e4m3fn", 1, SHAPE(129), NULL, 0);
  ew_expect(pw_op("aten::neg", "self", (const char *[]){f8}, NULL), device);
  ew_expect(pw_op("aten::abs_", "self", (const char *[]){f8}, NULL), device);
  /* lists */
  text_t l1 = {0}, l2 = {0};
  put(&l1, "[");
  tensor(&l1, "float", 1, SHAPE(32), NULL, 0);
  put(&l1, ", ");
  tensor(&l1, "float", 2, SHAPE(7, 3), NULL, 0);
  put(&l1, "]");
  put(&l2, "[");
  tensor(&l2, "c10::BFloat16", 1, SHAPE(32), NULL, 0);
  put(&l2, ", ");
  tensor(&l2, "float", 2, SHAPE(7, 3), SHAPE(1, 7), 0);
  put(&l2, "]");
  ew_expect(pw_op("aten::_foreach_copy_", "self,src", (const char *[]){l1.s, l2.s}, NULL), device);
  ew_expect(pw_op("aten::_foreach_mul_", "self,scalar", (const char *[]){l1.s, "0.5"}, NULL),
            device);
  ew_expect(pw_op("aten::_foreach_add_", "self,other", (const char *[]){l1.s, l2.s},
                  "{\"name\": \"alpha\", \"type\": \"Scalar\", \"value\": 2}"),
            device);
  ew_expect(
      pw_op("aten::_foreach_lerp_", "self,end,weight", (const char *[]){l1.s, l2.s, "0.1"}, NULL),
      device);
  ew_expect(pw_op("aten::_foreach_sqrt_", "self", (const char *[]){l1.s}, NULL), device);
  xr_op_result_t r =
      check_op(pw_op("aten::_foreach_sqrt", "self", (const char *[]){l1.s}, NULL), device);
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "only the in-place forms replay"), "%s", r.message);
}

/* Integer compute: exact in 64 bits with wrap-around; integer results from float operands are
 * the reference's only. */
static inline void pw_integer_cases(const char *device) {
  text_t a = {0}, b = {0}, c = {0};
  const char *i64 = tensor(&a, "long int", 2, SHAPE(1, 141), NULL, 0);
  pw_expect_integer(pw_op("aten::eq", "self,other", (const char *[]){i64, "0"}, NULL), device);
  pw_expect_integer(pw_op("aten::neg", "self", (const char *[]){i64}, NULL), device);
  const char *i32 = tensor(&b, "int", 1, SHAPE(141), NULL, 0);
  pw_expect_integer(pw_op("aten::remainder", "self,other", (const char *[]){i64, i32}, NULL),
                    device);
  pw_expect_integer(pw_op("aten::bitwise_xor", "self,other", (const char *[]){i32, i64}, NULL),
                    device);
  pw_expect_integer(
      pw_op("aten::clamp", "self,min,max", (const char *[]){i64, "-3", "1000000"}, NULL), device);
  pw_expect_integer(pw_op("aten::pow", "self,exponent", (const char *[]){i32, "3"}, NULL), device);
  const char *m = tensor(&c, "bool", 1, SHAPE(141), NULL, 0);
  pw_expect_integer(
      pw_op("aten::masked_fill_", "self,mask,value", (const char *[]){i64, m, "-1"}, NULL), device);
  pw_expect_integer(
      pw_op("aten::where", "condition,self,other", (const char *[]){m, i64, i32}, NULL), device);
  /* truth values are exact in float: the fast path takes them */
  ew_expect(pw_op("aten::logical_not", "self", (const char *[]){m}, NULL), device);
  /* the arithmetic ops and conversions between integer dtypes take the same pipeline */
  pw_expect_integer(pw_op("aten::mul", "self,other", (const char *[]){i64, i32}, NULL), device);
  pw_expect_integer(
      pw_op("aten::div", "self,other", (const char *[]){i64, i32},
            "{\"name\": \"rounding_mode\", \"type\": \"str?\", \"value\": \"floor\"}"),
      device);
  b.n = 0;
  const char *i32_row = tensor(&b, "int", 2, SHAPE(1, 141), NULL, 0);
  pw_expect_integer(copy_(i32_row, i64), device);
  /* an integer result from a float operand: truncation the fast kernels do not do */
  b.n = 0;
  const char *f32 = tensor(&b, "float", 2, SHAPE(1, 141), NULL, 0);
  xr_op_result_t r = check_op(copy_(i64, f32), device);
  if (strcmp(device, "cpu")) {
    cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "on %s: %s", device, r.message);
    cr_assert(strstr(r.message, "results are not implemented when computed in"), "%s", r.message);
  } else {
    cr_assert_eq(r.outcome, XR_OP_SUCCEEDED, "%s", r.message);
    cr_assert_str_eq(r.kernel, "ref.elementwise");
  }
}

/* Creation and data movement (kernels/movement.c): sequences, fills of new tensors, and copies
 * through rearranged views. Sequences run on the reference on cpu. */
static inline void pw_movement_cases(const char *device) {
  const char *sequence_kernel = !strcmp(device, "cpu") ? "ref.elementwise" : NULL;
  char prefix[64];
  format(prefix, sizeof prefix, "%s.elementwise", kernel_driver(device));
  const char *seq = sequence_kernel ? sequence_kernel : prefix;
  text_t a = {0}, b = {0};
  /* arange.start_out into a recorded empty out (resized), as SGLang's trace has it */
  char args[1024];
  format(args, sizeof args,
         "{\"name\": null, \"type\": \"Scalar\", \"value\": 238}, "
         "{\"name\": null, \"type\": \"Scalar\", \"value\": 270}, "
         "{\"name\": null, \"type\": \"Scalar\", \"value\": 1}, "
         "{\"name\": null, \"type\": \"Tensor\", \"value\": %s}",
         tensor(&a, "long int", 1, SHAPE(0), NULL, 0));
  expect_match(bundle("aten::arange", args, NULL), device, seq);
  expect_match(bundle("aten::arange", "{\"name\": \"end\", \"type\": \"Scalar\", \"value\": 1000}",
                      "{\"name\": \"dtype\", \"type\": \"ScalarType\", \"value\": 6}"),
               device, seq);
  expect_match(bundle("aten::arange",
                      "{\"name\": \"start\", \"type\": \"Scalar\", \"value\": 0.5}, "
                      "{\"name\": \"end\", \"type\": \"Scalar\", \"value\": 10.0}, "
                      "{\"name\": \"step\", \"type\": \"Scalar\", \"value\": 0.25}",
                      NULL),
               device, seq);
  expect_match(bundle("aten::linspace",
                      "{\"name\": \"start\", \"type\": \"Scalar\", \"value\": -1.0}, "
                      "{\"name\": \"end\", \"type\": \"Scalar\", \"value\": 1.0}, "
                      "{\"name\": \"steps\", \"type\": \"int\", \"value\": 129}",
                      NULL),
               device, seq);
  ew_expect(bundle("aten::full",
                   "{\"name\": \"size\", \"type\": \"int[]\", \"value\": [17, 33]}, "
                   "{\"name\": \"fill_value\", \"type\": \"Scalar\", \"value\": 1.5}",
                   "{\"name\": \"dtype\", \"type\": \"ScalarType\", \"value\": 15}"),
            device);
  ew_expect(bundle("aten::zeros", "{\"name\": \"size\", \"type\": \"int[]\", \"value\": [1000, 3]}",
                   NULL),
            device);
  a.n = 0;
  ew_expect(pw_op("aten::ones_like", "self",
                  (const char *[]){tensor(&a, "c10::Half", 2, SHAPE(3, 4), NULL, 0)}, NULL),
            device);
  /* copies through views */
  a.n = 0;
  const char *tr = tensor(&a, "c10::BFloat16", 2, SHAPE(129, 17), SHAPE(1, 130), 2);
  ew_expect(pw_op("aten::clone", "self", (const char *[]){tr}, NULL), device);
  ew_expect(pw_op("aten::contiguous", "self", (const char *[]){tr}, NULL), device);
  b.n = 0;
  const char *x = tensor(&b, "float", 3, SHAPE(3, 17, 5), NULL, 0);
  ew_expect(pw_op("aten::flip", "self,dims", (const char *[]){x, "[0, -1]"}, NULL), device);
  ew_expect(pw_op("aten::roll", "self,shifts,dims", (const char *[]){x, "[2, -3]", "[0, 1]"}, NULL),
            device);
  ew_expect(pw_op("aten::roll", "self,shifts", (const char *[]){x, "[-38]"}, NULL), device);
  ew_expect(pw_op("aten::roll", "self,shifts", (const char *[]){tr, "[1000]"}, NULL), device);
  ew_expect(pw_op("aten::repeat", "self,repeats", (const char *[]){x, "[2, 1, 3, 1]"}, NULL),
            device);
  ew_expect(pw_op("aten::constant_pad_nd", "self,pad,value",
                  (const char *[]){x, "[1, 2, -3, 1]", "-1.5"}, NULL),
            device);
  ew_expect(pw_op("aten::narrow_copy", "self,dim,start,length", (const char *[]){x, "1", "-5", "4"},
                  NULL),
            device);
  ew_expect(
      pw_op("aten::repeat_interleave", "self,repeats,dim", (const char *[]){x, "3", "1"}, NULL),
      device);
  ew_expect(pw_op("aten::repeat_interleave", "self,repeats", (const char *[]){x, "2"}, NULL),
            device);
  a.n = 0;
  xr_op_result_t r =
      check_op(pw_op("aten::repeat_interleave", "self,repeats,dim",
                     (const char *[]){x, tensor(&a, "long int", 1, SHAPE(3), NULL, 0), "0"}, NULL),
               device);
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "a Tensor of repeats"), "%s", r.message);
  text_t l = {0};
  put(&l, "[");
  tensor(&l, "float", 2, SHAPE(4, 5), NULL, 0);
  put(&l, ", ");
  tensor(&l, "float", 2, SHAPE(4, 5), SHAPE(1, 4), 0);
  put(&l, "]");
  ew_expect(pw_op("aten::stack", "tensors,dim", (const char *[]){l.s, "-1"}, NULL), device);
  /* split / unbind copies: returned pieces, an out= list, unequal sizes along a strided dim */
  a.n = b.n = 0;
  x = tensor(&b, "float", 3, SHAPE(3, 17, 5), SHAPE(1, 15, 3), 0);
  ew_expect(pw_op("aten::split_with_sizes_copy", "self,split_sizes,dim",
                  (const char *[]){x, "[4, 0, 13]", "1"}, NULL),
            device);
  ew_expect(pw_op("aten::split_copy", "self,split_size,dim", (const char *[]){x, "2", "0"}, NULL),
            device);
  put(&a, "{\"name\": \"out\", \"type\": \"Tensor(a!)[]\", \"value\": [");
  for (int k = 0; k < 5; k++) {
    put(&a, k ? ", " : "");
    tensor(&a, "float", 2, SHAPE(3, 17), k == 2 ? SHAPE(1, 3) : NULL, 0);
  }
  put(&a, "]}");
  ew_expect(pw_op("aten::unbind_copy", "self,dim", (const char *[]){x, "-1"}, a.s), device);
  r = check_op(pw_op("aten::unbind_copy", "self,dim", (const char *[]){x, "1"}, NULL), device);
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message); /* past XR_MAX_RETURNS (8) */
  cr_assert(strstr(r.message, "17 pieces"), "%s", r.message);
  r = check_op(pw_op("aten::split_with_sizes_copy", "self,split_sizes,dim",
                     (const char *[]){x, "[4, 4]", "1"}, NULL),
               device);
  cr_assert_eq(r.outcome, XR_OP_FAILED, "%s", r.message);
  cr_assert(strstr(r.message, "add up to 8, dimension 1 has 17"), "%s", r.message);
  /* tril / triu: a transposed view, odd sizes, a batch, blocks crossing the diagonal, in place
   * and out= */
  a.n = b.n = 0;
  tr = tensor(&a, "c10::BFloat16", 2, SHAPE(129, 17), SHAPE(1, 130), 2);
  x = tensor(&b, "float", 3, SHAPE(3, 17, 5), NULL, 0);
  ew_expect(pw_op("aten::tril", "self,diagonal", (const char *[]){tr, "3"}, NULL), device);
  ew_expect(pw_op("aten::triu", "self,diagonal", (const char *[]){x, "-2"}, NULL), device);
  a.n = 0;
  ew_expect(pw_op("aten::tril_", "self,diagonal",
                  (const char *[]){tensor(&a, "long int", 3, SHAPE(2, 129, 1003), NULL, 0), "500"},
                  NULL),
            device);
  a.n = b.n = 0;
  put(&b, "{\"name\": \"out\", \"type\": \"Tensor(a!)\", \"value\": ");
  tensor(&b, "c10::Half", 2, SHAPE(40, 7), SHAPE(1, 40), 0);
  put(&b, "}");
  ew_expect(pw_op("aten::triu", "self",
                  (const char *[]){tensor(&a, "c10::Half", 2, SHAPE(40, 7), NULL, 0)}, b.s),
            device);
}

/* The family's matrix (tests/kernels/matrix.c): every group on every driver. */
#define POINTWISE_MATRIX(GROUP)                                       \
  GROUP(every_row_f32, pw_every_row_cases(device, "float"))           \
  GROUP(every_row_bf16, pw_every_row_cases(device, "c10::BFloat16"))  \
  GROUP(sizes_and_views, pw_size_and_view_cases(device))              \
  GROUP(scalars_and_arguments, pw_scalar_cases(device))               \
  GROUP(in_place_out_fp8_and_lists, pw_form_cases(device))            \
  GROUP(integers, pw_integer_cases(device))                           \
  GROUP(creation_and_movement, pw_movement_cases(device))
#define POINTWISE_MATRIX_GAPS(GAP) \
  GAP(opencl, every_row_bf16, "a PoCL compile per program, minutes cold: every_row_f32 runs each row")

#endif
