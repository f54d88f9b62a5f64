/* Sharding (replay/shard.h): the longest-processing-time partition (every op once, its balance
 * against the best partition found by exhaustive search, determinism, more shards than ops, one
 * shard), the weights a bundle's recorded times give, --shard's syntax and environment, and the
 * engine replaying exactly a shard's ops. */
#include "replay/shard.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/bundle.h"
#include "replay/replay.h"

/* ------------------------------------------------------------------------------------------ */
/* the partition                                                                               */

static uint64_t lcg(uint64_t *state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return *state >> 33;
}

/* The largest shard's weight. */
static uint64_t makespan(const uint64_t *w, const uint32_t *shard_of, size_t n, uint32_t shards) {
  uint64_t load[64] = {0}, most = 0;
  cr_assert_leq(shards, 64);
  for (size_t i = 0; i < n; i++) {
    cr_assert_lt(shard_of[i], shards, "item %zu in shard %u of %u", i, shard_of[i], shards);
    load[shard_of[i]] += w[i];
  }
  for (uint32_t s = 0; s < shards; s++)
    if (load[s] > most) most = load[s];
  return most;
}

/* The best makespan, by trying every assignment (n small). */
static uint64_t optimum(const uint64_t *w, size_t n, uint32_t shards) {
  uint32_t a[16] = {0};
  uint64_t best = UINT64_MAX;
  for (;;) {
    uint64_t m = makespan(w, a, n, shards);
    if (m < best) best = m;
    size_t i = 0;
    while (i < n && ++a[i] == shards) a[i++] = 0;
    if (i == n) return best;
  }
}

Test(shard, every_item_goes_to_exactly_one_shard) {
  uint64_t state = 7, w[500];
  uint32_t shard_of[500];
  for (size_t i = 0; i < 500; i++) w[i] = lcg(&state) % 100000;
  for (uint32_t shards = 1; shards <= 64; shards = shards * 2 + 1) {
    memset(shard_of, 0xff, sizeof shard_of);
    cr_assert_eq(xr_shard_partition(w, 500, shards, shard_of), XR_OK, "%s", xr_last_error());
    size_t members[64] = {0};
    for (size_t i = 0; i < 500; i++) {
      cr_assert_lt(shard_of[i], shards, "item %zu has no shard of %u", i, shards);
      members[shard_of[i]]++;
    }
    size_t sum = 0;
    for (uint32_t s = 0; s < shards; s++) sum += members[s];
    cr_assert_eq(sum, 500);
    /* Graham's bound for any greedy list schedule: under the mean load plus the largest item. */
    uint64_t total = 0, largest = 0;
    for (size_t i = 0; i < 500; i++) {
      total += w[i];
      if (w[i] > largest) largest = w[i];
    }
    cr_assert_leq(makespan(w, shard_of, 500, shards), total / shards + largest);
  }
}

Test(shard, within_the_lpt_bound_of_the_best_partition) {
  uint64_t state = 12345;
  for (int round = 0; round < 60; round++) {
    size_t n = 4 + (size_t)(lcg(&state) % 6); /* 4..9 items */
    uint32_t shards = 2 + (uint32_t)(lcg(&state) % 2);
    uint64_t w[16];
    uint32_t shard_of[16];
    for (size_t i = 0; i < n; i++) w[i] = 1 + lcg(&state) % (round % 2 ? 10 : 1000);
    cr_assert_eq(xr_shard_partition(w, n, shards, shard_of), XR_OK);
    double lpt = (double)makespan(w, shard_of, n, shards), best = (double)optimum(w, n, shards);
    cr_assert_leq(lpt, (4.0 / 3 - 1.0 / (3 * shards)) * best + 1e-9,
                  "round %d: %zu items on %u shards: makespan %.0f, best %.0f", round, n, shards,
                  lpt, best);
  }
}

