/* A sharded replay on the command line: `replay --shard=K/N` on each shard, then `replay merge`,
 * must give the ops of one unsharded run (the same ops, in bundle order, each once, with the
 * same outcomes and counts), whether K and N come from the option or from a Slurm job array's
 * or a Kubernetes Indexed Job's environment. Every way the reports can fail to be the whole of
 * one run is an error naming the file and the field: a missing or repeated shard, shards of
 * another bundle, partition, options or device, a report cut short or tampered with, a file
 * that is not a report or not a shard's. Expected values are read from the reports themselves. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tools/cli_util.h"

#define QUICK "--hal=cpu --iters=1 --warmup=0"

static void write_json(const char *path, const cJSON *j) {
  char *text = cJSON_PrintUnformatted(j);
  write_text(path, text);
  free(text);
}

/* Small ops, most with a recorded time (one without), so that a run takes a moment. */
/* clang-format off */
#define ADD(n, us)                                                                               \
  "{\"name\": \"aten::add\", \"timing\": {\"gpu_time_us\": " #us "}, \"args\": [{\"name\": "    \
  "\"self\", \"type\": \"Tensor\", \"value\": {\"shape\": [" #n "], \"dtype\": \"float\"}}, "   \
  "{\"name\": \"other\", \"type\": \"Tensor\", \"value\": {\"shape\": [" #n "], \"dtype\": "    \
  "\"float\"}}]}"
#define MM(m, us)                                                                               \
  "{\"name\": \"aten::mm\", \"count\": 2, \"timing\": {\"gpu_time_us\": " #us "}, \"args\": "  \
  "[{\"name\": \"self\", \"type\": \"Tensor\", \"value\": {\"shape\": [" #m ", 8], \"dtype\": " \
  "\"float\"}}, {\"name\": \"mat2\", \"type\": \"Tensor\", \"value\": {\"shape\": [8, 8], "     \
  "\"dtype\": \"float\"}}]}"
#define UNTIMED                                                                               \
  "{\"name\": \"aten::neg\", \"args\": [{\"name\": \"self\", \"type\": \"Tensor\", \"value\": " \
  "{\"shape\": [4], \"dtype\": \"float\"}}]}"
/* clang-format on */

/* The bundle, with `rows` the first GEMM's (another value: another bundle). */
static const char *small_bundle(int rows) {
  char name[64], text[8192];
  snprintf(name, sizeof name, "bundle%d.json", rows);
  const char *path = scratch(name);
  const char *ops =
      ADD(64, 5) ", " UNTIMED ", " ADD(8, 12) ", " MM(16, 40) ", " ADD(32, 7) ", " ADD(128, 3);
  snprintf(text, sizeof text,
           "{\"format\": \"xreplay-bundle\", \"ops\": [" ADD(16, 30) ", %s, %s]}",
           rows == 4 ? MM(4, 90) : MM(6, 90), ops);
  write_text(path, text);
  return path;
}

/* Runs shard k of n for every k into PREFIX.k.json; `extra` options for all of them. */
static void run_shards(const char *bundle, int n, const char *extra, const char *prefix) {
  for (int k = 0; k < n; k++) {
    char args[8192];
    snprintf(args, sizeof args, QUICK " %s --shard=%d/%d --report=%s.%d.json %s", extra, k, n,
             prefix, k, bundle);
    cr_assert_eq(replay(args), 0, "replay %s:\n%s%s", args, out_text, err_text);
    char expect[64];
    snprintf(expect, sizeof expect, "shard %d of %d (0-based): ", k, n);
    cr_assert(strstr(out_text, expect), "replay %s said:\n%s", args, out_text);
  }
}

/* `replay merge ARGS`: the exit code; stderr in err_text. */
static int merge(const char *args) {
  char cmd[8300];
  snprintf(cmd, sizeof cmd, "merge %s", args);
  return replay(cmd);
}

