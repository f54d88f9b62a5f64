/* `replay convert`, `replay inspect` and `replay validate`: the CLI over formats/. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "replay/replay.h"
#include "tools/cli.h"
#include "tools/op_table.h"

static int print_usage(const char *cmd, const char *usage) {
  printf("usage: replay %s %s\n", cmd, usage);
  return XR_EXIT_OK;
}

static int load_error(void) {
  fprintf(stderr, "replay: %s\n", xr_last_error());
  return XR_EXIT_USAGE;
}

/* ------------------------------------------------------------------------------------------ */

static const char convert_usage[] =
    "IN OUT [--to=json|msgpack|tracelens] [--embed-data | --strip-data]\n"
    "  Writes IN (any bundle format) as OUT; the format follows OUT's extension unless --to says.\n"
    "  --embed-data  pull every tensor's .npy contents into the file (MessagePack or our JSON)\n"
    "  --strip-data  drop all real contents, keep shapes, strides and dtypes (safe to share)";

typedef struct lost {
  const char *out;
  size_t count;
} lost_t;

/* One thing TraceLens IR cannot carry, under a heading line before the first. */
static void note_loss(void *context, const char *phrase) {
  lost_t *l = context;
  if (!l->count++)
    fprintf(stderr, "replay convert: TraceLens IR cannot carry these; %s leaves them out:\n",
            l->out);
  fprintf(stderr, "  %s\n", phrase);
}

int xr_cmd_convert(int argc, char **argv) {
  const char *in = NULL, *out = NULL, *to = NULL;
  bool embed = false, strip = false;
  static const char *const options[] = {"--to=", "--embed-data", "--strip-data", "-h", "--help",
                                         NULL};
  xr_cli_args_t a;
  xr_cli_args_init(&a, "replay convert", options, argc, argv);
  for (xr_cli_token_t t; (t = xr_cli_next(&a)) != XR_CLI_END;) {
    if (t == XR_CLI_BAD) return XR_EXIT_USAGE;
    if (t == XR_CLI_OPERAND) {
      if (!in) in = a.arg;
      else if (!out) out = a.arg;
      else return xr_cli_error("replay convert", "one IN and one OUT (%s is a third)", a.arg);
    } else if (xr_cli_is(&a, "--to")) {
      if (strcmp(a.value, "json") && strcmp(a.value, "msgpack") && strcmp(a.value, "tracelens"))
        return xr_cli_bad_value(&a, "takes json, msgpack or tracelens");
      to = a.value;
    } else if (xr_cli_is(&a, "--embed-data")) {
      embed = true;
    } else if (xr_cli_is(&a, "--strip-data")) {
      strip = true;
    } else {
      return print_usage("convert", convert_usage);
    }
  }
  if (!in || !out)
    return xr_cli_error("replay convert", "IN and OUT are required (`replay convert --help`)");
  if (embed && strip)
    return xr_cli_error("replay convert", "--embed-data and --strip-data exclude each other");
  char inbuf[4096], outbuf[4096];
  in = xr_cli_path(in, inbuf, sizeof inbuf);
  out = xr_cli_path(out, outbuf, sizeof outbuf);

  xr_bundle_format_t format = xr_bundle_format_from_path(out);
  if (to) {
    if (strcmp(to, "json") == 0) format = XR_FORMAT_JSON;
    else if (strcmp(to, "msgpack") == 0) format = XR_FORMAT_MSGPACK;
    else format = XR_FORMAT_TRACELENS;
  }
  if (format == XR_FORMAT_UNKNOWN)
    return xr_cli_error("replay convert",
                        "%s: cannot tell the output format from its extension; use .json, "
                        ".msgpack or --to", out);

  xr_bundle_t *b;
  if (xr_bundle_load(in, &b) != XR_OK) return load_error();
  if (format == XR_FORMAT_TRACELENS) {
    /* Said before writing: OUT holds less than IN, and what is missing is named. */
    lost_t lost = {.out = out};
    xr_bundle_tracelens_losses(b, note_loss, &lost);
  }
  size_t changed = 0;
  xr_status_t st = XR_OK;
  if (embed) st = xr_bundle_embed_data(b, &changed);
  if (strip) xr_bundle_strip_data(b, &changed);
  if (st == XR_OK) st = xr_bundle_save(b, out, format);
  if (st != XR_OK) {
    fprintf(stderr, "replay convert: %s\n", xr_last_error());
    xr_bundle_destroy(b);
    return XR_EXIT_USAGE;
  }
  fprintf(stderr, "wrote %s (%s, %zu ops", out, xr_bundle_format_name(format), b->op_count);
  if (embed || strip)
    fprintf(stderr, ", contents of %zu tensors %s", changed, embed ? "embedded" : "stripped");
  fprintf(stderr, ")\n");
  xr_bundle_destroy(b);
  return XR_EXIT_OK;
}

