/* Collectives replayed across ranks for real: Debian's Open MPI starts 2, 3 and 4 ranks of the
 * `replay` binary on a bundle of every collective (record_param_comms by each recorded name,
 * c10d's and vLLM's ops) in several dtypes, checked exactly against the reference with --check;
 * the report's per-rank medians, algorithm and bus bandwidths are checked against each other.
 * Alone, the same bundle reports its collectives unsupported with the reason; ranks that replay
 * different bundles fail at start; a rank that stops answering ends the job within the
 * timeout with a sentence. Skips say why where mpirun is absent. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/tools/cli_util.h"

static char output[1 << 17];

static void need_mpirun(void) {
  if (system("command -v mpirun >/dev/null 2>&1") != 0)
    cr_skip_test("mpirun is not installed (Debian's openmpi-bin; ./bazelw installs it)");
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Runs a shell command line under Open MPI's root override: exit code, output in `output`. */
static int run(const char *command_line, double *seconds) {
  char command[4096];
  /* Under --config=asan the ranks skip the exit-time leak check: Open MPI leaves its own
   * allocations in components it has unloaded (see tests/hal/comm_test.c). */
  snprintf(command, sizeof command,
           "export ASAN_OPTIONS=\"$ASAN_OPTIONS:detect_leaks=0\" OMPI_ALLOW_RUN_AS_ROOT=1 "
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; timeout 180 %s 2>&1",
           command_line);
  double start = now_s();
  FILE *p = popen(command, "r");
  cr_assert(p, "popen");
  size_t n = fread(output, 1, sizeof output - 1, p);
  output[n] = '\0';
  int status = pclose(p);
  if (seconds) *seconds = now_s() - start;
  cr_log_info("%s\n%s", command_line, output);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ------------------------------------------------------------------------------------------ */
/* bundles                                                                                     */

static cJSON *tensor(long long n, const char *dtype) {
  cJSON *t = cJSON_CreateObject();
  cJSON *shape = cJSON_AddArrayToObject(t, "shape");
  cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)n));
  cJSON *strides = cJSON_AddArrayToObject(t, "strides");
  cJSON_AddItemToArray(strides, cJSON_CreateNumber(1));
  cJSON_AddStringToObject(t, "dtype", dtype);
  return t;
}

static void arg(cJSON *list, const char *name, const char *type, cJSON *value) {
  cJSON *a = cJSON_CreateObject();
  cJSON_AddStringToObject(a, "name", name);
  cJSON_AddStringToObject(a, "type", type);
  cJSON_AddItemToObject(a, "value", value);
  cJSON_AddItemToArray(list, a);
}

static cJSON *op(cJSON *ops, const char *name) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddArrayToObject(o, "args");
  cJSON_AddArrayToObject(o, "kwargs");
  cJSON_AddItemToArray(ops, o);
  return o;
}

/* The group's size, and its stride when not 1 (as extraction records them). */
static int stride_of_group = 1;
static void group_kwargs(cJSON *kw, int group) {
  arg(kw, "group_size", "int", cJSON_CreateNumber(group));
  if (stride_of_group != 1) arg(kw, "group_stride", "int", cJSON_CreateNumber(stride_of_group));
}

static void comms(cJSON *ops, const char *collective, long long in, long long out,
                  const char *dtype, int group, int rank) {
  cJSON *kw = cJSON_GetObjectItem(op(ops, "record_param_comms"), "kwargs");
  arg(kw, "input", "Tensor", tensor(in, dtype));
  arg(kw, "output", "Tensor", tensor(out, dtype));
  arg(kw, "collective", "str", cJSON_CreateString(collective));
  group_kwargs(kw, group);
  arg(kw, "rank", "int", cJSON_CreateNumber(rank));
}

/* Every collective for a group of `g` ranks `stride` apart, `scale` times the elements (an
 * aten::mm last). */
