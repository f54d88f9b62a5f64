/* `replay [OPTIONS] BUNDLE`: replays every op on one or more HALs through the engine, one line
 * per op and device, a summary per device, a report per device written as the run goes, and,
 * for several HALs, the side-by-side table the engine's comparison fills. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "formats/bundle.h"
#include "replay/categories.h"
#include "replay/history.h"
#include "replay/replay.h"
#include "replay/report.h"
#include "replay/report_html.h"
#include "replay/shard.h"
#include "tools/cli.h"

static const char usage[] =
    "usage: replay [OPTIONS] BUNDLE\n"
    "  --hal=LIST          auto|cpu|opencl[:N]|cuda[:N]|hip[:N], or several separated by commas\n"
    "                      to replay each op on each and compare (default auto)\n"
    "  --warmup=N          untimed runs before timing (3)\n"
    "  --stop=iters|noise[:P]  when an op's timing stops: after --iters iterations (default),\n"
    "                      or once the batch means' relative stdev is under P% (0.5)\n"
    "  --iters=N           --stop=iters: timed iterations, at least (20)\n"
    "  --min-samples=N     --stop=noise: timed iterations, at least (10)\n"
    "  --unstable=P        an op whose noise ends above P% is flagged UNSTABLE (5)\n"
    "  --min-time=MS       keep timing until this many milliseconds of work (0)\n"
    "  --max-time=MS       per op, stop after this much timing wall time (default: none with\n"
    "                      --stop=iters, 1000 with --stop=noise)\n"
    "  --launch=eager|graph  graph: cuda/hip time N executions captured in one graph (eager)\n"
    "  --seed=N            initialisation seed (0)\n"
    "  --cache=warm|cold|both  cold flushes every cache before each timed iteration; both\n"
    "                      times warm, then cold\n"
    "  --flush-bytes=BYTES what the cold flush writes (default: twice all the device's caches)\n"
    "  --rotate=N|auto     cycle among N copies of the inputs (1); auto: enough to exceed 5x\n"
    "                      the device's largest cache\n"
    "  --check             also run the CPU reference on the same inputs; NMSE per output\n"
    "  --calibrate         first measure each device's ceilings (DRAM and cache bandwidth,\n"
    "                      compute peak per dtype with the replay's own GEMM; seconds), which\n"
    "                      the % of peak then uses\n"
    "  --peaks=FILE        take the ceilings from FILE (`replay devices --calibrate -o FILE`,\n"
    "                      or written by hand from a datasheet; docs/replay.md, \"Ceilings\")\n"
    "  --reference         replay the CPU reference kernels themselves (cpu only)\n"
    "  --init=OP:POLICY    custom initializer policy for an op (repeatable), e.g.\n"
    "                      --init=_C::paged_attention_v1:uniform "
    "--init=vllm::outplace_fused_experts:zipf:1.2\n"
    "  --report=FILE       write a .json or .csv report as the run goes (one per HAL: "
    "FILE.<hal>.json)\n"
    "  --html=FILE         at the end, the run as one HTML page (what `replay report` draws)\n"
    "  --timeline=FILE     write the run's own events as Chrome trace-event JSON (Perfetto,\n"
    "                      chrome://tracing): per device and stream, each op's first call,\n"
    "                      warm-up and every timed sample, complete after every op\n"
    "  --timeline-events=N at most N timed events per op and device in it (100)\n"
    "  --db=FILE           at the end, record the run in FILE, a SQLite history of runs that\n"
    "                      `replay history` and `replay regress` read (made when absent)\n"
    "  --dump-outputs=DIR  write each op's outputs (first execution) as op<i>_<target>.npy\n"
    "  --op-filter=TEXT    only ops whose name contains TEXT\n"
    "  --op-limit=N        at most N ops\n"
    "  --shard=K/N|auto|auto/N  only shard K (from 0) of N of those ops, balanced by recorded\n"
    "                      GPU time; auto: K and N of a Slurm job array, auto/N: K from Slurm\n"
    "                      or JOB_COMPLETION_INDEX (Kubernetes); `replay merge` joins the\n"
    "                      shards' reports (docs/fleet.md)\n"
    "  --model-config=FILE a model's config.json for layer state the bundle lacks (the expert\n"
    "                      weights, top-k, ... of vllm::moe_forward); the bundle's own win\n"
    "  --max-memory=BYTES  an op needing more memory than this (K, M, G suffixes) is unsupported;\n"
    "                      default: what the host and device have available\n"
    "  --cache-blocks=MODE paged KV caches: auto (whole unless the op would not fit, then only\n"
    "                      the blocks it references), full (whole), compact (referenced only)\n"
    "  --stop-on-error     stop at the first failed op\n"
    "  --collective-timeout=S  a collective waiting longer than S seconds for the other ranks\n"
    "                      fails and ends every rank; joining the ranks takes no longer (300)\n"
    "  --world-size-from-trace  collectives need as many ranks as their recorded group, and\n"
    "                      are unsupported, saying so, with any other number (the default)\n"
    "  --scale-collectives run collectives recorded with another group size on the ranks at\n"
    "                      hand, each keeping its message\n"
    "  -v, --verbose       print arguments, initializer policies and per-output check results\n"
    "exit: 0 all ops succeeded or unsupported, 1 some failed, 2 usage or input error,\n"
    "      3 the HAL asked for is unavailable\n";

/* "12.5": a non-negative, finite number of milliseconds. */
static bool parse_ms(const char *v, double *out) {
  char *end;
  double ms = strtod(v, &end);
  if (end == v || *end || !(ms >= 0) || !isfinite(ms)) return false;
  *out = ms;
  return true;
}

