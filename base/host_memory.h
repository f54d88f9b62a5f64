/* How much memory this machine can still give: what the replay engine checks an op's tensors
 * against before allocating them, so that an op too large for the host is reported, not killed
 * by the kernel's OOM killer. */
#ifndef XR_BASE_HOST_MEMORY_H
#define XR_BASE_HOST_MEMORY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes available for new allocations without swapping (Linux MemAvailable; else free pages);
 * 0 when unknown. Reads /proc/meminfo on every call: call it per op, not per buffer. */
uint64_t xr_host_memory_available(void);

#ifdef __cplusplus
}
#endif
#endif /* XR_BASE_HOST_MEMORY_H */
