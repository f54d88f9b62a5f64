/* Sharding a replay: see shard.h. */
#include "replay/shard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay/internal.h"

/* Heaviest first; equal weights in item order. */
typedef struct item {
  uint64_t weight;
  size_t index;
} item_t;

static int heaviest_first(const void *a, const void *b) {
  const item_t *x = a, *y = b;
  if (x->weight != y->weight) return x->weight < y->weight ? 1 : -1;
  return (x->index > y->index) - (x->index < y->index);
}

/* A shard as the partition sees it: the next item goes to the least (load, members, index). */
typedef struct bin {
  uint64_t load;
  size_t members;
  uint32_t index;
} bin_t;

static bool before(const bin_t *a, const bin_t *b) {
  if (a->load != b->load) return a->load < b->load;
  if (a->members != b->members) return a->members < b->members;
  return a->index < b->index;
}

/* Restores the heap's order below `at` after its bin grew. */
static void sift_down(bin_t *heap, size_t n, size_t at) {
  for (;;) {
    size_t least = at, l = 2 * at + 1, r = l + 1;
    if (l < n && before(&heap[l], &heap[least])) least = l;
    if (r < n && before(&heap[r], &heap[least])) least = r;
    if (least == at) return;
    bin_t t = heap[at];
    heap[at] = heap[least];
    heap[least] = t;
    at = least;
  }
}

xr_status_t xr_shard_partition(const uint64_t *weights, size_t count, uint32_t shards,
                               uint32_t *out_shard_of) {
  if (shards == 0) return xr_error(XR_INVALID_ARGUMENT, "shard partition: 0 shards");
  if (count == 0) return XR_OK;
  /* Beyond the count, shards stay empty: the first `count` take one item each, in order. */
  size_t bins = shards < count ? shards : count;
  item_t *items = malloc(count * sizeof *items);
  bin_t *heap = malloc(bins * sizeof *heap);
  if (!items || !heap) {
    free(items);
    free(heap);
    return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory partitioning %zu ops into %u shards",
                    count, shards);
  }
  for (size_t i = 0; i < count; i++) items[i] = (item_t){weights[i], i};
  qsort(items, count, sizeof *items, heaviest_first);
  /* All empty, in index order: already a heap. */
  for (size_t s = 0; s < bins; s++) heap[s] = (bin_t){0, 0, (uint32_t)s};
  for (size_t i = 0; i < count; i++) {
    out_shard_of[items[i].index] = heap[0].index;
    heap[0].load += items[i].weight;
    heap[0].members++;
    sift_down(heap, bins, 0);
  }
  free(items);
  free(heap);
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* --shard=SPEC                                                                                */

/* A whole decimal number in [lo, UINT32_MAX]: digits only, no sign or space. */
static bool parse_u32(const char *s, size_t n, uint32_t lo, uint32_t *out) {
  if (n == 0 || n > 10) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (v < lo || v > UINT32_MAX) return false;
  *out = (uint32_t)v;
  return true;
}

/* The variable as a number: false when unset; INVALID_ARGUMENT in *st when it is not one. */
static bool env_number(xr_shard_env_fn env, void *context, const char *name, uint32_t *out,
                       xr_status_t *st) {
  const char *v = env ? env(name, context) : NULL;
  if (!v) return false;
  if (!parse_u32(v, strlen(v), 0, out)) {
    *st = xr_error(XR_INVALID_ARGUMENT, "--shard=auto: %s=\"%s\" is not a whole number", name, v);
    return false;
  }
  return true;
}

