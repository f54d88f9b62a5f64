/* NVRTC and hiprtc have the same C API under two prefixes; each entry names the field of the
 * compiler's table, the signature (results are int enums, programs opaque pointers, so no
 * vendor header is needed), the NVRTC symbol and the hiprtc symbol: the two-vendor list style
 * of base/dynload.h. */
#ifndef XR_HAL_CORE_GPU_COMPILER_SYMBOLS_H
#define XR_HAL_CORE_GPU_COMPILER_SYMBOLS_H

#define XR_RTC_SYMBOLS(X) \
  X(REQUIRED, int, version, (int *major, int *minor), nvrtcVersion, hiprtcVersion) \
  X(REQUIRED, const char *, error_string, (int result), nvrtcGetErrorString, hiprtcGetErrorString) \
  X(REQUIRED, int, create_program, (void **program, const char *source, const char *name, int header_count, const char *const *headers, const char *const *include_names), nvrtcCreateProgram, hiprtcCreateProgram) \
  X(REQUIRED, int, destroy_program, (void **program), nvrtcDestroyProgram, hiprtcDestroyProgram) \
  X(REQUIRED, int, compile_program, (void *program, int option_count, const char *const *options), nvrtcCompileProgram, hiprtcCompileProgram) \
  X(REQUIRED, int, log_size, (void *program, size_t *size), nvrtcGetProgramLogSize, hiprtcGetProgramLogSize) \
  X(REQUIRED, int, log, (void *program, char *log), nvrtcGetProgramLog, hiprtcGetProgramLog) \
  X(REQUIRED, int, code_size, (void *program, size_t *size), nvrtcGetCUBINSize, hiprtcGetCodeSize) \
  X(REQUIRED, int, code, (void *program, char *code), nvrtcGetCUBIN, hiprtcGetCode)

#endif
