/* .npy files (NumPy format 1.0 to 3.0, little-endian, C order) holding real tensor contents.
 * Conventions (as tests/data/golden/README.md): bf16 as 16-bit patterns ('<u2'), fp8 as bytes;
 * a contiguous tensor at offset 0 is stored in its own shape, any other view as its 1-D
 * storage of 1 + sum((size-1)*stride) elements (plus the storage offset). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/internal.h"

typedef struct npy_header {
  char descr[16];
  int fortran_order;
  int rank;
  int64_t shape[XR_MAX_RANK];
  size_t data_offset;
} npy_header_t;

/* Parses the Python-dict header: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } */
static xr_status_t parse_header(const uint8_t *b, size_t size, const char *path, npy_header_t *h) {
  if (size < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
    return xr_error(XR_DATA_LOSS, "%s: not an .npy file (no \\x93NUMPY magic)", path);
  uint8_t major = b[6];
  size_t header_len, start;
  if (major == 1) {
    header_len = (size_t)b[8] | (size_t)b[9] << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) return xr_error(XR_DATA_LOSS, "%s: truncated .npy header", path);
    header_len = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    start = 12;
  } else {
    return xr_error(XR_UNIMPLEMENTED, "%s: .npy format version %u is not supported", path, major);
  }
  if (header_len > size - start) return xr_error(XR_DATA_LOSS, "%s: truncated .npy header", path);
  char text[4096];
  size_t n = header_len < sizeof text - 1 ? header_len : sizeof text - 1;
  memcpy(text, b + start, n);
  text[n] = '\0';
  h->data_offset = start + header_len;

  const char *d = strstr(text, "'descr'");
  const char *f = strstr(text, "'fortran_order'");
  const char *s = strstr(text, "'shape'");
  if (!d || !f || !s)
    return xr_error(XR_DATA_LOSS, "%s: .npy header lacks descr, fortran_order or shape", path);
  d = strchr(d + 7, '\'');
  const char *e = d ? strchr(d + 1, '\'') : NULL;
  if (!e || (size_t)(e - d - 1) >= sizeof h->descr)
    return xr_error(XR_DATA_LOSS, "%s: malformed descr in .npy header", path);
  memcpy(h->descr, d + 1, (size_t)(e - d - 1));
  h->descr[e - d - 1] = '\0';
  f += strlen("'fortran_order'");
  while (*f == ' ' || *f == ':') f++;
  h->fortran_order = strncmp(f, "True", 4) == 0;
  s = strchr(s, '(');
  if (!s) return xr_error(XR_DATA_LOSS, "%s: malformed shape in .npy header", path);
  h->rank = 0;
  for (s++; *s && *s != ')';) {
    while (*s == ' ' || *s == ',') s++;
    if (*s == ')') break;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0 || h->rank == XR_MAX_RANK)
      return xr_error(XR_DATA_LOSS, "%s: malformed shape in .npy header", path);
    h->shape[h->rank++] = v;
    s = end;
  }
  return XR_OK;
}

/* The descr a file must have for a dtype, ignoring byte-order marks that mean little-endian. */
static bool descr_matches(const char *descr, xr_dtype_t dtype) {
  char order = descr[0];
  const char *code = descr + 1;
  if (order != '<' && order != '|' && order != '=') return false;
  switch (dtype) {
    case XR_DTYPE_F32: return strcmp(code, "f4") == 0;
    case XR_DTYPE_F64: return strcmp(code, "f8") == 0;
    case XR_DTYPE_F16: return strcmp(code, "f2") == 0;
    case XR_DTYPE_BF16: return strcmp(code, "u2") == 0 || strcmp(code, "i2") == 0;
    case XR_DTYPE_F8E4M3FN:
    case XR_DTYPE_F8E5M2:
    case XR_DTYPE_F8E4M3FNUZ:
    case XR_DTYPE_F8E5M2FNUZ:
    case XR_DTYPE_F4E2M1X2: /* two e2m1 codes a byte */
    case XR_DTYPE_F8E8M0: return strcmp(code, "u1") == 0 || strcmp(code, "i1") == 0;
    case XR_DTYPE_I8: return strcmp(code, "i1") == 0;
    case XR_DTYPE_I16: return strcmp(code, "i2") == 0;
    case XR_DTYPE_I32: return strcmp(code, "i4") == 0;
    case XR_DTYPE_I64: return strcmp(code, "i8") == 0;
    case XR_DTYPE_U8: return strcmp(code, "u1") == 0;
    case XR_DTYPE_U16: return strcmp(code, "u2") == 0;
    case XR_DTYPE_U32: return strcmp(code, "u4") == 0;
    case XR_DTYPE_U64: return strcmp(code, "u8") == 0;
    case XR_DTYPE_BOOL: return strcmp(code, "b1") == 0 || strcmp(code, "u1") == 0;
    default: return false;
  }
}

static void format_shape(char *out, size_t n, const int64_t *shape, int rank, char open,
                         char close) {
  size_t len = (size_t)snprintf(out, n, "%c", open);
  for (int i = 0; i < rank && len < n; i++)
    len += (size_t)snprintf(out + len, n - len, i ? ", %lld" : "%lld", (long long)shape[i]);
  if (len < n) snprintf(out + len, n - len, "%c", close);
}

