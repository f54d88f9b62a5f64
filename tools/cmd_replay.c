/* `replay [OPTIONS] BUNDLE`: replays every op on one or more HALs, one line per op, a summary,
 * a report written as the run goes, and a side-by-side comparison for several HALs. */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "formats/bundle.h"
#include "kernels/dtype.h"
#include "replay/replay.h"
#include "replay/report.h"
#include "tools/cli.h"

static const char usage[] =
    "usage: replay [OPTIONS] BUNDLE\n"
    "  --hal=LIST          auto|cpu|opencl[:N]|cuda[:N]|hip[:N], or several separated by commas\n"
    "                      to replay each op on each and compare (default auto)\n"
    "  --warmup=N          untimed runs before timing (3)\n"
    "  --iters=N           timed iterations, at least (20)\n"
    "  --min-time=MS       keep timing until this many milliseconds of work (0)\n"
    "  --seed=N            initialisation seed (0)\n"
    "  --cache=warm|cold   cold flushes the last-level cache before every timed iteration\n"
    "  --rotate=N          cycle among N copies of the inputs (1)\n"
    "  --check             also run the CPU reference on the same inputs; NMSE per output\n"
    "  --reference         replay the CPU reference kernels themselves (cpu only)\n"
    "  --init=OP:POLICY    custom initializer policy for an op (repeatable), e.g.\n"
    "                      --init=_C::paged_attention_v1:uniform --init=vllm::outplace_fused_experts:zipf:1.2\n"
    "  --report=FILE       write a .json or .csv report as the run goes\n"
    "  --dump-outputs=DIR  write each op's outputs (first execution) as op<i>_<target>.npy\n"
    "  --op-filter=TEXT    only ops whose name contains TEXT\n"
    "  --op-limit=N        at most N ops\n"
    "  --stop-on-error     stop at the first failed op\n"
    "  -v, --verbose       print arguments, initializer policies and per-output check results\n"
    "exit: 0 all ops succeeded or unsupported, 1 some failed, 2 usage or input error,\n"
    "      3 the HAL asked for is unavailable\n";

static volatile int cancel_flag;

static void on_sigint(int sig) {
  (void)sig;
  cancel_flag = 1;
}

#define MAX_HALS 8

/* What the comparison table keeps of each op's result on each HAL. */
typedef struct kept {
  xr_op_outcome_t outcome;
  double median_us;
  char kernel[64];
  bool has_output;
  char target[64];  /* the op's first output, compared across HALs */
  xr_dtype_t dtype;
} kept_t;

typedef struct run_ctx {
  const char *hal;
  bool verbose, tty;
  xr_report_t *report;
  double started;
  kept_t *kept;            /* per op index, for the comparison */
  xr_status_t report_status;
} run_ctx_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void on_result(void *context, const xr_op_result_t *r, size_t position, size_t count) {
  run_ctx_t *c = context;
  if (c->kept) {
    c->kept[r->index].outcome = r->outcome;
    c->kept[r->index].median_us = r->median_us;
    snprintf(c->kept[r->index].kernel, sizeof c->kept[r->index].kernel, "%s", r->kernel);
    c->kept[r->index].has_output = r->output_count > 0;
    if (r->output_count > 0) {
      snprintf(c->kept[r->index].target, sizeof c->kept[r->index].target, "%s", r->outputs[0].target);
      c->kept[r->index].dtype = r->outputs[0].dtype;
    }
  }
  if (c->report && c->report_status == XR_OK) c->report_status = xr_report_add(c->report, r);
  if (c->tty) fputs("\r\033[K", stderr);
  char shapes[512];
  xr_op_describe_args(r->op, true, shapes, sizeof shapes);
  printf("%4zu %-40s %-44s", r->index, r->op->name, shapes);
  if (r->outcome == XR_OP_SUCCEEDED) {
    printf(" %-22s %10.2f us", r->kernel, r->median_us);
    if (r->compute_bound || r->flops > 0) printf(" %8.3f TFLOP/s", r->tflops);
    printf(" %8.2f GB/s", r->gbps);
    if (r->peak_percent > 0) printf(" %5.1f%% peak", r->peak_percent);
    if (r->trace_us >= 0) printf("  trace %.2f us (x%.2f)", r->trace_us, r->median_us / r->trace_us);
    if (r->checked) printf("  check ok (nmse %.2g)", r->output_count ? r->outputs[0].nmse : 0.0);
  } else {
    printf(" %s: %s", r->outcome == XR_OP_FAILED ? "FAILED" : "unsupported", r->message);
  }
  putchar('\n');
  if (c->verbose) {
    char args[4096];
    xr_op_describe_args(r->op, false, args, sizeof args);
    printf("       args: %s\n", args);
    if (r->init_policy[0]) printf("       init: %s\n", r->init_policy);
    if (r->iterations)
      printf("       %d iterations: min %.2f  p10 %.2f  median %.2f  mean %.2f  p90 %.2f us\n",
             r->iterations, r->min_us, r->p10_us, r->median_us, r->mean_us, r->p90_us);
    for (size_t k = 0; k < r->output_count && r->checked; k++)
      printf("       check %s: nmse %.3g (threshold %.1g)%s\n", r->outputs[k].target,
             r->outputs[k].nmse, r->outputs[k].threshold,
             r->outputs[k].nonfinite ? " NaN/Inf" : "");
  } else if (r->init_policy[0]) {
    printf("       init: %s\n", r->init_policy);
  }
  fflush(stdout);
  if (c->tty && position + 1 < count) {
    double elapsed = now_s() - c->started;
    double eta = elapsed / (double)(position + 1) * (double)(count - position - 1);
    fprintf(stderr, "[%s] op %zu of %zu, %.0f s elapsed, ETA %.0f s", c->hal, position + 2, count,
            elapsed, eta);
    fflush(stderr);
  }
}

