/* One rank of tests/hal:comm_test, started by mpirun: every collective of hal.h in every dtype
 * on cpu buffers, each result checked exactly against the reduction this rank computes itself
 * from what every rank sent (values are small integers, so sums are exact in every dtype).
 * Prints one line per failure and "rank R of N: K collectives, F failed"; exits 1 on any failure.
 * On an even number of ranks (4 or more) it then splits them into groups of 2, adjacent
 * (tensor-parallel) and size/2 apart (data-parallel), checks each group's members, and runs the
 * collectives in each group: "rank R of N: K collectives in groups of 2, F failed".
 *
 * `comm_ranks hang` instead runs one allreduce on every rank but the last, which never joins:
 * the others must fail within the timeout, saying so. `comm_ranks die`: the last rank is killed
 * instead. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hal/hal.h"
#include "kernels/dtype.h"

static xr_hal_device_t *device;
static xr_hal_stream_t *stream;
static xr_hal_comm_t *comm;
static int rank, size, failures, done;

/* What rank `r` sends as element `i` (at most 9 in magnitude; bools: 0 or 1). */
static double sent(int r, size_t i, xr_dtype_t d) {
  if (d == XR_DTYPE_BOOL) return (i + (size_t)r) % 3 == 0;
  double v = (double)((i * 7 + (size_t)r * 3) % 10);
  return xr_dtype_class(d) == XR_DTYPE_CLASS_UNSIGNED ? v : v - 4;
}

/* The element `i` of the result on this rank. */
static double expected(xr_hal_collective_kind_t kind, size_t count, size_t i, xr_dtype_t d,
                       int root) {
  double sum = 0;
  switch (kind) {
    case XR_HAL_ALLREDUCE:
      for (int r = 0; r < size; r++) sum += sent(r, i, d);
      return d == XR_DTYPE_BOOL ? sum > 0 : sum;
    case XR_HAL_REDUCE_SCATTER: /* this rank's part of the sum */
      for (int r = 0; r < size; r++) sum += sent(r, (size_t)rank * count + i, d);
      return d == XR_DTYPE_BOOL ? sum > 0 : sum;
    case XR_HAL_ALLGATHER: return sent((int)(i / count), i % count, d);
    case XR_HAL_BROADCAST: return sent(root, i, d);
    case XR_HAL_ALLTOALL: /* block j came from rank j: its block for this rank */
      return sent((int)(i / count), (size_t)rank * count + i % count, d);
    default: return 0;
  }
}

static const char *kind_names[] = {"allreduce", "allgather", "reduce_scatter",
                                   "broadcast", "alltoall",  "barrier"};

static void check(xr_hal_collective_kind_t kind, xr_dtype_t d, size_t count, bool in_place) {
  size_t n = (size_t)size, element = xr_dtype_size(d);
  size_t send_n = count, recv_n = count;
  if (kind == XR_HAL_ALLGATHER) recv_n *= n;
  if (kind == XR_HAL_REDUCE_SCATTER) send_n *= n;
  if (kind == XR_HAL_ALLTOALL) send_n *= n, recv_n *= n;
  int root = size - 1;
  size_t bytes = (send_n > recv_n ? send_n : recv_n) * element + 16; /* a barrier has none */
  xr_hal_buffer_t *send = NULL, *recv = NULL;
  void *s, *r;
  xr_hal_buffer_alloc(device, bytes, &send);
  xr_hal_buffer_alloc(device, bytes, &recv);
  xr_hal_buffer_host_pointer(send, &s);
  xr_hal_buffer_host_pointer(recv, &r);
  memset(r, 0x7f, bytes);
  for (size_t i = 0; i < send_n; i++) xr_store_element(s, d, (int64_t)i, sent(rank, i, d));
  if (in_place) memcpy(r, s, bytes);
  if (in_place && kind == XR_HAL_ALLGATHER) /* the contribution sits in this rank's slot */
    for (size_t i = 0; i < count; i++)
      xr_store_element(r, d, (int64_t)(rank * count + i), sent(rank, i, d));
  xr_hal_collective_params_t p = {.kind = kind,
                                  .dtype = d,
                                  .count = count,
                                  .send = in_place ? recv : send,
                                  .recv = recv,
                                  .root = root};
  xr_hal_collective_t *c = NULL;
  xr_status_t st = xr_hal_collective_create(comm, &p, &c);
  if (st == XR_OK) st = xr_hal_stream_collective(stream, c);
  if (st == XR_OK) st = xr_hal_stream_synchronize(stream);
  if (st == XR_OK) st = xr_hal_comm_status(comm);
  const char *what = kind_names[kind];
  if (st != XR_OK) {
    printf("rank %d: %s %s%s: %s\n", rank, what, xr_dtype_short_name(d),
           in_place ? " in place" : "", xr_last_error());
    failures++;
  } else {
    for (size_t i = 0; i < recv_n; i++) {
      double want = expected(kind, count, i, d, root), got = xr_load_element(r, d, (int64_t)i);
      if (got != want) {
        printf("rank %d: %s %s%s: element %zu is %g, expected %g\n", rank, what,
               xr_dtype_short_name(d), in_place ? " in place" : "", i, got, want);
        failures++;
        break;
      }
    }
  }
  done++;
  xr_hal_collective_destroy(c);
  xr_hal_buffer_free(send);
  xr_hal_buffer_free(recv);
}

