/* Replays every file under the directories (or files) given as arguments through the target's
 * LLVMFuzzerTestOneInput: the corpus and the saved crash inputs, as a plain test. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/file.h"
#include "tests/fuzz/fuzz.h"

static size_t replay(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    perror(path);
    exit(1);
  }
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (!d) {
      perror(path);
      exit(1);
    }
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.') continue;
      char sub[4096];
      snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
      n += replay(sub);
    }
    closedir(d);
    return n;
  }
  uint8_t *bytes;
  size_t size;
  if (xr_read_file(path, &bytes, &size) != XR_OK) {
    fprintf(stderr, "%s\n", xr_last_error());
    exit(1);
  }
  LLVMFuzzerTestOneInput(bytes, size);
  free(bytes);
  return 1;
}

int main(int argc, char **argv) {
  size_t n = 0;
  for (int i = 1; i < argc; i++) n += replay(argv[i]);
  if (n == 0) {
    fprintf(stderr, "no inputs\n");
    return 1;
  }
  printf("%zu inputs replayed without a finding\n", n);
  return 0;
}
