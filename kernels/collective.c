/* Collectives: the communication ops of multi-GPU traces, replayed across the ranks a launcher
 * started (hal.h "Communicators").
 *
 * Ops, and what each sends and receives (sums are the reduction; c10d's ReduceOp is not
 * recorded):
 *   record_param_comms(input=, output=, collective=, group_size=, rank=)   what Kineto records
 *       around every c10d collective, extracted with its "Collective name"
 *       (formats/trace_comms.c); rank= is the root of a broadcast
 *   c10d::allreduce_(tensors, ...), c10d::broadcast_(tensors, ..., root_rank), c10d::barrier,
 *   c10d::_allgather_base_(output_tensor, input_tensor), c10d::_reduce_scatter_base_(output_
 *   tensor, input_tensor), c10d::alltoall_base_(output, input, ..., output_split_sizes,
 *   input_split_sizes) and the list forms allgather_ / reduce_scatter_ / alltoall_ with one
 *   tensor a rank; vLLM's symm_mem::multimem_all_reduce_(input), _C_custom_ar::all_reduce(fa,
 *   inp, out, ...) and vllm::all_reduce(tensor) -> Tensor, all as all-reduces of their size.
 * The group size comes from group_size= (record_param_comms; extraction adds the trace's world
 * size to the others), else from the ranks at hand. A group of one runs alone as a copy; a
 * larger one needs as many ranks (plan->comm), or a world it tiles: with group_stride= (the
 * recorded "Global rank stride", 1 when absent) the ranks split into such groups (hal.h
 * xr_hal_comm_group, made by the caller first, xr_kernel_collective_group) and each runs the
 * collective in its own, all at once. Else plan->scale_collectives keeps each rank's message
 * and changes the group to the ranks at hand.
 *
 * Data: the initializer fills what each rank sends with small integers from its rank, so the
 * reference computes every rank's result by itself, exactly, without communicating. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/family.h"

static const char *const collective_ops[] = {"record_param_comms",
                                             "c10d::allreduce_",
                                             "c10d::allgather_",
                                             "c10d::_allgather_base_",
                                             "c10d::reduce_scatter_",
                                             "c10d::_reduce_scatter_base_",
                                             "c10d::broadcast_",
                                             "c10d::alltoall_",
                                             "c10d::alltoall_base_",
                                             "c10d::barrier",
                                             "symm_mem::multimem_all_reduce_",
                                             "_C_custom_ar::all_reduce",
                                             "vllm::all_reduce",
                                             NULL};

typedef struct collective_problem {
  xr_hal_collective_kind_t kind;
  xr_dtype_t dtype;
  int64_t group;  /* ranks the trace's group had; 0: not recorded */
  int64_t stride; /* their distance in the world: 1, or -1 when not evenly spaced */
  int64_t root;
  int send, recv;                       /* binding indices (-1: none, a barrier) */
  int64_t send_elements, recv_elements; /* what those tensors hold */
} collective_problem_t;

/* ------------------------------------------------------------------------------------------ */
/* planning                                                                                    */

static const struct {
  const char *name;
  xr_hal_collective_kind_t kind;
} recorded_names[] = {
    {"allreduce", XR_HAL_ALLREDUCE},
    {"all_reduce", XR_HAL_ALLREDUCE},
    {"allreduce_coalesced", XR_HAL_ALLREDUCE},
    {"allgather", XR_HAL_ALLGATHER},
    {"all_gather", XR_HAL_ALLGATHER},
    {"_allgather_base", XR_HAL_ALLGATHER},
    {"allgather_into_tensor_coalesced", XR_HAL_ALLGATHER},
    {"all_gather_into_tensor", XR_HAL_ALLGATHER},
    {"reduce_scatter", XR_HAL_REDUCE_SCATTER},
    {"_reduce_scatter_base", XR_HAL_REDUCE_SCATTER},
    {"reduce_scatter_tensor", XR_HAL_REDUCE_SCATTER},
    {"reduce_scatter_tensor_coalesced", XR_HAL_REDUCE_SCATTER},
    {"broadcast", XR_HAL_BROADCAST},
    {"all_to_all", XR_HAL_ALLTOALL},
    {"all_to_allv", XR_HAL_ALLTOALL},
    {"alltoall", XR_HAL_ALLTOALL},
    {"alltoall_base", XR_HAL_ALLTOALL},
    {"barrier", XR_HAL_BARRIER},
};