static void write_group_bundle(const char *path, int g, int stride, int scale) {
  stride_of_group = stride;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "format", "xreplay-bundle");
  cJSON_AddNumberToObject(root, "format_version", 1);
  cJSON *ops = cJSON_AddArrayToObject(root, "ops");
  const char *reduced[] = {"c10::BFloat16", "c10::Half", "float", "double",
                           "int",           "long int",  "unsigned char", "bool"};
  long long n = 96LL * scale;
  for (size_t k = 0; k < sizeof reduced / sizeof *reduced; k++)
    comms(ops, "allreduce", n + (long long)k, n + (long long)k, reduced[k], g, 0);
  comms(ops, "_allgather_base", n, n * g, "c10::BFloat16", g, 0);
  comms(ops, "allgather", n, n * g, "float", g, 0);
  comms(ops, "_reduce_scatter_base", n * g, n, "c10::BFloat16", g, 0);
  comms(ops, "reduce_scatter", n * g, n, "float", g, 0);
  comms(ops, "broadcast", n, n, "float", g, g - 1);
  comms(ops, "all_to_all", n * g, n * g, "c10::BFloat16", g, 0);
  comms(ops, "barrier", 0, 0, "float", g, 0);
  /* c10d's and vLLM's own ops, with the group size extraction gives them. */
  cJSON *o = op(ops, "c10d::allreduce_");
  cJSON *list = cJSON_CreateArray();
  cJSON_AddItemToArray(list, tensor(n, "c10::BFloat16"));
  arg(cJSON_GetObjectItem(o, "args"), "tensors", "Tensor(a!)[]", list);
  group_kwargs(cJSON_GetObjectItem(o, "kwargs"), g);
  o = op(ops, "vllm::all_reduce");
  arg(cJSON_GetObjectItem(o, "args"), "tensor", "Tensor", tensor(n, "c10::BFloat16"));
  group_kwargs(cJSON_GetObjectItem(o, "kwargs"), g);
  o = op(ops, "_C_custom_ar::all_reduce");
  cJSON *args = cJSON_GetObjectItem(o, "args");
  arg(args, "fa", "int", cJSON_CreateNumber(0));
  arg(args, "inp", "Tensor", tensor(n, "c10::Half"));
  arg(args, "out", "Tensor(a!)", tensor(n, "c10::Half"));
  group_kwargs(cJSON_GetObjectItem(o, "kwargs"), g);
  o = op(ops, "symm_mem::multimem_all_reduce_");
  args = cJSON_GetObjectItem(o, "args");
  arg(args, "input", "Tensor(a!)", tensor(n, "float"));
  arg(args, "reduce_op", "str", cJSON_CreateString("sum"));
  group_kwargs(cJSON_GetObjectItem(o, "kwargs"), g);
  o = op(ops, "aten::mm");
  cJSON *self = tensor(64, "float"), *mat2 = tensor(64, "float");
  cJSON_ReplaceItemInObject(self, "shape", cJSON_CreateIntArray((int[]){8, 8}, 2));
  cJSON_ReplaceItemInObject(self, "strides", cJSON_CreateIntArray((int[]){8, 1}, 2));
  cJSON_ReplaceItemInObject(mat2, "shape", cJSON_CreateIntArray((int[]){8, 8}, 2));
  cJSON_ReplaceItemInObject(mat2, "strides", cJSON_CreateIntArray((int[]){8, 1}, 2));
  arg(cJSON_GetObjectItem(o, "args"), "self", "Tensor", self);
  arg(cJSON_GetObjectItem(o, "args"), "mat2", "Tensor", mat2);
  char *text = cJSON_Print(root);
  write_text(path, text);
  free(text);
  cJSON_Delete(root);
}

static void write_bundle(const char *path, int g, int scale) {
  write_group_bundle(path, g, 1, scale);
}

/* ------------------------------------------------------------------------------------------ */
/* reports                                                                                     */

