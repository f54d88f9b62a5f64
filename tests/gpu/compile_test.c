/* Every GPU kernel source (kernels/gpu/ *.cu, as embedded in the library) compiles for the
 * architectures we ship for: sm_80 and sm_90 through NVRTC, gfx90a (and gfx942 where hiprtc
 * knows it) through hiprtc, on the CPU, through the same path the cuda and hip drivers take
 * (xr_hal_compile). Runs on every CI run, GPU or not. Where a compiler is absent (a fresh Debian machine has no CUDA toolkit) its cases
 * skip with the paths tried; where it is installed (/usr/local/cuda, Debian's libamdhip64-5)
 * they must run. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hal/hal.h"
#include "kernels/gpu/sources.h"

static void use_private_cache(void) {
  const char *tmp = getenv("TEST_TMPDIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/xr-gpu-cache-%d", tmp ? tmp : "/tmp", (int)getpid());
  setenv("XR_HAL_CACHE_DIR", path, 1);
}

TestSuite(compile, .init = use_private_cache);

/* Whether this machine has the compiler for `target`: then its cases may not skip. */
static bool compiler_installed(const char *target) {
  if (strncmp(target, "sm_", 3) == 0) {
    return access("/usr/local/cuda/lib64/libnvrtc.so", R_OK) == 0;
  }
  static const char *const hiprtc[] = {"libhiprtc.so.6", "libamdhip64.so.5"};
  for (size_t i = 0; i < 2; i++) {
    void *handle = dlopen(hiprtc[i], RTLD_LAZY | RTLD_LOCAL);
    if (handle && dlsym(handle, "hiprtcCompileProgram")) return true;
  }
  return false;
}

static xr_status_t compile(const char *target, const char *label, const char *source,
                           const char *options, void **binary, size_t *size) {
  xr_hal_executable_params_t params = {.format = XR_HAL_EXECUTABLE_CUDA_SOURCE,
                                       .data = source,
                                       .size = strlen(source),
                                       .options = options,
                                       .label = label};
  return xr_hal_compile(target, &params, binary, size);
}

/* Skips (compiler absent and not expected here) or fails on UNAVAILABLE. */
static void skip_unless_compiler(const char *target, xr_status_t status) {
  if (status != XR_UNAVAILABLE) return;
  cr_assert_not(compiler_installed(target), "%s: compiler installed but unavailable: %s",
                target, xr_last_error());
  cr_skip_test("no compiler for %s here: %s", target, xr_last_error());
}

static void compile_every_kernel_for(const char *target) {
  int count = 0;
  for (const xr_gpu_source_t *s = xr_gpu_sources; s->name; s++, count++) {
    void *binary = NULL;
    size_t size = 0;
    xr_status_t status = compile(target, s->name, s->text, NULL, &binary, &size);
    skip_unless_compiler(target, status);
    cr_assert_eq(status, XR_OK, "%s for %s: %s", s->name, target, xr_last_error());
    cr_assert_gt(size, 1000, "%s for %s: %zu bytes of code", s->name, target, size);
    /* A cubin and a code object are both ELF files. */
    cr_assert(memcmp(binary, "\177ELF", 4) == 0, "%s for %s: not an ELF image", s->name, target);
    free(binary);
  }
  cr_assert_gt(count, 0, "no embedded GPU sources");
}

Test(compile, every_kernel_for_sm_80) { compile_every_kernel_for("sm_80"); }
Test(compile, every_kernel_for_sm_90) { compile_every_kernel_for("sm_90"); }
Test(compile, every_kernel_for_gfx90a) { compile_every_kernel_for("gfx90a"); }

/* MI300X. hiprtc learned gfx942 in ROCm 5.7; an older one (Debian 12 ships ROCm 5.2's) refuses
 * the target or crashes on it, so a probe compiles first in a child process. A crash, or a
 * refusal that names the target, skips with what happened; any other failure fails. */
