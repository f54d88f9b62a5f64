#include "base/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

xr_status_t xr_read_file(const char *path, uint8_t **out_bytes, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return xr_error(errno == ENOENT ? XR_NOT_FOUND : XR_INVALID_ARGUMENT, "%s: cannot open: %s",
                    path, strerror(errno));
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return xr_error(XR_INVALID_ARGUMENT, "%s: not a regular file", path);
  }
  size_t size = (size_t)sb.st_size;
  uint8_t *bytes = malloc(size + 1);
  if (!bytes) {
    fclose(f);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory reading %zu bytes", path, size);
  }
  size_t got = fread(bytes, 1, size, f);
  int err = ferror(f);
  fclose(f);
  if (got != size || err) {
    free(bytes);
    return xr_error(XR_DATA_LOSS, "%s: read %zu of %zu bytes", path, got, size);
  }
  bytes[size] = '\0';
  *out_bytes = bytes;
  *out_size = size;
  return XR_OK;
}
