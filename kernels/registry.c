/* The kernel registry: op name -> family, family -> implementation per device, and the shared
 * argument readers families use. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/family.h"

struct xr_kernel_instance {
  const xr_kernel_impl_t *impl;
  void *state;
  char declined[1024]; /* why the implementation selected first declined in prepare, or "" */
};

static const xr_op_family_t *const families[] = {
#define XR_FAMILY(name) &xr_family_##name,
#include "kernels/family_list.h"
#undef XR_FAMILY
    NULL,
};

static const xr_op_family_t *find_family(const char *op_name) {
  for (const xr_op_family_t *const *f = families; *f; f++)
    for (const char *const *n = (*f)->op_names; *n; n++)
      if (strcmp(*n, op_name) == 0) return *f;
  return NULL;
}

size_t xr_kernel_op_names(const char **out_names, size_t capacity) {
  size_t n = 0;
  for (const xr_op_family_t *const *f = families; *f; f++)
    for (const char *const *name = (*f)->op_names; *name; name++, n++)
      if (n < capacity) out_names[n] = *name;
  return n;
}

/* ------------------------------------------------------------------------------------------ */
/* planning                                                                                    */

static void collect(const xr_value_t *v, bool written, const xr_tensor_spec_t **specs, bool *w,
                    size_t *n) {
  if (v->kind == XR_VALUE_TENSOR) {
    if (specs) specs[*n] = v->as.tensor, w[*n] = written;
    ++*n;
  } else if (v->kind == XR_VALUE_LIST) {
    for (size_t i = 0; i < v->as.list.count; i++) collect(&v->as.list.items[i], written, specs, w, n);
  }
}

/* "Tensor(a!)" and "Tensor($0! -> )" mark arguments the op writes. */
static bool type_is_written(const char *type) { return type && strchr(type, '!') != NULL; }

static void collect_inputs(const xr_op_t *op, const xr_tensor_spec_t **specs, bool *w, size_t *n) {
  *n = 0;
  for (size_t i = 0; i < op->arg_count; i++)
    collect(&op->args[i].value, type_is_written(op->args[i].type), specs, w, n);
  for (size_t i = 0; i < op->kwarg_count; i++)
    collect(&op->kwargs[i].value, type_is_written(op->kwargs[i].type), specs, w, n);
}

/* A Tensor[] argument whose list was not recorded (TraceLens writes null when it could not
 * record it, e.g. aten::cat's tensors): the op's shapes are unknown, so no kernel can run it. */
static bool tensor_list_type(const char *type) {
  if (!type) return false;
  size_t n = strlen(type);
  /* "Tensor[]", "Tensor(a!)[]" (not "Tensor?[]", whose null the families judge), "TensorList",
   * "List[Tensor]" */
  return (!strncmp(type, "Tensor", 6) && n > 8 && !strcmp(type + n - 2, "[]") &&
          type[n - 3] != '?' && type[n - 3] != ']') ||
         !strcmp(type, "TensorList") || !strcmp(type, "List[Tensor]");
}

static const char *const unrecorded_reason = "was not recorded (null): its shapes are unknown";

static const xr_arg_t *unrecorded_list(const xr_op_t *op) {
  for (size_t i = 0; i < op->arg_count + op->kwarg_count; i++) {
    const xr_arg_t *a = i < op->arg_count ? &op->args[i] : &op->kwargs[i - op->arg_count];
    if (tensor_list_type(a->type) && a->value.kind == XR_VALUE_NULL) return a;
  }
  return NULL;
}