/* The first tensor of a value (a tensor, or a list of them, nested) and how many there are. */
static const xr_tensor_spec_t *first_tensor(const xr_value_t *v, int *count) {
  if (!v) return NULL;
  if (v->kind == XR_VALUE_TENSOR) {
    (*count)++;
    return v->as.tensor;
  }
  if (v->kind != XR_VALUE_LIST) return NULL;
  const xr_tensor_spec_t *first = NULL;
  for (size_t i = 0; i < v->as.list.count; i++) {
    const xr_tensor_spec_t *t = first_tensor(&v->as.list.items[i], count);
    if (!first) first = t;
  }
  return first;
}

/* One side of the collective: the single tensor of argument `name` (or `position`). */
static xr_status_t side(xr_op_plan_t *plan, int position, const char *name, int *out_index) {
  int count = 0;
  const xr_tensor_spec_t *t = first_tensor(xr_op_arg(plan->op, position, name), &count);
  if (!t) return xr_plan_error(plan, "%s: a tensor is missing", name);
  if (count > 1)
    return xr_error(XR_UNIMPLEMENTED,
                    "%s: %s: %d tensors in one collective (a list per rank, or coalesced): "
                    "replayed as the record_param_comms op inside it (extract without "
                    "--outermost)",
                    plan->op->name, name, count);
  if (!xr_tensor_is_contiguous(t))
    return xr_error(XR_UNIMPLEMENTED,
                    "%s: %s: a strided view; collectives send contiguous "
                    "tensors",
                    plan->op->name, name);
  *out_index = xr_plan_input_index(plan, t);
  return XR_OK;
}

static xr_status_t parse(xr_op_plan_t *plan, collective_problem_t *p) {
  const xr_op_t *op = plan->op;
  const char *n = op->name;
  xr_status_t st = XR_OK;
  p->send = p->recv = -1;
  p->kind = XR_HAL_ALLREDUCE;
  if (!strcmp(n, "record_param_comms")) {
    const char *name = NULL;
    if ((st = xr_arg_string(op, -1, "collective", true, &name))) return st;
    size_t k = 0, count = sizeof recorded_names / sizeof *recorded_names;
    while (k < count && strcmp(recorded_names[k].name, name)) k++;
    if (k == count)
      return xr_error(XR_UNIMPLEMENTED, "record_param_comms: collective '%s' is not replayed",
                      name);
    p->kind = recorded_names[k].kind;
    if ((st = xr_arg_int(op, -1, "rank", false, &p->root))) return st;
    if (p->kind == XR_HAL_BARRIER) return XR_OK;
    if ((st = side(plan, -1, "input", &p->send)) || (st = side(plan, -1, "output", &p->recv)))
      return st;
    if (p->kind != XR_HAL_BROADCAST) p->root = 0;
  } else if (!strcmp(n, "c10d::barrier")) {
    p->kind = XR_HAL_BARRIER;
    return XR_OK;
  } else if (!strcmp(n, "c10d::allreduce_") || !strcmp(n, "c10d::broadcast_")) {
    p->kind = n[6] == 'b' ? XR_HAL_BROADCAST : XR_HAL_ALLREDUCE;
    if ((st = side(plan, 0, "tensors", &p->send))) return st;
    p->recv = p->send;
    if (p->kind == XR_HAL_BROADCAST && (st = xr_arg_int(op, 2, "root_rank", false, &p->root)))
      return st;
  } else if (strstr(n, "allgather") || strstr(n, "reduce_scatter") || strstr(n, "alltoall")) {
    p->kind = strstr(n, "allgather")        ? XR_HAL_ALLGATHER
              : strstr(n, "reduce_scatter") ? XR_HAL_REDUCE_SCATTER
                                            : XR_HAL_ALLTOALL;
    bool base = strstr(n, "base") != NULL;
    bool all_to_all_base = !strcmp(n, "c10d::alltoall_base_");
    if ((st = side(plan, 0,
                   all_to_all_base ? "output"
                   : base          ? "output_tensor"
                                   : "output_tensors",
                   &p->recv)) ||
        (st = side(plan, 1,
                   all_to_all_base ? "input"
                   : base          ? "input_tensor"
                                   : "input_tensors",
                   &p->send)))
      return st;
    for (int k = 0; all_to_all_base && k < 2; k++) {
      int64_t splits[64];
      int count = 0;
      if ((st = xr_arg_int_list(op, 3 + k, k ? "input_split_sizes" : "output_split_sizes", false,
                                splits, 64, &count)))
        return st;
      for (int i = 1; i < count; i++)
        if (splits[i] != splits[0])
          return xr_error(XR_UNIMPLEMENTED,
                          "%s: uneven split sizes (all_to_allv) are not "
                          "replayed",
                          n);
    }
  } else if (!strcmp(n, "symm_mem::multimem_all_reduce_")) {
    const char *reduce = NULL;
    if ((st = side(plan, 0, "input", &p->send)) ||
        (st = xr_arg_string(op, 1, "reduce_op", false, &reduce)))
      return st;
    if (reduce && strcmp(reduce, "sum"))
      return xr_error(XR_UNIMPLEMENTED, "%s: reduce_op '%s': only sums are replayed", n, reduce);
    p->recv = p->send;
  } else if (!strcmp(n, "_C_custom_ar::all_reduce")) {
    if ((st = side(plan, 1, "inp", &p->send)) || (st = side(plan, 2, "out", &p->recv))) return st;
  } else { /* vllm::all_reduce(tensor) -> Tensor */
    if ((st = side(plan, 0, "tensor", &p->send))) return st;
    p->recv = (int)plan->input_count; /* the return */
  }
  return XR_OK;
}

