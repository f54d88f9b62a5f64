/* Files: format detection, loading with validation, saving, and tensor contents. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/internal.h"

xr_bundle_format_t xr_bundle_detect_format(const uint8_t *b, size_t size) {
  size_t i = 0;
  if (size >= 3 && b[0] == 0xef && b[1] == 0xbb && b[2] == 0xbf) i = 3; /* UTF-8 BOM */
  while (i < size && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t')) i++;
  if (i == size) return XR_FORMAT_UNKNOWN;
  if (b[i] == '{') return XR_FORMAT_JSON;
  if (b[i] == '[') return XR_FORMAT_TRACELENS;
  if ((b[0] >= 0x80 && b[0] <= 0x8f) || b[0] == 0xde || b[0] == 0xdf) return XR_FORMAT_MSGPACK;
  return XR_FORMAT_UNKNOWN;
}

const char *xr_bundle_format_name(xr_bundle_format_t format) {
  switch (format) {
    case XR_FORMAT_JSON: return "json";
    case XR_FORMAT_MSGPACK: return "msgpack";
    case XR_FORMAT_TRACELENS: return "tracelens";
    default: return "unknown";
  }
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

xr_bundle_format_t xr_bundle_format_from_path(const char *path) {
  if (ends_with(path, ".json")) return XR_FORMAT_JSON;
  if (ends_with(path, ".msgpack") || ends_with(path, ".mpk")) return XR_FORMAT_MSGPACK;
  return XR_FORMAT_UNKNOWN;
}

xr_status_t xr_trace_not_bundle(const char *name, bool certain) {
  return xr_error(XR_INVALID_ARGUMENT,
                  "%s: %s, not a bundle: %smake a bundle of it with `replay extract %s -o "
                  "BUNDLE.msgpack`",
                  name, certain ? "a profiler trace (JSON with \"traceEvents\")" : "a gzip file",
                  certain ? "" : "if it is a profiler trace, ", name);
}

/* A JSON object whose first key is one a PyTorch (Kineto) or Chrome trace begins with, and no
 * bundle does: told without parsing what may be hundreds of megabytes. Other orders are caught
 * after parsing (formats/json.c). */
static bool starts_like_a_trace(const uint8_t *b, size_t size) {
  size_t i = 0;
  if (size >= 3 && b[0] == 0xef && b[1] == 0xbb && b[2] == 0xbf) i = 3;
  while (i < size && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t')) i++;
  if (i == size || b[i++] != '{') return false;
  while (i < size && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t')) i++;
  static const char *const keys[] = {"\"schemaVersion\"", "\"traceEvents\"",
                                     "\"deviceProperties\"", "\"displayTimeUnit\""};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    size_t n = strlen(keys[k]);
    if (size - i >= n && !memcmp(b + i, keys[k], n)) return true;
  }
  return false;
}

xr_status_t xr_bundle_decode(const uint8_t *bytes, size_t size, const char *name,
                             const char *base_dir, const xr_load_options_t *options,
                             xr_bundle_t **out_bundle) {
  xr_load_options_t defaults = {.validate = true, .check_data_files = false};
  if (!options) options = &defaults;
  xr_bundle_t *b;
  xr_status_t st = xr_bundle_create(&b);
  if (st != XR_OK) return st;
  b->read_data_file = xr_npy_read_data_file;
  if (base_dir && !(b->base_dir = xr_arena_strdup(b->arena, base_dir))) {
    xr_bundle_destroy(b);
    return XR_RESOURCE_EXHAUSTED;
  }
  switch (xr_bundle_detect_format(bytes, size)) {
    case XR_FORMAT_JSON:
      if (starts_like_a_trace(bytes, size)) {
        st = xr_trace_not_bundle(name, true);
        break;
      }
      /* fall through */
    case XR_FORMAT_TRACELENS: st = xr_bundle_decode_json((const char *)bytes, size, name, b); break;
    case XR_FORMAT_MSGPACK: st = xr_bundle_decode_msgpack(bytes, size, name, b); break;
    default:
      if (size == 0) st = xr_error(XR_DATA_LOSS, "%s: empty file", name);
      else if (size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b)
        st = xr_trace_not_bundle(name, false);
      else
        st = xr_error(XR_INVALID_ARGUMENT,
                      "%s: not a bundle: neither JSON, TraceLens IR nor xreplay MessagePack", name);
  }
  /* An empty metadata string records nothing: the device a trace ran on, read as "", is not
   * recorded (and no replay is then "cross-device"). */
  for (size_t i = 0; st == XR_OK && xr_metadata_fields[i]; i++) {
    char **slot = xr_metadata_slot(&b->meta, i);
    if (*slot && !(*slot)[0]) *slot = NULL;
  }
  if (st == XR_OK && options->validate &&
      (st = xr_bundle_validate(b, options->check_data_files, NULL)) != XR_OK)
    xr_error_prefix(st, "%s: ", name);
  if (st != XR_OK) {
    xr_bundle_destroy(b);
    return st;
  }
  *out_bundle = b;
  return XR_OK;
}

xr_status_t xr_bundle_load_with(const char *path, const xr_load_options_t *options,
                                xr_bundle_t **out_bundle) {
  if (!path || !out_bundle) return xr_error(XR_INVALID_ARGUMENT, "xr_bundle_load: NULL argument");
  uint8_t *bytes;
  size_t size;
  xr_status_t st = xr_read_file(path, &bytes, &size);
  if (st != XR_OK) return st;
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (slash) snprintf(dir, sizeof dir, "%.*s", (int)(slash == path ? 1 : slash - path), path);
  else snprintf(dir, sizeof dir, ".");
  st = xr_bundle_decode(bytes, size, path, dir, options, out_bundle);
  free(bytes);
  return st;
}

xr_status_t xr_bundle_load(const char *path, xr_bundle_t **out_bundle) {
  return xr_bundle_load_with(path, NULL, out_bundle);
}

xr_status_t xr_bundle_save(const xr_bundle_t *bundle, const char *path, xr_bundle_format_t format) {
  uint8_t *bytes = NULL;
  size_t size = 0;
  xr_status_t st;
  if (format == XR_FORMAT_MSGPACK) {
    st = xr_bundle_encode_msgpack(bundle, &bytes, &size);
  } else if (format == XR_FORMAT_JSON || format == XR_FORMAT_TRACELENS) {
    xr_json_options_t o = {.pretty = true, .tracelens = format == XR_FORMAT_TRACELENS};
    st = xr_bundle_encode_json(bundle, &o, (char **)&bytes, &size);
  } else {
    return xr_error(XR_INVALID_ARGUMENT, "%s: unknown output format", path);
  }
  if (st != XR_OK) return xr_error_prefix(st, "%s: ", path);
  /* Write beside the target and rename, so a failed write never leaves half a bundle. */
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    free(bytes);
    return xr_error(XR_INVALID_ARGUMENT, "%s: cannot create: %s", tmp, strerror(errno));
  }
  size_t wrote = fwrite(bytes, 1, size, f);
  int close_failed = fclose(f);
  free(bytes);
  if (wrote != size || close_failed || rename(tmp, path) != 0) {
    int e = errno;
    remove(tmp);
    return xr_error(XR_DATA_LOSS, "%s: write failed: %s", path, strerror(e));
  }
  return XR_OK;
}

xr_status_t xr_npy_read_data_file(const xr_bundle_t *bundle, const xr_tensor_spec_t *t,
                                  uint8_t **out_bytes, size_t *out_size) {
  char path[4096];
  if (t->data_file[0] == '/') snprintf(path, sizeof path, "%s", t->data_file);
  else snprintf(path, sizeof path, "%s/%s", bundle->base_dir, t->data_file);
  return xr_npy_read_for_tensor(path, t, out_bytes, out_size);
}

typedef struct embed_ctx {
  xr_bundle_t *bundle;
  xr_status_t status;
  size_t count;
} embed_ctx_t;

static void embed_one(xr_tensor_spec_t *t, void *p) {
  embed_ctx_t *c = p;
  if (c->status != XR_OK || !t->data_file) return;
  uint8_t *bytes;
  size_t n;
  c->status = xr_tensor_read_data(c->bundle, t, &bytes, &n);
  if (c->status != XR_OK) return;
  t->data = xr_arena_alloc(c->bundle->arena, n);
  if (!t->data) {
    free(bytes);
    c->status = XR_RESOURCE_EXHAUSTED;
    return;
  }
  memcpy(t->data, bytes, n);
  free(bytes);
  t->data_size = n;
  t->data_file = NULL;
  c->count++;
}

xr_status_t xr_bundle_embed_data(xr_bundle_t *bundle, size_t *out_tensors) {
  embed_ctx_t c = {bundle, XR_OK, 0};
  xr_bundle_visit_tensors(bundle, embed_one, &c);
  if (out_tensors) *out_tensors = c.count;
  return c.status;
}
