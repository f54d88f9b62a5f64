/* The fp8 conversions of the GPU kernels (kernels/gpu/dtype_io.h, reached through
 * kernels/gpu/dtype_dispatch.h's xr_load_as_float / xr_store_float) against the host's
 * (base/float_formats.h), bit for bit, on a cuda or hip device (built once per driver,
 * XR_GPU_DRIVER=cuda|hip): all 256 codes of each of the four fp8 types decoded, and a sweep of
 * floats encoded (every finite fp8 value, the midpoints between neighbours and one ulp either
 * side, zeros, infinities, NaN, values past the largest finite one, subnormal floats, and a
 * stride through every float32 bit pattern). The check kernels are appended to the embedded
 * elementwise.cu, so they run exactly the library's device code. Without a device the check
 * source still compiles for sm_80 (NVRTC) and gfx90a (hiprtc) where those compilers are. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/hal.h"
#include "kernels/dtype.h"
#include "kernels/gpu/sources.h"

#define STRINGIFY2(x) #x
#define STRINGIFY(x) STRINGIFY2(x)
#define DRIVER STRINGIFY(XR_GPU_DRIVER)

#define OK(expr)                                                                            \
  do {                                                                                      \
    xr_status_t ok_status_ = (expr);                                                        \
    cr_assert_eq(ok_status_, XR_OK, "%s -> %s: %s", #expr, xr_status_name(ok_status_),      \
                 xr_last_error());                                                          \
  } while (0)

static const char check_kernels[] =
    "\n"
    "extern \"C\" __global__ void xr_test_fp8_decode(float *out, int dtype) {\n"
    "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= 256) return;\n"
    "  const unsigned char code = (unsigned char)i;\n"
    "  out[i] = xr_load_as_float(&code, dtype, 0);\n"
    "}\n"
    "extern \"C\" __global__ void xr_test_fp8_encode(unsigned char *out, const float *in,\n"
    "                                               int dtype, unsigned n) {\n"
    "  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
    "    xr_store_float(out, dtype, i, in[i]);\n"
    "}\n";

static const xr_dtype_t fp8_types[] = {XR_DTYPE_F8E4M3FN, XR_DTYPE_F8E5M2, XR_DTYPE_F8E4M3FNUZ,
                                       XR_DTYPE_F8E5M2FNUZ};

/* elementwise.cu (its local headers inlined) followed by the check kernels; caller frees. */
static char *check_source(void) {
  const char *library = xr_gpu_source_text("elementwise.cu");
  cr_assert_not_null(library, "elementwise.cu is not embedded");
  size_t a = strlen(library), b = strlen(check_kernels);
  char *text = malloc(a + b + 1);
  cr_assert_not_null(text);
  memcpy(text, library, a);
  memcpy(text + a, check_kernels, b + 1);
  return text;
}

static void use_private_cache(void) {
  const char *tmp = getenv("TEST_TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/xr-gpu-cache", tmp ? tmp : "/tmp");
  setenv("XR_HAL_CACHE_DIR", path, 1);
}

/* ------------------------------------------------------------------------------------------ */
/* without a device: the check source compiles                                                */

TestSuite(fp8_compile, .init = use_private_cache);

static void compiles_for(const char *target) {
  char *text = check_source();
  xr_hal_executable_params_t params = {.format = XR_HAL_EXECUTABLE_CUDA_SOURCE, .data = text,
                                       .size = strlen(text), .label = "fp8_check.cu"};
  void *binary = NULL;
  size_t size = 0;
  xr_status_t status = xr_hal_compile(target, &params, &binary, &size);
  free(text);
  if (status == XR_UNAVAILABLE) cr_skip_test("no compiler for %s here: %s", target, xr_last_error());
  cr_assert_eq(status, XR_OK, "%s: %s", target, xr_last_error());
  cr_assert(binary && size > 0 && memmem(binary, size, "xr_test_fp8_encode", 18),
            "%s: the check kernels are in the code", target);
  free(binary);
}

Test(fp8_compile, check_kernels_compile_for_sm_80) { compiles_for("sm_80"); }
Test(fp8_compile, check_kernels_compile_for_gfx90a) { compiles_for("gfx90a"); }

/* ------------------------------------------------------------------------------------------ */
/* on the device                                                                               */

static xr_hal_device_t *device;

static void open_device(void) {
  use_private_cache();
  xr_hal_driver_info_t info;
  OK(xr_hal_driver_info_by_name(DRIVER, &info));
  if (info.status != XR_OK)
    cr_skip_test("%s unavailable (%s): %s", DRIVER, xr_status_name(info.status), info.reason);
  OK(xr_hal_device_create(DRIVER, &device));
}

static void close_device(void) {
  xr_hal_device_destroy(device);
  device = NULL;
}

TestSuite(fp8_device, .init = open_device, .fini = close_device);

static xr_hal_executable_t *build(void) {
  char *text = check_source();
  xr_hal_executable_params_t params = {.format = XR_HAL_EXECUTABLE_CUDA_SOURCE, .data = text,
                                       .size = strlen(text), .label = "fp8_check.cu"};
  xr_hal_executable_t *executable = NULL;
  xr_status_t status = xr_hal_executable_create(device, &params, &executable);
  free(text);
  OK(status);
  return executable;
}

static bool same_float(float a, float b) {
  return (isnan(a) && isnan(b)) || xr_f32_to_bits(a) == xr_f32_to_bits(b);
}

