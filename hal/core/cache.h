/* On-disk cache of compiled device programs, shared by the drivers that build at run time
 * (OpenCL programs; NVRTC and hiprtc output). Entries are keyed by a 128-bit hash of everything
 * that changes the binary (source, options, device name, driver version) and live in
 * $XR_HAL_CACHE_DIR, else $XDG_CACHE_HOME/xreplay, else ~/.cache/xreplay. Every failure here
 * (no home, read-only disk, a corrupt or truncated entry) only means a cache miss: nothing is
 * ever reported to the caller as an error. */
#ifndef XR_HAL_CORE_CACHE_H
#define XR_HAL_CORE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct xr_cache_key {
  uint64_t words[2];
} xr_cache_key_t;

/* Hash of `count` byte strings; each part's length is mixed in, so ("ab","c") != ("a","bc"). */
xr_cache_key_t xr_cache_key(const void *const *parts, const size_t *sizes, size_t count);

/* The cache directory (created if needed) or false when caching is off or impossible. */
bool xr_cache_directory(char *out_path, size_t capacity);

/* A malloc'd copy of the entry `<kind>-<key>.bin`, or NULL on a miss. The caller frees it. */
void *xr_cache_load(const char *kind, xr_cache_key_t key, size_t *out_size);

/* Stores an entry atomically (temporary file + rename), so readers never see half of it. */
void xr_cache_store(const char *kind, xr_cache_key_t key, const void *data, size_t size);

#endif
