/* A real Slurm cluster: each test starts, as root, munged (with a key of its own), slurmctld and
 * slurmd for a one-node cluster configured in a directory of its own.
 * - A sharded replay: examples/slurm/submit.sh (replay.sbatch as a job array of 3 tasks, each
 *   `replay --shard=auto` on the cpu, then merge.sbatch depending on it); the merged report holds
 *   the ops of an unsharded run of the same bundle: the same ops, in the same order, each once,
 *   each from the shard whose report names it.
 * - srun as the launcher of MPI ranks (Slurm's mpi/pmix, Debian's Open MPI): comm_ranks' exact
 *   collectives on 4 ranks of one job step, and a replay whose ranks srun started.
 * They skip, saying why, where the daemons cannot start (not root, Debian's slurm-wlm and munge
 * absent, a daemon that does not come up), and stop every process they started, by the ids
 * they keep, whatever happens. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/tools/cli_util.h"

#define BUNDLE "examples/llm_small.msgpack"
#define OPTIONS "--hal=cpu --iters=1 --warmup=0"
#define SHARDS 3

/* The cluster this test runs: its directory and the daemons it started (0: none). */
static struct {
  char dir[64]; /* /tmp/xreplay-slurm.XXXXXX: munged wants every directory above its socket
                   searchable by all, which Bazel's test directory under /root is not */
  char conf[128];
  pid_t munged, slurmctld, slurmd;
  char jobs[64]; /* "ARRAY,MERGE" once submitted */
} cluster;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

/* The program's path in PATH or the sbin directories (root's daemons live there); NULL when it
 * is nowhere. */
static const char *find_program(const char *name, char *buf, size_t n) {
  char dirs[4096];
  snprintf(dirs, sizeof dirs, "%s:/usr/sbin:/sbin:/usr/bin:/bin:/usr/local/sbin:/usr/local/bin",
           getenv("PATH") ? getenv("PATH") : "");
  for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
    snprintf(buf, n, "%s/%s", d, name);
    if (access(buf, X_OK) == 0) return buf;
  }
  return NULL;
}

/* The last lines of a daemon's log, for a skip or a failure message. */
static const char *tail_of(const char *name, char *text, size_t n) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", cluster.dir, name);
  slurp(path, text, n);
  size_t len = strlen(text);
  return len > 1500 ? text + len - 1500 : text;
}

/* Starts argv in the foreground of a child that dies with this process (the kernel sends it
 * SIGTERM should the test be killed), its output in DIR/<log>. */
static pid_t start(const char *log, char *const argv[]) {
  pid_t parent = getpid();
  pid_t pid = fork();
  cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    char path[256];
    snprintf(path, sizeof path, "%s/%s", cluster.dir, log);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execv(argv[0], argv);
    _exit(127);
  }
  return pid;
}

static bool running(pid_t pid) {
  int status;
  return pid > 0 && waitpid(pid, &status, WNOHANG) == 0;
}

/* SIGTERM, then SIGKILL after 5 s; reaped. */
static void stop(pid_t *pid) {
  if (*pid <= 0) return;
  kill(*pid, SIGTERM);
  int status;
  double until = now_s() + 5;
  while (waitpid(*pid, &status, WNOHANG) == 0) {
    if (now_s() > until) {
      kill(*pid, SIGKILL);
      waitpid(*pid, &status, 0);
      break;
    }
    sleep_s(0.05);
  }
  *pid = 0;
}

/* Processes started under this one whose parent exited (slurmd's job steps), which come to
 * this process as the subreaper it made itself: stopped by their ids. */
static void stop_orphans(void) {
  char path[300], stat[512];
  for (int round = 0; round < 2; round++) {
    DIR *proc = opendir("/proc");
    if (!proc) return;
    struct dirent *e;
    while ((e = readdir(proc))) {
      pid_t pid = (pid_t)atoi(e->d_name);
      if (pid <= 0) continue;
      snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
      slurp(path, stat, sizeof stat);
      const char *close_paren = strrchr(stat, ')');
      int ppid = 0;
      if (close_paren && sscanf(close_paren + 2, "%*c %d", &ppid) == 1 && ppid == getpid()) {
        pid_t child = pid;
        stop(&child);
      }
    }
    closedir(proc);
  }
}

