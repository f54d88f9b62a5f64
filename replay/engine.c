/* The replay engine: one op at a time, plan -> on each device: decide (select, memory; the
 * decision xr_replay_plan makes, replay/plan.c) -> inputs (once) -> tensors -> first run (check,
 * compare, dump) -> warm-up -> timed iterations between device events. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kernels/dtype.h"
#include "replay/internal.h"
#include "replay/shard.h"
#include "replay/timeline.h"
#include "replay/trace_ratio.h"

/* One device of the run and what timing on it needs. */
typedef struct device_run {
  xr_replay_device_t *info;    /* in the summary */
  xr_hal_device_t *device;
  xr_hal_stream_t *stream;
  xr_hal_event_t **events;     /* 2 per timed iteration of a batch */
  int event_count;
  xr_hal_buffer_t *flush;      /* cold-cache flush buffer (xr_flush_bytes) */
  bool held;                   /* the stream runs host work: batches are queued behind a gate */
  bool host_run;               /* the device's work runs on this host's CPUs (cpu, opencl on a
                                  CPU): a crowded host distorts its samples */
  bool graphs;                 /* the device's properties say streams capture into graphs */
  bool clocks;                 /* xr_hal_device_clocks answers */
  xr_trace_ratios_t ratios;    /* replayed vs recorded, gathered op by op */
  bool ratios_lost;            /* out of memory gathering them */
  /* The flush writes at least every cache together: cold data comes from DRAM (a --flush-bytes
   * smaller than the caches leaves it in them). */
  bool flush_covers_caches;
  int cpus;                    /* the host's online CPUs */
  int loadavg;                 /* /proc/loadavg, open on host-run devices; -1 otherwise */
  char dump_dir[4096];         /* "" when outputs are not dumped */
  xr_timeline_t *timeline;     /* the run's (--timeline), NULL without */
} device_run_t;

/* Everything one run shares across ops. */
typedef struct engine {
  const xr_bundle_t *bundle;
  const xr_replay_options_t *o;
  xr_replay_summary_t *summary;
  device_run_t devices[XR_REPLAY_MAX_DEVICES];
  size_t device_count;
  xr_replay_devices_t owned;   /* the devices the run opened itself (options->devices NULL) */
  xr_hal_device_t *cpu;        /* for --check: the reference runs here */
  bool cpu_owned;              /* opened for the reference: no device of the run is the host */
  xr_hal_stream_t *cpu_stream;
  xr_decide_context_t decide;  /* what xr_decide needs of the run */
  xr_timeline_t *timeline;     /* --timeline, NULL without */
} engine_t;

/* One op's work shared by every device it runs on: its plan and layout (what xr_decide decides
 * from), its inputs (initialised once), the reference's outputs (--check, computed once) and the
 * first device's outputs (compared with the others'). Host buffers hold whole storages, as the
 * devices' do. */
typedef struct op_work {
  xr_planned_op_t p;
  xr_once_t inputs, reference_run;
  xr_once_t group;             /* a collective's process group, made before any device runs it */
  void **host;                 /* per tensor: initial contents (outputs poisoned) */
  bool *has_data;
  char policy[1024];
  void *reference[XR_MAX_CHECKED_OUTPUTS];
  double reference_ms, reference_peak_bytes; /* what computing it cost (run_reference) */
  bool have_first;
  void *first[XR_MAX_CHECKED_OUTPUTS];
  /* --check on the first p.check_rows rows: the op cut to them (its op in rows_arena), whose
   * host buffers are this op's (each cut tensor a prefix of the whole one's storage). */
  struct op_work *rows;
  xr_arena_t *rows_arena;
} op_work_t;

/* ------------------------------------------------------------------------------------------ */
/* tensors                                                                                     */

/* One op's tensors on one device. */
typedef struct op_tensors {
  size_t count;
  xr_tensor_t *t;
} op_tensors_t;

static void tensors_free(op_tensors_t *ts) {
  if (!ts->t) return;
  for (size_t i = 0; i < ts->count; i++) xr_hal_buffer_free(ts->t[i].buffer);
  free(ts->t);
  memset(ts, 0, sizeof *ts);
}

/* Buffers for every tensor of the op on `device`, filled with the initial contents. */
static xr_status_t tensors_upload(const op_work_t *w, xr_hal_device_t *device, op_tensors_t *ts) {
  ts->count = w->p.count;
  ts->t = calloc(w->p.count ? w->p.count : 1, sizeof *ts->t);
  if (!ts->t) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  for (size_t i = 0; i < w->p.count; i++) {
    ts->t[i] = w->p.layout[i];
    xr_status_t st = xr_hal_buffer_alloc(device, w->p.bytes[i], &ts->t[i].buffer);
    if (st != XR_OK) return xr_error_prefix(st, "allocating tensor %zu: ", i);
    if (w->p.bytes[i] == 0) continue;
    st = xr_hal_buffer_write(ts->t[i].buffer, 0, w->host[i], w->p.bytes[i]);
    if (st != XR_OK) return st;
  }
  return XR_OK;
}

static xr_status_t read_back(const op_tensors_t *ts, const op_work_t *w, size_t i, void **out) {
  *out = malloc(w->p.bytes[i] ? w->p.bytes[i] : 1);
  if (!*out) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  if (!w->p.bytes[i]) return XR_OK;
  xr_status_t st = xr_hal_buffer_read(*out, ts->t[i].buffer, 0, w->p.bytes[i]);
  if (st != XR_OK) {
    free(*out);
    *out = NULL;
  }
  return st;
}

/* ------------------------------------------------------------------------------------------ */
/* the op's shared work                                                                        */

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
    for (size_t i = 0; a->value.kind == XR_VALUE_LIST && i < a->value.as.list.count; i++) {
      const xr_value_t *item = &a->value.as.list.items[i];
      if (item->kind == XR_VALUE_TENSOR && item->as.tensor == spec) { /* "self.0" */
        snprintf(out, n, "%s.%zu", a->name ? a->name : "arg", i);
        return;
      }
    }
  }
  snprintf(out, n, "input%zu", index);
}

static void work_free(op_work_t *w) {
  if (w->rows) {
    w->rows->host = NULL; /* borrowed */
    w->rows->has_data = NULL;
    work_free(w->rows);
    free(w->rows);
  }
  xr_arena_destroy(w->rows_arena);
  for (size_t i = 0; w->host && i < w->p.count; i++) free(w->host[i]);
  free(w->host);
  free(w->has_data);
  for (size_t k = 0; k < XR_MAX_CHECKED_OUTPUTS; k++) {
    free(w->reference[k]);
    free(w->first[k]);
  }
  xr_planned_op_free(&w->p);
}

/* The op's --init policy: the last one given for its name, or NULL. */
static const char *init_params(const xr_replay_options_t *o, const char *name) {
  const char *params = NULL;
  for (size_t i = 0; i < o->init_override_count; i++)
    if (!strcmp(o->init_overrides[i].op, name)) params = o->init_overrides[i].policy;
  return params;
}

/* The initial contents, once xr_decide has checked that they fit: the bundle's, else the
 * default fill (outputs poisoned), then the op's custom initializer. */