Test(compile, every_kernel_for_gfx942) {
  pid_t child = fork();
  cr_assert_geq(child, 0);
  if (child == 0) {
    static const char probe[] = "extern \"C\" __global__ void one(int *p) { p[0] = 1; }\n";
    void *binary = NULL;
    size_t size = 0;
    xr_status_t status = compile("gfx942", "probe.cu", probe, NULL, &binary, &size);
    if (status != XR_OK) fprintf(stderr, "gfx942 probe: %s\n", xr_last_error());
    _exit(status == XR_OK            ? 0
          : status == XR_UNAVAILABLE ? 2
          : strstr(xr_last_error(), "gfx942") ? 3 : 1);
  }
  int wait_status = 0;
  cr_assert_eq(waitpid(child, &wait_status, 0), child);
  if (WIFSIGNALED(wait_status)) {
    cr_skip_test("this hiprtc crashes compiling for gfx942 (signal %d): it predates the target",
                 WTERMSIG(wait_status));
  }
  int code = WEXITSTATUS(wait_status);
  if (code == 2) skip_unless_compiler("gfx942", XR_UNAVAILABLE);
  if (code == 3) cr_skip_test("this hiprtc refuses gfx942 (its words are in the log above)");
  cr_assert_eq(code, 0, "the gfx942 probe failed (its words are in the log above)");
  compile_every_kernel_for("gfx942");
}

Test(compile, gemm_source_has_every_kernel_the_impl_launches) {
  const char *text = xr_gpu_source_text("gemm.cu");
  cr_assert_not_null(text);
  static const char *const kernels[] = {"xr_gemm_tiled_##suffix", "xr_gemv_##suffix",
                                        "XR_GEMM_KERNELS(f32", "XR_GEMM_KERNELS(f16",
                                        "XR_GEMM_KERNELS(bf16"};
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
    cr_assert(strstr(text, kernels[i]), "gemm.cu lacks %s", kernels[i]);
  }
  /* The local headers are inlined: the embedded text needs no include path. */
  cr_assert_null(strstr(text, "#include \"hip_compat.h\""));
  cr_assert_not_null(strstr(text, "xr_warp_sum"));
}

/* Every kernel the GPU implementations look up by name is in the code compiled from its source
 * for `target` (the names are often made by macros, and a name the impl spells differently from
 * the source would only fail on a GPU). ELF string tables hold the names NUL-terminated. */
static void expect_kernels(const char *target, const char *source, const char *const *names,
                           size_t count) {
  void *binary = NULL;
  size_t size = 0;
  const char *text = xr_gpu_source_text(source);
  cr_assert_not_null(text, "%s is not embedded", source);
  xr_status_t status = compile(target, source, text, NULL, &binary, &size);
  skip_unless_compiler(target, status);
  cr_assert_eq(status, XR_OK, "%s for %s: %s", source, target, xr_last_error());
  for (size_t i = 0; i < count; i++) {
    cr_assert_not_null(memmem(binary, size, names[i], strlen(names[i]) + 1), "%s for %s lacks %s",
                       source, target, names[i]);
  }
  free(binary);
}

