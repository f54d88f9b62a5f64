/* Small shared pieces of the codecs: decode paths, a byte buffer, base64. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/internal.h"

const char *const xr_metadata_fields[] = {"tool_version", "source_trace",    "device_name",
                                          "vendor",       "runtime_version", "capture_date",
                                          NULL};

char **xr_metadata_slot(xr_bundle_metadata_t *m, size_t i) {
  char **const slots[] = {&m->tool_version, &m->source_trace,    &m->device_name,
                          &m->vendor,       &m->runtime_version, &m->capture_date};
  return slots[i];
}

const char *xr_metadata_value(const xr_bundle_metadata_t *m, size_t i) {
  return *xr_metadata_slot((xr_bundle_metadata_t *)m, i); /* only read */
}

size_t xr_path_push(xr_path_t *p, const char *fmt, ...) {
  size_t old = p->len;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(p->buf + p->len, sizeof p->buf - p->len, fmt, ap);
  va_end(ap);
  if (n > 0) p->len += (size_t)n < sizeof p->buf - p->len ? (size_t)n : sizeof p->buf - 1 - p->len;
  return old;
}

int xr_buf_reserve(xr_buf_t *b, size_t extra) {
  if (b->failed) return 0;
  if (b->cap - b->len > extra) return 1;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap - b->len <= extra) {
    if (cap > SIZE_MAX / 2) {
      b->failed = 1;
      return 0;
    }
    cap *= 2;
  }
  char *d = realloc(b->data, cap);
  if (!d) {
    b->failed = 1;
    return 0;
  }
  b->data = d;
  b->cap = cap;
  return 1;
}

int xr_buf_append(xr_buf_t *b, const void *data, size_t n) {
  if (!xr_buf_reserve(b, n)) return 0;
  memcpy(b->data + b->len, data, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 1;
}

int xr_buf_puts(xr_buf_t *b, const char *s) { return xr_buf_append(b, s, strlen(s)); }

int xr_buf_printf(xr_buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return 0;
  if ((size_t)n < sizeof small) return xr_buf_append(b, small, (size_t)n);
  if (!xr_buf_reserve(b, (size_t)n + 1)) return 0;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return 1;
}

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int xr_base64_encode(xr_buf_t *out, const uint8_t *data, size_t n) {
  if (!xr_buf_reserve(out, (n + 2) / 3 * 4 + 1)) return 0;
  char *o = out->data + out->len;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)data[i] << 16 | (uint32_t)data[i + 1] << 8 | data[i + 2];
    *o++ = b64_alphabet[v >> 18];
    *o++ = b64_alphabet[(v >> 12) & 63];
    *o++ = b64_alphabet[(v >> 6) & 63];
    *o++ = b64_alphabet[v & 63];
  }
  if (i < n) {
    uint32_t v = (uint32_t)data[i] << 16 | (i + 1 < n ? (uint32_t)data[i + 1] << 8 : 0);
    *o++ = b64_alphabet[v >> 18];
    *o++ = b64_alphabet[(v >> 12) & 63];
    *o++ = i + 1 < n ? b64_alphabet[(v >> 6) & 63] : '=';
    *o++ = '=';
  }
  out->len = (size_t)(o - out->data);
  out->data[out->len] = '\0';
  return 1;
}

size_t xr_base64_decoded_max(size_t len) { return len / 4 * 3 + 3; }

static int b64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

int xr_base64_decode(const char *text, size_t len, uint8_t *out, size_t *out_len) {
  if (len % 4) return 0;
  size_t o = 0;
  for (size_t i = 0; i < len; i += 4) {
    int v[4], pad = 0;
    for (int k = 0; k < 4; k++) {
      if (text[i + k] == '=' && i + 4 == len && k >= 2) {
        v[k] = 0;
        pad++;
      } else if (pad || (v[k] = b64_value(text[i + k])) < 0) {
        return 0;
      }
    }
    uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
    out[o++] = (uint8_t)(w >> 16);
    if (pad < 2) out[o++] = (uint8_t)(w >> 8);
    if (pad < 1) out[o++] = (uint8_t)w;
  }
  *out_len = o;
  return 1;
}
