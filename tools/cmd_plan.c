/* `replay plan BUNDLE`: what `replay` would run, without running it. For every op, the kernel
 * each HAL would take or why none can (xr_replay_plan: the engine's own decision), its FLOPs,
 * bytes and recorded time; then per HAL the share of the source trace's GPU time it can replay,
 * and the ops that would not run, by name, largest share first. Text, or --json. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "replay/replay.h"
#include "tools/cli.h"

static const char usage[] =
    "usage: replay plan BUNDLE [--hal=LIST] [--json] [--model-config FILE] [--op-filter TEXT]\n"
    "                   [--op-limit N] [--max-memory BYTES] [--rotate N] [--reference] [--check]\n"
    "                   [--cache-blocks auto|full|compact]\n"
    "  For every op: the kernel each HAL would take, or why none can, the op's FLOPs and bytes\n"
    "  and its recorded GPU time; then per HAL the share of the source trace's GPU time it can\n"
    "  replay, and the ops it cannot, by share. Nothing is allocated on a device, nothing runs.\n"
    "  --hal=LIST          auto|cpu|opencl[:N]|cuda[:N]|hip[:N], comma-separated (default auto);\n"
    "                      a HAL that cannot be opened is reported as unavailable\n"
    "  --json              one JSON object instead of the text\n"
    "  --check             the reference's memory too: an op whose reference would not fit\n"
    "                      runs unchecked, and its line says what the reference needs\n"
    "  --model-config, --op-filter, --op-limit, --max-memory, --rotate, --reference,\n"
    "  --cache-blocks      as for `replay` (`replay --help-run`); they change what would run\n"
    "exit: 0 planned, 2 usage or input error, 3 no HAL asked for is available\n";

/* The recorded GPU time of all the op's calls, 0 when none (what the coverage adds). */
static double op_trace_us(const xr_op_t *op) {
  return op->timing && op->timing->gpu_time_us > 0 ? op->timing->gpu_time_us : 0;
}

static double percent(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0; }

/* 1234567 -> "1.23M": FLOPs and bytes at a glance. */
static const char *si(double v, char *buf, size_t n) {
  static const char *const suffix[] = {"", "K", "M", "G", "T", "P"};
  int k = 0;
  while (v >= 1000 && k < 5) v /= 1000, k++;
  snprintf(buf, n, k ? "%.3g%s" : "%.0f%s", v, suffix[k]);
  return buf;
}

/* The ops that would not run on one HAL, gathered by name. */
typedef struct missing {
  const char *name;
  size_t ops;
  double trace_us;
  const char *outcome; /* of the first such op: "unsupported" or "failed" */
  const char *reason;  /* the first such op's sentence */
  size_t other_reasons;
} missing_t;

static int by_share(const void *a, const void *b) {
  const missing_t *x = a, *y = b;
  if (x->trace_us != y->trace_us) return x->trace_us < y->trace_us ? 1 : -1;
  return strcmp(x->name, y->name);
}

/* Fills `out` (room for plan->attempted) for device d; returns how many names. */
static size_t gather_missing(const xr_replay_plan_t *plan, size_t d, missing_t *out) {
  size_t n = 0;
  for (size_t k = 0; k < plan->attempted; k++) {
    const xr_plan_entry_t *e = &plan->entries[k * plan->device_count + d];
    if (e->outcome == XR_OP_SUCCEEDED) continue;
    missing_t *m = NULL;
    for (size_t i = 0; i < n && !m; i++)
      if (!strcmp(out[i].name, e->op->name)) m = &out[i];
    if (!m) {
      m = &out[n++];
      *m = (missing_t){.name = e->op->name, .outcome = xr_op_outcome_name(e->outcome),
                       .reason = e->message};
    } else if (strcmp(m->reason, e->message)) {
      m->other_reasons++;
    }
    m->ops++;
    m->trace_us += op_trace_us(e->op);
  }
  qsort(out, n, sizeof *out, by_share);
  return n;
}

/* ------------------------------------------------------------------------------------------ */
/* text                                                                                        */

