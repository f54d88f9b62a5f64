/* xreplay bundle files: the codecs of the op model (formats/model.h).
 *
 * Files: our JSON (cJSON), our MessagePack (msgpack-c, optionally with tensor contents inside),
 * and TraceLens EventReplay IR (JSON), recognised by content; .npy files for tensor contents.
 * docs/bundle-format.md has the schemas. A bundle loaded here reads its tensors' .npy files on
 * demand (xr_tensor_read_data).
 *
 * Thread-safety: functions keep no global state besides the thread-local last error. */
#ifndef XR_FORMATS_BUNDLE_H
#define XR_FORMATS_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/file.h"
#include "formats/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* files                                                                                       */

typedef struct xr_load_options {
  /* Validate after decoding (default true via xr_bundle_load()). */
  bool validate;
  /* Check that every .npy file named by a tensor exists and agrees with it. */
  bool check_data_files;
} xr_load_options_t;

/* Detects the format of an in-memory file by content. */
xr_bundle_format_t xr_bundle_detect_format(const uint8_t *bytes, size_t size);
const char *xr_bundle_format_name(xr_bundle_format_t format);

/* Loads a file in any supported format, validating it. Errors name the file and the field:
 * "b.json: ops[12].args[3].value.shape[1]: negative dimension -4". */
xr_status_t xr_bundle_load(const char *path, xr_bundle_t **out_bundle);
xr_status_t xr_bundle_load_with(const char *path, const xr_load_options_t *options,
                                xr_bundle_t **out_bundle);
/* Decodes bytes already in memory; `name` is used in messages, base_dir for .npy paths. */
xr_status_t xr_bundle_decode(const uint8_t *bytes, size_t size, const char *name,
                             const char *base_dir, const xr_load_options_t *options,
                             xr_bundle_t **out_bundle);

/* Codecs. Decoders build an unvalidated bundle; encoders write into a malloc'd buffer that the
 * caller frees. */
xr_status_t xr_bundle_decode_json(const char *text, size_t size, const char *name,
                                  xr_bundle_t *bundle);
xr_status_t xr_bundle_decode_msgpack(const uint8_t *bytes, size_t size, const char *name,
                                     xr_bundle_t *bundle);
typedef struct xr_json_options {
  bool pretty;            /* newlines and two-space indentation */
  bool tracelens;         /* write TraceLens EventReplay IR instead of our schema */
} xr_json_options_t;
xr_status_t xr_bundle_encode_json(const xr_bundle_t *bundle, const xr_json_options_t *options,
                                  char **out_text, size_t *out_size);
xr_status_t xr_bundle_encode_msgpack(const xr_bundle_t *bundle, uint8_t **out_bytes,
                                     size_t *out_size);

/* Writes a bundle to `path`, the format given explicitly. */
xr_status_t xr_bundle_save(const xr_bundle_t *bundle, const char *path, xr_bundle_format_t format);
/* What writing `bundle` as TraceLens IR leaves out: the IR holds each op's name, arguments and
 * count, nothing else. Calls `note` once per kind the bundle has, with a phrase naming the
 * field and what it holds ("metadata.device_name: NVIDIA H100 80GB HBM3", "timing.gpu_time_us
 * of 16 ops: the GPU time the trace recorded (...)"); returns how many. None: nothing is lost. */
size_t xr_bundle_tracelens_losses(const xr_bundle_t *bundle,
                                  void (*note)(void *context, const char *phrase), void *context);

/* Format implied by a path's extension (.json, .msgpack/.mpk); UNKNOWN otherwise. */
xr_bundle_format_t xr_bundle_format_from_path(const char *path);

/* xr_read_file (base/file.h) reads the files. */

/* ------------------------------------------------------------------------------------------ */
/* validation                                                                                  */

typedef struct xr_diagnostics {
  size_t count;       /* problems found (may exceed the number kept) */
  size_t kept;
  char **messages;    /* kept messages, each "path: problem" */
} xr_diagnostics_t;

void xr_diagnostics_free(xr_diagnostics_t *diags);

/* Checks every op: dtypes, ranks, shapes (non-negative), strides (non-negative, one per dim),
 * element and byte counts without overflow, views inside their storage (storage_size or
 * embedded data), embedded data sizes, and — with check_data_files — the .npy files. Returns OK
 * or INVALID_ARGUMENT; xr_last_error() holds the first problem, `out_diags` (optional) all. */
xr_status_t xr_bundle_validate(const xr_bundle_t *bundle, bool check_data_files,
                               xr_diagnostics_t *out_diags);

/* ------------------------------------------------------------------------------------------ */
/* tensor contents                                                                             */

/* A whole .npy file: its header and data bytes (malloc'd; free with xr_npy_free). */
typedef struct xr_npy {
  char descr[16];          /* "<f4", "<u2", "|b1" ... */
  int32_t rank;
  int64_t shape[XR_MAX_RANK];
  int64_t numel;
  size_t item_size;        /* bytes per element, from descr */
  uint8_t *data;           /* numel * item_size bytes, C order */
} xr_npy_t;

xr_status_t xr_npy_load(const char *path, xr_npy_t *out_npy);
void xr_npy_free(xr_npy_t *npy);

/* The data-file reader that bundles loaded here use (xr_bundle_t.read_data_file): the tensor's
 * .npy file, relative to the bundle's base_dir unless absolute, checked against the spec. Set
 * it on a bundle built in memory whose tensors name .npy files. */
xr_status_t xr_npy_read_data_file(const xr_bundle_t *bundle, const xr_tensor_spec_t *t,
                                  uint8_t **out_bytes, size_t *out_size);

/* Moves every tensor's .npy contents into the bundle (embedded), keeping shapes, strides and
 * dtypes. Counts the tensors changed. (xr_bundle_strip_data, in formats/model.h, drops them.) */
xr_status_t xr_bundle_embed_data(xr_bundle_t *bundle, size_t *out_tensors);

/* ------------------------------------------------------------------------------------------ */
/* comparison                                                                                  */

/* Structural equality of two bundles (metadata, ops, args, values bit-exact including NaN
 * payload-insensitive float compare, tensor contents). On difference returns false and, when
 * out_where is given, writes the first differing path there. */
bool xr_bundle_equal(const xr_bundle_t *a, const xr_bundle_t *b, char *out_where,
                     size_t where_size);

#ifdef __cplusplus
}
#endif
#endif /* XR_FORMATS_BUNDLE_H */