/* `command` with the cluster's SLURM_CONF, its output in `out` (n bytes). */
static int run(const char *command, char *out, size_t n) {
  char cmd[8192], path[256];
  snprintf(path, sizeof path, "%s/command.out", cluster.dir);
  snprintf(cmd, sizeof cmd, "%s >%s 2>&1", command, path);
  int status = system(cmd);
  slurp(path, out, n);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void teardown(void) {
  char out[4096];
  if (cluster.jobs[0] && running(cluster.slurmctld)) {
    char cmd[256];
    snprintf(cmd, sizeof cmd, "scancel %s", cluster.jobs);
    run(cmd, out, sizeof out);
    double until = now_s() + 5;
    snprintf(cmd, sizeof cmd, "squeue -h -j %s", cluster.jobs);
    while (now_s() < until && run(cmd, out, sizeof out) == 0 && out[0]) sleep_s(0.2);
  }
  stop(&cluster.slurmd);
  stop(&cluster.slurmctld);
  stop(&cluster.munged);
  stop_orphans();
  if (!strncmp(cluster.dir, "/tmp/xreplay-slurm.", 19) && !strchr(cluster.dir, '\'')) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cluster.dir);
    if (system(cmd) != 0) cr_log_info("could not remove %s", cluster.dir);
    cluster.dir[0] = '\0';
  }
}

/* Skips the test with the reason, on stderr too (Criterion's log shows a skip's reason only when
 * verbose), after stopping what it started (Criterion runs no .fini after a skip). */
static void skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void skip(const char *fmt, ...) {
  static char reason[1 << 15];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  teardown();
  fprintf(stderr, "slurm_test: skipped: %s\n", reason);
  cr_skip_test("%s", reason);
  abort(); /* not reached */
}

/* A TCP port nothing listens on now. */
static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
  socklen_t len = sizeof a;
  cr_assert(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
                getsockname(s, (struct sockaddr *)&a, &len) == 0,
            "no free port: %s", strerror(errno));
  close(s);
  return ntohs(a.sin_port);
}

static void write_file(const char *name, const char *text, mode_t mode) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", cluster.dir, name);
  write_text(path, text);
  chmod(path, mode);
}

/* munged, slurmctld and slurmd for a cluster of this machine alone; skips when they cannot
 * start. */