/* The collectives again within groups of 2: `comm`, `rank` and `size` become the group's. */
static void in_groups_of_2(void) {
  xr_hal_comm_t *world = comm;
  int world_rank = rank, world_size = size, world_failures = failures;
  done = failures = 0;
  for (int stride = 1; stride <= world_size / 2; stride *= world_size / 2) {
    xr_hal_comm_t *group = NULL;
    if (xr_hal_comm_group(world, 2, stride, &group) != XR_OK) {
      printf("rank %d: groups of 2, %d apart: %s\n", world_rank, stride, xr_last_error());
      failures++;
      continue;
    }
    /* Its members: this rank and the one `stride` away within its block of 2 x stride. */
    int members[2] = {-1, -1}, first = world_rank - (world_rank / stride % 2) * stride;
    if (xr_hal_comm_host_allgather(group, &world_rank, sizeof world_rank, members) != XR_OK ||
        members[0] != first || members[1] != first + stride ||
        xr_hal_comm_find_group(world, 2, stride) != group) {
      printf("rank %d: groups of 2, %d apart: members %d, %d, expected %d, %d (%s)\n", world_rank,
             stride, members[0], members[1], first, first + stride, xr_last_error());
      failures++;
    }
    comm = group;
    rank = xr_hal_comm_rank(group);
    size = xr_hal_comm_size(group);
    for (int kind = XR_HAL_ALLREDUCE; kind <= XR_HAL_ALLTOALL; kind++) {
      check((xr_hal_collective_kind_t)kind, XR_DTYPE_BF16, 500, false);
      check((xr_hal_collective_kind_t)kind, XR_DTYPE_F32, 3, true);
    }
    check(XR_HAL_BARRIER, XR_DTYPE_F32, 0, false);
    comm = world, rank = world_rank, size = world_size;
  }
  printf("rank %d of %d: %d collectives in groups of 2, %d failed\n", rank, size, done, failures);
  failures += world_failures;
}

int main(int argc, char **argv) {
  bool die = argc > 1 && !strcmp(argv[1], "die");
  bool hang = die || (argc > 1 && !strcmp(argv[1], "hang"));
  if (xr_hal_device_create("cpu", &device) != XR_OK ||
      xr_hal_stream_create(device, &stream) != XR_OK ||
      xr_hal_comm_create(device, hang ? 2000 : 60000, &comm) != XR_OK) {
    printf("setup: %s\n", xr_last_error());
    return 2;
  }
  rank = xr_hal_comm_rank(comm);
  size = xr_hal_comm_size(comm);
  if (hang) {
    if (rank == size - 1) {
      if (die) raise(SIGKILL);
      /* Never joins; waits for the others' abort to end the job. */
      for (;;) pause();
    }
    xr_hal_buffer_t *b = NULL;
    xr_hal_buffer_alloc(device, 64, &b);
    xr_hal_collective_params_t p = {
        .kind = XR_HAL_ALLREDUCE, .dtype = XR_DTYPE_F32, .count = 16, .send = b, .recv = b};
    xr_hal_collective_t *c = NULL;
    xr_hal_collective_create(comm, &p, &c);
    xr_hal_stream_collective(stream, c);
    xr_hal_stream_synchronize(stream);
    if (xr_hal_comm_status(comm) != XR_OK) printf("rank %d: %s\n", rank, xr_last_error());
    fflush(stdout);
    xr_hal_comm_abort(comm, 3);
  }
  const xr_dtype_t dtypes[] = {XR_DTYPE_F32, XR_DTYPE_F64, XR_DTYPE_BF16, XR_DTYPE_F16,
                               XR_DTYPE_I8,  XR_DTYPE_I16, XR_DTYPE_I32,  XR_DTYPE_I64,
                               XR_DTYPE_U8,  XR_DTYPE_BOOL};
  for (size_t k = 0; k < sizeof dtypes / sizeof *dtypes; k++) {
    for (int kind = XR_HAL_ALLREDUCE; kind <= XR_HAL_ALLTOALL; kind++) {
      check((xr_hal_collective_kind_t)kind, dtypes[k], 1000 + (size_t)k, false);
      check((xr_hal_collective_kind_t)kind, dtypes[k], 3, true);
    }
  }
  check(XR_HAL_BARRIER, XR_DTYPE_F32, 0, false);
  /* Host agreement: every rank's number, in rank order. */
  int mine = 100 + rank, all[64] = {0};
  if (size <= 64 && (xr_hal_comm_host_allgather(comm, &mine, sizeof mine, all) != XR_OK ||
                     all[size - 1] != 100 + size - 1)) {
    printf("rank %d: host allgather: %s\n", rank, xr_last_error());
    failures++;
  }
  printf("rank %d of %d: %d collectives, %d failed\n", rank, size, done, failures);
  if (size >= 4 && size % 2 == 0) in_groups_of_2();
  xr_hal_comm_destroy(comm);
  xr_hal_stream_destroy(stream);
  xr_hal_device_destroy(device);
  return failures ? 1 : 0;
}
