#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

const char *fuzz_path(const char *name) {
  static char buf[4096];
  const char *dir = getenv("TEST_TMPDIR");
  if (!dir || !*dir) dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  snprintf(buf, sizeof buf, "%s/xr_fuzz_%d_%s", dir, (int)getpid(), name);
  return buf;
}

const char *fuzz_write(const char *name, const uint8_t *data, size_t size) {
  const char *path = fuzz_path(name);
  FILE *f = fopen(path, "wb");
  if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
    perror(path);
    abort();
  }
  return path;
}