/* ------------------------------------------------------------------------------------------ */

static const char *data_form_text(xr_data_form_t form) {
  switch (form) {
    case XR_DATA_NONE: return "shapes only (no tensor contents; safe to share)";
    case XR_DATA_FILES: return "tensor contents in .npy files beside the bundle";
    case XR_DATA_EMBEDDED: return "tensor contents embedded in the file";
    case XR_DATA_MIXED: return "tensor contents partly embedded, partly in .npy files";
  }
  return "?";
}

static const char *data_form_key(xr_data_form_t form) {
  static const char *const keys[] = {"none", "files", "embedded", "mixed"};
  return keys[form];
}

static cJSON *value_to_json(const xr_value_t *v) {
  switch (v->kind) {
    case XR_VALUE_NULL: return cJSON_CreateNull();
    case XR_VALUE_BOOL: return cJSON_CreateBool(v->as.b);
    case XR_VALUE_INT: return cJSON_CreateNumber((double)v->as.i);
    case XR_VALUE_FLOAT: return cJSON_CreateNumber(v->as.f);
    case XR_VALUE_STRING: return cJSON_CreateString(v->as.s);
    case XR_VALUE_LIST: {
      cJSON *a = cJSON_CreateArray();
      for (size_t i = 0; i < v->as.list.count; i++)
        cJSON_AddItemToArray(a, value_to_json(&v->as.list.items[i]));
      return a;
    }
    case XR_VALUE_TENSOR: {
      const xr_tensor_spec_t *t = v->as.tensor;
      cJSON *o = cJSON_CreateObject();
      cJSON *shape = cJSON_AddArrayToObject(o, "shape");
      cJSON *strides = cJSON_AddArrayToObject(o, "strides");
      for (int32_t i = 0; i < t->rank; i++) {
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[i]));
        cJSON_AddItemToArray(strides, cJSON_CreateNumber((double)t->strides[i]));
      }
      cJSON_AddStringToObject(o, "dtype", xr_dtype_short_name(t->dtype));
      return o;
    }
  }
  return cJSON_CreateNull();
}

static void add_args_json(cJSON *arr, const xr_arg_t *args, size_t n) {
  for (size_t i = 0; i < n; i++) {
    cJSON *a = cJSON_CreateObject();
    if (args[i].name) cJSON_AddStringToObject(a, "name", args[i].name);
    if (args[i].type) cJSON_AddStringToObject(a, "type", args[i].type);
    cJSON_AddItemToObject(a, "value", value_to_json(&args[i].value));
    cJSON_AddItemToArray(arr, a);
  }
}