/* The merged report holds the unsharded run's ops: same positions and names in the same order,
 * each once, the same outcomes, and each op tagged with the shard whose report it came from. */
static void check_same_ops(const char *merged_path, const char *full_path, const char *prefix) {
  cJSON *merged = read_json(merged_path), *full = read_json(full_path);
  const cJSON *mops = cJSON_GetObjectItem(merged, "ops"), *fops = cJSON_GetObjectItem(full, "ops");
  int n = cJSON_GetArraySize(fops);
  cr_assert_gt(n, 0);
  cr_assert_eq(cJSON_GetArraySize(mops), n, "merged %d ops, the unsharded run %d",
               cJSON_GetArraySize(mops), n);
  for (int i = 0; i < n; i++) {
    const cJSON *m = cJSON_GetArrayItem(mops, i), *f = cJSON_GetArrayItem(fops, i);
    cr_assert_eq(json_number(m, "index"), json_number(f, "index"), "ops[%d]", i);
    cr_assert_str_eq(json_str(m, "name"), json_str(f, "name"), "ops[%d]", i);
    cr_assert_str_eq(json_str(m, "args"), json_str(f, "args"), "ops[%d]", i);
    cr_assert_str_eq(json_str(m, "outcome"), json_str(f, "outcome"), "ops[%d]", i);
    /* It came from the report of the shard it names. */
    char shard_path[1100];
    snprintf(shard_path, sizeof shard_path, "%s.%d.json", prefix, (int)json_number(m, "shard"));
    cJSON *shard = read_json(shard_path);
    bool found = false;
    const cJSON *op;
    cJSON_ArrayForEach(op, cJSON_GetObjectItem(shard, "ops")) {
      found |= json_number(op, "index") == json_number(m, "index");
    }
    cr_assert(found, "ops[%d] (op %g) is not in %s", i, json_number(m, "index"), shard_path);
    cJSON_Delete(shard);
  }
  const cJSON *ms = cJSON_GetObjectItem(merged, "summary"),
              *fs = cJSON_GetObjectItem(full, "summary");
  const char *counts[] = {"total", "attempted", "succeeded", "failed", "unsupported"};
  for (int k = 0; k < 5; k++)
    cr_assert_eq(json_number(ms, counts[k]), json_number(fs, counts[k]), "summary.%s", counts[k]);
  cr_assert_eq(json_number(merged, "bundle_ops"), json_number(full, "bundle_ops"));
  cr_assert(fabs(json_number(ms, "trace_covered_us") - json_number(fs, "trace_covered_us")) <=
                1e-9 * json_number(fs, "trace_covered_us"),
            "trace_covered_us %g vs %g", json_number(ms, "trace_covered_us"),
            json_number(fs, "trace_covered_us"));
  /* Replayed vs recorded over every op, as the unsharded run counts them. */
  const cJSON *mr = cJSON_GetObjectItem(ms, "replay_vs_trace"),
              *fr = cJSON_GetObjectItem(fs, "replay_vs_trace");
  cr_assert_eq(json_number(mr, "count"), json_number(fr, "count"));
  cr_assert_null(cJSON_GetObjectItem(merged, "shard"), "a merged report is no shard's");
  cJSON_Delete(merged);
  cJSON_Delete(full);
}

