/* cpu driver: buffers are aligned host memory; each stream is an in-order queue drained by its
 * own worker thread, so stream order and cross-stream event waits are real; bulk work (large
 * copies, parallel-for) is spread over a per-device thread pool. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, mkstemp; Bazel's toolchain may already define it */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "hal/core/driver.h"
#include "hal/drivers/cpu/cpu_clocks.h"
#include "hal/drivers/cpu/cpu_info.h"
#include "hal/drivers/cpu/thread_pool.h"

/* Copies at least this large are split across the pool. */
#define PARALLEL_COPY_THRESHOLD (4u << 20)
/* Keeps each thread's slice big enough that splitting pays for the hand-off. */
#define MIN_COPY_SLICE (1u << 20)
/* How long an idle stream worker, or a host thread waiting for an event, polls before it
 * sleeps. Waking a sleeping thread costs tens of microseconds on virtual machines (the vCPU
 * halts), and the next command or the awaited event often comes within this window. */
#define SPIN_BEFORE_SLEEP_NS 50000
#define HUGE_PAGE ((size_t)2 << 20)

typedef struct cpu_device {
  xr_hal_device_t base;
  xr_thread_pool_t *pool;
  xr_cpu_info_t info;
  char cpufreq_dir[96]; /* where clocks are read: the first CPU this process may run on */
} cpu_device_t;

typedef struct cpu_buffer {
  xr_hal_buffer_t base;
  void *memory;
  size_t mapped; /* bytes mapped with mmap (large buffers), 0 when from malloc */
} cpu_buffer_t;

typedef struct cpu_event {
  xr_hal_event_t base;
  atomic_int references;      /* the handle + queued commands that mention it */
  pthread_mutex_t mutex;
  pthread_cond_t reached;
  uint64_t recorded_generation;  /* bumped by each record */
  /* The latest record a stream has reached; written under the mutex, polled without it. */
  _Atomic uint64_t completed_generation;
  uint64_t timestamp_ns;         /* CLOCK_MONOTONIC when completed_generation was reached */
  unsigned waiters;              /* threads sleeping on `reached`; guarded by the mutex */
} cpu_event_t;

typedef enum command_kind {
  COMMAND_MEMCPY,    /* write, read and copy: all host memory here */
  COMMAND_FILL,
  COMMAND_HOST,
  COMMAND_PARALLEL,
  COMMAND_RECORD,
  COMMAND_WAIT,
} command_kind_t;

typedef struct command {
  command_kind_t kind;
  struct command *next;
  xr_hal_buffer_t *retained[2];  /* released when the command is done */
  void *dst;
  const void *src;
  size_t size;
  uint32_t pattern;
  size_t pattern_size;
  xr_hal_host_fn_t host_fn;
  xr_hal_parallel_fn_t parallel_fn;
  void *context;
  size_t count, grain;
  cpu_event_t *event;
  uint64_t generation;
} command_t;

typedef struct cpu_stream {
  xr_hal_stream_t base;
  pthread_t worker;
  pthread_mutex_t mutex;
  pthread_cond_t work_available;
  pthread_cond_t work_done;
  command_t *head, *tail;
  _Atomic uint64_t submitted; /* written under the mutex, polled without it */
  uint64_t completed;
  bool stopping;
  /* Who sleeps on the condition variables: signalling nobody costs a system call per command,
   * which dominated replaying tiny ops. Both guarded by the mutex. */
  bool worker_sleeping;
  unsigned sync_waiters;
} cpu_stream_t;

static cpu_device_t *cpu_device(xr_hal_device_t *device) { return (cpu_device_t *)device; }

static uint64_t monotonic_ns(void);

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Polls until *value differs from `seen` (returns true) or the spin budget is spent. */
static bool spin_while_equal(_Atomic uint64_t *value, uint64_t seen) {
  uint64_t deadline = monotonic_ns() + SPIN_BEFORE_SLEEP_NS;
  for (;;) {
    for (int i = 0; i < 64; i++) {
      if (atomic_load_explicit(value, memory_order_acquire) != seen) return true;
      cpu_relax();
    }
    if (monotonic_ns() > deadline) return false;
  }
}

static uint64_t monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

