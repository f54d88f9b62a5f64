/* The vendor-BLAS mapping (kernels/gpu/blas_layout.c) checked on the CPU, no GPU needed: every
 * GEMM case of tests/kernels/gemm_cases.h (and a few more) is planned and mapped onto the
 * column-major strided-batched call cuBLASLt / hipBLASLt receive; where it maps, that call is
 * evaluated here exactly as the library defines it (op(A) op(B), leading dimensions, batch
 * strides, beta * C or the BIAS epilogue) on random storage, bounds-checked, and must write
 * exactly what the problem's own row-major addressing computes, bit for bit (same products,
 * same summation order), leaving every other element of the output storage untouched. Also
 * the implementations' supports() without a GPU: library off or absent, declined problems. */
#include <stdlib.h>

#include "tests/gpu/blas_case.h"
#include "tests/kernels/gemm_cases.h"

typedef struct storage {
  double *data;
  int64_t size;
  int64_t offset; /* the view's first element */
} storage_t;

static int64_t extent(const xr_tensor_spec_t *t) {
  int64_t last = t->storage_offset;
  for (int d = 0; d < t->rank; d++) {
    if (t->shape[d] == 0) return t->storage_offset;
    last += (t->shape[d] - 1) * t->strides[d];
  }
  int64_t size = last + 1;
  return t->storage_size > size ? t->storage_size : size;
}