Test(merge, shards_merge_into_the_unsharded_run) {
  const char *bundle = small_bundle(4), *full = scratch("full.json"), *out = scratch("merged.json");
  char prefix[1024], args[8192];
  snprintf(prefix, sizeof prefix, "%s", scratch("r"));
  snprintf(args, sizeof args, QUICK " --report=%s %s", full, bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  run_shards(bundle, 3, "", prefix);
  /* Any order of the files. */
  snprintf(args, sizeof args, "%s.2.json %s.0.json %s.1.json -o %s", prefix, prefix, prefix, out);
  cr_assert_eq(merge(args), 0, "replay merge %s:\n%s", args, err_text);
  cr_assert(strstr(out_text, "merged 3 shards"), "%s", out_text);
  check_same_ops(out, full, prefix);
  cJSON *m = read_json(out);
  const cJSON *info = cJSON_GetObjectItem(m, "merged");
  cr_assert_eq(json_number(info, "count"), 3);
  cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(info, "reports")), 3);
  cr_assert_str_eq(json_str(info, "weights"), "trace_ns");
  cr_assert_eq(strlen(json_str(m, "bundle_hash")), 16);
  cJSON_Delete(m);
  /* The merged report is a report: compare and report read it. */
  snprintf(args, sizeof args, "compare %s %s", full, out);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(!strstr(out_text, "not in B"), "%s", out_text);
  /* More shards than ops: some are empty, and merge all the same. */
  snprintf(prefix, sizeof prefix, "%s", scratch("many"));
  run_shards(bundle, 11, "", prefix);
  char list[4096] = "";
  for (int k = 0; k < 11; k++) {
    size_t len = strlen(list);
    snprintf(list + len, sizeof list - len, "%s.%d.json ", prefix, k);
  }
  snprintf(args, sizeof args, "%s -o %s", list, out);
  cr_assert_eq(merge(args), 0, "%s", err_text);
  check_same_ops(out, full, prefix);
}