static xr_status_t analyze(xr_op_plan_t *plan) {
  collective_problem_t *p = calloc(1, sizeof *p);
  if (!p) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory planning %s", plan->op->name);
  plan->problem = p;
  xr_status_t st = parse(plan, p);
  if (st == XR_OK) st = xr_arg_int(plan->op, -1, "group_size", false, &p->group);
  p->stride = 1;
  if (st == XR_OK) st = xr_arg_int(plan->op, -1, "group_stride", false, &p->stride);
  if (st != XR_OK) return st;
  if (p->group < 0 || p->group > 1 << 20)
    return xr_plan_error(plan, "group_size: %lld ranks", (long long)p->group);
  if (p->stride < -1 || p->stride > 1 << 20)
    return xr_plan_error(plan, "group_stride: %lld (-1: not evenly spaced, else 0 or more)",
                         (long long)p->stride);
  if (p->stride == 0) p->stride = 1; /* torch's for a group of one */
  plan->collective = true;
  plan->collective_kind = p->kind;
  plan->flops = 0;
  if (p->kind == XR_HAL_BARRIER) return XR_OK;
  const xr_tensor_spec_t *send = plan->inputs[p->send];
  p->dtype = send->dtype;
  p->send_elements = xr_spec_numel(send);
  if (p->recv == (int)plan->input_count) {
    xr_desc_set(&plan->returns[0], send->dtype, send->rank, send->shape);
    plan->return_count = 1;
    p->recv_elements = p->send_elements;
  } else {
    const xr_tensor_spec_t *recv = plan->inputs[p->recv];
    if (recv->dtype != send->dtype)
      return xr_plan_error(plan, "the output is %s, the input %s: a collective keeps the dtype",
                           xr_dtype_short_name(recv->dtype), xr_dtype_short_name(send->dtype));
    p->recv_elements = xr_spec_numel(recv);
    xr_plan_mark_written(plan, p->recv);
  }
  int64_t s = p->send_elements, r = p->recv_elements, g = p->group;
  bool same =
      p->kind == XR_HAL_ALLREDUCE || p->kind == XR_HAL_BROADCAST || p->kind == XR_HAL_ALLTOALL;
  if (same && s != r)
    return xr_plan_error(plan,
                         "input of %lld elements, output of %lld: this collective keeps "
                         "the size",
                         (long long)s, (long long)r);
  if (g > 0 &&
      ((p->kind == XR_HAL_ALLGATHER && r != s * g) ||
       (p->kind == XR_HAL_REDUCE_SCATTER && s != r * g) || (p->kind == XR_HAL_ALLTOALL && s % g)))
    return xr_plan_error(plan,
                         "input of %lld elements and output of %lld do not fit a group of "
                         "%lld",
                         (long long)s, (long long)r, (long long)g);
  if (p->kind == XR_HAL_BROADCAST && g > 0 && (p->root < 0 || p->root >= g))
    return xr_plan_error(plan, "root %lld outside the group of %lld", (long long)p->root,
                         (long long)g);
  plan->bytes = xr_kernel_collective_bytes(plan, g > 0 ? (int)g : 1);
  return XR_OK;
}

