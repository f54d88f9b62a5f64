/* Helpers shared by the codecs in formats/; not part of the public API. */
#ifndef XR_FORMATS_INTERNAL_H
#define XR_FORMATS_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>

#include "formats/bundle.h"

/* Deepest nesting of lists inside a value; deeper input is rejected, not recursed into. */
#define XR_MAX_VALUE_DEPTH 16

/* The location being decoded, e.g. "ops[12].args[3].value.shape[1]", kept as a growing string
 * so that an error can name it. push returns the length to pop back to. */
typedef struct xr_path {
  char buf[512];
  size_t len;
} xr_path_t;

size_t xr_path_push(xr_path_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void xr_path_pop(xr_path_t *p, size_t len) {
  p->len = len;
  p->buf[len] = '\0';
}

/* The metadata's named string fields, as files spell them (NULL-terminated), and the field of
 * `m` each one is stored in: the single place that maps one onto the other for every codec. */
extern const char *const xr_metadata_fields[];
char **xr_metadata_slot(xr_bundle_metadata_t *m, size_t i);
const char *xr_metadata_value(const xr_bundle_metadata_t *m, size_t i);

/* A growable byte buffer for encoders. Functions return false once allocation failed; the
 * buffer then stays failed and the encoder reports RESOURCE_EXHAUSTED at the end. */
typedef struct xr_buf {
  char *data;
  size_t len, cap;
  int failed;
} xr_buf_t;

int xr_buf_reserve(xr_buf_t *b, size_t extra);
int xr_buf_append(xr_buf_t *b, const void *data, size_t n);
int xr_buf_puts(xr_buf_t *b, const char *s);
int xr_buf_printf(xr_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Base64 (RFC 4648) used by the JSON codec for embedded tensor contents. decode returns false
 * on malformed input. */
int xr_base64_encode(xr_buf_t *out, const uint8_t *data, size_t n);
int xr_base64_decode(const char *text, size_t len, uint8_t *out, size_t *out_len);
size_t xr_base64_decoded_max(size_t len);

/* A profiler trace given where a bundle was expected (formats/load.c): INVALID_ARGUMENT with
 * "NAME: a profiler trace (...), not a bundle: make a bundle of it with `replay extract NAME -o
 * BUNDLE.msgpack`"; not `certain` (a gzip file), the hint is conditional. */
xr_status_t xr_trace_not_bundle(const char *name, bool certain);

/* Checks that a tensor's real contents are the right size for its spec; on mismatch sets the
 * last error (relative to the tensor) and returns INVALID_ARGUMENT. */
xr_status_t xr_tensor_check_data_size(const xr_tensor_spec_t *t, size_t data_size);

/* Reads an .npy file and checks it against the tensor spec (dtype and itemsize; shape equal
 * to the logical shape when the tensor is contiguous with offset 0, otherwise 1-D holding the
 * storage extent). Returns the storage bytes. */
xr_status_t xr_npy_read_for_tensor(const char *path, const xr_tensor_spec_t *t,
                                   uint8_t **out_bytes, size_t *out_size);

#endif
