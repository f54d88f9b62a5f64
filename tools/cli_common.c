/* What `replay` and `replay plan` share (tools/cli.h): value parsers and loading the bundle with
 * its --model-config, so that a plan is made of exactly the bundle a replay would run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "formats/bundle.h"
#include "tools/cli.h"

const char *xr_cli_path(const char *arg, char *buf, size_t size) {
  const char *wd = getenv("BUILD_WORKING_DIRECTORY");
  if (!wd || !wd[0] || arg[0] == '/') return arg;
  snprintf(buf, size, "%s/%s", wd, arg);
  return buf;
}

bool xr_cli_parse_int(const char *s, long long lo, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno || v < lo) return false;
  *out = v;
  return true;
}

bool xr_cli_parse_bytes(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || errno || s[0] == '-') return false;
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10, end++;
  else if (*end == 'M' || *end == 'm') shift = 20, end++;
  else if (*end == 'G' || *end == 'g') shift = 30, end++;
  if (*end || v == 0 || v > (UINT64_MAX >> shift)) return false;
  *out = (uint64_t)v << shift;
  return true;
}

int xr_cli_load_bundle(const char *prog, const char *path, const char *model_config,
                       xr_bundle_t **out_bundle) {
  *out_bundle = NULL;
  xr_bundle_t *b;
  if (xr_bundle_load(path, &b) != XR_OK) {
    fprintf(stderr, "%s: %s\n", prog, xr_last_error());
    return XR_EXIT_USAGE;
  }
  char buf[4096];
  if (model_config && xr_cli_apply_model_config(prog, xr_cli_path(model_config, buf, sizeof buf),
                                                b) != XR_EXIT_OK) {
    xr_bundle_destroy(b);
    return XR_EXIT_USAGE;
  }
  *out_bundle = b;
  return XR_EXIT_OK;
}
