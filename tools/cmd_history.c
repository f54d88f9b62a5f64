/* `replay history --db=FILE` and `replay regress --db=FILE --baseline=RUN`: the runs a
 * `replay --db=FILE` recorded (replay/history.h), as each op's medians across runs, and as one
 * run against a baseline run with compare's verdicts (replay/report_compare.h), for a kernel
 * library's CI: exit 1 when an op got slower beyond the tolerance. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/history.h"
#include "replay/report_compare.h"
#include "tools/cli.h"

static const char history_usage[] =
    "usage: replay history --db=FILE [--op-filter=TEXT] [--device=TEXT] [--bundle=HASH]\n"
    "       replay history --db=FILE --runs [--device=TEXT] [--bundle=HASH]\n"
    "  The runs `replay --db=FILE` recorded: per op, its median in each run, oldest first, with\n"
    "  the run's date, kernel, HAL, device, driver and library versions. Ops are identified as\n"
    "  `replay compare` pairs them: by position within a bundle, by name and arguments across\n"
    "  bundles.\n"
    "  --runs              list the runs instead, with their ids (for `replay regress`)\n"
    "  --op-filter=TEXT    only ops whose name contains TEXT\n"
    "  --device=TEXT       only runs whose device name or HAL contains TEXT\n"
    "  --bundle=HASH       only runs of the bundle whose hash (bundle_hash) starts with HASH\n";

static const char regress_usage[] =
    "usage: replay regress --db=FILE --baseline=RUN [--run=RUN] [--tolerance=P%]\n"
    "  Compares run RUN (default: the last recorded) with the baseline run, ops paired and\n"
    "  judged as `replay compare` does, and lists each op that got slower beyond the tolerance\n"
    "  (SLOWER: the 95% interval of its slowdown clears P percent, default 5, or either run's\n"
    "  own noise if larger). `replay history --db=FILE --runs` lists the runs.\n"
    "exit: 0 no op got slower, 1 some did, 2 usage or database error\n";

#define DEFAULT_TOLERANCE_PERCENT 5.0

/* "HAL · device (driver driver_version; runtime_version)". */
static void describe_device(const char *hal, const char *device, const char *driver,
                            const char *driver_version, const char *runtime_version, char *out,
                            size_t size) {
  snprintf(out, size, "%s \u00b7 %s (%s%s%s%s%s)", hal, device, driver,
           driver_version[0] ? " " : "", driver_version, runtime_version[0] ? "; " : "",
           runtime_version);
}

/* ------------------------------------------------------------------------------------------ */
/* replay history                                                                              */

static bool print_run(void *context, const xr_history_run_t *r) {
  size_t *count = context;
  char device[1024];
  describe_device(r->hal, r->device, r->driver, r->driver_version, r->runtime_version, device,
                  sizeof device);
  if (!(*count)++) printf("%5s  %-20s  %s\n", "run", "date", "device, bundle, ops, host");
  printf("%5lld  %-20s  %s  bundle %s %s  %lld ops, %lld ok  host %s", (long long)r->id, r->date,
         device, r->bundle_hash[0] ? r->bundle_hash : "-", r->bundle, (long long)r->ops,
         (long long)r->succeeded, r->host[0] ? r->host : "-");
  if (r->cancelled) printf("  (interrupted)");
  else if (!r->finished) printf("  (unfinished)");
  if (r->invocation != r->id) printf("  (one command with run %lld)", (long long)r->invocation);
  putchar('\n');
  return true;
}

typedef struct history_ctx {
  size_t results, ops;
  size_t op;          /* the op being printed */
  double first_us;    /* its first timed median, for the ratio; NAN before one */
  char hash[32];      /* the bundle of its first row */
  int64_t index;      /* and its position there */
} history_ctx_t;