static void print_text(const char *path, const xr_replay_plan_t *plan) {
  size_t nd = plan->device_count;
  printf("plan of %s: %zu op%s, %zu planned; ", path, plan->total, plan->total == 1 ? "" : "s",
         plan->attempted);
  if (plan->trace_total_us > 0)
    printf("the source trace records %.1f us of GPU time\n", plan->trace_total_us);
  else
    printf("the bundle records no GPU time\n");
  for (size_t d = 0; d < nd; d++) {
    const xr_plan_device_t *dev = &plan->devices[d];
    if (dev->status == XR_OK)
      printf("  [%s] %s: %s (%s)\n", dev->spec, dev->properties.spec, dev->properties.name,
             dev->properties.driver);
    else
      printf("  [%s] unavailable: %s\n", dev->spec, dev->message);
  }
  size_t width = 2;
  for (size_t k = 0; k < plan->attempted; k++) {
    size_t len = strlen(plan->entries[k * nd].op->name);
    if (len > width) width = len;
  }
  if (width > 48) width = 48;
  printf("%5s  %-*s %7s %11s %10s %7s %7s  %s\n", "#", (int)width, "op", "count", "trace_us",
         "per_call", "flop", "bytes", "per HAL: the kernel it would take, or why not");
  for (size_t k = 0; k < plan->attempted; k++) {
    const xr_plan_entry_t *row = &plan->entries[k * nd];
    const xr_op_t *op = row->op;
    char total[32] = "-", call[32] = "-", flops[32] = "-", bytes[32] = "-";
    if (row->trace_us >= 0) {
      snprintf(total, sizeof total, "%.2f", op->timing->gpu_time_us);
      snprintf(call, sizeof call, "%.2f", row->trace_us);
    }
    if (row->flops > 0) si(row->flops, flops, sizeof flops);
    if (row->bytes > 0) si(row->bytes, bytes, sizeof bytes);
    printf("%5zu  %-*s %7lld %11s %10s %7s %7s ", row->index, (int)width, op->name,
           (long long)(op->count > 0 ? op->count : 1), total, call, flops, bytes);
    /* HALs that give the same answer share it: [cpu,opencl] unsupported: no kernel for ... */
    bool said[XR_REPLAY_MAX_DEVICES] = {0};
    for (size_t d = 0; d < nd; d++) {
      if (said[d] || plan->devices[d].status != XR_OK) continue;
      const xr_plan_entry_t *e = &row[d];
      printf(" [%s", plan->devices[d].spec);
      for (size_t o = d + 1; o < nd; o++) {
        const xr_plan_entry_t *f = &row[o];
        bool same = f->outcome == e->outcome &&
                    !strcmp(e->outcome == XR_OP_SUCCEEDED ? f->kernel : f->message,
                            e->outcome == XR_OP_SUCCEEDED ? e->kernel : e->message);
        if (plan->devices[o].status == XR_OK && same) {
          printf(",%s", plan->devices[o].spec);
          said[o] = true;
        }
      }
      if (e->outcome == XR_OP_SUCCEEDED && e->message[0]) printf("] %s, %s", e->kernel, e->message);
      else if (e->outcome == XR_OP_SUCCEEDED) printf("] %s", e->kernel);
      else printf("] %s: %s", xr_op_outcome_name(e->outcome), e->message);
    }
    putchar('\n');
  }
  for (size_t d = 0; d < nd; d++) {
    const xr_plan_device_t *dev = &plan->devices[d];
    if (dev->status != XR_OK) {
      printf("plan [%s]: unavailable: %s\n", dev->spec, dev->message);
      continue;
    }
    printf("plan [%s]: %zu of %zu ops would run", dev->spec, dev->runnable, plan->attempted);
    if (plan->trace_total_us > 0)
      printf(", covering %.1f%% of the source trace's GPU time (%.1f of %.1f us)",
             percent(dev->trace_covered_us, plan->trace_total_us), dev->trace_covered_us,
             plan->trace_total_us);
    else
      printf(" (the bundle records no GPU time)");
    if (dev->failed) printf("; %zu would fail (malformed)", dev->failed);
    putchar('\n');
  }
  /* HALs whose lists are the same share one. */
  missing_t *m = calloc(plan->attempted + 1, sizeof *m);
  missing_t *other = calloc(plan->attempted + 1, sizeof *other);
  bool listed[XR_REPLAY_MAX_DEVICES] = {0};
  for (size_t d = 0; m && other && d < nd; d++) {
    if (listed[d] || plan->devices[d].status != XR_OK) continue;
    size_t n = gather_missing(plan, d, m);
    if (!n) continue;
    printf("unsupported [%s", plan->devices[d].spec);
    for (size_t o = d + 1; o < nd; o++) {
      if (plan->devices[o].status != XR_OK || gather_missing(plan, o, other) != n) continue;
      bool same = true;
      for (size_t i = 0; i < n && same; i++)
        same = !strcmp(m[i].name, other[i].name) && m[i].ops == other[i].ops &&
               m[i].other_reasons == other[i].other_reasons &&
               !strcmp(m[i].reason, other[i].reason);
      if (!same) continue;
      printf(",%s", plan->devices[o].spec);
      listed[o] = true;
    }
    printf(plan->trace_total_us > 0 ? "], by share of the source trace's GPU time:\n" : "]:\n");
    for (size_t i = 0; i < n; i++) {
      printf("  %5.1f%% %10.1f us %4zu op%s  %s  %s: %s",
             percent(m[i].trace_us, plan->trace_total_us), m[i].trace_us, m[i].ops,
             m[i].ops == 1 ? " " : "s", m[i].name, m[i].outcome, m[i].reason);
      if (m[i].other_reasons)
        printf(" (and %zu other reason%s)", m[i].other_reasons, m[i].other_reasons == 1 ? "" : "s");
      putchar('\n');
    }
  }
  free(other);
  free(m);
}

