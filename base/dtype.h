/* Element types: the C expansion of the dtype table (base/dtype_table.h). */
#ifndef XR_BASE_DTYPE_H
#define XR_BASE_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum xr_dtype {
  XR_DTYPE_INVALID = 0,
#define XR_DTYPE(name, code, spelling, short_name, bytes, class, torch) XR_DTYPE_##name = code,
#include "base/dtype_table.h"
#undef XR_DTYPE
  XR_DTYPE_COUNT
} xr_dtype_t;

typedef enum xr_dtype_class {
  XR_DTYPE_CLASS_INVALID = 0,
  XR_DTYPE_CLASS_FLOAT,  /* f16, bf16, f32, f64 */
  XR_DTYPE_CLASS_FLOAT8, /* the four 8-bit float formats */
  XR_DTYPE_CLASS_SIGNED,
  XR_DTYPE_CLASS_UNSIGNED,
  XR_DTYPE_CLASS_BOOL,
  XR_DTYPE_CLASS_MX, /* packed fp4 pairs and e8m0 scales: parts of a block-scaled tensor */
} xr_dtype_class_t;

/* Parses any spelling seen in profiler traces ("c10::BFloat16", "long int", "float") or the
 * short aliases ("bfloat16", "long", "half", "torch.float16"). XR_DTYPE_INVALID if unknown. */
xr_dtype_t xr_dtype_parse(const char *spelling);
/* The profiler's own spelling ("c10::BFloat16"), used when writing files; "invalid" for an
 * unknown value. */
const char *xr_dtype_name(xr_dtype_t dtype);
/* A short name for tables ("bf16"). */
const char *xr_dtype_short_name(xr_dtype_t dtype);
size_t xr_dtype_size(xr_dtype_t dtype); /* bytes; 0 for an unknown value */
xr_dtype_class_t xr_dtype_class(xr_dtype_t dtype);
bool xr_dtype_is_floating(xr_dtype_t dtype); /* FLOAT or FLOAT8 */
bool xr_dtype_is_fp8(xr_dtype_t dtype);
bool xr_dtype_is_unsigned(xr_dtype_t dtype);
/* c10::ScalarType numbers, as traces record a `dtype` argument; XR_DTYPE_INVALID for the
 * types not modelled (complex, quantized), -1 for XR_DTYPE_INVALID. */
xr_dtype_t xr_dtype_from_torch_code(int64_t code);
int xr_dtype_torch_code(xr_dtype_t dtype);

#ifdef __cplusplus
}
#endif
#endif /* XR_BASE_DTYPE_H */
