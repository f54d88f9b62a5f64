/* Collectives: record_param_comms events become bundle ops in the format the collective kernels
 * replay, c10d ops (--outermost) get their schema and the trace's world size, distributedInfo
 * lands in the metadata. tests/data/traces/h100_tp4_collectives.json is a hand-written Kineto
 * trace of rank 0 of 4 (see tests/data/traces/README.md); the expected values below are the
 * ones written into it. */
#include "tests/extract/extract_util.h"

#define COMMS_TRACE "tests/data/traces/h100_tp4_collectives.json"

static xr_bundle_t *extract_comms_trace(bool outermost, xr_extract_summary_t *s) {
  xr_extract_options_t o = {.outermost = outermost};
  xr_bundle_t *b = NULL;
  cr_assert_eq(xr_trace_extract(COMMS_TRACE, &o, &b, s), XR_OK, "%s", xr_last_error());
  cr_assert_eq(xr_bundle_validate(b, false, NULL), XR_OK, "%s", xr_last_error());
  return b;
}

static const xr_arg_t *kwarg(const xr_op_t *op, const char *name) {
  for (size_t i = 0; i < op->kwarg_count; i++)
    if (strcmp(op->kwargs[i].name, name) == 0) return &op->kwargs[i];
  return NULL;
}

/* The record_param_comms op of this collective whose input holds `in` elements, or NULL. */
static const xr_op_t *find_comms(const xr_bundle_t *b, const char *collective, int64_t in) {
  for (size_t i = 0; i < b->op_count; i++) {
    const xr_op_t *op = &b->ops[i];
    const xr_arg_t *c = kwarg(op, "collective"), *input = kwarg(op, "input");
    if (strcmp(op->name, "record_param_comms") == 0 && c && input &&
        strcmp(c->value.as.s, collective) == 0 && input->value.as.tensor->shape[0] == in)
      return op;
  }
  return NULL;
}

static const xr_op_t *find_op(const xr_bundle_t *b, const char *name, size_t nth) {
  for (size_t i = 0; i < b->op_count; i++)
    if (strcmp(b->ops[i].name, name) == 0 && nth-- == 0) return &b->ops[i];
  return NULL;
}

static const xr_arg_t *find_extra(const xr_bundle_t *b, const char *name) {
  for (size_t i = 0; i < b->meta.extra_count; i++)
    if (strcmp(b->meta.extra[i].name, name) == 0) return &b->meta.extra[i];
  return NULL;
}

static void assert_int_list(const xr_arg_t *a, const int64_t *v, size_t n, const char *what) {
  cr_assert_not_null(a, "%s missing", what);
  cr_assert_str_eq(a->type, "int[]", "%s", what);
  cr_assert_eq(a->value.kind, XR_VALUE_LIST, "%s", what);
  cr_assert_eq(a->value.as.list.count, n, "%s: %zu entries", what, a->value.as.list.count);
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(a->value.as.list.items[i].kind, XR_VALUE_INT, "%s[%zu]", what, i);
    cr_assert_eq(a->value.as.list.items[i].as.i, v[i], "%s[%zu]", what, i);
  }
}

/* What the trace holds, collective by collective. */
typedef struct comms_case {
  const char *collective;
  xr_dtype_t dtype;
  int64_t in, out, rank, count;
  double gpu_us;
  const char *kernel;
  const int64_t *in_split, *out_split; /* 4 entries, or NULL: not recorded */
} comms_case_t;

static const int64_t a2a_in[4] = {1024, 2048, 512, 512}, a2a_out[4] = {1024, 1024, 1536, 512};

static const comms_case_t cases[] = {
    {"allreduce", XR_DTYPE_BF16, 8388608, 8388608, 0, 2, 120.5 + 118.25,
     "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", NULL, NULL},
    {"allreduce", XR_DTYPE_F32, 1024, 1024, 0, 1, 9.5,
     "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", NULL, NULL},
    {"_allgather_base", XR_DTYPE_BF16, 2097152, 8388608, 0, 1, 80,
     "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", NULL, NULL},
    {"_reduce_scatter_base", XR_DTYPE_BF16, 8388608, 2097152, 0, 1, 85,
     "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", NULL, NULL},
    /* "Rank" of a broadcast is its root; this one's fields are written as strings */
    {"broadcast", XR_DTYPE_F32, 4096, 4096, 2, 1, 12,
     "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", NULL, NULL},
    {"barrier", XR_DTYPE_U8, 0, 0, 0, 1, 6,
     "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", NULL, NULL},
    {"all_to_allv", XR_DTYPE_BF16, 2097152, 2097152, 0, 1, 70,
     "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", a2a_in, a2a_out},
};