static void kernels_i_define_every_kernel_looked_up(const char *target) {
  static const char *const gemm[] = {"xr_gemm_tiled_f32", "xr_gemm_tiled_f16", "xr_gemm_tiled_bf16",
                                     "xr_gemm_tiled_scaled", "xr_gemv_f32", "xr_gemv_f16",
                                     "xr_gemv_bf16", "xr_gemv_scaled"};
  static const char *const elementwise[] = {"xr_elementwise", "xr_argmax"};
  static const char *const norm[] = {"xr_softmax", "xr_layer_norm", "xr_rms_norm",
                                     "xr_add_rms_norm", "xr_rotary"};
  static const char *const quant[] = {"xr_quant_absmax", "xr_quant_reduce", "xr_quant_rows"};
  static const char *const reduce[] = {"xr_reduce_groups", "xr_reduce_items", "xr_reduce_scan",
                                       "xr_reduce_sort", "xr_reduce_sort_int"};
  static const char *const scatter[] = {"xr_sc_gather",     "xr_sc_scatter",   "xr_sc_nonzero",
                                        "xr_sc_mask_count", "xr_sc_mask_scan", "xr_sc_mask_write"};
  expect_kernels(target, "gemm.cu", gemm, sizeof gemm / sizeof *gemm);
  expect_kernels(target, "elementwise.cu", elementwise, sizeof elementwise / sizeof *elementwise);
  expect_kernels(target, "norm.cu", norm, sizeof norm / sizeof *norm);
  expect_kernels(target, "quant.cu", quant, sizeof quant / sizeof *quant);
  expect_kernels(target, "reduce.cu", reduce, sizeof reduce / sizeof *reduce);
  expect_kernels(target, "scatter.cu", scatter, sizeof scatter / sizeof *scatter);
  static const char *const loss[] = {"xr_loss_elements", "xr_loss_sum"};
  expect_kernels(target, "loss.cu", loss, sizeof loss / sizeof *loss);
  static const char *const pool[] = {"xr_pool_forward", "xr_pool_backward"};
  static const char *const channel_norm[] = {"xr_cn_batch", "xr_cn_batch_backward", "xr_cn_group",
                                             "xr_cn_group_backward", "xr_cn_group_param_grads"};
  static const char *const conv[] = {"xr_conv_forward",
                                     "xr_conv_backward_data",
                                     "xr_conv_backward_weight",
                                     "xr_conv_bias_grad",
                                     "xr_conv_forward_gemm",
                                     "xr_conv_backward_data_gemm",
                                     "xr_conv_backward_weight_gemm"};
  expect_kernels(target, "conv.cu", conv, sizeof conv / sizeof *conv);
  expect_kernels(target, "pool.cu", pool, sizeof pool / sizeof *pool);
  expect_kernels(target, "channel_norm.cu", channel_norm,
                 sizeof channel_norm / sizeof *channel_norm);
}

/* kernels/routing_device.c's launches (TopK, SortTokens' two passes). */
static void routing_kernels_for(const char *target) {
  static const char *const routing[] = {"xr_routing_topk", "xr_routing_sort_experts",
                                        "xr_routing_sort_tail"};
  expect_kernels(target, "routing.cu", routing, sizeof routing / sizeof *routing);
}
Test(compile, routing_image_has_every_kernel_the_impl_launches_sm_80) {
  routing_kernels_for("sm_80");
}
Test(compile, routing_image_has_every_kernel_the_impl_launches_sm_90) {
  routing_kernels_for("sm_90");
}
Test(compile, routing_image_has_every_kernel_the_impl_launches_gfx90a) {
  routing_kernels_for("gfx90a");
}

Test(compile, sources_define_every_kernel_looked_up_sm_80) {
  kernels_i_define_every_kernel_looked_up("sm_80");
}
Test(compile, sources_define_every_kernel_looked_up_gfx90a) {
  kernels_i_define_every_kernel_looked_up("gfx90a");
}