static uint64_t rng_state;
static double next_random(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static double at(const storage_t *s, int64_t index) {
  cr_assert(index >= 0 && index < s->size, "read at %lld outside storage of %lld", (long long)index,
            (long long)s->size);
  return s->data[index];
}

/* The library's D = alpha * op(A) op(B) + beta * C (+ bias), column-major, strided batches. */
static void emulate(const blas_case_t *c, storage_t *st, storage_t *d_out) {
  const xr_blas_gemm_t *g = &c->g;
  const xr_gemm_problem_t *p = c->problem;
  const int index_of[] = {[XR_GEMM_A] = p->a.index, [XR_GEMM_B] = p->b.index,
                          [XR_GEMM_C] = p->c.index, [XR_GEMM_OUT] = p->out.index};
  const storage_t *a = &st[index_of[g->a.role]], *b = &st[index_of[g->b.role]];
  const storage_t *cc = p->c.index >= 0 ? &st[p->c.index] : NULL;
  for (int64_t batch = 0; batch < g->batch; batch++) {
    for (int64_t j = 0; j < g->n; j++) {
      for (int64_t i = 0; i < g->m; i++) {
        double sum = 0;
        for (int64_t k = 0; k < g->k; k++) {
          int64_t ai = g->a.transposed ? k + i * g->a.ld : i + k * g->a.ld;
          int64_t bi = g->b.transposed ? j + k * g->b.ld : k + j * g->b.ld;
          /* the problem multiplies a * b; with the transpose trick the library's A is b */
          double av = at(a, a->offset + batch * g->a.batch_stride + ai);
          double bv = at(b, b->offset + batch * g->b.batch_stride + bi);
          sum += g->swapped ? bv * av : av * bv;
        }
        double value = g->alpha * sum;
        if (g->has_c) {
          value += g->beta * at(cc, cc->offset + batch * g->c.batch_stride + i + j * g->c.ld);
        }
        if (g->bias) value += at(cc, cc->offset + i);
        int64_t di = d_out->offset + batch * g->d.batch_stride + i + j * g->d.ld;
        cr_assert(di >= 0 && di < d_out->size, "write outside the output storage");
        d_out->data[di] = value;
      }
    }
  }
}

/* out = alpha * a b + beta * c through the problem's own (row-major, per-batch) addressing. */
static void direct(const blas_case_t *c, storage_t *st, storage_t *out) {
  const xr_gemm_problem_t *p = c->problem;
  const storage_t *a = &st[p->a.index], *b = &st[p->b.index];
  const storage_t *cc = p->c.index >= 0 ? &st[p->c.index] : NULL;
  for (int64_t batch = 0; batch < p->batch; batch++) {
    int64_t oa = a->offset + xr_gemm_offset(&p->a, p, batch);
    int64_t ob = b->offset + xr_gemm_offset(&p->b, p, batch);
    int64_t oo = out->offset + xr_gemm_offset(&p->out, p, batch);
    for (int64_t r = 0; r < p->M; r++) {
      for (int64_t col = 0; col < p->N; col++) {
        double sum = 0;
        for (int64_t k = 0; k < p->K; k++) {
          sum += at(a, oa + r * p->a.row_stride + k * p->a.col_stride) *
                 at(b, ob + k * p->b.row_stride + col * p->b.col_stride);
        }
        double value = (float)p->alpha * sum;
        if (cc) {
          int64_t ci = cc->offset + xr_gemm_offset(&p->c, p, batch) + r * p->c.row_stride +
                       col * p->c.col_stride;
          value += (float)p->beta * at(cc, ci);
        }
        out->data[oo + r * p->out.row_stride + col * p->out.col_stride] = value;
      }
    }
  }
}

static int mapped_cases, declined_cases;

static void check_layout(const xr_blas_limits_t *limits, const char *json) {
  blas_case_t c;
  blas_case_open(json, limits, &c);
  if (c.mapped != XR_OK) {
    cr_assert_eq(c.mapped, XR_UNIMPLEMENTED, "%s", c.reason);
    cr_assert(strstr(c.reason, c.plan.op->name) == c.reason, "reason must name the op: %s",
              c.reason);
    cr_log_info("declined: %s", c.reason);
    declined_cases++;
    blas_case_close(&c);
    return;
  }
  mapped_cases++;
  size_t bindings = c.plan.input_count + c.plan.return_count;
  storage_t *st = calloc(bindings, sizeof *st);
  for (size_t i = 0; i < bindings; i++) {
    if (i < c.plan.input_count) {
      st[i].size = extent(c.plan.inputs[i]);
      st[i].offset = c.plan.inputs[i]->storage_offset;
    } else {
      const xr_tensor_desc_t *r = &c.plan.returns[i - c.plan.input_count];
      st[i].size = 1;
      for (int d = 0; d < r->rank; d++) st[i].size *= r->shape[d];
    }
    st[i].data = malloc((size_t)(st[i].size > 0 ? st[i].size : 1) * sizeof(double));
    for (int64_t e = 0; e < st[i].size; e++) st[i].data[e] = next_random();
  }
  /* Two copies of the output storage: the library's result and the direct one. */
  int out = c.problem->out.index;
  storage_t expected = st[out];
  expected.data = malloc((size_t)st[out].size * sizeof(double));
  memcpy(expected.data, st[out].data, (size_t)st[out].size * sizeof(double));
  direct(&c, st, &expected);
  emulate(&c, st, &st[out]);
  for (int64_t e = 0; e < expected.size; e++) {
    cr_assert(expected.data[e] == st[out].data[e], "%s: element %lld: library layout %g, direct %g",
              json, (long long)e, st[out].data[e], expected.data[e]);
  }
  free(expected.data);
  for (size_t i = 0; i < bindings; i++) free(st[i].data);
  free(st);
  blas_case_close(&c);
}

static xr_blas_limits_t current_limits;
static void run_layout(const target_t *t, const char *json, const char *dtype, uint64_t seed) {
  (void)t, (void)dtype;
  rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
  check_layout(&current_limits, json);
}

static void all_products(bool batched_bias) {
  current_limits = (xr_blas_limits_t){.batched_bias = batched_bias};
  mapped_cases = declined_cases = 0;
  const target_t layout = {.device = "none", .run = run_layout};
  products(&layout, "float");
  products(&layout, "c10::BFloat16");
  products(&layout, "c10::Half");
}

Test(blas_layout, every_gemm_case_maps_exactly_or_is_declined_cublaslt_limits) {
  all_products(true);
  cr_log_info("%d mapped, %d declined", mapped_cases, declined_cases);
  /* Per dtype 17 cases: all but the batch-broadcasting matmul and the addmm whose C has its
   * own row pitch map. */
  cr_assert_eq(mapped_cases, 3 * 15, "%d mapped", mapped_cases);
}

Test(blas_layout, hipblaslt_limits_keep_batched_biases_off) {
  all_products(false);
  cr_log_info("%d mapped, %d declined", mapped_cases, declined_cases);
  /* ... and the linear with a 3-D input, whose bias would repeat over batches. */
  cr_assert_eq(mapped_cases, 3 * 14, "%d mapped", mapped_cases);
}

/* A column-major output (an `out=` view with strides [1, M]) maps without the transpose
 * trick; a transposed C that is not laid out like the output is declined. */
Test(blas_layout, column_major_output_and_mismatched_c) {
  json_t j;
  const xr_blas_limits_t limits = {.batched_bias = true};
  {
    tensor_t a = mat_view("float", 3, 1000), b = mat_t("float", 1000, 17);
    tensor_t out = {.dtype = "float", .rank = 2, .shape = {3, 17}, .strides = {1, 3}};
    arg_t args[] = {{"self", "Tensor", &a, NULL}, {"mat2", "Tensor", &b, NULL},
                    {"out", "Tensor(a!)", &out, NULL}};
    rng_state = 7;
    op_json(&j, "aten::mm", args, 3);
    blas_case_t c;
    blas_case_open(j.text, &limits, &c);
    cr_assert_eq(c.mapped, XR_OK, "%s", c.reason);
    cr_assert(!c.g.swapped && c.g.m == 3 && c.g.n == 17 && c.g.d.ld == 3);
    cr_assert(c.g.a.transposed && c.g.a.ld == 1005 && !c.g.b.transposed && c.g.b.ld == 1000);
    blas_case_close(&c);
    check_layout(&limits, j.text);
  }
  {
    tensor_t c = mat_t("float", 17, 33), a = mat("float", 17, 9), b = mat("float", 9, 33);
    arg_t args[] = {{"self", "Tensor", &c, NULL}, {"mat1", "Tensor", &a, NULL},
                    {"mat2", "Tensor", &b, NULL}};
    op_json(&j, "aten::addmm", args, 3);
    blas_case_t bc;
    blas_case_open(j.text, &limits, &bc);
    cr_assert_eq(bc.mapped, XR_UNIMPLEMENTED);
    cr_assert(strstr(bc.reason, "added tensor"), "%s", bc.reason);
    blas_case_close(&bc);
  }
  {
    /* addmm with a bias row and beta != 1 cannot use the epilogue. */
    tensor_t c = vec("float", 33), a = mat("float", 17, 9), b = mat("float", 9, 33);
    arg_t args[] = {{"self", "Tensor", &c, NULL}, {"mat1", "Tensor", &a, NULL},
                    {"mat2", "Tensor", &b, NULL}, {"beta", "Scalar", NULL, "0.5"}};
    op_json(&j, "aten::addmm", args, 4);
    blas_case_t bc;
    blas_case_open(j.text, &limits, &bc);
    cr_assert_eq(bc.mapped, XR_UNIMPLEMENTED);
    blas_case_close(&bc);
  }
  {
    /* The bias row with beta 1 is the BIAS epilogue; alpha still scales the product. */
    tensor_t c = vec("float", 33), a = mat("float", 17, 9), b = mat_t("float", 9, 33);
    arg_t args[] = {{"self", "Tensor", &c, NULL}, {"mat1", "Tensor", &a, NULL},
                    {"mat2", "Tensor", &b, NULL}, {"alpha", "Scalar", NULL, "2"}};
    op_json(&j, "aten::addmm", args, 4);
    blas_case_t bc;
    blas_case_open(j.text, &limits, &bc);
    cr_assert_eq(bc.mapped, XR_OK, "%s", bc.reason);
    cr_assert(bc.g.bias && !bc.g.has_c && bc.g.beta == 0.0f && bc.g.alpha == 2.0f);
    blas_case_close(&bc);
    check_layout(&limits, j.text);
  }
}

/* supports() without a GPU: the library absent or disabled is UNAVAILABLE with every path
 * tried, a problem the Lt path does not take is UNIMPLEMENTED naming the op, and a device that
 * is not the library's (cpu here) is refused, never a crash. */
static const char *simple_mm(json_t *j, const char *dtype) {
  tensor_t a = mat(dtype, 17, 33), b = mat(dtype, 33, 9);
  arg_t args[] = {{"self", "Tensor", &a, NULL}, {"mat2", "Tensor", &b, NULL}};
  return op_json(j, "aten::mm", args, 2);
}

Test(blas_supports, disabled_library_is_unavailable) {
  setenv("XR_CUBLASLT_LIBRARY", "off", 1);
  json_t j;
  blas_case_t c;
  blas_case_open(simple_mm(&j, "float"), NULL, &c);
  xr_hal_device_t *cpu;
  cr_assert_eq(xr_hal_device_create("cpu", &cpu), XR_OK);
  cr_assert_eq(xr_gemm_cublaslt_impl.supports(&c.plan, cpu), XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), "cuBLASLt unavailable: XR_CUBLASLT_LIBRARY=off"), "%s",
            xr_last_error());
  xr_hal_device_destroy(cpu);
  blas_case_close(&c);
}