Test(shard, lpt_on_its_worst_case) {
  /* Graham's instance: the best is {5,4} {5,4} {3,3,3} = 9; LPT puts the three 3s on three
   * shards that already hold 5, 5 and 4+4, making 11 = (4/3 - 1/9) * 9. A schedule that did not
   * place the heaviest first (in the given order, say) would differ. */
  uint64_t w[] = {3, 3, 3, 4, 4, 5, 5};
  uint32_t shard_of[7];
  cr_assert_eq(xr_shard_partition(w, 7, 3, shard_of), XR_OK);
  cr_assert_eq(makespan(w, shard_of, 7, 3), 11);
  cr_assert_eq(optimum(w, 7, 3), 9);
  /* Heaviest first, each to the least loaded shard: 5 -> 0, 5 -> 1, 4 -> 2, 4 -> 2, 3 -> 0,
   * 3 -> 1; then all hold 8 in two items each, and the last 3 goes to the lowest index. */
  cr_assert_eq(shard_of[5], 0);
  cr_assert_eq(shard_of[6], 1);
  cr_assert_eq(shard_of[3], 2);
  cr_assert_eq(shard_of[4], 2);
  cr_assert_eq(shard_of[0], 0);
  cr_assert_eq(shard_of[1], 1);
  cr_assert_eq(shard_of[2], 0);
}

Test(shard, the_same_input_gives_the_same_partition) {
  uint64_t state = 99, w[300];
  for (size_t i = 0; i < 300; i++) w[i] = lcg(&state) % 8; /* many ties */
  uint32_t a[300], b[300], other[300];
  cr_assert_eq(xr_shard_partition(w, 300, 7, a), XR_OK);
  uint64_t noise[300];
  for (size_t i = 0; i < 300; i++) noise[i] = lcg(&state);
  cr_assert_eq(xr_shard_partition(noise, 300, 5, other), XR_OK);
  cr_assert_eq(xr_shard_partition(w, 300, 7, b), XR_OK);
  cr_assert_arr_eq(a, b, sizeof a);
  /* Equal weights go in item order, spread by count: 0, 1, ..., 6, 0, 1, ... */
  uint64_t ones[20];
  for (size_t i = 0; i < 20; i++) ones[i] = 1;
  cr_assert_eq(xr_shard_partition(ones, 20, 7, a), XR_OK);
  for (size_t i = 0; i < 20; i++) cr_assert_eq(a[i], i % 7, "item %zu in shard %u", i, a[i]);
}

/* The rule written as plainly as it reads: each item, heaviest first (ties in item order), to
 * the shard of least load, then fewest items, then lowest index. */
static void plain_lpt(const uint64_t *w, size_t n, uint32_t shards, uint32_t *out) {
  uint64_t load[64] = {0};
  size_t members[64] = {0};
  bool placed[600] = {false};
  for (size_t k = 0; k < n; k++) {
    size_t next = SIZE_MAX;
    for (size_t i = 0; i < n; i++)
      if (!placed[i] && (next == SIZE_MAX || w[i] > w[next])) next = i;
    placed[next] = true;
    uint32_t best = 0;
    for (uint32_t s = 1; s < shards; s++)
      if (load[s] < load[best] || (load[s] == load[best] && members[s] < members[best])) best = s;
    out[next] = best;
    load[best] += w[next];
    members[best]++;
  }
}

Test(shard, the_partition_is_the_rule_as_written) {
  uint64_t state = 4242, w[600];
  uint32_t a[600], b[600];
  for (int round = 0; round < 40; round++) {
    size_t n = 1 + (size_t)(lcg(&state) % 600);
    uint32_t shards = 1 + (uint32_t)(lcg(&state) % 64);
    uint64_t range = round % 3 == 0 ? 3 : round % 3 == 1 ? 1000 : 1000000000;
    for (size_t i = 0; i < n; i++) w[i] = lcg(&state) % range;
    cr_assert_eq(xr_shard_partition(w, n, shards, a), XR_OK);
    plain_lpt(w, n, shards, b);
    cr_assert_arr_eq(a, b, n * sizeof a[0], "round %d: %zu items on %u shards", round, n, shards);
  }
}