/* ------------------------------------------------------------------------------------------ */
/* JSON                                                                                        */

static void add_number_or_null(cJSON *o, const char *name, bool present, double v) {
  if (present) cJSON_AddNumberToObject(o, name, v);
  else cJSON_AddNullToObject(o, name);
}

static cJSON *plan_json(const char *path, const xr_replay_plan_t *plan) {
  size_t nd = plan->device_count;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "bundle", path);
  cJSON_AddNumberToObject(root, "total", (double)plan->total);
  cJSON_AddNumberToObject(root, "attempted", (double)plan->attempted);
  cJSON_AddNumberToObject(root, "trace_total_us", plan->trace_total_us);
  cJSON *hals = cJSON_AddArrayToObject(root, "hals");
  missing_t *m = calloc(plan->attempted + 1, sizeof *m);
  for (size_t d = 0; d < nd; d++) {
    const xr_plan_device_t *dev = &plan->devices[d];
    cJSON *h = cJSON_CreateObject();
    cJSON_AddItemToArray(hals, h);
    cJSON_AddStringToObject(h, "hal", dev->spec);
    cJSON_AddBoolToObject(h, "available", dev->status == XR_OK);
    if (dev->status != XR_OK) {
      cJSON_AddStringToObject(h, "status", xr_status_name(dev->status));
      cJSON_AddStringToObject(h, "reason", dev->message);
      continue;
    }
    cJSON_AddStringToObject(h, "device", dev->properties.spec);
    cJSON_AddStringToObject(h, "name", dev->properties.name);
    cJSON_AddStringToObject(h, "driver", dev->properties.driver);
    cJSON_AddNumberToObject(h, "would_run", (double)dev->runnable);
    cJSON_AddNumberToObject(h, "unsupported", (double)dev->unsupported);
    cJSON_AddNumberToObject(h, "failed", (double)dev->failed);
    cJSON_AddNumberToObject(h, "trace_covered_us", dev->trace_covered_us);
    add_number_or_null(h, "covered_percent", plan->trace_total_us > 0,
                       percent(dev->trace_covered_us, plan->trace_total_us));
    cJSON *list = cJSON_AddArrayToObject(h, "not_run");
    size_t n = m ? gather_missing(plan, d, m) : 0;
    for (size_t i = 0; i < n; i++) {
      cJSON *x = cJSON_CreateObject();
      cJSON_AddItemToArray(list, x);
      cJSON_AddStringToObject(x, "name", m[i].name);
      cJSON_AddNumberToObject(x, "ops", (double)m[i].ops);
      cJSON_AddNumberToObject(x, "trace_us", m[i].trace_us);
      add_number_or_null(x, "percent", plan->trace_total_us > 0,
                         percent(m[i].trace_us, plan->trace_total_us));
      cJSON_AddStringToObject(x, "outcome", m[i].outcome);
      cJSON_AddStringToObject(x, "reason", m[i].reason);
      cJSON_AddNumberToObject(x, "other_reasons", (double)m[i].other_reasons);
    }
  }
  free(m);
  cJSON *ops = cJSON_AddArrayToObject(root, "ops");
  for (size_t k = 0; k < plan->attempted; k++) {
    const xr_plan_entry_t *row = &plan->entries[k * nd];
    const xr_op_t *op = row->op;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(ops, o);
    cJSON_AddNumberToObject(o, "index", (double)row->index);
    cJSON_AddStringToObject(o, "name", op->name);
    cJSON_AddNumberToObject(o, "count", (double)(op->count > 0 ? op->count : 1));
    bool timed = row->trace_us >= 0;
    add_number_or_null(o, "trace_us", timed, timed ? op->timing->gpu_time_us : 0);
    add_number_or_null(o, "per_call_us", timed, row->trace_us);
    cJSON_AddNumberToObject(o, "flops", row->flops);
    cJSON_AddNumberToObject(o, "bytes", row->bytes);
    cJSON *per = cJSON_AddArrayToObject(o, "hals");
    for (size_t d = 0; d < nd; d++) {
      const xr_plan_entry_t *e = &row[d];
      cJSON *x = cJSON_CreateObject();
      cJSON_AddItemToArray(per, x);
      cJSON_AddStringToObject(x, "hal", plan->devices[d].spec);
      bool available = plan->devices[d].status == XR_OK;
      cJSON_AddStringToObject(x, "outcome",
                              available ? xr_op_outcome_name(e->outcome) : "unavailable");
      if (available && e->kernel[0]) cJSON_AddStringToObject(x, "kernel", e->kernel);
      if (available && e->outcome != XR_OP_SUCCEEDED)
        cJSON_AddStringToObject(x, "reason", e->message);
      else if (available && e->message[0]) /* runs, with a note: not checked */
        cJSON_AddStringToObject(x, "note", e->message);
    }
  }
  return root;
}

