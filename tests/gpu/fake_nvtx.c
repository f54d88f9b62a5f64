/* A stand-in for libnvToolsExt.so.1 for tests/gpu:ranges_test: it keeps what was pushed and
 * popped, so that the test sees the loader's calls arrive. */
#include <stdio.h>
#include <string.h>

static char log_text[4096];
static int depth;

static void append(const char *what) {
  size_t used = strlen(log_text);
  snprintf(log_text + used, sizeof log_text - used, "%s%s", used ? "|" : "", what);
}

int nvtxRangePushA(const char *message) {
  append(message);
  return depth++;
}

int nvtxRangePop(void) {
  append("pop");
  return --depth;
}

/* What the test reads back: "name|pop|...". */
const char *fake_nvtx_log(void) { return log_text; }
