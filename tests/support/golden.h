/* The golden cases (tests/data/golden) as one bundle: every case's TraceLens IR entry (the
 * manifest's "ir" fields) in manifest order, with .npy paths resolved in the golden folder.
 * Format vectors (the mx cases) have no IR and no op in the bundle. */
#ifndef XR_TESTS_SUPPORT_GOLDEN_H
#define XR_TESTS_SUPPORT_GOLDEN_H

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"

#define GOLDEN_DIR "tests/data/golden"

/* Decodes the bundle with `options` (NULL: validate only). When out_manifest is given, the
 * parsed manifest is handed over too (the caller deletes it). */
static inline xr_bundle_t *golden_bundle(const xr_load_options_t *options, cJSON **out_manifest) {
  uint8_t *bytes;
  size_t size;
  cr_assert_eq(xr_read_file(GOLDEN_DIR "/manifest.json", &bytes, &size), XR_OK, "%s",
               xr_last_error());
  cJSON *manifest = cJSON_Parse((const char *)bytes);
  free(bytes);
  cr_assert_not_null(manifest, "manifest.json is not JSON");
  cJSON *list = cJSON_CreateArray(), *c;
  cJSON_ArrayForEach(c, manifest) {
    const cJSON *ir = cJSON_GetObjectItem(c, "ir");
    if (ir) cJSON_AddItemToArray(list, cJSON_Duplicate(ir, 1));
  }
  char *text = cJSON_PrintUnformatted(list);
  cJSON_Delete(list);
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((uint8_t *)text, strlen(text), "golden", GOLDEN_DIR, options, &b),
               XR_OK, "%s", xr_last_error());
  free(text);
  if (out_manifest) *out_manifest = manifest;
  else cJSON_Delete(manifest);
  return b;
}

#endif
