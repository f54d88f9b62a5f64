/* `replay slice BUNDLE --op=N[,M...] | --op-filter=TEXT -o OUT [--keep-data]`: some ops of a
 * bundle as a bundle of their own, a reproducer to replay alone or to hand on. The ops keep
 * their arguments, counts and recorded timing, the bundle its metadata (the device it was
 * captured on). Tensor contents are dropped unless --keep-data, which embeds them: a .npy path
 * is relative to the old bundle, so OUT must carry the bytes to stand alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "replay/replay.h"
#include "replay/report_html.h"
#include "tools/cli.h"

static const char prog[] = "replay slice";

static const char usage[] =
    "usage: replay slice BUNDLE --op=N[,M...] | --op-filter=TEXT -o OUT [--keep-data]\n"
    "  Writes the chosen ops of BUNDLE as OUT (.json or .msgpack, by its extension) with their\n"
    "  counts, recorded timing and the bundle's metadata, and prints the command that replays\n"
    "  it. The ops are renumbered from 0, in bundle order.\n"
    "  --op=N[,M...]     ops by index, as `replay inspect` and the reports number them\n"
    "                    (repeatable)\n"
    "  --op-filter=TEXT  the ops whose name contains TEXT, as `replay --op-filter` takes them\n"
    "  -o, --output=OUT  the bundle to write\n"
    "  --keep-data       keep the ops' tensor contents, embedded in OUT; without it they are\n"
    "                    dropped and shapes, strides and dtypes kept (safe to share)\n";

/* An index asked for, and the --op value it came from (for the message when it is too big). */
typedef struct wanted {
  long long index;
  const char *value;
} wanted_t;

/* Adds the indices of --op's value ("7", "3,7,12") to `w`; false after saying why. */
static bool add_indices(const xr_cli_args_t *a, wanted_t **w, size_t *n, size_t *cap) {
  const char *s = a->value;
  do {
    size_t len = strcspn(s, ",");
    char piece[32];
    long long index;
    snprintf(piece, sizeof piece, "%.*s", (int)(len < sizeof piece ? len : sizeof piece - 1), s);
    if (len >= sizeof piece || !xr_cli_parse_int(piece, 0, &index)) {
      xr_cli_bad_value(a, "\"%.*s\" is not an op index (whole numbers from 0, comma-separated)",
                       (int)len, s);
      return false;
    }
    if (*n == *cap) {
      size_t grown = *cap ? 2 * *cap : 16;
      wanted_t *more = realloc(*w, grown * sizeof *more);
      if (!more) {
        xr_cli_error(prog, "out of memory");
        return false;
      }
      *w = more;
      *cap = grown;
    }
    (*w)[(*n)++] = (wanted_t){index, a->value};
    s += len;
  } while (*s++ == ',');
  return true;
}

static void count_contents(xr_tensor_spec_t *t, void *context) {
  *(size_t *)context += t->data || t->data_file;
}

/* The ops `keep` marks, on one line: "#3 aten::mm, #7 aten::linear", the first eight. */
static void describe_kept(const xr_bundle_t *b, const bool *keep, size_t total, char *buf,
                          size_t size) {
  size_t at = 0, shown = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < total && at < size; i++) {
    if (!keep[i]) continue;
    if (shown++ == 8) {
      snprintf(buf + at, size - at, ", ...");
      break;
    }
    at += (size_t)snprintf(buf + at, size - at, "%s#%zu %s", shown > 1 ? ", " : "", i,
                           b->ops[i].name);
  }
}

/* Keeps the chosen ops, in bundle order, as the bundle's only ones: they live in its arena, so
 * moving the op structs is all it takes. */
static void compact(xr_bundle_t *b, const bool *keep) {
  size_t kept = 0;
  for (size_t i = 0; i < b->op_count; i++)
    if (keep[i]) b->ops[kept++] = b->ops[i];
  b->op_count = kept;
}

/* The first index past the bundle's ops, said in one line; XR_EXIT_OK when there is none. */
static int check_range(const char *path, const xr_bundle_t *b, const wanted_t *w, size_t n) {
  for (size_t k = 0; k < n; k++) {
    if ((unsigned long long)w[k].index < b->op_count) continue;
    if (!b->op_count)
      return xr_cli_error(prog, "--op=%s: no op %lld in %s, which has no ops", w[k].value,
                          w[k].index, path);
    return xr_cli_error(prog, "--op=%s: no op %lld in %s, which has %zu op%s (0 to %zu)",
                        w[k].value, w[k].index, path, b->op_count, b->op_count == 1 ? "" : "s",
                        b->op_count - 1);
  }
  return XR_EXIT_OK;
}