Test(merge, a_bundle_from_a_real_trace) {
  const char *bundle = scratch("bert.msgpack"), *full = scratch("bert.json"),
             *out = scratch("bert.merged.json");
  char prefix[1024], args[8192];
  snprintf(args, sizeof args, "extract tests/data/fixtures/traces/mi300_bert_small.json.gz -o %s",
           bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  /* With a filter the shards share: what is partitioned is what it selects. */
  snprintf(args, sizeof args, QUICK " --op-filter=aten::add --report=%s %s", full, bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(prefix, sizeof prefix, "%s", scratch("bert"));
  run_shards(bundle, 2, "--op-filter=aten::add", prefix);
  snprintf(args, sizeof args, "%s.0.json %s.1.json -o %s", prefix, prefix, out);
  cr_assert_eq(merge(args), 0, "%s", err_text);
  check_same_ops(out, full, prefix);
}

Test(merge, the_environment_names_the_shard) {
  const char *bundle = small_bundle(4);
  char args[8192];
  const char *r = scratch("env.json");
  setenv("SLURM_ARRAY_TASK_ID", "5", 1);
  setenv("SLURM_ARRAY_TASK_MIN", "4", 1);
  setenv("SLURM_ARRAY_TASK_MAX", "6", 1);
  setenv("SLURM_ARRAY_TASK_COUNT", "3", 1);
  snprintf(args, sizeof args, QUICK " --shard=auto --report=%s %s", r, bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cJSON *j = read_json(r);
  const cJSON *shard = cJSON_GetObjectItem(j, "shard");
  cr_assert_eq(json_number(shard, "index"), 1, "task 5 of 4..6");
  cr_assert_eq(json_number(shard, "count"), 3);
  cJSON_Delete(j);
  snprintf(args, sizeof args, QUICK " --shard=auto/4 %s", bundle);
  cr_assert_eq(replay(args), 2);
  cr_assert(strstr(err_text, "3 tasks, not 4"), "%s", err_text);
  setenv("SLURM_ARRAY_TASK_COUNT", "2", 1); /* a step: --array=4-6:2 */
  snprintf(args, sizeof args, QUICK " --shard=auto %s", bundle);
  cr_assert_eq(replay(args), 2);
  cr_assert(strstr(err_text, "SLURM_ARRAY_TASK_COUNT=2"), "%s", err_text);
  unsetenv("SLURM_ARRAY_TASK_ID");
  unsetenv("SLURM_ARRAY_TASK_MIN");
  unsetenv("SLURM_ARRAY_TASK_MAX");
  unsetenv("SLURM_ARRAY_TASK_COUNT");
  snprintf(args, sizeof args, QUICK " --shard=auto %s", bundle);
  cr_assert_eq(replay(args), 2);
  cr_assert(strstr(err_text, "SLURM_ARRAY_TASK_ID") && strstr(err_text, "JOB_COMPLETION_INDEX"),
            "%s", err_text);
  setenv("JOB_COMPLETION_INDEX", "2", 1);
  snprintf(args, sizeof args, QUICK " --shard=auto/3 --report=%s %s", r, bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  j = read_json(r);
  cr_assert_eq(json_number(cJSON_GetObjectItem(j, "shard"), "index"), 2);
  cJSON_Delete(j);
  snprintf(args, sizeof args, QUICK " --shard=auto %s", bundle);
  cr_assert_eq(replay(args), 2);
  cr_assert(strstr(err_text, "--shard=auto/N"), "%s", err_text);
  unsetenv("JOB_COMPLETION_INDEX");
  const char *bad[] = {"3/3", "1/0", "x", "1"};
  for (int k = 0; k < 4; k++) {
    snprintf(args, sizeof args, QUICK " --shard=%s %s", bad[k], bundle);
    cr_assert_eq(replay(args), 2, "--shard=%s", bad[k]);
    cr_assert(strstr(err_text, "--shard="), "--shard=%s: %s", bad[k], err_text);
  }
}

/* `replay merge ARGS` fails with exit 2 and an error holding every one of `needles`. */
static void refused(const char *args, const char *needles[], int n) {
  cr_assert_eq(merge(args), 2, "replay merge %s succeeded:\n%s", args, out_text);
  for (int k = 0; k < n; k++)
    cr_assert(strstr(err_text, needles[k]), "replay merge %s: no \"%s\" in:\n%s", args, needles[k],
              err_text);
  cr_assert(strstr(err_text, "replay merge: "), "%s", err_text);
}

/* Three shards of the small bundle: P.0.json ... P.2.json. */
static const char *three_shards(const char *name, const char *extra) {
  static char prefix[1024];
  snprintf(prefix, sizeof prefix, "%s", scratch(name));
  run_shards(small_bundle(4), 3, extra, prefix);
  return prefix;
}

Test(merge, missing_repeated_and_foreign_shards) {
  const char *p = three_shards("a", ""), *out = scratch("out.json");
  char args[8192], path[1100];
  snprintf(args, sizeof args, "%s.0.json %s.1.json -o %s", p, p, out);
  refused(args, (const char *[]){"shard 2 of 3 is missing", "hold shards 0, 1"}, 2);
  snprintf(args, sizeof args, "%s.0.json %s.1.json %s.0.json %s.2.json -o %s", p, p, p, p, out);
  refused(args, (const char *[]){"both are shard 0 of 3", "shard.index"}, 2);
  cr_assert(access(out, F_OK) != 0, "nothing is written on error");

  /* Shard 1 of another bundle: its first GEMM has 6 rows. */
  char other[1024];
  snprintf(other, sizeof other, "%s", scratch("other"));
  run_shards(small_bundle(6), 3, "", other);
  snprintf(path, sizeof path, "%s.1.json", other);
  snprintf(args, sizeof args, "%s.0.json %s %s.2.json -o %s", p, path, p, out);
  refused(args, (const char *[]){path, "bundle_hash", "different bundles"}, 3);

  /* Shard 1 of two, not of three. */
  char halves[1024];
  snprintf(halves, sizeof halves, "%s", scratch("halves"));
  run_shards(small_bundle(4), 2, "", halves);
  snprintf(path, sizeof path, "%s.1.json", halves);
  snprintf(args, sizeof args, "%s.0.json %s %s.2.json -o %s", p, path, p, out);
  refused(args, (const char *[]){path, "shard.count"}, 2);

  /* Shard 1 with other options. */
  char iters[1024];
  snprintf(iters, sizeof iters, "%s", scratch("iters"));
  run_shards(small_bundle(4), 3, "--seed=7", iters);
  snprintf(path, sizeof path, "%s.1.json", iters);
  snprintf(args, sizeof args, "%s.0.json %s %s.2.json -o %s", p, path, p, out);
  refused(args, (const char *[]){path, "options.seed", "different options"}, 3);
  /* ... or another filter: another partition too. */
  char filtered[1024];
  snprintf(filtered, sizeof filtered, "%s", scratch("filtered"));
  run_shards(small_bundle(4), 3, "--op-filter=aten::add", filtered);
  snprintf(path, sizeof path, "%s.2.json", filtered);
  snprintf(args, sizeof args, "%s.0.json %s.1.json %s -o %s", p, p, path, out);
  refused(args, (const char *[]){path, "shard."}, 2);
}

/* Each shard draws its own timeline (--timeline, a file per shard): those options differ and
 * the shards still merge, while one that measures differently is still refused. */
Test(merge, shards_with_timelines_of_their_own) {
  const char *bundle = small_bundle(4), *out = scratch("timelines.json");
  char prefix[1024], args[8192];
  snprintf(prefix, sizeof prefix, "%s", scratch("drawn"));
  for (int k = 0; k < 3; k++) {
    snprintf(args, sizeof args,
             QUICK " --shard=%d/3 --timeline=%s.%d.trace.json --timeline-events=%d "
                   "--report=%s.%d.json %s",
             k, prefix, k, 5 + k, prefix, k, bundle);
    cr_assert_eq(replay(args), 0, "replay %s:\n%s", args, err_text);
  }
  char shard0[1100];
  snprintf(shard0, sizeof shard0, "%s.0.json", prefix);
  cJSON *report = read_json(shard0);
  cr_assert_eq(json_number(cJSON_GetObjectItem(report, "options"), "timeline_events"), 5);
  cJSON_Delete(report);
  snprintf(args, sizeof args, "%s.0.json %s.1.json %s.2.json -o %s", prefix, prefix, prefix, out);
  cr_assert_eq(merge(args), 0, "replay merge %s:\n%s", args, err_text);
  /* Shard 1 run with another seed as well: refused for the seed. */
  char seeded[1024], path[1100];
  snprintf(seeded, sizeof seeded, "%s", scratch("seeded"));
  snprintf(args, sizeof args,
           QUICK " --shard=1/3 --seed=7 --timeline=%s.trace.json --report=%s.1.json %s", seeded,
           seeded, bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(path, sizeof path, "%s.1.json", seeded);
  snprintf(args, sizeof args, "%s.0.json %s %s.2.json -o %s", prefix, path, prefix, out);
  refused(args, (const char *[]){path, "options.seed", "different options"}, 3);
}

Test(merge, shards_of_different_devices_only_when_asked) {
  const char *p = three_shards("dev", ""), *out = scratch("out.json");
  char path[1100], args[8192];
  snprintf(path, sizeof path, "%s.1.json", p);
  cJSON *j = read_json(path);
  cJSON_ReplaceItemInObject(j, "device", cJSON_CreateString("AMD Instinct MI300X"));
  cJSON_ReplaceItemInObject(j, "driver", cJSON_CreateString("hip"));
  write_json(path, j);
  cJSON_Delete(j);
  snprintf(args, sizeof args, "%s.0.json %s %s.2.json -o %s", p, path, p, out);
  refused(args, (const char *[]){path, "device", "AMD Instinct MI300X", "--allow-mixed-devices"},
          4);
  snprintf(args, sizeof args, "%s.0.json %s %s.2.json -o %s --allow-mixed-devices", p, path, p,
           out);
  cr_assert_eq(merge(args), 0, "%s", err_text);
  cJSON *m = read_json(out);
  const cJSON *reports = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "merged"), "reports");
  cr_assert_str_eq(json_str(cJSON_GetArrayItem(reports, 1), "device"), "AMD Instinct MI300X");
  cr_assert_str_eq(json_str(cJSON_GetArrayItem(reports, 1), "driver"), "hip");
  cJSON_Delete(m);
}

static const char *edited_prefix; /* the shards merge_edited made */

/* Shard 1's report rewritten by `edit`, then merged with the others. */
static void merge_edited(const char *name, void (*edit)(cJSON *report), const char *needles[],
                         int n) {
  const char *p = three_shards(name, ""), *out = scratch("out.json");
  char path[1100], args[8192];
  edited_prefix = p;
  snprintf(path, sizeof path, "%s.1.json", p);
  cJSON *j = read_json(path);
  edit(j);
  write_json(path, j);
  cJSON_Delete(j);
  snprintf(args, sizeof args, "%s.0.json %s %s.2.json -o %s", p, path, p, out);
  refused(args, needles, n);
  cr_assert(strstr(err_text, path), "the error names the file: %s", err_text);
}

/* A run killed after its first op: the later ones and the summary are missing. */
static void cut_short(cJSON *r) {
  cJSON *ops = cJSON_GetObjectItem(r, "ops");
  while (cJSON_GetArraySize(ops) > 1) cJSON_DeleteItemFromArray(ops, 1);
  cJSON_ReplaceItemInObject(r, "summary", cJSON_CreateNull());
}

static void op_twice(cJSON *r) {
  cJSON *ops = cJSON_GetObjectItem(r, "ops");
  cJSON_AddItemToArray(ops, cJSON_Duplicate(cJSON_GetArrayItem(ops, 0), true));
}

static void foreign_op(cJSON *r) {
  /* An op index no shard of this bundle has. */
  cJSON *op = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ops"), 0);
  cJSON_ReplaceItemInObject(op, "index", cJSON_CreateNumber(99));
}

static void no_shard(cJSON *r) {
  cJSON_DeleteItemFromObject(r, "shard");
}

static void shard_index_out_of_range(cJSON *r) {
  cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "shard"), "index", cJSON_CreateNumber(3));
}

static void shard_ops_descend(cJSON *r) {
  cJSON *list = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "shard"), "ops");
  cJSON_AddItemToArray(list, cJSON_CreateNumber(0));
}

