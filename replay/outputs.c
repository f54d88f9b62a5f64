/* Outputs: comparing two storages of a view, .npy dumps, timing statistics and check
 * thresholds. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "replay/internal.h"

static int64_t numel_of(int32_t rank, const int64_t *shape) {
  int64_t n = 1;
  for (int32_t i = 0; i < rank; i++) n *= shape[i];
  return n;
}

static int64_t storage_index(int32_t rank, const int64_t *shape, const int64_t *strides,
                             int64_t offset, int64_t linear) {
  int64_t index = offset;
  for (int32_t d = rank - 1; d >= 0; d--) {
    index += (linear % shape[d]) * strides[d];
    linear /= shape[d];
  }
  return index;
}

void xr_compare_views(const void *actual, const void *expected, xr_dtype_t dtype, int32_t rank,
                      const int64_t *shape, const int64_t *strides, int64_t offset,
                      double *out_sum_sq_diff, double *out_sum_sq, bool *out_nonfinite) {
  int64_t n = numel_of(rank, shape);
  double num = 0, den = 0;
  bool nonfinite = false;
  for (int64_t i = 0; i < n; i++) {
    int64_t at = storage_index(rank, shape, strides, offset, i);
    double a = xr_load_element(actual, dtype, at), b = xr_load_element(expected, dtype, at);
    if (!isfinite(a) && isfinite(b)) nonfinite = true;
    double d = a - b;
    if (isfinite(d)) num += d * d;
    if (isfinite(b)) den += b * b;
  }
  *out_sum_sq_diff = num;
  *out_sum_sq = den;
  *out_nonfinite = nonfinite;
}

static const char *npy_descr(xr_dtype_t d) {
  switch (d) {
    case XR_DTYPE_F32: return "<f4";
    case XR_DTYPE_F64: return "<f8";
    case XR_DTYPE_F16: return "<f2";
    case XR_DTYPE_BF16: return "<u2"; /* raw bf16 bits, as the golden inputs are */
    case XR_DTYPE_I8: return "|i1";
    case XR_DTYPE_I16: return "<i2";
    case XR_DTYPE_I32: return "<i4";
    case XR_DTYPE_I64: return "<i8";
    case XR_DTYPE_U16: return "<u2";
    case XR_DTYPE_U32: return "<u4";
    case XR_DTYPE_U64: return "<u8";
    case XR_DTYPE_BOOL: return "|b1";
    default: return "|u1"; /* u8 and the fp8 formats as raw bytes */
  }
}

xr_status_t xr_npy_write(const char *path, const void *storage, xr_dtype_t dtype, int32_t rank,
                         const int64_t *shape, const int64_t *strides, int64_t offset) {
  char dict[512];
  int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                     npy_descr(dtype));
  for (int32_t i = 0; i < rank; i++)
    len += snprintf(dict + len, sizeof dict - (size_t)len, "%lld,%s", (long long)shape[i],
                    i + 1 < rank ? " " : "");
  len += snprintf(dict + len, sizeof dict - (size_t)len, "), }");
  /* Pad so that magic + version + length + header is a multiple of 64, ending in '\n'. */
  int header = len + 1;
  while ((10 + header) % 64) header++;
  FILE *f = fopen(path, "wb");
  if (!f) return xr_error(XR_INVALID_ARGUMENT, "%s: cannot create: %s", path, strerror(errno));
  fwrite("\x93NUMPY\x01\x00", 1, 8, f);
  fputc(header & 0xff, f);
  fputc(header >> 8, f);
  fwrite(dict, 1, (size_t)len, f);
  for (int i = len; i < header - 1; i++) fputc(' ', f);
  fputc('\n', f);
  size_t esize = xr_dtype_size(dtype);
  int64_t n = numel_of(rank, shape);
  for (int64_t i = 0; i < n; i++) {
    int64_t s = storage_index(rank, shape, strides, offset, i);
    fwrite((const uint8_t *)storage + (size_t)s * esize, 1, esize, f);
  }
  if (fclose(f) != 0) return xr_error(XR_DATA_LOSS, "%s: write failed", path);
  return XR_OK;
}

double xr_check_threshold(xr_dtype_t d) {
  switch (d) {
    case XR_DTYPE_F64: return 1e-12;
    case XR_DTYPE_F32: return 1e-5;   /* allows TF32-class GEMMs */
    case XR_DTYPE_F16: return 1e-4;
    case XR_DTYPE_BF16: return 1e-3;
    case XR_DTYPE_F8E4M3FN:
    case XR_DTYPE_F8E5M2:
    case XR_DTYPE_F8E4M3FNUZ:
    case XR_DTYPE_F8E5M2FNUZ: return 5e-2;
    default: return 0; /* integers and bools: exact */
  }
}