/* Slurm's job array: K and N, or false with *st OK when this is no array task. */
static bool from_slurm(xr_shard_env_fn env, void *context, uint32_t *out_index, uint32_t *out_count,
                       xr_status_t *st) {
  uint32_t id, min = 0, max = 0, count = 0;
  if (!env_number(env, context, "SLURM_ARRAY_TASK_ID", &id, st)) return false;
  bool has_min = env_number(env, context, "SLURM_ARRAY_TASK_MIN", &min, st);
  bool has_max = env_number(env, context, "SLURM_ARRAY_TASK_MAX", &max, st);
  bool has_count = env_number(env, context, "SLURM_ARRAY_TASK_COUNT", &count, st);
  if (*st != XR_OK) return false;
  if (has_min && has_max && max < min) {
    *st = xr_error(XR_INVALID_ARGUMENT,
                   "--shard=auto: SLURM_ARRAY_TASK_MAX=%u is under SLURM_ARRAY_TASK_MIN=%u", max,
                   min);
    return false;
  }
  if (has_min && has_max && has_count && count != (uint64_t)max - min + 1) {
    *st = xr_error(XR_INVALID_ARGUMENT,
                   "--shard=auto: the job array has gaps or a step (SLURM_ARRAY_TASK_COUNT=%u "
                   "tasks from %u to %u): shards need one task for each index, as "
                   "--array=0-%u gives",
                   count, min, max, count ? count - 1 : 0);
    return false;
  }
  if (!has_count && has_min && has_max) {
    count = (uint32_t)((uint64_t)max - min + 1 > UINT32_MAX ? UINT32_MAX : max - min + 1);
    has_count = true;
  }
  if (id < min) {
    *st =
        xr_error(XR_INVALID_ARGUMENT,
                 "--shard=auto: SLURM_ARRAY_TASK_ID=%u is under SLURM_ARRAY_TASK_MIN=%u", id, min);
    return false;
  }
  *out_index = id - min;
  *out_count = has_count ? count : 0; /* 0: the caller must give N */
  return true;
}