/* ------------------------------------------------------------------------------------------ */

int xr_cmd_plan(int argc, char **argv) {
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  const char *path = NULL, *model_config = NULL;
  bool json = false;
  static const char *const options[] = {"--hal=",          "--json",       "--op-filter=",
                                         "--op-limit=",     "--max-memory=", "--model-config=",
                                         "--rotate=",       "--reference",  "--check",
                                         "--cache-blocks=",
                                         "-h",
                                         "--help",          NULL};
  xr_cli_args_t a;
  xr_cli_args_init(&a, "replay plan", options, argc, argv);
  for (xr_cli_token_t t; (t = xr_cli_next(&a)) != XR_CLI_END;) {
    if (t == XR_CLI_BAD) return XR_EXIT_USAGE;
    if (t == XR_CLI_OPERAND) {
      if (path)
        return xr_cli_error("replay plan", "one bundle at a time (%s, then %s)", path, a.arg);
      path = a.arg;
      continue;
    }
    long long n;
    uint64_t bytes;
    if (xr_cli_is(&a, "--hal")) o.device = a.value;
    else if (xr_cli_is(&a, "--check")) o.check = true;
    else if (xr_cli_is(&a, "--json")) json = true;
    else if (xr_cli_is(&a, "--op-filter")) o.op_filter = a.value;
    else if (xr_cli_is(&a, "--op-limit")) {
      if (!xr_cli_int_value(&a, 0, &n)) return XR_EXIT_USAGE;
      o.op_limit = n;
    } else if (xr_cli_is(&a, "--model-config")) model_config = a.value;
    else if (xr_cli_is(&a, "--max-memory")) {
      if (!xr_cli_parse_bytes(a.value, &bytes))
        return xr_cli_bad_value(&a, "not a positive byte count (1048576, 64K, 512M, 24G)");
      o.max_memory_bytes = bytes;
    } else if (xr_cli_is(&a, "--rotate")) {
      if (!xr_cli_int_value(&a, 1, &n)) return XR_EXIT_USAGE;
      o.rotate = (int)n;
    } else if (xr_cli_is(&a, "--cache-blocks")) {
      int mode;
      if (!xr_cli_parse_cache_blocks(a.value, &mode))
        return xr_cli_bad_value(&a, XR_CLI_CACHE_BLOCKS_FORM);
      o.cache_blocks = (xr_cache_blocks_t)mode;
    } else if (xr_cli_is(&a, "--reference")) o.choice = XR_KERNEL_REFERENCE;
    else if (xr_cli_is(&a, "-h") || xr_cli_is(&a, "--help")) {
      fputs(usage, stdout);
      return XR_EXIT_OK;
    }
  }
  if (!path)
    return xr_cli_error("replay plan",
                        "BUNDLE is required (`replay plan --help` lists the options)");
  char pbuf[4096];
  path = xr_cli_path(path, pbuf, sizeof pbuf);
  xr_bundle_t *b;
  int loaded = xr_cli_load_bundle("replay plan", path, model_config, &b);
  if (loaded != XR_EXIT_OK) return loaded;
  if (xr_cli_check_filter("replay plan", path, b, &o) != XR_EXIT_OK) {
    xr_bundle_destroy(b);
    return XR_EXIT_USAGE;
  }
  xr_replay_plan_t *plan;
  xr_status_t st = xr_replay_plan(b, &o, &plan);
  if (st != XR_OK) {
    fprintf(stderr, "replay plan: --hal=%s: %s\n", o.device, xr_last_error());
    xr_bundle_destroy(b);
    return st == XR_UNAVAILABLE || st == XR_NOT_FOUND ? XR_EXIT_UNAVAILABLE : XR_EXIT_USAGE;
  }
  int rc = XR_EXIT_OK;
  if (json) {
    cJSON *root = plan_json(path, plan);
    char *text = root ? cJSON_Print(root) : NULL;
    if (text) printf("%s\n", text);
    else rc = XR_EXIT_FAILED;
    cJSON_free(text);
    cJSON_Delete(root);
  } else {
    print_text(path, plan);
  }
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "replay plan: write error on standard output\n");
    rc = XR_EXIT_FAILED;
  }
  xr_replay_plan_free(plan);
  xr_bundle_destroy(b);
  return rc;
}