xr_status_t xr_kernel_plan(const xr_op_t *op, xr_op_plan_t *out_plan) {
  memset(out_plan, 0, sizeof *out_plan);
  const xr_op_family_t *family = find_family(op->name);
  if (!family) return xr_error(XR_NOT_FOUND, "no kernel for op '%s'", op->name);
  const xr_arg_t *list = unrecorded_list(op);
  if (list)
    return xr_error(XR_NOT_FOUND, "%s: argument '%s' (Tensor[]) %s", op->name,
                    list->name ? list->name : "?", unrecorded_reason);
  out_plan->family = family;
  if (family->complete) {
    xr_op_t *completed = NULL;
    xr_status_t st = xr_arena_create(&out_plan->completion);
    if (st == XR_OK) st = family->complete(op, out_plan->completion, &completed);
    if (st != XR_OK) {
      xr_kernel_plan_free(out_plan);
      return st;
    }
    /* A family may hand an op to another under that one's name (max.other is aten::maximum). */
    if (completed && strcmp(completed->name, op->name)) {
      if (!(family = find_family(completed->name))) {
        xr_kernel_plan_free(out_plan);
        return xr_error(XR_NOT_FOUND, "no kernel for op '%s'", completed->name);
      }
      out_plan->family = family;
    }
    if (completed) op = completed;
  }
  size_t n;
  collect_inputs(op, NULL, NULL, &n);
  out_plan->op = op;
  out_plan->inputs = calloc(n ? n : 1, sizeof *out_plan->inputs);
  out_plan->input_written = calloc(n ? n : 1, sizeof *out_plan->input_written);
  if (!out_plan->inputs || !out_plan->input_written) {
    xr_kernel_plan_free(out_plan);
    return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", op->name);
  }
  collect_inputs(op, out_plan->inputs, out_plan->input_written, &out_plan->input_count);
  xr_status_t st = family->analyze(out_plan);
  if (st != XR_OK) xr_kernel_plan_free(out_plan);
  return st;
}

void xr_kernel_plan_free(xr_op_plan_t *plan) {
  if (!plan) return;
  if (plan->problem && plan->family && plan->family->free_problem)
    plan->family->free_problem(plan->problem);
  free(plan->inputs);
  free(plan->input_written);
  xr_arena_destroy(plan->completion);
  memset(plan, 0, sizeof *plan);
}

/* ------------------------------------------------------------------------------------------ */
/* selection and execution                                                                     */

static bool driver_matches(const xr_kernel_impl_t *impl, xr_hal_device_t *device) {
  xr_hal_device_properties_t p;
  if (xr_hal_device_properties(device, &p) != XR_OK) return false;
  return strcmp(impl->driver, p.driver) == 0 || strcmp(impl->driver, p.kernel_family) == 0;
}

/* Whether `impl` is a candidate on `device` at all: its driver's, and the reference when only the
 * reference may run. Its supports() then decides on the problem. */
static bool eligible(const xr_kernel_impl_t *impl, xr_hal_device_t *device, bool reference_only) {
  return (!reference_only || impl->reference) && driver_matches(impl, device);
}

static xr_status_t impl_supports(const xr_kernel_impl_t *impl, const xr_op_plan_t *plan,
                                 xr_hal_device_t *device) {
  return impl->supports ? impl->supports(plan, device) : XR_OK;
}

/* Why the candidates declined, one entry per distinct reason: implementations giving the same
 * one share it ("cpu.moe_fused, ref.moe: the layer's weights ..."), and a reason that repeats
 * the implementation's own name in front loses it. */
enum { MAX_REASONS = 8 };
typedef struct reasons {
  size_t count;
  char names[MAX_REASONS][128];
  char text[MAX_REASONS][1024];
} reasons_t;

static void add_reason(reasons_t *r, const char *impl, const char *why) {
  size_t n = strlen(impl);
  if (!strncmp(why, impl, n) && !strncmp(why + n, ": ", 2)) why += n + 2;
  for (size_t i = 0; i < r->count; i++)
    if (!strcmp(r->text[i], why)) {
      size_t len = strlen(r->names[i]);
      snprintf(r->names[i] + len, sizeof r->names[i] - len, ", %s", impl);
      return;
    }
  if (r->count == MAX_REASONS) return;
  snprintf(r->names[r->count], sizeof r->names[0], "%s", impl);
  snprintf(r->text[r->count], sizeof r->text[0], "%s", why);
  r->count++;
}

