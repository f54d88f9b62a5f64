/* The replay engine: one op at a time, plan -> select -> tensors -> first run (check, dump) ->
 * warm-up -> timed iterations between device events. */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "kernels/dtype.h"
#include "replay/internal.h"

void xr_replay_options_default(xr_replay_options_t *o) {
  memset(o, 0, sizeof *o);
  o->device = "auto";
  o->warmup = 3;
  o->iters = 20;
  o->max_iters = 100000;
  o->rotate = 1;
  o->op_limit = -1;
}

const char *xr_op_outcome_name(xr_op_outcome_t outcome) {
  switch (outcome) {
    case XR_OP_SUCCEEDED: return "ok";
    case XR_OP_FAILED: return "failed";
    case XR_OP_UNSUPPORTED: return "unsupported";
  }
  return "?";
}

/* Everything one run shares across ops. */
typedef struct engine {
  const xr_bundle_t *bundle;
  const xr_replay_options_t *o;
  xr_hal_device_t *device;
  xr_hal_device_properties_t props;
  xr_hal_stream_t *stream;
  xr_hal_event_t **events;     /* 2 per timed iteration */
  int event_count;
  xr_hal_buffer_t *flush;      /* cold-cache flush buffer, 2x the LLC */
  xr_hal_device_t *cpu;        /* for --check: the reference runs here */
  xr_hal_stream_t *cpu_stream;
} engine_t;

/* One op's tensors on one device. */
typedef struct op_tensors {
  size_t count;                /* inputs + returns */
  xr_tensor_t *t;
  size_t *bytes;
} op_tensors_t;

static void tensors_free(op_tensors_t *ts) {
  if (!ts->t) return;
  for (size_t i = 0; i < ts->count; i++) xr_hal_buffer_free(ts->t[i].buffer);
  free(ts->t);
  free(ts->bytes);
  memset(ts, 0, sizeof *ts);
}

/* Allocates buffers for every input (its whole storage) and return of a plan. */
static xr_status_t tensors_alloc(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                 op_tensors_t *ts) {
  ts->count = plan->input_count + plan->return_count;
  ts->t = calloc(ts->count ? ts->count : 1, sizeof *ts->t);
  ts->bytes = calloc(ts->count ? ts->count : 1, sizeof *ts->bytes);
  if (!ts->t || !ts->bytes) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  for (size_t i = 0; i < ts->count; i++) {
    xr_tensor_t *t = &ts->t[i];
    if (i < plan->input_count) {
      const xr_tensor_spec_t *s = plan->inputs[i];
      xr_status_t st = xr_tensor_storage_bytes(s, &ts->bytes[i]);
      if (st != XR_OK) return st;
      t->dtype = s->dtype;
      t->rank = s->rank;
      memcpy(t->shape, s->shape, sizeof(int64_t) * (size_t)s->rank);
      memcpy(t->strides, s->strides, sizeof(int64_t) * (size_t)s->rank);
      t->offset = s->storage_offset;
    } else {
      const xr_tensor_desc_t *d = &plan->returns[i - plan->input_count];
      t->dtype = d->dtype;
      t->rank = d->rank;
      int64_t s = 1;
      for (int32_t k = d->rank - 1; k >= 0; k--) {
        t->shape[k] = d->shape[k];
        t->strides[k] = s;
        s *= d->shape[k];
      }
      ts->bytes[i] = (size_t)s * xr_dtype_size(d->dtype);
    }
    xr_status_t st = xr_hal_buffer_alloc(device, ts->bytes[i], &t->buffer);
    if (st != XR_OK) return xr_error_prefix(st, "tensor %zu: ", i);
  }
  return XR_OK;
}

/* Host contents of an op's inputs (initialised once, reused for rebuilds and the check) and of
 * its outputs after the first run. */
typedef struct host_data {
  size_t count;
  void **data;
  bool *has_data;
  char policy[256];
} host_data_t;