/* ------------------------------------------------------------------------------------------ */
/* Bulk memory work on the pool                                                               */

typedef struct copy_job {
  char *dst;
  const char *src;
  size_t size, slice;
} copy_job_t;

static void copy_slices(void *context, size_t begin, size_t end) {
  copy_job_t *job = context;
  for (size_t i = begin; i < end; i++) {
    size_t offset = i * job->slice;
    size_t length = job->size - offset < job->slice ? job->size - offset : job->slice;
    memcpy(job->dst + offset, job->src + offset, length);
  }
}

static void parallel_memcpy(xr_thread_pool_t *pool, void *dst, const void *src, size_t size,
                            bool followed) {
  size_t width = xr_thread_pool_width(pool);
  if (size < PARALLEL_COPY_THRESHOLD || width < 2) {
    memcpy(dst, src, size);
    return;
  }
  /* One slice per thread, cache-line aligned, so each thread streams one contiguous range. */
  size_t slice = (size + width - 1) / width;
  if (slice < MIN_COPY_SLICE) slice = MIN_COPY_SLICE;
  slice = (slice + 63) & ~(size_t)63;
  copy_job_t job = {.dst = dst, .src = src, .size = size, .slice = slice};
  xr_thread_pool_parallel_for(pool, (size + slice - 1) / slice, 1, copy_slices, &job, followed);
}

typedef struct fill_job {
  char *dst;
  size_t size;
  uint32_t pattern;
  size_t pattern_size;
  size_t slice;
} fill_job_t;

static void fill_range(char *dst, size_t size, uint32_t pattern, size_t pattern_size) {
  if (pattern_size == 1) {
    memset(dst, (int)(pattern & 0xff), size);
  } else if (pattern_size == 2) {
    uint16_t value = (uint16_t)pattern;
    for (size_t i = 0; i < size; i += 2) memcpy(dst + i, &value, 2);
  } else {
    for (size_t i = 0; i < size; i += 4) memcpy(dst + i, &pattern, 4);
  }
}

static void fill_slices(void *context, size_t begin, size_t end) {
  fill_job_t *job = context;
  for (size_t i = begin; i < end; i++) {
    size_t offset = i * job->slice;
    size_t length = job->size - offset < job->slice ? job->size - offset : job->slice;
    fill_range(job->dst + offset, length, job->pattern, job->pattern_size);
  }
}