xr_status_t xr_kernel_select(const xr_op_plan_t *plan, xr_hal_device_t *device,
                             xr_kernel_choice_t choice, const xr_kernel_impl_t **out_impl) {
  static _Thread_local reasons_t r; /* large: kept off the stack */
  r.count = 0;
  for (const xr_kernel_impl_t *const *i = plan->family->impls; *i; i++) {
    const xr_kernel_impl_t *impl = *i;
    if (!eligible(impl, device, choice == XR_KERNEL_REFERENCE)) continue;
    xr_status_t st = impl_supports(impl, plan, device);
    if (st == XR_OK) {
      *out_impl = impl;
      return XR_OK;
    }
    add_reason(&r, impl->name, xr_last_error());
  }
  xr_hal_device_properties_t p;
  xr_hal_device_properties(device, &p);
  if (!r.count)
    return xr_error(XR_UNIMPLEMENTED, "%s: no %s%s implementation of the %s family", plan->op->name,
                    choice == XR_KERNEL_REFERENCE ? "reference " : "", p.driver, plan->family->name);
  char all[1536];
  size_t len = 0;
  for (size_t i = 0; i < r.count && len < sizeof all; i++)
    len += (size_t)snprintf(all + len, sizeof all - len, "%s%s: %s", i ? "; " : "", r.names[i], r.text[i]);
  return xr_error(XR_UNIMPLEMENTED, "%s on %s: %s", plan->op->name, p.driver, all);
}

const char *xr_kernel_impl_name(const xr_kernel_impl_t *impl) { return impl->name; }

xr_status_t xr_kernel_prepare(const xr_op_plan_t *plan, const xr_kernel_impl_t *impl,
                              xr_hal_device_t *device, const xr_tensor_t *tensors,
                              xr_kernel_instance_t **out_instance) {
  xr_kernel_instance_t *inst = calloc(1, sizeof *inst);
  if (!inst) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  inst->impl = impl;
  xr_status_t st = impl->prepare(plan, device, tensors, &inst->state);
  /* A vendor library can decline only once it sees the real pointers (cuBLASLt without an
   * algorithm at the views' alignment): the next implementation after it that supports the
   * problem takes the op, and the instance says why. */
  if (st == XR_UNIMPLEMENTED) {
    snprintf(inst->declined, sizeof inst->declined, "%s declined: %s", impl->name,
             xr_last_error());
    const xr_kernel_impl_t *const *next = plan->family->impls;
    while (*next && *next != impl) next++;
    for (next = *next ? next + 1 : next; *next && st == XR_UNIMPLEMENTED; next++) {
      const xr_kernel_impl_t *other = *next;
      if (!eligible(other, device, impl->reference) || impl_supports(other, plan, device) != XR_OK)
        continue;
      inst->impl = other;
      st = other->prepare(plan, device, tensors, &inst->state);
    }
    if (st == XR_UNIMPLEMENTED) xr_error(st, "%s", inst->declined);
  }
  if (st != XR_OK) {
    free(inst);
    return st;
  }
  *out_instance = inst;
  return XR_OK;
}

const char *xr_kernel_instance_impl_name(const xr_kernel_instance_t *instance) {
  return instance->impl->name;
}

const char *xr_kernel_instance_declined(const xr_kernel_instance_t *instance) {
  return instance->declined;
}

const char *xr_kernel_instance_algorithm(const xr_kernel_instance_t *instance) {
  const char *a = instance->impl->algorithm ? instance->impl->algorithm(instance->state) : NULL;
  return a ? a : "";
}

xr_status_t xr_kernel_enqueue(xr_kernel_instance_t *instance, xr_hal_stream_t *stream) {
  return instance->impl->enqueue(instance->state, stream);
}

xr_status_t xr_kernel_enqueue_prologue(xr_kernel_instance_t *instance, xr_hal_stream_t *stream) {
  return instance->impl->enqueue_prologue
             ? instance->impl->enqueue_prologue(instance->state, stream)
             : XR_OK;
}

xr_status_t xr_kernel_instance_status(xr_kernel_instance_t *instance) {
  return instance->impl->status ? instance->impl->status(instance->state) : XR_OK;
}

void xr_kernel_instance_destroy(xr_kernel_instance_t *instance) {
  if (!instance) return;
  if (instance->impl->release) instance->impl->release(instance->state);
  free(instance);
}

/* ------------------------------------------------------------------------------------------ */
/* argument readers                                                                            */

