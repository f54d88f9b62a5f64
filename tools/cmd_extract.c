/* `replay extract TRACE.json[.gz] -o BUNDLE.msgpack|.json [--capture CAPTURE | --capture-dir
 * DIR]`: see docs/extract.md. */
#include "tools/cmd_extract.h"

#include <errno.h>
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

static int usage(const char *problem) {
  if (problem) fprintf(stderr, "replay extract: %s\n", problem);
  fputs(usage_text, problem ? stderr : stdout);
  return problem ? EXIT_USAGE_ : EXIT_OK_;
}

/* Under `bazel run` the working directory is the runfiles tree: relative paths are the user's. */
static const char *user_path(const char *arg, char *buf, size_t size) {
  const char *wd = getenv("BUILD_WORKING_DIRECTORY");
  if (!wd || !*wd || arg[0] == '/') return arg;
  snprintf(buf, size, "%s/%s", wd, arg);
  return buf;
}

/* Accepts "--opt VALUE" and "--opt=VALUE". */
static const char *option_value(int argc, char **argv, int *i, const char *name) {
  size_t n = strlen(name);
  if (strncmp(argv[*i], name, n) != 0) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n] == '\0' && *i + 1 < argc) return argv[++*i];
  return NULL;
}

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
  const char *in = NULL, *out = NULL, *v, *model_config = NULL;
  bool quiet = false;
  xr_extract_options_t opt = {0};
  static captures_t caps;
  memset(&caps, 0, sizeof caps);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return usage(NULL);
    if (strcmp(argv[i], "--outermost") == 0) opt.outermost = true;
    else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) quiet = true;
    else if ((v = option_value(argc, argv, &i, "-o")) || (v = option_value(argc, argv, &i, "--output")))
      out = v;
    else if ((v = option_value(argc, argv, &i, "--top"))) {
      char *end;
      errno = 0;
      long long n = strtoll(v, &end, 10);
      if (*end || n <= 0 || errno) return usage("--top takes a positive number");
      opt.top = (size_t)n;
    } else if ((v = option_value(argc, argv, &i, "--op-filter"))) {
      opt.op_filter = v;
    } else if ((v = option_value(argc, argv, &i, "--model-config"))) {
      model_config = v;
    } else if ((v = option_value(argc, argv, &i, "--capture-dir"))) {
      caps.dir = v;
    } else if ((v = option_value(argc, argv, &i, "--capture"))) {
      if (caps.count == MAX_CAPTURES) return usage("at most 64 --capture traces");
      caps.given[caps.count].path = user_path(v, caps.paths[caps.count], PATH_CAP);
      caps.count++;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return usage("unknown option or missing value");
    } else if (!in) {
      in = argv[i];
    } else {
      return usage("one trace at a time");
    }
  }
  if (!in || !out) return usage("TRACE and -o BUNDLE are required");
  xr_bundle_format_t format = xr_bundle_format_from_path(out);
  if (format != XR_FORMAT_JSON && format != XR_FORMAT_MSGPACK)
    return usage("the bundle must end in .json, .msgpack or .mpk");
  char inbuf[4096], outbuf[4096];
  in = user_path(in, inbuf, sizeof inbuf);
  out = user_path(out, outbuf, sizeof outbuf);

  if (caps.dir && caps.count) return usage("--capture and --capture-dir do not mix");
  if (caps.dir) {
    char dirbuf[PATH_CAP];
    xr_status_t st = xr_extract_read_capture_dir(user_path(caps.dir, dirbuf, sizeof dirbuf),
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
  if (!quiet)
    for (size_t i = 0; i < s.warning_count; i++) fprintf(stderr, "warning: %s\n", s.warnings[i]);
  char cfgbuf[PATH_CAP];
  if (model_config &&
      xr_cli_apply_model_config("replay extract", user_path(model_config, cfgbuf, sizeof cfgbuf), b)) {
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