static void host_free(host_data_t *h) {
  if (!h->data) return;
  for (size_t i = 0; i < h->count; i++) free(h->data[i]);
  free(h->data);
  free(h->has_data);
  memset(h, 0, sizeof *h);
}

static xr_status_t host_init(const engine_t *e, size_t op_index, const xr_op_plan_t *plan,
                             const op_tensors_t *ts, host_data_t *h) {
  h->count = ts->count;
  h->data = calloc(ts->count ? ts->count : 1, sizeof *h->data);
  h->has_data = calloc(ts->count ? ts->count : 1, sizeof *h->has_data);
  if (!h->data || !h->has_data) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  for (size_t i = 0; i < ts->count; i++) {
    h->data[i] = malloc(ts->bytes[i] ? ts->bytes[i] : 1);
    if (!h->data[i])
      return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory for %zu bytes", ts->bytes[i]);
    if (i >= plan->input_count) {
      xr_poison(h->data[i], ts->t[i].dtype, ts->bytes[i]);
      continue;
    }
    const xr_tensor_spec_t *s = plan->inputs[i];
    if (s->data || s->data_file) {
      uint8_t *bytes;
      size_t n;
      xr_status_t st = xr_tensor_read_data(e->bundle, s, &bytes, &n);
      if (st != XR_OK) return xr_error_prefix(st, "tensor %zu contents: ", i);
      memcpy(h->data[i], bytes, n < ts->bytes[i] ? n : ts->bytes[i]);
      free(bytes);
      h->has_data[i] = true;
    } else {
      xr_fill(h->data[i], s, ts->bytes[i], xr_seed_for(e->o->seed, op_index, i));
    }
  }
  xr_initializer_fn fn = xr_find_initializer(plan);
  if (fn) {
    const char *params = NULL;
    char buf[512];
    /* --init "op:policy;op2:policy" entries for this exact op name. */
    if (e->o->init_overrides) {
      size_t name_len = strlen(plan->op->name);
      for (const char *p = e->o->init_overrides; p && *p;) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > name_len && !strncmp(p, plan->op->name, name_len) && p[name_len] == ':') {
          snprintf(buf, sizeof buf, "%.*s", (int)(len - name_len - 1), p + name_len + 1);
          params = buf;
        }
        p = end ? end + 1 : NULL;
      }
    }
    xr_init_context_t ctx = {
        .op = plan->op,
        .plan = plan,
        .host = h->data,
        .sizes = ts->bytes,
        .has_data = h->has_data,
        .seed = xr_seed_for(e->o->seed, op_index, 1000),
        .params = params,
        .policy = h->policy,
        .policy_size = sizeof h->policy,
    };
    xr_status_t st = fn(&ctx);
    if (st != XR_OK) return xr_error_prefix(st, "initializer for %s: ", plan->op->name);
  }
  return XR_OK;
}

static xr_status_t upload(const op_tensors_t *ts, const host_data_t *h) {
  for (size_t i = 0; i < ts->count; i++) {
    if (!ts->bytes[i]) continue;
    xr_status_t st = xr_hal_buffer_write(ts->t[i].buffer, 0, h->data[i], ts->bytes[i]);
    if (st != XR_OK) return st;
  }
  return XR_OK;
}

/* Indices of an op's outputs: its returns, then the inputs it writes. */
static size_t output_indices(const xr_op_plan_t *plan, size_t *out, size_t cap) {
  size_t n = 0;
  for (size_t r = 0; r < plan->return_count && n < cap; r++) out[n++] = plan->input_count + r;
  for (size_t i = 0; i < plan->input_count && n < cap; i++)
    if (plan->input_written[i]) out[n++] = i;
  return n;
}

/* The name "target" has in golden manifests: return0, or the written argument's name. */
static void output_target(const xr_op_plan_t *plan, size_t index, char *out, size_t n) {
  if (index >= plan->input_count) {
    snprintf(out, n, "return%zu", index - plan->input_count);
    return;
  }
  const xr_op_t *op = plan->op;
  const xr_tensor_spec_t *spec = plan->inputs[index];
  for (size_t k = 0; k < op->arg_count + op->kwarg_count; k++) {
    const xr_arg_t *a = k < op->arg_count ? &op->args[k] : &op->kwargs[k - op->arg_count];
    if (a->value.kind == XR_VALUE_TENSOR && a->value.as.tensor == spec) {
      snprintf(out, n, "%s", a->name ? a->name : "arg");
      return;
    }
  }
  snprintf(out, n, "input%zu", index);
}

