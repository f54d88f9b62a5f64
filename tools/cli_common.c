/* What the subcommands share (tools/cli.h): walking their options with one-line errors, value
 * parsers, and loading the bundle with its --model-config, so that a plan is made of exactly the
 * bundle a replay would run. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "tools/cli.h"

const char *xr_cli_path(const char *arg, char *buf, size_t size) {
  const char *wd = getenv("BUILD_WORKING_DIRECTORY");
  if (!wd || !wd[0] || arg[0] == '/') return arg;
  snprintf(buf, size, "%s/%s", wd, arg);
  return buf;
}

/* ------------------------------------------------------------------------------------------ */
/* options                                                                                     */

void xr_cli_args_init(xr_cli_args_t *a, const char *prog, const char *const *options, int argc,
                      char **argv) {
  memset(a, 0, sizeof *a);
  a->prog = prog;
  a->options = options;
  a->argc = argc;
  a->argv = argv;
  a->next = 1;
  snprintf(a->help_buf, sizeof a->help_buf, "%s --help", prog);
  a->help = a->help_buf;
}

/* "PROG: PREFIX" and the sentence, one line on stderr. */
static int cli_verror(const char *prog, const char *prefix, const char *fmt, va_list ap) {
  char line[1024];
  vsnprintf(line, sizeof line, fmt, ap);
  fprintf(stderr, "%s: %s%s\n", prog, prefix, line);
  return XR_EXIT_USAGE;
}

int xr_cli_error(const char *prog, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = cli_verror(prog, "", fmt, ap);
  va_end(ap);
  return rc;
}

int xr_cli_bad_value(const xr_cli_args_t *a, const char *fmt, ...) {
  char prefix[256];
  snprintf(prefix, sizeof prefix, "%s=%s: ", a->option, a->value ? a->value : "");
  va_list ap;
  va_start(ap, fmt);
  int rc = cli_verror(a->prog, prefix, fmt, ap);
  va_end(ap);
  return rc;
}

bool xr_cli_int_value(const xr_cli_args_t *a, long long lo, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(a->value, &end, 10);
  if (end == a->value || *end || errno) {
    xr_cli_bad_value(a, "not a whole number");
    return false;
  }
  if (v < lo) {
    xr_cli_bad_value(a, "must be at least %lld", lo);
    return false;
  }
  *out = v;
  return true;
}

/* The name of an option entry, without its trailing "=", in `buf`. */
static const char *entry_name(const char *entry, char *buf, size_t size) {
  size_t n = strcspn(entry, "=");
  if (n >= size) n = size - 1;
  memcpy(buf, entry, n);
  buf[n] = '\0';
  return buf;
}

/* Edit distance where a swap of two neighbours counts once (optimal string alignment). */
static size_t distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 63 || m > 63) return (size_t)-1;
  size_t d[64][64];
  for (size_t i = 0; i <= n; i++) d[i][0] = i;
  for (size_t j = 0; j <= m; j++) d[0][j] = j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
          d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[n][m];
}

const char *xr_cli_closest(const char *given, const char *const *candidates, char *buf,
                           size_t size) {
  const char *best = NULL, *prefixed = NULL;
  size_t best_distance = (size_t)-1, prefixes = 0, given_len = strlen(given);
  char name[64];
  for (const char *const *c = candidates; *c; c++) {
    entry_name(*c, name, sizeof name);
    size_t d = distance(given, name);
    /* A slip: one edit in a short name, one in three in a longer one (dashes not counted). */
    size_t body = strspn(name, "-"), allowed = (strlen(name) - body) / 3;
    if (allowed < 1) allowed = 1;
    if (d <= allowed && d < best_distance) {
      best = *c;
      best_distance = d;
    }
    /* An abbreviation: "--op-f" for "--op-filter", when nothing else starts so. */
    if (given_len > strspn(given, "-") + 2 && !strncmp(name, given, given_len)) {
      prefixed = *c;
      prefixes++;
    }
  }
  if (!best && prefixes == 1) best = prefixed;
  return best ? entry_name(best, buf, size) : NULL;
}

bool xr_cli_is(const xr_cli_args_t *a, const char *option) {
  return !strcmp(a->option, option);
}

xr_cli_token_t xr_cli_next(xr_cli_args_t *a) {
  a->option[0] = '\0';
  a->value = NULL;
  a->arg = NULL;
  if (a->next >= a->argc) return XR_CLI_END;
  char *arg = a->argv[a->next++];
  a->arg = arg;
  if (!a->operands_only && !strcmp(arg, "--")) {
    a->operands_only = true;
    return xr_cli_next(a);
  }
  if (a->operands_only || arg[0] != '-' || !arg[1]) return XR_CLI_OPERAND;
  size_t n = strcspn(arg, "=");
  char *eq = arg[n] ? arg + n : NULL;
  char name[64];
  for (const char *const *o = a->options; *o; o++) {
    entry_name(*o, name, sizeof name);
    if (strlen(name) != n || strncmp(name, arg, n)) continue;
    snprintf(a->option, sizeof a->option, "%s", name);
    bool valued = (*o)[strlen(name)] == '=';
    if (!valued && eq) {
      xr_cli_error(a->prog, "%s: takes no value", arg);
      return XR_CLI_BAD;
    }
    if (valued && eq) {
      a->value = eq + 1;
    } else if (valued) {
      if (a->next >= a->argc) {
        xr_cli_error(a->prog, "%s: needs a value", name);
        return XR_CLI_BAD;
      }
      a->value = a->argv[a->next++];
    }
    return XR_CLI_OPTION;
  }
  char given[64], suggestion[64];
  snprintf(given, sizeof given, "%.*s", (int)(n < sizeof given ? n : sizeof given - 1), arg);
  if (xr_cli_closest(given, a->options, suggestion, sizeof suggestion))
    xr_cli_error(a->prog, "unknown option %s (did you mean %s?)", arg, suggestion);
  else
    xr_cli_error(a->prog, "unknown option %s (`%s` lists the options)", arg, a->help);
  return XR_CLI_BAD;
}

/* ------------------------------------------------------------------------------------------ */
/* values and bundles                                                                          */

bool xr_cli_parse_int(const char *s, long long lo, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno || v < lo) return false;
  *out = v;
  return true;
}

bool xr_cli_parse_cache_blocks(const char *s, int *out) {
  static const char *const names[] = {"auto", "full", "compact"}; /* xr_cache_blocks_t order */
  for (int i = 0; i < 3; i++)
    if (!strcmp(s, names[i])) return *out = i, true;
  return false;
}

bool xr_cli_parse_bytes(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || errno || s[0] == '-') return false;
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10, end++;
  else if (*end == 'M' || *end == 'm') shift = 20, end++;
  else if (*end == 'G' || *end == 'g') shift = 30, end++;
  if (*end || v == 0 || v > (UINT64_MAX >> shift)) return false;
  *out = (uint64_t)v << shift;
  return true;
}

int xr_cli_load_bundle(const char *prog, const char *path, const char *model_config,
                       xr_bundle_t **out_bundle) {
  *out_bundle = NULL;
  xr_bundle_t *b;
  if (xr_bundle_load(path, &b) != XR_OK) {
    fprintf(stderr, "%s: %s\n", prog, xr_last_error());
    return XR_EXIT_USAGE;
  }
  char buf[4096];
  if (model_config && xr_cli_apply_model_config(prog, xr_cli_path(model_config, buf, sizeof buf),
                                                b) != XR_EXIT_OK) {
    xr_bundle_destroy(b);
    return XR_EXIT_USAGE;
  }
  *out_bundle = b;
  return XR_EXIT_OK;
}
