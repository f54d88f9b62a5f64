/* The GEMM family's GPU implementation (kernels/gpu/gemm.cu via kernels/gemm_device.c) on a
 * cuda or hip device (built once per driver, XR_GPU_DRIVER=cuda|hip), each case compared with
 * the CPU reference on the same seeded inputs through the real engine (tests/kernels/check.h):
 * the GPU's own shapes (sizes 1, 3, 17, 129 and 1000; transposed, broadcast and offset views;
 * the tiled kernel and the M == 1 warp-per-column kernel; f32, f16, bf16). The family's shared
 * cases, aten::_scaled_mm and its block-scaled forms included, run on the same kernels as
 * tests/kernels:gemm_matrix_{cuda,hip}. Skips without such a device. */
#include <stdarg.h>
#include <stdlib.h>

#include "tests/kernels/gemm_cases.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

static char json[8192];

/* A one-op bundle: `arguments` is the JSON list of the op's args. */
static const char *op(const char *name, const char *fmt, ...) {
  char arguments[7168];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(arguments, sizeof arguments, fmt, ap);
  va_end(ap);
  snprintf(json, sizeof json,
           "{\"format\": \"xreplay-bundle\", \"format_version\": 1, \"ops\": [{\"name\": \"%s\", "
           "\"args\": [%s], \"kwargs\": []}]}",
           name, arguments);
  return json;
}

#define T(argument, dtype, shape, extra)                                                \
  "{\"name\": \"" argument "\", \"type\": \"Tensor\", \"value\": {\"dtype\": \"" dtype \
  "\", \"shape\": " shape extra "}}"
#define S(argument, value) "{\"name\": \"" argument "\", \"type\": \"Scalar\", \"value\": " value "}"

/* The vendor's Lt library would take most cases first (gemm_blaslt_test covers it). */
#define MATCHES(json) assert_matches_reference((json), DRIVER, "gpu.gemm_tiled")

static void tiled_only(void) {
  setenv("XR_CUBLASLT_LIBRARY", "off", 1);
  setenv("XR_HIPBLASLT_LIBRARY", "off", 1);
}

TestSuite(gemm_gpu, .init = tiled_only);

Test(gemm_gpu, mm_f32_sizes_1_3_17_129) {
  MATCHES(op("aten::mm", T("self", "float", "[1, 1]", "") "," T("mat2", "float", "[1, 1]", "")));
  MATCHES(op("aten::mm", T("self", "float", "[3, 129]", "") "," T("mat2", "float", "[129, 17]", "")));
  MATCHES(op("aten::mm", T("self", "float", "[129, 17]", "") "," T("mat2", "float", "[17, 3]", "")));
}

Test(gemm_gpu, mm_bf16_transposed_weight_and_f16) {
  MATCHES(op("aten::mm", T("self", "c10::BFloat16", "[17, 129]", "") ","
             T("mat2", "c10::BFloat16", "[129, 3]", ", \"strides\": [1, 129]")));
  MATCHES(op("aten::mm", T("self", "c10::Half", "[129, 1000]", "") ","
             T("mat2", "c10::Half", "[1000, 129]", ", \"strides\": [1, 1000]")));
}

Test(gemm_gpu, addmm_f16_broadcast_bias_alpha_beta) {
  MATCHES(op("aten::addmm", T("self", "c10::Half", "[17]", "") ","
             T("mat1", "c10::Half", "[129, 3]", "") "," T("mat2", "c10::Half", "[3, 17]", "") ","
             S("beta", "0.5") "," S("alpha", "2")));
}

Test(gemm_gpu, bmm_f32_with_a_storage_offset_and_padded_rows) {
  MATCHES(op("aten::bmm",
             T("self", "float", "[3, 17, 129]",
               ", \"strides\": [2640, 140, 1], \"storage_offset\": 5") ","
             T("mat2", "float", "[3, 129, 17]", "")));
}

Test(gemm_gpu, linear_decode_rows_take_the_warp_kernel) {
  MATCHES(op("aten::linear", T("input", "c10::BFloat16", "[1, 1000]", "") ","
             T("weight", "c10::BFloat16", "[129, 1000]", "") "," T("bias", "c10::BFloat16", "[129]", "")));
  MATCHES(op("aten::linear", T("input", "float", "[1, 129]", "") ","
             T("weight", "float", "[17, 129]", "")));
  MATCHES(op("aten::linear", T("input", "c10::Half", "[1, 1, 3]", "") ","
             T("weight", "c10::Half", "[1, 3]", "")));
}

Test(gemm_gpu, matmul_broadcasts_batches) {
  MATCHES(op("aten::matmul", T("self", "c10::Half", "[2, 1, 3, 17]", "") ","
             T("other", "c10::Half", "[5, 17, 4]", "")));
}