static void shard_not_an_object(cJSON *r) {
  cJSON_ReplaceItemInObject(r, "shard", cJSON_CreateString("1/3"));
}

static void bad_hash(cJSON *r) {
  cJSON_ReplaceItemInObject(r, "bundle_hash", cJSON_CreateString("not-a-hash"));
}

static void no_hash(cJSON *r) {
  cJSON_DeleteItemFromObject(r, "bundle_hash");
}

static void no_op_count(cJSON *r) {
  cJSON_DeleteItemFromObject(r, "bundle_ops");
}

static int ascending(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Shards that overlap: shard 1 claims (and reports) shard 0's first op in place of its own. */
static void steal_an_op(cJSON *r) {
  char path[1100];
  snprintf(path, sizeof path, "%s.0.json", edited_prefix);
  cJSON *zero = read_json(path);
  double stolen = json_number(cJSON_GetArrayItem(cJSON_GetObjectItem(zero, "ops"), 0), "index");
  cJSON_Delete(zero);
  cJSON *shard = cJSON_GetObjectItem(r, "shard"), *mine = cJSON_GetObjectItem(shard, "ops");
  double list[64];
  int n = cJSON_GetArraySize(mine);
  cr_assert(n > 0 && n < 64);
  for (int k = 0; k < n; k++) list[k] = cJSON_GetArrayItem(mine, k)->valuedouble;
  list[0] = stolen;
  qsort(list, (size_t)n, sizeof list[0], ascending);
  cJSON_ReplaceItemInObject(shard, "ops", cJSON_CreateDoubleArray(list, n));
  cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "ops"), 0);
  cJSON_ReplaceItemInObject(first, "index", cJSON_CreateNumber(stolen));
}