xr_status_t xr_shard_parse(const char *spec, xr_shard_env_fn env, void *context,
                           uint32_t *out_index, uint32_t *out_count) {
  const char *slash = spec ? strchr(spec, '/') : NULL;
  uint32_t k = 0, n = 0;
  if (!spec) return xr_error(XR_INVALID_ARGUMENT, "--shard: no value (K/N, auto or auto/N)");
  size_t head = slash ? (size_t)(slash - spec) : strlen(spec);
  bool automatic = head == 4 && !strncmp(spec, "auto", 4);
  if (slash && !parse_u32(slash + 1, strlen(slash + 1), 1, &n))
    return xr_error(XR_INVALID_ARGUMENT,
                    "--shard=%s: the shard count after '/' must be a whole number of at least 1",
                    spec);
  if (!automatic) {
    if (!slash || !parse_u32(spec, head, 0, &k))
      return xr_error(XR_INVALID_ARGUMENT,
                      "--shard=%s: not K/N (shard K of N, from 0), auto or auto/N", spec);
  } else {
    xr_status_t st = XR_OK;
    uint32_t slurm_count = 0;
    if (from_slurm(env, context, &k, &slurm_count, &st)) {
      if (slash && slurm_count && slurm_count != n)
        return xr_error(XR_INVALID_ARGUMENT, "--shard=%s: the Slurm job array has %u tasks, not %u",
                        spec, slurm_count, n);
      if (!slash && !slurm_count)
        return xr_error(XR_INVALID_ARGUMENT,
                        "--shard=auto: SLURM_ARRAY_TASK_ID is set but neither "
                        "SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MIN and _MAX: give the "
                        "count, --shard=auto/N");
      if (!slash) n = slurm_count;
    } else if (st != XR_OK) {
      return st;
    } else if (env && env("JOB_COMPLETION_INDEX", context)) {
      const char *v = env("JOB_COMPLETION_INDEX", context);
      if (!parse_u32(v, strlen(v), 0, &k))
        return xr_error(XR_INVALID_ARGUMENT,
                        "--shard=%s: JOB_COMPLETION_INDEX=\"%s\" is not a whole number", spec, v);
      if (!slash)
        return xr_error(XR_INVALID_ARGUMENT,
                        "--shard=auto: JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) gives "
                        "the shard but not the count: --shard=auto/N, N the Job's completions");
    } else {
      return xr_error(XR_INVALID_ARGUMENT,
                      "--shard=%s: neither SLURM_ARRAY_TASK_ID (a Slurm job array) nor "
                      "JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) is set",
                      spec);
    }
  }
  if (k >= n)
    return xr_error(XR_INVALID_ARGUMENT, "--shard=%s: shard %u of %u: shards count from 0 to %u",
                    spec, k, n, n - 1);
  *out_index = k;
  *out_count = n;
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* a bundle's shard                                                                            */

/* The op's per-call recorded time in whole nanoseconds; false when the trace has none. */
static bool recorded_ns(const xr_op_t *op, uint64_t *out) {
  if (!op->timing || !(op->timing->gpu_time_us >= 0) || !isfinite(op->timing->gpu_time_us))
    return false;
  double ns = op->timing->gpu_time_us / (double)(op->count > 0 ? op->count : 1) * 1000.0;
  const double most = (double)(UINT64_C(1) << 40); /* 18 minutes: the sums cannot overflow */
  *out = ns < most ? (uint64_t)llround(ns) : (uint64_t)most;
  return true;
}

static int ascending(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

xr_status_t xr_shard_create(const xr_bundle_t *bundle, const xr_replay_options_t *o, uint32_t index,
                            uint32_t count, xr_shard_t **out_shard) {
  *out_shard = NULL;
  if (count == 0 || index >= count)
    return xr_error(XR_INVALID_ARGUMENT, "shard %u of %u: shards count from 0 to N - 1", index,
                    count);
  size_t n = bundle->op_count;
  xr_shard_t *s = calloc(1, sizeof *s);
  size_t *selected = malloc((n ? n : 1) * sizeof *selected);
  uint64_t *weights = malloc((n ? n : 1) * sizeof *weights);
  uint64_t *known = malloc((n ? n : 1) * sizeof *known);
  uint32_t *shard_of = malloc((n ? n : 1) * sizeof *shard_of);
  bool *timed = malloc((n ? n : 1) * sizeof *timed);
  xr_status_t st = XR_OK;
  if (!s || !selected || !weights || !known || !shard_of || !timed) {
    st = xr_error(XR_RESOURCE_EXHAUSTED, "out of memory sharding %zu ops", n);
    goto done;
  }
  s->index = index;
  s->count = count;
  s->bundle_hash = xr_bundle_hash(bundle);
  /* The ops a run attempts: the filter's, then the limit. */
  size_t m = 0, timed_count = 0;
  for (size_t i = 0; i < n; i++) {
    if (!xr_op_passes_filter(o, &bundle->ops[i])) continue;
    if (o->op_limit >= 0 && m >= (size_t)o->op_limit) break;
    timed[m] = recorded_ns(&bundle->ops[i], &weights[m]);
    if (timed[m]) known[timed_count++] = weights[m];
    selected[m++] = i;
  }
  s->selected = m;
  s->by_time = timed_count > 0;
  uint64_t fill = 1;
  if (timed_count) {
    qsort(known, timed_count, sizeof *known, ascending);
    size_t mid = timed_count / 2; /* weights are under 2^40: the sum cannot overflow */
    fill = timed_count % 2 ? known[mid] : (known[mid - 1] + known[mid]) / 2;
  }
  for (size_t k = 0; k < m; k++)
    if (!timed[k]) weights[k] = fill;
  st = xr_shard_partition(weights, m, count, shard_of);
  if (st != XR_OK) goto done;
  for (size_t k = 0; k < m; k++) {
    s->total += weights[k];
    if (shard_of[k] != index) continue;
    s->load += weights[k];
    selected[s->op_count++] = selected[k]; /* in place: the shard's are a subsequence */
  }
  s->ops = selected;
  selected = NULL;
done:
  free(selected);
  free(weights);
  free(known);
  free(shard_of);
  free(timed);
  if (st != XR_OK) {
    free(s);
    return st;
  }
  *out_shard = s;
  return XR_OK;
}

void xr_shard_destroy(xr_shard_t *shard) {
  if (!shard) return;
  free(shard->ops);
  free(shard);
}

bool xr_shard_contains(const xr_shard_t *s, size_t op_index) {
  size_t lo = 0, hi = s->op_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->ops[mid] == op_index) return true;
    if (s->ops[mid] < op_index)
      lo = mid + 1;
    else
      hi = mid;
  }
  return false;
}
