/* Trace extraction: the input as a trace in memory, and as a file (gzread takes plain and gzip
 * alike, so gzip inputs exercise the inflating reader). Whatever extraction writes must validate
 * and survive the MessagePack round trip. */
#include <stdlib.h>

#include "formats/bundle.h"
#include "formats/trace_extract.h"
#include "tests/fuzz/fuzz.h"

static void check(xr_status_t st, xr_bundle_t *b, xr_extract_summary_t *s) {
  if (st != XR_OK) return;
  xr_status_t v = xr_bundle_validate(b, false, NULL);
  fuzz_require(v == XR_OK, "the extracted bundle does not validate: %s", xr_last_error());
  uint8_t *bytes;
  size_t size;
  if (xr_bundle_encode_msgpack(b, &bytes, &size) == XR_OK) {
    xr_bundle_t *m = NULL;
    char where[256];
    fuzz_require(xr_bundle_decode(bytes, size, "t.msgpack", ".", NULL, &m) == XR_OK, "%s",
                 xr_last_error());
    fuzz_require(xr_bundle_equal(b, m, where, sizeof where), "round trip differs at %s", where);
    xr_bundle_destroy(m);
    free(bytes);
  }
  xr_bundle_destroy(b);
  xr_extract_summary_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  xr_bundle_t *b = NULL;
  xr_extract_summary_t s;
  xr_extract_options_t outermost = {.outermost = true};
  xr_status_t st = xr_trace_extract_memory((const char *)data, size, "fuzz.json", NULL, &b, &s);
  check(st, b, &s);
  const char *path = fuzz_write("trace.json.gz", data, size);
  st = xr_trace_extract(path, &outermost, &b, &s);
  check(st, b, &s);
  remove(path);
  return 0;
}
