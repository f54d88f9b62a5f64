/* Deciding what runs: one op's plan and tensor layout, then per device the implementation and
 * the memory checks. xr_replay_run decides each op with xr_decide just before running it, and
 * xr_replay_plan decides every op with it without running anything, so the two cannot differ. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/host_memory.h"
#include "kernels/dtype.h"
#include "replay/internal.h"
#include "replay/shard.h"

xr_status_t xr_once_keep(xr_once_t *o, xr_status_t status) {
  o->done = true;
  o->status = status;
  if (status != XR_OK) snprintf(o->message, sizeof o->message, "%s", xr_last_error());
  return status;
}

xr_status_t xr_once_replay(const xr_once_t *o) {
  return o->status == XR_OK ? XR_OK : xr_error(o->status, "%s", o->message);
}

xr_status_t xr_device_specs(const char *list, char *buf, size_t buf_size,
                            const char *specs[XR_REPLAY_MAX_DEVICES], size_t *out_count) {
  const char *given = list && list[0] ? list : "auto";
  snprintf(buf, buf_size, "%s", given);
  size_t n = 0;
  for (char *save = NULL, *s = strtok_r(buf, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
    if (n == XR_REPLAY_MAX_DEVICES)
      return xr_error(XR_INVALID_ARGUMENT, "replay: more than %d devices in \"%s\"",
                      XR_REPLAY_MAX_DEVICES, given);
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(s, ":"), s);
    xr_hal_driver_info_t info;
    if (strcmp(s, "auto") != 0 && xr_hal_driver_info_by_name(name, &info) != XR_OK)
      return xr_error(XR_INVALID_ARGUMENT,
                      "unknown HAL \"%s\" (known: cpu, opencl, cuda, hip, auto)", s);
    specs[n++] = s;
  }
  if (n == 0) return xr_error(XR_INVALID_ARGUMENT, "replay: no device in \"%s\"", given);
  *out_count = n;
  return XR_OK;
}

bool xr_op_selected(const xr_replay_options_t *o, size_t index, const xr_op_t *op) {
  return xr_op_passes_filter(o, op) && (!o->shard || xr_shard_contains(o->shard, index));
}

double xr_op_trace_total_us(const xr_op_t *op) {
  return op->timing && op->timing->gpu_time_us > 0 ? op->timing->gpu_time_us : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* the op's plan and layout                                                                    */

/* The view of tensor i of a plan (an input's spec, or a return: contiguous unless its plan gave
 * dense strides) and its storage. */
static xr_status_t tensor_layout(const xr_op_plan_t *plan, size_t i, xr_tensor_t *t,
                                 size_t *bytes) {
  memset(t, 0, sizeof *t);
  if (i < plan->input_count) {
    const xr_tensor_spec_t *s = plan->inputs[i];
    xr_status_t st = xr_tensor_storage_bytes(s, bytes);
    if (st != XR_OK) return st;
    t->dtype = s->dtype;
    t->rank = s->rank;
    memcpy(t->shape, s->shape, sizeof(int64_t) * (size_t)s->rank);
    memcpy(t->strides, s->strides, sizeof(int64_t) * (size_t)s->rank);
    t->offset = s->storage_offset;
    return XR_OK;
  }
  const xr_tensor_desc_t *d = &plan->returns[i - plan->input_count];
  t->dtype = d->dtype;
  t->rank = d->rank;
  int64_t n = 1;
  for (int32_t k = d->rank - 1; k >= 0; k--) {
    t->shape[k] = d->shape[k];
    t->strides[k] = d->dense_strides ? d->strides[k] : n;
    n *= d->shape[k];
  }
  *bytes = (size_t)n * xr_dtype_size(d->dtype);
  return XR_OK;
}

