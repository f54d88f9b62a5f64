/* The convolution family (kernels/conv.c): every case of conv_cases.h replayed through the
 * engine with --check on "cpu" (the fast kernels against the reference) and "opencl"
 * (tests/gpu/conv_gpu_test.c runs them on cuda and hip); plus plans and argument errors that
 * name the argument. */
#include "formats/bundle.h"
#include "kernels/kernels.h"
#include "tests/kernels/conv_cases.h"

Test(conv, cpu_matches_reference, .timeout = 300) {
  conv_cases("cpu", "cpu.");
}
