/* NVRTC / hiprtc loader and compile path shared by the cuda and hip drivers (gpu_compiler.h). */
#include "hal/core/gpu_compiler.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/core/cache.h"
#include "hal/core/gpu_compiler_symbols.h"
#include "hal/core/driver.h"
#include "base/dynload.h"
#include "base/vendor_libraries.h"
#include "hal/hal.h"

typedef struct rtc_symbols {
  XR_RTC_SYMBOLS(XR_DYNLOAD_FIELD)
} rtc_symbols_t;

#define NVRTC_SYMBOL(need, ret, field, params, nvrtc, hiprtc) \
  XR_DYNLOAD_SYMBOL(rtc_symbols_t, need, field, nvrtc)
#define HIPRTC_SYMBOL(need, ret, field, params, nvrtc, hiprtc) \
  XR_DYNLOAD_SYMBOL(rtc_symbols_t, need, field, hiprtc)
static const xr_dynload_symbol_t nvrtc_symbol_list[] = {XR_RTC_SYMBOLS(NVRTC_SYMBOL)};
static const xr_dynload_symbol_t hiprtc_symbol_list[] = {XR_RTC_SYMBOLS(HIPRTC_SYMBOL)};
#undef NVRTC_SYMBOL
#undef HIPRTC_SYMBOL

enum { RTC_SYMBOL_COUNT = sizeof nvrtc_symbol_list / sizeof nvrtc_symbol_list[0] };

/* NVRTC_ERROR_INVALID_OPTION and NVRTC_ERROR_COMPILATION; hiprtc uses the same numbers. */
#define RTC_ERROR_INVALID_OPTION 5
#define RTC_ERROR_COMPILATION 6

typedef struct rtc_compiler {
  const char *name;        /* "NVRTC", "hiprtc" */
  const char *cache_kind;  /* cache entry prefix */
  bool tried;
  xr_status_t status;
  char report[XR_HAL_REASON_CAPACITY];
  char version[32];        /* "13.0" */
  rtc_symbols_t api;
  xr_dynload_library_t library;
  /* NVRTC >= 11.2 lists the architectures it can compile for. */
  int (*supported_arch_count)(int *count);
  int (*supported_archs)(int *archs);
} rtc_compiler_t;

static pthread_mutex_t load_mutex = PTHREAD_MUTEX_INITIALIZER;
static rtc_compiler_t compilers[2] = {
    [XR_GPU_COMPILER_NVRTC] = {.name = "NVRTC", .cache_kind = "nvrtc"},
    [XR_GPU_COMPILER_HIPRTC] = {.name = "hiprtc", .cache_kind = "hiprtc"},
};

bool xr_gpu_compiler_for_target(const char *target, xr_gpu_compiler_kind_t *out_kind) {
  if (!target) return false;
  if (strncmp(target, "sm_", 3) == 0 && target[3] >= '0' && target[3] <= '9') {
    *out_kind = XR_GPU_COMPILER_NVRTC;
    return true;
  }
  if (strncmp(target, "gfx", 3) == 0 && target[3]) {
    *out_kind = XR_GPU_COMPILER_HIPRTC;
    return true;
  }
  return false;
}

static void load_locked(xr_gpu_compiler_kind_t kind) {
  rtc_compiler_t *compiler = &compilers[kind];
  if (compiler->tried) return;
  compiler->tried = true;
  const xr_dynload_spec_t *spec = &xr_vendor_libraries[kind == XR_GPU_COMPILER_NVRTC
                                                           ? XR_VENDOR_LIBRARY_NVRTC
                                                           : XR_VENDOR_LIBRARY_HIPRTC];
  const xr_dynload_symbol_t *symbols =
      kind == XR_GPU_COMPILER_NVRTC ? nvrtc_symbol_list : hiprtc_symbol_list;
  compiler->report[0] = '\0';
  /* The loader leaves its sentence in xr_last_error; the caller's must survive. */
  char saved_error[XR_HAL_REASON_CAPACITY];
  xr_hal_copy_string(saved_error, sizeof saved_error, xr_last_error());
  compiler->status = xr_dynload_open(spec, symbols, RTC_SYMBOL_COUNT, &compiler->api,
                                     &compiler->library, compiler->report,
                                     sizeof compiler->report);
  xr_error(XR_OK, "%s", saved_error);
  if (compiler->status != XR_OK) return;
  int major = 0, minor = 0;
  compiler->api.version(&major, &minor);
  snprintf(compiler->version, sizeof compiler->version, "%d.%d", major, minor);
  if (kind == XR_GPU_COMPILER_NVRTC) {
    void *count_symbol = xr_dynload_find(&compiler->library, "nvrtcGetNumSupportedArchs");
    void *list_symbol = xr_dynload_find(&compiler->library, "nvrtcGetSupportedArchs");
    memcpy(&compiler->supported_arch_count, &count_symbol, sizeof count_symbol);
    memcpy(&compiler->supported_archs, &list_symbol, sizeof list_symbol);
  }
}

