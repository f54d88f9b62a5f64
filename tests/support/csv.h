/* One CSV record (RFC 4180) split into its fields, unquoted, in place: what the suites that read
 * the CSV report back share. */
#ifndef XR_TESTS_SUPPORT_CSV_H
#define XR_TESTS_SUPPORT_CSV_H

#include <criterion/criterion.h>
#include <stddef.h>

/* Splits `line` (up to its newline or end) into at most `max` fields; returns how many. */
static inline size_t csv_split(char *line, char **fields, size_t max) {
  size_t n = 0;
  char *p = line;
  for (;;) {
    cr_assert_lt(n, max, "more than %zu fields", max);
    char *field = p, *w = p;
    if (*p == '"') {
      for (p++;; p++) {
        cr_assert(*p, "unterminated quoted field in %s", line);
        if (*p == '"' && p[1] == '"') *w++ = '"', p++;
        else if (*p == '"') break;
        else *w++ = *p;
      }
      p++;
    } else {
      while (*p && *p != ',' && *p != '\n') *w++ = *p++;
    }
    char end = *p;
    *w = '\0';
    fields[n++] = field;
    if (end != ',') return n;
    p++;
  }
}

#endif
