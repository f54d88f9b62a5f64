#include "tools/op_table.h"

#include <string.h>

xr_status_t xr_print_op_table(FILE *out, const xr_bundle_t *b) {
  size_t width = 2;
  for (size_t i = 0; i < b->op_count; i++)
    if (strlen(b->ops[i].name) > width) width = strlen(b->ops[i].name);
  if (width > 48) width = 48;
  fprintf(out, "%5s  %-*s %7s %12s  %s\n", "#", (int)width, "op", "count", "trace_us", "arguments");
  for (size_t i = 0; i < b->op_count; i++) {
    const xr_op_t *op = &b->ops[i];
    char trace[32] = "-";
    if (op->timing && op->timing->gpu_time_us >= 0)
      snprintf(trace, sizeof trace, "%.1f", op->timing->gpu_time_us);
    fprintf(out, "%5zu  %-*s %7lld %12s  ", i, (int)width, op->name,
            (long long)(op->count ? op->count : 1), trace);
    char args[4096];
    xr_op_describe_args(op, false, args, sizeof args);
    fputs(args, out);
    fputc('\n', out);
    /* The kernels the trace recorded for the op, each with its launches and total time. */
    const xr_op_timing_t *t = op->timing;
    for (size_t k = 0; t && k < t->kernel_count; k++)
      fprintf(out, "%5s  %s kernel %s x%lld, %.1f us\n", "", k ? "      " : "recorded",
              t->kernels[k].name ? t->kernels[k].name : "?", (long long)t->kernels[k].count,
              t->kernels[k].duration_us);
  }
  return ferror(out) ? xr_error(XR_DATA_LOSS, "write error printing the op table") : XR_OK;
}
