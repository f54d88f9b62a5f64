/* execution_details.json, as --capture-dir reads it. */
#include <stdlib.h>
#include <sys/stat.h>

#include "formats/trace_extract.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", fuzz_path("capdir"));
  mkdir(dir, 0755);
  char file[4200];
  snprintf(file, sizeof file, "%s/execution_details.json", dir);
  FILE *f = fopen(file, "wb");
  if (!f) abort();
  if (size) fwrite(data, 1, size, f);
  fclose(f);
  xr_extract_capture_t *caps;
  size_t n;
  if (xr_extract_read_capture_dir(dir, &caps, &n) == XR_OK) {
    fuzz_require(n > 0 && caps, "an empty list was accepted");
    for (size_t i = 0; i < n; i++) fuzz_require(caps[i].batch_size > 0, "entry %zu", i);
    xr_extract_captures_free(caps, n);
  }
  remove(file);
  return 0;
}
