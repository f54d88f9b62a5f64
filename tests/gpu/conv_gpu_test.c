/* The convolution family on a cuda or hip device (built once per driver, XR_GPU_DRIVER=cuda|hip)
 * against the CPU reference, with the cases of the cpu/opencl suite (tests/kernels/conv_cases.h):
 * our kernel (kernels/gpu/conv.cu) with cuDNN off, and on cuda cuDNN (kernels/gpu/cudnn_conv.c)
 * where it loads. Skips without such a device. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <string.h>

#include "tests/kernels/conv_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

/* Both tests have the same .timeout (tests/kernels/conv_test.c says why). */
Test(conv_gpu, our_kernel_matches_reference, .timeout = 600) {
  setenv("XR_CUDNN_LIBRARY", "off", 1);
  conv_cases(DRIVER, "gpu.conv");
}

/* Every case with cuDNN on (whichever kernel takes it must agree), and the plain NCHW and
 * channels-last forwards and backwards on cuDNN itself: a regression that quietly sends them
 * to gpu.conv fails here. */
Test(conv_gpu, cudnn_matches_reference, .timeout = 600) {
  if (strcmp(DRIVER, "cuda")) cr_skip_test("cuDNN serves cuda only; no MIOpen kernel yet");
  void *cudnn = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
  if (!cudnn) cudnn = dlopen("libcudnn.so.8", RTLD_NOW | RTLD_LOCAL);
  if (!cudnn) cr_skip_test("cuDNN is not installed: %s", dlerror());
  dlclose(cudnn);
  conv_cases(DRIVER, "");
  const conv_case_t *cases[] = {&conv_forward_cases[0], &conv_forward_cases[3],
                                &conv_backward_cases[0], &conv_backward_cases[6]};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    expect_match(conv_json(cases[i]), DRIVER, "cuda.cudnn_conv");
}
