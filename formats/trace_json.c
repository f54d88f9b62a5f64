/* Pull JSON tokenizer over a sliding buffer: see trace_json.h. */
#include "formats/trace_json.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* 1 MiB chunks: large enough that gzread's per-call overhead vanishes, small next to a trace. */
#define CHUNK_SIZE (1u << 20)
/* One token (a string) may not exceed this; kernel names are a few KB at most. */
#define MAX_TOKEN (64u << 20)

typedef enum state {
  S_VALUE,         /* a value must come (start, after ':' or after ',' in an array) */
  S_VALUE_OR_END,  /* after '[' */
  S_KEY_OR_END,    /* after '{' */
  S_KEY,           /* after ',' in an object */
  S_AFTER,         /* after a value: ',' or a closing bracket, or the end at depth 0 */
} state_t;

struct xr_jreader {
  char *name;
  gzFile gz;          /* NULL when reading memory */
  char *own;          /* the chunk buffer when reading a file */
  const char *buf;    /* current window */
  size_t pos, end;
  uint64_t base;      /* uncompressed offset of buf[0] */
  bool eof;
  char stack[XR_JSON_MAX_DEPTH];
  int depth;
  state_t state;
  bool skipping;      /* strings are scanned, not copied */
  xr_jbuf_t text;
  xr_status_t failed;
};

bool xr_jbuf_append(xr_jbuf_t *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + n + 1) cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) return false;
    b->data = d;
    b->cap = cap;
  }
  if (n) memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
  return true;
}

void xr_jbuf_free(xr_jbuf_t *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

xr_status_t xr_jreader_fail(xr_jreader_t *r, xr_status_t status, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  r->failed = status;
  return xr_error(status, "%s: byte %llu: %s", r->name,
                  (unsigned long long)(r->base + r->pos), msg);
}

static xr_status_t create(const char *name, xr_jreader_t **out) {
  xr_jreader_t *r = calloc(1, sizeof *r);
  if (!r) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory", name);
  r->name = strdup(name);
  if (!r->name) {
    free(r);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory", name);
  }
  r->state = S_VALUE;
  *out = r;
  return XR_OK;
}

xr_status_t xr_jreader_open_path(const char *path, xr_jreader_t **out_reader) {
  *out_reader = NULL;
  FILE *probe = fopen(path, "rb");
  if (!probe) return xr_error(XR_NOT_FOUND, "%s: cannot open: %s", path, strerror(errno));
  fclose(probe);
  xr_jreader_t *r;
  xr_status_t st = create(path, &r);
  if (st != XR_OK) return st;
  r->own = malloc(CHUNK_SIZE);
  r->gz = gzopen(path, "rb");
  if (!r->own || !r->gz) {
    xr_jreader_close(r);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: cannot open for reading", path);
  }
  gzbuffer(r->gz, 256 * 1024);
  r->buf = r->own;
  *out_reader = r;
  return XR_OK;
}

xr_status_t xr_jreader_open_memory(const char *data, size_t size, const char *name,
                                   xr_jreader_t **out_reader) {
  *out_reader = NULL;
  xr_jreader_t *r;
  xr_status_t st = create(name, &r);
  if (st != XR_OK) return st;
  r->buf = data;
  r->end = size;
  r->eof = true;
  *out_reader = r;
  return XR_OK;
}

void xr_jreader_close(xr_jreader_t *r) {
  if (!r) return;
  if (r->gz) gzclose(r->gz);
  free(r->own);
  free(r->name);
  xr_jbuf_free(&r->text);
  free(r);
}

uint64_t xr_jreader_offset(const xr_jreader_t *r) { return r->base + r->pos; }
const char *xr_jreader_name(const xr_jreader_t *r) { return r->name; }

const char *xr_jreader_text(const xr_jreader_t *r, size_t *out_len) {
  if (out_len) *out_len = r->text.len;
  return r->text.data ? r->text.data : "";
}

/* Refills the window once it is used up; false at the end of input (or on a read error, which
 * is then recorded in r->failed). */
static bool refill(xr_jreader_t *r) {
  if (r->pos < r->end) return true;
  if (r->eof || r->failed) return false;
  r->base += r->end;
  r->pos = r->end = 0;
  int n = gzread(r->gz, r->own, CHUNK_SIZE);
  if (n > 0) {
    r->end = (size_t)n;
    return true;
  }
  r->eof = true;
  int errnum = Z_OK;
  const char *msg = gzerror(r->gz, &errnum);
  if (n < 0 || errnum != Z_OK)
    xr_jreader_fail(r, XR_DATA_LOSS, "corrupt or truncated gzip data (%s)",
                    msg && *msg ? msg : "read error");
  return false;
}

static inline int peekc(xr_jreader_t *r) {
  if (r->pos < r->end || refill(r)) return (unsigned char)r->buf[r->pos];
  return -1;
}

static inline void skip_ws(xr_jreader_t *r) {
  for (;;) {
    while (r->pos < r->end) {
      char c = r->buf[r->pos];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
      r->pos++;
    }
    if (!refill(r)) return;
  }
}

static xr_status_t oom(xr_jreader_t *r) {
  return xr_jreader_fail(r, XR_RESOURCE_EXHAUSTED, "out of memory for a token");
}

static xr_status_t append_text(xr_jreader_t *r, const char *s, size_t n) {
  if (r->skipping) return XR_OK;
  if (r->text.len + n > MAX_TOKEN)
    return xr_jreader_fail(r, XR_OUT_OF_RANGE, "a string longer than %u bytes", MAX_TOKEN);
  return xr_jbuf_append(&r->text, s, n) ? XR_OK : oom(r);
}

static xr_status_t end_of_input(xr_jreader_t *r, const char *what) {
  if (r->failed) return r->failed;
  return xr_jreader_fail(r, XR_DATA_LOSS, "unexpected end of input %s (file truncated?)", what);
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static xr_status_t read_hex4(xr_jreader_t *r, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int c = peekc(r);
    if (c < 0) return end_of_input(r, "in a \\u escape");
    int h = hexval(c);
    if (h < 0) return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "bad \\u escape");
    v = v * 16 + (unsigned)h;
    r->pos++;
  }
  *out = v;
  return XR_OK;
}