static xr_status_t lay_out(xr_planned_op_t *p) {
  const xr_op_plan_t *plan = &p->plan;
  p->count = plan->input_count + plan->return_count;
  size_t n = p->count ? p->count : 1;
  p->layout = calloc(n, sizeof *p->layout);
  p->bytes = calloc(n, sizeof *p->bytes);
  if (!p->layout || !p->bytes) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  for (size_t i = 0; i < p->count; i++) {
    xr_status_t st = tensor_layout(plan, i, &p->layout[i], &p->bytes[i]);
    if (st != XR_OK) return xr_error_prefix(st, "tensor %zu: ", i);
  }
  return XR_OK;
}

/* Integer and bool tensors whose contents are a .npy file, up to this size, are read before
 * planning, as if embedded: an op whose result's size depends on values (a Tensor of repeats, a
 * mask) plans from them (xr_spec_embedded_int); larger ones stay files. */
#define SMALL_CONTENTS_BYTES (1u << 20)

static bool wants_contents(const xr_tensor_spec_t *t) {
  size_t bytes;
  xr_dtype_class_t c = xr_dtype_class(t->dtype);
  return t->data_file && !t->data &&
         (c == XR_DTYPE_CLASS_SIGNED || c == XR_DTYPE_CLASS_UNSIGNED || c == XR_DTYPE_CLASS_BOOL) &&
         xr_tensor_storage_bytes(t, &bytes) == XR_OK && bytes <= SMALL_CONTENTS_BYTES;
}

/* Whether `v` (a tensor, or a list of them) has small contents to read. */
static bool value_wants_contents(const xr_value_t *v) {
  if (v->kind == XR_VALUE_TENSOR) return wants_contents(v->as.tensor);
  if (v->kind != XR_VALUE_LIST) return false;
  for (size_t i = 0; i < v->as.list.count; i++)
    if (v->as.list.items[i].kind == XR_VALUE_TENSOR && wants_contents(v->as.list.items[i].as.tensor))
      return true;
  return false;
}

/* `v` (a tensor, or a list of them) with the small contents read, copied into `arena`; false
 * when it has none to read (it stays shared with the bundle). */
static bool read_small(const xr_bundle_t *bundle, xr_arena_t *arena, xr_value_t *v) {
  if (!value_wants_contents(v)) return false;
  if (v->kind == XR_VALUE_LIST) {
    xr_value_t *items = xr_arena_alloc(arena, sizeof *items * v->as.list.count);
    if (!items) return false;
    memcpy(items, v->as.list.items, sizeof *items * v->as.list.count);
    for (size_t i = 0; i < v->as.list.count; i++) read_small(bundle, arena, &items[i]);
    v->as.list.items = items;
    return true;
  }
  uint8_t *bytes;
  size_t size;
  /* An unreadable file is reported where the run reads it, with its name. */
  if (xr_tensor_read_data(bundle, v->as.tensor, &bytes, &size) != XR_OK) return false;
  xr_tensor_spec_t *copy = xr_arena_alloc(arena, sizeof *copy);
  uint8_t *data = xr_arena_alloc(arena, size ? size : 1);
  if (copy && data) {
    *copy = *v->as.tensor;
    memcpy(data, bytes, size);
    copy->data = data, copy->data_size = size;
    v->as.tensor = copy;
  }
  free(bytes);
  return copy && data;
}

/* The op with its small integer contents read (in *arena, created here), or the bundle's own. */
static const xr_op_t *with_small_contents(const xr_bundle_t *bundle, const xr_op_t *op,
                                          xr_arena_t **arena) {
  bool any = false;
  for (size_t i = 0; i < op->arg_count + op->kwarg_count; i++)
    any |= value_wants_contents(i < op->arg_count ? &op->args[i].value
                                                  : &op->kwargs[i - op->arg_count].value);
  if (!any || xr_arena_create(arena) != XR_OK) return op;
  xr_op_t *copy = xr_arena_alloc(*arena, sizeof *copy);
  xr_arg_t *args = xr_arena_alloc(*arena, sizeof *args * (op->arg_count + op->kwarg_count + 1));
  if (!copy || !args) return op;
  *copy = *op;
  if (op->arg_count) memcpy(args, op->args, sizeof *args * op->arg_count);
  if (op->kwarg_count)
    memcpy(args + op->arg_count, op->kwargs, sizeof *args * op->kwarg_count);
  copy->args = args, copy->kwargs = args + op->arg_count;
  bool read = false;
  for (size_t i = 0; i < op->arg_count + op->kwarg_count; i++)
    read |= read_small(bundle, *arena, &args[i].value);
  return read ? copy : op;
}