Test(blas_supports, absent_library_names_every_path) {
  json_t j;
  blas_case_t c;
  blas_case_open(simple_mm(&j, "c10::Half"), NULL, &c);
  xr_hal_device_t *cpu;
  cr_assert_eq(xr_hal_device_create("cpu", &cpu), XR_OK);
  xr_status_t status = xr_gemm_hipblaslt_impl.supports(&c.plan, cpu);
  if (!strstr(xr_last_error(), "hipBLASLt unavailable")) {
    xr_hal_device_destroy(cpu);
    blas_case_close(&c);
    cr_skip_test("hipBLASLt loads here: %s", xr_last_error());
  }
  cr_assert_eq(status, XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), "libhipblaslt.so.1: not found; libhipblaslt.so.0: not found"),
            "%s", xr_last_error());
  xr_hal_device_destroy(cpu);
  blas_case_close(&c);
}

Test(blas_supports, declined_problems_and_foreign_devices) {
  xr_hal_device_t *cpu;
  cr_assert_eq(xr_hal_device_create("cpu", &cpu), XR_OK);
  json_t j;
  blas_case_t c;
  /* fp8 _scaled_mm: declined before the library is even needed. */
  tensor_t a = mat("c10::Float8_e4m3fn", 16, 32), b = mat_t("c10::Float8_e4m3fn", 32, 16);
  tensor_t sa = {.dtype = "float", .rank = 0, .init = "uniform"};
  tensor_t sb = {.dtype = "float", .rank = 0, .init = "uniform"};
  arg_t args[] = {{"self", "Tensor", &a, NULL}, {"mat2", "Tensor", &b, NULL},
                  {"scale_a", "Tensor", &sa, NULL}, {"scale_b", "Tensor", &sb, NULL},
                  {"out_dtype", "ScalarType?", NULL, "15"}};
  blas_case_open(op_json(&j, "aten::_scaled_mm", args, 5), NULL, &c);
  xr_status_t status = xr_gemm_cublaslt_impl.supports(&c.plan, cpu);
  if (status == XR_UNAVAILABLE) {
    xr_hal_device_destroy(cpu);
    blas_case_close(&c);
    cr_skip_test("%s", xr_last_error());
  }
  cr_assert_eq(status, XR_UNIMPLEMENTED, "%s", xr_last_error());
  cr_assert(strstr(xr_last_error(), "aten::_scaled_mm: c10::Float8_e4m3fn x "
                                    "c10::Float8_e4m3fn -> c10::BFloat16: the Lt path takes"),
            "%s", xr_last_error());
  blas_case_close(&c);
  /* A plain product the mapping takes, on a device that is not cuda: refused with a sentence. */
  blas_case_open(simple_mm(&j, "c10::BFloat16"), NULL, &c);
  cr_assert_eq(c.mapped, XR_OK, "%s", c.reason);
  cr_assert_neq(xr_gemm_cublaslt_impl.supports(&c.plan, cpu), XR_OK);
  cr_assert(strstr(xr_last_error(), "cpu"), "%s", xr_last_error());
  blas_case_close(&c);
  xr_hal_device_destroy(cpu);
}

