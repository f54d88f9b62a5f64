/* A test-only LD_PRELOAD library: with XR_KILL_AT_WAL_WRITE=N in the environment, the process
 * is killed with SIGKILL in the middle of its N-th write to a SQLite WAL file (a "-wal" file),
 * half of that write done. SQLite writes a transaction's pages to the WAL and marks the last
 * one as the commit, so an early write is always inside a transaction: the history's test
 * (tests/tools/history_test.c) kills the real `replay --db` there, with nothing in the program
 * itself to help. SQLite's unix VFS writes with pwrite64, which this defines over libc's. */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static int wal_writes;

static bool is_wal(int fd) {
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  return n > 4 && !memcmp(path + n - 4, "-wal", 4);
}

static ssize_t write_at(int fd, const void *buf, size_t count, off_t offset) {
  const char *at = getenv("XR_KILL_AT_WAL_WRITE");
  if (at && is_wal(fd) && ++wal_writes == atoi(at)) {
    syscall(SYS_pwrite64, fd, buf, count / 2, offset); /* a torn write, as a crash leaves one */
    raise(SIGKILL);
  }
  return syscall(SYS_pwrite64, fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
  return write_at(fd, buf, count, offset);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
  return write_at(fd, buf, count, offset);
}