static xr_status_t init_inputs(const engine_t *e, op_work_t *w) {
  const xr_op_plan_t *plan = &w->p.plan;
  size_t n = w->p.count ? w->p.count : 1;
  w->host = calloc(n, sizeof *w->host);
  w->has_data = calloc(n, sizeof *w->has_data);
  if (!w->host || !w->has_data) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  for (size_t i = 0; i < w->p.count; i++) {
    xr_status_t st;
    const xr_tensor_spec_t *s = i < plan->input_count ? plan->inputs[i] : NULL;
    if (s && (s->data || s->data_file)) {
      /* The contents as read: exactly the storage's bytes (xr_tensor_read_data). */
      size_t size;
      st = xr_tensor_read_data(e->bundle, s, (uint8_t **)&w->host[i], &size);
      if (st != XR_OK) return xr_error_prefix(st, "tensor %zu contents: ", i);
      w->has_data[i] = true;
      continue;
    }
    w->host[i] = malloc(w->p.bytes[i] ? w->p.bytes[i] : 1);
    if (!w->host[i])
      return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory for %zu bytes", w->p.bytes[i]);
    if (s) xr_fill(w->host[i], s, w->p.bytes[i], xr_seed_for(e->o->seed, w->p.index, i));
    else xr_poison(w->host[i], w->p.layout[i].dtype, w->p.bytes[i]);
  }
  xr_initializer_fn fn = xr_find_initializer(plan);
  if (!fn) return XR_OK;
  xr_init_context_t ctx = {
      .op = plan->op,
      .plan = plan,
      .host = w->host,
      .sizes = w->p.bytes,
      .has_data = w->has_data,
      .seed = xr_seed_for(e->o->seed, w->p.index, 1000),
      .params = init_params(e->o, plan->op->name),
      .policy = w->policy,
      .policy_size = sizeof w->policy,
      .flops = &w->p.plan.flops,
      .bytes = &w->p.plan.bytes,
  };
  xr_status_t st = fn(&ctx);
  return st == XR_OK ? XR_OK : xr_error_prefix(st, "initializer for %s: ", plan->op->name);
}

/* The inputs, once per op: the first device that gets this far initialises them. */
static xr_status_t work_inputs(const engine_t *e, op_work_t *w) {
  return w->inputs.done ? xr_once_replay(&w->inputs) : xr_once_keep(&w->inputs, init_inputs(e, w));
}

/* The reference's outputs, once per op (--check). */
static double wall_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A field of /proc/self/status in bytes ("VmRSS", "VmHWM"); -1 when unreadable. */
static double status_bytes(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  double kb = -1;
  size_t n = strlen(field);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, field, n) && line[n] == ':') {
      kb = strtod(line + n + 1, NULL);
      break;
    }
  fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

/* Resets the process's resident high-water mark (Linux: "5" to /proc/self/clear_refs). */
static bool reset_peak_rss(void) {
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  bool ok = fputs("5", f) >= 0;
  return fclose(f) == 0 && ok;
}

static xr_status_t compute_reference(engine_t *e, op_work_t *w) {
  op_tensors_t ref = {0};
  xr_kernel_instance_t *inst = NULL;
  const xr_kernel_impl_t *impl;
  xr_status_t st = xr_kernel_select(&w->p.plan, e->cpu, XR_KERNEL_REFERENCE, &impl);
  if (st == XR_OK) st = tensors_upload(w, e->cpu, &ref);
  if (st == XR_OK) st = xr_kernel_prepare(&w->p.plan, impl, e->cpu, ref.t, &inst);
  if (st == XR_OK) st = xr_kernel_enqueue(inst, e->cpu_stream);
  xr_status_t sync = inst ? xr_hal_stream_synchronize(e->cpu_stream) : XR_OK;
  if (st == XR_OK) st = sync;
  for (size_t k = 0; st == XR_OK && k < w->p.out_count; k++)
    st = read_back(&ref, w, w->p.out[k], &w->reference[k]);
  xr_kernel_instance_destroy(inst);
  tensors_free(&ref);
  return st;
}

/* The op cut to its first p.check_rows result rows (w->rows), on the op's own host buffers. */
static xr_status_t cut_to_rows(op_work_t *w) {
  const xr_op_plan_t *plan = &w->p.plan;
  bool *row_inputs = calloc(plan->input_count ? plan->input_count : 1, sizeof *row_inputs);
  xr_op_t *op = NULL;
  xr_status_t st = row_inputs && (w->rows = calloc(1, sizeof *w->rows))
                       ? xr_arena_create(&w->rows_arena)
                       : xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  if (st == XR_OK) {
    xr_kernel_result_rows(plan, row_inputs);
    st = xr_kernel_op_rows(plan, row_inputs, w->p.check_rows, w->rows_arena, &op);
  }
  free(row_inputs);
  if (st != XR_OK) return st;
  op_work_t *r = w->rows;
  xr_planned_op_init_op(op, w->p.index, &r->p);
  if (r->p.planned.status != XR_OK) return xr_once_replay(&r->p.planned);
  if (r->p.laid_out.status != XR_OK) return xr_once_replay(&r->p.laid_out);
  if (r->p.count != w->p.count || r->p.out_count != w->p.out_count)
    return xr_error(XR_INTERNAL, "the op cut to %lld rows has other tensors",
                    (long long)w->p.check_rows);
  r->host = w->host;
  r->has_data = w->has_data;
  return XR_OK;
}

/* The reference, and what it cost: its wall time and the resident memory it added at its peak. */
static xr_status_t run_reference(engine_t *e, op_work_t *w) {
  xr_status_t st = w->p.check_rows > 0 ? cut_to_rows(w) : XR_OK;
  if (st != XR_OK) return xr_error_prefix(st, "cutting the op to its first rows: ");
  double before = status_bytes("VmRSS"), t0 = wall_now_ms();
  bool peak = before >= 0 && reset_peak_rss();
  st = compute_reference(e, w->rows ? w->rows : w);
  w->reference_ms = wall_now_ms() - t0;
  double high = peak ? status_bytes("VmHWM") : -1;
  w->reference_peak_bytes = high >= before && high >= 0 ? high - before : -1;
  return st;
}

static xr_status_t work_reference(engine_t *e, op_work_t *w) {
  return w->reference_run.done ? xr_once_replay(&w->reference_run)
                               : xr_once_keep(&w->reference_run, run_reference(e, w));
}

/* ------------------------------------------------------------------------------------------ */
/* comparisons                                                                                 */

double xr_replay_nmse(const xr_tensor_t *view, const void *actual, const void *expected,
                      bool *out_nonfinite) {
  double num, den;
  bool nonfinite;
  xr_compare_views(actual, expected, view->dtype, view->rank, view->shape, view->strides,
                   view->offset, &num, &den, &nonfinite);
  if (out_nonfinite) *out_nonfinite = nonfinite;
  return den > 0 ? num / den : (num > 0 ? INFINITY : 0);
}

/* ------------------------------------------------------------------------------------------ */
/* timing                                                                                      */

static xr_status_t ensure_events(device_run_t *d, int needed) {
  if (needed <= d->event_count) return XR_OK;
  xr_hal_event_t **grown = realloc(d->events, (size_t)needed * sizeof *grown);
  if (!grown) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory for events");
  d->events = grown;
  for (; d->event_count < needed; d->event_count++) {
    xr_status_t st = xr_hal_event_create(d->device, &d->events[d->event_count]);
    if (st != XR_OK) return st;
  }
  return XR_OK;
}


typedef struct gate {
  atomic_int open;
} gate_t;

static void gate_wait(void *context) {
  gate_t *g = context;
  while (!atomic_load_explicit(&g->open, memory_order_acquire)) sched_yield();
}

/* Threads runnable on the whole machine now, this one left out: the fourth field of
 * /proc/loadavg ("running/total"), read through `fd` kept open (a few microseconds); -1 where
 * it cannot be read. */
static int runnable_now(int fd) {
  char text[128];
  ssize_t size = fd >= 0 ? pread(fd, text, sizeof text - 1, 0) : -1;
  if (size <= 0) return -1;
  text[size] = '\0';
  int running;
  if (sscanf(text, "%*f %*f %*f %d/", &running) != 1) return -1;
  return running > 0 ? running - 1 : running;
}

/* Nanoseconds this process's threads have waited for a CPU while runnable (the second field of
 * each /proc/self/task/TID/schedstat); -1 where the kernel does not keep it. Read before and
 * after a batch, the difference covers the whole batch, not one instant of it. */
