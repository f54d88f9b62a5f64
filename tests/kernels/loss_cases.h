/* The loss family's cases (aten::mse_loss with reduction none / mean / sum, and
 * aten::mse_loss_backward), written once: LOSS_MATRIX at the end lists them for
 * tests/kernels/matrix.c, which runs them on every driver (loss_matrix_<driver>). Each case
 * replays a one-op bundle through the engine with --check (the device's kernel against the CPU
 * reference on the same seeded inputs, outputs poisoned) and expects a `prefix` kernel to have
 * run: f32, f16 and bf16; rows shorter and longer than a run of the cpu kernel (512); a target
 * broadcast along rows and columns, transposed and offset views, 0-d and empty tensors;
 * out= / grad_input= tensors. */
#ifndef XR_TESTS_KERNELS_LOSS_CASES_H
#define XR_TESTS_KERNELS_LOSS_CASES_H

#include "tests/kernels/bundle_text.h"
#include "tests/kernels/check.h"

static const char *const loss_dtypes[] = {"float", "c10::Half", "c10::BFloat16"};

/* A tensor argument `name` of the given view. */
static inline const char *loss_arg(text_t *t, const char *name, const char *type,
                                   const char *dtype, int rank, const int64_t *shape,
                                   const int64_t *strides, int64_t offset) {
  size_t start = t->n;
  put(t, "%s{\"name\": \"%s\", \"type\": \"%s\", \"value\": ", t->n ? ", " : "", name, type);
  tensor(t, dtype, rank, shape, strides, offset);
  put(t, "}");
  return t->s + start;
}

static inline void loss_reduction(text_t *t, int reduction) {
  put(t, "%s{\"name\": \"reduction\", \"type\": \"int\", \"value\": %d}", t->n ? ", " : "",
      reduction);
}

typedef struct loss_view {
  int rank;
  int64_t shape[4], strides[4], offset;
  bool strided;
} loss_view_t;

#define LOSS_VIEW(r, ...) ((loss_view_t){.rank = r, .shape = {__VA_ARGS__}})

static inline const char *loss_view_arg(text_t *t, const char *name, const char *dtype,
                                        const loss_view_t *v) {
  return loss_arg(t, name, "Tensor", dtype, v->rank, v->shape, v->strided ? v->strides : NULL,
                  v->offset);
}

/* mse_loss(self, target, reduction). */
static inline const char *loss_forward(const char *dtype, loss_view_t self, loss_view_t target,
                                       int reduction) {
  static text_t args;
  args.n = 0;
  loss_view_arg(&args, "self", dtype, &self);
  loss_view_arg(&args, "target", dtype, &target);
  loss_reduction(&args, reduction);
  return bundle("aten::mse_loss", args.s, NULL);
}

/* mse_loss_backward(grad_output, self, target, reduction): grad_output 0-d for mean and sum. */
static inline const char *loss_backward(const char *dtype, loss_view_t grad, loss_view_t self,
                                        loss_view_t target, int reduction) {
  static text_t args;
  args.n = 0;
  loss_view_arg(&args, "grad_output", dtype, &grad);
  loss_view_arg(&args, "self", dtype, &self);
  loss_view_arg(&args, "target", dtype, &target);
  loss_reduction(&args, reduction);
  return bundle("aten::mse_loss_backward", args.s, NULL);
}

static inline void loss_expect(const char *json, const char *device, const char *prefix) {
  expect_match(json, device, prefix);
}

/* Forward and backward, every reduction and dtype, over contiguous shapes. */
static inline void loss_shape_cases(const char *device, const char *prefix) {
  const loss_view_t shapes[] = {LOSS_VIEW(2, 7, 3), LOSS_VIEW(2, 5, 1000), LOSS_VIEW(1, 4099),
                                LOSS_VIEW(3, 2, 3, 17), LOSS_VIEW(0)};
  const loss_view_t scalar = LOSS_VIEW(0);
  for (size_t d = 0; d < 3; d++)
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
      for (int reduction = 0; reduction < 3; reduction++) {
        loss_view_t v = shapes[s];
        loss_expect(loss_forward(loss_dtypes[d], v, v, reduction), device, prefix);
        loss_expect(loss_backward(loss_dtypes[d], reduction ? scalar : v, v, v, reduction), device,
                    prefix);
      }
}

/* Broadcast targets and gradients, transposed and offset views, out= tensors, empty ones. */
static inline void loss_view_cases(const char *device, const char *prefix) {
  const loss_view_t x = LOSS_VIEW(2, 33, 600), row = LOSS_VIEW(1, 600), col = LOSS_VIEW(2, 33, 1);
  loss_view_t t = {.rank = 2, .shape = {33, 600}, .strides = {1, 40}, .strided = true};
  loss_view_t off = {.rank = 2, .shape = {33, 600}, .strides = {700, 1}, .offset = 9, .strided = true};
  const loss_view_t scalar = LOSS_VIEW(0);
  for (size_t d = 0; d < 3; d++) {
    const char *dt = loss_dtypes[d];
    for (int reduction = 0; reduction < 3; reduction++) {
      loss_expect(loss_forward(dt, x, row, reduction), device, prefix);
      loss_expect(loss_forward(dt, col, x, reduction), device, prefix); /* self broadcast */
      loss_expect(loss_forward(dt, t, off, reduction), device, prefix);
      loss_expect(loss_backward(dt, reduction ? scalar : x, t, row, reduction), device, prefix);
    }
    loss_expect(loss_backward(dt, row, off, x, 0), device, prefix); /* a gradient row */
  }
  /* out= and grad_input= (a transposed one) */
  static text_t args, kwargs;
  args.n = kwargs.n = 0;
  loss_view_arg(&args, "self", "float", &x);
  loss_view_arg(&args, "target", "float", &x);
  loss_reduction(&args, 1);
  loss_arg(&kwargs, "out", "Tensor(a!)", "float", 0, NULL, NULL, 0);
  loss_expect(bundle("aten::mse_loss", args.s, kwargs.s), device, prefix);
  args.n = kwargs.n = 0;
  loss_view_arg(&args, "grad_output", "c10::BFloat16", &x);
  loss_view_arg(&args, "self", "c10::BFloat16", &x);
  loss_view_arg(&args, "target", "c10::BFloat16", &row);
  loss_reduction(&args, 0);
  loss_arg(&kwargs, "grad_input", "Tensor(a!)", "c10::BFloat16", 2, SHAPE(33, 600), SHAPE(1, 33), 0);
  loss_expect(bundle("aten::mse_loss_backward", args.s, kwargs.s), device, prefix);
  /* empty: none writes nothing, sum is 0 (mean's NaN is checked in loss_test) */
  loss_expect(loss_forward("float", LOSS_VIEW(2, 0, 3), LOSS_VIEW(2, 0, 3), 0), device, prefix);
  loss_expect(loss_forward("float", LOSS_VIEW(2, 0, 3), LOSS_VIEW(2, 0, 3), 2), device, prefix);
}

/* The family's matrix (tests/kernels/matrix.c). */
#define LOSS_MATRIX(GROUP)                                      \
  GROUP(shapes, loss_shape_cases(device, kernel_impl(device, "loss"))) \
  GROUP(views, loss_view_cases(device, kernel_impl(device, "loss")))
#define LOSS_MATRIX_GAPS(GAP)
#endif
