/* .npy files: the header parser, then the contents read for a tensor spec, both the spec the
 * header itself describes and a fixed one it must be checked against. */
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "formats/internal.h"
#include "tests/fuzz/fuzz.h"

static void read_for(const char *path, xr_dtype_t dtype, int32_t rank, const int64_t *shape) {
  int64_t dims[XR_MAX_RANK], strides[XR_MAX_RANK];
  xr_tensor_spec_t t = {.dtype = dtype, .rank = rank, .shape = dims, .strides = strides,
                        .storage_size = -1};
  for (int32_t i = 0; i < rank; i++) dims[i] = shape[i];
  xr_tensor_set_contiguous(&t);
  uint8_t *bytes = NULL;
  size_t n = 0;
  if (xr_npy_read_for_tensor(path, &t, &bytes, &n) == XR_OK) free(bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_write("t.npy", data, size);
  xr_npy_t npy;
  if (xr_npy_load(path, &npy) == XR_OK) {
    xr_dtype_t dtype = XR_DTYPE_INVALID;
    for (int d = 1; d < XR_DTYPE_COUNT && dtype == XR_DTYPE_INVALID; d++)
      if (xr_dtype_size((xr_dtype_t)d) == npy.item_size) dtype = (xr_dtype_t)d;
    if (dtype != XR_DTYPE_INVALID) read_for(path, dtype, npy.rank, npy.shape);
    xr_npy_free(&npy);
  }
  static const int64_t fixed[2] = {2, 3};
  read_for(path, XR_DTYPE_F32, 2, fixed);
  remove(path);
  return 0;
}
