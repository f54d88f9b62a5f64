/* Tensor initialisation: the seeded default policies, poisoned outputs, and the initializers
 * callers register over the families' own (xr_replay_register_initializer). */
#include "replay/internal.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/dtype.h"
#include "kernels/initializer.h"

uint64_t xr_seed_for(uint64_t seed, size_t op_index, size_t tensor_index) {
  uint64_t s = seed ^ (0x632be59bd9b4e019ull * (op_index + 1)) ^ (0x8cb92ba72f3d8dd7ull * (tensor_index + 1));
  xr_rng_next(&s);
  return s;
}

void xr_poison(void *host, xr_dtype_t dtype, size_t bytes) {
  size_t n = bytes / xr_dtype_size(dtype);
  switch (dtype) {
    case XR_DTYPE_F32:
      for (size_t i = 0; i < n; i++) ((float *)host)[i] = NAN;
      break;
    case XR_DTYPE_F64:
      for (size_t i = 0; i < n; i++) ((double *)host)[i] = NAN;
      break;
    case XR_DTYPE_F16:
    case XR_DTYPE_BF16: {
      uint16_t nan = dtype == XR_DTYPE_F16 ? 0x7e00 : 0x7fc0;
      for (size_t i = 0; i < n; i++) ((uint16_t *)host)[i] = nan;
      break;
    }
    case XR_DTYPE_F8E4M3FNUZ:
    case XR_DTYPE_F8E5M2FNUZ: memset(host, 0x80, bytes); break;
    case XR_DTYPE_F8E4M3FN:
    case XR_DTYPE_F8E5M2: memset(host, 0x7f, bytes); break;
    default: memset(host, 0xff, bytes); break; /* integers: -1 */
  }
}

const char *xr_fill_policy(const xr_tensor_spec_t *t, bool written) {
  /* e8m0 scales: powers of two near 1 (N(0, 1) rounded in log2); fp4 pairs: any two codes */
  bool floating = xr_dtype_is_floating(t->dtype) || t->dtype == XR_DTYPE_F8E8M0;
  if (t->dtype == XR_DTYPE_F4E2M1X2 && t->init != XR_INIT_NONE && t->init != XR_INIT_ZEROS)
    return "bytes";
  switch (t->init) {
    case XR_INIT_NONE: return "poison";
    case XR_INIT_ZEROS: return "zeros";
    case XR_INIT_ONES: return "ones";
    case XR_INIT_UNIFORM: return floating ? "uniform" : "uniform-int";
    case XR_INIT_NORMAL: return floating ? "normal" : "uniform-int";
    case XR_INIT_UNSET: break;
  }
  /* An output-only argument ("Tensor(a!)" with no init) is still given data: in-place ops
   * read it. Floats get N(0, 1); integers small non-negative values; bools 0/1. */
  (void)written;
  return floating ? "normal" : t->dtype == XR_DTYPE_BOOL ? "bool" : "uniform-int";
}

typedef enum fill_kind {
  FILL_ZEROS,
  FILL_ONES,
  FILL_NORMAL,
  FILL_UNIFORM,
  FILL_BOOL,
  FILL_SMALL_INT,
  FILL_BYTES,
} fill_kind_t;

typedef struct fill_job {
  void *host;
  xr_dtype_t dtype;
  fill_kind_t kind;
  uint64_t seed;
  size_t begin, end;
} fill_job_t;

enum { FILL_BLOCK = 256, FILL_PER_THREAD = 1 << 20, FILL_MAX_THREADS = 16 };

/* Approximately N(0, 1) from one draw: the sum of its four 16-bit quarters as uniforms on
 * (0, 1), centred and scaled to unit variance (Irwin-Hall, n = 4: within ±2√3, its density
 * within 0.01 of the normal's). Integer arithmetic up to one multiply, so every machine gets
 * the same bits, and ten times faster than Box-Muller's log and cos, which dominated filling
 * the gigabytes of a model's weights. */
static double normal_from(uint64_t x) {
  uint64_t sum = (x & 0xffff) + (x >> 16 & 0xffff) + (x >> 32 & 0xffff) + (x >> 48);
  /* (sum + 4 * 0.5) / 65536 - 2, times sqrt(3) */
  return ((double)sum + 2.0 - 131072.0) * (1.7320508075688772 / 65536.0);
}

/* Elements [begin, end). splitmix64 advances its state by one constant per draw, and every
 * element takes one draw, so element i's starts from seed + i * constant: any range comes out
 * exactly as in one sequential pass. */