static cJSON *read_report(const char *path) {
  static char text[1 << 20];
  slurp(path, text, sizeof text);
  cJSON *r = cJSON_Parse(text);
  cr_assert(r, "%s is not JSON:\n%.2000s", path, text);
  return r;
}

/* NCCL-tests' bus factor, written out again for the kinds record_param_comms names. */
static double bus_factor(const char *collective, int n) {
  if (strstr(collective, "allreduce") || strstr(collective, "all_reduce")) return 2.0 * (n - 1) / n;
  if (strstr(collective, "broadcast")) return 1;
  if (strstr(collective, "barrier")) return 0;
  return (double)(n - 1) / n;
}

/* On `n` ranks, the collectives of groups of `g` ranks `stride` apart. */
static void every_collective_exact_in(int n, int g, int stride) {
  need_mpirun();
  char bundle[512], report[512], command[2048];
  snprintf(bundle, sizeof bundle, "%s/collectives_%d_%d_%d.json", tmpdir(), n, g, stride);
  snprintf(report, sizeof report, "%s/collectives_%d_%d_%d.report.json", tmpdir(), n, g, stride);
  write_group_bundle(bundle, g, stride, 1);
  snprintf(command, sizeof command,
           "mpirun --oversubscribe -x XR_HAL_LOG=devices -np %d tools/replay --hal=cpu "
           "--warmup=1 --iters=5 --check --report=%s %s",
           n, report, bundle);
  int code = run(command, NULL);
  cr_assert_eq(code, 0, "exit %d:\n%s", code, output);
  /* Each rank opens its device once: the communicator, the engine and the reference share it. */
  int opens = 0;
  for (const char *p = output; (p = strstr(p, " opened cpu:0\n")); p++) opens++;
  cr_assert_eq(opens, n, "%d device opens for %d ranks:\n%s", opens, n, output);
  char ranks[64];
  snprintf(ranks, sizeof ranks, "== %d ranks (mpirun), MPI: ", n);
  cr_assert(strstr(output, ranks), "%s", output);
  cr_assert(strstr(output, "20 succeeded, 0 failed, 0 unsupported"), "%s", output);
  cJSON *r = read_report(report);
  cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "options"), "ranks")->valueint, n);
  const cJSON *o;
  int collectives = 0;
  cJSON_ArrayForEach(o, cJSON_GetObjectItem(r, "ops")) {
    const char *name = cJSON_GetObjectItem(o, "name")->valuestring;
    cr_assert_str_eq(cJSON_GetObjectItem(o, "outcome")->valuestring, "ok", "%s", name);
    cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(o, "check_passed")), "%s", name);
    const cJSON *c = cJSON_GetObjectItem(o, "collective");
    if (!strcmp(name, "aten::mm")) {
      cr_assert_null(c);
      continue;
    }
    collectives++;
    cr_assert_not_null(c, "%s has no collective figures", name);
    cr_assert_eq(cJSON_GetObjectItem(c, "ranks")->valueint, n);
    cr_assert_eq(cJSON_GetObjectItem(c, "group_ranks")->valueint, g, "%s", name);
    const cJSON *medians = cJSON_GetObjectItem(c, "rank_median_us");
    cr_assert_eq(cJSON_GetArraySize(medians), n);
    double slowest = 0, median = cJSON_GetObjectItem(o, "median_us")->valuedouble;
    const cJSON *m;
    cJSON_ArrayForEach(m, medians) if (m->valuedouble > slowest) slowest = m->valuedouble;
    cr_assert_float_eq(median, slowest, 1e-9, "%s: the op's time is its slowest rank's", name);
    double bytes = cJSON_GetObjectItem(o, "bytes")->valuedouble;
    double algbw = cJSON_GetObjectItem(c, "algbw_gbps")->valuedouble;
    double busbw = cJSON_GetObjectItem(c, "busbw_gbps")->valuedouble;
    cr_assert_float_eq(algbw, bytes / median / 1e3, 1e-6 * (algbw + 1), "%s", name);
    const char *kind = name;
    const cJSON *kwargs = cJSON_GetObjectItem(o, "args");
    if (!strcmp(name, "record_param_comms")) kind = kwargs->valuestring; /* names it */
    if (strstr(kind, "collective='")) kind = strstr(kind, "collective='") + 12;
    cr_assert_float_eq(busbw, algbw * bus_factor(kind, g), 1e-6 * (busbw + 1), "%s: %s", name,
                       kind);
  }
  cr_assert_eq(collectives, 19);
  cJSON_Delete(r);
}