xr_status_t xr_npy_load(const char *path, xr_npy_t *out) {
  memset(out, 0, sizeof *out);
  uint8_t *file;
  size_t size;
  xr_status_t st = xr_read_file(path, &file, &size);
  if (st != XR_OK) return st;
  npy_header_t h;
  if ((st = parse_header(file, size, path, &h)) != XR_OK) goto out;
  if (h.fortran_order) {
    st = xr_error(XR_UNIMPLEMENTED, "%s: Fortran-order .npy files are not supported", path);
    goto out;
  }
  char *end;
  long item = h.descr[0] && h.descr[1] ? strtol(h.descr + 2, &end, 10) : 0;
  if (!item) end = h.descr;
  if (item <= 0 || item > 16 || *end || (h.descr[0] == '>' && item > 1)) {
    st = xr_error(XR_UNIMPLEMENTED, "%s: .npy dtype '%s' is not supported", path, h.descr);
    goto out;
  }
  int64_t n = 1;
  for (int i = 0; i < h.rank; i++)
    if (__builtin_mul_overflow(n, h.shape[i], &n)) {
      st = xr_error(XR_DATA_LOSS, "%s: element count overflows", path);
      goto out;
    }
  size_t bytes = (size_t)n * (size_t)item;
  if (bytes / (size_t)item != (size_t)n || bytes > size - h.data_offset) {
    st = xr_error(XR_DATA_LOSS, "%s: truncated: %zu data bytes for %lld elements", path,
                  size - h.data_offset, (long long)n);
    goto out;
  }
  out->data = malloc(bytes ? bytes : 1);
  if (!out->data) {
    st = xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory", path);
    goto out;
  }
  memcpy(out->data, file + h.data_offset, bytes);
  memcpy(out->descr, h.descr, sizeof out->descr);
  out->rank = h.rank;
  memcpy(out->shape, h.shape, sizeof out->shape);
  out->numel = n;
  out->item_size = (size_t)item;
out:
  free(file);
  return st;
}

void xr_npy_free(xr_npy_t *npy) {
  if (!npy) return;
  free(npy->data);
  memset(npy, 0, sizeof *npy);
}

xr_status_t xr_npy_read_for_tensor(const char *path, const xr_tensor_spec_t *t,
                                   uint8_t **out_bytes, size_t *out_size) {
  uint8_t *file;
  size_t size;
  xr_status_t st = xr_read_file(path, &file, &size);
  if (st != XR_OK) return st;
  npy_header_t h;
  int64_t extent, file_elems = 1;
  size_t need;
  if ((st = parse_header(file, size, path, &h)) != XR_OK) goto out;
  if (h.fortran_order) {
    st = xr_error(XR_UNIMPLEMENTED, "%s: Fortran-order .npy files are not supported", path);
    goto out;
  }
  if (!descr_matches(h.descr, t->dtype)) {
    st = xr_error(XR_INVALID_ARGUMENT, "%s: dtype '%s' does not match the tensor's %s", path,
                  h.descr, xr_dtype_name(t->dtype));
    goto out;
  }
  if ((st = xr_tensor_storage_extent(t, &extent)) != XR_OK ||
      (st = xr_tensor_storage_bytes(t, &need)) != XR_OK)
    goto out;
  for (int i = 0; i < h.rank; i++)
    if (__builtin_mul_overflow(file_elems, h.shape[i], &file_elems)) {
      st = xr_error(XR_DATA_LOSS, "%s: element count overflows", path);
      goto out;
    }
  /* Same logical shape (contiguous, offset 0), or a 1-D storage holding the view. */
  bool same_shape = h.rank == t->rank && t->storage_offset == 0 && xr_tensor_is_contiguous(t);
  for (int i = 0; same_shape && i < h.rank; i++) same_shape = h.shape[i] == t->shape[i];
  bool storage_form = h.rank == 1 && (file_elems == extent ||
                                      (t->storage_size >= extent && file_elems == t->storage_size));
  if (!same_shape && !storage_form) {
    char fs[160], ts[160];
    format_shape(fs, sizeof fs, h.shape, h.rank, '(', ')');
    format_shape(ts, sizeof ts, t->shape, t->rank, '[', ']');
    st = xr_error(XR_INVALID_ARGUMENT,
                  "%s: shape %s does not match the tensor's shape %s (or its 1-D storage of %lld "
                  "elements)",
                  path, fs, ts, (long long)extent);
    goto out;
  }
  size_t have = size - h.data_offset;
  if ((uint64_t)file_elems * xr_dtype_size(t->dtype) > have) {
    st = xr_error(XR_DATA_LOSS, "%s: truncated: %zu data bytes for %lld elements", path, have,
                  (long long)file_elems);
    goto out;
  }
  uint8_t *bytes = malloc(need ? need : 1);
  if (!bytes) {
    st = xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory for %zu bytes", path, need);
    goto out;
  }
  memcpy(bytes, file + h.data_offset, need);
  *out_bytes = bytes;
  *out_size = need;
out:
  free(file);
  return st;
}
