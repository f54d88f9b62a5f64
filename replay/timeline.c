/* The --timeline writer (replay/timeline.h): Chrome trace-event JSON, one op's events at a time,
 * the closing "]}" rewritten after each op as the JSON report's tail is. */
#include "replay/timeline.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What an op's events are made of until it ends. */
typedef struct entry {
  const char *what; /* warm-up: "first call", "warm-up"; NULL: a timed sample */
  xr_timeline_sample_t s;
  bool set_aside;
} entry_t;

struct xr_timeline {
  int fd;
  char *path;
  int events_per_op;
  double origin_ms;
  off_t body_end;   /* where the tail starts: the next events go there */
  bool any;         /* an event is written: the next one needs a comma */
  xr_status_t status; /* of the last write; once not OK, nothing more is written */
  char error[512];
  /* what the next write puts at body_end, the tail excluded */
  char *text;
  size_t length, room;
  /* the op under way */
  size_t device;
  double op_ts;
  entry_t *entries;
  size_t count, capacity, pass_start;
  int timed, left_out;
};

static const char head[] = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [";
static const char tail[] = "\n]}\n";

static double monotonic_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double xr_timeline_now_us(const xr_timeline_t *t) {
  return t ? (monotonic_ms() - t->origin_ms) * 1000.0 : 0;
}

/* Appends to what the next write puts down; false when out of memory. */
static bool append(xr_timeline_t *t, const char *text) {
  size_t n = strlen(text);
  if (t->length + n + 1 > t->room) {
    size_t room = 2 * (t->length + n + 1) + 4096;
    char *grown = realloc(t->text, room);
    if (!grown) return false;
    t->text = grown;
    t->room = room;
  }
  memcpy(t->text + t->length, text, n + 1);
  t->length += n;
  return true;
}

static bool write_at(int fd, const char *text, size_t n, off_t at) {
  while (n > 0) {
    ssize_t done = pwrite(fd, text, n, at);
    if (done < 0 && errno == EINTR) continue;
    if (done <= 0) return false;
    text += done;
    n -= (size_t)done;
    at += done;
  }
  return true;
}

/* Keeps the first failure's sentence; every later call repeats it. */
static xr_status_t failed(xr_timeline_t *t, int error) {
  if (t->status == XR_OK) {
    snprintf(t->error, sizeof t->error, "%s: writing the timeline failed: %s", t->path,
             strerror(error ? error : EIO));
    t->status = XR_DATA_LOSS;
  }
  return xr_error(t->status, "%s", t->error);
}

/* What was appended, then the tail, at body_end: a complete document again. One that does not
 * fit (a full disk) is cut back to the last complete one, so the file stays JSON. */
static xr_status_t commit(xr_timeline_t *t) {
  bool ok = append(t, tail);
  int error = ok ? 0 : ENOMEM;
  errno = 0;
  if (ok && write_at(t->fd, t->text, t->length, t->body_end)) {
    t->body_end += (off_t)(t->length - strlen(tail));
    t->length = 0;
    return XR_OK;
  }
  if (!error) error = errno;
  t->length = 0;
  if (ftruncate(t->fd, t->body_end) == 0) write_at(t->fd, tail, strlen(tail), t->body_end);
  return failed(t, error);
}

static void put(xr_timeline_t *t, cJSON *event) {
  char *text = cJSON_PrintUnformatted(event);
  cJSON_Delete(event);
  if (!text) return;
  size_t mark = t->length;
  if (append(t, t->any ? ",\n" : "\n") && append(t, text)) t->any = true;
  else t->length = mark; /* out of memory: the event is lost, the document stays whole */
  if (t->text) t->text[t->length] = '\0';
  cJSON_free(text);
}

xr_status_t xr_timeline_open(const char *path, int events_per_op, xr_timeline_t **out) {
  *out = NULL;
  xr_timeline_t *t = calloc(1, sizeof *t);
  if (!t || !(t->path = strdup(path))) {
    free(t);
    return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  }
  if ((t->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0) {
    xr_status_t st =
        xr_error(XR_INVALID_ARGUMENT, "%s: cannot create the timeline: %s", path, strerror(errno));
    free(t->path);
    free(t);
    return st;
  }
  t->events_per_op = events_per_op > 0 ? events_per_op : 0;
  t->origin_ms = monotonic_ms();
  xr_status_t st = append(t, head) ? commit(t) : failed(t, ENOMEM);
  if (st != XR_OK) {
    xr_timeline_close(t);
    return st;
  }
  *out = t;
  return XR_OK;
}

/* "cpu:0" and the device's name, as the process is called. */
static void process_label(const xr_hal_device_properties_t *p, char *out, size_t n) {
  if (p->name[0]) snprintf(out, n, "%s (%s)", p->spec, p->name);
  else snprintf(out, n, "%s", p->spec);
}

static cJSON *metadata(const char *name, int pid, int tid, const char *key, cJSON *value) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "name", name);
  cJSON_AddStringToObject(e, "ph", "M");
  cJSON_AddNumberToObject(e, "pid", pid);
  cJSON_AddNumberToObject(e, "tid", tid);
  cJSON_AddItemToObject(cJSON_AddObjectToObject(e, "args"), key, value);
  return e;
}