static long long run_delay_ns(void) {
  DIR *tasks = opendir("/proc/self/task");
  if (!tasks) return -1;
  long long sum = 0;
  bool any = false;
  for (struct dirent *e; (e = readdir(tasks));) {
    if (e->d_name[0] == '.') continue;
    char path[64], text[128];
    snprintf(path, sizeof path, "/proc/self/task/%.20s/schedstat", e->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t size = read(fd, text, sizeof text - 1);
    close(fd);
    long long on_cpu, waited;
    if (size <= 0) continue;
    text[size] = '\0';
    if (sscanf(text, "%lld %lld", &on_cpu, &waited) != 2) continue;
    sum += waited;
    any = true;
  }
  closedir(tasks);
  return any ? sum : -1;
}

/* The samples of one timing pass, in the order taken, and what was seen while taking them. */
typedef struct timing_pass {
  double *all;  /* every sample */
  double *kept; /* those of batches during which the machine was not crowded */
  int n, kept_n, cap;
  double all_ms, kept_ms; /* their sums */
  int batches, crowded_batches;
  long runnable_sum;
  int judged_at; /* samples the noise rule last judged */
  double wall_ms;
  uint32_t clocks[512]; /* clock readings, one per batch (the first 512) */
  int clock_n;
} timing_pass_t;

static xr_status_t pass_append(timing_pass_t *t, double sample_us, bool crowded) {
  if (t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 256;
    double *all = realloc(t->all, sizeof(double) * (size_t)cap);
    if (all) t->all = all;
    double *kept = all ? realloc(t->kept, sizeof(double) * (size_t)cap) : NULL;
    if (kept) t->kept = kept;
    if (!all || !kept) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory for samples");
    t->cap = cap;
  }
  t->all[t->n++] = sample_us;
  t->all_ms += sample_us / 1000.0;
  if (crowded) return XR_OK;
  t->kept[t->kept_n++] = sample_us;
  t->kept_ms += sample_us / 1000.0;
  return XR_OK;
}

/* Executions per graph launch: enough that one launch runs about GRAPH_US. */
enum { GRAPH_US = 1000, GRAPH_MAX_EXECUTIONS = 1000, BATCH = 32, BATCH_MS = 10 };

/* One batch: per execution an optional flush (outside the window), a start event, the op (or
 * the graph of `graph_executions` of them), an end event; the host waits once at the end. */
static xr_status_t run_batch(device_run_t *d, xr_kernel_instance_t **instances, int rotate,
                             int first, int batch, bool flush, xr_hal_graph_t *graph,
                             int *out_runnable) {
  xr_status_t st = XR_OK;
  uint8_t zero = 0;
  /* Hold the stream until the whole batch is queued (where the device runs host work), so
   * that the events time the kernels back to back rather than how fast the host enqueues
   * them — nvbench's "blocking kernel" idea. The gate opens whatever happens below. */
  gate_t gate = {0};
  bool gated = xr_hal_stream_enqueue_host(d->stream, gate_wait, &gate) == XR_OK;
  for (int i = 0; i < batch && st == XR_OK; i++) {
    if (flush)
      st = xr_hal_stream_fill(d->stream, d->flush, 0, xr_hal_buffer_size(d->flush), &zero, 1);
    if (st == XR_OK && !graph)
      st = xr_kernel_enqueue_prologue(instances[(first + i) % rotate], d->stream);
    if (st == XR_OK) st = xr_hal_event_record(d->events[2 * i], d->stream);
    if (st == XR_OK)
      st = graph ? xr_hal_graph_launch(graph, d->stream)
                 : xr_kernel_enqueue(instances[(first + i) % rotate], d->stream);
    if (st == XR_OK) st = xr_hal_event_record(d->events[2 * i + 1], d->stream);
  }
  if (gated) atomic_store_explicit(&gate.open, 1, memory_order_release);
  /* While the batch runs: how many threads want the machine's CPUs. */
  if (out_runnable) *out_runnable = runnable_now(d->loadavg);
  xr_status_t sync = xr_hal_stream_synchronize(d->stream); /* the gate lives on this stack */
  if (sync == XR_OK) sync = xr_kernel_instance_status(instances[0]);
  return st == XR_OK ? sync : st;
}

/* Captures `executions` back-to-back executions in one graph (cuda, hip). */
static xr_status_t capture_graph(device_run_t *d, xr_kernel_instance_t **instances, int rotate,
                                 int executions, xr_hal_graph_t **out_graph) {
  xr_status_t st = xr_hal_stream_begin_capture(d->stream);
  if (st != XR_OK) return st;
  for (int i = 0; i < executions && st == XR_OK; i++)
    st = xr_kernel_enqueue(instances[i % rotate], d->stream);
  xr_hal_graph_t *graph = NULL;
  xr_status_t ended = xr_hal_stream_end_capture(d->stream, &graph); /* ends it in any case */
  if (st == XR_OK) st = ended;
  if (st != XR_OK) {
    xr_hal_graph_destroy(graph);
    return st;
  }
  *out_graph = graph;
  return XR_OK;
}

/* Graph launches for eager executions of about `eager_us`: the graph, warmed up once, and its
 * executions per launch; or, leaving *out_graph NULL, a note on why the op is timed eager. */
static void prepare_graph(device_run_t *d, xr_kernel_instance_t **instances, int rotate,
                          double eager_us, xr_hal_graph_t **out_graph, int *out_executions,
                          xr_op_result_t *r) {
  int executions = eager_us > 0 ? (int)ceil(GRAPH_US / eager_us) : GRAPH_MAX_EXECUTIONS;
  if (executions > GRAPH_MAX_EXECUTIONS) executions = GRAPH_MAX_EXECUTIONS;
  if (executions < 1) executions = 1;
  xr_hal_graph_t *graph = NULL;
  xr_status_t st = capture_graph(d, instances, rotate, executions, &graph);
  if (st == XR_OK) st = xr_hal_graph_launch(graph, d->stream);
  if (st == XR_OK) st = xr_hal_stream_synchronize(d->stream);
  if (st != XR_OK) {
    snprintf(r->launch_note, sizeof r->launch_note, "graph capture failed, timed eager: %s",
             xr_last_error());
    xr_hal_graph_destroy(graph);
    return;
  }
  *out_graph = graph;
  *out_executions = executions;
}

/* A batch as the timeline draws it (timeline_batch). */
typedef struct timeline_batch {
  int batch, executions; /* samples, and executions per sample (a graph launch's) */
  double end_us;         /* on the timeline's clock, when the host saw the batch end */
  int first_sample, index;
  bool crowded, cold;
} timeline_batch_t;

/* The batch's samples on the timeline: each one's start and length from the device's own
 * events, the batch placed so that its last event falls when the host saw it end (the device
 * clock has no common origin with the host's; a batch's end is the closest the host sees). */
static void timeline_batch(device_run_t *d, const timeline_batch_t *b) {
  double span_ms;
  xr_status_t st = xr_hal_event_elapsed_ms(d->events[0], d->events[2 * b->batch - 1], &span_ms);
  double origin_us = b->end_us - span_ms * 1000.0;
  for (int i = 0; i < b->batch && st == XR_OK; i++) {
    if (!xr_timeline_wants_sample(d->timeline)) continue;
    double start_ms = 0, ms;
    if (i > 0) st = xr_hal_event_elapsed_ms(d->events[0], d->events[2 * i], &start_ms);
    if (st == XR_OK) st = xr_hal_event_elapsed_ms(d->events[2 * i], d->events[2 * i + 1], &ms);
    if (st != XR_OK) break;
    xr_timeline_sample_t s = {.ts_us = origin_us + start_ms * 1000.0,
                              .dur_us = ms * 1000.0,
                              .sample = b->first_sample + i,
                              .batch = b->index,
                              .executions = b->executions,
                              .crowded = b->crowded,
                              .cold = b->cold};
    xr_timeline_sample(d->timeline, &s);
  }
}

/* Collectives across ranks execute as often on every rank: rank 0's batch sizes and stop
 * decisions are everyone's. `agree` is the communicator then, NULL otherwise. */
static const char *const stop_reasons[] = {"iterations", "noise", "max-time", "max-iterations",
                                           "cancelled"};

static xr_status_t agree_stop(xr_hal_comm_t *agree, const char **reason) {
  int code = 0, n = (int)(sizeof stop_reasons / sizeof *stop_reasons);
  while (*reason && code < n && strcmp(stop_reasons[code], *reason)) code++;
  code = *reason ? code + 1 : 0;
  xr_status_t st = xr_hal_comm_host_broadcast(agree, &code, sizeof code, 0);
  if (st == XR_OK) *reason = code > 0 && code <= n ? stop_reasons[code - 1] : NULL;
  return st;
}

/* One timing pass: warm-up, then batches until the stop rule says so. `first_us`: the wall time
 * of the op's first execution, what the first batch is sized by. */
static xr_status_t time_pass(const xr_replay_options_t *o, device_run_t *d,
                             xr_kernel_instance_t **instances, int rotate, bool flush,
                             double first_us, xr_hal_comm_t *agree, timing_pass_t *t,
                             xr_op_result_t *r) {
  xr_status_t st = XR_OK;
  uint8_t zero = 0;
  double warm_us = xr_timeline_now_us(d->timeline);
  for (int i = 0; i < o->warmup && st == XR_OK; i++) {
    if (flush)
      st = xr_hal_stream_fill(d->stream, d->flush, 0, xr_hal_buffer_size(d->flush), &zero, 1);
    if (st == XR_OK) st = xr_kernel_enqueue(instances[i % rotate], d->stream);
  }
  if (st == XR_OK) st = xr_hal_stream_synchronize(d->stream); /* warm-up out of the wall time */
  if (st == XR_OK) st = xr_kernel_instance_status(instances[0]);
  if (st == XR_OK && o->warmup > 0)
    xr_timeline_warmup(d->timeline, "warm-up", warm_us, xr_timeline_now_us(d->timeline),
                       o->warmup, flush);
  xr_hal_graph_t *graph = NULL;
  int executions = 0;
  if (st == XR_OK && o->launch == XR_LAUNCH_GRAPH && d->graphs) {
    /* A short eager batch tells how many executions make a graph of about GRAPH_US. */
    int probe = 4;
    st = run_batch(d, instances, rotate, 0, probe, false, NULL, NULL);
    double eager_us = 0;
    for (int i = 0; i < probe && st == XR_OK; i++) {
      double ms;
      st = xr_hal_event_elapsed_ms(d->events[2 * i], d->events[2 * i + 1], &ms);
      if (st == XR_OK && (i == 0 || ms * 1000 < eager_us)) eager_us = ms * 1000;
    }
    if (st == XR_OK) prepare_graph(d, instances, rotate, eager_us, &graph, &executions, r);
  }
  r->graph_executions = graph ? executions : 0;
  while (st == XR_OK) {
    if (!agree && o->cancel && *o->cancel) {
      r->stop_reason = "cancelled";
      break;
    }
    /* Batches of about BATCH_MS, so that the host's view of the machine (one reading per
     * batch) stays close to each sample: sized from the first execution's wall time, then from
     * the samples. */
    double typical = t->n ? xr_typical_sample(t->all, t->n) : first_us;
    int batch = typical > 0 ? (int)ceil(BATCH_MS * 1000.0 / typical) : BATCH;
    batch = batch < 1 ? 1 : batch > BATCH ? BATCH : batch;
    if (o->stop == XR_STOP_ITERATIONS && t->n < o->iters && o->iters - t->n < batch)
      batch = o->iters - t->n;
    if (t->n + batch > o->max_iters) batch = o->max_iters - t->n;
    if (agree && (st = xr_hal_comm_host_broadcast(agree, &batch, sizeof batch, 0)) != XR_OK) break;
    xr_hal_clocks_t clocks;
    if (d->clocks && t->clock_n < (int)(sizeof t->clocks / sizeof t->clocks[0]) &&
        xr_hal_device_clocks(d->device, &clocks) == XR_OK && clocks.current_mhz)
      t->clocks[t->clock_n++] = clocks.current_mhz;
    int runnable = -1;
    long long delay0 = d->host_run ? run_delay_ns() : -1;
    double t0 = wall_now_ms();
    st = run_batch(d, instances, rotate, t->n, batch, flush, graph, &runnable);
    double batch_ms = wall_now_ms() - t0, end_us = xr_timeline_now_us(d->timeline);
    t->wall_ms += batch_ms;
    long long delay1 = delay0 >= 0 ? run_delay_ns() : -1;
    /* More threads wanted the CPUs than there are: some waited, and a host-run device's
     * samples show it. Seen two ways: the threads runnable while the batch ran, and, over the
     * whole batch, how long this process's threads waited for a CPU (more than a twentieth of
     * the batch: its time is not the kernel's own). The ranks of a collective poll for each
     * other: those are its own. */
    int own = agree ? xr_hal_comm_size(agree) - 1 : 0;
    bool waited = delay1 >= delay0 && delay0 >= 0 && (delay1 - delay0) * 1e-6 > batch_ms / 20;
    bool crowded = d->host_run && (runnable > d->cpus + own || waited);
    t->runnable_sum += runnable > 0 ? runnable : 0;
    if (st == XR_OK && d->timeline) {
      timeline_batch_t tb = {.batch = batch, .executions = graph ? executions : 1,
                             .end_us = end_us, .first_sample = t->n, .index = t->batches,
                             .crowded = crowded, .cold = flush};
      timeline_batch(d, &tb); /* a sample it cannot place is left out, the timing goes on */
    }
    t->batches++;
    t->crowded_batches += crowded;
    for (int i = 0; i < batch && st == XR_OK; i++) {
      double ms;
      st = xr_hal_event_elapsed_ms(d->events[2 * i], d->events[2 * i + 1], &ms);
      if (st == XR_OK) st = pass_append(t, ms * 1000.0 / (graph ? executions : 1), crowded);
    }
    if (st != XR_OK) break;
    /* The noise rule judges the samples it would keep; the iteration count counts them all.
     * Its statistic sorts the samples, so past a thousand it is judged every 5% more. */
    bool clean = o->stop == XR_STOP_NOISE && d->host_run;
    xr_timing_progress_t progress = {
        .samples_us = clean ? t->kept : t->all,
        .n = clean ? t->kept_n : t->n,
        .samples_ms = clean ? t->kept_ms : t->all_ms,
        .taken = t->n,
        .wall_ms = t->wall_ms,
    };
    progress.judge_noise = progress.n < 1000 || progress.n >= t->judged_at + progress.n / 20;
    if (progress.judge_noise) t->judged_at = progress.n;
    const char *reason = xr_stop_reason(o, &progress);
    if (agree && o->cancel && *o->cancel) reason = "cancelled";
    if (agree && (st = agree_stop(agree, &reason)) != XR_OK) break;
    if (reason) {
      r->stop_reason = reason;
      break;
    }
  }
  xr_hal_graph_destroy(graph);
  return st;
}

static int compare_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

/* The pass's statistics into `r`: over the kept samples unless most batches were crowded (then
 * over all of them, and the result says it is contended). */
static void pass_results(const xr_replay_options_t *o, timing_pass_t *t, xr_op_result_t *r) {
  r->noise_percent = -1;
  r->iterations = t->n;
  r->batches = t->batches;
  r->crowded_batches = t->crowded_batches;
  r->runnable_mean = t->batches ? (double)t->runnable_sum / t->batches : 0;
  r->contended = 2 * t->crowded_batches > t->batches;
  r->timed_wall_ms = t->wall_ms;
  r->host_us_per_iteration = t->n ? t->wall_ms * 1000.0 / t->n : 0;
  double *used = r->contended || t->kept_n == 0 ? t->all : t->kept;
  int n = used == t->all ? t->n : t->kept_n;
  if (n == 0) return;
  r->noise_percent = xr_stream_noise(used, n, &r->batch_size, &r->outliers); /* before sorting */
  int every = (n + XR_REPLAY_KEPT_SAMPLES - 1) / XR_REPLAY_KEPT_SAMPLES;
  r->sample_count = 0;
  for (int i = 0; i < n; i += every) r->samples_us[r->sample_count++] = used[i];
  r->noise_met = r->noise_percent >= 0 && r->noise_percent <= o->noise_percent && !r->contended;
  r->unstable = r->noise_percent > o->unstable_percent && !r->contended;
  xr_stats(used, n, r);
  if (t->clock_n) {
    qsort(t->clocks, (size_t)t->clock_n, sizeof t->clocks[0], compare_u32);
    r->clock_samples = t->clock_n;
    r->clock_min_mhz = t->clocks[0];
    r->clock_median_mhz = t->clocks[t->clock_n / 2];
  }
  r->slow_clock_samples = 0;
  for (int i = 0; i < t->clock_n && r->clock_default_mhz; i++)
    r->slow_clock_samples += t->clocks[i] < 0.75 * r->clock_default_mhz;
}

static void pass_free(timing_pass_t *t) {
  free(t->all);
  free(t->kept);
  memset(t, 0, sizeof *t);
}

/* Times the op: warm, cold, or warm then cold (--cache=both, the cold figures into cold_*). */
static xr_status_t time_op(const xr_replay_options_t *o, device_run_t *d,
                           xr_kernel_instance_t **instances, int rotate, double first_us,
                           xr_hal_comm_t *agree, xr_op_result_t *r) {
  xr_status_t st = ensure_events(d, 2 * BATCH);
  if (st != XR_OK) return st;
  r->rotate = rotate;
  xr_hal_clocks_t clocks;
  if (d->clocks && xr_hal_device_clocks(d->device, &clocks) == XR_OK)
    r->clock_default_mhz = clocks.default_mhz;
  timing_pass_t t = {0};
  st = time_pass(o, d, instances, rotate, o->cache == XR_CACHE_COLD, first_us, agree, &t, r);
  if (st == XR_OK) pass_results(o, &t, r);
  xr_timeline_pass_end(d->timeline, st != XR_OK || r->contended);
  r->launch = d->held ? "held" : r->graph_executions ? "graph" : "eager";
  pass_free(&t);
  if (o->cache != XR_CACHE_WARM) r->flush_bytes = xr_hal_buffer_size(d->flush);
  if (st != XR_OK || o->cache != XR_CACHE_BOTH) return st;
  xr_op_result_t cold = *r;
  st = time_pass(o, d, instances, rotate, true, first_us, agree, &t, &cold);
  if (st == XR_OK) pass_results(o, &t, &cold);
  xr_timeline_pass_end(d->timeline, st != XR_OK || cold.contended);
  pass_free(&t);
  r->cold_iterations = cold.iterations;
  r->cold_median_us = cold.median_us;
  r->cold_iqr_us = cold.iqr_us;
  r->cold_noise_percent = cold.noise_percent;
  if (cold.stop_reason && !strcmp(cold.stop_reason, "cancelled")) r->stop_reason = "cancelled";
  return st;
}

static xr_hal_peak_dtype_t peak_dtype(xr_dtype_t d) {
  switch (d) {
    case XR_DTYPE_F64: return XR_HAL_PEAK_FP64;
    case XR_DTYPE_F16: return XR_HAL_PEAK_FP16;
    case XR_DTYPE_BF16: return XR_HAL_PEAK_BF16;
    default: return xr_dtype_is_fp8(d) ? XR_HAL_PEAK_FP8 : XR_HAL_PEAK_FP32;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* one op on one device                                                                        */

static xr_op_outcome_t fail(xr_op_result_t *r, xr_op_outcome_t outcome, const char *prefix) {
  snprintf(r->message, sizeof r->message, "%s%s", prefix, xr_last_error());
  return r->outcome = outcome;
}

static void dump_outputs(const device_run_t *d, const op_work_t *w, void *const *outputs,
                         xr_op_result_t *r) {
  for (size_t k = 0; k < w->p.out_count; k++) {
    char path[8192];
    snprintf(path, sizeof path, "%s/op%zu_%s.npy", d->dump_dir, r->index, r->outputs[k].target);
    const xr_tensor_t *t = &w->p.layout[w->p.out[k]];
    if (xr_npy_write(path, outputs[k], t->dtype, t->rank, t->shape, t->strides, t->offset) !=
            XR_OK &&
        r->outcome == XR_OP_SUCCEEDED)
      fail(r, XR_OP_FAILED, "dump: ");
  }
}

/* The run was cancelled while this op was timed: a cut-short timing is no figure to report, so
 * the op goes back to what it was before timing (`untimed`: its check kept) and says how far
 * the timing got. */
static void interrupted(xr_op_result_t *r, const xr_op_result_t *untimed) {
  int taken = r->iterations;
  *r = *untimed;
  r->outcome = XR_OP_INTERRUPTED;
  r->stop_reason = "cancelled";
  snprintf(r->message, sizeof r->message,
           "interrupted while timing (%d of the samples it needed taken, none reported)", taken);
}

/* The first execution's outputs against the reference: the check. */
static void check_outputs(const op_work_t *w, void *const *outputs, xr_op_result_t *r) {
  r->checked = true;
  r->check_passed = true;
  for (size_t k = 0; k < w->p.out_count; k++) {
    r->outputs[k].nmse = xr_replay_nmse(&w->p.layout[w->p.out[k]], outputs[k], w->reference[k],
                                        &r->outputs[k].nonfinite);
    r->outputs[k].threshold = xr_check_threshold(w->p.layout[w->p.out[k]].dtype);
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

/* The ranks at hand when the op is a collective across several, NULL otherwise. */
static xr_hal_comm_t *across_ranks(const engine_t *e, const op_work_t *w) {
  xr_hal_comm_t *comm = e->o->comm;
  return comm && xr_hal_comm_size(comm) > 1 && w->p.planned.status == XR_OK && w->p.plan.collective
             ? comm
             : NULL;
}

/* Whether every rank can run the collective (each says so once, at the same point): a rank
 * that cannot would leave the others waiting in it. On a rank that could, the result says
 * which could not. */
static bool every_rank_ready(xr_hal_comm_t *comm, bool ready, xr_op_result_t *r) {
  int n = xr_hal_comm_size(comm);
  uint8_t mine = ready, *all = calloc((size_t)n, 1);
  xr_status_t st = all ? xr_hal_comm_host_allgather(comm, &mine, 1, all)
                       : xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  int missing = -1;
  for (int k = 0; st == XR_OK && k < n && missing < 0; k++)
    if (!all[k]) missing = k;
  free(all);
  if (!ready) return false;
  if (st != XR_OK) {
    fail(r, XR_OP_FAILED, "agreeing with the other ranks: ");
  } else if (missing >= 0) {
    r->outcome = XR_OP_FAILED;
    snprintf(r->message, sizeof r->message,
             "rank %d cannot run this collective (its stderr says why), so no rank runs it",
             missing);
  }
  return st == XR_OK && missing < 0;
}

/* A collective recorded in a group smaller than the world at hand runs in the world's groups
 * of that size: made here, once per kind, by every rank at the same op (ranks_agree saw them
 * replay the same ops), before any device runs it. */
static void make_group(const engine_t *e, op_work_t *w) {
  xr_hal_comm_t *world = e->o->comm;
  int size, stride;
  if (!world || xr_hal_comm_size(world) < 2 || w->p.planned.status != XR_OK ||
      !w->p.plan.collective)
    return;
  w->p.plan.comm = world;
  if (!xr_kernel_collective_group(&w->p.plan, &size, &stride)) return;
  xr_hal_comm_t *group;
  xr_once_keep(&w->group, xr_hal_comm_group(world, size, stride, &group));
}

/* A collective's time is its slowest rank's: every rank's median, and the bandwidths in its
 * group. */
static void gather_ranks(xr_hal_comm_t *comm, const xr_op_plan_t *plan, xr_op_result_t *r) {
  int n = comm ? xr_hal_comm_size(comm) : 1;
  double *medians = malloc(sizeof(double) * (size_t)n);
  xr_status_t st = medians ? XR_OK : xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  if (st == XR_OK && comm)
    st = xr_hal_comm_host_allgather(comm, &r->median_us, sizeof r->median_us, medians);
  else if (st == XR_OK)
    medians[0] = r->median_us;
  if (st != XR_OK) {
    fail(r, XR_OP_FAILED, "gathering the ranks' times: ");
    free(medians);
    return;
  }
  r->ranks = n;
  double slowest = 0;
  for (int k = 0; k < n; k++) {
    if (k < XR_REPLAY_MAX_RANK_MEDIANS) r->rank_median_us[k] = medians[k];
    if (medians[k] > slowest) slowest = medians[k];
  }
  free(medians);
  r->median_us = slowest;
  r->group_ranks = xr_kernel_collective_ranks(plan);
  if (slowest <= 0) return;
  r->algbw_gbps = xr_kernel_collective_bytes(plan, r->group_ranks) / (slowest * 1e-6) / 1e9;
  r->busbw_gbps = r->algbw_gbps * xr_bus_factor(plan->collective_kind, r->group_ranks);
  r->gbps = r->algbw_gbps;
  r->peak_percent = -1;
  snprintf(r->peak_basis, sizeof r->peak_basis,
           "none: a collective is bounded by its transport (see busbw_gbps)");
}

static void run_on_device(engine_t *e, size_t di, op_work_t *w, xr_op_result_t *r) {
  device_run_t *d = &e->devices[di];
  const xr_op_t *op = &e->bundle->ops[w->p.index];
  memset(r, 0, sizeof *r);
  r->index = w->p.index;
  r->op = op;
  r->device_index = di;
  r->trace_us = -1;
  r->noise_percent = r->cold_noise_percent = r->peak_percent = -1;
  snprintf(r->device, sizeof r->device, "%s", d->info->properties.name);
  if (op->timing && op->timing->gpu_time_us >= 0)
    r->trace_us = op->timing->gpu_time_us / (double)(op->count > 0 ? op->count : 1);
  r->family = "";
  r->peak_dtype = XR_HAL_PEAK_FP32;
  if (w->p.planned.status == XR_OK) {
    const xr_op_plan_t *plan = &w->p.plan;
    r->flops = plan->flops;
    r->bytes = plan->bytes;
    r->family = plan->family ? plan->family->name : "";
    r->peak_dtype = peak_dtype(plan->input_count ? plan->inputs[0]->dtype
                               : plan->return_count ? plan->returns[0].dtype
                                                    : XR_DTYPE_F32);
  }
  /* Whether it runs here: the one decision xr_replay_plan makes too. */
  const xr_kernel_impl_t *impl = NULL;
  r->outcome = xr_decide(&e->decide, &w->p, d->device, &d->info->properties, &impl, r->message,
                         sizeof r->message);
  if (impl) snprintf(r->kernel, sizeof r->kernel, "%s", xr_kernel_impl_name(impl));
  if (w->p.recorded) xr_planned_op_compact_note(&w->p, r->cache_note, sizeof r->cache_note);
  if (r->outcome == XR_OP_SUCCEEDED && w->group.done && w->group.status != XR_OK) {
    r->outcome = XR_OP_FAILED;
    snprintf(r->message, sizeof r->message, "its process group: %.900s", w->group.message);
  }
  xr_hal_comm_t *agree = across_ranks(e, w);
  if (r->outcome != XR_OP_SUCCEEDED) {
    if (agree) every_rank_ready(agree, false, r);
    return;
  }
  const xr_op_plan_t *plan = &w->p.plan;
  /* What only running finds out: the contents (files), the initializer, the kernel itself. */
  xr_status_t ready = work_inputs(e, w);
  if (ready != XR_OK) {
    fail(r, ready == XR_RESOURCE_EXHAUSTED ? XR_OP_UNSUPPORTED : XR_OP_FAILED, "");
    if (agree) every_rank_ready(agree, false, r);
    return;
  }
  snprintf(r->init_policy, sizeof r->init_policy, "%s", w->policy);
  r->flops = plan->flops; /* as the initializer left them (sequence lengths settled) */
  r->bytes = plan->bytes;
  r->outcome = XR_OP_SUCCEEDED;
  r->output_count = w->p.out_count;
  for (size_t k = 0; k < w->p.out_count; k++) {
    output_target(plan, w->p.out[k], r->outputs[k].target, sizeof r->outputs[k].target);
    r->outputs[k].dtype = w->p.layout[w->p.out[k]].dtype;
  }

  /* Every rotation copy gets the same initial contents. */
  int rotate = xr_rotate_copies(e->o->rotate, &d->info->properties, xr_planned_op_bytes(&w->p));
  bool ranged = false;
  op_tensors_t *ts = calloc((size_t)rotate, sizeof *ts);
  xr_kernel_instance_t **inst = calloc((size_t)rotate, sizeof *inst);
  void *outputs[XR_MAX_CHECKED_OUTPUTS] = {0};
  xr_status_t st = ts && inst ? XR_OK : xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  for (int k = 0; k < rotate && st == XR_OK; k++) {
    st = tensors_upload(w, d->device, &ts[k]);
    if (st == XR_OK) st = xr_kernel_prepare(plan, impl, d->device, ts[k].t, &inst[k]);
  }
  if (st != XR_OK) fail(r, XR_OP_FAILED, "");
  if (st == XR_OK)
    snprintf(r->algorithm, sizeof r->algorithm, "%s", xr_kernel_instance_algorithm(inst[0]));
  if (st == XR_OK && xr_kernel_instance_declined(inst[0])[0]) {
    /* What ran, when the selected implementation handed the op on in prepare. */
    snprintf(r->kernel, sizeof r->kernel, "%s", xr_kernel_instance_impl_name(inst[0]));
    snprintf(r->message, sizeof r->message, "%s", xr_kernel_instance_declined(inst[0]));
  }
  if (agree && !every_rank_ready(agree, st == XR_OK, r)) goto out;
  if (st != XR_OK) goto out;
  /* Every execution of the op, in a profiler's range of its own where the device has them. */
  char range[256];
  snprintf(range, sizeof range, "%zu %s", r->index, op->name);
  ranged = d->info->ranges && xr_hal_device_range_push(d->device, range) == XR_OK;
  /* The first execution on fresh inputs: what is checked, compared and dumped. */
  double first_ms = wall_now_ms(), first_ts = xr_timeline_now_us(d->timeline);
  if ((st = xr_kernel_enqueue(inst[0], d->stream)) != XR_OK ||
      (st = xr_hal_stream_synchronize(d->stream)) != XR_OK ||
      (st = xr_kernel_instance_status(inst[0])) != XR_OK) {
    fail(r, XR_OP_FAILED, "");
    goto out;
  }
  first_ms = wall_now_ms() - first_ms;
  xr_timeline_warmup(d->timeline, "first call", first_ts, xr_timeline_now_us(d->timeline), 1,
                     false);
  /* Every other rotation copy's first call too, untimed: a first call sets things up (a JIT,
   * a plan, pages touched) that would otherwise land in the first timed samples. */
  double copies_ts = xr_timeline_now_us(d->timeline);
  for (int k = 1; k < rotate && st == XR_OK; k++)
    if ((st = xr_kernel_enqueue(inst[k], d->stream)) == XR_OK &&
        (st = xr_hal_stream_synchronize(d->stream)) == XR_OK)
      st = xr_kernel_instance_status(inst[k]);
  if (st == XR_OK && rotate > 1)
    xr_timeline_warmup(d->timeline, "first calls of the other copies", copies_ts,
                       xr_timeline_now_us(d->timeline), rotate - 1, false);
  if (st != XR_OK) {
    fail(r, XR_OP_FAILED, "");
    goto out;
  }
  for (size_t k = 0; k < w->p.out_count; k++) {
    if ((st = read_back(&ts[0], w, w->p.out[k], &outputs[k])) != XR_OK) {
      fail(r, XR_OP_FAILED, "reading outputs: ");
      goto out;
    }
  }
  if (d->dump_dir[0]) dump_outputs(d, w, outputs, r);
  if (e->o->check && w->p.check_fits.status != XR_OK) {
    snprintf(r->check_note, sizeof r->check_note, "%.255s", w->p.check_fits.message);
  } else if (e->o->check) {
    if (work_reference(e, w) != XR_OK) {
      fail(r, XR_OP_FAILED, "reference: ");
      goto out;
    }
    r->reference_ms = w->reference_ms;
    r->reference_peak_bytes = w->reference_peak_bytes;
    /* Cut to rows: the cut views, which index the whole outputs' buffers alike. */
    check_outputs(w->rows ? w->rows : w, outputs, r);
    r->check_rows = w->p.check_rows;
    r->result_rows = w->p.check_rows > 0 ? w->p.result_rows : 0;
  }
  if (di == 0) {
    /* Kept, in memory, for the other devices to be compared with. */
    memcpy(w->first, outputs, sizeof outputs);
    memset(outputs, 0, sizeof outputs);
    w->have_first = true;
  } else if (w->have_first) {
    r->compared = true;
    for (size_t k = 0; k < w->p.out_count; k++)
      r->outputs[k].nmse_vs_first = xr_replay_nmse(&w->p.layout[w->p.out[k]], outputs[k],
                                                   w->first[k], &r->outputs[k].nonfinite_vs_first);
  }
  xr_op_result_t untimed = *r;
  if ((st = time_op(e->o, d, inst, rotate, first_ms * 1000.0, agree, r)) != XR_OK) {
    fail(r, XR_OP_FAILED, "timing: ");
    goto out;
  }
  if (r->stop_reason && !strcmp(r->stop_reason, "cancelled")) {
    interrupted(r, &untimed);
    goto out;
  }
  xr_derive_rates(&d->info->properties, plan->flops, plan->bytes, rotate * plan->bytes,
               e->o->cache == XR_CACHE_COLD && d->flush_covers_caches, r);
  if (plan->collective) gather_ranks(agree, plan, r);
out:
  if (ranged) xr_hal_device_range_pop(d->device);
  for (int k = 0; k < rotate; k++) {
    if (inst && inst[k]) {
      xr_hal_stream_synchronize(d->stream);
      xr_kernel_instance_destroy(inst[k]);
    }
    if (ts) tensors_free(&ts[k]);
  }
  for (size_t k = 0; k < XR_MAX_CHECKED_OUTPUTS; k++) free(outputs[k]);
  free(ts);
  free(inst);
}

/* ------------------------------------------------------------------------------------------ */
/* devices                                                                                     */

static void engine_close(engine_t *e) {
  for (size_t i = 0; i < e->device_count; i++) {
    device_run_t *d = &e->devices[i];
    if (d->stream) xr_hal_stream_synchronize(d->stream);
    for (int k = 0; k < d->event_count; k++) xr_hal_event_destroy(d->events[k]);
    free(d->events);
    xr_hal_buffer_free(d->flush);
    if (d->loadavg >= 0) close(d->loadavg);
    xr_trace_ratios_free(&d->ratios);
    xr_hal_stream_destroy(d->stream);
  }
  xr_hal_stream_destroy(e->cpu_stream);
  if (e->cpu_owned) xr_hal_device_destroy(e->cpu);
  xr_replay_devices_close(&e->owned);
}

static xr_status_t make_dump_dir(const char *path) {
  if (mkdir(path, 0777) != 0 && errno != EEXIST)
    return xr_error(XR_INVALID_ARGUMENT, "%s: cannot create the dump directory: %s", path,
                    strerror(errno));
  return XR_OK;
}

/* What timing on `device` needs: its properties, a stream, events, the flush buffer. */
static xr_status_t device_open(engine_t *e, const char *spec, xr_hal_device_t *device,
                               device_run_t *d) {
  const xr_replay_options_t *o = e->o;
  snprintf(d->info->spec, sizeof d->info->spec, "%s", spec);
  d->device = device;
  xr_status_t st = xr_hal_device_properties(d->device, &d->info->properties);
  if (st == XR_OK) st = xr_hal_stream_create(d->device, &d->stream);
  if (st != XR_OK) return st;
  if (o->peaks_file)
    st = xr_peaks_apply(o->peaks_file, d->device);
  else if (o->calibrate)
    st = xr_replay_device_calibrate(d->device);
  if (st != XR_OK) return st;
  if (o->peaks_file || o->calibrate) xr_hal_device_properties(d->device, &d->info->properties);
  const xr_hal_device_properties_t *p = &d->info->properties;
  d->held = p->host_addressable;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  d->cpus = cpus > 0 ? (int)cpus : 1;
  d->host_run = p->host_addressable || !p->is_gpu;
  d->loadavg = d->host_run ? open("/proc/loadavg", O_RDONLY | O_CLOEXEC) : -1;
  d->graphs = p->graphs;
  xr_hal_clocks_t clocks;
  d->clocks = xr_hal_device_clocks(d->device, &clocks) == XR_OK;
  d->info->ranges = xr_hal_device_ranges(d->device, d->info->ranges_source,
                                         sizeof d->info->ranges_source) == XR_OK;
  d->timeline = e->timeline;
  if (o->cache != XR_CACHE_WARM) {
    size_t bytes = (size_t)xr_flush_bytes(p, o->flush_bytes);
    if ((st = xr_hal_buffer_alloc(d->device, bytes, &d->flush)) != XR_OK)
      return xr_error_prefix(st, "the cold-cache flush buffer: ");
    d->flush_covers_caches = bytes >= xr_flush_bytes(p, 0) / 2;
  }
  if (o->dump_dir) {
    if (e->device_count == 1) {
      snprintf(d->dump_dir, sizeof d->dump_dir, "%s", o->dump_dir);
    } else {
      char name[64];
      snprintf(name, sizeof name, "%s", spec);
      for (char *c = name; *c; c++)
        if (*c == ':') *c = '-';
      snprintf(d->dump_dir, sizeof d->dump_dir, "%s/%s", o->dump_dir, name);
    }
    if ((st = make_dump_dir(d->dump_dir)) != XR_OK) return st;
  }
  return XR_OK;
}

static xr_status_t engine_open(engine_t *e) {
  const xr_replay_options_t *o = e->o;
  const xr_replay_devices_t *set = o->devices;
  if (!set) {
    xr_status_t st = xr_replay_devices_open(o->device, -1, &e->owned);
    if (st != XR_OK) return st;
    set = &e->owned;
  }
  e->device_count = set->count;
  xr_hal_device_t *host = NULL;
  if (o->dump_dir && e->device_count > 1) {
    xr_status_t st = make_dump_dir(o->dump_dir);
    if (st != XR_OK) return st;
  }
  e->summary->device_count = e->device_count;
  for (size_t i = 0; i < e->device_count; i++) e->devices[i].loadavg = -1;
  for (size_t i = 0; i < e->device_count; i++) {
    e->devices[i].info = &e->summary->devices[i];
    xr_status_t st = device_open(e, set->specs[i], set->devices[i], &e->devices[i]);
    if (st != XR_OK) return st;
    if (!host && e->summary->devices[i].properties.host_addressable) host = set->devices[i];
    e->decide.host_device |= e->summary->devices[i].properties.host_addressable;
  }
  if (o->check || o->choice == XR_KERNEL_REFERENCE) {
    /* The reference runs where host code reads the buffers: the run's cpu device if it has one. */
    xr_status_t st = XR_OK;
    e->cpu = host;
    if (!e->cpu) {
      st = xr_hal_device_create("cpu", &e->cpu);
      e->cpu_owned = st == XR_OK;
    }
    if (st == XR_OK) st = xr_hal_stream_create(e->cpu, &e->cpu_stream);
    if (st != XR_OK) return st;
  }
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */

/* The summary's replay_vs_trace of every device, from the ratios gathered (none, count 0, when
 * memory ran out gathering or sorting them). */
static void trace_ratios(engine_t *e) {
  for (size_t i = 0; i < e->device_count; i++) {
    xr_replay_device_t *info = &e->summary->devices[i];
    device_run_t *d = &e->devices[i];
    if (d->ratios_lost) xr_trace_ratios_free(&d->ratios);
    xr_trace_ratios_compute(&d->ratios, &info->replay_vs_trace); /* empty on failure */
    info->same_device =
        xr_trace_device_same_model(info->properties.name, e->bundle->meta.device_name);
  }
}

/* FNV-1a over what every rank must agree on: the ops (xr_bundle_hash), the shard and the
 * options that decide which ops run and how often. */
static uint64_t fingerprint_bytes(uint64_t h, const void *data, size_t n) {
  const unsigned char *b = data;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t fingerprint_text(uint64_t h, const char *s) {
  return fingerprint_bytes(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

static uint64_t run_fingerprint(const xr_bundle_t *b, const xr_replay_options_t *o) {
  uint64_t h = 0xcbf29ce484222325ull, ops = xr_bundle_hash(b);
  h = fingerprint_bytes(h, &ops, sizeof ops);
  const uint32_t shard[2] = {o->shard ? o->shard->index : 0, o->shard ? o->shard->count : 0};
  h = fingerprint_bytes(h, shard, sizeof shard);
  const int ints[] = {o->warmup, o->stop,   o->iters, o->max_iters, o->min_samples,      o->launch,
                      o->cache,  o->rotate, o->check, o->choice,    o->scale_collectives};
  const double doubles[] = {o->min_time_ms, o->noise_percent, o->max_time_ms,
                            o->unstable_percent};
  h = fingerprint_bytes(h, ints, sizeof ints);
  h = fingerprint_bytes(h, doubles, sizeof doubles);
  h = fingerprint_bytes(h, &o->op_limit, sizeof o->op_limit);
  h = fingerprint_text(h, o->op_filter);
  /* The drivers of --hal, not their ordinals: each rank may have a GPU of its own. */
  for (const char *spec = o->device ? o->device : "auto"; *spec;) {
    size_t len = strcspn(spec, ",");
    h = fingerprint_bytes(h, spec, strcspn(spec, ":,"));
    h = fingerprint_bytes(h, ",", 1);
    spec += len + (spec[len] == ',');
  }
  return h;
}

/* Every rank must replay the same ops the same way, or the collectives would wait forever. */
static xr_status_t ranks_agree(const xr_bundle_t *b, const xr_replay_options_t *o) {
  int n = xr_hal_comm_size(o->comm);
  uint64_t mine = run_fingerprint(b, o), *all = calloc((size_t)n, sizeof *all);
  if (!all) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  xr_status_t st = xr_hal_comm_host_allgather(o->comm, &mine, sizeof mine, all);
  for (int k = 0; st == XR_OK && k < n; k++)
    if (all[k] != all[0])
      st = xr_error(XR_INVALID_ARGUMENT,
                    "rank %d replays other ops or options than rank 0 (fingerprint %016llx, rank "
                    "0's %016llx): every rank must run the same bundle with the same options",
                    k, (unsigned long long)all[k], (unsigned long long)all[0]);
  free(all);
  return st;
}

static void count(xr_replay_device_t *d, const xr_op_t *op, const xr_op_result_t *r) {
  if (r->outcome == XR_OP_SUCCEEDED) {
    d->succeeded++;
    d->contended += r->contended;
    d->unstable += r->unstable;
    d->unchecked += r->check_note[0] != 0;
    d->reference_ms += r->reference_ms;
    if (r->reference_peak_bytes > d->reference_peak_bytes)
      d->reference_peak_bytes = r->reference_peak_bytes;
    d->trace_covered_us += xr_op_trace_total_us(op);
  } else if (r->outcome == XR_OP_FAILED) {
    d->failed++;
  } else if (r->outcome == XR_OP_INTERRUPTED) {
    d->interrupted++;
  } else {
    d->unsupported++;
  }
}

xr_status_t xr_replay_run(const xr_bundle_t *bundle, const xr_replay_options_t *options,
                          const xr_replay_observer_t *observer, xr_replay_summary_t *out_summary) {
  xr_replay_options_t defaults;
  xr_replay_options_default(&defaults);
  const xr_replay_options_t *o = options ? options : &defaults;
  xr_status_t valid = xr_replay_options_check(o);
  if (valid != XR_OK) return valid;
  xr_replay_observer_t none = {0};
  if (!observer) observer = &none;
  xr_replay_summary_t *summary = calloc(1, sizeof *summary);
  if (!summary) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  summary->total = bundle->op_count;
  summary->bundle_hash = xr_bundle_hash(bundle);
  summary->checked = o->check;
  engine_t e = {.bundle = bundle, .o = o, .summary = summary, .decide = {.options = o}};
  /* The timeline first: a path it cannot write is refused before any device opens. */
  xr_status_t st = o->timeline ? xr_timeline_open(o->timeline, o->timeline_events, &e.timeline)
                               : XR_OK;
  if (st == XR_OK && o->comm && xr_hal_comm_size(o->comm) > 1) st = ranks_agree(bundle, o);
  if (st == XR_OK) st = engine_open(&e);
  if (st == XR_OK) st = xr_timeline_start(e.timeline, summary, &bundle->meta);
  if (st != XR_OK) {
    engine_close(&e);
    xr_timeline_close(e.timeline); /* an empty trace, still valid; the sentence kept */
    free(summary);
    return st;
  }
  /* Which ops run: filter, then limit. */
  size_t selected = 0;
  for (size_t i = 0; i < bundle->op_count; i++) {
    const xr_op_t *op = &bundle->ops[i];
    summary->trace_total_us += xr_op_trace_total_us(op);
    if (!xr_op_selected(o, i, op)) continue;
    if (o->op_limit >= 0 && selected >= (size_t)o->op_limit) continue;
    selected++;
  }
  summary->attempted = selected;
  bool stop = observer->started && !observer->started(observer->context, summary);
  bool stopped_by_observer = stop;
  summary->attempted = 0;
  size_t position = 0;
  for (size_t i = 0; i < bundle->op_count && position < selected && !stop; i++) {
    const xr_op_t *op = &bundle->ops[i];
    if (!xr_op_selected(o, i, op)) continue;
    if (o->cancel && *o->cancel) break;
    op_work_t w = {0};
    xr_planned_op_init(bundle, i, &w.p);
    const xr_hal_device_properties_t *props[XR_REPLAY_MAX_DEVICES];
    for (size_t d = 0; d < e.device_count; d++) props[d] = &e.devices[d].info->properties;
    xr_planned_op_compact(&e.decide, &w.p, props, e.device_count);
    make_group(&e, &w);
    summary->attempted++;
    for (size_t d = 0; d < e.device_count && !stop; d++) {
      xr_op_result_t r;
      xr_timeline_op_begin(e.timeline, d);
      run_on_device(&e, d, &w, &r);
      /* A timeline that cannot be written keeps nothing more: the run stops, as for a report. */
      if (st == XR_OK && (st = xr_timeline_op_end(e.timeline, &r)) != XR_OK) stop = true;
      count(&summary->devices[d], op, &r);
      if (xr_trace_ratios_add(&e.devices[d].ratios, &r) != XR_OK) e.devices[d].ratios_lost = true;
      if (observer->result) observer->result(observer->context, &r, position, selected);
      stop = stop || (r.outcome == XR_OP_FAILED && o->stop_on_error);
    }
    work_free(&w);
    position++;
  }
  summary->cancelled = stopped_by_observer || (o->cancel && *o->cancel);
  summary->succeeded = summary->devices[0].succeeded;
  summary->failed = summary->devices[0].failed;
  summary->unsupported = summary->devices[0].unsupported;
  summary->interrupted = summary->devices[0].interrupted;
  summary->trace_covered_us = summary->devices[0].trace_covered_us;
  summary->cancelled |= st != XR_OK;
  trace_ratios(&e);
  engine_close(&e);
  /* Last, so that a write's failure is the sentence left (the timeline repeats it). */
  xr_status_t closed = xr_timeline_close(e.timeline);
  if (st == XR_OK) st = closed;
  if (out_summary) *out_summary = *summary;
  free(summary);
  return st;
}
