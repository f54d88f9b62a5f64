/* The HIP runtime symbols xreplay uses, each listed once as REQUIRED or OPTIONAL (the
 * X-macro pattern of IREE's runtime/src/iree/hal/drivers/hip/dynamic_symbol_tables.h). The
 * includer defines XR_HIP_REQUIRED(ret, name, params) and XR_HIP_OPTIONAL(...) first. Only the
 * probe's symbols so far; types are plain C (hipError_t is an int enum) so no HIP headers are
 * needed to build. No include guard: included once per expansion. */
XR_HIP_REQUIRED(int, hipGetDeviceCount, (int *count))
XR_HIP_OPTIONAL(const char *, hipGetErrorName, (int error))