/* Elements a rank sends per collective call on `ranks` ranks (hal.h's count). */
static int64_t count_on(const collective_problem_t *p, int64_t ranks) {
  switch (p->kind) {
    case XR_HAL_ALLGATHER: return p->send_elements;
    case XR_HAL_REDUCE_SCATTER: return p->recv_elements;
    case XR_HAL_ALLTOALL: return p->send_elements / (p->group > 0 ? p->group : ranks);
    case XR_HAL_BARRIER: return 0;
    default: return p->send_elements;
  }
}

double xr_kernel_collective_bytes(const xr_op_plan_t *plan, int ranks) {
  if (!plan->collective || !plan->problem) return 0;
  const collective_problem_t *p = plan->problem;
  double count = (double)count_on(p, ranks), element = (double)xr_dtype_size(p->dtype);
  switch (p->kind) {
    case XR_HAL_ALLGATHER:
    case XR_HAL_REDUCE_SCATTER:
    case XR_HAL_ALLTOALL: return count * ranks * element;
    default: return count * element;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* data                                                                                        */

/* What rank `r` sends as element `i`: small integers, whose sums over ranks are exact in every
 * dtype (bools: 0 or 1; integer sums wrap as the transports' do). */
static double sent(int64_t r, int64_t i, xr_dtype_t d) {
  if (d == XR_DTYPE_BOOL) return (i + r) % 3 == 0;
  double v = (double)((i * 7 + r * 3) % 10);
  return xr_dtype_is_unsigned(d) ? v : v - 4;
}

/* Whether the recorded group is one of the groups the world at hand splits into: smaller,
 * evenly spaced, and tiling it. */
static bool splits_world(const collective_problem_t *p, int64_t world) {
  return p->group > 1 && p->group < world && p->stride >= 1 && world % (p->group * p->stride) == 0;
}

bool xr_kernel_collective_group(const xr_op_plan_t *plan, int *out_size, int *out_stride) {
  const collective_problem_t *p = plan->collective ? plan->problem : NULL;
  if (!p || !plan->comm || !splits_world(p, xr_hal_comm_size(plan->comm))) return false;
  *out_size = (int)p->group;
  *out_stride = (int)p->stride;
  return true;
}

/* The communicator the collective runs on: its group's when the world splits into them (once
 * made), else the world; NULL alone. */
static xr_hal_comm_t *comm_of(const xr_op_plan_t *plan) {
  int size, stride;
  if (xr_kernel_collective_group(plan, &size, &stride))
    return xr_hal_comm_find_group(plan->comm, size, stride);
  return plan->comm;
}

static int rank_of(const xr_op_plan_t *plan) {
  xr_hal_comm_t *c = comm_of(plan);
  return c ? xr_hal_comm_rank(c) : 0;
}
/* Its group's size (made or not yet: planning may come first), else the world's. */
static int ranks_of(const xr_op_plan_t *plan) {
  int size, stride;
  if (xr_kernel_collective_group(plan, &size, &stride)) return size;
  return plan->comm ? xr_hal_comm_size(plan->comm) : 1;
}

int xr_kernel_collective_ranks(const xr_op_plan_t *plan) {
  return ranks_of(plan);
}

static xr_status_t initialize(xr_init_context_t *c) {
  const collective_problem_t *p = c->plan->problem;
  if (p->kind == XR_HAL_BARRIER || c->has_data[p->send]) return XR_OK;
  int64_t rank = rank_of(c->plan), offset = c->plan->inputs[p->send]->storage_offset;
  for (int64_t i = 0; i < p->send_elements; i++)
    xr_store_element(c->host[p->send], p->dtype, offset + i, sent(rank, i, p->dtype));
  snprintf(c->policy, c->policy_size, "input: small integers from rank %lld's number",
           (long long)rank);
  return XR_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* implementations                                                                             */

/* Whether the problem fits the ranks at hand; `carried`: and the communicator reaches the
 * device's buffers (the reference, which does not communicate, needs not). */
static xr_status_t fits_ranks(const xr_op_plan_t *plan, xr_hal_device_t *device, bool carried) {
  const collective_problem_t *p = plan->problem;
  xr_hal_device_properties_t props;
  xr_status_t st = xr_hal_device_properties(device, &props);
  if (st != XR_OK) return st;
  if (carried && plan->comm && !xr_hal_comm_serves(plan->comm, device))
    return xr_error(XR_UNIMPLEMENTED, "the ranks' communicator (%s) does not carry %s buffers",
                    xr_hal_comm_transport(plan->comm), props.driver);
  int64_t world = plan->comm ? xr_hal_comm_size(plan->comm) : 1;
  int64_t g = p->group > 0 ? p->group : world;
  if (!(plan->comm && splits_world(p, world)) && g != world && !plan->scale_collectives) {
    if (!plan->comm)
      return xr_error(XR_UNIMPLEMENTED,
                      "a collective of a group of %lld ranks; this replay is one "
                      "process: start %lld ranks with mpirun -np %lld or srun -n "
                      "%lld (docs/collectives.md)",
                      (long long)g, (long long)g, (long long)g, (long long)g);
    char why[160] = "";
    if (g < world && p->stride < 0)
      snprintf(why, sizeof why,
               " (the group's ranks are not evenly spaced, so which ranks "
               "form the other groups is unknown)");
    else if (g < world)
      snprintf(why, sizeof why, " (groups of %lld ranks, %lld apart, do not tile %lld)",
               (long long)g, (long long)p->stride, (long long)world);
    return xr_error(XR_UNIMPLEMENTED,
                    "recorded with a group of %lld ranks, replayed on %lld%s: "
                    "--scale-collectives runs it on these keeping each rank's "
                    "message",
                    (long long)g, (long long)world, why);
  }
  int64_t n = ranks_of(plan);
  if (p->kind == XR_HAL_BARRIER) return XR_OK;
  size_t send_need, recv_need;
  xr_hal_collective_elements(p->kind, (size_t)count_on(p, n), (int)n, &send_need, &recv_need);
  if (send_need > (size_t)p->send_elements || recv_need > (size_t)p->recv_elements)
    return xr_error(XR_UNIMPLEMENTED,
                    "on %lld ranks it needs %zu elements to send and %zu to "
                    "receive; the recorded tensors hold %lld and %lld",
                    (long long)n, send_need, recv_need, (long long)p->send_elements,
                    (long long)p->recv_elements);
  if (p->kind == XR_HAL_BROADCAST && p->root >= n)
    return xr_error(XR_UNIMPLEMENTED, "root %lld is not one of the %lld ranks", (long long)p->root,
                    (long long)n);
  return XR_OK;
}

static xr_status_t supports_reference(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  return fits_ranks(plan, device, false);
}

static xr_status_t supports_mpi(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  xr_status_t st = fits_ranks(plan, device, true);
  if (st == XR_OK && !plan->comm)
    return xr_error(XR_UNIMPLEMENTED, "a group of one, run alone (no launcher)");
  return st;
}

static xr_status_t supports_alone(const xr_op_plan_t *plan, xr_hal_device_t *device) {
  xr_status_t st = fits_ranks(plan, device, true);
  if (st == XR_OK && plan->comm)
    return xr_error(XR_UNIMPLEMENTED, "ranks are at hand: their communicator runs it");
  return st;
}

typedef struct collective_state {
  const xr_op_plan_t *plan;
  xr_hal_comm_t *comm;
  xr_hal_collective_t *collective, *barrier;
  xr_hal_buffer_t *send_buffer, *recv_buffer;
  size_t send_offset, recv_offset; /* bytes */
  void *send, *recv; /* host addresses of the first element (alone and reference) */
  int64_t count, ranks, rank;
} collective_state_t;

static void release(void *state) {
  collective_state_t *s = state;
  if (!s) return;
  xr_hal_collective_destroy(s->collective);
  xr_hal_collective_destroy(s->barrier);
  free(s);
}

static xr_status_t bind(const xr_op_plan_t *plan, const xr_tensor_t *tensors,
                        collective_state_t **out) {
  const collective_problem_t *p = plan->problem;
  collective_state_t *s = calloc(1, sizeof *s);
  if (!s) return xr_error(XR_RESOURCE_EXHAUSTED, "out of memory preparing %s", plan->op->name);
  s->plan = plan;
  s->comm = comm_of(plan);
  s->ranks = ranks_of(plan);
  s->rank = rank_of(plan);
  s->count = count_on(p, s->ranks);
  xr_status_t st = XR_OK;
  if (p->kind != XR_HAL_BARRIER) {
    size_t e = xr_dtype_size(p->dtype);
    s->send_buffer = tensors[p->send].buffer;
    s->recv_buffer = tensors[p->recv].buffer;
    s->send_offset = (size_t)tensors[p->send].offset * e;
    s->recv_offset = (size_t)tensors[p->recv].offset * e;
    char *send, *recv; /* opencl buffers have none */
    if (xr_tensor_host(&tensors[p->send], (void **)&send) == XR_OK &&
        xr_tensor_host(&tensors[p->recv], (void **)&recv) == XR_OK) {
      s->send = send + s->send_offset;
      s->recv = recv + s->recv_offset;
    }
  }
  if (st != XR_OK) {
    free(s);
    return st;
  }
  *out = s;
  return XR_OK;
}

static xr_status_t mpi_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                               const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  const collective_problem_t *p = plan->problem;
  collective_state_t *s;
  xr_status_t st = bind(plan, tensors, &s);
  if (st != XR_OK) return st;
  if (!s->comm) {
    release(s);
    return xr_error(XR_INVALID_ARGUMENT,
                    "%s: its process groups were not made first (xr_hal_comm_group, which "
                    "xr_replay_run calls)",
                    plan->op->name);
  }
  xr_hal_collective_params_t params = {
      .kind = p->kind, .dtype = p->dtype, .count = (size_t)s->count, .root = (int)p->root};
  params.send = s->send_buffer;
  params.send_offset = s->send_offset;
  params.recv = s->recv_buffer;
  params.recv_offset = s->recv_offset;
  xr_hal_collective_params_t barrier = {.kind = XR_HAL_BARRIER};
  st = xr_hal_collective_create(s->comm, &params, &s->collective);
  /* All the world's ranks line up before each timed run: its groups run at once, as they do
   * in a job of several. */
  if (st == XR_OK) st = xr_hal_collective_create(plan->comm, &barrier, &s->barrier);
  if (st != XR_OK) {
    release(s);
    return st;
  }
  *out_state = s;
  return XR_OK;
}

static xr_status_t mpi_enqueue(void *state, xr_hal_stream_t *stream) {
  collective_state_t *s = state;
  return xr_hal_stream_collective(stream, s->collective);
}

static xr_status_t mpi_prologue(void *state, xr_hal_stream_t *stream) {
  collective_state_t *s = state;
  return xr_hal_stream_collective(stream, s->barrier);
}

static xr_status_t mpi_status(void *state) {
  collective_state_t *s = state;
  return xr_hal_comm_status(s->comm);
}

/* A rank's result computed from what every rank sends (the reference), or, alone, the copy a
 * group of one makes. */
static void compute(void *context) {
  collective_state_t *s = context;
  const collective_problem_t *p = s->plan->problem;
  if (p->kind == XR_HAL_BARRIER) return;
  xr_dtype_t d = p->dtype;
  int64_t c = s->count;
  size_t sent_elements, total;
  xr_hal_collective_elements(p->kind, (size_t)c, (int)s->ranks, &sent_elements, &total);
  int64_t n = s->ranks;
  for (int64_t i = 0; i < (int64_t)total; i++) {
    double v = 0;
    switch (p->kind) {
      case XR_HAL_ALLREDUCE:
      case XR_HAL_REDUCE_SCATTER: {
        int64_t at = p->kind == XR_HAL_REDUCE_SCATTER ? s->rank * c + i : i;
        int64_t sum = 0; /* small integers: exact, and wrapping as the dtype's sums do */
        for (int64_t r = 0; r < n; r++) sum += (int64_t)sent(r, at, d);
        v = d == XR_DTYPE_BOOL ? sum > 0 : (double)sum;
        break;
      }
      case XR_HAL_ALLGATHER: v = sent(i / c, i % c, d); break;
      case XR_HAL_BROADCAST: v = sent(p->root, i, d); break;
      default: v = sent(i / c, s->rank * c + i % c, d); break; /* alltoall */
    }
    xr_store_element(s->recv, d, i, v);
  }
}

/* Alone, what a group of one makes of its input is a copy of it. */
static void copy_alone(void *context) {
  collective_state_t *s = context;
  const collective_problem_t *p = s->plan->problem;
  if (p->kind != XR_HAL_BARRIER && s->recv != s->send)
    memmove(s->recv, s->send, (size_t)s->count * xr_dtype_size(p->dtype));
}

static xr_status_t host_prepare(const xr_op_plan_t *plan, xr_hal_device_t *device,
                                const xr_tensor_t *tensors, void **out_state) {
  (void)device;
  collective_state_t *s;
  xr_status_t st = bind(plan, tensors, &s);
  if (st == XR_OK) *out_state = s;
  return st;
}

static xr_status_t alone_enqueue(void *state, xr_hal_stream_t *stream) {
  collective_state_t *s = state;
  const collective_problem_t *p = s->plan->problem;
  /* Alone, a barrier waits for no one: nothing to enqueue (opencl and gpu streams take no host
   * work, so a host function would fail there). */
  if (p->kind == XR_HAL_BARRIER) return XR_OK;
  if (s->send) return xr_hal_stream_enqueue_host(stream, copy_alone, state);
  bool in_place = s->send_buffer == s->recv_buffer && s->send_offset == s->recv_offset;
  return in_place ? XR_OK
                  : xr_hal_stream_copy(stream, s->recv_buffer, s->recv_offset, s->send_buffer,
                                       s->send_offset, (size_t)s->count * xr_dtype_size(p->dtype));
}

static xr_status_t reference_enqueue(void *state, xr_hal_stream_t *stream) {
  return xr_hal_stream_enqueue_host(stream, compute, state);
}

/* The two implementations of each driver: across the ranks (the communicator's transport —
 * MPI on cpu, MPI through host copies on opencl, NCCL / RCCL on cuda and hip: hal/comm/), and
 * alone, a group of one. */
#define ACROSS_RANKS(impl_name, driver_name)                                                   \
  {                                                                                            \
    .name = impl_name, .driver = driver_name, .supports = supports_mpi, .prepare = mpi_prepare, \
    .enqueue = mpi_enqueue, .enqueue_prologue = mpi_prologue, .status = mpi_status,            \
    .release = release,                                                                        \
  }
#define ALONE(impl_name, driver_name)                                                          \
  {                                                                                            \
    .name = impl_name, .driver = driver_name, .supports = supports_alone,                      \
    .prepare = host_prepare, .enqueue = alone_enqueue, .release = release,                     \
  }

static const xr_kernel_impl_t cpu_mpi = ACROSS_RANKS("cpu.mpi", "cpu");
static const xr_kernel_impl_t cpu_alone = ALONE("cpu.collective_alone", "cpu");
static const xr_kernel_impl_t opencl_mpi = ACROSS_RANKS("opencl.mpi", "opencl");
static const xr_kernel_impl_t opencl_alone = ALONE("opencl.collective_alone", "opencl");
static const xr_kernel_impl_t gpu_nccl = ACROSS_RANKS("gpu.nccl", "gpu");
static const xr_kernel_impl_t gpu_alone = ALONE("gpu.collective_alone", "gpu");

/* Every rank's result from the integers each sends: no communication. */
static const xr_kernel_impl_t ref_collective = {
    .name = "ref.collective",
    .driver = "cpu",
    .reference = true,
    .supports = supports_reference,
    .prepare = host_prepare,
    .enqueue = reference_enqueue,
    .release = release,
};

static const xr_kernel_impl_t *const collective_impls[] = {
    &cpu_mpi, &cpu_alone, &opencl_mpi, &opencl_alone, &gpu_nccl, &gpu_alone, &ref_collective, NULL};

static const struct xr_op_initializer collective_initializers[] = {
    {"record_param_comms", initialize},
    {"c10d::allreduce_", initialize},
    {"c10d::allgather_", initialize},
    {"c10d::_allgather_base_", initialize},
    {"c10d::reduce_scatter_", initialize},
    {"c10d::_reduce_scatter_base_", initialize},
    {"c10d::broadcast_", initialize},
    {"c10d::alltoall_", initialize},
    {"c10d::alltoall_base_", initialize},
    {"symm_mem::multimem_all_reduce_", initialize},
    {"_C_custom_ar::all_reduce", initialize},
    {"vllm::all_reduce", initialize},
    {NULL, NULL},
};

const xr_op_family_t xr_family_collective = {
    .name = "collective",
    .op_names = collective_ops,
    .analyze = analyze,
    .free_problem = free,
    .impls = collective_impls,
    .initializers = collective_initializers,
};