static int inspect_json(const xr_bundle_t *b, const char *path) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "file", path);
  cJSON_AddStringToObject(root, "format", xr_bundle_format_name(b->source_format));
  cJSON_AddNumberToObject(root, "format_version", (double)b->meta.format_version);
  cJSON_AddStringToObject(root, "data", data_form_key(xr_bundle_data_form(b)));
  cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
  if (b->meta.tool_version) cJSON_AddStringToObject(meta, "tool_version", b->meta.tool_version);
  if (b->meta.source_trace) cJSON_AddStringToObject(meta, "source_trace", b->meta.source_trace);
  if (b->meta.device_name) cJSON_AddStringToObject(meta, "device_name", b->meta.device_name);
  if (b->meta.vendor) cJSON_AddStringToObject(meta, "vendor", b->meta.vendor);
  cJSON *ops = cJSON_AddArrayToObject(root, "ops");
  for (size_t i = 0; i < b->op_count; i++) {
    const xr_op_t *op = &b->ops[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", (double)i);
    cJSON_AddStringToObject(o, "name", op->name);
    cJSON_AddNumberToObject(o, "count", (double)(op->count ? op->count : 1));
    if (op->timing && op->timing->gpu_time_us >= 0)
      cJSON_AddNumberToObject(o, "trace_gpu_time_us", op->timing->gpu_time_us);
    if (op->timing && op->timing->kernel_count) {
      cJSON *kernels = cJSON_AddArrayToObject(o, "trace_kernels");
      for (size_t k = 0; k < op->timing->kernel_count; k++) {
        const xr_kernel_record_t *r = &op->timing->kernels[k];
        cJSON *kernel = cJSON_CreateObject();
        cJSON_AddStringToObject(kernel, "name", r->name ? r->name : "");
        cJSON_AddNumberToObject(kernel, "count", (double)r->count);
        cJSON_AddNumberToObject(kernel, "duration_us", r->duration_us);
        cJSON_AddItemToArray(kernels, kernel);
      }
    }
    add_args_json(cJSON_AddArrayToObject(o, "args"), op->args, op->arg_count);
    add_args_json(cJSON_AddArrayToObject(o, "kwargs"), op->kwargs, op->kwarg_count);
    cJSON_AddItemToArray(ops, o);
  }
  char *text = cJSON_Print(root);
  int rc = text && puts(text) >= 0 ? XR_EXIT_OK : XR_EXIT_FAILED;
  free(text);
  cJSON_Delete(root);
  return rc;
}

static const char inspect_usage[] = "BUNDLE [--json]\n  Prints the bundle's op table.";

int xr_cmd_inspect(int argc, char **argv) {
  const char *path = NULL;
  bool json = false;
  static const char *const options[] = {"--json", "-h", "--help", NULL};
  xr_cli_args_t a;
  xr_cli_args_init(&a, "replay inspect", options, argc, argv);
  for (xr_cli_token_t t; (t = xr_cli_next(&a)) != XR_CLI_END;) {
    if (t == XR_CLI_BAD) return XR_EXIT_USAGE;
    if (t == XR_CLI_OPERAND) {
      if (path)
        return xr_cli_error("replay inspect", "one bundle at a time (%s, then %s)", path, a.arg);
      path = a.arg;
    } else if (xr_cli_is(&a, "--json")) {
      json = true;
    } else {
      return print_usage("inspect", inspect_usage);
    }
  }
  if (!path) return xr_cli_error("replay inspect", "BUNDLE is required (`replay inspect --help`)");
  char buf[4096];
  path = xr_cli_path(path, buf, sizeof buf);
  xr_bundle_t *b;
  if (xr_bundle_load(path, &b) != XR_OK) return load_error();
  int rc;
  if (json) {
    rc = inspect_json(b, path);
  } else {
    printf("%s: %s bundle, format version %" PRId64 ", %zu ops\n", path,
           xr_bundle_format_name(b->source_format), b->meta.format_version, b->op_count);
    printf("data: %s\n", data_form_text(xr_bundle_data_form(b)));
    printf("captured on: %s\n",
           b->meta.device_name && b->meta.device_name[0] ? b->meta.device_name : "not recorded");
    if (b->meta.source_trace) printf("source trace: %s\n", b->meta.source_trace);
    rc = xr_print_op_table(stdout, b) == XR_OK ? XR_EXIT_OK : XR_EXIT_FAILED;
  }
  xr_bundle_destroy(b);
  return rc;
}

