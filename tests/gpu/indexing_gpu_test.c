/* aten::cat, index_select and embedding (kernels/gpu/elementwise_gpu.c) and aten::argmax on a
 * cuda or hip device (built once per driver, XR_GPU_DRIVER=cuda|hip): every case of
 * tests/kernels/indexing_cases.h, as the cpu suite runs them, each compared with the CPU
 * reference through the real engine. Skips without such a device. */
#include "tests/kernels/indexing_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

Test(indexing_gpu, cat) { cat_cases(DRIVER, true); }
Test(indexing_gpu, index_select_and_embedding) { gather_cases(DRIVER, true); }
Test(indexing_gpu, argmax) { argmax_cases(DRIVER, true); }
