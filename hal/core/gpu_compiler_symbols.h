/* NVRTC and hiprtc have the same C API under two prefixes; each entry names the field of the
 * driver's table, the NVRTC symbol, the hiprtc symbol, and the signature (results are int
 * enums, programs opaque pointers, so no vendor header is needed). The includer defines
 * XR_RTC_SYMBOL(ret, field, nvrtc_name, hiprtc_name, params). All are required. No include
 * guard: included once per expansion. */
XR_RTC_SYMBOL(int, version, nvrtcVersion, hiprtcVersion, (int *major, int *minor))
XR_RTC_SYMBOL(const char *, error_string, nvrtcGetErrorString, hiprtcGetErrorString, (int result))
XR_RTC_SYMBOL(int, create_program, nvrtcCreateProgram, hiprtcCreateProgram,
              (void **program, const char *source, const char *name, int header_count,
               const char *const *headers, const char *const *include_names))
XR_RTC_SYMBOL(int, destroy_program, nvrtcDestroyProgram, hiprtcDestroyProgram, (void **program))
XR_RTC_SYMBOL(int, compile_program, nvrtcCompileProgram, hiprtcCompileProgram,
              (void *program, int option_count, const char *const *options))
XR_RTC_SYMBOL(int, log_size, nvrtcGetProgramLogSize, hiprtcGetProgramLogSize,
              (void *program, size_t *size))
XR_RTC_SYMBOL(int, log, nvrtcGetProgramLog, hiprtcGetProgramLog, (void *program, char *log))
XR_RTC_SYMBOL(int, code_size, nvrtcGetCUBINSize, hiprtcGetCodeSize, (void *program, size_t *size))
XR_RTC_SYMBOL(int, code, nvrtcGetCUBIN, hiprtcGetCode, (void *program, char *code))