/* ------------------------------------------------------------------------------------------ */

static const char validate_usage[] =
    "BUNDLE\n"
    "  Checks every op, tensor and .npy file, then plans every op as `replay` would: arguments\n"
    "  whose shapes do not agree, wrong dtypes or kinds are problems (naming op and argument);\n"
    "  an op no kernel knows is unsupported, not a problem. Exit 0 when valid, 2 with the\n"
    "  problems on stderr.";

/* "ops[3] aten::mm: " then the planner's sentence, without the op name it may begin with. */
static void plan_problem(const xr_op_t *op, size_t index, const char *message, char *out,
                         size_t size) {
  size_t n = strlen(op->name);
  if (!strncmp(message, op->name, n) && message[n] == ':') message += n + 1;
  while (*message == ' ') message++;
  snprintf(out, size, "ops[%zu] %s: %s", index, op->name, message);
}

int xr_cmd_validate(int argc, char **argv) {
  const char *path = NULL;
  static const char *const options[] = {"-h", "--help", NULL};
  xr_cli_args_t a;
  xr_cli_args_init(&a, "replay validate", options, argc, argv);
  for (xr_cli_token_t t; (t = xr_cli_next(&a)) != XR_CLI_END;) {
    if (t == XR_CLI_BAD) return XR_EXIT_USAGE;
    if (t == XR_CLI_OPTION) return print_usage("validate", validate_usage);
    if (path)
      return xr_cli_error("replay validate", "one bundle at a time (%s, then %s)", path, a.arg);
    path = a.arg;
  }
  if (!path)
    return xr_cli_error("replay validate", "BUNDLE is required (`replay validate --help`)");
  char buf[4096];
  path = xr_cli_path(path, buf, sizeof buf);
  xr_load_options_t decode_only = {.validate = false};
  xr_bundle_t *b;
  if (xr_bundle_load_with(path, &decode_only, &b) != XR_OK) return load_error();
  /* The planner reads shapes and dtypes: only a bundle whose structure holds is planned. */
  bool structure = xr_bundle_validate(b, false, NULL) == XR_OK;
  xr_diagnostics_t diags;
  xr_status_t st = xr_bundle_validate(b, true, &diags);
  size_t problems = st == XR_OK ? 0 : diags.count, unsupported = 0, shown = diags.kept;
  const char *first_unsupported = NULL;
  if (st != XR_OK) {
    for (size_t i = 0; i < diags.kept; i++) fprintf(stderr, "%s: %s\n", path, diags.messages[i]);
  }
  for (size_t i = 0; structure && i < b->op_count; i++) {
    char message[1024], line[1400];
    xr_op_outcome_t outcome = xr_replay_plan_op(b, i, message, sizeof message);
    if (outcome == XR_OP_UNSUPPORTED && !unsupported++) first_unsupported = b->ops[i].name;
    if (outcome != XR_OP_FAILED) continue;
    problems++;
    if (shown >= 200) continue; /* as many as the structural check keeps */
    plan_problem(&b->ops[i], i, message, line, sizeof line);
    fprintf(stderr, "%s: %s\n", path, line);
    shown++;
  }
  if (!problems) {
    printf("%s: valid (%zu ops, %s)\n", path, b->op_count, data_form_text(xr_bundle_data_form(b)));
    if (unsupported)
      printf("%s: %zu op%s unsupported, not a problem (`replay plan` says why): %s%s\n", path,
             unsupported, unsupported == 1 ? "" : "s", first_unsupported,
             unsupported > 1 ? ", ..." : "");
  } else {
    if (problems > shown)
      fprintf(stderr, "%s: ... and %zu more problems\n", path, problems - shown);
    fprintf(stderr, "%s: invalid: %zu problem%s\n", path, problems, problems == 1 ? "" : "s");
  }
  xr_diagnostics_free(&diags);
  xr_bundle_destroy(b);
  return problems ? XR_EXIT_USAGE : XR_EXIT_OK;
}