static void start_cluster(void) {
  if (geteuid() != 0)
    skip("starting munged, slurmctld and slurmd needs root (running as uid %d)", (int)geteuid());
  char munged[PATH_MAX], slurmctld[PATH_MAX], slurmd[PATH_MAX], any[PATH_MAX];
  const char *clients[] = {"sbatch", "squeue", "scontrol", "scancel", "sinfo", "srun"};
  if (!find_program("munged", munged, sizeof munged) ||
      !find_program("slurmctld", slurmctld, sizeof slurmctld) ||
      !find_program("slurmd", slurmd, sizeof slurmd))
    skip(
        "munged, slurmctld or slurmd is not installed (Debian's munge and slurm-wlm "
        "packages, which ./bazelw installs)");
  for (size_t k = 0; k < sizeof clients / sizeof *clients; k++)
    if (!find_program(clients[k], any, sizeof any))
      skip("%s is not installed (Debian's slurm-wlm package)", clients[k]);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  snprintf(cluster.dir, sizeof cluster.dir, "/tmp/xreplay-slurm.XXXXXX");
  cr_assert_not_null(mkdtemp(cluster.dir), "mkdtemp: %s", strerror(errno));
  chmod(cluster.dir, 0711);
  const char *d = cluster.dir;
  char path[256], text[8192];

  /* munged, with a key of its own. */
  snprintf(path, sizeof path, "%s/munge", d);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/munge.key", d);
  char key[1024];
  FILE *random = fopen("/dev/urandom", "rb");
  cr_assert(random && fread(key, 1, sizeof key, random) == sizeof key, "/dev/urandom");
  fclose(random);
  FILE *f = fopen(path, "wb");
  cr_assert(f && fwrite(key, 1, sizeof key, f) == sizeof key && fclose(f) == 0, "%s", path);
  chmod(path, 0400);
  char key_arg[300], socket_arg[300], pid_arg[300], log_arg[300], seed_arg[300];
  snprintf(key_arg, sizeof key_arg, "--key-file=%s/munge.key", d);
  snprintf(socket_arg, sizeof socket_arg, "--socket=%s/munge/munge.socket", d);
  snprintf(pid_arg, sizeof pid_arg, "--pid-file=%s/munged.pid", d);
  snprintf(log_arg, sizeof log_arg, "--log-file=%s/munged.log", d);
  snprintf(seed_arg, sizeof seed_arg, "--seed-file=%s/munged.seed", d);
  cluster.munged = start("munged.out", (char *[]){munged, "-F", key_arg, socket_arg, pid_arg,
                                                  log_arg, seed_arg, NULL});
  snprintf(path, sizeof path, "%s/munge/munge.socket", d);
  double until = now_s() + 10;
  while (access(path, F_OK) != 0 && running(cluster.munged) && now_s() < until) sleep_s(0.05);
  if (access(path, F_OK) != 0)
    skip("munged did not start within 10 s: %s", tail_of("munged.out", text, sizeof text));

  /* slurm.conf: this machine as its one node, as slurmd -C describes it. */
  char host[256] = "", node[1024] = "";
  gethostname(host, sizeof host - 1);
  host[strcspn(host, ".")] = '\0';
  snprintf(text, sizeof text, "%s -C", slurmd);
  run(text, node, sizeof node);
  node[strcspn(node, "\n")] = '\0';
  if (strncmp(node, "NodeName=", 9)) skip("slurmd -C does not describe this machine: %.300s", node);
  snprintf(cluster.conf, sizeof cluster.conf, "%s/slurm.conf", d);
  snprintf(text, sizeof text,
           "ClusterName=xreplaytest\n"
           "SlurmctldHost=%s(127.0.0.1)\n"
           "SlurmUser=root\nSlurmdUser=root\n"
           "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=%s/munge/munge.socket\n"
           "SlurmctldPort=%d\nSlurmdPort=%d\n"
           "StateSaveLocation=%s/state\nSlurmdSpoolDir=%s/spool\n"
           "SlurmctldPidFile=%s/slurmctld.pid\nSlurmdPidFile=%s/slurmd.pid\n"
           "SlurmctldLogFile=%s/slurmctld.log\nSlurmdLogFile=%s/slurmd.log\n"
           "PlugStackConfig=%s/plugstack.conf\n"
           "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
           "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
           "SchedulerType=sched/builtin\n"
           "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0\n"
           "ReturnToService=2\nMpiDefault=none\nSwitchType=switch/none\n"
           "JobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\n"
           "JobAcctGatherType=jobacct_gather/none\n"
           "%s NodeAddr=127.0.0.1 State=UNKNOWN\n"
           "PartitionName=fleet Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
           host, d, free_port(), free_port(), d, d, d, d, d, d, d, node);
  write_file("slurm.conf", text, 0644);
  write_file("plugstack.conf", "", 0644);
  snprintf(path, sizeof path, "%s/state", d);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/spool", d);
  mkdir(path, 0700);
  setenv("SLURM_CONF", cluster.conf, 1);
  cluster.slurmctld = start("slurmctld.out", (char *[]){slurmctld, "-D", "-f", cluster.conf, NULL});
  cluster.slurmd = start("slurmd.out", (char *[]){slurmd, "-D", "-f", cluster.conf, NULL});

  /* Up when the node is idle. */
  char state[4096] = "";
  until = now_s() + 30;
  while (now_s() < until && running(cluster.slurmctld) && running(cluster.slurmd)) {
    if (run("sinfo -h -o %t", state, sizeof state) == 0 && !strncmp(state, "idle", 4)) return;
    sleep_s(0.2);
  }
  char ctld[1 << 14];
  skip(
      "the one-node Slurm cluster did not come up (a daemon exited, or the node was not idle "
      "within 30 s; sinfo says \"%.100s\"): "
      "slurmctld: %s\nslurmd: %s",
      state, tail_of("slurmctld.out", ctld, sizeof ctld), tail_of("slurmd.out", text, sizeof text));
}