Test(shard, a_million_shards_of_a_few_ops) {
  uint64_t w[1000];
  uint32_t shard_of[1000];
  for (size_t i = 0; i < 1000; i++) w[i] = i % 7;
  cr_assert_eq(xr_shard_partition(w, 1000, 1000000, shard_of), XR_OK);
  bool used[1000] = {false};
  for (size_t i = 0; i < 1000; i++) {
    cr_assert_lt(shard_of[i], 1000, "the heaviest 1000 ops take shards 0..999, one each");
    cr_assert(!used[shard_of[i]]);
    used[shard_of[i]] = true;
  }
}

Test(shard, zero_weights_spread_by_count) {
  uint64_t w[9] = {0};
  uint32_t shard_of[9];
  size_t members[3] = {0};
  cr_assert_eq(xr_shard_partition(w, 9, 3, shard_of), XR_OK);
  for (size_t i = 0; i < 9; i++) members[shard_of[i]]++;
  for (int s = 0; s < 3; s++) cr_assert_eq(members[s], 3, "shard %d holds %zu", s, members[s]);
}

Test(shard, more_shards_than_items_and_one_shard) {
  uint64_t w[] = {10, 30, 20};
  uint32_t shard_of[3];
  cr_assert_eq(xr_shard_partition(w, 3, 8, shard_of), XR_OK);
  cr_assert_eq(shard_of[1], 0); /* heaviest first */
  cr_assert_eq(shard_of[2], 1);
  cr_assert_eq(shard_of[0], 2);
  cr_assert_eq(xr_shard_partition(w, 3, 1, shard_of), XR_OK);
  for (int i = 0; i < 3; i++) cr_assert_eq(shard_of[i], 0);
  cr_assert_eq(xr_shard_partition(w, 0, 4, shard_of), XR_OK);
  cr_assert_eq(xr_shard_partition(w, 3, 0, shard_of), XR_INVALID_ARGUMENT);
}

/* ------------------------------------------------------------------------------------------ */
/* a bundle's shards                                                                           */

#define MM(m, k, n, timing)                                \
  "{\"name\": \"aten::mm\", " timing                       \
  "\"args\": [{\"name\": \"self\", \"type\": \"Tensor\", " \
  "\"value\": {\"shape\": [" #m ", " #k                    \
  "], \"dtype\": \"float\"}}, {\"name\": \"mat2\", "       \
  "\"type\": \"Tensor\", \"value\": {\"shape\": [" #k ", " #n "], \"dtype\": \"float\"}}]}"
#define ADD(n)                                                                                  \
  "{\"name\": \"aten::add\", \"args\": [{\"name\": \"self\", \"type\": \"Tensor\", \"value\": " \
  "{\"shape\": [" #n                                                                            \
  "], \"dtype\": \"float\"}}, {\"name\": \"other\", \"type\": \"Tensor\", "                     \
  "\"value\": {\"shape\": [" #n "], \"dtype\": \"float\"}}]}"

static xr_bundle_t *bundle(const char *ops) {
  char text[16384];
  snprintf(text, sizeof text, "{\"format\": \"xreplay-bundle\", \"ops\": [%s]}", ops);
  xr_bundle_t *b;
  cr_assert_eq(xr_bundle_decode((uint8_t *)text, strlen(text), "t.json", ".", NULL, &b), XR_OK,
               "%s", xr_last_error());
  return b;
}

/* All N shards of the bundle: each op the options select in exactly one, none other. */
static void check_cover(const xr_bundle_t *b, const xr_replay_options_t *o, uint32_t n,
                        size_t expect_selected) {
  int *owner = calloc(b->op_count + 1, sizeof *owner);
  for (size_t i = 0; i < b->op_count; i++) owner[i] = -1;
  size_t sum = 0;
  for (uint32_t k = 0; k < n; k++) {
    xr_shard_t *s;
    cr_assert_eq(xr_shard_create(b, o, k, n, &s), XR_OK, "%s", xr_last_error());
    cr_assert_eq(s->selected, expect_selected);
    cr_assert_eq(s->bundle_hash, xr_bundle_hash(b));
    for (size_t j = 0; j < s->op_count; j++) {
      cr_assert(j == 0 || s->ops[j] > s->ops[j - 1], "shard %u's ops ascend", k);
      cr_assert_lt(s->ops[j], b->op_count);
      cr_assert_eq(owner[s->ops[j]], -1, "op %zu in shards %d and %u", s->ops[j], owner[s->ops[j]],
                   k);
      owner[s->ops[j]] = (int)k;
      cr_assert(xr_shard_contains(s, s->ops[j]));
    }
    sum += s->op_count;
    xr_shard_destroy(s);
  }
  cr_assert_eq(sum, expect_selected);
  free(owner);
}

