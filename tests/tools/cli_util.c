/* See cli_util.h. */
#include "tests/tools/cli_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

char out_text[1 << 16], err_text[1 << 16];

const char *tmpdir(void) {
  const char *t = getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

const char *scratch(const char *name) {
  static char paths[64][1024];
  static int next;
  char *p = paths[next++ % 64];
  snprintf(p, sizeof paths[0], "%s/%d.%s", tmpdir(), (int)getpid(), name);
  return p;
}

void slurp(const char *path, char *buf, size_t n) {
  FILE *f = fopen(path, "r");
  size_t got = f ? fread(buf, 1, n - 1, f) : 0;
  buf[got] = '\0';
  if (f) fclose(f);
}

void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s: cannot create", path);
  fputs(text, f);
  fclose(f);
}

cJSON *read_json(const char *path) {
  static char text[1 << 22];
  slurp(path, text, sizeof text);
  cJSON *j = cJSON_Parse(text);
  cr_assert_not_null(j, "%s is not JSON: %.300s", path, text);
  return j;
}

const char *json_str(const cJSON *object, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(object, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

double json_number(const cJSON *object, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(object, key);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

int replay(const char *args) {
  char cmd[8192], out[1024], err[1024];
  /* Criterion runs tests in parallel processes: keep each one's files apart. */
  snprintf(out, sizeof out, "%s/stdout.%d", tmpdir(), (int)getpid());
  snprintf(err, sizeof err, "%s/stderr.%d", tmpdir(), (int)getpid());
  snprintf(cmd, sizeof cmd, "tools/replay %s >%s 2>%s", args, out, err);
  int status = 0;
  /* Under --config=asan, LeakSanitizer's own exit-time tracer now and then dies stopping
   * oneDNN's and PoCL's idle threads ("Tracer caught signal 11 ... LeakSanitizer has
   * encountered a fatal error"): no finding about our code, and the command ran to the end. It
   * is run once more then; a leak report ("detected memory leaks") is never retried. Said at
   * info level: Criterion ends a suite that logged a warning with exit status 1. */
  for (int attempt = 0; attempt < 2; attempt++) {
    status = system(cmd);
    slurp(out, out_text, sizeof out_text);
    slurp(err, err_text, sizeof err_text);
    if (!strstr(err_text, "LeakSanitizer has encountered a fatal error")) break;
    cr_log_info("replay %s: LeakSanitizer's tracer crashed; running it again", args);
  }
  cr_assert(WIFEXITED(status), "replay %s did not exit normally", args);
  return WEXITSTATUS(status);
}