static int slice(const char *path, const char *out, const wanted_t *w, size_t n,
                 const char *filter, bool keep_data) {
  xr_bundle_format_t format = xr_bundle_format_from_path(out);
  if (format == XR_FORMAT_UNKNOWN)
    return xr_cli_error(prog, "%s: cannot tell the output format from its extension; use .json "
                              "or .msgpack", out);
  xr_bundle_t *b;
  if (xr_cli_load_bundle(prog, path, NULL, &b) != XR_EXIT_OK) return XR_EXIT_USAGE;
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.op_filter = filter;
  int rc = xr_cli_check_filter(prog, path, b, &o);
  if (rc == XR_EXIT_OK) rc = check_range(path, b, w, n);
  bool *keep = rc == XR_EXIT_OK ? calloc(b->op_count + 1, sizeof *keep) : NULL;
  if (rc == XR_EXIT_OK && !keep) rc = xr_cli_error(prog, "out of memory");
  if (rc != XR_EXIT_OK) {
    xr_bundle_destroy(b);
    return rc;
  }
  for (size_t k = 0; k < n; k++) keep[w[k].index] = true;
  for (size_t i = 0; filter && i < b->op_count; i++) keep[i] = xr_op_passes_filter(&o, &b->ops[i]);
  size_t total = b->op_count;
  char which[1024];
  describe_kept(b, keep, total, which, sizeof which);
  compact(b, keep);
  free(keep);

  size_t contents = 0;
  xr_status_t st = XR_OK;
  if (keep_data) {
    xr_bundle_visit_tensors(b, count_contents, &contents);
    st = xr_bundle_embed_data(b, NULL);
  } else {
    xr_bundle_strip_data(b, &contents);
  }
  if (st == XR_OK) st = xr_bundle_save(b, out, format);
  if (st != XR_OK) {
    fprintf(stderr, "%s: %s\n", prog, xr_last_error());
    xr_bundle_destroy(b);
    return XR_EXIT_USAGE;
  }
  printf("wrote %s (%s): %zu of the %zu ops of %s, now numbered from 0: %s\n", out,
         xr_bundle_format_name(format), b->op_count, total, path, which);
  if (keep_data)
    printf("tensor contents: %zu kept, embedded in %s\n", contents, out);
  else
    printf("tensor contents: %zu stripped (shapes, strides and dtypes kept; --keep-data keeps "
           "them)\n", contents);
  char word[16384];
  if (xr_shell_word(out, word, sizeof word)) printf("replay it: replay --hal=cpu %s\n", word);
  xr_bundle_destroy(b);
  return XR_EXIT_OK;
}

int xr_cmd_slice(int argc, char **argv) {
  const char *path = NULL, *out = NULL, *filter = NULL;
  bool keep_data = false;
  wanted_t *w = NULL;
  size_t n = 0, cap = 0;
  static const char *const options[] = {"--op=", "--op-filter=", "-o=",  "--output=",
                                         "--keep-data", "-h",         "--help", NULL};
  xr_cli_args_t a;
  xr_cli_args_init(&a, prog, options, argc, argv);
  int rc = XR_EXIT_OK;
  for (xr_cli_token_t t; rc == XR_EXIT_OK && (t = xr_cli_next(&a)) != XR_CLI_END;) {
    if (t == XR_CLI_BAD) {
      rc = XR_EXIT_USAGE;
    } else if (t == XR_CLI_OPERAND) {
      if (path) rc = xr_cli_error(prog, "one bundle at a time (%s, then %s)", path, a.arg);
      path = a.arg;
    } else if (xr_cli_is(&a, "--op")) {
      if (!add_indices(&a, &w, &n, &cap)) rc = XR_EXIT_USAGE;
    } else if (xr_cli_is(&a, "--op-filter")) {
      filter = a.value;
    } else if (xr_cli_is(&a, "-o") || xr_cli_is(&a, "--output")) {
      out = a.value;
    } else if (xr_cli_is(&a, "--keep-data")) {
      keep_data = true;
    } else {
      fputs(usage, stdout);
      free(w);
      return XR_EXIT_OK;
    }
  }
  if (rc == XR_EXIT_OK) {
    if (!path)
      rc = xr_cli_error(prog, "BUNDLE is required (`replay slice --help`)");
    else if (!n && !filter)
      rc = xr_cli_error(prog, "--op=N or --op-filter=TEXT is required: which ops to keep");
    else if (n && filter)
      rc = xr_cli_error(prog, "--op and --op-filter exclude each other");
    else if (!out)
      rc = xr_cli_error(prog, "-o OUT is required");
  }
  if (rc == XR_EXIT_OK) {
    char pbuf[4096], obuf[4096];
    rc = slice(xr_cli_path(path, pbuf, sizeof pbuf), xr_cli_path(out, obuf, sizeof obuf), w, n,
               filter, keep_data);
  }
  free(w);
  return rc;
}