static bool print_result(void *context, const xr_history_result_t *r) {
  history_ctx_t *c = context;
  const xr_report_entry_t *e = r->entry;
  const xr_history_run_t *run = r->run;
  if (!c->results++ || r->op != c->op) {
    c->op = r->op;
    c->ops++;
    c->first_us = NAN;
    snprintf(c->hash, sizeof c->hash, "%s", run->bundle_hash);
    c->index = e->index;
    printf("%s#%lld %s %s\n", c->results > 1 ? "\n" : "", (long long)e->index, e->name, e->args);
    printf("%6s  %-20s  %10s  %8s  %-24s  %s\n", "run", "date", "median us", "x first", "kernel",
           "device");
  }
  char device[1024];
  describe_device(run->hal, run->device, run->driver, run->driver_version, run->runtime_version,
                  device, sizeof device);
  printf("%6lld  %-20s", (long long)run->id, run->date);
  if (e->median_us > 0) {
    if (isnan(c->first_us)) c->first_us = e->median_us;
    printf("  %10.2f  %7.3fx", e->median_us, e->median_us / c->first_us);
  } else {
    printf("  %10s  %8s", e->outcome[0] ? e->outcome : "-", "-");
  }
  printf("  %-24s  %s", e->kernel[0] ? e->kernel : "-", device);
  if (strcmp(run->bundle_hash, c->hash) || e->index != c->index)
    printf("  [#%lld of bundle %s]", (long long)e->index, run->bundle_hash);
  if (e->contended == 1) printf("  CONTENDED");
  if (e->unstable == 1) printf("  UNSTABLE");
  if (e->median_us <= 0 && e->message[0]) printf("  %s", e->message);
  putchar('\n');
  return true;
}

/* "--op-filter=mm --device=hip": the filters given, for the line saying they took nothing. */
static void describe_filter(const xr_history_filter_t *f, char *out, size_t size) {
  snprintf(out, size, "%s%s%s%s%s%s", f->op_filter ? " --op-filter=" : "",
           f->op_filter ? f->op_filter : "", f->device ? " --device=" : "",
           f->device ? f->device : "", f->bundle_hash ? " --bundle=" : "",
           f->bundle_hash ? f->bundle_hash : "");
}

/* The history at --db, opened to read, or XR_EXIT_USAGE after saying why. */
static int open_db(const char *prog, const char *db, char *buf, size_t size,
                   xr_history_t **out) {
  if (!db) return xr_cli_error(prog, "--db=FILE is required (`%s --help`)", prog);
  if (xr_history_open(xr_cli_path(db, buf, size), false, out) != XR_OK)
    return xr_cli_error(prog, "%s", xr_last_error());
  return XR_EXIT_OK;
}