Test(fp8_device, every_code_decodes_as_on_the_host) {
  xr_hal_executable_t *executable = build();
  xr_hal_kernel_t *kernel = NULL;
  OK(xr_hal_kernel_lookup(executable, "xr_test_fp8_decode", &kernel));
  xr_hal_stream_t *stream = NULL;
  xr_hal_buffer_t *out = NULL;
  OK(xr_hal_stream_create(device, &stream));
  OK(xr_hal_buffer_alloc(device, 256 * sizeof(float), &out));
  for (size_t t = 0; t < 4; t++) {
    int32_t dtype = (int32_t)fp8_types[t];
    xr_hal_kernel_arg_t args[] = {xr_hal_arg_buffer(out), xr_hal_arg_bytes(&dtype, sizeof dtype)};
    xr_hal_dispatch_t dispatch = {.grid = {1, 1, 1}, .block = {256, 1, 1}, .args = args,
                                  .arg_count = 2};
    float decoded[256];
    OK(xr_hal_stream_dispatch(stream, kernel, &dispatch));
    OK(xr_hal_stream_read(stream, decoded, out, 0, sizeof decoded));
    OK(xr_hal_stream_synchronize(stream));
    for (int code = 0; code < 256; code++) {
      float host = xr_fp8_to_f32((uint8_t)code, fp8_types[t]);
      cr_expect(same_float(decoded[code], host), "%s code 0x%02x: device %a, host %a",
                xr_dtype_name(fp8_types[t]), code, (double)decoded[code], (double)host);
    }
  }
  xr_hal_buffer_free(out);
  xr_hal_stream_destroy(stream);
  xr_hal_executable_destroy(executable);
}

/* The floats to encode: every type's values and the neighbourhoods where rounding decides. */
static float *sweep(size_t *out_count) {
  enum { STRIDED = 65536 };
  size_t capacity = 4 * 256 * 8 + STRIDED + 32, n = 0;
  float *v = malloc(capacity * sizeof *v);
  cr_assert_not_null(v);
  for (size_t t = 0; t < 4; t++)
    for (int code = 0; code < 256; code++) {
      float x = xr_fp8_to_f32((uint8_t)code, fp8_types[t]);
      float y = xr_fp8_to_f32((uint8_t)(code + 1), fp8_types[t]);
      if (!isfinite(x)) continue;
      v[n++] = x;
      v[n++] = nextafterf(x, INFINITY);
      v[n++] = nextafterf(x, -INFINITY);
      if (code == 127 || code == 255 || !isfinite(y)) continue; /* no upper neighbour */
      float mid = (x + y) / 2; /* exact: fp8 values have few significant bits */
      v[n++] = mid;
      v[n++] = nextafterf(mid, INFINITY);
      v[n++] = nextafterf(mid, -INFINITY);
    }
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e30f, -1e30f, 448.5f,
                            464.0f, 240.5f, 248.0f, 57344.5f, 61440.0f, -61440.0f, 0x1p-149f,
                            -0x1p-149f, 0x1p-126f, 0x1p-20f, 0x1p-17f, 0x1p-18f, -0x1p-10f};
  for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) v[n++] = specials[i];
  for (uint32_t i = 0; i < STRIDED; i++) v[n++] = xr_bits_to_f32(i * 65537u + 12345u);
  cr_assert_leq(n, capacity);
  *out_count = n;
  return v;
}

Test(fp8_device, a_sweep_of_floats_encodes_as_on_the_host) {
  size_t n = 0;
  float *values = sweep(&n);
  uint8_t *encoded = malloc(n);
  cr_assert_not_null(encoded);
  xr_hal_executable_t *executable = build();
  xr_hal_kernel_t *kernel = NULL;
  OK(xr_hal_kernel_lookup(executable, "xr_test_fp8_encode", &kernel));
  xr_hal_stream_t *stream = NULL;
  xr_hal_buffer_t *in = NULL, *out = NULL;
  OK(xr_hal_stream_create(device, &stream));
  OK(xr_hal_buffer_alloc(device, n * sizeof *values, &in));
  OK(xr_hal_buffer_alloc(device, n, &out));
  OK(xr_hal_buffer_write(in, 0, values, n * sizeof *values));
  for (size_t t = 0; t < 4; t++) {
    int32_t dtype = (int32_t)fp8_types[t];
    uint32_t count = (uint32_t)n;
    xr_hal_kernel_arg_t args[] = {xr_hal_arg_buffer(out), xr_hal_arg_buffer(in),
                                  xr_hal_arg_bytes(&dtype, sizeof dtype),
                                  xr_hal_arg_bytes(&count, sizeof count)};
    xr_hal_dispatch_t dispatch = {.grid = {(uint32_t)((n + 255) / 256), 1, 1},
                                  .block = {256, 1, 1}, .args = args, .arg_count = 4};
    OK(xr_hal_stream_dispatch(stream, kernel, &dispatch));
    OK(xr_hal_stream_read(stream, encoded, out, 0, n));
    OK(xr_hal_stream_synchronize(stream));
    size_t mismatches = 0;
    for (size_t i = 0; i < n; i++) {
      uint8_t host = xr_f32_to_fp8(values[i], fp8_types[t]);
      if (encoded[i] == host) continue;
      if (mismatches++ < 10)
        cr_log_error("%s: %a (0x%08x) encodes to 0x%02x on the device, 0x%02x on the host",
                     xr_dtype_name(fp8_types[t]), (double)values[i], xr_f32_to_bits(values[i]),
                     encoded[i], host);
    }
    cr_expect_eq(mismatches, 0, "%s: %zu of %zu floats encode differently",
                 xr_dtype_name(fp8_types[t]), mismatches, n);
  }
  xr_hal_buffer_free(out);
  xr_hal_buffer_free(in);
  xr_hal_stream_destroy(stream);
  xr_hal_executable_destroy(executable);
  free(encoded);
  free(values);
}