const xr_value_t *xr_op_arg(const xr_op_t *op, int position, const char *name) {
  if (name) {
    const xr_arg_t *a = xr_op_find_arg(op, name);
    if (a) return &a->value;
  }
  /* Positional fallback only for unnamed arguments (traces without a known schema). */
  if (position >= 0 && (size_t)position < op->arg_count && !op->args[position].name)
    return &op->args[position].value;
  return NULL;
}

static xr_status_t missing(const xr_op_t *op, int position, const char *name, const char *what) {
  return xr_error(XR_INVALID_ARGUMENT, "%s: argument '%s' (position %d) %s", op->name,
                  name ? name : "?", position, what);
}

static const char *kind_name(xr_value_kind_t k) {
  static const char *const names[] = {"None", "a bool", "an int", "a float",
                                      "a string", "a list", "a tensor"};
  return (unsigned)k < 7 ? names[k] : "?";
}

/* Fetches a present, non-None value of the wanted kind; absent optional -> *out_v NULL. */
static xr_status_t fetch(const xr_op_t *op, int position, const char *name, bool required,
                         const xr_value_t **out_v) {
  const xr_value_t *v = xr_op_arg(op, position, name);
  *out_v = NULL;
  if (!v || v->kind == XR_VALUE_NULL) return required ? missing(op, position, name, "is missing") : XR_OK;
  *out_v = v;
  return XR_OK;
}

static xr_status_t wrong_kind(const xr_op_t *op, const char *name, const char *want,
                              const xr_value_t *v) {
  return xr_error(XR_INVALID_ARGUMENT, "%s: argument '%s': expected %s, got %s", op->name,
                  name ? name : "?", want, kind_name(v->kind));
}

int xr_plan_input_index(const xr_op_plan_t *plan, const xr_tensor_spec_t *t) {
  for (size_t i = 0; i < plan->input_count; i++)
    if (plan->inputs[i] == t) return (int)i;
  return -1;
}

xr_status_t xr_plan_wrap_dim(const xr_op_plan_t *plan, int64_t dim, int rank, int *out) {
  int64_t r = rank > 0 ? rank : 1;
  if (dim < -r || dim >= r)
    return xr_plan_error(plan, "dim: %lld is out of range for a %d-D tensor", (long long)dim, rank);
  *out = (int)(dim < 0 ? dim + r : dim);
  return XR_OK;
}

xr_status_t xr_arg_tensor_list(const xr_op_t *op, int position, const char *name,
                               const xr_value_t **out_list) {
  const xr_value_t *v = xr_op_arg(op, position, name);
  *out_list = NULL;
  if (!v) return missing(op, position, name, "is missing");
  if (v->kind == XR_VALUE_NULL)
    return xr_error(XR_UNIMPLEMENTED, "%s: argument '%s' (Tensor[]) %s", op->name,
                    name ? name : "?", unrecorded_reason);
  if (v->kind != XR_VALUE_LIST)
    return xr_error(XR_INVALID_ARGUMENT, "%s: argument '%s' (position %d): expected a list of "
                    "tensors, got %s", op->name, name ? name : "?", position, kind_name(v->kind));
  *out_list = v;
  return XR_OK;
}

xr_status_t xr_arg_tensor(const xr_op_plan_t *plan, int position, const char *name, bool required,
                          int *out_index) {
  const xr_value_t *v;
  xr_status_t st = fetch(plan->op, position, name, required, &v);
  *out_index = -1;
  if (st != XR_OK || !v) return st;
  if (v->kind != XR_VALUE_TENSOR) return wrong_kind(plan->op, name, "a tensor", v);
  for (size_t i = 0; i < plan->input_count; i++)
    if (plan->inputs[i] == v->as.tensor) *out_index = (int)i;
  return XR_OK;
}

xr_status_t xr_arg_int(const xr_op_t *op, int position, const char *name, bool required,
                       int64_t *out) {
  const xr_value_t *v;
  xr_status_t st = fetch(op, position, name, required, &v);
  if (st != XR_OK || !v) return st;
  if (v->kind == XR_VALUE_BOOL) *out = v->as.b;
  else if (v->kind == XR_VALUE_INT) *out = v->as.i;
  else return wrong_kind(op, name, "an int", v);
  return XR_OK;
}