static void parallel_fill(xr_thread_pool_t *pool, void *dst, size_t size, uint32_t pattern,
                          size_t pattern_size, bool followed) {
  size_t width = xr_thread_pool_width(pool);
  if (size < PARALLEL_COPY_THRESHOLD || width < 2) {
    fill_range(dst, size, pattern, pattern_size);
    return;
  }
  size_t slice = (size + width - 1) / width;
  if (slice < MIN_COPY_SLICE) slice = MIN_COPY_SLICE;
  slice = (slice + 63) & ~(size_t)63;  /* a multiple of 4, so every slice starts on a pattern */
  fill_job_t job = {.dst = dst, .size = size, .pattern = pattern, .pattern_size = pattern_size,
                    .slice = slice};
  xr_thread_pool_parallel_for(pool, (size + slice - 1) / slice, 1, fill_slices, &job, followed);
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers                                                                                    */

static char *host_address(xr_hal_buffer_t *root, size_t offset) {
  return (char *)((cpu_buffer_t *)root)->memory + offset;
}

/* Buffers of 2 MiB and more get fresh pages of their own, mapped on a 2 MiB boundary with
 * transparent huge pages requested (granted on request where THP is "madvise", Debian's
 * default), as GPU drivers map device memory in large pages. From malloc, a large buffer may
 * reuse heap pages a freed buffer already faulted in 4 KiB pages: oneDNN's bf16 GEMM at 2048^3
 * then ran ~20% slower and a decode GEMM streaming a 32 MiB weight ~10% slower, on TLB misses
 * alone (docs/performance.md, GEMM). Returns 0 or an errno. */
static int map_huge(size_t size, cpu_buffer_t *buffer) {
  size_t length = (size + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
  char *region = mmap(NULL, length + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                      -1, 0);
  if (region == MAP_FAILED) return errno;
  char *aligned = (char *)(((uintptr_t)region + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
  if (aligned > region) munmap(region, (size_t)(aligned - region));
  size_t tail = (size_t)(region + length + HUGE_PAGE - (aligned + length));
  if (tail) munmap(aligned + length, tail);
  (void)madvise(aligned, length, MADV_HUGEPAGE); /* advice: without THP, small pages */
  buffer->memory = aligned;
  buffer->mapped = length;
  return 0;
}

static xr_status_t cpu_buffer_alloc(xr_hal_device_t *device, size_t size, xr_hal_buffer_t **out) {
  cpu_device_t *cpu = cpu_device(device);
  /* Check against physical memory first: malloc of an absurd size may "succeed" lazily and
   * crash later, or trip a sanitizer's allocation limit. */
  if (cpu->info.physical_memory_bytes && size > cpu->info.physical_memory_bytes) {
    return xr_error(XR_RESOURCE_EXHAUSTED,
                    "%s: cannot allocate %zu bytes: the machine has %llu bytes of physical memory",
                    device->spec, size, (unsigned long long)cpu->info.physical_memory_bytes);
  }
  cpu_buffer_t *buffer = calloc(1, sizeof *buffer);
  if (!buffer) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", device->spec);
  /* Below 2 MiB: page alignment from 64 KiB (whole pages for the copy slices), 64 B (a cache
   * line, the widest vector) under it; never a zero-size request, so the pointer is real. */
  int error = size >= HUGE_PAGE ? map_huge(size, buffer)
                                : posix_memalign(&buffer->memory, size >= (64u << 10) ? 4096 : 64,
                                                 size ? size : 1);
  if (error) {
    free(buffer);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: cannot allocate %zu bytes of host memory (%s)",
                    device->spec, size, strerror(error));
  }
  xr_hal_buffer_base_init(&buffer->base, device, NULL, 0, size);
  *out = &buffer->base;
  return XR_OK;
}

static void cpu_buffer_destroy(xr_hal_buffer_t *root) {
  cpu_buffer_t *buffer = (cpu_buffer_t *)root;
  if (buffer->mapped) munmap(buffer->memory, buffer->mapped);
  else free(buffer->memory);
  free(buffer);
}

static void *cpu_buffer_host_pointer(xr_hal_buffer_t *root) {
  return ((cpu_buffer_t *)root)->memory;
}

/* ------------------------------------------------------------------------------------------ */
/* Events                                                                                     */

static void event_release(cpu_event_t *event) {
  if (atomic_fetch_sub_explicit(&event->references, 1, memory_order_acq_rel) != 1) return;
  pthread_cond_destroy(&event->reached);
  pthread_mutex_destroy(&event->mutex);
  free(event);
}

static xr_status_t cpu_event_create(xr_hal_device_t *device, xr_hal_event_t **out) {
  cpu_event_t *event = calloc(1, sizeof *event);
  if (!event) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", device->spec);
  event->base.device = device;
  atomic_init(&event->references, 1);
  pthread_mutex_init(&event->mutex, NULL);
  pthread_cond_init(&event->reached, NULL);
  *out = &event->base;
  return XR_OK;
}

static void cpu_event_destroy(xr_hal_event_t *base) { event_release((cpu_event_t *)base); }

/* Waits until the stream has reached record `generation` (or a later one). */
static void event_wait_generation(cpu_event_t *event, uint64_t generation) {
  uint64_t completed = atomic_load_explicit(&event->completed_generation, memory_order_acquire);
  if (completed >= generation) return;
  /* Poll first; the locked loop below re-checks whatever the poll saw. */
  spin_while_equal(&event->completed_generation, completed);
  pthread_mutex_lock(&event->mutex);
  while (event->completed_generation < generation) {
    event->waiters++;
    pthread_cond_wait(&event->reached, &event->mutex);
    event->waiters--;
  }
  pthread_mutex_unlock(&event->mutex);
}

static xr_status_t cpu_event_synchronize(xr_hal_event_t *base) {
  cpu_event_t *event = (cpu_event_t *)base;
  pthread_mutex_lock(&event->mutex);
  uint64_t target = event->recorded_generation;
  pthread_mutex_unlock(&event->mutex);
  event_wait_generation(event, target);
  return XR_OK;
}

static xr_status_t cpu_event_elapsed_ms(xr_hal_event_t *start_base, xr_hal_event_t *end_base,
                                        double *out_ms) {
  cpu_event_synchronize(start_base);
  cpu_event_synchronize(end_base);
  cpu_event_t *start = (cpu_event_t *)start_base, *end = (cpu_event_t *)end_base;
  pthread_mutex_lock(&start->mutex);
  uint64_t t0 = start->timestamp_ns;
  pthread_mutex_unlock(&start->mutex);
  pthread_mutex_lock(&end->mutex);
  uint64_t t1 = end->timestamp_ns;
  pthread_mutex_unlock(&end->mutex);
  *out_ms = ((double)t1 - (double)t0) * 1e-6;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Streams                                                                                    */

static bool uses_pool(const command_t *command) {
  return command->kind == COMMAND_MEMCPY || command->kind == COMMAND_FILL ||
         command->kind == COMMAND_PARALLEL;
}

/* Whether a command of the next few queued behind `command` uses the thread pool (a timed
 * execution's events and prologue sit between two executions' kernels). */
static bool pool_work_follows(const command_t *command) {
  int ahead = 0;
  for (const command_t *c = command->next; c && ahead < 4; c = c->next, ahead++)
    if (uses_pool(c)) return true;
  return false;
}

static void run_command(cpu_stream_t *stream, command_t *command) {
  cpu_device_t *device = cpu_device(stream->base.device);
  bool followed = uses_pool(command) && pool_work_follows(command);
  switch (command->kind) {
    case COMMAND_MEMCPY:
      parallel_memcpy(device->pool, command->dst, command->src, command->size, followed);
      break;
    case COMMAND_FILL:
      parallel_fill(device->pool, command->dst, command->size, command->pattern,
                    command->pattern_size, followed);
      break;
    case COMMAND_HOST:
      command->host_fn(command->context);
      break;
    case COMMAND_PARALLEL:
      xr_thread_pool_parallel_for(device->pool, command->count, command->grain,
                                  command->parallel_fn, command->context, followed);
      break;
    case COMMAND_RECORD: {
      cpu_event_t *event = command->event;
      uint64_t now = monotonic_ns();
      pthread_mutex_lock(&event->mutex);
      if (command->generation > event->completed_generation) {
        event->completed_generation = command->generation;
        event->timestamp_ns = now;
      }
      if (event->waiters) pthread_cond_broadcast(&event->reached);
      pthread_mutex_unlock(&event->mutex);
      break;
    }
    case COMMAND_WAIT:
      event_wait_generation(command->event, command->generation);
      break;
  }
}

static void *stream_worker(void *argument) {
  cpu_stream_t *stream = argument;
  pthread_mutex_lock(&stream->mutex);
  for (;;) {
    bool polled = false;
    while (!stream->head && !stream->stopping) {
      if (!polled) {
        polled = true;
        uint64_t seen = atomic_load_explicit(&stream->submitted, memory_order_relaxed);
        pthread_mutex_unlock(&stream->mutex);
        spin_while_equal(&stream->submitted, seen);
        pthread_mutex_lock(&stream->mutex);
        continue;
      }
      stream->worker_sleeping = true;
      pthread_cond_wait(&stream->work_available, &stream->mutex);
      stream->worker_sleeping = false;
    }
    if (!stream->head) break; /* stopping and drained */
    /* Take everything queued at once: one lock round trip per batch rather than per command
     * keeps the worker out of the submitting thread's way when tiny ops are replayed. */
    command_t *command = stream->head;
    stream->head = stream->tail = NULL;
    pthread_mutex_unlock(&stream->mutex);

    uint64_t done = 0;
    while (command) {
      command_t *next = command->next;
      run_command(stream, command);
      for (int i = 0; i < 2; i++) xr_hal_buffer_release(command->retained[i]);
      if (command->event) event_release(command->event);
      free(command);
      command = next;
      done++;
    }

    pthread_mutex_lock(&stream->mutex);
    stream->completed += done;
    if (stream->sync_waiters) pthread_cond_broadcast(&stream->work_done);
  }
  pthread_mutex_unlock(&stream->mutex);
  return NULL;
}

static xr_status_t cpu_stream_create(xr_hal_device_t *device, xr_hal_stream_t **out) {
  cpu_stream_t *stream = calloc(1, sizeof *stream);
  if (!stream) return xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", device->spec);
  stream->base.device = device;
  pthread_mutex_init(&stream->mutex, NULL);
  pthread_cond_init(&stream->work_available, NULL);
  pthread_cond_init(&stream->work_done, NULL);
  int error = pthread_create(&stream->worker, NULL, stream_worker, stream);
  if (error) {
    pthread_cond_destroy(&stream->work_done);
    pthread_cond_destroy(&stream->work_available);
    pthread_mutex_destroy(&stream->mutex);
    free(stream);
    return xr_error(XR_RESOURCE_EXHAUSTED, "%s: cannot start a stream thread (%s)", device->spec,
                    strerror(error));
  }
  *out = &stream->base;
  return XR_OK;
}

static void cpu_stream_destroy(xr_hal_stream_t *base) {
  cpu_stream_t *stream = (cpu_stream_t *)base;
  pthread_mutex_lock(&stream->mutex);
  stream->stopping = true;
  pthread_cond_signal(&stream->work_available);
  pthread_mutex_unlock(&stream->mutex);
  pthread_join(stream->worker, NULL); /* the worker drains the queue before it leaves */
  pthread_cond_destroy(&stream->work_done);
  pthread_cond_destroy(&stream->work_available);
  pthread_mutex_destroy(&stream->mutex);
  free(stream);
}

static xr_status_t cpu_stream_synchronize(xr_hal_stream_t *base) {
  cpu_stream_t *stream = (cpu_stream_t *)base;
  pthread_mutex_lock(&stream->mutex);
  uint64_t target = stream->submitted;
  while (stream->completed < target) {
    stream->sync_waiters++;
    pthread_cond_wait(&stream->work_done, &stream->mutex);
    stream->sync_waiters--;
  }
  pthread_mutex_unlock(&stream->mutex);
  return XR_OK;
}

static command_t *new_command(xr_hal_stream_t *stream, command_kind_t kind) {
  command_t *command = calloc(1, sizeof *command);
  if (!command) {
    xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory for a stream command",
             stream->device->spec);
    return NULL;
  }
  command->kind = kind;
  return command;
}

static void retain(command_t *command, int slot, xr_hal_buffer_t *buffer) {
  xr_hal_buffer_retain(buffer);
  command->retained[slot] = buffer;
}

static xr_status_t submit(xr_hal_stream_t *base, command_t *command) {
  cpu_stream_t *stream = (cpu_stream_t *)base;
  pthread_mutex_lock(&stream->mutex);
  if (stream->tail) stream->tail->next = command;
  else stream->head = command;
  stream->tail = command;
  stream->submitted++;
  if (stream->worker_sleeping) pthread_cond_signal(&stream->work_available);
  pthread_mutex_unlock(&stream->mutex);
  return XR_OK;
}

static xr_status_t cpu_stream_write(xr_hal_stream_t *stream, xr_hal_buffer_t *dst,
                                    size_t dst_offset, const void *src, size_t size) {
  command_t *command = new_command(stream, COMMAND_MEMCPY);
  if (!command) return XR_RESOURCE_EXHAUSTED;
  retain(command, 0, dst);
  command->dst = host_address(dst, dst_offset);
  command->src = src;
  command->size = size;
  return submit(stream, command);
}

static xr_status_t cpu_stream_read(xr_hal_stream_t *stream, void *dst, xr_hal_buffer_t *src,
                                   size_t src_offset, size_t size) {
  command_t *command = new_command(stream, COMMAND_MEMCPY);
  if (!command) return XR_RESOURCE_EXHAUSTED;
  retain(command, 0, src);
  command->dst = dst;
  command->src = host_address(src, src_offset);
  command->size = size;
  return submit(stream, command);
}

static xr_status_t cpu_stream_copy(xr_hal_stream_t *stream, xr_hal_buffer_t *dst,
                                   size_t dst_offset, xr_hal_buffer_t *src, size_t src_offset,
                                   size_t size) {
  command_t *command = new_command(stream, COMMAND_MEMCPY);
  if (!command) return XR_RESOURCE_EXHAUSTED;
  retain(command, 0, dst);
  retain(command, 1, src);
  command->dst = host_address(dst, dst_offset);
  command->src = host_address(src, src_offset);
  command->size = size;
  return submit(stream, command);
}

static xr_status_t cpu_stream_fill(xr_hal_stream_t *stream, xr_hal_buffer_t *buffer,
                                   size_t offset, size_t size, uint32_t pattern,
                                   size_t pattern_size) {
  command_t *command = new_command(stream, COMMAND_FILL);
  if (!command) return XR_RESOURCE_EXHAUSTED;
  retain(command, 0, buffer);
  command->dst = host_address(buffer, offset);
  command->size = size;
  command->pattern = pattern;
  command->pattern_size = pattern_size;
  return submit(stream, command);
}

/* Blocking transfers run on the calling thread: no hand-off to a stream worker. */
static xr_status_t cpu_buffer_write(xr_hal_buffer_t *dst, size_t dst_offset, const void *src,
                                    size_t size) {
  parallel_memcpy(cpu_device(dst->device)->pool, host_address(dst, dst_offset), src, size, false);
  return XR_OK;
}

static xr_status_t cpu_buffer_read(void *dst, xr_hal_buffer_t *src, size_t src_offset,
                                   size_t size) {
  parallel_memcpy(cpu_device(src->device)->pool, dst, host_address(src, src_offset), size, false);
  return XR_OK;
}

static xr_status_t cpu_buffer_copy(xr_hal_buffer_t *dst, size_t dst_offset, xr_hal_buffer_t *src,
                                   size_t src_offset, size_t size) {
  parallel_memcpy(cpu_device(dst->device)->pool, host_address(dst, dst_offset),
                  host_address(src, src_offset), size, false);
  return XR_OK;
}

static xr_status_t cpu_stream_enqueue_host(xr_hal_stream_t *stream, xr_hal_host_fn_t fn,
                                           void *context) {
  command_t *command = new_command(stream, COMMAND_HOST);
  if (!command) return XR_RESOURCE_EXHAUSTED;
  command->host_fn = fn;
  command->context = context;
  return submit(stream, command);
}

static xr_status_t cpu_stream_enqueue_parallel(xr_hal_stream_t *stream, size_t count,
                                               size_t grain, xr_hal_parallel_fn_t fn,
                                               void *context) {
  command_t *command = new_command(stream, COMMAND_PARALLEL);
  if (!command) return XR_RESOURCE_EXHAUSTED;
  if (grain == 0) {
    /* A few chunks per thread balance uneven items without much claiming traffic. */
    size_t width = xr_thread_pool_width(cpu_device(stream->device)->pool);
    grain = count / (4 * width);
    if (grain == 0) grain = 1;
  }
  command->parallel_fn = fn;
  command->context = context;
  command->count = count;
  command->grain = grain;
  return submit(stream, command);
}

static xr_status_t cpu_event_record(xr_hal_event_t *base, xr_hal_stream_t *stream) {
  cpu_event_t *event = (cpu_event_t *)base;
  command_t *command = new_command(stream, COMMAND_RECORD);
  if (!command) return XR_RESOURCE_EXHAUSTED;
  pthread_mutex_lock(&event->mutex);
  command->generation = ++event->recorded_generation;
  pthread_mutex_unlock(&event->mutex);
  atomic_fetch_add_explicit(&event->references, 1, memory_order_relaxed);
  command->event = event;
  return submit(stream, command);
}

static xr_status_t cpu_stream_wait_event(xr_hal_stream_t *stream, xr_hal_event_t *base) {
  cpu_event_t *event = (cpu_event_t *)base;
  command_t *command = new_command(stream, COMMAND_WAIT);
  if (!command) return XR_RESOURCE_EXHAUSTED;
  pthread_mutex_lock(&event->mutex);
  command->generation = event->recorded_generation;
  pthread_mutex_unlock(&event->mutex);
  atomic_fetch_add_explicit(&event->references, 1, memory_order_relaxed);
  command->event = event;
  return submit(stream, command);
}

/* ------------------------------------------------------------------------------------------ */
/* Device                                                                                     */

static void cpu_device_destroy(xr_hal_device_t *base) {
  cpu_device_t *device = cpu_device(base);
  xr_thread_pool_destroy(device->pool);
  free(device);
}

static void cpu_device_properties(xr_hal_device_t *base, xr_hal_device_properties_t *out) {
  const xr_cpu_info_t *info = &cpu_device(base)->info;
  xr_hal_copy_string(out->name, sizeof out->name, info->model_name);
  xr_hal_copy_string(out->vendor, sizeof out->vendor, info->vendor);
  xr_hal_copy_string(out->driver_version, sizeof out->driver_version, info->kernel_release);
  xr_hal_copy_string(out->runtime_version, sizeof out->runtime_version, info->libc_version);
  out->is_gpu = false;
  out->host_addressable = true;
  out->memory_bytes = info->physical_memory_bytes;
  out->max_allocation_bytes = info->physical_memory_bytes;
  out->compute_units = info->cores;
  out->clock_mhz = info->clock_mhz;
  out->simd_width = info->fp32_lanes;
  /* No work-groups on the host: the most work items that run at once is the pool's width. */
  out->max_work_group_size = xr_thread_pool_width(cpu_device(base)->pool);
  out->last_level_cache_bytes = info->last_level_cache_bytes;
  out->cache_total_bytes = info->cache_total_bytes;
  memcpy(out->cache_levels, info->cache_levels, sizeof out->cache_levels);
  out->cache_level_count = info->cache_level_count;
  xr_cpu_info_peak_flops(info, out->peak_flops);
}

static xr_status_t cpu_device_clocks(xr_hal_device_t *base, xr_hal_clocks_t *out) {
  return xr_cpu_clocks_read(base->spec, cpu_device(base)->cpufreq_dir, out);
}

static const xr_hal_device_vtable_t cpu_vtable = {
    .device_destroy = cpu_device_destroy,
    .device_properties = cpu_device_properties,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_destroy = cpu_buffer_destroy,
    .buffer_host_pointer = cpu_buffer_host_pointer,
    .stream_create = cpu_stream_create,
    .stream_destroy = cpu_stream_destroy,
    .stream_synchronize = cpu_stream_synchronize,
    .stream_write = cpu_stream_write,
    .stream_read = cpu_stream_read,
    .stream_copy = cpu_stream_copy,
    .stream_fill = cpu_stream_fill,
    .buffer_write = cpu_buffer_write,
    .buffer_read = cpu_buffer_read,
    .buffer_copy = cpu_buffer_copy,
    .stream_enqueue_host = cpu_stream_enqueue_host,
    .stream_enqueue_parallel = cpu_stream_enqueue_parallel,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_synchronize = cpu_event_synchronize,
    .stream_wait_event = cpu_stream_wait_event,
    .event_elapsed_ms = cpu_event_elapsed_ms,
    .device_clocks = cpu_device_clocks,
};

static xr_status_t cpu_probe(char *reason, size_t capacity, int *out_device_count) {
  (void)reason;
  (void)capacity;
  *out_device_count = 1;
  return XR_OK;
}

extern const xr_hal_driver_t xr_hal_cpu_driver;

static xr_status_t cpu_device_create(int ordinal, xr_hal_device_t **out) {
  cpu_device_t *device = calloc(1, sizeof *device);
  if (!device) return xr_error(XR_RESOURCE_EXHAUSTED, "cpu: out of host memory");
  xr_status_t status = xr_hal_device_base_init(&device->base, &cpu_vtable, &xr_hal_cpu_driver,
                                               ordinal);
  if (status != XR_OK) {
    free(device);
    return status;
  }
  xr_cpu_info_read(&device->info);
  xr_cpu_clocks_locate(device->cpufreq_dir, sizeof device->cpufreq_dir);
  /* The submitting thread joins in, so cores - 1 workers keep every core busy. */
  status = xr_thread_pool_create(device->info.cores > 1 ? device->info.cores - 1 : 0,
                                 &device->pool);
  if (status != XR_OK) {
    pthread_mutex_destroy(&device->base.mutex);
    free(device);
    return status;
  }
  *out = &device->base;
  return XR_OK;
}

const xr_hal_driver_t xr_hal_cpu_driver = {
    .name = "cpu",
    .probe = cpu_probe,
    .device_create = cpu_device_create,
};
