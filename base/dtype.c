/* The C tables of the dtype list (base/dtype_table.h) and the spellings people write. */
#include "base/dtype.h"

#include <string.h>
#include <strings.h>

typedef struct dtype_info {
  const char *name; /* profiler spelling, written to files */
  const char *short_name;
  size_t size;
  xr_dtype_class_t class_;
  int torch_code;
} dtype_info_t;

static const dtype_info_t dtype_table[XR_DTYPE_COUNT] = {
    [XR_DTYPE_INVALID] = {"invalid", "invalid", 0, XR_DTYPE_CLASS_INVALID, -1},
#define XR_DTYPE(name, code, spelling, short_name, bytes, class, torch) \
  [code] = {spelling, short_name, bytes, XR_DTYPE_CLASS_##class, torch},
#include "base/dtype_table.h"
#undef XR_DTYPE
};

/* The table lists codes densely and in order, so XR_DTYPE_COUNT is one past the largest. */
#define XR_DTYPE(name, code, spelling, short_name, bytes, class, torch) \
  _Static_assert(XR_DTYPE_##name < XR_DTYPE_COUNT && (code) > 0, "dtype code out of order");
#include "base/dtype_table.h"
#undef XR_DTYPE

/* Other spellings: torch names, C names and numpy-ish short names (the short names of the table
 * are accepted too). */
static const struct {
  const char *alias;
  xr_dtype_t dtype;
} dtype_aliases[] = {
    {"float32", XR_DTYPE_F32},
    {"fp32", XR_DTYPE_F32},
    {"float64", XR_DTYPE_F64},
    {"half", XR_DTYPE_F16},
    {"float16", XR_DTYPE_F16},
    {"fp16", XR_DTYPE_F16},
    {"bfloat16", XR_DTYPE_BF16},
    {"float8_e4m3fn", XR_DTYPE_F8E4M3FN},
    {"float8_e5m2", XR_DTYPE_F8E5M2},
    {"float8_e4m3fnuz", XR_DTYPE_F8E4M3FNUZ},
    {"float8_e5m2fnuz", XR_DTYPE_F8E5M2FNUZ},
    {"float4_e2m1fn_x2", XR_DTYPE_F4E2M1X2},
    {"float8_e8m0fnu", XR_DTYPE_F8E8M0},
    {"int8", XR_DTYPE_I8},
    {"char", XR_DTYPE_I8},
    {"short", XR_DTYPE_I16},
    {"int16", XR_DTYPE_I16},
    {"int32", XR_DTYPE_I32},
    {"long", XR_DTYPE_I64},
    {"int64", XR_DTYPE_I64},
    {"long long", XR_DTYPE_I64},
    {"uint8", XR_DTYPE_U8},
    {"uint16", XR_DTYPE_U16},
    {"unsigned short int", XR_DTYPE_U16},
    {"uint32", XR_DTYPE_U32},
    {"uint64", XR_DTYPE_U64},
    {"unsigned long int", XR_DTYPE_U64},
};

xr_dtype_t xr_dtype_parse(const char *s) {
  if (!s) return XR_DTYPE_INVALID;
  if (strncmp(s, "torch.", 6) == 0) s += 6;
  for (int d = 1; d < XR_DTYPE_COUNT; d++) {
    const char *name = dtype_table[d].name;
    if (strcmp(s, name) == 0) return (xr_dtype_t)d;
    /* "c10::Half" may also appear as plain "Half". */
    if (strncmp(name, "c10::", 5) == 0 && strcmp(s, name + 5) == 0) return (xr_dtype_t)d;
    if (strcasecmp(s, dtype_table[d].short_name) == 0) return (xr_dtype_t)d;
  }
  for (size_t i = 0; i < sizeof dtype_aliases / sizeof dtype_aliases[0]; i++)
    if (strcasecmp(s, dtype_aliases[i].alias) == 0) return dtype_aliases[i].dtype;
  return XR_DTYPE_INVALID;
}

static const dtype_info_t *dtype_info(xr_dtype_t d) {
  return (unsigned)d < XR_DTYPE_COUNT ? &dtype_table[d] : &dtype_table[0];
}

const char *xr_dtype_name(xr_dtype_t d) {
  return dtype_info(d)->name;
}
const char *xr_dtype_short_name(xr_dtype_t d) {
  return dtype_info(d)->short_name;
}
size_t xr_dtype_size(xr_dtype_t d) {
  return dtype_info(d)->size;
}
xr_dtype_class_t xr_dtype_class(xr_dtype_t d) {
  return dtype_info(d)->class_;
}
int xr_dtype_torch_code(xr_dtype_t d) {
  return dtype_info(d)->torch_code;
}

bool xr_dtype_is_floating(xr_dtype_t d) {
  xr_dtype_class_t c = xr_dtype_class(d);
  return c == XR_DTYPE_CLASS_FLOAT || c == XR_DTYPE_CLASS_FLOAT8;
}

bool xr_dtype_is_fp8(xr_dtype_t d) {
  return xr_dtype_class(d) == XR_DTYPE_CLASS_FLOAT8;
}
bool xr_dtype_is_unsigned(xr_dtype_t d) {
  return xr_dtype_class(d) == XR_DTYPE_CLASS_UNSIGNED;
}

xr_dtype_t xr_dtype_from_torch_code(int64_t code) {
  for (int d = 1; d < XR_DTYPE_COUNT; d++)
    if (dtype_table[d].torch_code == code) return (xr_dtype_t)d;
  return XR_DTYPE_INVALID;
}
