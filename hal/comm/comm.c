/* Communicators and collectives (hal.h "Communicators") over MPI, loaded at run time.
 *
 * Open MPI is opened through the usual symbol table (hal/comm/mpi_symbols.h) and then promoted to
 * RTLD_GLOBAL: its own components, which it dlopens, resolve their symbols against libmpi's.
 * Collectives start as non-blocking MPI calls on the stream's worker and are polled to
 * completion against a deadline, so a rank that stops answering fails the communicator with a
 * sentence instead of hanging the others. Every MPI call of the process goes through one mutex:
 * MPI_THREAD_SERIALIZED is all we need of the library. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/dynload.h"
#include "base/float_formats.h"
#include "base/vendor_libraries.h"
#include "hal/comm/mpi_symbols.h"
#include "hal/comm/nccl.h"
#include "hal/core/driver.h"
#include "hal/hal.h"

enum { DEFAULT_TIMEOUT_MS = 300000 };

/* ------------------------------------------------------------------------------------------ */
/* launchers                                                                                   */

static bool env_int(const char *name, int *out) {
  const char *v = getenv(name);
  if (!v || !*v) return false;
  char *end;
  long x = strtol(v, &end, 10);
  if (*end || x < 0 || x > INT_MAX) return false;
  *out = (int)x;
  return true;
}

void xr_hal_launch_detect(xr_hal_launch_t *out) {
  xr_hal_launch_t l = {.size = 1};
  int rank, size, local = 0;
  if (env_int("OMPI_COMM_WORLD_RANK", &rank) && env_int("OMPI_COMM_WORLD_SIZE", &size)) {
    env_int("OMPI_COMM_WORLD_LOCAL_RANK", &local);
    l = (xr_hal_launch_t){true, true, rank, size, local, "mpirun"};
  } else if (getenv("SLURM_STEP_ID") && env_int("SLURM_PROCID", &rank) &&
             env_int("SLURM_NTASKS", &size)) {
    /* A job step started by srun; sbatch's batch script alone is not one. */
    env_int("SLURM_LOCALID", &local);
    l = (xr_hal_launch_t){true, true, rank, size, local, "srun"};
  } else if (env_int("PMIX_RANK", &rank)) {
    size = 0;
    l = (xr_hal_launch_t){true, true, rank, size, 0, "pmix"};
  } else if (env_int("RANK", &rank) && env_int("WORLD_SIZE", &size)) {
    env_int("LOCAL_RANK", &local);
    l = (xr_hal_launch_t){true, false, rank, size, local, "torchrun"};
  }
  *out = l;
}

/* ------------------------------------------------------------------------------------------ */
/* loading Open MPI                                                                            */

typedef struct mpi_api {
  XR_MPI_SYMBOLS(XR_DYNLOAD_FIELD)
#define MPI_OBJECT_FIELD(field, symbol) xr_mpi_handle_t field;
  XR_MPI_OBJECTS(MPI_OBJECT_FIELD)
#undef MPI_OBJECT_FIELD
} mpi_api_t;

#define MPI_SYMBOL(need, ret, field, params) XR_DYNLOAD_SYMBOL(mpi_api_t, need, field, field)
static const xr_dynload_symbol_t mpi_symbols[] = {XR_MPI_SYMBOLS(MPI_SYMBOL)};
#undef MPI_SYMBOL

static const xr_dynload_spec_t *const mpi_library = &xr_vendor_libraries[XR_VENDOR_LIBRARY_MPI];

static pthread_once_t loaded = PTHREAD_ONCE_INIT;
static mpi_api_t mpi;
static xr_dynload_library_t library;
static xr_status_t load_status;
static char load_report[XR_HAL_REASON_CAPACITY];