/* The opening quote has been consumed. */
static xr_status_t read_string(xr_jreader_t *r) {
  xr_jbuf_clear(&r->text);
  for (;;) {
    const char *p = r->buf + r->pos, *e = r->buf + r->end, *q = p;
    while (q < e && *q != '"' && *q != '\\') q++;
    xr_status_t st = append_text(r, p, (size_t)(q - p));
    if (st != XR_OK) return st;
    r->pos = (size_t)(q - r->buf);
    if (q == e) {
      if (!refill(r)) return end_of_input(r, "inside a string");
      continue;
    }
    r->pos++;
    if (*q == '"') return XR_OK;
    int c = peekc(r);
    if (c < 0) return end_of_input(r, "inside a string");
    r->pos++;
    char ch;
    switch (c) {
      case '"': ch = '"'; break;
      case '\\': ch = '\\'; break;
      case '/': ch = '/'; break;
      case 'b': ch = '\b'; break;
      case 'f': ch = '\f'; break;
      case 'n': ch = '\n'; break;
      case 'r': ch = '\r'; break;
      case 't': ch = '\t'; break;
      case 'u': {
        unsigned cp;
        if ((st = read_hex4(r, &cp)) != XR_OK) return st;
        if (cp >= 0xD800 && cp < 0xDC00) { /* a surrogate pair, if the low half follows */
          if (peekc(r) == '\\') {
            r->pos++;
            if (peekc(r) != 'u')
              return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "lone surrogate in a string");
            r->pos++;
            unsigned lo;
            if ((st = read_hex4(r, &lo)) != XR_OK) return st;
            if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
        }
        char u[4];
        size_t n;
        if (cp < 0x80) {
          u[0] = (char)cp, n = 1;
        } else if (cp < 0x800) {
          u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
        } else if (cp < 0x10000) {
          u[0] = (char)(0xE0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
          u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
        } else {
          u[0] = (char)(0xF0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
          u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
        }
        if ((st = append_text(r, u, n)) != XR_OK) return st;
        continue;
      }
      default:
        return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "bad escape '\\%c' in a string", c);
    }
    if ((st = append_text(r, &ch, 1)) != XR_OK) return st;
  }
}

static xr_status_t read_number(xr_jreader_t *r) {
  xr_jbuf_clear(&r->text);
  for (;;) {
    int c = peekc(r);
    if (c < 0) break;
    if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' ||
          c == 'I' || c == 'n' || c == 'f' || c == 'i' || c == 't' || c == 'y'))
      break;
    if (r->text.len > 64) return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "malformed number");
    char ch = (char)c;
    if (!xr_jbuf_append(&r->text, &ch, 1)) return oom(r);
    r->pos++;
  }
  const char *t = r->text.data ? r->text.data : "";
  if (strcmp(t, "-Infinity") != 0) {
    char *end;
    strtod(t, &end);
    if (r->text.len == 0 || *end != '\0' || strchr(t, 'n') || strchr(t, 'f') || strchr(t, 'I'))
      return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "malformed number '%s'", t);
  }
  return XR_OK;
}

