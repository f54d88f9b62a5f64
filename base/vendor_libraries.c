#include "base/vendor_libraries.h"

#define XR_VENDOR_LIBRARY_SPEC(id, label, env, places, ...)                           \
  [XR_VENDOR_LIBRARY_##id] = {label, env, (const char *const[]){__VA_ARGS__},           \
                              sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *), \
                              places},
const xr_dynload_spec_t xr_vendor_libraries[XR_VENDOR_LIBRARY_COUNT] = {
    XR_VENDOR_LIBRARIES(XR_VENDOR_LIBRARY_SPEC)};
#undef XR_VENDOR_LIBRARY_SPEC
