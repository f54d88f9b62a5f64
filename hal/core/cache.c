#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, mkstemp; Bazel's toolchain may already define it */
#endif
#include "hal/core/cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* File layout: magic, payload size, payload checksum, payload. The checksum catches truncated
 * or corrupt entries (a crash mid-write on a filesystem without atomic rename, a full disk). */
static const char magic[8] = {'X', 'R', 'C', 'A', 'C', 'H', 'E', '1'};

static uint64_t fnv1a(uint64_t hash, const void *data, size_t size) {
  const unsigned char *bytes = data;
  for (size_t i = 0; i < size; i++) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

xr_cache_key_t xr_cache_key(const void *const *parts, const size_t *sizes, size_t count) {
  /* Two FNV-1a streams with different seeds: 128 bits make accidental collisions negligible
   * for a cache (this is not a defence against crafted inputs). */
  xr_cache_key_t key = {{0xcbf29ce484222325ull, 0x84222325cbf29ce4ull}};
  for (size_t i = 0; i < count; i++) {
    uint64_t length = sizes[i];
    for (int w = 0; w < 2; w++) {
      key.words[w] = fnv1a(key.words[w], &length, sizeof length);
      key.words[w] = fnv1a(key.words[w], parts[i], sizes[i]);
    }
    key.words[1] = fnv1a(key.words[1], "|", 1);
  }
  return key;
}

/* mkdir -p; true when the directory exists afterwards. */
static bool make_directories(char *path) {
  for (char *slash = path + 1; *slash; slash++) {
    if (*slash != '/') continue;
    *slash = '\0';
    bool ok = mkdir(path, 0755) == 0 || errno == EEXIST;
    *slash = '/';
    if (!ok) return false;
  }
  return mkdir(path, 0755) == 0 || errno == EEXIST;
}

bool xr_cache_directory(char *out_path, size_t capacity) {
  const char *override = getenv("XR_HAL_CACHE_DIR");
  int written;
  if (override && override[0]) {
    if (strcmp(override, "off") == 0) return false;
    written = snprintf(out_path, capacity, "%s", override);
  } else {
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (xdg && xdg[0] == '/') {
      written = snprintf(out_path, capacity, "%s/xreplay", xdg);
    } else if (home && home[0] == '/') {
      written = snprintf(out_path, capacity, "%s/.cache/xreplay", home);
    } else {
      return false;
    }
  }
  if (written <= 0 || (size_t)written >= capacity) return false;
  return make_directories(out_path);
}

static bool entry_path(const char *kind, xr_cache_key_t key, char *out_path, size_t capacity) {
  char directory[4096];
  if (!xr_cache_directory(directory, sizeof directory)) return false;
  int written = snprintf(out_path, capacity, "%s/%s-%016llx%016llx.bin", directory, kind,
                         (unsigned long long)key.words[0], (unsigned long long)key.words[1]);
  return written > 0 && (size_t)written < capacity;
}

void *xr_cache_load(const char *kind, xr_cache_key_t key, size_t *out_size) {
  char path[4352];
  if (!entry_path(kind, key, path, sizeof path)) return NULL;
  FILE *file = fopen(path, "rb");
  if (!file) return NULL;
  char header_magic[8];
  uint64_t size = 0, checksum = 0;
  void *data = NULL;
  if (fread(header_magic, 1, 8, file) != 8 || memcmp(header_magic, magic, 8) != 0) goto miss;
  if (fread(&size, sizeof size, 1, file) != 1 || fread(&checksum, sizeof checksum, 1, file) != 1) {
    goto miss;
  }
  if (size == 0 || size > (1ull << 30)) goto miss; /* no program binary is a gigabyte */
  data = malloc((size_t)size);
  if (!data || fread(data, 1, (size_t)size, file) != size) goto miss;
  if (fnv1a(0xcbf29ce484222325ull, data, (size_t)size) != checksum) goto miss;
  fclose(file);
  *out_size = (size_t)size;
  return data;
miss:
  free(data);
  fclose(file);
  return NULL;
}

void xr_cache_store(const char *kind, xr_cache_key_t key, const void *data, size_t size) {
  char path[4352], temporary[4400];
  if (!data || size == 0 || !entry_path(kind, key, path, sizeof path)) return;
  snprintf(temporary, sizeof temporary, "%s.XXXXXX", path);
  int fd = mkstemp(temporary);
  if (fd < 0) return;
  FILE *file = fdopen(fd, "wb");
  if (!file) {
    close(fd);
    unlink(temporary);
    return;
  }
  uint64_t size64 = size, checksum = fnv1a(0xcbf29ce484222325ull, data, size);
  bool ok = fwrite(magic, 1, 8, file) == 8 && fwrite(&size64, sizeof size64, 1, file) == 1 &&
            fwrite(&checksum, sizeof checksum, 1, file) == 1 &&
            fwrite(data, 1, size, file) == size;
  ok = (fclose(file) == 0) && ok;
  if (!ok || rename(temporary, path) != 0) unlink(temporary);
}