/* NMSE between two dumped .npy outputs (as doubles); NAN when they cannot be compared. */
static double npy_nmse(const char *a_path, const char *b_path, xr_dtype_t dtype) {
  xr_npy_t a, b;
  if (xr_npy_load(a_path, &a) != XR_OK) return NAN;
  if (xr_npy_load(b_path, &b) != XR_OK) {
    xr_npy_free(&a);
    return NAN;
  }
  double num = 0, den = 0;
  if (a.numel != b.numel || a.item_size != b.item_size) {
    num = NAN;
  } else {
    for (int64_t i = 0; i < a.numel; i++) {
      double x = xr_load_element(a.data, dtype, i), y = xr_load_element(b.data, dtype, i);
      num += (x - y) * (x - y);
      den += y * y;
    }
  }
  xr_npy_free(&a);
  xr_npy_free(&b);
  return den > 0 ? num / den : num;
}

/* Op `index`'s dump of output `target` in `dir` ("op3_return0.npy"), written into out; false
 * when there is none. */
static bool dump_path(const char *dir, size_t index, const char *target, char *out, size_t n) {
  snprintf(out, n, "%.3800s/op%zu_%.64s.npy", dir, index, target);
  return access(out, R_OK) == 0;
}

static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%.3800s/%.255s", dir, e->d_name);
    remove(path);
  }
  closedir(d);
  rmdir(dir);
}

static bool parse_int(const char *s, long long lo, long long *out) {
  char *end;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || v < lo) return false;
  *out = v;
  return true;
}

int xr_cmd_replay(int argc, char **argv) {
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.calibrate = true;
  const char *hal_list = "auto", *path = NULL, *report_path = NULL, *dump = NULL;
  bool verbose = false;
  char inits[4096] = "";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = strchr(a, '=') ? strchr(a, '=') + 1 : NULL;
    long long n;
    /* Accept "--flag value" as well as "--flag=value" for flags that take a value. */
    static const char *const valued[] = {"--hal", "--warmup", "--iters", "--min-time", "--seed",
                                         "--cache", "--rotate", "--init", "--report",
                                         "--dump-outputs", "--op-filter", "--op-limit", NULL};
    for (const char *const *f = valued; *f && !v; f++)
      if (!strcmp(a, *f) && i + 1 < argc) v = argv[++i];
#define IS(flag) (!strncmp(a, flag, strlen(flag)) && (a[strlen(flag)] == '=' || a[strlen(flag)] == '\0'))
    if (IS("--hal") && v) hal_list = v;
    else if (IS("--warmup") && v && parse_int(v, 0, &n)) o.warmup = (int)n;
    else if (IS("--iters") && v && parse_int(v, 1, &n)) o.iters = (int)n;
    else if (IS("--min-time") && v && atof(v) >= 0) o.min_time_ms = atof(v);
    else if (IS("--seed") && v && parse_int(v, 0, &n)) o.seed = (uint64_t)n;
    else if (IS("--cache") && v && (!strcmp(v, "warm") || !strcmp(v, "cold")))
      o.cache = !strcmp(v, "cold") ? XR_CACHE_COLD : XR_CACHE_WARM;
    else if (IS("--rotate") && v && parse_int(v, 1, &n)) o.rotate = (int)n;
    else if (!strcmp(a, "--check")) o.check = true;
    else if (!strcmp(a, "--reference")) o.choice = XR_KERNEL_REFERENCE;
    else if (IS("--init") && v && strchr(v, ':')) {
      size_t len = strlen(inits);
      snprintf(inits + len, sizeof inits - len, "%s%s", len ? ";" : "", v);
    } else if (IS("--report") && v) report_path = v;
    else if (IS("--dump-outputs") && v) dump = v;
    else if (IS("--op-filter") && v) o.op_filter = v;
    else if (IS("--op-limit") && v && parse_int(v, 0, &n)) o.op_limit = n;
    else if (!strcmp(a, "--stop-on-error")) o.stop_on_error = true;
    else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) verbose = true;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(usage, stdout);
      return XR_EXIT_OK;
    }
    else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "replay: bad option %s%s%s\n%s", a, v && !strchr(a, '=') ? " " : "",
              v && !strchr(a, '=') ? v : "", usage);
      return XR_EXIT_USAGE;
    } else if (!path) path = a;
    else {
      fprintf(stderr, "replay: one bundle at a time\n%s", usage);
      return XR_EXIT_USAGE;
    }