Test(merge, reports_that_are_not_a_whole_shard) {
  merge_edited("cut", cut_short,
               (const char *[]){"ops: op", "one of shard 1's", "is missing",
                                "did not finish: its summary is null"},
               4);
  merge_edited("twice", op_twice, (const char *[]){"is there twice"}, 1);
  merge_edited("foreign", foreign_op, (const char *[]){"op 99", "not one of shard 1's ops"}, 2);
  merge_edited("steal", steal_an_op, (const char *[]){"is in shard 0", "overlap", "shard.ops"}, 3);
}

Test(merge, reports_without_the_shard_fields) {
  merge_edited("noshard", no_shard, (const char *[]){"shard: missing", "replay --shard"}, 2);
  merge_edited("range", shard_index_out_of_range,
               (const char *[]){"shard.index", "not under shard.count"}, 2);
  merge_edited("descend", shard_ops_descend, (const char *[]){"shard.ops[", "ascend"}, 2);
  merge_edited("notobject", shard_not_an_object, (const char *[]){"shard: not an object"}, 1);
  merge_edited("badhash", bad_hash, (const char *[]){"bundle_hash: not 16 hex digits"}, 1);
  merge_edited("nohash", no_hash, (const char *[]){"bundle_hash: missing"}, 1);
  merge_edited("noops", no_op_count, (const char *[]){"bundle_ops: missing"}, 1);
}