/* "iters", "noise" or "noise:P" with P a positive percentage. */
static bool parse_stop(const char *v, xr_replay_options_t *o) {
  if (!strcmp(v, "iters")) {
    o->stop = XR_STOP_ITERATIONS;
    return true;
  }
  if (strncmp(v, "noise", 5) || (v[5] && v[5] != ':')) return false;
  double percent = o->noise_percent;
  if (v[5] && (!parse_ms(v + 6, &percent) || !(percent > 0))) return false;
  o->stop = XR_STOP_NOISE;
  o->noise_percent = percent;
  return true;
}

/* The signal that interrupted the run (SIGINT, SIGTERM), 0 while none has. */
static volatile int cancel_flag;

static void on_interrupt(int sig) { cancel_flag = sig; }

/* What the side-by-side table keeps of each op on each device. */
typedef struct kept {
  bool ran; /* attempted (--op-filter and --op-limit select) */
  xr_op_outcome_t outcome;
  double median_us;
  bool compared;
  double nmse_vs_first; /* of the op's first output */
} kept_t;

typedef struct run_ctx {
  int rank; /* under a launcher; the others print only what fails in collectives */
  const xr_bundle_t *bundle;
  const char *path, *report_path, *html_path;
  const xr_replay_options_t *options;
  bool verbose, tty;
  double started_s;
  size_t device_count;
  char specs[XR_REPLAY_MAX_DEVICES][64];
  xr_report_t *reports[XR_REPLAY_MAX_DEVICES];
  xr_report_t *pages[XR_REPLAY_MAX_DEVICES]; /* the same reports in memory: --html, --db */
  xr_history_t *history;                     /* --db */
  xr_status_t report_status;
  kept_t *kept; /* op index * device_count + device, for several devices */
  xr_category_total_t categories[XR_REPLAY_MAX_DEVICES][XR_CATEGORY_COUNT];
} run_ctx_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* FILE.json for one device; FILE.<hal>.json each for several (':' becomes '-', a repeated HAL
 * gets its position too). */
static void report_path_for(const run_ctx_t *c, const xr_replay_summary_t *run, size_t d,
                            char *out, size_t n) {
  if (run->device_count == 1) {
    snprintf(out, n, "%s", c->report_path);
    return;
  }
  char tag[80];
  snprintf(tag, sizeof tag, "%s", run->devices[d].spec);
  for (char *t = tag; *t; t++)
    if (*t == ':') *t = '-';
  for (size_t k = 0; k < d; k++)
    if (!strcmp(run->devices[k].spec, run->devices[d].spec)) {
      size_t len = strlen(tag);
      snprintf(tag + len, sizeof tag - len, ".%zu", d);
      break;
    }
  const char *dot = strrchr(c->report_path, '.');
  snprintf(out, n, "%.*s.%s%s", (int)(dot - c->report_path), c->report_path, tag, dot);
}

static bool on_started(void *context, const xr_replay_summary_t *run) {
  run_ctx_t *c = context;
  c->device_count = run->device_count;
  for (size_t d = 0; d < run->device_count; d++) {
    const xr_replay_device_t *dev = &run->devices[d];
    snprintf(c->specs[d], sizeof c->specs[d], "%s", dev->spec);
    printf("== %s: %s (%s), %zu ops from %s\n", dev->spec, dev->properties.name,
           dev->properties.driver, c->bundle->op_count, c->path);
    if (c->verbose)
      printf("   profiler ranges around each op: %s%s%s\n", dev->ranges ? "" : "none (",
             dev->ranges_source, dev->ranges ? "" : ")");
    if ((c->html_path || c->history) && c->report_status == XR_OK) {
      c->report_status = xr_report_open(NULL, c->path, &c->bundle->meta, run, d, c->options,
                                        &c->pages[d]);
      if (c->report_status != XR_OK) fprintf(stderr, "replay: %s\n", xr_last_error());
    }
    if (!c->report_path || c->report_status != XR_OK) continue;
    char path[4200];
    report_path_for(c, run, d, path, sizeof path);
    c->report_status =
        xr_report_open(path, c->path, &c->bundle->meta, run, d, c->options, &c->reports[d]);
    if (c->report_status != XR_OK) fprintf(stderr, "replay: %s\n", xr_last_error());
  }
  if (run->device_count > 1) {
    c->kept = calloc(c->bundle->op_count * run->device_count + 1, sizeof *c->kept);
  }
  fflush(stdout);
  /* A report that did not open would keep nothing measured: stop before the first op. */
  return c->report_status == XR_OK;
}

/* What makes a figure doubtful, after the op's line: a rate above its ceiling, a crowded host, a
 * missed noise target, slow clocks, a graph that could not be used. */
static void print_timing_flags(const run_ctx_t *c, const xr_op_result_t *r) {
  if (r->above_ceiling[0]) printf("  ABOVE CEILING: %s", r->above_ceiling);
  if (r->contended)
    printf(
        "  CONTENDED: more runnable threads than CPUs in %d of %d batches (the time is not "
        "the kernel's own)",
        r->crowded_batches, r->batches);
  if (r->unstable)
    printf("  UNSTABLE: noise %.1f%%, above %g%% (its median moves about that much from run to "
           "run)",
           r->noise_percent, c->options->unstable_percent);
  if (c->options->stop == XR_STOP_NOISE && !r->noise_met && !r->contended)
    printf("  noise target missed (%s)", r->stop_reason ? r->stop_reason : "?");
  if (r->slow_clock_samples)
    printf("  clock under 75%% of default in %d of %d readings", r->slow_clock_samples,
           r->clock_samples);
  if (r->launch_note[0] && !c->verbose) printf("  eager: graph capture failed");
}