static rtc_compiler_t *load(xr_gpu_compiler_kind_t kind) {
  pthread_mutex_lock(&load_mutex);
  load_locked(kind);
  pthread_mutex_unlock(&load_mutex);
  return &compilers[kind];
}

xr_status_t xr_gpu_compiler_describe(xr_gpu_compiler_kind_t kind, char *out, size_t capacity) {
  rtc_compiler_t *compiler = load(kind);
  if (compiler->status != XR_OK) {
    snprintf(out, capacity, "%s unavailable: %s", compiler->name, compiler->report);
    return XR_UNAVAILABLE;
  }
  snprintf(out, capacity, "%s %s (%s)", compiler->name, compiler->version,
           compiler->library.path);
  return XR_OK;
}

/* UNAVAILABLE with the list when NVRTC says it cannot target `target` ("sm_100"). */
static xr_status_t check_nvrtc_target(rtc_compiler_t *compiler, const char *target) {
  int count = 0;
  if (!compiler->supported_arch_count || !compiler->supported_archs ||
      compiler->supported_arch_count(&count) != 0 || count <= 0 || count > 256) {
    return XR_OK; /* older NVRTC: the compile itself will say */
  }
  int archs[256];
  if (compiler->supported_archs(archs) != 0) return XR_OK;
  int wanted = atoi(target + 3);
  char list[512] = "";
  for (int i = 0; i < count; i++) {
    if (archs[i] == wanted) return XR_OK;
    xr_dynload_report_append(list, sizeof list, "sm_%d", archs[i]);
  }
  return xr_error(XR_UNAVAILABLE,
                  "no usable code for %s: NVRTC %s (%s) compiles for %s only; install a newer "
                  "CUDA toolkit or point XR_NVRTC_LIBRARY at its libnvrtc.so",
                  target, compiler->version, compiler->library.path, list);
}

/* Splits `options` at whitespace into argv (pointing into `storage`); false when too many. */
static bool split_options(const char *options, char *storage, size_t storage_size,
                          const char **argv, int capacity, int *count) {
  if (!options) return true;
  snprintf(storage, storage_size, "%s", options);
  for (char *save = NULL, *token = strtok_r(storage, " \t\n", &save); token;
       token = strtok_r(NULL, " \t\n", &save)) {
    if (*count >= capacity) return false;
    argv[(*count)++] = token;
  }
  return true;
}

static char *program_log(rtc_compiler_t *compiler, void *program) {
  size_t size = 0;
  if (compiler->api.log_size(program, &size) != 0 || size == 0) return NULL;
  char *log = calloc(1, size + 1);
  if (log && compiler->api.log(program, log) != 0) log[0] = '\0';
  return log;
}

