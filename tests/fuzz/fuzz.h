/* What the fuzz targets share. Each target defines LLVMFuzzerTestOneInput; built with clang's
 * -fsanitize=fuzzer it is a libFuzzer binary (tools/fuzz.sh), built with regress_main.c it is a
 * plain test that replays the target's corpus and saved crashes (bazel test //tests/fuzz/...).
 * A target aborts (fuzz_require) when a property fails, so that the fuzzer reports it. */
#ifndef XR_TESTS_FUZZ_FUZZ_H
#define XR_TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with a message when `cond` is false: a property the input broke. */
#define fuzz_require(cond, ...)                                      \
  do {                                                               \
    if (!(cond)) {                                                   \
      fprintf(stderr, "fuzz property failed: %s: ", #cond);          \
      fprintf(stderr, __VA_ARGS__);                                  \
      fputc('\n', stderr);                                           \
      abort();                                                       \
    }                                                                \
  } while (0)

/* A path in this process's scratch directory (TEST_TMPDIR, TMPDIR, else /tmp), unique to the
 * process; `name` is appended. Valid until the next call. */
const char *fuzz_path(const char *name);
/* Writes `data` to fuzz_path(name) and returns the path; aborts when the file cannot be
 * written (the machine, not the input, is at fault). */
const char *fuzz_write(const char *name, const uint8_t *data, size_t size);

#endif