/* otherData: flat text and numbers, which every viewer shows as the trace's metadata. */
static cJSON *other_data(const xr_timeline_t *t, const xr_replay_summary_t *run,
                         const xr_bundle_metadata_t *source) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "producer", "xreplay (replay --timeline)");
  cJSON_AddStringToObject(o, "ts_clock",
                          "host CLOCK_MONOTONIC, microseconds since the run started");
  cJSON_AddStringToObject(o, "timed_clock",
                          "device: a timed event's duration, and its place in its batch, come "
                          "from the device's own events (HAL event timing, what the report's "
                          "statistics use); each batch is placed so that it ends when the host "
                          "saw it end");
  cJSON_AddStringToObject(o, "host_clock",
                          "host wall clock: the op and warmup events (first call, warm-up), "
                          "which no device event brackets");
  cJSON_AddNumberToObject(o, "timed_events_per_op", t->events_per_op);
  if (source && source->source_trace)
    cJSON_AddStringToObject(o, "source_trace", source->source_trace);
  if (source && source->device_name)
    cJSON_AddStringToObject(o, "trace_device", source->device_name);
  for (size_t d = 0; d < run->device_count; d++) {
    const xr_replay_device_t *dev = &run->devices[d];
    char key[32], text[1024], label[320];
    process_label(&dev->properties, label, sizeof label);
    snprintf(key, sizeof key, "pid %zu", d + 1);
    snprintf(text, sizeof text, "%s, %s driver, timed by its HAL events; profiler ranges: %s%s%s",
             label, dev->properties.driver, dev->ranges ? "" : "none (", dev->ranges_source,
             dev->ranges ? "" : ")");
    cJSON_AddStringToObject(o, key, text);
  }
  return o;
}

xr_status_t xr_timeline_start(xr_timeline_t *t, const xr_replay_summary_t *run,
                              const xr_bundle_metadata_t *source) {
  if (!t || t->status != XR_OK) return t ? xr_error(t->status, "%s", t->error) : XR_OK;
  /* The head again, now with otherData, over the empty trace written at open. */
  cJSON *other = other_data(t, run, source);
  char *text = cJSON_PrintUnformatted(other);
  cJSON_Delete(other);
  if (!text) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  t->body_end = 0;
  t->length = 0;
  t->any = false;
  bool ok = append(t, "{\"displayTimeUnit\": \"ns\", \"otherData\": ") && append(t, text) &&
            append(t, ", \"traceEvents\": [");
  cJSON_free(text);
  if (!ok) return failed(t, ENOMEM);
  for (size_t d = 0; d < run->device_count; d++) {
    char label[320];
    int pid = (int)d + 1;
    process_label(&run->devices[d].properties, label, sizeof label);
    put(t, metadata("process_name", pid, 0, "name", cJSON_CreateString(label)));
    put(t, metadata("process_sort_index", pid, 0, "sort_index", cJSON_CreateNumber(pid)));
    put(t, metadata("thread_name", pid, 1, "name", cJSON_CreateString("stream 0")));
  }
  /* Longer than the empty trace it replaces: nothing of that is left behind it. */
  return commit(t);
}

static entry_t *add(xr_timeline_t *t) {
  if (t->count == t->capacity) {
    size_t capacity = t->capacity ? 2 * t->capacity : 64;
    entry_t *grown = realloc(t->entries, capacity * sizeof *grown);
    if (!grown) return NULL; /* the event is lost, the run goes on */
    t->entries = grown;
    t->capacity = capacity;
  }
  entry_t *e = &t->entries[t->count++];
  memset(e, 0, sizeof *e);
  return e;
}

void xr_timeline_op_begin(xr_timeline_t *t, size_t device_index) {
  if (!t) return;
  t->device = device_index;
  t->op_ts = xr_timeline_now_us(t);
  t->count = t->pass_start = 0;
  t->timed = t->left_out = 0;
}