/* Block-scaled _scaled_mm (mxfp8, mxfp4, nvfp4) is declined by both Lt implementations with the
 * reason, whether their library loads or not, and whatever the device: gpu.gemm_tiled runs it. */
Test(blas_supports, block_scaled_mm_is_declined_with_the_reason) {
  xr_hal_device_t *cpu;
  cr_assert_eq(xr_hal_device_create("cpu", &cpu), XR_OK);
  const char *forms[][3] = {{"c10::Float8_e4m3fn", "c10::Float8_e8m0fnu", "32"},
                            {"c10::Float4_e2m1fn_x2", "c10::Float8_e8m0fnu", "32"},
                            {"c10::Float4_e2m1fn_x2", "c10::Float8_e4m3fn", "16"}};
  for (size_t f = 0; f < 3; f++) {
    bool fp4 = strstr(forms[f][0], "Float4") != NULL;
    int64_t kb = 64 / atoi(forms[f][2]);
    tensor_t a = mat(forms[f][0], 16, fp4 ? 32 : 64), b = mat_t(forms[f][0], fp4 ? 32 : 64, 16);
    tensor_t sa = mat(forms[f][1], 16, kb), sb = mat(forms[f][1], 16, kb);
    arg_t args[] = {{"self", "Tensor", &a, NULL}, {"mat2", "Tensor", &b, NULL},
                    {"scale_a", "Tensor", &sa, NULL}, {"scale_b", "Tensor", &sb, NULL},
                    {"out_dtype", "ScalarType?", NULL, "15"}};
    json_t j;
    blas_case_t c;
    blas_case_open(op_json(&j, "aten::_scaled_mm", args, 5), NULL, &c);
    const xr_kernel_impl_t *impls[] = {&xr_gemm_cublaslt_impl, &xr_gemm_hipblaslt_impl};
    for (size_t i = 0; i < 2; i++) {
      cr_assert_eq(impls[i]->supports(&c.plan, cpu), XR_UNIMPLEMENTED, "%s: %s", impls[i]->name,
                   xr_last_error());
      char want[128];
      snprintf(want, sizeof want, "block-scaled (%s, %s scales per %s)", forms[f][0], forms[f][1],
               forms[f][2]);
      cr_assert(strstr(xr_last_error(), want) && strstr(xr_last_error(), "gpu.gemm_tiled"),
                "%s: %s", impls[i]->name, xr_last_error());
    }
    blas_case_close(&c);
  }
  xr_hal_device_destroy(cpu);
}