static void every_collective_exact(int n) {
  every_collective_exact_in(n, n, 1);
}

Test(collectives, every_kind_and_dtype_checks_exactly_on_2_ranks) { every_collective_exact(2); }
Test(collectives, every_kind_and_dtype_checks_exactly_on_3_ranks) { every_collective_exact(3); }
Test(collectives, every_kind_and_dtype_checks_exactly_on_4_ranks) { every_collective_exact(4); }

/* Tensor-parallel groups inside a data-parallel world, and the data-parallel groups across
 * them: 4 ranks split into {0,1} {2,3}, then {0,2} {1,3}; each group's results are exact. */
Test(collectives, groups_of_2_adjacent_on_4_ranks_check_exactly) {
  every_collective_exact_in(4, 2, 1);
}
Test(collectives, groups_of_2_strided_on_4_ranks_check_exactly) {
  every_collective_exact_in(4, 2, 2);
}

Test(collectives, groups_that_do_not_tile_the_ranks_say_why) {
  need_mpirun();
  char bundle[512], command[2048];
  snprintf(bundle, sizeof bundle, "%s/collectives_untiled.json", tmpdir());
  write_group_bundle(bundle, 3, 1, 1);
  snprintf(command, sizeof command,
           "mpirun --oversubscribe -np 4 tools/replay --hal=cpu --warmup=0 --iters=1 %s", bundle);
  cr_assert_eq(run(command, NULL), 0, "%s", output);
  cr_assert(strstr(output, "1 succeeded, 0 failed, 19 unsupported"), "%s", output);
  cr_assert(strstr(output,
                   "recorded with a group of 3 ranks, replayed on 4 (groups of 3 ranks, "
                   "1 apart, do not tile 4): --scale-collectives"),
            "%s", output);
  write_group_bundle(bundle, 2, -1, 1);
  cr_assert_eq(run(command, NULL), 0, "%s", output);
  cr_assert(strstr(output, "1 succeeded, 0 failed, 19 unsupported"), "%s", output);
  cr_assert(strstr(output, "not evenly spaced"), "%s", output);
}

Test(collectives, alone_they_are_unsupported_and_say_how_to_start_the_ranks) {
  char bundle[512], args[1024];
  snprintf(bundle, sizeof bundle, "%s/collectives_alone.json", tmpdir());
  write_bundle(bundle, 2, 1);
  snprintf(args, sizeof args, "--hal=cpu --iters=2 %s", bundle);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "1 succeeded, 0 failed, 19 unsupported"), "%s", out_text);
  cr_assert(strstr(out_text, "start 2 ranks with mpirun -np 2 or srun -n 2"), "%s", out_text);
}

/* torchrun's variables: a world of one runs alone; a larger one on cpu buffers cannot start,
 * since MPI does not join torchrun's ranks (NCCL / RCCL do, on cuda and hip), and says so. */