static void print_result(const run_ctx_t *c, const xr_op_result_t *r) {
  char shapes[512];
  xr_op_describe_args(r->op, true, shapes, sizeof shapes);
  printf("%4zu %-40s %-44s", r->index, r->op->name, shapes);
  if (c->device_count > 1) printf(" [%s]", c->specs[r->device_index]);
  if (r->outcome == XR_OP_SUCCEEDED) {
    printf(" %-22s %10.2f us", r->kernel, r->median_us);
    if (r->noise_percent >= 0)
      printf(" ±%5.1f%%", r->noise_percent);
    else
      printf("        ");
    if (r->flops > 0) printf(" %8.3f TFLOP/s", r->tflops);
    printf(" %8.2f GB/s", r->gbps);
    if (r->peak_percent >= 0)
      printf(" %5.1f%% of %s", r->peak_percent,
             !strncmp(r->peak_basis, "DRAM", 4)    ? "DRAM"
             : !strncmp(r->peak_basis, "cache", 5) ? "cache"
                                                   : "peak");
    else if (strstr(r->peak_basis, "cache"))
      printf(" in cache");
    if (r->cold_iterations) printf("  cold %.2f us", r->cold_median_us);
    if (r->trace_us >= 0)
      printf("  trace %.2f us (x%.2f)", r->trace_us, r->median_us / r->trace_us);
    if (r->ranks > 1 && r->group_ranks < r->ranks)
      printf("  %d ranks in groups of %d, busbw %.2f GB/s", r->ranks, r->group_ranks,
             r->busbw_gbps);
    else if (r->ranks > 1)
      printf("  %d ranks, busbw %.2f GB/s", r->ranks, r->busbw_gbps);
    if (r->checked) printf("  check ok (nmse %.2g)", r->output_count ? r->outputs[0].nmse : 0.0);
    if (r->checked && r->check_rows > 0)
      printf(" on the first %lld of %lld rows", (long long)r->check_rows,
             (long long)r->result_rows);
    if (r->check_note[0]) printf("  %s", r->check_note);
    if (r->cache_note[0]) printf("  %s", r->cache_note);
    print_timing_flags(c, r);
  } else {
    printf(" %s: %s",
           r->outcome == XR_OP_FAILED        ? "FAILED"
           : r->outcome == XR_OP_INTERRUPTED ? "interrupted"
                                             : "unsupported",
           r->message);
  }
  putchar('\n');
  if (c->verbose) {
    char args[4096];
    xr_op_describe_args(r->op, false, args, sizeof args);
    printf("       args: %s\n", args);
    if (r->init_policy[0]) printf("       init: %s\n", r->init_policy);
    if (r->iterations) {
      printf(
          "       %d iterations (%s, %s launch, %d input copies, %.1f ms): min %.2f  p10 %.2f  "
          "p25 %.2f  median %.2f  p75 %.2f  p90 %.2f  mean %.2f us, IQR %.2f us\n",
          r->iterations, r->stop_reason ? r->stop_reason : "-", r->launch ? r->launch : "-",
          r->rotate, r->timed_wall_ms, r->min_us, r->p10_us, r->p25_us, r->median_us, r->p75_us,
          r->p90_us, r->mean_us, r->iqr_us);
      if (r->noise_percent >= 0)
        printf(
            "       noise %.3g%% (batch means of %d, %d outliers left out)%s; host %.2f us per "
            "iteration; "
            "%.1f threads runnable on average, more than the CPUs in %d of %d batches\n",
            r->noise_percent, r->batch_size, r->outliers, r->noise_met ? ", target met" : "",
            r->host_us_per_iteration, r->runnable_mean, r->crowded_batches, r->batches);
      if (r->peak_basis[0])
        printf("       %% of peak: %s; bound: %s%s%s\n", r->peak_basis, r->bound ? r->bound : "-",
               r->above_ceiling[0] ? "; " : "", r->above_ceiling);
      if (r->clock_samples)
        printf("       clock %u MHz median, %u min (default %u), %d of %d readings under 75%%\n",
               r->clock_median_mhz, r->clock_min_mhz, r->clock_default_mhz, r->slow_clock_samples,
               r->clock_samples);
      if (r->launch_note[0]) printf("       %s\n", r->launch_note);
    }
    for (size_t k = 0; k < r->output_count && r->checked; k++)
      printf("       check %s: nmse %.3g (threshold %.1g)%s\n", r->outputs[k].target,
             r->outputs[k].nmse, r->outputs[k].threshold,
             r->outputs[k].nonfinite ? " NaN/Inf" : "");
  } else if (r->init_policy[0]) {
    printf("       init: %s\n", r->init_policy);
  }
}

/* Time by category: the replay's Σ count x median beside the trace's recorded time, and what the
 * trace spent in ops that did not run. */
static void print_categories(const char *spec, const xr_category_total_t *t) {
  bool traced = false;
  xr_category_total_t all = {0};
  for (int k = 0; k < XR_CATEGORY_COUNT; k++) {
    traced |= t[k].trace_us > 0;
    all.ops += t[k].ops;
    all.timed += t[k].timed;
    all.replay_us += t[k].replay_us;
    all.trace_us += t[k].trace_us;
    all.trace_timed_us += t[k].trace_timed_us;
  }
  if (!all.ops) return;
  printf("summary [%s]: time by category (replay: count x median over the ops timed", spec);
  printf("%s):\n", traced ? "; trace: the recorded time, of those ops and of all" : "");
  printf("  %-26s %5s %5s %12s", "category", "ops", "timed", "replay us");
  if (traced) printf(" %12s %12s %8s", "trace us", "(all ops)", "share");
  putchar('\n');
  for (int k = 0; k <= XR_CATEGORY_COUNT; k++) {
    const xr_category_total_t *c = k < XR_CATEGORY_COUNT ? &t[k] : &all;
    if (!c->ops) continue;
    printf("  %-26s %5zu %5zu %12.1f", k < XR_CATEGORY_COUNT ? xr_category_name(k) : "all",
           c->ops, c->timed, c->replay_us);
    if (traced)
      printf(" %12.1f %12.1f %7.1f%%", c->trace_timed_us, c->trace_us,
             all.trace_us > 0 ? 100 * c->trace_us / all.trace_us : 0);
    putchar('\n');
  }
  if (!traced || all.trace_us <= all.trace_timed_us) return;
  printf("summary [%s]: not run: %.1f us of the trace's %.1f us (%.1f%%):", spec,
         all.trace_us - all.trace_timed_us, all.trace_us,
         100 * (all.trace_us - all.trace_timed_us) / all.trace_us);
  for (int k = 0, first = 1; k < XR_CATEGORY_COUNT; k++) {
    double missing = t[k].trace_us - t[k].trace_timed_us;
    if (missing <= 0) continue;
    printf("%s %s %.1f us", first ? "" : ",", xr_category_name(k), missing);
    first = 0;
  }
  putchar('\n');
}

