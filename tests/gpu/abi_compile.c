#include "tests/gpu/abi_compile.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int xr_test_compile(const char *source, const char *extension, const char *compiler,
                    const char *flags) {
  const char *tmp = getenv("TEST_TMPDIR");
  char file[512], log[512], command[2048];
  snprintf(file, sizeof file, "%s/abi_check_%d.%s", tmp ? tmp : "/tmp", (int)getpid(), extension);
  snprintf(log, sizeof log, "%s/abi_check_%d.log", tmp ? tmp : "/tmp", (int)getpid());
  FILE *f = fopen(file, "w");
  cr_assert(f, "cannot write %s", file);
  fputs(source, f);
  fclose(f);
  snprintf(command, sizeof command, "%s -fsyntax-only %s -I. %s > %s 2>&1", compiler, flags, file,
           log);
  int status = system(command);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 127) cr_skip_test("%s: no compiler to run (%s)", compiler, command);
  if (code != 0) {
    char text[8192] = "";
    FILE *l = fopen(log, "r");
    if (l) {
      text[fread(text, 1, sizeof text - 1, l)] = '\0';
      fclose(l);
    }
    cr_log_info("%s\n%s", command, text);
  }
  return code;
}