static double number(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItem(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static const char *str(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItem(o, key);
  return cJSON_IsString(v) ? v->valuestring : "";
}

/* Every job's output, for a failure message. */
static const char *job_outputs(const char *out_dir) {
  static char text[1 << 15];
  char cmd[512];
  snprintf(cmd, sizeof cmd, "tail -n 15 %s/slurm-*.out", out_dir);
  run(cmd, text, sizeof text);
  return text;
}

Test(slurm, a_job_array_of_shards_merges_into_the_unsharded_run, .fini = teardown, .timeout = 240) {
  double started = now_s();
  start_cluster();
  fprintf(stderr, "slurm_test: the cluster is up in %.1f s\n", now_s() - started);
  char out_dir[128], full[160], merged[160], cmd[8192], text[1 << 14], replay_path[PATH_MAX],
      bundle[PATH_MAX];
  snprintf(out_dir, sizeof out_dir, "%s/out", cluster.dir);
  snprintf(full, sizeof full, "%s/full.json", cluster.dir);
  snprintf(merged, sizeof merged, "%s/report.json", out_dir);
  cr_assert_not_null(realpath("tools/replay", replay_path), "tools/replay");
  cr_assert_not_null(realpath(BUNDLE, bundle), BUNDLE);

  /* What the shards must add up to: the unsharded run. */
  snprintf(cmd, sizeof cmd, OPTIONS " --report=%s %s", full, BUNDLE);
  cr_assert_eq(replay(cmd), 0, "%s", err_text);

  /* The array and the merge, as docs/fleet.md submits them; the node has no GPU to ask for. */
  setenv("XR_REPLAY", replay_path, 1);
  setenv("SBATCH_GPUS_PER_NODE", "0", 1);
  double submitted = now_s();
  snprintf(cmd, sizeof cmd, "examples/slurm/submit.sh %d %s %s " OPTIONS, SHARDS, bundle, out_dir);
  cr_assert_eq(run(cmd, text, sizeof text), 0, "submit.sh: %s", text);
  unsigned array = 0, merge = 0;
  const char *said = strstr(text, "array job ");
  cr_assert(said && sscanf(said, "array job %u (%*d shards), merge job %u", &array, &merge) == 2,
            "submit.sh said: %s", text);
  snprintf(cluster.jobs, sizeof cluster.jobs, "%u,%u", array, merge);

  /* Until both jobs have left the queue. */
  double until = now_s() + 150;
  snprintf(cmd, sizeof cmd, "squeue -h -j %s -o '%%i %%T %%r'", cluster.jobs);
  char queue[4096] = "";
  while (run(cmd, queue, sizeof queue) == 0 && queue[0]) {
    cr_assert_lt(now_s(), until, "jobs still queued after 150 s:\n%s\n%s", queue,
                 job_outputs(out_dir));
    sleep_s(0.25);
  }
  fprintf(stderr, "slurm_test: the jobs left the queue %.1f s after submit.sh\n",
          now_s() - submitted);
  snprintf(cmd, sizeof cmd, "scontrol -o show job %u", array);
  cr_assert_eq(run(cmd, text, sizeof text), 0, "%s", text);
  int tasks = 0;
  for (const char *p = text; (p = strstr(p, "JobState=")); p++, tasks++)
    cr_assert(!strncmp(p, "JobState=COMPLETED", 18), "an array task did not complete:\n%s\n%s",
              text, job_outputs(out_dir));
  cr_assert_eq(tasks, SHARDS, "%s", text);
  snprintf(cmd, sizeof cmd, "scontrol -o show job %u", merge);
  run(cmd, text, sizeof text);
  cr_assert(strstr(text, "JobState=COMPLETED"), "the merge job did not complete:\n%s\n%s", text,
            job_outputs(out_dir));

  /* Each task replayed its own shard. */
  for (int k = 0; k < SHARDS; k++) {
    char path[256];
    snprintf(path, sizeof path, "%s/report.%d.json", out_dir, k);
    cJSON *r = read_json(path);
    const cJSON *shard = cJSON_GetObjectItem(r, "shard");
    cr_assert_eq(number(shard, "index"), k, "%s: shard %g", path, number(shard, "index"));
    cr_assert_eq(number(shard, "count"), SHARDS);
    cJSON_Delete(r);
  }

  /* The merged report is the unsharded run's ops: same ones, same order, each once. */
  cJSON *m = read_json(merged), *f = read_json(full);
  const cJSON *mops = cJSON_GetObjectItem(m, "ops"), *fops = cJSON_GetObjectItem(f, "ops");
  int n = cJSON_GetArraySize(fops);
  cr_assert_gt(n, SHARDS);
  cr_assert_eq(cJSON_GetArraySize(mops), n);
  bool seen[256] = {false};
  int from[SHARDS] = {0};
  for (int i = 0; i < n; i++) {
    const cJSON *a = cJSON_GetArrayItem(mops, i), *b = cJSON_GetArrayItem(fops, i);
    int index = (int)number(a, "index");
    cr_assert_eq(index, (int)number(b, "index"), "ops[%d]", i);
    cr_assert(index >= 0 && index < 256 && !seen[index], "op %d twice", index);
    seen[index] = true;
    cr_assert_str_eq(str(a, "name"), str(b, "name"), "ops[%d]", i);
    cr_assert_str_eq(str(a, "outcome"), str(b, "outcome"), "ops[%d]", i);
    int shard = (int)number(a, "shard");
    cr_assert(shard >= 0 && shard < SHARDS, "ops[%d].shard %d", i, shard);
    from[shard]++;
  }
  for (int k = 0; k < SHARDS; k++) cr_assert_gt(from[k], 0, "shard %d gave no op", k);
  cr_assert_eq(number(cJSON_GetObjectItem(m, "merged"), "count"), SHARDS);
  cJSON_Delete(m);
  cJSON_Delete(f);
}

/* Job steps of MPI ranks: srun starts them through PMIx and MPI_Init joins them, no mpirun. */
Test(slurm, srun_starts_the_mpi_ranks_of_collectives, .fini = teardown, .timeout = 240) {
  start_cluster();
  char text[1 << 16], cmd[PATH_MAX + 1024], bundle[PATH_MAX];
  if (run("srun --mpi=list", text, sizeof text) != 0 || !strstr(text, "pmix"))
    skip("this Slurm has no mpi/pmix plugin (srun --mpi=list: %.300s)", text);
  /* More ranks than the node's cores (-O); under --config=asan the ranks skip the exit-time leak
   * check, as tests/hal:comm_test's do. */
  const char *step = "ASAN_OPTIONS=\"$ASAN_OPTIONS:detect_leaks=0\" timeout 120 srun --mpi=pmix -O";
  snprintf(cmd, sizeof cmd, "%s -n 4 tests/hal/comm_ranks", step);
  int code = run(cmd, text, sizeof text);
  cr_assert_eq(code, 0, "%s: exit %d:\n%s", cmd, code, text);
  for (int r = 0; r < 4; r++) {
    char line[96];
    snprintf(line, sizeof line, "rank %d of 4: 101 collectives, 0 failed", r);
    cr_assert(strstr(text, line), "no \"%s\" in:\n%s", line, text);
    snprintf(line, sizeof line, "rank %d of 4: 22 collectives in groups of 2, 0 failed", r);
    cr_assert(strstr(text, line), "no \"%s\" in:\n%s", line, text);
  }
  cr_assert_not_null(realpath("examples/allreduce_tp2.json", bundle));
  snprintf(cmd, sizeof cmd, "%s -n 2 tools/replay --hal=cpu --check --warmup=0 --iters=2 %s", step,
           bundle);
  code = run(cmd, text, sizeof text);
  fprintf(stderr, "slurm_test: %s:\n%s\n", cmd, text);
  cr_assert_eq(code, 0, "%s: exit %d:\n%s", cmd, code, text);
  cr_assert(strstr(text, "== 2 ranks (srun), MPI: "), "%s", text);
  cr_assert(strstr(text, " 0 failed, 0 unsupported"), "%s", text);
  cr_assert(strstr(text, "2 ranks, busbw"), "%s", text);
}