xr_status_t xr_arg_double(const xr_op_t *op, int position, const char *name, bool required,
                          double *out) {
  const xr_value_t *v;
  xr_status_t st = fetch(op, position, name, required, &v);
  if (st != XR_OK || !v) return st;
  if (v->kind == XR_VALUE_FLOAT) *out = v->as.f;
  else if (v->kind == XR_VALUE_INT) *out = (double)v->as.i;
  else if (v->kind == XR_VALUE_BOOL) *out = v->as.b;
  else return wrong_kind(op, name, "a number", v);
  return XR_OK;
}

xr_status_t xr_arg_bool(const xr_op_t *op, int position, const char *name, bool required,
                        bool *out) {
  const xr_value_t *v;
  xr_status_t st = fetch(op, position, name, required, &v);
  if (st != XR_OK || !v) return st;
  if (v->kind == XR_VALUE_BOOL) *out = v->as.b;
  else if (v->kind == XR_VALUE_INT) *out = v->as.i != 0;
  else return wrong_kind(op, name, "a bool", v);
  return XR_OK;
}

xr_status_t xr_arg_string(const xr_op_t *op, int position, const char *name, bool required,
                          const char **out) {
  const xr_value_t *v;
  xr_status_t st = fetch(op, position, name, required, &v);
  if (st != XR_OK || !v) return st;
  if (v->kind != XR_VALUE_STRING) return wrong_kind(op, name, "a string", v);
  *out = v->as.s;
  return XR_OK;
}

xr_status_t xr_arg_int_list(const xr_op_t *op, int position, const char *name, bool required,
                            int64_t *out, int capacity, int *out_count) {
  const xr_value_t *v;
  xr_status_t st = fetch(op, position, name, required, &v);
  if (st != XR_OK || !v) return st;
  if (v->kind == XR_VALUE_INT) {
    if (capacity < 1) return missing(op, position, name, "has too many entries");
    out[0] = v->as.i;
    *out_count = 1;
    return XR_OK;
  }
  if (v->kind != XR_VALUE_LIST) return wrong_kind(op, name, "a list of ints", v);
  if (v->as.list.count > (size_t)capacity) return missing(op, position, name, "has too many entries");
  for (size_t i = 0; i < v->as.list.count; i++) {
    if (v->as.list.items[i].kind != XR_VALUE_INT)
      return wrong_kind(op, name, "a list of ints", &v->as.list.items[i]);
    out[i] = v->as.list.items[i].as.i;
  }
  *out_count = (int)v->as.list.count;
  return XR_OK;
}

xr_status_t xr_plan_error(const xr_op_plan_t *plan, const char *fmt, ...) {
  char what[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return xr_error(XR_INVALID_ARGUMENT, "%s: %s", plan->op->name, what);
}

void xr_contiguous_strides(int rank, const int64_t *shape, int64_t *out_strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) out_strides[d] = s, s *= shape[d];
}

void xr_desc_set(xr_tensor_desc_t *d, xr_dtype_t dtype, int32_t rank, const int64_t *shape) {
  d->dtype = dtype;
  d->rank = rank;
  d->dense_strides = false;
  for (int32_t i = 0; i < rank; i++) d->shape[i] = shape[i];
}

bool xr_spec_channels_last(const xr_tensor_spec_t *t) {
  if (t->rank < 4 || t->rank > 5 || xr_tensor_is_contiguous(t)) return false;
  int64_t expect = 1;
  for (int i = 0; i < t->rank; i++) {
    int d = i == 0 ? 1 : i == t->rank - 1 ? 0 : t->rank - i; /* c, then w, h(, d), then n */
    if (t->shape[d] != 1 && t->strides[d] != expect) return false;
    expect *= t->shape[d];
  }
  return true;
}

