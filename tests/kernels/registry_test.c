/* The family registry (kernels/family_list.h): every op name belongs to one family, every family
 * plans its ops, and the initializers of data-dependent ops come from their families. */
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
