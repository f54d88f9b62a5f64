/* `replay extract TRACE.json[.gz] -o BUNDLE.msgpack|.json [--capture CAPTURE | --capture-dir
 * DIR]`: see docs/extract.md. */
#include "tools/cmd_extract.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/trace_extract.h"
#include "tools/cli.h"

enum { EXIT_OK_ = 0, EXIT_FAILED_ = 1, EXIT_USAGE_ = 2 }; /* as in tools/cli.h */

static const char usage_text[] =
    "usage: replay extract TRACE.json[.gz] -o BUNDLE.msgpack|.json [options]\n"
    "  -o, --output PATH     bundle to write (.json, .msgpack or .mpk)\n"
    "  --outermost           attribute GPU work to the outermost op (aten::linear, not addmm)\n"
    "  --top N               keep the N ops with the most GPU time\n"
    "  --op-filter TEXT      keep ops whose name contains TEXT\n"
    "  --capture PATH        a trace profiled while the graphs were captured (repeatable):\n"
    "                        credits the kernels of CUDA/HIP graph launches to the captured ops\n"
    "  --capture-dir DIR     the capture traces listed in DIR/execution_details.json\n"
    "  --model-config FILE   a model's config.json: writes the layer state the trace lacks\n"
    "                        (vllm::moe_forward's expert weight shapes, top-k, ...) into the bundle\n"
    "  -q, --quiet           no summary, no warnings\n";

static const char prog[] = "replay extract";

#define MAX_CAPTURES 64
#define PATH_CAP 4096

typedef struct captures {
  xr_extract_capture_t given[MAX_CAPTURES]; /* --capture */
  char paths[MAX_CAPTURES][PATH_CAP];
  size_t count;
  const char *dir; /* --capture-dir */
  xr_extract_capture_t *listed;
  size_t listed_count;
} captures_t;

static void print_summary(const char *in, const char *out, const xr_extract_summary_t *s) {
  printf("%s: %.1f MB of trace, %zu events, %zu GPU events (%.1f us busy)\n", in,
         (double)s->bytes / 1e6, s->events, s->gpu_events, s->gpu_busy_us);
  if (s->graph_launches)
    printf("graph launches: %zu, %zu matched to the %zu stream captures; %zu of their %zu kernels "
           "credited to captured ops (%.1f%% of GPU busy time)\n",
           s->graph_launches, s->graph_launches_matched, s->capture_segments,
           s->graph_kernels_matched, s->graph_kernels,
           s->gpu_busy_us > 0 ? 100.0 * s->graph_covered_us / s->gpu_busy_us : 0.0);
  if (s->graph_launches_node_joined || s->graph_launches_node_declined)
    printf("graph node ids: %zu launches (%zu kernels) joined by ordinal, %zu declined (see "
           "warnings) and matched by kernel names and position\n",
           s->graph_launches_node_joined, s->graph_kernels_node_joined,
           s->graph_launches_node_declined);
  printf("wrote %s: %zu ops (%zu occurrences), %.1f us of GPU time, %.1f%% of GPU busy time\n",
         out, s->unique_ops, s->op_instances, s->ops_gpu_time_us,
         s->gpu_busy_us > 0 ? 100.0 * s->gpu_covered_us / s->gpu_busy_us : 0.0);
  size_t graph_left = s->graph_kernels - s->graph_kernels_matched;
  if (s->gpu_unlinked || s->gpu_without_op || s->gpu_op_no_args || graph_left)
    printf("skipped GPU events: %zu with a correlation id that leads nowhere, %zu launched "
           "outside any op, %zu under ops without recorded inputs, %zu in graph replays "
           "without a captured launch\n",
           s->gpu_unlinked, s->gpu_without_op, s->gpu_op_no_args, graph_left);
  if (s->ops_bad_args || s->ops_filtered)
    printf("skipped ops: %zu with malformed arguments, %zu by --top/--op-filter\n",
           s->ops_bad_args, s->ops_filtered);
  if (s->defaulted_args)
    printf("%zu string arguments filled from defaults (see warnings)\n", s->defaulted_args);
}

