/* Replay reports read back, as `replay compare` reads another machine's: every entry found by
 * position and name again; then drawn, as `replay report` and `replay compare --svg` draw
 * them (into /dev/null: the drawing must survive any report that reads). */
#include <stdlib.h>

#include "replay/report_compare.h"
#include "replay/report_html.h"
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
    const xr_report_contents_t *pages[2] = {c, c};
    fuzz_require(xr_report_html_write("/dev/null", pages, 2) == XR_OK, "drawing: %s",
                 xr_last_error());
    /* Compared with itself: every op pairs with itself, by position or by signature. */
    xr_comparison_t *cmp = NULL;
    fuzz_require(xr_report_compare(c, c, 5, &cmp) == XR_OK, "comparing: %s", xr_last_error());
    fuzz_require(cmp->pair_count == c->op_count, "%zu of %zu ops paired with themselves",
                 cmp->pair_count, c->op_count);
    FILE *f = fopen("/dev/null", "w");
    if (f) {
      xr_report_speedup_svg(f, c, c, cmp);
      fclose(f);
    }
    xr_comparison_free(cmp);
  }
  xr_report_contents_free(c);
  remove(path);
  return 0;
}