Test(collectives, record_param_comms_becomes_one_op_per_distinct_collective) {
  xr_extract_summary_t s;
  xr_bundle_t *b = extract_comms_trace(false, &s);
  size_t ncases = sizeof cases / sizeof cases[0];
  cr_assert_eq(s.gpu_events, 9);
  cr_assert_eq(s.gpu_unlinked, 0);
  cr_assert_eq(s.gpu_without_op, 0);
  cr_assert_eq(s.ops_bad_args, 0);
  cr_assert_eq(b->op_count, ncases + 1, "%zu ops", b->op_count); /* and aten::mm */
  cr_assert_eq(s.op_instances, 9);
  cr_assert_float_eq(s.gpu_busy_us, 531.25, 1e-9);
  cr_assert_float_eq(s.gpu_covered_us, 531.25, 1e-9);
  for (size_t i = 0; i < ncases; i++) {
    const comms_case_t *e = &cases[i];
    const xr_op_t *op = find_comms(b, e->collective, e->in);
    cr_assert_not_null(op, "no record_param_comms op for %s of %lld", e->collective,
                       (long long)e->in);
    cr_assert_null(op->alias);
    cr_assert_eq(op->arg_count, 0, "%s: the recorded Input Dims must not become arguments",
                 e->collective);
    bool split = e->in_split != NULL;
    static const char *const names[] = {"input", "output",         "collective",     "group_size",
                                        "rank",  "in_split_sizes", "out_split_sizes"};
    static const char *const types[] = {"Tensor", "Tensor", "str", "int", "int", "int[]", "int[]"};
    cr_assert_eq(op->kwarg_count, split ? 7 : 5, "%s: %zu kwargs", e->collective, op->kwarg_count);
    for (size_t k = 0; k < op->kwarg_count; k++) {
      cr_assert_str_eq(op->kwargs[k].name, names[k], "%s", e->collective);
      cr_assert_str_eq(op->kwargs[k].type, types[k], "%s", e->collective);
      cr_assert_not(op->kwargs[k].defaulted, "%s.%s", e->collective, names[k]);
    }
    for (int t = 0; t < 2; t++) {
      const xr_tensor_spec_t *ts = op->kwargs[t].value.as.tensor;
      cr_assert_eq(op->kwargs[t].value.kind, XR_VALUE_TENSOR);
      cr_assert_eq(ts->dtype, e->dtype, "%s.%s: %s", e->collective, names[t],
                   xr_dtype_name(ts->dtype));
      cr_assert_eq(ts->rank, 1);
      cr_assert_eq(ts->shape[0], t ? e->out : e->in, "%s.%s", e->collective, names[t]);
      cr_assert(xr_tensor_is_contiguous(ts));
      cr_assert_eq(ts->storage_offset, 0);
    }
    cr_assert_str_eq(kwarg(op, "collective")->value.as.s, e->collective);
    cr_assert_eq(kwarg(op, "group_size")->value.as.i, 4);
    cr_assert_eq(kwarg(op, "rank")->value.as.i, e->rank, "%s", e->collective);
    if (split) {
      assert_int_list(kwarg(op, "in_split_sizes"), e->in_split, 4, "in_split_sizes");
      assert_int_list(kwarg(op, "out_split_sizes"), e->out_split, 4, "out_split_sizes");
    }
    /* The NCCL kernel, launched inside record_param_comms inside c10d::*, is the op's. */
    cr_assert_eq(op->count, e->count, "%s: count %lld", e->collective, (long long)op->count);
    cr_assert_float_eq(op->timing->gpu_time_us, e->gpu_us, 1e-9, "%s", e->collective);
    cr_assert_eq(op->timing->kernel_count, 1);
    cr_assert_str_eq(op->timing->kernels[0].name, e->kernel);
    cr_assert_eq(op->timing->kernels[0].count, e->count);
    cr_assert_str_eq(op->timing->device, "NVIDIA H100 80GB HBM3");
  }
  /* The GEMM between the collectives is extracted as before; the c10d ops launched nothing
   * outside record_param_comms, so none is an op. */
  const xr_op_t *mm = find_op(b, "aten::mm", 0);
  cr_assert_not_null(mm);
  cr_assert_eq(xr_op_find_arg(mm, "mat2")->value.as.tensor->shape[1], 4096);
  cr_assert_float_eq(mm->timing->gpu_time_us, 30, 1e-9);
  for (size_t i = 0; i < b->op_count; i++)
    cr_assert(strncmp(b->ops[i].name, "c10d::", 6) != 0, "%s", b->ops[i].name);
  /* Heaviest first: the two bf16 all-reduces lead. */
  cr_assert_eq(&b->ops[0], find_comms(b, "allreduce", 8388608));
  round_trip_both_codecs(b);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

Test(collectives, world_size_and_rank_go_to_metadata_and_survive_both_codecs) {
  xr_extract_summary_t s;
  xr_bundle_t *b = extract_comms_trace(false, &s);
  const xr_arg_t *w = find_extra(b, "world_size"), *r = find_extra(b, "trace_rank");
  cr_assert_not_null(w);
  cr_assert_not_null(r);
  cr_assert_eq(w->value.kind, XR_VALUE_INT);
  cr_assert_eq(w->value.as.i, 4);
  cr_assert_eq(r->value.kind, XR_VALUE_INT);
  cr_assert_eq(r->value.as.i, 0);
  /* Each codec writes them and reads them back as the same ints. */
  uint8_t *bytes;
  size_t size;
  cr_assert_eq(xr_bundle_encode_msgpack(b, &bytes, &size), XR_OK, "%s", xr_last_error());
  xr_bundle_t *m;
  cr_assert_eq(xr_bundle_decode(bytes, size, "t.msgpack", ".", NULL, &m), XR_OK, "%s",
               xr_last_error());
  free(bytes);
  char *text;
  xr_json_options_t jo = {.pretty = true};
  cr_assert_eq(xr_bundle_encode_json(b, &jo, &text, &size), XR_OK, "%s", xr_last_error());
  cr_assert(strstr(text, "\"world_size\": 4"), "%s", text);
  xr_bundle_t *j;
  cr_assert_eq(xr_bundle_decode((uint8_t *)text, size, "t.json", ".", NULL, &j), XR_OK, "%s",
               xr_last_error());
  free(text);
  const xr_bundle_t *decoded[2] = {m, j};
  for (int i = 0; i < 2; i++) {
    const xr_arg_t *dw = find_extra(decoded[i], "world_size");
    const xr_arg_t *dr = find_extra(decoded[i], "trace_rank");
    cr_assert_not_null(dw, "%s", i ? "JSON" : "msgpack");
    cr_assert_not_null(dr, "%s", i ? "JSON" : "msgpack");
    cr_assert_eq(dw->value.kind, XR_VALUE_INT);
    cr_assert_eq(dw->value.as.i, 4);
    cr_assert_eq(dr->value.kind, XR_VALUE_INT);
    cr_assert_eq(dr->value.as.i, 0);
  }
  xr_bundle_destroy(m);
  xr_bundle_destroy(j);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

Test(collectives, outermost_gives_c10d_ops_with_the_world_size) {
  xr_extract_summary_t s;
  xr_bundle_t *b = extract_comms_trace(true, &s);
  cr_assert_eq(b->op_count, 8, "%zu ops", b->op_count);
  cr_assert_eq(s.ops_bad_args, 0);
  cr_assert_eq(s.op_instances, 9);
  static const char *const c10d[] = {
      "c10d::allreduce_", "c10d::_allgather_base_", "c10d::_reduce_scatter_base_",
      "c10d::broadcast_", "c10d::barrier",          "c10d::alltoall_base_"};
  for (size_t i = 0; i < sizeof c10d / sizeof c10d[0]; i++) {
    const xr_op_t *op = find_op(b, c10d[i], 0);
    cr_assert_not_null(op, "no %s", c10d[i]);
    const xr_arg_t *g = kwarg(op, "group_size");
    cr_assert_not_null(g, "%s has no group_size", c10d[i]);
    cr_assert_str_eq(g->type, "int");
    cr_assert_eq(g->value.kind, XR_VALUE_INT);
    cr_assert_eq(g->value.as.i, 4);
    cr_assert(g->defaulted, "%s: group_size comes from distributedInfo, not the event", c10d[i]);
    /* The process group is a script object without a value: None, named and typed. */
    const xr_arg_t *pg = xr_op_find_arg(op, "process_group");
    cr_assert_not_null(pg, "%s: arguments not named from the schema", c10d[i]);
    cr_assert_eq(pg->value.kind, XR_VALUE_NULL);
    cr_assert_str_eq(pg->type, "__torch__.torch.classes.c10d.ProcessGroup");
    cr_assert_eq(xr_op_find_arg(op, "timeout")->value.as.i, -1);
    cr_assert(summary_has_warning(&s, c10d[i]));
  }
  cr_assert(summary_has_warning(&s, "using the trace's world size 4"));
  /* The two bf16 all-reduces are one op, the float one another. */
  const xr_op_t *ar = find_op(b, "c10d::allreduce_", 0), *ar2 = find_op(b, "c10d::allreduce_", 1);
  cr_assert_not_null(ar2);
  cr_assert_eq(ar->count, 2);
  cr_assert_float_eq(ar->timing->gpu_time_us, 238.75, 1e-9);
  cr_assert_eq(ar2->count, 1);
  cr_assert_float_eq(ar2->timing->gpu_time_us, 9.5, 1e-9);
  const xr_arg_t *tensors = xr_op_find_arg(ar, "tensors");
  cr_assert_eq(tensors->value.kind, XR_VALUE_LIST);
  cr_assert_eq(tensors->value.as.list.items[0].as.tensor->shape[1], 4096);
  cr_assert_eq(xr_op_find_arg(ar, "reduce_op")->value.kind, XR_VALUE_NULL);
  cr_assert_eq(xr_op_find_arg(ar, "asyncOp")->value.kind, XR_VALUE_BOOL);
  /* Tensor arguments of c10d ops keep their recorded shapes. */
  const xr_op_t *ag = find_op(b, "c10d::_allgather_base_", 0);
  cr_assert_eq(xr_op_find_arg(ag, "output_tensor")->value.as.tensor->shape[0], 8192);
  cr_assert_eq(xr_op_find_arg(ag, "input_tensor")->value.as.tensor->dtype, XR_DTYPE_BF16);
  const xr_op_t *bc = find_op(b, "c10d::broadcast_", 0);
  cr_assert_eq(xr_op_find_arg(bc, "root_rank")->value.as.i, 2);
  const xr_op_t *a2a = find_op(b, "c10d::alltoall_base_", 0);
  assert_int_list(xr_op_find_arg(a2a, "input_split_sizes"), a2a_in, 4, "input_split_sizes");
  assert_int_list(xr_op_find_arg(a2a, "output_split_sizes"), a2a_out, 4, "output_split_sizes");
  cr_assert_float_eq(a2a->timing->gpu_time_us, 70, 1e-9);
  cr_assert_null(find_op(b, "record_param_comms", 0));
  round_trip_both_codecs(b);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

/* A c10d op enclosing record_param_comms and one launch (named `launch`) of a kernel; `fields`
 * are record_param_comms' args, `top` more top-level keys ("" or "\"distributedInfo\": ..,"). */
static char *comms_trace(const char *fields, const char *launch, const char *top) {
  const char *fmt =
      "{%s \"traceEvents\": ["
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"c10d::allreduce_\", \"pid\": 1, \"tid\": 1,"
      " \"ts\": 0, \"dur\": 50, \"args\": {\"Input Dims\": [[[8, 4]], [], [], [], [], []],"
      " \"Input type\": [\"TensorList\", \"ScriptObject\", \"ScriptObject\", \"\", \"Scalar\","
      " \"Scalar\"], \"Concrete Inputs\": [\"\", \"\", \"\", \"\", \"False\", \"-1\"]}},"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 1,"
      " \"tid\": 1, \"ts\": 5, \"dur\": 40, \"args\": {%s}},"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"%s\", \"pid\": 1, \"tid\": 1,"
      " \"ts\": 10, \"dur\": 2, \"args\": {\"correlation\": 7}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ncclDevKernel_Generic_4\", \"pid\": 2,"
      " \"tid\": 3, \"ts\": 60, \"dur\": 5, \"args\": {\"correlation\": 7}}]}";
  size_t n = strlen(fmt) + strlen(fields) + strlen(launch) + strlen(top) + 1;
  char *s = malloc(n);
  snprintf(s, n, fmt, top, fields, launch);
  return s;
}

#define GOOD_FIELDS                                                                            \
  "\"Collective name\": \"allreduce\", \"dtype\": \"BFloat16\", \"In msg nelems\": 32, \"Out " \
  "msg nelems\": 32, \"Group size\": 8, \"Rank\": 3, \"In split size\": \"[]\", \"Out split "  \
  "size\": \"[]\", \"Seq\": 12"

Test(collectives, amd_launches_are_attributed_the_same_way) {
  char *text = comms_trace(GOOD_FIELDS, "hipExtModuleLaunchKernel",
                           "\"deviceProperties\": [{\"name\": \"AMD Instinct MI300X\"}],");
  xr_bundle_t *b;
  xr_extract_summary_t s;
  cr_assert_eq(extract_string(text, NULL, &b, &s), XR_OK, "%s", xr_last_error());
  free(text);
  cr_assert_eq(b->op_count, 1);
  const xr_op_t *op = &b->ops[0];
  cr_assert_str_eq(op->name, "record_param_comms");
  cr_assert_eq(kwarg(op, "rank")->value.as.i, 3);
  cr_assert_eq(kwarg(op, "group_size")->value.as.i, 8);
  cr_assert_float_eq(op->timing->gpu_time_us, 5, 1e-9);
  cr_assert_str_eq(op->timing->kernels[0].name, "ncclDevKernel_Generic_4");
  /* No distributedInfo: no world size in the metadata. */
  cr_assert_null(find_extra(b, "world_size"));
  cr_assert_null(find_extra(b, "trace_rank"));
  cr_assert_eq(s.ops_bad_args, 0);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

/* The grouping key holds the fields: the same collective in another group size, or with
 * other sizes, is another op; another Seq (every call has its own) is not. */
Test(collectives, grouping_follows_the_fields) {
  const char *ev =
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", \"pid\": 1, \"tid\": "
      "1, \"ts\": %d, \"dur\": 10, \"args\": {\"Collective name\": \"allreduce\", \"dtype\": "
      "\"Half\", \"In msg nelems\": %d, \"Out msg nelems\": %d, \"Group size\": %d, \"Rank\": 0, "
      "\"Seq\": %d}},"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
      "\"tid\": 1, \"ts\": %d, \"dur\": 1, \"args\": {\"correlation\": %d}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": %d, "
      "\"dur\": %d, \"args\": {\"correlation\": %d}}";
  static const int calls[][3] = {{64, 2, 1}, {64, 2, 2}, {64, 4, 3}, {128, 2, 4}, {64, 2, 5}};
  char text[8192] = "{\"traceEvents\": [";
  for (int i = 0; i < 5; i++) {
    char one[1024];
    snprintf(one, sizeof one, ev, i * 100, calls[i][0], calls[i][0], calls[i][1], calls[i][2],
             i * 100 + 5, i + 1, i * 100 + 50, i + 1, i + 1);
    strcat(text, one);
    strcat(text, i < 4 ? "," : "]}");
  }
  xr_bundle_t *b;
  cr_assert_eq(extract_string(text, NULL, &b, NULL), XR_OK, "%s", xr_last_error());
  cr_assert_eq(b->op_count, 3, "%zu ops", b->op_count);
  int64_t total = 0;
  for (size_t i = 0; i < b->op_count; i++) {
    const xr_op_t *op = &b->ops[i];
    int64_t n = kwarg(op, "input")->value.as.tensor->shape[0];
    int64_t g = kwarg(op, "group_size")->value.as.i;
    cr_assert_eq(kwarg(op, "input")->value.as.tensor->dtype, XR_DTYPE_F16);
    /* calls 1, 2 and 5 (durations 1 + 2 + 5); call 3 (group 4); call 4 (128 elements) */
    int64_t want = n == 64 && g == 2 ? 3 : 1;
    double us = n == 64 && g == 2 ? 8 : n == 64 ? 3 : 4;
    cr_assert_eq(op->count, want, "%lld elements, group %lld", (long long)n, (long long)g);
    cr_assert_float_eq(op->timing->gpu_time_us, us, 1e-9);
    total += op->count;
  }
  cr_assert_eq(total, 5);
  xr_bundle_destroy(b);
}

Test(collectives, scalar_type_names_and_torch_spellings) {
  static const struct {
    const char *name;
    xr_dtype_t dtype;
  } names[] = {
      {"Float", XR_DTYPE_F32},
      {"BFloat16", XR_DTYPE_BF16},
      {"Half", XR_DTYPE_F16},
      {"Double", XR_DTYPE_F64},
      {"Long", XR_DTYPE_I64},
      {"Int", XR_DTYPE_I32},
      {"Short", XR_DTYPE_I16},
      {"Char", XR_DTYPE_I8},
      {"Byte", XR_DTYPE_U8},
      {"Bool", XR_DTYPE_BOOL},
      {"Float8_e4m3fn", XR_DTYPE_F8E4M3FN},
      {"Float8_e5m2", XR_DTYPE_F8E5M2},
      {"Float8_e4m3fnuz", XR_DTYPE_F8E4M3FNUZ},
      {"UInt32", XR_DTYPE_U32},
      {"bfloat16", XR_DTYPE_BF16},
      {"float16", XR_DTYPE_F16},
      {"float32", XR_DTYPE_F32},
      {"torch.bfloat16", XR_DTYPE_BF16},
      {"c10::BFloat16", XR_DTYPE_BF16},
      {"int64", XR_DTYPE_I64},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char fields[512];
    snprintf(fields, sizeof fields,
             "\"Collective name\": \"allgather\", \"dtype\": \"%s\", \"In msg nelems\": 16, "
             "\"Out msg nelems\": 64, \"Group size\": 4, \"Rank\": 1",
             names[i].name);
    char *text = comms_trace(fields, "cudaLaunchKernel", "");
    xr_bundle_t *b;
    xr_extract_summary_t s;
    cr_assert_eq(extract_string(text, NULL, &b, &s), XR_OK, "%s", xr_last_error());
    free(text);
    cr_assert_eq(b->op_count, 1, "%s: %zu ops", names[i].name, b->op_count);
    const xr_op_t *op = &b->ops[0];
    cr_assert_eq(kwarg(op, "input")->value.as.tensor->dtype, names[i].dtype, "%s gave %s",
                 names[i].name, xr_dtype_name(kwarg(op, "input")->value.as.tensor->dtype));
    cr_assert_eq(kwarg(op, "output")->value.as.tensor->dtype, names[i].dtype);
    cr_assert_eq(kwarg(op, "output")->value.as.tensor->shape[0], 64);
    cr_assert_eq(xr_bundle_validate(b, false, NULL), XR_OK, "%s", xr_last_error());
    xr_bundle_destroy(b);
    xr_extract_summary_free(&s);
  }
}

/* Another cpu_op carrying the fields is a collective too, written under the registry's name. */
Test(collectives, any_cpu_op_carrying_a_collective_name) {
  const char *text =
      "{\"traceEvents\": ["
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"nccl:all_reduce\", \"pid\": 1, \"tid\": 1,"
      " \"ts\": 0, \"dur\": 10, \"args\": {\"Collective name\": \"allreduce\", \"dtype\": "
      "\"Float\", \"In msg nelems\": \"8\", \"Out msg nelems\": \"8\", \"Group size\": \"2\", "
      "\"Rank\": \"1\", \"Input Dims\": [[8]], \"Input type\": [\"float\"]}},"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1,"
      " \"tid\": 1, \"ts\": 2, \"dur\": 1, \"args\": {\"correlation\": 3}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 4,"
      " \"dur\": 2, \"args\": {\"correlation\": 3}}]}";
  xr_bundle_t *b;
  cr_assert_eq(extract_string(text, NULL, &b, NULL), XR_OK, "%s", xr_last_error());
  cr_assert_eq(b->op_count, 1);
  cr_assert_str_eq(b->ops[0].name, "record_param_comms");
  cr_assert_str_eq(b->ops[0].alias, "nccl:all_reduce");
  cr_assert_eq(b->ops[0].arg_count, 0);
  cr_assert_eq(kwarg(&b->ops[0], "rank")->value.as.i, 1);
  round_trip_both_codecs(b);
  xr_bundle_destroy(b);
}

/* One cpu_op `name` with `args`, its launch and kernel, and the top-level `top`. */
static char *op_trace(const char *name, const char *args, const char *top) {
  const char *fmt =
      "{%s \"traceEvents\": ["
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 1, \"tid\": 1, \"ts\": 0,"
      " \"dur\": 10, \"args\": %s},"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1,"
      " \"tid\": 1, \"ts\": 2, \"dur\": 1, \"args\": {\"correlation\": 3}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": 4,"
      " \"dur\": 2, \"args\": {\"correlation\": 3}}]}";
  size_t n = strlen(fmt) + strlen(name) + strlen(args) + strlen(top) + 1;
  char *s = malloc(n);
  snprintf(s, n, fmt, top, name, args);
  return s;
}

#define WORLD8 "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 5, \"world_size\": 8},"

static xr_bundle_t *extract_op(const char *name, const char *args, const char *top,
                               xr_extract_summary_t *s) {
  char *text = op_trace(name, args, top);
  xr_bundle_t *b;
  cr_assert_eq(extract_string(text, NULL, &b, s), XR_OK, "%s", xr_last_error());
  free(text);
  cr_assert_eq(b->op_count, 1, "%s: %zu ops", name, b->op_count);
  cr_assert_eq(xr_bundle_validate(b, false, NULL), XR_OK, "%s", xr_last_error());
  return b;
}

/* Traces of PyTorch before asyncOp (2.1 to 2.5) and before sparse_indices record fewer
 * arguments: the overload of that arity names them. */
Test(collectives, older_c10d_arities_take_their_own_schema) {
  static const struct {
    const char *args;
    size_t n;
    const char *last;
  } versions[] = {
      {"{\"Input Dims\": [[[16]], [], [], [], [], []], \"Input type\": [\"TensorList\", "
       "\"ScriptObject\", \"ScriptObject\", \"\", \"Scalar\", \"Scalar\"], \"Concrete Inputs\": "
       "[\"\", \"\", \"\", \"\", \"True\", \"600000\"]}",
       6, "asyncOp"},
      {"{\"Input Dims\": [[[16]], [], [], [], []], \"Input type\": [\"TensorList\", "
       "\"ScriptObject\", \"ScriptObject\", \"\", \"Scalar\"], \"Concrete Inputs\": [\"\", \"\", "
       "\"\", \"\", \"600000\"]}",
       5, "sparse_indices"},
      /* older profilers recorded script objects with an empty type */
      {"{\"Input Dims\": [[[16]], [], [], []], \"Input type\": [\"TensorList\", \"\", \"\", "
       "\"Scalar\"], \"Concrete Inputs\": [\"\", \"\", \"\", \"600000\"]}",
       4, "reduce_op"},
  };
  for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
    xr_extract_summary_t s;
    xr_bundle_t *b = extract_op("c10d::allreduce_", versions[i].args, WORLD8, &s);
    const xr_op_t *op = &b->ops[0];
    cr_assert_eq(op->arg_count, versions[i].n);
    cr_assert_not_null(xr_op_find_arg(op, versions[i].last), "%zu args: no %s", versions[i].n,
                       versions[i].last);
    cr_assert_eq(xr_op_find_arg(op, "timeout")->value.as.i, 600000);
    cr_assert_eq(kwarg(op, "group_size")->value.as.i, 8);
    cr_assert_eq(s.ops_bad_args, 0);
    xr_bundle_destroy(b);
    xr_extract_summary_free(&s);
  }
}

Test(collectives, vllm_all_reduce_ops_get_schemas_and_the_world_size) {
  xr_extract_summary_t s;
  xr_bundle_t *b = extract_op(
      "_C_custom_ar::all_reduce",
      "{\"Input Dims\": [[], [16, 4096], [16, 4096], [], []], \"Input type\": [\"Scalar\", "
      "\"c10::BFloat16\", \"c10::BFloat16\", \"Scalar\", \"Scalar\"], \"Concrete Inputs\": "
      "[\"94827361\", \"\", \"\", \"139872\", \"8388608\"]}",
      WORLD8, &s);
  const xr_op_t *op = &b->ops[0];
  cr_assert_eq(xr_op_find_arg(op, "inp")->value.as.tensor->shape[1], 4096);
  cr_assert_eq(xr_op_find_arg(op, "out")->value.as.tensor->init, XR_INIT_NONE);
  cr_assert_eq(xr_op_find_arg(op, "reg_buffer_sz_bytes")->value.as.i, 8388608);
  cr_assert_eq(kwarg(op, "group_size")->value.as.i, 8);
  cr_assert(kwarg(op, "group_size")->defaulted);
  cr_assert_eq(find_extra(b, "world_size")->value.as.i, 8);
  cr_assert_eq(find_extra(b, "trace_rank")->value.as.i, 5);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);

  b = extract_op("vllm::all_reduce",
                 "{\"Input Dims\": [[16, 4096], []], \"Input type\": [\"c10::BFloat16\", \"\"],"
                 " \"Concrete Inputs\": [\"\", \"\"]}",
                 WORLD8, &s);
  op = &b->ops[0];
  cr_assert_str_eq(op->args[0].name, "tensor");
  cr_assert_str_eq(op->args[1].name, "group_name");
  cr_assert_eq(kwarg(op, "group_size")->value.as.i, 8);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);

  b = extract_op("symm_mem::multimem_all_reduce_",
                 "{\"Input Dims\": [[16, 4096], [], []], \"Input type\": [\"c10::BFloat16\", \"\","
                 " \"\"], \"Concrete Inputs\": [\"\", \"\", \"\"]}",
                 WORLD8, &s);
  op = &b->ops[0];
  cr_assert_str_eq(op->args[0].type, "Tensor(a!)");
  cr_assert_str_eq(xr_op_find_arg(op, "reduce_op")->value.as.s, "sum");
  cr_assert(xr_op_find_arg(op, "reduce_op")->defaulted);
  cr_assert_eq(kwarg(op, "group_size")->value.as.i, 8);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

/* Without distributedInfo a c10d op has no group size to take: none is invented, and the
 * summary says so. */
Test(collectives, c10d_ops_without_a_world_size_say_so) {
  xr_extract_summary_t s;
  xr_bundle_t *b = extract_op(
      "c10d::allreduce_",
      "{\"Input Dims\": [[[16]], [], [], [], [], []], \"Input type\": [\"TensorList\", "
      "\"ScriptObject\", \"ScriptObject\", \"\", \"Scalar\", \"Scalar\"], \"Concrete Inputs\": "
      "[\"\", \"\", \"\", \"\", \"False\", \"-1\"]}",
      "", &s);
  cr_assert_null(kwarg(&b->ops[0], "group_size"));
  cr_assert(summary_has_warning(&s,
                                "c10d::allreduce_: group size not recorded by the profiler, "
                                "and the trace gives no world size"));
  cr_assert_null(find_extra(b, "world_size"));
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

/* A c10d op without a schema keeps positional arguments; its script objects do not fail it. */
Test(collectives, script_objects_of_ops_without_a_schema_are_none) {
  xr_extract_summary_t s;
  xr_bundle_t *b =
      extract_op("c10d::recv_",
                 "{\"Input Dims\": [[[64]], [], [], []], \"Input type\": [\"TensorList\", "
                 "\"__torch__.torch.classes.c10d.ProcessGroup\", \"Scalar\", \"Scalar\"], "
                 "\"Concrete Inputs\": [\"\", \"\", \"1\", \"0\"]}",
                 WORLD8, &s);
  const xr_op_t *op = &b->ops[0];
  cr_assert_eq(op->arg_count, 4);
  cr_assert_eq(op->args[1].value.kind, XR_VALUE_NULL);
  cr_assert_str_eq(op->args[1].type, "__torch__.torch.classes.c10d.ProcessGroup");
  cr_assert_eq(op->args[2].value.as.i, 1);
  cr_assert_eq(kwarg(op, "group_size")->value.as.i, 8);
  cr_assert_eq(s.ops_bad_args, 0);
  xr_bundle_destroy(b);
  xr_extract_summary_free(&s);
}

/* Bad collective fields: the op is skipped with a warning naming the field; nothing crashes. */
/* "Global rank stride": a group of several whose ranks are not adjacent records it as
 * group_stride (-1: not evenly spaced); adjacent ranks (1) and a group of one record none. */
Test(collectives, a_strided_group_records_its_stride) {
  static const struct {
    const char *fields;
    bool recorded;
    int64_t stride;
  } cases[] = {
      {"\"Group size\": 2, \"Global rank stride\": 4", true, 4},
      {"\"Group size\": 4, \"Global rank stride\": \"-1\"", true, -1},
      {"\"Group size\": 4, \"Global rank stride\": 1", false, 1},
      {"\"Group size\": 1, \"Global rank stride\": 0", false, 1},
      {"\"Group size\": 4", false, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char fields[512];
    snprintf(fields, sizeof fields,
             "\"Collective name\": \"allreduce\", \"dtype\": \"Float\", \"In msg nelems\": 8, "
             "\"Out msg nelems\": 8, \"Rank\": 0, %s",
             cases[i].fields);
    char *text = comms_trace(fields, "cudaLaunchKernel", "");
    xr_bundle_t *b;
    cr_assert_eq(extract_string(text, NULL, &b, NULL), XR_OK, "%s: %s", fields, xr_last_error());
    free(text);
    cr_assert_eq(b->op_count, 1, "%s", fields);
    const xr_arg_t *stride = xr_op_find_arg(&b->ops[0], "group_stride");
    cr_assert_eq(stride != NULL, cases[i].recorded, "%s", fields);
    if (stride) cr_assert_eq(stride->value.as.i, cases[i].stride, "%s", fields);
    xr_bundle_destroy(b);
  }
}

Test(collectives, bad_fields_skip_the_op_with_a_warning) {
  static const struct {
    const char *fields, *warning;
  } bad[] = {
      {"\"Collective name\": \"allreduce\", \"dtype\": \"Float\", \"Out msg nelems\": 8, "
       "\"Group size\": 2, \"Rank\": 0",
       "record_param_comms (allreduce): skipped: \"In msg nelems\" is missing"},
      {"\"Collective name\": \"allreduce\", \"dtype\": \"Float\", \"In msg nelems\": \"lots\", "
       "\"Out msg nelems\": 8, \"Group size\": 2, \"Rank\": 0",
       "\"In msg nelems\" is not an integer (\"lots\")"},
      {"\"Collective name\": \"allreduce\", \"dtype\": \"Float\", \"In msg nelems\": 8.5, "
       "\"Out msg nelems\": 8, \"Group size\": 2, \"Rank\": 0",
       "\"In msg nelems\" is not an integer (\"8.5\")"},
      {"\"Collective name\": \"allreduce\", \"dtype\": \"Quaternion\", \"In msg nelems\": 8, "
       "\"Out msg nelems\": 8, \"Group size\": 2, \"Rank\": 0",
       "\"dtype\": unknown dtype \"Quaternion\""},
      {"\"Collective name\": \"allreduce\", \"dtype\": \"ComplexFloat\", \"In msg nelems\": 8, "
       "\"Out msg nelems\": 8, \"Group size\": 2, \"Rank\": 0",
       "unknown dtype \"ComplexFloat\""},
      {"\"Collective name\": \"allgather\", \"dtype\": \"Float\", \"In msg nelems\": 8, "
       "\"Out msg nelems\": -8, \"Group size\": 2, \"Rank\": 0",
       "record_param_comms (allgather): skipped: \"Out msg nelems\" is negative (-8)"},
      {"\"Collective name\": \"allreduce\", \"dtype\": \"Float\", \"In msg nelems\": 8, "
       "\"Out msg nelems\": 8, \"Group size\": \"-2\", \"Rank\": 0",
       "\"Group size\" is negative (-2)"},
      {"\"Collective name\": \"allreduce\", \"dtype\": \"Float\", \"In msg nelems\": 8, "
       "\"Out msg nelems\": 8, \"Group size\": 0, \"Rank\": 0",
       "\"Group size\" is 0, below 1"},
      {"\"Collective name\": \"broadcast\", \"dtype\": \"Float\", \"In msg nelems\": 8, "
       "\"Out msg nelems\": 8, \"Group size\": 4, \"Rank\": 4",
       "\"Rank\" 4 is not below \"Group size\" 4"},
      {"\"Collective name\": \"allreduce\", \"dtype\": \"Float\", \"In msg nelems\": 8, "
       "\"Out msg nelems\": 8, \"Group size\": 2, \"Rank\": [0]",
       "\"Rank\" is not a number"},
      {"\"Collective name\": \"allreduce\", \"dtype\": 6, \"In msg nelems\": 8, "
       "\"Out msg nelems\": 8, \"Group size\": 2, \"Rank\": 0",
       "\"dtype\" is not a string"},
      {"\"dtype\": \"Float\", \"In msg nelems\": 8, \"Out msg nelems\": 8, \"Group size\": 2, "
       "\"Rank\": 0",
       "record_param_comms: skipped: \"Collective name\" is missing"},
      {"\"Collective name\": \"alltoall_base\", \"dtype\": \"Float\", \"In msg nelems\": 8, "
       "\"Out msg nelems\": 8, \"Group size\": 2, \"Rank\": 0, \"In split size\": \"[4, x]\"",
       "\"In split size\" entry 1 is not a non-negative integer (\"[4, x]\")"},
      {"\"Collective name\": \"alltoall_base\", \"dtype\": \"Float\", \"In msg nelems\": 8, "
       "\"Out msg nelems\": 8, \"Group size\": 2, \"Rank\": 0, \"Out split size\": \"[4, -4]\"",
       "\"Out split size\" entry 1 is not a non-negative integer"},
      {"\"Collective name\": \"all_to_allv\", \"dtype\": \"Float\", \"In msg nelems\": 64, "
       "\"Out msg nelems\": 64, \"Group size\": 32, \"Rank\": 0, \"In split size\": "
       "\"[2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, "
       "2, ..., 2]\"",
       "\"In split size\" was cut short by the profiler"},
      {"\"Collective name\": \"allreduce\", \"dtype\": \"Double\", \"In msg nelems\": "
       "4611686018427387904, \"Out msg nelems\": 8, \"Group size\": 2, \"Rank\": 0",
       "\"In msg nelems\": 4611686018427387904 elements of f64 overflow 64-bit sizes"},
      {"\"Collective name\": \"allreduce\", \"dtype\": \"Float\", \"In msg nelems\": "
       "99999999999999999999999, \"Out msg nelems\": 8, \"Group size\": 2, \"Rank\": 0",
       "\"In msg nelems\" is not an integer"},
      {"\"Collective name\": \"allreduce\", \"dtype\": \"Float\", \"In msg nelems\": 8, "
       "\"Out msg nelems\": 8, \"Group size\": 2, \"Rank\": 0, \"Global rank stride\": -2",
       "\"Global rank stride\" is -2, below -1"},
      {"", "record_param_comms: skipped: \"Collective name\" is missing"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *text = comms_trace(bad[i].fields, "cudaLaunchKernel", "");
    xr_bundle_t *b;
    xr_extract_summary_t s;
    cr_assert_eq(extract_string(text, NULL, &b, &s), XR_OK, "%s: %s", bad[i].fields,
                 xr_last_error());
    free(text);
    cr_assert_eq(b->op_count, 0, "%s", bad[i].fields);
    cr_assert_eq(s.ops_bad_args, 1, "%s", bad[i].fields);
    cr_assert(summary_has_warning(&s, bad[i].warning), "%s: no warning \"%s\" (first: %s)",
              bad[i].fields, bad[i].warning, s.warning_count ? s.warnings[0] : "none");
    /* The kernel stays counted in the busy time, outside the written ops. */
    cr_assert_float_eq(s.gpu_busy_us, 5, 1e-9);
    cr_assert_float_eq(s.gpu_covered_us, 0, 1e-9);
    xr_bundle_destroy(b);
    xr_extract_summary_free(&s);
  }
}

/* distributedInfo values that are no count are left out, with a warning. */
Test(collectives, bad_distributed_info_is_ignored_with_a_warning) {
  static const struct {
    const char *info, *warning;
    bool world, rank;
  } cases[] = {
      {"{\"world_size\": \"four\", \"rank\": 0}",
       "distributedInfo.world_size (\"four\") is not a positive integer: ignored", false, true},
      {"{\"world_size\": 0, \"rank\": 0}", "distributedInfo.world_size (0)", false, true},
      {"{\"world_size\": 2.5, \"rank\": 0}", "distributedInfo.world_size (2.5)", false, true},
      {"{\"world_size\": 4, \"rank\": -1}", "distributedInfo.rank (-1) is not a non-negative", true,
       false},
      {"{\"world_size\": 4, \"rank\": 4}", "distributedInfo.rank 4 is not below world_size 4", true,
       false},
      {"{\"world_size\": \"4\", \"rank\": \"3\"}", NULL, true, true},
      {"[4]", NULL, false, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char top[256];
    snprintf(top, sizeof top, "\"distributedInfo\": %s,", cases[i].info);
    char *text = comms_trace(GOOD_FIELDS, "cudaLaunchKernel", top);
    xr_bundle_t *b;
    xr_extract_summary_t s;
    cr_assert_eq(extract_string(text, NULL, &b, &s), XR_OK, "%s", xr_last_error());
    free(text);
    cr_assert_eq(b->op_count, 1);
    cr_assert_eq(find_extra(b, "world_size") != NULL, cases[i].world, "%s", cases[i].info);
    cr_assert_eq(find_extra(b, "trace_rank") != NULL, cases[i].rank, "%s", cases[i].info);
    if (cases[i].warning)
      cr_assert(summary_has_warning(&s, cases[i].warning), "%s: no warning \"%s\"", cases[i].info,
                cases[i].warning);
    round_trip_both_codecs(b);
    xr_bundle_destroy(b);
    xr_extract_summary_free(&s);
  }
}