void xr_timeline_warmup(xr_timeline_t *t, const char *what, double ts_us, double end_us,
                        int executions, bool cold) {
  entry_t *e = t ? add(t) : NULL;
  if (!e) return;
  e->what = what;
  e->s = (xr_timeline_sample_t){
      .ts_us = ts_us, .dur_us = end_us - ts_us, .executions = executions, .cold = cold};
}

bool xr_timeline_wants_sample(xr_timeline_t *t) {
  if (!t) return false;
  if (t->timed < t->events_per_op) return true;
  t->left_out++;
  return false;
}

void xr_timeline_sample(xr_timeline_t *t, const xr_timeline_sample_t *sample) {
  entry_t *e = t ? add(t) : NULL;
  if (!e) return;
  e->s = *sample;
  t->timed++;
}

void xr_timeline_pass_end(xr_timeline_t *t, bool contended) {
  if (!t) return;
  for (size_t i = t->pass_start; i < t->count; i++)
    t->entries[i].set_aside = !t->entries[i].what && t->entries[i].s.crowded && !contended;
  t->pass_start = t->count;
}

/* An X event on the device's stream, with what every event of the op carries. */
static cJSON *op_event(const xr_timeline_t *t, const xr_op_result_t *r, const char *cat,
                       double ts, double dur, const char *shapes, cJSON **out_args) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "name", r->op->name);
  cJSON_AddStringToObject(e, "cat", cat);
  cJSON_AddStringToObject(e, "ph", "X");
  /* To the nanosecond, which every clock here resolves at best: shorter numbers. */
  cJSON_AddNumberToObject(e, "ts", round(ts * 1e3) / 1e3);
  cJSON_AddNumberToObject(e, "dur", dur > 0 ? round(dur * 1e3) / 1e3 : 0);
  cJSON_AddNumberToObject(e, "pid", (double)t->device + 1);
  cJSON_AddNumberToObject(e, "tid", 1);
  cJSON *args = cJSON_AddObjectToObject(e, "args");
  cJSON_AddNumberToObject(args, "op", (double)r->index);
  cJSON_AddStringToObject(args, "args", shapes);
  if (r->kernel[0]) cJSON_AddStringToObject(args, "kernel", r->kernel);
  *out_args = args;
  return e;
}

xr_status_t xr_timeline_op_end(xr_timeline_t *t, const xr_op_result_t *r) {
  if (!t) return XR_OK;
  if (t->status != XR_OK) return xr_error(t->status, "%s", t->error);
  double end = xr_timeline_now_us(t);
  char shapes[512];
  xr_op_describe_args(r->op, true, shapes, sizeof shapes);
  cJSON *args;
  cJSON *span = op_event(t, r, "op", t->op_ts, end - t->op_ts, shapes, &args);
  cJSON_AddStringToObject(args, "outcome", xr_op_outcome_name(r->outcome));
  if (r->message[0]) cJSON_AddStringToObject(args, "message", r->message);
  if (r->outcome == XR_OP_SUCCEEDED && r->iterations) {
    cJSON_AddNumberToObject(args, "median_us", r->median_us);
    cJSON_AddNumberToObject(args, "iterations", r->iterations);
  }
  cJSON_AddNumberToObject(args, "timed_events", t->timed);
  if (t->left_out) cJSON_AddNumberToObject(args, "timed_events_left_out", t->left_out);
  cJSON_AddStringToObject(args, "clock", "host");
  put(t, span);
  for (size_t i = 0; i < t->count; i++) {
    const entry_t *en = &t->entries[i];
    cJSON *e = op_event(t, r, en->what ? "warmup" : "timed", en->s.ts_us, en->s.dur_us, shapes,
                        &args);
    if (en->what) {
      cJSON_AddStringToObject(args, "call", en->what);
    } else {
      cJSON_AddNumberToObject(args, "sample", en->s.sample);
      cJSON_AddNumberToObject(args, "batch", en->s.batch);
    }
    cJSON_AddNumberToObject(args, "executions", en->s.executions);
    if (en->s.cold) cJSON_AddStringToObject(args, "cache", "cold");
    if (en->set_aside) cJSON_AddBoolToObject(args, "set_aside", true);
    cJSON_AddStringToObject(args, "clock", en->what ? "host" : "device");
    put(t, e);
  }
  t->count = 0;
  return commit(t);
}

xr_status_t xr_timeline_close(xr_timeline_t *t) {
  if (!t) return XR_OK;
  xr_status_t st = t->status;
  if (close(t->fd) != 0 && st == XR_OK) st = failed(t, errno);
  else if (st != XR_OK) xr_error(st, "%s", t->error);
  free(t->text);
  free(t->entries);
  free(t->path);
  free(t);
  return st;
}
