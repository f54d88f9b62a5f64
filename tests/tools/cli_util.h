/* What the command-line suites share: running the real `tools/replay` binary (a data
 * dependency) the way a user would, keeping its stdout and stderr, scratch files, and reading
 * the JSON it writes. */
#ifndef XR_TESTS_TOOLS_CLI_UTIL_H
#define XR_TESTS_TOOLS_CLI_UTIL_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* The last command's stdout and stderr (replay() fills them). */
extern char out_text[1 << 16], err_text[1 << 16];

/* $TEST_TMPDIR, or /tmp outside Bazel. */
const char *tmpdir(void);
/* A path in it for `name`, unique to this process; from a ring of 64 (a test holds fewer). */
const char *scratch(const char *name);
/* The file's first n - 1 bytes, NUL-terminated ("" when it cannot be read). */
void slurp(const char *path, char *buf, size_t n);
void write_text(const char *path, const char *text);
/* The file parsed as JSON (up to 4 MiB); fails the test when it is not JSON. */
cJSON *read_json(const char *path);
/* A member's string ("" when absent or not a string) and number (NaN likewise). */
const char *json_str(const cJSON *object, const char *key);
double json_number(const cJSON *object, const char *key);
/* Runs `tools/replay ARGS` (a shell command line), keeping stdout and stderr in out_text and
 * err_text; returns the exit code, and fails the test when replay did not exit normally. Runs
 * it once more when LeakSanitizer's tracer (not a leak) crashed at its exit. */
int replay(const char *args);

#endif
