/* A small pull-style JSON tokenizer over a sliding buffer, for profiler traces of hundreds of MB.
 *
 * The reader never holds the document: it reads fixed-size chunks through zlib (gzread reads
 * plain files transparently), hands out one token at a time and keeps only the current token's
 * text. Skipped values are scanned without being copied. Structure is checked as it goes
 * (nesting, commas, colons), so a truncated or malformed file is an error naming the file and
 * the byte offset, never a crash.
 *
 * Not part of the public API; used by trace extraction (trace_read.c, trace_args.c) and its
 * tests. */
#ifndef XR_FORMATS_TRACE_JSON_H
#define XR_FORMATS_TRACE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Deepest nesting accepted; traces nest 5 deep, so anything deeper is not a trace. */
#define XR_JSON_MAX_DEPTH 64

typedef enum xr_jtok {
  XR_JTOK_EOF = 0,  /* after the top-level value */
  XR_JTOK_OBJECT_BEGIN,
  XR_JTOK_OBJECT_END,
  XR_JTOK_ARRAY_BEGIN,
  XR_JTOK_ARRAY_END,
  XR_JTOK_KEY,      /* text: the decoded key */
  XR_JTOK_STRING,   /* text: the decoded string (UTF-8) */
  XR_JTOK_NUMBER,   /* text: the number as written (also NaN, Infinity, -Infinity) */
  XR_JTOK_TRUE,
  XR_JTOK_FALSE,
  XR_JTOK_NULL,
} xr_jtok_t;

typedef struct xr_jreader xr_jreader_t;

/* A growable byte string (NUL-terminated when non-empty). */
typedef struct xr_jbuf {
  char *data;
  size_t len, cap;
} xr_jbuf_t;

bool xr_jbuf_append(xr_jbuf_t *b, const char *s, size_t n);
static inline void xr_jbuf_clear(xr_jbuf_t *b) {
  b->len = 0;
  if (b->data) b->data[0] = '\0';
}
void xr_jbuf_free(xr_jbuf_t *b);

/* Opens a file, gzip or plain. `name` in messages is the path. */
xr_status_t xr_jreader_open_path(const char *path, xr_jreader_t **out_reader);
/* Reads from memory the caller keeps alive (no copy). */
xr_status_t xr_jreader_open_memory(const char *data, size_t size, const char *name,
                                   xr_jreader_t **out_reader);
void xr_jreader_close(xr_jreader_t *r);

/* The next token. Errors (DATA_LOSS for truncation, INVALID_ARGUMENT for bad JSON) name the file
 * and byte offset; after an error every call returns the same status. */
xr_status_t xr_jreader_next(xr_jreader_t *r, xr_jtok_t *out_tok);
/* Text of the last KEY, STRING or NUMBER token, NUL-terminated, valid until the next call. */
const char *xr_jreader_text(const xr_jreader_t *r, size_t *out_len);
/* Skips the value that comes next (scalar, or a whole object/array) without copying it. */
xr_status_t xr_jreader_skip(xr_jreader_t *r);
/* Skips the rest of the object or array whose BEGIN token was the last one read. */
xr_status_t xr_jreader_skip_rest(xr_jreader_t *r);
/* Reads the next value and appends it to `out` as compact JSON. */
xr_status_t xr_jreader_capture(xr_jreader_t *r, xr_jbuf_t *out);

/* Uncompressed bytes consumed so far. */
uint64_t xr_jreader_offset(const xr_jreader_t *r);
const char *xr_jreader_name(const xr_jreader_t *r);

/* Records an error "NAME: byte N: <message>" for this reader and returns `status`. */
xr_status_t xr_jreader_fail(xr_jreader_t *r, xr_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif
#endif /* XR_FORMATS_TRACE_JSON_H */
