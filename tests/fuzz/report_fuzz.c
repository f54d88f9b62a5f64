/* Replay reports read back, as `replay compare` reads another machine's: every entry found by
 * position and name again. */
#include <stdlib.h>

#include "replay/report_read.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_write("report.json", data, size);
  xr_report_contents_t *c = NULL;
  if (xr_report_read(path, &c) == XR_OK) {
    for (size_t i = 0; i < c->op_count; i++) {
      const xr_report_entry_t *e = xr_report_find(c, c->ops[i].index, c->ops[i].name);
      fuzz_require(e != NULL, "entry %zu not found by its own index and name", i);
    }
  }
  xr_report_contents_free(c);
  remove(path);
  return 0;
}