int xr_cmd_history(int argc, char **argv) {
  static const char *const options[] = {"--db=",   "--op-filter=", "--device=", "--bundle=",
                                        "--runs", "-h",           "--help",    NULL};
  const char *db = NULL;
  bool runs = false;
  xr_history_filter_t filter = {0};
  xr_cli_args_t a;
  xr_cli_args_init(&a, "replay history", options, argc, argv);
  for (xr_cli_token_t t; (t = xr_cli_next(&a)) != XR_CLI_END;) {
    if (t == XR_CLI_BAD) return XR_EXIT_USAGE;
    if (t == XR_CLI_OPERAND)
      return xr_cli_error("replay history", "%s: takes no operand (the database is --db=FILE)",
                          a.arg);
    if (xr_cli_is(&a, "--db")) db = a.value;
    else if (xr_cli_is(&a, "--op-filter")) filter.op_filter = a.value;
    else if (xr_cli_is(&a, "--device")) filter.device = a.value;
    else if (xr_cli_is(&a, "--bundle")) {
      size_t n = strlen(a.value);
      if (!n || n > 16 || strspn(a.value, "0123456789abcdef") != n)
        return xr_cli_bad_value(&a, "not a bundle hash (up to 16 hex digits, as `replay history "
                                    "--db=FILE --runs` shows them)");
      filter.bundle_hash = a.value;
    } else if (xr_cli_is(&a, "--runs")) runs = true;
    else {
      fputs(history_usage, stdout);
      return XR_EXIT_OK;
    }
  }
  if (runs && filter.op_filter)
    return xr_cli_error("replay history", "--runs lists runs, not ops: --op-filter does not "
                                          "apply");
  char buf[4096];
  xr_history_t *h;
  int rc = open_db("replay history", db, buf, sizeof buf, &h);
  if (rc != XR_EXIT_OK) return rc;
  size_t listed = 0;
  history_ctx_t ctx = {.first_us = NAN};
  xr_status_t st = runs ? xr_history_runs(h, &filter, print_run, &listed)
                        : xr_history_results(h, &filter, print_result, &ctx);
  if (st != XR_OK) rc = xr_cli_error("replay history", "%s", xr_last_error());
  int64_t latest;
  bool any = st == XR_OK && xr_history_latest(h, &latest) == XR_OK;
  char given[512];
  describe_filter(&filter, given, sizeof given);
  if (st == XR_OK && !any)
    printf("%s: no run recorded yet (`replay --db=%s BUNDLE` records one)\n", xr_history_path(h),
           db);
  else if (st == XR_OK && !listed && !ctx.results)
    rc = xr_cli_error("replay history", "%s: no %s of the runs recorded matches%s",
                      xr_history_path(h), runs ? "run" : "op", given);
  else if (st == XR_OK && !runs)
    printf("\n%zu op%s, %zu result%s; medians in us, each op's runs oldest first\n", ctx.ops,
           ctx.ops == 1 ? "" : "s", ctx.results, ctx.results == 1 ? "" : "s");
  xr_history_close(h);
  return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* replay regress                                                                              */

/* A run id: a whole number from 1. */
static bool run_value(xr_cli_args_t *a, int64_t *out) {
  long long n;
  if (xr_cli_parse_int(a->value, 1, &n)) {
    *out = n;
    return true;
  }
  xr_cli_bad_value(a, "not a run id (a whole number from 1; `replay history --db=FILE --runs` "
                      "lists them)");
  return false;
}

/* Run `id` read back, or XR_EXIT_USAGE after one line naming the file and the run. */
static int read_run(xr_history_t *h, const char *db, int64_t id, xr_report_contents_t **out) {
  xr_status_t st = xr_history_report(h, id, out);
  if (st == XR_NOT_FOUND)
    return xr_cli_error("replay regress", "%s; `replay history --db=%s --runs` lists them",
                        xr_last_error(), db);
  if (st != XR_OK) return xr_cli_error("replay regress", "%s", xr_last_error());
  return XR_EXIT_OK;
}

static void print_side(const char *which, int64_t id, const xr_report_contents_t *c) {
  char device[1024];
  describe_device(c->hal, c->device, c->driver, c->driver_version, c->runtime_version, device,
                  sizeof device);
  printf("%-9s run %lld, %s, %s, bundle %s %s\n", which, (long long)id, c->date, device,
         c->bundle_hash[0] ? c->bundle_hash : "-", c->bundle);
}

int xr_cmd_regress(int argc, char **argv) {
  static const char *const options[] = {"--db=",        "--baseline=", "--run=", "--tolerance=",
                                        "-h",           "--help",      NULL};
  const char *db = NULL;
  int64_t baseline = 0, id = 0;
  double tolerance = DEFAULT_TOLERANCE_PERCENT;
  xr_cli_args_t a;
  xr_cli_args_init(&a, "replay regress", options, argc, argv);
  for (xr_cli_token_t t; (t = xr_cli_next(&a)) != XR_CLI_END;) {
    if (t == XR_CLI_BAD) return XR_EXIT_USAGE;
    if (t == XR_CLI_OPERAND)
      return xr_cli_error("replay regress", "%s: takes no operand (the database is --db=FILE)",
                          a.arg);
    if (xr_cli_is(&a, "--db")) db = a.value;
    else if (xr_cli_is(&a, "--baseline")) {
      if (!run_value(&a, &baseline)) return XR_EXIT_USAGE;
    } else if (xr_cli_is(&a, "--run")) {
      if (!run_value(&a, &id)) return XR_EXIT_USAGE;
    } else if (xr_cli_is(&a, "--tolerance")) {
      char *end;
      tolerance = strtod(a.value, &end);
      if (*end == '%') end++;
      if (end == a.value || *end || !(tolerance > 0) || !isfinite(tolerance))
        return xr_cli_bad_value(&a, "not a percentage above 0 (5%% or 5)");
    } else {
      fputs(regress_usage, stdout);
      return XR_EXIT_OK;
    }
  }
  if (db && !baseline)
    return xr_cli_error("replay regress", "--baseline=RUN is required (`replay history --db=%s "
                                          "--runs` lists the runs)", db);
  char buf[4096];
  xr_history_t *h;
  int rc = open_db("replay regress", db, buf, sizeof buf, &h);
  if (rc != XR_EXIT_OK) return rc;
  if (!id && xr_history_latest(h, &id) != XR_OK)
    rc = xr_cli_error("replay regress", "%s", xr_last_error());
  xr_report_contents_t *base = NULL, *run = NULL;
  if (rc == XR_EXIT_OK) rc = read_run(h, db, baseline, &base);
  if (rc == XR_EXIT_OK) rc = read_run(h, db, id, &run);
  xr_history_close(h);
  xr_comparison_t *c = NULL;
  if (rc == XR_EXIT_OK && xr_report_compare(base, run, tolerance, &c) != XR_OK)
    rc = xr_cli_error("replay regress", "%s", xr_last_error());
  if (rc != XR_EXIT_OK) {
    xr_report_contents_free(base);
    xr_report_contents_free(run);
    return rc;
  }
  print_side("baseline:", baseline, base);
  print_side("run:", id, run);
  if (c->by_position)
    printf("one bundle (%s): ops paired by position\n", base->bundle_hash);
  else
    printf("different bundles: ops paired by signature (name and arguments), %zu pairs\n",
           c->pair_count);
  for (size_t i = 0; i < c->pair_count; i++) {
    const xr_compare_pair_t *p = &c->pairs[i];
    if (!p->timed || p->verdict != XR_VERDICT_SLOWER) continue;
    /* The run's time over the baseline's: the inverse of compare's speed-up and interval. */
    printf("SLOWER #%lld %s %s: %.2f -> %.2f us, x%.3f the baseline's time (95%% interval "
           "x%.3g-x%.3g; threshold %.3g%%)  %s | %s\n",
           (long long)p->b->index, p->b->name, p->b->args, p->a->median_us, p->b->median_us,
           1 / p->speedup, 1 / p->hi, 1 / p->lo, p->threshold_percent,
           p->a->kernel[0] ? p->a->kernel : "-", p->b->kernel[0] ? p->b->kernel : "-");
  }
  size_t slower = c->verdicts[XR_VERDICT_SLOWER];
  printf("%zu of %zu ops timed in both runs got slower beyond %.3g%% (or an op's own noise, if "
         "larger); %zu SAME, %zu FASTER, %zu UNSURE",
         slower, c->timed_pairs, tolerance, c->verdicts[XR_VERDICT_SAME],
         c->verdicts[XR_VERDICT_FASTER], c->verdicts[XR_VERDICT_UNSURE]);
  if (c->contended_pairs) printf(" (%zu timed on a crowded host)", c->contended_pairs);
  if (c->pair_count > c->timed_pairs)
    printf("; %zu paired ops not timed in both", c->pair_count - c->timed_pairs);
  if (c->a.unmatched_count || c->b.unmatched_count)
    printf("; unpaired: %zu of the baseline's ops, %zu of the run's", c->a.unmatched_count,
           c->b.unmatched_count);
  putchar('\n');
  xr_comparison_free(c);
  xr_report_contents_free(base);
  xr_report_contents_free(run);
  return slower ? XR_EXIT_FAILED : XR_EXIT_OK;
}
