/* Bundle files: detection and the three decoders (our JSON, our MessagePack, TraceLens IR), each
 * also forced on every input; a bundle that decodes and validates must survive both encoders
 * unchanged (decode -> encode -> decode gives an equal bundle). */
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "tests/fuzz/fuzz.h"

static void round_trip(const xr_bundle_t *b) {
  char where[256];
  uint8_t *bytes;
  size_t size;
  if (xr_bundle_encode_msgpack(b, &bytes, &size) == XR_OK) {
    xr_bundle_t *m = NULL;
    xr_status_t st = xr_bundle_decode(bytes, size, "again.msgpack", ".", NULL, &m);
    fuzz_require(st == XR_OK, "its MessagePack does not decode: %s", xr_last_error());
    fuzz_require(xr_bundle_equal(b, m, where, sizeof where), "MessagePack differs at %s", where);
    xr_bundle_destroy(m);
    free(bytes);
  }
  char *text;
  xr_json_options_t o = {.pretty = false};
  if (xr_bundle_encode_json(b, &o, &text, &size) == XR_OK) {
    xr_bundle_t *j = NULL;
    xr_status_t st = xr_bundle_decode((uint8_t *)text, size, "again.json", ".", NULL, &j);
    fuzz_require(st == XR_OK, "its JSON does not decode: %s\n%s", xr_last_error(), text);
    fuzz_require(xr_bundle_equal(b, j, where, sizeof where), "JSON differs at %s", where);
    xr_bundle_destroy(j);
    free(text);
  }
  o.tracelens = true;
  if (xr_bundle_encode_json(b, &o, &text, &size) == XR_OK) free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  xr_load_options_t validate = {.validate = true};
  xr_bundle_t *b = NULL;
  if (xr_bundle_decode(data, size, "fuzz", ".", &validate, &b) == XR_OK) round_trip(b);
  xr_bundle_destroy(b);
  /* Each decoder on its own, whatever the content looks like. */
  if (xr_bundle_create(&b) == XR_OK) {
    (void)xr_bundle_decode_json((const char *)data, size, "fuzz.json", b);
    xr_bundle_destroy(b);
  }
  if (xr_bundle_create(&b) == XR_OK) {
    (void)xr_bundle_decode_msgpack(data, size, "fuzz.msgpack", b);
    xr_bundle_destroy(b);
  }
  return 0;
}
