/* Communicators over MPI for real: Debian's Open MPI (mpirun, which ./bazelw installs) starts 2,
 * 3 and 4 ranks of tests/hal/comm_ranks, which check every collective in every dtype exactly
 * (on 4, within groups of 2 too);
 * a rank that never joins, and one that dies, must end the job within the timeout with a
 * sentence saying so, not hang it. Skips say why where mpirun cannot run. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hal/hal.h"

#define RANKS_BINARY "tests/hal/comm_ranks"

static char output[1 << 16];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void need_mpirun(void) {
  if (system("command -v mpirun >/dev/null 2>&1") != 0)
    cr_skip_test("mpirun is not installed (Debian's openmpi-bin; ./bazelw installs it)");
}

/* Runs comm_ranks on `ranks` ranks with `mode` ("" or "hang" / "die"): its exit code, the
 * output in `output`, the seconds it took in *seconds. */
static int mpirun(int ranks, const char *mode, double *seconds) {
  char command[512];
  /* As root Open MPI wants both variables; --oversubscribe: more ranks than this machine's
   * cores. Under --config=asan the ranks skip the exit-time leak check: Open MPI leaves its
   * own allocations behind in components it has unloaded (unsymbolised frames no suppression
   * can name). The outer timeout only guards the test itself. */
  snprintf(command, sizeof command,
           "ASAN_OPTIONS=\"$ASAN_OPTIONS:detect_leaks=0\" "
           "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 mpirun "
           "--oversubscribe -np %d %s %s 2>&1",
           ranks, RANKS_BINARY, mode);
  double start = now_s();
  FILE *p = popen(command, "r");
  cr_assert(p, "popen");
  size_t n = fread(output, 1, sizeof output - 1, p);
  output[n] = '\0';
  int status = pclose(p);
  *seconds = now_s() - start;
  cr_log_info("%s\n%s", command, output);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void every_collective_exact(int ranks) {
  need_mpirun();
  double seconds;
  int code = mpirun(ranks, "", &seconds);
  cr_assert_eq(code, 0, "exit %d:\n%s", code, output);
  for (int r = 0; r < ranks; r++) {
    char line[96];
    snprintf(line, sizeof line, "rank %d of %d: 101 collectives, 0 failed", r, ranks);
    cr_assert(strstr(output, line), "no \"%s\" in:\n%s", line, output);
    /* Two kinds of groups of 2, 11 collectives in each. */
    snprintf(line, sizeof line, "rank %d of %d: 22 collectives in groups of 2, 0 failed", r, ranks);
    cr_assert(ranks < 4 || strstr(output, line), "no \"%s\" in:\n%s", line, output);
  }
}

Test(comm, every_collective_and_dtype_is_exact_on_2_ranks) {
  every_collective_exact(2);
}
Test(comm, every_collective_and_dtype_is_exact_on_3_ranks) {
  every_collective_exact(3);
}
Test(comm, every_collective_and_dtype_is_exact_on_4_ranks) {
  every_collective_exact(4);
}

Test(comm, a_rank_that_never_joins_fails_the_others_within_the_timeout) {
  need_mpirun();
  double seconds;
  int code = mpirun(3, "hang", &seconds);
  cr_assert_neq(code, 0, "the job ended well:\n%s", output);
  cr_assert_lt(seconds, 60, "took %.0f s", seconds); /* the ranks' timeout is 2 s */
  /* Ranks 0 and 1 both wait; whichever times out first aborts the job, so the other may never
   * get to say so. */
  cr_assert(strstr(output, "rank 0 of 3 waited 2 s for the other ranks") ||
                strstr(output, "rank 1 of 3 waited 2 s for the other ranks"),
            "%s", output);
  cr_assert_not(strstr(output, "rank 2 of 3 waited"), "%s", output);
}

Test(comm, a_rank_that_dies_ends_the_job) {
  need_mpirun();
  double seconds;
  int code = mpirun(3, "die", &seconds);
  cr_assert_neq(code, 0, "the job ended well:\n%s", output);
  cr_assert_lt(seconds, 60, "took %.0f s", seconds);
}

Test(comm, outside_a_launcher_there_is_no_communicator_and_the_reason_says_how_to_start) {
  /* The test itself runs without mpirun. */
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("PMIX_RANK");
  unsetenv("SLURM_STEP_ID");
  unsetenv("RANK");
  xr_hal_launch_t launch;
  xr_hal_launch_detect(&launch);
  cr_assert_not(launch.launched);
  xr_hal_device_t *device = NULL;
  cr_assert_eq(xr_hal_device_create("cpu", &device), XR_OK);
  xr_hal_comm_t *comm = NULL;
  cr_assert_eq(xr_hal_comm_create(device, 0, &comm), XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), "mpirun -np N"), "%s", xr_last_error());
  /* torchrun's variables are seen, and refused for MPI with the reason. */
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("LOCAL_RANK", "1", 1);
  xr_hal_launch_detect(&launch);
  cr_assert(launch.launched && !launch.mpi);
  cr_assert_eq(launch.rank, 1);
  cr_assert_eq(launch.size, 2);
  cr_assert_str_eq(launch.launcher, "torchrun");
  cr_assert_eq(xr_hal_comm_create(device, 0, &comm), XR_UNAVAILABLE);
  cr_assert(strstr(xr_last_error(), "torchrun, which MPI cannot join"), "%s", xr_last_error());
  xr_hal_device_destroy(device);
}

Test(comm, the_transports_report_says_what_loads) {
  char report[1024];
  xr_hal_comm_transports(report, sizeof report);
  cr_assert(strstr(report, "cpu, opencl: MPI: "), "%s", report);
  cr_assert(strstr(report, "; cuda: NCCL: ") && strstr(report, "; hip: RCCL: "), "%s", report);
}