static void on_result(void *context, const xr_op_result_t *r, size_t position, size_t count) {
  run_ctx_t *c = context;
  if (c->rank > 0 && r->outcome != XR_OP_SUCCEEDED && !strcmp(r->family, "collective"))
    fprintf(stderr, "replay: rank %d: op %zu %s %s: %s\n", c->rank, r->index, r->op->name,
            xr_op_outcome_name(r->outcome), r->message); /* rank 0 says the others' cannot */
  if (c->kept) {
    kept_t *k = &c->kept[r->index * c->device_count + r->device_index];
    k->ran = true;
    k->outcome = r->outcome;
    k->median_us = r->median_us;
    k->compared = r->compared && r->output_count > 0;
    k->nmse_vs_first = k->compared ? r->outputs[0].nmse_vs_first : NAN;
  }
  bool timed = r->outcome == XR_OP_SUCCEEDED && r->iterations > 0;
  xr_category_add(c->categories[r->device_index], r->family, r->op->name, (double)r->op->count,
                  timed ? r->median_us : -1, r->trace_us);
  xr_report_t *report = c->reports[r->device_index];
  if (report && c->report_status == XR_OK && (c->report_status = xr_report_add(report, r)) != XR_OK)
    fprintf(stderr, "replay: report: %s\n", xr_last_error());
  xr_report_add(c->pages[r->device_index], r); /* in memory: cannot fail but for memory */
  if (c->tty) fputs("\r\033[K", stderr);
  print_result(c, r);
  fflush(stdout);
  bool last_device = r->device_index + 1 == c->device_count;
  if (c->tty && last_device && position + 1 < count) {
    double elapsed = now_s() - c->started_s;
    double eta = elapsed / (double)(position + 1) * (double)(count - position - 1);
    fprintf(stderr, "op %zu of %zu, %.0f s elapsed, ETA %.0f s", position + 2, count, elapsed, eta);
    fflush(stderr);
  }
}

/* The run's reports, kept in memory, as reports read back (for --html and --db). */
static int close_pages(run_ctx_t *c, const xr_replay_summary_t *s,
                       xr_report_contents_t **contents) {
  int rc = XR_EXIT_OK;
  for (size_t d = 0; d < c->device_count; d++) {
    char name[128];
    snprintf(name, sizeof name, "this run on %s", c->specs[d]);
    if (xr_report_close_contents(c->pages[d], s, name, &contents[d]) != XR_OK) {
      fprintf(stderr, "replay: %s\n", xr_last_error());
      rc = XR_EXIT_USAGE;
    }
    c->pages[d] = NULL;
  }
  return rc;
}

/* --html: the reports drawn as `replay report` draws files. */
static int write_page(run_ctx_t *c, xr_report_contents_t *const *contents) {
  if (xr_report_html_write(c->html_path, (const xr_report_contents_t *const *)contents,
                           c->device_count) != XR_OK) {
    fprintf(stderr, "replay: --html: %s\n", xr_last_error());
    return XR_EXIT_USAGE;
  }
  printf("wrote %s\n", c->html_path);
  return XR_EXIT_OK;
}

/* --db: the reports as runs of the history, one per device, in one transaction. */
static int record_run(run_ctx_t *c, xr_report_contents_t *const *contents) {
  char host[256] = "";
  if (gethostname(host, sizeof host) != 0) host[0] = '\0';
  host[sizeof host - 1] = '\0';
  int64_t ids[XR_REPLAY_MAX_DEVICES];
  if (xr_history_record(c->history, (const xr_report_contents_t *const *)contents,
                        c->device_count, host, ids) != XR_OK) {
    fprintf(stderr, "replay: %s; the run is not recorded\n", xr_last_error());
    return XR_EXIT_USAGE;
  }
  if (c->device_count == 1)
    printf("recorded run %lld in %s\n", (long long)ids[0], xr_history_path(c->history));
  else
    printf("recorded runs %lld to %lld in %s (one per HAL)\n", (long long)ids[0],
           (long long)ids[c->device_count - 1], xr_history_path(c->history));
  return XR_EXIT_OK;
}

/* Replayed vs recorded, for one device (the engine's statistics): the distribution of median /
 * trace time, said to be same-device on the model the trace ran on, cross-device on another, and
 * neither when the bundle does not record the trace's device. Nothing when no op that succeeded
 * has a recorded time. */
static void print_trace_ratio(const run_ctx_t *c, const xr_replay_device_t *dev) {
  const xr_trace_ratio_stats_t *t = &dev->replay_vs_trace;
  if (t->count == 0) return;
  const char *trace_device = c->bundle->meta.device_name;
  bool same = dev->same_device, recorded = trace_device && trace_device[0];
  printf("summary [%s]: ", dev->spec);
  if (same)
    printf("replay vs trace (same device: %s)", dev->properties.name);
  else if (recorded)
    printf("trace recorded on %s, replayed on %s: cross-device replay vs trace", trace_device,
           dev->properties.name);
  else
    printf("replay vs trace (the trace's device is not recorded; replayed on %s)",
           dev->properties.name);
  printf(": %zu ops, median ratio %.3g, geometric mean %.3g, %.1f%% within \u00b110%%\n", t->count,
         t->median, t->geomean, t->within_10_percent);
  printf("summary [%s]: worst %sratios (replay / trace):", dev->spec,
         same ? "same-device " : recorded ? "cross-device " : "");
  for (size_t k = 0; k < t->worst_count; k++)
    printf("%s #%zu %s %.3g", k ? "," : "", t->worst[k].index, t->worst[k].name, t->worst[k].ratio);
  putchar('\n');
}