int xr_cmd_extract(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *model_config = NULL;
  bool quiet = false;
  xr_extract_options_t opt = {0};
  static captures_t caps;
  memset(&caps, 0, sizeof caps);
  static const char *const options[] = {"-o=",         "--output=",        "--outermost",
                                         "--top=",      "--op-filter=",     "--capture=",
                                         "--capture-dir=", "--model-config=", "-q",
                                         "--quiet",     "-h",               "--help",
                                         NULL};
  xr_cli_args_t a;
  xr_cli_args_init(&a, prog, options, argc, argv);
  for (xr_cli_token_t t; (t = xr_cli_next(&a)) != XR_CLI_END;) {
    if (t == XR_CLI_BAD) return EXIT_USAGE_;
    if (t == XR_CLI_OPERAND) {
      if (in) return xr_cli_error(prog, "one trace at a time (%s, then %s)", in, a.arg);
      in = a.arg;
      continue;
    }
    const char *v = a.value;
    long long n;
    if (xr_cli_is(&a, "-h") || xr_cli_is(&a, "--help")) {
      fputs(usage_text, stdout);
      return EXIT_OK_;
    } else if (xr_cli_is(&a, "--outermost")) {
      opt.outermost = true;
    } else if (xr_cli_is(&a, "-q") || xr_cli_is(&a, "--quiet")) {
      quiet = true;
    } else if (xr_cli_is(&a, "-o") || xr_cli_is(&a, "--output")) {
      out = v;
    } else if (xr_cli_is(&a, "--top")) {
      if (!xr_cli_int_value(&a, 1, &n)) return EXIT_USAGE_;
      opt.top = (size_t)n;
    } else if (xr_cli_is(&a, "--op-filter")) {
      opt.op_filter = v;
    } else if (xr_cli_is(&a, "--model-config")) {
      model_config = v;
    } else if (xr_cli_is(&a, "--capture-dir")) {
      caps.dir = v;
    } else if (xr_cli_is(&a, "--capture")) {
      if (caps.count == MAX_CAPTURES) return xr_cli_error(prog, "at most 64 --capture traces");
      caps.given[caps.count].path = xr_cli_path(v, caps.paths[caps.count], PATH_CAP);
      caps.count++;
    }
  }
  if (!in) return xr_cli_error(prog, "TRACE is required (`replay extract --help`)");
  if (!out) return xr_cli_error(prog, "-o BUNDLE is required (.json, .msgpack or .mpk)");
  xr_bundle_format_t format = xr_bundle_format_from_path(out);
  if (format != XR_FORMAT_JSON && format != XR_FORMAT_MSGPACK)
    return xr_cli_error(prog, "-o %s: a bundle ends in .json, .msgpack or .mpk", out);
  char inbuf[4096], outbuf[4096];
  in = xr_cli_path(in, inbuf, sizeof inbuf);
  out = xr_cli_path(out, outbuf, sizeof outbuf);

  if (caps.dir && caps.count) return xr_cli_error(prog, "--capture and --capture-dir do not mix");
  if (caps.dir) {
    char dirbuf[PATH_CAP];
    xr_status_t st = xr_extract_read_capture_dir(xr_cli_path(caps.dir, dirbuf, sizeof dirbuf),
                                                 &caps.listed, &caps.listed_count);
    if (st != XR_OK) {
      fprintf(stderr, "replay extract: %s\n", xr_last_error());
      return EXIT_USAGE_;
    }
    opt.captures = caps.listed;
    opt.capture_count = caps.listed_count;
  } else if (caps.count) {
    opt.captures = caps.given;
    opt.capture_count = caps.count;
  }

  xr_bundle_t *b = NULL;
  xr_extract_summary_t s;
  xr_status_t st = xr_trace_extract(in, &opt, &b, &s);
  xr_extract_captures_free(caps.listed, caps.listed_count);
  if (st != XR_OK) {
    fprintf(stderr, "replay extract: %s\n", xr_last_error());
    return st == XR_RESOURCE_EXHAUSTED || st == XR_INTERNAL ? EXIT_FAILED_ : EXIT_USAGE_;
  }
  if (opt.op_filter && opt.op_filter[0] && b->op_count == 0) {
    xr_cli_error(prog, "--op-filter=%s: no op of %s with GPU work has a name containing \"%s\"",
                 opt.op_filter, in, opt.op_filter);
    xr_bundle_destroy(b);
    xr_extract_summary_free(&s);
    return EXIT_USAGE_;
  }
  if (!quiet)
    for (size_t i = 0; i < s.warning_count; i++) fprintf(stderr, "warning: %s\n", s.warnings[i]);
  char cfgbuf[PATH_CAP];
  if (model_config && xr_cli_apply_model_config(
                          "replay extract", xr_cli_path(model_config, cfgbuf, sizeof cfgbuf), b)) {
    xr_bundle_destroy(b);
    xr_extract_summary_free(&s);
    return EXIT_USAGE_;
  }
  st = xr_bundle_save(b, out, format);
  if (st != XR_OK) {
    fprintf(stderr, "replay extract: %s\n", xr_last_error());
    xr_bundle_destroy(b);
    xr_extract_summary_free(&s);
    return EXIT_FAILED_;
  }
  if (!quiet) print_summary(in, out, &s);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
  return EXIT_OK_;
}