Test(compile, attention_images_have_every_kernel_the_impls_launch) {
  static const char *const dense[] = {"xr_attention_f32", "xr_attention_f16", "xr_attention_bf16"};
  expect_kernels("sm_80", "attention.cu", dense, 3);
  static const char *const paged[] = {
      "xr_attention_f32",         "xr_attention_f16",         "xr_attention_bf16",
      "xr_attention_f32_fp8",     "xr_attention_f16_fp8",     "xr_attention_bf16_fp8",
      "xr_attention_combine_f32", "xr_attention_combine_f16", "xr_attention_combine_bf16",
      "xr_attention_any",         "xr_attention_any_fp8"};
  expect_kernels("sm_80", "paged_attention.cu", paged, 11);
  static const char *const sources[] = {"f32", "f16", "bf16"};
  static const char *const caches[] = {"", "f8e4m3fn", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz"};
  char names[15][64];
  const char *cache_kernels[15];
  for (int s = 0; s < 3; s++) {
    for (int c = 0; c < 5; c++) {
      snprintf(names[s * 5 + c], sizeof names[0], "xr_reshape_and_cache_%s_%s", sources[s],
               c ? caches[c] : sources[s]);
      cache_kernels[s * 5 + c] = names[s * 5 + c];
    }
  }
  expect_kernels("sm_80", "kv_cache.cu", cache_kernels, 15);
}

/* moe.cu: the sort, the router, and per activation dtype the reduction and the grouped GEMMs
 * for plain, mxfp4 and fp8 weights ("" / "_mxfp4" / "_fp8") at 1, 2 and 4 rows per thread. */
static void moe_image_has_every_kernel_the_impl_launches(const char *target) {
  char names[64][40];
  const char *list[64];
  size_t n = 0;
  static const char *const fixed[] = {"xr_moe_count", "xr_moe_scan", "xr_moe_scatter",
                                      "xr_moe_topk_softmax"};
  static const char *const dtypes[] = {"f32", "f16", "bf16"};
  static const char *const formats[] = {"", "_mxfp4", "_fp8"};
  for (int i = 0; i < 4; i++) snprintf(names[n++], sizeof names[0], "%s", fixed[i]);
  for (int d = 0; d < 3; d++) {
    snprintf(names[n++], sizeof names[0], "xr_moe_reduce_%s", dtypes[d]);
    for (int gemm = 1; gemm <= 2; gemm++)
      for (int f = 0; f < 3; f++)
        for (int rows = 1; rows <= 4; rows *= 2)
          snprintf(names[n++], sizeof names[0], "xr_moe_gemm%d_%s%s_m%d", gemm, dtypes[d],
                   formats[f], rows);
  }
  for (size_t i = 0; i < n; i++) list[i] = names[i];
  expect_kernels(target, "moe.cu", list, n);
}

Test(compile, moe_image_has_every_kernel_the_impl_launches_sm_80) {
  moe_image_has_every_kernel_the_impl_launches("sm_80");
}
Test(compile, moe_image_has_every_kernel_the_impl_launches_gfx90a) {
  moe_image_has_every_kernel_the_impl_launches("gfx90a");
}

/* gemm_device.c looks its kernels up as xr_gemm_tiled_<suffix> and xr_gemv_<suffix>. */
Test(compile, gemm_image_has_every_kernel_the_impl_launches_sm_80) {
  static const char *const suffixes[] = {"f32", "f16", "bf16", "scaled", "block"};
  char names[10][40];
  const char *list[10];
  for (size_t i = 0; i < 5; i++) {
    snprintf(names[2 * i], sizeof names[0], "xr_gemm_tiled_%s", suffixes[i]);
    snprintf(names[2 * i + 1], sizeof names[0], "xr_gemv_%s", suffixes[i]);
  }
  for (size_t i = 0; i < 10; i++) list[i] = names[i];
  expect_kernels("sm_80", "gemm.cu", list, 10);
}

static const char broken[] =
    "extern \"C\" __global__ void broken(float *y) { y[0] = undefined_identifier_xyz; }\n";

static void compile_error_carries_the_log(const char *target) {
  void *binary = NULL;
  size_t size = 0;
  xr_status_t status = compile(target, "broken.cu", broken, NULL, &binary, &size);
  skip_unless_compiler(target, status);
  cr_assert_eq(status, XR_INVALID_ARGUMENT, "%s: %s", xr_status_name(status), xr_last_error());
  cr_assert_null(binary);
  const char *message = xr_last_error();
  cr_assert(strstr(message, "broken.cu"), "names the source: %s", message);
  cr_assert(strstr(message, target), "names the target: %s", message);
  cr_assert(strstr(message, "undefined_identifier_xyz"), "carries the log: %s", message);
}

Test(compile, nvrtc_error_carries_the_log) { compile_error_carries_the_log("sm_90"); }
Test(compile, hiprtc_error_carries_the_log) { compile_error_carries_the_log("gfx90a"); }

static int cache_entries(const char *prefix) {
  DIR *dir = opendir(getenv("XR_HAL_CACHE_DIR"));
  if (!dir) return 0;
  int count = 0;
  for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
    if (strncmp(entry->d_name, prefix, strlen(prefix)) == 0) count++;
  }
  closedir(dir);
  return count;
}

