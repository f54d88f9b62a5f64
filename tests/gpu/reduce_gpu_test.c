/* The reduce family (kernels/gpu/reduce.cu via kernels/gpu/reduce_gpu.c) on a cuda or hip
 * device (built once per driver, XR_GPU_DRIVER=cuda|hip): the cases of
 * tests/kernels/reduce_cases.h, as the cpu and opencl suites run them, each compared with the
 * CPU reference through the real engine. Skips without such a device. */
#include "tests/kernels/reduce_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

Test(reduce_gpu, rows, .timeout = 300) { reduce_row_cases(DRIVER, "gpu.reduce"); }
Test(reduce_gpu, dims, .timeout = 300) { reduce_dim_cases(DRIVER, "gpu.reduce"); }
Test(reduce_gpu, views, .timeout = 300) { reduce_view_cases(DRIVER, "gpu.reduce"); }
Test(reduce_gpu, large, .timeout = 300) { reduce_large_cases(DRIVER, "gpu.reduce"); }
Test(reduce_gpu, scans, .timeout = 300) { scan_cases(DRIVER, "gpu.reduce"); }
Test(reduce_gpu, sorts, .timeout = 300) { sort_cases(DRIVER, "gpu.reduce"); }
Test(reduce_gpu, edges, .timeout = 300) { reduce_edge_cases(DRIVER, "gpu.reduce"); }
Test(reduce_gpu, integers, .timeout = 300) { reduce_integer_cases(DRIVER, "gpu.reduce"); }
