/* Trace extraction, shared by every stage: the string table (interned op names, kernel names,
 * argument texts, hint keys), growable arrays and sorting, the out-of-memory error and the
 * summary's distinct warnings. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/trace_extract_internal.h"

/* ------------------------------------------------------------------------------------------ */
/* string interning                                                                            */

void xr_extract_strtab_free(strtab_t *t) {
  char *c = t->chunk;
  while (c) {
    char *next;
    memcpy(&next, c, sizeof next);
    free(c);
    c = next;
  }
  free(t->strs);
  free(t->lens);
  free(t->slots);
  memset(t, 0, sizeof *t);
}

static char *strtab_store(strtab_t *t, const char *s, size_t n) {
  size_t need = n + 1;
  if (!t->chunk || t->chunk_used + need > t->chunk_cap) {
    size_t cap = sizeof(char *) + (need > (1u << 20) ? need : (1u << 20));
    char *c = malloc(cap);
    if (!c) return NULL;
    memcpy(c, &t->chunk, sizeof(char *));
    t->chunk = c;
    t->chunk_used = sizeof(char *);
    t->chunk_cap = cap;
  }
  char *d = t->chunk + t->chunk_used;
  memcpy(d, s, n);
  d[n] = '\0';
  t->chunk_used += need;
  return d;
}

static bool strtab_grow(strtab_t *t) {
  size_t cap = t->slot_cap ? t->slot_cap * 2 : 1024;
  uint32_t *slots = calloc(cap, sizeof *slots);
  if (!slots) return false;
  for (size_t i = 0; i < t->count; i++) {
    size_t j = xr_extract_hash(t->strs[i], t->lens[i], XR_EXTRACT_HASH_SEED) & (cap - 1);
    while (slots[j]) j = (j + 1) & (cap - 1);
    slots[j] = (uint32_t)i + 1;
  }
  free(t->slots);
  t->slots = slots;
  t->slot_cap = cap;
  return true;
}

int64_t xr_extract_intern(strtab_t *t, const char *s, size_t n) {
  if ((t->count + 1) * 2 > t->slot_cap && !strtab_grow(t)) return -1;
  size_t j = xr_extract_hash(s, n, XR_EXTRACT_HASH_SEED) & (t->slot_cap - 1);
  while (t->slots[j]) {
    uint32_t id = t->slots[j] - 1;
    if (t->lens[id] == n && memcmp(t->strs[id], s, n) == 0) return id;
    j = (j + 1) & (t->slot_cap - 1);
  }
  if (t->count == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    char **strs = realloc(t->strs, cap * sizeof *strs);
    if (!strs) return -1;
    t->strs = strs;
    size_t *lens = realloc(t->lens, cap * sizeof *lens);
    if (!lens) return -1;
    t->lens = lens;
    t->cap = cap;
  }
  char *d = strtab_store(t, s, n);
  if (!d) return -1;
  t->strs[t->count] = d;
  t->lens[t->count] = n;
  t->slots[j] = (uint32_t)t->count + 1;
  return (int64_t)t->count++;
}

/* ------------------------------------------------------------------------------------------ */
/* arrays, errors, warnings                                                                    */

bool xr_extract_reserve(void **v, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return true;
  size_t c = *cap ? *cap * 2 : 256;
  void *p = realloc(*v, c * elem);
  if (!p) return false;
  *v = p;
  *cap = c;
  return true;
}

void xr_extract_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  if (n > 1) qsort(base, n, size, cmp);
}

xr_status_t xr_extract_oom(const ctx_t *c) {
  return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of memory while extracting", c->name);
}

void xr_extract_warn(ctx_t *c, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  xr_extract_intern(&c->warn, msg, strlen(msg)); /* a lost warning is no reason to fail */
}
