/* Agreement with TraceLens: for every pair in event_to_ir_pairs.json where TraceLens produced IR,
 * a tiny trace built around the pair's raw event (the event, a launch inside it, a kernel) must
 * extract to the same op name, argument names, shapes, strides and dtypes as that IR. Pairs
 * where TraceLens failed must still extract without error. */
#include <cjson/cJSON.h>

#include "tests/extract/extract_util.h"

static cJSON *load_pairs(void) {
  uint8_t *bytes;
  size_t size;
  cr_assert_eq(xr_read_file(PAIRS, &bytes, &size), XR_OK, "%s", xr_last_error());
  cJSON *pairs = cJSON_Parse((const char *)bytes);
  free(bytes);
  cr_assert(cJSON_IsArray(pairs));
  return pairs;
}

static char *tiny_trace(const cJSON *event) {
  cJSON *ev = cJSON_Duplicate(event, 1);
  double ts = cJSON_GetObjectItem(ev, "ts")->valuedouble;
  double dur = cJSON_GetObjectItem(ev, "dur")->valuedouble;
  cJSON *pid = cJSON_GetObjectItem(ev, "pid"), *tid = cJSON_GetObjectItem(ev, "tid");
  cJSON *root = cJSON_CreateObject();
  cJSON *list = cJSON_AddArrayToObject(root, "traceEvents");
  cJSON *launch = cJSON_CreateObject();
  cJSON_AddStringToObject(launch, "ph", "X");
  cJSON_AddStringToObject(launch, "cat", "cuda_runtime");
  cJSON_AddStringToObject(launch, "name", "cudaLaunchKernel");
  cJSON_AddItemToObject(launch, "pid", cJSON_Duplicate(pid, 0));
  cJSON_AddItemToObject(launch, "tid", cJSON_Duplicate(tid, 0));
  cJSON_AddNumberToObject(launch, "ts", ts + dur / 2);
  cJSON_AddNumberToObject(launch, "dur", 0.001);
  cJSON_AddNumberToObject(cJSON_AddObjectToObject(launch, "args"), "correlation", 4242);
  cJSON *kernel = cJSON_CreateObject();
  cJSON_AddStringToObject(kernel, "ph", "X");
  cJSON_AddStringToObject(kernel, "cat", "kernel");
  cJSON_AddStringToObject(kernel, "name", "k");
  cJSON_AddNumberToObject(kernel, "pid", 0);
  cJSON_AddNumberToObject(kernel, "tid", 7);
  cJSON_AddNumberToObject(kernel, "ts", ts + dur);
  cJSON_AddNumberToObject(kernel, "dur", 2.5);
  cJSON_AddNumberToObject(cJSON_AddObjectToObject(kernel, "args"), "correlation", 4242);
  cJSON_AddItemToArray(list, ev);
  cJSON_AddItemToArray(list, launch);
  cJSON_AddItemToArray(list, kernel);
  char *text = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return text;
}

static void assert_same_args(const char *op, const char *what, const xr_arg_t *got, size_t ngot,
                             const xr_arg_t *want, size_t nwant) {
  cr_assert_eq(ngot, nwant, "%s: %s: %zu arguments, TraceLens has %zu", op, what, ngot, nwant);
  for (size_t i = 0; i < nwant; i++) {
    const xr_arg_t *g = &got[i], *w = &want[i];
    cr_assert_not_null(g->name, "%s: %s[%zu] unnamed", op, what, i);
    cr_assert_str_eq(g->name, w->name, "%s: %s[%zu]", op, what, i);
    bool wt = w->value.kind == XR_VALUE_TENSOR, gt = g->value.kind == XR_VALUE_TENSOR;
    cr_assert_eq(gt, wt, "%s: %s: tensor-ness differs", op, w->name);
    if (!wt) continue;
    const xr_tensor_spec_t *a = g->value.as.tensor, *b = w->value.as.tensor;
    cr_assert_eq(a->dtype, b->dtype, "%s: %s: dtype %s vs %s", op, w->name,
                 xr_dtype_name(a->dtype), xr_dtype_name(b->dtype));
    cr_assert_eq(a->rank, b->rank, "%s: %s: rank", op, w->name);
    for (int32_t d = 0; d < a->rank; d++) {
      cr_assert_eq(a->shape[d], b->shape[d], "%s: %s: shape[%d]", op, w->name, d);
      cr_assert_eq(a->strides[d], b->strides[d], "%s: %s: strides[%d]", op, w->name, d);
    }
  }
}

Test(tracelens, every_pair_with_ir_extracts_to_the_same_shapes) {
  cJSON *pairs = load_pairs();
  size_t compared = 0, failed_by_tracelens = 0;
  const cJSON *pair;
  cJSON_ArrayForEach(pair, pairs) {
    const cJSON *event = cJSON_GetObjectItem(pair, "event");
    const cJSON *ir = cJSON_GetObjectItem(pair, "ir");
    const char *name = cJSON_GetObjectItem(event, "name")->valuestring;
    char *text = tiny_trace(event);
    xr_bundle_t *got;
    xr_extract_summary_t s;
    cr_assert_eq(extract_string(text, NULL, &got, &s), XR_OK, "%s: %s", name, xr_last_error());
    free(text);
    cr_assert_eq(got->op_count, 1, "%s: %zu ops (bad args %zu)", name, got->op_count,
                 s.ops_bad_args);
    cr_assert_float_eq(got->ops[0].timing->gpu_time_us, 2.5, 1e-9);
    if (cJSON_IsNull(ir) || !ir) {
      failed_by_tracelens++;
    } else {
      cJSON *list = cJSON_CreateArray();
      cJSON_AddItemToArray(list, cJSON_Duplicate(ir, 1));
      char *irtext = cJSON_PrintUnformatted(list);
      cJSON_Delete(list);
      xr_bundle_t *want;
      cr_assert_eq(xr_bundle_decode((uint8_t *)irtext, strlen(irtext), "ir.json", ".", NULL,
                                    &want),
                   XR_OK, "%s: %s", name, xr_last_error());
      free(irtext);
      const xr_op_t *g = &got->ops[0], *w = &want->ops[0];
      cr_assert_str_eq(g->name, w->name);
      assert_same_args(w->name, "args", g->args, g->arg_count, w->args, w->arg_count);
      assert_same_args(w->name, "kwargs", g->kwargs, g->kwarg_count, w->kwargs, w->kwarg_count);
      xr_bundle_destroy(want);
      compared++;
    }
    round_trip_both_codecs(got);
    xr_bundle_destroy(got);
    xr_extract_summary_free(&s);
  }
  cJSON_Delete(pairs);
  cr_assert_eq(compared, 22, "pairs with IR: %zu", compared);
  cr_assert_eq(failed_by_tracelens, 10);
}