/* true/false/null and the non-standard NaN/Infinity that Python's json module writes. */
static xr_status_t read_word(xr_jreader_t *r, xr_jtok_t *out) {
  char w[12];
  size_t n = 0;
  for (;;) {
    int c = peekc(r);
    if (c < 0 || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) break;
    if (n + 1 >= sizeof w) return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "unexpected word");
    w[n++] = (char)c;
    r->pos++;
  }
  w[n] = '\0';
  if (strcmp(w, "true") == 0) *out = XR_JTOK_TRUE;
  else if (strcmp(w, "false") == 0) *out = XR_JTOK_FALSE;
  else if (strcmp(w, "null") == 0) *out = XR_JTOK_NULL;
  else if (strcmp(w, "NaN") == 0 || strcmp(w, "Infinity") == 0) {
    xr_jbuf_clear(&r->text);
    if (!xr_jbuf_append(&r->text, w, n)) return oom(r);
    *out = XR_JTOK_NUMBER;
  } else if (n == 0) {
    int c = peekc(r);
    if (c < 0) return end_of_input(r, "where a value was expected");
    return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "unexpected character '%c'", c);
  } else {
    return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "unexpected word '%s'", w);
  }
  return XR_OK;
}

static xr_status_t push(xr_jreader_t *r, char kind) {
  if (r->depth >= XR_JSON_MAX_DEPTH)
    return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "nesting deeper than %d", XR_JSON_MAX_DEPTH);
  r->stack[r->depth++] = kind;
  return XR_OK;
}

static xr_status_t read_value(xr_jreader_t *r, int c, xr_jtok_t *out) {
  xr_status_t st;
  switch (c) {
    case '{':
      r->pos++;
      if ((st = push(r, 'o')) != XR_OK) return st;
      r->state = S_KEY_OR_END;
      *out = XR_JTOK_OBJECT_BEGIN;
      return XR_OK;
    case '[':
      r->pos++;
      if ((st = push(r, 'a')) != XR_OK) return st;
      r->state = S_VALUE_OR_END;
      *out = XR_JTOK_ARRAY_BEGIN;
      return XR_OK;
    case '"':
      r->pos++;
      if ((st = read_string(r)) != XR_OK) return st;
      *out = XR_JTOK_STRING;
      break;
    default:
      if (c == '-' || (c >= '0' && c <= '9')) {
        if ((st = read_number(r)) != XR_OK) return st;
        *out = XR_JTOK_NUMBER;
      } else if ((st = read_word(r, out)) != XR_OK) {
        return st;
      }
  }
  r->state = S_AFTER;
  return XR_OK;
}

static xr_status_t close_bracket(xr_jreader_t *r, int c, xr_jtok_t *out) {
  char want = c == '}' ? 'o' : 'a';
  if (r->depth == 0 || r->stack[r->depth - 1] != want)
    return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "unbalanced '%c'", c);
  r->pos++;
  r->depth--;
  r->state = S_AFTER;
  *out = c == '}' ? XR_JTOK_OBJECT_END : XR_JTOK_ARRAY_END;
  return XR_OK;
}

static xr_status_t read_key(xr_jreader_t *r, int c, xr_jtok_t *out) {
  if (c != '"') {
    if (c < 0) return end_of_input(r, "where a key was expected");
    return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "expected a quoted key, found '%c'", c);
  }
  r->pos++;
  bool was = r->skipping;
  r->skipping = false; /* keys are short; callers need them even while skipping */
  xr_status_t st = read_string(r);
  r->skipping = was;
  if (st != XR_OK) return st;
  skip_ws(r);
  int colon = peekc(r);
  if (colon != ':') {
    if (colon < 0) return end_of_input(r, "after a key");
    return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "expected ':' after key \"%s\"", r->text.data);
  }
  r->pos++;
  r->state = S_VALUE;
  *out = XR_JTOK_KEY;
  return XR_OK;
}

