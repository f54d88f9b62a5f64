/* The CUDA driver API symbols xreplay uses, each listed once as REQUIRED or OPTIONAL (the
 * X-macro pattern of IREE's runtime/src/iree/hal/drivers/hip/dynamic_symbol_tables.h). The
 * includer defines XR_CUDA_REQUIRED(ret, name, params) and XR_CUDA_OPTIONAL(...) first. Only the
 * probe's symbols so far; types are plain C (CUresult is an int enum) so no CUDA headers are
 * needed to build. No include guard: included once per expansion. */
XR_CUDA_REQUIRED(int, cuInit, (unsigned int flags))
XR_CUDA_REQUIRED(int, cuDeviceGetCount, (int *count))
XR_CUDA_OPTIONAL(int, cuGetErrorName, (int error, const char **name))