#undef IS
  }
  if (!path) {
    fputs(usage, stderr);
    return XR_EXIT_USAGE;
  }
  if (inits[0]) o.init_overrides = inits;
  char pbuf[4096], rbuf[4096], dbuf[4096];
  path = xr_cli_path(path, pbuf, sizeof pbuf);
  if (report_path) report_path = xr_cli_path(report_path, rbuf, sizeof rbuf);
  if (dump) dump = xr_cli_path(dump, dbuf, sizeof dbuf);

  xr_bundle_t *b;
  if (xr_bundle_load(path, &b) != XR_OK) {
    fprintf(stderr, "replay: %s\n", xr_last_error());
    return XR_EXIT_USAGE;
  }

  const char *hals[MAX_HALS];
  char hal_copy[512];
  snprintf(hal_copy, sizeof hal_copy, "%s", hal_list);
  int hal_count = 0;
  for (char *save = NULL, *h = strtok_r(hal_copy, ",", &save); h && hal_count < MAX_HALS;
       h = strtok_r(NULL, ",", &save))
    hals[hal_count++] = h;
  if (hal_count == 0) {
    fprintf(stderr, "replay: --hal is empty\n");
    xr_bundle_destroy(b);
    return XR_EXIT_USAGE;
  }

  o.cancel = &cancel_flag;
  struct sigaction sa = {.sa_handler = on_sigint};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  kept_t *kept[MAX_HALS] = {0};
  char dump_dirs[MAX_HALS][4096];
  int rc = XR_EXIT_OK;
  for (int h = 0; h < hal_count && !cancel_flag; h++) {
    xr_replay_options_t oh = o;
    oh.device = hals[h];
    if (hal_count > 1) {
      kept[h] = calloc(b->op_count ? b->op_count : 1, sizeof(kept_t));
      for (size_t i = 0; kept[h] && i < b->op_count; i++) kept[h][i].outcome = XR_OP_UNSUPPORTED;
      /* Each HAL dumps its outputs so that they can be compared with the first one's. */
      snprintf(dump_dirs[h], sizeof dump_dirs[h], "%s/xreplay-compare-XXXXXX",
               getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
      if (!mkdtemp(dump_dirs[h])) dump_dirs[h][0] = '\0';
      oh.dump_dir = dump_dirs[h][0] ? dump_dirs[h] : NULL;
    } else {
      oh.dump_dir = dump;
    }
    xr_hal_device_t *probe;
    xr_hal_device_properties_t props = {0};
    if (xr_hal_device_create(hals[h], &probe) != XR_OK) {
      fprintf(stderr, "replay: --hal=%s: %s\n", hals[h], xr_last_error());
      rc = XR_EXIT_UNAVAILABLE;
      break;
    }
    xr_hal_device_properties(probe, &props);
    xr_hal_device_destroy(probe);
    printf("== %s: %s (%s), %zu ops from %s\n", hals[h], props.name, props.driver, b->op_count, path);

    run_ctx_t ctx = {.hal = hals[h], .verbose = verbose, .tty = isatty(2), .started = now_s(),
                     .kept = kept[h]};
    if (report_path) {
      char rp[4200];
      /* Several HALs: one report each, named after the HAL (r.json -> r.cpu.json). */
      if (hal_count > 1) {
        const char *dot = strrchr(report_path, '.');
        char tag[64];
        snprintf(tag, sizeof tag, "%s", hals[h]);
        for (char *t = tag; *t; t++)
          if (*t == ':') *t = '-';
        snprintf(rp, sizeof rp, "%.*s.%s%s", (int)(dot - report_path), report_path, tag, dot);
      } else {
        snprintf(rp, sizeof rp, "%s", report_path);
      }
      if (xr_report_open(rp, path, hals[h], props.name, &oh, &ctx.report) != XR_OK) {
        fprintf(stderr, "replay: %s\n", xr_last_error());
        rc = XR_EXIT_USAGE;
        break;
      }
    }
    xr_replay_summary_t s;
    xr_status_t st = xr_replay_run(b, &oh, on_result, &ctx, &s);
    if (ctx.tty) fputs("\r\033[K", stderr);
    if (st != XR_OK) {
      xr_report_close(ctx.report, NULL);
      fprintf(stderr, "replay: --hal=%s: %s\n", hals[h], xr_last_error());
      rc = st == XR_UNAVAILABLE || st == XR_NOT_FOUND ? XR_EXIT_UNAVAILABLE : XR_EXIT_USAGE;
      break;
    }
    if (ctx.report_status != XR_OK) fprintf(stderr, "replay: report: %s\n", xr_last_error());
    if (xr_report_close(ctx.report, &s) != XR_OK) fprintf(stderr, "replay: %s\n", xr_last_error());
    printf("summary [%s]: %zu of %zu ops attempted: %zu succeeded, %zu failed, %zu unsupported%s\n",
           hals[h], s.attempted, s.total, s.succeeded, s.failed, s.unsupported,
           s.cancelled ? " (interrupted)" : "");
    if (s.trace_total_us > 0)
      printf("summary [%s]: the ops that ran cover %.1f%% of the source trace's GPU time (%.1f of %.1f us)\n",
             hals[h], 100.0 * s.trace_covered_us / s.trace_total_us, s.trace_covered_us,
             s.trace_total_us);
    if (s.failed) rc = XR_EXIT_FAILED;
    if (s.failed && o.stop_on_error) break;
  }

  if (hal_count > 1 && rc != XR_EXIT_UNAVAILABLE && kept[0]) {
    printf("\n== side by side (median us; ratio = %s time / other time; nmse of the first output vs %s)\n",
           hals[0], hals[0]);
    printf("%4s %-40s", "#", "op");
    for (int h = 0; h < hal_count; h++) printf(" %14s", hals[h]);
    for (int h = 1; h < hal_count; h++) printf(" %12s %10s", "ratio", "nmse");
    putchar('\n');
    for (size_t i = 0; i < b->op_count; i++) {
      if (o.op_filter && !strstr(b->ops[i].name, o.op_filter)) continue;
      printf("%4zu %-40s", i, b->ops[i].name);
      for (int h = 0; h < hal_count; h++) {
        if (kept[h] && kept[h][i].outcome == XR_OP_SUCCEEDED) printf(" %14.2f", kept[h][i].median_us);
        else printf(" %14s", kept[h] ? xr_op_outcome_name(kept[h][i].outcome) : "-");
      }
      for (int h = 1; h < hal_count; h++) {
        bool both = kept[h] && kept[0][i].outcome == XR_OP_SUCCEEDED &&
                    kept[h][i].outcome == XR_OP_SUCCEEDED;
        if (both) printf(" %12.2f", kept[0][i].median_us / kept[h][i].median_us);
        else printf(" %12s", "-");
        /* the same output of each (its first), read as its own dtype */
        char pa[4200], pb[4200];
        double nmse = NAN;
        if (both && kept[0][i].has_output &&
            dump_path(dump_dirs[0], i, kept[0][i].target, pa, sizeof pa) &&
            dump_path(dump_dirs[h], i, kept[0][i].target, pb, sizeof pb))
          nmse = npy_nmse(pb, pa, kept[0][i].dtype);
        if (isnan(nmse)) printf(" %10s", "-");
        else printf(" %10.2g", nmse);
      }
      putchar('\n');
    }
  }
  for (int h = 0; h < hal_count; h++) {
    free(kept[h]);
    if (hal_count > 1 && dump_dirs[h][0]) remove_tree(dump_dirs[h]);
  }
  xr_bundle_destroy(b);
  if (cancel_flag) fprintf(stderr, "replay: interrupted; every op that finished is reported\n");
  return rc;
}