xr_status_t xr_gpu_compile(const char *target, const char *label, const char *source, size_t size,
                           const char *options, void **out_binary, size_t *out_size) {
  xr_gpu_compiler_kind_t kind;
  if (!label) label = "program";
  if (!xr_gpu_compiler_for_target(target, &kind)) {
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: unknown target \"%s\": expected sm_<N> (NVIDIA) or gfx<N> (AMD)", label,
                    target ? target : "(null)");
  }
  rtc_compiler_t *compiler = load(kind);
  if (compiler->status != XR_OK) {
    return xr_error(XR_UNAVAILABLE, "%s: cannot compile for %s: %s unavailable: %s", label,
                    target, compiler->name, compiler->report);
  }
  if (kind == XR_GPU_COMPILER_NVRTC) {
    xr_status_t status = check_nvrtc_target(compiler, target);
    if (status != XR_OK) return xr_error_prefix(status, "%s: ", label);
  }

  const char *extra = options ? options : "";
  const void *parts[] = {compiler->cache_kind, compiler->version, target, extra, source};
  size_t sizes[] = {strlen(compiler->cache_kind), strlen(compiler->version), strlen(target),
                    strlen(extra), size};
  xr_cache_key_t key = xr_cache_key(parts, sizes, sizeof parts / sizeof parts[0]);
  size_t cached_size = 0;
  void *cached = xr_cache_load(compiler->cache_kind, key, &cached_size);
  if (cached) {
    *out_binary = cached;
    *out_size = cached_size;
    return XR_OK;
  }

  /* The compilers want NUL-terminated source. */
  char *text = malloc(size + 1);
  char *storage = malloc(strlen(extra) + 1);
  if (!text || !storage) {
    free(text);
    free(storage);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", label);
  }
  memcpy(text, source, size);
  text[size] = '\0';
  char arch_option[96];
  const char *argv[64];
  int argc = 0;
  if (kind == XR_GPU_COMPILER_NVRTC) {
    snprintf(arch_option, sizeof arch_option, "--gpu-architecture=%s", target);
    argv[argc++] = arch_option;
  } else {
    snprintf(arch_option, sizeof arch_option, "--offload-arch=%s", target);
    argv[argc++] = arch_option;
    argv[argc++] = "-O3";
  }
  xr_status_t status = XR_OK;
  if (!split_options(options, storage, strlen(extra) + 1, argv, 64, &argc)) {
    status = xr_error(XR_INVALID_ARGUMENT, "%s: more than %d build options", label, 64 - 2);
  }
  void *program = NULL;
  int result = 0;
  if (status == XR_OK) {
    result = compiler->api.create_program(&program, text, label, 0, NULL, NULL);
    if (result != 0) {
      status = xr_error(XR_INTERNAL, "%s: %s: %sCreateProgram: %s (%d)", label, compiler->name,
                        kind == XR_GPU_COMPILER_NVRTC ? "nvrtc" : "hiprtc",
                        compiler->api.error_string(result), result);
      program = NULL;
    }
  }
  if (status == XR_OK) {
    result = compiler->api.compile_program(program, argc, argv);
    if (result != 0) {
      char *log = program_log(compiler, program);
      /* A compile error or a bad option is the caller's fault; anything else (missing
       * builtins, a target the compiler does not know) means this machine cannot produce code
       * for the device. */
      xr_status_t code = result == RTC_ERROR_COMPILATION || result == RTC_ERROR_INVALID_OPTION
                             ? XR_INVALID_ARGUMENT
                             : XR_UNAVAILABLE;
      status = xr_error(code, "%s: compiling for %s with %s %s: %s (%d); log:\n%s", label, target,
                        compiler->name, compiler->version, compiler->api.error_string(result),
                        result, log && log[0] ? log : "(empty)");
      free(log);
    }
  }
  size_t binary_size = 0;
  char *binary = NULL;
  if (status == XR_OK) {
    result = compiler->api.code_size(program, &binary_size);
    if (result == 0 && binary_size > 0 && (binary = malloc(binary_size))) {
      result = compiler->api.code(program, binary);
    }
    if (result != 0 || !binary) {
      status = xr_error(result ? XR_INTERNAL : XR_RESOURCE_EXHAUSTED,
                        "%s: %s returned no code for %s: %s (%d)", label, compiler->name, target,
                        compiler->api.error_string(result), result);
      free(binary);
      binary = NULL;
    }
  }
  if (program) compiler->api.destroy_program(&program);
  free(text);
  free(storage);
  if (status != XR_OK) return status;
  xr_cache_store(compiler->cache_kind, key, binary, binary_size);
  *out_binary = binary;
  *out_size = binary_size;
  return XR_OK;
}

/* The public compile-only entry point of hal.h. */
xr_status_t xr_hal_compile(const char *target, const xr_hal_executable_params_t *params,
                           void **out_binary, size_t *out_size) {
  if (!target || !params || !out_binary || !out_size) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_compile: NULL argument");
  }
  if (params->format != XR_HAL_EXECUTABLE_CUDA_SOURCE) {
    return xr_error(XR_UNIMPLEMENTED,
                    "xr_hal_compile: only XR_HAL_EXECUTABLE_CUDA_SOURCE compiles without a device");
  }
  if (!params->data || params->size == 0) {
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_compile: %s: empty source",
                    params->label ? params->label : "program");
  }
  return xr_gpu_compile(target, params->label, params->data, params->size, params->options,
                        out_binary, out_size);
}