static xr_status_t read_back(const op_tensors_t *ts, size_t i, void **out) {
  *out = malloc(ts->bytes[i] ? ts->bytes[i] : 1);
  if (!*out) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  if (!ts->bytes[i]) return XR_OK;
  xr_status_t st = xr_hal_buffer_read(*out, ts->t[i].buffer, 0, ts->bytes[i]);
  if (st != XR_OK) {
    free(*out);
    *out = NULL;
  }
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* check against the CPU reference                                                             */

static xr_status_t run_reference(engine_t *e, const xr_op_plan_t *plan, const host_data_t *h,
                                 op_tensors_t *ref) {
  const xr_kernel_impl_t *impl;
  xr_status_t st = xr_kernel_select(plan, e->cpu, XR_KERNEL_REFERENCE, &impl);
  if (st != XR_OK) return st;
  if ((st = tensors_alloc(plan, e->cpu, ref)) != XR_OK || (st = upload(ref, h)) != XR_OK) return st;
  xr_kernel_instance_t *inst;
  if ((st = xr_kernel_prepare(plan, impl, e->cpu, ref->t, &inst)) != XR_OK) return st;
  st = xr_kernel_enqueue(inst, e->cpu_stream);
  xr_status_t sync = xr_hal_stream_synchronize(e->cpu_stream);
  xr_kernel_instance_destroy(inst);
  return st != XR_OK ? st : sync;
}

static void compare_output(const xr_tensor_t *t, const void *actual, const void *expected,
                           xr_op_result_t *r, size_t slot) {
  int64_t n;
  double *a = xr_gather(actual, t->dtype, t->rank, t->shape, t->strides, t->offset, &n);
  double *b = xr_gather(expected, t->dtype, t->rank, t->shape, t->strides, t->offset, &n);
  double num = 0, den = 0;
  bool nonfinite = false;
  if (a && b) {
    for (int64_t i = 0; i < n; i++) {
      if (!isfinite(a[i]) && isfinite(b[i])) nonfinite = true;
      double d = a[i] - b[i];
      if (isfinite(d)) num += d * d;
      if (isfinite(b[i])) den += b[i] * b[i];
    }
  } else {
    nonfinite = true;
  }
  free(a);
  free(b);
  r->outputs[slot].nmse = den > 0 ? num / den : (num > 0 ? INFINITY : 0);
  r->outputs[slot].nonfinite = nonfinite;
  r->outputs[slot].threshold = xr_check_threshold(t->dtype);
}

/* ------------------------------------------------------------------------------------------ */
/* timing                                                                                      */

static xr_status_t ensure_events(engine_t *e, int needed) {
  if (needed <= e->event_count) return XR_OK;
  xr_hal_event_t **grown = realloc(e->events, (size_t)needed * sizeof *grown);
  if (!grown) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory for events");
  e->events = grown;
  for (; e->event_count < needed; e->event_count++) {
    xr_status_t st = xr_hal_event_create(e->device, &e->events[e->event_count]);
    if (st != XR_OK) return st;
  }
  return XR_OK;
}

static double wall_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

typedef struct gate {
  atomic_int open;
} gate_t;

static void gate_wait(void *context) {
  gate_t *g = context;
  while (!atomic_load_explicit(&g->open, memory_order_acquire)) sched_yield();
}

/* Times executions in batches: per iteration an optional flush (outside the window), a start
 * event, the op, an end event; the host waits once per batch. */
static xr_status_t time_op(engine_t *e, xr_kernel_instance_t **instances, int rotate,
                           xr_op_result_t *r) {
  const xr_replay_options_t *o = e->o;
  enum { BATCH = 32 };
  xr_status_t st = ensure_events(e, 2 * BATCH);
  if (st != XR_OK) return st;
  int cap = o->iters > 0 ? o->iters : 1;
  double *samples = malloc(sizeof(double) * (size_t)cap);
  if (!samples) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  int n = 0;
  double total_ms = 0, wall_ms = 0;
  uint8_t zero = 0;
  for (int w = 0; w < o->warmup && st == XR_OK; w++)
    st = xr_kernel_enqueue(instances[w % rotate], e->stream);
  while (st == XR_OK && n < o->max_iters && (n < o->iters || total_ms < o->min_time_ms)) {
    if (o->cancel && *o->cancel) break;
    int batch = BATCH;
    if (n + batch > o->max_iters) batch = o->max_iters - n;
    if (n < o->iters && o->iters - n < batch) batch = o->iters - n;
    double t0 = wall_now_ms();
    /* Hold the stream until the whole batch is queued (where the device runs host work), so
     * that the events time the kernels back to back rather than how fast the host enqueues
     * them — nvbench's "blocking kernel" idea. The gate opens whatever happens below. */
    gate_t gate = {0};
    bool gated = xr_hal_stream_enqueue_host(e->stream, gate_wait, &gate) == XR_OK;
    for (int i = 0; i < batch && st == XR_OK; i++) {
      if (e->flush)
        st = xr_hal_stream_fill(e->stream, e->flush, 0, xr_hal_buffer_size(e->flush), &zero, 1);
      if (st == XR_OK) st = xr_hal_event_record(e->events[2 * i], e->stream);
      if (st == XR_OK) st = xr_kernel_enqueue(instances[(n + i) % rotate], e->stream);
      if (st == XR_OK) st = xr_hal_event_record(e->events[2 * i + 1], e->stream);
    }
    if (gated) atomic_store_explicit(&gate.open, 1, memory_order_release);
    if (st == XR_OK) st = xr_hal_stream_synchronize(e->stream);
    else if (gated) xr_hal_stream_synchronize(e->stream); /* the gate lives on this stack */
    wall_ms += wall_now_ms() - t0;
    for (int i = 0; i < batch && st == XR_OK; i++) {
      double ms;
      st = xr_hal_event_elapsed_ms(e->events[2 * i], e->events[2 * i + 1], &ms);
      if (st != XR_OK) break;
      if (n == cap) {
        double *grown = realloc(samples, sizeof(double) * (size_t)(cap *= 2));
        if (!grown) {
          st = xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
          break;
        }
        samples = grown;
      }
      samples[n++] = ms * 1000.0;
      total_ms += ms;
    }
  }
  if (st == XR_OK && n > 0) {
    xr_stats(samples, n, r);
    r->host_us_per_iteration = wall_ms * 1000.0 / n;
  }
  free(samples);
  return st;
}

static xr_hal_peak_dtype_t peak_dtype(xr_dtype_t d) {
  switch (d) {
    case XR_DTYPE_F64: return XR_HAL_PEAK_FP64;
    case XR_DTYPE_F16: return XR_HAL_PEAK_FP16;
    case XR_DTYPE_BF16: return XR_HAL_PEAK_BF16;
    case XR_DTYPE_F8E4M3FN:
    case XR_DTYPE_F8E5M2:
    case XR_DTYPE_F8E4M3FNUZ:
    case XR_DTYPE_F8E5M2FNUZ: return XR_HAL_PEAK_FP8;
    default: return XR_HAL_PEAK_FP32;
  }
}

static void derive_rates(const engine_t *e, const xr_op_plan_t *plan, xr_op_result_t *r) {
  r->flops = plan->flops;
  r->bytes = plan->bytes;
  if (r->median_us <= 0) return;
  r->tflops = plan->flops / (r->median_us * 1e-6) / 1e12;
  r->gbps = plan->bytes / (r->median_us * 1e-6) / 1e9;
  xr_dtype_t d = plan->input_count ? plan->inputs[0]->dtype
                                   : (plan->return_count ? plan->returns[0].dtype : XR_DTYPE_F32);
  double peak = e->props.peak_flops[peak_dtype(d)].value, bw = e->props.memory_bandwidth.value;
  r->compute_bound = peak > 0 && bw > 0 && plan->bytes > 0 && plan->flops / plan->bytes > peak / bw;
  if (r->compute_bound && peak > 0) r->peak_percent = 100.0 * r->tflops * 1e12 / peak;
  else if (bw > 0) r->peak_percent = 100.0 * r->gbps * 1e9 / bw;
}

/* ------------------------------------------------------------------------------------------ */
/* one op                                                                                      */

static xr_op_outcome_t fail(xr_op_result_t *r, xr_op_outcome_t outcome, const char *prefix) {
  snprintf(r->message, sizeof r->message, "%s%s", prefix, xr_last_error());
  return r->outcome = outcome;
}

static void dump_outputs(const engine_t *e, const xr_op_plan_t *plan, const op_tensors_t *ts,
                         void *const *outputs, const size_t *idx, size_t n, xr_op_result_t *r) {
  for (size_t k = 0; k < n; k++) {
    char target[64], path[4096];
    output_target(plan, idx[k], target, sizeof target);
    snprintf(path, sizeof path, "%s/op%zu_%s.npy", e->o->dump_dir, r->index, target);
    const xr_tensor_t *t = &ts->t[idx[k]];
    if (xr_npy_write(path, outputs[k], t->dtype, t->rank, t->shape, t->strides, t->offset) != XR_OK &&
        r->outcome == XR_OP_SUCCEEDED)
      fail(r, XR_OP_FAILED, "dump: ");
  }
}

static void run_op(engine_t *e, size_t index, xr_op_result_t *r) {
  const xr_op_t *op = &e->bundle->ops[index];
  memset(r, 0, sizeof *r);
  r->index = index;
  r->op = op;
  r->trace_us = -1;
  snprintf(r->device, sizeof r->device, "%s", e->props.name);
  if (op->timing && op->timing->gpu_time_us >= 0)
    r->trace_us = op->timing->gpu_time_us / (double)(op->count > 0 ? op->count : 1);

  xr_op_plan_t plan;
  xr_status_t st = xr_kernel_plan(op, &plan);
  if (st == XR_NOT_FOUND) {
    fail(r, XR_OP_UNSUPPORTED, "");
    return;
  }
  if (st != XR_OK) {
    fail(r, XR_OP_FAILED, "");
    return;
  }
  r->flops = plan.flops;
  r->bytes = plan.bytes;
  const xr_kernel_impl_t *impl;
  if ((st = xr_kernel_select(&plan, e->device, e->o->choice, &impl)) != XR_OK) {
    fail(r, XR_OP_UNSUPPORTED, "");
    xr_kernel_plan_free(&plan);
    return;
  }
  snprintf(r->kernel, sizeof r->kernel, "%s", xr_kernel_impl_name(impl));

  int rotate = e->o->rotate > 0 ? e->o->rotate : 1;
  op_tensors_t *ts = calloc((size_t)rotate, sizeof *ts);
  xr_kernel_instance_t **inst = calloc((size_t)rotate, sizeof *inst);
  host_data_t h = {0};
  size_t idx[XR_MAX_CHECKED_OUTPUTS];
  void *outputs[XR_MAX_CHECKED_OUTPUTS] = {0};
  size_t n_out = output_indices(&plan, idx, XR_MAX_CHECKED_OUTPUTS);
  op_tensors_t ref = {0};
  r->outcome = XR_OP_SUCCEEDED;
  if (!ts || !inst) {
    xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
    fail(r, XR_OP_FAILED, "");
    goto out;
  }
  /* Tensors: every rotation copy gets the same initial contents. */
  for (int k = 0; k < rotate; k++) {
    if ((st = tensors_alloc(&plan, e->device, &ts[k])) != XR_OK) {
      fail(r, XR_OP_FAILED, "allocating tensors: ");
      goto out;
    }
    if (k == 0 && (st = host_init(e, index, &plan, &ts[0], &h)) != XR_OK) {
      fail(r, XR_OP_FAILED, "");
      goto out;
    }
    if ((st = upload(&ts[k], &h)) != XR_OK ||
        (st = xr_kernel_prepare(&plan, impl, e->device, ts[k].t, &inst[k])) != XR_OK) {
      fail(r, XR_OP_FAILED, "");
      goto out;
    }
  }
  snprintf(r->init_policy, sizeof r->init_policy, "%s", h.policy);

  /* First execution on fresh inputs: what --check compares and --dump-outputs writes. */
  if ((st = xr_kernel_enqueue(inst[0], e->stream)) != XR_OK ||
      (st = xr_hal_stream_synchronize(e->stream)) != XR_OK) {
    fail(r, XR_OP_FAILED, "");
    goto out;
  }
  r->output_count = n_out;
  for (size_t k = 0; k < n_out; k++) {
    output_target(&plan, idx[k], r->outputs[k].target, sizeof r->outputs[k].target);
    r->outputs[k].dtype = ts[0].t[idx[k]].dtype;
    if ((st = read_back(&ts[0], idx[k], &outputs[k])) != XR_OK) {
      fail(r, XR_OP_FAILED, "reading outputs: ");
      goto out;
    }
  }
  if (e->o->dump_dir) dump_outputs(e, &plan, &ts[0], outputs, idx, n_out, r);
  if (e->o->check) {
    if ((st = run_reference(e, &plan, &h, &ref)) != XR_OK) {
      fail(r, XR_OP_FAILED, "reference: ");
      goto out;
    }
    r->checked = true;
    r->check_passed = true;
    for (size_t k = 0; k < n_out; k++) {
      void *expected;
      if ((st = read_back(&ref, idx[k], &expected)) != XR_OK) {
        fail(r, XR_OP_FAILED, "reference outputs: ");
        goto out;
      }
      compare_output(&ts[0].t[idx[k]], outputs[k], expected, r, k);
      free(expected);
      if (r->outputs[k].nonfinite || !(r->outputs[k].nmse <= r->outputs[k].threshold))
        r->check_passed = false;
    }
    if (!r->check_passed && r->outcome == XR_OP_SUCCEEDED) {
      r->outcome = XR_OP_FAILED;
      snprintf(r->message, sizeof r->message, "check failed: %s nmse %.3g (threshold %.1g)%s",
               r->outputs[0].target, r->outputs[0].nmse, r->outputs[0].threshold,
               r->outputs[0].nonfinite ? ", NaN/Inf in the output" : "");
    }
  }
  if ((st = time_op(e, inst, rotate, r)) != XR_OK) {
    fail(r, XR_OP_FAILED, "timing: ");
    goto out;
  }
  derive_rates(e, &plan, r);
out:
  for (int k = 0; k < rotate; k++) {
    if (inst && inst[k]) {
      xr_hal_stream_synchronize(e->stream);
      xr_kernel_instance_destroy(inst[k]);
    }
    if (ts) tensors_free(&ts[k]);
  }
  for (size_t k = 0; k < n_out; k++) free(outputs[k]);
  tensors_free(&ref);
  free(ts);
  free(inst);
  host_free(&h);
  xr_kernel_plan_free(&plan);
}

/* ------------------------------------------------------------------------------------------ */

static void engine_close(engine_t *e) {
  if (e->stream) xr_hal_stream_synchronize(e->stream);
  for (int i = 0; i < e->event_count; i++) xr_hal_event_destroy(e->events[i]);
  free(e->events);
  xr_hal_buffer_free(e->flush);
  xr_hal_stream_destroy(e->stream);
  xr_hal_stream_destroy(e->cpu_stream);
  if (e->cpu) xr_hal_device_destroy(e->cpu);
  if (e->device) xr_hal_device_destroy(e->device);
}

static xr_status_t engine_open(engine_t *e) {
  const xr_replay_options_t *o = e->o;
  xr_status_t st = xr_hal_device_create(o->device ? o->device : "auto", &e->device);
  if (st != XR_OK) return st;
  if ((st = xr_hal_device_properties(e->device, &e->props)) != XR_OK ||
      (st = xr_hal_stream_create(e->device, &e->stream)) != XR_OK)
    return st;
  if (o->calibrate && e->props.memory_bandwidth.source == XR_HAL_FIGURE_UNKNOWN) {
    /* A device without figures still runs; it just gets no "% of peak". */
    if (xr_hal_device_calibrate(e->device) == XR_OK) xr_hal_device_properties(e->device, &e->props);
  }
  if (o->cache == XR_CACHE_COLD) {
    uint64_t llc = e->props.last_level_cache_bytes ? e->props.last_level_cache_bytes : 64u << 20;
    if ((st = xr_hal_buffer_alloc(e->device, (size_t)(2 * llc), &e->flush)) != XR_OK) return st;
  }
  if (o->check || o->choice == XR_KERNEL_REFERENCE) {
    if ((st = xr_hal_device_create("cpu", &e->cpu)) != XR_OK ||
        (st = xr_hal_stream_create(e->cpu, &e->cpu_stream)) != XR_OK)
      return st;
  }
  return XR_OK;
}

xr_status_t xr_replay_run(const xr_bundle_t *bundle, const xr_replay_options_t *options,
                          xr_replay_observer_fn observer, void *context,
                          xr_replay_summary_t *out_summary) {
  xr_replay_options_t defaults;
  xr_replay_options_default(&defaults);
  const xr_replay_options_t *o = options ? options : &defaults;
  if (o->iters < 0 || o->warmup < 0 || o->rotate < 0 || o->max_iters < 1 || o->min_time_ms < 0)
    return xr_error(XR_INVALID_ARGUMENT, "replay: negative iterations, warm-up, rotation or time");
  if (o->dump_dir && mkdir(o->dump_dir, 0777) != 0 && errno != EEXIST)
    return xr_error(XR_INVALID_ARGUMENT, "%s: cannot create the dump directory: %s", o->dump_dir,
                    strerror(errno));
  xr_replay_summary_t summary = {.total = bundle->op_count};
  engine_t e = {.bundle = bundle, .o = o};
  xr_status_t st = engine_open(&e);
  if (st != XR_OK) {
    engine_close(&e);
    return st;
  }
  /* Which ops run: filter, then limit. */
  size_t selected = 0;
  for (size_t i = 0; i < bundle->op_count; i++) {
    const xr_op_t *op = &bundle->ops[i];
    double t = op->timing && op->timing->gpu_time_us > 0 ? op->timing->gpu_time_us : 0;
    summary.trace_total_us += t;
    if (o->op_filter && !strstr(op->name, o->op_filter)) continue;
    if (o->op_limit >= 0 && selected >= (size_t)o->op_limit) continue;
    selected++;
  }
  size_t position = 0;
  for (size_t i = 0; i < bundle->op_count && position < selected; i++) {
    const xr_op_t *op = &bundle->ops[i];
    if (o->op_filter && !strstr(op->name, o->op_filter)) continue;
    if (o->cancel && *o->cancel) {
      summary.cancelled = true;
      break;
    }
    xr_op_result_t r;
    run_op(&e, i, &r);
    summary.attempted++;
    if (r.outcome == XR_OP_SUCCEEDED) {
      summary.succeeded++;
      if (op->timing && op->timing->gpu_time_us > 0) summary.trace_covered_us += op->timing->gpu_time_us;
    } else if (r.outcome == XR_OP_FAILED) {
      summary.failed++;
    } else {
      summary.unsupported++;
    }
    if (observer) observer(context, &r, position, selected);
    position++;
    if (r.outcome == XR_OP_FAILED && o->stop_on_error) break;
  }
  if (o->cancel && *o->cancel) summary.cancelled = true;
  engine_close(&e);
  if (out_summary) *out_summary = summary;
  return XR_OK;
}
