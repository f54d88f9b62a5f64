/* The HAL loads vendor runtimes with dlopen only: a binary that links //hal must not list
 * libOpenCL, libcuda, libcudart or libamdhip64 among its DT_NEEDED entries, and none may be
 * loaded before the HAL probes a driver. Reads the ELF dynamic section of /proc/self/exe. */
#include <criterion/criterion.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/hal.h"

static const char *const vendor_libraries[] = {"libOpenCL", "libcuda", "libcudart",
                                               "libamdhip64", "libnvrtc", "libhiprtc"};

static bool is_vendor_library(const char *name) {
  for (size_t i = 0; i < sizeof vendor_libraries / sizeof vendor_libraries[0]; i++) {
    if (strstr(name, vendor_libraries[i])) return true;
  }
  return false;
}

/* Reads the whole file; the test binary is a few MiB at most. */
static unsigned char *read_file(const char *path, size_t *out_size) {
  FILE *file = fopen(path, "rb");
  cr_assert_not_null(file, "open %s", path);
  fseek(file, 0, SEEK_END);
  long size = ftell(file);
  fseek(file, 0, SEEK_SET);
  unsigned char *data = malloc((size_t)size);
  cr_assert_not_null(data);
  cr_assert_eq(fread(data, 1, (size_t)size, file), (size_t)size);
  fclose(file);
  *out_size = (size_t)size;
  return data;
}

/* Collects DT_NEEDED names of a 64-bit ELF file into `out` ("; "-separated). */
static int needed_libraries(const unsigned char *elf, size_t size, char *out, size_t capacity) {
  const Elf64_Ehdr *header = (const Elf64_Ehdr *)elf;
  cr_assert(size > sizeof *header && memcmp(header->e_ident, ELFMAG, SELFMAG) == 0, "not ELF");
  cr_assert_eq(header->e_ident[EI_CLASS], ELFCLASS64);
  const Elf64_Shdr *sections = (const Elf64_Shdr *)(elf + header->e_shoff);
  int count = 0;
  out[0] = '\0';
  for (int s = 0; s < header->e_shnum; s++) {
    if (sections[s].sh_type != SHT_DYNAMIC) continue;
    const Elf64_Shdr *strings = &sections[sections[s].sh_link];
    const Elf64_Dyn *entries = (const Elf64_Dyn *)(elf + sections[s].sh_offset);
    size_t entry_count = sections[s].sh_size / sizeof *entries;
    for (size_t e = 0; e < entry_count && entries[e].d_tag != DT_NULL; e++) {
      if (entries[e].d_tag != DT_NEEDED) continue;
      const char *name = (const char *)elf + strings->sh_offset + entries[e].d_un.d_val;
      size_t used = strlen(out);
      snprintf(out + used, capacity - used, "%s%s", count ? "; " : "", name);
      count++;
    }
  }
  return count;
}

Test(linkage, no_vendor_library_in_dt_needed) {
  size_t size = 0;
  unsigned char *elf = read_file("/proc/self/exe", &size);
  char needed[4096];
  int count = needed_libraries(elf, size, needed, sizeof needed);
  free(elf);
  cr_assert_gt(count, 0, "found no DT_NEEDED entries at all: the check would be vacuous");
  cr_assert(strstr(needed, "libc.so"), "libc should be needed: %s", needed);
  cr_assert_not(is_vendor_library(needed), "vendor library linked at build time: %s", needed);
}

static int find_vendor_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  if (info->dlpi_name && is_vendor_library(info->dlpi_name)) {
    snprintf(data, 512, "%s", info->dlpi_name);
    return 1;
  }
  return 0;
}

Test(linkage, vendor_runtimes_load_only_when_probed) {
  char loaded[512] = "";
  cr_assert_eq(dl_iterate_phdr(find_vendor_object, loaded), 0, "loaded at start-up: %s", loaded);
  xr_hal_driver_info_t info;
  cr_assert_eq(xr_hal_driver_info_by_name("opencl", &info), XR_OK);
  if (info.status != XR_OK) cr_skip_test("opencl unavailable: %s", info.reason);
  /* The probe did dlopen the loader: the check above can see a vendor library when there. */
  cr_assert_eq(dl_iterate_phdr(find_vendor_object, loaded), 1, "%s", info.reason);
  cr_assert(strstr(loaded, "libOpenCL"), "%s", loaded);
}
