#include "hal/drivers/cpu/thread_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

typedef struct pool_job {
  xr_thread_pool_fn_t fn;
  void *context;
  size_t count;
  size_t chunk;
  atomic_size_t next;      /* first unclaimed item */
  bool followed;           /* the submitter has another job queued behind this one */
  size_t active_workers;   /* pool workers inside this job; guarded by the pool mutex */
  struct pool_job *next_job;
} pool_job_t;

struct xr_thread_pool {
  pthread_mutex_t mutex;
  pthread_cond_t work_available;
  pthread_cond_t worker_left_job;
  pool_job_t *jobs;        /* jobs that may still have unclaimed chunks */
  atomic_size_t posted;    /* jobs posted so far: what a spinning worker watches */
  size_t sleepers;         /* workers waiting on work_available; guarded by the mutex */
  bool stopping;
  size_t worker_count;
  pthread_t workers[];
};

/* Claims and runs chunks until the job has none left. */
static void run_chunks(pool_job_t *job) {
  for (;;) {
    size_t begin = atomic_fetch_add_explicit(&job->next, job->chunk, memory_order_relaxed);
    if (begin >= job->count) return;
    size_t end = job->count - begin < job->chunk ? job->count : begin + job->chunk;
    job->fn(job->context, begin, end);
  }
}

static void unlink_job(xr_thread_pool_t *pool, pool_job_t *job) {
  for (pool_job_t **link = &pool->jobs; *link; link = &(*link)->next_job) {
    if (*link == job) {
      *link = job->next_job;
      return;
    }
  }
}

/* How long a worker watches for the next job after a job whose submitter has more queued (an
 * op's steps, a batch of timed executions: jobs a few microseconds apart) before it sleeps. A
 * sleeping worker takes tens of microseconds to wake on a busy or virtual machine, which an op
 * of 30 us pays with its other cores idle. After a job with nothing behind it the worker sleeps
 * at once, so that it does not take a CPU from the thread that queues the next work. */
enum { SPIN_NS = 50 * 1000 };

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Polls until a job is posted after `seen` jobs or SPIN_NS pass; yields the CPU between polls
 * to any thread that wants it. */
static void spin_for_work(xr_thread_pool_t *pool, size_t seen) {
  uint64_t deadline = now_ns() + SPIN_NS;
  for (;;) {
    for (int i = 0; i < 64; i++) {
      if (atomic_load_explicit(&pool->posted, memory_order_acquire) != seen) return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (now_ns() > deadline) return;
    sched_yield();
  }
}

static void *worker_main(void *argument) {
  xr_thread_pool_t *pool = argument;
  bool more_coming = false;
  pthread_mutex_lock(&pool->mutex);
  for (;;) {
    if (more_coming && !pool->stopping && !pool->jobs) {
      size_t seen = atomic_load_explicit(&pool->posted, memory_order_relaxed);
      pthread_mutex_unlock(&pool->mutex);
      spin_for_work(pool, seen);
      pthread_mutex_lock(&pool->mutex);
    }
    while (!pool->stopping && !pool->jobs) {
      pool->sleepers++;
      pthread_cond_wait(&pool->work_available, &pool->mutex);
      pool->sleepers--;
    }
    if (pool->stopping) break;
    pool_job_t *job = pool->jobs;
    job->active_workers++;
    more_coming = job->followed;
    pthread_mutex_unlock(&pool->mutex);
    run_chunks(job);
    pthread_mutex_lock(&pool->mutex);
    /* Nothing left to claim: stop offering it, so idle workers sleep instead of spinning. */
    unlink_job(pool, job);
    job->active_workers--;
    if (job->active_workers == 0) pthread_cond_broadcast(&pool->worker_left_job);
  }
  pthread_mutex_unlock(&pool->mutex);
  return NULL;
}

xr_status_t xr_thread_pool_create(size_t worker_count, xr_thread_pool_t **out_pool) {
  xr_thread_pool_t *pool = calloc(1, sizeof *pool + worker_count * sizeof(pthread_t));
  if (!pool) return xr_error(XR_RESOURCE_EXHAUSTED, "thread pool: out of host memory");
  pthread_mutex_init(&pool->mutex, NULL);
  pthread_cond_init(&pool->work_available, NULL);
  pthread_cond_init(&pool->worker_left_job, NULL);
  atomic_init(&pool->posted, 0);
  for (size_t i = 0; i < worker_count; i++) {
    if (pthread_create(&pool->workers[i], NULL, worker_main, pool) != 0) {
      xr_thread_pool_destroy(pool);
      return xr_error(XR_RESOURCE_EXHAUSTED, "thread pool: could not start worker %zu of %zu", i,
                      worker_count);
    }
    pool->worker_count = i + 1;
  }
  *out_pool = pool;
  return XR_OK;
}

void xr_thread_pool_destroy(xr_thread_pool_t *pool) {
  if (!pool) return;
  pthread_mutex_lock(&pool->mutex);
  pool->stopping = true;
  pthread_cond_broadcast(&pool->work_available);
  pthread_mutex_unlock(&pool->mutex);
  for (size_t i = 0; i < pool->worker_count; i++) pthread_join(pool->workers[i], NULL);
  pthread_cond_destroy(&pool->worker_left_job);
  pthread_cond_destroy(&pool->work_available);
  pthread_mutex_destroy(&pool->mutex);
  free(pool);
}

size_t xr_thread_pool_width(const xr_thread_pool_t *pool) { return pool->worker_count + 1; }

void xr_thread_pool_parallel_for(xr_thread_pool_t *pool, size_t count, size_t chunk,
                                 xr_thread_pool_fn_t fn, void *context, bool followed) {
  if (count == 0) return;
  if (chunk == 0) chunk = 1;
  if (pool->worker_count == 0 || count <= chunk) {
    fn(context, 0, count);
    return;
  }
  pool_job_t job = {.fn = fn, .context = context, .count = count, .chunk = chunk,
                    .followed = followed};
  atomic_init(&job.next, 0);
  pthread_mutex_lock(&pool->mutex);
  job.next_job = pool->jobs;
  pool->jobs = &job;
  atomic_fetch_add_explicit(&pool->posted, 1, memory_order_release);
  if (pool->sleepers) pthread_cond_broadcast(&pool->work_available);
  pthread_mutex_unlock(&pool->mutex);

  run_chunks(&job);

  /* Every chunk is claimed; wait for workers still running the chunks they claimed. */
  pthread_mutex_lock(&pool->mutex);
  unlink_job(pool, &job);
  while (job.active_workers > 0) pthread_cond_wait(&pool->worker_left_job, &pool->mutex);
  pthread_mutex_unlock(&pool->mutex);
}