static void *fill_range(void *arg) {
  const fill_job_t *j = arg;
  uint64_t s = j->seed + (uint64_t)j->begin * 0x9e3779b97f4a7c15ull;
  double v[FILL_BLOCK];
  for (size_t i = j->begin; i < j->end; i += FILL_BLOCK) {
    size_t m = j->end - i < FILL_BLOCK ? j->end - i : FILL_BLOCK;
    for (size_t k = 0; k < m; k++) {
      switch (j->kind) {
        case FILL_ZEROS: v[k] = 0; break;
        case FILL_ONES: v[k] = 1; break;
        case FILL_NORMAL: v[k] = normal_from(xr_rng_next(&s)); break;
        case FILL_UNIFORM: v[k] = 2.0 * xr_rng_uniform(&s) - 1.0; break;
        case FILL_BOOL: v[k] = (double)(xr_rng_next(&s) & 1); break;
        case FILL_SMALL_INT: v[k] = (double)(xr_rng_next(&s) % 16); break; /* valid as most indices */
        case FILL_BYTES: v[k] = (double)(xr_rng_next(&s) & 0xff); break;
      }
    }
    /* the common dtypes without xr_store_element's per-element switch (same conversions) */
    if (j->dtype == XR_DTYPE_F32) {
      for (size_t k = 0; k < m; k++) ((float *)j->host)[i + k] = (float)v[k];
    } else if (j->dtype == XR_DTYPE_BF16) {
      for (size_t k = 0; k < m; k++) ((uint16_t *)j->host)[i + k] = xr_f32_to_bf16((float)v[k]);
    } else {
      for (size_t k = 0; k < m; k++) xr_store_element(j->host, j->dtype, (int64_t)(i + k), v[k]);
    }
  }
  return NULL;
}

void xr_fill(void *host, const xr_tensor_spec_t *t, size_t bytes, uint64_t seed) {
  const char *policy = xr_fill_policy(t, false);
  size_t n = bytes / xr_dtype_size(t->dtype);
  if (!strcmp(policy, "poison")) {
    xr_poison(host, t->dtype, bytes);
    return;
  }
  fill_kind_t kind = !strcmp(policy, "zeros")     ? FILL_ZEROS
                     : !strcmp(policy, "ones")    ? FILL_ONES
                     : !strcmp(policy, "normal")  ? FILL_NORMAL
                     : !strcmp(policy, "uniform") ? FILL_UNIFORM
                     : !strcmp(policy, "bool")    ? FILL_BOOL
                     : !strcmp(policy, "bytes")   ? FILL_BYTES
                                                  : FILL_SMALL_INT;
  /* Large tensors (expert weights: hundreds of millions of elements) on every core. */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t threads = n / FILL_PER_THREAD;
  if (threads > (size_t)(cores > 0 ? cores : 1)) threads = (size_t)(cores > 0 ? cores : 1);
  if (threads > FILL_MAX_THREADS) threads = FILL_MAX_THREADS;
  if (threads < 1) threads = 1;
  fill_job_t jobs[FILL_MAX_THREADS];
  pthread_t ids[FILL_MAX_THREADS];
  bool started[FILL_MAX_THREADS] = {false};
  for (size_t k = 0; k < threads; k++) {
    jobs[k] = (fill_job_t){host, t->dtype, kind, seed, n * k / threads, n * (k + 1) / threads};
    /* the last range on this thread; one that cannot start a thread runs here too */
    if (k + 1 < threads) started[k] = pthread_create(&ids[k], NULL, fill_range, &jobs[k]) == 0;
    if (!started[k]) fill_range(&jobs[k]);
  }
  for (size_t k = 0; k < threads; k++)
    if (started[k]) pthread_join(ids[k], NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* custom initializer registry                                                                 */

typedef struct init_entry {
  char *op_name;
  xr_initializer_fn fn;
} init_entry_t;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static init_entry_t *registry;
static size_t registry_count;
xr_status_t xr_replay_register_initializer(const char *op_name, xr_initializer_fn fn) {
  if (!op_name || !fn) return xr_error(XR_INVALID_ARGUMENT, "initializer: NULL op name or function");
  pthread_mutex_lock(&registry_lock);
  xr_status_t st = XR_OK;
  size_t i = 0;
  for (; i < registry_count && strcmp(registry[i].op_name, op_name); i++) {
  }
  if (i < registry_count) {
    registry[i].fn = fn; /* later registrations override */
  } else {
    init_entry_t *grown = realloc(registry, (registry_count + 1) * sizeof *grown);
    char *name = strdup(op_name);
    if (!grown || !name) {
      if (grown) registry = grown;
      free(name);
      st = xr_error(XR_RESOURCE_EXHAUSTED, "out of memory registering an initializer");
    } else {
      registry = grown;
      registry[registry_count++] = (init_entry_t){name, fn};
    }
  }
  pthread_mutex_unlock(&registry_lock);
  return st;
}

xr_initializer_fn xr_find_initializer(const xr_op_plan_t *plan) {
  pthread_mutex_lock(&registry_lock);
  xr_initializer_fn fn = NULL;
  for (size_t i = 0; i < registry_count; i++)
    if (!strcmp(registry[i].op_name, plan->op->name)) fn = registry[i].fn;
  pthread_mutex_unlock(&registry_lock);
  return fn ? fn : xr_kernel_initializer(plan);
}