Test(shard, ops_weigh_their_recorded_per_call_time) {
  /* Per call: 500, 100, 100, 100, 100 us (the first is 1000 over 2 calls), and one op with no
   * time, which weighs the median of the others (100). Two shards: {op 0} and the rest. */
  xr_bundle_t *b = bundle(MM(4, 4, 4, "\"count\": 2, \"timing\": {\"gpu_time_us\": 1000}, ") ","
                          MM(4, 4, 4, "\"timing\": {\"gpu_time_us\": 100}, ") ","
                          MM(4, 4, 4, "\"timing\": {\"gpu_time_us\": 100}, ") ","
                          MM(4, 4, 4, "") ","
                          MM(4, 4, 4, "\"timing\": {\"gpu_time_us\": 100}, ") ","
                          MM(4, 4, 4, "\"timing\": {\"gpu_time_us\": 100}, "));
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  xr_shard_t *s0, *s1;
  cr_assert_eq(xr_shard_create(b, &o, 0, 2, &s0), XR_OK, "%s", xr_last_error());
  cr_assert_eq(xr_shard_create(b, &o, 1, 2, &s1), XR_OK);
  cr_assert(s0->by_time);
  cr_assert_eq(s0->total, 1000000, "ns: 500 + 5 x 100 us");
  cr_assert_eq(s0->op_count, 1);
  cr_assert_eq(s0->ops[0], 0);
  cr_assert_eq(s0->load, 500000);
  cr_assert_eq(s1->op_count, 5);
  cr_assert_eq(s1->load, 500000);
  xr_shard_destroy(s0);
  xr_shard_destroy(s1);
  check_cover(b, &o, 3, 6);
  check_cover(b, &o, 10, 6); /* more shards than ops */
  check_cover(b, &o, 1, 6);
  xr_bundle_destroy(b);
}

Test(shard, without_recorded_times_ops_are_balanced_by_count) {
  xr_bundle_t *b = bundle(
      ADD(4) "," ADD(4) "," MM(4, 4, 4, "") "," ADD(4) "," MM(4, 4, 4, "") "," ADD(4) "," ADD(4));
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  for (uint32_t k = 0; k < 3; k++) {
    xr_shard_t *s;
    cr_assert_eq(xr_shard_create(b, &o, k, 3, &s), XR_OK);
    cr_assert(!s->by_time);
    cr_assert_eq(s->total, 7);
    cr_assert_eq(s->op_count, k == 0 ? 3 : 2, "shard %u holds %zu ops", k, s->op_count);
    cr_assert_eq(s->load, s->op_count);
    xr_shard_destroy(s);
  }
  /* --op-filter and --op-limit choose what is partitioned. */
  o.op_filter = "add";
  check_cover(b, &o, 2, 5);
  o.op_limit = 3;
  check_cover(b, &o, 2, 3);
  xr_shard_t *s;
  cr_assert_eq(xr_shard_create(b, &o, 1, 2, &s), XR_OK);
  for (size_t j = 0; j < s->op_count; j++) cr_assert_str_eq(b->ops[s->ops[j]].name, "aten::add");
  xr_shard_destroy(s);
  cr_assert_eq(xr_shard_create(b, &o, 2, 2, &s), XR_INVALID_ARGUMENT);
  cr_assert_null(s);
  xr_bundle_destroy(b);
}

/* ------------------------------------------------------------------------------------------ */
/* --shard=SPEC                                                                                */