xr_status_t xr_jreader_next(xr_jreader_t *r, xr_jtok_t *out_tok) {
  if (r->failed) return r->failed;
  skip_ws(r);
  if (r->failed) return r->failed;
  int c = peekc(r);
  switch (r->state) {
    case S_AFTER:
      if (r->depth == 0) {
        if (c < 0) {
          *out_tok = XR_JTOK_EOF;
          return XR_OK;
        }
        return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "data after the end of the document");
      }
      if (c == '}' || c == ']') return close_bracket(r, c, out_tok);
      if (c != ',') {
        if (c < 0) return end_of_input(r, "inside an object or array");
        return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "expected ',' or '%c', found '%c'",
                               r->stack[r->depth - 1] == 'o' ? '}' : ']', c);
      }
      r->pos++;
      skip_ws(r);
      c = peekc(r);
      if (r->stack[r->depth - 1] == 'o') return read_key(r, c, out_tok);
      if (c < 0) return end_of_input(r, "where a value was expected");
      return read_value(r, c, out_tok);
    case S_KEY_OR_END:
      if (c == '}') return close_bracket(r, c, out_tok);
      return read_key(r, c, out_tok);
    case S_KEY:
      return read_key(r, c, out_tok);
    case S_VALUE_OR_END:
      if (c == ']') return close_bracket(r, c, out_tok);
      /* fall through */
    case S_VALUE:
      if (c < 0) {
        if (r->depth == 0 && r->base + r->pos == 0)
          return xr_jreader_fail(r, XR_INVALID_ARGUMENT, "empty file");
        return end_of_input(r, "where a value was expected");
      }
      return read_value(r, c, out_tok);
  }
  return xr_jreader_fail(r, XR_INTERNAL, "bad tokenizer state");
}

xr_status_t xr_jreader_skip_rest(xr_jreader_t *r) {
  int stop = r->depth - 1;
  bool was = r->skipping;
  r->skipping = true;
  xr_status_t st = XR_OK;
  while (r->depth > stop) {
    xr_jtok_t t;
    if ((st = xr_jreader_next(r, &t)) != XR_OK) break;
    if (t == XR_JTOK_EOF) {
      st = end_of_input(r, "while skipping");
      break;
    }
  }
  r->skipping = was;
  return st;
}

xr_status_t xr_jreader_skip(xr_jreader_t *r) {
  bool was = r->skipping;
  r->skipping = true;
  xr_jtok_t t;
  xr_status_t st = xr_jreader_next(r, &t);
  if (st == XR_OK && (t == XR_JTOK_OBJECT_BEGIN || t == XR_JTOK_ARRAY_BEGIN))
    st = xr_jreader_skip_rest(r);
  r->skipping = was;
  return st;
}

static bool put_json_string(xr_jbuf_t *out, const char *s, size_t n) {
  if (!xr_jbuf_append(out, "\"", 1)) return false;
  size_t start = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\' || c < 0x20) {
      char esc[8];
      if (c == '"' || c == '\\') snprintf(esc, sizeof esc, "\\%c", c);
      else snprintf(esc, sizeof esc, "\\u%04x", c);
      if (!xr_jbuf_append(out, s + start, i - start) || !xr_jbuf_append(out, esc, strlen(esc)))
        return false;
      start = i + 1;
    }
  }
  return xr_jbuf_append(out, s + start, n - start) && xr_jbuf_append(out, "\"", 1);
}

xr_status_t xr_jreader_capture(xr_jreader_t *r, xr_jbuf_t *out) {
  int stop = r->depth;
  bool need_comma = false;
  do {
    xr_jtok_t t;
    xr_status_t st = xr_jreader_next(r, &t);
    if (st != XR_OK) return st;
    bool ok = true;
    const char *lit = NULL;
    bool is_value = t != XR_JTOK_OBJECT_END && t != XR_JTOK_ARRAY_END;
    if (is_value && need_comma) ok = xr_jbuf_append(out, ",", 1);
    switch (t) {
      case XR_JTOK_EOF: return end_of_input(r, "in a value");
      case XR_JTOK_OBJECT_BEGIN: lit = "{"; break;
      case XR_JTOK_ARRAY_BEGIN: lit = "["; break;
      case XR_JTOK_OBJECT_END: lit = "}"; break;
      case XR_JTOK_ARRAY_END: lit = "]"; break;
      case XR_JTOK_TRUE: lit = "true"; break;
      case XR_JTOK_FALSE: lit = "false"; break;
      case XR_JTOK_NULL: lit = "null"; break;
      case XR_JTOK_NUMBER: ok = ok && xr_jbuf_append(out, r->text.data, r->text.len); break;
      case XR_JTOK_STRING: ok = ok && put_json_string(out, r->text.data ? r->text.data : "",
                                                     r->text.len); break;
      case XR_JTOK_KEY:
        ok = ok && put_json_string(out, r->text.data, r->text.len) && xr_jbuf_append(out, ":", 1);
        break;
    }
    if (lit) ok = ok && xr_jbuf_append(out, lit, strlen(lit));
    if (!ok) return oom(r);
    need_comma = t != XR_JTOK_OBJECT_BEGIN && t != XR_JTOK_ARRAY_BEGIN && t != XR_JTOK_KEY;
  } while (r->depth > stop);
  return XR_OK;
}