Test(collectives, under_torchrun_the_cpu_says_which_transport_joins) {
  char bundle[512], args[1024];
  snprintf(bundle, sizeof bundle, "%s/collectives_torchrun.json", tmpdir());
  write_bundle(bundle, 2, 1);
  snprintf(args, sizeof args, "--hal=cpu --iters=1 --warmup=0 %s", bundle);
  setenv("RANK", "0", 1);
  setenv("LOCAL_RANK", "0", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
  setenv("WORLD_SIZE", "1", 1);
  cr_assert_eq(replay(args), 0, "%s", err_text);
  cr_assert(strstr(out_text, "1 succeeded, 0 failed, 19 unsupported"), "%s", out_text);
  setenv("WORLD_SIZE", "2", 1);
  cr_assert_eq(replay(args), 3, "%s%s", out_text, err_text);
  cr_assert(strstr(err_text, "rank 0 of 2 (torchrun): started by torchrun, which MPI cannot join"),
            "%s", err_text);
  cr_assert(strstr(err_text, "NCCL and RCCL join torchrun's ranks"), "%s", err_text);
}

Test(collectives, another_group_size_runs_only_when_asked_to_scale) {
  need_mpirun();
  char bundle[512], command[2048];
  snprintf(bundle, sizeof bundle, "%s/collectives_group4.json", tmpdir());
  write_bundle(bundle, 4, 1);
  snprintf(command, sizeof command,
           "mpirun --oversubscribe -np 2 tools/replay --hal=cpu --warmup=0 --iters=2 %s", bundle);
  cr_assert_eq(run(command, NULL), 0, "%s", output);
  cr_assert(strstr(output, "recorded with a group of 4 ranks, replayed on 2: "
                           "--scale-collectives"),
            "%s", output);
  cr_assert(strstr(output, "1 succeeded, 0 failed, 19 unsupported"), "%s", output);
  snprintf(command, sizeof command,
           "mpirun --oversubscribe -np 2 tools/replay --hal=cpu --warmup=0 --iters=2 --check "
           "--scale-collectives %s",
           bundle);
  cr_assert_eq(run(command, NULL), 0, "%s", output);
  /* All but the broadcast, whose recorded root is not among these ranks. */
  cr_assert(strstr(output, "19 succeeded, 0 failed, 1 unsupported"), "%s", output);
  cr_assert(strstr(output, "root 3 is not one of the 2 ranks"), "%s", output);
  /* --world-size-from-trace names the default, and the later of the two flags wins. */
  snprintf(command, sizeof command,
           "mpirun --oversubscribe -np 2 tools/replay --hal=cpu --warmup=0 --iters=2 "
           "--scale-collectives --world-size-from-trace %s",
           bundle);
  cr_assert_eq(run(command, NULL), 0, "%s", output);
  cr_assert(strstr(output, "1 succeeded, 0 failed, 19 unsupported"), "%s", output);
}

Test(collectives, ranks_with_different_bundles_fail_at_start) {
  need_mpirun();
  char a[512], b[512], command[2048];
  snprintf(a, sizeof a, "%s/collectives_a.json", tmpdir());
  snprintf(b, sizeof b, "%s/collectives_b.json", tmpdir());
  write_bundle(a, 2, 1);
  write_bundle(b, 2, 2);
  snprintf(command, sizeof command,
           "mpirun --oversubscribe -np 1 tools/replay --hal=cpu %s : -np 1 tools/replay "
           "--hal=cpu %s",
           a, b);
  double seconds;
  cr_assert_neq(run(command, &seconds), 0, "%s", output);
  cr_assert(strstr(output, "rank 1 replays other ops or options than rank 0"), "%s", output);
  cr_assert_lt(seconds, 60);
}

/* Runs the long bundle on 2 ranks, rank 1 stopped (SIGSTOP) `stop_after` into its start ("0":
 * before it starts), and kills the stopped process afterwards, whatever happened. */
static int run_with_a_stopped_rank(const char *stop_after, double *seconds) {
  char bundle[512], pid_file[512], command[4096];
  snprintf(bundle, sizeof bundle, "%s/collectives_long.json", tmpdir());
  snprintf(pid_file, sizeof pid_file, "%s/stopped.pid", tmpdir());
  write_bundle(bundle, 2, 4000);
  remove(pid_file);
  const char *replay = "tools/replay --hal=cpu --iters=400 --collective-timeout=2";
  if (!strcmp(stop_after, "0"))
    snprintf(command, sizeof command,
             "mpirun --oversubscribe -np 1 %s %s : -np 1 sh -c 'echo $$ > %s; kill -STOP $$; "
             "exec %s %s'",
             replay, bundle, pid_file, replay, bundle);
  else
    snprintf(command, sizeof command,
             "mpirun --oversubscribe -np 1 %s %s : -np 1 sh -c '%s %s >/dev/null & echo $! > %s; "
             "sleep %s; kill -STOP $!; wait'",
             replay, bundle, replay, bundle, pid_file, stop_after);
  int code = run(command, seconds);
  char pid_text[32] = "";
  slurp(pid_file, pid_text, sizeof pid_text);
  if (atoi(pid_text) > 0) kill(atoi(pid_text), SIGKILL);
  return code;
}

Test(collectives, a_rank_that_never_starts_ends_the_job_within_the_timeout) {
  need_mpirun();
  double seconds;
  int code = run_with_a_stopped_rank("0", &seconds);
  cr_assert_neq(code, 0, "%s", output);
  cr_assert_lt(seconds, 90, "took %.0f s", seconds);
  cr_assert(strstr(output, "rank 0 of 2 waited 2 s for the other ranks to join (mpirun)"), "%s",
            output);
  cr_assert(strstr(output, "ending this rank"), "%s", output);
}

Test(collectives, a_rank_that_stops_answering_ends_the_job_within_the_timeout) {
  need_mpirun();
  /* Rank 1 is stopped once it runs; rank 0 must give up after 2 s and end the job. On a busy
   * machine rank 1 may not have joined a second in (the test above covers that case): then it
   * is stopped later. */
  const char *stop_after[] = {"1", "3", "9"};
  double seconds = 0;
  int code = 0;
  for (size_t k = 0; k < sizeof stop_after / sizeof *stop_after; k++) {
    code = run_with_a_stopped_rank(stop_after[k], &seconds);
    if (!strstr(output, "for the other ranks to join")) break;
  }
  cr_assert_neq(code, 0, "%s", output);
  cr_assert_lt(seconds, 90, "took %.0f s", seconds);
  cr_assert(strstr(output, "rank 0 of 2 waited 2 s for the other ranks, in vain"), "%s", output);
  cr_assert(strstr(output, "ending every rank"), "%s", output);
}

Test(collectives, replay_devices_says_which_transports_load) {
  cr_assert_eq(replay("devices"), 0, "%s", err_text);
  cr_assert(strstr(out_text, "collectives: cpu, opencl: MPI: "), "%s", out_text);
  cr_assert(strstr(out_text, "; cuda: NCCL: ") && strstr(out_text, "; hip: RCCL: "), "%s",
            out_text);
}

Test(collectives, opencl_buffers_go_through_the_host_and_check_exactly_on_2_ranks) {
  need_mpirun();
  char bundle[512], command[2048];
  snprintf(bundle, sizeof bundle, "%s/collectives_opencl.json", tmpdir());
  write_bundle(bundle, 2, 1);
  snprintf(command, sizeof command,
           "mpirun --oversubscribe -np 2 tools/replay --hal=opencl --warmup=0 --iters=3 --check "
           "%s",
           bundle);
  int code = run(command, NULL);
  if (code == 3) cr_skip_test("no OpenCL device: %.300s", output);
  cr_assert_eq(code, 0, "exit %d:\n%s", code, output);
  cr_assert(strstr(output, "opencl.mpi"), "%s", output);
  /* Every collective on opencl; aten::mm too, unless its dtype has no opencl kernel. */
  cr_assert(strstr(output, "0 failed") && !strstr(output, "check failed"), "%s", output);
  const char *summary = strstr(output, "summary [opencl]: 20 of 20 ops attempted: ");
  cr_assert(summary, "%s", output);
  cr_assert(atoi(summary + strlen("summary [opencl]: 20 of 20 ops attempted: ")) >= 19, "%s",
            summary);
}