/* A fake environment: "NAME=value" entries. */
static const char *fake_env(const char *name, void *context) {
  for (const char *const *e = context; *e; e++) {
    size_t n = strlen(name);
    if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
  }
  return NULL;
}

static xr_status_t parse(const char *spec, const char *const *env, uint32_t *k, uint32_t *n) {
  *k = *n = 12345;
  return xr_shard_parse(spec, fake_env, (void *)env, k, n);
}

Test(shard, explicit_shards) {
  const char *none[] = {NULL};
  uint32_t k, n;
  cr_assert_eq(parse("0/1", none, &k, &n), XR_OK);
  cr_assert(k == 0 && n == 1);
  cr_assert_eq(parse("2/3", none, &k, &n), XR_OK);
  cr_assert(k == 2 && n == 3);
  const char *bad[] = {"3/3",  "1/0", "-1/2", "a/b",           "1",     "1/2/3", "", " 1/2",
                       "1/ 2", "/2",  "1/",   "99999999999/2", "0x1/2", NULL};
  for (const char *const *b = bad; *b; b++) {
    cr_assert_eq(parse(*b, none, &k, &n), XR_INVALID_ARGUMENT, "--shard=%s accepted", *b);
    cr_assert(strstr(xr_last_error(), "--shard="), "%s: %s", *b, xr_last_error());
    cr_assert_eq(k, 12345, "--shard=%s: outputs untouched on error", *b);
  }
  cr_assert(
      parse("3/3", none, &k, &n) == XR_INVALID_ARGUMENT && strstr(xr_last_error(), "from 0 to 2"),
      "%s", xr_last_error());
}

