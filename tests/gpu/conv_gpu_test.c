/* The convolution family on a cuda or hip device (built once per driver, XR_GPU_DRIVER=cuda|hip)
 * against the CPU reference, with the cases of tests/kernels/conv_cases.h: our kernels
 * (kernels/gpu/conv.cu) with the vendor libraries off, then the shapes cuDNN
 * (kernels/gpu/cudnn_conv.c) or MIOpen (kernels/gpu/miopen_conv.c) must take where they load.
 * Skips without such a device. */
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
  setenv("XR_MIOPEN_LIBRARY", "off", 1);
  conv_cases(DRIVER, "gpu.conv");
}

/* The plain NCHW and channels-last forwards and backwards on the vendor's library (cuDNN on
 * cuda, MIOpen on hip): a regression that quietly sends them to gpu.conv fails here. Every case
 * with the library on runs as tests/kernels:conv_matrix_{cuda,hip}. */
Test(conv_gpu, vendor_library_matches_reference, .timeout = 600) {
  bool cuda = !strcmp(DRIVER, "cuda");
  const char *sonames[2] = {cuda ? "libcudnn.so.9" : "libMIOpen.so.1",
                            cuda ? "libcudnn.so.8" : NULL};
  void *library = dlopen(sonames[0], RTLD_NOW | RTLD_LOCAL);
  if (!library && sonames[1]) library = dlopen(sonames[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) cr_skip_test("%s is not installed: %s", cuda ? "cuDNN" : "MIOpen", dlerror());
  dlclose(library);
  /* fp32 with a bias, channels-last, and backwards (MIOpen declines bf16 biases) */
  const conv_case_t *cases[] = {&conv_forward_cases[0], &conv_forward_cases[3],
                                &conv_backward_cases[0], &conv_backward_cases[6]};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    expect_match(conv_json(cases[i]), DRIVER, cuda ? "cuda.cudnn_conv" : "hip.miopen_conv");
}
