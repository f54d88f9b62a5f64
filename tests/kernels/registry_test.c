/* The family registry (kernels/family_list.h): every op name belongs to one family, every family
 * plans its ops, and the initializers of data-dependent ops come from their families; an
 * implementation declining in prepare hands the op on (over a family of stubs). */
#include <criterion/criterion.h>
#include <string.h>

#include "formats/model.h"
#include "kernels/kernels.h"

Test(registry, every_op_name_belongs_to_exactly_one_family) {
  size_t n = xr_kernel_op_names(NULL, 0);
  cr_assert_gt(n, 50, "only %zu op names", n);
  const char **names = calloc(n, sizeof *names);
  cr_assert_eq(xr_kernel_op_names(names, n), n);
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      cr_assert(strcmp(names[i], names[j]) != 0, "%s is listed by two families", names[i]);
  free(names);
}

/* Plans `name` with the given tensor arguments (contiguous; each shape is {rank, dims...}; index
 * arguments i64, the rest f32) and returns the family's initializer for it. */
static xr_initializer_fn initializer_of(const char *name, const char *const *args,
                                        const int64_t (*shapes)[3], size_t count) {
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_create(&b), XR_OK);
  xr_op_t *op = xr_bundle_add_op(b, name);
  for (size_t i = 0; i < count; i++) {
    xr_dtype_t dtype = strcmp(args[i], "indices") && strcmp(args[i], "index") ? XR_DTYPE_F32
                                                                              : XR_DTYPE_I64;
    cr_assert_not_null(
        xr_op_add_tensor(b->arena, op, args[i], dtype, (int32_t)shapes[i][0], shapes[i] + 1, NULL));
  }
  if (!strcmp(name, "aten::index_select")) cr_assert_eq(xr_op_add_int(b->arena, op, "dim", 0), XR_OK);
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(op, &plan), XR_OK, "%s: %s", name, xr_last_error());
  xr_initializer_fn fn = xr_kernel_initializer(&plan);
  xr_kernel_plan_free(&plan);
  xr_bundle_destroy(b);
  return fn;
}

Test(registry, families_own_the_initializers_of_data_dependent_ops) {
  static const char *const mm[] = {"self", "mat2"};
  static const int64_t mm_shapes[][3] = {{2, 4, 8}, {2, 8, 2}};
  cr_assert_null(initializer_of("aten::mm", mm, mm_shapes, 2), "a GEMM's inputs are not data");
  static const char *const embedding[] = {"weight", "indices"};
  static const int64_t embedding_shapes[][3] = {{2, 16, 4}, {2, 2, 3}};
  cr_assert_not_null(initializer_of("aten::embedding", embedding, embedding_shapes, 2));
  static const char *const index_select[] = {"self", "index"};
  static const int64_t index_select_shapes[][3] = {{2, 16, 4}, {1, 5}};
  xr_initializer_fn a = initializer_of("aten::index_select", index_select, index_select_shapes, 2);
  xr_initializer_fn e = initializer_of("aten::embedding", embedding, embedding_shapes, 2);
  cr_assert(a && e && a != e, "embedding and index_select index different dimensions");
}

Test(registry, an_unknown_op_has_no_family) {
  xr_op_t op = {.name = "x::nope"};
  xr_op_plan_t plan;
  cr_assert_eq(xr_kernel_plan(&op, &plan), XR_NOT_FOUND);
  cr_assert_str_eq(xr_last_error(), "no kernel for op 'x::nope'");
}

/* ---- an implementation declining in prepare (xr_kernel_prepare), over a family of stubs ---- */

static int taken_state;

static xr_status_t declines(const xr_op_plan_t *plan, xr_hal_device_t *device,
                           const xr_tensor_t *tensors, void **out_state) {
  (void)plan, (void)device, (void)tensors, (void)out_state;
  return xr_error(XR_UNIMPLEMENTED, "no algorithm at these pointers' alignment");
}

static xr_status_t fails(const xr_op_plan_t *plan, xr_hal_device_t *device,
                         const xr_tensor_t *tensors, void **out_state) {
  (void)plan, (void)device, (void)tensors, (void)out_state;
  return xr_error(XR_DEVICE_ERROR, "the device said no");
}

static xr_status_t takes(const xr_op_plan_t *plan, xr_hal_device_t *device,
                         const xr_tensor_t *tensors, void **out_state) {
  (void)plan, (void)device, (void)tensors;
  *out_state = &taken_state;
  return XR_OK;
}

