/* The scatter family's GPU implementation (kernels/gpu/scatter.cu via kernels/scatter_device.c)
 * on a cuda or hip device (built once per driver, XR_GPU_DRIVER=cuda|hip): every case of
 * tests/kernels/scatter_cases.h, as the cpu and opencl suites run them, each compared with the
 * CPU reference on the same seeded inputs through the real engine, with default and wild
 * indices. Skips without such a device. */
#include "tests/kernels/scatter_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

Test(scatter_gpu, gather_and_take) {
  sc_gather_cases(DRIVER);
}
Test(scatter_gpu, scatter_scatter_add_scatter_reduce) {
  sc_scatter_cases(DRIVER);
}
Test(scatter_gpu, index_add_copy_fill) {
  sc_index_op_cases(DRIVER);
}
Test(scatter_gpu, advanced_indexing) {
  sc_index_cases(DRIVER);
}
Test(scatter_gpu, index_put) {
  sc_index_put_cases(DRIVER);
}
Test(scatter_gpu, masks_and_nonzero) {
  sc_masked_cases(DRIVER);
}
Test(scatter_gpu, empty) {
  sc_empty_cases(DRIVER);
}

/* What the GPU kernels leave to the CPU says so instead of running wrongly. */
Test(scatter_gpu, f64_reductions_are_unsupported) {
  sc_case_t *c = sc_new();
  sc_arg(&c->args, "self", "Tensor", sc_t(c, "double", 2, SHAPE(6, 5), NULL, 0));
  sc_arg(&c->args, "dim", "int", "0");
  sc_arg(&c->args, "index", "Tensor", sc_t(c, "long int", 2, SHAPE(9, 5), NULL, 0));
  sc_arg(&c->args, "src", "Tensor", sc_t(c, "double", 2, SHAPE(9, 5), NULL, 0));
  xr_op_result_t r = check_op(bundle("aten::scatter_add", c->args.s, NULL), DRIVER);
  cr_assert_eq(r.outcome, XR_OP_UNSUPPORTED, "%s", r.message);
  cr_assert(strstr(r.message, "f64 reductions"), "%s", r.message);
}