void xr_planned_op_init(const xr_bundle_t *bundle, size_t index, xr_planned_op_t *p) {
  xr_arena_t *contents = NULL;
  const xr_op_t *op = with_small_contents(bundle, &bundle->ops[index], &contents);
  xr_planned_op_init_op(op, index, p);
  p->contents_arena = contents;
}

void xr_planned_op_init_op(const xr_op_t *op, size_t index, xr_planned_op_t *p) {
  memset(p, 0, sizeof *p);
  p->index = index;
  if (xr_once_keep(&p->planned, xr_kernel_plan(op, &p->plan)) != XR_OK) return;
  for (size_t r = 0; r < p->plan.return_count && p->out_count < XR_MAX_CHECKED_OUTPUTS; r++)
    p->out[p->out_count++] = p->plan.input_count + r;
  for (size_t i = 0; i < p->plan.input_count && p->out_count < XR_MAX_CHECKED_OUTPUTS; i++)
    if (p->plan.input_written[i]) p->out[p->out_count++] = i;
  xr_once_keep(&p->laid_out, lay_out(p));
}

void xr_planned_op_free(xr_planned_op_t *p) {
  free(p->layout);
  free(p->bytes);
  if (p->planned.status == XR_OK) xr_kernel_plan_free(&p->plan);
  if (p->recorded) xr_kernel_plan_free(p->recorded);
  free(p->recorded);
  xr_arena_destroy(p->compact_arena);
  xr_arena_destroy(p->contents_arena);
  memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------------------------------------ */
/* memory                                                                                      */

/* Byte counts add and multiply saturating: an absurd bundle must read as "does not fit". */
static uint64_t add_bytes(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t xr_planned_op_bytes(const xr_planned_op_t *p) {
  uint64_t total = 0;
  for (size_t i = 0; i < p->count; i++) total = add_bytes(total, p->bytes[i]);
  return total;
}

static const char *format_bytes(uint64_t bytes, char *out, size_t n) {
  if (bytes >= (1ull << 30)) snprintf(out, n, "%.2f GiB", (double)bytes / 1073741824.0);
  else if (bytes >= (1ull << 20)) snprintf(out, n, "%.1f MiB", (double)bytes / 1048576.0);
  else snprintf(out, n, "%llu bytes", (unsigned long long)bytes);
  return out;
}

/* An op whose tensors cannot fit is reported as such (RESOURCE_EXHAUSTED: unsupported here)
 * before anything is allocated: overcommitted memory would fail later, in the OOM killer.
 * --max-memory caps what counts as available. */
static xr_status_t check_fits(const xr_decide_context_t *c, const char *where, uint64_t need,
                              uint64_t available) {
  uint64_t cap = c->options->max_memory_bytes;
  bool capped = cap && (!available || cap < available);
  if (capped) available = cap;
  if (!available || need <= available) return XR_OK;
  char n[32], a[32];
  return xr_error(XR_RESOURCE_EXHAUSTED, "does not fit: its tensors need %s of %s memory, %s %s",
                  format_bytes(need, n, sizeof n), where, format_bytes(available, a, sizeof a),
                  capped ? "allowed by --max-memory" : "available");
}

/* What one device holds of an op at once: every rotation copy, then the outputs read back. */
static uint64_t device_need(const xr_decide_context_t *c, const xr_planned_op_t *p,
                            const xr_hal_device_properties_t *properties) {
  uint64_t need,
      copies = (uint64_t)xr_rotate_copies(c->options->rotate, properties, xr_planned_op_bytes(p));
  if (__builtin_mul_overflow(copies, xr_planned_op_bytes(p), &need)) need = UINT64_MAX;
  for (size_t k = 0; k < p->out_count; k++) need = add_bytes(need, p->bytes[p->out[k]]);
  return need;
}

/* The host holds the initial contents throughout, and a host-addressable device's share. */
static uint64_t host_need(const xr_decide_context_t *c, const xr_planned_op_t *p,
                          const xr_hal_device_properties_t *properties) {
  return add_bytes(xr_planned_op_bytes(p), c->host_device ? device_need(c, p, properties) : 0);
}

/* --check's reference on the cpu device: its own copy of the tensors and its outputs read back. */
static uint64_t reference_need(const xr_planned_op_t *p) {
  uint64_t need = xr_planned_op_bytes(p);
  for (size_t k = 0; k < p->out_count; k++) need = add_bytes(need, p->bytes[p->out[k]]);
  return need;
}

/* Storage bytes of tensor t cut to its first `rows` rows (dim 0), same strides and offset. */
static uint64_t rows_bytes(const xr_tensor_t *t, uint64_t whole, int64_t rows) {
  if (t->rank == 0 || rows >= t->shape[0]) return whole;
  if (rows <= 0) return 0;
  uint64_t end = (uint64_t)t->offset + 1 + (uint64_t)(rows - 1) * (uint64_t)t->strides[0];
  for (int d = 1; d < t->rank; d++) {
    if (t->shape[d] == 0) return 0;
    end += (uint64_t)(t->shape[d] - 1) * (uint64_t)t->strides[d];
  }
  uint64_t bytes = end * xr_dtype_size(t->dtype);
  return bytes < whole ? bytes : whole;
}

/* The reference of the op cut to its first `rows` result rows: what reference_need counts, with
 * the row inputs, the results and the outputs read back cut. */
static uint64_t rows_reference_need(const xr_planned_op_t *p, const bool *row_inputs,
                                    int64_t rows) {
  uint64_t need = 0;
  for (size_t i = 0; i < p->count; i++) {
    bool cut = i >= p->plan.input_count || row_inputs[i];
    need = add_bytes(need, cut ? rows_bytes(&p->layout[i], p->bytes[i], rows) : p->bytes[i]);
  }
  for (size_t k = 0; k < p->out_count; k++) {
    size_t i = p->out[k];
    bool cut = i >= p->plan.input_count || row_inputs[i];
    need = add_bytes(need, cut ? rows_bytes(&p->layout[i], p->bytes[i], rows) : p->bytes[i]);
  }
  return need;
}

/* The most result rows whose reference fits in `room` (bytes), halving from all of them: 0
 * when the family cannot split the op or not even one row fits. */
static int64_t rows_that_fit(xr_planned_op_t *p, uint64_t room) {
  size_t n = p->plan.input_count ? p->plan.input_count : 1;
  bool *row_inputs = calloc(n, sizeof *row_inputs);
  if (!row_inputs) return 0;
  int64_t total = xr_kernel_result_rows(&p->plan, row_inputs), rows = total / 2;
  while (rows > 0 && rows_reference_need(p, row_inputs, rows) > room) rows /= 2;
  free(row_inputs);
  p->result_rows = rows > 0 ? total : 0;
  return rows;
}

/* Whether the reference fits beside the op: an op whose reference does not is checked on its
 * first rows where its family splits it so (p->check_rows), else still timed, unchecked,
 * rather than the whole run meeting the OOM killer. */
static xr_status_t reference_fits(const xr_decide_context_t *c, xr_planned_op_t *p,
                                  uint64_t op_need) {
  uint64_t available = xr_host_memory_available(), cap = c->options->max_memory_bytes;
  bool capped = cap && (!available || cap < available);
  if (capped) available = cap;
  uint64_t need = reference_need(p);
  if (!available || add_bytes(op_need, need) <= available) return XR_OK;
  if (op_need < available && (p->check_rows = rows_that_fit(p, available - op_need)) > 0)
    return XR_OK;
  char n[32], o[32], a[32];
  return xr_error(XR_RESOURCE_EXHAUSTED,
                  "not checked: the reference needs %s of host memory beside the op's %s, %s %s",
                  format_bytes(need, n, sizeof n), format_bytes(op_need, o, sizeof o),
                  format_bytes(available, a, sizeof a),
                  capped ? "allowed by --max-memory" : "available");
}

void xr_planned_op_compact(const xr_decide_context_t *c, xr_planned_op_t *p,
                           const xr_hal_device_properties_t *const *devices, size_t count) {
  xr_cache_blocks_t mode = c->options->cache_blocks;
  if (p->planned.status != XR_OK || p->laid_out.status != XR_OK || mode == XR_CACHE_BLOCKS_FULL ||
      !p->plan.family || !p->plan.family->compact)
    return;
  bool fits = true;
  for (size_t d = 0; mode == XR_CACHE_BLOCKS_AUTO && fits && d < count; d++)
    fits = check_fits(c, "host", host_need(c, p, devices[d]), xr_host_memory_available()) == XR_OK &&
           (devices[d]->host_addressable ||
            check_fits(c, "device", device_need(c, p, devices[d]), devices[d]->memory_bytes) == XR_OK);
  if (mode == XR_CACHE_BLOCKS_AUTO && fits) return;
  xr_arena_t *arena;
  xr_op_t *op = NULL;
  if (xr_arena_create(&arena) != XR_OK) return;
  xr_planned_op_t q;
  if (xr_kernel_compact(&p->plan, arena, &op) != XR_OK || !op) {
    xr_arena_destroy(arena);
    return;
  }
  xr_planned_op_init_op(op, p->index, &q);
  xr_op_plan_t *recorded = malloc(sizeof *recorded);
  if (!recorded || q.planned.status != XR_OK || q.laid_out.status != XR_OK) {
    /* A compacted op that does not plan is a bug of its family; the recorded one stays. */
    free(recorded);
    xr_planned_op_free(&q);
    xr_arena_destroy(arena);
    return;
  }
  *recorded = p->plan;
  uint64_t recorded_bytes = xr_planned_op_bytes(p);
  free(p->layout);
  free(p->bytes);
  xr_arena_t *contents = p->contents_arena; /* the recorded op's, which the plans still read */
  *p = q;
  p->contents_arena = contents;
  p->recorded = recorded;
  p->compact_arena = arena;
  p->recorded_bytes = recorded_bytes;
}

void xr_planned_op_compact_note(const xr_planned_op_t *p, char *out, size_t size) {
  char now[32], was[32];
  snprintf(out, size, "cache: compact, its tensors %s (%s as recorded)",
           format_bytes(xr_planned_op_bytes(p), now, sizeof now),
           format_bytes(p->recorded_bytes, was, sizeof was));
}

/* ------------------------------------------------------------------------------------------ */
/* the decision                                                                                */

static xr_op_outcome_t refuse(xr_op_outcome_t outcome, const char *why, char *message,
                              size_t size) {
  snprintf(message, size, "%s", why);
  return outcome;
}

/* No kernel for the name, or for this form of it: unsupported; malformed: failed. */
static xr_op_outcome_t plan_outcome(xr_status_t planned) {
  return planned == XR_NOT_FOUND || planned == XR_UNIMPLEMENTED ? XR_OP_UNSUPPORTED : XR_OP_FAILED;
}

/* Tensors too large to lay out in memory: unsupported; a layout that cannot be: failed. */
static xr_op_outcome_t layout_outcome(xr_status_t laid_out) {
  return laid_out == XR_RESOURCE_EXHAUSTED ? XR_OP_UNSUPPORTED : XR_OP_FAILED;
}

xr_op_outcome_t xr_decide(const xr_decide_context_t *c, xr_planned_op_t *p,
                          xr_hal_device_t *device, const xr_hal_device_properties_t *properties,
                          const xr_kernel_impl_t **out_impl, char *message, size_t size) {
  message[0] = '\0';
  if (p->planned.status != XR_OK)
    return refuse(plan_outcome(p->planned.status), p->planned.message, message, size);
  p->plan.comm = c->options->comm;
  p->plan.scale_collectives = c->options->scale_collectives;
  if (xr_kernel_select(&p->plan, device, c->options->choice, out_impl) != XR_OK)
    return refuse(XR_OP_UNSUPPORTED, xr_last_error(), message, size);
  if (p->laid_out.status != XR_OK)
    return refuse(layout_outcome(p->laid_out.status), p->laid_out.message, message, size);
  if (!p->host_fits.done)
    xr_once_keep(&p->host_fits,
                 check_fits(c, "host", host_need(c, p, properties), xr_host_memory_available()));
  if (p->host_fits.status != XR_OK)
    return refuse(XR_OP_UNSUPPORTED, p->host_fits.message, message, size);
  if (c->options->check && !p->check_fits.done)
    xr_once_keep(&p->check_fits, reference_fits(c, p, host_need(c, p, properties)));
  if (!properties->host_addressable &&
      check_fits(c, "device", device_need(c, p, properties), properties->memory_bytes) != XR_OK)
    return refuse(XR_OP_UNSUPPORTED, xr_last_error(), message, size);
  return XR_OP_SUCCEEDED;
}

xr_op_outcome_t xr_replay_plan_op(const xr_bundle_t *bundle, size_t index, char *message,
                                  size_t size) {
  message[0] = '\0';
  if (!bundle || index >= bundle->op_count) {
    snprintf(message, size, "no op %zu in the bundle", index);
    return XR_OP_FAILED;
  }
  xr_planned_op_t p;
  xr_planned_op_init(bundle, index, &p);
  xr_op_outcome_t outcome = XR_OP_SUCCEEDED;
  if (p.planned.status != XR_OK)
    outcome = refuse(plan_outcome(p.planned.status), p.planned.message, message, size);
  else if (p.laid_out.status != XR_OK)
    outcome = refuse(layout_outcome(p.laid_out.status), p.laid_out.message, message, size);
  xr_planned_op_free(&p);
  return outcome;
}

/* ------------------------------------------------------------------------------------------ */
/* xr_replay_plan                                                                              */

void xr_replay_plan_free(xr_replay_plan_t *plan) {
  if (!plan) return;
  free(plan->entries);
  free(plan);
}

xr_status_t xr_replay_plan(const xr_bundle_t *bundle, const xr_replay_options_t *options,
                           xr_replay_plan_t **out_plan) {
  if (!bundle || !out_plan) return xr_error(XR_INVALID_ARGUMENT, "xr_replay_plan: NULL argument");
  *out_plan = NULL;
  xr_replay_options_t defaults;
  xr_replay_options_default(&defaults);
  const xr_replay_options_t *o = options ? options : &defaults;
  char list[512];
  const char *specs[XR_REPLAY_MAX_DEVICES];
  size_t device_count;
  xr_status_t st = xr_device_specs(o->device, list, sizeof list, specs, &device_count);
  if (st != XR_OK) return st;
  xr_replay_plan_t *plan = calloc(1, sizeof *plan);
  if (!plan) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  plan->total = bundle->op_count;
  plan->device_count = device_count;

  xr_hal_device_t *devices[XR_REPLAY_MAX_DEVICES] = {0};
  xr_decide_context_t context = {.options = o};
  size_t opened = 0;
  xr_status_t first_failure = XR_OK;
  char reasons[2048] = ""; /* every device's, for when none opens */
  for (size_t d = 0; d < device_count; d++) {
    xr_plan_device_t *info = &plan->devices[d];
    snprintf(info->spec, sizeof info->spec, "%s", specs[d]);
    info->status = xr_hal_device_create(specs[d], &devices[d]);
    if (info->status == XR_OK)
      info->status = xr_hal_device_properties(devices[d], &info->properties);
    if (info->status != XR_OK) {
      snprintf(info->message, sizeof info->message, "%s", xr_last_error());
      if (first_failure == XR_OK) first_failure = info->status;
      size_t len = strlen(reasons);
      snprintf(reasons + len, sizeof reasons - len, "%s%s", len ? "; " : "", info->message);
      xr_hal_device_destroy(devices[d]);
      devices[d] = NULL;
      continue;
    }
    opened++;
    context.host_device |= info->properties.host_addressable;
  }
  if (!opened) {
    xr_replay_plan_free(plan);
    return xr_error(first_failure, "%s", reasons);
  }

  /* Which ops a run attempts: filter, then limit. */
  for (size_t i = 0; i < bundle->op_count; i++) {
    const xr_op_t *op = &bundle->ops[i];
    plan->trace_total_us += xr_op_trace_total_us(op);
    if (!xr_op_selected(o, i, op)) continue;
    if (o->op_limit >= 0 && plan->attempted >= (size_t)o->op_limit) continue;
    plan->attempted++;
  }
  plan->entries = calloc(plan->attempted * device_count + 1, sizeof *plan->entries);
  st = plan->entries ? XR_OK : xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  size_t position = 0;
  for (size_t i = 0; st == XR_OK && i < bundle->op_count && position < plan->attempted; i++) {
    const xr_op_t *op = &bundle->ops[i];
    if (!xr_op_selected(o, i, op)) continue;
    xr_planned_op_t p;
    xr_planned_op_init(bundle, i, &p);
    const xr_hal_device_properties_t *opened_props[XR_REPLAY_MAX_DEVICES];
    size_t n_opened = 0;
    for (size_t d = 0; d < device_count; d++)
      if (devices[d]) opened_props[n_opened++] = &plan->devices[d].properties;
    xr_planned_op_compact(&context, &p, opened_props, n_opened);
    for (size_t d = 0; d < device_count; d++) {
      xr_plan_entry_t *e = &plan->entries[position * device_count + d];
      xr_plan_device_t *info = &plan->devices[d];
      e->index = i;
      e->op = op;
      e->device_index = d;
      e->trace_us = op->timing && op->timing->gpu_time_us >= 0
                        ? op->timing->gpu_time_us / (double)(op->count > 0 ? op->count : 1)
                        : -1;
      if (p.planned.status == XR_OK) {
        e->flops = p.plan.flops;
        e->bytes = p.plan.bytes;
      }
      if (!devices[d]) {
        e->outcome = XR_OP_UNSUPPORTED;
        snprintf(e->message, sizeof e->message, "%s", info->message);
        continue;
      }
      const xr_kernel_impl_t *impl = NULL;
      e->outcome = xr_decide(&context, &p, devices[d], &info->properties, &impl, e->message,
                             sizeof e->message);
      if (impl) snprintf(e->kernel, sizeof e->kernel, "%s", xr_kernel_impl_name(impl));
      if (e->outcome == XR_OP_SUCCEEDED && o->check && p.check_fits.status != XR_OK)
        snprintf(e->message, sizeof e->message, "%s", p.check_fits.message);
      else if (e->outcome == XR_OP_SUCCEEDED && p.recorded)
        xr_planned_op_compact_note(&p, e->message, sizeof e->message);
      else if (e->outcome == XR_OP_SUCCEEDED && o->check && p.check_rows > 0)
        snprintf(e->message, sizeof e->message,
                 "checked on its first %lld of %lld rows: the whole reference does not fit "
                 "beside the op", (long long)p.check_rows, (long long)p.result_rows);
      if (e->outcome == XR_OP_SUCCEEDED) {
        info->runnable++;
        info->trace_covered_us += xr_op_trace_total_us(op);
      } else if (e->outcome == XR_OP_FAILED) {
        info->failed++;
      } else {
        info->unsupported++;
      }
    }
    xr_planned_op_free(&p);
    position++;
  }
  for (size_t d = 0; d < device_count; d++) xr_hal_device_destroy(devices[d]);
  if (st != XR_OK) {
    xr_replay_plan_free(plan);
    return st;
  }
  *out_plan = plan;
  return XR_OK;
}
