#include "base/host_memory.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

uint64_t xr_host_memory_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (f) {
    char line[256];
    unsigned long long kb = 0;
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
      found = sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
    fclose(f);
    if (found) return (uint64_t)kb * 1024u;
  }
  long pages = sysconf(_SC_AVPHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0;
}