void xr_desc_set_format(xr_tensor_desc_t *d, xr_dtype_t dtype, int32_t rank, const int64_t *shape,
                        bool channels_last, int64_t *out_strides) {
  xr_desc_set(d, dtype, rank, shape);
  xr_contiguous_strides(rank, shape, out_strides);
  if (!channels_last || rank < 4 || rank > 5) return;
  int64_t s = shape[1];
  out_strides[1] = 1;
  for (int k = rank - 1; k >= 2; k--) out_strides[k] = s, s *= shape[k];
  out_strides[0] = s;
  d->dense_strides = true;
  for (int k = 0; k < rank; k++) d->strides[k] = out_strides[k];
}

int64_t xr_desc_numel(const xr_tensor_desc_t *d) {
  int64_t n = 1;
  for (int32_t i = 0; i < d->rank; i++) n *= d->shape[i];
  return n;
}

bool xr_spec_embedded_int(const xr_tensor_spec_t *t, int64_t linear, int64_t *out) {
  if (!t->data) return false;
  int64_t at = t->storage_offset;
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    at += (linear % t->shape[d]) * t->strides[d];
    linear /= t->shape[d];
  }
  size_t size = xr_dtype_size(t->dtype);
  if (at < 0 || size == 0 || (uint64_t)at >= t->data_size / size) return false;
  const uint8_t *p = t->data + (size_t)at * size;
  switch (t->dtype) {
    case XR_DTYPE_BOOL: *out = *p != 0; break;
    case XR_DTYPE_U8: *out = *p; break;
    case XR_DTYPE_I8: *out = (int8_t)*p; break;
    case XR_DTYPE_I16: { int16_t v; memcpy(&v, p, 2); *out = v; break; }
    case XR_DTYPE_U16: { uint16_t v; memcpy(&v, p, 2); *out = v; break; }
    case XR_DTYPE_I32: { int32_t v; memcpy(&v, p, 4); *out = v; break; }
    case XR_DTYPE_U32: { uint32_t v; memcpy(&v, p, 4); *out = v; break; }
    case XR_DTYPE_I64:
    case XR_DTYPE_U64: { int64_t v; memcpy(&v, p, 8); *out = v; break; }
    default: return false; /* floats: not read as integers */
  }
  return true;
}

int64_t xr_spec_numel(const xr_tensor_spec_t *t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

double xr_spec_distinct_numel(const xr_tensor_spec_t *t) {
  double n = 1;
  for (int32_t i = 0; i < t->rank; i++)
    if (t->strides[i] != 0 || t->shape[i] == 0) n *= (double)t->shape[i];
  return n;
}

xr_status_t xr_tensor_host(const xr_tensor_t *t, void **out_base) {
  return xr_hal_buffer_host_pointer(t->buffer, out_base);
}

xr_status_t xr_host_call_create(const xr_op_plan_t *plan, const xr_tensor_t *tensors,
                                xr_host_call_t **out_call) {
  size_t n = plan->input_count + plan->return_count;
  xr_host_call_t *c = malloc(sizeof *c + n * sizeof(xr_tensor_t));
  if (!c) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  c->plan = plan;
  c->tensor_count = n;
  memcpy(c->tensors, tensors, n * sizeof(xr_tensor_t));
  *out_call = c;
  return XR_OK;
}

xr_status_t xr_kernel_compact(const xr_op_plan_t *plan, xr_arena_t *arena, xr_op_t **out_op) {
  *out_op = NULL;
  return plan->family && plan->family->compact ? plan->family->compact(plan, arena, out_op)
                                               : XR_OK;
}

int64_t xr_kernel_result_rows(const xr_op_plan_t *plan, bool *row_inputs) {
  for (size_t i = 0; i < plan->input_count; i++) row_inputs[i] = false;
  return plan->family && plan->family->result_rows ? plan->family->result_rows(plan, row_inputs)
                                                   : 0;
}

/* A copy of `v` with the tensor `from` (wherever it sits, in a list too) replaced by `to`. */
static xr_status_t copy_value(xr_arena_t *arena, const xr_value_t *v, const xr_tensor_spec_t *from,
                              xr_tensor_spec_t *to, xr_value_t *out) {
  *out = *v;
  if (v->kind == XR_VALUE_TENSOR && v->as.tensor == from) out->as.tensor = to;
  if (v->kind != XR_VALUE_LIST) return XR_OK;
  out->as.list.items = xr_arena_alloc(arena, sizeof *v->as.list.items * (v->as.list.count + 1));
  if (!out->as.list.items) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t k = 0; k < v->as.list.count; k++) {
    xr_status_t st = copy_value(arena, &v->as.list.items[k], from, to, &out->as.list.items[k]);
    if (st != XR_OK) return st;
  }
  return XR_OK;
}

