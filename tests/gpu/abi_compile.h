/* For the tests that check our vendor declarations against the vendors' headers: a snippet
 * compiled with the system compiler, without linking. */
#ifndef XR_TESTS_GPU_ABI_COMPILE_H
#define XR_TESTS_GPU_ABI_COMPILE_H

/* Writes `source` to a file of the test's own (`extension`: "c" or "cc"), compiles it with
 * `compiler -fsyntax-only flags -I.` (the workspace root in runfiles, where the headers named as
 * data lie) and returns the compiler's exit status, logging its output when it fails. Skips the
 * test when no compiler can be run. Criterion runs tests in parallel processes: the file is named
 * after the process. */
int xr_test_compile(const char *source, const char *extension, const char *compiler,
                    const char *flags);

#endif