Test(merge, files_that_are_not_reports) {
  const char *p = three_shards("files", ""), *out = scratch("out.json");
  char args[8192], path[1100], text[1 << 16];
  const char *nowhere = scratch("no/such/dir/out.json");
  snprintf(args, sizeof args, "%s.0.json %s.1.json %s.2.json -o %s", p, p, p, nowhere);
  refused(args, (const char *[]){nowhere, "cannot create"}, 2);
  snprintf(args, sizeof args, "%s.0.json %s.1.json -o %s", p, p, out);
  refused(args, (const char *[]){"shard 2 of 3 is missing"}, 1);
  const char *text_file = scratch("notes.txt");
  write_text(text_file, "these are not the reports you are looking for\n");
  snprintf(args, sizeof args, "%s.0.json %s -o %s", p, text_file, out);
  refused(args, (const char *[]){text_file, "not JSON"}, 2);
  /* Truncated: the first half of a report. */
  snprintf(path, sizeof path, "%s.1.json", p);
  slurp(path, text, sizeof text);
  text[strlen(text) / 2] = '\0';
  write_text(path, text);
  snprintf(args, sizeof args, "%s.0.json %s %s.2.json -o %s", p, path, p, out);
  refused(args, (const char *[]){path, "not JSON"}, 2);
  /* JSON, but no report. */
  write_text(path, "{\"ops\": 3}");
  refused(args, (const char *[]){path, "\"ops\" is not an array"}, 2);
  /* An unsharded run's report. */
  const char *plain = scratch("plain.json");
  snprintf(args, sizeof args, QUICK " --report=%s %s", plain, small_bundle(4));
  cr_assert_eq(replay(args), 0, "%s", err_text);
  snprintf(args, sizeof args, "%s -o %s", plain, out);
  refused(args, (const char *[]){plain, "shard: missing"}, 2);
  const char *missing = scratch("absent.json");
  snprintf(args, sizeof args, "%s -o %s", missing, out);
  refused(args, (const char *[]){missing}, 1);
  /* Usage. */
  cr_assert_eq(merge(""), 2);
  cr_assert(strstr(err_text, "no report given"), "%s", err_text);
  snprintf(args, sizeof args, "%s.0.json", p);
  cr_assert_eq(merge(args), 2);
  cr_assert(strstr(err_text, "replay merge: -o R.json is required\n"), "%s", err_text);
  cr_assert_eq(merge("--help"), 0);
  cr_assert(strstr(out_text, "usage: replay merge"), "%s", out_text);
}
