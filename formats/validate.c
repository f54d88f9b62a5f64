/* Bundle validation: every problem is reported with the path of the field it concerns, e.g.
 * "ops[12].args[3].value.shape[1]: negative dimension -4". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/internal.h"

/* Keep at most this many messages; the count goes on. */
#define MAX_KEPT 200

typedef struct validator {
  const xr_bundle_t *bundle;
  bool check_files;
  xr_diagnostics_t diags;
  char first[1024];
  xr_path_t path;
} validator_t;

static void report(validator_t *v, const char *field, const char *problem) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s%s%s: %s", v->path.buf, field[0] && field[0] != '[' ? "." : "",
           field, problem);
  if (v->diags.count++ == 0) snprintf(v->first, sizeof v->first, "%s", msg);
  if (v->diags.kept < MAX_KEPT) {
    char **grown = realloc(v->diags.messages, (v->diags.kept + 1) * sizeof *grown);
    char *copy = strdup(msg);
    if (grown) v->diags.messages = grown;
    if (grown && copy) v->diags.messages[v->diags.kept++] = copy;
    else free(copy);
  }
}

/* The geometry helpers write "shape[1]: negative dimension -4" into the last error; split it
 * into the field and the problem. */
static void report_last_error(validator_t *v) {
  const char *e = xr_last_error();
  const char *sep = strstr(e, ": ");
  if (!sep) {
    report(v, "", e);
    return;
  }
  char field[128];
  snprintf(field, sizeof field, "%.*s", (int)(sep - e), e);
  report(v, field, sep + 2);
}

static void check_tensor(validator_t *v, const xr_tensor_spec_t *t) {
  char msg[512];
  if (t->dtype <= XR_DTYPE_INVALID || t->dtype >= XR_DTYPE_COUNT) {
    report(v, "dtype", "unknown dtype");
    return;
  }
  if (t->rank < 0 || t->rank > XR_MAX_RANK) {
    snprintf(msg, sizeof msg, "rank %d outside [0, %d]", t->rank, XR_MAX_RANK);
    report(v, "shape", msg);
    return;
  }
  int64_t extent;
  size_t bytes;
  if (xr_tensor_storage_extent(t, &extent) != XR_OK || xr_tensor_storage_bytes(t, &bytes) != XR_OK) {
    report_last_error(v);
    return;
  }
  if (t->storage_size >= 0 && extent > t->storage_size) {
    snprintf(msg, sizeof msg,
             "strides reach outside the storage: the view needs %lld elements, storage_size is %lld",
             (long long)extent, (long long)t->storage_size);
    report(v, "strides", msg);
  } else if (t->storage_size < -1) {
    report(v, "storage_size", "negative storage size");
  }
  if (t->data) {
    size_t elem = xr_dtype_size(t->dtype);
    if (t->data_size != bytes &&
        !(t->storage_size >= extent && t->data_size == (size_t)t->storage_size * elem)) {
      snprintf(msg, sizeof msg,
               "embedded contents hold %zu bytes, the view needs %zu (strides reach outside the "
               "storage, or the data is truncated)",
               t->data_size, bytes);
      report(v, "data", msg);
    }
  }
  if (t->data_file && v->check_files) {
    uint8_t *bytes_read;
    size_t n;
    char path[4096];
    if (t->data_file[0] == '/') snprintf(path, sizeof path, "%s", t->data_file);
    else snprintf(path, sizeof path, "%s/%s", v->bundle->base_dir, t->data_file);
    if (xr_npy_read_for_tensor(path, t, &bytes_read, &n) == XR_OK) free(bytes_read);
    else report(v, "data", xr_last_error());
  }
}

static void check_value(validator_t *v, const xr_value_t *value) {
  if (value->kind == XR_VALUE_TENSOR) {
    check_tensor(v, value->as.tensor);
  } else if (value->kind == XR_VALUE_LIST) {
    for (size_t i = 0; i < value->as.list.count; i++) {
      size_t mark = xr_path_push(&v->path, "[%zu]", i);
      check_value(v, &value->as.list.items[i]);
      xr_path_pop(&v->path, mark);
    }
  }
}

static void check_args(validator_t *v, const xr_arg_t *args, size_t n, const char *field) {
  for (size_t i = 0; i < n; i++) {
    size_t mark = xr_path_push(&v->path, ".%s[%zu].value", field, i);
    check_value(v, &args[i].value);
    xr_path_pop(&v->path, mark);
  }
}

xr_status_t xr_bundle_validate(const xr_bundle_t *bundle, bool check_data_files,
                               xr_diagnostics_t *out_diags) {
  validator_t v = {.bundle = bundle, .check_files = check_data_files};
  for (size_t i = 0; i < bundle->op_count; i++) {
    const xr_op_t *op = &bundle->ops[i];
    xr_path_pop(&v.path, 0);
    xr_path_push(&v.path, "ops[%zu]", i);
    if (!op->name || !op->name[0]) report(&v, "name", "empty op name");
    if (op->count < 0) report(&v, "count", "negative count");
    /* Name the fields as the file does, so the user can find them. */
    bool tracelens = bundle->source_format == XR_FORMAT_TRACELENS;
    check_args(&v, op->args, op->arg_count, tracelens ? "replay_ir.list_pos_args" : "args");
    check_args(&v, op->kwargs, op->kwarg_count, tracelens ? "replay_ir.list_kwargs" : "kwargs");
  }
  xr_status_t st = XR_OK;
  if (v.diags.count) {
    st = v.diags.count == 1
             ? xr_error(XR_INVALID_ARGUMENT, "%s", v.first)
             : xr_error(XR_INVALID_ARGUMENT, "%s (and %zu more problems)", v.first, v.diags.count - 1);
  }
  if (out_diags) *out_diags = v.diags;
  else xr_diagnostics_free(&v.diags);
  return st;
}

void xr_diagnostics_free(xr_diagnostics_t *diags) {
  if (!diags) return;
  for (size_t i = 0; i < diags->kept; i++) free(diags->messages[i]);
  free(diags->messages);
  memset(diags, 0, sizeof *diags);
}