static void print_side_by_side(const run_ctx_t *c) {
  size_t n = c->device_count;
  printf("\n== side by side (median us; ratio = %s time / other time; nmse of the first output "
         "vs %s)\n", c->specs[0], c->specs[0]);
  printf("%4s %-40s", "#", "op");
  for (size_t d = 0; d < n; d++) printf(" %14s", c->specs[d]);
  for (size_t d = 1; d < n; d++) printf(" %12s %10s", "ratio", "nmse");
  putchar('\n');
  for (size_t i = 0; i < c->bundle->op_count; i++) {
    const kept_t *k = &c->kept[i * n];
    if (!k[0].ran) continue;
    printf("%4zu %-40s", i, c->bundle->ops[i].name);
    for (size_t d = 0; d < n; d++) {
      if (k[d].outcome == XR_OP_SUCCEEDED) printf(" %14.2f", k[d].median_us);
      else printf(" %14s", k[d].ran ? xr_op_outcome_name(k[d].outcome) : "-");
    }
    for (size_t d = 1; d < n; d++) {
      bool both = k[0].outcome == XR_OP_SUCCEEDED && k[d].outcome == XR_OP_SUCCEEDED;
      if (both) printf(" %12.2f", k[0].median_us / k[d].median_us);
      else printf(" %12s", "-");
      if (k[d].compared && !isnan(k[d].nmse_vs_first)) printf(" %10.2g", k[d].nmse_vs_first);
      else printf(" %10s", "-");
    }
    putchar('\n');
  }
}

/* --init=OP:POLICY: the op name ends at the first colon that is not part of a "::" (op names
 * have namespaces, policies colons of their own: vllm::outplace_fused_experts:zipf:1.2). The
 * argument is cut there in place. false when there is no such colon or either part is empty. */
static bool split_init(char *v, xr_init_override_t *out) {
  for (char *c = v; *c; c++) {
    if (c[0] == ':' && c[1] == ':') {
      c++;
      continue;
    }
    if (c[0] != ':') continue;
    if (c == v || !c[1]) return false;
    *c = '\0';
    *out = (xr_init_override_t){.op = v, .policy = c + 1};
    return true;
  }
  return false;
}

/* MPI_Init and NCCL's set-up cannot be cancelled, and a rank that never joins holds the others
 * there for good: a watchdog ends this rank (and so the launcher's job) once joining outlasts
 * the collective timeout. */
typedef struct {
  pthread_mutex_t lock;
  pthread_cond_t joined_cv;
  bool joined;
  double timeout_s;
  const xr_hal_launch_t *launch;
} join_watch_t;