static void load(void) {
  load_status = xr_dynload_open(mpi_library, mpi_symbols, sizeof mpi_symbols / sizeof *mpi_symbols,
                                &mpi, &library, load_report, sizeof load_report);
  if (load_status != XR_OK) return;
#define MPI_OBJECT_FIND(field, symbol)                                                           \
  if (load_status == XR_OK && !(mpi.field = xr_dynload_find(&library, #symbol))) {               \
    xr_dynload_report_append(load_report, sizeof load_report, "%s lacks %s: not Open MPI's ABI", \
                             library.path, #symbol);                                             \
    load_status = XR_UNAVAILABLE;                                                                \
  }
  XR_MPI_OBJECTS(MPI_OBJECT_FIND)
#undef MPI_OBJECT_FIND
  /* Open MPI's components resolve libmpi's symbols globally. */
  if (load_status == XR_OK && !dlopen(library.path, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)) {
    xr_dynload_report_append(load_report, sizeof load_report, "%s: %s", library.path, dlerror());
    load_status = XR_UNAVAILABLE;
  }
  if (load_status != XR_OK) {
    xr_dynload_close(&library);
    memset(&mpi, 0, sizeof mpi);
  }
}

static void mpi_error_text(int code, char *out, size_t size) {
  char text[XR_MPI_MAX_ERROR_STRING] = "";
  int length = 0;
  if (mpi.MPI_Error_string(code, text, &length) != XR_MPI_SUCCESS) text[0] = '\0';
  snprintf(out, size, "%s (MPI error %d)", text[0] ? text : "unknown", code);
}

/* ------------------------------------------------------------------------------------------ */
/* communicators                                                                               */

enum { MAX_GROUPS = 16 };

/* The world's communicator, or a group split from it (xr_hal_comm_group). The world holds what
 * the process has once: the lock, the first failure (a group's fails the world: its ranks
 * would wait for the others at the next collective anyway), the sums, the groups. */
struct xr_hal_comm {
  xr_hal_comm_t *world;   /* itself for the world */
  xr_mpi_handle_t handle; /* MPI_COMM_WORLD, or the group's */
  int rank, size;
  int group_stride; /* groups: their ranks' distance in the world */
  char transport[XR_HAL_REASON_CAPACITY];
  /* cuda and hip: NCCL / RCCL carries the collectives (MPI the unique id and the host's
   * agreement), on the caller's device (borrowed), with a 4-byte scratch buffer for barriers
   * (the world's, shared by its groups). */
  char driver[16];
  xr_nccl_t *nccl;
  xr_hal_device_t *device;
  xr_hal_buffer_t *scratch;
  /* The world's alone. */
  bool mpi; /* MPI runs beside NCCL, or carries the collectives; false under torchrun */
  double timeout_ms;
  bool initialized_here; /* we called MPI_Init_thread, so we finalize */
  pthread_mutex_t mutex; /* every MPI call; guards the failure */
  xr_mpi_handle_t op_bf16_sum, op_f16_sum;
  xr_status_t failure;
  char failure_text[XR_HAL_REASON_CAPACITY];
  xr_hal_comm_t *groups[MAX_GROUPS];
  int group_count;
};

static bool comm_made; /* MPI starts once per process */

/* The sums MPI has no type for, element by element in float as NCCL does. */
static void sum_bf16(void *in, void *inout, int *count, xr_mpi_handle_t *type) {
  (void)type;
  const uint16_t *a = in;
  uint16_t *b = inout;
  for (int i = 0; i < *count; i++) b[i] = xr_f32_to_bf16(xr_bf16_to_f32(a[i]) + xr_bf16_to_f32(b[i]));
}

static void sum_f16(void *in, void *inout, int *count, xr_mpi_handle_t *type) {
  (void)type;
  const _Float16 *a = in;
  _Float16 *b = inout;
  for (int i = 0; i < *count; i++) b[i] = (_Float16)((float)a[i] + (float)b[i]);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Records the first failure of the world (under the mutex). */
static void comm_fail(xr_hal_comm_t *c, xr_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void comm_fail(xr_hal_comm_t *c, xr_status_t st, const char *fmt, ...) {
  c = c->world;
  if (c->failure != XR_OK) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->failure_text, sizeof c->failure_text, fmt, ap);
  va_end(ap);
  c->failure = st;
}

/* Polls `request` until it completes or the deadline passes (under the mutex). `what` names the
 * collective in the failure. */
static void wait_request(xr_hal_comm_t *c, xr_mpi_handle_t *request, int started,
                         const char *what) {
  if (started != XR_MPI_SUCCESS) {
    char text[300];
    mpi_error_text(started, text, sizeof text);
    comm_fail(c, XR_DEVICE_ERROR, "%s on rank %d of %d: %s", what, c->rank, c->size, text);
    return;
  }
  double deadline = now_ms() + c->world->timeout_ms;
  for (unsigned spins = 1;; spins++) {
    int done = 0;
    xr_mpi_status_t status;
    int result = mpi.MPI_Test(request, &done, &status);
    if (result != XR_MPI_SUCCESS) {
      char text[300];
      mpi_error_text(result, text, sizeof text);
      comm_fail(c, XR_DEVICE_ERROR, "%s on rank %d of %d: %s", what, c->rank, c->size, text);
      return;
    }
    if (done) return;
    /* Ranks may outnumber the CPUs: let the others run. */
    if (spins % 64 == 0) sched_yield();
    if (spins % 1024 == 0 && now_ms() > deadline) {
      comm_fail(c, XR_UNAVAILABLE,
                "%s: rank %d of %d%s waited %.0f s for the other ranks, in vain: one of them "
                "stopped, or the ranks do not run the same collectives in the same order",
                what, c->world->rank, c->world->size, c->world != c ? " (in a group)" : "",
                c->world->timeout_ms / 1000);
      return; /* the request stays pending: MPI cannot cancel a collective */
    }
  }
}

static xr_status_t broadcast_id(void *context, void *data, size_t bytes, int root) {
  return xr_hal_comm_host_broadcast(context, data, bytes, root);
}

/* NCCL / RCCL on the caller's device, MPI carrying the id. */
static xr_status_t join_nccl(xr_hal_comm_t *c, xr_hal_device_t *device) {
  c->device = device;
  xr_status_t st = xr_hal_buffer_alloc(c->device, 4, &c->scratch);
  if (st == XR_OK)
    st = xr_nccl_create(c->device, c->driver, c->rank, c->size, broadcast_id, c, &c->nccl);
  if (st != XR_OK) return st;
  char mpi_part[XR_HAL_REASON_CAPACITY];
  snprintf(mpi_part, sizeof mpi_part, "%s", c->transport);
  snprintf(c->transport, sizeof c->transport, "%.400s, ids over %.400s", xr_nccl_transport(c->nccl),
           mpi_part);
  return XR_OK;
}

/* torchrun's ranks on cuda and hip: NCCL / RCCL alone. Every rank makes the same unique id
 * from NCCL_COMM_ID (set here to MASTER_ADDR:MASTER_PORT + 1 unless given: torchrun's store
 * holds MASTER_PORT), where rank 0's ncclCommInitRank listens; then NCCL_COMM_ID is unset, so
 * that groups get ids of their own. The host's agreement goes through NCCL too. */
static xr_status_t create_without_mpi(xr_hal_device_t *device, const char *driver,
                                      const xr_hal_launch_t *launch, double timeout_ms,
                                      xr_hal_comm_t **out) {
  char id[300];
  const char *given = getenv("NCCL_COMM_ID");
  const char *addr = getenv("MASTER_ADDR"), *port = getenv("MASTER_PORT");
  int port_number = port ? atoi(port) : 0;
  if (given && *given) {
    snprintf(id, sizeof id, "%s", given);
  } else if (!addr || !*addr || port_number <= 0 || port_number >= 65535) {
    return xr_error(XR_INVALID_ARGUMENT,
                    "started by %s without MASTER_ADDR and MASTER_PORT (or NCCL_COMM_ID): NCCL "
                    "has no address to meet at",
                    launch->launcher);
  } else {
    snprintf(id, sizeof id, "%s:%d", addr, port_number + 1);
    setenv("NCCL_COMM_ID", id, 1);
  }
  xr_hal_comm_t *c = calloc(1, sizeof *c);
  if (!c) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory for a communicator");
  c->world = c;
  c->rank = launch->rank;
  c->size = launch->size;
  c->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
  pthread_mutex_init(&c->mutex, NULL);
  snprintf(c->driver, sizeof c->driver, "%s", driver);
  comm_made = true;
  c->device = device;
  xr_status_t st = xr_hal_buffer_alloc(c->device, 4, &c->scratch);
  if (st == XR_OK) st = xr_nccl_create(c->device, driver, c->rank, c->size, NULL, NULL, &c->nccl);
  unsetenv("NCCL_COMM_ID");
  if (st != XR_OK) {
    xr_hal_comm_destroy(c);
    return st;
  }
  snprintf(c->transport, sizeof c->transport, "%.400s, ids from NCCL_COMM_ID=%.200s",
           xr_nccl_transport(c->nccl), id);
  *out = c;
  return XR_OK;
}

xr_status_t xr_hal_comm_create(xr_hal_device_t *device, double timeout_ms,
                               xr_hal_comm_t **out_comm) {
  if (!device || !out_comm || timeout_ms < 0)
    return xr_error(XR_INVALID_ARGUMENT,
                    "xr_hal_comm_create: NULL device or output, or a "
                    "negative timeout");
  xr_hal_device_properties_t props;
  xr_status_t st = xr_hal_device_properties(device, &props);
  if (st != XR_OK) return st;
  bool gpu = !strcmp(props.driver, "cuda") || !strcmp(props.driver, "hip");
  if (!gpu && strcmp(props.driver, "cpu") && strcmp(props.driver, "opencl"))
    return xr_error(XR_UNIMPLEMENTED, "%s: no collective transport for %s buffers", device->spec,
                    props.driver);
  xr_hal_launch_t launch;
  xr_hal_launch_detect(&launch);
  if (!launch.mpi && !(gpu && launch.launched))
    return xr_error(XR_UNAVAILABLE,
                    launch.launched ? "started by %s, which MPI cannot join: start the ranks "
                                      "with mpirun -np N or srun -n N (on cuda and hip, NCCL "
                                      "and RCCL join torchrun's ranks)"
                                    : "not started by a launcher%s: start the ranks with mpirun "
                                      "-np N or srun -n N",
                    launch.launcher);
  if (comm_made)
    return xr_error(XR_UNAVAILABLE,
                    "a communicator was already made in this process, and MPI "
                    "starts once per process");
  if (!launch.mpi) return create_without_mpi(device, props.driver, &launch, timeout_ms, out_comm);
  pthread_once(&loaded, load);
  if (load_status != XR_OK) return xr_error(XR_UNAVAILABLE, "MPI unavailable: %s", load_report);
  xr_hal_comm_t *c = calloc(1, sizeof *c);
  if (!c) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory for a communicator");
  c->world = c;
  c->mpi = true;
  c->handle = mpi.comm_world;
  c->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
  pthread_mutex_init(&c->mutex, NULL);
  int initialized = 0, provided = 0, result = XR_MPI_SUCCESS;
  mpi.MPI_Initialized(&initialized);
  if (!initialized) {
    result = mpi.MPI_Init_thread(NULL, NULL, XR_MPI_THREAD_SERIALIZED, &provided);
    c->initialized_here = result == XR_MPI_SUCCESS;
    /* Stream workers call MPI too (one at a time, under the mutex). */
    if (result == XR_MPI_SUCCESS && provided < XR_MPI_THREAD_SERIALIZED) {
      comm_made = true;
      st = xr_error(XR_UNAVAILABLE,
                    "MPI (%s) gives thread level %d; xreplay needs "
                    "MPI_THREAD_SERIALIZED (%d)",
                    library.path, provided, XR_MPI_THREAD_SERIALIZED);
      xr_hal_comm_destroy(c);
      return st;
    }
  }
  if (result == XR_MPI_SUCCESS)
    result = mpi.MPI_Comm_set_errhandler(mpi.comm_world, mpi.errors_return);
  if (result == XR_MPI_SUCCESS) result = mpi.MPI_Comm_rank(mpi.comm_world, &c->rank);
  if (result == XR_MPI_SUCCESS) result = mpi.MPI_Comm_size(mpi.comm_world, &c->size);
  if (result == XR_MPI_SUCCESS) result = mpi.MPI_Op_create(sum_bf16, 1, &c->op_bf16_sum);
  if (result == XR_MPI_SUCCESS) result = mpi.MPI_Op_create(sum_f16, 1, &c->op_f16_sum);
  comm_made = true;
  if (result != XR_MPI_SUCCESS) {
    char text[300];
    mpi_error_text(result, text, sizeof text);
    st = xr_error(XR_DEVICE_ERROR, "MPI (%s) could not start: %s", library.path, text);
    xr_hal_comm_destroy(c);
    return st;
  }
  char version[XR_MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int length = 0;
  if (mpi.MPI_Get_library_version(version, &length) != XR_MPI_SUCCESS) version[0] = '\0';
  version[strcspn(version, ",\n")] = '\0'; /* "Open MPI v4.1.4" */
  snprintf(c->transport, sizeof c->transport, "MPI: %s (%s)", library.path,
           version[0] ? version : "version unknown");
  snprintf(c->driver, sizeof c->driver, "%s", props.driver);
  if (gpu && (st = join_nccl(c, device)) != XR_OK) {
    xr_hal_comm_destroy(c);
    return st;
  }
  *out_comm = c;
  return XR_OK;
}

/* A group's MPI communicator and NCCL's, under the world's lock. */
static void group_destroy(xr_hal_comm_t *g) {
  xr_hal_comm_t *w = g->world;
  xr_nccl_destroy(g->nccl, w->failure != XR_OK);
  /* After a failure a collective may be pending on it, and freeing would wait. */
  if (g->handle && w->failure == XR_OK) mpi.MPI_Comm_free(&g->handle);
  free(g);
}

void xr_hal_comm_destroy(xr_hal_comm_t *c) {
  if (!c || c->world != c) return; /* groups go with their world */
  pthread_mutex_lock(&c->mutex);
  for (int k = 0; k < c->group_count; k++) group_destroy(c->groups[k]);
  c->group_count = 0;
  pthread_mutex_unlock(&c->mutex);
  xr_nccl_destroy(c->nccl, c->failure != XR_OK);
  xr_hal_buffer_free(c->scratch);
  pthread_mutex_lock(&c->mutex);
  if (c->op_bf16_sum) mpi.MPI_Op_free(&c->op_bf16_sum);
  if (c->op_f16_sum) mpi.MPI_Op_free(&c->op_f16_sum);
  /* After a failure a collective is still pending and MPI_Finalize would wait for it. */
  if (c->initialized_here && c->failure == XR_OK) mpi.MPI_Finalize();
  pthread_mutex_unlock(&c->mutex);
  pthread_mutex_destroy(&c->mutex);
  free(c);
}

int xr_hal_comm_rank(const xr_hal_comm_t *c) {
  return c ? c->rank : 0;
}
int xr_hal_comm_size(const xr_hal_comm_t *c) {
  return c ? c->size : 1;
}
const char *xr_hal_comm_transport(const xr_hal_comm_t *c) {
  return c ? c->transport : "";
}

xr_status_t xr_hal_comm_status(xr_hal_comm_t *c) {
  if (!c) return xr_error(XR_INVALID_ARGUMENT, "xr_hal_comm_status: NULL communicator");
  xr_hal_comm_t *w = c->world;
  pthread_mutex_lock(&w->mutex);
  if (w->failure == XR_OK && c->nccl && xr_nccl_status(c->nccl) != XR_OK)
    comm_fail(c, XR_DEVICE_ERROR, "%s", xr_last_error());
  xr_status_t st = w->failure;
  if (st != XR_OK) xr_error(st, "%s", w->failure_text);
  pthread_mutex_unlock(&w->mutex);
  return st;
}

bool xr_hal_comm_serves(const xr_hal_comm_t *c, xr_hal_device_t *device) {
  xr_hal_device_properties_t props;
  if (!c || !device || xr_hal_device_properties(device, &props) != XR_OK) return false;
  if (c->nccl) return !strcmp(props.driver, c->driver);
  return !strcmp(props.driver, "cpu") || !strcmp(props.driver, "opencl");
}

/* Without MPI (torchrun): through NCCL itself, under the lock, failing the world on error. */
static xr_status_t host_exchange(xr_hal_comm_t *c, bool gather, const void *send, size_t bytes,
                                 void *recv, int root) {
  xr_hal_comm_t *w = c->world;
  pthread_mutex_lock(&w->mutex);
  if (w->failure == XR_OK) {
    xr_status_t st = xr_nccl_host_exchange(c->nccl, c->device, gather, send, bytes, recv, root);
    if (st != XR_OK)
      comm_fail(c, st, "%s host values on rank %d of %d: %s", gather ? "gathering" : "broadcasting",
                w->rank, w->size, xr_last_error());
  }
  pthread_mutex_unlock(&w->mutex);
  return xr_hal_comm_status(c);
}

xr_status_t xr_hal_comm_host_allgather(xr_hal_comm_t *c, const void *send, size_t bytes,
                                       void *recv) {
  if (!c || (!send && bytes) || !recv || bytes > INT_MAX)
    return xr_error(XR_INVALID_ARGUMENT,
                    "xr_hal_comm_host_allgather: NULL argument or more than "
                    "2 GiB");
  if (!c->world->mpi) return host_exchange(c, true, send, bytes, recv, 0);
  pthread_mutex_lock(&c->world->mutex);
  if (c->world->failure == XR_OK) {
    xr_mpi_handle_t request;
    int started = mpi.MPI_Iallgather(send, (int)bytes, mpi.type_byte, recv, (int)bytes,
                                     mpi.type_byte, c->handle, &request);
    wait_request(c, &request, started, "gathering a value from every rank");
  }
  pthread_mutex_unlock(&c->world->mutex);
  return xr_hal_comm_status(c);
}

xr_status_t xr_hal_comm_host_broadcast(xr_hal_comm_t *c, void *data, size_t bytes, int root) {
  if (!c || (!data && bytes) || bytes > INT_MAX || root < 0 || root >= c->size)
    return xr_error(XR_INVALID_ARGUMENT,
                    "xr_hal_comm_host_broadcast: NULL argument, more than "
                    "2 GiB, or root %d outside the %d ranks",
                    root, c ? c->size : 0);
  if (!c->world->mpi) return host_exchange(c, false, data, bytes, data, root);
  pthread_mutex_lock(&c->world->mutex);
  if (c->world->failure == XR_OK) {
    xr_mpi_handle_t request;
    int started = mpi.MPI_Ibcast(data, (int)bytes, mpi.type_byte, root, c->handle, &request);
    wait_request(c, &request, started, "broadcasting a value to every rank");
  }
  pthread_mutex_unlock(&c->world->mutex);
  return xr_hal_comm_status(c);
}

/* Rank `r`'s group when the world is split into groups of `size` ranks `stride` apart: which
 * (color) and its place in it (key). */
static void group_place(int r, int size, int stride, int *color, int *key) {
  int block = r / (size * stride), within = r % (size * stride);
  *color = block * stride + within % stride;
  *key = within / stride;
}

/* Without MPI, xr_nccl_create's broadcast within a group: every rank of the world gathers
 * what each holds (a group's rank 0, its id) and keeps its own group's. */
static xr_status_t group_id_over_world(void *context, void *data, size_t bytes, int root) {
  xr_hal_comm_t *g = context, *w = g->world;
  (void)root; /* 0: the group's first rank */
  char *all = calloc((size_t)w->size, bytes);
  if (!all) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  xr_status_t st = xr_hal_comm_host_allgather(w, data, bytes, all);
  /* This rank's group's first rank: `stride` x its place before it. */
  int first = w->rank - g->rank * g->group_stride;
  if (st == XR_OK) memcpy(data, all + (size_t)first * bytes, bytes);
  free(all);
  return st;
}

xr_hal_comm_t *xr_hal_comm_find_group(xr_hal_comm_t *w, int size, int stride) {
  if (!w || w->world != w) return NULL;
  if (size == w->size && stride == 1) return w;
  for (int k = 0; k < w->group_count; k++)
    if (w->groups[k]->size == size && w->groups[k]->group_stride == stride) return w->groups[k];
  return NULL;
}

xr_status_t xr_hal_comm_group(xr_hal_comm_t *w, int size, int stride, xr_hal_comm_t **out) {
  if (!w || !out || w->world != w || size < 1 || stride < 1 || w->size % size ||
      (w->size / size) % stride)
    return xr_error(XR_INVALID_ARGUMENT,
                    "xr_hal_comm_group: groups of %d ranks %d apart do not tile the %d ranks%s",
                    size, stride, w ? w->size : 0, w && w->world != w ? " (not a world)" : "");
  if ((*out = xr_hal_comm_find_group(w, size, stride))) return XR_OK;
  if (w->group_count == MAX_GROUPS)
    return xr_error(XR_RESOURCE_EXHAUSTED, "more than %d kinds of process groups", MAX_GROUPS);
  /* Every rank must ask for the same group now: MPI_Comm_split blocks with no deadline, so
   * the ranks first meet where a missing one is caught. */
  int mine[2] = {size, stride}, *all = malloc(sizeof mine * (size_t)w->size);
  xr_status_t st = all ? xr_hal_comm_host_allgather(w, mine, sizeof mine, all)
                       : xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory");
  for (int r = 0; st == XR_OK && r < w->size; r++)
    if (all[2 * r] != size || all[2 * r + 1] != stride)
      st = xr_error(XR_INVALID_ARGUMENT,
                    "rank %d asks for groups of %d ranks %d apart, rank %d for %d ranks %d "
                    "apart: the ranks do not replay the same collectives",
                    r, all[2 * r], all[2 * r + 1], w->rank, size, stride);
  free(all);
  if (st != XR_OK) return st;
  xr_hal_comm_t *g = calloc(1, sizeof *g);
  if (!g) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory for a communicator");
  g->world = w;
  g->group_stride = stride;
  snprintf(g->driver, sizeof g->driver, "%s", w->driver);
  g->device = w->device;
  g->scratch = w->scratch;
  int color, key;
  group_place(w->rank, size, stride, &color, &key);
  g->rank = key;
  g->size = size;
  if (w->mpi) {
    pthread_mutex_lock(&w->mutex);
    int result = mpi.MPI_Comm_split(w->handle, color, key, &g->handle);
    if (result == XR_MPI_SUCCESS)
      result = mpi.MPI_Comm_set_errhandler(g->handle, mpi.errors_return);
    if (result == XR_MPI_SUCCESS) result = mpi.MPI_Comm_rank(g->handle, &g->rank);
    if (result == XR_MPI_SUCCESS) result = mpi.MPI_Comm_size(g->handle, &g->size);
    pthread_mutex_unlock(&w->mutex);
    if (result != XR_MPI_SUCCESS) {
      char text[300];
      mpi_error_text(result, text, sizeof text);
      st = xr_error(XR_DEVICE_ERROR, "splitting the %d ranks into groups of %d: %s", w->size, size,
                    text);
    } else if (g->size != size || g->rank != key) {
      st = xr_error(XR_DEVICE_ERROR, "MPI_Comm_split made a group of %d ranks (rank %d), not %d",
                    g->size, g->rank, size);
    }
  }
  snprintf(g->transport, sizeof g->transport, "%s", w->transport);
  /* NCCL's id: over the group's MPI communicator, or, without MPI, gathered over the world. */
  if (st == XR_OK && w->nccl)
    st = xr_nccl_create(g->device, g->driver, g->rank, g->size,
                        w->mpi ? broadcast_id : group_id_over_world, g, &g->nccl);
  if (st != XR_OK) {
    pthread_mutex_lock(&w->mutex);
    group_destroy(g);
    pthread_mutex_unlock(&w->mutex);
    return st;
  }
  w->groups[w->group_count++] = g;
  *out = g;
  return XR_OK;
}

void xr_hal_comm_abort(xr_hal_comm_t *c, int exit_code) {
  if (c && c->world->mpi) mpi.MPI_Abort(mpi.comm_world, exit_code);
  _exit(exit_code); /* MPI_Abort does not return either; torchrun stops the other ranks */
}

/* ------------------------------------------------------------------------------------------ */
/* collectives                                                                                 */

static const char *kind_name(xr_hal_collective_kind_t kind) {
  switch (kind) {
    case XR_HAL_ALLREDUCE: return "allreduce";
    case XR_HAL_ALLGATHER: return "allgather";
    case XR_HAL_REDUCE_SCATTER: return "reduce_scatter";
    case XR_HAL_BROADCAST: return "broadcast";
    case XR_HAL_ALLTOALL: return "alltoall";
    case XR_HAL_BARRIER: return "barrier";
  }
  return "collective";
}

struct xr_hal_collective {
  xr_hal_comm_t *comm;
  xr_hal_collective_params_t p;
  void *send, *recv; /* host addresses: the buffers', or the staging copies' */
  bool in_place;
  /* Buffers without host addresses (opencl) go through host copies of their bytes. */
  bool staged;
  void *staging;
  size_t send_bytes, recv_bytes;
  xr_mpi_handle_t type, op; /* op: NULL for kinds that do not reduce */
  int count;                /* in `type` units */
  char what[96];            /* "allreduce of 1024 bf16" */
};

void xr_hal_collective_elements(xr_hal_collective_kind_t kind, size_t count, int ranks,
                                size_t *out_send, size_t *out_recv) {
  size_t n = ranks > 0 ? (size_t)ranks : 1;
  bool gathers = kind == XR_HAL_ALLGATHER || kind == XR_HAL_ALLTOALL;
  bool scatters = kind == XR_HAL_REDUCE_SCATTER || kind == XR_HAL_ALLTOALL;
  *out_send = kind == XR_HAL_BARRIER ? 0 : scatters ? count * n : count;
  *out_recv = kind == XR_HAL_BARRIER ? 0 : gathers ? count * n : count;
}

/* NCCL's device pointers: the buffers' (a barrier: the comm's scratch). */
static xr_status_t nccl_pointers(xr_hal_collective_t *h) {
  const xr_hal_collective_params_t *p = &h->p;
  bool barrier = p->kind == XR_HAL_BARRIER;
  xr_hal_buffer_t *send = barrier ? h->comm->scratch : p->send;
  xr_hal_buffer_t *recv = barrier ? h->comm->scratch : p->recv;
  void *send_handle, *recv_handle;
  size_t send_offset, recv_offset;
  xr_status_t st = xr_hal_buffer_native(send, &send_handle, &send_offset);
  if (st == XR_OK) st = xr_hal_buffer_native(recv, &recv_handle, &recv_offset);
  if (st != XR_OK) return st;
  h->send = (char *)send_handle + send_offset + (barrier ? 0 : p->send_offset);
  h->recv = (char *)recv_handle + recv_offset + (barrier ? 0 : p->recv_offset);
  return XR_OK;
}

/* The MPI type and sum of a reduced dtype; false when MPI cannot sum it. */
static bool reduction(const xr_hal_comm_t *c, xr_dtype_t d, xr_mpi_handle_t *type,
                      xr_mpi_handle_t *op) {
  *op = mpi.op_sum;
  switch (d) {
    case XR_DTYPE_F32: *type = mpi.type_float; return true;
    case XR_DTYPE_F64: *type = mpi.type_double; return true;
    case XR_DTYPE_I8: *type = mpi.type_int8; return true;
    case XR_DTYPE_I16: *type = mpi.type_int16; return true;
    case XR_DTYPE_I32: *type = mpi.type_int32; return true;
    case XR_DTYPE_I64: *type = mpi.type_int64; return true;
    case XR_DTYPE_U8: *type = mpi.type_uint8; return true;
    case XR_DTYPE_BOOL: *type = mpi.type_bool, *op = mpi.op_lor; return true;
    case XR_DTYPE_BF16: *type = mpi.type_uint16, *op = c->world->op_bf16_sum; return true;
    case XR_DTYPE_F16: *type = mpi.type_uint16, *op = c->world->op_f16_sum; return true;
    default: return false;
  }
}

xr_status_t xr_hal_collective_create(xr_hal_comm_t *c, const xr_hal_collective_params_t *p,
                                     xr_hal_collective_t **out) {
  if (!c || !p || !out)
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_collective_create: NULL argument");
  const char *name = kind_name(p->kind);
  size_t element = xr_dtype_size(p->dtype);
  if (p->kind != XR_HAL_BARRIER && (!element || !p->send || !p->recv))
    return xr_error(XR_INVALID_ARGUMENT, "%s: an unknown dtype or a NULL buffer", name);
  if (p->kind == XR_HAL_BROADCAST && (p->root < 0 || p->root >= c->size))
    return xr_error(XR_INVALID_ARGUMENT, "broadcast: root %d is not one of the %d ranks", p->root,
                    c->size);
  size_t send_elements, recv_elements;
  xr_hal_collective_elements(p->kind, p->count, c->size, &send_elements, &recv_elements);
  xr_hal_collective_t *h = calloc(1, sizeof *h);
  if (!h) return xr_error(XR_RESOURCE_EXHAUSTED, "out of host memory for a collective");
  h->comm = c;
  h->p = *p;
  snprintf(h->what, sizeof h->what, "%s of %zu %s", name, p->count,
           p->kind == XR_HAL_BARRIER ? "" : xr_dtype_short_name(p->dtype));
  xr_status_t st = XR_OK;
  if (p->kind != XR_HAL_BARRIER) {
    const struct {
      xr_hal_buffer_t *buffer;
      size_t offset, elements;
      const char *side;
    } sides[2] = {{p->send, p->send_offset, send_elements, "send"},
                  {p->recv, p->recv_offset, recv_elements, "receive"}};
    for (int k = 0; k < 2 && st == XR_OK; k++) {
      size_t size = xr_hal_buffer_size(sides[k].buffer);
      if (sides[k].offset > size || (size - sides[k].offset) / element < sides[k].elements) {
        st = xr_error(XR_INVALID_ARGUMENT,
                      "%s: the %s buffer holds %zu bytes past offset %zu, "
                      "%zu needed",
                      h->what, sides[k].side,
                      size - (sides[k].offset <= size ? sides[k].offset : size), sides[k].offset,
                      sides[k].elements * element);
        break;
      }
    }
    h->send_bytes = send_elements * element;
    h->recv_bytes = recv_elements * element;
    void *send_base, *recv_base;
    if (st == XR_OK && c->nccl) {
      st = nccl_pointers(h);
    } else if (st == XR_OK && xr_hal_buffer_host_pointer(p->send, &send_base) == XR_OK &&
               xr_hal_buffer_host_pointer(p->recv, &recv_base) == XR_OK) {
      h->send = (char *)send_base + p->send_offset;
      h->recv = (char *)recv_base + p->recv_offset;
    } else if (st == XR_OK) {
      bool in_place = p->send == p->recv && p->send_offset == p->recv_offset;
      size_t bytes = h->send_bytes > h->recv_bytes ? h->send_bytes : h->recv_bytes;
      h->staged = true;
      h->staging = malloc(in_place ? bytes : h->send_bytes + h->recv_bytes + 1);
      if (!h->staging) st = xr_error(XR_RESOURCE_EXHAUSTED, "%s: out of host memory", h->what);
      h->send = h->staging;
      h->recv = in_place ? h->staging : (char *)h->staging + h->send_bytes;
    }
  }
  if (st == XR_OK && c->nccl && p->kind == XR_HAL_BARRIER) st = nccl_pointers(h);
  if (c->nccl) {
    if (st == XR_OK && !xr_nccl_supports(p->kind, p->dtype))
      st = xr_error(XR_UNIMPLEMENTED, "%s: NCCL / RCCL cannot sum %s", h->what,
                    xr_dtype_short_name(p->dtype));
    if (st != XR_OK) {
      xr_hal_collective_destroy(h);
      return st;
    }
    *out = h;
    return XR_OK;
  }
  bool reduces = p->kind == XR_HAL_ALLREDUCE || p->kind == XR_HAL_REDUCE_SCATTER;
  size_t units = p->count;
  if (st == XR_OK && reduces && !reduction(c, p->dtype, &h->type, &h->op))
    st = xr_error(XR_UNIMPLEMENTED, "%s: MPI sums of %s are not implemented", h->what,
                  xr_dtype_short_name(p->dtype));
  if (st == XR_OK && !reduces) h->type = mpi.type_byte, units = p->count * element;
  if (st == XR_OK && units > INT_MAX)
    st = xr_error(XR_UNIMPLEMENTED, "%s: more than 2^31-1 elements per rank in one MPI call",
                  h->what);
  if (st != XR_OK) {
    xr_hal_collective_destroy(h);
    return st;
  }
  h->count = (int)units;
  h->in_place = h->send == h->recv;
  *out = h;
  return XR_OK;
}

void xr_hal_collective_destroy(xr_hal_collective_t *h) {
  if (!h) return;
  free(h->staging);
  free(h);
}

/* On the stream's worker. */
static void run_collective(void *context) {
  xr_hal_collective_t *h = context;
  xr_hal_comm_t *c = h->comm;
  pthread_mutex_lock(&c->world->mutex);
  if (c->world->failure == XR_OK) {
    /* MPI_IN_PLACE: allgather's contribution sits in its slot of the result, reduce_scatter's
     * and alltoall's input is the receive buffer. */
    const void *send = h->in_place ? (const void *)1 : h->send;
    xr_mpi_handle_t request, world = c->handle;
    int started;
    switch (h->p.kind) {
      case XR_HAL_ALLREDUCE:
        started = mpi.MPI_Iallreduce(send, h->recv, h->count, h->type, h->op, world, &request);
        break;
      case XR_HAL_ALLGATHER:
        started = mpi.MPI_Iallgather(send, h->count, h->type, h->recv, h->count, h->type, world,
                                     &request);
        break;
      case XR_HAL_REDUCE_SCATTER:
        started =
            mpi.MPI_Ireduce_scatter_block(send, h->recv, h->count, h->type, h->op, world, &request);
        break;
      case XR_HAL_BROADCAST:
        if (!h->in_place && c->rank == h->p.root)
          memcpy(h->recv, h->send, (size_t)h->count); /* broadcast moves one buffer */
        started = mpi.MPI_Ibcast(h->recv, h->count, h->type, h->p.root, world, &request);
        break;
      case XR_HAL_ALLTOALL:
        started =
            mpi.MPI_Ialltoall(send, h->count, h->type, h->recv, h->count, h->type, world, &request);
        break;
      default: started = mpi.MPI_Ibarrier(world, &request); break;
    }
    wait_request(c, &request, started, h->what);
  }
  pthread_mutex_unlock(&c->world->mutex);
}

xr_status_t xr_hal_stream_collective(xr_hal_stream_t *stream, xr_hal_collective_t *h) {
  if (!stream || !h)
    return xr_error(XR_INVALID_ARGUMENT, "xr_hal_stream_collective: NULL argument");
  if (h->comm->nccl) {
    xr_status_t st = xr_hal_comm_status(h->comm);
    if (st == XR_OK)
      st = xr_nccl_collective(h->comm->nccl, stream, h->p.kind, h->p.dtype, h->p.count, h->send,
                              h->recv, h->p.root);
    return st;
  }
  if (!h->staged) {
    xr_status_t queued = xr_hal_stream_enqueue_host(stream, run_collective, h);
    if (queued != XR_UNIMPLEMENTED) return queued;
    /* A stream without host work (opencl) and nothing to stage (a barrier): here, in order. */
    queued = xr_hal_stream_synchronize(stream);
    if (queued == XR_OK) run_collective(h);
    return queued;
  }
  /* Staged: in stream order, but on this thread — what came before, the bytes to send to the
   * host (in place: the whole receive buffer), the collective, the result back. */
  const xr_hal_collective_params_t *p = &h->p;
  xr_status_t st = xr_hal_stream_synchronize(stream);
  if (st == XR_OK && p->kind != XR_HAL_BARRIER)
    st = xr_hal_buffer_read(
        h->send, p->send, p->send_offset,
        h->in_place && h->recv_bytes > h->send_bytes ? h->recv_bytes : h->send_bytes);
  if (st != XR_OK) return st;
  run_collective(h);
  if (p->kind != XR_HAL_BARRIER && xr_hal_comm_status(h->comm) == XR_OK)
    st = xr_hal_buffer_write(p->recv, p->recv_offset, h->recv, h->recv_bytes);
  return st;
}

void xr_hal_comm_transports(char *report, size_t capacity) {
  if (!report || !capacity) return;
  report[0] = '\0';
  char mpi_report[XR_HAL_REASON_CAPACITY] = "";
  xr_dynload_probe(mpi_library, mpi_report, sizeof mpi_report);
  xr_dynload_report_append(report, capacity, "cpu, opencl: %s", mpi_report);
  xr_nccl_transports(report, capacity);
}