Test(compile, results_are_cached_per_source_options_and_target) {
  static const char source[] =
      "extern \"C\" __global__ void seven(int *p) { p[threadIdx.x] = VALUE; }\n";
  void *first = NULL, *second = NULL;
  size_t first_size = 0, second_size = 0;
  xr_status_t status = compile("sm_80", "seven.cu", source, "-DVALUE=7", &first, &first_size);
  skip_unless_compiler("sm_80", status);
  cr_assert_eq(status, XR_OK, "%s", xr_last_error());
  cr_assert_eq(cache_entries("nvrtc-"), 1);
  cr_assert_eq(compile("sm_80", "seven.cu", source, "-DVALUE=7", &second, &second_size), XR_OK);
  cr_assert_eq(cache_entries("nvrtc-"), 1, "the second compile is a cache hit");
  cr_assert_eq(first_size, second_size);
  cr_assert(memcmp(first, second, first_size) == 0);
  free(second);
  cr_assert_eq(compile("sm_80", "seven.cu", source, "-DVALUE=8", &second, &second_size), XR_OK);
  free(second);
  cr_assert_eq(compile("sm_90", "seven.cu", source, "-DVALUE=7", &second, &second_size), XR_OK);
  free(second);
  cr_assert_eq(cache_entries("nvrtc-"), 3, "options and target are part of the key");
  free(first);
}

Test(compile, unknown_targets_and_formats_are_refused) {
  void *binary = NULL;
  size_t size = 0;
  cr_assert_eq(compile("vulkan", "k.cu", broken, NULL, &binary, &size), XR_INVALID_ARGUMENT);
  cr_assert(strstr(xr_last_error(), "vulkan"), "%s", xr_last_error());
  xr_hal_executable_params_t params = {.format = XR_HAL_EXECUTABLE_OPENCL_C, .data = "x", .size = 1};
  cr_assert_eq(xr_hal_compile("sm_90", &params, &binary, &size), XR_UNIMPLEMENTED);
  cr_assert_eq(xr_hal_compile(NULL, &params, &binary, &size), XR_INVALID_ARGUMENT);
  cr_assert_null(binary);
}

Test(compile, an_architecture_nvrtc_does_not_know_is_unavailable) {
  void *binary = NULL;
  size_t size = 0;
  xr_status_t status = compile("sm_10", "old.cu", broken, NULL, &binary, &size);
  if (status == XR_UNAVAILABLE && strstr(xr_last_error(), "NVRTC unavailable")) {
    skip_unless_compiler("sm_10", status);
  }
  cr_assert_eq(status, XR_UNAVAILABLE, "%s: %s", xr_status_name(status), xr_last_error());
  cr_assert(strstr(xr_last_error(), "sm_10"), "%s", xr_last_error());
}

Test(compile, the_nvrtc_override_is_tried_first) {
  setenv("XR_NVRTC_LIBRARY", "/nonexistent/libnvrtc.so", 1);
  void *binary = NULL;
  size_t size = 0;
  xr_status_t status = compile("sm_90", "seven.cu", broken, NULL, &binary, &size);
  if (status == XR_UNAVAILABLE) {
    cr_assert(strstr(xr_last_error(), "XR_NVRTC_LIBRARY=/nonexistent/libnvrtc.so: not found"),
              "%s", xr_last_error());
    skip_unless_compiler("sm_90", status);
  }
  /* Found further down the list: the broken source then fails to compile. */
  cr_assert_eq(status, XR_INVALID_ARGUMENT, "%s", xr_last_error());
}