static xr_status_t refuses(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  (void)plan, (void)device;
  return xr_error(XR_UNIMPLEMENTED, "not this problem");
}

static const xr_kernel_impl_t decliner = {.name = "cpu.decliner", .driver = "cpu",
                                          .prepare = declines};
static const xr_kernel_impl_t failer = {.name = "cpu.failer", .driver = "cpu", .prepare = fails};
static const xr_kernel_impl_t elsewhere = {.name = "opencl.elsewhere", .driver = "opencl",
                                           .prepare = takes};
static const xr_kernel_impl_t refuser = {.name = "cpu.refuser", .driver = "cpu",
                                         .supports = refuses, .prepare = takes};
static const xr_kernel_impl_t taker = {.name = "cpu.taker", .driver = "cpu", .prepare = takes};
static const xr_kernel_impl_t reference = {.name = "ref.stub", .driver = "cpu",
                                           .reference = true, .prepare = takes};
static const xr_kernel_impl_t reference_decliner = {.name = "ref.decliner", .driver = "cpu",
                                                    .reference = true, .prepare = declines};

static xr_kernel_instance_t *prepare_in(const xr_kernel_impl_t *const *impls,
                                        const xr_kernel_impl_t *first, xr_status_t *out_status) {
  static const xr_op_t op = {.name = "x::stub"};
  const xr_op_family_t family = {.name = "stub", .impls = impls};
  xr_op_plan_t plan = {.op = &op, .family = &family};
  xr_hal_device_t *device;
  cr_assert_eq(xr_hal_device_create("cpu", &device), XR_OK, "%s", xr_last_error());
  xr_kernel_instance_t *instance = NULL;
  *out_status = xr_kernel_prepare(&plan, first, device, NULL, &instance);
  xr_hal_device_destroy(device);
  return instance;
}

Test(registry, a_decline_in_prepare_hands_the_op_to_the_next_eligible_implementation) {
  /* Past another driver's and one whose supports() refuses, to the first that takes it. */
  const xr_kernel_impl_t *const impls[] = {&decliner, &elsewhere, &refuser, &taker, &reference,
                                           NULL};
  xr_status_t status;
  xr_kernel_instance_t *instance = prepare_in(impls, &decliner, &status);
  cr_assert_eq(status, XR_OK, "%s", xr_last_error());
  cr_expect_str_eq(xr_kernel_instance_impl_name(instance), "cpu.taker");
  cr_expect_str_eq(xr_kernel_instance_declined(instance),
                   "cpu.decliner declined: no algorithm at these pointers' alignment");
  xr_kernel_instance_destroy(instance);

  /* A reference hands on to references only (--reference asked for the plain-C ones). */
  const xr_kernel_impl_t *const references[] = {&reference_decliner, &taker, &reference, NULL};
  instance = prepare_in(references, &reference_decliner, &status);
  cr_assert_eq(status, XR_OK, "%s", xr_last_error());
  cr_expect_str_eq(xr_kernel_instance_impl_name(instance), "ref.stub");
  xr_kernel_instance_destroy(instance);

  /* An implementation that prepares carries no note. */
  instance = prepare_in(impls, &taker, &status);
  cr_assert_eq(status, XR_OK);
  cr_expect_str_eq(xr_kernel_instance_impl_name(instance), "cpu.taker");
  cr_expect_str_eq(xr_kernel_instance_declined(instance), "");
  xr_kernel_instance_destroy(instance);
}

Test(registry, a_decline_with_no_one_after_it_and_a_failure_are_not_handed_on) {
  const xr_kernel_impl_t *const alone[] = {&refuser, &decliner, &elsewhere, NULL};
  xr_status_t status;
  cr_expect_null(prepare_in(alone, &decliner, &status));
  cr_expect_eq(status, XR_UNIMPLEMENTED);
  cr_expect_str_eq(xr_last_error(),
                   "cpu.decliner declined: no algorithm at these pointers' alignment");

  /* Only a decline (UNIMPLEMENTED) moves on; a device error is the op's failure. */
  const xr_kernel_impl_t *const failing[] = {&failer, &taker, NULL};
  cr_expect_null(prepare_in(failing, &failer, &status));
  cr_expect_eq(status, XR_DEVICE_ERROR);
  cr_expect_str_eq(xr_last_error(), "the device said no");
}
