/* Reading a whole file: what the bundle codecs, .npy files and replay reports all need. */
#ifndef XR_BASE_FILE_H
#define XR_BASE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads a whole regular file into memory (malloc'd, NUL-terminated; size excludes the NUL).
 * NOT_FOUND when it does not exist, INVALID_ARGUMENT when it cannot be opened or is not a
 * regular file, DATA_LOSS on a short read; each sentence names the file. */
xr_status_t xr_read_file(const char *path, uint8_t **out_bytes, size_t *out_size);

#ifdef __cplusplus
}
#endif
#endif /* XR_BASE_FILE_H */