static void *watch_join(void *arg) {
  join_watch_t *w = arg;
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  double end = deadline.tv_sec + deadline.tv_nsec * 1e-9 + w->timeout_s;
  deadline.tv_sec = (time_t)end;
  deadline.tv_nsec = (long)((end - (double)deadline.tv_sec) * 1e9);
  pthread_mutex_lock(&w->lock);
  int waited = 0;
  while (!w->joined && waited == 0)
    waited = pthread_cond_timedwait(&w->joined_cv, &w->lock, &deadline);
  if (!w->joined) {
    fprintf(stderr,
            "replay: rank %d of %d waited %.0f s for the other ranks to join (%s), in vain: one "
            "of them stopped or never started; ending this rank\n",
            w->launch->rank, w->launch->size, w->timeout_s, w->launch->launcher);
    _exit(XR_EXIT_UNAVAILABLE);
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

static xr_status_t join_ranks(xr_hal_device_t *device, const xr_hal_launch_t *launch,
                              double timeout_s, xr_hal_comm_t **out_comm) {
  join_watch_t w = {.lock = PTHREAD_MUTEX_INITIALIZER,
                    .joined_cv = PTHREAD_COND_INITIALIZER,
                    .timeout_s = timeout_s,
                    .launch = launch};
  pthread_t watchdog;
  bool watching = pthread_create(&watchdog, NULL, watch_join, &w) == 0;
  xr_status_t st = xr_hal_comm_create(device, timeout_s * 1000, out_comm);
  if (watching) {
    pthread_mutex_lock(&w.lock);
    w.joined = true;
    pthread_cond_signal(&w.joined_cv);
    pthread_mutex_unlock(&w.lock);
    pthread_join(watchdog, NULL);
  }
  return st;
}

/* Opens the devices of --hal, once: the run takes them (o->devices). Under mpirun, srun or
 * torchrun, also joins the other ranks for the bundle's collectives on the first of them, which
 * chooses the transport (MPI for cpu and opencl, NCCL / RCCL for cuda and hip, which alone join
 * torchrun's ranks), and a bare --hal=cuda or hip gives each rank of a node its own GPU. Started
 * otherwise, the replay runs alone, and collectives of larger groups are unsupported. */
static int open_devices(xr_replay_options_t *o, double timeout_s, xr_replay_devices_t *devices,
                        xr_hal_comm_t **out_comm) {
  xr_hal_launch_t launch;
  xr_hal_launch_detect(&launch);
  /* torchrun's world of one needs no communicator; its larger ones need NCCL / RCCL. */
  bool ranks = launch.launched && (launch.mpi || launch.size > 1);
  xr_status_t st = xr_replay_devices_open(o->device, ranks ? launch.local_rank : -1, devices);
  if (st != XR_OK) {
    fprintf(stderr, "replay: --hal=%s: %s\n", o->device ? o->device : "auto", xr_last_error());
    return st == XR_UNAVAILABLE || st == XR_NOT_FOUND ? XR_EXIT_UNAVAILABLE : XR_EXIT_USAGE;
  }
  o->devices = devices;
  if (!ranks) return XR_EXIT_OK;
  if ((st = join_ranks(devices->devices[0], &launch, timeout_s, out_comm)) != XR_OK) {
    fprintf(stderr, "replay: rank %d of %d (%s): %s\n", launch.rank, launch.size, launch.launcher,
            xr_last_error());
    return st == XR_UNAVAILABLE || st == XR_NOT_FOUND ? XR_EXIT_UNAVAILABLE : XR_EXIT_USAGE;
  }
  if (xr_hal_comm_rank(*out_comm) == 0)
    printf("== %d ranks (%s), %s\n", xr_hal_comm_size(*out_comm), launch.launcher,
           xr_hal_comm_transport(*out_comm));
  return XR_EXIT_OK;
}

int xr_cmd_replay(int argc, char **argv) {
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  const char *path = NULL, *report_path = NULL, *html_path = NULL, *dump = NULL,
             *model_config = NULL, *shard_spec = NULL, *db_path = NULL;
  bool verbose = false;
  double collective_timeout_s = 300;
  xr_init_override_t inits[argc > 0 ? argc : 1];
  size_t init_count = 0;
  static const char *const options[] = {
      "--hal=",      "--warmup=",         "--iters=",         "--min-time=",
      "--max-time=", "--stop=",           "--min-samples=",   "--launch=",
      "--unstable=",
      "--seed=",     "--cache=",          "--flush-bytes=",   "--rotate=",
      "--check",     "--calibrate",       "--peaks=",         "--reference",
      "--init=",     "--report=",         "--timeline=",      "--timeline-events=",
      "--db=",
      "--html=",     "--dump-outputs=",   "--op-filter=",     "--op-limit=",
      "--shard=",    "--model-config=",   "--max-memory=",    "--cache-blocks=",
      "--stop-on-error",
      "--collective-timeout=",            "--world-size-from-trace",
      "--scale-collectives",              "-v",               "--verbose",
      "-h",          "--help",            NULL};
  static const char bytes_form[] = "not a positive byte count (1048576, 64K, 512M, 24G)";
  xr_cli_args_t a;
  xr_cli_args_init(&a, "replay", options, argc, argv);
  a.help = "replay --help-run";
  for (xr_cli_token_t t; (t = xr_cli_next(&a)) != XR_CLI_END;) {
    if (t == XR_CLI_BAD) return XR_EXIT_USAGE;
    if (t == XR_CLI_OPERAND) {
      if (path)
        return xr_cli_error("replay", "one bundle at a time (%s, then %s)", path, a.arg);
      path = a.arg;
      continue;
    }
    char *v = a.value;
    long long n;
    uint64_t bytes;
    bool ok = true;
    if (xr_cli_is(&a, "--hal")) o.device = v;
    else if (xr_cli_is(&a, "--warmup")) {
      if ((ok = xr_cli_int_value(&a, 0, &n))) o.warmup = (int)n;
    } else if (xr_cli_is(&a, "--iters")) {
      if ((ok = xr_cli_int_value(&a, 1, &n))) o.iters = (int)n;
    } else if (xr_cli_is(&a, "--min-time")) {
      if (!parse_ms(v, &o.min_time_ms))
        return xr_cli_bad_value(&a, "not a number of milliseconds (0 or more)");
    } else if (xr_cli_is(&a, "--max-time")) {
      if (!parse_ms(v, &o.max_time_ms))
        return xr_cli_bad_value(&a, "not a number of milliseconds (0 or more)");
    } else if (xr_cli_is(&a, "--stop")) {
      if (!parse_stop(v, &o))
        return xr_cli_bad_value(&a, "takes iters, noise or noise:P (P a percentage above 0)");
    } else if (xr_cli_is(&a, "--unstable")) {
      char *end;
      o.unstable_percent = strtod(v, &end);
      if (*end || !(o.unstable_percent > 0) || !isfinite(o.unstable_percent))
        return xr_cli_bad_value(&a, "not a percentage above 0");
    } else if (xr_cli_is(&a, "--min-samples")) {
      if ((ok = xr_cli_int_value(&a, 1, &n))) o.min_samples = (int)n;
    } else if (xr_cli_is(&a, "--launch")) {
      if (strcmp(v, "eager") && strcmp(v, "graph"))
        return xr_cli_bad_value(&a, "takes eager or graph");
      o.launch = !strcmp(v, "graph") ? XR_LAUNCH_GRAPH : XR_LAUNCH_EAGER;
    } else if (xr_cli_is(&a, "--seed")) {
      if ((ok = xr_cli_int_value(&a, 0, &n))) o.seed = (uint64_t)n;
    } else if (xr_cli_is(&a, "--cache")) {
      if (strcmp(v, "warm") && strcmp(v, "cold") && strcmp(v, "both"))
        return xr_cli_bad_value(&a, "takes warm, cold or both");
      o.cache = !strcmp(v, "cold")   ? XR_CACHE_COLD
                : !strcmp(v, "both") ? XR_CACHE_BOTH
                                     : XR_CACHE_WARM;
    } else if (xr_cli_is(&a, "--flush-bytes")) {
      if (!xr_cli_parse_bytes(v, &bytes)) return xr_cli_bad_value(&a, bytes_form);
      o.flush_bytes = bytes;
    } else if (xr_cli_is(&a, "--rotate")) {
      if (!strcmp(v, "auto")) o.rotate = XR_ROTATE_AUTO;
      else if (xr_cli_parse_int(v, 1, &n)) o.rotate = (int)n;
      else return xr_cli_bad_value(&a, "takes auto or a whole number of at least 1");
    } else if (xr_cli_is(&a, "--check")) o.check = true;
    else if (xr_cli_is(&a, "--calibrate")) o.calibrate = true;
    else if (xr_cli_is(&a, "--peaks")) o.peaks_file = v;
    else if (xr_cli_is(&a, "--reference")) o.choice = XR_KERNEL_REFERENCE;
    else if (xr_cli_is(&a, "--init")) {
      char given[512];
      snprintf(given, sizeof given, "%s", v); /* split_init cuts v in place */
      if (!split_init(v, &inits[init_count]))
        return xr_cli_error("replay", "--init=%s: takes OP:POLICY, an op name and a policy "
                            "after a single colon (_C::paged_attention_v1:uniform)", given);
      init_count++;
    } else if (xr_cli_is(&a, "--report")) report_path = v;
    else if (xr_cli_is(&a, "--timeline")) o.timeline = v;
    else if (xr_cli_is(&a, "--timeline-events")) {
      if ((ok = xr_cli_int_value(&a, 0, &n))) o.timeline_events = n > INT_MAX ? INT_MAX : (int)n;
    } else if (xr_cli_is(&a, "--html")) html_path = v;
    else if (xr_cli_is(&a, "--db")) db_path = v;
    else if (xr_cli_is(&a, "--dump-outputs")) dump = v;
    else if (xr_cli_is(&a, "--op-filter")) o.op_filter = v;
    else if (xr_cli_is(&a, "--op-limit")) {
      if ((ok = xr_cli_int_value(&a, 0, &n))) o.op_limit = n;
    } else if (xr_cli_is(&a, "--shard")) shard_spec = v;
    else if (xr_cli_is(&a, "--stop-on-error")) o.stop_on_error = true;
    else if (xr_cli_is(&a, "--collective-timeout")) {
      if (!parse_ms(v, &collective_timeout_s) || !(collective_timeout_s > 0))
        return xr_cli_bad_value(&a, "not a number of seconds above 0");
    } else if (xr_cli_is(&a, "--scale-collectives")) o.scale_collectives = true;
    else if (xr_cli_is(&a, "--world-size-from-trace")) o.scale_collectives = false;
    else if (xr_cli_is(&a, "--model-config")) model_config = v;
    else if (xr_cli_is(&a, "--max-memory")) {
      if (!xr_cli_parse_bytes(v, &bytes)) return xr_cli_bad_value(&a, bytes_form);
      o.max_memory_bytes = bytes;
    } else if (xr_cli_is(&a, "--cache-blocks")) {
      int mode;
      if (!xr_cli_parse_cache_blocks(v, &mode)) return xr_cli_bad_value(&a, XR_CLI_CACHE_BLOCKS_FORM);
      o.cache_blocks = (xr_cache_blocks_t)mode;
    } else if (xr_cli_is(&a, "-v") || xr_cli_is(&a, "--verbose")) verbose = true;
    else if (xr_cli_is(&a, "-h") || xr_cli_is(&a, "--help")) {
      fputs(usage, stdout);
      return XR_EXIT_OK;
    }
    if (!ok) return XR_EXIT_USAGE;
  }
  if (!path)
    return xr_cli_error("replay", "BUNDLE is required (`replay --help-run` lists the options)");
  if (o.calibrate && o.peaks_file)
    return xr_cli_error("replay", "--calibrate and --peaks: measure now or take the saved "
                                  "figures, not both");
  if (xr_replay_options_check(&o) != XR_OK) { /* before loading the bundle */
    fprintf(stderr, "%s\n", xr_last_error());
    return XR_EXIT_USAGE;
  }
  uint32_t shard_index = 0, shard_count = 0;
  if (shard_spec &&
      xr_cli_shard_parse("replay", shard_spec, &shard_index, &shard_count) != XR_EXIT_OK)
    return XR_EXIT_USAGE;
  o.init_overrides = inits;
  o.init_override_count = init_count;
  char pbuf[4096], rbuf[4096], dbuf[4096], hbuf[4096], tbuf[4096];
  if (html_path) html_path = xr_cli_path(html_path, hbuf, sizeof hbuf);
  if (o.timeline) o.timeline = xr_cli_path(o.timeline, tbuf, sizeof tbuf);
  path = xr_cli_path(path, pbuf, sizeof pbuf);
  if (report_path) {
    report_path = xr_cli_path(report_path, rbuf, sizeof rbuf);
    const char *dot = strrchr(report_path, '.');
    if (!dot || (strcmp(dot, ".json") && strcmp(dot, ".csv"))) {
      fprintf(stderr, "replay: --report=%s: a report is .json or .csv\n", report_path);
      return XR_EXIT_USAGE;
    }
  }
  if (dump) o.dump_dir = xr_cli_path(dump, dbuf, sizeof dbuf);

  xr_bundle_t *b;
  int loaded = xr_cli_load_bundle("replay", path, model_config, &b);
  if (loaded != XR_EXIT_OK) return loaded;
  if (xr_cli_check_filter("replay", path, b, &o) != XR_EXIT_OK) {
    xr_bundle_destroy(b);
    return XR_EXIT_USAGE;
  }
  xr_shard_t *shard = NULL;
  if (shard_spec &&
      xr_cli_shard_create("replay", b, &o, shard_index, shard_count, &shard) != XR_EXIT_OK) {
    xr_bundle_destroy(b);
    return XR_EXIT_USAGE;
  }
  o.shard = shard;
  /* A history that cannot take the run is said before the run, not after it. */
  char ybuf[4096];
  xr_history_t *history = NULL;
  if (db_path &&
      xr_history_open(xr_cli_path(db_path, ybuf, sizeof ybuf), true, &history) != XR_OK) {
    xr_shard_destroy(shard);
    xr_bundle_destroy(b);
    return xr_cli_error("replay", "%s", xr_last_error());
  }
  xr_hal_comm_t *comm = NULL;
  xr_replay_devices_t devices;
  int opened = open_devices(&o, collective_timeout_s, &devices, &comm);
  if (opened != XR_EXIT_OK) {
    xr_history_close(history);
    xr_replay_devices_close(&devices);
    xr_shard_destroy(shard);
    xr_bundle_destroy(b);
    return opened;
  }
  if (comm && xr_hal_comm_rank(comm) > 0) {
    /* Rank 0 reports for all: the others' medians reach it through the engine. */
    report_path = html_path = NULL;
    o.timeline = NULL;
    xr_history_close(history);
    history = NULL;
    if (!freopen("/dev/null", "w", stdout)) return XR_EXIT_FAILED;
  }
  o.comm = comm;
  o.cancel = &cancel_flag;
  struct sigaction sa = {.sa_handler = on_interrupt};
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  run_ctx_t ctx = {.rank = comm ? xr_hal_comm_rank(comm) : 0,
                   .bundle = b,
                   .path = path,
                   .report_path = report_path,
                   .html_path = html_path,
                   .history = history,
                   .options = &o,
                   .verbose = verbose,
                   .tty = isatty(2),
                   .started_s = now_s()};
  xr_replay_observer_t observer = {.started = on_started, .result = on_result, .context = &ctx};
  xr_replay_summary_t s;
  xr_status_t st = xr_replay_run(b, &o, &observer, &s);
  if (ctx.tty) fputs("\r\033[K", stderr);
  int rc = XR_EXIT_OK;
  if (st != XR_OK) {
    /* A device's problem names --hal; the others (a peaks file, the timeline) their file. */
    bool device = st == XR_UNAVAILABLE || st == XR_NOT_FOUND;
    if (device) fprintf(stderr, "replay: --hal=%s: %s\n", o.device, xr_last_error());
    else fprintf(stderr, "replay: %s\n", xr_last_error());
    rc = device ? XR_EXIT_UNAVAILABLE : XR_EXIT_USAGE;
  }
  for (size_t d = 0; d < ctx.device_count; d++) {
    if (xr_report_close(ctx.reports[d], st == XR_OK ? &s : NULL) != XR_OK)
      fprintf(stderr, "replay: %s\n", xr_last_error());
    if (st != XR_OK) continue;
    const xr_replay_device_t *dev = &s.devices[d];
    if (dev->contended || dev->unstable)
      printf("summary [%s]: timings to doubt: %zu CONTENDED, %zu UNSTABLE\n", dev->spec,
             dev->contended, dev->unstable);
    printf("summary [%s]: %zu of %zu ops attempted: %zu succeeded, %zu failed, %zu unsupported",
           dev->spec, s.attempted, s.total, dev->succeeded, dev->failed, dev->unsupported);
    if (dev->interrupted) printf(", %zu interrupted", dev->interrupted);
    printf("%s\n", s.cancelled ? " (interrupted)" : "");
    if (s.checked) {
      printf("summary [%s]: --check: the reference took %.1f ms", dev->spec, dev->reference_ms);
      if (dev->reference_peak_bytes > 0)
        printf(", at most %.1f MiB more resident memory", dev->reference_peak_bytes / 1048576.0);
      if (dev->unchecked)
        printf("; %zu op%s not checked (too large, each says why)", dev->unchecked,
               dev->unchecked == 1 ? "" : "s");
      putchar('\n');
    }
    if (s.trace_total_us > 0)
      printf("summary [%s]: the ops that ran cover %.1f%% of the source trace's GPU time "
             "(%.1f of %.1f us)\n",
             dev->spec, 100.0 * dev->trace_covered_us / s.trace_total_us, dev->trace_covered_us,
             s.trace_total_us);
    print_trace_ratio(&ctx, dev);
    print_categories(dev->spec, ctx.categories[d]);
    if (dev->failed) rc = XR_EXIT_FAILED;
  }
  if (st == XR_OK && ctx.kept) print_side_by_side(&ctx);
  if (st == XR_OK && (html_path || history) && ctx.report_status == XR_OK && ctx.device_count) {
    xr_report_contents_t *contents[XR_REPLAY_MAX_DEVICES] = {0};
    int closed = close_pages(&ctx, &s, contents);
    int page = closed == XR_EXIT_OK && html_path ? write_page(&ctx, contents) : closed;
    int recorded = closed == XR_EXIT_OK && history ? record_run(&ctx, contents) : closed;
    if (page != XR_EXIT_OK || recorded != XR_EXIT_OK) rc = XR_EXIT_USAGE;
    for (size_t d = 0; d < ctx.device_count; d++) xr_report_contents_free(contents[d]);
  }
  for (size_t d = 0; d < ctx.device_count; d++) xr_report_close(ctx.pages[d], NULL);
  xr_history_close(history);
  if (ctx.report_status != XR_OK) rc = XR_EXIT_USAGE;
  free(ctx.kept);
  xr_shard_destroy(shard);
  xr_bundle_destroy(b);
  if (cancel_flag) {
    /* Interrupted: the shell's code for the signal, once the reports are whole. */
    if (ctx.report_status == XR_OK)
      fprintf(stderr,
              "replay: interrupted (%s): every op that finished is reported, the one in progress "
              "as interrupted\n",
              cancel_flag == SIGTERM ? "SIGTERM" : "SIGINT");
    rc = 128 + cancel_flag;
  }
  if (comm && xr_hal_comm_status(comm) != XR_OK) {
    /* The other ranks may wait in a collective forever: end them all, reports written. */
    fprintf(stderr, "replay: rank %d: %s; ending every rank\n", xr_hal_comm_rank(comm),
            xr_last_error());
    fflush(NULL);
    xr_hal_comm_abort(comm, XR_EXIT_FAILED);
  }
  xr_hal_comm_destroy(comm);
  xr_replay_devices_close(&devices);
  return rc;
}