xr_status_t xr_plan_op_resized(const xr_op_plan_t *plan, const int64_t *dim0, xr_arena_t *arena,
                               xr_op_t **out_op) {
  xr_op_t *op = xr_arena_alloc(arena, sizeof *op);
  if (!op) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  *op = *plan->op;
  xr_status_t st = xr_op_alloc_args(arena, op, plan->op->arg_count, plan->op->kwarg_count);
  size_t n = op->arg_count + op->kwarg_count;
  for (size_t k = 0; st == XR_OK && k < n; k++) {
    const xr_arg_t *a = k < op->arg_count ? &plan->op->args[k] : &plan->op->kwargs[k - op->arg_count];
    xr_arg_t *b = k < op->arg_count ? &op->args[k] : &op->kwargs[k - op->arg_count];
    *b = *a;
  }
  for (size_t i = 0; st == XR_OK && i < plan->input_count; i++) {
    const xr_tensor_spec_t *whole = plan->inputs[i];
    if (dim0[i] < 0 || whole->rank < 1 || dim0[i] == whole->shape[0]) continue;
    xr_tensor_spec_t *cut = xr_arena_alloc(arena, sizeof *cut);
    int64_t *dims = xr_arena_alloc(arena, sizeof(int64_t) * 2 * (size_t)whole->rank);
    if (!cut || !dims) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
    *cut = *whole;
    cut->shape = dims, cut->strides = dims + whole->rank;
    memcpy(cut->shape, whole->shape, sizeof(int64_t) * (size_t)whole->rank);
    memcpy(cut->strides, whole->strides, sizeof(int64_t) * (size_t)whole->rank);
    cut->shape[0] = dim0[i];
    cut->storage_size = -1;
    for (size_t k = 0; st == XR_OK && k < n; k++) {
      xr_arg_t *b = k < op->arg_count ? &op->args[k] : &op->kwargs[k - op->arg_count];
      xr_value_t copy;
      st = copy_value(arena, &b->value, whole, cut, &copy);
      b->value = copy;
    }
  }
  *out_op = op;
  return st;
}

xr_status_t xr_op_hint_int(xr_arena_t *arena, xr_op_t *op, const char *name, int64_t value) {
  xr_arg_t *hints = xr_arena_alloc(arena, sizeof *hints * (op->hint_count + 1));
  char *copy = xr_arena_strdup(arena, name);
  if (!hints || !copy) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  if (op->hint_count) memcpy(hints, op->hints, sizeof *hints * op->hint_count);
  memset(&hints[op->hint_count], 0, sizeof *hints);
  hints[op->hint_count].name = copy;
  hints[op->hint_count].value.kind = XR_VALUE_INT;
  hints[op->hint_count].value.as.i = value;
  op->hints = hints;
  op->hint_count++;
  return XR_OK;
}

xr_status_t xr_kernel_op_rows(const xr_op_plan_t *plan, const bool *row_inputs, int64_t rows,
                              xr_arena_t *arena, xr_op_t **out_op) {
  int64_t *dim0 = xr_arena_alloc(arena, sizeof(int64_t) * (plan->input_count + 1));
  if (!dim0) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < plan->input_count; i++)
    dim0[i] = row_inputs[i] && plan->inputs[i]->rank > 0 && rows < plan->inputs[i]->shape[0]
                  ? rows
                  : -1;
  return xr_plan_op_resized(plan, dim0, arena, out_op);
}

xr_initializer_fn xr_kernel_initializer(const xr_op_plan_t *plan) {
  const struct xr_op_initializer *i = plan->family ? plan->family->initializers : NULL;
  for (; i && i->op_name; i++)
    if (strcmp(i->op_name, plan->op->name) == 0) return i->fn;
  return NULL;
}