Test(shard, slurm_job_arrays) {
  uint32_t k, n;
  const char *array[] = {"SLURM_ARRAY_TASK_ID=2", "SLURM_ARRAY_TASK_COUNT=4",
                         "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_MAX=3", NULL};
  cr_assert_eq(parse("auto", array, &k, &n), XR_OK, "%s", xr_last_error());
  cr_assert(k == 2 && n == 4, "%u/%u", k, n);
  cr_assert_eq(parse("auto/4", array, &k, &n), XR_OK);
  cr_assert(parse("auto/5", array, &k, &n) == XR_INVALID_ARGUMENT &&
                strstr(xr_last_error(), "4 tasks, not 5"),
            "%s", xr_last_error());
  /* --array=1-3: shards 0..2. */
  const char *from_one[] = {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=3",
                            "SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_MAX=3", NULL};
  cr_assert_eq(parse("auto", from_one, &k, &n), XR_OK);
  cr_assert(k == 0 && n == 3, "%u/%u", k, n);
  /* Without COUNT: MAX - MIN + 1. */
  const char *no_count[] = {"SLURM_ARRAY_TASK_ID=7", "SLURM_ARRAY_TASK_MIN=5",
                            "SLURM_ARRAY_TASK_MAX=8", NULL};
  cr_assert_eq(parse("auto", no_count, &k, &n), XR_OK);
  cr_assert(k == 2 && n == 4, "%u/%u", k, n);
  /* A step (--array=0-10:2) or gaps: COUNT is not MAX - MIN + 1. */
  const char *step[] = {"SLURM_ARRAY_TASK_ID=4", "SLURM_ARRAY_TASK_COUNT=6",
                        "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_MAX=10", NULL};
  cr_assert(parse("auto", step, &k, &n) == XR_INVALID_ARGUMENT &&
                strstr(xr_last_error(), "SLURM_ARRAY_TASK_COUNT=6"),
            "%s", xr_last_error());
  /* An ID alone says nothing of the count, unless it is given. */
  const char *id_only[] = {"SLURM_ARRAY_TASK_ID=1", NULL};
  cr_assert(parse("auto", id_only, &k, &n) == XR_INVALID_ARGUMENT &&
                strstr(xr_last_error(), "--shard=auto/N"),
            "%s", xr_last_error());
  cr_assert_eq(parse("auto/2", id_only, &k, &n), XR_OK);
  cr_assert(k == 1 && n == 2);
  cr_assert_eq(parse("auto/1", id_only, &k, &n), XR_INVALID_ARGUMENT);
  const char *garbled[] = {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=three", NULL};
  cr_assert(parse("auto", garbled, &k, &n) == XR_INVALID_ARGUMENT &&
                strstr(xr_last_error(), "SLURM_ARRAY_TASK_COUNT=\"three\""),
            "%s", xr_last_error());
}

Test(shard, kubernetes_indexed_jobs) {
  uint32_t k, n;
  const char *job[] = {"JOB_COMPLETION_INDEX=3", NULL};
  cr_assert_eq(parse("auto/8", job, &k, &n), XR_OK, "%s", xr_last_error());
  cr_assert(k == 3 && n == 8);
  cr_assert(parse("auto", job, &k, &n) == XR_INVALID_ARGUMENT &&
                strstr(xr_last_error(), "JOB_COMPLETION_INDEX") &&
                strstr(xr_last_error(), "auto/N"),
            "%s", xr_last_error());
  cr_assert_eq(parse("auto/3", job, &k, &n), XR_INVALID_ARGUMENT, "index 3 of 3");
  const char *none[] = {NULL};
  cr_assert(parse("auto", none, &k, &n) == XR_INVALID_ARGUMENT &&
                strstr(xr_last_error(), "SLURM_ARRAY_TASK_ID") &&
                strstr(xr_last_error(), "JOB_COMPLETION_INDEX"),
            "%s", xr_last_error());
  /* Slurm's comes first when both are set. */
  const char *both[] = {"JOB_COMPLETION_INDEX=0", "SLURM_ARRAY_TASK_ID=1",
                        "SLURM_ARRAY_TASK_COUNT=2", NULL};
  cr_assert_eq(parse("auto", both, &k, &n), XR_OK);
  cr_assert(k == 1 && n == 2);
}

/* ------------------------------------------------------------------------------------------ */
/* the engine                                                                                  */

typedef struct seen {
  size_t count;
  size_t index[32];
} seen_t;

static void observe(void *ctx, const xr_op_result_t *r, size_t position, size_t count) {
  seen_t *s = ctx;
  cr_assert_eq(position, s->count);
  (void)count;
  if (s->count < 32) s->index[s->count] = r->index;
  s->count++;
}

Test(shard, the_engine_replays_exactly_the_shards_ops) {
  xr_bundle_t *b = bundle(ADD(8) "," MM(4, 4, 4, "\"timing\": {\"gpu_time_us\": 50}, ") "," ADD(
      8) "," MM(8, 8, 8, "\"timing\": {\"gpu_time_us\": 80}, ") "," ADD(8) "," ADD(16));
  xr_replay_options_t o;
  xr_replay_options_default(&o);
  o.device = "cpu";
  o.warmup = 0;
  o.iters = 1;
  size_t runs = 0;
  bool ran[6] = {false};
  for (uint32_t k = 0; k < 3; k++) {
    xr_shard_t *s;
    cr_assert_eq(xr_shard_create(b, &o, k, 3, &s), XR_OK);
    o.shard = s;
    seen_t seen = {0};
    xr_replay_observer_t obs = {.result = observe, .context = &seen};
    xr_replay_summary_t summary;
    cr_assert_eq(xr_replay_run(b, &o, &obs, &summary), XR_OK, "%s", xr_last_error());
    cr_assert_eq(summary.total, 6);
    cr_assert_eq(summary.attempted, s->op_count);
    cr_assert_eq(seen.count, s->op_count);
    for (size_t j = 0; j < seen.count; j++) {
      cr_assert_eq(seen.index[j], s->ops[j], "shard %u: result %zu is op %zu, not %zu", k, j,
                   seen.index[j], s->ops[j]);
      cr_assert(!ran[seen.index[j]]);
      ran[seen.index[j]] = true;
    }
    runs += seen.count;
    o.shard = NULL;
    xr_shard_destroy(s);
  }
  cr_assert_eq(runs, 6);
  xr_bundle_destroy(b);
}
