/* Sharding a replay over many machines: the ops a run would attempt (after --op-filter and
 * --op-limit) split into N shards of about equal recorded GPU time, so that N machines (a Slurm
 * job array, a Kubernetes Indexed Job) each replay one shard and `replay merge` puts their
 * reports back together (docs/fleet.md).
 *
 * The partition is a longest-processing-time one: ops sorted by weight, heaviest first (equal
 * weights in bundle order), each given to the shard with the least weight so far (ties: the one
 * with fewest ops, then the lowest index). Weights are whole nanoseconds, so that the sums, and
 * with them the partition, are the same on every machine. An op weighs its per-call GPU time in
 * the source trace (the op's total over its count, as reports' trace_us); an op without one, the
 * median of the others' when some have one; when none has, every op weighs 1 (balanced by
 * count). The makespan is within 4/3 - 1/(3N) of the best possible.
 *
 * Pure: no I/O (the environment is read through the caller's function). Thread-safety: none
 * needed, nothing global. */
#ifndef XR_REPLAY_SHARD_H
#define XR_REPLAY_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "formats/model.h"
#include "replay/replay.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Shard `index` of `count` of a bundle: what xr_replay_options_t.shard points to. */
typedef struct xr_shard {
  uint32_t index, count; /* 0 <= index < count */
  size_t selected;       /* ops the partition was made of: those a run would attempt */
  size_t op_count;       /* of them, this shard's */
  size_t *ops;           /* their positions in the bundle, ascending */
  bool by_time;          /* weighed by recorded GPU time (else by count) */
  uint64_t load, total;  /* the weight of this shard's ops, and of all `selected` (ns or ops) */
  uint64_t bundle_hash;  /* xr_bundle_hash of the bundle partitioned */
} xr_shard_t;

/* Longest-processing-time partition of `count` items of `weights` over `shards` shards (see
 * above): out_shard_of[i] is item i's shard. Items may be fewer than shards (some shards are
 * then empty). INVALID_ARGUMENT for 0 shards; RESOURCE_EXHAUSTED when out of memory. */
xr_status_t xr_shard_partition(const uint64_t *weights, size_t count, uint32_t shards,
                               uint32_t *out_shard_of);

/* What an environment variable holds, or NULL when unset (getenv, through a wrapper). */
typedef const char *(*xr_shard_env_fn)(const char *name, void *context);

/* --shard=SPEC: which shard this machine replays.
 *   "K/N"     shard K of N (0 <= K < N)
 *   "auto"    from a Slurm job array: K = SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN (MIN absent:
 *             0), N = SLURM_ARRAY_TASK_COUNT, or MAX - MIN + 1 without COUNT
 *   "auto/N"  N given, K from the environment: Slurm's as above, else JOB_COMPLETION_INDEX (a
 *             Kubernetes Indexed Job, whose completions count the environment does not hold)
 * INVALID_ARGUMENT with the sentence naming the option or the variable: malformed, K outside
 * [0, N), an array with gaps or steps (COUNT != MAX - MIN + 1), a Slurm count other than the N
 * given, no variable set. */
xr_status_t xr_shard_parse(const char *spec, xr_shard_env_fn env, void *context,
                           uint32_t *out_index, uint32_t *out_count);

/* Shard `index` of `count` of the ops `options` selects in `bundle` (its op_filter and op_limit;
 * options->shard is ignored). Free with xr_shard_destroy. */
xr_status_t xr_shard_create(const xr_bundle_t *bundle, const xr_replay_options_t *options,
                            uint32_t index, uint32_t count, xr_shard_t **out_shard);
void xr_shard_destroy(xr_shard_t *shard); /* accepts NULL */

/* Whether the op at position `op_index` of the bundle is in the shard. */
bool xr_shard_contains(const xr_shard_t *shard, size_t op_index);

#ifdef __cplusplus
}
#endif
#endif /* XR_REPLAY_SHARD_H */
